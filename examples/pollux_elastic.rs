//! Replays the 32 Pollux OSDI '21 workloads (4 load levels × 8 files) elastic vs rigid on one
//! 64-GPU cell with a 30 s resize overhead and prints the table of the book's Pollux page
//! (`docs/src/experiments/pollux.md`): per load level, JCT
//! mean / p50 / p95 (nearest rank) over the level's jobs pooled, GPU-hours and resizes.
//!
//! `cargo run --release --example pollux_elastic -- [TRACE_DIR]` (default
//! `$FLEETSIM_TRACE_DIR`, else `../shared/traces`).

use fleetsim::elastic::pollux::{read, Sizing};
use fleetsim::elastic::{simulate, summarize, ElasticConfig, JobOutcome};
use fleetsim::policies::{ElasticKind, SimDuration};
use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("FLEETSIM_TRACE_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("../shared/traces"));
    println!(
        "| load | sizing | jobs | JCT mean (s) | JCT p50 (s) | JCT p95 (s) | GPU-hours | resizes |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for load in ["0.5", "1.0", "1.5", "2.0"] {
        for (sizing, kind) in [
            (Sizing::Rigid, ElasticKind::Fixed),
            (Sizing::Elastic, ElasticKind::GrowIdle),
        ] {
            let cfg = ElasticConfig {
                kind,
                resize_overhead: SimDuration::from_secs(30),
                cells: vec![64],
            };
            let mut all: Vec<JobOutcome> = Vec::new();
            for w in 1..=8 {
                let p = dir.join(format!("pollux-workloads/load-{load}/workload-{w}.csv"));
                all.extend(simulate(&cfg, &read(&p, sizing)?)?);
            }
            let s = summarize(&all);
            println!(
                "| {load} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {} |",
                if sizing == Sizing::Rigid {
                    "rigid (trace size)"
                } else {
                    "elastic (grow-idle)"
                },
                s.jobs,
                s.jct_mean_s,
                s.jct_p50_s,
                s.jct_p95_s,
                s.gpu_seconds / 3600.0,
                s.resizes
            );
        }
    }
    Ok(())
}
