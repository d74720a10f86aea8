//! The `fleetsim` binary as a user runs it: the default scenario, and bad input.

use std::process::Command;

use crate::support::fleetsim;

#[test]
fn run_without_scenario_runs_the_embedded_default() {
    let out = tempfile::tempdir().unwrap();
    let o = fleetsim()
        .args(["run", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(
        table.contains("scenario default") && table.contains("occupancy"),
        "{table}"
    );
    for f in ["summary.json", "jobs.csv", "timeseries.csv"] {
        assert!(out.path().join(f).is_file(), "{f}");
    }
}

fn bad_scenario(text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, text).unwrap();
    let o = fleetsim().arg("validate").arg(&p).output().unwrap();
    (
        o.status.code().unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

const OK_FLEET: &str = r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 2
"#;

#[test]
fn unknown_scenario_key_is_named() {
    let (code, err) = bad_scenario(&format!(
        "name = \"x\"\nsede = 3\n{OK_FLEET}[workload.synthetic]\njobs = 1\n"
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("s.toml") && err.contains("sede"), "{err}");
}

#[test]
fn unknown_policy_name_lists_valid_ones() {
    let (code, err) = bad_scenario(&format!(
        "name = \"x\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"native\", path = \"j.csv\" }}\n[policy]\nplacement = \"bestfit\"\n"
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bestfit") && err.contains("best-fit"), "{err}");
}

#[test]
fn unknown_accelerator_and_zero_capacity_are_named() {
    let (code, err) = bad_scenario(
        "name = \"x\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\naccelerator = \"H1000\"\ngpus = 8\ncount = 1\n[workload]\ntrace = { format = \"native\", path = \"j.csv\" }\n",
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("fleet.cells[0].nodes[0].accelerator") && err.contains("H1000"),
        "{err}"
    );
    let (code, err) = bad_scenario(
        "name = \"x\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\ncount = 1\n[workload]\ntrace = { format = \"native\", path = \"j.csv\" }\n",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zero capacity"), "{err}");
}

#[test]
fn bad_trace_row_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("j.csv"),
        "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\nb,zz,t,1,10\n",
    )
    .unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(
        &p,
        format!("name = \"x\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"native\", path = \"j.csv\" }}\n"),
    )
    .unwrap();
    let out_dir = dir.path().join("o");
    for cmd in ["validate", "run"] {
        let mut c = fleetsim();
        c.arg(cmd).arg(&p).arg("--trace-dir").arg(dir.path());
        if cmd == "run" {
            c.arg("--out").arg(&out_dir);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("j.csv") && err.contains("line 3") && err.contains("submit_s"),
            "{cmd}: {err}"
        );
    }
    // A failed run leaves no half-written output.
    let o = dir.path().join("o");
    assert!(!o.join("jobs.csv").exists() && !o.join("summary.json").exists());
}

/// A bad quota configuration is bad input (exit code 2) with a message naming the field:
/// a negative quota, a cohort cycle, a borrowing limit on a queue with no cohort, an unknown
/// flavor (`validate` and `run` alike).
#[test]
fn bad_quota_configuration_names_the_field() {
    let base = format!(
        "name = \"q\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"native\", path = \"missing.csv\" }}\n"
    );
    let cases = [
        (
            "[[cohorts]]\nname = \"c\"\n[[queues]]\nname = \"a\"\ncohort = \"c\"\nflavors = [{ name = \"H100\", gpus = { nominal = -4 } }]\n",
            "queues[0].flavors[0].gpus.nominal",
            "-4",
        ),
        (
            "[[cohorts]]\nname = \"x\"\nparent = \"y\"\n[[cohorts]]\nname = \"y\"\nparent = \"x\"\n",
            "cohorts[0].parent",
            "cycle",
        ),
        (
            "[[queues]]\nname = \"a\"\nflavors = [{ name = \"H100\", gpus = { nominal = 4, borrowing_limit = 2 } }]\n",
            "queues[0].flavors[0].gpus.borrowing_limit",
            "belongs to no cohort",
        ),
        (
            "[[cohorts]]\nname = \"c\"\n[[queues]]\nname = \"a\"\ncohort = \"c\"\nflavors = [{ name = \"B300\", gpus = { nominal = 4 } }]\n",
            "queues[0].flavors[0].name",
            "B300",
        ),
        (
            "[[queues]]\nname = \"a\"\ncohort = \"nope\"\n",
            "queues[0].cohort",
            "nope",
        ),
        (
            "[[flavors]]\nname = \"f\"\nmodels = [\"NVIDIA-B300\"]\n[[cohorts]]\nname = \"c\"\n[[queues]]\nname = \"a\"\ncohort = \"c\"\nflavors = [{ name = \"f\", gpus = { nominal = 4 } }]\n",
            "flavors[0].models[0]",
            "NVIDIA-B300",
        ),
        (
            "[[queues]]\nname = \"a\"\n[[queues]]\nname = \"b\"\nlocal_queues = [\"a\"]\n",
            "queues[1].local_queues[0]",
            "already names queue `a`",
        ),
    ];
    for (extra, field, word) in cases {
        let (code, err) = bad_scenario(&format!("{base}{extra}"));
        assert_eq!(code, 2, "{extra}: {err}");
        assert!(
            err.contains(field) && err.contains(word),
            "{extra}: expected `{field}` and `{word}` in: {err}"
        );
    }
    // `run` refuses the same way.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, format!("{base}{}", cases[3].0)).unwrap();
    let o = fleetsim()
        .arg("run")
        .arg(&p)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("queues[0].flavors[0].name"), "{err}");
}

/// A scenario in a temporary directory on the Slurm sample, with `manifests` as its Kueue
/// manifests (`None`: the file is missing); `validate`'s exit code and stderr.
fn kueue_scenario(manifests: Option<&str>) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/sample-sacct.txt");
    if let Some(m) = manifests {
        std::fs::write(dir.path().join("k.yaml"), m).unwrap();
    }
    let p = dir.path().join("s.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"k\"\nkueue = {{ path = \"k.yaml\" }}\n{OK_FLEET}[workload]\ntrace = {{ format = \"slurm-sacct\", path = {:?} }}\n",
            trace.display().to_string()
        ),
    )
    .unwrap();
    let o = fleetsim().arg("validate").arg(&p).output().unwrap();
    (
        o.status.code().unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// Bad Kueue manifests are bad input (exit code 2) naming the manifests file, the line and
/// the field: a misspelled field, two accelerators in one flavor, a ResourceFlavor whose
/// model label names no model of the fleet, a missing file, a file with no ClusterQueue.
#[test]
fn bad_kueue_manifests_name_file_line_and_field() {
    let sample = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/kueue-manifests.yaml"),
    )
    .unwrap();
    let line_of =
        |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let (code, err) = kueue_scenario(Some(&sample));
    assert_eq!(code, 0, "{err}");
    let typo = sample.replacen("cohortName: org", "cohortNmae: org", 1);
    let bogus = sample.replacen("  cohort: org\n", "  cohort: org\n  bogusField: 1\n", 1);
    let two = sample.replacen(
        "        borrowingLimit: 8\n",
        "        borrowingLimit: 8\n      - name: amd.com/gpu\n        nominalQuota: 2\n",
        1,
    );
    let model = sample.replacen(
        "nvidia.com/gpu.product: H100",
        "nvidia.com/gpu.product: NVIDIA-B300",
        1,
    );
    let cases = [
        (typo.clone(), format!("line {}: field `spec.cohortNmae`: unknown field", line_of(&typo, "cohortNmae"))),
        (bogus.clone(), format!("line {}: field `spec.bogusField`", line_of(&bogus, "bogusField"))),
        (two.clone(), format!("line {}: field `spec.resourceGroups[0].flavors[0].resources[3].name`", line_of(&two, "amd.com/gpu"))),
        (model.clone(), format!("line {}: ResourceFlavor `h100`: `spec.nodeLabels`: `NVIDIA-B300` names no accelerator model", line_of(&model, "nodeLabels"))),
        ("# nothing\n".to_string(), "no Kubernetes objects".to_string()),
        ("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n".to_string(), "no kueue.x-k8s.io ClusterQueue".to_string()),
    ];
    for (text, want) in cases {
        let (code, err) = kueue_scenario(Some(&text));
        assert_eq!(code, 2, "{want}: {err}");
        assert!(
            err.contains("k.yaml") && err.contains(&want),
            "expected `{want}` in: {err}"
        );
        assert!(!err.contains("flavors[0].models"), "{err}");
    }
    let (code, err) = kueue_scenario(None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("k.yaml: cannot read the Kueue manifests") && !err.contains("line 0"),
        "{err}"
    );
}

/// Under Kueue manifests a job naming a queue that is neither a ClusterQueue nor a
/// LocalQueue is rejected at submit (`unknown_queue`), as Kueue never admits it.
#[test]
fn kueue_job_on_an_unknown_queue_is_rejected() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let trace = std::fs::read_to_string(root.join("traces/sample-sacct.txt")).unwrap();
    // Job 1001 names a partition (LocalQueue) the manifests do not declare.
    let trace = trace.replacen("|research|team-a|alice|", "|reserch|team-a|alice|", 1);
    std::fs::write(dir.path().join("t.txt"), trace).unwrap();
    std::fs::copy(
        root.join("scenarios/kueue-manifests.yaml"),
        dir.path().join("k.yaml"),
    )
    .unwrap();
    let scenario = std::fs::read_to_string(root.join("scenarios/kueue-quota.toml"))
        .unwrap()
        .replace("kueue-manifests.yaml", "k.yaml")
        .replace("../traces/sample-sacct.txt", "t.txt");
    let p = dir.path().join("s.toml");
    std::fs::write(&p, scenario).unwrap();
    let out = dir.path().join("o");
    let o = fleetsim()
        .arg("run")
        .arg(&p)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let jobs = &summary["jobs"];
    assert_eq!(jobs["rejected_by_reason"]["unknown_queue"], 1, "{jobs}");
    assert_eq!(jobs["submitted"], 6, "{jobs}");
    let rows = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
    assert!(
        rows.lines()
            .any(|l| l.contains("reserch") && l.contains("unknown_queue")),
        "{rows}"
    );
}

/// A small synthetic workload on [`OK_FLEET`], followed by `extra`.
fn synthetic(extra: &str) -> String {
    format!(
        "name = \"x\"\n{OK_FLEET}[workload.synthetic]\njobs = 40\narrival_rate_per_hour = 30.0\ntenants = [{{ name = \"t\", weight = 1.0 }}]\nsizes = [{{ gpus = 1, weight = 1.0 }}]\nruntime = {{ dist = \"lognormal\", median_s = 600.0, sigma = 1.0, max_s = 3600.0 }}\n{extra}"
    )
}

fn run_text(text: &str, args: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, text).unwrap();
    let o = fleetsim()
        .args(args)
        .arg(&p)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn out_of_range_sizes_and_times_are_bad_input_not_exhaustion() {
    // Scale factors that would build a billion-node fleet or overflow arrival times.
    for (extra, field) in [
        (
            "[transforms]\nfleet_scale = 1e9\n",
            "transforms.fleet_scale",
        ),
        (
            "[transforms]\nfleet_scale = 0.0\n",
            "transforms.fleet_scale",
        ),
        (
            "[transforms]\narrival_rate_scale = 1e-300\n",
            "transforms.arrival_rate_scale",
        ),
    ] {
        let (code, err) = bad_scenario(&synthetic(extra));
        assert_eq!(code, 2, "{extra}: {err}");
        assert!(err.contains(field), "{extra}: {err}");
    }
    // A time series of 1 ms intervals over hours of simulated time is refused, not built.
    let (code, err) = run_text(
        &synthetic("[metrics]\ntimeseries_interval_s = 0.001\n"),
        &["run"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("timeseries_interval_s"), "{err}");
    // A node event far beyond the workload does not stretch the run: it ends once every job
    // has finished.
    let (code, err) = run_text(
        &synthetic("[[node_events]]\nat_s = 1e12\nnode = \"c-n00000\"\nkind = \"fail\"\n"),
        &["run"],
    );
    assert_eq!(code, 0, "{err}");
    // Seeds are bounded.
    let (code, err) = run_text(
        &synthetic(""),
        &[
            "compare",
            "--policies",
            "best-fit,worst-fit",
            "--seeds",
            "4294967295",
        ],
    );
    assert_eq!(code, 2, "{err}");
}

#[test]
fn duplicate_sweep_labels_and_foreign_merge_inputs_are_bad_input() {
    let (code, err) = run_text(
        &synthetic("[sweep]\n[[sweep.axes]]\nparam = \"policy.placement\"\nvalues = [\"best-fit\", \"worst-fit\"]\nlabels = [\"x\", \"x\"]\n"),
        &["sweep"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sweep.axes[0].labels[1]"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let o = fleetsim()
        .arg("merge")
        .arg(dir.path().join("nope"))
        .arg("--out")
        .arg(dir.path().join("m"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not the output directory of `fleetsim sweep`"),
        "{err}"
    );
}

#[test]
fn a_reader_closing_the_pipe_early_is_not_a_crash() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let mut child = fleetsim()
        .args(["run", "--out"])
        .arg(dir.path().join("out"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close our end of stdout at once, before the run prints its summary.
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

/// `validate` reads what `run` reads: a missing local trace names the field and the
/// resolved path; a `[serving]` trace demand whose file is missing, and a demand of more
/// replicas than a service may desire, are refused by `validate` as by `run`, and so is a
/// time series whose submits alone span more intervals than a run keeps (exit code 2, the
/// field named once).
#[test]
fn validate_checks_local_traces_and_serving_demand() {
    let dir = tempfile::tempdir().unwrap();
    let base = format!("name = \"v\"\n{OK_FLEET}");
    std::fs::write(
        dir.path().join("jobs.csv"),
        "id,submit_s,tenant,num_gpu,runtime_s\nj,0,t,1,10\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("late.csv"),
        "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\nb,5000,t,1,10\n",
    )
    .unwrap();
    let with_jobs =
        format!("{base}[workload]\ntrace = {{ format = \"native\", path = \"jobs.csv\" }}\n");
    let cases = [
        (
            format!("{base}[workload]\ntrace = {{ format = \"native\", path = \"nope.csv\" }}\n"),
            "`workload.trace.path`",
            "nope.csv` does not exist",
        ),
        (
            format!(
                "{with_jobs}[serving]\nend_s = 600\n[[serving.services]]\nname = \"chat\"\nreplica = {{ gpus = 1 }}\n\
                 demand = {{ kind = \"trace\", format = \"alibaba-dlrm\", public_path = \"nope.csv\", app = \"a\", replicas_per_instance = 1.0 }}\n\
                 autoscaler = {{ target_utilization = 1.0, scale_up_delay_s = 0, scale_down_delay_s = 0 }}\n"
            ),
            "`serving.services[0].demand.public_path`",
            "nope.csv` does not exist",
        ),
        (
            format!(
                "{with_jobs}[serving]\nend_s = 600\n[[serving.services]]\nname = \"chat\"\nreplica = {{ gpus = 1 }}\n\
                 demand = {{ kind = \"table\", points = [[0, 1e12]] }}\n\
                 autoscaler = {{ target_utilization = 1.0, scale_up_delay_s = 0, scale_down_delay_s = 0 }}\n"
            ),
            "`serving.services[0].demand`",
            "at least 4294967295 replicas at 0 s (load / target utilization); at most 1048576 replicas per service",
        ),
        (
            // Submits 5,000 s apart at 1 ms intervals: 5,000,000 intervals > 279,620, the
            // cap of a one-cell, one-model fleet (480-byte snapshots in 128 MiB; see
            // `metrics::tests`).
            format!(
                "{base}[workload]\ntrace = {{ format = \"native\", path = \"late.csv\" }}\n\
                 [metrics]\ntimeseries_interval_s = 0.001\n"
            ),
            "`metrics.timeseries_interval_s`",
            "the submits span 5000000 intervals of 1 ms (at most 279620 time-series intervals are kept for this fleet)",
        ),
    ];
    for (i, (text, field, message)) in cases.iter().enumerate() {
        let p = dir.path().join(format!("s{i}.toml"));
        std::fs::write(&p, text).unwrap();
        let o = fleetsim()
            .arg("validate")
            .arg(&p)
            .env("FLEETSIM_TRACE_DIR", dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(field) && err.contains(message), "{err}");
        assert_eq!(err.matches(field).count(), 1, "{err}");
    }
}

/// `schema` into a closed pipe (`fleetsim schema scenario | head -1`) ends quietly with 0, and
/// an error written to a closed standard error keeps its exit code (2 for bad input) instead
/// of a panic (101).
#[test]
fn closed_pipes_keep_the_exit_code() {
    use std::process::Stdio;
    let mut child = fleetsim()
        .args(["schema", "scenario"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\nbogus = 1\n").unwrap();
    let mut child = fleetsim()
        .arg("validate")
        .arg(&bad)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(2));
}

/// `validate` checks `[failures]` against the fleet as `run` does: hot spares that would
/// hold out a whole cell, spares where nothing ever fails, a negative count, and a
/// maintenance drain of an unknown cell are bad input naming the field (exit code 2).
#[test]
fn validate_checks_spares_per_cell_and_maintenance() {
    let fails = "mtbf_h = { \"*\" = 1000 }\nuntil_s = 86400\n";
    let cases = [
        (
            format!("[failures]\n{fails}spares_per_cell = 2\n"),
            "failures.spares_per_cell",
            "every node of cell `c` (2 nodes): at most 1",
        ),
        (
            "[failures]\nspares_per_cell = 1\n".to_string(),
            "failures.spares_per_cell",
            "nothing fails here",
        ),
        (
            format!("[failures]\n{fails}spares_per_cell = -1\n"),
            "failures.spares_per_cell",
            "must be ≥ 0, got -1",
        ),
        (
            format!("[failures]\n{fails}[[failures.maintenance]]\nat_s = 10\ncell = \"nope\"\ndeadline_s = 0\nduration_s = 60\n"),
            "failures.maintenance[0].cell",
            "unknown cell `nope`",
        ),
    ];
    for (extra, field, word) in &cases {
        let (code, err) = bad_scenario(&synthetic(extra));
        assert_eq!(code, 2, "{extra}: {err}");
        assert!(
            err.contains("s.toml") && err.contains(field) && err.contains(word),
            "{extra}: expected `{field}` and `{word}` in: {err}"
        );
    }
    // `check` runs the scenario, and refuses the same way before comparing.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, synthetic(&cases[0].0)).unwrap();
    let o = fleetsim()
        .arg("check")
        .arg(&p)
        .arg("--baseline")
        .arg(dir.path().join("b.json"))
        .arg("--update")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("failures.spares_per_cell"), "{err}");
    // One spare of two nodes, with failures (or only a `[[node_events]]` failure): valid.
    for extra in [
        format!("[failures]\n{fails}spares_per_cell = 1\n"),
        "[[node_events]]\nat_s = 60\nnode = \"c-n00000\"\nkind = \"fail\"\n[failures]\nspares_per_cell = 1\n".to_string(),
    ] {
        let (code, err) = bad_scenario(&synthetic(&extra));
        assert_eq!(code, 0, "{extra}: {err}");
    }
}

/// Beside a replayed `timeline`, the generator's own keys are unused: each is bad input
/// naming `failures.<key>` (exit code 2), as `mtbf_h`, `correlated` and `maintenance` were.
#[test]
fn validate_refuses_generator_keys_beside_a_timeline() {
    let cases = [
        ("start_s = 0", "failures.start_s"),
        ("until_s = 86400", "failures.until_s"),
        (
            "repair = { distribution = \"fixed\", mean_s = 600 }",
            "failures.repair",
        ),
        ("grace_s = 30", "failures.grace_s"),
        ("mtbf_h = { \"*\" = 1000 }", "failures.timeline"),
    ];
    for (key, field) in cases {
        let extra = format!("[failures]\ntimeline = {{ path = \"failures.csv\" }}\n{key}\n");
        let (code, err) = bad_scenario(&synthetic(&extra));
        assert_eq!(code, 2, "{key}: {err}");
        assert!(
            err.contains("s.toml") && err.contains(field) && err.contains("timeline"),
            "{key}: expected `{field}` in: {err}"
        );
    }
}

/// `[[node_events]]` follow each node's state as the rows of a failures timeline file do
/// (fail an up node, repair a down one), in time order whatever their order in the file: a
/// repair of an up node or a second fail is bad input naming `node_events[i]` and the node.
#[test]
fn validate_checks_node_events_against_the_node_state() {
    let ev = |at: u32, node: &str, kind: &str| {
        format!("[[node_events]]\nat_s = {at}\nnode = \"{node}\"\nkind = \"{kind}\"\n")
    };
    let bad = [
        (
            ev(60, "c-n00000", "repair"),
            "node_events[0]",
            "`repair` of node `c-n00000` at 60 s, but the node is up",
        ),
        (
            format!(
                "{}{}",
                ev(60, "c-n00000", "fail"),
                ev(120, "c-n00000", "fail")
            ),
            "node_events[1]",
            "`fail` of node `c-n00000` at 120 s, but the node is already down (since node_events[0])",
        ),
        // In time order: the repair at 30 s comes before the fail at 60 s.
        (
            format!(
                "{}{}",
                ev(60, "c-n00001", "fail"),
                ev(30, "c-n00001", "repair")
            ),
            "node_events[1]",
            "`repair` of node `c-n00001` at 30 s, but the node is up",
        ),
    ];
    for (extra, field, words) in &bad {
        let (code, err) = bad_scenario(&synthetic(extra));
        assert_eq!(code, 2, "{extra}: {err}");
        assert!(
            err.contains("s.toml") && err.contains(field) && err.contains(words),
            "{extra}: expected `{field}` and `{words}` in: {err}"
        );
    }
    // Listed out of time order but valid in it; two nodes are independent; a node may end
    // down.
    let ok = format!(
        "{}{}{}{}",
        ev(300, "c-n00000", "fail"),
        ev(100, "c-n00000", "repair"),
        ev(50, "c-n00000", "fail"),
        ev(100, "c-n00001", "fail")
    );
    let (code, err) = bad_scenario(&synthetic(&ok));
    assert_eq!(code, 0, "{err}");
}

/// A line longer than the readers' limit (1 MiB) — a file with no line break, such as a
/// binary file named by mistake — is bad input naming the file and the line, for the CSV
/// readers (`csv` crate), the line readers (SWF) and JSON Lines alike, instead of being
/// buffered whole.
#[test]
fn an_overlong_line_is_bad_input_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(3 << 20);
    let cases = [
        (
            "j.csv",
            "native",
            format!("id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\n{long}\nb,1,t,1,10\n"),
        ),
        (
            "j.jsonl",
            "native",
            format!("{{\"id\":\"a\",\"submit_s\":0,\"tenant\":\"t\",\"num_gpu\":1,\"runtime_s\":10}}\n\n{long}"),
        ),
        ("j.swf", "swf", format!("; header\n1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1\n{long}")),
    ];
    for (file, format, text) in cases {
        std::fs::write(dir.path().join(file), text).unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(
            &p,
            format!("name = \"x\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"{format}\", path = \"{file}\" }}\n"),
        )
        .unwrap();
        let o = fleetsim().arg("validate").arg(&p).output().unwrap();
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        assert!(
            err.contains(file)
                && err.contains("line 3")
                && err.contains("longer than 1048576 bytes"),
            "{file}: {err}"
        );
    }
}

/// `run --out DIR` refuses, before running, when a file the run would write in DIR is one
/// of its inputs — the trace, the failures timeline, the scenario file itself, however the
/// paths are spelled — naming the file (exit code 2), and leaves the input untouched.
#[test]
fn run_refuses_an_output_directory_that_would_overwrite_an_input() {
    let trace = "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\n";
    let timeline =
        "time_ms,node,event,grace_ms,cause\n5000,c-n00000,fail,0,x\n9000,c-n00000,repair,0,x\n";
    let cases = [
        // (scenario file name, trace file name, extra scenario text, the input named)
        ("s.toml", "jobs.csv", "", "jobs.csv"),
        ("s.toml", "timeseries.csv", "", "timeseries.csv"),
        (
            "s.toml",
            "t.csv",
            "[failures]\ntimeline = { path = \"failures.csv\" }\n",
            "failures.csv",
        ),
        ("summary.json", "t.csv", "", "summary.json"),
        // A scenario that extends one named like an output.
        ("s.toml", "t.csv", "", "timeseries.csv"),
    ];
    for (scenario_name, trace_name, extra, named) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(trace_name), trace).unwrap();
        std::fs::write(dir.path().join("failures.csv"), timeline).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let scenario = format!(
            "name = \"x\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"native\", path = \"{trace_name}\" }}\n{extra}"
        );
        let p = dir.path().join(scenario_name);
        std::fs::write(&p, &scenario).unwrap();
        if trace_name == "t.csv" && named == "timeseries.csv" {
            std::fs::write(dir.path().join("timeseries.csv"), &scenario).unwrap();
            std::fs::write(&p, "extends = \"timeseries.csv\"\n").unwrap();
        }
        let scenario = std::fs::read_to_string(&p).unwrap();
        // The same directory, spelled another way.
        for out in [dir.path().to_path_buf(), dir.path().join("sub/..")] {
            let o = fleetsim()
                .arg("run")
                .arg(&p)
                .arg("--out")
                .arg(&out)
                .output()
                .unwrap();
            let err = String::from_utf8(o.stderr).unwrap();
            assert_eq!(o.status.code(), Some(2), "{named}: {err}");
            assert!(
                err.contains(&format!("{named}: the ")) && err.contains("would overwrite it"),
                "{named}: {err}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join(trace_name)).unwrap(),
            trace
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), scenario);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("failures.csv")).unwrap(),
            timeline
        );
        // Another directory is fine.
        let o = fleetsim()
            .arg("run")
            .arg(&p)
            .arg("--out")
            .arg(dir.path().join("sub"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

/// `--out` naming an existing file is refused (exit 2) by `run`; `compare` and `sweep`
/// refuse an output directory that holds one of the scenario's inputs anywhere below it,
/// since they write many files there. Nothing is written and the input stays as it was.
#[test]
fn out_must_be_a_directory_without_the_study_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\n";
    std::fs::create_dir(dir.path().join("o")).unwrap();
    std::fs::write(dir.path().join("o/jobs.csv"), trace).unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"x\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"native\", path = \"o/jobs.csv\" }}\n[[sweep.axes]]\nparam = \"policy.placement\"\nvalues = [\"best-fit\", \"worst-fit\"]\n"
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let o = fleetsim()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8(o.stderr).unwrap())
    };
    let (code, err) = run(&["run", "s.toml", "--out", "s.toml"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--out names an existing file"), "{err}");
    for cmd in [
        vec![
            "compare",
            "s.toml",
            "--policies",
            "best-fit,worst-fit",
            "--out",
            "o",
        ],
        vec!["sweep", "s.toml", "--out", "o"],
        vec!["sweep", "s.toml", "--out", "."],
        vec![
            "compact",
            "s.toml",
            "--goal",
            "wait_s.p99<=100",
            "--out",
            "o",
        ],
    ] {
        let (code, err) = run(&cmd);
        assert_eq!(code, Some(2), "{cmd:?}: {err}");
        // `.` holds the scenario file too, which is named first.
        assert!(
            err.contains("is inside the output directory") && err.contains("choose another --out"),
            "{cmd:?}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("o/jobs.csv")).unwrap(),
        trace
    );
    let entries: Vec<_> = std::fs::read_dir(dir.path().join("o")).unwrap().collect();
    assert_eq!(entries.len(), 1, "nothing written beside the trace");
    // Elsewhere, the same study runs.
    let (code, err) = run(&["sweep", "s.toml", "--out", "elsewhere"]);
    assert_eq!(code, Some(0), "{err}");
    // `merge` refuses to write into one of the shards it merges.
    let (code, err) = run(&["merge", "elsewhere", "--out", "elsewhere"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--out is one of the shard directories"),
        "{err}"
    );
}

/// `trace convert FILE --out FILE` would replace the trace with its conversion: refused,
/// naming the file (exit code 2), the trace untouched.
#[test]
fn trace_convert_refuses_to_overwrite_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let trace = "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\n";
    std::fs::write(dir.path().join("j.csv"), trace).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let o = fleetsim()
        .args(["trace", "convert"])
        .arg(dir.path().join("j.csv"))
        .args(["--format", "native", "--out"])
        .arg(dir.path().join("sub/../j.csv"))
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("j.csv") && err.contains("overwrite"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("j.csv")).unwrap(),
        trace
    );
    // Issue #23 defect 8: an output name it cannot write is bad input (2), not a failure (1).
    for name in ["x.csv.gz", "x.txt"] {
        let o = fleetsim()
            .args(["trace", "convert"])
            .arg(dir.path().join("j.csv"))
            .args(["--format", "native", "--out"])
            .arg(dir.path().join(name))
            .output()
            .unwrap();
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains("must be named *.csv, *.jsonl or *.ndjson"),
            "{err}"
        );
    }
    let o = fleetsim()
        .args(["trace", "convert", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(o.stdout).unwrap();
    assert!(
        help.contains("gzip output, `.gz`, is not supported") && !help.contains("optionally"),
        "{help}"
    );
    let o = fleetsim()
        .args(["trace", "convert"])
        .arg(dir.path().join("j.csv"))
        .args(["--format", "native", "--out"])
        .arg(dir.path().join("one.jsonl"))
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        o.status.success() && err.contains("wrote 1 job to"),
        "{err}"
    );
}

/// A node count no fleet has (a typo) is refused at once, naming the field, instead of
/// exhausting memory while the fleet is built; so is a what-if scale that would exceed it.
#[test]
fn a_fleet_beyond_the_node_limit_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.csv"),
        "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\n",
    )
    .unwrap();
    let workload = "[workload]\ntrace = { format = \"native\", path = \"t.csv\" }\n";
    let cases = [
        (
            "[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\npreset = \"hgx-h100\"\ncount = 100000000\n",
            "`fleet.cells[0].nodes[0].count`: 100000000 nodes: a fleet has at most 4194304 nodes",
        ),
        (
            "[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\npreset = \"hgx-h100\"\ncount = 10000\n[transforms]\nfleet_scale = 1000\n",
            "`transforms.fleet_scale`: the scaled fleet would have more than 4194304 nodes",
        ),
    ];
    for (fleet, want) in cases {
        let p = dir.path().join("s.toml");
        std::fs::write(&p, format!("name = \"big\"\n{fleet}{workload}")).unwrap();
        let o = fleetsim().arg("validate").arg(&p).output().unwrap();
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "{err}");
    }
}

/// Issue #23 defect 6: `backfill = "easy"` with no time limit anywhere is a no-op; `validate`
/// and `run` say so. With a queue default time limit (or oracle estimates) they do not.
#[test]
fn backfill_without_estimates_is_warned_about() {
    let warn = "backfill = \"easy\" does nothing here: none of the 40 jobs carries a time limit";
    let noop = synthetic("[policy]\nbackfill = \"easy\"\n");
    let (code, err) = run_text(&noop, &["run", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("warning: {warn}")), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, &noop).unwrap();
    let o = fleetsim().arg("validate").arg(&p).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains(warn), "{out}");
    assert!(out.contains("; 40 jobs"), "{out}");
    for fix in [
        "[policy]\nbackfill = \"easy\"\nruntime_estimate = \"oracle\"\n",
        "[policy]\nbackfill = \"none\"\n",
    ] {
        let (code, err) = run_text(&synthetic(fix), &["run", "--quiet"]);
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains("does nothing"), "{fix}: {err}");
    }
}

/// An estimate-ordered queue (`sjf`, `srtf`) over jobs without time limits orders nothing:
/// `run` and `validate` warn, naming the field; time limits or oracle estimates silence it.
#[test]
fn estimate_orders_without_estimates_are_warned_about() {
    for order in ["sjf", "srtf"] {
        let warn = format!(
            "queue_order = \"{order}\" orders by run-time estimates, but none of the 40 jobs carries a time limit"
        );
        let noop = synthetic(&format!("[policy]\nqueue_order = \"{order}\"\n"));
        let (code, err) = run_text(&noop, &["run", "--quiet"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains(&format!("warning: {warn}")), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, &noop).unwrap();
        let o = fleetsim().arg("validate").arg(&p).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success() && out.contains(&warn), "{out}");
        let fix = format!("[policy]\nqueue_order = \"{order}\"\nruntime_estimate = \"oracle\"\n");
        let (code, err) = run_text(&synthetic(&fix), &["run", "--quiet"]);
        assert_eq!(code, 0, "{err}");
        assert!(
            !err.contains("orders by run-time estimates"),
            "{fix}: {err}"
        );
    }
    let (code, err) = run_text(
        &synthetic("[policy]\nqueue_order = \"fifo\"\n"),
        &["run", "--quiet"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("orders by run-time estimates"), "{err}");
}

/// Issue #23 defect 7: Ctrl-C (SIGINT) or SIGTERM in the middle of a run removes the
/// half-written `.jobs.csv.tmp` and exits 130 / 143; a temporary a killed run left is removed
/// by the next run into the same folder.
#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_no_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    // Long enough (2 million jobs) to be interrupted while jobs.csv streams.
    std::fs::write(
        &s,
        format!(
            "name = \"long\"\n{OK_FLEET}[workload.synthetic]\njobs = 2000000\narrival_rate_per_hour = 3000.0\ntenants = [{{ name = \"t\", weight = 1.0 }}]\nsizes = [{{ gpus = 1, weight = 1.0 }}]\nruntime = {{ dist = \"lognormal\", median_s = 60.0, sigma = 1.0, max_s = 600.0 }}\n"
        ),
    )
    .unwrap();
    for (sig, code) in [("-INT", 130), ("-TERM", 143)] {
        let out = dir.path().join(format!("out{code}"));
        let mut child = fleetsim()
            .arg("run")
            .arg(&s)
            .arg("--quiet")
            .arg("--out")
            .arg(&out)
            .spawn()
            .unwrap();
        let tmp = out.join(".jobs.csv.tmp");
        let t0 = std::time::Instant::now();
        while !tmp.exists() && t0.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(tmp.exists(), "the run never started writing jobs.csv");
        let k = Command::new("kill")
            .arg(sig)
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(k.success());
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(code), "{sig}");
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{sig} left {left:?}");
    }
    // A temporary from a killed run (SIGKILL cannot be caught) goes at the next run.
    let out = dir.path().join("next");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join(".jobs.csv.tmp"), "partial").unwrap();
    let small = dir.path().join("small.toml");
    std::fs::write(&small, synthetic("")).unwrap();
    let o = fleetsim()
        .arg("run")
        .arg(&small)
        .arg("--quiet")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(!out.join(".jobs.csv.tmp").exists());
    assert!(out.join("jobs.csv").is_file());
}

