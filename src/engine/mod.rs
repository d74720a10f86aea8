//! The deterministic discrete-event engine.
//!
//! # Ordering guarantees
//! Simulated time is integer milliseconds ([`SimTime`]). Events are ordered by the key
//! `(time, class rank, sequence number)` ([`events::EventKey`]). At one instant `t`:
//!
//! 1. all completions at `t` are applied (resources released), in the order they were queued,
//!    and so are the releases of terminating jobs whose grace period ends at `t` (they are
//!    requeued);
//! 2. node events at `t` ([`NodeChange`]: a failure stops the jobs on the node, which release
//!    everything by `t + grace`; a repair brings the node back);
//! 3. all arrivals at `t`, in trace order (the trace's order is the sequence number);
//!    with `[serving]`, the replicas the autoscaler adds at `t` come first, in service
//!    order then replica index ([`serving`]);
//! 4. replay mode only: recorded starts at `t`; then periodic passes due at `t`
//!    ([`EngineConfig::retry_interval`]);
//! 5. scheduling passes, if anything changed since the last one, until a pass changes
//!    nothing (with a round-based cadence, [`EngineConfig::round`], only at round
//!    boundaries: a change at another instant is acted on at the next boundary). A pass tries every pending job once in its order; since a pass only allocates,
//!    a second pass at the same state could start nothing more, except when it preempted:
//!    victims released at once are requeued and tried again in another pass at `t`. Jobs
//!    started with zero run time complete at `t` as well, which re-runs steps 1–5 at `t`.
//!
//! So a job submitted at `t` can start at `t`, and a completion at `t` frees resources for
//! jobs submitted at `t`. The policy is called once per instant (more only after preemptions
//! or when zero-length jobs end at the same instant); a run of passes at one instant that
//! never settles is reported as an invariant violation, not looped forever.
//!
//! # Preemption, failures and restarts
//! A [`Decision::Preempt`] stops its victim at once: progress since its last checkpoint
//! ([`EngineConfig::checkpoint_interval`]; from scratch without one) is lost. With a zero
//! grace period the policy has already released it and requeued it; otherwise it keeps its
//! resources (allocated, doing nothing) until the grace period ends, then is released and
//! requeued. A job on a failed node is stopped the same way and retried when its tasks are
//! released (field case B15). A restart runs for the job's run time minus its kept progress
//! and gets a fresh run id, so the completion of an earlier run is ignored as stale. Lost
//! accelerator-time (progress lost plus time held in grace) is counted per job and tenant.
//!
//! # Checks
//! Every start is reserved through the policy crate's checked [`FleetState`], which refuses
//! to over-allocate any dimension; the engine refuses a decision for a job that is not
//! pending or whose gang is incomplete, and at the end (or after every instant, when asked)
//! audits the fleet state against the running jobs' bindings, the scheduler's queue and quota
//! usage against the jobs holding resources, and every gang for a binding per task. At the
//! end every submitted job is accounted for:
//! `started + rejected + censored + cancelled = submitted`. A run stopped at its horizon
//! still reads the rest of the workload without simulating it, so every job read is either
//! submitted or in [`RunResult::skipped_rows`] (the later ones under [`AFTER_HORIZON`]).
//!
//! # Determinism
//! No wall clock, no hash-map iteration, no unseeded randomness: the same scenario and seed
//! give the same event sequence on any machine and thread count.

pub mod autoscale;
pub mod elastic;
pub mod events;
pub mod node_changes;
pub mod pods_ready;
pub mod reliability;
pub mod serving;

use std::collections::{BTreeMap, BTreeSet};

use fleetsim_policies::live;
use fleetsim_policies::{
    kept_progress, longest_reason, CellId, Decision, Extensions, FleetState, JobId, ModelSet,
    NodeId, PendingJob, PendingReason, PreemptReason, QueueConfig, QueueId, RejectReason,
    Scheduler, SchedulerConfig, SimDuration, SimTime, TaskAlloc, TaskShape, TenantId, Tier,
    WaitProfile,
};

pub use crate::metrics::jobs::{DiscardRows, FinalState, JobRow, JobSink, RunEnd, RunSegment};
use crate::metrics::{Collector, Dist, Occupancy};
use crate::scenario::{Mode, QueueMapping};
use crate::workload::{JobStream, RecordedKind, Skipped, TraceError};
use events::{EventKind, EventQueue};

mod prefetch;

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
/// per-tenant integrals). A run that would need more, or more than
/// [`MAX_SERIES_BYTES`] of them, stops with [`EngineError::TooManyIntervals`], a bad-input
/// error; see [`series_interval_cap`].
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
    /// [`RunResult::skipped_rows`].
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
    /// Keep every preemption in [`RunResult::preemption_log`], what each preemption plan
    /// saw in [`RunResult::preemption_plans`] and, with `audit_every_instant`, every change
    /// of quota usage in [`RunResult::quota_log`] (for tests and checkers; off by default).
    pub record_preemptions: bool,
    /// Record, at every call into the scheduler, the live service's event stream and the
    /// decisions the scheduler answered ([`RunResult::live`]; the live equivalence test reads it).
    /// Off by default: no output changes.
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
    /// [`RunResult::reliability`]); off by default.
    pub reliability: bool,
    /// Dispatch latency of the global level (Kueue MultiKueue's manager → worker cluster): a
    /// job enters the queues this long after its submission (its wait counts from submit);
    /// zero by default.
    pub dispatch_latency: SimDuration,
    /// Reject at submit ([`RejectReason::UnknownQueue`]) a job whose queue (its `queue`, or
    /// its tenant under [`QueueMapping::PerTenant`]) is none of [`EngineConfig::queues`] nor
    /// their `local_queues` (scenarios with Kueue manifests: Kueue admits no workload of an
    /// unknown LocalQueue). Off: such a job gets a queue of its own, outside quota.
    pub reject_unknown_queues: bool,
    /// Hot spares (`failures.spares_per_cell`): held out of scheduling from the start; a job
    /// hit by a node failure moves its tasks on that node onto a free spare of the same cell
    /// and model instead of requeueing ([`crate::reliability`] module docs). Empty: none.
    pub spares: Vec<NodeId>,
    /// What a gang hit by a node failure does ([`fleetsim_policies::GangRecovery`],
    /// `[policy] gang_recovery`): restart whole (default) or keep its survivors bound.
    pub gang_recovery: fleetsim_policies::GangRecovery,
    /// Keep every run of a job (its interval and accelerators) in [`JobRow::runs`], for the
    /// Batsim dialect of the jobs table ([`crate::report::batsim`]); off by default (rows
    /// then carry no runs and the engine stores none).
    pub record_runs: bool,
    /// Autoscaled node groups ([`autoscale`]); `None`: a fixed fleet.
    pub autoscaling: Option<autoscale::AutoscaleConfig>,
    /// Kueue's `waitForPodsReady` ([`pods_ready`]); `None`: an admitted job waits for its
    /// nodes as long as it takes.
    pub wait_for_pods_ready: Option<pods_ready::PodsReadyConfig>,
    /// Inference services beside training ([`serving`]); `None`: none.
    pub serving: Option<crate::serving::ServingPlan>,
    /// Keep every start in [`RunResult::admissions`] (with its quota flavor) and, after
    /// every instant, each change of a pending job's reason in [`RunResult::reason_log`]
    /// (`fleetsim kueue simulate`); off by default.
    pub record_admissions: bool,
    /// Round-allocated (elastic) jobs ([`elastic`]); `None`: none (a job of the stream with
    /// an elastic spec is then refused).
    pub elastic: Option<elastic::ElasticConfig>,
}

/// One start of a job, as [`RunResult::admissions`] keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionEvent {
    /// When.
    pub at: SimTime,
    /// The job's input position.
    pub seq: u64,
    /// The quota flavor it is charged in (`None`: no quota).
    pub flavor: Option<String>,
}

/// A pending job's reason as of the end of an instant, when it changed
/// ([`RunResult::reason_log`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReasonChange {
    /// The instant.
    pub at: SimTime,
    /// The job's input position.
    pub seq: u64,
    /// Why it waits from then on.
    pub reason: PendingReason,
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

/// One preemption, as [`RunResult::preemption_log`] keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreemptionEvent {
    /// When.
    pub at: SimTime,
    /// The victim's input position.
    pub victim: u64,
    /// The preemptor's input position.
    pub preemptor: u64,
    /// The rule.
    pub reason: PreemptReason,
}

/// One preemption plan as the scheduling pass saw it when it decided it (before taking any
/// victim out): [`fleetsim_policies::PreemptionContext`] with input positions for job ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreemptionPlan {
    /// When.
    pub at: SimTime,
    /// The preemptor's input position.
    pub preemptor: u64,
    /// The victims' input positions, in the order they were decided.
    pub victims: Vec<u64>,
    /// Per node (by id), what was free for the preemptor (see
    /// [`fleetsim_policies::PreemptionContext::free`]: room held in grace periods and for
    /// waiting preemptors is not free; down and drained nodes offer nothing).
    pub free: Vec<fleetsim_policies::NodeFree>,
    /// Per queue (by [`QueueId`] index), its quota usage per slot (`None`: no quota).
    pub queue_usage: Vec<Option<Vec<u64>>>,
}

/// Every queue's quota usage after an instant at which it changed ([`RunResult::quota_log`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaSample {
    /// The instant (its events and passes all applied).
    pub at: SimTime,
    /// Per queue (by [`QueueId`] index), the scheduler's quota usage per slot: flavor-major,
    /// GPU-milli, milli-cores, MiB within (`None`: no quota). Counts running and terminating
    /// jobs and the reservations of preemptors waiting for their victims (so it counts a
    /// victim in its grace period and the room reserved for its preemptor both).
    pub queue_usage: Vec<Option<Vec<u64>>>,
    /// Per queue (by [`QueueId`] index), GPU-milli of the quota-charged jobs (tier not
    /// best-effort, queue with quota) that hold resources — running or terminating — as the
    /// engine's own records have them: the admitted usage.
    pub holding_gpu_milli: Vec<u64>,
    /// The part of `holding_gpu_milli` held by jobs in a grace period (terminating).
    pub terminating_gpu_milli: Vec<u64>,
}

/// Per-tenant results.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TenantStats {
    /// Tenant name.
    pub name: String,
    /// Jobs submitted.
    pub jobs: u64,
    /// Jobs that started at least once.
    pub started: u64,
    /// Times its jobs were preempted.
    pub preemptions: u64,
    /// Times its jobs were lost to node failures.
    pub failures: u64,
    /// Accelerator-time lost to preemption and failures, GPU-milli·ms.
    pub lost_gpu_milli_ms: u128,
    /// Accelerator-time its jobs asked for (run time × accelerators), GPU-milli·ms.
    pub demand_gpu_milli_ms: u128,
    /// Waits (all pending time) of its measured started jobs, seconds.
    pub wait_s: Dist,
    /// Its entitlement: the nominal GPU quota (GPU-milli) of the queue named after it, when
    /// quota is configured.
    pub entitlement_gpu_milli: Option<u64>,
}

/// Errors that stop a run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A job from the stream is invalid.
    #[error("job `{name}` (input #{seq}): {message}")]
    BadJob {
        /// Trace name.
        name: String,
        /// Input position.
        seq: u64,
        /// What is wrong.
        message: String,
    },
    /// The stream's submit times went backwards.
    #[error("job `{name}` (input #{seq}) is submitted at {submit}, before the previous job ({previous}); the trace must be sorted by submit time")]
    Unsorted {
        /// Trace name.
        name: String,
        /// Input position.
        seq: u64,
        /// Its submit time.
        submit: SimTime,
        /// The previous job's.
        previous: SimTime,
    },
    /// The run would need more time-series intervals than [`series_interval_cap`] allows.
    #[error("the run reaches {time}, {intervals} time-series intervals of {interval_ms} ms (at most {max} are kept): raise `[metrics] timeseries_interval_s`, or check the times of node events, grace periods and the trace")]
    TooManyIntervals {
        /// Simulated time reached.
        time: SimTime,
        /// Intervals that time needs.
        intervals: u64,
        /// The interval, ms.
        interval_ms: u64,
        /// The cap, [`series_interval_cap`] of the run's snapshot size.
        max: u64,
    },
    /// A job is requeued for ever by waiting for pods ([`pods_ready`]): evicted
    /// [`pods_ready::ENDLESS_EVICTIONS`] times with no `backoff_limit_count`.
    #[error("job `{name}` (input #{seq}) was evicted {evictions} times for a pods-ready timeout by {time} without starting: its requeue backoff outlasts the time its nodes stay up, so it is requeued for ever; set `[policy] wait_for_pods_ready.backoff_limit_count` (or raise `timeout_s`, lower the backoff, or raise the group's `scale_down_idle_s`)")]
    EndlessRequeue {
        /// Trace name.
        name: String,
        /// Input position.
        seq: u64,
        /// When the run stopped.
        time: SimTime,
        /// Its evictions.
        evictions: u32,
    },
    /// An internal check failed: a bug, reported instead of continuing with wrong numbers.
    #[error("invariant violated at {time}: {message}")]
    Invariant {
        /// When.
        time: SimTime,
        /// What.
        message: String,
    },
    /// Writing a job row failed.
    #[error("writing job rows: {0}")]
    Sink(#[from] std::io::Error),
}

