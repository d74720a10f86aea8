//! Elastic jobs (`[elastic]`): jobs whose GPUs the subsystem re-decides while they run,
//! bound one whole GPU per replica on the fleet's nodes. Two families of allocators:
//!
//! - **round allocators** (`tiresias`, `pollux`): jobs of a `pollux` workload, trained under
//!   the measured goodput models of the Pollux OSDI '21 artifact, as its simulator runs them
//!   (`simulator/simulator.py`, read, not copied); described below;
//! - **sizing policies** (`grow-idle`, `fixed`): jobs of native rows with `min_gpus`,
//!   `max_gpus`, `work_gpu_s`, `throughput` ([`crate::workload::SizedSpec`]), beside rigid
//!   jobs: their `min` scheduled as any job, the GPUs above it sized by
//!   [`fleetsim_policies::elastic::plan_sizes`]; described under *Sizing policies*.
//!
//! # Round allocators
//!
//! A job of the stream with an [`crate::workload::ElasticSpec`] (a `pollux` workload) does
//! not enter the scheduler's queues: this subsystem holds it. At every round boundary
//! (multiples of [`ElasticConfig::round`], the first at one round; an event of the tick
//! class, so after the instant's completions and arrivals):
//!
//! 1. the allocator ([`RoundAllocator`]: the artifact's Tiresias, `TwoQueueLas`, or `Pollux`)
//!    gets the jobs in flight in submission order and each node's GPUs (its wholly free
//!    accelerators plus those the subsystem's own jobs hold; none on an unschedulable node)
//!    and returns every job's allocation, one node per replica;
//! 2. every job whose allocation changed releases its old bindings, then (all releases
//!    first) binds one whole GPU per replica on the chosen nodes through the checked
//!    [`FleetState`](fleetsim_policies::FleetState) — so occupancy, fragmentation and the audits see them — and restarts:
//!    it holds its GPUs without progress for [`ElasticConfig::restart`] (a job that held
//!    GPUs and is given none waits, counted as a preemption under the reason
//!    `round_allocation`; it keeps its progress);
//! 3. every job holding GPUs trains for the round at its allocation
//!    ([`fleetsim_policies::goodput::TrainingJob::step`], the code the artifact replay
//!    drives too); a job that reaches its target within the round gets a completion event
//!    at that instant (milliseconds, rounded to nearest), which releases its GPUs and
//!    completes it like any job (a completion at a boundary comes before that round).
//!
//! No job length is assumed: a job's run time is what its allocations made of it. The
//! `elastic` section of the summary counts rounds and reallocations.
//!
//! # Sizing policies
//!
//! A sized job is two parts (the Kueue / Pollux-Sia reading of an elastic job: its minimum
//! guaranteed, the rest opportunistic):
//!
//! - its **`min`** is an ordinary job of the scheduler: a gang of `min` one-GPU tasks with
//!   the run time it would take at `min` (`with_min_runtime`), queued, admitted, placed,
//!   quota-accounted and preempted by the scheduler's stages like any job, beside rigid
//!   jobs. It is evicted only by the preemption rules, i.e. only when its `min` is needed;
//! - its GPUs **above `min`** (growth) are the subsystem's. Before an instant's scheduling
//!   passes every growth GPU is released, so the passes see it free: pending work takes
//!   precedence over growth. After the passes, [`plan_sizes`] water-fills each cell's idle
//!   GPUs (schedulable nodes' wholly free GPUs) among the running sized jobs in the elastic
//!   key order (priority descending, submit, input order) up to their `max` — or their
//!   fastest size when that is smaller ([`ThroughputModel::fastest_size`]) — (`grow-idle`;
//!   `fixed` grows nothing), and each job binds its growth in its cell through the checked
//!   [`FleetState`](fleetsim_policies::FleetState), first on the nodes it held, then in node
//!   order.
//!
//! Growth counts against the job's queue: the jobs bind their planned growth in input order,
//! each bounded by its queue's hard maximum (the queue's usage, mins included, plus the
//! growth bound before it) and by its quota (each GPU checked with
//! [`QuotaTree::check`](fleetsim_policies::QuotaTree::check) in the flavor its `min` was
//! admitted in, on a copy of the scheduler's tree charged with the growth bound before it,
//! on nodes of that flavor's models), and under a required topology level
//! (`policy.topology`) to the nodes of the group of that level its `min` was placed in; a
//! job bounded below its plan is planned again with
//! what it could bind as its `max`. Growth is not charged to the scheduler itself: it is
//! released before every pass, so admission, fair-share order and preemption see the
//! running jobs' quota only, and decayed usage counts the mins only.
//!
//! A node going down (failure or eviction) that holds growth GPUs of a job takes all its
//! growth at once (`Simulation::elastic_node_down`): the job is re-planned at the next
//! passes and pays the resize overhead whatever its new size. A failure of its `min` stops
//! the `min` as any job (the reliability path: grace, failure counted, requeue) and its
//! growth with it; its work goes back to its last checkpoint — the work left when its
//! progress time (summed over its runs) last passed a multiple of the checkpoint interval,
//! all of it without one. A started `min` makes progress from the end of its run's startup
//! (`[startup]`); growth pays the resize overhead only.
//!
//! Growth is no demand to the autoscaler: it runs after the passes on the fleet without
//! growth (bound after it), so growth never triggers a scale-up and a node holding only
//! growth is idle; at such a node's idle check the jobs holding growth on it release it
//! first. A serving replica is pending work: it takes growth GPUs before any preemption.
//!
//! A job whose size after the passes differs from its size before them was resized: it
//! makes no progress for [`ElasticConfig::restart`] (`restart_s`, the resize overhead) while
//! holding its new GPUs, booked as unproductive (useful occupancy leaves it out). A job the passes started pays none; a job whose size did not change
//! gets its GPUs back and pays nothing. Its work drains at its throughput model's integer
//! rate ([`crate::workload::ThroughputModel::rate_milli`], thousandths of a size-1 GPU-ms
//! per ms) for its current size; it completes at `resume + ⌈remaining / rate⌉` ms (a new
//! run number makes the completion queued for an earlier size stale). An evicted job keeps
//! its progress (no work is counted lost) and resumes at its `min` when the scheduler starts
//! it again. Its length is a modelling choice of the user (its `work_gpu_s` and
//! `throughput`), not a recorded run time; the summary says so. The summary's `rounds`
//! counts plans (instants with passes) and `reallocations` resizes; its `jobs.csv` row is
//! its `min` part's (its growth GPUs are counted in the `elastic` section's `gpu_hours` and
//! in occupancy).

