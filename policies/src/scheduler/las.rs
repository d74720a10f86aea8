//! LAS (Tiresias 2D-LAS) in fleetsim's own preemption model: demotions as events, the
//! LAS victim order and the LAS rank of the preemption rules.
//!
//! * **Demotion is an event**: [`Scheduler::next_wake`] returns the first instant a running
//!   job's attained service reaches the threshold above its queue (exact, see
//!   [`Las::next_crossing`]); at each pass, running jobs that crossed are recorded as having
//!   entered their new queue then ([`PendingJob::las_entered`]).
//! * **Rank**: a job outranks a running one under LAS when it is in a higher-priority (lower)
//!   queue, or in the same queue while the running one entered it by a demotion at this very
//!   instant and the job entered it earlier (a demoted job goes to the tail of its new queue,
//!   behind the jobs already waiting there, as in Tiresias). Rule P2 (never preempt your
//!   preemptor) yields to this rank: a preempted job may take its former preemptor's place
//!   once that one is demoted below it (Tiresias' time slicing). No loop: a job preempts
//!   under LAS only a job strictly behind it in the order (queue, entry time), and a running
//!   job's queue only moves down, so each LAS preemption moves the victim strictly back.
//! * **Victim order**: among LAS victims, the lowest queue first, then the newest entrant
//!   of that queue (neither priority nor lost work, which Tiresias does not consider).
//! * **Parking**: a saturated LAS fleet runs a pass at every arrival, completion and
//!   crossing, and each pass would try the first job of every class present (then skip the
//!   rest of the class on its verdict), though most of those tries must fail. At the start
//!   of a full pass, [`Scheduler::park_hopeless`] sets the verdict
//!   [`PendingReason::NoCapacity`] of each class whose try certainly fails all pass, so that
//!   its jobs already filed under that reason are not tried: the class asks for more
//!   GPU-milli than its cells have free, and more than free plus every running job a LAS
//!   search of its first job (the lowest LAS queue of the class) can reach
//!   ([`LasVictims::reach_gpu_milli`]). Within a pass, a start only moves free GPUs to a
//!   running job (in reach or not), so the bound still holds; the preemption that could
//!   free more clears every verdict, and the class is tried again from there. It applies
//!   with one queue, the LAS rule alone (no tier, within-queue or priority rule, no quota,
//!   no per-queue rules), no backfill, budget or nomination, a pure placement, and to a
//!   class that shares its requirements with no other (their placement and search memos
//!   would be shared). The try of a parked class's first job would have taken the pass's
//!   running-set summary: it is taken when the pass goes past that job
//!   ([`PassState::park_first`]), so every later search reads the same summary.

use super::*;
use crate::preemption::VictimKey;
use crate::queue_order::Las;

/// A running job's LAS queue at `now` and when it entered it.
pub(crate) fn las_place(las: &Las, r: &Running, now: SimTime) -> (usize, SimTime) {
    let level = las.level(r.attained_gpu_ms(now));
    (level, las.entered(&r.job, level))
}

/// Does `job` (pending) outrank running `v` under LAS at `now` (module docs)?
pub(crate) fn las_outranks(las: &Las, job: &PendingJob, v: &Running, now: SimTime) -> bool {
    let mine = las.level(job.attained_gpu_ms);
    let (theirs, entered) = las_place(las, v, now);
    mine < theirs
        || (mine == theirs
            && entered == now
            && v.job.las_entered.is_some_and(|(l, _)| l == theirs)
            && las.entered(job, mine) < now)
}

/// `key` reordered for a LAS victim: lowest queue first (the priority component holds
/// −queue), newest entrant first (the start component holds the entry time), lost work not
/// counted.
pub(crate) fn las_victim_key(las: &Las, v: &Running, now: SimTime, key: VictimKey) -> VictimKey {
    let (level, entered) = las_place(las, v, now);
    VictimKey {
        priority: -(level.min(i32::MAX as usize) as i32),
        lost_gpu_milli_ms: 0,
        start_ms: entered.0,
        ..key
    }
}

impl Core {
    /// Marks running job `id` for a LAS re-check at the next pass: it just started, or its
    /// run start or service changed (hot swap, recovery), so its queue and next crossing are
    /// computed afresh then. No-op unless [`Core::las_wakes`] is kept.
    pub(crate) fn las_recheck(&mut self, id: JobId) {
        if let Some(w) = self.las_wakes.as_mut() {
            w.insert((self.now, id));
        }
    }

