//! The classic bin-packing placements: first-fit, best-fit, worst-fit. Ties go to the lowest
//! node id (fleet declaration order), not to the context's rank, so these names keep their
//! meaning whatever rank a run passes.

use super::{Choice, PlaceCtx, Placement};
use crate::ids::{CellId, NodeId};
use crate::resources::{ModelSet, TaskShape};
use crate::state::FleetState;

/// First-fit: the lowest-id node of the cell that fits. `O(nodes)` per task.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstFit;

impl Placement for FirstFit {
    fn name(&self) -> &'static str {
        "first-fit"
    }
    fn select_is_pure(&self) -> bool {
        true
    }
    fn select_is_complete(&self) -> bool {
        true
    }
    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice> {
        fleet.cells()[cell.index()]
            .nodes
            .iter()
            .copied()
            .find(|&n| fleet.fits(n, shape, models) && ctx.allowed(fleet, n))
            .map(Choice::node)
    }
}

/// Best-fit: the fitting node with the least free GPU-milli (for a CPU-only task, the least
/// free CPU), ties to the lowest node id. Uses the cell's capacity index.
#[derive(Clone, Copy, Debug, Default)]
pub struct BestFit;

impl Placement for BestFit {
    fn name(&self) -> &'static str {
        "best-fit"
    }
    fn select_is_pure(&self) -> bool {
        true
    }
    fn select_is_complete(&self) -> bool {
        true
    }
    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice> {
        if shape.num_gpu == 0 {
            return fleet
                .cpu_candidates(cell, shape.cpu_milli)
                .find(|&n| fleet.fits(n, shape, models) && ctx.allowed(fleet, n))
                .map(Choice::node);
        }
        let need = shape.total_gpu_milli() as u32;
        let mut best: Option<(u32, NodeId)> = None;
        for m in fleet.cell_models(cell).filter(|&m| models.allows(m)) {
            if let Some(n) = fleet.find_gpu_candidate(cell, m, need, |n| {
                fleet.fits(n, shape, models) && ctx.allowed(fleet, n)
            }) {
                let key = (fleet.node(n).free_gpu_milli, n);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
        }
        best.map(|(_, n)| Choice::node(n))
    }
}

/// Worst-fit (spread): the fitting node with the most free GPU-milli (for a CPU-only task, the
/// most free CPU), ties to the lowest node id. Uses the cell's capacity index.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorstFit;

