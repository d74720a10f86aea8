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
use crate::cell_select::{BestFitCell, CellSelect, FirstCell, LeastLoaded, QuotaAware};
use crate::decision::{Decision, PendingReason, RejectReason, WaitProfile};
use crate::fairshare::{fair_share_factor, DecayedUsage};
use crate::ids::{CellId, JobId, QueueId};
use crate::job::{kept_progress, PendingJob, Tier};
use crate::placement::{
    place_gang, BestFit, DotProd, Fgd, FgdBestFit, FirstFit, GpuClustering, GpuPacking, PlaceCtx,
    Placement, RandomFit, TopologyAware, WorstFit,
};
use crate::preemption::PreemptionConfig;
use crate::queue_order::{
    Fifo, Las, Multifactor, OrderCtx, OrderKey, Priority, QueueOrder, Sjf, Srtf,
};
use crate::quota::{Fungibility, QuotaFit, QuotaTree, Request};
use crate::resources::{ModelSet, TaskShape};
use crate::state::{FleetState, TaskAlloc};
use crate::time::{SimDuration, SimTime};
use crate::topology::TopologySpec;

named_enum!(
    /// A queue-order policy by name.
    QueueOrderKind {
        /// [`Fifo`].
        #[default]
        Fifo => "fifo",
        /// [`Priority`].
        Priority => "priority",
        /// [`Sjf`].
        Sjf => "sjf",
        /// [`Srtf`].
        Srtf => "srtf",
        /// [`Las`] (Tiresias 2D-LAS).
        Las => "las",
        /// [`Multifactor`] (Slurm).
        Multifactor => "multifactor",
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
        /// [`BestFitCell`].
        BestFit => "best-fit-gang",
        /// [`QuotaAware`].
        QuotaAware => "quota-aware",
    }
);

named_enum!(
    /// How jobs of different queues are ordered in a pass (the admission stage's order).
    AdmissionOrder {
        /// By the queue order's keys alone.
        #[default]
        QueueOrder => "queue-order",
        /// Jobs that fit within their queue's nominal quota before jobs that would borrow,
        /// then by key (Kueue's classic `entryOrdering`).
        NominalFirst => "nominal-first",
        /// The queue's dominant resource share after admission, lowest first (DRF, Ghodsi et
        /// al. NSDI'11, as Kueue fair sharing KEP-1714 applies it to borrowed quota).
        Drf => "drf",
        /// The queue's decayed usage over its weight, lowest first (Kueue admission fair
        /// sharing KEP-4136; Slurm fair-share with `PriorityDecayHalfLife`).
        DecayedUsage => "decayed-usage",
    }
);

impl QueueOrderKind {
    /// The policy object with default parameters.
    pub fn build(self) -> Box<dyn QueueOrder> {
        match self {
            QueueOrderKind::Fifo => Box::new(Fifo),
            QueueOrderKind::Priority => Box::new(Priority),
            QueueOrderKind::Sjf => Box::new(Sjf),
            QueueOrderKind::Srtf => Box::new(Srtf),
            QueueOrderKind::Las => Box::new(Las::default()),
            QueueOrderKind::Multifactor => Box::new(Multifactor::default()),
        }
    }
}

impl PlacementKind {
    /// True for the policies that read per-node task classes ([`FleetState::task_classes`]):
    /// a fleet placed by any other can stop keeping them
    /// ([`FleetState::stop_task_class_tracking`]).
    pub fn reads_task_classes(self) -> bool {
        matches!(self, PlacementKind::GpuClustering)
    }

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
            CellSelectKind::BestFit => Box::new(BestFitCell),
            CellSelectKind::QuotaAware => Box::new(QuotaAware),
        }
    }
}

/// Per-queue settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// What the queue does when its head cannot start.
    pub strategy: QueueingStrategy,
    /// Hard maximum of GPU-milli the queue's running jobs may hold (`None` = unlimited).
    pub max_gpu_milli: Option<u64>,
    /// Tier of the queue's jobs.
    pub tier: Tier,
    /// Fair-share weight in thousandths (1000 = weight 1): divides decayed usage
    /// (`decayed-usage`) and is the queue's shares in Slurm's fair-share factor.
    pub weight_milli: u64,
}

impl Default for QueueConfig {
    fn default() -> QueueConfig {
        QueueConfig {
            strategy: QueueingStrategy::default(),
            max_gpu_milli: None,
            tier: Tier::Batch,
            weight_milli: 1000,
        }
    }
}

/// The policy choices that make up a scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SchedulerConfig {
    /// Topology constraint of gangs (jobs of more than one task) that carry none; when
    /// `None`, the placement policy's default ([`Placement::default_topology`]).
    pub topology: Option<TopologySpec>,
    /// Queue order.
    pub queue_order: QueueOrderKind,
    /// Placement.
    pub placement: PlacementKind,
    /// Cell selection.
    pub cell_selection: CellSelectKind,
    /// Strategy of queues beyond the queue table passed to [`Scheduler::new`].
    pub queueing_strategy: QueueingStrategy,
}

/// The stages beyond [`SchedulerConfig`]: quota, admission order, preemption, backfill and
/// the pass budget. [`Extensions::default`] turns every one off.
#[derive(Default)]
pub struct Extensions {
    /// A configured queue-order object (LAS thresholds, multifactor weights); replaces
    /// [`SchedulerConfig::queue_order`]'s default-parameter one.
    pub order: Option<Box<dyn QueueOrder>>,
    /// Quotas and cohorts.
    pub quota: Option<QuotaTree>,
    /// Flavor fungibility.
    pub fungibility: Fungibility,
    /// Order across queues.
    pub admission: AdmissionOrder,
    /// Half-life of decayed usage, kept when set (needed by `decayed-usage` and the
    /// multifactor fair-share factor; default there 7 days).
    pub half_life: Option<SimDuration>,
    /// Preemption.
    pub preemption: Option<PreemptionConfig>,
    /// Backfill.
    pub backfill: Option<BackfillConfig>,
    /// Most placement attempts per pass (HTCondor's negotiation budget, field case B07): a
    /// job skipped because its exact requirements already failed costs nothing, so a class of
    /// identical jobs is charged one attempt, not its backlog. `None`: unlimited.
    pub attempt_budget: Option<u64>,
    /// Keep running jobs (needed to requeue jobs lost to node failures); implied by quota,
    /// preemption and backfill.
    pub track_running: bool,
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("order", &self.order.as_ref().map(|o| o.name()))
            .field("quota", &self.quota.is_some())
            .field("admission", &self.admission)
            .field("preemption", &self.preemption)
            .field("backfill", &self.backfill)
            .field("attempt_budget", &self.attempt_budget)
            .finish()
    }
}

