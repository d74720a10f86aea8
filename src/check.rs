//! `fleetsim check`: the CI regression gate against a committed baseline over paired seeds.
//!
//! The baseline (`reports/NAME.json`, written by `fleetsim check --update`) holds, for each
//! tracked metric, its value on each of `n ≥ 2` seeds (default 5: the scenario seed, +1, …),
//! their mean `m` and sample standard deviation `s` (divisor `n − 1`), a **direction** and a
//! **tolerance**
//!
//! ```text
//! tolerance = max( t(0.975, n − 1) · s / √n ,  abs ,  rel · |m| )
//! ```
//!
//! The first term is the half-width of the Student-t 95 % confidence interval of the mean
//! over the seeds: a move smaller than it is within what drawing other seeds would give.
//! `abs` and `rel` are optional floors the scenario declares (default 0):
//!
//! ```toml
//! [check]
//! metrics = ["occupancy", "wait_s.p99", "jobs.completed"]   # default: every metric of runs.csv
//! tolerance."wait_s.p99" = { rel = 0.05 }                   # at least ±5 % of the baseline
//! tolerance.occupancy = { abs = 0.002, direction = "higher-is-better" }
//! ```
//!
//! A check runs the baseline's seeds again and, per metric, takes the paired differences
//! `d_i = now_i − baseline_i` (common random numbers: seed `i` draws the same workload in
//! both). Their mean `d̄` decides: `|d̄| ≤ tolerance` passes (`ok`); beyond it in the good
//! direction passes as `better` (rewrite the baseline with `--update` to keep the gain);
//! beyond it in the bad direction fails (`REGRESSION`). The paired 95 % interval of `d̄`
//! ([`crate::compare::stats::paired`]) is printed beside it for the reader.
//!
//! Directions: the one [`crate::study::better`] gives for the metrics of `runs.csv` (lower
//! wait, JCT, slowdown, fragmentation, censored and rejected jobs, lost work and makespan are
//! better; higher useful occupancy, fairness and completed jobs are better;
//! `allocated_occupancy` is reported only), or the one `direction` declares. `direction =
//! "both"` makes any move beyond the tolerance fail; it is also the default for a metric of
//! unknown direction (any other dotted path into `summary.json`). A seed whose value is
//! `null` (an empty sample) must be `null` in both runs, unless the direction is `none`.
//!
//! A baseline of another scenario, one lacking a tracked metric, a malformed one (the error
//! names the file and the field) and a single-seed baseline of an older fleetsim (refused,
//! with the command that rewrites it) are bad input (exit code 2), not a regression (exit 1).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compare::stats::{self, PairedCi};
use crate::study::{metric_exists, metric_value, BadInput, Better, METRICS};

pub use crate::scenario::studies::{CheckSpec, Direction, Tolerance};

/// The baseline file format this fleetsim writes and reads.
pub const BASELINE_FORMAT: u32 = 2;

/// Seeds a baseline is written with unless `--seeds` says otherwise.
pub const DEFAULT_SEEDS: u64 = 5;

/// The tolerance rule, as written into every baseline.
pub const TOLERANCE_RULE: &str =
    "tolerance = max(t(0.975, n-1) * sd / sqrt(n), abs, rel * |mean|): \
     the half-width of the Student-t 95% interval of the mean over the n seeds, or the \
     scenario's [check] floors; a check fails when the mean paired difference moves beyond it \
     in the metric's bad direction";

impl CheckSpec {
    /// The tracked metric names.
    pub fn tracked(&self) -> Vec<String> {
        if self.metrics.is_empty() {
            METRICS.iter().map(|m| m.name.to_string()).collect()
        } else {
            self.metrics.clone()
        }
    }

    /// Checks ranges; returns `(field, message)` for the first problem.
    ///
    /// # Errors
    /// A negative or non-finite tolerance, or a tolerance for an untracked metric.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let tracked = self.tracked();
        for (k, t) in &self.tolerance {
            if !tracked.contains(k) {
                return Err((
                    format!("check.tolerance.{k}"),
                    format!("`{k}` is not a tracked metric (add it to check.metrics)"),
                ));
            }
            if !(t.abs.is_finite() && t.abs >= 0.0 && t.rel.is_finite() && t.rel >= 0.0) {
                return Err((
                    format!("check.tolerance.{k}"),
                    "abs and rel must be numbers ≥ 0".into(),
                ));
            }
        }
        Ok(())
    }
}

