//! Placement (the Kubernetes `Filter` + `Score` extension points, folded into one choice per
//! task): which node of a cell — and which accelerators on it — take one task. Gangs are
//! placed with [`place_gang`], all-or-nothing, honouring the gang's topology constraint
//! ([`topology`]).
//!
//! # Policies
//!
//! | name | module | picks | follows |
//! |---|---|---|---|
//! | `first-fit` | [`basic::FirstFit`] | the lowest-id node that fits | classic first-fit bin packing |
//! | `best-fit` | [`basic::BestFit`] | the fitting node with the least free GPU-milli (CPU-milli for CPU-only tasks), ties to the lowest node id | best-fit bin packing on the accelerator dimension |
//! | `worst-fit` | [`basic::WorstFit`] | the fitting node with the most free GPU-milli (CPU for CPU-only tasks) | worst-fit / spread (Kubernetes `LeastAllocated`) |
//! | `random` | [`baselines::RandomFit`] | a uniformly random fitting node; a random fitting accelerator for a GPU-sharing task | FGD paper's Random baseline |
//! | `dot-prod` | [`baselines::DotProd`] | score `⌊100·(1 − d/2)⌋`, `d` = dot product of the node's free (CPU, GPU) and the task's request, each over 128 cores / 8 GPUs | FGD paper's DotProd (Tetris-like) |
//! | `gpu-clustering` | [`baselines::GpuClustering`] | nodes already holding tasks of the same GPU class first | FGD paper's GpuClustering |
//! | `gpu-packing` | [`baselines::GpuPacking`] | partly used accelerators, then partly used nodes, then empty nodes | FGD paper's GpuPacking |
//! | `fgd-best-fit` | [`baselines::FgdBestFit`] | score `⌊100·(1 − s)⌋`, `s` = half the leftover CPU over 128 cores plus half the leftover GPU-milli over 8,000 | FGD paper's BestFit |
//! | `fgd` | [`fgd::Fgd`] | the node (and accelerator) whose expected fragmentation grows least | Weng et al., ATC'23 |
//! | `topology-aware` | [`topology::TopologyAware`] | the gang in the tightest domain that holds it (block first); each task in the tightest block, then rack, then node, ids last | Kueue TAS BestFit, Slurm topology/block, Volcano HyperNode |
//!
//! `best-fit` and `fgd-best-fit` differ: `best-fit` compares free GPU-milli only (exact
//! integers, CPU only for CPU-only tasks) and breaks ties by node id; `fgd-best-fit` is the
//! FGD artifact's score — leftover CPU and GPU weighted ½ each against fixed 128-core and
//! 8-GPU scales, truncated to an integer in 0…100 — with ties to the per-run node rank, so
//! many nodes tie and the rank decides (the artifact's behaviour, which the published
//! numbers depend on).
//!
//! # Scores and ties
//!
//! Every score is an integer with a documented range (each policy's docs). The node with the
//! highest score wins; among equal scores, the node with the **lowest rank** in
//! [`PlaceCtx`] (by default the node id, i.e. fleet declaration order; the FGD experiment
//! passes a seeded random permutation, as the artifact does). No decision depends on
//! hash-map iteration order.
//!
//! # Accelerators inside the chosen node
//!
//! Whole-accelerator tasks take the lowest-indexed wholly free accelerators; a GPU-sharing
//! task takes the fitting accelerator with the least free GPU-milli (lowest index on ties) —
//! [`FleetState::choose_gpus`] — unless the policy chooses itself ([`Choice::gpu_mask`]):
//! `random` takes a random fitting accelerator, `fgd` the one it scored best.
//!
//! # Cost
//!
//! The score-based policies (`dot-prod`, `gpu-clustering`, `gpu-packing`, `fgd-best-fit`,
//! `fgd`) look at every node of the cell per task. A node's fit test and score depend only
//! on its state, the task's shape and model constraint, and the context's settings, so the
//! context caches both per (policy, shape, constraint) and node, keyed by the node's
//! [`FleetState::node_version`]: a task of a shape seen before rescores only the nodes that
//! changed since, and the rest cost a version comparison. At most
//! [`SCORE_CACHE_ENTRIES`] scores are kept (shapes beyond that are scored uncached), so
//! memory stays bounded on large fleets with many shapes. Because of these caches a
//! [`PlaceCtx`] belongs to one fleet: start a fresh context for another fleet (or for a
//! clone that went its own way).
//!
//! # Arithmetic ([`ScoreArithmetic`])
//!
//! By default (`exact`) every score is computed with exact integer arithmetic — FGD's
//! fragmentation as integers scaled by the typical table's weight total, its sigmoid as 99
//! precomputed integer thresholds, `fgd-best-fit` as an integer quotient — so a score never
//! depends on floating-point rounding. The FGD paper's artifact computes the same quantities
//! in `float64`; where the exact value of a score is an integer boundary (FGD: a placement
//! that leaves a node's fragmentation unchanged, `Δ = 0`, scores exactly 50; the artifact's
//! float sums can leave `Δ` a few ulps below 0 and score 49), the two can differ by one
//! point and a tie can flip. [`ScoreArithmetic::Artifact`] evaluates `fgd` and
//! `fgd-best-fit` the artifact's way instead, operation for operation in `f64`, so replays of
//! its logs agree row for row. Other policies ignore it.

