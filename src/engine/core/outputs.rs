//! A run's outputs: job rows and their runs, the end-of-run audit and the closing
//! account ([`super::super::RunResult`]).

use fleetsim_policies::{longest_reason, JobId, PendingReason, SimTime};

use crate::engine::{
    emit, EndReason, EngineError, FinalState, JobRow, JobSink, JobState, RunEnd, RunResult,
    RunSegment, Simulation,
};
use crate::workload::{RecordedKind, Skipped};

/// What the run counts for its result beside the job counts.
#[derive(Debug, Default)]
pub(in crate::engine) struct Tally {
    /// Events applied (arrivals, completions, recorded starts), [`RunResult::events`].
    pub(in crate::engine) event_count: u64,
    /// Scheduling passes, [`RunResult::passes`].
    pub(in crate::engine) passes: u64,
    /// Tenant of each wait the collector keeps, in the same order.
    pub(in crate::engine) wait_tenant: Vec<u32>,
    /// Waits (all pending time) of serving replicas that started, ms: reported in the
    /// serving section, not among the jobs' waits.
    pub(in crate::engine) replica_waits_ms: Vec<u64>,
    /// Accelerator-time lost to preemption and failures (progress lost plus time held in
    /// grace), GPU-milli·ms, [`RunResult::lost_gpu_milli_ms`].
    pub(in crate::engine) lost_gpu_milli_ms: u128,
}

impl Simulation {
    /// The run job `id` holds resources in now, as if it ended now.
    pub(in crate::engine) fn run_segment(&self, id: JobId, ended: RunEnd) -> RunSegment {
        let r = &self.jobs[id.index()];
        let x = r.extra.as_deref();
        RunSegment {
            start: x.and_then(|x| x.run_start).or(r.start).unwrap_or(self.now),
            end: self.now,
            gpus: r
                .allocs
                .as_slice()
                .iter()
                .map(|a| (a.node, a.gpu_mask))
                .collect(),
            ended,
        }
    }

    /// Job `id`'s runs for its row: the stopped ones, then the one it holds resources in.
    pub(in crate::engine) fn runs_of(&self, id: JobId, state: FinalState) -> Vec<RunSegment> {
        if !self.cfg.record_runs {
            return Vec::new();
        }
        let r = &self.jobs[id.index()];
        let mut runs = r.extra.as_deref().map_or_else(Vec::new, |x| x.runs.clone());
        if !r.allocs.is_empty() {
            let ended = match state {
                FinalState::Completed | FinalState::WalltimeReached => RunEnd::Finished,
                _ => RunEnd::AtEnd,
            };
            runs.push(self.run_segment(id, ended));
        }
        runs
    }

    pub(in crate::engine) fn row(
        &self,
        id: JobId,
        state: FinalState,
        finish: Option<SimTime>,
        reason: Option<String>,
    ) -> JobRow {
        let r = &self.jobs[id.index()];
        JobRow {
            runs: self.runs_of(id, state),
            id: r.seq,
            name: r.name.to_string(),
            tenant: self.names.tenants[r.tenant.index()].clone(),
            queue: self.names.queues[r.queue.index()].clone(),
            qos: r.qos.as_ref().map(|q| q.to_string()),
            priority: r.priority,
            submit: r.submit,
            start: r.start,
            finish,
            run_ms: match (r.start, finish) {
                (Some(s), Some(f)) => Some((f - s).0),
                _ => None,
            },
            runtime_ms: r.runtime.0,
            service_ms: r.start.map(|s| {
                let x = r.extra.as_deref();
                let current = if r.state == JobState::Running {
                    let from = x.and_then(|x| x.run_start).unwrap_or(s);
                    finish.unwrap_or(self.now).saturating_since(from).0
                } else {
                    0
                };
                x.map_or(0, |x| x.served_ms) + current
            }),
            pending_ms: Some(self.pending_total(id)),
            requested_time: r.time_limit,
            tasks: r.tasks,
            shape: r.shape,
            cell: r.cell.map(|c| self.fleet.cells()[c.index()].name.clone()),
            nodes: r
                .allocs
                .as_slice()
                .iter()
                .map(|a| self.fleet.node_name(a.node).to_string())
                .collect(),
            last_start: r.extra.as_ref().and_then(|x| x.run_start).or(r.start),
            preemptions: r.extra.as_ref().map_or(0, |x| x.preemptions),
            failures: r.extra.as_ref().map_or(0, |x| x.failures),
            lost_gpu_milli_ms: r.extra.as_ref().map_or(0, |x| x.lost_gpu_milli_ms),
            allocated_gpu_milli_ms: self.job_account(id, finish).0,
            startup_gpu_milli_ms: self.job_account(id, finish).1,
            held_on_failed_gpu_milli_ms: r
                .extra
                .as_ref()
                .map_or(0, |x| x.held_on_failed_gpu_milli_ms),
            held_by_incomplete_gang_gpu_milli_ms: r
                .extra
                .as_ref()
                .map_or(0, |x| x.held_incomplete_gpu_milli_ms),
            pending_reason: r.wait.as_deref().and_then(longest_reason),
            first_reservation: r.extra.as_ref().and_then(|x| x.first_reservation),
            state,
            reason,
            measured: r.measured && r.kind != RecordedKind::PreExisting,
            serving_replica: self.is_replica(id),
        }
    }

