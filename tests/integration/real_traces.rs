//! The committed scenarios on the real public traces in `../shared/traces`: counts match the
//! traces' SOURCE.md figures and every job is accounted for. Skipped (with a message) when
//! the traces are not there.

use std::path::PathBuf;

use fleetsim::run::{run_scenario, RunOptions};
use fleetsim::scenario::{self, TraceDir};

use crate::support::public_traces;

fn run_committed(name: &str) -> Option<fleetsim::run::RunOutput> {
    let traces = public_traces();
    if !traces.join("philly").exists() {
        eprintln!("skipping {name}: no public traces at {}", traces.display());
        return None;
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name);
    let loaded = scenario::load(&path).unwrap();
    let out = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(traces),
        out_dir: Some(out.path().to_path_buf()),
        keep_rows: true,
    };
    Some(run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap())
}

#[test]
fn openb_replay_counts_match_the_trace() {
    let Some(out) = run_committed("openb-replay.toml") else {
        return;
    };
    let s = &out.summary;
    assert_eq!(s.fleet.gpus, 6212);
    assert_eq!(s.fleet.nodes, 1213);
    assert_eq!(s.jobs.submitted, 8152);
    let j = &s.jobs;
    assert_eq!(
        j.started + j.rejected + j.censored + j.cancelled,
        j.submitted
    );
    assert_eq!(s.fleet.gpus_by_model["G2"], 4392);
    assert!(
        s.occupancy.unwrap() < 0.05,
        "the replayed timeline is nearly empty (quirk 1)"
    );
}

#[test]
fn philly_fifo_counts_match_the_trace() {
    let Some(out) = run_committed("philly-fifo.toml") else {
        return;
    };
    let s = &out.summary;
    assert_eq!(s.fleet.gpus, 2490);
    assert_eq!(s.fleet.nodes, 552);
    assert_eq!(s.jobs.submitted, 82_247);
    let j = &s.jobs;
    assert_eq!(
        j.started + j.rejected + j.censored + j.cancelled,
        j.submitted
    );
    assert_eq!(j.rejected, 0, "every Philly job fits the 2,490-GPU fleet");
    assert_eq!(j.completed, 82_247);
}

#[test]
fn swf_nasa_runs_end_to_end() {
    let Some(out) = run_committed("swf-nasa.toml") else {
        return;
    };
    let s = &out.summary;
    assert_eq!(s.fleet.gpus, 128);
    assert_eq!(s.jobs.submitted, 18_239);
    assert_eq!(s.jobs.completed, 18_239, "every job fits 128 accelerators");
}

#[test]
fn dlrm_services_run_end_to_end() {
    let Some(out) = run_committed("dlrm-services.toml") else {
        return;
    };
    let s = &out.summary;
    let j = &s.jobs;
    assert_eq!(j.submitted, 23_871);
    assert_eq!(
        j.started + j.rejected + j.censored + j.cancelled,
        j.submitted
    );
    assert_eq!(j.rejected, 0);
}

/// The committed scenarios over the samples the project wrote itself (no public file).
fn run_sample(name: &str) -> fleetsim::run::RunOutput {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name);
    let loaded = scenario::load(&path).unwrap();
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(public_traces()),
        out_dir: None,
        keep_rows: true,
    };
    run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap()
}

#[test]
fn sample_scenarios_of_every_format_run_end_to_end() {
    for (name, submitted, cancelled) in [
        ("kueue-quota.toml", 6, 1),
        ("helios-sample.toml", 6, 1),
        ("philly-raw-sample.toml", 3, 0),
        ("pai-sample.toml", 4, 0),
    ] {
        let out = run_sample(name);
        let j = &out.summary.jobs;
        assert_eq!((j.submitted, j.cancelled), (submitted, cancelled), "{name}");
        assert_eq!(
            j.started + j.rejected + j.censored + j.cancelled,
            j.submitted
        );
    }
}

#[test]
fn kueue_local_queues_become_queues() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/kueue-quota.toml");
    let loaded = scenario::load(&path).unwrap();
    let q: Vec<(String, Option<f64>)> = loaded
        .scenario
        .queues
        .iter()
        .map(|q| (q.name.clone(), q.max_gpus))
        .collect();
    assert_eq!(
        q,
        [
            ("product".to_string(), Some(16.0)),
            ("research".to_string(), Some(24.0))
        ]
    );
}
