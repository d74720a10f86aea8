//! The Tiresias preemption model (`[policy] preemption_model = "tiresias"`): at every event
//! every job, running or not, is re-decided from an empty cluster in the policy's order, as
//! the Tiresias simulator (`SymbioticLab/Tiresias`, `simulator/run_sim.py`) does for its
//! preemptive schedulers.
//!
//! * **Fits**: a job is (kept) running when its GPUs fit in what the jobs before it left of
//!   the fleet's GPUs (one cluster-wide counter: Tiresias' `count` scheme), else it is skipped
//!   (backfill) and, if it was running, preempted. Preemption is free: no grace, and (the
//!   engine keeps progress to the millisecond) no lost work.
//! * **Orders** (the peer's lists, persistent across events): `fifo` arrival order; `sjf`
//!   the peer's `sjf`, fewest GPUs first; `srtf` remaining run time (preemptive SRTF, the
//!   peer's `shortest`); each re-sorted stably at every event, so ties keep the previous
//!   order. `las` is the peer's `dlas-gpu`: queues by attained GPU-time, a new job at the tail
//!   of the first, a running job whose attained service reaches its queue's threshold moved
//!   to the tail of the next (one level per event, in arrival order); queues scanned in
//!   order, each in list order; after a pass each queue is reordered stably, running jobs
//!   first.
//! * **Events**: a pass runs once per instant with an arrival, a completion or a demotion
//!   wake-up ([`Scheduler::next_wake`]); the wake-up is the peer's
//!   `t + (threshold − executed) // num_gpu` (threshold in GPU-seconds, executed in wall
//!   seconds), late for multi-GPU jobs, which are then demoted at the first event after
//!   the crossing.
//!
//! A start that the counter admits but placement cannot realize (a fleet whose nodes
//! fragment the GPUs) stays pending; on a fleet of whole-GPU nodes with jobs of one-GPU
//! tasks (the `tiresias` trace format) it never happens.

use super::*;
use crate::decision::PreemptReason;

/// How jobs are ordered when every job is re-decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedecideOrder {
    /// Arrival order.
    Arrival,
    /// Fewest GPUs first (Tiresias' `sjf`).
    FewestGpus,
    /// Least remaining run time first (preemptive SRTF, Tiresias' `shortest`).
    Remaining,
    /// Discretized LAS queues with these ascending thresholds, GPU·ms (Tiresias'
    /// `dlas-gpu`).
    Las(Vec<u64>),
}

/// The re-decide state: every live job, the order lists, the last pass.
#[derive(Debug)]
pub(crate) struct Redecide {
    order: RedecideOrder,
    /// Pending jobs by id (running ones are in the core's running set).
    pending: BTreeMap<JobId, PendingJob>,
    /// LAS level of every live job (LAS only).
    level: BTreeMap<JobId, usize>,
    /// Live jobs in arrival order (LAS: the order demotions are checked in).
    arrivals: Vec<JobId>,
    /// The order lists: one, or one per LAS queue.
    lists: Vec<Vec<JobId>>,
    last: Option<SimTime>,
    changed: bool,
    wake: Option<SimTime>,
}

impl Redecide {
    pub(crate) fn new(order: RedecideOrder) -> Redecide {
        let n = match &order {
            RedecideOrder::Las(t) => t.len() + 1,
            _ => 1,
        };
        Redecide {
            order,
            pending: BTreeMap::new(),
            level: BTreeMap::new(),
            arrivals: Vec::new(),
            lists: vec![Vec::new(); n],
            last: None,
            changed: false,
            wake: None,
        }
    }

    /// A new job joins the tail; a requeued one (already live) just waits again.
    pub(crate) fn enqueue(&mut self, job: PendingJob) {
        let id = job.id;
        self.changed = true;
        if self.pending.insert(id, job).is_some() || self.level.contains_key(&id) {
            return;
        }
        self.level.insert(id, 0);
        self.arrivals.push(id);
        self.lists[0].push(id);
    }

    /// A job ended.
    pub(crate) fn on_end(&mut self, id: JobId) {
        self.changed = true;
        self.pending.remove(&id);
        if let Some(l) = self.level.remove(&id) {
            self.lists[l].retain(|&x| x != id);
        }
        self.arrivals.retain(|&x| x != id);
    }