pub mod baselines;
pub mod basic;
pub mod fgd;
pub mod split;
pub mod topology;

pub use baselines::{DotProd, FgdBestFit, GpuClustering, GpuPacking, RandomFit};
pub use basic::{BestFit, FirstFit, WorstFit};
pub use fgd::{Fgd, TypicalTasks};
pub use topology::TopologyAware;

use crate::ids::{CellId, NodeId};
use crate::job::PendingJob;
use crate::resources::{ModelSet, TaskShape};
use crate::state::{FleetState, StateError, TaskAlloc};
use crate::topology::Level;

/// Where one task goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The node.
    pub node: NodeId,
    /// The accelerators (bit `i` = accelerator `i`), or `None` for the default choice
    /// [`FleetState::choose_gpus`].
    pub gpu_mask: Option<u64>,
}

impl Choice {
    /// A node with the default accelerator choice.
    pub fn node(node: NodeId) -> Choice {
        Choice {
            node,
            gpu_mask: None,
        }
    }
}

/// A small seeded generator for policies that draw (SplitMix64, Steele, Lea & Flood 2014):
/// fixed output on every platform, no dependency. The caller seeds it from its own named
/// stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (Lemire's multiply-shift with rejection; `n` > 0).
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// How `fgd` and `fgd-best-fit` evaluate their scores (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ScoreArithmetic {
    /// Exact integer arithmetic (the default): no score depends on rounding.
    #[default]
    Exact,
    /// The FGD artifact's `float64` evaluation, operation for operation
    /// (`hkust-adsl/kubernetes-scheduler-simulator`: `pkg/utils/frag.go`,
    /// `pkg/simulator/plugin/{fgd_score,best_fit_score}.go`): FGD's fragmentation summed per
    /// class in `f64` with `f64` weights, `⌊100·σ(Δ/1000)⌋` through `exp`; BestFit's leftover
    /// sum in `f64`. For replaying the artifact's logs exactly.
    Artifact,
}

impl ScoreArithmetic {
    /// Every valid name.
    pub const NAMES: &'static [&'static str] = &["exact", "artifact"];

    /// The name scenarios use.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScoreArithmetic::Exact => "exact",
            ScoreArithmetic::Artifact => "artifact",
        }
    }
}

