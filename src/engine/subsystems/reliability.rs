//! Startup latency, restart overhead, platform speed and the goodput account of a run (DESIGN §6
//! "goodput"). Everything here is off unless the scenario asks for it (`[startup]`, `[failures]`,
//! platform speed factors): then [`crate::engine::EngineConfig::startup`] /
//! [`crate::engine::EngineConfig::model_speed_permille`] are set and
//! [`crate::engine::EngineConfig::reliability`] turns the account on.
//!
//! # The account of one job
//! Every run of a job holds `gpu` accelerator-milli (the whole gang) from its start until it
//! completes, or — when stopped by a preemption, a node failure or a maintenance eviction —
//! until it is released at the end of its termination grace. That held time is the job's
//! **allocated** accelerator-time, and it splits exactly into three parts:
//!
//! * **startup**: the first `overhead` ms of every run (image pull, runtime start, collective
//!   set-up: [`StartupModel::startup`], plus [`StartupModel::restart_overhead`] for a run
//!   after the first, which reloads the checkpoint), or the whole run if it stopped sooner;
//! * **lost**: the rest of a stopped run that produced no kept progress — work since its last
//!   checkpoint, plus the grace period it held its accelerators doing nothing (the engine's
//!   existing `lost_gpu_milli_ms`);
//! * **goodput** (kept work): what is left, the wall time that produced progress the job keeps.
//!
//! * **held on failed nodes**: the grace of the tasks on a failed node (the node has left
//!   the capacity, so this is not occupancy; it is not lost work either: its own account).
//! * **held by incomplete gangs** (`[policy] gang_recovery = "keep_survivors"` only): the
//!   accelerator-time the surviving members of a gang hold, bound on up nodes with progress
//!   paused, from the failure that broke the gang until its missing members are placed
//!   (or it is torn down, or the run ends). It is occupancy (the accelerators are taken)
//!   but neither kept work nor lost work: its own account.
//!
//! So `goodput + lost + startup + held on failed nodes + held by incomplete gangs =
//! allocated` per job and in total, by construction per run;
//! a completed job's goodput is its run time at its runs' speeds (on reference-speed hardware:
//! exactly its run time × its accelerators).
//!
//! # Speed
//! A job's run time is given at reference speed (1000 per-mille). A run on accelerator model
//! `m` with speed `s` per-mille (the slowest model among the gang's nodes) needs
//! `⌈remaining × 1000 / s⌉` ms of useful time; a stopped run made `⌊useful × s / 1000⌋` ms of
//! reference progress (at most what remained). Speeds are relative throughputs as in
//! Gavel (Narayanan et al., OSDI'20) and the platform flexibility of the fleet-level studies
//! this models (e.g. a job 1.0× on H100 and 0.6× on A100).

use fleetsim_policies::{SimDuration, SimTime};

/// Per-job startup latency and restart overhead, ms.
///
/// `startup(tasks) = base + per_doubling × ⌈log₂ tasks⌉`: image pull and runtime start are
/// paid once per run (`base`, pulled in parallel on every node) and collective set-up grows
/// with the logarithm of the gang size (tree/ring initialisation, as NCCL's bootstrap; the
/// MegaScale and Llama 3 reports list initialisation time growing with job scale).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StartupModel {
    /// Paid by every run, ms.
    pub base: SimDuration,
    /// Added per doubling of the gang size (tasks), ms.
    pub per_doubling: SimDuration,
    /// Added to every run after the first (reloading the last checkpoint), ms.
    pub restart_overhead: SimDuration,
}

impl StartupModel {
    /// Startup latency of a run of a gang of `tasks` tasks, ms.
    pub fn startup(&self, tasks: u32) -> SimDuration {
        let doublings = u64::from(tasks.max(1).next_power_of_two().trailing_zeros());
        SimDuration(self.base.0 + self.per_doubling.0 * doublings)
    }

    /// Overhead of a run: the startup latency, plus the restart overhead when `restart`.
    pub fn overhead(&self, tasks: u32, restart: bool) -> SimDuration {
        let s = self.startup(tasks);
        if restart {
            SimDuration(s.0 + self.restart_overhead.0)
        } else {
            s
        }
    }
}