    pub(crate) fn wake(&self) -> Option<SimTime> {
        self.wake
    }
}

fn live_running(c: &Core, id: JobId) -> Option<&Running> {
    c.running
        .as_ref()
        .and_then(|reg| reg.get(id.index()))
        .and_then(|r| r.as_deref())
        .filter(|r| r.evicting.is_none())
}

/// Remaining run time at `now` (unknown: last).
fn remaining(c: &Core, r: &Redecide, id: JobId, now: SimTime) -> u64 {
    match live_running(c, id) {
        Some(run) => run.job.runtime_estimate.map_or(u64::MAX, |e| {
            e.0.saturating_sub(now.saturating_since(run.start).0)
        }),
        None => r
            .pending
            .get(&id)
            .and_then(|j| j.runtime_estimate)
            .map_or(u64::MAX, |e| e.0),
    }
}

impl Scheduler {
    /// One re-decide pass at `now` (see the module docs); nothing when nothing changed since
    /// the last pass at this instant.
    pub(crate) fn redecide_into(
        &mut self,
        fleet: &mut FleetState,
        now: SimTime,
        out: &mut Vec<Decision>,
    ) {
        let mut r = self.redecide.take().expect("re-decide mode");
        self.core.now = now;
        if r.last != Some(now) || r.changed {
            r.last = Some(now);
            r.changed = false;
            self.redecide_pass(&mut r, fleet, now, out);
        }
        self.redecide = Some(r);
    }

