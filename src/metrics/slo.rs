//! Queueing SLOs (`[[metrics.slo]]`): targets on the queueing delay of the jobs of some
//! queues, a tier, or all jobs, and their attainment over the window and per time-series
//! interval.
//!
//! Two kinds, both "a share of jobs starts within a threshold":
//!
//! * `wait_quantile`: "the `quantile` wait is at most `target_s`" (p95 wait ≤ 5 min:
//!   `quantile = 0.95, target_s = 300`). Threshold `target_s`, required share `quantile`.
//!   The observed quantile is reported too (nearest rank over the counted jobs, a violated
//!   job that never started counting as an infinite wait, so `null` when the quantile falls
//!   among those).
//! * `start_within`: "`target_fraction` of jobs start within `within_s`" (95 % within
//!   10 min: `within_s = 600, target_fraction = 0.95`).
//!
//! With the nearest-rank quantile the two are the same test: the q-quantile wait is at most
//! `T` exactly when at least a share `q` of the counted jobs waited at most `T`.
//!
//! # Which jobs count
//! A job counts when it is *measured* (submitted inside the window, not pre-existing load:
//! [`JobRow::measured`]), belongs to the SLO's jobs (its queue is listed, its
//! queue's tier is the SLO's tier, or all jobs), and was queued: rejected jobs, and
//! cancelled jobs that never started, do not count. Its **deadline** is
//! `submit + threshold`. It is *decided* at its **decision instant**
//! `d = min(first start, deadline)`: it *met* the SLO when its first start is at or before
//! its deadline (wait = first start − submit ≤ threshold), else it *violated* it (at its
//! deadline, whether it started later or never). A job not started by the window end `b`
//! whose deadline is after `b` is *undecided* and left out (it could still have met it).
//!
//! * **Window**: attainment = met / (met + violated) over the jobs decided at or before `b`;
//!   the SLO is met when attainment ≥ the required share.
//! * **Interval** `[s, s + len)` of `timeseries.csv` (the last one includes `b`): the jobs
//!   whose decision instant falls in it. Each job is counted in exactly one interval, so the
//!   intervals' counts add up to the window's. An interval with no decided job has no
//!   attainment (empty in the CSV) and is not counted in `intervals`.
//!
//! Attainment is higher-is-better in `fleetsim check` and `compact` goals
//! (`slo.<name>.attainment`, `slo.<name>.interval_attainment`).

use std::collections::BTreeSet;

use fleetsim_policies::Tier;
use serde::{Deserialize, Serialize};

use crate::metrics::jobs::{FinalState, JobRow, JobSink};
use crate::metrics::stats::nearest_rank;
use crate::metrics::Occupancy;

/// The kind of a queueing SLO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SloKind {
    /// "The `quantile` wait is at most `target_s`."
    WaitQuantile,
    /// "A share `target_fraction` of jobs starts within `within_s`."
    StartWithin,
}

/// One `[[metrics.slo]]` entry.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SloSpec {
    /// Its name: the key under `summary.json` → `slo` and the `slo_<name>_*` columns of
    /// `timeseries.csv` (letters, digits, `-`, `_`; unique).
    pub name: String,
    /// `wait_quantile` or `start_within`.
    pub kind: SloKind,
    /// The jobs of these queues (names of `[[queues]]` or their `local_queues`); at most
    /// one of `queues` and `tier`; neither: all jobs.
    #[serde(default)]
    pub queues: Option<Vec<String>>,
    /// The jobs of the queues of this tier (queues not listed in `[[queues]]` are `batch`).
    #[serde(default)]
    pub tier: Option<Tier>,
    /// `wait_quantile`: the quantile, in (0, 1].
    #[serde(default)]
    pub quantile: Option<f64>,
    /// `wait_quantile`: the largest wait at that quantile, seconds (≥ 0).
    #[serde(default)]
    pub target_s: Option<f64>,
    /// `start_within`: the threshold on the wait, seconds (≥ 0).
    #[serde(default)]
    pub within_s: Option<f64>,
    /// `start_within`: the share of jobs that must start within `within_s`, in (0, 1].
    #[serde(default)]
    pub target_fraction: Option<f64>,
}