/// Per-run placement state passed to every policy call (Kubernetes `CycleState`, kept for
/// the whole run): the node rank for tie-breaks, a seeded generator, the workload's typical
/// tasks for FGD with a per-node fragmentation cache, the score cache (module docs, "Cost";
/// a context belongs to one fleet), and the node filter a gang placement sets while it
/// places inside one topology group.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PlaceCtx {
    rank: Vec<u32>,
    /// The generator of policies that draw (`random`).
    pub rng: SplitMix64,
    typical: Option<TypicalTasks>,
    arithmetic: ScoreArithmetic,
    pub(crate) frag_cache: Vec<(u64, u64)>,
    pub(crate) frag_cache_f64: Vec<(u64, f64)>,
    /// The fleet's total of `frag_cache` and the fleet change count it was summed at
    /// ([`fgd::fleet_frag_scaled`]).
    pub(crate) frag_total: Option<(u64, u128)>,
    /// Left out of snapshots: a cache, refilled on use.
    #[cfg_attr(feature = "serde", serde(skip))]
    score_cache: ScoreCache,
    restrict: Vec<(Level, u32)>,
    exclude: Vec<NodeId>,
    observed: std::collections::BTreeMap<(TaskShape, ModelSet), u64>,
    observed_total: u64,
    observed_at_build: u64,
    /// Placements decided (tasks), for statistics.
    pub decisions: u64,
    /// Placements where more than one node had the top score (the rank decided).
    pub tied_decisions: u64,
    /// Called after every [`place_gang`] with the state it started from and its answer
    /// (decision recording; off by default, one branch per gang when off).
    #[cfg_attr(feature = "serde", serde(skip))]
    recorder: Option<Recorder>,
    /// The slice level of split jobs by (cell, member shape, models, members per task)
    /// ([`split`]). Left out of snapshots: a cache, refilled on use.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) split_levels: std::collections::BTreeMap<(CellId, TaskShape, ModelSet, u32), Level>,
}

/// One [`place_gang`] call as a [`PlacementRecorder`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct PlacementCall<'a> {
    /// The policy's name ([`Placement::name`]).
    pub policy: &'static str,
    /// The fleet as the call found it (before any reservation of this gang).
    pub before: &'a FleetState,
    /// The cell placed in.
    pub cell: CellId,
    /// The gang (its topology constraint already defaulted by the scheduler).
    pub job: &'a PendingJob,
    /// The answer: one allocation per task, or `None` when the gang did not fit.
    pub result: Option<&'a [TaskAlloc]>,
}

/// Receives every [`place_gang`] call of a context it is installed in
/// ([`PlaceCtx::set_recorder`]): the decision-equivalence test of the scheduler extender
/// records the simulator's snapshots and decisions with it. Must not panic.
pub trait PlacementRecorder: Send + Sync {
    /// Asked before each call: record this one? (`false` skips the fleet copy; the default
    /// records every call.)
    fn wants(&self) -> bool {
        true
    }

    /// One call, after it decided.
    fn record(&self, call: &PlacementCall<'_>);
}

/// A shared [`PlacementRecorder`] (cloned with the context).
#[derive(Clone)]
struct Recorder(std::sync::Arc<dyn PlacementRecorder>);

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recorder")
    }
}

impl Default for PlaceCtx {
    fn default() -> Self {
        PlaceCtx::new()
    }
}

impl PlaceCtx {
    /// A context with ranks = node ids, generator seed 0 and no typical tasks.
    pub fn new() -> PlaceCtx {
        PlaceCtx {
            rank: Vec::new(),
            rng: SplitMix64(0),
            typical: None,
            arithmetic: ScoreArithmetic::Exact,
            frag_cache: Vec::new(),
            frag_cache_f64: Vec::new(),
            frag_total: None,
            score_cache: ScoreCache::default(),
            restrict: Vec::new(),
            exclude: Vec::new(),
            observed: std::collections::BTreeMap::new(),
            observed_total: 0,
            observed_at_build: 0,
            decisions: 0,
            tied_decisions: 0,
            recorder: None,
            split_levels: std::collections::BTreeMap::new(),
        }
    }

    /// Installs (or, with `None`, removes) a recorder called after every [`place_gang`]
    /// with this context. Recording clones the fleet once per gang; without a recorder the
    /// cost is one branch per gang.
    pub fn set_recorder(&mut self, recorder: Option<std::sync::Arc<dyn PlacementRecorder>>) {
        self.recorder = recorder.map(Recorder);
    }

    /// True when a recorder is installed ([`PlaceCtx::set_recorder`]): every [`place_gang`]
    /// call is then seen, so none may be skipped.
    pub(crate) fn records(&self) -> bool {
        self.recorder.is_some()
    }

