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
    if pass.ends.is_none() {
        let mut ends: Vec<(SimTime, JobId)> = c
            .running_jobs()
            .map(|r| {
                let end = r.evicting.map_or(r.est_end, |e| e.release_at);
                (end, r.job.id)
            })
            .collect();
        ends.sort_unstable();
        pass.ends = Some(ends);
    }
    let ends = pass.ends.take().expect("built above");
    let est = job.runtime_estimate;
    let need = job.total_gpu_milli();
    let mut released: Vec<TaskAlloc> = Vec::new();
    let mut found: Option<Reservation> = None;
    let mut i = 0;
    while i < ends.len() {
        let t = ends[i].0.max(now);
        if ends[i].0 == SimTime::MAX {
            break;
        }
        // Release every job ending at t.
        let group = ends[i].0;
        while i < ends.len() && ends[i].0 == group {
            let reg = c.running.as_ref().expect("ends come from the running set");
            let r = reg[ends[i].1.index()].as_deref().expect("tracked");
            for a in &r.allocs {
                fleet.release(a).expect("releasing a running job's binding");
                released.push(*a);
            }
            i += 1;
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
    for a in released.iter().rev() {
        fleet
            .apply(a)
            .expect("restoring a running job's own binding cannot fail");
    }
    pass.ends = Some(ends);
    if let Some(r) = found {
        let at = pass.reservations.partition_point(|x| x.start <= r.start);
        pass.reservations.insert(at, r);
    }
}
