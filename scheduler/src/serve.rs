//! `fleetsim-scheduler serve`: the live service on a scenario's fleet and policy, with its
//! write-ahead log and the security layer.

use std::path::{Path, PathBuf};

use axum::http::Method;
use fleetsim::run::{live_twin, RunOptions};
use fleetsim::scenario::{self, TraceDir};
use fleetsim_policies::live::LiveState;

use crate::security::serve::{prepare, serve_with, Limits, ListenOptions};
use crate::security::{secure, Access, Tokens};
use crate::service::{router, Clock, Options, Service};
use crate::tenancy::Tenancy;

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
    /// Events between snapshots (0: none); see [`crate::snapshot`].
    pub snapshot_every: u64,
    /// Size at which the log starts a new segment file, bytes ([`crate::wal`]).
    pub segment_bytes: u64,
    /// How long a log segment wholly covered by the previous snapshot is kept (`None`:
    /// for ever).
    pub log_retention: Option<std::time::Duration>,
    /// Jobs that ended kept for `GET /v1/jobs/{id}`.
    pub retain_ended_jobs: usize,
    /// High availability on etcd (`--ha`; see [`crate::ha`]); `None`: the local log only.
    pub ha: Option<HaOptions>,
}

/// `serve --ha etcd://host:port[/prefix]` and its settings ([`crate::ha`]).
#[derive(Clone, Debug)]
pub struct HaOptions {
    /// etcd's endpoint and the key prefix.
    pub url: crate::ha::HaUrl,
    /// Lease time to live, seconds: a dead leader's writes move to a standby after about
    /// this long.
    pub ttl_s: i64,
    /// The URL standbys name as the leader's in their `503` answers (default: the bound
    /// address, `http(s)://ADDR`).
    pub advertise: Option<String>,
}

/// The live state a scenario file starts the service from: built by
/// [`fleetsim::run::live_twin`], the same twin the equivalence test replays through.
///
/// # Errors
/// A message naming the file: it does not load, or its fleet or workload does not.
pub fn twin(spec: &Path, trace_dir: TraceDir) -> Result<LiveState, String> {
    twin_and_policy_digest(spec, trace_dir).map(|(live, _)| live)
}

/// [`twin`], and the [`crate::snapshot::policy_digest`] of the spec's `[policy]` table.
///
/// # Errors
/// As [`twin`].
pub fn twin_and_policy_digest(
    spec: &Path,
    trace_dir: TraceDir,
) -> Result<(LiveState, u32), String> {
    let loaded = scenario::load(spec).map_err(|e| e.to_string())?;
    refuse_elastic(&loaded, spec)?;
    let opts = RunOptions {
        seed: None,
        trace_dir,
        out_dir: None,
        keep_rows: false,
    };
    let live = live_twin(&loaded, &opts).map_err(|e| format!("{}: {e}", spec.display()))?;
    Ok((
        live,
        crate::snapshot::policy_digest(&loaded.scenario.policy),
    ))
}

/// Refuses a spec with `[elastic]`: the service's policy decides rigid jobs only, and
/// does not size elastic jobs, so such a spec would be served as something it is not.
///
/// # Errors
/// A message naming the spec file and the `[elastic]` table.
pub fn refuse_elastic(loaded: &scenario::Loaded, spec: &Path) -> Result<(), String> {
    if loaded.scenario.elastic.is_some() {
        return Err(format!(
            "{}: `[elastic]`: the scheduler service does not simulate elastic jobs (it decides rigid jobs only); remove `[elastic]` and the elastic rows",
            spec.display()
        ));
    }
    Ok(())
}

/// Which requests need what in the security layer: the OpenAPI description is open to any
/// authenticated principal; `POST /v1/events`, `GET /v1/jobs/{id}` and `GET /v1/pending`
/// are passed on to their handlers, which apply the per-tenant rule of [`crate::tenancy`]
/// under the service's lock (a job's owner is live state); everything else — the decision
/// log and its stream, which carry every tenant's admits and preemptions — and any path not
/// named here is admins only.
pub fn resolver() -> crate::security::AccessResolver {
    std::sync::Arc::new(|m: &Method, path: &str, _body: &[u8]| {
        let job_path = path
            .strip_prefix("/v1/jobs/")
            .is_some_and(|id| !id.is_empty() && !id.contains('/'));
        let open = match *m {
            Method::GET => path == "/v1/openapi.json" || path == "/v1/pending" || job_path,
            Method::POST => path == "/v1/events",
            _ => false,
        };
        if open {
            Access::Open
        } else {
            Access::Admin
        }
    })
}

