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
use std::ops::Bound;

/// How jobs are ordered when every job is re-decided.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
    /// The indexed lists ([`Fast`]); `None` once the lists above are the state (after a
    /// job was lost, hot-swapped or placed outside a pass: see [`Redecide::leave_index`]).
    fast: Option<Box<Fast>>,
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
            fast: Some(Box::new(Fast {
                seqs: (0..n).map(|_| Seq::default()).collect(),
                ..Fast::default()
            })),
        }
    }

    /// A new job joins the tail; a requeued one (already live) just waits again.
    pub(crate) fn enqueue(&mut self, job: PendingJob) {
        let id = job.id;
        self.changed = true;
        if let Some(f) = self.fast.as_mut() {
            if f.slot(id).is_none() && !self.pending.contains_key(&id) {
                f.add_fresh(id, job.total_gpu_milli());
                self.pending.insert(id, job);
                return;
            }
            self.leave_index();
        }
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
        if let Some(f) = self.fast.as_mut() {
            f.remove(id);
            return;
        }
        if let Some(l) = self.level.remove(&id) {
            self.lists[l].retain(|&x| x != id);
        }
        self.arrivals.retain(|&x| x != id);
    }

    /// The input sequence number of `id` when it is waiting (not running).
    pub(crate) fn pending_seq(&self, id: JobId) -> Option<u64> {
        self.pending.get(&id).map(|j| j.seq)
    }

    pub(crate) fn wake(&self) -> Option<SimTime> {
        self.wake
    }

    /// The LAS level of a live job.
    #[cfg(test)]
    fn level_of(&self, id: JobId) -> Option<usize> {
        match &self.fast {
            Some(f) => f.slot(id).map(|s| s.level),
            None => self.level.get(&id).copied(),
        }
    }

    /// Leaves the indexed lists for the plain ones (`level`, `arrivals`, `lists`), which
    /// are then the state: the plain pass handles every case (a running job whose order
    /// key moves other than by running: lost, hot-swapped, placed outside a pass), the
    /// index only the common ones. The lists written are the ones the plain pass would
    /// hold now: each list in position order, then the jobs that arrived since the last
    /// pass at the tail of the first.
    pub(crate) fn leave_index(&mut self) {
        let Some(f) = self.fast.take() else {
            return;
        };
        let mut live: Vec<(u64, JobId, usize)> = Vec::new();
        for (i, s) in f.slots.iter().enumerate() {
            if let Some(s) = s {
                live.push((s.arrival, JobId(i as u32), s.level));
            }
        }
        live.sort_unstable();
        self.arrivals = live.iter().map(|l| l.1).collect();
        self.level = live.iter().map(|l| (l.1, l.2)).collect();
        for (list, seq) in self.lists.iter_mut().zip(&f.seqs) {
            let mut all: Vec<(Pos, JobId)> = seq.run.clone();
            for m in seq.wait.values() {
                all.extend(m.iter().map(|(&p, &id)| (p, id)));
            }
            all.sort_unstable();
            *list = all.into_iter().map(|e| e.1).collect();
        }
        self.lists[0].extend(f.fresh.iter().copied());
    }
}

/// A position in an order list: (order key, rank); ranks only break ties of equal keys.
type Pos = (u64, i64);

/// Where a live job is in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum Place {
    /// Arrived since the last pass (the tail of the first list, not ranked yet).
    Fresh,
    /// Pending, in its list's `wait`.
    Wait,
    /// Running, in its list's `run`.
    Run,
}

#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Slot {
    /// Arrival rank (the order LAS demotions are checked in).
    arrival: u64,
    /// The list (LAS level).
    level: usize,
    pos: Pos,
    place: Place,
    /// GPU-milli of the whole job.
    need: u64,
}

/// One order list, indexed: its running jobs in position order and its pending ones by
/// GPU need, each need in position order. The list is the merge of both by position, so a
/// pass walks the running jobs and, between them, only the pending jobs whose need fits what
/// is left: its cost is the running jobs plus the jobs started, times the number of needs,
/// whatever the number of pending jobs.
#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Seq {
    run: Vec<(Pos, JobId)>,
    wait: BTreeMap<u64, BTreeMap<Pos, JobId>>,
}

