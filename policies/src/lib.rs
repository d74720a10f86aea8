//! # fleetsim-policies
//!
//! The scheduling policy contract and the built-in policies of fleetsim, with no dependency
//! on the simulator: the same code decides in the simulator and in a production scheduler.
//!
//! **Start at [`SchedulerSpec`]**: one typed value describes a whole scheduler — queue
//! order, queueing strategy, admission order, preemption, backfill, placement, cell
//! selection, topology — with each stage's parameters inline. It is a scenario's `[policy]`
//! table as read (`serde` feature), what studies vary, and what a production service loads
//! (`fleetsim-extender --spec FILE`); [`SchedulerSpec::build`] makes the [`Scheduler`]. The
//! stages' names and the objects they build are in [`registry`], the only name → policy
//! table; `docs/src/guides/adding-a-policy.md` walks through adding one.
//!
//! Policies read a [`FleetState`] (nodes, cells, free resources, capacity index) and
//! [`PendingJob`]s, and return [`Decision`]s as values. Stages follow the Kubernetes
//! scheduler framework and Kueue:
//!
//! | stage | trait | built-ins |
//! |---|---|---|
//! | queue order | [`QueueOrder`] | [`queue_order::Fifo`], [`queue_order::Priority`], [`queue_order::Sjf`], [`queue_order::Srtf`], [`queue_order::Las`] (Tiresias), [`queue_order::Multifactor`] (Slurm) |
//! | queueing strategy | [`QueueingStrategy`] | strict FIFO, best-effort FIFO (Kueue) |
//! | admission | [`quota::QuotaTree`], [`AdmissionOrder`] | nominal quota, hierarchical cohorts with borrowing and lending limits, flavor fungibility (Kueue); order across queues: nominal-first (Kueue classic), DRF (Kueue fair sharing), decayed usage ([`fairshare`]; Slurm, Kueue AFS); Borg tiers ([`Tier`]) |
//! | cell selection | [`CellSelect`] | [`cell_select::FirstCell`], [`cell_select::LeastLoaded`] |
//! | placement | [`Placement`] | [`placement::FirstFit`], [`placement::BestFit`], [`placement::WorstFit`], [`placement::RandomFit`], [`placement::DotProd`], [`placement::GpuClustering`], [`placement::GpuPacking`], [`placement::FgdBestFit`], [`placement::Fgd`], [`placement::TopologyAware`] |
//! | preemption | [`preemption::PreemptionConfig`] | within queue, cohort reclaim, Kueue fair-sharing strategies, tiers, priority for capacity, Tiresias LAS; least lost work first |
//! | backfill | [`backfill::BackfillConfig`] | EASY, conservative |
//!
//! Jobs whose allocation is re-decided as a whole every round (elastic and adaptive training)
//! use [`rounds`]: the Pollux artifact's Tiresias ([`rounds::TwoQueueLas`]), Pollux's goodput
//! optimiser ([`rounds::Pollux`]) and a heterogeneity-aware allocator
//! ([`rounds::Heterogeneous`], Gavel/Sia), over the measured goodput models of [`goodput`]
//! (throughput by placement and batch size × statistical efficiency, each job run to its
//! target).
//!
//! Units: time in milliseconds ([`SimTime`]), accelerators in GPU-milli (1000 = one whole
//! accelerator), CPU in milli-cores, memory in MiB.
//!
//! ```
//! use fleetsim_policies::*;
//!
//! // One cell with two 8-GPU nodes.
//! let nodes = (0..2)
//!     .map(|i| NodeSpec {
//!         name: format!("n{i}"),
//!         cell: CellId(0),
//!         block: 0,
//!         domain: i,
//!         model: Some(ModelId(0)),
//!         gpus: 8,
//!         cpu_milli: 64_000,
//!         mem_mib: 512 * 1024,
//!     })
//!     .collect();
//! let mut fleet = FleetState::new(vec!["a".into()], vec!["H100".into()], nodes).unwrap();
//! let mut sched = Scheduler::new(SchedulerConfig::default(), vec![QueueConfig::default()]);
//! let job = PendingJob {
//!     id: JobId(0),
//!     tenant: TenantId(0),
//!     queue: QueueId(0),
//!     priority: 0,
//!     submit: SimTime(0),
//!     seq: 0,
//!     shape: TaskShape::whole_gpus(8),
//!     tasks: 2,
//!     models: ModelSet::ANY,
//!     cells: vec![],
//!     runtime_estimate: None,
//!     topology: None,
//!     ..PendingJob::default()
//! };
//! sched.submit(&mut fleet, job).unwrap();
//! let decisions = sched.schedule(&mut fleet);
//! assert!(matches!(&decisions[0], Decision::Start { tasks, .. } if tasks.len() == 2));
//! assert_eq!(fleet.allocated_gpu_milli(), 16_000);
//! ```
//!
//! A placement policy can also be asked directly, on a snapshot built by hand — what the
//! scheduler extender (`fleetsim-extender`) does for every request:
//!
//! ```
//! use fleetsim_policies::placement::{BestFit, FirstFit};
//! use fleetsim_policies::*;
//!
//! let node = |name: &str| NodeSpec {
//!     name: name.into(),
//!     cell: CellId(0),
//!     block: 0,
//!     domain: 0,
//!     model: Some(ModelId(0)),
//!     gpus: 4,
//!     cpu_milli: 32_000,
//!     mem_mib: 256 * 1024,
//! };
//! let mut fleet =
//!     FleetState::new(vec!["c".into()], vec!["A100".into()], vec![node("a"), node("b")]).unwrap();
//! // Node b already runs a task on accelerators 0 and 1 (a bind seen by the production side).
//! fleet
//!     .apply(&TaskAlloc { node: NodeId(1), gpu_mask: 0b11, gpu_milli: 1000, cpu_milli: 0, mem_mib: 0 })
//!     .unwrap();
//! // A gang of two 1-GPU tasks: best-fit packs both onto the busier node b.
//! let job = PendingJob { shape: TaskShape::whole_gpus(1), tasks: 2, ..PendingJob::default() };
//! let tasks = place_gang(&BestFit, &mut PlaceCtx::new(), &mut fleet.clone(), CellId(0), &job).unwrap();
//! assert_eq!(tasks.iter().map(|t| t.node).collect::<Vec<_>>(), [NodeId(1), NodeId(1)]);
//! assert_eq!(tasks[0].gpu_mask, 0b100); // the lowest wholly free accelerator
//! // First-fit takes the lowest node id instead.
//! let tasks = place_gang(&FirstFit, &mut PlaceCtx::new(), &mut fleet, CellId(0), &job).unwrap();
//! assert_eq!(tasks[0].node, NodeId(0));
//! ```
//!
//! The crate does no I/O, has no async code and does not depend on the simulator; a
//! [`placement::PlacementRecorder`] installed on a [`PlaceCtx`] sees every gang placement
//! (the snapshot, the gang, the answer), which is how the extender's decision-equivalence
//! test records the simulator's decisions.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

