//! Fuzz target: the native JSON Lines reader.
#![no_main]
use fleetsim::scenario::TraceFormat;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fleetsim::fuzzing::read_trace(TraceFormat::Native, "trace.jsonl", data)
});
