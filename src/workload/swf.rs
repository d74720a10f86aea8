//! Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive
//! (D. G. Feitelson, D. Tsafrir, D. Krakov, "Experience with using the Parallel Workloads
//! Archive", JPDC 74(10), 2014; format definition at
//! <https://www.cs.huji.ac.il/labs/parallel/workload/swf.html>).
//!
//! # Source format
//!
//! Plain text, optionally gzip-compressed (`.gz`). Lines starting with `;` are header
//! comments (`; Key: value`); blank lines are ignored; every other line is one job of
//! exactly 18 whitespace-separated numbers, `-1` meaning "missing":
//!
//! | # | field | unit |
//! |---:|---|---|
//! | 1 | job number | – |
//! | 2 | submit time | s since the log start (`UnixStartTime` header) |
//! | 3 | wait time | s |
//! | 4 | run time (wall clock) | s |
//! | 5 | allocated processors | count |
//! | 6 | average CPU time used | s (not used) |
//! | 7 | used memory | KB per processor (not used) |
//! | 8 | requested processors | count |
//! | 9 | requested time (user limit) | s |
//! | 10 | requested memory | KB per processor |
//! | 11 | status | 1 completed, 0 failed, 5 cancelled; 2/3/4 partial-execution records |
//! | 12 | user id | – |
//! | 13 | group id | – |
//! | 14 | executable number | – (not used) |
//! | 15 | queue number | – |
//! | 16 | partition number | – |
//! | 17 | preceding job number | – (not used) |
//! | 18 | think time from preceding job | s (not used) |
//!
//! Header lines read: `Partition: <n> <name>` and `Queue: <n> <name>` name partitions and
//! queues; the numeric headers `UnixStartTime`, `MaxNodes`, `MaxProcs`, `MaxJobs`,
//! `MaxRecords`, `MaxPartitions`, `MaxQueues` and `TimeZone` are reported as notes
//! `header.<Key>` (value, not a count) by [`JobStream::notes`](super::JobStream::notes).
//! Other header lines are ignored. Times stay relative to the log start (t = 0 = field 2's
//! zero, no shift): the `UnixStartTime` and `TimeZoneString` headers are never applied to
//! them (field case B18), but report the log start as
//! [`JobStream::trace_start`](super::JobStream::trace_start): `UnixStartTime` epoch seconds
//! as a UTC time, with `TimeZoneString` as its zone (none without `UnixStartTime`).
//!
//! # Mapping to [`JobSpec`]
//!
//! * **Skipped rows** (counted by reason): submit time −1 → `submit_missing`; status 2, 3 or
//!   4 → `partial_execution_record` (SWF represents a checkpointed or swapped job by one
//!   summary line followed by its partial executions: only the summary is a job);
//!   run time −1 (and not a cancelled job) → `runtime_missing`; allocated and requested
//!   processors both missing or 0 → `processors_missing`.
//! * **Submit** = field 2, converted exactly to ms (decimal text, half away from zero).
//! * **Runtime** = field 4. A cancelled job (status 5) with run time −1 never ran:
//!   [`RecordedKind::NeverRan`] (reported as cancelled).
//! * **Recorded start**: when the wait time is known (≥ 0), start = submit + wait and
//!   end = start + run time, and the recorded-times rule
//!   ([`JobSpec::set_recorded_times`]) applies; with wait −1 (as in both public logs) no
//!   start is recorded.
//! * **Resources** — processors map to accelerators one to one: `p` = allocated processors
//!   (field 5), or requested (field 8) when allocated is missing (noted as
//!   `processors_from_requested`); the job is a gang split by
//!   [`gang_split`]`(p, 8)` (up to 8 accelerators per task:
//!   128 → 16 × 8, 1 → 1 × 1). Memory per task = requested memory (field 10, KB per
//!   processor) × accelerators per task, in MiB rounded up; none when −1. No CPU request.
//! * **Tenant** = `g<group>` (field 13) when known, else `u<user>` (field 12), else
//!   `unknown`: groups are the accounts or virtual organisations quotas attach to.
//! * **Queue** = none (the scenario decides); **QoS label** = the queue's name from the
//!   `Queue:` header, else `q<number>`, none when −1.
//! * **Cells** = the partition (field 16): its name from the `Partition:` header, else
//!   `partition-<n>`; none when −1. A scenario replaying a partitioned log must declare
//!   cells with those names.
//! * **Time limit** = requested time (field 9) when ≥ 0.
//! * **Name** = the job number; **status** is counted in the notes as `status.completed`,
//!   `status.failed`, `status.cancelled`, `status.missing` (−1).
//!
//! Errors (naming file, line and field): a line with other than 18 fields, a non-numeric
//! field, a negative value other than −1, a processor count or memory that overflows.
//!
//! # Order
//!
//! SWF logs are sorted by submit time (the format requires it); [`open`] streams and checks
//! it. [`open`]`(…)?.`[`into_sorted`](super::TraceStream::into_sorted) sorts a log that is
//! not.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::job::RecordedOutcome;
use super::native::{open_lines, parse_seconds_ms, ENDED_BEFORE_WINDOW};
use super::philly::gang_split;
use super::rows::{bump, Parsed, RowSource};
use super::{JobSpec, RecordedKind, Skipped, TraceError, TraceStream};

