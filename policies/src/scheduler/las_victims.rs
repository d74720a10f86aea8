//! The running jobs in LAS victim order: what the preemption search of a
//! saturated LAS fleet asks for, kept as jobs start, cross thresholds and stop, instead of a
//! scan and a sort of the whole running set per attempt.
//!
//! Kept when LAS preemption is on with LAS wake-ups ([`Core::las_wakes`], outside the
//! re-decide mode). It holds every running job not being evicted, at its place in the LAS
//! victim order ([`super::las::las_victim_key`]) within its (tier, queue): lowest LAS queue
//! first, then the newest entrant of that queue, then the larger input sequence. A job's
//! place is computed when it starts, moves (hot swap, recovery) or is looked at for a
//! threshold crossing ([`Core::record_demotions`]); the LAS wake-ups make that every instant
//! its queue changes, so at any pass its place is [`super::las::las_place`] at the pass's
//! instant.
//!
//! [`LasCursor`] walks it in the order [`super::preempt::candidates`] sorts LAS victims in,
//! when the LAS rule is the only one that can give the preemptor a victim
//! ([`las_only_victims`]): the search stops at the first victim set that makes room, so
//! an attempt costs the victims it looks at, not the running set.

use super::*;
use crate::decision::PreemptReason;
use crate::preemption::{Candidate, CapacityPreemption};

/// A running job's place: ascending is the LAS victim order within a (tier, queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Slot {
    pub(super) tier: u8,
    pub(super) queue: QueueId,
    pub(super) level: Reverse<usize>,
    pub(super) entered: Reverse<SimTime>,
    pub(super) seq: Reverse<u64>,
    pub(super) id: JobId,
}

impl Slot {
    /// The key this slot's job is filed under by node ([`super::las_nodes::VKey`]).
    pub(crate) fn vkey(&self) -> super::las_nodes::VKey {
        (self.tier, self.level, self.entered, self.seq, self.id)
    }

    /// The smallest slot of (tier, queue) at LAS queue `level`, entered at `entered` or
    /// earlier (entries are ascending in `Reverse` of both).
    fn at(tier: u8, queue: QueueId, level: usize, entered: SimTime) -> Slot {
        Slot {
            tier,
            queue,
            level: Reverse(level),
            entered: Reverse(entered),
            seq: Reverse(u64::MAX),
            id: JobId(0),
        }
    }
}

/// What an indexed job contributes to the aggregates.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Indexed {
    slot: Slot,
    gpu_milli: u64,
    priority: i32,
}

/// The index (module docs).
#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct LasVictims {
    order: BTreeSet<Slot>,
    /// By [`JobId`] index: the job's entry, when indexed.
    by_id: Vec<Option<Indexed>>,
    /// Indexed jobs per (tier, queue).
    streams: BTreeMap<(u8, QueueId), u32>,
    /// Indexed jobs per (queue, priority).
    priorities: BTreeMap<(QueueId, i32), u32>,
    /// GPU-milli of the indexed jobs per LAS queue.
    level_gpu_milli: Vec<u64>,
    /// Indexed jobs per LAS queue.
    level_jobs: Vec<u64>,
    /// Indexed jobs per tier ([`Tier`] as index).
    tiers: [u64; 3],
    /// The indexed jobs by node ([`super::las_nodes`]).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(super) nodes: super::las_nodes::LasNodes,
}

fn bump<K: Ord>(m: &mut BTreeMap<K, u32>, k: K, add: bool) {
    if add {
        *m.entry(k).or_insert(0) += 1;
    } else if let Some(n) = m.get_mut(&k) {
        *n -= 1;
        if *n == 0 {
            m.remove(&k);
        }
    }
}

impl LasVictims {
    /// Puts running `r` at its place as of `now` (taking it out of its old one), or only
    /// takes it out when it is being evicted.
    pub(crate) fn update(&mut self, las: &crate::queue_order::Las, r: &Running, now: SimTime) {
        self.remove(r.job.id);
        if r.evicting.is_some() {
            return;
        }
        let (level, entered) = las_place(las, r, now);
        let slot = Slot {
            tier: r.job.tier as u8,
            queue: r.job.queue,
            level: Reverse(level),
            entered: Reverse(entered),
            seq: Reverse(r.job.seq),
            id: r.job.id,
        };
        let e = Indexed {
            slot,
            gpu_milli: r.job.total_gpu_milli(),
            priority: r.job.priority,
        };
        self.order.insert(slot);
        self.nodes.file(slot.vkey(), r.job.priority, &r.allocs);
        let i = r.job.id.index();
        if i >= self.by_id.len() {
            self.by_id.resize(i + 1, None);
        }
        self.by_id[i] = Some(e);
        self.count(&e, true);
    }

