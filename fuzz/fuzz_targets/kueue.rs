//! Fuzz target: the Kueue manifest reader and its mapping onto the quota model.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fleetsim::fuzzing::read_kueue(data));
