//! The scheduling cycle: queue order → queue limits → admission (quota, flavors) → cell
//! selection → gang placement → preemption → backfill, once per call of
//! [`Scheduler::schedule_at`].
//!
//! # Queueing strategies (Kueue semantics)
//! * [`QueueingStrategy::StrictFifo`]: when a queue's head cannot start, no later job *of that
//!   queue* is tried in this pass. Other queues are not held (field case B06).
//! * [`QueueingStrategy::BestEffortFifo`]: a job that cannot start is skipped and later jobs
//!   are tried.
//!
//! # Order across queues
//! Each queue is a sorted map in queue order ([`crate::queue_order`]); a pass merges the
//! queues' heads through a binary heap keyed by `(tier, admission prefix, order key)`:
//!
//! * **tier**: production before batch before best-effort ([`Tier`]); all batch by default;
//! * **admission prefix** ([`AdmissionOrder`]): nothing (`queue-order`, the default); jobs
//!   within their queue's nominal quota before borrowers (`nominal-first`, Kueue's classic
//!   ordering); the queue's dominant resource share after admission (`drf`, Kueue fair
//!   sharing, [`QuotaTree::fair_order_key`]); or the queue's decayed usage over its weight
//!   (`decayed-usage`, Kueue admission fair sharing / Slurm fair-share). The prefix is
//!   computed when a head is pushed; only the admitting queue's own prefix changes when it
//!   admits, and its next head is pushed with a fresh one.
//!
//! # Submit-time rejection
//! [`Scheduler::submit`] refuses, with a [`RejectReason`], a job that could never start: a
//! task larger than any node of its allowed cells, a gang larger than any allowed cell, a
//! gang above its queue's hard maximum (field case B17), or above what its queue could ever
//! hold under quota (field case B01). Such a job never enters a queue, and never forces a
//! preemption.
//!
//! # Preemption and requeue
//! See [`crate::preemption`]. Victims are requeued with their original submit time and
//! sequence number and restart from their last checkpoint; a victim requeued during a pass is
//! not tried again in that pass (the caller runs another pass at the same instant).
//!
//! # Cost
//! Insertion and removal `O(log n)`; a pass `O(p log n)` for `p` jobs tried. Within a pass
//! (reservations aside) nothing is released, so a job whose exact requirements already failed
//! is skipped, and a single task that fit nowhere rules out every larger single- or multi-task
//! request with the same constraints. Quota checks are `O(depth)` per flavor. Preemption
//! searches (a scan of running jobs) run only for jobs that failed and only once per distinct
//! requirement per pass; with none of quota, preemption, backfill or an attempt budget
//! configured, a pass does exactly what it did before those stages existed.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::ops::Bound;

use crate::backfill::{BackfillConfig, Reservation};
use crate::cell_select::CellSelect;
use crate::decision::{Decision, PendingReason, RejectReason, WaitProfile};
use crate::fairshare::{fair_share_factor, DecayedUsage};
use crate::ids::{CellId, JobId, QueueId};
use crate::job::{kept_progress, PendingJob, Tier};
use crate::placement::{place_gang, PlaceCtx, Placement};
use crate::preemption::PreemptionConfig;
use crate::queue_order::{OrderCtx, OrderKey, QueueOrder};
use crate::quota::request;
use crate::quota::{Fungibility, QuotaFit, QuotaTree, Request};
use crate::registry::{
    AdmissionOrder, CellSelectSpec, PlacementSpec, QueueOrderSpec, QueueingStrategy,
};
use crate::resources::{ModelSet, TaskShape};
use crate::state::{FleetState, TaskAlloc};
use crate::time::{SimDuration, SimTime};
use crate::topology::TopologySpec;

mod config;
mod core;
mod ends;
mod las;
mod las_nodes;
mod las_victims;
mod pass;
mod pending;
mod preempt;
mod quota_victims;
mod redecide;
mod reserve;
mod run_counts;
mod running;
#[cfg(test)]
mod test_support;
mod victim_groups;
mod victim_key;
mod withdraw;

use self::core::*;
pub use config::{Extensions, PendingReasons, QueueConfig, SchedulerConfig};
use ends::*;
use las::*;
use las_victims::*;
use pass::*;
use pending::*;
use preempt::*;
use redecide::Redecide;
pub use redecide::RedecideOrder;
use reserve::*;
use running::*;

/// A queue manager plus the scheduling cycle. Owns the pending jobs (and, when a stage needs
/// them, a view of the running ones); the caller owns running jobs and tells the scheduler
/// when one ends ([`Scheduler::on_job_end`]) or is released after an eviction
/// ([`Scheduler::on_released`]).
///
/// Pending jobs are kept per queue, each queue a `BTreeMap` in queue order; a pass merges the
/// queues' heads through a binary heap, so a strict-FIFO queue whose head is blocked costs
/// nothing more in that pass, however long it is.
///
/// With the `serde` feature a scheduler serializes whole, less its policy objects (see
/// [`crate::live::LiveState::save`]).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Scheduler {
    core: Core,
    pending: Vec<QueueJobs>,
    pending_len: usize,
    /// The pass buffers, boxed so that a pass takes and returns them by moving a pointer
    /// (`None` only while a pass holds them).
    pass: Option<Box<PassState>>,
    /// The Tiresias preemption model's state, when on ([`redecide`]).
    redecide: Option<Box<Redecide>>,
    /// Set by a pass that left every pending job's stored reason equal to what trying it on
    /// the fleet as it is would give ([`pass::Settled`]); dropped by anything but an arrival.
    settled: Option<pass::Settled>,
}