    /// Takes job `id` out (no-op when it is not indexed).
    pub(crate) fn remove(&mut self, id: JobId) {
        let Some(e) = self.by_id.get_mut(id.index()).and_then(Option::take) else {
            return;
        };
        self.order.remove(&e.slot);
        self.nodes.unfile(id);
        self.count(&e, false);
    }

    /// Files every indexed job on its nodes ([`super::las_nodes`]), from now on kept as
    /// jobs are indexed and taken out.
    pub(super) fn build_nodes(&mut self, c: &Core) {
        self.nodes = super::las_nodes::LasNodes::default();
        self.nodes.set_built();
        for s in &self.order {
            let r = running(c, s.id);
            self.nodes.file(s.vkey(), r.job.priority, &r.allocs);
        }
    }

    /// True when, in every tier up to `max_tier`, the indexed jobs are all of queue `own`
    /// or all of other queues: then [`LasCursor`]'s phases (the other queues first, then
    /// `own`) walk one merged LAS order per tier.
    pub(super) fn phases_merge(&self, own: QueueId, max_tier: u8) -> bool {
        let mut last: Option<(u8, bool)> = None;
        for &(tier, q) in self.streams.keys() {
            if tier > max_tier {
                break;
            }
            let is_own = q == own;
            match last {
                Some((t, o)) if t == tier && o != is_own => return false,
                _ => last = Some((tier, is_own)),
            }
        }
        true
    }

    /// True when some indexed job of a tier up to `max_tier` is in LAS queue `level`,
    /// entered it at `now`, and `outranked` says the preemptor outranks it (a victim
    /// [`LasCursor`] reaches in the preemptor's own LAS queue).
    pub(super) fn entered_at(
        &self,
        max_tier: u8,
        level: usize,
        now: SimTime,
        mut outranked: impl FnMut(JobId) -> bool,
    ) -> bool {
        self.streams
            .keys()
            .take_while(|(tier, _)| *tier <= max_tier)
            .any(|&(tier, q)| {
                self.order
                    .range(Slot::at(tier, q, level, now)..)
                    .take_while(|x| {
                        (x.tier, x.queue, x.level.0, x.entered.0) == (tier, q, level, now)
                    })
                    .any(|x| outranked(x.id))
            })
    }

    fn count(&mut self, e: &Indexed, add: bool) {
        let s = e.slot;
        bump(&mut self.streams, (s.tier, s.queue), add);
        bump(&mut self.priorities, (s.queue, e.priority), add);
        let level = s.level.0;
        if level >= self.level_jobs.len() {
            self.level_jobs.resize(level + 1, 0);
            self.level_gpu_milli.resize(level + 1, 0);
        }
        if add {
            self.level_jobs[level] += 1;
            self.level_gpu_milli[level] += e.gpu_milli;
            self.tiers[s.tier as usize] += 1;
        } else {
            self.level_jobs[level] -= 1;
            self.level_gpu_milli[level] -= e.gpu_milli;
            self.tiers[s.tier as usize] -= 1;
        }
    }

    /// The lowest priority of an indexed job of queue `q`.
    fn min_priority(&self, q: QueueId) -> Option<i32> {
        self.priorities
            .range((q, i32::MIN)..=(q, i32::MAX))
            .next()
            .map(|(&(_, p), _)| p)
    }

    /// The lowest priority of any indexed job.
    fn min_priority_all(&self) -> Option<i32> {
        self.priorities.keys().map(|&(_, p)| p).min()
    }

    /// [`super::preempt::summary`] of the indexed jobs (the running jobs not being evicted),
    /// for LAS preemption `cfg_las` equal to the order's LAS queues: the same summary,
    /// without a walk of the running set.
    pub(crate) fn summary(&self, c: &Core) -> RunSummary {
        let mut s = RunSummary {
            started_at: c.started_gpu_milli,
            tiers: self.tiers,
            ..Default::default()
        };
        for &(q, p) in self.priorities.keys() {
            let i = q.index();
            if i >= s.min_prio.len() {
                s.min_prio.resize(i + 1, None);
            }
            let m = &mut s.min_prio[i];
            *m = Some(m.map_or(p, |m: i32| m.min(p)));
            s.min_prio_all = Some(s.min_prio_all.map_or(p, |m: i32| m.min(p)));
        }
        let Some(top) = self.level_jobs.iter().rposition(|&n| n > 0) else {
            return s;
        };
        s.max_level = top;
        s.level_gpu_milli = (0..=top)
            .map(|level| {
                let now_milli = self
                    .streams
                    .keys()
                    .flat_map(|&(tier, q)| {
                        self.order
                            .range(Slot::at(tier, q, level, c.now)..)
                            .take_while(move |x| {
                                (x.tier, x.queue, x.level.0, x.entered.0) == (tier, q, level, c.now)
                            })
                    })
                    .map(|x| self.by_id[x.id.index()].expect("indexed").gpu_milli)
                    .sum();
                (self.level_gpu_milli[level], now_milli)
            })
            .collect();
        s
    }

