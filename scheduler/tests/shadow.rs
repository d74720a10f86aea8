//! Shadow mode on committed recordings of scenarios/sample-small.toml's 20 jobs.
//!
//! `recorded-same.csv` is the jobs.csv of `fleetsim run scenarios/sample-small.toml`: the
//! same policy on the same fleet, so the shadow run must agree on every job.
//! `recorded-other.csv` is that file with four decisions of "another scheduler" edited in
//! by hand: s01 started at 100 s instead of 0 (diff −100 s), s03 at 90 s instead of 30
//! (−60 s) on hopper-n00005/6 instead of n00001/2, s13 on hopper-n00020 instead of n00014,
//! s07 preempted once. So: 20 jobs, 4 differ (start 2, nodes 2, victim 1); mean start
//! difference (−100 − 60) / 20 = −8 s; p95 of |diff| by nearest rank is the 19th of 18
//! zeros, 60, 100 → 60 s.

use std::path::{Path, PathBuf};

use fleetsim::scenario::TraceDir;
use fleetsim_scheduler::shadow::{compare, read_jobs_csv, run_policy, summary_text, ShadowSummary};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn shadow(name: &str) -> (Vec<fleetsim_scheduler::shadow::JobDiff>, ShadowSummary) {
    let rec = read_jobs_csv(&root().join("scheduler/tests/fixtures/shadow").join(name)).unwrap();
    let (rows, skipped) = run_policy(
        &root().join("scheduler/tests/fixtures/shadow/scenario.toml"),
        &rec,
        TraceDir(root().join("traces/public")),
    )
    .unwrap();
    assert_eq!(skipped, 0);
    compare(&rec, &rows)
}

#[test]
fn the_same_policy_agrees_on_every_job() {
    let (diffs, s) = shadow("recorded-same.csv");
    assert_eq!(diffs.len(), 20);
    assert_eq!(
        s,
        ShadowSummary {
            jobs: 20,
            skipped: 0,
            differing: 0,
            start_differs: 0,
            nodes_differ: 0,
            victim_differs: 0,
            mean_start_diff_s: 0.0,
            p95_abs_start_diff_s: 0.0,
        }
    );
}

#[test]
fn another_schedulers_decisions_are_reported_per_job() {
    let (diffs, s) = shadow("recorded-other.csv");
    assert_eq!(
        s,
        ShadowSummary {
            jobs: 20,
            skipped: 0,
            differing: 4,
            start_differs: 2,
            nodes_differ: 2,
            victim_differs: 1,
            mean_start_diff_s: -8.0,
            p95_abs_start_diff_s: 60.0,
        }
    );
    let differing: Vec<(&str, Option<i64>, bool, bool, bool)> = diffs
        .iter()
        .filter(|d| d.start_differs || d.nodes_differ || d.victim_differs)
        .map(|d| {
            (
                d.job.as_str(),
                d.start_diff_ms,
                d.start_differs,
                d.nodes_differ,
                d.victim_differs,
            )
        })
        .collect();
    assert_eq!(
        differing,
        vec![
            ("s01", Some(-100_000), true, false, false),
            ("s03", Some(-60_000), true, true, false),
            ("s07", Some(0), false, false, true),
            ("s13", Some(0), false, true, false),
        ]
    );
    assert_eq!(
        summary_text(&s),
        "shadow: 20 jobs compared (0 skipped: no run time); 4 differ: start 2, nodes 2, victim 1; start difference (shadow - recorded) mean -8.000 s, p95 |diff| 60.000 s\n"
    );
}

#[test]
fn a_bad_recording_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(root().join("scheduler/tests/fixtures/shadow/recorded-same.csv"))
            .unwrap();
    let bad = text.replacen(",60.000,60.000,", ",sixty,60.000,", 1);
    let p = dir.path().join("jobs.csv");
    std::fs::write(&p, bad).unwrap();
    let e = read_jobs_csv(&p).unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}:2: column `submission_time`: `sixty` is not seconds with at most 3 decimals",
            p.display()
        )
    );
}

/// The service's policy decides rigid jobs only: a spec with `[elastic]` is refused naming
/// the table, by the service's twin (before any log is opened) and by shadow mode.
#[test]
fn a_spec_with_elastic_is_refused_naming_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = root().join("scheduler/tests/fixtures/shadow");
    std::fs::copy(fixture.join("trace.csv"), dir.path().join("trace.csv")).unwrap();
    let text = std::fs::read_to_string(fixture.join("scenario.toml")).unwrap();
    let spec = dir.path().join("s.toml");
    std::fs::write(
        &spec,
        format!("{text}\n[elastic]\nallocator = \"grow-idle\"\n"),
    )
    .unwrap();
    let trace_dir = || TraceDir(root().join("traces/public"));
    let Err(e) = fleetsim_scheduler::serve::twin(&spec, trace_dir()) else {
        panic!("the twin accepted [elastic]");
    };
    assert!(
        e.contains("`[elastic]`") && e.contains("does not simulate elastic jobs"),
        "{e}"
    );
    let rec = read_jobs_csv(&fixture.join("recorded-same.csv")).unwrap();
    let e = run_policy(&spec, &rec, trace_dir()).unwrap_err();
    assert!(e.contains("`[elastic]`"), "{e}");
}
