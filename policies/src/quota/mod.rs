//! Quota: queues with nominal quota per resource flavor, grouped into hierarchical cohorts
//! that lend and borrow, as Kueue does.
//!
//! # What it follows
//! Kueue's ClusterQueues and Cohorts (<https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/>):
//!
//! * a **queue** (ClusterQueue; a Philly VC, a Slurm account) has, per *flavor* (a set of
//!   accelerator models, Kueue's ResourceFlavor) and per resource (`gpus` in GPU-milli, `cpus`
//!   in milli-cores, `memory` in MiB), a **nominal quota**, an optional **borrowing limit**
//!   (how much above nominal it may take from its cohort) and an optional **lending limit**
//!   (how much of its nominal quota it lends; KEP-1224);
//! * **cohorts** form a tree (hierarchical cohorts, KEP-79): a cohort may have its own nominal
//!   quota and, towards its parent, its own borrowing and lending limits;
//! * the arithmetic is Kueue's `pkg/cache/resource_node.go`, in integers: a node's *subtree
//!   quota* is its nominal plus what its children lend; *guaranteed* quota (subtree minus
//!   lending limit) is never lent; usage beyond the guaranteed part is *stored in the
//!   parent*; [`QuotaTree::check`] walks up the path applying borrowing limits — `O(depth)`
//!   per resource, never a scan over queues or jobs.
//!
//! A job is admitted in one flavor of its queue ([`QuotaTree::queue_flavors`], in declared
//! order, restricted to the accelerator models the job allows); **flavor fungibility**
//! ([`Fungibility`]) says whether the next flavor is tried before borrowing (Kueue
//! `flavorFungibility.whenCanBorrow`). A resource a queue's flavor does not declare is not
//! limited and not charged. [`crate::Tier::BestEffort`] jobs bypass quota entirely.
//!
//! Every comparison is named after the rule it implements; the rules are documented on
//! [`QuotaTree::check`].

mod tree;

use std::fmt;

pub use tree::{FairKey, QuotaFit, QuotaTree, Request, FAIR_KEY_LEVELS};

use crate::resources::ModelSet;

/// A resource that quota limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaResource {
    /// Accelerators, GPU-milli.
    Gpu = 0,
    /// CPU, milli-cores.
    Cpu = 1,
    /// Memory, MiB.
    Memory = 2,
}

impl QuotaResource {
    /// Every resource, in slot order.
    pub const ALL: [QuotaResource; 3] = [
        QuotaResource::Gpu,
        QuotaResource::Cpu,
        QuotaResource::Memory,
    ];

    /// The name scenarios use (`gpus`, `cpus`, `memory_gib`).
    pub fn as_str(&self) -> &'static str {
        match self {
            QuotaResource::Gpu => "gpus",
            QuotaResource::Cpu => "cpus",
            QuotaResource::Memory => "memory_gib",
        }
    }
}

/// Nominal quota and limits of one resource, in the resource's unit (GPU-milli, milli-cores,
/// MiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ResourceQuota {
    /// Nominal quota.
    pub nominal: u64,
    /// Most the node may use above its nominal quota, from its parent (`None`: no limit).
    pub borrowing_limit: Option<u64>,
    /// Most of its quota the node lends to its parent (`None`: all of it).
    pub lending_limit: Option<u64>,
}

/// A node's quota in one flavor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlavorQuota {
    /// Flavor name (one of [`QuotaSpec::flavors`]).
    pub flavor: String,
    /// Per resource ([`QuotaResource`] order); `None`: not limited.
    pub resources: [Option<ResourceQuota>; 3],
}

/// A resource flavor: a name for a set of accelerator models (Kueue ResourceFlavor).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Flavor {
    /// Name (`"*"` conventionally for any model).
    pub name: String,
    /// Models it stands for (`ModelSet::ANY` for every model).
    pub models: ModelSet,
}

