//! Reader for the SenseTime Helios job logs, `cluster_log.csv` (Q. Hu et al.,
//! "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
//! Datacenters", SC '21; `S-Lab-System-Group/HeliosData`). The schema is the one the
//! HeliosData README publishes; the real logs are not in this repository, so the tests use
//! small samples written from that schema.
//!
//! # Source format
//!
//! CSV with the header
//! `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue`
//! (any order; unknown or duplicated columns are errors; `duration` and `queue` optional):
//!
//! | column | unit |
//! |---|---|
//! | `job_id`, `user`, `vc` (virtual cluster) | – |
//! | `gpu_num`, `cpu_num`, `node_num` | totals over the job's nodes |
//! | `state` | `COMPLETED`, `CANCELLED`, `FAILED`, `TIMEOUT`, `NODE_FAIL`, … |
//! | `submit_time`, `start_time`, `end_time` | naive wall clock `YYYY-MM-DD HH:MM:SS`; empty / `None` / `NaN` = not happened |
//! | `duration` (= end − start), `queue` (= start − submit) | s (not used: recomputed) |
//!
//! # Mapping to [`JobSpec`]
//!
//! * **Times** by calendar arithmetic only (no time zone, no DST: field case B18); t = 0 is
//!   the first row's `submit_time` when streaming ([`open`]), the earliest with
//!   [`read_all_sorted`]; whole seconds, exact in ms. The recorded-times rule
//!   ([`JobSpec::set_recorded_times`]) applies to (submit, start, end).
//! * **Never started** (no `start_time`): a `CANCELLED` job is kept as never ran (reported
//!   cancelled); any other is skipped as `never_started`. A started job without `end_time`
//!   is skipped as `end_missing`.
//! * **Resources**: a gang of `node_num` tasks when it divides `gpu_num` and `cpu_num`
//!   (each task `gpu_num / node_num` whole GPUs and `cpu_num / node_num` cores); otherwise
//!   one task up to 8 GPUs, else [`gang_split`]`(gpu_num, 8)` tasks with the CPUs divided and
//!   rounded up. `gpu_num` 0 = a CPU-only job. No memory request (the log has none).
//! * **Tenant** = `vc`; **name** = `job_id`; queue none; `state` counted in the notes as
//!   `state.<STATE>`.
//!
//! Errors (naming file, line and field): a malformed timestamp or count, `end_time` before
//! `start_time`, a task above 64 GPUs.
//!
//! # Order
//!
//! The published logs are sorted by `submit_time`; [`open`] streams and checks it,
//! [`read_all_sorted`] reads twice (earliest submit, then jobs) and sorts.

use std::path::{Path, PathBuf};

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::job::RecordedOutcome;
use super::native::{
    csv_reader, map_columns, next_record, parse_count, Columns, CsvReader, ENDED_BEFORE_WINDOW,
};
use super::philly::gang_split;
use super::rows::{bump, Parsed, RowSource};
use super::timefmt::{parse_naive_timestamp, Origin};
use super::{JobSpec, RecordedKind, Skipped, TraceError, TraceStream, VecStream};

/// Every column of `cluster_log.csv`.
pub const COLUMNS: [&str; 12] = [
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
];
const REQUIRED: [&str; 10] = [
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
];
const JOB_ID: usize = 0;
const VC: usize = 2;
const GPU_NUM: usize = 3;
const CPU_NUM: usize = 4;
const NODE_NUM: usize = 5;
const STATE: usize = 6;
const SUBMIT: usize = 7;
const START: usize = 8;
const END: usize = 9;

struct HeliosRows {
    path: PathBuf,
    rdr: CsvReader,
    cols: Columns,
    rec: csv::StringRecord,
    origin: Origin,
}

fn open_rows(path: &Path, origin: Origin) -> Result<HeliosRows, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &COLUMNS, &REQUIRED, None)?;
    Ok(HeliosRows {
        path: path.to_path_buf(),
        rdr,
        cols,
        rec: csv::StringRecord::new(),
        origin,
    })
}

/// A Helios time: naive seconds, `None` when empty, `None`, `NaN` or `NaT`.
fn time(path: &Path, line: u64, k: usize, text: Option<&str>) -> Result<Option<i64>, TraceError> {
    match text {
        None | Some("None" | "NaN" | "nan" | "NaT") => Ok(None),
        Some(t) => parse_naive_timestamp(t)
            .map(Some)
            .map_err(|m| TraceError::field(path, line, COLUMNS[k], m)),
    }
}

