//! The modeled fleet: accelerator catalog, machine-list readers, the builder that turns a
//! scenario's fleet section into a [`fleetsim_policies::FleetState`], and the check of
//! which node groups a workload can ever use ([`usable`]).

pub mod build;
pub mod catalog;
pub mod machine_list;
pub mod usable;
