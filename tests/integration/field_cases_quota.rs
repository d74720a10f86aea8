//! Field cases on queueing, quota, preemption, gangs, backfill and node loss from
//! `../shared/cases/field-cases.md` (B01, B03, B05, B06, B07, B08, B10, B11, B15), each an exact
//! test of the outcome worked out there, through the scenario loader and the engine with
//! every-instant audits (fleet, gang completeness, queue and quota usage).

use fleetsim::engine::FinalState;
use fleetsim_policies::PendingReason;

use crate::support::{
    allocated_occupancy, first_start_wait_s, job, last_span, one_cell, run, span, state,
};

/// B01 — a job that can never fit must not keep forcing the same preemption.
///
/// Cohort C = {CQ-A nominal 3, reclaims from borrowers; CQ-B nominal 0, borrows up to 3};
/// one node of 3 GPUs.
/// * t=0: W1 (CQ-B, 1 GPU) borrows 1 of CQ-A's idle quota and runs.
/// * t=10: W4 (4 GPUs) can never fit (the node and the cohort hold 3): rejected at submit, so
///   it preempts nothing.
/// * t=20: W3 (3 GPUs = CQ-A's nominal) finds 2 free and reclaims 1 by preempting W1 once;
///   W3 runs 20–520, wait 0.
/// * t=520: W1 restarts from scratch, 520–1520.
/// * Occupancy [0,1520] = (20·1 + 500·3 + 1000·1) / (3·1520) = 2520/4560.
#[test]
fn b01_never_fitting_job_forces_no_preemption_loop() {
    let scenario = format!(
        r#"
name = "b01"
{}
[[cohorts]]
name = "C"
[[queues]]
name = "CQ-A"
cohort = "C"
strategy = "best-effort-fifo"
flavors = [{{ name = "H100", gpus = {{ nominal = 3 }} }}]
[[queues]]
name = "CQ-B"
cohort = "C"
strategy = "best-effort-fifo"
flavors = [{{ name = "H100", gpus = {{ nominal = 0, borrowing_limit = 3 }} }}]
[policy]
admission_order = "nominal-first"
[policy.preemption]
reclaim_within_cohort = "any"
"#,
        one_cell(&["n1"], "H100", 3)
    );
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
W1,0,b,CQ-B,1,1000
W4,10,a,CQ-A,4,100
W3,20,a,CQ-A,3,500
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(state(&out, "W4"), FinalState::Rejected);
    assert_eq!(span(&out, "W3"), (Some(20), Some(520)));
    assert_eq!(first_start_wait_s(&out, "W3"), Some(0));
    assert_eq!(span(&out, "W1"), (Some(0), Some(1520)));
    assert_eq!(last_span(&out, "W1"), (Some(520), Some(1520)));
    assert_eq!(job(&out, "W1").preemptions, 1);
    assert_eq!(out.result.counts.preemptions, 1);
    assert_eq!(out.result.counts.preemptions_by_reason["reclaim"], 1);
    assert_eq!(allocated_occupancy(&out), 2520.0 / 4560.0);
    // Lost work: W1's 20 s on 1 GPU (no checkpoint).
    assert_eq!(job(&out, "W1").lost_gpu_milli_ms, 20_000 * 1000);

    // The same kind when the fleet is larger than the cohort: W4 fits a node but not the
    // quota the queue could ever hold (3 + nothing to borrow beyond the cohort's 3).
    // (W3 still reclaims W1's quota: the cohort's 3 GPUs of quota are what limits it.)
    let scenario = scenario.replace("gpus = 3\n", "gpus = 8\n");
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(state(&out, "W4"), FinalState::Rejected);
    assert_eq!(job(&out, "W4").reason.as_deref(), Some("over_quota"));
    assert_eq!(span(&out, "W3"), (Some(20), Some(520)));
    assert_eq!(last_span(&out, "W1"), (Some(520), Some(1520)));
    assert_eq!(out.result.counts.preemptions, 1);
}

