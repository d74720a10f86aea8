//! Pollux's cluster-wide optimiser (A. Qiao et al., OSDI '21, §4.2; the artifact's
//! `simulator/pollux.py` at `petuum/adaptdl@c793c70`, read, not copied): every round it
//! re-chooses each job's GPUs and placement to maximise the fleet's goodput; each job then
//! picks its own batch size for what it got ([`crate::goodput::PerfModel::best_batch`]).
//!
//! **Objective** (the artifact's): with `s_j` job j's speedup at its allocation — its
//! predicted goodput over its goodput at a fair share (`ceil(G / J)` GPUs on one node, `G`
//! GPUs and `J` active jobs), scaled by `nodes / G` — and a job whose allocation changes
//! weighted by the restart factor `max(age − 30 s · restarts, 0) / (age + 30 s)`, maximise the
//! power mean with `p = −1` of `s_j + 0.001`, i.e. minimise `Σ_j 1 / (s_j + 0.001)`: a job
//! with no GPU costs 1,000, so every job gets a GPU while there are GPUs, and a job's restart
//! must pay for itself. A job may not exceed its `max_replicas` (the artifact: twice the most
//! replicas it has run on, at most 64, and what its largest batch size allows; exploration
//! therefore doubles a job at most once per round).
//!
//! **Search.** The artifact searches with a genetic algorithm (NSGA-II, 100 states × 100
//! generations, seeded by the previous round's population). This allocator is deterministic
//! and reaches the same kind of allocations:
//!
//! 1. *Sizes*, by local search from last round's sizes: a job that keeps its size keeps its
//!    nodes (and pays no restart); a job at a new size is valued at the fewest nodes that
//!    hold it. While it lowers the objective, the best of these moves is taken: grow a job
//!    into free GPUs (the largest gain per GPU, any step up to the free GPUs), or move one
//!    GPU from the job that loses least to the job that gains most. Ties go to the job first
//!    in the artifact's order (least attained service, then earliest submission, then id).
//! 2. *Placement*: jobs that kept their size keep their nodes; the others, largest first,
//!    take whole free nodes, then the node with the fewest free GPUs that holds the rest
//!    (best fit), splitting over the nodes with the most free GPUs only when no node holds
//!    them (lowest index among equals).
//!
//! The artifact's rule of at most one multi-node job per node only matters with its
//! interference model, which its published runs leave off; it is not enforced here.

use super::{nodes_of, Allocations};
use crate::ids::JobId;
use crate::time::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// One job as the Pollux allocator sees it.
pub struct PolluxJob<'a> {
    /// The job.
    pub id: JobId,
    /// Submission time.
    pub submit: SimTime,
    /// GPU-milliseconds it has held so far (its attained service).
    pub attained_gpu_ms: u128,
    /// Time since submission.
    pub age: SimDuration,
    /// Restarts so far (allocation changes after the first start).
    pub restarts: u32,
    /// Most replicas it may get this round.
    pub max_replicas: u32,
    /// Predicted goodput at `(nodes, replicas)` relative to any fixed base (the allocator
    /// rescales it to the fair-share base itself); `None` = not yet measured (the job's
    /// speedup is then taken as linear in its replicas, as the artifact does).
    pub goodput: Option<&'a dyn Fn(u32, u32) -> f64>,
}

/// The Pollux allocator. See the module docs.
#[derive(Clone, Copy, Debug)]
pub struct Pollux {
    /// Restart delay the objective charges a job whose allocation changes.
    pub restart_delay: SimDuration,
}

impl Default for Pollux {
    fn default() -> Pollux {
        Pollux {
            restart_delay: SimDuration::from_secs(30),
        }
    }
}

const EPS: f64 = 1e-3;

struct Ctx<'a, 'b> {
    jobs: &'a [PolluxJob<'b>],
    memo: Vec<BTreeMap<(u32, u32), f64>>,
    /// Goodput at the fair share, per job (for measured jobs).
    base: Vec<f64>,
    fair_replicas: u32,
    scale: f64,
    node_gpus: u32,
    base_size: Vec<u32>,
    base_nodes: Vec<u32>,
    factor: Vec<f64>,
}

impl Ctx<'_, '_> {
    fn raw(&mut self, j: usize, n: u32, r: u32) -> f64 {
        if r == 0 {
            return 0.0;
        }
        match self.jobs[j].goodput {
            None => f64::from(r) / f64::from(self.fair_replicas),
            Some(f) => {
                let g = *self.memo[j].entry((n, r)).or_insert_with(|| f(n, r));
                if self.base[j] > 0.0 {
                    g / self.base[j]
                } else {
                    0.0
                }
            }
        }
    }

