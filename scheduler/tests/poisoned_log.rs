//! Nothing invalid is logged, and a replay never stops the service (issue 43, items 1 and
//! 2 of "What was found"): over loopback HTTP on kueue-cohorts' spec (2 cells — hopper,
//! 16 nodes of 8 H100; blackwell, 18 trays of 4 GB200 —, models H100 and GB200, the 5
//! queues research-a, research-b, product-a, product-b, interns).
//!
//! * A `job_submitted` with `num_gpu = 1, gpu_milli = 0` (a divide by zero in the
//!   placement's arithmetic) and one with `queue: 4294967295` (a pending table of 4 G
//!   queues) are answered `422` naming the event and field, and nothing of their batch is
//!   logged or applied; so is every other field out of the spec's range.
//! * A log written by a service without these checks, holding such records, restarts: the
//!   records are set aside in `<wal>.quarantine` (reported in the recovery and in
//!   `/healthz`), the state is that of the log without them, and the service serves.

use std::path::{Path, PathBuf};

use fleetsim::scenario::TraceDir;
use fleetsim_policies::live::{Event, JobSpec};
use fleetsim_policies::TaskShape;
use fleetsim_scheduler::service::{router, AppState, Batch, Options, Recovery, Service};
use serde_json::{json, Value};

fn spec() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-cohorts.toml")
}

fn open(wal: &Path) -> (AppState, Recovery) {
    let (live, digest) =
        fleetsim_scheduler::serve::twin_and_policy_digest(&spec(), TraceDir("/nonexistent".into()))
            .expect("the spec loads");
    let options = Options {
        policy_digest: digest,
        ..Options::default()
    };
    Service::with_wal(live, wal, options).expect("the log opens")
}

/// Job `id` in queue 0 (research-a): one task of 4 whole H100-or-GB200 GPUs.
fn job(id: u32) -> JobSpec {
    JobSpec {
        id,
        tenant: 0,
        queue: 0,
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
    }
}

fn submit(t: u64, job: JobSpec) -> Value {
    serde_json::to_value(Event::JobSubmitted { t, job }).unwrap()
}

fn zero_milli(id: u32) -> JobSpec {
    let mut j = job(id);
    j.shape.gpu_milli = 0;
    j
}

fn huge_queue(id: u32) -> JobSpec {
    let mut j = job(id);
    j.queue = u32::MAX;
    j
}

struct Http {
    base: String,
    c: reqwest::Client,
    server: tokio::task::JoinHandle<()>,
}

async fn http(state: AppState) -> Http {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(state);
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Http {
        base,
        c: reqwest::Client::new(),
        server,
    }
}

impl Http {
    async fn post(&self, batch: u64, events: Vec<Value>) -> (u16, Value) {
        let r = self
            .c
            .post(format!("{}/v1/events", self.base))
            .json(&json!({"batch": batch, "events": events}))
            .send()
            .await
            .expect("the service answers (no panic, no abort)");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap())
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .c
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_gpu_milli_submit_is_answered_422_and_not_logged() {
    let dir = tempfile::tempdir().unwrap();
    let (state, _) = open(&dir.path().join("wal"));
    let h = http(state.clone()).await;
    // A good submit first: refused with the bad one, since nothing of the batch applies.
    let (code, body) = h
        .post(1, vec![submit(0, job(1)), submit(0, zero_milli(2))])
        .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["index"], 1);
    assert_eq!(body["field"], "job.shape.gpu_milli");
    assert_eq!(body["applied"], 0);
    assert_eq!(
        body["error"],
        "event 1: field `job.shape.gpu_milli`: gpu_milli 0 must be in 1..=1000 when num_gpu > 0; \
         nothing of the batch was logged or applied"
    );
    let (_, health) = h.get("/healthz").await;
    assert_eq!(health["wal"]["records"], 0, "{health}");
    assert_eq!(health["last_batch"], json!({}));
    assert_eq!(h.get("/v1/jobs/1").await.0, 404);
    // The same job, good, with a pass: admitted (4 GPUs on hopper node 0: best-fit, and
    // least-loaded cells with both empty picks the first).
    let (code, body) = h
        .post(2, vec![submit(0, job(1)), json!({"type": "pass", "t": 0})])
        .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["decisions"][0]["type"], "admit");
    assert_eq!(body["decisions"][0]["job"], 1);
    assert_eq!(h.get("/healthz").await.1["wal"]["records"], 1);
    h.server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_id_of_4294967295_is_answered_422_and_not_logged() {
    let dir = tempfile::tempdir().unwrap();
    let (state, _) = open(&dir.path().join("wal"));
    let h = http(state.clone()).await;
    let (code, body) = h.post(1, vec![submit(0, huge_queue(1))]).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        (body["index"].as_u64(), body["field"].as_str()),
        (Some(0), Some("job.queue"))
    );
    assert_eq!(
        body["error"],
        "event 0: field `job.queue`: queue 4294967295 is not a queue of the spec (it has 5: \
         0 `research-a`, 1 `research-b`, 2 `product-a`, 3 `product-b`, 4 `interns`); \
         nothing of the batch was logged or applied"
    );
    assert_eq!(h.get("/healthz").await.1["wal"]["records"], 0);
    h.server.abort();
}

