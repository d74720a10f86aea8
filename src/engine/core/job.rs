//! A job's record while it is in flight, kept in the engine's slab.

use std::collections::{BTreeMap, BTreeSet};

use fleetsim_policies::{
    CellId, JobId, NodeId, PendingJob, QueueId, SimDuration, SimTime, TaskAlloc, TaskShape,
    TenantId, WaitProfile,
};

use crate::engine::RunSegment;
use crate::workload::RecordedKind;

/// The ids the engine hands out to jobs read.
#[derive(Debug, Default)]
pub(in crate::engine) struct Ids {
    /// Slab slots freed by finished jobs, reused last-freed first.
    pub(in crate::engine) free_slots: Vec<u32>,
    /// The next job's input position (its [`JobRec::seq`]).
    pub(in crate::engine) next_seq: u64,
}

/// Jobs in flight outside the scheduler's queues.
#[derive(Debug, Default)]
pub(in crate::engine) struct Outside {
    /// Jobs awaiting their recorded start (replay mode) or the end of their dispatch latency.
    pub(in crate::engine) awaiting_replay: BTreeMap<JobId, PendingJob>,
    /// Jobs waiting out the dispatch latency
    /// ([`EngineConfig::dispatch_latency`](crate::engine::EngineConfig::dispatch_latency)) in
    /// `awaiting_replay`, to be queued (not force-started) when it ends.
    pub(in crate::engine) dispatching: BTreeSet<JobId>,
    /// Gangs in [`JobState::Recovering`].
    pub(in crate::engine) recovering: BTreeSet<JobId>,
}

/// A job's record while it is in flight (pending, awaiting a recorded start, or running). Records
/// live in a slab: a [`JobId`] is the slot index, reused once the job
/// reaches its final state, so memory grows with jobs in flight, not with jobs submitted. `seq` is
/// the job's input position, the `job_id` of every output.
#[derive(Clone, Debug)]
pub(in crate::engine) struct JobRec {
    pub(in crate::engine) seq: u64,
    pub(in crate::engine) live: bool,
    pub(in crate::engine) name: compact_str::CompactString,
    pub(in crate::engine) tenant: TenantId,
    pub(in crate::engine) queue: QueueId,
    pub(in crate::engine) priority: i32,
    pub(in crate::engine) qos: Option<Box<str>>,
    pub(in crate::engine) submit: SimTime,
    pub(in crate::engine) runtime: SimDuration,
    pub(in crate::engine) walltime_cut: bool,
    pub(in crate::engine) time_limit: Option<SimDuration>,
    pub(in crate::engine) tasks: u32,
    pub(in crate::engine) shape: TaskShape,
    /// Bindings of its current (or last) run: `tasks`, or the members it was split into
    /// when its tasks took the node's shape ([`fleetsim_policies::placement::split`]).
    pub(in crate::engine) members: u32,
    /// Its tasks may take the node's shape ([`crate::workload::JobSpec::split`]).
    pub(in crate::engine) split: bool,
    pub(in crate::engine) start: Option<SimTime>,
    pub(in crate::engine) cell: Option<CellId>,
    pub(in crate::engine) allocs: Allocs,
    pub(in crate::engine) kind: RecordedKind,
    /// Id of the current run (unique per start within a simulation); a completion event
    /// carrying another id is stale.
    pub(in crate::engine) run: u32,
    pub(in crate::engine) measured: bool,
    pub(in crate::engine) state: JobState,
    /// Time pending per reason, once it has waited.
    pub(in crate::engine) wait: Option<Box<WaitProfile>>,
    /// What only preempted, lost or reserved jobs need (boxed: most jobs have none).
    pub(in crate::engine) extra: Option<Box<Restarts>>,
}

