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

/// Racks of 3 nodes × 4 GPUs (one NVLink domain each); `blocks[b]` racks in block `b`.
fn ta_fleet(blocks: &[u32]) -> fleetsim_policies::FleetState {
    use fleetsim_policies::{CellId, ModelId, NodeSpec};
    let mut nodes = Vec::new();
    let mut rack = 0;
    for (b, &racks) in blocks.iter().enumerate() {
        for _ in 0..racks {
            for i in 0..3 {
                nodes.push(NodeSpec {
                    name: format!("r{rack}n{i}"),
                    cell: CellId(0),
                    block: b as u32,
                    domain: rack,
                    model: Some(ModelId(0)),
                    gpus: 4,
                    cpu_milli: 64_000,
                    mem_mib: 1 << 20,
                });
            }
            rack += 1;
        }
    }
    fleetsim_policies::FleetState::new(vec!["c".into()], vec!["GB200".into()], nodes).unwrap()
}

/// Takes `gpus[i]` whole GPUs on node `i`.
fn occupy(f: &mut fleetsim_policies::FleetState, gpus: &[u32]) {
    use fleetsim_policies::{ModelSet, NodeId, TaskShape};
    for (i, &g) in gpus.iter().enumerate().filter(|(_, &g)| g > 0) {
        f.allocate(NodeId(i as u32), &TaskShape::whole_gpus(g), ModelSet::ANY)
            .unwrap();
    }
}

fn ta_job(tasks: u32, gpus: u32, required_domain: bool) -> fleetsim_policies::PendingJob {
    use fleetsim_policies::{Level, PendingJob, TaskShape, TopologyMode, TopologySpec};
    PendingJob {
        shape: TaskShape::whole_gpus(gpus),
        tasks,
        topology: required_domain.then_some(TopologySpec {
            level: Some(Level::Domain),
            mode: TopologyMode::Required,
            ..TopologySpec::default()
        }),
        ..PendingJob::default()
    }
}

fn nodes_of(a: &[fleetsim_policies::TaskAlloc]) -> Vec<u32> {
    a.iter().map(|t| t.node.0).collect()
}

/// Issue #17 item 6: a small job goes to the tightest rack, not to the globally tightest
/// node, so the rack a waiting rack-scale job needs stays whole. One block, two racks:
/// rack 0 = nodes 0–2 with [2, 4, 4] GPUs free (2 taken on node 0), rack 1 = nodes 3–5 with
/// [3, 3, 3] free (1 taken on each).
/// * small job, 1 task × 2 GPUs: capacity in 2-GPU tasks — rack 0: 1 + 2 + 2 = 5, rack 1:
///   1 + 1 + 1 = 3 → rack 1 (tightest); its nodes tie at 3 free → node 3 (lowest id).
///   The old rule took the globally tightest node, node 0 (2 free), leaving rack 0 room for
///   0 + 2 + 2 = 4 tasks.
/// * the rack-scale job, 5 tasks × 2 GPUs, required in one rack: rack 0 still holds 5, rack 1
///   now 0 + 1 + 1 = 2 → rack 0; tightest node each time: node 0 (2 free → 0), node 1 (4
///   free, tie with node 2 → lowest id; → 2), node 1 again (2 → 0), node 2, node 2 →
///   [0, 1, 1, 2, 2]. Under the old rule it could not start at all.
#[test]
fn topology_aware_keeps_the_rack_a_rack_scale_job_needs_whole() {
    use fleetsim_policies::placement::TopologyAware;
    use fleetsim_policies::{place_gang, CellId, PlaceCtx};
    let mut f = ta_fleet(&[2]);
    occupy(&mut f, &[2, 0, 0, 1, 1, 1]);
    let mut ctx = PlaceCtx::new();
    let small = place_gang(
        &TopologyAware,
        &mut ctx,
        &mut f,
        CellId(0),
        &ta_job(1, 2, false),
    );
    assert_eq!(nodes_of(&small.unwrap()), vec![3]);
    let big = place_gang(
        &TopologyAware,
        &mut ctx,
        &mut f,
        CellId(0),
        &ta_job(5, 2, true),
    );
    assert_eq!(nodes_of(&big.unwrap()), vec![0, 1, 1, 2, 2]);
}

