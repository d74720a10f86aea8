//! [`SchedulerSpec`]: the whole configuration of a scheduler as one typed value — the
//! `[policy]` table of a scenario, the file a production service loads, the value a study
//! varies.
//!
//! One field per stage, each an enum whose variants carry their parameters
//! ([`QueueOrderSpec`], [`PlacementSpec`], [`CellSelectSpec`], and the name enums of the
//! stages without parameters: [`QueueingStrategy`], [`AdmissionOrder`], [`Fungibility`],
//! [`BackfillKind`], [`EstimateSource`]), plus the tables of the stages that are on only when
//! given ([`PreemptionSpec`], [`CycleSpec`], [`FairShareSpec`], [`TopologyTable`]). The
//! stage enums in [`crate::registry`] are the only name → policy table; [`SchedulerSpec::STAGES`]
//! lists each stage's names for docs, `validate`, `compare` and error messages.
//!
//! Parameters are kept in the scenario's units (seconds, GPU-seconds, whole accelerators) as
//! written, so that [`SchedulerSpec::validate`] can name the field of a bad value; building
//! converts them to the policy objects' integer units (milliseconds, GPU·ms), rounding to the
//! nearest unit.
//!
//! # Reading one (`serde` feature)
//! Every stage key takes a bare name (`placement = "fgd"`) or a table with a `name` and the
//! policy's parameters (`queue_order = { name = "las", thresholds_gpu_s = [3250, 7200] }`);
//! unknown keys are errors. Written back (serde `Serialize`), a stage with default
//! parameters is a bare name.
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! use fleetsim_policies::spec::SchedulerSpec;
//! use fleetsim_policies::*;
//!
//! // A scenario's `[policy]` table.
//! let spec: SchedulerSpec = toml::from_str(
//!     r#"
//!     queue_order = { name = "las", thresholds_gpu_s = [3250, 7200] }
//!     placement = "best-fit"
//!     backfill = "easy"
//!     [preemption]
//!     las = true
//!     "#,
//! )
//! .unwrap();
//! spec.validate().unwrap();
//! let mut sched = spec.build(vec![QueueConfig::default()], None);
//!
//! // One 8-GPU node; a 4-GPU job starts at once.
//! let node = NodeSpec {
//!     name: "n0".into(),
//!     cell: CellId(0),
//!     block: 0,
//!     domain: 0,
//!     model: Some(ModelId(0)),
//!     gpus: 8,
//!     cpu_milli: 64_000,
//!     mem_mib: 512 * 1024,
//! };
//! let mut fleet = FleetState::new(vec!["c".into()], vec!["H100".into()], vec![node]).unwrap();
//! let job = PendingJob { shape: TaskShape::whole_gpus(4), tasks: 1, ..PendingJob::default() };
//! sched.submit(&mut fleet, job).unwrap();
//! assert!(matches!(sched.schedule(&mut fleet)[..], [Decision::Start { .. }]));
//! # }
//! ```

use crate::backfill::{BackfillConfig, BackfillKind};
use crate::preemption::{
    CapacityPreemption, FairStrategy, PreemptionConfig, ReclaimGuard, ReclaimWithinCohort,
    WithinQueue,
};
use crate::queue_order::Las;
pub use crate::queue_order::MultifactorParams;
use crate::quota::{Fungibility, QuotaTree};
use crate::registry::{
    AdmissionOrder, CellSelectKind, CellSelectSpec, ExpanderKind, PlacementKind, PlacementSpec,
    QueueOrderKind, QueueOrderSpec, QueueingStrategy,
};
use crate::scheduler::{Extensions, QueueConfig, Scheduler, SchedulerConfig};
use crate::time::SimDuration;
use crate::topology::{Level, RayStrategy, TopologyMode, TopologySpec};

named_enum!(
    /// Where runtime estimates come from (for SJF/SRTF and backfill).
    EstimateSource {
        /// The job's time limit (none: no estimate).
        #[default]
        User => "user",
        /// The job's true run time.
        Oracle => "oracle",
    }
);

named_enum!(
    /// How preemption decides (`[policy] preemption_model`).
    PreemptionModel {
        /// fleetsim's own: a pass starts pending jobs and preempts only through the
        /// `[policy.preemption]` rules.
        #[default]
        Fleetsim => "fleetsim",
        /// The Tiresias simulator's (compatibility switch): at every arrival, completion or
        /// LAS demotion wake-up, every job is re-decided from an empty fleet in the queue
        /// order (`fifo`, `sjf` = fewest GPUs first as the peer's `sjf`, `srtf` = preemptive
        /// shortest remaining time, `las` = the peer's `dlas-gpu`), preemption free (no
        /// grace, progress kept). See [`crate::scheduler::RedecideOrder`].
        Tiresias => "tiresias",
    }
);