/// A queue or a cohort.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaNodeSpec {
    /// Name (queue or cohort name).
    pub name: String,
    /// The cohort it belongs to.
    pub parent: Option<String>,
    /// Its quotas, per flavor, in the order flavors are tried.
    pub flavors: Vec<FlavorQuota>,
    /// Fair-sharing weight in thousandths (1000 = weight 1; 0 = never preferred).
    pub weight_milli: u64,
}

/// The whole quota configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuotaSpec {
    /// Flavors, by name.
    pub flavors: Vec<Flavor>,
    /// Cohorts.
    pub cohorts: Vec<QuotaNodeSpec>,
    /// Queues that take part in quota, with their [`crate::QueueId`].
    pub queues: Vec<(crate::QueueId, QuotaNodeSpec)>,
}

named_enum!(
    /// Flavor fungibility (Kueue `flavorFungibility.whenCanBorrow`): what to do when a flavor
    /// has room only by borrowing.
    Fungibility {
        /// Borrow in the first flavor that has room (Kueue `Borrow`, the default).
        #[default]
        Borrow => "borrow",
        /// Try the later flavors for room within nominal quota first; borrow only if none has
        /// it (Kueue `TryNextFlavor`).
        TryNextFlavor => "try-next-flavor",
    }
);

/// Errors in a quota configuration. All are fatal: the scheduler is not built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaError {
    /// Two queues or two cohorts share a name.
    DuplicateName(String),
    /// A node names a parent cohort that does not exist.
    UnknownCohort {
        /// The node.
        node: String,
        /// The missing cohort.
        cohort: String,
    },
    /// The cohort parent links form a cycle through this cohort.
    CohortCycle(String),
    /// A node names a flavor that is not declared.
    UnknownFlavor {
        /// The node.
        node: String,
        /// The flavor.
        flavor: String,
    },
    /// A node lists a flavor twice.
    DuplicateFlavor {
        /// The node.
        node: String,
        /// The flavor.
        flavor: String,
    },
    /// A borrowing or lending limit on a node that has no cohort to borrow from or lend to.
    LimitWithoutCohort {
        /// The node.
        node: String,
        /// The flavor.
        flavor: String,
        /// `borrowing_limit` or `lending_limit`.
        limit: &'static str,
    },
    /// A lending limit above the nominal quota it limits.
    LendingAboveNominal {
        /// The node.
        node: String,
        /// The flavor.
        flavor: String,
    },
}

impl fmt::Display for QuotaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuotaError::DuplicateName(n) => write!(f, "`{n}` is declared twice"),
            QuotaError::UnknownCohort { node, cohort } => {
                write!(f, "`{node}` names cohort `{cohort}`, which is not declared")
            }
            QuotaError::CohortCycle(c) => write!(f, "cohort `{c}` is its own ancestor"),
            QuotaError::UnknownFlavor { node, flavor } => {
                write!(f, "`{node}` names flavor `{flavor}`, which is not declared")
            }
            QuotaError::DuplicateFlavor { node, flavor } => {
                write!(f, "`{node}` lists flavor `{flavor}` twice")
            }
            QuotaError::LimitWithoutCohort {
                node,
                flavor,
                limit,
            } => write!(
                f,
                "`{node}` sets a {limit} in flavor `{flavor}` but belongs to no cohort"
            ),
            QuotaError::LendingAboveNominal { node, flavor } => write!(
                f,
                "`{node}` lends more of flavor `{flavor}` than its nominal quota"
            ),
        }
    }
}

impl std::error::Error for QuotaError {}

/// The quota request of a job (GPU-milli, milli-cores, MiB for the whole gang). Exact for
/// every submitted job ([`crate::Scheduler::check_resolvable`] refuses a gang whose totals
/// overflow); saturating otherwise, so never a wrap to a small request.
pub(crate) fn request(job: &crate::job::PendingJob) -> Request {
    job.gang_totals().unwrap_or([u64::MAX; 3])
}
