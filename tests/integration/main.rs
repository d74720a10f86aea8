//! The one integration test binary: a module per behaviour.

mod cli;
mod determinism;
mod engine_order;
mod field_cases;
mod field_cases_contention;
mod field_cases_quota;
mod fuzz_stable;
mod hand_computed;
mod inflation;
mod invariants;
mod multicell;
mod peer_fgd;
mod placement_props;
mod policy_props;
mod real_inputs;
mod real_traces;
mod reliability;
mod snapshots;
mod studies;
mod support;
mod topology;
mod trace_formats;
mod whatif;
