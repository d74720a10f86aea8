//! Field cases on contention from the second set of `../shared/cases/field-cases.md` (B21,
//! B22, B24 and its variant, B25, B27, B28, B31, B33, B34): reclaim order, hierarchical
//! reclaim, the victim search and the over-reclaim guard, double booking after node loss,
//! multi-cell preemption, worker loss, gang preemption, the sticky preemptor and H-DRF. Each
//! is an exact test of the outcome worked out there, run through the scenario loader and the
//! engine with every-instant audits.

use crate::support::{
    allocated_occupancy, first_start_wait_s, job, last_span, one_cell, run, span,
};

/// Two cells `w1`, `w2` of `n` nodes × 8 GPUs each (nodes `w1n1`, …).
fn two_cells(n: usize) -> String {
    let mut s = String::new();
    for w in ["w1", "w2"] {
        let names: Vec<String> = (1..=n).map(|i| format!("\"{w}n{i}\"")).collect();
        s += &format!(
            "[[fleet.cells]]\nname = \"{w}\"\n[[fleet.cells.nodes]]\nnames = [{}]\naccelerator = \"H100\"\ngpus = 8\n",
            names.join(", ")
        );
    }
    s + "[workload]\ntrace = { format = \"native\", path = \"jobs.csv\" }\n"
}

/// B21 — reclaim takes the borrower's most recently admitted jobs (a6, a5), not its oldest.
///
/// 1 node × 8 GPUs; cohort C = {A nominal 4, B nominal 4}. a1–a4 (A) run from 0; a5, a6 (A)
/// borrow 2 of B's quota from 100; at 200 b1, b2 take the 2 free GPUs and b3, b4 reclaim 2 by
/// preempting a6 and a5 (each has lost 100 s, a1–a4 200 s; a6 has the larger seq). b1–b4 run
/// 200–700; a5, a6 restart 700–1700.
/// Occupancy [0,1700] = (a1–a4 4·1000 + a5,a6 2·100 + b 4·500 + a5,a6 again 2·1000) / (8·1700)
/// = 8200/13600.
#[test]
fn b21_reclaim_takes_most_recent_borrowers() {
    let scenario = format!(
        r#"
name = "b21"
{}
[[cohorts]]
name = "C"
[[queues]]
name = "A"
cohort = "C"
strategy = "best-effort-fifo"
flavors = [{{ name = "H100", gpus = {{ nominal = 4 }} }}]
[[queues]]
name = "B"
cohort = "C"
strategy = "best-effort-fifo"
flavors = [{{ name = "H100", gpus = {{ nominal = 4 }} }}]
[policy.preemption]
reclaim_within_cohort = "any"
"#,
        one_cell(&["n1"], "H100", 8)
    );
    let mut jobs = String::from("id,submit_s,tenant,queue,num_gpu,runtime_s\n");
    for i in 1..=4 {
        jobs += &format!("a{i},0,a,A,1,1000\n");
    }
    for i in 5..=6 {
        jobs += &format!("a{i},100,a,A,1,1000\n");
    }
    for i in 1..=4 {
        jobs += &format!("b{i},200,b,B,1,500\n");
    }
    let out = run(&scenario, &[("jobs.csv", &jobs)]);
    for i in 1..=4 {
        assert_eq!(span(&out, &format!("a{i}")), (Some(0), Some(1000)));
        assert_eq!(job(&out, &format!("a{i}")).preemptions, 0);
        assert_eq!(span(&out, &format!("b{i}")), (Some(200), Some(700)));
    }
    for a in ["a5", "a6"] {
        assert_eq!(job(&out, a).preemptions, 1, "{a}");
        assert_eq!(last_span(&out, a), (Some(700), Some(1700)), "{a}");
    }
    assert_eq!(out.result.counts.preemptions, 2);
    assert_eq!(allocated_occupancy(&out), 8200.0 / 13600.0);
}

