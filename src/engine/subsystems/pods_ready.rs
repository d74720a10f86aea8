//! Waiting for pods (Kueue `waitForPodsReady`): a job admitted whose tasks are not all
//! running within a timeout is evicted and requeued after a backoff.
//!
//! # Model A job is *admitted* when the scheduler commits it to capacity: it starts (its pods are
//! ready at once), or the autoscaler's scan counts it as waiting for a scale-up — it claims room on
//! nodes being provisioned, or its own scale-up request was made ([`crate::engine::autoscale`]).
//! Kueue admits on quota and the pods then wait for nodes; that wait is what this part times. Room
//! on a group a Kueue ProvisioningRequest admission check provisions
//! ([`crate::engine::autoscale::GroupConfig::admission_check`]) does not admit: Kueue admits such a
//! workload when its nodes join. Its pods are *ready* when it starts: every task is bound to a node
//! in the fleet (startup latency, `[startup]`, runs inside a ready pod: it loads a checkpoint, it
//! does not hold the pod back).
//!
//! A job admitted at `a` and not started when its deadline `a + timeout` is applied is
//! *evicted* (reason `pods_ready_timeout`): it leaves its queue (its claim on the room on
//! the way is released, and the nodes it asked for still join: a scale-up is never
//! cancelled), stays pending (its wait keeps counting), and rejoins its queue after the
//! backoff of its `n`-th eviction, `min(backoff_base × 2^(n−1), backoff_max)` (Kueue's
//! rule without its ±0.01 % jitter). Rejoining, it takes its place in its queue by its
//! eviction time (Kueue's default `requeuingStrategy.timestamp: Eviction`) and is
//! admitted again when it claims capacity. When `n` exceeds
//! `backoff_limit_count` it is *deactivated* instead: it ends not run (`CANCELLED`, reason
//! `requeuing_limit_exceeded`, Kueue's `WorkloadRequeuingLimitExceeded`).
//!
//! Without `backoff_limit_count` a job whose backoff outlasts its nodes' idle time is
//! requeued for ever (its nodes leave before it comes back, it asks again, and so on): as
//! in Kueue, it never runs, but a run cannot end with it. A job evicted
//! [`ENDLESS_EVICTIONS`] times with no limit set stops the run with an error naming it and
//! the settings to change (`backoff_limit_count`, `timeout_s`, the backoff, or the group's
//! `scale_down_idle_s`).
//!
//! # Events and ties
//! A deadline and a requeue are events of the node class: at an instant they are applied
//! after completions and before arrivals and the scheduling pass, in the order they were
//! queued. A job whose nodes join at its deadline is evicted (the pass that would start
//! it comes after the deadline). Jobs admitted in one scan are taken in the scan's order
//! (queue order).
//!
//! # Account
//! The `pods_ready` section of the summary: admissions waiting for pods, evictions,
//! requeues and deactivations. With [`crate::engine::EngineConfig::record_admissions`] each of
//! them is also kept per job, in order ([`crate::engine::RunResult::pods_ready_log`]).

use std::collections::BTreeMap;

use fleetsim_policies::{JobId, PendingJob, SimDuration, SimTime};

use crate::engine::core::job::JobState;
use crate::engine::subsystem::{Ctx, Subsystem};
use crate::engine::{EngineError, RunResult};

/// The censored reason of a job still waiting out its backoff when the run ends.
pub const BACKING_OFF: &str = "pods_ready_backoff";

/// Evictions of one job, with no `backoff_limit_count`, that stop the run as an endless
/// requeue.
pub const ENDLESS_EVICTIONS: u32 = 1000;

/// The `CANCELLED` reason of a deactivated job.
pub const DEACTIVATED: &str = "requeuing_limit_exceeded";

/// The settings of a run (`[policy] wait_for_pods_ready`), milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodsReadyConfig {
    /// Time from admission within which the job must start (> 0).
    pub timeout: SimDuration,
    /// Backoff after the first eviction.
    pub backoff_base: SimDuration,
    /// Longest backoff.
    pub backoff_max: SimDuration,
    /// Requeues allowed; the eviction after them deactivates (`None`: no limit).
    pub backoff_limit_count: Option<u32>,
}