impl Tolerance {
    /// The direction that applies to `metric`: the declared one, else the metric's own
    /// ([`crate::study::better`]), else [`Direction::Both`].
    pub fn direction_for(&self, metric: &str) -> Direction {
        self.direction
            .unwrap_or(match crate::study::better(metric) {
                Some(Better::Higher) => Direction::HigherIsBetter,
                Some(Better::Lower) => Direction::LowerIsBetter,
                Some(Better::Neither) => Direction::None,
                None => Direction::Both,
            })
    }
}

/// The outcome of one compared metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Within tolerance.
    Ok,
    /// Moved beyond the tolerance in the good direction: passes.
    Better,
    /// Moved beyond the tolerance in the bad direction (or, for [`Direction::Both`], in
    /// either; or a seed's value became / stopped being `null`): fails.
    Regressed,
}

/// A baseline file (format [`BASELINE_FORMAT`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Always [`BASELINE_FORMAT`].
    pub format: u32,
    /// Scenario name.
    pub scenario: String,
    /// The seeds, in order; a check runs these.
    pub seeds: Vec<u64>,
    /// fleetsim version that wrote it.
    pub fleetsim_version: String,
    /// Policy names by stage (for the reader; not compared).
    pub policy: Value,
    /// How the tolerances were derived ([`TOLERANCE_RULE`]; for the reader).
    pub tolerance_rule: String,
    /// Tracked metrics.
    pub metrics: BTreeMap<String, MetricBaseline>,
}

/// One tracked metric of a baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricBaseline {
    /// Which moves beyond the tolerance fail.
    pub direction: Direction,
    /// Allowed move of the mean paired difference, in the metric's unit (≥ 0).
    pub tolerance: f64,
    /// Mean over the seeds with a value (`null` when none has one).
    pub mean: Option<f64>,
    /// Sample standard deviation over the seeds with a value (`null` for fewer than 2).
    pub sd: Option<f64>,
    /// The value on each seed, in the order of `seeds` (`null` for an empty sample).
    pub values: Vec<Option<f64>>,
}

/// One compared metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Metric.
    pub metric: String,
    /// Baseline mean over the seeds.
    pub baseline: Option<f64>,
    /// Mean over the seeds now.
    pub now: Option<f64>,
    /// Mean paired difference `now − baseline` and its 95 % interval (`None` without a
    /// seed on which both have a value).
    pub diff: Option<PairedCi>,
    /// Seeds whose value became or stopped being `null`.
    pub null_changed: usize,
    /// Allowed move of the mean difference (the baseline's tolerance).
    pub allowed: f64,
    /// The direction applied (the baseline's).
    pub direction: Direction,
    /// The outcome.
    pub status: Status,
    /// Passes: [`Status::Ok`] or [`Status::Better`].
    pub ok: bool,
}

fn present(v: &[Option<f64>]) -> Vec<f64> {
    v.iter().flatten().copied().collect()
}