/// B22 — quota declared on the parent cohort gives its only queue the right to reclaim it.
///
/// 1 node × 4 GPUs; cohort root (no quota) = {queue best-effort (nominal 0), cohort
/// guaranteed (nominal 4) = {queue guaranteed (nominal 0)}}. be1 (4 GPUs) borrows all of it
/// from 0; g1 (4 GPUs) at 10 fits the nominal quota of cohort guaranteed, the smallest subtree
/// holding it that be1 is outside of: be1 is preempted at 10, g1 runs 10–110, be1 restarts
/// 110–1110. Occupancy [0,1110] = 4·(10 + 100 + 1000)/(4·1110) = 1.
///
/// Fails without the fix (issue #16 item 4: `QuotaTree::may_reclaim_from` /
/// `may_reclaim_somewhere` in `policies/src/scheduler/preempt.rs` replaced by the old
/// `within_nominal_after` on the preemptor's own queue): g1's span expected (10, 110), got
/// (1000, 1100) — g1 waited for be1 to end — both classic and fair-sharing (checked by
/// reverting the fix).
#[test]
fn b22_quota_on_the_parent_cohort_reclaims() {
    for fair in [false, true] {
        let preemption = if fair {
            // Fair-sharing preemption: the reclaim right is the same.
            "reclaim_within_cohort = \"any\"\nfair_sharing = [\"less-than-or-equal-to-final-share\"]\n"
        } else {
            "reclaim_within_cohort = \"any\"\n"
        };
        let scenario = format!(
            r#"
name = "b22"
{}
[[cohorts]]
name = "root"
[[cohorts]]
name = "guaranteed"
parent = "root"
flavors = [{{ name = "H100", gpus = {{ nominal = 4 }} }}]
[[queues]]
name = "best-effort"
cohort = "root"
flavors = [{{ name = "H100", gpus = {{ nominal = 0 }} }}]
[[queues]]
name = "guaranteed"
cohort = "guaranteed"
flavors = [{{ name = "H100", gpus = {{ nominal = 0 }} }}]
[policy.preemption]
{preemption}"#,
            one_cell(&["n1"], "H100", 4)
        );
        let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
be1,0,b,best-effort,4,1000
g1,10,g,guaranteed,4,100
";
        let out = run(&scenario, &[("jobs.csv", jobs)]);
        assert_eq!(span(&out, "g1"), (Some(10), Some(110)), "fair {fair}");
        assert_eq!(first_start_wait_s(&out, "g1"), Some(0));
        assert_eq!(job(&out, "be1").preemptions, 1);
        assert_eq!(last_span(&out, "be1"), (Some(110), Some(1110)));
        assert_eq!(out.result.counts.preemptions, 1);
        assert_eq!(allocated_occupancy(&out), 1.0);
    }
}

fn b24_scenario(queues: &[(&str, u32)]) -> String {
    let mut s = format!(
        "name = \"b24\"\n{}[[cohorts]]\nname = \"K\"\n",
        one_cell(&["n1"], "H100", 8)
    );
    for (q, nominal) in queues {
        s += &format!(
            "[[queues]]\nname = \"{q}\"\ncohort = \"K\"\nflavors = [{{ name = \"H100\", gpus = {{ nominal = {nominal} }} }}]\n"
        );
    }
    s + "[policy.preemption]\nreclaim_within_cohort = \"any\"\n"
}

/// B24 — a candidate that fails a check is skipped and the victim search goes on.
///
/// 1 node × 8 GPUs; cohort {A 4, B 2, C 2}. b1, b2 (B) and c1, c2 (C), 2 GPUs each, start at
/// 0, 10, 20, 30: B and C borrow 2 each. a1 (A, 4 GPUs) at 100: the order is c2, c1, b2, b1
/// (least lost work); c2 is taken (C back at 2), c1 is skipped (C no longer borrows), b2 is
/// taken. a1 runs 100–200; c2, b2 restart 200–2200.
/// Occupancy [0,2200] = (b1 4000 + b2 2·90 + c1 4000 + c2 2·70 + a1 4·100 + b2, c2 2·4000)
/// / (8·2200) = 16720/17600.
///
/// Fails without the fix (issue #16 item 2, "a candidate that fails a check must be
/// skipped": the `continue` after a failed `eligible` in `minimal_victim_set`,
/// `policies/src/preemption.rs`, made a `break`): a1's span expected (100, 200), got (2000,
/// 2100) — the search ended at c1 and a1 waited for a completion (checked by reverting the
/// fix; B24-variant fails the same way then).
#[test]
fn b24_failed_candidate_does_not_end_the_search() {
    let scenario = b24_scenario(&[("A", 4), ("B", 2), ("C", 2)]);
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
b1,0,b,B,2,2000
b2,10,b,B,2,2000
c1,20,c,C,2,2000
c2,30,c,C,2,2000
a1,100,a,A,4,100
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "a1"), (Some(100), Some(200)));
    for (j, p) in [("b1", 0), ("b2", 1), ("c1", 0), ("c2", 1)] {
        assert_eq!(job(&out, j).preemptions, p, "{j}");
    }
    assert_eq!(last_span(&out, "b2"), (Some(200), Some(2200)));
    assert_eq!(last_span(&out, "c2"), (Some(200), Some(2200)));
    assert_eq!(out.result.counts.preemptions, 2);
    assert_eq!(allocated_occupancy(&out), 16720.0 / 17600.0);
}

