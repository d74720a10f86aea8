//! What sweeps, comparisons, compaction and checks share: the tracked metrics and how to read
//! them from a `summary.json`, one run of a scenario point with the data plots need, and a
//! run's output directory.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::engine::FinalState;
use crate::metrics::Occupancy;
use crate::report::{atomic::write_atomic, timeseries};
use crate::run::{run_scenario, RunError, RunOptions};
use crate::scenario::{Loaded, TraceDir};

pub use crate::report::tracked::{
    better, metric_exists, metric_value, BadInput, Better, Metric, METRICS, RELIABILITY_METRICS,
};

/// The warnings of several runs' summaries (`summary.json` → `warnings`), each once, in
/// order of first appearance; one that not every run printed says in how many it was.
pub fn distinct_warnings<'a>(summaries: impl IntoIterator<Item = &'a Value>) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut runs = 0;
    for s in summaries {
        runs += 1;
        let mut here: Vec<&str> = s["warnings"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        here.dedup();
        for w in here {
            match seen.iter_mut().find(|(x, _)| x == w) {
                Some(e) => e.1 += 1,
                None => seen.push((w.to_string(), 1)),
            }
        }
    }
    seen.into_iter()
        .map(|(w, n)| {
            if n == runs {
                w
            } else {
                format!("{w} (in {n} of {runs} runs)")
            }
        })
        .collect()
}

pub use crate::rng::fnv1a;

/// One measured job, as plots need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobLite {
    /// Tenant index into [`Jobs::tenants`].
    pub tenant: u32,
    /// Submit, ms.
    pub submit_ms: u64,
    /// Start, ms.
    pub start_ms: Option<u64>,
    /// Finish, ms.
    pub finish_ms: Option<u64>,
    /// Time pending in all (submit → first start plus every stop → next start), ms; `None`
    /// for a job that never started.
    #[serde(default)]
    pub pending_ms: Option<u64>,
    /// GPU-milli of the whole gang.
    pub gpu_milli: u64,
    /// Counted in per-job statistics.
    pub measured: bool,
}

/// The jobs of one run, compactly.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Jobs {
    /// Tenant names, sorted.
    pub tenants: Vec<String>,
    /// Jobs in job-id order.
    pub jobs: Vec<JobLite>,
}

impl Jobs {
    /// Waits (all pending time) of measured started jobs, seconds, sorted.
    pub fn waits_s(&self) -> Vec<f64> {
        let mut v: Vec<u64> = self
            .jobs
            .iter()
            .filter(|j| j.measured)
            .filter_map(|j| j.pending_ms.filter(|_| j.start_ms.is_some()))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|ms| ms as f64 / 1000.0).collect()
    }

    /// JCTs of measured finished jobs, seconds, sorted.
    pub fn jcts_s(&self) -> Vec<f64> {
        let mut v: Vec<u64> = self
            .jobs
            .iter()
            .filter(|j| j.measured)
            .filter_map(|j| j.finish_ms.map(|f| f - j.submit_ms))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|ms| ms as f64 / 1000.0).collect()
    }

    /// Allocated GPU-milli·ms per tenant per interval `[a + k·len, a + (k+1)·len)` for
    /// `k < n`; a job runs from its start to its finish (or `end_ms` when still running).
    pub fn tenant_allocation(&self, a: u64, len: u64, n: usize, end_ms: u64) -> Vec<Vec<u128>> {
        let mut out = vec![vec![0u128; self.tenants.len()]; n];
        for j in &self.jobs {
            let Some(s) = j.start_ms else { continue };
            let f = j.finish_ms.unwrap_or(end_ms);
            let (s, f) = (s.max(a), f.min(a + len * n as u64));
            let mut t = s;
            while t < f {
                let k = ((t - a) / len) as usize;
                let e = (a + (k as u64 + 1) * len).min(f);
                out[k][j.tenant as usize] += j.gpu_milli as u128 * (e - t) as u128;
                t = e;
            }
        }
        out
    }
}

/// What one run of a scenario point gives a study (serializable: `compare --resume` reads
/// finished runs back from `point.json`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Point {
    /// `summary.json` as a value (exactly what the file holds).
    pub summary: Value,
    /// Time-weighted results and the time series.
    pub occupancy: Occupancy,
    /// Cell names in id order.
    pub cells: Vec<String>,
    /// Model names in id order.
    pub models: Vec<String>,
    /// Tenant names in id order.
    pub tenants: Vec<String>,
    /// Simulated end, ms.
    pub end_ms: u64,
    /// The jobs, when asked for.
    pub jobs: Option<Jobs>,
}