/// Why each pending job could not start in the last pass.
pub type PendingReasons = BTreeMap<JobId, PendingReason>;

/// One pending job with its scheduler-side bookkeeping.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) job: PendingJob,
    /// Interned id of `job.cells` (jobs with equal cell lists share it).
    pub(crate) cells_key: u32,
    /// Why it could not start when last tried (`None`: not tried yet).
    reason: Option<PendingReason>,
    /// Since when `reason` holds.
    since: SimTime,
    /// Time pending so far, per reason; allocated when the job first waits a non-zero time
    /// (most jobs start in the pass that sees them arrive), so an entry stays small.
    waited: Option<Box<WaitProfile>>,
}

/// A queue's pending jobs in queue order.
#[derive(Clone, Debug, Default)]
struct QueueJobs {
    jobs: PendingMap,
}

/// Pending entries by `(order key, job id)`: the order map holds slab indices and the
/// entries stay put in the slab, so inserting or removing a job moves a few words in the
/// B-tree instead of shifting ~200-byte entries.
#[derive(Clone, Debug, Default)]
struct PendingMap {
    order: BTreeMap<(OrderKey, JobId), u32>,
    entries: slab::Slab<Entry>,
}

impl PendingMap {
    fn first_key_value(&self) -> Option<(&(OrderKey, JobId), &Entry)> {
        self.order
            .first_key_value()
            .map(|(k, &i)| (k, &self.entries[i as usize]))
    }

    fn get_mut(&mut self, k: &(OrderKey, JobId)) -> Option<&mut Entry> {
        let i = *self.order.get(k)?;
        Some(&mut self.entries[i as usize])
    }

    fn values(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.order.values().map(|&i| &self.entries[i as usize])
    }

    /// The first entry after `k` in queue order.
    fn next_after(&self, k: (OrderKey, JobId)) -> Option<(&(OrderKey, JobId), &Entry)> {
        self.order
            .range((Bound::Excluded(k), Bound::Unbounded))
            .next()
            .map(|(k, &i)| (k, &self.entries[i as usize]))
    }

    fn insert(&mut self, k: (OrderKey, JobId), e: Entry) {
        let i = u32::try_from(self.entries.insert(e)).expect("fewer than 2^32 pending jobs");
        if let Some(old) = self.order.insert(k, i) {
            self.entries.remove(old as usize);
        }
    }

    fn remove(&mut self, k: &(OrderKey, JobId)) -> Option<Entry> {
        let i = self.order.remove(k)?;
        Some(self.entries.remove(i as usize))
    }

    /// Empties the map, returning its entries in queue order.
    fn drain_in_order(&mut self) -> Vec<((OrderKey, JobId), Entry)> {
        let order = std::mem::take(&mut self.order);
        let mut entries = std::mem::take(&mut self.entries);
        order
            .into_iter()
            .map(|(k, i)| (k, entries.remove(i as usize)))
            .collect()
    }
}

/// Requirements that failed in the current pass, keyed without allocation: shape, tasks,
/// models, cell set, topology constraint, and how many backfill reservations were in force.
type ExactKey = (TaskShape, u32, ModelSet, u32, Option<TopologySpec>, u32);

/// A heap entry: (tier rank, admission prefix, key, job, queue), smallest first.
type Head = Reverse<(u8, u64, OrderKey, JobId, QueueId)>;

/// Reusable per-pass buffers.
#[derive(Debug, Default)]
pub(crate) struct PassState {
    heads: BinaryHeap<Head>,
    failed_exact: BTreeMap<ExactKey, PendingReason>,
    failed_single: Vec<(TaskShape, ModelSet, u32, u32, PendingReason)>,
    pub(crate) failed_preempt: BTreeSet<(QueueId, i32, Tier, TaskShape, u32, ModelSet, u32)>,
    pub(crate) cells: Vec<CellId>,
    /// Placement attempts left.
    pub(crate) budget: u64,
    /// Victims requeued in this pass (not retried before the next pass).
    requeue: Vec<PendingJob>,
    requeued: BTreeSet<JobId>,
    /// Backfill reservations made in this pass, ascending by start.
    pub(crate) reservations: Vec<Reservation>,
    /// Running jobs by estimated end (built on first use in a pass).
    pub(crate) ends: Option<Vec<(SimTime, JobId)>>,
    /// Phantoms holding the free part of nominated preemptors' room until the pass ends.
    pub(crate) held: Vec<TaskAlloc>,
    /// What running jobs offer as victims (built on the first preemption attempt).
    pub(crate) run_summary: Option<crate::preemption::RunSummary>,
}

/// An eviction in progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Eviction {
    /// When the job stopped making progress.
    pub(crate) at: SimTime,
    /// When its resources are released.
    pub(crate) release_at: SimTime,
}

/// A running job as the scheduler keeps it (Kueue's cache of admitted workloads).
#[derive(Clone, Debug)]
pub(crate) struct Running {
    pub(crate) job: PendingJob,
    pub(crate) flavor: Option<u16>,
    /// What is charged to quota (zero for best-effort and queues without quota).
    pub(crate) req: Request,
    pub(crate) allocs: Vec<TaskAlloc>,
    pub(crate) start: SimTime,
    pub(crate) est_end: SimTime,
    pub(crate) evicting: Option<Eviction>,
}

