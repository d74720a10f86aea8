//! The metrics studies track (`runs.csv`, `compare`, `check`), which way each improves, and
//! how to read one from a `summary.json`; with [`BadInput`], the error of a study's bad input.
//! Below the study modules, so that reports can use them and studies can use reports.

use serde_json::Value;

/// An error that is the input's fault (a bad axis, shard, baseline or goal): the CLI exits
/// with code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Higher is better (occupancy, completed jobs).
    Higher,
    /// Lower is better (waits, JCT, slowdown, censored jobs).
    Lower,
}

/// A metric reports track.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Its key: a dotted path into `summary.json`, or a derived name ([`metric_value`]).
    pub name: &'static str,
    /// Which way it improves.
    pub better: Better,
}

/// The metrics `runs.csv`, `fleetsim compare` and (by default) `fleetsim check` report, in
/// this order.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "occupancy",
        better: Better::Higher,
    },
    Metric {
        name: "fragmentation.mean_pct_of_capacity",
        better: Better::Lower,
    },
    Metric {
        name: "wait_s.mean",
        better: Better::Lower,
    },
    Metric {
        name: "wait_s.p50",
        better: Better::Lower,
    },
    Metric {
        name: "wait_s.p90",
        better: Better::Lower,
    },
    Metric {
        name: "wait_s.p99",
        better: Better::Lower,
    },
    Metric {
        name: "wait_s.max",
        better: Better::Lower,
    },
    Metric {
        name: "jct_s.mean",
        better: Better::Lower,
    },
    Metric {
        name: "jct_s.p50",
        better: Better::Lower,
    },
    Metric {
        name: "jct_s.p99",
        better: Better::Lower,
    },
    Metric {
        name: "bounded_slowdown.mean",
        better: Better::Lower,
    },
    Metric {
        name: "bounded_slowdown.p99",
        better: Better::Lower,
    },
    Metric {
        name: "fairness.jain_index",
        better: Better::Higher,
    },
    Metric {
        name: "makespan_s",
        better: Better::Lower,
    },
    Metric {
        name: "censored_pct",
        better: Better::Lower,
    },
    Metric {
        name: "jobs.completed",
        better: Better::Higher,
    },
    Metric {
        name: "jobs.censored",
        better: Better::Lower,
    },
    Metric {
        name: "jobs.rejected",
        better: Better::Lower,
    },
];

/// Goodput and failure metrics (`summary.json` → `reliability`, present only with
/// `[failures]`, `[startup]`, `[platform]` or `[flexibility]`): `fleetsim compare` reports them
/// after [`METRICS`] when every run has them.
pub const RELIABILITY_METRICS: &[Metric] = &[
    Metric {
        name: "reliability.goodput",
        better: Better::Higher,
    },
    Metric {
        name: "reliability.goodput_gpu_s",
        better: Better::Higher,
    },
    Metric {
        name: "reliability.lost_gpu_s",
        better: Better::Lower,
    },
    Metric {
        name: "reliability.lost_to_failures_gpu_s",
        better: Better::Lower,
    },
    Metric {
        name: "reliability.lost_to_preemption_gpu_s",
        better: Better::Lower,
    },
    Metric {
        name: "reliability.startup_gpu_s",
        better: Better::Lower,
    },
    Metric {
        name: "reliability.job_failures",
        better: Better::Lower,
    },
    Metric {
        name: "reliability.cross_cell_dispatches",
        better: Better::Higher,
    },
];

/// The direction of a metric, when it is one of [`METRICS`] or [`RELIABILITY_METRICS`], or
/// a queueing-SLO figure (`summary.json` → `slo.<name>.<field>`, see
/// [`crate::metrics::slo`]): attainment (`attainment`, `interval_attainment`) and met counts
/// (`met_jobs`, `intervals_met`) are higher-is-better; `violated_jobs` and the observed
/// `wait_s_at_quantile` lower-is-better.
pub fn better(name: &str) -> Option<Better> {
    if let Some(rest) = name.strip_prefix("slo.") {
        return match rest.rsplit_once('.').map(|(_, f)| f) {
            Some("attainment" | "interval_attainment" | "met_jobs" | "intervals_met") => {
                Some(Better::Higher)
            }
            Some("violated_jobs" | "wait_s_at_quantile") => Some(Better::Lower),
            _ => None,
        };
    }
    METRICS
        .iter()
        .chain(RELIABILITY_METRICS)
        .find(|m| m.name == name)
        .map(|m| m.better)
}

/// Reads a metric from a `summary.json` value: `censored_pct` is
/// `100 × jobs.censored / jobs.submitted`; any other name is a dotted path to a number
/// (`occupancy`, `wait_s.p99`, `occupancy_by_cell.hopper`, `jobs.completed`). `None` when the
/// path is missing, not a number, or `null` (an empty sample).
pub fn metric_value(summary: &Value, name: &str) -> Option<f64> {
    if name == "censored_pct" {
        let j = &summary["jobs"];
        let (c, n) = (j["censored"].as_f64()?, j["submitted"].as_f64()?);
        return (n > 0.0).then(|| 100.0 * c / n);
    }
    let mut v = summary;
    for key in name.split('.') {
        v = v.as_object()?.get(key)?;
    }
    v.as_f64()
}

/// True when `name` can be read from summaries of this kind (the key exists, even if its
/// value is `null` in this one).
pub fn metric_exists(summary: &Value, name: &str) -> bool {
    if name == "censored_pct" {
        return true;
    }
    let mut v = summary;
    for key in name.split('.') {
        match v.as_object().and_then(|o| o.get(key)) {
            Some(x) => v = x,
            None => return false,
        }
    }
    v.is_number() || v.is_null()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_figures_have_directions_and_read_by_dotted_path() {
        assert_eq!(better("slo.p95-wait.attainment"), Some(Better::Higher));
        assert_eq!(
            better("slo.p95-wait.interval_attainment"),
            Some(Better::Higher)
        );
        assert_eq!(better("slo.p95-wait.violated_jobs"), Some(Better::Lower));
        assert_eq!(
            better("slo.p95-wait.wait_s_at_quantile"),
            Some(Better::Lower)
        );
        assert_eq!(better("slo.p95-wait.kind"), None);
        assert_eq!(better("wait_s.p99"), Some(Better::Lower));
        let s = serde_json::json!({"slo": {"p95-wait": {"attainment": 0.75}}});
        assert_eq!(metric_value(&s, "slo.p95-wait.attainment"), Some(0.75));
        assert!(metric_exists(&s, "slo.p95-wait.attainment"));
    }
}
