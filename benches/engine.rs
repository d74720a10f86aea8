//! Criterion benches on fixed, seeded synthetic workloads, named after the scenario they run
//! (see `fleetsim::benchmarks`). CI only builds them (`cargo bench --no-run`): 2 noisy cores
//! make timings there meaningless. Run locally with `cargo bench`; `fleetsim bench` prints
//! the same workloads' figures without criterion.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fleetsim::benchmarks;

/// Raw engine throughput: 100,000 jobs on 16,384 nodes (every job is one arrival and one
/// completion event, scheduled as it arrives).
fn engine_events(c: &mut Criterion) {
    let loaded = benchmarks::replay_fifo_bestfit(100_000, 16_384);
    let mut g = c.benchmark_group("engine_events");
    g.sample_size(10);
    g.throughput(Throughput::Elements(200_000));
    g.bench_function("100k_jobs_200k_events", |b| {
        b.iter(|| benchmarks::run_quiet(&loaded, None))
    });
    g.finish();
}

/// The fleet-scale what-if: 1,000,000 jobs on 131,072 GPUs in 4 cells, FIFO + best-fit.
fn replay_1m_fifo_bestfit(c: &mut Criterion) {
    let loaded = benchmarks::replay_fifo_bestfit(1_000_000, 16_384);
    let mut g = c.benchmark_group("replay_1m_fifo_bestfit");
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(40));
    g.throughput(Throughput::Elements(1_000_000));
    g.bench_function("1m_jobs_16384_nodes", |b| {
        b.iter(|| benchmarks::run_quiet(&loaded, None))
    });
    g.finish();
}

/// The same jobs under quota: one queue per tenant in a cohort (nominal 40/30/20/10 % of the
/// GPUs, borrowing), DRF across queues, EASY backfill, gangs packed into as few blocks as
/// possible around best-fit.
fn replay_1m_quota_topology(c: &mut Criterion) {
    let loaded = benchmarks::replay_quota_topology(1_000_000, 16_384);
    let mut g = c.benchmark_group("replay_1m_quota_topology");
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(60));
    g.throughput(Throughput::Elements(1_000_000));
    g.bench_function("1m_jobs_16384_nodes", |b| {
        b.iter(|| benchmarks::run_quiet(&loaded, None))
    });
    g.finish();
}

/// Eight runs (seeds) through rayon, on one thread and on two.
fn sweep_8(c: &mut Criterion) {
    let mut g = c.benchmark_group("sweep_8");
    g.sample_size(10);
    for threads in [1usize, 2] {
        g.bench_function(format!("8x100k_jobs_{threads}_threads"), |b| {
            b.iter(|| benchmarks::sweep_8(100_000, threads))
        });
    }
    g.finish();
}

/// One seed of the FGD paper's inflation experiment on the real openb fleet and default pod
/// list (seed 42: 10,8xx pods to 130 % of capacity), FGD with the per-attempt fragmentation
/// series on (as the artifact computes it) and off. Needs the public traces
/// (`FLEETSIM_TRACE_DIR` or `../shared/traces`); skipped with a message without them.
fn openb_fgd_inflation(c: &mut Criterion) {
    use fleetsim::inflation::RunConfig;
    use fleetsim::policies::{PlacementKind, ScoreArithmetic};
    let Some(dir) = benchmarks::fgd_trace_dir() else {
        eprintln!("openb_fgd_inflation: skipped, no openb traces (set FLEETSIM_TRACE_DIR)");
        return;
    };
    let setup = benchmarks::openb_fgd_setup(&dir, 42).expect("openb traces readable");
    let mut g = c.benchmark_group("openb_fgd_inflation");
    g.sample_size(10);
    g.throughput(Throughput::Elements(setup.order.len() as u64));
    for frag_series in [true, false] {
        let cfg = RunConfig {
            frag_series,
            arithmetic: ScoreArithmetic::Exact,
        };
        let name = if frag_series {
            "fgd_seed42"
        } else {
            "fgd_seed42_series_off"
        };
        g.bench_function(name, |b| {
            b.iter(|| benchmarks::run_fgd(&setup, PlacementKind::Fgd, cfg))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    engine_events,
    replay_1m_fifo_bestfit,
    replay_1m_quota_topology,
    sweep_8,
    openb_fgd_inflation
);
criterion_main!(benches);
