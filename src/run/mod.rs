//! One scenario, end to end: build the fleet, open the workload, run the engine, write the
//! outputs. The CLI and the tests both go through [`run_scenario`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fleetsim_policies::{QueueConfig, SchedulerConfig, SimDuration, SimTime};

use crate::engine::{EngineConfig, JobRow, QueueSettings, RunResult, Simulation};
use crate::fleet::build::BuiltFleet;
#[cfg(feature = "parquet")]
use crate::report::tables::JobsParquet;
use crate::report::Tee;
use crate::report::{jobs_csv::JobsCsv, summary, timeseries};
use crate::scenario::{secs_to_ms, Loaded, Mode, OutputFormat, TraceDir};
use crate::workload::{synthetic, JobStream, TraceError};

pub use crate::run_options::{RunError, RunOptions};

/// What a run produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The summary (also in `summary.json`).
    pub summary: summary::Summary,
    /// The raw result.
    pub result: RunResult,
    /// Job rows, when kept in memory.
    pub jobs: Option<Vec<JobRow>>,
    /// Cell names in cell-id order (the column order of `timeseries.csv`).
    pub cells: Vec<String>,
    /// Accelerator model names in model-id order.
    pub models: Vec<String>,
    /// Settings that had no effect on this run ([`setting_warnings`]) and capacity no job
    /// could use ([`crate::fleet::usable`]), for the CLI and the studies to print.
    pub warnings: Vec<String>,
    /// The `[[metrics.slo]]` results (empty without SLOs), for the time series' `slo_*` columns.
    pub slo: Vec<crate::metrics::slo::SloResult>,
}

impl RunOutput {
    /// The run's time series: every column of `timeseries.csv`, in its order (occupancy,
    /// cells, models, pending reasons, tenants, then `slo_*`, `autoscaling_*` and
    /// `serving_*`), one row per metrics interval.
    pub fn timeseries(&self) -> timeseries::Series {
        full_series(&self.cells, &self.models, &self.result, &self.slo)
    }
}

/// The columns of `timeseries.csv` for a run's result: [`timeseries::series`], then the SLO,
/// autoscaling and serving columns. One function for the CLI's files and the Python
/// package's tables, so that both have the same columns.
fn full_series(
    cells: &[String],
    models: &[String],
    result: &RunResult,
    slo: &[crate::metrics::slo::SloResult],
) -> timeseries::Series {
    let tenants: Vec<String> = result.tenants.iter().map(|t| t.name.clone()).collect();
    let mut series = timeseries::series(cells, models, &tenants, &result.occupancy);
    timeseries::append_slo(&mut series, slo);
    timeseries::append_autoscaling_and_serving(
        &mut series,
        &result.occupancy,
        result.autoscaling.as_ref(),
        result.serving.as_ref(),
    );
    series
}

/// Opens the scenario's workload as a job stream, with the scenario's workload transforms
/// ([`crate::whatif`]) applied.
///
/// # Errors
/// [`RunError`] when the trace path is missing or the file cannot be opened.
pub fn open_workload(
    loaded: &Loaded,
    trace_dir: &TraceDir,
    seed: u64,
) -> Result<Box<dyn JobStream>, RunError> {
    let stream = open_untransformed(loaded, trace_dir, seed)?;
    let spec = &loaded.scenario.transforms.spec;
    Ok(if spec.changes_workload() {
        Box::new(crate::whatif::stream::TransformedStream::new(
            stream, spec, seed,
        ))
    } else {
        stream
    })
}

fn open_untransformed(
    loaded: &Loaded,
    trace_dir: &TraceDir,
    seed: u64,
) -> Result<Box<dyn JobStream>, RunError> {
    let w = &loaded.scenario.workload;
    if let Some(spec) = &w.synthetic {
        return Ok(Box::new(synthetic::generate(spec, seed)));
    }
    let t = w.trace.as_ref().expect("validated: trace or synthetic");
    let path = loaded.resolve_path("workload.trace", &t.path, &t.public_path, trace_dir)?;
    // Validated when the scenario was loaded.
    let (sacct, _) = t
        .sacct_options()
        .map_err(|(f, m)| TraceError::field(&path, 0, f, m))?;
    Ok(crate::workload::open_trace_with(
        t.format, &path, t.sort, &sacct,
    )?)
}

/// A job stream with its first item read ahead (the default origin of generated failures).
struct Peeked {
    first: Option<Result<crate::workload::JobSpec, TraceError>>,
    rest: Box<dyn JobStream>,
}

impl Peeked {
    fn new(mut rest: Box<dyn JobStream>) -> Peeked {
        Peeked {
            first: rest.next(),
            rest,
        }
    }

    /// The first job's submit time (`None`: empty stream or a read error, which the run
    /// reports when it reads it).
    fn first_submit(&self) -> Option<SimTime> {
        match &self.first {
            Some(Ok(j)) => Some(j.submit),
            _ => None,
        }
    }
}

impl Iterator for Peeked {
    type Item = Result<crate::workload::JobSpec, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.first.take().or_else(|| self.rest.next())
    }
}

impl JobStream for Peeked {
    fn trace_start(&self) -> Option<crate::workload::TraceStart> {
        self.rest.trace_start()
    }

    fn skipped(&self) -> crate::workload::Skipped {
        self.rest.skipped()
    }

    fn notes(&self) -> crate::workload::Skipped {
        self.rest.notes()
    }
}

/// Counts the jobs a stream yields and those that carry a time limit (for
/// [`setting_warnings`]), and shows each job to the node groups' usability check
/// ([`crate::fleet::usable`]).
struct LimitCounter {
    rest: Box<dyn JobStream>,
    counts: std::sync::Arc<[std::sync::atomic::AtomicU64; 2]>,
    usable: std::sync::Arc<std::sync::Mutex<crate::fleet::usable::Usability>>,
}

impl Iterator for LimitCounter {
    type Item = Result<crate::workload::JobSpec, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        use std::sync::atomic::Ordering::Relaxed;
        let item = self.rest.next();
        if let Some(Ok(j)) = &item {
            self.counts[0].fetch_add(1, Relaxed);
            if j.time_limit.is_some() {
                self.counts[1].fetch_add(1, Relaxed);
            }
            self.usable
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .observe(j);
        }
        item
    }
}

impl JobStream for LimitCounter {
    fn trace_start(&self) -> Option<crate::workload::TraceStart> {
        self.rest.trace_start()
    }

    fn skipped(&self) -> crate::workload::Skipped {
        self.rest.skipped()
    }

    fn notes(&self) -> crate::workload::Skipped {
        self.rest.notes()
    }
}