impl SloSpec {
    /// The wait threshold, ms, and the required share (validated specs only).
    pub fn threshold_and_share(&self) -> (u64, f64) {
        let (t, q) = match self.kind {
            SloKind::WaitQuantile => (self.target_s, self.quantile),
            SloKind::StartWithin => (self.within_s, self.target_fraction),
        };
        (
            fleetsim_policies::spec::secs_to_ms(t.unwrap_or(0.0)),
            q.unwrap_or(1.0),
        )
    }
}

/// A queue as the SLOs see it: its names and tier.
#[derive(Clone, Debug)]
pub struct SloQueue {
    /// The queue's name.
    pub name: String,
    /// Other names jobs reach it by (Kueue LocalQueues).
    pub local_queues: Vec<String>,
    /// Its tier.
    pub tier: Tier,
}

/// Checks `[[metrics.slo]]` against the scenario's queues.
///
/// # Errors
/// `(field, message)` for the first bad entry: an empty, malformed or repeated name, both
/// `queues` and `tier`, an empty `queues` list or an unknown queue, a quantile or share
/// outside (0, 1], a negative or non-finite threshold, a field of the other kind, or a
/// missing field of its kind.
pub fn validate(slos: &[SloSpec], queues: &[SloQueue]) -> Result<(), (String, String)> {
    let known: BTreeSet<&str> = queues
        .iter()
        .flat_map(|q| {
            std::iter::once(q.name.as_str()).chain(q.local_queues.iter().map(|s| s.as_str()))
        })
        .collect();
    let mut names = BTreeSet::new();
    for (i, s) in slos.iter().enumerate() {
        let f = |k: &str| format!("metrics.slo[{i}].{k}");
        if s.name.is_empty()
            || !s
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err((
                f("name"),
                format!(
                    "`{}`: must be non-empty letters, digits, `-` or `_`",
                    s.name
                ),
            ));
        }
        if !names.insert(s.name.as_str()) {
            return Err((f("name"), format!("`{}` is used twice", s.name)));
        }
        if s.queues.is_some() && s.tier.is_some() {
            return Err((f("tier"), "give `queues` or `tier`, not both".into()));
        }
        if let Some(qs) = &s.queues {
            if qs.is_empty() {
                return Err((
                    f("queues"),
                    "must name at least one queue (leave it out for all jobs)".into(),
                ));
            }
            for (j, q) in qs.iter().enumerate() {
                if !known.contains(q.as_str()) {
                    return Err((
                        format!("metrics.slo[{i}].queues[{j}]"),
                        format!("unknown queue `{q}` (not in `[[queues]]` nor a local queue)"),
                    ));
                }
            }
        }
        let (need, forbid) = match s.kind {
            SloKind::WaitQuantile => (
                [("quantile", s.quantile), ("target_s", s.target_s)],
                [
                    ("within_s", s.within_s),
                    ("target_fraction", s.target_fraction),
                ],
            ),
            SloKind::StartWithin => (
                [
                    ("target_fraction", s.target_fraction),
                    ("within_s", s.within_s),
                ],
                [("quantile", s.quantile), ("target_s", s.target_s)],
            ),
        };
        for (k, v) in forbid {
            if v.is_some() {
                return Err((f(k), format!("not a field of kind `{}`", kind_name(s.kind))));
            }
        }
        let [(share_k, share), (time_k, time)] = need;
        let share = share.ok_or_else(|| {
            (
                f(share_k),
                format!("required by kind `{}`", kind_name(s.kind)),
            )
        })?;
        let time = time.ok_or_else(|| {
            (
                f(time_k),
                format!("required by kind `{}`", kind_name(s.kind)),
            )
        })?;
        if !(share.is_finite() && share > 0.0 && share <= 1.0) {
            return Err((f(share_k), format!("must be in (0, 1], got {share}")));
        }
        if !(time.is_finite() && time >= 0.0) {
            return Err((
                f(time_k),
                format!("must be a number ≥ 0 seconds, got {time}"),
            ));
        }
    }
    Ok(())
}

