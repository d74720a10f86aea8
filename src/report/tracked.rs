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
    /// Neither: shown beside another metric for context (allocated occupancy beside the
    /// useful one: holding more is not better in itself). Never marked best; `check`
    /// reports it without failing on it unless `[check]` declares a direction.
    Neither,
}

impl Better {
    /// The better of two values (`None` for [`Better::Neither`]).
    pub fn pick(self, a: f64, b: f64) -> Option<f64> {
        match self {
            Better::Higher => Some(a.max(b)),
            Better::Lower => Some(a.min(b)),
            Better::Neither => None,
        }
    }
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
/// this order: the headline useful occupancy with, beside it, what it does not count
/// (allocated occupancy, preemptions per started job, lost GPU-hours); fragmentation; the
/// wait (all pending time) and the first-start wait; JCT, slowdown, fairness and job counts.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "occupancy",
        better: Better::Higher,
    },
    Metric {
        name: "allocated_occupancy",
        better: Better::Neither,
    },
    Metric {
        name: "preemption.preemptions_per_job",
        better: Better::Lower,
    },
    Metric {
        name: "preemption.lost_gpu_h",
        better: Better::Lower,
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
        name: "wait_s.p95",
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
        name: "first_start_wait_s.mean",
        better: Better::Lower,
    },
    Metric {
        name: "first_start_wait_s.p50",
        better: Better::Lower,
    },
    Metric {
        name: "first_start_wait_s.p90",
        better: Better::Lower,
    },
    Metric {
        name: "first_start_wait_s.p95",
        better: Better::Lower,
    },
    Metric {
        name: "first_start_wait_s.p99",
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
        name: "jct_s.p95",
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
/// `wait_s_at_quantile` lower-is-better; or an autoscaling or serving figure (see
/// [`autoscaling_or_serving`]).
pub fn better(name: &str) -> Option<Better> {
    if let Some(b) = autoscaling_or_serving(name) {
        return b;
    }
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

/// The direction of an autoscaling figure (`summary.json` → `autoscaling.<field>`, or
/// `autoscaling.groups.<cell/group>.<field>`) or a serving figure (`serving.<field>`, or
/// `serving.services.<service>.<field>`) or a waiting-for-pods figure (`pods_ready.<field>`)
/// or an elastic figure (`elastic.<field>`): `Some(direction)` for a name under
/// `autoscaling.`, `elastic.`, `pods_ready.` or `serving.`
/// (`Some(None)`: no known direction), `None` for any other name.
///
/// Lower is better for cost, node-hours, provisioned GPU-hours, job-seconds pending for
/// capacity, replica shortfall, replica stops, training GPU-s lost and training preemptions
/// by serving, pods-ready evictions, requeues and deactivations, and elastic GPU-hours held,
/// resizes (reallocations) and pauses; higher for service SLO attainment, training
/// allocated GPU-s and goodput, fleet occupancy and elastic jobs completed.
pub fn autoscaling_or_serving(name: &str) -> Option<Option<Better>> {
    let field = |rest: &str| rest.rsplit('.').next().unwrap_or(rest).to_string();
    if let Some(rest) = name.strip_prefix("autoscaling.") {
        return Some(match field(rest).as_str() {
            "cost" | "node_hours" | "gpu_hours_provisioned" | "pending_for_capacity_job_s" => {
                Some(Better::Lower)
            }
            _ => None,
        });
    }
    if let Some(rest) = name.strip_prefix("elastic.") {
        return Some(match field(rest).as_str() {
            "gpu_hours" | "reallocations" | "pauses" => Some(Better::Lower),
            "completed" => Some(Better::Higher),
            _ => None,
        });
    }
    if let Some(rest) = name.strip_prefix("pods_ready.") {
        return Some(match field(rest).as_str() {
            "evictions" | "requeues" | "deactivated" => Some(Better::Lower),
            _ => None,
        });
    }
    if let Some(rest) = name.strip_prefix("serving.") {
        return Some(match field(rest).as_str() {
            "slo_attainment"
            | "training_allocated_gpu_s"
            | "training_goodput_gpu_s"
            | "fleet_occupancy" => Some(Better::Higher),
            "shortfall_replica_s"
            | "replica_stops"
            | "training_lost_to_serving_gpu_s"
            | "training_lost_gpu_s"
            | "training_preemptions_by_serving" => Some(Better::Lower),
            _ => None,
        });
    }
    None
}

/// One step of a dotted path: an object's key, or in an array the element whose `name` is
/// `key` (`serving.services.chat`, `autoscaling.groups.philly/burst`), else the element at
/// index `key` (`serving.services.0`).
fn step<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(o) => o.get(key),
        Value::Array(a) => a
            .iter()
            .find(|x| x.get("name").and_then(Value::as_str) == Some(key))
            .or_else(|| key.parse::<usize>().ok().and_then(|i| a.get(i))),
        _ => None,
    }
}

