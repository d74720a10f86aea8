//! Small scenarios whose every number is worked out by hand in the comments.

use crate::support::{
    allocated_occupancy, cell, one_cell, one_node_4_gpus, run, span, NATIVE_JOBS,
};

const JOBS: &str = "id,submit_s,tenant,num_gpu,runtime_s
J1,0,a,2,100
J2,0,b,4,50
J3,10,a,1,20
";

/// Strict FIFO, one queue, one 4-GPU node:
/// t=0 J1 (2 GPUs) starts; J2 (4) does not fit and blocks the queue.
/// t=10 J3 (1) would fit but is behind J2.
/// t=100 J1 ends; J2 starts (100–150); J3 still does not fit.
/// t=150 J3 runs 150–170.
/// Waits 0, 100, 140 → mean 80, p50 100, max 140.
/// Occupancy [0,170] = (2·100 + 4·50 + 1·20) / (4·170) = 420/680.
#[test]
fn strict_fifo_head_blocks_its_queue() {
    let toml = format!(
        "name = \"strict\"\n[policy]\nqueueing_strategy = \"strict-fifo\"\n{}",
        one_node_4_gpus()
    );
    let out = run(&toml, &[("jobs.csv", JOBS)]);
    assert_eq!(span(&out, "J1"), (Some(0), Some(100)));
    assert_eq!(span(&out, "J2"), (Some(100), Some(150)));
    assert_eq!(span(&out, "J3"), (Some(150), Some(170)));
    let w = &out.summary.wait_s;
    assert_eq!(
        (w.mean, w.p50, w.max),
        (Some(80.0), Some(100.0), Some(140.0))
    );
    assert_eq!(allocated_occupancy(&out), 420.0 / 680.0);
    assert_eq!(out.summary.makespan_s, Some(170.0));
    // JCTs 100, 150, 160 → mean 136.666…; bounded slowdowns 1, 3, 8.
    assert_eq!(out.summary.jct_s.max, Some(160.0));
    assert_eq!(out.summary.bounded_slowdown.max, Some(8.0));
    assert_eq!(out.summary.bounded_slowdown.p50, Some(3.0));
}

/// Best-effort FIFO: J3 passes the blocked J2.
/// t=10 J3 runs 10–30 on a free GPU. t=100 J2 runs 100–150.
/// Waits 0, 100, 0. Occupancy [0,150] = (200 + 200 + 20) / (4·150) = 420/600 = 70 %.
#[test]
fn best_effort_fifo_lets_later_jobs_pass() {
    let toml = format!(
        "name = \"best-effort\"\n[policy]\nqueueing_strategy = \"best-effort-fifo\"\n{}",
        one_node_4_gpus()
    );
    let out = run(&toml, &[("jobs.csv", JOBS)]);
    assert_eq!(span(&out, "J3"), (Some(10), Some(30)));
    assert_eq!(span(&out, "J2"), (Some(100), Some(150)));
    assert_eq!(allocated_occupancy(&out), 0.7);
    assert_eq!(out.summary.wait_s.max, Some(100.0));
}

/// Two cells, least-loaded cell selection: a: 1 node × 8 GPUs, b: 1 node × 8 GPUs.
/// A (t=0, 4 GPUs) → a (both empty, tie → lower id). B (t=1, 2 GPUs) → b (a at 50 %).
/// C (t=2, 2 GPUs) → b (a 50 %, b 25 %). With first-fit cells, B and C both go to a.
#[test]
fn cell_selection_least_loaded_vs_first_fit() {
    let fleet = cell("a", &["a1"], "H100", 8) + &cell("b", &["b1"], "B200", 8) + NATIVE_JOBS;
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s
A,0,t,4,100
B,1,t,2,100
C,2,t,2,100
";
    let ll = run(
        &format!("name = \"ll\"\n[policy]\ncell_selection = \"least-loaded\"\n{fleet}"),
        &[("jobs.csv", jobs)],
    );
    let cells = |out: &fleetsim::run::RunOutput| -> Vec<String> {
        ["A", "B", "C"]
            .iter()
            .map(|n| crate::support::job(out, n).cell.clone().unwrap())
            .collect()
    };
    assert_eq!(cells(&ll), vec!["a", "b", "b"]);
    let ff = run(
        &format!("name = \"ff\"\n[policy]\ncell_selection = \"first-fit\"\n{fleet}"),
        &[("jobs.csv", jobs)],
    );
    assert_eq!(cells(&ff), vec!["a", "a", "a"]);
    // Per-model occupancy, least-loaded, window [0,102]:
    // H100: 4·100 / (8·102); B200: 2·100·2 / (8·102).
    let by_model = &ll.summary.occupancy_by_model;
    assert_eq!(by_model["H100"], Some(400.0 / 816.0));
    assert_eq!(by_model["B200"], Some(400.0 / 816.0));
}

