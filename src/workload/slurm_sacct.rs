//! Reader for Slurm accounting output, `sacct --parsable2` (`-P`): one job (or job step)
//! per line, fields separated by `|`, a header line naming the fields (Slurm's `sacct`
//! manual page, <https://slurm.schedmd.com/sacct.html>).
//!
//! Produce it with, for example:
//!
//! ```text
//! sacct -a -P -X --format=JobIDRaw,Submit,Start,End,ElapsedRaw,AllocTRES,ReqTRES,Partition,Account,User,QOS,State,TimelimitRaw,Priority -S 2024-03-01 -E 2024-04-01
//! ```
//!
//! # Fields read
//!
//! Columns may come in any order and any other `sacct` field may be present (it is
//! ignored: `sacct` has about a hundred). A trailing empty field from `--parsable` (`-p`) is
//! accepted. Required: `JobIDRaw` (or `JobID`), `Submit`, `Start`, `End`, `State`, and
//! `AllocTRES` or `ReqTRES`.
//!
//! | field | meaning / unit |
//! |---|---|
//! | `JobIDRaw` / `JobID` | job id; ids with a `.` are job steps (`123.batch`, `123.0`) |
//! | `Submit`, `Start`, `End` | local wall clock `YYYY-MM-DDTHH:MM:SS`, no time zone; `Unknown`/`None` = not (yet) happened |
//! | `ElapsedRaw` | run time, s |
//! | `AllocTRES` / `ReqTRES` | trackable resources: `cpu=8,mem=64G,node=2,gres/gpu=4,gres/gpu:a100=4,billing=8` |
//! | `Account`, `User` | tenant |
//! | `Partition` | queue |
//! | `QOS` | QoS label |
//! | `State` | `COMPLETED`, `FAILED`, `CANCELLED by <uid>`, `TIMEOUT`, `PENDING`, `RUNNING`, … |
//! | `TimelimitRaw` (min) or `Timelimit` (`[D-]HH:MM:SS`, `MM:SS`, `UNLIMITED`) | time limit |
//! | `Priority` | integer priority |
//!
//! # Mapping to [`JobSpec`]
//!
//! * **Skipped** (counted by reason): job steps (`job_step`); rows that never started and
//!   were not cancelled — still pending, or requeued — (`never_started`); rows that started,
//!   have no `End` and no `ElapsedRaw` (`end_missing`).
//! * **Times**: naive local timestamps are converted by calendar arithmetic only
//!   ([`super::timefmt`]): no time zone, no DST, whatever `TZ` says (field case B18). t = 0
//!   is the first row's `Submit` when streaming ([`open`]), the earliest `Submit` with
//!   [`read_all_sorted`]. Times convert to whole milliseconds exactly.
//! * **Runtime** = `ElapsedRaw` when present (Slurm's own count, which a DST change does not
//!   disturb), else `End − Start`; the recorded end is `Start + runtime`. A started job
//!   without `End` (running when `sacct` ran) uses `ElapsedRaw`, noted
//!   `running_at_accounting_time`.
//! * **Recorded times**: the recorded-times rule ([`JobSpec::set_recorded_times`]) applies to
//!   (Submit, Start, end). A job cancelled before it started (`State` `CANCELLED…` and no
//!   `Start`) is kept as never ran (reported as cancelled).
//! * **Resources** from `AllocTRES`, or `ReqTRES` when `AllocTRES` is empty: `cpu` (cores),
//!   `mem` (suffix `K`, `M`, `G`, `T`, `P`; none = MiB; rounded up to MiB), `node`, and GPUs
//!   as `gres/gpu` (or the sum of `gres/gpu:<type>` when no untyped count is given). Other
//!   TRES (`billing`, `energy`, licenses…) are ignored. The job is a gang of `node` tasks
//!   when `node` divides the GPU and CPU counts; otherwise one task when it has at most 8
//!   GPUs, else [`gang_split`]`(gpus, 8)` tasks. CPU and memory
//!   are divided among the tasks, rounded up. A GPU type whose upper-cased name is in the
//!   accelerator catalog (`a100` → `A100`) becomes the allowed model; others are noted
//!   `gpu_type_not_in_catalog` and leave the model free.
//! * **Tenant** = `Account`, else `User`, else `unknown`; **queue** = `Partition` (none when
//!   absent or empty); **QoS label** = `QOS`; **priority** = `Priority` (0 when absent);
//!   **time limit** from `TimelimitRaw` or `Timelimit` (none when `UNLIMITED`,
//!   `Partition_Limit` or absent); **name** = the job id. The first word of `State` is
//!   counted in the notes as `state.<STATE>`.
//!
//! Errors (naming file, line and field): a malformed timestamp, number, TRES string or
//! time limit; `End` before `Start` without `ElapsedRaw`; a task with more than 64 GPUs;
//! overflow.
//!
//! # Order
//!
//! `sacct` lists jobs by id, which is nearly but not exactly submit order (held jobs, arrays,
//! requeues). [`open`] streams and requires non-decreasing `Submit`; [`read_all_sorted`]
//! reads the file twice (once for the earliest `Submit`, once for the jobs), then sorts.

