//! Property tests for the queueing, quota, preemption and backfill stages, one per kind of
//! fault the field cases stand for. Every run audits after every instant: no node
//! over-allocated, every running or terminating gang bound task for task (GANG-PARTIAL),
//! every queue's and cohort's quota usage equal to what the jobs holding resources request
//! (QUOTA-DRIFT). On top of that:
//!
//! * **no preemption cycle** (PREEMPTION-LOOP): with every job submitted at once and none
//!   finishing, no job is preempted twice at one instant, and no two jobs ever preempt each
//!   other in both directions;
//! * **a backfilled job never delays a reservation** (BACKFILL-RESERVATION): under FIFO with
//!   EASY backfill and estimates that are never exceeded, a job that got a reservation starts
//!   no later than its first reservation;
//! * **quota usage always equals the sum of running jobs' requests**, also across node
//!   failures and repairs with termination grace.

use std::collections::{BTreeMap, BTreeSet};

use fleetsim::engine::{
    EngineConfig, JobRow, NodeChange, NodeChangeKind, PreemptionEvent, PreemptionPlan,
    QueueSettings, QuotaSample, RunResult, Simulation,
};
use fleetsim::scenario::QueueMapping;
use fleetsim::workload::{JobSpec, VecStream};
use fleetsim_policies::backfill::{BackfillConfig, BackfillKind};
use fleetsim_policies::preemption::{
    CapacityPreemption, FairStrategy, ReclaimWithinCohort, WithinQueue,
};
use fleetsim_policies::quota::{Flavor, FlavorQuota, QuotaNodeSpec, QuotaSpec, ResourceQuota};
use fleetsim_policies::{
    AdmissionOrder, BorrowWithinCohort, BorrowWithinCohortPolicy, Extensions, FleetState, ModelSet,
    NodeId, PreemptionConfig, QueueConfig, QueueId, QueueOrderKind, QueuePreemption,
    QueueingStrategy, QuotaTree, SchedulerConfig, SimDuration, SimTime, TaskShape, Tier,
};
use proptest::prelude::*;

use crate::support::{fleet_state, node};

fn fleet(nodes: &[u8]) -> FleetState {
    let specs = nodes
        .iter()
        .enumerate()
        .map(|(i, &gpus)| fleetsim_policies::NodeSpec {
            cpu_milli: 64_000,
            mem_mib: 256_000,
            ..node(i, gpus as u32)
        })
        .collect();
    fleet_state(&["c"], &["H100"], specs)
}

#[derive(Clone, Debug)]
struct Q {
    nominal: u8,
    borrowing_limit: Option<u8>,
    lending_limit: Option<u8>,
    tier: u8,
    /// The queue's own preemption rules (Kueue ClusterQueue `spec.preemption`).
    own: Option<QueuePreemption>,
}

/// A queue's own rules: within-queue, reclaim and preemption while borrowing (with or
/// without a priority threshold), Kueue's CEL rule kept (borrowing needs reclaim).
fn own_rules_strategy() -> impl Strategy<Value = QueuePreemption> {
    (0usize..3, 0usize..3, 0usize..3).prop_map(|(w, r, b)| {
        let reclaim_within_cohort = [
            ReclaimWithinCohort::Never,
            ReclaimWithinCohort::LowerPriority,
            ReclaimWithinCohort::Any,
        ][r];
        QueuePreemption {
            within_queue: [
                WithinQueue::Never,
                WithinQueue::LowerPriority,
                WithinQueue::LowerOrNewerEqualPriority,
            ][w],
            reclaim_within_cohort,
            borrow_within_cohort: match (b, reclaim_within_cohort) {
                (_, ReclaimWithinCohort::Never) | (0, _) => BorrowWithinCohort::default(),
                (1, _) => BorrowWithinCohort {
                    policy: BorrowWithinCohortPolicy::LowerPriority,
                    max_priority_threshold: None,
                },
                _ => BorrowWithinCohort {
                    policy: BorrowWithinCohortPolicy::LowerPriority,
                    max_priority_threshold: Some(0),
                },
            },
        }
    })
}

fn queue_strategy() -> impl Strategy<Value = Q> {
    (
        0u8..9,
        prop::option::of(0u8..9),
        prop::option::of(0u8..9),
        0u8..3,
        prop::option::of(own_rules_strategy()),
    )
        .prop_map(|(nominal, borrowing_limit, lending_limit, tier, own)| Q {
            nominal,
            borrowing_limit,
            lending_limit: lending_limit.map(|l| l.min(nominal)),
            tier,
            own,
        })
}

#[derive(Clone, Debug)]
struct J {
    at_s: u16,
    queue: u8,
    tasks: u8,
    gpus: u8,
    run_s: u16,
    prio: i8,
}

fn job_strategy(max_at: u16, min_run: u16) -> impl Strategy<Value = J> {
    (
        0..=max_at,
        0u8..3,
        1u8..3,
        1u8..5,
        min_run..min_run + 400,
        -2i8..3,
    )
        .prop_map(|(at_s, queue, tasks, gpus, run_s, prio)| J {
            at_s,
            queue,
            tasks,
            gpus,
            run_s,
            prio,
        })
}

