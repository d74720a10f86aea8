//! Hostile inputs and killed processes: output sets are
//! all-or-nothing under SIGKILL, inputs are read with caps, oversized studies are refused
//! with their run count, `--resume` refuses changed inputs, and `compare --resume` keeps
//! complete runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use fleetsim::report::outset::{self, FileDigest};

use crate::support::{fleetsim, output_text as text, repo};

fn ok(c: &mut Command) -> Output {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    o
}

/// sample-small (20 jobs, no public trace) with an absolute trace path, so that it can live
/// in a temporary folder.
fn small_scenario(extra: &str) -> String {
    let text = std::fs::read_to_string(repo().join("scenarios/sample-small.toml")).unwrap();
    let trace = repo().join("traces/sample-small.csv");
    text.replace("../traces/sample-small.csv", trace.to_str().unwrap()) + extra
}

const SWEEP: &str = "\n[sweep]\nseeds = 2\n[[sweep.axes]]\nparam = \"policy.placement\"\nvalues = [\"best-fit\", \"worst-fit\"]\n";

// ---------- time series memory ----------

/// One job submitted at 0 that runs 2,000 s, at 1 ms intervals: its submits span nothing,
/// so `validate` passes, but the run needs 2,000,000 intervals. Snapshots of one cell, one
/// model and one tenant take 512 bytes (`metrics::tests`), so 128 MiB holds 262,144: the
/// run stops there with the cap named, instead of at 4,000,000 intervals (over 10 GB).
#[test]
fn a_run_past_the_time_series_memory_cap_is_refused_naming_the_cap() {
    let toml = "name = \"fine\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\n\
                count = 1\naccelerator = \"H100\"\ngpus = 8\n[workload]\n\
                trace = { format = \"native\", path = \"jobs.csv\" }\n\
                [metrics]\ntimeseries_interval_s = 0.001\n";
    let e = crate::support::refusal(
        toml,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,runtime_s\nj,0,t,1,2000\n",
        )],
    );
    assert!(
        e.contains("time-series intervals of 1 ms (at most 262144 are kept)")
            && e.contains("timeseries_interval_s"),
        "{e}"
    );
}

// ---------- item 8: capped reads ----------

#[test]
fn oversized_scenario_extends_target_and_deep_yaml_are_refused_naming_file_and_cap() {
    let t = Instant::now();
    let o = fleetsim().args(["validate", "/dev/zero"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("/dev/zero: larger than 16777216 bytes, the limit for a scenario file"),
        "{}",
        text(&o)
    );
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(&s, "extends = \"/dev/zero\"\n").unwrap();
    let o = fleetsim().arg("validate").arg(&s).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("`/dev/zero` cannot be read: larger than 16777216 bytes"),
        "{}",
        text(&o)
    );
    // 40,000 nested flow lists (31 s in the YAML parser before): refused on line 3.
    let y = dir.path().join("deep.yaml");
    std::fs::write(
        &y,
        format!(
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nspec: {}{}\n",
            "[".repeat(40_000),
            "]".repeat(40_000)
        ),
    )
    .unwrap();
    let e = fleetsim::scenario::kueue::load(&y).unwrap_err();
    assert_eq!(e.line, 3);
    // Line 3: one indentation level + 40,000 brackets.
    assert!(
        e.message
            .contains("YAML nested 40001 levels deep, over the limit of 64"),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}

// ---------- item 9: study sizes ----------

#[test]
fn oversized_studies_are_refused_with_their_run_count() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(&s, small_scenario("\n[sweep]\nseeds = 1000000000\n")).unwrap();
    let t = Instant::now();
    let o = fleetsim().arg("sweep").arg(&s).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("sweep.seeds = 1000000000 is over the limit of 10000 seeds"),
        "{}",
        text(&o)
    );
    // 8 axes × 10 values = 10^8 runs.
    let mut axes = String::from("\n[sweep]\n");
    for a in 0..8 {
        let values: Vec<String> = (0..10).map(|v| format!("{}", a * 100 + v + 1)).collect();
        // Distinct params (refused later as unknown; the size is refused first).
        axes += &format!(
            "[[sweep.axes]]\nparam = \"metrics.x{a}\"\nvalues = [{}]\n",
            values.join(", ")
        );
    }
    std::fs::write(&s, small_scenario(&axes)).unwrap();
    let o = fleetsim().arg("sweep").arg(&s).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(
            "10 × 10 × 10 × 10 × 10 × 10 × 10 × 10 axis value(s) × 1 seed(s) = 100000000 runs, over the limit of 100000"
        ),
        "{}",
        text(&o)
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    std::fs::write(&s, small_scenario(SWEEP)).unwrap();
    let o = fleetsim()
        .arg("sweep")
        .arg(&s)
        .args(["--seeds", "10001"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("10001 is not in 1..=10000"),
        "{}",
        text(&o)
    );
}

