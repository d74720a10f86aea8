//! The job lifecycle: submit (or reject), start from a recorded start, stop (preemption
//! and failure, with grace), release and requeue, finish.

use fleetsim_policies::live;
use fleetsim_policies::{
    kept_progress, CellId, JobId, ModelSet, NodeId, PendingJob, RejectReason, SimDuration, SimTime,
};

use crate::engine::events::EventKind;
use crate::engine::{
    demand_of, emit, queue_name, Allocs, EngineError, FinalState, JobRec, JobSink, JobState,
    RunEnd, Simulation, MAX_IN_FLIGHT, NOT_RUNNING,
};
use crate::scenario::{Mode, QueueMapping};
use crate::workload::RecordedKind;

impl Simulation {
    /// Job `id`, which started at least once, reached its final state (or the end of the
    /// run): its whole pending time joins the waits (a replica's, the serving section's).
    pub(in crate::engine) fn settle_wait(&mut self, id: JobId) {
        let r = &self.jobs[id.index()];
        if r.start.is_none() {
            return;
        }
        let pending = self.pending_total(id);
        if self.is_replica(id) {
            self.tally.replica_waits_ms.push(pending);
            return;
        }
        let pre = r.kind == RecordedKind::PreExisting || !r.measured;
        let (submit, tenant) = (r.submit, r.tenant);
        if self.metrics.on_settled(submit, pending, pre) {
            self.tally.wait_tenant.push(tenant.0);
        }
    }

    pub(in crate::engine) fn reject(
        &mut self,
        id: JobId,
        reason: RejectReason,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        // A rejected job is not demand: the fleet could never hold it.
        let rec = &self.jobs[id.index()];
        let d = demand_of(&rec.shape, rec.tasks, rec.runtime);
        let ts = &mut self.tenant_stats[rec.tenant.index()];
        ts.demand_gpu_milli_ms = ts.demand_gpu_milli_ms.saturating_sub(d);
        self.counts.rejected += 1;
        *self
            .counts
            .rejected_by_reason
            .entry(reason.as_str().to_string())
            .or_insert(0) += 1;
        emit(sink, || {
            self.row(
                id,
                FinalState::Rejected,
                None,
                Some(reason.as_str().to_string()),
            )
        })?;
        self.free_slot(id);
        Ok(())
    }

    /// Marks a job's record dead and its slot reusable.
    pub(in crate::engine) fn free_slot(&mut self, id: JobId) {
        let rec = &mut self.jobs[id.index()];
        rec.live = false;
        rec.run = NOT_RUNNING;
        rec.allocs = Allocs::None;
        rec.name = compact_str::CompactString::const_new("");
        rec.qos = None;
        rec.wait = None;
        rec.extra = None;
        self.ids.free_slots.push(id.0);
    }

