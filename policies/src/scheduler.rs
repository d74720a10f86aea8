//! The scheduling cycle: queue order → queue limits → cell selection → gang placement, once
//! per call of [`Scheduler::schedule`].
//!
//! # Queueing strategies (Kueue semantics)
//! * [`QueueingStrategy::StrictFifo`]: when a queue's head cannot start, no later job *of that
//!   queue* is tried in this pass. Other queues are not held (field case B06).
//! * [`QueueingStrategy::BestEffortFifo`]: a job that cannot start is skipped and later jobs
//!   are tried.
//!
//! # Submit-time rejection
//! [`Scheduler::submit`] refuses, with a [`RejectReason`], a job that could never start: a
//! task larger than any node of its allowed cells, a gang larger than any allowed cell, or a
//! gang above its queue's hard maximum (field case B17). Such a job never enters a queue.
//!
//! # Cost
//! The pending set is one ordered map keyed by the queue-order key: insertion and removal
//! `O(log n)`, a pass `O(p log n)` for `p` jobs tried. Within a pass nothing is released, so a
//! job whose exact requirements already failed is skipped, and a single task that fit nowhere
//! rules out every larger single- or multi-task request with the same constraints.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::fmt;
use std::ops::Bound;
use std::str::FromStr;

use crate::cell_select::{CellSelect, FirstCell, LeastLoaded};
use crate::decision::{Decision, PendingReason, RejectReason};
use crate::ids::{CellId, JobId, QueueId};
use crate::job::PendingJob;
use crate::placement::{
    place_gang, BestFit, DotProd, Fgd, FgdBestFit, FirstFit, GpuClustering, GpuPacking, PlaceCtx,
    Placement, RandomFit, TopologyAware, WorstFit,
};
use crate::queue_order::{Fifo, OrderKey, Priority, QueueOrder};
use crate::resources::{ModelSet, TaskShape};
use crate::state::FleetState;
use crate::topology::TopologySpec;

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub enum $name {
            $($(#[$vm])* #[cfg_attr(feature = "serde", serde(rename = $s))] $variant),+
        }

        impl $name {
            /// Every valid name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            /// The name scenarios use.
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }

        impl FromStr for $name {
            type Err = String;
            /// # Errors
            /// A message listing the valid names.
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($s => Ok($name::$variant),)+
                    _ => Err(format!(
                        "unknown {} `{}`; valid names: {}",
                        stringify!($name), s, Self::NAMES.join(", ")
                    )),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

named_enum!(
    /// A queue-order policy by name.
    QueueOrderKind {
        /// [`Fifo`].
        #[default]
        Fifo => "fifo",
        /// [`Priority`].
        Priority => "priority",
    }
);

named_enum!(
    /// What a queue does when its head cannot start (Kueue `queueingStrategy`).
    QueueingStrategy {
        /// The head blocks later jobs of its own queue.
        #[default]
        StrictFifo => "strict-fifo",
        /// Later jobs are tried past a blocked head.
        BestEffortFifo => "best-effort-fifo",
    }
);

named_enum!(
    /// A placement policy by name.
    PlacementKind {
        /// [`FirstFit`].
        FirstFit => "first-fit",
        /// [`BestFit`].
        #[default]
        BestFit => "best-fit",
        /// [`WorstFit`].
        WorstFit => "worst-fit",
        /// [`RandomFit`].
        Random => "random",
        /// [`DotProd`].
        DotProd => "dot-prod",
        /// [`GpuClustering`].
        GpuClustering => "gpu-clustering",
        /// [`GpuPacking`].
        GpuPacking => "gpu-packing",
        /// [`FgdBestFit`].
        FgdBestFit => "fgd-best-fit",
        /// [`Fgd`].
        Fgd => "fgd",
        /// [`TopologyAware`].
        TopologyAware => "topology-aware",
    }
);

named_enum!(
    /// A cell-selection policy by name.
    CellSelectKind {
        /// [`FirstCell`].
        #[default]
        FirstFit => "first-fit",
        /// [`LeastLoaded`].
        LeastLoaded => "least-loaded",
    }
);

impl QueueOrderKind {
    /// The policy object.
    pub fn build(self) -> Box<dyn QueueOrder> {
        match self {
            QueueOrderKind::Fifo => Box::new(Fifo),
            QueueOrderKind::Priority => Box::new(Priority),
        }
    }
}

impl PlacementKind {
    /// The policy object.
    pub fn build(self) -> Box<dyn Placement> {
        match self {
            PlacementKind::FirstFit => Box::new(FirstFit),
            PlacementKind::BestFit => Box::new(BestFit),
            PlacementKind::WorstFit => Box::new(WorstFit),
            PlacementKind::Random => Box::new(RandomFit),
            PlacementKind::DotProd => Box::new(DotProd),
            PlacementKind::GpuClustering => Box::new(GpuClustering),
            PlacementKind::GpuPacking => Box::new(GpuPacking),
            PlacementKind::FgdBestFit => Box::new(FgdBestFit),
            PlacementKind::Fgd => Box::new(Fgd),
            PlacementKind::TopologyAware => Box::new(TopologyAware),
        }
    }
}

impl CellSelectKind {
    /// The policy object.
    pub fn build(self) -> Box<dyn CellSelect> {
        match self {
            CellSelectKind::FirstFit => Box::new(FirstCell),
            CellSelectKind::LeastLoaded => Box::new(LeastLoaded),
        }
    }
}

/// Per-queue settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QueueConfig {
    /// What the queue does when its head cannot start.
    pub strategy: QueueingStrategy,
    /// Hard maximum of GPU-milli the queue's running jobs may hold (`None` = unlimited).
    pub max_gpu_milli: Option<u64>,
}

/// The policy choices that make up a scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SchedulerConfig {
    /// Queue order.
    pub queue_order: QueueOrderKind,
    /// Placement.
    pub placement: PlacementKind,
    /// Cell selection.
    pub cell_selection: CellSelectKind,
    /// Strategy of queues beyond the queue table passed to [`Scheduler::new`].
    pub queueing_strategy: QueueingStrategy,
    /// Topology constraint of gangs (jobs of more than one task) that carry none; when
    /// `None`, the placement policy's default ([`Placement::default_topology`]).
    pub topology: Option<TopologySpec>,
}

/// Why each pending job could not start in the last pass.
pub type PendingReasons = BTreeMap<JobId, PendingReason>;

/// One pending job with its scheduler-side bookkeeping.
#[derive(Clone, Debug)]
struct Entry {
    job: PendingJob,
    /// Interned id of `job.cells` (jobs with equal cell lists share it).
    cells_key: u32,
    /// Why it could not start when last tried (`None`: not tried yet).
    reason: Option<PendingReason>,
}

/// A queue's pending jobs in queue order.
#[derive(Clone, Debug, Default)]
struct QueueJobs {
    jobs: BTreeMap<(OrderKey, JobId), Entry>,
}

/// Requirements that failed in the current pass, keyed without allocation.
type ExactKey = (TaskShape, u32, ModelSet, u32, Option<TopologySpec>);

/// Reusable per-pass buffers.
#[derive(Debug, Default)]
struct PassState {
    heads: BinaryHeap<Reverse<(OrderKey, JobId, QueueId)>>,
    failed_exact: BTreeSet<ExactKey>,
    failed_single: Vec<(TaskShape, ModelSet, u32)>,
    cells: Vec<CellId>,
}

/// A queue manager plus the scheduling cycle. Owns the pending jobs; the caller owns running
/// jobs and tells the scheduler when one ends ([`Scheduler::on_job_end`]).
///
/// Pending jobs are kept per queue, each queue a `BTreeMap` in queue order; a pass merges the
/// queues' heads through a binary heap, so a strict-FIFO queue whose head is blocked costs
/// nothing more in that pass, however long it is.
pub struct Scheduler {
    order: Box<dyn QueueOrder>,
    placement: Box<dyn Placement>,
    cell_select: Box<dyn CellSelect>,
    queues: Vec<QueueConfig>,
    default_queue: QueueConfig,
    queue_usage: Vec<u64>,
    pending: Vec<QueueJobs>,
    pending_len: usize,
    cell_sets: BTreeMap<Vec<CellId>, u32>,
    pass: PassState,
    ctx: PlaceCtx,
    default_topology: Option<TopologySpec>,
}

impl Scheduler {
    /// A scheduler with the given policies and queue settings (indexed by [`QueueId`]; a job
    /// naming a queue beyond the table gets `config.queueing_strategy` and no maximum).
    pub fn new(config: SchedulerConfig, queues: Vec<QueueConfig>) -> Scheduler {
        let placement = config.placement.build();
        let default_topology = config.topology.or(placement.default_topology());
        Scheduler {
            order: config.queue_order.build(),
            placement,
            ctx: PlaceCtx::new(),
            default_topology,
            cell_select: config.cell_selection.build(),
            queue_usage: vec![0; queues.len()],
            queues,
            default_queue: QueueConfig {
                strategy: config.queueing_strategy,
                max_gpu_milli: None,
            },
            pending: Vec::new(),
            pending_len: 0,
            cell_sets: BTreeMap::new(),
            pass: PassState::default(),
        }
    }

    fn queue(&self, q: QueueId) -> QueueConfig {
        self.queues
            .get(q.index())
            .copied()
            .unwrap_or(self.default_queue)
    }

    fn usage(&self, q: QueueId) -> u64 {
        self.queue_usage.get(q.index()).copied().unwrap_or(0)
    }

    fn usage_mut(&mut self, q: QueueId) -> &mut u64 {
        if q.index() >= self.queue_usage.len() {
            self.queue_usage.resize(q.index() + 1, 0);
        }
        &mut self.queue_usage[q.index()]
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
        let cells = (0..fleet.cells().len())
            .map(|c| CellId(c as u16))
            .filter(|&c| job.allows_cell(c));
        let mut any_cell = false;
        let mut task_fits = false;
        let mut gang_fits = false;
        for c in cells {
            any_cell = true;
            if fleet.task_fits_some_node(c, &job.shape, job.models) {
                task_fits = true;
                if fleet.can_ever_fit(c, &job.shape, job.models, job.tasks) {
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
        if let Some(max) = self.queue(job.queue).max_gpu_milli {
            if job.total_gpu_milli() > max {
                return Err(RejectReason::OverQueueMax);
            }
        }
        Ok(())
    }

    /// Enqueues a job, or refuses it for good. A CPU-only job turns the fleet's CPU index on.
    ///
    /// # Errors
    /// The [`RejectReason`] from [`Scheduler::check_resolvable`]; the job is not enqueued.
    pub fn submit(
        &mut self,
        fleet: &mut FleetState,
        mut job: PendingJob,
    ) -> Result<(), RejectReason> {
        self.check_resolvable(fleet, &job)?;
        if job.shape.num_gpu == 0 {
            fleet.enable_cpu_index();
        }
        if job.topology.is_none() && job.tasks > 1 {
            job.topology = self.default_topology;
        }
        self.ctx.observe(&job.shape, job.models, job.tasks);
        let next = self.cell_sets.len() as u32;
        let cells_key = if job.cells.is_empty() {
            u32::MAX
        } else {
            *self.cell_sets.entry(job.cells.clone()).or_insert(next)
        };
        let key = self.order.key(&job);
        let q = job.queue.index();
        if q >= self.pending.len() {
            self.pending.resize_with(q + 1, QueueJobs::default);
        }
        self.pending[q].jobs.insert(
            (key, job.id),
            Entry {
                job,
                cells_key,
                reason: None,
            },
        );
        self.pending_len += 1;
        Ok(())
    }

    /// The fleet's fragmentation now (FGD, Weng et al. ATC'23: for every node, the expected
    /// free GPU-milli a task drawn from the workload's typical tasks could not use), in
    /// GPU-milli, against the typical tasks of every job submitted so far (or the table set
    /// on the placement context). `None` before any GPU task has been submitted. `O(nodes)`,
    /// nodes unchanged since the last call cost one comparison.
    pub fn fleet_fragmentation_milli(&mut self, fleet: &FleetState) -> Option<u64> {
        self.ctx.refresh_observed_typical();
        let w = self.ctx.typical().map(|t| t.weight_total())?;
        if w == 0 {
            return None;
        }
        crate::placement::fgd::fleet_frag_scaled(&mut self.ctx, fleet)
            .map(|scaled| (scaled / u128::from(w)) as u64)
    }

    /// The placement context (node rank, seeded generator, FGD's typical tasks), to set up
    /// before the first pass.
    pub fn placement_ctx_mut(&mut self) -> &mut PlaceCtx {
        &mut self.ctx
    }

    /// Number of pending jobs.
    pub fn pending_len(&self) -> usize {
        self.pending_len
    }

    /// Pending jobs, queue by queue (ascending [`QueueId`]), each queue in queue order.
    pub fn pending(&self) -> impl Iterator<Item = &PendingJob> {
        self.pending
            .iter()
            .flat_map(|q| q.jobs.values().map(|e| &e.job))
    }

    /// Why each pending job could not start in the last pass: a strict-FIFO queue's head gives
    /// its own reason and every job behind it [`PendingReason::StrictFifoHead`]; in a
    /// best-effort queue each job gives its own (jobs not tried yet: no capacity).
    pub fn pending_reasons(&self) -> PendingReasons {
        let mut out = PendingReasons::new();
        for (q, jobs) in self.pending.iter().enumerate() {
            let strict = self.queue(QueueId(q as u32)).strategy == QueueingStrategy::StrictFifo;
            for (i, e) in jobs.jobs.values().enumerate() {
                let r = if strict && i > 0 {
                    PendingReason::StrictFifoHead
                } else {
                    e.reason.unwrap_or(PendingReason::NoCapacity)
                };
                out.insert(e.job.id, r);
            }
        }
        out
    }

    /// Calls `f(reason, jobs)` with the counts of [`Scheduler::pending_reasons`] without
    /// building the map (a metrics collector calls it after every pass): `O(1)` per strict-FIFO
    /// queue, `O(jobs)` per best-effort queue, no allocation. A reason may be reported more
    /// than once; the counts add up to [`Scheduler::pending_len`].
    pub fn count_pending_reasons(&self, mut f: impl FnMut(PendingReason, u64)) {
        for (q, jobs) in self.pending.iter().enumerate() {
            let mut it = jobs.jobs.values();
            let Some(head) = it.next() else { continue };
            if self.queue(QueueId(q as u32)).strategy == QueueingStrategy::StrictFifo {
                f(head.reason.unwrap_or(PendingReason::NoCapacity), 1);
                let rest = jobs.jobs.len() as u64 - 1;
                if rest > 0 {
                    f(PendingReason::StrictFifoHead, rest);
                }
            } else {
                for e in std::iter::once(head).chain(it) {
                    f(e.reason.unwrap_or(PendingReason::NoCapacity), 1);
                }
            }
        }
    }

    /// GPU-milli held by a queue's running jobs.
    pub fn queue_usage(&self, q: QueueId) -> u64 {
        self.usage(q)
    }

    /// Tells the scheduler a started job has ended (finished, failed or preempted) and its
    /// `gpu_milli` no longer counts against its queue.
    ///
    /// # Panics
    /// If the queue holds less than `gpu_milli`: the caller's accounting is broken.
    pub fn on_job_end(&mut self, queue: QueueId, gpu_milli: u64) {
        let u = self.usage_mut(queue);
        *u = u
            .checked_sub(gpu_milli)
            .expect("queue usage would go negative: a job ended that was never started");
    }

    /// Starts `job` now if it fits, outside the queue (replay of a recorded start, or
    /// pre-existing load): cell selection and placement as in a pass, the queue's usage is
    /// charged. Returns `None`, reserving nothing, when the gang does not fit anywhere now.
    pub fn place_now(&mut self, fleet: &mut FleetState, job: &PendingJob) -> Option<Decision> {
        if job.shape.num_gpu == 0 {
            fleet.enable_cpu_index();
        }
        let mut cells = std::mem::take(&mut self.pass.cells);
        self.cell_select.candidates(fleet, job, &mut cells);
        let mut out = None;
        for &cell in &cells {
            if let Some(tasks) =
                place_gang(self.placement.as_ref(), &mut self.ctx, fleet, cell, job)
            {
                *self.usage_mut(job.queue) += job.total_gpu_milli();
                out = Some(Decision::Start {
                    job: job.id,
                    cell,
                    tasks,
                });
                break;
            }
        }
        self.pass.cells = cells;
        out
    }

    /// One scheduling pass over every pending job in queue order (queues merged by their
    /// heads' keys). Started jobs are reserved in `fleet`, removed from the pending set and
    /// returned as [`Decision::Start`], in the order they were decided.
    pub fn schedule(&mut self, fleet: &mut FleetState) -> Vec<Decision> {
        let mut decisions = Vec::new();
        let mut pass = std::mem::take(&mut self.pass);
        pass.heads.clear();
        pass.failed_exact.clear();
        pass.failed_single.clear();
        for (q, jobs) in self.pending.iter().enumerate() {
            if let Some((&(key, id), _)) = jobs.jobs.first_key_value() {
                pass.heads.push(Reverse((key, id, QueueId(q as u32))));
            }
        }
        while let Some(Reverse((key, id, queue))) = pass.heads.pop() {
            let qc = self.queue(queue);
            let used = self.usage(queue);
            let qjobs = &mut self.pending[queue.index()].jobs;
            let entry = qjobs.get_mut(&(key, id)).expect("a head is pending");
            let job = &entry.job;
            let reason = 'try_job: {
                if let Some(max) = qc.max_gpu_milli {
                    if used + job.total_gpu_milli() > max {
                        break 'try_job Some(PendingReason::QueueMax);
                    }
                }
                let dominated = job.topology.is_none()
                    && pass.failed_single.iter().any(|&(s, m, c)| {
                        m == job.models
                            && c == entry.cells_key
                            && s.num_gpu <= job.shape.num_gpu
                            && s.gpu_milli <= job.shape.gpu_milli
                            && s.cpu_milli <= job.shape.cpu_milli
                            && s.mem_mib <= job.shape.mem_mib
                    });
                let exact = (
                    job.shape,
                    job.tasks,
                    job.models,
                    entry.cells_key,
                    job.topology,
                );
                if dominated || pass.failed_exact.contains(&exact) {
                    break 'try_job Some(PendingReason::NoCapacity);
                }
                self.cell_select.candidates(fleet, job, &mut pass.cells);
                for &cell in &pass.cells {
                    if let Some(tasks) =
                        place_gang(self.placement.as_ref(), &mut self.ctx, fleet, cell, job)
                    {
                        decisions.push(Decision::Start {
                            job: id,
                            cell,
                            tasks,
                        });
                        break 'try_job None;
                    }
                }
                if job.tasks == 1 && job.topology.is_none() {
                    pass.failed_single
                        .push((job.shape, job.models, entry.cells_key));
                }
                pass.failed_exact.insert(exact);
                Some(PendingReason::NoCapacity)
            };
            match reason {
                None => {
                    let e = qjobs.remove(&(key, id)).expect("present");
                    self.pending_len -= 1;
                    let total = e.job.total_gpu_milli();
                    *self.usage_mut(queue) += total;
                }
                Some(r) => {
                    entry.reason = Some(r);
                    if qc.strategy == QueueingStrategy::StrictFifo {
                        // The head is blocked: nothing more from this queue in this pass.
                        continue;
                    }
                }
            }
            let qjobs = &self.pending[queue.index()].jobs;
            if let Some((&(k, j), _)) = qjobs
                .range((Bound::Excluded((key, id)), Bound::Unbounded))
                .next()
            {
                pass.heads.push(Reverse((k, j, queue)));
            }
        }
        self.pass = pass;
        decisions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ModelId, TenantId};
    use crate::state::NodeSpec;
    use crate::time::SimTime;

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
            priority: 0,
            submit: SimTime(submit),
            seq: id as u64,
            shape: TaskShape::whole_gpus(gpus),
            tasks,
            models: ModelSet::ANY,
            cells: vec![],
            runtime_estimate: None,
            topology: None,
        }
    }

    fn started(d: &[Decision]) -> Vec<u32> {
        d.iter()
            .filter_map(|d| match d {
                Decision::Start { job, .. } => Some(job.0),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn strict_head_blocks_only_its_queue() {
        let mut f = fleet(&[2]);
        let strict = QueueConfig {
            strategy: QueueingStrategy::StrictFifo,
            max_gpu_milli: None,
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
        let mut counts = BTreeMap::new();
        s.count_pending_reasons(|r, n| *counts.entry(r).or_insert(0) += n);
        let mut expect = BTreeMap::new();
        for r in s.pending_reasons().values() {
            *expect.entry(*r).or_insert(0u64) += 1;
        }
        assert_eq!(counts, expect);
    }

    #[test]
    fn best_effort_skips_blocked_head() {
        let mut f = fleet(&[2]);
        let be = QueueConfig {
            strategy: QueueingStrategy::BestEffortFifo,
            max_gpu_milli: None,
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
    fn names_parse_and_list_valid_ones() {
        assert_eq!(
            "best-fit".parse::<PlacementKind>(),
            Ok(PlacementKind::BestFit)
        );
        let e = "bestfit".parse::<PlacementKind>().unwrap_err();
        assert!(e.contains("first-fit, best-fit, worst-fit, random"), "{e}");
    }
}
