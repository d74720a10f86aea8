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
}

fn parse_policy(s: &str) -> Result<PlacementKind, String> {
    s.parse()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let spec = match (&args.spec, args.policy) {
        (Some(path), _) => fleetsim_extender::spec_file::load(path).map_err(anyhow::Error::msg)?,
        (None, p) => fleetsim_policies::SchedulerSpec {
            placement: p.unwrap_or(PlacementKind::BestFit).into(),
            ..Default::default()
        },
    };
    let policy = spec.placement.kind();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("binding {}: {e}", args.listen))?;
    eprintln!(
        "fleetsim-extender listening on http://{} (policy {}, body limit {} bytes)",
        listener.local_addr()?,
        policy,
        args.max_body_bytes
    );
    let config = Config {
        policy,
        spec,
        max_body_bytes: args.max_body_bytes,
    };
    fleetsim_extender::serve(listener, config, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
