//! Shadow mode: what the policy would have decided beside another
//! scheduler, job by job.
//!
//! Input: a recorded `jobs.csv` (fleetsim's columns, [`fleetsim::report::jobs_csv::HEADER`];
//! Batsim's `jobs.csv` shares the time columns) of the other scheduler, and a scenario file
//! giving the fleet and the policy (`[policy]`, queues, quota — the same spec file a study
//! compares). Each recorded job's submit time, tenant, queue, priority, gang shape
//! (`requested_number_of_resources` tasks of `num_gpu` × `gpu_milli`, `cpu_milli`, `mem_mib`)
//! and run time (`execution_time`) become a job of a native trace, which the policy
//! schedules on the scenario's fleet through the engine — the same decisions, in the same
//! order, as the live service makes for these events. Jobs without an `execution_time`
//! (never started in the recording) cannot be replayed and are counted as skipped.
//! `jobs.csv` does not carry model or cell constraints: the shadow run places jobs without
//! them.
//!
//! Output per job ([`JobDiff`], `shadow.csv`): recorded and shadow start (seconds), their
//! difference (shadow − recorded), nodes of each (space-separated), preemptions of each
//! (the job as a victim), and which of start / nodes / victim differ. Summary
//! ([`ShadowSummary`], `shadow.json` and text): jobs compared, jobs differing in each way,
//! the mean start difference (s, signed) and the p95 of its absolute value (nearest rank),
//! over jobs started in both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fleetsim::engine::JobRow;
use fleetsim::report::format::ms_as_secs;
use fleetsim::run::{run_scenario, RunOptions};
use fleetsim::scenario::{TraceDir, TraceSpec};
use serde::Serialize;

/// One job of the recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedJob {
    /// Job name (`name` column).
    pub name: String,
    /// Tenant.
    pub tenant: String,
    /// Queue (empty: the scenario decides).
    pub queue: String,
    /// Priority.
    pub priority: i32,
    /// Submission time, ms.
    pub submit_ms: u64,
    /// Recorded (first) start, ms; `None` if it never started.
    pub start_ms: Option<u64>,
    /// Recorded run time, ms (`execution_time`).
    pub run_ms: Option<u64>,
    /// Gang size.
    pub tasks: u32,
    /// Accelerators per task.
    pub num_gpu: u32,
    /// Share of each accelerator, GPU-milli.
    pub gpu_milli: u32,
    /// CPU per task, milli-cores.
    pub cpu_milli: u64,
    /// Memory per task, MiB.
    pub mem_mib: u64,
    /// Nodes, one per task.
    pub nodes: Vec<String>,
    /// Times preempted.
    pub preemptions: u32,
}

/// Decimal seconds (`12.5`, `60.000`) to ms, exactly; more than 3 fractional digits are
/// refused.
fn secs_ms(t: &str) -> Result<u64, String> {
    let (i, f) = t.split_once('.').unwrap_or((t, ""));
    if f.len() > 3
        || i.is_empty()
        || !i.bytes().all(|b| b.is_ascii_digit())
        || !f.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(format!("`{t}` is not seconds with at most 3 decimals"));
    }
    let whole: u64 = i.parse().map_err(|_| format!("`{t}` is out of range"))?;
    let frac: u64 = format!("{f:0<3}").parse().unwrap_or(0);
    whole
        .checked_mul(1000)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(|| format!("`{t}` is out of range"))
}

