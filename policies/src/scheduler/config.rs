//! Per-queue settings and the configuration a [`Scheduler`] is built from.

use super::*;

/// Per-queue settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct QueueConfig {
    /// What the queue does when its head cannot start.
    pub strategy: QueueingStrategy,
    /// Hard maximum of GPU-milli the queue's running jobs may hold (`None` = unlimited).
    pub max_gpu_milli: Option<u64>,
    /// Tier of the queue's jobs.
    pub tier: Tier,
    /// Fair-share weight in thousandths (1000 = weight 1): divides decayed usage
    /// (`decayed-usage`) and is the queue's shares in Slurm's fair-share factor.
    pub weight_milli: u64,
    /// The queue's own preemption rules for its jobs as preemptors (Kueue ClusterQueue
    /// `spec.preemption`); `None`: the scheduler's ([`crate::PreemptionConfig`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub preemption: Option<crate::preemption::QueuePreemption>,
    /// The queue's own flavor fungibility (Kueue ClusterQueue
    /// `spec.flavorFungibility.whenCanBorrow`); `None`: the scheduler's.
    #[cfg_attr(feature = "serde", serde(default))]
    pub fungibility: Option<crate::quota::Fungibility>,
}

impl Default for QueueConfig {
    fn default() -> QueueConfig {
        QueueConfig {
            strategy: QueueingStrategy::default(),
            max_gpu_milli: None,
            tier: Tier::Batch,
            weight_milli: 1000,
            preemption: None,
            fungibility: None,
        }
    }
}

/// The policy choices that make up a scheduler (built from a [`crate::SchedulerSpec`] by
/// [`crate::SchedulerSpec::scheduler_config`]; a policy name converts with `.into()`:
/// `placement: PlacementKind::Fgd.into()`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SchedulerConfig {
    /// Topology constraint of gangs (jobs of more than one task) that carry none; when
    /// `None`, the placement policy's default ([`Placement::default_topology`]).
    pub topology: Option<TopologySpec>,
    /// Queue order.
    pub queue_order: QueueOrderSpec,
    /// Placement.
    pub placement: PlacementSpec,
    /// Cell selection.
    pub cell_selection: CellSelectSpec,
    /// Strategy of queues beyond the queue table passed to [`Scheduler::new`].
    pub queueing_strategy: QueueingStrategy,
}

/// The stages beyond [`SchedulerConfig`]: quota, admission order, preemption, backfill and
/// the pass budget. [`Extensions::default`] turns every one off.
#[derive(Default)]
pub struct Extensions {
    /// A queue-order object of the caller's own (a policy not in [`QueueOrderSpec`]);
    /// replaces [`SchedulerConfig::queue_order`]'s.
    pub order: Option<Box<dyn QueueOrder>>,
    /// A placement object of the caller's own (a policy not in [`PlacementSpec`]); replaces
    /// [`SchedulerConfig::placement`]'s.
    pub placement: Option<Box<dyn Placement>>,
    /// Quotas and cohorts.
    pub quota: Option<QuotaTree>,
    /// Flavor fungibility.
    pub fungibility: Fungibility,
    /// Order across queues.
    pub admission: AdmissionOrder,
    /// Half-life of decayed usage, kept when set (needed by `decayed-usage` and the
    /// multifactor fair-share factor; default there 7 days).
    pub half_life: Option<SimDuration>,
    /// Preemption.
    pub preemption: Option<PreemptionConfig>,
    /// Backfill.
    pub backfill: Option<BackfillConfig>,
    /// Most placement attempts per pass (HTCondor's negotiation budget, field case B07): a
    /// job skipped because its exact requirements already failed costs nothing, so a class of
    /// identical jobs is charged one attempt, not its backlog. `None`: unlimited.
    pub attempt_budget: Option<u64>,
    /// Keep running jobs (needed to requeue jobs lost to node failures); implied by quota,
    /// preemption and backfill.
    pub track_running: bool,
    /// Re-decide every job from an empty fleet at every event in this order (the Tiresias
    /// preemption model, [`crate::scheduler::RedecideOrder`]); replaces the pass.
    pub redecide: Option<super::RedecideOrder>,
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("order", &self.order.as_ref().map(|o| o.name()))
            .field("placement", &self.placement.as_ref().map(|p| p.name()))
            .field("quota", &self.quota.is_some())
            .field("admission", &self.admission)
            .field("preemption", &self.preemption)
            .field("backfill", &self.backfill)
            .field("attempt_budget", &self.attempt_budget)
            .finish()
    }
}

/// Why each pending job could not start in the last pass.
pub type PendingReasons = BTreeMap<JobId, PendingReason>;