/// A base in another directory keeps its relative file paths: `bases/s.toml`'s
/// `path = "jobs.csv"` is `bases/jobs.csv` for a scenario beside `bases/` that extends it,
/// through two levels (was resolved against the extending file's directory: not found);
/// and a sweep of the extending file indexes the base's fleet.
#[test]
fn extends_resolves_a_base_s_paths_against_its_own_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("bases/deeper")).unwrap();
    std::fs::write(
        d.join("bases/deeper/jobs.csv"),
        "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\nb,5,t,1,10\n",
    )
    .unwrap();
    std::fs::write(
        d.join("bases/deeper/s.toml"),
        format!("name = \"s\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"native\", path = \"jobs.csv\" }}\n"),
    )
    .unwrap();
    std::fs::write(
        d.join("bases/mid.toml"),
        "extends = \"deeper/s.toml\"\nname = \"mid\"\n",
    )
    .unwrap();
    std::fs::write(
        d.join("top.toml"),
        "extends = \"bases/mid.toml\"\nname = \"top\"\n",
    )
    .unwrap();
    let o = fleetsim()
        .arg("validate")
        .arg(d.join("top.toml"))
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("2 jobs"), "{out}");
    // A sweep axis indexes the fleet the base gives (was: `fleet.cells` is not in the
    // scenario, so it cannot be indexed).
    std::fs::write(
        d.join("sweep.toml"),
        "extends = \"bases/mid.toml\"\nname = \"sw\"\n[sweep]\nseeds = 1\n\
         [[sweep.axes]]\nparam = \"fleet.cells[0].nodes[0].count\"\nvalues = [1, 2]\n",
    )
    .unwrap();
    let o = fleetsim()
        .args(["sweep", "-j", "1", "--out"])
        .arg(d.join("out"))
        .arg(d.join("sweep.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let runs = std::fs::read_to_string(d.join("out/runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 3, "{runs}");
}

