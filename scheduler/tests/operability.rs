//! What an operator reads (issue 43, attack 9 of "What was found"): before, decisions named
//! nodes, queues and tenants by index only, a rejected job answered `404` afterwards,
//! `node_failed` left its job "running" with nothing to say which jobs to report lost, a
//! job for a queue the spec does not have was admitted outside quota, and there was no
//! Prometheus `/metrics`. `serve` on kueue-cohorts' spec (cells hopper — 16 nodes of 8
//! H100 — and blackwell — 18 trays of 4 GB200 —; queues research-a, research-b,
//! product-a, product-b, interns) with a tokens file naming tenants research-a = 0 and
//! research-b = 1.

use std::path::PathBuf;

use fleetsim::scenario::TraceDir;
use fleetsim_scheduler::security::serve::{serve, ListenOptions};
use fleetsim_scheduler::serve::{start, ServeOptions};
use fleetsim_scheduler::service::{Clock, DEFAULT_RETAIN_DECISIONS};
use serde_json::{json, Value};

const OPS: &str = "ops-token-9f8e7d6c5b4a";
const A: &str = "team-a-token-1b2c3d4e5f";

const TOKENS: &str = r#"
[[token]]
token = "ops-token-9f8e7d6c5b4a"
principal = "ops"
admin = true

[[token]]
token = "team-a-token-1b2c3d4e5f"
principal = "a-ci"
tenants = ["research-a"]
queues = ["research-a"]

[tenants]
research-a = 0
research-b = 1
"#;

struct Server {
    base: String,
    c: reqwest::Client,
    _dir: tempfile::TempDir,
}

async fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokens.toml"), TOKENS).unwrap();
    let st = start(ServeOptions {
        spec: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-cohorts.toml"),
        wal: dir.path().join("wal"),
        trace_dir: TraceDir(PathBuf::from("/nonexistent")),
        listen: ListenOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            tokens: Some(dir.path().join("tokens.toml")),
            ..ListenOptions::default()
        },
        clock: Clock::Event,
        retain_decisions: DEFAULT_RETAIN_DECISIONS,
        snapshot_every: 0,
        segment_bytes: fleetsim_scheduler::wal::DEFAULT_SEGMENT_BYTES,
        log_retention: None,
        retain_ended_jobs: fleetsim_scheduler::served::DEFAULT_RETAIN_ENDED_JOBS,
        ha: None,
    })
    .await
    .unwrap();
    let base = format!("http://{}", st.addr);
    tokio::spawn(serve(
        st.listener,
        st.app,
        st.tls,
        std::future::pending::<()>(),
    ));
    Server {
        base,
        c: reqwest::Client::new(),
        _dir: dir,
    }
}

impl Server {
    async fn post(&self, token: &str, events: Value) -> (u16, Value) {
        let r = self
            .c
            .post(format!("{}/v1/events", self.base))
            .bearer_auth(token)
            .json(&json!({ "events": events }))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }

    async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        let r = self
            .c
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }
}

/// Job `id` of tenant 0 in queue 0 (research-a): `tasks` tasks of 8 whole GPUs.
fn submit(t: u64, id: u32, tasks: u32) -> Value {
    json!({"type": "job_submitted", "t": t, "job": {"id": id, "tenant": 0, "queue": 0,
        "seq": id, "tasks": tasks,
        "shape": {"num_gpu": 8, "gpu_milli": 1000, "cpu_milli": 0, "mem_mib": 0}}})
}