/// Wall time a run needs for `remaining` ms of reference progress at `speed` per-mille
/// (rounded up; `speed` 0 counts as 1).
pub fn wall_for(remaining: SimDuration, speed: u32) -> SimDuration {
    if speed == 1000 {
        return remaining;
    }
    let s = u128::from(speed.max(1));
    SimDuration(((remaining.0 as u128 * 1000).div_ceil(s)).min(u64::MAX as u128) as u64)
}

/// Reference progress made by `wall` ms of useful time at `speed` per-mille (rounded down).
pub fn progress_for(wall: SimDuration, speed: u32) -> SimDuration {
    if speed == 1000 {
        return wall;
    }
    SimDuration((wall.0 as u128 * u128::from(speed) / 1000).min(u64::MAX as u128) as u64)
}

/// The run's account of goodput, lost work, startup, failures and recovery, in
/// accelerator-milli × ms unless named otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReliabilityStats {
    /// Accelerator-time held by jobs (every run, including grace periods).
    pub allocated_gpu_milli_ms: u128,
    /// Accelerator-time of startup latency and restart overhead.
    pub startup_gpu_milli_ms: u128,
    /// Accelerator-time lost to preemption, failures and evictions (progress since the last
    /// checkpoint, plus grace); the same figure as [`crate::engine::RunResult::lost_gpu_milli_ms`].
    pub lost_gpu_milli_ms: u128,
    /// Of `lost`, the part lost to node failures.
    pub lost_to_failures_gpu_milli_ms: u128,
    /// Accelerator-time held through the termination grace by tasks on failed nodes (not
    /// in `lost`: `allocated = goodput + lost + startup + held_on_failed`).
    pub held_on_failed_gpu_milli_ms: u128,
    /// Of `lost`, the part lost to maintenance evictions.
    pub lost_to_evictions_gpu_milli_ms: u128,
    /// Accelerator-time the surviving members of incomplete gangs held with progress paused
    /// (`gang_recovery = "keep_survivors"`; not in `lost`).
    pub held_by_incomplete_gangs_gpu_milli_ms: u128,
    /// The run keeps survivors of failed gangs ([`fleetsim_policies::GangRecovery`]).
    pub keep_survivors: bool,
    /// Gangs made whole again after keeping their survivors.
    pub gangs_recovered: u64,
    /// Runs stopped by maintenance evictions (a drained node's deadline).
    pub evictions: u64,
    /// Runs stopped by node failures that later restarted.
    pub recoveries: u64,
    /// Sum over those of (restart − failure), ms.
    pub recovery_ms: u128,
    /// Jobs that completed after surviving at least one failure.
    pub jobs_survived_failures: u64,
    /// Failures survived by completed jobs, summed (mean = this / completed jobs).
    pub failures_survived: u64,
    /// Most failures one completed job survived.
    pub max_failures_survived: u32,
    /// Jobs that completed.
    pub completed: u64,
    /// The run keeps hot spares ([`crate::engine::EngineConfig::spares`] non-empty).
    pub spares: bool,
    /// Runs moved onto a hot spare after a node failure (instead of requeued).
    pub hot_swaps: u64,
    /// Jobs started in a cell other than their home cell (the first of their allowed cells),
    /// counted once per job at its first start.
    pub cross_cell_dispatches: u64,
    /// Per cell (cell-id order): measured waits of jobs whose first start was there, ms sum
    /// and count.
    pub wait_by_cell: Vec<(u128, u64)>,
    /// Per accelerator model (model-id order; last entry: CPU-only): measured waits of jobs
    /// whose first start was on it, ms sum and count.
    pub wait_by_model: Vec<(u128, u64)>,
}

impl ReliabilityStats {
    /// Goodput: allocated − lost − startup − held on failed nodes − held by incomplete gangs
    /// (accelerator-milli × ms).
    pub fn goodput_gpu_milli_ms(&self) -> u128 {
        self.allocated_gpu_milli_ms
            .saturating_sub(self.lost_gpu_milli_ms)
            .saturating_sub(self.held_on_failed_gpu_milli_ms)
            .saturating_sub(self.held_by_incomplete_gangs_gpu_milli_ms)
            .saturating_sub(self.startup_gpu_milli_ms)
    }
}

