//! The Tiresias simulator's job list (`SymbioticLab/Tiresias`, `simulator/*.csv`:
//! `job_id,num_gpu,submit_time,iterations,model_name,duration,interval`), read under its
//! `count` placement scheme: a job of `num_gpu` GPUs is a gang of `num_gpu` one-GPU tasks with
//! no topology constraint, so on a fleet of whole-GPU nodes it fits exactly when at least
//! `num_gpu` GPUs are free anywhere (the peer's single cluster-wide free-GPU counter).
//!
//! `submit_time` and `duration` are integer seconds (the peer's clock); `iterations`,
//! `model_name` and `interval` are accepted and ignored (the peer uses them only for CPU and
//! memory bookkeeping that `count` ignores). Every job gets tenant `tiresias`. A job of 0
//! GPUs is one task with no accelerator.

use std::path::{Path, PathBuf};

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::native::{csv_reader, map_columns, next_record, parse_count, Columns, CsvReader};
use super::rows::{Parsed, RowSource};
use super::{JobSpec, RecordedKind, Skipped, TraceError, TraceStream, VecStream};

/// The columns the peer's job files have.
pub const COLUMNS: [&str; 7] = [
    "job_id",
    "num_gpu",
    "submit_time",
    "iterations",
    "model_name",
    "duration",
    "interval",
];
const REQUIRED: [&str; 4] = ["job_id", "num_gpu", "submit_time", "duration"];
const JOB_ID: usize = 0;
const NUM_GPU: usize = 1;
const SUBMIT: usize = 2;
const DURATION: usize = 5;
/// The peer's largest job is far below this; it bounds a typo.
const MAX_GPUS: u32 = 1 << 20;

struct TiresiasRows {
    path: PathBuf,
    rdr: CsvReader,
    cols: Columns,
    rec: csv::StringRecord,
}

/// Opens a job file for streaming (rows must be in submit order).
///
/// # Errors
/// [`TraceError`] for an unreadable file or a bad header (file and line).
pub fn open(path: &Path) -> Result<TraceStream, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &COLUMNS, &REQUIRED, None)?;
    let rows = TiresiasRows {
        path: path.to_path_buf(),
        rdr,
        cols,
        rec: csv::StringRecord::new(),
    };
    Ok(TraceStream::new(path, Box::new(rows), COLUMNS[SUBMIT]))
}

/// Reads the whole file and sorts it stably by submit time (ties keep file order, as the
/// peer's `sort` does).
///
/// # Errors
/// As [`open`], and the first bad row (file, line, field).
pub fn read_all_sorted(path: &Path) -> Result<VecStream, TraceError> {
    open(path)?.into_sorted()
}

impl TiresiasRows {
    fn row(&mut self, line: u64) -> Result<Parsed, TraceError> {
        let path = &self.path;
        let bad = |k: usize, m: String| TraceError::field(path, line, COLUMNS[k], m);
        let need = |k: usize| {
            self.cols
                .get(&self.rec, k)
                .ok_or_else(|| bad(k, "empty (required)".to_string()))
        };
        let secs = |k: usize| -> Result<u64, TraceError> {
            let s = parse_count::<u64>(need(k)?).map_err(|m| bad(k, m))?;
            // Milliseconds in the `i64` range, as the native readers take them.
            s.checked_mul(1000)
                .filter(|&ms| ms <= i64::MAX as u64)
                .ok_or_else(|| bad(k, format!("{s} s is out of range")))
        };
        let name = need(JOB_ID)?.to_string();
        let gpus = parse_count::<u32>(need(NUM_GPU)?).map_err(|m| bad(NUM_GPU, m))?;
        if gpus > MAX_GPUS {
            return Err(bad(NUM_GPU, format!("above {MAX_GPUS}")));
        }
        let submit = secs(SUBMIT)?;
        let runtime = secs(DURATION)?;
        let (tasks, shape) = if gpus == 0 {
            (1, TaskShape::default())
        } else {
            (gpus, TaskShape::whole_gpus(1))
        };
        Ok(Parsed::Job(Box::new(JobSpec {
            name: name.into(),
            tenant: "tiresias".into(),
            queue: None,
            priority: 0,
            qos: None,
            submit: SimTime(submit),
            tasks,
            shape,
            gpu_models: Vec::new(),
            cells: Vec::new(),
            runtime: SimDuration(runtime),
            time_limit: None,
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology: None,
            // A job size, not a pod shape: takes the node's shape.
            split: true,
            elastic: None,
        })))
    }
}

impl RowSource for TiresiasRows {
    fn next_row(&mut self, _notes: &mut Skipped) -> Option<Result<(u64, Parsed), TraceError>> {
        let line = match next_record(&self.path, &mut self.rdr, &mut self.rec)? {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        Some(self.row(line).map(|p| (line, p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_gangs_of_one_gpu_tasks_and_bad_rows_name_their_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("jobs.csv");
        std::fs::write(
            &p,
            "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n\
             0,1,0,30,resnet50,30,70\n1,8,70,61,resnet50,61,226\n",
        )
        .unwrap();
        let jobs: Vec<JobSpec> = open(&p).unwrap().map(Result::unwrap).collect();
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[1].tasks, jobs[1].shape.num_gpu), (8, 1));
        assert_eq!(jobs[1].submit, SimTime::from_secs(70));
        assert_eq!(jobs[1].runtime, SimDuration::from_secs(61));
        std::fs::write(
            &p,
            "job_id,num_gpu,submit_time,duration\n0,1,0,30\n1,x,5,3\n",
        )
        .unwrap();
        let err = open(&p)
            .unwrap()
            .find_map(Result::err)
            .expect("a bad row")
            .to_string();
        assert!(err.contains("line 3") && err.contains("num_gpu"), "{err}");
    }
}
