//! Inputs as real clusters ship them: the Kueue project's own example manifests
//! (`tests/fixtures/kueue-upstream`, see its SOURCE.md) and `sacct -P` files in Slurm's layout
//! (`tests/fixtures/sacct`): each is accepted, or refused with a reason a user can act on.

use std::path::{Path, PathBuf};
use std::process::Command;

use fleetsim::scenario::kueue;
use fleetsim::scenario::TraceFormat;
use fleetsim::workload::slurm_sacct::SacctOptions;
use fleetsim::workload::{open_trace_with, JobSpec, JobStream, RecordedKind};
use fleetsim_policies::{SimDuration, SimTime};

fn fixtures(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(sub)
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

/// Every upstream example holding Kueue objects is accepted: 19 current (v1beta2) and 10
/// older (v1beta1). Before issue #20, 15/19 and 7/10: `concurrentAdmissionPolicy` was an
/// unknown field and the three ResourceFlavor-only files had "no ClusterQueue".
#[test]
fn every_upstream_kueue_example_is_accepted() {
    for (dir, n) in [("v1beta2", 19), ("v1beta1", 10)] {
        let files = yaml_files(&fixtures("kueue-upstream").join(dir));
        assert_eq!(files.len(), n, "{dir}");
        for f in &files {
            if let Err(e) = kueue::load(f) {
                panic!("{e}");
            }
        }
    }
    let k = |name: &str| kueue::load(&fixtures("kueue-upstream").join(name)).unwrap();
    let c = k("v1beta2/admin_concurrent-admission-setup.yaml");
    assert_eq!(c.cluster_queues.len(), 1);
    let notes = c.quota().unsimulated;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("concurrentAdmissionPolicy")),
        "{notes:?}"
    );
    let only = k("v1beta1/admin_resource-flavor-empty.yaml");
    assert!(only.cluster_queues.is_empty());
    assert_eq!(only.flavors.keys().collect::<Vec<_>>(), ["default-flavor"]);
    // `instance-type: spot` names no accelerator: the flavor covers every model, and says so.
    let spot = k("v1beta2/admin_resource-flavor-taints.yaml").quota();
    assert!(spot.flavors[0].models.is_empty());
    assert!(
        spot.unsimulated
            .iter()
            .any(|n| n.contains("instance-type=spot") && n.contains("covers every model")),
        "{:?}",
        spot.unsimulated
    );
}

