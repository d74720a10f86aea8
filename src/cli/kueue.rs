//! `fleetsim kueue simulate`: would my Kueue admit this, when, and why? Kueue manifests
//! (queues, cohorts, flavors, priority classes, a Configuration) and workloads (Job, JobSet,
//! RayJob, Workload objects: [`crate::scenario::kueue::workloads`]; or a trace whose queue
//! column names LocalQueues) run as a scenario; the account per workload and per
//! ClusterQueue is [`crate::report::kueue`].
//!
//! The fleet is `--fleet FILE` (a TOML file with `[[fleet.cells]]`, and optionally `[policy]`,
//! `[metrics]`, `[startup]`, `[failures]`, …), else derived from the manifests: per
//! ResourceFlavor, nodes holding the nominal quota all ClusterQueues and Cohorts give it
//! (accelerators on the flavor model's preset node, or 8 per node; CPU and memory at least
//! the quota's); said in the output. `[policy]` defaults to Kueue's order within a
//! ClusterQueue (priority, then submit time); the manifests set the rest (admission order,
//! preemption, fungibility: `scenario::kueue::merge`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::report::kueue::{account, render, WorkloadRef};
use crate::run::RunOptions;
use crate::scenario::kueue::{self as k, workloads};
use crate::scenario::{TraceDir, TraceFormat};

/// `fleetsim kueue …` commands.
#[derive(Debug, Subcommand)]
pub enum KueueCommand {
    /// Simulate Kueue manifests on workloads: per workload its admission time, flavor,
    /// preemptions and pending reasons in Kueue's terms; a summary per ClusterQueue.
    Simulate(SimulateArgs),
}

/// `fleetsim kueue simulate`'s arguments.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Kueue manifests: files or directories of `*.yaml`/`*.yml` (ClusterQueues, Cohorts,
    /// LocalQueues, ResourceFlavors, WorkloadPriorityClasses, PriorityClasses, a Kueue
    /// Configuration).
    #[arg(long, required = true, num_args = 1..)]
    pub manifests: Vec<PathBuf>,
    /// Workloads: Job, JobSet, RayJob or Workload objects (files or directories).
    #[arg(long, num_args = 1.., required_unless_present = "trace")]
    pub workload: Vec<PathBuf>,
    /// Instead of --workload: a trace whose queue column names LocalQueues.
    #[arg(long, conflicts_with = "workload", requires = "trace_format")]
    pub trace: Option<PathBuf>,
    /// The trace's format (`native`, `slurm-sacct`, …).
    #[arg(long, value_parser = super::trace::parse_format)]
    pub trace_format: Option<TraceFormat>,
    /// A TOML file with the fleet (`[[fleet.cells]]`) and optionally `[policy]`,
    /// `[metrics]`, `[startup]`, … (default: nodes derived from the nominal quota).
    #[arg(long)]
    pub fleet: Option<PathBuf>,
    /// Run time of a workload without a `fleetsim.dev/runtime` annotation: a duration
    /// (`90s`, `30m`, `2h`).
    #[arg(long, value_name = "DURATION")]
    pub default_runtime: Option<String>,
    /// How long the cluster autoscaler takes to bring nodes for a ProvisioningRequest
    /// admission check (a duration), for the nodes derived for the flavors it guards.
    #[arg(long, value_name = "DURATION")]
    pub provisioning_delay: Option<String>,
    /// Seed of the run's random streams.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the run's outputs (summary.json, jobs.csv, …) to this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Directory of public traces (for `--fleet` files that name machine lists).
    #[arg(long)]
    pub trace_dir: Option<PathBuf>,
}

/// Runs a `kueue` command.
///
/// # Errors
/// Bad input (a manifest, workload, fleet file or option, naming file, line and field) or
/// a failed run.
pub fn run(cmd: KueueCommand) -> Result<()> {
    match cmd {
        KueueCommand::Simulate(a) => {
            let (text, json) = simulate(&a)?;
            if a.json {
                outln!("{json}");
            } else {
                out!("{text}");
            }
            Ok(())
        }
    }
}

/// The workloads written as a native trace for the run, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new() -> Result<TempFile> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!(
            "fleetsim-kueue-{}-{nanos}.jsonl",
            std::process::id()
        ));
        Ok(TempFile(p))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn bad(m: String) -> anyhow::Error {
    crate::study::BadInput(m).into()
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("{}", p.display()))
}

