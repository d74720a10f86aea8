//! The `fleetsim` command line (clap): `run`, `validate`, `bench`, `trace` (in [`trace`]),
//! and the studies `sweep`, `merge`, `compare`, `compact`, `check`.

/// `println!` for the CLI's standard output: a reader that closed the pipe early
/// (`fleetsim run | head -1`) ends the process quietly with status 0 instead of a panic.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for the CLI's standard output (see `outln!`).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

pub mod bench;
pub mod check;
pub mod common;
pub mod compare;
pub mod kueue;
pub mod sweep;
pub mod trace;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::run::{run_scenario, RunError, RunOptions};
use crate::scenario::{self, Loaded, TraceDir};

/// fleetsim: what happens to occupancy and wait time if we schedule this way instead of that
/// way?
#[derive(Debug, Parser)]
#[command(name = "fleetsim", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario (the embedded default when none is given) and write summary.json,
    /// jobs.csv and timeseries.csv.
    Run {
        /// Scenario file (TOML). Omit to run the embedded default scenario.
        scenario: Option<PathBuf>,
        /// Output directory (default: out/NAME, NAME being the scenario name).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seed for every RNG stream (overrides the scenario's).
        #[arg(long)]
        seed: Option<u64>,
        /// Directory of public traces (default: $FLEETSIM_TRACE_DIR, else traces/public).
        #[arg(long)]
        trace_dir: Option<PathBuf>,
        /// Do not print the summary table (standard output stays empty; warnings and the
        /// one `wrote …` line still go to standard error).
        #[arg(long, short)]
        quiet: bool,
        /// Formats of the per-job and time-series outputs, comma-separated: `csv`
        /// (jobs.csv, timeseries.csv), `parquet` (jobs.parquet, timeseries.parquet), `batsim`
        /// (batsim_jobs.csv, Batsim's jobs table for evalys). Overrides `[metrics] outputs`
        /// (default: the scenario's, else csv).
        #[arg(long, value_delimiter = ',', value_parser = parse_format)]
        format: Vec<scenario::OutputFormat>,
    },
    /// Run the bench workloads once each and print wall time, jobs/s, events/s, peak memory
    /// and time per job, with growth curves over job count and fleet size.
    Bench {
        /// Smaller sizes (100k jobs), for a quick look.
        #[arg(long)]
        quick: bool,
        /// Run the main table's rows one at a time instead of two at once (one per core).
        /// Slower; a run beside another measured 6–8 % more CPU time on the 2-core VM.
        #[arg(long)]
        serial: bool,
        /// Internal: measure one workload in this process and print it as JSON.
        #[arg(long, hide = true)]
        child: Option<String>,
        /// Internal: jobs for --child.
        #[arg(long, hide = true, default_value_t = 1_000_000)]
        jobs: u64,
        /// Internal: nodes for --child (default: the workload's own fleet size).
        #[arg(long, hide = true)]
        nodes: Option<u32>,
    },
    /// Run the cartesian product of a scenario's sweep axes and seeds in parallel (or one
    /// shard of it) and write one row per run to DIR/runs.csv.
    Sweep(sweep::SweepArgs),
    /// Join the output directories of a sweep's shards.
    Merge(sweep::MergeArgs),
    /// Run several policies on the same workload and seeds; report means, paired differences
    /// and 95 % confidence intervals, with plots (report.html, report.md).
    Compare(compare::CompareArgs),
    /// Find the smallest fleet scale factor that still meets goals (Borg-style compaction).
    Compact(compare::CompactArgs),
    /// Compare a run with a committed baseline: exit 0 when every tracked metric is within
    /// tolerance, 1 on a regression (--update rewrites the baseline).
    Check(check::CheckArgs),
    /// Check a scenario: parse it, build its fleet and read its whole workload, reporting the
    /// first error with file, line and field.
    Validate {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Directory of public traces (default: $FLEETSIM_TRACE_DIR, else traces/public).
        #[arg(long)]
        trace_dir: Option<PathBuf>,
    },
    /// Print the JSON Schema of a document: `scenario`, `summary` (a run's summary.json) or
    /// `inflation-summary` (inflation mode's); the committed copies are in schemas/.
    Schema {
        /// `scenario`, `summary` or `inflation-summary`.
        kind: String,
    },
    /// Inspect or convert a trace file.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Kueue: simulate manifests on workloads (would my Kueue admit this, when, and why?).
    #[command(subcommand)]
    Kueue(kueue::KueueCommand),
}

