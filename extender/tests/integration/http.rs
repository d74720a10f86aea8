//! The HTTP service: verbs answer in the upstream shapes; every kind of bad input gets 400
//! with a reason and the server keeps serving; health and metrics endpoints.

use fleetsim_extender::server::{Config, PLACEMENT_HEADER};
use fleetsim_extender::wire::{ExtenderFilterResult, ExtenderPreemptionResult, HostPriority};
use serde_json::{json, Value};

/// Starts a server on a loopback port; returns its base URL.
async fn start(config: Config) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(fleetsim_extender::serve(
        listener,
        config,
        std::future::pending(),
    ));
    base
}

fn node(name: &str, free: &str) -> Value {
    json!({
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.product": "H100"},
            "annotations": {"fleetsim.io/gpu-free-milli": free}
        },
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "4"}}
    })
}

fn pod(gpus: u32, annotations: Value) -> Value {
    json!({
        "metadata": {"name": "p", "namespace": "default", "uid": "uid-p", "annotations": annotations},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {
            "cpu": "4", "memory": "16Gi", "nvidia.com/gpu": gpus.to_string()}}}]}
    })
}

fn args(pod: Value) -> Value {
    json!({
        "Pod": pod,
        "Nodes": {"items": [
            node("a", "1000,1000,1000,1000"),
            node("b", "1000,1000,0,0"),
            node("c", "0,0,0,0"),
        ]}
    })
}

async fn post(base: &str, verb: &str, body: impl Into<reqwest::Body>) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(format!("{base}/{verb}"))
        .body(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn healthy(base: &str) {
    let r = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "ok\n");
}

