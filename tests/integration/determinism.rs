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

/// The default scenario's outputs, pinned by digest: an optimisation of the engine, the
/// scheduler or the index must leave every byte as it was (a change of results shows here
/// and must be explained in its commit).
#[test]
fn default_scenario_output_digest_is_pinned() {
    let d = tempfile::tempdir().unwrap();
    run_default(d.path(), None);
    let digests: Vec<String> = ["summary.json", "jobs.csv", "timeseries.csv"]
        .iter()
        .map(|f| format!("{f} {:016x}", fleetsim::study::fnv1a(&read(d.path(), f))))
        .collect();
    insta::assert_snapshot!("default_scenario_digests", digests.join("\n"));
}

/// The committed SLO scenario under 60 s rounds (`scenarios/philly-slo-rounds.toml`, real
/// Philly trace; skipped without it), cut at a horizon 3 compressed days after the trace
/// window opens to keep the debug build quick: two runs write the same bytes, and the SLO
/// outputs are there (the `slo` section, the `slo_<name>_*` columns).
#[test]
fn philly_slo_rounds_is_byte_identical_across_runs() {
    let Some((out, a)) = run_twice_identical("philly-slo-rounds.toml", 3.0 * 86_400.0) else {
        return;
    };
    let slo = out.summary.slo.as_ref().expect("slo section");
    assert_eq!(
        slo.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
        ["all-p95-10min", "batch-1h", "small-vcs-5min"]
    );
    assert!(slo["all-p95-10min"].jobs > 0);
    let series = String::from_utf8(read(a.path(), "timeseries.csv")).unwrap();
    let header = series.lines().next().unwrap();
    for name in ["all-p95-10min", "small-vcs-5min", "batch-1h"] {
        for col in ["met_jobs", "violated_jobs", "attainment"] {
            assert!(header.contains(&format!("slo_{name}_{col}")), "{header}");
        }
    }
    // Per-interval counts add up to the window's (each decided job in one interval).
    let cols: Vec<&str> = header.split(',').collect();
    let ix = cols
        .iter()
        .position(|c| *c == "slo_all-p95-10min_met_jobs")
        .unwrap();
    let met: u64 = series
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(ix).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(met, slo["all-p95-10min"].met_jobs);
}

/// The committed serving scenario (`scenarios/philly-serving.toml`, real Philly trace;
/// skipped without it), cut 12 h after the trace window opens: two runs write the same
/// bytes, replicas preempt training, and the `serving` section is there.
#[test]
fn philly_serving_is_byte_identical_across_runs() {
    let Some((out, _)) = run_twice_identical("philly-serving.toml", 12.0 * 3_600.0) else {
        return;
    };
    let s = out.summary.serving.as_ref().expect("serving section");
    assert_eq!(s.window_s, 12.0 * 3_600.0);
    assert!(s.services[0].replicas_added > 0);
    assert!(s.training_allocated_gpu_s > 0.0);
}

/// Runs the committed Philly scenario `file` (under scenarios/) twice, cut `after_s` seconds
/// after the trace window opens (2,294,959 s) to keep the debug build quick, and asserts that
/// both runs write the same summary.json, jobs.csv and timeseries.csv. Returns the first
/// run's result and output directory; `None` (skipped) without the public traces.
fn run_twice_identical(
    file: &str,
    after_s: f64,
) -> Option<(fleetsim::run::RunOutput, tempfile::TempDir)> {
    let traces = crate::support::public_traces();
    if !traces.join("philly").exists() {
        eprintln!("skipping: no public traces at {}", traces.display());
        return None;
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(file);
    let mut loaded = scenario::load(&path).unwrap();
    loaded.scenario.metrics.horizon_s = Some(2_294_959.0 + after_s);
    let run = |dir: &std::path::Path| {
        let opts = RunOptions {
            seed: None,
            trace_dir: TraceDir(traces.clone()),
            out_dir: Some(dir.to_path_buf()),
            keep_rows: false,
        };
        run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap()
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = run(a.path());
    run(b.path());
    for f in ["summary.json", "jobs.csv", "timeseries.csv"] {
        assert_eq!(read(a.path(), f), read(b.path(), f), "{file}: {f} differs");
    }
    Some((out, a))
}

/// The committed autoscaling scenario (`scenarios/philly-autoscale.toml`, real Philly trace;
/// skipped without it), cut at a horizon of 20 days (the burst group first scales up in
/// the third week) to keep the debug build quick, run by
/// the `fleetsim` binary under 1 and 2 worker threads and two time zones (`TZ=UTC`,
/// `TZ=Asia/Kolkata`): every output file is byte-identical, the burst group scaled up, and
/// the `autoscaling_*` columns are there.
#[test]
fn philly_autoscale_is_byte_identical_across_threads_and_time_zones() {
    let traces = crate::support::public_traces();
    if !traces.join("philly").exists() {
        eprintln!("skipping: no public traces at {}", traces.display());
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("scenarios/philly-autoscale.toml")).unwrap();
    assert!(text.contains("\n[metrics]\n"));
    let text = text.replace("\n[metrics]\n", "\n[metrics]\nhorizon_s = 1728000\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("philly-autoscale-10d.toml");
    std::fs::write(&path, text).unwrap();
    let run = |threads: &str, tz: &str, out: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
            .env("RAYON_NUM_THREADS", threads)
            .env("TZ", tz)
            .args(["run", "--quiet", "--trace-dir"])
            .arg(&traces)
            .arg("--out")
            .arg(dir.path().join(out))
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dir.path().join(out)
    };
    let a = run("1", "UTC", "a");
    let b = run("2", "Asia/Kolkata", "b");
    for f in ["summary.json", "jobs.csv", "timeseries.csv"] {
        assert_eq!(read(&a, f), read(&b, f), "philly-autoscale: {f} differs");
    }
    let summary: serde_json::Value = serde_json::from_slice(&read(&a, "summary.json")).unwrap();
    assert!(summary["autoscaling"]["scale_ups"].as_u64().unwrap() > 0);
    let series = String::from_utf8(read(&a, "timeseries.csv")).unwrap();
    assert!(series.lines().next().unwrap().ends_with(
        "autoscaling_nodes_up,autoscaling_nodes_provisioning,autoscaling_pending_for_capacity_jobs"
    ));
}

/// The committed grow-idle scenario (`scenarios/elastic/grow-idle.toml`): two runs, one
/// thread and two, give byte-identical outputs, and jobs were resized (the sizing policy
/// acted, so the order of its plans is covered).
#[test]
fn grow_idle_is_byte_identical_across_runs_and_threads() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("scenarios/elastic/grow-idle.toml");
    let dir = tempfile::tempdir().unwrap();
    let run = |threads: &str, out: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
            .env("RAYON_NUM_THREADS", threads)
            .args(["run", "--quiet", "--out"])
            .arg(dir.path().join(out))
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dir.path().join(out)
    };
    let a = run("1", "a");
    let b = run("2", "b");
    for f in ["summary.json", "jobs.csv", "timeseries.csv"] {
        assert_eq!(read(&a, f), read(&b, f), "grow-idle: {f} differs");
    }
    let summary: serde_json::Value = serde_json::from_slice(&read(&a, "summary.json")).unwrap();
    assert_eq!(summary["jobs"]["completed"].as_u64(), Some(10));
    assert!(summary["elastic"]["reallocations"].as_u64().unwrap() > 0);
}