/// Issue #23 defect 8: `extends` errors name the file that refers to the base.
#[test]
fn extends_errors_name_the_referring_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |n: &str, t: &str| std::fs::write(d.join(n), t).unwrap();
    write("missing.toml", "name = \"m\"\nextends = \"nowhere.toml\"\n");
    write("bad.toml", "name = \nfoo");
    write("uses-bad.toml", "name = \"u\"\nextends = \"bad.toml\"\n");
    write("badkey.toml", "name = \"b\"\nbogus = 1\n");
    write(
        "uses-badkey.toml",
        "name = \"u\"\nextends = \"badkey.toml\"\n",
    );
    for (file, expect) in [
        ("missing.toml", "missing.toml: `extends`: `"),
        ("uses-bad.toml", "bad.toml (extended by "),
        ("uses-badkey.toml", "uses-badkey.toml (with "),
    ] {
        let o = fleetsim()
            .arg("validate")
            .arg(d.join(file))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(expect), "{file}: {err}");
    }
    let o = fleetsim()
        .arg("validate")
        .arg(d.join("uses-badkey.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains("badkey.toml, which it extends): unknown field `bogus`"),
        "{err}"
    );
}

/// Issue #17 item 9: `[policy] gang_recovery` takes `restart` or `keep_survivors`; anything
/// else is refused with the file, the line and the field, and the valid names.
#[test]
fn validate_refuses_a_bad_gang_recovery() {
    let (code, err) = bad_scenario(&synthetic("[policy]\ngang_recovery = \"keep-survivors\"\n"));
    assert_eq!(code, 2, "{err}");
    // Line 15: `name` (1), OK_FLEET (2–7, from its leading blank line), the synthetic
    // table (8–13), `[policy]` (14).
    for want in [
        "s.toml",
        "line 15",
        "gang_recovery",
        "restart",
        "keep_survivors",
    ] {
        assert!(err.contains(want), "expected `{want}` in: {err}");
    }
    for ok in ["restart", "keep_survivors"] {
        let (code, err) =
            bad_scenario(&synthetic(&format!("[policy]\ngang_recovery = \"{ok}\"\n")));
        assert_eq!(code, 0, "{ok}: {err}");
    }
}

