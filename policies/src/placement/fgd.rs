//! Fragmentation gradient descent (FGD): Q. Weng, L. Yang, Y. Yu, W. Wang, X. Tang, G. Yang,
//! L. Zhang, "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
//! Gradient Descent", USENIX ATC '23; as implemented by the paper's artifact
//! (`hkust-adsl/kubernetes-scheduler-simulator`, `pkg/utils/frag.go`,
//! `pkg/simulator/plugin/fgd_score.go`).
//!
//! # Typical tasks ([`TypicalTasks`])
//!
//! The workload's task-size distribution FGD measures fragmentation against. Tasks are grouped
//! by (CPU milli, per-accelerator GPU-milli, accelerator count, model-constraint key) —
//! memory is not part of the key. Groups are sorted by count (descending; equal counts by the
//! key, descending) and the shortest prefix covering at least `threshold_pct` % of all tasks
//! is kept (the artifact's `podPopularityThreshold`, 95). Each kept group weighs
//! `count / Σ kept counts`. CPU-only tasks are groups too.
//!
//! # Fragmentation of a node, `F(n)` (GPU-milli)
//!
//! For each typical group `t` (CPU `c_t`, per-accelerator share `m_t`, count `k_t`):
//!
//! * `t` is CPU-only, or `t`'s model constraint excludes the node's model: `f_t` = all free
//!   GPU-milli of the node (`Fg`);
//! * the node has at least `k_t` accelerators with free ≥ `m_t` **and** free CPU ≥ `c_t`
//!   (`t` would fit): `f_t` = the free GPU-milli of the accelerators whose free < `m_t`;
//! * otherwise `f_t = Fg`.
//!
//! `F(n) = Σ_t weight_t · f_t`. Memory is ignored; a node with no free GPU-milli (or an
//! unschedulable one) has `F = 0`. Fleet fragmentation is `Σ_n F(n)`.
//!
//! Everything is exact integer arithmetic: this module works with `W · F(n)`, `W` = Σ kept
//! counts (so per-group terms are `k_t · f_t`), and divides by `W` only for reports.
//!
//! # Score
//!
//! For a candidate placement, `Δ = F(n) − F(n')` (`n'` = the node after it) and
//! `score = ⌊100 · σ(Δ / 1000)⌋`, `σ(x) = 1 / (1 + e^{−x})`: an integer in `0..=100` (`Δ = 0`
//! gives 50; a placement that lowers fragmentation scores above 50). The sigmoid is never
//! evaluated per candidate: `score ≥ s ⟺ W·Δ ≥ ⌈1000·W·ln(s / (100 − s))⌉`, and the 99
//! integer thresholds are computed once when the table is built (the only floating point in
//! this module). The candidate placement: a CPU-only task lowers free CPU only; a
//! whole-accelerator task takes the lowest-indexed wholly free accelerators; a GPU-sharing
//! task tries **every** accelerator with room (each distinct free value once) and keeps the
//! best score, lowest index on ties, which is also the accelerator it is bound to.
//!
//! # The artifact's arithmetic ([`ScoreArithmetic::Artifact`])
//!
//! The artifact weighs group `t` by the `float64` `freq_t = (k_t / N) / (W / N)` (`N` = all
//! tasks), books each `freq_t · f_t` into one of seven classes (Q1 lack both, Q2 lack GPU,
//! Q3 satisfied, Q4 lack CPU, XL/XR for CPU-only groups, no access; a fitting group puts its
//! too-small accelerators' free milli in Q2 and the rest in Q3), sums the classes except Q3
//! in that order, and scores `int64(σ((F − F') / 1000) · 100)` with `σ(x) = 1 / (1 + exp(−x))`.
//! [`TypicalTasks::node_frag_artifact`] and [`TypicalTasks::artifact_score`] repeat this
//! operation for operation. The result equals the exact one except where rounding crosses
//! an integer boundary: a placement that leaves `F` unchanged can come out a few ulps
//! negative and score 49 instead of 50.
//!
//! # Cost
//!
//! `F(n)` is cached per node in the [`PlaceCtx`], keyed by the node's
//! [`FleetState::node_version`], so only nodes that changed since the last look are
//! recomputed; scoring a candidate evaluates `F` on that one node's hypothetical state
//! (`O(groups + accelerators × distinct shares)`), never the whole fleet. Scores are also
//! cached per node and task shape by the shared placement loop (see [`super`], "Cost"): a
//! task of a shape seen before rescores only the nodes that changed since.

