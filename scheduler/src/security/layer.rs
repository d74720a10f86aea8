//! The middleware that puts authentication, the rate limit, the body limit and the
//! authorization rule in front of a router.
//!
//! Order per request: open path? → token (`401`) → rate (`429`) → body size (`413`) →
//! room among the body bytes in flight (`503`) → the body within its time (`408`) →
//! [`AccessResolver`] and [`authorize`] (`403`) → the route, with the [`Principal`] in the
//! request's extensions. Error bodies are JSON `{"error": "<reason>"}`.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;

use super::authz::{admin_only, authorize, AccessResolver};
use super::rate::RateLimiter;
use super::tokens::{Principal, Tokens};

/// Default request body limit: 1 MiB (a submit or a node event is a few hundred bytes).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;
/// Default rate per token: 500 requests per second.
pub const DEFAULT_RATE_PER_SECOND: f64 = 500.0;
/// Default bucket size per token: 1,000 requests.
pub const DEFAULT_BURST: u32 = 1000;

/// What the security layer enforces.
#[derive(Clone)]
pub struct SecurityConfig {
    /// Tokens file; `None` = no authentication (every request is [`Principal::local`], an
    /// admin) — allowed on loopback only (see [`super::check_listen`]), and then without a
    /// rate limit.
    pub tokens: Option<Tokens>,
    /// Largest request body, bytes; larger gets `413`.
    pub max_body_bytes: usize,
    /// Requests per second per token unless its entry says otherwise.
    pub rate_per_second: f64,
    /// Bucket size per token unless its entry says otherwise.
    pub burst: u32,
    /// Paths served without a token or a rate limit (exact match), e.g. `/healthz`.
    pub open_paths: Vec<String>,
    /// What each request needs; see [`super::authz`].
    pub resolver: AccessResolver,
    /// Time allowed for a body to arrive whole; after it `408`.
    pub body_read_timeout: std::time::Duration,
    /// Body bytes held at once over all requests; a request finding no room gets `503`.
    pub max_inflight_body_bytes: usize,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            tokens: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            rate_per_second: DEFAULT_RATE_PER_SECOND,
            burst: DEFAULT_BURST,
            open_paths: vec!["/healthz".into(), "/metrics".into()],
            resolver: admin_only(),
            body_read_timeout: std::time::Duration::from_secs(10),
            max_inflight_body_bytes: 64 << 20,
        }
    }
}

struct Guard {
    config: SecurityConfig,
    rate: RateLimiter,
    /// Body bytes in flight: one permit per byte.
    budget: Arc<tokio::sync::Semaphore>,
}

/// `router` behind the security layer configured by `config`.
pub fn secure(router: Router, config: SecurityConfig) -> Router {
    let bytes = config
        .max_inflight_body_bytes
        .clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
    let guard = Arc::new(Guard {
        config,
        rate: RateLimiter::default(),
        budget: Arc::new(tokio::sync::Semaphore::new(bytes)),
    });
    router.layer(axum::middleware::from_fn_with_state(guard, check))
}

fn refuse(code: StatusCode, reason: String) -> Response {
    (code, axum::Json(serde_json::json!({ "error": reason }))).into_response()
}

async fn check(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let c = &g.config;
    if c.open_paths.iter().any(|p| p == req.uri().path()) {
        return next.run(req).await;
    }
    let principal = match &c.tokens {
        None => Principal::local(),
        Some(tokens) => {
            let Some(p) = tokens.authenticate(req.headers()) else {
                let mut r = refuse(
                    StatusCode::UNAUTHORIZED,
                    "missing or unknown bearer token (Authorization: Bearer <token>)".into(),
                );
                r.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return r;
            };
            let rate = p.rate_per_second.unwrap_or(c.rate_per_second);
            let burst = p.burst.unwrap_or(c.burst);
            if let Err(wait) = g.rate.check(&p.name, rate, burst, Instant::now()) {
                let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
                let mut r = refuse(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "principal `{}` is over its rate of {rate} requests/s (burst {burst})",
                        p.name
                    ),
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
                return r;
            }
            p.clone()
        }
    };
    let too_big = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body over {} bytes", c.max_body_bytes),
        )
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > c.max_body_bytes as u64) {
        return too_big();
    }
    // Room for the body among the bytes in flight, reserved before reading it: its
    // declared length, else the most it may be.
    let reserve = declared
        .map_or(c.max_body_bytes, |n| n as usize)
        .clamp(1, u32::MAX as usize)
        .min(c.max_inflight_body_bytes.max(1)) as u32;
    let Ok(permit) = g.budget.clone().try_acquire_many_owned(reserve) else {
        let mut r = refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "too many request body bytes in flight (at most {}); retry later",
                c.max_inflight_body_bytes
            ),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(1u32));
        return r;
    };
    let (mut parts, body) = req.into_parts();
    let read = tokio::time::timeout(c.body_read_timeout, to_bytes(body, c.max_body_bytes)).await;
    let Ok(read) = read else {
        return refuse(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "request body not received whole within {} s",
                c.body_read_timeout.as_secs_f64()
            ),
        );
    };
    let bytes = match read {
        Ok(b) => b,
        Err(e) => {
            let over = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            return if over {
                too_big()
            } else {
                refuse(StatusCode::BAD_REQUEST, format!("reading the body: {e}"))
            };
        }
    };
    let access = (c.resolver)(&parts.method, parts.uri.path(), &bytes);
    if let Err(reason) = authorize(&principal, &access) {
        return refuse(StatusCode::FORBIDDEN, reason);
    }
    parts.extensions.insert(principal);
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    drop(permit);
    response
}