/// Opens a Helios `cluster_log.csv` for streaming (t = 0 at the first row's submit time);
/// see the module docs for every rule.
///
/// # Errors
/// [`TraceError::Io`], [`TraceError::MissingColumn`], [`TraceError::BadField`] for an
/// unknown or duplicated column. Row errors come from the iterator.
pub fn open(path: &Path) -> Result<TraceStream, TraceError> {
    let rows = open_rows(path, Origin::default())?;
    Ok(TraceStream::new(path, Box::new(rows), COLUMNS[SUBMIT]))
}

/// Reads a whole Helios log in any order (t = 0 at the earliest submit time) and stably
/// sorts it by (submit, row order).
///
/// # Errors
/// As [`open`], plus the first row error.
pub fn read_all_sorted(path: &Path) -> Result<VecStream, TraceError> {
    let mut scan = open_rows(path, Origin::default())?;
    let mut earliest: Option<i64> = None;
    while let Some(line) = next_record(path, &mut scan.rdr, &mut scan.rec) {
        let line = line?;
        if let Some(t) = time(path, line, SUBMIT, scan.cols.get(&scan.rec, SUBMIT))? {
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
        }
    }
    let rows = open_rows(path, Origin(earliest))?;
    TraceStream::new(path, Box::new(rows), COLUMNS[SUBMIT]).into_sorted()
}

impl HeliosRows {
    fn row(&mut self, line: u64, notes: &mut Skipped) -> Result<Parsed, TraceError> {
        let path = self.path.clone();
        let bad = |k: usize, m: String| TraceError::field(&path, line, COLUMNS[k], m);
        let get = |k: usize| self.cols.get(&self.rec, k);
        let need = |k: usize| get(k).ok_or_else(|| bad(k, "empty (required)".to_string()));
        let count = |k: usize| -> Result<u64, TraceError> {
            parse_count::<u64>(need(k)?).map_err(|m| bad(k, m))
        };
        let name = need(JOB_ID)?.to_string();
        let tenant = need(VC)?.to_string();
        let gpus = count(GPU_NUM)?;
        let cpus = count(CPU_NUM)?;
        let nodes = count(NODE_NUM)?;
        let state = need(STATE)?.to_string();
        let submit = time(&path, line, SUBMIT, get(SUBMIT))?
            .ok_or_else(|| bad(SUBMIT, "empty (required)".into()))?;
        let start = time(&path, line, START, get(START))?;
        let end = time(&path, line, END, get(END))?;
        let g32 = u32::try_from(gpus).map_err(|_| bad(GPU_NUM, "out of range".into()))?;
        let (tasks, per_task) =
            if nodes >= 1 && gpus % nodes == 0 && cpus % nodes == 0 && u32::try_from(nodes).is_ok()
            {
                (nodes as u32, (gpus / nodes) as u32)
            } else if g32 <= 8 {
                (1, g32)
            } else {
                gang_split(g32, 8)
            };
        let shape = TaskShape {
            cpu_milli: cpus
                .div_ceil(u64::from(tasks))
                .checked_mul(1000)
                .ok_or_else(|| bad(CPU_NUM, "out of range".into()))?,
            ..TaskShape::whole_gpus(per_task)
        };
        super::native::check_shape(&path, line, &shape, COLUMNS[GPU_NUM], COLUMNS[GPU_NUM])?;
        let mut rel = |k: usize, s: i64| {
            self.origin
                .rel_ms(s)
                .ok_or_else(|| bad(k, "out of range relative to the trace start".into()))
        };
        let submit_ms = rel(SUBMIT, submit)?;
        let mut job = JobSpec {
            name: name.into(),
            tenant: tenant.into(),
            queue: None,
            priority: 0,
            qos: None,
            submit: SimTime(submit_ms.max(0) as u64),
            tasks,
            shape,
            gpu_models: Vec::new(),
            cells: Vec::new(),
            runtime: SimDuration::ZERO,
            time_limit: None,
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology: None,
            // A job size, not a pod shape: takes the node's shape.
            split: true,
            elastic: None,
        };
        let Some(start) = start else {
            if state == "CANCELLED" {
                bump(notes, "state.CANCELLED");
                job.recorded = RecordedKind::NeverRan;
                return Ok(Parsed::Job(Box::new(job)));
            }
            return Ok(Parsed::Skip("never_started"));
        };
        let Some(end) = end else {
            return Ok(Parsed::Skip("end_missing"));
        };
        if end < start {
            return Err(bad(END, "before start_time".into()));
        }
        let (start_ms, end_ms) = (rel(START, start)?, rel(END, end)?);
        bump(notes, format!("state.{state}"));
        if job.set_recorded_times(submit_ms, start_ms, end_ms) == RecordedOutcome::EndedBeforeWindow
        {
            return Ok(Parsed::Skip(ENDED_BEFORE_WINDOW));
        }
        Ok(Parsed::Job(Box::new(job)))
    }
}

