//! `fleetsim compact`: Borg-style compaction (Verma et al., EuroSys'15, §5.1): the smallest
//! fleet that still fits a workload, found by shrinking the fleet until a goal fails.
//!
//! The fleet is scaled with `transforms.fleet_scale` (every cell's NVLink domains, see
//! [`crate::whatif`]; a `fleet_scale` in the scenario is replaced). For each seed, bisection
//! over the scale factor `s ∈ [lo, hi]`: `hi` must meet every goal (else the seed is reported
//! as not meeting it); if `lo` meets them, `s* = lo`; otherwise the interval is halved, keeping
//! the smallest factor known to meet the goals, until it is narrower than the tolerance; `s*`
//! is that factor. This assumes the goals are monotone in the fleet size (more capacity never
//! hurts), as Borg's method does. Scaling rounds to whole domains, so `s*` is reported with
//! the fleet it yields.
//!
//! Over seeds the report gives each seed's `s*` and GPUs, the 90th percentile of `s*`
//! (nearest rank: the factor that suffices for 90 % of the seeds) and the spread (min, max).
//! Goals: `METRIC<=X` or `METRIC>=X` with the metric names of `fleetsim check`
//! (`wait_s.p99<=3600`, `censored_pct<=0.2`, `occupancy>=0.5`); a metric that is undefined in
//! a run (an empty sample) fails its goal.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::Serialize;

use crate::metrics::stats::nearest_rank;
use crate::scenario::overrides::{Override, Source};
use crate::scenario::TraceDir;
use crate::study::{self, metric_exists, metric_value, BadInput};

/// A goal on one metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goal {
    /// Metric name.
    pub metric: String,
    /// `<=` or `>=`.
    pub op: String,
    /// Threshold.
    pub value: f64,
}

impl Goal {
    /// Parses `METRIC<=X` or `METRIC>=X`.
    ///
    /// # Errors
    /// [`BadInput`] for any other form.
    pub fn parse(s: &str) -> Result<Goal, BadInput> {
        for op in ["<=", ">="] {
            if let Some((m, v)) = s.split_once(op) {
                let value: f64 = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite())
                    .ok_or_else(|| {
                        BadInput(format!("goal `{s}`: `{}` is not a finite number", v.trim()))
                    })?;
                return Ok(Goal {
                    metric: m.trim().to_string(),
                    op: op.to_string(),
                    value,
                });
            }
        }
        Err(BadInput(format!(
            "goal `{s}`: expected METRIC<=X or METRIC>=X, e.g. wait_s.p99<=3600 or censored_pct<=0.2"
        )))
    }

    /// True when the summary meets the goal.
    pub fn met(&self, summary: &serde_json::Value) -> bool {
        match metric_value(summary, &self.metric) {
            Some(v) if self.op == "<=" => v <= self.value,
            Some(v) => v >= self.value,
            None => false,
        }
    }
}

/// How to compact.
#[derive(Clone, Debug)]
pub struct CompactOptions {
    /// Goals, all of which must be met.
    pub goals: Vec<Goal>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Smallest factor tried.
    pub lo: f64,
    /// Largest factor (must meet the goals).
    pub hi: f64,
    /// Stop when the bracket is narrower than this.
    pub tolerance: f64,
    /// Public traces.
    pub trace_dir: TraceDir,
    /// Worker threads.
    pub threads: Option<usize>,
    /// Where to write `compaction.json` (optional).
    pub out: Option<PathBuf>,
}

/// One probe of the bisection.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// Factor.
    pub scale: f64,
    /// Accelerators at that factor.
    pub gpus: u64,
    /// Every goal met.
    pub met: bool,
    /// The goals' metrics.
    pub metrics: Vec<Option<f64>>,
    /// The run's summary warnings (in [`Compaction::warnings`], each once).
    #[serde(skip)]
    pub warnings: serde_json::Value,
}

