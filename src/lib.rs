//! # fleetsim
//!
//! A deterministic discrete-event simulator that replays workload traces against a modeled
//! multi-cell accelerator fleet under pluggable scheduling policies (`fleetsim-policies`), and
//! reports occupancy, wait time, JCT, bounded slowdown and more.
#![warn(missing_docs)]
// The one exception is the cache prefetch hint in `engine/prefetch.rs`.
#![deny(unsafe_code)]

/// `eprintln!` that never panics: a closed or failing standard error (a reader that went
/// away, `2>&1 | head`) loses the message instead of ending the run with a panic, so the
/// run's exit status stays its own.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes to standard error, ignoring write errors (`errln!`'s target; the binary's
/// final error line uses it too).
pub fn write_stderr(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.flush());
}

/// The public trace `rel` (a path under the trace directory) for unit tests that read one:
/// under `$FLEETSIM_TRACE_DIR`, else `../shared/traces` beside the repository. `None` (the
/// test skips, saying so) only when no trace directory was named and the file is absent;
/// a test run that names a trace directory lacking the file fails.
#[cfg(test)]
pub(crate) fn public_trace(rel: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os("FLEETSIM_TRACE_DIR") {
        Some(dir) => {
            let p = std::path::PathBuf::from(dir).join(rel);
            assert!(
                p.exists(),
                "{} not found under $FLEETSIM_TRACE_DIR",
                p.display()
            );
            Some(p)
        }
        None => {
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/traces")
                .join(rel);
            if p.exists() {
                Some(p)
            } else {
                errln!(
                    "skipping: {} not found (set FLEETSIM_TRACE_DIR)",
                    p.display()
                );
                None
            }
        }
    }
}

pub mod catalog;
pub mod fleet;
pub mod fuzzing;
pub mod input_cap;
pub mod rng;
pub mod workload;

pub use fleetsim_policies as policies;
pub mod benchmarks;
pub mod check;
pub mod cli;
pub mod compact;
pub mod compare;
pub mod engine;
pub mod inflation;
pub mod metrics;
pub mod outdir;
pub mod reliability;
pub mod report;
pub mod run;
pub mod run_options;
pub mod scenario;
pub mod schemas;
pub mod serving;
pub mod study;
pub mod sweep;
pub mod whatif;
