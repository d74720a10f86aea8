//! The NVL72 topology scenario: topology-aware placement splits fewer gangs across NVLink
//! domains than best-fit, and the summary reports the largest placeable gang per level.

use std::path::PathBuf;

use fleetsim::run::{run_scenario, RunOptions};
use fleetsim::scenario::{self, TraceDir};
use fleetsim_policies::PlacementKind;

fn run(placement: PlacementKind) -> fleetsim::report::summary::Summary {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/nvl72-topology.toml");
    let mut loaded = scenario::load(&path).unwrap();
    loaded.scenario.policy.placement = placement.into();
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(PathBuf::from("unused")),
        out_dir: None,
        keep_rows: true,
    };
    run_scenario(&loaded, &opts, &mut |_, _| {})
        .unwrap()
        .summary
}

#[test]
fn topology_aware_splits_fewer_gangs_than_best_fit() {
    let ta = run(PlacementKind::TopologyAware);
    let bf = run(PlacementKind::BestFit);
    assert!(ta.topology.gangs > 100, "{}", ta.topology.gangs);
    assert!(
        ta.topology.split_gangs < bf.topology.split_gangs,
        "topology-aware {} vs best-fit {} split gangs",
        ta.topology.split_gangs,
        bf.topology.split_gangs
    );
    let lg = ta.topology.largest_gang_gpus.as_ref().unwrap();
    let cell = &lg["nvl72"];
    // Node ≤ domain ≤ block ≤ cell, and a node has 4 GPUs, a rack 72.
    let (n, d, b, c) = (
        &cell["node"],
        &cell["domain"],
        &cell["block"],
        &cell["cell"],
    );
    assert!(n.mean <= 4.0 && d.mean <= 72.0);
    assert!(n.mean <= d.mean && d.mean <= b.mean && b.mean <= c.mean);
}

/// Issue #23 defect 6: splits no placement could avoid are counted apart. Two HGX H100
/// nodes (each its own NVLink domain of 8 GPUs), worst-fit placement:
/// * `big` (t = 0, 2 tasks × 8 GPUs = 16 GPUs > 8, the largest domain): split across both
///   nodes, unavoidably;
/// * `small` (t = 1000, after `big` ended at 100: 2 tasks × 1 GPU = 2 GPUs ≤ 8): worst-fit puts
///   task 1 on n0 (8 free, tie → lowest id) and task 2 on n1 (8 free against n0's 7): split,
///   though one node holds it — avoidable.
///
/// So gangs = 2, split = 2, avoidable = 1; the summary line says so.
#[test]
fn avoidable_splits_are_counted_apart() {
    let trace =
        "id,submit_s,tenant,tasks,num_gpu,runtime_s\nbig,0,t,2,8,100\nsmall,1000,t,2,1,100\n";
    let out = crate::support::run(
        r#"
name = "splits"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 2
[workload]
trace = { format = "native", path = "t.csv" }
[policy]
placement = "worst-fit"
"#,
        &[("t.csv", trace)],
    );
    let t = &out.summary.topology;
    assert_eq!((t.gangs, t.split_gangs, t.avoidable_split_gangs), (2, 2, 1));
    let table = fleetsim::report::table::render(&out.summary);
    assert!(
        table.contains("2 started, 2 split across NVLink domains (1 avoidable"),
        "{table}"
    );
    assert!(table.contains("1 cell, 2 nodes, 16 GPUs"), "{table}");
    assert!(table.contains("over 1 tenant,"), "{table}");
}

/// Issue #23 defect 8: a run with a node failure and no preemption prints
/// "0 preemptions, 1 failure", not "0 preemptions (), 1 failures".
#[test]
fn summary_counts_read_as_english() {
    let trace = "id,submit_s,tenant,tasks,num_gpu,runtime_s\na,0,t,1,8,1000\n";
    let out = crate::support::run(
        r#"
name = "words"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 1
[workload]
trace = { format = "native", path = "t.csv" }
[[node_events]]
at_s = 100
node = "c-n00000"
kind = "fail"
[[node_events]]
at_s = 200
node = "c-n00000"
kind = "repair"
"#,
        &[("t.csv", trace)],
    );
    let table = fleetsim::report::table::render(&out.summary);
    assert!(
        table.contains("preempt  0 preemptions, 1 failure, "),
        "{table}"
    );
    assert!(!table.contains("()"), "{table}");
}