/// Time from `a` to `b` (zero if `b` is earlier), ms.
pub(in crate::engine) fn since(b: SimTime, a: SimTime) -> u64 {
    b.0.saturating_sub(a.0)
}

use fleetsim_policies::{JobId, ModelSet, NodeId, TaskAlloc};

use crate::engine::{Allocs, JobState, Simulation};
use fleetsim_policies::GangRecovery;

fn mul(ms: u64, gpu: u64) -> u128 {
    ms as u128 * gpu as u128
}

fn to_u64(v: u128) -> u64 {
    v.min(u64::MAX as u128) as u64
}

impl Simulation {
    /// Speed of a job's current run, per-mille: the slowest model among its tasks' nodes.
    fn run_speed(&self, id: JobId) -> u32 {
        if self.cfg.model_speed_permille.is_empty() {
            return 1000;
        }
        self.jobs[id.index()]
            .allocs
            .as_slice()
            .iter()
            .filter_map(|a| self.fleet.node(a.node).model)
            .map(|m| {
                self.cfg
                    .model_speed_permille
                    .get(m.0 as usize)
                    .copied()
                    .unwrap_or(1000)
            })
            .min()
            .unwrap_or(1000)
    }

    /// Startup latency (plus restart overhead after the first run) of a job's current run.
    fn run_overhead(&self, id: JobId) -> SimDuration {
        let rec = &self.jobs[id.index()];
        match self.cfg.startup {
            None => SimDuration::ZERO,
            Some(m) => m.overhead(
                rec.members,
                rec.extra.as_ref().is_some_and(|x| x.run_start.is_some()),
            ),
        }
    }

    /// A job starts a run needing `remaining` ms of reference progress: returns the run's
    /// wall time (overhead + useful time at its speed); records time to recovery and, at the
    /// first start, the wait by cell and model.
    pub(in crate::engine) fn start_account(
        &mut self,
        id: JobId,
        remaining: SimDuration,
        first: bool,
    ) -> SimDuration {
        let now = self.now;
        let wall = wall_for(remaining, self.run_speed(id));
        let ovh = self.run_overhead(id);
        let wall = SimDuration(wall.0.saturating_add(ovh.0));
        if ovh > SimDuration::ZERO {
            let rec = &self.jobs[id.index()];
            self.metrics
                .startup(&self.fleet, rec.allocs.as_slice(), rec.run, now + ovh);
        }
        let model = self.jobs[id.index()]
            .allocs
            .as_slice()
            .first()
            .and_then(|a| self.fleet.node(a.node).model)
            .map_or(self.fleet.models().len(), |m| m.0 as usize);
        let (cells, models) = (self.fleet.cells().len(), self.fleet.models().len() + 1);
        let rec = &mut self.jobs[id.index()];
        if first
            && rec
                .extra
                .as_ref()
                .and_then(|x| x.home_cell)
                .is_some_and(|h| rec.cell != Some(h))
        {
            self.subs.rel.cross_cell_dispatches += 1;
        }
        if let Some(t) = rec.extra.as_mut().and_then(|x| x.lost_at.take()) {
            self.subs.rel.recoveries += 1;
            self.subs.rel.recovery_ms += u128::from(since(now, t));
        }
        if first && rec.measured && rec.kind != crate::workload::RecordedKind::PreExisting {
            let wait = u128::from(since(now, rec.submit));
            self.subs.rel.wait_by_cell.resize(cells, (0, 0));
            self.subs.rel.wait_by_model.resize(models, (0, 0));
            if let Some(c) = rec.cell {
                let e = &mut self.subs.rel.wait_by_cell[c.index()];
                e.0 += wait;
                e.1 += 1;
            }
            let e = &mut self.subs.rel.wait_by_model[model];
            e.0 += wait;
            e.1 += 1;
        }
        wall
    }

    /// When the startup of job `id`'s current run ends (its start plus its overhead), if it
    /// has one.
    pub(in crate::engine) fn startup_end(&self, id: JobId) -> Option<SimTime> {
        let ovh = self.run_overhead(id);
        if ovh == SimDuration::ZERO {
            return None;
        }
        let rec = &self.jobs[id.index()];
        let start = rec.extra.as_ref().and_then(|x| x.run_start).or(rec.start)?;
        Some(start + ovh)
    }

