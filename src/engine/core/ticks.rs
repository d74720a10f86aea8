//! The passes the run loop pushes as ticks (node-class events at their instant): one per
//! source, so that a source never queues a second tick for the same purpose.

use fleetsim_policies::SimTime;

/// The ticks in the event queue, by source.
#[derive(Debug, Default)]
pub(in crate::engine) struct Ticks {
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
}