use std::path::{Path, PathBuf};

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::job::RecordedOutcome;
use super::native::{csv_error, open_lines, parse_count, ENDED_BEFORE_WINDOW};
use super::philly::gang_split;
use super::rows::{bump, Parsed, RowSource};
use super::timefmt::{parse_naive_datetime, Origin};
use super::{JobSpec, RecordedKind, Skipped, TraceError, TraceStream, VecStream};
use crate::fleet::catalog;

/// Field names this reader uses.
const KNOWN: [&str; 15] = [
    "JobIDRaw",
    "JobID",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "AllocTRES",
    "ReqTRES",
    "Account",
    "User",
    "Partition",
    "QOS",
    "State",
    "TimelimitRaw",
    "Timelimit",
];
const JOBIDRAW: usize = 0;
const JOBID: usize = 1;
const SUBMIT: usize = 2;
const START: usize = 3;
const END: usize = 4;
const ELAPSED: usize = 5;
const ALLOC: usize = 6;
const REQ: usize = 7;
const ACCOUNT: usize = 8;
const USER: usize = 9;
const PARTITION: usize = 10;
const QOS: usize = 11;
const STATE: usize = 12;
const TLRAW: usize = 13;
const TL: usize = 14;
const PRIORITY_FIELD: &str = "Priority";

struct SacctRows {
    path: PathBuf,
    rdr: csv::Reader<Box<dyn std::io::Read + Send>>,
    rec: csv::StringRecord,
    cols: [Option<usize>; 15],
    priority: Option<usize>,
    origin: Origin,
}

fn open_rows(path: &Path, origin: Origin) -> Result<SacctRows, TraceError> {
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(b'|')
        .quoting(false)
        .has_headers(true)
        .flexible(false)
        .from_reader(open_lines(path)?);
    let headers = rdr.headers().map_err(|e| csv_error(path, e))?.clone();
    let mut cols = [None; 15];
    let mut priority = None;
    for (i, h) in headers.iter().enumerate() {
        let h = h.trim();
        if let Some(k) = KNOWN.iter().position(|c| *c == h) {
            if cols[k].is_some() {
                return Err(TraceError::field(path, 1, h, "field appears twice"));
            }
            cols[k] = Some(i);
        } else if h == PRIORITY_FIELD {
            priority = Some(i);
        }
    }
    let missing = |c: &str| TraceError::MissingColumn {
        path: path.to_path_buf(),
        column: c.to_string(),
    };
    if cols[JOBIDRAW].is_none() && cols[JOBID].is_none() {
        return Err(missing("JobIDRaw"));
    }
    for k in [SUBMIT, START, END, STATE] {
        if cols[k].is_none() {
            return Err(missing(KNOWN[k]));
        }
    }
    if cols[ALLOC].is_none() && cols[REQ].is_none() {
        return Err(missing("AllocTRES"));
    }
    Ok(SacctRows {
        path: path.to_path_buf(),
        rdr,
        rec: csv::StringRecord::new(),
        cols,
        priority,
        origin,
    })
}

