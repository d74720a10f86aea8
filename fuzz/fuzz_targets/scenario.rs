//! Fuzz target: the scenario loader (TOML parse, validation, fleet build, workload open).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fleetsim::fuzzing::read_scenario(data));
