//! The scenario tables of the reliability subsystem (failures, maintenance, startup, platform
//! speeds, flexibility) and their checks that need no fleet. The scenario schema holds them;
//! the subsystem, above the scenario, reads them. The module docs the tables refer to are
//! [`crate::reliability`]'s (`[failures]`, `[startup]`, `[platform]`; the startup model is
//! [`crate::engine::reliability::StartupModel`]) and [`crate::reliability::flexibility`]'s
//! (`[flexibility]`).

use std::collections::BTreeMap;

use fleetsim_policies::Level;
use serde::Deserialize;

use super::{FileRef, NodeEventKind, Scenario, ScenarioError};

/// `[startup]`: per-run startup latency (see the engine's `StartupModel`).
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartupSpec {
    /// Paid by every run, seconds.
    #[serde(default)]
    pub base_s: f64,
    /// Added per doubling of the gang size, seconds.
    #[serde(default)]
    pub per_doubling_s: f64,
}

/// `[platform]`: relative speed of accelerator models (platform flexibility): a job's run
/// time is given at reference speed and scales as `run time / speed` on a model of speed
/// `speed` (see [`crate::engine::reliability`]).
///
/// ```toml
/// [platform]
/// speed = { A100 = 0.6 }          # explicit factors; unlisted models 1.0
/// # reference = "H100"            # or: every model at catalog speed relative to this one
/// ```
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlatformSpec {
    /// Speed factor by accelerator model name (> 0; 1.0 = reference speed).
    #[serde(default)]
    pub speed: BTreeMap<String, f64>,
    /// A catalog model whose speed is the reference: every model of the fleet runs at its
    /// catalog speed (`speed_permille`) relative to it; `speed` entries win.
    #[serde(default)]
    pub reference: Option<String>,
}

/// `[failures]`: the failure and maintenance model (module docs).
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailuresSpec {
    /// Per-node mean time between failures by accelerator model name, hours; `"*"` for every
    /// other model (and CPU-only nodes). Nodes of a model without an entry never fail alone.
    #[serde(default)]
    pub mtbf_h: BTreeMap<String, f64>,
    /// Correlated failures: every group of a topology level fails as a whole.
    #[serde(default)]
    pub correlated: Vec<CorrelatedSpec>,
    /// Repair-time distribution of generated failures (default: [`RepairSpec::default`]).
    #[serde(default)]
    pub repair: Option<RepairSpec>,
    /// Termination grace of jobs on a generated failure or eviction, seconds (field case
    /// B15; default 0). A timeline file gives each row's grace instead.
    #[serde(default)]
    pub grace_s: Option<f64>,
    /// Added to every restart of a job (reloading its checkpoint), seconds.
    #[serde(default)]
    pub restart_overhead_s: f64,
    /// Generate failures from this simulated time on, seconds (default: the submit time of
    /// the workload's first job, 0 for an empty workload; see the module docs).
    #[serde(default)]
    pub start_s: Option<f64>,
    /// Generate failures over `[start_s, until_s)`, seconds (default `metrics.horizon_s`).
    #[serde(default)]
    pub until_s: Option<f64>,
    /// Replay this timeline file (the `failures.csv` of an earlier run) instead of generating
    /// failures and maintenance.
    #[serde(default)]
    pub timeline: Option<FileRef>,
    /// Scheduled maintenance drains.
    #[serde(default)]
    pub maintenance: Vec<MaintenanceSpec>,
    /// Hot spares per cell: the last `spares_per_cell` nodes of every cell (declaration
    /// order) are held out of scheduling; a job hit by a node failure moves its tasks on the
    /// failed node onto a free spare of the same model and cell instead of requeueing (see
    /// the module docs). Default 0 (none).
    #[serde(default)]
    pub spares_per_cell: i64,
}

/// Correlated failures of a topology level (`domain`: NVLink domain / rack; `block`; `cell`).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrelatedSpec {
    /// The level whose groups fail as a whole.
    pub level: Level,
    /// Mean time between failures of one group, hours.
    pub mtbf_h: f64,
}

/// Repair-time distribution.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepairSpec {
    /// `exponential`, `lognormal` (default) or `fixed`.
    #[serde(default)]
    pub distribution: RepairDistribution,
    /// Mean repair time, seconds (default 4 h).
    #[serde(default = "default_repair_mean")]
    pub mean_s: f64,
    /// Log-normal shape σ (default 1.0).
    #[serde(default = "default_sigma")]
    pub sigma: f64,
}

fn default_repair_mean() -> f64 {
    4.0 * 3600.0
}

fn default_sigma() -> f64 {
    1.0
}

impl Default for RepairSpec {
    fn default() -> Self {
        RepairSpec {
            distribution: RepairDistribution::default(),
            mean_s: default_repair_mean(),
            sigma: default_sigma(),
        }
    }
}

/// Repair-time distributions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RepairDistribution {
    /// Exponential with the mean.
    Exponential,
    /// Log-normal with the mean and shape σ (μ = ln mean − σ²/2); Schroeder & Gibson
    /// (DSN'06) found repair times of HPC nodes log-normal.
    #[default]
    Lognormal,
    /// Always the mean.
    Fixed,
}