/// How the run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// Every job reached a final state.
    Drained,
    /// The horizon was reached with work left.
    Horizon,
    /// No event was left but jobs were still pending (they could not start with the fleet as
    /// it ended); they are censored.
    Stuck {
        /// Jobs left pending.
        pending: u64,
    },
}

/// Job counts. `started + rejected + censored + cancelled = submitted`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Jobs read from the workload and submitted (not those after the horizon, counted in
    /// [`RunResult::skipped_rows`] under [`AFTER_HORIZON`]).
    pub submitted: u64,
    /// Jobs that started at least once.
    pub started: u64,
    /// Jobs that finished (including time-limit kills).
    pub completed: u64,
    /// Jobs killed at their time limit.
    pub walltime_reached: u64,
    /// Jobs refused at submit.
    pub rejected: u64,
    /// Refused jobs by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Jobs that never started inside the window.
    pub censored: u64,
    /// Censored jobs by the reason they were pending at the end: a [`PendingReason`], or
    /// `dispatching` (submitted but still inside `policy.dispatch_latency_s`, not yet in the
    /// queues) or `recorded_start_after_horizon` (replay: awaiting a recorded start).
    pub censored_by_reason: BTreeMap<String, u64>,
    /// Started jobs still running (or terminating) when the run stopped.
    pub running_at_end: u64,
    /// Started jobs pending again (after a preemption or failure) when the run stopped.
    pub requeued_at_end: u64,
    /// Jobs the trace records as never run, and serving replicas withdrawn at their planned
    /// stop before they ever started ([`serving`]).
    pub cancelled: u64,
    /// Pre-existing jobs (running before the trace window).
    pub pre_existing: u64,
    /// Replay mode: recorded starts that did not fit and were queued instead.
    pub replay_conflicts: u64,
    /// Preemptions (a job preempted twice counts twice).
    pub preemptions: u64,
    /// Preemptions by rule.
    pub preemptions_by_reason: BTreeMap<String, u64>,
    /// Runs stopped by node failures.
    pub failures: u64,
}

/// Everything a run measured.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Job counts.
    pub counts: Counts,
    /// Rows skipped by the trace reader and the transforms, by reason, over the whole
    /// workload; after a stop at the horizon also the jobs submitted after it
    /// ([`AFTER_HORIZON`]).
    pub skipped_rows: Skipped,
    /// The absolute time of t = 0, from the trace ([`crate::workload::JobStream::trace_start`],
    /// asked after the last job was read); `None` without an absolute clock.
    pub trace_start: Option<crate::workload::TraceStart>,
    /// Time-weighted results.
    pub occupancy: Occupancy,
    /// Waits (all pending time: submit → first start plus every wait after a preemption or
    /// failure), seconds.
    pub wait_s: Dist,
    /// First-start waits (first start − submit), seconds.
    pub first_start_wait_s: Dist,
    /// JCTs, seconds.
    pub jct_s: Dist,
    /// Bounded slowdowns.
    pub bounded_slowdown: Dist,
    /// Last finish − first submit, ms (`None` when nothing finished).
    pub makespan_ms: Option<u64>,
    /// How the run ended.
    pub end: EndReason,
    /// Events applied (arrivals, completions, recorded starts).
    pub events: u64,
    /// Scheduling passes.
    pub passes: u64,
    /// Simulated time at the end.
    pub end_time: SimTime,
    /// Accelerator-time lost to preemption and failures, GPU-milli·ms.
    pub lost_gpu_milli_ms: u128,
    /// Per tenant, in order of first appearance.
    pub tenants: Vec<TenantStats>,
    /// Every preemption, when [`EngineConfig::record_preemptions`] is on.
    pub preemption_log: Vec<PreemptionEvent>,
    /// Every start, when [`EngineConfig::record_admissions`] is on.
    pub admissions: Vec<AdmissionEvent>,
    /// Pending reasons as they changed, when [`EngineConfig::record_admissions`] is on.
    pub reason_log: Vec<ReasonChange>,
    /// Every step of waiting for pods (admissions waiting, evictions, requeues,
    /// deactivations), in order, when [`EngineConfig::record_admissions`] is on and
    /// [`EngineConfig::wait_for_pods_ready`] is set.
    pub pods_ready_log: Vec<pods_ready::PodsReadyEvent>,
    /// Every preemption plan of a scheduling pass (not of the Tiresias-compatible
    /// re-deciding mode), when [`EngineConfig::record_preemptions`] is on.
    pub preemption_plans: Vec<PreemptionPlan>,
    /// Quota usage after every instant at which it changed, when both
    /// [`EngineConfig::record_preemptions`] and [`EngineConfig::audit_every_instant`] are on
    /// and there is a quota tree.
    pub quota_log: Vec<QuotaSample>,
    /// The goodput account, when [`EngineConfig::reliability`] is on.
    pub reliability: Option<reliability::ReliabilityStats>,
    /// The autoscaling account, with [`EngineConfig::autoscaling`].
    pub autoscaling: Option<autoscale::AutoscaleStats>,
    /// The pods-ready account, with [`EngineConfig::wait_for_pods_ready`].
    pub pods_ready: Option<pods_ready::PodsReadyStats>,
    /// The serving account, with [`EngineConfig::serving`].
    pub serving: Option<serving::ServingStats>,
    /// The round-allocated jobs' account, with [`EngineConfig::elastic`].
    pub elastic: Option<elastic::ElasticStats>,
    /// The live event stream and its decisions, when [`EngineConfig::record_live`] is on.
    pub live: Option<LiveRecord>,
}

/// What [`EngineConfig::record_live`] records: every scheduler-facing event of the run as
/// the live service's [`live::Event`], and every decision the scheduler made, in order.
/// Replaying `events` through a [`live::LiveState`] built like the run's scheduler must give
/// exactly `decisions`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveRecord {
    /// The events, in the order the engine applied them.
    pub events: Vec<live::Event>,
    /// The decisions, in the order the scheduler made them.
    pub decisions: Vec<live::Decision>,
    /// Set when the run used a transition the live events cannot express yet (hot spares,
    /// keep-survivors gang recovery, autoscaled node groups): the record is then
    /// incomplete.
    pub unsupported: Option<String>,
    /// The run's queue table, names by queue id: the declared queues, then the names jobs
    /// used, in arrival order (the queue ids the events carry).
    pub queues: Vec<String>,
}

/// The name of the queue `spec` joins under `mapping`: its own queue, else its tenant
/// ([`QueueMapping::PerTenant`]) or `default` ([`QueueMapping::Single`]). A declared
/// queue's `local_queues` are other names of it.
pub fn queue_name(spec: &crate::workload::JobSpec, mapping: QueueMapping) -> &str {
    match (&spec.queue, mapping) {
        (Some(q), _) => q,
        (None, QueueMapping::PerTenant) => &spec.tenant,
        (None, QueueMapping::Single) => "default",
    }
}

/// The queue table a run of `cfg` over `stream` builds (names by queue id), without running
/// it: the declared queues ([`EngineConfig::queues`], a `local_queues` name being another
/// name of its queue), then the names the arrivals use ([`queue_name`]), serving replicas
/// before the trace's jobs of the same instant, up to the horizon, as the run registers
/// them. The live service's twin refuses queue ids outside it.
///
/// # Errors
/// The stream's.
pub fn queue_table(
    cfg: &EngineConfig,
    stream: &mut dyn JobStream,
) -> Result<Vec<String>, TraceError> {
    let mut names: Vec<String> = Vec::new();
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    // As `Simulation::queue_id`: a known name keeps its id, a new one gets the next.
    fn id_of(names: &mut Vec<String>, ids: &mut BTreeMap<String, usize>, n: &str) -> usize {
        if let Some(&q) = ids.get(n) {
            return q;
        }
        ids.insert(n.to_string(), names.len());
        names.push(n.to_string());
        names.len() - 1
    }
    for q in &cfg.queues {
        let id = id_of(&mut names, &mut ids, &q.name);
        for lq in &q.local_queues {
            ids.entry(lq.clone()).or_insert(id);
        }
    }
    // Replica arrivals in the engine's order: (start, service, replica index).
    let mut replicas: Vec<(SimTime, usize, u32)> = Vec::new();
    if let Some(plan) = &cfg.serving {
        for (s, svc) in plan.services.iter().enumerate() {
            replicas.extend(svc.replicas.iter().map(|r| (r.start, s, r.index)));
        }
    }
    replicas.sort_unstable();
    let mut replicas = replicas.into_iter().peekable();
    let mut next = stream.next().transpose()?;
    loop {
        let t = match (
            next.as_ref().map(|j| j.submit),
            replicas.peek().map(|r| r.0),
        ) {
            (None, None) => break,
            (Some(a), Some(r)) => a.min(r),
            (a, r) => a.or(r).expect("one is some"),
        };
        if cfg.horizon.is_some_and(|h| t > h) {
            break;
        }
        while let Some(&(_, s, _)) = replicas.peek().filter(|r| r.0 == t) {
            let plan = cfg.serving.as_ref().expect("replicas come from a plan");
            id_of(&mut names, &mut ids, &plan.services[s].queue);
            replicas.next();
        }
        while let Some(spec) = next.as_ref().filter(|j| j.submit == t) {
            id_of(&mut names, &mut ids, queue_name(spec, cfg.queue_mapping));
            next = stream.next().transpose()?;
        }
    }
    Ok(names)
}

/// A job's record while it is in flight (pending, awaiting a recorded start, or running).
/// Records live in a slab: a [`JobId`] is the slot index, reused once the job reaches its
/// final state, so memory grows with jobs in flight, not with jobs submitted. `seq` is the
/// job's input position, the `job_id` of every output.
#[derive(Clone, Debug)]
struct JobRec {
    seq: u64,
    live: bool,
    name: compact_str::CompactString,
    tenant: TenantId,
    queue: QueueId,
    priority: i32,
    qos: Option<Box<str>>,
    submit: SimTime,
    runtime: SimDuration,
    walltime_cut: bool,
    time_limit: Option<SimDuration>,
    tasks: u32,
    shape: TaskShape,
    /// Bindings of its current (or last) run: `tasks`, or the members it was split into
    /// when its tasks took the node's shape ([`fleetsim_policies::placement::split`]).
    members: u32,
    /// Its tasks may take the node's shape ([`crate::workload::JobSpec::split`]).
    split: bool,
    start: Option<SimTime>,
    cell: Option<CellId>,
    allocs: Allocs,
    kind: RecordedKind,
    /// Id of the current run (unique per start within a simulation); a completion event
    /// carrying another id is stale.
    run: u32,
    measured: bool,
    state: JobState,
    /// Time pending per reason, once it has waited.
    wait: Option<Box<WaitProfile>>,
    /// What only preempted, lost or reserved jobs need (boxed: most jobs have none).
    extra: Option<Box<Restarts>>,
}