/// The 18 SWF field names, as used in error messages.
pub const FIELDS: [&str; 18] = [
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable_number",
    "queue_number",
    "partition_number",
    "preceding_job_number",
    "think_time",
];

const NUMERIC_HEADERS: [&str; 8] = [
    "UnixStartTime",
    "MaxNodes",
    "MaxProcs",
    "MaxJobs",
    "MaxRecords",
    "MaxPartitions",
    "MaxQueues",
    "TimeZone",
];

/// Accelerators per task of the gang a job's processors become.
pub const GPUS_PER_TASK: u32 = 8;

struct SwfRows {
    path: PathBuf,
    input: BufReader<Box<dyn Read + Send>>,
    line: u64,
    buf: Vec<u8>,
    partitions: BTreeMap<i64, String>,
    queues: BTreeMap<i64, String>,
    unix_start: Option<i64>,
    zone: Option<String>,
}

/// Opens an SWF log (plain or `.gz`) for streaming; see the module docs for every rule.
///
/// # Errors
/// [`TraceError::Io`] when the file cannot be opened. Row errors (and rows out of submit
/// order) come from the iterator.
pub fn open(path: &Path) -> Result<TraceStream, TraceError> {
    let src = SwfRows {
        path: path.to_path_buf(),
        input: BufReader::new(open_lines(path)?),
        line: 0,
        buf: Vec::new(),
        partitions: BTreeMap::new(),
        queues: BTreeMap::new(),
        unix_start: None,
        zone: None,
    };
    Ok(TraceStream::new(path, Box::new(src), FIELDS[1]))
}

/// Parses a numbered header value `"<n> <name>"`.
fn numbered_name(value: &str) -> Option<(i64, String)> {
    let mut it = value.split_whitespace();
    let n = it.next()?.parse().ok()?;
    let name: Vec<&str> = it.collect();
    (!name.is_empty()).then(|| (n, name.join(" ")))
}

impl SwfRows {
    fn header(&mut self, text: &str, notes: &mut Skipped) {
        let Some((key, value)) = text.trim_start_matches(';').split_once(':') else {
            return;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "Partition" => {
                if let Some((n, name)) = numbered_name(value) {
                    self.partitions.insert(n, name);
                }
            }
            "Queue" => {
                if let Some((n, name)) = numbered_name(value) {
                    self.queues.insert(n, name);
                }
            }
            "TimeZoneString" if !value.is_empty() => self.zone = Some(value.to_string()),
            k if NUMERIC_HEADERS.contains(&k) => {
                if let Ok(v) = value.parse::<i64>() {
                    if k == "UnixStartTime" {
                        self.unix_start = Some(v);
                    }
                    notes.insert(format!("header.{k}"), v.unsigned_abs());
                }
            }
            _ => {}
        }
    }

