//! Reader for the raw Microsoft Philly job log, `cluster_job_log` (M. Jeon et al., ATC '19;
//! `msr-fiddle/philly-traces`, `trace-data.tar.gz`). The schema below is the one published
//! in that repository's README and used by the public parsers of the trace; the raw file is
//! not in this repository, so the tests use small samples written from the schema.
//!
//! # Source format
//!
//! One JSON array of job objects (hundreds of MB; it is scanned element by element, never
//! parsed as one value):
//!
//! ```json
//! [{"status": "Pass", "vc": "ee9e8c", "jobid": "application_…_10238", "user": "2c0e2d",
//!   "submitted_time": "2017-10-07 01:11:39",
//!   "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
//!                 "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}]}]
//! ```
//!
//! Times are naive wall clock `YYYY-MM-DD HH:MM:SS` (US Pacific); a time not (yet) known is
//! the literal string `"None"` (or `null`). `status` is `Pass`, `Killed` or `Failed`.
//! Unknown keys are ignored.
//!
//! # Mapping to [`JobSpec`]
//!
//! * **Skipped** (counted by reason): a job with no attempts (`no_attempts`); a job none of
//!   whose attempts has a start time (`no_started_attempt`); a job whose attempts list no
//!   GPU (`no_gpus`).
//! * **Times** by calendar arithmetic only (no time zone, no DST, [`super::timefmt`]);
//!   t = 0 is the earliest `submitted_time` in the file. An attempt whose `end_time` is
//!   `"None"` was still running when the log was cut: it ends at the trace end (the largest
//!   time in the file), noted `attempt_end_censored`.
//! * **Runtime** = the sum of the started attempts' lengths (end − start), as the per-job
//!   table `philly_jobs_pollux.csv` derives `duration`; **recorded start** = the first
//!   attempt's start; the recorded-times rule ([`JobSpec::set_recorded_times`]) applies to
//!   (submit, first start, first start + runtime).
//! * **Resources** = the largest number of GPUs any attempt held (summed over its machines'
//!   `gpus` lists), split into a gang by [`gang_split`]`(gpus, 8)` as in the per-job reader.
//! * **Tenant** = `vc`; **name** = `jobid`; `status` counted in the notes as
//!   `status.<status>`.
//!
//! Errors (naming file, line — where the job object starts — and field, e.g.
//! `attempts[1].end_time`): malformed JSON, an element that is not an object, a missing
//! `jobid`, `vc` or `submitted_time`, a malformed timestamp, an attempt ending before it
//! starts.
//!
//! # Order
//!
//! The log is not sorted by submission: the jobs are read whole and stably sorted by
//! (submit, position in the file). Memory grows with the number of jobs (a JobSpec each).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use fleetsim_policies::{SimDuration, SimTime, TaskShape};
use serde::Deserialize;

use super::job::RecordedOutcome;
use super::native::{open_input, ENDED_BEFORE_WINDOW};
use super::philly::gang_split;
use super::rows::bump;
use super::timefmt::parse_naive_timestamp;
use super::{JobSpec, RecordedKind, Skipped, TraceError, VecStream};

#[derive(Deserialize)]
struct RawJob {
    status: Option<String>,
    vc: Option<String>,
    jobid: Option<String>,
    submitted_time: Option<serde_json::Value>,
    attempts: Option<Vec<RawAttempt>>,
}

#[derive(Deserialize)]
struct RawAttempt {
    start_time: Option<serde_json::Value>,
    end_time: Option<serde_json::Value>,
    detail: Option<Vec<RawDetail>>,
}

#[derive(Deserialize)]
struct RawDetail {
    gpus: Option<Vec<serde_json::Value>>,
}

/// One scanned element: (line where it starts, its text), or (line, what is malformed).
pub(crate) type Scanned = Result<(u64, Vec<u8>), (u64, String)>;

/// Longest element (one job object) `ArrayScanner` accepts, bytes: 16 MiB, thousands of
/// times a job of the public trace (a few hundred bytes to a few kB).
pub const MAX_ELEMENT_BYTES: u64 = 16 << 20;

/// Splits a top-level JSON array into its elements' texts without parsing the whole
/// document; memory is bounded by the largest element, at most [`MAX_ELEMENT_BYTES`].
pub(crate) struct ArrayScanner<R: BufRead> {
    input: R,
    line: u64,
    started: bool,
    done: bool,
    peeked: Option<u8>,
}

impl<R: BufRead> ArrayScanner<R> {
    /// A scanner over `input`.
    pub(crate) fn new(input: R) -> Self {
        ArrayScanner {
            input,
            line: 1,
            started: false,
            done: false,
            peeked: None,
        }
    }