impl Scheduler {
    /// Takes the policy objects (queue order, placement, cell selection) of `built`, a
    /// scheduler built from the same spec, in place of the stand-ins a loaded snapshot has.
    #[cfg(feature = "serde")]
    pub(crate) fn adopt_policies(&mut self, built: &mut Scheduler) {
        std::mem::swap(&mut self.core.order, &mut built.core.order);
        std::mem::swap(&mut self.core.placement, &mut built.core.placement);
        std::mem::swap(&mut self.core.cell_select, &mut built.core.cell_select);
    }

    /// A scheduler with the given policies and queue settings (indexed by [`QueueId`]; a job
    /// naming a queue beyond the table gets `config.queueing_strategy` and no maximum).
    pub fn new(config: SchedulerConfig, queues: Vec<QueueConfig>) -> Scheduler {
        let placement = config.placement.build();
        let default_topology = config.topology.or(placement.default_topology());
        Scheduler {
            core: Core {
                order: config
                    .queue_order
                    .build(&crate::queue_order::Las::default()),
                placement,
                ctx: PlaceCtx::new(),
                default_topology,
                configured_topology: config.topology,
                cell_select: config.cell_selection.build(),
                queue_usage: vec![0; queues.len()],
                reason_counts: vec![[0; PendingReason::ALL.len()]; queues.len()],
                queues,
                default_queue: QueueConfig {
                    strategy: config.queueing_strategy,
                    ..QueueConfig::default()
                },
                cell_sets: BTreeMap::new(),
                cell_set_lists: Vec::new(),
                classes: Vec::new(),
                class_ids: BTreeMap::new(),
                now: SimTime::ZERO,
                quota: None,
                fungibility: Fungibility::default(),
                admission: AdmissionOrder::default(),
                decayed: None,
                preemption: None,
                backfill: None,
                budget: None,
                running: None,
                running_ids: BTreeSet::new(),
                running_by_queue: Vec::new(),
                started_gpu_milli: 0,
                nominated: Vec::new(),
                preempted_now: (SimTime::ZERO, BTreeSet::new()),
                preempted_by: BTreeMap::new(),
                victim_counts: BTreeMap::new(),
                waits: Vec::new(),
                last_rekey: None,
                fleet_gpu_milli: 0,
                fair_factors: Vec::new(),
                reservations: Vec::new(),
                resolvable: BTreeMap::new(),
                las: match &config.queue_order {
                    QueueOrderSpec::Las {
                        thresholds_gpu_s: Some(t),
                    } => Some(crate::queue_order::Las::from_gpu_s(t)),
                    QueueOrderSpec::Las { .. } => Some(crate::queue_order::Las::default()),
                    _ => None,
                },
                las_demoted_at: None,
                las_victims: None,
                ends: None,
                run_counts: None,
                las_wakes: None,
                contexts: None,
                las_park_off: false,
                las_parked: 0,
            },
            pending: Vec::new(),
            pending_len: 0,
            pass: Some(Box::default()),
            redecide: None,
            settled: None,
        }
    }

    /// Adds the stages of `ext` (quota, admission order, preemption, backfill, budget).
    pub fn with(mut self, ext: Extensions) -> Scheduler {
        let c = &mut self.core;
        if let Some(o) = ext.order {
            c.order = o;
        }
        if let Some(p) = ext.placement {
            c.default_topology = c.configured_topology.or(p.default_topology());
            c.placement = p;
        }
        let needs_decay =
            matches!(ext.admission, AdmissionOrder::DecayedUsage) || c.order.keeps_decayed_usage();
        c.decayed = ext
            .half_life
            .or(needs_decay.then_some(SimDuration::from_secs(7 * 86_400)))
            .map(DecayedUsage::new);
        if let Some(l) = ext.preemption.as_ref().and_then(|p| p.las.clone()) {
            c.las = Some(l);
        }
        let track = ext.track_running
            || ext.redecide.is_some()
            || c.las.is_some()
            || ext.quota.is_some()
            || ext.preemption.is_some()
            || ext.backfill.is_some();
        c.quota = ext.quota;
        c.fungibility = ext.fungibility;
        c.admission = ext.admission;
        c.preemption = ext.preemption;
        c.backfill = ext.backfill;
        c.budget = ext.attempt_budget;
        c.running = track.then(Vec::new);
        self.redecide = ext.redecide.map(|o| Box::new(Redecide::new(o)));
        let c = &mut self.core;
        c.las_wakes =
            (self.redecide.is_none() && c.las.is_some() && c.running.is_some()).then(BTreeSet::new);
        c.las_victims = (c.las_wakes.is_some()
            && c.preemption.as_ref().is_some_and(|p| p.las.is_some()))
        .then(LasVictims::default);
        c.ends = (c.backfill.is_some() && c.running.is_some()).then(EndsIndex::default);
        c.run_counts = (c.preemption.is_some() && c.running.is_some()).then(|| {
            if c.quota.is_some() {
                run_counts::RunCounts::with_lost_order()
            } else {
                run_counts::RunCounts::default()
            }
        });
        self
    }

    /// The quota tree, if any.
    pub fn quota(&self) -> Option<&QuotaTree> {
        self.core.quota.as_ref()
    }

    /// The name of the quota flavor running job `job` is charged in; `None` when it is not
    /// running, running jobs are not tracked, or it takes no quota.
    pub fn flavor_of(&self, job: JobId) -> Option<&str> {
        let f = self
            .core
            .running
            .as_ref()?
            .get(job.index())?
            .as_ref()?
            .flavor?;
        let t = self.core.quota.as_ref()?;
        t.flavors().get(f as usize).map(|x| x.name.as_str())
    }

    /// See [`crate::topology::feasible`], with this scheduler's default topology.
    fn topology_feasible(&self, fleet: &FleetState, job: &PendingJob) -> bool {
        crate::placement::split::feasible(fleet, job, self.core.default_topology)
    }