/// Reads a recorded `jobs.csv`.
///
/// # Errors
/// A message naming the file, the line and the column: unreadable file, a missing column,
/// a malformed number or time.
pub fn read_jobs_csv(path: &Path) -> Result<Vec<RecordedJob>, String> {
    let at =
        |line: u64, col: &str, m: String| format!("{}:{line}: column `{col}`: {m}", path.display());
    let mut r = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let header = r
        .headers()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .clone();
    let need = [
        "name",
        "tenant",
        "queue",
        "priority",
        "submission_time",
        "starting_time",
        "execution_time",
        "requested_number_of_resources",
        "num_gpu",
        "gpu_milli",
        "cpu_milli",
        "mem_mib",
        "allocated_resources",
        "preemptions",
    ];
    let mut col = BTreeMap::new();
    for n in need {
        let i = header
            .iter()
            .position(|h| h == n)
            .ok_or_else(|| at(1, n, "missing from the header".into()))?;
        col.insert(n, i);
    }
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| format!("{}: {e}", path.display()))?;
        let line = rec.position().map_or(0, |p| p.line());
        let f = |n: &str| rec.get(col[n]).unwrap_or("").trim();
        let num = |n: &str| -> Result<u64, String> {
            f(n).parse::<u64>()
                .map_err(|e| at(line, n, format!("`{}`: {e}", f(n))))
        };
        let opt_time = |n: &str| -> Result<Option<u64>, String> {
            if f(n).is_empty() {
                Ok(None)
            } else {
                secs_ms(f(n)).map(Some).map_err(|m| at(line, n, m))
            }
        };
        let small = |n: &str| -> Result<u32, String> {
            u32::try_from(num(n)?).map_err(|_| at(line, n, "out of range".into()))
        };
        out.push(RecordedJob {
            name: f("name").to_string(),
            tenant: f("tenant").to_string(),
            queue: f("queue").to_string(),
            priority: f("priority")
                .parse()
                .map_err(|e| at(line, "priority", format!("`{}`: {e}", f("priority"))))?,
            submit_ms: secs_ms(f("submission_time")).map_err(|m| at(line, "submission_time", m))?,
            start_ms: opt_time("starting_time")?,
            run_ms: opt_time("execution_time")?,
            tasks: small("requested_number_of_resources")?,
            num_gpu: small("num_gpu")?,
            gpu_milli: small("gpu_milli")?,
            cpu_milli: num("cpu_milli")?,
            mem_mib: num("mem_mib")?,
            nodes: f("allocated_resources")
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            preemptions: small("preemptions")?,
        });
    }
    Ok(out)
}

/// Writes the replayable jobs as a native trace (sorted by submit time, stable) and returns
/// how many were skipped (no run time).
fn write_trace(jobs: &[RecordedJob], dest: &Path) -> Result<usize, String> {
    let mut replay: Vec<&RecordedJob> = jobs.iter().filter(|j| j.run_ms.is_some()).collect();
    replay.sort_by_key(|j| j.submit_ms);
    let mut w = csv::Writer::from_path(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let io = |e: csv::Error| format!("{}: {e}", dest.display());
    w.write_record([
        "id",
        "submit_s",
        "tenant",
        "queue",
        "priority",
        "tasks",
        "num_gpu",
        "gpu_milli",
        "cpu_milli",
        "mem_mib",
        "runtime_s",
    ])
    .map_err(io)?;
    for j in &replay {
        let gpu_milli = if j.num_gpu == 0 {
            String::new()
        } else {
            j.gpu_milli.to_string()
        };
        w.write_record([
            j.name.clone(),
            ms_as_secs(j.submit_ms),
            j.tenant.clone(),
            j.queue.clone(),
            j.priority.to_string(),
            j.tasks.to_string(),
            j.num_gpu.to_string(),
            gpu_milli,
            j.cpu_milli.to_string(),
            j.mem_mib.to_string(),
            ms_as_secs(j.run_ms.unwrap_or(0)),
        ])
        .map_err(io)?;
    }
    w.flush().map_err(|e| format!("{}: {e}", dest.display()))?;
    Ok(jobs.len() - replay.len())
}

/// Runs the scenario's fleet and policy on the recorded jobs and returns the shadow job
/// rows, and how many recorded jobs were skipped.
///
/// # Errors
/// The scenario's load error, the trace's, or the run's.
pub fn run_policy(
    scenario: &Path,
    jobs: &[RecordedJob],
    trace_dir: TraceDir,
) -> Result<(Vec<JobRow>, usize), String> {
    let mut loaded = fleetsim::scenario::load(scenario).map_err(|e| e.to_string())?;
    crate::serve::refuse_elastic(&loaded, scenario)?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let trace: PathBuf = dir.path().join("recorded.csv");
    let skipped = write_trace(jobs, &trace)?;
    let spec: TraceSpec = toml::from_str(&format!(
        "format = \"native\"\npath = {:?}\n",
        trace.display().to_string()
    ))
    .map_err(|e| e.to_string())?;
    loaded.scenario.workload.trace = Some(spec);
    loaded.scenario.workload.synthetic = None;
    let opts = RunOptions {
        seed: None,
        trace_dir,
        out_dir: None,
        keep_rows: true,
    };
    let out = run_scenario(&loaded, &opts, &mut |_, _| {}).map_err(|e| e.to_string())?;
    let mut rows = out.jobs.unwrap_or_default();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((rows, skipped))
}

/// One job compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobDiff {
    /// Job name.
    pub job: String,
    /// Tenant.
    pub tenant: String,
    /// Recorded start, ms.
    pub recorded_start_ms: Option<u64>,
    /// Shadow start, ms.
    pub shadow_start_ms: Option<u64>,
    /// shadow − recorded, ms, when both started.
    pub start_diff_ms: Option<i64>,
    /// Recorded nodes.
    pub recorded_nodes: Vec<String>,
    /// Shadow nodes.
    pub shadow_nodes: Vec<String>,
    /// Recorded preemptions (as victim).
    pub recorded_preemptions: u32,
    /// Shadow preemptions (as victim).
    pub shadow_preemptions: u32,
    /// Start differs (or started in one only).
    pub start_differs: bool,
    /// Node multiset differs.
    pub nodes_differ: bool,
    /// Preempted a different number of times.
    pub victim_differs: bool,
}

