//! What the running jobs offer as victims, counted as jobs start and stop (issue #18): the
//! pass's [`RunSummary`] read in `O(queues)` instead of a walk of the whole running set in
//! every pass that tries a preemption.
//!
//! Kept with preemption on and running jobs tracked. A running job that is not being
//! evicted counts once, by (queue, priority) and by tier; a job being evicted, or no longer
//! running, does not count. [`Core::running_sync`] brings a job's count up to its running
//! record wherever the record is made, changed or taken out. The LAS parts of the summary
//! move with time, so a summary with LAS preemption comes from the LAS victim index or a
//! walk, not from here.

use super::preempt::RunSummary;
use super::*;

/// What one running job counts for: its queue, priority and tier.
type Counted = (QueueId, i32, Tier);

/// The counts (module docs).
#[derive(Debug, Default)]
pub(crate) struct RunCounts {
    /// Each job's counted entry, by [`JobId`] index (`None`: not counted).
    counted: Vec<Option<Counted>>,
    /// Per queue ([`QueueId`] index): running jobs not being evicted, by priority.
    by_queue: Vec<BTreeMap<i32, u32>>,
    /// Running jobs not being evicted, per tier ([`Tier`] as index).
    tiers: [u64; 3],
}

impl RunCounts {
    /// Counts `job` as `now` (`None`: not at all), in place of what it counted for before.
    /// `O(log priorities)`.
    pub(crate) fn set(&mut self, job: JobId, now: Option<Counted>) {
        let i = job.index();
        if i >= self.counted.len() {
            self.counted.resize(i + 1, None);
        }
        let old = std::mem::replace(&mut self.counted[i], now);
        if old == now {
            return;
        }
        if let Some((q, p, t)) = old {
            let m = &mut self.by_queue[q.index()];
            let n = m.get_mut(&p).expect("a counted job's priority is counted");
            *n -= 1;
            if *n == 0 {
                m.remove(&p);
            }
            self.tiers[t as usize] -= 1;
        }
        if let Some((q, p, t)) = now {
            if q.index() >= self.by_queue.len() {
                self.by_queue.resize_with(q.index() + 1, BTreeMap::new);
            }
            *self.by_queue[q.index()].entry(p).or_insert(0) += 1;
            self.tiers[t as usize] += 1;
        }
    }

    /// The summary a walk over the running jobs gives without LAS preemption
    /// ([`super::preempt::summary`]): lowest priority per queue and overall, jobs per tier.
    /// `O(queues)`.
    pub(crate) fn summary(&self, started_at: u64) -> RunSummary {
        let mut s = RunSummary {
            started_at,
            tiers: self.tiers,
            ..RunSummary::default()
        };
        // As the walk, `min_prio` reaches up to the highest queue with a counted job.
        let len = self
            .by_queue
            .iter()
            .rposition(|m| !m.is_empty())
            .map_or(0, |q| q + 1);
        s.min_prio = self.by_queue[..len]
            .iter()
            .map(|m| m.keys().next().copied())
            .collect();
        s.min_prio_all = s.min_prio.iter().flatten().min().copied();
        s
    }
}

impl Core {
    /// Brings `job`'s entries in the indexes kept by running record (the ends index, the run
    /// counts) up to its record: to be called wherever a record is made, changes its end or
    /// eviction, or is taken out.
    pub(crate) fn running_sync(&mut self, job: JobId) {
        if self.ends.is_none() && self.run_counts.is_none() {
            return;
        }
        let r = self
            .running
            .as_ref()
            .and_then(|reg| reg.get(job.index()))
            .and_then(|r| r.as_deref());
        let end = r.map(super::ends::end_of);
        let counted = r
            .filter(|r| r.evicting.is_none())
            .map(|r| (r.job.queue, r.job.priority, r.job.tier));
        if let Some(ix) = self.ends.as_mut() {
            ix.set(job, end);
        }
        if let Some(ix) = self.run_counts.as_mut() {
            ix.set(job, counted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(i: u32) -> JobId {
        JobId(i)
    }

    /// Counting, recounting and uncounting leave the counts of what is counted now.
    #[test]
    fn counts_follow_the_jobs() {
        let mut rc = RunCounts::default();
        rc.set(j(0), Some((QueueId(1), 5, Tier::Production)));
        rc.set(j(1), Some((QueueId(1), 2, Tier::Production)));
        rc.set(j(2), Some((QueueId(0), 7, Tier::BestEffort)));
        let s = rc.summary(9);
        assert_eq!(s.min_prio, vec![Some(7), Some(2)]);
        assert_eq!(s.min_prio_all, Some(2));
        assert_eq!(s.started_at, 9);
        assert_eq!(s.tiers[Tier::Production as usize], 2);
        assert_eq!(s.tiers[Tier::BestEffort as usize], 1);
        // Job 1 starts its eviction, job 2 ends, job 0 is set again as it was.
        rc.set(j(1), None);
        rc.set(j(2), None);
        rc.set(j(0), Some((QueueId(1), 5, Tier::Production)));
        let s = rc.summary(0);
        assert_eq!(s.min_prio, vec![None, Some(5)]);
        assert_eq!(s.min_prio_all, Some(5));
        assert_eq!(s.tiers.iter().sum::<u64>(), 1);
        rc.set(j(0), None);
        let s = rc.summary(0);
        assert!(s.min_prio.is_empty() && s.min_prio_all.is_none());
        assert_eq!(s.tiers, [0; 3]);
    }
}
