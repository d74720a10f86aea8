//! Reader for Slurm accounting output, `sacct --parsable2` (`-P`) or `--parsable` (`-p`):
//! one job (or job step) per line, fields separated by `|` (or the `--delimiter` given to
//! `sacct`), with or without a header line (Slurm's `sacct` manual page,
//! <https://slurm.schedmd.com/sacct.html>). Exports of Slurm 17.11 to 24.05 read as they
//! are: `--format=ALL` (100+ fields), trimmed `--format` lists, and the field sets of older
//! versions (`NCPUS`, `ReqMem` with its `c`/`n` suffix, `AllocGRES`/`ReqGRES`).
//!
//! Produce one with, for example:
//!
//! ```text
//! sacct -a -P -X --format=JobIDRaw,Submit,Start,End,ElapsedRaw,AllocTRES,ReqTRES,Partition,Account,User,QOS,State,TimelimitRaw,Priority -S 2024-03-01 -E 2024-04-01
//! ```
//!
//! # The file
//!
//! * **Header**: a first line whose fields are all field names, one of them `JobID` or
//!   `JobIDRaw`, names the columns (any order, any case). A file written with `--noheader`
//!   has none: give its `--format` list as `sacct_format = "JobIDRaw,Submit,…"` in
//!   `[workload.trace]` (`--sacct-format` on the command line; [`SacctOptions::with_format`];
//!   `%WIDTH` suffixes are ignored, a header line present anyway is skipped); without it such
//!   a file is refused with that advice.
//! * **Delimiter**: `|`, or the string of `sacct --delimiter` given as `sacct_delimiter`
//!   (`--sacct-delimiter`). With `--parsable` (`-p`) every line ends with the delimiter too:
//!   recognised from the header line (or, without one, the first row) and dropped.
//! * **Rows `sacct` did not escape**: `sacct` never escapes the delimiter or a line break
//!   inside a free-text field (`JobName`, `SubmitLine`, `Comment`, `Constraints`, `WorkDir`,
//!   …). A row with too many fields is repaired when the fields the reader maps place it
//!   unambiguously, and a row broken over several lines is joined
//!   (`records` module); a row that cannot be repaired is **skipped**, counted under
//!   `malformed_row` with its first line as the note `malformed_row.first_line`, and never
//!   refuses the file. `sacct_strict = true` (`--strict`) refuses the file at such a row
//!   instead. Blank lines are counted under `blank_line`.
//!
//! # Fields read
//!
//! Any other `sacct` field may be present (it is ignored). Required: `JobIDRaw` (or
//! `JobID`), `Submit`, `Start`, `State`, one of `End`, `ElapsedRaw` and `Elapsed`, and a
//! resource field.
//!
//! | field | meaning / unit |
//! |---|---|
//! | `JobIDRaw` / `JobID` | job id; ids with a `.` are job steps (`123.batch`, `123.0`); `JobID` `123+0`, `123+1` are the components of heterogeneous job 123 |
//! | `Submit`, `Start`, `End` | local wall clock `YYYY-MM-DDTHH:MM:SS`, no time zone (Slurm's default); or absolute: epoch seconds (`SLURM_TIME_FORMAT=%s`) or `YYYY-MM-DDTHH:MM:SS` + `Z`/`±HH:MM`/`±HHMM`/`±HH` (`%FT%T%z`); one file uses one kind; `Unknown`/`None` = not (yet) happened |
//! | `ElapsedRaw` (s), else `Elapsed` (`[D-]HH:MM:SS`) | run time |
//! | `AllocTRES`, `ReqTRES`, `NCPUS`, `AllocCPUS`, `ReqCPUS`, `NNodes`, `AllocNodes`, `ReqNodes`, `ReqMem`, `AllocGRES`, `ReqGRES` | resources, each from the first field that gives it (`resources` module) |
//! | `Account`, `User` | tenant |
//! | `Partition` | queue |
//! | `QOS` | QoS label |
//! | `State` | `COMPLETED`, `FAILED`, `CANCELLED by <uid>`, `TIMEOUT`, `PENDING`, `RUNNING`, … |
//! | `NodeList` | `None assigned`: the job never ran (a cancelled job's `Start` is then its cancel time) |
//! | `TimelimitRaw` (min) or `Timelimit` (`[D-]HH:MM:SS`, `MM:SS`, `UNLIMITED`) | time limit |
//! | `Priority` | integer priority |
//!
//! # Mapping to [`JobSpec`]
//!
//! * **Skipped** (counted by reason): job steps (`job_step`); rows that never started and
//!   were not cancelled — still pending, or requeued — (`never_started`); rows that started,
//!   have no `End` and no elapsed time (`end_missing`); rows that are not records
//!   (`malformed_row`, above).
//! * **Heterogeneous jobs** (`JobID` `123+0`, `123+1`, … on consecutive rows, as `sacct`
//!   lists them; needs the `JobID` column, since `JobIDRaw` numbers the components apart) are
//!   one gang named `123`: tasks added up, each task the per-resource maximum of the
//!   components' task shapes (a gang has one task shape; noted `hetjob_shape_widened` when
//!   they differ), submit and start the earliest, end the latest, state the first
//!   component's; each such job is noted `hetjob`.
//! * **Times**: naive local timestamps are converted by calendar arithmetic only
//!   ([`super::timefmt`]): no time zone, no DST, whatever `TZ` says (field case B18). t = 0
//!   is the first row's `Submit` when streaming ([`open`]), the earliest `Submit` with
//!   [`read_all_sorted`]. Times convert to whole milliseconds exactly.
//! * **Runtime** = `ElapsedRaw` when present (Slurm's own count, which a DST change does not
//!   disturb), else `Elapsed`, else `End − Start`; the recorded end is `Start + runtime`. A
//!   started job without `End` (running when `sacct` ran) uses its elapsed time, noted
//!   `running_at_accounting_time`.
//! * **Recorded times**: the recorded-times rule ([`JobSpec::set_recorded_times`]) applies to
//!   (Submit, Start, end). A job cancelled before it started (`State` `CANCELLED…` and no
//!   `Start`, or `NodeList` `None assigned`) is kept as never ran (reported as cancelled).
//! * **Resources**: CPUs, memory, nodes and GPUs resolved field by field; each job notes
//!   where each came from (`cpus_from.AllocTRES`, `memory_from.ReqMem_per_cpu`,
//!   `gpus_from.none`, …). The job is a gang of `node` tasks when `node` divides the GPU and
//!   CPU counts; otherwise one task when it has at most 8 GPUs, else
//!   [`gang_split`]`(gpus, 8)` tasks. CPU and memory are divided among the tasks, rounded up.
//!   A GPU type whose upper-cased name is in the accelerator catalog (`a100` → `A100`)
//!   becomes the allowed model; others are noted `gpu_type_not_in_catalog` and leave the
//!   model free.
//! * **Tenant** = `Account`, else `User`, else `unknown`; **queue** = `Partition` (none when
//!   absent or empty); **QoS label** = `QOS`; **priority** = `Priority` (0 when absent);
//!   **time limit** from `TimelimitRaw` or `Timelimit` (none when `UNLIMITED`,
//!   `Partition_Limit` or absent); **name** = the job id. The first word of `State` is
//!   counted in the notes as `state.<STATE>`.
//!
//! Errors (naming file, line and field): a malformed timestamp, number, TRES or GRES string
//! or time limit; `End` before `Start` without an elapsed time; a task with more than 64
//! GPUs; overflow.
//!
//! # Order
//!
//! `sacct` lists jobs by id, which is nearly but not exactly submit order (held jobs, arrays,
//! requeues). [`open`] streams and requires non-decreasing `Submit`; [`read_all_sorted`]
//! reads the file twice (once for the earliest `Submit`, once for the jobs), then sorts.

