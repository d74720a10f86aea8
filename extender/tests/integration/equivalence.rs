//! Decision equivalence: the simulator and the extender make the same placement decisions.
//!
//! Runs a scenario in the simulator with a [`PlacementRecorder`] installed on its placement
//! context; every recorded call (the fleet as the call found it, the gang, the simulator's
//! answer) is rendered as a scheduler-extender `prioritize` request — the fleet's nodes as
//! `v1.Node` objects with fleetsim's labels and annotations, the gang's first pod as a
//! `v1.Pod` — sent over HTTP to the extender running on loopback, and the answer compared:
//! the node scored 10 must be the simulator's node for the gang's first task (no node scored
//! 10 when the gang did not fit), and the `fleetsim-placement` header must list the
//! simulator's node and accelerators for every task of the gang. Every tenth decision is also
//! sent to `filter`, whose passing nodes must include the chosen one (none when the gang did
//! not fit).
//!
//! Scenarios: `openb-replay` (the real Alibaba trace and fleet, best-fit; needs the public
//! traces, `FLEETSIM_TRACE_DIR` or `../shared/traces` beside the checkout) and
//! `nvl72-topology` (topology-aware gangs on NVL72 racks).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fleetsim::scenario::{self, TraceDir};
use fleetsim_extender::server::{Config, PLACEMENT_HEADER};
use fleetsim_extender::wire::HostPriority;
use fleetsim_policies::{
    FleetState, Level, NodeId, PendingJob, PlacementCall, PlacementRecorder, TopologyMode,
    WHOLE_GPU_MILLI,
};
use serde_json::{json, Value};

/// The public traces beside the checkout (as `tests/integration/support.rs` finds them).
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

/// One recorded decision as the extender will see it.
struct Case {
    index: u64,
    body: String,
    /// The simulator's gang placement as `node:mask,…`, or `none`.
    expected: String,
    /// The simulator's node for the first task.
    first: Option<String>,
}

fn level_name(l: Level) -> &'static str {
    l.as_str()
}

/// One node as a `v1.Node` with fleetsim's labels and annotations (written directly as text:
/// the openb fleet has 1,213 nodes per request).
fn node_text(fleet: &FleetState, id: NodeId) -> String {
    use std::fmt::Write;
    let n = fleet.node(id);
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let mut labels = String::new();
    if let Some(m) = n.model {
        write!(
            labels,
            "\"fleetsim.io/gpu-model\":{},",
            q(&fleet.models()[m.index()])
        )
        .unwrap();
    }
    write!(
        labels,
        "\"fleetsim.io/domain\":\"{}\",\"fleetsim.io/block\":\"{}\",\"fleetsim.io/rank\":\"{}\"",
        n.domain, n.block, id.0
    )
    .unwrap();
    let free: Vec<String> = fleet.gpu_free(id).iter().map(|f| f.to_string()).collect();
    let spec = if n.schedulable {
        ""
    } else {
        ",\"spec\":{\"unschedulable\":true}"
    };
    format!(
        "{{\"metadata\":{{\"name\":{},\"labels\":{{{labels}}},\"annotations\":{{\"fleetsim.io/gpu-free-milli\":\"{}\",\"fleetsim.io/cpu-free-milli\":\"{}\",\"fleetsim.io/memory-free-mib\":\"{}\"}}}},\"status\":{{\"allocatable\":{{\"cpu\":\"{}m\",\"memory\":\"{}Mi\",\"nvidia.com/gpu\":\"{}\"}}}}{spec}}}",
        q(fleet.node_name(id)),
        free.join(","),
        n.free_cpu_milli,
        n.free_mem_mib,
        n.cpu_milli,
        n.mem_mib,
        n.gpus
    )
}