/// B24-variant — the over-reclaim guard: a victim that would take its queue below its nominal
/// quota is skipped, although it comes first in the order.
///
/// 1 node × 8 GPUs; cohort {A 2, B 6}. B runs b_small, b_mid (2 GPUs each, from 0) and b_big
/// (4 GPUs, from 90): it borrows 2. a1 (A, 2 GPUs) at 100: b_big comes first (it has lost 40
/// GPU-s, the others 200) but evicting it takes B to 4 < 6; b_small and b_mid tie on lost work
/// and start, b_mid has the larger seq: b_mid is preempted, B stays at 6. a1 runs 100–200;
/// b_mid restarts 200–2200.
/// Occupancy [0,2200] = (b_small 4000 + b_mid 200 + b_big 8000 + a1 200 + b_mid 4000)
/// / 17600 = 16400/17600 (the over-reclaim gave 16240/17600: 2 GPUs idle over 100–200).
///
/// Fails without the fix (issue #16 item 2, the over-reclaim guard: the
/// `keeps_nominal_after_removal` checks in `SimTrial::eligible`,
/// `policies/src/scheduler/preempt.rs`, bypassed): b_big's preemptions expected 0, got 1
/// (checked by reverting the fix).
#[test]
fn b24_variant_over_reclaim_guard() {
    let scenario = b24_scenario(&[("A", 2), ("B", 6)]);
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
b_small,0,b,B,2,2000
b_mid,0,b,B,2,2000
b_big,90,b,B,4,2000
a1,100,a,A,2,100
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "a1"), (Some(100), Some(200)));
    assert_eq!(job(&out, "b_big").preemptions, 0);
    assert_eq!(job(&out, "b_small").preemptions, 0);
    assert_eq!(job(&out, "b_mid").preemptions, 1);
    assert_eq!(last_span(&out, "b_mid"), (Some(200), Some(2200)));
    assert_eq!(out.result.counts.preemptions, 1);
    assert_eq!(allocated_occupancy(&out), 16400.0 / 17600.0);

    // Guard off (Kueue classic): b_big is evicted, B drops to 4 < 6, 2 GPUs idle over
    // 100–200; b_big restarts 200–2200. Occupancy = (4000 + 4000 + 4·10 + 200 + 4·2000)
    // / 17600 = 16240/17600.
    let off = scenario.replace(
        "reclaim_within_cohort = \"any\"\n",
        "reclaim_within_cohort = \"any\"\nreclaim_guard = \"off\"\n",
    );
    let out = run(&off, &[("jobs.csv", jobs)]);
    assert_eq!(job(&out, "b_big").preemptions, 1);
    assert_eq!(job(&out, "b_mid").preemptions, 0);
    assert_eq!(last_span(&out, "b_big"), (Some(200), Some(2200)));
    assert_eq!(allocated_occupancy(&out), 16240.0 / 17600.0);
}