    /// A job's current run stops now and holds its accelerators for `grace` more: returns
    /// the progress it keeps (its last checkpoint) and the accelerator-time lost, and books
    /// the run's startup and allocated time (see the module docs).
    pub(in crate::engine) fn stop_account(
        &mut self,
        id: JobId,
        grace: SimDuration,
        failure: bool,
    ) -> (SimDuration, u128) {
        let now = self.now;
        let speed = self.run_speed(id);
        let ovh = self.run_overhead(id).0;
        let ckpt = self.stop_checkpoint(id, failure);
        let rec = &mut self.jobs[id.index()];
        let gpu = rec.shape.total_gpu_milli() * rec.tasks as u64;
        let start = rec.start.expect("a stopped job started");
        let runtime = rec.runtime;
        let x = rec.extra.get_or_insert_with(Box::default);
        let ran = since(now, x.run_start.unwrap_or(start));
        let spent = ran.min(ovh);
        let eff = ran - spent;
        let progress = progress_for(SimDuration(eff), speed)
            .0
            .min(runtime.0.saturating_sub(x.done.0));
        let kept = fleetsim_policies::kept_progress(SimDuration(x.done.0 + progress), ckpt);
        let useful = wall_for(SimDuration(kept.0.saturating_sub(x.done.0)), speed)
            .0
            .min(eff);
        let lost = mul(eff - useful + grace.0, gpu);
        let held = mul(ran + grace.0, gpu);
        x.startup_gpu_milli_ms = x
            .startup_gpu_milli_ms
            .saturating_add(to_u64(mul(spent, gpu)));
        x.allocated_gpu_milli_ms = x.allocated_gpu_milli_ms.saturating_add(to_u64(held));
        self.subs.rel.startup_gpu_milli_ms += mul(spent, gpu);
        self.subs.rel.allocated_gpu_milli_ms += held;
        (kept, lost)
    }

    /// A job's allocated and startup accelerator-time so far (its current run counted up to
    /// `end`, default now), GPU-milli·ms; zeros without the account.
    pub(in crate::engine) fn job_account(&self, id: JobId, end: Option<SimTime>) -> (u64, u64) {
        if !self.cfg.reliability {
            return (0, 0);
        }
        let rec = &self.jobs[id.index()];
        let (mut a, mut s) = rec.extra.as_ref().map_or((0, 0), |x| {
            (
                x.allocated_gpu_milli_ms as u128,
                x.startup_gpu_milli_ms as u128,
            )
        });
        if rec.state == JobState::Running {
            let (ra, rs) = self.current_run(id, end.unwrap_or(self.now));
            a += ra;
            s += rs;
        }
        (to_u64(a), to_u64(s))
    }

    /// Allocated and startup accelerator-time of a running job's current run up to `end`.
    fn current_run(&self, id: JobId, end: SimTime) -> (u128, u128) {
        let rec = &self.jobs[id.index()];
        let gpu = rec.shape.total_gpu_milli() * rec.tasks as u64;
        let start = rec
            .extra
            .as_ref()
            .and_then(|x| x.run_start)
            .or(rec.start)
            .unwrap_or(end);
        let ran = since(end, start);
        let ovh = self.run_overhead(id).0;
        (mul(ran, gpu), mul(ran.min(ovh), gpu))
    }

    /// A running job's current run ends now (completed, or still running at the end of the
    /// run): books its allocated and startup time; a completed job's failures survived.
    pub(in crate::engine) fn end_run_account(&mut self, id: JobId, completed: bool) {
        if !self.cfg.reliability || self.jobs[id.index()].state != JobState::Running {
            return;
        }
        let (a, s) = self.current_run(id, self.now);
        self.subs.rel.allocated_gpu_milli_ms += a;
        self.subs.rel.startup_gpu_milli_ms += s;
        if completed {
            self.subs.rel.completed += 1;
            let f = self.jobs[id.index()]
                .extra
                .as_ref()
                .map_or(0, |x| x.failures);
            if f > 0 {
                self.subs.rel.jobs_survived_failures += 1;
                self.subs.rel.failures_survived += u64::from(f);
                self.subs.rel.max_failures_survived = self.subs.rel.max_failures_survived.max(f);
            }
        }
    }

