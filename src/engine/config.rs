//! The engine's settings: [`EngineConfig`], the queues it registers first and the node
//! changes and events it applies, and the bounds on a run's time series.

use fleetsim_policies::{NodeId, QueueConfig, SimDuration, SimTime};

use super::{autoscale, elastic, pods_ready, reliability};
use crate::scenario::{Mode, QueueMapping};

/// Settings of one named queue.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueSettings {
    /// Queue name.
    pub name: String,
    /// Strategy and hard maximum.
    pub config: QueueConfig,
    /// Time limit for jobs that give none; `Some(0)` rejects them at submit.
    pub default_time_limit: Option<SimDuration>,
    /// Largest time limit; larger ones are cut to it.
    pub max_time_limit: Option<SimDuration>,
    /// Other names jobs reach this queue by (Kueue LocalQueues of a ClusterQueue).
    pub local_queues: Vec<String>,
}

/// Most time-series intervals a run may span (each holds a row of per-cell, per-model and
/// per-tenant integrals). A run that would need more, or more than [`MAX_SERIES_BYTES`] of them,
/// stops with [`EngineError::TooManyIntervals`](crate::engine::EngineError::TooManyIntervals), a
/// bad-input error; see [`series_interval_cap`].
pub const MAX_SERIES_INTERVALS: u64 = 4_000_000;

/// The memory the time series' interval snapshots may take while a run goes, bytes
/// (128 MiB). The snapshots are a fraction of what an interval costs in all: the report's
/// rows, the summary's per-interval figures and `timeseries.csv` come on top (measured:
/// 1,000,000 intervals of a one-cell fleet peak at 2.7 GB resident, 2.7 KB per interval,
/// when a snapshot took 368 bytes; it takes 480 now, with the useful-occupancy levels), so
/// this bounds a run's time series to about 1 GB.
pub const MAX_SERIES_BYTES: u64 = 128 << 20;

/// The most intervals a run may span when one interval's snapshot takes `row_bytes`
/// (estimated by the metrics collector from the fleet's cells and models and the tenants
/// and pending reasons seen): [`MAX_SERIES_INTERVALS`], or fewer so that they fit in
/// [`MAX_SERIES_BYTES`]. A single-cell fleet has room for about 280,000 intervals.
pub fn series_interval_cap(row_bytes: u64) -> u64 {
    MAX_SERIES_INTERVALS.min(MAX_SERIES_BYTES / row_bytes.max(1))
}

/// The `skipped_rows` reason of jobs whose submit time is after the horizon: read from the
/// workload to the end (so that every row is accounted for) but neither submitted nor
/// simulated, and absent from `jobs.csv`.
pub const AFTER_HORIZON: &str = "after_horizon";