impl Running {
    /// Work lost if the job were stopped at `now`, GPU-milli·ms: progress since its last
    /// checkpoint times its accelerators.
    pub(crate) fn lost_gpu_milli_ms(&self, now: SimTime) -> u128 {
        let ran = now.saturating_since(self.start);
        let total = SimDuration(self.job.done.0 + ran.0);
        let kept = kept_progress(total, self.job.checkpoint_interval);
        (total.0 - kept.0) as u128 * self.job.total_gpu_milli() as u128
    }

    /// GPU·ms of service at `now`, earlier runs included.
    pub(crate) fn attained_gpu_ms(&self, now: SimTime) -> u64 {
        let ran = now.saturating_since(self.start).0 as u128;
        self.job.attained_gpu_ms + (ran * self.job.total_gpu_milli() as u128 / 1000) as u64
    }
}

/// A preemptor waiting for its victims' grace periods. Its request is reserved in its
/// queue's quota meanwhile, so that no other job claims the same nominal quota (or reclaims
/// for it a second time) before it starts.
#[derive(Clone, Debug)]
pub(crate) struct Nomination {
    pub(crate) preemptor: JobId,
    pub(crate) queue: QueueId,
    pub(crate) key: OrderKey,
    pub(crate) victims: Vec<JobId>,
    /// Quota held for it: flavor and request.
    pub(crate) reserved: Option<(u16, Request)>,
    /// Where it will go: the placement its victims make room for.
    pub(crate) allocs: Vec<TaskAlloc>,
}

/// Everything but the pending queues, so that a pass can borrow one pending entry and the
/// rest of the scheduler at once.
pub(crate) struct Core {
    pub(crate) order: Box<dyn QueueOrder>,
    pub(crate) placement: Box<dyn Placement>,
    /// The placement context (node rank, seeded generator, FGD's typical tasks).
    pub(crate) ctx: PlaceCtx,
    default_topology: Option<TopologySpec>,
    pub(crate) cell_select: Box<dyn CellSelect>,
    queues: Vec<QueueConfig>,
    default_queue: QueueConfig,
    queue_usage: Vec<u64>,
    cell_sets: BTreeMap<Vec<CellId>, u32>,
    pub(crate) now: SimTime,
    pub(crate) quota: Option<QuotaTree>,
    fungibility: Fungibility,
    admission: AdmissionOrder,
    pub(crate) decayed: Option<DecayedUsage>,
    pub(crate) preemption: Option<PreemptionConfig>,
    pub(crate) backfill: Option<BackfillConfig>,
    budget: Option<u64>,
    /// Running jobs by [`JobId`], when kept.
    pub(crate) running: Option<Vec<Option<Box<Running>>>>,
    pub(crate) nominated: Vec<Nomination>,
    /// Jobs preempted at `.0` (the current instant): never preempted twice at one instant, so
    /// a victim that restarts elsewhere at once is not thrashed.
    pub(crate) preempted_now: (SimTime, BTreeSet<JobId>),
    /// For each job in flight that was preempted (by input sequence), the sequence numbers of
    /// its preemptors: it never preempts them back (rule P2).
    pub(crate) preempted_by: BTreeMap<u64, Vec<u64>>,
    /// Per queue, pending jobs per stored reason (index [`PendingReason::index`]; a job not
    /// tried yet counts as [`PendingReason::NotTried`]).
    reason_counts: Vec<WaitProfile>,
    /// Wait profiles of jobs started since the caller last took them, by [`JobId`].
    waits: Vec<Option<Box<WaitProfile>>>,
    last_rekey: Option<SimTime>,
    fleet_gpu_milli: u64,
    fair_factors: Vec<u32>,
    reservations: Vec<Reservation>,
    /// [`Scheduler::check_resolvable`]'s verdicts for jobs that name no cells, by (shape,
    /// models, gang size, queue): it reads only those, the fleet's empty-node capacity
    /// classes and the queue and quota configuration, none of which change during a run.
    resolvable: BTreeMap<(TaskShape, ModelSet, u32, QueueId), Result<(), RejectReason>>,
}

/// A queue manager plus the scheduling cycle. Owns the pending jobs (and, when a stage needs
/// them, a view of the running ones); the caller owns running jobs and tells the scheduler
/// when one ends ([`Scheduler::on_job_end`]) or is released after an eviction
/// ([`Scheduler::on_released`]).
///
/// Pending jobs are kept per queue, each queue a `BTreeMap` in queue order; a pass merges the
/// queues' heads through a binary heap, so a strict-FIFO queue whose head is blocked costs
/// nothing more in that pass, however long it is.
pub struct Scheduler {
    core: Core,
    pending: Vec<QueueJobs>,
    pending_len: usize,
    /// The pass buffers, boxed so that a pass takes and returns them by moving a pointer
    /// (`None` only while a pass holds them).
    pass: Option<Box<PassState>>,
}

/// Outcome of trying one job.
enum Outcome {
    Started,
    Blocked(PendingReason),
    /// Requeued in this pass: not tried, does not block its queue.
    Skipped,
}

/// The quota request of a job (GPU-milli, milli-cores, MiB for the whole gang).
pub(crate) fn request(job: &PendingJob) -> Request {
    let t = job.tasks as u64;
    [
        job.shape.total_gpu_milli() * t,
        job.shape.cpu_milli * t,
        job.shape.mem_mib * t,
    ]
}