/// One scheduled maintenance drain.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceSpec {
    /// Start of the drain, seconds.
    pub at_s: f64,
    /// Every node of this cell (or give `nodes`).
    #[serde(default)]
    pub cell: Option<String>,
    /// These nodes, by name.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Jobs still running this long after `at_s` are evicted, seconds.
    pub deadline_s: f64,
    /// The nodes are down this long after the deadline, seconds.
    pub duration_s: f64,
}

/// `[flexibility]` (module docs).
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlexibilitySpec {
    /// Any cell (else the home cell only).
    #[serde(default)]
    pub spatial: bool,
    /// Any accelerator model (else the home cell's models).
    #[serde(default)]
    pub platform: bool,
    /// Borrow idle quota in the cohort (else own nominal quota only).
    #[serde(default)]
    pub quota: bool,
    /// Home cell by tenant (`"*"`: every other tenant).
    #[serde(default)]
    pub home_cells: BTreeMap<String, String>,
}

/// Checks the `[failures]` and `[startup]` values that need no fleet.
///
/// # Errors
/// [`ScenarioError::Invalid`] naming the field.
pub fn validate(s: &Scenario, origin: &str) -> Result<(), ScenarioError> {
    let bad = |field: &str, message: String| ScenarioError::Invalid {
        origin: origin.to_string(),
        field: field.to_string(),
        message,
    };
    let nonneg = |field: &str, v: f64| {
        if v.is_finite() && v >= 0.0 {
            Ok(())
        } else {
            Err(bad(field, "must be a number ≥ 0".into()))
        }
    };
    let positive = |field: &str, v: f64| {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(bad(field, "must be a number > 0".into()))
        }
    };
    if let Some(d) = s.policy.dispatch_latency_s {
        nonneg("policy.dispatch_latency_s", d)?;
    }
    if let Some(st) = &s.startup {
        nonneg("startup.base_s", st.base_s)?;
        nonneg("startup.per_doubling_s", st.per_doubling_s)?;
    }
    let Some(f) = &s.failures else {
        return Ok(());
    };
    for (k, &v) in &f.mtbf_h {
        positive(&format!("failures.mtbf_h.{k}"), v)?;
    }
    for (i, c) in f.correlated.iter().enumerate() {
        positive(&format!("failures.correlated[{i}].mtbf_h"), c.mtbf_h)?;
    }
    if let Some(r) = &f.repair {
        positive("failures.repair.mean_s", r.mean_s)?;
        nonneg("failures.repair.sigma", r.sigma)?;
    }
    if let Some(g) = f.grace_s {
        nonneg("failures.grace_s", g)?;
    }
    nonneg("failures.restart_overhead_s", f.restart_overhead_s)?;
    if let Some(u) = f.until_s {
        nonneg("failures.until_s", u)?;
    }
    if let Some(v) = f.start_s {
        nonneg("failures.start_s", v)?;
    }
    for (i, m) in f.maintenance.iter().enumerate() {
        nonneg(&format!("failures.maintenance[{i}].at_s"), m.at_s)?;
        nonneg(
            &format!("failures.maintenance[{i}].deadline_s"),
            m.deadline_s,
        )?;
        nonneg(
            &format!("failures.maintenance[{i}].duration_s"),
            m.duration_s,
        )?;
        if m.cell.is_some() != m.nodes.is_empty() {
            return Err(bad(
                &format!("failures.maintenance[{i}]"),
                "give exactly one of `cell` and `nodes`".into(),
            ));
        }
    }
    let generates = !f.mtbf_h.is_empty() || !f.correlated.is_empty();
    if f.spares_per_cell < 0 {
        return Err(bad(
            "failures.spares_per_cell",
            format!("must be ≥ 0, got {}", f.spares_per_cell),
        ));
    }
    let node_fails = s.node_events.iter().any(|e| e.kind == NodeEventKind::Fail);
    if f.spares_per_cell > 0 && !generates && f.timeline.is_none() && !node_fails {
        return Err(bad(
            "failures.spares_per_cell",
            format!(
                "{} spares per cell would only be held out: spares replace nodes that fail, and \
                 nothing fails here (give `mtbf_h`, `correlated`, a `timeline` or a `[[node_events]]` \
                 failure; maintenance evictions never swap)",
                f.spares_per_cell
            ),
        ));
    }
    if f.timeline.is_some() && (generates || !f.maintenance.is_empty()) {
        return Err(bad(
            "failures.timeline",
            "a replayed timeline replaces the generated one: leave out `mtbf_h`, `correlated` and `maintenance`".into(),
        ));
    }
    if f.timeline.is_some() {
        // Settings of the generator only: a replayed file gives every event's time and grace.
        let unused = [
            ("start_s", f.start_s.is_some()),
            ("until_s", f.until_s.is_some()),
            ("repair", f.repair.is_some()),
            ("grace_s", f.grace_s.is_some()),
        ];
        if let Some((key, _)) = unused.iter().find(|(_, given)| *given) {
            return Err(bad(
                &format!("failures.{key}"),
                format!(
                    "`{key}` only shapes generated failures and is unused with `timeline` (the \
                     file gives every event's time and `grace_ms`): leave it out"
                ),
            ));
        }
    }
    if f.timeline.is_none() && generates && f.until_s.or(s.metrics.horizon_s).is_none() {
        return Err(bad(
            "failures.until_s",
            "failures are generated over [start_s, until_s): give `until_s` or `metrics.horizon_s`"
                .into(),
        ));
    }
    Ok(())
}