use std::collections::BTreeMap;
use std::sync::Arc;

use fleetsim_policies::elastic::{plan_sizes, ElasticJobView};
use fleetsim_policies::goodput::{AppModel, PerfModel, TrainingJob};
use fleetsim_policies::quota::{QuotaFit, Request};
use fleetsim_policies::rounds::{Allocations, LasJob, Pollux, PolluxJob, TwoQueueLas};
use fleetsim_policies::topology::Level;
use fleetsim_policies::{
    CellId, ElasticKind, JobId, ModelSet, NodeId, QueueId, RejectReason, SimDuration, SimTime,
    TaskAlloc, TaskShape, WHOLE_GPU_MILLI,
};

use super::events::EventKind;
use super::{Allocs, EngineError, JobSink, JobState, Simulation};
use crate::metrics::jobs::FinalState;
use crate::workload::{ElasticSpec, RecordedKind, SizedSpec, ThroughputModel, TrainedSpec};

/// The allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundAllocator {
    /// The Pollux artifact's Tiresias: rigid jobs at their trace size and batch size,
    /// two-queue LAS with its 16 GPU-hour threshold.
    Tiresias,
    /// Pollux: adaptive jobs (ncf at a fixed batch of 32,768, as the artifact runs it).
    Pollux,
    /// The grow-idle sizing policy ([`fleetsim_policies::elastic`]), event-driven.
    GrowIdle,
    /// The fixed sizing policy: every job at its `min`, event-driven.
    Fixed,
}

impl RoundAllocator {
    /// The name scenarios use.
    pub fn name(self) -> &'static str {
        match self {
            RoundAllocator::Tiresias => "tiresias",
            RoundAllocator::Pollux => "pollux",
            RoundAllocator::GrowIdle => "grow-idle",
            RoundAllocator::Fixed => "fixed",
        }
    }

    /// The sizing policy, for `grow-idle` and `fixed`; `None` for a round allocator.
    pub fn sizing(self) -> Option<ElasticKind> {
        match self {
            RoundAllocator::GrowIdle => Some(ElasticKind::GrowIdle),
            RoundAllocator::Fixed => Some(ElasticKind::Fixed),
            RoundAllocator::Tiresias | RoundAllocator::Pollux => None,
        }
    }
}

/// The `[elastic]` settings the engine runs.
#[derive(Clone, Debug)]
pub struct ElasticConfig {
    /// The allocator.
    pub allocator: RoundAllocator,
    /// Round length (round allocators; unused by the sizing policies).
    pub round: SimDuration,
    /// Restart delay after an allocation change (the resize overhead).
    pub restart: SimDuration,
    /// Application models, by name (sorted; empty for the sizing policies).
    pub models: Arc<Vec<AppModel>>,
}

/// The `elastic` section of the summary.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct ElasticStats {
    /// The allocator (`tiresias`, `pollux`, `grow-idle`, `fixed`).
    pub allocator: String,
    /// Round length, seconds (round allocators; absent for the event-driven sizing
    /// policies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_s: Option<f64>,
    /// Restart delay, seconds.
    pub restart_s: f64,
    /// Elastic jobs taken (submitted and not rejected at submit).
    pub jobs: u64,
    /// Of them, completed.
    pub completed: u64,
    /// Rounds run (sizing policies: plans made).
    pub rounds: u64,
    /// Allocation changes of jobs given GPUs (each costs a restart delay; sizing policies:
    /// resizes of running jobs).
    pub reallocations: u64,
    /// Allocation changes that took every GPU from a job.
    pub pauses: u64,
    /// GPU-hours the jobs held (restart delays included).
    pub gpu_hours: f64,
    /// Where the jobs' lengths come from: under the round allocators the measured
    /// application models, under the sizing policies each job's `work_gpu_s` and
    /// `throughput` (a modelling choice of the user).
    pub job_lengths: String,
}

/// A round-allocated job in flight.
#[derive(Debug)]
struct Job {
    id: JobId,
    app: usize,
    replicas: u32,
    train: TrainingJob,
    /// Its completion is queued (it reached its target within the last round).
    finishing: bool,
}

/// A sized (grow-idle / fixed) job: its `min` GPUs are an ordinary job of the scheduler
/// (bound in its record's allocations); the GPUs above `min` are the subsystem's.
#[derive(Debug)]
struct SizedJob {
    id: JobId,
    priority: i32,
    submit: SimTime,
    min: u32,
    /// The most GPUs it grows to: its `max_gpus`, or fewer when its throughput model is no
    /// faster there ([`ThroughputModel::fastest_size`]).
    max: u32,
    model: ThroughputModel,
    /// GPUs held (`min` plus growth); 0 while not running.
    size: u32,
    /// `size` before this instant's passes.
    pre_size: u32,
    /// Its cell index while running.
    cell: usize,
    /// The growth GPUs' bindings (one whole GPU each).
    growth: Vec<TaskAlloc>,
    /// Node index of each growth GPU it held before this instant's passes.
    growth_nodes: Vec<usize>,
    /// Rate at `size`, thousandths of a size-1 GPU-ms per ms.
    rate: u64,
    /// Work left, thousandths of a size-1 GPU-ms.
    remaining: u128,
    /// Progress resumes here (after a resize's restart delay).
    resume: SimTime,
    /// GPU time is accounted up to here.
    since: SimTime,
    /// The run of its queued completion (the engine's record's run while it runs).
    run: u32,
    /// Its work, thousandths of a size-1 GPU-ms.
    work: u128,
    /// Time it made progress, summed over its runs, ms (its checkpoints fall at multiples
    /// of the checkpoint interval of it).
    productive: u64,
    /// `remaining` at its last checkpoint.
    ckpt_remaining: u128,
    /// Node failures of its `min` seen.
    failures: u32,
    /// It lost growth GPUs to a node going down since the last plan (a resize, whatever its
    /// size after the next passes).
    hit: bool,
    /// `resume` is the end of a resize overhead (not of a start's startup).
    resizing: bool,
    /// The resize overhead booked as unproductive with the collector: its end and key run.
    overhead: Option<(SimTime, u32)>,
}