/// The indexed form of the order lists (the plain pass's lists, re-sorted stably at each
/// event, hold the same order):
/// * `fifo`: key 0, rank = arrival; `sjf`: key = GPUs, rank = arrival (a stable sort by a
///   key that never changes keeps arrival order among equal keys);
/// * `srtf`: key = remaining time. A pending job's key does not change; a running job's
///   only falls, so at each pass one whose key changed lands behind every job already
///   at its new key (it was behind them in the previous order) and is re-ranked then, in
///   previous order; jobs arrived since go behind all (the list's tail);
/// * `las`: key 0; new jobs and demoted ones get ranks behind all (the tail), and after each
///   pass the running jobs get ranks ahead of all, in list order (the stable "running
///   first").
#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Fast {
    slots: Vec<Option<Slot>>,
    seqs: Vec<Seq>,
    fresh: Vec<JobId>,
    next_arrival: u64,
    /// The next rank behind every rank given (counts up) and the last rank ahead of all
    /// (counts down).
    hi: i64,
    lo: i64,
}

impl Fast {
    fn slot(&self, id: JobId) -> Option<&Slot> {
        self.slots.get(id.index()).and_then(Option::as_ref)
    }

    fn slot_mut(&mut self, id: JobId) -> &mut Slot {
        self.slots[id.index()].as_mut().expect("an indexed job")
    }

    fn add_fresh(&mut self, id: JobId, need: u64) {
        if self.slots.len() <= id.index() {
            self.slots.resize(id.index() + 1, None);
        }
        self.slots[id.index()] = Some(Slot {
            arrival: self.next_arrival,
            level: 0,
            pos: (0, 0),
            place: Place::Fresh,
            need,
        });
        self.next_arrival += 1;
        self.fresh.push(id);
    }

    fn rank_hi(&mut self) -> i64 {
        self.hi += 1;
        self.hi
    }

    fn insert_wait(&mut self, id: JobId) {
        let s = *self.slot(id).expect("an indexed job");
        self.seqs[s.level]
            .wait
            .entry(s.need)
            .or_default()
            .insert(s.pos, id);
        self.slot_mut(id).place = Place::Wait;
    }

    fn remove_wait(&mut self, id: JobId) {
        let s = *self.slot(id).expect("an indexed job");
        let w = &mut self.seqs[s.level].wait;
        if let Some(m) = w.get_mut(&s.need) {
            m.remove(&s.pos);
            if m.is_empty() {
                w.remove(&s.need);
            }
        }
    }