    /// Puts running job `id` at its place in [`Core::las_victims`] as of `now` (takes it out
    /// when it is not running or is being evicted). No-op without the index.
    pub(crate) fn las_reindex(&mut self, id: JobId, now: SimTime) {
        let (Some(ix), Some(las), Some(reg)) = (
            self.las_victims.as_mut(),
            self.las.as_ref(),
            self.running.as_ref(),
        ) else {
            return;
        };
        match reg.get(id.index()).and_then(|r| r.as_deref()) {
            Some(r) => ix.update(las, r, now),
            None => ix.remove(id),
        }
    }

    /// Drops running job `id`'s pending crossing from [`Core::las_wakes`] before its record
    /// goes (an optimization only: a stale entry is skipped anyway).
    pub(crate) fn las_forget(&mut self, id: JobId) {
        let (Some(las), Some(w), Some(reg)) = (
            self.las.as_ref(),
            self.las_wakes.as_mut(),
            self.running.as_ref(),
        ) else {
            return;
        };
        let Some(r) = reg.get(id.index()).and_then(|r| r.as_deref()) else {
            return;
        };
        if let Some(t) = crossing(las, r, self.now) {
            w.remove(&(t, id));
        }
    }

    /// Records, for every running job whose attained service crossed a threshold since it
    /// was last seen, that it entered its new queue at `now`.
    ///
    /// With [`Core::las_wakes`] only the jobs with a wake-up at or before `now` are looked
    /// at (each running job not being evicted has one at its next crossing, or a re-check):
    /// the same jobs are recorded as by the scan of every running job, which is the
    /// fallback without it (re-decide mode).
    pub(crate) fn record_demotions(&mut self, now: SimTime) {
        let Some(las) = self.las.as_ref() else { return };
        let Some(reg) = self.running.as_mut() else {
            return;
        };
        let Some(wakes) = self.las_wakes.as_mut() else {
            for r in reg.iter_mut().flatten() {
                if r.evicting.is_none() && demote(las, r, now) {
                    self.las_demoted_at = Some(now);
                }
            }
            return;
        };
        while let Some(&(t, id)) = wakes.first() {
            if t > now {
                break;
            }
            wakes.pop_first();
            // An entry of a job that ended or is being evicted is dropped (an evicted job
            // that recovers gets a re-check).
            let Some(r) = reg.get_mut(id.index()).and_then(|r| r.as_deref_mut()) else {
                continue;
            };
            if r.evicting.is_some() {
                continue;
            }
            if demote(las, r, now) {
                self.las_demoted_at = Some(now);
            }
            if let Some(ix) = self.las_victims.as_mut() {
                ix.update(las, r, now);
            }
            if let Some(next) = crossing(las, r, now) {
                wakes.insert((next, id));
            }
        }
    }

    /// The next instant a running job crosses a LAS threshold, after `now`.
    ///
    /// With [`Core::las_wakes`]: its entries at or before `now` (re-checks) count with their
    /// job's next crossing; after `now`, the first entry that still is its job's next
    /// crossing ends the walk (entries of ended or moved jobs are skipped).
    pub(crate) fn next_las_crossing(&self, now: SimTime) -> Option<SimTime> {
        let las = self.las.as_ref()?;
        let reg = self.running.as_ref()?;
        let live = |id: JobId| {
            reg.get(id.index())
                .and_then(|r| r.as_deref())
                .filter(|r| r.evicting.is_none())
        };
        let Some(wakes) = self.las_wakes.as_ref() else {
            return reg
                .iter()
                .flatten()
                .filter(|r| r.evicting.is_none())
                .filter_map(|r| crossing(las, r, now))
                .filter(|&t| t > now)
                .min();
        };
        let mut best: Option<SimTime> = None;
        for &(t, id) in wakes {
            if t > now && best.is_some_and(|b| b <= t) {
                break;
            }
            let Some(next) = live(id).and_then(|r| crossing(las, r, now)) else {
                continue;
            };
            if t > now {
                if next == t {
                    best = Some(best.map_or(t, |b| b.min(t)));
                    break;
                }
            } else if next > now {
                best = Some(best.map_or(next, |b| b.min(next)));
            }
        }
        best
    }
}