/// A warning when the scenario's backfill cannot do anything: backfill reserves from the
/// running jobs' estimated ends, and with `runtime_estimate = "user"` a job's estimate is its
/// time limit (its own, else its queue's `default_time_limit_s`); when none of the `jobs`
/// jobs read carries one (`with_limit` = 0) and no queue sets a default, no reservation can
/// ever be made and the run is the same as with `backfill = "none"`. `None` otherwise.
pub fn backfill_warning(loaded: &Loaded, jobs: u64, with_limit: u64) -> Option<String> {
    use fleetsim_policies::backfill::BackfillKind;
    let s = &loaded.scenario;
    let p = &s.policy;
    let silent = p.backfill != BackfillKind::None
        && p.runtime_estimate == crate::scenario::EstimateSource::User
        && jobs > 0
        && with_limit == 0
        && s.queues.iter().all(|q| q.default_time_limit_s.is_none());
    silent.then(|| {
        format!(
            "backfill = \"{}\" does nothing here: none of the {} carries a time limit and no queue sets default_time_limit_s, so no running job has an estimated end to reserve from (the run equals backfill = \"none\"); give the jobs time limits, a queue a default_time_limit_s, or set runtime_estimate = \"oracle\"",
            p.backfill.as_str(),
            crate::report::table::count(jobs, "job")
        )
    })
}

/// A warning when the scenario's queue order sorts by run-time estimates that no job has:
/// `sjf` and `srtf` order by estimated (remaining) run time, and with
/// `runtime_estimate = "user"` a job's estimate is its time limit (its own, else its queue's
/// `default_time_limit_s`); when none of the `jobs` jobs read carries one (`with_limit` = 0)
/// and no queue sets a default, every estimate ties and the order is the FIFO tie-break.
/// `None` otherwise.
pub fn estimate_order_warning(loaded: &Loaded, jobs: u64, with_limit: u64) -> Option<String> {
    use fleetsim_policies::registry::QueueOrderSpec;
    let s = &loaded.scenario;
    let p = &s.policy;
    let name = match p.queue_order {
        QueueOrderSpec::Sjf {} => "sjf",
        QueueOrderSpec::Srtf {} => "srtf",
        _ => return None,
    };
    let silent = p.runtime_estimate == crate::scenario::EstimateSource::User
        && jobs > 0
        && with_limit == 0
        && s.queues.iter().all(|q| q.default_time_limit_s.is_none());
    silent.then(|| {
        format!(
            "queue_order = \"{name}\" orders by run-time estimates, but none of the {} carries a time limit and no queue sets default_time_limit_s, so every estimate ties and the order is FIFO's (submit time, then input order); give the jobs time limits, a queue a default_time_limit_s, or set runtime_estimate = \"oracle\"",
            crate::report::table::count(jobs, "job")
        )
    })
}

/// A warning when `[policy] wait_for_pods_ready` can do nothing: a job's pods are waited
/// for only while the autoscaler's scan counts it as waiting for a scale-up
/// ([`crate::engine::pods_ready`]); admitted any other way, a job starts with every pod
/// bound (a job that fails or is preempted is admitted again when it restarts). So without
/// an autoscaled group (`[[fleet.cells.autoscaling]]`) no pod is ever late, failures or
/// not, and the run equals one without the setting. `None` otherwise.
pub fn pods_ready_warning(loaded: &Loaded) -> Option<String> {
    let s = &loaded.scenario;
    let w = s.policy.wait_for_pods_ready.as_ref()?;
    s.fleet.cells.iter().all(|c| c.autoscaling.is_empty()).then(|| {
        format!(
            "[policy] wait_for_pods_ready (timeout_s = {}) does nothing here: pods wait only for nodes an autoscaled group provisions, and no cell has [[fleet.cells.autoscaling]], so every job starts with its pods bound and none is ever evicted (the run equals one without wait_for_pods_ready)",
            w.timeout_s
        )
    })
}

/// The warnings of [`backfill_warning`], [`estimate_order_warning`] and
/// [`pods_ready_warning`], in that order.
pub fn setting_warnings(loaded: &Loaded, jobs: u64, with_limit: u64) -> Vec<String> {
    backfill_warning(loaded, jobs, with_limit)
        .into_iter()
        .chain(estimate_order_warning(loaded, jobs, with_limit))
        .chain(pods_ready_warning(loaded))
        .collect()
}

/// Before a run writes into `opts.out_dir`: refuses an output that would overwrite an input,
/// and removes the temporaries a killed earlier run left behind (`.jobs.csv.tmp`, …).
///
/// # Errors
/// [`RunError::OutputIsInput`] (and the errors of resolving the inputs).
fn prepare_out_dir(loaded: &Loaded, opts: &RunOptions) -> Result<(), RunError> {
    if let Some(dir) = &opts.out_dir {
        check_outputs_are_not_inputs(loaded, &opts.trace_dir, dir, opts.seed)?;
        let dests: Vec<PathBuf> = output_files(loaded, opts.seed)
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .map(|n| dir.join(n))
            .collect();
        crate::report::atomic::remove_stale(&dests);
    }
    Ok(())
}

/// Each stage's chosen name for `summary.json`'s `policy` ([`SchedulerSpec::describe`]).
/// When a `[[queues]]` entry sets its own `strategy`, `queueing_strategy` also counts the
/// declared queues by strategy: `default:strict-fifo;queues:best-effort-fifo=11` says the
/// default (for queues not declared) is strict FIFO and all 11 declared queues use
/// best-effort FIFO.
///
/// [`SchedulerSpec::describe`]: fleetsim_policies::SchedulerSpec::describe
fn policy_names(s: &crate::scenario::Scenario) -> BTreeMap<String, String> {
    let mut names = s.policy.describe();
    let default = s.policy.queueing_strategy;
    if s.queues
        .iter()
        .any(|q| q.strategy.is_some_and(|st| st != default))
    {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for q in &s.queues {
            *counts
                .entry(q.strategy.unwrap_or(default).as_str())
                .or_default() += 1;
        }
        let per_queue: Vec<String> = counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
        names.insert(
            "queueing_strategy".into(),
            format!(
                "default:{};queues:{}",
                default.as_str(),
                per_queue.join(",")
            ),
        );
    }
    names
}

