//! The running set as the scheduler keeps it: admitted jobs, evictions in progress,
//! nominated preemptors.

use super::*;

/// An eviction in progress.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Eviction {
    /// When the job stopped making progress.
    pub(crate) at: SimTime,
    /// When its resources are released.
    pub(crate) release_at: SimTime,
}

/// A running job as the scheduler keeps it (Kueue's cache of admitted workloads).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Running {
    pub(crate) job: PendingJob,
    pub(crate) flavor: Option<u16>,
    /// What is charged to quota (zero for best-effort and queues without quota).
    pub(crate) req: Request,
    pub(crate) allocs: Vec<TaskAlloc>,
    pub(crate) start: SimTime,
    pub(crate) est_end: SimTime,
    pub(crate) evicting: Option<Eviction>,
}

impl Running {
    /// Work lost if the job were stopped at `now`, GPU-milli·ms: progress since its last
    /// checkpoint times its accelerators. (The LAS search's victim keys, kept by debug
    /// builds only.)
    #[cfg(debug_assertions)]
    pub(crate) fn lost_gpu_milli_ms(&self, now: SimTime) -> u128 {
        lost_gpu_milli_ms(
            self.job.done,
            self.start,
            self.job.checkpoint_interval,
            self.job.total_gpu_milli(),
            now,
        )
    }

    /// GPU·ms of service at `now`, earlier runs included.
    pub(crate) fn attained_gpu_ms(&self, now: SimTime) -> u64 {
        let ran = now.saturating_since(self.start).0;
        let milli = self.job.total_gpu_milli();
        // The same value as in u128, without its division while the product fits in u64
        // (the LAS preemption search computes this per running job).
        let gained = match ran.checked_mul(milli) {
            Some(p) => p / 1000,
            None => (ran as u128 * milli as u128 / 1000) as u64,
        };
        self.job.attained_gpu_ms + gained
    }
}

/// Work lost, GPU-milli·ms, if a job that had made `done` progress before a run started at
/// `start`, checkpointing every `checkpoint` and holding `gpu_milli`, stopped at `now`.
pub(crate) fn lost_gpu_milli_ms(
    done: SimDuration,
    start: SimTime,
    checkpoint: Option<SimDuration>,
    gpu_milli: u64,
    now: SimTime,
) -> u128 {
    let ran = now.saturating_since(start);
    let total = SimDuration(done.0 + ran.0);
    let kept = kept_progress(total, checkpoint);
    (total.0 - kept.0) as u128 * gpu_milli as u128
}

/// A preemptor waiting for its victims' grace periods. Its request is reserved in its
/// queue's quota meanwhile, so that no other job claims the same nominal quota (or reclaims
/// for it a second time) before it starts.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Nomination {
    pub(crate) preemptor: JobId,
    pub(crate) queue: QueueId,
    pub(crate) key: OrderKey,
    pub(crate) victims: Vec<JobId>,
    /// Quota held for it: flavor and request.
    pub(crate) reserved: Option<(u16, Request)>,
    /// Where it will go: the placement its victims make room for.
    pub(crate) allocs: Vec<TaskAlloc>,
}

/// The job to requeue after a run stopped at `at`: progress cut back to its last checkpoint,
/// service and remaining estimate updated; submit time and sequence unchanged.
pub(crate) fn stopped_job(r: &Running, at: SimTime) -> PendingJob {
    let mut job = r.job.clone();
    let ran = at.saturating_since(r.start);
    let total = SimDuration(job.done.0 + ran.0);
    let kept = kept_progress(total, job.checkpoint_interval);
    let gained = kept.0.saturating_sub(job.done.0);
    job.runtime_estimate = job
        .runtime_estimate
        .map(|e| SimDuration(e.0.saturating_sub(gained)));
    job.attained_gpu_ms = r.attained_gpu_ms(at);
    job.done = kept;
    job
}

/// What the running jobs offer as victims, summarized once per pass (at its first preemption
/// attempt): a necessary-condition filter, so that a job no rule could serve costs no scan.
/// Jobs started later in the pass are not in it (preempting a job started at the same instant
/// is waste anyway); victims taken in the pass stay in it (a needless scan at worst).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct RunSummary {
    /// Lowest priority of a running job, per queue.
    pub(crate) min_prio: Vec<Option<i32>>,
    /// Lowest priority of any running job.
    pub(crate) min_prio_all: Option<i32>,
    /// Running jobs per tier ([`crate::Tier`] as index).
    pub(crate) tiers: [u64; 3],
    /// Highest LAS queue of a running job.
    pub(crate) max_level: usize,
    /// Per LAS queue (with LAS preemption and the order's LAS queues equal): GPU-milli of the
    /// running jobs in it, and of those among them that entered it at this instant.
    pub(crate) level_gpu_milli: Vec<(u64, u64)>,
    /// [`Core::started_gpu_milli`] when the summary was taken.
    pub(crate) started_at: u64,
}

pub(crate) fn running(c: &Core, id: JobId) -> &Running {
    c.running
        .as_ref()
        .and_then(|reg| reg.get(id.index()))
        .and_then(|r| r.as_deref())
        .expect("a candidate is a tracked running job")
}
