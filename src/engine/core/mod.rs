//! The engine's core beside the run loop of `engine/mod.rs`: the job record, the job
//! lifecycle, the application of decisions, node changes, the logs and the outputs. Each file
//! is a part of `impl Simulation` with one job.

pub(super) mod job;
pub(super) mod logs;
pub(super) mod nodes;
pub(super) mod outputs;
pub(super) mod ticks;

mod apply;
mod instant;
mod lifecycle;
