//! Hostile clients, all on loopback: a tenant's own victim claims
//! cannot move an eviction onto another tenant's pod; only authenticated callers shape
//! their own node cache; bytes, annotation sizes, gang sizes and concurrent work are capped
//! (503 when the queue is full, `/healthz` answered meanwhile); slow connections are cut
//! and capped; SIGTERM drains the request in flight.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use fleetsim_extender::server::{Auth, Config, Limits};
use fleetsim_extender::wire::ExtenderPreemptionResult;
use serde_json::{json, Value};

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

async fn post(base: &str, verb: &str, auth: Option<&str>, body: String) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/{verb}"))
        .body(body);
    if let Some(a) = auth {
        req = req.header("Authorization", a);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn metric(base: &str, name: &str) -> f64 {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no metric {name} in {text}"))
}

/// A 2-GPU node, both accelerators fully in use.
fn full_node(free: &str) -> Value {
    json!({
        "metadata": {"name": "n", "labels": {"nvidia.com/gpu.product": "H100"},
                     "annotations": {"fleetsim.io/gpu-free-milli": free}},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "2"}}
    })
}

fn pod(name: &str, prio: i32, ann: Value) -> Value {
    json!({
        "metadata": {"name": name, "namespace": name, "uid": format!("uid-{name}"), "annotations": ann},
        "spec": {"priority": prio, "containers": [{"name": "c", "resources": {"requests": {
            "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}}]},
        "status": {"startTime": "2026-01-01T00:00:00Z"}
    })
}

fn filter_body(free: &str) -> String {
    json!({"Pod": pod("pending", 10, json!({})), "Nodes": {"items": [full_node(free)]}}).to_string()
}

/// The victims kept on node `n` for a pending 1-GPU pod, given the attacker's claim.
fn preempt_body(claim: Option<&str>) -> String {
    let ann = claim.map_or(json!({}), |c| json!({"fleetsim.io/gpu-alloc": c}));
    json!({
        "Pod": pod("pending", 10, json!({})),
        "NodeNameToVictims": {"n": {"Pods": [
            pod("attacker", 0, ann),
            pod("other-tenant", 5, json!({})),
        ], "NumPDBViolations": 0}}
    })
    .to_string()
}

fn victims_on_n(text: &str) -> Vec<String> {
    let r: ExtenderPreemptionResult = serde_json::from_str(text).unwrap();
    r.node_name_to_meta_victims
        .get("n")
        .map(|v| v.pods.iter().map(|p| p.uid.clone()).collect())
        .unwrap_or_default()
}

/// Item 1. The node's two GPUs are in use by `attacker` (priority 0) and `other-tenant`
/// (priority 5); the pending pod needs one GPU. In fleetsim's order the attacker goes first
/// and evicting it alone frees one GPU, so the answer is [attacker]. Before the fix, the
/// attacker's own `gpu-alloc` claim decided what evicting it frees: `0:1000` (no GPU),
/// `1:1` (1 milli) or `c0:1` (GPUs 6 and 7, absent) freed no whole GPU, the other tenant's
/// pod was taken too, and the attacker was put back: [other-tenant].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_victims_own_claim_cannot_move_its_eviction_onto_another_tenant() {
    let base = start(Config::default()).await;
    let (code, text) = post(&base, "filter", None, filter_body("0,0")).await;
    assert_eq!(code, 200, "{text}");
    for claim in [
        None,
        Some("1:1000"),
        Some("0:1000"),
        Some("1:1"),
        Some("c0:1"),
    ] {
        let (code, text) = post(&base, "preempt", None, preempt_body(claim)).await;
        assert_eq!(code, 200, "{text}");
        assert_eq!(victims_on_n(&text), ["uid-attacker"], "claim {claim:?}");
    }
    // The three claims that disagree with the pod's 1 whole GPU or the node were ignored.
    let ignored = metric(&base, "fleetsim_extender_victim_claims_ignored_total").await;
    assert_eq!(ignored, 3.0);
}

const SCHED: &str = "sched-token-0123456789abcdef";
const TENANT: &str = "tenant-token-0123456789abcdef";

fn basic(name: &str, token: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{name}:{token}"))
    )
}

/// Item 2. With a token file, unauthenticated and wrongly authenticated verbs get 401, and
/// a forged `filter` by another caller (claiming node `n` free) does not change the
/// scheduler's `preempt`: still [attacker], where the poisoned view (n has room) would give
/// an empty victim list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_authenticated_callers_and_each_only_its_own_node_view() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        format!("# callers\nkube-scheduler {SCHED}\ntenant {TENANT}\n"),
    )
    .unwrap();
    let auth = Auth::from_file(&file).unwrap();
    let base = start(Config {
        auth: Some(auth),
        ..Config::default()
    })
    .await;
    let sched = format!("Bearer {SCHED}");
    for bad in [
        None,
        Some("Bearer wrong-token-0123456789".to_string()),
        Some(basic("kube-scheduler", TENANT)),
        Some(format!("Token {SCHED}")),
    ] {
        let (code, text) = post(&base, "filter", bad.as_deref(), filter_body("1000,1000")).await;
        assert_eq!(code, 401, "{bad:?}: {text}");
    }
    let (code, _) = post(
        &base,
        "filter",
        Some(&basic("kube-scheduler", SCHED)),
        filter_body("0,0"),
    )
    .await;
    assert_eq!(code, 200);
    // The tenant (a valid caller) and an anonymous client both claim n is free.
    let (code, _) = post(
        &base,
        "filter",
        Some(&format!("Bearer {TENANT}")),
        filter_body("1000,1000"),
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = post(&base, "filter", None, filter_body("1000,1000")).await;
    assert_eq!(code, 401);
    let (code, text) = post(&base, "preempt", Some(&sched), preempt_body(None)).await;
    assert_eq!(code, 200, "{text}");
    assert_eq!(victims_on_n(&text), ["uid-attacker"]);
    // The tenant's own view says n has room: no victims there.
    let (code, text) = post(
        &base,
        "preempt",
        Some(&format!("Bearer {TENANT}")),
        preempt_body(None),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    assert!(victims_on_n(&text).is_empty(), "{text}");
    // Health and metrics need no token.
    assert_eq!(
        reqwest::get(format!("{base}/healthz"))
            .await
            .unwrap()
            .status(),
        200
    );
    // Token files that would be unsafe are refused, naming the file and line.
    std::fs::write(&file, "kube-scheduler short\n").unwrap();
    let e = Auth::from_file(&file).unwrap_err();
    assert!(e.contains(":1: the token must be at least 16"), "{e}");
}

/// Item 3, bytes: an unrelated 1 MiB annotation is not kept (the cached node is trimmed to
/// the fields read, under 1 kB); an over-long fleetsim annotation, an oversized gang and
/// too much placement work are refused with 400 naming the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_bytes_annotations_and_gang_work_are_capped() {
    let base = start(Config::default()).await;
    let mut n = full_node("0,0");
    n["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
        json!("x".repeat(1 << 20));
    let body = json!({"Pod": pod("p", 0, json!({})), "Nodes": {"items": [n]}}).to_string();
    let (code, text) = post(&base, "filter", None, body).await;
    assert_eq!(code, 200, "{text}");
    let bytes = metric(&base, "fleetsim_extender_node_cache_bytes").await;
    assert!(bytes > 0.0 && bytes < 1000.0, "cache holds {bytes} bytes");

    let long = full_node(&"1000,".repeat(1000));
    let body = json!({"Pod": pod("p", 0, json!({})), "Nodes": {"items": [long]}}).to_string();
    let (code, text) = post(&base, "filter", None, body).await;
    assert_eq!(code, 400);
    // "1000," × 1000 = 5,000 bytes > 4,096.
    assert!(
        text.contains(
            "annotation fleetsim.io/gpu-free-milli is 5000 bytes, over the limit of 4096"
        ),
        "{text}"
    );

    let body = json!({"Pod": pod("p", 0, json!({"fleetsim.io/gang-tasks": "10000"})),
                      "Nodes": {"items": [full_node("0,0")]}})
    .to_string();
    let (code, text) = post(&base, "filter", None, body).await;
    assert_eq!(code, 400);
    assert!(
        text.contains("gang-tasks 10000 is outside 1..=4096"),
        "{text}"
    );

    // 1,001 tasks × 4,000 nodes = 4,004,000 > 4,000,000.
    let nodes: Vec<Value> = (0..4000)
        .map(|i| {
            let mut n = full_node("1000,1000");
            n["metadata"]["name"] = json!(format!("n{i}"));
            n
        })
        .collect();
    let body = json!({"Pod": pod("p", 0, json!({"fleetsim.io/gang-tasks": "1001"})),
                      "Nodes": {"items": nodes}})
    .to_string();
    let (code, text) = post(&base, "filter", None, body).await;
    assert_eq!(code, 400);
    assert!(
        text.contains("4004000 task-node steps, over the limit of 4000000"),
        "{text}"
    );
}

/// Sends the headers and the first `sent` bytes of a `filter` request with `body`.
fn partial_request(addr: &str, body: &str, sent: usize) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        body.len(),
        &body[..sent]
    )
    .unwrap();
    s.flush().unwrap();
    s
}

fn read_status(mut s: TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// Item 3, work: with one worker and no queue, a request being read holds the only slot;
/// another verb gets 503 with `Retry-After` at once, `/healthz` answers, and the first
/// request completes when its body does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_503_and_healthz_still_answers() {
    let base = start(Config {
        limits: Limits {
            workers: 1,
            queue: 0,
            ..Limits::default()
        },
        ..Config::default()
    })
    .await;
    let addr = base.trim_start_matches("http://").to_string();
    let body = filter_body("1000,1000");
    let first = partial_request(&addr, &body, 10);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = reqwest::Client::new()
        .post(format!("{base}/prioritize"))
        .body(filter_body("1000,1000"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let t = Instant::now();
    let h = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(h.status(), 200);
    assert!(t.elapsed() < Duration::from_secs(1));
    let status = tokio::task::spawn_blocking(move || {
        let mut first = first;
        first.write_all(&body.as_bytes()[10..]).unwrap();
        first.flush().unwrap();
        read_status(first)
    })
    .await
    .unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
}

/// Item 4: connections beyond the cap are closed on accept; a connection whose headers do
/// not arrive within the header timeout, or whose body does not within the body timeout,
/// is cut; `/healthz` answers throughout (the slow ones hold at most the cap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_excess_connections_are_cut() {
    let base = start(Config {
        limits: Limits {
            max_connections: 8,
            header_read_timeout: Duration::from_secs(1),
            body_read_timeout: Duration::from_secs(1),
            ..Limits::default()
        },
        ..Config::default()
    })
    .await;
    let addr = base.trim_start_matches("http://").to_string();
    let t = Instant::now();
    let slow: Vec<TcpStream> = (0..30)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"POST /filter HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect();
    // Every slow connection is closed by the server within the header timeout (excess ones
    // at once): reading gives end-of-file or a reset, never a timeout of ours.
    let closed = tokio::task::spawn_blocking(move || {
        slow.into_iter()
            .map(|mut s| {
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = Vec::new();
                match s.read_to_end(&mut buf) {
                    Ok(_) => true,
                    Err(e) => {
                        e.kind() != std::io::ErrorKind::WouldBlock
                            && e.kind() != std::io::ErrorKind::TimedOut
                    }
                }
            })
            .filter(|&c| c)
            .count()
    })
    .await
    .unwrap();
    assert_eq!(closed, 30);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    let h = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(h.status(), 200);
    // A body that stalls: 400 after the body timeout.
    let body = filter_body("1000,1000");
    let s = partial_request(&addr, &body, 5);
    let t = Instant::now();
    let status = tokio::task::spawn_blocking(move || read_status(s))
        .await
        .unwrap();
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
}

/// Starts the real binary on a loopback port; returns it and its address.
pub fn spawn_binary(extra: &[&str]) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim-extender"))
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in `{line}`"))
        .to_string();
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (child, addr)
}

/// Item 5: SIGTERM (what the kubelet sends) drains: the request in flight is answered,
/// new connections are refused, and the process exits 0.
#[test]
fn sigterm_drains_the_request_in_flight() {
    let (mut child, addr) = spawn_binary(&[]);
    let body = filter_body("1000,1000");
    let s = partial_request(&addr, &body, 20);
    std::thread::sleep(Duration::from_millis(300));
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        TcpStream::connect(&addr).is_err(),
        "still accepting after SIGTERM"
    );
    let mut s = s;
    s.write_all(&body.as_bytes()[20..]).unwrap();
    s.flush().unwrap();
    assert_eq!(read_status(s), "HTTP/1.1 200 OK");
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "not stopped");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}