use std::collections::BTreeMap;

use super::{argmax_by_rank, Choice, PlaceCtx, Placement, ScoreArithmetic};
use crate::ids::{CellId, ModelId, NodeId};
use crate::resources::{ModelSet, TaskShape, WHOLE_GPU_MILLI};
use crate::state::FleetState;

/// One group of the typical-task table.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TypicalTask {
    /// CPU request, milli-cores.
    pub cpu_milli: u64,
    /// Share of each accelerator, GPU-milli (0 for CPU-only).
    pub gpu_milli: u32,
    /// Accelerators (0 for CPU-only).
    pub num_gpu: u32,
    /// Allowed models (resolved from `type_key`).
    pub models: ModelSet,
    /// The model-constraint key as the workload spells it (e.g. `V100M16|V100M32`; empty =
    /// any model).
    pub type_key: String,
    /// Tasks of the workload in this group.
    pub count: u64,
    m_idx: usize,
}

/// The workload's typical tasks: the distribution FGD optimises for (see the module docs).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TypicalTasks {
    tasks: Vec<TypicalTask>,
    distinct_m: Vec<u32>,
    weight_total: u64,
    all_tasks: u64,
    thresholds: Vec<i64>,
    /// The artifact's `float64` weight of each kept group (see the module docs).
    freq: Vec<f64>,
}

/// One task of the workload, as input to [`TypicalTasks::build`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSample {
    /// Its request.
    pub shape: TaskShape,
    /// Allowed models.
    pub models: ModelSet,
    /// The model-constraint key (the `gpu_spec` text; empty = any).
    pub type_key: String,
}

/// The most accelerators × distinct shares evaluated on the stack.
const MAX_DISTINCT: usize = 64;

impl TypicalTasks {
    /// Builds the table from every task of the workload (order does not matter), keeping
    /// the most frequent groups until they cover `threshold_pct` % of the tasks (100 = all
    /// groups).
    ///
    /// # Panics
    /// If `tasks` is empty or `threshold_pct` is 0 or above 100.
    pub fn build(tasks: impl IntoIterator<Item = TaskSample>, threshold_pct: u32) -> TypicalTasks {
        TypicalTasks::build_weighted(tasks.into_iter().map(|t| (t, 1)), threshold_pct)
    }