/// One seed's result.
#[derive(Clone, Debug, Serialize)]
pub struct SeedResult {
    /// Seed.
    pub seed: u64,
    /// Smallest factor meeting the goals (`None`: not met even at `hi`).
    pub scale: Option<f64>,
    /// Accelerators at that factor.
    pub gpus: Option<u64>,
    /// Every probe, in order.
    pub probes: Vec<Probe>,
}

/// The outcome (`compaction.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Compaction {
    /// Scenario name.
    pub scenario: String,
    /// Goals.
    pub goals: Vec<Goal>,
    /// Bracket and tolerance.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Tolerance.
    pub tolerance: f64,
    /// Per seed.
    pub seeds: Vec<SeedResult>,
    /// 90th percentile (nearest rank) of the factors over seeds that met the goals.
    pub scale_p90: Option<f64>,
    /// Smallest factor over seeds.
    pub scale_min: Option<f64>,
    /// Largest factor over seeds.
    pub scale_max: Option<f64>,
    /// Accelerators at the p90 factor's seed.
    pub gpus_p90: Option<u64>,
    /// The probes' warnings, each once ([`study::distinct_warnings`]).
    pub warnings: Vec<String>,
}

/// Runs compaction.
///
/// # Errors
/// [`BadInput`] for a bad bracket, no goals or seeds, or a goal on an unknown metric; the
/// first failed run.
pub fn run(source: &Source, extra: &[Override], opts: &CompactOptions) -> Result<Compaction> {
    if opts.goals.is_empty() {
        return Err(
            BadInput("give at least one --goal, e.g. --goal 'wait_s.p99<=3600'".into()).into(),
        );
    }
    if opts.seeds.is_empty() {
        return Err(BadInput("compaction needs at least one seed".into()).into());
    }
    if !(opts.lo > 0.0
        && opts.lo < opts.hi
        && opts.hi <= crate::whatif::MAX_SCALE
        && opts.tolerance > 0.0)
    {
        return Err(BadInput(format!(
            "need 0 < --lo < --hi ≤ {} and --tolerance > 0 (got lo {}, hi {}, tolerance {})",
            crate::whatif::MAX_SCALE,
            opts.lo,
            opts.hi,
            opts.tolerance
        ))
        .into());
    }
    let scenario = source.load(extra)?.scenario.name.clone();
    let eval = |seed: u64, scale: f64| -> Result<Probe> {
        let mut o = extra.to_vec();
        o.push(Override {
            path: "transforms.fleet_scale".into(),
            value: toml::Value::Float(scale),
        });
        let loaded = source.load(&o)?;
        let p = study::run_point(&loaded, seed, &opts.trace_dir, false)
            .with_context(|| format!("seed {seed}, fleet scale {scale}"))?;
        for g in &opts.goals {
            if !metric_exists(&p.summary, &g.metric) {
                let e = crate::report::tracked::unknown_metric(&g.metric, &p.summary);
                return Err(
                    BadInput(format!("goal `{}{}{}`: {e}", g.metric, g.op, g.value)).into(),
                );
            }
        }
        Ok(Probe {
            scale,
            gpus: p.summary["fleet"]["gpus"].as_u64().unwrap_or(0),
            met: opts.goals.iter().all(|g| g.met(&p.summary)),
            metrics: opts
                .goals
                .iter()
                .map(|g| metric_value(&p.summary, &g.metric))
                .collect(),
            warnings: serde_json::json!({ "warnings": p.summary["warnings"] }),
        })
    };
    let per_seed = |seed: u64| -> Result<SeedResult> {
        let mut probes = Vec::new();
        let top = eval(seed, opts.hi)?;
        let top_ok = top.met;
        probes.push(top);
        if !top_ok {
            return Ok(SeedResult {
                seed,
                scale: None,
                gpus: None,
                probes,
            });
        }
        // Bisection on [lo, hi] assuming lo fails; lo itself is probed only when the bracket
        // closes on it (small fleets are the slowest runs: the queue grows without bound).
        let (mut lo, mut hi) = (opts.lo, opts.hi);
        while hi - lo > opts.tolerance {
            let mid = 0.5 * (lo + hi);
            let p = eval(seed, mid)?;
            if p.met {
                hi = mid;
            } else {
                lo = mid;
            }
            probes.push(p);
        }
        if lo == opts.lo {
            let bottom = eval(seed, opts.lo)?;
            if bottom.met {
                hi = opts.lo;
            }
            probes.push(bottom);
        }
        let gpus = probes.iter().find(|p| p.scale == hi).map(|p| p.gpus);
        Ok(SeedResult {
            seed,
            scale: Some(hi),
            gpus,
            probes,
        })
    };
    let work = || {
        opts.seeds
            .par_iter()
            .map(|&s| per_seed(s))
            .collect::<Vec<_>>()
    };
    let results = match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .context("starting worker threads")?
            .install(work),
        None => work(),
    };
    let seeds: Vec<SeedResult> = results.into_iter().collect::<Result<_>>()?;
    let mut met: Vec<(f64, u64)> = seeds
        .iter()
        .filter_map(|s| Some((s.scale?, s.gpus.unwrap_or(0))))
        .collect();
    met.sort_by(|a, b| a.0.total_cmp(&b.0));
    let p90 = nearest_rank(&met, 0.9);
    let warnings = study::distinct_warnings(
        seeds
            .iter()
            .flat_map(|s| s.probes.iter().map(|p| &p.warnings)),
    );
    let c = Compaction {
        warnings,
        scenario,
        goals: opts.goals.clone(),
        lo: opts.lo,
        hi: opts.hi,
        tolerance: opts.tolerance,
        scale_p90: p90.map(|p| p.0),
        gpus_p90: p90.map(|p| p.1),
        scale_min: met.first().map(|p| p.0),
        scale_max: met.last().map(|p| p.0),
        seeds,
    };
    if let Some(dir) = &opts.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        study::write_json(&dir.join("compaction.json"), &c)?;
    }
    Ok(c)
}