/// Runs `loaded` with `seed`, writing nothing.
///
/// # Errors
/// [`RunError`] from the run.
pub fn run_point(
    loaded: &Loaded,
    seed: u64,
    trace_dir: &TraceDir,
    keep_jobs: bool,
) -> Result<Point, RunError> {
    if loaded.scenario.mode == crate::scenario::Mode::Inflation {
        return Err(RunError::Scenario(
            crate::scenario::ScenarioError::Invalid {
                origin: loaded.origin.clone(),
                field: "mode".into(),
                message: "sweep, compare, compact and check run the event engine; an inflation \
                      scenario compares its own [inflation] policies: use `fleetsim run`"
                    .into(),
            },
        ));
    }
    let opts = RunOptions {
        seed: Some(seed),
        trace_dir: trace_dir.clone(),
        out_dir: None,
        keep_rows: keep_jobs,
    };
    let out = run_scenario(loaded, &opts, &mut |_, _| {})?;
    let jobs = out.jobs.map(|rows| {
        let tenants: Vec<String> = rows
            .iter()
            .map(|r| r.tenant.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let index: BTreeMap<&str, u32> = tenants
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_str(), i as u32))
            .collect();
        let mut jobs: Vec<(u64, JobLite)> = rows
            .iter()
            .filter(|r| !matches!(r.state, FinalState::Rejected | FinalState::Cancelled))
            .map(|r| {
                (
                    r.id,
                    JobLite {
                        tenant: index[r.tenant.as_str()],
                        submit_ms: r.submit.0,
                        start_ms: r.start.map(|t| t.0),
                        finish_ms: r.finish.map(|t| t.0),
                        pending_ms: r.start.and(r.pending_ms),
                        gpu_milli: r.shape.total_gpu_milli().saturating_mul(r.tasks as u64),
                        measured: r.measured && !r.serving_replica,
                    },
                )
            })
            .collect();
        jobs.sort_by_key(|&(id, _)| id);
        Jobs {
            tenants,
            jobs: jobs.into_iter().map(|(_, j)| j).collect(),
        }
    });
    Ok(Point {
        summary: serde_json::to_value(&out.summary).expect("summary serializes"),
        tenants: out.result.tenants.iter().map(|t| t.name.clone()).collect(),
        occupancy: out.result.occupancy,
        cells: out.cells,
        models: out.models,
        end_ms: out.result.end_time.0,
        jobs,
    })
}

/// Writes `summary.json` and `timeseries.csv` of a point into `dir` (atomically each).
///
/// # Errors
/// The I/O error.
pub fn write_point(dir: &Path, p: &Point) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    timeseries::write(
        &dir.join("timeseries.csv"),
        &p.cells,
        &p.models,
        &p.tenants,
        &p.occupancy,
    )?;
    write_json(&dir.join("summary.json"), &p.summary)
}

/// Writes pretty JSON plus a newline, atomically.
///
/// # Errors
/// The I/O error.
pub fn write_json(path: &Path, v: &impl serde::Serialize) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(v).map_err(std::io::Error::other)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Formats a float for CSV and tables: Rust's shortest round-trip text, empty for `None`.
pub fn fmt_opt(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// A file-system-safe name: `[A-Za-z0-9._=,+-]` kept, anything else `_`, at most 96 bytes
/// (longer names are cut and end in a hash of the whole).
pub fn safe_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._=,+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.len() > 96 {
        out.truncate(80);
        out.push_str(&format!("-{:012x}", fnv1a(s.as_bytes()) & 0xffff_ffff_ffff));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_paths() {
        let v: Value = serde_json::from_str(
            r#"{"occupancy":0.5,"wait_s":{"p99":null,"mean":3.0},"jobs":{"censored":2,"submitted":8}}"#,
        )
        .unwrap();
        assert_eq!(metric_value(&v, "occupancy"), Some(0.5));
        assert_eq!(metric_value(&v, "wait_s.mean"), Some(3.0));
        assert_eq!(metric_value(&v, "wait_s.p99"), None);
        assert!(metric_exists(&v, "wait_s.p99"));
        assert!(!metric_exists(&v, "wait_s.p98"));
        assert_eq!(metric_value(&v, "censored_pct"), Some(25.0));
    }

    #[test]
    fn tenant_allocation_splits_intervals() {
        // One 2-GPU job from 5 s to 25 s on intervals of 10 s from 0: 5, 10, 5 s.
        let j = Jobs {
            tenants: vec!["a".into()],
            jobs: vec![JobLite {
                tenant: 0,
                submit_ms: 0,
                start_ms: Some(5_000),
                finish_ms: Some(25_000),
                pending_ms: Some(5_000),
                gpu_milli: 2000,
                measured: true,
            }],
        };
        let a = j.tenant_allocation(0, 10_000, 3, 30_000);
        assert_eq!(
            a,
            vec![vec![10_000_000], vec![20_000_000], vec![10_000_000]]
        );
        assert_eq!(safe_name("a b/c"), "a_b_c");
    }
}