named_enum!(
    /// What a gang does when a node holding some of its members fails (`[policy]
    /// gang_recovery`). Applies to jobs of more than one task hit by a node failure and
    /// not moved onto a hot spare; maintenance evictions always restart.
    GangRecovery {
        /// The whole gang is stopped and requeued (every member released after the
        /// termination grace), restarting from its last checkpoint when it fits again.
        #[default]
        Restart => "restart",
        /// Volcano `minAvailable` / Kueue `waitForPodsReady` recovery: the surviving members
        /// stay bound with progress paused (the run stops at its last checkpoint), the
        /// members on the failed node are released at once, and the missing ones are
        /// placed ahead of pending jobs of equal or lower priority; when the gang is whole
        /// again it resumes from the checkpoint (restart overhead paid). The survivors'
        /// accelerator-time while paused is its own account, *held by incomplete gangs*.
        KeepSurvivors => "keep_survivors",
    }
);

#[cfg(feature = "serde")]
fn is_least_waste(e: &ExpanderKind) -> bool {
    *e == ExpanderKind::LeastWaste
}

#[cfg(feature = "serde")]
fn is_restart(g: &GangRecovery) -> bool {
    *g == GangRecovery::Restart
}

#[cfg(feature = "serde")]
fn is_fleetsim_model(m: &PreemptionModel) -> bool {
    *m == PreemptionModel::Fleetsim
}

/// A whole scheduler: every stage's policy and parameters. See the module docs.
///
/// Units: fields ending in `_s` are seconds (rounded to the nearest millisecond when built);
/// LAS thresholds are GPU-seconds.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct SchedulerSpec {
    /// Queue order ([`QueueOrderSpec`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub queue_order: QueueOrderSpec,
    /// Default queueing strategy: `strict-fifo` or `best-effort-fifo`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub queueing_strategy: QueueingStrategy,
    /// Placement ([`PlacementSpec`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub placement: PlacementSpec,
    /// Cell selection ([`CellSelectSpec`]): `first-fit` (MultiKueue's first admitting
    /// cell), `least-loaded`, `best-fit-gang` or `quota-aware`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub cell_selection: CellSelectSpec,
    /// Dispatch latency of the global level, seconds: a job joins the queues this long after
    /// submission (default 0; the engine applies it).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub dispatch_latency_s: Option<f64>,
    /// Order across queues: `queue-order` (default), `nominal-first`, `drf`,
    /// `decayed-usage`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub admission_order: AdmissionOrder,
    /// `borrow` (default: borrow in the first flavor with room) or `try-next-flavor` (prefer
    /// a later flavor with room within nominal quota) — Kueue `whenCanBorrow`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub flavor_fungibility: Fungibility,
    /// `none` (default), `easy` or `conservative`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub backfill: BackfillKind,
    /// Conservative backfill: most reservations per pass (default 100).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub backfill_depth: Option<u32>,
    /// Runtime estimates for SJF/SRTF and backfill: `user` (the job's time limit; default)
    /// or `oracle` (its true run time). The engine fills the estimates.
    #[cfg_attr(feature = "serde", serde(default))]
    pub runtime_estimate: EstimateSource,
    /// Tiresias LAS queues shared by the `las` queue order (unless it names its own
    /// thresholds) and LAS preemption.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub las: Option<LasSpec>,
    /// Slurm multifactor weights for `queue_order = "multifactor"` (the same as giving them
    /// in the `queue_order` table; give them in one place).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub multifactor: Option<MultifactorParams>,
    /// Decayed usage (for `decayed-usage` and the multifactor fair-share factor).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub fair_share: Option<FairShareSpec>,
    /// Preemption (none when absent).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub preemption: Option<PreemptionSpec>,
    /// The scheduling cycle: retries and budget.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub cycle: Option<CycleSpec>,
    /// Topology constraint given to every gang (job of more than one task).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub topology: Option<TopologyTable>,
    /// [`PreemptionModel`]: `fleetsim` (default) or `tiresias`.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "is_fleetsim_model")
    )]
    pub preemption_model: PreemptionModel,
    /// [`GangRecovery`]: `restart` (default) or `keep_survivors`.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "is_restart"))]
    pub gang_recovery: GangRecovery,
    /// The autoscaler's expander ([`crate::autoscale`]): `least-waste` (default), `price` or
    /// `priority`; read only when a cell has `[[fleet.cells.autoscaling]]` groups.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "is_least_waste")
    )]
    pub autoscaler_expander: ExpanderKind,
    /// Kueue's `waitForPodsReady` ([`WaitForPodsReadySpec`]): a job admitted whose tasks are
    /// not all running within a timeout is evicted and requeued after a backoff. The
    /// engine applies it; absent, a job admitted waits for its nodes as long as it takes.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub wait_for_pods_ready: Option<WaitForPodsReadySpec>,
}

/// A stage key of [`SchedulerSpec`] that takes a policy name, with the names it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    /// The `[policy]` key.
    pub field: &'static str,
    /// The names it accepts, in declaration order.
    pub names: &'static [&'static str],
}

