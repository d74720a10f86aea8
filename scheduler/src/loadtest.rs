//! `fleetsim-scheduler loadtest`: drives the service over loopback HTTP at a target event
//! rate and measures it against the targets of its README.
//!
//! The event stream is a fleetsim bench workload (`saturated_quota_preempt` by default: a
//! queue per tenant in one cohort with nominal quota and borrowing, DRF, EASY backfill,
//! reclaim and fair-sharing preemption, topology-aware gangs, node failures) on `nodes`
//! 8-GPU nodes, recorded by the simulator ([`fleetsim::run::run_scenario_live`]). The
//! service runs in this process with its write-ahead log (fsync per batch) on a loopback
//! port; one client sends numbered batches of `batch` events paced to `rate` events/s (one
//! request in flight). Printed: events/s achieved, per-batch latency p50 / p99 / max (POST to
//! reply, ms), the process's resident memory (VmRSS) sampled every second, and the time to
//! restart (open + replay) from the log it wrote. `--restart-events N` also writes a log of
//! the first N events in process (no HTTP) and times a restart from it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fleetsim::run::{live_twin, run_scenario_live, RunOptions};
use fleetsim::scenario::TraceDir;

use crate::service::{router, Batch, Options, Service};

/// What `loadtest` is given: also the `fleetsim-scheduler loadtest` command line (the
/// defaults are the command's).
#[derive(Clone, Debug, clap::Args)]
pub struct LoadOptions {
    /// Bench workload (see `fleetsim::benchmarks::WORKLOADS`; quota, DRF and preemption:
    /// saturated_quota_preempt).
    #[arg(long, default_value = "saturated_quota_preempt", value_parser = parse_workload)]
    pub workload: String,
    /// Jobs in the generated workload (at least 1).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: u64,
    /// 8-GPU nodes, split over the bench fleet's 4 cells (at least 4, at most
    /// `fleetsim::fleet::build::MAX_NODES` = 4,194,304).
    #[arg(long, default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(4..=fleetsim::fleet::build::MAX_NODES as i64))]
    pub nodes: u32,
    /// Offered load, a fraction of the fleet's GPU capacity, in [0.05, 4] (default: the
    /// workload's own, 1.1 for the saturated ones). Below 1 the pending queue stays bounded,
    /// so a long run shows whether the service's memory does.
    #[arg(long, value_parser = parse_load)]
    pub load: Option<f64>,
    /// Target rate, events per second (> 0; `inf`: as fast as the service answers).
    #[arg(long, default_value_t = 5000.0, value_parser = parse_positive)]
    pub rate: f64,
    /// Events per batch (at least 1).
    #[arg(long, default_value_t = 50, value_parser = parse_batch)]
    pub batch: usize,
    /// Longest run, seconds (> 0; stops earlier when the stream ends). No batch is sent
    /// whose paced start falls after it.
    #[arg(long, default_value_t = 60.0, value_parser = parse_positive)]
    pub duration_s: f64,
    /// Directory for the write-ahead logs `load.wal` and `restart.wal`: files of those
    /// names in it are replaced, and removed after; the directory is kept.
    #[arg(long, default_value = "out/loadtest")]
    pub dir: PathBuf,
    /// Also time a restart from a log of this many events (0 = skip).
    #[arg(long, default_value_t = 0)]
    pub restart_events: usize,
    /// Decisions the service keeps for `GET /v1/decisions` (`serve --retain-decisions`).
    #[arg(long, default_value_t = crate::service::DEFAULT_RETAIN_DECISIONS)]
    pub retain_decisions: usize,
    /// Events between the service's snapshots (`serve --snapshot-every`; 0: none). The
    /// restarts timed here load the last one and replay the log after it.
    #[arg(long, default_value_t = crate::service::DEFAULT_SNAPSHOT_EVERY)]
    pub snapshot_every: u64,
    /// Serve as a replica of `serve --ha` (etcd://host:port[/prefix], a prefix no other
    /// service uses): every batch is appended to the log in etcd before the local log. The
    /// service waits to be elected before the load starts.
    #[arg(long)]
    pub ha: Option<String>,
}

/// `--workload`: one of `fleetsim::benchmarks::WORKLOADS` (a bad name is a usage error,
/// exit 2, before anything is recorded).
fn parse_workload(s: &str) -> Result<String, String> {
    fleetsim::benchmarks::default_nodes(s).map(|_| s.to_string())
}

/// `--load`: a number in [0.05, 4]. (Lower loads stretch the arrivals over years.)
fn parse_load(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number (offered load, e.g. 0.9)"))?;
    if (0.05..=4.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("offered load {s} is outside [0.05, 4]"))
    }
}

/// `--rate`, `--duration-s`: a number above 0 (`inf` allowed).
fn parse_positive(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{s} is not above 0"))
    }
}