    /// Time job `id` has been pending in all, ms: submit → first start (→ now if it never
    /// started), plus every wait after a preemption or failure (the open one up to now).
    pub(in crate::engine) fn pending_total(&self, id: JobId) -> u64 {
        let r = &self.jobs[id.index()];
        match r.start {
            None => self.now.saturating_since(r.submit).0,
            Some(s) => {
                let x = r.extra.as_deref();
                let open = x
                    .and_then(|x| x.pending_since)
                    .map_or(0, |p| self.now.saturating_since(p).0);
                (s - r.submit).0 + x.map_or(0, |x| x.requeued_pending_ms) + open
            }
        }
    }

    pub(in crate::engine) fn audit(&self) -> Result<(), EngineError> {
        let growth = self.elastic.iter().flat_map(|e| e.growth_allocs());
        self.fleet
            .audit(
                self.jobs
                    .iter()
                    .flat_map(|j| j.allocs.as_slice().iter())
                    .chain(growth),
            )
            .map_err(|message| self.invariant(message))?;
        let elastic = self.elastic.as_ref();
        let holding = self.jobs.iter().enumerate().filter(|(i, j)| {
            !elastic.is_some_and(|e| e.holds(JobId(*i as u32)))
                && j.live
                && matches!(
                    j.state,
                    JobState::Running | JobState::Terminating | JobState::Recovering
                )
        });
        for (i, j) in holding.clone() {
            let partial = j.state == JobState::Recovering
                && j.allocs.as_slice().len() < j.members as usize
                && !j.allocs.is_empty();
            if !partial && j.allocs.as_slice().len() != j.members as usize {
                return Err(self.invariant(format!(
                    "job {i} holds {} bindings for a gang of {}",
                    j.allocs.as_slice().len(),
                    j.members
                )));
            }
        }
        self.sched
            .audit(holding.map(|(i, j)| {
                (
                    JobId(i as u32),
                    j.queue,
                    j.shape.total_gpu_milli() * j.tasks as u64,
                )
            }))
            .map_err(|message| self.invariant(message))
    }