    /// Sets the tie-break rank of every node (indexed by [`NodeId`]; lower wins). Nodes past
    /// the end of `rank` rank by their id after all listed ones.
    pub fn with_rank(mut self, rank: Vec<u32>) -> PlaceCtx {
        self.rank = rank;
        self
    }

    /// Seeds the generator.
    pub fn with_seed(mut self, seed: u64) -> PlaceCtx {
        self.rng = SplitMix64(seed);
        self
    }

    /// Sets how `fgd` and `fgd-best-fit` evaluate scores ([`ScoreArithmetic`]); clears the
    /// caches.
    pub fn with_arithmetic(mut self, arithmetic: ScoreArithmetic) -> PlaceCtx {
        self.arithmetic = arithmetic;
        self.clear_caches();
        self
    }

    /// The score arithmetic in use.
    pub fn arithmetic(&self) -> ScoreArithmetic {
        self.arithmetic
    }

    fn clear_caches(&mut self) {
        self.frag_cache.clear();
        self.frag_total = None;
        self.frag_cache_f64.clear();
        self.score_cache.clear();
    }

    /// Sets the workload's typical tasks (FGD's target distribution); clears the
    /// fragmentation cache.
    pub fn with_typical(mut self, typical: TypicalTasks) -> PlaceCtx {
        self.set_typical(typical);
        self
    }

    /// Replaces the typical tasks; clears the fragmentation cache.
    pub fn set_typical(&mut self, typical: TypicalTasks) {
        self.typical = Some(typical);
        self.clear_caches();
        self.observed_at_build = 0;
    }

    /// Records `tasks` submitted tasks of `shape` (online typical tasks). When no table was
    /// set with [`PlaceCtx::set_typical`], FGD builds its table from the tasks observed so
    /// far (95 % coverage), rebuilding it whenever the observed count has grown by 5 % since
    /// the last build — the workload's distribution as a production scheduler learns it.
    pub fn observe(&mut self, shape: &TaskShape, models: ModelSet, tasks: u32) {
        *self.observed.entry((*shape, models)).or_insert(0) += u64::from(tasks);
        self.observed_total += u64::from(tasks);
    }

    /// Rebuilds the typical table from observed tasks when due (see [`PlaceCtx::observe`]).
    pub(crate) fn refresh_observed_typical(&mut self) {
        if self.observed_total == 0
            || (self.typical.is_some()
                && (self.observed_at_build == 0
                    || self.observed_total * 100 < self.observed_at_build * 105))
        {
            return;
        }
        let samples = self.observed.iter().map(|(&(shape, models), &k)| {
            let sample = fgd::TaskSample {
                shape,
                models,
                type_key: if models.is_any() {
                    String::new()
                } else {
                    format!("{:x}", models.0)
                },
            };
            (sample, k)
        });
        self.typical = Some(TypicalTasks::build_weighted(samples, 95));
        self.clear_caches();
        self.observed_at_build = self.observed_total;
    }

    /// The typical tasks, if set.
    pub fn typical(&self) -> Option<&TypicalTasks> {
        self.typical.as_ref()
    }

    /// The tie-break rank of a node (lower wins).
    pub fn rank(&self, n: NodeId) -> u64 {
        match self.rank.get(n.index()) {
            Some(&r) => u64::from(r),
            None => (1u64 << 32) + u64::from(n.0),
        }
    }

    /// True when the current gang placement allows the node (inside the topology group it
    /// is filling, not excluded by a spread strategy). Every policy filters with it.
    pub fn allowed(&self, fleet: &FleetState, n: NodeId) -> bool {
        self.restrict
            .iter()
            .all(|&(level, id)| fleet.level_id(n, level) == id)
            && !self.exclude.contains(&n)
    }

    /// True when no restriction is active.
    pub fn unrestricted(&self) -> bool {
        self.restrict.is_empty() && self.exclude.is_empty()
    }

    pub(crate) fn push_restrict(&mut self, level: Level, id: u32) {
        self.restrict.push((level, id));
    }