/// B03 — equal-share victims are chosen by a fixed tie-break, once, despite a 30 s grace
/// period and a pass every second.
///
/// Cohort = {CQ-P nominal 4, CQ-X 2, CQ-Y 2}, one node of 8 GPUs, fair sharing on (DRF order,
/// both Kueue strategies), reclaim on, grace 30 s, a pass every 1 s while anything is pending.
/// * t=0: x1, x2, y1, y2 run; X and Y each borrow 2 (equal shares, 250 ‰).
/// * t=10: p1 (2 GPUs, within P's nominal) reclaims: the candidates tie on tier, borrowing,
///   share, priority, lost work (2 GPUs × 10 s) and start; the larger input sequence goes
///   first: exactly one victim, y2. Passes at 11..39 issue nothing new (p1's eviction covers
///   its need).
/// * t=40: y2 releases; p1, whose victims are gone, is tried first and runs 40–140. y2 restarts
///   140–1140; the others end at 1000.
/// * Preemptions = 1. Occupancy [0,1140] = (6000 + 80 + 200 + 2000) / 9120.
#[test]
fn b03_equal_shares_one_deterministic_victim() {
    let scenario = format!(
        r#"
name = "b03"
{}
[[cohorts]]
name = "C"
[[queues]]
name = "CQ-P"
cohort = "C"
flavors = [{{ name = "H100", gpus = {{ nominal = 4 }} }}]
[[queues]]
name = "CQ-X"
cohort = "C"
flavors = [{{ name = "H100", gpus = {{ nominal = 2 }} }}]
[[queues]]
name = "CQ-Y"
cohort = "C"
flavors = [{{ name = "H100", gpus = {{ nominal = 2 }} }}]
[policy]
admission_order = "drf"
[policy.preemption]
reclaim_within_cohort = "any"
fair_sharing = ["less-than-or-equal-to-final-share", "less-than-initial-share"]
grace_s = 30
[policy.cycle]
retry_interval_s = 1
"#,
        one_cell(&["n1"], "H100", 8)
    );
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
x1,0,x,CQ-X,2,1000
x2,0,x,CQ-X,2,1000
y1,0,y,CQ-Y,2,1000
y2,0,y,CQ-Y,2,1000
p1,10,p,CQ-P,2,100
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    for j in ["x1", "x2", "y1"] {
        assert_eq!(span(&out, j), (Some(0), Some(1000)), "{j}");
        assert_eq!(job(&out, j).preemptions, 0, "{j}");
    }
    assert_eq!(job(&out, "y2").preemptions, 1);
    assert_eq!(last_span(&out, "y2"), (Some(140), Some(1140)));
    assert_eq!(span(&out, "p1"), (Some(40), Some(140)));
    assert_eq!(
        job(&out, "p1").pending_reason,
        Some(PendingReason::Preempting)
    );
    assert_eq!(out.result.counts.preemptions, 1);
    assert_eq!(allocated_occupancy(&out), 8280.0 / 9120.0);
    // y2 lost 10 s of progress on 2 GPUs and held them 30 s in grace.
    assert_eq!(job(&out, "y2").lost_gpu_milli_ms, 40_000 * 2000);
    assert!(out.result.passes > 30, "a pass every second while p1 waits");
    // Determinism: the same input gives the same rows.
    let again = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(out.jobs, again.jobs);
}

/// B05 — a team below its minimum reclaims from a team above it, even with the cluster full.
///
/// Team A min 4 max 5, team B min 1 max 5 (a cohort; max = nominal + borrowing limit); one
/// node of 5 GPUs.
/// * t=0: a1–a5 run (A borrows 1).
/// * t=60: b1 (1 GPU, B at 0 < 1): A is above its min, so a5 — most recently started, ties by
///   the largest sequence — is preempted, and only a5 (A is then at its min). b1 runs 60–660.
/// * a5 restarts 660–4260; a1–a4 end at 3600.
/// * Occupancy [0,4260] = (14400 + 60 + 600 + 3600) / 21300.
#[test]
fn b05_reclaim_below_minimum_when_full() {
    let scenario = format!(
        r#"
name = "b05"
{}
[[cohorts]]
name = "C"
[[queues]]
name = "A"
cohort = "C"
strategy = "best-effort-fifo"
flavors = [{{ name = "H100", gpus = {{ nominal = 4, borrowing_limit = 1 }} }}]
[[queues]]
name = "B"
cohort = "C"
strategy = "best-effort-fifo"
flavors = [{{ name = "H100", gpus = {{ nominal = 1, borrowing_limit = 4 }} }}]
[policy.preemption]
reclaim_within_cohort = "any"
"#,
        one_cell(&["n1"], "H100", 5)
    );
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
a1,0,A,A,1,3600
a2,0,A,A,1,3600
a3,0,A,A,1,3600
a4,0,A,A,1,3600
a5,0,A,A,1,3600
b1,60,B,B,1,600
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "b1"), (Some(60), Some(660)));
    assert_eq!(first_start_wait_s(&out, "b1"), Some(0));
    assert_eq!(job(&out, "a5").preemptions, 1);
    assert_eq!(last_span(&out, "a5"), (Some(660), Some(4260)));
    for j in ["a1", "a2", "a3", "a4"] {
        assert_eq!(span(&out, j), (Some(0), Some(3600)), "{j}");
    }
    assert_eq!(out.result.counts.preemptions, 1);
    assert_eq!(allocated_occupancy(&out), 18660.0 / 21300.0);
}

