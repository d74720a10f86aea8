//! The FGD paper's workload-inflation experiment (Weng et al., "Beware of Fragmentation",
//! USENIX ATC '23, §6; method written out in `shared/traces/alibaba-gpu-2023/FGD-METHOD.md`),
//! time-free, without the event engine.
//!
//! # One run (one policy, one seed `s`)
//!
//! 1. **Pod order** ([`arrival_order`]): the pod list sorted by name, shuffled uniformly
//!    (Fisher–Yates, stream `inflation.pod-order`). Then, while the arrived demand is below
//!    the target `T = target_pct % × capacity`, a pod is drawn uniformly with replacement from
//!    the name-sorted list (stream `inflation.clones`): if `D +` its **per-GPU** GPU-milli
//!    would exceed `T` the loop stops (the draw is discarded), else a copy is appended to the
//!    end and its **total** demand added to `D` (the artifact's stop test mixes the two; it
//!    moves the end of the list by a few GPUs). If the file alone exceeds `T`, uniformly
//!    random pods are removed until `D ≤ T`.
//! 2. **Node rank** ([`node_rank`]): nodes sorted by name get a uniform random permutation of
//!    `0..n` (stream `inflation.node-rank`) as their tie-break rank, fixed for the run: among
//!    equal scores the lowest rank wins (the artifact's name prefix).
//! 3. Pods are offered **once each, in order**; a pod that fits nowhere is dropped. Nothing
//!    departs. After every offer: *arrived* += the pod's `num_gpu × gpu_milli` (failed pods
//!    count), *allocated* = GPU-milli held, *fragmentation* = Σ over nodes of FGD's `F(n)`
//!    against the pod list's typical pods ([`fleetsim_policies::placement::fgd`]), kept
//!    incrementally (only the node that received a pod is recomputed).
//! 4. Randomness of the `random` policy: stream `inflation.random-policy`.
//!
//! [`run_one`] takes the order and the rank as inputs, so a recorded order and rank (the
//! artifact's own log) can be injected instead of the seeded ones: [`peer`] reads them from
//! the artifact's per-attempt log (`[inflation] order_from`), checks agreement with it row
//! by row and writes fleetsim's attempts in the same column layout.
//!
//! # Per-attempt series
//!
//! Every offer yields an [`Event`]: arrived and allocated GPU-milli, the node and
//! accelerators taken, used nodes and GPUs, and — with [`RunConfig::frag_series`] on, as the
//! artifact computes it after every attempt — the fleet's fragmentation (and its Q1+Q2+Q4
//! part) as exact integers. Off, those two stay 0 (a timing mode: curves of fragmentation
//! are then meaningless).
//!
//! # Curves
//!
//! Per event `i`: `x_i` = round-half-to-even(100 · arrived / capacity). The curve at integer
//! `x` is the mean over the events with `x_i = x` (none: over `x − 1 ≤ x_i ≤ x + 1`) of
//! allocated % (and fragmented % of capacity, fragmentation / idle %). The artifact rounds
//! each `y_i` to two decimals before averaging; here the mean is exact, which differs by less
//! than 0.005 pp. Per policy and `x`, the median over seeds (mean of the two middle values
//! for an even count).
//!
//! # Determinism
//!
//! Runs are independent and executed with rayon; results are collected in input order
//! (policy, then seed) and reduced sequentially, so outputs do not depend on the thread count.

pub mod peer;
pub mod report;

use std::collections::BTreeMap;
use std::path::PathBuf;

use rand::RngCore;
use rayon::prelude::*;

use fleetsim_policies::placement::fgd::TaskSample;
use fleetsim_policies::placement::{bind, Choice, PlaceCtx, Placement};
use fleetsim_policies::{
    CellId, FleetState, ModelId, ModelSet, NodeId, PlacementKind, ScoreArithmetic, TaskAlloc,
    TaskShape, TypicalTasks,
};

use crate::fleet::build::build_fleet;
use crate::rng;
use crate::run_options::{RunError, RunOptions};
use crate::scenario::{InflationSpec, Loaded};
use crate::workload::alibaba_openb;