impl SizedJob {
    /// Credits progress and held GPU-ms up to `t`; `ckpt`, the checkpoint interval, records
    /// the work left at the last checkpoint passed.
    fn advance(&mut self, t: SimTime, gpu_ms: &mut u128, ckpt: Option<SimDuration>) {
        if t > self.resume {
            let d = t.0 - self.resume.0;
            if let Some(c) = ckpt.map(|c| c.0).filter(|&c| c > 0) {
                let last = (self.productive + d) / c * c;
                if last > self.productive {
                    let upto = u128::from(last - self.productive) * u128::from(self.rate);
                    self.ckpt_remaining = self.remaining.saturating_sub(upto);
                }
            }
            self.productive += d;
            let done = u128::from(d) * u128::from(self.rate);
            self.remaining = self.remaining.saturating_sub(done);
            self.resume = t;
        }
        *gpu_ms += u128::from(self.size) * u128::from(t.0.saturating_sub(self.since.0));
        self.since = t;
    }

    /// `resume + ⌈remaining / rate⌉`, saturating.
    fn finish(&self) -> SimTime {
        let left = u64::try_from(self.remaining.div_ceil(u128::from(self.rate.max(1))))
            .unwrap_or(u64::MAX);
        SimTime(self.resume.0.saturating_add(left))
    }
}

/// Where a running sized job's growth may go, besides its cell's idle GPUs.
struct GrowthBounds {
    cell: usize,
    /// Under a required topology level: the level and the id of its `min`'s group.
    domain: Option<(Level, u32)>,
    queue: QueueId,
    /// Its queue's hard maximum, GPU-milli.
    queue_max: Option<u64>,
    /// Its `min`'s quota flavor and the models it stands for.
    flavor: Option<(u16, ModelSet)>,
}

/// The subsystem's state.
pub(super) struct Elastic {
    cfg: ElasticConfig,
    /// The required topology level of `policy.topology`, if any: growth stays in the group
    /// of that level its `min` was placed in.
    growth_level: Option<Level>,
    las: TwoQueueLas,
    pollux: Pollux,
    /// Jobs in flight by input position (submission order; the allocators' job id).
    jobs: BTreeMap<u64, Job>,
    /// Input position of each engine job it holds.
    seq_of: BTreeMap<JobId, u64>,
    prev: Allocations,
    /// Sized jobs in flight by input position.
    sized: BTreeMap<u64, SizedJob>,
    /// Input position of each sized job.
    sized_of: BTreeMap<JobId, u64>,
    /// GPU-ms the sized jobs held.
    sized_gpu_ms: u128,
    /// The next round (or plan) queued, if any.
    round_at: Option<SimTime>,
    stats: ElasticStats,
}

impl Elastic {
    pub(super) fn new(cfg: ElasticConfig, growth_level: Option<Level>) -> Elastic {
        let sizing = cfg.allocator.sizing().is_some();
        let stats = ElasticStats {
            allocator: cfg.allocator.name().to_string(),
            round_s: (!sizing).then(|| cfg.round.0 as f64 / 1000.0),
            restart_s: cfg.restart.0 as f64 / 1000.0,
            job_lengths: if sizing {
                "modelled: each job's work_gpu_s drained at its throughput model's rate for the sizes it got (a modelling choice, not recorded run times)"
            } else {
                "measured: each job trains under its application's measured goodput model until it reaches its target (step times measured on the Pollux artifact's testbed GPUs: the fleet's accelerator type does not change them)"
            }
            .into(),
            ..ElasticStats::default()
        };
        Elastic {
            las: TwoQueueLas::new(TwoQueueLas::ARTIFACT_THRESHOLD_GPU_MS),
            pollux: Pollux {
                restart_delay: cfg.restart,
            },
            cfg,
            growth_level,
            jobs: BTreeMap::new(),
            seq_of: BTreeMap::new(),
            sized: BTreeMap::new(),
            sized_of: BTreeMap::new(),
            sized_gpu_ms: 0,
            prev: Allocations::new(),
            round_at: None,
            stats,
        }
    }

    /// Whether engine job `id` is one of the subsystem's.
    pub(super) fn holds(&self, id: JobId) -> bool {
        self.seq_of.contains_key(&id)
    }

    /// Its jobs that hold no GPU (waiting for a round), in submission order.
    pub(super) fn waiting(&self) -> impl Iterator<Item = JobId> + '_ {
        self.jobs
            .values()
            .filter(|j| j.train.alloc.is_empty())
            .map(|j| j.id)
    }

    /// Whether engine job `id` is a sized elastic job.
    pub(super) fn sizes(&self, id: JobId) -> bool {
        self.sized_of.contains_key(&id)
    }

    /// The bindings of the sized jobs' growth GPUs (for the fleet audit).
    pub(super) fn growth_allocs(&self) -> impl Iterator<Item = &TaskAlloc> + '_ {
        self.sized.values().flat_map(|j| j.growth.iter())
    }

    fn model(&self, j: &Job) -> &AppModel {
        &self.cfg.models[j.app]
    }
}

/// A sized job's length at its `min` (`⌈work / rate(min)⌉` ms) as its run time: what the
/// scheduler's stages see of it (backfill, shortest-first orders). Other jobs unchanged.
pub(super) fn with_min_runtime(mut spec: crate::workload::JobSpec) -> crate::workload::JobSpec {
    if let Some(ElasticSpec::Sized(s)) = spec.elastic.as_deref() {
        let work = u128::from(s.work_gpu_ms) * 1000;
        let ms = work.div_ceil(u128::from(s.throughput.rate_milli(s.min)));
        spec.runtime = SimDuration(u64::try_from(ms).unwrap_or(u64::MAX));
    }
    spec
}

impl Simulation {
    /// A job of the stream with an elastic spec arrives (its record made). A round-allocated
    /// job is the subsystem's (the next round is queued if none is): `true`. A sized job is
    /// registered and goes on to the scheduler's queues as a gang of `min` one-GPU tasks:
    /// `false`.
    pub(super) fn elastic_arrive(
        &mut self,
        id: JobId,
        spec: &ElasticSpec,
        sink: &mut dyn JobSink,
    ) -> Result<bool, EngineError> {
        let rec = &self.jobs[id.index()];
        let seq = rec.seq;
        let Some(el) = self.elastic.as_ref() else {
            return Err(EngineError::BadJob {
                name: rec.name.to_string(),
                seq,
                message: "an elastic job needs the scenario's `[elastic]` table".into(),
            });
        };
        let bad = |message: String| EngineError::BadJob {
            name: rec.name.to_string(),
            seq,
            message,
        };
        if seq > u64::from(u32::MAX) {
            return Err(bad("more than 2^32 elastic jobs".into()));
        }
        match (spec, el.cfg.allocator.sizing()) {
            (ElasticSpec::Trained(t), None) => self.trained_arrive(id, t, sink).map(|()| true),
            (ElasticSpec::Sized(s), Some(_)) => {
                self.sized_register(id, s);
                Ok(false)
            }
            (ElasticSpec::Trained(_), Some(_)) => Err(bad(format!(
                "a `pollux` workload row under `elastic.allocator = \"{}\"`: it needs `tiresias` or `pollux`",
                el.cfg.allocator.name()
            ))),
            (ElasticSpec::Sized(_), None) => Err(bad(format!(
                "a row with `min_gpus`/`max_gpus` under `elastic.allocator = \"{}\"`: it needs `grow-idle` or `fixed`",
                el.cfg.allocator.name()
            ))),
        }
    }

