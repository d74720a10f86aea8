//! Per-tenant authorization of the real `serve` routes (issue 21 item 6) over loopback HTTP:
//! [`fleetsim_scheduler::serve::start`] on kueue-cohorts' spec (no job) with a tokens file of
//! two tenant principals, one for both tenants, and an admin; and a live cancel of a pending
//! job.

use std::path::PathBuf;

use fleetsim::scenario::TraceDir;
use fleetsim_policies::live::{Event, JobSpec};
use fleetsim_policies::TaskShape;
use fleetsim_scheduler::security::serve::{serve, ListenOptions};
use fleetsim_scheduler::serve::{start, ServeOptions};
use fleetsim_scheduler::service::{Clock, DEFAULT_RETAIN_DECISIONS};
use serde_json::{json, Value};

const A: &str = "tenant-a-token-0001";
const B: &str = "tenant-b-token-0002";
const AB: &str = "both-tenants-tok-03";
const OPS: &str = "admin-token-0000004";

const TOKENS: &str = r#"
[[token]]
token = "tenant-a-token-0001"
principal = "a-ci"
tenants = ["research-a"]

[[token]]
token = "tenant-b-token-0002"
principal = "b-ci"
tenants = ["research-b"]

[[token]]
token = "both-tenants-tok-03"
principal = "research-lead"
tenants = ["research-a", "research-b"]

[[token]]
token = "admin-token-0000004"
principal = "ops"
admin = true

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

/// Job `id` of tenant `tenant` in queue `tenant` (research-a: 0, research-b: 1): one task of
/// 4 whole GPUs.
fn submit(t: u64, id: u32, tenant: u32) -> Value {
    serde_json::to_value(Event::JobSubmitted {
        t,
        job: JobSpec {
            id,
            tenant,
            queue: tenant,
            priority: 0,
            submit: None,
            seq: u64::from(id),
            shape: TaskShape::whole_gpus(4),
            tasks: 1,
            models: vec![],
            cells: vec![],
            runtime_estimate_ms: None,
            topology: None,
            checkpoint_interval_ms: None,
            done_ms: 0,
            attained_gpu_ms: 0,
        },
    })
    .unwrap()
}

fn cancel(t: u64, job: u32) -> Value {
    json!({"type": "job_cancelled", "t": t, "job": job})
}