    /// GPU-milli of the indexed jobs a LAS search of a preemptor in LAS queue `level` can
    /// reach at `now`, at most: those in a lower queue (`level` + 1 and down), and those of
    /// queue `level` that entered it at `now` (every tier and queue, whether the preemptor
    /// outranks them or not).
    pub(crate) fn reach_gpu_milli(&self, level: usize, now: SimTime) -> u64 {
        let below: u64 = self.level_gpu_milli.iter().skip(level + 1).sum();
        let entered_now: u64 = self
            .streams
            .keys()
            .flat_map(|&(tier, q)| {
                self.order
                    .range(Slot::at(tier, q, level, now)..)
                    .take_while(move |x| {
                        (x.tier, x.queue, x.level.0, x.entered.0) == (tier, q, level, now)
                    })
            })
            .map(|x| self.by_id[x.id.index()].expect("indexed").gpu_milli)
            .sum();
        below + entered_now
    }

    /// The first slot of (tier, queue) after `after` (from its start when `None`).
    fn next_in(&self, tier: u8, queue: QueueId, after: Option<Slot>) -> Option<Slot> {
        let from = match after {
            Some(a) => std::ops::Bound::Excluded(a),
            None => std::ops::Bound::Included(Slot::at(tier, queue, usize::MAX, SimTime::MAX)),
        };
        self.order
            .range((from, std::ops::Bound::Unbounded))
            .next()
            .copied()
            .filter(|s| s.tier == tier && s.queue == queue)
    }
}

/// True when the LAS rule is the only one of [`super::preempt::candidates`] that could give
/// `job` a victim among the running jobs, so that [`LasCursor`] yields exactly its
/// candidates: LAS preemption on the order's own LAS queues, no quota (no reclaim, fair
/// sharing, or borrowing in the victim order), no running job of a lower tier under the tier
/// rule, none the within-queue rule or the priority rule could take.
pub(crate) fn las_only_victims(c: &Core, cfg: &PreemptionConfig, job: &PendingJob) -> bool {
    let Some(ix) = c.las_victims.as_ref() else {
        return false;
    };
    if c.quota.is_some() || cfg.las.is_none() || c.las != cfg.las {
        return false;
    }
    if cfg.tiers && ix.tiers[..job.tier as usize].iter().any(|&n| n > 0) {
        return false;
    }
    let queue_min = ix.min_priority(job.queue);
    let within = cfg.within_queue.could_take(queue_min, job.priority);
    let priority = cfg.capacity == CapacityPreemption::LowerPriority
        && ix.min_priority_all().is_some_and(|m| m < job.priority);
    !within && !priority
}

/// A walk of [`LasVictims`] in victim order for one preemptor ([`las_only_victims`]):
/// tiers from the lowest up to the preemptor's; in each, the other queues' jobs first (merged
/// in LAS order), then its own queue's; in each (tier, queue), from the lowest LAS queue
/// down to the preemptor's own, where only jobs demoted at this instant can be victims.
#[derive(Debug)]
pub(crate) struct LasCursor {
    /// The preemptor's LAS queue.
    level: usize,
    own: QueueId,
    max_tier: u8,
    /// The tier and phase (false: other queues; true: own queue) being walked.
    tier: u8,
    own_phase: bool,
    /// The streams of the phase and the last slot each yielded (`None`: none yet);
    /// exhausted streams are dropped.
    streams: Vec<(QueueId, Option<Slot>)>,
    started: bool,
}

impl LasCursor {
    /// A walk for `job`.
    pub(crate) fn new(las: &crate::queue_order::Las, job: &PendingJob) -> LasCursor {
        LasCursor {
            level: las.level(job.attained_gpu_ms),
            own: job.queue,
            max_tier: job.tier as u8,
            tier: 0,
            own_phase: false,
            streams: Vec::new(),
            started: false,
        }
    }

