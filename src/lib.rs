//! # fleetsim
//!
//! A deterministic discrete-event simulator that replays workload traces against a modeled
//! multi-cell accelerator fleet under pluggable scheduling policies (`fleetsim-policies`), and
//! reports occupancy, wait time, JCT, bounded slowdown and more.
#![warn(missing_docs)]
// The one exception is the cache prefetch hint in `engine/prefetch.rs`.
#![deny(unsafe_code)]

pub mod fleet;
pub mod input_cap;
pub mod rng;
pub mod workload;

pub use fleetsim_policies as policies;
pub mod benchmarks;
pub mod check;
pub mod cli;
pub mod compact;
pub mod compare;
pub mod elastic;
pub mod engine;
pub mod inflation;
pub mod metrics;
pub mod outdir;
pub mod reliability;
pub mod report;
pub mod run;
pub mod scenario;
pub mod schemas;
pub mod serving;
pub mod study;
pub mod sweep;
pub mod whatif;
