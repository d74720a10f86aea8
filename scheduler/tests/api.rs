//! The decision endpoints (`GET /v1/decisions`, the server-sent-event stream) and the
//! OpenAPI description on a service over loopback HTTP, started from
//! kueue-cohorts' spec (two cells: 16 HGX-H100 nodes, one GB200 NVL72 rack) with no job.

use std::path::PathBuf;

use fleetsim::scenario::TraceDir;
use fleetsim_policies::live::{Decision, Event, JobSpec};
use fleetsim_policies::TaskShape;
use fleetsim_scheduler::served::ServedDecision;
use fleetsim_scheduler::service::{router, Batch, BatchReply, DecisionsPage, Service};

fn spec() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-cohorts.toml")
}

async fn server() -> String {
    let live = fleetsim_scheduler::serve::twin(&spec(), TraceDir(PathBuf::from("/nonexistent")))
        .expect("twin");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(Service::new(live));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// Job `id`: one task of 4 whole GPUs in queue 0 (research-a, nominal H100 40).
fn submit(t: u64, id: u32) -> Event {
    Event::JobSubmitted {
        t,
        job: JobSpec {
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
        },
    }
}

async fn post(c: &reqwest::Client, base: &str, b: &Batch) -> BatchReply {
    let r = c
        .post(format!("{base}/v1/events"))
        .json(b)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn admitted(d: &ServedDecision) -> u32 {
    match &d.decision {
        Decision::Admit { job, .. } => *job,
        other => panic!("expected an admit, got {other:?}"),
    }
}

/// The next server-sent event (its lines, without the blank line ending it).
async fn read_event(s: &mut reqwest::Response, text: &mut String) -> String {
    while !text.contains("\n\n") {
        let chunk = s.chunk().await.unwrap().expect("stream open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let at = text.find("\n\n").unwrap();
    let ev = text[..at].to_string();
    text.replace_range(..at + 2, "");
    ev
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_page_and_stream() {
    let base = server().await;
    let c = reqwest::Client::new();
    // Two jobs, one pass: two admits (seq 0, 1), in submit order (FIFO within the queue).
    let r = post(
        &c,
        &base,
        &Batch {
            batch: Some(0),
            events: vec![submit(0, 1), submit(0, 2), Event::Pass { t: 0 }],
        },
    )
    .await;
    assert_eq!(r.first_seq, 0);
    assert_eq!(r.decisions.iter().map(admitted).collect::<Vec<_>>(), [1, 2]);
    let page: DecisionsPage = c
        .get(format!("{base}/v1/decisions?from=1&limit=5"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((page.first_seq, page.next, page.total), (1, 2, 2));
    assert_eq!(page.decisions, r.decisions[1..]);
    let bad = c
        .get(format!("{base}/v1/decisions?limit=0"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    // The stream from 1: decision 1 at once, then decision 2 once a new batch makes it.
    let mut s = c
        .get(format!("{base}/v1/decisions/stream?from=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(s.status(), 200);
    assert_eq!(
        s.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut text = String::new();
    let first = read_event(&mut s, &mut text).await;
    let data = |ev: &str| -> ServedDecision {
        let line = ev.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
        serde_json::from_str(line).unwrap()
    };
    assert!(
        first.contains("event: decision") && first.contains("id: 1"),
        "{first}"
    );
    assert_eq!(data(&first), r.decisions[1]);
    let r2 = post(
        &c,
        &base,
        &Batch {
            batch: Some(1),
            events: vec![submit(1000, 3), Event::Pass { t: 1000 }],
        },
    )
    .await;
    assert_eq!(r2.first_seq, 2);
    assert_eq!(admitted(&r2.decisions[0]), 3);
    let second = read_event(&mut s, &mut text).await;
    assert!(second.contains("id: 2"), "{second}");
    assert_eq!(data(&second), r2.decisions[0]);
}

#[test]
fn committed_openapi_is_the_generated_one() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    let mut want = serde_json::to_string_pretty(&fleetsim_scheduler::openapi::document()).unwrap();
    want.push('\n');
    if std::env::var_os("FLEETSIM_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap();
    assert!(
        have == want,
        "scheduler/openapi.json is stale: rerun with FLEETSIM_UPDATE_SCHEMAS=1"
    );
    assert_eq!(fleetsim_scheduler::service::OPENAPI_JSON, have);
}

/// Every `.route("PATH", METHOD(...))` of `service::router` is in the document with that
/// method, and every documented path and method is served (answers with a JSON or event
/// stream body, not the router's empty 404/405).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_is_documented_and_every_documented_route_served() {
    let doc = fleetsim_scheduler::openapi::document();
    let paths = doc["paths"].as_object().unwrap();
    let src = include_str!("../src/service.rs");
    let mut routes = Vec::new();
    for part in src.split(".route(\"").skip(1) {
        let (path, rest) = part.split_once('"').unwrap();
        let method = rest
            .trim_start_matches([',', ' '])
            .split('(')
            .next()
            .unwrap();
        routes.push((path.to_string(), method.to_string()));
    }
    assert_eq!(routes.len(), 9, "{routes:?}");
    for (p, m) in &routes {
        assert!(
            paths.get(p).and_then(|v| v.get(m)).is_some(),
            "route {m} {p} is not in openapi.json"
        );
    }
    let base = server().await;
    let c = reqwest::Client::new();
    for (p, item) in paths {
        for m in item.as_object().unwrap().keys() {
            assert!(
                routes.contains(&(p.clone(), m.clone())),
                "{m} {p} documented, not routed"
            );
            let url = format!("{base}{}", p.replace("{id}", "7"));
            let resp = match m.as_str() {
                "get" => c.get(&url).send().await.unwrap(),
                "post" => c
                    .post(&url)
                    .json(&serde_json::json!({"events": []}))
                    .send()
                    .await
                    .unwrap(),
                other => panic!("method {other}"),
            };
            let status = resp.status().as_u16();
            assert!(
                status == 200 || ((p == "/v1/jobs/{id}" || p == "/v1/nodes/{id}") && status == 404),
                "{m} {p}: {status}"
            );
            let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
            assert!(
                ct == "application/json"
                    || ct == "text/event-stream"
                    || (p == "/metrics" && ct == "text/plain; version=0.0.4"),
                "{m} {p}: {ct}"
            );
            // The documented response codes include the one answered.
            assert!(
                item[m]["responses"].get(status.to_string()).is_some(),
                "{m} {p}: {status}"
            );
        }
    }
}
