//! The scenario schema. Field names carry their unit (`_s` seconds, `_milli`, `_mib`).

use serde::Deserialize;

use fleetsim_policies::{PlacementKind, QueueingStrategy, ScoreArithmetic, Tier};

use crate::workload::synthetic::SyntheticSpec;
pub use crate::workload::TraceFormat;

/// A whole scenario.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Another scenario file (relative to this one) this one starts from: its tables are
    /// merged key by key, this file's values winning (arrays are replaced whole).
    #[serde(default)]
    pub extends: Option<String>,
    /// Scenario name, echoed in every output.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Seed of every RNG stream (overridden by `--seed`).
    #[serde(default)]
    pub seed: u64,
    /// `schedule` (default): policies decide start times. `replay`: jobs with a recorded
    /// start in the trace start exactly then (placement still chooses nodes). `inflation`:
    /// the FGD experiment of `[inflation]` (no clock).
    #[serde(default)]
    pub mode: Mode,
    /// The fleet.
    pub fleet: FleetSpec,
    /// The workload.
    pub workload: WorkloadSpec,
    /// Per-queue settings (queues not listed use the `[policy]` defaults and take no part in
    /// quota).
    #[serde(default)]
    pub queues: Vec<QueueSpec>,
    /// Cohorts (Kueue): groups of queues that lend and borrow quota; a cohort may have a
    /// parent cohort (hierarchical cohorts).
    #[serde(default)]
    pub cohorts: Vec<CohortSpec>,
    /// Named resource flavors (sets of accelerator models) for quota.
    #[serde(default)]
    pub flavors: Vec<FlavorSpec>,
    /// Node failures and repairs at given times.
    #[serde(default)]
    pub node_events: Vec<NodeEventSpec>,
    /// Failures and maintenance (see [`crate::reliability`]); none when absent.
    #[serde(default)]
    pub failures: Option<super::reliability::FailuresSpec>,
    /// Relative speeds of accelerator models (see [`crate::reliability::PlatformSpec`]);
    /// every model at reference speed when absent.
    #[serde(default)]
    pub platform: Option<super::reliability::PlatformSpec>,
    /// Workload flexibility: spatial, platform, quota (see
    /// [`crate::reliability::flexibility`]); jobs keep their trace's constraints when absent.
    #[serde(default)]
    pub flexibility: Option<super::reliability::FlexibilitySpec>,
    /// Per-run startup latency (see [`crate::reliability`]); none when absent.
    #[serde(default)]
    pub startup: Option<super::reliability::StartupSpec>,
    /// Kueue manifests whose LocalQueues become queues (explicit `[[queues]]` win by name).
    #[serde(default)]
    pub kueue: Option<KueueSpec>,
    /// Policy choices.
    #[serde(default)]
    pub policy: PolicySpec,
    /// Measurement window and time series.
    #[serde(default)]
    pub metrics: MetricsSpec,
    /// What-if transforms of the workload and the fleet (see [`crate::whatif`]).
    #[serde(default)]
    pub transforms: super::transforms::Transforms,
    /// Sweep axes for `fleetsim sweep` (see [`crate::sweep`]).
    #[serde(default)]
    pub sweep: Option<super::studies::SweepSpec>,
    /// Tracked metrics and tolerances for `fleetsim check` (see [`crate::check`]).
    #[serde(default)]
    pub check: Option<super::studies::CheckSpec>,
    /// The FGD inflation experiment (`mode = "inflation"` only).
    #[serde(default)]
    pub inflation: Option<InflationSpec>,
    /// Inference services beside training (see [`crate::serving`]); none when absent.
    #[serde(default)]
    pub serving: Option<crate::serving::ServingSpec>,
    /// Elastic jobs (see [`crate::engine::elastic`]): round-allocated or sized; none when
    /// absent.
    #[serde(default)]
    pub elastic: Option<super::elastic::ElasticTable>,
    /// What the scenario's inputs ask for that fleetsim does not simulate, and the choices
    /// made for them (Kueue manifests' fields), one sentence each; filled when loaded, not
    /// a scenario key. `validate` and `run` print them.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// `[inflation]`: the FGD paper's workload-inflation experiment (Weng et al., ATC'23, §6;
