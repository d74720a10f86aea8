//! A heterogeneity-aware round allocator for fleets with several accelerator types, after
//! Gavel's LAS policy over a throughput matrix (D. Narayanan et al., "Heterogeneity-Aware
//! Cluster Scheduling Policies for Deep Learning Workloads", OSDI '20) and Sia's per-type
//! goodput (S. Jayaram Subramanya et al., SOSP '23):
//!
//! - every round, jobs are taken in least-attained-service order (attained service counted
//!   in *normalized* GPU-time: time × GPUs × the type's relative throughput, so a job is not
//!   favoured for having run on slow accelerators), then earliest submission, then id;
//! - a running job keeps its nodes if they are still free for it (no restart);
//! - otherwise it takes the accelerator type on which it runs fastest among those with room
//!   for all its GPUs ([`crate::goodput::ThroughputMatrix`]; ties to the lower type index),
//!   packed on that type's nodes with the most free GPUs (lowest index among equals); a job
//!   whose GPUs fit no type waits.
//!
//! Gavel and Sia solve an optimisation (LP / ILP) per round for the fractions of time each job
//! spends on each type; this greedy is its round-by-round counterpart and is documented as
//! such: it never time-slices a job across types within a round.

use super::Allocations;
use crate::ids::JobId;
use crate::time::SimTime;

/// One job as the heterogeneous allocator sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct HeteroJob {
    /// The job.
    pub id: JobId,
    /// Submission time.
    pub submit: SimTime,
    /// Normalized GPU-milliseconds attained so far.
    pub attained: u128,
    /// GPUs it runs on.
    pub gpus: u32,
    /// Relative throughput per accelerator type (index = type), 0 = cannot run there.
    pub throughput: Vec<f64>,
}

/// The allocator (stateless). See the module docs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Heterogeneous;

impl Heterogeneous {
    /// One round: `nodes[i] = (GPUs, accelerator type)`; `prev` last round's allocations.
    pub fn allocate(
        &self,
        jobs: &[HeteroJob],
        nodes: &[(u32, usize)],
        prev: &Allocations,
    ) -> Allocations {
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&i| (jobs[i].attained, jobs[i].submit, jobs[i].id));
        let mut free: Vec<u32> = nodes.iter().map(|n| n.0).collect();
        let types = nodes.iter().map(|n| n.1 + 1).max().unwrap_or(0);
        let mut out = Allocations::new();
        for &j in &order {
            let job = &jobs[j];
            if let Some(a) = prev.get(&job.id) {
                let mut need = vec![0u32; nodes.len()];
                for &n in a {
                    need[n] += 1;
                }
                if a.len() as u32 == job.gpus && need.iter().zip(&free).all(|(k, f)| k <= f) {
                    for (n, k) in need.iter().enumerate() {
                        free[n] -= k;
                    }
                    out.insert(job.id, a.clone());
                    continue;
                }
            }
            let mut ranked: Vec<usize> = (0..types)
                .filter(|&t| job.throughput.get(t).copied().unwrap_or(0.0) > 0.0)
                .collect();
            ranked.sort_by(|&x, &y| {
                job.throughput[y]
                    .total_cmp(&job.throughput[x])
                    .then(x.cmp(&y))
            });
            for t in ranked {
                let room: u32 = (0..nodes.len())
                    .filter(|&n| nodes[n].1 == t)
                    .map(|n| free[n])
                    .sum();
                if room < job.gpus {
                    continue;
                }
                let mut a = Vec::new();
                while (a.len() as u32) < job.gpus {
                    let n = (0..nodes.len())
                        .filter(|&n| nodes[n].1 == t && free[n] > 0)
                        .max_by(|&x, &y| free[x].cmp(&free[y]).then(y.cmp(&x)))
                        .expect("room was counted");
                    let take = free[n].min(job.gpus - a.len() as u32);
                    a.extend(std::iter::repeat_n(n, take as usize));
                    free[n] -= take;
                }
                out.insert(job.id, a);
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_job_takes_its_fastest_type_with_room() {
        // Nodes: 0 = type 0 (4 GPUs), 1 = type 1 (4 GPUs). Job 0 runs 3× faster on type 1,
        // job 1 2× faster; both want 4. Job 0 (less attained) takes type 1, job 1 falls
        // back to type 0.
        let j = |id: u32, attained: u128, tp: Vec<f64>| HeteroJob {
            id: JobId(id),
            submit: SimTime(0),
            attained,
            gpus: 4,
            throughput: tp,
        };
        let jobs = [j(0, 0, vec![1.0, 3.0]), j(1, 5, vec![1.0, 2.0])];
        let a = Heterogeneous.allocate(&jobs, &[(4, 0), (4, 1)], &Allocations::new());
        assert_eq!(a[&JobId(0)], vec![1; 4]);
        assert_eq!(a[&JobId(1)], vec![0; 4]);
    }
}