/// The record of a job's stopped runs and reservations.
#[derive(Clone, Debug, Default)]
struct Restarts {
    /// Progress kept from earlier runs.
    done: SimDuration,
    /// Start of the last run, once the job restarted.
    run_start: Option<SimTime>,
    preemptions: u32,
    failures: u32,
    lost_gpu_milli_ms: u64,
    first_reservation: Option<SimTime>,
    /// Startup and restart overhead of its stopped runs, GPU-milli·ms.
    startup_gpu_milli_ms: u64,
    /// Accelerator-time held by its stopped runs (grace included), GPU-milli·ms.
    allocated_gpu_milli_ms: u64,
    /// When it was last lost to a node failure, until it restarts (time to recovery).
    lost_at: Option<SimTime>,
    /// End of its current termination grace (while terminating).
    release_at: Option<SimTime>,
    /// Grace held on failed nodes, GPU-milli·ms (see [`JobRow::held_on_failed_gpu_milli_ms`]).
    held_on_failed_gpu_milli_ms: u64,
    /// Failed nodes whose share of its current termination grace is already booked as held
    /// on failed nodes (a node repaired and failing again inside the grace books nothing
    /// twice).
    held_nodes: Vec<NodeId>,
    /// Paused since (an incomplete gang keeping its survivors), until whole again.
    paused_since: Option<SimTime>,
    /// Held by its survivors while incomplete, GPU-milli·ms.
    held_incomplete_gpu_milli_ms: u64,
    /// Wall time of its stopped runs, ms.
    served_ms: u64,
    /// Time it waited after its first start (from each stop to the next start), ms.
    requeued_pending_ms: u64,
    /// Not running since (its last stop: a preemption, failure or eviction), until it
    /// restarts.
    pending_since: Option<SimTime>,
    /// Its home cell (the first of the cells its trace row allows, when it allows several;
    /// kept only with the goodput account): a first start elsewhere is a cross-cell dispatch.
    home_cell: Option<CellId>,
    /// Its stopped runs, with [`EngineConfig::record_runs`].
    runs: Vec<RunSegment>,
}

/// Where a job in flight is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JobState {
    /// In a queue.
    Pending,
    /// Holding resources, making progress.
    Running,
    /// Stopped (preempted with a grace period, or lost with its node), holding resources
    /// until its release.
    Terminating,
    /// Waiting for its recorded start (replay) outside the queues.
    Awaiting,
    /// Evicted for a pods-ready timeout, outside the queues until its backoff ends
    /// ([`pods_ready`]).
    BackingOff,
    /// A gang below its size after a node failure (`gang_recovery = "keep_survivors"`):
    /// its surviving members stay bound, no progress, until the missing ones are placed.
    Recovering,
}

/// Accelerator-time a job asks for: tasks × per-task GPU-milli × run time, GPU-milli·ms,
/// exact in 128 bits (≤ 2⁶⁴ · 2³² · 2⁶⁴ would not fit, so the product saturates instead).
fn demand_of(shape: &TaskShape, tasks: u32, runtime: SimDuration) -> u128 {
    (u128::from(shape.total_gpu_milli()) * u128::from(tasks)).saturating_mul(u128::from(runtime.0))
}

const NOT_RUNNING: u32 = u32::MAX;

/// Most jobs in flight: release events carry a flag in bit 31 of the job id.
const MAX_IN_FLIGHT: usize = 1 << 31;

/// A running job's task bindings. Most jobs have one task: it is kept inline, so starting and
/// finishing it neither allocates nor touches a second cold cache line.
#[derive(Clone, Debug, Default)]
enum Allocs {
    #[default]
    None,
    One(TaskAlloc),
    Many(Box<[TaskAlloc]>),
}

impl Allocs {
    fn from_vec(mut v: Vec<TaskAlloc>) -> Allocs {
        match v.len() {
            0 => Allocs::None,
            1 => Allocs::One(v.pop().expect("one")),
            _ => Allocs::Many(v.into_boxed_slice()),
        }
    }

    fn as_slice(&self) -> &[TaskAlloc] {
        match self {
            Allocs::None => &[],
            Allocs::One(a) => std::slice::from_ref(a),
            Allocs::Many(v) => v,
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Allocs::None)
    }
}

/// Bytes of engine state per job in flight (the slab record; a job's name and a gang's
/// task list beyond one task are on the heap besides). Reported by `fleetsim bench`.
pub const fn job_record_bytes() -> usize {
    std::mem::size_of::<JobRec>()
}

/// Progress reports: jobs submitted so far and the simulated time.
pub type Progress<'a> = &'a mut dyn FnMut(u64, SimTime);

/// Builds and writes a row only when the sink wants rows.
fn emit(sink: &mut dyn JobSink, row: impl FnOnce() -> JobRow) -> std::io::Result<()> {
    if sink.wants_rows() {
        sink.write(&row())
    } else {
        Ok(())
    }
}

/// One simulation: a fleet, a scheduler, a collector.
pub struct Simulation {
    fleet: FleetState,
    sched: Scheduler,
    cfg: EngineConfig,
    metrics: Collector,
    events: EventQueue,
    jobs: Vec<JobRec>,
    free_slots: Vec<u32>,
    next_seq: u64,
    next_run: u32,
    awaiting_replay: BTreeMap<JobId, PendingJob>,
    tenants: Vec<String>,
    tenant_ids: BTreeMap<String, TenantId>,
    queues: Vec<String>,
    queue_ids: BTreeMap<String, QueueId>,
    queue_limits: Vec<(Option<SimDuration>, Option<SimDuration>)>,
    counts: Counts,
    running: u64,
    draining: BTreeSet<NodeId>,
    /// Held-out hot spares ([`EngineConfig::spares`]), and those of them down or drained.
    spares: BTreeSet<NodeId>,
    spares_down: BTreeSet<NodeId>,
    now: SimTime,
    dirty: bool,
    event_count: u64,
    passes: u64,
    tenant_stats: Vec<TenantStats>,
    /// Tenant of each wait the collector keeps, in the same order.
    wait_tenant: Vec<u32>,
    /// Waits (all pending time) of serving replicas that started, ms: reported in the
    /// serving section, not among the jobs' waits.
    replica_waits_ms: Vec<u64>,
    lost_gpu_milli_ms: u128,
    preemption_log: Vec<PreemptionEvent>,
    admissions: Vec<AdmissionEvent>,
    reason_log: Vec<ReasonChange>,
    /// Each pending job's last logged reason, by input position (`record_admissions`).
    reasons_seen: BTreeMap<u64, PendingReason>,
    preemption_plans: Vec<PreemptionPlan>,
    live: Option<Box<LiveRecord>>,
    quota_log: Vec<QuotaSample>,
    next_tick: Option<SimTime>,
    /// The scheduler's own wake-up ([`Scheduler::next_wake`]) pushed as a tick, if any.
    wake_at: Option<SimTime>,
    /// The next round boundary pushed as a tick ([`EngineConfig::round`]), if any.
    round_at: Option<SimTime>,
    backfill: bool,
    /// The decision list, reused from pass to pass.
    decisions: Vec<Decision>,
    /// The goodput account (kept only with [`EngineConfig::reliability`]).
    rel: reliability::ReliabilityStats,
    /// Jobs waiting out the dispatch latency ([`EngineConfig::dispatch_latency`]) in
    /// `awaiting_replay`, to be queued (not force-started) when it ends.
    dispatching: BTreeSet<JobId>,
    /// Queues with ids below this are the configured ones.
    known_queues: u32,
    /// Gangs in [`JobState::Recovering`].
    recovering: BTreeSet<JobId>,
    /// The autoscaler, with [`EngineConfig::autoscaling`].
    auto: Option<autoscale::Autoscaler>,
    /// The inference services, with [`EngineConfig::serving`].
    serve: Option<serving::Serving>,
    /// Waiting for pods, with [`EngineConfig::wait_for_pods_ready`].
    ready: Option<pods_ready::PodsReady>,
    /// With reserved serving cells: the cells training jobs may use (ascending).
    training_cells: Option<Vec<CellId>>,
    /// Round-allocated jobs, with [`EngineConfig::elastic`].
    elastic: Option<elastic::Elastic>,
}

impl Simulation {
    /// A simulation of `fleet` under `policies`.
    pub fn new(fleet: FleetState, policies: SchedulerConfig, cfg: EngineConfig) -> Simulation {
        Simulation::with_extensions(fleet, policies, Extensions::default(), cfg)
    }

    /// A simulation of `fleet` under `policies` plus the stages of `ext` (quota, admission
    /// order, preemption, backfill, pass budget).
    pub fn with_extensions(
        fleet: FleetState,
        policies: SchedulerConfig,
        mut ext: Extensions,
        cfg: EngineConfig,
    ) -> Simulation {
        let queue_cfgs: Vec<QueueConfig> = cfg.queues.iter().map(|q| q.config).collect();
        ext.track_running |= cfg.node_changes.iter().any(|c| {
            matches!(
                c.kind,
                NodeChangeKind::Fail { .. } | NodeChangeKind::Evict { .. }
            )
        });
        let backfill = ext.backfill.is_some();
        let mut fleet = fleet;
        if !policies.placement.kind().reads_task_classes() {
            fleet.stop_task_class_tracking();
        }
        let mut sched = Scheduler::new(policies, queue_cfgs).with(ext);
        sched.record_preemption_contexts(cfg.record_preemptions);
        for &n in &cfg.spares {
            fleet.set_schedulable(n, false);
        }
        let auto = cfg
            .autoscaling
            .clone()
            .map(|a| autoscale::Autoscaler::new(a, &mut fleet));
        let metrics = Collector::new(&fleet, cfg.warmup_ms, cfg.interval_ms);
        let mut sim = Simulation {
            fleet,
            sched,
            metrics,
            events: EventQueue::default(),
            jobs: Vec::new(),
            free_slots: Vec::new(),
            next_seq: 0,
            next_run: 0,
            awaiting_replay: BTreeMap::new(),
            tenants: Vec::new(),
            tenant_ids: BTreeMap::new(),
            queues: Vec::new(),
            queue_ids: BTreeMap::new(),
            queue_limits: Vec::new(),
            counts: Counts::default(),
            running: 0,
            draining: BTreeSet::new(),
            spares: cfg.spares.iter().copied().collect(),
            spares_down: BTreeSet::new(),
            now: SimTime::ZERO,
            dirty: false,
            event_count: 0,
            passes: 0,
            tenant_stats: Vec::new(),
            wait_tenant: Vec::new(),
            replica_waits_ms: Vec::new(),
            lost_gpu_milli_ms: 0,
            preemption_log: Vec::new(),
            admissions: Vec::new(),
            reason_log: Vec::new(),
            reasons_seen: BTreeMap::new(),
            preemption_plans: Vec::new(),
            live: cfg.record_live.then(Box::default),
            quota_log: Vec::new(),
            next_tick: None,
            wake_at: None,
            round_at: None,
            backfill,
            decisions: Vec::new(),
            rel: reliability::ReliabilityStats {
                spares: !cfg.spares.is_empty(),
                keep_survivors: cfg.gang_recovery == fleetsim_policies::GangRecovery::KeepSurvivors,
                ..reliability::ReliabilityStats::default()
            },
            dispatching: BTreeSet::new(),
            known_queues: 0,
            recovering: BTreeSet::new(),
            auto,
            serve: cfg.serving.clone().map(serving::Serving::new),
            ready: cfg
                .wait_for_pods_ready
                .map(|c| pods_ready::PodsReady::new(c, cfg.record_admissions)),
            training_cells: None,
            elastic: cfg.elastic.clone().map(elastic::Elastic::new),
            cfg,
        };
        if let Some(sv) = sim
            .serve
            .as_ref()
            .filter(|s| !s.reserved_cells().is_empty())
        {
            let cells = sim.fleet.cells().iter().enumerate();
            sim.training_cells = Some(
                cells
                    .filter(|(_, c)| !sv.reserved_cells().contains(&c.name))
                    .map(|(i, _)| CellId(i as u16))
                    .collect(),
            );
        }
        for q in sim.cfg.queues.clone() {
            let id = sim.queue_id(&q.name);
            sim.queue_limits[sim.queues.len() - 1] = (q.default_time_limit, q.max_time_limit);
            for lq in q.local_queues {
                sim.queue_ids.entry(lq).or_insert(id);
            }
        }
        sim.known_queues = sim.queues.len() as u32;
        if sim.auto.is_some() {
            // Nodes the autoscaler provisions and removes change the fleet without events
            // in the live stream, so a service replaying it would diverge.
            sim.live_unsupported("autoscaling (nodes provisioned and removed)");
        }
        sim
    }

    /// The scheduler's placement context, to set up before [`Simulation::run`] (e.g. a
    /// decision recorder, [`fleetsim_policies::PlaceCtx::set_recorder`]).
    pub fn placement_ctx_mut(&mut self) -> &mut fleetsim_policies::PlaceCtx {
        self.sched.placement_ctx_mut()
    }

    /// The fleet state (after [`Simulation::run`]: at the end of the run).
    pub fn fleet(&self) -> &FleetState {
        &self.fleet
    }

    fn queue_id(&mut self, name: &str) -> QueueId {
        if let Some(&q) = self.queue_ids.get(name) {
            return q;
        }
        let q = QueueId(self.queues.len() as u32);
        self.queues.push(name.to_string());
        self.queue_ids.insert(name.to_string(), q);
        self.queue_limits.push((None, None));
        q
    }