    fn job(&self, line: u64, text: &str, notes: &mut Skipped) -> Result<Parsed, TraceError> {
        let path = &self.path;
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 18 {
            return Err(TraceError::BadRow {
                path: path.clone(),
                line,
                message: format!("expected 18 fields, found {}", fields.len()),
            });
        }
        let bad = |k: usize, m: String| TraceError::field(path, line, FIELDS[k], m);
        // A number: exact milliseconds of the decimal text; `None` for −1.
        let ms = |k: usize| -> Result<Option<i64>, TraceError> {
            let v = parse_seconds_ms(fields[k]).map_err(|m| bad(k, m))?;
            match v {
                -1000 => Ok(None),
                v if v < 0 => Err(bad(k, format!("`{}` is negative", fields[k]))),
                v => Ok(Some(v)),
            }
        };
        // A whole number; `None` for −1.
        let int = |k: usize| -> Result<Option<u64>, TraceError> {
            match ms(k)? {
                None => Ok(None),
                Some(v) if v % 1000 == 0 => Ok(Some(v as u64 / 1000)),
                Some(_) => Err(bad(k, format!("`{}` is not a whole number", fields[k]))),
            }
        };
        let status = int(10)?;
        let submit = ms(1)?;
        let wait = ms(2)?;
        let run = ms(3)?;
        let allocated = int(4)?.filter(|&p| p > 0);
        let requested = int(7)?.filter(|&p| p > 0);
        let limit = ms(8)?;
        let mem_kb = int(9)?;
        let user = int(11)?;
        let group = int(12)?;
        let queue = int(14)?;
        let partition = int(15)?;
        let Some(submit) = submit else {
            return Ok(Parsed::Skip("submit_missing"));
        };
        if matches!(status, Some(2..=4)) {
            return Ok(Parsed::Skip("partial_execution_record"));
        }
        let cancelled = status == Some(5);
        if run.is_none() && !cancelled {
            return Ok(Parsed::Skip("runtime_missing"));
        }
        let procs = match (allocated, requested) {
            (Some(p), _) => p,
            (None, Some(p)) => {
                bump(notes, "processors_from_requested");
                p
            }
            (None, None) => return Ok(Parsed::Skip("processors_missing")),
        };
        let procs = u32::try_from(procs).map_err(|_| {
            let k = if allocated.is_some() { 4 } else { 7 };
            bad(k, format!("{procs} processors is out of range"))
        })?;
        let (tasks, per_task) = gang_split(procs, GPUS_PER_TASK);
        let mem_mib = match mem_kb {
            None => 0,
            Some(kb) => kb
                .checked_mul(u64::from(per_task))
                .map(|t| t.div_ceil(1024))
                .ok_or_else(|| bad(9, format!("{kb} KB per processor overflows")))?,
        };
        bump(
            notes,
            match status {
                Some(0) => "status.failed",
                Some(1) => "status.completed",
                Some(5) => "status.cancelled",
                None => "status.missing",
                Some(_) => "status.other",
            },
        );
        let tenant = match (group, user) {
            (Some(g), _) => format!("g{g}"),
            (None, Some(u)) => format!("u{u}"),
            (None, None) => "unknown".to_string(),
        };
        let name_of = |map: &BTreeMap<i64, String>, n: u64, prefix: &str| {
            map.get(&(n as i64))
                .cloned()
                .unwrap_or_else(|| format!("{prefix}{n}"))
        };
        let mut job = JobSpec {
            name: fields[0].into(),
            tenant: tenant.into(),
            queue: None,
            priority: 0,
            qos: queue.map(|q| name_of(&self.queues, q, "q")),
            submit: SimTime(submit as u64),
            tasks,
            shape: TaskShape {
                mem_mib,
                ..TaskShape::whole_gpus(per_task)
            },
            gpu_models: Vec::new(),
            cells: partition
                .map(|p| vec![name_of(&self.partitions, p, "partition-")])
                .unwrap_or_default(),
            runtime: SimDuration(run.unwrap_or(0) as u64),
            time_limit: limit.map(|l| SimDuration(l as u64)),
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology: None,
            // A job size, not a pod shape: takes the node's shape.
            split: true,
            elastic: None,
        };
        match (run, wait) {
            (None, _) => {
                job.recorded = RecordedKind::NeverRan;
                job.runtime = SimDuration::ZERO;
            }
            (Some(run), Some(wait)) => {
                let start = submit.checked_add(wait);
                let end = start.and_then(|s| s.checked_add(run));
                let (Some(start), Some(end)) = (start, end) else {
                    return Err(bad(2, "submit + wait + run time overflows".to_string()));
                };
                if job.set_recorded_times(submit, start, end) == RecordedOutcome::EndedBeforeWindow
                {
                    return Ok(Parsed::Skip(ENDED_BEFORE_WINDOW));
                }
            }
            (Some(_), None) => {}
        }
        Ok(Parsed::Job(Box::new(job)))
    }
}