mod columns;
mod records;
mod resources;

use std::path::{Path, PathBuf};

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::job::RecordedOutcome;
use super::native::{open_lines, parse_count, ENDED_BEFORE_WINDOW};
use super::philly::gang_split;
use super::rows::{bump, Parsed, RowSource};
use super::timefmt::{parse_naive_datetime, Origin};
use super::{JobSpec, RecordedKind, Skipped, TraceError, TraceStream, VecStream};
use crate::catalog;
use records::{Item, Layout, Record, RecordReader, Repair};

/// The fields this reader maps, by index (the `F_*` constants).
const KNOWN: [&str; 27] = [
    "JobIDRaw",
    "JobID",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "Elapsed",
    "AllocTRES",
    "ReqTRES",
    "Account",
    "User",
    "Partition",
    "QOS",
    "State",
    "TimelimitRaw",
    "Timelimit",
    "Priority",
    "NCPUS",
    "AllocCPUS",
    "ReqCPUS",
    "NNodes",
    "AllocNodes",
    "ReqNodes",
    "ReqMem",
    "AllocGRES",
    "ReqGRES",
    "NodeList",
];
const F_JOBIDRAW: usize = 0;
const F_JOBID: usize = 1;
const F_SUBMIT: usize = 2;
const F_START: usize = 3;
const F_END: usize = 4;
const F_ELAPSEDRAW: usize = 5;
const F_ELAPSED: usize = 6;
const F_ALLOC: usize = 7;
const F_REQ: usize = 8;
const F_ACCOUNT: usize = 9;
const F_USER: usize = 10;
const F_PARTITION: usize = 11;
const F_QOS: usize = 12;
const F_STATE: usize = 13;
const F_TLRAW: usize = 14;
const F_TL: usize = 15;
const F_PRIORITY: usize = 16;
const F_NCPUS: usize = 17;
const F_ALLOCCPUS: usize = 18;
const F_REQCPUS: usize = 19;
const F_NNODES: usize = 20;
const F_ALLOCNODES: usize = 21;
const F_REQNODES: usize = 22;
const F_REQMEM: usize = 23;
const F_ALLOCGRES: usize = 24;
const F_REQGRES: usize = 25;
const F_NODELIST: usize = 26;

/// The resource fields, any one of which a file must have.
const RESOURCE_FIELDS: [usize; 11] = [
    F_ALLOC,
    F_REQ,
    F_NCPUS,
    F_ALLOCCPUS,
    F_REQCPUS,
    F_NNODES,
    F_ALLOCNODES,
    F_REQNODES,
    F_REQMEM,
    F_ALLOCGRES,
    F_REQGRES,
];

/// How to read a `sacct` file beyond its own content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SacctOptions {
    /// The field names of a file written with `sacct --noheader --format=LIST`, in order;
    /// `None`: the file's first line is the header.
    pub format: Option<Vec<String>>,
    /// The field delimiter (`sacct --delimiter`; default `|`).
    pub delimiter: String,
    /// Refuse the file at a row whose field count is not the header's, instead of
    /// repairing or skipping it.
    pub strict: bool,
}

impl Default for SacctOptions {
    fn default() -> SacctOptions {
        SacctOptions {
            format: None,
            delimiter: "|".into(),
            strict: false,
        }
    }
}

impl SacctOptions {
    /// The options for a headerless file whose columns are `list`, the `--format` argument of
    /// `sacct` (`JobIDRaw,Submit,Start%20,…`: comma-separated names, any case, `%WIDTH`
    /// suffixes ignored).
    ///
    /// # Errors
    /// A message when the list is empty or has an empty name.
    pub fn with_format(list: &str) -> Result<SacctOptions, String> {
        SacctOptions::default().format_list(list)
    }