    /// As [`TypicalTasks::build`], from tasks given with a count each (a sample counted `k`
    /// times is `k` copies of it in `build`; a count of 0 is no copy): `O(distinct samples)`,
    /// not `O(tasks)`.
    ///
    /// # Panics
    /// If the counts add up to 0 or `threshold_pct` is 0 or above 100.
    pub fn build_weighted(
        tasks: impl IntoIterator<Item = (TaskSample, u64)>,
        threshold_pct: u32,
    ) -> TypicalTasks {
        assert!(
            (1..=100).contains(&threshold_pct),
            "threshold_pct must be in 1..=100"
        );
        let mut groups: BTreeMap<(u64, u32, u32, String), (u64, ModelSet)> = BTreeMap::new();
        let mut all = 0u64;
        for (t, k) in tasks {
            if k == 0 {
                continue;
            }
            all += k;
            let key = if t.shape.num_gpu == 0 {
                (t.shape.cpu_milli, 0, 0, String::new())
            } else {
                (
                    t.shape.cpu_milli,
                    t.shape.gpu_milli,
                    t.shape.num_gpu,
                    t.type_key,
                )
            };
            let models = if t.shape.num_gpu == 0 {
                ModelSet::ANY
            } else {
                t.models
            };
            groups.entry(key).or_insert((0, models)).0 += k;
        }
        assert!(all > 0, "a typical-task table needs at least one task");
        let mut sorted: Vec<_> = groups.into_iter().collect();
        // Count descending, then key descending (the artifact's order).
        sorted.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| b.0.cmp(&a.0)));
        let mut kept = Vec::new();
        let mut cum = 0u64;
        for ((cpu, m, k, type_key), (count, models)) in sorted {
            if cum * 100 >= u64::from(threshold_pct) * all {
                break;
            }
            cum += count;
            kept.push(TypicalTask {
                cpu_milli: cpu,
                gpu_milli: m,
                num_gpu: k,
                models,
                type_key,
                count,
                m_idx: 0,
            });
        }
        let mut distinct_m: Vec<u32> = kept
            .iter()
            .filter(|t| t.num_gpu > 0)
            .map(|t| t.gpu_milli)
            .collect();
        distinct_m.sort_unstable();
        distinct_m.dedup();
        for t in &mut kept {
            t.m_idx = distinct_m.binary_search(&t.gpu_milli).unwrap_or(0);
        }
        let w = cum;
        let thresholds = (1..100)
            .map(|s: i64| {
                let x = 1000.0 * w as f64 * (s as f64 / (100 - s) as f64).ln();
                x.ceil() as i64
            })
            .collect();
        // The artifact: count / N, then divided by (Σ kept counts / N) after the cut.
        let n = all as f64;
        let freq = kept
            .iter()
            .map(|t| (t.count as f64 / n) / (w as f64 / n))
            .collect();
        TypicalTasks {
            tasks: kept,
            distinct_m,
            weight_total: w,
            all_tasks: all,
            thresholds,
            freq,
        }
    }

    /// The kept groups, heaviest first.
    pub fn tasks(&self) -> &[TypicalTask] {
        &self.tasks
    }

    /// `W`: the sum of the kept groups' counts (weights are `count / W`).
    pub fn weight_total(&self) -> u64 {
        self.weight_total
    }

    /// How many tasks the table was built from.
    pub fn all_tasks(&self) -> u64 {
        self.all_tasks
    }

    /// Per distinct share `m` (ascending, at most [`MAX_DISTINCT`]): how many accelerators
    /// have free ≥ `m`, and the free GPU-milli of those below `m`, by one sweep over the
    /// accelerators sorted by free. Returns the number of shares filled.
    fn profile(&self, free: &[u16], cnt_ge: &mut [u32], s_lt: &mut [u64]) -> usize {
        let nm = self.distinct_m.len().min(MAX_DISTINCT);
        let g = free.len().min(64);
        let mut sorted = [0u16; 64];
        sorted[..g].copy_from_slice(&free[..g]);
        sorted[..g].sort_unstable();
        let (mut k, mut below) = (0usize, 0u64);
        for j in 0..nm {
            let m = self.distinct_m[j];
            while k < g && u32::from(sorted[k]) < m {
                below += u64::from(sorted[k]);
                k += 1;
            }
            cnt_ge[j] = (g - k) as u32;
            s_lt[j] = below;
        }
        nm
    }

    /// `W · F` of a node in the given state: `model`, free CPU, free GPU-milli per
    /// accelerator (see the module docs).
    pub fn node_frag_scaled(&self, model: Option<ModelId>, free_cpu: u64, free: &[u16]) -> u64 {
        self.node_frag_parts_scaled(model, free_cpu, free).0
    }

    /// `W · F` of a node and `W ·` its part the artifact books as Q1, Q2 and Q4 (the groups
    /// that ask for accelerators of a model the node has: lacking GPU, CPU or both, plus the
    /// too-small accelerators of groups that fit), in GPU-milli × `W`.
    pub fn node_frag_parts_scaled(
        &self,
        model: Option<ModelId>,
        free_cpu: u64,
        free: &[u16],
    ) -> (u64, u64) {
        let fg: u64 = free.iter().map(|&f| u64::from(f)).sum();
        if fg == 0 {
            return (0, 0);
        }
        let Some(model) = model else { return (0, 0) };
        let mut cnt_ge = [0u32; MAX_DISTINCT];
        let mut s_lt = [0u64; MAX_DISTINCT];
        let nm = self.profile(free, &mut cnt_ge, &mut s_lt);
        let (mut total, mut q124) = (0u64, 0u64);
        for t in &self.tasks {
            let gpu_group = t.num_gpu > 0 && t.models.allows(model);
            let f = if !gpu_group
                || free_cpu < t.cpu_milli
                || t.m_idx >= nm
                || cnt_ge[t.m_idx] < t.num_gpu
            {
                fg
            } else {
                s_lt[t.m_idx]
            };
            total += t.count * f;
            if gpu_group {
                q124 += t.count * f;
            }
        }
        (total, q124)
    }

    /// `F` of a node in the given state as the artifact computes it, in GPU-milli (not
    /// scaled): `float64` class sums, see the module docs. Equal to
    /// [`TypicalTasks::node_frag_scaled`]` / W` up to rounding.
    pub fn node_frag_artifact(&self, model: Option<ModelId>, free_cpu: u64, free: &[u16]) -> f64 {
        // Class indices: Q1 lack both, Q2 lack GPU, (Q3 satisfied, not summed), Q4 lack CPU,
        // XL / XR CPU-only groups with / without CPU, no access.
        const Q1: usize = 0;
        const Q2: usize = 1;
        const Q4: usize = 3;
        const XL: usize = 4;
        const XR: usize = 5;
        const NA: usize = 6;
        let Some(model) = model else { return 0.0 };
        let left: u64 = free.iter().map(|&f| u64::from(f)).sum();
        let mut cnt_ge = [0u32; MAX_DISTINCT];
        let mut s_lt = [0u64; MAX_DISTINCT];
        let nm = self.profile(free, &mut cnt_ge, &mut s_lt);
        let mut data = [0.0f64; 7];
        for (t, &freq) in self.tasks.iter().zip(&self.freq) {
            let cpu_ok = free_cpu >= t.cpu_milli;
            if t.gpu_milli == 0 {
                data[if cpu_ok { XL } else { XR }] += freq * left as f64;
                continue;
            }
            if !t.models.allows(model) {
                data[NA] += freq * left as f64;
                continue;
            }
            let (fits, small) = if t.m_idx < nm {
                (cnt_ge[t.m_idx] >= t.num_gpu, s_lt[t.m_idx])
            } else {
                let n = free
                    .iter()
                    .filter(|&&f| u32::from(f) >= t.gpu_milli)
                    .count();
                let small = free
                    .iter()
                    .filter(|&&f| u32::from(f) < t.gpu_milli)
                    .map(|&f| u64::from(f))
                    .sum();
                (n as u32 >= t.num_gpu, small)
            };
            match (fits, cpu_ok) {
                // Q3: the too-small accelerators go to Q2, the rest to Q3 (not summed).
                (true, true) => data[Q2] += freq * small as f64,
                (true, false) => data[Q4] += freq * left as f64,
                (false, true) => data[Q2] += freq * left as f64,
                (false, false) => data[Q1] += freq * left as f64,
            }
        }
        let mut out = 0.0;
        for i in [Q1, Q2, Q4, XL, XR, NA] {
            out += data[i];
        }
        out
    }

    /// The artifact's FGD score of a fragmentation change `Δ = F − F'` (GPU-milli, `f64`):
    /// `int64(σ(Δ / 1000) · 100)`, `σ(x) = 1 / (1 + exp(−x))`.
    pub fn artifact_score(delta: f64) -> i64 {
        let sigmoid = 1.0 / (1.0 + (-(delta / 1000.0)).exp());
        (sigmoid * 100.0) as i64
    }

    /// `W · F(n)` of a node as it is now (0 when unschedulable).
    pub fn node_frag_now(&self, fleet: &FleetState, n: NodeId) -> u64 {
        let node = fleet.node(n);
        if !node.schedulable {
            return 0;
        }
        self.node_frag_scaled(node.model, node.free_cpu_milli, fleet.gpu_free(n))
    }

    /// [`TypicalTasks::node_frag_parts_scaled`] of a node as it is now ((0, 0) when
    /// unschedulable).
    pub fn node_frag_parts_now(&self, fleet: &FleetState, n: NodeId) -> (u64, u64) {
        let node = fleet.node(n);
        if !node.schedulable {
            return (0, 0);
        }
        self.node_frag_parts_scaled(node.model, node.free_cpu_milli, fleet.gpu_free(n))
    }

    /// [`TypicalTasks::node_frag_artifact`] of a node as it is now (0 when unschedulable).
    pub fn node_frag_artifact_now(&self, fleet: &FleetState, n: NodeId) -> f64 {
        let node = fleet.node(n);
        if !node.schedulable {
            return 0.0;
        }
        self.node_frag_artifact(node.model, node.free_cpu_milli, fleet.gpu_free(n))
    }

    /// The FGD score of a fragmentation change `W·Δ`: `⌊100·σ(Δ/1000)⌋`, in `0..=99` for
    /// any `Δ` a node of at most 64 accelerators can produce.
    pub fn score(&self, delta_scaled: i64) -> i64 {
        self.thresholds.partition_point(|&t| t <= delta_scaled) as i64
    }
}

