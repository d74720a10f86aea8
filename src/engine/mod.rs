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
//! A [`Decision::Preempt`](fleetsim_policies::Decision::Preempt) stops its victim at once:
//! progress since its last checkpoint ([`EngineConfig::checkpoint_interval`]; from scratch
//! without one) is lost. With a zero
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

pub mod elastic;
pub mod events;
mod subsystem;
pub mod subsystems;

pub use subsystems::*;

mod config;
mod core;
mod queues;
mod result;

pub use self::core::job::job_record_bytes;
use self::core::job::{demand_of, Allocs, JobRec, JobState, MAX_IN_FLIGHT, NOT_RUNNING};
use self::core::job::{Ids, Outside};
use self::core::logs::Logs;
use self::core::nodes::NodeSets;
use self::core::outputs::Tally;
use self::core::ticks::Passes;
pub use config::{
    series_interval_cap, EngineConfig, NodeChange, NodeChangeKind, NodeEvent, QueueSettings,
    AFTER_HORIZON, MAX_SERIES_BYTES, MAX_SERIES_INTERVALS,
};
use queues::Names;
pub use queues::{queue_name, queue_table};
pub use result::{
    AdmissionEvent, Counts, EndReason, EngineError, LiveRecord, PreemptionEvent, PreemptionPlan,
    QuotaSample, ReasonChange, RunResult, TenantStats,
};

use fleetsim_policies::{
    CellId, Extensions, FleetState, JobId, QueueConfig, QueueId, Scheduler, SchedulerConfig,
    SimTime, TenantId,
};

pub use crate::metrics::jobs::{DiscardRows, FinalState, JobRow, JobSink, RunEnd, RunSegment};
use crate::metrics::Collector;
use crate::workload::JobStream;
use events::{EventKind, EventQueue};