/// B25 — the node a gang moves to after a node loss is not booked twice.
///
/// 3 nodes × 8 GPUs; cohort {CQ-A 16, CQ-B 8}. A (gang 2 × 8) runs on n1+n2 from 0; n2 fails
/// at 100 (grace 0, never returns): A is requeued whole and, its submit time 0 first, restarts
/// on n1+n3 at 100 (100–700); B (8 GPUs, submitted 100) waits until 700 and runs 700–1300 on
/// n1. Occupancy [0,1300] = (16·100 + 16·600 + 8·600) / (8·1300 + 8·100 + 8·1300)
/// = 16000/21600.
#[test]
fn b25_node_freed_by_gang_loss_is_not_double_booked() {
    let scenario = format!(
        r#"
name = "b25"
{}
[[cohorts]]
name = "K"
[[queues]]
name = "CQ-A"
cohort = "K"
flavors = [{{ name = "H100", gpus = {{ nominal = 16 }} }}]
[[queues]]
name = "CQ-B"
cohort = "K"
flavors = [{{ name = "H100", gpus = {{ nominal = 8 }} }}]
[policy]
placement = "first-fit"
[[node_events]]
at_s = 100
node = "n2"
kind = "fail"
"#,
        one_cell(&["n1", "n2", "n3"], "H100", 8)
    );
    let jobs = "id,submit_s,tenant,queue,tasks,num_gpu,runtime_s
A,0,a,CQ-A,2,8,600
B,100,b,CQ-B,1,8,600
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(last_span(&out, "A"), (Some(100), Some(700)));
    assert_eq!(job(&out, "A").nodes, vec!["n1", "n3"]);
    assert_eq!(job(&out, "A").failures, 1);
    assert_eq!(span(&out, "B"), (Some(700), Some(1300)));
    assert_eq!(job(&out, "B").nodes, vec!["n1"]);
    assert_eq!(allocated_occupancy(&out), 16000.0 / 21600.0);
}

/// B27 — a job eligible for two cells preempts in one of them only.
///
/// Cells w1, w2 of 1 node × 8 GPUs. L1 (priority 1, w1) runs from 0, L2 (priority 1, w2) from
/// 10. H (priority 100, 8 GPUs, w1 or w2) at 100: one victim set for the fleet, least lost work
/// first → L2 (90 s lost against 100). Grace 30: H runs 130–630 in w2; L2 restarts 630–3630.
/// Occupancy [0,3630] = (L1 8·3000 + L2 8·120 + H 8·500 + L2 8·3000) / (16·3630)
/// = 52960/58080.
#[test]
fn b27_multi_cell_job_preempts_in_one_cell() {
    let scenario = format!(
        "name = \"b27\"\n{}queues = \"single\"\n[policy]\nqueue_order = \"priority\"\n[policy.cycle]\nretry_interval_s = 1\n[policy.preemption]\ncapacity = \"lower-priority\"\ngrace_s = 30\n",
        two_cells(1)
    );
    let jobs = "id,submit_s,tenant,priority,num_gpu,runtime_s,cells
L1,0,t,1,8,3000,w1
L2,10,t,1,8,3000,w2
H,100,t,100,8,500,w1|w2
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "L1"), (Some(0), Some(3000)));
    assert_eq!(job(&out, "L1").preemptions, 0);
    assert_eq!(span(&out, "H"), (Some(130), Some(630)));
    assert_eq!(job(&out, "H").cell.as_deref(), Some("w2"));
    assert_eq!(job(&out, "L2").preemptions, 1);
    assert_eq!(last_span(&out, "L2"), (Some(630), Some(3630)));
    assert_eq!(out.result.counts.preemptions, 1);
    assert_eq!(allocated_occupancy(&out), 52960.0 / 58080.0);
}

/// B28 — the jobs of a lost cell are requeued when the worker-lost timeout (the failure
/// grace) ends, and go to the other cell.
///
/// Cells w1, w2 of 2 nodes × 8 GPUs. J (gang 2 × 8) runs in w1 from 0; both nodes of w1 fail
/// at 200 with grace 60: J is requeued at 260 and runs 260–1260 in w2. w1's return at 3000
/// changes nothing.
#[test]
fn b28_lost_cell_requeues_after_the_timeout() {
    let mut scenario = format!("name = \"b28\"\n{}queues = \"single\"\n", two_cells(2));
    for n in ["w1n1", "w1n2"] {
        scenario += &format!(
            "[[node_events]]\nat_s = 200\nnode = \"{n}\"\nkind = \"fail\"\ngrace_s = 60\n[[node_events]]\nat_s = 3000\nnode = \"{n}\"\nkind = \"repair\"\n"
        );
    }
    let jobs = "id,submit_s,tenant,tasks,num_gpu,runtime_s
J,0,t,2,8,1000
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "J").0, Some(0));
    assert_eq!(last_span(&out, "J"), (Some(260), Some(1260)));
    assert_eq!(job(&out, "J").cell.as_deref(), Some("w2"));
    assert_eq!(job(&out, "J").failures, 1);
    assert_eq!(out.result.counts.failures, 1);
}

