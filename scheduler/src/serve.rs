//! `fleetsim-scheduler serve`: the live service on a scenario's fleet and policy, with its
//! write-ahead log and the security layer (issue 21 items 1, 2, 4, 6).

use std::path::{Path, PathBuf};

use axum::http::Method;
use fleetsim::run::{live_twin, RunOptions};
use fleetsim::scenario::{self, TraceDir};
use fleetsim_policies::live::LiveState;

use crate::security::serve::{prepare, serve, ListenOptions};
use crate::security::{secure, Access};
use crate::service::{router, Clock, Options, Service};

/// What `serve` is given on the command line.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Scenario file: the fleet, queues, quota and `[policy]` (the spec a study compares).
    pub spec: PathBuf,
    /// Write-ahead log file (created if absent, replayed if present).
    pub wal: PathBuf,
    /// Where public traces are (for a fleet file under them).
    pub trace_dir: TraceDir,
    /// Address, TLS and tokens (see [`crate::security`]).
    pub listen: ListenOptions,
    /// Event or wall time.
    pub clock: Clock,
    /// Decisions kept for `GET /v1/decisions`.
    pub retain_decisions: usize,
}

/// The live state a scenario file starts the service from: built by
/// [`fleetsim::run::live_twin`], the same twin the equivalence test replays through.
///
/// # Errors
/// A message naming the file: it does not load, or its fleet or workload does not.
pub fn twin(spec: &Path, trace_dir: TraceDir) -> Result<LiveState, String> {
    let loaded = scenario::load(spec).map_err(|e| e.to_string())?;
    let opts = RunOptions {
        seed: None,
        trace_dir,
        out_dir: None,
        keep_rows: false,
    };
    live_twin(&loaded, &opts).map_err(|e| format!("{}: {e}", spec.display()))
}

/// Which requests need what: the OpenAPI description is open to any authenticated
/// principal; everything else is cluster-wide (the event stream carries every tenant's
/// jobs and nodes, the decision log every tenant's decisions), so admins only.
pub fn resolver() -> crate::security::AccessResolver {
    std::sync::Arc::new(|m: &Method, path: &str, _body: &[u8]| {
        if m == Method::GET && path == "/v1/openapi.json" {
            Access::Open
        } else {
            Access::Admin
        }
    })
}

/// Runs the service until SIGTERM or ctrl-c. Prints `listening on ADDR` (stdout) once
/// bound, and log lines (stderr) for the log replay and a cut tail.
///
/// # Errors
/// A message: the exposure rule, certificate or tokens, the spec, the log, binding.
pub async fn run(o: ServeOptions) -> Result<(), String> {
    let mut prepared = prepare(&o.listen)?;
    prepared.security.resolver = resolver();
    let (spec, dir) = (o.spec.clone(), o.trace_dir.clone());
    let live = tokio::task::spawn_blocking(move || twin(&spec, dir))
        .await
        .map_err(|e| e.to_string())??;
    let options = Options {
        clock: o.clock,
        retain_decisions: o.retain_decisions,
    };
    let wal = o.wal.clone();
    let (state, rec) = tokio::task::spawn_blocking(move || Service::with_wal(live, &wal, options))
        .await
        .map_err(|e| e.to_string())??;
    eprintln!(
        "fleetsim-scheduler: replayed {} batches ({} events, {} decisions) from {} in {:.3} s",
        rec.batches,
        rec.events,
        rec.decisions,
        o.wal.display(),
        rec.seconds
    );
    if let Some(d) = &rec.tail_defect {
        eprintln!(
            "fleetsim-scheduler: WARNING: write-ahead log {}: {d}",
            o.wal.display()
        );
    }
    let app = secure(router(state), prepared.security);
    let listener = tokio::net::TcpListener::bind(prepared.listen)
        .await
        .map_err(|e| format!("bind {}: {e}", prepared.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!(
        "listening on {}://{addr}",
        if prepared.tls.is_some() {
            "https"
        } else {
            "http"
        }
    );
    serve(listener, app, prepared.tls, shutdown_signal())
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("fleetsim-scheduler: shut down");
    Ok(())
}

/// Completes on ctrl-c or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