#[tokio::test]
async fn filter_and_prioritize_answer_in_upstream_shapes() {
    let base = start(Config::default()).await;
    let body = args(pod(2, json!({}))).to_string();
    let (code, text) = post(&base, "filter", body.clone()).await;
    assert_eq!(code, 200, "{text}");
    let f: ExtenderFilterResult = serde_json::from_str(&text).unwrap();
    assert_eq!(f.node_names.unwrap(), ["a", "b"]);
    assert_eq!(f.nodes.unwrap().items.len(), 2);
    assert!(f.failed_nodes["c"].contains("insufficient GPU"), "{text}");
    assert!(f.error.is_empty());
    // Keys are PascalCase, as kube-scheduler sends and expects them.
    let v: Value = serde_json::from_str(&text).unwrap();
    for k in [
        "Nodes",
        "NodeNames",
        "FailedNodes",
        "FailedAndUnresolvableNodes",
        "Error",
    ] {
        assert!(v.get(k).is_some(), "missing {k} in {text}");
    }

    let r = reqwest::Client::new()
        .post(format!("{base}/prioritize"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // best-fit: the node with the least free GPU that holds 2 GPUs is b.
    assert_eq!(r.headers()[PLACEMENT_HEADER], "b:3");
    let scores: Vec<HostPriority> = r.json().await.unwrap();
    let got: Vec<(&str, i64)> = scores.iter().map(|h| (h.host.as_str(), h.score)).collect();
    assert_eq!(got, [("a", 0), ("b", 10), ("c", 0)]);

    // A node that could never hold the pod is unresolvable.
    let (code, text) = post(&base, "filter", args(pod(8, json!({}))).to_string()).await;
    assert_eq!(code, 200);
    let f: ExtenderFilterResult = serde_json::from_str(&text).unwrap();
    assert_eq!(f.failed_and_unresolvable_nodes.len(), 3, "{text}");

    // The policy by the same names as scenarios: worst-fit picks the emptiest node.
    let (code, text) = post(
        &base,
        "prioritize",
        args(pod(2, json!({"fleetsim.io/placement": "worst-fit"}))).to_string(),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let scores: Vec<HostPriority> = serde_json::from_str(&text).unwrap();
    assert_eq!(scores[0].score, 10, "{text}");
}

#[tokio::test]
async fn bad_input_is_400_with_a_reason_and_the_server_keeps_serving() {
    let base = start(Config {
        max_body_bytes: 4096,
        ..Config::default()
    })
    .await;
    let cases: Vec<(&str, String, &str)> = vec![
        ("filter", "{\"Pod\": ".into(), "malformed request body"),
        ("prioritize", "not json".into(), "malformed request body"),
        (
            "filter",
            json!({"Nodes": {"items": []}}).to_string(),
            "missing field `Pod`",
        ),
        (
            "prioritize",
            json!({"Pod": pod(1, json!({}))}).to_string(),
            "missing field `Nodes`",
        ),
        (
            "prioritize",
            args(pod(1, json!({"fleetsim.io/placement": "bestfit"}))).to_string(),
            "unknown PlacementKind `bestfit`; valid names: first-fit, best-fit",
        ),
        (
            "filter",
            args(pod(1, json!({"fleetsim.io/gpu-milli": "1500"}))).to_string(),
            "gpu_milli 1500 must be in 1..=1000",
        ),
        (
            "filter",
            args(pod(1, json!({"fleetsim.io/topology": "required:rack"}))).to_string(),
            "unknown level `rack`",
        ),
        (
            "filter",
            json!({"Pod": pod(1, json!({})), "Nodes": {"items": [node("a", "1000,oops,1000,1000")]}})
                .to_string(),
            "fleetsim.io/gpu-free-milli `oops` is not a non-negative integer",
        ),
        (
            "filter",
            json!({"Pod": pod(1, json!({})), "Nodes": {"items": [node("a", "1000,1000")]}})
                .to_string(),
            "lists 2 accelerators, allocatable nvidia.com/gpu is 4",
        ),
        (
            "filter",
            json!({"Pod": {"metadata": {"name": "p"}, "spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}},
                "Nodes": {"items": []}})
            .to_string(),
            "`lots` is not a Kubernetes quantity",
        ),
        (
            "preempt",
            json!({"Pod": pod(1, json!({}))}).to_string(),
            "missing field `NodeNameToVictims`",
        ),
        ("filter", "x".repeat(5000), "over the limit of 4096 bytes"),
    ];
    for (verb, body, reason) in cases {
        let (code, text) = post(&base, verb, body).await;
        assert_eq!(code, 400, "{verb}: {text}");
        let v: Value = serde_json::from_str(&text).expect("a JSON error body");
        let msg = v["Error"].as_str().unwrap();
        assert!(
            msg.contains(reason),
            "{verb}: expected `{reason}` in `{msg}`"
        );
        healthy(&base).await;
    }
    // Still deciding after all that.
    let (code, _) = post(&base, "filter", args(pod(1, json!({}))).to_string()).await;
    assert_eq!(code, 200);
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("fleetsim_extender_requests_total{code=\"400\",verb=\"filter\"} 8"),
        "{metrics}"
    );
    assert!(metrics.contains("fleetsim_extender_request_duration_seconds_bucket"));
}

#[tokio::test]
async fn preempt_keeps_a_minimal_victim_set_in_fleetsim_order() {
    let base = start(Config::default()).await;
    // Node a: 4 GPUs, all held by four 1-GPU victims.
    let full = json!({"Pod": pod(1, json!({})), "Nodes": {"items": [node("a", "0,0,0,0")]}});
    let (code, _) = post(&base, "filter", full.to_string()).await;
    assert_eq!(code, 200);
    let victim = |uid: &str, prio: i32, start: &str, gpu: u32| {
        json!({
            "metadata": {"name": uid, "uid": uid,
                         "annotations": {"fleetsim.io/gpu-alloc": format!("{:x}:1000", 1u64 << gpu)}},
            "spec": {"priority": prio, "containers": [{"name": "c", "resources": {"requests": {
                "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}}]},
            "status": {"startTime": start}
        })
    };
    let body = json!({
        "Pod": pod(2, json!({})),
        "NodeNameToVictims": {
            "a": {"Pods": [
                victim("v-high", 10, "2026-01-01T00:00:00Z", 0),
                victim("v-low-old", 0, "2026-01-01T00:00:00Z", 1),
                victim("v-low-new", 0, "2026-01-02T00:00:00Z", 2),
                victim("v-mid", 5, "2026-01-01T00:00:00Z", 3),
            ], "NumPDBViolations": 0},
            "unknown-node": {"Pods": [victim("u1", 0, "2026-01-01T00:00:00Z", 0)], "NumPDBViolations": 1}
        }
    });
    let (code, text) = post(&base, "preempt", body.to_string()).await;
    assert_eq!(code, 200, "{text}");
    let r: ExtenderPreemptionResult = serde_json::from_str(&text).unwrap();
    let uids: Vec<&str> = r.node_name_to_meta_victims["a"]
        .pods
        .iter()
        .map(|p| p.uid.as_str())
        .collect();
    // Lowest priority first, the most recently started first among equals; two make room.
    assert_eq!(uids, ["v-low-new", "v-low-old"]);
    // A node never seen in a filter request keeps kube-scheduler's victims.
    assert_eq!(r.node_name_to_meta_victims["unknown-node"].pods.len(), 1);
    assert_eq!(
        r.node_name_to_meta_victims["unknown-node"].num_pdb_violations,
        1
    );
    // A pod that no eviction can fit drops the node.
    let mut big = body.clone();
    big["Pod"] = pod(8, json!({}));
    let (code, text) = post(&base, "preempt", big.to_string()).await;
    assert_eq!(code, 200);
    let r: ExtenderPreemptionResult = serde_json::from_str(&text).unwrap();
    assert!(!r.node_name_to_meta_victims.contains_key("a"), "{text}");
}

/// A study's `[policy]` table, loaded with `--spec`, decides the default placement and is
/// reported back at `/spec` as the same spec.
#[tokio::test]
async fn a_loaded_spec_sets_the_default_policy_and_is_reported() {
    let spec = fleetsim_extender::spec_file::parse(
        "placement = \"worst-fit\"\nqueue_order = { name = \"las\", thresholds_gpu_s = [3250, 7200] }\n[preemption]\nlas = true\n",
        false,
    )
    .unwrap();
    let base = start(Config {
        policy: spec.placement.kind(),
        spec: spec.clone(),
        ..Config::default()
    })
    .await;
    let r = reqwest::get(format!("{base}/spec")).await.unwrap();
    assert_eq!(r.status(), 200);
    let back: fleetsim_policies::SchedulerSpec = r.json().await.unwrap();
    assert_eq!(back, spec);
    // Worst-fit, not the best-fit default: the pod goes to the emptier node `b` of two
    // (node `a` has one of its four GPUs taken).
    let body = json!({
        "Pod": pod(1, json!({})),
        "Nodes": {"items": [node("a", "0,1000,1000,1000"), node("b", "1000,1000,1000,1000")]}
    });
    let (code, text) = post(&base, "prioritize", body.to_string()).await;
    assert_eq!(code, 200, "{text}");
    let scores: Vec<HostPriority> = serde_json::from_str(&text).unwrap();
    let top: Vec<&str> = scores
        .iter()
        .filter(|s| s.score == 10)
        .map(|s| s.host.as_str())
        .collect();
    assert_eq!(top, ["b"], "{text}");
}