    /// Stops every running job with a task on `node` (a failure, or a maintenance eviction
    /// when `eviction`): each loses its work since its last checkpoint, holds its resources
    /// and quota for `grace`, then is released and requeued.
    pub(in crate::engine) fn stop_jobs_on(
        &mut self,
        node: fleetsim_policies::NodeId,
        grace: SimDuration,
        eviction: bool,
    ) {
        // Incomplete gangs that lose another member (or are evicted) restart whole.
        let broken: Vec<JobId> = self
            .outside
            .recovering
            .iter()
            .copied()
            .filter(|j| {
                self.jobs[j.index()]
                    .allocs
                    .as_slice()
                    .iter()
                    .any(|a| a.node == node)
            })
            .collect();
        for id in broken {
            self.tear_down_incomplete(id);
        }
        let hit: Vec<JobId> = (0..self.jobs.len())
            .map(|j| JobId(j as u32))
            .filter(|j| {
                let r = &self.jobs[j.index()];
                r.live
                    && r.state == JobState::Running
                    && r.allocs.as_slice().iter().any(|a| a.node == node)
            })
            .collect();
        for id in hit {
            if !eviction && !self.node_sets.spares.is_empty() && self.hot_swap(id, node) {
                continue;
            }
            if !eviction
                && self.cfg.gang_recovery == GangRecovery::KeepSurvivors
                && self.jobs[id.index()]
                    .allocs
                    .as_slice()
                    .iter()
                    .any(|a| a.node != node)
            {
                self.keep_survivors(id, node);
                continue;
            }
            let tenant = self.jobs[id.index()].tenant;
            let before = self.tally.lost_gpu_milli_ms;
            {
                let x = self.jobs[id.index()].extra.get_or_insert_with(Box::default);
                if eviction {
                    self.subs.rel.evictions += 1;
                } else {
                    x.failures += 1;
                    if self.cfg.reliability {
                        x.lost_at = Some(self.now);
                    }
                    self.counts.failures += 1;
                    self.tenant_stats[tenant.index()].failures += 1;
                }
            }
            self.stop_run(id, grace, !eviction);
            let lost = self.tally.lost_gpu_milli_ms - before;
            if eviction {
                self.subs.rel.lost_to_evictions_gpu_milli_ms += lost;
            } else {
                self.subs.rel.lost_to_failures_gpu_milli_ms += lost;
            }
            let release_at = Some((self.now + grace).0);
            self.record_live(|t| fleetsim_policies::live::Event::JobLost {
                t,
                job: id.0,
                release_at,
            });
            self.sched.mark_lost(id, self.now, self.now + grace);
            self.terminate(id, grace);
        }
    }

    /// Node `node` just failed (its running jobs already stopped): the rest of the grace
    /// that terminating jobs' tasks hold on it is not lost work but accelerator-time *held
    /// on failed nodes*, its own account (the node is out of the capacity, so it is not
    /// occupancy either): moved out of the lost figures of the job, its tenant and the run.
    /// Covers jobs stopped by this failure and jobs already in a grace (preempted, or lost
    /// with another node) alike, as the occupancy collector does
    /// ([`crate::metrics::Collector::node_failed`]).
    pub(in crate::engine) fn book_held_on_failed(&mut self, node: NodeId) {
        let now = self.now;
        for j in 0..self.jobs.len() {
            let rec = &self.jobs[j];
            if !rec.live || rec.state != JobState::Terminating {
                continue;
            }
            let on_node: u64 = rec
                .allocs
                .as_slice()
                .iter()
                .filter(|a| a.node == node)
                .map(|a| a.total_gpu_milli())
                .sum();
            let left = rec
                .extra
                .as_ref()
                .and_then(|x| x.release_at)
                .map_or(0, |r| since(r, now));
            let held = mul(left, on_node);
            if held == 0
                || rec
                    .extra
                    .as_ref()
                    .is_some_and(|x| x.held_nodes.contains(&node))
            {
                continue;
            }
            let tenant = rec.tenant;
            let x = self.jobs[j].extra.get_or_insert_with(Box::default);
            // Stopped by a failure (this one or an earlier): its grace was booked as lost to
            // failures; otherwise as lost to its preemption.
            let by_failure = x.lost_at.is_some();
            x.held_nodes.push(node);
            x.lost_gpu_milli_ms = x.lost_gpu_milli_ms.saturating_sub(to_u64(held));
            x.held_on_failed_gpu_milli_ms =
                x.held_on_failed_gpu_milli_ms.saturating_add(to_u64(held));
            let t = &mut self.tenant_stats[tenant.index()].lost_gpu_milli_ms;
            *t = t.saturating_sub(held);
            self.tally.lost_gpu_milli_ms = self.tally.lost_gpu_milli_ms.saturating_sub(held);
            self.subs.rel.held_on_failed_gpu_milli_ms += held;
            if by_failure {
                self.subs.rel.lost_to_failures_gpu_milli_ms = self
                    .subs
                    .rel
                    .lost_to_failures_gpu_milli_ms
                    .saturating_sub(held);
            }
        }
    }

