//! What a run takes from the command line and how it fails: [`RunOptions`] and
//! [`RunError`], shared by every kind of run (the event engine's run in [`crate::run`],
//! which re-exports both, and the FGD inflation experiment in [`crate::inflation`]), below
//! both so that neither imports the other's driver.

use std::path::PathBuf;

use crate::engine::EngineError;
use crate::fleet::build::BuildError;
use crate::scenario::{ScenarioError, TraceDir};
use crate::workload::TraceError;

/// Errors of a run. The message names the file, line and field where the input is at fault.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The fleet could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The trace could not be opened.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The run stopped.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// An output file of the run is one of its input files (fatal: checked before the run,
    /// so the input is left untouched).
    #[error(
        "{path}: the {what} is also an output of this run ({output} in {out_dir}); writing \
         the outputs would overwrite it: choose another --out directory"
    )]
    OutputIsInput {
        /// The input file, as the scenario resolves it.
        path: PathBuf,
        /// Which input (`scenario file`, `workload.trace`, `failures.timeline`, …).
        what: String,
        /// The output file name it would be overwritten by.
        output: String,
        /// The output directory.
        out_dir: PathBuf,
    },
    /// The output directory named exists and is not a directory.
    #[error("{path}: --out names an existing file, not a directory: choose a directory")]
    OutIsNotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// An input file lies inside the output directory of a study (sweep, compare), which
    /// writes many files there (fatal: checked before any run).
    #[error(
        "{path}: the {what} is inside the output directory {out_dir}, where the study writes \
         its files: choose another --out directory"
    )]
    InputInsideOutDir {
        /// The input file, as the scenario resolves it.
        path: PathBuf,
        /// Which input (`scenario file`, `workload.trace`, …).
        what: String,
        /// The output directory.
        out_dir: PathBuf,
    },
    /// An output could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Options from the command line.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Where public traces are.
    pub trace_dir: TraceDir,
    /// Where to write outputs (`None`: write nothing).
    pub out_dir: Option<PathBuf>,
    /// Without `out_dir`: keep job rows in memory ([`crate::run::RunOutput::jobs`]) or build
    /// none.
    pub keep_rows: bool,
}
