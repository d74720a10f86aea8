//! A placement policy with one parameter, written outside the crate against its public API
//! only — what `docs/src/guides/adding-a-policy.md` walks through. Outside the crate it is plugged in
//! through [`Extensions::placement`]; inside, it would be one variant of
//! [`fleetsim_policies::PlacementSpec`].

use fleetsim_policies::placement::Choice;
use fleetsim_policies::*;

/// First fit that keeps headroom: the lowest-id node that fits the task and still has at
/// least `keep_free_gpus` wholly free accelerators after it.
struct Headroom {
    keep_free_gpus: u32,
}

impl Placement for Headroom {
    fn name(&self) -> &'static str {
        "headroom"
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
            .find(|&n| {
                fleet.fits(n, shape, models)
                    && ctx.allowed(fleet, n)
                    && fleet.node(n).free_whole >= shape.num_gpu + self.keep_free_gpus
            })
            .map(Choice::node)
    }
}

fn fleet() -> FleetState {
    let nodes = (0..2)
        .map(|i| NodeSpec {
            name: format!("n{i}"),
            cell: CellId(0),
            block: 0,
            domain: i,
            model: Some(ModelId(0)),
            gpus: 8,
            cpu_milli: 64_000,
            mem_mib: 512 * 1024,
        })
        .collect();
    let mut f = FleetState::new(vec!["c".into()], vec!["H100".into()], nodes).unwrap();
    // Node 0 already runs a 6-GPU task: 2 accelerators free.
    f.apply(&TaskAlloc {
        node: NodeId(0),
        gpu_mask: 0b11_1111,
        gpu_milli: 1000,
        cpu_milli: 0,
        mem_mib: 0,
    })
    .unwrap();
    f
}

fn start_node(keep_free_gpus: u32) -> NodeId {
    let mut f = fleet();
    let mut s =
        Scheduler::new(SchedulerConfig::default(), vec![QueueConfig::default()]).with(Extensions {
            placement: Some(Box::new(Headroom { keep_free_gpus })),
            ..Extensions::default()
        });
    let job = PendingJob {
        shape: TaskShape::whole_gpus(2),
        tasks: 1,
        ..PendingJob::default()
    };
    s.submit(&mut f, job).unwrap();
    match &s.schedule(&mut f)[..] {
        [Decision::Start { tasks, .. }] => tasks[0].node,
        d => panic!("expected one start, got {d:?}"),
    }
}

#[test]
fn the_parameter_steers_the_placement() {
    // keep 0: node 0's two free accelerators take the 2-GPU task (0 left ≥ 0).
    assert_eq!(start_node(0), NodeId(0));
    // keep 1: node 0 would be left with 0 < 1 free, so node 1 (8 − 2 = 6 ≥ 1).
    assert_eq!(start_node(1), NodeId(1));
}