const B06_QUEUES: &str = r#"
[[cohorts]]
name = "C"
[[queues]]
name = "CQ-G"
cohort = "C"
strategy = "strict-fifo"
flavors = [{ name = "H100", gpus = { nominal = 2 } }]
[[queues]]
name = "CQ-BE"
cohort = "C"
flavors = [{ name = "H100", gpus = { nominal = 0 } }]
[policy]
admission_order = "nominal-first"
[policy.preemption]
reclaim_within_cohort = "any"
"#;

/// B06 — a strict-FIFO queue's blocked head holds only its own queue; other queues borrow
/// its idle GPUs, and it takes them back by preemption when it can use them.
///
/// Cohort = {CQ-G nominal 2, strict FIFO; CQ-BE nominal 0, may borrow}; one node of 2 GPUs.
/// * g1 runs 0–500. g2 (2 GPUs) waits from 10. be1 borrows the idle GPU at 20 and runs 20–220.
/// * g2 runs 500–800; no preemption. Waits: g2 490, be1 0. Occupancy [0,800] = 1300/1600.
/// * Variant, be1 lasting 1000: at 500 g2 reclaims be1; g2 runs 500–800, be1 restarts 800–1800.
#[test]
fn b06_strict_fifo_head_does_not_block_borrowers() {
    let scenario = format!(
        "name = \"b06\"\n{}{B06_QUEUES}",
        one_cell(&["n1"], "H100", 2)
    );
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
g1,0,g,CQ-G,1,500
g2,10,g,CQ-G,2,300
be1,20,be,CQ-BE,1,200
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "g1"), (Some(0), Some(500)));
    assert_eq!(span(&out, "be1"), (Some(20), Some(220)));
    assert_eq!(span(&out, "g2"), (Some(500), Some(800)));
    assert_eq!(first_start_wait_s(&out, "g2"), Some(490));
    assert_eq!(out.result.counts.preemptions, 0);
    assert_eq!(allocated_occupancy(&out), 1300.0 / 1600.0);
    assert_eq!(
        job(&out, "g2").pending_reason,
        Some(PendingReason::CohortQuota)
    );

    let jobs = jobs.replace("be1,20,be,CQ-BE,1,200", "be1,20,be,CQ-BE,1,1000");
    let out = run(&scenario, &[("jobs.csv", &jobs)]);
    assert_eq!(span(&out, "g2"), (Some(500), Some(800)));
    assert_eq!(job(&out, "be1").preemptions, 1);
    assert_eq!(last_span(&out, "be1"), (Some(800), Some(1800)));
}