impl Scheduler {
    /// Parks, at the start of a full pass, the classes whose try certainly fails all pass
    /// (module docs, "Parking"): their verdict [`PendingReason::NoCapacity`] is set before
    /// any try, so that the jobs already filed under it are skipped, the first one included.
    pub(crate) fn park_hopeless(&mut self, fleet: &FleetState, pass: &mut PassState) {
        pass.park_first = None;
        let c = &self.core;
        if c.las_park_off || self.pending.len() != 1 {
            return;
        }
        let (Some(cfg), Some(las), Some(ix)) = (
            c.preemption.as_ref(),
            c.las.as_ref(),
            c.las_victims.as_ref(),
        ) else {
            return;
        };
        if cfg.las.as_ref() != Some(las)
            || !las_rule_only(cfg)
            || c.quota.is_some()
            || c.backfill.is_some()
            || c.budget.is_some()
            || !c.nominated.is_empty()
            || !c.placement.select_is_pure()
            || c.ctx.records()
            || c.queues
                .iter()
                .chain([&c.default_queue])
                .any(|q| q.preemption.is_some())
        {
            return;
        }
        let jobs = &self.pending[0].jobs;
        let Some(buckets) = &jobs.classes else {
            return;
        };
        // Each class present with its first job in queue order.
        let mut firsts: Vec<(u32, super::pending::Position)> = Vec::new();
        for (&(cid, _), b) in buckets {
            let Some((&p, _)) = b.set.first_key_value() else {
                continue;
            };
            match firsts.last_mut() {
                Some((last, f)) if *last == cid => *f = (*f).min(p),
                _ => firsts.push((cid, p)),
            }
        }
        let now = c.now;
        let mut parked = 0;
        // Reach per LAS queue, taken once per pass.
        let mut reach: Vec<Option<u64>> = Vec::new();
        // Free GPU-milli by (cell set, models): nothing here changes the fleet.
        let mut frees = Vec::new();
        for (i, &(cid, first)) in firsts.iter().enumerate() {
            let k = c.classes[cid as usize];
            if k.0.num_gpu == 0 {
                continue;
            }
            // A class that shares its requirements with another would share its memos
            // (placement and search), which its try would have made for the other.
            let same = |o: &ClassKey| (o.0, o.1, o.2, o.3, o.7) == (k.0, k.1, k.2, k.3, k.7);
            if firsts
                .iter()
                .enumerate()
                .any(|(j, &(d, _))| j != i && same(&c.classes[d as usize]))
            {
                continue;
            }
            let (need, free) = c.class_need_and_free(fleet, cid, &mut frees);
            if need <= free {
                continue;
            }
            if k.6 != Tier::BestEffort {
                // Its first job has the lowest LAS queue of the class (the order's first
                // component), so the most victims in reach.
                let job = &jobs.get(&first).expect("a bucket's member is pending").job;
                let level = las.level(job.attained_gpu_ms);
                debug_assert_eq!(
                    first.0 .0, level as i64,
                    "the LAS order leads with the queue"
                );
                if level >= reach.len() {
                    reach.resize(level + 1, None);
                }
                let r = *reach[level].get_or_insert_with(|| ix.reach_gpu_milli(level, now));
                if free.saturating_add(r) >= need {
                    continue;
                }
                pass.park_first = Some(pass.park_first.map_or(first, |p| p.min(first)));
            }
            pass.verdicts
                .get_or_insert(QueueId(0), cid, (PendingReason::NoCapacity, None));
            parked += 1;
        }
        self.core.las_parked += parked;
    }
}

impl Core {
    /// Builds the pass's running-set summary where the try of a parked class's first job
    /// would have built it ([`PassState::park_first`]), if nothing built it before.
    pub(crate) fn summary_for_parked(&self, pass: &mut PassState) {
        if pass.run_summary.is_none() {
            let cfg = self.preemption.as_ref().expect("parking needs preemption");
            pass.run_summary = Some(super::preempt::summary(self, cfg));
        }
    }
}

/// True when, without quota, no rule of `cfg` but the LAS rule can give a victim: no tier
/// rule, no within-queue or priority preemption (reclaim, fair sharing and borrowing need
/// quota).
fn las_rule_only(cfg: &PreemptionConfig) -> bool {
    !cfg.tiers
        && cfg.within_queue == crate::preemption::WithinQueue::Never
        && cfg.capacity == crate::preemption::CapacityPreemption::Never
}

/// Records that running `r` entered its LAS queue at `now` if its attained service put it
/// below the queue it was last seen in; true when it did.
fn demote(las: &Las, r: &mut Running, now: SimTime) -> bool {
    let level = las.level(r.attained_gpu_ms(now));
    let seen = r.job.las_entered.map_or(0, |e| e.0);
    if level > seen {
        r.job.las_entered = Some((level, now));
        return true;
    }
    false
}