impl Server {
    async fn post(&self, token: &str, events: Vec<Value>) -> (u16, Value) {
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

fn err(msg: &str) -> Value {
    json!({ "error": msg })
}

fn err_at(msg: &str, index: usize) -> Value {
    json!({ "error": msg, "index": index })
}

fn none() -> Value {
    json!({"first_seq": 0, "decisions": []})
}

fn pending(job: u32) -> Value {
    json!({"job": job, "state": "pending", "nodes": [], "pending_reason": "not_tried"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_submit_read_and_cancel_only_their_own_jobs() {
    let s = server().await;
    // Submitting as one's own tenant: accepted; as another: 403, nothing applied.
    assert_eq!(s.post(A, vec![submit(0, 1, 0)]).await, (200, none()));
    assert_eq!(s.post(B, vec![submit(0, 2, 1)]).await, (200, none()));
    assert_eq!(
        s.post(A, vec![submit(0, 3, 1)]).await,
        (
            403,
            err_at(
                "principal `a-ci` may not submit job 3 as tenant `research-b`",
                0
            )
        )
    );
    // Cluster-wide events are the admin's: the whole batch is refused at the `pass`.
    assert_eq!(
        s.post(A, vec![submit(0, 4, 0), json!({"type": "pass", "t": 0})])
            .await,
        (
            403,
            err_at(
                "principal `a-ci` is not an admin; `pass` events are the cluster agent's",
                1
            )
        )
    );
    // A batch touching two tenants needs both: refused for a-ci, accepted for the lead.
    let mixed = || vec![submit(0, 5, 0), submit(0, 6, 1)];
    assert_eq!(
        s.post(A, mixed()).await,
        (
            403,
            err_at(
                "principal `a-ci` may not submit job 6 as tenant `research-b`",
                1
            )
        )
    );
    assert_eq!(s.post(AB, mixed()).await, (200, none()));

    // Reading: own jobs 200; another tenant's job and an unknown id the same 403 (an id's
    // existence does not leak); the admin reads all, 404 for the unknown id.
    assert_eq!(s.get(A, "/v1/jobs/1").await, (200, pending(1)));
    let not_a = |j: u32| err(&not_yours("a-ci", j));
    assert_eq!(s.get(A, "/v1/jobs/2").await, (403, not_a(2)));
    assert_eq!(s.get(A, "/v1/jobs/99").await, (403, not_a(99)));
    // Job 4's batch was refused whole: it does not exist.
    assert_eq!(s.get(A, "/v1/jobs/4").await, (403, not_a(4)));
    assert_eq!(s.get(OPS, "/v1/jobs/2").await, (200, pending(2)));
    assert_eq!(s.get(OPS, "/v1/jobs/4").await, (404, err("unknown job 4")));
    assert_eq!(s.get(AB, "/v1/jobs/2").await, (200, pending(2)));

    // The pending list is filtered to the principal's tenants (not tried yet: no pass).
    let list = |ids: &[u32]| json!({"jobs": ids.iter().map(|j| json!({"job": j, "pending_reason": "not_tried"})).collect::<Vec<_>>()});
    assert_eq!(s.get(A, "/v1/pending").await, (200, list(&[1, 5])));
    assert_eq!(s.get(B, "/v1/pending").await, (200, list(&[2, 6])));
    assert_eq!(s.get(OPS, "/v1/pending").await, (200, list(&[1, 2, 5, 6])));

    // The decision log and stream carry every tenant's decisions: admins only.
    let cluster_wide = err("principal `a-ci` is not an admin; this call is cluster-wide");
    assert_eq!(s.get(A, "/v1/decisions").await, (403, cluster_wide.clone()));
    assert_eq!(s.get(A, "/v1/decisions/stream").await, (403, cluster_wide));
    assert_eq!(
        s.get(OPS, "/v1/decisions").await,
        (
            200,
            json!({"first_seq": 0, "next": 0, "total": 0, "decisions": []})
        )
    );

    // Cancelling: another tenant's job and an unknown id the same 403; the own pending job
    // is withdrawn (no decision), and the next pass admits only the others.
    let not_b = |j: u32| not_yours("b-ci", j);
    assert_eq!(
        s.post(B, vec![cancel(0, 1)]).await,
        (403, err_at(&not_b(1), 0))
    );
    assert_eq!(
        s.post(B, vec![cancel(0, 98)]).await,
        (403, err_at(&not_b(98), 0))
    );
    assert_eq!(s.post(A, vec![cancel(10, 1)]).await, (200, none()));
    assert_eq!(s.get(A, "/v1/jobs/1").await, (403, not_a(1)));
    assert_eq!(s.get(OPS, "/v1/jobs/1").await, (404, err("unknown job 1")));
    // Ownership follows the batch: a job submitted and cancelled in one batch.
    assert_eq!(
        s.post(A, vec![submit(10, 7, 0), cancel(10, 7)]).await,
        (200, none())
    );
    let (code, reply) = s.post(OPS, vec![json!({"type": "pass", "t": 20})]).await;
    assert_eq!(code, 200);
    let admitted: Vec<(u64, u64)> = reply["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["type"], "admit", "{d}");
            (d["job"].as_u64().unwrap(), d["t"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(admitted, [(2, 20), (5, 20), (6, 20)]);
    assert_eq!(s.get(OPS, "/v1/pending").await, (200, list(&[])));
    // A running job of another tenant cannot be cancelled either; its own can.
    assert_eq!(
        s.post(A, vec![cancel(30, 2)]).await,
        (403, err_at(&not_yours("a-ci", 2), 0))
    );
    let (code, _) = s.post(B, vec![cancel(30, 2)]).await;
    assert_eq!(code, 200);
    assert_eq!(s.get(OPS, "/v1/jobs/2").await, (404, err("unknown job 2")));
}

/// The one `403` message for a job of another tenant and for an unknown id.
fn not_yours(principal: &str, j: u32) -> String {
    format!("principal `{principal}` has no job {j} among its tenants' jobs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_file_with_tenants_needs_the_tenant_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.toml");
    let cut = TOKENS.split("[tenants]").next().unwrap();
    std::fs::write(&path, cut).unwrap();
    let e = start(ServeOptions {
        spec: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-cohorts.toml"),
        wal: dir.path().join("wal"),
        trace_dir: TraceDir(PathBuf::from("/nonexistent")),
        listen: ListenOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            tokens: Some(path),
            ..ListenOptions::default()
        },
        clock: Clock::Event,
        retain_decisions: DEFAULT_RETAIN_DECISIONS,
        snapshot_every: 0,
    })
    .await
    .err()
    .unwrap();
    assert_eq!(
        e,
        "tokens file: principal `a-ci` lists tenants, but the file has no [tenants] table giving each tenant name its tenant number (the `tenant` of job events), e.g. [tenants] research-a = 0"
    );
}
