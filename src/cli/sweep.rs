//! `fleetsim sweep` and `fleetsim merge`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::common::{overrides, StudyArgs};
use crate::outdir;
use crate::scenario::overrides::Source;
use crate::sweep::{self, Seeds, Shard, SweepOptions};

/// Arguments of `fleetsim sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Scenario file (TOML) with a `[sweep]` table.
    pub scenario: PathBuf,
    /// Output directory (default: out/NAME-sweep).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only shard I of N (1-based, round-robin by run index), e.g. `--shard 2/3`; `slurm`
    /// takes it from a Slurm job array task's SLURM_ARRAY_TASK_* variables, `k8s/N` from a
    /// Kubernetes Indexed Job pod's JOB_COMPLETION_INDEX. Join shards with `fleetsim merge`.
    #[arg(long, value_name = "I/N|slurm|k8s/N")]
    pub shard: Option<String>,
    /// Skip runs already complete in the output directory.
    #[arg(long)]
    pub resume: bool,
    /// Number of seeds (scenario seed, +1, …; 1 to 10,000), overriding `[sweep] seeds`.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=crate::sweep::MAX_SEEDS))]
    pub seeds: Option<u64>,
    /// Common options.
    #[command(flatten)]
    pub common: StudyArgs,
}

/// Arguments of `fleetsim merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' output directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Directory for the merged sweep (may be one of the inputs).
    #[arg(long)]
    pub out: PathBuf,
    /// Also write PNG plots (needs a TrueType font, e.g. fonts-dejavu-core).
    #[arg(long)]
    pub png: bool,
}

/// Runs `fleetsim sweep`.
///
/// # Errors
/// Bad input (exit 2) or a failed run.
pub fn sweep(a: SweepArgs) -> Result<()> {
    let source = Source::read(Some(&a.scenario))?;
    let extra = overrides(&a.common.set)?;
    let plan = sweep::plan(&source, &extra, a.seeds.map(Seeds::Count))?;
    let shard = match &a.shard {
        Some(s) => Shard::parse(s)?,
        None => Shard::ALL,
    };
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from("out").join(format!("{}-sweep", plan.manifest.scenario)));
    crate::run::check_study_out_dir(&source.load(&extra)?, &a.common.trace_dir(), &out)?;
    let reuse = if a.resume {
        outdir::Reuse::Resume
    } else {
        a.common.reuse()
    };
    let prepared = outdir::prepare(&out, "sweep", &plan.manifest.scenario, reuse)?;
    let opts = SweepOptions {
        out: out.clone(),
        shard,
        resume: a.resume,
        trace_dir: a.common.trace_dir(),
        png: a.common.png,
        threads: a.common.threads,
    };
    let o = sweep::run(&source, &extra, &plan, &opts)?;
    for w in &o.warnings {
        errln!("warning: {w}");
    }
    let files = outdir::finish(prepared)?;
    errln!(
        "sweep `{}`: shard {}/{}: {} of {} runs ({} already complete); wrote {}/: {}",
        plan.manifest.scenario,
        shard.index,
        shard.count,
        o.selected,
        o.total,
        o.resumed,
        out.display(),
        outdir::describe(&files)
    );
    Ok(())
}

/// Runs `fleetsim merge`.
///
/// # Errors
/// Bad input (exit 2) or an I/O error.
pub fn merge(a: MergeArgs) -> Result<()> {
    // The merged tables would replace an input shard's own (runs.csv, report, runs/).
    if let Ok(out) = a.out.canonicalize() {
        if let Some(d) = a
            .dirs
            .iter()
            .find(|d| d.canonicalize().is_ok_and(|d| d == out))
        {
            return Err(crate::study::BadInput(format!(
                "{}: --out is one of the shard directories being merged; writing the merge \
                 there would overwrite that shard's runs: choose another --out directory",
                d.display()
            ))
            .into());
        }
    }
    let o = sweep::merge::merge(&a.dirs, &a.out, a.png)?;
    errln!(
        "merged {} directories: {} runs; wrote {}/runs.csv and report.html",
        o.inputs,
        o.runs,
        a.out.display()
    );
    Ok(())
}