/// Item 3, work on its own pool: eight heavy requests at once (a 1,000-task gang on 3,000
/// nodes each: 3,000,000 task-node steps, under the cap) with one worker, while `/healthz`
/// is asked every 50 ms: it answers each time within a second (before the fix placement ran
/// on the async workers and 8 such requests held `/healthz` for seconds). Every heavy
/// request is answered: 200, or 503 for those beyond the queue of 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_while_heavy_requests_are_decided() {
    let base = start(Config {
        limits: Limits {
            workers: 1,
            queue: 4,
            ..Limits::default()
        },
        ..Config::default()
    })
    .await;
    let nodes: Vec<Value> = (0..3000)
        .map(|i| {
            let mut n = full_node("1000,0");
            n["metadata"]["name"] = json!(format!("n{i}"));
            n
        })
        .collect();
    let body = json!({"Pod": pod("p", 0, json!({"fleetsim.io/gang-tasks": "1000"})),
                      "Nodes": {"items": nodes}})
    .to_string();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut heavy = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (b, body, done) = (base.clone(), body.clone(), done.clone());
        heavy.spawn(async move {
            let code = post(&b, "prioritize", None, body).await.0;
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            code
        });
    }
    let (mut worst, mut probes) = (Duration::ZERO, 0);
    while done.load(std::sync::atomic::Ordering::SeqCst) < 8 {
        let t = Instant::now();
        let r = reqwest::get(format!("{base}/healthz")).await.unwrap();
        assert_eq!(r.status(), 200);
        worst = worst.max(t.elapsed());
        probes += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut codes = Vec::new();
    while let Some(r) = heavy.join_next().await {
        codes.push(r.unwrap());
    }
    codes.sort_unstable();
    eprintln!("heavy: answers {codes:?}; /healthz worst {worst:?} over {probes} probes");
    assert!(codes.iter().all(|&c| c == 200 || c == 503), "{codes:?}");
    // One worker + a queue of 4 admit at least 5 of the 8.
    assert!(
        codes.iter().filter(|&&c| c == 200).count() >= 5,
        "{codes:?}"
    );
    assert!(probes > 0);
    assert!(worst < Duration::from_secs(1), "/healthz took {worst:?}");
}

/// Item 3, bytes in flight: with a budget of 10,000 body bytes, a request declaring 8,000
/// and still being read leaves 2,000, so a second of 5,000 gets 503 at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_bytes_in_flight_are_capped() {
    let base = start(Config {
        limits: Limits {
            max_inflight_body_bytes: 10_000,
            ..Limits::default()
        },
        ..Config::default()
    })
    .await;
    let addr = base.trim_start_matches("http://").to_string();
    let mut big = filter_body("1000,1000");
    big.push_str(&" ".repeat(8000 - big.len()));
    let held = partial_request(&addr, &big, 10);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut second = filter_body("1000,1000");
    second.push_str(&" ".repeat(5000 - second.len()));
    let (code, text) = post(&base, "filter", None, second).await;
    assert_eq!(code, 503, "{text}");
    assert!(text.contains("too many request bytes in flight"), "{text}");
    drop(held);
}
