//! Round allocators: every round (60 s in the Pollux artifact) a policy re-decides the GPUs
//! of every active job at once, from the job's state and the previous round's allocations,
//! and returns the new allocations as values; the engine applies the difference (a job whose
//! allocation changed restarts from its kept progress after the restart delay).
//!
//! | allocator | follows | decides |
//! |---|---|---|
//! | [`TwoQueueLas`] | Tiresias (Gu et al., NSDI '19) as the Pollux artifact runs it (`simulator/tiresias.py`) | rigid jobs: two queues split by attained GPU-time, preemption, most-free-node placement |
//! | [`Pollux`] | Pollux (Qiao et al., OSDI '21, §4) | each job's GPUs and placement to maximise the fleet's goodput (its batch size follows from them) |
//! | [`Heterogeneous`] | Gavel (Narayanan et al., OSDI '20) / Sia (Jayaram Subramanya et al., SOSP '23) | the accelerator type and count of each job on a fleet with several types |
//!
//! An allocation lists, for each replica, the node (an index into the round's node slice)
//! that holds it, grouped by node in the order the allocator took them.

mod hetero;
mod pollux;
mod tiresias;

pub use hetero::{HeteroJob, Heterogeneous};
pub use pollux::{Pollux, PolluxJob};
pub use tiresias::{LasJob, TwoQueueLas};

use crate::ids::JobId;
use std::collections::BTreeMap;

/// Each job's allocation: one node index per replica, grouped by node.
pub type Allocations = BTreeMap<JobId, Vec<usize>>;

/// Replicas per node of one allocation, in the order the nodes appear (the artifact's
/// placement: `[0, 0, 3, 3]` → `[2, 2]`).
pub fn placement_of(alloc: &[usize]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for (i, n) in alloc.iter().enumerate() {
        if i > 0 && alloc[i - 1] == *n {
            *out.last_mut().expect("a previous replica") += 1;
        } else {
            out.push(1);
        }
    }
    out
}

/// Distinct nodes of one allocation.
pub fn nodes_of(alloc: &[usize]) -> u32 {
    let mut v = alloc.to_vec();
    v.sort_unstable();
    v.dedup();
    v.len() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_group_consecutive_replicas() {
        assert_eq!(placement_of(&[0, 0, 3, 3]), vec![2, 2]);
        assert_eq!(placement_of(&[5]), vec![1]);
        assert!(placement_of(&[]).is_empty());
        assert_eq!(nodes_of(&[0, 0, 3, 3, 0]), 2);
    }
}