    fn tenant_id(&mut self, name: &str) -> TenantId {
        if let Some(&t) = self.tenant_ids.get(name) {
            return t;
        }
        let t = TenantId(self.tenants.len() as u32);
        self.tenants.push(name.to_string());
        self.tenant_ids.insert(name.to_string(), t);
        self.tenant_stats.push(TenantStats {
            name: name.to_string(),
            ..TenantStats::default()
        });
        t
    }

    /// The run job `id` holds resources in now, as if it ended now.
    fn run_segment(&self, id: JobId, ended: RunEnd) -> RunSegment {
        let r = &self.jobs[id.index()];
        let x = r.extra.as_deref();
        RunSegment {
            start: x.and_then(|x| x.run_start).or(r.start).unwrap_or(self.now),
            end: self.now,
            gpus: r
                .allocs
                .as_slice()
                .iter()
                .map(|a| (a.node, a.gpu_mask))
                .collect(),
            ended,
        }
    }

    /// Job `id`'s runs for its row: the stopped ones, then the one it holds resources in.
    fn runs_of(&self, id: JobId, state: FinalState) -> Vec<RunSegment> {
        if !self.cfg.record_runs {
            return Vec::new();
        }
        let r = &self.jobs[id.index()];
        let mut runs = r.extra.as_deref().map_or_else(Vec::new, |x| x.runs.clone());
        if !r.allocs.is_empty() {
            let ended = match state {
                FinalState::Completed | FinalState::WalltimeReached => RunEnd::Finished,
                _ => RunEnd::AtEnd,
            };
            runs.push(self.run_segment(id, ended));
        }
        runs
    }

    fn row(
        &self,
        id: JobId,
        state: FinalState,
        finish: Option<SimTime>,
        reason: Option<String>,
    ) -> JobRow {
        let r = &self.jobs[id.index()];
        JobRow {
            runs: self.runs_of(id, state),
            id: r.seq,
            name: r.name.to_string(),
            tenant: self.tenants[r.tenant.index()].clone(),
            queue: self.queues[r.queue.index()].clone(),
            qos: r.qos.as_ref().map(|q| q.to_string()),
            priority: r.priority,
            submit: r.submit,
            start: r.start,
            finish,
            run_ms: match (r.start, finish) {
                (Some(s), Some(f)) => Some((f - s).0),
                _ => None,
            },
            runtime_ms: r.runtime.0,
            service_ms: r.start.map(|s| {
                let x = r.extra.as_deref();
                let current = if r.state == JobState::Running {
                    let from = x.and_then(|x| x.run_start).unwrap_or(s);
                    finish.unwrap_or(self.now).saturating_since(from).0
                } else {
                    0
                };
                x.map_or(0, |x| x.served_ms) + current
            }),
            pending_ms: Some(self.pending_total(id)),
            requested_time: r.time_limit,
            tasks: r.tasks,
            shape: r.shape,
            cell: r.cell.map(|c| self.fleet.cells()[c.index()].name.clone()),
            nodes: r
                .allocs
                .as_slice()
                .iter()
                .map(|a| self.fleet.node_name(a.node).to_string())
                .collect(),
            last_start: r.extra.as_ref().and_then(|x| x.run_start).or(r.start),
            preemptions: r.extra.as_ref().map_or(0, |x| x.preemptions),
            failures: r.extra.as_ref().map_or(0, |x| x.failures),
            lost_gpu_milli_ms: r.extra.as_ref().map_or(0, |x| x.lost_gpu_milli_ms),
            allocated_gpu_milli_ms: self.job_account(id, finish).0,
            startup_gpu_milli_ms: self.job_account(id, finish).1,
            held_on_failed_gpu_milli_ms: r
                .extra
                .as_ref()
                .map_or(0, |x| x.held_on_failed_gpu_milli_ms),
            held_by_incomplete_gang_gpu_milli_ms: r
                .extra
                .as_ref()
                .map_or(0, |x| x.held_incomplete_gpu_milli_ms),
            pending_reason: r.wait.as_deref().and_then(longest_reason),
            first_reservation: r.extra.as_ref().and_then(|x| x.first_reservation),
            state,
            reason,
            measured: r.measured && r.kind != RecordedKind::PreExisting,
            serving_replica: self.is_replica(id),
        }
    }

    /// Time job `id` has been pending in all, ms: submit → first start (→ now if it never
    /// started), plus every wait after a preemption or failure (the open one up to now).
    fn pending_total(&self, id: JobId) -> u64 {
        let r = &self.jobs[id.index()];
        match r.start {
            None => self.now.saturating_since(r.submit).0,
            Some(s) => {
                let x = r.extra.as_deref();
                let open = x
                    .and_then(|x| x.pending_since)
                    .map_or(0, |p| self.now.saturating_since(p).0);
                (s - r.submit).0 + x.map_or(0, |x| x.requeued_pending_ms) + open
            }
        }
    }

    /// True when job `id` is a serving replica ([`serving`]).
    fn is_replica(&self, id: JobId) -> bool {
        self.serve.as_ref().is_some_and(|s| s.is_replica(id))
    }

    /// Job `id`, which started at least once, reached its final state (or the end of the
    /// run): its whole pending time joins the waits (a replica's, the serving section's).
    fn settle_wait(&mut self, id: JobId) {
        let r = &self.jobs[id.index()];
        if r.start.is_none() {
            return;
        }
        let pending = self.pending_total(id);
        if self.is_replica(id) {
            self.replica_waits_ms.push(pending);
            return;
        }
        let pre = r.kind == RecordedKind::PreExisting || !r.measured;
        let (submit, tenant) = (r.submit, r.tenant);
        if self.metrics.on_settled(submit, pending, pre) {
            self.wait_tenant.push(tenant.0);
        }
    }

    fn reject(
        &mut self,
        id: JobId,
        reason: RejectReason,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        // A rejected job is not demand: the fleet could never hold it.
        let rec = &self.jobs[id.index()];
        let d = demand_of(&rec.shape, rec.tasks, rec.runtime);
        let ts = &mut self.tenant_stats[rec.tenant.index()];
        ts.demand_gpu_milli_ms = ts.demand_gpu_milli_ms.saturating_sub(d);
        self.counts.rejected += 1;
        *self
            .counts
            .rejected_by_reason
            .entry(reason.as_str().to_string())
            .or_insert(0) += 1;
        emit(sink, || {
            self.row(
                id,
                FinalState::Rejected,
                None,
                Some(reason.as_str().to_string()),
            )
        })?;
        self.free_slot(id);
        Ok(())
    }

    /// Prefetches the job record of the next queued completion. The queue holds ~10^5
    /// completions whose records are far apart in memory; fetching the next one's record
    /// an event early lets its cache miss overlap with the current event's work instead of
    /// stalling the next one. No effect on the simulation.
    #[inline]
    fn prefetch_next_finish(&mut self) {
        if let Some(EventKind::Finish(id, _)) = self.events.peek_event() {
            if let Some(rec) = self.jobs.get(id.index()) {
                prefetch::prefetch(rec);
            }
        }
    }

    /// Marks a job's record dead and its slot reusable.
    fn free_slot(&mut self, id: JobId) {
        let rec = &mut self.jobs[id.index()];
        rec.live = false;
        rec.run = NOT_RUNNING;
        rec.allocs = Allocs::None;
        rec.name = compact_str::CompactString::const_new("");
        rec.qos = None;
        rec.wait = None;
        rec.extra = None;
        self.free_slots.push(id.0);
    }

