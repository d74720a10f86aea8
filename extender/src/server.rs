//! The HTTP service: `POST /filter`, `POST /prioritize`, `POST /preempt`, `GET /healthz`,
//! `GET /spec` (the loaded scheduler spec), `GET /metrics` (Prometheus text format).
//!
//! Every verb reads its body up to [`Config::max_body_bytes`] and parses it itself, so that
//! every bad request — malformed JSON, a missing field, an unknown policy name, a malformed
//! node or pod, a body over the limit — gets `400 Bad Request` with a JSON body
//! `{"Error": "<reason>"}`, and the server keeps serving.
//!
//! # Bounds (see [`Limits`])
//!
//! * connections: at most [`Limits::max_connections`] open; more are closed on accept;
//! * time: request headers must arrive within [`Limits::header_read_timeout`] (hyper's
//!   setting), a verb's body within [`Limits::body_read_timeout`] (tower-http's
//!   `RequestBodyTimeoutLayer`), else the connection or request is dropped;
//! * memory: bodies in flight at most [`Limits::max_inflight_body_bytes`] in all (a verb
//!   reserves its `Content-Length`, or [`Config::max_body_bytes`] without one, before it
//!   reads a byte), node cache at most [`Limits::node_cache_bytes`] per caller, holding only
//!   the node fields the extender reads;
//! * work: parsing and placement run on the blocking pool, at most [`Limits::workers`] at a
//!   time, with at most [`Limits::queue`] more waiting; a verb beyond that (or beyond the
//!   body budget) gets `503` with `Retry-After: 1` at once.
//!
//! `/healthz` and `/metrics` do no blocking work, so they are answered by the async workers
//! whatever the verbs are doing.
//!
//! # Callers ([`Auth`])
//!
//! With a token file, every verb must carry `Authorization: Bearer <token>` or
//! `Authorization: Basic base64(<name>:<token>)` (what kube-scheduler sends for a `urlPrefix`
//! with userinfo, `http://<name>:<token>@127.0.0.1:8888`), else `401`. Each caller has its
//! own node cache: `preempt` reads only the nodes that caller's own `filter` /
//! `prioritize` requests listed. `/healthz` and `/metrics` need no token.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine as _;
use fleetsim_policies::PlacementKind;
use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry};
use serde_json::value::RawValue;
use tokio::sync::Semaphore;

use crate::verbs;
use crate::wire::{ExtenderArgs, ExtenderPreemptionArgs};

/// Default body limit: 32 MiB (a request listing a few thousand full `v1.Node` objects).
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 << 20;

/// Most node objects kept for `preempt` per caller (the last seen of each name).
pub const NODE_CACHE_LIMIT: usize = 100_000;

/// Resource bounds of the service. [`Limits::default`] suits a sidecar with 1 GiB of memory.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Most open connections; a connection accepted beyond this is closed at once.
    pub max_connections: usize,
    /// Time allowed for a request's headers to arrive (also the idle time of a kept-alive
    /// connection), after which hyper closes the connection.
    pub header_read_timeout: Duration,
    /// Time allowed for a verb's body to arrive; after it the request gets 400.
    pub body_read_timeout: Duration,
    /// Bodies being read or decided at once, bytes in all.
    pub max_inflight_body_bytes: usize,
    /// Requests parsed and decided at once (on the blocking pool).
    pub workers: usize,
    /// Requests waiting for a worker; beyond them a verb gets 503.
    pub queue: usize,
    /// Bytes of node objects kept for `preempt`, per caller (the trimmed objects' JSON
    /// length); a node beyond it is not cached.
    pub node_cache_bytes: usize,
    /// How long a shutdown waits for in-flight requests before closing their connections.
    pub drain_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Limits {
            max_connections: 512,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_inflight_body_bytes: 256 << 20,
            workers: cores,
            queue: 256,
            node_cache_bytes: 64 << 20,
            drain_timeout: Duration::from_secs(20),
        }
    }
}

/// Who may call the verbs: tokens by caller name. Compared in constant time.
#[derive(Clone, Debug, Default)]
pub struct Auth {
    /// `(caller name, token)`, in file order.
    pub tokens: Vec<(String, String)>,
}

