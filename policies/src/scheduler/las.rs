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
    /// Records, for every running job whose attained service crossed a threshold since it
    /// was last seen, that it entered its new queue at `now`.
    pub(crate) fn record_demotions(&mut self, now: SimTime) {
        let Some(las) = self.las.as_ref() else { return };
        let Some(reg) = self.running.as_mut() else {
            return;
        };
        for r in reg.iter_mut().flatten() {
            if r.evicting.is_some() {
                continue;
            }
            let level = las.level(r.attained_gpu_ms(now));
            let seen = r.job.las_entered.map_or(0, |e| e.0);
            if level > seen {
                r.job.las_entered = Some((level, now));
                self.las_demoted_at = Some(now);
            }
        }
    }

    /// The next instant a running job crosses a LAS threshold, after `now`.
    pub(crate) fn next_las_crossing(&self, now: SimTime) -> Option<SimTime> {
        let las = self.las.as_ref()?;
        let reg = self.running.as_ref()?;
        reg.iter()
            .flatten()
            .filter(|r| r.evicting.is_none())
            .filter_map(|r| {
                las.next_crossing(
                    r.job.attained_gpu_ms,
                    r.job.total_gpu_milli(),
                    r.start,
                    r.attained_gpu_ms(now),
                )
            })
            .filter(|&t| t > now)
            .min()
    }
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