impl Scheduler {
    /// A scheduler with the given policies and queue settings (indexed by [`QueueId`]; a job
    /// naming a queue beyond the table gets `config.queueing_strategy` and no maximum).
    pub fn new(config: SchedulerConfig, queues: Vec<QueueConfig>) -> Scheduler {
        let placement = config.placement.build();
        let default_topology = config.topology.or(placement.default_topology());
        Scheduler {
            core: Core {
                order: config.queue_order.build(),
                placement,
                ctx: PlaceCtx::new(),
                default_topology,
                cell_select: config.cell_selection.build(),
                queue_usage: vec![0; queues.len()],
                reason_counts: vec![[0; PendingReason::ALL.len()]; queues.len()],
                queues,
                default_queue: QueueConfig {
                    strategy: config.queueing_strategy,
                    ..QueueConfig::default()
                },
                cell_sets: BTreeMap::new(),
                now: SimTime::ZERO,
                quota: None,
                fungibility: Fungibility::default(),
                admission: AdmissionOrder::default(),
                decayed: None,
                preemption: None,
                backfill: None,
                budget: None,
                running: None,
                nominated: Vec::new(),
                preempted_now: (SimTime::ZERO, BTreeSet::new()),
                preempted_by: BTreeMap::new(),
                waits: Vec::new(),
                last_rekey: None,
                fleet_gpu_milli: 0,
                fair_factors: Vec::new(),
                reservations: Vec::new(),
                resolvable: BTreeMap::new(),
            },
            pending: Vec::new(),
            pending_len: 0,
            pass: Some(Box::default()),
        }
    }

    /// Adds the stages of `ext` (quota, admission order, preemption, backfill, budget).
    pub fn with(mut self, ext: Extensions) -> Scheduler {
        let c = &mut self.core;
        if let Some(o) = ext.order {
            c.order = o;
        }
        let needs_decay = matches!(ext.admission, AdmissionOrder::DecayedUsage)
            || c.order.name() == "multifactor";
        c.decayed = ext
            .half_life
            .or(needs_decay.then_some(SimDuration::from_secs(7 * 86_400)))
            .map(DecayedUsage::new);
        let track = ext.track_running
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
        self
    }

