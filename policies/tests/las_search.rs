//! The LAS victim search answered by node (`scheduler::las_nodes`) changes no decision: on
//! random small saturated workloads under Tiresias 2D-LAS with LAS preemption, a scheduler
//! whose placement context has a recorder installed (which turns the shortcut off: every
//! search draws its victims one by one from the LAS victim order, takes each out of the
//! fleet and puts it back) makes the same decisions in the same order, and keeps the same
//! pending-reason counts, as one without.
//!
//! The workloads mix one-task preemptors of 1, 2, 4 and 8 GPUs and of a shared GPU (the
//! searches the index answers) with gangs (which it leaves to the cursor), CPU and memory
//! requests that bind on some nodes, nodes of 4 and 8 GPUs in two cells, jobs that name a
//! cell, one or two queues of one or two tiers, two priorities, and a zero or 2 s grace
//! period, so that rules P3 and P4 and the priority rule filter victims.

use fleetsim_policies::*;

mod common;
use common::{drive, Gen, Job};

/// A recorder that asks for no call: installing it only tells the scheduler that every
/// placement call must be made.
struct Silent;

impl PlacementRecorder for Silent {
    fn wants(&self) -> bool {
        false
    }
    fn record(&self, _call: &PlacementCall<'_>) {}
}

struct Case {
    nodes: Vec<NodeSpec>,
    jobs: Vec<Job>,
    queues: u32,
    tiered: bool,
    preemption: PreemptionConfig,
}

fn case(g: &mut Gen, i: u64) -> Case {
    let nodes = (0..2 + g.below(7) as u32)
        .map(|n| NodeSpec {
            name: format!("n{n}"),
            cell: CellId((n % 2) as u16),
            block: 0,
            domain: n,
            model: Some(ModelId(0)),
            gpus: if g.below(4) == 0 { 4 } else { 8 },
            cpu_milli: 16_000 + 16_000 * g.below(3),
            mem_mib: 256 * 1024,
        })
        .collect();
    let queues = 1 + (i % 2) as u32;
    let tiered = queues == 2 && g.below(2) == 0;
    let mut preemption = PreemptionConfig {
        las: Some(queue_order::Las {
            thresholds_gpu_ms: vec![4_000, 12_000],
        }),
        grace: SimDuration(if i.is_multiple_of(3) { 2000 } else { 0 }),
        victim_cap: 1 + g.below(3) as u32,
        ..PreemptionConfig::default()
    };
    if g.below(4) == 0 {
        preemption.capacity = preemption::CapacityPreemption::LowerPriority;
    }
    preemption.tiers = tiered;
    let mut t = 0;
    let jobs = (0..40 + g.below(80))
        .map(|j| {
            t += g.below(2) * 1000;
            let (mut shape, tasks) = match g.below(10) {
                0..=3 => (TaskShape::whole_gpus(1), 1),
                4 => (TaskShape::whole_gpus(2), 1),
                5 => (TaskShape::whole_gpus(4), 1),
                6 => (TaskShape::whole_gpus(8), 1),
                7 => (TaskShape::whole_gpus(4), 2),
                8 => (
                    TaskShape {
                        gpu_milli: 500,
                        ..TaskShape::whole_gpus(1)
                    },
                    1,
                ),
                _ => (TaskShape::whole_gpus(3), 1),
            };
            if g.below(3) == 0 {
                shape.cpu_milli = 4_000 * (1 + g.below(4));
            }
            let queue = g.below(u64::from(queues)) as u32;
            Job {
                job: PendingJob {
                    id: JobId(j as u32),
                    queue: QueueId(queue),
                    submit: SimTime(t),
                    seq: j,
                    shape,
                    tasks,
                    priority: g.below(2) as i32,
                    cells: if g.below(6) == 0 {
                        vec![CellId(g.below(2) as u16)]
                    } else {
                        Vec::new()
                    },
                    ..PendingJob::default()
                },
                run_ms: 1000 * (1 + g.below(25)),
            }
        })
        .collect();
    Case {
        nodes,
        jobs,
        queues,
        tiered,
        preemption,
    }
}

/// Runs the case; every decision with its time and the pending-reason counts after every
/// pass.
fn simulate(c: &Case, record: bool) -> String {
    let mut fleet = FleetState::new(
        vec!["a".into(), "b".into()],
        vec!["H100".into()],
        c.nodes.clone(),
    )
    .unwrap();
    let config = SchedulerConfig {
        queue_order: QueueOrderSpec::Las {
            thresholds_gpu_s: Some(vec![4.0, 12.0]),
        },
        ..SchedulerConfig::default()
    };
    let queues = (0..c.queues)
        .map(|q| QueueConfig {
            strategy: QueueingStrategy::BestEffortFifo,
            tier: if c.tiered && q == 1 {
                Tier::Production
            } else {
                Tier::Batch
            },
            ..QueueConfig::default()
        })
        .collect();
    let mut s = Scheduler::new(config, queues).with(Extensions {
        placement: Some(Box::new(placement::BestFit)),
        preemption: Some(c.preemption.clone()),
        ..Extensions::default()
    });
    if record {
        s.placement_ctx_mut()
            .set_recorder(Some(std::sync::Arc::new(Silent)));
    }
    drive(&mut s, &mut fleet, &c.jobs)
}

#[test]
fn las_search_by_node_changes_no_decision() {
    let mut g = Gen(45);
    let (mut preempts, mut cases) = (0, 0);
    for i in 0..200 {
        let c = case(&mut g, i);
        let fast = simulate(&c, false);
        let slow = simulate(&c, true);
        assert!(fast.lines().count() > c.jobs.len(), "case {i} ran");
        if let Some((n, (a, b))) = fast
            .lines()
            .zip(slow.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
        {
            panic!("case {i}, line {n}: by node `{a}`, drawn one by one `{b}`");
        }
        assert_eq!(fast, slow, "case {i}");
        let p = fast.matches("reason: Las").count();
        preempts += p;
        cases += usize::from(p > 0);
    }
    // The cases preempt under LAS, most of them (exact counts would be brittle).
    assert!(
        preempts > 3_000 && cases > 150,
        "{preempts} LAS preemptions in {cases} cases"
    );
}