    /// Runs the simulation to the end of the workload (or the horizon), streaming job rows to
    /// `sink`.
    ///
    /// # Errors
    /// [`EngineError`] when the trace cannot be read, a job is invalid, submit times go
    /// backwards, a row cannot be written, or an internal check fails. Rows already written
    /// stay valid.
    pub fn run(
        &mut self,
        stream: &mut dyn JobStream,
        sink: &mut dyn JobSink,
        progress: Progress<'_>,
    ) -> Result<RunResult, EngineError> {
        for (i, e) in self.cfg.node_events.iter().enumerate() {
            self.events.push(e.at, EventKind::Node(i as u32));
        }
        for (i, c) in self.cfg.node_changes.iter().enumerate() {
            self.events.push(c.at, EventKind::NodeChange(i as u32));
        }
        let mut next = stream.next().transpose()?;
        let mut last_submit = SimTime::ZERO;
        let mut stopped_at_horizon = None;
        loop {
            // The workload has drained: no arrival left and no job pending, running or in a
            // grace period. What remains in the heap (node events, periodic passes) cannot
            // change any job or the window, which ends at the last completion; stopping here
            // keeps a far-future node event from stretching the run.
            let t_replica = self.serve.as_ref().and_then(|s| s.next_arrival());
            if next.is_none() && t_replica.is_none() && self.jobs.len() == self.free_slots.len() {
                break;
            }
            let t_arrival = match (next.as_ref().map(|j| j.submit), t_replica) {
                (Some(a), Some(r)) => Some(a.min(r)),
                (a, r) => a.or(r),
            };
            let t_event = self.events.peek().map(|k| k.time);
            let t = match (t_arrival, t_event) {
                (None, None) => break,
                (Some(a), None) => a,
                (None, Some(e)) => e,
                (Some(a), Some(e)) => a.min(e),
            };
            if let Some(h) = self.cfg.horizon {
                if t > h {
                    stopped_at_horizon = Some(h);
                    self.sample_fragmentation(|b| b < h);
                    if let Some(a) = &mut self.auto {
                        a.advance(h, &self.fleet);
                    }
                    if let Some(s) = &mut self.serve {
                        s.advance(h);
                    }
                    self.metrics.advance(h);
                    self.now = h;
                    break;
                }
            }
            if let Some(a) = self.metrics.window_start() {
                let intervals = t.0.saturating_sub(a.0) / self.cfg.interval_ms.max(1);
                let max = series_interval_cap(self.metrics.snapshot_bytes());
                if intervals > max {
                    return Err(EngineError::TooManyIntervals {
                        time: t,
                        intervals,
                        interval_ms: self.cfg.interval_ms,
                        max,
                    });
                }
            }
            // Interval starts before `t` see the state left by the previous instant.
            self.sample_fragmentation(|b| b < t);
            if let Some(a) = &mut self.auto {
                a.advance(t, &self.fleet);
            }
            if let Some(s) = &mut self.serve {
                s.advance(t);
            }
            self.metrics.advance(t);
            self.now = t;
            // (1) completions, (2) node events: everything in the heap ranked before arrivals.
            while let Some(k) = self.events.peek() {
                if k.time != t || k.class >= events::EventClass::Arrival {
                    break;
                }
                let (_, kind) = self.events.pop().expect("peeked");
                self.event_count += 1;
                self.prefetch_next_finish();
                match kind {
                    EventKind::Finish(id, run) => self.finish(id, run, sink)?,
                    EventKind::Release(id, run) => self.release(id, run)?,
                    EventKind::Node(i) => self.node_event(i as usize),
                    EventKind::NodeChange(i) => self.node_change(i as usize)?,
                    EventKind::Provisioned(r) => {
                        if let Some(a) = &mut self.auto {
                            a.provisioned(r, &mut self.fleet);
                            self.metrics.refresh_capacity(&self.fleet);
                            self.dirty = true;
                        }
                    }
                    EventKind::IdleCheck(n) => {
                        if let Some(a) = &mut self.auto {
                            if a.idle_check(n, t, &mut self.fleet) {
                                self.metrics.refresh_capacity(&self.fleet);
                            }
                        }
                    }
                    EventKind::ReplicaStop(n) => self.replica_stop(n, sink)?,
                    EventKind::PodsReadyDeadline(i) => self.pods_ready_deadline(i, sink)?,
                    EventKind::PodsReadyRequeue(r) => self.pods_ready_requeue(r)?,
                    EventKind::ForcedStart(_) | EventKind::Tick | EventKind::ElasticRound => {}
                }
            }
            // (3) arrivals: serving replicas first (service order, replica index), then the
            // trace's in trace order.
            while let Some((spec, service, stop, n)) =
                self.serve.as_mut().and_then(|s| s.take_due(t))
            {
                let seq = self.next_seq;
                let id = JobId(
                    self.free_slots
                        .last()
                        .copied()
                        .unwrap_or(self.jobs.len() as u32),
                );
                self.event_count += 1;
                self.arrive(spec, sink)?;
                let rec = self.jobs.get(id.index());
                if rec.is_some_and(|r| r.live && r.seq == seq) {
                    if let Some(s) = &mut self.serve {
                        s.register(id, service, stop, n);
                        self.events.push(stop, EventKind::ReplicaStop(n));
                    }
                }
            }
            // The trace's arrivals in trace order.
            while next.as_ref().is_some_and(|j| j.submit == t) {
                let spec = next.take().expect("checked");
                if spec.submit < last_submit {
                    return Err(EngineError::Unsorted {
                        name: spec.name.into(),
                        seq: self.next_seq,
                        submit: spec.submit,
                        previous: last_submit,
                    });
                }
                last_submit = spec.submit;
                self.event_count += 1;
                self.arrive(spec, sink)?;
                if self.counts.submitted.is_multiple_of(4096) {
                    progress(self.counts.submitted, t);
                }
                next = stream.next().transpose()?;
                if let Some(n) = &next {
                    if n.submit < t {
                        return Err(EngineError::Unsorted {
                            name: n.name.to_string(),
                            seq: self.next_seq,
                            submit: n.submit,
                            previous: t,
                        });
                    }
                }
            }
            // (4) recorded starts. A zero-length job started here queues its completion at
            // `t`, ranked before this class: it is applied at the next turn of the loop, at `t`.
            while let Some(k) = self.events.peek() {
                if k.time != t || k.class != events::EventClass::ForcedStart {
                    break;
                }
                let (_, kind) = self.events.pop().expect("peeked");
                self.event_count += 1;
                if let EventKind::ForcedStart(id) = kind {
                    self.forced_start(id, sink)?;
                }
            }
            // Periodic passes due now.
            while let Some(k) = self.events.peek() {
                if k.time != t || k.class != events::EventClass::Tick {
                    break;
                }
                let (_, kind) = self.events.pop().expect("peeked");
                if kind == EventKind::ElasticRound {
                    self.event_count += 1;
                    self.elastic_round(t)?;
                    continue;
                }
                if self.next_tick == Some(t) {
                    self.next_tick = None;
                    self.dirty = true;
                }
                if self.wake_at == Some(t) {
                    self.wake_at = None;
                    self.dirty = true;
                }
                if self.round_at == Some(t) {
                    self.round_at = None;
                }
            }
            // Round-based cadence: between boundaries a change waits (still dirty) for the
            // tick at the next boundary.
            if self.dirty && !self.on_round(t) {
                let at = self.round_up(t);
                if self.round_at != Some(at) {
                    self.round_at = Some(at);
                    self.events.push(at, EventKind::Tick);
                }
                self.metrics.set_pending(self.sched.pending_len() as u64);
            }
            // (5) scheduling passes until one changes nothing.
            if self.dirty && self.on_round(t) {
                let mut here = 0u32;
                while self.dirty {
                    self.dirty = false;
                    self.passes += 1;
                    here += 1;
                    // Each extra pass follows a preemption that stopped a job; more passes than
                    // twice the jobs in flight (plus slack) can only be a loop.
                    if here as usize > 64 + 2 * self.jobs.len() {
                        return Err(EngineError::Invariant {
                            time: t,
                            message: format!(
                                "{here} passes at one instant without settling: preemptions are looping"
                            ),
                        });
                    }
                    if !self.recovering.is_empty() {
                        self.recover_gangs(true);
                    }
                    let mut decisions = std::mem::take(&mut self.decisions);
                    self.sched.schedule_into(&mut self.fleet, t, &mut decisions);
                    if let Some(l) = self.live.as_mut() {
                        l.events.push(live::Event::Pass { t: t.0 });
                        l.decisions.extend(
                            decisions
                                .iter()
                                .map(|d| live::Decision::from_policy(d, t.0)),
                        );
                    }
                    if self.cfg.record_preemptions {
                        // Before the decisions are applied: their job ids are still live.
                        for c in self.sched.take_preemption_contexts() {
                            let seq = |id: JobId| self.jobs[id.index()].seq;
                            self.preemption_plans.push(PreemptionPlan {
                                at: t,
                                preemptor: seq(c.preemptor),
                                victims: c.victims.iter().map(|&v| seq(v)).collect(),
                                free: c.free,
                                queue_usage: c.queue_usage,
                            });
                        }
                    }
                    for d in decisions.drain(..) {
                        self.apply(d)?;
                    }
                    self.decisions = decisions;
                    if !self.recovering.is_empty() {
                        self.recover_gangs(false);
                    }
                    if self.backfill {
                        for r in self.sched.reservations() {
                            let rec = &mut self.jobs[r.job.index()];
                            rec.extra
                                .get_or_insert_with(Box::default)
                                .first_reservation
                                .get_or_insert(r.start);
                        }
                    }
                }
                if let Some(a) = &mut self.auto {
                    let (checks, joins) = a.after_passes(t, &self.fleet, &self.sched);
                    for (at, n) in checks {
                        self.events.push(at, EventKind::IdleCheck(n));
                    }
                    for (at, r) in joins {
                        self.events.push(at, EventKind::Provisioned(r));
                    }
                    if let Some(p) = &mut self.ready {
                        for &id in a.waiting_jobs() {
                            if let Some((at, i)) = p.admit_waiting(id, self.jobs[id.index()].seq, t)
                            {
                                self.events.push(at, EventKind::PodsReadyDeadline(i));
                            }
                        }
                    }
                }
                self.metrics.set_pending(self.sched.pending_len() as u64);
                self.metrics.clear_pending_reasons();
                let m = &mut self.metrics;
                self.sched
                    .count_pending_reasons(|r, n| m.add_pending_reason(r.as_str(), n));
                // A pass the scheduler asked for (the Tiresias model's demotion wake-up).
                let wake = self
                    .sched
                    .next_wake()
                    .filter(|&w| w > t)
                    .map(|w| self.round_up(w));
                if wake != self.wake_at {
                    // A tick left from an earlier wake-up finds `wake_at` changed: no pass.
                    self.wake_at = wake;
                    if let Some(w) = wake {
                        self.events.push(w, EventKind::Tick);
                    }
                }
                if let Some(iv) = self.cfg.retry_interval {
                    // Another pass after the interval, while something is pending and
                    // something holds resources (else nothing could change before the next
                    // event, which brings its own pass).
                    if self.sched.pending_len() > 0 && self.running > 0 && self.next_tick.is_none()
                    {
                        let at = self.round_up(t + SimDuration(iv.0.max(1)));
                        self.next_tick = Some(at);
                        self.events.push(at, EventKind::Tick);
                    }
                }
            }
            // An interval starting at `t` sees the state after all of `t`'s events.
            self.sample_fragmentation(|b| b <= t);
            if self.cfg.record_admissions {
                self.log_reasons(t);
            }
            if self.cfg.audit_every_instant {
                self.audit()?;
                if self.cfg.record_preemptions {
                    self.log_quota(t);
                }
            }
        }
        // Stopped at the horizon: the rest of the stream is still read (not simulated), so
        // that rows skipped by the readers and transforms are counted over the whole input,
        // and jobs that would arrive after the horizon are counted too (skip reason
        // `after_horizon`), not left uncounted.
        let mut after_horizon = 0u64;
        if stopped_at_horizon.is_some() {
            while let Some(spec) = next.take() {
                if spec.submit < last_submit {
                    return Err(EngineError::Unsorted {
                        name: spec.name.into(),
                        seq: self.next_seq + after_horizon,
                        submit: spec.submit,
                        previous: last_submit,
                    });
                }
                last_submit = spec.submit;
                after_horizon += 1;
                next = stream.next().transpose()?;
            }
        }
        progress(self.counts.submitted, self.now);
        let mut skipped_rows = stream.skipped();
        if after_horizon > 0 {
            *skipped_rows.entry(AFTER_HORIZON.to_string()).or_insert(0) += after_horizon;
        }
        let trace_start = stream.trace_start();
        self.close(stopped_at_horizon, skipped_rows, trace_start, sink)
    }

    /// Whether passes may run at `t`: always without a round-based cadence, else only at
    /// multiples of the round ([`EngineConfig::round`]).
    fn on_round(&self, t: SimTime) -> bool {
        self.cfg
            .round
            .is_none_or(|r| t.0.is_multiple_of(r.0.max(1)))
    }

    /// The first round boundary at or after `t` (`t` itself without a cadence).
    fn round_up(&self, t: SimTime) -> SimTime {
        match self.cfg.round {
            None => t,
            Some(r) => {
                let r = r.0.max(1);
                SimTime(t.0.div_ceil(r).saturating_mul(r))
            }
        }
    }

    fn arrive(
        &mut self,
        spec: crate::workload::JobSpec,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        let seq = self.next_seq;
        spec.shape
            .validate()
            .map_err(|message| EngineError::BadJob {
                name: spec.name.to_string(),
                seq,
                message,
            })?;
        if spec.elastic.is_some() != self.cfg.elastic.is_some() {
            return Err(EngineError::BadJob {
                name: spec.name.to_string(),
                seq,
                message: if self.cfg.elastic.is_some() {
                    "a rigid job in a run with `[elastic]` (round-allocated jobs only: the two do not share a run)".into()
                } else {
                    "a round-allocated job (a `pollux` workload row) needs the scenario's `[elastic]` table".into()
                },
            });
        }
        if self.free_slots.is_empty() && self.jobs.len() >= MAX_IN_FLIGHT {
            return Err(EngineError::BadJob {
                name: spec.name.to_string(),
                seq,
                message: "more than 2^31 jobs in flight".into(),
            });
        }
        self.next_seq += 1;
        let t = spec.submit;
        self.metrics.on_submit(t);
        self.counts.submitted += 1;
        let tenant = self.tenant_id(&spec.tenant);
        let named_queue = spec.queue.is_some() || self.cfg.queue_mapping == QueueMapping::PerTenant;
        let queue = self.queue_id(queue_name(&spec, self.cfg.queue_mapping));
        let (default_limit, max_limit) = self.queue_limits[queue.index()];
        let mut limit = spec.time_limit.or(default_limit);
        if let (Some(l), Some(m)) = (limit, max_limit) {
            limit = Some(l.min(m));
        }
        let walltime_cut = limit.is_some_and(|l| spec.runtime > l);
        let runtime = match limit {
            Some(l) => spec.runtime.min(l),
            None => spec.runtime,
        };
        let measured = self.metrics.measured(t);
        let rec = JobRec {
            seq,
            live: true,
            name: spec.name,
            tenant,
            queue,
            priority: spec.priority,
            qos: spec.qos.clone().map(String::into_boxed_str),
            submit: t,
            runtime,
            walltime_cut,
            time_limit: limit,
            tasks: spec.tasks,
            shape: spec.shape,
            members: spec.tasks,
            split: spec.split,
            start: None,
            cell: None,
            allocs: Allocs::None,
            kind: spec.recorded,
            run: NOT_RUNNING,
            measured,
            state: JobState::Pending,
            wait: None,
            extra: None,
        };
        {
            let ts = &mut self.tenant_stats[tenant.index()];
            ts.jobs += 1;
            if spec.recorded != RecordedKind::NeverRan {
                ts.demand_gpu_milli_ms += demand_of(&spec.shape, spec.tasks, runtime);
            }
        }
        let id = match self.free_slots.pop() {
            Some(slot) => {
                self.jobs[slot as usize] = rec;
                JobId(slot)
            }
            None => {
                self.jobs.push(rec);
                JobId((self.jobs.len() - 1) as u32)
            }
        };
        if spec.recorded == RecordedKind::NeverRan {
            self.counts.cancelled += 1;
            emit(sink, || {
                self.row(id, FinalState::Cancelled, None, Some("never_ran".into()))
            })?;
            self.free_slot(id);
            return Ok(());
        }
        if let Some(e) = spec.elastic.as_deref() {
            return self.elastic_arrive(id, e, sink);
        }
        if self.cfg.reject_unknown_queues && named_queue && queue.0 >= self.known_queues {
            return self.reject(id, RejectReason::UnknownQueue, sink);
        }
        if limit == Some(SimDuration::ZERO) {
            return self.reject(id, RejectReason::InvalidTimeLimit, sink);
        }
        let mut models = ModelSet::ANY;
        if spec.shape.num_gpu > 0 && !spec.gpu_models.is_empty() {
            for name in &spec.gpu_models {
                if let Some(i) = self.fleet.models().iter().position(|m| m == name) {
                    models.insert(fleetsim_policies::ModelId(i as u16));
                }
            }
            if models.is_any() {
                return self.reject(id, RejectReason::NoAllowedModel, sink);
            }
        }
        let mut cells: Vec<CellId> = spec
            .cells
            .iter()
            .filter_map(|c| {
                self.fleet
                    .cells()
                    .iter()
                    .position(|x| &x.name == c)
                    .map(|i| CellId(i as u16))
            })
            .collect();
        cells.sort_unstable();
        cells.dedup();
        if !spec.cells.is_empty() && cells.is_empty() {
            return self.reject(id, RejectReason::NoAllowedCell, sink);
        }
        // Reserved serving cells: training (every tenant but the services') stays out.
        if let (Some(allowed), Some(sv)) = (&self.training_cells, &self.serve) {
            if !sv
                .tenants
                .iter()
                .any(|t| t.as_str() == spec.tenant.as_str())
            {
                if spec.cells.is_empty() {
                    cells.clone_from(allowed);
                } else {
                    cells.retain(|c| allowed.binary_search(c).is_ok());
                    if cells.is_empty() {
                        return self.reject(id, RejectReason::NoAllowedCell, sink);
                    }
                }
            }
        }
        if let (true, true, Some(first)) =
            (self.cfg.reliability, cells.len() > 1, spec.cells.first())
        {
            let home = self
                .fleet
                .cells()
                .iter()
                .position(|x| &x.name == first)
                .map(|i| CellId(i as u16));
            if home.is_some() {
                self.jobs[id.index()]
                    .extra
                    .get_or_insert_with(Box::default)
                    .home_cell = home;
            }
        }
        let job = PendingJob {
            id,
            tenant,
            queue,
            priority: spec.priority,
            submit: t,
            seq,
            shape: spec.shape,
            tasks: spec.tasks,
            models,
            cells,
            runtime_estimate: if self.cfg.estimate_oracle {
                Some(runtime)
            } else {
                limit
            },
            checkpoint_interval: self.cfg.checkpoint_interval,
            topology: spec.topology,
            split: spec.split,
            ..PendingJob::default()
        };
        let forced_at = match (spec.recorded, self.cfg.mode, spec.recorded_start) {
            (RecordedKind::PreExisting, _, _) => Some(t),
            (_, Mode::Replay, Some(s)) => Some(s.max(t)),
            _ => None,
        };
        if spec.recorded == RecordedKind::PreExisting {
            self.counts.pre_existing += 1;
        }
        let forced_at = match forced_at {
            None if self.cfg.dispatch_latency > SimDuration::ZERO => {
                self.dispatching.insert(id);
                Some(t + self.cfg.dispatch_latency)
            }
            f => f,
        };
        match forced_at {
            Some(at) => {
                if let Err(reason) = self.sched.check_resolvable(&self.fleet, &job) {
                    self.dispatching.remove(&id);
                    self.record_submit(&job, t, Some(&reason), false);
                    return self.reject(id, reason, sink);
                }
                self.awaiting_replay.insert(id, job);
                self.jobs[id.index()].state = JobState::Awaiting;
                self.events.push(at, EventKind::ForcedStart(id));
            }
            None => {
                self.record_submit(&job, t, None, false);
                match self.sched.submit_at(&mut self.fleet, job, t) {
                    Ok(()) => self.dirty = true,
                    Err(reason) => {
                        if let Some(l) = self.live.as_mut() {
                            l.decisions.push(live::Decision::Reject {
                                t: t.0,
                                job: id.0,
                                reason: reason.clone(),
                            });
                        }
                        return self.reject(id, reason, sink);
                    }
                }
            }
        }
        Ok(())
    }

