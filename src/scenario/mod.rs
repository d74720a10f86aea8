//! Scenario files (TOML): the fleet, the workload, the policies, the metric window, output
//! options. Every table denies unknown keys, so a typo is an error naming the key.
//!
//! ```toml
//! name = "example"
//! seed = 42
//!
//! [fleet]
//! [[fleet.cells]]
//! name = "hopper"
//! [[fleet.cells.nodes]]
//! preset = "hgx-h100"
//! count = 32
//!
//! [workload]
//! trace = { format = "philly", public_path = "philly/philly_jobs_pollux.csv" }
//!
//! [policy]
//! queue_order = "fifo"
//! queueing_strategy = "strict-fifo"
//! placement = "best-fit"
//! cell_selection = "first-fit"
//! ```

pub mod elastic;
pub mod kueue;
pub mod overrides;
pub mod policies;
pub mod reliability;
mod schema;
pub mod studies;
pub mod transforms;
mod validate;
mod yaml;

pub use schema::*;
pub use validate::{
    load, merged_table, parse, parse_value, secs_to_ms, slo_queues, Loaded, ScenarioError, TraceDir,
};

/// The embedded default scenario (`scenarios/default.toml`): two cells of different
/// accelerator generations, four tenants, a synthetic week of work.
pub const DEFAULT_SCENARIO: &str = include_str!("../../scenarios/default.toml");