/// One pod of the experiment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pod {
    /// Pod name.
    pub name: String,
    /// Its request.
    pub shape: TaskShape,
    /// Allowed models; `None` when it names only models absent from the fleet (it never fits).
    pub models: Option<ModelSet>,
    /// The typical-table type key (the `gpu_spec` text).
    pub type_key: String,
}

/// Per-event record of one run: the outcome of one offer and the fleet after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// GPU-milli requested by all pods offered so far.
    pub arrived_milli: u64,
    /// GPU-milli held after this offer.
    pub allocated_milli: u64,
    /// Fleet fragmentation × `W` after this offer (divide by the table's weight total); 0
    /// when [`RunConfig::frag_series`] is off.
    pub frag_scaled: u128,
    /// The part of `frag_scaled` the artifact books as Q1, Q2 and Q4
    /// ([`TypicalTasks::node_frag_parts_scaled`]); 0 when the series is off.
    pub q124_scaled: u128,
    /// The node that took the pod; `None` when it fit nowhere.
    pub node: Option<NodeId>,
    /// The accelerators bound on that node (bit `i` = accelerator `i`).
    pub gpu_mask: u64,
    /// Nodes holding anything after this offer.
    pub used_nodes: u32,
    /// Accelerators of those nodes (the artifact counts every GPU of a used node).
    pub used_gpus: u32,
}

/// How a run is carried out, beyond policy, seed, order and rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunConfig {
    /// Keep the fleet's fragmentation after every offer (the artifact does; default on).
    pub frag_series: bool,
    /// Score arithmetic of `fgd` and `fgd-best-fit` (default exact).
    pub arithmetic: ScoreArithmetic,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            frag_series: true,
            arithmetic: ScoreArithmetic::Exact,
        }
    }
}

/// One run's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct RunTrace {
    /// Policy.
    pub policy: PlacementKind,
    /// Seed.
    pub seed: u64,
    /// One record per offered pod.
    pub events: Vec<Event>,
    /// Pods placed.
    pub placed: u64,
    /// Pods that fit nowhere.
    pub failed: u64,
    /// Decisions where more than one node had the top score.
    pub tied: u64,
    /// Decisions taken by a score (Random takes none).
    pub decided: u64,
}

/// The fleet, pods and typical table shared by every run.
pub struct Experiment {
    /// The empty fleet (cloned per run).
    pub fleet: FleetState,
    /// Pods sorted by name.
    pub pods: Vec<Pod>,
    /// FGD's typical pods (from the whole pod list).
    pub typical: TypicalTasks,
    /// GPU capacity, GPU-milli.
    pub capacity_milli: u64,
}

impl Experiment {
    /// Builds the experiment from a fleet and a pod list (any order; sorted by name here).
    pub fn new(fleet: FleetState, pods: Vec<alibaba_openb::PodShape>, threshold_pct: u32) -> Self {
        let model_ids: BTreeMap<&str, ModelId> = fleet
            .models()
            .iter()
            .enumerate()
            .map(|(i, m)| (m.as_str(), ModelId(i as u16)))
            .collect();
        let mut pods: Vec<Pod> = pods
            .into_iter()
            .map(|p| {
                let gpu = p.shape.num_gpu > 0;
                let models = if !gpu || p.gpu_models.is_empty() {
                    Some(ModelSet::ANY)
                } else {
                    let mut set = ModelSet::ANY;
                    for m in &p.gpu_models {
                        if let Some(&id) = model_ids.get(m.as_str()) {
                            set.insert(id);
                        }
                    }
                    (!set.is_any()).then_some(set)
                };
                Pod {
                    name: p.name,
                    shape: p.shape,
                    models,
                    type_key: if gpu { p.gpu_spec_key } else { String::new() },
                }
            })
            .collect();
        pods.sort_by(|a, b| a.name.cmp(&b.name));
        // A pod whose `gpu_spec` names only models absent from the fleet has no access to
        // any node (the FGD paper's count), not "no constraint": in the typical-task table
        // it allows only a model id past the fleet's last (with 128 models there is none
        // left: such a fleet keeps "any").
        let n_models = fleet.models().len();
        let no_access = if n_models < 128 {
            ModelSet(1u128 << n_models)
        } else {
            ModelSet::ANY
        };
        let typical = TypicalTasks::build(
            pods.iter().map(|p| TaskSample {
                shape: p.shape,
                models: p.models.unwrap_or(no_access),
                type_key: p.type_key.clone(),
            }),
            threshold_pct,
        );
        let capacity_milli = fleet.available_gpu_milli();
        Experiment {
            fleet,
            pods,
            typical,
            capacity_milli,
        }
    }
}

