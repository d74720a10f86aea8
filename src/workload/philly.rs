//! Reader for the Microsoft Philly per-job table `philly_jobs_pollux.csv` (derived from the
//! ATC '19 trace `msr-fiddle/philly-traces` by the Pollux OSDI '21 artifact,
//! `petuum/adaptdl` `simulator/traces/philly.csv`).
//!
//! # Source format
//!
//! CSV with the header `timestamp,duration,num_gpus,gpu_time,cluster` (any column order;
//! unknown or duplicated columns are errors):
//!
//! | column | meaning | unit |
//! |---|---|---|
//! | `timestamp` | submission time | naive local wall clock `YYYY-MM-DD HH:MM:SS` (US Pacific) |
//! | `duration` | sum of the run times of all scheduling attempts | seconds (decimal) |
//! | `num_gpus` | GPUs per attempt | whole GPUs, integer ≥ 1 |
//! | `gpu_time` | `duration × num_gpus` | GPU-seconds |
//! | `cluster` | virtual cluster (VC) hash | – |
//!
//! # Mapping to [`JobSpec`]
//!
//! * **Submit**: the timestamp is turned into seconds by pure calendar arithmetic on the
//!   naive value (days from the civil date, proleptic Gregorian, + h·3600 + m·60 + s); no time
//!   zone, no host setting and no date library is involved, and the DST change of
//!   2017-11-05 is deliberately **not** applied (the trace's own clock is replayed as is, so
//!   the result is deterministic). submit = that − the earliest timestamp in the file, so the
//!   first job is at t = 0.
//! * **Order**: rows are not sorted in the file; all rows are loaded and stably sorted by
//!   (timestamp, original row index).
//! * **Runtime** = `duration` converted exactly from the decimal text to milliseconds,
//!   rounding half away from zero ([`super::native::parse_seconds_ms`]).
//! * **Resources** (gang rule, [`gang_split`] with 8 GPUs per task): `num_gpus` ≤ 8 → one
//!   task of `num_gpus` whole GPUs; above 8 → tasks of `s` GPUs, `s` the largest of
//!   {8, 4, 2, 1} dividing `num_gpus`, `num_gpus / s` tasks (16 → 2×8, 12 → 3×4, 24 → 3×8,
//!   128 → 16×8). No CPU or memory request (the trace has none).
//! * **Tenant** = `cluster` (the VC); `queue` = none; `priority` = 0; `name` = the row's
//!   1-based line number (the header is line 1), as text; no recorded start (the file has
//!   none); no QoS.
//!
//! Errors (each naming file, line and field): a bad `timestamp` (format, month, day, hour,
//! minute, second out of range); a non-numeric or negative `duration`; `num_gpus` 0 or not a
//! whole number; `gpu_time` differing from `duration × num_gpus` by more than 1e-6 relative
//! (of `max(|duration × num_gpus|, 1)`); an empty `cluster`.

use std::path::Path;

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::native::{csv_reader, map_columns, next_record, parse_count, parse_seconds_ms};
use super::{JobSpec, RecordedKind, Skipped, TraceError, VecStream};

/// The zone of Philly's naive timestamps, as the trace's documentation states it (its
/// utilization files are stamped PDT/PST); reported, never applied.
pub const PHILLY_ZONE: &str = "US Pacific";

const COLUMNS: [&str; 5] = ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"];
const TIMESTAMP: usize = 0;
const DURATION: usize = 1;
const NUM_GPUS: usize = 2;
const GPU_TIME: usize = 3;
const CLUSTER: usize = 4;