    pub(in crate::engine) fn close(
        &mut self,
        stopped_at_horizon: Option<SimTime>,
        skipped_rows: Skipped,
        trace_start: Option<crate::workload::TraceStart>,
        sink: &mut dyn JobSink,
    ) -> Result<RunResult, EngineError> {
        self.audit()?;
        let reasons = self.sched.pending_reasons();
        let mut censored: Vec<(JobId, Option<PendingReason>)> = self
            .sched
            .pending()
            .map(|j| (j.id, reasons.get(&j.id).copied()))
            .collect();
        censored.extend(self.outside.awaiting_replay.keys().map(|&id| (id, None)));
        // Jobs the subsystems hold outside the queues, with the reasons they are censored
        // with.
        let held: std::collections::BTreeMap<JobId, &'static str> = self
            .subs
            .list
            .iter()
            .flatten()
            .flat_map(|s| s.held())
            .collect();
        censored.extend(held.keys().map(|&id| (id, None)));
        if let Some(e) = &self.elastic {
            censored.extend(e.waiting().map(|id| (id, None)));
        }
        censored.sort_by_key(|&(id, _)| self.jobs[id.index()].seq);
        // Jobs that ran and were requeued (preempted, or lost with a node) are not censored.
        let (requeued, censored): (Vec<_>, Vec<_>) = censored
            .into_iter()
            .partition(|&(id, _)| self.jobs[id.index()].start.is_some());
        for &(id, reason) in &requeued {
            self.counts.requeued_at_end += 1;
            self.settle_wait(id);
            let r = reason.map(|r| r.as_str().to_string());
            emit(sink, || self.row(id, FinalState::RequeuedAtEnd, None, r))?;
        }
        for &(id, reason) in &censored {
            // Not in the queues: still inside the dispatch latency (`dispatching`), or
            // awaiting a recorded (replay or pre-existing) start after the horizon.
            let r = match reason {
                Some(r) => r.as_str(),
                None if self.outside.dispatching.contains(&id) => "dispatching",
                None if self.jobs[id.index()].state == JobState::Held => {
                    held.get(&id).copied().unwrap_or("held")
                }
                None if self.elastic.as_ref().is_some_and(|e| e.holds(id)) => "waiting_for_round",
                None => "recorded_start_after_horizon",
            };
            self.counts.censored += 1;
            *self
                .counts
                .censored_by_reason
                .entry(r.to_string())
                .or_insert(0) += 1;
            emit(sink, || {
                self.row(id, FinalState::Censored, None, Some(r.to_string()))
            })?;
        }
        let mut running: Vec<JobId> = (0..self.jobs.len())
            .map(|i| JobId(i as u32))
            .filter(|id| {
                let r = &self.jobs[id.index()];
                r.live && !r.allocs.is_empty()
            })
            .collect();
        running.sort_by_key(|id| self.jobs[id.index()].seq);
        for id in running {
            self.counts.running_at_end += 1;
            self.settle_wait(id);
            if self.jobs[id.index()].state == JobState::Recovering {
                self.book_pause(id);
            }
            self.end_run_account(id, false);
            emit(sink, || self.row(id, FinalState::RunningAtEnd, None, None))?;
        }
        let c = &self.counts;
        if c.started + c.rejected + c.censored + c.cancelled != c.submitted {
            return Err(EngineError::Invariant {
                time: self.now,
                message: format!(
                    "job accounting: started {} + rejected {} + censored {} + cancelled {} != submitted {}",
                    c.started, c.rejected, c.censored, c.cancelled, c.submitted
                ),
            });
        }
        let end = match (stopped_at_horizon, censored.len()) {
            (Some(_), _) => EndReason::Horizon,
            (None, 0) => EndReason::Drained,
            (None, n) => EndReason::Stuck { pending: n as u64 },
        };
        // With a horizon the window ends at it, or at the last event when the run ended
        // before it (stuck jobs' blocked time counts; a run where nothing completes still
        // has a window), never at the last completion alone.
        let window_end = stopped_at_horizon.or_else(|| self.cfg.horizon.map(|h| self.now.min(h)));
        let occupancy = self.metrics.finish(window_end);
        // Per-tenant waits: the collector's waits grouped by tenant in place (no copy).
        let groups = crate::metrics::stats::group_by_tag(
            &mut self.metrics.waits_ms,
            &mut self.tally.wait_tenant,
            self.tenant_stats.len(),
        );
        for (ts, r) in self.tenant_stats.iter_mut().zip(groups) {
            ts.wait_s = crate::metrics::dist_ms(&mut self.metrics.waits_ms[r]);
        }
        let makespan_ms = match (self.metrics.first_submit(), self.metrics.last_finish()) {
            (Some(a), Some(b)) => Some((b - a).0),
            _ => None,
        };
        let serving = self.subs.serve.as_mut().map(|sv| {
            // Training = every tenant that is no service's.
            let is_serving = |name: &str| sv.tenants.iter().any(|t| t == name);
            let (mut train_alloc, mut serve_alloc, mut train_lost) = (0u128, 0u128, 0u128);
            for (i, ts) in self.tenant_stats.iter().enumerate() {
                let alloc = occupancy.allocated_tenant.get(i).copied().unwrap_or(0);
                if is_serving(&ts.name) {
                    serve_alloc += alloc;
                } else {
                    train_alloc += alloc;
                    train_lost += ts.lost_gpu_milli_ms;
                }
            }
            let allocated: u128 = occupancy.allocated_cell.iter().sum();
            let available: u128 = occupancy.available_cell.iter().sum();
            sv.finish(
                self.now,
                train_alloc,
                train_lost,
                (allocated, available, serve_alloc),
            )
        });
        let serving = serving.map(|mut s| {
            s.replica_wait_s = crate::metrics::dist_ms(&mut self.tally.replica_waits_ms);
            s
        });
        let mut result = RunResult {
            counts: self.counts.clone(),
            skipped_rows,
            trace_start,
            occupancy,
            wait_s: crate::metrics::dist_ms(&mut self.metrics.waits_ms),
            first_start_wait_s: crate::metrics::dist_ms(&mut self.metrics.first_waits_ms),
            jct_s: crate::metrics::dist_ms(&mut self.metrics.jcts_ms),
            bounded_slowdown: crate::metrics::dist_f64(&mut self.metrics.slowdowns),
            makespan_ms,
            end,
            events: self.tally.event_count,
            passes: self.tally.passes,
            end_time: self.now,
            lost_gpu_milli_ms: self.tally.lost_gpu_milli_ms,
            tenants: {
                let mut t = std::mem::take(&mut self.tenant_stats);
                for ts in &mut t {
                    ts.entitlement_gpu_milli = self.names.queue_ids.get(&ts.name).and_then(|&q| {
                        self.sched
                            .quota()
                            .filter(|tree| tree.has_queue(q))
                            .map(|tree| tree.nominal_gpu_milli(q))
                    });
                }
                t
            },
            preemption_log: std::mem::take(&mut self.logs.preemption_log),
            admissions: std::mem::take(&mut self.logs.admissions),
            reason_log: std::mem::take(&mut self.logs.reason_log),
            preemption_plans: std::mem::take(&mut self.logs.preemption_plans),
            quota_log: std::mem::take(&mut self.logs.quota_log),
            autoscaling: None,
            pods_ready_log: Vec::new(),
            pods_ready: None,
            serving,
            elastic: self.elastic_stats(),
            reliability: self.cfg.reliability.then(|| {
                let mut r = std::mem::take(&mut self.subs.rel);
                r.lost_gpu_milli_ms = self.tally.lost_gpu_milli_ms;
                r
            }),
            live: self.logs.live.take().map(|mut b| {
                b.queues = self.names.queues.clone();
                *b
            }),
        };
        // Each subsystem's section, in registry order.
        self.each_subsystem(Some(sink), |s, ctx| {
            s.finish(ctx, &mut result);
            Ok(())
        })?;
        Ok(result)
    }
}