    /// Registers sized job `id` (not running).
    fn sized_register(&mut self, id: JobId, spec: &SizedSpec) {
        let now = self.now;
        let rec = &self.jobs[id.index()];
        let (seq, priority, submit) = (rec.seq, rec.priority, rec.submit);
        let el = self.elastic.as_mut().expect("checked by elastic_arrive");
        el.sized.insert(
            seq,
            SizedJob {
                id,
                priority,
                submit,
                min: spec.min,
                // Never past its fastest size: a GPU more would make it no faster.
                max: spec.throughput.fastest_size(spec.min, spec.max),
                model: spec.throughput.clone(),
                size: 0,
                pre_size: 0,
                cell: 0,
                growth: Vec::new(),
                growth_nodes: Vec::new(),
                rate: 1,
                remaining: u128::from(spec.work_gpu_ms) * 1000,
                resume: now,
                since: now,
                run: super::NOT_RUNNING,
                work: u128::from(spec.work_gpu_ms) * 1000,
                productive: 0,
                ckpt_remaining: u128::from(spec.work_gpu_ms) * 1000,
                failures: 0,
                hit: false,
                resizing: false,
                overhead: None,
            },
        );
        el.sized_of.insert(id, seq);
        el.stats.jobs += 1;
        self.live_unsupported("elastic jobs ([elastic])");
    }

    /// A round-allocated job arrives (see the module docs).
    fn trained_arrive(
        &mut self,
        id: JobId,
        spec: &TrainedSpec,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        let now = self.now;
        let rec = &self.jobs[id.index()];
        let seq = rec.seq;
        let el = self.elastic.as_mut().expect("checked by elastic_arrive");
        let Ok(app) = el
            .cfg
            .models
            .binary_search_by(|m| m.name().cmp(&spec.application))
        else {
            let known: Vec<&str> = el.cfg.models.iter().map(AppModel::name).collect();
            return Err(EngineError::BadJob {
                name: rec.name.to_string(),
                seq,
                message: format!(
                    "application `{}` has no model in `elastic.models` (models: {})",
                    spec.application,
                    known.join(", ")
                ),
            });
        };
        // A job no round could ever give GPUs is rejected at submit, as a rigid one would
        // be: under Tiresias one with more replicas than the fleet has GPUs, under either
        // allocator any job on a fleet without GPUs (the nodes do not change during a run
        // with `[elastic]`). Otherwise it would wait, and the rounds go on, forever.
        let fleet_gpus: u64 = self
            .fleet
            .nodes()
            .iter()
            .filter(|n| n.schedulable)
            .map(|n| u64::from(n.gpus))
            .sum();
        let need = match el.cfg.allocator {
            RoundAllocator::Tiresias => u64::from(spec.replicas),
            RoundAllocator::Pollux | RoundAllocator::GrowIdle | RoundAllocator::Fixed => 1,
        };
        if fleet_gpus < need {
            let reason = if fleet_gpus == 0 {
                RejectReason::TaskLargerThanAnyNode
            } else {
                RejectReason::GangLargerThanCell
            };
            return self.reject(id, reason, sink);
        }
        let el = self.elastic.as_mut().expect("checked above");
        let model = &el.cfg.models[app];
        let train = match el.cfg.allocator {
            RoundAllocator::Tiresias => TrainingJob::new(Some(spec.batch_size), false),
            RoundAllocator::Pollux | RoundAllocator::GrowIdle | RoundAllocator::Fixed => {
                TrainingJob::new((model.name() == "ncf").then_some(32_768), true)
            }
        };
        el.jobs.insert(
            seq,
            Job {
                id,
                app,
                replicas: spec.replicas,
                train,
                finishing: false,
            },
        );
        el.seq_of.insert(id, seq);
        el.stats.jobs += 1;
        if el.round_at.is_none() {
            let r = el.cfg.round.0.max(1);
            let at = SimTime(now.0.div_ceil(r).max(1).saturating_mul(r));
            el.round_at = Some(at);
            self.events.push(at, EventKind::ElasticRound);
        }
        self.live_unsupported("round-allocated jobs ([elastic])");
        Ok(())
    }

    /// One round at `t` (see the module docs).
    pub(super) fn elastic_round(&mut self, t: SimTime) -> Result<(), EngineError> {
        let Some(mut el) = self.elastic.take() else {
            return Ok(());
        };
        let r = self.elastic_round_with(&mut el, t);
        self.elastic = Some(el);
        r
    }