fn kind_name(k: SloKind) -> &'static str {
    k.as_str()
}

impl SloKind {
    /// The name scenarios use.
    pub fn as_str(self) -> &'static str {
        match self {
            SloKind::WaitQuantile => "wait_quantile",
            SloKind::StartWithin => "start_within",
        }
    }
}

/// One counted job: submit and first start, ms, and which SLOs it belongs to (bit `i`: SLO
/// `i`).
#[derive(Clone, Copy, Debug)]
struct SloJob {
    submit: u64,
    start: Option<u64>,
    slos: u64,
}

/// Most SLOs a scenario may give (one bit each per job).
pub const MAX_SLOS: usize = 64;

/// Collects the jobs the SLOs count from the per-job rows (a [`JobSink`]), in the order
/// rows are written; [`SloTracker::report`] computes attainment at the end.
#[derive(Clone, Debug)]
pub struct SloTracker {
    specs: Vec<SloSpec>,
    queues: Vec<SloQueue>,
    jobs: Vec<SloJob>,
}

impl SloTracker {
    /// A tracker of validated `specs` (at most [`MAX_SLOS`]) over the scenario's `queues`.
    pub fn new(specs: Vec<SloSpec>, queues: Vec<SloQueue>) -> SloTracker {
        SloTracker {
            specs,
            queues,
            jobs: Vec::new(),
        }
    }

    fn tier_of(&self, queue: &str) -> Tier {
        self.queues
            .iter()
            .find(|q| q.name == queue || q.local_queues.iter().any(|l| l == queue))
            .map_or(Tier::default(), |q| q.tier)
    }

    fn selects(&self, s: &SloSpec, queue: &str) -> bool {
        match (&s.queues, s.tier) {
            (Some(qs), _) => qs.iter().any(|q| {
                q == queue
                    || self
                        .queues
                        .iter()
                        .any(|k| k.name == *q && k.local_queues.iter().any(|l| l == queue))
            }),
            (None, Some(t)) => self.tier_of(queue) == t,
            (None, None) => true,
        }
    }

