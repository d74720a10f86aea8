//! The view of a pending job that policies read.

use crate::ids::{CellId, JobId, QueueId, TenantId};
use crate::resources::{ModelSet, TaskShape};
use crate::time::{SimDuration, SimTime};
use crate::topology::TopologySpec;

/// A Borg-style tier (priority band). Higher tiers are considered first and may preempt lower
/// ones when tier preemption is on; [`Tier::BestEffort`] work bypasses quota, runs only on
/// capacity nobody else claims, and is preempted first (Verma et al., "Large-scale cluster
/// management at Google with Borg", EuroSys'15, §2.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Tier {
    /// Best-effort ("free") tier: no quota, preempted first.
    BestEffort,
    /// Batch tier (the default).
    #[default]
    Batch,
    /// Production tier.
    Production,
}

impl Tier {
    /// Every tier, lowest first.
    pub const ALL: [Tier; 3] = [Tier::BestEffort, Tier::Batch, Tier::Production];

    /// The name scenarios use.
    pub fn as_str(&self) -> &'static str {
        match self {
            Tier::BestEffort => "best-effort",
            Tier::Batch => "batch",
            Tier::Production => "production",
        }
    }

    /// Rank in the cross-queue order: production 0, batch 1, best-effort 2 (smaller first).
    pub const fn order_rank(self) -> u8 {
        match self {
            Tier::Production => 0,
            Tier::Batch => 1,
            Tier::BestEffort => 2,
        }
    }
}

impl std::str::FromStr for Tier {
    type Err = String;
    /// # Errors
    /// A message listing the valid names.
    fn from_str(s: &str) -> Result<Tier, String> {
        Tier::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                format!("unknown tier `{s}`; valid names: production, batch, best-effort")
            })
    }
}

/// A job waiting to start: a gang of `tasks` identical tasks of `shape`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
    /// Runtime estimate of what is left to run (user time limit minus kept progress, or an
    /// oracle or predictor), if any.
    pub runtime_estimate: Option<SimDuration>,
    /// Topology constraint of the gang (`None`: the scheduler's default, if any).
    pub topology: Option<TopologySpec>,
    /// Tier; the scheduler sets it from the job's queue at submit.
    pub tier: Tier,
    /// Progress kept from earlier runs (checkpointed work, at reference speed); zero for a job
    /// that never ran or restarts from scratch.
    pub done: SimDuration,
    /// Accelerator-time received in earlier runs, GPU-milli × ms / 1000 (= GPU·ms); Tiresias'
    /// attained service.
    pub attained_gpu_ms: u64,
    /// Checkpoint interval (of progress): on preemption, work since the last multiple of it is
    /// lost. `None`: the job restarts from scratch.
    pub checkpoint_interval: Option<SimDuration>,
    /// The job's tasks take the node's shape (synthetic and trace workloads, whose tasks are
    /// sizes, not pod shapes): in a cell whose largest node of an allowed model has fewer
    /// accelerators than a task, each task is placed as node-sized members of one gang,
    /// kept in the tightest topology level that holds them ([`crate::placement::split`]).
    /// `false` (the default): the tasks are placed as they are.
    #[cfg_attr(feature = "serde", serde(default))]
    pub split: bool,
    /// The LAS queue the job was last demoted into and when (`None`: never demoted, it is in
    /// its first queue since its submit time). The scheduler sets it when a running job's
    /// attained service crosses a threshold (an event of its own: [`crate::Scheduler::next_wake`]);
    /// the `las` order ranks a job within its queue by this entry time, and LAS preemption
    /// takes the newest entrant of the lowest queue first.
    pub las_entered: Option<(usize, SimTime)>,
}

impl PendingJob {
    /// Total GPU-milli of the whole gang (saturating at `u64::MAX`; a gang whose exact total
    /// does not fit is refused at submit, see [`PendingJob::gang_totals`]).
    pub fn total_gpu_milli(&self) -> u64 {
        self.shape
            .total_gpu_milli()
            .saturating_mul(self.tasks as u64)
    }

    /// The whole gang's accelerator-milli, CPU milli-cores and memory MiB (tasks × per-task
    /// request), or `None` when one of them exceeds `u64::MAX`.
    pub fn gang_totals(&self) -> Option<[u64; 3]> {
        let t = self.tasks as u64;
        Some([
            self.shape.total_gpu_milli().checked_mul(t)?,
            self.shape.cpu_milli.checked_mul(t)?,
            self.shape.mem_mib.checked_mul(t)?,
        ])
    }

    /// True when the job may run in `cell`.
    pub fn allows_cell(&self, cell: CellId) -> bool {
        self.cells.is_empty() || self.cells.binary_search(&cell).is_ok()
    }
}

/// Progress a job keeps when a run that reached `total` progress (earlier kept progress plus
/// this run's) is stopped: the last multiple of `checkpoint` (Gandiva/Tiresias-style
/// checkpoint-restart), or nothing without checkpoints.
pub fn kept_progress(total: SimDuration, checkpoint: Option<SimDuration>) -> SimDuration {
    match checkpoint {
        Some(c) if c.0 > 0 => SimDuration(total.0 / c.0 * c.0),
        _ => SimDuration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_keep_whole_intervals() {
        let s = SimDuration::from_secs;
        assert_eq!(kept_progress(s(250), Some(s(100))), s(200));
        assert_eq!(kept_progress(s(99), Some(s(100))), SimDuration::ZERO);
        assert_eq!(kept_progress(s(250), None), SimDuration::ZERO);
        assert_eq!(
            kept_progress(s(250), Some(SimDuration::ZERO)),
            SimDuration::ZERO
        );
        assert_eq!("best-effort".parse::<Tier>(), Ok(Tier::BestEffort));
        assert!("gold".parse::<Tier>().unwrap_err().contains("production"));
        assert!(Tier::Production > Tier::Batch && Tier::Batch > Tier::BestEffort);
    }
}