/// B31 — a high-priority gang of small tasks preempts one big low-priority task.
///
/// 1 node × 8 GPUs. L (priority 1, 8 GPUs) runs from 0; H (priority 100, gang 2 × 2) at 10
/// preempts it: H runs 10–610; L restarts 610–5610.
/// Occupancy [0,5610] = (8·10 + 8·5000 + 4·600) / (8·5610) = 42480/44880.
#[test]
fn b31_gang_of_small_tasks_preempts_a_big_task() {
    let scenario = format!(
        "name = \"b31\"\n{}queues = \"single\"\n[policy]\nqueue_order = \"priority\"\n[policy.preemption]\ncapacity = \"lower-priority\"\n",
        one_cell(&["n1"], "H100", 8)
    );
    let jobs = "id,submit_s,tenant,priority,tasks,num_gpu,runtime_s
L,0,t,1,1,8,5000
H,10,t,100,2,2,600
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "H"), (Some(10), Some(610)));
    assert_eq!(job(&out, "L").preemptions, 1);
    assert_eq!(last_span(&out, "L"), (Some(610), Some(5610)));
    assert_eq!(out.result.counts.preemptions, 1);
    assert_eq!(allocated_occupancy(&out), 42480.0 / 44880.0);
}

/// B33 — a waiting preemptor holds no claim against a higher-priority job of its own queue.
///
/// 1 node × 3 GPUs; cohort {cq1 nominal 3, borrowing limit 0; cq2 nominal 0, borrowing limit
/// 3}; priority order, grace 30 s, a pass every 1 s. b1–b3 (cq2, 1 GPU) run from 0. L (cq1,
/// priority 10, 2 GPUs) at 10 reclaims b3 and b2 (they leave at 40). H (cq1, priority 10000,
/// 2 GPUs) at 20 preempts nothing: the room being freed is its own when the victims leave, and
/// H runs 40–540. L cannot reclaim more (cq1 would hold 4 > 3) and runs 540–1040 once H is
/// done. b2 restarts 1000–2000 (when b1 ends), b3 1040–2040. Waits: H 20, L 530.
/// Occupancy [0,2040] = (b1 1000 + b2 40 + b3 40 + H 2·500 + L 2·500 + b2 1000 + b3 1000)
/// / (3·2040) = 5080/6120.
///
/// Fails without the fix (issue #16 item 5: the ready preemptor L tried before the
/// higher-priority jobs of its own queue, `policies/src/scheduler/pass.rs`): H's span expected
/// (40, 540), got (70, 570) — L took the room at 40 and H had to preempt it (checked by
/// reverting the fix).
#[test]
fn b33_waiting_preemptor_yields_to_higher_priority() {
    let scenario = format!(
        r#"
name = "b33"
{}
[[cohorts]]
name = "K"
[[queues]]
name = "cq1"
cohort = "K"
flavors = [{{ name = "H100", gpus = {{ nominal = 3, borrowing_limit = 0 }} }}]
[[queues]]
name = "cq2"
cohort = "K"
flavors = [{{ name = "H100", gpus = {{ nominal = 0, borrowing_limit = 3 }} }}]
[policy]
queue_order = "priority"
[policy.cycle]
retry_interval_s = 1
[policy.preemption]
reclaim_within_cohort = "any"
within_queue = "lower-priority"
grace_s = 30
"#,
        one_cell(&["n1"], "H100", 3)
    );
    let jobs = "id,submit_s,tenant,queue,priority,num_gpu,runtime_s
b1,0,b,cq2,0,1,1000
b2,0,b,cq2,0,1,1000
b3,0,b,cq2,0,1,1000
L,10,a,cq1,10,2,500
H,20,a,cq1,10000,2,500
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "H"), (Some(40), Some(540)));
    assert_eq!(first_start_wait_s(&out, "H"), Some(20));
    assert_eq!(span(&out, "L"), (Some(540), Some(1040)));
    assert_eq!(first_start_wait_s(&out, "L"), Some(530));
    assert_eq!(span(&out, "b1"), (Some(0), Some(1000)));
    assert_eq!(last_span(&out, "b2"), (Some(1000), Some(2000)));
    assert_eq!(last_span(&out, "b3"), (Some(1040), Some(2040)));
    assert_eq!(out.result.counts.preemptions, 2);
    assert_eq!(allocated_occupancy(&out), 5080.0 / 6120.0);
}