    fn elastic_round_with(&mut self, el: &mut Elastic, t: SimTime) -> Result<(), EngineError> {
        el.round_at = None;
        el.stats.rounds += 1;
        // Each node's GPUs: wholly free ones plus those the subsystem's jobs hold.
        let mut node_gpus: Vec<u32> = self
            .fleet
            .nodes()
            .iter()
            .map(|n| if n.schedulable { n.free_whole } else { 0 })
            .collect();
        for j in el.jobs.values() {
            for &n in &j.train.alloc {
                if self.fleet.nodes()[n].schedulable {
                    node_gpus[n] += 1;
                }
            }
        }
        let active: Vec<u64> = el
            .jobs
            .iter()
            .filter(|(_, j)| !j.finishing)
            .map(|(&s, _)| s)
            .collect();
        el.prev
            .retain(|id, _| active.binary_search(&u64::from(id.0)).is_ok());
        let next = match el.cfg.allocator {
            RoundAllocator::Tiresias => {
                let v: Vec<LasJob> = active
                    .iter()
                    .map(|s| LasJob {
                        id: JobId(*s as u32),
                        gpus: el.jobs[s].replicas,
                    })
                    .collect();
                el.las.allocate(t, &v, &node_gpus, &el.prev)
            }
            RoundAllocator::GrowIdle | RoundAllocator::Fixed => {
                return Err(self.invariant("a round of a sizing policy".into()));
            }
            RoundAllocator::Pollux => {
                let perf: Vec<Option<PerfModel>> = active
                    .iter()
                    .map(|s| {
                        let j = &el.jobs[s];
                        j.train.perf_model(el.model(j))
                    })
                    .collect();
                type Goodput = Box<dyn Fn(u32, u32) -> f64>;
                let fns: Vec<Option<Goodput>> = perf
                    .iter()
                    .map(|m| {
                        m.map(|m| {
                            Box::new(move |n: u32, r: u32| m.best_batch(n, r).map_or(0.0, |b| b.0))
                                as Goodput
                        })
                    })
                    .collect();
                let v: Vec<PolluxJob> = active
                    .iter()
                    .zip(&fns)
                    .map(|(s, f)| {
                        let j = &el.jobs[s];
                        let submit = self.jobs[j.id.index()].submit;
                        PolluxJob {
                            id: JobId(*s as u32),
                            submit,
                            attained_gpu_ms: (j.train.attained_gpu_s * 1000.0) as u128,
                            age: t.saturating_since(submit),
                            restarts: j.train.restarts.unwrap_or(0),
                            max_replicas: j.train.max_replicas(el.model(j)),
                            goodput: f.as_deref(),
                        }
                    })
                    .collect();
                el.pollux.allocate(&v, &node_gpus, &el.prev)
            }
        };
        // The jobs whose allocation changes: all releases first, then the bindings.
        let changed: Vec<(u64, Vec<usize>)> = active
            .iter()
            .filter_map(|s| {
                let new = next.get(&JobId(*s as u32)).cloned().unwrap_or_default();
                (new != el.jobs[s].train.alloc).then_some((*s, new))
            })
            .collect();
        for (s, _) in &changed {
            let id = el.jobs[s].id;
            self.elastic_unbind(id)?;
        }
        for (s, new) in changed {
            let j = el.jobs.get_mut(&s).expect("active");
            let (id, app) = (j.id, j.app);
            j.train.reallocate(
                &el.cfg.models[app],
                new.clone(),
                el.cfg.restart.0 as f64 / 1000.0,
            );
            if new.is_empty() {
                el.stats.pauses += 1;
                self.counts.preemptions += 1;
                *self
                    .counts
                    .preemptions_by_reason
                    .entry("round_allocation".to_string())
                    .or_insert(0) += 1;
                let tenant = self.jobs[id.index()].tenant;
                self.tenant_stats[tenant.index()].preemptions += 1;
                let rec = &mut self.jobs[id.index()];
                rec.state = JobState::Pending;
                let x = rec.extra.get_or_insert_with(Box::default);
                x.preemptions += 1;
                x.pending_since = Some(t);
            } else {
                el.stats.reallocations += 1;
                self.elastic_bind(id, &new)?;
            }
        }
        // Train every job holding GPUs for the round; queue the completions within it.
        let secs = el.cfg.round.0 as f64 / 1000.0;
        for s in &active {
            let j = el.jobs.get_mut(s).expect("active");
            let app = &el.cfg.models[j.app];
            let held = j.train.attained_gpu_s;
            let done = j.train.step(app, secs);
            el.stats.gpu_hours += (j.train.attained_gpu_s - held) / 3600.0;
            if let Some(d) = done {
                j.finishing = true;
                let ms = ((d * 1000.0).round() as u64).min(el.cfg.round.0);
                let run = self.jobs[j.id.index()].run;
                self.events
                    .push(t + SimDuration(ms), EventKind::Finish(j.id, run));
            }
        }
        el.prev = next;
        if el.jobs.values().any(|j| !j.finishing) {
            let at = t + SimDuration(el.cfg.round.0.max(1));
            el.round_at = Some(at);
            self.events.push(at, EventKind::ElasticRound);
        }
        Ok(())
    }

    /// Before an instant's scheduling passes: every sized job's progress is credited up to
    /// now and its growth GPUs are released, so that the passes see them free (pending work
    /// takes precedence over growth). [`Simulation::elastic_after_passes`] gives back what
    /// the passes left.
    pub(super) fn elastic_before_passes(&mut self) -> Result<(), EngineError> {
        let now = self.now;
        let ckpt = self.cfg.checkpoint_interval;
        let Some(mut el) = self.elastic.take() else {
            return Ok(());
        };
        let mut r = Ok(());
        for j in el.sized.values_mut() {
            j.pre_size = j.size;
            if !j.hit {
                // (A job hit by a node going down keeps the nodes it held there.)
                j.growth_nodes.clear();
            }
            if let Some((end, run)) = j.overhead.take() {
                self.metrics.startup_cut(run, end);
            }
            if j.size == 0 {
                continue;
            }
            j.advance(now, &mut el.sized_gpu_ms, ckpt);
            let growth = std::mem::take(&mut j.growth);
            if let Err(e) = self.release_growth(j.id, &growth) {
                r = Err(e);
                break;
            }
            if !growth.is_empty() {
                j.growth_nodes = growth.iter().map(|a| a.node.index()).collect();
            }
        }
        self.elastic = Some(el);
        r
    }

    /// After an instant's scheduling passes (see *Sizing policies* in the module docs):
    /// records the sized jobs the passes started or stopped, plans every running one's size
    /// over the GPUs left idle, binds the growth and requeues the completions that moved.
    pub(super) fn elastic_after_passes(&mut self) -> Result<(), EngineError> {
        let Some(mut el) = self.elastic.take() else {
            return Ok(());
        };
        let r = self.elastic_after_passes_with(&mut el);
        el.stats.gpu_hours = el.sized_gpu_ms as f64 / 3_600_000.0;
        self.elastic = Some(el);
        r
    }

