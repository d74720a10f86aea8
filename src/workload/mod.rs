//! Workloads: the job model, one reader module per trace format, and the synthetic generator.
//! Every source yields [`JobSpec`]s in non-decreasing submit order (readers of unsorted
//! formats sort, and say so).

pub mod alibaba_openb;
pub mod error;
pub mod job;
pub mod native;
pub mod philly;
pub mod synthetic;

use std::collections::BTreeMap;

pub use error::TraceError;
pub use job::{JobSpec, RecordedKind};

/// Rows a reader skipped by its format's documented convention, counted by reason
/// (snake_case reason → rows). Reported in `summary.json`.
pub type Skipped = BTreeMap<String, u64>;

/// A stream of jobs in non-decreasing submit order.
pub trait JobStream: Iterator<Item = Result<JobSpec, TraceError>> + Send {
    /// Rows skipped so far, by reason.
    fn skipped(&self) -> Skipped {
        Skipped::new()
    }
}

/// A job stream over an in-memory list (already sorted by submit time).
pub struct VecStream {
    jobs: std::vec::IntoIter<JobSpec>,
    skipped: Skipped,
}

impl VecStream {
    /// Wraps `jobs`, stably sorting them by submit time first.
    pub fn new(mut jobs: Vec<JobSpec>, skipped: Skipped) -> VecStream {
        jobs.sort_by_key(|j| j.submit);
        VecStream {
            jobs: jobs.into_iter(),
            skipped,
        }
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
}
