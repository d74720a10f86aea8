//! The live service's wire types: the cluster [`Event`]s that drive a [`super::LiveState`]
//! and the [`Decision`]s it answers with.
//!
//! Every event carries `t`, the cluster time it happened at, in **milliseconds** of
//! simulated/cluster time (the policy crate's [`SimTime`] unit, so that a recorded simulator
//! run replays exactly; a wall-clock adapter sends Unix time × 1000). Decisions are stamped
//! with the `t` of the event that produced them, never with the wall clock.
//!
//! JSON shape: `{"type": "job_submitted", "t": 0, "job": {...}}` (internally tagged,
//! snake_case type names).

use serde::{Deserialize, Serialize};

use crate::decision::{PreemptReason, RejectReason};
use crate::ids::{CellId, JobId, ModelId, NodeId, QueueId, TenantId};
use crate::job::PendingJob;
use crate::resources::{ModelSet, TaskShape};
use crate::state::TaskAlloc;
use crate::time::{SimDuration, SimTime};
use crate::topology::TopologySpec;

/// A job as submitted: everything a [`PendingJob`] needs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// The job's id, unique among jobs not yet finished (an id may be reused after its job
    /// finished or was cancelled).
    pub id: u32,
    /// Owning tenant (index into the service's tenant table).
    pub tenant: u32,
    /// Queue (index into the spec's queue table).
    pub queue: u32,
    /// Priority; higher runs first under priority order.
    #[serde(default)]
    pub priority: i32,
    /// Submission time, milliseconds; `None`: the event's `t`. (A job whose start was
    /// delayed, e.g. by a dispatch latency, joins the queues at `t` but keeps its submit time.)
    #[serde(default)]
    pub submit: Option<u64>,
    /// Input sequence number: the last tie-break of every queue order (smaller first).
    pub seq: u64,
    /// One task's request (GPU-milli per accelerator × accelerators, CPU milli-cores, MiB).
    pub shape: TaskShape,
    /// Gang size: all tasks start together or none does.
    pub tasks: u32,
    /// Accelerator models (by index) the tasks may use; empty = any.
    #[serde(default)]
    pub models: Vec<u16>,
    /// Cells (by index) the job may run in; empty = any.
    #[serde(default)]
    pub cells: Vec<u16>,
    /// Runtime estimate of what is left, milliseconds.
    #[serde(default)]
    pub runtime_estimate_ms: Option<u64>,
    /// Topology constraint of the gang (`None`: the scheduler's default).
    #[serde(default)]
    pub topology: Option<TopologySpec>,
    /// Checkpoint interval of progress, milliseconds (`None`: restarts from scratch).
    #[serde(default)]
    pub checkpoint_interval_ms: Option<u64>,
    /// Progress kept from earlier runs, milliseconds.
    #[serde(default)]
    pub done_ms: u64,
    /// Attained service of earlier runs, GPU·ms.
    #[serde(default)]
    pub attained_gpu_ms: u64,
    /// The tasks take the node's shape: split into node-sized members in a cell whose nodes
    /// are smaller than a task ([`PendingJob::split`]); default `false` (rigid).
    #[serde(default)]
    pub split: bool,
}

impl JobSpec {
    /// The policy crate's view of this job, submitted at `submit` (or `t`).
    ///
    /// # Errors
    /// A message when a model index is 128 or more (a fleet has at most 128 models).
    pub fn to_pending(&self, t: u64) -> Result<PendingJob, String> {
        if let Some(m) = self.models.iter().find(|&&m| m >= 128) {
            return Err(format!(
                "job {}: model index {m} is out of range (at most 127)",
                self.id
            ));
        }
        let mut cells: Vec<CellId> = self.cells.iter().map(|&c| CellId(c)).collect();
        cells.sort_unstable();
        cells.dedup();
        Ok(PendingJob {
            id: JobId(self.id),
            tenant: TenantId(self.tenant),
            queue: QueueId(self.queue),
            priority: self.priority,
            submit: SimTime(self.submit.unwrap_or(t)),
            seq: self.seq,
            shape: self.shape,
            tasks: self.tasks,
            models: if self.models.is_empty() {
                ModelSet::ANY
            } else {
                let mut s = ModelSet::default();
                for &m in &self.models {
                    s.insert(ModelId(m));
                }
                s
            },
            cells,
            runtime_estimate: self.runtime_estimate_ms.map(SimDuration),
            topology: self.topology,
            checkpoint_interval: self.checkpoint_interval_ms.map(SimDuration),
            done: SimDuration(self.done_ms),
            attained_gpu_ms: self.attained_gpu_ms,
            split: self.split,
            ..PendingJob::default()
        })
    }