    fn elastic_after_passes_with(&mut self, el: &mut Elastic) -> Result<(), EngineError> {
        let Some(kind) = el.cfg.allocator.sizing() else {
            return Ok(());
        };
        let now = self.now;
        let ckpt = self.cfg.checkpoint_interval;
        // The passes' starts and stops.
        for j in el.sized.values_mut() {
            let rec = &self.jobs[j.id.index()];
            let running = rec.live && rec.state == JobState::Running;
            let failures = rec.extra.as_deref().map_or(0, |x| x.failures);
            if j.size > 0 && (!running || rec.run != j.run) {
                // Stopped: preempted below its min (by a pass), or its min hit by a node
                // failure or eviction before the passes (and maybe started again by them).
                j.advance(now, &mut el.sized_gpu_ms, ckpt);
                j.size = 0;
                j.resizing = false;
                if failures > j.failures {
                    // A failure of its min: back to its last checkpoint, as a rigid job.
                    j.remaining = match ckpt.filter(|c| c.0 > 0) {
                        Some(c) => {
                            j.productive = j.productive / c.0 * c.0;
                            j.ckpt_remaining
                        }
                        None => {
                            j.productive = 0;
                            j.work
                        }
                    };
                    j.ckpt_remaining = j.remaining;
                }
            }
            j.failures = failures;
            if running && j.size == 0 {
                // Started by the passes (or stopped and started again within them); its
                // progress starts after the run's startup (`[startup]`), if any.
                j.pre_size = 0;
                j.resizing = false;
                j.size = j.min;
                j.cell = rec.cell.map_or(0, |c| c.index());
                j.since = now;
                j.resume = self.startup_end(j.id).filter(|&e| e > now).unwrap_or(now);
            }
        }
        // The sizes: each cell's idle GPUs plus the running jobs' mins.
        let mut capacity = vec![0u32; self.fleet.cells().len()];
        for n in self.fleet.nodes().iter().filter(|n| n.schedulable) {
            capacity[n.cell.index()] += n.free_whole;
        }
        let running: Vec<u64> = el
            .sized
            .iter()
            .filter(|(_, j)| j.size > 0)
            .map(|(&s, _)| s)
            .collect();
        let views: Vec<ElasticJobView> = running
            .iter()
            .map(|s| {
                let j = &el.sized[s];
                capacity[j.cell] += j.min;
                ElasticJobView {
                    id: JobId(*s as u32),
                    priority: j.priority,
                    submit: j.submit,
                    seq: *s,
                    min: j.min,
                    max: j.max,
                    running: Some((j.cell, j.min)),
                }
            })
            .collect();
        el.stats.rounds += 1;
        let picks = self.bounded_plan(el, kind, &capacity, views, &running)?;
        for (s, (size, nodes)) in running.iter().zip(picks) {
            let j = el.sized.get_mut(s).expect("running");
            j.growth = self.bind_growth(j.id, &nodes)?;
            let started = j.pre_size == 0;
            let hit = std::mem::take(&mut j.hit);
            if !started && size == j.pre_size && !hit {
                // Unchanged: its GPUs back, nothing paid, its completion stands (a resize
                // overhead under way goes on).
                self.book_overhead(j);
                continue;
            }
            j.advance(now, &mut el.sized_gpu_ms, ckpt);
            j.size = size;
            j.rate = j.model.rate_milli(size);
            if !started {
                el.stats.reallocations += 1;
                j.resume = now + el.cfg.restart;
                j.resizing = true;
            }
            let at = j.finish();
            if at.0 == u64::MAX {
                return Err(EngineError::BadJob {
                    name: self.jobs[j.id.index()].name.to_string(),
                    seq: *s,
                    message: "its completion time exceeds 2^64 ms: `work_gpu_s` is too large for its throughput".into(),
                });
            }
            // A new run number: the completion queued for the old size is stale.
            let run = self.next_run;
            self.next_run = (self.next_run + 1) % super::NOT_RUNNING;
            self.jobs[j.id.index()].run = run;
            j.run = run;
            self.events.push(at, EventKind::Finish(j.id, run));
            self.book_overhead(j);
        }
        Ok(())
    }

    /// Books what is left of sized job `j`'s resize overhead (from now to its `resume`) as
    /// unproductive on its GPUs (its `min`'s and its growth): the resize overhead is no
    /// useful work (useful occupancy). Cut before the next passes and booked again after
    /// them for the GPUs it then holds.
    fn book_overhead(&mut self, j: &mut SizedJob) {
        if !j.resizing || j.resume <= self.now {
            return;
        }
        let mut allocs: Vec<TaskAlloc> = self.jobs[j.id.index()].allocs.as_slice().to_vec();
        allocs.extend_from_slice(&j.growth);
        self.metrics.startup(&self.fleet, &allocs, j.run, j.resume);
        j.overhead = Some((j.resume, j.run));
    }

    /// Node `node` fails, is evicted or is due for an autoscaler's scale-down: every sized
    /// job with a growth GPU on it releases its growth now and is re-planned at the next
    /// passes (queued), paying the resize overhead whatever its new size; its `min` part
    /// meets the failure as any job.
    pub(super) fn elastic_node_down(&mut self, node: NodeId) -> Result<(), EngineError> {
        let Some(mut el) = self.elastic.take() else {
            return Ok(());
        };
        let mut r = Ok(());
        for j in el.sized.values_mut() {
            if !j.growth.iter().any(|a| a.node == node) {
                continue;
            }
            // All its growth goes now (the passes would release it anyway); the GPUs not on
            // `node` are the nodes it held, tried first by the next plan.
            let growth = std::mem::take(&mut j.growth);
            j.growth_nodes = growth
                .iter()
                .filter(|a| a.node != node)
                .map(|a| a.node.index())
                .collect();
            j.hit = true;
            self.pass.dirty = true;
            if let Some((end, run)) = j.overhead.take() {
                self.metrics.startup_cut(run, end);
            }
            if let Err(e) = self.release_growth(j.id, &growth) {
                r = Err(e);
                break;
            }
        }
        self.elastic = Some(el);
        r
    }

    /// Binds one whole GPU on each of `nodes` (a node once per GPU) through the checked
    /// fleet state; a refusal is an invariant violation described by `what`.
    fn bind_one_gpu_each(
        &mut self,
        nodes: &[usize],
        what: impl Fn() -> String,
    ) -> Result<Vec<TaskAlloc>, EngineError> {
        let shape = TaskShape::whole_gpus(1);
        let mut out = Vec::with_capacity(nodes.len());
        for &n in nodes {
            let a = self
                .fleet
                .allocate(NodeId(n as u32), &shape, ModelSet::ANY)
                .map_err(|e| EngineError::Invariant {
                    time: self.now,
                    message: format!("{}: {e}", what()),
                })?;
            out.push(a);
        }
        Ok(out)
    }

