//! fleetsim-scheduler: the live scheduling service on the policy crate (issue 21).
//!
//! This crate part holds the edges of the service: [`security`] (TLS, tokens, limits,
//! tenant authorization).

pub mod k8s;
pub mod security;
pub mod shadow;
