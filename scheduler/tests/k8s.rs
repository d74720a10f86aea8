//! The Kubernetes adapter on recorded objects (tests/fixtures/k8s, written in the shape of
//! `kubectl get nodes,pods -o json`) with the committed Kueue manifests
//! (scenarios/kueue-manifests.yaml: LocalQueues team-a/research, team-b/product, the
//! WorkloadPriorityClass `high` = 1000).
//!
//! Expected values by hand: time 0 is the earliest creationTimestamp, node gpu-node-a1's
//! 2026-03-01T08:00:00Z; gpu-node-a2 is 5 s later; pod serve-7d9f 08:05:00 (300 s), the
//! Kueue group `train` is whole at train-1's 08:10:02 (602 s), the coscheduling group `eval`
//! at eval-b's 08:20:30 (1,230 s). train's task: 24 + 0.5 = 24.5 cores, 256 GiB + 512 MiB =
//! 262,656 MiB, 8 GPUs; serve's 8 cores, 64 GiB = 65,536 MiB, 4 GPUs (from limits);
//! priority 1000 from the class `high`, 100 from spec.priority.

use fleetsim::scenario::kueue::{self, KueueConfig};
use fleetsim_scheduler::k8s::{
    bindings, objects, read, ClusterEvent, JobSubmitted, NodeAdded, ObservedStart, TaskBinding,
};
use serde_json::{json, Value};

fn fixture(name: &str) -> Vec<Value> {
    let p = format!("{}/tests/fixtures/k8s/{name}", env!("CARGO_MANIFEST_DIR"));
    objects(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn manifests() -> KueueConfig {
    kueue::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-manifests.yaml"),
    )
    .unwrap()
}

fn recording() -> Vec<Value> {
    let mut all = fixture("nodes.json");
    all.extend(fixture("pods.json"));
    all
}

fn node(time_ms: u64, name: &str, cell: &str, domain: &str) -> ClusterEvent {
    ClusterEvent::NodeAdded(NodeAdded {
        time_ms,
        name: name.into(),
        cell: cell.into(),
        block: "block-7".into(),
        domain: domain.into(),
        model: Some("H100".into()),
        gpus: 8,
        cpu_milli: 207_500,
        mem_mib: 1_838_720,
    })
}

#[test]
fn pods_and_nodes_become_events() {
    let r = read(&recording(), &manifests()).unwrap();
    // 2026-03-01T08:00:00Z: 20,513 days after the epoch + 8 h
    assert_eq!(r.origin, 20_513 * 86_400 + 8 * 3600);
    let expected = vec![
        node(0, "gpu-node-a1", "us-central1-a", "gpu-node-a1"),
        node(5_000, "gpu-node-a2", "hopper", "clique-3"),
        ClusterEvent::JobSubmitted(JobSubmitted {
            time_ms: 300_000,
            job: "team-b/serve-7d9f".into(),
            tenant: "team-b".into(),
            queue: "product".into(),
            priority: 100,
            tasks: 1,
            gpu_milli: 4_000,
            cpu_milli: 8_000,
            mem_mib: 65_536,
            model: None,
            pods: vec!["team-b/serve-7d9f".into()],
        }),
        ClusterEvent::JobSubmitted(JobSubmitted {
            time_ms: 602_000,
            job: "team-a/train".into(),
            tenant: "team-a".into(),
            queue: "research".into(),
            priority: 1000,
            tasks: 2,
            gpu_milli: 8_000,
            cpu_milli: 24_500,
            mem_mib: 262_656,
            model: Some("H100".into()),
            pods: vec!["team-a/train-0".into(), "team-a/train-1".into()],
        }),
        ClusterEvent::JobSubmitted(JobSubmitted {
            time_ms: 1_230_000,
            job: "team-b/eval".into(),
            tenant: "team-b".into(),
            queue: "product".into(),
            priority: 0,
            tasks: 2,
            gpu_milli: 2_000,
            cpu_milli: 0,
            mem_mib: 0,
            model: None,
            pods: vec!["team-b/eval-a".into(), "team-b/eval-b".into()],
        }),
    ];
    assert_eq!(r.events, expected);
    // the one bound pod: started 08:05:03 = 303 s
    assert_eq!(
        r.observed,
        vec![ObservedStart {
            job: "team-b/serve-7d9f".into(),
            time_ms: Some(303_000),
            nodes: vec!["gpu-node-a2".into()],
        }]
    );
}

#[test]
fn an_admit_becomes_one_binding_per_pod() {
    let r = read(&recording(), &manifests()).unwrap();
    let ClusterEvent::JobSubmitted(train) = &r.events[3] else {
        panic!("{:?}", r.events[3])
    };
    let b = bindings(
        train,
        &[
            TaskBinding {
                node: "gpu-node-a1".into(),
                gpus: (0..8).collect(),
            },
            TaskBinding {
                node: "gpu-node-a2".into(),
                gpus: (0..8).collect(),
            },
        ],
    )
    .unwrap();
    let one = |pod: &str, node: &str| {
        json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {
                "name": pod,
                "namespace": "team-a",
                "annotations": { "fleetsim.io/gpu-indices": "0,1,2,3,4,5,6,7" }
            },
            "target": { "apiVersion": "v1", "kind": "Node", "name": node }
        })
    };
    assert_eq!(
        b,
        vec![one("train-0", "gpu-node-a1"), one("train-1", "gpu-node-a2")]
    );
    let e = bindings(
        train,
        &[TaskBinding {
            node: "gpu-node-a1".into(),
            gpus: vec![0],
        }],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "job team-a/train: tasks: admit has 1 tasks for 2 pods"
    );
}

