//! Reader for the Alibaba PAI 2020 GPU cluster trace (Q. Weng et al., "MLaaS in the Wild:
//! Workload Analysis and Scheduling in Large-Scale Heterogeneous GPU Clusters", USENIX
//! NSDI '22; `alibaba/clusterdata`, `cluster-trace-gpu-v2020`). The schema below is the one
//! published in that directory's README; the tables are not in this repository (≈1.4 GB),
//! so the tests use small samples written from the schema.
//!
//! # Source format
//!
//! Headerless CSV tables, each with its column names in a separate one-line file
//! `<table>.header` (`pai_task_table.header`). The reader takes the **task table**
//! (`pai_task_table.csv`) and joins the **job table** `pai_job_table.csv` found in the same
//! directory. Column names come from the `.header` file beside each table when present,
//! else from the published order:
//!
//! * job table: `job_name,inst_id,user,status,start_time,end_time` — `start_time` is the
//!   job's **submission** time;
//! * task table: `job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type`
//!   — `start_time`/`end_time` are the task's launch and completion.
//!
//! Units: times in seconds (decimal, shifted by an undisclosed constant; empty = not
//! happened); `inst_num` instances (decimal such as `1.0`); `plan_cpu` percent of a core
//! (600 = 6 cores); `plan_mem` GB; `plan_gpu` percent of a GPU (50 = half a GPU, 800 =
//! 8 GPUs); `gpu_type` the type the task ran on (`MISC`, `P100`, `T4`, `V100`, …).
//!
//! # Mapping to [`JobSpec`] (one job per task row)
//!
//! * **Name** = `job_name/task_name`; **tenant** = the job's `user`; a task whose job is not
//!   in the job table is skipped as `job_not_in_job_table`.
//! * **Gang** = `inst_num` identical instances (a whole number ≥ 1).
//! * **Per instance**: `cpu_milli` = `plan_cpu` × 10; `mem_mib` = `plan_mem` × 1024
//!   (nearest MiB); `plan_gpu` ≤ 100 → one GPU at `gpu_milli` = `plan_gpu` × 10 (a shared
//!   GPU below 100); above 100 → `plan_gpu` / 100 whole GPUs, rounded up when not a
//!   multiple of 100 (noted `plan_gpu_rounded_up`); empty or 0 → CPU-only. All exact from
//!   the decimal text, rounding half away from zero.
//! * `gpu_type` is what the task **ran on**, not what it asked for: not a constraint; counted
//!   in the notes as `gpu_type.<type>`. `status` is counted as `status.<status>`.
//! * **Times** stay the trace's own offsets (no origin shift, no time zone: field case B18;
//!   the README's note that they match Asia/Shanghai time of day is not applied). Submit =
//!   the job's `start_time`; the task's start and end go through the recorded-times rule
//!   ([`JobSpec::set_recorded_times`]). A task that never launched (empty `start_time`) is
//!   skipped as `never_started`; one without `end_time` (running at the end of the trace)
//!   ends at the largest time of the task table, noted `end_censored_at_trace_end`.
//!
//! Errors (naming file, line and field): a row with the wrong number of fields, an empty
//! required field, a non-numeric or negative number, a fractional or zero `inst_num`,
//! `end_time` before `start_time`, a `.header` file that lacks a column the reader needs.
//!
//! # Order
//!
//! Neither table is sorted by submission: the job table is held as a map (job name → user,
//! submit) and the task rows are read whole and stably sorted by (submit, row order).
//! Memory grows with both tables.

use std::collections::BTreeMap;
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::job::RecordedOutcome;
use super::native::{csv_error, open_lines, parse_seconds_ms, ENDED_BEFORE_WINDOW};
use super::rows::bump;
use super::{JobSpec, RecordedKind, Skipped, TraceError, VecStream};

/// The job table's published columns.
pub const JOB_COLUMNS: [&str; 6] = [
    "job_name",
    "inst_id",
    "user",
    "status",
    "start_time",
    "end_time",
];
/// The task table's published columns.
pub const TASK_COLUMNS: [&str; 10] = [
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
];