/// The engine settings a scenario asks for.
pub fn engine_config(loaded: &Loaded) -> (SchedulerConfig, EngineConfig) {
    let s = &loaded.scenario;
    let p = &s.policy;
    let policies = p.scheduler_config();
    let queues = s
        .queues
        .iter()
        .map(|q| QueueSettings {
            name: q.name.clone(),
            config: QueueConfig {
                strategy: q.strategy.unwrap_or(p.queueing_strategy),
                max_gpu_milli: q.max_gpus.map(|g| (g * 1000.0).round() as u64),
                tier: q.tier.unwrap_or_default(),
                weight_milli: crate::scenario::policies::weight_milli(q.weight),
                preemption: q.preemption.map(|p| p.to_rules()),
                fungibility: q.flavor_fungibility,
            },
            default_time_limit: q.default_time_limit_s.map(|v| SimDuration(secs_to_ms(v))),
            max_time_limit: q.max_time_limit_s.map(|v| SimDuration(secs_to_ms(v))),
            local_queues: q.local_queues.clone(),
        })
        .collect();
    let cfg = EngineConfig {
        mode: s.mode,
        horizon: s.metrics.horizon_s.map(|h| SimTime(secs_to_ms(h))),
        warmup_ms: secs_to_ms(s.metrics.warmup_s),
        interval_ms: secs_to_ms(s.metrics.timeseries_interval_s).max(1),
        audit_every_instant: s.metrics.audit_every_instant,
        queue_mapping: s.workload.queues,
        queues,
        estimate_oracle: p.runtime_estimate == crate::scenario::EstimateSource::Oracle,
        retry_interval: p.retry_interval(),
        round: p.round(),
        checkpoint_interval: p.checkpoint_interval(),
        node_changes: Vec::new(),
        record_preemptions: false,
        record_live: false,
        node_events: Vec::new(),
        startup: None,
        model_speed_permille: Vec::new(),
        reliability: false,
        dispatch_latency: SimDuration(p.dispatch_latency_s.map_or(0, secs_to_ms)),
        reject_unknown_queues: s.kueue.is_some(),
        spares: Vec::new(),
        gang_recovery: p.gang_recovery,
        record_runs: s.metrics.outputs.contains(&OutputFormat::Batsim),
        autoscaling: None,
        wait_for_pods_ready: p.wait_for_pods_ready.as_ref().map(|w| {
            let ms = |v: f64| SimDuration(secs_to_ms(v));
            crate::engine::pods_ready::PodsReadyConfig {
                timeout: ms(w.timeout_s),
                backoff_base: ms(w.backoff_base_s.unwrap_or(
                    fleetsim_policies::spec::WaitForPodsReadySpec::DEFAULT_BACKOFF_BASE_S,
                )),
                backoff_max: ms(w.backoff_max_s.unwrap_or(
                    fleetsim_policies::spec::WaitForPodsReadySpec::DEFAULT_BACKOFF_MAX_S,
                )),
                backoff_limit_count: w.backoff_limit_count,
            }
        }),
        serving: None,
        record_admissions: false,
        elastic: None,
    };
    (policies, cfg)
}

/// The engine's `[elastic]` settings: the allocator, the round and restart delay, and the
/// application models read from every sub-directory of `elastic.models` that holds a
/// `placements.csv` (by name), with the artifact's settings
/// ([`crate::workload::goodput_models::artifact_settings`]).
///
/// # Errors
/// A models directory that does not resolve or holds no model
/// ([`crate::scenario::ScenarioError::Invalid`] naming `elastic.models`), or a model file
/// that cannot be read (its file, line and field).
pub fn elastic_config(
    loaded: &Loaded,
    state: &fleetsim_policies::FleetState,
    trace_dir: &TraceDir,
) -> Result<Option<crate::engine::elastic::ElasticConfig>, RunError> {
    use crate::engine::elastic::{ElasticConfig, RoundAllocator};
    use crate::scenario::elastic::RoundAllocatorKind;
    use crate::workload::goodput_models::{artifact_settings, read_app};
    let Some(e) = &loaded.scenario.elastic else {
        return Ok(None);
    };
    let restart = SimDuration::from_secs_f64_rounded(e.restart_s);
    let sized = match e.allocator {
        RoundAllocatorKind::GrowIdle => Some(RoundAllocator::GrowIdle),
        RoundAllocatorKind::Fixed => Some(RoundAllocator::Fixed),
        RoundAllocatorKind::Tiresias | RoundAllocatorKind::Pollux => None,
    };
    if let Some(allocator) = sized {
        return Ok(Some(ElasticConfig {
            allocator,
            round: SimDuration::ZERO,
            restart,
            models: std::sync::Arc::new(Vec::new()),
        }));
    }
    let Some(models_dir) = &e.models else {
        return Err(crate::scenario::ScenarioError::Invalid {
            origin: loaded.origin.clone(),
            field: "elastic.models".into(),
            message: "required by a round allocator".into(),
        }
        .into());
    };
    // The application models are step times measured on one GPU type: a fleet of several
    // accelerator models would run every job at that one type's speed.
    let kinds: std::collections::BTreeSet<&str> = state
        .nodes()
        .iter()
        .filter(|n| n.gpus > 0)
        .filter_map(|n| n.model.map(|m| state.models()[m.index()].as_str()))
        .collect();
    if kinds.len() > 1 {
        return Err(crate::scenario::ScenarioError::Invalid {
            origin: loaded.origin.clone(),
            field: "fleet.cells".into(),
            message: format!(
                "accelerator models {}: round-allocated jobs (`[elastic]`) run on one accelerator model (the application models are step times measured on one GPU type)",
                kinds.into_iter().collect::<Vec<_>>().join(", ")
            ),
        }
        .into());
    }
    let dir = loaded.resolve_path(
        "elastic.models",
        &models_dir.path,
        &models_dir.public_path,
        trace_dir,
    )?;
    let invalid = |message: String| crate::scenario::ScenarioError::Invalid {
        origin: loaded.origin.clone(),
        field: "elastic.models".into(),
        message,
    };
    let entries =
        std::fs::read_dir(&dir).map_err(|err| invalid(format!("`{}`: {err}", dir.display())))?;
    let mut apps: Vec<std::path::PathBuf> = entries
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.join("placements.csv").is_file())
        .collect();
    apps.sort();
    if apps.is_empty() {
        return Err(invalid(format!(
            "`{}` holds no application model (a sub-directory with placements.csv)",
            dir.display()
        ))
        .into());
    }
    let mut models = Vec::with_capacity(apps.len());
    for a in &apps {
        let name = a
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        models.push(read_app(a, artifact_settings(&name))?);
    }
    models.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(Some(ElasticConfig {
        allocator: match e.allocator {
            RoundAllocatorKind::Tiresias => RoundAllocator::Tiresias,
            RoundAllocatorKind::Pollux => RoundAllocator::Pollux,
            RoundAllocatorKind::GrowIdle | RoundAllocatorKind::Fixed => {
                unreachable!("returned above")
            }
        },
        round: SimDuration(
            e.round_s
                .unwrap_or(crate::scenario::elastic::DEFAULT_ROUND_S)
                * 1000,
        ),
        restart,
        models: std::sync::Arc::new(models),
    }))
}

