//! [`LiveState`]: the scheduler, the fleet and the jobs holding resources, advanced by one
//! [`Event`] at a time exactly as the simulator's engine drives the same [`Scheduler`].

use std::collections::BTreeMap;

use crate::decision::Decision as PolicyDecision;
use crate::decision::PendingReason;
use crate::ids::{JobId, NodeId, QueueId, TenantId};
use crate::scheduler::Scheduler;
use crate::state::{FleetState, TaskAlloc};
use crate::time::SimTime;

use super::event::{Decision, Event, JobSpec};

/// Why an event was refused. A refused event changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveError {
    /// The event's `t` is before an earlier accepted event's.
    TimeWentBackwards {
        /// The event's time, ms.
        t: u64,
        /// The latest accepted time, ms.
        now: u64,
    },
    /// A node index beyond the fleet.
    UnknownNode(u32),
    /// A job id the state does not know (or not in the phase the event needs).
    UnknownJob(u32),
    /// A job id already in use by a job that has not ended.
    DuplicateJob(u32),
    /// The event does not fit the job's phase (e.g. finishing a pending job).
    WrongPhase {
        /// The job.
        job: u32,
        /// What the event needed, e.g. "running".
        needs: &'static str,
    },
    /// The job description is invalid.
    InvalidJob(String),
    /// A transition the live state cannot make yet.
    Unsupported(&'static str),
    /// A field out of the spec's range ([`LiveState::validate`]).
    Invalid {
        /// The field, as a path in the event's JSON.
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LiveError::TimeWentBackwards { t, now } => {
                write!(f, "event time {t} ms is before the current time {now} ms")
            }
            LiveError::UnknownNode(n) => write!(f, "unknown node {n}"),
            LiveError::UnknownJob(j) => write!(f, "unknown job {j}"),
            LiveError::DuplicateJob(j) => write!(f, "job {j} already exists and has not ended"),
            LiveError::WrongPhase { job, needs } => write!(f, "job {job} is not {needs}"),
            LiveError::InvalidJob(m) => write!(f, "invalid job: {m}"),
            LiveError::Unsupported(m) => write!(f, "unsupported: {m}"),
            LiveError::Invalid { field, message } => write!(f, "field `{field}`: {message}"),
        }
    }
}

impl std::error::Error for LiveError {}

/// Where a job known to the live state is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Phase {
    /// In a queue (or awaiting requeue inside the scheduler).
    Pending,
    /// Holding these bindings.
    Running(Vec<TaskAlloc>),
    /// Stopped, still holding its bindings until `victim_released`.
    Evicting(Vec<TaskAlloc>),
}

#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Known {
    tenant: TenantId,
    queue: QueueId,
    gpu_milli: u64,
    phase: Phase,
}

/// Default [`LiveState::max_job_id`]: job ids up to 2^20 − 1. The scheduler keeps tables
/// indexed by job id, so the largest id sets their size; the simulator's ids are slots of
/// jobs in flight, reused once a job ends, and an adapter should number the same way.
pub const DEFAULT_MAX_JOB_ID: u32 = (1 << 20) - 1;

/// The live scheduler: a [`Scheduler`] on a [`FleetState`] plus the jobs it knows. Apply
/// events in order with [`LiveState::apply`]; decisions come out in the scheduler's order.
pub struct LiveState {
    sched: Scheduler,
    fleet: FleetState,
    jobs: BTreeMap<u32, Known>,
    now: u64,
    buf: Vec<PolicyDecision>,
    /// Queue names by queue id: the ids jobs may name.
    queues: Vec<String>,
    /// Largest job id accepted (configuration, not in snapshots).
    max_job_id: u32,
}

/// What [`LiveState::save`] writes.
#[cfg(feature = "serde")]
#[derive(serde::Serialize)]
struct SnapshotRef<'a> {
    sched: &'a Scheduler,
    fleet: &'a FleetState,
    jobs: &'a BTreeMap<u32, Known>,
    now: u64,
    queues: &'a [String],
}

/// A snapshot decoded by [`LiveState::decode`], not yet applied ([`LiveState::adopt`]).
#[cfg(feature = "serde")]
pub struct Decoded(Box<Snapshot>);

