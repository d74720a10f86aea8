//! Reader for the Alibaba "openb" GPU pod lists (FGD, Weng et al., USENIX ATC '23;
//! `alibaba/clusterdata`, `cluster-trace-gpu-v2023`).
//!
//! # Source format
//!
//! CSV with a header. The timed files (`openb_pod_list_default.csv`, `cpu*`, `gpushare*`,
//! `gpuspec*`) have 11 columns:
//! `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`.
//! The `multigpu*` files have only the first five; they carry no times and can be used only
//! through [`read_pod_shapes`] (time-free, "inflation" experiments). Opening them with
//! [`open`] fails with [`TraceError::MissingColumn`] naming `creation_time`.
//!
//! Units: `cpu_milli` milli-cores; `memory_mib` MiB; `num_gpu` accelerators; `gpu_milli` the
//! share of each accelerator (1000 = whole; `< 1000` = GPU sharing); times in seconds since
//! the trace start (t = 0 is the first pod). Columns may come in any order; unknown or
//! duplicated columns are errors.
//!
//! # Time conversion
//!
//! Times are converted to integer milliseconds exactly from the decimal text (the files hold
//! whole seconds), rounding half away from zero should a value have more than three
//! fractional digits ([`super::native::parse_seconds_ms`]). Negative times are errors.
//!
//! # Mapping to [`JobSpec`]
//!
//! * `name` = `name`; `tenant` = `"openb"` (the trace names no tenant, user or namespace);
//!   `queue` = none; `priority` = 0; `qos` = `qos` (none when empty).
//! * `submit` = `creation_time`.
//! * `tasks` = 1; `shape` = `{num_gpu, gpu_milli, cpu_milli, memory_mib}`, validated with
//!   [`TaskShape::validate`] (`gpu_milli` in `1..=1000` when `num_gpu` > 0, 0 otherwise).
//! * `gpu_models` = the `|`-separated `gpu_spec` set, de-duplicated and sorted (the files
//!   contain duplicates such as `V100M16|V100M32|V100M32`); every model must be in the
//!   accelerator catalog. Empty = any model.
//! * `runtime` = `deletion_time − scheduled_time` when `scheduled_time` is present, else
//!   `deletion_time − creation_time`. The latter are the `Pending` pods (897 in the default
//!   file): they never ran in the recorded cluster, and in the simulator they run from their
//!   start until the length of their recorded lifetime if the simulator can place them.
//! * `recorded_start` = `scheduled_time` (none for pending pods); `recorded` = `Normal`.
//! * `pod_phase` is not used (it is the last observed phase only).
//!
//! Errors (each naming file, line and field): non-numeric or negative times or resources,
//! `deletion_time < creation_time`, `scheduled_time < creation_time`,
//! `deletion_time < scheduled_time`, an inconsistent shape, an unknown `gpu_spec` model, an
//! empty `name`, a wrong number of fields, a missing column.
//!
//! # Order
//!
//! [`open`] streams rows without loading the file and requires it to be sorted by
//! `creation_time` (the default and `gpuspec*` files are); a row whose `creation_time` is
//! smaller than the previous row's is an error telling to use [`read_all_sorted`], which
//! loads the file and stably sorts it by (creation time, row order) — needed for the `cpu*`
//! and `gpushare*` variants. Pod names are not checked for uniqueness.

use std::path::{Path, PathBuf};

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::native::{
    check_shape, csv_reader, map_columns, next_record, parse_count, parse_models, parse_nonneg_ms,
    Columns, CsvReader,
};
use super::{JobSpec, JobStream, RecordedKind, Skipped, TraceError, VecStream};

/// The tenant every openb pod gets (the trace has none).
pub const TENANT: &str = "openb";

const COLUMNS: [&str; 11] = [
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
];
const NAME: usize = 0;
const CPU_MILLI: usize = 1;
const MEMORY_MIB: usize = 2;
const NUM_GPU: usize = 3;
const GPU_MILLI: usize = 4;
const GPU_SPEC: usize = 5;
const QOS: usize = 6;
const CREATION: usize = 8;
const DELETION: usize = 9;
const SCHEDULED: usize = 10;

/// Columns [`open`] requires: the times first, so a 5-column file is reported as lacking
/// `creation_time`.
const TIMED_REQUIRED: [&str; 11] = [
    "creation_time",
    "deletion_time",
    "scheduled_time",
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
];