    /// The wire form of `job` (its tier and LAS state are the scheduler's, not sent).
    pub fn from_pending(job: &PendingJob) -> JobSpec {
        JobSpec {
            id: job.id.0,
            tenant: job.tenant.0,
            queue: job.queue.0,
            priority: job.priority,
            submit: Some(job.submit.0),
            seq: job.seq,
            shape: job.shape,
            tasks: job.tasks,
            models: if job.models == ModelSet::ANY {
                Vec::new()
            } else {
                (0..128u16)
                    .filter(|&m| job.models.0 >> m & 1 == 1)
                    .collect()
            },
            cells: job.cells.iter().map(|c| c.0).collect(),
            runtime_estimate_ms: job.runtime_estimate.map(|d| d.0),
            topology: job.topology,
            checkpoint_interval_ms: job.checkpoint_interval.map(|d| d.0),
            split: job.split,
            done_ms: job.done.0,
            attained_gpu_ms: job.attained_gpu_ms,
        }
    }
}

/// A cluster event. `t` is cluster time in milliseconds; events must come in
/// non-decreasing `t`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// A node of the configured fleet joins scheduling (schedulable from now on).
    NodeAdded {
        /// Cluster time, ms.
        t: u64,
        /// The node (index in the fleet file).
        node: u32,
    },
    /// A node leaves scheduling for good (no new tasks; running ones are the caller's to
    /// stop, with `job_lost` events).
    NodeRemoved {
        /// Cluster time, ms.
        t: u64,
        /// The node.
        node: u32,
    },
    /// A node failed: not schedulable until `node_recovered`. Jobs on it are reported lost
    /// by the caller (`job_lost`), each then released (`victim_released`).
    NodeFailed {
        /// Cluster time, ms.
        t: u64,
        /// The node.
        node: u32,
    },
    /// A failed, drained or removed node is schedulable again.
    NodeRecovered {
        /// Cluster time, ms.
        t: u64,
        /// The node.
        node: u32,
    },
    /// A node is cordoned: its running tasks stay, no new ones are placed.
    NodeDrained {
        /// Cluster time, ms.
        t: u64,
        /// The node.
        node: u32,
    },
    /// A job joins its queue (or is rejected for good: a `reject` decision).
    JobSubmitted {
        /// Cluster time, ms.
        t: u64,
        /// The job.
        job: JobSpec,
    },
    /// A job was started outside the queues (a start recorded from another scheduler, or
    /// load present when the service started): placed now if it fits (an `admit`
    /// decision), else queued like a submission.
    JobStarted {
        /// Cluster time, ms.
        t: u64,
        /// The job.
        job: JobSpec,
    },
    /// A running job completed; its resources are free.
    JobFinished {
        /// Cluster time, ms.
        t: u64,
        /// The job.
        job: u32,
    },
    /// A job was cancelled by its owner: a running one's resources are free (as a finish);
    /// a pending one leaves its queue and never starts (no decision either way). A job
    /// being evicted cannot be cancelled (send `victim_released` first).
    JobCancelled {
        /// Cluster time, ms.
        t: u64,
        /// The job.
        job: u32,
    },
    /// A running job lost a node (failure or eviction): it stops, keeps its bindings until
    /// `release_at` (ms; `None` = unknown), and must then be released (`victim_released`).
    JobLost {
        /// Cluster time, ms.
        t: u64,
        /// The job.
        job: u32,
        /// When its bindings will be released, ms.
        #[serde(default)]
        release_at: Option<u64>,
    },
    /// A job being evicted (preempted with a grace period, or lost) actually stopped: its
    /// resources are free and it is requeued.
    VictimReleased {
        /// Cluster time, ms.
        t: u64,
        /// The job.
        job: u32,
    },
    /// Run one scheduling pass at `t`; answers its admit and preempt decisions in order.
    Pass {
        /// Cluster time, ms.
        t: u64,
    },
}

/// `match`es an [`Event`] binding its time field (every variant has one) as `$t` in `$body`.
macro_rules! on_time_field {
    ($e:expr, $t:ident => $body:expr) => {
        match $e {
            Event::NodeAdded { $t, .. }
            | Event::NodeRemoved { $t, .. }
            | Event::NodeFailed { $t, .. }
            | Event::NodeRecovered { $t, .. }
            | Event::NodeDrained { $t, .. }
            | Event::JobSubmitted { $t, .. }
            | Event::JobStarted { $t, .. }
            | Event::JobFinished { $t, .. }
            | Event::JobCancelled { $t, .. }
            | Event::JobLost { $t, .. }
            | Event::VictimReleased { $t, .. }
            | Event::Pass { $t } => $body,
        }
    };
}

impl Event {
    /// The event's cluster time, ms.
    pub fn t(&self) -> u64 {
        on_time_field!(self, t => *t)
    }

