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
    // The earliest `timestamp` in the file (`sort` of the column): 2017-09-04 10:30:41,
    // naive US Pacific wall clock.
    let start = s.trace_start.as_ref().expect("Philly has a calendar");
    assert_eq!(start.time, "2017-09-04T10:30:41");
    assert!(!start.utc_offset_known);
    assert_eq!(start.zone.as_deref(), Some("US Pacific"));
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
    // `; UnixStartTime: 749458803` = 8,674 days after 1970-01-01 (1993-10-01) + 25,203 s
    // (07:00:03) UTC; `; TimeZoneString: US/Pacific`.
    let start = s.trace_start.as_ref().expect("the log has UnixStartTime");
    assert_eq!(start.time, "1993-10-01T07:00:03Z");
    assert!(start.utc_offset_known);
    assert_eq!(start.zone.as_deref(), Some("US/Pacific"));
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
    let opts = crate::support::run_options(None, true);
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
fn kueue_cluster_queues_become_quota_queues_reached_by_their_local_queues() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/kueue-quota.toml");
    let loaded = scenario::load(&path).unwrap();
    let s = &loaded.scenario;
    type Row<'a> = (
        &'a str,
        Option<&'a str>,
        Vec<String>,
        Option<(f64, Option<f64>)>,
    );
    let q: Vec<Row> = s
        .queues
        .iter()
        .map(|q| {
            (
                q.name.as_str(),
                q.cohort.as_deref(),
                q.local_queues.clone(),
                q.flavors[0].gpus.map(|g| (g.nominal, g.borrowing_limit)),
            )
        })
        .collect();
    assert_eq!(
        q,
        [
            (
                "team-a",
                Some("org"),
                vec!["research".to_string()],
                Some((16.0, Some(8.0)))
            ),
            (
                "team-b",
                Some("org"),
                vec!["product".to_string()],
                Some((16.0, Some(0.0)))
            ),
        ]
    );
    assert_eq!(s.flavors[0].models, ["H100"]);
    // Jobs name the LocalQueue (sacct Partition) and land in its ClusterQueue, whose nominal
    // quota is the tenant's entitlement.
    let out = run_sample("kueue-quota.toml");
    assert_eq!(out.summary.fairness.entitlement_basis, "nominal_quota");
    let a = &out.summary.tenants["team-a"];
    assert_eq!((a.nominal_gpus, a.entitlement), (Some(16.0), Some(0.5)));
    let queues: std::collections::BTreeSet<&str> = out
        .jobs
        .as_ref()
        .unwrap()
        .iter()
        .map(|r| r.queue.as_str())
        .collect();
    assert_eq!(queues.into_iter().collect::<Vec<_>>(), ["team-a", "team-b"]);
}