    /// Checks whether `job` could ever start, without enqueueing it.
    ///
    /// # Errors
    /// The [`RejectReason`] when it never could.
    pub fn check_resolvable(
        &self,
        fleet: &FleetState,
        job: &PendingJob,
    ) -> Result<(), RejectReason> {
        if job.tasks == 0 {
            return Err(RejectReason::EmptyGang);
        }
        if job.gang_totals().is_none() {
            return Err(RejectReason::RequestTooLarge);
        }
        let cells = (0..fleet.cells().len())
            .map(|c| CellId(c as u16))
            .filter(|&c| job.allows_cell(c));
        let mut any_cell = false;
        let mut task_fits = false;
        let mut gang_fits = false;
        for c in cells {
            any_cell = true;
            // A job that takes the node's shape is judged by its members in each cell.
            let (k, shape) =
                crate::placement::split::members_in(fleet, c, job).unwrap_or((1, job.shape));
            if fleet.task_fits_some_node(c, &shape, job.models) {
                task_fits = true;
                if fleet.can_ever_fit(c, &shape, job.models, job.tasks.saturating_mul(k)) {
                    gang_fits = true;
                    break;
                }
            }
        }
        if !any_cell {
            return Err(RejectReason::NoAllowedCell);
        }
        if !task_fits {
            return Err(RejectReason::TaskLargerThanAnyNode);
        }
        if !gang_fits {
            return Err(RejectReason::GangLargerThanCell);
        }
        if !self.topology_feasible(fleet, job) {
            return Err(RejectReason::TopologyInfeasible);
        }
        let qc = self.core.queue(job.queue);
        if let Some(max) = qc.max_gpu_milli {
            if job.total_gpu_milli() > max {
                return Err(RejectReason::OverQueueMax);
            }
        }
        if let Some(tree) = &self.core.quota {
            if let (Some(flavors), false) =
                (tree.queue_flavors(job.queue), qc.tier == Tier::BestEffort)
            {
                let req = request(job);
                let usable: Vec<u16> = flavors
                    .iter()
                    .copied()
                    .filter(|&f| job.models.intersect(tree.flavor_models(f)).is_some())
                    .collect();
                if usable.is_empty() {
                    return Err(RejectReason::NoQuotaFlavor);
                }
                if !usable
                    .iter()
                    .any(|&f| tree.can_ever_fit(job.queue, f, &req))
                {
                    return Err(RejectReason::OverQuota);
                }
            }
        }
        Ok(())
    }

    /// Enqueues a job submitted at `job.submit`, or refuses it for good. See
    /// [`Scheduler::submit_at`].
    ///
    /// # Errors
    /// The [`RejectReason`] from [`Scheduler::check_resolvable`]; the job is not enqueued.
    pub fn submit(&mut self, fleet: &mut FleetState, job: PendingJob) -> Result<(), RejectReason> {
        let now = job.submit;
        self.submit_at(fleet, job, now)
    }

    /// Enqueues a job at `now`, or refuses it for good. The job's tier is set from its
    /// queue. A CPU-only job turns the fleet's CPU index on.
    ///
    /// # Errors
    /// The [`RejectReason`] from [`Scheduler::check_resolvable`]; the job is not enqueued.
    pub fn submit_at(
        &mut self,
        fleet: &mut FleetState,
        mut job: PendingJob,
        now: SimTime,
    ) -> Result<(), RejectReason> {
        // Tasks that would take the node's shape in none of its cells are rigid.
        if job.split
            && !(0..fleet.cells().len())
                .map(|c| CellId(c as u16))
                .filter(|&c| job.allows_cell(c))
                .any(|c| crate::placement::split::members_in(fleet, c, &job).is_some())
        {
            job.split = false;
        }
        if job.cells.is_empty() {
            let key = (job.shape, job.models, job.tasks, job.queue, job.split);
            let verdict = match self.core.resolvable.get(&key) {
                Some(v) => v.clone(),
                None => {
                    let v = self.check_resolvable(fleet, &job);
                    // A pure memo: emptied when full, so that a stream of distinct shapes
                    // (each refused, say) cannot grow it without bound.
                    if self.core.resolvable.len() >= RESOLVABLE_CACHE_ENTRIES {
                        self.core.resolvable.clear();
                    }
                    self.core.resolvable.insert(key, v.clone());
                    v
                }
            };
            verdict?;
        } else {
            self.check_resolvable(fleet, &job)?;
        }
        if job.shape.num_gpu == 0 {
            fleet.enable_cpu_index();
        }
        if job.topology.is_none() && job.tasks > 1 {
            job.topology = self.core.default_topology;
        }
        self.core.ctx.observe(&job.shape, job.models, job.tasks);
        job.tier = self.core.queue(job.queue).tier;
        self.enqueue(job, now);
        Ok(())
    }

    /// The fleet's fragmentation now (FGD, Weng et al. ATC'23: for every node, the expected
    /// free GPU-milli a task drawn from the workload's typical tasks could not use), in
    /// GPU-milli, against the typical tasks of every job submitted so far (or the table set
    /// on the placement context). `None` before any GPU task has been submitted. `O(nodes)`,
    /// nodes unchanged since the last call cost one comparison.
    pub fn fleet_fragmentation_milli(&mut self, fleet: &FleetState) -> Option<u64> {
        let ctx = &mut self.core.ctx;
        ctx.refresh_observed_typical();
        let w = ctx.typical().map(|t| t.weight_total())?;
        if w == 0 {
            return None;
        }
        crate::placement::fgd::fleet_frag_scaled(ctx, fleet)
            .map(|scaled| (scaled / u128::from(w)) as u64)
    }

    /// The placement context (node rank, seeded generator, FGD's typical tasks), to set up
    /// before the first pass.
    pub fn placement_ctx_mut(&mut self) -> &mut PlaceCtx {
        self.settled = None;
        &mut self.core.ctx
    }