/// see `src/inflation/`): the pod list (`[workload.trace]`, format `alibaba-openb`) in a
/// seeded shuffled order, extra pods drawn with replacement until arrived GPU demand reaches
/// `target_pct` % of capacity, each offered once, nothing departing; every policy and seed
/// is one independent run from an empty fleet.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InflationSpec {
    /// Arrived GPU demand to stop at, % of the fleet's GPU capacity (the paper: 130).
    #[serde(default = "default_target_pct")]
    pub target_pct: u32,
    /// Seeds, one run each (or give `seed_count`).
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// Seeds `seed, seed + 1, …` (the scenario seed first) when `seeds` is empty.
    #[serde(default)]
    pub seed_count: Option<u32>,
    /// Placement policies to compare, in report order.
    pub policies: Vec<PlacementKind>,
    /// FGD's typical-pod coverage, % of the pod list (the artifact's 95).
    #[serde(default = "default_typical_pct")]
    pub typical_threshold_pct: u32,
    /// Arrived demand (% of capacity) where `summary.json` reports each policy (default 100).
    #[serde(default = "default_at_pct")]
    pub report_at_pct: u32,
    /// Published numbers to compare with, if any.
    #[serde(default)]
    pub reference: Option<InflationReference>,
    /// Replay a recorded run: the pod order (`pod`/`base_pod` columns) and node tie-break
    /// rank (`NNNN-` node-name prefixes) of an FGD-artifact per-attempt log
    /// (`peer-fgd/results/events_*.csv`) replace the seeded ones. Needs exactly one seed
    /// (which then only seeds the `random` policy). See `src/inflation/peer.rs`.
    #[serde(default)]
    pub order_from: Option<FileRef>,
    /// Per policy name, an FGD-artifact log to check the run against row by row (decision,
    /// allocated GPU-milli, fragmentation); the result goes to `summary.json` under
    /// `replay.agreement`. Needs `order_from`.
    #[serde(default)]
    pub check_against: std::collections::BTreeMap<String, FileRef>,
    /// Score arithmetic of `fgd` and `fgd-best-fit`: `exact` (default, integers) or
    /// `artifact` (the FGD artifact's `float64` evaluation, for exact replays of its logs).
    #[serde(default)]
    pub arithmetic: ScoreArithmetic,
    /// Compute the fleet's fragmentation after every attempt, as the artifact does (default
    /// true). Off, only the curves of allocation are meaningful.
    #[serde(default = "default_true")]
    pub frag_series: bool,
    /// Write `attempts-<policy>-<seed>.csv`: one row per attempt in the artifact log's column
    /// layout, to diff against its logs.
    #[serde(default)]
    pub attempts_csv: bool,
}

/// A file named relative to the scenario (`path`) or under the public trace directory
/// (`public_path`); exactly one.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileRef {
    /// A path relative to the scenario file.
    #[serde(default)]
    pub path: Option<String>,
    /// A path under the public trace directory.
    #[serde(default)]
    pub public_path: Option<String>,
}

impl FileRef {
    /// The path as written in the scenario (for reports: machine-independent).
    pub fn display(&self) -> String {
        self.path
            .clone()
            .or_else(|| self.public_path.clone())
            .unwrap_or_default()
    }
}

fn default_true() -> bool {
    true
}

/// Published median unallocated GPU % at `report_at_pct`, to check a reproduction against.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InflationReference {
    /// Where the numbers come from.
    #[serde(default)]
    pub source: String,
    /// Largest accepted |measured − published|, percentage points.
    pub tolerance_pp: f64,
    /// Published median unallocated %, by policy name.
    pub unallocated_pct: std::collections::BTreeMap<String, f64>,
}

fn default_target_pct() -> u32 {
    130
}

fn default_typical_pct() -> u32 {
    95
}

fn default_at_pct() -> u32 {
    100
}

/// Kueue manifests (see [`crate::scenario::kueue`]).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KueueSpec {
    /// Multi-document YAML (a file, or a directory of `*.yaml`/`*.yml` files), relative to
    /// the scenario file.
    #[serde(default)]
    pub path: Option<String>,
    /// More files or directories, read with `path` as one configuration.
    #[serde(default)]
    pub paths: Vec<String>,
}