/// Issue #16 item 6 — no "did not fit" memory survives a zero-grace preemption.
///
/// 1 node × 8 GPUs, priority order, capacity preemption. V and W (priority 0, 4 GPUs each)
/// run from 0. At 10, A (priority 10, 2 GPUs) finds no room and preempts W (equal lost work
/// and start; W has the larger seq); that frees 4 GPUs, A takes 2. B (priority 5, 2 GPUs),
/// of A's shape, must see the 2 free GPUs rather than the pass's memory that its shape did
/// not fit: it starts at 10 without preempting V. A and B run 10–110; W restarts 110–1110.
/// Preemptions = 1 (2 before the fix: B evicted V too).
///
/// Fails without the fix (the three `pass.failed_*.clear()` after a zero-grace plan in
/// `policies/src/scheduler/preempt.rs`): V's span expected (0, 1000), got (0, 1010) — B
/// evicted V at 10 and V restarted at once (checked by reverting the fix). The randomized
/// checker's NO-NEEDLESS-PREEMPTION property finds the same fault within 2,000 cases (its
/// shrunk case is kept in `tests/proptest-regressions/policy_props.txt`).
#[test]
fn no_did_not_fit_memory_across_a_zero_grace_preemption() {
    let scenario = format!(
        "name = \"item6\"\n{}queues = \"single\"\n[policy]\nqueue_order = \"priority\"\n[policy.preemption]\ncapacity = \"lower-priority\"\n",
        one_cell(&["n1"], "H100", 8)
    );
    let jobs = "id,submit_s,tenant,priority,num_gpu,runtime_s
V,0,t,0,4,1000
W,0,t,0,4,1000
A,10,t,10,2,100
B,10,t,5,2,100
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "A"), (Some(10), Some(110)));
    assert_eq!(span(&out, "B"), (Some(10), Some(110)));
    assert_eq!(span(&out, "V"), (Some(0), Some(1000)));
    assert_eq!(job(&out, "V").preemptions, 0);
    assert_eq!(job(&out, "W").preemptions, 1);
    assert_eq!(last_span(&out, "W"), (Some(110), Some(1110)));
    assert_eq!(out.result.counts.preemptions, 1);
}

/// Issue #16 item 5 — a preemptor whose planned node fails plans again at the failure.
///
/// 2 nodes × 8 GPUs, priority order, capacity preemption, grace 30 s, a pass every 1 s.
/// L1 (priority 1) runs on n1 from 0, L2 (priority 1) on n2 from 5 (8 GPUs, 3000 s each).
/// H (priority 100, 8 GPUs) at 100 preempts L2 (less lost work), planning n2. At 110 n2
/// fails (node grace 60 s): the plan is stale, so H plans again at once and preempts L1 on
/// n1 (grace 30): H runs 140–640 on n1. (With the stale plan H waited for L2 until 130, found
/// n2 down, and only then preempted L1: start 160.)
///
/// Fails without the fix (dropping nominations whose planned nodes are unschedulable at the
/// start of a pass, `policies/src/scheduler/pass.rs`): H's span expected (140, 640), got
/// (160, 660) (checked by reverting the fix).
#[test]
fn preemptor_replans_when_its_planned_node_fails() {
    let scenario = format!(
        "name = \"item5\"\n{}queues = \"single\"\n[policy]\nqueue_order = \"priority\"\n[policy.cycle]\nretry_interval_s = 1\n[policy.preemption]\ncapacity = \"lower-priority\"\ngrace_s = 30\n[[node_events]]\nat_s = 110\nnode = \"n2\"\nkind = \"fail\"\ngrace_s = 60\n",
        one_cell(&["n1", "n2"], "H100", 8)
    );
    let jobs = "id,submit_s,tenant,priority,num_gpu,runtime_s
L1,0,t,1,8,3000
L2,5,t,1,8,3000
H,100,t,100,8,500
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "H"), (Some(140), Some(640)));
    assert_eq!(job(&out, "H").nodes, vec!["n1"]);
    assert_eq!(job(&out, "L1").preemptions, 1);
    assert_eq!(job(&out, "L2").preemptions, 1);
}

