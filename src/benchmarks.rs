//! The fixed, seeded workloads of the benches (`benches/`) and of `fleetsim bench`, named after
//! the scenario they stand for.
//!
//! `replay_1m_fifo_bestfit`: 1,000,000 jobs with a Philly-like size mix (93.2 % one GPU; 2, 4,
//! 8, 16, 32, 64, 128 GPUs in the proportions of `philly_jobs_pollux.csv`; above 8 GPUs, gangs
//! of 8-GPU tasks), log-normal run times with Philly's median (1,144 s) and a heavy tail
//! (σ = 1.5, capped at 4,628,226 s, Philly’s longest job), Poisson arrivals at 90 % offered
//! load, onto 16,384 HGX H100 nodes (131,072 GPUs) in 4 cells; one strict-FIFO queue,
//! best-fit placement, first-fit cell selection.
//!
//! `replay_1m_quota_topology`: the same jobs, one queue per tenant (4 tenants, equal demand)
//! in one cohort with nominal GPU quotas of 40, 30, 20 and 10 % of the fleet (so the small
//! queues borrow what the large ones leave idle), DRF admission order across queues, EASY
//! backfill on true run times, and a topology constraint on gangs: each gang packed into as
//! few 32-node blocks as possible (Kueue TAS, `preferred = "block"`) around best-fit.
//!
//! `openb_fgd_inflation`: one seed of the FGD paper's inflation experiment on the real openb
//! fleet and pod list ([`openb_fgd_setup`], needs the public traces), and the FGD artifact's
//! own run of it replayed from its log ([`peer_replay_setup`]); [`run_fgd`] places every pod
//! with the per-attempt fragmentation series on or off.

use crate::scenario::{self, Loaded};

/// Philly's job-size histogram (GPUs, jobs): `philly_jobs_pollux.csv`, SOURCE.md.
pub const PHILLY_SIZES: &[(u32, u64)] = &[
    (1, 76_627),
    (2, 1_818),
    (4, 1_870),
    (8, 1_643),
    (12, 7),
    (16, 199),
    (24, 7),
    (32, 67),
    (64, 6),
    (128, 3),
];

/// Median run time of Philly jobs, seconds (SOURCE.md).
pub const PHILLY_MEDIAN_S: f64 = 1144.0;
/// Log-normal σ: a heavy tail (mean ≈ 3.1 × median) that still lets a 1M-job run reach
/// steady state at 90 % load.
pub const SIGMA: f64 = 1.5;
/// Longest Philly job, seconds.
pub const MAX_S: f64 = 4_628_226.0;

/// Scenario TOML for `jobs` jobs on `nodes` 8-GPU nodes split over 4 cells, at `load` offered
/// load (fraction of GPUs), with the given queue mapping (`single` or `per-tenant`) and
/// policy tables.
pub fn replay_toml(
    name: &str,
    jobs: u64,
    nodes: u32,
    load: f64,
    queues: &str,
    policy: &str,
) -> String {
    let cells = 4u32;
    let mut s = format!("name = \"{name}\"\nseed = 1\n");
    for c in 0..cells {
        let n = nodes / cells + u32::from(c < nodes % cells);
        s.push_str(&format!(
            "[[fleet.cells]]\nname = \"cell{c}\"\n[[fleet.cells.nodes]]\npreset = \"hgx-h100\"\ncount = {n}\n"
        ));
    }
    let total_jobs: u64 = PHILLY_SIZES.iter().map(|&(_, n)| n).sum();
    let mean_gpus: f64 = PHILLY_SIZES
        .iter()
        .map(|&(g, n)| g as f64 * n as f64)
        .sum::<f64>()
        / total_jobs as f64;
    // Mean of a log-normal capped far in its tail: median × exp(σ²/2) (the cap moves it < 1 %).
    let mean_runtime = PHILLY_MEDIAN_S * (SIGMA * SIGMA / 2.0).exp();
    let gpus = nodes as f64 * 8.0;
    let rate_per_hour = load * gpus / (mean_gpus * mean_runtime) * 3600.0;
    let sizes: Vec<String> = PHILLY_SIZES
        .iter()
        .map(|&(g, n)| format!("{{ gpus = {g}, weight = {n}.0 }}"))
        .collect();
    s.push_str(&format!(
        "[workload]\nqueues = \"{queues}\"\n[workload.synthetic]\njobs = {jobs}\narrival_rate_per_hour = {rate_per_hour}\n\
         tenants = [{{ name = \"t0\", weight = 1.0 }}, {{ name = \"t1\", weight = 1.0 }}, {{ name = \"t2\", weight = 1.0 }}, {{ name = \"t3\", weight = 1.0 }}]\n\
         sizes = [{}]\n\
         runtime = {{ dist = \"lognormal\", median_s = {PHILLY_MEDIAN_S}, sigma = {SIGMA}, min_s = 1.0, max_s = {MAX_S} }}\n\
         {policy}\n[metrics]\ntimeseries_interval_s = 3600\n",
        sizes.join(", ")
    ));
    s
}