impl KueueSpec {
    /// Every manifest path (`path`, then `paths`), joined to the scenario's directory.
    pub fn resolve(&self, base_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        self.path
            .iter()
            .chain(&self.paths)
            .map(|p| base_dir.join(p))
            .collect()
    }
}

/// Simulation mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Policies decide when jobs start.
    #[default]
    Schedule,
    /// Jobs start at their recorded start times (field case B18).
    Replay,
    /// The FGD inflation experiment: time-free, pods placed one at a time, no departures
    /// (`[inflation]`).
    Inflation,
}

/// The fleet: cells in declaration order (cell ids follow it).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FleetSpec {
    /// The cells.
    pub cells: Vec<CellSpec>,
}

/// One cell: node groups and/or a machine list.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellSpec {
    /// Unique cell name.
    pub name: String,
    /// Declared node groups, in order.
    #[serde(default)]
    pub nodes: Vec<NodeGroupSpec>,
    /// A machine list file whose rows become this cell's nodes (after the groups).
    #[serde(default)]
    pub machine_list: Option<MachineListSpec>,
    /// Autoscaled node groups (`[[fleet.cells.autoscaling]]`): nodes provisioned for
    /// pending work and returned when idle (see [`crate::engine::autoscale`]).
    #[serde(default)]
    pub autoscaling: Vec<AutoscalingGroupSpec>,
}

/// An autoscaled node group of a cell: between `min_nodes` and `max_nodes` nodes of one
/// shape, added for pending work after a provisioning delay and removed after
/// `scale_down_idle_s` idle (Cluster Autoscaler node groups; Karpenter NodePools).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AutoscalingGroupSpec {
    /// Group name, unique in its cell; nodes are named `<cell>-<name>-nNNNNN`.
    pub name: String,
    /// Nodes up from the start and never scaled below (default 0).
    #[serde(default)]
    pub min_nodes: u32,
    /// Most nodes up or being provisioned at once (≥ 1).
    pub max_nodes: u32,
    /// The node shape: the fields of a `[[fleet.cells.nodes]]` group (`preset`,
    /// `accelerator`, `gpus`, `cpu_milli`, `mem_mib`, `nodes_per_domain`), without `count`,
    /// `racks` or `names`.
    pub node: NodeGroupSpec,
    /// Time from a scale-up to the nodes joining the fleet, drawn once per scale-up from the
    /// group's own seeded stream (`autoscaling/<cell>/<group>`).
    pub provisioning_delay: DelaySpec,
    /// Price of one node for one hour it is provisioned (from its scale-up to its removal),
    /// in any currency unit (default 0).
    #[serde(default)]
    pub price_per_node_hour: f64,
    /// Priority for the `priority` expander (higher first; default 0).
    #[serde(default)]
    pub priority: i32,
    /// A node idle (no task) this long is removed, unless the group is at `min_nodes`,
    /// seconds (default 600, the Cluster Autoscaler's `--scale-down-unneeded-time`).
    #[serde(default = "default_scale_down_idle_s")]
    pub scale_down_idle_s: f64,
    /// Not read from the scenario: the Kueue ProvisioningRequest AdmissionCheck whose
    /// workloads this group's nodes are provisioned for, set when the manifests are merged
    /// ([`crate::scenario::kueue`]). Kueue admits such a workload when its nodes join, so
    /// its pods-ready timeout does not run while they are provisioned.
    #[serde(skip)]
    pub admission_check: Option<String>,
}

fn default_scale_down_idle_s() -> f64 {
    600.0
}

/// A distribution of a delay, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(tag = "distribution", rename_all = "lowercase", deny_unknown_fields)]
pub enum DelaySpec {
    /// Always `s` seconds.
    Fixed {
        /// Seconds.
        s: f64,
    },
    /// Uniform on `[min_s, max_s]`.
    Uniform {
        /// Lower bound, seconds.
        min_s: f64,
        /// Upper bound, seconds.
        max_s: f64,
    },
    /// Log-normal with median `median_s` seconds and log-scale `sigma`.
    Lognormal {
        /// Median, seconds (> 0).
        median_s: f64,
        /// Standard deviation of the logarithm (≥ 0).
        sigma: f64,
    },
}