/// B07 — a backlog that cannot be placed costs one attempt per pass, not its size, so other
/// classes are reached.
///
/// 8 nodes × 1 GPU: X1–X4 (H100, busy with U0's L1–L4 until 10000) and Y1–Y4 (A100). U1 (better
/// priority) has 100 jobs that need X; U2 has 4 that run anywhere. A pass every 60 s (and at
/// events) with a budget of 50 placement attempts; identical pending jobs form a class.
/// * t=0: U1's class fails once (X is full) and is skipped at no further cost; U2's 4 jobs are
///   placed on Y1–Y4 (cost 4; 5 ≤ 50). u2_1–4 run 0–600.
/// * U1's jobs start at 10000, 4 at a time. Occupancy [0,600] = 100 %.
#[test]
fn b07_unmatchable_backlog_does_not_starve_others() {
    let scenario = r#"
name = "b07"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["X1", "X2", "X3", "X4"]
accelerator = "H100"
gpus = 1
[[fleet.cells.nodes]]
names = ["Y1", "Y2", "Y3", "Y4"]
accelerator = "A100"
gpus = 1
[workload]
trace = { format = "native", path = "jobs.csv" }
[policy]
queue_order = "priority"
queueing_strategy = "best-effort-fifo"
[policy.cycle]
retry_interval_s = 60
attempt_budget = 50
"#;
    let mut jobs =
        String::from("id,submit_s,tenant,priority,num_gpu,runtime_s,gpu_models,start_s,end_s\n");
    for i in 1..=4 {
        jobs.push_str(&format!("L{i},-1,U0,0,1,,H100,-1,10000\n"));
    }
    for i in 1..=100 {
        jobs.push_str(&format!("u1_{i:03},0,U1,1,1,600,H100,,\n"));
    }
    for i in 1..=4 {
        jobs.push_str(&format!("u2_{i},0,U2,0,1,600,,,\n"));
    }
    let out = run(scenario, &[("jobs.csv", &jobs)]);
    for i in 1..=4 {
        let n = format!("u2_{i}");
        assert_eq!(span(&out, &n), (Some(0), Some(600)), "{n}");
        assert_eq!(job(&out, &n).nodes, vec![format!("Y{i}")]);
    }
    for i in 1..=100u64 {
        let n = format!("u1_{i:03}");
        let batch = (i - 1) / 4;
        assert_eq!(span(&out, &n).0, Some(10_000 + 600 * batch), "{n}");
    }
    let horizon = format!("{scenario}[metrics]\nhorizon_s = 600\n");
    let out = run(&horizon, &[("jobs.csv", &jobs)]);
    assert_eq!(allocated_occupancy(&out), 1.0);
}

/// B08 under preemption — a gang is preempted whole and restarted whole; it never holds a
/// partial allocation (the engine audits every gang's bindings after every instant).
///
/// 4 nodes × 1 GPU. G1 (gang 4, priority 0) runs from 0; G2 (gang 4, priority 1) arrives at 10
/// and preempts all of G1 (priority preemption for capacity). G2 runs 10–610; G1 restarts
/// 610–1210.
#[test]
fn b08_gangs_stay_whole_under_preemption() {
    let scenario = format!(
        "name = \"b08p\"\n{}[policy]\nqueue_order = \"priority\"\n[policy.preemption]\ncapacity = \"lower-priority\"\n",
        one_cell(&["n1", "n2", "n3", "n4"], "H100", 1)
    );
    let jobs = "id,submit_s,tenant,priority,tasks,num_gpu,runtime_s
G1,0,t,0,4,1,600
G2,10,u,1,4,1,600
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "G2"), (Some(10), Some(610)));
    assert_eq!(job(&out, "G1").preemptions, 1);
    assert_eq!(last_span(&out, "G1"), (Some(610), Some(1210)));
    assert_eq!(job(&out, "G1").nodes.len(), 4);
}

/// B10 — a high-priority gang combines free nodes and victims' nodes.
///
/// 2 nodes × 8 GPUs. L (priority 1, 1 × 8 GPUs) runs on n1 from 0. H (priority 100, gang of 2 ×
/// 8) arrives at 10: n2 is free, so preempting L alone makes the gang fit. H runs 10–610 (wait
/// 0); L restarts 610–5610 on n1.
/// Occupancy [0,5610] = (80 + 9600 + 40000) / 89760.
#[test]
fn b10_gang_preemption_counts_free_nodes() {
    let scenario = format!(
        "name = \"b10\"\n{}[policy]\nqueue_order = \"priority\"\n[policy.preemption]\ncapacity = \"lower-priority\"\n",
        one_cell(&["n1", "n2"], "H100", 8)
    );
    let jobs = "id,submit_s,tenant,priority,tasks,num_gpu,runtime_s
L,0,low,1,1,8,5000
H,10,high,100,2,8,600
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "H"), (Some(10), Some(610)));
    assert_eq!(first_start_wait_s(&out, "H"), Some(0));
    assert_eq!(job(&out, "L").preemptions, 1);
    assert_eq!(last_span(&out, "L"), (Some(610), Some(5610)));
    assert_eq!(job(&out, "L").nodes, vec!["n1"]);
    assert_eq!(out.result.counts.preemptions_by_reason["priority"], 1);
    assert_eq!(allocated_occupancy(&out), 49680.0 / 89760.0);
}