/// `W · F(n)` from the context's cache, recomputed when the node changed.
pub(crate) fn cached_frag(
    ctx: &mut PlaceCtx,
    typical: &TypicalTasks,
    fleet: &FleetState,
    n: NodeId,
) -> u64 {
    let len = fleet.nodes().len();
    if ctx.frag_cache.len() != len {
        ctx.frag_cache = vec![(0, 0); len];
    }
    let v = fleet.node_version(n) + 1;
    let slot = &mut ctx.frag_cache[n.index()];
    if slot.0 != v {
        *slot = (v, typical.node_frag_now(fleet, n));
    }
    slot.1
}

/// `F(n)` in the artifact's arithmetic from the context's cache, recomputed when the node
/// changed.
pub(crate) fn cached_frag_artifact(
    ctx: &mut PlaceCtx,
    typical: &TypicalTasks,
    fleet: &FleetState,
    n: NodeId,
) -> f64 {
    let len = fleet.nodes().len();
    if ctx.frag_cache_f64.len() != len {
        ctx.frag_cache_f64 = vec![(0, 0.0); len];
    }
    let v = fleet.node_version(n) + 1;
    let slot = &mut ctx.frag_cache_f64[n.index()];
    if slot.0 != v {
        *slot = (v, typical.node_frag_artifact_now(fleet, n));
    }
    slot.1
}

