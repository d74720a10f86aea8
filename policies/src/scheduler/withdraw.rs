//! Withdrawing a pending job (a cancel before it started: the live service's
//! `job_cancelled` of a pending job).

use super::*;

impl Scheduler {
    /// Withdraws pending job `job` of queue `queue` (its owner cancelled it before it
    /// started): it leaves its queue and class index and the pending-reason counts; a
    /// nomination it holds as a preemptor is dropped with the quota it reserved (its victims,
    /// already told to stop, still terminate, and are requeued when released); it leaves the
    /// last pass's backfill reservations and the preemption rules' per-job records (P2, P4).
    /// It never starts; the next pass decides as if it had never been submitted, apart from
    /// what it changed while it waited (victims it caused, decayed usage of earlier runs).
    /// Nothing is uncharged: a pending job holds no usage. The wait it accumulated is
    /// dropped with it.
    ///
    /// Returns `false`, changing nothing, when `job` is not pending in `queue` (running,
    /// being evicted, unknown). `O(n log n)` for the `n` pending jobs of `queue` (the entry
    /// is found by id).
    pub fn withdraw(&mut self, job: JobId, queue: QueueId) -> bool {
        self.settled = None;
        let seq = if let Some(r) = self.redecide.as_mut() {
            let Some(seq) = r.pending_seq(job) else {
                return false;
            };
            r.on_end(job);
            seq
        } else {
            let q = queue.index();
            let Some(jobs) = self.pending.get_mut(q) else {
                return false;
            };
            let Some(key) = jobs.jobs.order.keys().find(|k| k.1 == job).copied() else {
                return false;
            };
            let e = jobs.jobs.remove(&key).expect("present");
            let counts = &mut self.core.reason_counts[q];
            counts[e.reason.unwrap_or(PendingReason::NotTried).index()] -= 1;
            e.job.seq
        };
        self.pending_len -= 1;
        let c = &mut self.core;
        c.drop_nomination(job);
        c.reservations.retain(|r| r.job != job);
        c.preempted_by.remove(&seq);
        c.victim_counts.remove(&seq);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{NodeId, TenantId};
    use crate::scheduler::test_support::{one_node_fleet as fleet, started};

    fn job(id: u32, submit: u64, gpus: u32, estimate: Option<u64>) -> PendingJob {
        PendingJob {
            id: JobId(id),
            tenant: TenantId(0),
            queue: QueueId(0),
            submit: SimTime(submit),
            seq: u64::from(id),
            shape: TaskShape::whole_gpus(gpus),
            tasks: 1,
            runtime_estimate: estimate.map(SimDuration),
            ..PendingJob::default()
        }
    }

    /// Job 0 holds GPUs 0..gpus of node 0 and ends at `at`.
    fn end_job0(s: &mut Scheduler, f: &mut FleetState, gpus: u32, at: u64) {
        s.on_job_end(JobId(0), QueueId(0), u64::from(gpus) * 1000, SimTime(at));
        f.release(&TaskAlloc {
            node: NodeId(0),
            gpu_mask: (1u64 << gpus) - 1,
            gpu_milli: 1000,
            cpu_milli: 0,
            mem_mib: 0,
        })
        .unwrap();
    }

    fn one_queue(strategy: QueueingStrategy, ext: Extensions) -> Scheduler {
        let q = QueueConfig {
            strategy,
            ..QueueConfig::default()
        };
        Scheduler::new(SchedulerConfig::default(), vec![q]).with(ext)
    }

    #[test]
    fn a_withdrawn_strict_head_never_starts_and_the_next_job_takes_its_place() {
        let mut f = fleet(2);
        let mut s = one_queue(QueueingStrategy::StrictFifo, Extensions::default());
        s.submit(&mut f, job(0, 0, 2, None)).unwrap();
        assert_eq!(started(&s.schedule_at(&mut f, SimTime(0))), [0]);
        s.submit(&mut f, job(1, 10, 2, None)).unwrap(); // the head once job 0 runs
        s.submit(&mut f, job(2, 15, 2, None)).unwrap(); // behind it
        assert!(s.schedule_at(&mut f, SimTime(15)).is_empty());
        assert!(s.withdraw(JobId(1), QueueId(0)));
        assert!(!s.withdraw(JobId(1), QueueId(0)), "already gone");
        assert!(!s.withdraw(JobId(0), QueueId(0)), "running, not pending");
        assert_eq!(s.pending_len(), 1);
        assert_eq!(
            s.pending_reasons().into_iter().collect::<Vec<_>>(),
            [(JobId(2), PendingReason::StrictFifoHead)]
        );
        // Job 2 is the head now: tried at 50 (no room), started when job 0 ends at 100.
        assert!(s.schedule_at(&mut f, SimTime(50)).is_empty());
        assert_eq!(s.pending_reasons()[&JobId(2)], PendingReason::NoCapacity);
        end_job0(&mut s, &mut f, 2, 100);
        assert_eq!(started(&s.schedule_at(&mut f, SimTime(100))), [2]);
        // Its wait: 15..50 behind the strict head, 50..100 for capacity.
        let w = s.take_wait_profile(JobId(2)).unwrap();
        assert_eq!(w[PendingReason::StrictFifoHead.index()], 35);
        assert_eq!(w[PendingReason::NoCapacity.index()], 50);
        assert_eq!(s.pending_len(), 0);
        assert_eq!(s.pending_reason_counts(), [0; PendingReason::ALL.len()]);
        assert!(
            s.schedule_at(&mut f, SimTime(200)).is_empty(),
            "job 1 never starts"
        );
    }

    #[test]
    fn a_withdrawn_job_leaves_its_class_index() {
        let mut f = fleet(2);
        let mut s = one_queue(QueueingStrategy::BestEffortFifo, Extensions::default());
        s.submit(&mut f, job(0, 0, 2, None)).unwrap();
        assert_eq!(started(&s.schedule_at(&mut f, SimTime(0))), [0]);
        for id in 1..=3 {
            s.submit(&mut f, job(id, 10, 2, None)).unwrap();
        }
        assert!(s.schedule_at(&mut f, SimTime(10)).is_empty());
        assert!(s.withdraw(JobId(1), QueueId(0)));
        assert_eq!(
            s.pending_reason_counts()[PendingReason::NoCapacity.index()],
            2
        );
        let classes = s.pending[0]
            .jobs
            .classes
            .as_ref()
            .expect("an indexed queue");
        let ids: Vec<u32> = classes
            .values()
            .flat_map(|b| b.set.keys())
            .map(|k| k.1 .0)
            .collect();
        assert_eq!(ids, [2, 3]);
        end_job0(&mut s, &mut f, 2, 100);
        assert_eq!(started(&s.schedule_at(&mut f, SimTime(100))), [2]);
        assert!(s.withdraw(JobId(3), QueueId(0)));
        assert!(s.pending[0].jobs.classes.as_ref().unwrap().is_empty());
        assert_eq!(s.pending_len(), 0);
        assert_eq!(s.pending_reason_counts(), [0; PendingReason::ALL.len()]);
    }

    #[test]
    fn withdrawing_the_reserved_head_lets_the_backfill_candidate_start() {
        let mut f = fleet(4);
        let ext = Extensions {
            backfill: BackfillConfig::of(crate::backfill::BackfillKind::Easy, 1),
            ..Extensions::default()
        };
        let mut s = one_queue(QueueingStrategy::BestEffortFifo, ext);
        // Job 0: 2 GPUs until 100. Job 1 (4 GPUs) is reserved at 100; job 2 (2 GPUs for
        // 500 ms) would delay it, so it waits.
        s.submit(&mut f, job(0, 0, 2, Some(100))).unwrap();
        assert_eq!(started(&s.schedule_at(&mut f, SimTime(0))), [0]);
        s.submit(&mut f, job(1, 10, 4, Some(100))).unwrap();
        s.submit(&mut f, job(2, 10, 2, Some(500))).unwrap();
        assert!(s.schedule_at(&mut f, SimTime(10)).is_empty());
        assert_eq!(
            s.reservations()
                .iter()
                .map(|r| (r.job.0, r.start.0))
                .collect::<Vec<_>>(),
            [(1, 100)]
        );
        assert!(s.withdraw(JobId(1), QueueId(0)));
        assert!(s.reservations().is_empty());
        // Nothing reserved any more: job 2 fits beside job 0 at once.
        assert_eq!(started(&s.schedule_at(&mut f, SimTime(20))), [2]);
        assert_eq!(s.pending_len(), 0);
    }
}
