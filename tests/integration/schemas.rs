//! Issue 19 item 4: the committed JSON Schemas (`schemas/`) are those the Rust types
//! generate, and they validate every committed scenario and the summaries of runs.

use std::path::{Path, PathBuf};

use fleetsim::run::{run_inflation, run_scenario, RunOptions};
use fleetsim::scenario::{self, TraceDir};
use fleetsim::schemas::{self, Kind};
use serde_json::Value;

use crate::support::public_traces;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed schema of `kind`, compiled.
fn validator(kind: Kind) -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join(kind.file())).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&v).unwrap()
}

/// Every error of `doc` against `v`, as "message at path".
fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{e} at `{}`", e.instance_path()))
        .collect()
}

/// Fails when a committed schema differs from the generated one;
/// `FLEETSIM_UPDATE_SCHEMAS=1` rewrites them instead.
#[test]
fn committed_schemas_are_current() {
    let update = std::env::var_os("FLEETSIM_UPDATE_SCHEMAS").is_some();
    for k in Kind::ALL {
        let path = repo().join(k.file());
        let want = schemas::schema_text(k);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &want).unwrap();
            continue;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is stale: regenerate with `FLEETSIM_UPDATE_SCHEMAS=1 cargo test -p fleetsim \
             --test integration schemas::` (or `fleetsim schema {}`)",
            k.file(),
            k.as_str()
        );
    }
}

/// A scenario file as JSON: merged onto its base first when it `extends` one.
fn scenario_json(path: &Path) -> Value {
    let table = scenario::merged_table(path).unwrap();
    serde_json::to_value(table).unwrap()
}

#[test]
fn every_committed_scenario_validates() {
    let v = validator(Kind::Scenario);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 20, "{} scenarios", paths.len());
    let mut bad = Vec::new();
    for p in &paths {
        for e in errors(&v, &scenario_json(p)) {
            bad.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The schema is not vacuous: it refuses what the loader refuses (an unknown key, a wrong
/// type, an unknown output kind, a missing name).
#[test]
fn scenario_schema_refuses_bad_scenarios() {
    let v = validator(Kind::Scenario);
    let good = scenario_json(&repo().join("scenarios/sample-small.toml"));
    assert!(errors(&v, &good).is_empty());
    let bad = |f: &dyn Fn(&mut Value)| {
        let mut d = good.clone();
        f(&mut d);
        assert!(!errors(&v, &d).is_empty(), "accepted {d}");
    };
    bad(&|d| d["metrics"]["warmup_days"] = Value::from(1));
    bad(&|d| d["seed"] = Value::from("seven"));
    bad(&|d| d["metrics"]["outputs"] = serde_json::json!(["batsm"]));
    bad(&|d| {
        d.as_object_mut().unwrap().remove("name");
    });
    bad(&|d| d["policy"]["placement"] = Value::from("best-fits"));
}

fn opts(trace_dir: PathBuf) -> RunOptions {
    RunOptions {
        seed: None,
        trace_dir: TraceDir(trace_dir),
        out_dir: None,
        keep_rows: false,
    }
}

/// Runs: sample-small (the snapshot's scenario), the default scenario on a short horizon,
/// a run with failures (the optional `reliability` section) and the tiny inflation
/// experiment; each summary validates against its schema and not against the other, and
/// carries `schema_version` 2.
#[test]
fn summaries_of_runs_validate() {
    let run_v = validator(Kind::Summary);
    let infl_v = validator(Kind::InflationSummary);
    let mut docs = Vec::new();
    let sample = scenario::load(&repo().join("scenarios/sample-small.toml")).unwrap();
    docs.push(run_scenario(&sample, &opts(public_traces()), &mut |_, _| {}).unwrap());
    let mut default = scenario::parse(
        scenario::DEFAULT_SCENARIO,
        "<embedded default scenario>",
        repo(),
    )
    .unwrap();
    default.scenario.metrics.horizon_s = Some(86_400.0);
    docs.push(run_scenario(&default, &opts(public_traces()), &mut |_, _| {}).unwrap());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jobs.csv"),
        "id,submit_s,tenant,num_gpu,runtime_s\nJ,0,T,8,1000\nK,0,T,8,1000\n",
    )
    .unwrap();
    let path = dir.path().join("f.toml");
    std::fs::write(
        &path,
        "name = \"f\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [\"n1\", \"n2\"]\naccelerator = \"H100\"\ngpus = 8\n[workload]\ntrace = { format = \"native\", path = \"jobs.csv\" }\n[[node_events]]\nat_s = 100\nnode = \"n1\"\nkind = \"fail\"\ngrace_s = 0\n[failures]\n",
    )
    .unwrap();
    let failing = scenario::load(&path).unwrap();
    let out = run_scenario(&failing, &opts(public_traces()), &mut |_, _| {}).unwrap();
    assert!(out.summary.reliability.is_some());
    docs.push(out);
    for out in &docs {
        let d = serde_json::to_value(&out.summary).unwrap();
        assert_eq!(d["schema_version"], 2);
        assert_eq!(
            errors(&run_v, &d),
            Vec::<String>::new(),
            "{}",
            out.summary.scenario
        );
        assert!(!errors(&infl_v, &d).is_empty());
    }
    // The committed snapshot of sample-small's summary.json validates too.
    let snap = std::fs::read_to_string(repo().join(
        "tests/integration/snapshots/integration__snapshots__sample_small_summary_json.snap",
    ))
    .unwrap();
    let body = snap.splitn(3, "---\n").nth(2).unwrap();
    let d: Value = serde_json::from_str(body).unwrap();
    assert_eq!(errors(&run_v, &d), Vec::<String>::new());

    let idir = tempfile::tempdir().unwrap();
    let loaded = scenario::load(&crate::inflation::scenario(idir.path())).unwrap();
    let s = run_inflation(&loaded, &opts(idir.path().to_path_buf())).unwrap();
    let d = serde_json::to_value(&s).unwrap();
    assert_eq!(d["schema_version"], 2);
    assert_eq!(errors(&infl_v, &d), Vec::<String>::new());
    assert!(!errors(&run_v, &d).is_empty());
}