    /// Objective term of job `j` at `r` replicas (see the module docs).
    fn term(&mut self, j: usize, r: u32) -> f64 {
        if r == 0 {
            return 1.0 / EPS;
        }
        let (n, factor) = if r == self.base_size[j] {
            (self.base_nodes[j], 1.0)
        } else {
            (r.div_ceil(self.node_gpus.max(1)), self.factor[j])
        };
        let s = self.raw(j, n, r) * self.scale * factor;
        1.0 / (s + EPS)
    }
}

impl Pollux {
    /// One round: `jobs` are the active jobs, `node_gpus` each node's GPUs, `prev` last
    /// round's allocations. Returns the new allocations (jobs not in it get no GPU).
    pub fn allocate(
        &self,
        jobs: &[PolluxJob<'_>],
        node_gpus: &[u32],
        prev: &Allocations,
    ) -> Allocations {
        let total: u32 = node_gpus.iter().sum();
        if jobs.is_empty() || total == 0 {
            return Allocations::new();
        }
        // The artifact's job order: least attained service, then earliest submission.
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&i| (jobs[i].attained_gpu_ms, jobs[i].submit, jobs[i].id));
        let fair_replicas = total.div_ceil(jobs.len() as u32);
        let delay = self.restart_delay.0 as f64;
        let mut cx = Ctx {
            jobs,
            memo: vec![BTreeMap::new(); jobs.len()],
            base: vec![0.0; jobs.len()],
            fair_replicas,
            scale: node_gpus.len() as f64 / f64::from(total),
            node_gpus: node_gpus.iter().copied().max().unwrap_or(1),
            base_size: jobs
                .iter()
                .map(|j| prev.get(&j.id).map_or(0, |a| a.len() as u32))
                .collect(),
            base_nodes: jobs
                .iter()
                .map(|j| prev.get(&j.id).map_or(0, |a| nodes_of(a)))
                .collect(),
            factor: jobs
                .iter()
                .map(|j| {
                    let age = j.age.0 as f64;
                    (age - f64::from(j.restarts) * delay).max(0.0) / (age + delay)
                })
                .collect(),
        };
        for (j, job) in jobs.iter().enumerate() {
            if let Some(f) = job.goodput {
                cx.base[j] = f(1, fair_replicas);
            }
        }
        let mut size: Vec<u32> = (0..jobs.len())
            .map(|j| cx.base_size[j].min(jobs[j].max_replicas))
            .collect();
        let mut free = total.saturating_sub(size.iter().sum());
        let tol = 1e-12;
        for _ in 0..(4 * total as usize + jobs.len()) {
            // Best growth into free GPUs: the largest gain per GPU.
            let mut best_up: Option<(f64, usize, u32)> = None;
            if free > 0 {
                for &j in &order {
                    let now = cx.term(j, size[j]);
                    let top = jobs[j].max_replicas.min(size[j] + free);
                    for r in size[j] + 1..=top {
                        let gain = (now - cx.term(j, r)) / f64::from(r - size[j]);
                        if gain > tol && best_up.is_none_or(|b| gain > b.0) {
                            best_up = Some((gain, j, r));
                        }
                    }
                }
            }
            if let Some((_, j, r)) = best_up {
                free -= r - size[j];
                size[j] = r;
                continue;
            }
            // Best single-GPU transfer: the largest gain minus the smallest loss.
            let mut gain1: Option<(f64, usize)> = None;
            let mut loss1: Option<(f64, usize)> = None;
            for &j in &order {
                let now = cx.term(j, size[j]);
                if size[j] < jobs[j].max_replicas {
                    let g = now - cx.term(j, size[j] + 1);
                    if gain1.is_none_or(|b| g > b.0) {
                        gain1 = Some((g, j));
                    }
                }
                if size[j] > 0 {
                    let l = cx.term(j, size[j] - 1) - now;
                    if loss1.is_none_or(|b| l < b.0) {
                        loss1 = Some((l, j));
                    }
                }
            }
            match (gain1, loss1) {
                (Some((g, j)), Some((l, k))) if j != k && g - l > tol => {
                    size[j] += 1;
                    size[k] -= 1;
                }
                _ => break,
            }
        }
        place(jobs, node_gpus, prev, &order, &size)
    }
}