/// A group of identical nodes.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeGroupSpec {
    /// A building block that fills the other fields: `hgx-h100`, `hgx-h200`, `hgx-b200`,
    /// `gb200-nvl72`, `gb300-nvl72`, `mi300x`, `mi355x`, `tpu-v5p`. Explicit fields override it.
    #[serde(default)]
    pub preset: Option<String>,
    /// Number of nodes (or use `racks` with a rack preset).
    #[serde(default)]
    pub count: Option<u32>,
    /// Number of racks/domains; nodes = racks × nodes_per_domain.
    #[serde(default)]
    pub racks: Option<u32>,
    /// Accelerator model (catalog name).
    #[serde(default)]
    pub accelerator: Option<String>,
    /// Accelerators per node.
    #[serde(default)]
    pub gpus: Option<u32>,
    /// CPU per node, milli-cores.
    #[serde(default)]
    pub cpu_milli: Option<u64>,
    /// Memory per node, MiB.
    #[serde(default)]
    pub mem_mib: Option<u64>,
    /// Nodes per NVLink/ICI domain (rack); default 1.
    #[serde(default)]
    pub nodes_per_domain: Option<u32>,
    /// Domains per block; default 32.
    #[serde(default)]
    pub domains_per_block: Option<u32>,
    /// Node name prefix; default the cell name.
    #[serde(default)]
    pub name_prefix: Option<String>,
    /// Explicit node names, one per node (then `count` may be left out).
    #[serde(default)]
    pub names: Option<Vec<String>>,
}

/// A machine list as a cell's nodes.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MachineListSpec {
    /// `alibaba-openb` (openb_node_list_*.csv) or `philly` (cluster_machine_list.csv).
    pub format: MachineListFormat,
    /// A path relative to the scenario file.
    #[serde(default)]
    pub path: Option<String>,
    /// A path under the public trace directory.
    #[serde(default)]
    pub public_path: Option<String>,
    /// Leave out nodes without accelerators (default false).
    #[serde(default)]
    pub gpu_nodes_only: bool,
    /// Nodes per domain; default 1.
    #[serde(default)]
    pub nodes_per_domain: Option<u32>,
    /// Domains per block; default 32.
    #[serde(default)]
    pub domains_per_block: Option<u32>,
    /// Philly only: accelerator model assumed for each per-GPU memory size, e.g.
    /// `{ 12 = "K80", 24 = "P40" }` (the trace does not name models).
    #[serde(default)]
    pub philly_models_by_gpu_mem_gb: Option<std::collections::BTreeMap<String, String>>,
}

/// Machine-list formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MachineListFormat {
    /// Alibaba openb node list.
    AlibabaOpenb,
    /// Philly cluster_machine_list.
    Philly,
}

/// Where jobs come from.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// A trace file.
    #[serde(default)]
    pub trace: Option<TraceSpec>,
    /// A synthetic generator.
    #[serde(default)]
    pub synthetic: Option<SyntheticSpec>,
    /// How jobs without a queue of their own are queued: `per-tenant` (default; the queue is
    /// the tenant's name) or `single` (one queue named `default`).
    #[serde(default)]
    pub queues: QueueMapping,
}

/// Queue mapping for jobs that name none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMapping {
    /// One queue per tenant.
    #[default]
    PerTenant,
    /// Every job in the queue `default`.
    Single,
}

/// A trace file.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The reader.
    pub format: TraceFormat,
    /// A path relative to the scenario file.
    #[serde(default)]
    pub path: Option<String>,
    /// A path under the public trace directory.
    #[serde(default)]
    pub public_path: Option<String>,
    /// Load the whole file and sort it by submit time (stable), for traces not sorted by
    /// submission; default false: stream it and fail at the first row out of order.
    #[serde(default)]
    pub sort: bool,
    /// `slurm-sacct` only: the file has no header line (`sacct --noheader`) and these are its
    /// columns, the `--format` list given to `sacct` (`"JobIDRaw,Submit,Start,End,…"`).
    #[serde(default)]
    pub sacct_format: Option<String>,
    /// `slurm-sacct` only: the field delimiter, the string given to `sacct --delimiter`
    /// (default `|`).
    #[serde(default)]
    pub sacct_delimiter: Option<String>,
    /// `slurm-sacct` only: refuse the file at a row whose field count is not the header's
    /// (default false: such a row is repaired when its fields place it, else skipped and
    /// counted under `malformed_row`).
    #[serde(default)]
    pub sacct_strict: bool,
}

