//! fleetsim-scheduler: the live scheduling service on the policy crate.
//!
//! [`service`]: the HTTP+JSON API over the policy crate's `live::LiveState`; [`security`]
//! (TLS, tokens, limits) wraps its router; [`tenancy`] is the per-tenant rule of its job
//! routes. [`k8s`] reads recorded Kubernetes objects into cluster events and
//! [`k8s_live`] resolves them into the service's events against a spec.

pub mod ha;
pub mod k8s;
pub mod k8s_live;
pub mod loadtest;
pub mod metrics;
pub mod openapi;
pub mod quarantine;
pub mod security;
pub mod serve;
pub mod served;
pub mod service;
pub mod shadow;
pub mod snapshot;
pub mod tenancy;
pub mod wal;