    pub(crate) fn pop_restrict(&mut self) {
        self.restrict.pop();
    }

    pub(crate) fn exclude_mut(&mut self) -> &mut Vec<NodeId> {
        &mut self.exclude
    }
}

/// A placement policy for one task.
///
/// Called by [`place_gang`] once per task, with the previous tasks of the gang already
/// reserved in `fleet`. It must return only a node for which [`FleetState::fits`] holds and
/// [`PlaceCtx::allowed`] is true, and, if it sets [`Choice::gpu_mask`], accelerators that can
/// hold the task. It reads the fleet and may update `ctx` (its caches, its generator).
pub trait Placement: Send + Sync {
    /// The name scenarios use.
    fn name(&self) -> &'static str;

    /// Chooses where a task of `shape` goes in `cell`, or `None` when no allowed node fits.
    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice>;

    /// The score this policy gives node `n` for a task of `shape` now, with its accelerator
    /// choice, in the policy's documented range — the Kubernetes scheduler-extender
    /// `prioritize` answer, also used to explain a decision. `None` when the node does not
    /// fit or the policy has no per-node score (first-fit, the index-driven best-fit and
    /// worst-fit, random, topology-aware). Must agree with [`Placement::select`]: the chosen
    /// node has the highest score, ties to the lowest rank.
    fn node_score(
        &self,
        _ctx: &mut PlaceCtx,
        _fleet: &FleetState,
        _n: NodeId,
        _shape: &TaskShape,
        _models: ModelSet,
    ) -> Option<(i64, Option<u64>)> {
        None
    }

    /// The topology constraint this policy gives gangs that carry none (`topology-aware`:
    /// prefer one NVLink domain).
    fn default_topology(&self) -> Option<crate::topology::TopologySpec> {
        None
    }

    /// True when [`Placement::select`] only reads `ctx` (no draw, counter or cache that a
    /// later call would see) and picks among nodes that fit. Then a gang that
    /// [`FleetState::gpu_task_room`] shows cannot fit is refused without calling `select`
    /// at all: the answer (`None`) and every later decision are the same, only the
    /// reserve-and-release of a doomed gang is saved. `false` (the default) keeps every call.
    fn select_is_pure(&self) -> bool {
        false
    }

    /// True when [`Placement::select`] returns a node whenever a node of the cell fits the
    /// task ([`FleetState::fits`]) and the context allows it: no fitting node is refused.
    /// With [`Placement::select_is_pure`], a single task without a topology constraint then
    /// fits a cell as long as one placement of it there is still valid, so a preemption
    /// search that puts back a victim beside its tentative placement keeps that placement
    /// instead of asking again, and asks once at the end. `false` (the default)
    /// asks after every victim put back.
    fn select_is_complete(&self) -> bool {
        false
    }
}

/// Reserves one task at `choice`.
///
/// # Errors
/// [`StateError::DoesNotFit`] when the node or the chosen accelerators cannot hold it; the
/// state is unchanged.
pub fn bind(
    fleet: &mut FleetState,
    choice: Choice,
    shape: &TaskShape,
    models: ModelSet,
) -> Result<TaskAlloc, StateError> {
    match choice.gpu_mask {
        None => fleet.allocate(choice.node, shape, models),
        Some(mask) => {
            if !fleet.fits(choice.node, shape, models) || mask.count_ones() != shape.num_gpu {
                return Err(StateError::DoesNotFit {
                    node: choice.node,
                    dimension: "capacity",
                });
            }
            let alloc = TaskAlloc {
                node: choice.node,
                gpu_mask: mask,
                gpu_milli: if mask == 0 { 0 } else { shape.gpu_milli },
                cpu_milli: shape.cpu_milli,
                mem_mib: shape.mem_mib,
            };
            fleet.apply(&alloc)?;
            Ok(alloc)
        }
    }
}

/// Places one task with `policy` and reserves it; `None` (nothing reserved) when it fits
/// nowhere allowed.
pub fn place_task(
    policy: &dyn Placement,
    ctx: &mut PlaceCtx,
    fleet: &mut FleetState,
    cell: CellId,
    shape: &TaskShape,
    models: ModelSet,
) -> Option<TaskAlloc> {
    let choice = policy.select(ctx, fleet, cell, shape, models)?;
    bind(fleet, choice, shape, models).ok()
}

