//! `fleetsim-scheduler`: the live scheduling service's command line: `serve` (see
//! [`fleetsim_scheduler::serve`]), `shadow` (see [`fleetsim_scheduler::shadow`]),
//! `k8s-events` (see [`fleetsim_scheduler::k8s_live`]) and `loadtest` (see
//! [`fleetsim_scheduler::loadtest`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "fleetsim-scheduler",
    about = "Live scheduling service on fleetsim's policy crate"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once at start: the size of the `serve` variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Drive the service over loopback at a target event rate; print events/s, batch
    /// latency, RSS over time and restart time (see fleetsim_scheduler::loadtest).
    Loadtest(fleetsim_scheduler::loadtest::LoadOptions),
    /// Serve the live scheduler on a scenario's fleet and policy, with a write-ahead log.
    Serve {
        /// Scenario file giving the fleet and the policy (the spec a study compares).
        #[arg(long)]
        spec: PathBuf,
        /// Write-ahead log (created if absent; replayed on start if present).
        #[arg(long)]
        wal: PathBuf,
        /// Address to listen on (default 127.0.0.1:7400; port 0 = any free port). A
        /// non-loopback address needs --tls-cert, --tls-key and --tokens or --client-ca.
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// PEM certificate chain (serve HTTPS).
        #[arg(long)]
        tls_cert: Option<PathBuf>,
        /// PEM private key.
        #[arg(long)]
        tls_key: Option<PathBuf>,
        /// Bearer tokens file (TOML).
        #[arg(long)]
        tokens: Option<PathBuf>,
        /// PEM CA certificate(s): require client certificates signed by it (mutual TLS).
        /// Needs --tls-cert and --tls-key; without --tokens every client is an admin.
        #[arg(long)]
        client_ca: Option<PathBuf>,
        /// Event times: `event` (each event's `t`, deterministic) or `wall` (the service
        /// stamps each accepted event with ms since start, never going backwards).
        #[arg(long, default_value = "event", value_parser = ["event", "wall"])]
        clock: String,
        /// Decisions kept for GET /v1/decisions (older ones answer 410).
        #[arg(long, default_value_t = fleetsim_scheduler::service::DEFAULT_RETAIN_DECISIONS)]
        retain_decisions: usize,
        /// Write a snapshot of the state beside the log (`<wal>.snapshot`) every this many
        /// accepted events, so a restart replays only the log after it (0: never).
        #[arg(long, default_value_t = fleetsim_scheduler::service::DEFAULT_SNAPSHOT_EVERY)]
        snapshot_every: u64,
        /// Directory of public traces (for a scenario's fleet file under it).
        #[arg(long)]
        trace_dir: Option<PathBuf>,
        /// Most open connections (one beyond them is closed at once).
        #[arg(long, default_value_t = 512)]
        max_connections: usize,
        /// Seconds allowed for a TLS handshake and a request's headers.
        #[arg(long, default_value_t = 10.0)]
        header_timeout_s: f64,
        /// Seconds allowed for a request's body to arrive whole (else 408).
        #[arg(long, default_value_t = 10.0)]
        body_timeout_s: f64,
        /// Largest request body, bytes (else 413).
        #[arg(long, default_value_t = fleetsim_scheduler::security::layer::DEFAULT_MAX_BODY_BYTES)]
        max_body_bytes: usize,
        /// Request body bytes held at once over all requests (else 503).
        #[arg(long, default_value_t = 64 << 20)]
        max_inflight_body_bytes: usize,
        /// Size at which the log starts a new segment file, bytes.
        #[arg(long, default_value_t = fleetsim_scheduler::wal::DEFAULT_SEGMENT_BYTES)]
        wal_segment_bytes: u64,
        /// Seconds a log segment wholly covered by the previous snapshot is kept before it
        /// is deleted (0: at the first snapshot after it is covered).
        #[arg(long, default_value_t = 86_400)]
        log_retention_s: u64,
        /// Keep every log segment (no retention).
        #[arg(long)]
        keep_log: bool,
        /// Jobs that ended (finished, cancelled, rejected) kept for GET /v1/jobs/{id}.
        #[arg(long, default_value_t = fleetsim_scheduler::served::DEFAULT_RETAIN_ENDED_JOBS)]
        retain_ended_jobs: usize,
        /// High availability: replicas elect a leader and hold the log in etcd
        /// (etcd://host:port[/prefix]); the local --wal stays each replica's copy.
        #[arg(long)]
        ha: Option<String>,
        /// Lease time to live with --ha, seconds (2 to 60): a standby takes over about this
        /// long after the leader dies.
        #[arg(long, default_value_t = fleetsim_scheduler::ha::DEFAULT_TTL_S)]
        ha_ttl_s: i64,
        /// The URL standbys give as the leader's with --ha (default: http(s)://the bound
        /// address).
        #[arg(long)]
        advertise: Option<String>,
    },
    /// Turn recorded Kubernetes objects (Pods with Kueue labels, Nodes) into the service's
    /// events for a spec: one batch, the body of POST /v1/events.
    K8sEvents {
        /// Scenario file the service runs (its fleet must hold the recorded nodes by name).
        #[arg(long)]
        spec: PathBuf,
        /// The cluster's Kueue manifests (LocalQueues, WorkloadPriorityClasses).
        #[arg(long)]
        kueue: PathBuf,
        /// `kubectl get nodes,pods -o json` exports (repeatable).
        #[arg(long, required = true)]
        objects: Vec<PathBuf>,
        /// Tokens file whose [tenants] table numbers the tenants (default: first seen).
        #[arg(long)]
        tokens: Option<PathBuf>,
        /// Where to write the batch (JSON).
        #[arg(long, default_value = "out/k8s-events.json")]
        out: PathBuf,
        /// Directory of public traces (for a scenario's fleet file under it).
        #[arg(long)]
        trace_dir: Option<PathBuf>,
    },
    /// Replay another scheduler's recorded jobs.csv through the policy and report, per job,
    /// where its decision would have differed (start, nodes, victim).
    Shadow {
        /// Scenario file giving the fleet and the policy (the spec a study compares).
        #[arg(long)]
        spec: PathBuf,
        /// The recorded log: a jobs.csv of the other scheduler.
        #[arg(long)]
        events: PathBuf,
        /// Output directory for shadow.csv and shadow.json.
        #[arg(long, default_value = "out/shadow")]
        out: PathBuf,
        /// Directory of public traces (for a scenario's fleet file under it).
        #[arg(long)]
        trace_dir: Option<PathBuf>,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// Prints a command's summary text, or its error on stderr (exit code 1).
fn report(r: Result<String, String>) -> ExitCode {
    match r {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Loadtest(o) => {
            report(runtime().and_then(|rt| rt.block_on(fleetsim_scheduler::loadtest::run(o))))
        }
        Command::Serve {
            spec,
            wal,
            listen,
            tls_cert,
            tls_key,
            tokens,
            client_ca,
            clock,
            retain_decisions,
            snapshot_every,
            trace_dir,
            max_connections,
            header_timeout_s,
            body_timeout_s,
            max_body_bytes,
            max_inflight_body_bytes,
            wal_segment_bytes,
            log_retention_s,
            keep_log,
            retain_ended_jobs,
            ha,
            ha_ttl_s,
            advertise,
        } => {
            let ha = match ha.as_deref().map(fleetsim_scheduler::ha::parse_url) {
                None => None,
                Some(Ok(url)) => Some(fleetsim_scheduler::serve::HaOptions {
                    url,
                    ttl_s: ha_ttl_s,
                    advertise,
                }),
                Some(Err(e)) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let secs = |flag: &str, s: f64| {
                if s.is_finite() && s > 0.0 && s <= 86_400.0 {
                    Ok(std::time::Duration::from_secs_f64(s))
                } else {
                    Err(format!("--{flag} {s}: give seconds in (0, 86400]"))
                }
            };
            let (header, body) = match (
                secs("header-timeout-s", header_timeout_s),
                secs("body-timeout-s", body_timeout_s),
            ) {
                (Ok(h), Ok(b)) => (h, b),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let limits = fleetsim_scheduler::security::serve::Limits {
                max_connections,
                header_read_timeout: header,
                body_read_timeout: body,
                max_inflight_body_bytes,
                ..Default::default()
            };
            let o = fleetsim_scheduler::serve::ServeOptions {
                spec,
                wal,
                trace_dir: fleetsim::scenario::TraceDir::resolve(trace_dir),
                listen: fleetsim_scheduler::security::serve::ListenOptions {
                    listen,
                    tls_cert,
                    tls_key,
                    tokens,
                    client_ca,
                    max_body_bytes: Some(max_body_bytes),
                    limits,
                    ..Default::default()
                },
                clock: match clock.as_str() {
                    "wall" => fleetsim_scheduler::service::Clock::Wall,
                    _ => fleetsim_scheduler::service::Clock::Event,
                },
                retain_decisions,
                snapshot_every,
                segment_bytes: wal_segment_bytes,
                log_retention: (!keep_log).then(|| std::time::Duration::from_secs(log_retention_s)),
                retain_ended_jobs,
                ha,
            };
            match runtime().and_then(|rt| rt.block_on(fleetsim_scheduler::serve::run(o))) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::K8sEvents {
            spec,
            kueue,
            objects,
            tokens,
            out,
            trace_dir,
        } => {
            let dir = fleetsim::scenario::TraceDir::resolve(trace_dir);
            report(fleetsim_scheduler::k8s_live::run(
                &spec,
                &kueue,
                &objects,
                tokens.as_deref(),
                &out,
                dir,
            ))
        }
        Command::Shadow {
            spec,
            events,
            out,
            trace_dir,
        } => {
            let dir = fleetsim::scenario::TraceDir::resolve(trace_dir);
            match fleetsim_scheduler::shadow::run(&spec, &events, &out, dir) {
                Ok(text) => {
                    print!("{text}");
                    println!("wrote {}/{{shadow.csv,shadow.json}}", out.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