/// Columns [`read_pod_shapes`] requires.
const SHAPE_REQUIRED: [&str; 5] = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"];

/// One pod's shape, without times (for time-free experiments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodShape {
    /// Pod name (`openb-pod-NNNN`).
    pub name: String,
    /// The request: accelerators, milli-GPU share, milli-cores, MiB.
    pub shape: TaskShape,
    /// Allowed models from `gpu_spec` (sorted, de-duplicated); empty = any, and always empty
    /// for the 5-column files.
    pub gpu_models: Vec<String>,
    /// The `gpu_spec` text with empty pieces dropped, duplicates and order kept
    /// (`V100M16|V100M32|V100M32`): the FGD artifact's type key for its typical-pod table.
    /// Empty = any model.
    pub gpu_spec_key: String,
    /// QoS class; `None` for the 5-column files, which have no `qos` column.
    pub qos: Option<String>,
}

/// Parses the resource columns of a row.
fn parse_shape(
    path: &Path,
    line: u64,
    cols: &Columns,
    rec: &csv::StringRecord,
) -> Result<PodShape, TraceError> {
    let get = |k: usize| cols.get(rec, k);
    let need = |k: usize| {
        get(k).ok_or_else(|| TraceError::field(path, line, COLUMNS[k], "empty (required)"))
    };
    let num = |k: usize| -> Result<u64, TraceError> {
        parse_count::<u64>(need(k)?).map_err(|m| TraceError::field(path, line, COLUMNS[k], m))
    };
    let num32 = |k: usize| -> Result<u32, TraceError> {
        parse_count::<u32>(need(k)?).map_err(|m| TraceError::field(path, line, COLUMNS[k], m))
    };
    let name = need(NAME)?.to_string();
    let shape = TaskShape {
        num_gpu: num32(NUM_GPU)?,
        gpu_milli: num32(GPU_MILLI)?,
        cpu_milli: num(CPU_MILLI)?,
        mem_mib: num(MEMORY_MIB)?,
    };
    check_shape(path, line, &shape, COLUMNS[NUM_GPU], COLUMNS[GPU_MILLI])?;
    let gpu_models = get(GPU_SPEC)
        .map(|t| parse_models(t).map_err(|m| TraceError::field(path, line, "gpu_spec", m)))
        .transpose()?
        .unwrap_or_default();
    let gpu_spec_key = get(GPU_SPEC)
        .map(|t| {
            t.split('|')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("|")
        })
        .unwrap_or_default();
    Ok(PodShape {
        name,
        shape,
        gpu_models,
        gpu_spec_key,
        qos: get(QOS).map(str::to_string),
    })
}

/// Parses a whole timed row into a job.
fn parse_job(
    path: &Path,
    line: u64,
    cols: &Columns,
    rec: &csv::StringRecord,
) -> Result<JobSpec, TraceError> {
    let pod = parse_shape(path, line, cols, rec)?;
    let time = |k: usize| -> Result<Option<u64>, TraceError> {
        cols.get(rec, k)
            .map(|t| parse_nonneg_ms(t).map_err(|m| TraceError::field(path, line, COLUMNS[k], m)))
            .transpose()
    };
    let missing = |k: usize| TraceError::field(path, line, COLUMNS[k], "empty (required)");
    let created = time(CREATION)?.ok_or_else(|| missing(CREATION))?;
    let deleted = time(DELETION)?.ok_or_else(|| missing(DELETION))?;
    let scheduled = time(SCHEDULED)?;
    let secs = |ms: u64| SimTime(ms).to_string();
    if deleted < created {
        return Err(TraceError::field(
            path,
            line,
            "deletion_time",
            format!(
                "deletion {} is before creation {}",
                secs(deleted),
                secs(created)
            ),
        ));
    }
    if let Some(s) = scheduled {
        if s < created {
            return Err(TraceError::field(
                path,
                line,
                "scheduled_time",
                format!("scheduled {} is before creation {}", secs(s), secs(created)),
            ));
        }
        if deleted < s {
            return Err(TraceError::field(
                path,
                line,
                "deletion_time",
                format!(
                    "deletion {} is before scheduling {}",
                    secs(deleted),
                    secs(s)
                ),
            ));
        }
    }
    Ok(JobSpec {
        name: pod.name.into(),
        tenant: TENANT.into(),
        queue: None,
        priority: 0,
        qos: pod.qos,
        submit: SimTime(created),
        tasks: 1,
        shape: pod.shape,
        gpu_models: pod.gpu_models,
        cells: Vec::new(),
        runtime: SimDuration(deleted - scheduled.unwrap_or(created)),
        time_limit: None,
        recorded_start: scheduled.map(SimTime),
        recorded: RecordedKind::Normal,
        topology: None,
        // Pod shapes are given: rigid.
        split: false,
        elastic: None,
    })
}

