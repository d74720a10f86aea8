//! # fleetsim-policies
//!
//! The scheduling policy contract and the built-in policies of fleetsim, with no dependency
//! on the simulator: the same code decides in the simulator and in a production scheduler.
//!
//! Policies read a [`FleetState`] (nodes, cells, free resources, capacity index) and
//! [`PendingJob`]s, and return [`Decision`]s as values. Stages follow the Kubernetes
//! scheduler framework and Kueue:
//!
//! | stage | trait | built-ins |
//! |---|---|---|
//! | queue order | [`QueueOrder`] | [`queue_order::Fifo`], [`queue_order::Priority`] |
//! | queueing strategy | [`QueueingStrategy`] | strict FIFO, best-effort FIFO (Kueue) |
//! | cell selection | [`CellSelect`] | [`cell_select::FirstCell`], [`cell_select::LeastLoaded`] |
//! | placement | [`Placement`] | [`placement::FirstFit`], [`placement::BestFit`], [`placement::WorstFit`], [`placement::RandomFit`], [`placement::DotProd`], [`placement::GpuClustering`], [`placement::GpuPacking`], [`placement::FgdBestFit`], [`placement::Fgd`], [`placement::TopologyAware`] |
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
//! };
//! sched.submit(&mut fleet, job).unwrap();
//! let decisions = sched.schedule(&mut fleet);
//! assert!(matches!(&decisions[0], Decision::Start { tasks, .. } if tasks.len() == 2));
//! assert_eq!(fleet.allocated_gpu_milli(), 16_000);
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod bucket_index;
pub mod cell_select;
pub mod decision;
pub mod ids;
pub mod job;
pub mod placement;
pub mod queue_order;
pub mod resources;
pub mod scheduler;
pub mod state;
pub mod time;
pub mod topology;

pub use cell_select::CellSelect;
pub use decision::{Decision, PendingReason, RejectReason, Verdict};
pub use ids::{CellId, JobId, ModelId, NodeId, QueueId, TenantId};
pub use job::PendingJob;
pub use placement::{place_gang, Choice, PlaceCtx, Placement, ScoreArithmetic, TypicalTasks};
pub use queue_order::{OrderKey, QueueOrder};
pub use resources::{ModelSet, TaskShape, WHOLE_GPU_MILLI};
pub use scheduler::{
    CellSelectKind, PlacementKind, QueueConfig, QueueOrderKind, QueueingStrategy, Scheduler,
    SchedulerConfig,
};
pub use state::{FleetState, NodeSpec, NodeState, StateError, TaskAlloc};
pub use time::{SimDuration, SimTime};
pub use topology::{Level, RayStrategy, TopologyMode, TopologySpec};