impl PodsReadyConfig {
    /// The backoff before the `n`-th eviction's requeue (`n ≥ 1`):
    /// `min(backoff_base × 2^(n−1), backoff_max)`, saturating.
    pub fn backoff(&self, n: u32) -> SimDuration {
        let factor = 1u64.checked_shl(n.saturating_sub(1)).unwrap_or(u64::MAX);
        SimDuration(
            self.backoff_base
                .0
                .saturating_mul(factor)
                .min(self.backoff_max.0),
        )
    }
}

/// The account of a run (`summary.json` section `pods_ready`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct PodsReadyStats {
    /// The timeout, seconds.
    pub timeout_s: f64,
    /// Admissions that had to wait for pods (the job claimed capacity not yet in the
    /// fleet); a job admitted again after a requeue counts again.
    pub admissions_waiting: u64,
    /// Evictions for a pods-ready timeout.
    pub evictions: u64,
    /// Evicted jobs that rejoined their queue after their backoff.
    pub requeues: u64,
    /// Jobs deactivated after more evictions than `backoff_limit_count` allows.
    pub deactivated: u64,
    /// Jobs still waiting out a backoff when the run ended.
    pub backing_off_at_end: u64,
}

/// One step of a job's waiting for pods ([`crate::engine::RunResult::pods_ready_log`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodsReadyEvent {
    /// When.
    pub at: SimTime,
    /// The job's input position.
    pub seq: u64,
    /// What happened.
    pub kind: PodsReadyStep,
}

/// What happened to a job waiting for its pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodsReadyStep {
    /// Admitted on capacity not yet in the fleet: its pods wait for nodes; evicted at
    /// `deadline` unless it starts before.
    Admitted {
        /// `at + timeout`.
        deadline: SimTime,
    },
    /// Evicted for the timeout (its `count`-th eviction); rejoins its queue at `requeue_at`.
    Evicted {
        /// Evictions so far, this one included (Kueue's `requeueState.count`).
        count: u32,
        /// The end of its backoff.
        requeue_at: SimTime,
    },
    /// Its backoff ended: it rejoined its queue.
    Requeued,
    /// Evicted for the timeout once more than `backoff_limit_count` allows: it ends not
    /// run (`CANCELLED`, reason [`DEACTIVATED`]).
    Deactivated {
        /// Evictions in all, this one included.
        evictions: u32,
    },
}

/// What the engine does at a deadline.
#[derive(Clone, Debug, PartialEq)]
pub enum Deadline {
    /// Nothing: the job started, ended or was evicted since.
    Stale,
    /// Evict the job (reason `pods_ready_timeout`); it rejoins its queue at the time
    /// (the part queues its requeue event with the index).
    Requeue(SimTime, u32),
    /// Evict and deactivate the job.
    Deactivate,
    /// The job's [`ENDLESS_EVICTIONS`]-th eviction with no limit: stop the run.
    Endless,
}

/// One admission being timed.
#[derive(Clone, Copy, Debug)]
struct Admission {
    job: JobId,
    /// The job's input position (a slot is reused after a job ends).
    seq: u64,
}

/// The part's state in a run.
#[derive(Debug)]
pub struct PodsReady {
    cfg: PodsReadyConfig,
    /// Every admission timed, indexed by its deadline event.
    admissions: Vec<Admission>,
    /// The job's current admission (index into `admissions`), until it starts or is evicted.
    open: BTreeMap<JobId, u32>,
    /// Evictions per job, by input position.
    evictions: BTreeMap<u64, u32>,
    /// Jobs waiting out a backoff, by requeue index, with the input position and the job
    /// to submit again.
    backing_off: BTreeMap<u32, (u64, PendingJob)>,
    next_requeue: u32,
    stats: PodsReadyStats,
    /// Every step, when recording (`None`: not recording).
    log: Option<Vec<PodsReadyEvent>>,
}

impl PodsReady {
    /// The part with `cfg`; `record`: keep every step ([`PodsReady::take_log`]).
    pub fn new(cfg: PodsReadyConfig, record: bool) -> PodsReady {
        PodsReady {
            stats: PodsReadyStats {
                timeout_s: cfg.timeout.0 as f64 / 1000.0,
                ..PodsReadyStats::default()
            },
            cfg,
            admissions: Vec::new(),
            open: BTreeMap::new(),
            evictions: BTreeMap::new(),
            backing_off: BTreeMap::new(),
            next_requeue: 0,
            log: record.then(Vec::new),
        }
    }

