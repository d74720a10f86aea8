//! Queue order: which pending job is considered next (the Kubernetes `QueueSort` extension
//! point; Kueue orders every queue by priority, then creation time).
//!
//! An order maps a job to an [`OrderKey`]; ascending keys are considered first. Keys are
//! computed once, at enqueue, so a queue is a sorted set and a pass costs no sorting.

use crate::job::PendingJob;

/// A total order key: `(primary, submit ms, seq)`, compared lexicographically, smallest first.
/// `seq` (input position) makes every key unique, so no two jobs ever tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderKey(pub i64, pub u64, pub u64);

/// A queue-order policy.
pub trait QueueOrder: Send + Sync {
    /// The name scenarios use.
    fn name(&self) -> &'static str;
    /// The job's key; must not depend on anything but the job.
    fn key(&self, job: &PendingJob) -> OrderKey;
    /// Compares two jobs: `Less` means `a` is considered first.
    fn cmp(&self, a: &PendingJob, b: &PendingJob) -> std::cmp::Ordering {
        self.key(a).cmp(&self.key(b))
    }
}

/// First in, first out: submit time, then input sequence.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fifo;

impl QueueOrder for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn key(&self, job: &PendingJob) -> OrderKey {
        OrderKey(0, job.submit.0, job.seq)
    }
}

/// Priority (higher first), then submit time, then input sequence — Kueue's and Slurm's base
/// order, and the order the field cases assume.
#[derive(Clone, Copy, Debug, Default)]
pub struct Priority;

impl QueueOrder for Priority {
    fn name(&self) -> &'static str {
        "priority"
    }
    fn key(&self, job: &PendingJob) -> OrderKey {
        OrderKey(-(job.priority as i64), job.submit.0, job.seq)
    }
}