impl SchedulerSpec {
    /// Every key that takes a policy name, in field order.
    pub const STAGES: &'static [Stage] = &[
        Stage {
            field: "queue_order",
            names: QueueOrderKind::NAMES,
        },
        Stage {
            field: "queueing_strategy",
            names: QueueingStrategy::NAMES,
        },
        Stage {
            field: "placement",
            names: PlacementKind::NAMES,
        },
        Stage {
            field: "cell_selection",
            names: CellSelectKind::NAMES,
        },
        Stage {
            field: "admission_order",
            names: AdmissionOrder::NAMES,
        },
        Stage {
            field: "flavor_fungibility",
            names: Fungibility::NAMES,
        },
        Stage {
            field: "backfill",
            names: BackfillKind::NAMES,
        },
        Stage {
            field: "runtime_estimate",
            names: EstimateSource::NAMES,
        },
        Stage {
            field: "gang_recovery",
            names: GangRecovery::NAMES,
        },
        Stage {
            field: "autoscaler_expander",
            names: ExpanderKind::NAMES,
        },
    ];

    /// The stage keys that accept `name` (several for names such as `first-fit`, which is
    /// both a placement and a cell selection).
    pub fn stages_accepting(name: &str) -> Vec<&'static str> {
        Self::STAGES
            .iter()
            .filter(|s| s.names.contains(&name))
            .map(|s| s.field)
            .collect()
    }

    /// Checks every numeric setting.
    ///
    /// # Errors
    /// [`SpecError`] naming the first bad field (dotted, relative to the table:
    /// `preemption.grace_s`, `las.thresholds_gpu_s[1]`): a time that is negative or not a
    /// number, an interval or half-life that is not positive (or, for the checkpoint, retry
    /// and recalculation intervals and the fair-share half-life, rounds to 0 ms), a time
    /// above `u64::MAX` ms, LAS thresholds that are empty or not strictly ascending, LAS thresholds or multifactor weights given both in
    /// `queue_order` and in their own table, a depth or budget of 0, or a topology with
    /// both `required` and `preferred`.
    pub fn validate(&self) -> Result<(), SpecError> {
        if let Some(t) = &self.topology {
            if t.required.is_some() && t.preferred.is_some() {
                return Err(SpecError::new(
                    "topology",
                    "give at most one of `required` and `preferred`",
                ));
            }
            if t.slice_size == Some(0) {
                return Err(SpecError::new("topology.slice_size", "must be ≥ 1"));
            }
        }
        if let Some(las) = &self.las {
            check_thresholds("las.thresholds_gpu_s", &las.thresholds_gpu_s)?;
        }
        match &self.queue_order {
            QueueOrderSpec::Las {
                thresholds_gpu_s: Some(t),
            } => {
                check_thresholds("queue_order.thresholds_gpu_s", t)?;
                if self.las.is_some() {
                    return Err(SpecError::new(
                        "queue_order.thresholds_gpu_s",
                        "LAS thresholds are given twice: here and in `[policy.las]`; give them once",
                    ));
                }
            }
            QueueOrderSpec::Multifactor(m) => {
                check_multifactor("queue_order", m)?;
                if *m != MultifactorParams::default() && self.multifactor.is_some() {
                    return Err(SpecError::new(
                        "queue_order",
                        "multifactor weights are given twice: here and in `[policy.multifactor]`; give them once",
                    ));
                }
            }
            _ => {}
        }
        if let Some(m) = &self.multifactor {
            check_multifactor("multifactor", m)?;
        }
        if let Some(f) = &self.fair_share {
            positive_ms("fair_share.half_life_s", f.half_life_s)?;
        }
        if let Some(pr) = &self.preemption {
            non_negative("preemption.grace_s", pr.grace_s)?;
            if pr.victim_cap == Some(0) {
                // Rule P4 is what bounds every preemption cycle; it cannot be switched off.
                return Err(SpecError::new(
                    "preemption.victim_cap",
                    "must be at least 1 (it bounds preemption cycles; see the preemption docs)",
                ));
            }
            if let Some(c) = pr.checkpoint_interval_s {
                positive_ms("preemption.checkpoint_interval_s", c)?;
            }
        }
        if let Some(w) = &self.wait_for_pods_ready {
            positive_ms("wait_for_pods_ready.timeout_s", w.timeout_s)?;
            if let Some(v) = w.backoff_base_s {
                non_negative("wait_for_pods_ready.backoff_base_s", v)?;
            }
            if let Some(v) = w.backoff_max_s {
                non_negative("wait_for_pods_ready.backoff_max_s", v)?;
            }
            if w.block_admission == Some(true) {
                return Err(SpecError::new(
                    "wait_for_pods_ready.block_admission",
                    "`true` (no other job admitted while one waits for its pods) is not simulated; give `false` or leave it out",
                ));
            }
        }
        if let Some(c) = &self.cycle {
            if let Some(v) = c.retry_interval_s {
                positive_ms("cycle.retry_interval_s", v)?;
            }
            if let Some(v) = c.round_s {
                positive("cycle.round_s", v)?;
            }
            if c.attempt_budget == Some(0) {
                return Err(SpecError::new("cycle.attempt_budget", "must be at least 1"));
            }
        }
        if self.backfill_depth == Some(0) {
            return Err(SpecError::new("backfill_depth", "must be at least 1"));
        }
        if self.preemption_model == PreemptionModel::Tiresias {
            if self.redecide_order().is_none() {
                return Err(SpecError::new(
                    "queue_order",
                    format!(
                        "preemption_model = \"tiresias\" takes queue_order fifo, sjf, srtf or las, not `{}`",
                        self.queue_order.kind().as_str()
                    ),
                ));
            }
            if self.preemption.is_some() || self.backfill != BackfillKind::None {
                return Err(SpecError::new(
                    "preemption_model",
                    "the tiresias model re-decides every job itself: give no [policy.preemption] and no backfill",
                ));
            }
        }
        Ok(())
    }

    /// The Tiresias model's order ([`PreemptionModel::Tiresias`]), `None` for a queue order
    /// it does not take.
    pub fn redecide_order(&self) -> Option<crate::scheduler::RedecideOrder> {
        use crate::scheduler::RedecideOrder as R;
        Some(match &self.queue_order {
            QueueOrderSpec::Fifo {} => R::Arrival,
            QueueOrderSpec::Sjf {} => R::FewestGpus,
            QueueOrderSpec::Srtf {} => R::Remaining,
            QueueOrderSpec::Las { .. } => {
                let l = match self.resolved_queue_order() {
                    QueueOrderSpec::Las {
                        thresholds_gpu_s: Some(t),
                    } => Las::from_gpu_s(&t),
                    _ => Las::default(),
                };
                R::Las(l.thresholds_gpu_ms)
            }
            _ => return None,
        })
    }

    /// The LAS queues: `[policy.las]`'s thresholds, else the `las` queue order's, else
    /// Tiresias' default (used by LAS preemption; the `las` order uses its own first).
    pub fn las_queues(&self) -> Las {
        match (&self.las, &self.queue_order) {
            (Some(l), _) => Las::from_gpu_s(&l.thresholds_gpu_s),
            (
                None,
                QueueOrderSpec::Las {
                    thresholds_gpu_s: Some(t),
                },
            ) => Las::from_gpu_s(t),
            _ => Las::default(),
        }
    }

    /// The queue order with parameters from the shared tables filled in: a `las` order
    /// without thresholds takes `[policy.las]`'s, a `multifactor` order without weights
    /// `[policy.multifactor]`'s.
    pub fn resolved_queue_order(&self) -> QueueOrderSpec {
        match &self.queue_order {
            QueueOrderSpec::Las {
                thresholds_gpu_s: None,
            } => QueueOrderSpec::Las {
                thresholds_gpu_s: self.las.as_ref().map(|l| l.thresholds_gpu_s.clone()),
            },
            QueueOrderSpec::Multifactor(m) if *m == MultifactorParams::default() => {
                QueueOrderSpec::Multifactor(self.multifactor.clone().unwrap_or_default())
            }
            o => o.clone(),
        }
    }

    /// The stage choices [`Scheduler::new`] takes.
    pub fn scheduler_config(&self) -> SchedulerConfig {
        SchedulerConfig {
            topology: self.topology.as_ref().map(TopologyTable::to_spec),
            queue_order: self.resolved_queue_order(),
            placement: self.placement.clone(),
            cell_selection: self.cell_selection.clone(),
            queueing_strategy: self.queueing_strategy,
        }
    }

    /// The preemption rules, with the LAS queues of [`SchedulerSpec::las_queues`].
    pub fn preemption_config(&self) -> Option<PreemptionConfig> {
        self.preemption.as_ref().map(|pr| PreemptionConfig {
            within_queue: pr.within_queue,
            reclaim_within_cohort: pr.reclaim_within_cohort,
            fair_sharing: pr.fair_sharing.clone(),
            capacity: pr.capacity,
            tiers: pr.tiers,
            las: pr.las.then(|| self.las_queues()),
            grace: SimDuration(secs_to_ms(pr.grace_s)),
            reclaim_guard: pr.reclaim_guard,
            victim_cap: pr
                .victim_cap
                .unwrap_or(crate::preemption::DEFAULT_VICTIM_CAP),
            borrow_within_cohort: Default::default(),
            fair_sharing_needs_reclaim: false,
        })
    }

    /// The stages beyond [`SchedulerConfig`], with `quota` (built from the queues and
    /// cohorts, which name the fleet's accelerator models).
    pub fn extensions(&self, quota: Option<QuotaTree>) -> Extensions {
        Extensions {
            order: None,
            placement: None,
            quota,
            fungibility: self.flavor_fungibility,
            admission: self.admission_order,
            half_life: self
                .fair_share
                .as_ref()
                .map(|f| SimDuration(secs_to_ms(f.half_life_s))),
            preemption: self.preemption_config(),
            backfill: BackfillConfig::of(
                self.backfill,
                self.backfill_depth.unwrap_or(100) as usize,
            ),
            attempt_budget: self.cycle.as_ref().and_then(|c| c.attempt_budget),
            track_running: false,
            redecide: (self.preemption_model == PreemptionModel::Tiresias)
                .then(|| self.redecide_order())
                .flatten(),
        }
    }

    /// The scheduler: [`Scheduler::new`] with [`SchedulerSpec::scheduler_config`] and
    /// `queues` (indexed by [`crate::QueueId`]), then [`SchedulerSpec::extensions`] with
    /// `quota`. Call [`SchedulerSpec::validate`] first: an unchecked negative time builds as
    /// 0 ms.
    pub fn build(&self, queues: Vec<QueueConfig>, quota: Option<QuotaTree>) -> Scheduler {
        Scheduler::new(self.scheduler_config(), queues).with(self.extensions(quota))
    }

    /// Each stage's chosen name, by `[policy]` key (what `summary.json` reports under
    /// `policy`), plus `preemption` ([`PreemptionSpec::describe`]) when on.
    pub fn describe(&self) -> std::collections::BTreeMap<String, String> {
        let mut out: std::collections::BTreeMap<String, String> = [
            ("queue_order", self.queue_order.kind().as_str()),
            ("queueing_strategy", self.queueing_strategy.as_str()),
            ("placement", self.placement.kind().as_str()),
            ("cell_selection", self.cell_selection.kind().as_str()),
            ("admission_order", self.admission_order.as_str()),
            ("backfill", self.backfill.as_str()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        if let Some(pr) = &self.preemption {
            out.insert("preemption".into(), pr.describe());
        }
        out
    }

    /// The run's checkpoint interval (victims and failed jobs restart from their last
    /// checkpoint), if any.
    pub fn checkpoint_interval(&self) -> Option<SimDuration> {
        if self.preemption_model == PreemptionModel::Tiresias {
            // Free preemption: progress is kept to the millisecond.
            return Some(SimDuration(1));
        }
        self.preemption
            .as_ref()
            .and_then(|p| p.checkpoint_interval_s)
            .map(|v| SimDuration(secs_to_ms(v)))
    }

    /// The periodic pass interval while jobs are pending, if any.
    pub fn retry_interval(&self) -> Option<SimDuration> {
        self.cycle
            .as_ref()
            .and_then(|c| c.retry_interval_s)
            .map(|v| SimDuration(secs_to_ms(v)))
    }

    /// The round length of a round-based cadence ([`CycleSpec::round_s`]), if any; at
    /// least 1 ms (a `round_s` below half a millisecond rounds to 1 ms).
    pub fn round(&self) -> Option<SimDuration> {
        self.cycle
            .as_ref()
            .and_then(|c| c.round_s)
            .map(|v| SimDuration(secs_to_ms(v).max(1)))
    }
}

/// A bad value in a [`SchedulerSpec`]: fatal, the scheduler is not built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The dotted field, relative to the spec (`preemption.grace_s`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl SpecError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> SpecError {
        SpecError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for SpecError {}

/// The longest time a spec can give, seconds: `u64::MAX` milliseconds, about 585 million
/// years. A longer one would be cut to it silently when converted.
const MAX_TIME_S: f64 = u64::MAX as f64 / 1000.0;

fn positive(field: &str, v: f64) -> Result<(), SpecError> {
    time_s(field, v, v > 0.0, "> 0")
}

/// [`positive`], and at least 1 ms once rounded to milliseconds: an interval that rounds
/// to 0 ms would mean "never" (a checkpoint interval) or a loop (a retry interval).
fn positive_ms(field: &str, v: f64) -> Result<(), SpecError> {
    positive(field, v)?;
    if secs_to_ms(v) == 0 {
        return Err(SpecError::new(
            field,
            format!("must be at least 1 ms (0.0005 s rounds up to it), got {v}"),
        ));
    }
    Ok(())
}

fn non_negative(field: &str, v: f64) -> Result<(), SpecError> {
    time_s(field, v, v >= 0.0, "≥ 0")
}

/// A time in seconds: finite, `sign_ok` (described by `bound`), at most [`MAX_TIME_S`].
fn time_s(field: &str, v: f64, sign_ok: bool, bound: &str) -> Result<(), SpecError> {
    if !(v.is_finite() && sign_ok) {
        return Err(SpecError::new(
            field,
            format!("must be a number {bound}, got {v}"),
        ));
    }
    if v > MAX_TIME_S {
        return Err(SpecError::new(
            field,
            format!(
                "must be at most {MAX_TIME_S:.0} s (the largest time in milliseconds), got {v:e}"
            ),
        ));
    }
    Ok(())
}

fn check_thresholds(field: &str, t: &[f64]) -> Result<(), SpecError> {
    if t.is_empty() {
        return Err(SpecError::new(field, "needs at least one threshold"));
    }
    for (i, &v) in t.iter().enumerate() {
        positive(&format!("{field}[{i}]"), v)?;
        if i > 0 && v <= t[i - 1] {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                "thresholds must be strictly ascending",
            ));
        }
    }
    Ok(())
}

