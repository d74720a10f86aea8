//! The application of the scheduler's decisions through the checked fleet state.

use fleetsim_policies::{Decision, SimDuration, TaskAlloc};

use crate::engine::events::EventKind;
use crate::engine::{
    AdmissionEvent, Allocs, EngineError, JobState, PreemptionEvent, Simulation, NOT_RUNNING,
};
use crate::workload::RecordedKind;

impl Simulation {
    pub(in crate::engine) fn apply(&mut self, d: Decision) -> Result<(), EngineError> {
        let now = self.now;
        match d {
            Decision::Start { job, cell, tasks } => {
                let rec = &mut self.jobs[job.index()];
                let startable = rec.live
                    && rec.allocs.is_empty()
                    && matches!(rec.state, JobState::Pending | JobState::Awaiting);
                if !startable {
                    return Err(self.invariant(format!("job {job} started twice")));
                }
                // The whole gang: its tasks, or (tasks that take the node's shape) an equal
                // number of members per task adding up to its accelerators.
                let placed: u64 = tasks.iter().map(TaskAlloc::total_gpu_milli).sum();
                let whole = tasks.len() == rec.tasks as usize
                    || (rec.split
                        && tasks.len() % rec.tasks as usize == 0
                        && placed == rec.shape.total_gpu_milli() * u64::from(rec.tasks));
                if !whole {
                    let want = rec.tasks;
                    return Err(self.invariant(format!(
                        "job {job}: {} of {want} gang tasks placed",
                        tasks.len()
                    )));
                }
                rec.members = tasks.len() as u32;
                for s in self.subs.list.iter_mut().flatten() {
                    s.on_job_start(job);
                }
                let rec = &mut self.jobs[job.index()];
                let first = rec.start.is_none();
                let mut done = SimDuration::ZERO;
                if first {
                    rec.start = Some(now);
                } else if let Some(x) = rec.extra.as_mut() {
                    x.run_start = Some(now);
                    done = x.done;
                    if let Some(p) = x.pending_since.take() {
                        x.requeued_pending_ms += now.saturating_since(p).0;
                    }
                }
                rec.cell = Some(cell);
                rec.allocs = Allocs::from_vec(tasks);
                rec.state = JobState::Running;
                let run = self.next_run;
                self.next_run = (self.next_run + 1) % NOT_RUNNING;
                rec.run = run;
                let mut remaining = SimDuration(rec.runtime.0.saturating_sub(done.0));
                if self.cfg.reliability {
                    remaining = self.start_account(job, remaining, first);
                }
                if let Some(s) = &mut self.subs.serve {
                    // A replica runs until the autoscaler removes it.
                    if let Some(stop) = s.stop_of(job) {
                        remaining = stop.saturating_since(now);
                        let rec = &self.jobs[job.index()];
                        s.on_start(job, rec.shape.num_gpu as u64 * rec.tasks as u64);
                    }
                }
                let rec = &self.jobs[job.index()];
                let (submit, pre, tenant, gpu) = (
                    rec.submit,
                    rec.kind == RecordedKind::PreExisting || !rec.measured || self.is_replica(job),
                    rec.tenant,
                    rec.shape.total_gpu_milli() * rec.tasks as u64,
                );
                if let Some(w) = self.sched.take_wait_profile(job) {
                    let rec = &mut self.jobs[job.index()];
                    match &mut rec.wait {
                        Some(prev) => {
                            for (a, b) in prev.iter_mut().zip(w.iter()) {
                                *a += b;
                            }
                        }
                        slot => *slot = Some(w),
                    }
                }
                self.metrics.on_allocs(
                    &self.fleet,
                    self.jobs[job.index()].allocs.as_slice(),
                    true,
                    false,
                );
                self.metrics.on_tenant_alloc(tenant, gpu, true);
                if first {
                    self.metrics.on_start(submit, now, pre);
                    self.counts.started += 1;
                    self.tenant_stats[tenant.index()].started += 1;
                }
                self.running += 1;
                self.events
                    .push(now + remaining, EventKind::Finish(job, run));
                if self.cfg.record_admissions {
                    self.logs.admissions.push(AdmissionEvent {
                        at: now,
                        seq: self.jobs[job.index()].seq,
                        flavor: self.sched.flavor_of(job).map(str::to_string),
                    });
                }
            }
            Decision::Preempt {
                job,
                preemptor,
                reason,
                grace,
            } => {
                let rec = &self.jobs[job.index()];
                if !rec.live || rec.state != JobState::Running {
                    return Err(self.invariant(format!(
                        "job {job} preempted while not running ({:?})",
                        rec.state
                    )));
                }
                if self.cfg.record_preemptions {
                    self.logs.preemption_log.push(PreemptionEvent {
                        at: now,
                        victim: rec.seq,
                        preemptor: self.jobs[preemptor.index()].seq,
                        reason,
                    });
                }
                self.counts.preemptions += 1;
                *self
                    .counts
                    .preemptions_by_reason
                    .entry(reason.as_str().to_string())
                    .or_insert(0) += 1;
                let tenant = rec.tenant;
                self.tenant_stats[tenant.index()].preemptions += 1;
                self.jobs[job.index()]
                    .extra
                    .get_or_insert_with(Box::default)
                    .preemptions += 1;
                let lost_before = self.tally.lost_gpu_milli_ms;
                self.stop_run(job, grace, false);
                if let Some(s) = &mut self.subs.serve {
                    if s.is_replica(preemptor) && !s.is_replica(job) {
                        s.on_preempted_by_serving(self.tally.lost_gpu_milli_ms - lost_before);
                    }
                }
                if grace == SimDuration::ZERO {
                    // The policy released the victim's bindings and requeued it already.
                    self.unbind(job);
                    self.pass.dirty = true;
                } else {
                    self.terminate(job, grace);
                }
            }
            Decision::Reject { job, .. } => {
                return Err(self.invariant(format!(
                    "a scheduling pass rejected job {job}; rejection happens at submit"
                )));
            }
        }
        Ok(())
    }
}
