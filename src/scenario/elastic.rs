//! The `[elastic]` table: round-allocated (elastic) jobs in the main engine
//! ([`crate::engine::elastic`]). Its jobs come from a `pollux`-format workload; a scenario
//! with the table takes no rigid jobs, and a `pollux` workload needs the table (both refused
//! when loading, naming the field).
//!
//! ```toml
//! [elastic]
//! allocator = "pollux"                 # or "tiresias" (the artifact's two-queue LAS)
//! models = { public_path = "pollux-models" }
//! round_s = 60                         # default 60
//! restart_s = 30                       # default 30
//! ```

use serde::Deserialize;

/// The round allocator of `[elastic]`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum RoundAllocatorKind {
    /// The Pollux artifact's Tiresias (`fleetsim_policies::rounds::TwoQueueLas`): each job
    /// at its trace size and fixed batch size, two queues split at 16 GPU-hours of attained
    /// service.
    Tiresias,
    /// Pollux (`fleetsim_policies::rounds::Pollux`): each job's GPUs and placement chosen for
    /// the fleet's goodput, its batch size adapted to them (ncf keeps its batch size).
    Pollux,
}

impl RoundAllocatorKind {
    /// The name scenarios use.
    pub fn name(self) -> &'static str {
        match self {
            RoundAllocatorKind::Tiresias => "tiresias",
            RoundAllocatorKind::Pollux => "pollux",
        }
    }
}

/// The directory of the application models: one sub-directory per application, as the
/// Pollux artifact publishes them (`fleetsim::workload::goodput_models`).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelsDir {
    /// A path relative to the scenario file.
    #[serde(default)]
    pub path: Option<String>,
    /// A path under the trace directory.
    #[serde(default)]
    pub public_path: Option<String>,
}

/// `[elastic]`: round-allocated jobs. See the module docs.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElasticTable {
    /// The round allocator.
    pub allocator: RoundAllocatorKind,
    /// The application models' directory.
    pub models: ModelsDir,
    /// Round length, seconds: the allocator re-decides every job's GPUs at every multiple of
    /// it (the first round is at `round_s`).
    #[serde(default = "default_round_s")]
    pub round_s: u64,
    /// Restart delay of a job whose allocation changed, seconds: it holds its new GPUs and
    /// makes no progress for this long.
    #[serde(default = "default_restart_s")]
    pub restart_s: u64,
}

fn default_round_s() -> u64 {
    60
}

fn default_restart_s() -> u64 {
    30
}

/// The longest round or restart delay, seconds (a year).
pub const MAX_ELASTIC_S: u64 = 365 * 86_400;

/// Checks `[elastic]` against the rest of the scenario: `(field, message)` of the first
/// problem. `pollux_workload`: the workload is a `pollux` trace; `others` names the tables
/// present that do not compose with it.
pub fn check(
    e: Option<&ElasticTable>,
    pollux_workload: bool,
    others: &[&str],
) -> Result<(), (String, String)> {
    let Some(e) = e else {
        if pollux_workload {
            return Err((
                "workload.trace.format".into(),
                "a `pollux` workload holds round-allocated jobs: it needs the `[elastic]` table"
                    .into(),
            ));
        }
        return Ok(());
    };
    if !pollux_workload {
        return Err((
            "elastic".into(),
            "round-allocated jobs come from a `pollux` workload (`workload.trace.format = \"pollux\"`); rigid jobs and `[elastic]` do not share a run".into(),
        ));
    }
    if e.round_s == 0 || e.round_s > MAX_ELASTIC_S {
        return Err((
            "elastic.round_s".into(),
            format!("must be in 1..={MAX_ELASTIC_S}"),
        ));
    }
    if e.restart_s > MAX_ELASTIC_S {
        return Err((
            "elastic.restart_s".into(),
            format!("must be at most {MAX_ELASTIC_S}"),
        ));
    }
    if e.models.path.is_some() == e.models.public_path.is_some() {
        return Err((
            "elastic.models".into(),
            "give exactly one of `path` (relative to the scenario) and `public_path` (under the trace directory)".into(),
        ));
    }
    if let Some(t) = others.first() {
        return Err((
            (*t).to_string(),
            "does not compose with `[elastic]` (round-allocated jobs): remove one of them".into(),
        ));
    }
    Ok(())
}
