//! The name → policy table of each stage: the names scenarios, studies and production
//! services use, and the policy object each builds. The stages' own modules do not know
//! their names' table; [`crate::spec::SchedulerSpec`] reads these.

use crate::cell_select::{BestFitCell, CellSelect, FirstCell, LeastLoaded, QuotaAware};
use crate::placement::{
    BestFit, DotProd, Fgd, FgdBestFit, FirstFit, GpuClustering, GpuPacking, Placement, RandomFit,
    TopologyAware, WorstFit,
};
use crate::queue_order::{Fifo, Las, Priority, QueueOrder, Sjf, Srtf};

named_enum!(
    /// An elastic sizing policy by name ([`crate::elastic::plan_sizes`]).
    ElasticKind {
        /// Start at `min`, grow into idle GPUs up to `max`, shrink toward `min` for others.
        #[default]
        GrowIdle => "grow-idle",
        /// Start and stay at `min` (the rigid baseline).
        Fixed => "fixed",
    }
);

named_enum!(
    /// A queue-order policy by name.
    QueueOrderKind {
        /// [`Fifo`].
        #[default]
        Fifo => "fifo",
        /// [`Priority`].
        Priority => "priority",
        /// [`Sjf`].
        Sjf => "sjf",
        /// [`Srtf`].
        Srtf => "srtf",
        /// [`Las`] (Tiresias 2D-LAS).
        Las => "las",
        /// [`Multifactor`](crate::queue_order::Multifactor) (Slurm).
        Multifactor => "multifactor",
    }
);

named_enum!(
    /// What a queue does when its head cannot start (Kueue `queueingStrategy`).
    QueueingStrategy {
        /// The head blocks later jobs of its own queue.
        #[default]
        StrictFifo => "strict-fifo",
        /// Later jobs are tried past a blocked head.
        BestEffortFifo => "best-effort-fifo",
    }
);

named_enum!(
    /// A placement policy by name.
    PlacementKind {
        /// [`FirstFit`].
        FirstFit => "first-fit",
        /// [`BestFit`].
        #[default]
        BestFit => "best-fit",
        /// [`WorstFit`].
        WorstFit => "worst-fit",
        /// [`RandomFit`].
        Random => "random",
        /// [`DotProd`].
        DotProd => "dot-prod",
        /// [`GpuClustering`].
        GpuClustering => "gpu-clustering",
        /// [`GpuPacking`].
        GpuPacking => "gpu-packing",
        /// [`FgdBestFit`].
        FgdBestFit => "fgd-best-fit",
        /// [`Fgd`].
        Fgd => "fgd",
        /// [`TopologyAware`].
        TopologyAware => "topology-aware",
    }
);

named_enum!(
    /// A cell-selection policy by name.
    CellSelectKind {
        /// [`FirstCell`].
        #[default]
        FirstFit => "first-fit",
        /// [`LeastLoaded`].
        LeastLoaded => "least-loaded",
        /// [`BestFitCell`].
        BestFit => "best-fit-gang",
        /// [`QuotaAware`].
        QuotaAware => "quota-aware",
    }
);

named_enum!(
    /// How jobs of different queues are ordered in a pass (the admission stage's order).
    AdmissionOrder {
        /// By the queue order's keys alone.
        #[default]
        QueueOrder => "queue-order",
        /// Jobs that fit within their queue's nominal quota before jobs that would borrow,
        /// then by key (Kueue's classic `entryOrdering`).
        NominalFirst => "nominal-first",
        /// The queue's dominant resource share after admission, lowest first (DRF, Ghodsi et
        /// al. NSDI'11, as Kueue fair sharing KEP-1714 applies it to borrowed quota).
        Drf => "drf",
        /// Hierarchical DRF (Bhattacharya et al., SoCC'13; Volcano's H-DRF design): as `drf`,
        /// each level's share taken over the resources the job asks for, so a sibling's use
        /// of another resource does not count against a cohort (field case B34).
        Hdrf => "hdrf",
        /// The queue's decayed usage over its weight, lowest first (Kueue admission fair
        /// sharing KEP-4136; Slurm fair-share with `PriorityDecayHalfLife`).
        DecayedUsage => "decayed-usage",
    }
);

