//! Per-tenant authorization of the real `serve` routes over loopback HTTP:
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
queues = ["research-a"]
priority_classes = ["batch", "urgent"]

[[token]]
token = "tenant-b-token-0002"
principal = "b-ci"
tenants = ["research-b"]
queues = ["research-b"]

[[token]]
token = "both-tenants-tok-03"
principal = "research-lead"
tenants = ["research-a", "research-b"]
queues = ["research-a", "research-b"]
runtime_estimates = true

[[token]]
token = "admin-token-0000004"
principal = "ops"
admin = true

[priority_classes]
batch = 0
urgent = 10

[tenants]
research-a = 0
research-b = 1
"#;

struct Server {
    base: String,
    c: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// `serve` on kueue-cohorts' spec with the log in `dir` and the tokens file `tokens`.
fn options(dir: &std::path::Path, tokens: PathBuf) -> ServeOptions {
    ServeOptions {
        spec: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-cohorts.toml"),
        wal: dir.join("wal"),
        trace_dir: TraceDir(PathBuf::from("/nonexistent")),
        listen: ListenOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            tokens: Some(tokens),
            ..ListenOptions::default()
        },
        clock: Clock::Event,
        retain_decisions: DEFAULT_RETAIN_DECISIONS,
        snapshot_every: 0,
        segment_bytes: fleetsim_scheduler::wal::DEFAULT_SEGMENT_BYTES,
        log_retention: None,
        retain_ended_jobs: fleetsim_scheduler::served::DEFAULT_RETAIN_ENDED_JOBS,
        ha: None,
    }
}

async fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokens.toml"), TOKENS).unwrap();
    let st = start(options(dir.path(), dir.path().join("tokens.toml")))
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
            split: false,
        },
    })
    .unwrap()
}

fn cancel(t: u64, job: u32) -> Value {
    json!({"type": "job_cancelled", "t": t, "job": job})
}

impl Server {
    fn wal(&self) -> PathBuf {
        self._dir.path().join("wal")
    }

    async fn post_numbered(&self, token: &str, batch: u64, events: Vec<Value>) -> (u16, Value) {
        let r = self
            .c
            .post(format!("{}/v1/events", self.base))
            .bearer_auth(token)
            .json(&json!({ "batch": batch, "events": events }))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }

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

fn pending(job: u32, tenant: &str) -> Value {
    json!({"job": job, "state": "pending", "nodes": [], "pending_reason": "not_tried",
           "names": {"queue": tenant, "tenant": tenant, "nodes": []}})
}

/// Job `job` of `tenant` (in the queue of that name) as it reads once cancelled at `t`.
fn cancelled(job: u32, t: u64, tenant: &str) -> Value {
    json!({"job": job, "state": "cancelled", "t": t, "reason": null,
           "names": {"queue": tenant, "tenant": tenant, "nodes": []}})
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
    assert_eq!(
        s.get(A, "/v1/jobs/1").await,
        (200, pending(1, "research-a"))
    );
    let not_a = |j: u32| err(&not_yours("a-ci", j));
    assert_eq!(s.get(A, "/v1/jobs/2").await, (403, not_a(2)));
    assert_eq!(s.get(A, "/v1/jobs/99").await, (403, not_a(99)));
    // Job 4's batch was refused whole: it does not exist.
    assert_eq!(s.get(A, "/v1/jobs/4").await, (403, not_a(4)));
    assert_eq!(
        s.get(OPS, "/v1/jobs/2").await,
        (200, pending(2, "research-b"))
    );
    assert_eq!(
        s.get(OPS, "/v1/jobs/4").await,
        (
            404,
            err("unknown job 4 (neither live nor among the last jobs that ended)")
        )
    );
    assert_eq!(
        s.get(AB, "/v1/jobs/2").await,
        (200, pending(2, "research-b"))
    );

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
    // A cancelled job stays readable for a while (its tenants and admins), at the
    // service's time the cancel was stamped with (a tenant's `t` is not its own).
    assert_eq!(
        s.get(A, "/v1/jobs/1").await,
        (200, cancelled(1, 0, "research-a"))
    );
    assert_eq!(s.get(B, "/v1/jobs/1").await, (403, err(&not_b(1))));
    assert_eq!(
        s.get(OPS, "/v1/jobs/1").await,
        (200, cancelled(1, 0, "research-a"))
    );
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
    assert_eq!(
        s.get(OPS, "/v1/jobs/2").await,
        (200, cancelled(2, 20, "research-b"))
    );
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
    let e = start(options(dir.path(), path)).await.err().unwrap();
    assert_eq!(
        e,
        "tokens file: principal `a-ci` lists tenants, but the file has no [tenants] table giving each tenant name its tenant number (the `tenant` of job events), e.g. [tenants] research-a = 0"
    );
}

// The attacks of issue 43 ("What was found"), one test each, named after them.

/// Attack 3: a tenant sending `"batch": 18446744073709551615` made every later numbered
/// batch of the admin adapter and of other tenants answer `409` ("already logged"), so
/// their events were silently dropped. Batch numbers are now each principal's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenant_blocks_everyones_batches() {
    let s = server().await;
    let (code, _) = s.post_numbered(A, u64::MAX, vec![submit(0, 1, 0)]).await;
    assert_eq!(code, 200);
    // The admin's and tenant B's first batches are accepted, not taken for resends.
    let (code, body) = s
        .post_numbered(OPS, 1, vec![json!({"type": "pass", "t": 0})])
        .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = s.post_numbered(B, 1, vec![submit(0, 2, 1)]).await;
    assert_eq!(code, 200, "{body}");
    // Each principal's own resends are still recognised.
    let (code, body) = s.post_numbered(A, 7, vec![submit(0, 3, 0)]).await;
    assert_eq!(
        (code, body["last_batch"].as_u64()),
        (409, Some(u64::MAX)),
        "{body}"
    );
    let (code, body) = s
        .post_numbered(OPS, 1, vec![json!({"type": "pass", "t": 0})])
        .await;
    assert_eq!((code, body["last_batch"].as_u64()), (409, Some(1)));
    let (_, health) = s.get(OPS, "/healthz").await;
    assert_eq!(
        health["last_batch"],
        json!({"a-ci": u64::MAX, "b-ci": 1, "ops": 1})
    );
}

