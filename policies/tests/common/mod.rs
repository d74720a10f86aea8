//! What the randomized scheduler tests share: a seeded generator, a job with its run time,
//! and a driver that runs a workload through a [`Scheduler`] in 1 s steps.

use fleetsim_policies::*;

/// The crate's own SplitMix64, so the cases are the same on every machine.
pub use fleetsim_policies::placement::SplitMix64 as Gen;

/// A job of a workload (ids are positions in the workload) and how long it runs once
/// started, ms.
pub struct Job {
    pub job: PendingJob,
    pub run_ms: u64,
}

/// Runs `jobs` through `s` on `fleet` in steps of 1 s (at each step: releases of evicted
/// victims whose grace ended, completions, arrivals, one pass), until every job has left
/// or 10,000 s have passed. Returns every decision with its time and the pending-reason
/// counts after every pass, one per line.
pub fn drive(s: &mut Scheduler, fleet: &mut FleetState, jobs: &[Job]) -> String {
    let mut out = String::new();
    let mut running: Vec<(u64, JobId, QueueId, Vec<TaskAlloc>)> = Vec::new();
    // Victims in their grace period: (release time, job, its bindings).
    let mut evicting: Vec<(u64, JobId, Vec<TaskAlloc>)> = Vec::new();
    let mut next = 0;
    let mut t = 0;
    while next < jobs.len() || !running.is_empty() || !evicting.is_empty() || s.pending_len() > 0 {
        evicting.sort_by_key(|e| (e.0, e.1));
        while evicting.first().is_some_and(|e| e.0 <= t) {
            let (_, id, allocs) = evicting.remove(0);
            for a in &allocs {
                fleet.release(a).unwrap();
            }
            s.on_released(id, SimTime(t));
        }
        running.sort_by_key(|r| (r.0, r.1));
        while running.first().is_some_and(|r| r.0 <= t) {
            let (_, id, q, allocs) = running.remove(0);
            let milli = jobs[id.index()].job.total_gpu_milli();
            for a in &allocs {
                fleet.release(a).unwrap();
            }
            s.on_job_end(id, q, milli, SimTime(t));
        }
        while next < jobs.len() && jobs[next].job.submit.0 <= t {
            let _ = s.submit_at(fleet, jobs[next].job.clone(), SimTime(t));
            next += 1;
        }
        for d in s.schedule_at(fleet, SimTime(t)) {
            out.push_str(&format!("{t} {d:?}\n"));
            match d {
                Decision::Start { job, tasks, .. } => {
                    let j = &jobs[job.index()];
                    running.push((t + j.run_ms, job, j.job.queue, tasks));
                }
                Decision::Preempt { job, grace, .. } => {
                    let i = running.iter().position(|r| r.1 == job).unwrap();
                    let (_, id, _, allocs) = running.remove(i);
                    if grace > SimDuration::ZERO {
                        // Zero grace: the scheduler released the bindings itself.
                        evicting.push((t + grace.0, id, allocs));
                    }
                }
                Decision::Reject { .. } => {}
            }
        }
        out.push_str(&format!("{t} reasons {:?}\n", s.pending_reason_counts()));
        t += 1000;
        if t > 10_000_000 {
            break;
        }
    }
    out
}