    /// Binds one whole GPU on each of `nodes` for sized job `id`'s growth.
    fn bind_growth(&mut self, id: JobId, nodes: &[usize]) -> Result<Vec<TaskAlloc>, EngineError> {
        let shape = TaskShape::whole_gpus(1);
        let out = self.bind_one_gpu_each(nodes, || format!("growth of elastic job {id}"))?;
        if !out.is_empty() {
            self.metrics.on_allocs(&self.fleet, &out, true, false);
            let tenant = self.jobs[id.index()].tenant;
            self.metrics
                .on_tenant_alloc(tenant, shape.total_gpu_milli() * out.len() as u64, true);
        }
        Ok(out)
    }

    /// Releases sized job `id`'s growth bindings `growth`.
    fn release_growth(&mut self, id: JobId, growth: &[TaskAlloc]) -> Result<(), EngineError> {
        let now = self.now;
        for a in growth {
            self.fleet.release(a).map_err(|e| EngineError::Invariant {
                time: now,
                message: e.to_string(),
            })?;
        }
        if !growth.is_empty() {
            self.metrics.on_allocs(&self.fleet, growth, false, false);
            let tenant = self.jobs[id.index()].tenant;
            let gpu = TaskShape::whole_gpus(1).total_gpu_milli() * growth.len() as u64;
            self.metrics.on_tenant_alloc(tenant, gpu, false);
            if !self.node_sets.draining.is_empty() {
                let nodes: Vec<NodeId> = growth.iter().map(|a| a.node).collect();
                self.settle_drained(&nodes);
            }
        }
        Ok(())
    }

    /// A sized job's completion (run `run` current): its progress and GPU time are
    /// credited, its growth released, its run time set to the time it ran; the engine then
    /// completes it as any job. Nothing for other jobs.
    pub(super) fn elastic_sized_finishing(&mut self, id: JobId) -> Result<(), EngineError> {
        let now = self.now;
        let ckpt = self.cfg.checkpoint_interval;
        let Some(el) = self.elastic.as_mut() else {
            return Ok(());
        };
        let Some(seq) = el.sized_of.remove(&id) else {
            return Ok(());
        };
        let Some(mut j) = el.sized.remove(&seq) else {
            return Ok(());
        };
        j.advance(now, &mut el.sized_gpu_ms, ckpt);
        if let Some((end, run)) = j.overhead.take() {
            self.metrics.startup_cut(run, end);
        }
        el.stats.gpu_hours = el.sized_gpu_ms as f64 / 3_600_000.0;
        el.stats.completed += 1;
        self.release_growth(id, &j.growth)?;
        let rec = &mut self.jobs[id.index()];
        let from = rec
            .extra
            .as_deref()
            .and_then(|x| x.run_start)
            .or(rec.start)
            .unwrap_or(now);
        let served = rec.extra.as_deref().map_or(0, |x| x.served_ms) + now.saturating_since(from).0;
        rec.runtime = SimDuration(served);
        // The scheduler's run used the min-size length: its progress record is done.
        if let Some(x) = rec.extra.as_deref_mut() {
            x.done = SimDuration::ZERO;
        }
        Ok(())
    }

    /// Where each running sized job's growth may go (in the order of `running`): its cell,
    /// the topology domain its `min` was placed in under a required level, its queue's hard
    /// maximum and its quota flavor.
    fn growth_bounds(&self, el: &Elastic, running: &[u64]) -> Vec<GrowthBounds> {
        let tree = self.sched.quota();
        running
            .iter()
            .map(|s| {
                let j = &el.sized[s];
                let rec = &self.jobs[j.id.index()];
                let domain = el.growth_level.and_then(|l| {
                    let a = rec.allocs.as_slice().first()?;
                    Some((l, self.fleet.level_id(a.node, l)))
                });
                let flavor = tree.and_then(|t| {
                    let name = self.sched.flavor_of(j.id)?;
                    let f = t.flavors().iter().position(|x| x.name == name)?;
                    let f = u16::try_from(f).ok()?;
                    Some((f, t.flavor_models(f)))
                });
                GrowthBounds {
                    cell: j.cell,
                    domain,
                    queue: rec.queue,
                    queue_max: self
                        .cfg
                        .queues
                        .get(rec.queue.index())
                        .and_then(|q| q.config.max_gpu_milli),
                    flavor,
                }
            })
            .collect()
    }