/// The files a run of `loaded` reads, each with what it is (the scenario field naming it):
/// the scenario file and those it `extends`, the trace (and the PAI job table and header files beside it), machine
/// lists, the failures timeline, Kueue manifests, and the inflation replay logs. Paths the
/// scenario cannot resolve are left out (the run reports them).
pub fn input_files(loaded: &Loaded, trace_dir: &TraceDir) -> Vec<(String, PathBuf)> {
    let s = &loaded.scenario;
    let mut out = Vec::new();
    let origin = Path::new(&loaded.origin);
    if origin.is_file() {
        out.push(("scenario file".to_string(), origin.to_path_buf()));
        // The scenarios it `extends`, as the loader found them (it allows 8 levels).
        let mut at = origin.to_path_buf();
        for _ in 0..8 {
            let Some(rel) = crate::input_cap::read_capped(
                &at,
                crate::input_cap::MAX_SCENARIO_BYTES,
                "scenario file",
            )
            .ok()
            .and_then(|t| t.parse::<toml::Table>().ok())
            .and_then(|t| t.get("extends")?.as_str().map(str::to_string)) else {
                break;
            };
            at = at.parent().unwrap_or(Path::new("")).join(rel);
            out.push(("scenario file it extends".to_string(), at.clone()));
        }
    }
    let mut add = |field: String, path: &Option<String>, public_path: &Option<String>| {
        if let Ok(p) = loaded.resolve_path(&field, path, public_path, trace_dir) {
            out.push((field, p));
        }
    };
    if let Some(t) = &s.workload.trace {
        add("workload.trace".into(), &t.path, &t.public_path);
    }
    for (i, c) in s.fleet.cells.iter().enumerate() {
        if let Some(ml) = &c.machine_list {
            add(
                format!("fleet.cells[{i}].machine_list"),
                &ml.path,
                &ml.public_path,
            );
        }
    }
    if let Some(f) = s.failures.as_ref().and_then(|f| f.timeline.as_ref()) {
        add("failures.timeline".into(), &f.path, &f.public_path);
    }
    if let Some(spec) = &s.inflation {
        if let Some(f) = &spec.order_from {
            add("inflation.order_from".into(), &f.path, &f.public_path);
        }
        for (name, f) in &spec.check_against {
            add(
                format!("inflation.check_against.{name}"),
                &f.path,
                &f.public_path,
            );
        }
    }
    if let Some(k) = &s.kueue {
        let paths = k.resolve(&loaded.base_dir);
        let files = crate::scenario::kueue::manifest_files(&paths).unwrap_or(paths);
        out.extend(
            files
                .into_iter()
                .map(|f| ("kueue manifests".to_string(), f)),
        );
    }
    if let Some(t) = &s.workload.trace {
        if t.format == crate::scenario::TraceFormat::AlibabaPai {
            if let Some((_, trace)) = out.iter().find(|(f, _)| f == "workload.trace") {
                let job_table = trace.with_file_name("pai_job_table.csv");
                let extra = [
                    (
                        "workload.trace (its header file)",
                        trace.with_extension("header"),
                    ),
                    (
                        "workload.trace (its job table)",
                        job_table.with_extension("header"),
                    ),
                    ("workload.trace (its job table)", job_table),
                ];
                out.extend(extra.into_iter().map(|(w, p)| (w.to_string(), p)));
            }
        }
    }
    out
}

/// The names of the files a run of `loaded` writes into its output directory (each also
/// through a temporary `.<name>.tmp` beside it, [`crate::report::atomic`]), the
/// completion marker [`crate::report::outset::MARKER`] (written last) included.
pub fn output_files(loaded: &Loaded, seed: Option<u64>) -> Vec<String> {
    let s = &loaded.scenario;
    let mut names: Vec<String> = if s.mode == Mode::Inflation {
        let mut v: Vec<String> = ["summary.json", "curves.csv", "allocation.svg"]
            .map(String::from)
            .to_vec();
        if let Some(spec) = s.inflation.as_ref().filter(|i| i.attempts_csv) {
            let seeds = crate::inflation::seeds_of(spec, seed.unwrap_or(s.seed));
            for p in &spec.policies {
                for sd in &seeds {
                    v.push(format!("attempts-{}-{sd}.csv", p.as_str()));
                }
            }
        }
        v
    } else {
        let mut v: Vec<String> = vec!["summary.json".to_string()];
        for f in s.metrics.outputs.iter().filter(|f| f.has_timeseries()) {
            let ext = f.as_str();
            v.push(format!("jobs.{ext}"));
            v.push(format!("timeseries.{ext}"));
        }
        if s.failures.is_some() {
            v.push("failures.csv".into());
        }
        if s.metrics.outputs.contains(&OutputFormat::Batsim) {
            v.push(crate::report::batsim::FILE.into());
        }
        v
    };
    names.push(crate::report::outset::MARKER.to_string());
    let tmp: Vec<String> = names.iter().map(|n| format!(".{n}.tmp")).collect();
    names.extend(tmp);
    names
}

/// [`RunError::OutIsNotADirectory`] when `out_dir` names an existing file.
fn refuse_file_as_out_dir(out_dir: &Path) -> Result<(), RunError> {
    if out_dir.exists() && !out_dir.is_dir() {
        return Err(RunError::OutIsNotADirectory {
            path: out_dir.to_path_buf(),
        });
    }
    Ok(())
}

/// Refuses a run whose outputs in `out_dir` would overwrite one of its inputs, comparing
/// canonicalized paths (so `./x/../jobs.csv`, symbolic links and the like are caught).
///
/// # Errors
/// [`RunError::OutputIsInput`] naming the first such input.
pub fn check_outputs_are_not_inputs(
    loaded: &Loaded,
    trace_dir: &TraceDir,
    out_dir: &Path,
    seed: Option<u64>,
) -> Result<(), RunError> {
    refuse_file_as_out_dir(out_dir)?;
    // A directory that does not exist yet holds no input.
    let Ok(dir) = out_dir.canonicalize() else {
        return Ok(());
    };
    let outputs: Vec<(String, PathBuf)> = output_files(loaded, seed)
        .into_iter()
        .map(|n| {
            let p = dir.join(&n);
            // An existing output (a link to an input, say) resolves to what it names.
            let p = p.canonicalize().unwrap_or(p);
            (n, p)
        })
        .collect();
    for (what, input) in input_files(loaded, trace_dir) {
        let Ok(input_c) = input.canonicalize() else {
            continue; // missing: the run reports it
        };
        // The input's own name in its canonical directory (a link there is replaced too).
        let input_l = input
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .and_then(|p| p.canonicalize().ok())
            .zip(input.file_name())
            .map(|(p, n)| p.join(n));
        for (name, out) in &outputs {
            let at = dir.join(name);
            if *out == input_c || input_c == at || input_l.as_ref() == Some(&at) {
                return Err(RunError::OutputIsInput {
                    path: input,
                    what,
                    output: name.clone(),
                    out_dir: out_dir.to_path_buf(),
                });
            }
        }
    }
    Ok(())
}

