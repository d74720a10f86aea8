//! The steps of one instant of a run, in the order of the ordering guarantees (the engine's
//! module docs): the run loop calls them in turn at each instant `t`.

use fleetsim_policies::{live, JobId, SimDuration, SimTime};

use crate::engine::events::{self, EventKind};
use crate::engine::{series_interval_cap, EngineError, JobSink, PreemptionPlan, Simulation};

impl Simulation {
    /// Fails when the time series up to `t` would need more intervals than the run may keep.
    pub(in crate::engine) fn check_intervals(&self, t: SimTime) -> Result<(), EngineError> {
        if let Some(a) = self.metrics.window_start() {
            let intervals = t.0.saturating_sub(a.0) / self.cfg.interval_ms.max(1);
            let max = series_interval_cap(self.metrics.snapshot_bytes());
            if intervals > max {
                return Err(EngineError::TooManyIntervals {
                    time: t,
                    intervals,
                    interval_ms: self.cfg.interval_ms,
                    max,
                });
            }
        }
        Ok(())
    }

    /// Moves the clock to `t`: interval starts before `t` see the state left by the previous
    /// instant; the subsystems, the services and the collector advance to `t`.
    pub(in crate::engine) fn advance_clock(&mut self, t: SimTime) {
        self.sample_fragmentation(|b| b < t);
        if !self.subs.list.is_empty() {
            let _ = self.each_subsystem(None, |s, ctx| {
                s.advance(ctx, t);
                Ok(())
            });
        }
        if let Some(s) = &mut self.subs.serve {
            s.advance(t);
        }
        self.metrics.advance(t);
        self.now = t;
    }

    /// Steps 1 and 2: everything in the heap at `t` ranked before arrivals (completions,
    /// releases, node events, the features' node-class events).
    pub(in crate::engine) fn early_events(
        &mut self,
        t: SimTime,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        while let Some(k) = self.events.peek() {
            if k.time != t || k.class >= events::EventClass::Arrival {
                break;
            }
            let (_, kind) = self.events.pop().expect("peeked");
            self.tally.event_count += 1;
            self.prefetch_next_finish();
            match kind {
                EventKind::Finish(id, run) => self.finish(id, run, sink)?,
                EventKind::Release(id, run) => self.release(id, run)?,
                EventKind::Node(i) => self.node_event(i as usize),
                EventKind::NodeChange(i) => self.node_change(i as usize)?,
                EventKind::Subsystem { id, tag } => self.subsystem_event(id, tag, sink)?,
                EventKind::ReplicaStop(n) => self.replica_stop(n, sink)?,
                EventKind::ForcedStart(_) | EventKind::Tick | EventKind::ElasticRound => {}
            }
        }
        Ok(())
    }

    /// Step 3, first part: the serving replicas due at `t`, in service order then replica
    /// index.
    pub(in crate::engine) fn replica_arrivals(
        &mut self,
        t: SimTime,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        while let Some((spec, service, stop, n)) =
            self.subs.serve.as_mut().and_then(|s| s.take_due(t))
        {
            let seq = self.ids.next_seq;
            let id = JobId(
                self.ids
                    .free_slots
                    .last()
                    .copied()
                    .unwrap_or(self.jobs.len() as u32),
            );
            self.tally.event_count += 1;
            self.arrive(spec, sink)?;
            let rec = self.jobs.get(id.index());
            if rec.is_some_and(|r| r.live && r.seq == seq) {
                if let Some(s) = &mut self.subs.serve {
                    s.register(id, service, stop, n);
                    self.events.push(stop, EventKind::ReplicaStop(n));
                }
            }
        }
        Ok(())
    }

    /// Step 4: the recorded starts at `t` (replay mode).
    pub(in crate::engine) fn recorded_starts(
        &mut self,
        t: SimTime,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        // (4) recorded starts. A zero-length job started here queues its completion at
        // `t`, ranked before this class: it is applied at the next turn of the loop, at `t`.
        while let Some(k) = self.events.peek() {
            if k.time != t || k.class != events::EventClass::ForcedStart {
                break;
            }
            let (_, kind) = self.events.pop().expect("peeked");
            self.tally.event_count += 1;
            if let EventKind::ForcedStart(id) = kind {
                self.forced_start(id, sink)?;
            }
        }
        Ok(())
    }

    /// Step 4, then: the ticks due at `t` (retry passes, the scheduler's wake-ups, round
    /// boundaries) and the rounds of round-allocated jobs.
    pub(in crate::engine) fn ticks_due(&mut self, t: SimTime) -> Result<(), EngineError> {
        while let Some(k) = self.events.peek() {
            if k.time != t || k.class != events::EventClass::Tick {
                break;
            }
            let (_, kind) = self.events.pop().expect("peeked");
            if kind == EventKind::ElasticRound {
                self.tally.event_count += 1;
                self.elastic_round(t)?;
                continue;
            }
            if self.pass.next_tick == Some(t) {
                self.pass.next_tick = None;
                self.pass.dirty = true;
            }
            if self.pass.wake_at == Some(t) {
                self.pass.wake_at = None;
                self.pass.dirty = true;
            }
            if self.pass.round_at == Some(t) {
                self.pass.round_at = None;
            }
        }
        Ok(())
    }