fn check_multifactor(at: &str, m: &MultifactorParams) -> Result<(), SpecError> {
    if let Some(v) = m.max_age_s {
        positive(&format!("{at}.max_age_s"), v)?;
    }
    if let Some(v) = m.recalc_interval_s {
        positive_ms(&format!("{at}.recalc_interval_s"), v)?;
    }
    Ok(())
}

/// Seconds (as written) to milliseconds, rounding half away from zero; negative and NaN
/// give 0 (rejected earlier by [`SchedulerSpec::validate`]).
pub fn secs_to_ms(s: f64) -> u64 {
    SimDuration::from_secs_f64_rounded(s).0
}

/// `[policy.las]`: Tiresias LAS queues.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct LasSpec {
    /// Ascending attained-service thresholds, GPU-seconds (default `[3200]`).
    pub thresholds_gpu_s: Vec<f64>,
}

/// `[policy.fair_share]`: decayed usage.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct FairShareSpec {
    /// Half-life, seconds (Slurm `PriorityDecayHalfLife`; default 7 days).
    pub half_life_s: f64,
}

/// `[policy.preemption]`: the preemption rules (see [`crate::preemption`]).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct PreemptionSpec {
    /// `never` (default), `lower-priority`, `lower-or-newer-equal-priority`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub within_queue: WithinQueue,
    /// `never` (default), `lower-priority`, `any`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub reclaim_within_cohort: ReclaimWithinCohort,
    /// Kueue fair-sharing strategies, tried in order (e.g.
    /// `["less-than-or-equal-to-final-share", "less-than-initial-share"]`); empty: none.
    #[cfg_attr(feature = "serde", serde(default))]
    pub fair_sharing: Vec<FairStrategy>,
    /// Cluster-wide priority preemption for capacity: `never` (default), `lower-priority`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub capacity: CapacityPreemption,
    /// Higher tiers preempt lower ones (best-effort first).
    #[cfg_attr(feature = "serde", serde(default))]
    pub tiers: bool,
    /// Tiresias: preempt jobs in lower LAS queues ([`SchedulerSpec::las_queues`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub las: bool,
    /// Termination grace of victims, seconds (default 0).
    #[cfg_attr(feature = "serde", serde(default))]
    pub grace_s: f64,
    /// The over-reclaim guard: `nominal` (default: a reclaim or fair-sharing victim never
    /// takes its queue below its nominal quota; YuniKorn, Volcano) or `off` (Kueue).
    #[cfg_attr(feature = "serde", serde(default))]
    pub reclaim_guard: ReclaimGuard,
    /// Rule P4 (loop freedom): a job is preempted at most this many times between two job
    /// completions anywhere in the fleet (default 3, at least 1).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub victim_cap: Option<u32>,
    /// Jobs checkpoint every this many seconds of progress; a victim restarts from its last
    /// checkpoint (default: none, from scratch).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub checkpoint_interval_s: Option<f64>,
}

