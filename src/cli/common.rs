//! Options shared by the study commands (sweep, compare, compact, check).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::scenario::overrides::Override;
use crate::scenario::TraceDir;
use crate::study::BadInput;

/// Options of sweep, compare and compact.
#[derive(Debug, Args)]
pub struct StudyArgs {
    /// Override a scenario field for every run: PATH=VALUE (repeatable), e.g.
    /// `--set transforms.fleet_scale=0.5`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Directory of public traces (default: $FLEETSIM_TRACE_DIR, else traces/public).
    #[arg(long)]
    pub trace_dir: Option<PathBuf>,
    /// Worker threads (default: $RAYON_NUM_THREADS, else one per core). Outputs do not
    /// depend on it.
    #[arg(long, short = 'j')]
    pub threads: Option<usize>,
    /// Also write PNG plots (needs a TrueType font, e.g. fonts-dejavu-core).
    #[arg(long)]
    pub png: bool,
    /// Write into a non-empty --out that no study of this kind wrote: files an earlier
    /// study listed in its fleetsim-output.json are removed first, other files are kept.
    #[arg(long)]
    pub force: bool,
}

impl StudyArgs {
    /// The trace directory.
    pub fn trace_dir(&self) -> TraceDir {
        TraceDir::resolve(self.trace_dir.clone())
    }

    /// How the study treats an --out that is not its own ([`crate::outdir::Reuse`]).
    pub fn reuse(&self) -> crate::outdir::Reuse {
        if self.force {
            crate::outdir::Reuse::Force
        } else {
            crate::outdir::Reuse::Refuse
        }
    }
}

/// Parses `--set` values.
///
/// # Errors
/// [`BadInput`] for a value without `=`.
pub fn overrides(set: &[String]) -> Result<Vec<Override>> {
    set.iter()
        .map(|s| Override::parse(s).map_err(|m| BadInput(m).into()))
        .collect()
}