    fn note(&mut self, at: SimTime, seq: u64, kind: PodsReadyStep) {
        if let Some(l) = &mut self.log {
            l.push(PodsReadyEvent { at, seq, kind });
        }
    }

    /// Every step so far, in order (empty when not recording).
    pub fn take_log(&mut self) -> Vec<PodsReadyEvent> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Job `job` (input position `seq`) claims capacity not yet in the fleet at `t`: if it
    /// is not admitted already, it is now, and its deadline (time, index) is returned to
    /// queue as the part's deadline event.
    pub fn admit_waiting(&mut self, job: JobId, seq: u64, t: SimTime) -> Option<(SimTime, u32)> {
        if let Some(&i) = self.open.get(&job) {
            if self.admissions[i as usize].seq == seq {
                return None;
            }
        }
        let i = u32::try_from(self.admissions.len()).expect("fewer than 2^32 admissions");
        self.admissions.push(Admission { job, seq });
        self.open.insert(job, i);
        self.stats.admissions_waiting += 1;
        let deadline = t + self.cfg.timeout;
        self.note(t, seq, PodsReadyStep::Admitted { deadline });
        Some((deadline, i))
    }

    /// Job `job` started (or left the queues another way): its pods are ready, its
    /// deadline is void.
    pub fn on_start(&mut self, job: JobId) {
        self.open.remove(&job);
    }

    /// Deadline `i`: `seq_of` gives the input position of the pending, never-started-since
    /// job in a slot (`None` when the slot holds no such job).
    pub fn deadline(
        &mut self,
        i: u32,
        t: SimTime,
        seq_of: impl Fn(JobId) -> Option<u64>,
    ) -> (JobId, Deadline) {
        let a = self.admissions[i as usize];
        let current = self.open.get(&a.job) == Some(&i) && seq_of(a.job) == Some(a.seq);
        if !current {
            return (a.job, Deadline::Stale);
        }
        self.open.remove(&a.job);
        self.stats.evictions += 1;
        let n = self.evictions.entry(a.seq).or_insert(0);
        *n += 1;
        let n = *n;
        match self.cfg.backoff_limit_count {
            Some(l) if n > l => {
                self.stats.deactivated += 1;
                self.note(t, a.seq, PodsReadyStep::Deactivated { evictions: n });
                return (a.job, Deadline::Deactivate);
            }
            None if n >= ENDLESS_EVICTIONS => return (a.job, Deadline::Endless),
            _ => {}
        }
        let at = t + self.cfg.backoff(n);
        let r = self.next_requeue;
        self.next_requeue += 1;
        self.note(
            t,
            a.seq,
            PodsReadyStep::Evicted {
                count: n,
                requeue_at: at,
            },
        );
        (a.job, Deadline::Requeue(at, r))
    }

    /// Holds evicted `job` (input position `seq`) until its requeue `r`.
    pub fn hold(&mut self, r: u32, seq: u64, job: PendingJob) {
        self.backing_off.insert(r, (seq, job));
    }

    /// Requeue `r` is due at `t`: the job to submit again.
    pub fn requeue(&mut self, r: u32, t: SimTime) -> Option<PendingJob> {
        let (seq, j) = self.backing_off.remove(&r)?;
        self.stats.requeues += 1;
        self.note(t, seq, PodsReadyStep::Requeued);
        Some(j)
    }

    /// Jobs still waiting out a backoff, in requeue order.
    pub fn backing_off(&self) -> impl Iterator<Item = JobId> + '_ {
        self.backing_off.values().map(|(_, j)| j.id)
    }

    /// The account at the end of the run.
    pub fn finish(&mut self) -> PodsReadyStats {
        self.stats.backing_off_at_end = self.backing_off.len() as u64;
        self.stats.clone()
    }
}

/// The tag bit of a requeue among the part's events (the rest: the requeue's index);
/// without it, the tag is an admission's deadline.
const REQUEUE: u32 = 1 << 31;