impl Auth {
    /// Reads a token file: one caller a line, `<name> <token>` or a bare `<token>` (caller
    /// `kube-scheduler`); blank lines and lines starting with `#` are skipped. Tokens must be
    /// at least 16 characters of `[A-Za-z0-9._~-]` (safe inside a URL's userinfo).
    ///
    /// # Errors
    /// A message naming the file and line: unreadable file, no token, a short or unsafe
    /// token, a name used twice.
    pub fn from_file(path: &Path) -> Result<Auth, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("token file {}: {e}", path.display()))?;
        let mut tokens: Vec<(String, String)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = || format!("token file {}:{}", path.display(), i + 1);
            let mut parts = line.split_whitespace();
            let (name, token) = match (parts.next(), parts.next(), parts.next()) {
                (Some(t), None, None) => ("kube-scheduler".to_string(), t.to_string()),
                (Some(n), Some(t), None) => (n.to_string(), t.to_string()),
                _ => return Err(format!("{}: expected `<name> <token>` or `<token>`", at())),
            };
            let safe = |c: char| c.is_ascii_alphanumeric() || "._~-".contains(c);
            if token.len() < 16 || !token.chars().all(safe) {
                return Err(format!(
                    "{}: the token must be at least 16 characters of A-Z a-z 0-9 . _ ~ - (e.g. `openssl rand -hex 32`)",
                    at()
                ));
            }
            if name.contains(':') || tokens.iter().any(|(n, _)| *n == name) {
                return Err(format!(
                    "{}: caller name `{name}` is used twice or contains `:`",
                    at()
                ));
            }
            tokens.push((name, token));
        }
        if tokens.is_empty() {
            return Err(format!("token file {}: no token", path.display()));
        }
        Ok(Auth { tokens })
    }

    /// The caller an `Authorization` header authenticates, if any.
    pub fn caller(&self, headers: &HeaderMap) -> Option<&str> {
        let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, cred) = value.split_once(' ')?;
        let (name, token) = if scheme.eq_ignore_ascii_case("bearer") {
            (None, cred.trim().to_string())
        } else if scheme.eq_ignore_ascii_case("basic") {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(cred.trim())
                .ok()?;
            let text = String::from_utf8(raw).ok()?;
            let (n, t) = text.split_once(':')?;
            (Some(n.to_string()), t.to_string())
        } else {
            return None;
        };
        // Every entry compared, each in constant time: the time taken tells nothing.
        let mut found = None;
        for (n, t) in &self.tokens {
            let eq = constant_time_eq(t.as_bytes(), token.as_bytes())
                & name.as_deref().is_none_or(|m| m == n);
            if eq && found.is_none() {
                found = Some(n.as_str());
            }
        }
        found
    }
}

/// Refuses to serve the verbs unauthenticated on an address other machines can reach:
/// without `auth`, `listen` must be a loopback address unless `allow_unauthenticated`.
///
/// # Errors
/// A message saying why and what to give instead.
pub fn check_exposure(
    listen: SocketAddr,
    auth: Option<&Auth>,
    allow_unauthenticated: bool,
) -> Result<(), String> {
    if auth.is_none() && !listen.ip().is_loopback() && !allow_unauthenticated {
        return Err(format!(
            "listening on {listen} without --token-file: any client that reaches the port could steer placement and preemption; give --token-file (see the README's Deploy section) or --allow-unauthenticated"
        ));
    }
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unauthenticated_verbs_only_on_loopback_unless_allowed() {
        // Parsed addresses only: nothing is bound.
        let lo: SocketAddr = "127.0.0.1:8888".parse().unwrap();
        let lo6: SocketAddr = "[::1]:8888".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8888".parse().unwrap();
        let auth = Auth {
            tokens: vec![("kube-scheduler".into(), "0123456789abcdef".into())],
        };
        assert!(check_exposure(lo, None, false).is_ok());
        assert!(check_exposure(lo6, None, false).is_ok());
        let e = check_exposure(any, None, false).unwrap_err();
        assert!(e.contains("without --token-file"), "{e}");
        assert!(check_exposure(any, Some(&auth), false).is_ok());
        assert!(check_exposure(any, None, true).is_ok());
    }

    #[test]
    fn credentials_bearer_and_basic() {
        let auth = Auth {
            tokens: vec![
                ("kube-scheduler".into(), "0123456789abcdef".into()),
                ("tenant".into(), "fedcba9876543210".into()),
            ],
        };
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
            auth.caller(&h).map(str::to_string)
        };
        assert_eq!(with("Bearer fedcba9876543210").as_deref(), Some("tenant"));
        // base64("kube-scheduler:0123456789abcdef")
        assert_eq!(
            with("Basic a3ViZS1zY2hlZHVsZXI6MDEyMzQ1Njc4OWFiY2RlZg==").as_deref(),
            Some("kube-scheduler")
        );
        // The right token under another caller's name is refused.
        let wrong = base64::engine::general_purpose::STANDARD.encode("tenant:0123456789abcdef");
        assert_eq!(with(&format!("Basic {wrong}")), None);
        assert_eq!(with("Bearer 0123456789abcdeX"), None);
        assert_eq!(auth.caller(&HeaderMap::new()), None);
    }
}