impl TraceSpec {
    /// The `sacct` reader's options from `sacct_format`, `sacct_delimiter` and
    /// `sacct_strict`, and the name of the first one that is set (`None`: all default).
    ///
    /// # Errors
    /// `(field, message)` for a bad format list or delimiter.
    pub fn sacct_options(
        &self,
    ) -> Result<
        (
            crate::workload::slurm_sacct::SacctOptions,
            Option<&'static str>,
        ),
        (&'static str, String),
    > {
        let mut o = crate::workload::slurm_sacct::SacctOptions::default();
        let mut set = None;
        if let Some(f) = &self.sacct_format {
            o = o.format_list(f).map_err(|m| ("sacct_format", m))?;
            set = set.or(Some("sacct_format"));
        }
        if let Some(d) = &self.sacct_delimiter {
            o = o.with_delimiter(d).map_err(|m| ("sacct_delimiter", m))?;
            set = set.or(Some("sacct_delimiter"));
        }
        if self.sacct_strict {
            o.strict = true;
            set = set.or(Some("sacct_strict"));
        }
        Ok((o, set))
    }
}

/// One queue's settings.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// Queue name.
    pub name: String,
    /// Strict or best-effort FIFO; default from `[policy]`.
    #[serde(default)]
    pub strategy: Option<QueueingStrategy>,
    /// Hard maximum of accelerators held by running jobs (GPU-milli / 1000, may be
    /// fractional); jobs whose gang exceeds it are rejected at submit.
    #[serde(default)]
    pub max_gpus: Option<f64>,
    /// Time limit given to jobs that state none, seconds; exactly 0 means such jobs are
    /// rejected at submit (Slurm semantics, field case B16).
    #[serde(default)]
    pub default_time_limit_s: Option<f64>,
    /// Largest time limit a job may ask for, seconds; larger limits are cut to it.
    #[serde(default)]
    pub max_time_limit_s: Option<f64>,
    /// The cohort the queue borrows from and lends to.
    #[serde(default)]
    pub cohort: Option<String>,
    /// Fair-share weight (default 1): divides the queue's share under `drf` and
    /// `decayed-usage`, and is its shares in the multifactor fair-share factor.
    #[serde(default)]
    pub weight: Option<f64>,
    /// Tier of the queue's jobs: `production`, `batch` (default) or `best-effort`.
    #[serde(default)]
    pub tier: Option<Tier>,
    /// Quota per resource flavor, in the order flavors are tried. A queue with no flavors
    /// and no cohort takes no part in quota.
    #[serde(default)]
    pub flavors: Vec<FlavorQuotaSpec>,
    /// Other names by which jobs reach this queue (a job's `queue`, or its tenant under
    /// `queues = "per-tenant"`): the Kueue LocalQueues that point at this ClusterQueue.
    /// Each name may belong to one queue only and may not be another queue's name.
    #[serde(default)]
    pub local_queues: Vec<String>,
    /// The queue's own preemption rules for its jobs as preemptors (Kueue ClusterQueue
    /// `spec.preemption`); absent: `[policy.preemption]`'s.
    #[serde(default)]
    pub preemption: Option<QueuePreemptionSpec>,
    /// The queue's own flavor fungibility (Kueue ClusterQueue
    /// `spec.flavorFungibility.whenCanBorrow`): `borrow` or `try-next-flavor`; absent:
    /// `[policy] flavor_fungibility`.
    #[serde(default)]
    pub flavor_fungibility: Option<fleetsim_policies::quota::Fungibility>,
    /// Where the queue was declared when not in the scenario (a Kueue ClusterQueue:
    /// `manifests.yaml: ClusterQueue team-a`), for warnings; not a scenario key.
    #[serde(skip)]
    pub source: Option<String>,
}