/// A streaming reader of a timed openb pod list sorted by `creation_time`.
///
/// After the first error the stream ends.
pub struct OpenbPods {
    path: PathBuf,
    rdr: CsvReader,
    cols: Columns,
    rec: csv::StringRecord,
    check_order: bool,
    prev: Option<(SimTime, u64)>,
    done: bool,
}

/// Opens a timed (11-column) openb pod list for streaming.
///
/// # Errors
/// [`TraceError::Io`] when the file cannot be read; [`TraceError::MissingColumn`] when a
/// column is missing (a 5-column `multigpu*` file lacks `creation_time`: use
/// [`read_pod_shapes`]); [`TraceError::BadField`] for an unknown or duplicated column. Row
/// errors, including a `creation_time` smaller than the previous row's, come from the
/// iterator.
pub fn open(path: &Path) -> Result<OpenbPods, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &COLUMNS, &TIMED_REQUIRED, None)?;
    Ok(OpenbPods {
        path: path.to_path_buf(),
        rdr,
        cols,
        rec: csv::StringRecord::new(),
        check_order: true,
        prev: None,
        done: false,
    })
}

/// Reads a whole timed openb pod list in any row order and stably sorts it by
/// (creation time, row order). Use for the unsorted `cpu*` and `gpushare*` variants.
///
/// # Errors
/// As [`open`], plus the first row error.
pub fn read_all_sorted(path: &Path) -> Result<VecStream, TraceError> {
    let mut pods = open(path)?;
    pods.check_order = false;
    let jobs = pods.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok(VecStream::new(jobs, Skipped::new()))
}

/// Reads the pod shapes of any openb pod list (5- or 11-column), in file order, ignoring
/// times. `qos` and `gpu_models` are filled when the file has those columns.
///
/// # Errors
/// [`TraceError::Io`], [`TraceError::MissingColumn`] (one of `name`, `cpu_milli`,
/// `memory_mib`, `num_gpu`, `gpu_milli`), [`TraceError::BadField`] for an unknown column, a
/// bad resource value or an unknown `gpu_spec` model, [`TraceError::BadRow`] for a wrong
/// number of fields.
pub fn read_pod_shapes(path: &Path) -> Result<Vec<PodShape>, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &COLUMNS, &SHAPE_REQUIRED, None)?;
    let mut rec = csv::StringRecord::new();
    let mut out = Vec::new();
    while let Some(line) = next_record(path, &mut rdr, &mut rec) {
        out.push(parse_shape(path, line?, &cols, &rec)?);
    }
    Ok(out)
}

impl OpenbPods {
    fn next_job(&mut self) -> Option<Result<JobSpec, TraceError>> {
        let line = match next_record(&self.path, &mut self.rdr, &mut self.rec)? {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        let job = match parse_job(&self.path, line, &self.cols, &self.rec) {
            Ok(j) => j,
            Err(e) => return Some(Err(e)),
        };
        if self.check_order {
            if let Some((prev, prev_line)) = self.prev {
                if job.submit < prev {
                    return Some(Err(TraceError::field(
                        &self.path,
                        line,
                        "creation_time",
                        format!(
                            "creation time {} is earlier than {} on line {prev_line}: the file is \
                             not sorted by creation_time; set `sort = true` in the scenario's `[workload.trace]`",
                            job.submit, prev
                        ),
                    )));
                }
            }
            self.prev = Some((job.submit, line));
        }
        Some(Ok(job))
    }
}

impl Iterator for OpenbPods {
    type Item = Result<JobSpec, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_job();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

impl JobStream for OpenbPods {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const H: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        fs::write(&p, text).unwrap();
        p
    }

    fn read(path: &Path) -> Result<Vec<JobSpec>, TraceError> {
        open(path)?.collect()
    }

