//! The room bound of gang placement ([`FleetState::gpu_task_room`], used when a policy's
//! `select_is_pure`) refuses only gangs that could not fit anyway: on random fleets (two
//! cells, two models, CPU-bound nodes, unschedulable nodes) and random sequences of gang
//! placements and releases, with and without topology constraints, first-fit, best-fit,
//! worst-fit and topology-aware give the same answers and leave every node in the same
//! state as the same policies with the bound turned off.

use fleetsim_policies::*;

/// The crate's own SplitMix64, so the cases are the same on every machine.
use fleetsim_policies::placement::SplitMix64 as Gen;

/// The same policy with the bound off: `select_is_pure` keeps its default (`false`).
struct Unbounded(&'static dyn Placement);

impl Placement for Unbounded {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice> {
        self.0.select(ctx, fleet, cell, shape, models)
    }
}

fn fleet(g: &mut Gen) -> FleetState {
    let nodes = (0..2 + g.below(10) as u32)
        .map(|i| NodeSpec {
            name: format!("n{i}"),
            cell: CellId(g.below(2) as u16),
            block: g.below(2) as u32,
            domain: i / 2,
            model: Some(ModelId(g.below(2) as u16)),
            gpus: [4, 8][g.below(2) as usize],
            cpu_milli: [16_000, 64_000][g.below(2) as usize],
            mem_mib: 512 * 1024,
        })
        .collect();
    let mut f = FleetState::new(
        vec!["c0".into(), "c1".into()],
        vec!["A100".into(), "H100".into()],
        nodes,
    )
    .expect("valid fleet");
    for n in 0..f.nodes().len() {
        if g.below(8) == 0 {
            f.set_schedulable(NodeId(n as u32), false);
        }
    }
    f
}

fn gang(g: &mut Gen, id: u32) -> PendingJob {
    let shape = match g.below(6) {
        0 => TaskShape {
            gpu_milli: 500,
            ..TaskShape::whole_gpus(1)
        },
        1 => TaskShape::whole_gpus(1),
        2 => TaskShape::whole_gpus(2),
        3 => TaskShape::whole_gpus(4),
        _ => TaskShape::whole_gpus(8),
    };
    let shape = TaskShape {
        cpu_milli: 4_000 * u64::from(shape.num_gpu),
        ..shape
    };
    let mut models = ModelSet::ANY;
    if g.below(3) > 0 {
        models.insert(ModelId(g.below(2) as u16));
    }
    let topology = match g.below(6) {
        0 => Some(TopologySpec::PREFER_DOMAIN),
        1 => Some(TopologySpec {
            level: Some(Level::Block),
            mode: TopologyMode::Required,
            ..TopologySpec::default()
        }),
        2 => Some(TopologySpec {
            slice_size: Some(2),
            ..TopologySpec::default()
        }),
        3 => Some(TopologySpec {
            ray: Some(RayStrategy::StrictSpread),
            ..TopologySpec::default()
        }),
        _ => None,
    };
    PendingJob {
        id: JobId(id),
        shape,
        tasks: 1 + g.below(6) as u32,
        models,
        topology,
        ..PendingJob::default()
    }
}

fn node_states(f: &FleetState) -> Vec<(u32, u32, u64, Vec<u16>)> {
    (0..f.nodes().len())
        .map(|i| {
            let n = f.node(NodeId(i as u32));
            let id = NodeId(i as u32);
            (
                n.free_gpu_milli,
                n.free_whole,
                n.free_cpu_milli,
                f.gpu_free(id).to_vec(),
            )
        })
        .collect()
}

#[test]
fn the_room_bound_changes_no_placement() {
    static FIRST: placement::FirstFit = placement::FirstFit;
    static BEST: placement::BestFit = placement::BestFit;
    static WORST: placement::WorstFit = placement::WorstFit;
    static TOPOLOGY: placement::TopologyAware = placement::TopologyAware;
    let policies: [&'static dyn Placement; 4] = [&FIRST, &BEST, &WORST, &TOPOLOGY];
    let (mut refused, mut placed) = (0u32, 0u32);
    for case in 0..300u64 {
        let mut g = Gen(case);
        let base = fleet(&mut g);
        for &p in &policies {
            assert!(p.select_is_pure(), "{} declares itself pure", p.name());
            let unbounded = Unbounded(p);
            let (mut a, mut b) = (base.clone(), base.clone());
            let (mut ca, mut cb) = (PlaceCtx::new(), PlaceCtx::new());
            let mut held: Vec<Vec<TaskAlloc>> = Vec::new();
            let mut g = Gen(case ^ 0xABCD);
            for step in 0..60u32 {
                if !held.is_empty() && g.below(3) == 0 {
                    let allocs = held.remove(g.below(held.len() as u64) as usize);
                    for t in allocs.iter().rev() {
                        a.release(t).expect("held");
                        b.release(t).expect("held");
                    }
                    continue;
                }
                let job = gang(&mut g, step);
                let cell = CellId(g.below(2) as u16);
                let ra = place_gang(p, &mut ca, &mut a, cell, &job);
                let rb = place_gang(&unbounded, &mut cb, &mut b, cell, &job);
                assert_eq!(ra, rb, "case {case}, {}, step {step}: {job:?}", p.name());
                assert_eq!(node_states(&a), node_states(&b), "case {case} step {step}");
                match ra {
                    Some(allocs) => {
                        placed += 1;
                        held.push(allocs);
                    }
                    None if job.tasks > 1
                        && a.gpu_task_room(cell, &job.shape, job.models, u64::from(job.tasks))
                            < u64::from(job.tasks) =>
                    {
                        refused += 1;
                    }
                    None => {}
                }
            }
        }
    }
    // The cases exercise both sides of the bound.
    assert!(
        refused > 500 && placed > 500,
        "refused {refused}, placed {placed}"
    );
}