    /// Puts a (checked) job into its queue at `now`.
    fn enqueue(&mut self, job: PendingJob, now: SimTime) {
        if let Some(r) = self.redecide.as_mut() {
            r.enqueue(job);
            self.pending_len += 1;
            return;
        }
        let c = &mut self.core;
        let next = c.cell_sets.len() as u32;
        let cells_key = if job.cells.is_empty() {
            u32::MAX
        } else {
            *c.cell_sets.entry(job.cells.clone()).or_insert_with(|| {
                c.cell_set_lists.push(job.cells.clone());
                next
            })
        };
        let key = c.key_of(&job);
        let q = job.queue.index();
        if q >= self.pending.len() {
            self.pending.resize_with(q + 1, QueueJobs::default);
        }
        if q >= c.reason_counts.len() {
            c.reason_counts.resize(q + 1, [0; PendingReason::ALL.len()]);
        }
        let strict = c.queue(job.queue).strategy == QueueingStrategy::StrictFifo;
        let indexed = c.class_skip(job.queue);
        let jobs = &mut self.pending[q].jobs;
        if indexed && jobs.classes.is_none() && jobs.order.is_empty() {
            jobs.classes = Some(BTreeMap::new());
        }
        let mut reason = None;
        if strict {
            match jobs.first_key_value() {
                Some((&first, _)) if first < (key, job.id) => {
                    reason = Some(PendingReason::StrictFifoHead);
                }
                Some((&first, _)) => {
                    // The new job goes ahead of the head: the old head now waits behind it.
                    let old = jobs.get_mut(&first).expect("present");
                    set_reason(
                        &mut c.reason_counts[q],
                        old,
                        PendingReason::StrictFifoHead,
                        now,
                    );
                }
                None => {}
            }
        }
        let mut entry = Entry {
            job,
            cells_key,
            class: NO_CLASS,
            reason,
            since: now,
            waited: None,
            search_failed: false,
            room_check_failed: false,
        };
        if jobs.classes.is_some() {
            entry.class = c.intern_class(class_of(&entry));
        }
        c.reason_counts[q][reason.unwrap_or(PendingReason::NotTried).index()] += 1;
        let id = entry.job.id;
        jobs.insert((key, id), entry);
        self.pending_len += 1;
        if let Some(s) = &mut self.settled {
            if s.arrived.len() < pass::Settled::MAX_ARRIVED {
                s.arrived.push((QueueId(q as u32), key, id));
            } else {
                self.settled = None;
            }
        }
    }

    /// Number of pending jobs.
    pub fn pending_len(&self) -> usize {
        self.pending_len
    }

    /// When the scheduler wants a pass although no job arrives or ends (the Tiresias
    /// model's demotion wake-up); the caller runs one then. `None`: no such time.
    pub fn next_wake(&self) -> Option<SimTime> {
        match &self.redecide {
            Some(r) => r.wake(),
            // LAS: the next threshold crossing of a running job (a demotion is an event).
            None => self.core.next_las_crossing(self.core.now),
        }
    }

    /// Pending jobs, queue by queue (ascending [`QueueId`]), each queue in queue order.
    pub fn pending(&self) -> impl Iterator<Item = &PendingJob> {
        self.pending
            .iter()
            .flat_map(|q| q.jobs.values().map(|e| &e.job))
    }

    /// Every pending job with why it could not start in the last pass, queue by queue in
    /// queue order: the reasons of [`Scheduler::pending_reasons`], without building a map.
    pub fn pending_with_reasons(&self) -> impl Iterator<Item = (&PendingJob, PendingReason)> {
        self.pending.iter().enumerate().flat_map(move |(q, jobs)| {
            let strict =
                self.core.queue(QueueId(q as u32)).strategy == QueueingStrategy::StrictFifo;
            jobs.jobs.values().enumerate().map(move |(i, e)| {
                let r = if strict && i > 0 {
                    PendingReason::StrictFifoHead
                } else {
                    e.reason.unwrap_or(PendingReason::NotTried)
                };
                (&e.job, r)
            })
        })
    }

    /// Why each pending job could not start in the last pass: a strict-FIFO queue's head gives
    /// its own reason and every job behind it [`PendingReason::StrictFifoHead`]; in a
    /// best-effort queue each job gives its own (jobs not tried yet:
    /// [`PendingReason::NotTried`]).
    pub fn pending_reasons(&self) -> PendingReasons {
        let mut out = PendingReasons::new();
        for (q, jobs) in self.pending.iter().enumerate() {
            let strict =
                self.core.queue(QueueId(q as u32)).strategy == QueueingStrategy::StrictFifo;
            for (i, e) in jobs.jobs.values().enumerate() {
                let r = if strict && i > 0 {
                    PendingReason::StrictFifoHead
                } else {
                    e.reason.unwrap_or(PendingReason::NotTried)
                };
                out.insert(e.job.id, r);
            }
        }
        out
    }

    /// Calls `f(reason, jobs)` with the counts of [`Scheduler::pending_reasons`] without
    /// building the map (a metrics collector calls it after every pass): `O(queues)` from the
    /// per-queue counters, no allocation. The counts add up to [`Scheduler::pending_len`].
    pub fn count_pending_reasons(&self, mut f: impl FnMut(PendingReason, u64)) {
        let counts = self.pending_reason_counts();
        for r in PendingReason::ALL {
            if counts[r.index()] > 0 {
                f(r, counts[r.index()]);
            }
        }
    }

    /// Pending jobs per reason ([`PendingReason::index`]), summed over queues: `O(queues)`.
    pub fn pending_reason_counts(&self) -> WaitProfile {
        let mut out = [0u64; PendingReason::ALL.len()];
        for counts in &self.core.reason_counts {
            for (o, c) in out.iter_mut().zip(counts) {
                *o += c;
            }
        }
        out
    }