/// Splits a request of `num_gpus` GPUs into a gang: returns `(tasks, gpus_per_task)`.
///
/// `num_gpus ≤ max_per_task` → `(1, num_gpus)`; otherwise the task size is the largest power
/// of two not above `max_per_task` that divides `num_gpus` (for 8: the largest of
/// {8, 4, 2, 1}), and the gang has `num_gpus / size` tasks. With `max_per_task` = 8:
/// 16 → (2, 8), 12 → (3, 4), 24 → (3, 8), 128 → (16, 8), 9 → (9, 1).
/// `max_per_task` 0 is treated as 1.
pub fn gang_split(num_gpus: u32, max_per_task: u32) -> (u32, u32) {
    if num_gpus <= max_per_task {
        return (1, num_gpus);
    }
    let mut size = 1u32 << (31 - max_per_task.max(1).leading_zeros());
    while !num_gpus.is_multiple_of(size) {
        size /= 2;
    }
    (num_gpus / size, size)
}

pub use super::timefmt::parse_naive_timestamp;

/// One parsed row before the submit offset is known.
struct Row {
    at_s: i64,
    line: u64,
    job: JobSpec,
}

fn parse_row(
    path: &Path,
    line: u64,
    cols: &super::native::Columns,
    rec: &csv::StringRecord,
) -> Result<Row, TraceError> {
    let bad = |k: usize, m: String| TraceError::field(path, line, COLUMNS[k], m);
    let need = |k: usize| {
        cols.get(rec, k)
            .ok_or_else(|| bad(k, "empty (required)".to_string()))
    };
    let at_s = parse_naive_timestamp(need(TIMESTAMP)?).map_err(|m| bad(TIMESTAMP, m))?;
    let duration_text = need(DURATION)?;
    let runtime_ms = parse_seconds_ms(duration_text).map_err(|m| bad(DURATION, m))?;
    if runtime_ms < 0 || duration_text.starts_with('-') {
        return Err(bad(DURATION, format!("`{duration_text}` is negative")));
    }
    let num_gpus: u32 = parse_count(need(NUM_GPUS)?).map_err(|m| bad(NUM_GPUS, m))?;
    if num_gpus == 0 {
        return Err(bad(NUM_GPUS, "must be at least 1".to_string()));
    }
    let gpu_time_text = need(GPU_TIME)?;
    let gpu_time: f64 = gpu_time_text
        .parse()
        .ok()
        .filter(|g: &f64| g.is_finite())
        .ok_or_else(|| bad(GPU_TIME, format!("`{gpu_time_text}` is not a number")))?;
    let duration: f64 = duration_text
        .parse()
        .map_err(|_| bad(DURATION, format!("`{duration_text}` is not a number")))?;
    let expect = duration * f64::from(num_gpus);
    if (gpu_time - expect).abs() > 1e-6 * expect.abs().max(1.0) {
        return Err(bad(
            GPU_TIME,
            format!("{gpu_time_text} differs from duration × num_gpus = {expect}"),
        ));
    }
    let tenant = need(CLUSTER)?.to_string();
    let (tasks, per_task) = gang_split(num_gpus, 8);
    Ok(Row {
        at_s,
        line,
        job: JobSpec {
            name: compact_str::ToCompactString::to_compact_string(&line),
            tenant: tenant.into(),
            queue: None,
            priority: 0,
            qos: None,
            submit: SimTime::ZERO,
            tasks,
            shape: TaskShape::whole_gpus(per_task),
            gpu_models: Vec::new(),
            cells: Vec::new(),
            runtime: SimDuration(runtime_ms as u64),
            time_limit: None,
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology: None,
            // A job size, not a pod shape: takes the node's shape.
            split: true,
            elastic: None,
        },
    })
}

