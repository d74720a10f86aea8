//! `fleetsim bench`: runs the bench workloads once each, in a fresh child process per workload
//! (so each peak-memory figure is its own), and prints wall time, jobs/s, events/s, peak
//! memory and time per job, plus growth curves over job count and fleet size. Every figure
//! comes with the CPU time the run got besides its wall time, so a run slowed by other work on
//! the machine shows as wall ≫ CPU (and the load average is printed first).

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::benchmarks;
use crate::run::{run_scenario, RunOptions};
use crate::scenario::TraceDir;

/// One measured run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    /// Workload name.
    pub workload: String,
    /// Jobs submitted.
    pub jobs: u64,
    /// Nodes.
    pub nodes: u64,
    /// Events applied.
    pub events: u64,
    /// Wall time of the simulation (fleet build, generation, run), seconds.
    pub wall_s: f64,
    /// CPU time (user + system, all threads) the process used over the same span, seconds.
    #[serde(default)]
    pub cpu_s: f64,
    /// Peak resident memory of the process, MiB (`VmHWM`).
    pub peak_mib: f64,
    /// Occupancy reached over the whole measurement window (first submit → last
    /// completion, the drain included).
    pub occupancy: f64,
    /// Mean wait, seconds.
    pub mean_wait_s: f64,
    /// Occupancy over the arrival window after a warm-up (see [`crate::benchmarks`]): what
    /// the workload's name promises.
    #[serde(default)]
    pub occupancy_arrivals: Option<f64>,
    /// The occupancy the workload should reach over its arrival window.
    #[serde(default)]
    pub nominal_occupancy: Option<f64>,
    /// 99th-percentile wait, seconds.
    #[serde(default)]
    pub p99_wait_s: f64,
    /// Mean pending-queue depth over the arrival window, jobs.
    #[serde(default)]
    pub pending_mean: f64,
    /// Most jobs pending at once, over the whole run.
    #[serde(default)]
    pub pending_max: u64,
    /// Preemptions.
    #[serde(default)]
    pub preemptions: u64,
    /// FGD workloads: the placement loop alone (after reading the inputs), seconds.
    #[serde(default)]
    pub place_s: Option<f64>,
    /// `sweep_8`: digest of the eight summaries (equal digests = byte-identical results).
    #[serde(default)]
    pub digest: Option<String>,
}

/// CPU time (user + system, every thread) of this process so far, seconds, from
/// `/proc/self/stat` (clock ticks of 10 ms); NaN where that file does not exist.
fn cpu_time_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which may hold spaces) start at state (field 3);
    // utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// The 1-minute load average (`/proc/loadavg`).
fn load_average() -> Option<String> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Runs one workload in this process on `nodes` 8-GPU nodes (`None`: the workload's own
/// fleet size, [`benchmarks::WORKLOADS`]) and returns its measurement.
///
/// # Errors
/// An unknown workload name, or a failed run.
pub fn measure(workload: &str, jobs: u64, nodes: Option<u32>) -> Result<Measurement> {
    if let Some(m) = measure_fgd(workload)? {
        return Ok(m);
    }
    if let Some(threads) = workload.strip_prefix("sweep_8:") {
        return measure_sweep(threads.parse().context("sweep_8:<threads>")?, jobs);
    }
    if let Some(row) = workload.strip_prefix("floor:") {
        return measure_floor(row, jobs, nodes);
    }
    let known: Vec<&str> = benchmarks::WORKLOADS.iter().map(|(n, _)| *n).collect();
    if !known.contains(&workload) {
        bail!(
            "unknown bench workload `{workload}`; known: {}, floor:<{}>, sweep_8:<threads>, openb_fgd_inflation, peer_replay:<FGD|BestFit>:<on|off>",
            known.join(", "),
            FLOOR_ROWS.map(|(r, ..)| r).join("|")
        );
    }
    let w = benchmarks::bench_workload(workload, jobs, nodes).map_err(anyhow::Error::msg)?;
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(std::path::PathBuf::from("unused")),
        out_dir: None,
        keep_rows: false,
    };
    let (t, c) = (Instant::now(), cpu_time_s());
    let out = run_scenario(&w.loaded, &opts, &mut |_, _| {})?;
    let wall_s = t.elapsed().as_secs_f64();
    let cpu_s = cpu_time_s() - c;
    let arrivals = benchmarks::arrival_window(&out.result.occupancy, w.arrival_span_s);
    Ok(Measurement {
        workload: workload.to_string(),
        jobs: out.result.counts.submitted,
        nodes: out.summary.fleet.nodes,
        events: out.result.events,
        wall_s,
        cpu_s,
        peak_mib: peak_rss_mib(),
        occupancy: out.summary.occupancy.unwrap_or(0.0),
        mean_wait_s: out.summary.wait_s.mean.unwrap_or(0.0),
        occupancy_arrivals: arrivals.map(|a| a.0),
        nominal_occupancy: Some(w.nominal_occupancy),
        p99_wait_s: out.summary.wait_s.p99.unwrap_or(0.0),
        pending_mean: arrivals.map_or(0.0, |a| a.1),
        pending_max: out.result.occupancy.pending_max,
        preemptions: out.summary.preemption.preemptions,
        place_s: None,
        digest: None,
    })
}