    /// The time a job that started in the last pass spent pending, per reason (summed over
    /// all its waits since it was last taken). `None` when it never waited. Each job's profile
    /// is handed out once.
    pub fn take_wait_profile(&mut self, job: JobId) -> Option<Box<WaitProfile>> {
        self.core.waits.get_mut(job.index()).and_then(Option::take)
    }

    /// Turns on (or off) keeping a [`crate::PreemptionContext`] per preemption plan (for
    /// tests and checkers: it costs a scan of the fleet per plan). Off by default.
    pub fn record_preemption_contexts(&mut self, on: bool) {
        self.core.contexts = on.then(Vec::new);
    }

    /// The preemption contexts recorded since the last call, in the order the plans were
    /// decided (empty when recording is off).
    pub fn take_preemption_contexts(&mut self) -> Vec<crate::PreemptionContext> {
        self.core
            .contexts
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Every queue's quota usage per slot now, by [`QueueId`] index: flavor-major, GPU-milli,
    /// milli-cores, MiB within ([`QuotaTree::queue_usage`]), counting running and
    /// terminating jobs and nominated preemptors' reservations. `None` for a queue without
    /// quota; empty without a quota tree.
    pub fn quota_usage_by_queue(&self) -> Vec<Option<Vec<u64>>> {
        self.core.quota_usage_by_queue()
    }

    /// Backfill reservations made in the last pass (ascending by start).
    pub fn reservations(&self) -> &[Reservation] {
        &self.core.reservations
    }

    /// GPU-milli held by a queue's running jobs.
    pub fn queue_usage(&self, q: QueueId) -> u64 {
        self.core.usage(q)
    }

    /// Tells the scheduler a started job `job` of `queue` holding `gpu_milli` has ended
    /// (finished or killed at its time limit) at `now`: its usage no longer counts against
    /// its queue, its quota or its decayed usage.
    ///
    /// # Panics
    /// If the queue holds less than `gpu_milli`, or a tracked job is unknown: the caller's
    /// accounting is broken.
    pub fn on_job_end(&mut self, job: JobId, queue: QueueId, gpu_milli: u64, now: SimTime) {
        self.settled = None;
        if let Some(r) = self.redecide.as_mut() {
            r.on_end(job);
        }
        let c = &mut self.core;
        c.uncharge(queue, gpu_milli, now);
        c.las_forget(job);
        if let Some(reg) = c.running.as_mut() {
            let r = reg
                .get_mut(job.index())
                .and_then(Option::take)
                .expect("a tracked running job ended");
            c.untrack(job, r.job.queue);
            if let (Some(t), Some(f)) = (c.quota.as_mut(), r.flavor) {
                t.remove_usage(queue, f, &r.req);
            }
            if !c.preempted_by.is_empty() {
                c.preempted_by.remove(&r.job.seq);
            }
        }
        // Rule P4: a completion is progress; the re-preemption budget starts again.
        c.victim_counts.clear();
    }

    /// The caller moved a running job's tasks onto a hot spare at `now` (one of its nodes
    /// failed): it keeps running on `allocs`, restarted from its checkpoint `done`. Its
    /// record's bindings, run start and kept progress follow (its estimated end moves later
    /// by the progress lost); quota and usage are unchanged. Nothing to do when running jobs
    /// are not tracked.
    pub fn on_hot_swap(
        &mut self,
        job: JobId,
        allocs: &[TaskAlloc],
        now: SimTime,
        done: SimDuration,
    ) {
        if let Some(r) = self.redecide.as_mut() {
            r.leave_index();
        }
        let Some(r) = self
            .core
            .running
            .as_mut()
            .and_then(|reg| reg.get_mut(job.index()))
            .and_then(|r| r.as_mut())
        else {
            return;
        };
        let ran = now.saturating_since(r.start);
        let gained = done.0.saturating_sub(r.job.done.0);
        r.job.attained_gpu_ms = r.attained_gpu_ms(now);
        r.est_end = SimTime(r.est_end.0.saturating_add(ran.0.saturating_sub(gained)));
        r.job.done = done;
        r.start = now;
        r.allocs = allocs.to_vec();
        self.core.las_recheck(job);
        self.core.las_reindex(job, now);
        self.core.running_sync(job);
    }

    /// The caller lost a running job at `now` (its node failed): it makes no more progress,
    /// keeps its resources and quota until the caller releases them at `release_at` and calls
    /// [`Scheduler::on_released`], and is never chosen as a victim meanwhile.
    ///
    /// # Panics
    /// If running jobs are not tracked ([`Extensions::track_running`]) or `job` is not
    /// running.
    pub fn mark_lost(&mut self, job: JobId, now: SimTime, release_at: SimTime) {
        self.settled = None;
        if let Some(r) = self.redecide.as_mut() {
            r.leave_index();
        }
        let r = self
            .core
            .running
            .as_mut()
            .and_then(|reg| reg.get_mut(job.index()))
            .and_then(|r| r.as_mut())
            .expect("a lost job must be a tracked running job");
        r.evicting = Some(Eviction {
            at: now,
            release_at,
        });
        if let Some(ix) = self.core.las_victims.as_mut() {
            ix.remove(job);
        }
        self.core.running_sync(job);
    }

    /// Places `tasks` more members of running gang `job` in `cell` (its survivors kept their
    /// bindings after a node failure: [`crate::spec::GangRecovery::KeepSurvivors`]) with the
    /// scheduler's placement policy, reserving them in `fleet`; `None`, reserving nothing,
    /// when they do not all fit now. A required topology level (or `STRICT_PACK`) keeps
    /// them in the survivors' group of that level and `STRICT_SPREAD` off the survivors'
    /// nodes; other topology constraints (preferred levels, slices) are not applied to the
    /// missing members. A job that took the node's shape ([`crate::placement::split`]) misses
    /// members of its member shape in `cell`. Quota and usage are unchanged (the gang stayed
    /// admitted).
    ///
    /// # Panics
    /// If running jobs are not tracked or `job` is not a tracked running job.
    pub fn place_members(
        &mut self,
        fleet: &mut FleetState,
        job: JobId,
        cell: CellId,
        tasks: u32,
    ) -> Option<Vec<TaskAlloc>> {
        let c = &mut self.core;
        let r = c
            .running
            .as_ref()
            .and_then(|reg| reg.get(job.index()))
            .and_then(|r| r.as_ref())
            .expect("a recovering gang is a tracked running job");
        let mut missing = r.job.clone();
        let survivors: Vec<crate::NodeId> = r.allocs.iter().map(|a| a.node).collect();
        // A job that took the node's shape misses members of its member shape.
        if let Some(m) = crate::placement::split::member_job(&mut c.ctx, fleet, cell, &missing) {
            missing = m;
        }
        missing.tasks = tasks;
        let spec = missing.topology.take().unwrap_or_default();
        if missing.shape.num_gpu == 0 {
            fleet.enable_cpu_index();
        }
        let mut pushed = false;
        if let (Some(level), Some(&n)) = (spec.required_level(), survivors.first()) {
            c.ctx.push_restrict(level, fleet.level_id(n, level));
            pushed = true;
        }
        let strict_spread = spec.ray == Some(crate::topology::RayStrategy::StrictSpread);
        let saved = if strict_spread {
            let saved = c.ctx.exclude_mut().clone();
            c.ctx.exclude_mut().extend(survivors.iter().copied());
            Some(saved)
        } else {
            None
        };
        let out = if strict_spread {
            // One member per node: each placed with the earlier ones' nodes excluded too.
            let mut got: Vec<TaskAlloc> = Vec::with_capacity(tasks as usize);
            let mut ok = true;
            missing.tasks = 1;
            for _ in 0..tasks {
                match place_gang(c.placement.as_ref(), &mut c.ctx, fleet, cell, &missing) {
                    Some(mut a) => {
                        c.ctx.exclude_mut().push(a[0].node);
                        got.append(&mut a);
                    }
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                for a in got.iter().rev() {
                    fleet
                        .release(a)
                        .expect("releasing a reservation made in this call");
                }
            }
            ok.then_some(got)
        } else {
            place_gang(c.placement.as_ref(), &mut c.ctx, fleet, cell, &missing)
        };
        if let Some(saved) = saved {
            *c.ctx.exclude_mut() = saved;
        }
        if pushed {
            c.ctx.pop_restrict();
        }
        out
    }

    /// The caller made recovering gang `job` whole again at `now` on `allocs` (survivors and
    /// the members [`Scheduler::place_members`] placed): it runs again, restarted from its
    /// checkpoint `done`, and may be chosen as a victim again. Quota and usage unchanged.
    /// Nothing to do when running jobs are not tracked.
    pub fn on_recovered(
        &mut self,
        job: JobId,
        allocs: &[TaskAlloc],
        now: SimTime,
        done: SimDuration,
    ) {
        if let Some(r) = self
            .core
            .running
            .as_mut()
            .and_then(|reg| reg.get_mut(job.index()))
            .and_then(|r| r.as_mut())
        {
            r.evicting = None;
        }
        self.on_hot_swap(job, allocs, now, done);
    }

    /// The caller released, at `now`, the resources of a job that was being evicted
    /// ([`Decision::Preempt`] with a grace period, or [`Scheduler::mark_lost`]): its quota is
    /// freed and it is requeued with its original submit time and sequence number, its
    /// progress cut back to its last checkpoint as of when it stopped.
    ///
    /// # Panics
    /// If `job` is not a tracked job being evicted.
    pub fn on_released(&mut self, job: JobId, now: SimTime) {
        self.settled = None;
        let c = &mut self.core;
        let r = c
            .running
            .as_mut()
            .and_then(|reg| reg.get_mut(job.index()))
            .and_then(Option::take)
            .expect("a released job must be a tracked running job");
        c.untrack(job, r.job.queue);
        let ev = r.evicting.expect("a released job must be evicting");
        let total = r.job.total_gpu_milli();
        c.uncharge(r.job.queue, total, now);
        if let (Some(t), Some(f)) = (c.quota.as_mut(), r.flavor) {
            t.remove_usage(r.job.queue, f, &r.req);
        }
        for n in &mut c.nominated {
            n.victims.retain(|&v| v != job);
        }
        let requeued = stopped_job(&r, ev.at);
        self.enqueue(requeued, now);
    }

    /// Starts `job` now if it fits, outside the queue (replay of a recorded start, or
    /// pre-existing load): cell selection and placement as in a pass, the queue's usage (and
    /// quota, in the first of its flavors that covers the model it landed on) is charged.
    /// Returns `None`, reserving nothing, when the gang does not fit anywhere now.
    pub fn place_now(&mut self, fleet: &mut FleetState, job: &PendingJob) -> Option<Decision> {
        self.settled = None;
        if let Some(r) = self.redecide.as_mut() {
            r.leave_index();
        }
        if job.shape.num_gpu == 0 {
            fleet.enable_cpu_index();
        }
        let c = &mut self.core;
        let pass = self.pass.get_or_insert_with(Box::default);
        let mut cells = std::mem::take(&mut pass.cells);
        c.cell_select
            .candidates_with_quota(fleet, c.quota.as_ref(), job, &mut cells);
        let mut out = None;
        for &cell in &cells {
            if let Some(tasks) = place_gang(c.placement.as_ref(), &mut c.ctx, fleet, cell, job) {
                let mut job = job.clone();
                job.tier = c.queue(job.queue).tier;
                let model = tasks.first().and_then(|a| fleet.node(a.node).model);
                let flavor = c.quota.as_ref().and_then(|t| {
                    let fl = t.queue_flavors(job.queue)?;
                    fl.iter()
                        .copied()
                        .find(|&f| model.is_none_or(|m| t.flavor_models(f).allows(m)))
                });
                c.admit(&job, flavor, &tasks);
                let id = job.id;
                c.register(job);
                out = Some(Decision::Start {
                    job: id,
                    cell,
                    tasks,
                });
                break;
            }
        }
        self.pass.get_or_insert_with(Box::default).cells = cells;
        out
    }

    /// Checks the scheduler's accounting against the jobs the caller holds resources for
    /// (running and being evicted), each `(job, queue, GPU-milli)`: every queue's usage is the
    /// sum of its jobs' requests, the tracked running set is exactly these jobs, and every
    /// cohort's quota usage is what its queues' usage adds up to.
    ///
    /// # Errors
    /// A message naming the first disagreement.
    pub fn audit(
        &self,
        holding: impl IntoIterator<Item = (JobId, QueueId, u64)>,
    ) -> Result<(), String> {
        let c = &self.core;
        let mut usage: Vec<u64> = vec![0; c.queue_usage.len()];
        let mut ids = BTreeSet::new();
        for (job, q, g) in holding {
            if q.index() >= usage.len() {
                usage.resize(q.index() + 1, 0);
            }
            usage[q.index()] += g;
            ids.insert(job);
        }
        for (q, &u) in usage.iter().enumerate() {
            if c.usage(QueueId(q as u32)) != u {
                return Err(format!(
                    "queue {q}: the scheduler counts {} GPU-milli in use, running jobs hold {u}",
                    c.usage(QueueId(q as u32))
                ));
            }
        }
        if let Some(reg) = &c.running {
            let tracked: BTreeSet<JobId> = reg
                .iter()
                .enumerate()
                .filter(|(_, r)| r.is_some())
                .map(|(i, _)| JobId(i as u32))
                .collect();
            if tracked != ids {
                return Err(format!(
                    "the scheduler tracks {} running jobs, the caller holds resources for {}",
                    tracked.len(),
                    ids.len()
                ));
            }
            if let Some(t) = &c.quota {
                // Queue quota usage = the sum of their tracked jobs' charges.
                let mut by_queue: BTreeMap<(QueueId, u16), Request> = BTreeMap::new();
                let charges = reg
                    .iter()
                    .flatten()
                    .filter_map(|r| r.flavor.map(|f| (r.job.queue, f, r.req)))
                    .chain(
                        c.nominated
                            .iter()
                            .filter_map(|n| n.reserved.map(|(f, req)| (n.queue, f, req))),
                    );
                for (q, f, req) in charges {
                    let e = by_queue.entry((q, f)).or_insert([0; 3]);
                    for (a, b) in e.iter_mut().zip(req) {
                        *a += b;
                    }
                }
                for q in 0..c.queue_usage.len().max(usage.len()) {
                    let q = QueueId(q as u32);
                    let Some(u) = t.queue_usage(q) else { continue };
                    for (f, chunk) in u.chunks(3).enumerate() {
                        let want = by_queue.get(&(q, f as u16)).copied().unwrap_or([0; 3]);
                        if chunk != want {
                            return Err(format!(
                                "queue {q}: quota usage {chunk:?} in flavor {f}, its running jobs request {want:?}"
                            ));
                        }
                    }
                }
                t.audit()?;
            }
        }
        Ok(())
    }
}

/// Most verdicts [`Scheduler::submit_at`] keeps for shapes it has seen (about 300 bytes
/// each, in memory and in a live service's snapshots); the memo is emptied when full.
pub const RESOLVABLE_CACHE_ENTRIES: usize = 16_384;

#[cfg(test)]
mod tests {
    use super::test_support::started;
    use super::*;
    use crate::ids::{ModelId, TenantId};
    use crate::state::NodeSpec;

    fn fleet(gpus: &[u32]) -> FleetState {
        let nodes = gpus
            .iter()
            .enumerate()
            .map(|(i, &g)| NodeSpec {
                name: format!("n{}", i + 1),
                cell: CellId(0),
                block: 0,
                domain: i as u32,
                model: Some(ModelId(0)),
                gpus: g,
                cpu_milli: 1000,
                mem_mib: 1000,
            })
            .collect();
        FleetState::new(vec!["c".into()], vec!["G".into()], nodes).unwrap()
    }

    fn job(id: u32, queue: u32, submit: u64, gpus: u32, tasks: u32) -> PendingJob {
        PendingJob {
            id: JobId(id),
            tenant: TenantId(queue),
            queue: QueueId(queue),
            submit: SimTime(submit),
            seq: id as u64,
            shape: TaskShape::whole_gpus(gpus),
            tasks,
            ..PendingJob::default()
        }
    }

    #[test]
    fn the_shape_verdict_memo_stays_bounded() {
        // Distinct shapes, each too large for the fleet (refused at submit): every one a
        // new memo entry until the memo is full and emptied.
        let mut f = fleet(&[2]);
        let mut s = Scheduler::new(SchedulerConfig::default(), vec![QueueConfig::default()]);
        for i in 0..(RESOLVABLE_CACHE_ENTRIES as u32 + 100) {
            let mut j = job(i, 0, 0, 4, 1);
            j.shape.cpu_milli = u64::from(i);
            assert!(s.submit(&mut f, j).is_err());
            assert!(s.core.resolvable.len() <= RESOLVABLE_CACHE_ENTRIES);
        }
        // Full after 16,384 shapes; emptied at the 16,385th, which it then holds with the
        // 99 after it.
        assert_eq!(s.core.resolvable.len(), 100);
    }

    #[test]
    fn strict_head_blocks_only_its_queue() {
        let mut f = fleet(&[2]);
        let strict = QueueConfig {
            strategy: QueueingStrategy::StrictFifo,
            ..QueueConfig::default()
        };
        let mut s = Scheduler::new(SchedulerConfig::default(), vec![strict, strict]);
        s.submit(&mut f, job(0, 0, 0, 1, 1)).unwrap();
        assert_eq!(started(&s.schedule(&mut f)), vec![0]);
        s.submit(&mut f, job(1, 0, 10, 2, 1)).unwrap(); // blocked head of queue 0
        s.submit(&mut f, job(2, 0, 15, 1, 1)).unwrap(); // behind it
        s.submit(&mut f, job(3, 1, 20, 1, 1)).unwrap(); // another queue
        assert_eq!(started(&s.schedule(&mut f)), vec![3]);
        assert_eq!(
            s.pending_reasons()[&JobId(2)],
            PendingReason::StrictFifoHead
        );
        assert_eq!(s.pending_reasons()[&JobId(1)], PendingReason::NoCapacity);
        let counts = s.pending_reason_counts();
        assert_eq!(counts[PendingReason::StrictFifoHead.index()], 1);
        assert_eq!(counts[PendingReason::NoCapacity.index()], 1);
    }

    #[test]
    fn best_effort_skips_blocked_head() {
        let mut f = fleet(&[2]);
        let be = QueueConfig {
            strategy: QueueingStrategy::BestEffortFifo,
            ..QueueConfig::default()
        };
        let mut s = Scheduler::new(SchedulerConfig::default(), vec![be]);
        s.submit(&mut f, job(0, 0, 0, 1, 1)).unwrap();
        s.schedule(&mut f);
        s.submit(&mut f, job(1, 0, 10, 2, 1)).unwrap();
        s.submit(&mut f, job(2, 0, 15, 1, 1)).unwrap();
        assert_eq!(started(&s.schedule(&mut f)), vec![2]);
    }

    #[test]
    fn oversize_jobs_are_rejected_at_submit() {
        let mut f = fleet(&[8, 8]);
        let q = QueueConfig {
            strategy: QueueingStrategy::StrictFifo,
            max_gpu_milli: Some(12_000),
            ..QueueConfig::default()
        };
        let mut s = Scheduler::new(SchedulerConfig::default(), vec![q]);
        assert_eq!(
            s.submit(&mut f, job(0, 0, 0, 16, 1)),
            Err(RejectReason::TaskLargerThanAnyNode)
        );
        assert_eq!(
            s.submit(&mut f, job(1, 0, 1, 8, 2)),
            Err(RejectReason::OverQueueMax)
        );
        assert_eq!(
            s.submit(&mut f, job(2, 0, 1, 8, 3)),
            Err(RejectReason::GangLargerThanCell)
        );
        assert_eq!(s.pending_len(), 0);
    }

    #[test]
    fn wait_profiles_charge_each_reason() {
        let mut f = fleet(&[2]);
        let be = QueueConfig {
            strategy: QueueingStrategy::BestEffortFifo,
            ..QueueConfig::default()
        };
        let mut s = Scheduler::new(SchedulerConfig::default(), vec![be]);
        s.submit(&mut f, job(0, 0, 0, 2, 1)).unwrap();
        s.schedule_at(&mut f, SimTime(0));
        s.submit(&mut f, job(1, 0, 10, 1, 1)).unwrap();
        s.schedule_at(&mut f, SimTime(10));
        // Job 0 ends at 100; job 1 starts.
        s.on_job_end(JobId(0), QueueId(0), 2000, SimTime(100));
        f.release(&TaskAlloc {
            node: crate::NodeId(0),
            gpu_mask: 0b11,
            gpu_milli: 1000,
            cpu_milli: 0,
            mem_mib: 0,
        })
        .unwrap();
        assert_eq!(started(&s.schedule_at(&mut f, SimTime(100))), vec![1]);
        let w = s.take_wait_profile(JobId(1)).unwrap();
        assert_eq!(w[PendingReason::NoCapacity.index()], 90);
        assert!(s.take_wait_profile(JobId(1)).is_none());
        assert!(
            s.take_wait_profile(JobId(0)).is_none(),
            "job 0 never waited"
        );
    }

    #[test]
    fn running_jobs_walks_only_live_ids_in_id_order() {
        // Four 1-GPU jobs start on a 4-GPU node; jobs 1 and 3 end. The running set then
        // holds jobs 0 and 2, in ascending id order, and only those two ids are indexed.
        let mut f = fleet(&[4]);
        let be = QueueConfig {
            strategy: QueueingStrategy::BestEffortFifo,
            ..QueueConfig::default()
        };
        let ext = Extensions {
            track_running: true,
            ..Extensions::default()
        };
        let mut s = Scheduler::new(SchedulerConfig::default(), vec![be]).with(ext);
        for i in [3, 1, 0, 2] {
            s.submit(&mut f, job(i, 0, u64::from(i), 1, 1)).unwrap();
        }
        assert_eq!(
            started(&s.schedule_at(&mut f, SimTime(10))),
            vec![0, 1, 2, 3]
        );
        s.on_job_end(JobId(1), QueueId(0), 1000, SimTime(20));
        s.on_job_end(JobId(3), QueueId(0), 1000, SimTime(30));
        let ids: Vec<u32> = s.core.running_jobs().map(|r| r.job.id.0).collect();
        assert_eq!(ids, vec![0, 2]);
        assert_eq!(
            s.core.running_ids.iter().map(|j| j.0).collect::<Vec<_>>(),
            vec![0, 2]
        );
    }
}