impl RowSource for HeliosRows {
    /// The first converted submit time (t = 0), naive: Helios states no time zone.
    fn trace_start(&self) -> Option<super::TraceStart> {
        self.origin.0.map(|o| super::TraceStart::local(o, None))
    }

    fn next_row(&mut self, notes: &mut Skipped) -> Option<Result<(u64, Parsed), TraceError>> {
        let line = match next_record(&self.path, &mut self.rdr, &mut self.rec)? {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        Some(self.row(line, notes).map(|p| (line, p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::JobStream;

    const H: &str =
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n";

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn sample_written_from_the_schema() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "cluster_log.csv",
            &format!(
                "{H}j1,u1,vcA,16,32,2,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 01:00:10,3600,10
j2,u2,vcB,0,4,1,FAILED,2020-04-01 00:00:05,2020-04-01 00:00:05,2020-04-01 00:00:05,0,0
j3,u2,vcB,1,2,1,CANCELLED,2020-04-01 00:01:00,,,,
j4,u3,vcA,2,8,1,TIMEOUT,2020-04-01 00:02:00,None,None,,
j5,u3,vcA,12,8,2,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:03:00,2020-04-01 00:04:00,60,0
"
            ),
        );
        let mut s = open(&p).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        assert_eq!(jobs.len(), 4);
        assert_eq!(
            (
                jobs[0].tasks,
                jobs[0].shape.num_gpu,
                jobs[0].shape.cpu_milli
            ),
            (2, 8, 16_000)
        );
        assert_eq!(jobs[0].recorded_start, Some(SimTime::from_secs(10)));
        assert_eq!(jobs[0].runtime, SimDuration::from_secs(3600));
        assert_eq!(jobs[0].tenant, "vcA");
        assert_eq!(jobs[1].shape.num_gpu, 0);
        assert_eq!(jobs[2].recorded, RecordedKind::NeverRan);
        assert_eq!((jobs[3].tasks, jobs[3].shape.num_gpu), (2, 6));
        assert_eq!(s.skipped()["never_started"], 1);
        assert_eq!(s.notes()["state.COMPLETED"], 2);
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let ok = "j1,u1,vcA,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 00:01:10,60,10\n";
        let cases = [
            ("j2,u1,vcA,x,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 00:01:10,60,10\n", "gpu_num"),
            ("j2,u1,vcA,1,1,1,COMPLETED,2020-04-31 00:00:00,2020-04-01 00:00:10,2020-04-01 00:01:10,60,10\n", "submit_time"),
            ("j2,u1,vcA,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 00:00:01,60,10\n", "end_time"),
            ("j2,u1,,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 00:01:10,60,10\n", "vc"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (i, (row, field)) in cases.iter().enumerate() {
            let name = format!("bad{i}.csv");
            let p = write(&dir, &name, &format!("{H}{ok}{row}"));
            let e = open(&p)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .expect_err(row)
                .to_string();
            assert!(
                e.contains(&name) && e.contains("line 3:") && e.contains(&format!("`{field}`")),
                "{e}"
            );
        }
        // Unsorted: streaming fails, sorting works with t = 0 at the earliest submit.
        let p = write(
            &dir,
            "unsorted.csv",
            &format!("{H}{ok}j0,u,vcA,1,1,1,COMPLETED,2020-04-01 00:00:30,2020-04-01 00:00:40,2020-04-01 00:00:50,,\nj9,u,vcA,1,1,1,COMPLETED,2020-03-31 23:59:00,2020-04-01 00:00:00,2020-04-01 00:00:50,,\n"),
        );
        assert!(open(&p).unwrap().collect::<Result<Vec<_>, _>>().is_err());
        let jobs: Vec<JobSpec> = read_all_sorted(&p).unwrap().map(Result::unwrap).collect();
        assert_eq!(jobs[0].name, "j9");
        assert_eq!(jobs[1].submit, SimTime::from_secs(60));
    }
}