/// Opens a `sacct -P` file for streaming (t = 0 at the first row's `Submit`); see the module
/// docs for every rule.
///
/// # Errors
/// [`TraceError::Io`]; [`TraceError::MissingColumn`] for a missing required field;
/// [`TraceError::BadField`] for a field named twice. Row errors come from the iterator.
pub fn open(path: &Path) -> Result<TraceStream, TraceError> {
    let rows = open_rows(path, Origin::default())?;
    Ok(TraceStream::new(path, Box::new(rows), "Submit"))
}

/// Reads a whole `sacct -P` file in any order, with t = 0 at the earliest `Submit`, and
/// stably sorts it by (submit, row order).
///
/// # Errors
/// As [`open`], plus the first row error.
pub fn read_all_sorted(path: &Path) -> Result<VecStream, TraceError> {
    let mut scan = open_rows(path, Origin::default())?;
    let k = scan.cols[SUBMIT].expect("checked");
    let mut earliest: Option<i64> = None;
    let mut line = 1u64;
    while scan
        .rdr
        .read_record(&mut scan.rec)
        .map_err(|e| csv_error(path, e))?
    {
        line += 1;
        let text = scan.rec.get(k).unwrap_or("").trim();
        if let Some(t) = parse_time(path, line, "Submit", text)? {
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
        }
    }
    let rows = open_rows(path, Origin(earliest))?;
    TraceStream::new(path, Box::new(rows), "Submit").into_sorted()
}

/// A `sacct` timestamp: seconds of the naive clock, `None` for `Unknown`/`None`/empty.
fn parse_time(path: &Path, line: u64, field: &str, text: &str) -> Result<Option<i64>, TraceError> {
    match text {
        "" | "Unknown" | "None" => Ok(None),
        t => parse_naive_datetime(t, b'T')
            .map(Some)
            .map_err(|m| TraceError::field(path, line, field, m)),
    }
}

/// Parsed trackable resources.
#[derive(Default, Debug, PartialEq, Eq)]
struct Tres {
    cpu: u64,
    mem_mib: u64,
    nodes: u64,
    gpus: u64,
    gpu_types: Vec<(String, u64)>,
}

/// Parses a memory amount with an optional `K`/`M`/`G`/`T`/`P` suffix (default MiB) into
/// MiB, rounded up.
fn parse_mem_mib(text: &str) -> Result<u64, String> {
    let (num, mult_kib): (&str, u128) = match text.chars().last() {
        Some('K') => (&text[..text.len() - 1], 1),
        Some('M') => (&text[..text.len() - 1], 1 << 10),
        Some('G') => (&text[..text.len() - 1], 1 << 20),
        Some('T') => (&text[..text.len() - 1], 1 << 30),
        Some('P') => (&text[..text.len() - 1], 1 << 40),
        _ => (text, 1 << 10),
    };
    // Milli-units exactly, then KiB, then MiB rounded up.
    let milli = super::native::parse_seconds_ms(num)?;
    let milli = u128::try_from(milli).map_err(|_| format!("`{text}` is negative"))?;
    let kib_milli = milli
        .checked_mul(mult_kib)
        .ok_or_else(|| format!("`{text}` is out of range"))?;
    let mib = kib_milli.div_ceil(1024 * 1000);
    u64::try_from(mib).map_err(|_| format!("`{text}` is out of range"))
}