mod prefetch;

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
    /// The job slots to reuse and the next input position.
    ids: Ids,
    /// Jobs outside the scheduler's queues: awaiting a recorded start or the dispatch
    /// latency, and gangs recovering.
    outside: Outside,
    next_run: u32,
    /// Tenant and queue names and ids, the queues' time limits.
    names: Names,
    counts: Counts,
    running: u64,
    /// Drained nodes and held-out hot spares.
    node_sets: NodeSets,
    now: SimTime,
    /// When passes run: the pending-change flag, the ticks pushed (retry cycle, wake-up, round
    /// boundary), backfill, and the decision list reused from pass to pass.
    pass: Passes,
    /// Events applied, passes run, accelerator-time lost, and the tenants of the waits.
    tally: Tally,
    tenant_stats: Vec<TenantStats>,
    /// The recorded logs (preemptions, admissions, reasons, quota, the live stream).
    logs: Logs,
    /// The registered subsystems, and the in-loop features not yet behind the trait
    /// (serving, the goodput account).
    subs: Subsystems,
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
        let growth_level = policies
            .topology
            .as_ref()
            .and_then(fleetsim_policies::topology::TopologySpec::required_level);
        let mut sched = Scheduler::new(policies, queue_cfgs).with(ext);
        sched.record_preemption_contexts(cfg.record_preemptions);
        for &n in &cfg.spares {
            fleet.set_schedulable(n, false);
        }
        let list = subsystems::register(&cfg, &mut fleet);
        let metrics = Collector::new(&fleet, cfg.warmup_ms, cfg.interval_ms);
        let mut sim = Simulation {
            fleet,
            sched,
            metrics,
            events: EventQueue::default(),
            jobs: Vec::new(),
            ids: Ids::default(),
            next_run: 0,
            outside: Outside::default(),
            names: Names::default(),
            counts: Counts::default(),
            running: 0,
            node_sets: NodeSets {
                spares: cfg.spares.iter().copied().collect(),
                ..NodeSets::default()
            },
            now: SimTime::ZERO,
            pass: Passes {
                backfill,
                ..Passes::default()
            },
            tally: Tally::default(),
            tenant_stats: Vec::new(),
            logs: Logs {
                live: cfg.record_live.then(Box::default),
                ..Logs::default()
            },
            subs: Subsystems {
                list,
                serve: cfg.serving.clone().map(serving::Serving::new),
                rel: reliability::ReliabilityStats {
                    spares: !cfg.spares.is_empty(),
                    keep_survivors: cfg.gang_recovery
                        == fleetsim_policies::GangRecovery::KeepSurvivors,
                    ..reliability::ReliabilityStats::default()
                },
                training_cells: None,
            },
            elastic: cfg
                .elastic
                .clone()
                .map(|e| elastic::Elastic::new(e, growth_level)),
            cfg,
        };
        if let Some(sv) = sim
            .subs
            .serve
            .as_ref()
            .filter(|s| !s.reserved_cells().is_empty())
        {
            let cells = sim.fleet.cells().iter().enumerate();
            sim.subs.training_cells = Some(
                cells
                    .filter(|(_, c)| !sv.reserved_cells().contains(&c.name))
                    .map(|(i, _)| CellId(i as u16))
                    .collect(),
            );
        }
        for q in sim.cfg.queues.clone() {
            let id = sim.queue_id(&q.name);
            sim.names.queue_limits[sim.names.queues.len() - 1] =
                (q.default_time_limit, q.max_time_limit);
            for lq in q.local_queues {
                sim.names.queue_ids.entry(lq).or_insert(id);
            }
        }
        sim.names.known_queues = sim.names.queues.len() as u32;
        let unsupported = sim.subs.list.iter().flatten();
        if let Some(why) = unsupported.filter_map(|s| s.live_unsupported()).next() {
            sim.live_unsupported(why);
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
        if let Some(&q) = self.names.queue_ids.get(name) {
            return q;
        }
        let q = QueueId(self.names.queues.len() as u32);
        self.names.queues.push(name.to_string());
        self.names.queue_ids.insert(name.to_string(), q);
        self.names.queue_limits.push((None, None));
        q
    }

    fn tenant_id(&mut self, name: &str) -> TenantId {
        if let Some(&t) = self.names.tenant_ids.get(name) {
            return t;
        }
        let t = TenantId(self.names.tenants.len() as u32);
        self.names.tenants.push(name.to_string());
        self.names.tenant_ids.insert(name.to_string(), t);
        self.tenant_stats.push(TenantStats {
            name: name.to_string(),
            ..TenantStats::default()
        });
        t
    }

    /// True when job `id` is a serving replica ([`serving`]).
    fn is_replica(&self, id: JobId) -> bool {
        self.subs.serve.as_ref().is_some_and(|s| s.is_replica(id))
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
            let t_replica = self.subs.serve.as_ref().and_then(|s| s.next_arrival());
            if next.is_none() && t_replica.is_none() && self.jobs.len() == self.ids.free_slots.len()
            {
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
                    self.advance_clock(h);
                    break;
                }
            }
            self.check_intervals(t)?;
            self.advance_clock(t);
            // (1) completions, (2) node events.
            self.early_events(t, sink)?;
            // (3) arrivals: serving replicas first (service order, replica index), then the
            // trace's, in trace order.
            self.replica_arrivals(t, sink)?;
            while next.as_ref().is_some_and(|j| j.submit == t) {
                let spec = next.take().expect("checked");
                if spec.submit < last_submit {
                    return Err(EngineError::Unsorted {
                        name: spec.name.into(),
                        seq: self.ids.next_seq,
                        submit: spec.submit,
                        previous: last_submit,
                    });
                }
                last_submit = spec.submit;
                self.tally.event_count += 1;
                self.arrive(spec, sink)?;
                if self.counts.submitted.is_multiple_of(4096) {
                    progress(self.counts.submitted, t);
                }
                next = stream.next().transpose()?;
                if let Some(n) = &next {
                    if n.submit < t {
                        return Err(EngineError::Unsorted {
                            name: n.name.to_string(),
                            seq: self.ids.next_seq,
                            submit: n.submit,
                            previous: t,
                        });
                    }
                }
            }
            // (4) recorded starts, then the periodic passes due now.
            self.recorded_starts(t, sink)?;
            self.ticks_due(t)?;
            // Round-based cadence: between boundaries a change waits for the next boundary.
            if self.pass.dirty && !self.on_round(t) {
                self.defer_to_round(t);
            }
            // (5) scheduling passes until one changes nothing.
            if self.pass.dirty && self.on_round(t) {
                self.passes(t)?;
                self.after_passes(t, sink)?;
            }
            self.end_instant(t)?;
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
                        seq: self.ids.next_seq + after_horizon,
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

    fn invariant(&self, message: String) -> EngineError {
        EngineError::Invariant {
            time: self.now,
            message,
        }
    }

    /// Tenant names, indexed by [`TenantId`].
    pub fn tenants(&self) -> &[String] {
        &self.names.tenants
    }

    /// Queue names, indexed by [`QueueId`].
    pub fn queues(&self) -> &[String] {
        &self.names.queues
    }
}