const B11_JOBS: &str = "id,submit_s,tenant,priority,tasks,num_gpu,runtime_s,time_limit_s
s1,0,t,1,1,8,100,100
s2,0,t,1,1,8,200,200
s3,0,t,1,1,8,300,300
s4,0,t,1,1,8,400,400
B,1,t,10,4,8,1000,1000
s5,50,t,1,1,8,1000,1000
s6,150,t,1,1,8,1000,1000
s7,250,t,1,1,8,1000,1000
s8,350,t,1,1,8,1000,1000
";

fn b11(backfill: &str) -> fleetsim::run::RunOutput {
    let scenario = format!(
        "name = \"b11\"\n{}queues = \"single\"\n[policy]\nqueue_order = \"priority\"\nqueueing_strategy = \"best-effort-fifo\"\nbackfill = \"{backfill}\"\n",
        one_cell(&["n1", "n2", "n3", "n4"], "H100", 8)
    );
    run(&scenario, &[("jobs.csv", B11_JOBS)])
}

/// B11 — EASY backfill reserves for the big job from the running jobs' time limits.
///
/// 4 nodes × 8 GPUs, whole-node jobs. s1–s4 run on n1–n4 until 100, 200, 300, 400. B (priority
/// 10, 4 nodes) arrives at 1 and is reserved for t=400 (when s4 ends). s5–s8 (1000 s each)
/// would run past 400 on nodes B needs, so they wait (reason: reservation). B runs 400–1400,
/// then s5–s8 1400–2400. Waits: B 399; s5 1350, s6 1250, s7 1150, s8 1050.
/// Occupancy [0,2400] = (8000 + 32000 + 32000) / 76800 = 93.75 %. Conservative backfill gives
/// the same. Without backfill, s5–s8 take each node as it frees and B starts only at 1400.
#[test]
fn b11_easy_backfill_reserves_for_the_big_job() {
    for policy in ["easy", "conservative"] {
        let out = b11(policy);
        assert_eq!(
            job(&out, "B").first_reservation.map(|t| t.0),
            Some(400_000),
            "{policy}"
        );
        assert_eq!(span(&out, "B"), (Some(400), Some(1400)), "{policy}");
        for (j, w) in [("s5", 1350), ("s6", 1250), ("s7", 1150), ("s8", 1050)] {
            assert_eq!(first_start_wait_s(&out, j), Some(w), "{policy} {j}");
            assert_eq!(span(&out, j).1, Some(2400), "{policy} {j}");
        }
        // Held back by B's reservation while a node was free: s5 100–400, s6 150–400,
        // s7 250–400, s8 350–400 = 750 job-seconds. No capacity: B 1–400, s5 50–100, and
        // s5–s8 400–1400 behind B = 399 + 50 + 4000 job-seconds.
        let by_reason = &out.summary.pending_reasons_job_s;
        assert_eq!(by_reason["reservation"], 750.0, "{policy}");
        assert_eq!(by_reason["no_capacity"], 4449.0, "{policy}");
        assert_eq!(allocated_occupancy(&out), 0.9375, "{policy}");
    }
    let none = b11("none");
    assert_eq!(span(&none, "s5"), (Some(100), Some(1100)));
    assert_eq!(span(&none, "B"), (Some(1400), Some(2400)));
}

/// B15 — tasks on a lost node stop counting against quota once their grace period ends, and
/// the retry starts then.
///
/// 2 nodes × 8 GPUs; tenant T has a hard quota of 8 GPUs. J1 (8 GPUs, 3600 s) runs on n1 from
/// 0. n1 fails at 100 with a 30 s termination grace: T's usage stays 8 during 100–130 (the
/// engine audits, after every instant, that usage = what live and terminating jobs hold), is
/// 0 at 130, and J1's retry runs 130–3730 on n2. J2 (T, 8 GPUs, submitted at 110) is held by
/// the quota until then, and behind J1 after.
#[test]
fn b15_lost_node_releases_quota_after_grace() {
    let scenario = format!(
        r#"
name = "b15"
{}
[[queues]]
name = "T"
flavors = [{{ name = "H100", gpus = {{ nominal = 8 }} }}]
[[node_events]]
at_s = 100
node = "n1"
kind = "fail"
grace_s = 30
"#,
        one_cell(&["n1", "n2"], "H100", 8)
    );
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
J1,0,T,T,8,3600
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(last_span(&out, "J1"), (Some(130), Some(3730)));
    assert_eq!(job(&out, "J1").nodes, vec!["n2"]);
    assert_eq!(job(&out, "J1").failures, 1);
    assert_eq!(out.result.counts.failures, 1);
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
J1,0,T,T,8,3600
J2,110,T,T,8,100
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(last_span(&out, "J1"), (Some(130), Some(3730)));
    assert_eq!(span(&out, "J2"), (Some(3730), Some(3830)));
    assert_eq!(
        job(&out, "J2").pending_reason,
        Some(PendingReason::OverQuota)
    );
}