/// FIFO (strict, one queue) + best-fit + first-fit cells.
pub const FIFO_BESTFIT: &str = "[policy]\nqueue_order = \"fifo\"\nqueueing_strategy = \"strict-fifo\"\nplacement = \"best-fit\"\ncell_selection = \"first-fit\"";

/// The `replay_1m_fifo_bestfit` scenario at a given size.
///
/// # Panics
/// Never for the sizes used here: the generated TOML is valid by construction.
pub fn replay_fifo_bestfit(jobs: u64, nodes: u32) -> Loaded {
    let text = replay_toml(
        "replay_1m_fifo_bestfit",
        jobs,
        nodes,
        0.9,
        "single",
        FIFO_BESTFIT,
    );
    scenario::parse(&text, "<bench>", std::path::PathBuf::from(".")).expect("valid bench scenario")
}

/// Nominal GPU quota of each tenant's queue in `replay_1m_quota_topology`, percent of the
/// fleet's GPUs.
pub const QUOTA_PCT: [u32; 4] = [40, 30, 20, 10];

/// The policy and quota tables of `replay_1m_quota_topology` for a fleet of `nodes` 8-GPU
/// nodes: strict FIFO within each tenant's queue, DRF across queues, EASY backfill (oracle
/// estimates), best-fit nodes, gangs packed into as few blocks as possible, one cohort.
pub fn quota_topology_policy(nodes: u32) -> String {
    let gpus = u64::from(nodes) * 8;
    let mut s = String::from(
        "[policy]\nqueue_order = \"fifo\"\nqueueing_strategy = \"strict-fifo\"\nplacement = \"best-fit\"\n\
         cell_selection = \"first-fit\"\nadmission_order = \"drf\"\nbackfill = \"easy\"\nruntime_estimate = \"oracle\"\n\
         [policy.topology]\npreferred = \"block\"\n[[cohorts]]\nname = \"fleet\"\n",
    );
    for (t, pct) in QUOTA_PCT.iter().enumerate() {
        s.push_str(&format!(
            "[[queues]]\nname = \"t{t}\"\ncohort = \"fleet\"\nflavors = [{{ name = \"H100\", gpus = {{ nominal = {} }} }}]\n",
            gpus * u64::from(*pct) / 100
        ));
    }
    s
}

/// The `replay_1m_quota_topology` scenario at a given size.
///
/// # Panics
/// Never for the sizes used here: the generated TOML is valid by construction.
pub fn replay_quota_topology(jobs: u64, nodes: u32) -> Loaded {
    let text = replay_toml(
        "replay_1m_quota_topology",
        jobs,
        nodes,
        0.9,
        "per-tenant",
        &quota_topology_policy(nodes),
    );
    scenario::parse(&text, "<bench>", std::path::PathBuf::from(".")).expect("valid bench scenario")
}

/// Runs one bench scenario without writing outputs and returns its summary.
///
/// # Panics
/// If the run fails (bench scenarios are valid by construction).
pub fn run_quiet(loaded: &Loaded, seed: Option<u64>) -> crate::report::summary::Summary {
    let opts = crate::run::RunOptions {
        seed,
        trace_dir: crate::scenario::TraceDir(std::path::PathBuf::from("unused")),
        out_dir: None,
        keep_rows: false,
    };
    crate::run::run_scenario(loaded, &opts, &mut |_, _| {})
        .expect("bench scenario runs")
        .summary
}

/// `sweep_8`: eight seeds of the `replay_1m_fifo_bestfit` workload at `jobs` jobs on 16,384
/// nodes, run through rayon on a pool of `threads` threads, one run per task; the summaries
/// come back in seed order, whatever the thread count.
///
/// # Panics
/// If the thread pool cannot be built or a run fails.
pub fn sweep_8(jobs: u64, threads: usize) -> Vec<crate::report::summary::Summary> {
    use rayon::prelude::*;
    let loaded = replay_fifo_bestfit(jobs, 16_384);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    pool.install(|| {
        (1..=8u64)
            .into_par_iter()
            .map(|seed| run_quiet(&loaded, Some(seed)))
            .collect()
    })
}