/// What [`LiveState::decode`] reads (the same fields, owned).
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
struct Snapshot {
    sched: Scheduler,
    fleet: FleetState,
    jobs: BTreeMap<u32, Known>,
    now: u64,
    queues: Vec<String>,
}

impl LiveState {
    /// A live state on a scheduler and fleet built as the simulator builds them (e.g.
    /// [`crate::SchedulerSpec::build`] and [`FleetState::new`]), with the queue table
    /// `queues` (names by queue id, as the simulator numbers them: the spec's declared
    /// queues first, then the names its workload uses, in arrival order). A job naming a
    /// queue id outside the table is refused ([`LiveState::validate`]).
    pub fn new(sched: Scheduler, fleet: FleetState, queues: Vec<String>) -> LiveState {
        LiveState {
            sched,
            fleet,
            jobs: BTreeMap::new(),
            now: 0,
            buf: Vec::new(),
            queues,
            max_job_id: DEFAULT_MAX_JOB_ID,
        }
    }

    /// The queue table: queue names by queue id.
    pub fn queue_names(&self) -> &[String] {
        &self.queues
    }

    /// Replaces the queue table (see [`LiveState::new`]).
    pub fn set_queue_names(&mut self, queues: Vec<String>) {
        self.queues = queues;
    }

    /// The largest job id accepted ([`DEFAULT_MAX_JOB_ID`] unless set).
    pub fn max_job_id(&self) -> u32 {
        self.max_job_id
    }

    /// Sets the largest job id accepted. The scheduler keeps tables indexed by job id, so
    /// this bounds their size; a log replayed under a smaller bound refuses the records
    /// above it.
    pub fn set_max_job_id(&mut self, id: u32) {
        self.max_job_id = id;
    }