    /// The streams of the current (tier, phase).
    fn enter_phase(&mut self, ix: &LasVictims) {
        let (tier, own) = (self.tier, self.own);
        self.streams = ix
            .streams
            .range((tier, QueueId(0))..=(tier, QueueId(u32::MAX)))
            .map(|(&(_, q), _)| q)
            .filter(|&q| (q == own) == self.own_phase)
            .map(|q| (q, None))
            .collect();
    }

    /// Moves to the next (tier, phase); false when the walk is over.
    fn next_phase(&mut self) -> bool {
        if self.own_phase {
            if self.tier >= self.max_tier {
                return false;
            }
            self.tier += 1;
            self.own_phase = false;
        } else {
            self.own_phase = true;
        }
        true
    }

    /// Can a job at slot `s` be a LAS victim of the preemptor at all? (Below: never; at
    /// its own LAS queue: only when it entered it now.)
    fn within_reach(&self, s: &Slot, now: SimTime) -> bool {
        s.level.0 > self.level || (s.level.0 == self.level && s.entered.0 == now)
    }

    /// The next slot in victim order that is within reach, or `None` at the end.
    fn next_slot(&mut self, ix: &LasVictims, now: SimTime) -> Option<Slot> {
        if !self.started {
            self.started = true;
            self.enter_phase(ix);
        }
        loop {
            // Each stream's next slot within reach; the smallest (in LAS order, ties by job
            // id) is yielded.
            let mut best: Option<(usize, Slot)> = None;
            let mut i = 0;
            while i < self.streams.len() {
                let (q, after) = self.streams[i];
                match ix
                    .next_in(self.tier, q, after)
                    .filter(|s| self.within_reach(s, now))
                {
                    None => {
                        self.streams.swap_remove(i);
                    }
                    Some(s) => {
                        let k = (s.level, s.entered, s.seq, s.id);
                        if best.is_none_or(|(_, b)| k < (b.level, b.entered, b.seq, b.id)) {
                            best = Some((i, s));
                        }
                        i += 1;
                    }
                }
            }
            if let Some((i, s)) = best {
                self.streams[i].1 = Some(s);
                return Some(s);
            }
            if !self.next_phase() {
                return None;
            }
            self.enter_phase(ix);
        }
    }

    /// The next candidate in victim order, with exactly the filters and key of
    /// [`super::preempt::candidates`] for a LAS victim; `None` at the end.
    pub(crate) fn next(
        &mut self,
        c: &Core,
        cfg: &PreemptionConfig,
        job: &PendingJob,
    ) -> Option<Candidate> {
        let ix = c.las_victims.as_ref()?;
        let las = c.las.as_ref()?;
        let now = c.now;
        let my_preemptors: &[u64] = c.preempted_by.get(&job.seq).map_or(&[], Vec::as_slice);
        while let Some(s) = self.next_slot(ix, now) {
            let r = running(c, s.id);
            debug_assert_eq!(
                las_place(las, r, now),
                (s.level.0, s.entered.0),
                "an indexed job is at its LAS place"
            );
            let v = &r.job;
            if v.id == job.id
                || (c.preempted_now.0 == now && c.preempted_now.1.contains(&v.id))
                || c.victim_counts.get(&v.seq).copied().unwrap_or(0) >= cfg.victim_cap
            {
                continue;
            }
            // The capacity rank's priority component: a higher-priority job is no victim (a
            // lower one cannot be running, `las_only_victims`).
            if cfg.capacity == CapacityPreemption::LowerPriority && v.priority != job.priority {
                continue;
            }
            let las_ahead = las_outranks(las, job, r, now);
            if s.level.0 <= self.level && !las_ahead {
                continue;
            }
            if my_preemptors.contains(&v.seq) && !las_ahead {
                continue;
            }
            return Some(Candidate {
                id: v.id,
                rule: PreemptReason::Las,
                #[cfg(debug_assertions)]
                key: las_victim_key(
                    las,
                    r,
                    now,
                    crate::preemption::VictimKey {
                        tier: v.tier as u8,
                        borrowing: false,
                        share: crate::fairshare::Share::ZERO,
                        same_queue: v.queue == job.queue,
                        priority: v.priority,
                        lost_gpu_milli_ms: r.lost_gpu_milli_ms(now),
                        start_ms: r.start.0,
                        seq: v.seq,
                    },
                ),
            });
        }
        None
    }
}