    /// Counts a node failure against running job `id` (its failures, its tenant's and the
    /// run's; `lost_at` = now when reliability is reported) and stops its run with no grace,
    /// booking the progress lost since its last checkpoint as lost to failures (GPU-milli ×
    /// ms). The job's tasks are not released from their nodes: the caller decides which.
    fn fail_run(&mut self, id: JobId) {
        let now = self.now;
        let tenant = self.jobs[id.index()].tenant;
        let x = self.jobs[id.index()].extra.get_or_insert_with(Box::default);
        x.failures += 1;
        if self.cfg.reliability {
            x.lost_at = Some(now);
        }
        self.counts.failures += 1;
        self.tenant_stats[tenant.index()].failures += 1;
        let before = self.tally.lost_gpu_milli_ms;
        self.stop_run(id, SimDuration::ZERO, true);
        self.subs.rel.lost_to_failures_gpu_milli_ms += self.tally.lost_gpu_milli_ms - before;
    }

    /// Running gang `id` lost its members on failed `node` (`gang_recovery =
    /// "keep_survivors"`): the failure is counted as for a restart, the run stops at its
    /// last checkpoint (work since then is lost, no grace), the members on `node` are
    /// released at once (the node is gone: no grace held on it), and the survivors stay
    /// bound with progress paused ([`JobState::Recovering`]) until
    /// [`Simulation::recover_gangs`] places the missing members.
    fn keep_survivors(&mut self, id: JobId, node: NodeId) {
        self.live_unsupported("keep-survivors gang recovery");
        let now = self.now;
        let tenant = self.jobs[id.index()].tenant;
        self.fail_run(id);
        let (gone, kept): (Vec<TaskAlloc>, Vec<TaskAlloc>) = self.jobs[id.index()]
            .allocs
            .as_slice()
            .iter()
            .partition(|a| a.node == node);
        for a in &gone {
            self.fleet
                .release(a)
                .expect("a running job's task releases from its node");
        }
        self.metrics.on_members(&self.fleet, &gone, false, false);
        let gone_gpu: u64 = gone.iter().map(TaskAlloc::total_gpu_milli).sum();
        self.metrics.on_tenant_alloc(tenant, gone_gpu, false);
        let run = self.next_run;
        self.next_run = (self.next_run + 1) % crate::engine::NOT_RUNNING;
        // Paused survivors hold their accelerators without progress.
        self.metrics.unproductive(&self.fleet, &kept, true);
        let rec = &mut self.jobs[id.index()];
        rec.allocs = Allocs::from_vec(kept);
        rec.state = JobState::Recovering;
        rec.run = run;
        let x = rec.extra.get_or_insert_with(Box::default);
        x.paused_since = Some(now);
        let done = x.done;
        self.outside.recovering.insert(id);
        self.sched
            .on_hot_swap(id, self.jobs[id.index()].allocs.as_slice(), now, done);
        // Never a victim while incomplete; its end is unknown (no backfill shadow).
        self.sched.mark_lost(id, now, SimTime::MAX);
        self.pass.dirty = true;
    }