/// Reads the column names of `table` (`….csv`): its `….header` file when present, else
/// `default`; returns, for each of `need`, its index.
fn columns(table: &Path, default: &[&str], need: &[&str]) -> Result<Vec<usize>, TraceError> {
    let header = table.with_extension("header");
    let names: Vec<String> = match std::fs::read_to_string(&header) {
        Ok(text) => text
            .lines()
            .next()
            .unwrap_or("")
            .split(',')
            .map(|s| s.trim().to_string())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            default.iter().map(|s| s.to_string()).collect()
        }
        Err(source) => {
            return Err(TraceError::Io {
                path: header,
                source,
            })
        }
    };
    need.iter()
        .map(|n| {
            names
                .iter()
                .position(|c| c == n)
                .ok_or_else(|| TraceError::MissingColumn {
                    path: header.clone(),
                    column: n.to_string(),
                })
        })
        .collect()
}

fn headerless(path: &Path) -> Result<csv::Reader<Box<dyn std::io::Read + Send>>, TraceError> {
    Ok(csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(false)
        .trim(csv::Trim::All)
        .from_reader(open_lines(path)?))
}

/// Decimal text ×`scale`/1000 exactly (`parse_seconds_ms` gives ×1000), rounded half away
/// from zero; must not be negative.
fn scaled(text: &str, num: u128, den: u128) -> Result<u64, String> {
    let milli = parse_seconds_ms(text)?;
    let milli = u128::try_from(milli).map_err(|_| format!("`{text}` is negative"))?;
    let v = (milli * num + den / 2) / den;
    u64::try_from(v).map_err(|_| format!("`{text}` is out of range"))
}

/// Reads the PAI task table at `path` joined with `pai_job_table.csv` beside it (see the
/// module docs for every rule) into a sorted stream.
///
/// # Errors
/// [`TraceError::Io`] when a table cannot be read (including a missing job table);
/// [`TraceError::MissingColumn`] when a `.header` file lacks a needed column;
/// [`TraceError::BadRow`] / [`TraceError::BadField`] for the first bad row or field.
pub fn open(path: &Path) -> Result<VecStream, TraceError> {
    let job_path = path.with_file_name("pai_job_table.csv");
    open_with_job_table(path, &job_path)
}