fn parse_tres(text: &str) -> Result<Tres, String> {
    let mut t = Tres::default();
    let mut typed = 0u64;
    let mut untyped = None;
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("`{item}` is not `name=value`"))?;
        match k {
            "cpu" => t.cpu = parse_count(v)?,
            "mem" => t.mem_mib = parse_mem_mib(v)?,
            "node" => t.nodes = parse_count(v)?,
            "gres/gpu" => untyped = Some(parse_count::<u64>(v)?),
            _ => {
                if let Some(ty) = k.strip_prefix("gres/gpu:") {
                    let n: u64 = parse_count(v)?;
                    typed = typed
                        .checked_add(n)
                        .ok_or_else(|| format!("`{item}` is out of range"))?;
                    t.gpu_types.push((ty.to_string(), n));
                }
            }
        }
    }
    t.gpus = untyped.unwrap_or(typed);
    Ok(t)
}

/// Parses `[D-]HH:MM:SS`, `HH:MM:SS`, `MM:SS` or `MM` into seconds; `None` for unlimited.
fn parse_timelimit(text: &str) -> Result<Option<u64>, String> {
    if matches!(text, "" | "UNLIMITED" | "Partition_Limit" | "INVALID") {
        return Ok(None);
    }
    let (days, rest) = match text.split_once('-') {
        Some((d, r)) => (parse_count::<u64>(d)?, r),
        None => (0, text),
    };
    let parts: Vec<u64> = rest
        .split(':')
        .map(parse_count::<u64>)
        .collect::<Result<_, _>>()?;
    let secs = match (parts.as_slice(), days > 0) {
        ([h, m, s], _) => h * 3600 + m * 60 + s,
        ([h, m], true) => h * 3600 + m * 60,
        ([h], true) => h * 3600,
        ([m, s], false) => m * 60 + s,
        ([m], false) => m * 60,
        _ => return Err(format!("`{text}` is not a time limit")),
    };
    days.checked_mul(86_400)
        .and_then(|d| d.checked_add(secs))
        .map(Some)
        .ok_or_else(|| format!("`{text}` is out of range"))
}

