//! The preemption search's shortcuts change no decision: on random small saturated
//! workloads with quota (a cohort of queues that borrow), reclaim and fair-sharing
//! preemption, gangs and a pure placement, a scheduler whose placement context has a
//! recorder installed (which turns every shortcut off: the room checks before and during a
//! search, the skipped placement attempts, the kept placements, the dry run of a search
//! that failed before, and the draw from the running jobs kept in lost-work order instead
//! of a list of them) makes the same decisions in the same order, and keeps the same
//! pending-reason counts, as one without.
//!
//! Jobs checkpoint at one of a few intervals (or never) and have one of two priorities, so
//! that the lost-work order wraps around checkpoint cycles; one mode adds the within-queue
//! rule and one reclaims only from lower priorities.
//!
//! The dry run (`SimTrial::dry_run`, issue #18) is taken only for a preemptor whose last
//! search failed; the workloads below keep gangs of whole nodes waiting behind borrowed
//! capacity, so their searches fail again and again, and some of them then succeed.

use fleetsim_policies::quota::{Flavor, FlavorQuota, QuotaNodeSpec, QuotaSpec, ResourceQuota};
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

const QUEUES: u32 = 3;

fn workload(g: &mut Gen) -> (Vec<NodeSpec>, Vec<Job>) {
    let nodes = (0..2 + g.below(4) as u32)
        .map(|i| NodeSpec {
            name: format!("n{i}"),
            cell: CellId(0),
            block: i / 2,
            domain: i,
            model: Some(ModelId(0)),
            gpus: 8,
            cpu_milli: 64_000,
            mem_mib: 512 * 1024,
        })
        .collect();
    let mut t = 0;
    let jobs = (0..40 + g.below(60))
        .map(|i| {
            t += g.below(3) * 1000;
            let (shape, tasks) = match g.below(8) {
                0..=3 => (TaskShape::whole_gpus(1), 1),
                4 => (TaskShape::whole_gpus(2), 1),
                5 => (TaskShape::whole_gpus(4), 1),
                6 => (TaskShape::whole_gpus(8), 1),
                _ => (TaskShape::whole_gpus(8), 2),
            };
            Job {
                job: PendingJob {
                    id: JobId(i as u32),
                    queue: QueueId(g.below(u64::from(QUEUES)) as u32),
                    submit: SimTime(t),
                    seq: i,
                    shape,
                    tasks,
                    priority: g.below(2) as i32,
                    checkpoint_interval: match g.below(4) {
                        0 => None,
                        1 => Some(SimDuration(2500)),
                        _ => Some(SimDuration(1000 * (1 + g.below(6)))),
                    },
                    ..PendingJob::default()
                },
                run_ms: 1000 * (1 + g.below(30)),
            }
        })
        .collect();
    (nodes, jobs)
}

/// One cohort; each queue's nominal quota is a third of the fleet's GPUs (rounded down, so
/// the rest is borrowed), with no borrowing limit.
fn quota(gpus: u64) -> QuotaTree {
    let gpu = |nominal: u64| FlavorQuota {
        flavor: "any".into(),
        resources: [
            Some(ResourceQuota {
                nominal: nominal * 1000,
                borrowing_limit: None,
                lending_limit: None,
            }),
            None,
            None,
        ],
    };
    let spec = QuotaSpec {
        flavors: vec![Flavor {
            name: "any".into(),
            models: ModelSet::ANY,
        }],
        cohorts: vec![QuotaNodeSpec {
            name: "fleet".into(),
            parent: None,
            flavors: vec![],
            weight_milli: 1000,
        }],
        queues: (0..QUEUES)
            .map(|q| {
                (
                    QueueId(q),
                    QuotaNodeSpec {
                        name: format!("q{q}"),
                        parent: Some("fleet".into()),
                        flavors: vec![gpu(gpus / u64::from(QUEUES))],
                        weight_milli: 1000,
                    },
                )
            })
            .collect(),
    };
    QuotaTree::new(&spec).expect("valid quota")
}

