//! The fixed, seeded workloads of the benches (`benches/`) and of `fleetsim bench`, named after
//! the scenario they stand for. Every workload has a nominal occupancy, and `fleetsim bench`
//! prints what each run actually reached (occupancy over the arrival window, waits, queue
//! depth, preemptions), failing a run more than 5 points off its nominal occupancy.
//!
//! All share a Philly-like job mix: 93.2 % one GPU; 2, 4, 8, 16, 32, 64, 128 GPUs in the
//! proportions of `philly_jobs_pollux.csv` (above 8 GPUs, gangs of 8-GPU tasks); log-normal
//! run times with Philly's median (1,144 s) and σ = 1.5, **capped at 4 hours** ([`CAP_S`]) so
//! that the arrivals last several times the longest job and the fleet reaches steady state
//! (uncapped, Philly's 53-day tail kept the old `replay_1m_*` runs filling for their whole
//! 11-hour arrival span, at 1.9 % occupancy over first submit → last completion); Poisson
//! arrivals at the workload's offered load (fraction of the GPUs, from the capped mean
//! run time [`mean_runtime_s`]), four tenants of equal demand; 8-GPU HGX H100 nodes in 4
//! cells.
//!
//! | workload | fleet | load | policy | nominal occupancy |
//! |---|---|---|---|---|
//! | `replay_1m_fifo_bestfit` | 16,384 nodes | 90 % | one strict-FIFO queue, best-fit, first-fit cells | 90 % |
//! | `replay_1m_quota_topology` | 16,384 nodes | 90 % | a queue per tenant in one cohort (nominal 40/30/20/10 %), DRF, EASY backfill (oracle estimates), gangs in as few blocks as possible | 90 % |
//! | `saturated_besteffort` | 1,280 nodes | 110 % | one best-effort-FIFO queue, best-fit | 100 % (a standing queue) |
//! | `saturated_quota_preempt` | 1,280 nodes | 110 % | the quota tables above with borrowing, DRF, EASY backfill, reclaim and fair-sharing preemption (grace 30 s, checkpoints every 30 min), topology-aware gangs, node failures (MTBF 2,000 h, repair 1 h) | 100 % |
//! | `saturated_las` | 1,280 nodes | 110 % | Tiresias 2D-LAS (3,250 / 7,200 GPU-s), LAS preemption, best-effort queue | 100 % |
//! | `fleet_1m_gpus` | 131,072 nodes (1,048,576 GPUs) | 95 % | FIFO + best-fit | 95 % |
//!
//! Occupancy "over the arrival window" is measured from the time-series intervals that lie
//! wholly between the first submit plus one cap (warm-up: every job then running started
//! after the first submit) and the expected last arrival (`jobs` / arrival rate); it is the
//! fleet's steady-state occupancy, not the drain after the last arrival.
//!
//! `openb_fgd_inflation`: one seed of the FGD paper's inflation experiment on the real openb
//! fleet and pod list ([`openb_fgd_setup`], needs the public traces), and the FGD artifact's
//! own run of it replayed from its log ([`peer_replay_setup`]); [`run_fgd`] places every pod
//! with the per-attempt fragmentation series on or off.

use crate::scenario::{self, Loaded};

pub mod floor;

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
/// Log-normal σ: a heavy tail (uncapped mean ≈ 3.1 × median).
pub const SIGMA: f64 = 1.5;
/// Longest run time of a bench job, seconds (4 h; 4.6 % of the log-normal's mass lies above
/// it): short against every workload's arrival span, so the runs reach steady state.
pub const CAP_S: f64 = 14_400.0;

/// Mean of the bench's capped log-normal run time, seconds (2,683 s for the bench's
/// 1,144 s median, σ 1.5, 1 s floor and 4 h cap), from the generator's own closed form
/// ([`crate::workload::synthetic::RuntimeDist::mean_s`]).
pub fn mean_runtime_s() -> f64 {
    crate::workload::synthetic::RuntimeDist::Lognormal {
        median_s: PHILLY_MEDIAN_S,
        sigma: SIGMA,
        min_s: 1.0,
        max_s: Some(CAP_S),
    }
    .mean_s()
}

/// Mean GPUs per job of the Philly size mix.
pub fn mean_gpus() -> f64 {
    let total_jobs: u64 = PHILLY_SIZES.iter().map(|&(_, n)| n).sum();
    PHILLY_SIZES
        .iter()
        .map(|&(g, n)| g as f64 * n as f64)
        .sum::<f64>()
        / total_jobs as f64
}

/// Poisson arrival rate, jobs per hour, that offers `load` × the GPUs of `nodes` 8-GPU nodes.
pub fn arrival_rate_per_hour(nodes: u32, load: f64) -> f64 {
    let gpus = nodes as f64 * 8.0;
    load * gpus / (mean_gpus() * mean_runtime_s()) * 3600.0
}