/// The tenant table of the tokens file, checked against the spec's queue table `queues`:
/// a tokens file with a tenant principal must have a `[tenants]` table (the names its
/// tokens list → the tenant numbers events carry), and every tenant principal must list
/// the queues its jobs may join, each a queue of the spec.
///
/// # Errors
/// A message naming the principal when the table is missing, a tenant principal lists no
/// queue, or a queue is not the spec's.
pub fn tenancy(tokens: Option<&Tokens>, queues: &[String]) -> Result<Tenancy, String> {
    let Some(t) = tokens else {
        return Ok(Tenancy::default());
    };
    if t.tenant_ids().is_empty() {
        if let Some(p) = t.first_tenant_principal() {
            return Err(format!(
                "tokens file: principal `{}` lists tenants, but the file has no [tenants] table giving each tenant name its tenant number (the `tenant` of job events), e.g. [tenants] {} = 0",
                p.name,
                p.tenants.iter().next().map_or("team-a", |s| s.as_str())
            ));
        }
    }
    for p in t.principals().filter(|p| !p.admin) {
        if p.queues.is_empty() {
            return Err(format!(
                "tokens file: principal `{}`: field `queues`: list the queues its jobs may join (the spec's: {})",
                p.name,
                show_queues(queues)
            ));
        }
        if let Some(q) = p.queues.iter().find(|q| !queues.contains(q)) {
            return Err(format!(
                "tokens file: principal `{}`: field `queues`: `{q}` is not a queue of the spec (its queues: {})",
                p.name,
                show_queues(queues)
            ));
        }
    }
    Ok(Tenancy::new(t.tenant_ids(), t.priority_classes()))
}

fn show_queues(queues: &[String]) -> String {
    let v: Vec<String> = queues.iter().map(|q| format!("`{q}`")).collect();
    v.join(", ")
}

/// A service set up by [`start`], bound and ready to be served.
pub struct Started {
    /// The bound listener.
    pub listener: tokio::net::TcpListener,
    /// The address it is bound to (the port chosen when `--listen` gave port 0).
    pub addr: std::net::SocketAddr,
    /// The routes behind the security layer.
    pub app: axum::Router,
    /// TLS, when serving HTTPS.
    pub tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    /// The service behind the routes.
    pub state: crate::service::AppState,
    /// The log file, locked (`flock`, exclusive) while this is held: a second `serve` on
    /// the same log is refused instead of writing over its records.
    pub log_lock: std::fs::File,
    /// The accept loop's bounds ([`crate::security::serve::serve_with`]).
    pub limits: Limits,
}

/// Opens (creating if absent) the log at `wal` and takes an exclusive lock on it.
///
/// # Errors
/// A message naming the log: its directory does not exist, another process holds the lock
/// (another `serve` on it), or another I/O error.
pub fn lock_log(wal: &Path) -> Result<std::fs::File, String> {
    if let Some(dir) = wal.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(format!(
                "write-ahead log {}: its directory {} does not exist (the log file is created, not its directory)",
                wal.display(),
                dir.display()
            ));
        }
    }
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(wal)
        .map_err(|e| format!("write-ahead log {}: {e}", wal.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "write-ahead log {} is locked by another process (another `serve` on the same log?)",
            wal.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(format!(
            "write-ahead log {}: cannot lock it: {e}",
            wal.display()
        )),
    }
}