fn shuffle<T>(v: &mut [T], r: &mut rng::Rng) {
    for i in (1..v.len()).rev() {
        let j = below(r, i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// Uniform in `0..n` (multiply-shift with rejection).
fn below(r: &mut rng::Rng, n: u64) -> u64 {
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = u128::from(r.next_u64()) * u128::from(n);
        if (m as u64) >= threshold {
            return (m >> 64) as u64;
        }
    }
}

/// The arrival sequence of seed `seed` as indices into `pods` (see the module docs).
pub fn arrival_order(pods: &[Pod], target_milli: u64, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pods.len()).collect();
    shuffle(&mut order, &mut rng::stream(seed, "inflation.pod-order"));
    let mut d: u64 = pods.iter().map(|p| p.shape.total_gpu_milli()).sum();
    let mut clones = rng::stream(seed, "inflation.clones");
    if pods.is_empty() {
        return order;
    }
    if d < target_milli {
        loop {
            let i = below(&mut clones, pods.len() as u64) as usize;
            let p = &pods[i];
            if d + u64::from(p.shape.gpu_milli) > target_milli {
                break;
            }
            order.push(i);
            d += p.shape.total_gpu_milli();
        }
    } else {
        while d > target_milli && !order.is_empty() {
            let k = below(&mut clones, order.len() as u64) as usize;
            d -= pods[order.remove(k)].shape.total_gpu_milli();
        }
    }
    order
}

/// The tie-break rank of every node for seed `seed` (indexed by node id): a uniform random
/// permutation over the nodes sorted by name.
pub fn node_rank(fleet: &FleetState, seed: u64) -> Vec<u32> {
    let n = fleet.nodes().len();
    let mut by_name: Vec<usize> = (0..n).collect();
    by_name.sort_by(|&a, &b| {
        fleet
            .node_name(NodeId(a as u32))
            .cmp(fleet.node_name(NodeId(b as u32)))
    });
    let mut perm: Vec<u32> = (0..n as u32).collect();
    shuffle(&mut perm, &mut rng::stream(seed, "inflation.node-rank"));
    let mut rank = vec![0u32; n];
    for (i, &node) in by_name.iter().enumerate() {
        rank[node] = perm[i];
    }
    rank
}

/// Runs one policy over one arrival sequence with one node rank, with the default
/// [`RunConfig`] (fragmentation series on, exact arithmetic).
pub fn run_one(
    exp: &Experiment,
    policy: PlacementKind,
    seed: u64,
    order: &[usize],
    rank: Vec<u32>,
) -> RunTrace {
    run_one_with(exp, policy, seed, order, rank, RunConfig::default())
}

/// Runs one policy over one arrival sequence with one node rank.
pub fn run_one_with(
    exp: &Experiment,
    policy: PlacementKind,
    seed: u64,
    order: &[usize],
    rank: Vec<u32>,
    cfg: RunConfig,
) -> RunTrace {
    let mut runner = Runner::new(exp, policy, seed, rank, cfg);
    let events = order.iter().map(|&i| runner.offer(i)).collect();
    runner.finish(events)
}

/// One run in progress: the fleet, the policy and its context, the running totals. Offer
/// pods one at a time with [`Runner::offer`] (or apply a recorded decision with
/// [`Runner::apply`]); [`run_one_with`] is the loop.
pub struct Runner<'a> {
    exp: &'a Experiment,
    policy: PlacementKind,
    seed: u64,
    placement: Box<dyn Placement>,
    ctx: PlaceCtx,
    fleet: FleetState,
    cells: Vec<CellId>,
    cfg: RunConfig,
    /// Per node: (`W·F`, `W·Q124`) as last computed (series on).
    frag: Vec<(u64, u64)>,
    frag_total: u128,
    q124_total: u128,
    used: Vec<bool>,
    used_nodes: u32,
    used_gpus: u32,
    arrived: u64,
    placed: u64,
    failed: u64,
}