impl WorstFit {
    /// Among candidates in descending `(free, id)` order, the first that fits at the highest
    /// free value, with the lowest id.
    fn pick(
        ctx: &PlaceCtx,
        fleet: &FleetState,
        mut desc: impl Iterator<Item = NodeId>,
        free: impl Fn(NodeId) -> u64,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<(u64, NodeId)> {
        let mut best: Option<(u64, NodeId)> = None;
        for n in desc.by_ref() {
            let f = free(n);
            if let Some((bf, _)) = best {
                if f < bf {
                    break;
                }
            }
            if fleet.fits(n, shape, models) && ctx.allowed(fleet, n) {
                // Descending ids within one free value: the last fitting one is the lowest id.
                best = Some((f, n));
            }
        }
        best
    }
}

impl Placement for WorstFit {
    fn name(&self) -> &'static str {
        "worst-fit"
    }
    fn select_is_pure(&self) -> bool {
        true
    }
    fn select_is_complete(&self) -> bool {
        true
    }
    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice> {
        if shape.num_gpu == 0 {
            return Self::pick(
                ctx,
                fleet,
                fleet.cpu_candidates_desc(cell, shape.cpu_milli),
                |n| fleet.node(n).free_cpu_milli,
                shape,
                models,
            )
            .map(|(_, n)| Choice::node(n));
        }
        let need = shape.total_gpu_milli() as u32;
        let mut best: Option<(u64, NodeId)> = None;
        for m in fleet.cell_models(cell).filter(|&m| models.allows(m)) {
            let got = Self::pick(
                ctx,
                fleet,
                fleet.gpu_candidates_desc(cell, m, need),
                |n| fleet.node(n).free_gpu_milli as u64,
                shape,
                models,
            );
            if let Some((f, n)) = got {
                // More free wins; at equal free, the lower id.
                if best.is_none_or(|(bf, bn)| f > bf || (f == bf && n < bn)) {
                    best = Some((f, n));
                }
            }
        }
        best.map(|(_, n)| Choice::node(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ModelId;
    use crate::job::PendingJob;
    use crate::placement::place_gang;
    use crate::state::NodeSpec;

    fn pick(p: &dyn Placement, f: &FleetState, shape: &TaskShape) -> Option<NodeId> {
        p.select(&mut PlaceCtx::new(), f, CellId(0), shape, ModelSet::ANY)
            .map(|c| c.node)
    }

    /// Field case B13's fleet: x1 with 2 GPUs, x2 and x3 with 1.
    fn b13() -> FleetState {
        let spec = |name: &str, gpus| NodeSpec {
            name: name.into(),
            cell: CellId(0),
            block: 0,
            domain: 0,
            model: Some(ModelId(0)),
            gpus,
            cpu_milli: 1000,
            mem_mib: 1000,
        };
        FleetState::new(
            vec!["c".into()],
            vec!["G".into()],
            vec![spec("x1", 2), spec("x2", 1), spec("x3", 1)],
        )
        .unwrap()
    }

    #[test]
    fn policies_pick_as_documented() {
        let mut f = b13();
        f.enable_cpu_index();
        let one = TaskShape::whole_gpus(1);
        assert_eq!(pick(&FirstFit, &f, &one), Some(NodeId(0)));
        assert_eq!(pick(&BestFit, &f, &one), Some(NodeId(1)));
        assert_eq!(pick(&WorstFit, &f, &one), Some(NodeId(0)));
        let two = TaskShape::whole_gpus(2);
        assert_eq!(pick(&BestFit, &f, &two), Some(NodeId(0)));
        let cpu_only = TaskShape {
            num_gpu: 0,
            gpu_milli: 0,
            cpu_milli: 500,
            mem_mib: 0,
        };
        assert_eq!(pick(&WorstFit, &f, &cpu_only), Some(NodeId(0)));
    }

    proptest::proptest! {
        /// `select_is_complete`: a policy that claims it finds a node whenever one of the
        /// cell fits the task (whole or shared accelerators, CPU, memory, two models, a
        /// node down), and picks only nodes that fit (`select_is_pure`).
        #[test]
        fn complete_policies_find_a_fitting_node_whenever_one_exists(
            gpus in proptest::collection::vec(1u32..=8, 1..12),
            load in proptest::collection::vec((0usize..12, 1u32..=4, 100u32..=1000, 0u64..600), 0..30),
            shape in (1u32..=4, proptest::prop_oneof![proptest::strategy::Just(1000u32), 100u32..1000], 0u64..800),
            models in 0u128..=3,
            down in proptest::option::of(0usize..12),
        ) {
            let specs = gpus
                .iter()
                .enumerate()
                .map(|(i, &g)| NodeSpec {
                    name: format!("n{i}"),
                    cell: CellId(0),
                    block: 0,
                    domain: 0,
                    model: Some(ModelId((i % 2) as u16)),
                    gpus: g,
                    cpu_milli: 1000,
                    mem_mib: 1000,
                })
                .collect();
            let mut f =
                FleetState::new(vec!["c".into()], vec!["A".into(), "B".into()], specs).unwrap();
            for (node, n, milli, cpu) in load {
                let id = NodeId((node % gpus.len()) as u32);
                let t = TaskShape { num_gpu: n, gpu_milli: milli, cpu_milli: cpu, mem_mib: 0 };
                if let Some(mask) = f.choose_gpus(id, &t).filter(|_| f.fits(id, &t, ModelSet::ANY)) {
                    let a = crate::state::TaskAlloc {
                        node: id,
                        gpu_mask: mask,
                        gpu_milli: t.gpu_milli,
                        cpu_milli: t.cpu_milli,
                        mem_mib: 0,
                    };
                    f.apply(&a).unwrap();
                }
            }
            if let Some(d) = down {
                f.set_schedulable(NodeId((d % gpus.len()) as u32), false);
            }
            let (n, milli, cpu) = shape;
            let task = TaskShape { num_gpu: n, gpu_milli: milli, cpu_milli: cpu, mem_mib: 0 };
            let models = ModelSet(models);
            let any = (0..gpus.len()).any(|i| f.fits(NodeId(i as u32), &task, models));
            let policies: [&dyn Placement; 3] = [&FirstFit, &BestFit, &WorstFit];
            for p in policies {
                proptest::prop_assert!(p.select_is_complete() && p.select_is_pure());
                let got = p.select(&mut PlaceCtx::new(), &f, CellId(0), &task, models);
                proptest::prop_assert_eq!(got.is_some(), any, "{}", p.name());
                if let Some(c) = got {
                    proptest::prop_assert!(f.fits(c.node, &task, models), "{} picked a node that does not fit", p.name());
                }
            }
        }
    }

    #[test]
    fn gang_is_all_or_nothing() {
        let mut f = b13();
        let job = PendingJob {
            id: crate::JobId(0),
            tenant: crate::TenantId(0),
            queue: crate::QueueId(0),
            priority: 0,
            submit: crate::SimTime(0),
            seq: 0,
            shape: TaskShape::whole_gpus(2),
            tasks: 2,
            models: ModelSet::ANY,
            cells: vec![],
            runtime_estimate: None,
            topology: None,
            ..PendingJob::default()
        };
        assert!(place_gang(&BestFit, &mut PlaceCtx::new(), &mut f, CellId(0), &job).is_none());
        assert_eq!(
            f.allocated_gpu_milli(),
            0,
            "a failed gang must hold nothing"
        );
        let wa = PendingJob {
            shape: TaskShape::whole_gpus(1),
            ..job
        };
        let got = place_gang(&BestFit, &mut PlaceCtx::new(), &mut f, CellId(0), &wa).unwrap();
        let nodes: Vec<_> = got.iter().map(|a| a.node).collect();
        assert_eq!(
            nodes,
            vec![NodeId(1), NodeId(2)],
            "B13: small pods avoid the big node"
        );
    }
}
