//! Backfill: reservations for jobs that cannot start, so that later jobs may start only when
//! they do not delay them.
//!
//! # What it follows
//! * **EASY** (Lifka, "The ANL/IBM SP scheduling system", JSSPP'95; Mu'alem & Feitelson,
//!   IEEE TPDS 2001): the first job in the pass's order that cannot start gets a reservation
//!   at the earliest time it fits; a later job may start now only if it does not delay it.
//! * **Conservative** (Mu'alem & Feitelson): every job that cannot start gets a reservation
//!   (up to `depth` of them, as Slurm's `bf_max_job_test` bounds its backfill scheduler); a
//!   later job may start only if it delays none.
//!
//! # How
//! A reservation is computed from the running jobs' **estimated ends** (start + the job's
//! runtime estimate: its user time limit, or its true run time when the scenario asks for an
//! oracle; a job without an estimate never ends for this purpose), never from a fixed
//! placeholder (field case B11): running jobs are released in the fleet state in end order
//! until the job fits, with the placement policy choosing its nodes; then every release is
//! undone. The reservation is the time and the task bindings found.
//!
//! A candidate that would run past a reservation's start must not touch the reservation's
//! resources: the part of them that is free now is bound to a phantom in the fleet state
//! while the candidate is placed, so the placement policy simply does not see it. A candidate
//! whose estimate ends before every reservation starts may use anything free. So a job started
//! now either ends (by its estimate) before a reservation begins, or leaves its resources
//! alone: with estimates that are never exceeded (time limits enforced, or the oracle), the
//! job holding the EASY reservation starts no later than the reservation's time. Reservations
//! are recomputed at every pass. A job blocked only by a reservation waits with reason
//! [`crate::PendingReason::Reservation`].
//!
//! Cost: a reservation releases running jobs one by one (`O(r log r)` to sort their ends,
//! then a placement attempt only once the free capacity could hold the job).

use crate::ids::{CellId, JobId};
use crate::state::{bits, FleetState, TaskAlloc};
use crate::time::SimTime;

named_enum!(
    /// A backfill policy by name.
    BackfillKind {
        /// No reservations: a job that cannot start never holds later ones back.
        #[default]
        None => "none",
        /// EASY: one reservation, for the first job that cannot start.
        Easy => "easy",
        /// Conservative: a reservation for every job that cannot start (up to a depth).
        Conservative => "conservative",
    }
);

/// Backfill settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BackfillConfig {
    /// Most reservations per pass (EASY: 1).
    pub depth: usize,
}

impl BackfillConfig {
    /// The settings of a policy: EASY reserves for one job, conservative for up to
    /// `conservative_depth`; `None` for [`BackfillKind::None`].
    pub fn of(kind: BackfillKind, conservative_depth: usize) -> Option<BackfillConfig> {
        match kind {
            BackfillKind::None => None,
            BackfillKind::Easy => Some(BackfillConfig { depth: 1 }),
            BackfillKind::Conservative => Some(BackfillConfig {
                depth: conservative_depth.max(1),
            }),
        }
    }
}

/// A job's reserved start: when and where.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Reservation {
    /// The job.
    pub job: JobId,
    /// Reserved start.
    pub start: SimTime,
    /// Its end by the job's estimate (`SimTime::MAX` without one).
    pub end: SimTime,
    /// The cell.
    pub cell: CellId,
    /// The task bindings it would get.
    pub allocs: Vec<TaskAlloc>,
}

/// Binds, in `fleet`, the part of each reservation's resources that is free now (so that a
/// placement does not see it). Returns the phantoms to release with [`release_phantoms`].
pub(crate) fn apply_phantoms(fleet: &mut FleetState, res: &[Reservation]) -> Vec<TaskAlloc> {
    apply_phantom_allocs(fleet, res.iter().flat_map(|r| r.allocs.iter()))
}

/// As [`apply_phantoms`], for any bindings.
pub(crate) fn apply_phantom_allocs<'a>(
    fleet: &mut FleetState,
    allocs: impl Iterator<Item = &'a TaskAlloc>,
) -> Vec<TaskAlloc> {
    let mut applied = Vec::new();
    {
        for a in allocs {
            let n = fleet.node(a.node);
            if !n.schedulable {
                continue;
            }
            let free = fleet.gpu_free(a.node);
            let mask = bits(a.gpu_mask)
                .filter(|&i| free[i] as u32 >= a.gpu_milli)
                .fold(0u64, |m, i| m | 1 << i);
            let p = TaskAlloc {
                node: a.node,
                gpu_mask: mask,
                gpu_milli: if mask == 0 { 0 } else { a.gpu_milli },
                cpu_milli: a.cpu_milli.min(n.free_cpu_milli),
                mem_mib: a.mem_mib.min(n.free_mem_mib),
            };
            if p.gpu_mask == 0 && p.cpu_milli == 0 && p.mem_mib == 0 {
                continue;
            }
            fleet.apply(&p).expect("a phantom takes only what is free");
            applied.push(p);
        }
    }
    applied
}

/// Undoes [`apply_phantoms`].
pub(crate) fn release_phantoms(fleet: &mut FleetState, phantoms: &[TaskAlloc]) {
    for p in phantoms.iter().rev() {
        fleet
            .release(p)
            .expect("releasing a phantom made in this pass");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_by_policy() {
        assert_eq!(BackfillConfig::of(BackfillKind::None, 10), None);
        assert_eq!(
            BackfillConfig::of(BackfillKind::Easy, 10),
            Some(BackfillConfig { depth: 1 })
        );
        assert_eq!(
            BackfillConfig::of(BackfillKind::Conservative, 10),
            Some(BackfillConfig { depth: 10 })
        );
        assert_eq!("easy".parse::<BackfillKind>(), Ok(BackfillKind::Easy));
    }
}
