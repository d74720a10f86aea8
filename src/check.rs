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
//! The scenario's `[check] metrics` and the baseline's metrics must be the same set: a
//! metric one has and the other lacks is refused, naming it (a metric dropped from the
//! scenario is not silently dropped from the gate; rewrite the baseline with `--update` to
//! stop tracking it). A name in `[check] metrics` that is no number of `summary.json` is
//! refused when the scenario is read (`fleetsim validate` too), naming the field and listing
//! the known metrics ([`crate::report::tracked::metric_in_summary_schema`]).
//!
//! A baseline of another scenario, one whose metrics differ from the scenario's, a malformed
//! one (the error names the file and the field: a seed listed twice, a `mean` or `sd` that
//! disagrees with the metric's `values` — a hand edit) and a single-seed baseline of an older
//! fleetsim (refused, with the command that rewrites it) are bad input (exit code 2), not a
//! regression (exit 1). So are `--seed` and `--seeds` whose seeds would pass the largest
//! seed, 2⁶⁴ − 1 ([`seed_range`]).
//!
//! The runs' warnings are printed once each, with the seeds they apply to; warnings that
//! differ only in their figures (a job count that depends on the seed) are one warning,
//! each varying figure shown as its range over the seeds ([`seed_warnings`]).

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

    /// Checks names and ranges; returns `(field, message)` for the first problem.
    ///
    /// # Errors
    /// A metric that is no number of `summary.json` (the message lists the known ones), a
    /// metric listed twice, a negative or non-finite tolerance, or a tolerance for an
    /// untracked metric.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (i, m) in self.metrics.iter().enumerate() {
            if !crate::report::tracked::metric_in_summary_schema(m) {
                return Err((
                    format!("check.metrics[{i}]"),
                    crate::report::tracked::unknown_metric_static(m),
                ));
            }
            if self.metrics[..i].contains(m) {
                return Err((
                    format!("check.metrics[{i}]"),
                    format!("`{m}` is listed twice"),
                ));
            }
        }
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
    if let Some(i) = (1..b.seeds.len()).find(|&i| b.seeds[..i].contains(&b.seeds[i])) {
        return Err(format!(
            "field `seeds[{i}]`: seed {} is listed twice (paired seeds must differ); {rewrite}",
            b.seeds[i]
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
        let have = present(&m.values);
        if let Some(v) = have.iter().find(|v| !v.is_finite()) {
            return Err(format!(
                "field `metrics.{name}.values`: {v} is not a finite number"
            ));
        }
        for (field, written, derived) in [
            ("mean", m.mean, stats::mean(&have)),
            ("sd", m.sd, stats::sd(&have)),
        ] {
            if !agrees(written, derived, &have) {
                let show = |v: Option<f64>| v.map_or_else(|| "null".to_string(), |x| x.to_string());
                return Err(format!(
                    "field `metrics.{name}.{field}`: {} disagrees with the metric's values ({} over the seeds with a value); was it edited by hand? {rewrite}",
                    show(written),
                    show(derived)
                ));
            }
        }
    }
    Ok(b)
}

/// True when a baseline's `written` mean or sd is the one its values give (`derived`), up
/// to the rounding of a JSON round trip: within 10⁻⁹ of the largest value's magnitude.
fn agrees(written: Option<f64>, derived: Option<f64>, values: &[f64]) -> bool {
    match (written, derived) {
        (None, None) => true,
        (Some(w), Some(d)) => {
            let scale = values.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            w.is_finite() && (w - d).abs() <= 1e-9 * scale.max(f64::MIN_POSITIVE)
        }
        _ => false,
    }
}

/// The `n` seeds of a new baseline: `first`, `first + 1`, …, `first + n − 1`.
///
/// # Errors
/// [`BadInput`] naming the flags when the last seed would pass 2⁶⁴ − 1 (`first_from`: where
/// `first` came from, `--seed N` or the scenario's `seed`).
pub fn seed_range(first: u64, n: u64, first_from: &str) -> Result<Vec<u64>, BadInput> {
    match first.checked_add(n.saturating_sub(1)) {
        Some(_) => Ok((0..n).map(|i| first + i).collect()),
        None => Err(BadInput(format!(
            "{first_from} with --seeds {n}: the seeds {first}, {first} + 1, … would pass the largest seed, {}; give a first seed of at most {}",
            u64::MAX,
            u64::MAX - (n - 1)
        ))),
    }
}

/// Seeds as a short list: runs of consecutive seeds as `a..=b`.
fn seed_list(seeds: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < seeds.len() {
        let mut j = i;
        while j + 1 < seeds.len() && seeds[j].checked_add(1) == Some(seeds[j + 1]) {
            j += 1;
        }
        parts.push(match j - i {
            0 => seeds[i].to_string(),
            1 => format!("{}, {}", seeds[i], seeds[j]),
            _ => format!("{}..={}", seeds[i], seeds[j]),
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// A warning split into its text between figures and its figures (runs of digits, with a
/// decimal part).
fn figures(w: &str) -> (Vec<&str>, Vec<&str>) {
    let (mut text, mut nums) = (Vec::new(), Vec::new());
    let b = w.as_bytes();
    let (mut i, mut from) = (0, 0);
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            text.push(&w[from..start]);
            nums.push(&w[start..i]);
            from = i;
        } else {
            i += 1;
        }
    }
    text.push(&w[from..]);
    (text, nums)
}

/// The warnings of runs on `seeds` (one summary per seed, in order: `summary.json` →
/// `warnings`), each once, in order of first appearance, with the seeds it applies to
/// (`(seeds 42..=46)`). Warnings that differ only in their figures are one: a figure that
/// varies over the seeds is shown as its range (`53–75`).
pub fn seed_warnings(seeds: &[u64], summaries: &[Value]) -> Vec<String> {
    assert_eq!(seeds.len(), summaries.len(), "one summary per seed");
    /// A warning's text between figures, its place among the run's warnings of that text
    /// (two of one run stay apart), and the figures and seed of each run that printed it.
    type Group = (Vec<String>, usize, Vec<(Vec<String>, u64)>);
    let mut groups: Vec<Group> = Vec::new();
    for (&seed, s) in seeds.iter().zip(summaries) {
        let mut here: Vec<&str> = Vec::new();
        for w in s["warnings"].as_array().into_iter().flatten() {
            if let Some(w) = w.as_str().filter(|w| !here.contains(w)) {
                here.push(w);
            }
        }
        let mut seen: Vec<Vec<String>> = Vec::new();
        for w in here {
            let (text, nums) = figures(w);
            let text: Vec<String> = text.into_iter().map(str::to_string).collect();
            let nums: Vec<String> = nums.into_iter().map(str::to_string).collect();
            let nth = seen.iter().filter(|t| **t == text).count();
            seen.push(text.clone());
            match groups.iter_mut().find(|(t, n, _)| *t == text && *n == nth) {
                Some((_, _, runs)) => runs.push((nums, seed)),
                None => groups.push((text, nth, vec![(nums, seed)])),
            }
        }
    }
    groups
        .into_iter()
        .map(|(text, _, runs)| {
            let mut out = String::new();
            for (k, t) in text.iter().enumerate() {
                out.push_str(t);
                let Some(first) = runs[0].0.get(k) else {
                    continue;
                };
                let parsed: Vec<(f64, &str)> = runs
                    .iter()
                    .map(|(n, _)| (n[k].parse::<f64>().unwrap_or(f64::NAN), n[k].as_str()))
                    .collect();
                let lo = parsed
                    .iter()
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|x| x.1);
                let hi = parsed
                    .iter()
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|x| x.1);
                match (lo, hi) {
                    (Some(lo), Some(hi)) if lo != hi => {
                        let _ = write!(out, "{lo}–{hi}");
                    }
                    _ => out.push_str(first),
                }
            }
            let on: Vec<u64> = runs.iter().map(|r| r.1).collect();
            let _ = write!(
                out,
                " ({} {})",
                if on.len() == 1 { "seed" } else { "seeds" },
                seed_list(&on)
            );
            out
        })
        .collect()
}

/// Refuses a baseline whose metrics are not the ones the scenario's `[check] metrics`
/// tracks, naming them (checked before the runs, and by [`compare`]).
///
/// # Errors
/// [`BadInput`]: a metric the baseline tracks and the scenario does not, or the reverse.
pub fn same_metrics(spec: &CheckSpec, base: &Baseline) -> Result<(), BadInput> {
    let tracked = spec.tracked();
    let dropped: Vec<String> = base
        .metrics
        .keys()
        .filter(|m| !tracked.contains(m))
        .map(|m| format!("`{m}`"))
        .collect();
    if !dropped.is_empty() {
        let it = if dropped.len() == 1 { "it" } else { "them" };
        return Err(BadInput(format!(
            "the baseline tracks {}, which the scenario's [check] metrics does not list: list {it} again, or rewrite the baseline with --update to stop tracking {it}",
            dropped.join(", ")
        )));
    }
    match tracked.iter().find(|m| !base.metrics.contains_key(*m)) {
        Some(m) => Err(BadInput(format!(
            "the baseline has no metric `{m}` (rewrite it with --update)"
        ))),
        None => Ok(()),
    }
}

/// Compares runs on the baseline's seeds (one summary per seed, in order) with the baseline.
///
/// # Errors
/// [`BadInput`] when the baseline is of another scenario, lacks a tracked metric or tracks
/// one the scenario does not, or a tracked metric is unknown.
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
    same_metrics(spec, base)?;
    let tracked = spec.tracked();
    let mut lines = Vec::new();
    for m in tracked {
        let mut now = Vec::with_capacity(summaries.len());
        for s in summaries {
            if !metric_exists(s, &m) {
                return Err(crate::report::tracked::unknown_metric(&m, s));
            }
            now.push(metric_value(s, &m));
        }
        let b = &base.metrics[&m];
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
        let more: CheckSpec =
            toml::from_str("metrics = [\"occupancy\", \"wait_s.p99\", \"jobs.submitted\"]")
                .unwrap();
        assert_eq!(
            compare(&more, &b, &base).unwrap_err().0,
            "the baseline has no metric `jobs.submitted` (rewrite it with --update)"
        );
    }

    /// A metric the baseline tracks and the scenario's `[check] metrics` no longer lists is
    /// refused, naming it, not dropped from the gate.
    #[test]
    fn a_metric_dropped_from_the_scenario_is_refused_not_skipped() {
        let spec: CheckSpec = toml::from_str("metrics = [\"occupancy\", \"wait_s.p99\"]").unwrap();
        let base = runs(&[0.5, 0.6, 0.7], &[1.0, 2.0, 3.0]);
        let b = baseline_of(&spec, &[1, 2, 3], &base).unwrap();
        let fewer: CheckSpec = toml::from_str("metrics = [\"occupancy\"]").unwrap();
        assert_eq!(
            compare(&fewer, &b, &base).unwrap_err().0,
            "the baseline tracks `wait_s.p99`, which the scenario's [check] metrics does not list: list it again, or rewrite the baseline with --update to stop tracking it"
        );
        let other: CheckSpec = toml::from_str("metrics = [\"jobs.submitted\"]").unwrap();
        assert!(compare(&other, &b, &base)
            .unwrap_err()
            .0
            .starts_with("the baseline tracks `occupancy`, `wait_s.p99`, which"));
    }

    /// A hand-edited mean or sd, a seed listed twice and non-finite values are refused,
    /// naming the field; a JSON round trip's rounding is not.
    #[test]
    fn a_baseline_must_agree_with_its_own_values() {
        let spec: CheckSpec = toml::from_str("metrics = [\"occupancy\", \"wait_s.p99\"]").unwrap();
        // occupancy 0.50, 0.52, 0.54 → mean 0.52, sd 0.02.
        let b = baseline_of(&spec, &[1, 2, 3], &runs(&[0.50, 0.52, 0.54], &[1.0; 3])).unwrap();
        let v = serde_json::to_value(&b).unwrap();
        assert_eq!(parse_baseline(&v.to_string()).unwrap(), b);
        let with = |path: &[&str], x: Value| {
            let mut v = v.clone();
            let mut at = &mut v;
            for k in path {
                at = &mut at[*k];
            }
            *at = x;
            parse_baseline(&v.to_string())
        };
        let rewrite = "rewrite it with `fleetsim check SCENARIO --baseline FILE --update`";
        assert_eq!(
            with(&["metrics", "occupancy", "mean"], 0.7.into()).unwrap_err(),
            format!("field `metrics.occupancy.mean`: 0.7 disagrees with the metric's values (0.52 over the seeds with a value); was it edited by hand? {rewrite}")
        );
        let e = with(&["metrics", "occupancy", "sd"], 0.5.into()).unwrap_err();
        assert!(
            e.starts_with("field `metrics.occupancy.sd`: 0.5 disagrees"),
            "{e}"
        );
        let e = with(&["metrics", "wait_s.p99", "mean"], Value::Null).unwrap_err();
        assert!(
            e.starts_with(
                "field `metrics.wait_s.p99.mean`: null disagrees with the metric's values (1 over"
            ),
            "{e}"
        );
        // Values edited without the mean: refused too.
        let e = with(
            &["metrics", "occupancy", "values"],
            serde_json::json!([0.5, 0.52, 0.9]),
        )
        .unwrap_err();
        assert!(e.starts_with("field `metrics.occupancy.mean`: 0.52"), "{e}");
        // A change far below the rounding of a round trip passes: 0.52 × (1 + 1e-15).
        assert!(with(
            &["metrics", "occupancy", "mean"],
            (0.52 * (1.0 + 1e-15)).into()
        )
        .is_ok());
        assert_eq!(
            with(&["seeds"], serde_json::json!([1, 2, 1])).unwrap_err(),
            format!(
                "field `seeds[2]`: seed 1 is listed twice (paired seeds must differ); {rewrite}"
            )
        );
    }

    #[test]
    fn seeds_past_the_largest_are_refused_naming_the_flags() {
        assert_eq!(seed_range(42, 3, "--seed 42").unwrap(), [42, 43, 44]);
        assert_eq!(
            seed_range(u64::MAX - 4, 5, "--seed x").unwrap(),
            [
                u64::MAX - 4,
                u64::MAX - 3,
                u64::MAX - 2,
                u64::MAX - 1,
                u64::MAX
            ]
        );
        assert_eq!(
            seed_range(u64::MAX, 5, "--seed 18446744073709551615").unwrap_err().0,
            "--seed 18446744073709551615 with --seeds 5: the seeds 18446744073709551615, 18446744073709551615 + 1, … would pass the largest seed, 18446744073709551615; give a first seed of at most 18446744073709551611"
        );
    }

    /// Warnings once each with their seeds; figures that vary by seed as their range.
    #[test]
    fn warnings_are_printed_once_with_their_seeds() {
        let w = |ws: &[&str]| serde_json::json!({ "warnings": ws });
        let seeds = [42, 43, 44, 45, 47];
        let summaries = [
            w(&["none of the 75 jobs has a limit", "cell c is idle"]),
            w(&["none of the 54 jobs has a limit", "cell c is idle"]),
            w(&["none of the 59 jobs has a limit"]),
            w(&["none of the 59 jobs has a limit", "rate 1.5 per hour"]),
            w(&[
                "none of the 53 jobs has a limit",
                "cell 1 lost 2 nodes",
                "cell 1 lost 2 nodes",
                "cell 2 lost 4 nodes",
            ]),
        ];
        // Two warnings of one run that differ only in figures stay two; a repeat is one.
        assert_eq!(
            seed_warnings(&seeds, &summaries),
            [
                "none of the 53–75 jobs has a limit (seeds 42..=45, 47)",
                "cell c is idle (seeds 42, 43)",
                "rate 1.5 per hour (seed 45)",
                "cell 1 lost 2 nodes (seed 47)",
                "cell 2 lost 4 nodes (seed 47)",
            ]
        );
        assert_eq!(seed_list(&[1, 2, 3, 5, 6, 9]), "1..=3, 5, 6, 9");
        assert_eq!(
            figures("v1.5 of 10 s."),
            (vec!["v", " of ", " s."], vec!["1.5", "10"])
        );
    }

    /// `[check] metrics` names are checked when the scenario is read.
    #[test]
    fn unknown_or_repeated_metrics_are_refused_naming_the_field() {
        let spec: CheckSpec = toml::from_str("metrics = [\"occupancy\", \"wait_s.p98\"]").unwrap();
        let (field, m) = spec.validate().unwrap_err();
        assert_eq!(field, "check.metrics[1]");
        assert!(
            m.starts_with("unknown metric `wait_s.p98`: not a number of summary.json")
                && m.contains("known metrics: occupancy, allocated_occupancy"),
            "{m}"
        );
        let spec: CheckSpec = toml::from_str("metrics = [\"occupancy\", \"occupancy\"]").unwrap();
        assert_eq!(
            spec.validate().unwrap_err(),
            (
                "check.metrics[1]".into(),
                "`occupancy` is listed twice".into()
            )
        );
        let spec: CheckSpec =
            toml::from_str("metrics = [\"tenants.a.wait_s.p95\", \"censored_pct\"]").unwrap();
        assert!(spec.validate().is_ok());
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