    fn forced_start(&mut self, id: JobId, sink: &mut dyn JobSink) -> Result<(), EngineError> {
        let Some(job) = self.awaiting_replay.remove(&id) else {
            return Err(EngineError::Invariant {
                time: self.now,
                message: format!("recorded start of job {id} that is not awaiting one"),
            });
        };
        if self.dispatching.remove(&id) {
            // Dispatched: it joins the queues now, like a submission.
            self.record_submit(&job, self.now, None, false);
            self.enqueue(job)?;
            // A replica whose stop passed during its dispatch latency leaves at once.
            if let Some(n) = self.serve.as_ref().and_then(|s| {
                s.stop_of(id)
                    .filter(|&stop| stop <= self.now)
                    .and(s.arrival_of(id))
            }) {
                self.replica_stop(n, sink)?;
            }
            return Ok(());
        }
        self.record_submit(&job, self.now, None, true);
        match self.sched.place_now(&mut self.fleet, &job) {
            Some(d) => {
                if let Some(l) = self.live.as_mut() {
                    l.decisions
                        .push(live::Decision::from_policy(&d, self.now.0));
                }
                self.apply(d)
            }
            None => {
                self.counts.replay_conflicts += 1;
                // It cannot start as recorded: queue it like any other job.
                self.enqueue(job)
            }
        }
    }

    /// Puts a job that was resolvable at its submission into the queues now (pending):
    /// a dispatched job arriving, a recorded start that cannot be realized, a requeue after
    /// a pods-ready backoff.
    ///
    /// # Errors
    /// [`EngineError::Invariant`] when the scheduler finds it unresolvable after all.
    fn enqueue(&mut self, job: PendingJob) -> Result<(), EngineError> {
        let id = job.id;
        self.jobs[id.index()].state = JobState::Pending;
        self.sched
            .submit_at(&mut self.fleet, job, self.now)
            .map_err(|r| EngineError::Invariant {
                time: self.now,
                message: format!("job {id} resolvable at submit became unresolvable: {r}"),
            })?;
        self.dirty = true;
        Ok(())
    }

    /// Records a submission (`started`: a start decided outside the queues) for
    /// [`EngineConfig::record_live`], with the rejection it gets, if any.
    fn record_submit(
        &mut self,
        job: &PendingJob,
        t: SimTime,
        rejected: Option<&RejectReason>,
        started: bool,
    ) {
        let Some(l) = self.live.as_mut() else { return };
        let spec = live::JobSpec::from_pending(job);
        l.events.push(if started {
            live::Event::JobStarted { t: t.0, job: spec }
        } else {
            live::Event::JobSubmitted { t: t.0, job: spec }
        });
        if let Some(reason) = rejected {
            l.decisions.push(live::Decision::Reject {
                t: t.0,
                job: job.id.0,
                reason: reason.clone(),
            });
        }
    }

    /// Records `ev` for [`EngineConfig::record_live`].
    fn record_live(&mut self, ev: impl FnOnce(u64) -> live::Event) {
        let t = self.now.0;
        if let Some(l) = self.live.as_mut() {
            l.events.push(ev(t));
        }
    }

    /// Marks the live record incomplete ([`LiveRecord::unsupported`]).
    fn live_unsupported(&mut self, what: &str) {
        if let Some(l) = self.live.as_mut() {
            l.unsupported.get_or_insert_with(|| what.to_string());
        }
    }

    fn invariant(&self, message: String) -> EngineError {
        EngineError::Invariant {
            time: self.now,
            message,
        }
    }

    /// Logs the pending jobs whose reason changed at instant `t` (`record_admissions`).
    fn log_reasons(&mut self, t: SimTime) {
        let mut now: BTreeMap<u64, PendingReason> = BTreeMap::new();
        for (job, r) in self.sched.pending_with_reasons() {
            now.insert(job.seq, r);
        }
        for (&seq, &reason) in &now {
            if self.reasons_seen.get(&seq) != Some(&reason) {
                self.reason_log.push(ReasonChange { at: t, seq, reason });
            }
        }
        self.reasons_seen = now;
    }

    fn apply(&mut self, d: Decision) -> Result<(), EngineError> {
        let now = self.now;
        match d {
            Decision::Start { job, cell, tasks } => {
                let rec = &mut self.jobs[job.index()];
                let startable = rec.live
                    && rec.allocs.is_empty()
                    && matches!(rec.state, JobState::Pending | JobState::Awaiting);
                if !startable {
                    return Err(self.invariant(format!("job {job} started twice")));
                }
                // The whole gang: its tasks, or (tasks that take the node's shape) an equal
                // number of members per task adding up to its accelerators.
                let placed: u64 = tasks.iter().map(TaskAlloc::total_gpu_milli).sum();
                let whole = tasks.len() == rec.tasks as usize
                    || (rec.split
                        && tasks.len() % rec.tasks as usize == 0
                        && placed == rec.shape.total_gpu_milli() * u64::from(rec.tasks));
                if !whole {
                    let want = rec.tasks;
                    return Err(self.invariant(format!(
                        "job {job}: {} of {want} gang tasks placed",
                        tasks.len()
                    )));
                }
                rec.members = tasks.len() as u32;
                if let Some(p) = &mut self.ready {
                    p.on_start(job);
                }
                let rec = &mut self.jobs[job.index()];
                let first = rec.start.is_none();
                let mut done = SimDuration::ZERO;
                if first {
                    rec.start = Some(now);
                } else if let Some(x) = rec.extra.as_mut() {
                    x.run_start = Some(now);
                    done = x.done;
                    if let Some(p) = x.pending_since.take() {
                        x.requeued_pending_ms += now.saturating_since(p).0;
                    }
                }
                rec.cell = Some(cell);
                rec.allocs = Allocs::from_vec(tasks);
                rec.state = JobState::Running;
                let run = self.next_run;
                self.next_run = (self.next_run + 1) % NOT_RUNNING;
                rec.run = run;
                let mut remaining = SimDuration(rec.runtime.0.saturating_sub(done.0));
                if self.cfg.reliability {
                    remaining = self.start_account(job, remaining, first);
                }
                if let Some(s) = &mut self.serve {
                    // A replica runs until the autoscaler removes it.
                    if let Some(stop) = s.stop_of(job) {
                        remaining = stop.saturating_since(now);
                        let rec = &self.jobs[job.index()];
                        s.on_start(job, rec.shape.num_gpu as u64 * rec.tasks as u64);
                    }
                }
                let rec = &self.jobs[job.index()];
                let (submit, pre, tenant, gpu) = (
                    rec.submit,
                    rec.kind == RecordedKind::PreExisting || !rec.measured || self.is_replica(job),
                    rec.tenant,
                    rec.shape.total_gpu_milli() * rec.tasks as u64,
                );
                if let Some(w) = self.sched.take_wait_profile(job) {
                    let rec = &mut self.jobs[job.index()];
                    match &mut rec.wait {
                        Some(prev) => {
                            for (a, b) in prev.iter_mut().zip(w.iter()) {
                                *a += b;
                            }
                        }
                        slot => *slot = Some(w),
                    }
                }
                self.metrics.on_allocs(
                    &self.fleet,
                    self.jobs[job.index()].allocs.as_slice(),
                    true,
                    false,
                );
                self.metrics.on_tenant_alloc(tenant, gpu, true);
                if first {
                    self.metrics.on_start(submit, now, pre);
                    self.counts.started += 1;
                    self.tenant_stats[tenant.index()].started += 1;
                }
                self.running += 1;
                self.events
                    .push(now + remaining, EventKind::Finish(job, run));
                if self.cfg.record_admissions {
                    self.admissions.push(AdmissionEvent {
                        at: now,
                        seq: self.jobs[job.index()].seq,
                        flavor: self.sched.flavor_of(job).map(str::to_string),
                    });
                }
            }
            Decision::Preempt {
                job,
                preemptor,
                reason,
                grace,
            } => {
                let rec = &self.jobs[job.index()];
                if !rec.live || rec.state != JobState::Running {
                    return Err(self.invariant(format!(
                        "job {job} preempted while not running ({:?})",
                        rec.state
                    )));
                }
                if self.cfg.record_preemptions {
                    self.preemption_log.push(PreemptionEvent {
                        at: now,
                        victim: rec.seq,
                        preemptor: self.jobs[preemptor.index()].seq,
                        reason,
                    });
                }
                self.counts.preemptions += 1;
                *self
                    .counts
                    .preemptions_by_reason
                    .entry(reason.as_str().to_string())
                    .or_insert(0) += 1;
                let tenant = rec.tenant;
                self.tenant_stats[tenant.index()].preemptions += 1;
                self.jobs[job.index()]
                    .extra
                    .get_or_insert_with(Box::default)
                    .preemptions += 1;
                let lost_before = self.lost_gpu_milli_ms;
                self.stop_run(job, grace);
                if let Some(s) = &mut self.serve {
                    if s.is_replica(preemptor) && !s.is_replica(job) {
                        s.on_preempted_by_serving(self.lost_gpu_milli_ms - lost_before);
                    }
                }
                if grace == SimDuration::ZERO {
                    // The policy released the victim's bindings and requeued it already.
                    self.unbind(job);
                    self.dirty = true;
                } else {
                    self.terminate(job, grace);
                }
            }
            Decision::Reject { job, .. } => {
                return Err(self.invariant(format!(
                    "a scheduling pass rejected job {job}; rejection happens at submit"
                )));
            }
        }
        Ok(())
    }