/// Fractional GPUs: two 0.5-GPU tasks share one GPU; occupancy counts GPU-milli.
/// Node 1 × 2 GPUs; P1, P2 (500 milli each, 100 s) at t=0 → both on GPU 0.
/// W (1 whole GPU, 100 s) at t=0 → GPU 1. Occupancy [0,100] = (0.5+0.5+1)·100 / (2·100) = 100 %.
#[test]
fn fractional_tasks_share_one_gpu() {
    let toml = &format!("name = \"frac\"\n{}", one_cell(&["n1"], "T4", 2));
    let jobs = "id,submit_s,tenant,num_gpu,gpu_milli,runtime_s
P1,0,t,1,500,100
P2,0,t,1,500,100
W,0,t,1,1000,100
";
    let out = run(toml, &[("jobs.csv", jobs)]);
    for j in ["P1", "P2", "W"] {
        assert_eq!(span(&out, j), (Some(0), Some(100)), "{j}");
    }
    assert_eq!(allocated_occupancy(&out), 1.0);
}

/// Fragmentation over time (FGD measure): x1 has 2 GPUs, x2 and x3 one each; the only jobs
/// ask for 2 GPUs, so the typical task is "2 GPUs" and a node with fewer than 2 free GPUs
/// fragments all its free GPUs. A (2 GPUs, 7,200 s) runs on x1; x2 and x3 are idle and can
/// never host a typical task: 2 fragmented GPUs = 50 % of capacity = all of the idle GPUs,
/// at both interval starts (0 s and 3,600 s).
#[test]
fn fragmentation_series_by_hand() {
    let toml = r#"
name = "frag"
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
[metrics]
timeseries_interval_s = 3600
"#;
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s
A,0,t,2,7200
";
    let out = run(toml, &[("jobs.csv", jobs)]);
    let series = &out.result.occupancy.series;
    assert_eq!(series.len(), 2);
    for row in series {
        assert_eq!(row.frag_milli, Some(2000), "{row:?}");
        assert_eq!(row.idle_milli, 2000);
    }
}

/// Waits that count every second pending and occupancy that counts only kept work, on a
/// preemption (the Tiresias pending time; useful vs allocated occupancy).
///
/// One 4-GPU node; priority order; lower-priority jobs are preempted for capacity with a
/// 20 s grace; jobs checkpoint every 60 s of progress; 50 s time-series intervals.
/// A (prio 0, 4 GPUs, 300 s) submitted at 0; B (prio 1, 4 GPUs, 100 s) at 150; C (prio −1,
/// 2 GPUs, 50 s) at 160.
///
/// t=0 A starts. t=150 B preempts A: A ran 150 s, keeps 120 (2 × 60), loses 30 s of work
/// (120–150) and holds its 4 GPUs through the grace 150–170. t=160 C waits (node held).
/// t=170 A is released; B runs 170–270. t=270 A (prio 0) runs its last 180 s 270–450; C
/// does not fit. t=450 C runs 450–500. Window 0–500: 4 × 500 = 2,000 GPU-s available.
///
/// Waits (all pending time): A 0 + (270 − 150) = 120, B 170 − 150 = 20, C 450 − 160 = 290
/// → mean 430/3, p50 120, p95 (rank ⌈2.85⌉ = 3) 290, max 290. First-start waits: 0, 20,
/// 290 → mean 310/3, p50 20.
/// Allocated: A 4 × 170 + B 4 × 100 + A 4 × 180 + C 2 × 50 = 680 + 400 + 720 + 100 = 1,900
/// GPU-s → allocated occupancy 0.95. Lost: 4 × 30 (work) + 4 × 20 (grace) = 200 GPU-s.
/// Useful = 1,900 − 200 = 1,700 = A 4 × 300 + B 400 + C 100 → occupancy 0.85.
/// Interval 100–150: allocated 4 × 50 = 200, of which 4 × 30 lost (120–150): useful 80.
/// Interval 150–200: A's grace 4 × 20 + B 4 × 30 = 200 allocated, useful 120.
#[test]
fn waits_count_every_pending_second_and_occupancy_only_kept_work() {
    let toml = format!(
        "name = \"pending\"\n[policy]\nqueue_order = \"priority\"\n[policy.preemption]\ncapacity = \"lower-priority\"\ngrace_s = 20\ncheckpoint_interval_s = 60\n[metrics]\ntimeseries_interval_s = 50\n{}",
        one_node_4_gpus()
    );
    let jobs = "id,submit_s,tenant,priority,num_gpu,runtime_s
A,0,a,0,4,300
B,150,b,1,4,100
C,160,c,-1,2,50
";
    let out = run(&toml, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(450)));
    assert_eq!(crate::support::last_span(&out, "A"), (Some(270), Some(450)));
    assert_eq!(span(&out, "B"), (Some(170), Some(270)));
    assert_eq!(span(&out, "C"), (Some(450), Some(500)));
    let s = &out.summary;
    let w = &s.wait_s;
    assert_eq!(
        (w.count, w.mean, w.p50, w.p95, w.max),
        (3, Some(430.0 / 3.0), Some(120.0), Some(290.0), Some(290.0))
    );
    let f = &s.first_start_wait_s;
    assert_eq!(
        (f.count, f.mean, f.p50, f.max),
        (3, Some(310.0 / 3.0), Some(20.0), Some(290.0))
    );
    assert_eq!(crate::support::job(&out, "A").pending_ms, Some(120_000));
    assert_eq!(s.available_gpu_s, 2_000.0);
    assert_eq!(s.allocated_gpu_s, 1_900.0);
    assert_eq!(s.useful_gpu_s, 1_700.0);
    assert_eq!(s.allocated_occupancy, Some(0.95));
    assert_eq!(s.occupancy, Some(0.85));
    assert_eq!(s.occupancy_by_cell["c"], Some(0.85));
    assert_eq!(s.allocated_occupancy_by_cell["c"], Some(0.95));
    assert_eq!(s.preemption.preemptions, 1);
    assert_eq!(s.preemption.lost_gpu_s, 200.0);
    assert_eq!(s.preemption.preemptions_per_job, Some(1.0 / 3.0));
    assert_eq!(
        crate::support::job(&out, "A").lost_gpu_milli_ms,
        200 * 1_000_000
    );
    let row = |t: u64| {
        let r = out
            .result
            .occupancy
            .series
            .iter()
            .find(|r| r.start.0 == t * 1000)
            .unwrap();
        (
            r.allocated_milli[0] / 1_000_000,
            r.unproductive_milli[0] / 1_000_000,
        )
    };
    assert_eq!(row(0), (200, 0));
    assert_eq!(row(100), (200, 120));
    assert_eq!(row(150), (200, 80));
    assert_eq!(row(200), (200, 0));
}