/// Attack 4: tenant A evicted tenant B's running job by submitting into B's queue with
/// `priority: 2147483647`. A tenant now submits only to the queues its token lists, at
/// the priorities of its token's classes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_evicts_another_tenants_job() {
    let s = server().await;
    assert_eq!(s.post(B, vec![submit(0, 1, 1)]).await.0, 200);
    let (code, _) = s.post(OPS, vec![json!({"type": "pass", "t": 0})]).await;
    assert_eq!(code, 200);
    // Into B's queue (research-b, queue 1), as its own tenant: refused by queue.
    let mut into_b = submit(0, 2, 0);
    into_b["job"]["queue"] = json!(1);
    into_b["job"]["priority"] = json!(i32::MAX);
    assert_eq!(
        s.post(A, vec![into_b]).await,
        (
            403,
            err_at(
                "field `job.queue`: principal `a-ci` may not submit to queue 1 `research-b`; its token lists `research-a`",
                0
            )
        )
    );
    // Into its own queue above its classes (batch 0, urgent 10): refused by priority.
    let mut high = submit(0, 2, 0);
    high["job"]["priority"] = json!(i32::MAX);
    assert_eq!(
        s.post(A, vec![high]).await,
        (
            403,
            err_at(
                "field `job.priority`: principal `a-ci` may not submit at priority 2147483647; its token's priority classes allow `0`, `10`",
                0
            )
        )
    );
    // B's token lists no class: priority 0 only.
    let mut b10 = submit(0, 3, 1);
    b10["job"]["priority"] = json!(10);
    let (code, body) = s.post(B, vec![b10]).await;
    assert_eq!(code, 403, "{body}");
    // At its `urgent` class, in its own queue: accepted; B's job keeps running.
    let mut urgent = submit(0, 2, 0);
    urgent["job"]["priority"] = json!(10);
    assert_eq!(s.post(A, vec![urgent]).await.0, 200);
    let (_, reply) = s.post(OPS, vec![json!({"type": "pass", "t": 0})]).await;
    assert!(
        reply["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["type"] != "preempt"),
        "{reply}"
    );
    assert_eq!(s.get(OPS, "/v1/jobs/1").await.1["state"], "running");
}