/// Builds the baseline of runs on `seeds` (one summary per seed, in order).
///
/// # Errors
/// [`BadInput`] for a tracked metric that `summary.json` does not have, or fewer than 2 seeds.
pub fn baseline_of(
    spec: &CheckSpec,
    seeds: &[u64],
    summaries: &[Value],
) -> Result<Baseline, BadInput> {
    assert_eq!(seeds.len(), summaries.len(), "one summary per seed");
    let n = seeds.len();
    if n < 2 {
        return Err(BadInput(format!(
            "a baseline needs at least 2 seeds to derive tolerances from their spread (got {n}; \
             the default is {DEFAULT_SEEDS})"
        )));
    }
    let t = stats::t_quantile(0.975, (n - 1) as f64);
    let mut metrics = BTreeMap::new();
    for m in spec.tracked() {
        let mut values = Vec::with_capacity(n);
        for s in summaries {
            if !metric_exists(s, &m) {
                return Err(crate::report::tracked::unknown_metric(&m, s));
            }
            values.push(metric_value(s, &m));
        }
        let have = present(&values);
        let mean = stats::mean(&have);
        let sd = stats::sd(&have);
        let declared = spec.tolerance.get(&m).copied().unwrap_or_default();
        let spread = sd.map_or(0.0, |s| t * s / (have.len() as f64).sqrt());
        let tolerance = spread
            .max(declared.abs)
            .max(declared.rel * mean.unwrap_or(0.0).abs());
        metrics.insert(
            m.clone(),
            MetricBaseline {
                direction: declared.direction_for(&m),
                tolerance,
                mean,
                sd,
                values,
            },
        );
    }
    let first = &summaries[0];
    Ok(Baseline {
        format: BASELINE_FORMAT,
        scenario: first["scenario"].as_str().unwrap_or_default().to_string(),
        seeds: seeds.to_vec(),
        fleetsim_version: env!("CARGO_PKG_VERSION").to_string(),
        policy: first["policy"].clone(),
        tolerance_rule: TOLERANCE_RULE.to_string(),
        metrics,
    })
}

/// Reads a baseline file.
///
/// # Errors
/// [`BadInput`] naming the file (and the field, for a malformed one) when it is missing, not
/// JSON, a single-seed baseline of an older fleetsim, or not a baseline.
pub fn read_baseline(path: &Path) -> Result<Baseline, BadInput> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        BadInput(format!(
            "{}: {e} (write a baseline with `fleetsim check SCENARIO --baseline {} --update`)",
            path.display(),
            path.display()
        ))
    })?;
    parse_baseline(&text).map_err(|m| {
        // Name this file in the command that rewrites it.
        let m = m.replace("--baseline FILE", &format!("--baseline {}", path.display()));
        BadInput(format!("{}: {m}", path.display()))
    })
}

/// Parses a baseline's text; the message names the field at fault.
///
/// # Errors
/// The problem, without the file name.
pub fn parse_baseline(text: &str) -> Result<Baseline, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("not a fleetsim baseline: {e}"))?;
    let rewrite = "rewrite it with `fleetsim check SCENARIO --baseline FILE --update`";
    match v.get("format") {
        None if v.get("seed").is_some() => {
            return Err(format!(
                "a single-seed baseline of an older fleetsim (field `seed`, exact values, no \
                 tolerances): check now compares {DEFAULT_SEEDS} paired seeds against \
                 tolerances derived from their spread, which this file lacks; {rewrite}"
            ))
        }
        None => {
            return Err(format!(
                "field `format`: missing (not a fleetsim baseline?); {rewrite}"
            ))
        }
        Some(f) if f.as_u64() != Some(BASELINE_FORMAT.into()) => {
            return Err(format!(
                "field `format`: {f} is not a baseline format this fleetsim reads \
                 ({BASELINE_FORMAT}); {rewrite}"
            ))
        }
        Some(_) => {}
    }
    let b: Baseline = serde_path_to_error::deserialize(&v).map_err(|e| {
        let path = e.path().to_string();
        format!("field `{path}`: {}", e.into_inner())
    })?;
    if b.seeds.len() < 2 {
        return Err(format!(
            "field `seeds`: {} seed(s); a baseline needs at least 2",
            b.seeds.len()
        ));
    }
    for (name, m) in &b.metrics {
        if m.values.len() != b.seeds.len() {
            return Err(format!(
                "field `metrics.{name}.values`: {} values for {} seeds",
                m.values.len(),
                b.seeds.len()
            ));
        }
        if !(m.tolerance.is_finite() && m.tolerance >= 0.0) {
            return Err(format!(
                "field `metrics.{name}.tolerance`: {} is not a number ≥ 0",
                m.tolerance
            ));
        }
    }
    Ok(b)
}