/// Every field the spec bounds, out of range in a batch of its own after a good one:
/// `422` naming the field, the log still at one record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_field_out_of_the_specs_range_is_named_and_not_logged() {
    let dir = tempfile::tempdir().unwrap();
    let (state, _) = open(&dir.path().join("wal"));
    let h = http(state.clone()).await;
    let (code, _) = h
        .post(
            1,
            vec![submit(1_000, job(1)), json!({"type": "pass", "t": 1_000})],
        )
        .await;
    assert_eq!(code, 200);
    let with = |f: &dyn Fn(&mut JobSpec)| {
        let mut j = job(9);
        f(&mut j);
        submit(2_000, j)
    };
    let cases: Vec<(Value, &str)> = vec![
        (with(&|j| j.queue = 5), "job.queue"),
        (with(&|j| j.id = 1 << 20), "job.id"),
        (with(&|j| j.shape.gpu_milli = 1001), "job.shape.gpu_milli"),
        (
            with(&|j| {
                j.shape = TaskShape {
                    num_gpu: 0,
                    gpu_milli: 500,
                    cpu_milli: 1,
                    mem_mib: 1,
                }
            }),
            "job.shape.gpu_milli",
        ),
        (with(&|j| j.tasks = 1 << 20), "job.tasks"),
        (with(&|j| j.models = vec![0, 2]), "job.models[1]"),
        (with(&|j| j.cells = vec![7]), "job.cells[0]"),
        (with(&|j| j.submit = Some(2_001)), "job.submit"),
        (
            with(&|j| j.runtime_estimate_ms = Some(u64::MAX)),
            "job.runtime_estimate_ms",
        ),
        (
            with(&|j| j.checkpoint_interval_ms = Some(0)),
            "job.checkpoint_interval_ms",
        ),
        (with(&|j| j.done_ms = u64::MAX), "job.done_ms"),
        (
            with(&|j| j.attained_gpu_ms = u64::MAX),
            "job.attained_gpu_ms",
        ),
        (
            with(&|j| {
                j.topology = Some(fleetsim_policies::TopologySpec {
                    slice_size: Some(0),
                    ..Default::default()
                })
            }),
            "job.topology.slice_size",
        ),
        (submit(999, job(9)), "t"),
        (submit(u64::MAX, job(9)), "t"),
        (
            json!({"type": "node_failed", "t": 2_000, "node": 34}),
            "node",
        ),
        (
            json!({"type": "job_lost", "t": 2_000, "job": 1, "release_at": 1_999}),
            "release_at",
        ),
    ];
    for (i, (event, field)) in cases.into_iter().enumerate() {
        let (code, body) = h.post(2 + i as u64, vec![event]).await;
        assert_eq!(code, 422, "case {i} ({field}): {body}");
        assert_eq!(body["field"], field, "case {i}: {body}");
    }
    let (_, health) = h.get("/healthz").await;
    assert_eq!(health["wal"]["records"], 1, "{health}");
    assert_eq!(health["now"], 1_000);
    h.server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_log_with_poisoned_records_restarts_sets_them_aside_and_serves() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal");
    let pass = |t| Event::Pass { t };
    let good0 = Batch {
        batch: Some(0),
        events: vec![Event::JobSubmitted { t: 0, job: job(1) }, pass(0)],
    };
    let zero = Batch {
        batch: Some(1),
        events: vec![
            Event::JobSubmitted {
                t: 10,
                job: zero_milli(2),
            },
            pass(10),
        ],
    };
    let queue = Batch {
        batch: Some(2),
        events: vec![Event::JobSubmitted {
            t: 20,
            job: huge_queue(3),
        }],
    };
    let good3 = Batch {
        batch: Some(3),
        events: vec![Event::JobSubmitted { t: 30, job: job(4) }, pass(30)],
    };
    // The log as the old service wrote it (each record appended before the apply that
    // crashed), with a record that is not even a batch among them.
    let mut bytes = Vec::new();
    let mut offsets = Vec::new();
    for payload in [
        serde_json::to_vec(&good0).unwrap(),
        serde_json::to_vec(&zero).unwrap(),
        serde_json::to_vec(&queue).unwrap(),
        b"{\"not\": \"a batch\"}".to_vec(),
        serde_json::to_vec(&good3).unwrap(),
    ] {
        offsets.push(bytes.len() as u64);
        bytes.extend(fleetsim_scheduler::wal::encode(&payload));
    }
    std::fs::write(&wal, &bytes).unwrap();

    let (state, rec) = open(&wal);
    assert_eq!(rec.batches, 5);
    let aside: Vec<(u64, u64, Option<u64>)> = rec
        .set_aside
        .iter()
        .map(|e| (e.record, e.offset, e.batch))
        .collect();
    assert_eq!(
        aside,
        vec![
            (1, offsets[1], Some(1)),
            (2, offsets[2], Some(2)),
            (3, offsets[3], None)
        ]
    );
    assert_eq!(
        rec.set_aside[0].reason,
        "event 0: field `job.shape.gpu_milli`: gpu_milli 0 must be in 1..=1000 when num_gpu > 0"
    );
    assert!(
        rec.set_aside[2]
            .reason
            .starts_with("does not decode as a batch: "),
        "{}",
        rec.set_aside[2].reason
    );
    // The state is that of the log without them: batches 0 and 3 only.
    let reference = {
        let other = tempfile::tempdir().unwrap();
        let (s, _) = open(&other.path().join("wal"));
        let mut svc = s.lock().unwrap();
        svc.accept(good0.clone()).unwrap();
        svc.accept(good3.clone()).unwrap();
        svc.state_digest()
    };
    assert_eq!(state.lock().unwrap().state_digest(), reference);
    // The quarantine file lists them, payloads included.
    let q = std::fs::read_to_string(fleetsim_scheduler::quarantine::path_for(&wal)).unwrap();
    assert_eq!(q.lines().count(), 3);

    // It serves: /healthz reports them, and the next batch is accepted.
    let h = http(state.clone()).await;
    let (_, health) = h.get("/healthz").await;
    let qh = &health["wal"]["quarantine"];
    assert_eq!(
        (qh["records"].as_u64(), qh["set_aside_since_start"].as_u64()),
        (Some(3), Some(3)),
        "{health}"
    );
    assert_eq!(qh["first"][1]["record"], 2);
    let (code, body) = h
        .post(
            4,
            vec![submit(40, job(5)), json!({"type": "pass", "t": 40})],
        )
        .await;
    assert_eq!(code, 200, "{body}");
    h.server.abort();
    let digest = state.lock().unwrap().state_digest();
    drop(state);

    // The next start skips them (listed) and reaches the same state.
    let (state, rec) = open(&wal);
    assert_eq!((rec.set_aside.len(), rec.set_aside_before), (0, 3));
    assert_eq!(state.lock().unwrap().state_digest(), digest);
}