/// Cells of every bench fleet ([`replay_toml`]): the nodes are split evenly over them.
pub const BENCH_CELLS: u32 = 4;

/// Scenario TOML for `jobs` jobs on `nodes` 8-GPU nodes split over [`BENCH_CELLS`] cells, at
/// `load` offered load (fraction of GPUs), with the given queue mapping (`single` or
/// `per-tenant`) and policy tables.
pub fn replay_toml(
    name: &str,
    jobs: u64,
    nodes: u32,
    load: f64,
    queues: &str,
    policy: &str,
) -> String {
    let cells = BENCH_CELLS;
    let mut s = format!("name = \"{name}\"\nseed = 1\n");
    for c in 0..cells {
        let n = nodes / cells + u32::from(c < nodes % cells);
        s.push_str(&format!(
            "[[fleet.cells]]\nname = \"cell{c}\"\n[[fleet.cells.nodes]]\npreset = \"hgx-h100\"\ncount = {n}\n"
        ));
    }
    let rate_per_hour = arrival_rate_per_hour(nodes, load);
    let sizes: Vec<String> = PHILLY_SIZES
        .iter()
        .map(|&(g, n)| format!("{{ gpus = {g}, weight = {n}.0 }}"))
        .collect();
    s.push_str(&format!(
        "[workload]\nqueues = \"{queues}\"\n[workload.synthetic]\njobs = {jobs}\narrival_rate_per_hour = {rate_per_hour}\n\
         tenants = [{{ name = \"t0\", weight = 1.0 }}, {{ name = \"t1\", weight = 1.0 }}, {{ name = \"t2\", weight = 1.0 }}, {{ name = \"t3\", weight = 1.0 }}]\n\
         sizes = [{}]\n\
         runtime = {{ dist = \"lognormal\", median_s = {PHILLY_MEDIAN_S}, sigma = {SIGMA}, min_s = 1.0, max_s = {CAP_S} }}\n\
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

/// A bench workload, built: the scenario and what it should reach.
pub struct BenchWorkload {
    /// The scenario.
    pub loaded: Loaded,
    /// Offered load, fraction of the GPUs.
    pub load: f64,
    /// Occupancy the fleet should hold over the arrival window (`fleetsim bench` fails a
    /// run more than 5 points off it).
    pub nominal_occupancy: f64,
    /// 8-GPU nodes.
    pub nodes: u32,
    /// Expected time from the first to the last arrival, seconds (`jobs` / rate).
    pub arrival_span_s: f64,
}

/// The workload names [`bench_workload`] knows, with their default fleet sizes (nodes).
pub const WORKLOADS: &[(&str, u32)] = &[
    ("replay_1m_fifo_bestfit", 16_384),
    ("replay_1m_quota_topology", 16_384),
    ("saturated_besteffort", 1_280),
    ("saturated_quota_preempt", 1_280),
    ("saturated_las", 1_280),
    ("fleet_1m_gpus", 131_072),
];

/// The default fleet size (nodes) of the bench workload `name` ([`WORKLOADS`]).
///
/// # Errors
/// An unknown name: `unknown bench workload `…`; known: …`, listing [`WORKLOADS`].
pub fn default_nodes(name: &str) -> Result<u32, String> {
    match WORKLOADS.iter().find(|(n, _)| *n == name) {
        Some(&(_, nodes)) => Ok(nodes),
        None => {
            let known: Vec<&str> = WORKLOADS.iter().map(|(n, _)| *n).collect();
            Err(format!(
                "unknown bench workload `{name}`; known: {}",
                known.join(", ")
            ))
        }
    }
}

/// Best-effort FIFO (one queue) + best-fit + first-fit cells.
pub const BESTEFFORT_BESTFIT: &str = "[policy]\nqueue_order = \"fifo\"\nqueueing_strategy = \"best-effort-fifo\"\nplacement = \"best-fit\"\ncell_selection = \"first-fit\"";

/// `saturated_quota_preempt`'s tables: [`quota_topology_policy`] with topology-aware
/// placement, reclaim and fair-sharing preemption (grace 30 s, checkpoints every 30 min) and
/// node failures (MTBF 2,000 h per node, log-normal repairs of mean 1 h, grace 30 s, generated over the first 30 days).
pub fn quota_preempt_policy(nodes: u32) -> String {
    quota_topology_policy(nodes).replace("placement = \"best-fit\"", "placement = \"topology-aware\"")
        + "[policy.preemption]\nreclaim_within_cohort = \"any\"\nfair_sharing = [\"less-than-or-equal-to-final-share\"]\n\
           grace_s = 30\ncheckpoint_interval_s = 1800\n\
           [failures]\nuntil_s = 2592000\nmtbf_h = { H100 = 2000 }\nrepair = { distribution = \"lognormal\", mean_s = 3600, sigma = 1.0 }\ngrace_s = 30\n"
}

/// Tiresias 2D-LAS (queues at 3,250 and 7,200 GPU-seconds, its NSDI'19 setting) with LAS
/// preemption, one best-effort queue, best-fit.
pub const LAS_PREEMPT: &str = "[policy]\nqueue_order = { name = \"las\", thresholds_gpu_s = [3250, 7200] }\n\
    queueing_strategy = \"best-effort-fifo\"\nplacement = \"best-fit\"\n[policy.preemption]\nlas = true\n";

/// The bench workload `name` at `jobs` jobs on `nodes` 8-GPU nodes (`None`: its default
/// size, [`WORKLOADS`]).
///
/// # Errors
/// As [`bench_workload_at`].
pub fn bench_workload(name: &str, jobs: u64, nodes: Option<u32>) -> Result<BenchWorkload, String> {
    bench_workload_at(name, jobs, nodes, None)
}

/// [`bench_workload`] at offered load `load_override` instead of the workload's own (a
/// fraction of the fleet's GPU capacity, e.g. 0.9 for a fleet that keeps up with its
/// arrivals); its nominal occupancy is then `min(load, 1)`.
///
/// # Errors
/// A message for an unknown name (listing the known ones), no jobs, fewer nodes than the
/// fleet's four cells or more than [`crate::fleet::build::MAX_NODES`], or a load that is not
/// a positive finite number.
pub fn bench_workload_at(
    name: &str,
    jobs: u64,
    nodes: Option<u32>,
    load_override: Option<f64>,
) -> Result<BenchWorkload, String> {
    let nodes = nodes.unwrap_or(default_nodes(name)?);
    if jobs == 0 {
        return Err("a bench workload needs at least 1 job".into());
    }
    if nodes < BENCH_CELLS {
        return Err(format!(
            "a bench fleet has {BENCH_CELLS} cells, so at least {BENCH_CELLS} nodes (got {nodes})"
        ));
    }
    if nodes as usize > crate::fleet::build::MAX_NODES {
        return Err(format!(
            "a fleet has at most {} nodes (got {nodes})",
            crate::fleet::build::MAX_NODES
        ));
    }
    if let Some(l) = load_override.filter(|l| !(l.is_finite() && *l > 0.0)) {
        return Err(format!("offered load {l} is not a positive number"));
    }
    let (load, nominal, queues, policy) = match name {
        "replay_1m_fifo_bestfit" => (0.9, 0.9, "single", FIFO_BESTFIT.to_string()),
        "replay_1m_quota_topology" => (0.9, 0.9, "per-tenant", quota_topology_policy(nodes)),
        "saturated_besteffort" => (1.1, 1.0, "single", BESTEFFORT_BESTFIT.to_string()),
        "saturated_quota_preempt" => (1.1, 1.0, "per-tenant", quota_preempt_policy(nodes)),
        "saturated_las" => (1.1, 1.0, "single", LAS_PREEMPT.to_string()),
        "fleet_1m_gpus" => (0.95, 0.95, "single", FIFO_BESTFIT.to_string()),
        _ => unreachable!("every name of WORKLOADS has its settings"),
    };
    let (load, nominal) = match load_override {
        Some(l) => (l, l.min(1.0)),
        None => (load, nominal),
    };
    let text = replay_toml(name, jobs, nodes, load, queues, &policy);
    let loaded = scenario::parse(&text, "<bench>", std::path::PathBuf::from("."))
        .map_err(|e| e.to_string())?;
    Ok(BenchWorkload {
        loaded,
        load,
        nominal_occupancy: nominal,
        nodes,
        arrival_span_s: jobs as f64 / arrival_rate_per_hour(nodes, load) * 3600.0,
    })
}

/// What a run reached over its arrival window (module docs): occupancy, mean pending-queue
/// depth; `None` when the window holds no whole time-series interval.
pub fn arrival_window(occ: &crate::metrics::Occupancy, arrival_span_s: f64) -> Option<(f64, f64)> {
    let from = occ.window_start.0 + (CAP_S * 1000.0) as u64;
    let to = occ.window_start.0 + (arrival_span_s * 1000.0) as u64;
    let (mut alloc, mut avail, mut pending, mut len) = (0u128, 0u128, 0u128, 0u128);
    for r in occ
        .series
        .iter()
        .filter(|r| r.start.0 >= from && r.start.0 + r.len_ms <= to)
    {
        alloc += r.allocated_milli.iter().sum::<u128>();
        avail += r.available_milli.iter().sum::<u128>();
        pending += r.pending_ms;
        len += u128::from(r.len_ms);
    }
    (avail > 0 && len > 0).then(|| (alloc as f64 / avail as f64, pending as f64 / len as f64))
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