named_enum!(
    /// An autoscaler expander by name ([`crate::autoscale`]): which node group a scale-up
    /// takes its nodes from.
    ExpanderKind {
        /// [`LeastWaste`](crate::autoscale::LeastWaste).
        #[default]
        LeastWaste => "least-waste",
        /// [`Cheapest`](crate::autoscale::Cheapest).
        Price => "price",
        /// [`ByPriority`](crate::autoscale::ByPriority).
        Priority => "priority",
    }
);

impl PlacementKind {
    /// True for the policies that read per-node task classes ([`FleetState::task_classes`](crate::FleetState::task_classes)):
    /// a fleet placed by any other can stop keeping them
    /// ([`FleetState::stop_task_class_tracking`](crate::FleetState::stop_task_class_tracking)).
    pub fn reads_task_classes(self) -> bool {
        matches!(self, PlacementKind::GpuClustering)
    }
}

/// A queue-order policy with its parameters: the `[policy]` key `queue_order`.
///
/// Written as a bare name (`queue_order = "las"`: default parameters) or as a table with a
/// `name` and the policy's parameters (`queue_order = { name = "las", thresholds_gpu_s =
/// [3250, 7200] }`). Parameters are in the scenario's units (seconds, GPU-seconds) and are
/// converted, and checked, by [`crate::spec::SchedulerSpec`].
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(
        remote = "Self",
        tag = "name",
        rename_all = "kebab-case",
        deny_unknown_fields
    )
)]
#[non_exhaustive]
pub enum QueueOrderSpec {
    /// [`Fifo`].
    Fifo {},
    /// [`Priority`].
    Priority {},
    /// [`Sjf`].
    Sjf {},
    /// [`Srtf`].
    Srtf {},
    /// [`Las`] (Tiresias 2D-LAS).
    Las {
        /// Ascending attained-service thresholds, GPU-seconds; `None`: `[policy.las]`, else
        /// Tiresias' `[3200]`.
        thresholds_gpu_s: Option<Vec<f64>>,
    },
    /// [`Multifactor`](crate::queue_order::Multifactor) (Slurm); each weight `None` takes Slurm's default.
    Multifactor(crate::queue_order::MultifactorParams),
}

impl QueueOrderSpec {
    /// The policy's name.
    pub fn kind(&self) -> QueueOrderKind {
        match self {
            QueueOrderSpec::Fifo {} => QueueOrderKind::Fifo,
            QueueOrderSpec::Priority {} => QueueOrderKind::Priority,
            QueueOrderSpec::Sjf {} => QueueOrderKind::Sjf,
            QueueOrderSpec::Srtf {} => QueueOrderKind::Srtf,
            QueueOrderSpec::Las { .. } => QueueOrderKind::Las,
            QueueOrderSpec::Multifactor(_) => QueueOrderKind::Multifactor,
        }
    }

    /// The policy object. `las` gives the LAS thresholds when the spec names none (the
    /// `[policy.las]` table shared with LAS preemption), in GPU·ms.
    pub fn build(&self, las: &Las) -> Box<dyn QueueOrder> {
        match self {
            QueueOrderSpec::Fifo {} => Box::new(Fifo),
            QueueOrderSpec::Priority {} => Box::new(Priority),
            QueueOrderSpec::Sjf {} => Box::new(Sjf),
            QueueOrderSpec::Srtf {} => Box::new(Srtf),
            QueueOrderSpec::Las { thresholds_gpu_s } => Box::new(match thresholds_gpu_s {
                Some(t) => Las::from_gpu_s(t),
                None => las.clone(),
            }),
            QueueOrderSpec::Multifactor(p) => Box::new(p.build()),
        }
    }
}

