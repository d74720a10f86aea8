//! Decisions and verdicts: what a policy returns, as values, for the engine (or a production
//! adapter) to apply.

use std::fmt;

use crate::ids::{CellId, JobId};
use crate::state::TaskAlloc;
use crate::time::SimDuration;

/// Why a job is refused for good at submit. Such a job never enters a queue, so it can never
/// block one (field case B17).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum RejectReason {
    /// One task is larger than any node of every allowed cell could ever hold.
    TaskLargerThanAnyNode,
    /// The whole gang is larger than any allowed cell could ever hold.
    GangLargerThanCell,
    /// The gang asks for more than its queue's hard maximum.
    OverQueueMax,
    /// No cell the job allows exists in the fleet.
    NoAllowedCell,
    /// No accelerator model the job allows exists in the fleet.
    NoAllowedModel,
    /// The time limit is invalid (e.g. none given and the queue's default is 0).
    InvalidTimeLimit,
    /// The job asks for zero tasks.
    EmptyGang,
    /// The gang asks for more than its queue could ever hold under quota: more than the
    /// nominal quota plus what the queue may borrow from its cohort, in every flavor it may
    /// use (field case B01: a job larger than the cohort must never force preemptions).
    OverQuota,
    /// The queue declares quota, but none of its flavors offers an accelerator model the job
    /// may use.
    NoQuotaFlavor,
    /// The job names a queue the scenario's Kueue manifests (or `[[queues]]`) do not declare:
    /// neither a ClusterQueue nor a LocalQueue (Kueue never admits such a workload).
    UnknownQueue,
    /// The gang's total of some resource (tasks × per-task accelerator-milli, CPU
    /// milli-cores or memory MiB) exceeds 2⁶⁴ − 1: no fleet can hold it.
    RequestTooLarge,
    /// The gang's topology can never be met: a strict spread over more distinct nodes than
    /// can hold a task, a strict pack or a required level (node, domain, block) or slice
    /// larger than any group of that level holds (field case B30).
    TopologyInfeasible,
}

impl RejectReason {
    /// A stable snake_case name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            RejectReason::TaskLargerThanAnyNode => "task_larger_than_any_node",
            RejectReason::GangLargerThanCell => "gang_larger_than_cell",
            RejectReason::OverQueueMax => "over_queue_max",
            RejectReason::NoAllowedCell => "no_allowed_cell",
            RejectReason::NoAllowedModel => "no_allowed_model",
            RejectReason::InvalidTimeLimit => "invalid_time_limit",
            RejectReason::EmptyGang => "empty_gang",
            RejectReason::OverQuota => "over_quota",
            RejectReason::NoQuotaFlavor => "no_quota_flavor",
            RejectReason::UnknownQueue => "unknown_queue",
            RejectReason::RequestTooLarge => "request_too_large",
            RejectReason::TopologyInfeasible => "topology_infeasible",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a job cannot start right now (waiting, or preemption, may help).
///
/// Reported per pending job after every pass, time-integrated in `summary.json` and
/// `timeseries.csv`, and per job in `jobs.csv` (the reason it waited longest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum PendingReason {
    /// Not tried yet (a pass stopped at its attempt budget before reaching it).
    NotTried,
    /// No allowed cell has enough free accelerators (of an allowed model) for the gang.
    NoCapacity,
    /// Enough accelerators are free in total, but no node has room for a task: the free
    /// capacity is fragmented.
    Fragmentation,
    /// Single tasks would fit, but not the whole gang at once (all-or-nothing).
    Gang,
    /// The queue's hard maximum would be exceeded.
    QueueMax,
    /// A strict-FIFO queue's head is blocked and this job is behind it.
    StrictFifoHead,
    /// Above the queue's nominal quota, and the queue has no cohort to borrow from.
    OverQuota,
    /// Borrowing would exceed a borrowing limit (of the queue or of a cohort on its path).
    BorrowingLimit,
    /// Within the queue's limits, but the cohort's quota is in use by other queues.
    CohortQuota,
    /// It would fit now, but would delay a backfill reservation.
    Reservation,
    /// Victims chosen for this job are still inside their termination grace period.
    Preempting,
    /// Enough accelerators are free in its allowed cells, but not on nodes whose shape can
    /// ever hold one of its tasks (too few accelerators, CPU or memory per node, or another
    /// model): the free capacity is of the wrong node shape, not fragmented.
    NodeShape,
}

impl PendingReason {
    /// Every reason, in a fixed order (the order of report columns).
    pub const ALL: [PendingReason; 12] = [
        PendingReason::NotTried,
        PendingReason::NoCapacity,
        PendingReason::Fragmentation,
        PendingReason::Gang,
        PendingReason::QueueMax,
        PendingReason::StrictFifoHead,
        PendingReason::OverQuota,
        PendingReason::BorrowingLimit,
        PendingReason::CohortQuota,
        PendingReason::Reservation,
        PendingReason::Preempting,
        PendingReason::NodeShape,
    ];

    /// Position in [`PendingReason::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// A stable snake_case name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            PendingReason::NotTried => "not_tried",
            PendingReason::NoCapacity => "no_capacity",
            PendingReason::Fragmentation => "fragmentation",
            PendingReason::Gang => "gang",
            PendingReason::QueueMax => "queue_max",
            PendingReason::StrictFifoHead => "strict_fifo_head",
            PendingReason::OverQuota => "over_quota",
            PendingReason::BorrowingLimit => "borrowing_limit",
            PendingReason::CohortQuota => "cohort_quota",
            PendingReason::Reservation => "reservation",
            PendingReason::Preempting => "preempting",
            PendingReason::NodeShape => "node_shape",
        }
    }
}