/// `--batch`: at least one event.
fn parse_batch(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{s}` is not a whole number of events of at least 1"
        )),
    }
}

fn rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The window, seconds, over which `batches` batches paced `interval_s` apart were sent in
/// a run of at most `duration_s` that took `elapsed_s`: a run cut short by the duration
/// covered the duration (or the batches' intervals, if fewer), not only the time its last
/// reply took; a client behind its pacing covered the time it took.
fn rate_window(batches: usize, interval_s: f64, duration_s: f64, elapsed_s: f64) -> f64 {
    elapsed_s.max((batches as f64 * interval_s).min(duration_s))
}

/// The nearest-rank percentile of sorted latencies (the simulator's definition); NaN for none.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    fleetsim::metrics::stats::nearest_rank(sorted, p).unwrap_or(f64::NAN)
}

/// Times opening the log at `wal` on a fresh twin, loading its snapshot when there is one
/// and replaying the rest; returns the seconds and what the restart did, as report text.
fn time_restart(
    loaded: &fleetsim::scenario::Loaded,
    opts: &RunOptions,
    wal: &Path,
) -> Result<(f64, String), String> {
    let twin = live_twin(loaded, opts).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let options = Options {
        policy_digest: crate::snapshot::policy_digest(&loaded.scenario.policy),
        ..Options::default()
    };
    let (_state, rec) = Service::with_wal(twin, wal, options)?;
    let secs = t0.elapsed().as_secs_f64();
    let how = match (&rec.snapshot, &rec.snapshot_unused) {
        (Some(s), _) => format!(
            "snapshot of {} events ({} bytes) loaded in {:.2} s, then {} batches replayed",
            s.events, s.bytes, s.seconds, rec.replayed_batches
        ),
        (None, Some(why)) => format!("no snapshot used ({why}); every batch replayed"),
        (None, None) => "no snapshot; every batch replayed".to_string(),
    };
    Ok((
        secs,
        format!("{} events, {} decisions; {how}", rec.events, rec.decisions),
    ))
}

/// Runs the load test; returns the report text.
///
/// # Errors
/// A message: unknown workload, a run that fails or records incompletely, I/O, HTTP.
pub async fn run(o: LoadOptions) -> Result<String, String> {
    let w = fleetsim::benchmarks::bench_workload_at(&o.workload, o.jobs, Some(o.nodes), o.load)?;
    // The log directory is made before the stream is recorded, so a bad one fails at once.
    std::fs::create_dir_all(&o.dir)
        .map_err(|e| format!("--dir {}: cannot make the directory: {e}", o.dir.display()))?;
    let loaded = w.loaded;
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(PathBuf::from(".")),
        out_dir: None,
        keep_rows: false,
    };
    let mut report = String::new();
    let t0 = Instant::now();
    let (l2, o2) = (loaded.clone(), opts.clone());
    let (out, twin) = tokio::task::spawn_blocking(move || run_scenario_live(&l2, &o2))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let rec = out.result.live.ok_or("recorder off")?;
    if let Some(u) = rec.unsupported {
        return Err(format!("the record is incomplete: {u}"));
    }
    let events = rec.events;
    report += &format!(
        "workload {} ({} jobs, {} nodes, offered load {:.2}): {} events, {} decisions recorded in {:.1} s\n",
        o.workload,
        o.jobs,
        o.nodes,
        w.load,
        events.len(),
        rec.decisions.len(),
        t0.elapsed().as_secs_f64()
    );
    // What the stream makes the fleet do, as the simulator measured it while recording
    // (the bench rows' fields): a standing queue shows here.
    let arrivals = fleetsim::benchmarks::arrival_window(&out.result.occupancy, w.arrival_span_s);
    let window = match arrivals {
        Some((occ, pending)) => format!(
            "occupancy {:.1} %, pending jobs {pending:.0} on average over the arrival window",
            occ * 100.0
        ),
        None => format!(
            "no arrival window measured (arrivals end within the first {} h, which it leaves out)",
            fleetsim::benchmarks::CAP_S / 3600.0
        ),
    };
    report += &format!(
        "the recorded run: {window}; {} pending at most; wait mean {:.0} s, p99 {:.0} s; {} preemptions\n",
        out.result.occupancy.pending_max,
        out.summary.wait_s.mean.unwrap_or(0.0),
        out.summary.wait_s.p99.unwrap_or(0.0),
        out.summary.preemption.preemptions
    );
    let wal = o.dir.join("load.wal");
    let _ = std::fs::remove_file(&wal);
    let policy_digest = crate::snapshot::policy_digest(&loaded.scenario.policy);
    let options = Options {
        retain_decisions: o.retain_decisions,
        snapshot_every: o.snapshot_every,
        policy_digest,
        ..Options::default()
    };
    let (state, _) = Service::with_wal(twin, &wal, options)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let base = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    if let Some(url) = &o.ha {
        let url = crate::ha::parse_url(url)?;
        let where_ = format!("{}{}", url.endpoint, url.prefix);
        let r =
            crate::ha::Replica::start(url, crate::ha::DEFAULT_TTL_S, base.clone(), state.clone())
                .await?;
        crate::service::lock(&state).set_replica(r.clone());
        let t = Instant::now();
        while crate::service::Replicate::health(&*r)["role"] != "leader" {
            if t.elapsed() > Duration::from_secs(30) {
                return Err(format!("--ha {where_}: not elected within 30 s"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        report += &format!(
            "replica of etcd at {where_}: elected in {:.2} s; every batch is appended there first\n",
            t.elapsed().as_secs_f64()
        );
    }
    let app = router(state);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let sampler_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = sampler_stop.clone();
    let sampler = tokio::spawn(async move {
        let start = Instant::now();
        let mut samples = Vec::new();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            samples.push((start.elapsed().as_secs_f64(), rss_mib().unwrap_or(f64::NAN)));
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        samples
    });
    let client = reqwest::Client::new();
    let all = Batch::numbered(&events, o.batch);
    let interval = Duration::from_secs_f64(o.batch as f64 / o.rate);
    let start = tokio::time::Instant::now();
    let mut lat = Vec::new();
    let mut sent = 0usize;
    let mut decisions = 0usize;
    for (i, b) in all.iter().enumerate() {
        // A batch whose paced start falls after the duration is not sent (nor waited for).
        let due = interval.mul_f64(i as f64);
        if due.as_secs_f64() >= o.duration_s || start.elapsed().as_secs_f64() >= o.duration_s {
            break;
        }
        tokio::time::sleep_until(start + due).await;
        let t = Instant::now();
        let r = client
            .post(format!("{base}/v1/events"))
            .json(b)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = r.status();
        let reply: serde_json::Value = r.json().await.map_err(|e| e.to_string())?;
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
        if !status.is_success() {
            return Err(format!("batch {i}: {status} {reply}"));
        }
        decisions += reply["decisions"].as_array().map_or(0, Vec::len);
        sent += b.events.len();
    }
    let elapsed = rate_window(
        lat.len(),
        interval.as_secs_f64(),
        o.duration_s,
        start.elapsed().as_secs_f64(),
    );
    sampler_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.await.map_err(|e| e.to_string())?;
    server.abort();
    lat.sort_by(f64::total_cmp);
    report += &format!(
        "sent {sent} events in {} batches of {} over {elapsed:.1} s: {:.0} events/s (target {}), {decisions} decisions\n",
        lat.len(),
        o.batch,
        sent as f64 / elapsed,
        o.rate
    );
    report += &format!(
        "batch latency (POST to reply, fsync included): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms\n",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(f64::NAN)
    );
    let rss: Vec<String> = samples
        .iter()
        .step_by((samples.len() / 12).max(1))
        .map(|(t, m)| format!("{t:.0}s {m:.0}"))
        .collect();
    report += &format!("RSS MiB over time: {}\n", rss.join(", "));
    let (l3, o3, w3) = (loaded.clone(), opts.clone(), wal.clone());
    let (secs, how) = tokio::task::spawn_blocking(move || time_restart(&l3, &o3, &w3))
        .await
        .map_err(|e| e.to_string())??;
    report += &format!(
        "restart from this log ({} bytes) in {secs:.2} s: {how}\n",
        std::fs::metadata(&wal).map_or(0, |m| m.len())
    );
    let _ = std::fs::remove_file(&wal);
    let _ = std::fs::remove_file(crate::snapshot::path_for(&wal));
    if o.restart_events > 0 {
        let n = o.restart_events.min(events.len());
        let big = o.dir.join("restart.wal");
        let _ = std::fs::remove_file(&big);
        let _ = std::fs::remove_file(crate::snapshot::path_for(&big));
        let (l4, o4, b4) = (loaded.clone(), opts.clone(), big.clone());
        let snap_every = o.snapshot_every;
        let bs = Batch::numbered(&events[..n], 500);
        let line = tokio::task::spawn_blocking(move || -> Result<String, String> {
            let twin = live_twin(&l4, &o4).map_err(|e| e.to_string())?;
            let options = Options {
                snapshot_every: snap_every,
                policy_digest,
                ..Options::default()
            };
            let (state, _) = Service::with_wal(twin, &b4, options)?;
            let t = Instant::now();
            {
                let mut svc = state.lock().map_err(|e| e.to_string())?;
                for b in bs {
                    svc.accept(b).map_err(|e| format!("{e:?}"))?;
                }
            }
            let write_s = t.elapsed().as_secs_f64();
            let last = state
                .lock()
                .map_err(|e| e.to_string())?
                .last_snapshot()
                .cloned();
            drop(state);
            let snap = match last {
                Some(w) => format!(
                    "; its last snapshot covers {} batches, {} bytes written in {:.2} s",
                    w.batches.map_or("no".into(), |b| b.to_string()),
                    w.bytes,
                    w.seconds
                ),
                None => "; no snapshot written".into(),
            };
            let (secs, how) = time_restart(&l4, &o4, &b4)?;
            Ok(format!(
                "restart from a {n}-event log ({} bytes, written in process in {write_s:.1} s{snap}) in {secs:.2} s: {how}\n",
                std::fs::metadata(&b4).map_or(0, |m| m.len())
            ))
        })
        .await
        .map_err(|e| e.to_string())??;
        report += &line;
        let _ = std::fs::remove_file(&big);
        let _ = std::fs::remove_file(crate::snapshot::path_for(&big));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_load_is_between_a_twentieth_and_four() {
        assert_eq!(parse_load("0.9"), Ok(0.9));
        assert_eq!(parse_load("4"), Ok(4.0));
        assert_eq!(parse_load("0.05"), Ok(0.05));
        assert!(parse_load("abc").unwrap_err().contains("not a number"));
        for bad in ["0", "1e-9", "-0.5", "4.5", "NaN", "inf"] {
            assert!(
                parse_load(bad).unwrap_err().contains("outside [0.05, 4]"),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_rate_is_over_the_paced_window() {
        // A run cut short after one batch: 50 events over the 1 s duration, not over the
        // 3 ms the one reply took (which read as 16,667 events/s).
        assert_eq!(rate_window(1, 10.0, 1.0, 0.003), 1.0);
        // Cut short by the batches themselves: 2 batches 0.1 s apart cover 0.2 s.
        assert_eq!(rate_window(2, 0.1, 30.0, 0.105), 0.2);
        // A full run, on pace: its own time (the last reply after the last interval).
        assert_eq!(rate_window(3000, 0.01, 30.0, 30.004), 30.004);
        // A client behind its pacing: the time it took.
        assert_eq!(rate_window(100, 0.01, 30.0, 42.0), 42.0);
    }

    #[test]
    fn rate_duration_and_batch_are_checked() {
        assert_eq!(parse_positive("5000"), Ok(5000.0));
        assert_eq!(parse_positive("inf"), Ok(f64::INFINITY));
        for bad in ["0", "-5", "NaN", "-inf"] {
            assert!(
                parse_positive(bad).unwrap_err().contains("not above 0"),
                "{bad}"
            );
        }
        assert!(parse_positive("fast").unwrap_err().contains("not a number"));
        assert_eq!(
            parse_workload("saturated_las"),
            Ok("saturated_las".to_string())
        );
        let e = parse_workload("nope").unwrap_err();
        assert!(
            e.starts_with("unknown bench workload `nope`; known: replay_1m_fifo_bestfit"),
            "{e}"
        );
        assert_eq!(parse_batch("50"), Ok(50));
        for bad in ["0", "-1", "1.5", ""] {
            assert!(
                parse_batch(bad).unwrap_err().contains("at least 1"),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_workload_sizes_are_errors_not_panics() {
        use fleetsim::benchmarks::bench_workload_at;
        let err = |jobs, nodes, load| match bench_workload_at(
            "saturated_quota_preempt",
            jobs,
            Some(nodes),
            load,
        ) {
            Ok(_) => panic!("{jobs} jobs on {nodes} nodes at {load:?} accepted"),
            Err(e) => e,
        };
        assert!(err(0, 16, None).contains("at least 1 job"));
        assert!(err(100, 3, None).contains("at least 4 nodes (got 3)"));
        assert!(err(100, 5_000_000, None).contains("at most 4194304 nodes (got 5000000)"));
        assert!(err(100, 16, Some(f64::NAN)).contains("not a positive number"));
        let unknown = bench_workload_at("nonsense", 100, Some(16), None)
            .err()
            .expect("refused");
        assert!(
            unknown.contains("known: replay_1m_fifo_bestfit"),
            "{unknown}"
        );
    }

    #[test]
    fn a_load_below_one_sets_the_nominal_occupancy() {
        let w = fleetsim::benchmarks::bench_workload_at(
            "saturated_quota_preempt",
            1000,
            Some(16),
            Some(0.9),
        )
        .expect("a bench workload");
        assert_eq!((w.load, w.nominal_occupancy), (0.9, 0.9));
        let own = fleetsim::benchmarks::bench_workload("saturated_quota_preempt", 1000, Some(16))
            .expect("a bench workload");
        assert_eq!((own.load, own.nominal_occupancy), (1.1, 1.0));
    }
}