    /// These options with the headerless file's `--format` list (see
    /// [`SacctOptions::with_format`]).
    ///
    /// # Errors
    /// As [`SacctOptions::with_format`].
    pub fn format_list(mut self, list: &str) -> Result<SacctOptions, String> {
        let names: Vec<String> = list
            .split(',')
            .map(|f| f.split('%').next().unwrap_or("").trim().to_string())
            .collect();
        if names.iter().any(|n| !columns::is_field_name(n)) {
            return Err(format!(
                "`{list}` is not a sacct --format list (comma-separated field names, e.g. \
                 `JobIDRaw,Submit,Start,End,State,AllocTRES`)"
            ));
        }
        self.format = Some(names);
        Ok(self)
    }

    /// These options with the delimiter of `sacct --delimiter=TEXT`.
    ///
    /// # Errors
    /// A message when `text` is empty or holds a line break.
    pub fn with_delimiter(mut self, text: &str) -> Result<SacctOptions, String> {
        if text.is_empty() || text.contains(['\n', '\r']) {
            return Err(format!(
                "`{}` is not a sacct delimiter (a non-empty string without line breaks)",
                text.escape_debug()
            ));
        }
        self.delimiter = text.to_string();
        Ok(self)
    }
}

/// Whether a file's timestamps are naive wall-clock (`2024-03-01T10:00:00`) or absolute
/// (epoch seconds, or ISO-8601 with `Z`/`±HH:MM`/`±HHMM`): one file must not mix the two, as
/// their difference would depend on the cluster's time zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Clock {
    Naive,
    Absolute,
}

/// The heterogeneous job being gathered: its id (the part of `JobID` before `+`), its first
/// line, and its components so far.
struct HetJob {
    key: String,
    line: u64,
    parts: Vec<Component>,
}

/// One row, before the recorded-times rule.
enum Component {
    Skip(&'static str),
    NeverRan(Box<JobSpec>),
    Ran {
        job: Box<JobSpec>,
        submit_ms: i64,
        start_ms: i64,
        end_ms: i64,
        state_word: String,
        running: bool,
    },
}

struct SacctRows {
    path: PathBuf,
    reader: RecordReader,
    rec: Option<Record>,
    /// Column index of each [`KNOWN`] field.
    cols: [Option<usize>; KNOWN.len()],
    origin: Origin,
    clock: Option<(Clock, u64, &'static str)>,
    stash: Option<Record>,
    het: Option<HetJob>,
    /// Records read so far, and the first malformed row (line, fields): a file none of whose
    /// rows is a record is refused at the end (a wrong `--format` list or delimiter).
    records: u64,
    first_malformed: Option<(u64, usize)>,
}

/// Whether `fields` (a first line, split) is a header: every field a field name, one of
/// them a job id field.
fn is_header(fields: &[&str]) -> bool {
    fields.iter().all(|f| columns::is_field_name(f.trim()))
        && fields.iter().any(|f| {
            f.trim().eq_ignore_ascii_case("JobID") || f.trim().eq_ignore_ascii_case("JobIDRaw")
        })
}

fn open_rows(path: &Path, origin: Origin, opts: &SacctOptions) -> Result<SacctRows, TraceError> {
    let src = Box::new(std::io::BufReader::new(open_lines(path)?));
    let empty = Layout {
        kinds: Vec::new(),
        read: Vec::new(),
    };
    let mut reader = RecordReader::new(path, src, &opts.delimiter, empty, opts.strict);
    // The first line that is not blank (blank lines before the header are ignored).
    let mut first = None;
    while let Some((line, text)) = reader.physical()? {
        if text.is_empty() {
            continue;
        }
        first = Some((line, text));
        break;
    }
    let Some((first_line, first_text)) = first else {
        return Err(TraceError::BadRow {
            path: path.to_path_buf(),
            line: 1,
            message: "empty file: no header line and no job".into(),
        });
    };
    let d = opts.delimiter.as_str();
    let raw: Vec<&str> = first_text.split(d).collect();
    // `sacct -p` ends the header line with the delimiter too.
    let (cells, trailing) = match raw.split_last() {
        Some((&"", rest)) if !rest.is_empty() && is_header(rest) => (rest.to_vec(), true),
        _ => (raw.clone(), false),
    };
    let names: Vec<String> = match &opts.format {
        Some(f) => {
            let repeated = cells.len() == f.len()
                && f.iter()
                    .zip(&cells)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b.trim()));
            if !repeated {
                reader.unread((first_line, first_text.clone()));
            }
            f.clone()
        }
        None if is_header(&cells) => cells.iter().map(|c| c.trim().to_string()).collect(),
        None if cells.iter().all(|c| columns::is_field_name(c.trim())) => {
            // Field names without a job id: the header of a file without one.
            return Err(TraceError::MissingColumn {
                path: path.to_path_buf(),
                column: "JobIDRaw".into(),
            });
        }
        None => {
            return Err(TraceError::field(
                path,
                first_line,
                "header",
                format!(
                    "the first line `{}` is a job, not a header: a file written with `sacct \
                     --noheader` needs `sacct_format = \"LIST\"` in [workload.trace] \
                     (--sacct-format for `fleetsim trace`), LIST being the --format fields in \
                     order (e.g. \"JobIDRaw,Submit,Start,End,State,AllocTRES\")",
                    first_text.chars().take(200).collect::<String>()
                ),
            ))
        }
    };
    let header_line = if opts.format.is_some() { 0 } else { first_line };
    let mut cols = [None; KNOWN.len()];
    for (i, h) in names.iter().enumerate() {
        if let Some(k) = KNOWN.iter().position(|c| c.eq_ignore_ascii_case(h)) {
            if cols[k].is_some() {
                return Err(TraceError::field(
                    path,
                    header_line.max(1),
                    h,
                    "field appears twice",
                ));
            }
            cols[k] = Some(i);
        }
    }
    let missing = |c: &str| TraceError::MissingColumn {
        path: path.to_path_buf(),
        column: c.to_string(),
    };
    if cols[F_JOBIDRAW].is_none() && cols[F_JOBID].is_none() {
        return Err(missing("JobIDRaw"));
    }
    for k in [F_SUBMIT, F_START, F_STATE] {
        if cols[k].is_none() {
            return Err(missing(KNOWN[k]));
        }
    }
    if [F_END, F_ELAPSEDRAW, F_ELAPSED]
        .iter()
        .all(|&k| cols[k].is_none())
    {
        return Err(missing("End (or ElapsedRaw or Elapsed)"));
    }
    if RESOURCE_FIELDS.iter().all(|&k| cols[k].is_none()) {
        return Err(missing(
            "AllocTRES (or ReqTRES, or NCPUS/AllocCPUS/ReqCPUS, NNodes/AllocNodes/ReqNodes, \
             ReqMem, AllocGRES/ReqGRES)",
        ));
    }
    let mut read = vec![false; names.len()];
    for c in cols.iter().flatten() {
        read[*c] = true;
    }
    reader.set_layout(Layout {
        kinds: names.iter().map(|n| columns::kind(n)).collect(),
        read,
    });
    reader.trailing = trailing;
    if opts.format.is_some() {
        reader.trailing = detect_trailing(&mut reader)?;
    }
    Ok(SacctRows {
        path: path.to_path_buf(),
        reader,
        rec: None,
        cols,
        origin,
        clock: None,
        stash: None,
        het: None,
        records: 0,
        first_malformed: None,
    })
}

