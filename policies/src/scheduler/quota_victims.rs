//! Quota's victim search drawn from the running jobs kept in lost-work order,
//! instead of a list of every running job of the borrowing queues heaped for each search.
//!
//! When the reclaim and fair-sharing rules are the only ones that can give a preemptor a
//! victim ([`applies`]), a candidate's place in the victim order
//! ([`crate::preemption::VictimKey`]) is fixed by its queue (borrowing, share rank), its
//! tier and priority, and its lost work, which grows with time at its GPU-milli and restarts
//! at each checkpoint. The run counts keep each queue's jobs in streams of equal tier,
//! priority, GPU-milli, checkpoint interval and flavor, each ordered by the phase of its
//! checkpoint cycle ([`super::run_counts::PhaseKey`]): walking a stream down from the
//! phase of `now` gives its jobs in victim order at `now`, whatever `now` is. [`QuotaCursor`]
//! merges the streams' heads, applies the filters of [`super::preempt::candidates`] to each
//! job it yields, and drops a stream whose queue can no longer give a victim of its least
//! request (the dead groups of [`super::victim_groups`], per stream). A search then costs
//! the candidates it draws. `saturated_quota_preempt` at 100k jobs listed and heaped about
//! 1,744 candidates per search to draw about 300.

use std::cmp::Reverse;

use super::run_counts::{PhaseKey, StreamKey};
use super::victim_key::{share_ranks, SortKey};
use super::*;
use crate::decision::PreemptReason;
#[cfg(debug_assertions)]
use crate::fairshare::Share;
use crate::preemption::Candidate;

/// True when the search for `job` in `flavor` can be drawn from the lost-work order: quota
/// on and kept in order, a flavor, not recorded (a recording context sees the listed
/// search), and only the reclaim and fair-sharing rules could give a victim: no tier rule,
/// capacity preemption by priority or LAS rule, and no within-queue victim among the
/// preemptor's queue's counted jobs (its least priority is above the preemptor's, or at it
/// with [`crate::preemption::WithinQueue::LowerPriority`]).
pub(crate) fn applies(
    c: &Core,
    cfg: &PreemptionConfig,
    job: &PendingJob,
    flavor: Option<u16>,
) -> bool {
    let Some(rc) = c.run_counts.as_ref() else {
        return false;
    };
    if c.quota.is_none()
        || flavor.is_none()
        || c.ctx.records()
        || rc.lost_order(job.queue).is_none()
        || !cfg.queue_rules_only()
    {
        return false;
    }
    !cfg.within_queue
        .could_take(rc.min_priority(job.queue), job.priority)
}

/// Below every job's place (`..LEAST` is an empty range).
const LEAST: PhaseKey = PhaseKey {
    phase: i128::MIN,
    start: 0,
    seq: 0,
    id: Reverse(JobId(u32::MAX)),
};

/// One stream of one queue, as the preemptor sees it.
#[derive(Clone, Debug)]
struct Stream {
    queue: QueueId,
    key: StreamKey,
    rule: PreemptReason,
    borrowing: bool,
    /// Its queue's share (debug builds' victim keys only).
    #[cfg(debug_assertions)]
    share: Share,
    rank: u32,
    /// Its next jobs in victim order, the next last (read from the set in runs, so that a
    /// search drawing many of them seeks the set once per run, not once per job).
    ahead: Vec<PhaseKey>,
    /// Jobs to read in the next run.
    run: usize,
}