/// Compares runs on the baseline's seeds (one summary per seed, in order) with the baseline.
///
/// # Errors
/// [`BadInput`] when the baseline is of another scenario, lacks a tracked metric, or a
/// tracked metric is unknown.
pub fn compare(
    spec: &CheckSpec,
    base: &Baseline,
    summaries: &[Value],
) -> Result<Vec<Line>, BadInput> {
    assert_eq!(base.seeds.len(), summaries.len(), "one summary per seed");
    let name = summaries[0]["scenario"].as_str().unwrap_or_default();
    if base.scenario != name {
        return Err(BadInput(format!(
            "the baseline is of scenario `{}`, this run is of `{name}`",
            base.scenario
        )));
    }
    let mut lines = Vec::new();
    for m in spec.tracked() {
        let mut now = Vec::with_capacity(summaries.len());
        for s in summaries {
            if !metric_exists(s, &m) {
                return Err(crate::report::tracked::unknown_metric(&m, s));
            }
            now.push(metric_value(s, &m));
        }
        let Some(b) = base.metrics.get(&m) else {
            return Err(BadInput(format!(
                "the baseline has no metric `{m}` (rewrite it with --update)"
            )));
        };
        lines.push(line(&m, b, &now));
    }
    Ok(lines)
}

/// Compares one metric's values on the seeds with its baseline.
fn line(metric: &str, b: &MetricBaseline, now: &[Option<f64>]) -> Line {
    let (mut a, mut z) = (Vec::new(), Vec::new());
    let mut null_changed = 0;
    for (x, y) in now.iter().zip(&b.values) {
        match (x, y) {
            (Some(x), Some(y)) => {
                a.push(*x);
                z.push(*y);
            }
            (None, None) => {}
            _ => null_changed += 1,
        }
    }
    let diff = stats::paired(&a, &z);
    let direction = b.direction;
    let status = if direction == Direction::None {
        Status::Ok
    } else if null_changed > 0 {
        Status::Regressed
    } else {
        match diff.map(|d| d.mean_diff) {
            Some(d) if d.abs() > b.tolerance => match (direction, d > 0.0) {
                (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
                    Status::Better
                }
                _ => Status::Regressed,
            },
            _ => Status::Ok,
        }
    };
    Line {
        metric: metric.to_string(),
        baseline: b.mean,
        now: stats::mean(&present(now)),
        diff,
        null_changed,
        allowed: b.tolerance,
        direction,
        status,
        ok: status != Status::Regressed,
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.6}"))
        .unwrap_or_else(|| "null".into())
}

/// The table `fleetsim check` prints: baseline and current means over the seeds, the mean
/// paired difference with its 95 % interval, the tolerance and the status.
pub fn render(lines: &[Line]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<36} {:>16} {:>16} {:>14} {:>30} {:>20}  status",
        "metric", "baseline mean", "now mean", "mean diff", "95% interval of diff", "tolerance"
    );
    for l in lines {
        let (delta, ci) = match (l.null_changed, l.diff) {
            (0, Some(d)) => (
                format!("{:+.6}", d.mean_diff),
                match (d.ci_low, d.ci_high) {
                    (Some(lo), Some(hi)) => format!("[{lo:+.6}, {hi:+.6}]"),
                    _ => "-".into(),
                },
            ),
            (0, None) => ("0".into(), "-".into()),
            (k, _) => (format!("null on {k}"), "-".into()),
        };
        let tol = if l.allowed == 0.0 {
            "exact".to_string()
        } else {
            format!("±{:.6}", l.allowed)
        };
        let tol = match l.direction {
            Direction::Both => tol,
            Direction::HigherIsBetter => format!("{tol} (fall)"),
            Direction::LowerIsBetter => format!("{tol} (rise)"),
            Direction::None => "(reported)".to_string(),
        };
        let _ = writeln!(
            s,
            "{:<36} {:>16} {:>16} {:>14} {:>30} {:>20}  {}",
            l.metric,
            num(l.baseline),
            num(l.now),
            delta,
            ci,
            tol,
            status_text(l)
        );
    }
    s
}

/// The status column: `ok`, `better (…)` or `REGRESSION (…)`, saying which way the mean
/// moved and which way is better.
pub fn status_text(l: &Line) -> String {
    let moved = match (l.null_changed, l.diff) {
        (0, Some(d)) if d.mean_diff > 0.0 => "rose",
        (0, _) => "fell",
        _ => "null on some seeds changed",
    };
    let better = match l.direction {
        Direction::HigherIsBetter => "; higher is better",
        Direction::LowerIsBetter => "; lower is better",
        Direction::Both => "; any change fails",
        Direction::None => "",
    };
    match l.status {
        Status::Ok => "ok".into(),
        Status::Better => format!("better ({moved}{better})"),
        Status::Regressed => format!("REGRESSION ({moved}{better})"),
    }
}