/// [`open`] with the job table's path given.
///
/// # Errors
/// As [`open`].
pub fn open_with_job_table(path: &Path, job_path: &Path) -> Result<VecStream, TraceError> {
    let jobs = read_job_table(job_path)?;
    let idx = columns(path, &TASK_COLUMNS, &TASK_COLUMNS)?;
    let mut rdr = headerless(path)?;
    let mut rec = csv::StringRecord::new();
    let mut notes = Skipped::new();
    let mut skipped = Skipped::new();
    let mut pending: Vec<(JobSpec, i64, i64, Option<i64>)> = Vec::new();
    let mut trace_end = 0i64;
    loop {
        match rdr.read_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, e)),
        }
        let line = rec.position().map_or(0, |p| p.line());
        let bad = |k: usize, m: String| TraceError::field(path, line, TASK_COLUMNS[k], m);
        let get = |k: usize| rec.get(idx[k]).filter(|s| !s.is_empty());
        let need = |k: usize| get(k).ok_or_else(|| bad(k, "empty (required)".into()));
        let time = |k: usize| -> Result<Option<i64>, TraceError> {
            get(k)
                .map(|t| {
                    let v = parse_seconds_ms(t).map_err(|m| bad(k, m))?;
                    if v < 0 {
                        return Err(bad(k, format!("`{t}` is negative")));
                    }
                    Ok(v)
                })
                .transpose()
        };
        let job_name = need(0)?;
        let task_name = need(1)?;
        let inst_text = need(2)?;
        let inst = scaled(inst_text, 1, 1).map_err(|m| bad(2, m))?;
        if inst == 0 || inst % 1000 != 0 {
            return Err(bad(2, format!("`{inst_text}` is not a whole number ≥ 1")));
        }
        let tasks = u32::try_from(inst / 1000).map_err(|_| bad(2, "out of range".into()))?;
        let start = time(4)?;
        let end = time(5)?;
        let cpu_milli = get(6)
            .map(|t| scaled(t, 1, 100))
            .transpose()
            .map_err(|m| bad(6, m))?;
        let mem_mib = get(7)
            .map(|t| scaled(t, 1024, 1000))
            .transpose()
            .map_err(|m| bad(7, m))?;
        let gpu_pct_milli = get(8)
            .map(|t| scaled(t, 1, 1))
            .transpose()
            .map_err(|m| bad(8, m))?;
        let (num_gpu, gpu_milli) = match gpu_pct_milli.unwrap_or(0) {
            0 => (0, 0),
            p if p <= 100_000 => (1, (p + 50) / 100),
            p => {
                if p % 100_000 != 0 {
                    bump(&mut notes, "plan_gpu_rounded_up");
                }
                (p.div_ceil(100_000), 1000)
            }
        };
        let num_gpu = u32::try_from(num_gpu).map_err(|_| bad(8, "out of range".into()))?;
        let gpu_milli = (gpu_milli as u32).max(u32::from(num_gpu > 0));
        let shape = TaskShape {
            num_gpu,
            gpu_milli,
            cpu_milli: cpu_milli.unwrap_or(0),
            mem_mib: mem_mib.unwrap_or(0),
        };
        super::native::check_shape(path, line, &shape, "plan_gpu", "plan_gpu")?;
        if let (Some(s), Some(e)) = (start, end) {
            if e < s {
                return Err(bad(5, "before start_time".into()));
            }
        }
        for t in [start, end].into_iter().flatten() {
            trace_end = trace_end.max(t);
        }
        let Some((user, submit)) = jobs.get(job_name) else {
            bump(&mut skipped, "job_not_in_job_table");
            continue;
        };
        let Some(start) = start else {
            bump(&mut skipped, "never_started");
            continue;
        };
        if let Some(s) = get(3) {
            bump(&mut notes, format!("status.{s}"));
        }
        if let Some(g) = get(9) {
            bump(&mut notes, format!("gpu_type.{g}"));
        }
        let job = JobSpec {
            name: compact_str::format_compact!("{job_name}/{task_name}"),
            tenant: user.as_str().into(),
            queue: None,
            priority: 0,
            qos: None,
            submit: SimTime::ZERO,
            tasks,
            shape,
            gpu_models: Vec::new(),
            cells: Vec::new(),
            runtime: SimDuration::ZERO,
            time_limit: None,
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology: None,
            // Pod shapes are given: rigid.
            split: false,
            elastic: None,
        };
        pending.push((job, *submit, start, end));
    }
    let mut out = Vec::with_capacity(pending.len());
    for (mut job, submit, start, end) in pending {
        if end.is_none() {
            bump(&mut notes, "end_censored_at_trace_end");
        }
        let end = end.unwrap_or(trace_end).max(start);
        if job.set_recorded_times(submit, start, end) == RecordedOutcome::EndedBeforeWindow {
            bump(&mut skipped, ENDED_BEFORE_WINDOW);
            continue;
        }
        out.push(job);
    }
    Ok(VecStream::new(out, skipped).with_notes(notes))
}

/// job name → (user, submit ms).
fn read_job_table(path: &Path) -> Result<BTreeMap<String, (String, i64)>, TraceError> {
    let idx = columns(path, &JOB_COLUMNS, &["job_name", "user", "start_time"])?;
    let mut rdr = headerless(path)?;
    let mut rec = csv::StringRecord::new();
    let mut map = BTreeMap::new();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, e)),
        }
        let line = rec.position().map_or(0, |p| p.line());
        let field = |i: usize, name: &str| {
            rec.get(idx[i])
                .filter(|s| !s.is_empty())
                .ok_or_else(|| TraceError::field(path, line, name, "empty (required)"))
        };
        let name = field(0, "job_name")?;
        let user = field(1, "user")?;
        let t = field(2, "start_time")?;
        let submit =
            parse_seconds_ms(t).map_err(|m| TraceError::field(path, line, "start_time", m))?;
        if submit < 0 {
            return Err(TraceError::field(
                path,
                line,
                "start_time",
                format!("`{t}` is negative"),
            ));
        }
        map.insert(name.to_string(), (user.to_string(), submit));
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::JobStream;

    // Written by hand from the README's schema (not trace rows).
    const JOBS: &str = "jA,i1,alice,Terminated,1000.0,2000.0
jB,i2,bob,Failed,1500.0,1600.0
jC,i3,bob,Waiting,1700.0,
";
    const TASKS: &str = "jA,worker,2.0,Terminated,1010.0,1990.0,400.0,29.296875,50.0,T4