/// Reads a metric from a `summary.json` value: `censored_pct` is
/// `100 × jobs.censored / jobs.submitted`; any other name is a dotted path to a number
/// (`occupancy`, `wait_s.p99`, `occupancy_by_cell.hopper`, `jobs.completed`; an array
/// element by its `name` or index: `serving.services.chat.slo_attainment`). `None` when the
/// path is missing, not a number, or `null` (an empty sample).
pub fn metric_value(summary: &Value, name: &str) -> Option<f64> {
    if name == "censored_pct" {
        let j = &summary["jobs"];
        let (c, n) = (j["censored"].as_f64()?, j["submitted"].as_f64()?);
        return (n > 0.0).then(|| 100.0 * c / n);
    }
    let mut v = summary;
    for key in name.split('.') {
        v = step(v, key)?;
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
        match step(v, key) {
            Some(x) => v = x,
            None => return false,
        }
    }
    v.is_number() || v.is_null()
}

/// Every numeric (or `null`) leaf of `summary` as a dotted path, in document order, below
/// `prefix` (array elements by their `name`, else their index).
fn leaves(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(x, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let key = x
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| i.to_string(), str::to_string);
                leaves(x, &format!("{prefix}.{key}"), out);
            }
        }
        Value::Number(_) | Value::Null if !prefix.is_empty() => out.push(prefix.to_string()),
        _ => {}
    }
}

/// True when `name` names a number (or a `null` number) of a run's `summary.json` by its
/// JSON Schema (the one `fleetsim schema summary` prints), without a run: each dotted step
/// is a property of an object, or any key of a map (`occupancy_by_cell.<cell>`,
/// `tenants.<tenant>`) or of an array (an element's `name` or index), and the last is a
/// number; or `censored_pct`. A section present only with some settings
/// (`autoscaling.…`, `pods_ready.…`, `slo.…`) is known here; a run without it refuses the
/// name then ([`unknown_metric`]).
pub fn metric_in_summary_schema(name: &str) -> bool {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    if name == "censored_pct" {
        return true;
    }
    let root = SCHEMA.get_or_init(|| schemars::schema_for!(super::summary::Summary).to_value());
    let keys: Vec<&str> = name.split('.').collect();
    numeric_path(root, root, &keys, 0)
}

