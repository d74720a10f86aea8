//! Tiresias's discretized two-queue LAS (J. Gu et al., "Tiresias: A GPU Cluster Manager for
//! Distributed Deep Learning", NSDI '19) as the Pollux artifact runs it
//! (`simulator/tiresias.py` at `petuum/adaptdl@c793c70`, read, not copied):
//!
//! - a job enters queue 0 when first seen (in the order the jobs are given);
//! - every round, a job that was running adds the time since the last round to its executed
//!   time; once executed time × its GPUs reaches the threshold (16 GPU-hours in the artifact)
//!   it moves to the back of queue 1 (no promotion back: the artifact's starvation rule is
//!   off);
//! - queue 0 then queue 1, each in order, are walked once: a job runs if its GPUs fit in the
//!   fleet's GPUs not yet given to a job before it (a count, not a placement), otherwise it
//!   is stopped (preempted, keeping its progress) and waits;
//! - a running job keeps its nodes; a job started now takes, replica group by group, the node
//!   with the most free GPUs (ties to the lowest node index), as many as it still needs there.

use super::Allocations;
use crate::ids::JobId;
use crate::time::SimTime;
use std::collections::BTreeMap;

/// One job as the two-queue allocator sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LasJob {
    /// The job.
    pub id: JobId,
    /// GPUs it runs on (rigid).
    pub gpus: u32,
}

/// The allocator's state across rounds. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct TwoQueueLas {
    /// Demotion threshold, GPU-milliseconds of executed time.
    threshold_gpu_ms: u128,
    queue0: Vec<JobId>,
    queue1: Vec<JobId>,
    running: BTreeMap<JobId, bool>,
    last_check: BTreeMap<JobId, SimTime>,
    executed_ms: BTreeMap<JobId, u64>,
}

impl TwoQueueLas {
    /// The artifact's threshold: 16 GPU-hours (`3600 · 16` GPU-seconds).
    pub const ARTIFACT_THRESHOLD_GPU_MS: u128 = 3_600 * 16 * 1000;

    /// A new allocator demoting jobs at `threshold_gpu_ms` GPU-milliseconds of executed time.
    pub fn new(threshold_gpu_ms: u128) -> TwoQueueLas {
        TwoQueueLas {
            threshold_gpu_ms,
            ..TwoQueueLas::default()
        }
    }

    /// Whether `id` is in the low-priority queue (demoted).
    pub fn demoted(&self, id: JobId) -> bool {
        self.queue1.contains(&id)
    }

    /// One round at `now`: `jobs` are the active (submitted, unfinished) jobs in submission
    /// order, `node_gpus` each node's GPUs, `prev` last round's allocations. Returns the new
    /// allocations (jobs not in it wait).
    pub fn allocate(
        &mut self,
        now: SimTime,
        jobs: &[LasJob],
        node_gpus: &[u32],
        prev: &Allocations,
    ) -> Allocations {
        let live: BTreeMap<JobId, LasJob> = jobs.iter().map(|j| (j.id, *j)).collect();
        self.queue0.retain(|id| live.contains_key(id));
        self.queue1.retain(|id| live.contains_key(id));
        self.running.retain(|id, _| live.contains_key(id));
        self.last_check.retain(|id, _| live.contains_key(id));
        self.executed_ms.retain(|id, _| live.contains_key(id));
        let mut alloc: Allocations = prev
            .iter()
            .filter(|(id, _)| live.contains_key(id))
            .map(|(id, a)| (*id, a.clone()))
            .collect();
        for j in jobs {
            if let std::collections::btree_map::Entry::Vacant(e) = self.running.entry(j.id) {
                e.insert(false);
                self.queue0.push(j.id);
            }
        }
        for j in jobs {
            let last = self.last_check.get(&j.id).copied().unwrap_or(SimTime::ZERO);
            let elapsed = now.saturating_since(last).0;
            self.last_check.insert(j.id, now);
            if self.running[&j.id] {
                let e = self.executed_ms.entry(j.id).or_insert(0);
                *e = e.saturating_add(elapsed);
                let gpu_ms = u128::from(*e) * u128::from(j.gpus);
                if gpu_ms >= self.threshold_gpu_ms {
                    if let Some(p) = self.queue0.iter().position(|&q| q == j.id) {
                        self.queue0.remove(p);
                        self.queue1.push(j.id);
                    }
                }
            }
        }
        let mut left: u64 = node_gpus.iter().map(|&g| u64::from(g)).sum();
        for id in self.queue0.iter().chain(&self.queue1) {
            let need = u64::from(live[id].gpus);
            let runs = need <= left;
            if runs {
                left -= need;
            } else {
                alloc.remove(id);
            }
            self.running.insert(*id, runs);
        }
        let mut free: Vec<i64> = node_gpus.iter().map(|&g| i64::from(g)).collect();
        for a in alloc.values() {
            for &n in a {
                free[n] -= 1;
            }
        }
        for id in self.queue0.iter().chain(&self.queue1) {
            if !self.running[id] || alloc.get(id).is_some_and(|a| !a.is_empty()) {
                continue;
            }
            let need = live[id].gpus as usize;
            let mut a: Vec<usize> = Vec::with_capacity(need);
            while a.len() < need {
                // The node with the most free GPUs, the lowest index first among equals.
                let Some((n, &f)) = free
                    .iter()
                    .enumerate()
                    .filter(|(_, &f)| f > 0)
                    .max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(&x.0)))
                else {
                    break;
                };
                let take = (f as usize).min(need - a.len());
                a.extend(std::iter::repeat_n(n, take));
                free[n] -= take as i64;
            }
            alloc.insert(*id, a);
        }
        alloc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(id: u32, gpus: u32) -> LasJob {
        LasJob {
            id: JobId(id),
            gpus,
        }
    }

    /// Two 4-GPU nodes; threshold 1 GPU-hour.
    /// - t=60 s: A (4) and B (2) arrive: A takes node 0 (most free, lowest index), B node 1.
    /// - t=1860 s: C (4) arrives; A has executed 1800 s × 4 = 2 GPU-h ≥ 1 → queue 1;
    ///   B 1800 × 2 = 1 GPU-h → queue 1 too (after A). Queue 0 = [C]: C runs (4 of 8),
    ///   then A (4 of the 4 left) runs, B (2) does not fit → preempted.
    #[test]
    fn demotion_and_preemption_by_hand() {
        let mut las = TwoQueueLas::new(3_600_000);
        let nodes = [4, 4];
        let a = las.allocate(
            SimTime::from_secs(60),
            &[j(0, 4), j(1, 2)],
            &nodes,
            &Allocations::new(),
        );
        assert_eq!(a[&JobId(0)], vec![0, 0, 0, 0]);
        assert_eq!(a[&JobId(1)], vec![1, 1]);
        let b = las.allocate(
            SimTime::from_secs(1860),
            &[j(0, 4), j(1, 2), j(2, 4)],
            &nodes,
            &a,
        );
        assert!(las.demoted(JobId(0)) && las.demoted(JobId(1)));
        assert_eq!(b[&JobId(0)], vec![0, 0, 0, 0]);
        assert!(!b.contains_key(&JobId(1)));
        assert_eq!(b[&JobId(2)], vec![1, 1, 1, 1]);
    }
}
