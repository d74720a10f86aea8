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