/// A start under the wrong `--spec` sets aside what that spec refuses; a start under the
/// log's own spec replays those records again instead of skipping them.
#[test]
fn records_set_aside_under_another_spec_are_replayed_under_the_logs_own() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal");
    let mut in_blackwell = job(2);
    in_blackwell.cells = vec![1];
    let batches = [
        Batch {
            batch: Some(0),
            events: vec![
                Event::JobSubmitted { t: 0, job: job(1) },
                Event::Pass { t: 0 },
            ],
        },
        Batch {
            batch: Some(1),
            events: vec![
                Event::JobSubmitted {
                    t: 5,
                    job: in_blackwell,
                },
                Event::Pass { t: 5 },
            ],
        },
    ];
    let digest = {
        let (s, _) = open(&wal);
        let mut svc = s.lock().unwrap();
        for b in &batches {
            svc.accept(b.clone()).unwrap();
        }
        svc.state_digest()
    };
    // nvl72-topology has one cell: cell 1 is out of its range.
    let other = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/nvl72-topology.toml");
    let (live, d) =
        fleetsim_scheduler::serve::twin_and_policy_digest(&other, TraceDir("/nonexistent".into()))
            .unwrap();
    let policy_digest = d;
    let (_, rec) = Service::with_wal(
        live,
        &wal,
        Options {
            policy_digest,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(rec.set_aside.len(), 1);
    assert_eq!(rec.set_aside[0].record, 1);
    // Back under kueue-cohorts: nothing skipped, the state acknowledged.
    let (state, rec) = open(&wal);
    assert_eq!((rec.set_aside.len(), rec.set_aside_before), (0, 0));
    assert_eq!(state.lock().unwrap().state_digest(), digest);
}
