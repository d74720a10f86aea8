//! What the running jobs offer as victims, kept as jobs start and stop: the
//! pass's run summary (`running::RunSummary`) read in `O(queues)` instead of a walk of the whole running set in
//! every pass that tries a preemption, and per queue a contiguous copy of what the victim
//! search reads of each job ([`VictimView`]), which the search streams through instead of
//! visiting every running record (a cache miss each).
//!
//! Kept with preemption on and running jobs tracked. A running job that is not being
//! evicted counts once, by (queue, priority) and by tier, and has its view in its queue's
//! array (in no particular order); a job being evicted, or no longer running, does not.
//! [`Core::running_sync`] brings a job's entry up to its running record wherever the record
//! is made, changed or taken out. The LAS parts of the summary move with time, so a summary
//! with LAS preemption comes from the LAS victim index or a walk, not from here.

use super::*;

/// What the victim search reads of a running job that is not being evicted (the fields of
/// its running record it uses outside LAS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct VictimView {
    pub(crate) id: JobId,
    pub(crate) queue: QueueId,
    pub(crate) tier: Tier,
    /// The flavor its quota is charged in.
    pub(crate) flavor: Option<u16>,
    pub(crate) priority: i32,
    pub(crate) seq: u64,
    pub(crate) submit: SimTime,
    /// When its current run started.
    pub(crate) start: SimTime,
    /// Progress before its current run.
    pub(crate) done: SimDuration,
    pub(crate) checkpoint_interval: Option<SimDuration>,
    /// Its accelerators in all, GPU-milli.
    pub(crate) gpu_milli: u64,
    /// What is charged to quota.
    pub(crate) req: Request,
}

impl VictimView {
    /// The view of running record `r`.
    pub(crate) fn of(r: &Running) -> VictimView {
        VictimView {
            id: r.job.id,
            queue: r.job.queue,
            tier: r.job.tier,
            flavor: r.flavor,
            priority: r.job.priority,
            seq: r.job.seq,
            submit: r.job.submit,
            start: r.start,
            done: r.job.done,
            checkpoint_interval: r.job.checkpoint_interval,
            gpu_milli: r.job.total_gpu_milli(),
            req: r.req,
        }
    }

    /// [`Running::lost_gpu_milli_ms`] from the view.
    pub(crate) fn lost_gpu_milli_ms(&self, now: SimTime) -> u128 {
        super::running::lost_gpu_milli_ms(
            self.done,
            self.start,
            self.checkpoint_interval,
            self.gpu_milli,
            now,
        )
    }
}

/// The counts and views (module docs).
#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct RunCounts {
    /// Each counted job's place, by [`JobId`] index: its queue and its index in the queue's
    /// views (`None`: not counted).
    at: Vec<Option<(QueueId, u32)>>,
    /// Per queue ([`QueueId`] index): the views of its running jobs not being evicted.
    views: Vec<Vec<VictimView>>,
    /// Per queue ([`QueueId`] index): running jobs not being evicted, by priority.
    by_queue: Vec<BTreeMap<i32, u32>>,
    /// Running jobs not being evicted, per tier ([`Tier`] as index).
    tiers: [u64; 3],
    /// Kept with quota ([`RunCounts::with_lost_order`]): per queue ([`QueueId`] index), its
    /// counted jobs by stream, each in lost-work order ([`super::quota_victims`]).
    lost_order: Option<Vec<BTreeMap<StreamKey, BTreeSet<PhaseKey>>>>,
}

/// A stream of [`RunCounts::lost_order`]: the counted jobs of one queue that share every
/// component of the victim order fixed by the job (tier, priority) and how their lost work
/// grows (GPU-milli, checkpoint interval), and the flavor and GPU-milli charged to quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct StreamKey {
    pub(crate) flavor: Option<u16>,
    pub(crate) tier: u8,
    pub(crate) priority: i32,
    pub(crate) gpu_milli: u64,
    /// GPU-milli charged to quota (the request's first component).
    pub(crate) req_gpu: u64,
    /// Lost work restarts every this many ms (`None`: never, or nothing is lost at all).
    pub(crate) modulus: Option<u64>,
}

