//! `fleetsim check`: CI regression checks against a committed baseline.
//!
//! The scenario may declare which metrics are tracked and how far each may move:
//!
//! ```toml
//! [check]
//! metrics = ["occupancy", "wait_s.p99", "jobs.completed"]   # default: every metric of runs.csv
//! tolerance."wait_s.p99" = { rel = 0.05 }                   # ±5 % of the baseline
//! tolerance.occupancy = { abs = 0.002, direction = "higher-is-better" }
//! ```
//!
//! Every metric has a direction: the one [`crate::study::better`] gives for the metrics of
//! `runs.csv` (lower wait, JCT, slowdown, fragmentation, censored and rejected jobs and
//! makespan are better; higher occupancy, fairness, completed jobs and goodput are better),
//! or the one `direction` declares. A metric fails only when it moves in its bad direction
//! by more than `max(abs, rel × |baseline|)` (both default 0, since runs are deterministic);
//! a move in the good direction beyond the tolerance passes and is reported as `better`
//! (rewrite the baseline with `--update` to keep the gain). `direction = "both"` makes any
//! move beyond the tolerance fail; it is also the default for a metric of unknown direction
//! (any other dotted path into `summary.json`). A metric that is `null` (an empty sample)
//! passes only when it is `null` in the baseline too.
//!
//! The baseline (`reports/NAME.json`, written by `--update`) holds the scenario name, the
//! seed, the policy and the tracked metrics' values. A baseline of another scenario or seed,
//! or one lacking a tracked metric, is bad input (exit code 2), not a regression (exit 1).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::study::{metric_exists, metric_value, BadInput, Better, METRICS};

pub use crate::scenario::studies::{CheckSpec, Direction, Tolerance};

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
    /// either; or became / stopped being `null`): fails.
    Regressed,
}

/// A baseline file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Scenario name.
    pub scenario: String,
    /// Seed of the run.
    pub seed: u64,
    /// fleetsim version that wrote it.
    pub fleetsim_version: String,
    /// Policy names by stage (for the reader; not compared).
    pub policy: Value,
    /// Tracked metrics (`null` for an empty sample).
    pub metrics: BTreeMap<String, Option<f64>>,
}

/// One compared metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Metric.
    pub metric: String,
    /// Baseline value.
    pub baseline: Option<f64>,
    /// Value now.
    pub now: Option<f64>,
    /// Allowed deviation.
    pub allowed: f64,
    /// The tolerance as declared.
    pub tolerance: Tolerance,
    /// The direction applied ([`Tolerance::direction_for`]).
    pub direction: Direction,
    /// The outcome.
    pub status: Status,
    /// Passes: [`Status::Ok`] or [`Status::Better`].
    pub ok: bool,
}

/// Builds the baseline of a run.
///
/// # Errors
/// [`BadInput`] for a tracked metric that `summary.json` does not have.
pub fn baseline_of(spec: &CheckSpec, summary: &Value) -> Result<Baseline, BadInput> {
    let mut metrics = BTreeMap::new();
    for m in spec.tracked() {
        if !metric_exists(summary, &m) {
            return Err(crate::report::tracked::unknown_metric(&m, summary));
        }
        metrics.insert(m.clone(), metric_value(summary, &m));
    }
    Ok(Baseline {
        scenario: summary["scenario"].as_str().unwrap_or_default().to_string(),
        seed: summary["seed"].as_u64().unwrap_or_default(),
        fleetsim_version: env!("CARGO_PKG_VERSION").to_string(),
        policy: summary["policy"].clone(),
        metrics,
    })
}

/// Reads a baseline file.
///
/// # Errors
/// [`BadInput`] when it is missing or not a baseline.
pub fn read_baseline(path: &Path) -> Result<Baseline, BadInput> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        BadInput(format!(
            "{}: {e} (write a baseline with `fleetsim check SCENARIO --baseline {} --update`)",
            path.display(),
            path.display()
        ))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| BadInput(format!("{}: not a fleetsim baseline: {e}", path.display())))
}

/// Compares a run's summary with a baseline.
///
/// # Errors
/// [`BadInput`] when the baseline is of another scenario or seed, or lacks a tracked metric,
/// or a tracked metric is unknown.
pub fn compare(spec: &CheckSpec, base: &Baseline, summary: &Value) -> Result<Vec<Line>, BadInput> {
    let name = summary["scenario"].as_str().unwrap_or_default();
    if base.scenario != name {
        return Err(BadInput(format!(
            "the baseline is of scenario `{}`, this run is of `{name}`",
            base.scenario
        )));
    }
    let seed = summary["seed"].as_u64().unwrap_or_default();
    if base.seed != seed {
        return Err(BadInput(format!(
            "the baseline was run with seed {}, this run with seed {seed}",
            base.seed
        )));
    }
    let mut lines = Vec::new();
    for m in spec.tracked() {
        if !metric_exists(summary, &m) {
            return Err(crate::report::tracked::unknown_metric(&m, summary));
        }
        let Some(&b) = base.metrics.get(&m) else {
            return Err(BadInput(format!(
                "the baseline has no metric `{m}` (rewrite it with --update)"
            )));
        };
        let now = metric_value(summary, &m);
        let tol = spec.tolerance.get(&m).copied().unwrap_or_default();
        let direction = tol.direction_for(&m);
        let (status, allowed) = match (b, now) {
            (None, None) => (Status::Ok, 0.0),
            (Some(b), Some(n)) => {
                let allowed = tol.abs.max(tol.rel * b.abs());
                let d = n - b;
                let status = if d.abs() <= allowed || direction == Direction::None {
                    Status::Ok
                } else {
                    match (direction, d > 0.0) {
                        (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
                            Status::Better
                        }
                        _ => Status::Regressed,
                    }
                };
                (status, allowed)
            }
            _ if direction == Direction::None => (Status::Ok, 0.0),
            _ => (Status::Regressed, 0.0),
        };
        lines.push(Line {
            metric: m,
            baseline: b,
            now,
            allowed,
            tolerance: tol,
            direction,
            status,
            ok: status != Status::Regressed,
        });
    }
    Ok(lines)
}

fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.6}"))
        .unwrap_or_else(|| "null".into())
}

/// The table `fleetsim check` prints.
pub fn render(lines: &[Line]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<24} {:>18} {:>18} {:>14} {:>18}  status",
        "metric", "baseline", "now", "delta", "tolerance"
    );
    for l in lines {
        let delta = match (l.baseline, l.now) {
            (Some(b), Some(n)) => format!("{:+.6}", n - b),
            (None, None) => "0".into(),
            _ => "changed".into(),
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
            "{:<24} {:>18} {:>18} {:>14} {:>18}  {}",
            l.metric,
            num(l.baseline),
            num(l.now),
            delta,
            tol,
            status_text(l)
        );
    }
    s
}

/// The status column: `ok`, `better (…)` or `REGRESSION (…)`, saying which way it moved and
/// which way is better.
pub fn status_text(l: &Line) -> String {
    let moved = match (l.baseline, l.now) {
        (Some(b), Some(n)) if n > b => "rose",
        (Some(_), Some(_)) => "fell",
        (Some(_), None) => "became null",
        _ => "was null",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(occ: f64) -> Value {
        serde_json::json!({"scenario": "s", "seed": 1, "policy": {}, "occupancy": occ,
            "wait_s": {"p99": null}, "jobs": {"censored": 0, "submitted": 4}})
    }

    #[test]
    fn tolerances_and_directions() {
        let spec: CheckSpec = toml::from_str(
            "metrics = [\"occupancy\", \"wait_s.p99\", \"censored_pct\"]\n\
             tolerance.occupancy = { abs = 0.01, direction = \"higher-is-better\" }",
        )
        .unwrap();
        spec.validate().unwrap();
        let base = baseline_of(&spec, &summary(0.5)).unwrap();
        let ok = compare(&spec, &base, &summary(0.8)).unwrap();
        assert!(ok.iter().all(|l| l.ok), "{}", render(&ok));
        let bad = compare(&spec, &base, &summary(0.48)).unwrap();
        assert!(
            !bad[0].ok && bad[0].metric == "occupancy",
            "{}",
            render(&bad)
        );
        let exact = CheckSpec::default();
        let b = baseline_of(
            &CheckSpec {
                metrics: vec!["occupancy".into()],
                ..exact
            },
            &summary(0.5),
        )
        .unwrap();
        let mut other = summary(0.5);
        other["scenario"] = "t".into();
        assert!(compare(
            &CheckSpec {
                metrics: vec!["occupancy".into()],
                ..Default::default()
            },
            &b,
            &other
        )
        .is_err());
        let missing = CheckSpec {
            metrics: vec!["wait_s.p99".into()],
            ..Default::default()
        };
        assert!(compare(&missing, &b, &summary(0.5))
            .unwrap_err()
            .0
            .contains("no metric"));
    }

    /// Issue #23 defect 3: halving p99 wait (4,075 → 2,148 s) is an improvement, not a
    /// regression; doubling it is one, and the message says which way it moved.
    #[test]
    fn directions_come_from_the_metric() {
        let wait = |p99: f64| {
            serde_json::json!({"scenario": "s", "seed": 1, "policy": {}, "occupancy": 0.5,
                "wait_s": {"p99": p99}, "jobs": {"censored": 0, "submitted": 4}})
        };
        let spec: CheckSpec = toml::from_str("metrics = [\"wait_s.p99\", \"occupancy\"]").unwrap();
        let base = baseline_of(&spec, &wait(4075.0)).unwrap();
        let halved = compare(&spec, &base, &wait(2148.0)).unwrap();
        assert_eq!(halved[0].status, Status::Better, "{}", render(&halved));
        assert!(halved.iter().all(|l| l.ok));
        assert_eq!(status_text(&halved[0]), "better (fell; lower is better)");
        let doubled = compare(&spec, &base, &wait(8150.0)).unwrap();
        assert_eq!(doubled[0].status, Status::Regressed);
        assert_eq!(
            status_text(&doubled[0]),
            "REGRESSION (rose; lower is better)"
        );
        // Occupancy is higher-is-better by default: 0.5 → 0.4 regresses, 0.5 → 0.6 is better.
        let mut low = wait(4075.0);
        low["occupancy"] = 0.4.into();
        let r = compare(&spec, &base, &low).unwrap();
        assert_eq!(status_text(&r[1]), "REGRESSION (fell; higher is better)");
        low["occupancy"] = 0.6.into();
        assert_eq!(
            compare(&spec, &base, &low).unwrap()[1].status,
            Status::Better
        );
        // `direction = "both"` pins the value: the halving fails.
        let both: CheckSpec = toml::from_str(
            "metrics = [\"wait_s.p99\"]\ntolerance.\"wait_s.p99\" = { direction = \"both\" }",
        )
        .unwrap();
        let r = compare(&both, &base, &wait(2148.0)).unwrap();
        assert_eq!(status_text(&r[0]), "REGRESSION (fell; any change fails)");
        // A metric of unknown direction defaults to both.
        let odd: CheckSpec = toml::from_str("metrics = [\"jobs.submitted\"]").unwrap();
        let b = baseline_of(&odd, &wait(1.0)).unwrap();
        let mut more = wait(1.0);
        more["jobs"]["submitted"] = 5.into();
        assert_eq!(
            compare(&odd, &b, &more).unwrap()[0].status,
            Status::Regressed
        );
    }
}