    /// Books the accelerator-time recovering gang `id`'s survivors held since it was paused
    /// (held by incomplete gangs; part of its allocated time).
    pub(in crate::engine) fn book_pause(&mut self, id: JobId) {
        let now = self.now;
        let reliability = self.cfg.reliability;
        let rec = &mut self.jobs[id.index()];
        let gpu: u64 = rec
            .allocs
            .as_slice()
            .iter()
            .map(TaskAlloc::total_gpu_milli)
            .sum();
        let x = rec.extra.get_or_insert_with(Box::default);
        let Some(p) = x.paused_since.take() else {
            return;
        };
        if !reliability {
            return;
        }
        let held = mul(since(now, p), gpu);
        x.allocated_gpu_milli_ms = x.allocated_gpu_milli_ms.saturating_add(to_u64(held));
        x.held_incomplete_gpu_milli_ms =
            x.held_incomplete_gpu_milli_ms.saturating_add(to_u64(held));
        self.subs.rel.allocated_gpu_milli_ms += held;
        self.subs.rel.held_by_incomplete_gangs_gpu_milli_ms += held;
    }

    /// Tries to make every recovering gang whole: highest priority first, then trace order.
    /// `before_pass`: only gangs no pending job outranks (priority), so they go ahead of
    /// pending jobs of equal or lower priority; after the pass, the rest.
    pub(in crate::engine) fn recover_gangs(&mut self, before_pass: bool) {
        let outranked_above = if before_pass {
            self.sched.pending().map(|j| j.priority).max()
        } else {
            None
        };
        let mut order: Vec<JobId> = self.outside.recovering.iter().copied().collect();
        order.sort_by_key(|id| {
            let r = &self.jobs[id.index()];
            (std::cmp::Reverse(r.priority), r.seq)
        });
        for id in order {
            let rec = &self.jobs[id.index()];
            if outranked_above.is_some_and(|p| p > rec.priority) {
                continue;
            }
            let missing = rec.members - rec.allocs.as_slice().len() as u32;
            let cell = rec.cell.expect("a recovering gang ran in a cell");
            if let Some(new) = self.sched.place_members(&mut self.fleet, id, cell, missing) {
                self.resume_gang(id, new);
            }
        }
    }

    /// Recovering gang `id` got its missing members `new`: the pause is booked, and it runs
    /// again from its checkpoint (restart overhead paid) on survivors + `new`.
    fn resume_gang(&mut self, id: JobId, new: Vec<TaskAlloc>) {
        let now = self.now;
        self.book_pause(id);
        self.metrics
            .unproductive(&self.fleet, self.jobs[id.index()].allocs.as_slice(), false);
        let tenant = self.jobs[id.index()].tenant;
        self.metrics.on_members(&self.fleet, &new, true, false);
        let new_gpu: u64 = new.iter().map(TaskAlloc::total_gpu_milli).sum();
        self.metrics.on_tenant_alloc(tenant, new_gpu, true);
        let run = self.next_run;
        self.next_run = (self.next_run + 1) % crate::engine::NOT_RUNNING;
        let rec = &mut self.jobs[id.index()];
        let mut all = rec.allocs.as_slice().to_vec();
        all.extend(new);
        rec.allocs = Allocs::from_vec(all);
        rec.state = JobState::Running;
        rec.run = run;
        let x = rec.extra.get_or_insert_with(Box::default);
        x.run_start = Some(now);
        if let Some(p) = x.pending_since.take() {
            x.requeued_pending_ms += since(now, p);
        }
        let done = x.done;
        let mut remaining = SimDuration(rec.runtime.0.saturating_sub(done.0));
        self.outside.recovering.remove(&id);
        self.subs.rel.gangs_recovered += 1;
        if self.cfg.reliability {
            remaining = self.start_account(id, remaining, false);
        }
        self.events.push(
            now + remaining,
            crate::engine::events::EventKind::Finish(id, run),
        );
        self.sched
            .on_recovered(id, self.jobs[id.index()].allocs.as_slice(), now, done);
    }