/// Attack 5: under `--clock wall` only `t` was stamped, so a tenant sending `submit: 0,
/// seq: 0` went ahead of earlier jobs of others, and `runtime_estimate_ms`, `done_ms` and
/// `attained_gpu_ms` (backfill and LAS inputs) were trusted. A tenant's `t`, `submit` and
/// `seq` are now the service's (what the log holds shows it); estimates need a token
/// allowed to send them, and progress of earlier runs is the cluster agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_sent_fields_steer_the_queue() {
    let s = server().await;
    // The cluster is at t = 50 s (an admin event), with seq up to 41.
    let mut admin_job = submit(50_000, 9, 1);
    admin_job["job"]["seq"] = json!(41);
    let (code, _) = s.post(OPS, vec![admin_job]).await;
    assert_eq!(code, 200);
    // B asks for an early place: t 0, submit 0, seq 0; then A at t 10^12 (which would
    // have moved the service's clock past every later admin event).
    let mut early = submit(0, 1, 1);
    early["job"]["submit"] = json!(0);
    early["job"]["seq"] = json!(0);
    assert_eq!(s.post(B, vec![early]).await.0, 200);
    let mut late = submit(1_000_000_000_000, 2, 0);
    late["job"]["seq"] = json!(0);
    assert_eq!(s.post(A, vec![late]).await.0, 200);
    // What the log holds: both stamped at the service's time, 50 s, in order after 41.
    let logged: Vec<(Option<String>, u64, Option<u64>, u64)> =
        fleetsim_scheduler::wal::read_records(&s.wal())
            .unwrap()
            .iter()
            .map(|r| {
                let l: fleetsim_scheduler::service::Logged = serde_json::from_slice(r).unwrap();
                let Event::JobSubmitted { t, job } = &l.events[0] else {
                    panic!("{l:?}")
                };
                (l.principal.clone(), *t, job.submit, job.seq)
            })
            .collect();
    assert_eq!(
        logged,
        vec![
            (Some("ops".into()), 50_000, None, 41),
            (Some("b-ci".into()), 50_000, None, 42),
            (Some("a-ci".into()), 50_000, None, 43),
        ]
    );
    // The admin's next event at 60 s is not "before the current time".
    let (code, _) = s
        .post(OPS, vec![json!({"type": "pass", "t": 60_000})])
        .await;
    assert_eq!(code, 200);
    // Estimates: refused for a-ci, accepted from the lead's token, which may send them.
    let mut est = submit(0, 3, 0);
    est["job"]["runtime_estimate_ms"] = json!(1);
    let (code, body) = s.post(A, vec![est.clone()]).await;
    assert_eq!(code, 403);
    assert!(
        body["error"].as_str().unwrap().starts_with(
            "field `job.runtime_estimate_ms`: principal `a-ci` may not send runtime estimates"
        ),
        "{body}"
    );
    assert_eq!(s.post(AB, vec![est]).await.0, 200);
    // Progress of earlier runs: nobody's but the cluster agent's.
    for field in ["done_ms", "attained_gpu_ms"] {
        let mut j = submit(0, 4, 0);
        j["job"][field] = json!(3_600_000);
        let (code, body) = s.post(AB, vec![j]).await;
        assert_eq!(code, 403, "{body}");
        assert!(
            body["error"].as_str().unwrap().starts_with(&format!(
                "field `job.{field}`: principal `research-lead` may not report progress"
            )),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_token_must_list_queues_of_the_spec() {
    for (entry, want) in [
        (
            "",
            "tokens file: principal `x-ci`: field `queues`: list the queues its jobs may join (the spec's: `research-a`, `research-b`, `product-a`, `product-b`, `interns`)",
        ),
        (
            "queues = [\"nightly\"]",
            "tokens file: principal `x-ci`: field `queues`: `nightly` is not a queue of the spec (its queues: `research-a`, `research-b`, `product-a`, `product-b`, `interns`)",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        std::fs::write(
            &path,
            format!("[[token]]\ntoken = \"x-tenant-token-0005\"\nprincipal = \"x-ci\"\ntenants = [\"research-a\"]\n{entry}\n\n[tenants]\nresearch-a = 0\n"),
        )
        .unwrap();
        let e = start(options(dir.path(), path)).await.err().unwrap();
        assert_eq!(e, want);
    }
}
