//! The engine's features beside its core, one file each with its own spec table, events and
//! summary section (ARCHITECTURE.md, "The engine and its subsystems"): autoscaled node groups
//! ([`autoscale`]), the scenario's node changes ([`node_changes`]), waiting for pods
//! ([`pods_ready`]), the goodput account with startup and restart costs ([`reliability`]) and
//! inference serving ([`serving`]). Each is an `impl` part of the engine's `Simulation` that
//! the run loop calls at a fixed step of an instant.

pub mod autoscale;
pub mod node_changes;
pub mod pods_ready;
pub mod reliability;
pub mod serving;

use fleetsim_policies::CellId;

/// The state of the in-loop features, each present only with its setting.
pub(in crate::engine) struct Subsystems {
    /// The autoscaler, with
    /// [`EngineConfig::autoscaling`](crate::engine::EngineConfig::autoscaling).
    pub(in crate::engine) auto: Option<autoscale::Autoscaler>,
    /// The inference services, with
    /// [`EngineConfig::serving`](crate::engine::EngineConfig::serving).
    pub(in crate::engine) serve: Option<serving::Serving>,
    /// Waiting for pods, with
    /// [`EngineConfig::wait_for_pods_ready`](crate::engine::EngineConfig::wait_for_pods_ready).
    pub(in crate::engine) ready: Option<pods_ready::PodsReady>,
    /// The goodput account (kept only with
    /// [`EngineConfig::reliability`](crate::engine::EngineConfig::reliability)).
    pub(in crate::engine) rel: reliability::ReliabilityStats,
    /// With reserved serving cells: the cells training jobs may use (ascending).
    pub(in crate::engine) training_cells: Option<Vec<CellId>>,
}