/// Refuses a study (sweep, compare) whose output directory is a file or holds one of the
/// base scenario's inputs anywhere below it (a study writes many files there: run tables,
/// reports, plots, one folder per run). Paths are compared canonicalized.
///
/// # Errors
/// [`RunError::OutIsNotADirectory`], or [`RunError::InputInsideOutDir`] naming the first
/// such input.
pub fn check_study_out_dir(
    loaded: &Loaded,
    trace_dir: &TraceDir,
    out_dir: &Path,
) -> Result<(), RunError> {
    refuse_file_as_out_dir(out_dir)?;
    let Ok(dir) = out_dir.canonicalize() else {
        return Ok(()); // not created yet: holds nothing
    };
    for (what, input) in input_files(loaded, trace_dir) {
        if input.canonicalize().is_ok_and(|p| p.starts_with(&dir)) {
            return Err(RunError::InputInsideOutDir {
                path: input,
                what,
                out_dir: out_dir.to_path_buf(),
            });
        }
    }
    Ok(())
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs a loaded scenario.
///
/// # Errors
/// [`RunError`]; outputs are written atomically, so a failed run leaves no partial file.
pub fn run_scenario(
    loaded: &Loaded,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, SimTime),
) -> Result<RunOutput, RunError> {
    match run_inner(loaded, opts, progress, Live::Off)? {
        Ran::Output(o, _) => Ok(o),
        Ran::Twin(_) => unreachable!("Live::Off runs the scenario"),
    }
}

/// [`run_scenario`] keeping every decision for a per-job account: the preemptions
/// ([`RunResult::preemption_log`]), the starts with their quota flavor
/// ([`RunResult::admissions`]) and the pending reasons as they changed
/// ([`RunResult::reason_log`]), as `fleetsim kueue simulate` reports them. With `jobs`, the
/// run takes these jobs (sorted by submit time) instead of reading the scenario's workload:
/// fields a trace format cannot carry (a job's own topology constraint) reach the engine.
///
/// # Errors
/// As [`run_scenario`].
pub fn run_scenario_recorded(
    loaded: &Loaded,
    opts: &RunOptions,
    jobs: Option<Vec<crate::workload::JobSpec>>,
) -> Result<RunOutput, RunError> {
    let given = jobs.map(|j| {
        Box::new(crate::workload::VecStream::new(j, Default::default())) as Box<dyn JobStream>
    });
    match run_inner_with(loaded, opts, &mut |_, _| {}, Live::Decisions, given)? {
        Ran::Output(o, _) => Ok(o),
        Ran::Twin(_) => unreachable!("Live::Decisions runs the scenario"),
    }
}

/// Runs a loaded scenario with [`EngineConfig::record_live`] on, and returns with it a
/// [`fleetsim_policies::live::LiveState`] built exactly as the run's scheduler and fleet
/// were before the first event (the same spec, queues, quota tree, spares held out):
/// replaying [`RunResult::live`]'s events through it must give its decisions.
///
/// # Errors
/// As [`run_scenario`].
pub fn run_scenario_live(
    loaded: &Loaded,
    opts: &RunOptions,
) -> Result<(RunOutput, fleetsim_policies::live::LiveState), RunError> {
    match run_inner(loaded, opts, &mut |_, _| {}, Live::Record)? {
        Ran::Output(out, Some(twin)) => Ok((out, twin)),
        _ => unreachable!("a live run builds its twin"),
    }
}

/// The [`fleetsim_policies::live::LiveState`] of [`run_scenario_live`] without running the
/// scenario: the scheduler and fleet as they are before the first event. This is what the
/// live service (`fleetsim-scheduler serve`) starts from, so that its decisions equal the
/// simulator's on the same spec file.
///
/// # Errors
/// As [`run_scenario`] (a scenario, fleet or workload that does not load).
pub fn live_twin(
    loaded: &Loaded,
    opts: &RunOptions,
) -> Result<fleetsim_policies::live::LiveState, RunError> {
    match run_inner(loaded, opts, &mut |_, _| {}, Live::TwinOnly)? {
        Ran::Twin(twin) => Ok(twin),
        Ran::Output(..) => unreachable!("Live::TwinOnly stops before running"),
    }
}

/// What [`run_inner`] does about the live twin.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Live {
    /// No recorder, no twin.
    Off,
    /// Record the event stream and build the twin.
    Record,
    /// Build the twin and stop before running.
    TwinOnly,
    /// No twin; keep every decision (preemptions, admissions, pending reasons).
    Decisions,
}

// Built once per run and matched at once: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
enum Ran {
    Output(RunOutput, Option<fleetsim_policies::live::LiveState>),
    Twin(fleetsim_policies::live::LiveState),
}

fn run_inner(
    loaded: &Loaded,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, SimTime),
    mode: Live,
) -> Result<Ran, RunError> {
    run_inner_with(loaded, opts, progress, mode, None)
}