fn pod_json(fleet: &FleetState, policy: &str, job: &PendingJob) -> Value {
    let s = &job.shape;
    let mut requests = serde_json::Map::new();
    requests.insert("cpu".into(), format!("{}m", s.cpu_milli).into());
    requests.insert("memory".into(), format!("{}Mi", s.mem_mib).into());
    let mut ann = serde_json::Map::new();
    ann.insert("fleetsim.io/placement".into(), policy.into());
    ann.insert(
        "fleetsim.io/gang-tasks".into(),
        job.tasks.to_string().into(),
    );
    if s.num_gpu > 0 && s.gpu_milli == WHOLE_GPU_MILLI {
        requests.insert("nvidia.com/gpu".into(), s.num_gpu.to_string().into());
    } else if s.num_gpu > 0 {
        ann.insert(
            "fleetsim.io/gpu-milli".into(),
            s.gpu_milli.to_string().into(),
        );
        ann.insert("fleetsim.io/gpu-count".into(), s.num_gpu.to_string().into());
    }
    if !job.models.is_any() {
        let names: Vec<&str> = fleet
            .models()
            .iter()
            .enumerate()
            .filter(|(i, _)| job.models.0 >> i & 1 == 1)
            .map(|(_, m)| m.as_str())
            .collect();
        ann.insert("fleetsim.io/gpu-models".into(), names.join(",").into());
    }
    if let Some(t) = &job.topology {
        if let Some(l) = t.level {
            let mode = match t.mode {
                TopologyMode::Required => "required",
                TopologyMode::Preferred => "preferred",
            };
            ann.insert(
                "fleetsim.io/topology".into(),
                format!("{mode}:{}", level_name(l)).into(),
            );
        }
        if let Some(n) = t.slice_size {
            ann.insert(
                "fleetsim.io/topology-slice".into(),
                format!("{n}:{}", level_name(t.slice_level)).into(),
            );
        }
        if let Some(r) = t.ray {
            ann.insert("fleetsim.io/ray-strategy".into(), r.as_str().into());
        }
    }
    json!({
        "metadata": { "name": format!("job-{}", job.id.0), "namespace": "sim", "annotations": ann },
        "spec": { "containers": [ { "name": "task", "resources": { "requests": requests } } ] }
    })
}

/// Sends every `stride`-th placement call, up to `cap`, to the channel.
struct Recorder {
    seen: Arc<AtomicU64>,
    stride: u64,
    cap: u64,
    tx: tokio::sync::mpsc::Sender<Case>,
}

impl PlacementRecorder for Recorder {
    fn wants(&self) -> bool {
        let i = self.seen.fetch_add(1, Ordering::Relaxed);
        i.is_multiple_of(self.stride) && i / self.stride < self.cap
    }

    fn record(&self, call: &PlacementCall<'_>) {
        let i = self.seen.load(Ordering::Relaxed) - 1;
        let fleet = call.before;
        let nodes: Vec<String> = fleet.cells()[call.cell.index()]
            .nodes
            .iter()
            .map(|&n| node_text(fleet, n))
            .collect();
        let body = format!(
            "{{\"Pod\":{},\"Nodes\":{{\"items\":[{}]}}}}",
            pod_json(fleet, call.policy, call.job),
            nodes.join(",")
        );
        let expected = match call.result {
            None => "none".to_string(),
            Some(g) => g
                .iter()
                .map(|a| format!("{}:{:x}", fleet.node_name(a.node), a.gpu_mask))
                .collect::<Vec<_>>()
                .join(","),
        };
        let first = call
            .result
            .and_then(|g| g.first())
            .map(|a| fleet.node_name(a.node).to_string());
        // The receiver lives until the simulation ends; a send error means the test failed.
        let _ = self.tx.blocking_send(Case {
            index: i,
            body,
            expected,
            first,
        });
    }
}

struct Outcome {
    recorded_calls: u64,
    replayed: u64,
    started_gangs: u64,
    failed_gangs: u64,
    mismatches: Vec<String>,
}