/// Without a header, whether the rows end with the delimiter (`sacct -p`): decided by the
/// first of the next 50 lines that is a whole record as it is written and not with its last
/// delimiter dropped, or the other way round (a `-P` row whose last field is empty also ends
/// with the delimiter). The lines are read again.
fn detect_trailing(reader: &mut RecordReader) -> Result<bool, TraceError> {
    let n = reader.width();
    let mut seen = Vec::new();
    let mut found = None;
    while seen.len() < 50 {
        let Some(l) = reader.physical()? else { break };
        let exact = |reader: &mut RecordReader, trailing: bool| {
            reader.trailing = trailing;
            let spans = reader.split(&l.1);
            spans.len() == n && reader.valid(&l.1, &spans)
        };
        let (plain, trailing) = (exact(reader, false), exact(reader, true));
        seen.push(l);
        if plain != trailing {
            found = Some(trailing);
            break;
        }
    }
    for l in seen.into_iter().rev() {
        reader.unread(l);
    }
    Ok(found.unwrap_or(false))
}

/// Opens a `sacct -P` file for streaming (t = 0 at the first row's `Submit`); see the module
/// docs for every rule.
///
/// # Errors
/// [`TraceError::Io`]; [`TraceError::MissingColumn`] for a missing required field;
/// [`TraceError::BadField`] for a field named twice or a first line that is no header
/// without a `--format` list. Row errors come from the iterator.
pub fn open(path: &Path) -> Result<TraceStream, TraceError> {
    open_with(path, &SacctOptions::default())
}

/// [`open`] with options (a headerless file's `--format` list, the delimiter, strict
/// reading).
///
/// # Errors
/// As [`open`].
pub fn open_with(path: &Path, opts: &SacctOptions) -> Result<TraceStream, TraceError> {
    let rows = open_rows(path, Origin::default(), opts)?;
    Ok(TraceStream::new(path, Box::new(rows), "Submit"))
}

/// Reads a whole `sacct -P` file in any order, with t = 0 at the earliest `Submit`, and
/// stably sorts it by (submit, row order).
///
/// # Errors
/// As [`open`], plus the first row error.
pub fn read_all_sorted(path: &Path) -> Result<VecStream, TraceError> {
    read_all_sorted_with(path, &SacctOptions::default())
}

/// [`read_all_sorted`] with options.
///
/// # Errors
/// As [`read_all_sorted`].
pub fn read_all_sorted_with(path: &Path, opts: &SacctOptions) -> Result<VecStream, TraceError> {
    let mut scan = open_rows(path, Origin::default(), opts)?;
    let k = scan.cols[F_SUBMIT].expect("checked");
    let mut earliest: Option<i64> = None;
    while let Some(item) = scan.reader.next_item()? {
        let Item::Record(r) = item else { continue };
        let text = r.field(k).trim().to_string();
        if let Some(t) = scan.time(r.line, "Submit", &text)? {
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
        }
    }
    let rows = open_rows(path, Origin(earliest), opts)?;
    TraceStream::new(path, Box::new(rows), "Submit").into_sorted()
}

/// A `sacct` timestamp in seconds (of the naive clock, or of UTC for an absolute one) and its
/// kind; `None` for `Unknown`/`None`/empty. Accepted: Slurm's default `YYYY-MM-DDTHH:MM:SS`
/// (naive); with `SLURM_TIME_FORMAT=%s`, epoch seconds; with `%FT%T%z` or an ISO-8601 offset,
/// `YYYY-MM-DDTHH:MM:SS` followed by `Z`, `±HH:MM`, `±HHMM` or `±HH` (UTC = local − offset).
fn parse_time(text: &str) -> Result<Option<(i64, Clock)>, String> {
    match text {
        "" | "Unknown" | "None" => Ok(None),
        t if t.bytes().all(|b| b.is_ascii_digit()) => t
            .parse::<i64>()
            .map(|s| Some((s, Clock::Absolute)))
            .map_err(|_| format!("`{t}` is out of range as epoch seconds")),
        t if t.len() > 19 && t.is_char_boundary(19) => {
            let (naive, zone) = t.split_at(19);
            let secs = parse_naive_datetime(naive, b'T').map_err(|_| bad_time(t))?;
            let offset_s: i64 = if zone == "Z" {
                0
            } else {
                let (sign, hm) = match zone.as_bytes()[0] {
                    b'+' => (1, &zone[1..]),
                    b'-' => (-1, &zone[1..]),
                    _ => return Err(bad_time(t)),
                };
                let digits: String = hm.chars().filter(|&c| c != ':').collect();
                let ok_shape = matches!(hm.len(), 2 | 4) && !hm.contains(':')
                    || hm.len() == 5 && hm.as_bytes()[2] == b':';
                if !ok_shape || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad_time(t));
                }
                let h: i64 = digits[..2].parse().map_err(|_| bad_time(t))?;
                let m: i64 = if digits.len() == 4 {
                    digits[2..].parse().map_err(|_| bad_time(t))?
                } else {
                    0
                };
                if h > 23 || m > 59 {
                    return Err(format!("`{t}`: UTC offset out of range"));
                }
                sign * (h * 3600 + m * 60)
            };
            Ok(Some((secs - offset_s, Clock::Absolute)))
        }
        t => parse_naive_datetime(t, b'T')
            .map(|s| Some((s, Clock::Naive)))
            .map_err(|_| bad_time(t)),
    }
}

