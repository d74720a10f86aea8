//! The Pollux OSDI '21 artifact's workloads (`pollux-workloads/load-*/workload-*.csv`,
//! `name,time,application,num_replicas,batch_size`; `shared/traces/pollux-workloads/SOURCE.md`)
//! as round-allocated (elastic) jobs of the main job stream.
//!
//! Each row is one job with an [`ElasticSpec`]: its application model, its replica count
//! (its size under a rigid allocator) and its global batch size. The files hold no
//! durations: a job's length follows from its application's measured model and the
//! allocations it gets (the scenario's `[elastic]` table, [`crate::engine::elastic`]), so
//! `runtime` is 0 and a scenario refuses these jobs without that table. `time` is integer
//! seconds. Every job gets tenant `pollux` and is a gang of `num_replicas` one-GPU tasks
//! (what jobs.csv reports as its request).

use std::path::{Path, PathBuf};

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::native::{csv_reader, map_columns, next_record, parse_count, Columns, CsvReader};
use super::rows::{Parsed, RowSource};
use super::{
    ElasticSpec, JobSpec, RecordedKind, Skipped, TraceError, TraceStream, TrainedSpec, VecStream,
};

/// The columns of a workload file.
pub const COLUMNS: [&str; 5] = ["name", "time", "application", "num_replicas", "batch_size"];
const NAME: usize = 0;
const TIME: usize = 1;
const APP: usize = 2;
const REPLICAS: usize = 3;
const BATCH: usize = 4;
/// Bounds a typo: the artifact's jobs ask for at most 64 replicas.
const MAX_REPLICAS: u32 = 1 << 16;

struct PolluxRows {
    path: PathBuf,
    rdr: CsvReader,
    cols: Columns,
    rec: csv::StringRecord,
}

/// Opens a workload file for streaming (rows must be in time order).
///
/// # Errors
/// [`TraceError`] for an unreadable file or a bad header (file and line).
pub fn open(path: &Path) -> Result<TraceStream, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &COLUMNS, &COLUMNS, None)?;
    let rows = PolluxRows {
        path: path.to_path_buf(),
        rdr,
        cols,
        rec: csv::StringRecord::new(),
    };
    Ok(TraceStream::new(path, Box::new(rows), COLUMNS[TIME]))
}

/// Reads the whole file and sorts it stably by time (ties keep file order).
///
/// # Errors
/// As [`open`], and the first bad row (file, line, field).
pub fn read_all_sorted(path: &Path) -> Result<VecStream, TraceError> {
    open(path)?.into_sorted()
}

impl PolluxRows {
    fn row(&mut self, line: u64) -> Result<Parsed, TraceError> {
        let path = &self.path;
        let bad = |k: usize, m: String| TraceError::field(path, line, COLUMNS[k], m);
        let need = |k: usize| {
            self.cols
                .get(&self.rec, k)
                .ok_or_else(|| bad(k, "empty (required)".to_string()))
        };
        let name = need(NAME)?.to_string();
        let secs = parse_count::<u64>(need(TIME)?).map_err(|m| bad(TIME, m))?;
        // Milliseconds in the `i64` range, as the native readers take them (later than that
        // the engine's sums of times overflow).
        let submit = secs
            .checked_mul(1000)
            .filter(|&ms| ms <= i64::MAX as u64)
            .ok_or_else(|| bad(TIME, format!("{secs} s is out of range")))?;
        let application = need(APP)?.to_string();
        let replicas = parse_count::<u32>(need(REPLICAS)?).map_err(|m| bad(REPLICAS, m))?;
        if replicas == 0 || replicas > MAX_REPLICAS {
            return Err(bad(
                REPLICAS,
                format!("{replicas} is not in 1..={MAX_REPLICAS}"),
            ));
        }
        let batch_size = parse_count::<u32>(need(BATCH)?).map_err(|m| bad(BATCH, m))?;
        if batch_size == 0 {
            return Err(bad(BATCH, "must be positive".to_string()));
        }
        Ok(Parsed::Job(Box::new(JobSpec {
            name: name.into(),
            tenant: "pollux".into(),
            queue: None,
            priority: 0,
            qos: None,
            submit: SimTime(submit),
            tasks: replicas,
            shape: TaskShape::whole_gpus(1),
            gpu_models: Vec::new(),
            cells: Vec::new(),
            runtime: SimDuration::ZERO,
            time_limit: None,
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology: None,
            split: false,
            elastic: Some(Box::new(ElasticSpec::Trained(TrainedSpec {
                application,
                replicas,
                batch_size,
            }))),
        })))
    }
}

impl RowSource for PolluxRows {
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
    fn rows_are_elastic_jobs_and_bad_rows_name_their_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.csv");
        std::fs::write(
            &p,
            "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\n",
        )
        .unwrap();
        let jobs: Vec<JobSpec> = open(&p).unwrap().map(Result::unwrap).collect();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].submit, SimTime::from_secs(107));
        assert_eq!((jobs[0].tasks, jobs[0].shape.num_gpu), (6, 1));
        let Some(ElasticSpec::Trained(e)) = jobs[0].elastic.as_deref() else {
            panic!("a trained elastic spec");
        };
        assert_eq!(
            (e.application.as_str(), e.replicas, e.batch_size),
            ("cifar10", 6, 2048)
        );
        let first_error = |text: &str| {
            std::fs::write(&p, text).unwrap();
            open(&p)
                .unwrap()
                .find_map(Result::err)
                .expect("a bad row")
                .to_string()
        };
        let err = first_error(
            "name,time,application,num_replicas,batch_size\nx-0,5,bert,1,32\nx-1,6,bert,0,32\n",
        );
        assert!(
            err.contains("line 3") && err.contains("num_replicas"),
            "{err}"
        );
        let err = first_error(
            "name,time,application,num_replicas,batch_size\nx-0,18446744073709551,bert,1,32\n",
        );
        assert!(err.contains("line 2") && err.contains("`time`"), "{err}");
    }
}