    /// The quota tree, if any.
    pub fn quota(&self) -> Option<&QuotaTree> {
        self.core.quota.as_ref()
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
        if job.cells.is_empty() {
            let key = (job.shape, job.models, job.tasks, job.queue);
            let verdict = match self.core.resolvable.get(&key) {
                Some(v) => v.clone(),
                None => {
                    let v = self.check_resolvable(fleet, &job);
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
        &mut self.core.ctx
    }

    /// Puts a (checked) job into its queue at `now`.
    fn enqueue(&mut self, job: PendingJob, now: SimTime) {
        let c = &mut self.core;
        let next = c.cell_sets.len() as u32;
        let cells_key = if job.cells.is_empty() {
            u32::MAX
        } else {
            *c.cell_sets.entry(job.cells.clone()).or_insert(next)
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
        let jobs = &mut self.pending[q].jobs;
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
        let entry = Entry {
            job,
            cells_key,
            reason,
            since: now,
            waited: None,
        };
        c.reason_counts[q][reason.unwrap_or(PendingReason::NotTried).index()] += 1;
        jobs.insert((key, entry.job.id), entry);
        self.pending_len += 1;
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
        let c = &mut self.core;
        c.uncharge(queue, gpu_milli, now);
        if let Some(reg) = c.running.as_mut() {
            let r = reg
                .get_mut(job.index())
                .and_then(Option::take)
                .expect("a tracked running job ended");
            if let (Some(t), Some(f)) = (c.quota.as_mut(), r.flavor) {
                t.remove_usage(queue, f, &r.req);
            }
            if !c.preempted_by.is_empty() {
                c.preempted_by.remove(&r.job.seq);
            }
        }
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
    }

    /// The caller lost a running job at `now` (its node failed): it makes no more progress,
    /// keeps its resources and quota until the caller releases them at `release_at` and calls
    /// [`Scheduler::on_released`], and is never chosen as a victim meanwhile.
    ///
    /// # Panics
    /// If running jobs are not tracked ([`Extensions::track_running`]) or `job` is not
    /// running.
    pub fn mark_lost(&mut self, job: JobId, now: SimTime, release_at: SimTime) {
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
    }

    /// The caller released, at `now`, the resources of a job that was being evicted
    /// ([`Decision::Preempt`] with a grace period, or [`Scheduler::mark_lost`]): its quota is
    /// freed and it is requeued with its original submit time and sequence number, its
    /// progress cut back to its last checkpoint as of when it stopped.
    ///
    /// # Panics
    /// If `job` is not a tracked job being evicted.
    pub fn on_released(&mut self, job: JobId, now: SimTime) {
        let c = &mut self.core;
        let r = c
            .running
            .as_mut()
            .and_then(|reg| reg.get_mut(job.index()))
            .and_then(Option::take)
            .expect("a released job must be a tracked running job");
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

    /// One scheduling pass at the current time (the last [`Scheduler::schedule_at`] time, or
    /// the latest submit).
    pub fn schedule(&mut self, fleet: &mut FleetState) -> Vec<Decision> {
        let now = self.core.now;
        self.schedule_at(fleet, now)
    }

    /// One scheduling pass at `now` over every pending job in the cross-queue order (see the
    /// module docs). Started jobs are reserved in `fleet`, removed from the pending set and
    /// returned as [`Decision::Start`]; evictions are returned as [`Decision::Preempt`]
    /// (a zero-grace victim is released in `fleet` and requeued at once), in the order they
    /// were decided.
    pub fn schedule_at(&mut self, fleet: &mut FleetState, now: SimTime) -> Vec<Decision> {
        let mut decisions = Vec::new();
        self.schedule_into(fleet, now, &mut decisions);
        decisions
    }

    /// As [`Scheduler::schedule_at`], appending the decisions to `decisions` (a buffer the
    /// caller reuses from pass to pass, so a pass allocates no list of its own).
    pub fn schedule_into(
        &mut self,
        fleet: &mut FleetState,
        now: SimTime,
        decisions: &mut Vec<Decision>,
    ) {
        self.core.now = now;
        self.core.fleet_gpu_milli = fleet.cells().iter().map(|c| c.available_gpu_milli).sum();
        self.maybe_rekey(now);
        let mut pass = self.pass.take().unwrap_or_default();
        pass.heads.clear();
        pass.failed_exact.clear();
        pass.failed_single.clear();
        pass.failed_preempt.clear();
        pass.requeued.clear();
        pass.reservations.clear();
        pass.ends = None;
        pass.run_summary = None;
        pass.budget = self.core.budget.unwrap_or(u64::MAX);
        // Preemptors whose victims are gone go first: the room was made for them.
        if !self.core.nominated.is_empty() {
            let ready: Vec<Nomination> = self
                .core
                .nominated
                .iter()
                .filter(|n| n.victims.is_empty())
                .cloned()
                .collect();
            self.core.nominated.retain(|n| !n.victims.is_empty());
            for n in ready {
                self.core.unreserve(&n);
                let q = n.queue.index();
                let Some(entry) = self
                    .pending
                    .get_mut(q)
                    .and_then(|p| p.jobs.get_mut(&(n.key, n.preemptor)))
                else {
                    continue;
                };
                let out = try_job(
                    &mut self.core,
                    &mut pass,
                    fleet,
                    entry,
                    n.key,
                    decisions,
                    false,
                );
                self.settle(q, n.key, n.preemptor, out, &mut pass);
            }
        }
        for (q, jobs) in self.pending.iter().enumerate() {
            if let Some((&(key, id), e)) = jobs.jobs.first_key_value() {
                let h = self.core.head(QueueId(q as u32), key, id, &e.job);
                pass.heads.push(h);
            }
        }
        // The room nominated preemptors still wait for is theirs: its free part is held by
        // phantoms for the rest of the pass (Kubernetes' nominated node).
        pass.held = if self.core.nominated.is_empty() {
            Vec::new()
        } else {
            crate::backfill::apply_phantom_allocs(
                fleet,
                self.core.nominated.iter().flat_map(|n| n.allocs.iter()),
            )
        };
        while let Some(Reverse((_, _, key, id, queue))) = pass.heads.pop() {
            if pass.budget == 0 {
                break;
            }
            let q = queue.index();
            let entry = self.pending[q]
                .jobs
                .get_mut(&(key, id))
                .expect("a head is pending");
            let out = if pass.requeued.contains(&id) {
                Outcome::Skipped
            } else {
                try_job(
                    &mut self.core,
                    &mut pass,
                    fleet,
                    entry,
                    key,
                    decisions,
                    true,
                )
            };
            let blocked_strict = matches!(out, Outcome::Blocked(_))
                && self.core.queue(queue).strategy == QueueingStrategy::StrictFifo;
            self.settle(q, key, id, out, &mut pass);
            if blocked_strict {
                // The head is blocked: nothing more from this queue in this pass.
                continue;
            }
            if let Some((&(k, j), e)) = self.pending[q].jobs.next_after((key, id)) {
                let h = self.core.head(queue, k, j, &e.job);
                pass.heads.push(h);
            }
        }
        let held = std::mem::take(&mut pass.held);
        crate::backfill::release_phantoms(fleet, &held);
        self.core.reservations = std::mem::take(&mut pass.reservations);
        self.pass = Some(pass);
    }

    /// Applies a try's outcome to the entry `(key, id)` of queue `q`, then requeues the
    /// pass's victims.
    fn settle(&mut self, q: usize, key: OrderKey, id: JobId, out: Outcome, pass: &mut PassState) {
        let now = self.core.now;
        match out {
            Outcome::Started => {
                let mut e = self.pending[q].jobs.remove(&(key, id)).expect("present");
                self.pending_len -= 1;
                let counts = &mut self.core.reason_counts[q];
                let old = e.reason.unwrap_or(PendingReason::NotTried);
                counts[old.index()] -= 1;
                charge(&mut e, old, now);
                if let Some(waited) = e.waited.take() {
                    let w = &mut self.core.waits;
                    if id.index() >= w.len() {
                        w.resize(id.index() + 1, None);
                    }
                    match &mut w[id.index()] {
                        Some(prev) => {
                            for (a, b) in prev.iter_mut().zip(waited.iter()) {
                                *a += b;
                            }
                        }
                        slot => *slot = Some(waited),
                    }
                }
                self.core.drop_nomination(id);
                self.core.register(e.job);
            }
            Outcome::Blocked(r) => {
                let e = self.pending[q].jobs.get_mut(&(key, id)).expect("present");
                set_reason(&mut self.core.reason_counts[q], e, r, now);
            }
            Outcome::Skipped => {}
        }
        for job in std::mem::take(&mut pass.requeue) {
            pass.requeued.insert(job.id);
            self.enqueue(job, now);
        }
    }

    /// Recomputes every pending key when the order is dynamic and its interval has passed.
    fn maybe_rekey(&mut self, now: SimTime) {
        let Some(iv) = self.core.order.rekey_interval() else {
            return;
        };
        if self.core.last_rekey.is_some_and(|t| now < t + iv) {
            return;
        }
        self.core.last_rekey = Some(now);
        self.core.refresh_fair_factors(now, self.pending.len());
        let c = &mut self.core;
        for jobs in &mut self.pending {
            for ((_, id), e) in jobs.jobs.drain_in_order() {
                let k = c.key_of(&e.job);
                for n in &mut c.nominated {
                    if n.preemptor == id {
                        n.key = k;
                    }
                }
                jobs.jobs.insert((k, id), e);
            }
        }
    }
}

/// Moves an entry to reason `r` at `now`, charging the time since its last change to its old
/// reason.
fn set_reason(counts: &mut WaitProfile, e: &mut Entry, r: PendingReason, now: SimTime) {
    let old = e.reason.unwrap_or(PendingReason::NotTried);
    if e.reason == Some(r) {
        return;
    }
    charge(e, old, now);
    e.since = now;
    counts[old.index()] -= 1;
    counts[r.index()] += 1;
    e.reason = Some(r);
}

/// Charges the time since the entry's last reason change to reason `old`.
fn charge(e: &mut Entry, old: PendingReason, now: SimTime) {
    let dt = now.saturating_since(e.since).0;
    if dt > 0 {
        e.waited
            .get_or_insert_with(|| Box::new([0; PendingReason::ALL.len()]))[old.index()] += dt;
    }
}

/// The job to requeue after a run stopped at `at`: progress cut back to its last checkpoint,
/// service and remaining estimate updated; submit time and sequence unchanged.
pub(crate) fn stopped_job(r: &Running, at: SimTime) -> PendingJob {
    let mut job = r.job.clone();
    let ran = at.saturating_since(r.start);
    let total = SimDuration(job.done.0 + ran.0);
    let kept = kept_progress(total, job.checkpoint_interval);
    let gained = kept.0.saturating_sub(job.done.0);
    job.runtime_estimate = job
        .runtime_estimate
        .map(|e| SimDuration(e.0.saturating_sub(gained)));
    job.attained_gpu_ms = r.attained_gpu_ms(at);
    job.done = kept;
    job
}

impl Core {
    pub(crate) fn queue(&self, q: QueueId) -> QueueConfig {
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

    /// The job's key in its queue now.
    fn key_of(&self, job: &PendingJob) -> OrderKey {
        let ctx = OrderCtx {
            now: self.now,
            fair_share_permille: &self.fair_factors,
            fleet_gpu_milli: self.fleet_gpu_milli,
        };
        self.order.key_at(job, &ctx)
    }

    /// Slurm fair-share factors per queue from decayed usage, for dynamic orders.
    fn refresh_fair_factors(&mut self, now: SimTime, queues: usize) {
        let Some(d) = &self.decayed else {
            return;
        };
        let n = queues.max(self.queues.len());
        let usage: Vec<u128> = (0..n).map(|q| d.value(q, now)).collect();
        let shares: Vec<u64> = (0..n)
            .map(|q| self.queue(QueueId(q as u32)).weight_milli)
            .collect();
        let total_u: u128 = usage.iter().sum();
        let total_s: u64 = shares.iter().sum();
        self.fair_factors = (0..n)
            .map(|q| fair_share_factor(usage[q], total_u, shares[q], total_s))
            .collect();
    }

    /// The heap entry of a queue head.
    fn head(&self, q: QueueId, key: OrderKey, id: JobId, job: &PendingJob) -> Head {
        let tier = self.queue(q).tier;
        let prefix = match self.admission {
            AdmissionOrder::QueueOrder => 0,
            AdmissionOrder::NominalFirst | AdmissionOrder::Drf => match self.first_flavor(job) {
                None => 0,
                Some(f) => {
                    let t = self.quota.as_ref().expect("a flavor implies quota");
                    let req = request(job);
                    if self.admission == AdmissionOrder::Drf {
                        t.fair_order_key(q, f, &req)
                    } else {
                        match t.check(q, f, &req) {
                            QuotaFit::Fits { borrows: false } => 0,
                            _ => 1,
                        }
                    }
                }
            },
            AdmissionOrder::DecayedUsage => match &self.decayed {
                None => 0,
                Some(d) => {
                    let w = self.queue(q).weight_milli.max(1) as u128;
                    (d.value(q.index(), self.now) * 1000 / w).min(u64::MAX as u128) as u64
                }
            },
        };
        Reverse((tier.order_rank(), prefix, key, id, q))
    }

    /// The first quota flavor of the job's queue that offers a model the job allows.
    fn first_flavor(&self, job: &PendingJob) -> Option<u16> {
        if job.tier == Tier::BestEffort {
            return None;
        }
        let t = self.quota.as_ref()?;
        t.queue_flavors(job.queue)?
            .iter()
            .copied()
            .find(|&f| job.models.intersect(t.flavor_models(f)).is_some())
    }

    /// Charges a started job: queue usage, quota in `flavor`, decayed usage, and the running
    /// set (when kept).
    pub(crate) fn admit(&mut self, job: &PendingJob, flavor: Option<u16>, allocs: &[TaskAlloc]) {
        let total = job.total_gpu_milli();
        *self.usage_mut(job.queue) += total;
        let now = self.now;
        if let Some(d) = &mut self.decayed {
            d.add_rate(job.queue.index(), total as i64, now);
        }
        let charged = flavor.filter(|_| job.tier != Tier::BestEffort);
        let req = if charged.is_some() {
            request(job)
        } else {
            [0; 3]
        };
        if let (Some(t), Some(f)) = (self.quota.as_mut(), charged) {
            t.add_usage(job.queue, f, &req);
        }
        let Some(reg) = self.running.as_mut() else {
            return;
        };
        let i = job.id.index();
        if i >= reg.len() {
            reg.resize_with(i + 1, || None);
        }
        let est_end = job.runtime_estimate.map_or(SimTime::MAX, |e| now + e);
        reg[i] = Some(Box::new(Running {
            job: job.clone_without_cells(),
            flavor: charged,
            req,
            allocs: allocs.to_vec(),
            start: now,
            est_end,
            evicting: None,
        }));
    }

    /// Moves a started job into its running record (made by [`Core::admit`] with a copy that
    /// leaves out the cell list, so that starting a job allocates nothing it does not keep).
    pub(crate) fn register(&mut self, job: PendingJob) {
        if let Some(reg) = self.running.as_mut() {
            if let Some(Some(r)) = reg.get_mut(job.id.index()) {
                r.job = job;
            }
        }
    }

    /// Undoes [`Core::admit`]'s queue usage and decayed usage for `gpu_milli`.
    pub(crate) fn uncharge(&mut self, queue: QueueId, gpu_milli: u64, now: SimTime) {
        let u = self.usage_mut(queue);
        *u = u
            .checked_sub(gpu_milli)
            .expect("queue usage would go negative: a job ended that was never started");
        if let Some(d) = &mut self.decayed {
            d.add_rate(queue.index(), -(gpu_milli as i64), now);
        }
    }

    /// Releases the quota a nomination held.
    pub(crate) fn unreserve(&mut self, n: &Nomination) {
        if let (Some(t), Some((f, req))) = (self.quota.as_mut(), n.reserved) {
            t.remove_usage(n.queue, f, &req);
        }
    }

    /// Forgets `job`'s nomination, if any, releasing its quota.
    fn drop_nomination(&mut self, job: JobId) {
        if let Some(i) = self.nominated.iter().position(|n| n.preemptor == job) {
            let n = self.nominated.remove(i);
            self.unreserve(&n);
        }
    }

    /// True when `job` nominated victims that are still inside their grace period.
    fn awaits_victims(&self, job: JobId) -> bool {
        self.nominated
            .iter()
            .any(|n| n.preemptor == job && !n.victims.is_empty())
    }

    /// Places `job` in its first fitting allowed cell with models `models`, respecting the
    /// pass's backfill reservations. `Ok(None)`: no attempt left in the pass budget.
    fn try_place(
        &mut self,
        pass: &mut PassState,
        fleet: &mut FleetState,
        job: &PendingJob,
        cells_key: u32,
        models: ModelSet,
    ) -> Result<Option<(CellId, Vec<TaskAlloc>)>, PendingReason> {
        let prefix = self.reservation_prefix(pass, job);
        let exact = (
            job.shape,
            job.tasks,
            models,
            cells_key,
            job.topology,
            prefix as u32,
        );
        if let Some(&r) = pass.failed_exact.get(&exact) {
            return Err(r);
        }
        let dominated = pass.failed_single.iter().find(|&&(s, m, c, p, _)| {
            job.topology.is_none()
                && m == models
                && c == cells_key
                && p == prefix as u32
                && s.num_gpu <= job.shape.num_gpu
                && s.gpu_milli <= job.shape.gpu_milli
                && s.cpu_milli <= job.shape.cpu_milli
                && s.mem_mib <= job.shape.mem_mib
        });
        if let Some(&(_, _, _, _, r)) = dominated {
            let r = if r == PendingReason::Reservation
                || job.total_gpu_milli() <= self.free_for(fleet, job, models)
            {
                r
            } else {
                PendingReason::NoCapacity
            };
            return Err(r);
        }
        if pass.budget == 0 {
            return Ok(None);
        }
        pass.budget -= 1;
        let placed = if prefix == 0 {
            self.place_in_cells(pass, fleet, job, models)
        } else {
            let phantoms = crate::backfill::apply_phantoms(fleet, &pass.reservations[..prefix]);
            let placed = self.place_in_cells(pass, fleet, job, models);
            crate::backfill::release_phantoms(fleet, &phantoms);
            placed
        };
        if let Some(p) = placed {
            return Ok(Some(p));
        }
        let mut reason = self.classify(fleet, job, models);
        if prefix > 0 && reason != PendingReason::NoCapacity {
            // Would it fit without the reservations?
            if let Some((_, allocs)) = self.place_in_cells(pass, fleet, job, models) {
                for a in allocs.iter().rev() {
                    fleet.release(a).expect("releasing a placement made here");
                }
                reason = PendingReason::Reservation;
            }
        }
        if job.tasks == 1 && job.topology.is_none() {
            pass.failed_single
                .push((job.shape, models, cells_key, prefix as u32, reason));
        }
        pass.failed_exact.insert(exact, reason);
        Err(reason)
    }

    /// Cell selection then gang placement with models `models`.
    pub(crate) fn place_in_cells(
        &mut self,
        pass: &mut PassState,
        fleet: &mut FleetState,
        job: &PendingJob,
        models: ModelSet,
    ) -> Option<(CellId, Vec<TaskAlloc>)> {
        self.cell_select
            .candidates_with_quota(fleet, self.quota.as_ref(), job, &mut pass.cells);
        // A flavor narrows the models; the copy leaves out the cell list (not read by
        // placement), so it allocates nothing.
        let narrowed;
        let job = if models == job.models {
            job
        } else {
            narrowed = PendingJob {
                models,
                ..job.clone_without_cells()
            };
            &narrowed
        };
        for &cell in &pass.cells {
            if let Some(tasks) =
                place_gang(self.placement.as_ref(), &mut self.ctx, fleet, cell, job)
            {
                return Some((cell, tasks));
            }
        }
        None
    }

    /// Free GPU-milli of models `models` in the cells `job` allows.
    pub(crate) fn free_for(&self, fleet: &FleetState, job: &PendingJob, models: ModelSet) -> u64 {
        (0..fleet.cells().len())
            .map(|c| CellId(c as u16))
            .filter(|&c| job.allows_cell(c))
            .map(|c| fleet.free_gpu_milli(c, models))
            .sum()
    }

    /// Why a job that fit quota did not fit the fleet: not enough free accelerators
    /// ([`PendingReason::NoCapacity`]); enough, and single tasks would fit, but not the whole
    /// gang ([`PendingReason::Gang`]); enough, but no node has room for a task
    /// ([`PendingReason::Fragmentation`]).
    fn classify(&self, fleet: &FleetState, job: &PendingJob, models: ModelSet) -> PendingReason {
        if job.shape.num_gpu == 0 || job.total_gpu_milli() > self.free_for(fleet, job, models) {
            return PendingReason::NoCapacity;
        }
        if job.tasks > 1 {
            // Does one task fit some node now? (The capacity index, not the placement policy,
            // so that a policy's own state — a seeded generator — is not touched.)
            let need = job.shape.total_gpu_milli() as u32;
            let one = (0..fleet.cells().len())
                .map(|c| CellId(c as u16))
                .filter(|&c| job.allows_cell(c))
                .any(|c| {
                    fleet.cell_models(c).filter(|&m| models.allows(m)).any(|m| {
                        fleet
                            .gpu_candidates(c, m, need)
                            .any(|n| fleet.fits(n, &job.shape, models))
                    })
                });
            if one {
                return PendingReason::Gang;
            }
        }
        PendingReason::Fragmentation
    }
}

/// Tries one pending job: queue maximum, quota and flavors, placement, then (if
/// `may_preempt`) preemption, then a backfill reservation.
fn try_job(
    c: &mut Core,
    pass: &mut PassState,
    fleet: &mut FleetState,
    entry: &mut Entry,
    key: OrderKey,
    out: &mut Vec<Decision>,
    may_preempt: bool,
) -> Outcome {
    let job = &entry.job;
    if c.awaits_victims(job.id) {
        // Its room is being made; its quota is reserved (see `Nomination`).
        return Outcome::Blocked(PendingReason::Preempting);
    }
    let qc = c.queue(job.queue);
    if let Some(max) = qc.max_gpu_milli {
        if c.usage(job.queue) + job.total_gpu_milli() > max {
            return Outcome::Blocked(PendingReason::QueueMax);
        }
    }
    // Admission: the flavors whose quota has room, in the order fungibility asks for.
    let mut candidates: Vec<(Option<u16>, ModelSet)> = Vec::new();
    let mut reason: Option<PendingReason> = None;
    let quota_applies =
        job.tier != Tier::BestEffort && c.quota.as_ref().is_some_and(|t| t.has_queue(job.queue));
    if quota_applies {
        let t = c.quota.as_ref().expect("checked");
        let req = request(job);
        let mut later = Vec::new();
        for &f in t.queue_flavors(job.queue).expect("checked") {
            let Some(models) = job.models.intersect(t.flavor_models(f)) else {
                continue;
            };
            match t.check(job.queue, f, &req) {
                QuotaFit::Fits { borrows } => {
                    if borrows && c.fungibility == Fungibility::TryNextFlavor {
                        later.push((Some(f), models));
                    } else {
                        candidates.push((Some(f), models));
                    }
                }
                QuotaFit::Blocked { reason: r, .. } => {
                    reason.get_or_insert(r);
                }
            }
        }
        candidates.extend(later);
    }
    // Without quota the one candidate is the job's own models: no list to allocate.
    let unquoted = [(None, job.models)];
    let candidates: &[(Option<u16>, ModelSet)] = if quota_applies {
        &candidates
    } else {
        &unquoted
    };
    let mut physical: Option<PendingReason> = None;
    for &(flavor, models) in candidates {
        match c.try_place(pass, fleet, job, entry.cells_key, models) {
            Ok(Some((cell, tasks))) => {
                c.admit(job, flavor, &tasks);
                out.push(Decision::Start {
                    job: job.id,
                    cell,
                    tasks,
                });
                return Outcome::Started;
            }
            Ok(None) => return Outcome::Blocked(entry.reason.unwrap_or(PendingReason::NotTried)),
            Err(r) => {
                physical.get_or_insert(r);
            }
        }
    }
    let reason = physical.or(reason).unwrap_or(PendingReason::NoCapacity);
    if may_preempt && c.preemption.is_some() && job.tier != Tier::BestEffort {
        if let Some(started) = crate::preemption::preempt_for(c, pass, fleet, entry, key, out) {
            if started {
                return Outcome::Started;
            }
            return Outcome::Blocked(PendingReason::Preempting);
        }
    }
    if c.backfill.is_some()
        && matches!(
            reason,
            PendingReason::NoCapacity
                | PendingReason::Fragmentation
                | PendingReason::Gang
                | PendingReason::Reservation
        )
    {
        crate::backfill::reserve(c, pass, fleet, &entry.job);
    }
    Outcome::Blocked(reason)
}

impl PendingJob {
    /// A copy without the cell list (which allocates).
    fn clone_without_cells(&self) -> PendingJob {
        PendingJob {
            id: self.id,
            tenant: self.tenant,
            queue: self.queue,
            priority: self.priority,
            submit: self.submit,
            seq: self.seq,
            shape: self.shape,
            tasks: self.tasks,
            models: self.models,
            cells: Vec::new(),
            runtime_estimate: self.runtime_estimate,
            topology: self.topology,
            tier: self.tier,
            done: self.done,
            attained_gpu_ms: self.attained_gpu_ms,
            checkpoint_interval: self.checkpoint_interval,
        }
    }
}

/// Requeues a job stopped in this pass (after the current entry is settled; it is not tried
/// again in this pass).
pub(crate) fn requeue_in_pass(pass: &mut PassState, job: PendingJob) {
    pass.requeue.push(job);
}

impl Core {
    /// How many of the pass's reservations (ascending by start) begin before `job`, started
    /// now, would end by its estimate: those it must not use.
    fn reservation_prefix(&self, pass: &PassState, job: &PendingJob) -> usize {
        if pass.reservations.is_empty() {
            return 0;
        }
        let end = job.runtime_estimate.map_or(SimTime::MAX, |e| self.now + e);
        pass.reservations.partition_point(|r| r.start < end)
    }
}

#[cfg(test)]
mod tests {
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
    fn names_parse_and_list_valid_ones() {
        assert_eq!(
            "best-fit".parse::<PlacementKind>(),
            Ok(PlacementKind::BestFit)
        );
        let e = "bestfit".parse::<PlacementKind>().unwrap_err();
        assert!(e.contains("first-fit, best-fit, worst-fit, random"), "{e}");
        assert_eq!("drf".parse::<AdmissionOrder>(), Ok(AdmissionOrder::Drf));
        assert_eq!("las".parse::<QueueOrderKind>(), Ok(QueueOrderKind::Las));
    }
}