fn bad_time(t: &str) -> String {
    format!(
        "`{t}` is not a sacct timestamp (YYYY-MM-DDTHH:MM:SS, optionally followed by Z, \
         ±HH:MM or ±HHMM; or epoch seconds from SLURM_TIME_FORMAT=%s)"
    )
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
        let rec = self.rec.as_ref()?;
        self.cols[k]
            .map(|i| rec.field(i).trim())
            .filter(|s| !s.is_empty())
    }

    /// A timestamp of row `line`, checking that the file does not mix naive and absolute
    /// times.
    fn time(
        &mut self,
        line: u64,
        field: &'static str,
        text: &str,
    ) -> Result<Option<i64>, TraceError> {
        let Some((t, clock)) =
            parse_time(text).map_err(|m| TraceError::field(&self.path, line, field, m))?
        else {
            return Ok(None);
        };
        match self.clock {
            None => self.clock = Some((clock, line, field)),
            Some((c, l, f)) if c != clock => {
                let kind = |c| match c {
                    Clock::Naive => "a wall-clock time without time zone",
                    Clock::Absolute => "an absolute time (epoch seconds or with a UTC offset)",
                };
                return Err(TraceError::field(
                    &self.path,
                    line,
                    field,
                    format!(
                        "`{text}` is {} but line {l} ({f}) has {}: export the whole file with \
                         one SLURM_TIME_FORMAT",
                        kind(clock),
                        kind(c)
                    ),
                ));
            }
            Some(_) => {}
        }
        Ok(Some(t))
    }

    /// The heterogeneous job this row belongs to (`JobID` `123+0`, `123+1.batch` → `123`),
    /// and whether it is a step of it.
    fn het_key(&self) -> Option<(String, bool)> {
        let id = self.get(F_JOBID)?;
        let (key, rest) = id.split_once('+')?;
        Some((key.to_string(), rest.contains('.')))
    }

    fn component(&mut self, line: u64, notes: &mut Skipped) -> Result<Component, TraceError> {
        let path = self.path.clone();
        let bad = |f: &str, m: String| TraceError::field(&path, line, f, m);
        let id = self
            .get(F_JOBIDRAW)
            .or(self.get(F_JOBID))
            .ok_or_else(|| bad("JobIDRaw", "empty (required)".into()))?
            .to_string();
        if id.contains('.') || self.het_key().is_some_and(|(_, step)| step) {
            return Ok(Component::Skip("job_step"));
        }
        let state = self.get(F_STATE).unwrap_or("").to_string();
        let state_word = state.split_whitespace().next().unwrap_or("").to_string();
        let submit_text = self.get(F_SUBMIT).unwrap_or("").to_string();
        let submit = self
            .time(line, "Submit", &submit_text)?
            .ok_or_else(|| bad("Submit", "empty (required)".into()))?;
        let start_text = self.get(F_START).unwrap_or("").to_string();
        let start = self.time(line, "Start", &start_text)?;
        let end_text = self.get(F_END).unwrap_or("").to_string();
        let end = self.time(line, "End", &end_text)?;
        let elapsed_ms = match (self.get(F_ELAPSEDRAW), self.get(F_ELAPSED)) {
            (Some(t), _) => Some(
                parse_count::<u64>(t)
                    .ok()
                    .and_then(|s| s.checked_mul(1000))
                    .and_then(|v| i64::try_from(v).ok())
                    .ok_or_else(|| {
                        bad(
                            "ElapsedRaw",
                            format!("`{t}` is not a whole number of seconds"),
                        )
                    })?,
            ),
            (None, Some(t)) => parse_timelimit(t)
                .map_err(|m| bad("Elapsed", m))?
                .and_then(|s| s.checked_mul(1000))
                .and_then(|v| i64::try_from(v).ok()),
            (None, None) => None,
        };
        let src = resources::Sources {
            alloc_tres: self.get(F_ALLOC),
            req_tres: self.get(F_REQ),
            ncpus: self.get(F_NCPUS),
            alloc_cpus: self.get(F_ALLOCCPUS),
            req_cpus: self.get(F_REQCPUS),
            nnodes: self.get(F_NNODES),
            alloc_nodes: self.get(F_ALLOCNODES),
            req_nodes: self.get(F_REQNODES),
            req_mem: self.get(F_REQMEM),
            alloc_gres: self.get(F_ALLOCGRES),
            req_gres: self.get(F_REQGRES),
        };
        let res = resources::resolve(&src).map_err(|(f, m)| bad(f, m))?;
        // Where each resource came from, noted for the rows kept.
        let sources = |notes: &mut Skipped| {
            bump(notes, format!("cpus_from.{}", res.cpu_from));
            bump(notes, format!("memory_from.{}", res.mem_from));
            bump(notes, format!("nodes_from.{}", res.nodes_from));
            bump(notes, format!("gpus_from.{}", res.gpus_from));
        };
        let res_field = res.gpus_from.split('_').next().unwrap_or("AllocTRES");
        let never_assigned = self.get(F_NODELIST) == Some("None assigned");
        let tenant = self
            .get(F_ACCOUNT)
            .or(self.get(F_USER))
            .unwrap_or("unknown")
            .to_string();
        let queue = self.get(F_PARTITION).map(str::to_string);
        let qos = self.get(F_QOS).map(str::to_string);
        let priority = match self.get(F_PRIORITY) {
            None => 0,
            Some(t) => t
                .parse::<i32>()
                .map_err(|_| bad("Priority", format!("`{t}` is not an integer")))?,
        };
        let time_limit = match (self.get(F_TLRAW), self.get(F_TL)) {
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
        let gpus =
            u32::try_from(res.gpus).map_err(|_| bad(res_field, "GPU count out of range".into()))?;
        let nodes = res.nodes.max(1);
        let (tasks, per_task) = if res.nodes >= 1
            && res.gpus % nodes == 0
            && res.cpu % nodes == 0
            && u32::try_from(nodes).is_ok()
        {
            (nodes as u32, (res.gpus / nodes) as u32)
        } else if gpus <= 8 {
            (1, gpus)
        } else {
            gang_split(gpus, 8)
        };
        let t64 = u64::from(tasks);
        let shape = TaskShape {
            cpu_milli: res
                .cpu
                .div_ceil(t64)
                .checked_mul(1000)
                .ok_or_else(|| bad(res.cpu_from, "cpu count out of range".into()))?,
            mem_mib: res.mem_mib.div_ceil(t64),
            ..TaskShape::whole_gpus(per_task)
        };
        super::native::check_shape(&path, line, &shape, res_field, res_field)?;
        let mut gpu_models = Vec::new();
        let mut unknown_types = 0;
        for (ty, _) in &res.gpu_types {
            let up = ty.to_ascii_uppercase();
            if catalog::lookup(&up).is_ok() {
                gpu_models.push(up);
            } else {
                unknown_types += 1;
            }
        }
        let sources = |notes: &mut Skipped| {
            sources(notes);
            for _ in 0..unknown_types {
                bump(notes, "gpu_type_not_in_catalog");
            }
        };
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
            topology: None,
            // A job size, not a pod shape: takes the node's shape.
            split: true,
            elastic: None,
        };
        let start = start.filter(|_| !never_assigned);
        let Some(start) = start else {
            if state_word == "CANCELLED" {
                job.recorded = RecordedKind::NeverRan;
                sources(notes);
                return Ok(Component::NeverRan(Box::new(job)));
            }
            return Ok(Component::Skip("never_started"));
        };
        let start_ms = rel(&mut self.origin, start, "Start")?;
        let runtime_ms = match (elapsed_ms, end) {
            (Some(e), _) => e,
            (None, Some(end)) => {
                if end < start {
                    return Err(bad("End", "before Start (and no elapsed time)".into()));
                }
                (end - start)
                    .checked_mul(1000)
                    .ok_or_else(|| bad("End", "out of range".into()))?
            }
            (None, None) => return Ok(Component::Skip("end_missing")),
        };
        sources(notes);
        let end_ms = start_ms
            .checked_add(runtime_ms)
            .ok_or_else(|| bad("ElapsedRaw", "out of range".into()))?;
        Ok(Component::Ran {
            job: Box::new(job),
            submit_ms,
            start_ms,
            end_ms,
            state_word,
            running: end.is_none(),
        })
    }

    /// The recorded-times rule and the notes of one job.
    fn finish(c: Component, notes: &mut Skipped) -> Parsed {
        match c {
            Component::Skip(r) => Parsed::Skip(r),
            Component::NeverRan(job) => {
                bump(notes, "state.CANCELLED");
                Parsed::Job(job)
            }
            Component::Ran {
                mut job,
                submit_ms,
                start_ms,
                end_ms,
                state_word,
                running,
            } => {
                if running {
                    bump(notes, "running_at_accounting_time");
                }
                bump(notes, format!("state.{state_word}"));
                if job.set_recorded_times(submit_ms, start_ms, end_ms)
                    == RecordedOutcome::EndedBeforeWindow
                {
                    return Parsed::Skip(ENDED_BEFORE_WINDOW);
                }
                Parsed::Job(job)
            }
        }
    }

    /// One gang of a heterogeneous job's components that ran: tasks added, each task the
    /// per-resource maximum of the components' task shapes (noted `hetjob_shape_widened` when
    /// they differ), allowed models united, submit and start the earliest, end the latest,
    /// state the first component's. Without a component that ran: the first component.
    fn merge_het(&self, h: HetJob, notes: &mut Skipped) -> Result<Component, TraceError> {
        bump(notes, "hetjob");
        let mut ran = Vec::new();
        let mut first = None;
        for p in h.parts {
            match p {
                Component::Ran { .. } => ran.push(p),
                other => {
                    first.get_or_insert(other);
                }
            }
        }
        let mut it = ran.into_iter();
        let Some(Component::Ran {
            mut job,
            mut submit_ms,
            mut start_ms,
            mut end_ms,
            state_word,
            mut running,
        }) = it.next()
        else {
            return Ok(first.unwrap_or(Component::Skip("never_started")));
        };
        job.name = h.key.into();
        for p in it {
            let Component::Ran {
                job: j,
                submit_ms: s,
                start_ms: st,
                end_ms: e,
                running: r,
                ..
            } = p
            else {
                continue;
            };
            job.tasks = job.tasks.checked_add(j.tasks).ok_or_else(|| {
                TraceError::field(
                    &self.path,
                    h.line,
                    "JobID",
                    "heterogeneous job: too many tasks",
                )
            })?;
            if j.shape != job.shape {
                bump(notes, "hetjob_shape_widened");
                let (a, b) = (&mut job.shape, &j.shape);
                a.num_gpu = a.num_gpu.max(b.num_gpu);
                a.gpu_milli = a.gpu_milli.max(b.gpu_milli);
                a.cpu_milli = a.cpu_milli.max(b.cpu_milli);
                a.mem_mib = a.mem_mib.max(b.mem_mib);
            }
            job.gpu_models.extend(j.gpu_models.iter().cloned());
            submit_ms = submit_ms.min(s);
            start_ms = start_ms.min(st);
            end_ms = end_ms.max(e);
            running |= r;
        }
        job.gpu_models.sort();
        job.gpu_models.dedup();
        Ok(Component::Ran {
            job,
            submit_ms,
            start_ms,
            end_ms,
            state_word,
            running,
        })
    }

    fn flush_het(&mut self, notes: &mut Skipped) -> Option<Result<(u64, Parsed), TraceError>> {
        let h = self.het.take()?;
        let line = h.line;
        Some(
            self.merge_het(h, notes)
                .map(|c| (line, SacctRows::finish(c, notes))),
        )
    }
}