/// Runs the simulation: (the text account, the JSON account).
///
/// # Errors
/// As [`run`].
pub fn simulate(a: &SimulateArgs) -> Result<(String, String)> {
    let cfg = k::load_paths(&a.manifests)?;
    let quota = cfg.quota();
    let default_runtime_ms = a
        .default_runtime
        .as_deref()
        .map(|d| k::go_duration_ms(d).map_err(|m| bad(format!("--default-runtime: {m}"))))
        .transpose()?;
    let tmp = TempFile::new()?;
    // The workloads as a native trace, in submit order (ties in file order).
    let (trace_file, trace_format, mut refs, jobs) = match &a.trace {
        Some(t) => (
            absolute(t)?,
            a.trace_format
                .expect("clap: --trace requires --trace-format"),
            None,
            None,
        ),
        None => {
            let mut ws = workloads::read(
                &a.workload,
                &cfg,
                &workloads::ReadOptions { default_runtime_ms },
            )?;
            ws.sort_by_key(|w| w.job.submit);
            let path = tmp.0.clone();
            let file = std::fs::File::create(&path).context("writing the workloads")?;
            crate::workload::native::write_jsonl(ws.iter().map(|w| &w.job), file)
                .context("writing the workloads")?;
            let refs: Vec<WorkloadRef> = ws
                .iter()
                .map(|w| WorkloadRef {
                    tas_required: w.tas_required.clone(),
                    ..workload_ref(
                        &cfg,
                        w.id(),
                        w.local_queue
                            .as_ref()
                            .map(|q| format!("{}/{q}", w.namespace)),
                        w.cluster_queue.clone(),
                        w.notes.clone(),
                    )
                })
                .collect();
            // The run takes the jobs as read (the native trace cannot carry a topology
            // constraint); the file stands for them in the scenario.
            let jobs = ws.iter().map(|w| w.job.clone()).collect();
            (path, TraceFormat::Native, Some(refs), Some(jobs))
        }
    };
    // The scenario: the fleet file's tables, or a fleet derived from the quota.
    let (mut table, fleet_desc, base_dir, origin) = match &a.fleet {
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("{}: cannot read the fleet file", f.display()))?;
            let t: toml::Table =
                toml::from_str(&text).map_err(|e| bad(format!("{}: {e}", f.display())))?;
            for key in ["workload", "kueue", "queues", "cohorts", "flavors"] {
                if t.contains_key(key) {
                    return Err(bad(format!(
                        "{}: `{key}` is not read from the fleet file: the workloads come from --workload or --trace, the queues, cohorts and flavors from --manifests",
                        f.display()
                    )));
                }
            }
            let dir = absolute(f)?
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            (
                t,
                format!("{} (--fleet)", f.display()),
                dir,
                f.display().to_string(),
            )
        }
        None => {
            let delay_ms = a
                .provisioning_delay
                .as_deref()
                .map(|d| {
                    k::go_duration_ms(d).map_err(|m| bad(format!("--provisioning-delay: {m}")))
                })
                .transpose()?;
            let (fleet, desc) = derive_fleet(&quota, delay_ms)?;
            let mut t = toml::Table::new();
            t.insert("fleet".into(), toml::Value::Table(fleet));
            (t, desc, std::env::current_dir()?, "<kueue simulate>".into())
        }
    };
    let manifests: Vec<toml::Value> = a
        .manifests
        .iter()
        .map(|p| absolute(p).map(|p| toml::Value::String(p.display().to_string())))
        .collect::<Result<_>>()?;
    table.insert("name".into(), "kueue-simulate".into());
    table.insert("seed".into(), toml::Value::Integer(a.seed as i64));
    let mut kueue = toml::Table::new();
    kueue.insert("paths".into(), toml::Value::Array(manifests));
    table.insert("kueue".into(), toml::Value::Table(kueue));
    let mut trace = toml::Table::new();
    trace.insert("format".into(), trace_format.name().into());
    trace.insert("path".into(), trace_file.display().to_string().into());
    trace.insert("sort".into(), true.into());
    let mut workload = toml::Table::new();
    workload.insert("trace".into(), toml::Value::Table(trace));
    table.insert("workload".into(), toml::Value::Table(workload));
    let mut notes = Vec::new();
    let policy = table
        .entry("policy")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let Some(p) = policy.as_table_mut() {
        if !p.contains_key("queue_order") {
            // Kueue orders a ClusterQueue's workloads by priority, then creation time.
            p.insert("queue_order".into(), "priority".into());
        }
    }
    let loaded = crate::scenario::parse_value(toml::Value::Table(table), &origin, base_dir)?;
    let opts = RunOptions {
        seed: Some(a.seed),
        trace_dir: TraceDir::resolve(a.trace_dir.clone()),
        out_dir: a.out.clone(),
        keep_rows: true,
    };
    let out = crate::run::run_scenario_recorded(&loaded, &opts, jobs)
        .context("running the Kueue simulation")?;
    notes.extend(
        out.warnings
            .iter()
            .map(|w| w.strip_prefix("Kueue manifests: ").unwrap_or(w).to_string()),
    );
    let rows = out.jobs.as_deref().unwrap_or(&[]);
    let refs: Vec<WorkloadRef> = match refs.take() {
        Some(r) => r,
        // A trace: each job's queue names its LocalQueue.
        None => rows
            .iter()
            .map(|r| {
                let lq = cfg
                    .local_queues
                    .values()
                    .find(|l| cfg.local_queue_name(l) == r.queue);
                workload_ref(
                    &cfg,
                    r.name.clone(),
                    lq.map(|l| format!("{}/{}", l.namespace, l.name)),
                    lq.map(|l| l.cluster_queue.clone()).or_else(|| {
                        cfg.cluster_queues
                            .contains_key(&r.queue)
                            .then(|| r.queue.clone())
                    }),
                    Vec::new(),
                )
            })
            .collect(),
    };
    let acc = account(fleet_desc, notes, &refs, rows, &out.result);
    let json = serde_json::to_string_pretty(&acc)?;
    Ok((render(&acc), json))
}