/// The summary of a shadow run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShadowSummary {
    /// Recorded jobs replayed and compared.
    pub jobs: usize,
    /// Recorded jobs not replayed (no run time).
    pub skipped: usize,
    /// Jobs differing in any way.
    pub differing: usize,
    /// Jobs whose start differs.
    pub start_differs: usize,
    /// Jobs whose nodes differ.
    pub nodes_differ: usize,
    /// Jobs preempted a different number of times.
    pub victim_differs: usize,
    /// Mean of shadow − recorded start over jobs started in both, seconds.
    pub mean_start_diff_s: f64,
    /// p95 (nearest rank) of |shadow − recorded start|, seconds.
    pub p95_abs_start_diff_s: f64,
}

/// Compares recorded jobs with the shadow rows, by job name (in name order).
pub fn compare(recorded: &[RecordedJob], shadow: &[JobRow]) -> (Vec<JobDiff>, ShadowSummary) {
    let by_name: BTreeMap<&str, &JobRow> = shadow.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut rec: Vec<&RecordedJob> = recorded.iter().filter(|j| j.run_ms.is_some()).collect();
    rec.sort_by(|a, b| a.name.cmp(&b.name));
    let mut diffs = Vec::new();
    for j in &rec {
        let s = by_name.get(j.name.as_str());
        let shadow_start = s.and_then(|r| r.start.map(|t| t.0));
        let shadow_nodes = s.map(|r| r.nodes.clone()).unwrap_or_default();
        let shadow_pre = s.map_or(0, |r| r.preemptions);
        let start_diff = match (j.start_ms, shadow_start) {
            (Some(a), Some(b)) => Some(b as i64 - a as i64),
            _ => None,
        };
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        diffs.push(JobDiff {
            job: j.name.clone(),
            tenant: j.tenant.clone(),
            recorded_start_ms: j.start_ms,
            shadow_start_ms: shadow_start,
            start_diff_ms: start_diff,
            start_differs: j.start_ms != shadow_start,
            nodes_differ: sorted(&j.nodes) != sorted(&shadow_nodes),
            victim_differs: j.preemptions != shadow_pre,
            recorded_nodes: j.nodes.clone(),
            shadow_nodes,
            recorded_preemptions: j.preemptions,
            shadow_preemptions: shadow_pre,
        });
    }
    let both: Vec<i64> = diffs.iter().filter_map(|d| d.start_diff_ms).collect();
    let mean = if both.is_empty() {
        0.0
    } else {
        both.iter().sum::<i64>() as f64 / both.len() as f64 / 1000.0
    };
    let mut abs: Vec<u64> = both.iter().map(|d| d.unsigned_abs()).collect();
    abs.sort_unstable();
    let p95 = if abs.is_empty() {
        0.0
    } else {
        abs[(abs.len() * 95).div_ceil(100) - 1] as f64 / 1000.0
    };
    let summary = ShadowSummary {
        jobs: diffs.len(),
        skipped: recorded.len() - rec.len(),
        differing: diffs
            .iter()
            .filter(|d| d.start_differs || d.nodes_differ || d.victim_differs)
            .count(),
        start_differs: diffs.iter().filter(|d| d.start_differs).count(),
        nodes_differ: diffs.iter().filter(|d| d.nodes_differ).count(),
        victim_differs: diffs.iter().filter(|d| d.victim_differs).count(),
        mean_start_diff_s: mean,
        p95_abs_start_diff_s: p95,
    };
    (diffs, summary)
}

