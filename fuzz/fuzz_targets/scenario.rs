//! Fuzz target: the scenario loader (TOML parse, validation, fleet build, workload open).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fleetsim::workload::fuzzing::read_scenario(data));