/// [`run_inner`], the workload given as a stream (`None`: the scenario's).
fn run_inner_with(
    loaded: &Loaded,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, SimTime),
    mode: Live,
    given: Option<Box<dyn JobStream>>,
) -> Result<Ran, RunError> {
    let live = !matches!(mode, Live::Off | Live::Decisions);
    let seed = opts.seed.unwrap_or(loaded.scenario.seed);
    prepare_out_dir(loaded, opts)?;
    // Quota flexibility off: every queue only within its own nominal quota (no cohorts).
    let own_quota_only;
    let loaded = match &loaded.scenario.flexibility {
        Some(f) if !f.quota => {
            let mut l = loaded.clone();
            l.scenario.cohorts.clear();
            for q in &mut l.scenario.queues {
                q.cohort = None;
            }
            own_quota_only = l;
            &own_quota_only
        }
        _ => loaded,
    };
    let crate::whatif::fleet::TransformedFleet {
        built:
            BuiltFleet {
                state,
                gpus_by_model,
                autoscaling,
            },
        events: node_events,
    } = crate::whatif::fleet::build(loaded, &opts.trace_dir)?;
    let fleet_gpus: u64 = gpus_by_model.values().sum();
    let (policies, mut cfg) = engine_config(loaded);
    cfg.autoscaling =
        (!autoscaling.is_empty()).then_some(crate::engine::autoscale::AutoscaleConfig {
            groups: autoscaling.clone(),
            expander: loaded.scenario.policy.autoscaler_expander,
            seed,
        });
    cfg.record_live = live;
    if mode == Live::Decisions {
        cfg.record_preemptions = true;
        cfg.record_admissions = true;
    }
    cfg.serving = serving_plan(loaded, &state, &opts.trace_dir)?;
    cfg.elastic = elastic_config(loaded, &state, &opts.trace_dir)?;
    let ext = crate::scenario::policies::extensions(loaded, &state)?;
    // The live twin's stages, built the same way (Extensions holds boxed policies: no clone).
    let twin_ext = match live {
        true => Some(crate::scenario::policies::extensions(loaded, &state)?),
        false => None,
    };
    cfg.node_changes = crate::engine::node_changes::node_changes(loaded, &state)?;
    let scenario_changes = cfg.node_changes.clone();
    let limit_counts = std::sync::Arc::new([
        std::sync::atomic::AtomicU64::new(0),
        std::sync::atomic::AtomicU64::new(0),
    ]);
    let usable = std::sync::Arc::new(std::sync::Mutex::new(crate::fleet::usable::Usability::new(
        &state,
        &autoscaling,
    )));
    let mut stream: Box<dyn JobStream> = Box::new(LimitCounter {
        rest: match given {
            Some(g) => g,
            None => open_workload(loaded, &opts.trace_dir, seed)?,
        },
        counts: limit_counts.clone(),
        usable: usable.clone(),
    });
    // Failures and maintenance (seeded per node: the workload's streams are untouched),
    // generated from the first job's submit time unless `failures.start_s` says otherwise.
    let first_submit = match &loaded.scenario.failures {
        Some(f) if f.start_s.is_none() && f.timeline.is_none() => {
            let peeked = Peeked::new(stream);
            let first = peeked.first_submit();
            stream = Box::new(peeked);
            first
        }
        _ => None,
    };
    let timeline =
        crate::reliability::timeline(loaded, &state, seed, &opts.trace_dir, first_submit)?;
    cfg.node_changes.extend(timeline.iter().map(|e| e.change));
    cfg.startup = crate::reliability::startup_model(loaded);
    cfg.spares = crate::reliability::spare_nodes(loaded, &state)?;
    cfg.model_speed_permille = crate::reliability::model_speeds(loaded, &state)?;
    cfg.reliability = loaded.scenario.failures.is_some()
        || cfg.startup.is_some()
        || !cfg.model_speed_permille.is_empty()
        || loaded.scenario.flexibility.is_some();
    let timeline_csv = loaded
        .scenario
        .failures
        .is_some()
        .then(|| crate::reliability::timeline_csv(&timeline, &state));
    if let Some(f) = &loaded.scenario.flexibility {
        stream = Box::new(
            crate::reliability::flexibility::FlexibleStream::new(stream, f, &state).map_err(
                |(field, message)| crate::scenario::ScenarioError::Invalid {
                    origin: loaded.origin.clone(),
                    field,
                    message,
                },
            )?,
        );
    }
    cfg.node_events = node_events;
    let cells: Vec<String> = state.cells().iter().map(|c| c.name.clone()).collect();
    let models_for_series: Vec<String> = state.models().to_vec();
    // Fixed nodes and GPUs; the autoscaled groups' (at `max_nodes`) apart.
    let scaled: std::collections::BTreeSet<fleetsim_policies::NodeId> = autoscaling
        .iter()
        .flat_map(|g| g.nodes.iter().copied())
        .collect();
    let nodes = (state.nodes().len() - scaled.len()) as u64;
    let autoscaled = (
        scaled.len() as u64,
        scaled
            .iter()
            .map(|&n| u64::from(state.node(n).gpus))
            .sum::<u64>(),
    );
    let mut gpus_by_cell = BTreeMap::new();
    for (i, c) in state.cells().iter().enumerate() {
        let g: u64 = c
            .nodes
            .iter()
            .filter(|n| !scaled.contains(n))
            .map(|&n| state.node(n).gpus as u64)
            .sum();
        gpus_by_cell.insert(cells[i].clone(), g);
    }
    let gpu_numbering =
        crate::report::batsim::GpuNumbering::new(state.nodes().iter().map(|n| n.gpus));
    let twin = twin_ext.map(|mut e| {
        // As Simulation::with_extensions sets up its scheduler and fleet.
        e.track_running |= cfg.node_changes.iter().any(|c| {
            matches!(
                c.kind,
                crate::engine::NodeChangeKind::Fail { .. }
                    | crate::engine::NodeChangeKind::Evict { .. }
            )
        });
        let mut fleet = state.clone();
        if !policies.placement.kind().reads_task_classes() {
            fleet.stop_task_class_tracking();
        }
        for &n in &cfg.spares {
            fleet.set_schedulable(n, false);
        }
        let queues: Vec<QueueConfig> = cfg.queues.iter().map(|q| q.config).collect();
        let sched = fleetsim_policies::Scheduler::new(policies.clone(), queues).with(e);
        // The queue table is set below: read from the workload (twin only) or taken from
        // the run (recording).
        fleetsim_policies::live::LiveState::new(sched, fleet, Vec::new())
    });
    if mode == Live::TwinOnly {
        let mut twin = twin.expect("a live mode builds its twin");
        twin.set_queue_names(crate::engine::queue_table(&cfg, stream.as_mut())?);
        return Ok(Ran::Twin(twin));
    }
    let mut sim = Simulation::with_extensions(state, policies, ext, cfg);
    // Queueing SLOs read the job rows as they are written (none without `[[metrics.slo]]`).
    let mut slo_tracker = (!loaded.scenario.metrics.slo.is_empty()).then(|| {
        crate::metrics::slo::SloTracker::new(
            loaded.scenario.metrics.slo.clone(),
            crate::scenario::slo_queues(&loaded.scenario),
        )
    });
    let (result, jobs) = match &opts.out_dir {
        Some(dir) => {
            // The folder reads as incomplete from here until the marker is written last.
            crate::report::outset::begin(dir, crate::report::outset::MARKER)
                .map_err(io_err(dir))?;
            let outputs = &loaded.scenario.metrics.outputs;
            let csv_path = dir.join("jobs.csv");
            let pq_path = dir.join("jobs.parquet");
            let bs_path = dir.join(crate::report::batsim::FILE);
            let mut csv = match outputs.contains(&OutputFormat::Csv) {
                true => Some(JobsCsv::create(&csv_path).map_err(io_err(&csv_path))?),
                false => None,
            };
            #[cfg(feature = "parquet")]
            let mut pq = match outputs.contains(&OutputFormat::Parquet) {
                true => Some(JobsParquet::create(&pq_path).map_err(io_err(&pq_path))?),
                false => None,
            };
            #[cfg(not(feature = "parquet"))]
            let _ = &pq_path;
            let mut bs = match outputs.contains(&OutputFormat::Batsim) {
                true => Some(
                    crate::report::batsim::BatsimJobs::create(
                        &bs_path,
                        &loaded.scenario.name,
                        gpu_numbering,
                    )
                    .map_err(io_err(&bs_path))?,
                ),
                false => None,
            };
            let mut sinks: Vec<&mut dyn crate::engine::JobSink> = Vec::new();
            if let Some(c) = csv.as_mut() {
                sinks.push(c);
            }
            #[cfg(feature = "parquet")]
            if let Some(p) = pq.as_mut() {
                sinks.push(p);
            }
            if let Some(b) = bs.as_mut() {
                sinks.push(b);
            }
            if let Some(t) = slo_tracker.as_mut() {
                sinks.push(t);
            }
            let r = sim.run(stream.as_mut(), &mut Tee { sinks }, progress)?;
            if let Some(c) = csv {
                c.commit().map_err(io_err(&csv_path))?;
            }
            #[cfg(feature = "parquet")]
            if let Some(p) = pq {
                p.commit().map_err(io_err(&pq_path))?;
            }
            if let Some(b) = bs {
                b.commit().map_err(io_err(&bs_path))?;
            }
            (r, None)
        }
        None if opts.keep_rows => {
            let mut rows = Vec::new();
            let r = match slo_tracker.as_mut() {
                Some(t) => {
                    let mut tee = Tee {
                        sinks: vec![&mut rows, t],
                    };
                    sim.run(stream.as_mut(), &mut tee, progress)?
                }
                None => sim.run(stream.as_mut(), &mut rows, progress)?,
            };
            (r, Some(rows))
        }
        None => match slo_tracker.as_mut() {
            Some(t) => (sim.run(stream.as_mut(), t, progress)?, None),
            None => (
                sim.run(stream.as_mut(), &mut crate::engine::DiscardRows, progress)?,
                None,
            ),
        },
    };
    let slo_results = slo_tracker
        .as_ref()
        .map(|t| t.report(&result.occupancy))
        .unwrap_or_default();
    let policy = policy_names(&loaded.scenario);
    let mut summary = summary::build(
        summary::SummaryInput {
            scenario: &loaded.scenario.name,
            description: &loaded.scenario.description,
            seed,
            mode: match loaded.scenario.mode {
                Mode::Schedule => "schedule",
                Mode::Replay => "replay",
                Mode::Inflation => "inflation",
            },
            policy,
            cells: cells.clone(),
            models: models_for_series.clone(),
            nodes,
            gpus_by_model,
            gpus_by_cell,
            autoscaled,
        },
        &result,
    );
    if !slo_results.is_empty() {
        summary.slo = Some(crate::metrics::slo::summary_section(&slo_results));
    }
    if !loaded.scenario.transforms.is_empty() {
        summary.transforms = Some(loaded.scenario.transforms.echo());
    }
    summary.unusable_capacity = usable.lock().unwrap_or_else(|p| p.into_inner()).unusable();
    if let Some(r) = &result.reliability {
        // Node facts (failures, drains, MTTR) count every node change applied: the
        // scenario's `[[node_events]]` as well as the generated or replayed timeline, in the
        // engine's order (time, then node events first), so that `node_failures` agrees with
        // the `job_failures` they cause.
        let applied: Vec<crate::reliability::TimelineEvent> = if scenario_changes.is_empty() {
            Vec::new()
        } else {
            let mut all: Vec<_> = scenario_changes
                .iter()
                .map(|&change| crate::reliability::TimelineEvent {
                    change,
                    cause: "node_events".into(),
                })
                .chain(timeline.iter().cloned())
                .collect();
            all.sort_by_key(|e| e.change.at);
            all
        };
        summary.reliability = Some(crate::reliability::summary(
            r,
            if applied.is_empty() {
                &timeline
            } else {
                &applied
            },
            result.counts.failures,
            &cells,
            &models_for_series,
        ));
    }
    summary.warnings = setting_warnings(
        loaded,
        limit_counts[0].load(std::sync::atomic::Ordering::Relaxed),
        limit_counts[1].load(std::sync::atomic::Ordering::Relaxed),
    )
    .into_iter()
    .chain(summary.unusable_capacity.iter().map(|u| u.warning()))
    .collect();
    if let Some(e) = summary.elastic.as_ref().filter(|e| e.jobs == 0) {
        summary.warnings.push(format!(
            "[elastic] (allocator = \"{}\") does nothing here: the workload has no elastic job (no native row with `min_gpus`, `max_gpus`, `work_gpu_s`, `throughput`, no `pollux` workload row), so the run equals one without [elastic]",
            e.allocator
        ));
    }
    if let Some(dir) = &opts.out_dir {
        let series = full_series(&cells, &models_for_series, &result, &slo_results);
        for f in &loaded.scenario.metrics.outputs {
            let path = dir.join(format!("timeseries.{}", f.as_str()));
            match f {
                OutputFormat::Csv => timeseries::write_series(&path, &series),
                #[cfg(feature = "parquet")]
                OutputFormat::Parquet => crate::report::tables::write_timeseries(&path, &series),
                // Refused by validation (`metrics.outputs`) in a build without Parquet.
                #[cfg(not(feature = "parquet"))]
                OutputFormat::Parquet => continue,
                OutputFormat::Batsim => continue,
            }
            .map_err(io_err(&path))?;
        }
        if let Some(text) = &timeline_csv {
            let path = dir.join("failures.csv");
            crate::report::atomic::write_atomic(&path, text.as_bytes()).map_err(io_err(&path))?;
        }
        let path = dir.join("summary.json");
        let mut text = serde_json::to_string_pretty(&summary).expect("summary serializes");
        text.push('\n');
        crate::report::atomic::write_atomic(&path, text.as_bytes()).map_err(io_err(&path))?;
        complete_set(dir, loaded, opts.seed)?;
    }
    let warnings = summary
        .warnings
        .iter()
        .cloned()
        .chain(
            loaded
                .scenario
                .notes
                .iter()
                .cloned()
                .chain(crate::scenario::kueue::gpu_quota_notes(
                    &loaded.scenario,
                    fleet_gpus,
                ))
                .map(|n| format!("Kueue manifests: {n}")),
        )
        .collect();
    let twin = twin.map(|mut t| {
        let queues = result.live.as_ref().map(|l| l.queues.clone());
        t.set_queue_names(queues.unwrap_or_default());
        t
    });
    Ok(Ran::Output(
        RunOutput {
            summary,
            result,
            jobs,
            cells,
            models: models_for_series,
            warnings,
            slo: slo_results,
        },
        twin,
    ))
}