    fn byte(&mut self) -> Result<Option<u8>, String> {
        if let Some(b) = self.peeked.take() {
            return Ok(Some(b));
        }
        let buf = self.input.fill_buf().map_err(|e| e.to_string())?;
        let Some(&b) = buf.first() else {
            return Ok(None);
        };
        self.input.consume(1);
        if b == b'\n' {
            self.line += 1;
        }
        Ok(Some(b))
    }

    fn skip_ws(&mut self) -> Result<Option<u8>, String> {
        loop {
            match self.byte()? {
                Some(b' ' | b'\t' | b'\r' | b'\n') => {}
                other => return Ok(other),
            }
        }
    }

    /// The next element as (line where it starts, text); `Err((line, message))` for a
    /// malformed document.
    pub(crate) fn next_element(&mut self) -> Option<Scanned> {
        if self.done {
            return None;
        }
        let r = self.next_inner();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }

    fn next_inner(&mut self) -> Option<Scanned> {
        let err = |line: u64, m: String| Some(Err((line, m)));
        let first = match self.skip_ws() {
            Ok(b) => b,
            Err(m) => return err(self.line, m),
        };
        let mut first = match (self.started, first) {
            (false, Some(b'[')) => {
                self.started = true;
                match self.skip_ws() {
                    Ok(Some(b']')) => return self.finish(),
                    Ok(b) => b,
                    Err(m) => return err(self.line, m),
                }
            }
            (false, None) => return err(self.line, "empty file: expected a JSON array".into()),
            (false, Some(_)) => return err(self.line, "expected a JSON array `[`".into()),
            (true, Some(b']')) => return self.finish(),
            (true, Some(b',')) => match self.skip_ws() {
                Ok(b) => b,
                Err(m) => return err(self.line, m),
            },
            (true, None) => return err(self.line, "unexpected end of file in the array".into()),
            (true, Some(c)) => {
                return err(
                    self.line,
                    format!(
                        "expected `,` or `]` between elements, found `{}`",
                        c as char
                    ),
                )
            }
        };
        let line = self.line;
        if first != Some(b'{') {
            return err(line, "expected a job object `{`".into());
        }
        let mut text = Vec::new();
        let (mut depth, mut in_str, mut esc) = (0usize, false, false);
        loop {
            let Some(b) = first.take().map(Ok).or_else(|| self.byte().transpose()) else {
                return err(line, "unexpected end of file inside a job object".into());
            };
            let b = match b {
                Ok(b) => b,
                Err(m) => return err(self.line, m),
            };
            text.push(b);
            if text.len() as u64 > MAX_ELEMENT_BYTES {
                return err(
                    line,
                    format!(
                        "a job object longer than {MAX_ELEMENT_BYTES} bytes (the limit of one element; is this the right file?)"
                    ),
                );
            }
            if in_str {
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Some(Ok((line, text)));
                    }
                }
                _ => {}
            }
        }
    }

    fn finish(&mut self) -> Option<Scanned> {
        match self.skip_ws() {
            Ok(None) => {
                self.done = true;
                None
            }
            Ok(Some(_)) => Some(Err((self.line, "content after the closing `]`".into()))),
            Err(m) => Some(Err((self.line, m))),
        }
    }
}

/// A job before the origin and trace end are known (absolute naive seconds).
struct Pending {
    job: JobSpec,
    submit: i64,
    /// Attempts (start, end; `None` = censored) in file order.
    attempts: Vec<(i64, Option<i64>)>,
}

fn ts(
    path: &Path,
    line: u64,
    field: &str,
    v: &Option<serde_json::Value>,
) -> Result<Option<i64>, TraceError> {
    use serde_json::Value;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "None" || s.is_empty() => Ok(None),
        Some(Value::String(s)) => parse_naive_timestamp(s)
            .map(Some)
            .map_err(|m| TraceError::field(path, line, field, m)),
        Some(other) => Err(TraceError::field(
            path,
            line,
            field,
            format!("expected a timestamp string, found {other}"),
        )),
    }
}

/// Reads a Philly `cluster_job_log` (see the module docs for every rule) into a sorted
/// stream.
///
/// # Errors
/// [`TraceError::Io`] when the file cannot be read; [`TraceError::BadRow`] for malformed
/// JSON; [`TraceError::BadField`] for the first bad field.
pub fn open(path: &Path) -> Result<VecStream, TraceError> {
    read(path, open_input(path)?)
}