/// `validate` warns about node groups no job of the workload can use (with their GPUs), and
/// counts autoscaled nodes and their GPUs apart from the fixed ones: 1 H100 node (8 GPUs),
/// 2 CPU-less GB200 trays (8 GPUs no job can use), and an autoscaled group of up to 3
/// H100 nodes (24 GPUs).
#[test]
fn validate_warns_about_unusable_capacity_and_counts_autoscaled_gpus() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jobs.csv"),
        "id,submit_s,tenant,num_gpu,cpu_milli,mem_mib,runtime_s\na,0,t,1,4000,16384,100\n",
    )
    .unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(
        &p,
        r#"name = "u"
[[fleet.cells]]
name = "h"
[[fleet.cells.nodes]]
names = ["h1"]
accelerator = "H100"
gpus = 8
cpu_milli = 64000
mem_mib = 524288
[[fleet.cells.autoscaling]]
name = "burst"
max_nodes = 3
node = { accelerator = "H100", gpus = 8, cpu_milli = 64000, mem_mib = 524288 }
provisioning_delay = { distribution = "fixed", s = 60 }
price_per_node_hour = 1.0
scale_down_idle_s = 600
[[fleet.cells]]
name = "gb"
[[fleet.cells.nodes]]
names = ["g1", "g2"]
accelerator = "GB200"
gpus = 4
[workload]
trace = { format = "native", path = "jobs.csv" }
"#,
    )
    .unwrap();
    let o = fleetsim().arg("validate").arg(&p).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("3 nodes (+ up to 3 autoscaled), 16 GPUs (+ up to 24 autoscaled)"),
        "{out}"
    );
    assert!(
        out.contains("warning: cell `gb`, nodes (GB200 × 4, 0 cores, 0 GiB per node: 2 nodes, 8 GPUs) can never host any job"),
        "{out}"
    );
    assert!(
        !out.contains("burst` ("),
        "the autoscaled group is usable: {out}"
    );
    // An empty workload says so, and blames no node group.
    std::fs::write(
        dir.path().join("jobs.csv"),
        "id,submit_s,tenant,num_gpu,cpu_milli,mem_mib,runtime_s\n",
    )
    .unwrap();
    let o = fleetsim()
        .arg("run")
        .arg(&p)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(all.contains("the workload has no job"), "{all}");
    assert!(!all.contains("can never host"), "{all}");
}

