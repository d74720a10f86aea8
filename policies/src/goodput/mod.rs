//! Goodput models from measurements: each job's throughput × statistical efficiency for its
//! allocation (replicas, nodes spanned, per-GPU batch size), as Pollux models it (A. Qiao et
//! al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning",
//! OSDI '21; the artifact `petuum/adaptdl@c793c70`, `simulator/`, read, not copied).
//!
//! - [`AppModel`]: one application's measured tables — step time by placement and per-GPU
//!   batch size, gradient statistics and progress per epoch at several global batch sizes —
//!   and the interpolations over them. The engine reads the files and hands the parsed rows
//!   here (this crate does no I/O).
//! - [`Progress`]: a job's epoch and progress, advanced at a configuration; a job runs to its
//!   target number of epochs, so its length follows from its allocation, never assumed.
//! - [`BatchConfig`]: per-GPU batch size and accumulation steps; [`BatchConfig::fixed`] keeps a
//!   rigid job's global batch size, [`PerfModel::best_batch`] picks the goodput-optimal one
//!   as an adaptive (Pollux) job does.
//! - [`PerfModel`]: the closed-form throughput model Pollux's agents fit to what they observe,
//!   and [`PerfModel::speedup`], the goodput at `(nodes, replicas)` relative to a base
//!   allocation — what the round allocators of [`crate::rounds`] maximise.
//! - [`TrainingJob`]: one round-allocated job's step, progress, batch choice and fitted
//!   throughput model, as the artifact's simulator runs it (the engine and the artifact
//!   replay share it).
//! - [`ThroughputMatrix`]: a job class's throughput per accelerator type (Gavel, OSDI '20;
//!   Sia, SOSP '23), for fleets with several types.

mod app;
mod job;
mod perf;
mod progress;

pub use app::{normalize_placement, AppModel, AppSettings, EpochRow, GoodputError, StepRow};
pub use job::TrainingJob;
pub use perf::{PerfModel, PerfParams, ThroughputMatrix};
pub use progress::{goodput, BatchConfig, EpochStep, Progress};