/// Fleet fragmentation now, in GPU-milli × `W` (divide by [`TypicalTasks::weight_total`]),
/// using and refreshing the context's per-node cache. `O(nodes)`; nodes that did not change
/// cost one comparison, and nothing is visited when no node changed since the last call
/// with the same typical table ([`FleetState::change_count`]).
pub fn fleet_frag_scaled(ctx: &mut PlaceCtx, fleet: &FleetState) -> Option<u128> {
    let typical = ctx.typical.take()?;
    let total = match ctx.frag_total {
        Some((changes, total))
            if changes == fleet.change_count() && ctx.frag_cache.len() == fleet.nodes().len() =>
        {
            total
        }
        _ => (0..fleet.nodes().len())
            .map(|i| u128::from(cached_frag(ctx, &typical, fleet, NodeId(i as u32))))
            .sum(),
    };
    ctx.frag_total = Some((fleet.change_count(), total));
    ctx.typical = Some(typical);
    Some(total)
}

/// FGD placement (see the module docs). Score range `0..=100`; ties to the lowest rank.
/// The typical tasks come from the context: a table set by the caller (the inflation
/// experiment builds it from the whole pod list), else the tasks observed so far
/// ([`PlaceCtx::observe`]; the scheduler records every submitted job); with neither, every
/// node scores 50 and the rank decides.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fgd;

impl Fgd {
    /// The score of placing `shape` on node `n` and, for a GPU-sharing task, the
    /// accelerator chosen, in the context's arithmetic.
    fn score_node(
        ctx: &mut PlaceCtx,
        typical: &TypicalTasks,
        fleet: &FleetState,
        n: NodeId,
        shape: &TaskShape,
    ) -> Option<(i64, Option<u64>)> {
        let model = fleet.node(n).model;
        match ctx.arithmetic {
            ScoreArithmetic::Exact => {
                let before = cached_frag(ctx, typical, fleet, n) as i64;
                Self::candidates(fleet, n, shape, |cpu, free| {
                    typical.score(before - typical.node_frag_scaled(model, cpu, free) as i64)
                })
            }
            ScoreArithmetic::Artifact => {
                let before = cached_frag_artifact(ctx, typical, fleet, n);
                Self::candidates(fleet, n, shape, |cpu, free| {
                    TypicalTasks::artifact_score(
                        before - typical.node_frag_artifact(model, cpu, free),
                    )
                })
            }
        }
    }

