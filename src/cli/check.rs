//! `fleetsim check`: compare a run with a committed baseline; exit 1 on a regression.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

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
    /// Write (or rewrite) the baseline from this run instead of checking.
    #[arg(long)]
    pub update: bool,
    /// Seed (overrides the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override a scenario field: PATH=VALUE (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Directory of public traces (default: $FLEETSIM_TRACE_DIR, else traces/public).
    #[arg(long)]
    pub trace_dir: Option<PathBuf>,
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
    let seed = a.seed.unwrap_or(loaded.scenario.seed);
    let point = study::run_point(&loaded, seed, &TraceDir::resolve(a.trace_dir), false)?;
    for w in study::distinct_warnings([&point.summary]) {
        errln!("warning: {w}");
    }
    if a.update {
        let b = check::baseline_of(&spec, &point.summary)?;
        if let Some(dir) = a.baseline.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        study::write_json(&a.baseline, &b)?;
        outln!(
            "wrote baseline {} ({} metrics of scenario `{}`, seed {seed})",
            a.baseline.display(),
            b.metrics.len(),
            b.scenario
        );
        return Ok(());
    }
    let base = check::read_baseline(&a.baseline)?;
    let lines = check::compare(&spec, &base, &point.summary)?;
    out!("{}", check::render(&lines));
    let bad: Vec<String> = lines
        .iter()
        .filter(|l| !l.ok)
        .map(|l| format!("{} {}", l.metric, check::status_text(l)))
        .collect();
    if !bad.is_empty() {
        bail!(
            "{} of {} metrics regressed against {}: {} (if the change is intended, rewrite it with --update)",
            bad.len(),
            lines.len(),
            a.baseline.display(),
            bad.join(", ")
        );
    }
    let better = lines
        .iter()
        .filter(|l| l.status == check::Status::Better)
        .count();
    outln!(
        "check passed: {} metrics within tolerance of {}{}",
        lines.len(),
        a.baseline.display(),
        if better > 0 {
            format!(
                " or better ({better} improved beyond it: rewrite the baseline with --update to keep the gain)"
            )
        } else {
            String::new()
        }
    );
    Ok(())
}