impl From<QueueOrderKind> for QueueOrderSpec {
    /// The policy with default parameters.
    fn from(k: QueueOrderKind) -> QueueOrderSpec {
        match k {
            QueueOrderKind::Fifo => QueueOrderSpec::Fifo {},
            QueueOrderKind::Priority => QueueOrderSpec::Priority {},
            QueueOrderKind::Sjf => QueueOrderSpec::Sjf {},
            QueueOrderKind::Srtf => QueueOrderSpec::Srtf {},
            QueueOrderKind::Las => QueueOrderSpec::Las {
                thresholds_gpu_s: None,
            },
            QueueOrderKind::Multifactor => QueueOrderSpec::Multifactor(Default::default()),
        }
    }
}

/// A placement policy with its parameters: the `[policy]` key `placement`, a bare name or a
/// table with a `name` (no built-in placement takes parameters yet).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(
        remote = "Self",
        tag = "name",
        rename_all = "kebab-case",
        deny_unknown_fields
    )
)]
#[non_exhaustive]
pub enum PlacementSpec {
    /// [`FirstFit`].
    FirstFit {},
    /// [`BestFit`].
    BestFit {},
    /// [`WorstFit`].
    WorstFit {},
    /// [`RandomFit`].
    Random {},
    /// [`DotProd`].
    DotProd {},
    /// [`GpuClustering`].
    GpuClustering {},
    /// [`GpuPacking`].
    GpuPacking {},
    /// [`FgdBestFit`].
    FgdBestFit {},
    /// [`Fgd`].
    Fgd {},
    /// [`TopologyAware`].
    TopologyAware {},
}

impl PlacementSpec {
    /// The policy's name.
    pub fn kind(&self) -> PlacementKind {
        match self {
            PlacementSpec::FirstFit {} => PlacementKind::FirstFit,
            PlacementSpec::BestFit {} => PlacementKind::BestFit,
            PlacementSpec::WorstFit {} => PlacementKind::WorstFit,
            PlacementSpec::Random {} => PlacementKind::Random,
            PlacementSpec::DotProd {} => PlacementKind::DotProd,
            PlacementSpec::GpuClustering {} => PlacementKind::GpuClustering,
            PlacementSpec::GpuPacking {} => PlacementKind::GpuPacking,
            PlacementSpec::FgdBestFit {} => PlacementKind::FgdBestFit,
            PlacementSpec::Fgd {} => PlacementKind::Fgd,
            PlacementSpec::TopologyAware {} => PlacementKind::TopologyAware,
        }
    }

    /// The policy object.
    pub fn build(&self) -> Box<dyn Placement> {
        match self {
            PlacementSpec::FirstFit {} => Box::new(FirstFit),
            PlacementSpec::BestFit {} => Box::new(BestFit),
            PlacementSpec::WorstFit {} => Box::new(WorstFit),
            PlacementSpec::Random {} => Box::new(RandomFit),
            PlacementSpec::DotProd {} => Box::new(DotProd),
            PlacementSpec::GpuClustering {} => Box::new(GpuClustering),
            PlacementSpec::GpuPacking {} => Box::new(GpuPacking),
            PlacementSpec::FgdBestFit {} => Box::new(FgdBestFit),
            PlacementSpec::Fgd {} => Box::new(Fgd),
            PlacementSpec::TopologyAware {} => Box::new(TopologyAware),
        }
    }
}

impl From<PlacementKind> for PlacementSpec {
    /// The policy with default parameters.
    fn from(k: PlacementKind) -> PlacementSpec {
        match k {
            PlacementKind::FirstFit => PlacementSpec::FirstFit {},
            PlacementKind::BestFit => PlacementSpec::BestFit {},
            PlacementKind::WorstFit => PlacementSpec::WorstFit {},
            PlacementKind::Random => PlacementSpec::Random {},
            PlacementKind::DotProd => PlacementSpec::DotProd {},
            PlacementKind::GpuClustering => PlacementSpec::GpuClustering {},
            PlacementKind::GpuPacking => PlacementSpec::GpuPacking {},
            PlacementKind::FgdBestFit => PlacementSpec::FgdBestFit {},
            PlacementKind::Fgd => PlacementSpec::Fgd {},
            PlacementKind::TopologyAware => PlacementSpec::TopologyAware {},
        }
    }
}

impl PlacementKind {
    /// The policy object with default parameters (what the extender's per-request
    /// `fleetsim.io/policy` names).
    pub fn build(self) -> Box<dyn Placement> {
        PlacementSpec::from(self).build()
    }
}

