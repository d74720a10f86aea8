//! What a run returns: [`RunResult`] with its counts, per-tenant results and logs, and
//! [`EngineError`], the errors that stop a run.

use std::collections::BTreeMap;

use fleetsim_policies::{live, PendingReason, PreemptReason, SimTime};

use super::{autoscale, elastic, pods_ready, reliability, serving};
use crate::metrics::{Dist, Occupancy};
use crate::workload::{Skipped, TraceError};

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
    /// Per queue (by [`QueueId`](fleetsim_policies::QueueId) index), its quota usage per slot
    /// (`None`: no quota).
    pub queue_usage: Vec<Option<Vec<u64>>>,
}

/// Every queue's quota usage after an instant at which it changed ([`RunResult::quota_log`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaSample {
    /// The instant (its events and passes all applied).
    pub at: SimTime,
    /// Per queue (by [`QueueId`](fleetsim_policies::QueueId) index), the scheduler's quota usage
    /// per slot: flavor-major, GPU-milli, milli-cores, MiB within (`None`: no quota). Counts
    /// running and terminating jobs and the reservations of preemptors waiting for their victims
    /// (so it counts a victim in its grace period and the room reserved for its preemptor both).
    pub queue_usage: Vec<Option<Vec<u64>>>,
    /// Per queue (by [`QueueId`](fleetsim_policies::QueueId) index), GPU-milli of the quota-charged
    /// jobs (tier not best-effort, queue with quota) that hold resources — running or terminating —
    /// as the engine's own records have them: the admitted usage.
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
    /// The run would need more time-series intervals than
    /// [`series_interval_cap`](crate::engine::series_interval_cap) allows.
    #[error("the run reaches {time}, {intervals} time-series intervals of {interval_ms} ms (at most {max} are kept): raise `[metrics] timeseries_interval_s`, or check the times of node events, grace periods and the trace")]
    TooManyIntervals {
        /// Simulated time reached.
        time: SimTime,
        /// Intervals that time needs.
        intervals: u64,
        /// The interval, ms.
        interval_ms: u64,
        /// The cap, [`series_interval_cap`](crate::engine::series_interval_cap) of the run's
        /// snapshot size.
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
    /// [`RunResult::skipped_rows`] under [`AFTER_HORIZON`](crate::engine::AFTER_HORIZON)).
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
    /// ([`AFTER_HORIZON`](crate::engine::AFTER_HORIZON)).
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
    /// Every preemption, when
    /// [`EngineConfig::record_preemptions`](crate::engine::EngineConfig::record_preemptions) is on.
    pub preemption_log: Vec<PreemptionEvent>,
    /// Every start, when
    /// [`EngineConfig::record_admissions`](crate::engine::EngineConfig::record_admissions) is on.
    pub admissions: Vec<AdmissionEvent>,
    /// Pending reasons as they changed, when
    /// [`EngineConfig::record_admissions`](crate::engine::EngineConfig::record_admissions) is on.
    pub reason_log: Vec<ReasonChange>,
    /// Every step of waiting for pods (admissions waiting, evictions, requeues, deactivations), in
    /// order, when
    /// [`EngineConfig::record_admissions`](crate::engine::EngineConfig::record_admissions) is on
    /// and [`EngineConfig::wait_for_pods_ready`](crate::engine::EngineConfig::wait_for_pods_ready)
    /// is set.
    pub pods_ready_log: Vec<pods_ready::PodsReadyEvent>,
    /// Every preemption plan of a scheduling pass (not of the Tiresias-compatible re-deciding
    /// mode), when
    /// [`EngineConfig::record_preemptions`](crate::engine::EngineConfig::record_preemptions) is on.
    pub preemption_plans: Vec<PreemptionPlan>,
    /// Quota usage after every instant at which it changed, when both
    /// [`EngineConfig::record_preemptions`](crate::engine::EngineConfig::record_preemptions) and
    /// [`EngineConfig::audit_every_instant`](crate::engine::EngineConfig::audit_every_instant) are
    /// on and there is a quota tree.
    pub quota_log: Vec<QuotaSample>,
    /// The goodput account, when
    /// [`EngineConfig::reliability`](crate::engine::EngineConfig::reliability) is on.
    pub reliability: Option<reliability::ReliabilityStats>,
    /// The autoscaling account, with
    /// [`EngineConfig::autoscaling`](crate::engine::EngineConfig::autoscaling).
    pub autoscaling: Option<autoscale::AutoscaleStats>,
    /// The pods-ready account, with
    /// [`EngineConfig::wait_for_pods_ready`](crate::engine::EngineConfig::wait_for_pods_ready).
    pub pods_ready: Option<pods_ready::PodsReadyStats>,
    /// The serving account, with [`EngineConfig::serving`](crate::engine::EngineConfig::serving).
    pub serving: Option<serving::ServingStats>,
    /// The round-allocated jobs' account, with
    /// [`EngineConfig::elastic`](crate::engine::EngineConfig::elastic).
    pub elastic: Option<elastic::ElasticStats>,
    /// The live event stream and its decisions, when
    /// [`EngineConfig::record_live`](crate::engine::EngineConfig::record_live) is on.
    pub live: Option<LiveRecord>,
}

/// What [`EngineConfig::record_live`](crate::engine::EngineConfig::record_live) records: every
/// scheduler-facing event of the run as the live service's [`live::Event`], and every decision the
/// scheduler made, in order. Replaying `events` through a [`live::LiveState`] built like the run's
/// scheduler must give exactly `decisions`.
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