/// A job's place in its stream: ascending `(phase, start, seq, Reverse(id))`. Its lost work
/// at `now` (at or after its start) is `gpu_milli × ((now − phase) mod modulus)` (without a
/// modulus, `now − phase`), so walking the stream down from `now mod modulus` (then from the
/// top, circularly) gives the least lost work first, then the latest start, the largest
/// sequence and the smallest id: the victim order within the stream. In `i128`, exact for
/// every `u64` time and interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct PhaseKey {
    /// `(start − done) mod modulus`, or `start − done` without one (0 for a stream losing
    /// nothing), ms.
    pub(crate) phase: i128,
    pub(crate) start: u64,
    pub(crate) seq: u64,
    pub(crate) id: Reverse<JobId>,
}

impl VictimView {
    /// Its stream and place in it.
    pub(crate) fn lost_order_key(&self) -> (StreamKey, PhaseKey) {
        let modulus = self
            .checkpoint_interval
            .filter(|c| c.0 > 0)
            .map(|c| c.0)
            .filter(|_| self.gpu_milli > 0);
        let raw = i128::from(self.start.0) - i128::from(self.done.0);
        let phase = match modulus {
            Some(m) => raw.rem_euclid(i128::from(m)),
            None if self.gpu_milli == 0 => 0,
            None => raw,
        };
        (
            StreamKey {
                flavor: self.flavor,
                tier: self.tier as u8,
                priority: self.priority,
                gpu_milli: self.gpu_milli,
                req_gpu: self.req[0],
                modulus,
            },
            PhaseKey {
                phase,
                start: self.start.0,
                seq: self.seq,
                id: Reverse(self.id),
            },
        )
    }
}

impl RunCounts {
    /// Counts that also keep each queue's jobs in lost-work order (for quota's victim
    /// search, [`super::quota_victims`]).
    pub(crate) fn with_lost_order() -> RunCounts {
        RunCounts {
            lost_order: Some(Vec::new()),
            ..RunCounts::default()
        }
    }

    /// Queue `q`'s streams in lost-work order (`None`: not kept).
    pub(crate) fn lost_order(
        &self,
        q: QueueId,
    ) -> Option<&BTreeMap<StreamKey, BTreeSet<PhaseKey>>> {
        static EMPTY: BTreeMap<StreamKey, BTreeSet<PhaseKey>> = BTreeMap::new();
        let order = self.lost_order.as_ref()?;
        Some(order.get(q.index()).unwrap_or(&EMPTY))
    }

    /// The view of counted job `id` (`None`: not counted).
    pub(crate) fn view(&self, id: JobId) -> Option<&VictimView> {
        let (q, k) = (*self.at.get(id.index())?)?;
        self.views.get(q.index())?.get(k as usize)
    }

    /// The least priority of queue `q`'s counted jobs (`None`: none).
    pub(crate) fn min_priority(&self, q: QueueId) -> Option<i32> {
        self.by_queue.get(q.index())?.keys().next().copied()
    }

    /// Counts `job` with view `now` (`None`: not at all), in place of what it counted for
    /// before. `O(log priorities)`.
    pub(crate) fn set(&mut self, job: JobId, now: Option<VictimView>) {
        let i = job.index();
        if i >= self.at.len() {
            self.at.resize(i + 1, None);
        }
        if let Some((q, k)) = self.at[i] {
            if Some(self.views[q.index()][k as usize]) == now {
                return;
            }
            self.at[i] = None;
            let list = &mut self.views[q.index()];
            let old = list.swap_remove(k as usize);
            if let Some(moved) = list.get(k as usize) {
                self.at[moved.id.index()] = Some((q, k));
            }
            let m = &mut self.by_queue[q.index()];
            let n = m
                .get_mut(&old.priority)
                .expect("a counted job's priority is counted");
            *n -= 1;
            if *n == 0 {
                m.remove(&old.priority);
            }
            self.tiers[old.tier as usize] -= 1;
            if let Some(order) = self.lost_order.as_mut() {
                let (sk, pk) = old.lost_order_key();
                let streams = &mut order[q.index()];
                let set = streams
                    .get_mut(&sk)
                    .expect("a counted job is in its stream");
                set.remove(&pk);
                if set.is_empty() {
                    streams.remove(&sk);
                }
            }
        }
        if let Some(v) = now {
            let q = v.queue.index();
            if q >= self.by_queue.len() {
                self.by_queue.resize_with(q + 1, BTreeMap::new);
                self.views.resize_with(q + 1, Vec::new);
            }
            *self.by_queue[q].entry(v.priority).or_insert(0) += 1;
            self.tiers[v.tier as usize] += 1;
            if let Some(order) = self.lost_order.as_mut() {
                if q >= order.len() {
                    order.resize_with(q + 1, BTreeMap::new);
                }
                let (sk, pk) = v.lost_order_key();
                order[q].entry(sk).or_default().insert(pk);
            }
            let k = u32::try_from(self.views[q].len()).expect("fewer than 2^32 running jobs");
            self.views[q].push(v);
            self.at[i] = Some((v.queue, k));
        }
    }