/// Reads `philly_jobs_pollux.csv` (see the module docs for every rule) into a sorted stream.
///
/// # Errors
/// [`TraceError::Io`] when the file cannot be read; [`TraceError::MissingColumn`] for a
/// missing column; [`TraceError::BadField`] for an unknown column or the first bad field;
/// [`TraceError::BadRow`] for a wrong number of fields.
pub fn open(path: &Path) -> Result<VecStream, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &COLUMNS, &COLUMNS, None)?;
    let mut rec = csv::StringRecord::new();
    let mut rows = Vec::new();
    while let Some(line) = next_record(path, &mut rdr, &mut rec) {
        rows.push(parse_row(path, line?, &cols, &rec)?);
    }
    rows.sort_by_key(|r| (r.at_s, r.line));
    let start = rows
        .first()
        .map(|r| super::TraceStart::local(r.at_s, Some(PHILLY_ZONE.to_string())));
    let origin = rows.first().map(|r| r.at_s).unwrap_or(0);
    let jobs = rows
        .into_iter()
        .map(|r| {
            let mut job = r.job;
            job.submit = SimTime::from_secs((r.at_s - origin) as u64);
            job
        })
        .collect();
    Ok(VecStream::new(jobs, Skipped::new()).with_start(start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::JobStream;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    const H: &str = "timestamp,duration,num_gpus,gpu_time,cluster\n";

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn read(path: &Path) -> Result<Vec<JobSpec>, TraceError> {
        open(path)?.collect()
    }

    #[test]
    fn gang_rule() {
        let cases = [
            (1, (1, 1)),
            (2, (1, 2)),
            (8, (1, 8)),
            (12, (3, 4)),
            (16, (2, 8)),
            (24, (3, 8)),
            (32, (4, 8)),
            (128, (16, 8)),
            (9, (9, 1)),
            (10, (5, 2)),
        ];
        for (n, want) in cases {
            assert_eq!(gang_split(n, 8), want, "{n}");
        }
        assert_eq!(gang_split(12, 4), (3, 4));
        assert_eq!(gang_split(12, 6), (3, 4));
        assert_eq!(gang_split(16, 64), (1, 16));
        assert_eq!(gang_split(3, 0), (3, 1));
    }

    #[test]
    fn calendar_arithmetic_without_time_zones() {
        let t = |s: &str| parse_naive_timestamp(s).unwrap();
        // Days since 1970-01-01 × 86,400 s: 2000-03-01 is 30 years (7 leap days) + 59 days
        // = 10,957 + 60 = 11,017 days.
        assert_eq!(t("1970-01-01 00:00:00"), 0);
        assert_eq!(t("2000-03-01 00:00:00"), 11_017 * 86_400);
        assert_eq!(t("2017-09-04 00:00:00"), 17_413 * 86_400);
        assert_eq!(t("1600-02-29 00:00:00"), -135_081 * 86_400);
        // DST ended 2017-11-05 in US Pacific: deliberately not applied.
        assert_eq!(t("2017-11-05 02:30:00") - t("2017-11-05 01:30:00"), 3600);
        assert_eq!(
            t("2017-12-22 08:02:11") - t("2017-09-04 10:30:41"),
            9_408_690
        );
        assert_eq!(t("2016-02-29 00:00:00") - t("2016-02-28 00:00:00"), 86_400);
        for bad in [
            "2017-02-29 00:00:00",
            "2017-13-01 00:00:00",
            "2017-00-01 00:00:00",
            "2017-04-31 00:00:00",
            "2017-10-09 24:00:00",
            "2017-10-09 07:60:00",
            "2017-10-09 07:01:60",
            "2017/10/09 07:01:55",
            "2017-10-09T07:01:55",
            "2017-10-09 07:01:55Z",
            "2017-10-9 07:01:55",
            "",
        ] {
            assert!(parse_naive_timestamp(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sorts_and_maps_rows() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "philly.csv",
            &format!(
                "{H}2017-10-09 07:01:55,66.0,1,66.0,vc1
2017-10-09 06:13:03,2951.5,16,47224.0,vc2
2017-10-09 07:01:55,10.0004,12,120.0048,vc1
2017-10-09 06:13:04,1.0,24,24.0,vc3
"
            ),
        );
        let jobs = read(&p).unwrap();
        let view: Vec<(&str, u64, u32, u32, u64, &str)> = jobs
            .iter()
            .map(|j| {
                (
                    j.name.as_str(),
                    j.submit.0,
                    j.tasks,
                    j.shape.num_gpu,
                    j.runtime.0,
                    j.tenant.as_str(),
                )
            })
            .collect();
        assert_eq!(
            view,
            [
                ("3", 0, 2, 8, 2_951_500, "vc2"),
                ("5", 1000, 3, 8, 1000, "vc3"),
                ("2", 2_932_000, 1, 1, 66_000, "vc1"),
                ("4", 2_932_000, 3, 4, 10_000, "vc1"),
            ]
        );
        assert!(jobs
            .iter()
            .all(|j| j.shape.gpu_milli == 1000 && j.queue.is_none()));
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let ok = "2017-10-09 07:01:55,66.0,1,66.0,vc1\n";
        let cases = [
            ("2017-02-30 07:01:55,66.0,1,66.0,vc1\n", "timestamp"),
            ("2017-10-09,66.0,1,66.0,vc1\n", "timestamp"),
            ("2017-10-09 07:01:55,abc,1,66.0,vc1\n", "duration"),
            ("2017-10-09 07:01:55,-66.0,1,-66.0,vc1\n", "duration"),
            ("2017-10-09 07:01:55,66.0,0,0.0,vc1\n", "num_gpus"),
            ("2017-10-09 07:01:55,66.0,1.5,99.0,vc1\n", "num_gpus"),
            ("2017-10-09 07:01:55,66.0,2,66.0,vc1\n", "gpu_time"),
            ("2017-10-09 07:01:55,66.0,2,x,vc1\n", "gpu_time"),
            ("2017-10-09 07:01:55,66.0,1,66.0,\n", "cluster"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (i, (row, field)) in cases.iter().enumerate() {
            let name = format!("bad{i}.csv");
            let p = write(&dir, &name, &format!("{H}{ok}{row}"));
            let e = read(&p).expect_err(row).to_string();
            assert!(
                e.contains(&name) && e.contains("line 3:") && e.contains(&format!("`{field}`")),
                "{e}"
            );
        }
        let p = write(&dir, "cols.csv", "timestamp,duration,num_gpus,cluster\n");
        assert!(
            matches!(read(&p), Err(TraceError::MissingColumn { column, .. }) if column == "gpu_time")
        );
        let p = write(&dir, "empty.csv", H);
        assert!(read(&p).unwrap().is_empty());
    }

    #[test]
    fn public_philly_jobs() {
        let Some(p) = crate::public_trace("philly/philly_jobs_pollux.csv") else {
            return;
        };
        let s = open(&p).unwrap();
        assert!(s.skipped().is_empty());
        let jobs: Vec<JobSpec> = s.map(Result::unwrap).collect();
        assert_eq!(jobs.len(), 82_247);
        let tenants: std::collections::BTreeSet<&str> =
            jobs.iter().map(|j| j.tenant.as_str()).collect();
        assert_eq!(tenants.len(), 15);
        let mut hist: BTreeMap<u64, u64> = BTreeMap::new();
        for j in &jobs {
            *hist.entry(j.total_gpu_milli() / 1000).or_insert(0) += 1;
        }
        let want: BTreeMap<u64, u64> = [
            (1, 76_627),
            (2, 1_818),
            (4, 1_870),
            (8, 1_643),
            (12, 7),
            (16, 199),
            (24, 7),
            (32, 67),
            (64, 6),
            (128, 3),
        ]
        .into_iter()
        .collect();
        assert_eq!(hist, want);
        assert_eq!(jobs[0].submit, SimTime::ZERO);
        // 2017-12-22 08:02:11 − 2017-09-04 10:30:41 = 109 days − 2 h 28 min 30 s.
        assert_eq!(
            jobs.last().unwrap().submit,
            SimTime::from_secs(109 * 86_400 - 8_910)
        );
        assert!(jobs.windows(2).all(|w| w[0].submit <= w[1].submit));
        assert!(jobs.iter().all(|j| j.shape.num_gpu <= 8));
        let per_vc = jobs.iter().filter(|j| j.tenant == "6214e9").count();
        assert_eq!(per_vc, 41_226);
    }
}
