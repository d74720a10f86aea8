//! Helpers: write a scenario and its trace files into a temporary directory and run it.

use std::path::PathBuf;

use fleetsim::engine::{FinalState, JobRow};
use fleetsim::run::{run_scenario, RunOptions, RunOutput};
use fleetsim::scenario::{self, TraceDir};
use fleetsim_policies::{CellId, FleetState, ModelId, NodeSpec};

/// Writes `files` (name, contents) and `scenario.toml` into a fresh directory, runs it with
/// every-instant audits on, and returns the output with job rows in memory.
pub fn run(scenario_toml: &str, files: &[(&str, &str)]) -> RunOutput {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let path = dir.path().join("scenario.toml");
    std::fs::write(&path, scenario_toml).unwrap();
    let mut loaded = scenario::load(&path).unwrap();
    loaded.scenario.metrics.audit_every_instant = true;
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(public_traces()),
        out_dir: None,
        keep_rows: true,
    };
    run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap()
}

/// [`run`], writing the outputs to a fresh directory; returns the run and the text of its
/// `timeseries.csv`.
/// The error of loading or running a scenario that must be refused (with its cause
/// chain), the checks that need the built fleet included.
///
/// # Panics
/// If the scenario loads and runs.
pub fn refusal(scenario_toml: &str, files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let path = dir.path().join("scenario.toml");
    std::fs::write(&path, scenario_toml).unwrap();
    let loaded = match scenario::load(&path) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(public_traces()),
        out_dir: None,
        keep_rows: false,
    };
    match run_scenario(&loaded, &opts, &mut |_, _| {}) {
        Err(e) => format!("{e:#}"),
        Ok(_) => panic!("not refused:\n{scenario_toml}"),
    }
}

pub fn run_series(scenario_toml: &str, files: &[(&str, &str)]) -> (RunOutput, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let path = dir.path().join("scenario.toml");
    std::fs::write(&path, scenario_toml).unwrap();
    let loaded = scenario::load(&path).unwrap();
    let out_dir = dir.path().join("out");
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(public_traces()),
        out_dir: Some(out_dir.clone()),
        keep_rows: true,
    };
    let out = run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
    let series = std::fs::read_to_string(out_dir.join("timeseries.csv")).unwrap();
    (out, series)
}

/// Column `name` of a CSV text, one value per row (panics naming the column when absent).
pub fn csv_column(text: &str, name: &str) -> Vec<String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let ix = header
        .iter()
        .position(|c| *c == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    lines
        .map(|l| l.split(',').nth(ix).unwrap().to_string())
        .collect()
}

/// The public traces beside the checkout (`../shared/traces`).
pub fn public_traces() -> PathBuf {
    std::env::var_os("FLEETSIM_TRACE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces"))
}

/// The row of job `name`.
pub fn job<'a>(out: &'a RunOutput, name: &str) -> &'a JobRow {
    out.jobs
        .as_ref()
        .unwrap()
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

/// (start s, finish s) of a job, with milliseconds as integers divided exactly.
pub fn span(out: &RunOutput, name: &str) -> (Option<u64>, Option<u64>) {
    let r = job(out, name);
    (r.start.map(|t| t.0 / 1000), r.finish.map(|t| t.0 / 1000))
}

/// Final state of a job.
pub fn state(out: &RunOutput, name: &str) -> FinalState {
    job(out, name).state
}

/// Fleet allocated occupancy (allocation rate) as a fraction: what the field cases' hand
/// arithmetic computes (useful occupancy also leaves out lost work and grace).
pub fn allocated_occupancy(out: &RunOutput) -> f64 {
    out.summary.allocated_occupancy.expect("defined")
}

/// (start s, finish s) of a job's last run (after preemptions or failures).
pub fn last_span(out: &RunOutput, name: &str) -> (Option<u64>, Option<u64>) {
    let r = job(out, name);
    (
        r.last_start.map(|t| t.0 / 1000),
        r.finish.map(|t| t.0 / 1000),
    )
}

/// First-start wait (first start − submit) of a job, whole seconds.
pub fn first_start_wait_s(out: &RunOutput, name: &str) -> Option<u64> {
    let r = job(out, name);
    r.start.map(|s| (s - r.submit).0 / 1000)
}

/// The fleet and workload of a hand-computed case: one cell `c` of the nodes `names`, each of
/// `gpus` × `accelerator`, reading the native trace `jobs.csv` beside the scenario.
pub fn one_cell(names: &[&str], accelerator: &str, gpus: u32) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!(
        "[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [{}]\naccelerator = \"{accelerator}\"\ngpus = {gpus}\n[workload]\ntrace = {{ format = \"native\", path = \"jobs.csv\" }}\n",
        names.join(", ")
    )
}

/// [`one_cell`] with first-fit placement (`[policy] placement = "first-fit"`), so that a case
/// knows which node each job takes.
pub fn one_cell_first_fit(names: &[&str], accelerator: &str, gpus: u32) -> String {
    one_cell(names, accelerator, gpus) + "[policy]\nplacement = \"first-fit\"\n"
}

/// Node `n{i}` of a policy-crate fleet: cell 0, block 0, an NVLink domain of its own, model 0,
/// `gpus` accelerators, 16 cores and 64,000 MiB. Change fields with `NodeSpec { …, ..node(i, g) }`.
pub fn node(i: usize, gpus: u32) -> NodeSpec {
    NodeSpec {
        name: format!("n{i}"),
        cell: CellId(0),
        block: 0,
        domain: i as u32,
        model: Some(ModelId(0)),
        gpus,
        cpu_milli: 16_000,
        mem_mib: 64_000,
    }
}

/// A policy-crate fleet of `nodes`, its cells and models named in id order.
pub fn fleet_state(cells: &[&str], models: &[&str], nodes: Vec<NodeSpec>) -> FleetState {
    FleetState::new(
        cells.iter().map(|c| c.to_string()).collect(),
        models.iter().map(|m| m.to_string()).collect(),
        nodes,
    )
    .unwrap()
}