/// Phase 2 of the module docs: keep unchanged jobs' nodes, place the others.
fn place(
    jobs: &[PolluxJob<'_>],
    node_gpus: &[u32],
    prev: &Allocations,
    order: &[usize],
    size: &[u32],
) -> Allocations {
    let mut free: Vec<u32> = node_gpus.to_vec();
    let mut out = Allocations::new();
    let mut moved: Vec<usize> = Vec::new();
    for &j in order {
        let keep = prev
            .get(&jobs[j].id)
            .filter(|a| a.len() as u32 == size[j] && size[j] > 0);
        match keep {
            Some(a) => {
                for &n in a {
                    free[n] -= 1;
                }
                out.insert(jobs[j].id, a.clone());
            }
            None if size[j] > 0 => moved.push(j),
            None => {}
        }
    }
    // Largest first; the artifact's order among equals (stable sort).
    moved.sort_by_key(|&j| std::cmp::Reverse(size[j]));
    for j in moved {
        let mut need = size[j];
        let mut a: Vec<usize> = Vec::new();
        // Whole free nodes first, for a job larger than the emptiest node's room.
        while need > 0 {
            let Some(n) = (0..free.len())
                .filter(|&n| free[n] > 0 && free[n] == node_gpus[n] && free[n] <= need)
                .max_by(|&x, &y| free[x].cmp(&free[y]).then(y.cmp(&x)))
            else {
                break;
            };
            let take = free[n];
            a.extend(std::iter::repeat_n(n, take as usize));
            free[n] = 0;
            need -= take;
        }
        while need > 0 {
            // Best fit for the rest, else the node with the most free GPUs.
            let fit = (0..free.len())
                .filter(|&n| free[n] >= need)
                .min_by(|&x, &y| free[x].cmp(&free[y]).then(x.cmp(&y)));
            let n = match fit {
                Some(n) => n,
                None => match (0..free.len())
                    .filter(|&n| free[n] > 0)
                    .max_by(|&x, &y| free[x].cmp(&free[y]).then(y.cmp(&x)))
                {
                    Some(n) => n,
                    None => break,
                },
            };
            let take = free[n].min(need);
            a.extend(std::iter::repeat_n(n, take as usize));
            free[n] -= take;
            need -= take;
        }
        if !a.is_empty() {
            a.sort_unstable();
            out.insert(jobs[j].id, a);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job<'a>(id: u32, max: u32, g: Option<&'a dyn Fn(u32, u32) -> f64>) -> PolluxJob<'a> {
        PolluxJob {
            id: JobId(id),
            submit: SimTime(u64::from(id)),
            attained_gpu_ms: 0,
            age: SimDuration::from_secs(600),
            restarts: 0,
            max_replicas: max,
            goodput: g,
        }
    }

    #[test]
    fn every_job_gets_a_gpu_before_any_grows() {
        // Linear scaling, 2 nodes × 4 GPUs, 3 jobs allowed 8 each: 8 GPUs split 3/3/2 at
        // most one apart (the harmonic mean favours balance), every job at least one.
        let lin = |_n: u32, r: u32| f64::from(r);
        let jobs = [
            job(0, 8, Some(&lin)),
            job(1, 8, Some(&lin)),
            job(2, 8, Some(&lin)),
        ];
        let a = Pollux::default().allocate(&jobs, &[4, 4], &Allocations::new());
        let mut sizes: Vec<usize> = a.values().map(Vec::len).collect();
        sizes.sort_unstable();
        assert_eq!(sizes.iter().sum::<usize>(), 8);
        assert!(sizes[0] >= 2 && sizes[2] - sizes[0] <= 1, "{sizes:?}");
    }

    #[test]
    fn a_job_capped_at_one_replica_leaves_the_rest() {
        // Job 0 may use one GPU only (an unmeasured job after its first round); job 1 takes
        // the other seven.
        let lin = |_n: u32, r: u32| f64::from(r);
        let jobs = [job(0, 1, None), job(1, 8, Some(&lin))];
        let a = Pollux::default().allocate(&jobs, &[4, 4], &Allocations::new());
        assert_eq!(a[&JobId(0)].len(), 1);
        assert_eq!(a[&JobId(1)].len(), 7);
    }

    #[test]
    fn an_unchanged_job_keeps_its_nodes() {
        let lin = |_n: u32, r: u32| f64::from(r);
        let jobs = [job(0, 4, Some(&lin)), job(1, 4, Some(&lin))];
        let prev: Allocations = [(JobId(0), vec![1, 1, 1, 1]), (JobId(1), vec![0, 0, 0, 0])]
            .into_iter()
            .collect();
        let a = Pollux::default().allocate(&jobs, &[4, 4], &prev);
        assert_eq!(a, prev);
    }
}
