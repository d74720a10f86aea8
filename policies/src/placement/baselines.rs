//! The FGD paper's baseline placements (Weng et al., USENIX ATC '23, §6.1), as its artifact
//! implements them (`hkust-adsl/kubernetes-scheduler-simulator`,
//! `pkg/simulator/plugin/{random_score,dot_product_score,gpu_clustering_score,gpu_packing_score,best_fit_score}.go`).
//!
//! Notation for a candidate node and the task: `Fc` free CPU (milli), `Fg` free GPU-milli
//! summed over the node's accelerators, `G` its accelerators; `Rc` the task's CPU, `Rg` its
//! total GPU-milli (`num_gpu × gpu_milli`). Every score is an integer obtained by truncating
//! toward zero (the artifact's `int64(…)` conversion), computed here with exact integer
//! arithmetic; the highest score wins, ties to the lowest rank ([`PlaceCtx::rank`]).

use super::{argmax_by_rank, Choice, PlaceCtx, Placement, ScoreArithmetic};
use crate::ids::{CellId, NodeId};
use crate::resources::{ModelSet, TaskShape, WHOLE_GPU_MILLI};
use crate::state::FleetState;

/// CPU normaliser of the artifact's scores: 128 cores, milli.
const CPU_SCALE: i128 = 128_000;
/// GPU normaliser of the artifact's scores: 8 accelerators, GPU-milli.
const GPU_SCALE: i128 = 8_000;

/// Implements [`Placement`] for a policy whose node score depends only on the node and the
/// task (`Self::score(fleet, node, shape)`): the feasible node with the highest score wins,
/// ties to the lowest rank ([`argmax_by_rank`]); no accelerator choice beyond the default.
macro_rules! score_only_placement {
    ($ty:ty, $name:literal) => {
        impl Placement for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn select(
                &self,
                ctx: &mut PlaceCtx,
                fleet: &FleetState,
                cell: CellId,
                shape: &TaskShape,
                models: ModelSet,
            ) -> Option<Choice> {
                argmax_by_rank(ctx, fleet, cell, shape, models, self.name(), |_, n| {
                    Some((Self::score(fleet, n, shape), None))
                })
            }
            fn node_score(
                &self,
                _ctx: &mut PlaceCtx,
                fleet: &FleetState,
                n: NodeId,
                shape: &TaskShape,
                models: ModelSet,
            ) -> Option<(i64, Option<u64>)> {
                fleet
                    .fits(n, shape, models)
                    .then(|| (Self::score(fleet, n, shape), None))
            }
        }
    };
}

/// Random: a uniformly random fitting node (one draw per task from [`PlaceCtx::rng`]); a
/// GPU-sharing task takes a uniformly random accelerator with room (wholly free ones
/// included); whole accelerators are the lowest-indexed free ones. No score, no ties.
#[derive(Clone, Copy, Debug, Default)]
pub struct RandomFit;

impl Placement for RandomFit {
    fn name(&self) -> &'static str {
        "random"
    }
    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice> {
        let feasible: Vec<NodeId> = fleet.cells()[cell.index()]
            .nodes
            .iter()
            .copied()
            .filter(|&n| fleet.fits(n, shape, models) && ctx.allowed(fleet, n))
            .collect();
        if feasible.is_empty() {
            return None;
        }
        let node = feasible[ctx.rng.below(feasible.len() as u64) as usize];
        ctx.decisions += 1;
        if shape.num_gpu == 1 && shape.gpu_milli < WHOLE_GPU_MILLI {
            let room: Vec<usize> = fleet
                .gpu_free(node)
                .iter()
                .enumerate()
                .filter(|(_, &f)| u32::from(f) >= shape.gpu_milli)
                .map(|(i, _)| i)
                .collect();
            let i = room[ctx.rng.below(room.len() as u64) as usize];
            return Some(Choice {
                node,
                gpu_mask: Some(1u64 << i),
            });
        }
        Some(Choice::node(node))
    }
}

/// DotProd ("merge" dimensions, "max" normalisation): `d = (Fc/128000)·(Rc/128000) +
/// (Fg/8000)·(Rg/8000)`, score `⌊100·(1 − d/2)⌋` — at most 100, below 0 only for nodes
/// larger than 128 cores or 8 accelerators. The node with the least free resource in the
/// dimensions the task asks for wins (a packing rule, Tetris-like).
#[derive(Clone, Copy, Debug, Default)]
pub struct DotProd;