impl<'a> Runner<'a> {
    /// An empty fleet ready for the first offer.
    pub fn new(
        exp: &'a Experiment,
        policy: PlacementKind,
        seed: u64,
        rank: Vec<u32>,
        cfg: RunConfig,
    ) -> Runner<'a> {
        let fleet = exp.fleet.clone();
        let ctx = PlaceCtx::new()
            .with_rank(rank)
            .with_seed(rng::stream(seed, "inflation.random-policy").next_u64())
            .with_typical(exp.typical.clone())
            .with_arithmetic(cfg.arithmetic);
        let cells = (0..fleet.cells().len()).map(|c| CellId(c as u16)).collect();
        let n = fleet.nodes().len();
        let frag: Vec<(u64, u64)> = if cfg.frag_series {
            (0..n)
                .map(|i| exp.typical.node_frag_parts_now(&fleet, NodeId(i as u32)))
                .collect()
        } else {
            Vec::new()
        };
        let frag_total = frag.iter().map(|&(f, _)| u128::from(f)).sum();
        let q124_total = frag.iter().map(|&(_, q)| u128::from(q)).sum();
        Runner {
            exp,
            policy,
            seed,
            placement: policy.build(),
            ctx,
            fleet,
            cells,
            cfg,
            frag,
            frag_total,
            q124_total,
            used: vec![false; n],
            used_nodes: 0,
            used_gpus: 0,
            arrived: 0,
            placed: 0,
            failed: 0,
        }
    }

    /// The fleet as it is now.
    pub fn fleet(&self) -> &FleetState {
        &self.fleet
    }

    /// The placement context (node rank, caches, arithmetic).
    pub fn ctx_mut(&mut self) -> &mut PlaceCtx {
        &mut self.ctx
    }

    /// The policy object.
    pub fn placement(&self) -> &dyn Placement {
        self.placement.as_ref()
    }

    /// Where the policy would put pod `pods[i]` now, without placing it.
    pub fn choose(&mut self, i: usize) -> Option<Choice> {
        let pod = &self.exp.pods[i];
        let models = pod.models?;
        for &cell in &self.cells {
            if let Some(c) =
                self.placement
                    .select(&mut self.ctx, &self.fleet, cell, &pod.shape, models)
            {
                return Some(c);
            }
        }
        None
    }

    /// Offers pod `pods[i]` to the policy, places it where the policy says (or drops it)
    /// and returns the event.
    pub fn offer(&mut self, i: usize) -> Event {
        let choice = self.choose(i);
        self.apply(i, choice)
    }

    /// Records the offer of pod `pods[i]` with a given outcome: placed at `choice` (the
    /// accelerators as given, or the default choice), or dropped for `None` — or when
    /// `choice` does not fit.
    pub fn apply(&mut self, i: usize, choice: Option<Choice>) -> Event {
        let pod = &self.exp.pods[i];
        self.arrived += pod.shape.total_gpu_milli();
        let got: Option<TaskAlloc> = match (choice, pod.models) {
            (Some(c), Some(models)) => bind(&mut self.fleet, c, &pod.shape, models).ok(),
            _ => None,
        };
        match got {
            Some(a) => {
                self.placed += 1;
                let n = a.node;
                if !self.used[n.index()] {
                    self.used[n.index()] = true;
                    self.used_nodes += 1;
                    self.used_gpus += self.fleet.node(n).gpus;
                }
                if self.cfg.frag_series {
                    let new = self.exp.typical.node_frag_parts_now(&self.fleet, n);
                    let old = std::mem::replace(&mut self.frag[n.index()], new);
                    self.frag_total = self.frag_total - u128::from(old.0) + u128::from(new.0);
                    self.q124_total = self.q124_total - u128::from(old.1) + u128::from(new.1);
                }
            }
            None => self.failed += 1,
        }
        Event {
            arrived_milli: self.arrived,
            allocated_milli: self.fleet.allocated_gpu_milli(),
            frag_scaled: self.frag_total,
            q124_scaled: self.q124_total,
            node: got.map(|a| a.node),
            gpu_mask: got.map_or(0, |a| a.gpu_mask),
            used_nodes: self.used_nodes,
            used_gpus: self.used_gpus,
        }
    }

    /// The run's record, given its events.
    pub fn finish(self, events: Vec<Event>) -> RunTrace {
        RunTrace {
            policy: self.policy,
            seed: self.seed,
            events,
            placed: self.placed,
            failed: self.failed,
            tied: self.ctx.tied_decisions,
            decided: self.ctx.decisions,
        }
    }
}

