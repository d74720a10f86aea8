//! Workloads: the job model, one reader module per trace format, and the synthetic generator.
//! Every source yields [`JobSpec`]s in non-decreasing submit order (readers of unsorted
//! formats sort, and say so).

pub mod alibaba_dlrm;
pub mod alibaba_openb;
pub mod alibaba_pai;
pub mod error;
pub mod fuzzing;
pub mod helios;
pub mod inspect;
pub mod job;
pub mod line_cap;
pub mod native;
pub mod philly;
pub mod philly_raw;
pub mod rows;
pub mod slurm_sacct;
pub mod swf;
pub mod synthetic;
pub mod timefmt;
pub mod tiresias;

use std::collections::BTreeMap;

pub use error::TraceError;
pub use job::{JobSpec, RecordedKind, RecordedOutcome};
pub use rows::TraceStream;

/// Rows a reader skipped by its format's documented convention, counted by reason
/// (snake_case reason → rows). Reported in `summary.json`.
pub type Skipped = BTreeMap<String, u64>;

/// A stream of jobs in non-decreasing submit order.
pub trait JobStream: Iterator<Item = Result<JobSpec, TraceError>> + Send {
    /// Rows skipped so far, by reason.
    fn skipped(&self) -> Skipped {
        Skipped::new()
    }

    /// Observations about rows that were kept, by snake_case label (a status breakdown,
    /// ends censored at the trace end, fields read but not simulated), as far as the
    /// stream has read. Shown by `fleetsim trace inspect`; empty by default.
    fn notes(&self) -> Skipped {
        Skipped::new()
    }
}

/// A job stream over an in-memory list (already sorted by submit time).
#[derive(Debug)]
pub struct VecStream {
    jobs: std::vec::IntoIter<JobSpec>,
    skipped: Skipped,
    notes: Skipped,
}

impl VecStream {
    /// Wraps `jobs`, stably sorting them by submit time first.
    pub fn new(mut jobs: Vec<JobSpec>, skipped: Skipped) -> VecStream {
        jobs.sort_by_key(|j| j.submit);
        VecStream {
            jobs: jobs.into_iter(),
            skipped,
            notes: Skipped::new(),
        }
    }

    /// Attaches the reader's notes (see [`JobStream::notes`]).
    pub fn with_notes(mut self, notes: Skipped) -> VecStream {
        self.notes = notes;
        self
    }
}

impl Iterator for VecStream {
    type Item = Result<JobSpec, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.jobs.next().map(Ok)
    }
}

impl JobStream for VecStream {
    fn skipped(&self) -> Skipped {
        self.skipped.clone()
    }

    fn notes(&self) -> Skipped {
        self.notes.clone()
    }
}

/// Opens a trace file in `format` as a job stream. `sort` loads the whole file and stably
/// sorts it by (submit, row order) for formats that stream in file order; formats whose
/// reader always sorts (Philly) ignore it.
///
/// # Errors
/// [`TraceError`] when the file cannot be opened or its header is unusable; row errors come
/// from the stream.
pub fn open_trace(
    format: crate::scenario::TraceFormat,
    path: &std::path::Path,
    sort: bool,
) -> Result<Box<dyn JobStream>, TraceError> {
    open_trace_with(format, path, sort, &slurm_sacct::SacctOptions::default())
}

/// [`open_trace`] with the `sacct` reader's options (a headerless file's `--format` list;
/// ignored by the other formats).
///
/// # Errors
/// As [`open_trace`].
pub fn open_trace_with(
    format: crate::scenario::TraceFormat,
    path: &std::path::Path,
    sort: bool,
    sacct: &slurm_sacct::SacctOptions,
) -> Result<Box<dyn JobStream>, TraceError> {
    use crate::scenario::TraceFormat as F;
    Ok(match (format, sort) {
        (F::AlibabaOpenb, false) => Box::new(alibaba_openb::open(path)?),
        (F::AlibabaOpenb, true) => Box::new(alibaba_openb::read_all_sorted(path)?),
        (F::Philly, _) => Box::new(philly::open(path)?),
        (F::Native, false) => Box::new(native::open(path)?),
        (F::Native, true) => Box::new(native::read_all_sorted(path)?),
        (F::Swf, false) => Box::new(swf::open(path)?),
        (F::Swf, true) => Box::new(swf::open(path)?.into_sorted()?),
        (F::AlibabaDlrm, _) => Box::new(alibaba_dlrm::open(path)?),
        (F::SlurmSacct, false) => Box::new(slurm_sacct::open_with(path, sacct)?),
        (F::SlurmSacct, true) => Box::new(slurm_sacct::read_all_sorted_with(path, sacct)?),
        (F::Helios, false) => Box::new(helios::open(path)?),
        (F::Helios, true) => Box::new(helios::read_all_sorted(path)?),
        (F::PhillyRaw, _) => Box::new(philly_raw::open(path)?),
        (F::AlibabaPai, _) => Box::new(alibaba_pai::open(path)?),
        (F::Tiresias, false) => Box::new(tiresias::open(path)?),
        (F::Tiresias, true) => Box::new(tiresias::read_all_sorted(path)?),
    })
}