fn specs(jobs: &[J]) -> Vec<JobSpec> {
    let mut v: Vec<JobSpec> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| JobSpec {
            tasks: j.tasks as u32,
            shape: TaskShape::whole_gpus(j.gpus as u32),
            priority: j.prio as i32,
            queue: Some(format!("q{}", j.queue)),
            time_limit: Some(SimDuration::from_secs(j.run_s as u64)),
            ..JobSpec::simple(
                &format!("j{i}"),
                &format!("t{}", j.queue),
                j.at_s as u64,
                0,
                j.run_s as u64,
            )
        })
        .collect();
    v.sort_by_key(|j| j.submit);
    v
}

/// Three queues in one cohort with the given quotas (flavor `*`), every queue's weight
/// multiplied by `scale`.
fn quota_scaled(queues: &[Q], scale: u64) -> QuotaTree {
    let g = |v: u8| v as u64 * 1000;
    QuotaTree::new(&QuotaSpec {
        flavors: vec![Flavor {
            name: "*".into(),
            models: ModelSet::ANY,
        }],
        cohorts: vec![QuotaNodeSpec {
            name: "C".into(),
            parent: None,
            flavors: vec![],
            weight_milli: 1000,
        }],
        queues: queues
            .iter()
            .enumerate()
            .map(|(i, q)| {
                (
                    QueueId(i as u32),
                    QuotaNodeSpec {
                        name: format!("q{i}"),
                        parent: Some("C".into()),
                        flavors: vec![FlavorQuota {
                            flavor: "*".into(),
                            resources: [
                                Some(ResourceQuota {
                                    nominal: g(q.nominal),
                                    borrowing_limit: q.borrowing_limit.map(g),
                                    lending_limit: q.lending_limit.map(g),
                                }),
                                None,
                                None,
                            ],
                        }],
                        weight_milli: (1000 + 500 * i as u64) * scale,
                    },
                )
            })
            .collect(),
    })
    .unwrap()
}

struct Setup {
    nodes: Vec<u8>,
    queues: Vec<Q>,
    order: QueueOrderKind,
    admission: AdmissionOrder,
    preemption: Option<PreemptionConfig>,
    backfill: Option<BackfillConfig>,
    use_quota: bool,
    node_changes: Vec<NodeChange>,
    horizon: Option<SimTime>,
    oracle: bool,
    retry: Option<SimDuration>,
    /// Every queue's quota weight × this.
    weight_scale: u64,
}

fn simulate(s: &Setup, jobs: &[JobSpec]) -> (RunResult, Vec<JobRow>) {
    let queues = (0..3)
        .map(|i| QueueSettings {
            name: format!("q{i}"),
            config: QueueConfig {
                strategy: QueueingStrategy::BestEffortFifo,
                tier: [Tier::BestEffort, Tier::Batch, Tier::Production][s.queues[i].tier as usize],
                preemption: s.queues[i].own,
                ..QueueConfig::default()
            },
            default_time_limit: None,
            max_time_limit: None,
            local_queues: Vec::new(),
        })
        .collect();
    let cfg = EngineConfig {
        interval_ms: 60_000,
        audit_every_instant: true,
        queue_mapping: QueueMapping::PerTenant,
        queues,
        horizon: s.horizon,
        estimate_oracle: s.oracle,
        retry_interval: s.retry,
        checkpoint_interval: Some(SimDuration::from_secs(50)),
        node_changes: s.node_changes.clone(),
        record_preemptions: true,
        ..EngineConfig::default()
    };
    let ext = Extensions {
        quota: s.use_quota.then(|| quota_scaled(&s.queues, s.weight_scale)),
        admission: s.admission,
        preemption: s.preemption.clone(),
        backfill: s.backfill,
        half_life: Some(SimDuration::from_secs(600)),
        ..Extensions::default()
    };
    let policies = SchedulerConfig {
        queue_order: s.order.into(),
        ..SchedulerConfig::default()
    };
    let mut sim = Simulation::with_extensions(fleet(&s.nodes), policies, ext, cfg);
    let mut rows = Vec::new();
    let mut stream = VecStream::new(jobs.to_vec(), BTreeMap::new());
    let r = sim
        .run(&mut stream, &mut rows, &mut |_, _| {})
        .expect("run succeeds and every audit passes");
    (r, rows)
}

fn preemption_strategy() -> impl Strategy<Value = PreemptionConfig> {
    (
        0usize..3,
        0usize..3,
        0usize..4,
        0usize..2,
        any::<bool>(),
        0u64..3,
        any::<bool>(),
    )
        .prop_map(|(w, r, f, c, tiers, grace, guard)| PreemptionConfig {
            within_queue: [
                WithinQueue::Never,
                WithinQueue::LowerPriority,
                WithinQueue::LowerOrNewerEqualPriority,
            ][w],
            reclaim_within_cohort: [
                ReclaimWithinCohort::Never,
                ReclaimWithinCohort::LowerPriority,
                ReclaimWithinCohort::Any,
            ][r],
            fair_sharing: match f {
                0 => vec![],
                1 => vec![FairStrategy::LessThanOrEqualToFinalShare],
                2 => vec![FairStrategy::LessThanInitialShare],
                _ => vec![
                    FairStrategy::LessThanOrEqualToFinalShare,
                    FairStrategy::LessThanInitialShare,
                ],
            },
            capacity: [CapacityPreemption::Never, CapacityPreemption::LowerPriority][c],
            tiers,
            las: None,
            grace: SimDuration::from_secs(grace * 5),
            reclaim_guard: if guard {
                fleetsim_policies::preemption::ReclaimGuard::Nominal
            } else {
                fleetsim_policies::preemption::ReclaimGuard::Off
            },
            victim_cap: fleetsim_policies::preemption::DEFAULT_VICTIM_CAP,
            borrow_within_cohort: BorrowWithinCohort::default(),
            fair_sharing_needs_reclaim: false,
        })
}