fn pass(t: u64) -> Value {
    json!({"type": "pass", "t": t})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_name_nodes_queues_and_tenants_by_index_only() {
    let s = server().await;
    let (code, _) = s.post(A, json!([submit(0, 1, 1)])).await;
    assert_eq!(code, 200);
    let (code, reply) = s.post(OPS, json!([pass(0)])).await;
    assert_eq!(code, 200, "{reply}");
    let d = &reply["decisions"][0];
    assert_eq!(d["type"], "admit");
    // Best-fit on two empty cells, least-loaded cell selection: hopper (cell 0), its
    // first node; the names sit beside the indices.
    assert_eq!(
        (d["cell"].as_u64(), d["tasks"][0]["node"].as_u64()),
        (Some(0), Some(0))
    );
    let node = s.get(OPS, "/v1/nodes/0").await.1["name"].clone();
    assert_eq!(
        d["names"],
        json!({"cell": "hopper", "nodes": [node], "queue": "research-a", "tenant": "research-a"})
    );
    // The decision log carries them too.
    let (_, page) = s.get(OPS, "/v1/decisions?from=0").await;
    assert_eq!(page["decisions"][0]["names"], d["names"]);
    // And a job's own record.
    let (_, job) = s.get(A, "/v1/jobs/1").await;
    assert_eq!(
        job["names"],
        json!({"queue": "research-a", "tenant": "research-a", "nodes": [node]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_job_answers_404_afterwards() {
    let s = server().await;
    // 100 tasks of 8 GPUs: 800 GPUs, more than either cell has (128 H100, 72 GB200).
    let (code, reply) = s.post(A, json!([submit(0, 2, 100)])).await;
    assert_eq!(code, 200);
    assert_eq!(reply["decisions"][0]["type"], "reject", "{reply}");
    let reason = reply["decisions"][0]["reason"].clone();
    let (code, job) = s.get(A, "/v1/jobs/2").await;
    assert_eq!(code, 200, "{job}");
    assert_eq!(
        job,
        json!({"job": 2, "state": "rejected", "t": 0, "reason": reason,
               "names": {"queue": "research-a", "tenant": "research-a", "nodes": []}})
    );
    // A finished job likewise.
    s.post(A, json!([submit(0, 3, 1)])).await;
    s.post(OPS, json!([pass(0)])).await;
    let (code, _) = s
        .post(
            OPS,
            json!([{"type": "job_finished", "t": 60_000, "job": 3}]),
        )
        .await;
    assert_eq!(code, 200);
    let (_, job) = s.get(A, "/v1/jobs/3").await;
    assert_eq!(
        (job["state"].as_str(), job["t"].as_u64()),
        (Some("finished"), Some(60_000))
    );
}

/// The README's node-failure walk-through, step by step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_failed_leaves_its_job_running_until_job_lost() {
    let s = server().await;
    s.post(A, json!([submit(0, 1, 1)])).await;
    let (_, reply) = s.post(OPS, json!([pass(0)])).await;
    let node = reply["decisions"][0]["tasks"][0]["node"].as_u64().unwrap();
    // 1. The node fails: it takes no new work; the job on it is still bound, and the
    //    service says which jobs are there to report.
    let (code, _) = s
        .post(
            OPS,
            json!([{"type": "node_failed", "t": 1_000, "node": node}]),
        )
        .await;
    assert_eq!(code, 200);
    let (_, n) = s.get(OPS, &format!("/v1/nodes/{node}")).await;
    assert_eq!(
        (n["schedulable"].as_bool(), n["cell"].as_str()),
        (Some(false), Some("hopper"))
    );
    assert_eq!(n["jobs"], json!([{"job": 1, "state": "running"}]));
    assert_eq!(s.get(A, "/v1/jobs/1").await.1["state"], "running");
    // 2. The cluster agent reports it lost (its pods are gone at 31 s): evicting.
    let (code, _) = s
        .post(
            OPS,
            json!([{"type": "job_lost", "t": 1_000, "job": 1, "release_at": 31_000}]),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        s.get(OPS, &format!("/v1/nodes/{node}")).await.1["jobs"],
        json!([{"job": 1, "state": "evicting"}])
    );
    // 3. Released: pending again; the next pass places it on another node.
    let (code, reply) = s
        .post(
            OPS,
            json!([{"type": "victim_released", "t": 31_000, "job": 1}, pass(31_000)]),
        )
        .await;
    assert_eq!(code, 200, "{reply}");
    let d = &reply["decisions"][0];
    assert_eq!(
        (d["type"].as_str(), d["job"].as_u64()),
        (Some("admit"), Some(1))
    );
    assert_ne!(d["tasks"][0]["node"].as_u64(), Some(node));
    assert_eq!(
        s.get(OPS, &format!("/v1/nodes/{node}")).await.1["jobs"],
        json!([])
    );
    // 4. Repaired: it takes work again.
    s.post(
        OPS,
        json!([{"type": "node_recovered", "t": 600_000, "node": node}]),
    )
    .await;
    assert_eq!(
        s.get(OPS, &format!("/v1/nodes/{node}")).await.1["schedulable"],
        true
    );
    // Nodes are the cluster agent's: a tenant may not read them.
    assert_eq!(s.get(A, &format!("/v1/nodes/{node}")).await.0, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_for_an_unknown_queue_is_admitted_outside_quota() {
    let s = server().await;
    let mut j = submit(0, 1, 1);
    j["job"]["queue"] = json!(5);
    let (code, body) = s.post(OPS, json!([j])).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["field"], "job.queue");
    assert_eq!(s.get(OPS, "/v1/jobs/1").await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn there_is_no_prometheus_metrics() {
    let s = server().await;
    s.post(A, json!([submit(0, 1, 1), submit(0, 2, 100)])).await;
    // More 8-GPU jobs than research-a's quota and borrowing admit: some wait.
    let many: Vec<Value> = (3..40).map(|i| submit(0, i, 1)).collect();
    s.post(A, Value::Array(many)).await;
    s.post(OPS, json!([pass(0)])).await;
    s.post(A, json!([{"type": "job_cancelled", "t": 0, "job": 39}]))
        .await;
    let r = s.c.get(format!("{}/metrics", s.base)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain; version=0.0.4");
    let text = r.text().await.unwrap();
    let value = |line_start: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(line_start))
            .unwrap_or_else(|| panic!("no `{line_start}` in\n{text}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    // 39 submits, one pass, one cancel; 1 reject (job 2).
    assert_eq!(
        value("fleetsim_scheduler_events_total{type=\"job_submitted\"}"),
        39.0
    );
    assert_eq!(value("fleetsim_scheduler_events_total{type=\"pass\"}"), 1.0);
    assert_eq!(
        value("fleetsim_scheduler_events_total{type=\"job_cancelled\"}"),
        1.0
    );
    assert_eq!(
        value("fleetsim_scheduler_decisions_total{type=\"reject\"}"),
        1.0
    );
    let admitted = value("fleetsim_scheduler_decisions_total{type=\"admit\"}");
    assert!(admitted > 0.0);
    assert_eq!(
        value("fleetsim_scheduler_batches_total{outcome=\"accepted\"}"),
        4.0
    );
    // Pending: the 38 admissible jobs less those admitted, less the one cancelled.
    let pending: f64 = text
        .lines()
        .filter(|l| l.starts_with("fleetsim_scheduler_pending_jobs{queue=\"research-a\""))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(pending, 38.0 - admitted - 1.0);
    assert_eq!(value("fleetsim_scheduler_pass_seconds_count"), 1.0);
    assert_eq!(value("fleetsim_scheduler_log_append_seconds_count"), 4.0);
    assert!(value("fleetsim_scheduler_log_bytes") > 0.0);
    assert_eq!(value("fleetsim_scheduler_log_records"), 4.0);
    // No snapshot yet (--snapshot-every 0 here).
    assert_eq!(value("fleetsim_scheduler_snapshot_seconds_count"), 0.0);
    assert!(
        text.contains(
            "fleetsim_scheduler_request_seconds_count{code=\"200\",route=\"/v1/events\"} 4"
        ),
        "{text}"
    );
}
