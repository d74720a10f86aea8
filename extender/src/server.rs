//! The HTTP service: `POST /filter`, `POST /prioritize`, `POST /preempt`, `GET /healthz`,
//! `GET /spec` (the loaded scheduler spec), `GET /metrics` (Prometheus text format).
//!
//! Every verb reads its body up to [`Config::max_body_bytes`] and parses it itself, so that
//! every bad request — malformed JSON, a missing field, an unknown policy name, a malformed
//! node or pod, a body over the limit — gets `400 Bad Request` with a JSON body
//! `{"Error": "<reason>"}`, and the server keeps serving.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use fleetsim_policies::PlacementKind;
use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

use crate::verbs;
use crate::wire::{ExtenderArgs, ExtenderPreemptionArgs};

/// Default body limit: 32 MiB (a request listing a few thousand full `v1.Node` objects).
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 << 20;

/// Most node objects kept for `preempt` (the last seen of each name).
pub const NODE_CACHE_LIMIT: usize = 100_000;

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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            policy: PlacementKind::BestFit,
            spec: fleetsim_policies::SchedulerSpec::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
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
        registry
            .register(Box::new(requests.clone()))
            .expect("registered once");
        registry
            .register(Box::new(latency.clone()))
            .expect("registered once");
        Metrics {
            registry,
            requests,
            latency,
        }
    }
}

struct AppState {
    config: Config,
    metrics: Metrics,
    nodes: Mutex<BTreeMap<String, Box<serde_json::value::RawValue>>>,
}

/// The service's router.
pub fn router(config: Config) -> Router {
    let state = Arc::new(AppState {
        config,
        metrics: Metrics::new(),
        nodes: Mutex::new(BTreeMap::new()),
    });
    Router::new()
        .route("/filter", post(filter))
        .route("/prioritize", post(prioritize))
        .route("/preempt", post(preempt))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/spec", get(spec))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// Serves `router(config)` on `listener` until `shutdown` completes.
///
/// # Errors
/// The listener's I/O error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(config))
        .with_graceful_shutdown(shutdown)
        .await
}

fn bad_request(reason: String) -> Response {
    let body = serde_json::json!({ "Error": reason }).to_string();
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
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

/// Reads and parses a body, or the 400 answer.
async fn read<T: serde::de::DeserializeOwned>(st: &AppState, body: Body) -> Result<T, Response> {
    let limit = st.config.max_body_bytes;
    let bytes = to_bytes(body, limit).await.map_err(|e| {
        bad_request(format!(
            "request body unreadable or over the limit of {limit} bytes: {e}"
        ))
    })?;
    serde_json::from_slice(&bytes).map_err(|e| bad_request(format!("malformed request body: {e}")))
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

async fn filter(State(st): State<Arc<AppState>>, body: Body) -> Response {
    let started = Instant::now();
    let resp = async {
        let args: ExtenderArgs = read(&st, body).await?;
        let (snap, req) = verbs::read_args(&args).map_err(|e| bad_request(e.0))?;
        let policy = verbs::policy_for(&req, st.config.policy).map_err(|e| bad_request(e.0))?;
        let placed = verbs::place(&snap, &req, policy);
        let out = verbs::filter(&args, &snap, &placed);
        if let Some(nodes) = &args.nodes {
            let seen = verbs::node_names(&snap, &nodes.items);
            let mut cache = st.nodes.lock().unwrap_or_else(|p| p.into_inner());
            for (name, v) in seen {
                if cache.len() < NODE_CACHE_LIMIT || cache.contains_key(&name) {
                    cache.insert(name, v);
                }
            }
        }
        Ok::<_, Response>(json_ok(&out))
    }
    .await
    .unwrap_or_else(|r| r);
    observe(&st, "filter", started, resp)
}

async fn prioritize(State(st): State<Arc<AppState>>, body: Body) -> Response {
    let started = Instant::now();
    let resp = async {
        let args: ExtenderArgs = read(&st, body).await?;
        let (snap, req) = verbs::read_args(&args).map_err(|e| bad_request(e.0))?;
        let policy = verbs::policy_for(&req, st.config.policy).map_err(|e| bad_request(e.0))?;
        let placed = verbs::place(&snap, &req, policy);
        let out = verbs::prioritize(&snap, &placed);
        let mut resp = json_ok(&out);
        if let Ok(v) = HeaderValue::from_str(&verbs::placement_text(&snap, &placed)) {
            resp.headers_mut().insert(PLACEMENT_HEADER, v);
        }
        Ok::<_, Response>(resp)
    }
    .await
    .unwrap_or_else(|r| r);
    observe(&st, "prioritize", started, resp)
}

/// Response header of `prioritize` with the whole gang's placement
/// ([`verbs::placement_text`]): `node:mask,…` or `none`. Not part of the upstream API (which
/// places one pod at a time); for tests, logs and a gang-binding controller.
pub const PLACEMENT_HEADER: &str = "fleetsim-placement";

async fn preempt(State(st): State<Arc<AppState>>, body: Body) -> Response {
    let started = Instant::now();
    let resp = async {
        let args: ExtenderPreemptionArgs = read(&st, body).await?;
        let nodes: BTreeMap<String, Box<serde_json::value::RawValue>> = {
            let cache = st.nodes.lock().unwrap_or_else(|p| p.into_inner());
            args.node_name_to_victims
                .iter()
                .flat_map(|m| m.keys())
                .filter_map(|n| cache.get(n).map(|v| (n.clone(), v.clone())))
                .collect()
        };
        let out = verbs::preempt(&args, &nodes).map_err(|e| bad_request(e.0))?;
        Ok::<_, Response>(json_ok(&out))
    }
    .await
    .unwrap_or_else(|r| r);
    observe(&st, "preempt", started, resp)
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
