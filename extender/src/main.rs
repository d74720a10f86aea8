//! `fleetsim-extender`: the Kubernetes scheduler extender service. See the crate README.

use std::net::SocketAddr;

use clap::Parser;
use fleetsim_extender::server::{Config, DEFAULT_MAX_BODY_BYTES};
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
    #[arg(long, env = "FLEETSIM_EXTENDER_POLICY", default_value = "best-fit",
          value_parser = parse_policy)]
    policy: PlacementKind,
    /// Largest request body accepted, bytes; larger requests get 400.
    #[arg(long, env = "FLEETSIM_EXTENDER_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
}

fn parse_policy(s: &str) -> Result<PlacementKind, String> {
    s.parse()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
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
        "fleetsim-extender listening on http://{} (policy {}, body limit {} bytes)",
        listener.local_addr()?,
        args.policy,
        args.max_body_bytes
    );
    let config = Config {
        policy: args.policy,
        max_body_bytes: args.max_body_bytes,
    };
    fleetsim_extender::serve(listener, config, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
