//! Field cases from `../shared/cases/field-cases.md`, each an exact test of the outcome worked
//! out there.

use fleetsim::engine::FinalState;

use crate::support::{allocated_occupancy, job, run, span, state};

/// B16 — zero-size requests and zero time limits.
#[test]
fn b16_zero_size_requests_and_zero_time_limits() {
    let scenario = r#"
name = "b16"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 4
cpu_milli = 32000
[workload]
trace = { format = "native", path = "jobs.csv" }
[[queues]]
name = "Q"
default_time_limit_s = 0
max_time_limit_s = 3600
"#;
    let jobs = "id,submit_s,tenant,queue,num_gpu,cpu_milli,runtime_s,time_limit_s,res_rdma
Z1,0,t,Q,1,4000,100,100,0
Z2,0,t,Q,2,0,0,60,
Z3,0,t,Q,1,1000,50,,
Z4,5,t,Q,0,0,10,10,
";
    let out = run(scenario, &[("jobs.csv", jobs)]);
    // Z1 (rdma: 0, a resource the queue does not define) is admitted and runs 0–100.
    assert_eq!(span(&out, "Z1"), (Some(0), Some(100)));
    // Z2 starts and ends at 0.
    assert_eq!(span(&out, "Z2"), (Some(0), Some(0)));
    assert_eq!(job(&out, "Z2").run_ms, Some(0));
    // Z3 gave no limit and the default is exactly 0: rejected at t = 0.
    assert_eq!(state(&out, "Z3"), FinalState::Rejected);
    assert_eq!(
        job(&out, "Z3").reason.as_deref(),
        Some("invalid_time_limit")
    );
    // Z4 asks for nothing and runs 5–15.
    assert_eq!(span(&out, "Z4"), (Some(5), Some(15)));
    // Occupancy [0,100] = 100 GPU-s / (4 GPUs × 100 s) = 25 %.
    assert_eq!(allocated_occupancy(&out), 0.25);
    // No NaN or ∞ anywhere: bounded slowdown uses max(run, 10 s).
    let json = serde_json::to_string(&out.summary).unwrap();
    assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
    assert_eq!(out.summary.bounded_slowdown.max, Some(1.0));
    let c = &out.result.counts;
    assert_eq!((c.submitted, c.started, c.rejected), (4, 3, 1));
}

/// B17 — jobs larger than any node, or than the queue's maximum, are rejected at submit and
/// never block a strict-FIFO queue.
#[test]
fn b17_oversize_jobs_are_rejected_and_do_not_block() {
    let scenario = r#"
name = "b17"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1", "n2"]
accelerator = "H100"
gpus = 8
[workload]
trace = { format = "native", path = "jobs.csv" }
[[queues]]
name = "Q"
strategy = "strict-fifo"
max_gpus = 12
"#;
    let jobs = "id,submit_s,tenant,queue,tasks,num_gpu,runtime_s
O1,0,t,Q,1,16,100
O2,1,t,Q,2,8,100
J3,2,t,Q,1,4,100
";
    let out = run(scenario, &[("jobs.csv", jobs)]);
    assert_eq!(state(&out, "O1"), FinalState::Rejected);
    assert_eq!(
        job(&out, "O1").reason.as_deref(),
        Some("task_larger_than_any_node")
    );
    assert_eq!(state(&out, "O2"), FinalState::Rejected);
    assert_eq!(job(&out, "O2").reason.as_deref(), Some("over_queue_max"));
    assert_eq!(span(&out, "J3"), (Some(2), Some(102)));
    assert!(job(&out, "O1").nodes.is_empty() && job(&out, "O2").nodes.is_empty());
    // Window [0, 102] (first submit to last completion): J3's 4 GPUs × 100 s over
    // 16 GPUs × 102 s.
    assert_eq!(allocated_occupancy(&out), 400.0 / 1632.0);
    assert_eq!(out.result.counts.rejected_by_reason.len(), 2);
}

/// B18 — trace timestamps: never-started rows, pre-window events, relative times (replay).
#[test]
fn b18_trace_times_in_replay() {
    let scenario = r#"
name = "b18"
mode = "replay"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 8
[workload]
trace = { format = "native", path = "trace.csv", sort = true }
"#;
    let trace = "id,tenant,submit_s,start_s,end_s,num_gpu
T1,t,10,20,120,1
T2,t,30,0,0,2
T3,t,-800,-792,-788,1
T4,t,-50,-40,200,4
T5,t,50,60,60,1
";
    let out = run(scenario, &[("trace.csv", trace)]);
    let t1 = job(&out, "T1");
    assert_eq!(
        t1.start.map(|s| (s - t1.submit).0),
        Some(10_000),
        "T1 waits 10 s"
    );
    assert_eq!(t1.run_ms, Some(100_000));
    assert_eq!(state(&out, "T2"), FinalState::Cancelled, "never-ran record");
    assert!(
        out.jobs.as_ref().unwrap().iter().all(|r| r.name != "T3"),
        "T3 dropped"
    );
    assert_eq!(out.result.skipped_rows.get("ended_before_window"), Some(&1));
    assert_eq!(span(&out, "T4"), (Some(0), Some(200)));
    assert!(
        !job(&out, "T4").measured,
        "pre-existing load is not in wait statistics"
    );
    assert_eq!(job(&out, "T5").run_ms, Some(0));
    // Occupancy [0,200] = (100 + 800) / 1600 = 56.25 %.
    assert_eq!(allocated_occupancy(&out), 0.5625);
    // Waits counted: T1 (10 s) and T5 (10 s); never a negative one.
    assert_eq!(out.summary.wait_s.count, 2);
    assert_eq!(out.summary.wait_s.max, Some(10.0));
}

/// B13 — per-pod best fit keeps the only big node free for the big pod.
#[test]
fn b13_best_fit_avoids_fragmenting_the_big_node() {
    let scenario = r#"
name = "b13"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["x1"]
accelerator = "H100"
gpus = 2
[[fleet.cells.nodes]]
names = ["x2", "x3"]
accelerator = "H100"
gpus = 1
[workload]
trace = { format = "native", path = "jobs.csv" }
[policy]
placement = "best-fit"
"#;
    let jobs = "id,submit_s,tenant,tasks,num_gpu,runtime_s
WA,0,t,2,1,1000
WB,1,t,1,2,1000
";
    let out = run(scenario, &[("jobs.csv", jobs)]);
    assert_eq!(job(&out, "WA").nodes, vec!["x2", "x3"]);
    assert_eq!(job(&out, "WB").nodes, vec!["x1"]);
    assert_eq!(span(&out, "WB"), (Some(1), Some(1001)));
    // [0,1001]: 2 GPUs × 1000 + 2 GPUs × 1000 over 4 GPUs × 1001 s.
    assert_eq!(allocated_occupancy(&out), 4000.0 / 4004.0);
}

/// B08 — two whole-cluster gangs: all-or-nothing, one after the other, no deadlock.
#[test]
fn b08_gangs_never_deadlock() {
    let scenario = r#"
name = "b08"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1", "n2", "n3", "n4"]
accelerator = "H100"
gpus = 1
[workload]
trace = { format = "native", path = "jobs.csv" }
"#;
    let jobs = "id,submit_s,tenant,tasks,num_gpu,runtime_s
G1,0,t,4,1,600
G2,0,t,4,1,600
";
    let out = run(scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "G1"), (Some(0), Some(600)));
    assert_eq!(span(&out, "G2"), (Some(600), Some(1200)));
    assert_eq!(allocated_occupancy(&out), 1.0);
}
