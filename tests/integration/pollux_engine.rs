//! Round-allocated (elastic) jobs in the engine (`[elastic]`, `src/engine/elastic.rs`): the
//! engine against the artifact replay of `pollux_models.rs` on the same jobs, the refusals
//! of the scenario loader, and the load-1.0 sweep (`scenarios/pollux/load-1.0.toml`) against
//! the Pollux OSDI '21 artifact's published results.

use std::collections::BTreeMap;
use std::path::Path;

use fleetsim::metrics::jobs::FinalState;

use crate::pollux_models::{mean, models, reference, replay, workload, Policy, APPS};
use crate::support::{fleetsim, job, load_error, public_traces, refusal, run};

const FLEET: &str = r#"
[[fleet.cells]]
name = "pollux"
[[fleet.cells.nodes]]
accelerator = "P40"
gpus = 4
cpu_milli = 64000
mem_mib = 262144
count = 16
"#;

fn scenario(allocator: &str, trace: &str) -> String {
    format!(
        r#"name = "pollux-engine"
{FLEET}
[workload]
trace = {{ format = "pollux", {trace} }}

[elastic]
allocator = "{allocator}"
models = {{ public_path = "pollux-models" }}
"#
    )
}

/// The first `n` jobs of workload 1 (the file's header and rows).
fn first_jobs(n: usize) -> String {
    let text =
        std::fs::read_to_string(public_traces().join("pollux-workloads/load-1.0/workload-1.csv"))
            .unwrap();
    text.lines().take(n + 1).collect::<Vec<_>>().join("\n") + "\n"
}