/// True when `keys` lead from schema `node` to a number (see [`metric_in_summary_schema`]);
/// `depth` bounds `$ref` chains.
fn numeric_path(root: &Value, node: &Value, keys: &[&str], depth: u32) -> bool {
    if depth > 64 {
        return false;
    }
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let target = r
            .strip_prefix("#/$defs/")
            .and_then(|d| root.get("$defs").and_then(|x| x.get(d)));
        return target.is_some_and(|t| numeric_path(root, t, keys, depth + 1));
    }
    for alt in ["anyOf", "oneOf", "allOf"] {
        if let Some(list) = node.get(alt).and_then(Value::as_array) {
            if list.iter().any(|a| numeric_path(root, a, keys, depth + 1)) {
                return true;
            }
        }
    }
    match keys.split_first() {
        None => {
            let is_number = |t: &Value| matches!(t.as_str(), Some("number" | "integer"));
            match node.get("type") {
                Some(Value::Array(ts)) => ts.iter().any(is_number),
                Some(t) => is_number(t),
                None => false,
            }
        }
        Some((key, rest)) => {
            if let Some(p) = node.get("properties").and_then(|p| p.get(*key)) {
                return numeric_path(root, p, rest, depth + 1);
            }
            if let Some(ap) = node.get("additionalProperties").filter(|a| a.is_object()) {
                return numeric_path(root, ap, rest, depth + 1);
            }
            if let Some(items) = node.get("items") {
                return numeric_path(root, items, rest, depth + 1);
            }
            false
        }
    }
}

/// The message for a `[check] metrics` name that is no number of `summary.json`
/// ([`metric_in_summary_schema`]): the closest known metrics, the known metrics
/// ([`METRICS`], [`RELIABILITY_METRICS`]) and the rule for the rest.
pub fn unknown_metric_static(name: &str) -> String {
    let known: Vec<&str> = METRICS
        .iter()
        .chain(RELIABILITY_METRICS)
        .map(|m| m.name)
        .collect();
    let mut near: Vec<(usize, &str)> = known
        .iter()
        .map(|&k| (distance(name, k), k))
        .filter(|&(d, k)| d <= 3.max(name.len() / 4) || k.starts_with(name))
        .collect();
    near.sort();
    let near: Vec<&str> = near.iter().take(3).map(|&(_, k)| k).collect();
    format!(
        "unknown metric `{name}`: not a number of summary.json{}; known metrics: {}, or any dotted path to a number of summary.json (e.g. occupancy_by_cell.<cell>, tenants.<tenant>.wait_s.p95, slo.<name>.attainment, pods_ready.evictions)",
        if near.is_empty() {
            String::new()
        } else {
            format!(" (did you mean {}?)", near.join(", "))
        },
        known.join(", ")
    )
}

