//! Snapshots of the outputs of the committed sample scenario (`scenarios/sample-small.toml`
//! on `traces/sample-small.csv`). A change to any number shows up as a snapshot diff to review
//! (`cargo insta review`, or set `INSTA_UPDATE=always` and inspect `git diff`).

use std::path::PathBuf;

use fleetsim::run::{run_scenario, RunOptions};
use fleetsim::scenario::{self, TraceDir};

#[test]
fn sample_small_outputs() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/sample-small.toml");
    let loaded = scenario::load(&path).unwrap();
    let out = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(PathBuf::from("unused")),
        out_dir: Some(out.path().to_path_buf()),
        keep_rows: true,
    };
    run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
    let read = |f: &str| std::fs::read_to_string(out.path().join(f)).unwrap();
    insta::assert_snapshot!("sample_small_summary_json", read("summary.json"));
    insta::assert_snapshot!("sample_small_jobs_csv", read("jobs.csv"));
}