    /// The views of queue `q`'s running jobs not being evicted, in no particular order.
    pub(crate) fn views(&self, q: QueueId) -> &[VictimView] {
        self.views.get(q.index()).map_or(&[], Vec::as_slice)
    }

    /// What the run summary of a walk over the running jobs holds without LAS preemption
    /// (`preempt::summary`): the lowest priority per queue, up to the highest queue with a
    /// counted job (as the walk's), and the jobs per tier ([`Tier`] as index). `O(queues)`.
    pub(crate) fn summary(&self) -> (Vec<Option<i32>>, [u64; 3]) {
        let len = self
            .by_queue
            .iter()
            .rposition(|m| !m.is_empty())
            .map_or(0, |q| q + 1);
        let min_prio = self.by_queue[..len]
            .iter()
            .map(|m| m.keys().next().copied())
            .collect();
        (min_prio, self.tiers)
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
        let counted = r.filter(|r| r.evicting.is_none()).map(VictimView::of);
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

    fn v(id: u32, q: u32, priority: i32, tier: Tier) -> Option<VictimView> {
        Some(VictimView {
            id: j(id),
            queue: QueueId(q),
            tier,
            flavor: Some(0),
            priority,
            seq: u64::from(id),
            submit: SimTime(0),
            start: SimTime(5),
            done: SimDuration(0),
            checkpoint_interval: None,
            gpu_milli: 1000,
            req: [1000, 0, 0],
        })
    }

    /// Counting, recounting and uncounting leave the counts of what is counted now.
    #[test]
    fn counts_follow_the_jobs() {
        let mut rc = RunCounts::default();
        rc.set(j(0), v(0, 1, 5, Tier::Production));
        rc.set(j(1), v(1, 1, 2, Tier::Production));
        rc.set(j(2), v(2, 0, 7, Tier::BestEffort));
        assert_eq!(rc.views(QueueId(1)).len(), 2);
        let (min_prio, tiers) = rc.summary();
        assert_eq!(min_prio, vec![Some(7), Some(2)]);
        assert_eq!(tiers[Tier::Production as usize], 2);
        assert_eq!(tiers[Tier::BestEffort as usize], 1);
        // Job 1 starts its eviction, job 2 ends, job 0 is set again as it was.
        rc.set(j(0), None);
        rc.set(j(2), None);
        rc.set(j(0), v(0, 1, 5, Tier::Production));
        rc.set(j(1), None);
        // Job 0's view moved within its queue's array when job 1 left; setting it again
        // with a new start replaces it in place of a second entry.
        let mut moved = v(0, 1, 5, Tier::Production);
        moved.as_mut().expect("some").start = SimTime(9);
        rc.set(j(0), moved);
        assert_eq!(rc.views(QueueId(1)), &[moved.expect("some")][..]);
        assert!(rc.views(QueueId(0)).is_empty());
        let (min_prio, tiers) = rc.summary();
        assert_eq!(min_prio, vec![None, Some(5)]);
        assert_eq!(tiers.iter().sum::<u64>(), 1);
        rc.set(j(0), None);
        let (min_prio, tiers) = rc.summary();
        assert!(min_prio.is_empty());
        assert_eq!(tiers, [0; 3]);
    }
}