    /// The attainment of every SLO over the window of `occ` and per series interval.
    pub fn report(&self, occ: &Occupancy) -> Vec<SloResult> {
        let b = occ.window_end.0;
        let bounds: Vec<u64> = occ.series.iter().map(|r| r.start.0).collect();
        self.specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (thr, share) = s.threshold_and_share();
                let mut met = 0u64;
                let mut violated = 0u64;
                let mut undecided = 0u64;
                let mut per = vec![(0u64, 0u64); bounds.len()];
                // Waits of decided jobs; `None`: violated without a start (infinite).
                let mut waits: Vec<u64> = Vec::new();
                for j in self.jobs.iter().filter(|j| (j.slos >> i) & 1 == 1) {
                    let deadline = j.submit.saturating_add(thr);
                    let (d, ok) = match j.start {
                        Some(st) if st <= deadline => (st, true),
                        _ => (deadline, false),
                    };
                    let decided = match j.start {
                        Some(_) => true,
                        None => deadline <= b,
                    };
                    if !decided || d > b {
                        undecided += 1;
                        continue;
                    }
                    if ok {
                        met += 1;
                    } else {
                        violated += 1;
                    }
                    waits.push(j.start.map_or(u64::MAX, |st| st - j.submit));
                    // The interval holding `d`: the last whose start is ≤ d.
                    let k = bounds.partition_point(|&s0| s0 <= d);
                    if k > 0 {
                        let e = &mut per[k - 1];
                        if ok {
                            e.0 += 1;
                        } else {
                            e.1 += 1;
                        }
                    }
                }
                waits.sort_unstable();
                let n = met + violated;
                let attainment = (n > 0).then(|| met as f64 / n as f64);
                let intervals: Vec<IntervalSlo> = per
                    .iter()
                    .map(|&(m, v)| IntervalSlo {
                        met: m,
                        violated: v,
                        attainment: (m + v > 0).then(|| m as f64 / (m + v) as f64),
                    })
                    .collect();
                let counted = intervals.iter().filter(|x| x.attainment.is_some());
                let intervals_counted = counted.clone().count() as u64;
                let intervals_met = counted
                    .filter(|x| x.attainment.is_some_and(|a| a >= share))
                    .count() as u64;
                SloResult {
                    name: s.name.clone(),
                    kind: s.kind,
                    threshold_s: thr as f64 / 1000.0,
                    target_fraction: share,
                    jobs: n,
                    met_jobs: met,
                    violated_jobs: violated,
                    undecided_jobs: undecided,
                    attainment,
                    met: attainment.map(|a| a >= share),
                    wait_s_at_quantile: match s.kind {
                        SloKind::WaitQuantile => nearest_rank(&waits, share)
                            .filter(|&w| w != u64::MAX)
                            .map(|w| w as f64 / 1000.0),
                        SloKind::StartWithin => None,
                    },
                    intervals: intervals_counted,
                    intervals_met,
                    interval_attainment: (intervals_counted > 0)
                        .then(|| intervals_met as f64 / intervals_counted as f64),
                    per_interval: intervals,
                }
            })
            .collect()
    }
}

impl JobSink for SloTracker {
    fn write(&mut self, row: &JobRow) -> std::io::Result<()> {
        if !row.measured
            || row.state == FinalState::Rejected
            || (row.state == FinalState::Cancelled && row.start.is_none())
        {
            return Ok(());
        }
        let mut slos = 0u64;
        for (i, s) in self.specs.iter().enumerate() {
            if self.selects(s, &row.queue) {
                slos |= 1 << i;
            }
        }
        if slos != 0 {
            self.jobs.push(SloJob {
                submit: row.submit.0,
                start: row.start.map(|s| s.0),
                slos,
            });
        }
        Ok(())
    }
}

/// One interval's figures of one SLO.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalSlo {
    /// Jobs decided in the interval that met the SLO.
    pub met: u64,
    /// Jobs decided in the interval that violated it.
    pub violated: u64,
    /// met / (met + violated); `None` when no job was decided in it.
    pub attainment: Option<f64>,
}

/// One SLO's figures (`summary.json` → `slo.<name>`).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SloResult {
    /// Its name.
    #[serde(skip)]
    pub name: String,
    /// `wait_quantile` or `start_within`.
    pub kind: SloKind,
    /// The wait threshold (`target_s` or `within_s`), seconds.
    pub threshold_s: f64,
    /// The share of jobs required within the threshold (`quantile` or `target_fraction`).
    pub target_fraction: f64,
    /// Decided jobs over the window (met + violated).
    pub jobs: u64,
    /// Jobs that started within the threshold.
    pub met_jobs: u64,
    /// Jobs that did not (started later, or still waiting at their deadline).
    pub violated_jobs: u64,
    /// Jobs still waiting at the window end before their deadline (left out).
    pub undecided_jobs: u64,
    /// met_jobs / jobs over the window; `null` when no job was decided.
    pub attainment: Option<f64>,
    /// attainment ≥ target_fraction; `null` when no job was decided.
    pub met: Option<bool>,
    /// `wait_quantile`: the observed wait at the quantile (nearest rank), seconds; `null`
    /// when it falls among jobs that never started (or for `start_within`).
    pub wait_s_at_quantile: Option<f64>,
    /// Time-series intervals with at least one decided job.
    pub intervals: u64,
    /// Of those, intervals whose attainment reached target_fraction.
    pub intervals_met: u64,
    /// intervals_met / intervals; `null` when no interval counted.
    pub interval_attainment: Option<f64>,
    /// Per series interval (for `timeseries.csv`; not in the summary).
    #[serde(skip)]
    #[schemars(skip)]
    pub per_interval: Vec<IntervalSlo>,
}