/// Engine settings.
#[derive(Clone, Debug, Default)]
pub struct EngineConfig {
    /// Schedule or replay.
    pub mode: Mode,
    /// Stop at this instant; unstarted jobs are then censored, and jobs submitted after it
    /// are read to the end of the stream and counted under [`AFTER_HORIZON`] in
    /// [`RunResult::skipped_rows`](crate::engine::RunResult::skipped_rows).
    pub horizon: Option<SimTime>,
    /// Warm-up excluded from the window, ms.
    pub warmup_ms: u64,
    /// Time-series interval, ms.
    pub interval_ms: u64,
    /// Audit the fleet after every instant.
    pub audit_every_instant: bool,
    /// Queue of jobs that name none.
    pub queue_mapping: QueueMapping,
    /// Named queues, registered first (in this order).
    pub queues: Vec<QueueSettings>,
    /// Runtime estimates the policies see: the job's time limit (`false`) or its true
    /// remaining run time (`true`: an oracle).
    pub estimate_oracle: bool,
    /// While jobs are pending, also run a pass this often (a retry cycle: Kueue requeueing,
    /// an HTCondor negotiation cycle), at multiples of it after the first pending pass.
    pub retry_interval: Option<SimDuration>,
    /// Round-based cadence (`[policy.cycle] round_s`; Gavel's rounds): scheduling passes run
    /// only at instants that are multiples of it. A change at another instant (an arrival,
    /// a completion, a node event) marks the scheduler dirty and queues a tick at the next
    /// boundary `⌈t / round⌉ · round`; the scheduler's wake-ups and the
    /// [`EngineConfig::retry_interval`] passes are rounded up to a boundary the same way.
    /// `None` (default): a pass at every instant where something changed.
    pub round: Option<SimDuration>,
    /// Checkpoint interval of every job: a stopped job keeps its progress up to the last
    /// multiple of it (`None`: it restarts from scratch).
    pub checkpoint_interval: Option<SimDuration>,
    /// Node failures and repairs, applied as node events (class 2 of the ordering
    /// guarantees) in this order at equal times.
    pub node_changes: Vec<NodeChange>,
    /// Keep every preemption in
    /// [`RunResult::preemption_log`](crate::engine::RunResult::preemption_log), what each
    /// preemption plan saw in
    /// [`RunResult::preemption_plans`](crate::engine::RunResult::preemption_plans) and, with
    /// `audit_every_instant`, every change of quota usage in
    /// [`RunResult::quota_log`](crate::engine::RunResult::quota_log) (for tests and checkers; off
    /// by default).
    pub record_preemptions: bool,
    /// Record, at every call into the scheduler, the live service's event stream and the decisions
    /// the scheduler answered ([`RunResult::live`](crate::engine::RunResult::live); the live
    /// equivalence test reads it). Off by default: no output changes.
    pub record_live: bool,
    /// Scheduled node changes (what-if transforms), applied as node events (class 2 of the
    /// ordering guarantees) in this order at equal times.
    pub node_events: Vec<NodeEvent>,
    /// Startup latency and restart overhead of every run ([`reliability`]); `None`: none.
    pub startup: Option<reliability::StartupModel>,
    /// Relative speed of each accelerator model of the fleet (indexed by model id),
    /// per-mille of the reference speed at which run times are given; empty: every model
    /// runs at reference speed ([`reliability`]).
    pub model_speed_permille: Vec<u32>,
    /// Keep the goodput account ([`reliability::ReliabilityStats`] in
    /// [`RunResult::reliability`](crate::engine::RunResult::reliability)); off by default.
    pub reliability: bool,
    /// Dispatch latency of the global level (Kueue MultiKueue's manager → worker cluster): a
    /// job enters the queues this long after its submission (its wait counts from submit);
    /// zero by default.
    pub dispatch_latency: SimDuration,
    /// Reject at submit
    /// ([`RejectReason::UnknownQueue`](fleetsim_policies::RejectReason::UnknownQueue)) a job whose
    /// queue (its `queue`, or its tenant under [`QueueMapping::PerTenant`]) is none of
    /// [`EngineConfig::queues`] nor their `local_queues` (scenarios with Kueue manifests: Kueue
    /// admits no workload of an unknown LocalQueue). Off: such a job gets a queue of its own,
    /// outside quota.
    pub reject_unknown_queues: bool,
    /// Hot spares (`failures.spares_per_cell`): held out of scheduling from the start; a job
    /// hit by a node failure moves its tasks on that node onto a free spare of the same cell
    /// and model instead of requeueing ([`crate::reliability`] module docs). Empty: none.
    pub spares: Vec<NodeId>,
    /// What a gang hit by a node failure does ([`fleetsim_policies::GangRecovery`],
    /// `[policy] gang_recovery`): restart whole (default) or keep its survivors bound.
    pub gang_recovery: fleetsim_policies::GangRecovery,
    /// Keep every run of a job (its interval and accelerators) in
    /// [`JobRow::runs`](crate::engine::JobRow::runs), for the Batsim dialect of the jobs table
    /// ([`crate::report::batsim`]); off by default (rows then carry no runs and the engine stores
    /// none).
    pub record_runs: bool,
    /// Autoscaled node groups ([`autoscale`]); `None`: a fixed fleet.
    pub autoscaling: Option<autoscale::AutoscaleConfig>,
    /// Kueue's `waitForPodsReady` ([`pods_ready`]); `None`: an admitted job waits for its
    /// nodes as long as it takes.
    pub wait_for_pods_ready: Option<pods_ready::PodsReadyConfig>,
    /// Inference services beside training ([`serving`](crate::engine::serving)); `None`: none.
    pub serving: Option<crate::serving::ServingPlan>,
    /// Keep every start in [`RunResult::admissions`](crate::engine::RunResult::admissions) (with
    /// its quota flavor) and, after every instant, each change of a pending job's reason in
    /// [`RunResult::reason_log`](crate::engine::RunResult::reason_log) (`fleetsim kueue simulate`);
    /// off by default.
    pub record_admissions: bool,
    /// Round-allocated (elastic) jobs ([`elastic`]); `None`: none (a job of the stream with
    /// an elastic spec is then refused).
    pub elastic: Option<elastic::ElasticConfig>,
}

/// A scheduled change of node availability.
///
/// `up`: the nodes become schedulable and available. Down: the nodes are drained: they take
/// no new work at once, jobs running on them run to completion, and each counts as available
/// capacity until its last task ends (so occupancy never exceeds 1), then leaves the fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeEvent {
    /// When.
    pub at: SimTime,
    /// The nodes.
    pub nodes: Vec<NodeId>,
    /// Up (join) or down (drain).
    pub up: bool,
}

/// A scheduled node failure or repair (a minimal failure model: one node, fixed times; a
/// fuller one — MTBF distributions, drains, capacity changes — is separate work).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeChange {
    /// When.
    pub at: SimTime,
    /// The node.
    pub node: NodeId,
    /// What happens.
    pub kind: NodeChangeKind,
}

/// What a [`NodeChange`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeChangeKind {
    /// The node fails at once: it takes no new work and stops counting as available; every
    /// job with a task on it stops (work since its last checkpoint is lost), holds its
    /// resources and quota until `grace` has passed (the termination grace), then releases
    /// them and is retried.
    Fail {
        /// Termination grace.
        grace: SimDuration,
    },
    /// The node comes back, empty (and leaves any maintenance drain).
    Repair,
    /// Scheduled maintenance begins: the node takes no new work; jobs on it keep running
    /// (it counts as available while they do) until they finish or an [`NodeChangeKind::Evict`].
    Drain,
    /// The maintenance deadline: jobs still on the (drained) node stop as on a failure (work
    /// since the last checkpoint is lost; released after `grace`, then requeued), counted as
    /// evictions, not failures.
    Evict {
        /// Termination grace.
        grace: SimDuration,
    },
}
