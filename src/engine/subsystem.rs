//! The [`Subsystem`] trait: a feature of the engine plugged into the ordered steps of an
//! instant, and the [`Ctx`] handed to its hooks.
//!
//! The core (the event queue, the clock, the fleet state, the scheduler's passes, the job
//! lifecycle and the outputs) never names a feature. A feature is a value implementing
//! [`Subsystem`], registered when the [`Simulation`] is built
//! ([`crate::engine::subsystems::register`]) in a fixed order; the core calls each hook on
//! every registered subsystem in that order, so ties between features keep their order.
//!
//! # Hooks, in the order of an instant `t`
//! 1. [`Subsystem::advance`]: the clock moves to `t`, before anything changes at `t` (after
//!    the fragmentation samples of the intervals starting before `t`, before the collector
//!    advances).
//! 2. [`Subsystem::on_event`]: one of the subsystem's own events at `t`
//!    ([`EventKind::Subsystem`], queued with [`Ctx::schedule`]); these rank with node events
//!    (after completions, before arrivals) and among them in the order they were queued.
//! 3. [`Subsystem::on_job_start`]: a job starts (its decision is applied), during the passes
//!    or a recorded start.
//! 4. [`Subsystem::after_passes`]: after the scheduling passes at `t`, before the pending
//!    counts and the next ticks; [`Subsystem::on_waiting_for_capacity`] when another
//!    subsystem announces ([`Ctx::announce_waiting`]) a job admitted on capacity not yet in
//!    the fleet.
//! 5. At the end of the run: [`Subsystem::held`] (the jobs it holds outside the queues,
//!    censored with its reason), then [`Subsystem::finish`] (its section of the
//!    [`RunResult`]).
//!
//! A hook never sees its own subsystem through the context: while it runs, the subsystem is
//! out of the registry, so a notification it causes reaches the others only.

use fleetsim_policies::{FleetState, JobId, PendingJob, Scheduler, SimTime};

use crate::engine::core::job::{JobRec, JobState};
use crate::engine::events::EventKind;
use crate::engine::{EngineError, JobSink, RunResult, Simulation};

