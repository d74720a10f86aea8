//! The live scheduling service's core: cluster [`Event`]s in, [`Decision`]s out,
//! on the same [`crate::Scheduler`] and [`crate::FleetState`] the simulator drives.
//!
//! No I/O and no clock here: the service crate (`fleetsim-scheduler`) feeds events from
//! HTTP and its write-ahead log; the simulator's recorder writes the same events from a run,
//! so a replay through the service must give the same decisions in the same order.
//! Behind the `serde` feature.

pub mod event;
pub mod state;
pub mod validate;

pub use event::{Binding, Decision, Event, JobSpec};
pub use state::{Decoded, LiveError, LiveState, Phase};
pub use validate::Invalid;