    pub(in crate::engine) fn arrive(
        &mut self,
        spec: crate::workload::JobSpec,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        let seq = self.ids.next_seq;
        spec.shape
            .validate()
            .map_err(|message| EngineError::BadJob {
                name: spec.name.to_string(),
                seq,
                message,
            })?;
        let round_allocated = self
            .cfg
            .elastic
            .as_ref()
            .is_some_and(|e| e.allocator.sizing().is_none());
        if (spec.elastic.is_some() && self.cfg.elastic.is_none())
            || (spec.elastic.is_none() && round_allocated)
        {
            return Err(EngineError::BadJob {
                name: spec.name.to_string(),
                seq,
                message: match spec.elastic.as_deref() {
                    None => "a rigid job in a run with a round allocator (`[elastic]` `tiresias` or `pollux`: round-allocated jobs only)".into(),
                    Some(crate::workload::ElasticSpec::Sized(_)) => "a row with `min_gpus`, `max_gpus`, `work_gpu_s`, `throughput` is an elastic job: it needs the scenario's `[elastic]` table (`allocator = \"grow-idle\"` or `\"fixed\"`)".into(),
                    Some(crate::workload::ElasticSpec::Trained(_)) => "a round-allocated job (a `pollux` workload row) needs the scenario's `[elastic]` table".into(),
                },
            });
        }
        if self.ids.free_slots.is_empty() && self.jobs.len() >= MAX_IN_FLIGHT {
            return Err(EngineError::BadJob {
                name: spec.name.to_string(),
                seq,
                message: "more than 2^31 jobs in flight".into(),
            });
        }
        self.ids.next_seq += 1;
        let spec = super::super::elastic::with_min_runtime(spec);
        let t = spec.submit;
        self.metrics.on_submit(t);
        self.counts.submitted += 1;
        let tenant = self.tenant_id(&spec.tenant);
        let named_queue = spec.queue.is_some() || self.cfg.queue_mapping == QueueMapping::PerTenant;
        let queue = self.queue_id(queue_name(&spec, self.cfg.queue_mapping));
        let (default_limit, max_limit) = self.names.queue_limits[queue.index()];
        let mut limit = spec.time_limit.or(default_limit);
        if let (Some(l), Some(m)) = (limit, max_limit) {
            limit = Some(l.min(m));
        }
        if limit.is_some() && spec.elastic.is_some() {
            return Err(EngineError::BadJob {
                name: spec.name.to_string(),
                seq,
                message: "an elastic job under a queue time limit (the queue's `default_time_limit_s`, as capped by its `max_time_limit_s`): time limits do not apply to elastic jobs, whose length follows from their sizes".into(),
            });
        }
        let walltime_cut = limit.is_some_and(|l| spec.runtime > l);
        let runtime = match limit {
            Some(l) => spec.runtime.min(l),
            None => spec.runtime,
        };
        let measured = self.metrics.measured(t);
        let rec = JobRec {
            seq,
            live: true,
            name: spec.name,
            tenant,
            queue,
            priority: spec.priority,
            qos: spec.qos.clone().map(String::into_boxed_str),
            submit: t,
            runtime,
            walltime_cut,
            time_limit: limit,
            tasks: spec.tasks,
            shape: spec.shape,
            members: spec.tasks,
            split: spec.split,
            start: None,
            cell: None,
            allocs: Allocs::None,
            kind: spec.recorded,
            run: NOT_RUNNING,
            measured,
            state: JobState::Pending,
            wait: None,
            extra: None,
        };
        {
            let ts = &mut self.tenant_stats[tenant.index()];
            ts.jobs += 1;
            if spec.recorded != RecordedKind::NeverRan {
                ts.demand_gpu_milli_ms += demand_of(&spec.shape, spec.tasks, runtime);
            }
        }
        let id = match self.ids.free_slots.pop() {
            Some(slot) => {
                self.jobs[slot as usize] = rec;
                JobId(slot)
            }
            None => {
                self.jobs.push(rec);
                JobId((self.jobs.len() - 1) as u32)
            }
        };
        if spec.recorded == RecordedKind::NeverRan {
            self.counts.cancelled += 1;
            emit(sink, || {
                self.row(id, FinalState::Cancelled, None, Some("never_ran".into()))
            })?;
            self.free_slot(id);
            return Ok(());
        }
        if let Some(e) = spec.elastic.as_deref() {
            if self.elastic_arrive(id, e, sink)? {
                return Ok(());
            }
        }
        if self.cfg.reject_unknown_queues && named_queue && queue.0 >= self.names.known_queues {
            return self.reject(id, RejectReason::UnknownQueue, sink);
        }
        if limit == Some(SimDuration::ZERO) {
            return self.reject(id, RejectReason::InvalidTimeLimit, sink);
        }
        let mut models = ModelSet::ANY;
        if spec.shape.num_gpu > 0 && !spec.gpu_models.is_empty() {
            for name in &spec.gpu_models {
                if let Some(i) = self.fleet.models().iter().position(|m| m == name) {
                    models.insert(fleetsim_policies::ModelId(i as u16));
                }
            }
            if models.is_any() {
                return self.reject(id, RejectReason::NoAllowedModel, sink);
            }
        }
        let mut cells: Vec<CellId> = spec
            .cells
            .iter()
            .filter_map(|c| {
                self.fleet
                    .cells()
                    .iter()
                    .position(|x| &x.name == c)
                    .map(|i| CellId(i as u16))
            })
            .collect();
        cells.sort_unstable();
        cells.dedup();
        if !spec.cells.is_empty() && cells.is_empty() {
            return self.reject(id, RejectReason::NoAllowedCell, sink);
        }
        // Reserved serving cells: training (every tenant but the services') stays out.
        if let (Some(allowed), Some(sv)) = (&self.subs.training_cells, &self.subs.serve) {
            if !sv
                .tenants
                .iter()
                .any(|t| t.as_str() == spec.tenant.as_str())
            {
                if spec.cells.is_empty() {
                    cells.clone_from(allowed);
                } else {
                    cells.retain(|c| allowed.binary_search(c).is_ok());
                    if cells.is_empty() {
                        return self.reject(id, RejectReason::NoAllowedCell, sink);
                    }
                }
            }
        }
        if let (true, true, Some(first)) =
            (self.cfg.reliability, cells.len() > 1, spec.cells.first())
        {
            let home = self
                .fleet
                .cells()
                .iter()
                .position(|x| &x.name == first)
                .map(|i| CellId(i as u16));
            if home.is_some() {
                self.jobs[id.index()]
                    .extra
                    .get_or_insert_with(Box::default)
                    .home_cell = home;
            }
        }
        let job = PendingJob {
            id,
            tenant,
            queue,
            priority: spec.priority,
            submit: t,
            seq,
            shape: spec.shape,
            tasks: spec.tasks,
            models,
            cells,
            runtime_estimate: if self.cfg.estimate_oracle {
                Some(runtime)
            } else {
                limit
            },
            checkpoint_interval: self.cfg.checkpoint_interval,
            topology: spec.topology,
            split: spec.split,
            ..PendingJob::default()
        };
        let forced_at = match (spec.recorded, self.cfg.mode, spec.recorded_start) {
            (RecordedKind::PreExisting, _, _) => Some(t),
            (_, Mode::Replay, Some(s)) => Some(s.max(t)),
            _ => None,
        };
        if spec.recorded == RecordedKind::PreExisting {
            self.counts.pre_existing += 1;
        }
        let forced_at = match forced_at {
            None if self.cfg.dispatch_latency > SimDuration::ZERO => {
                self.outside.dispatching.insert(id);
                Some(t + self.cfg.dispatch_latency)
            }
            f => f,
        };
        match forced_at {
            Some(at) => {
                if let Err(reason) = self.sched.check_resolvable(&self.fleet, &job) {
                    self.outside.dispatching.remove(&id);
                    self.record_submit(&job, t, Some(&reason), false);
                    return self.reject(id, reason, sink);
                }
                self.outside.awaiting_replay.insert(id, job);
                self.jobs[id.index()].state = JobState::Awaiting;
                self.events.push(at, EventKind::ForcedStart(id));
            }
            None => {
                self.record_submit(&job, t, None, false);
                match self.sched.submit_at(&mut self.fleet, job, t) {
                    Ok(()) => self.pass.dirty = true,
                    Err(reason) => {
                        if let Some(l) = self.logs.live.as_mut() {
                            l.decisions.push(live::Decision::Reject {
                                t: t.0,
                                job: id.0,
                                reason: reason.clone(),
                            });
                        }
                        return self.reject(id, reason, sink);
                    }
                }
            }
        }
        Ok(())
    }