impl Stream {
    /// Its jobs after `last` (`None`: from its first) in victim order at `now`.
    fn walk<'s>(
        &self,
        set: &'s BTreeSet<PhaseKey>,
        last: Option<PhaseKey>,
        now: SimTime,
    ) -> impl Iterator<Item = &'s PhaseKey> + 's {
        let Some(m) = self.key.modulus else {
            let first = match last {
                None => set.range(..),
                Some(l) => set.range(..l),
            };
            return first.rev().chain(set.range(..LEAST).rev());
        };
        let at = i128::from(now.0 % m);
        let top = PhaseKey {
            phase: at,
            start: u64::MAX,
            seq: u64::MAX,
            id: Reverse(JobId(0)),
        };
        let wrap = PhaseKey {
            phase: at + 1,
            ..LEAST
        };
        // Down from `now`'s phase, then down from the top of the cycle.
        let (first, then) = match last {
            None => (set.range(..=top), set.range(wrap..)),
            Some(l) if l.phase <= at => (set.range(..l), set.range(wrap..)),
            Some(l) => (set.range(wrap..l), set.range(..LEAST)),
        };
        first.rev().chain(then.rev())
    }

    /// Its job after `last` (`None`: its first) in victim order at `now`.
    #[cfg(test)]
    fn next_after(
        &self,
        set: &BTreeSet<PhaseKey>,
        last: Option<PhaseKey>,
        now: SimTime,
    ) -> Option<PhaseKey> {
        self.walk(set, last, now).next().copied()
    }

    /// Reads its next run of jobs after `last` into `ahead` (empty: none left).
    fn read_ahead(&mut self, set: &BTreeSet<PhaseKey>, last: Option<PhaseKey>, now: SimTime) {
        let mut ahead = std::mem::take(&mut self.ahead);
        ahead.clear();
        ahead.extend(self.walk(set, last, now).take(self.run).copied());
        ahead.reverse();
        self.ahead = ahead;
        self.run = (self.run * 2).min(512);
    }

    /// Lost work at `now` of its job `p`, GPU-milli·ms (a running job started at or before
    /// `now`, which every pass's instant is).
    fn lost(&self, p: &PhaseKey, now: SimTime) -> u128 {
        let ran = i128::from(now.0) - p.phase;
        let d = match self.key.modulus {
            Some(m) => ran.rem_euclid(i128::from(m)),
            None => ran,
        };
        d as u128 * u128::from(self.key.gpu_milli)
    }

    /// The sort key of its job `p` ([`SortKey`]).
    fn sort_key(&self, p: &PhaseKey, now: SimTime) -> SortKey {
        (
            self.key.tier,
            !self.borrowing,
            self.rank,
            false,
            self.key.priority,
            self.lost(p, now),
            Reverse(p.start),
            Reverse(p.seq),
            p.id.0,
        )
    }
}

/// A merge of the streams in victim order (module docs).
#[derive(Clone, Debug)]
pub(crate) struct QuotaCursor {
    streams: Vec<Stream>,
    /// Each live stream's next job's key and the stream, least on top.
    heads: BinaryHeap<Reverse<(SortKey, u32)>>,
    now: SimTime,
}

impl QuotaCursor {
    /// The streams of `queues` (the preemptor's own excluded) that hold candidates for `job`
    /// in `flavor`, with the rule of each, as [`super::preempt::candidates`] assigns it.
    /// Call only where [`applies`].
    pub(crate) fn new(
        c: &Core,
        cfg: &PreemptionConfig,
        job: &PendingJob,
        flavor: Option<u16>,
        queues: &[QueueId],
    ) -> QuotaCursor {
        let t = c.quota.as_ref().expect("applies: quota");
        let rc = c.run_counts.as_ref().expect("applies: run counts");
        let f = flavor.expect("applies: a flavor");
        let req = request(job);
        let shares = share_ranks(c);
        let now = c.now;
        let mut streams = Vec::new();
        for &q in queues {
            if q == job.queue || !t.same_tree(q, job.queue) {
                continue;
            }
            let share = t.drs(q);
            let rank = shares.partition_point(|x| *x > share) as u32;
            let reclaim = t.may_reclaim_from(job.queue, q, f, &req);
            for (&key, set) in rc.lost_order(q).expect("applies: kept") {
                if key.tier > job.tier as u8 || set.is_empty() {
                    continue;
                }
                let borrowing = key.flavor.is_some_and(|vf| t.is_borrowing(q, vf));
                let rule = if borrowing && reclaim && cfg.reclaim_allows(key.priority, job.priority)
                {
                    PreemptReason::Reclaim
                } else if borrowing && cfg.fair_share_allows(key.priority, job.priority) {
                    PreemptReason::FairShare
                } else {
                    continue;
                };
                streams.push(Stream {
                    queue: q,
                    key,
                    rule,
                    borrowing,
                    #[cfg(debug_assertions)]
                    share,
                    rank,
                    ahead: Vec::new(),
                    run: 8,
                });
            }
        }
        let mut heads = BinaryHeap::with_capacity(streams.len());
        for (i, s) in streams.iter_mut().enumerate() {
            let set = &rc.lost_order(s.queue).expect("kept")[&s.key];
            s.read_ahead(set, None, now);
            if let Some(p) = s.ahead.last() {
                heads.push(Reverse((s.sort_key(p, now), i as u32)));
            }
        }
        QuotaCursor {
            streams,
            heads,
            now,
        }
    }