impl DotProd {
    /// The score of node `n` for `shape`.
    pub fn score(fleet: &FleetState, n: NodeId, shape: &TaskShape) -> i64 {
        let node = fleet.node(n);
        let fc = i128::from(node.free_cpu_milli);
        let fg = i128::from(node.free_gpu_milli);
        let rc = i128::from(shape.cpu_milli);
        let rg = i128::from(shape.total_gpu_milli());
        // d = (fc·rc + 256·fg·rg) / 128000²; 100·(1 − d/2) = (100·D − 50·N) / D.
        let den = CPU_SCALE * CPU_SCALE;
        let num = fc * rc + (CPU_SCALE / GPU_SCALE).pow(2) * fg * rg;
        ((100 * den - 50 * num) / den) as i64
    }
}

score_only_placement!(DotProd, "dot-prod");

/// GpuClustering: put tasks of one GPU class together. Classes: GPU-sharing, or `k` whole
/// accelerators ([`FleetState::task_class`]). CPU-only tasks score 0 everywhere. For a GPU
/// task, `base = ⌊25·(8000 − Fg)/8000⌋` plus 75 when the node holds only tasks of the task's
/// class, 50 when it holds that class and others, 25 when it holds no GPU task, 0 when it
/// holds only other classes. Range: up to 100 (below 0 only for nodes above 8
/// accelerators).
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuClustering;

impl GpuClustering {
    /// The score of node `n` for `shape`.
    pub fn score(fleet: &FleetState, n: NodeId, shape: &TaskShape) -> i64 {
        if shape.num_gpu == 0 {
            return 0;
        }
        let class: u8 = if shape.gpu_milli < WHOLE_GPU_MILLI {
            0
        } else {
            shape.num_gpu.min(255) as u8
        };
        let fg = i64::from(fleet.node(n).free_gpu_milli);
        let base = 25 * (8000 - fg) / 8000;
        let classes = fleet.task_classes(n);
        let has = classes.iter().any(|&(c, _)| c == class);
        let bonus = match (classes.len(), has) {
            (0, _) => 25,
            (1, true) => 75,
            (_, true) => 50,
            (_, false) => 0,
        };
        base + bonus
    }
}

score_only_placement!(GpuClustering, "gpu-clustering");

/// GpuPacking: fill partly used accelerators first, then partly used nodes, then empty
/// nodes. CPU-only tasks score 0. For a GPU task on a node whose `G` accelerators are all
/// wholly free: `max(33 − G, G)`. Otherwise the accelerators the task would take are found
/// (ascending free GPU-milli, ties by index, the first `num_gpu` with room): if any of them is
/// wholly free, `max(50 − (wholly free ones taken), 33)`; else (a share on an already shared
/// accelerator) `r = ⌊free·100/1000⌋` of that accelerator and the score is
/// `max(100 − ⌊r/10⌋, 50)`, the tightest accelerator scoring highest. Range 1…100.
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuPacking;

impl GpuPacking {
    /// The score of node `n` for `shape`.
    pub fn score(fleet: &FleetState, n: NodeId, shape: &TaskShape) -> i64 {
        if shape.num_gpu == 0 {
            return 0;
        }
        let node = fleet.node(n);
        let g = i64::from(node.gpus);
        if node.free_whole == node.gpus {
            return (33 - g).max(g);
        }
        let mut fitting: Vec<(u16, usize)> = fleet
            .gpu_free(n)
            .iter()
            .enumerate()
            .filter(|(_, &f)| u32::from(f) >= shape.gpu_milli)
            .map(|(i, &f)| (f, i))
            .collect();
        fitting.sort_unstable();
        let taken = &fitting[..(shape.num_gpu as usize).min(fitting.len())];
        let whole_taken = taken
            .iter()
            .filter(|(f, _)| u32::from(*f) == WHOLE_GPU_MILLI)
            .count() as i64;
        if whole_taken > 0 {
            return (50 - whole_taken).max(33);
        }
        let free = taken.first().map_or(0, |&(f, _)| i64::from(f));
        let r = free * 100 / 1000;
        (100 - r / 10).max(50)
    }
}

score_only_placement!(GpuPacking, "gpu-packing");

/// The FGD artifact's BestFit: `s = ½·(Fc − Rc)/128000 + ½·(Fg − Rg)/8000`, score
/// `⌊100·(1 − s)⌋` (at most 100; below 0 only for nodes above 128 cores or 8 accelerators).
/// The artifact then min–max normalises the scores over the feasible nodes with integer
/// division; that maps exactly the nodes with the highest raw score to 100 and every other
/// node below, so the winner is the same and it is skipped here.
///
/// Differs from `best-fit` ([`super::BestFit`]): CPU counts for every task, the two
/// dimensions are weighted against fixed scales, the score is truncated (so many nodes tie)
/// and ties go to the rank, not the node id.
///
/// With [`ScoreArithmetic::Artifact`] the score is computed as the artifact does, in `f64`
/// ([`FgdBestFit::artifact_score`]): where `100·(1 − s)` is exactly an integer, rounding can
/// leave it just below and the truncation one point lower.
#[derive(Clone, Copy, Debug, Default)]
pub struct FgdBestFit;