fn workload_ref(
    cfg: &k::KueueConfig,
    id: String,
    local_queue: Option<String>,
    cluster_queue: Option<String>,
    notes: Vec<String>,
) -> WorkloadRef {
    let cq = cluster_queue
        .as_ref()
        .and_then(|q| cfg.cluster_queues.get(q));
    WorkloadRef {
        id,
        local_queue,
        cohort: cq.and_then(|q| q.cohort.clone()),
        flavors: cq.map_or(Vec::new(), |q| {
            q.resource_groups
                .iter()
                .flat_map(|g| g.flavors.iter().map(|f| f.flavor.clone()))
                .collect()
        }),
        provisioning_checks: cq.map_or(Vec::new(), |q| {
            q.admission_checks
                .iter()
                .filter(|(check, _)| {
                    cfg.admission_checks
                        .get(check)
                        .is_some_and(|ac| ac.controller == k::checks::PROVISIONING_CONTROLLER)
                })
                .map(|(check, _)| check.clone())
                .collect()
        }),
        cluster_queue,
        notes,
        tas_required: None,
    }
}

/// Nodes holding the manifests' nominal quota, one node group per ResourceFlavor (see the
/// module docs), as a `[fleet]` table, and its description. A flavor whose nodes a
/// ProvisioningRequest check provisions is an autoscaled group of as many nodes (none at
/// the start), each scale-up taking `provisioning_delay_ms`.
///
/// # Errors
/// Bad input: no quota at all, a flavor whose model is not in the accelerator catalog, or
/// a provisioned flavor without a delay.
pub fn derive_fleet(
    q: &k::KueueQuota,
    provisioning_delay_ms: Option<u64>,
) -> Result<(toml::Table, String)> {
    // Per flavor: nominal accelerators, cores, GiB over every queue and cohort.
    let mut totals: BTreeMap<&str, [f64; 3]> = BTreeMap::new();
    for f in q
        .queues
        .iter()
        .flat_map(|x| &x.flavors)
        .chain(q.cohorts.iter().flat_map(|c| &c.flavors))
    {
        let t = totals.entry(f.name.as_str()).or_insert([0.0; 3]);
        for (i, r) in [f.gpus, f.cpus, f.memory_gib].iter().enumerate() {
            if let Some(r) = r {
                t[i] += r.nominal;
            }
        }
    }
    let mut nodes = Vec::new();
    let mut groups = Vec::new();
    let mut desc = Vec::new();
    for (flavor, [g, c, m]) in totals {
        let spec = q.flavors.iter().find(|f| f.name == flavor);
        let model = spec.and_then(|f| f.models.first().cloned());
        let mut node = toml::Table::new();
        node.insert("name_prefix".into(), flavor.into());
        if g > 0.0 {
            let (model, assumed) = match model {
                Some(m) => (m, false),
                None => ("H100".to_string(), true),
            };
            if crate::catalog::lookup(&model).is_err() {
                return Err(bad(format!(
                    "ResourceFlavor {flavor}: its accelerator `{model}` is not in fleetsim's catalog; give the nodes with --fleet"
                )));
            }
            let preset = crate::catalog::PRESETS
                .iter()
                .find(|p| p.accelerator == model);
            let per = preset.map_or(8, |p| p.gpus);
            let count = (g / f64::from(per)).ceil().max(1.0) as u32;
            let cpu_milli = ((c / f64::from(count)).ceil() * 1000.0) as u64;
            let mem_mib = ((m / f64::from(count)).ceil() * 1024.0) as u64;
            match preset {
                Some(p) => {
                    node.insert("preset".into(), p.name.into());
                    if cpu_milli > p.cpu_milli {
                        node.insert("cpu_milli".into(), (cpu_milli as i64).into());
                    }
                    if mem_mib > p.mem_mib {
                        node.insert("mem_mib".into(), (mem_mib as i64).into());
                    }
                }
                None => {
                    node.insert("accelerator".into(), model.clone().into());
                    node.insert("gpus".into(), i64::from(per).into());
                    node.insert("cpu_milli".into(), (cpu_milli.max(96_000) as i64).into());
                    node.insert("mem_mib".into(), (mem_mib.max(1 << 20) as i64).into());
                }
            }
            node.insert("count".into(), i64::from(count).into());
            desc.push(format!(
                "{count} × {} node(s) of {per} {model} for flavor {flavor} ({g} nominal{})",
                preset.map_or("generic".to_string(), |p| p.name.to_string()),
                if assumed {
                    "; the flavor names no accelerator model: H100 assumed"
                } else {
                    ""
                }
            ));
        } else if c > 0.0 || m > 0.0 {
            let cores = if c > 0.0 { c } else { (m / 4.0).max(1.0) };
            let gib = if m > 0.0 { m } else { cores * 4.0 };
            node.insert("gpus".into(), 0.into());
            node.insert("cpu_milli".into(), ((cores * 1000.0).ceil() as i64).into());
            node.insert("mem_mib".into(), ((gib * 1024.0).ceil() as i64).into());
            node.insert("count".into(), 1.into());
            desc.push(format!(
                "1 CPU node of {cores} cores and {gib} GiB for flavor {flavor}"
            ));
        } else {
            continue;
        }
        match q.provisioned.iter().find(|p| p.flavor == flavor) {
            None => nodes.push(toml::Value::Table(node)),
            Some(p) => {
                let Some(delay) = provisioning_delay_ms else {
                    return Err(bad(format!(
                        "ClusterQueue {}: AdmissionCheck `{}` ({}) provisions flavor {flavor}'s nodes: give --provisioning-delay (how long your cluster autoscaler takes), or the nodes with --fleet",
                        p.cluster_queue, p.check, p.class
                    )));
                };
                let count = node.remove("count").expect("set above");
                let mut group = toml::Table::new();
                group.insert("name".into(), flavor.into());
                group.insert("min_nodes".into(), 0.into());
                group.insert("max_nodes".into(), count);
                let mut d = toml::Table::new();
                d.insert("distribution".into(), "fixed".into());
                d.insert("s".into(), (delay as f64 / 1000.0).into());
                group.insert("provisioning_delay".into(), toml::Value::Table(d));
                node.remove("name_prefix");
                group.insert("node".into(), toml::Value::Table(node));
                groups.push(toml::Value::Table(group));
                if let Some(last) = desc.last_mut() {
                    last.push_str(&format!(
                        ", provisioned on demand for AdmissionCheck `{}` after {} s (--provisioning-delay)",
                        p.check,
                        delay as f64 / 1000.0
                    ));
                }
            }
        }
    }
    if nodes.is_empty() && groups.is_empty() {
        return Err(bad(
            "the manifests give no nominal quota to derive nodes from: give the fleet with --fleet"
                .into(),
        ));
    }
    let mut cell = toml::Table::new();
    cell.insert("name".into(), "kueue".into());
    cell.insert("nodes".into(), toml::Value::Array(nodes));
    if !groups.is_empty() {
        cell.insert("autoscaling".into(), toml::Value::Array(groups));
    }
    let mut fleet = toml::Table::new();
    fleet.insert(
        "cells".into(),
        toml::Value::Array(vec![toml::Value::Table(cell)]),
    );
    Ok((
        fleet,
        format!(
            "derived from the ClusterQueues' and Cohorts' nominal quota (a modelling choice; give --fleet for your nodes): {}",
            desc.join("; ")
        ),
    ))
}
