//! `fleetsim-extender`: the Kubernetes scheduler extender service. See the crate README.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use fleetsim_extender::server::{check_exposure, Auth, Config, Limits, DEFAULT_MAX_BODY_BYTES};
use fleetsim_policies::PlacementKind;

/// Kubernetes scheduler extender running fleetsim's placement policies.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Address to listen on (loopback by default; use 0.0.0.0:8888 in a pod).
    #[arg(
        long,
        env = "FLEETSIM_EXTENDER_LISTEN",
        default_value = "127.0.0.1:8888"
    )]
    listen: SocketAddr,
    /// Default placement policy, by the name scenarios use (pods may override it with the
    /// `fleetsim.io/placement` annotation).
    #[arg(long, env = "FLEETSIM_EXTENDER_POLICY", value_parser = parse_policy)]
    policy: Option<PlacementKind>,
    /// A scheduler spec file: a scenario's `[policy]` table (TOML, or JSON for `.json`) or a
    /// whole scenario file, whose `placement` becomes the default policy (instead of
    /// `--policy`). Reported at `GET /spec`.
    #[arg(long, env = "FLEETSIM_EXTENDER_SPEC", conflicts_with = "policy")]
    spec: Option<std::path::PathBuf>,
    /// Largest request body accepted, bytes; larger requests get 400.
    #[arg(long, env = "FLEETSIM_EXTENDER_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// File with the callers' tokens (`<name> <token>` or `<token>` a line; mount it from a
    /// Secret). Verbs then need `Authorization: Bearer <token>` or Basic `<name>:<token>`.
    #[arg(long, env = "FLEETSIM_EXTENDER_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// Serve the verbs without a token file on a non-loopback address (anyone who can reach
    /// the port then shapes placement and preemption).
    #[arg(long, env = "FLEETSIM_EXTENDER_ALLOW_UNAUTHENTICATED")]
    allow_unauthenticated: bool,
    /// Most open connections (more are closed on accept).
    #[arg(long, env = "FLEETSIM_EXTENDER_MAX_CONNECTIONS", default_value_t = Limits::default().max_connections)]
    max_connections: usize,
    /// Requests decided at once (default: the number of CPUs).
    #[arg(long, env = "FLEETSIM_EXTENDER_WORKERS")]
    workers: Option<usize>,
    /// Requests waiting for a worker; beyond them a verb gets 503.
    #[arg(long, env = "FLEETSIM_EXTENDER_QUEUE", default_value_t = Limits::default().queue)]
    queue: usize,
    /// Seconds allowed for a request's headers (and a kept-alive connection's idle time).
    #[arg(long, env = "FLEETSIM_EXTENDER_HEADER_TIMEOUT_S", default_value_t = 10)]
    header_timeout_s: u64,
    /// Seconds allowed for a verb's body.
    #[arg(long, env = "FLEETSIM_EXTENDER_BODY_TIMEOUT_S", default_value_t = 30)]
    body_timeout_s: u64,
}

fn parse_policy(s: &str) -> Result<PlacementKind, String> {
    s.parse()
}

/// Completes on SIGTERM (what the kubelet sends) or SIGINT.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = tokio::signal::ctrl_c() => {},
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    eprintln!("fleetsim-extender: shutting down, draining requests in flight");
}

/// Bad configuration: the message on stderr, exit code 2 (as for a bad flag).
fn bad_config(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let spec = match (&args.spec, args.policy) {
        (Some(path), _) => {
            fleetsim_extender::spec_file::load(path).unwrap_or_else(|e| bad_config(&e))
        }
        (None, p) => fleetsim_policies::SchedulerSpec {
            placement: p.unwrap_or(PlacementKind::BestFit).into(),
            ..Default::default()
        },
    };
    let policy = spec.placement.kind();
    let auth = args
        .token_file
        .as_ref()
        .map(|p| Auth::from_file(p).unwrap_or_else(|e| bad_config(&e)));
    if let Err(e) = check_exposure(args.listen, auth.as_ref(), args.allow_unauthenticated) {
        bad_config(&e);
    }
    let mut limits = Limits {
        max_connections: args.max_connections,
        queue: args.queue,
        header_read_timeout: Duration::from_secs(args.header_timeout_s),
        body_read_timeout: Duration::from_secs(args.body_timeout_s),
        ..Limits::default()
    };
    if let Some(w) = args.workers {
        limits.workers = w.max(1);
    }
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(l) => l,
        Err(e) => {
            // A one-line message, not an error chain with a backtrace: the usual cause is
            // an address another process holds.
            let hint = match e.kind() {
                std::io::ErrorKind::AddrInUse => {
                    "; another process (another fleetsim-extender?) is listening there: stop it or choose another --listen"
                }
                std::io::ErrorKind::AddrNotAvailable => {
                    "; this machine has no such address: choose another --listen"
                }
                std::io::ErrorKind::PermissionDenied => {
                    "; ports below 1024 need privileges: choose another --listen"
                }
                _ => "",
            };
            eprintln!("error: cannot listen on {}: {e}{hint}", args.listen);
            std::process::exit(1);
        }
    };
    eprintln!(
        "fleetsim-extender listening on http://{} (policy {}, body limit {} bytes, {} caller(s) with tokens)",
        listener.local_addr()?,
        policy,
        args.max_body_bytes,
        auth.as_ref().map_or(0, |a| a.tokens.len())
    );
    let config = Config {
        policy,
        spec,
        max_body_bytes: args.max_body_bytes,
        limits,
        auth,
    };
    fleetsim_extender::serve(listener, config, shutdown_signal()).await?;
    eprintln!("fleetsim-extender: stopped");
    Ok(())
}