/// The record of a job's stopped runs and reservations.
#[derive(Clone, Debug, Default)]
pub(in crate::engine) struct Restarts {
    /// Progress kept from earlier runs.
    pub(in crate::engine) done: SimDuration,
    /// Start of the last run, once the job restarted.
    pub(in crate::engine) run_start: Option<SimTime>,
    pub(in crate::engine) preemptions: u32,
    pub(in crate::engine) failures: u32,
    pub(in crate::engine) lost_gpu_milli_ms: u64,
    pub(in crate::engine) first_reservation: Option<SimTime>,
    /// Startup and restart overhead of its stopped runs, GPU-milli·ms.
    pub(in crate::engine) startup_gpu_milli_ms: u64,
    /// Accelerator-time held by its stopped runs (grace included), GPU-milli·ms.
    pub(in crate::engine) allocated_gpu_milli_ms: u64,
    /// When it was last lost to a node failure, until it restarts (time to recovery).
    pub(in crate::engine) lost_at: Option<SimTime>,
    /// End of its current termination grace (while terminating).
    pub(in crate::engine) release_at: Option<SimTime>,
    /// Grace held on failed nodes, GPU-milli·ms (see
    /// [`JobRow::held_on_failed_gpu_milli_ms`](crate::engine::JobRow::held_on_failed_gpu_milli_ms)).
    pub(in crate::engine) held_on_failed_gpu_milli_ms: u64,
    /// Failed nodes whose share of its current termination grace is already booked as held
    /// on failed nodes (a node repaired and failing again inside the grace books nothing
    /// twice).
    pub(in crate::engine) held_nodes: Vec<NodeId>,
    /// Paused since (an incomplete gang keeping its survivors), until whole again.
    pub(in crate::engine) paused_since: Option<SimTime>,
    /// Held by its survivors while incomplete, GPU-milli·ms.
    pub(in crate::engine) held_incomplete_gpu_milli_ms: u64,
    /// Wall time of its stopped runs, ms.
    pub(in crate::engine) served_ms: u64,
    /// Time it waited after its first start (from each stop to the next start), ms.
    pub(in crate::engine) requeued_pending_ms: u64,
    /// Not running since (its last stop: a preemption, failure or eviction), until it
    /// restarts.
    pub(in crate::engine) pending_since: Option<SimTime>,
    /// Its home cell (the first of the cells its trace row allows, when it allows several;
    /// kept only with the goodput account): a first start elsewhere is a cross-cell dispatch.
    pub(in crate::engine) home_cell: Option<CellId>,
    /// Its stopped runs, with
    /// [`EngineConfig::record_runs`](crate::engine::EngineConfig::record_runs).
    pub(in crate::engine) runs: Vec<RunSegment>,
}

/// Where a job in flight is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::engine) enum JobState {
    /// In a queue.
    Pending,
    /// Holding resources, making progress.
    Running,
    /// Stopped (preempted with a grace period, or lost with its node), holding resources
    /// until its release.
    Terminating,
    /// Waiting for its recorded start (replay) outside the queues.
    Awaiting,
    /// Withdrawn from its queue and held outside the queues by a subsystem (e.g. a backoff
    /// after an eviction) until it rejoins its queue or the run ends
    /// ([`Subsystem::held`](crate::engine::subsystem::Subsystem::held)).
    Held,
    /// A gang below its size after a node failure (`gang_recovery = "keep_survivors"`):
    /// its surviving members stay bound, no progress, until the missing ones are placed.
    Recovering,
}

/// Accelerator-time a job asks for: tasks × per-task GPU-milli × run time, GPU-milli·ms,
/// exact in 128 bits (≤ 2⁶⁴ · 2³² · 2⁶⁴ would not fit, so the product saturates instead).
pub(in crate::engine) fn demand_of(shape: &TaskShape, tasks: u32, runtime: SimDuration) -> u128 {
    (u128::from(shape.total_gpu_milli()) * u128::from(tasks)).saturating_mul(u128::from(runtime.0))
}

pub(in crate::engine) const NOT_RUNNING: u32 = u32::MAX;

/// Most jobs in flight: release events carry a flag in bit 31 of the job id.
pub(in crate::engine) const MAX_IN_FLIGHT: usize = 1 << 31;

/// A running job's task bindings. Most jobs have one task: it is kept inline, so starting and
/// finishing it neither allocates nor touches a second cold cache line.
#[derive(Clone, Debug, Default)]
pub(in crate::engine) enum Allocs {
    #[default]
    None,
    One(TaskAlloc),
    Many(Box<[TaskAlloc]>),
}

impl Allocs {
    pub(in crate::engine) fn from_vec(mut v: Vec<TaskAlloc>) -> Allocs {
        match v.len() {
            0 => Allocs::None,
            1 => Allocs::One(v.pop().expect("one")),
            _ => Allocs::Many(v.into_boxed_slice()),
        }
    }

    pub(in crate::engine) fn as_slice(&self) -> &[TaskAlloc] {
        match self {
            Allocs::None => &[],
            Allocs::One(a) => std::slice::from_ref(a),
            Allocs::Many(v) => v,
        }
    }

    pub(in crate::engine) fn is_empty(&self) -> bool {
        matches!(self, Allocs::None)
    }
}

/// Bytes of engine state per job in flight (the slab record; a job's name and a gang's
/// task list beyond one task are on the heap besides). Reported by `fleetsim bench`.
pub const fn job_record_bytes() -> usize {
    std::mem::size_of::<JobRec>()
}