// ---------- item 10: the fingerprint covers every input ----------

#[test]
fn resume_after_editing_an_extends_base_or_the_trace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = d.join("base.toml");
    std::fs::write(&base, small_scenario("")).unwrap();
    let trace = d.join("trace.csv");
    std::fs::copy(repo().join("traces/sample-small.csv"), &trace).unwrap();
    let top = d.join("top.toml");
    std::fs::write(
        &top,
        format!(
            "extends = \"base.toml\"\n[workload]\ntrace = {{ format = \"native\", path = \"trace.csv\" }}\n{SWEEP}"
        ),
    )
    .unwrap();
    let out = d.join("out");
    ok(fleetsim().arg("sweep").arg(&top).arg("--out").arg(&out));
    // Unchanged inputs: resumes.
    let o = ok(fleetsim()
        .arg("sweep")
        .arg(&top)
        .arg("--out")
        .arg(&out)
        .arg("--resume"));
    assert!(
        text(&o).contains("4 of 4 runs (4 already complete)"),
        "{}",
        text(&o)
    );
    // The base changes (a comment is enough: its bytes are the input).
    std::fs::write(&base, small_scenario("\n# edited\n")).unwrap();
    let o = fleetsim()
        .arg("sweep")
        .arg(&top)
        .arg("--out")
        .arg(&out)
        .arg("--resume")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("input files changed since its runs were written (scenario file it extends (base.toml) changed)"),
        "{}",
        text(&o)
    );
    std::fs::write(&base, small_scenario("")).unwrap();
    let mut t = std::fs::read_to_string(&trace).unwrap();
    t.push('\n');
    std::fs::write(&trace, t).unwrap();
    let o = fleetsim()
        .arg("sweep")
        .arg(&top)
        .arg("--out")
        .arg(&out)
        .arg("--resume")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("workload.trace (trace.csv) changed"),
        "{}",
        text(&o)
    );
}

// ---------- item 11: compare --resume ----------

#[test]
fn compare_resume_reruns_only_incomplete_runs_and_matches_a_fresh_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = d.join("s.toml");
    std::fs::write(&s, small_scenario("")).unwrap();
    let cmp = |out: &Path, resume: bool| {
        let mut c = fleetsim();
        c.arg("compare")
            .arg(&s)
            .args(["--policies", "worst-fit,best-fit", "--seeds", "3", "--out"])
            .arg(out);
        if resume {
            c.arg("--resume");
        }
        c.output().unwrap()
    };
    let fresh = d.join("fresh");
    let o = cmp(&fresh, false);
    assert!(o.status.success(), "{}", text(&o));
    let out = d.join("out");
    assert!(cmp(&out, false).status.success());
    // One run's folder loses its summary (a killed rewrite), another its marker.
    std::fs::remove_file(out.join("runs/best-fit/seed-2/summary.json")).unwrap();
    std::fs::remove_file(out.join("runs/worst-fit/seed-1/run.json")).unwrap();
    let o = cmp(&out, true);
    assert!(o.status.success(), "{}", text(&o));
    // 2 policies × 3 seeds = 6 runs, 2 incomplete.
    assert!(
        text(&o).contains("4 of 6 runs already complete"),
        "{}",
        text(&o)
    );
    for f in ["compare.json", "compare.csv", "report.md", "complete.json"] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(fresh.join(f)).unwrap(),
            "{f}"
        );
    }
    // Another comparison in the same folder is refused.
    let o = fleetsim()
        .arg("compare")
        .arg(&s)
        .args([
            "--policies",
            "worst-fit,best-fit",
            "--seeds",
            "2",
            "--resume",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("holds another comparison"),
        "{}",
        text(&o)
    );
}