/// `[queues.preemption]`: a queue's own preemption rules, Kueue's ClusterQueue
/// `spec.preemption` (<https://kueue.sigs.k8s.io/docs/concepts/preemption/>). For a job of
/// this queue they replace `[policy.preemption]`'s `within_queue` and
/// `reclaim_within_cohort`, and a fair-sharing victim in another queue must satisfy
/// `reclaim_within_cohort` too, as in Kueue. Without `[policy.preemption]`, preemption runs
/// with Kueue's defaults for everything else: no other rule, no grace period, no over-reclaim
/// guard (`reclaim_guard = "off"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueuePreemptionSpec {
    /// `never` (default), `lower-priority` or `lower-or-newer-equal-priority` (Kueue
    /// `withinClusterQueue`).
    #[serde(default)]
    pub within_queue: fleetsim_policies::preemption::WithinQueue,
    /// `never` (default), `lower-priority` or `any` (Kueue `reclaimWithinCohort`).
    #[serde(default)]
    pub reclaim_within_cohort: fleetsim_policies::preemption::ReclaimWithinCohort,
    /// Preempting lower-priority jobs of other queues of the cohort while borrowing (Kueue
    /// `borrowWithinCohort`): `{ policy = "lower-priority", max_priority_threshold = N }`;
    /// needs `reclaim_within_cohort` other than `never`.
    #[serde(default)]
    pub borrow_within_cohort: fleetsim_policies::BorrowWithinCohort,
}

impl QueuePreemptionSpec {
    /// The policy crate's rules.
    pub fn to_rules(self) -> fleetsim_policies::QueuePreemption {
        fleetsim_policies::QueuePreemption {
            within_queue: self.within_queue,
            reclaim_within_cohort: self.reclaim_within_cohort,
            borrow_within_cohort: self.borrow_within_cohort,
        }
    }
}

/// A resource flavor (Kueue `ResourceFlavor`): a named set of accelerator models that quota
/// can be given for. Without a `[[flavors]]` entry, a quota flavor's name must be a model of
/// the fleet or `*`.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlavorSpec {
    /// Unique flavor name, used by `[[queues]]` and `[[cohorts]]` `flavors[].name`.
    pub name: String,
    /// The accelerator models the flavor covers; empty = every model. Each entry is a model
    /// of the fleet (`H100`, case-insensitive) or a node label value that names one as a
    /// token separated by `-`, `_`, `.` or spaces (`NVIDIA-H100-80GB-HBM3` → `H100`).
    #[serde(default)]
    pub models: Vec<String>,
    /// Where the flavor was declared when not in the scenario (a Kueue ResourceFlavor:
    /// `manifests.yaml: line 12: ResourceFlavor h100`), for errors; not a scenario key.
    #[serde(skip)]
    pub source: Option<String>,
}

/// A cohort.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CohortSpec {
    /// Unique cohort name.
    pub name: String,
    /// Parent cohort.
    #[serde(default)]
    pub parent: Option<String>,
    /// Fair-share weight towards its parent (default 1).
    #[serde(default)]
    pub weight: Option<f64>,
    /// The cohort's own quota per flavor, and its limits towards its parent.
    #[serde(default)]
    pub flavors: Vec<FlavorQuotaSpec>,
}

/// Quota of one flavor.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlavorQuotaSpec {
    /// A `[[flavors]]` name, an accelerator model of the fleet (`H100`, `P40`, …), or `*`
    /// for any model.
    pub name: String,
    /// Accelerators (may be fractional).
    #[serde(default)]
    pub gpus: Option<ResourceQuotaSpec>,
    /// CPU cores.
    #[serde(default)]
    pub cpus: Option<ResourceQuotaSpec>,
    /// Memory, GiB.
    #[serde(default)]
    pub memory_gib: Option<ResourceQuotaSpec>,
}

/// Nominal quota and limits of one resource (in the resource's unit: GPUs, cores, GiB).
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceQuotaSpec {
    /// Nominal quota.
    pub nominal: f64,
    /// Most it may use above nominal, from its cohort (needs a cohort).
    #[serde(default)]
    pub borrowing_limit: Option<f64>,
    /// Most of its nominal quota it lends to its cohort (needs a cohort).
    #[serde(default)]
    pub lending_limit: Option<f64>,
}