#[macro_use]
mod macros;

pub mod autoscale;
pub mod backfill;
pub mod bucket_index;
pub mod cell_select;
pub mod decision;
pub mod elastic;
pub mod fairshare;
pub mod goodput;
pub mod ids;
pub mod job;
#[cfg(feature = "serde")]
pub mod live;
pub mod placement;
pub mod preemption;
pub mod quantity;
pub mod queue_order;
pub mod quota;
pub mod registry;
pub mod resources;
pub mod rounds;
pub mod scheduler;
pub mod spec;
pub mod state;
pub mod time;
pub mod topology;

pub use autoscale::{Expander, ScaleOption};
pub use backfill::{BackfillConfig, BackfillKind, Reservation};
pub use cell_select::CellSelect;
pub use decision::{
    longest_reason, Decision, NodeFree, PendingReason, PreemptReason, PreemptionContext,
    RejectReason, Verdict, WaitProfile,
};
pub use ids::{CellId, JobId, ModelId, NodeId, QueueId, TenantId};
pub use job::{kept_progress, PendingJob, Tier};
pub use placement::{
    place_gang, Choice, PlaceCtx, Placement, PlacementCall, PlacementRecorder, ScoreArithmetic,
    TypicalTasks,
};
pub use preemption::{
    minimal_victim_set, BorrowWithinCohort, BorrowWithinCohortPolicy, PreemptionConfig,
    QueuePreemption, VictimKey, VictimTrial,
};
pub use queue_order::{OrderCtx, OrderKey, QueueOrder};
pub use quota::{QuotaError, QuotaSpec, QuotaTree};
pub use registry::{
    AdmissionOrder, CellSelectKind, CellSelectSpec, ElasticKind, ExpanderKind, PlacementKind,
    PlacementSpec, QueueOrderKind, QueueOrderSpec, QueueingStrategy,
};
pub use resources::{ModelSet, TaskShape, WHOLE_GPU_MILLI};
pub use scheduler::{Extensions, QueueConfig, RedecideOrder, Scheduler, SchedulerConfig};
pub use spec::{GangRecovery, PreemptionModel, SchedulerSpec, SpecError};
pub use state::{FleetState, NodeSpec, NodeState, StateError, TaskAlloc};
pub use time::{SimDuration, SimTime};
pub use topology::{Level, RayStrategy, TopologyMode, TopologySpec};