impl FgdBestFit {
    /// The score of node `n` for `shape`.
    pub fn score(fleet: &FleetState, n: NodeId, shape: &TaskShape) -> i64 {
        let node = fleet.node(n);
        let lc = i128::from(node.free_cpu_milli) - i128::from(shape.cpu_milli);
        let lg = i128::from(node.free_gpu_milli) - i128::from(shape.total_gpu_milli());
        // s = (lc + 16·lg) / 256000; 100·(1 − s) = (25,600,000 − 100·(lc + 16·lg)) / 256000.
        let den = 2 * CPU_SCALE;
        let x = lc + (CPU_SCALE / GPU_SCALE) * lg;
        ((100 * den - 100 * x) / den) as i64
    }

    /// The artifact's evaluation of the same score (`best_fit_score.go`): `s = 0`, then
    /// `s += (free − request) / max · 0.5` for CPU (max 128,000) and GPU (max 8,000) in that
    /// order, all in `f64`, and `int64((1 − s) · 100)`.
    pub fn artifact_score(fleet: &FleetState, n: NodeId, shape: &TaskShape) -> i64 {
        let node = fleet.node(n);
        let mut s = 0.0f64;
        s += (node.free_cpu_milli as f64 - shape.cpu_milli as f64) / CPU_SCALE as f64 * 0.5;
        s += (f64::from(node.free_gpu_milli) - shape.total_gpu_milli() as f64) / GPU_SCALE as f64
            * 0.5;
        ((1.0 - s) * 100.0) as i64
    }

    fn score_in(ctx: &PlaceCtx, fleet: &FleetState, n: NodeId, shape: &TaskShape) -> i64 {
        match ctx.arithmetic() {
            ScoreArithmetic::Exact => Self::score(fleet, n, shape),
            ScoreArithmetic::Artifact => Self::artifact_score(fleet, n, shape),
        }
    }
}