/// A node failure or repair.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeEventSpec {
    /// When, seconds.
    pub at_s: f64,
    /// The node's name.
    pub node: String,
    /// `fail` or `repair`: per node, in time order, `fail` an up node and `repair` a down
    /// one (checked at load, naming `node_events[i]`).
    pub kind: NodeEventKind,
    /// Failure only: termination grace, seconds — jobs on the node release their resources
    /// (and quota) this long after the failure, then are retried.
    #[serde(default)]
    pub grace_s: f64,
}

/// What a node event does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NodeEventKind {
    /// The node fails.
    Fail,
    /// The node comes back.
    Repair,
}

/// The `[policy]` table: the policy crate's typed scheduler spec, read as it is (see
/// [`fleetsim_policies::spec`]).
pub type PolicySpec = fleetsim_policies::SchedulerSpec;

pub use fleetsim_policies::spec::{
    CycleSpec, EstimateSource, FairShareSpec, LasSpec, MultifactorParams, PreemptionSpec,
    TopologyTable,
};

/// The measurement window and time series.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsSpec {
    /// Time after the first submission excluded from the window, seconds.
    #[serde(default)]
    pub warmup_s: f64,
    /// Simulation stops here (seconds after t = 0); jobs not started by then are censored;
    /// jobs submitted after it are read but not simulated (`jobs.skipped_rows.after_horizon`).
    #[serde(default)]
    pub horizon_s: Option<f64>,
    /// Width of one `timeseries.csv` interval, seconds.
    #[serde(default = "default_interval")]
    pub timeseries_interval_s: f64,
    /// Audit the fleet state against running jobs after every instant (slow; default: only
    /// at the end).
    #[serde(default)]
    pub audit_every_instant: bool,
    /// Formats of the per-job and time-series outputs of `fleetsim run`: `csv` (`jobs.csv`,
    /// `timeseries.csv`), `parquet` (`jobs.parquet`, `timeseries.parquet`, with the column
    /// types of [`crate::report::tables`]) and `batsim` (`batsim_jobs.csv`, the jobs table in
    /// Batsim's dialect for evalys: [`crate::report::batsim`]; no time series). Any
    /// non-empty set, each at most once. Default `["csv"]`.
    #[serde(default = "default_outputs")]
    pub outputs: Vec<OutputFormat>,
    /// Queueing SLOs (`[[metrics.slo]]`, see [`crate::metrics::slo`]): their attainment goes
    /// to `summary.json` → `slo` and `timeseries.csv`'s `slo_*` columns; none by default.
    #[serde(default)]
    pub slo: Vec<crate::metrics::slo::SloSpec>,
}

/// A format of the per-job and time-series outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// `jobs.csv`, `timeseries.csv`.
    Csv,
    /// `jobs.parquet`, `timeseries.parquet`.
    Parquet,
    /// `batsim_jobs.csv` (Batsim's dialect of the jobs table; no time series).
    Batsim,
}

impl OutputFormat {
    /// The name in the scenario file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Csv => "csv",
            OutputFormat::Parquet => "parquet",
            OutputFormat::Batsim => "batsim",
        }
    }

    /// Parses a name (`csv`, `parquet`, `batsim`).
    pub fn parse(s: &str) -> Option<OutputFormat> {
        match s {
            "csv" => Some(OutputFormat::Csv),
            "parquet" => Some(OutputFormat::Parquet),
            "batsim" => Some(OutputFormat::Batsim),
            _ => None,
        }
    }

    /// Whether this format writes the time series (`timeseries.<ext>`) too.
    pub fn has_timeseries(self) -> bool {
        !matches!(self, OutputFormat::Batsim)
    }
}

fn default_interval() -> f64 {
    3600.0
}

fn default_outputs() -> Vec<OutputFormat> {
    vec![OutputFormat::Csv]
}

impl Default for MetricsSpec {
    fn default() -> Self {
        MetricsSpec {
            warmup_s: 0.0,
            horizon_s: None,
            timeseries_interval_s: default_interval(),
            audit_every_instant: false,
            outputs: default_outputs(),
            slo: Vec::new(),
        }
    }
}
