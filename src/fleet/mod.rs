//! The modeled fleet: machine-list readers, the builder that turns a scenario's fleet
//! section into a [`fleetsim_policies::FleetState`] (from the models and presets of
//! [`crate::catalog`]), and the check of which node groups a workload can ever use
//! ([`usable`]).

pub mod build;
pub mod machine_list;
pub mod usable;