/// Waiting for pods' hooks: a job's start voids its deadline; the admissions another
/// subsystem announces are timed; its events are the deadlines and the requeues; the jobs
/// backing off at the end are censored ([`BACKING_OFF`]); its section is `pods_ready` (and
/// the log, when recording).
impl Subsystem for PodsReady {
    fn on_event(&mut self, ctx: &mut Ctx<'_>, tag: u32) -> Result<(), EngineError> {
        if tag & REQUEUE == 0 {
            self.on_deadline(ctx, tag)
        } else {
            // The end of an evicted job's backoff: it rejoins its queue.
            match self.requeue(tag & !REQUEUE, ctx.now()) {
                Some(job) => ctx.requeue(job),
                None => Ok(()),
            }
        }
    }

    fn on_job_start(&mut self, job: JobId) {
        self.on_start(job);
    }

    fn on_waiting_for_capacity(&mut self, ctx: &mut Ctx<'_>, job: JobId, t: SimTime) {
        if let Some((at, i)) = self.admit_waiting(job, ctx.job(job).seq, t) {
            debug_assert!(i < REQUEUE, "fewer than 2^31 admissions");
            ctx.schedule(at, i);
        }
    }

    fn held(&self) -> Vec<(JobId, &'static str)> {
        self.backing_off().map(|id| (id, BACKING_OFF)).collect()
    }

    fn finish(&mut self, _ctx: &mut Ctx<'_>, result: &mut RunResult) {
        result.pods_ready_log = self.take_log();
        result.pods_ready = Some(PodsReady::finish(self));
    }
}