impl RowSource for SacctRows {
    /// t = 0 (the first, or with sorting the earliest, submit time): UTC for a file of
    /// absolute times, the cluster's wall clock (zone unknown) for naive ones.
    fn trace_start(&self) -> Option<super::TraceStart> {
        let o = self.origin.0?;
        Some(match self.clock {
            Some((Clock::Absolute, _, _)) => super::TraceStart::utc(o, None),
            _ => super::TraceStart::local(o, None),
        })
    }

    fn next_row(&mut self, notes: &mut Skipped) -> Option<Result<(u64, Parsed), TraceError>> {
        loop {
            let rec = match self.stash.take() {
                Some(r) => r,
                None => match self.reader.next_item() {
                    Ok(None) => {
                        if let (0, Some((line, fields))) = (self.records, self.first_malformed) {
                            self.first_malformed = None;
                            return Some(Err(TraceError::BadRow {
                                path: self.path.clone(),
                                line,
                                message: format!(
                                    "no row of the file is a sacct record of the {} columns \
                                     named (this one has {fields} fields): check the header, \
                                     the sacct_format list and the delimiter",
                                    self.reader.width()
                                ),
                            }));
                        }
                        return self.flush_het(notes);
                    }
                    Err(e) => return Some(Err(e)),
                    Ok(Some(Item::Blank)) => {
                        bump(notes, "blank_line");
                        continue;
                    }
                    Ok(Some(Item::Malformed { line, fields })) => {
                        notes
                            .entry("malformed_row.first_line".into())
                            .or_insert(line);
                        self.first_malformed.get_or_insert((line, fields));
                        return Some(Ok((line, Parsed::Skip("malformed_row"))));
                    }
                    Ok(Some(Item::Record(r))) => {
                        self.records += 1;
                        r
                    }
                },
            };
            let line = rec.line;
            let repair = rec.repair;
            self.rec = Some(rec);
            let key = self.het_key();
            // A row of another job ends the heterogeneous job being gathered: emit that first
            // and read this row again on the next call.
            if self
                .het
                .as_ref()
                .is_some_and(|h| key.as_ref().is_none_or(|(k, _)| *k != h.key))
            {
                self.stash = self.rec.take();
                return self.flush_het(notes);
            }
            match repair {
                Repair::None => {}
                Repair::Delimiter => bump(notes, "repaired.delimiter_in_text"),
                Repair::Newline => bump(notes, "repaired.newline_in_text"),
            }
            let c = match self.component(line, notes) {
                Ok(c) => c,
                Err(e) => return Some(Err(e)),
            };
            match key {
                Some((_, true)) | None => return Some(Ok((line, SacctRows::finish(c, notes)))),
                Some((k, false)) => {
                    self.het
                        .get_or_insert_with(|| HetJob {
                            key: k,
                            line,
                            parts: Vec::new(),
                        })
                        .parts
                        .push(c);
                }
            }
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
    fn memory_and_limits() {
        assert_eq!(parse_mem_mib("1.5K").unwrap(), 1);
        assert_eq!(parse_mem_mib("100").unwrap(), 100);
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

    /// `sacct --noheader --format=…`: the columns come from the scenario's list (any case,
    /// `%WIDTH` ignored); a header line given anyway is skipped; without the list the error
    /// says what to add.
    #[test]
    fn noheader_with_a_format_list() {
        let dir = tempfile::tempdir().unwrap();
        let rows = "7|2024-03-01T10:00:00|2024-03-01T10:00:05|2024-03-01T10:01:05|COMPLETED|cpu=4,gres/gpu=2,node=1\n\
                    8|2024-03-01T10:00:30|2024-03-01T10:00:35|2024-03-01T10:00:55|FAILED|cpu=1,node=1\n";
        let p = write(&dir, "nh.txt", rows);
        let opts =
            SacctOptions::with_format("jobidraw,Submit%20,Start,End,State,AllocTRES%40").unwrap();
        let jobs: Vec<JobSpec> = open_with(&p, &opts).unwrap().map(Result::unwrap).collect();
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].name.as_str(), jobs[0].shape.num_gpu), ("7", 2));
        // 10:01:05 − 10:00:05 = 60 s.
        assert_eq!(jobs[0].runtime, SimDuration::from_secs(60));
        assert_eq!(jobs[1].submit, SimTime::from_secs(30));
        let with_header = write(
            &dir,
            "h.txt",
            &format!("JobIDRaw|Submit|Start|End|State|AllocTRES\n{rows}"),
        );
        assert_eq!(open_with(&with_header, &opts).unwrap().count(), 2);
        let e = open(&p).err().expect("no header").to_string();
        assert!(e.contains("line 1") && e.contains("sacct_format"), "{e}");
        assert!(SacctOptions::with_format("JobID,,State").is_err());
    }