/// Writes the run's [`crate::report::outset::MARKER`] last, listing its output files.
fn complete_set(dir: &Path, loaded: &Loaded, seed: Option<u64>) -> Result<(), RunError> {
    let names: Vec<String> = output_files(loaded, seed)
        .into_iter()
        .filter(|n| !n.starts_with('.') && n != crate::report::outset::MARKER)
        .collect();
    crate::report::outset::finish(dir, &names).map_err(io_err(dir))
}

/// `attempts-<policy>-<seed>.csv` of one run, in the FGD artifact's log layout
/// ([`crate::inflation::peer::write_attempts`]); written as the run ends, from its worker.
fn write_attempt_file(
    dir: &Path,
    exp: &crate::inflation::Experiment,
    t: &crate::inflation::RunTrace,
    (order, rank): &(Vec<usize>, Vec<u32>),
    names: Option<&[String]>,
    frag_series: bool,
) -> Result<(), RunError> {
    use crate::inflation::peer;
    let names = match names {
        Some(n) => n.to_vec(),
        None => peer::attempt_names(exp, order),
    };
    let path = dir.join(format!("attempts-{}-{}.csv", t.policy.as_str(), t.seed));
    peer::write_attempts(&path, exp, &names, order, rank, t, frag_series).map_err(io_err(&path))
}