    fn redecide_pass(
        &mut self,
        r: &mut Redecide,
        fleet: &mut FleetState,
        now: SimTime,
        out: &mut Vec<Decision>,
    ) {
        let c = &mut self.core;
        // (1) The order at `now`.
        match r.order.clone() {
            RedecideOrder::Arrival => {}
            RedecideOrder::FewestGpus => {
                let gpus = |id: &JobId| match live_running(c, *id) {
                    Some(run) => run.job.total_gpu_milli(),
                    None => r.pending.get(id).map_or(0, PendingJob::total_gpu_milli),
                };
                r.lists[0].sort_by_key(gpus);
            }
            RedecideOrder::Remaining => {
                let mut keyed: Vec<(u64, JobId)> = r.lists[0]
                    .iter()
                    .map(|&id| (remaining(c, r, id, now), id))
                    .collect();
                keyed.sort_by_key(|k| k.0);
                r.lists[0] = keyed.into_iter().map(|k| k.1).collect();
            }
            RedecideOrder::Las(limits) => {
                for i in 0..r.arrivals.len() {
                    let id = r.arrivals[i];
                    let Some(run) = live_running(c, id) else {
                        continue;
                    };
                    let l = r.level[&id];
                    if l < limits.len() && run.attained_gpu_ms(now) >= limits[l] {
                        r.lists[l].retain(|&x| x != id);
                        r.lists[l + 1].push(id);
                        r.level.insert(id, l + 1);
                    }
                }
            }
        }
        // (2) Who runs: from an empty fleet, in order, fits or skip.
        let mut left = fleet.available_gpu_milli();
        let (mut start, mut stop) = (Vec::new(), Vec::new());
        for list in &r.lists {
            for &id in list {
                let running = live_running(c, id);
                let need = match running {
                    Some(run) => run.job.total_gpu_milli(),
                    None => match r.pending.get(&id) {
                        Some(j) => j.total_gpu_milli(),
                        None => continue, // evicting elsewhere: holds what it holds
                    },
                };
                if need <= left {
                    left -= need;
                    if running.is_none() {
                        start.push(id);
                    }
                } else if running.is_some() {
                    stop.push(id);
                }
            }
        }
        // (3) Preemptions first (they free the room), then starts in order.
        let reason = match r.order {
            RedecideOrder::Las(_) => PreemptReason::Las,
            _ => PreemptReason::Priority,
        };
        for &id in &stop {
            let mut run = c
                .running
                .as_mut()
                .and_then(|reg| reg.get_mut(id.index()))
                .and_then(Option::take)
                .expect("a running job");
            // Free preemption: every millisecond of progress is kept.
            run.job.checkpoint_interval = Some(SimDuration(1));
            release(fleet, &run.allocs);
            if let (Some(t), Some(f)) = (c.quota.as_mut(), run.flavor) {
                t.remove_usage(run.job.queue, f, &run.req);
            }
            c.uncharge(run.job.queue, run.job.total_gpu_milli(), now);
            r.pending.insert(id, stopped_job(&run, now));
            self.pending_len += 1;
            out.push(Decision::Preempt {
                job: id,
                preemptor: start.first().copied().unwrap_or(id),
                reason,
                grace: SimDuration::ZERO,
            });
        }
        let mut pass = self.pass.take().unwrap_or_default();
        for &id in &start {
            let job = r.pending.remove(&id).expect("a pending job");
            let models = job.models;
            match c.place_in_cells(&mut pass, fleet, &job, models) {
                Some((cell, tasks)) => {
                    c.admit(&job, None, &tasks);
                    c.register(job);
                    self.pending_len -= 1;
                    out.push(Decision::Start {
                        job: id,
                        cell,
                        tasks,
                    });
                }
                None => {
                    r.pending.insert(id, job);
                }
            }
        }
        self.pass = Some(pass);
        // (4) LAS: running jobs first in each queue; the next demotion wake-up.
        r.wake = None;
        if let RedecideOrder::Las(limits) = &r.order {
            for list in &mut r.lists {
                let (mut run, mut wait): (Vec<JobId>, Vec<JobId>) = (Vec::new(), Vec::new());
                for &id in list.iter() {
                    if live_running(c, id).is_some() {
                        run.push(id);
                    } else {
                        wait.push(id);
                    }
                }
                run.extend(wait);
                *list = run;
            }
            for &id in &r.arrivals {
                let (Some(run), Some(&l)) = (live_running(c, id), r.level.get(&id)) else {
                    continue;
                };
                let gpus = run.job.total_gpu_milli() / 1000;
                if l >= limits.len() || gpus == 0 {
                    continue;
                }
                // The peer: executed wall seconds, threshold GPU-seconds, integer division.
                let executed_s = (run.attained_gpu_ms(now) / gpus / 1000) as i128;
                let limit_s = (limits[l] / 1000) as i128;
                let after_s = (limit_s - executed_s).div_euclid(gpus as i128);
                let at = now.0 as i128 + after_s * 1000;
                if at > now.0 as i128 {
                    let at = SimTime(at.min(u64::MAX as i128) as u64);
                    r.wake = Some(r.wake.map_or(at, |w| w.min(at)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ModelId, QueueId, TenantId};
    use crate::state::NodeSpec;

    fn fleet(gpus: u32) -> FleetState {
        let node = NodeSpec {
            name: "n1".into(),
            cell: CellId(0),
            block: 0,
            domain: 0,
            model: Some(ModelId(0)),
            gpus,
            cpu_milli: 1000,
            mem_mib: 1000,
        };
        FleetState::new(vec!["c".into()], vec!["G".into()], vec![node]).unwrap()
    }

    fn job(id: u32, submit_s: u64, gpus: u32, runtime_s: u64) -> PendingJob {
        PendingJob {
            id: JobId(id),
            tenant: TenantId(0),
            queue: QueueId(0),
            submit: SimTime::from_secs(submit_s),
            seq: id as u64,
            shape: TaskShape::whole_gpus(1),
            tasks: gpus,
            runtime_estimate: Some(SimDuration::from_secs(runtime_s)),
            ..PendingJob::default()
        }
    }

    fn sched(order: RedecideOrder) -> Scheduler {
        Scheduler::new(SchedulerConfig::default(), vec![QueueConfig::default()]).with(Extensions {
            redecide: Some(order),
            ..Extensions::default()
        })
    }

    /// (started, preempted) job ids of a pass.
    fn split(d: &[Decision]) -> (Vec<u32>, Vec<u32>) {
        let mut out = (Vec::new(), Vec::new());
        for d in d {
            match d {
                Decision::Start { job, .. } => out.0.push(job.0),
                Decision::Preempt { job, grace, .. } => {
                    assert_eq!(*grace, SimDuration::ZERO);
                    out.1.push(job.0)
                }
                Decision::Reject { .. } => panic!("no rejection"),
            }
        }
        out
    }

    /// Preemptive SRTF on one GPU. A (100 s) starts at 0. At 10 s B (30 s) arrives: A has
    /// 100 − 10 = 90 s left > 30, so A is preempted and B starts. At 20 s C (95 s) arrives:
    /// order B (30 − 10 = 20 left), A (90), C (95): nothing changes. B ends at 10 + 30 =
    /// 40 s: A (90, its progress kept) goes before C (95) and resumes.
    ///
    /// Fails without the fix (issue #16 item 8: running jobs ranked first in
    /// `RedecideOrder::Remaining`, i.e. non-preemptive SRTF): the decisions at 10 s expected
    /// (starts, preemptions) = ([1], [0]), got ([], []) (checked by reverting the fix).
    #[test]
    fn preemptive_srtf_by_hand() {
        let mut f = fleet(1);
        let mut s = sched(RedecideOrder::Remaining);
        let t = SimTime::from_secs;
        s.submit(&mut f, job(0, 0, 1, 100)).unwrap();
        assert_eq!(split(&s.schedule_at(&mut f, t(0))), (vec![0], vec![]));
        s.submit(&mut f, job(1, 10, 1, 30)).unwrap();
        assert_eq!(split(&s.schedule_at(&mut f, t(10))), (vec![1], vec![0]));
        // A second pass at the same instant changes nothing.
        assert!(s.schedule_at(&mut f, t(10)).is_empty());
        s.submit(&mut f, job(2, 20, 1, 95)).unwrap();
        assert!(s.schedule_at(&mut f, t(20)).is_empty());
        assert_eq!(s.pending_len(), 2);
        let alloc = s.core.running.as_ref().unwrap()[1]
            .as_ref()
            .unwrap()
            .allocs
            .clone();
        release(&mut f, &alloc);
        s.on_job_end(JobId(1), QueueId(0), 1000, t(40));
        assert_eq!(split(&s.schedule_at(&mut f, t(40))), (vec![0], vec![]));
        let a = s.core.running.as_ref().unwrap()[0].as_ref().unwrap();
        assert_eq!(a.job.runtime_estimate, Some(SimDuration::from_secs(90)));
    }

    /// The peer's `sjf`: fewest GPUs first. On 2 GPUs, A (2 GPUs) runs from 0; B (1 GPU)
    /// arrives at 5 and goes first: A no longer fits in the 2 − 1 = 1 GPU left and is
    /// preempted; the GPU left idle is not given to A (a gang of 2).
    #[test]
    fn fewest_gpus_first_preempts_a_larger_job() {
        let mut f = fleet(2);
        let mut s = sched(RedecideOrder::FewestGpus);
        let t = SimTime::from_secs;
        s.submit(&mut f, job(0, 0, 2, 100)).unwrap();
        assert_eq!(split(&s.schedule_at(&mut f, t(0))), (vec![0], vec![]));
        s.submit(&mut f, job(1, 5, 1, 1000)).unwrap();
        assert_eq!(split(&s.schedule_at(&mut f, t(5))), (vec![1], vec![0]));
    }

    /// LAS with one threshold of 100 GPU-s. A (4 GPUs) starts at 0; its wake-up is the
    /// peer's late one: 0 + (100 − 0) // 4 = 25 s, where A has 25 × 4 = 100 GPU-s: demoted
    /// there. Had it 2 GPUs, (100 − 0) // 2 = 50 s (exact, 50 × 2 = 100). With 3 GPUs:
    /// (100 − 0) // 3 = 33 s (99 GPU-s, not yet), then 33 + (100 − 33) // 3 = 33 + 22 = 55 s.
    #[test]
    fn las_wake_up_is_the_peers_late_one() {
        let t = SimTime::from_secs;
        for (gpus, wakes) in [(4, vec![25]), (3, vec![33, 55])] {
            let mut f = fleet(4);
            let mut s = sched(RedecideOrder::Las(vec![100_000]));
            s.submit(&mut f, job(0, 0, gpus, 1000)).unwrap();
            assert_eq!(split(&s.schedule_at(&mut f, t(0))), (vec![0], vec![]));
            for w in wakes {
                assert_eq!(s.next_wake(), Some(t(w)), "{gpus} GPUs");
                assert!(s.schedule_at(&mut f, t(w)).is_empty());
            }
            // Demoted to the last queue: no further wake-up.
            assert_eq!(s.next_wake(), None, "{gpus} GPUs");
            assert_eq!(s.redecide.as_ref().unwrap().level[&JobId(0)], 1);
        }
    }
}
