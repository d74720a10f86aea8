//! The `[elastic]` table: elastic jobs in the main engine ([`crate::engine::elastic`]).
//!
//! Two families of allocators:
//! - round allocators (`tiresias`, `pollux`): the jobs come from a `pollux`-format workload
//!   and train under the measured application models of `models`; allocations are
//!   re-decided every `round_s`;
//! - sizing policies (`grow-idle`, `fixed`: [`fleetsim_policies::elastic`]): the jobs are
//!   native trace rows with `min_gpus`, `max_gpus`, `work_gpu_s`, `throughput`, beside rigid
//!   rows; an elastic job's `min` is scheduled as any job, its GPUs above `min` are
//!   re-decided after every instant's scheduling passes.
//!
//! Under a round allocator the run takes no rigid jobs; elastic jobs need the table (refused
//! when loading or at the job's arrival, naming the field).
//!
//! ```toml
//! [elastic]
//! allocator = "pollux"                 # "tiresias" | "pollux" | "grow-idle" | "fixed"
//! models = { public_path = "pollux-models" }   # round allocators only
//! round_s = 60                         # round allocators only; default 60
//! restart_s = 30                       # default 30
//! ```

use serde::Deserialize;

/// The allocator of `[elastic]`.
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
    /// `fleetsim_policies::elastic` grow-idle: admission at `min` in priority order, then
    /// the idle GPUs water-filled among the running jobs up to their `max`.
    GrowIdle,
    /// `fleetsim_policies::elastic` fixed: every job at its `min` (the rigid baseline).
    Fixed,
}

impl RoundAllocatorKind {
    /// The name scenarios use.
    pub fn name(self) -> &'static str {
        match self {
            RoundAllocatorKind::Tiresias => "tiresias",
            RoundAllocatorKind::Pollux => "pollux",
            RoundAllocatorKind::GrowIdle => "grow-idle",
            RoundAllocatorKind::Fixed => "fixed",
        }
    }

    /// A round allocator (`tiresias`, `pollux`), as opposed to a sizing policy.
    pub fn is_round(self) -> bool {
        matches!(
            self,
            RoundAllocatorKind::Tiresias | RoundAllocatorKind::Pollux
        )
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

/// `[elastic]`: elastic jobs. See the module docs.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElasticTable {
    /// The allocator.
    pub allocator: RoundAllocatorKind,
    /// The application models' directory (round allocators only; required by them).
    #[serde(default)]
    pub models: Option<ModelsDir>,
    /// Round length, seconds (round allocators only; default 60): the allocator re-decides
    /// every job's GPUs at every multiple of it (the first round is at `round_s`).
    #[serde(default)]
    pub round_s: Option<u64>,
    /// Restart delay of a job whose allocation changed, seconds (decimal; simulated to the
    /// millisecond): it holds its new GPUs and
    /// makes no progress for this long (the resize overhead). Under `grow-idle` a job's
    /// start pays none, and a job whose size does not change keeps its GPUs and pays none.
    #[serde(default = "default_restart_s")]
    pub restart_s: f64,
}

/// The round length when `round_s` is not given, seconds.
pub const DEFAULT_ROUND_S: u64 = 60;

fn default_restart_s() -> f64 {
    30.0
}

/// The longest round or restart delay, seconds (a year).
pub const MAX_ELASTIC_S: u64 = 365 * 86_400;

/// Checks `[elastic]` against the rest of the scenario: `(field, message)` of the first
/// problem. `pollux_workload`: the workload is a `pollux` trace; `others` names the tables
/// present that do not compose with it. (Native rows with elastic columns are checked
/// against the table when they arrive.)
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
    if e.allocator.is_round() && !pollux_workload {
        return Err((
            "elastic.allocator".into(),
            format!("`{}` allocates round-allocated jobs, which come from a `pollux` workload (`workload.trace.format = \"pollux\"`); for native rows with `min_gpus`/`max_gpus` use `grow-idle` or `fixed`", e.allocator.name()),
        ));
    }
    if !e.allocator.is_round() && pollux_workload {
        return Err((
            "elastic.allocator".into(),
            format!("`{}` sizes native rows with `min_gpus`, `max_gpus`, `work_gpu_s`, `throughput`; a `pollux` workload trains under measured models: use `tiresias` or `pollux`", e.allocator.name()),
        ));
    }
    if !e.allocator.is_round() {
        for (field, given) in [
            ("elastic.round_s", e.round_s.is_some()),
            ("elastic.models", e.models.is_some()),
        ] {
            if given {
                return Err((
                    field.into(),
                    format!("does not apply to `{}`: it re-plans after every instant's scheduling passes, and job lengths come from `work_gpu_s` and `throughput`", e.allocator.name()),
                ));
            }
        }
    }
    let round_s = e.round_s.unwrap_or(DEFAULT_ROUND_S);
    if round_s == 0 || round_s > MAX_ELASTIC_S {
        return Err((
            "elastic.round_s".into(),
            format!("must be in 1..={MAX_ELASTIC_S}"),
        ));
    }
    if !(e.restart_s.is_finite() && (0.0..=MAX_ELASTIC_S as f64).contains(&e.restart_s)) {
        return Err((
            "elastic.restart_s".into(),
            format!(
                "{} is not a number of seconds in 0..={MAX_ELASTIC_S}",
                e.restart_s
            ),
        ));
    }
    let models_ok = match &e.models {
        Some(m) => m.path.is_some() != m.public_path.is_some(),
        None => !e.allocator.is_round(),
    };
    if !models_ok {
        return Err((
            "elastic.models".into(),
            "give exactly one of `path` (relative to the scenario) and `public_path` (under the trace directory)".into(),
        ));
    }
    if let Some(t) = others.first() {
        return Err((
            (*t).to_string(),
            format!(
                "does not compose with `[elastic]` ({}): remove one of them",
                if e.allocator.is_round() {
                    "round-allocated jobs"
                } else {
                    "elastic jobs"
                }
            ),
        ));
    }
    Ok(())
}