    fn remove(&mut self, id: JobId) {
        let Some(s) = self.slot(id).copied() else {
            return;
        };
        match s.place {
            Place::Fresh => self.fresh.retain(|&x| x != id),
            Place::Wait => self.remove_wait(id),
            Place::Run => self.seqs[s.level].run.retain(|e| e.1 != id),
        }
        self.slots[id.index()] = None;
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
/// Stops running job `id` at `now` by the model's free preemption (every millisecond of
/// progress kept: checkpoint interval 1 ms): frees its accelerators, its quota usage and its
/// fair-share charge, and returns it as a pending job. Panics if `id` is not running.
fn stop_freely(c: &mut Core, fleet: &mut FleetState, id: JobId, now: SimTime) -> PendingJob {
    let mut run = c
        .running
        .as_mut()
        .and_then(|reg| reg.get_mut(id.index()))
        .and_then(Option::take)
        .expect("a running job");
    c.untrack(id, run.job.queue);
    run.job.checkpoint_interval = Some(SimDuration(1));
    release(fleet, &run.allocs);
    if let (Some(t), Some(f)) = (c.quota.as_mut(), run.flavor) {
        t.remove_usage(run.job.queue, f, &run.req);
    }
    c.uncharge(run.job.queue, run.job.total_gpu_milli(), now);
    stopped_job(&run, now)
}

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
            if r.fast.is_some() {
                self.indexed_pass(&mut r, fleet, now, out);
            } else {
                self.redecide_pass(&mut r, fleet, now, out);
            }
        }
        self.redecide = Some(r);
    }

    /// The pass of [`Scheduler::redecide_pass`] on the indexed lists ([`Fast`]): the same
    /// decisions in the same order, at a cost set by the running jobs and the GPU needs, not
    /// by the pending jobs.
    fn indexed_pass(
        &mut self,
        r: &mut Redecide,
        fleet: &mut FleetState,
        now: SimTime,
        out: &mut Vec<Decision>,
    ) {
        let c = &mut self.core;
        let mut f = r.fast.take().expect("indexed lists");
        // (1) The order at `now`.
        if let RedecideOrder::Remaining = r.order {
            // Running jobs whose remaining time fell: behind every job already at their new
            // key, in their previous order.
            let mut run = std::mem::take(&mut f.seqs[0].run);
            let mut moved = false;
            for e in &mut run {
                let k = remaining(c, r, e.1, now);
                if k != e.0 .0 {
                    e.0 = (k, f.rank_hi());
                    f.slot_mut(e.1).pos = e.0;
                    moved = true;
                }
            }
            if moved {
                run.sort_unstable();
            }
            f.seqs[0].run = run;
        }
        for id in std::mem::take(&mut f.fresh) {
            let key = match r.order {
                RedecideOrder::Arrival | RedecideOrder::Las(_) => 0,
                RedecideOrder::FewestGpus => f.slot(id).expect("an indexed job").need,
                RedecideOrder::Remaining => remaining(c, r, id, now),
            };
            let pos = (key, f.rank_hi());
            f.slot_mut(id).pos = pos;
            f.insert_wait(id);
        }
        let mut touched = vec![false; f.seqs.len()];
        if let RedecideOrder::Las(limits) = &r.order {
            // Demotions, in arrival order (only the running jobs that reached their
            // queue's threshold need ordering).
            let mut due: Vec<(u64, JobId)> = Vec::new();
            for (l, seq) in f.seqs.iter().enumerate().take(limits.len()) {
                for e in &seq.run {
                    let run = live_running(c, e.1).expect("an indexed running job");
                    if run.attained_gpu_ms(now) >= limits[l] {
                        due.push((f.slot(e.1).expect("an indexed job").arrival, e.1));
                    }
                }
            }
            due.sort_unstable();
            for (_, id) in due {
                let l = f.slot(id).expect("an indexed job").level;
                {
                    touched[l] = true;
                    touched[l + 1] = true;
                    f.seqs[l].run.retain(|e| e.1 != id);
                    let pos = (0, f.rank_hi());
                    f.seqs[l + 1].run.push((pos, id));
                    let s = f.slot_mut(id);
                    s.level = l + 1;
                    s.pos = pos;
                }
            }
        }
        // (2) Who runs: from an empty fleet, in order, fits or skip. Each list is its
        // running jobs merged by position with, per GPU need that still fits, the next
        // pending job of that need.
        let mut left = fleet.available_gpu_milli();
        let (mut start, mut stop) = (Vec::new(), Vec::new());
        let mut cur: Vec<(u64, Pos, JobId)> = Vec::new();
        for seq in &f.seqs {
            cur.clear();
            for (&need, m) in seq.wait.range(..=left) {
                if let Some((&p, &id)) = m.first_key_value() {
                    cur.push((need, p, id));
                }
            }
            let mut ri = 0;
            // The pending candidate first in order among needs that fit; `None` when it
            // must be looked for again.
            let mut best: Option<Option<usize>> = None;
            loop {
                let b = match best {
                    Some(b) => b,
                    None => {
                        let mut b: Option<usize> = None;
                        for (i, e) in cur.iter().enumerate() {
                            if e.0 <= left && b.is_none_or(|j| e.1 < cur[j].1) {
                                b = Some(i);
                            }
                        }
                        best = Some(b);
                        b
                    }
                };
                let next_run = seq.run.get(ri);
                match (b, next_run) {
                    (Some(i), nr) if nr.is_none_or(|e| cur[i].1 < e.0) => {
                        let (need, p, id) = cur[i];
                        left -= need;
                        start.push(id);
                        match seq.wait[&need]
                            .range((Bound::Excluded(p), Bound::Unbounded))
                            .next()
                        {
                            Some((&p2, &id2)) => cur[i] = (need, p2, id2),
                            None => {
                                cur.swap_remove(i);
                            }
                        }
                        best = None;
                    }
                    (_, Some(&(_, id))) => {
                        ri += 1;
                        let need = live_running(c, id)
                            .expect("an indexed running job")
                            .job
                            .total_gpu_milli();
                        if need <= left {
                            left -= need;
                            if b.is_some_and(|i| cur[i].0 > left) {
                                best = None;
                            }
                        } else {
                            stop.push(id);
                        }
                    }
                    (_, None) => break,
                }
            }
        }
        // (3) Preemptions first (they free the room), then starts in order.
        let reason = match r.order {
            RedecideOrder::Las(_) => PreemptReason::Las,
            _ => PreemptReason::Priority,
        };
        for &id in &stop {
            let job = stop_freely(c, fleet, id, now);
            let s = *f.slot(id).expect("an indexed job");
            // The key it had in this pass is the one it keeps while pending.
            debug_assert_eq!(
                match r.order {
                    RedecideOrder::Arrival | RedecideOrder::Las(_) => 0,
                    RedecideOrder::FewestGpus => job.total_gpu_milli(),
                    RedecideOrder::Remaining => job.runtime_estimate.map_or(u64::MAX, |e| e.0),
                },
                s.pos.0
            );
            f.seqs[s.level].run.retain(|e| e.1 != id);
            touched[s.level] = true;
            f.insert_wait(id);
            r.pending.insert(id, job);
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
                    f.remove_wait(id);
                    let s = f.slot_mut(id);
                    s.place = Place::Run;
                    let (l, pos) = (s.level, s.pos);
                    f.seqs[l].run.push((pos, id));
                    touched[l] = true;
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
        for (seq, &t) in f.seqs.iter_mut().zip(&touched) {
            if t {
                seq.run.sort_unstable();
            }
        }
        // (4) LAS: running jobs first in each queue (ranks ahead of all, in list order);
        // the next demotion wake-up.
        r.wake = None;
        if let RedecideOrder::Las(limits) = &r.order {
            // A list no job entered or left is still running-first from the last pass.
            for li in (0..f.seqs.len()).filter(|&li| touched[li]) {
                let n = f.seqs[li].run.len() as i64;
                f.lo -= n;
                let lo = f.lo;
                let mut run = std::mem::take(&mut f.seqs[li].run);
                for (i, e) in run.iter_mut().enumerate() {
                    e.0 = (0, lo + i as i64);
                    f.slot_mut(e.1).pos = e.0;
                }
                f.seqs[li].run = run;
            }
            for seq in &f.seqs {
                for &(_, id) in &seq.run {
                    let Some(run) = live_running(c, id) else {
                        continue;
                    };
                    let l = f.slot(id).expect("an indexed job").level;
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
        r.fast = Some(f);
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
            r.pending.insert(id, stop_freely(c, fleet, id, now));
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
    use crate::scheduler::test_support::one_node_fleet as fleet;
    use crate::state::NodeSpec;

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
            assert_eq!(s.redecide.as_ref().unwrap().level_of(JobId(0)), Some(1));
        }
    }

    /// SplitMix64: the same random cases on every machine.
    struct Gen(u64);

    impl Gen {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) % n
        }
    }

    /// The indexed lists change no decision: on 400 random workloads per order (3 nodes of
    /// 4 GPUs, so some starts the counter admits fail placement; 1–12 GPU jobs, some with
    /// no estimate; arrivals, completions and LAS wake-ups at shared instants), a scheduler
    /// on the index and one on the plain lists from the start make the same decisions in
    /// the same order at every pass. In half the cases the indexed one leaves the index for
    /// the plain lists midway ([`Redecide::leave_index`], what a lost or hot-swapped job
    /// does), and must still agree.
    #[test]
    fn indexed_lists_decide_as_the_plain_ones() {
        let orders = [
            RedecideOrder::Arrival,
            RedecideOrder::FewestGpus,
            RedecideOrder::Remaining,
            RedecideOrder::Las(vec![20_000, 90_000]),
        ];
        let mut passes = 0u64;
        let mut preempts = 0u64;
        for order in orders {
            for case in 0..400u64 {
                let mut g = Gen(case * 7 + 1);
                let nodes: Vec<NodeSpec> = (0..3)
                    .map(|i| NodeSpec {
                        name: format!("n{i}"),
                        cell: CellId(0),
                        block: 0,
                        domain: i,
                        model: Some(ModelId(0)),
                        gpus: 4,
                        cpu_milli: 64_000,
                        mem_mib: 1 << 20,
                    })
                    .collect();
                let mk =
                    || FleetState::new(vec!["c".into()], vec!["G".into()], nodes.clone()).unwrap();
                let (mut fa, mut fb) = (mk(), mk());
                let (mut a, mut b) = (sched(order.clone()), sched(order.clone()));
                b.redecide.as_mut().unwrap().leave_index();
                // Jobs: (submit s, GPUs, true run s, estimate known).
                let mut t = 0;
                let jobs: Vec<(u64, u32, u64, bool)> = (0..20 + g.below(40))
                    .map(|_| {
                        t += g.below(3) * g.below(4);
                        let gpus = [1, 1, 1, 2, 2, 3, 4, 4, 8, 12][g.below(10) as usize];
                        (t, gpus, 1 + g.below(60), g.below(8) != 0)
                    })
                    .collect();
                let switch_at = (case % 2 == 0).then(|| g.below(60));
                // Per job: remaining true run ms, start of the current run.
                let mut left: Vec<u64> = jobs.iter().map(|j| j.2 * 1000).collect();
                let mut started: BTreeMap<u32, SimTime> = BTreeMap::new();
                let mut next = 0usize;
                let mut now = SimTime::ZERO;
                let mut step = 0u64;
                loop {
                    // Completions first, then arrivals, then the pass.
                    let ends: Vec<u32> = started
                        .iter()
                        .filter(|(&id, &st)| st.0 + left[id as usize] == now.0)
                        .map(|(&id, _)| id)
                        .collect();
                    for id in ends {
                        started.remove(&id);
                        left[id as usize] = 0;
                        for (s, f) in [(&mut a, &mut fa), (&mut b, &mut fb)] {
                            let run = s.core.running.as_ref().unwrap()[id as usize]
                                .as_ref()
                                .unwrap();
                            let (allocs, gpu) = (run.allocs.clone(), run.job.total_gpu_milli());
                            release(f, &allocs);
                            s.on_job_end(JobId(id), QueueId(0), gpu, now);
                        }
                    }
                    while next < jobs.len() && SimTime::from_secs(jobs[next].0) == now {
                        let (sub, gpus, run_s, known) = jobs[next];
                        let mut j = job(next as u32, sub, gpus, run_s);
                        if !known {
                            j.runtime_estimate = None;
                        }
                        a.submit(&mut fa, j.clone()).unwrap();
                        b.submit(&mut fb, j).unwrap();
                        next += 1;
                    }
                    if switch_at == Some(step) {
                        a.redecide.as_mut().unwrap().leave_index();
                    }
                    step += 1;
                    let (da, db) = (a.schedule_at(&mut fa, now), b.schedule_at(&mut fb, now));
                    assert_eq!(
                        format!("{da:?}"),
                        format!("{db:?}"),
                        "{order:?} case {case} at {now:?}"
                    );
                    passes += 1;
                    for d in &da {
                        match d {
                            Decision::Start { job, .. } => {
                                started.insert(job.0, now);
                            }
                            Decision::Preempt { job, .. } => {
                                preempts += 1;
                                let st = started.remove(&job.0).unwrap();
                                left[job.index()] -= now.0 - st.0;
                            }
                            Decision::Reject { .. } => panic!("no rejection"),
                        }
                    }
                    assert_eq!(a.next_wake(), b.next_wake());
                    let cands = [
                        jobs.get(next).map(|j| SimTime::from_secs(j.0)),
                        started
                            .iter()
                            .map(|(&id, &st)| SimTime(st.0 + left[id as usize]))
                            .min(),
                        a.next_wake(),
                    ];
                    match cands.into_iter().flatten().min() {
                        Some(t) => now = t,
                        None => break,
                    }
                }
                assert!(
                    left.iter().all(|&l| l == 0),
                    "{order:?} case {case}: every job ran"
                );
            }
        }
        // The cases do exercise preemption (a count computed when this test was written
        // would be brittle; only that there are many).
        assert!(
            passes > 10_000 && preempts > 1_000,
            "{passes} passes, {preempts} preemptions"
        );
    }
}