/// The `slo` section of `summary.json`: by SLO name (absent without `[[metrics.slo]]`).
pub fn summary_section(results: &[SloResult]) -> std::collections::BTreeMap<String, SloResult> {
    results
        .iter()
        .map(|r| (r.name.clone(), r.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(toml_text: &str) -> SloSpec {
        toml::from_str(toml_text).expect("parses")
    }

    fn queues() -> Vec<SloQueue> {
        vec![
            SloQueue {
                name: "prod".into(),
                local_queues: vec!["prod-lq".into()],
                tier: Tier::Production,
            },
            SloQueue {
                name: "dev".into(),
                local_queues: vec![],
                tier: Tier::Batch,
            },
        ]
    }

    #[test]
    fn bad_values_name_their_field() {
        let cases = [
            (
                "name = \"a\"\nkind = \"wait_quantile\"\nquantile = 1.5\ntarget_s = 300",
                "metrics.slo[0].quantile",
            ),
            (
                "name = \"a\"\nkind = \"wait_quantile\"\nquantile = 0.0\ntarget_s = 300",
                "metrics.slo[0].quantile",
            ),
            (
                "name = \"a\"\nkind = \"wait_quantile\"\nquantile = 0.9\ntarget_s = -1",
                "metrics.slo[0].target_s",
            ),
            (
                "name = \"a\"\nkind = \"start_within\"\nwithin_s = -5\ntarget_fraction = 0.9",
                "metrics.slo[0].within_s",
            ),
            (
                "name = \"a\"\nkind = \"start_within\"\nwithin_s = 5\ntarget_fraction = 0",
                "metrics.slo[0].target_fraction",
            ),
            (
                "name = \"a\"\nkind = \"start_within\"\nwithin_s = 5",
                "metrics.slo[0].target_fraction",
            ),
            (
                "name = \"a\"\nkind = \"start_within\"\nwithin_s = 5\ntarget_fraction = 0.9\nquantile = 0.9",
                "metrics.slo[0].quantile",
            ),
            (
                "name = \"a\"\nkind = \"start_within\"\nwithin_s = 5\ntarget_fraction = 0.9\nqueues = [\"nope\"]",
                "metrics.slo[0].queues[0]",
            ),
            (
                "name = \"a\"\nkind = \"start_within\"\nwithin_s = 5\ntarget_fraction = 0.9\nqueues = []",
                "metrics.slo[0].queues",
            ),
            (
                "name = \"a\"\nkind = \"start_within\"\nwithin_s = 5\ntarget_fraction = 0.9\nqueues = [\"dev\"]\ntier = \"batch\"",
                "metrics.slo[0].tier",
            ),
            (
                "name = \"a b\"\nkind = \"start_within\"\nwithin_s = 5\ntarget_fraction = 0.9",
                "metrics.slo[0].name",
            ),
        ];
        for (text, field) in cases {
            let err = validate(&[spec(text)], &queues()).expect_err(text);
            assert_eq!(err.0, field, "{text}: {}", err.1);
        }
        let ok = spec("name = \"a\"\nkind = \"start_within\"\nwithin_s = 5\ntarget_fraction = 1\nqueues = [\"prod-lq\", \"dev\"]");
        validate(std::slice::from_ref(&ok), &queues()).expect("valid");
        let err = validate(&[ok.clone(), ok], &queues()).expect_err("twice");
        assert_eq!(err.0, "metrics.slo[1].name");
        // Unknown keys are refused by the parser.
        assert!(toml::from_str::<SloSpec>(
            "name = \"a\"\nkind = \"start_within\"\nwithin_s = 5\ntarget_fraction = 1\nq = 1"
        )
        .is_err());
    }
}