/// Runs the workload; returns every decision with its time and the pending-reason counts
/// after every pass. `mode` picks the preemption rules (reclaim, fair sharing, or both;
/// grace 0 or 3 s; mode 4 adds the within-queue rule, mode 5 reclaims only from lower
/// priorities) and the placement (best-fit or topology-aware).
fn simulate(
    nodes: &[NodeSpec],
    jobs: &[Job],
    mode: u32,
    backfill: Option<usize>,
    record: bool,
) -> String {
    let mut fleet = FleetState::new(vec!["c".into()], vec!["H100".into()], nodes.to_vec()).unwrap();
    let grace = SimDuration(if mode >= 3 { 3000 } else { 0 });
    let (reclaim, fair) = match mode % 3 {
        0 => (preemption::ReclaimWithinCohort::Any, vec![]),
        1 => (
            preemption::ReclaimWithinCohort::Never,
            vec![preemption::FairStrategy::LessThanOrEqualToFinalShare],
        ),
        _ => (
            if mode == 5 {
                preemption::ReclaimWithinCohort::LowerPriority
            } else {
                preemption::ReclaimWithinCohort::Any
            },
            vec![
                preemption::FairStrategy::LessThanOrEqualToFinalShare,
                preemption::FairStrategy::LessThanInitialShare,
            ],
        ),
    };
    let placement: Box<dyn Placement> = if mode.is_multiple_of(2) {
        Box::new(placement::BestFit)
    } else {
        Box::new(placement::TopologyAware)
    };
    let cfgs = (0..QUEUES)
        .map(|_| QueueConfig {
            strategy: QueueingStrategy::BestEffortFifo,
            ..QueueConfig::default()
        })
        .collect();
    let gpus = nodes.len() as u64 * 8;
    let mut s = Scheduler::new(SchedulerConfig::default(), cfgs).with(Extensions {
        placement: Some(placement),
        quota: Some(quota(gpus)),
        preemption: Some(PreemptionConfig {
            reclaim_within_cohort: reclaim,
            fair_sharing: fair,
            within_queue: if mode == 4 {
                preemption::WithinQueue::LowerPriority
            } else {
                preemption::WithinQueue::Never
            },
            grace,
            ..PreemptionConfig::default()
        }),
        backfill: backfill.map(|depth| BackfillConfig { depth }),
        ..Extensions::default()
    });
    if record {
        s.placement_ctx_mut()
            .set_recorder(Some(std::sync::Arc::new(Silent)));
    }
    drive(&mut s, &mut fleet, jobs)
}

/// Requires the run with shortcuts (`fast`) to equal the one without (`slow`), naming the
/// first line that differs, and to have run: more lines than `jobs`.
fn assert_same(fast: &str, slow: &str, jobs: usize, label: &str) {
    assert!(fast.lines().count() > jobs, "{label} ran");
    if let Some((i, (a, b))) = fast
        .lines()
        .zip(slow.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!("{label}, line {i}: with shortcuts `{a}`, without `{b}`");
    }
    assert_eq!(fast, slow, "{label}");
}

#[test]
fn search_shortcuts_change_no_decision() {
    let mut g = Gen(18);
    let mut preempts = 0;
    for case in 0..240 {
        let mode = (case % 6) as u32;
        let (nodes, jobs) = workload(&mut g);
        let fast = simulate(&nodes, &jobs, mode, None, false);
        let slow = simulate(&nodes, &jobs, mode, None, true);
        assert_same(
            &fast,
            &slow,
            jobs.len(),
            &format!("case {case} (mode {mode})"),
        );
        preempts += fast.matches("Preempt {").count();
    }
    // The cases do preempt (an exact count would be brittle).
    assert!(preempts > 200, "{preempts} preemptions");
}

/// The same with backfill (EASY, or conservative with up to 3 reservations) and runtime
/// estimates: the reservation walk's skipped placement attempts (no node fits a task, or no
/// cell could hold the gang by free GPU-milli; `reserve::NodeRoom`) change no decision.
/// Debug builds also place at every skipped attempt and require it to fail.
#[test]
fn reservation_shortcuts_change_no_decision() {
    let mut g = Gen(21);
    let mut backfilled = 0;
    for case in 0..120 {
        let mode = (case % 6) as u32;
        let depth = if case % 12 < 6 { 1 } else { 3 };
        let (nodes, mut jobs) = workload(&mut g);
        for j in &mut jobs {
            // Estimates at or above the run time, some far above.
            j.job.runtime_estimate = Some(SimDuration(j.run_ms * (1 + j.job.seq % 3)));
        }
        let fast = simulate(&nodes, &jobs, mode, Some(depth), false);
        let slow = simulate(&nodes, &jobs, mode, Some(depth), true);
        let label = format!("case {case} (mode {mode}, depth {depth})");
        assert_same(&fast, &slow, jobs.len(), &label);
        if fast != simulate(&nodes, &jobs, mode, None, false) {
            backfilled += 1;
        }
    }
    // Backfill changes the decisions of many cases (an exact count would be brittle).
    assert!(backfilled > 30, "{backfilled} cases changed by backfill");
}