    /// Recovering gang `id` loses another member or is evicted: its pause is booked, its
    /// survivors are released at once and it is requeued whole (as under `restart`).
    fn tear_down_incomplete(&mut self, id: JobId) {
        self.book_pause(id);
        let rec = &self.jobs[id.index()];
        let tenant = rec.tenant;
        let left: Vec<TaskAlloc> = rec.allocs.as_slice().to_vec();
        for a in &left {
            self.fleet
                .release(a)
                .expect("a recovering gang's member releases from its node");
        }
        self.metrics.on_members(&self.fleet, &left, false, true);
        let gpu: u64 = left.iter().map(TaskAlloc::total_gpu_milli).sum();
        // `unbind` releases the whole gang's tenant share; the missing members' part left
        // already: give it back first.
        let whole = rec.shape.total_gpu_milli() * u64::from(rec.tasks);
        self.metrics.on_tenant_alloc(tenant, whole - gpu, true);
        self.jobs[id.index()].allocs = Allocs::None;
        self.unbind(id);
        if !self.node_sets.draining.is_empty() {
            let nodes: Vec<NodeId> = left.iter().map(|a| a.node).collect();
            self.settle_drained(&nodes);
        }
        self.outside.recovering.remove(&id);
        self.sched.on_released(id, self.now);
        self.pass.dirty = true;
    }

    /// Moves the tasks of running job `id` on failed `node` onto a free hot spare of the
    /// same cell and accelerator model (lowest node id first) and restarts the job there at
    /// once from its last checkpoint (restart overhead paid, no grace, no requeue). The
    /// spare becomes a regular node and `node` a (down) spare. Returns `false`, changing
    /// nothing, when no spare is free or the tasks do not fit on it.
    fn hot_swap(&mut self, id: JobId, node: NodeId) -> bool {
        self.live_unsupported("hot spares");
        let (cell, model) = {
            let n = self.fleet.node(node);
            (n.cell, n.model)
        };
        let free = |s: &NodeId| {
            let n = self.fleet.node(*s);
            !self.node_sets.spares_down.contains(s)
                && n.cell == cell
                && n.model == model
                && n.free_gpu_milli == n.gpus * 1000
                && n.free_cpu_milli == n.cpu_milli
                && n.free_mem_mib == n.mem_mib
        };
        let Some(spare) = self.node_sets.spares.iter().copied().find(free) else {
            return false;
        };
        let rec = &self.jobs[id.index()];
        let old: Vec<TaskAlloc> = rec.allocs.as_slice().to_vec();
        self.fleet.set_schedulable(spare, true);
        let mut new = Vec::with_capacity(old.len());
        for a in &old {
            if a.node != node {
                new.push(*a);
                continue;
            }
            // The same request (a member's, when the job took the node's shape).
            let shape = fleetsim_policies::TaskShape {
                num_gpu: a.gpu_mask.count_ones(),
                gpu_milli: if a.gpu_mask == 0 { 0 } else { a.gpu_milli },
                cpu_milli: a.cpu_milli,
                mem_mib: a.mem_mib,
            };
            match self.fleet.allocate(spare, &shape, ModelSet::ANY) {
                Ok(b) => new.push(b),
                Err(_) => {
                    for b in new.iter().filter(|b| b.node == spare) {
                        let _ = self.fleet.release(b);
                    }
                    self.fleet.set_schedulable(spare, false);
                    return false;
                }
            }
        }
        let now = self.now;
        // The failure, counted and accounted as for a requeue (time to recovery 0).
        self.fail_run(id);
        for a in old.iter().filter(|a| a.node == node) {
            self.fleet
                .release(a)
                .expect("a running job's task releases from its node");
        }
        // Same cell and model: the occupancy metrics' allocated figures do not move.
        self.subs.rel.hot_swaps += 1;
        let run = self.next_run;
        self.next_run = (self.next_run + 1) % crate::engine::NOT_RUNNING;
        let rec = &mut self.jobs[id.index()];
        rec.allocs = crate::engine::Allocs::from_vec(new);
        rec.run = run;
        let x = rec.extra.get_or_insert_with(Box::default);
        x.run_start = Some(now);
        x.pending_since = None; // restarted at once
        let done = x.done;
        let mut remaining = SimDuration(rec.runtime.0.saturating_sub(done.0));
        if self.cfg.reliability {
            remaining = self.start_account(id, remaining, false);
        }
        self.events.push(
            now + remaining,
            crate::engine::events::EventKind::Finish(id, run),
        );
        self.sched
            .on_hot_swap(id, self.jobs[id.index()].allocs.as_slice(), now, done);
        self.node_sets.spares.remove(&spare);
        self.node_sets.spares.insert(node);
        self.node_sets.spares_down.insert(node);
        if self.node_sets.draining.contains(&node) {
            self.settle_drained(&[node]);
        }
        true
    }
}