    /// True when no stream holds a candidate.
    pub(crate) fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// Every job of the cursor's streams (a superset of its candidates: the per-job filters
    /// are not applied), in no particular order.
    pub(crate) fn member_ids<'c>(&'c self, c: &'c Core) -> impl Iterator<Item = JobId> + 'c {
        let rc = c.run_counts.as_ref().expect("applies: run counts");
        self.streams.iter().flat_map(move |s| {
            rc.lost_order(s.queue).expect("kept")[&s.key]
                .iter()
                .map(|p| p.id.0)
        })
    }

    /// What the liveness check of the next job's stream reads: rule, queue, flavor and least
    /// request (`None`: no job left).
    pub(crate) fn peek(&self) -> Option<(PreemptReason, QueueId, Option<u16>, Request)> {
        let Reverse((_, i)) = self.heads.peek()?;
        let s = &self.streams[*i as usize];
        Some((s.rule, s.queue, s.key.flavor, [s.key.req_gpu, 0, 0]))
    }

    /// Drops the stream on top: none of its jobs can be taken.
    pub(crate) fn discard(&mut self) {
        self.heads.pop();
    }

    /// The next job in victim order, its stream moved on; `None` when it does not pass the
    /// per-job filters of [`super::preempt::candidates`] (the preemptor itself, rules P2–P4)
    /// or nothing is left.
    pub(crate) fn advance(
        &mut self,
        c: &Core,
        cfg: &PreemptionConfig,
        job: &PendingJob,
    ) -> Option<Candidate> {
        let mut top = self.heads.peek_mut()?;
        let i = top.0 .1;
        let now = self.now;
        let rc = c.run_counts.as_ref().expect("applies: run counts");
        let s = &mut self.streams[i as usize];
        let p = s.ahead.pop().expect("a stream with a head has a next job");
        if s.ahead.is_empty() {
            s.read_ahead(&rc.lost_order(s.queue).expect("kept")[&s.key], Some(p), now);
        }
        match s.ahead.last() {
            Some(n) => *top = Reverse((s.sort_key(n, now), i)),
            None => {
                std::collections::binary_heap::PeekMut::pop(top);
            }
        }
        let s = &self.streams[i as usize];
        let my_preemptors: &[u64] = c.preempted_by.get(&job.seq).map_or(&[], Vec::as_slice);
        let id = p.id.0;
        if id == job.id
            || (c.preempted_now.0 == now && c.preempted_now.1.contains(&id))
            || c.victim_counts.get(&p.seq).copied().unwrap_or(0) >= cfg.victim_cap
            || my_preemptors.contains(&p.seq)
        {
            return None;
        }
        debug_assert_eq!(
            Some(s.lost(&p, now)),
            rc.view(id).map(|v| v.lost_gpu_milli_ms(now)),
            "a stream's lost work is its view's"
        );
        Some(Candidate {
            id,
            rule: s.rule,
            #[cfg(debug_assertions)]
            key: crate::preemption::VictimKey {
                tier: s.key.tier,
                borrowing: s.borrowing,
                share: s.share,
                same_queue: false,
                priority: s.key.priority,
                lost_gpu_milli_ms: s.lost(&p, now),
                start_ms: p.start,
                seq: p.seq,
            },
        })
    }