impl PodsReady {
    /// Deadline `i`: a job admitted and still not started is evicted from its queue, then
    /// held for its backoff or deactivated.
    fn on_deadline(&mut self, ctx: &mut Ctx<'_>, i: u32) -> Result<(), EngineError> {
        let now = ctx.now();
        let (id, verdict) = self.deadline(i, now, |id| {
            let r = ctx.job(id);
            (r.live && r.state == JobState::Pending && r.allocs.is_empty()).then_some(r.seq)
        });
        match verdict {
            Deadline::Stale => return Ok(()),
            Deadline::Endless => {
                let r = ctx.job(id);
                return Err(EngineError::EndlessRequeue {
                    name: r.name.to_string(),
                    seq: r.seq,
                    time: now,
                    evictions: ENDLESS_EVICTIONS,
                });
            }
            _ => {}
        }
        let Some(mut job) = ctx.withdraw(id) else {
            return Err(ctx.invariant(format!(
                "job {id} admitted and waiting for its pods is not in its queue"
            )));
        };
        match verdict {
            Deadline::Requeue(at, r) => {
                // Ordered by its eviction time when it rejoins.
                job.submit = now;
                let seq = ctx.job(id).seq;
                ctx.hold(id);
                self.hold(r, seq, job);
                debug_assert!(r < REQUEUE, "fewer than 2^31 requeues");
                ctx.schedule(at, REQUEUE | r);
                Ok(())
            }
            Deadline::Deactivate | Deadline::Stale | Deadline::Endless => {
                ctx.cancel(id, DEACTIVATED)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(limit: Option<u32>) -> PodsReadyConfig {
        PodsReadyConfig {
            timeout: SimDuration(300_000),
            backoff_base: SimDuration(60_000),
            backoff_max: SimDuration(200_000),
            backoff_limit_count: limit,
        }
    }

    #[test]
    fn the_backoff_doubles_from_the_base_up_to_the_max() {
        let c = cfg(None);
        // 60, 120, then 240 capped at 200; far evictions saturate, still capped.
        assert_eq!(c.backoff(1), SimDuration(60_000));
        assert_eq!(c.backoff(2), SimDuration(120_000));
        assert_eq!(c.backoff(3), SimDuration(200_000));
        assert_eq!(c.backoff(200), SimDuration(200_000));
    }

    #[test]
    fn an_eviction_beyond_the_limit_deactivates_and_a_started_job_is_not_evicted() {
        let mut p = PodsReady::new(cfg(Some(1)), true);
        let j = JobId(3);
        let (at, i) = p.admit_waiting(j, 7, SimTime(10_000)).unwrap();
        assert_eq!(at, SimTime(310_000));
        assert!(
            p.admit_waiting(j, 7, SimTime(20_000)).is_none(),
            "admitted already"
        );
        // First eviction: requeued after 60 s (1 ≤ limit 1).
        assert_eq!(
            p.deadline(i, at, |_| Some(7)),
            (j, Deadline::Requeue(SimTime(370_000), 0))
        );
        // Admitted again, evicted again: 2 > 1, deactivated.
        let (at, i) = p.admit_waiting(j, 7, SimTime(370_000)).unwrap();
        assert_eq!(p.deadline(i, at, |_| Some(7)), (j, Deadline::Deactivate));
        // Another job in the same slot, started before its deadline: stale.
        let (at, i) = p.admit_waiting(j, 8, SimTime(0)).unwrap();
        p.on_start(j);
        assert_eq!(p.deadline(i, at, |_| Some(8)).1, Deadline::Stale);
        // A deadline whose slot holds another job now: stale.
        let (at, i) = p.admit_waiting(j, 9, SimTime(0)).unwrap();
        assert_eq!(p.deadline(i, at, |_| Some(10)).1, Deadline::Stale);
        let s = p.finish();
        assert_eq!(
            (s.admissions_waiting, s.evictions, s.deactivated),
            (4, 2, 1)
        );
        // The log keeps job 7's steps in order (the requeue is the engine's, not taken
        // here), then the admissions of 8 and 9.
        let steps: Vec<(u64, u64, PodsReadyStep)> = p
            .take_log()
            .into_iter()
            .map(|e| (e.at.0, e.seq, e.kind))
            .collect();
        assert_eq!(
            steps,
            [
                (
                    10_000,
                    7,
                    PodsReadyStep::Admitted {
                        deadline: SimTime(310_000)
                    }
                ),
                (
                    310_000,
                    7,
                    PodsReadyStep::Evicted {
                        count: 1,
                        requeue_at: SimTime(370_000)
                    }
                ),
                (
                    370_000,
                    7,
                    PodsReadyStep::Admitted {
                        deadline: SimTime(670_000)
                    }
                ),
                (670_000, 7, PodsReadyStep::Deactivated { evictions: 2 }),
                (
                    0,
                    8,
                    PodsReadyStep::Admitted {
                        deadline: SimTime(300_000)
                    }
                ),
                (
                    0,
                    9,
                    PodsReadyStep::Admitted {
                        deadline: SimTime(300_000)
                    }
                ),
            ]
        );
    }

    #[test]
    fn a_requeue_is_logged_with_the_job_held() {
        let mut p = PodsReady::new(cfg(None), true);
        let j = JobId(1);
        let (at, i) = p.admit_waiting(j, 4, SimTime(0)).unwrap();
        let Deadline::Requeue(back, r) = p.deadline(i, at, |_| Some(4)).1 else {
            panic!("requeued expected")
        };
        assert_eq!(back, SimTime(360_000));
        let job = PendingJob {
            id: j,
            ..PendingJob::default()
        };
        p.hold(r, 4, job);
        assert_eq!(p.backing_off().collect::<Vec<_>>(), [j]);
        assert_eq!(p.requeue(r, back).map(|j| j.id), Some(j));
        assert!(p.requeue(r, back).is_none(), "requeued once");
        let last = *p.take_log().last().unwrap();
        assert_eq!(
            last,
            PodsReadyEvent {
                at: back,
                seq: 4,
                kind: PodsReadyStep::Requeued
            }
        );
        assert_eq!(p.finish().requeues, 1);
    }

    #[test]
    fn without_a_limit_the_endless_eviction_stops_the_run() {
        let mut p = PodsReady::new(cfg(None), false);
        let j = JobId(0);
        for n in 1..ENDLESS_EVICTIONS {
            let (at, i) = p.admit_waiting(j, 0, SimTime(0)).unwrap();
            let v = p.deadline(i, at, |_| Some(0)).1;
            assert!(matches!(v, Deadline::Requeue(..)), "{n}: {v:?}");
        }
        let (at, i) = p.admit_waiting(j, 0, SimTime(0)).unwrap();
        assert_eq!(p.deadline(i, at, |_| Some(0)).1, Deadline::Endless);
    }
}
