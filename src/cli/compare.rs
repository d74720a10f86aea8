//! `fleetsim compare` and `fleetsim compact`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use super::common::{overrides, StudyArgs};
use crate::compact::{self, CompactOptions, Goal};
use crate::compare::{self, CompareOptions};
use crate::outdir;
use crate::scenario::overrides::Source;

/// Arguments of `fleetsim compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Scenario file (TOML). Omit for the embedded default.
    pub scenario: Option<PathBuf>,
    /// Policies, comma-separated: a policy name (`worst-fit`), FIELD=VALUE
    /// (`placement=first-fit`), PATH=VALUE (`flexibility.spatial=false`), or settings joined
    /// with `+`. Name a variant with LABEL=SETTING[,SETTING…]: `none=flexibility.spatial=false`,
    /// `fast=worst-fit`; the settings after a label belong to it until the next LABEL=.
    #[arg(long, required = true)]
    pub policies: String,
    /// Number of seeds: the scenario seed, +1, … (1 to 10,000)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub seeds: u64,
    /// The policy differences are taken against (default: the first).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Output directory (default: out/NAME-compare).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Skip runs already complete in the output directory (same comparison and inputs).
    #[arg(long)]
    pub resume: bool,
    /// Common options.
    #[command(flatten)]
    pub common: StudyArgs,
}

/// Arguments of `fleetsim compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Scenario file (TOML). Omit for the embedded default.
    pub scenario: Option<PathBuf>,
    /// A goal every run must meet: METRIC<=X or METRIC>=X (repeatable), e.g.
    /// `wait_s.p99<=3600`, `censored_pct<=0.2`.
    #[arg(long = "goal", required = true)]
    pub goals: Vec<String>,
    /// Number of seeds: the scenario seed, +1, … (1 to 10,000)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub seeds: u64,
    /// Smallest fleet scale factor tried.
    #[arg(long, default_value_t = 0.05)]
    pub lo: f64,
    /// Largest fleet scale factor (must meet the goals).
    #[arg(long, default_value_t = 1.0)]
    pub hi: f64,
    /// Bisect until the bracket is narrower than this.
    #[arg(long, default_value_t = 0.01)]
    pub tolerance: f64,
    /// Write compaction.json here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Common options.
    #[command(flatten)]
    pub common: StudyArgs,
}

fn seeds(base: u64, n: u64) -> Vec<u64> {
    (0..n).map(|i| base.wrapping_add(i)).collect()
}

/// Runs `fleetsim compare`.
///
/// # Errors
/// Bad input (exit 2) or a failed run.
pub fn compare(a: CompareArgs) -> Result<()> {
    let source = Source::read(a.scenario.as_deref())?;
    let extra = overrides(&a.common.set)?;
    let base = source.load(&extra)?;
    let variants = compare::parse_variants(&a.policies, &source, &extra)?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from("out").join(format!("{}-compare", base.scenario.name)));
    crate::run::check_study_out_dir(&base, &a.common.trace_dir(), &out)?;
    let reuse = if a.resume {
        outdir::Reuse::Resume
    } else {
        a.common.reuse()
    };
    let prepared = outdir::prepare(&out, "compare", &base.scenario.name, reuse)?;
    let opts = CompareOptions {
        out: out.clone(),
        seeds: seeds(base.scenario.seed, a.seeds),
        baseline: a.baseline,
        trace_dir: a.common.trace_dir(),
        png: a.common.png,
        threads: a.common.threads,
        resume: a.resume,
    };
    let c = compare::run(&source, &extra, &variants, &opts)?;
    out!("{}", compare::render(&c));
    for w in &c.warnings {
        errln!("warning: {w}");
    }
    let files = outdir::finish(prepared)?;
    errln!("wrote {}/: {}", out.display(), outdir::describe(&files));
    Ok(())
}

/// Runs `fleetsim compact`.
///
/// # Errors
/// Bad input (exit 2) or a failed run.
pub fn compact(a: CompactArgs) -> Result<()> {
    let source = Source::read(a.scenario.as_deref())?;
    let extra = overrides(&a.common.set)?;
    let base = source.load(&extra)?;
    let goals = a
        .goals
        .iter()
        .map(|g| Goal::parse(g))
        .collect::<Result<Vec<_>, _>>()?;
    let opts = CompactOptions {
        goals,
        seeds: seeds(base.scenario.seed, a.seeds),
        lo: a.lo,
        hi: a.hi,
        tolerance: a.tolerance,
        trace_dir: a.common.trace_dir(),
        threads: a.common.threads,
        out: a.out,
    };
    let prepared = match &opts.out {
        Some(out) => {
            crate::run::check_study_out_dir(&base, &opts.trace_dir, out)?;
            Some(outdir::prepare(
                out,
                "compact",
                &base.scenario.name,
                a.common.reuse(),
            )?)
        }
        None => None,
    };
    let c = compact::run(&source, &extra, &opts)?;
    out!("{}", compact::render(&c));
    for w in &c.warnings {
        errln!("warning: {w}");
    }
    if let (Some(p), Some(out)) = (prepared, &opts.out) {
        let files = outdir::finish(p)?;
        errln!("wrote {}/: {}", out.display(), outdir::describe(&files));
    }
    let unmet: Vec<String> = c
        .seeds
        .iter()
        .filter(|r| r.scale.is_none())
        .map(|r| r.seed.to_string())
        .collect();
    if !unmet.is_empty() {
        bail!(
            "the goals are not met even at --hi {} (fleet_scale) for seed(s) {}: no fleet in [--lo, --hi] meets them; raise --hi or relax the goals",
            opts.hi,
            unmet.join(", ")
        );
    }
    Ok(())
}