/// A cell-selection policy: the `[policy]` key `cell_selection`, a bare name or a table with
/// a `name` (no built-in cell selection takes parameters yet).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(
        remote = "Self",
        tag = "name",
        rename_all = "kebab-case",
        deny_unknown_fields
    )
)]
#[non_exhaustive]
pub enum CellSelectSpec {
    /// [`FirstCell`].
    FirstFit {},
    /// [`LeastLoaded`].
    LeastLoaded {},
    /// [`BestFitCell`].
    #[cfg_attr(feature = "serde", serde(rename = "best-fit-gang"))]
    BestFit {},
    /// [`QuotaAware`].
    QuotaAware {},
}

impl CellSelectSpec {
    /// The policy's name.
    pub fn kind(&self) -> CellSelectKind {
        match self {
            CellSelectSpec::FirstFit {} => CellSelectKind::FirstFit,
            CellSelectSpec::LeastLoaded {} => CellSelectKind::LeastLoaded,
            CellSelectSpec::BestFit {} => CellSelectKind::BestFit,
            CellSelectSpec::QuotaAware {} => CellSelectKind::QuotaAware,
        }
    }

    /// The policy object.
    pub fn build(&self) -> Box<dyn CellSelect> {
        match self {
            CellSelectSpec::FirstFit {} => Box::new(FirstCell),
            CellSelectSpec::LeastLoaded {} => Box::new(LeastLoaded),
            CellSelectSpec::BestFit {} => Box::new(BestFitCell),
            CellSelectSpec::QuotaAware {} => Box::new(QuotaAware),
        }
    }
}

impl From<CellSelectKind> for CellSelectSpec {
    /// The policy with default parameters.
    fn from(k: CellSelectKind) -> CellSelectSpec {
        match k {
            CellSelectKind::FirstFit => CellSelectSpec::FirstFit {},
            CellSelectKind::LeastLoaded => CellSelectSpec::LeastLoaded {},
            CellSelectKind::BestFit => CellSelectSpec::BestFit {},
            CellSelectKind::QuotaAware => CellSelectSpec::QuotaAware {},
        }
    }
}

impl Default for QueueOrderSpec {
    fn default() -> QueueOrderSpec {
        QueueOrderSpec::Fifo {}
    }
}

impl Default for PlacementSpec {
    fn default() -> PlacementSpec {
        PlacementSpec::BestFit {}
    }
}

impl Default for CellSelectSpec {
    fn default() -> CellSelectSpec {
        CellSelectSpec::FirstFit {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name builds a policy object that calls itself by that name: the names table
    /// and the objects cannot drift apart.
    #[test]
    fn every_name_builds_the_policy_of_that_name() {
        for n in QueueOrderKind::NAMES {
            let k: QueueOrderKind = n.parse().unwrap();
            let spec = QueueOrderSpec::from(k);
            assert_eq!(spec.kind(), k);
            assert_eq!(spec.build(&Las::default()).name(), *n);
        }
        for n in PlacementKind::NAMES {
            let k: PlacementKind = n.parse().unwrap();
            assert_eq!(PlacementSpec::from(k).kind(), k);
            assert_eq!(k.build().name(), *n);
        }
        for n in CellSelectKind::NAMES {
            let k: CellSelectKind = n.parse().unwrap();
            let spec = CellSelectSpec::from(k);
            assert_eq!(spec.kind(), k);
            assert_eq!(spec.build().name(), *n);
        }
    }

    #[test]
    fn names_parse_and_list_valid_ones() {
        assert_eq!(
            "best-fit".parse::<PlacementKind>(),
            Ok(PlacementKind::BestFit)
        );
        let e = "bestfit".parse::<PlacementKind>().unwrap_err();
        assert!(e.contains("first-fit, best-fit, worst-fit, random"), "{e}");
        assert_eq!("drf".parse::<AdmissionOrder>(), Ok(AdmissionOrder::Drf));
        assert_eq!("las".parse::<QueueOrderKind>(), Ok(QueueOrderKind::Las));
    }
}
