//! The one integration test binary: a module per behaviour.

mod cli;
mod determinism;
mod engine_order;
mod field_cases;
mod field_cases_quota;
mod hand_computed;
mod invariants;
mod policy_props;
mod real_traces;
mod snapshots;
mod support;
