//! Serving a router over TLS or plain TCP, after the exposure check.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;

use super::layer::SecurityConfig;
use super::listen::check_listen;
use super::tls::server_config;
use super::tokens::Tokens;

/// Time allowed for a TLS handshake or a request's headers.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a client may hold of the server (as the extender bounds it): connections, time to
/// send headers and body, body bytes in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most open connections; one accepted beyond them is closed at once.
    pub max_connections: usize,
    /// Time allowed for a TLS handshake and for a request's headers (also the idle time of
    /// a kept-alive connection), after which the connection is closed.
    pub header_read_timeout: Duration,
    /// Time allowed for a request's body to arrive whole; after it the request gets `408`
    /// and its bytes are let go.
    pub body_read_timeout: Duration,
    /// Request body bytes held at once, over all requests (each reserves its declared
    /// length, or the body limit when it declares none, before reading); a request that
    /// finds no room gets `503` with `Retry-After: 1`.
    pub max_inflight_body_bytes: usize,
    /// How long a shutdown waits for requests in flight.
    pub drain_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 512,
            header_read_timeout: HANDSHAKE_TIMEOUT,
            body_read_timeout: Duration::from_secs(10),
            max_inflight_body_bytes: 64 << 20,
            drain_timeout: Duration::from_secs(10),
        }
    }
}

/// The command-line side of the security layer.
#[derive(Clone, Debug, Default)]
pub struct ListenOptions {
    /// Address to listen on.
    pub listen: Option<SocketAddr>,
    /// PEM certificate chain (with `tls_key`: serve HTTPS).
    pub tls_cert: Option<PathBuf>,
    /// PEM private key.
    pub tls_key: Option<PathBuf>,
    /// Tokens file (TOML, see [`super::tokens`]).
    pub tokens: Option<PathBuf>,
    /// PEM certificate(s) of the CA that signs client certificates: with it, every TLS
    /// connection must present one (mutual TLS). Needs `tls_cert`/`tls_key`.
    pub client_ca: Option<PathBuf>,
    /// Request body limit, bytes (`None` = the default).
    pub max_body_bytes: Option<usize>,
    /// Requests per second per token (`None` = the default).
    pub rate_per_second: Option<f64>,
    /// Connections, timeouts and body bytes in flight.
    pub limits: Limits,
}

/// What [`prepare`] hands to [`serve`].
pub struct Prepared {
    /// Address to bind.
    pub listen: SocketAddr,
    /// TLS configuration, if serving HTTPS.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The layer's configuration (its resolver still the admin-only default: set it).
    pub security: SecurityConfig,
    /// The accept loop's bounds ([`serve_with`]).
    pub limits: Limits,
}

/// Checks the options and loads the certificate and tokens: this is where a non-loopback
/// address without TLS or tokens is refused, before anything binds.
///
/// # Errors
/// A message: only one of `--tls-cert` / `--tls-key`, `--client-ca` without TLS, the
/// exposure rule ([`super::ListenError`]), an unreadable or bad certificate, key, client CA
/// or tokens file.
pub fn prepare(o: &ListenOptions) -> Result<Prepared, String> {
    let listen = o
        .listen
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 7400)));
    let (cert, key) = match (&o.tls_cert, &o.tls_key) {
        (Some(c), Some(k)) => (Some(c), Some(k)),
        (None, None) => (None, None),
        _ => return Err("give both --tls-cert and --tls-key, or neither".into()),
    };
    if o.client_ca.is_some() && cert.is_none() {
        return Err("--client-ca needs TLS: give --tls-cert and --tls-key too".into());
    }
    check_listen(
        listen,
        cert.is_some(),
        o.tokens.is_some() || o.client_ca.is_some(),
    )
    .map_err(|e| e.to_string())?;
    let tls = match (cert, key) {
        (Some(c), Some(k)) => Some(server_config(c, k, o.client_ca.as_deref())?),
        _ => None,
    };
    let tokens = o.tokens.as_deref().map(Tokens::from_file).transpose()?;
    let l = &o.limits;
    if l.max_connections == 0 || l.max_inflight_body_bytes == 0 {
        return Err("--max-connections and --max-inflight-body-bytes must be at least 1".into());
    }
    if l.header_read_timeout.is_zero() || l.body_read_timeout.is_zero() {
        return Err("--header-timeout-s and --body-timeout-s must be more than 0".into());
    }
    let mut security = SecurityConfig {
        tokens,
        body_read_timeout: l.body_read_timeout,
        max_inflight_body_bytes: l.max_inflight_body_bytes,
        ..SecurityConfig::default()
    };
    if let Some(n) = o.max_body_bytes {
        security.max_body_bytes = n;
    }
    if let Some(r) = o.rate_per_second {
        if !(r.is_finite() && r > 0.0) {
            return Err(format!("--rate-per-second {r}: must be > 0"));
        }
        security.rate_per_second = r;
    }
    Ok(Prepared {
        listen,
        tls,
        security,
        limits: o.limits.clone(),
    })
}

/// [`serve_with`] under the default [`Limits`].
///
/// # Errors
/// As [`serve_with`].
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, app, tls, &Limits::default(), shutdown).await
}

/// Serves `app` on `listener` (HTTPS when `tls` is given) until `shutdown` completes, then
/// waits up to [`Limits::drain_timeout`] for requests in flight. At most
/// [`Limits::max_connections`] connections are open at once (one accepted beyond them is
/// closed at once); a connection whose TLS handshake fails, or whose handshake or request
/// headers take longer than [`Limits::header_read_timeout`], is dropped.
///
/// # Errors
/// None at present (accept errors are retried after a pause).
pub async fn serve_with(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: &Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let conns = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let header_timeout = limits.header_read_timeout;
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
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
            .header_read_timeout(header_timeout);
        match &acceptor {
            None => {
                let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                    drop(permit);
                });
            }
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let Ok(Ok(tls)) =
                        tokio::time::timeout(header_timeout, acceptor.accept(stream)).await
                    else {
                        return;
                    };
                    let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(tls), svc);
                    let _ = watcher.watch(conn).await;
                    drop(permit);
                });
            }
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(limits.drain_timeout, graceful.shutdown()).await;
    Ok(())
}