/// Running `r`'s next LAS threshold crossing as seen at `now` ([`Las::next_crossing`]).
fn crossing(las: &Las, r: &Running, now: SimTime) -> Option<SimTime> {
    las.next_crossing(
        r.job.attained_gpu_ms,
        r.job.total_gpu_milli(),
        r.start,
        r.attained_gpu_ms(now),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threshold 100 GPU-s = 100,000 GPU·ms on 3 GPUs from 0 attained: the crossing is
    /// ⌈100,000 · 1000 / 3000⌉ = ⌈33,333.3⌉ = 33,334 ms (attained there ⌊33,334 · 3⌋ =
    /// 100,002 ≥ 100,000; at 33,333 ms only 99,999). Started at 5 s with 40,000 GPU·ms
    /// already: 5,000 + ⌈60,000 · 1000 / 3000⌉ = 25,000 ms. In the last queue: none.
    #[test]
    fn the_next_crossing_is_exact() {
        let las = Las {
            thresholds_gpu_ms: vec![100_000, 200_000],
        };
        assert_eq!(
            las.next_crossing(0, 3000, SimTime::ZERO, 0),
            Some(SimTime(33_334))
        );
        assert_eq!(
            las.next_crossing(40_000, 3000, SimTime(5_000), 40_000),
            Some(SimTime(25_000))
        );
        // Already past the first threshold now: the second one counts.
        assert_eq!(
            las.next_crossing(0, 1000, SimTime::ZERO, 150_000),
            Some(SimTime(200_000))
        );
        assert_eq!(las.next_crossing(0, 1000, SimTime::ZERO, 250_000), None);
        // A threshold so high that GPU·ms × 1000 overflows u64 (the u128 path): on one GPU
        // the crossing is the threshold itself, ⌈(2^63 − 1) · 1000 / 1000⌉ = 2^63 − 1 ms.
        let huge = Las {
            thresholds_gpu_ms: vec![u64::MAX / 2],
        };
        assert_eq!(
            huge.next_crossing(0, 1000, SimTime::ZERO, 0),
            Some(SimTime(9_223_372_036_854_775_807))
        );
        assert_eq!(las.next_crossing(0, 0, SimTime::ZERO, 0), None);
    }
}

/// The LAS wake-ups ([`Core::las_wakes`]) and the LAS victim index ([`Core::las_victims`])
/// against the scans of every running job they replace: on random small workloads (LAS
/// order and LAS preemption, thresholds 3 / 9 GPU-s, grace 0 or 3 s, one to three queues, two
/// priorities, a production tier, the tier, priority and within-queue rules on or off, with
/// hot swaps and lost jobs), driven by the scheduler's own wake-ups, all three make the same
/// decisions at the same instants and ask for the same next wake-up after every pass.
#[cfg(test)]
mod wakes_vs_scan {
    use crate::*;

    /// SplitMix64, so the cases are the same on every machine.
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

    struct Case {
        nodes: Vec<NodeSpec>,
        jobs: Vec<(PendingJob, u64)>,
        /// Seed of the hot swaps and losses.
        events: u64,
        /// Queues (the second is of the production tier when `tiered`).
        queues: u32,
        tiered: bool,
        preemption: PreemptionConfig,
    }

    fn case(g: &mut Gen, i: u64) -> Case {
        let nodes = (0..1 + g.below(3) as u32)
            .map(|i| NodeSpec {
                name: format!("n{i}"),
                cell: CellId(0),
                block: 0,
                domain: i,
                model: Some(ModelId(0)),
                gpus: 8,
                cpu_milli: 64_000,
                mem_mib: 512 * 1024,
            })
            .collect();
        // Every fourth case as the scans' first version had it: one queue, one priority, no
        // rule but LAS.
        let plain = i.is_multiple_of(4);
        let queues = if plain { 1 } else { 1 + g.below(3) as u32 };
        let tiered = !plain && g.below(2) == 0;
        let priorities = if plain { 1 } else { 1 + g.below(2) };
        let mut preemption = PreemptionConfig {
            las: Some(queue_order::Las {
                thresholds_gpu_ms: vec![3_000, 9_000],
            }),
            grace: SimDuration(if i.is_multiple_of(2) { 0 } else { 3000 }),
            ..PreemptionConfig::default()
        };
        if !plain {
            preemption.tiers = g.below(2) == 0;
            if g.below(3) == 0 {
                preemption.capacity = crate::preemption::CapacityPreemption::LowerPriority;
            }
            preemption.within_queue = match g.below(3) {
                0 => crate::preemption::WithinQueue::LowerPriority,
                _ => crate::preemption::WithinQueue::Never,
            };
        }
        let mut t = 0;
        let jobs = (0..20 + g.below(60))
            .map(|i| {
                t += g.below(2500);
                let queue = g.below(u64::from(queues)) as u32;
                let priority = g.below(priorities) as i32;
                let (shape, tasks) = match g.below(8) {
                    0..=3 => (TaskShape::whole_gpus(1), 1),
                    4 => (TaskShape::whole_gpus(2), 1),
                    5 => (TaskShape::whole_gpus(4), 1),
                    6 => (TaskShape::whole_gpus(8), 2),
                    _ => (
                        TaskShape {
                            gpu_milli: 300,
                            ..TaskShape::whole_gpus(1)
                        },
                        1,
                    ),
                };
                let job = PendingJob {
                    id: JobId(i as u32),
                    queue: QueueId(queue),
                    priority,
                    tier: if tiered && queue == 1 {
                        Tier::Production
                    } else {
                        Tier::Batch
                    },
                    submit: SimTime(t),
                    seq: i,
                    shape,
                    tasks,
                    ..PendingJob::default()
                };
                (job, 500 + g.below(30_000))
            })
            .collect();
        Case {
            nodes,
            jobs,
            events: g.below(u64::MAX),
            queues,
            tiered,
            preemption,
        }
    }

    /// Runs `c` event by event with the wake-ups (`wakes`) and the victim index (`index`) or
    /// their scans; the transcript of decisions and wake-ups.
    fn simulate(c: &Case, wakes: bool, index: bool) -> String {
        simulate_parked(c, wakes, index, true).0
    }

    /// [`simulate`] with parking on or off (`park`); also how many classes were parked.
    fn simulate_parked(c: &Case, wakes: bool, index: bool, park: bool) -> (String, u64) {
        let mut fleet =
            FleetState::new(vec!["c".into()], vec!["H100".into()], c.nodes.clone()).unwrap();
        let config = SchedulerConfig {
            queue_order: QueueOrderSpec::Las {
                thresholds_gpu_s: Some(vec![3.0, 9.0]),
            },
            ..SchedulerConfig::default()
        };
        let queues = (0..c.queues)
            .map(|q| QueueConfig {
                strategy: QueueingStrategy::BestEffortFifo,
                tier: if c.tiered && q == 1 {
                    Tier::Production
                } else {
                    Tier::Batch
                },
                ..QueueConfig::default()
            })
            .collect();
        let mut s = Scheduler::new(config, queues).with(Extensions {
            preemption: Some(c.preemption.clone()),
            ..Extensions::default()
        });
        assert!(s.core.las_wakes.is_some() && s.core.las_victims.is_some());
        if !wakes {
            s.core.las_wakes = None;
        }
        if !index {
            s.core.las_victims = None;
        }
        s.core.las_park_off = !park;
        let mut g = Gen(c.events);
        let mut out = String::new();
        // (end, job, bindings).
        let mut running: Vec<(u64, JobId, Vec<TaskAlloc>)> = Vec::new();
        let mut evicting: Vec<(u64, JobId, Vec<TaskAlloc>)> = Vec::new();
        let mut next = 0;
        let mut t = 0;
        for _ in 0..20_000 {
            evicting.sort_by_key(|e| (e.0, e.1));
            while evicting.first().is_some_and(|e| e.0 <= t) {
                let (_, id, allocs) = evicting.remove(0);
                for a in &allocs {
                    fleet.release(a).unwrap();
                }
                s.on_released(id, SimTime(t));
            }
            running.sort_by_key(|r| (r.0, r.1));
            while running.first().is_some_and(|r| r.0 <= t) {
                let (_, id, allocs) = running.remove(0);
                let job = &c.jobs[id.index()].0;
                for a in &allocs {
                    fleet.release(a).unwrap();
                }
                s.on_job_end(id, job.queue, job.total_gpu_milli(), SimTime(t));
            }
            // Now and then a running job moves to a hot spare (same bindings, progress kept)
            // or is lost (released 2 s later).
            if !running.is_empty() {
                match g.below(16) {
                    0 => {
                        let i = g.below(running.len() as u64) as usize;
                        let r = &running[i];
                        s.on_hot_swap(r.1, &r.2.clone(), SimTime(t), SimDuration::ZERO);
                    }
                    1 => {
                        let i = g.below(running.len() as u64) as usize;
                        let (_, id, allocs) = running.remove(i);
                        s.mark_lost(id, SimTime(t), SimTime(t + 2000));
                        evicting.push((t + 2000, id, allocs));
                    }
                    _ => {}
                }
            }
            while next < c.jobs.len() && c.jobs[next].0.submit.0 <= t {
                let _ = s.submit_at(&mut fleet, c.jobs[next].0.clone(), SimTime(t));
                next += 1;
            }
            for d in s.schedule_at(&mut fleet, SimTime(t)) {
                out.push_str(&format!("{t} {d:?}\n"));
                match d {
                    Decision::Start { job, tasks, .. } => {
                        running.push((t + c.jobs[job.index()].1, job, tasks));
                    }
                    Decision::Preempt { job, grace, .. } => {
                        let i = running.iter().position(|r| r.1 == job).unwrap();
                        let (_, id, allocs) = running.remove(i);
                        if grace > SimDuration::ZERO {
                            evicting.push((t + grace.0, id, allocs));
                        }
                    }
                    Decision::Reject { .. } => {}
                }
            }
            let wake = s.next_wake();
            out.push_str(&format!("{t} wake {wake:?}\n"));
            let events = [
                c.jobs.get(next).map(|j| j.0.submit.0),
                running.iter().map(|r| r.0).min(),
                evicting.iter().map(|e| e.0).min(),
                wake.map(|w| w.0),
            ];
            match events.iter().flatten().min() {
                Some(&n) => t = n.max(t + 1),
                None => break,
            }
        }
        assert!(
            s.pending_len() == 0 && running.is_empty(),
            "the case drained"
        );
        (out, s.core.las_parked)
    }

    /// Parking ([`Scheduler::park_hopeless`]) against trying every class at every pass, on
    /// cases where it applies (one queue, one priority, the LAS rule alone, grace 0 or 3 s):
    /// the same decisions at the same instants and the same wake-ups, with or without the
    /// victim index.
    #[test]
    fn parking_makes_the_same_decisions_as_trying_every_class() {
        let mut g = Gen(41);
        let (mut parked, mut preempts) = (0, 0);
        for i in 0..200 {
            // Every fourth case of `case` is plain: one queue, one priority, LAS alone.
            let mut c = case(&mut g, 4 * i);
            if i % 2 == 1 {
                c.preemption.grace = SimDuration(3000);
            }
            let (on, n) = simulate_parked(&c, true, true, true);
            let (off, m) = simulate_parked(&c, true, true, false);
            assert_eq!(m, 0, "case {i}: parking off parks nothing");
            if let Some((l, (x, y))) = on
                .lines()
                .zip(off.lines())
                .enumerate()
                .find(|(_, (x, y))| x != y)
            {
                panic!("case {i}, line {l}: parked `{x}` against tried `{y}`");
            }
            assert_eq!(on, off, "case {i}");
            parked += n;
            preempts += on.matches("Preempt {").count();
        }
        // Parking happens, among many preemptions (exact counts would be brittle).
        assert!(
            parked > 2_000 && preempts > 2_000,
            "{parked} parked, {preempts} preemptions"
        );
    }

    #[test]
    fn wakes_make_the_same_decisions_as_the_scan() {
        let mut g = Gen(18);
        let (mut demotions, mut preempts, mut las) = (0, 0, 0);
        let same = |i: u64, a: &str, b: &str, what: &str| {
            if let Some((n, (x, y))) = a
                .lines()
                .zip(b.lines())
                .enumerate()
                .find(|(_, (x, y))| x != y)
            {
                panic!("case {i}, line {n}: {what}: `{x}` against `{y}`");
            }
            assert_eq!(a, b, "case {i}: {what}");
        };
        for i in 0..160 {
            let c = case(&mut g, i);
            let indexed = simulate(&c, true, true);
            let wakes = simulate(&c, true, false);
            let plain = simulate(&c, false, false);
            same(i, &indexed, &wakes, "victim index against the scan");
            same(i, &wakes, &plain, "wake-ups against the scan");
            preempts += indexed.matches("Preempt {").count();
            las += indexed.matches("reason: Las").count();
            demotions += indexed.matches("wake Some").count();
        }
        // The cases do preempt, under LAS and other rules, and wake up for crossings (exact
        // counts would be brittle).
        assert!(
            las > 8_000 && preempts > las + 1_000,
            "{preempts} preemptions, {las} LAS"
        );
        assert!(demotions > 15_000, "{demotions} wake-ups");
    }
}