fn error_after(edit: impl FnOnce(&mut Vec<Value>)) -> String {
    let mut objs = recording();
    edit(&mut objs);
    read(&objs, &manifests()).unwrap_err().to_string()
}

fn pod<'a>(objs: &'a mut [Value], name: &str) -> &'a mut Value {
    objs.iter_mut()
        .find(|o| o["metadata"]["name"] == name)
        .unwrap()
}

#[test]
fn bad_objects_name_the_object_and_field() {
    let e = error_after(|o| {
        let c = &mut pod(o, "train-0")["spec"]["containers"][0]["resources"];
        c["requests"]
            .as_object_mut()
            .unwrap()
            .remove("nvidia.com/gpu");
        c["limits"]
            .as_object_mut()
            .unwrap()
            .remove("nvidia.com/gpu");
    });
    assert_eq!(e, "Pod team-a/train-0: spec.containers[].resources.requests.nvidia.com/gpu: missing: no container requests GPUs");

    let e = error_after(|o| {
        pod(o, "serve-7d9f")["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("research");
    });
    assert_eq!(e, "Pod team-b/serve-7d9f: metadata.labels.kueue.x-k8s.io/queue-name: unknown queue `research`: no LocalQueue `research` in namespace `team-b` in the Kueue manifests");

    let e = error_after(|o| {
        pod(o, "eval-a")["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("kueue.x-k8s.io/queue-name");
    });
    assert_eq!(e, "Pod team-b/eval-a: metadata.labels.kueue.x-k8s.io/queue-name: missing: every pod must name its LocalQueue");

    let e = error_after(|o| {
        pod(o, "train-1")["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!("urgent");
    });
    assert_eq!(e, "Pod team-a/train-1: metadata.labels.kueue.x-k8s.io/priority-class: unknown WorkloadPriorityClass `urgent`");

    let e = error_after(|o| {
        pod(o, "train-1")["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] =
            json!("4");
    });
    assert_eq!(e, "Pod team-a/train-1: spec.containers[].resources: differs from pod team-a/train-0 of the same group `team-a/train`");

    let e = error_after(|o| {
        for n in ["train-0", "train-1"] {
            pod(o, n)["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] =
                json!("3");
        }
    });
    assert_eq!(e, "Pod team-a/train-0: metadata.annotations.kueue.x-k8s.io/pod-group-total-count: group `team-a/train` declares 3 pods, 2 recorded");

    let e = error_after(|o| {
        pod(o, "eval-b")["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] =
            json!("500m");
    });
    assert_eq!(e, "Pod team-b/eval-b: spec.containers[0].resources.requests.nvidia.com/gpu: GPUs must be whole (an integer extended resource)");

    let e = error_after(|o| {
        pod(o, "gpu-node-a2")["status"]["allocatable"]
            .as_object_mut()
            .unwrap()
            .remove("nvidia.com/gpu");
    });
    assert_eq!(e, "Node gpu-node-a2: status.allocatable.nvidia.com/gpu: missing (a node without GPUs is not schedulable here)");

    let e = error_after(|o| {
        pod(o, "gpu-node-a1")["metadata"]["creationTimestamp"] = json!("yesterday");
    });
    assert_eq!(e, "Node gpu-node-a1: metadata.creationTimestamp: `yesterday` is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");

    // A day the month does not have is refused, not rolled over into March.
    let e = error_after(|o| {
        pod(o, "gpu-node-a1")["metadata"]["creationTimestamp"] = json!("2026-02-30T08:00:00Z");
    });
    assert_eq!(e, "Node gpu-node-a1: metadata.creationTimestamp: `2026-02-30T08:00:00Z` is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");

    // Pods of one group must declare the same count (train-1 comes second in name order).
    let e = error_after(|o| {
        pod(o, "train-1")["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] =
            json!("3");
    });
    assert_eq!(e, "Pod team-a/train-1: metadata.annotations.kueue.x-k8s.io/pod-group-total-count: differs from pod team-a/train-0 of the same group `team-a/train`");
    let e = error_after(|o| {
        pod(o, "eval-b")["metadata"]["annotations"]["scheduling.x-k8s.io/min-available"] =
            json!("1");
    });
    assert_eq!(e, "Pod team-b/eval-b: metadata.annotations.scheduling.x-k8s.io/min-available: differs from pod team-b/eval-a of the same group `team-b/eval`");

    // A request of 0 GPUs is refused like no request.
    let e = error_after(|o| {
        pod(o, "serve-7d9f")["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] =
            json!("0");
    });
    assert_eq!(e, "Pod team-b/serve-7d9f: spec.containers[].resources.requests.nvidia.com/gpu: 0 GPUs requested: the scheduler places GPU jobs (request at least 1)");
}

// ---------- the adapter's events through the live scheduler, admits back as bindings ----------

fn spec() -> fleetsim::scenario::Loaded {
    fleetsim::scenario::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s/spec.toml"),
    )
    .unwrap()
}

fn twin() -> fleetsim_policies::live::LiveState {
    let opts = fleetsim::run::RunOptions {
        seed: None,
        trace_dir: fleetsim::scenario::TraceDir(std::path::PathBuf::from(".")),
        out_dir: None,
        keep_rows: false,
    };
    fleetsim::run::live_twin(&spec(), &opts).unwrap()
}

/// The recording on its spec (tests/fixtures/k8s/spec.toml: gpu-node-a1 alone in cell
/// us-central1-a, gpu-node-a2 alone in hopper, 8 H100 each; FIFO, best-fit, first-fit
/// cells), by hand:
/// - 0 s, 5 s: the two nodes (already schedulable in the spec: no decision). Each instant's
///   events are followed by a pass at that instant.
/// - 300 s: team-b/serve-7d9f (job 0, tenant team-b = 0, queue product, 4 GPUs) → the first
///   cell, us-central1-a: gpu-node-a1, GPUs 0–3.
/// - 602 s: team-a/train (job 1, tenant team-a = 1, queue research, 2 × 8 H100): a gang
///   of 16 GPUs in a fleet whose cells hold 8 each (a gang runs in one cell) can never
///   start: rejected, `gang_larger_than_cell`.
/// - 1,230 s: team-b/eval (job 2, 2 × 2 GPUs) → us-central1-a again: both tasks on
///   gpu-node-a1's free GPUs 4–5 and 6–7.
///
/// The admits become one `v1.Binding` per pod, pods in name order.
#[test]
fn recorded_objects_drive_the_live_scheduler_and_admits_become_bindings() {
    use fleetsim_policies::live::{Decision, Event};
    use fleetsim_scheduler::k8s_live::{queue_indices, translate};
    let r = read(&recording(), &manifests()).unwrap();
    let mut live = twin();
    let tr = translate(&r, live.fleet(), &queue_indices(&spec()), None).unwrap();
    assert_eq!(
        tr.tenants,
        [("team-a".to_string(), 1), ("team-b".to_string(), 0)].into()
    );
    // Five instants, each its event and a pass.
    assert_eq!(tr.events.len(), 10);
    assert!(matches!(
        tr.events[2],
        Event::NodeAdded { t: 5_000, node: 1 }
    ));
    assert!(matches!(tr.events[3], Event::Pass { t: 5_000 }));
    let Event::JobSubmitted { t, job } = &tr.events[6] else {
        panic!("{:?}", tr.events[6]);
    };
    assert_eq!((*t, job.id, job.tenant, job.tasks), (602_000, 1, 1, 2));
    assert_eq!((job.shape.num_gpu, job.shape.gpu_milli), (8, 1000));
    assert_eq!((job.shape.cpu_milli, job.shape.mem_mib), (24_500, 262_656));
    assert_eq!((job.priority, job.models.len()), (1000, 1));
    let mut decisions = Vec::new();
    for ev in &tr.events {
        decisions.extend(live.apply(ev).unwrap());
    }
    let seen: Vec<String> = decisions
        .iter()
        .map(|d| match d {
            Decision::Admit { t, job, cell, .. } => format!("{t} admit {job} in cell {cell}"),
            Decision::Reject { t, job, reason } => format!("{t} reject {job}: {reason:?}"),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        seen,
        [
            "300000 admit 0 in cell 0",
            "602000 reject 1: GangLargerThanCell",
            "1230000 admit 2 in cell 0",
        ]
    );
    assert_eq!(tr.bindings(live.fleet(), &decisions[1]).unwrap(), None);
    let target = |b: &Value| {
        (
            b["metadata"]["namespace"].as_str().unwrap().to_string(),
            b["metadata"]["name"].as_str().unwrap().to_string(),
            b["target"]["name"].as_str().unwrap().to_string(),
            b["metadata"]["annotations"]["fleetsim.io/gpu-indices"]
                .as_str()
                .unwrap()
                .to_string(),
        )
    };
    let bound: Vec<_> = decisions
        .iter()
        .filter_map(|d| tr.bindings(live.fleet(), d).unwrap())
        .flatten()
        .map(|b| target(&b))
        .collect();
    let s = |a: &str, b: &str, c: &str, d: &str| (a.into(), b.into(), c.into(), d.into());
    assert_eq!(
        bound,
        [
            s("team-b", "serve-7d9f", "gpu-node-a1", "0,1,2,3"),
            s("team-b", "eval-a", "gpu-node-a1", "4,5"),
            s("team-b", "eval-b", "gpu-node-a1", "6,7"),
        ]
    );
}

/// A recording that does not fit the spec is refused naming the object and the field.
#[test]
fn a_recording_that_does_not_fit_the_spec_is_refused() {
    use fleetsim_scheduler::k8s_live::{queue_indices, translate};
    let live = twin();
    let queues = queue_indices(&spec());
    let r = read(&recording(), &manifests()).unwrap();
    let mut bad = r.clone();
    if let ClusterEvent::NodeAdded(n) = &mut bad.events[0] {
        n.gpus = 4;
    }
    let e = translate(&bad, live.fleet(), &queues, None).unwrap_err();
    assert_eq!(e.object, "Node gpu-node-a1");
    assert_eq!(e.field, "status.allocatable.nvidia.com/gpu");
    assert!(e.message.contains("4 GPUs, the spec's node has 8"), "{e}");
    let mut bad = r.clone();
    if let ClusterEvent::NodeAdded(n) = &mut bad.events[1] {
        n.name = "gpu-node-z9".into();
    }
    let e = translate(&bad, live.fleet(), &queues, None).unwrap_err();
    assert_eq!(
        (e.object.as_str(), e.field.as_str()),
        ("Node gpu-node-z9", "metadata.name")
    );
    let mut bad = r.clone();
    if let ClusterEvent::JobSubmitted(j) = &mut bad.events[2] {
        j.queue = "nightly".into();
    }
    let e = translate(&bad, live.fleet(), &queues, None).unwrap_err();
    assert_eq!(e.object, "job team-b/serve-7d9f");
    assert!(
        e.message.contains("`nightly` is not a queue of the spec"),
        "{e}"
    );
    // With a tokens file's [tenants] table, a namespace it does not list is refused.
    let only_a = [("team-a".to_string(), 7)].into();
    let e = translate(&r, live.fleet(), &queues, Some(&only_a)).unwrap_err();
    assert_eq!(e.field, "metadata.namespace");
    assert!(e.message.contains("`team-b`"), "{e}");
}

/// `fleetsim-scheduler k8s-events` writes the same events as one batch, and names a file it
/// cannot take.
#[test]
fn the_k8s_events_command_writes_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s");
    let yaml =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-manifests.yaml");
    let out = dir.path().join("batch.json");
    let cmd = |objects: &[std::path::PathBuf]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim-scheduler"));
        c.arg("k8s-events")
            .arg("--spec")
            .arg(fx.join("spec.toml"))
            .arg("--kueue")
            .arg(&yaml)
            .arg("--out")
            .arg(&out);
        for o in objects {
            c.arg("--objects").arg(o);
        }
        c.output().unwrap()
    };
    let o = cmd(&[fx.join("nodes.json"), fx.join("pods.json")]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout.contains("2 nodes, 3 jobs (tenants team-a=1, team-b=0)")
            && stdout.contains("10 events"),
        "{stdout}"
    );
    let batch: fleetsim_scheduler::service::Batch =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let r = read(&recording(), &manifests());
    let expected = fleetsim_scheduler::k8s_live::translate(
        &r.unwrap(),
        twin().fleet(),
        &fleetsim_scheduler::k8s_live::queue_indices(&spec()),
        None,
    )
    .unwrap();
    assert_eq!((batch.batch, batch.events), (Some(0), expected.events));
    let o = cmd(&["/dev/zero".into()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("/dev/zero: larger than 67108864 bytes"),
        "{stderr}"
    );
}
