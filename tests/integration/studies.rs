//! Studies through the binary: sweeps (sharded, merged, resumed), compare, check, and the
//! exit codes of bad input (2) versus a regression (1).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{fleetsim, output_text as text, repo};

fn run(args: &[&str], extra: &[&Path]) -> Output {
    let mut c = fleetsim();
    c.args(args);
    for p in extra {
        c.arg(p);
    }
    c.output().unwrap()
}

/// 3 placements × 2 arrival rates × 2 seeds = 12 small runs on two cells.
const SWEEP: &str = r#"
name = "small-sweep"
seed = 3

[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 4

[[fleet.cells]]
name = "b"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 2

[workload.synthetic]
jobs = 150
arrival_rate_per_hour = 30.0
tenants = [{ name = "x", weight = 1.0 }, { name = "y", weight = 1.0 }]
sizes = [{ gpus = 1, weight = 0.6 }, { gpus = 4, weight = 0.3 }, { gpus = 16, weight = 0.1 }]
runtime = { dist = "lognormal", median_s = 1800.0, sigma = 1.0, max_s = 36000.0 }

[metrics]
timeseries_interval_s = 3600

[sweep]
seeds = 2
[[sweep.axes]]
param = "policy.placement"
values = ["first-fit", "best-fit", "worst-fit"]
[[sweep.axes]]
param = "transforms.arrival_rate_scale"
values = [1.0, 2.0]
"#;

fn scenario(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("s.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn sharded_sweep_merges_to_the_unsharded_runs_csv_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), SWEEP);
    let full = d.path().join("full");
    let o = run(&["sweep", "-j", "2", "--out"], &[&full, &s]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = String::from_utf8(read(&full.join("runs.csv"))).unwrap();
    assert_eq!(csv.lines().count(), 13, "{csv}");
    assert!(csv.starts_with(
        "run_index,run_id,policy.placement,transforms.arrival_rate_scale,seed,occupancy,"
    ));
    assert!(
        csv.contains("\n0,\"policy.placement=first-fit,transforms.arrival_rate_scale=1,seed=3\",first-fit,1,3,"),
        "{csv}"
    );
    let mut shards = Vec::new();
    let mut rows = 0;
    for i in 1..=3 {
        let dir = d.path().join(format!("shard{i}"));
        let o = run(
            &["sweep", "-j", "1", "--shard", &format!("{i}/3"), "--out"],
            &[&dir, &s],
        );
        assert!(o.status.success(), "{}", text(&o));
        rows += String::from_utf8(read(&dir.join("runs.csv")))
            .unwrap()
            .lines()
            .count()
            - 1;
        shards.push(dir);
    }
    assert_eq!(rows, 12, "every run in exactly one shard");
    let merged = d.path().join("merged");
    let mut args: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();
    args.push(Path::new("--out"));
    args.push(&merged);
    let o = run(&["merge"], &args);
    assert!(o.status.success(), "{}", text(&o));
    for f in ["runs.csv", "sweep.json", "report.html", "report.md"] {
        assert_eq!(read(&full.join(f)), read(&merged.join(f)), "{f} differs");
    }
    assert!(merged.join("runs/00011-policy.placement=worst-fit,transforms.arrival_rate_scale=2,seed=4/summary.json").is_file());
    // A merge that misses a shard is bad input.
    let o = run(
        &["merge", "--out"],
        &[&d.path().join("partial"), &shards[0]],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("missing"), "{}", text(&o));
    // A shard with a run folder that fails its digest check is refused as a killed shard
    // is: nothing is marked complete.
    let run_dir = std::fs::read_dir(shards[1].join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let summary = run_dir.join("summary.json");
    let mut bytes = read(&summary);
    bytes.extend_from_slice(b" ");
    std::fs::write(&summary, bytes).unwrap();
    let torn = d.path().join("torn");
    let mut args: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();
    args.push(Path::new("--out"));
    args.push(&torn);
    let o = run(&["merge"], &args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("fails verification"), "{}", text(&o));
    assert!(!torn.join("complete.json").exists());
    // --resume reruns nothing and writes the same bytes.
    let o = run(&["sweep", "--resume", "--out"], &[&full, &s]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("(12 already complete)"), "{}", text(&o));
    assert_eq!(read(&full.join("runs.csv")), read(&merged.join("runs.csv")));
    // The report marks a best value and inlines the plots of the numeric axis.
    let html = String::from_utf8(read(&full.join("report.html"))).unwrap();
    assert!(
        html.contains("★") && html.contains("<svg"),
        "report without marks or plots"
    );
}

#[test]
fn bad_sweeps_and_shards_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o");
    for (bad, expect) in [
        (
            SWEEP.replace("\"policy.placement\"", "\"policy.placemnt\""),
            "placemnt",
        ),
        (
            SWEEP.replace("values = [1.0, 2.0]", "values = []"),
            "no values",
        ),
        (
            SWEEP.replace(
                "\"transforms.arrival_rate_scale\"",
                "\"transforms.arrival_rate\"",
            ),
            "arrival_rate",
        ),
    ] {
        let s = scenario(d.path(), &bad);
        let o = run(&["sweep", "--out"], &[&out, &s]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(expect), "{}", text(&o));
    }
    let s = scenario(d.path(), SWEEP);
    for shard in ["3/2", "0/4", "1/0", "a/b"] {
        let o = run(&["sweep", "--shard", shard, "--out"], &[&out, &s]);
        assert_eq!(o.status.code(), Some(2), "{shard}: {}", text(&o));
        assert!(text(&o).contains("bad shard"), "{}", text(&o));
    }
    // Outside a Slurm array or an Indexed Job the environment forms say which variable is missing.
    for (shard, var) in [
        ("slurm", "SLURM_ARRAY_TASK_ID"),
        ("k8s/8", "JOB_COMPLETION_INDEX"),
    ] {
        let o = fleetsim()
            .args(["sweep", "--shard", shard, "--out"])
            .arg(&out)
            .arg(&s)
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("JOB_COMPLETION_INDEX")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{shard}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("{var} is not set")),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn check_passes_on_the_committed_baseline_and_fails_when_waits_rise() {
    let baseline = repo().join("reports/default.json");
    let o = run(&["check", "--baseline"], &[&baseline]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("check passed: 28 metrics within tolerance of")
            && text(&o).contains("over 5 paired seeds"),
        "{}",
        text(&o)
    );
    // A policy change that holds later jobs behind a blocked head makes them wait longer.
    let o = run(
        &[
            "check",
            "--set",
            "policy.queueing_strategy=strict-fifo",
            "--baseline",
        ],
        &[&baseline],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let line = out
        .lines()
        .find(|l| l.starts_with("wait_s.mean "))
        .unwrap_or_else(|| panic!("no wait_s.mean line:\n{out}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    let (base, now): (f64, f64) = (cols[1].parse().unwrap(), cols[2].parse().unwrap());
    assert!(
        now > base && line.ends_with("REGRESSION (rose; lower is better)"),
        "{line}"
    );
    assert!(
        out.starts_with("metric") && out.contains("tolerance"),
        "{out}"
    );
}

/// A tracked metric's mean and tolerance in a baseline file, formatted as check prints them.
fn mean_and_tolerance(baseline: &Path, metric: &str) -> (String, String) {
    let b: serde_json::Value = serde_json::from_slice(&read(baseline)).unwrap();
    let m = &b["metrics"][metric];
    (
        format!("{:.6}", m["mean"].as_f64().unwrap()),
        format!("{:.6}", m["tolerance"].as_f64().unwrap()),
    )
}

/// The CI gate on the committed baseline (5 paired seeds, tolerances from their spread):
/// shortest-job-first (on exact run times) passes; worst-fit placement fails, naming the
/// metric, the baseline and current means and the tolerance.
#[test]
fn check_gate_passes_sjf_and_fails_worst_fit() {
    let baseline = repo().join("reports/default.json");
    let o = run(
        &[
            "check",
            "--set",
            "policy.queue_order=sjf",
            "--set",
            "policy.runtime_estimate=oracle",
            "--baseline",
        ],
        &[&baseline],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("check passed"), "{}", text(&o));
    let o = run(
        &["check", "--set", "policy.placement=worst-fit", "--baseline"],
        &[&baseline],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let (mean, tol) = mean_and_tolerance(&baseline, "fragmentation.mean_pct_of_capacity");
    let named = format!(
        "fragmentation.mean_pct_of_capacity REGRESSION (rose; lower is better) (baseline {mean}, now "
    );
    assert!(
        err.contains(&named) && err.contains(&format!("tolerance ±{tol})")),
        "{err}"
    );
    assert!(err.contains("metrics regressed against"), "{err}");
}

/// An improvement beyond the tolerance passes and says to rewrite the baseline: a baseline
/// taken with worst-fit placement, checked with the scenario's best-fit.
#[test]
fn check_passes_an_improvement_and_says_update() {
    let d = tempfile::tempdir().unwrap();
    let wf = d.path().join("worst-fit.json");
    let o = run(
        &[
            "check",
            "--update",
            "--seeds",
            "5",
            "--set",
            "policy.placement=worst-fit",
            "--baseline",
        ],
        &[&wf],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("seeds 42..=46, tolerances from the seeds' spread"),
        "{}",
        text(&o)
    );
    let o = run(&["check", "--baseline"], &[&wf]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        out.lines()
            .any(|l| l.starts_with("fragmentation.mean_pct_of_capacity ")
                && l.ends_with("better (fell; lower is better)")),
        "{out}"
    );
    assert!(
        out.contains("check passed: no metric regressed against")
            && out.contains("improved beyond their tolerance (")
            && out.contains("rewrite the baseline with --update to keep the gain"),
        "{out}"
    );
}

#[test]
fn check_rejects_foreign_or_incomplete_baselines_with_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), SWEEP);
    let baseline = repo().join("reports/default.json");
    let o = run(&["check", "--baseline"], &[&baseline, &s]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("scenario `default`"), "{}", text(&o));
    // Missing metric.
    let mut b: serde_json::Value = serde_json::from_slice(&read(&baseline)).unwrap();
    b["metrics"].as_object_mut().unwrap().remove("occupancy");
    let p = d.path().join("b.json");
    std::fs::write(&p, serde_json::to_string(&b).unwrap()).unwrap();
    let o = run(&["check", "--baseline"], &[&p]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no metric `occupancy`"), "{}", text(&o));
    // A malformed field: the error names the file and the field.
    let mut b: serde_json::Value = serde_json::from_slice(&read(&baseline)).unwrap();
    b["metrics"]["occupancy"]["tolerance"] = "wide".into();
    std::fs::write(&p, serde_json::to_string(&b).unwrap()).unwrap();
    let o = run(&["check", "--baseline"], &[&p]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let want = format!(
        "{}: field `metrics.occupancy.tolerance`: invalid type",
        p.display()
    );
    assert!(text(&o).contains(&want), "{}", text(&o));
    // A single-seed baseline of an older fleetsim is refused with the command that rewrites it.
    let old = r#"{"scenario": "default", "seed": 42, "fleetsim_version": "0.1.0",
        "policy": {}, "metrics": {"occupancy": 0.5665609184936786}}"#;
    std::fs::write(&p, old).unwrap();
    let o = run(&["check", "--baseline"], &[&p]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("{}: a single-seed baseline", p.display()))
            && text(&o).contains(&format!(
                "rewrite it with `fleetsim check SCENARIO --baseline {} --update`",
                p.display()
            )),
        "{}",
        text(&o)
    );
    // Missing file.
    let o = run(&["check", "--baseline"], &[&d.path().join("none.json")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // --seed and --seeds only choose the seeds of a new baseline.
    let o = run(&["check", "--seeds", "3", "--baseline"], &[&baseline]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // --update writes one that then passes, with a declared tolerance floor.
    let tol = format!(
        "{SWEEP}\n[check]\nmetrics = [\"occupancy\", \"wait_s.p99\"]\ntolerance.occupancy = {{ abs = 0.5 }}\n"
    );
    let s = scenario(d.path(), &tol);
    let nb = d.path().join("new/small.json");
    let o = run(
        &["check", "--update", "--seeds", "3", "--baseline"],
        &[&nb, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    let b: serde_json::Value = serde_json::from_slice(&read(&nb)).unwrap();
    assert_eq!(b["seeds"], serde_json::json!([3, 4, 5]));
    assert_eq!(b["metrics"]["occupancy"]["tolerance"], 0.5);
    let o = run(&["check", "--baseline"], &[&nb, &s]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("over 3 paired seeds"), "{}", text(&o));
    // An unknown metric is bad input, refused when the scenario is read (before any run),
    // naming the field and listing the known names.
    let odd = scenario(
        d.path(),
        &format!("{SWEEP}\n[check]\nmetrics = [\"wait_s.p95x\"]\n"),
    );
    let o = run(&["check", "--update", "--baseline"], &[&nb, &odd]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("`check.metrics[0]`: unknown metric `wait_s.p95x`")
            && text(&o).contains("known metrics: occupancy, allocated_occupancy,"),
        "{}",
        text(&o)
    );
}

#[test]
fn compare_writes_paired_statistics_and_a_report_with_plots() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), SWEEP);
    let out = d.path().join("cmp");
    let o = run(
        &[
            "compare",
            "--policies",
            "best-fit,worst-fit,placement=first-fit",
            "--seeds",
            "3",
            "--out",
        ],
        &[&out, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    let c: serde_json::Value = serde_json::from_slice(&read(&out.join("compare.json"))).unwrap();
    assert_eq!(c["seeds"], serde_json::json!([3, 4, 5]));
    assert_eq!(c["baseline"], "best-fit");
    let base = &c["policies"][0]["metrics"]["wait_s.mean"]["values"];
    let other = &c["policies"][1]["metrics"]["wait_s.mean"];
    // The difference is paired: the mean of per-seed differences.
    let diffs: Vec<f64> = (0..3)
        .map(|i| other["values"][i].as_f64().unwrap() - base[i].as_f64().unwrap())
        .collect();
    let mean = diffs.iter().sum::<f64>() / 3.0;
    let d = &other["diff"];
    assert!(
        (d["mean_diff"].as_f64().unwrap() - mean).abs() < 1e-9,
        "{d}"
    );
    assert_eq!(d["n"], 3);
    let (lo, hi) = (
        d["ci_low"].as_f64().unwrap(),
        d["ci_high"].as_f64().unwrap(),
    );
    assert!(lo <= mean && mean <= hi, "{d}");
    assert!(c["policies"][0]["metrics"]["occupancy"]["diff"].is_null());
    let html = String::from_utf8(read(&out.join("report.html"))).unwrap();
    assert!(html.matches("<svg").count() >= 8, "plots inlined");
    for needle in [
        "★",
        "95 % confidence interval",
        "CDF of wait",
        "Pending jobs by reason",
        "equal share",
        "Fragmentation over time",
        "[[fleet.cells]]",
    ] {
        assert!(html.contains(needle), "report lacks `{needle}`");
    }
    assert!(out.join("plots/fragmentation.svg").is_file());
    assert!(c["policies"][0]["metrics"]["fragmentation.mean_pct_of_capacity"]["mean"].is_number());
    assert!(
        !html.contains("http://") || html.contains("http://www.w3.org/2000/svg"),
        "no external resource"
    );
    assert!(out.join("report.md").is_file() && out.join("plots/cdf-jct.svg").is_file());
    assert!(out.join("runs/worst-fit/seed-4/summary.json").is_file());
    // An ambiguous policy name is bad input.
    let o = run(
        &["compare", "--policies", "first-fit,best-fit", "--out"],
        &[&out, &s],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn png_plots_when_a_font_is_installed() {
    let font = std::env::var_os("FLEETSIM_FONT")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            fleetsim::report::plots::FONT_PATHS
                .iter()
                .map(PathBuf::from),
        )
        .any(|p| p.is_file());
    if !font {
        eprintln!("skipping: no TrueType font (apt-get install fonts-dejavu-core)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), SWEEP);
    let out = d.path().join("cmp");
    let o = run(
        &[
            "compare",
            "--png",
            "--policies",
            "best-fit,worst-fit",
            "--seeds",
            "1",
            "--out",
        ],
        &[&out, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    let png = read(&out.join("plots/cdf-wait.png"));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn compaction_finds_a_smaller_fleet_that_meets_the_goal() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), SWEEP);
    let out = d.path().join("c");
    let o = run(
        &[
            "compact",
            "--goal",
            "censored_pct<=0",
            "--goal",
            "wait_s.p90<=3600",
            "--goal",
            "jobs.rejected<=0",
            "--seeds",
            "2",
            "--lo",
            "0.2",
            "--hi",
            "2",
            "--tolerance",
            "0.1",
            "--out",
        ],
        &[&out, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    let c: serde_json::Value = serde_json::from_slice(&read(&out.join("compaction.json"))).unwrap();
    let p90 = c["scale_p90"].as_f64().expect("met");
    assert!(p90 > 0.2 && p90 <= 2.0, "{c}");
    for seed in c["seeds"].as_array().unwrap() {
        // The last probe at the answer met the goal; a probe below the answer did not.
        let scale = seed["scale"].as_f64().unwrap();
        for p in seed["probes"].as_array().unwrap() {
            let ps = p["scale"].as_f64().unwrap();
            if ps >= scale {
                assert_eq!(p["met"], true, "{seed}");
            }
        }
    }
    let o = run(&["compact", "--goal", "occupancy=1", "--out"], &[&out, &s]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // Goals no fleet in [lo, hi] meets: the table and compaction.json are written, and the
    // exit code says the answer is not there (1, not 0).
    let o = run(
        &[
            "compact",
            "--goal",
            "wait_s.p99<=-1",
            "--seeds",
            "1",
            "--lo",
            "0.5",
            "--hi",
            "1",
            "--tolerance",
            "0.25",
            "--out",
        ],
        &[&out, &s],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("the goals are not met even at --hi 1 (fleet_scale) for seed(s)"),
        "{}",
        text(&o)
    );
    assert!(out.join("compaction.json").is_file());
}

#[test]
fn compare_draws_quota_entitlements_when_the_scenario_has_quotas() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cmp");
    let s = repo().join("scenarios/kueue-cohorts.toml");
    let o = run(
        &[
            "compare",
            "--policies",
            "admission_order=drf,admission_order=queue-order",
            "--seeds",
            "2",
            "--out",
        ],
        &[&out, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    let runs = out.join("runs/admission_order=drf/seed-42/summary.json");
    let summary: serde_json::Value = serde_json::from_slice(&read(&runs)).unwrap();
    assert_eq!(summary["fairness"]["entitlement_basis"], "nominal_quota");
    let svg = String::from_utf8(read(
        &out.join("plots/tenant-share-admission_order=drf.svg"),
    ))
    .unwrap();
    // research-a's nominal quota is 40 H100 + 16 GB200 of the 200 GPUs all queues hold.
    assert!(
        svg.contains("research-a entitlement"),
        "no entitlement line"
    );
    assert!(
        !svg.contains("equal share"),
        "quota scenario drew the equal share"
    );
    assert_eq!(
        summary["tenants"]["research-a"]["entitlement"].as_f64(),
        Some(56.0 / 200.0)
    );
}

/// With `[flexibility]` (or `[failures]`, …) every run's summary has a `reliability`
/// section, and `fleetsim compare` reports its goodput metrics after the standard ones; a
/// scenario without it gets none of them.
#[test]
fn compare_reports_goodput_metrics_when_the_runs_have_them() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), &format!("{SWEEP}\n[flexibility]\n"));
    let out = d.path().join("cmp");
    let o = run(
        &[
            "compare",
            "--policies",
            "flexibility.spatial=false,flexibility.spatial=true",
            "--seeds",
            "2",
            "--out",
        ],
        &[&out, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    let c: serde_json::Value = serde_json::from_slice(&read(&out.join("compare.json"))).unwrap();
    let m = &c["policies"][0]["metrics"];
    assert!(
        m["reliability.goodput"]["mean"].as_f64().unwrap() > 0.9,
        "{m}"
    );
    assert_eq!(
        m["reliability.cross_cell_dispatches"]["values"],
        serde_json::json!([0.0, 0.0]),
        "home cell only: no cross-cell dispatch"
    );
    let plain = d.path().join("plain");
    let s = scenario(d.path(), SWEEP);
    let o = run(
        &[
            "compare",
            "--policies",
            "best-fit,worst-fit",
            "--seeds",
            "1",
            "--out",
        ],
        &[&plain, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    let c: serde_json::Value = serde_json::from_slice(&read(&plain.join("compare.json"))).unwrap();
    assert!(c["policies"][0]["metrics"]
        .get("reliability.goodput")
        .is_none());
}

/// Kubernetes' expansion of `$(NAME)` in a container's `args` (only names defined in `env`;
/// `$$` is a literal `$`), as the kubelet does it.
fn k8s_expand(arg: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("$$") {
            out.push('$');
            rest = t;
        } else if let Some((name, t)) = tail
            .strip_prefix("$(")
            .and_then(|t| t.split_once(')'))
            .filter(|(n, _)| env.iter().any(|(k, _)| k == n))
        {
            out.push_str(&env.iter().find(|(k, _)| k == name).unwrap().1);
            rest = t;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The container of a committed Job manifest: its `args` (Kubernetes runs them through the
/// image's ENTRYPOINT when there is no `command`), its `env` and its mount paths.
struct JobContainer {
    completions: Option<u64>,
    args: Vec<String>,
    env: Vec<(String, Option<String>)>,
    mounts: Vec<String>,
}

fn job_container(path: &Path) -> JobContainer {
    let y: serde_json::Value =
        serde_saphyr::from_str(&String::from_utf8(read(path)).unwrap()).unwrap();
    let spec = &y["spec"];
    let c = &spec["template"]["spec"]["containers"][0];
    assert!(
        c.get("command").is_none(),
        "{}: a `command` would bypass the image's ENTRYPOINT (and a shell is not there)",
        path.display()
    );
    let strs = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|s| s.iter().map(|a| a.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let env = c["env"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|e| {
                    let name = e["name"].as_str().unwrap().to_string();
                    let value = e.get("value").map(|v| v.as_str().unwrap().to_string());
                    if value.is_none() {
                        assert_eq!(
                            e["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
                            Some(
                                "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                            ),
                            "{name}"
                        );
                    }
                    (name, value)
                })
                .collect()
        })
        .unwrap_or_default();
    JobContainer {
        completions: spec["completions"].as_u64(),
        args: strs(&c["args"]),
        env,
        mounts: c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["mountPath"].as_str().unwrap().to_string())
            .collect(),
    }
}

/// Issue #20: the committed Indexed Job, run as Kubernetes would run it but locally: the
/// Containerfile's ENTRYPOINT (the binary, no shell) with the Job's args, once per
/// JOB_COMPLETION_INDEX 0…completions−1, each mount path mapped to a local directory; then the
/// merge Job's args. The merged runs.csv and report equal the serial sweep's byte for byte.
/// The 12-run test sweep stands in for /scenarios/sweep-example.toml (36 week-long runs are too
/// slow for a debug build); round-robin on 8 shards gives 12 = 8 + 4: shards 1–4 two runs,
/// 5–8 one.
#[test]
fn kubernetes_indexed_job_manifest_runs_every_index_and_merges_to_the_serial_sweep() {
    let cf = String::from_utf8(read(&repo().join("docs/cluster/Containerfile"))).unwrap();
    let last_from = cf.lines().rev().find(|l| l.starts_with("FROM ")).unwrap();
    assert!(last_from.contains("distroless"), "{last_from}");
    let entry: Vec<String> = serde_json::from_str(
        cf.lines()
            .find_map(|l| l.strip_prefix("ENTRYPOINT "))
            .expect("an ENTRYPOINT"),
    )
    .expect("ENTRYPOINT in exec (JSON) form: no shell");
    assert_eq!(entry, ["/usr/local/bin/fleetsim"]);

    let d = tempfile::tempdir().unwrap();
    let local = |p: &str, mounts: &[String]| -> String {
        for m in mounts {
            if let Some(rest) = p.strip_prefix(m.as_str()) {
                return format!("{}{rest}", d.path().join(&m[1..]).display());
            }
        }
        p.to_string()
    };
    let job = job_container(&repo().join("docs/cluster/sweep-indexed-job.yaml"));
    let n = job.completions.expect("completions");
    assert!(
        job.args.iter().any(|a| a == &format!("k8s/{n}")),
        "{:?}",
        job.args
    );
    let scen_dir = d.path().join("scenarios");
    std::fs::create_dir_all(&scen_dir).unwrap();
    std::fs::write(scen_dir.join("sweep-example.toml"), SWEEP).unwrap();
    std::fs::create_dir_all(d.path().join("results")).unwrap();
    let mut sizes = Vec::new();
    for k in 0..n {
        let env: Vec<(String, String)> = job
            .env
            .iter()
            .map(|(name, v)| {
                let v = v.clone().unwrap_or_else(|| k.to_string());
                (name.clone(), local(&v, &job.mounts))
            })
            .collect();
        let mut c = Command::new(env!("CARGO_BIN_EXE_fleetsim"));
        for a in &job.args {
            c.arg(local(&k8s_expand(a, &env), &job.mounts));
        }
        let o = c.envs(env.iter().cloned()).output().unwrap();
        assert!(o.status.success(), "index {k}: {}", text(&o));
        let csv = d.path().join(format!("results/sweep-shard-{k}/runs.csv"));
        sizes.push(String::from_utf8(read(&csv)).unwrap().lines().count() - 1);
    }
    assert_eq!(sizes, [2, 2, 2, 2, 1, 1, 1, 1]);
    let merge = job_container(&repo().join("docs/cluster/sweep-merge-job.yaml"));
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(merge.args.iter().map(|a| local(a, &merge.mounts)))
        .output()
        .unwrap();
    assert!(o.status.success(), "merge: {}", text(&o));
    let serial = d.path().join("serial");
    let o = run(
        &["sweep", "--out"],
        &[&serial, &scen_dir.join("sweep-example.toml")],
    );
    assert!(o.status.success(), "{}", text(&o));
    for f in ["runs.csv", "report.html"] {
        assert_eq!(
            read(&serial.join(f)),
            read(&d.path().join("results/sweep").join(f)),
            "{f} differs"
        );
    }
}

/// Issue #23 defect 1: a study owns its output folder. A second `compare` into the same
/// folder with other variants leaves none of the first's runs or plots; a folder holding
/// files no compare wrote is refused with exit 2 unless `--force`, which keeps those files.
#[test]
fn a_reused_study_folder_holds_only_the_last_study() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), SWEEP);
    let out = d.path().join("cmp");
    let cmp = |policies: &str, extra: &[&str]| {
        let mut args = vec!["compare", "--policies", policies, "--seeds", "1"];
        args.extend_from_slice(extra);
        args.push("--out");
        run(&args, &[&out, &s])
    };
    let o = cmp("best-fit,worst-fit", &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(out.join("runs/worst-fit/seed-3/summary.json").is_file());
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("compare.csv") && err.contains("plots/") && err.contains("runs/ ("),
        "{err}"
    );
    let o = cmp("best-fit,first=placement=first-fit", &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!out.join("runs/worst-fit").exists(), "stale variant left");
    assert!(out.join("runs/first/seed-3/summary.json").is_file());
    let m: serde_json::Value =
        serde_json::from_slice(&read(&out.join("fleetsim-output.json"))).unwrap();
    assert_eq!(m["kind"], "compare");
    assert_eq!(m["complete"], true);
    let files: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        files.contains(&"runs/first/seed-3/summary.json"),
        "{files:?}"
    );
    assert!(files.iter().all(|f| !f.contains("worst-fit")), "{files:?}");
    let html = String::from_utf8(read(&out.join("report.html"))).unwrap();
    assert!(
        html.contains("`first` = policy.placement=first-fit"),
        "labelled variant"
    );
    assert!(
        !html.contains("`worst-fit` ="),
        "report names a stale variant"
    );

    // A folder with someone else's file: refused, then forced.
    let other = d.path().join("mine");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let o = run(
        &[
            "compare",
            "--policies",
            "best-fit,worst-fit",
            "--seeds",
            "1",
            "--out",
        ],
        &[&other, &s],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--force"), "{}", text(&o));
    assert!(!other.join("compare.json").exists());
    let o = run(
        &[
            "compare",
            "--policies",
            "best-fit,worst-fit",
            "--seeds",
            "1",
            "--force",
            "--out",
        ],
        &[&other, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(other.join("notes.txt")).unwrap(),
        "mine"
    );
    // A sweep into the compare's folder is refused too.
    let o = run(&["sweep", "--out"], &[&out, &s]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("`fleetsim compare`"), "{}", text(&o));
}

/// Issue #23 defect 2: a what-if variant that adds a cell gets that cell's occupancy plot,
/// and a table shows every cell and model of any variant, with "–" where a variant has none.
#[test]
fn compare_shows_cells_only_some_variants_have() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), SWEEP);
    let out = d.path().join("cmp");
    let o = run(
        &[
            "compare",
            "--seeds",
            "1",
            "--policies",
            "base=best-fit,more=transforms.add_nodes=[{ cell = \"rubin\", nodes = [{ preset = \"hgx-b200\", count = 2 }] }]",
            "--out",
        ],
        &[&out, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        out.join("plots/occupancy-rubin.svg").is_file(),
        "no plot of the added cell"
    );
    assert!(out.join("plots/occupancy-a.svg").is_file());
    let md = String::from_utf8(read(&out.join("report.md"))).unwrap();
    let row = |name: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no `{name}` row:\n{md}"))
            .to_string()
    };
    assert!(
        md.contains("## Occupancy per cell and accelerator model"),
        "{md}"
    );
    // `base` has no rubin cell and no B200s: "–"; `more` has a number; each cell and model
    // has a useful and an allocated row.
    assert!(md.contains("| cell rubin, allocated |"), "{md}");
    let rubin: Vec<String> = row("cell rubin, useful")
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    assert_eq!(rubin[2], "–", "{rubin:?}");
    assert!(rubin[3].parse::<f64>().is_ok(), "{rubin:?}");
    let b200: Vec<String> = row("model B200, useful")
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    assert_eq!(b200[2], "–", "{b200:?}");
    let a: Vec<String> = row("cell a, allocated")
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    assert!(
        a[2].parse::<f64>().is_ok() && a[3].parse::<f64>().is_ok(),
        "{a:?}"
    );
}

/// A study prints the warnings its runs printed once each, saying in how many runs: here
/// the `more` variant adds four GB200 trays without CPU while every task asks for CPU, so
/// its runs (1 of 2) warn that the 16 GPUs can never host any job. compare.json keeps it.
#[test]
fn compare_prints_each_run_warning_once() {
    let d = tempfile::tempdir().unwrap();
    let s = scenario(d.path(), SWEEP);
    let out = d.path().join("cmp");
    let o = run(
        &[
            "compare",
            "--seeds",
            "1",
            "--set",
            "workload.synthetic.cpu_milli_per_gpu=1000",
            "--policies",
            "base=best-fit,more=transforms.add_nodes=[{ cell = \"t\", nodes = [{ accelerator = \"GB200\", gpus = 4, count = 4 }] }]",
            "--out",
        ],
        &[&out, &s],
    );
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let want = "warning: cell `t`, nodes (GB200 × 4, 0 cores, 0 GiB per node: 4 nodes, 16 GPUs) can never host any job of the workload";
    assert_eq!(err.matches(want).count(), 1, "{err}");
    assert!(err.contains("(in 1 of 2 runs)"), "{err}");
    let c: serde_json::Value = serde_json::from_slice(&read(&out.join("compare.json"))).unwrap();
    assert_eq!(c["warnings"].as_array().unwrap().len(), 1, "{c}");
}