/// The rows with a floor ([`benchmarks::floor`]): the row, the floor's offered load and
/// whether its queue is strict FIFO (the saturated rows' floor is best-effort FIFO, theirs
/// without quota or preemption; `fleet_1m_gpus` is strict FIFO, as the row).
const FLOOR_ROWS: [(&str, f64, bool); 4] = [
    ("saturated_besteffort", 1.1, false),
    ("saturated_quota_preempt", 1.1, false),
    ("saturated_las", 1.1, false),
    ("fleet_1m_gpus", 0.95, true),
];

/// The floor of bench row `row` ([`FLOOR_ROWS`]) at `jobs` jobs on `nodes` nodes (`None`:
/// the row's own fleet size): its CPU time, mean wait and most jobs pending.
fn measure_floor(row: &str, jobs: u64, nodes: Option<u32>) -> Result<Measurement> {
    let Some(&(_, load, strict)) = FLOOR_ROWS.iter().find(|(r, ..)| *r == row) else {
        bail!(
            "no floor for bench workload `{row}`; floors: {}",
            FLOOR_ROWS.map(|(r, ..)| r).join(", ")
        );
    };
    let nodes = nodes.unwrap_or(benchmarks::default_nodes(row).map_err(anyhow::Error::msg)?);
    if jobs == 0 || nodes < 16 {
        bail!("a floor run needs at least 1 job and 16 nodes (got {jobs} jobs, {nodes} nodes)");
    }
    let (t, c) = (Instant::now(), cpu_time_s());
    let f = benchmarks::floor::run(
        jobs,
        nodes as usize,
        load,
        strict,
        benchmarks::CAP_S,
        benchmarks::mean_runtime_s(),
    );
    let wall_s = t.elapsed().as_secs_f64();
    let cpu_s = cpu_time_s() - c;
    Ok(Measurement {
        workload: format!("floor:{row}"),
        jobs: f.jobs,
        nodes: u64::from(nodes),
        events: 0,
        wall_s,
        cpu_s,
        peak_mib: peak_rss_mib(),
        occupancy: 0.0,
        mean_wait_s: f.mean_wait_s,
        occupancy_arrivals: None,
        nominal_occupancy: None,
        p99_wait_s: 0.0,
        pending_mean: 0.0,
        pending_max: f.max_pending as u64,
        preemptions: 0,
        place_s: None,
        digest: None,
    })
}

/// `sweep_8` on `threads` threads (eight seeds × `jobs` jobs), with a digest of its results.
fn measure_sweep(threads: usize, jobs: u64) -> Result<Measurement> {
    use std::hash::{Hash, Hasher};
    let (t, c) = (Instant::now(), cpu_time_s());
    let runs = benchmarks::sweep_8(jobs, threads);
    let wall_s = t.elapsed().as_secs_f64();
    let cpu_s = cpu_time_s() - c;
    let text = serde_json::to_string(&runs)?;
    // A digest only to compare two runs of this binary (not a stable format).
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    Ok(Measurement {
        workload: format!("sweep_8:{threads}"),
        jobs: jobs * 8,
        nodes: 16_384,
        events: 0,
        wall_s,
        cpu_s,
        peak_mib: peak_rss_mib(),
        occupancy: 0.0,
        mean_wait_s: 0.0,
        occupancy_arrivals: None,
        nominal_occupancy: None,
        p99_wait_s: 0.0,
        pending_mean: 0.0,
        pending_max: 0,
        preemptions: 0,
        place_s: None,
        digest: Some(format!("{:016x}:{}", h.finish(), text.len())),
    })
}