/// Service settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The placement policy for pods without a `fleetsim.io/placement` annotation.
    pub policy: PlacementKind,
    /// The scheduler configuration the service was started with (`--spec`, or one naming
    /// only `policy`), reported at `GET /spec`.
    pub spec: fleetsim_policies::SchedulerSpec,
    /// Largest request body accepted, bytes.
    pub max_body_bytes: usize,
    /// Resource bounds.
    pub limits: Limits,
    /// Callers allowed to use the verbs; `None`: anyone (one shared caller, `anonymous`).
    pub auth: Option<Auth>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            policy: PlacementKind::BestFit,
            spec: fleetsim_policies::SchedulerSpec::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            limits: Limits::default(),
            auth: None,
        }
    }
}

struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    cache_bytes: IntGauge,
    victim_claims_ignored: prometheus::IntCounter,
}

impl Metrics {
    fn new() -> Metrics {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "fleetsim_extender_requests_total",
                "Requests served, by verb and HTTP status code.",
            ),
            &["verb", "code"],
        )
        .expect("valid metric");
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "fleetsim_extender_request_duration_seconds",
                "Time from the request body's first byte read to the answer, by verb.",
            )
            .buckets(vec![
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 2.5, 5.0,
            ]),
            &["verb"],
        )
        .expect("valid metric");
        let cache_bytes = IntGauge::new(
            "fleetsim_extender_node_cache_bytes",
            "Bytes of node objects kept for preempt, all callers.",
        )
        .expect("valid metric");
        let victim_claims_ignored = prometheus::IntCounter::new(
            "fleetsim_extender_victim_claims_ignored_total",
            "Victim fleetsim.io/gpu-alloc annotations that disagreed with the node or the pod's requests and were ignored.",
        )
        .expect("valid metric");
        for c in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(latency.clone()),
            Box::new(cache_bytes.clone()),
            Box::new(victim_claims_ignored.clone()),
        ] {
            registry.register(c).expect("registered once");
        }
        Metrics {
            registry,
            requests,
            latency,
            cache_bytes,
            victim_claims_ignored,
        }
    }
}

/// One caller's node objects (trimmed to the fields read), by name.
#[derive(Default)]
struct NodeCache {
    nodes: BTreeMap<String, Box<RawValue>>,
    bytes: usize,
}

struct AppState {
    config: Config,
    metrics: Metrics,
    caches: Mutex<BTreeMap<String, NodeCache>>,
    /// Bytes of bodies in flight (one permit a byte, capped at u32::MAX per request).
    body_budget: Arc<Semaphore>,
    /// Requests admitted: workers + queue.
    admitted: Arc<Semaphore>,
    /// Requests being decided.
    workers: Arc<Semaphore>,
}

/// The caller name used when no token file is configured.
pub const ANONYMOUS: &str = "anonymous";