/// The table `fleetsim compact` prints.
pub fn render(c: &Compaction) -> String {
    let goals: Vec<String> = c
        .goals
        .iter()
        .map(|g| format!("{}{}{}", g.metric, g.op, g.value))
        .collect();
    let mut s = format!(
        "compaction of `{}`: smallest fleet_scale in [{}, {}] (±{}) meeting {}\n",
        c.scenario,
        c.lo,
        c.hi,
        c.tolerance,
        goals.join(" and ")
    );
    s.push_str(&format!(
        "{:>8} {:>10} {:>8} {:>7}\n",
        "seed", "scale", "GPUs", "runs"
    ));
    for r in &c.seeds {
        s.push_str(&format!(
            "{:>8} {:>10} {:>8} {:>7}\n",
            r.seed,
            r.scale
                .map(|v| format!("{v:.4}"))
                .unwrap_or_else(|| "not met".into()),
            r.gpus.map(|g| g.to_string()).unwrap_or_else(|| "-".into()),
            r.probes.len()
        ));
    }
    let f = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "-".into());
    s.push_str(&format!(
        "p90 scale {} ({} GPUs); spread {} .. {}\n",
        f(c.scale_p90),
        c.gpus_p90
            .map(|g| g.to_string())
            .unwrap_or_else(|| "-".into()),
        f(c.scale_min),
        f(c.scale_max)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals_parse() {
        let g = Goal::parse("wait_s.p99 <= 3600").unwrap();
        assert_eq!(
            (g.metric.as_str(), g.op.as_str(), g.value),
            ("wait_s.p99", "<=", 3600.0)
        );
        assert!(Goal::parse("occupancy>=0.5")
            .unwrap()
            .met(&serde_json::json!({"occupancy": 0.6})));
        assert!(!Goal::parse("wait_s.p99<=1")
            .unwrap()
            .met(&serde_json::json!({"wait_s": {"p99": null}})));
        assert!(Goal::parse("occupancy=0.5").is_err());
        assert!(Goal::parse("occupancy<=x").is_err());
    }
}