/// B15 under the failure model of `[failures]`: the same loss of n1 replayed from a timeline
/// file (as `failures.csv` of a run records it) gives the same schedule, and the goodput
/// account holds it exactly.
///
/// J1 (8 GPUs, 3600 s, no checkpoints) runs on n1 0–100; n1 fails at 100 (grace 30 s) and
/// never returns; J1 holds its 8 GPUs, doing nothing, until 130, then restarts on n2 and
/// runs 130–3730. Allocated = 8 × (130 + 3600) = 29,840 GPU-s; lost = 8 × 100 s of progress
/// = 800 GPU-s; held on the failed node through the grace = 8 × 30 = 240 GPU-s (issue 17:
/// its own account, no longer in lost); goodput = 8 × 3600 = 28,800 GPU-s; recovery 30 s.
///
/// With `[startup] base_s = 20` and `restart_overhead_s = 50`, the first run spends 0–20 on
/// startup and makes 80 s of progress (all lost); the retry needs 20 plus 50 plus 3600 s:
/// 130–3800. Allocated = 8 × (130 + 3670) = 30,400; startup = 8 × (20 + 70) = 720;
/// lost = 8 × 80 = 640; held on the failed node 240; goodput = 28,800.
#[test]
fn b15_lost_node_from_a_timeline_file_with_goodput_account() {
    let timeline = "time_ms,node,event,grace_ms,cause\n100000,n1,fail,30000,node\n";
    let scenario = |startup: &str| {
        format!(
            r#"
name = "b15-timeline"
{}
[[queues]]
name = "T"
flavors = [{{ name = "H100", gpus = {{ nominal = 8 }} }}]
[failures]
timeline = {{ path = "failures.csv" }}
{startup}
"#,
            one_cell(&["n1", "n2"], "H100", 8)
        )
    };
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
J1,0,T,T,8,3600
";
    let out = run(
        &scenario(""),
        &[("jobs.csv", jobs), ("failures.csv", timeline)],
    );
    assert_eq!(last_span(&out, "J1"), (Some(130), Some(3730)));
    assert_eq!(job(&out, "J1").nodes, vec!["n2"]);
    assert_eq!(job(&out, "J1").failures, 1);
    let r = out.summary.reliability.as_ref().expect("reliability on");
    assert_eq!(r.allocated_gpu_s, 29_840.0);
    assert_eq!(r.lost_gpu_s, 800.0);
    assert_eq!(r.lost_to_failures_gpu_s, 800.0);
    assert_eq!(r.held_on_failed_nodes_gpu_s, 240.0);
    assert_eq!(r.goodput_gpu_s, 28_800.0);
    assert_eq!(r.startup_gpu_s, 0.0);
    assert_eq!(r.job_failures, 1);
    assert_eq!(r.node_failures, 1);
    assert_eq!(r.job_mttr_s, Some(30.0));
    assert_eq!(r.jobs_survived_failures, 1);
    assert_eq!(r.failures_survived_per_job_max, 1);
    assert_eq!(job(&out, "J1").allocated_gpu_milli_ms, 29_840 * 1_000_000);

    let out = run(
        &scenario("restart_overhead_s = 50\n[startup]\nbase_s = 20"),
        &[("jobs.csv", jobs), ("failures.csv", timeline)],
    );
    assert_eq!(last_span(&out, "J1"), (Some(130), Some(3800)));
    let r = out.summary.reliability.as_ref().expect("reliability on");
    assert_eq!(r.allocated_gpu_s, 30_400.0);
    assert_eq!(r.startup_gpu_s, 720.0);
    assert_eq!(r.lost_gpu_s, 640.0);
    assert_eq!(r.held_on_failed_nodes_gpu_s, 240.0);
    assert_eq!(r.goodput_gpu_s, 28_800.0);
}