fn admission_strategy() -> impl Strategy<Value = AdmissionOrder> {
    (0usize..5).prop_map(|i| {
        [
            AdmissionOrder::QueueOrder,
            AdmissionOrder::NominalFirst,
            AdmissionOrder::Drf,
            AdmissionOrder::DecayedUsage,
            AdmissionOrder::Hdrf,
        ][i]
    })
}

/// No job preempted twice at one instant; no pair preempting each other both ways.
fn check_no_cycle(log: &[PreemptionEvent]) -> Result<(), TestCaseError> {
    let mut at_instant: BTreeMap<(SimTime, u64), u32> = BTreeMap::new();
    let mut pairs: BTreeSet<(u64, u64)> = BTreeSet::new();
    for e in log {
        let n = at_instant.entry((e.at, e.victim)).or_insert(0);
        *n += 1;
        prop_assert!(*n == 1, "job {} preempted twice at {}", e.victim, e.at);
        pairs.insert((e.preemptor, e.victim));
    }
    for &(a, b) in &pairs {
        prop_assert!(
            !pairs.contains(&(b, a)),
            "jobs {a} and {b} preempt each other: {log:?}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 400, ..ProptestConfig::default() })]

    /// PREEMPTION-LOOP: every job arrives in the first 20 s and none finishes within the
    /// horizon, so nothing but preemption changes the set of running jobs; a pass runs every
    /// second. Under any mix of rules, no job is preempted twice at one instant and no two
    /// jobs preempt each other in both directions.
    #[test]
    fn no_preemption_cycle(
        nodes in prop::collection::vec(1u8..9, 1..4),
        queues in prop::collection::vec(queue_strategy(), 3),
        jobs in prop::collection::vec(job_strategy(20, 10_000), 1..30),
        preemption in preemption_strategy(),
        admission in admission_strategy(),
        use_quota in any::<bool>(),
        order in (0usize..2).prop_map(|i| [QueueOrderKind::Fifo, QueueOrderKind::Priority][i]),
    ) {
        let setup = Setup {
            nodes,
            queues,
            order,
            admission,
            preemption: Some(preemption),
            backfill: None,
            use_quota,
            node_changes: vec![],
            horizon: Some(SimTime::from_secs(300)),
            oracle: false,
            retry: Some(SimDuration::from_secs(1)),
            weight_scale: 1,
        };
        let (r, _) = simulate(&setup, &specs(&jobs));
        check_no_cycle(&r.preemption_log)?;
        prop_assert_eq!(r.counts.preemptions as usize, r.preemption_log.len());
    }

    /// GANG-PARTIAL and QUOTA-DRIFT: gangs under preemption, node failures (with and without
    /// grace) and repairs; the every-instant audits check that each running or terminating gang
    /// holds a binding per task and that queue and cohort usage equal what those jobs request.
    /// Every job ends accounted for, and each started gang ran whole.
    #[test]
    fn gangs_whole_and_quota_exact_under_preemption_and_failures(
        nodes in prop::collection::vec(1u8..9, 2..5),
        queues in prop::collection::vec(queue_strategy(), 3),
        jobs in prop::collection::vec(job_strategy(400, 1), 1..35),
        preemption in prop::option::of(preemption_strategy()),
        admission in admission_strategy(),
        use_quota in any::<bool>(),
        fails in prop::collection::vec((0u16..500, 0usize..4, 0u64..40, 0u16..300), 0..3),
    ) {
        let mut node_changes = Vec::new();
        for &(at, node, grace, back) in &fails {
            let node = NodeId((node % nodes.len()) as u32);
            node_changes.push(NodeChange {
                at: SimTime::from_secs(at as u64),
                node,
                kind: NodeChangeKind::Fail { grace: SimDuration::from_secs(grace) },
            });
            node_changes.push(NodeChange {
                at: SimTime::from_secs(at as u64 + back as u64 + 1),
                node,
                kind: NodeChangeKind::Repair,
            });
        }
        let setup = Setup {
            nodes,
            queues,
            order: QueueOrderKind::Priority,
            admission,
            preemption,
            backfill: None,
            use_quota,
            node_changes,
            horizon: None,
            oracle: false,
            retry: None,
            weight_scale: 1,
        };
        let specs = specs(&jobs);
        let (r, rows) = simulate(&setup, &specs);
        let c = &r.counts;
        prop_assert_eq!(c.started + c.rejected + c.censored + c.cancelled, c.submitted);
        for row in &rows {
            if row.start.is_some() {
                prop_assert_eq!(row.nodes.len(), row.tasks as usize, "{} ran partially", row.name);
            }
        }
    }

    /// BACKFILL-RESERVATION: FIFO, EASY backfill, oracle estimates (never exceeded), no
    /// preemption: every job that got a reservation starts no later than its first one.
    #[test]
    fn backfill_never_delays_a_reservation(
        nodes in prop::collection::vec(1u8..9, 1..5),
        jobs in prop::collection::vec(job_strategy(600, 1), 1..40),
        oracle in any::<bool>(),
    ) {
        let setup = Setup {
            nodes,
            queues: vec![Q { nominal: 0, borrowing_limit: None, lending_limit: None, tier: 1, own: None }; 3],
            order: QueueOrderKind::Fifo,
            admission: AdmissionOrder::QueueOrder,
            preemption: None,
            backfill: BackfillConfig::of(BackfillKind::Easy, 1),
            use_quota: false,
            node_changes: vec![],
            horizon: None,
            oracle,
            retry: None,
            weight_scale: 1,
        };
        // One queue: EASY's head is the first job of the one FIFO order.
        let mut specs = specs(&jobs);
        for s in &mut specs {
            s.queue = Some("q0".into());
        }
        let (_, rows) = simulate(&setup, &specs);
        for row in &rows {
            if let (Some(res), Some(start)) = (row.first_reservation, row.start) {
                prop_assert!(
                    start <= res,
                    "{} was reserved for {} but started at {}",
                    row.name, res, start
                );
            }
        }
    }
}

/// The randomized scheduler checker's case count: `FLEETSIM_CHECKER_CASES` (default 20,000,
/// what CI runs; the README gives the figure of a 1,000,000-case release run).
fn checker_cases() -> u32 {
    std::env::var("FLEETSIM_CHECKER_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// Rule P4 seen from outside: between two job completions (a completion at `t` comes before
/// the passes at `t`), no job is preempted more than `k` times.
fn check_bounded_repreemption(
    log: &[PreemptionEvent],
    rows: &[JobRow],
    k: u32,
) -> Result<(), TestCaseError> {
    let mut completions: Vec<SimTime> = rows
        .iter()
        .filter(|r| r.state == fleetsim::engine::FinalState::Completed)
        .filter_map(|r| r.finish)
        .collect();
    completions.sort();
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
    let mut epoch = 0usize;
    for e in log {
        let done = completions.partition_point(|&c| c <= e.at);
        if done != epoch {
            epoch = done;
            counts.clear();
        }
        let n = counts.entry(e.victim).or_insert(0);
        *n += 1;
        prop_assert!(
            *n <= k,
            "job {} preempted {} times at {} without a completion: {log:?}",
            e.victim,
            n,
            e.at
        );
    }
    Ok(())
}

/// A queue's limits in GPU-milli, as the checker's quota arithmetic uses them: (nominal,
/// borrowing limit, guaranteed part = nominal − lending limit, 0 without one).
fn limits(q: &Q) -> (u64, Option<u64>, u64) {
    let g = |v: u8| v as u64 * 1000;
    let nominal = g(q.nominal);
    let guaranteed = q.lending_limit.map_or(0, |l| nominal - g(l));
    (nominal, q.borrowing_limit.map(g), guaranteed)
}

/// The GPU-milli quota usage of each of the three queues in a usage-by-queue list (slot 0:
/// flavor `*`, GPUs).
fn gpu_usage(usage: &[Option<Vec<u64>>]) -> [u64; 3] {
    let mut u = [0; 3];
    for (i, x) in u.iter_mut().enumerate() {
        *x = usage.get(i).and_then(|v| v.as_ref()).map_or(0, |v| v[0]);
    }
    u
}

/// Quota never over nominal + borrowing limit, nor a cohort over its capacity, for the
/// usages `u` of the three queues of cohort `C` (Kueue's arithmetic, computed here from the
/// queues alone): each queue `u ≤ nominal + borrowing limit` where a limit is set; the cohort
/// holds what each queue uses beyond its guaranteed part (`max(0, u − guaranteed)`), and its
/// capacity is what they lend (`nominal − guaranteed`, summed).
fn quota_violation(queues: &[Q], u: &[u64; 3]) -> Option<String> {
    let mut cohort = 0;
    let mut capacity = 0;
    for (i, q) in queues.iter().enumerate() {
        let (nominal, borrowing, guaranteed) = limits(q);
        if let Some(b) = borrowing {
            if u[i] > nominal + b {
                return Some(format!(
                    "queue q{i} uses {} GPU-milli, above nominal {nominal} + borrowing limit {b}",
                    u[i]
                ));
            }
        }
        cohort += u[i].saturating_sub(guaranteed);
        capacity += nominal - guaranteed;
    }
    (cohort > capacity).then(|| {
        format!("cohort C holds {cohort} GPU-milli above its capacity {capacity} (usages {u:?})")
    })
}

/// QUOTA-LIMIT: at every instant (after its events and passes) no queue's quota usage is above
/// its nominal quota plus its borrowing limit and the cohort's is within its capacity, for
/// both views of usage the engine logs at every change:
/// * **admitted**: the jobs holding resources (running, or terminating in a grace period),
///   from the engine's own records;
/// * **committed**: the scheduler's quota usage less what terminating jobs hold, i.e. the
///   running jobs plus the quota reserved for preemptors waiting for their victims — the
///   usage once every grace period has run out.
///
/// (The scheduler's raw usage counts a victim in its grace period and its preemptor's
/// reservation both, so it may exceed the cohort for the length of a grace period; neither
/// view above does.)
fn check_quota_limits(log: &[QuotaSample], queues: &[Q]) -> Result<(), TestCaseError> {
    for sample in log {
        let mut admitted = [0; 3];
        let mut committed = gpu_usage(&sample.queue_usage);
        for i in 0..3 {
            admitted[i] = sample.holding_gpu_milli.get(i).copied().unwrap_or(0);
            let t = sample.terminating_gpu_milli.get(i).copied().unwrap_or(0);
            prop_assert!(
                committed[i] >= t,
                "at {}: q{i} usage below its terminating jobs'",
                sample.at
            );
            committed[i] -= t;
        }
        if let Some(v) = quota_violation(queues, &admitted) {
            prop_assert!(false, "at {}: admitted usage: {v}", sample.at);
        }
        if let Some(v) = quota_violation(queues, &committed) {
            prop_assert!(false, "at {}: committed usage: {v}", sample.at);
        }
    }
    Ok(())
}

/// What the checker knows of a job: (queue index, tasks, whole GPUs per task).
fn job_of(jobs: &[JobSpec], seq: u64) -> (usize, u32, u32) {
    let j = &jobs[seq as usize];
    let q = j.queue.as_deref().expect("every job names its queue")[1..]
        .parse()
        .expect("q<i>");
    (q, j.tasks, j.shape.num_gpu)
}

/// NO-NEEDLESS-PREEMPTION: at the instant a preemption plan is decided (before any victim
/// is taken out), the preemptor could not have started on what was free then. "Free" is
/// exact under grace: a node's capacity minus the bindings of running jobs and of jobs still
/// terminating in their grace period (their room is not free until they are released),
/// minus the room held for preemptors that wait for their own victims (it is theirs); a
/// node that is down or drained offers nothing. The preemptor could have started when (1)
/// its gang fits those free resources — `tasks` tasks of `g` whole GPUs each on nodes with
/// `w_i` wholly free GPUs: `Σ ⌊w_i / g⌋ ≥ tasks` (whole-GPU tasks ask no CPU or memory) —
/// and (2) when its queue takes part in quota (quota on, tier not best-effort), admitting its
/// `r` GPU-milli keeps quota within limits ([`quota_violation`] on the usage of the instant
/// with `r` added to its queue).
fn check_no_needless_preemption(
    plans: &[PreemptionPlan],
    jobs: &[JobSpec],
    s: &Setup,
) -> Result<(), TestCaseError> {
    for p in plans {
        let (q, tasks, g) = job_of(jobs, p.preemptor);
        let fits: u32 = p.free.iter().map(|n| n.whole_gpus / g.max(1)).sum();
        if fits < tasks {
            continue;
        }
        let quota_applies = s.use_quota && s.queues[q].tier != 0;
        if quota_applies {
            let mut u = gpu_usage(&p.queue_usage);
            u[q] += tasks as u64 * g as u64 * 1000;
            if quota_violation(&s.queues, &u).is_some() {
                continue;
            }
        }
        prop_assert!(
            false,
            "at {}: job {} (q{q}, {tasks} × {g} GPUs) preempted {:?} although it fit free capacity {:?} (quota usage {:?})",
            p.at,
            p.preemptor,
            p.victims,
            p.free.iter().map(|n| n.whole_gpus).collect::<Vec<_>>(),
            gpu_usage(&p.queue_usage)
        );
    }
    Ok(())
}

/// RECLAIM-GUARD: with [`ReclaimGuard::Nominal`](fleetsim_policies::preemption::ReclaimGuard),
/// no reclaim takes its victim's queue below its nominal quota: going through each plan's
/// victims in the order they were decided, from the quota usage of the instant the plan was
/// decided, the victim's queue still uses at least its nominal quota after every reclaim
/// victim leaves (victims of other rules leave too, in their turn).
fn check_reclaim_guard(
    plans: &[PreemptionPlan],
    log: &[PreemptionEvent],
    jobs: &[JobSpec],
    s: &Setup,
) -> Result<(), TestCaseError> {
    let reasons: BTreeMap<(SimTime, u64, u64), fleetsim_policies::PreemptReason> = log
        .iter()
        .map(|e| ((e.at, e.preemptor, e.victim), e.reason))
        .collect();
    for p in plans {
        let mut u = gpu_usage(&p.queue_usage);
        for &v in &p.victims {
            let (q, tasks, g) = job_of(jobs, v);
            if s.queues[q].tier == 0 {
                continue; // best-effort jobs take no quota
            }
            u[q] = u[q].saturating_sub(tasks as u64 * g as u64 * 1000);
            let reason = reasons.get(&(p.at, p.preemptor, v)).copied();
            prop_assert!(
                reason.is_some(),
                "plan victim {v} at {} not in the log",
                p.at
            );
            if reason == Some(fleetsim_policies::PreemptReason::Reclaim) {
                let (nominal, _, _) = limits(&s.queues[q]);
                prop_assert!(
                    u[q] >= nominal,
                    "at {}: reclaiming job {v} for job {} takes q{q} to {} GPU-milli, below its nominal {nominal} (plan {:?}, usage {:?})",
                    p.at,
                    p.preemptor,
                    u[q],
                    p.victims,
                    gpu_usage(&p.queue_usage)
                );
            }
        }
    }
    Ok(())
}

/// The outcome of a run as the checker compares it: per job (start, finish, preemptions).
fn outcome(rows: &[JobRow]) -> Vec<(u64, Option<SimTime>, Option<SimTime>, u32)> {
    rows.iter()
        .map(|r| (r.id, r.start, r.finish, r.preemptions))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: checker_cases(),
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    /// The randomized scheduler checker: random small fleets (1–4 nodes of 1–8
    /// GPUs), three queues of one cohort with random nominal, borrowing and lending limits and
    /// tiers, priorities, gangs, random rule mixes (within-queue, reclaim, fair sharing,
    /// capacity, tiers), grace 0–10 s, the over-reclaim guard on or off, every admission
    /// order, retry passes every 2 or 10 s or none, a 1,000 s horizon. Each run audits every instant (no node
    /// over-allocated, gangs whole, quota usage exact) and checks:
    /// * rule P4: no job preempted more than `victim_cap` (3) times without any completion;
    /// * no two jobs preempt each other, no job preempted twice at one instant;
    /// * NO-NEEDLESS-PREEMPTION: at the instant each preemption plan is decided, its
    ///   preemptor could not have started on the capacity free then (and within quota);
    ///   "free" is exact under grace ([`check_no_needless_preemption`]);
    /// * QUOTA-LIMIT: at every instant, every queue's admitted and committed usage within
    ///   nominal + borrowing limit and the cohort's within its capacity
    ///   ([`check_quota_limits`]);
    /// * RECLAIM-GUARD: under `reclaim_guard = nominal`, no reclaim takes its victim's queue
    ///   below nominal ([`check_reclaim_guard`]);
    /// * share order independent of weight scaling: every queue weight × 1,000 gives the same
    ///   schedule, job for job (shares are compared exactly).
    ///
    /// The checker observes the run through what the engine records with
    /// `record_preemptions`: the preemption log, each plan's context as the pass saw it
    /// (`RunResult::preemption_plans`) and every change of quota usage
    /// (`RunResult::quota_log`).
    #[test]
    fn randomized_scheduler_checker(
        nodes in prop::collection::vec(1u8..9, 1..5),
        queues in prop::collection::vec(queue_strategy(), 3),
        jobs in prop::collection::vec(job_strategy(60, 5), 1..10),
        preemption in preemption_strategy(),
        admission in admission_strategy(),
        use_quota in any::<bool>(),
        retry in prop::sample::select(vec![0u64, 2, 10]),
        order in (0usize..2).prop_map(|i| [QueueOrderKind::Fifo, QueueOrderKind::Priority][i]),
    ) {
        let mut preemption = preemption;
        let guard = preemption.reclaim_guard == fleetsim_policies::preemption::ReclaimGuard::Nominal;
        if std::env::var_os("FLEETSIM_CHECKER_UNCAPPED").is_some() {
            // Rule P4 off (not reachable from a scenario: `validate` refuses it), to show
            // what it bounds.
            preemption.victim_cap = u32::MAX;
        }
        let mut setup = Setup {
            nodes,
            queues,
            order,
            admission,
            preemption: Some(preemption),
            backfill: None,
            use_quota,
            node_changes: vec![],
            horizon: Some(SimTime::from_secs(1_000)),
            oracle: false,
            retry: (retry > 0).then(|| SimDuration::from_secs(retry)),
            weight_scale: 1,
        };
        let jobs = specs(&jobs);
        let (r, rows) = simulate(&setup, &jobs);
        // Every preemption belongs to one recorded plan.
        prop_assert_eq!(
            r.preemption_plans.iter().map(|p| p.victims.len()).sum::<usize>(),
            r.preemption_log.len()
        );
        check_no_cycle(&r.preemption_log)?;
        check_no_needless_preemption(&r.preemption_plans, &jobs, &setup)?;
        if use_quota {
            prop_assert!(!r.quota_log.is_empty() || r.counts.started == 0);
            check_quota_limits(&r.quota_log, &setup.queues)?;
        }
        if guard && use_quota {
            check_reclaim_guard(&r.preemption_plans, &r.preemption_log, &jobs, &setup)?;
        }
        check_bounded_repreemption(
            &r.preemption_log,
            &rows,
            fleetsim_policies::preemption::DEFAULT_VICTIM_CAP,
        )?;
        if use_quota {
            setup.weight_scale = 1000;
            let (_, scaled) = simulate(&setup, &jobs);
            prop_assert_eq!(outcome(&rows), outcome(&scaled));
        }
    }
}

/// Issue #16 item 1, as the randomized checker found it (shrunk): a preemption cycle of
/// three jobs across rules. Nodes of 5, 6 and 2 GPUs; one cohort, q0 nominal 6 (production
/// tier), q1 and q2 nominal 3; FIFO; only fair-sharing preemption (S2-b), grace 5 s. j0
/// (q1, priority 1, 2 × 3 GPUs) is evicted by j2 (q2) by fair share; j3 (q1, 4 GPUs) evicts
/// j2 back by fair share, and when j2 leaves the room goes to j0, of higher priority in j3's
/// queue (field case B33's rule); j2 evicts j0 again: every 5 s until the horizon, no job
/// completing. Rule P4 bounds it: no job is preempted more than 3 times between two
/// completions, and the run ends with every job completed.
///
/// By hand (nodes n0 = 5, n1 = 6, n2 = 2 GPUs; weights q0 1, q1 1.5, q2 2; lendable 6 + 3 +
/// 3 = 12 GPUs; first fit). j1 (production tier) runs 0–6 on n0 + n1, nothing else fits.
/// At 6 j0 starts on n0 + n1 (q1 at 6, borrowing 3: share 3/12/1.5 = 1/6); j2 fits nowhere
/// (n0 2, n1 3, n2 2 free) and evicts j0 (q2's share after admission 3/12/2 = 1/8 < 1/6).
/// At 11 j0 is gone and j2 takes n0 + n1; j3 (4 GPUs on one node) fits nowhere and evicts j2
/// (q1's share after 1/12/1.5 = 1/18 < 1/8). At 16 the room goes to j0 (priority 1 > j3's 0
/// in j3's queue) and j2 evicts it again: j0 is evicted at 6 + 10k, j2 at 11 + 10k.
/// * Without P4 (horizon 1,000 s): j0 at 6, 16, …, 996 (100 times), j2 at 11, …, 991 (99):
///   199 preemptions, only j1 completes.
/// * With P4 (cap 3, counts reset by j1's completion at 6): j0 at 6, 16, 26, j2 at 11, 21,
///   31; at 36 j2 is gone, j0 restarts on n0 + n1 and can no longer be evicted: it runs
///   36–81 (all 45 s again: no checkpoint within its 5 s runs). At 81 (counts reset) j2 starts
///   on n0 + n1, j3 fits nowhere and evicts it (1/18 < 1/8); at 86 j3 runs on n0 (86–91) and
///   j2 on n1 (86–135). 7 preemptions.
///
/// Fails without the fix (the rule-P4 `victim_cap` check in `candidates`,
/// `policies/src/scheduler/preempt.rs`): with the cap of 3, job 0 preempted 4 times at 36 s
/// without a completion, expected at most 3; the run got the uncapped 199 preemptions
/// (checked by reverting the fix).
#[test]
fn three_job_preemption_cycle_is_bounded_by_rule_p4() {
    let q = |nominal: u8, tier: u8| Q {
        nominal,
        borrowing_limit: None,
        lending_limit: None,
        tier,
        own: None,
    };
    let j = |queue: u8, tasks: u8, gpus: u8, run_s: u16, prio: i8| J {
        at_s: 0,
        queue,
        tasks,
        gpus,
        run_s,
        prio,
    };
    let jobs = specs(&[
        j(1, 2, 3, 45, 1),
        j(0, 2, 3, 6, 0),
        j(2, 2, 3, 49, 0),
        j(1, 1, 4, 5, 0),
    ]);
    let setup = |cap: u32| Setup {
        nodes: vec![5, 6, 2],
        queues: vec![q(6, 2), q(3, 1), q(3, 1)],
        order: QueueOrderKind::Fifo,
        admission: AdmissionOrder::QueueOrder,
        preemption: Some(PreemptionConfig {
            fair_sharing: vec![FairStrategy::LessThanInitialShare],
            grace: SimDuration::from_secs(5),
            reclaim_guard: fleetsim_policies::preemption::ReclaimGuard::Off,
            victim_cap: cap,
            ..PreemptionConfig::default()
        }),
        backfill: None,
        use_quota: true,
        node_changes: vec![],
        horizon: Some(SimTime::from_secs(1_000)),
        oracle: false,
        retry: None,
        weight_scale: 1,
    };
    let log = |r: &RunResult| -> Vec<(u64, u64, u64)> {
        r.preemption_log
            .iter()
            .map(|e| (e.at.0 / 1000, e.victim, e.preemptor))
            .collect()
    };
    let ends = |rows: &[JobRow]| -> Vec<(String, Option<u64>, Option<u64>, u32)> {
        let mut v: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.name.clone(),
                    r.last_start.map(|t| t.0 / 1000),
                    r.finish.map(|t| t.0 / 1000),
                    r.preemptions,
                )
            })
            .collect();
        v.sort();
        v
    };
    // Without P4 the three go round until the horizon.
    let (r, rows) = simulate(&setup(u32::MAX), &jobs);
    let mut uncapped = Vec::new();
    for k in 0..100 {
        uncapped.push((6 + 10 * k, 0, 2));
        if k < 99 {
            uncapped.push((11 + 10 * k, 2, 3));
        }
    }
    assert_eq!(log(&r), uncapped);
    let completed = |rows: &[JobRow]| -> Vec<String> {
        rows.iter()
            .filter(|r| r.state == fleetsim::engine::FinalState::Completed)
            .map(|r| r.name.clone())
            .collect()
    };
    assert_eq!(completed(&rows), vec!["j1".to_string()]);
    // With P4 (the default cap of 3) the cycle stops and every job completes.
    let (r, rows) = simulate(
        &setup(fleetsim_policies::preemption::DEFAULT_VICTIM_CAP),
        &jobs,
    );
    check_bounded_repreemption(&r.preemption_log, &rows, 3).unwrap();
    assert_eq!(
        log(&r),
        vec![
            (6, 0, 2),
            (11, 2, 3),
            (16, 0, 2),
            (21, 2, 3),
            (26, 0, 2),
            (31, 2, 3),
            (81, 2, 3)
        ]
    );
    let s = |n: &str, a: u64, b: u64, p: u32| (n.to_string(), Some(a), Some(b), p);
    assert_eq!(
        ends(&rows),
        vec![
            s("j0", 36, 81, 3),
            s("j1", 0, 6, 0),
            s("j2", 86, 135, 4),
            s("j3", 86, 91, 0)
        ]
    );
    assert!(rows
        .iter()
        .all(|r| r.state == fleetsim::engine::FinalState::Completed));
}

/// The checker's own arithmetic rejects what it must (so that a passing run means something).
/// Queues q0 (nominal 4, borrowing limit 1, lending limit 2: guaranteed 4 − 2 = 2), q1
/// (nominal 4), q2 (nominal 0); the cohort's capacity is what they lend: 2 + 4 + 0 = 6 GPUs.
/// * q0 at 6 GPUs > 4 + 1: over its borrowing limit.
/// * q0 at 4, q1 at 4: the cohort holds (4 − 2) + 4 = 6 ≤ 6: within.
/// * q0 at 4, q1 at 5: the cohort holds 2 + 5 = 7 > 6: over.
/// * A 1 × 2-GPU preemptor on a node with 4 wholly free GPUs, no quota: ⌊4 / 2⌋ = 2 ≥ 1
///   task, so its preemption was needless; with 1 free GPU it was not (⌊1 / 2⌋ = 0).
#[test]
fn checker_arithmetic_rejects_violations() {
    let queues = vec![
        Q {
            nominal: 4,
            borrowing_limit: Some(1),
            lending_limit: Some(2),
            tier: 1,
            own: None,
        },
        Q {
            nominal: 4,
            borrowing_limit: None,
            lending_limit: None,
            tier: 1,
            own: None,
        },
        Q {
            nominal: 0,
            borrowing_limit: None,
            lending_limit: None,
            tier: 1,
            own: None,
        },
    ];
    let v = quota_violation(&queues, &[6000, 0, 0]).unwrap();
    assert!(v.contains("borrowing limit 1000"), "{v}");
    assert_eq!(quota_violation(&queues, &[4000, 4000, 0]), None);
    let v = quota_violation(&queues, &[4000, 5000, 0]).unwrap();
    assert!(
        v.contains("holds 7000 GPU-milli above its capacity 6000"),
        "{v}"
    );

    let jobs = specs(&[
        J {
            at_s: 0,
            queue: 0,
            tasks: 1,
            gpus: 3,
            run_s: 10,
            prio: 0,
        },
        J {
            at_s: 1,
            queue: 0,
            tasks: 1,
            gpus: 2,
            run_s: 10,
            prio: 1,
        },
    ]);
    let setup = Setup {
        nodes: vec![8],
        queues,
        order: QueueOrderKind::Priority,
        admission: AdmissionOrder::QueueOrder,
        preemption: None,
        backfill: None,
        use_quota: false,
        node_changes: vec![],
        horizon: None,
        oracle: false,
        retry: None,
        weight_scale: 1,
    };
    let plan = |whole_gpus: u32| PreemptionPlan {
        at: SimTime::from_secs(1),
        preemptor: 1,
        victims: vec![0],
        free: vec![fleetsim_policies::NodeFree {
            whole_gpus,
            ..Default::default()
        }],
        queue_usage: vec![],
    };
    assert!(check_no_needless_preemption(&[plan(4)], &jobs, &setup).is_err());
    assert!(check_no_needless_preemption(&[plan(1)], &jobs, &setup).is_ok());

    // The guard: q0 (nominal 4) at 7 GPUs loses the 3-GPU job 0 by reclaim: 7 − 3 = 4 ≥ 4
    // holds; at 6 GPUs, 6 − 3 = 3 < 4 takes it below nominal.
    let log = [PreemptionEvent {
        at: SimTime::from_secs(1),
        victim: 0,
        preemptor: 1,
        reason: fleetsim_policies::PreemptReason::Reclaim,
    }];
    let guarded = |q0: u64| PreemptionPlan {
        queue_usage: vec![Some(vec![q0, 0, 0]), Some(vec![0; 3]), Some(vec![0; 3])],
        ..plan(0)
    };
    assert!(check_reclaim_guard(&[guarded(7000)], &log, &jobs, &setup).is_ok());
    assert!(check_reclaim_guard(&[guarded(6000)], &log, &jobs, &setup).is_err());
}