    pub(in crate::engine) fn forced_start(
        &mut self,
        id: JobId,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        let Some(job) = self.outside.awaiting_replay.remove(&id) else {
            return Err(EngineError::Invariant {
                time: self.now,
                message: format!("recorded start of job {id} that is not awaiting one"),
            });
        };
        if self.outside.dispatching.remove(&id) {
            // Dispatched: it joins the queues now, like a submission.
            self.record_submit(&job, self.now, None, false);
            self.enqueue(job)?;
            // A replica whose stop passed during its dispatch latency leaves at once.
            if let Some(n) = self.subs.serve.as_ref().and_then(|s| {
                s.stop_of(id)
                    .filter(|&stop| stop <= self.now)
                    .and(s.arrival_of(id))
            }) {
                self.replica_stop(n, sink)?;
            }
            return Ok(());
        }
        self.record_submit(&job, self.now, None, true);
        match self.sched.place_now(&mut self.fleet, &job) {
            Some(d) => {
                if let Some(l) = self.logs.live.as_mut() {
                    l.decisions
                        .push(live::Decision::from_policy(&d, self.now.0));
                }
                self.apply(d)
            }
            None => {
                self.counts.replay_conflicts += 1;
                // It cannot start as recorded: queue it like any other job.
                self.enqueue(job)
            }
        }
    }

