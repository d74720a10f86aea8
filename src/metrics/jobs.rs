//! One job's outcome as the engine decides it: the row `jobs.csv` writes, its runs, its
//! final state, and the sink rows stream to (the engine keeps none). The SLO collector
//! ([`super::slo`]) and the report writers read these rows; the engine
//! ([`crate::engine`]) builds them.

use fleetsim_policies::{NodeId, PendingReason, SimDuration, SimTime, TaskShape};

/// A job's final state, with Batsim's names where they exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FinalState {
    /// Ran to completion.
    Completed,
    /// Killed at its time limit.
    WalltimeReached,
    /// Refused at submit.
    Rejected,
    /// Never started inside the window.
    Censored,
    /// Started but still running when the run stopped at its horizon.
    RunningAtEnd,
    /// The trace records that it never ran (field case B18, reason `never_ran`), or a
    /// serving replica still pending at its planned stop was withdrawn (reason `withdrawn`).
    Cancelled,
    /// Started, then preempted or lost with its node, and pending again when the run stopped.
    RequeuedAtEnd,
}

impl FinalState {
    /// The `final_state` column value.
    pub fn as_str(&self) -> &'static str {
        match self {
            FinalState::Completed => "COMPLETED_SUCCESSFULLY",
            FinalState::WalltimeReached => "COMPLETED_WALLTIME_REACHED",
            FinalState::Rejected => "REJECTED",
            FinalState::Censored => "CENSORED",
            FinalState::RunningAtEnd => "RUNNING_AT_END",
            FinalState::Cancelled => "CANCELLED",
            FinalState::RequeuedAtEnd => "REQUEUED_AT_END",
        }
    }
}

/// One job's outcome, as written to `jobs.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRow {
    /// Input position of the job (0-based): `job_id` in `jobs.csv`.
    pub id: u64,
    /// Trace name.
    pub name: String,
    /// Tenant name.
    pub tenant: String,
    /// Queue name.
    pub queue: String,
    /// QoS class, if the trace has one.
    pub qos: Option<String>,
    /// Priority.
    pub priority: i32,
    /// Submission.
    pub submit: SimTime,
    /// First start.
    pub start: Option<SimTime>,
    /// Finish.
    pub finish: Option<SimTime>,
    /// Time it ran (finish − start), ms.
    pub run_ms: Option<u64>,
    /// Its run time as simulated (the trace's, cut to its time limit), ms: the denominator
    /// of its stretch and bounded slowdown, as in the summary.
    pub runtime_ms: u64,
    /// Wall time it held resources running, over all its runs (grace periods excluded), ms;
    /// `None` if it never started.
    pub service_ms: Option<u64>,
    /// Time it was pending, over all its waits: submit → first start, plus each stop
    /// (preemption, failure, eviction; its grace period included) → the next start, up to
    /// the end of the run for a job pending then, ms: what the summary's `wait_s` counts.
    pub pending_ms: Option<u64>,
    /// Time limit, if any.
    pub requested_time: Option<SimDuration>,
    /// Gang size.
    pub tasks: u32,
    /// One task's request.
    pub shape: TaskShape,
    /// Cell it ran in.
    pub cell: Option<String>,
    /// Nodes it ran on (one per task, in task order).
    pub nodes: Vec<String>,
    /// Start of its last run (differs from `start` after a preemption or failure).
    pub last_start: Option<SimTime>,
    /// Times it was preempted.
    pub preemptions: u32,
    /// Times it was lost to a node failure.
    pub failures: u32,
    /// Accelerator-time lost to preemption and failures, GPU-milli·ms.
    pub lost_gpu_milli_ms: u64,
    /// Accelerator-time it held over all its runs (grace periods included), GPU-milli·ms;
    /// kept only with [`crate::engine::EngineConfig::reliability`] (else 0).
    pub allocated_gpu_milli_ms: u64,
    /// Accelerator-time of its runs' startup latency and restart overhead, GPU-milli·ms;
    /// kept only with [`crate::engine::EngineConfig::reliability`] (else 0).
    pub startup_gpu_milli_ms: u64,
    /// Accelerator-time its tasks held through a termination grace on failed nodes,
    /// GPU-milli·ms (not in `lost_gpu_milli_ms`: allocated = kept + lost + startup + this).
    pub held_on_failed_gpu_milli_ms: u64,
    /// Accelerator-time its surviving members held while its gang was incomplete
    /// (`gang_recovery = "keep_survivors"`), GPU-milli·ms: neither kept work nor lost, its
    /// own account (allocated = kept + lost + startup + held on failed nodes + this).
    pub held_by_incomplete_gang_gpu_milli_ms: u64,
    /// The reason it waited longest (`None`: it never waited).
    pub pending_reason: Option<PendingReason>,
    /// Start time of the first backfill reservation it got, if any.
    pub first_reservation: Option<SimTime>,
    /// Final state.
    pub state: FinalState,
    /// Reject reason; for a censored job, why it was pending at the end; for a cancelled
    /// one, `never_ran` or `withdrawn`.
    pub reason: Option<String>,
    /// Left out of per-job statistics (pre-existing load or submitted during warm-up).
    pub measured: bool,
    /// A serving replica ([`crate::engine::serving`]): reported in the serving section,
    /// never among the jobs' wait, JCT and slowdown statistics.
    pub serving_replica: bool,
    /// Every run, in order, when [`crate::engine::EngineConfig::record_runs`] is on (else
    /// empty).
    pub runs: Vec<RunSegment>,
}

/// Where per-job outcomes go, as they are decided (streaming: the engine keeps no row).
pub trait JobSink {
    /// Receives one row.
    ///
    /// # Errors
    /// An I/O error, which stops the run.
    fn write(&mut self, row: &JobRow) -> std::io::Result<()>;

    /// False when rows are not wanted at all (the engine then builds none).
    fn wants_rows(&self) -> bool {
        true
    }
}

/// A sink that keeps nothing (benchmarks).
#[derive(Clone, Copy, Debug, Default)]
pub struct DiscardRows;

impl JobSink for DiscardRows {
    fn write(&mut self, _row: &JobRow) -> std::io::Result<()> {
        Ok(())
    }
    fn wants_rows(&self) -> bool {
        false
    }
}

impl JobSink for Vec<JobRow> {
    fn write(&mut self, row: &JobRow) -> std::io::Result<()> {
        self.push(row.clone());
        Ok(())
    }
}

/// One run of a job: from its start to the release of its resources (the end of a
/// termination grace, when it had one), with the accelerators it held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSegment {
    /// Start of the run (its startup latency included).
    pub start: SimTime,
    /// When its resources were released (or the end of the simulation, for a run still
    /// holding them then).
    pub end: SimTime,
    /// Per task: the node and the mask of its accelerators bound (bit `i` = accelerator `i`
    /// of the node), in task order.
    pub gpus: Vec<(NodeId, u64)>,
    /// How the run ended.
    pub ended: RunEnd,
}

/// How a [`RunSegment`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The job completed (or was killed at its time limit): its last run.
    Finished,
    /// Stopped by a preemption or a node failure; the job was requeued.
    Stopped,
    /// Still holding its resources when the simulation stopped.
    AtEnd,
}
