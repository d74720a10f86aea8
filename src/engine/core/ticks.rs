//! When the run loop runs a scheduling pass: the pending-change flag and the passes pushed as
//! ticks (node-class events at their instant), one per source, so that a source never queues a
//! second tick for the same purpose.

use fleetsim_policies::{Decision, SimTime};

/// The pass state: whether one is due, the ticks in the event queue by source, and the
/// decision list reused from pass to pass.
#[derive(Debug, Default)]
pub(in crate::engine) struct Passes {
    /// Something changed since the last pass: another pass runs at this instant.
    pub(in crate::engine) dirty: bool,
    /// The next retry-cycle pass
    /// ([`EngineConfig::retry_interval`](crate::engine::EngineConfig::retry_interval)), if any.
    pub(in crate::engine) next_tick: Option<SimTime>,
    /// The scheduler's own wake-up
    /// ([`Scheduler::next_wake`](fleetsim_policies::Scheduler::next_wake)) pushed as a tick, if
    /// any.
    pub(in crate::engine) wake_at: Option<SimTime>,
    /// The next round boundary pushed as a tick
    /// ([`EngineConfig::round`](crate::engine::EngineConfig::round)), if any.
    pub(in crate::engine) round_at: Option<SimTime>,
    /// The scheduler has a backfill stage: its reservations are recorded after each pass.
    pub(in crate::engine) backfill: bool,
    /// The decision list, reused from pass to pass.
    pub(in crate::engine) decisions: Vec<Decision>,
}