    /// Puts a job that was resolvable at its submission into the queues now (pending):
    /// a dispatched job arriving, a recorded start that cannot be realized, a requeue after
    /// a pods-ready backoff.
    ///
    /// # Errors
    /// [`EngineError::Invariant`] when the scheduler finds it unresolvable after all.
    pub(in crate::engine) fn enqueue(&mut self, job: PendingJob) -> Result<(), EngineError> {
        let id = job.id;
        self.jobs[id.index()].state = JobState::Pending;
        self.sched
            .submit_at(&mut self.fleet, job, self.now)
            .map_err(|r| EngineError::Invariant {
                time: self.now,
                message: format!("job {id} resolvable at submit became unresolvable: {r}"),
            })?;
        self.pass.dirty = true;
        Ok(())
    }

    /// Records a submission (`started`: a start decided outside the queues) for
    /// [`EngineConfig::record_live`](crate::engine::EngineConfig::record_live), with the rejection
    /// it gets, if any.
    pub(in crate::engine) fn record_submit(
        &mut self,
        job: &PendingJob,
        t: SimTime,
        rejected: Option<&RejectReason>,
        started: bool,
    ) {
        let Some(l) = self.logs.live.as_mut() else {
            return;
        };
        let spec = live::JobSpec::from_pending(job);
        l.events.push(if started {
            live::Event::JobStarted { t: t.0, job: spec }
        } else {
            live::Event::JobSubmitted { t: t.0, job: spec }
        });
        if let Some(reason) = rejected {
            l.decisions.push(live::Decision::Reject {
                t: t.0,
                job: job.id.0,
                reason: reason.clone(),
            });
        }
    }

    /// The checkpoint interval a stop of job `id` rolls back to: the run's, except that a
    /// sized elastic job keeps all its progress unless the stop is a `failure` (its work is
    /// the elastic subsystem's, which rolls it back on a failure of its `min` only).
    pub(in crate::engine) fn stop_checkpoint(
        &self,
        id: JobId,
        failure: bool,
    ) -> Option<SimDuration> {
        if !failure && self.elastic.as_ref().is_some_and(|e| e.sizes(id)) {
            Some(SimDuration(1))
        } else {
            self.cfg.checkpoint_interval
        }
    }

    /// Stops a running job's run at `now`: progress since its last checkpoint is lost
    /// ([`Simulation::stop_checkpoint`]; `failure`: the stop is a failure of its node), and
    /// so is the accelerator-time it will hold during `grace`.
    pub(in crate::engine) fn stop_run(&mut self, id: JobId, grace: SimDuration, failure: bool) {
        let (kept, lost) = if self.cfg.reliability {
            self.stop_account(id, grace, failure)
        } else {
            let now = self.now;
            let ckpt = self.stop_checkpoint(id, failure);
            let rec = &mut self.jobs[id.index()];
            let gpu = rec.shape.total_gpu_milli() * rec.tasks as u64;
            let start = rec.start.expect("a stopped job started");
            let x = rec.extra.get_or_insert_with(Box::default);
            let ran = now.saturating_since(x.run_start.unwrap_or(start));
            let total = SimDuration(x.done.0 + ran.0);
            let kept = kept_progress(total, ckpt);
            (kept, (total.0 - kept.0 + grace.0) as u128 * gpu as u128)
        };
        let now = self.now;
        // Useful occupancy: the run's startup (if still going) ends now, and its work since
        // the last checkpoint, `lost` less the grace, was unproductive.
        if let Some(end) = self.startup_end(id) {
            self.metrics.startup_cut(self.jobs[id.index()].run, end);
        }
        let rec = &self.jobs[id.index()];
        let gpu = u128::from(rec.shape.total_gpu_milli()) * u128::from(rec.tasks);
        if let Some(per_gpu) = lost.checked_div(gpu) {
            let wall = per_gpu.saturating_sub(u128::from(grace.0));
            self.metrics.lost_work(
                &self.fleet,
                rec.allocs.as_slice(),
                wall.min(u64::MAX as u128) as u64,
            );
        }
        let rec = &mut self.jobs[id.index()];
        let start = rec.start.unwrap_or(now);
        let x = rec.extra.get_or_insert_with(Box::default);
        x.served_ms += now.saturating_since(x.run_start.unwrap_or(start)).0;
        // Pending (not running) from the stop to the next start, its grace included.
        x.pending_since = Some(now);
        x.done = kept;
        x.lost_gpu_milli_ms = x
            .lost_gpu_milli_ms
            .saturating_add(lost.min(u64::MAX as u128) as u64);
        self.tenant_stats[rec.tenant.index()].lost_gpu_milli_ms += lost;
        self.tally.lost_gpu_milli_ms += lost;
        if let Some(s) = &mut self.subs.serve {
            let gpus = rec.shape.num_gpu as u64 * rec.tasks as u64;
            s.on_stop(id, gpus, false);
        }
    }

