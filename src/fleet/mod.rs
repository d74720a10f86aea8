//! The modeled fleet: accelerator catalog, machine-list readers and the builder that turns a
//! scenario's fleet section into a [`fleetsim_policies::FleetState`].

pub mod build;
pub mod catalog;
pub mod machine_list;