    /// Evaluates `score(free CPU after, free accelerators after)` for the hypothetical
    /// placements of `shape` on `n` (see the module docs) and returns the best, with the
    /// accelerator of a GPU-sharing task.
    fn candidates(
        fleet: &FleetState,
        n: NodeId,
        shape: &TaskShape,
        mut score: impl FnMut(u64, &[u16]) -> i64,
    ) -> Option<(i64, Option<u64>)> {
        let node = fleet.node(n);
        let free = fleet.gpu_free(n);
        let cpu_after = node.free_cpu_milli.checked_sub(shape.cpu_milli)?;
        let mut buf = [0u16; 64];
        let g = free.len();
        buf[..g].copy_from_slice(free);
        if shape.num_gpu == 0 {
            return Some((score(cpu_after, &buf[..g]), None));
        }
        if shape.gpu_milli >= WHOLE_GPU_MILLI {
            let mut need = shape.num_gpu;
            for f in buf[..g].iter_mut() {
                if need > 0 && u32::from(*f) == WHOLE_GPU_MILLI {
                    *f = 0;
                    need -= 1;
                }
            }
            if need > 0 {
                return None;
            }
            return Some((score(cpu_after, &buf[..g]), None));
        }
        // A share: one accelerator (the traces have no multi-accelerator shares; a task of
        // several shares takes the tightest accelerators, as the default binding does).
        if shape.num_gpu > 1 {
            let mask = fleet.choose_gpus(n, shape)?;
            for i in crate::state::bits(mask) {
                buf[i] -= shape.gpu_milli as u16;
            }
            return Some((score(cpu_after, &buf[..g]), Some(mask)));
        }
        let mut best: Option<(i64, usize)> = None;
        let mut seen: [(u16, i64); 64] = [(u16::MAX, 0); 64];
        let mut nseen = 0usize;
        for i in 0..g {
            let f = free[i];
            if u32::from(f) < shape.gpu_milli {
                continue;
            }
            let s = match seen[..nseen].iter().find(|(v, _)| *v == f) {
                Some(&(_, s)) => s,
                None => {
                    buf[i] = f - shape.gpu_milli as u16;
                    let s = score(cpu_after, &buf[..g]);
                    buf[i] = f;
                    seen[nseen] = (f, s);
                    nseen += 1;
                    s
                }
            };
            if best.is_none_or(|(bs, _)| s > bs) {
                best = Some((s, i));
            }
        }
        best.map(|(s, i)| (s, Some(1u64 << i)))
    }
}

