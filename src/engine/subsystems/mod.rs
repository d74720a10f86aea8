//! The engine's features beside its core, one file each with its own spec table, events and
//! summary section (ARCHITECTURE.md, "The engine and its subsystems"): autoscaled node groups
//! ([`autoscale`]), the scenario's node changes ([`node_changes`]), waiting for pods
//! ([`pods_ready`]), the goodput account with startup and restart costs ([`reliability`]) and
//! inference serving ([`serving`]).
//!
//! The autoscaler and waiting for pods are the engine's `Subsystem`s, registered by `register` in
//! that order; the goodput account and serving are still `impl` parts of the engine's
//! `Simulation` that the run loop calls at fixed steps of an instant.

pub mod autoscale;
pub mod node_changes;
pub mod pods_ready;
pub mod reliability;
pub mod serving;

use fleetsim_policies::{CellId, FleetState};

use crate::engine::subsystem::Subsystem;
use crate::engine::EngineConfig;

/// The state of the in-loop features, each present only with its setting.
pub(in crate::engine) struct Subsystems {
    /// The registered subsystems, in [`register`]'s order (a slot is empty while its hook
    /// runs).
    pub(in crate::engine) list: Vec<Option<Box<dyn Subsystem>>>,
    /// The inference services, with
    /// [`EngineConfig::serving`](crate::engine::EngineConfig::serving).
    pub(in crate::engine) serve: Option<serving::Serving>,
    /// The goodput account (kept only with
    /// [`EngineConfig::reliability`](crate::engine::EngineConfig::reliability)).
    pub(in crate::engine) rel: reliability::ReliabilityStats,
    /// With reserved serving cells: the cells training jobs may use (ascending).
    pub(in crate::engine) training_cells: Option<Vec<CellId>>,
}

/// The subsystems `cfg` asks for, in the order their hooks run at each step of an instant:
/// the autoscaler ([`EngineConfig::autoscaling`]: its nodes are added to `fleet`, not yet
/// schedulable), then waiting for pods ([`EngineConfig::wait_for_pods_ready`], which times
/// the admissions the autoscaler announces after the passes).
pub(in crate::engine) fn register(
    cfg: &EngineConfig,
    fleet: &mut FleetState,
) -> Vec<Option<Box<dyn Subsystem>>> {
    let mut list: Vec<Box<dyn Subsystem>> = Vec::new();
    if let Some(a) = cfg.autoscaling.clone() {
        list.push(Box::new(autoscale::Autoscaler::new(a, fleet)));
    }
    if let Some(c) = cfg.wait_for_pods_ready {
        list.push(Box::new(pods_ready::PodsReady::new(
            c,
            cfg.record_admissions,
        )));
    }
    list.into_iter().map(Some).collect()
}