/// The per-job CSV: header `job,tenant,recorded_start_s,shadow_start_s,start_diff_s,
/// recorded_nodes,shadow_nodes,recorded_preemptions,shadow_preemptions,start_differs,
/// nodes_differ,victim_differs`; seconds with 3 decimals, empty when not started.
pub fn diffs_csv(diffs: &[JobDiff]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let t = |v: Option<u64>| v.map(ms_as_secs).unwrap_or_default();
    let _ = w.write_record([
        "job",
        "tenant",
        "recorded_start_s",
        "shadow_start_s",
        "start_diff_s",
        "recorded_nodes",
        "shadow_nodes",
        "recorded_preemptions",
        "shadow_preemptions",
        "start_differs",
        "nodes_differ",
        "victim_differs",
    ]);
    for d in diffs {
        let diff = d
            .start_diff_ms
            .map(|x| {
                format!(
                    "{}{}",
                    if x < 0 { "-" } else { "" },
                    ms_as_secs(x.unsigned_abs())
                )
            })
            .unwrap_or_default();
        let _ = w.write_record([
            d.job.clone(),
            d.tenant.clone(),
            t(d.recorded_start_ms),
            t(d.shadow_start_ms),
            diff,
            d.recorded_nodes.join(" "),
            d.shadow_nodes.join(" "),
            d.recorded_preemptions.to_string(),
            d.shadow_preemptions.to_string(),
            d.start_differs.to_string(),
            d.nodes_differ.to_string(),
            d.victim_differs.to_string(),
        ]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The short text summary.
pub fn summary_text(s: &ShadowSummary) -> String {
    format!(
        "shadow: {} jobs compared ({} skipped: no run time); {} differ: start {}, nodes {}, victim {}; start difference (shadow - recorded) mean {:.3} s, p95 |diff| {:.3} s\n",
        s.jobs, s.skipped, s.differing, s.start_differs, s.nodes_differ, s.victim_differs, s.mean_start_diff_s, s.p95_abs_start_diff_s
    )
}

/// `fleetsim-scheduler shadow`: reads `events` (a jobs.csv), runs `scenario`, writes
/// `shadow.csv` and `shadow.json` (summary and jobs) into `out`, returns the text summary.
///
/// # Errors
/// Reading, running or writing, with the file named.
pub fn run(
    scenario: &Path,
    events: &Path,
    out: &Path,
    trace_dir: TraceDir,
) -> Result<String, String> {
    let recorded = read_jobs_csv(events)?;
    let (rows, _) = run_policy(scenario, &recorded, trace_dir)?;
    let (diffs, summary) = compare(&recorded, &rows);
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let w = |name: &str, text: String| {
        std::fs::write(out.join(name), text)
            .map_err(|e| format!("{}: {e}", out.join(name).display()))
    };
    w("shadow.csv", diffs_csv(&diffs))?;
    let json =
        serde_json::to_string_pretty(&serde_json::json!({ "summary": summary, "jobs": diffs }))
            .map_err(|e| e.to_string())?;
    w("shadow.json", json + "\n")?;
    Ok(summary_text(&summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_to_ms_exactly() {
        assert_eq!(secs_ms("60.000"), Ok(60_000));
        assert_eq!(secs_ms("12.5"), Ok(12_500));
        assert_eq!(secs_ms("7"), Ok(7_000));
        assert!(secs_ms("1.2345").is_err());
        assert!(secs_ms("-1").is_err());
    }
}