    /// `SLURM_TIME_FORMAT=%s` (epoch seconds) and `%FT%T%z` / ISO offsets: absolute times.
    /// 1709287200 is 2024-03-01T10:00:00Z; `2024-03-01T11:00:10+01:00` is 10:00:10Z, so
    /// the second job is submitted 10 s after the first; `…T10:00:20+0000` and
    /// `…T05:00:30-05` are 20 s and 30 s. A file mixing naive and absolute times is refused.
    #[test]
    fn epoch_and_utc_offset_times() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "abs.txt",
            &format!(
                "{H}1|1709287200|1709287200|1709287260|60|cpu=1|cpu=1|p|a|n|COMPLETED||\n\
                 2|2024-03-01T11:00:10+01:00|2024-03-01T11:00:10+01:00|2024-03-01T10:01:10Z|60|cpu=1|cpu=1|p|a|n|COMPLETED||\n\
                 3|2024-03-01T10:00:20+0000|2024-03-01T10:00:20+0000|Unknown|5|cpu=1|cpu=1|p|a|n|RUNNING||\n\
                 4|2024-03-01T05:00:30-05|2024-03-01T05:00:30-05|2024-03-01T05:00:40-05||cpu=1|cpu=1|p|a|n|COMPLETED||\n"
            ),
        );
        let mut s = open(&p).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        let submits: Vec<u64> = jobs.iter().map(|j| j.submit.0 / 1000).collect();
        assert_eq!(submits, [0, 10, 20, 30]);
        assert_eq!(jobs[3].runtime, SimDuration::from_secs(10));
        // t = 0 = 1709287200 s (job 2's 11:00:10+01:00 = 10:00:10Z is 10 s later), UTC.
        let start = s.trace_start().unwrap();
        assert_eq!(start.time, "2024-03-01T10:00:00Z");
        assert!(start.utc_offset_known);
        let naive = write(
            &dir,
            "naive.txt",
            &format!(
                "{H}2|2024-03-01T10:00:10|2024-03-01T10:00:10|2024-03-01T10:01:10|60|cpu=1|cpu=1|p|a|n|COMPLETED||\n"
            ),
        );
        let start = read_all_sorted(&naive).unwrap().trace_start().unwrap();
        assert_eq!(start.time, "2024-03-01T10:00:10");
        assert!(!start.utc_offset_known);
        let mixed = write(
            &dir,
            "mixed.txt",
            &format!(
                "{H}1|1709287200|1709287200|1709287260|60|cpu=1|cpu=1|p|a|n|COMPLETED||\n\
                 2|2024-03-01T10:00:10|2024-03-01T10:00:10|2024-03-01T10:01:10|60|cpu=1|cpu=1|p|a|n|COMPLETED||\n"
            ),
        );
        let e = open(&mixed)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3") && e.contains("one SLURM_TIME_FORMAT"),
            "{e}"
        );
        for bad in [
            "2024-03-01T10:00:00+1",
            "2024-03-01T10:00:00+25:00",
            "2024-03-01T10:00:00 UTC",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    /// Heterogeneous job 200 (`200+0`: 1 node, 4 CPUs, no GPU; `200+1`: 2 nodes, 16 CPUs,
    /// 8 × A100) is one gang: 1 + 2 = 3 tasks, each the per-resource maximum of 4 CPUs /
    /// 0 GPUs and 16 / 2 = 8 CPUs / 8 / 2 = 4 GPUs → 8 CPUs (8000 milli), 4 GPUs; start is the
    /// earliest (10 s), end the latest (10 + 120 = 130 s), so runtime 120 s. Its steps are
    /// skipped; job 201 after it stays its own job.
    #[test]
    fn heterogeneous_job_parts_are_one_gang() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "het.txt",
            "JobID|JobIDRaw|Submit|Start|End|ElapsedRaw|AllocTRES|State\n\
             200+0|200|2024-03-01T10:00:00|2024-03-01T10:00:10|2024-03-01T10:02:00|110|cpu=4,mem=8G,node=1|COMPLETED\n\
             200+0.batch|200.batch|2024-03-01T10:00:10|2024-03-01T10:00:10|2024-03-01T10:02:00|110|cpu=4,mem=8G,node=1|COMPLETED\n\
             200+1|201|2024-03-01T10:00:00|2024-03-01T10:00:10|2024-03-01T10:02:10|120|cpu=16,mem=64G,node=2,gres/gpu:a100=8|COMPLETED\n\
             200+1.0|201.0|2024-03-01T10:00:11|2024-03-01T10:00:11|2024-03-01T10:02:10|119|cpu=16,node=2,gres/gpu:a100=8|COMPLETED\n\
             202|202|2024-03-01T10:00:05|2024-03-01T10:00:20|2024-03-01T10:00:30|10|cpu=1,node=1|COMPLETED\n",
        );
        let mut s = open(&p).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        assert_eq!(jobs.len(), 2, "{jobs:?}");
        let h = &jobs[0];
        assert_eq!(h.name, "200");
        assert_eq!((h.tasks, h.shape.num_gpu, h.shape.cpu_milli), (3, 4, 8000));
        // Memory: max(8 GiB, 64 GiB / 2) = 32768 MiB.
        assert_eq!(h.shape.mem_mib, 32_768);
        assert_eq!(h.gpu_models, ["A100"]);
        assert_eq!(h.recorded_start, Some(SimTime::from_secs(10)));
        assert_eq!(h.runtime, SimDuration::from_secs(120));
        assert_eq!(jobs[1].name, "202");
        let n = s.notes();
        assert_eq!((n["hetjob"], n["hetjob_shape_widened"]), (1, 1));
        assert_eq!(n["state.COMPLETED"], 2);
        assert_eq!(s.skipped()["job_step"], 2);
    }
}