    /// Stops a running job's run at `now`: progress since its last checkpoint is lost, and
    /// so is the accelerator-time it will hold during `grace`.
    fn stop_run(&mut self, id: JobId, grace: SimDuration) {
        let (kept, lost) = if self.cfg.reliability {
            self.stop_account(id, grace)
        } else {
            let now = self.now;
            let rec = &mut self.jobs[id.index()];
            let gpu = rec.shape.total_gpu_milli() * rec.tasks as u64;
            let start = rec.start.expect("a stopped job started");
            let x = rec.extra.get_or_insert_with(Box::default);
            let ran = now.saturating_since(x.run_start.unwrap_or(start));
            let total = SimDuration(x.done.0 + ran.0);
            let kept = kept_progress(total, self.cfg.checkpoint_interval);
            (kept, (total.0 - kept.0 + grace.0) as u128 * gpu as u128)
        };
        let now = self.now;
        // Useful occupancy: the run's startup (if still going) ends now, and its work since
        // the last checkpoint, `lost` less the grace, was unproductive.
        if let Some(end) = self.startup_end(id) {
            self.metrics.startup_cut(self.jobs[id.index()].run, end);
        }
        let rec = &self.jobs[id.index()];
        let gpu = u128::from(rec.shape.total_gpu_milli()) * u128::from(rec.tasks);
        if let Some(per_gpu) = lost.checked_div(gpu) {
            let wall = per_gpu.saturating_sub(u128::from(grace.0));
            self.metrics.lost_work(
                &self.fleet,
                rec.allocs.as_slice(),
                wall.min(u64::MAX as u128) as u64,
            );
        }
        let rec = &mut self.jobs[id.index()];
        let start = rec.start.unwrap_or(now);
        let x = rec.extra.get_or_insert_with(Box::default);
        x.served_ms += now.saturating_since(x.run_start.unwrap_or(start)).0;
        // Pending (not running) from the stop to the next start, its grace included.
        x.pending_since = Some(now);
        x.done = kept;
        x.lost_gpu_milli_ms = x
            .lost_gpu_milli_ms
            .saturating_add(lost.min(u64::MAX as u128) as u64);
        self.tenant_stats[rec.tenant.index()].lost_gpu_milli_ms += lost;
        self.lost_gpu_milli_ms += lost;
        if let Some(s) = &mut self.serve {
            let gpus = rec.shape.num_gpu as u64 * rec.tasks as u64;
            s.on_stop(id, gpus, false);
        }
    }

    /// A stopped job keeps its bindings until `now + grace`, then [`Simulation::release`].
    fn terminate(&mut self, id: JobId, grace: SimDuration) {
        self.metrics
            .unproductive(&self.fleet, self.jobs[id.index()].allocs.as_slice(), true);
        let rec = &mut self.jobs[id.index()];
        rec.state = JobState::Terminating;
        let run = self.next_run;
        self.next_run = (self.next_run + 1) % NOT_RUNNING;
        rec.run = run;
        let x = rec.extra.get_or_insert_with(Box::default);
        x.release_at = Some(self.now + grace);
        x.held_nodes.clear();
        self.events
            .push(self.now + grace, EventKind::Release(id, run));
    }

    /// Forgets a stopped job's bindings (already released in the fleet state) and marks it
    /// pending.
    fn unbind(&mut self, id: JobId) {
        let rec = &self.jobs[id.index()];
        let (tenant, gpu) = (rec.tenant, rec.shape.total_gpu_milli() * rec.tasks as u64);
        let idle = rec.state == JobState::Terminating;
        self.metrics
            .on_allocs(&self.fleet, rec.allocs.as_slice(), false, idle);
        self.metrics.on_tenant_alloc(tenant, gpu, false);
        let nodes: Vec<NodeId> = if self.draining.is_empty() {
            Vec::new()
        } else {
            rec.allocs.as_slice().iter().map(|a| a.node).collect()
        };
        let now = self.now;
        let seg = self
            .cfg
            .record_runs
            .then(|| self.run_segment(id, RunEnd::Stopped));
        let rec = &mut self.jobs[id.index()];
        if let Some(seg) = seg {
            rec.extra.get_or_insert_with(Box::default).runs.push(seg);
        }
        rec.allocs = Allocs::None;
        rec.state = JobState::Pending;
        // Waiting since its stop (a grace period ended now; without one, it stopped now).
        rec.extra
            .get_or_insert_with(Box::default)
            .pending_since
            .get_or_insert(now);
        rec.run = NOT_RUNNING;
        self.running -= 1;
        if !nodes.is_empty() {
            self.settle_drained(&nodes);
        }
        self.withdraw_if_overdue(id);
    }

    /// A replica past its planned stop that rejoins the queue (released after a grace
    /// period, requeued at once, or dispatched) is withdrawn at once: its stop event is
    /// queued again at `now`, applied before the next pass (ranked before arrivals).
    fn withdraw_if_overdue(&mut self, id: JobId) {
        if let Some(s) = &self.serve {
            if let (Some(stop), Some(n)) = (s.stop_of(id), s.arrival_of(id)) {
                if stop <= self.now {
                    self.events.push(self.now, EventKind::ReplicaStop(n));
                }
            }
        }
    }

    /// The planned stop of replica arrival `n`: a replica still pending leaves its queue
    /// ([`fleetsim_policies::Scheduler::withdraw`]) and is written as `CANCELLED`, reason
    /// `withdrawn` (counted in `cancelled` when it never started; one that ran before was
    /// counted in `started`). A running one ends by its own completion at this instant; one
    /// in a grace period or the dispatch latency is withdrawn when it rejoins the queue
    /// ([`Simulation::withdraw_if_overdue`]).
    fn replica_stop(&mut self, n: u32, sink: &mut dyn JobSink) -> Result<(), EngineError> {
        let Some(id) = self.serve.as_ref().and_then(|s| s.job_of(n)) else {
            return Ok(()); // ended already
        };
        let rec = &self.jobs[id.index()];
        if rec.state != JobState::Pending || !self.sched.withdraw(id, rec.queue) {
            return Ok(());
        }
        if let Some(l) = self.live.as_mut() {
            l.events.push(live::Event::JobCancelled {
                t: self.now.0,
                job: id.0,
            });
        }
        if self.jobs[id.index()].start.is_none() {
            self.counts.cancelled += 1;
        } else {
            self.settle_wait(id);
        }
        emit(sink, || {
            self.row(id, FinalState::Cancelled, None, Some("withdrawn".into()))
        })?;
        if let Some(s) = &mut self.serve {
            s.on_withdrawn(id);
        }
        self.free_slot(id);
        self.dirty = true;
        Ok(())
    }

    /// A terminating job's grace period is over: its bindings are released and it is
    /// requeued.
    fn release(&mut self, id: JobId, run: u32) -> Result<(), EngineError> {
        let rec = &self.jobs[id.index()];
        if !rec.live || rec.run != run || rec.state != JobState::Terminating {
            return Ok(()); // stale
        }
        for a in rec.allocs.as_slice() {
            self.fleet
                .release(a)
                .map_err(|e| self.invariant(e.to_string()))?;
        }
        self.record_live(|t| live::Event::VictimReleased { t, job: id.0 });
        self.unbind(id);
        self.sched.on_released(id, self.now);
        self.dirty = true;
        Ok(())
    }

    /// Applies node change `i`.
    fn node_change(&mut self, i: usize) -> Result<(), EngineError> {
        let change = self.cfg.node_changes[i];
        if self.spares.contains(&change.node) {
            // A held-out spare stays out of scheduling; it is free again once repaired.
            if change.kind == NodeChangeKind::Repair {
                self.spares_down.remove(&change.node);
                if self.draining.remove(&change.node) {
                    self.metrics.add_draining(&self.fleet, change.node, false);
                    self.metrics.refresh_capacity(&self.fleet);
                }
            } else {
                self.spares_down.insert(change.node);
            }
            return Ok(());
        }
        let node = change.node.0;
        self.record_live(|t| match change.kind {
            NodeChangeKind::Repair => live::Event::NodeRecovered { t, node },
            NodeChangeKind::Fail { .. } => live::Event::NodeFailed { t, node },
            NodeChangeKind::Drain | NodeChangeKind::Evict { .. } => {
                live::Event::NodeDrained { t, node }
            }
        });
        match change.kind {
            NodeChangeKind::Repair => {
                self.fleet.set_schedulable(change.node, true);
                if self.draining.remove(&change.node) {
                    self.metrics.add_draining(&self.fleet, change.node, false);
                }
            }
            NodeChangeKind::Fail { grace } => {
                self.fleet.set_schedulable(change.node, false);
                self.stop_jobs_on(change.node, grace, false);
                self.book_held_on_failed(change.node);
                // Capacity and allocation of a down node leave together: a
                // drained node stops counting as available, and what its stopped jobs
                // hold through the grace becomes "held on failed nodes".
                if self.draining.remove(&change.node) {
                    self.metrics.add_draining(&self.fleet, change.node, false);
                }
                self.metrics.node_failed(&self.fleet, change.node);
            }
            NodeChangeKind::Drain => {
                let n = change.node;
                if self.fleet.node(n).schedulable {
                    self.fleet.set_schedulable(n, false);
                    if self.node_busy(n) && self.draining.insert(n) {
                        self.metrics.add_draining(&self.fleet, n, true);
                    }
                }
            }
            NodeChangeKind::Evict { grace } => {
                self.fleet.set_schedulable(change.node, false);
                self.stop_jobs_on(change.node, grace, true);
            }
        }
        self.metrics.refresh_capacity(&self.fleet);
        self.dirty = true;
        Ok(())
    }

    /// Releases every binding job `id` holds on the fleet and tells the collectors (the
    /// fleet's and the tenant's allocated GPUs); the job record keeps its bindings. Returns
    /// the job's GPU-milli (tasks × per-task).
    fn release_bindings(&mut self, id: JobId) -> Result<u64, EngineError> {
        let now = self.now;
        let rec = &self.jobs[id.index()];
        for a in rec.allocs.as_slice() {
            self.fleet.release(a).map_err(|e| EngineError::Invariant {
                time: now,
                message: e.to_string(),
            })?;
        }
        self.metrics
            .on_allocs(&self.fleet, rec.allocs.as_slice(), false, false);
        let total = rec.shape.total_gpu_milli() * u64::from(rec.tasks);
        self.metrics.on_tenant_alloc(rec.tenant, total, false);
        Ok(total)
    }

    fn finish(&mut self, id: JobId, run: u32, sink: &mut dyn JobSink) -> Result<(), EngineError> {
        if self.elastic.as_ref().is_some_and(|e| e.holds(id)) {
            return self.elastic_finish(id, run, sink);
        }
        let now = self.now;
        let rec = &self.jobs[id.index()];
        if !rec.live || rec.run != run || rec.state != JobState::Running {
            return Ok(()); // a stale completion of an earlier run
        }
        let total = self.release_bindings(id)?;
        if let Some(l) = self.live.as_mut() {
            l.events.push(live::Event::JobFinished {
                t: now.0,
                job: id.0,
            });
        }
        let rec = &self.jobs[id.index()];
        self.sched.on_job_end(id, rec.queue, total, now);
        let pre = rec.kind == RecordedKind::PreExisting || !rec.measured || self.is_replica(id);
        self.metrics.on_finish(rec.submit, now, rec.runtime.0, pre);
        let walltime_cut = rec.walltime_cut;
        self.settle_wait(id);
        let state = if walltime_cut {
            self.counts.walltime_reached += 1;
            FinalState::WalltimeReached
        } else {
            FinalState::Completed
        };
        self.counts.completed += 1;
        self.running -= 1;
        self.end_run_account(id, true);
        // The row first: a replica's account forgets it.
        emit(sink, || self.row(id, state, Some(now), None))?;
        if let Some(s) = &mut self.serve {
            let rec = &self.jobs[id.index()];
            s.on_stop(id, rec.shape.num_gpu as u64 * rec.tasks as u64, true);
        }
        if !self.draining.is_empty() {
            let nodes: Vec<NodeId> = self.jobs[id.index()]
                .allocs
                .as_slice()
                .iter()
                .map(|a| a.node)
                .collect();
            self.settle_drained(&nodes);
        }
        self.free_slot(id);
        self.dirty = true;
        Ok(())
    }

