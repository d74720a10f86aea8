//! The pass's class skipping (best-effort queues without quota, preemption, backfill or a
//! budget skip the jobs of a class already blocked in the pass with the same reason) changes
//! nothing: on random small workloads, a scheduler that may skip and one that may not (an
//! attempt budget of `u64::MAX` — the same semantics — turns skipping off) make the same
//! decisions in the same order, keep the same pending-reason counts and hand back the same
//! per-job wait profiles. Also with preemption on (LAS, within-queue priority, best-effort
//! tiers; grace zero and 3 s), where a class's verdict stands once its preemption search
//! failed in the pass.

use fleetsim_policies::*;

mod common;
use common::{drive, Gen, Job};

fn workload(g: &mut Gen, queues: u32) -> (Vec<NodeSpec>, Vec<Job>) {
    let nodes = (0..1 + g.below(4) as u32)
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
    let mut t = 0;
    let jobs = (0..40 + g.below(80))
        .map(|i| {
            t += g.below(3) * 1000;
            let (shape, tasks) = match g.below(10) {
                0..=4 => (TaskShape::whole_gpus(1), 1),
                5 => (TaskShape::whole_gpus(2), 1),
                6 => (TaskShape::whole_gpus(4), 1),
                7 => (TaskShape::whole_gpus(8), 2),
                8 => (
                    TaskShape {
                        gpu_milli: 500,
                        ..TaskShape::whole_gpus(1)
                    },
                    1,
                ),
                _ => (TaskShape::whole_gpus(8), 1),
            };
            Job {
                job: PendingJob {
                    id: JobId(i as u32),
                    queue: QueueId(g.below(u64::from(queues)) as u32),
                    submit: SimTime(t),
                    seq: i,
                    shape,
                    tasks,
                    priority: g.below(3) as i32,
                    ..PendingJob::default()
                },
                run_ms: 1000 * (1 + g.below(20)),
            }
        })
        .collect();
    (nodes, jobs)
}

/// Runs the workload; returns every decision with its time, the pending-reason counts after
/// every pass, and the wait profile of every job.
/// Preemption settings of the cases: none, LAS (3 / 9 GPU-s, LAS order), within-queue
/// priority, tiers; grace 0 or 3 s.
fn preemption(mode: u32) -> (SchedulerConfig, Option<PreemptionConfig>) {
    let grace = SimDuration(if mode >= 4 { 3000 } else { 0 });
    let las = queue_order::Las {
        thresholds_gpu_ms: vec![3_000_000, 9_000_000],
    };
    match mode % 4 {
        0 => (SchedulerConfig::default(), None),
        1 => (
            SchedulerConfig {
                queue_order: QueueOrderSpec::Las {
                    thresholds_gpu_s: Some(vec![3000.0, 9000.0]),
                },
                ..SchedulerConfig::default()
            },
            Some(PreemptionConfig {
                las: Some(las),
                grace,
                ..PreemptionConfig::default()
            }),
        ),
        2 => (
            SchedulerConfig::default(),
            Some(PreemptionConfig {
                within_queue: preemption::WithinQueue::LowerPriority,
                grace,
                ..PreemptionConfig::default()
            }),
        ),
        _ => (
            SchedulerConfig::default(),
            Some(PreemptionConfig {
                tiers: true,
                grace,
                ..PreemptionConfig::default()
            }),
        ),
    }
}

fn simulate(nodes: &[NodeSpec], jobs: &[Job], queues: u32, mode: u32, skip: bool) -> String {
    simulate_in_order(nodes, jobs, queues, mode, None, skip)
}

/// As [`simulate`], with the queue order replaced by `order` when given.
fn simulate_in_order(
    nodes: &[NodeSpec],
    jobs: &[Job],
    queues: u32,
    mode: u32,
    order: Option<QueueOrderSpec>,
    skip: bool,
) -> String {
    let mut fleet = FleetState::new(vec!["c".into()], vec!["H100".into()], nodes.to_vec()).unwrap();
    let cfg = QueueConfig {
        strategy: QueueingStrategy::BestEffortFifo,
        ..QueueConfig::default()
    };
    let (mut config, preemption) = preemption(mode);
    if let Some(o) = order {
        config.queue_order = o;
    }
    // The tiers mode: queue 0 production, queue 1 best-effort (a queue sets its jobs' tier).
    let tiers = [Tier::Production, Tier::BestEffort];
    let cfgs = (0..queues as usize)
        .map(|q| QueueConfig {
            tier: if mode % 4 == 3 { tiers[q] } else { cfg.tier },
            ..cfg
        })
        .collect();
    let mut s = Scheduler::new(config, cfgs).with(Extensions {
        attempt_budget: (!skip).then_some(u64::MAX),
        preemption,
        ..Extensions::default()
    });
    let mut out = drive(&mut s, &mut fleet, jobs);
    for j in jobs {
        out.push_str(&format!(
            "{:?} {:?}\n",
            j.job.id,
            s.take_wait_profile(j.job.id)
        ));
    }
    out
}

/// Asserts that the runs with and without skipping are equal, naming the first line that
/// differs.
fn assert_same(with: &str, without: &str, case: &str) {
    if let Some((i, (a, b))) = with
        .lines()
        .zip(without.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!("{case}, line {i}: skipping `{a}`, not `{b}`");
    }
    assert_eq!(with, without, "{case}");
}

#[test]
fn skipping_classes_changes_no_decision_reason_or_wait() {
    let mut g = Gen(7);
    let mut preempts = 0;
    for case in 0..480 {
        let queues = 1 + (case % 2) as u32;
        let mode = (case / 2 % 8) as u32;
        let (nodes, jobs) = workload(&mut g, queues);
        let with = simulate(&nodes, &jobs, queues, mode, true);
        let without = simulate(&nodes, &jobs, queues, mode, false);
        assert!(with.lines().count() > jobs.len(), "case {case} ran");
        assert_same(
            &with,
            &without,
            &format!("case {case} (preemption mode {mode})"),
        );
        preempts += with.matches("Preempt {").count();
    }
    // The preemption modes do preempt (many times; an exact count would be brittle).
    assert!(preempts > 1000, "{preempts} preemptions");
}

/// A priority order puts an arrival ahead of older jobs, so a pass after arrivals alone must
/// try the older jobs as well, after it (the arrivals-only pass applies only when every
/// arrival comes last); and it mixes priorities within a class, so a class's jobs are not
/// contiguous in the queue.
#[test]
fn skipping_classes_under_a_priority_order_changes_nothing() {
    let mut g = Gen(11);
    let mut ahead = 0;
    for case in 0..240 {
        let queues = 1 + (case % 2) as u32;
        let (nodes, jobs) = workload(&mut g, queues);
        let order = || Some(QueueOrderSpec::Priority {});
        let with = simulate_in_order(&nodes, &jobs, queues, 0, order(), true);
        let without = simulate_in_order(&nodes, &jobs, queues, 0, order(), false);
        assert_same(&with, &without, &format!("case {case}"));
        // Arrivals that overtake an older job of lower priority.
        ahead += jobs
            .windows(2)
            .filter(|w| w[1].job.priority > w[0].job.priority)
            .count();
    }
    assert!(ahead > 1000, "{ahead} overtaking arrivals");
}