impl Placement for Fgd {
    fn name(&self) -> &'static str {
        "fgd"
    }

    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice> {
        ctx.refresh_observed_typical();
        let Some(typical) = ctx.typical.take() else {
            return argmax_by_rank(ctx, fleet, cell, shape, models, "fgd-untrained", |_, _| {
                Some((50, None))
            });
        };
        let out = argmax_by_rank(ctx, fleet, cell, shape, models, self.name(), |ctx, n| {
            Self::score_node(ctx, &typical, fleet, n, shape)
        });
        ctx.typical = Some(typical);
        out
    }

    fn node_score(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        n: NodeId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<(i64, Option<u64>)> {
        if !fleet.fits(n, shape, models) {
            return None;
        }
        let Some(typical) = ctx.typical.take() else {
            return Some((50, None));
        };
        let out = Self::score_node(ctx, &typical, fleet, n, shape);
        ctx.typical = Some(typical);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::NodeSpec;

    fn sample(cpu: u64, gpus: u32, milli: u32, n: usize) -> Vec<TaskSample> {
        vec![
            TaskSample {
                shape: TaskShape {
                    num_gpu: gpus,
                    gpu_milli: milli,
                    cpu_milli: cpu,
                    mem_mib: 0,
                },
                models: ModelSet::ANY,
                type_key: String::new(),
            };
            n
        ]
    }

    #[test]
    fn table_keeps_the_heaviest_prefix() {
        let mut all = sample(1000, 1, 500, 60);
        all.extend(sample(2000, 0, 0, 30));
        all.extend(sample(4000, 2, 1000, 6));
        all.extend(sample(1000, 1, 250, 4));
        let t = TypicalTasks::build(all.clone(), 95);
        // 60 + 30 = 90 < 95; + 6 = 96 ≥ 95: three groups, W = 96.
        assert_eq!(t.tasks().len(), 3);
        assert_eq!(t.weight_total(), 96);
        assert_eq!(t.tasks()[0].gpu_milli, 500);
        assert_eq!(TypicalTasks::build(all, 100).tasks().len(), 4);
    }

    #[test]
    fn weighted_build_equals_the_expanded_one() {
        let groups = [
            (1000, 1, 500, 60),
            (2000, 0, 0, 30),
            (1500, 0, 0, 0),
            (4000, 2, 1000, 6),
            (1000, 1, 250, 4),
            (1000, 1, 500, 7),
        ];
        for pct in [50, 95, 100] {
            let expanded: Vec<TaskSample> = groups
                .iter()
                .flat_map(|&(cpu, g, m, n)| sample(cpu, g, m, n))
                .collect();
            let weighted = groups.iter().map(|&(cpu, g, m, n)| {
                let one = sample(cpu, g, m, 1).pop().expect("one");
                (one, n as u64)
            });
            assert_eq!(
                TypicalTasks::build_weighted(weighted, pct),
                TypicalTasks::build(expanded, pct)
            );
        }
    }

    #[test]
    fn score_thresholds_match_the_sigmoid() {
        let t = TypicalTasks::build(sample(1000, 1, 500, 3), 100);
        let w = t.weight_total() as i64;
        assert_eq!(t.score(0), 50);
        assert_eq!(t.score(-1), 49);
        for d in [-5000i64, -700, -1, 1, 300, 999, 1000, 4000] {
            let x = d as f64 / 1000.0;
            let want = (100.0 / (1.0 + (-x).exp())) as i64;
            assert_eq!(t.score(d * w), want, "Δ = {d}");
        }
    }

    /// The two-node example, computed by hand.
    ///
    /// Typical tasks: A = (1 core, 1 × 500 m) × 3, B = (1 core, 2 × 1000 m) × 1, so W = 4,
    /// weights ¾ and ¼. Nodes (2 accelerators, 8 cores each): n0 has accelerators free
    /// (500, 1000), n1 is empty (1000, 1000).
    ///
    /// * F(n0): A fits (two accelerators ≥ 500) → 0 stranded; B needs two whole free
    ///   accelerators, has one → Fg = 1500. W·F = 3·0 + 1·1500 = 1500.
    /// * F(n1): A fits → 0; B fits → 0. W·F = 0.
    ///
    /// Placing a task A' = (1 core, 1 × 500 m):
    /// * on n0, accelerator 0 (500 → 0): free (0, 1000): A fits, stranded 0; B does not,
    ///   Fg = 1000. W·F' = 1000; W·Δ = 1500 − 1000 = 500 → Δ = 125 → ⌊100σ(0.125)⌋ = 53.
    /// * on n0, accelerator 1 (1000 → 500): free (500, 500): A fits → 0; B no → 1000.
    ///   W·F' = 1000 → also 53; accelerator 0 wins the tie (lower index).
    /// * on n1 (either accelerator, → (500, 1000)): W·F' = 1500 (as n0 now);
    ///   W·Δ = 0 − 1500 → Δ = −375 → ⌊100σ(−0.375)⌋ = 40.
    ///
    /// So FGD puts A' on n0, accelerator 0, although n1 ranks first.
    #[test]
    fn hand_computed_two_node_scores() {
        let mut tasks = sample(1000, 1, 500, 3);
        tasks.extend(sample(1000, 2, 1000, 1));
        let typical = TypicalTasks::build(tasks, 100);
        assert_eq!(typical.weight_total(), 4);
        let spec = |name: &str| NodeSpec {
            name: name.into(),
            cell: CellId(0),
            block: 0,
            domain: 0,
            model: Some(ModelId(0)),
            gpus: 2,
            cpu_milli: 8000,
            mem_mib: 1000,
        };
        let mut f = FleetState::new(
            vec!["c".into()],
            vec!["G".into()],
            vec![spec("n0"), spec("n1")],
        )
        .unwrap();
        let half = TaskShape {
            num_gpu: 1,
            gpu_milli: 500,
            cpu_milli: 1000,
            mem_mib: 0,
        };
        // Make n0 (500, 1000) with a 500 m task on accelerator 0.
        crate::placement::bind(
            &mut f,
            Choice {
                node: NodeId(0),
                gpu_mask: Some(1),
            },
            &half,
            ModelSet::ANY,
        )
        .unwrap();
        assert_eq!(typical.node_frag_now(&f, NodeId(0)), 1500);
        assert_eq!(typical.node_frag_now(&f, NodeId(1)), 0);
        let mut ctx = PlaceCtx::new()
            .with_typical(typical.clone())
            .with_rank(vec![1, 0]);
        assert_eq!(
            Fgd::score_node(&mut ctx, &typical, &f, NodeId(0), &half),
            Some((53, Some(1)))
        );
        assert_eq!(
            Fgd::score_node(&mut ctx, &typical, &f, NodeId(1), &half),
            Some((40, Some(1)))
        );
        let c = Fgd
            .select(&mut ctx, &f, CellId(0), &half, ModelSet::ANY)
            .unwrap();
        assert_eq!((c.node, c.gpu_mask), (NodeId(0), Some(1)));
        // Fleet fragmentation: (1500 + 0) / W = 375 GPU-milli.
        assert_eq!(fleet_frag_scaled(&mut ctx, &f), Some(1500));
        // The artifact's float64 arithmetic gives the same F (375 = 1500 / 4), the same
        // scores and the same choice here; n0's Q1+Q2+Q4 part is all of it (B lacks GPU).
        assert_eq!(typical.node_frag_artifact_now(&f, NodeId(0)), 375.0);
        assert_eq!(typical.node_frag_parts_now(&f, NodeId(0)), (1500, 1500));
        let mut art = PlaceCtx::new()
            .with_typical(typical.clone())
            .with_rank(vec![1, 0])
            .with_arithmetic(ScoreArithmetic::Artifact);
        assert_eq!(
            Fgd.node_score(&mut art, &f, NodeId(0), &half, ModelSet::ANY),
            Some((53, Some(1)))
        );
        assert_eq!(
            Fgd.node_score(&mut art, &f, NodeId(1), &half, ModelSet::ANY),
            Some((40, Some(1)))
        );
    }

    /// The artifact's score at `Δ = 0` is exactly 50, but a `Δ` a few ulps below 0 — what
    /// float64 class sums leave when `F` is unchanged in exact arithmetic — scores 49.
    #[test]
    fn artifact_score_at_zero_and_just_below() {
        assert_eq!(TypicalTasks::artifact_score(0.0), 50);
        assert_eq!(TypicalTasks::artifact_score(-1.2e-12), 49);
        assert_eq!(TypicalTasks::artifact_score(1.2e-12), 50);
        assert_eq!(TypicalTasks::artifact_score(125.0), 53);
        assert_eq!(TypicalTasks::artifact_score(-375.0), 40);
    }

    /// CPU-only groups count the node's whole free GPU-milli as fragment but are not part of
    /// Q1+Q2+Q4; a node whose model a group excludes is "no access", also outside it.
    #[test]
    fn q124_part_leaves_out_cpu_only_and_inaccessible_groups() {
        let mut tasks = sample(1000, 1, 500, 2);
        tasks.extend(sample(1000, 0, 0, 1));
        tasks.push(TaskSample {
            shape: TaskShape {
                num_gpu: 1,
                gpu_milli: 1000,
                cpu_milli: 1000,
                mem_mib: 0,
            },
            models: ModelSet(1 << 1),
            type_key: "B".into(),
        });
        let t = TypicalTasks::build(tasks, 100);
        // A node of model 0 with free (300, 1000) and plenty of CPU: the 500 m group fits,
        // stranding 300 (×2); CPU-only and model-1 groups count all 1,300 (×1 each).
        let (total, q124) = t.node_frag_parts_scaled(Some(ModelId(0)), 8000, &[300, 1000]);
        assert_eq!((total, q124), (2 * 300 + 1300 + 1300, 2 * 300));
        let f = t.node_frag_artifact(Some(ModelId(0)), 8000, &[300, 1000]);
        assert_eq!(f, total as f64 / 4.0);
    }
}