/// Releases reservations made for a gang that could not be completed (`Unreserve`).
pub(crate) fn unreserve(fleet: &mut FleetState, allocs: &[TaskAlloc]) {
    for a in allocs.iter().rev() {
        fleet
            .release(a)
            .expect("releasing a reservation made in this call cannot fail");
    }
}

/// Places every task of `job` in `cell` with `policy`, reserving each in `fleet` so the next
/// task sees it (Kubernetes `Reserve`), under the job's topology constraint
/// ([`topology::place_gang_topology`]). If any task cannot be placed, every reservation made
/// for the gang is released (`Unreserve`) and `None` is returned: a gang never holds a
/// partial allocation.
pub fn place_gang(
    policy: &dyn Placement,
    ctx: &mut PlaceCtx,
    fleet: &mut FleetState,
    cell: CellId,
    job: &PendingJob,
) -> Option<Vec<TaskAlloc>> {
    // A job that takes the node's shape is placed as its members in this cell.
    if let Some(members) = split::member_job(ctx, fleet, cell, job) {
        return place_gang(policy, ctx, fleet, cell, &members);
    }
    if job.shape.num_gpu == 0 {
        // CPU-only tasks are placed through the CPU index, kept only once such a task exists.
        fleet.enable_cpu_index();
    }
    if let Some(rec) = ctx.recorder.clone().filter(|r| r.0.wants()) {
        let before = fleet.clone();
        let out = place_gang_inner(policy, ctx, fleet, cell, job);
        rec.0.record(&PlacementCall {
            policy: policy.name(),
            before: &before,
            cell,
            job,
            result: out.as_deref(),
        });
        return out;
    }
    place_gang_inner(policy, ctx, fleet, cell, job)
}

fn place_gang_inner(
    policy: &dyn Placement,
    ctx: &mut PlaceCtx,
    fleet: &mut FleetState,
    cell: CellId,
    job: &PendingJob,
) -> Option<Vec<TaskAlloc>> {
    match job.topology {
        Some(spec) if !spec.is_empty() => {
            // A gang beyond the cell's room fits under no topology constraint either (a
            // preemption search asks once per victim).
            if beyond_room(policy, fleet, cell, job, job.tasks) {
                return None;
            }
            topology::place_gang_topology(policy, ctx, fleet, cell, job, &spec)
        }
        _ => place_tasks(policy, ctx, fleet, cell, job, job.tasks, Vec::new()),
    }
}

/// True when `n` GPU tasks of `job` cannot fit in `cell` by free GPU-milli alone
/// ([`FleetState::gpu_task_room`]) and `policy` is pure ([`Placement::select_is_pure`]), so
/// that refusing them without a try changes nothing but the cost.
fn beyond_room(
    policy: &dyn Placement,
    fleet: &FleetState,
    cell: CellId,
    job: &PendingJob,
    n: u32,
) -> bool {
    job.shape.num_gpu > 0
        && policy.select_is_pure()
        && fleet.gpu_task_room(cell, &job.shape, job.models, u64::from(n)) < u64::from(n)
}

/// Places `n` more tasks of `job` one by one after `allocs`; on failure releases all of
/// `allocs` too and returns `None`.
pub(crate) fn place_tasks(
    policy: &dyn Placement,
    ctx: &mut PlaceCtx,
    fleet: &mut FleetState,
    cell: CellId,
    job: &PendingJob,
    n: u32,
    mut allocs: Vec<TaskAlloc>,
) -> Option<Vec<TaskAlloc>> {
    // A gang that cannot fit by free GPU-milli alone fails without reserving anything; in a
    // saturated fleet most gang attempts are such, each costing a reservation and a
    // release per task that fitted.
    if n > 1 && beyond_room(policy, fleet, cell, job, n) {
        unreserve(fleet, &allocs);
        return None;
    }
    for _ in 0..n {
        match place_task(policy, ctx, fleet, cell, &job.shape, job.models) {
            Some(a) => allocs.push(a),
            None => {
                unreserve(fleet, &allocs);
                return None;
            }
        }
    }
    Some(allocs)
}

