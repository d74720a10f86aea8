//! Bounded load test on loopback: 1,000 `prioritize` requests (every tenth a `filter`) at
//! each of 8, 32 and 128 in flight, against a 100-node fleet of 8-GPU nodes in varied use;
//! reports p50 / p99 / max latency as seen by the client and the server's peak RSS. `FLEETSIM_LOAD_NODES` and `FLEETSIM_LOAD_REQUESTS`
//! change the size (the README's figures: `--release`, 100 and 1,213 nodes).

use std::time::{Duration, Instant};

use serde_json::json;

fn env_or(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn body(nodes: usize, i: usize) -> String {
    let items: Vec<_> = (0..nodes)
        .map(|n| {
            // Deterministic, varied usage: some GPUs shared, some full.
            let free: Vec<String> = (0..8)
                .map(|g| ((n * 7 + g * 3 + i) % 5 * 250).to_string())
                .collect();
            json!({
                "metadata": {
                    "name": format!("node-{n:04}"),
                    "labels": {
                        "nvidia.com/gpu.product": if n % 3 == 0 { "A100" } else { "H100" },
                        "fleetsim.io/domain": (n / 18).to_string(),
                    },
                    "annotations": {
                        "fleetsim.io/gpu-free-milli": free.join(","),
                        "fleetsim.io/cpu-free-milli": ((n % 4 + 1) * 16_000).to_string(),
                    }
                },
                "status": {"allocatable": {"cpu": "96", "memory": "768Gi", "nvidia.com/gpu": "8"}}
            })
        })
        .collect();
    let (gpus, ann) = match i % 3 {
        0 => ("1", json!({"fleetsim.io/gpu-milli": "500"})),
        1 => ("2", json!({})),
        _ => ("1", json!({"fleetsim.io/placement": "fgd-best-fit"})),
    };
    json!({
        "Pod": {
            "metadata": {"name": format!("pod-{i}"), "namespace": "load", "annotations": ann},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {
                "cpu": "8", "memory": "32Gi", "nvidia.com/gpu": gpus}}}]}
        },
        "Nodes": {"items": items}
    })
    .to_string()
}

/// The nearest-rank percentile of sorted latencies (the simulator's definition).
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    fleetsim::metrics::stats::nearest_rank(sorted, p).expect("at least one request")
}

/// The server's peak resident memory (`VmHWM`), KiB, from `/proc` (Linux; 0 elsewhere).
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Runs `requests` requests with `concurrency` in flight; latencies sorted.
async fn run_level(
    base: &str,
    bodies: &[String],
    requests: usize,
    concurrency: usize,
) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let mut set = tokio::task::JoinSet::new();
    let mut lat = Vec::with_capacity(requests);
    for i in 0..requests {
        if set.len() >= concurrency {
            lat.push(set.join_next().await.unwrap().unwrap());
        }
        let verb = if i % 10 == 9 { "filter" } else { "prioritize" };
        let req = client
            .post(format!("{base}/{verb}"))
            .body(bodies[i % 3].clone());
        set.spawn(async move {
            let t = Instant::now();
            let r = req.send().await.expect("answered");
            assert_eq!(r.status(), 200);
            r.bytes().await.expect("body");
            t.elapsed()
        });
    }
    while let Some(r) = set.join_next().await {
        lat.push(r.unwrap());
    }
    lat.sort();
    lat
}

/// The release binary on loopback (a separate process, so that its RSS is its own), at
/// concurrency 8, 32 and 128 for a fixed number of requests each; every request must get
/// 200 (the default queue, 256, holds 128 in flight).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_load_on_loopback() {
    let nodes = env_or("FLEETSIM_LOAD_NODES", 100);
    let requests = env_or("FLEETSIM_LOAD_REQUESTS", 1_000);
    let (mut child, addr) = crate::hostile::spawn_binary(&[]);
    let base = format!("http://{addr}");
    // Three distinct bodies, prepared up front so the client measures the service only.
    let bodies: Vec<String> = (0..3).map(|i| body(nodes, i)).collect();
    for concurrency in [8, 32, 128] {
        let started = Instant::now();
        let lat = run_level(&base, &bodies, requests, concurrency).await;
        let wall = started.elapsed();
        let (p50, p99, max) = (
            percentile(&lat, 0.50),
            percentile(&lat, 0.99),
            *lat.last().unwrap(),
        );
        eprintln!(
            "load: {requests} requests ({nodes} nodes each, concurrency {concurrency}) in {:.1} s ({:.0}/s): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; server peak RSS {} MiB",
            wall.as_secs_f64(),
            requests as f64 / wall.as_secs_f64(),
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3,
            peak_rss_kib(child.id()) / 1024
        );
        assert_eq!(lat.len(), requests);
        // A sanity bound only (shared, loaded CI machines); the figures are in the README.
        assert!(p99 < Duration::from_secs(20), "p99 {p99:?}");
    }
    let _ = child.kill();
    let _ = child.wait();
}