impl Placement for FgdBestFit {
    fn name(&self) -> &'static str {
        "fgd-best-fit"
    }
    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice> {
        argmax_by_rank(ctx, fleet, cell, shape, models, self.name(), |ctx, n| {
            Some((Self::score_in(ctx, fleet, n, shape), None))
        })
    }
    fn node_score(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        n: NodeId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<(i64, Option<u64>)> {
        fleet
            .fits(n, shape, models)
            .then(|| (Self::score_in(ctx, fleet, n, shape), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ModelId;
    use crate::state::NodeSpec;

    fn fleet() -> FleetState {
        let spec = |name: &str, gpus, cpu| NodeSpec {
            name: name.into(),
            cell: CellId(0),
            block: 0,
            domain: 0,
            model: Some(ModelId(0)),
            gpus,
            cpu_milli: cpu,
            mem_mib: 100_000,
        };
        FleetState::new(
            vec!["c".into()],
            vec!["G".into()],
            vec![spec("a", 8, 96_000), spec("b", 2, 64_000)],
        )
        .unwrap()
    }

    #[test]
    fn scores_by_hand() {
        let f = fleet();
        let t = TaskShape {
            num_gpu: 1,
            gpu_milli: 500,
            cpu_milli: 8000,
            mem_mib: 0,
        };
        // DotProd on a: d = 96000·8000/128000² + 8000·500/8000² = 0.046875 + 0.0625
        // = 0.109375; 100·(1 − 0.0546875) = 94.53 → 94.
        assert_eq!(DotProd::score(&f, NodeId(0), &t), 94);
        // On b: 64000·8000/128000² + 2000·500/8000² = 0.03125 + 0.015625; → 97.65 → 97.
        assert_eq!(DotProd::score(&f, NodeId(1), &t), 97);
        // GpuClustering: empty nodes: base ⌊25·0/8000⌋ = 0 (+25); b: ⌊25·6000/8000⌋ = 18 (+25).
        assert_eq!(GpuClustering::score(&f, NodeId(0), &t), 25);
        assert_eq!(GpuClustering::score(&f, NodeId(1), &t), 43);
        // GpuPacking on empty nodes: max(33 − 8, 8) = 25, max(33 − 2, 2) = 31.
        assert_eq!(GpuPacking::score(&f, NodeId(0), &t), 25);
        assert_eq!(GpuPacking::score(&f, NodeId(1), &t), 31);
        // BestFit on a: s = ½·88000/128000 + ½·7500/8000 = 0.34375 + 0.46875 = 0.8125 → 18.
        assert_eq!(FgdBestFit::score(&f, NodeId(0), &t), 18);
        // On b: ½·56000/128000 + ½·1500/8000 = 0.21875 + 0.09375 = 0.3125 → 68.
        assert_eq!(FgdBestFit::score(&f, NodeId(1), &t), 68);
    }

    /// Where `100·(1 − s)` is an exact integer, the artifact's float64 can land just below
    /// it: leftover CPU 0, leftover GPU 5,440 milli gives `s = 0.34` and exactly 66, but
    /// `(1 − 0.34) · 100` in float64 is 65.99999999999999, truncated to 65.
    #[test]
    fn best_fit_artifact_arithmetic_truncates_below_integers() {
        let mut f = fleet();
        let share = TaskShape {
            num_gpu: 1,
            gpu_milli: 560,
            cpu_milli: 0,
            mem_mib: 0,
        };
        f.allocate(NodeId(1), &share, ModelSet::ANY).unwrap();
        // Node b: 64,000 mCPU, GPU free 2,000 − 560 = 1,440; a task of 64,000 mCPU and one
        // whole GPU leaves lc = 0, lg = 440: s = 440/16000 = 0.0275 → 97.25 → 97 both ways.
        let two = TaskShape {
            num_gpu: 1,
            gpu_milli: 1000,
            cpu_milli: 64_000,
            mem_mib: 0,
        };
        assert_eq!(FgdBestFit::score(&f, NodeId(1), &two), 97);
        assert_eq!(FgdBestFit::artifact_score(&f, NodeId(1), &two), 97);
        // Node a: 8 GPUs; after a 560 m share, free 7,440; two whole GPUs and all 96,000 mCPU
        // leave lc = 0, lg = 5,440.
        f.allocate(NodeId(0), &share, ModelSet::ANY).unwrap();
        let pair = TaskShape {
            num_gpu: 2,
            gpu_milli: 1000,
            cpu_milli: 96_000,
            mem_mib: 0,
        };
        assert_eq!(FgdBestFit::score(&f, NodeId(0), &pair), 66);
        assert_eq!(FgdBestFit::artifact_score(&f, NodeId(0), &pair), 65);
        let mut ctx = PlaceCtx::new().with_arithmetic(ScoreArithmetic::Artifact);
        assert_eq!(
            FgdBestFit.node_score(&mut ctx, &f, NodeId(0), &pair, ModelSet::ANY),
            Some((65, None))
        );
    }

    #[test]
    fn packing_prefers_tight_shared_gpus() {
        let mut f = fleet();
        let share = |m| TaskShape {
            num_gpu: 1,
            gpu_milli: m,
            cpu_milli: 1000,
            mem_mib: 0,
        };
        f.allocate(NodeId(0), &share(700), ModelSet::ANY).unwrap();
        // a's accelerator 0 has 300 free: a 200 m share takes it, r = 30, 100 − 3 = 97.
        assert_eq!(GpuPacking::score(&f, NodeId(0), &share(200)), 97);
        // A 500 m share needs a whole free accelerator on a partly used node: 50 − 1 = 49.
        assert_eq!(GpuPacking::score(&f, NodeId(0), &share(500)), 49);
        // GpuClustering: a holds one sharing task → same class only: ⌊25·700/8000⌋ + 75.
        assert_eq!(GpuClustering::score(&f, NodeId(0), &share(200)), 77);
        assert_eq!(
            GpuClustering::score(&f, NodeId(0), &TaskShape::whole_gpus(1)),
            2
        );
    }

    #[test]
    fn random_is_seeded_and_stays_feasible() {
        let f = fleet();
        let t = TaskShape {
            num_gpu: 1,
            gpu_milli: 300,
            cpu_milli: 1000,
            mem_mib: 0,
        };
        let picks = |seed| {
            let mut ctx = PlaceCtx::new().with_seed(seed);
            (0..20)
                .map(|_| {
                    RandomFit
                        .select(&mut ctx, &f, CellId(0), &t, ModelSet::ANY)
                        .unwrap()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(7), picks(7));
        assert!(picks(7).iter().any(|c| c.node == NodeId(0)));
        assert!(picks(7).iter().any(|c| c.node == NodeId(1)));
    }
}