/// Capacity no job can ever use is listed, not silently counted: cell `gb` has two GB200
/// trays declared without CPU or memory (`cpu_milli`, `mem_mib` default to 0), and every job
/// asks for CPU, so nothing can run there. `summary.json` lists it under
/// `unusable_capacity` with its 2 × 4 = 8 GPUs and the job classes that wanted it (all
/// three jobs: 1 × 1 GPU, 4 cores, 16 GiB); the run's warnings say so; the usable cell `h`
/// is not listed.
#[test]
fn capacity_without_cpu_is_listed_as_unusable() {
    let toml = r#"name = "cpu-less"
[[fleet.cells]]
name = "h"
[[fleet.cells.nodes]]
names = ["h1"]
accelerator = "H100"
gpus = 8
cpu_milli = 64000
mem_mib = 524288
[[fleet.cells]]
name = "gb"
[[fleet.cells.nodes]]
names = ["g1", "g2"]
accelerator = "GB200"
gpus = 4
[workload]
trace = { format = "native", path = "jobs.csv" }
"#;
    let jobs = "id,submit_s,tenant,num_gpu,cpu_milli,mem_mib,runtime_s
a,0,t,1,4000,16384,100
b,0,t,1,4000,16384,100
c,5,t,1,4000,16384,100
";
    let out = run(toml, &[("jobs.csv", jobs)]);
    let u = &out.summary.unusable_capacity;
    assert_eq!(u.len(), 1, "{u:?}");
    assert_eq!(
        (
            u[0].cell.as_str(),
            u[0].group.as_str(),
            u[0].nodes,
            u[0].gpus
        ),
        ("gb", "nodes", 2, 8)
    );
    assert_eq!(u[0].reason, "cpu");
    assert_eq!(u[0].job_classes.len(), 1);
    assert_eq!(
        (u[0].job_classes[0].class.as_str(), u[0].job_classes[0].jobs),
        ("1 × 1 GPU, 4 cores, 16 GiB", 3)
    );
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("cell `gb`") && w.contains("8 GPUs") && w.contains("no CPU")),
        "{:?}",
        out.warnings
    );
    assert_eq!(out.summary.warnings, out.warnings);
    assert_eq!(out.summary.occupancy_by_cell["gb"], Some(0.0));
}

/// A job waiting while the only free accelerators are on nodes that can never hold its task
/// waits for `node_shape`, not `fragmentation`: h1 (8 × H100) and two 4-GPU GB200 trays.
/// J1 and J2 ask for one rigid task of 8 GPUs each (the `tasks` column is given). J1 runs
/// on h1 over 0–100; J2 waits 0–100 with 8 GPUs free on the trays, which never hold an
/// 8-GPU task, then runs 100–200.
#[test]
fn free_gpus_of_the_wrong_node_shape_are_not_fragmentation() {
    let toml = &format!(
        "name = \"shape\"\n{}{}{NATIVE_JOBS}",
        cell("h", &["h1"], "H100", 8),
        cell("gb", &["g1", "g2"], "GB200", 4)
    );
    let jobs = "id,submit_s,tenant,tasks,num_gpu,runtime_s
J1,0,t,1,8,100
J2,0,t,1,8,100
";
    let out = run(toml, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "J2"), (Some(100), Some(200)));
    assert_eq!(
        crate::support::job(&out, "J2").pending_reason,
        Some(fleetsim_policies::PendingReason::NodeShape)
    );
    assert_eq!(out.summary.pending_reasons_job_s["node_shape"], 100.0);
    assert_eq!(out.summary.pending_reasons_job_s["fragmentation"], 0.0);
}