/// Issue #17 item 6, block first: block 0 = racks 0 and 1 as above ([2, 4, 4], [3, 3, 3]
/// free), block 1 = rack 2 = nodes 6–8 with [4, 4, 0] free (node 8 full). Small job 1 × 2
/// GPUs: capacity in 2-GPU tasks — block 0: 5 + 3 = 8, block 1: 2 + 2 + 0 = 4 → block 1;
/// its only rack, rack 2; nodes 6 and 7 tie at 4 free → node 6. Under the old rule: node 0.
/// Mirrored listing (block 1's rack listed first, nodes in reverse: node `i` ↦ `8 − i`):
/// the same block, rack and free counts, and nodes 6 and 7 become 2 and 1, which tie — the
/// lowest id, node 1 (the image of node 7), is the documented last tie-break.
#[test]
fn topology_aware_takes_the_tightest_block_first() {
    use fleetsim_policies::placement::TopologyAware;
    use fleetsim_policies::{place_gang, CellId, PlaceCtx};
    let mut f = ta_fleet(&[2, 1]);
    occupy(&mut f, &[2, 0, 0, 1, 1, 1, 0, 0, 4]);
    let a = place_gang(
        &TopologyAware,
        &mut PlaceCtx::new(),
        &mut f,
        CellId(0),
        &ta_job(1, 2, false),
    );
    assert_eq!(nodes_of(&a.unwrap()), vec![6]);
    let mut m = ta_fleet(&[1, 2]);
    occupy(&mut m, &[4, 0, 0, 1, 1, 1, 0, 0, 2]);
    let a = place_gang(
        &TopologyAware,
        &mut PlaceCtx::new(),
        &mut m,
        CellId(0),
        &ta_job(1, 2, false),
    );
    assert_eq!(nodes_of(&a.unwrap()), vec![1]);
}

/// Jobs take the node's shape: a cell `hgx` of one 8 × H100 node and a cell `gb` of two
/// GB200 NVL72 racks (18 trays × 4 GPUs each; a rack is one NVLink domain).
///
/// * `fill` (rigid: 16 tasks × 4 GPUs) takes 16 trays of rack 0 at t=0 (best-fit, node
///   order), leaving 2 trays (8 GPUs) free there and rack 1 empty.
/// * `J16` (2 tasks × 8 GPUs, `split` = 1) at t=1 becomes 4 members × 4 GPUs, 2 per task,
///   each task's pair in one rack. Rack 0's 2 free trays hold one pair; without keeping
///   the gang together its two pairs would land in racks 0 and 1. One rack (rack 1) can
///   hold all four, so all four go there.
/// * `J8` (8 GPUs, no `tasks`: takes the node's shape) at t=2 runs as 2 × 4 GPUs on rack 0's
///   last two trays (one domain).
/// * `H8` (8 GPUs, cell `hgx`) at t=3 runs whole, 1 × 8, on the HGX node.
#[test]
fn jobs_take_the_node_shape_and_stay_in_one_nvlink_domain() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jobs.csv"),
        "id,submit_s,tenant,tasks,num_gpu,runtime_s,split,cells
fill,0,t,16,4,1000,0,gb
J16,1,t,2,8,500,1,gb
J8,2,t,,8,500,,gb
H8,3,t,,8,500,,hgx
",
    )
    .unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        r#"name = "shape"
[[fleet.cells]]
name = "hgx"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 1
[[fleet.cells]]
name = "gb"
[[fleet.cells.nodes]]
preset = "gb200-nvl72"
racks = 2
[workload]
trace = { format = "native", path = "jobs.csv" }
[policy]
placement = "best-fit"
"#,
    )
    .unwrap();
    let mut loaded = scenario::load(&path).unwrap();
    loaded.scenario.metrics.audit_every_instant = true;
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(PathBuf::from("unused")),
        out_dir: None,
        keep_rows: true,
    };
    let out = run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
    let rows = out.jobs.as_ref().unwrap();
    let row = |name: &str| rows.iter().find(|r| r.name == name).unwrap();
    let racks = |name: &str| -> Vec<String> {
        let mut r: Vec<String> = row(name)
            .nodes
            .iter()
            .map(|n| n.split("-n").next().unwrap().to_string())
            .collect();
        r.dedup();
        r
    };
    assert_eq!(racks("fill"), ["gb-r000"]);
    assert_eq!(row("fill").nodes.len(), 16);
    assert_eq!(row("J16").nodes.len(), 4, "{:?}", row("J16").nodes);
    assert_eq!(racks("J16"), ["gb-r001"], "{:?}", row("J16").nodes);
    assert_eq!(row("J16").tasks, 2);
    assert_eq!(row("J8").nodes.len(), 2, "{:?}", row("J8").nodes);
    assert_eq!(racks("J8"), ["gb-r000"], "{:?}", row("J8").nodes);
    assert_eq!(row("H8").nodes, ["hgx-n00000"]);
    for j in ["fill", "J16", "J8", "H8"] {
        assert_eq!(
            row(j).start.map(|s| s.0 / 1000),
            row(j).submit.0.checked_div(1000)
        );
    }
}
