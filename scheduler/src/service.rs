//! The HTTP+JSON API over a [`LiveState`] (issue 21 item 1).
//!
//! * `POST /v1/events` — a batch `{"batch": N?, "events": [...]}` applied in order; answers
//!   `{"first_seq": S, "decisions": [...]}`, the decisions in order with sequence numbers
//!   from `S`. A refused event stops the batch: `422` with `{"error", "index", "first_seq",
//!   "decisions"}` (the events before `index` are applied, their decisions given). A batch
//!   number at or below the last accepted one is answered `409` without applying anything
//!   (a client re-sending an acknowledged batch).
//! * `GET /v1/jobs/{id}` — a job's phase and pending reason.
//! * `GET /v1/pending` — every pending job's reason as of the last pass.
//! * `GET /healthz` — `{"ok": true, "now": T, "decisions": N}`.
//!
//! Decisions use the events' `t`, never the wall clock. [`router`] builds the routes only,
//! so a security layer ([`crate::security::secure`]) can wrap them.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use fleetsim_policies::live::{Decision, Event, LiveState, Phase};
use serde::{Deserialize, Serialize};

/// One batch of events.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    /// The client's batch sequence number (strictly increasing), if it numbers batches.
    #[serde(default)]
    pub batch: Option<u64>,
    /// The events, in order.
    pub events: Vec<Event>,
}

/// The answer to an accepted batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchReply {
    /// Sequence number of the first decision below (0-based over the service's life).
    pub first_seq: u64,
    /// The decisions, in order.
    pub decisions: Vec<Decision>,
}

/// The service's state: the live scheduler and the decisions made so far.
pub struct Service {
    live: LiveState,
    decisions: Vec<Decision>,
    last_batch: Option<u64>,
}

/// Shared handle to the service state.
pub type AppState = Arc<Mutex<Service>>;

impl Service {
    /// A service on `live`.
    pub fn new(live: LiveState) -> AppState {
        Arc::new(Mutex::new(Service {
            live,
            decisions: Vec::new(),
            last_batch: None,
        }))
    }

    /// Applies `batch`; `Err((index, message, reply))` when event `index` was refused.
    ///
    /// # Errors
    /// The refused event's index and error, with the decisions of the events before it.
    pub fn apply(&mut self, batch: &Batch) -> Result<BatchReply, (usize, String, BatchReply)> {
        let first_seq = self.decisions.len() as u64;
        let mut out = Vec::new();
        for (i, e) in batch.events.iter().enumerate() {
            match self.live.apply(e) {
                Ok(d) => out.extend(d),
                Err(err) => {
                    self.decisions.extend(out.iter().cloned());
                    let reply = BatchReply {
                        first_seq,
                        decisions: out,
                    };
                    return Err((i, err.to_string(), reply));
                }
            }
        }
        self.decisions.extend(out.iter().cloned());
        if batch.batch.is_some() {
            self.last_batch = batch.batch;
        }
        Ok(BatchReply {
            first_seq,
            decisions: out,
        })
    }
}

fn lock(s: &AppState) -> std::sync::MutexGuard<'_, Service> {
    // A panic while holding the lock cannot leave the state half-applied in a way a poison
    // flag would help with; keep serving.
    s.lock().unwrap_or_else(|p| p.into_inner())
}

async fn post_events(State(s): State<AppState>, Json(batch): Json<Batch>) -> Response {
    let mut svc = lock(&s);
    if let (Some(b), Some(last)) = (batch.batch, svc.last_batch) {
        if b <= last {
            return (
                StatusCode::CONFLICT,
                Json(serde_json::json!({"error": format!("batch {b} already accepted (last {last})"), "last_batch": last})),
            )
                .into_response();
        }
    }
    match svc.apply(&batch) {
        Ok(reply) => Json(reply).into_response(),
        Err((index, error, reply)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(serde_json::json!({
                "error": error,
                "index": index,
                "first_seq": reply.first_seq,
                "decisions": reply.decisions,
            })),
        )
            .into_response(),
    }
}

async fn get_job(State(s): State<AppState>, Path(id): Path<u32>) -> Response {
    let svc = lock(&s);
    let Some(phase) = svc.live.phase(id) else {
        return (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"error": format!("unknown job {id}")})),
        )
            .into_response();
    };
    let (state, nodes) = match phase {
        Phase::Pending => ("pending", Vec::new()),
        Phase::Running(a) => ("running", a.iter().map(|a| a.node.0).collect()),
        Phase::Evicting(a) => ("evicting", a.iter().map(|a| a.node.0).collect()),
    };
    let reason = svc.live.pending_reasons().get(&id).map(|r| r.as_str());
    Json(serde_json::json!({"job": id, "state": state, "nodes": nodes, "pending_reason": reason}))
        .into_response()
}

async fn get_pending(State(s): State<AppState>) -> Response {
    let svc = lock(&s);
    let jobs: Vec<_> = svc
        .live
        .pending_reasons()
        .into_iter()
        .map(|(j, r)| serde_json::json!({"job": j, "pending_reason": r.as_str()}))
        .collect();
    Json(serde_json::json!({ "jobs": jobs })).into_response()
}

async fn healthz(State(s): State<AppState>) -> Response {
    let svc = lock(&s);
    Json(serde_json::json!({"ok": true, "now": svc.live.now(), "decisions": svc.decisions.len()}))
        .into_response()
}

/// The service's routes (no security layer: wrap with [`crate::security::secure`]).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/events", post(post_events))
        .route("/v1/jobs/{id}", get(get_job))
        .route("/v1/pending", get(get_pending))
        .route("/healthz", get(healthz))
        .with_state(state)
}