impl PreemptionSpec {
    /// A one-line description of the rules that are on, for reports, e.g.
    /// `reclaim=any fair_sharing=less-than-or-equal-to-final-share grace=30s`; `none` when
    /// no rule is on.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.within_queue != WithinQueue::Never {
            parts.push(format!("within_queue={}", self.within_queue));
        }
        if self.reclaim_within_cohort != ReclaimWithinCohort::Never {
            parts.push(format!("reclaim={}", self.reclaim_within_cohort));
        }
        if !self.fair_sharing.is_empty() {
            let s: Vec<&str> = self.fair_sharing.iter().map(|f| f.as_str()).collect();
            parts.push(format!("fair_sharing={}", s.join("+")));
        }
        if self.capacity != CapacityPreemption::Never {
            parts.push(format!("capacity={}", self.capacity));
        }
        if self.tiers {
            parts.push("tiers".into());
        }
        if self.las {
            parts.push("las".into());
        }
        if self.reclaim_guard != ReclaimGuard::Nominal {
            parts.push(format!("reclaim_guard={}", self.reclaim_guard));
        }
        if let Some(c) = self.victim_cap {
            parts.push(format!("victim_cap={c}"));
        }
        if self.grace_s > 0.0 {
            parts.push(format!("grace={}s", self.grace_s));
        }
        if let Some(c) = self.checkpoint_interval_s {
            parts.push(format!("checkpoint={c}s"));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(" ")
        }
    }
}