/// One point of a curve, in % of capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    /// Arrived demand, % of capacity (integer).
    pub arrived_pct: u32,
    /// Allocated GPU-milli, % of capacity.
    pub allocated_pct: f64,
    /// Fragmented GPU-milli (FGD's measure), % of capacity.
    pub fragmented_pct: f64,
    /// Fragmented GPU-milli, % of idle GPU-milli.
    pub frag_of_idle_pct: f64,
}

/// round-half-to-even(100 · arrived / capacity).
fn x_of(arrived: u64, cap: u64) -> u32 {
    let q = u128::from(arrived) * 100;
    let c = u128::from(cap);
    let (d, r) = (q / c, q % c);
    let up = 2 * r > c || (2 * r == c && d % 2 == 1);
    (d + u128::from(up)) as u32
}

/// The curve of one run at `0..=max_pct` (see the module docs).
pub fn curve(events: &[Event], capacity_milli: u64, weight: u64, max_pct: u32) -> Vec<CurvePoint> {
    #[derive(Default, Clone, Copy)]
    struct Acc {
        n: u64,
        alloc: u128,
        frag: u128,
        ratio: f64,
    }
    let mut by_x = vec![Acc::default(); max_pct as usize + 2];
    for e in events {
        let x = x_of(e.arrived_milli, capacity_milli) as usize;
        if x < by_x.len() {
            let a = &mut by_x[x];
            a.n += 1;
            a.alloc += u128::from(e.allocated_milli);
            a.frag += e.frag_scaled;
            let idle = capacity_milli - e.allocated_milli;
            if idle > 0 {
                a.ratio += e.frag_scaled as f64 / weight as f64 / idle as f64;
            }
        }
    }
    let cap = capacity_milli as f64;
    (0..=max_pct)
        .filter_map(|x| {
            let xi = x as usize;
            let pick = if by_x[xi].n > 0 {
                by_x[xi]
            } else {
                let lo = xi.saturating_sub(1);
                by_x[lo..=(xi + 1)].iter().fold(Acc::default(), |mut s, a| {
                    s.n += a.n;
                    s.alloc += a.alloc;
                    s.frag += a.frag;
                    s.ratio += a.ratio;
                    s
                })
            };
            (pick.n > 0).then(|| {
                let n = pick.n as f64;
                CurvePoint {
                    arrived_pct: x,
                    allocated_pct: 100.0 * pick.alloc as f64 / n / cap,
                    fragmented_pct: 100.0 * pick.frag as f64 / weight as f64 / n / cap,
                    frag_of_idle_pct: 100.0 * pick.ratio / n,
                }
            })
        })
        .collect()
}

/// Median of a non-empty list (mean of the two middle values for an even count).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// What the report needs of one run, kept instead of its per-offer events
/// (a run's events are about 1.4 MiB on openb; a digest is its curve, a few KiB), so a
/// study's memory grows with its runs' curves, not their events.
#[derive(Clone, Debug, PartialEq)]
pub struct RunDigest {
    /// Policy.
    pub policy: PlacementKind,
    /// Seed.
    pub seed: u64,
    /// The run's curve ([`curve`] at `0..=target_pct`).
    pub curve: Vec<CurvePoint>,
    /// Its last event (the default when no pod was offered).
    pub last: Event,
    /// Pods offered (events).
    pub offered: u64,
    /// Pods placed.
    pub placed: u64,
    /// Pods that fit nowhere.
    pub failed: u64,
    /// Decisions where more than one node had the top score.
    pub tied: u64,
    /// Decisions taken by a score.
    pub decided: u64,
}

impl RunDigest {
    /// The digest of `t` for an experiment of `capacity_milli`, typical weight `weight`,
    /// curves to `max_pct`.
    pub fn of(t: &RunTrace, capacity_milli: u64, weight: u64, max_pct: u32) -> RunDigest {
        RunDigest {
            policy: t.policy,
            seed: t.seed,
            curve: curve(&t.events, capacity_milli, weight, max_pct),
            last: t.events.last().copied().unwrap_or_default(),
            offered: t.events.len() as u64,
            placed: t.placed,
            failed: t.failed,
            tied: t.tied,
            decided: t.decided,
        }
    }
}