    /// A stopped job keeps its bindings until `now + grace`, then [`Simulation::release`].
    pub(in crate::engine) fn terminate(&mut self, id: JobId, grace: SimDuration) {
        self.metrics
            .unproductive(&self.fleet, self.jobs[id.index()].allocs.as_slice(), true);
        let rec = &mut self.jobs[id.index()];
        rec.state = JobState::Terminating;
        let run = self.next_run;
        self.next_run = (self.next_run + 1) % NOT_RUNNING;
        rec.run = run;
        let x = rec.extra.get_or_insert_with(Box::default);
        x.release_at = Some(self.now + grace);
        x.held_nodes.clear();
        self.events
            .push(self.now + grace, EventKind::Release(id, run));
    }

    /// Forgets a stopped job's bindings (already released in the fleet state) and marks it
    /// pending.
    pub(in crate::engine) fn unbind(&mut self, id: JobId) {
        let rec = &self.jobs[id.index()];
        let (tenant, gpu) = (rec.tenant, rec.shape.total_gpu_milli() * rec.tasks as u64);
        let idle = rec.state == JobState::Terminating;
        self.metrics
            .on_allocs(&self.fleet, rec.allocs.as_slice(), false, idle);
        self.metrics.on_tenant_alloc(tenant, gpu, false);
        let nodes: Vec<NodeId> = if self.node_sets.draining.is_empty() {
            Vec::new()
        } else {
            rec.allocs.as_slice().iter().map(|a| a.node).collect()
        };
        let now = self.now;
        let seg = self
            .cfg
            .record_runs
            .then(|| self.run_segment(id, RunEnd::Stopped));
        let rec = &mut self.jobs[id.index()];
        if let Some(seg) = seg {
            rec.extra.get_or_insert_with(Box::default).runs.push(seg);
        }
        rec.allocs = Allocs::None;
        rec.state = JobState::Pending;
        // Waiting since its stop (a grace period ended now; without one, it stopped now).
        rec.extra
            .get_or_insert_with(Box::default)
            .pending_since
            .get_or_insert(now);
        rec.run = NOT_RUNNING;
        self.running -= 1;
        if !nodes.is_empty() {
            self.settle_drained(&nodes);
        }
        self.withdraw_if_overdue(id);
    }

    /// A replica past its planned stop that rejoins the queue (released after a grace
    /// period, requeued at once, or dispatched) is withdrawn at once: its stop event is
    /// queued again at `now`, applied before the next pass (ranked before arrivals).
    pub(in crate::engine) fn withdraw_if_overdue(&mut self, id: JobId) {
        if let Some(s) = &self.subs.serve {
            if let (Some(stop), Some(n)) = (s.stop_of(id), s.arrival_of(id)) {
                if stop <= self.now {
                    self.events.push(self.now, EventKind::ReplicaStop(n));
                }
            }
        }
    }

    /// The planned stop of replica arrival `n`: a replica still pending leaves its queue
    /// ([`fleetsim_policies::Scheduler::withdraw`]) and is written as `CANCELLED`, reason
    /// `withdrawn` (counted in `cancelled` when it never started; one that ran before was
    /// counted in `started`). A running one ends by its own completion at this instant; one
    /// in a grace period or the dispatch latency is withdrawn when it rejoins the queue
    /// ([`Simulation::withdraw_if_overdue`]).
    pub(in crate::engine) fn replica_stop(
        &mut self,
        n: u32,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        let Some(id) = self.subs.serve.as_ref().and_then(|s| s.job_of(n)) else {
            return Ok(()); // ended already
        };
        let rec = &self.jobs[id.index()];
        if rec.state != JobState::Pending || !self.sched.withdraw(id, rec.queue) {
            return Ok(());
        }
        if let Some(l) = self.logs.live.as_mut() {
            l.events.push(live::Event::JobCancelled {
                t: self.now.0,
                job: id.0,
            });
        }
        self.cancel_out_of_queue(id, "withdrawn", sink)
    }