    /// Sets the event's cluster time to `at`, ms (the service's `--clock wall` stamps
    /// events with it).
    pub fn set_t(&mut self, at: u64) {
        on_time_field!(self, t => *t = at)
    }
}

/// One task's binding in an admit decision.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// The node (index in the fleet file).
    pub node: u32,
    /// The node's accelerator indices bound to the task, ascending.
    pub gpus: Vec<u32>,
    /// GPU-milli taken on each bound accelerator (0 when none is bound).
    pub gpu_milli: u32,
    /// CPU taken, milli-cores.
    pub cpu_milli: u64,
    /// Memory taken, MiB.
    pub mem_mib: u64,
}

impl From<&TaskAlloc> for Binding {
    fn from(a: &TaskAlloc) -> Binding {
        Binding {
            node: a.node.0,
            gpus: (0..64).filter(|i| a.gpu_mask >> i & 1 == 1).collect(),
            gpu_milli: a.gpu_milli,
            cpu_milli: a.cpu_milli,
            mem_mib: a.mem_mib,
        }
    }
}

impl Binding {
    /// The policy crate's binding.
    pub fn to_alloc(&self) -> TaskAlloc {
        TaskAlloc {
            node: NodeId(self.node),
            gpu_mask: self.gpus.iter().fold(0u64, |m, &g| m | 1u64 << (g & 63)),
            gpu_milli: self.gpu_milli,
            cpu_milli: self.cpu_milli,
            mem_mib: self.mem_mib,
        }
    }
}

/// What the service decided, stamped with the `t` of the event that caused it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// Start the job on these bindings (one per task of the gang), in `cell`.
    Admit {
        /// Cluster time, ms.
        t: u64,
        /// The job.
        job: u32,
        /// The cell it runs in.
        cell: u16,
        /// One binding per task.
        tasks: Vec<Binding>,
    },
    /// Evict `job` so that `preemptor` can start. With a zero grace its resources are
    /// already free and it is requeued; otherwise send `victim_released` when it stopped.
    Preempt {
        /// Cluster time, ms.
        t: u64,
        /// The victim.
        job: u32,
        /// The job it makes room for.
        preemptor: u32,
        /// The rule that allowed it.
        reason: PreemptReason,
        /// Termination grace period, ms.
        grace_ms: u64,
    },
    /// The job can never start; it was not queued.
    Reject {
        /// Cluster time, ms.
        t: u64,
        /// The job.
        job: u32,
        /// Why.
        reason: RejectReason,
    },
}

impl Decision {
    /// The wire form of a policy decision made at `t`.
    pub fn from_policy(d: &crate::decision::Decision, t: u64) -> Decision {
        match d {
            crate::decision::Decision::Start { job, cell, tasks } => Decision::Admit {
                t,
                job: job.0,
                cell: cell.0,
                tasks: tasks.iter().map(Binding::from).collect(),
            },
            crate::decision::Decision::Preempt {
                job,
                preemptor,
                reason,
                grace,
            } => Decision::Preempt {
                t,
                job: job.0,
                preemptor: preemptor.0,
                reason: *reason,
                grace_ms: grace.0,
            },
            crate::decision::Decision::Reject { job, reason } => Decision::Reject {
                t,
                job: job.0,
                reason: reason.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_as_tagged_json() {
        let e = Event::JobSubmitted {
            t: 5000,
            job: JobSpec::from_pending(&PendingJob {
                id: JobId(3),
                seq: 7,
                tasks: 2,
                shape: TaskShape::whole_gpus(4),
                submit: SimTime(5000),
                ..PendingJob::default()
            }),
        };
        let s = serde_json::to_string(&e).unwrap();
        assert!(
            s.starts_with(r#"{"type":"job_submitted","t":5000,"job":{"id":3"#),
            "{s}"
        );
        assert_eq!(serde_json::from_str::<Event>(&s).unwrap(), e);
        let p: Event = serde_json::from_str(r#"{"type":"pass","t":9}"#).unwrap();
        assert_eq!(p, Event::Pass { t: 9 });
        assert_eq!(p.t(), 9);
        let mut q = p.clone();
        q.set_t(12);
        assert_eq!(q, Event::Pass { t: 12 });
        let err = serde_json::from_str::<Event>(r#"{"type":"pass","t":9,"x":1}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    #[test]
    fn bindings_round_trip_masks() {
        let a = TaskAlloc {
            node: NodeId(4),
            gpu_mask: 0b1010,
            gpu_milli: 1000,
            cpu_milli: 2,
            mem_mib: 3,
        };
        let b = Binding::from(&a);
        assert_eq!(b.gpus, vec![1, 3]);
        assert_eq!(b.to_alloc(), a);
    }
}
