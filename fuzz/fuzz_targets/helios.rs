//! Fuzz target: the `helios` trace reader.
#![no_main]
use fleetsim::scenario::TraceFormat;
use fleetsim::fuzzing::{file_name, read_trace};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| read_trace(TraceFormat::Helios, file_name(TraceFormat::Helios), data));