/// Runs `name` with every `stride`-th placement call (at most `cap`) replayed through the
/// extender at `base`.
async fn replay(name: &str, stride: u64, cap: u64, base: String) -> Outcome {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Case>(32);
    let seen = Arc::new(AtomicU64::new(0));
    let rec = Arc::new(Recorder {
        seen: seen.clone(),
        stride,
        cap,
        tx,
    });
    let sim_rec = rec;
    let path = scenario_path(name);
    let sim = std::thread::spawn(move || {
        let loaded = scenario::load(&path).expect("scenario loads");
        let trace_dir = TraceDir(public_traces());
        let built = fleetsim::whatif::fleet::build(&loaded, &trace_dir).expect("fleet builds");
        let state = built.built.state;
        let (policies, mut cfg) = fleetsim::run::engine_config(&loaded);
        let ext = fleetsim::scenario::policies::extensions(&loaded, &state).expect("extensions");
        cfg.node_changes =
            fleetsim::engine::node_changes::node_changes(&loaded, &state).expect("node changes");
        cfg.node_events = built.events;
        let mut stream = fleetsim::run::open_workload(&loaded, &trace_dir, loaded.scenario.seed)
            .expect("workload opens");
        let mut sim = fleetsim::engine::Simulation::with_extensions(state, policies, ext, cfg);
        sim.placement_ctx_mut()
            .set_recorder(Some(sim_rec as Arc<dyn PlacementRecorder>));
        sim.run(
            stream.as_mut(),
            &mut fleetsim::engine::DiscardRows,
            &mut |_, _| {},
        )
        .expect("simulation runs");
        // Drop the simulator's handle on the recorder (and so its sender).
        sim.placement_ctx_mut().set_recorder(None);
    });
    let client = reqwest::Client::new();
    let mut out = Outcome {
        recorded_calls: 0,
        replayed: 0,
        started_gangs: 0,
        failed_gangs: 0,
        mismatches: Vec::new(),
    };
    let mut inflight = tokio::task::JoinSet::new();
    let check = |case: Case, client: reqwest::Client, base: String| async move {
        let resp = client
            .post(format!("{base}/prioritize"))
            .body(case.body.clone())
            .send()
            .await
            .expect("prioritize answered");
        assert_eq!(resp.status(), 200, "decision {}", case.index);
        let header = resp
            .headers()
            .get(PLACEMENT_HEADER)
            .map(|h| h.to_str().unwrap().to_string())
            .unwrap_or_default();
        let scores: Vec<HostPriority> = resp.json().await.expect("HostPriorityList");
        let top: Vec<&str> = scores
            .iter()
            .filter(|h| h.score == 10)
            .map(|h| h.host.as_str())
            .collect();
        let mut problems = Vec::new();
        if header != case.expected {
            // For debugging: FLEETSIM_EQUIV_DUMP=<dir> keeps the failing requests.
            if let Some(dir) = std::env::var_os("FLEETSIM_EQUIV_DUMP") {
                let _ = std::fs::write(
                    PathBuf::from(dir).join(format!("case-{}.json", case.index)),
                    &case.body,
                );
            }
            problems.push(format!(
                "decision {}: extender placed {header}, simulator {}",
                case.index, case.expected
            ));
        }
        let want: Vec<&str> = case.first.iter().map(String::as_str).collect();
        if top != want {
            problems.push(format!(
                "decision {}: extender scored 10 {top:?}, simulator chose {want:?}",
                case.index
            ));
        }
        if case.index.is_multiple_of(10) {
            let resp = client
                .post(format!("{base}/filter"))
                .body(case.body.clone())
                .send()
                .await
                .expect("filter answered");
            assert_eq!(resp.status(), 200);
            let v: Value = resp.json().await.unwrap();
            let passing: Vec<String> = v["NodeNames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            match &case.first {
                Some(f) if !passing.contains(f) => problems.push(format!(
                    "decision {}: filter failed the chosen node {f}",
                    case.index
                )),
                None if !passing.is_empty() => problems.push(format!(
                    "decision {}: gang fits nowhere, filter passed {} nodes",
                    case.index,
                    passing.len()
                )),
                _ => {}
            }
        }
        (case.first.is_some(), problems)
    };
    loop {
        tokio::select! {
            case = rx.recv() => match case {
                Some(case) => {
                    while inflight.len() >= 4 {
                        let (started, problems) = inflight.join_next().await.unwrap().unwrap();
                        tally(&mut out, started, problems);
                    }
                    inflight.spawn(check(case, client.clone(), base.clone()));
                }
                None => break,
            },
        }
    }
    while let Some(r) = inflight.join_next().await {
        let (started, problems) = r.unwrap();
        tally(&mut out, started, problems);
    }
    sim.join().expect("simulation thread");
    out.recorded_calls = seen.load(Ordering::Relaxed);
    out
}

fn tally(out: &mut Outcome, started: bool, problems: Vec<String>) {
    out.replayed += 1;
    if started {
        out.started_gangs += 1;
    } else {
        out.failed_gangs += 1;
    }
    out.mismatches.extend(problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulator_and_extender_decide_alike() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(fleetsim_extender::serve(
        listener,
        Config::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let mut total = 0;
    let only = std::env::var("FLEETSIM_EQUIV_ONLY").ok();
    for (name, stride, cap) in [("openb-replay", 8, 1_000), ("nvl72-topology", 8, 800)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let cap = std::env::var("FLEETSIM_EQUIV_CAP")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(cap);
        let o = replay(name, stride, cap, base.clone()).await;
        eprintln!(
            "{name}: {} placement calls, {} replayed through the extender ({} gangs placed, {} not fitting), {} mismatches",
            o.recorded_calls,
            o.replayed,
            o.started_gangs,
            o.failed_gangs,
            o.mismatches.len()
        );
        assert!(
            o.mismatches.is_empty(),
            "{name}: {} mismatches, first: {:#?}",
            o.mismatches.len(),
            &o.mismatches[..o.mismatches.len().min(10)]
        );
        assert!(o.replayed >= 100, "{name}: only {} decisions", o.replayed);
        total += o.replayed;
    }
    if only.is_none() {
        assert!(total >= 1_000, "only {total} decisions replayed");
    }
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