/// The FGD artifact's measured cost of its own run (SOURCE.md of `peer-fgd`): wall seconds
/// for FGD and BestFit.
const PEER_WALL_S: [(&str, f64); 2] = [("FGD", 1450.0), ("BestFit", 1793.0)];

/// The FGD experiment workloads: `openb_fgd_inflation` (seed 42, FGD, series on) and
/// `peer_replay:<FGD|BestFit>:<on|off>` (the artifact's order and rank from its log,
/// artifact arithmetic, fragmentation series on or off). Whole cost: reading the fleet, the
/// pod list and the log, then placing every pod. `None` for other names.
fn measure_fgd(workload: &str) -> Result<Option<Measurement>> {
    use crate::inflation::RunConfig;
    use fleetsim_policies::{PlacementKind, ScoreArithmetic};
    let (setup, policy, cfg): (_, _, RunConfig) = match workload.split(':').collect::<Vec<_>>()[..]
    {
        ["openb_fgd_inflation"] => {
            let dir = benchmarks::fgd_trace_dir().context("no openb traces")?;
            let t = Instant::now();
            (
                (t, benchmarks::openb_fgd_setup(&dir, 42)?),
                PlacementKind::Fgd,
                RunConfig::default(),
            )
        }
        ["peer_replay", log, series] => {
            let dir = benchmarks::fgd_trace_dir().context("no openb traces")?;
            let t = Instant::now();
            let policy = match log {
                "FGD" => PlacementKind::Fgd,
                "BestFit" => PlacementKind::FgdBestFit,
                other => bail!("unknown peer log `{other}`; known: FGD, BestFit"),
            };
            (
                (t, benchmarks::peer_replay_setup(&dir, log)?),
                policy,
                RunConfig {
                    frag_series: series == "on",
                    arithmetic: ScoreArithmetic::Artifact,
                },
            )
        }
        _ => return Ok(None),
    };
    let (t0, setup) = setup;
    let t1 = Instant::now();
    let trace = benchmarks::run_fgd(&setup, policy, cfg);
    let place_s = t1.elapsed().as_secs_f64();
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = cpu_time_s();
    let last = trace.events.last().copied().unwrap_or_default();
    Ok(Some(Measurement {
        workload: workload.to_string(),
        jobs: trace.events.len() as u64,
        nodes: setup.exp.fleet.nodes().len() as u64,
        events: trace.placed,
        wall_s,
        cpu_s,
        peak_mib: peak_rss_mib(),
        occupancy: last.allocated_milli as f64 / setup.exp.capacity_milli as f64,
        mean_wait_s: 0.0,
        occupancy_arrivals: None,
        nominal_occupancy: None,
        p99_wait_s: 0.0,
        pending_mean: 0.0,
        pending_max: 0,
        preemptions: 0,
        place_s: Some(place_s),
        digest: None,
    }))
}

/// The FGD section of `fleetsim bench` (skipped without the openb traces).
fn fgd_section() -> Result<()> {
    if benchmarks::fgd_trace_dir().is_none() {
        outln!(
            "FGD experiment: skipped (no openb traces in $FLEETSIM_TRACE_DIR, traces/public or ../shared/traces)"
        );
        return Ok(());
    }
    outln!(
        "FGD experiment (openb: 1,213 nodes, 6,212 GPUs), each in a fresh process: read fleet, pod list (and log), place every pod"
    );
    outln!(
        "{:<32} {:>6} {:>7} {:>8} {:>8} {:>7} {:>9} {:>7}  vs the artifact's own run",
        "workload",
        "pods",
        "placed",
        "total_s",
        "place_s",
        "cpu_s",
        "peak_MiB",
        "alloc"
    );
    let mut names: Vec<String> = Vec::new();
    for (log, _) in PEER_WALL_S {
        for series in ["on", "off"] {
            names.push(format!("peer_replay:{log}:{series}"));
        }
    }
    names.push("openb_fgd_inflation".into());
    for name in names {
        let m = in_child(&name, 0, 0)?;
        let versus = PEER_WALL_S
            .iter()
            .find(|(log, _)| name == format!("peer_replay:{log}:on"))
            .map_or(String::new(), |&(_, s)| {
                format!(
                    "{:.0} s / {:.3} s = {:.0}x faster",
                    s,
                    m.wall_s,
                    s / m.wall_s
                )
            });
        outln!(
            "{:<32} {:>6} {:>7} {:>8.3} {:>8.3} {:>7.2} {:>9.1} {:>6.2}%  {}",
            m.workload,
            m.jobs,
            m.events,
            m.wall_s,
            m.place_s.unwrap_or(f64::NAN),
            m.cpu_s,
            m.peak_mib,
            100.0 * m.occupancy,
            versus
        );
    }
    Ok(())
}