/// One regressed metric for the error message: name, baseline and current means, the
/// mean paired difference and the tolerance.
pub fn regression_text(l: &Line) -> String {
    let d = l
        .diff
        .map(|d| format!("{:+.6}", d.mean_diff))
        .unwrap_or_else(|| "-".into());
    format!(
        "{} {} (baseline {}, now {}, mean diff {d}, tolerance ±{:.6})",
        l.metric,
        status_text(l),
        num(l.baseline),
        num(l.now),
        l.allowed
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(occ: f64, p99: Option<f64>) -> Value {
        serde_json::json!({"scenario": "s", "seed": 1, "policy": {}, "occupancy": occ,
            "wait_s": {"p99": p99}, "jobs": {"censored": 0, "submitted": 4}})
    }

    fn runs(occ: &[f64], p99: &[f64]) -> Vec<Value> {
        occ.iter()
            .zip(p99)
            .map(|(&o, &w)| summary(o, Some(w)))
            .collect()
    }

    /// Tolerance by hand: occupancy 0.50, 0.52, 0.54, 0.56, 0.58 → mean 0.54, s = 0.0316228
    /// (squares 4+1+0+1+4 = 10 × 1e-4, / 4 = 2.5e-4), t(0.975, 4) = 2.7764451,
    /// tolerance = 2.7764451 × 0.0316228 / √5 = 0.0392648.
    #[test]
    fn tolerance_is_the_t_interval_of_the_mean() {
        let spec: CheckSpec = toml::from_str("metrics = [\"occupancy\", \"wait_s.p99\"]").unwrap();
        let s = runs(&[0.50, 0.52, 0.54, 0.56, 0.58], &[10.0; 5]);
        let b = baseline_of(&spec, &[1, 2, 3, 4, 5], &s).unwrap();
        let o = &b.metrics["occupancy"];
        assert!((o.mean.unwrap() - 0.54).abs() < 1e-12);
        assert!((o.tolerance - 0.039_264_8).abs() < 1e-6, "{}", o.tolerance);
        assert_eq!(o.direction, Direction::HigherIsBetter);
        // No spread: exact, unless a floor is declared.
        assert_eq!(b.metrics["wait_s.p99"].tolerance, 0.0);
        let floor: CheckSpec =
            toml::from_str("metrics = [\"wait_s.p99\"]\ntolerance.\"wait_s.p99\" = { rel = 0.1 }")
                .unwrap();
        let b2 = baseline_of(&floor, &[1, 2, 3, 4, 5], &s).unwrap();
        assert_eq!(b2.metrics["wait_s.p99"].tolerance, 1.0);
        // Round trip through the file format.
        let text = serde_json::to_string_pretty(&b).unwrap();
        assert_eq!(parse_baseline(&text).unwrap(), b);
    }

    #[test]
    fn paired_mean_difference_decides() {
        let spec: CheckSpec = toml::from_str("metrics = [\"occupancy\", \"wait_s.p99\"]").unwrap();
        let seeds = [1, 2, 3, 4, 5];
        let base = runs(
            &[0.50, 0.52, 0.54, 0.56, 0.58],
            &[100.0, 110.0, 90.0, 100.0, 100.0],
        );
        let b = baseline_of(&spec, &seeds, &base).unwrap();
        // Identical: ok.
        assert!(compare(&spec, &b, &base)
            .unwrap()
            .iter()
            .all(|l| l.status == Status::Ok));
        // Occupancy −0.03 on every seed (inside ±0.0393): ok; wait −50 s: better.
        let now = runs(
            &[0.47, 0.49, 0.51, 0.53, 0.55],
            &[50.0, 60.0, 40.0, 50.0, 50.0],
        );
        let r = compare(&spec, &b, &now).unwrap();
        assert_eq!(r[0].status, Status::Ok, "{}", render(&r));
        assert_eq!(r[1].status, Status::Better);
        assert_eq!(status_text(&r[1]), "better (fell; lower is better)");
        assert_eq!(r[1].diff.unwrap().mean_diff, -50.0);
        // Occupancy −0.05 on every seed: regression.
        let now = runs(
            &[0.45, 0.47, 0.49, 0.51, 0.53],
            &[100.0, 110.0, 90.0, 100.0, 100.0],
        );
        let r = compare(&spec, &b, &now).unwrap();
        assert_eq!(status_text(&r[0]), "REGRESSION (fell; higher is better)");
        assert!(
            regression_text(&r[0]).contains("baseline 0.540000, now 0.490000"),
            "{}",
            regression_text(&r[0])
        );
        // A seed's value becoming null fails.
        let mut now = base.clone();
        now[2]["wait_s"]["p99"] = Value::Null;
        let r = compare(&spec, &b, &now).unwrap();
        assert_eq!(r[1].status, Status::Regressed);
        assert_eq!(r[1].null_changed, 1);
        // Another scenario, or a metric the baseline lacks: bad input.
        let mut other = base.clone();
        other[0]["scenario"] = "t".into();
        assert!(compare(&spec, &b, &other).is_err());
        let more: CheckSpec = toml::from_str("metrics = [\"jobs.submitted\"]").unwrap();
        assert!(compare(&more, &b, &base)
            .unwrap_err()
            .0
            .contains("no metric"));
    }

    /// `direction = "both"` fails a move either way; an unknown metric defaults to both.
    #[test]
    fn declared_and_default_directions() {
        let both: CheckSpec = toml::from_str(
            "metrics = [\"wait_s.p99\", \"jobs.submitted\"]\n\
             tolerance.\"wait_s.p99\" = { direction = \"both\" }",
        )
        .unwrap();
        let base = runs(&[0.5; 3], &[10.0; 3]);
        let b = baseline_of(&both, &[1, 2, 3], &base).unwrap();
        assert_eq!(b.metrics["jobs.submitted"].direction, Direction::Both);
        let mut now = runs(&[0.5; 3], &[5.0; 3]);
        for s in &mut now {
            s["jobs"]["submitted"] = 5.into();
        }
        let r = compare(&both, &b, &now).unwrap();
        assert_eq!(status_text(&r[0]), "REGRESSION (fell; any change fails)");
        assert_eq!(status_text(&r[1]), "REGRESSION (rose; any change fails)");
    }

    #[test]
    fn bad_baselines_name_the_field() {
        let old = r#"{"scenario": "default", "seed": 42, "fleetsim_version": "0.1.0",
            "policy": {}, "metrics": {"occupancy": 0.5}}"#;
        let e = parse_baseline(old).unwrap_err();
        assert!(
            e.contains("single-seed baseline") && e.contains("--update"),
            "{e}"
        );
        let spec: CheckSpec = toml::from_str("metrics = [\"occupancy\"]").unwrap();
        let b = baseline_of(&spec, &[1, 2], &runs(&[0.5, 0.6], &[1.0, 1.0])).unwrap();
        let mut v = serde_json::to_value(&b).unwrap();
        v["metrics"]["occupancy"]["tolerance"] = "wide".into();
        let e = parse_baseline(&v.to_string()).unwrap_err();
        assert!(
            e.starts_with("field `metrics.occupancy.tolerance`: invalid type"),
            "{e}"
        );
        let mut v = serde_json::to_value(&b).unwrap();
        v["metrics"]["occupancy"]["values"] = serde_json::json!([0.5]);
        let e = parse_baseline(&v.to_string()).unwrap_err();
        assert_eq!(e, "field `metrics.occupancy.values`: 1 values for 2 seeds");
        let mut v = serde_json::to_value(&b).unwrap();
        v["format"] = 3.into();
        assert!(parse_baseline(&v.to_string())
            .unwrap_err()
            .starts_with("field `format`: 3"));
        assert!(baseline_of(&spec, &[1], &runs(&[0.5], &[1.0]))
            .unwrap_err()
            .0
            .contains("at least 2 seeds"));
    }
}