    /// Round-based cadence, a change at `t` off a boundary: it waits (still dirty) for the
    /// tick at the next boundary.
    pub(in crate::engine) fn defer_to_round(&mut self, t: SimTime) {
        let at = self.round_up(t);
        if self.pass.round_at != Some(at) {
            self.pass.round_at = Some(at);
            self.events.push(at, EventKind::Tick);
        }
        self.metrics.set_pending(self.sched.pending_len() as u64);
    }

    /// Step 5: scheduling passes at `t` until one changes nothing; a run of passes that never
    /// settles is an invariant violation.
    pub(in crate::engine) fn passes(&mut self, t: SimTime) -> Result<(), EngineError> {
        // Sized elastic jobs' growth GPUs: free to the passes, re-planned after them.
        self.elastic_before_passes()?;
        let mut here = 0u32;
        while self.pass.dirty {
            self.pass.dirty = false;
            self.tally.passes += 1;
            here += 1;
            // Each extra pass follows a preemption that stopped a job; more passes than
            // twice the jobs in flight (plus slack) can only be a loop.
            if here as usize > 64 + 2 * self.jobs.len() {
                return Err(EngineError::Invariant {
                    time: t,
                    message: format!(
                        "{here} passes at one instant without settling: preemptions are looping"
                    ),
                });
            }
            if !self.outside.recovering.is_empty() {
                self.recover_gangs(true);
            }
            let mut decisions = std::mem::take(&mut self.pass.decisions);
            self.sched.schedule_into(&mut self.fleet, t, &mut decisions);
            if let Some(l) = self.logs.live.as_mut() {
                l.events.push(live::Event::Pass { t: t.0 });
                l.decisions.extend(
                    decisions
                        .iter()
                        .map(|d| live::Decision::from_policy(d, t.0)),
                );
            }
            if self.cfg.record_preemptions {
                // Before the decisions are applied: their job ids are still live.
                for c in self.sched.take_preemption_contexts() {
                    let seq = |id: JobId| self.jobs[id.index()].seq;
                    self.logs.preemption_plans.push(PreemptionPlan {
                        at: t,
                        preemptor: seq(c.preemptor),
                        victims: c.victims.iter().map(|&v| seq(v)).collect(),
                        free: c.free,
                        queue_usage: c.queue_usage,
                    });
                }
            }
            for d in decisions.drain(..) {
                self.apply(d)?;
            }
            self.pass.decisions = decisions;
            if !self.outside.recovering.is_empty() {
                self.recover_gangs(false);
            }
            if self.pass.backfill {
                for r in self.sched.reservations() {
                    let rec = &mut self.jobs[r.job.index()];
                    rec.extra
                        .get_or_insert_with(Box::default)
                        .first_reservation
                        .get_or_insert(r.start);
                }
            }
        }
        Ok(())
    }

    /// After the passes at `t`: the subsystems' [`after_passes`] hooks (the autoscaler's
    /// checks and joins, and the admissions that wait for pods) on the fleet without elastic
    /// growth (growth is no demand), then the elastic jobs' growth, the pending counts and
    /// reasons, the scheduler's wake-up and the retry cycle's next pass.
    ///
    /// [`after_passes`]: crate::engine::subsystem::Subsystem::after_passes
    pub(in crate::engine) fn after_passes(
        &mut self,
        t: SimTime,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        if !self.subs.list.is_empty() {
            self.each_subsystem(Some(sink), |s, ctx| {
                s.after_passes(ctx, t);
                Ok(())
            })?;
        }
        self.elastic_after_passes()?;
        self.metrics.set_pending(self.sched.pending_len() as u64);
        self.metrics.clear_pending_reasons();
        let m = &mut self.metrics;
        self.sched
            .count_pending_reasons(|r, n| m.add_pending_reason(r.as_str(), n));
        // A pass the scheduler asked for (the Tiresias model's demotion wake-up).
        let wake = self
            .sched
            .next_wake()
            .filter(|&w| w > t)
            .map(|w| self.round_up(w));
        if wake != self.pass.wake_at {
            // A tick left from an earlier wake-up finds `wake_at` changed: no pass.
            self.pass.wake_at = wake;
            if let Some(w) = wake {
                self.events.push(w, EventKind::Tick);
            }
        }
        if let Some(iv) = self.cfg.retry_interval {
            // Another pass after the interval, while something is pending and
            // something holds resources (else nothing could change before the next
            // event, which brings its own pass).
            if self.sched.pending_len() > 0 && self.running > 0 && self.pass.next_tick.is_none() {
                let at = self.round_up(t + SimDuration(iv.0.max(1)));
                self.pass.next_tick = Some(at);
                self.events.push(at, EventKind::Tick);
            }
        }
        Ok(())
    }

    /// The end of instant `t`: the fragmentation samples of intervals starting at `t`, the
    /// reason log and, when asked, the audit and the quota log.
    pub(in crate::engine) fn end_instant(&mut self, t: SimTime) -> Result<(), EngineError> {
        // An interval starting at `t` sees the state after all of `t`'s events.
        self.sample_fragmentation(|b| b <= t);
        if self.cfg.record_admissions {
            self.log_reasons(t);
        }
        if self.cfg.audit_every_instant {
            self.audit()?;
            if self.cfg.record_preemptions {
                self.log_quota(t);
            }
        }
        Ok(())
    }
}