fn read(path: &Path, input: Box<dyn Read + Send>) -> Result<VecStream, TraceError> {
    let mut scan = ArrayScanner::new(BufReader::new(input));
    let mut pending = Vec::new();
    let mut skipped = Skipped::new();
    let mut notes = Skipped::new();
    let (mut origin, mut trace_end) = (i64::MAX, i64::MIN);
    while let Some(el) = scan.next_element() {
        let (line, text) = el.map_err(|(line, message)| TraceError::BadRow {
            path: path.to_path_buf(),
            line,
            message,
        })?;
        let raw: RawJob = serde_json::from_slice(&text).map_err(|e| TraceError::BadRow {
            path: path.to_path_buf(),
            line: line + e.line() as u64 - 1,
            message: format!("bad JSON in a job object: {e}"),
        })?;
        let need = |v: Option<String>, f: &str| {
            v.filter(|s| !s.is_empty())
                .ok_or_else(|| TraceError::field(path, line, f, "missing (required)"))
        };
        let name = need(raw.jobid, "jobid")?;
        let tenant = need(raw.vc, "vc")?;
        let submit = ts(path, line, "submitted_time", &raw.submitted_time)?
            .ok_or_else(|| TraceError::field(path, line, "submitted_time", "missing (required)"))?;
        origin = origin.min(submit);
        trace_end = trace_end.max(submit);
        let attempts = raw.attempts.unwrap_or_default();
        if attempts.is_empty() {
            bump(&mut skipped, "no_attempts");
            continue;
        }
        let mut spans = Vec::new();
        let mut gpus = 0usize;
        for (i, a) in attempts.iter().enumerate() {
            let start = ts(
                path,
                line,
                &format!("attempts[{i}].start_time"),
                &a.start_time,
            )?;
            let end = ts(path, line, &format!("attempts[{i}].end_time"), &a.end_time)?;
            let held: usize = a
                .detail
                .iter()
                .flatten()
                .map(|d| d.gpus.as_ref().map_or(0, Vec::len))
                .sum();
            gpus = gpus.max(held);
            for t in [start, end].into_iter().flatten() {
                trace_end = trace_end.max(t);
            }
            if let (Some(s), Some(e)) = (start, end) {
                if e < s {
                    return Err(TraceError::field(
                        path,
                        line,
                        &format!("attempts[{i}].end_time"),
                        "before the attempt's start_time",
                    ));
                }
            }
            if let Some(s) = start {
                spans.push((s, end));
            }
        }
        if spans.is_empty() {
            bump(&mut skipped, "no_started_attempt");
            continue;
        }
        let Ok(gpus) = u32::try_from(gpus) else {
            return Err(TraceError::field(path, line, "attempts", "too many GPUs"));
        };
        if gpus == 0 {
            bump(&mut skipped, "no_gpus");
            continue;
        }
        if let Some(s) = &raw.status {
            bump(&mut notes, format!("status.{s}"));
        }
        let (tasks, per_task) = gang_split(gpus, 8);
        pending.push(Pending {
            job: JobSpec {
                name: name.into(),
                tenant: tenant.into(),
                queue: None,
                priority: 0,
                qos: None,
                submit: SimTime::ZERO,
                tasks,
                shape: TaskShape::whole_gpus(per_task),
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
            },
            submit,
            attempts: spans,
        });
    }
    let mut jobs = Vec::with_capacity(pending.len());
    for Pending {
        mut job,
        submit,
        attempts,
    } in pending
    {
        let mut run_s: i64 = 0;
        for &(s, e) in &attempts {
            if e.is_none() {
                bump(&mut notes, "attempt_end_censored");
            }
            run_s = run_s.saturating_add(e.unwrap_or(trace_end).max(s) - s);
        }
        let first = attempts[0].0;
        let ms = |s: i64| s.saturating_sub(origin).saturating_mul(1000);
        let outcome = job.set_recorded_times(
            ms(submit),
            ms(first),
            ms(first).saturating_add(run_s.saturating_mul(1000)),
        );
        if outcome == RecordedOutcome::EndedBeforeWindow {
            bump(&mut skipped, ENDED_BEFORE_WINDOW);
            continue;
        }
        jobs.push(job);
    }
    let start = (origin != i64::MAX)
        .then(|| super::TraceStart::local(origin, Some(super::philly::PHILLY_ZONE.to_string())));
    Ok(VecStream::new(jobs, skipped)
        .with_notes(notes)
        .with_start(start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::JobStream;

    // Written by hand from the published schema (README of msr-fiddle/philly-traces); the
    // first job mirrors the README's worked example (two attempts, 74 s + 193,182 s).
    const SAMPLE: &str = r#"[
{"status": "Pass", "vc": "ee9e8c", "jobid": "application_1_0001", "user": "u1",
 "submitted_time": "2017-10-07 01:11:39",
 "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
               "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]},
                          {"ip": "m2", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}]},
              {"start_time": "2017-10-07 01:13:30", "end_time": "2017-10-09 06:53:12",
               "detail": [{"ip": "m3", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7"]}]}]},
{"status": "Killed", "vc": "6214e9", "jobid": "application_1_0002", "user": "u2",
 "submitted_time": "2017-10-07 01:00:00", "attempts": []},
{"status": "Failed", "vc": "6214e9", "jobid": "application_1_0003", "user": "u2",
 "submitted_time": "2017-10-07 01:05:00",
 "attempts": [{"start_time": "None", "end_time": "None", "detail": []}]},
{"status": "Pass", "vc": "6214e9", "jobid": "application_1_0004", "user": "u2",
 "submitted_time": "2017-10-07 01:06:00",
 "attempts": [{"start_time": "2017-10-07 01:06:30", "end_time": "None",
               "detail": [{"ip": "m4", "gpus": ["gpu0"]}]}]}
]"#;

    fn read_text(text: &str) -> Result<VecStream, TraceError> {
        read(
            Path::new("cluster_job_log"),
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        )
    }

    #[test]
    fn an_element_over_the_cap_is_refused_naming_its_line() {
        // Line 2 opens an object whose string never ends: refused once it passes 16 MiB,
        // not buffered to the end of the input.
        let text = format!("[\n{{\"jobid\": \"{}", "x".repeat((16 << 20) + 10));
        let e = read_text(&text).unwrap_err().to_string();
        assert!(
            e.contains("line 2") && e.contains("a job object longer than 16777216 bytes"),
            "{e}"
        );
    }

    #[test]
    fn sample_written_from_the_schema() {
        let mut s = read_text(SAMPLE).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        assert_eq!(jobs.len(), 2);
        let (j4, j1) = (&jobs[0], &jobs[1]);
        assert_eq!(j1.name, "application_1_0001");
        // Origin = 01:00:00 (job 2's submit): j1 submitted 11 min 39 s later.
        assert_eq!(j1.submit, SimTime::from_secs(699));
        assert_eq!(j1.recorded_start, Some(SimTime::from_secs(729)));
        assert_eq!(j1.runtime, SimDuration::from_secs(74 + 193_182));
        assert_eq!((j1.tasks, j1.shape.num_gpu), (1, 8));
        // j4 runs until the trace end (j1's last end).
        assert_eq!(
            j4.runtime.0 / 1000,
            2 * 86_400 + 5 * 3600 + 53 * 60 + 12 - (6 * 60 + 30)
        );
        assert_eq!(s.skipped()["no_attempts"], 1);
        assert_eq!(s.skipped()["no_started_attempt"], 1);
        assert_eq!(s.notes()["attempt_end_censored"], 1);
        assert_eq!(s.notes()["status.Pass"], 2);
    }

    #[test]
    fn bad_input_names_line_and_field() {
        let cases = [
            ("", 1, None),
            ("{}", 1, None),
            ("[1]", 1, None),
            ("[{\"vc\": \"a\", \"submitted_time\": \"2017-10-07 01:00:00\"}]", 1, Some("jobid")),
            ("[\n{\"jobid\": \"j\", \"vc\": \"a\", \"submitted_time\": \"2017-13-07 01:00:00\"}]", 2, Some("submitted_time")),
            ("[{\"jobid\": \"j\", \"vc\": \"a\", \"submitted_time\": \"2017-10-07 01:00:00\", \"attempts\": [{\"start_time\": \"2017-10-07 02:00:00\", \"end_time\": \"2017-10-07 01:00:00\"}]}]", 1, Some("attempts[0].end_time")),
            ("[{\"jobid\": \"j\", \"vc\": \"a\", \"submitted_time\": 5}]", 1, Some("submitted_time")),
            ("[{\"jobid\": \"j\"} {}]", 1, None),
            ("[{\"jobid\": \"j\",\n \"vc\": 3}]", 2, None),
            ("[{\"jobid\": \"j\"", 1, None),
            ("[] x", 1, None),
        ];
        for (text, line, field) in cases {
            let e = read_text(text).expect_err(text).to_string();
            assert!(
                e.contains("cluster_job_log") && e.contains(&format!("line {line}:")),
                "{text}: {e}"
            );
            if let Some(f) = field {
                assert!(e.contains(&format!("`{f}`")), "{e}");
            }
        }
        assert_eq!(read_text("[]").unwrap().count(), 0);
    }
}
