//! fleetsim-scheduler: the live scheduling service on the policy crate (issue 21).
//!
//! [`service`]: the HTTP+JSON API over the policy crate's `live::LiveState`; [`security`]
//! (TLS, tokens, limits) wraps its router; [`tenancy`] is the per-tenant rule of its job
//! routes.

pub mod k8s;
pub mod loadtest;
pub mod openapi;
pub mod security;
pub mod serve;
pub mod service;
pub mod shadow;
pub mod tenancy;
pub mod wal;