/// `[policy.cycle]`: the scheduling cycle.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct CycleSpec {
    /// While jobs are pending, also run a pass this often, seconds.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub retry_interval_s: Option<f64>,
    /// Most placement attempts per pass (a class of identical jobs costs one).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub attempt_budget: Option<u64>,
    /// Round-based cadence (Gavel's rounds, Xiao et al. OSDI'20 §5; a production
    /// scheduler's fixed loop period), seconds: scheduling passes (starts, preemptions)
    /// run only at instants `t = k · round_s`, while arrivals and completions keep their
    /// exact times. A change between boundaries is acted on at the next boundary; the
    /// scheduler's own wake-ups and `retry_interval_s` passes are rounded up to a boundary.
    /// Absent (default): a pass at every instant where something changed.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub round_s: Option<f64>,
}

/// `[policy] wait_for_pods_ready`: Kueue's `waitForPodsReady` with its
/// `requeuingStrategy` (the engine's `pods_ready` part simulates it). Seconds.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct WaitForPodsReadySpec {
    /// Time from admission within which every task must be running, seconds (> 0; Kueue
    /// `timeout`).
    pub timeout_s: f64,
    /// Requeue backoff after the first eviction, seconds (≥ 0; default 60, Kueue
    /// `backoffBaseSeconds`); the `n`-th eviction waits `backoff_base_s × 2^(n−1)`.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub backoff_base_s: Option<f64>,
    /// Longest requeue backoff, seconds (≥ 0; default 3600, Kueue `backoffMaxSeconds`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub backoff_max_s: Option<f64>,
    /// Requeues allowed (Kueue `backoffLimitCount`): the eviction after this many requeues
    /// deactivates the job (it ends not run). Absent: requeued without end.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub backoff_limit_count: Option<u32>,
    /// Kueue `blockAdmission`: only `false` (the default) is simulated; `true` (no other
    /// job admitted while one waits for its pods) is refused.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub block_admission: Option<bool>,
}