/// The engine's JCT of every job (seconds, by name) equals the artifact replay's on the same
/// jobs (both drive the policy crate's `TrainingJob`; the engine rounds completions to the
/// millisecond), with every-instant audits of the bindings on the fleet's nodes.
fn engine_matches_replay(policy: Policy, allocator: &str, n: usize) {
    let csv = first_jobs(n);
    let out = run(
        &scenario(allocator, r#"path = "w.csv""#),
        &[("w.csv", csv.as_str())],
    );
    let rows = out.jobs.as_ref().unwrap();
    assert_eq!(rows.len(), n);
    assert!(rows.iter().all(|r| r.state == FinalState::Completed));
    let ours: BTreeMap<&str, f64> = rows
        .iter()
        .map(|r| {
            let jct = r.finish.unwrap().0 - r.submit.0;
            (r.name.as_str(), jct as f64 / 1000.0)
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.csv");
    std::fs::write(&p, &csv).unwrap();
    let jobs = workload(&p);
    let theirs = replay(&models(&public_traces()), &jobs, policy);
    for (j, t) in jobs.iter().zip(&theirs) {
        let o = ours[j.name.as_str()];
        assert!(
            (o - t).abs() <= 0.001,
            "{}: engine {o} s, replay {t} s",
            j.name
        );
    }
    let e = out.summary.elastic.as_ref().expect("the elastic section");
    assert_eq!(
        (e.allocator.as_str(), e.jobs, e.completed),
        (allocator, n as u64, n as u64)
    );
    assert!(e.rounds > 0 && e.reallocations >= n as u64);
    // Every job held GPUs of the fleet: occupancy saw them.
    assert!(out.result.occupancy.allocated_cell.iter().sum::<u128>() > 0);
}

#[test]
fn tiresias_in_the_engine_matches_the_replay() {
    engine_matches_replay(Policy::Tiresias, "tiresias", 40);
}

#[test]
fn pollux_in_the_engine_matches_the_replay() {
    engine_matches_replay(Policy::Pollux, "pollux", 12);
}

/// The same scenario gives the same rows and summary run after run (Pollux's allocator
/// searches; the jobs' fitted models are refit from the same observations in the same order).
#[test]
fn round_allocated_runs_repeat_exactly() {
    let csv = first_jobs(10);
    let files = [("w.csv", csv.as_str())];
    let text = scenario("pollux", r#"path = "w.csv""#);
    let (a, b) = (run(&text, &files), run(&text, &files));
    assert_eq!(a.jobs, b.jobs);
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
}

/// Rigid and round-allocated jobs do not share a run: the loader refuses either without the
/// other, the tables that do not compose with `[elastic]`, and a fleet of several cells or
/// accelerator models, naming the field.
#[test]
fn mixes_are_refused_naming_the_field() {
    let csv = first_jobs(2);
    let files = [("w.csv", csv.as_str())];
    let no_table = format!(
        "name = \"x\"\n{FLEET}\n[workload]\ntrace = {{ format = \"pollux\", path = \"w.csv\" }}\n"
    );
    let e = load_error(&no_table, &files);
    assert!(
        e.contains("workload.trace.format") && e.contains("[elastic]"),
        "{e}"
    );
    let rigid = scenario("pollux", r#"path = "w.csv""#).replace(
        r#"format = "pollux", path = "w.csv""#,
        r#"format = "tiresias", path = "w.csv""#,
    );
    let e = load_error(&rigid, &files);
    assert!(
        e.contains("`elastic.allocator`") && e.contains("come from a `pollux` workload"),
        "{e}"
    );
    let replay_mode = scenario("pollux", r#"path = "w.csv""#).replacen(
        "name = \"pollux-engine\"",
        "name = \"pollux-engine\"\nmode = \"replay\"",
        1,
    );
    let e = load_error(&replay_mode, &files);
    assert!(
        e.contains("`mode`") && e.contains("does not compose"),
        "{e}"
    );
    let quota = format!(
        "{}\n[[queues]]\nname = \"pollux\"\nflavors = [{{ name = \"P40\", gpus = {{ nominal = 8 }} }}]\n",
        scenario("pollux", r#"path = "w.csv""#)
    );
    let e = load_error(&quota, &files);
    assert!(
        e.contains("`queues`") && e.contains("does not compose"),
        "{e}"
    );
    // One cell of one accelerator model: a job would span cells, and the application
    // models are step times of one GPU type.
    let two_cells = format!(
        "{}\n[[fleet.cells]]\nname = \"second\"\n[[fleet.cells.nodes]]\naccelerator = \"P40\"\ngpus = 4\ncount = 2\n",
        scenario("pollux", r#"path = "w.csv""#)
    );
    let e = load_error(&two_cells, &files);
    assert!(e.contains("fleet.cells") && e.contains("2 cells"), "{e}");
    let two_models = scenario("pollux", r#"path = "w.csv""#).replace(
        "count = 16\n",
        "count = 8\n[[fleet.cells.nodes]]\naccelerator = \"V100\"\ngpus = 4\ncount = 8\n",
    );
    let e = refusal(&two_models, &files);
    assert!(
        e.contains("fleet.cells") && e.contains("P40") && e.contains("V100"),
        "{e}"
    );
    let unknown = "name,time,application,num_replicas,batch_size\nx-0,5,resnet,1,32\n";
    let e = refusal(
        &scenario("tiresias", r#"path = "w.csv""#),
        &[("w.csv", unknown)],
    );
    assert!(e.contains("resnet") && e.contains("elastic.models"), "{e}");
}

/// A job no round could ever give GPUs is rejected at submit, naming the reason, and the
/// run ends: under Tiresias one with more replicas than the fleet has GPUs, under either
/// allocator every job on a fleet without GPUs. Pollux runs the larger job on fewer GPUs.
#[test]
fn jobs_no_round_can_place_are_rejected_at_submit() {
    let csv = "name,time,application,num_replicas,batch_size\nbig-0,10,cifar10,6,2048\nsmall-1,20,ncf,1,32768\n";
    let files = [("w.csv", csv)];
    let one_node = |allocator: &str, node: &str| {
        scenario(allocator, r#"path = "w.csv""#).replace(
            "accelerator = \"P40\"\ngpus = 4\ncpu_milli = 64000\nmem_mib = 262144\ncount = 16",
            node,
        )
    };
    let four = "accelerator = \"P40\"\ngpus = 4\ncpu_milli = 64000\nmem_mib = 262144\ncount = 1";
    let out = run(&one_node("tiresias", four), &files);
    let big = job(&out, "big-0");
    assert_eq!(big.state, FinalState::Rejected);
    assert_eq!(big.reason.as_deref(), Some("gang_larger_than_cell"));
    assert_eq!(job(&out, "small-1").state, FinalState::Completed);
    assert_eq!(out.summary.elastic.as_ref().unwrap().jobs, 1);
    let out = run(&one_node("pollux", four), &files);
    assert!(out
        .jobs
        .as_ref()
        .unwrap()
        .iter()
        .all(|r| r.state == FinalState::Completed));
    let cpu = "cpu_milli = 64000\nmem_mib = 262144\ncount = 2";
    for allocator in ["tiresias", "pollux"] {
        let out = run(&one_node(allocator, cpu), &files);
        for r in out.jobs.as_ref().unwrap() {
            assert_eq!(r.state, FinalState::Rejected, "{allocator}: {r:?}");
            assert_eq!(r.reason.as_deref(), Some("task_larger_than_any_node"));
        }
        assert_eq!(out.summary.elastic.as_ref().unwrap().rounds, 0);
    }
}

/// `fleetsim validate` reads the application models as a run does: a job naming an
/// application with no model is refused naming it, and its submit-time rejections are the
/// engine's (Pollux runs a job larger than the fleet on fewer GPUs; Tiresias rejects it).
#[test]
fn validate_reads_the_models_and_predicts_the_rejections() {
    let dir = tempfile::tempdir().unwrap();
    let validate = |allocator: &str, csv: &str| {
        std::fs::write(dir.path().join("w.csv"), csv).unwrap();
        let text = scenario(allocator, r#"path = "w.csv""#).replace("count = 16", "count = 1");
        let p = dir.path().join("s.toml");
        std::fs::write(&p, text).unwrap();
        let o = fleetsim()
            .arg("validate")
            .arg(&p)
            .arg("--trace-dir")
            .arg(public_traces())
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let head = "name,time,application,num_replicas,batch_size\n";
    let (ok, _, err) = validate("pollux", &format!("{head}x-0,5,resnet,1,32\n"));
    assert!(
        !ok && err.contains("x-0") && err.contains("`resnet`") && err.contains("elastic.models"),
        "{err}"
    );
    let big = format!("{head}big-0,10,cifar10,6,2048\n");
    let (ok, out, err) = validate("pollux", &big);
    assert!(ok && !out.contains("never fit"), "{out}{err}");
    let (ok, out, err) = validate("tiresias", &big);
    assert!(ok && out.contains("1 gang_larger_than_cell"), "{out}{err}");
}

/// `fleetsim sweep scenarios/pollux/load-1.0.toml`: one runs.csv row per workload and
/// allocator; mean JCT per workload (runs.csv's `jct_s.mean`) and per application (the
/// runs' jobs) against the artifact's: Tiresias within 2 % on each, Pollux within 5 % over
/// the eight and 15 % on each, Pollux below Tiresias on each workload.
#[test]
#[ignore = "16 runs of 160 jobs; run in release: cargo test --release --test integration pollux_engine -- --ignored"]
fn the_load_1_0_sweep_matches_the_artifact() {
    let root = public_traces();
    let scenario_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/pollux/load-1.0.toml");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let o = fleetsim()
        .arg("sweep")
        .arg(&scenario_path)
        .arg("--out")
        .arg(&out)
        .arg("--trace-dir")
        .arg(&root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|c| *c == n).unwrap();
    let (cw, ca, cj) = (
        col("workload.trace.public_path"),
        col("elastic.allocator"),
        col("jct_s.mean"),
    );
    // The run id is quoted and holds commas: count columns from the end of the row.
    let from_end = header.len();
    let mut ours: BTreeMap<(String, String), f64> = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let at = |c: usize| f[f.len() - (from_end - c)];
        ours.insert(
            (at(cw).to_string(), at(ca).to_string()),
            at(cj).parse().unwrap(),
        );
    }
    assert_eq!(ours.len(), 16, "{text}");
    let mut sums: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for w in 1..=8 {
        let wl = format!("workload-{w}");
        let rows = workload(&root.join(format!("pollux-workloads/load-1.0/{wl}.csv")));
        let mut means = BTreeMap::new();
        for policy in ["tiresias", "pollux"] {
            let refs = reference(&root, policy, &wl);
            let theirs = mean(rows.iter().map(|r| refs[&r.name]));
            let o = ours[&(wl.clone(), policy.to_string())];
            eprintln!(
                "{policy} {wl}: mean JCT {o:.1} s, artifact {theirs:.1} s ({:+.2} %)",
                (o / theirs - 1.0) * 100.0
            );
            let bound = if policy == "tiresias" { 0.02 } else { 0.15 };
            assert!(
                (o / theirs - 1.0).abs() < bound,
                "{policy} {wl}: {o} vs {theirs}"
            );
            let s = sums.entry(policy).or_default();
            *s = (s.0 + o, s.1 + theirs);
            means.insert(policy, o);
        }
        assert!(means["pollux"] < means["tiresias"], "{wl}: {means:?}");
    }
    let (o, t) = sums["pollux"];
    eprintln!(
        "pollux over 8: {:.1} s, artifact {:.1} s ({:+.2} %)",
        o / 8.0,
        t / 8.0,
        (o / t - 1.0) * 100.0
    );
    assert!((o / t - 1.0).abs() < 0.05, "{o} vs {t}");
    let (o, t) = sums["tiresias"];
    eprintln!(
        "tiresias over 8: {:.1} s, artifact {:.1} s ({:+.2} %)",
        o / 8.0,
        t / 8.0,
        (o / t - 1.0) * 100.0
    );
    per_application(&root);
}

/// Mean JCT per application over the eight workloads, from the runs' job rows.
fn per_application(root: &Path) {
    for (policy, bound) in [("tiresias", 0.02), ("pollux", 0.15)] {
        let mut per_app: BTreeMap<&str, (f64, f64, u32)> = BTreeMap::new();
        for w in 1..=8 {
            let wl = format!("workload-{w}");
            let trace = format!(r#"public_path = "pollux-workloads/load-1.0/{wl}.csv""#);
            let (_d, path) = crate::support::write_scenario(&scenario(policy, &trace), &[]);
            let loaded = fleetsim::scenario::load(&path).unwrap();
            let opts = crate::support::run_options(None, true);
            let out = fleetsim::run::run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
            let refs = reference(root, policy, &wl);
            let rows = workload(&root.join(format!("pollux-workloads/load-1.0/{wl}.csv")));
            let app_of: BTreeMap<&str, &str> = rows
                .iter()
                .map(|r| (r.name.as_str(), r.app.as_str()))
                .collect();
            for j in out.jobs.as_ref().unwrap() {
                let app = APPS
                    .iter()
                    .find(|a| **a == app_of[j.name.as_str()])
                    .unwrap();
                let jct = (j.finish.unwrap().0 - j.submit.0) as f64 / 1000.0;
                let e = per_app.entry(app).or_default();
                *e = (e.0 + jct, e.1 + refs[&j.name], e.2 + 1);
            }
        }
        for (app, (o, t, k)) in per_app {
            let (o, t) = (o / f64::from(k), t / f64::from(k));
            eprintln!(
                "{policy} {app:12} ({k} jobs): mean JCT {o:.1} s, artifact {t:.1} s ({:+.2} %)",
                (o / t - 1.0) * 100.0
            );
            assert!((o / t - 1.0).abs() < bound, "{policy} {app}: {o} vs {t}");
        }
    }
}