    /// Reads `H` + `rows` and checks the error names the file, `line` and `field`.
    fn err_of(rows: &str, line: u64, field: Option<&str>) -> String {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, "pods.csv", &format!("{H}{rows}"));
        let e = read(&p).expect_err("must fail").to_string();
        assert!(
            e.contains("pods.csv") && e.contains(&format!("line {line}:")),
            "{e}"
        );
        if let Some(f) = field {
            assert!(e.contains(&format!("`{f}`")), "{e}");
        }
        e
    }

    #[test]
    fn maps_rows_to_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "pods.csv",
            &format!(
                "{H}p0,12000,16384,1,1000,,LS,Running,0,100,0
p1,6000,12288,1,460,V100M32|V100M16|V100M32,BE,Succeeded,10,50,12
p2,1000,1024,0,0,,,Pending,10,70,
p3,4000,2048,8,1000,,Burstable,Failed,20,40,25
"
            ),
        );
        let jobs = read(&p).unwrap();
        assert_eq!(jobs.len(), 4);
        let p1 = &jobs[1];
        assert_eq!(p1.name, "p1");
        assert_eq!(p1.tenant, TENANT);
        assert_eq!(p1.qos.as_deref(), Some("BE"));
        assert_eq!(p1.submit, SimTime::from_secs(10));
        assert_eq!(p1.runtime, SimDuration::from_secs(38));
        assert_eq!(p1.recorded_start, Some(SimTime::from_secs(12)));
        assert_eq!(p1.gpu_models, ["V100M16", "V100M32"]);
        assert_eq!(
            p1.shape,
            TaskShape {
                num_gpu: 1,
                gpu_milli: 460,
                cpu_milli: 6000,
                mem_mib: 12288
            }
        );
        // Pending: no scheduled time; runs for its recorded lifetime.
        assert_eq!(jobs[2].runtime, SimDuration::from_secs(60));
        assert_eq!(jobs[2].recorded_start, None);
        assert_eq!(jobs[2].qos, None);
        assert_eq!(jobs[3].runtime, SimDuration::from_secs(15));
        assert_eq!(jobs[3].total_gpu_milli(), 8000);
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let ok = "p0,1000,1024,1,1000,,LS,Running,0,100,0\n";
        err_of(
            &format!("{ok}p1,1000,1024,1,1000,,LS,Running,-1,100,0\n"),
            3,
            Some("creation_time"),
        );
        err_of(
            "p1,1000,1024,1,1000,,LS,Running,abc,100,0\n",
            2,
            Some("creation_time"),
        );
        err_of(
            "p1,1000,1024,1,1000,,LS,Running,0,100,x\n",
            2,
            Some("scheduled_time"),
        );
        err_of(
            "p1,1000,1024,1,1000,,LS,Running,0,,0\n",
            2,
            Some("deletion_time"),
        );
        err_of(
            "p1,-1000,1024,1,1000,,LS,Running,0,100,0\n",
            2,
            Some("cpu_milli"),
        );
        err_of(
            "p1,1000,1.5,1,1000,,LS,Running,0,100,0\n",
            2,
            Some("memory_mib"),
        );
        err_of(
            "p1,1000,1024,x,1000,,LS,Running,0,100,0\n",
            2,
            Some("num_gpu"),
        );
        err_of(
            "p1,1000,1024,1,1000,,LS,Running,50,40,50\n",
            2,
            Some("deletion_time"),
        );
        err_of(
            "p1,1000,1024,1,1000,,LS,Running,10,100,5\n",
            2,
            Some("scheduled_time"),
        );
        err_of(
            "p1,1000,1024,1,1000,,LS,Running,10,20,30\n",
            2,
            Some("deletion_time"),
        );
        err_of(
            "p1,1000,1024,1,0,,LS,Running,0,100,0\n",
            2,
            Some("gpu_milli"),
        );
        err_of(
            "p1,1000,1024,1,1001,,LS,Running,0,100,0\n",
            2,
            Some("gpu_milli"),
        );
        err_of(
            "p1,1000,1024,0,500,,LS,Running,0,100,0\n",
            2,
            Some("gpu_milli"),
        );
        err_of(
            "p1,1000,1024,1,1000,V100M16|X1,LS,Running,0,100,0\n",
            2,
            Some("gpu_spec"),
        );
        err_of("p1,1000,1024,1,1000,,LS,Running,0,100\n", 2, None);
        err_of(",1000,1024,1,1000,,LS,Running,0,100,0\n", 2, Some("name"));
        let e = err_of(
            &format!("{ok}p1,1,1,0,0,,LS,Running,5,9,5\np2,1,1,0,0,,LS,Running,4,9,4\n"),
            4,
            Some("creation_time"),
        );
        assert!(e.contains("sort = true") && e.contains("line 3"), "{e}");
    }

    #[test]
    fn five_column_files_are_shapes_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "multigpu.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,250\np1,8000,4096,8,1000\n",
        );
        match open(&p) {
            Err(TraceError::MissingColumn { column, .. }) => assert_eq!(column, "creation_time"),
            Err(e) => panic!("wrong error {e}"),
            Ok(_) => panic!("must fail"),
        }
        let shapes = read_pod_shapes(&p).unwrap();
        assert_eq!(shapes.len(), 2);
        assert_eq!(shapes[0].shape.gpu_milli, 250);
        assert_eq!(shapes[1].shape.num_gpu, 8);
        assert!(shapes[1].qos.is_none() && shapes[1].gpu_models.is_empty());
        let p = write(
            &dir,
            "extra.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\n",
        );
        let e = read_pod_shapes(&p).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("`colour`"), "{e}");
    }

    #[test]
    fn read_all_sorted_sorts_stably() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "unsorted.csv",
            &format!(
                "{H}b,1,1,0,0,,LS,Running,5,9,5\na,1,1,0,0,,LS,Running,4,9,4\nc,1,1,0,0,,LS,Running,5,9,5\nd,1,1,0,0,,LS,Running,4,9,\n"
            ),
        );
        assert!(read(&p).is_err());
        let names: Vec<compact_str::CompactString> = read_all_sorted(&p)
            .unwrap()
            .map(|j| j.unwrap().name)
            .collect();
        assert_eq!(names, ["a", "d", "b", "c"]);
    }

    fn public(file: &str) -> Option<PathBuf> {
        crate::public_trace(&format!("alibaba-gpu-2023/{file}"))
    }

    #[test]
    fn public_default_pod_list() {
        let Some(p) = public("openb_pod_list_default.csv") else {
            return;
        };
        let jobs = read(&p).unwrap();
        assert_eq!(jobs.len(), 8152);
        assert_eq!(jobs.iter().filter(|j| j.shape.num_gpu == 0).count(), 1088);
        assert_eq!(
            jobs.iter().filter(|j| j.shape.is_fractional()).count(),
            3078
        );
        assert_eq!(
            jobs.iter().map(JobSpec::total_gpu_milli).sum::<u64>(),
            6_086_800
        );
        assert_eq!(
            jobs.iter().filter(|j| j.recorded_start.is_none()).count(),
            897
        );
        assert_eq!(jobs.iter().filter(|j| j.shape.num_gpu > 1).count(), 75);
        assert_eq!(jobs.last().unwrap().submit, SimTime::from_secs(12_901_761));
        assert!(jobs.iter().all(|j| j.tasks == 1 && j.gpu_models.is_empty()));
    }

    #[test]
    fn public_pod_list_variants() {
        let Some(dir) = public("") else { return };
        let mut names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("openb_pod_list_") && n.ends_with(".csv"))
            .collect();
        names.sort();
        for n in &names {
            let p = dir.join(n);
            let shapes = read_pod_shapes(&p).unwrap();
            if n.contains("multigpu") {
                let want = match n.as_str() {
                    "openb_pod_list_multigpu20.csv" => 8324,
                    "openb_pod_list_multigpu30.csv" => 8508,
                    "openb_pod_list_multigpu40.csv" => 8746,
                    _ => 9061,
                };
                assert_eq!(shapes.len(), want, "{n}");
                assert!(open(&p).is_err());
            } else {
                let jobs: Vec<JobSpec> = read_all_sorted(&p).unwrap().map(Result::unwrap).collect();
                assert_eq!(jobs.len(), shapes.len(), "{n}");
                if n.contains("gpuspec") || n.contains("default") {
                    assert_eq!(read(&p).unwrap().len(), jobs.len(), "{n} is sorted");
                }
            }
        }
    }
}