impl WaitForPodsReadySpec {
    /// Kueue's default `backoffBaseSeconds`.
    pub const DEFAULT_BACKOFF_BASE_S: f64 = 60.0;
    /// Kueue's default `backoffMaxSeconds`.
    pub const DEFAULT_BACKOFF_MAX_S: f64 = 3600.0;
}

/// `[policy.topology]`: a gang topology constraint (see [`crate::topology`]). Levels:
/// `node`, `domain` (NVLink domain / rack), `block`, `cell`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct TopologyTable {
    /// All tasks inside one group of this level, or the gang waits (Kueue
    /// `podset-required-topology`, Volcano `hard`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub required: Option<Level>,
    /// As few groups of this level as possible (Kueue `podset-preferred-topology`, Volcano
    /// `soft`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub preferred: Option<Level>,
    /// Cut gangs into slices of this many tasks, each inside one group of `slice_level`
    /// (Kueue `podset-slice-size`, Slurm `--segment`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub slice_size: Option<u32>,
    /// The level a slice stays in (default `domain`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub slice_level: Option<Level>,
    /// A Ray placement-group strategy: `PACK`, `SPREAD`, `STRICT_PACK`, `STRICT_SPREAD`.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub ray_strategy: Option<RayStrategy>,
}

impl TopologyTable {
    /// The policy crate's constraint.
    pub fn to_spec(&self) -> TopologySpec {
        let (level, mode) = match (self.required, self.preferred) {
            (Some(l), _) => (Some(l), TopologyMode::Required),
            (None, Some(l)) => (Some(l), TopologyMode::Preferred),
            (None, None) => (None, TopologyMode::Preferred),
        };
        TopologySpec {
            level,
            mode,
            slice_size: self.slice_size,
            slice_level: self.slice_level.unwrap_or(Level::Domain),
            ray: self.ray_strategy,
        }
    }
}