/// Everything [`run`] does before serving: the exposure check, certificate and tokens, the
/// tenant table, the twin of the spec, the log replay (reported on stderr), the router
/// behind the security layer, binding. Tests serve the result themselves.
///
/// # Errors
/// A message: the exposure rule, certificate or tokens (or a tenant principal without a
/// `[tenants]` table), the spec, the log, binding.
pub async fn start(o: ServeOptions) -> Result<Started, String> {
    let mut prepared = prepare(&o.listen)?;
    prepared.security.resolver = resolver();
    let (spec, dir) = (o.spec.clone(), o.trace_dir.clone());
    let (live, policy_digest) =
        tokio::task::spawn_blocking(move || twin_and_policy_digest(&spec, dir))
            .await
            .map_err(|e| e.to_string())??;
    let tenants = tenancy(prepared.security.tokens.as_ref(), live.queue_names())?;
    let options = Options {
        clock: o.clock,
        retain_decisions: o.retain_decisions,
        snapshot_every: o.snapshot_every,
        policy_digest,
        segment_bytes: o.segment_bytes,
        log_retention: o.log_retention,
        retain_ended_jobs: o.retain_ended_jobs,
    };
    let log_lock = lock_log(&o.wal)?;
    let wal = o.wal.clone();
    let (state, rec) = tokio::task::spawn_blocking(move || Service::with_wal(live, &wal, options))
        .await
        .map_err(|e| e.to_string())??;
    // The cut tail was found on opening the log, before the snapshot and the replay.
    if let Some(d) = &rec.tail_defect {
        eprintln!(
            "fleetsim-scheduler: WARNING: write-ahead log {}: {d}",
            o.wal.display()
        );
    }
    if let Some(why) = &rec.snapshot_unused {
        eprintln!("fleetsim-scheduler: WARNING: {why}; not used, the whole log is replayed");
    }
    if let Some(snap) = &rec.snapshot {
        eprintln!(
            "fleetsim-scheduler: loaded snapshot {} ({} log records, {} events, {} bytes) in {:.3} s",
            snap.path, snap.batches, snap.events, snap.bytes, snap.seconds
        );
    }
    eprintln!(
        "fleetsim-scheduler: replayed {} of {} log records from {} ({} events, {} decisions in all) in {:.3} s",
        rec.replayed_batches,
        rec.batches,
        o.wal.display(),
        rec.events,
        rec.decisions,
        rec.seconds
    );
    if let Some(f) = &rec.first_refused {
        eprintln!(
            "fleetsim-scheduler: WARNING: {} replayed log records had a refused event, the first \
             record {} (batch {}) at event {}: {}. Under the spec and fleet the log was written \
             with, these were refused when first sent too; if --spec changed since, the replay \
             diverged from what was acknowledged: restart with the log's own spec, or start a \
             new log",
            rec.refused_on_replay,
            f.record,
            f.batch.map_or("unnumbered".to_string(), |b| b.to_string()),
            f.index,
            f.error
        );
    }
    report_set_aside(&o.wal, &rec);
    crate::service::lock(&state).set_tenancy(tenants);
    let app = secure(router(state.clone()), prepared.security);
    let listener = tokio::net::TcpListener::bind(prepared.listen)
        .await
        .map_err(|e| format!("bind {}: {e}", prepared.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    if let Some(ha) = o.ha {
        let scheme = if prepared.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let advertise = ha.advertise.unwrap_or_else(|| format!("{scheme}://{addr}"));
        let replica = crate::ha::Replica::start(ha.url, ha.ttl_s, advertise, state.clone()).await?;
        crate::service::lock(&state).set_replica(replica);
    }
    Ok(Started {
        listener,
        addr,
        app,
        tls: prepared.tls,
        state,
        log_lock,
        limits: prepared.limits,
    })
}

/// Reports on stderr the log records a start set aside ([`crate::quarantine`]): the first
/// 10 one by one, then a count.
pub fn report_set_aside(wal: &Path, rec: &crate::service::Recovery) {
    let file = crate::quarantine::path_for(wal);
    for e in rec.set_aside.iter().take(10) {
        eprintln!(
            "fleetsim-scheduler: WARNING: write-ahead log {}: record {} at byte {} (batch {}) set aside in {}: {}",
            wal.display(),
            e.record,
            e.offset,
            e.batch.map_or("unnumbered".to_string(), |b| b.to_string()),
            file.display(),
            e.reason
        );
    }
    if rec.set_aside.len() > 10 {
        eprintln!(
            "fleetsim-scheduler: WARNING: … and {} more records set aside in {}",
            rec.set_aside.len() - 10,
            file.display()
        );
    }
    if rec.set_aside_before > 0 {
        eprintln!(
            "fleetsim-scheduler: {} log records set aside by earlier starts skipped (listed in {})",
            rec.set_aside_before,
            file.display()
        );
    }
}

/// Runs the service until SIGTERM or ctrl-c. Prints `listening on ADDR` (stdout) once
/// bound, and log lines (stderr) for the log replay and a cut tail.
///
/// # Errors
/// As [`start`].
pub async fn run(o: ServeOptions) -> Result<(), String> {
    let st = start(o).await?;
    println!(
        "listening on {}://{}",
        if st.tls.is_some() { "https" } else { "http" },
        st.addr
    );
    serve_with(st.listener, st.app, st.tls, &st.limits, shutdown_signal())
        .await
        .map_err(|e| e.to_string())?;
    crate::service::lock(&st.state).snapshot_on_shutdown();
    eprintln!("fleetsim-scheduler: shut down");
    Ok(())
}

/// Completes on ctrl-c, SIGTERM or SIGHUP.
///
/// SIGHUP (a closed terminal, or an operator's reload habit) drains the same way: it does
/// not reload the tokens file; restart the service for that.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let on = |kind: tokio::signal::unix::SignalKind| async move {
        match tokio::signal::unix::signal(kind) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(unix)]
    let (term, hup) = (
        on(tokio::signal::unix::SignalKind::terminate()),
        on(tokio::signal::unix::SignalKind::hangup()),
    );
    #[cfg(not(unix))]
    let (term, hup) = (std::future::pending::<()>(), std::future::pending::<()>());
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
        () = hup => {},
    }
}