fn in_child(workload: &str, jobs: u64, nodes: u32) -> Result<Measurement> {
    match in_child_within(workload, jobs, nodes, None)? {
        Some(m) => Ok(m),
        None => bail!("bench child for {workload} timed out"),
    }
}

/// Runs one workload in a fresh child process; `Ok(None)` when it has not finished within
/// `limit` (the child is then killed).
fn in_child_within(
    workload: &str,
    jobs: u64,
    nodes: u32,
    limit: Option<std::time::Duration>,
) -> Result<Option<Measurement>> {
    use std::io::Read;
    let exe = std::env::current_exe().context("locating the fleetsim binary")?;
    let mut child = Command::new(exe)
        .args(["bench", "--child", workload, "--jobs"])
        .arg(jobs.to_string())
        .arg("--nodes")
        .arg(nodes.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("starting a bench child process")?;
    let started = Instant::now();
    // The measurement is one short JSON line, and stderr carries only an error: neither
    // fills a pipe while the child runs.
    let status = loop {
        if let Some(st) = child.try_wait().context("waiting for a bench child")? {
            break st;
        }
        if limit.is_some_and(|l| started.elapsed() > l) {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (mut out, mut err) = (Vec::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        o.read_to_end(&mut out)?;
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err)?;
    }
    if !status.success() {
        bail!("bench child for {workload} failed: {err}");
    }
    serde_json::from_slice(&out)
        .map(Some)
        .context("reading the child's measurement")
}

const HEADER: [&str; 18] = [
    "workload", "jobs", "nodes", "wall_s", "cpu_s", "jobs/s", "us/job", "peak_MiB", "occ_arr",
    "nominal", "occ_all", "wait_s", "p99_s", "queue", "q_max", "preempt", "floor_s", "x_floor",
];

fn header() -> String {
    let h = HEADER;
    format!(
        "{:<24} {:>9} {:>7} {:>8} {:>7} {:>10} {:>7} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7}",
        h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], h[12], h[13],
        h[14], h[15], h[16], h[17]
    )
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{:.1}%", 100.0 * v))
}

/// A row of the table; `floor`: the CPU time of its floor's run beside it (printed with
/// the ratio of the row's CPU time to it).
fn row(m: &Measurement, floor: Option<&Measurement>) -> String {
    let (floor_s, ratio) = floor.map_or_else(
        || ("–".to_string(), "–".to_string()),
        |f| {
            (
                format!("{:.2}", f.cpu_s),
                format!("{:.1}", m.cpu_s / f.cpu_s.max(0.01)),
            )
        },
    );
    format!(
        "{:<24} {:>9} {:>7} {:>8.3} {:>7.2} {:>10.0} {:>7.3} {:>8.1} {:>7} {:>7} {:>7} {:>8.0} {:>8.0} {:>8.0} {:>8} {:>8} {:>7} {:>7}",
        m.workload,
        m.jobs,
        m.nodes,
        m.wall_s,
        m.cpu_s,
        m.jobs as f64 / m.wall_s,
        m.wall_s / m.jobs as f64 * 1e6,
        m.peak_mib,
        pct(m.occupancy_arrivals),
        pct(m.nominal_occupancy),
        pct(Some(m.occupancy)),
        m.mean_wait_s,
        m.p99_wait_s,
        m.pending_mean,
        m.pending_max,
        m.preemptions,
        floor_s,
        ratio,
    )
}

/// The rows whose occupancy over the arrival window is more than 5 points off nominal.
fn off_nominal(m: &Measurement) -> Option<String> {
    let (Some(got), Some(want)) = (m.occupancy_arrivals, m.nominal_occupancy) else {
        return None;
    };
    ((got - want).abs() > 0.05).then(|| {
        format!(
            "{} at {} jobs: occupancy over the arrival window {:.1}% is more than 5 points off its nominal {:.1}%",
            m.workload,
            m.jobs,
            100.0 * got,
            100.0 * want
        )
    })
}

/// The `fleetsim bench` command.
///
/// # Errors
/// A failed child run.
pub fn main(
    child: Option<String>,
    jobs: u64,
    nodes: Option<u32>,
    quick: bool,
    serial: bool,
) -> Result<()> {
    if let Some(w) = child {
        let m = measure(&w, jobs, nodes)?;
        outln!("{}", serde_json::to_string(&m)?);
        return Ok(());
    }
    outln!(
        "load average (1 min) before the runs: {} on {} cores; wall ≫ cpu below means the run waited for a core",
        load_average().unwrap_or_else(|| "?".into()),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    outln!(
        "columns: occ_arr = occupancy over the arrival window after a 4 h warm-up (what the name promises), \
         nominal = what it should be, occ_all = first submit → last completion; wait_s / p99_s = mean / \
         99th-percentile wait; queue = mean pending jobs over the arrival window; q_max = most pending at once"
    );
    if row_workers(serial) == 1 {
        outln!("rows run one at a time, each single-threaded in its own process");
    } else {
        outln!(
            "rows run {} at a time, one process per core, each single-threaded (cpu_s is each run's own; \
             a run beside another measured 6-8 % more CPU time than alone on the 2-core VM; --serial runs one at a time)",
            row_workers(serial)
        );
    }
    outln!("{}", header());
    let big = if quick { 100_000 } else { 1_000_000 };
    let limit = std::time::Duration::from_secs(SATURATED_LIMIT_S);
    let mut rows: Vec<BenchRow> = vec![
        BenchRow::new("replay_1m_fifo_bestfit", big, 16_384, None),
        BenchRow::new("replay_1m_quota_topology", big, 16_384, None),
    ];
    let sizes: &[u64] = if quick {
        &[100_000]
    } else {
        &[100_000, 1_000_000]
    };
    let mut heading = Some(format!(
        "saturated fleets (1,280 nodes = 10,240 GPUs, 110 % offered load; at most {SATURATED_LIMIT_S} s a run):"
    ));
    for name in [
        "saturated_besteffort",
        "saturated_quota_preempt",
        "saturated_las",
    ] {
        for &jobs in sizes {
            let mut r = BenchRow::new(name, jobs, 1_280, Some(limit));
            r.before = heading.take();
            rows.push(r);
        }
    }
    if !quick {
        let mut r = BenchRow::new("fleet_1m_gpus", 10_000_000, 131_072, Some(limit));
        r.before = Some(
            "fleet_1m_gpus (131,072 nodes = 1,048,576 GPUs, 95 % load, FIFO + best-fit):".into(),
        );
        rows.push(r);
    }
    let growth_sizes: &[u64] = if quick {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    for (i, &jobs) in growth_sizes.iter().enumerate() {
        let mut r = BenchRow::new("replay_1m_fifo_bestfit", jobs, 16_384, None);
        r.checked = false;
        if i == 0 {
            r.before = Some("growth over jobs (16,384 nodes):".into());
        }
        rows.push(r);
    }
    for (i, nodes) in [1_024u32, 16_384, 65_536].into_iter().enumerate() {
        let mut r = BenchRow::new("replay_1m_fifo_bestfit", big, nodes, None);
        r.checked = false;
        if i == 0 {
            r.before = Some(format!("growth over nodes ({big} jobs):"));
        }
        rows.push(r);
    }
    let mut off = Vec::new();
    // CPU seconds per job of each saturated row, by job count, for the growth lines.
    let mut per_job: Vec<(&str, u64, f64)> = Vec::new();
    for (r, out) in rows.iter().zip(run_rows(&rows, row_workers(serial))) {
        if let Some(b) = &r.before {
            outln!("{b}");
        }
        let (m, floor) = out?;
        match m {
            Some(m) => {
                outln!("{}", row(&m, floor.as_ref()));
                if r.checked {
                    off.extend(off_nominal(&m));
                }
                if r.floor {
                    per_job.push((r.workload, r.jobs, m.cpu_s / m.jobs.max(1) as f64));
                }
            }
            None => outln!(
                "{:<24} {:>9} {:>7} not finished within {} s (killed)",
                r.workload,
                r.jobs,
                r.nodes,
                r.limit.map_or(0, |l| l.as_secs())
            ),
        }
    }
    outln!(
        "floor_s: CPU time of the floor (benchmarks::floor: the same arrivals, sizes and run-time cap, \
         best-fit over free-GPU buckets, no quota, preemption, topology or metrics) run right after the row, \
         in the same worker; x_floor = cpu_s / floor_s"
    );
    for (name, jobs, us) in &per_job {
        if let Some((_, j0, us0)) = per_job.iter().find(|(n, j, _)| n == name && *j < *jobs) {
            outln!(
                "{name}: CPU per job {:.2} µs at {j0} jobs, {:.2} µs at {jobs} jobs: growth {:.2}x",
                us0 * 1e6,
                us * 1e6,
                us / us0
            );
        }
    }
    let sweep_jobs = if quick { 20_000 } else { 100_000 };
    let one = in_child("sweep_8:1", sweep_jobs, 16_384)?;
    let two = in_child("sweep_8:2", sweep_jobs, 16_384)?;
    let same = one.digest.is_some() && one.digest == two.digest;
    outln!(
        "sweep_8 (8 seeds x {sweep_jobs} jobs, a fresh process each): 1 thread {:.3} s wall / {:.2} s cpu, \
         2 threads {:.3} s wall / {:.2} s cpu ({:.2} cores busy); speed-up {:.2}x wall, results {}",
        one.wall_s,
        one.cpu_s,
        two.wall_s,
        two.cpu_s,
        two.cpu_s / two.wall_s,
        one.wall_s / two.wall_s,
        if same { "byte-identical" } else { "DIFFERENT" }
    );
    outln!(
        "state per job in flight: {} bytes (engine record) + per finished job 28 bytes of wait/JCT/slowdown samples and the wait's tenant",
        crate::engine::job_record_bytes()
    );
    if !same {
        bail!("sweep_8 results differ between 1 and 2 threads");
    }
    fgd_section()?;
    if !off.is_empty() {
        bail!("{}", off.join("\n"));
    }
    Ok(())
}

/// One row of the main table: a workload run in its own child process.
struct BenchRow {
    workload: &'static str,
    jobs: u64,
    nodes: u32,
    /// Killed (and said so) after this long.
    limit: Option<std::time::Duration>,
    /// A line printed before the row (a section heading).
    before: Option<String>,
    /// Whether its occupancy is checked against nominal (the growth rows are not).
    checked: bool,
    /// Whether its floor ([`FLOOR_ROWS`]) runs after it, in the same worker.
    floor: bool,
}

impl BenchRow {
    fn new(
        workload: &'static str,
        jobs: u64,
        nodes: u32,
        limit: Option<std::time::Duration>,
    ) -> BenchRow {
        BenchRow {
            workload,
            jobs,
            nodes,
            limit,
            before: None,
            checked: true,
            floor: FLOOR_ROWS.iter().any(|(r, ..)| *r == workload),
        }
    }
}

/// How many rows run at once: one (`serial`), else one per core, at most two (the machine
/// the targets are set on has two). Each row is a single-threaded child process, so its
/// CPU time is its own; `wall ≫ cpu` still shows a run that waited for a core.
fn row_workers(serial: bool) -> usize {
    if serial {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

/// A row's measurement (`None`: killed at its limit) and its floor's, when it has one.
type RowResult = Result<(Option<Measurement>, Option<Measurement>)>;

/// Runs `rows` in child processes, `workers` at a time, the largest first (by jobs ×
/// a per-workload weight, so the longest runs do not start last), each row's floor right
/// after it in the same worker, and returns the results in `rows`' order.
fn run_rows(rows: &[BenchRow], workers: usize) -> Vec<RowResult> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let weight = |r: &BenchRow| -> u64 {
        // Relative cost per job, from the figures in benches/README.md.
        let per_job = match r.workload {
            "saturated_quota_preempt" => 100,
            "saturated_las" => 50,
            "saturated_besteffort" => 4,
            _ => 1,
        };
        r.jobs * per_job
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(weight(&rows[i])), i));
    let results: Vec<Mutex<Option<RowResult>>> = rows.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let r = &rows[i];
                let m = in_child_within(r.workload, r.jobs, r.nodes, r.limit).and_then(|m| {
                    let floor = if r.floor && m.is_some() {
                        Some(in_child(&format!("floor:{}", r.workload), r.jobs, r.nodes)?)
                    } else {
                        None
                    };
                    Ok((m, floor))
                });
                *results[i].lock().expect("no worker panics holding it") = Some(m);
            });
        }
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("no worker panics holding it")
                .expect("every row was run")
        })
        .collect()
}

/// Longest a saturated bench run may take before `fleetsim bench` kills it and says so,
/// seconds.
pub const SATURATED_LIMIT_S: u64 = 150;