/// Runs an inflation scenario (`mode = "inflation"`) and, with an output directory, writes
/// `summary.json`, `curves.csv` and `allocation.svg` there (and, with `attempts_csv`,
/// `attempts-<policy>-<seed>.csv`).
///
/// # Errors
/// [`RunError`] when the fleet or pod list cannot be read or an output cannot be written.
pub fn run_inflation(
    loaded: &Loaded,
    opts: &RunOptions,
) -> Result<crate::inflation::report::InflationSummary, RunError> {
    use crate::inflation::{self, report};
    prepare_out_dir(loaded, opts)?;
    let s = &loaded.scenario;
    if let Some(dir) = &opts.out_dir {
        crate::report::outset::begin(dir, crate::report::outset::MARKER).map_err(io_err(dir))?;
    }
    // Every run's per-attempt file is written as the run ends and its events dropped then:
    // memory holds one run's events per worker, not the study's.
    let attempts_dir = opts
        .out_dir
        .as_deref()
        .filter(|_| s.inflation.as_ref().is_some_and(|i| i.attempts_csv));
    let frag_series = s.inflation.as_ref().is_some_and(|i| i.frag_series);
    let results = inflation::run_streamed(loaded, opts, &|exp, t, io, names| match attempts_dir {
        Some(dir) => write_attempt_file(dir, exp, t, io, names, frag_series),
        None => Ok(()),
    })?;
    let medians = report::medians(&results);
    let summary = report::summary(&s.name, &s.description, &results, &medians);
    if let Some(dir) = &opts.out_dir {
        let path = dir.join("curves.csv");
        report::write_curves(&path, &medians).map_err(io_err(&path))?;
        let path = dir.join("allocation.svg");
        let title = format!(
            "{}: allocated vs arrived GPUs (median of {} seeds)",
            s.name,
            results.seeds.len()
        );
        report::write_plot(&path, &title, &medians, results.spec.target_pct)
            .map_err(io_err(&path))?;
        let path = dir.join("summary.json");
        report::write_summary(&path, &summary).map_err(io_err(&path))?;
        complete_set(dir, loaded, opts.seed)?;
    }
    Ok(summary)
}

/// The plan of the scenario's `[serving]` (`None` without one), checked against the fleet
/// (`state`): replica shapes, demand series (a `kind = "trace"` demand's file read from the
/// trace directory), at most [`crate::serving::MAX_REPLICAS`] replicas desired at once.
/// `fleetsim run` and `fleetsim validate` both call it.
///
/// # Errors
/// [`crate::scenario::ScenarioError::Invalid`] naming the `serving…` field.
pub fn serving_plan(
    loaded: &Loaded,
    state: &fleetsim_policies::FleetState,
    trace_dir: &TraceDir,
) -> Result<Option<crate::serving::ServingPlan>, crate::scenario::ScenarioError> {
    use crate::scenario::ScenarioError;
    let Some(sv) = &loaded.scenario.serving else {
        return Ok(None);
    };
    let invalid = |(field, message): crate::serving::FieldError| ScenarioError::Invalid {
        origin: loaded.origin.clone(),
        field,
        message,
    };
    let cells = state.cells();
    let mut reserved = vec![false; cells.len()];
    for (i, name) in sv.reserved_cells.iter().enumerate() {
        let field = format!("serving.reserved_cells[{i}]");
        let Some(c) = cells.iter().position(|c| &c.name == name) else {
            let known: Vec<&str> = cells.iter().map(|c| c.name.as_str()).collect();
            return Err(invalid((
                field,
                format!(
                    "`{name}` is not a cell of the fleet (cells: {})",
                    known.join(", ")
                ),
            )));
        };
        if std::mem::replace(&mut reserved[c], true) {
            return Err(invalid((field, format!("cell `{name}` is named twice"))));
        }
    }
    if !reserved.is_empty() && reserved.iter().all(|&r| r) {
        return Err(invalid((
            "serving.reserved_cells".into(),
            "every cell is reserved for serving: leave at least one to training".into(),
        )));
    }
    // Replicas must fit a node they may use: one of a reserved cell when there are any.
    let max_gpus = state
        .nodes()
        .iter()
        .filter(|n| sv.reserved_cells.is_empty() || reserved[n.cell.index()])
        .map(|n| n.gpus)
        .max()
        .unwrap_or(0);
    crate::serving::validate(sv, max_gpus).map_err(invalid)?;
    let plan = crate::serving::plan(sv, &mut |field, p| {
        let field = field.trim_end_matches(".public_path");
        loaded
            .resolve_path(field, &None, &Some(p.to_string()), trace_dir)
            .map_err(|e| match e {
                // Named once, by the caller's `invalid`.
                ScenarioError::Invalid { field, message, .. } => (field, message),
                other => (field.to_string(), other.to_string()),
            })
    })
    .map_err(invalid)?;
    Ok(Some(plan))
}