impl RowSource for SwfRows {
    fn trace_start(&self) -> Option<super::TraceStart> {
        self.unix_start
            .map(|e| super::TraceStart::utc(e, self.zone.clone()))
    }

    fn next_row(&mut self, notes: &mut Skipped) -> Option<Result<(u64, Parsed), TraceError>> {
        loop {
            self.buf.clear();
            self.line += 1;
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => return Some(Err(super::line_cap::io_error(&self.path, source))),
            }
            let line = self.line;
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => t.trim().to_string(),
                Err(_) => {
                    return Some(Err(TraceError::BadRow {
                        path: self.path.clone(),
                        line,
                        message: "not valid UTF-8".to_string(),
                    }))
                }
            };
            if text.is_empty() {
                continue;
            }
            if text.starts_with(';') {
                self.header(&text, notes);
                continue;
            }
            return Some(self.job(line, &text, notes).map(|p| (line, p)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::JobStream;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const LOG: &str = "; Version: 2.2
; UnixStartTime: 749458803
; MaxNodes: 128
; Queue:  0  interactive
; Partition: 3 grid.kiae.ru
    1   0  -1  1451 128 -1 -1  -1    -1  -1  1  1  1 -1 -1 -1 -1 -1
    2  10   5    20  -1 -1 -1  12   600 2048  0  7 -1 -1  0  3 -1 -1

    3  11  -1    -1   4 -1 -1  -1    -1  -1  5  1  2 -1 -1 -1 -1 -1
    4  12  -1    30   4 -1 -1  -1    -1  -1  2  1  2 -1 -1 -1 -1 -1
    5  -1  -1    30   4 -1 -1  -1    -1  -1  1  1  2 -1 -1 -1 -1 -1
    6  13  -1    -1   4 -1 -1  -1    -1  -1  1  1  2 -1 -1 -1 -1 -1
    7  14  -1    10  -1 -1 -1  -1    -1  -1  1  1  2 -1 -1  9 -1 -1
    8  15  -1   0.0005  1 -1 -1  -1    -1  -1 -1 -1 -1 -1 -1 -1 -1 -1
";

    #[test]
    fn unix_start_time_is_the_trace_start() {
        use crate::workload::TraceStart;
        let dir = tempfile::tempdir().unwrap();
        // 749458803 s = 8674 days after 1970-01-01 (1993-10-01) + 25203 s (07:00:03), UTC.
        let s = open(&write(&dir, "a.swf", LOG))
            .unwrap()
            .into_sorted()
            .unwrap();
        let want = |zone: Option<&str>| TraceStart {
            time: "1993-10-01T07:00:03Z".to_string(),
            utc_offset_known: true,
            zone: zone.map(str::to_string),
        };
        assert_eq!(s.trace_start(), Some(want(None)));
        let zoned = format!("; TimeZoneString: Europe/Moscow\n{LOG}");
        let mut s = open(&write(&dir, "b.swf", &zoned)).unwrap();
        assert_eq!(s.by_ref().count(), 4);
        assert_eq!(s.trace_start(), Some(want(Some("Europe/Moscow"))));
        let bare = "    1   0  -1  1451 128 -1 -1  -1    -1  -1  1  1  1 -1 -1 -1 -1 -1\n";
        let mut s = open(&write(&dir, "c.swf", bare)).unwrap();
        assert_eq!(s.by_ref().count(), 1);
        assert_eq!(s.trace_start(), None);
    }

    #[test]
    fn maps_rows_and_counts_skips() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, "log.swf", LOG);
        let mut s = open(&p).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["1", "2", "3", "8"]);
        let j1 = &jobs[0];
        assert_eq!((j1.tasks, j1.shape.num_gpu), (16, 8));
        assert_eq!(j1.runtime, SimDuration::from_secs(1451));
        assert_eq!(j1.tenant, "g1");
        assert_eq!(j1.recorded_start, None);
        let j2 = &jobs[1];
        assert_eq!((j2.tasks, j2.shape.num_gpu), (3, 4));
        assert_eq!(j2.shape.mem_mib, 8);
        assert_eq!(j2.tenant, "u7");
        assert_eq!(j2.qos.as_deref(), Some("interactive"));
        assert_eq!(j2.cells, ["grid.kiae.ru"]);
        assert_eq!(j2.time_limit, Some(SimDuration::from_secs(600)));
        assert_eq!(j2.recorded_start, Some(SimTime::from_secs(15)));
        assert_eq!(j2.runtime, SimDuration::from_secs(20));
        assert_eq!(jobs[2].recorded, RecordedKind::NeverRan);
        assert_eq!(jobs[3].runtime, SimDuration(1));
        assert_eq!(jobs[3].tenant, "unknown");
        let sk = s.skipped();
        assert_eq!(sk["partial_execution_record"], 1);
        assert_eq!(sk["submit_missing"], 1);
        assert_eq!(sk["runtime_missing"], 1);
        assert_eq!(sk["processors_missing"], 1);
        let n = s.notes();
        assert_eq!(n["header.MaxNodes"], 128);
        assert_eq!(n["processors_from_requested"], 1);
        assert_eq!(n["status.cancelled"], 1);
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let ok = "1 0 -1 10 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n";
        let cases = [
            ("1 0 -1 10 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1\n", None),
            (
                "1 0 -1 x 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n",
                Some("run_time"),
            ),
            (
                "1 0 -1 10 -2 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n",
                Some("allocated_processors"),
            ),
            (
                "1 0 -1 10 1.5 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n",
                Some("allocated_processors"),
            ),
            (
                "1 0 -1 10 99999999999 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n",
                Some("allocated_processors"),
            ),
            (
                "1 0 -1 10 1 -1 -1 -1 -1 99999999999999999999 1 1 1 -1 -1 -1 -1 -1\n",
                Some("requested_memory"),
            ),
            (
                "1 9e15 9e15 9e15 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n",
                Some("wait_time"),
            ),
            (
                "1 -5 -1 10 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n",
                Some("submit_time"),
            ),
        ];
        for (i, (row, field)) in cases.iter().enumerate() {
            let name = format!("bad{i}.swf");
            let p = write(&dir, &name, &format!("; c\n{ok}{row}"));
            let e = open(&p)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .expect_err(row)
                .to_string();
            assert!(e.contains(&name) && e.contains("line 3:"), "{e}");
            if let Some(f) = field {
                assert!(e.contains(&format!("`{f}`")), "{e}");
            }
        }
        let p = write(&dir, "unsorted.swf", &format!("{ok}2 -1 -1 1 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n1 5 -1 1 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n0 1 -1 1 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"));
        let e = open(&p)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err();
        assert!(e.to_string().contains("line 4:"), "{e}");
        let sorted: Vec<JobSpec> = open(&p)
            .unwrap()
            .into_sorted()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(sorted.len(), 3);
    }
}