    /// Each running sized job's size and growth nodes (a node once per GPU), in the order of
    /// `running` (`views` theirs). [`plan_sizes`] water-fills the cells' idle GPUs; the plan
    /// is then bound in input order, each job's growth on schedulable nodes of its cell with
    /// a whole free GPU — inside the domain its `min` was placed in under a required
    /// topology level, on the models of its quota flavor — first on the nodes it held before
    /// the passes, then in node order; bounded by its queue's hard maximum (the queue's
    /// usage, its jobs' mins included, plus the growth bound before it) and by its quota
    /// (each GPU checked against the queue's quota and the cohort's borrowing limits as
    /// admission checks a request, the growth bound before it counted). A job bounded below
    /// its plan gets what it can bind as its `max` and the plan is made again (each round
    /// lowers a `max`, so at most one round per job).
    fn bounded_plan(
        &self,
        el: &Elastic,
        kind: ElasticKind,
        capacity: &[u32],
        mut views: Vec<ElasticJobView>,
        running: &[u64],
    ) -> Result<Vec<(u32, Vec<usize>)>, EngineError> {
        let bounds = self.growth_bounds(el, running);
        let nodes = self.fleet.nodes();
        let one_gpu: Request = [u64::from(WHOLE_GPU_MILLI), 0, 0];
        'plan: loop {
            let plan = plan_sizes(kind, capacity, &views);
            let mut free: Vec<u32> = nodes
                .iter()
                .map(|n| if n.schedulable { n.free_whole } else { 0 })
                .collect();
            let mut tree = self
                .sched
                .quota()
                .filter(|_| bounds.iter().any(|b| b.flavor.is_some()))
                .cloned();
            let mut used: BTreeMap<QueueId, u64> = BTreeMap::new();
            let mut out = Vec::with_capacity(running.len());
            for (k, p) in plan.iter().enumerate() {
                let j = &el.sized[&running[k]];
                let b = &bounds[k];
                let size = p.map_or(j.min, |(_, n)| n);
                let want = (size - j.min) as usize;
                let mut room = want;
                if let Some(max) = b.queue_max {
                    let u = *used
                        .entry(b.queue)
                        .or_insert_with(|| self.sched.queue_usage(b.queue));
                    let left = max.saturating_sub(u) / u64::from(WHOLE_GPU_MILLI);
                    room = room.min(usize::try_from(left).unwrap_or(usize::MAX));
                }
                let fits = |n: usize| {
                    let node = &nodes[n];
                    node.cell.index() == b.cell
                        && b.domain
                            .is_none_or(|(l, d)| self.fleet.level_id(NodeId(n as u32), l) == d)
                        && b.flavor
                            .is_none_or(|(_, m)| node.model.is_none_or(|x| m.allows(x)))
                };
                let mut picked: Vec<usize> = Vec::with_capacity(room);
                let mut prev = j.growth_nodes.clone();
                prev.sort_unstable();
                let mut quota_left = true;
                let mut take = |n: usize, free: &mut [u32], picked: &mut Vec<usize>| {
                    if !quota_left || picked.len() >= room || free[n] == 0 || !fits(n) {
                        return false;
                    }
                    if let (Some(t), Some((f, _))) = (tree.as_mut(), b.flavor) {
                        if !matches!(t.check(b.queue, f, &one_gpu), QuotaFit::Fits { .. }) {
                            quota_left = false;
                            return false;
                        }
                        t.add_usage(b.queue, f, &one_gpu);
                    }
                    free[n] -= 1;
                    picked.push(n);
                    true
                };
                for n in prev {
                    take(n, &mut free, &mut picked);
                }
                for n in 0..nodes.len() {
                    while take(n, &mut free, &mut picked) {}
                }
                if picked.len() < want {
                    let bounded = b.queue_max.is_some() || b.flavor.is_some() || b.domain.is_some();
                    if !bounded {
                        return Err(self.invariant(format!(
                            "elastic sizing planned {want} growth GPUs in cell {}, but its nodes hold fewer free",
                            b.cell
                        )));
                    }
                    views[k].max = j.min + picked.len() as u32;
                    continue 'plan;
                }
                if b.queue_max.is_some() {
                    *used.get_mut(&b.queue).expect("entered above") +=
                        picked.len() as u64 * u64::from(WHOLE_GPU_MILLI);
                }
                out.push((size, picked));
            }
            return Ok(out);
        }
    }

    /// Releases job `id`'s bindings, if it holds any.
    fn elastic_unbind(&mut self, id: JobId) -> Result<(), EngineError> {
        let now = self.now;
        if self.jobs[id.index()].allocs.is_empty() {
            return Ok(());
        }
        self.release_bindings(id)?;
        let rec = &mut self.jobs[id.index()];
        let from = rec
            .extra
            .as_deref()
            .and_then(|x| x.run_start)
            .or(rec.start)
            .unwrap_or(now);
        rec.extra.get_or_insert_with(Box::default).served_ms += now.saturating_since(from).0;
        rec.allocs = Allocs::None;
        self.running -= 1;
        Ok(())
    }

    /// Binds one whole GPU per replica of `alloc` (node indices) to job `id` and starts a
    /// run.
    fn elastic_bind(&mut self, id: JobId, alloc: &[usize]) -> Result<(), EngineError> {
        let now = self.now;
        let shape = TaskShape::whole_gpus(1);
        let tasks = self.bind_one_gpu_each(alloc, || format!("round allocation of job {id}"))?;
        let cell: CellId = self.fleet.node(NodeId(alloc[0] as u32)).cell;
        let run = self.next_run;
        self.next_run = (self.next_run + 1) % super::NOT_RUNNING;
        let rec = &mut self.jobs[id.index()];
        let first = rec.start.is_none();
        if first {
            rec.start = Some(now);
        } else {
            let x = rec.extra.get_or_insert_with(Box::default);
            x.run_start = Some(now);
            if let Some(p) = x.pending_since.take() {
                x.requeued_pending_ms += now.saturating_since(p).0;
            }
        }
        rec.shape = shape;
        rec.tasks = alloc.len() as u32;
        rec.members = rec.tasks;
        rec.cell = Some(cell);
        rec.allocs = Allocs::from_vec(tasks);
        rec.state = JobState::Running;
        rec.run = run;
        let (submit, tenant, measured, kind) = (rec.submit, rec.tenant, rec.measured, rec.kind);
        let total = shape.total_gpu_milli() * u64::from(rec.tasks);
        self.metrics.on_allocs(
            &self.fleet,
            self.jobs[id.index()].allocs.as_slice(),
            true,
            false,
        );
        self.metrics.on_tenant_alloc(tenant, total, true);
        if first {
            let pre = kind == RecordedKind::PreExisting || !measured;
            self.metrics.on_start(submit, now, pre);
            self.counts.started += 1;
            self.tenant_stats[tenant.index()].started += 1;
        }
        self.running += 1;
        Ok(())
    }

    /// The completion of round-allocated job `id` (run `run`): it releases its GPUs and
    /// completes; its run time is the time it held GPUs.
    pub(super) fn elastic_finish(
        &mut self,
        id: JobId,
        run: u32,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        let now = self.now;
        let rec = &self.jobs[id.index()];
        let running = rec.live && rec.run == run && rec.state == JobState::Running;
        if !running {
            return Err(self.invariant(format!(
                "completion of round-allocated job {id} that is not running its run {run}"
            )));
        }
        self.release_bindings(id)?;
        let rec = &self.jobs[id.index()];
        let served = rec.extra.as_deref().map_or(0, |x| x.served_ms)
            + now
                .saturating_since(
                    rec.extra
                        .as_deref()
                        .and_then(|x| x.run_start)
                        .or(rec.start)
                        .unwrap_or(now),
                )
                .0;
        let rec = &mut self.jobs[id.index()];
        rec.runtime = SimDuration(served);
        let pre = rec.kind == RecordedKind::PreExisting || !rec.measured;
        self.metrics.on_finish(rec.submit, now, served, pre);
        self.settle_wait(id);
        self.counts.completed += 1;
        self.running -= 1;
        super::emit(sink, || {
            self.row(id, FinalState::Completed, Some(now), None)
        })?;
        if let Some(el) = self.elastic.as_mut() {
            if let Some(s) = el.seq_of.remove(&id) {
                el.jobs.remove(&s);
            }
            el.stats.completed += 1;
        }
        self.free_slot(id);
        Ok(())
    }

    /// The `elastic` section, with `[elastic]`.
    pub(super) fn elastic_stats(&self) -> Option<ElasticStats> {
        self.elastic.as_ref().map(|e| e.stats.clone())
    }
}