/// The error and its causes joined by `: `, leaving out a cause whose text the previous
/// message already ends with (errors here include their source in their own message).
pub fn render_error(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Exit code for bad input (scenario, trace, arguments).
pub const EXIT_BAD_INPUT: i32 = 2;

/// True when the error is the input's fault (exit code 2) rather than a failure of the run.
pub fn is_bad_input(e: &anyhow::Error) -> bool {
    use crate::engine::EngineError;
    let engine_input = |e: &EngineError| {
        matches!(
            e,
            EngineError::Trace(_)
                | EngineError::BadJob { .. }
                | EngineError::Unsorted { .. }
                | EngineError::TooManyIntervals { .. }
        )
    };
    e.chain().any(|c| {
        match c.downcast_ref::<RunError>() {
            Some(
                RunError::Scenario(_)
                | RunError::Build(_)
                | RunError::Trace(_)
                | RunError::OutputIsInput { .. }
                | RunError::OutIsNotADirectory { .. }
                | RunError::InputInsideOutDir { .. },
            ) => return true,
            Some(RunError::Engine(inner)) if engine_input(inner) => return true,
            _ => {}
        }
        c.downcast_ref::<scenario::ScenarioError>().is_some()
            || c.downcast_ref::<scenario::kueue::KueueError>().is_some()
            || c.downcast_ref::<crate::study::BadInput>().is_some()
            || c.downcast_ref::<crate::fleet::build::BuildError>()
                .is_some()
            || c.downcast_ref::<crate::workload::TraceError>().is_some()
            || c.downcast_ref::<EngineError>().is_some_and(engine_input)
    })
}

/// `--format`'s values.
fn parse_format(s: &str) -> std::result::Result<scenario::OutputFormat, String> {
    scenario::OutputFormat::parse(s).ok_or_else(|| {
        format!("unknown output format `{s}`: expected `csv`, `parquet` or `batsim`")
    })
}

fn load(path: Option<&PathBuf>) -> Result<Loaded> {
    Ok(match path {
        Some(p) => scenario::load(p)?,
        None => scenario::parse(
            scenario::DEFAULT_SCENARIO,
            "<embedded default scenario>",
            PathBuf::from("."),
        )?,
    })
}

/// Runs the parsed command line.
///
/// # Errors
/// Any error of the command, with context naming what failed.
pub fn main(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Trace(cmd) => trace::run(cmd),
        Command::Kueue(cmd) => kueue::run(cmd),
        Command::Run {
            scenario,
            out,
            seed,
            trace_dir,
            quiet,
            format,
        } => {
            let mut loaded = load(scenario.as_ref())?;
            if !format.is_empty() {
                let mut f = format;
                f.sort();
                f.dedup();
                loaded.scenario.metrics.outputs = f;
            }
            let out = out.unwrap_or_else(|| PathBuf::from("out").join(&loaded.scenario.name));
            let opts = RunOptions {
                seed,
                trace_dir: TraceDir::resolve(trace_dir),
                out_dir: Some(out.clone()),
                keep_rows: true,
            };
            let started = Instant::now();
            if loaded.scenario.mode == scenario::Mode::Inflation {
                let summary = crate::run::run_inflation(&loaded, &opts)
                    .with_context(|| format!("running scenario `{}`", loaded.scenario.name))?;
                if !quiet {
                    out!("{}", crate::inflation::report::table(&summary));
                }
                // Every file it wrote: attempts-<policy>-<seed>.csv too when asked for.
                let files = crate::run::output_files(&loaded, opts.seed)
                    .into_iter()
                    .filter(|n| !n.starts_with('.') && out.join(n).exists())
                    .collect::<Vec<_>>()
                    .join(",");
                errln!(
                    "wrote {}/{{{files}}} in {:.2} s",
                    out.display(),
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            let bar = progress_bar();
            let mut on_progress = |jobs: u64, t: fleetsim_policies::SimTime| {
                bar.set_message(format!(
                    "{jobs} jobs submitted, simulated {:.2} days",
                    t.as_secs_f64() / 86_400.0
                ));
                bar.tick();
            };
            let output = run_scenario(&loaded, &opts, &mut on_progress)
                .with_context(|| format!("running scenario `{}`", loaded.scenario.name))?;
            bar.finish_and_clear();
            if !quiet {
                out!("{}", crate::report::table::render(&output.summary));
            }
            for w in &output.warnings {
                errln!("warning: {w}");
            }
            if output.summary.jobs.submitted == 0 {
                errln!("warning: the workload has no job: the trace has no rows, or every row was skipped (see summary.json skipped_rows)");
            }
            let files = crate::run::output_files(&loaded, opts.seed)
                .into_iter()
                .filter(|n| !n.ends_with(".tmp") && out.join(n).exists())
                .collect::<Vec<_>>()
                .join(",");
            errln!(
                "wrote {}/{{{files}}} in {:.2} s",
                out.display(),
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Bench {
            quick,
            serial,
            child,
            jobs,
            nodes,
        } => bench::main(child, jobs, nodes, quick, serial),
        Command::Sweep(a) => sweep::sweep(a),
        Command::Merge(a) => sweep::merge(a),
        Command::Compare(a) => compare::compare(a),
        Command::Compact(a) => compare::compact(a),
        Command::Check(a) => check::check(a),
        Command::Schema { kind } => {
            let k = crate::schemas::Kind::parse(&kind).map_err(crate::study::BadInput)?;
            out!("{}", crate::schemas::schema_text(k));
            Ok(())
        }
        Command::Validate {
            scenario,
            trace_dir,
        } => {
            let loaded = load(Some(&scenario))?;
            let trace_dir = TraceDir::resolve(trace_dir);
            let fleet = crate::whatif::fleet::build(&loaded, &trace_dir)?.built;
            // Quota flavors and node events name the fleet's models and nodes.
            crate::scenario::policies::extensions(&loaded, &fleet.state)?;
            crate::engine::node_changes::node_changes(&loaded, &fleet.state)?;
            // `[serving]`: replica shapes against the nodes, the demand (a trace demand's file).
            crate::run::serving_plan(&loaded, &fleet.state, &trace_dir)?;
            // `[failures]`: hot spares against the cells' sizes, maintenance cells and nodes,
            // and the replayed timeline file (generating the timeline is cheap; its origin
            // does not matter for validation).
            crate::reliability::spare_nodes(&loaded, &fleet.state)?;
            crate::reliability::timeline(
                &loaded,
                &fleet.state,
                loaded.scenario.seed,
                &trace_dir,
                None,
            )?;
            if loaded.scenario.mode == scenario::Mode::Inflation {
                let t = loaded
                    .scenario
                    .workload
                    .trace
                    .as_ref()
                    .expect("validated: a pod list");
                let path =
                    loaded.resolve_path("workload.trace", &t.path, &t.public_path, &trace_dir)?;
                let pods = crate::workload::alibaba_openb::read_pod_shapes(&path)?;
                outln!(
                    "{}: ok — {} nodes, {} GPUs; {} pods (inflation)",
                    scenario.display(),
                    fleet.state.nodes().len(),
                    fleet.gpus_by_model.values().sum::<u64>(),
                    pods.len()
                );
                return Ok(());
            }
            // `[elastic]`: the application models, as a run reads them.
            let elastic = crate::run::elastic_config(&loaded, &fleet.state, &trace_dir)?;
            let fleet_gpus: u64 = fleet
                .state
                .nodes()
                .iter()
                .filter(|n| n.schedulable)
                .map(|n| u64::from(n.gpus))
                .sum();
            let mut stream = crate::run::open_workload(&loaded, &trace_dir, loaded.scenario.seed)?;
            let mut jobs = 0u64;
            let mut with_limit = 0u64;
            let mut previous = fleetsim_policies::SimTime::ZERO;
            let mut first: Option<fleetsim_policies::SimTime> = None;
            let topology = loaded
                .scenario
                .policy
                .topology
                .as_ref()
                .map(|t| t.to_spec());
            let mut never_fit: std::collections::BTreeMap<&'static str, u64> = Default::default();
            let mut usable = crate::fleet::usable::Usability::new(&fleet.state, &fleet.autoscaling);
            for j in stream.by_ref() {
                let j = j?;
                usable.observe(&j);
                with_limit += u64::from(j.time_limit.is_some());
                // As the engine refuses it on arrival.
                if loaded.scenario.elastic.is_none()
                    && matches!(
                        j.elastic.as_deref(),
                        Some(crate::workload::ElasticSpec::Sized(_))
                    )
                {
                    return Err(crate::study::BadInput(format!(
                        "job `{}` (input #{jobs}): a row with `min_gpus`, `max_gpus`, `work_gpu_s`, `throughput` is an elastic job: it needs the scenario's `[elastic]` table (`allocator = \"grow-idle\"` or `\"fixed\"`)",
                        j.name
                    ))
                    .into());
                }
                if j.elastic.is_some() && j.time_limit.is_some() || elastic_queue_limit(&loaded, &j)
                {
                    return Err(crate::study::BadInput(format!(
                        "job `{}` (input #{jobs}): an elastic job under a queue time limit (the queue's `default_time_limit_s`, as capped by its `max_time_limit_s`): time limits do not apply to elastic jobs, whose length follows from their sizes",
                        j.name
                    ))
                    .into());
                }
                let never = match (&elastic, j.elastic.as_deref()) {
                    // A sized job's min is a gang of one-GPU tasks of the scheduler.
                    (Some(cfg), Some(e)) => elastic_never_fits(cfg, e, fleet_gpus)
                        .map_err(|m| {
                            crate::study::BadInput(format!("job `{}` (input #{jobs}): {m}", j.name))
                        })?
                        .or_else(|| {
                            matches!(e, crate::workload::ElasticSpec::Sized(_))
                                .then(|| never_fits(&fleet.state, &j, topology))
                                .flatten()
                        }),
                    _ => never_fits(&fleet.state, &j, topology),
                };
                if let Some(reason) = never {
                    *never_fit.entry(reason).or_insert(0) += 1;
                }
                j.shape.validate().map_err(|m| {
                    crate::study::BadInput(format!("job `{}` (input #{jobs}): {m}", j.name))
                })?;
                if j.submit < previous {
                    return Err(crate::study::BadInput(format!(
                        "job `{}` (input #{jobs}) is submitted before the previous job; the trace must be sorted (`sort = true` in `[workload.trace]`)",
                        j.name
                    ))
                    .into());
                }
                previous = j.submit;
                first.get_or_insert(j.submit);
                jobs += 1;
            }
            // The run's time series spans at least first to last submit: refuse now what the
            // engine would refuse once it got there (`series_interval_cap`, here for the
            // fleet's cells and models before any tenant or pending reason, the engine's
            // largest cap for this fleet).
            let interval_ms =
                crate::scenario::secs_to_ms(loaded.scenario.metrics.timeseries_interval_s).max(1);
            let intervals = first.map_or(0, |f| previous.0.saturating_sub(f.0) / interval_ms);
            let max = crate::engine::series_interval_cap(crate::metrics::snapshot_bytes(
                fleet.state.cells().len(),
                fleet.state.models().len(),
                0,
                0,
            ));
            if intervals > max {
                return Err(crate::scenario::ScenarioError::Invalid {
                    origin: loaded.origin.clone(),
                    field: "metrics.timeseries_interval_s".into(),
                    message: format!(
                        "the submits span {intervals} intervals of {interval_ms} ms (at most {max} time-series intervals are kept for this fleet): raise it"
                    ),
                }
                .into());
            }
            let skipped = stream.skipped();
            use crate::report::table::count;
            // Autoscaled groups: their nodes and GPUs at `max_nodes`, beside the fixed ones.
            let scaled_nodes: u64 = fleet.autoscaling.iter().map(|g| g.nodes.len() as u64).sum();
            let scaled_gpus: u64 = fleet
                .autoscaling
                .iter()
                .map(|g| g.nodes.len() as u64 * u64::from(g.gpus))
                .sum();
            let fixed_nodes = fleet.state.nodes().len() as u64 - scaled_nodes;
            let fixed_gpus = fleet.gpus_by_model.values().sum::<u64>();
            let (nodes, gpus) = if fleet.autoscaling.is_empty() {
                (count(fixed_nodes, "node"), count(fixed_gpus, "GPU"))
            } else {
                (
                    format!(
                        "{} (+ up to {scaled_nodes} autoscaled)",
                        count(fixed_nodes, "node")
                    ),
                    format!(
                        "{} (+ up to {scaled_gpus} autoscaled)",
                        count(fixed_gpus, "GPU")
                    ),
                )
            };
            outln!(
                "{}: ok — {}, {nodes}, {gpus}; {}{}",
                scenario.display(),
                count(fleet.state.cells().len() as u64, "cell"),
                count(jobs, "job"),
                if skipped.is_empty() {
                    String::new()
                } else {
                    format!(", skipped rows {skipped:?}")
                }
            );
            for w in crate::run::setting_warnings(&loaded, jobs, with_limit) {
                outln!("  warning: {w}");
            }
            for u in usable.unusable() {
                outln!("  warning: {}", u.warning());
            }
            if !never_fit.is_empty() {
                let list: Vec<String> = never_fit.iter().map(|(r, n)| format!("{n} {r}")).collect();
                outln!(
                    "  never fit (rejected at submit): {} jobs: {}",
                    never_fit.values().sum::<u64>(),
                    list.join(", ")
                );
            }
            let gpus = fleet.gpus_by_model.values().sum::<u64>();
            for note in loaded.scenario.notes.iter().cloned().chain(
                crate::scenario::kueue::gpu_quota_notes(&loaded.scenario, gpus),
            ) {
                outln!("  Kueue manifests: {note}");
            }
            Ok(())
        }
    }
}

/// An elastic job against `[elastic]`, and the reason the engine rejects it at submit, if it
/// does. A round-allocated job: its application must have a model; rejected with no GPU in
/// the fleet, or (Tiresias, which runs every job at its trace size) more replicas than the
/// fleet has GPUs. A sized job: none here (its `min` is an ordinary gang of the scheduler,
/// checked as one).
fn elastic_never_fits(
    cfg: &crate::engine::elastic::ElasticConfig,
    e: &crate::workload::ElasticSpec,
    fleet_gpus: u64,
) -> Result<Option<&'static str>, String> {
    use crate::engine::elastic::RoundAllocator;
    use crate::workload::ElasticSpec;
    let need = match (e, cfg.allocator.sizing()) {
        (ElasticSpec::Sized(_), Some(_)) => return Ok(None),
        (ElasticSpec::Sized(_), None) => {
            return Err(format!(
                "a row with `min_gpus`/`max_gpus` under `elastic.allocator = \"{}\"`: it needs `grow-idle` or `fixed`",
                cfg.allocator.name()
            ))
        }
        (ElasticSpec::Trained(_), Some(_)) => {
            return Err(format!(
                "a `pollux` workload row under `elastic.allocator = \"{}\"`: it needs `tiresias` or `pollux`",
                cfg.allocator.name()
            ))
        }
        (ElasticSpec::Trained(t), None) => {
            if !cfg.models.iter().any(|m| m.name() == t.application) {
                let known: Vec<&str> = cfg.models.iter().map(|m| m.name()).collect();
                return Err(format!(
                    "application `{}` has no model in `elastic.models` (models: {})",
                    t.application,
                    known.join(", ")
                ));
            }
            match cfg.allocator {
                RoundAllocator::Tiresias => u64::from(t.replicas),
                _ => 1,
            }
        }
    };
    Ok(match fleet_gpus {
        0 => Some("task_larger_than_any_node"),
        g if g < need => Some("gang_larger_than_cell"),
        _ => None,
    })
}

/// Why job `j` could never start on `fleet` (empty, every node up) by size or topology —
/// the submit-time rejections `validate` reports by count — or `None`. Quota and queue
/// limits are not checked here.
fn never_fits(
    fleet: &fleetsim_policies::FleetState,
    j: &crate::workload::JobSpec,
    topology: Option<fleetsim_policies::topology::TopologySpec>,
) -> Option<&'static str> {
    use fleetsim_policies::{CellId, ModelId, ModelSet, PendingJob, RejectReason};
    let mut models = ModelSet::ANY;
    if j.shape.num_gpu > 0 && !j.gpu_models.is_empty() {
        for name in &j.gpu_models {
            if let Some(i) = fleet.models().iter().position(|m| m == name) {
                models.insert(ModelId(i as u16));
            }
        }
        if models.is_any() {
            return Some(RejectReason::NoAllowedModel.as_str());
        }
    }
    let mut cells: Vec<CellId> = j
        .cells
        .iter()
        .filter_map(|c| fleet.cells().iter().position(|x| &x.name == c))
        .map(|i| CellId(i as u16))
        .collect();
    cells.sort_unstable();
    cells.dedup();
    if !j.cells.is_empty() && cells.is_empty() {
        return Some(RejectReason::NoAllowedCell.as_str());
    }
    let job = PendingJob {
        shape: j.shape,
        tasks: j.tasks,
        models,
        cells,
        split: j.split,
        ..PendingJob::default()
    };
    if job.tasks == 0 {
        return Some(RejectReason::EmptyGang.as_str());
    }
    if job.gang_totals().is_none() {
        return Some(RejectReason::RequestTooLarge.as_str());
    }
    let allowed = || {
        (0..fleet.cells().len())
            .map(|c| CellId(c as u16))
            .filter(|&c| job.allows_cell(c))
    };
    // A job whose tasks take the node's shape is judged by its members in each cell.
    let gang = |c: CellId| {
        fleetsim_policies::placement::split::members_in(fleet, c, &job)
            .map_or((job.tasks, job.shape), |(k, m)| {
                (job.tasks.saturating_mul(k), m)
            })
    };
    if !allowed().any(|c| fleet.task_fits_some_node(c, &gang(c).1, models)) {
        return Some(RejectReason::TaskLargerThanAnyNode.as_str());
    }
    if !allowed().any(|c| {
        let (n, shape) = gang(c);
        fleet.can_ever_fit(c, &shape, models, n)
    }) {
        return Some(RejectReason::GangLargerThanCell.as_str());
    }
    if !fleetsim_policies::placement::split::feasible(fleet, &job, topology) {
        return Some(RejectReason::TopologyInfeasible.as_str());
    }
    None
}

fn progress_bar() -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
            .expect("static template"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// Writes to standard output; a closed pipe ends the process with status 0 (the reader has
/// what it wanted; every output file is written atomically before anything is printed).
///
/// # Panics
/// Never: other write errors are ignored, as `print!` would have panicked on them.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let r = out.write_fmt(args).and_then(|()| out.flush());
    if let Err(e) = r {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

/// Whether elastic job `j` gets a time limit from its queue's `default_time_limit_s`, as the
/// engine resolves its queue (`queue_name`, then a queue's name or one of its
/// `local_queues`): the engine refuses such a job on arrival.
fn elastic_queue_limit(loaded: &crate::scenario::Loaded, j: &crate::workload::JobSpec) -> bool {
    if j.elastic.is_none() {
        return false;
    }
    let name = crate::engine::queue_name(j, loaded.scenario.workload.queues);
    loaded
        .scenario
        .queues
        .iter()
        .find(|q| q.name == name || q.local_queues.iter().any(|l| l == name))
        .is_some_and(|q| q.default_time_limit_s.is_some())
}