jA,ps,1.0,Terminated,1010.0,1990.0,600.0,10.0,,
jB,tensorflow,1.0,Failed,1500.0,1600.0,800.0,60.0,800.0,V100
jC,worker,1.0,Waiting,,,100.0,1.0,150.0,MISC
jD,worker,1.0,Running,1800.0,,100.0,1.0,100.0,P100
jB,evaluator,1.0,Running,1550.0,,100.0,1.0,100.0,P100
";

    fn dir_with(jobs: &str, tasks: &str, header: Option<&str>) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pai_job_table.csv"), jobs).unwrap();
        let t = dir.path().join("pai_task_table.csv");
        std::fs::write(&t, tasks).unwrap();
        if let Some(h) = header {
            std::fs::write(dir.path().join("pai_task_table.header"), h).unwrap();
        }
        (dir, t)
    }

    #[test]
    fn joins_and_maps_tasks() {
        let (_d, t) = dir_with(JOBS, TASKS, None);
        let mut s = open(&t).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names,
            ["jA/worker", "jA/ps", "jB/tensorflow", "jB/evaluator"]
        );
        let w = &jobs[0];
        assert_eq!(w.tenant, "alice");
        assert_eq!(w.tasks, 2);
        assert_eq!(
            (w.shape.num_gpu, w.shape.gpu_milli, w.shape.cpu_milli),
            (1, 500, 4000)
        );
        assert_eq!(w.shape.mem_mib, 30_000);
        assert_eq!(w.submit, SimTime::from_secs(1000));
        assert_eq!(w.recorded_start, Some(SimTime::from_secs(1010)));
        assert_eq!(w.runtime, SimDuration::from_secs(980));
        assert_eq!(jobs[1].shape.num_gpu, 0);
        assert_eq!((jobs[2].shape.num_gpu, jobs[2].shape.gpu_milli), (8, 1000));
        // Running at the end: censored at the largest time (1990 s).
        assert_eq!(jobs[3].runtime, SimDuration::from_secs(440));
        assert_eq!(s.skipped()["job_not_in_job_table"], 1);
        assert_eq!(s.skipped()["never_started"], 1);
        assert_eq!(s.notes()["end_censored_at_trace_end"], 1);
        assert_eq!(s.notes()["gpu_type.T4"], 1);
    }

    #[test]
    fn header_file_reorders_columns() {
        let tasks = "worker,jA,2.0,Terminated,1010.0,1990.0,400.0,29.296875,50.0,T4\n";
        let (_d, t) = dir_with(
            JOBS,
            tasks,
            Some("task_name,job_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n"),
        );
        let jobs: Vec<JobSpec> = open(&t).unwrap().map(Result::unwrap).collect();
        assert_eq!(jobs[0].name, "jA/worker");
        let (_d, t) = dir_with(JOBS, tasks, Some("job_name,task_name\n"));
        assert!(
            matches!(open(&t), Err(TraceError::MissingColumn { column, .. }) if column == "inst_num")
        );
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let ok = "jA,worker,1.0,Terminated,1010.0,1990.0,400.0,1.0,50.0,T4\n";
        let cases = [
            (
                "jA,worker,1.5,Terminated,1010.0,1990.0,400.0,1.0,50.0,T4\n",
                "inst_num",
            ),
            (
                "jA,worker,0,Terminated,1010.0,1990.0,400.0,1.0,50.0,T4\n",
                "inst_num",
            ),
            (
                "jA,worker,1.0,Terminated,1010.0,990.0,400.0,1.0,50.0,T4\n",
                "end_time",
            ),
            (
                "jA,worker,1.0,Terminated,1010.0,1990.0,-4,1.0,50.0,T4\n",
                "plan_cpu",
            ),
            (
                "jA,worker,1.0,Terminated,1010.0,1990.0,400.0,x,50.0,T4\n",
                "plan_mem",
            ),
            (
                ",worker,1.0,Terminated,1010.0,1990.0,400.0,1.0,50.0,T4\n",
                "job_name",
            ),
        ];
        for (row, field) in cases {
            let (_d, t) = dir_with(JOBS, &format!("{ok}{row}"), None);
            let e = open(&t).expect_err(row).to_string();
            assert!(
                e.contains("pai_task_table.csv")
                    && e.contains("line 2:")
                    && e.contains(&format!("`{field}`")),
                "{e}"
            );
        }
        let (_d, t) = dir_with("jA,i1,alice,Terminated,x,\n", ok, None);
        let e = open(&t).unwrap_err().to_string();
        assert!(
            e.contains("pai_job_table.csv") && e.contains("`start_time`"),
            "{e}"
        );
        let (_d, t) = dir_with(JOBS, "jA,worker\n", None);
        assert!(open(&t).is_err());
    }
}