/// The service's router.
pub fn router(config: Config) -> Router {
    let limits = config.limits.clone();
    let budget = limits.max_inflight_body_bytes.min(Semaphore::MAX_PERMITS);
    let state = Arc::new(AppState {
        metrics: Metrics::new(),
        caches: Mutex::new(BTreeMap::new()),
        body_budget: Arc::new(Semaphore::new(budget)),
        admitted: Arc::new(Semaphore::new(limits.workers.max(1) + limits.queue)),
        workers: Arc::new(Semaphore::new(limits.workers.max(1))),
        config,
    });
    let verbs = Router::new()
        .route("/filter", post(filter))
        .route("/prioritize", post(prioritize))
        .route("/preempt", post(preempt))
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            limits.body_read_timeout,
        ));
    Router::new()
        .merge(verbs)
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/spec", get(spec))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// Serves `router(config)` on `listener` until `shutdown` completes, within
/// `config.limits` (connection cap, header timeout); on shutdown stops accepting and waits
/// up to [`Limits::drain_timeout`] for the requests in flight.
///
/// # Errors
/// None at present (accept errors such as running out of file descriptors are retried after
/// a pause); the `Result` leaves room for listener errors.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = config.limits.clone();
    let app = router(config);
    let conns = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _peer): (tokio::net::TcpStream, SocketAddr) = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(_) => {
                    // EMFILE and the like: pause so that the loop does not spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let svc = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout);
        let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(limits.drain_timeout, graceful.shutdown()).await;
    Ok(())
}

fn error(code: StatusCode, reason: String) -> Response {
    let body = serde_json::json!({ "Error": reason }).to_string();
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn bad_request(reason: String) -> Response {
    error(StatusCode::BAD_REQUEST, reason)
}

fn json_ok(value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("serializing the answer: {e}"),
        )
            .into_response(),
    }
}

fn overloaded(what: &str) -> Response {
    let mut r = error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("overloaded: {what}; retry later"),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("malformed request body: {e}"))
}

fn observe(st: &AppState, verb: &str, started: Instant, resp: Response) -> Response {
    st.metrics
        .requests
        .with_label_values(&[verb, resp.status().as_str()])
        .inc();
    st.metrics
        .latency
        .with_label_values(&[verb])
        .observe(started.elapsed().as_secs_f64());
    resp
}

/// The verbs' common frame: authenticate, admit (body budget and queue, else 503), read
/// the body, then decide on the blocking pool with a worker permit.
async fn handle(
    st: Arc<AppState>,
    verb: &'static str,
    headers: HeaderMap,
    body: Body,
    decide: fn(&AppState, &str, Bytes) -> Response,
) -> Response {
    let started = Instant::now();
    let caller = match &st.config.auth {
        None => ANONYMOUS.to_string(),
        Some(auth) => match auth.caller(&headers) {
            Some(c) => c.to_string(),
            None => {
                let mut r = error(
                    StatusCode::UNAUTHORIZED,
                    "missing or unknown credentials: send `Authorization: Bearer <token>` (or Basic with the token as password)".into(),
                );
                r.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer, Basic realm=\"fleetsim-extender\""),
                );
                return observe(&st, verb, started, r);
            }
        },
    };
    let limit = st.config.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(n) = declared.filter(|&n| n > limit) {
        let r = bad_request(format!(
            "request body of {n} bytes is over the limit of {limit} bytes"
        ));
        return observe(&st, verb, started, r);
    }
    let reserve = declared
        .unwrap_or(limit)
        .clamp(1, u32::MAX as usize)
        .min(st.config.limits.max_inflight_body_bytes.max(1)) as u32;
    let Ok(admitted) = st.admitted.clone().try_acquire_owned() else {
        return observe(&st, verb, started, overloaded("the work queue is full"));
    };
    let Ok(budget) = st.body_budget.clone().try_acquire_many_owned(reserve) else {
        return observe(
            &st,
            verb,
            started,
            overloaded("too many request bytes in flight"),
        );
    };
    let bytes = match to_bytes(body, limit).await {
        Ok(b) => b,
        Err(e) => {
            let r = bad_request(format!(
                "request body unreadable, too slow or over the limit of {limit} bytes: {e}"
            ));
            return observe(&st, verb, started, r);
        }
    };
    let Ok(worker) = st.workers.clone().acquire_owned().await else {
        return observe(&st, verb, started, overloaded("shutting down"));
    };
    let st2 = st.clone();
    let resp = tokio::task::spawn_blocking(move || {
        let r = decide(&st2, &caller, bytes);
        drop((worker, budget, admitted));
        r
    })
    .await
    .unwrap_or_else(|e| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("deciding the request failed: {e}"),
        )
    });
    observe(&st, verb, started, resp)
}

async fn filter(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    handle(st, "filter", headers, body, decide_filter).await
}

async fn prioritize(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    handle(st, "prioritize", headers, body, decide_prioritize).await
}

async fn preempt(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    handle(st, "preempt", headers, body, decide_preempt).await
}