#[cfg(feature = "serde")]
mod serde_impls;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_list_every_name_once_per_stage() {
        assert_eq!(
            SchedulerSpec::stages_accepting("first-fit"),
            ["placement", "cell_selection"]
        );
        assert_eq!(SchedulerSpec::stages_accepting("fgd"), ["placement"]);
        assert_eq!(SchedulerSpec::stages_accepting("drf"), ["admission_order"]);
        assert!(SchedulerSpec::stages_accepting("bestfit").is_empty());
    }

    #[test]
    fn wait_for_pods_ready_settings_are_checked_by_field() {
        let with = |w: WaitForPodsReadySpec| SchedulerSpec {
            wait_for_pods_ready: Some(w),
            ..SchedulerSpec::default()
        };
        let ok = WaitForPodsReadySpec {
            timeout_s: 300.0,
            ..WaitForPodsReadySpec::default()
        };
        assert!(with(ok.clone()).validate().is_ok());
        for (w, field) in [
            (
                WaitForPodsReadySpec {
                    timeout_s: 0.0,
                    ..ok.clone()
                },
                "wait_for_pods_ready.timeout_s",
            ),
            (
                WaitForPodsReadySpec {
                    backoff_max_s: Some(f64::NAN),
                    ..ok.clone()
                },
                "wait_for_pods_ready.backoff_max_s",
            ),
            (
                WaitForPodsReadySpec {
                    block_admission: Some(true),
                    ..ok.clone()
                },
                "wait_for_pods_ready.block_admission",
            ),
        ] {
            assert_eq!(with(w).validate().unwrap_err().field, field);
        }
        let off = WaitForPodsReadySpec {
            block_admission: Some(false),
            ..ok
        };
        assert!(with(off).validate().is_ok());
    }

    #[test]
    fn validate_names_the_field() {
        let mut s = SchedulerSpec {
            queue_order: QueueOrderSpec::Las {
                thresholds_gpu_s: Some(vec![10.0, 5.0]),
            },
            ..SchedulerSpec::default()
        };
        let e = s.validate().unwrap_err();
        assert_eq!(e.field, "queue_order.thresholds_gpu_s[1]");
        s.queue_order = QueueOrderSpec::Las {
            thresholds_gpu_s: Some(vec![10.0]),
        };
        s.las = Some(LasSpec {
            thresholds_gpu_s: vec![20.0],
        });
        assert_eq!(
            s.validate().unwrap_err().field,
            "queue_order.thresholds_gpu_s"
        );
        s.queue_order = QueueOrderSpec::Fifo {};
        s.preemption = Some(PreemptionSpec {
            grace_s: -1.0,
            ..PreemptionSpec::default()
        });
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "`preemption.grace_s`: must be a number ≥ 0, got -1"
        );
        s.preemption = Some(PreemptionSpec {
            grace_s: f64::INFINITY,
            ..PreemptionSpec::default()
        });
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "`preemption.grace_s`: must be a number ≥ 0, got inf"
        );
        // An interval that rounds to 0 ms would mean no checkpoint at all: refused.
        s.preemption = Some(PreemptionSpec {
            checkpoint_interval_s: Some(0.0001),
            ..PreemptionSpec::default()
        });
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "`preemption.checkpoint_interval_s`: must be at least 1 ms (0.0005 s rounds up to it), got 0.0001"
        );
        s.preemption = Some(PreemptionSpec {
            checkpoint_interval_s: Some(0.0005),
            ..PreemptionSpec::default()
        });
        assert!(s.validate().is_ok());
        // A time beyond u64 milliseconds would be cut silently: refused, naming the limit.
        s.preemption = Some(PreemptionSpec {
            checkpoint_interval_s: Some(1e300),
            ..PreemptionSpec::default()
        });
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "`preemption.checkpoint_interval_s`: must be at most 18446744073709552 s \
             (the largest time in milliseconds), got 1e300"
        );
        s.preemption = Some(PreemptionSpec {
            checkpoint_interval_s: Some(MAX_TIME_S),
            ..PreemptionSpec::default()
        });
        assert!(s.validate().is_ok());
        // Rule P4 bounds every preemption cycle: it cannot be switched off.
        s.preemption = Some(PreemptionSpec {
            victim_cap: Some(0),
            ..PreemptionSpec::default()
        });
        assert_eq!(s.validate().unwrap_err().field, "preemption.victim_cap");
        s.preemption = Some(PreemptionSpec::default());
        assert!(s.validate().is_ok());
        assert_eq!(
            s.preemption_config().unwrap().victim_cap,
            crate::preemption::DEFAULT_VICTIM_CAP
        );
    }

    #[test]
    fn las_thresholds_resolve_inline_then_table_then_default() {
        // Inline: 3.25 GPU-s = 3,250 GPU·ms.
        let inline = SchedulerSpec {
            queue_order: QueueOrderSpec::Las {
                thresholds_gpu_s: Some(vec![3.25]),
            },
            preemption: Some(PreemptionSpec {
                las: true,
                ..PreemptionSpec::default()
            }),
            ..SchedulerSpec::default()
        };
        assert_eq!(inline.las_queues().thresholds_gpu_ms, [3_250]);
        assert_eq!(
            inline
                .preemption_config()
                .unwrap()
                .las
                .unwrap()
                .thresholds_gpu_ms,
            [3_250]
        );
        // The shared table fills a bare `las` order.
        let table = SchedulerSpec {
            queue_order: QueueOrderKind::Las.into(),
            las: Some(LasSpec {
                thresholds_gpu_s: vec![1.0, 2.0],
            }),
            ..SchedulerSpec::default()
        };
        assert_eq!(
            table.resolved_queue_order(),
            QueueOrderSpec::Las {
                thresholds_gpu_s: Some(vec![1.0, 2.0])
            }
        );
        assert_eq!(
            SchedulerSpec::default().las_queues(),
            Las::default(),
            "Tiresias' 3,200 GPU-s"
        );
    }
}