/// Every run of an inflation scenario, in (policy, seed) order.
pub struct Results {
    /// The experiment.
    pub exp: Experiment,
    /// The settings.
    pub spec: InflationSpec,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// Arrival sequence length per seed.
    pub arrivals: Vec<usize>,
    /// Runs, policy-major, as digests (their events are dropped as each run ends).
    pub runs: Vec<RunDigest>,
    /// The full runs (events included), only with [`RunOptions::keep_rows`] and no
    /// [`RunOptions::out_dir`] (tests); empty otherwise.
    pub traces: Vec<RunTrace>,
    /// With `order_from`: the replayed log's facts and the agreement checks.
    pub replay: Option<Replay>,
}

/// What a replay of a recorded run read and found.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Replay {
    /// The log the order and rank came from, as the scenario names it.
    pub order_from: String,
    /// Attempts replayed.
    pub attempts: u64,
    /// Nodes whose rank the log names.
    pub nodes_ranked_by_log: u64,
    /// Nodes ranked by the fallback guess ([`peer::NodeRank::inferred`]).
    pub nodes_rank_inferred: u64,
    /// Score arithmetic of `fgd` and `fgd-best-fit`.
    pub arithmetic: String,
    /// Per `check_against` entry, in policy order.
    pub agreement: Vec<peer::Agreement>,
    /// Every checked row of every log agrees.
    pub all_rows_agree: bool,
    /// Pod names per attempt (the log's).
    #[serde(skip)]
    pub names: Vec<String>,
}

/// The seeds a spec asks for.
pub fn seeds_of(spec: &InflationSpec, scenario_seed: u64) -> Vec<u64> {
    if spec.seeds.is_empty() {
        (0..u64::from(spec.seed_count.unwrap_or(1)))
            .map(|i| scenario_seed + i)
            .collect()
    } else {
        spec.seeds.clone()
    }
}

/// The experiment of a loaded inflation scenario: fleet, pod list, typical table.
///
/// # Errors
/// [`RunError`] when the fleet or the pod list cannot be read.
pub fn experiment(loaded: &Loaded, opts: &RunOptions) -> Result<Experiment, RunError> {
    let spec = loaded
        .scenario
        .inflation
        .as_ref()
        .expect("validated: inflation mode has [inflation]");
    let built = build_fleet(loaded, &opts.trace_dir)?;
    let t = loaded
        .scenario
        .workload
        .trace
        .as_ref()
        .expect("validated: a pod list");
    let path: PathBuf =
        loaded.resolve_path("workload.trace", &t.path, &t.public_path, &opts.trace_dir)?;
    let pods = alibaba_openb::read_pod_shapes(&path)?;
    Ok(Experiment::new(
        built.state,
        pods,
        spec.typical_threshold_pct,
    ))
}

/// Runs an inflation scenario: every policy × seed, in parallel, collected in input order.
/// With `order_from`, the log's order and rank are used and every `check_against` log is
/// compared row by row ([`peer::check`]).
///
/// # Errors
/// [`RunError`] when the fleet, the pod list or a log cannot be read, or a log does not
/// belong to this fleet and pod list.
pub fn run(loaded: &Loaded, opts: &RunOptions) -> Result<Results, RunError> {
    run_streamed(loaded, opts, &|_, _, _, _| Ok(()))
}

/// The arrival order and node rank of one seed: the replayed log's, or the seeded ones.
enum Inputs {
    /// From `order_from`: the same for every seed.
    Replayed((Vec<usize>, Vec<u32>)),
    /// Seeded: generated per run ([`arrival_order`], [`node_rank`]; cheap beside a run), so
    /// no per-seed copy is kept across the study.
    Seeded { target_milli: u64 },
}