/// Milliseconds a job spent pending, per [`PendingReason`] (indexed by
/// [`PendingReason::index`]).
pub type WaitProfile = [u64; PendingReason::ALL.len()];

/// The reason with the most time in `w`, ties to the earlier reason of
/// [`PendingReason::ALL`]; `None` when the job never waited.
pub fn longest_reason(w: &WaitProfile) -> Option<PendingReason> {
    let mut best: Option<(u64, PendingReason)> = None;
    for r in PendingReason::ALL {
        let v = w[r.index()];
        if v > 0 && best.is_none_or(|(b, _)| v > b) {
            best = Some((v, r));
        }
    }
    best.map(|(_, r)| r)
}

/// Which rule allowed a preemption (the preemption stage, DESIGN §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum PreemptReason {
    /// A higher-priority job of the same queue needs the room (Kueue `withinClusterQueue`).
    WithinQueue,
    /// A queue within its nominal quota takes back what a borrowing queue of its cohort holds
    /// (Kueue `reclaimWithinCohort`).
    Reclaim,
    /// A job that borrows takes a lower-priority job of a borrowing queue of its cohort
    /// (Kueue `borrowWithinCohort`, reason `InCohortReclaimWhileBorrowing`).
    ReclaimWhileBorrowing,
    /// Fair sharing: the victim's queue keeps a larger dominant-resource share than the
    /// preemptor's after the swap (Kueue KEP-1714 rules S2-a / S2-b).
    FairShare,
    /// A higher tier takes capacity from a lower one (Borg: best-effort is preempted first).
    Tier,
    /// Cluster-wide priority preemption for capacity (kube-scheduler `DefaultPreemption`,
    /// Volcano `preempt`).
    Priority,
    /// Tiresias: the victim's attained service put it in a lower-priority LAS queue.
    Las,
}

impl PreemptReason {
    /// Every reason, in a fixed order.
    pub const ALL: [PreemptReason; 7] = [
        PreemptReason::WithinQueue,
        PreemptReason::Reclaim,
        PreemptReason::ReclaimWhileBorrowing,
        PreemptReason::FairShare,
        PreemptReason::Tier,
        PreemptReason::Priority,
        PreemptReason::Las,
    ];

    /// A stable snake_case name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            PreemptReason::WithinQueue => "within_queue",
            PreemptReason::Reclaim => "reclaim",
            PreemptReason::ReclaimWhileBorrowing => "reclaim_while_borrowing",
            PreemptReason::FairShare => "fair_share",
            PreemptReason::Tier => "tier",
            PreemptReason::Priority => "priority",
            PreemptReason::Las => "las",
        }
    }
}

/// The outcome of checking one job against the fleet, Kubernetes-framework style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It fits.
    Fit,
    /// It does not fit now; waiting (or preemption) may help.
    Unschedulable(PendingReason),
    /// It can never fit; retrying is pointless.
    Unresolvable(RejectReason),
}

/// An action for the engine or adapter to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start the job with these task bindings (already reserved in the fleet state).
    Start {
        /// The job.
        job: JobId,
        /// The cell it runs in.
        cell: CellId,
        /// One binding per task of the gang.
        tasks: Vec<TaskAlloc>,
    },
    /// Evict a running job so that `preemptor` can start. With a zero `grace` the policy has
    /// already released the victim's resources in the fleet state (as it reserves a start's),
    /// and requeued it; otherwise the victim keeps its resources until `grace` has passed,
    /// then the caller releases them and hands the job back
    /// ([`crate::Scheduler::on_released`]). The victim is requeued with its original submit
    /// time and sequence number and restarts from its last checkpoint.
    Preempt {
        /// The victim.
        job: JobId,
        /// The job it makes room for.
        preemptor: JobId,
        /// The rule that allowed it.
        reason: PreemptReason,
        /// Termination grace period.
        grace: SimDuration,
    },
    /// Refuse the job for good.
    Reject {
        /// The job.
        job: JobId,
        /// Why.
        reason: RejectReason,
    },
}

/// What a scheduling pass saw at the instant it decided a preemption (before taking any
/// victim out), kept only when [`crate::Scheduler::record_preemption_contexts`] is on. The
/// randomized scheduler checker reads it to check that no preemption happens while free
/// capacity would have sufficed, and that the over-reclaim guard holds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PreemptionContext {
    /// The job the victims make room for.
    pub preemptor: JobId,
    /// Its victims, in the order they were decided (one plan).
    pub victims: Vec<JobId>,
    /// Per node (by [`crate::NodeId`] index), what was free for the preemptor: capacity minus
    /// the bindings of running jobs and of jobs terminating in their grace period, minus the
    /// room held (by phantoms) for nominated preemptors still waiting for their victims; all
    /// zero for a node that is down or drained.
    pub free: Vec<NodeFree>,
    /// Per queue (by [`crate::QueueId`] index) with quota: its quota usage per slot
    /// ([`crate::QuotaTree::queue_usage`]: flavor-major, GPU-milli, milli-cores, MiB), which
    /// counts running and terminating jobs and the reservations of nominated preemptors.
    /// `None` for a queue without quota; empty without a quota tree.
    pub queue_usage: Vec<Option<Vec<u64>>>,
}

/// One node's free resources in a [`PreemptionContext`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NodeFree {
    /// Wholly free accelerators.
    pub whole_gpus: u32,
    /// Free GPU-milli over all accelerators.
    pub gpu_milli: u32,
    /// Free CPU, milli-cores.
    pub cpu_milli: u64,
    /// Free memory, MiB.
    pub mem_mib: u64,
}
