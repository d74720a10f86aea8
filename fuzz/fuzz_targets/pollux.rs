//! Fuzz target: the `pollux` trace reader.
#![no_main]
use fleetsim::scenario::TraceFormat;
use fleetsim::fuzzing::{file_name, read_trace};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| read_trace(TraceFormat::Pollux, file_name(TraceFormat::Pollux), data));