    /// Writes the whole state (scheduler, fleet, known jobs, time) to `serializer`: a
    /// snapshot from which [`LiveState::decode`] and [`LiveState::adopt`] continue exactly
    /// where this state is, so a service restarts from its last snapshot and the events
    /// logged after it.
    ///
    /// The policy objects (queue order, placement, cell selection) are configuration and
    /// are left out; the snapshot is only meaningful to a state built from the same spec
    /// and fleet. Needs a format that takes any map key (e.g. postcard; not JSON).
    ///
    /// # Errors
    /// The serializer's.
    #[cfg(feature = "serde")]
    pub fn save<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::Serialize;
        SnapshotRef {
            sched: &self.sched,
            fleet: &self.fleet,
            jobs: &self.jobs,
            now: self.now,
            queues: &self.queues,
        }
        .serialize(serializer)
    }

    /// Decodes a snapshot written by [`LiveState::save`] without applying it, so a caller
    /// can check the rest of its input before [`LiveState::adopt`].
    ///
    /// # Errors
    /// The deserializer's.
    #[cfg(feature = "serde")]
    pub fn decode<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Decoded, D::Error> {
        use serde::Deserialize;
        Ok(Decoded(Box::new(Snapshot::deserialize(deserializer)?)))
    }

    /// Replaces this state with a decoded snapshot. `self` must be freshly built from the
    /// spec and fleet the snapshot's state was built from: its policy objects are kept (the
    /// snapshot has none).
    ///
    /// # Errors
    /// When the snapshot's fleet has another node count or model list than this state's (a
    /// snapshot of another fleet); `self` is unchanged then.
    #[cfg(feature = "serde")]
    pub fn adopt(&mut self, snap: Decoded) -> Result<(), String> {
        let mut snap = *snap.0;
        let (ours, theirs) = (self.fleet.nodes().len(), snap.fleet.nodes().len());
        if ours != theirs || self.fleet.models() != snap.fleet.models() {
            return Err(format!(
                "the snapshot is of another fleet ({theirs} nodes, models {:?}; this fleet: {ours} nodes, models {:?})",
                snap.fleet.models(),
                self.fleet.models()
            ));
        }
        snap.sched.adopt_policies(&mut self.sched);
        self.sched = snap.sched;
        self.fleet = snap.fleet;
        self.jobs = snap.jobs;
        self.now = snap.now;
        self.queues = snap.queues;
        self.buf.clear();
        Ok(())
    }

    /// The latest accepted event time, ms.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The fleet.
    pub fn fleet(&self) -> &FleetState {
        &self.fleet
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.sched
    }

    /// The phase of job `id`, if known.
    pub fn phase(&self, id: u32) -> Option<&Phase> {
        self.jobs.get(&id).map(|k| &k.phase)
    }

    /// The owning tenant (the submit's `tenant`) of job `id`, if known.
    pub fn tenant_of(&self, id: u32) -> Option<u32> {
        self.jobs.get(&id).map(|k| k.tenant.0)
    }

    /// The queue (id) of job `id`, if known.
    pub fn queue_of(&self, id: u32) -> Option<u32> {
        self.jobs.get(&id).map(|k| k.queue.0)
    }

    /// The jobs holding bindings on node `node`, by id, each with `true` when it is being
    /// evicted (stopped, its bindings not yet released). `O(jobs known)`.
    pub fn jobs_on(&self, node: u32) -> Vec<(u32, bool)> {
        self.jobs
            .iter()
            .filter_map(|(&id, k)| match &k.phase {
                Phase::Running(a) if a.iter().any(|a| a.node.0 == node) => Some((id, false)),
                Phase::Evicting(a) if a.iter().any(|a| a.node.0 == node) => Some((id, true)),
                _ => None,
            })
            .collect()
    }

    /// Why each pending job waits, as of the last pass (jobs not yet tried: none).
    pub fn pending_reasons(&self) -> BTreeMap<u32, PendingReason> {
        self.sched
            .pending_reasons()
            .iter()
            .map(|(j, r)| (j.0, *r))
            .collect()
    }

    /// The scheduler's own next wake-up, ms (a pass the policy asks for).
    pub fn next_wake(&self) -> Option<u64> {
        self.sched.next_wake().map(|t| t.0)
    }

    fn node(&self, n: u32) -> Result<NodeId, LiveError> {
        if (n as usize) < self.fleet.nodes().len() {
            Ok(NodeId(n))
        } else {
            Err(LiveError::UnknownNode(n))
        }
    }

    fn fresh(&self, job: &JobSpec, t: u64) -> Result<crate::job::PendingJob, LiveError> {
        if self.jobs.contains_key(&job.id) {
            return Err(LiveError::DuplicateJob(job.id));
        }
        job.to_pending(t).map_err(LiveError::InvalidJob)
    }

    fn known(&mut self, id: u32) -> Result<&mut Known, LiveError> {
        self.jobs.get_mut(&id).ok_or(LiveError::UnknownJob(id))
    }

    /// Applies one event at its time `t` and returns the decisions it caused, in order.
    ///
    /// # Errors
    /// A [`LiveError`]; the state is unchanged then.
    pub fn apply(&mut self, ev: &Event) -> Result<Vec<Decision>, LiveError> {
        let t = ev.t();
        if t < self.now {
            return Err(LiveError::TimeWentBackwards { t, now: self.now });
        }
        if let Err(bad) = self.validate(std::slice::from_ref(ev)) {
            return Err(LiveError::Invalid {
                field: bad.field,
                message: bad.message,
            });
        }
        let now = SimTime(t);
        let mut out = Vec::new();
        match ev {
            Event::NodeAdded { node, .. } | Event::NodeRecovered { node, .. } => {
                let n = self.node(*node)?;
                self.fleet.set_schedulable(n, true);
            }
            Event::NodeRemoved { node, .. }
            | Event::NodeFailed { node, .. }
            | Event::NodeDrained { node, .. } => {
                let n = self.node(*node)?;
                self.fleet.set_schedulable(n, false);
            }
            Event::JobSubmitted { job, .. } => {
                let p = self.fresh(job, t)?;
                let (tenant, queue, gpu_milli) = (p.tenant, p.queue, p.total_gpu_milli());
                match self.sched.submit_at(&mut self.fleet, p, now) {
                    Ok(()) => {
                        self.jobs.insert(
                            job.id,
                            Known {
                                tenant,
                                queue,
                                gpu_milli,
                                phase: Phase::Pending,
                            },
                        );
                    }
                    Err(reason) => out.push(Decision::Reject {
                        t,
                        job: job.id,
                        reason,
                    }),
                }
            }
            Event::JobStarted { job, .. } => {
                let p = self.fresh(job, t)?;
                if let Err(reason) = self.sched.check_resolvable(&self.fleet, &p) {
                    out.push(Decision::Reject {
                        t,
                        job: job.id,
                        reason,
                    });
                } else {
                    let (tenant, queue, gpu_milli) = (p.tenant, p.queue, p.total_gpu_milli());
                    self.jobs.insert(
                        job.id,
                        Known {
                            tenant,
                            queue,
                            gpu_milli,
                            phase: Phase::Pending,
                        },
                    );
                    match self.sched.place_now(&mut self.fleet, &p) {
                        Some(d) => self.take(&d, t, &mut out),
                        None => {
                            if let Err(reason) = self.sched.submit_at(&mut self.fleet, p, now) {
                                self.jobs.remove(&job.id);
                                out.push(Decision::Reject {
                                    t,
                                    job: job.id,
                                    reason,
                                });
                            }
                        }
                    }
                }
            }
            Event::JobFinished { job, .. } | Event::JobCancelled { job, .. } => {
                let k = self.known(*job)?;
                if let (Phase::Pending, Event::JobCancelled { .. }) = (&k.phase, ev) {
                    let queue = k.queue;
                    if !self.sched.withdraw(JobId(*job), queue) {
                        return Err(LiveError::Unsupported(
                            "cancelling a job the scheduler holds outside its queues",
                        ));
                    }
                    self.jobs.remove(job);
                    self.now = t;
                    return Ok(out);
                }
                let Phase::Running(allocs) = &k.phase else {
                    return Err(LiveError::WrongPhase {
                        job: *job,
                        needs: if matches!(ev, Event::JobCancelled { .. }) {
                            "running or pending"
                        } else {
                            "running"
                        },
                    });
                };
                let (queue, gpu) = (k.queue, k.gpu_milli);
                for a in allocs.clone() {
                    self.fleet
                        .release(&a)
                        .map_err(|e| LiveError::InvalidJob(e.to_string()))?;
                }
                self.jobs.remove(job);
                self.sched.on_job_end(JobId(*job), queue, gpu, now);
            }
            Event::JobLost {
                job, release_at, ..
            } => {
                let k = self.known(*job)?;
                let Phase::Running(allocs) = &k.phase else {
                    return Err(LiveError::WrongPhase {
                        job: *job,
                        needs: "running",
                    });
                };
                k.phase = Phase::Evicting(allocs.clone());
                let until = release_at.map_or(SimTime::MAX, SimTime);
                self.sched.mark_lost(JobId(*job), now, until);
            }
            Event::VictimReleased { job, .. } => {
                let k = self.known(*job)?;
                let Phase::Evicting(allocs) = &k.phase else {
                    return Err(LiveError::WrongPhase {
                        job: *job,
                        needs: "being evicted",
                    });
                };
                let allocs = allocs.clone();
                k.phase = Phase::Pending;
                for a in &allocs {
                    self.fleet
                        .release(a)
                        .map_err(|e| LiveError::InvalidJob(e.to_string()))?;
                }
                self.sched.on_released(JobId(*job), now);
            }
            Event::Pass { .. } => {
                let mut buf = std::mem::take(&mut self.buf);
                self.sched.schedule_into(&mut self.fleet, now, &mut buf);
                for d in buf.drain(..) {
                    self.take(&d, t, &mut out);
                }
                self.buf = buf;
            }
        }
        self.now = t;
        Ok(out)
    }

    /// Books policy decision `d` (made at `t`) into the job table and appends its wire form.
    fn take(&mut self, d: &PolicyDecision, t: u64, out: &mut Vec<Decision>) {
        match d {
            PolicyDecision::Start { job, tasks, .. } => {
                if let Some(k) = self.jobs.get_mut(&job.0) {
                    k.phase = Phase::Running(tasks.clone());
                }
                // Waiting-time accounting is the simulator's; drop it to keep memory flat.
                drop(self.sched.take_wait_profile(*job));
            }
            PolicyDecision::Preempt { job, grace, .. } => {
                if let Some(k) = self.jobs.get_mut(&job.0) {
                    k.phase = match std::mem::replace(&mut k.phase, Phase::Pending) {
                        Phase::Running(a) if grace.0 > 0 => Phase::Evicting(a),
                        // Zero grace: the policy released the bindings and requeued it.
                        _ => Phase::Pending,
                    };
                }
            }
            PolicyDecision::Reject { .. } => {}
        }
        out.push(Decision::from_policy(d, t));
    }
}