/// Edit distance between two names (Levenshtein, by chars).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The error for metric `name`, which `summary` does not have: names the closest metrics
/// and lists the valid ones — the tracked metrics ([`METRICS`], then
/// [`RELIABILITY_METRICS`] when the run reports goodput) and the rule for the rest (any
/// dotted path to a number of `summary.json`).
pub fn unknown_metric(name: &str, summary: &Value) -> BadInput {
    let mut paths = Vec::new();
    leaves(summary, "", &mut paths);
    paths.push("censored_pct".to_string());
    let mut near: Vec<(usize, &String)> = paths
        .iter()
        .map(|p| (distance(name, p), p))
        .filter(|&(d, p)| d <= 3.max(name.len() / 4) || p.starts_with(name))
        .collect();
    near.sort();
    let near: Vec<&str> = near.iter().take(3).map(|(_, p)| p.as_str()).collect();
    let tracked: Vec<&str> = METRICS
        .iter()
        .chain(RELIABILITY_METRICS)
        .map(|m| m.name)
        .filter(|m| metric_exists(summary, m))
        .collect();
    BadInput(format!(
        "unknown metric `{name}`: not in summary.json{}; valid metrics: {}, or any dotted path to a number of summary.json (e.g. occupancy_by_cell.<cell>, tenants.<tenant>.wait_s.p95, slo.<name>.attainment)",
        if near.is_empty() {
            String::new()
        } else {
            format!(" (did you mean {}?)", near.join(", "))
        },
        tracked.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_metric_names_the_valid_ones() {
        let s = serde_json::json!({
            "occupancy": 0.5,
            "wait_s": {"p95": 3.0, "p99": null},
            "jobs": {"censored": 0, "submitted": 2}
        });
        let e = unknown_metric("wait_s.p98", &s).0;
        assert!(e.contains("did you mean wait_s.p95, wait_s.p99"), "{e}");
        assert!(
            e.contains("valid metrics: occupancy, wait_s.p95, wait_s.p99"),
            "{e}"
        );
    }

    /// Names checked against the summary's schema, without a run: every tracked metric,
    /// map and array keys, optional sections; typos and non-numbers are not.
    #[test]
    fn metric_names_are_checked_against_the_summary_schema() {
        for m in METRICS.iter().chain(RELIABILITY_METRICS) {
            assert!(metric_in_summary_schema(m.name), "{}", m.name);
        }
        for ok in [
            "occupancy_by_cell.hopper",
            "tenants.research.wait_s.p95",
            "slo.fast.attainment",
            "pods_ready.evictions",
            "autoscaling.groups.c/burst.cost",
            "wait_s.count",
        ] {
            assert!(metric_in_summary_schema(ok), "{ok}");
        }
        for bad in [
            "wait_s.p98",
            "occupancy.mean",
            "ocupancy",
            "scenario",
            "wait_s",
            "",
            "tenants.research",
        ] {
            assert!(!metric_in_summary_schema(bad), "{bad}");
        }
        let e = unknown_metric_static("wait_s.p98");
        assert!(
            e.starts_with("unknown metric `wait_s.p98`: not a number of summary.json (did you mean wait_s.p90, wait_s.p95, wait_s.p99?); known metrics: occupancy, allocated_occupancy,"),
            "{e}"
        );
    }

    #[test]
    fn pods_ready_evictions_are_better_lower() {
        for f in ["evictions", "requeues", "deactivated"] {
            assert_eq!(
                better(&format!("pods_ready.{f}")),
                Some(Better::Lower),
                "{f}"
            );
        }
        assert_eq!(better("pods_ready.timeout_s"), None);
    }

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

    #[test]
    fn autoscaling_and_serving_figures_have_directions_and_read_by_name() {
        assert_eq!(better("autoscaling.cost"), Some(Better::Lower));
        assert_eq!(better("elastic.gpu_hours"), Some(Better::Lower));
        assert_eq!(better("elastic.completed"), Some(Better::Higher));
        assert_eq!(better("elastic.rounds"), None);
        assert_eq!(
            better("autoscaling.groups.philly/burst.node_hours"),
            Some(Better::Lower)
        );
        assert_eq!(
            better("autoscaling.pending_for_capacity_job_s"),
            Some(Better::Lower)
        );
        assert_eq!(better("autoscaling.scale_ups"), None);
        assert_eq!(
            better("serving.services.chat.slo_attainment"),
            Some(Better::Higher)
        );
        assert_eq!(
            better("serving.services.chat.shortfall_replica_s"),
            Some(Better::Lower)
        );
        assert_eq!(
            better("serving.training_goodput_gpu_s"),
            Some(Better::Higher)
        );
        assert_eq!(better("serving.window_s"), None);
        let s = serde_json::json!({
            "autoscaling": {"cost": 2.5, "groups": [{"name": "c/burst", "cost": 2.5}]},
            "serving": {"services": [
                {"name": "chat", "slo_attainment": 0.95},
                {"name": "rank", "slo_attainment": 0.5}
            ]}
        });
        assert_eq!(
            metric_value(&s, "autoscaling.groups.c/burst.cost"),
            Some(2.5)
        );
        assert_eq!(
            metric_value(&s, "serving.services.rank.slo_attainment"),
            Some(0.5)
        );
        assert_eq!(
            metric_value(&s, "serving.services.0.slo_attainment"),
            Some(0.95)
        );
        assert_eq!(
            metric_value(&s, "serving.services.nope.slo_attainment"),
            None
        );
        assert!(metric_exists(&s, "serving.services.chat.slo_attainment"));
        assert!(!metric_exists(&s, "serving.services.2.slo_attainment"));
    }
}