/// The highest-scoring allowed, fitting node of `cell`, ties to the lowest rank; `score`
/// returns the score and accelerator choice of a node that fits (or `None` to skip it).
/// Counts tied decisions in `ctx`. `O(nodes of the cell)`; `score` is called only for nodes
/// that changed since the last call with the same `policy`, shape and models (see the
/// module docs, "Cost"), so it must depend on nothing but the node's state, the task and
/// the context's settings.
pub(crate) fn argmax_by_rank(
    ctx: &mut PlaceCtx,
    fleet: &FleetState,
    cell: CellId,
    shape: &TaskShape,
    models: ModelSet,
    policy: &'static str,
    mut score: impl FnMut(&mut PlaceCtx, NodeId) -> Option<(i64, Option<u64>)>,
) -> Option<Choice> {
    let key = (policy, *shape, models);
    let Some(mut cache) = ctx.score_cache.take(key, fleet.nodes().len()) else {
        return argmax_fitting(ctx, fleet, cell, |ctx, n| {
            if fleet.fits(n, shape, models) {
                score(ctx, n)
            } else {
                None
            }
        });
    };
    let out = argmax_fitting(ctx, fleet, cell, |ctx, n| {
        let slot = &mut cache[n.index()];
        let v = fleet.node_version(n) + 1;
        if slot.version != v {
            let got = if fleet.fits(n, shape, models) {
                score(ctx, n)
            } else {
                None
            };
            *slot = CachedScore::new(v, got);
        }
        slot.get()
    });
    ctx.score_cache.put(key, cache);
    out
}

/// The most scores the score cache holds (24 bytes each): 2²¹, 48 MiB.
pub const SCORE_CACHE_ENTRIES: usize = 1 << 21;

/// One node's cached score for one task shape.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CachedScore {
    /// The node's [`FleetState::node_version`] + 1 when scored (0: never).
    version: u64,
    /// The accelerator mask chosen (meaningful when `kind` is 2).
    mask: u64,
    /// The score.
    score: i32,
    /// 0: the node does not take the task (does not fit); 1: a score with the default
    /// accelerators;
    /// 2: a score with `mask`.
    kind: u8,
}

impl CachedScore {
    fn new(version: u64, got: Option<(i64, Option<u64>)>) -> CachedScore {
        match got {
            None => CachedScore {
                version,
                ..CachedScore::default()
            },
            Some((score, mask)) => CachedScore {
                version,
                mask: mask.unwrap_or(0),
                score: score as i32,
                kind: if mask.is_some() { 2 } else { 1 },
            },
        }
    }

    fn get(&self) -> Option<(i64, Option<u64>)> {
        match self.kind {
            0 => None,
            1 => Some((i64::from(self.score), None)),
            _ => Some((i64::from(self.score), Some(self.mask))),
        }
    }
}