/// Keeps `caller`'s view of the request's nodes (trimmed), within the cache bounds.
fn remember(st: &AppState, caller: &str, seen: Vec<(String, Box<RawValue>)>) {
    let cap = st.config.limits.node_cache_bytes;
    let mut caches = st.caches.lock().unwrap_or_else(|p| p.into_inner());
    let cache = caches.entry(caller.to_string()).or_default();
    for (name, v) in seen {
        let new = name.len() + v.get().len();
        let old = cache
            .nodes
            .get(&name)
            .map_or(0, |o| name.len() + o.get().len());
        let fits_count = cache.nodes.len() < NODE_CACHE_LIMIT || old > 0;
        if fits_count && cache.bytes - old + new <= cap {
            cache.bytes = cache.bytes - old + new;
            cache.nodes.insert(name, v);
        }
    }
    let total: usize = caches.values().map(|c| c.bytes).sum();
    st.metrics
        .cache_bytes
        .set(i64::try_from(total).unwrap_or(i64::MAX));
}

fn decide_filter(st: &AppState, caller: &str, bytes: Bytes) -> Response {
    let run = || {
        let args: ExtenderArgs = parse(&bytes)?;
        let (snap, req) = verbs::read_args(&args).map_err(|e| e.0)?;
        let policy = verbs::policy_for(&req, st.config.policy).map_err(|e| e.0)?;
        let placed = verbs::place(&snap, &req, policy);
        let out = verbs::filter(&args, &snap, &placed);
        if let Some(nodes) = &args.nodes {
            remember(st, caller, verbs::node_names(&snap, &nodes.items));
        }
        Ok::<_, String>(json_ok(&out))
    };
    run().unwrap_or_else(bad_request)
}

fn decide_prioritize(st: &AppState, caller: &str, bytes: Bytes) -> Response {
    let run = || {
        let args: ExtenderArgs = parse(&bytes)?;
        let (snap, req) = verbs::read_args(&args).map_err(|e| e.0)?;
        let policy = verbs::policy_for(&req, st.config.policy).map_err(|e| e.0)?;
        let placed = verbs::place(&snap, &req, policy);
        let out = verbs::prioritize(&snap, &placed);
        if let Some(nodes) = &args.nodes {
            remember(st, caller, verbs::node_names(&snap, &nodes.items));
        }
        let mut resp = json_ok(&out);
        if let Ok(v) = HeaderValue::from_str(&verbs::placement_text(&snap, &placed)) {
            resp.headers_mut().insert(PLACEMENT_HEADER, v);
        }
        Ok::<_, String>(resp)
    };
    run().unwrap_or_else(bad_request)
}

/// Response header of `prioritize` with the whole gang's placement
/// ([`verbs::placement_text`]): `node:mask,…` or `none`. Not part of the upstream API (which
/// places one pod at a time); for tests, logs and a gang-binding controller.
pub const PLACEMENT_HEADER: &str = "fleetsim-placement";

fn decide_preempt(st: &AppState, caller: &str, bytes: Bytes) -> Response {
    let run = || {
        let args: ExtenderPreemptionArgs = parse(&bytes)?;
        let nodes: BTreeMap<String, Box<RawValue>> = {
            let caches = st.caches.lock().unwrap_or_else(|p| p.into_inner());
            match caches.get(caller) {
                None => BTreeMap::new(),
                Some(cache) => args
                    .node_name_to_victims
                    .iter()
                    .flat_map(|m| m.keys())
                    .filter_map(|n| cache.nodes.get(n).map(|v| (n.clone(), v.clone())))
                    .collect(),
            }
        };
        let (out, ignored) = verbs::preempt(&args, &nodes).map_err(|e| e.0)?;
        st.metrics.victim_claims_ignored.inc_by(ignored);
        Ok::<_, String>(json_ok(&out))
    };
    run().unwrap_or_else(bad_request)
}

/// `GET /spec`: the loaded scheduler spec as JSON (the `[policy]` table's keys).
async fn spec(State(st): State<Arc<AppState>>) -> Response {
    json_ok(&st.config.spec)
}

async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    let mut buf = Vec::new();
    let enc = prometheus::TextEncoder::new();
    match enc.encode(&st.metrics.registry.gather(), &mut buf) {
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, enc.format_type().to_string())],
            buf,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