// ---------- item 7: SIGKILL never leaves a mixed or partial set ----------

/// A deterministic generator of kill moments (64-bit LCG, Knuth's constants).
struct Lcg(u64);
impl Lcg {
    fn next_frac(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Starts `cmd`, kills it (SIGKILL) after `after`, waits for it.
fn kill_after(mut cmd: Command, after: Duration) {
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let _ = child.kill();
    let _ = child.wait();
}

fn timed(mut cmd: Command) -> Duration {
    let t = Instant::now();
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    t.elapsed()
}

/// The `files` of a `run.json`, or `None` when the folder has no marker.
fn run_marker(dir: &Path) -> Option<BTreeMap<String, FileDigest>> {
    let t = std::fs::read_to_string(dir.join("run.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
    Some(serde_json::from_value(v["files"].clone()).unwrap())
}

/// Every marked run folder below `runs` verifies; returns how many were complete.
fn check_run_folders(runs: &Path) -> usize {
    let mut complete = 0;
    let Ok(rd) = std::fs::read_dir(runs) else {
        return 0;
    };
    let mut stack: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).collect();
    while let Some(d) = stack.pop() {
        if !d.is_dir() {
            continue;
        }
        if let Some(files) = run_marker(&d) {
            outset::verify_files(&d, &files).unwrap_or_else(|e| panic!("mixed run folder: {e}"));
            complete += 1;
        } else {
            stack.extend(std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()));
        }
    }
    complete
}

/// 24 trials — 8 runs, 8 sweeps, 8 compares — each killed at a pseudo-random moment
/// (runs: between 0.3 and 1.1 × the uninterrupted time, where the files are written;
/// studies: between 0 and 1.2 ×). After every kill: a folder with a marker
/// verifies (every file the size and digest recorded, and for a run all the files of one
/// seed: the old set or the new, never a mix); `--resume` then completes the study
/// byte-identical to an uninterrupted one.
#[test]
fn sigkill_at_random_moments_never_leaves_a_mixed_or_partial_set() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = d.join("s.toml");
    std::fs::write(&s, small_scenario(SWEEP)).unwrap();
    let mut rng = Lcg(24);
    let started = Instant::now();

    // Runs: the folder holds a complete set of seed 2; seed 1 is written over it. The
    // embedded default scenario (a synthetic week: every file differs between seeds) with
    // a one-minute time series, so that writing `timeseries.csv` after `jobs.csv` is in place
    // takes a good part of the run (3 MB) and kills land between the two.
    let run_scenario = d.join("default-60s.toml");
    let default = std::fs::read_to_string(repo().join("scenarios/default.toml")).unwrap();
    assert!(default.contains("timeseries_interval_s = 3600"));
    std::fs::write(
        &run_scenario,
        default.replace("timeseries_interval_s = 3600", "timeseries_interval_s = 60"),
    )
    .unwrap();
    let run = |out: &Path, seed: &str| {
        let mut c = fleetsim();
        c.arg("run")
            .arg(&run_scenario)
            .args(["--quiet", "--seed", seed, "--out"])
            .arg(out);
        c
    };
    let (ref1, ref2) = (d.join("ref1"), d.join("ref2"));
    let full = timed(run(&ref1, "1"));
    timed(run(&ref2, "2"));
    let m1 = outset::verify(&ref1).unwrap().files;
    let m2 = outset::verify(&ref2).unwrap().files;
    assert_ne!(m1, m2);
    let (mut run_complete, mut run_incomplete) = (0, 0);
    for trial in 0..8 {
        let out = d.join(format!("run-{trial}"));
        ok(&mut run(&out, "2"));
        kill_after(run(&out, "1"), full.mul_f64(0.3 + 0.8 * rng.next_frac()));
        match outset::verify(&out) {
            Ok(m) => {
                assert!(m.files == m1 || m.files == m2, "trial {trial}: a mixed set");
                run_complete += 1;
            }
            Err(e) => {
                assert!(
                    e.contains("not a complete output set"),
                    "trial {trial}: {e}"
                );
                run_incomplete += 1;
            }
        }
    }

    // Sweeps (4 runs) and compares (2 policies × 2 seeds).
    let sweep = |out: &Path, resume: bool| {
        let mut c = fleetsim();
        c.arg("sweep")
            .arg(&s)
            .arg("--out")
            .arg(out)
            .args(["--threads", "1"]);
        if resume {
            c.arg("--resume");
        }
        c
    };
    let compare = |out: &Path, resume: bool| {
        let mut c = fleetsim();
        c.arg("compare")
            .arg(&s)
            .args([
                "--policies",
                "worst-fit,best-fit",
                "--seeds",
                "2",
                "--threads",
                "1",
                "--out",
            ])
            .arg(out);
        if resume {
            c.arg("--resume");
        }
        c
    };
    let sweep_ref = d.join("sweep-ref");
    let sweep_full = timed(sweep(&sweep_ref, false));
    let cmp_ref = d.join("cmp-ref");
    let cmp_full = timed(compare(&cmp_ref, false));
    let mut partial_runs = 0;
    for trial in 0..8 {
        let out = d.join(format!("sweep-{trial}"));
        kill_after(
            sweep(&out, false),
            sweep_full.mul_f64(1.2 * rng.next_frac()),
        );
        if out.join(outset::MARKER).exists() {
            outset::verify(&out).unwrap_or_else(|e| panic!("sweep trial {trial}: {e}"));
        }
        partial_runs += 4 - check_run_folders(&out.join("runs")).min(4);
        ok(&mut sweep(&out, true));
        for f in ["runs.csv", "sweep.json", "report.md", outset::MARKER] {
            assert_eq!(
                std::fs::read(out.join(f)).unwrap(),
                std::fs::read(sweep_ref.join(f)).unwrap(),
                "sweep trial {trial}: {f}"
            );
        }

        let out = d.join(format!("cmp-{trial}"));
        kill_after(
            compare(&out, false),
            cmp_full.mul_f64(1.2 * rng.next_frac()),
        );
        if out.join(outset::MARKER).exists() {
            outset::verify(&out).unwrap_or_else(|e| panic!("compare trial {trial}: {e}"));
        }
        check_run_folders(&out.join("runs"));
        ok(&mut compare(&out, true));
        for f in ["compare.json", "compare.csv", "report.md", outset::MARKER] {
            assert_eq!(
                std::fs::read(out.join(f)).unwrap(),
                std::fs::read(cmp_ref.join(f)).unwrap(),
                "compare trial {trial}: {f}"
            );
        }
    }
    eprintln!(
        "kill test: runs {run_complete} complete / {run_incomplete} incomplete after the kill, {partial_runs} sweep runs cut short, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(started.elapsed() < Duration::from_secs(120));
}

// ---------- merge trusts only complete shards ----------

#[test]
fn merge_refuses_a_shard_without_its_completion_marker() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = d.join("s.toml");
    std::fs::write(&s, small_scenario(SWEEP)).unwrap();
    let (a, b) = (d.join("a"), d.join("b"));
    ok(fleetsim()
        .arg("sweep")
        .arg(&s)
        .arg("--out")
        .arg(&a)
        .args(["--shard", "1/2"]));
    ok(fleetsim()
        .arg("sweep")
        .arg(&s)
        .arg("--out")
        .arg(&b)
        .args(["--shard", "2/2"]));
    std::fs::remove_file(b.join(outset::MARKER)).unwrap();
    let o = fleetsim()
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .arg("--out")
        .arg(d.join("m"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("is not a complete sweep")
            && text(&o).contains("rerun that shard with --resume"),
        "{}",
        text(&o)
    );
}
