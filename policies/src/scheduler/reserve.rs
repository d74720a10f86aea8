//! Backfill reservations of a pass (the policy: [`crate::backfill`]).

use super::*;
use crate::backfill::*;

/// Gives `job`, which cannot start now, a reservation in the current pass if the policy's
/// depth allows one.
pub(crate) fn reserve(
    c: &mut Core,
    pass: &mut PassState,
    fleet: &mut FleetState,
    job: &PendingJob,
) {
    let Some(cfg) = c.backfill else { return };
    if pass.reservations.len() >= cfg.depth || pass.reservations.iter().any(|r| r.job == job.id) {
        return;
    }
    let now = c.now;
    // The running set as it was at the pass's first reservation attempt, by expected end
    // (`super::ends`); taken out of the core for the walk, which places in it.
    let mut ends = c.ends.take().expect("kept with backfill on");
    if !pass.ends_taken {
        pass.ends_taken = true;
        ends.open();
        #[cfg(debug_assertions)]
        {
            let mut copy: Vec<(SimTime, JobId)> = c
                .running_jobs()
                .map(|r| (super::ends::end_of(r), r.job.id))
                .collect();
            copy.sort_unstable();
            assert!(ends.live().eq(copy), "the ends index holds the running set");
        }
    }
    ends.check_snapshot();
    let est = job.runtime_estimate;
    let need = job.total_gpu_milli();
    let mut released: Vec<TaskAlloc> = Vec::new();
    let mut found: Option<Reservation> = None;
    let mut walk = ends.snapshot().peekable();
    while let Some(&(group, _)) = walk.peek() {
        if group == SimTime::MAX {
            break;
        }
        let t = group.max(now);
        // Release every job ending at t (one stopped since the snapshot holds nothing).
        while let Some((_, id)) = walk.next_if(|e| e.0 == group) {
            let reg = c.running.as_ref().expect("ends come from the running set");
            let Some(r) = reg.get(id.index()).and_then(|r| r.as_deref()) else {
                continue;
            };
            for a in &r.allocs {
                fleet.release(a).expect("releasing a running job's binding");
                released.push(*a);
            }
        }
        if need > c.free_for(fleet, job, job.models) {
            continue;
        }
        let end = est.map_or(SimTime::MAX, |e| t + e);
        let overlapping: Vec<Reservation> = pass
            .reservations
            .iter()
            .filter(|r| r.start < end && r.end > t)
            .cloned()
            .collect();
        let phantoms = apply_phantoms(fleet, &overlapping);
        let placed = c.place_in_cells(pass, fleet, job, job.models);
        release_phantoms(fleet, &phantoms);
        if let Some((cell, allocs)) = placed {
            for a in allocs.iter().rev() {
                fleet.release(a).expect("releasing a trial placement");
            }
            found = Some(Reservation {
                job: job.id,
                start: t,
                end,
                cell,
                allocs,
            });
            break;
        }
    }
    drop(walk);
    for a in released.iter().rev() {
        fleet
            .apply(a)
            .expect("restoring a running job's own binding cannot fail");
    }
    c.ends = Some(ends);
    if let Some(r) = found {
        let at = pass.reservations.partition_point(|x| x.start <= r.start);
        pass.reservations.insert(at, r);
    }
}
