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