impl Inputs {
    fn of(&self, exp: &Experiment, seed: u64) -> std::borrow::Cow<'_, (Vec<usize>, Vec<u32>)> {
        match self {
            Inputs::Replayed(both) => std::borrow::Cow::Borrowed(both),
            Inputs::Seeded { target_milli } => std::borrow::Cow::Owned((
                arrival_order(&exp.pods, *target_milli, seed),
                node_rank(&exp.fleet, seed),
            )),
        }
    }
}

/// Called with every finished run (its full trace, its arrival order and node rank, and
/// the replayed log's pod names when there is one) before its events are dropped: where a
/// study streams per-run files (`attempts-<policy>-<seed>.csv`). Called from the worker
/// threads, in any order; each call writes its own file.
pub type OnRun<'a> = dyn Fn(&Experiment, &RunTrace, &(Vec<usize>, Vec<u32>), Option<&[String]>) -> Result<(), RunError>
    + Sync
    + 'a;

/// [`run`], handing every finished run to `on_run` before keeping only its [`RunDigest`]:
/// at most one run's events per worker thread are in memory at a time.
///
/// # Errors
/// As [`run`], and the first error `on_run` returns (in (policy, seed) order).
pub fn run_streamed(
    loaded: &Loaded,
    opts: &RunOptions,
    on_run: &OnRun<'_>,
) -> Result<Results, RunError> {
    let spec = loaded
        .scenario
        .inflation
        .clone()
        .expect("validated: inflation mode has [inflation]");
    let exp = experiment(loaded, opts)?;
    let seeds = match opts.seed {
        Some(s) => seeds_of(&spec, s),
        None => seeds_of(&spec, loaded.scenario.seed),
    };
    let cfg = RunConfig {
        frag_series: spec.frag_series,
        arithmetic: spec.arithmetic,
    };
    let resolve = |field: &str, f: &crate::scenario::FileRef| {
        loaded.resolve_path(field, &f.path, &f.public_path, &opts.trace_dir)
    };
    let mut replay = None;
    let inputs = if let Some(f) = &spec.order_from {
        let log = peer::PeerLog::read(&resolve("inflation.order_from", f)?)?;
        let order = log.order(&exp)?;
        let rank = log.rank(&exp.fleet)?;
        let n = exp.fleet.nodes().len();
        replay = Some(Replay {
            order_from: f.display(),
            attempts: order.len() as u64,
            nodes_ranked_by_log: (n - rank.inferred) as u64,
            nodes_rank_inferred: rank.inferred as u64,
            arithmetic: spec.arithmetic.as_str().to_string(),
            agreement: Vec::new(),
            all_rows_agree: true,
            names: log.rows.iter().map(|r| r.pod.clone()).collect(),
        });
        Inputs::Replayed((order, rank.rank))
    } else {
        Inputs::Seeded {
            target_milli: exp.capacity_milli * u64::from(spec.target_pct) / 100,
        }
    };
    let mut logs = Vec::new();
    for (name, f) in &spec.check_against {
        let log = peer::PeerLog::read(&resolve(&format!("inflation.check_against.{name}"), f)?)?;
        let order = log.order(&exp)?;
        let rank = log.rank(&exp.fleet)?;
        let kind: PlacementKind = name.parse().expect("validated policy name");
        logs.push((kind, f.display(), log, order, rank));
    }
    let jobs: Vec<(PlacementKind, usize)> = spec
        .policies
        .iter()
        .flat_map(|&p| (0..seeds.len()).map(move |i| (p, i)))
        .collect();
    let (cap, weight, max) = (
        exp.capacity_milli,
        exp.typical.weight_total(),
        spec.target_pct,
    );
    let names = replay.as_ref().map(|r| r.names.as_slice());
    // As for job rows: kept in memory only when asked for and nothing is written (tests).
    let keep = opts.keep_rows && opts.out_dir.is_none();
    type Outcome = (RunDigest, Option<RunTrace>, Option<peer::Agreement>);
    let outcomes: Vec<Result<Outcome, RunError>> = jobs
        .par_iter()
        .map(|&(p, i)| {
            let io = inputs.of(&exp, seeds[i]);
            let (order, rank) = &*io;
            let (own, a) =
                if let Some((_, shown, log, lorder, lrank)) = logs.iter().find(|l| l.0 == p) {
                    let (mut a, trace) = peer::check(&exp, p, seeds[i], log, lorder, lrank, cfg);
                    a.log = shown.clone();
                    // After a disagreement the check follows the log: rerun for fleetsim's own.
                    let own = if a.all_match() && lorder == order && lrank.rank == *rank {
                        trace
                    } else {
                        run_one_with(&exp, p, seeds[i], order, rank.clone(), cfg)
                    };
                    (own, Some(a))
                } else {
                    (
                        run_one_with(&exp, p, seeds[i], order, rank.clone(), cfg),
                        None,
                    )
                };
            on_run(&exp, &own, &io, names)?;
            let digest = RunDigest::of(&own, cap, weight, max);
            Ok((digest, keep.then_some(own), a))
        })
        .collect();
    let mut runs = Vec::with_capacity(outcomes.len());
    let mut traces = Vec::new();
    for o in outcomes {
        let (digest, trace, a) = o?;
        runs.push(digest);
        traces.extend(trace);
        if let (Some(a), Some(r)) = (a, replay.as_mut()) {
            r.all_rows_agree &= a.all_match();
            r.agreement.push(a);
        }
    }
    // One event per pod offered: the first policy's runs give each seed's sequence length.
    let arrivals = (0..seeds.len())
        .map(|i| match runs.get(i) {
            Some(d) => d.offered as usize,
            None => inputs.of(&exp, seeds[i]).0.len(),
        })
        .collect();
    Ok(Results {
        exp,
        spec,
        seeds,
        arrivals,
        runs,
        traces,
        replay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 17, item 10: one H100 node (8 GPUs); pods P (1 GPU, `gpu_spec` A100 only, absent
    /// from the fleet) and Q (1 GPU, any model). P's typical task has no access to the node:
    /// on the empty node all 8,000 free GPU-milli are fragmented for it, none for Q, so the
    /// node's `W · F` = 1 × 8,000 + 1 × 0 = 8,000 (it was 0 with P read as "no constraint").
    #[test]
    fn gpu_spec_naming_only_absent_models_is_no_access() {
        use fleetsim_policies::state::NodeSpec;
        use fleetsim_policies::{CellId, TaskShape};
        let spec = NodeSpec {
            name: "n0".into(),
            cell: CellId(0),
            block: 0,
            domain: 0,
            model: Some(ModelId(0)),
            gpus: 8,
            cpu_milli: 64_000,
            mem_mib: 1 << 20,
        };
        let fleet = FleetState::new(vec!["c".into()], vec!["H100".into()], vec![spec]).unwrap();
        let pod = |name: &str, models: Vec<String>| alibaba_openb::PodShape {
            name: name.into(),
            shape: TaskShape {
                num_gpu: 1,
                gpu_milli: 1000,
                cpu_milli: 1000,
                mem_mib: 0,
            },
            gpu_spec_key: models.join("|"),
            gpu_models: models,
            qos: None,
        };
        let exp = Experiment::new(
            fleet,
            vec![pod("P", vec!["A100".into()]), pod("Q", Vec::new())],
            100,
        );
        let p = exp.pods.iter().find(|x| x.name == "P").unwrap();
        assert_eq!(p.models, None);
        let n = fleetsim_policies::NodeId(0);
        assert_eq!(exp.typical.node_frag_now(&exp.fleet, n), 8_000);
    }

    #[test]
    fn x_rounds_half_to_even() {
        assert_eq!(x_of(995, 1000), 100); // 99.5 → 100 (even)
        assert_eq!(x_of(985, 1000), 98); // 98.5 → 98 (even)
        assert_eq!(x_of(1004, 1000), 100);
        assert_eq!(x_of(0, 1000), 0);
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn curve_averages_events_per_point() {
        let ev = |a, l| Event {
            arrived_milli: a,
            allocated_milli: l,
            ..Event::default()
        };
        // Capacity 1000: x = 0, 0, 1 (10 → 1 %), 3 (30); x = 2 falls back to 1..3.
        let c = curve(&[ev(0, 0), ev(2, 0), ev(10, 10), ev(30, 20)], 1000, 1, 3);
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].allocated_pct, 0.0);
        assert_eq!(c[1].allocated_pct, 1.0);
        assert_eq!(c[2].allocated_pct, 1.5);
        assert_eq!(c[3].allocated_pct, 2.0);
    }
}
