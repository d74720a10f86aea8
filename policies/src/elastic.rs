//! Elastic sizing: how many GPUs (replicas) each elastic job gets (issue 22 item 2).
//!
//! An elastic job declares `min ≤ max` GPUs instead of a fixed size (Pollux, OSDI '21; Ray
//! Train elastic training; Kueue elastic workloads). A rigid job is the case `min = max`.
//! This stage reads a snapshot of each cell's GPU capacity and of the active and pending
//! jobs, and returns each job's cell and size; it knows nothing of the simulator.
//!
//! [`ElasticKind::GrowIdle`] ("grow-idle") works in two passes over one order, the
//! **elastic key** `(priority descending, submit ascending, seq ascending)`:
//!
//! 1. *Admission*: every running job keeps its cell and reserves its `min` (running jobs are
//!    never evicted: a preemptor or a higher-priority job makes them *shrink toward min*).
//!    Pending jobs, in key order, start in the first cell (lowest index) whose unreserved GPUs
//!    hold their `min`; a pending job that fits nowhere waits and later jobs are still tried
//!    (best effort, as Kueue's `BestEffortFIFO`).
//! 2. *Growth*: the GPUs left unreserved in a cell go to its active jobs in key order, each
//!    up to its `max` (the first job in key order grows first, so when capacity is needed the
//!    jobs last in key order shrink first).
//!
//! [`ElasticKind::Fixed`] ("fixed") does the admission pass only: every job runs at its `min`
//! — the rigid baseline.
//!
//! Sizes are whole GPUs (one replica per GPU).

use crate::ids::JobId;
pub use crate::registry::ElasticKind;
use crate::time::SimTime;

/// One job as the elastic stage sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElasticJobView {
    /// The job.
    pub id: JobId,
    /// Priority; higher first.
    pub priority: i32,
    /// Submission time (milliseconds).
    pub submit: SimTime,
    /// Arrival sequence number (input order), the last tie-break.
    pub seq: u64,
    /// Fewest GPUs the job runs on, ≥ 1.
    pub min: u32,
    /// Most GPUs the job can use, ≥ `min`.
    pub max: u32,
    /// The cell (index into the capacity slice) and size it runs at now; `None` if pending.
    pub running: Option<(usize, u32)>,
}

/// The elastic key of `j`: `(priority descending, submit ascending, seq ascending)`.
fn key(j: &ElasticJobView) -> (std::cmp::Reverse<i32>, SimTime, u64) {
    (std::cmp::Reverse(j.priority), j.submit, j.seq)
}

/// Each job's `(cell, size)` after one sizing pass, in the order of `jobs`; `None` = pending.
///
/// `capacity[c]` is cell `c`'s usable GPUs. Running jobs keep their cell. The caller
/// guarantees that running jobs' `min`s fit their cells (the engine only starts jobs this
/// function admitted, and capacity does not shrink under them).
///
/// # Panics
/// If a running job names a cell outside `capacity`.
pub fn plan_sizes(
    kind: ElasticKind,
    capacity: &[u32],
    jobs: &[ElasticJobView],
) -> Vec<Option<(usize, u32)>> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| key(&jobs[i]));
    let mut spare: Vec<u64> = capacity.iter().map(|&c| u64::from(c)).collect();
    let mut out: Vec<Option<(usize, u32)>> = vec![None; jobs.len()];
    for (i, j) in jobs.iter().enumerate() {
        if let Some((c, _)) = j.running {
            spare[c] = spare[c].saturating_sub(u64::from(j.min));
            out[i] = Some((c, j.min));
        }
    }
    for &i in &order {
        let j = &jobs[i];
        if j.running.is_some() {
            continue;
        }
        if let Some(c) = spare.iter().position(|&s| s >= u64::from(j.min)) {
            spare[c] -= u64::from(j.min);
            out[i] = Some((c, j.min));
        }
    }
    if kind == ElasticKind::GrowIdle {
        for &i in &order {
            if let Some((c, size)) = out[i] {
                let extra = u64::from(jobs[i].max - size).min(spare[c]);
                spare[c] -= extra;
                out[i] = Some((c, size + extra as u32));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u32, prio: i32, submit_s: u64, min: u32, max: u32) -> ElasticJobView {
        ElasticJobView {
            id: JobId(id),
            priority: prio,
            submit: SimTime::from_secs(submit_s),
            seq: u64::from(id),
            min,
            max,
            running: None,
        }
    }

    #[test]
    fn grows_in_key_order_and_shrinks_last_first() {
        // 8 GPUs; A (1..8) and B (1..8) both pending: A gets 1 + 6 spare = 7, B 1.
        let a = job(0, 0, 0, 1, 8);
        let b = job(1, 0, 10, 1, 8);
        let p = plan_sizes(ElasticKind::GrowIdle, &[8], &[a, b]);
        assert_eq!(p, vec![Some((0, 7)), Some((0, 1))]);
        // A rigid job of 4 at higher priority arrives: A shrinks to 3, B stays at 1.
        let a = ElasticJobView {
            running: Some((0, 7)),
            ..a
        };
        let b = ElasticJobView {
            running: Some((0, 1)),
            ..b
        };
        let r = job(2, 5, 20, 4, 4);
        let p = plan_sizes(ElasticKind::GrowIdle, &[8], &[a, b, r]);
        assert_eq!(p, vec![Some((0, 3)), Some((0, 1)), Some((0, 4))]);
    }

    #[test]
    fn never_evicts_and_best_effort_admission() {
        // 4 GPUs: a running job at min 3 keeps it; a pending min-2 job waits; a min-1 job fits.
        let a = ElasticJobView {
            running: Some((0, 4)),
            ..job(0, 0, 0, 3, 4)
        };
        let big = job(1, 9, 5, 2, 2);
        let small = job(2, 0, 6, 1, 1);
        let p = plan_sizes(ElasticKind::GrowIdle, &[4], &[a, big, small]);
        assert_eq!(p, vec![Some((0, 3)), None, Some((0, 1))]);
    }

    #[test]
    fn fixed_keeps_min_and_cells_fill_in_index_order() {
        let a = job(0, 0, 0, 2, 8);
        let b = job(1, 0, 1, 3, 8);
        let p = plan_sizes(ElasticKind::Fixed, &[4, 4], &[a, b]);
        assert_eq!(p, vec![Some((0, 2)), Some((1, 3))]);
        let p = plan_sizes(ElasticKind::GrowIdle, &[4, 4], &[a, b]);
        assert_eq!(p, vec![Some((0, 4)), Some((1, 4))]);
    }
}