    /// Every candidate with its rule in victim order, without liveness checks (debug
    /// builds compare it with the listed search's order).
    #[cfg(debug_assertions)]
    pub(crate) fn drain(
        mut self,
        c: &Core,
        cfg: &PreemptionConfig,
        job: &PendingJob,
    ) -> Vec<(JobId, PreemptReason)> {
        let mut out = Vec::new();
        while !self.heads.is_empty() {
            if let Some(cand) = self.advance(c, cfg, job) {
                out.push((cand.id, cand.rule));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::run_counts::VictimView;
    use proptest::prelude::*;

    fn stream(gpu_milli: u64, modulus: Option<u64>) -> Stream {
        Stream {
            queue: QueueId(0),
            key: StreamKey {
                flavor: Some(0),
                tier: 0,
                priority: 0,
                gpu_milli,
                req_gpu: gpu_milli,
                modulus,
            },
            rule: PreemptReason::Reclaim,
            borrowing: true,
            #[cfg(debug_assertions)]
            share: Share::ZERO,
            rank: 0,
            ahead: Vec::new(),
            run: 8,
        }
    }

    proptest! {
        /// Walking a stream from its first job gives its jobs by ascending lost work at
        /// `now`, then latest start, then largest sequence, then smallest id: the victim
        /// order within it, with and without a checkpoint cycle (of any `u64` length),
        /// wherever `now` falls in the cycle, and with sequences shared between jobs.
        #[test]
        fn a_stream_walks_in_victim_order(
            jobs in proptest::collection::vec((0u64..5_000, 0u64..3_000, 0u64..4), 0..40),
            modulus in prop_oneof![
                Just(None),
                (1u64..2_000).prop_map(Some),
                Just(Some(u64::MAX)),
                Just(Some(1u64 << 63)),
            ],
            gpu in prop_oneof![Just(0u64), 1u64..16_000],
            extra in 0u64..10_000,
        ) {
            let s = stream(gpu, modulus.filter(|_| gpu > 0));
            let now = SimTime(5_000 + extra);
            let views: Vec<VictimView> = jobs
                .iter()
                .enumerate()
                .map(|(i, &(start, done, seq))| VictimView {
                    id: JobId(i as u32),
                    queue: QueueId(0),
                    tier: Tier::BestEffort,
                    flavor: Some(0),
                    priority: 0,
                    seq,
                    submit: SimTime(0),
                    start: SimTime(start),
                    done: SimDuration(done),
                    checkpoint_interval: modulus.map(SimDuration),
                    gpu_milli: gpu,
                    req: [gpu, 0, 0],
                })
                .collect();
            let set: BTreeSet<PhaseKey> = views
                .iter()
                .map(|v| {
                    let (k, p) = v.lost_order_key();
                    prop_assert_eq!(k, s.key);
                    Ok(p)
                })
                .collect::<Result<_, _>>()?;
            let mut walked = Vec::new();
            let mut last = None;
            while let Some(p) = s.next_after(&set, last, now) {
                prop_assert_eq!(s.lost(&p, now), views[p.id.0.index()].lost_gpu_milli_ms(now));
                walked.push(p.id.0);
                last = Some(p);
            }
            let mut sorted: Vec<&VictimView> = views.iter().collect();
            sorted.sort_by_key(|v| {
                (v.lost_gpu_milli_ms(now), Reverse(v.start.0), Reverse(v.seq), v.id)
            });
            let want: Vec<JobId> = sorted.iter().map(|v| v.id).collect();
            prop_assert_eq!(walked, want);
        }
    }
}