/// B34 — hierarchical DRF: a sibling's CPU use does not starve its GPU sibling.
///
/// 1 node: 8 GPUs, 8 CPUs. Cohort root (8 GPUs, 8 CPUs) = {queue n1, cohort n2 = {n21,
/// n22}}, every queue nominal 0. n21 runs 8 CPU-only jobs from 0 (100,000 s). At 10, n1 and
/// n22 each submit 16 one-GPU jobs of 1000 s.
/// * `hdrf`: n2's share towards a GPU job is its GPU share (n22's), so n1 and n22 alternate:
///   four jobs each start at 10, 1010, 2010 and 3010; mean wait (4·0 + 4·1000 + 4·2000 +
///   4·3000)/16 = 1500 s each.
/// * `drf` (Kueue): n2's share is 1 (n21 holds every CPU), so n1 takes all 8 GPUs at 10 and
///   1010 and n22 starts at 2010: mean waits n1 (8·0 + 8·1000)/16 = 500 s, n22 (8·2000 +
///   8·3000)/16 = 2500 s (the fault signature, kept as the `drf` behaviour).
///
/// Fails without the fix (issue #16 item 9: `hdrf` keyed by `QuotaTree::fair_order_key`
/// instead of `hdrf_order_key` in `Core::head`, `policies/src/scheduler/core.rs`): n1_4's
/// start expected 1010, got 10 — n1 took all 8 GPUs at 10 as under `drf` (checked by
/// reverting the fix).
#[test]
fn b34_hierarchical_drf() {
    let scenario = |order: &str| {
        format!(
            r#"
name = "b34"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 8
cpu_milli = 8000
[workload]
trace = {{ format = "native", path = "jobs.csv" }}
[[cohorts]]
name = "root"
flavors = [{{ name = "H100", gpus = {{ nominal = 8 }}, cpus = {{ nominal = 8 }} }}]
[[cohorts]]
name = "n2"
parent = "root"
[[queues]]
name = "n1"
cohort = "root"
flavors = [{{ name = "H100", gpus = {{ nominal = 0 }}, cpus = {{ nominal = 0 }} }}]
[[queues]]
name = "n21"
cohort = "n2"
flavors = [{{ name = "H100", gpus = {{ nominal = 0 }}, cpus = {{ nominal = 0 }} }}]
[[queues]]
name = "n22"
cohort = "n2"
flavors = [{{ name = "H100", gpus = {{ nominal = 0 }}, cpus = {{ nominal = 0 }} }}]
[policy]
admission_order = "{order}"
"#
        )
    };
    let mut jobs = String::from("id,submit_s,tenant,queue,num_gpu,cpu_milli,runtime_s\n");
    for i in 0..8 {
        jobs += &format!("c{i},0,x,n21,0,1000,100000\n");
    }
    for q in ["n1", "n22"] {
        for i in 0..16 {
            jobs += &format!("{q}_{i},10,{q},{q},1,0,1000\n");
        }
    }
    let mean_wait = |out: &fleetsim::run::RunOutput, q: &str| -> u64 {
        (0..16)
            .map(|i| first_start_wait_s(out, &format!("{q}_{i}")).unwrap())
            .sum::<u64>()
            / 16
    };
    let out = run(&scenario("hdrf"), &[("jobs.csv", &jobs)]);
    for q in ["n1", "n22"] {
        for (round, start) in [10, 1010, 2010, 3010].into_iter().enumerate() {
            for i in 4 * round..4 * round + 4 {
                assert_eq!(span(&out, &format!("{q}_{i}")).0, Some(start), "{q}_{i}");
            }
        }
        assert_eq!(mean_wait(&out, q), 1500, "{q}");
    }
    let out = run(&scenario("drf"), &[("jobs.csv", &jobs)]);
    assert_eq!(mean_wait(&out, "n1"), 500);
    assert_eq!(mean_wait(&out, "n22"), 2500);
}