/// The FGD experiment's inputs for one run: the openb fleet and default pod list of
/// `scenarios/openb-fgd.toml`, an arrival order and a node rank.
pub struct FgdSetup {
    /// Fleet, pod list, typical table.
    pub exp: crate::inflation::Experiment,
    /// Pods in arrival order (indices into `exp.pods`).
    pub order: Vec<usize>,
    /// Node tie-break rank.
    pub rank: Vec<u32>,
}

/// The public trace directory for the FGD benches: `FLEETSIM_TRACE_DIR`, else
/// `traces/public`, else `../shared/traces` (this repository's CI layout); `None` when none
/// holds the openb files.
pub fn fgd_trace_dir() -> Option<std::path::PathBuf> {
    let candidates = [
        std::env::var_os("FLEETSIM_TRACE_DIR").map(std::path::PathBuf::from),
        Some(std::path::PathBuf::from("traces/public")),
        Some(std::path::PathBuf::from("../shared/traces")),
    ];
    candidates.into_iter().flatten().find(|d| {
        d.join("alibaba-gpu-2023/openb_pod_list_default.csv")
            .is_file()
    })
}

/// `openb_fgd_inflation`: one seed of the FGD paper's inflation experiment
/// (`scenarios/openb-fgd.toml`): the openb fleet (1,213 nodes, 6,212 GPUs), the default pod
/// list shuffled and cloned to 130 % of capacity with seed `seed` (10,8xx pods), seeded node
/// rank.
///
/// # Errors
/// [`crate::run::RunError`] when the traces cannot be read.
pub fn openb_fgd_setup(
    trace_dir: &std::path::Path,
    seed: u64,
) -> Result<FgdSetup, crate::run::RunError> {
    use crate::inflation;
    let loaded = scenario::parse(
        include_str!("../scenarios/openb-fgd.toml"),
        "<openb-fgd>",
        std::path::PathBuf::from("."),
    )?;
    let exp = inflation::experiment(&loaded, &fgd_opts(trace_dir))?;
    let target = exp.capacity_milli * 13 / 10;
    let order = inflation::arrival_order(&exp.pods, target, seed);
    let rank = inflation::node_rank(&exp.fleet, seed);
    Ok(FgdSetup { exp, order, rank })
}

/// The FGD artifact's own run of that experiment: the pod order and node rank of its
/// per-attempt log `peer-fgd/results/events_<log>_default_tune1.3_seed42.csv` (10,866
/// pods; `log` = `FGD` or `BestFit`).
///
/// # Errors
/// [`crate::run::RunError`] when the traces or the log cannot be read.
pub fn peer_replay_setup(
    trace_dir: &std::path::Path,
    log: &str,
) -> Result<FgdSetup, crate::run::RunError> {
    use crate::inflation::{self, peer::PeerLog};
    let loaded = scenario::parse(
        include_str!("../scenarios/openb-fgd.toml"),
        "<openb-fgd>",
        std::path::PathBuf::from("."),
    )?;
    let exp = inflation::experiment(&loaded, &fgd_opts(trace_dir))?;
    let log = PeerLog::read(&trace_dir.join(format!(
        "peer-fgd/results/events_{log}_default_tune1.3_seed42.csv"
    )))?;
    let order = log.order(&exp)?;
    let rank = log.rank(&exp.fleet)?.rank;
    Ok(FgdSetup { exp, order, rank })
}

fn fgd_opts(trace_dir: &std::path::Path) -> crate::run::RunOptions {
    crate::run::RunOptions {
        seed: None,
        trace_dir: crate::scenario::TraceDir(trace_dir.to_path_buf()),
        out_dir: None,
        keep_rows: false,
    }
}

/// One run of `policy` over the setup's order and rank (random-policy seed 42).
pub fn run_fgd(
    setup: &FgdSetup,
    policy: fleetsim_policies::PlacementKind,
    cfg: crate::inflation::RunConfig,
) -> crate::inflation::RunTrace {
    crate::inflation::run_one_with(
        &setup.exp,
        policy,
        42,
        &setup.order,
        setup.rank.clone(),
        cfg,
    )
}