impl SacctRows {
    fn get(&self, k: usize) -> Option<&str> {
        self.cols[k]
            .and_then(|i| self.rec.get(i))
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    fn row(&mut self, line: u64, notes: &mut Skipped) -> Result<Parsed, TraceError> {
        let path = self.path.clone();
        let bad = |f: &str, m: String| TraceError::field(&path, line, f, m);
        let id = self
            .get(JOBIDRAW)
            .or(self.get(JOBID))
            .ok_or_else(|| bad("JobIDRaw", "empty (required)".into()))?
            .to_string();
        if id.contains('.') {
            return Ok(Parsed::Skip("job_step"));
        }
        let state = self.get(STATE).unwrap_or("").to_string();
        let state_word = state.split_whitespace().next().unwrap_or("").to_string();
        let submit = parse_time(&path, line, "Submit", self.get(SUBMIT).unwrap_or(""))?
            .ok_or_else(|| bad("Submit", "empty (required)".into()))?;
        let start = parse_time(&path, line, "Start", self.get(START).unwrap_or(""))?;
        let end = parse_time(&path, line, "End", self.get(END).unwrap_or(""))?;
        let elapsed_ms = self
            .get(ELAPSED)
            .map(|t| {
                parse_count::<u64>(t)
                    .ok()
                    .and_then(|s| s.checked_mul(1000))
                    .and_then(|v| i64::try_from(v).ok())
                    .ok_or_else(|| {
                        bad(
                            "ElapsedRaw",
                            format!("`{t}` is not a whole number of seconds"),
                        )
                    })
            })
            .transpose()?;
        let (tres_field, tres_text) = match (self.get(ALLOC), self.get(REQ)) {
            (Some(a), _) => ("AllocTRES", a),
            (None, Some(r)) => ("ReqTRES", r),
            (None, None) => ("AllocTRES", ""),
        };
        let tres = parse_tres(tres_text).map_err(|m| bad(tres_field, m))?;
        let tenant = self
            .get(ACCOUNT)
            .or(self.get(USER))
            .unwrap_or("unknown")
            .to_string();
        let queue = self.get(PARTITION).map(str::to_string);
        let qos = self.get(QOS).map(str::to_string);
        let priority = match self.priority.and_then(|i| self.rec.get(i)).map(str::trim) {
            None | Some("") => 0,
            Some(t) => t
                .parse::<i32>()
                .map_err(|_| bad(PRIORITY_FIELD, format!("`{t}` is not an integer")))?,
        };
        let time_limit = match (self.get(TLRAW), self.get(TL)) {
            (Some(raw), _) if raw != "UNLIMITED" && raw != "Partition_Limit" => Some(
                parse_count::<u64>(raw)
                    .ok()
                    .and_then(|m| m.checked_mul(60_000))
                    .ok_or_else(|| bad("TimelimitRaw", format!("`{raw}` is not whole minutes")))?,
            ),
            (_, Some(t)) => parse_timelimit(t)
                .map_err(|m| bad("Timelimit", m))?
                .map(|s| s.saturating_mul(1000)),
            _ => None,
        };
        // Shape: a gang of `node` tasks when that divides the counts.
        let gpus = u32::try_from(tres.gpus)
            .map_err(|_| bad(tres_field, "GPU count out of range".into()))?;
        let nodes = tres.nodes.max(1);
        let (tasks, per_task) = if tres.nodes >= 1
            && tres.gpus % nodes == 0
            && tres.cpu % nodes == 0
            && u32::try_from(nodes).is_ok()
        {
            (nodes as u32, (tres.gpus / nodes) as u32)
        } else if gpus <= 8 {
            (1, gpus)
        } else {
            gang_split(gpus, 8)
        };
        let t64 = u64::from(tasks);
        let shape = TaskShape {
            cpu_milli: tres
                .cpu
                .div_ceil(t64)
                .checked_mul(1000)
                .ok_or_else(|| bad(tres_field, "cpu count out of range".into()))?,
            mem_mib: tres.mem_mib.div_ceil(t64),
            ..TaskShape::whole_gpus(per_task)
        };
        super::native::check_shape(&path, line, &shape, tres_field, tres_field)?;
        let mut gpu_models = Vec::new();
        for (ty, _) in &tres.gpu_types {
            let up = ty.to_ascii_uppercase();
            if catalog::lookup(&up).is_ok() {
                gpu_models.push(up);
            } else {
                bump(notes, "gpu_type_not_in_catalog");
            }
        }
        gpu_models.sort();
        gpu_models.dedup();
        let rel = |o: &mut Origin, s: i64, f: &str| {
            o.rel_ms(s)
                .ok_or_else(|| bad(f, "out of range relative to the trace start".into()))
        };
        let submit_ms = rel(&mut self.origin, submit, "Submit")?;
        let mut job = JobSpec {
            name: id.into(),
            tenant: tenant.into(),
            queue,
            priority,
            qos,
            submit: SimTime(submit_ms.max(0) as u64),
            tasks,
            shape,
            gpu_models,
            cells: Vec::new(),
            runtime: SimDuration::ZERO,
            time_limit: time_limit.map(SimDuration),
            recorded_start: None,
            recorded: RecordedKind::Normal,
        };
        let Some(start) = start else {
            if state_word == "CANCELLED" {
                bump(notes, "state.CANCELLED");
                job.recorded = RecordedKind::NeverRan;
                return Ok(Parsed::Job(Box::new(job)));
            }
            return Ok(Parsed::Skip("never_started"));
        };
        let start_ms = rel(&mut self.origin, start, "Start")?;
        let runtime_ms = match (elapsed_ms, end) {
            (Some(e), _) => e,
            (None, Some(end)) => {
                if end < start {
                    return Err(bad("End", "before Start (and no ElapsedRaw)".into()));
                }
                (end - start)
                    .checked_mul(1000)
                    .ok_or_else(|| bad("End", "out of range".into()))?
            }
            (None, None) => return Ok(Parsed::Skip("end_missing")),
        };
        if end.is_none() {
            bump(notes, "running_at_accounting_time");
        }
        let end_ms = start_ms
            .checked_add(runtime_ms)
            .ok_or_else(|| bad("ElapsedRaw", "out of range".into()))?;
        bump(notes, format!("state.{state_word}"));
        if job.set_recorded_times(submit_ms, start_ms, end_ms) == RecordedOutcome::EndedBeforeWindow
        {
            return Ok(Parsed::Skip(ENDED_BEFORE_WINDOW));
        }
        Ok(Parsed::Job(Box::new(job)))
    }
}

impl RowSource for SacctRows {
    fn next_row(&mut self, notes: &mut Skipped) -> Option<Result<(u64, Parsed), TraceError>> {
        match self.rdr.read_record(&mut self.rec) {
            Ok(false) => None,
            Ok(true) => {
                let line = self.rec.position().map(|p| p.line()).unwrap_or(0);
                Some(self.row(line, notes).map(|p| (line, p)))
            }
            Err(e) => Some(Err(csv_error(&self.path, e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::JobStream;

    const H: &str = "JobIDRaw|Submit|Start|End|ElapsedRaw|AllocTRES|ReqTRES|Partition|Account|QOS|State|TimelimitRaw|Priority\n";

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn tres_and_limits() {
        let t = parse_tres("billing=8,cpu=16,gres/gpu:a100=4,gres/gpu=4,mem=500G,node=2").unwrap();
        assert_eq!((t.cpu, t.gpus, t.nodes, t.mem_mib), (16, 4, 2, 512_000));
        assert_eq!(
            parse_tres("gres/gpu:h100=2,gres/gpu:a100=1").unwrap().gpus,
            3
        );
        assert_eq!(parse_mem_mib("1.5K").unwrap(), 1);
        assert_eq!(parse_mem_mib("100").unwrap(), 100);
        assert!(parse_tres("cpu=x").is_err() && parse_tres("cpu").is_err());
        assert_eq!(parse_timelimit("1-00:00:00").unwrap(), Some(86_400));
        assert_eq!(parse_timelimit("02:00:00").unwrap(), Some(7200));
        assert_eq!(parse_timelimit("30:00").unwrap(), Some(1800));
        assert_eq!(parse_timelimit("1-2").unwrap(), Some(93_600));
        assert_eq!(parse_timelimit("UNLIMITED").unwrap(), None);
        assert!(parse_timelimit("a:b").is_err());
    }

    #[test]
    fn maps_rows_skips_steps_and_never_started() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "sacct.txt",
            &format!(
                "{H}100|2024-03-10T01:00:00|2024-03-10T01:00:10|2024-03-10T01:01:50|100|cpu=16,mem=64G,node=2,gres/gpu:a100=16|cpu=16|gpu|proj-a|normal|COMPLETED|60|1000
100.batch|2024-03-10T01:00:10|2024-03-10T01:00:10|2024-03-10T01:01:50|100|cpu=8|cpu=8|gpu|proj-a|normal|COMPLETED||
101|2024-03-10T01:00:30|None|None|0||cpu=1,gres/gpu=1|gpu|proj-b|normal|CANCELLED by 42|10|
102|2024-03-10T01:00:40|Unknown|Unknown|0||cpu=1|gpu|proj-b|normal|PENDING|10|
103|2024-03-10T02:59:00|2024-03-10T03:00:00|Unknown|600|cpu=2,gres/gpu:x9=1|cpu=2|gpu||normal|RUNNING||
"
            ),
        );
        let mut s = open(&p).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        assert_eq!(jobs.len(), 3);
        let a = &jobs[0];
        assert_eq!((a.tasks, a.shape.num_gpu, a.shape.cpu_milli), (2, 8, 8000));
        assert_eq!(a.shape.mem_mib, 32_768);
        assert_eq!(a.gpu_models, ["A100"]);
        assert_eq!(a.queue.as_deref(), Some("gpu"));
        assert_eq!(a.priority, 1000);
        assert_eq!(a.time_limit, Some(SimDuration::from_secs(3600)));
        assert_eq!(a.recorded_start, Some(SimTime::from_secs(10)));
        assert_eq!(a.runtime, SimDuration::from_secs(100));
        assert_eq!(jobs[1].recorded, RecordedKind::NeverRan);
        assert_eq!(jobs[1].submit, SimTime::from_secs(30));
        let c = &jobs[2];
        assert_eq!(c.tenant, "unknown");
        assert_eq!(c.runtime, SimDuration::from_secs(600));
        assert!(c.gpu_models.is_empty());
        let sk = s.skipped();
        assert_eq!((sk["job_step"], sk["never_started"]), (1, 1));
        let n = s.notes();
        assert_eq!(n["running_at_accounting_time"], 1);
        assert_eq!(n["gpu_type_not_in_catalog"], 1);
        assert_eq!(n["state.COMPLETED"], 1);
    }

    #[test]
    fn b18_and_sorting() {
        // A job whose accounting start precedes its submit never ran (B18); an unsorted file
        // streams to an error and sorts with read_all_sorted (origin = earliest submit).
        let dir = tempfile::tempdir().unwrap();
        let rows = [
            "2|2024-01-01T00:01:00|2024-01-01T00:00:00|2024-01-01T00:00:00||cpu=1|cpu=1|p|a|n|FAILED||",
            "3|2024-01-01T00:02:00|2024-01-01T00:02:00|2024-01-01T00:03:00||cpu=1|cpu=1|p|a|n|FAILED||",
            "1|2024-01-01T00:00:30|2024-01-01T00:00:40|2024-01-01T00:02:00||cpu=1|cpu=1|p|a|n|COMPLETED||",
        ];
        let p = write(&dir, "s.txt", &format!("{H}{}\n", rows.join("\n")));
        let e = open(&p)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err();
        let e = e.to_string();
        assert!(e.contains("line 4:") && e.contains("`Submit`"), "{e}");
        let jobs: Vec<JobSpec> = read_all_sorted(&p).unwrap().map(Result::unwrap).collect();
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["1", "2", "3"]);
        assert_eq!(jobs[0].submit, SimTime::ZERO);
        assert_eq!(jobs[0].recorded_start, Some(SimTime::from_secs(10)));
        assert_eq!(jobs[0].runtime, SimDuration::from_secs(80));
        assert_eq!(jobs[1].recorded, RecordedKind::NeverRan);
        assert_eq!(jobs[1].submit, SimTime::from_secs(30));
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let ok = "1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10||cpu=1|cpu=1|p|a|n|COMPLETED||\n";
        let cases = [
            ("2|2024-01-01 00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10||cpu=1|cpu=1|p|a|n|COMPLETED||\n", "Submit"),
            ("2|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10||cpu=x|cpu=1|p|a|n|COMPLETED||\n", "AllocTRES"),
            ("2|2024-01-01T00:00:00|2024-01-01T00:00:20|2024-01-01T00:00:10||cpu=1|cpu=1|p|a|n|COMPLETED||\n", "End"),
            ("2|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10|-3|cpu=1|cpu=1|p|a|n|COMPLETED||\n", "ElapsedRaw"),
            ("2|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10||gres/gpu=130,node=2|cpu=1|p|a|n|COMPLETED||\n", "AllocTRES"),
            ("2|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10||cpu=1|cpu=1|p|a|n|COMPLETED|x|\n", "TimelimitRaw"),
            ("2|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10||cpu=1|cpu=1|p|a|n|COMPLETED||hi\n", "Priority"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (i, (row, field)) in cases.iter().enumerate() {
            let name = format!("bad{i}.txt");
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
        let p = write(&dir, "nohdr.txt", "JobIDRaw|Submit|Start|End\n");
        assert!(
            matches!(open(&p), Err(TraceError::MissingColumn { column, .. }) if column == "State")
        );
    }
}
