//! Decisions and verdicts: what a policy returns, as values, for the engine (or a production
//! adapter) to apply.

use std::fmt;

use crate::ids::{CellId, JobId};
use crate::state::TaskAlloc;

/// Why a job is refused for good at submit. Such a job never enters a queue, so it can never
/// block one (field case B17).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RejectReason {
    /// One task is larger than any node of every allowed cell could ever hold.
    TaskLargerThanAnyNode,
    /// The whole gang is larger than any allowed cell could ever hold.
    GangLargerThanCell,
    /// The gang asks for more than its queue's hard maximum.
    OverQueueMax,
    /// No cell the job allows exists in the fleet.
    NoAllowedCell,
    /// No accelerator model the job allows exists in the fleet.
    NoAllowedModel,
    /// The time limit is invalid (e.g. none given and the queue's default is 0).
    InvalidTimeLimit,
    /// The job asks for zero tasks.
    EmptyGang,
}

impl RejectReason {
    /// A stable snake_case name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            RejectReason::TaskLargerThanAnyNode => "task_larger_than_any_node",
            RejectReason::GangLargerThanCell => "gang_larger_than_cell",
            RejectReason::OverQueueMax => "over_queue_max",
            RejectReason::NoAllowedCell => "no_allowed_cell",
            RejectReason::NoAllowedModel => "no_allowed_model",
            RejectReason::InvalidTimeLimit => "invalid_time_limit",
            RejectReason::EmptyGang => "empty_gang",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a job cannot start right now (waiting may help).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PendingReason {
    /// No allowed cell has room for the whole gang.
    NoCapacity,
    /// The queue's hard maximum would be exceeded.
    QueueMax,
    /// A strict-FIFO queue's head is blocked and this job is behind it.
    StrictFifoHead,
}

impl PendingReason {
    /// A stable snake_case name for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            PendingReason::NoCapacity => "no_capacity",
            PendingReason::QueueMax => "queue_max",
            PendingReason::StrictFifoHead => "strict_fifo_head",
        }
    }
}

/// The outcome of checking one job against the fleet, Kubernetes-framework style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It fits.
    Fit,
    /// It does not fit now; waiting (or preemption) may help.
    Unschedulable(PendingReason),
    /// It can never fit; retrying is pointless.
    Unresolvable(RejectReason),
}

/// An action for the engine or adapter to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start the job with these task bindings (already reserved in the fleet state).
    Start {
        /// The job.
        job: JobId,
        /// The cell it runs in.
        cell: CellId,
        /// One binding per task of the gang.
        tasks: Vec<TaskAlloc>,
    },
    /// Refuse the job for good.
    Reject {
        /// The job.
        job: JobId,
        /// Why.
        reason: RejectReason,
    },
}
