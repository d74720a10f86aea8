//! Placement (the Kubernetes `Filter` + `Score` extension points, folded into one choice per
//! task): which node of a cell takes one task. Gangs are placed task by task with
//! [`place_gang`], all-or-nothing.
//!
//! Every policy here breaks ties by the lowest node id (fleet declaration order), never by
//! iteration accident, so the simulator and a production adapter choose the same node.
//!
//! | policy | picks | follows |
//! |---|---|---|
//! | [`FirstFit`] | the lowest-id node that fits | classic first-fit bin packing |
//! | [`BestFit`] | the fitting node with the least free GPU-milli (CPU-milli for CPU-only tasks) | best-fit bin packing; the FGD paper's BestFit baseline packs the same way on GPUs |
//! | [`WorstFit`] | the fitting node with the most free GPU-milli (CPU-milli for CPU-only tasks) | worst-fit / spread (Kubernetes `LeastAllocated`) |

use crate::ids::{CellId, NodeId};
use crate::job::PendingJob;
use crate::resources::{ModelSet, TaskShape};
use crate::state::{FleetState, TaskAlloc};

/// A placement policy for one task.
pub trait Placement: Send + Sync {
    /// The name scenarios use.
    fn name(&self) -> &'static str;
    /// Chooses a node of `cell` on which `shape` fits now, or `None`. Must only return a node
    /// for which [`FleetState::fits`] holds.
    fn select_node(
        &self,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<NodeId>;
}

/// Places every task of `job` in `cell` with `policy`, reserving each in `fleet` so the next
/// task sees it (Kubernetes `Reserve`). If any task cannot be placed, every reservation made
/// for the gang is released (`Unreserve`) and `None` is returned: a gang never holds a partial
/// allocation.
pub fn place_gang(
    policy: &dyn Placement,
    fleet: &mut FleetState,
    cell: CellId,
    job: &PendingJob,
) -> Option<Vec<TaskAlloc>> {
    place_tasks(policy, fleet, cell, &job.shape, job.tasks, job.models)
}

/// As [`place_gang`], for `tasks` tasks of `shape` on models `models` (the scheduler narrows
/// a job's models to one quota flavor's).
pub fn place_tasks(
    policy: &dyn Placement,
    fleet: &mut FleetState,
    cell: CellId,
    shape: &TaskShape,
    tasks: u32,
    models: ModelSet,
) -> Option<Vec<TaskAlloc>> {
    let mut allocs = Vec::with_capacity(tasks as usize);
    for _ in 0..tasks {
        let placed = policy
            .select_node(fleet, cell, shape, models)
            .and_then(|node| fleet.allocate(node, shape, models).ok());
        match placed {
            Some(a) => allocs.push(a),
            None => {
                for a in allocs.iter().rev() {
                    fleet
                        .release(a)
                        .expect("releasing a reservation made in this call cannot fail");
                }
                return None;
            }
        }
    }
    Some(allocs)
}

/// First-fit: the lowest-id node of the cell that fits. `O(nodes)` per task.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstFit;

impl Placement for FirstFit {
    fn name(&self) -> &'static str {
        "first-fit"
    }
    fn select_node(
        &self,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<NodeId> {
        fleet.cells()[cell.index()]
            .nodes
            .iter()
            .copied()
            .find(|&n| fleet.fits(n, shape, models))
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
    fn select_node(
        &self,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<NodeId> {
        if shape.num_gpu == 0 {
            return fleet
                .cpu_candidates(cell, shape.cpu_milli)
                .find(|&n| fleet.fits(n, shape, models));
        }
        let need = shape.total_gpu_milli() as u32;
        let mut best: Option<(u32, NodeId)> = None;
        for m in fleet.cell_models(cell).filter(|&m| models.allows(m)) {
            if let Some(n) = fleet
                .gpu_candidates(cell, m, need)
                .find(|&n| fleet.fits(n, shape, models))
            {
                let key = (fleet.node(n).free_gpu_milli, n);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
        }
        best.map(|(_, n)| n)
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
            if fleet.fits(n, shape, models) {
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
    fn select_node(
        &self,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<NodeId> {
        if shape.num_gpu == 0 {
            return Self::pick(
                fleet,
                fleet.cpu_candidates_desc(cell, shape.cpu_milli),
                |n| fleet.node(n).free_cpu_milli,
                shape,
                models,
            )
            .map(|(_, n)| n);
        }
        let need = shape.total_gpu_milli() as u32;
        let mut best: Option<(u64, NodeId)> = None;
        for m in fleet.cell_models(cell).filter(|&m| models.allows(m)) {
            let got = Self::pick(
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
        best.map(|(_, n)| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ModelId;
    use crate::state::NodeSpec;

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
        let c = CellId(0);
        assert_eq!(
            FirstFit.select_node(&f, c, &one, ModelSet::ANY),
            Some(NodeId(0))
        );
        assert_eq!(
            BestFit.select_node(&f, c, &one, ModelSet::ANY),
            Some(NodeId(1))
        );
        assert_eq!(
            WorstFit.select_node(&f, c, &one, ModelSet::ANY),
            Some(NodeId(0))
        );
        let two = TaskShape::whole_gpus(2);
        assert_eq!(
            BestFit.select_node(&f, c, &two, ModelSet::ANY),
            Some(NodeId(0))
        );
        let cpu_only = TaskShape {
            num_gpu: 0,
            gpu_milli: 0,
            cpu_milli: 500,
            mem_mib: 0,
        };
        assert_eq!(
            WorstFit.select_node(&f, c, &cpu_only, ModelSet::ANY),
            Some(NodeId(0))
        );
    }

    #[test]
    fn gang_is_all_or_nothing() {
        let mut f = b13();
        let job = PendingJob {
            shape: TaskShape::whole_gpus(2),
            tasks: 2,
            ..PendingJob::default()
        };
        assert!(place_gang(&BestFit, &mut f, CellId(0), &job).is_none());
        assert_eq!(
            f.allocated_gpu_milli(),
            0,
            "a failed gang must hold nothing"
        );
        let wa = PendingJob {
            shape: TaskShape::whole_gpus(1),
            ..job
        };
        let got = place_gang(&BestFit, &mut f, CellId(0), &wa).unwrap();
        let nodes: Vec<_> = got.iter().map(|a| a.node).collect();
        assert_eq!(
            nodes,
            vec![NodeId(1), NodeId(2)],
            "B13: small pods avoid the big node"
        );
    }
}
