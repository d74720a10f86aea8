//! Same scenario + seed ⇒ byte-identical output files.

use std::path::PathBuf;

use fleetsim::run::{run_scenario, RunOptions};
use fleetsim::scenario::{self, TraceDir};

fn run_default(out: &std::path::Path, seed: Option<u64>) {
    let loaded =
        scenario::parse(scenario::DEFAULT_SCENARIO, "<default>", PathBuf::from(".")).unwrap();
    let opts = RunOptions {
        seed,
        trace_dir: TraceDir(PathBuf::from("unused")),
        out_dir: Some(out.to_path_buf()),
        keep_rows: true,
    };
    run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
}

fn read(dir: &std::path::Path, f: &str) -> Vec<u8> {
    std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))
}

#[test]
fn default_scenario_is_byte_identical_across_runs() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let c = tempfile::tempdir().unwrap();
    run_default(a.path(), None);
    run_default(b.path(), None);
    run_default(c.path(), Some(7));
    for f in ["summary.json", "jobs.csv", "timeseries.csv"] {
        assert_eq!(
            read(a.path(), f),
            read(b.path(), f),
            "{f} differs between identical runs"
        );
    }
    assert_ne!(
        read(a.path(), "jobs.csv"),
        read(c.path(), "jobs.csv"),
        "the seed must matter"
    );
    // No temporary files are left behind.
    let left: Vec<_> = std::fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn default_scenario_accounts_for_every_job() {
    let d = tempfile::tempdir().unwrap();
    run_default(d.path(), None);
    let summary: serde_json::Value =
        serde_json::from_slice(&read(d.path(), "summary.json")).unwrap();
    let j = &summary["jobs"];
    let n = |k: &str| j[k].as_u64().unwrap();
    assert!(n("submitted") > 5000, "a week of work: {j}");
    assert_eq!(
        n("started") + n("rejected") + n("censored") + n("cancelled"),
        n("submitted")
    );
    let rows = read(d.path(), "jobs.csv")
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u64;
    assert_eq!(rows, n("submitted") + 1, "one row per job plus the header");
    let occ = summary["occupancy"].as_f64().unwrap();
    assert!(occ > 0.3 && occ < 1.0, "occupancy {occ}");
    assert_eq!(summary["fleet"]["gpus"].as_u64(), Some(400));
}

/// FNV-1a 64-bit, for a stable digest of output bytes.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The default scenario's outputs, pinned by digest: an optimisation of the engine, the
/// scheduler or the index must leave every byte as it was (a change of results shows here
/// and must be explained in its commit).
#[test]
fn default_scenario_output_digest_is_pinned() {
    let d = tempfile::tempdir().unwrap();
    run_default(d.path(), None);
    let digests: Vec<String> = ["summary.json", "jobs.csv", "timeseries.csv"]
        .iter()
        .map(|f| format!("{f} {:016x}", fnv1a(&read(d.path(), f))))
        .collect();
    insta::assert_snapshot!("default_scenario_digests", digests.join("\n"));
}
