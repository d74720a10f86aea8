//! The view of a pending job that policies read.

use crate::ids::{CellId, JobId, QueueId, TenantId};
use crate::resources::{ModelSet, TaskShape};
use crate::time::{SimDuration, SimTime};
use crate::topology::TopologySpec;

/// A job waiting to start: a gang of `tasks` identical tasks of `shape`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingJob {
    /// The job.
    pub id: JobId,
    /// Owning tenant.
    pub tenant: TenantId,
    /// Queue the job was submitted to.
    pub queue: QueueId,
    /// Priority; higher runs first under priority order.
    pub priority: i32,
    /// Submission time.
    pub submit: SimTime,
    /// Input sequence number (position in the trace); the last tie-break of every order.
    pub seq: u64,
    /// One task's request.
    pub shape: TaskShape,
    /// Gang size: all `tasks` start together or none does (minimum = maximum).
    pub tasks: u32,
    /// Accelerator models the tasks may use (empty = any).
    pub models: ModelSet,
    /// Cells the job may run in, ascending; empty = any cell.
    pub cells: Vec<CellId>,
    /// Runtime estimate (user time limit or a predictor), if any.
    pub runtime_estimate: Option<SimDuration>,
    /// Topology constraint of the gang (`None`: the scheduler's default, if any).
    pub topology: Option<TopologySpec>,
}

impl PendingJob {
    /// Total GPU-milli of the whole gang.
    pub fn total_gpu_milli(&self) -> u64 {
        self.shape.total_gpu_milli() * self.tasks as u64
    }

    /// True when the job may run in `cell`.
    pub fn allows_cell(&self, cell: CellId) -> bool {
        self.cells.is_empty() || self.cells.binary_search(&cell).is_ok()
    }
}
