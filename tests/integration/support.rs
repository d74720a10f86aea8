//! What the integration tests share: writing a scenario and its trace files into a
//! temporary directory and running (or refusing) it; reading a run's rows; the scenario
//! pieces several modules compose (one-cell fleets, the autoscaled group, services); the
//! policy crate's fleets; and the `fleetsim` binary as a command.

use std::path::PathBuf;
use std::process::{Command, Output};

use fleetsim::engine::{FinalState, JobRow};
use fleetsim::run::{run_scenario, RunOptions, RunOutput};
use fleetsim::scenario::{self, TraceDir};
use fleetsim_policies::{CellId, FleetState, ModelId, NodeSpec};

/// Writes `files` (name, contents) and `scenario.toml` into a fresh directory; returns the
/// directory (removed when dropped) and the scenario's path.
pub fn write_scenario(scenario_toml: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let path = dir.path().join("scenario.toml");
    std::fs::write(&path, scenario_toml).unwrap();
    (dir, path)
}

/// Writes `files` (name, contents) and `scenario.toml` into a fresh directory, runs it with
/// every-instant audits on, and returns the output with job rows in memory.
pub fn run(scenario_toml: &str, files: &[(&str, &str)]) -> RunOutput {
    let (_dir, path) = write_scenario(scenario_toml, files);
    let mut loaded = scenario::load(&path).unwrap();
    loaded.scenario.metrics.audit_every_instant = true;
    let opts = run_options(None, true);
    run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap()
}

/// The error of loading scenario `scenario_toml` (written beside `files`), which must be
/// refused at load time.
///
/// # Panics
/// If the scenario loads.
pub fn load_error(scenario_toml: &str, files: &[(&str, &str)]) -> String {
    let (_dir, path) = write_scenario(scenario_toml, files);
    match scenario::load(&path) {
        Ok(_) => panic!("accepted:\n{scenario_toml}"),
        Err(e) => e.to_string(),
    }
}

/// The error of loading or running a scenario that must be refused (with its cause
/// chain), the checks that need the built fleet included.
///
/// # Panics
/// If the scenario loads and runs.
pub fn refusal(scenario_toml: &str, files: &[(&str, &str)]) -> String {
    let (_dir, path) = write_scenario(scenario_toml, files);
    let loaded = match scenario::load(&path) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    let opts = run_options(None, false);
    match run_scenario(&loaded, &opts, &mut |_, _| {}) {
        Err(e) => format!("{e:#}"),
        Ok(_) => panic!("not refused:\n{scenario_toml}"),
    }
}

/// [`run`], writing the outputs to a fresh directory; returns the run and the text of its
/// `timeseries.csv`.
pub fn run_series(scenario_toml: &str, files: &[(&str, &str)]) -> (RunOutput, String) {
    let (dir, path) = write_scenario(scenario_toml, files);
    let loaded = scenario::load(&path).unwrap();
    let out_dir = dir.path().join("out");
    let opts = run_options(Some(out_dir.clone()), true);
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

/// Run options of a test run: the scenario's own seed, the public traces as the trace
/// folder, outputs written to `out_dir` when given, job rows kept in memory when `keep_rows`.
pub fn run_options(out_dir: Option<PathBuf>, keep_rows: bool) -> RunOptions {
    RunOptions {
        seed: None,
        trace_dir: TraceDir(public_traces()),
        out_dir,
        keep_rows,
    }
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

/// Cell `name` of the nodes `names`, each of `gpus` × `accelerator` (a
/// `[[fleet.cells]]` table and its one node group; no workload).
pub fn cell(name: &str, names: &[&str], accelerator: &str, gpus: u32) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!(
        "[[fleet.cells]]\nname = \"{name}\"\n[[fleet.cells.nodes]]\nnames = [{}]\naccelerator = \"{accelerator}\"\ngpus = {gpus}\n",
        names.join(", ")
    )
}

/// `[workload]` reading the native trace `jobs.csv` beside the scenario (queues by tenant).
pub const NATIVE_JOBS: &str = "[workload]\ntrace = { format = \"native\", path = \"jobs.csv\" }\n";

/// [`NATIVE_JOBS`] with every job in one queue (`queues = "single"`).
pub const NATIVE_JOBS_ONE_QUEUE: &str =
    "[workload]\ntrace = { format = \"native\", path = \"jobs.csv\" }\nqueues = \"single\"\n";

/// Cell `c` of one node `n1` of 4 × H100 and [`NATIVE_JOBS_ONE_QUEUE`]: the fleet and
/// workload of the smallest hand-computed cases.
pub fn one_node_4_gpus() -> String {
    cell("c", &["n1"], "H100", 4) + NATIVE_JOBS_ONE_QUEUE
}

/// The fleet and workload of a hand-computed case: one cell `c` of the nodes `names`, each of
/// `gpus` × `accelerator`, reading the native trace `jobs.csv` beside the scenario.
pub fn one_cell(names: &[&str], accelerator: &str, gpus: u32) -> String {
    cell("c", names, accelerator, gpus) + NATIVE_JOBS
}

/// The autoscaled group `burst` of the cell before it (a `[[fleet.cells.autoscaling]]`
/// table): up to `max_nodes` nodes of 4 × H100, none at the start, each joining after
/// `delay` (a `provisioning_delay` inline table) and removed after `idle_s` s idle;
/// `price` per node-hour when given (TOML float text, e.g. `"2.0"`).
pub fn burst_group(max_nodes: u32, delay: &str, price: Option<&str>, idle_s: u32) -> String {
    let price = price.map_or(String::new(), |p| format!("price_per_node_hour = {p}\n"));
    format!(
        "[[fleet.cells.autoscaling]]\nname = \"burst\"\nmin_nodes = 0\nmax_nodes = {max_nodes}\nnode = {{ accelerator = \"H100\", gpus = 4 }}\nprovisioning_delay = {delay}\n{price}scale_down_idle_s = {idle_s}\n"
    )
}

/// A `[[serving.services]]` entry: service `name` of 4-GPU replicas, `priority` when given
/// (default 1000), its desired replicas over time as a demand table (`points`, TOML
/// `[[t_s, replicas], …]`), target utilisation 1 and the autoscaler's delays in seconds.
pub fn service(name: &str, priority: Option<i32>, points: &str, up_s: u32, down_s: u32) -> String {
    let priority = priority.map_or(String::new(), |p| format!("priority = {p}\n"));
    format!(
        "[[serving.services]]\nname = \"{name}\"\n{priority}replica = {{ gpus = 4 }}\ndemand = {{ kind = \"table\", points = {points} }}\nautoscaler = {{ target_utilization = 1.0, scale_up_delay_s = {up_s}, scale_down_delay_s = {down_s} }}\n"
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

/// The `fleetsim` binary of this build, as a command.
pub fn fleetsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
}

/// The repository's root (the `fleetsim` package's folder).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A finished command's exit code, stdout and stderr, for an assertion's message.
pub fn output_text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
