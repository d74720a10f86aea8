//! `fleetsim check`: compare a run with a committed baseline; exit 1 on a regression.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use rayon::prelude::*;

use super::common::overrides;
use crate::check;
use crate::scenario::overrides::Source;
use crate::scenario::TraceDir;
use crate::study;

/// Arguments of `fleetsim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Scenario file (TOML). Omit for the embedded default.
    pub scenario: Option<PathBuf>,
    /// The baseline file, e.g. reports/default.json.
    #[arg(long)]
    pub baseline: PathBuf,
    /// Write (or rewrite) the baseline from runs on --seeds seeds instead of checking.
    #[arg(long)]
    pub update: bool,
    /// With --update: the first seed (default: the scenario's). A check runs the
    /// baseline's seeds.
    #[arg(long, requires = "update")]
    pub seed: Option<u64>,
    /// With --update: number of seeds, the first seed, +1, … (2 to 1,000; default 5; the
    /// last may not pass 2^64 − 1). The tolerances come from their spread. A check runs the
    /// baseline's seeds.
    #[arg(long, requires = "update", value_parser = clap::value_parser!(u64).range(2..=1000))]
    pub seeds: Option<u64>,
    /// Override a scenario field: PATH=VALUE (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Directory of public traces (default: $FLEETSIM_TRACE_DIR, else traces/public).
    #[arg(long)]
    pub trace_dir: Option<PathBuf>,
    /// Worker threads (default: $RAYON_NUM_THREADS, else one per core). Outputs do not
    /// depend on it.
    #[arg(long, short = 'j')]
    pub threads: Option<usize>,
}

/// Runs `loaded` on `seeds` (in parallel; results in seed order), writing nothing.
fn run_seeds(
    loaded: &crate::scenario::Loaded,
    seeds: &[u64],
    trace_dir: &TraceDir,
    threads: Option<usize>,
) -> Result<Vec<serde_json::Value>> {
    let work = || {
        seeds
            .par_iter()
            .map(|&seed| {
                study::run_point(loaded, seed, trace_dir, false)
                    .map(|p| p.summary)
                    .with_context(|| format!("seed {seed}"))
            })
            .collect::<Result<Vec<_>>>()
    };
    match threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .context("starting worker threads")?
            .install(work),
        None => work(),
    }
}

/// Runs `fleetsim check`.
///
/// # Errors
/// Bad input (exit 2), a failed run, or a regression (exit 1).
pub fn check(a: CheckArgs) -> Result<()> {
    let source = Source::read(a.scenario.as_deref())?;
    let extra = overrides(&a.set)?;
    let loaded = source.load(&extra)?;
    let spec = loaded.scenario.check.clone().unwrap_or_default();
    let trace_dir = TraceDir::resolve(a.trace_dir.clone());
    let (base, seeds) = if a.update {
        let n = a.seeds.unwrap_or(check::DEFAULT_SEEDS);
        let seeds = match a.seed {
            Some(first) => check::seed_range(first, n, &format!("--seed {first}"))?,
            None => check::seed_range(
                loaded.scenario.seed,
                n,
                &format!("the scenario's seed {}", loaded.scenario.seed),
            )?,
        };
        (None, seeds)
    } else {
        let b = check::read_baseline(&a.baseline)?;
        check::same_metrics(&spec, &b).map_err(|e| {
            study::BadInput(format!(
                "{}: {} (scenario {})",
                a.baseline.display(),
                e.0,
                loaded.origin
            ))
        })?;
        let seeds = b.seeds.clone();
        (Some(b), seeds)
    };
    let summaries = run_seeds(&loaded, &seeds, &trace_dir, a.threads)?;
    for w in check::seed_warnings(&seeds, &summaries) {
        errln!("warning: {w}");
    }
    let Some(base) = base else {
        let b = check::baseline_of(&spec, &seeds, &summaries)?;
        if let Some(dir) = a.baseline.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        study::write_json(&a.baseline, &b)?;
        outln!(
            "wrote baseline {} ({} metrics of scenario `{}`, seeds {}..={}, tolerances from the \
             seeds' spread: the Student-t 95% interval of the mean)",
            a.baseline.display(),
            b.metrics.len(),
            b.scenario,
            seeds[0],
            seeds[seeds.len() - 1]
        );
        return Ok(());
    };
    let lines = check::compare(&spec, &base, &summaries)?;
    out!("{}", check::render(&lines));
    let bad: Vec<String> = lines
        .iter()
        .filter(|l| !l.ok)
        .map(check::regression_text)
        .collect();
    if !bad.is_empty() {
        bail!(
            "{} of {} metrics regressed against {} (mean over seeds {}..={}): {} (if the change is intended, rewrite it with --update)",
            bad.len(),
            lines.len(),
            a.baseline.display(),
            seeds[0],
            seeds[seeds.len() - 1],
            bad.join("; ")
        );
    }
    let better: Vec<&str> = lines
        .iter()
        .filter(|l| l.status == check::Status::Better)
        .map(|l| l.metric.as_str())
        .collect();
    if better.is_empty() {
        outln!(
            "check passed: {} metrics within tolerance of {} over {} paired seeds",
            lines.len(),
            a.baseline.display(),
            seeds.len()
        );
    } else {
        outln!(
            "check passed: no metric regressed against {} over {} paired seeds; {} of {} improved \
             beyond their tolerance ({}): rewrite the baseline with --update to keep the gain",
            a.baseline.display(),
            seeds.len(),
            better.len(),
            lines.len(),
            better.join(", ")
        );
    }
    Ok(())
}