/// A feature of the engine: its state and its hooks at the fixed steps of an instant (the
/// module docs give the order). Every hook but [`Subsystem::on_event`] does nothing by
/// default.
pub(in crate::engine) trait Subsystem {
    /// The clock moves to `t` (step 1), before anything changes at `t`.
    fn advance(&mut self, _ctx: &mut Ctx<'_>, _t: SimTime) {}

    /// The subsystem's event `tag` (queued with [`Ctx::schedule`]) is due now (step 2).
    ///
    /// # Errors
    /// An [`EngineError`] stops the run.
    fn on_event(&mut self, ctx: &mut Ctx<'_>, tag: u32) -> Result<(), EngineError>;

    /// Job `job` starts now (step 3).
    fn on_job_start(&mut self, _job: JobId) {}

    /// After the passes at `t` (step 4).
    fn after_passes(&mut self, _ctx: &mut Ctx<'_>, _t: SimTime) {}

    /// Job `job` was admitted at `t` on capacity not yet in the fleet (announced by another
    /// subsystem's [`Subsystem::after_passes`], in its order).
    fn on_waiting_for_capacity(&mut self, _ctx: &mut Ctx<'_>, _job: JobId, _t: SimTime) {}

    /// The jobs the subsystem holds outside the queues at the end of the run (step 5),
    /// each with the reason its row is censored with.
    fn held(&self) -> Vec<(JobId, &'static str)> {
        Vec::new()
    }

    /// The subsystem's section of the result (step 5).
    fn finish(&mut self, _ctx: &mut Ctx<'_>, _result: &mut RunResult) {}

    /// Why a recorded live stream could not reproduce a run with this subsystem (`None`:
    /// it can).
    fn live_unsupported(&self) -> Option<&'static str> {
        None
    }
}

/// What a hook may see and do: the core's parts and the job lifecycle's operations, on
/// behalf of one registered subsystem.
pub(in crate::engine) struct Ctx<'a> {
    sim: &'a mut Simulation,
    /// The subsystem's place in the registry (its events' id).
    me: u8,
    /// Where job rows go (`None` in hooks that cannot end a job).
    sink: Option<&'a mut dyn JobSink>,
}

impl Ctx<'_> {
    /// The simulated time.
    pub(in crate::engine) fn now(&self) -> SimTime {
        self.sim.now
    }

    /// The fleet state.
    pub(in crate::engine) fn fleet(&self) -> &FleetState {
        &self.sim.fleet
    }

    /// The fleet state, to change nodes (their schedulable flag); the collector's capacity
    /// follows with [`Ctx::refresh_capacity`].
    pub(in crate::engine) fn fleet_mut(&mut self) -> &mut FleetState {
        &mut self.sim.fleet
    }

    /// The scheduler (its pending set and reasons).
    pub(in crate::engine) fn sched(&self) -> &Scheduler {
        &self.sim.sched
    }

    /// The record of job slot `id`.
    pub(in crate::engine) fn job(&self, id: JobId) -> &JobRec {
        &self.sim.jobs[id.index()]
    }

    /// Queues this subsystem's event `tag` at `at` (node class: applied after completions,
    /// before arrivals, FIFO among the node class at one instant).
    pub(in crate::engine) fn schedule(&mut self, at: SimTime, tag: u32) {
        self.sim
            .events
            .push(at, EventKind::Subsystem { id: self.me, tag });
    }

    /// The fleet's capacity changed (nodes joined or left): the collector follows and the
    /// next instant runs passes.
    pub(in crate::engine) fn refresh_capacity(&mut self) {
        self.sim.metrics.refresh_capacity(&self.sim.fleet);
    }

    /// Node `node` is about to go (an autoscaler's idle check): the GPUs elastic jobs hold
    /// above their `min` on it are given back first (they shrink, paying their resize
    /// overhead at the next passes), so growth never keeps a node up.
    pub(in crate::engine) fn release_opportunistic(
        &mut self,
        node: fleetsim_policies::NodeId,
    ) -> Result<(), EngineError> {
        self.sim.elastic_node_down(node)
    }

    /// Something changed that a scheduling pass should see.
    pub(in crate::engine) fn mark_changed(&mut self) {
        self.sim.pass.dirty = true;
    }

    /// Job `id` was admitted at `t` on capacity not yet in the fleet: the other subsystems'
    /// [`Subsystem::on_waiting_for_capacity`], in registry order.
    pub(in crate::engine) fn announce_waiting(&mut self, id: JobId, t: SimTime) {
        let sink = reborrow(&mut self.sink);
        let _ = self.sim.each_subsystem(sink, |s, ctx| {
            s.on_waiting_for_capacity(ctx, id, t);
            Ok(())
        });
    }

    /// Takes pending job `id` out of its queue (its claims released): `None` when it is not
    /// in its queue. The next instant runs passes.
    pub(in crate::engine) fn withdraw(&mut self, id: JobId) -> Option<PendingJob> {
        let queue = self.sim.jobs[id.index()].queue;
        let job = self.sim.sched.pending().find(|j| j.id == id).cloned();
        let job = job.filter(|_| self.sim.sched.withdraw(id, queue))?;
        self.sim.pass.dirty = true;
        Some(job)
    }

    /// Job `id`, withdrawn, is held by this subsystem outside the queues until it
    /// [`Ctx::requeue`]s it or the run ends (then [`Subsystem::held`] names it).
    pub(in crate::engine) fn hold(&mut self, id: JobId) {
        self.sim.jobs[id.index()].state = JobState::Held;
    }

    /// A held job rejoins its queue now (pending).
    ///
    /// # Errors
    /// [`EngineError::Invariant`] when the scheduler finds it unresolvable.
    pub(in crate::engine) fn requeue(&mut self, job: PendingJob) -> Result<(), EngineError> {
        let id = job.id;
        self.sim.enqueue(job)?;
        // A serving replica past its planned stop leaves at once.
        self.sim.withdraw_if_overdue(id);
        Ok(())
    }

    /// Job `id`, out of the queues, ends not run now: `CANCELLED` with `reason` (counted in
    /// `cancelled` when it never started; a job that ran before settles its wait).
    ///
    /// # Errors
    /// The sink's write error; [`EngineError::Invariant`] in a hook without a sink.
    pub(in crate::engine) fn cancel(&mut self, id: JobId, reason: &str) -> Result<(), EngineError> {
        let Some(sink) = reborrow(&mut self.sink) else {
            return Err(self.sim.invariant(format!(
                "job {id} cancelled ({reason}) where no row can be written"
            )));
        };
        self.sim.cancel_out_of_queue(id, reason, sink)
    }

    /// An invariant violation at the current time.
    pub(in crate::engine) fn invariant(&self, message: String) -> EngineError {
        self.sim.invariant(message)
    }
}

/// The sink for a shorter borrow.
fn reborrow<'b>(sink: &'b mut Option<&mut dyn JobSink>) -> Option<&'b mut dyn JobSink> {
    match sink {
        Some(s) => Some(&mut **s),
        None => None,
    }
}

impl Simulation {
    /// Calls `f` on every registered subsystem in registry order, each with its context
    /// (the subsystem itself is out of the registry during its call); stops at the first
    /// error.
    pub(in crate::engine) fn each_subsystem(
        &mut self,
        mut sink: Option<&mut dyn JobSink>,
        mut f: impl FnMut(&mut dyn Subsystem, &mut Ctx<'_>) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        for i in 0..self.subs.list.len() {
            let Some(mut s) = self.subs.list[i].take() else {
                continue;
            };
            let mut ctx = Ctx {
                sim: self,
                me: i as u8,
                sink: reborrow(&mut sink),
            };
            let r = f(&mut *s, &mut ctx);
            self.subs.list[i] = Some(s);
            r?;
        }
        Ok(())
    }

    /// Subsystem `id`'s event `tag` is due now.
    pub(in crate::engine) fn subsystem_event(
        &mut self,
        id: u8,
        tag: u32,
        sink: &mut dyn JobSink,
    ) -> Result<(), EngineError> {
        let i = usize::from(id);
        let Some(mut s) = self.subs.list.get_mut(i).and_then(Option::take) else {
            return Err(self.invariant(format!("event of subsystem {id}, not registered")));
        };
        let r = s.on_event(
            &mut Ctx {
                sim: self,
                me: id,
                sink: Some(sink),
            },
            tag,
        );
        self.subs.list[i] = Some(s);
        r
    }
}
