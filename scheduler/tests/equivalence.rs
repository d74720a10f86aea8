//! Decision equivalence: committed scenarios run in the simulator with the
//! live recorder on; their event streams go to the service over loopback HTTP in batches,
//! and every decision the service answers must equal the simulator's, in order.

use std::path::PathBuf;

use fleetsim::run::{live_twin, run_scenario_live, RunOptions};
use fleetsim::scenario::{self, TraceDir};
use fleetsim_policies::live::{Decision, Event};
use fleetsim_scheduler::service::{router, Batch, BatchReply, Service};

fn public_traces() -> PathBuf {
    std::env::var_os("FLEETSIM_TRACE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces"))
}

fn scenario_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(format!("{name}.toml"))
}

/// Runs `name` recording, replays it through a fresh service over HTTP; returns
/// (matched decisions, mismatch descriptions, events sent).
async fn replay(name: &str) -> (u64, Vec<String>, usize) {
    let loaded = scenario::load(&scenario_path(name)).expect("scenario loads");
    let opts = RunOptions {
        seed: None,
        trace_dir: TraceDir(public_traces()),
        out_dir: None,
        keep_rows: false,
    };
    let (out, twin, served) = tokio::task::spawn_blocking(move || {
        let (out, twin) = run_scenario_live(&loaded, &opts).expect("scenario runs");
        // What `serve` starts from: the queue table read from the workload, not the run.
        let served = live_twin(&loaded, &opts).expect("twin builds");
        (out, twin, served)
    })
    .await
    .unwrap();
    let rec = out.result.live.expect("recorder on");
    assert_eq!(rec.unsupported, None, "{name}: record incomplete");
    // The twin knows the queue ids the simulator gave (declared queues, then the names the
    // workload uses in arrival order), and so does the one `serve` builds without a run.
    assert_eq!(twin.queue_names(), rec.queues, "{name}");
    assert_eq!(served.queue_names(), rec.queues, "{name}");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(Service::new(twin));
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = reqwest::Client::new();
    let mut got: Vec<Decision> = Vec::new();
    for (i, chunk) in rec.events.chunks(500).enumerate() {
        let batch = Batch {
            batch: Some(i as u64),
            events: chunk.to_vec(),
        };
        let r = client
            .post(format!("{base}/v1/events"))
            .json(&batch)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        assert!(status.is_success(), "{name}: batch {i}: {status} {text}");
        let reply: BatchReply = serde_json::from_str(&text).unwrap();
        assert_eq!(reply.first_seq, got.len() as u64);
        got.extend(reply.plain());
    }
    server.abort();
    let mut matched = 0;
    let mut bad = Vec::new();
    for (i, (a, b)) in rec.decisions.iter().zip(&got).enumerate() {
        if a == b {
            matched += 1;
        } else if bad.len() < 5 {
            bad.push(format!("{name} #{i}: simulator {a:?}, service {b:?}"));
        }
    }
    if rec.decisions.len() != got.len() {
        bad.push(format!(
            "{name}: simulator made {} decisions, service {}",
            rec.decisions.len(),
            got.len()
        ));
    }
    (matched, bad, rec.events.len())
}

// The five full scenarios: 185,168 decisions, 0 mismatches, 194 s in a release build on
// this 2-core machine (2026-12-03, while other builds ran); a debug build did not finish
// them within 5 minutes, so the test command skips it and `.ci/run` runs it in release:
// `cargo test --release -p fleetsim-scheduler --test equivalence -- --ignored --exact
// service_decides_as_the_simulator` (FLEETSIM_TRACE_DIR set).
#[ignore = "full scenarios: run in release by .ci/run (slow in a debug build)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_decides_as_the_simulator() {
    let mut total = 0;
    let mut all_bad = Vec::new();
    let default =
        "philly-quota,philly-quota-fair-share,kueue-cohorts,nvl72-topology,philly-multicell";
    // FLEETSIM_LIVE_SCENARIOS=a,b narrows the run (for a quick look); the 10,000 bound is
    // for the full list.
    let names = std::env::var("FLEETSIM_LIVE_SCENARIOS").unwrap_or_else(|_| default.into());
    let full = names == default;
    // The scenarios replay concurrently (each through its own service on its own port:
    // independent), so the two cores share the work; results are read in list order.
    let replays: Vec<_> = names
        .split(',')
        .map(|name| {
            let name = name.to_string();
            tokio::spawn(async move { replay(&name).await })
        })
        .collect();
    for (name, replay) in names.split(',').zip(replays) {
        let (matched, bad, events) = replay.await.expect("replay task");
        println!(
            "{name}: {events} events, {matched} decisions matched, {} mismatches",
            bad.len()
        );
        total += matched;
        all_bad.extend(bad);
    }
    println!(
        "total: {total} decisions matched, {} mismatches",
        all_bad.len()
    );
    assert!(all_bad.is_empty(), "{all_bad:#?}");
    assert!(!full || total >= 10_000, "only {total} decisions compared");
}

/// The part of the equivalence run CI holds to: kueue-cohorts (Kueue cohorts, borrowing,
/// preemption) and nvl72-topology (topology-aware gangs) replayed over loopback HTTP; at
/// h21live's measurement 18,061 + 1,188 = 19,249 decisions, all equal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_decides_as_the_simulator_on_cohorts_and_topology() {
    let mut total = 0;
    let mut all_bad = Vec::new();
    for name in ["kueue-cohorts", "nvl72-topology"] {
        let (matched, bad, events) = replay(name).await;
        println!(
            "{name}: {events} events, {matched} decisions matched, {} mismatches",
            bad.len()
        );
        assert!(matched > 1_000, "{name}: only {matched} decisions compared");
        total += matched;
        all_bad.extend(bad);
    }
    assert!(all_bad.is_empty(), "{all_bad:#?}");
    assert!(total >= 10_000, "only {total} decisions compared");
}

#[test]
fn events_need_time_order() {
    // A pass at 10 then one at 5: the second is refused with the times named.
    let fleet =
        fleetsim_policies::FleetState::new(vec!["c".into()], vec!["G".into()], vec![]).unwrap();
    let sched = fleetsim_policies::Scheduler::new(Default::default(), vec![]);
    let svc = Service::new(fleetsim_policies::live::LiveState::new(
        sched,
        fleet,
        vec![],
    ));
    let mut svc = svc.lock().unwrap();
    let ok = svc.apply(&Batch {
        batch: None,
        events: vec![Event::Pass { t: 10 }, Event::Pass { t: 5 }],
    });
    let (index, msg, reply) = ok.unwrap_err();
    assert_eq!(index, 1);
    assert_eq!(msg, "event time 5 ms is before the current time 10 ms");
    assert!(reply.decisions.is_empty());
}