    /// Applies node event `i` of the configuration (see [`NodeEvent`]).
    fn node_event(&mut self, i: usize) {
        let e = self.cfg.node_events[i].clone();
        for &n in &e.nodes {
            self.record_live(|t| match e.up {
                true => live::Event::NodeRecovered { t, node: n.0 },
                false => live::Event::NodeDrained { t, node: n.0 },
            });
            if e.up {
                if self.draining.remove(&n) {
                    self.metrics.add_draining(&self.fleet, n, false);
                }
                self.fleet.set_schedulable(n, true);
            } else if self.fleet.node(n).schedulable {
                self.fleet.set_schedulable(n, false);
                if self.node_busy(n) && self.draining.insert(n) {
                    self.metrics.add_draining(&self.fleet, n, true);
                }
            }
        }
        self.metrics.refresh_capacity(&self.fleet);
        self.dirty = true;
    }

    fn node_busy(&self, n: NodeId) -> bool {
        let s = self.fleet.node(n);
        s.free_gpu_milli < s.gpus * 1000
            || s.free_cpu_milli < s.cpu_milli
            || s.free_mem_mib < s.mem_mib
    }

    /// Drained nodes among `nodes` that are now empty leave the available capacity.
    fn settle_drained(&mut self, nodes: &[NodeId]) {
        let mut changed = false;
        for &n in nodes {
            if self.draining.contains(&n) && !self.node_busy(n) {
                self.draining.remove(&n);
                self.metrics.add_draining(&self.fleet, n, false);
                changed = true;
            }
        }
        if changed {
            self.metrics.refresh_capacity(&self.fleet);
        }
    }

    /// Samples the fleet's fragmentation (FGD measure, against the typical tasks of the jobs
    /// submitted so far) at every due time-series interval start `b` with `due(b)`.
    fn sample_fragmentation(&mut self, due: impl Fn(SimTime) -> bool) {
        while let Some(b) = self.metrics.next_sample_at() {
            if !due(b) {
                break;
            }
            let frag = self.sched.fleet_fragmentation_milli(&self.fleet);
            let idle = self
                .fleet
                .available_gpu_milli()
                .saturating_sub(self.fleet.allocated_gpu_milli());
            self.metrics.record_fragmentation(frag, idle);
        }
    }

    /// Appends a [`QuotaSample`] at `t` when the quota usage changed since the last one.
    fn log_quota(&mut self, t: SimTime) {
        let u = self.sched.quota_usage_by_queue();
        let Some(tree) = self.sched.quota() else {
            return;
        };
        let mut holding = vec![0u64; u.len()];
        let mut terminating = vec![0u64; u.len()];
        for j in self.jobs.iter().filter(|j| j.live) {
            let q = j.queue;
            let tier = self
                .cfg
                .queues
                .get(q.index())
                .map_or(QueueConfig::default().tier, |s| s.config.tier);
            if q.index() >= u.len() || !tree.has_queue(q) || tier == Tier::BestEffort {
                continue;
            }
            let g = j.shape.total_gpu_milli() * j.tasks as u64;
            match j.state {
                JobState::Running => holding[q.index()] += g,
                JobState::Terminating => {
                    holding[q.index()] += g;
                    terminating[q.index()] += g;
                }
                _ => {}
            }
        }
        let changed = self.quota_log.last().is_none_or(|l| {
            l.queue_usage != u
                || l.holding_gpu_milli != holding
                || l.terminating_gpu_milli != terminating
        });
        if changed {
            self.quota_log.push(QuotaSample {
                at: t,
                queue_usage: u,
                holding_gpu_milli: holding,
                terminating_gpu_milli: terminating,
            });
        }
    }

    fn audit(&self) -> Result<(), EngineError> {
        self.fleet
            .audit(self.jobs.iter().flat_map(|j| j.allocs.as_slice().iter()))
            .map_err(|message| self.invariant(message))?;
        let elastic = self.elastic.as_ref();
        let holding = self.jobs.iter().enumerate().filter(|(i, j)| {
            !elastic.is_some_and(|e| e.holds(JobId(*i as u32)))
                && j.live
                && matches!(
                    j.state,
                    JobState::Running | JobState::Terminating | JobState::Recovering
                )
        });
        for (i, j) in holding.clone() {
            let partial = j.state == JobState::Recovering
                && j.allocs.as_slice().len() < j.members as usize
                && !j.allocs.is_empty();
            if !partial && j.allocs.as_slice().len() != j.members as usize {
                return Err(self.invariant(format!(
                    "job {i} holds {} bindings for a gang of {}",
                    j.allocs.as_slice().len(),
                    j.members
                )));
            }
        }
        self.sched
            .audit(holding.map(|(i, j)| {
                (
                    JobId(i as u32),
                    j.queue,
                    j.shape.total_gpu_milli() * j.tasks as u64,
                )
            }))
            .map_err(|message| self.invariant(message))
    }

    fn close(
        &mut self,
        stopped_at_horizon: Option<SimTime>,
        skipped_rows: Skipped,
        trace_start: Option<crate::workload::TraceStart>,
        sink: &mut dyn JobSink,
    ) -> Result<RunResult, EngineError> {
        self.audit()?;
        let reasons = self.sched.pending_reasons();
        let mut censored: Vec<(JobId, Option<PendingReason>)> = self
            .sched
            .pending()
            .map(|j| (j.id, reasons.get(&j.id).copied()))
            .collect();
        censored.extend(self.awaiting_replay.keys().map(|&id| (id, None)));
        if let Some(p) = &self.ready {
            censored.extend(p.backing_off().map(|id| (id, None)));
        }
        if let Some(e) = &self.elastic {
            censored.extend(e.waiting().map(|id| (id, None)));
        }
        censored.sort_by_key(|&(id, _)| self.jobs[id.index()].seq);
        // Jobs that ran and were requeued (preempted, or lost with a node) are not censored.
        let (requeued, censored): (Vec<_>, Vec<_>) = censored
            .into_iter()
            .partition(|&(id, _)| self.jobs[id.index()].start.is_some());
        for &(id, reason) in &requeued {
            self.counts.requeued_at_end += 1;
            self.settle_wait(id);
            let r = reason.map(|r| r.as_str().to_string());
            emit(sink, || self.row(id, FinalState::RequeuedAtEnd, None, r))?;
        }
        for &(id, reason) in &censored {
            // Not in the queues: still inside the dispatch latency (`dispatching`), or
            // awaiting a recorded (replay or pre-existing) start after the horizon.
            let r = match reason {
                Some(r) => r.as_str(),
                None if self.dispatching.contains(&id) => "dispatching",
                None if self.jobs[id.index()].state == JobState::BackingOff => {
                    pods_ready::BACKING_OFF
                }
                None if self.elastic.as_ref().is_some_and(|e| e.holds(id)) => "waiting_for_round",
                None => "recorded_start_after_horizon",
            };
            self.counts.censored += 1;
            *self
                .counts
                .censored_by_reason
                .entry(r.to_string())
                .or_insert(0) += 1;
            emit(sink, || {
                self.row(id, FinalState::Censored, None, Some(r.to_string()))
            })?;
        }
        let mut running: Vec<JobId> = (0..self.jobs.len())
            .map(|i| JobId(i as u32))
            .filter(|id| {
                let r = &self.jobs[id.index()];
                r.live && !r.allocs.is_empty()
            })
            .collect();
        running.sort_by_key(|id| self.jobs[id.index()].seq);
        for id in running {
            self.counts.running_at_end += 1;
            self.settle_wait(id);
            if self.jobs[id.index()].state == JobState::Recovering {
                self.book_pause(id);
            }
            self.end_run_account(id, false);
            emit(sink, || self.row(id, FinalState::RunningAtEnd, None, None))?;
        }
        let c = &self.counts;
        if c.started + c.rejected + c.censored + c.cancelled != c.submitted {
            return Err(EngineError::Invariant {
                time: self.now,
                message: format!(
                    "job accounting: started {} + rejected {} + censored {} + cancelled {} != submitted {}",
                    c.started, c.rejected, c.censored, c.cancelled, c.submitted
                ),
            });
        }
        let end = match (stopped_at_horizon, censored.len()) {
            (Some(_), _) => EndReason::Horizon,
            (None, 0) => EndReason::Drained,
            (None, n) => EndReason::Stuck { pending: n as u64 },
        };
        // With a horizon the window ends at it, or at the last event when the run ended
        // before it (stuck jobs' blocked time counts; a run where nothing completes still
        // has a window), never at the last completion alone.
        let window_end = stopped_at_horizon.or_else(|| self.cfg.horizon.map(|h| self.now.min(h)));
        let occupancy = self.metrics.finish(window_end);
        // Per-tenant waits: the collector's waits grouped by tenant in place (no copy).
        let groups = crate::metrics::stats::group_by_tag(
            &mut self.metrics.waits_ms,
            &mut self.wait_tenant,
            self.tenant_stats.len(),
        );
        for (ts, r) in self.tenant_stats.iter_mut().zip(groups) {
            ts.wait_s = crate::metrics::dist_ms(&mut self.metrics.waits_ms[r]);
        }
        let makespan_ms = match (self.metrics.first_submit(), self.metrics.last_finish()) {
            (Some(a), Some(b)) => Some((b - a).0),
            _ => None,
        };
        let serving = self.serve.as_mut().map(|sv| {
            // Training = every tenant that is no service's.
            let is_serving = |name: &str| sv.tenants.iter().any(|t| t == name);
            let (mut train_alloc, mut serve_alloc, mut train_lost) = (0u128, 0u128, 0u128);
            for (i, ts) in self.tenant_stats.iter().enumerate() {
                let alloc = occupancy.allocated_tenant.get(i).copied().unwrap_or(0);
                if is_serving(&ts.name) {
                    serve_alloc += alloc;
                } else {
                    train_alloc += alloc;
                    train_lost += ts.lost_gpu_milli_ms;
                }
            }
            let allocated: u128 = occupancy.allocated_cell.iter().sum();
            let available: u128 = occupancy.available_cell.iter().sum();
            sv.finish(
                self.now,
                train_alloc,
                train_lost,
                (allocated, available, serve_alloc),
            )
        });
        let serving = serving.map(|mut s| {
            s.replica_wait_s = crate::metrics::dist_ms(&mut self.replica_waits_ms);
            s
        });
        Ok(RunResult {
            counts: self.counts.clone(),
            skipped_rows,
            trace_start,
            occupancy,
            wait_s: crate::metrics::dist_ms(&mut self.metrics.waits_ms),
            first_start_wait_s: crate::metrics::dist_ms(&mut self.metrics.first_waits_ms),
            jct_s: crate::metrics::dist_ms(&mut self.metrics.jcts_ms),
            bounded_slowdown: crate::metrics::dist_f64(&mut self.metrics.slowdowns),
            makespan_ms,
            end,
            events: self.event_count,
            passes: self.passes,
            end_time: self.now,
            lost_gpu_milli_ms: self.lost_gpu_milli_ms,
            tenants: {
                let mut t = std::mem::take(&mut self.tenant_stats);
                for ts in &mut t {
                    ts.entitlement_gpu_milli = self.queue_ids.get(&ts.name).and_then(|&q| {
                        self.sched
                            .quota()
                            .filter(|tree| tree.has_queue(q))
                            .map(|tree| tree.nominal_gpu_milli(q))
                    });
                }
                t
            },
            preemption_log: std::mem::take(&mut self.preemption_log),
            admissions: std::mem::take(&mut self.admissions),
            reason_log: std::mem::take(&mut self.reason_log),
            preemption_plans: std::mem::take(&mut self.preemption_plans),
            quota_log: std::mem::take(&mut self.quota_log),
            autoscaling: self.auto.as_mut().map(|a| a.finish(self.now, &self.fleet)),
            pods_ready_log: self
                .ready
                .as_mut()
                .map(pods_ready::PodsReady::take_log)
                .unwrap_or_default(),
            pods_ready: self.ready.as_mut().map(pods_ready::PodsReady::finish),
            serving,
            elastic: self.elastic_stats(),
            reliability: self.cfg.reliability.then(|| {
                let mut r = std::mem::take(&mut self.rel);
                r.lost_gpu_milli_ms = self.lost_gpu_milli_ms;
                r
            }),
            live: self.live.take().map(|mut b| {
                b.queues = self.queues.clone();
                *b
            }),
        })
    }

    /// Tenant names, indexed by [`TenantId`].
    pub fn tenants(&self) -> &[String] {
        &self.tenants
    }

    /// Queue names, indexed by [`QueueId`].
    pub fn queues(&self) -> &[String] {
        &self.queues
    }
}