/// Found by the randomized checker (with rule P4 off): a preemptor's own victim, requeued
/// ahead of it in FIFO order, must not take back the room made for it (else the two go round
/// every grace period until the horizon: 200 preemptions in 1,000 s).
///
/// 1 node × 4 GPUs, FIFO, capacity preemption, grace 5 s. J0 (priority 0, 4 GPUs, 53 s) and
/// J1 (priority 1, 1 GPU, 5 s) both at 0: J0 starts first (FIFO), J1 preempts it at 0; J0
/// leaves at 5 and J1 runs 5–10; J0 (requeued with submit 0, ahead of J1) waits for 4 free
/// GPUs and runs 10–63. Preemptions = 1.
#[test]
fn requeued_victim_does_not_take_back_the_preemptors_room() {
    let scenario = format!(
        "name = \"victim-ahead\"\n{}queues = \"single\"\n[policy.preemption]\ncapacity = \"lower-priority\"\ngrace_s = 5\n",
        one_cell(&["n1"], "H100", 4)
    );
    let jobs = "id,submit_s,tenant,priority,num_gpu,runtime_s
J0,0,t,0,4,53
J1,0,t,1,1,5
";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "J1"), (Some(5), Some(10)));
    assert_eq!(last_span(&out, "J0"), (Some(10), Some(63)));
    assert_eq!(job(&out, "J0").preemptions, 1);
    assert_eq!(out.result.counts.preemptions, 1);
}

/// Issue #16 item 3 in the victim order: reclaim victims ordered by their queue's exact
/// share, not its share in per mille.
///
/// 1 node × 4 GPUs; cohort C = {P nominal 4, A nominal 0, B nominal 0}, A and B of weight
/// `w`. a1 (A, 2 GPUs, 1000 s) runs from 0, b1 (B, 1 GPU, 1000 s) from 1: A borrows 2, B 1 of
/// P's 4 lendable GPUs. p1 (P, 2 GPUs, 100 s) at 10 finds 1 GPU free and reclaims one job
/// (either frees enough). Shares: A 2·1000/(4·1000·w), B 1·1000/(4·1000·w): 500‰ and 250‰
/// for w = 1, 0.5‰ and 0.25‰ for w = 1000 (both 0 in per mille, where the next component,
/// the least lost work, would pick b1: 9 GPU-s lost against a1's 20). The larger share goes
/// first for both weights: a1 is preempted at 10, p1 runs 10–110, a1 restarts 110–1110 (3 GPUs
/// free then), b1 runs 1–1001 untouched.
///
/// Fails without the fix (the victim key's share rounded to per mille again,
/// `candidates` in `policies/src/scheduler/preempt.rs`): for weight 1000, a1's preemptions
/// expected 1, got 0 — b1 was evicted (weight 1 passes: 500‰ > 250‰) (checked by reverting
/// the fix).
#[test]
fn reclaim_victims_follow_exact_shares_under_weight_scaling() {
    for w in [1, 1000] {
        let scenario = format!(
            r#"
name = "exact-share-victims"
{}
[[cohorts]]
name = "C"
[[queues]]
name = "P"
cohort = "C"
flavors = [{{ name = "H100", gpus = {{ nominal = 4 }} }}]
[[queues]]
name = "A"
cohort = "C"
weight = {w}.0
flavors = [{{ name = "H100", gpus = {{ nominal = 0 }} }}]
[[queues]]
name = "B"
cohort = "C"
weight = {w}.0
flavors = [{{ name = "H100", gpus = {{ nominal = 0 }} }}]
[policy.preemption]
reclaim_within_cohort = "any"
"#,
            one_cell(&["n1"], "H100", 4)
        );
        let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s
a1,0,a,A,2,1000
b1,1,b,B,1,1000
p1,10,p,P,2,100
";
        let out = run(&scenario, &[("jobs.csv", jobs)]);
        assert_eq!(span(&out, "p1"), (Some(10), Some(110)), "weight {w}");
        assert_eq!(job(&out, "a1").preemptions, 1, "weight {w}");
        assert_eq!(last_span(&out, "a1"), (Some(110), Some(1110)), "weight {w}");
        assert_eq!(span(&out, "b1"), (Some(1), Some(1001)), "weight {w}");
        assert_eq!(job(&out, "b1").preemptions, 0, "weight {w}");
        assert_eq!(out.result.counts.preemptions, 1, "weight {w}");
    }
}