/// Cache key: policy name, task shape, model constraint.
type ScoreKey = (&'static str, TaskShape, ModelSet);

/// Per policy, task shape and model constraint, each node's fit test and score, valid while
/// the node's version is unchanged (see the module docs, "Cost"). Emptied whenever the
/// typical table or the arithmetic changes; holds at most [`SCORE_CACHE_ENTRIES`] scores
/// (shapes beyond that are scored uncached).
#[derive(Clone, Debug, Default)]
pub(crate) struct ScoreCache {
    shapes: std::collections::BTreeMap<ScoreKey, Vec<CachedScore>>,
}

impl ScoreCache {
    pub(crate) fn clear(&mut self) {
        self.shapes.clear();
    }

    /// Takes the scores of `key` out of the cache (fresh ones if absent and there is room),
    /// sized for `nodes`; give them back with [`ScoreCache::put`]. `None`: no room, score
    /// uncached.
    fn take(&mut self, key: ScoreKey, nodes: usize) -> Option<Vec<CachedScore>> {
        match self.shapes.remove(&key) {
            Some(v) if v.len() == nodes => Some(v),
            _ => ((self.shapes.len() + 1) * nodes <= SCORE_CACHE_ENTRIES)
                .then(|| vec![CachedScore::default(); nodes]),
        }
    }

    fn put(&mut self, key: ScoreKey, scores: Vec<CachedScore>) {
        self.shapes.insert(key, scores);
    }
}

/// The loop of [`argmax_by_rank`]: `score` itself returns `None` for a node that does not
/// fit or is skipped.
fn argmax_fitting(
    ctx: &mut PlaceCtx,
    fleet: &FleetState,
    cell: CellId,
    mut score: impl FnMut(&mut PlaceCtx, NodeId) -> Option<(i64, Option<u64>)>,
) -> Option<Choice> {
    let mut best: Option<(i64, u64, Choice)> = None;
    let mut ties = 0u32;
    let unrestricted = ctx.unrestricted();
    for &n in &fleet.cells()[cell.index()].nodes {
        if !unrestricted && !ctx.allowed(fleet, n) {
            continue;
        }
        let Some((s, mask)) = score(ctx, n) else {
            continue;
        };
        let r = ctx.rank(n);
        let better = match &best {
            None => true,
            Some((bs, br, _)) => {
                if s == *bs {
                    ties += 1;
                }
                s > *bs || (s == *bs && r < *br)
            }
        };
        if better {
            if best.as_ref().is_some_and(|(bs, _, _)| s > *bs) {
                ties = 0;
            }
            best = Some((
                s,
                r,
                Choice {
                    node: n,
                    gpu_mask: mask,
                },
            ));
        }
    }
    if best.is_some() {
        ctx.decisions += 1;
        if ties > 0 {
            ctx.tied_decisions += 1;
        }
    }
    best.map(|(_, _, c)| c)
}

#[cfg(test)]
mod recorder_tests {
    use super::*;
    use crate::ids::ModelId;
    use crate::state::NodeSpec;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    struct Rec {
        asked: AtomicU64,
        calls: Mutex<Vec<(u64, Option<Vec<TaskAlloc>>)>>,
    }

    impl PlacementRecorder for Rec {
        fn wants(&self) -> bool {
            // Every other call.
            self.asked.fetch_add(1, Ordering::Relaxed).is_multiple_of(2)
        }
        fn record(&self, call: &PlacementCall<'_>) {
            self.calls.lock().unwrap().push((
                call.before.allocated_gpu_milli(),
                call.result.map(<[TaskAlloc]>::to_vec),
            ));
        }
    }

    #[test]
    fn recorder_sees_the_state_before_and_the_answer_and_changes_nothing() {
        let node = NodeSpec {
            name: "n".into(),
            cell: CellId(0),
            block: 0,
            domain: 0,
            model: Some(ModelId(0)),
            gpus: 4,
            cpu_milli: 1000,
            mem_mib: 1024,
        };
        let mut fleet = FleetState::new(vec!["c".into()], vec!["m".into()], vec![node]).unwrap();
        let job = PendingJob {
            shape: TaskShape::whole_gpus(1),
            tasks: 2,
            ..PendingJob::default()
        };
        let rec = Arc::new(Rec {
            asked: AtomicU64::new(0),
            calls: Mutex::new(Vec::new()),
        });
        let mut ctx = PlaceCtx::new();
        ctx.set_recorder(Some(rec.clone()));
        let mut plain = fleet.clone();
        let mut plain_ctx = PlaceCtx::new();
        for _ in 0..3 {
            let got = place_gang(&BestFit, &mut ctx, &mut fleet, CellId(0), &job);
            let want = place_gang(&BestFit, &mut plain_ctx, &mut plain, CellId(0), &job);
            assert_eq!(got, want);
        }
        let calls = rec.calls.lock().unwrap();
        // Calls 1 and 3 recorded: the first on an empty node, the third finding it full.
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0, 0);
        assert_eq!(calls[0].1.as_ref().map(Vec::len), Some(2));
        assert_eq!(calls[1], (4000, None));
    }
}
