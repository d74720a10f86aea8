//! Elastic sizing: how many GPUs (replicas) each elastic job gets.
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
//! 2. *Growth* by water-filling: the GPUs left unreserved in a cell are handed out one per job
//!    per round, in key order, to the cell's active jobs below their `max`, until none are
//!    left (so sizes differ by at most one GPU among jobs not capped by `max`, and an odd GPU
//!    goes to the job first in key order). When capacity is needed, every grown job shrinks
//!    toward its `min`.
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

/// Grows the active jobs of cell `c` by water-filling: rounds over the key order, each round
/// giving every job below its `max` one more GPU, until the cell's `left` GPUs run out (a
/// last partial round serves the first jobs in key order). Rounds are batched: `r` rounds at
/// once when every eligible job can take `r` more and `left` covers them.
fn water_fill(
    c: usize,
    left: &mut u64,
    jobs: &[ElasticJobView],
    order: &[usize],
    out: &mut [Option<(usize, u32)>],
) {
    loop {
        let eligible: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| matches!(out[i], Some((cc, n)) if cc == c && n < jobs[i].max))
            .collect();
        let k = eligible.len() as u64;
        if k == 0 || *left == 0 {
            return;
        }
        if *left >= k {
            let head = eligible
                .iter()
                .map(|&i| u64::from(jobs[i].max - size_of(out, i)))
                .min()
                .unwrap_or(0);
            let r = (*left / k).min(head);
            for &i in &eligible {
                out[i] = Some((c, size_of(out, i) + r as u32));
            }
            *left -= r * k;
        } else {
            for &i in eligible.iter().take(*left as usize) {
                out[i] = Some((c, size_of(out, i) + 1));
            }
            *left = 0;
        }
    }
}

fn size_of(out: &[Option<(usize, u32)>], i: usize) -> u32 {
    out[i].map_or(0, |(_, n)| n)
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
        for (c, left) in spare.iter_mut().enumerate() {
            water_fill(c, left, jobs, &order, &mut out);
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
    fn grows_by_water_filling_and_shrinks_for_a_preemptor() {
        // 8 GPUs; A (1..8) and B (1..8) both pending: 6 spare, 3 rounds → 4 and 4.
        let a = job(0, 0, 0, 1, 8);
        let b = job(1, 0, 10, 1, 8);
        let p = plan_sizes(ElasticKind::GrowIdle, &[8], &[a, b]);
        assert_eq!(p, vec![Some((0, 4)), Some((0, 4))]);
        // A rigid job of 4 at higher priority arrives: 8 − 1 − 1 − 4 = 2 spare → A 2, B 2.
        let a = ElasticJobView {
            running: Some((0, 4)),
            ..a
        };
        let b = ElasticJobView {
            running: Some((0, 4)),
            ..b
        };
        let r = job(2, 5, 20, 4, 4);
        let p = plan_sizes(ElasticKind::GrowIdle, &[8], &[a, b, r]);
        assert_eq!(p, vec![Some((0, 2)), Some((0, 2)), Some((0, 4))]);
        // Three 1..8 jobs: 5 spare → one round (2, 2, 2), then the odd 2 GPUs go to the
        // first two in key order → 3, 3, 2. A job capped by max (C: 1..2) stops early.
        let js = [job(0, 0, 0, 1, 8), job(1, 0, 1, 1, 8), job(2, 0, 2, 1, 8)];
        let p = plan_sizes(ElasticKind::GrowIdle, &[8], &js);
        assert_eq!(p, vec![Some((0, 3)), Some((0, 3)), Some((0, 2))]);
        let js = [job(0, 0, 0, 1, 8), job(1, 0, 1, 1, 2)];
        let p = plan_sizes(ElasticKind::GrowIdle, &[8], &js);
        assert_eq!(p, vec![Some((0, 6)), Some((0, 2))]);
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