    /// Job `id`, out of the queues, ends not run: counted in `cancelled` when it never
    /// started (a job that ran before settles its wait), its `CANCELLED` row with `reason`,
    /// its slot freed. The next instant runs passes.
    pub(in crate::engine) fn cancel_out_of_queue(
        &mut self,
        id: JobId,
        reason: &str,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        if self.jobs[id.index()].start.is_none() {
            self.counts.cancelled += 1;
        } else {
            self.settle_wait(id);
        }
        emit(sink, || {
            self.row(id, FinalState::Cancelled, None, Some(reason.into()))
        })?;
        if let Some(s) = &mut self.subs.serve {
            s.on_withdrawn(id);
        }
        self.free_slot(id);
        self.pass.dirty = true;
        Ok(())
    }

    /// A terminating job's grace period is over: its bindings are released and it is
    /// requeued.
    pub(in crate::engine) fn release(&mut self, id: JobId, run: u32) -> Result<(), EngineError> {
        let rec = &self.jobs[id.index()];
        if !rec.live || rec.run != run || rec.state != JobState::Terminating {
            return Ok(()); // stale
        }
        for a in rec.allocs.as_slice() {
            self.fleet
                .release(a)
                .map_err(|e| self.invariant(e.to_string()))?;
        }
        self.record_live(|t| live::Event::VictimReleased { t, job: id.0 });
        self.unbind(id);
        self.sched.on_released(id, self.now);
        self.pass.dirty = true;
        Ok(())
    }

    /// Releases every binding job `id` holds on the fleet and tells the collectors (the
    /// fleet's and the tenant's allocated GPUs); the job record keeps its bindings. Returns
    /// the job's GPU-milli (tasks × per-task).
    pub(in crate::engine) fn release_bindings(&mut self, id: JobId) -> Result<u64, EngineError> {
        let now = self.now;
        let rec = &self.jobs[id.index()];
        for a in rec.allocs.as_slice() {
            self.fleet.release(a).map_err(|e| EngineError::Invariant {
                time: now,
                message: e.to_string(),
            })?;
        }
        self.metrics
            .on_allocs(&self.fleet, rec.allocs.as_slice(), false, false);
        let total = rec.shape.total_gpu_milli() * u64::from(rec.tasks);
        self.metrics.on_tenant_alloc(rec.tenant, total, false);
        Ok(total)
    }

    pub(in crate::engine) fn finish(
        &mut self,
        id: JobId,
        run: u32,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        if self.elastic.as_ref().is_some_and(|e| e.holds(id)) {
            return self.elastic_finish(id, run, sink);
        }
        let now = self.now;
        let rec = &self.jobs[id.index()];
        if !rec.live || rec.run != run || rec.state != JobState::Running {
            return Ok(()); // a stale completion of an earlier run
        }
        self.elastic_sized_finishing(id)?;
        let total = self.release_bindings(id)?;
        if let Some(l) = self.logs.live.as_mut() {
            l.events.push(live::Event::JobFinished {
                t: now.0,
                job: id.0,
            });
        }
        let rec = &self.jobs[id.index()];
        self.sched.on_job_end(id, rec.queue, total, now);
        let pre = rec.kind == RecordedKind::PreExisting || !rec.measured || self.is_replica(id);
        self.metrics.on_finish(rec.submit, now, rec.runtime.0, pre);
        let walltime_cut = rec.walltime_cut;
        self.settle_wait(id);
        let state = if walltime_cut {
            self.counts.walltime_reached += 1;
            FinalState::WalltimeReached
        } else {
            FinalState::Completed
        };
        self.counts.completed += 1;
        self.running -= 1;
        self.end_run_account(id, true);
        // The row first: a replica's account forgets it.
        emit(sink, || self.row(id, state, Some(now), None))?;
        if let Some(s) = &mut self.subs.serve {
            let rec = &self.jobs[id.index()];
            s.on_stop(id, rec.shape.num_gpu as u64 * rec.tasks as u64, true);
        }
        if !self.node_sets.draining.is_empty() {
            let nodes: Vec<NodeId> = self.jobs[id.index()]
                .allocs
                .as_slice()
                .iter()
                .map(|a| a.node)
                .collect();
            self.settle_drained(&nodes);
        }
        self.free_slot(id);
        self.pass.dirty = true;
        Ok(())
    }
}
