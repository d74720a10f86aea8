//! The scenario's study tables, `[sweep]` and `[check]`, as the scenario file reads them.
//! What the studies do with them is in [`crate::sweep`] and [`crate::check`]; the types live
//! here so that the schema depends on no study module.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `[sweep]` table.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Seeds: a count (scenario seed, +1, …) or a list (default: the scenario seed).
    #[serde(default)]
    pub seeds: Option<Seeds>,
    /// Axes, outermost first.
    #[serde(default)]
    pub axes: Vec<AxisSpec>,
}

/// Seeds of a sweep or comparison.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Seeds {
    /// `n` seeds: `s, s+1, …, s+n−1` from the scenario seed `s`.
    Count(u64),
    /// These seeds.
    List(Vec<u64>),
}

impl Seeds {
    /// The seeds, given the scenario seed.
    pub fn resolve(&self, base: u64) -> Vec<u64> {
        match self {
            Seeds::Count(n) => (0..*n).map(|i| base.wrapping_add(i)).collect(),
            Seeds::List(v) => v.clone(),
        }
    }
}

impl Seeds {
    /// How many seeds, without listing them.
    pub fn count(&self) -> u64 {
        match self {
            Seeds::Count(n) => *n,
            Seeds::List(v) => v.len() as u64,
        }
    }
}

/// One axis.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// Dotted path of the scenario field.
    pub param: String,
    /// Values, in order.
    #[schemars(with = "Vec<serde_json::Value>")]
    pub values: Vec<toml::Value>,
    /// Optional names of the values (default: the value as text).
    #[serde(default)]
    pub labels: Vec<String>,
}

/// The `[check]` table.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// Tracked metrics (default: every metric of [`METRICS`](crate::study::METRICS)): each a
    /// dotted path to a number of `summary.json` (refused otherwise, and when listed twice);
    /// a baseline must track exactly these.
    #[serde(default)]
    pub metrics: Vec<String>,
    /// Tolerance floors and directions by metric (default: no floor, so a metric's tolerance
    /// is the Student-t 95 % half-width of its mean over the baseline's seeds).
    #[serde(default)]
    pub tolerance: BTreeMap<String, Tolerance>,
}

/// A floor under how far a metric may move (its baseline's tolerance is the larger of the
/// floors and the seeds' spread), and which moves fail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    /// Absolute floor, in the metric's unit (≥ 0; default 0).
    #[serde(default)]
    pub abs: f64,
    /// Relative floor, a fraction of the baseline mean's magnitude (≥ 0; default 0).
    #[serde(default)]
    pub rel: f64,
    /// Which moves fail (default: the metric's own direction, [`crate::study::better`];
    /// `both` for a metric of unknown direction).
    #[serde(default)]
    pub direction: Option<Direction>,
}

/// Which moves beyond the tolerance fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Any move.
    Both,
    /// Only a fall.
    HigherIsBetter,
    /// Only a rise.
    LowerIsBetter,
    /// No move fails: the metric is reported for context (the default for a metric shown
    /// beside another, such as `allocated_occupancy`).
    None,
}