/// The whole upstream directory at once is refused, not merged silently: the examples
/// declare `default-flavor` in several files, and a second declaration is named at its file
/// and line.
#[test]
fn a_directory_is_one_configuration_and_duplicates_across_files_are_named() {
    let e = kueue::load(&fixtures("kueue-upstream/v1beta2"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("duplicate ResourceFlavor") && e.contains(".yaml: line "),
        "{e}"
    );
}

fn validate(scenario: &str) -> (bool, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.toml");
    std::fs::write(&p, scenario).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .arg("validate")
        .arg(&p)
        .output()
        .unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// `kueue = { paths = [...] }`: two upstream files (a ClusterQueue with its flavor and
/// LocalQueue; a flavor-only file) as one configuration of a scenario; `validate` lists what
/// it does not simulate.
#[test]
fn a_scenario_reads_several_upstream_manifest_files() {
    let dir = fixtures("kueue-upstream/v1beta2");
    let scenario = format!(
        r#"name = "upstream-kueue"
kueue = {{ paths = ["{}", "{}"] }}
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 1
[workload.synthetic]
jobs = 5
arrival_rate_per_hour = 10.0
tenants = [{{ name = "user-queue", weight = 1.0 }}]
sizes = [{{ gpus = 1, weight = 1.0 }}]
runtime = {{ dist = "lognormal", median_s = 600.0, sigma = 0.5, max_s = 3600.0 }}
"#,
        dir.join("admin_single-clusterqueue-setup.yaml").display(),
        dir.join("admin_resource-flavor-taints.yaml").display()
    );
    let (ok, out) = validate(&scenario);
    assert!(ok, "{out}");
    assert!(
        out.contains("instance-type=spot") && out.contains("nodeTaints"),
        "{out}"
    );
}

fn read_sacct(name: &str, format: Option<&str>) -> (Vec<JobSpec>, Box<dyn JobStream>) {
    let opts = match format {
        Some(f) => SacctOptions::with_format(f).unwrap(),
        None => SacctOptions::default(),
    };
    let mut s = open_trace_with(
        TraceFormat::SlurmSacct,
        &fixtures("sacct").join(name),
        false,
        &opts,
    )
    .unwrap();
    let jobs = s.by_ref().map(Result::unwrap).collect();
    (jobs, s)
}

const NOHEADER_FORMAT: &str =
    "JobID,JobIDRaw,Submit,Start,End,ElapsedRaw,AllocTRES,Partition,Account,State";

/// `sacct --noheader` with the `--format` list; heterogeneous job 4102 (`4102+0`: 1 node,
/// 4 CPUs, 16 GiB; `4102+1`: 2 nodes, 16 CPUs, 8 × A100, 256 GiB) is one gang of 1 + 2 = 3
/// tasks, each max(4, 16 / 2) = 8 CPUs, max(0, 8 / 2) = 4 GPUs, max(16, 256 / 2) = 128 GiB
/// = 131072 MiB; it starts 09:05:10 − 09:00:00 = 310 s after t = 0 and runs 1800 s.
#[test]
fn sacct_noheader_with_a_heterogeneous_job() {
    let (jobs, s) = read_sacct("noheader-hetjob.txt", Some(NOHEADER_FORMAT));
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["4101", "4102", "4105"]);
    let h = &jobs[1];
    assert_eq!((h.tasks, h.shape.num_gpu, h.shape.cpu_milli), (3, 4, 8000));
    assert_eq!(h.shape.mem_mib, 131_072);
    assert_eq!(h.gpu_models, ["A100"]);
    assert_eq!(h.submit, SimTime::from_secs(300));
    assert_eq!(h.recorded_start, Some(SimTime::from_secs(310)));
    assert_eq!(h.runtime, SimDuration::from_secs(1800));
    assert_eq!(jobs[2].recorded, RecordedKind::NeverRan);
    let sk = s.skipped();
    assert_eq!((sk["job_step"], sk["never_started"]), (4, 1));
    assert_eq!(s.notes()["hetjob"], 1);
    // Without the list the file is refused with what to add.
    let e = open_trace_with(
        TraceFormat::SlurmSacct,
        &fixtures("sacct/noheader-hetjob.txt"),
        false,
        &SacctOptions::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("line 1") && e.contains("sacct_format"), "{e}");
}

/// `SLURM_TIME_FORMAT=%s` and `%FT%T%z` give the same jobs: 1709542800 is
/// 2024-03-04T09:00:00Z = 10:00:00+0100; job 2 is submitted 300 s later (1709543100 =
/// 04:05:00−0500 = 09:05:00Z) and starts at 600 s.
#[test]
fn sacct_epoch_and_utc_offset_times_agree() {
    let (a, _) = read_sacct("epoch.txt", None);
    let (b, _) = read_sacct("utc-offset.txt", None);
    let key = |j: &JobSpec| (j.submit, j.recorded_start, j.runtime, j.tasks);
    assert_eq!(
        a.iter().map(key).collect::<Vec<_>>(),
        b.iter().map(key).collect::<Vec<_>>()
    );
    assert_eq!(a[1].submit, SimTime::from_secs(300));
    assert_eq!(a[1].recorded_start, Some(SimTime::from_secs(600)));
    assert_eq!(a[1].runtime, SimDuration::from_secs(7200));
}

/// The scenario option: `sacct_format` in `[workload.trace]`, and refused for other formats.
#[test]
fn sacct_format_is_a_scenario_option() {
    let trace = fixtures("sacct/noheader-hetjob.txt");
    let scenario = |format: &str| {
        format!(
            r#"name = "sacct-noheader"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 2
[workload]
trace = {{ format = "{format}", path = "{}", sacct_format = "{NOHEADER_FORMAT}" }}
"#,
            trace.display()
        )
    };
    let (ok, out) = validate(&scenario("slurm-sacct"));
    assert!(ok && out.contains("3 jobs"), "{out}");
    let (ok, out) = validate(&scenario("swf"));
    assert!(!ok && out.contains("sacct_format"), "{out}");
}
