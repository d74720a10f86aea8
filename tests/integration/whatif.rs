//! What-if transforms on hand-computed scenarios.

use fleetsim::engine::FinalState;

use crate::support::{job, run, span, state};

const TRACE: &str = "id,submit_s,tenant,num_gpu,runtime_s
j1,0,t,8,100
j2,0,t,8,100
j3,10,t,8,100
j4,110,u,8,50
";

/// Two 8-GPU nodes; node 2 is drained at 50 s, a new cell of one node comes up at 120 s.
///
/// * 0 s: j1 → n0, j2 → n1 (best-fit ties by node id); 10 s: j3 waits (no room).
/// * 50 s: n1 drained: no new work, j2 keeps running, n1 stays available until it empties.
/// * 100 s: j1 and j2 end; n1 empties and leaves; j3 starts on n0 (ends 200 s).
/// * 110 s: j4 waits: n0 busy, n1 gone, the new node not yet up. 120 s: j4 starts there
///   (ends 170 s).
///
/// Available GPU·s over the window [0, 200]: n0 8 × 200 = 1600, n1 8 × 100 = 800, new
/// 8 × 80 = 640 → 3040. Allocated: 3 × 800 + 8 × 50 = 2800. Occupancy = 2800 / 3040.
#[test]
fn drained_and_added_nodes() {
    let out = run(
        r#"
name = "drain-add"
[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 2
[workload]
trace = { format = "native", path = "jobs.csv" }
[policy]
placement = "best-fit"
queueing_strategy = "best-effort-fifo"
[[transforms.remove_nodes]]
at_s = 50
cell = "a"
nodes = 1
[[transforms.add_nodes]]
at_s = 120
cell = "new"
nodes = [{ preset = "hgx-h100", count = 1 }]
"#,
        &[("jobs.csv", TRACE)],
    );
    assert_eq!(span(&out, "j1"), (Some(0), Some(100)));
    assert_eq!(span(&out, "j2"), (Some(0), Some(100)));
    assert_eq!(job(&out, "j2").nodes, vec!["a-n00001".to_string()]);
    assert_eq!(span(&out, "j3"), (Some(100), Some(200)));
    assert_eq!(job(&out, "j3").nodes, vec!["a-n00000".to_string()]);
    assert_eq!(span(&out, "j4"), (Some(120), Some(170)));
    assert_eq!(job(&out, "j4").nodes, vec!["new-add0-n00000".to_string()]);
    assert_eq!(job(&out, "j4").cell.as_deref(), Some("new"));
    let s = &out.summary;
    assert_eq!(s.occupancy, Some(2800.0 / 3040.0));
    assert_eq!(s.occupancy_by_cell["a"], Some(1.0));
    assert_eq!(s.occupancy_by_cell["new"], Some(400.0 / 640.0));
    assert_eq!(s.fleet.gpus, 24, "fleet facts count every node the run had");
    let echo = s.transforms.as_ref().expect("transforms echoed");
    assert_eq!(echo["remove_nodes"][0]["nodes"], 1);
    assert_eq!(echo["add_nodes"][0]["cell"], "new");
}

/// `fleet_scale` keeps evenly spaced domains below 1 and adds named copies above 1.
#[test]
fn fleet_scale_keeps_spaced_domains_and_copies() {
    let fleet = |scale: &str| {
        run(
            &format!(
                r#"
name = "scale"
[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 4
[workload]
trace = {{ format = "native", path = "jobs.csv" }}
[policy]
placement = "first-fit"
[transforms]
fleet_scale = {scale}
"#
            ),
            &[("jobs.csv", "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,8,10\nb,0,t,8,10\nc,0,t,8,10\nd,0,t,8,10\ne,0,t,8,10\nf,0,t,8,10\n")],
        )
    };
    // 4 nodes × 0.5 = 2: domains j with ⌊(j+1)·2/4⌋ > ⌊j·2/4⌋, i.e. n1 and n3.
    let half = fleet("0.5");
    assert_eq!(half.summary.fleet.gpus, 16);
    assert_eq!(job(&half, "a").nodes, vec!["a-n00001".to_string()]);
    assert_eq!(job(&half, "b").nodes, vec!["a-n00003".to_string()]);
    assert_eq!(span(&half, "c"), (Some(10), Some(20)));
    // 4 × 1.5 = 6: the four nodes, then copies of n0 and n1.
    let more = fleet("1.5");
    assert_eq!(more.summary.fleet.gpus, 48);
    assert_eq!(job(&more, "e").nodes, vec!["a-n00000~2".to_string()]);
    assert_eq!(job(&more, "f").nodes, vec!["a-n00001~2".to_string()]);
    assert_eq!(state(&more, "f"), FinalState::Completed);
}

/// Workload transforms: window, arrival-rate scale and tenant map, with the dropped jobs
/// counted.
#[test]
fn workload_transforms_shape_the_stream() {
    let out = run(
        r#"
name = "stream"
[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 4
[workload]
trace = { format = "native", path = "jobs.csv" }
[transforms]
window = { start_s = 10, end_s = 200 }
arrival_rate_scale = 2.0
tenant_map = { t = "renamed" }
"#,
        &[("jobs.csv", TRACE)],
    );
    // j1, j2 (submitted at 0) are outside the window; j3 at 10 → t0 = 10; j4 at 110 →
    // 10 + (110 − 10) / 2 = 60.
    assert_eq!(out.summary.jobs.submitted, 2);
    assert_eq!(out.summary.jobs.skipped_rows["transform_window"], 2);
    assert_eq!(span(&out, "j3"), (Some(10), Some(110)));
    assert_eq!(span(&out, "j4"), (Some(60), Some(110)));
    assert_eq!(job(&out, "j3").tenant, "renamed");
    assert_eq!(job(&out, "j4").tenant, "u");
}

/// With `metrics.horizon_s`, the rest of the workload is still read after the stop: rows the
/// window drops after the horizon are counted, and an in-window job whose compressed arrival
/// is after the horizon is counted under `after_horizon` (not submitted, not in `jobs.csv`).
///
/// Window [10, 300) s, arrivals ×2 from t0 = 10: j1, j2 (0 s) and j6 (400 s) are outside the
/// window; j3 → 10 s, j4 → 10 + 100 / 2 = 60 s, j5 → 10 + 240 / 2 = 130 s. The horizon at
/// 100 s stops the run at the next instant after it (j3's and j4's finish at 110 s): j3 and
/// j4 are submitted and running at the end, j5 is after the horizon, and j6 is read only
/// because the stream is read to its end.
#[test]
fn horizon_counts_the_rest_of_the_stream() {
    let trace = "id,submit_s,tenant,num_gpu,runtime_s
j1,0,t,8,100
j2,0,t,8,100
j3,10,t,8,100
j4,110,u,8,50
j5,250,t,8,10
j6,400,t,8,10
";
    let out = run(
        r#"
name = "horizon"
[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 4
[workload]
trace = { format = "native", path = "jobs.csv" }
[transforms]
window = { start_s = 10, end_s = 300 }
arrival_rate_scale = 2.0
[metrics]
horizon_s = 100
"#,
        &[("jobs.csv", trace)],
    );
    let jobs = &out.summary.jobs;
    assert_eq!(out.summary.end_reason, "horizon");
    assert_eq!(jobs.submitted, 2);
    assert_eq!(jobs.running_at_end, 2);
    let skipped: Vec<(&str, u64)> = jobs
        .skipped_rows
        .iter()
        .map(|(k, &v)| (k.as_str(), v))
        .collect();
    assert_eq!(skipped, vec![("after_horizon", 1), ("transform_window", 3)]);
    // Every row is accounted for: 2 submitted + 1 after the horizon + 3 outside the window.
    assert_eq!(jobs.submitted + skipped.iter().map(|s| s.1).sum::<u64>(), 6);
    assert_eq!(out.jobs.as_ref().unwrap().len(), 2);
    assert_eq!(span(&out, "j4"), (Some(60), None));
}