/// `fleetsim check` refuses what it would otherwise ignore (exit 2, naming the field, flag or
/// metric): a metric the baseline tracks and the scenario's `[check] metrics` no longer
/// lists; a hand-edited mean; a seed listed twice; an unknown metric name (`validate` too);
/// seeds past 2⁶⁴ − 1. A warning every seed carries is printed once, with the seeds.
#[test]
fn check_refuses_what_it_would_ignore() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |name: &str, extra: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, synthetic(extra)).unwrap();
        p
    };
    let two = scenario(
        "two.toml",
        "[policy]\nqueue_order = \"sjf\"\n[check]\nmetrics = [\"occupancy\", \"wait_s.p99\"]\n",
    );
    let b = dir.path().join("b.json");
    let check = |args: &[&std::ffi::OsStr]| {
        let o = fleetsim().arg("check").args(args).output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let (code, err) = check(&[
        two.as_os_str(),
        os("--baseline"),
        b.as_os_str(),
        os("--update"),
        os("--seeds"),
        os("3"),
    ]);
    assert_eq!(code, 0, "{err}");
    // Every seed draws the same 40 jobs: the sjf warning once, for seeds 0..=2.
    let warns: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warns.len(), 1, "{err}");
    assert!(
        warns[0].contains("orders by run-time estimates, but none of the 40 jobs")
            && warns[0].ends_with(" (seeds 0..=2)"),
        "{err}"
    );
    // The scenario drops wait_s.p99: refused before any run, naming it.
    let one = scenario(
        "one.toml",
        "[policy]\nqueue_order = \"sjf\"\n[check]\nmetrics = [\"occupancy\"]\n",
    );
    let (code, err) = check(&[one.as_os_str(), os("--baseline"), b.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "{}: the baseline tracks `wait_s.p99`, which the scenario's [check] metrics does not list",
            b.display()
        )),
        "{err}"
    );
    // A hand-edited mean, then a seed listed twice.
    let text = std::fs::read_to_string(&b).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mean = v["metrics"]["occupancy"]["mean"].as_f64().unwrap();
    v["metrics"]["occupancy"]["mean"] = (mean + 0.1).into();
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, v.to_string()).unwrap();
    let (code, err) = check(&[two.as_os_str(), os("--baseline"), edited.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "{}: field `metrics.occupancy.mean`: {} disagrees with the metric's values",
            edited.display(),
            mean + 0.1
        )),
        "{err}"
    );
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["seeds"] = serde_json::json!([0, 1, 0]);
    std::fs::write(&edited, v.to_string()).unwrap();
    let (code, err) = check(&[two.as_os_str(), os("--baseline"), edited.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("field `seeds[2]`: seed 0 is listed twice"),
        "{err}"
    );
    // An unknown metric: validate and check refuse it, naming the field.
    let typo = scenario("typo.toml", "[check]\nmetrics = [\"ocupancy\"]\n");
    let o = fleetsim().arg("validate").arg(&typo).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`check.metrics[0]`: unknown metric `ocupancy`")
            && err.contains("(did you mean occupancy")
            && err.contains("known metrics: occupancy, allocated_occupancy,"),
        "{err}"
    );
    // Seeds past the largest: refused, naming the flags.
    let (code, err) = check(&[
        two.as_os_str(),
        os("--baseline"),
        b.as_os_str(),
        os("--update"),
        os("--seed"),
        os("18446744073709551615"),
        os("--seeds"),
        os("5"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--seed 18446744073709551615 with --seeds 5: the seeds 18446744073709551615, 18446744073709551615 + 1, … would pass the largest seed"),
        "{err}"
    );
}
