//! fleetsim's native trace format: CSV or JSON Lines carrying the same fields.
//!
//! The format is specified in `traces/README.md`; this module is its implementation and the
//! reference for every rule below.
//!
//! # Files
//!
//! * The format is chosen by the file name: `.csv` → CSV; `.jsonl` or `.ndjson` → JSON Lines;
//!   either may end in `.gz` (gzip, read through `flate2`). [`open_with_format`] takes the
//!   format explicitly.
//! * CSV: a header row naming the columns (any order; line 1), then one job per row. Fields are
//!   trimmed; an empty field means "not given". Extra resources are `res_<name>` columns.
//! * JSON Lines: one JSON object per line (line 1 is the first job; blank lines are allowed and
//!   ignored). Keys are the CSV column names; `null` means "not given". Numeric fields must be
//!   JSON numbers, text fields JSON strings; `gpu_models` and `cells` are arrays of strings (a
//!   `|`-separated string is accepted too). Extra resources are an `extra` object
//!   `{"<name>": <number>}`.
//! * Unknown CSV columns, unknown JSON keys and duplicated CSV columns are errors naming them.
//!
//! # Fields
//!
//! | field | required | unit / meaning | default |
//! |---|---|---|---|
//! | `id` | yes | job id (text; uniqueness is not checked) | – |
//! | `submit_s` | yes | submission time, decimal seconds since trace start; negative only with `start_s`/`end_s` | – |
//! | `tenant` | yes | tenant (account, VC, namespace) | – |
//! | `queue` | no | queue name | none (the scenario decides) |
//! | `priority` | no | integer, higher first | 0 |
//! | `tasks` | no | gang size, ≥ 1 | 1 |
//! | `num_gpu` | no | accelerators per task | 0 |
//! | `gpu_milli` | no | share of each accelerator, 1..=1000 | 1000 if `num_gpu` > 0, else 0 |
//! | `cpu_milli` | no | CPU per task, milli-cores | 0 |
//! | `mem_mib` | no | memory per task, MiB | 0 |
//! | `runtime_s` | unless `start_s`+`end_s` | run time at reference speed, decimal seconds ≥ 0 | `end_s − start_s` |
//! | `time_limit_s` | no | user time limit, decimal seconds ≥ 0 | none |
//! | `gpu_models` | no | allowed accelerator models (catalog names), `|`-separated | any |
//! | `cells` | no | allowed cells, `|`-separated | any |
//! | `start_s`, `end_s` | no (both or neither) | recorded start/end, decimal seconds since trace start | none |
//! | `qos` | no | QoS class label | none |
//! | `split` | no | 1: the tasks take the node's shape (split into node-sized members of one gang in a cell whose nodes have fewer accelerators than a task, [`JobSpec::split`]); 0: rigid | 0 when `tasks` is given, else 1 |
//! | `min_gpus`, `max_gpus` | elastic rows | an elastic job's fewest and most GPUs, 1 ≤ min ≤ max (one replica per whole GPU) | – |
//! | `work_gpu_s` | elastic rows | an elastic job's work, GPU-seconds at size 1 (decimal, 0.001 to 10^12) | – |
//! | `throughput` | elastic rows | an elastic job's throughput model: `linear`, `amdahl:F` or `table:S1\|S2\|…` ([`super::throughput`]) | – |
//! | `res_<name>` / `extra.<name>` | no | a resource the model does not have: must be 0 (ignored, field case B16 Z1); non-zero is an error | – |
//!
//! # Elastic rows
//!
//! A row that gives any of `min_gpus`, `max_gpus`, `work_gpu_s`, `throughput` is an
//! elastic job ([`super::SizedSpec`], run by the scenario's `[elastic]` table with
//! `allocator = "grow-idle"` or `"fixed"`): it must give all four, and none of `tasks`,
//! `num_gpu`, `gpu_milli`, `cpu_milli`, `mem_mib`, `runtime_s`, `time_limit_s`,
//! `gpu_models`, `cells`, `start_s`, `end_s`, `split` (its size is decided while it runs,
//! one whole GPU per replica; its length follows from its work and throughput model).
//! The writers ([`NativeWriter`], [`write_csv`]) refuse elastic jobs.
//!
//! `gpu_models` and `cells` are treated as sets: de-duplicated and sorted. Every model must be
//! in the accelerator catalog ([`crate::catalog`]).
//!
//! # Time conversion (every time field)
//!
//! Seconds are converted to integer milliseconds exactly from the decimal text (no float is
//! involved): `12.3456` → 12,346 ms, rounding **half away from zero** when the text has more
//! than three fractional digits (`0.0005` → 1 ms, `-0.0005` → −1 ms). An exponent (`1.5e3`)
//! is accepted. JSON numbers are read through their shortest decimal representation.
//!
//! # Submit, runtime and recorded times (field case B18)
//!
//! Without `start_s`/`end_s`: submit = `submit_s` (must be ≥ 0), runtime = `runtime_s`
//! (required), kind [`RecordedKind::Normal`], no recorded start.
//!
//! With `start_s` and `end_s` (times relative to the trace start; `end_s` ≥ `start_s`; if
//! `runtime_s` is also given it must equal `end_s − start_s` in ms), the first matching rule
//! applies:
//!
//! 1. `start < submit`, or `start = end = 0` with `submit > 0` → [`RecordedKind::NeverRan`]:
//!    kept as a job, submit = max(submit, 0), runtime 0, no recorded start.
//! 2. `end ≤ 0` → the row is skipped and counted under `ended_before_window` in
//!    [`JobStream::skipped`].
//! 3. `start < 0 < end` → [`RecordedKind::PreExisting`]: submit 0, recorded start 0,
//!    runtime = `end` (the part inside the window).
//! 4. otherwise [`RecordedKind::Normal`]: submit = max(submit, 0) (a job submitted before the
//!    window that starts inside it has its wait counted from 0), recorded start = `start`,
//!    runtime = `end − start`.
//!
//! # Order
//!
//! [`open`] streams row by row and requires non-decreasing submit times (after the rules
//! above, so pre-window rows at submit 0 may come first); a job whose submit is earlier than
//! the previous job's is an error naming its line. [`read_all_sorted`] loads the whole file
//! and stably sorts by (submit, row order) instead.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use fleetsim_policies::{SimDuration, SimTime, TaskShape, WHOLE_GPU_MILLI};

use super::job::RecordedOutcome;
use super::{JobSpec, JobStream, RecordedKind, Skipped, TraceError, VecStream};
use crate::catalog;

/// Reason under which rows that ended at or before the trace start are counted in
/// [`JobStream::skipped`].
pub const ENDED_BEFORE_WINDOW: &str = "ended_before_window";

/// Every column the reader takes: [`FIELDS`] (the ones written, in [`write_csv`]'s column
/// order) then [`ELASTIC_FIELDS`] (read, not written).
const READ_FIELDS: [&str; 22] = [
    "id",
    "submit_s",
    "tenant",
    "queue",
    "priority",
    "tasks",
    "num_gpu",
    "gpu_milli",
    "cpu_milli",
    "mem_mib",
    "runtime_s",
    "time_limit_s",
    "gpu_models",
    "cells",
    "start_s",
    "end_s",
    "qos",
    "split",
    "min_gpus",
    "max_gpus",
    "work_gpu_s",
    "throughput",
];

/// The written columns ([`write_csv`]'s order): the reader's up to the elastic ones.
pub const FIELDS: &[&str] = READ_FIELDS.split_at(MIN_GPUS).0;

/// The elastic columns, read but not written (see the module docs).
pub const ELASTIC_FIELDS: &[&str] = READ_FIELDS.split_at(MIN_GPUS).1;

const REQUIRED: [&str; 3] = ["id", "submit_s", "tenant"];

const ID: usize = 0;
const SUBMIT_S: usize = 1;
const TENANT: usize = 2;
const QUEUE: usize = 3;
const PRIORITY: usize = 4;
const TASKS: usize = 5;
const NUM_GPU: usize = 6;
const GPU_MILLI: usize = 7;
const CPU_MILLI: usize = 8;
const MEM_MIB: usize = 9;
const RUNTIME_S: usize = 10;
const TIME_LIMIT_S: usize = 11;
const GPU_MODELS: usize = 12;
const CELLS: usize = 13;
const START_S: usize = 14;
const END_S: usize = 15;
const QOS: usize = 16;
const SPLIT: usize = 17;
const MIN_GPUS: usize = 18;
const MAX_GPUS: usize = 19;
const WORK_GPU_S: usize = 20;
const THROUGHPUT: usize = 21;

/// Largest `work_gpu_s` of an elastic row, GPU-seconds (10^12, about 32,000 GPU-years):
/// its rate arithmetic stays inside `u128`.
pub const MAX_WORK_GPU_S: u64 = 1_000_000_000_000;

// ---------------------------------------------------------------------------------------------
// Shared helpers (also used by the other readers of this crate).
// ---------------------------------------------------------------------------------------------

/// A decimal number split into sign, integer mantissa and power of ten.
struct Decimal {
    negative: bool,
    mantissa: u128,
    exp10: i32,
}

/// Parses decimal text (`-12.5`, `3`, `.5`, `1e3`) exactly, without floats.
fn parse_decimal(text: &str) -> Result<Decimal, String> {
    let not_a_number = || format!("`{text}` is not a decimal number");
    let b = text.as_bytes();
    let mut i = 0;
    let negative = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut mantissa: u128 = 0;
    let mut significant = 0u32;
    let mut any_digit = false;
    let mut seen_dot = false;
    let mut frac_digits: i32 = 0;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                any_digit = true;
                if mantissa != 0 || c != b'0' {
                    significant += 1;
                    if significant > 36 {
                        return Err(format!("`{text}` has too many digits"));
                    }
                    mantissa = mantissa * 10 + u128::from(c - b'0');
                }
                if seen_dot {
                    frac_digits += 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            b'e' | b'E' => break,
            _ => return Err(not_a_number()),
        }
        i += 1;
    }
    if !any_digit {
        return Err(not_a_number());
    }
    let mut exp: i32 = 0;
    if i < b.len() {
        i += 1;
        let exp_negative = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let digits = &b[i..];
        if digits.is_empty() || digits.len() > 4 || !digits.iter().all(u8::is_ascii_digit) {
            return Err(not_a_number());
        }
        for &d in digits {
            exp = exp * 10 + i32::from(d - b'0');
        }
        if exp_negative {
            exp = -exp;
        }
    }
    Ok(Decimal {
        negative,
        mantissa,
        exp10: exp - frac_digits,
    })
}

/// Converts decimal seconds text to integer milliseconds exactly, rounding half away from
/// zero (`0.0005` → 1, `-0.0005` → −1, `1.5e3` → 1,500,000). No float is involved, so the
/// result does not depend on the platform.
///
/// # Errors
/// A message naming the text when it is not a decimal number (`nan`, `inf`, empty, stray
/// characters), has more than 36 significant digits, or is out of the `i64` range.
pub fn parse_seconds_ms(text: &str) -> Result<i64, String> {
    let d = parse_decimal(text)?;
    let e = d.exp10 + 3;
    let magnitude: u128 = if d.mantissa == 0 {
        0
    } else if e >= 0 {
        if e > 38 {
            return Err(format!("`{text}` is out of range"));
        }
        d.mantissa
            .checked_mul(10u128.pow(e as u32))
            .ok_or_else(|| format!("`{text}` is out of range"))?
    } else if -e > 38 {
        0
    } else {
        let div = 10u128.pow((-e) as u32);
        let (q, r) = (d.mantissa / div, d.mantissa % div);
        if r * 2 >= div {
            q + 1
        } else {
            q
        }
    };
    if magnitude > i64::MAX as u128 {
        return Err(format!("`{text}` is out of range"));
    }
    let m = magnitude as i64;
    Ok(if d.negative { -m } else { m })
}

/// [`parse_seconds_ms`] for a time that must not be negative.
pub(crate) fn parse_nonneg_ms(text: &str) -> Result<u64, String> {
    let ms = parse_seconds_ms(text)?;
    u64::try_from(ms).map_err(|_| format!("`{text}` is negative"))
}

/// True when decimal text is exactly zero (`0`, `0.0`, `-0`, `0e5`).
fn decimal_is_zero(text: &str) -> Result<bool, String> {
    Ok(parse_decimal(text)?.mantissa == 0)
}

/// Formats milliseconds as decimal seconds with no trailing zeros (`12345` → `12.345`,
/// `60000` → `60`, `-1` → `-0.001`); [`parse_seconds_ms`] reads the text back exactly.
pub fn format_ms_as_seconds(ms: i64) -> String {
    let a = ms.unsigned_abs();
    let sign = if ms < 0 { "-" } else { "" };
    let (s, f) = (a / 1000, a % 1000);
    if f == 0 {
        format!("{sign}{s}")
    } else {
        let frac = format!("{f:03}");
        format!("{sign}{s}.{}", frac.trim_end_matches('0'))
    }
}

/// Parses a whole non-negative number (digits only).
pub(crate) fn parse_count<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    if text.starts_with('-') {
        return Err(format!("`{text}` is negative"));
    }
    if text.is_empty() || !text.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("`{text}` is not a whole number"));
    }
    text.parse::<T>()
        .map_err(|_| format!("`{text}` is out of range"))
}

/// Opens a file for reading, through gzip when its name ends in `.gz`.
pub(crate) fn open_input(path: &Path) -> Result<Box<dyn Read + Send>, TraceError> {
    let file = std::fs::File::open(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    Ok(if gz {
        // Bounded on the decompressed bytes (a gzip bomb is refused, naming the cap).
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Box::new(BufReader::new(crate::input_cap::DecompressedCap::new(
            flate2::read::MultiGzDecoder::new(BufReader::new(file)),
            crate::input_cap::gz_cap(size),
        )))
    } else {
        Box::new(BufReader::new(file))
    })
}

/// Opens a line-oriented file for reading (see [`open_input`]), with lines bounded by
/// [`super::line_cap::MAX_LINE_BYTES`]: a longer line fails the read, and
/// [`super::line_cap::io_error`] names its line.
pub(crate) fn open_lines(path: &Path) -> Result<Box<dyn Read + Send>, TraceError> {
    Ok(Box::new(super::line_cap::LineCap::new(
        open_input(path)?,
        super::line_cap::MAX_LINE_BYTES,
    )))
}

/// A CSV reader with a header row, strict field counts and trimmed fields.
pub(crate) type CsvReader = csv::Reader<Box<dyn Read + Send>>;

/// Opens `path` as CSV (see [`CsvReader`]).
pub(crate) fn csv_reader(path: &Path) -> Result<CsvReader, TraceError> {
    Ok(csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .trim(csv::Trim::All)
        .from_reader(open_lines(path)?))
}

/// Turns a `csv` error into a [`TraceError`] naming the file and line.
pub(crate) fn csv_error(path: &Path, e: csv::Error) -> TraceError {
    let line = e.position().map(|p| p.line()).unwrap_or(0);
    match e.into_kind() {
        csv::ErrorKind::Io(source) => super::line_cap::io_error(path, source),
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => TraceError::BadRow {
            path: path.to_path_buf(),
            line,
            message: format!(
                "wrong number of fields: the header has {expected_len}, this row has {len}"
            ),
        },
        csv::ErrorKind::Utf8 { err, .. } => TraceError::BadRow {
            path: path.to_path_buf(),
            line,
            message: format!("field {} is not valid UTF-8", err.field() + 1),
        },
        other => TraceError::BadRow {
            path: path.to_path_buf(),
            line,
            message: format!("{other:?}"),
        },
    }
}

/// The column layout of a CSV header.
pub(crate) struct Columns {
    /// For each known column (in the caller's order), its index in the record.
    pub known: Vec<Option<usize>>,
    /// Columns with the allowed extra prefix: (record index, full column name).
    pub extra: Vec<(usize, String)>,
}

impl Columns {
    /// The trimmed value of known column `k` in `rec`, `None` when the column is absent or
    /// the field is empty.
    pub fn get<'r>(&self, rec: &'r csv::StringRecord, k: usize) -> Option<&'r str> {
        self.known[k]
            .and_then(|i| rec.get(i))
            .filter(|s| !s.is_empty())
    }
}

/// Reads the header and maps it onto `known` columns. Unknown or duplicated columns are
/// errors naming them (line 1), except names starting with `extra_prefix`; then every column
/// of `required` must be present, checked in the order given.
pub(crate) fn map_columns(
    path: &Path,
    rdr: &mut CsvReader,
    known: &[&str],
    required: &[&str],
    extra_prefix: Option<&str>,
) -> Result<Columns, TraceError> {
    let headers = rdr.headers().map_err(|e| csv_error(path, e))?.clone();
    let mut cols = Columns {
        known: vec![None; known.len()],
        extra: Vec::new(),
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, h) in headers.iter().enumerate() {
        if !seen.insert(h.to_string()) {
            return Err(TraceError::field(path, 1, h, "column appears twice"));
        }
        if let Some(k) = known.iter().position(|c| *c == h) {
            cols.known[k] = Some(i);
        } else if extra_prefix.is_some_and(|p| h.len() > p.len() && h.starts_with(p)) {
            cols.extra.push((i, h.to_string()));
        } else {
            return Err(TraceError::field(
                path,
                1,
                h,
                format!("unknown column; expected columns: {}", known.join(", ")),
            ));
        }
    }
    for r in required {
        let present = known
            .iter()
            .position(|c| c == r)
            .is_some_and(|k| cols.known[k].is_some());
        if !present {
            return Err(TraceError::MissingColumn {
                path: path.to_path_buf(),
                column: r.to_string(),
            });
        }
    }
    Ok(cols)
}

/// Reads the next record; `Some(Ok(line))` with the record's 1-based first line.
pub(crate) fn next_record(
    path: &Path,
    rdr: &mut CsvReader,
    rec: &mut csv::StringRecord,
) -> Option<Result<u64, TraceError>> {
    match rdr.read_record(rec) {
        Ok(false) => None,
        Ok(true) => Some(Ok(rec.position().map(|p| p.line()).unwrap_or(0))),
        Err(e) => Some(Err(csv_error(path, e))),
    }
}

/// Splits a `|`-separated list, validating that no element is empty, and returns it sorted
/// and de-duplicated.
pub(crate) fn parse_set(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in text.split('|') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("`{text}` has an empty element"));
        }
        out.push(item.to_string());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// [`parse_set`] plus a catalog lookup of every element.
pub(crate) fn parse_models(text: &str) -> Result<Vec<String>, String> {
    let models = parse_set(text)?;
    for m in &models {
        catalog::lookup(m)?;
    }
    Ok(models)
}

/// Validates a task shape, mapping its error to the field it concerns.
pub(crate) fn check_shape(
    path: &Path,
    line: u64,
    shape: &TaskShape,
    num_gpu_field: &str,
    gpu_milli_field: &str,
) -> Result<(), TraceError> {
    shape.validate().map_err(|m| {
        let f = if shape.num_gpu > fleetsim_policies::resources::MAX_GPUS_PER_NODE {
            num_gpu_field
        } else {
            gpu_milli_field
        };
        TraceError::field(path, line, f, m)
    })
}

// ---------------------------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------------------------

/// The two encodings of the native format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeFormat {
    /// Comma-separated values with a header row.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

impl NativeFormat {
    /// The format a file name implies: `.csv` → CSV, `.jsonl`/`.ndjson` → JSON Lines, with
    /// an optional trailing `.gz`; `None` for anything else.
    pub fn from_path(path: &Path) -> Option<NativeFormat> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        if name.ends_with(".csv") {
            Some(NativeFormat::Csv)
        } else if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
            Some(NativeFormat::Jsonl)
        } else {
            None
        }
    }
}

/// One row's raw field texts, indexed like [`READ_FIELDS`], plus extra resources
/// (field label for messages, value text).
#[derive(Default)]
struct Raw {
    vals: [Option<String>; READ_FIELDS.len()],
    extra: Vec<(String, String)>,
}

/// What one row became.
enum Row {
    Job(Box<JobSpec>),
    Skipped(&'static str),
}

fn build_row(path: &Path, line: u64, raw: &Raw) -> Result<Row, TraceError> {
    let bad = |k: usize, m: String| TraceError::field(path, line, READ_FIELDS[k], m);
    let get = |k: usize| raw.vals[k].as_deref();
    let required = |k: usize| get(k).ok_or_else(|| bad(k, "missing (required)".to_string()));
    let count = |k: usize| -> Result<Option<u64>, TraceError> {
        get(k)
            .map(|t| parse_count::<u64>(t).map_err(|m| bad(k, m)))
            .transpose()
    };
    let count32 = |k: usize| -> Result<Option<u32>, TraceError> {
        get(k)
            .map(|t| parse_count::<u32>(t).map_err(|m| bad(k, m)))
            .transpose()
    };
    let secs = |k: usize| -> Result<Option<i64>, TraceError> {
        get(k)
            .map(|t| parse_seconds_ms(t).map_err(|m| bad(k, m)))
            .transpose()
    };

    for (label, value) in &raw.extra {
        match decimal_is_zero(value) {
            Ok(true) => {}
            Ok(false) => {
                return Err(TraceError::field(
                    path,
                    line,
                    label,
                    format!(
                        "non-zero request `{value}` for a resource the model has no dimension for \
                         (only zero requests of unknown resources are ignored)"
                    ),
                ))
            }
            Err(m) => return Err(TraceError::field(path, line, label, m)),
        }
    }

    let name = required(ID)?.to_string();
    let tenant = required(TENANT)?.to_string();
    let submit = parse_seconds_ms(required(SUBMIT_S)?).map_err(|m| bad(SUBMIT_S, m))?;
    if ELASTIC_COLUMNS.iter().any(|&k| get(k).is_some()) {
        return elastic_row(path, line, raw, name, tenant, submit);
    }
    let priority = get(PRIORITY)
        .map(|t| {
            t.parse::<i32>()
                .map_err(|_| bad(PRIORITY, format!("`{t}` is not an integer")))
        })
        .transpose()?
        .unwrap_or(0);
    let tasks = count32(TASKS)?.unwrap_or(1);
    if tasks == 0 {
        return Err(bad(TASKS, "must be at least 1".to_string()));
    }
    let num_gpu = count32(NUM_GPU)?.unwrap_or(0);
    let gpu_milli = count32(GPU_MILLI)?.unwrap_or(if num_gpu > 0 { WHOLE_GPU_MILLI } else { 0 });
    let shape = TaskShape {
        num_gpu,
        gpu_milli,
        cpu_milli: count(CPU_MILLI)?.unwrap_or(0),
        mem_mib: count(MEM_MIB)?.unwrap_or(0),
    };
    check_shape(path, line, &shape, FIELDS[NUM_GPU], FIELDS[GPU_MILLI])?;
    let runtime = secs(RUNTIME_S)?;
    if let Some(r) = runtime {
        if r < 0 {
            return Err(bad(RUNTIME_S, "must not be negative".to_string()));
        }
    }
    let time_limit = secs(TIME_LIMIT_S)?;
    if let Some(r) = time_limit {
        if r < 0 {
            return Err(bad(TIME_LIMIT_S, "must not be negative".to_string()));
        }
    }
    let gpu_models = get(GPU_MODELS)
        .map(|t| parse_models(t).map_err(|m| bad(GPU_MODELS, m)))
        .transpose()?
        .unwrap_or_default();
    let cells = get(CELLS)
        .map(|t| parse_set(t).map_err(|m| bad(CELLS, m)))
        .transpose()?
        .unwrap_or_default();
    let start = secs(START_S)?;
    let end = secs(END_S)?;

    let mut job = JobSpec {
        name: name.into(),
        tenant: tenant.into(),
        queue: get(QUEUE).map(str::to_string),
        priority,
        qos: get(QOS).map(str::to_string),
        submit: SimTime::ZERO,
        tasks,
        shape,
        gpu_models,
        cells,
        runtime: SimDuration::ZERO,
        time_limit: time_limit.map(|t| SimDuration(t as u64)),
        recorded_start: None,
        recorded: RecordedKind::Normal,
        topology: None,
        // A row that gives `tasks` keeps them rigid; otherwise its size takes the node's
        // shape (unless `split` says otherwise).
        split: match count32(SPLIT)? {
            None => get(TASKS).is_none(),
            Some(0) => false,
            Some(1) => true,
            Some(v) => return Err(bad(SPLIT, format!("must be 0 or 1, got {v}"))),
        },
        elastic: None,
    };
    match (start, end) {
        (None, None) => {
            if submit < 0 {
                return Err(bad(
                    SUBMIT_S,
                    format!(
                        "negative submit time {} s is allowed only with start_s and end_s",
                        format_ms_as_seconds(submit)
                    ),
                ));
            }
            let r = runtime.ok_or_else(|| {
                bad(
                    RUNTIME_S,
                    "missing (required unless start_s and end_s are given)".to_string(),
                )
            })?;
            job.submit = SimTime(submit as u64);
            job.runtime = SimDuration(r as u64);
        }
        (Some(_), None) => {
            return Err(bad(
                END_S,
                "missing: start_s is given without end_s".to_string(),
            ))
        }
        (None, Some(_)) => {
            return Err(bad(
                START_S,
                "missing: end_s is given without start_s".to_string(),
            ))
        }
        (Some(st), Some(en)) => {
            if en < st {
                return Err(bad(
                    END_S,
                    format!(
                        "end {} s is before start {} s",
                        format_ms_as_seconds(en),
                        format_ms_as_seconds(st)
                    ),
                ));
            }
            if let Some(r) = runtime {
                if en.checked_sub(st) != Some(r) {
                    return Err(bad(
                        RUNTIME_S,
                        format!(
                            "{} s disagrees with end_s − start_s = {} s",
                            format_ms_as_seconds(r),
                            format_ms_as_seconds(en.saturating_sub(st))
                        ),
                    ));
                }
            }
            if job.set_recorded_times(submit, st, en) == RecordedOutcome::EndedBeforeWindow {
                return Ok(Row::Skipped(ENDED_BEFORE_WINDOW));
            }
        }
    }
    Ok(Row::Job(Box::new(job)))
}

const ELASTIC_COLUMNS: [usize; 4] = [MIN_GPUS, MAX_GPUS, WORK_GPU_S, THROUGHPUT];

/// An elastic row (see the module docs): one whole GPU per replica, `min_gpus` tasks as its
/// request at submit.
fn elastic_row(
    path: &Path,
    line: u64,
    raw: &Raw,
    name: String,
    tenant: String,
    submit: i64,
) -> Result<Row, TraceError> {
    let bad = |k: usize, m: String| TraceError::field(path, line, READ_FIELDS[k], m);
    let get = |k: usize| raw.vals[k].as_deref();
    let required = |k: usize| {
        get(k).ok_or_else(|| {
            bad(
                k,
                "missing: an elastic row (one with min_gpus, max_gpus, work_gpu_s or throughput) gives all four".to_string(),
            )
        })
    };
    for k in [
        TASKS,
        NUM_GPU,
        GPU_MILLI,
        CPU_MILLI,
        MEM_MIB,
        RUNTIME_S,
        TIME_LIMIT_S,
        GPU_MODELS,
        CELLS,
        START_S,
        END_S,
        SPLIT,
    ] {
        if get(k).is_some() {
            return Err(bad(
                k,
                "does not apply to an elastic row (its size is decided while it runs, one whole GPU per replica; its length follows from work_gpu_s and throughput)".to_string(),
            ));
        }
    }
    let gpus = |k: usize| -> Result<u32, TraceError> {
        let v = parse_count::<u32>(required(k)?).map_err(|m| bad(k, m))?;
        if v == 0 {
            return Err(bad(k, "must be at least 1".to_string()));
        }
        Ok(v)
    };
    let (min, max) = (gpus(MIN_GPUS)?, gpus(MAX_GPUS)?);
    if max < min {
        return Err(bad(
            MAX_GPUS,
            format!("max_gpus {max} is below min_gpus {min}"),
        ));
    }
    let work_gpu_ms = parse_nonneg_ms(required(WORK_GPU_S)?).map_err(|m| bad(WORK_GPU_S, m))?;
    if work_gpu_ms == 0 {
        // A recorded run may be empty; a modelled job with no work would only complete at
        // its submit, counted as a job that ran.
        return Err(bad(
            WORK_GPU_S,
            "must be at least 0.001 GPU-seconds (a job with no work)".to_string(),
        ));
    }
    if work_gpu_ms > MAX_WORK_GPU_S * 1000 {
        return Err(bad(
            WORK_GPU_S,
            format!("above the limit of {MAX_WORK_GPU_S} GPU-seconds"),
        ));
    }
    let throughput =
        super::ThroughputModel::parse(required(THROUGHPUT)?).map_err(|m| bad(THROUGHPUT, m))?;
    throughput
        .validate(min, max)
        .map_err(|e| bad(THROUGHPUT, e.message))?;
    if submit < 0 {
        return Err(bad(SUBMIT_S, "must not be negative".to_string()));
    }
    let priority = get(PRIORITY)
        .map(|t| {
            t.parse::<i32>()
                .map_err(|_| bad(PRIORITY, format!("`{t}` is not an integer")))
        })
        .transpose()?
        .unwrap_or(0);
    Ok(Row::Job(Box::new(JobSpec {
        name: name.into(),
        tenant: tenant.into(),
        queue: get(QUEUE).map(str::to_string),
        priority,
        qos: get(QOS).map(str::to_string),
        submit: SimTime(submit as u64),
        tasks: min,
        shape: TaskShape::whole_gpus(1),
        gpu_models: Vec::new(),
        cells: Vec::new(),
        runtime: SimDuration::ZERO,
        time_limit: None,
        recorded_start: None,
        recorded: RecordedKind::Normal,
        topology: None,
        split: false,
        elastic: Some(Box::new(super::ElasticSpec::Sized(super::SizedSpec {
            min,
            max,
            work_gpu_ms,
            throughput,
        }))),
    })))
}

enum Inner {
    Csv {
        rdr: CsvReader,
        cols: Columns,
        rec: csv::StringRecord,
    },
    Jsonl {
        input: BufReader<Box<dyn Read + Send>>,
        line: u64,
        buf: String,
    },
}

/// A streaming reader of a native trace (CSV or JSON Lines), yielding jobs in file order.
///
/// After the first error the stream ends.
pub struct NativeStream {
    path: PathBuf,
    inner: Inner,
    check_order: bool,
    last: Option<(SimTime, u64)>,
    skipped: Skipped,
    done: bool,
}

/// Opens a native trace, choosing CSV or JSON Lines by the file name (see
/// [`NativeFormat::from_path`]), and streams it row by row.
///
/// # Errors
/// [`TraceError::Io`] when the file cannot be opened or its name has no known extension;
/// [`TraceError::MissingColumn`] / [`TraceError::BadField`] for a CSV header lacking `id`,
/// `submit_s` or `tenant`, or naming an unknown or duplicated column. Row errors (including
/// submit times going backwards) come from the iterator.
pub fn open(path: &Path) -> Result<NativeStream, TraceError> {
    let format = NativeFormat::from_path(path).ok_or_else(|| TraceError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(
            io::ErrorKind::InvalidInput,
            "a native trace must be named *.csv, *.jsonl or *.ndjson (optionally + .gz)",
        ),
    })?;
    open_with_format(path, format)
}

/// Like [`open`], with the format given instead of taken from the file name (`.gz` is still
/// recognized by the name).
///
/// # Errors
/// As [`open`].
pub fn open_with_format(path: &Path, format: NativeFormat) -> Result<NativeStream, TraceError> {
    let inner = match format {
        NativeFormat::Csv => {
            let mut rdr = csv_reader(path)?;
            let cols = map_columns(path, &mut rdr, &READ_FIELDS, &REQUIRED, Some("res_"))?;
            Inner::Csv {
                rdr,
                cols,
                rec: csv::StringRecord::new(),
            }
        }
        NativeFormat::Jsonl => Inner::Jsonl {
            input: BufReader::new(open_lines(path)?),
            line: 0,
            buf: String::new(),
        },
    };
    Ok(NativeStream {
        path: path.to_path_buf(),
        inner,
        check_order: true,
        last: None,
        skipped: Skipped::new(),
        done: false,
    })
}

/// Reads a whole native trace (any row order) and stably sorts it by (submit, row order).
///
/// # Errors
/// As [`open`], plus the first row error in the file.
pub fn read_all_sorted(path: &Path) -> Result<VecStream, TraceError> {
    let mut s = open(path)?;
    s.check_order = false;
    let jobs = s.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok(VecStream::new(jobs, s.skipped))
}

fn json_field(
    path: &Path,
    line: u64,
    key: &str,
    v: &serde_json::Value,
) -> Result<Option<String>, TraceError> {
    use serde_json::Value;
    let k = READ_FIELDS.iter().position(|f| *f == key);
    let text_field = matches!(k, Some(ID | TENANT | QUEUE | QOS | THROUGHPUT));
    let list_field = matches!(k, Some(GPU_MODELS | CELLS));
    let wrong =
        |what: &str| TraceError::field(path, line, key, format!("expected {what}, found {v}"));
    Ok(match v {
        Value::Null => None,
        Value::String(s) if text_field || list_field => Some(s.trim().to_string()),
        Value::Number(n) if !text_field && !list_field => Some(n.to_string()),
        Value::Array(items) if list_field => {
            let mut parts = Vec::with_capacity(items.len());
            for it in items {
                match it {
                    Value::String(s) if !s.contains('|') => parts.push(s.trim().to_string()),
                    _ => return Err(wrong("an array of names without `|`")),
                }
            }
            Some(parts.join("|"))
        }
        _ if text_field => return Err(wrong("a string")),
        _ if list_field => return Err(wrong("an array of strings")),
        _ => return Err(wrong("a number")),
    }
    .filter(|s| !s.is_empty()))
}

/// A JSON object whose keys are all distinct (RFC 8259 leaves repeated names to the
/// parser; a trace row naming a field twice is refused, as a CSV header naming a column
/// twice is). Anything else deserializes as a plain [`serde_json::Value`].
struct UniqueKeys(serde_json::Value);

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = UniqueKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<UniqueKeys, A::Error> {
                let mut map = serde_json::Map::new();
                while let Some(k) = a.next_key::<String>()? {
                    let v: serde_json::Value = a.next_value()?;
                    if map.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!(
                            "field `{k}` appears twice"
                        )));
                    }
                    map.insert(k, v);
                }
                Ok(UniqueKeys(serde_json::Value::Object(map)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<UniqueKeys, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(UniqueKeys(serde_json::Value::Array(Vec::new())))
            }
            fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys(serde_json::Value::Null))
            }
            fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys(serde_json::Value::Null))
            }
            fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys(serde_json::Value::Null))
            }
            fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys(serde_json::Value::Null))
            }
            fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys(serde_json::Value::Null))
            }
            fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys(serde_json::Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}

fn json_raw(path: &Path, line: u64, text: &str) -> Result<Raw, TraceError> {
    let value: serde_json::Value = serde_json::from_str::<UniqueKeys>(text)
        .map(|u| u.0)
        .map_err(|e| {
            let full = e.to_string();
            let what = full
                .rsplit_once(" at line ")
                .map_or(full.as_str(), |(w, _)| w);
            TraceError::BadRow {
                path: path.to_path_buf(),
                line,
                message: format!("bad JSON at column {}: {what}", e.column()),
            }
        })?;
    let serde_json::Value::Object(map) = value else {
        return Err(TraceError::BadRow {
            path: path.to_path_buf(),
            line,
            message: "expected a JSON object".to_string(),
        });
    };
    let mut raw = Raw::default();
    for (key, v) in &map {
        if key == "extra" {
            match v {
                serde_json::Value::Null => {}
                serde_json::Value::Object(extra) => {
                    for (name, amount) in extra {
                        let label = format!("extra.{name}");
                        match amount {
                            serde_json::Value::Number(n) => raw.extra.push((label, n.to_string())),
                            _ => {
                                return Err(TraceError::field(
                                    path,
                                    line,
                                    &label,
                                    format!("expected a number, found {amount}"),
                                ))
                            }
                        }
                    }
                }
                _ => {
                    return Err(TraceError::field(
                        path,
                        line,
                        "extra",
                        format!("expected an object of resource amounts, found {v}"),
                    ))
                }
            }
        } else if let Some(k) = READ_FIELDS.iter().position(|f| f == key) {
            raw.vals[k] = json_field(path, line, key, v)?;
        } else {
            return Err(TraceError::field(
                path,
                line,
                key,
                format!(
                    "unknown key; expected keys: {}, extra",
                    READ_FIELDS.join(", ")
                ),
            ));
        }
    }
    Ok(raw)
}

impl NativeStream {
    /// The next raw row and its line, `None` at the end.
    fn next_raw(&mut self) -> Option<Result<(u64, Raw), TraceError>> {
        let path = &self.path;
        match &mut self.inner {
            Inner::Csv { rdr, cols, rec } => {
                let line = match next_record(path, rdr, rec)? {
                    Ok(l) => l,
                    Err(e) => return Some(Err(e)),
                };
                let mut raw = Raw::default();
                for (k, v) in raw.vals.iter_mut().enumerate() {
                    *v = cols.get(rec, k).map(str::to_string);
                }
                for (i, name) in &cols.extra {
                    if let Some(v) = rec.get(*i).filter(|s| !s.is_empty()) {
                        raw.extra.push((name.clone(), v.to_string()));
                    }
                }
                Some(Ok((line, raw)))
            }
            Inner::Jsonl { input, line, buf } => loop {
                buf.clear();
                *line += 1;
                match input.read_line(buf) {
                    Ok(0) => return None,
                    Ok(_) => {}
                    Err(e) => {
                        // A line over the cap names its own line; anything else this one.
                        return Some(Err(match super::line_cap::io_error(path, e) {
                            TraceError::Io { source, .. } => TraceError::BadRow {
                                path: path.clone(),
                                line: *line,
                                message: format!("cannot read line: {source}"),
                            },
                            too_long => too_long,
                        }));
                    }
                }
                let text = buf.trim();
                if text.is_empty() {
                    continue;
                }
                return Some(json_raw(path, *line, text).map(|r| (*line, r)));
            },
        }
    }

    fn next_job(&mut self) -> Option<Result<JobSpec, TraceError>> {
        loop {
            let (line, raw) = match self.next_raw()? {
                Ok(x) => x,
                Err(e) => return Some(Err(e)),
            };
            let job = match build_row(&self.path, line, &raw) {
                Ok(Row::Job(j)) => *j,
                Ok(Row::Skipped(reason)) => {
                    *self.skipped.entry(reason.to_string()).or_insert(0) += 1;
                    continue;
                }
                Err(e) => return Some(Err(e)),
            };
            if self.check_order {
                if let Some((prev, prev_line)) = self.last {
                    if job.submit < prev {
                        return Some(Err(TraceError::field(
                            &self.path,
                            line,
                            FIELDS[SUBMIT_S],
                            format!(
                                "submit time {} is earlier than {} on line {prev_line}: the file \
                                 is not sorted by submit time; set `sort = true` in the scenario's `[workload.trace]`",
                                job.submit, prev
                            ),
                        )));
                    }
                }
                self.last = Some((job.submit, line));
            }
            return Some(Ok(job));
        }
    }
}

impl Iterator for NativeStream {
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

impl JobStream for NativeStream {
    fn skipped(&self) -> Skipped {
        self.skipped.clone()
    }
}

// ---------------------------------------------------------------------------------------------
// Writing.
// ---------------------------------------------------------------------------------------------

/// A field value to write.
enum Out {
    Text(String),
    Int(i64),
    Secs(i64),
    List(Vec<String>),
}

/// The fields of one job, in [`FIELDS`] order, absent ones omitted.
///
/// Encoding of recorded times, chosen so that reading gives the job back:
/// * no recorded start: `runtime_s`;
/// * [`RecordedKind::Normal`] with a recorded start `st` ≥ submit and `st + runtime > 0`:
///   `start_s = st`, `end_s = st + runtime` (no `runtime_s`); otherwise the recorded start is
///   dropped and `runtime_s` written;
/// * [`RecordedKind::NeverRan`]: `start_s = end_s = 0` when submit > 0, else `−0.001`
///   (start before submit); the runtime is not written (a never-ran job has runtime 0);
/// * [`RecordedKind::PreExisting`] with runtime > 0: `submit_s = start_s = −0.001`,
///   `end_s = runtime`.
fn encode(job: &JobSpec) -> Vec<(usize, Out)> {
    let mut out = vec![
        (ID, Out::Text(job.name.to_string())),
        (SUBMIT_S, Out::Secs(job.submit.0 as i64)),
        (TENANT, Out::Text(job.tenant.to_string())),
    ];
    if let Some(q) = &job.queue {
        out.push((QUEUE, Out::Text(q.clone())));
    }
    out.push((PRIORITY, Out::Int(job.priority.into())));
    out.push((TASKS, Out::Int(job.tasks.into())));
    out.push((NUM_GPU, Out::Int(job.shape.num_gpu.into())));
    out.push((GPU_MILLI, Out::Int(job.shape.gpu_milli.into())));
    out.push((CPU_MILLI, Out::Int(job.shape.cpu_milli as i64)));
    out.push((MEM_MIB, Out::Int(job.shape.mem_mib as i64)));
    out.push((SPLIT, Out::Int(i64::from(job.split))));
    let submit = job.submit.0 as i64;
    let runtime = job.runtime.0 as i64;
    let times: Option<(i64, i64)> = match job.recorded {
        RecordedKind::Normal => job
            .recorded_start
            .map(|s| s.0 as i64)
            .filter(|&st| st >= submit && st + runtime > 0)
            .map(|st| (st, st + runtime)),
        RecordedKind::NeverRan => Some(if submit > 0 { (0, 0) } else { (-1, -1) }),
        RecordedKind::PreExisting if runtime > 0 => {
            out[1] = (SUBMIT_S, Out::Secs(-1));
            Some((-1, runtime))
        }
        RecordedKind::PreExisting => None,
    };
    if times.is_none() {
        out.push((RUNTIME_S, Out::Secs(runtime)));
    }
    if let Some(t) = job.time_limit {
        out.push((TIME_LIMIT_S, Out::Secs(t.0 as i64)));
    }
    if !job.gpu_models.is_empty() {
        out.push((GPU_MODELS, Out::List(job.gpu_models.clone())));
    }
    if !job.cells.is_empty() {
        out.push((CELLS, Out::List(job.cells.clone())));
    }
    if let Some((st, en)) = times {
        out.push((START_S, Out::Secs(st)));
        out.push((END_S, Out::Secs(en)));
    }
    if let Some(q) = &job.qos {
        out.push((QOS, Out::Text(q.clone())));
    }
    out
}

/// A streaming writer of native CSV or JSON Lines: one job at a time, so a converted trace
/// never has to be held in memory. [`write_csv`] and [`write_jsonl`] are loops over it.
pub struct NativeWriter<W: Write> {
    format: NativeFormat,
    csv: Option<csv::Writer<W>>,
    raw: Option<W>,
}

impl<W: Write> NativeWriter<W> {
    /// A writer of `format`; for CSV the header row is written now.
    ///
    /// # Errors
    /// Any error of the underlying writer.
    pub fn new(w: W, format: NativeFormat) -> io::Result<NativeWriter<W>> {
        Ok(match format {
            NativeFormat::Csv => {
                let mut wr = csv::WriterBuilder::new().from_writer(w);
                wr.write_record(FIELDS).map_err(io::Error::other)?;
                NativeWriter {
                    format,
                    csv: Some(wr),
                    raw: None,
                }
            }
            NativeFormat::Jsonl => NativeWriter {
                format,
                csv: None,
                raw: Some(w),
            },
        })
    }

    /// Writes one job (see [`write_csv`] for the encoding).
    ///
    /// # Errors
    /// Any error of the underlying writer; an elastic job ([`JobSpec::elastic`]), which
    /// the format's written columns cannot hold.
    pub fn write(&mut self, job: &JobSpec) -> io::Result<()> {
        if job.elastic.is_some() {
            return Err(io::Error::other(format!(
                "job `{}` is an elastic job: the native writer writes rigid jobs only (an elastic job's size and length are decided by `[elastic]` while it runs)",
                job.name
            )));
        }
        match self.format {
            NativeFormat::Csv => {
                let mut row: Vec<String> = vec![String::new(); FIELDS.len()];
                for (k, v) in encode(job) {
                    row[k] = match v {
                        Out::Text(s) => s,
                        Out::Int(i) => i.to_string(),
                        Out::Secs(ms) => format_ms_as_seconds(ms),
                        Out::List(l) => l.join("|"),
                    };
                }
                let wr = self.csv.as_mut().expect("csv writer");
                wr.write_record(&row).map_err(io::Error::other)
            }
            NativeFormat::Jsonl => {
                let mut line = String::from("{");
                for (i, (k, v)) in encode(job).into_iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    line.push_str(&serde_json::to_string(FIELDS[k]).map_err(io::Error::other)?);
                    line.push(':');
                    match v {
                        Out::Text(s) => {
                            line.push_str(&serde_json::to_string(&s).map_err(io::Error::other)?)
                        }
                        Out::Int(n) => line.push_str(&n.to_string()),
                        Out::Secs(ms) => line.push_str(&format_ms_as_seconds(ms)),
                        Out::List(l) => {
                            line.push_str(&serde_json::to_string(&l).map_err(io::Error::other)?)
                        }
                    }
                }
                line.push_str("}\n");
                self.raw
                    .as_mut()
                    .expect("raw writer")
                    .write_all(line.as_bytes())
            }
        }
    }

    /// Flushes and returns the underlying writer.
    ///
    /// # Errors
    /// Any error of the underlying writer.
    pub fn finish(self) -> io::Result<W> {
        match (self.csv, self.raw) {
            (Some(wr), _) => wr.into_inner().map_err(|e| io::Error::other(e.to_string())),
            (None, Some(mut w)) => {
                w.flush()?;
                Ok(w)
            }
            (None, None) => unreachable!("one writer is always set"),
        }
    }
}

/// Writes jobs as native CSV: a header with every column of [`FIELDS`], one row per job.
/// Times are decimal seconds with up to three fractional digits (exact milliseconds).
/// Reading the output with [`open`] gives the same jobs back when each job's `gpu_models`
/// and `cells` are sorted and de-duplicated and its recorded times are consistent (see the
/// module docs' B18 rules); a [`RecordedKind::NeverRan`] job is written with a zero
/// runtime.
///
/// # Errors
/// Any error of the underlying writer.
pub fn write_csv<'a>(jobs: impl Iterator<Item = &'a JobSpec>, w: impl Write) -> io::Result<()> {
    let mut wr = NativeWriter::new(w, NativeFormat::Csv)?;
    for job in jobs {
        wr.write(job)?;
    }
    wr.finish().map(drop)
}

/// Writes jobs as native JSON Lines: one object per job with the fields that are set (same
/// encoding and round-trip guarantee as [`write_csv`]); seconds are written as exact decimal
/// numbers, lists as arrays of strings.
///
/// # Errors
/// Any error of the underlying writer.
pub fn write_jsonl<'a>(jobs: impl Iterator<Item = &'a JobSpec>, w: impl Write) -> io::Result<()> {
    let mut wr = NativeWriter::new(w, NativeFormat::Jsonl)?;
    for job in jobs {
        wr.write(job)?;
    }
    wr.finish().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        fs::write(&p, text).unwrap();
        p
    }

    fn all(path: &Path) -> Result<Vec<JobSpec>, TraceError> {
        open(path)?.collect()
    }

    /// The error of reading `text` as `name`, with its message checked for file name,
    /// line and (when given) field.
    fn err_of(name: &str, text: &str, line: u64, field: Option<&str>) -> String {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, name, text);
        let e = all(&p).expect_err("must fail").to_string();
        errln!("{e}");
        assert!(e.contains(name), "{e}");
        assert!(e.contains(&format!("line {line}:")), "{e}");
        if let Some(f) = field {
            assert!(e.contains(&format!("`{f}`")), "{e}");
        }
        e
    }

    #[test]
    fn seconds_convert_exactly_and_round_half_away_from_zero() {
        let ok = |t: &str| parse_seconds_ms(t).unwrap();
        assert_eq!(ok("12.3456"), 12_346);
        assert_eq!(ok("12.3454"), 12_345);
        assert_eq!(ok("0.0005"), 1);
        assert_eq!(ok("0.00049999"), 0);
        assert_eq!(ok("-0.0005"), -1);
        assert_eq!(ok("-0"), 0);
        assert_eq!(ok("5."), 5000);
        assert_eq!(ok(".5"), 500);
        assert_eq!(ok("+2"), 2000);
        assert_eq!(ok("1.5e3"), 1_500_000);
        assert_eq!(ok("1E-3"), 1);
        assert_eq!(ok("12902960"), 12_902_960_000);
        assert_eq!(ok("0.1"), 100);
        for bad in [
            "", "-", ".", "nan", "inf", "1.2.3", "1e", "1e+", "12s", " 1", "1e99999", "1e30",
        ] {
            assert!(parse_seconds_ms(bad).is_err(), "{bad}");
        }
        for ms in [
            0i64,
            1,
            -1,
            999,
            1000,
            12_345,
            60_000,
            -40_000,
            12_902_960_001,
        ] {
            assert_eq!(parse_seconds_ms(&format_ms_as_seconds(ms)).unwrap(), ms);
        }
        assert_eq!(format_ms_as_seconds(12_340), "12.34");
        assert_eq!(format_ms_as_seconds(-1), "-0.001");
    }

    const B18: &str = "id,submit_s,tenant,num_gpu,start_s,end_s
T1,10,t,1,20,120
T2,30,t,2,0,0
T3,-800,t,1,-792,-788
T4,-50,t,4,-40,200
T5,50,t,1,60,60
";

    #[test]
    fn b18_trace_times() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, "b18.csv", B18);
        // In table order T4 (submit clipped to 0) comes after T2 (30 s): streaming refuses.
        let e = all(&p).unwrap_err().to_string();
        assert!(e.contains("b18.csv") && e.contains("line 5:") && e.contains("`submit_s`"));
        assert!(e.contains("sort = true"), "{e}");

        let mut s = read_all_sorted(&p).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["T4", "T1", "T2", "T5"]);
        let mut skipped = Skipped::new();
        skipped.insert(ENDED_BEFORE_WINDOW.to_string(), 1);
        assert_eq!(s.skipped(), skipped);

        let (t4, t1, t2, t5) = (&jobs[0], &jobs[1], &jobs[2], &jobs[3]);
        assert_eq!(t1.recorded, RecordedKind::Normal);
        assert_eq!(t1.submit, SimTime::from_secs(10));
        assert_eq!(t1.recorded_start, Some(SimTime::from_secs(20)));
        assert_eq!(t1.runtime, SimDuration::from_secs(100));
        assert_eq!(t2.recorded, RecordedKind::NeverRan);
        assert_eq!(t2.submit, SimTime::from_secs(30));
        assert_eq!(t2.runtime, SimDuration::ZERO);
        assert_eq!(t2.recorded_start, None);
        assert_eq!(t4.recorded, RecordedKind::PreExisting);
        assert_eq!(t4.submit, SimTime::ZERO);
        assert_eq!(t4.recorded_start, Some(SimTime::ZERO));
        assert_eq!(t4.runtime, SimDuration::from_secs(200));
        assert_eq!(t4.shape, TaskShape::whole_gpus(4));
        assert_eq!(t5.recorded, RecordedKind::Normal);
        assert_eq!(t5.submit, SimTime::from_secs(50));
        assert_eq!(t5.recorded_start, Some(SimTime::from_secs(60)));
        assert_eq!(t5.runtime, SimDuration::ZERO);

        // The same rows sorted by clipped submit stream fine.
        let sorted = "id,submit_s,tenant,num_gpu,start_s,end_s
T3,-800,t,1,-792,-788
T4,-50,t,4,-40,200
T1,10,t,1,20,120
T2,30,t,2,0,0
T5,50,t,1,60,60
";
        let p = write(&dir, "b18-sorted.csv", sorted);
        let mut st = open(&p).unwrap();
        let streamed: Vec<JobSpec> = st.by_ref().map(Result::unwrap).collect();
        assert_eq!(streamed, jobs);
        assert_eq!(st.skipped(), skipped);
    }

    #[test]
    fn extreme_recorded_times_do_not_overflow() {
        // end_s − start_s used to be computed unchecked (found by review): now an error.
        err_of(
            "x.csv",
            "id,submit_s,tenant,runtime_s,start_s,end_s\nj1,-9e15,t,1,-9e15,9e15\n",
            2,
            Some("runtime_s"),
        );
    }

    #[test]
    fn defaults_and_sets() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "d.csv",
            "id,submit_s,tenant,runtime_s,num_gpu,gpu_models,cells,res_rdma,time_limit_s
a,0,t,1.5,2,V100M32|V100M16|V100M32,c2|c1,0,
b,0.0004,t,0,,,,0.0,0
",
        );
        let jobs = all(&p).unwrap();
        assert_eq!(jobs[0].shape, TaskShape::whole_gpus(2));
        assert_eq!(jobs[0].tasks, 1);
        assert_eq!(jobs[0].runtime, SimDuration(1500));
        assert_eq!(jobs[0].gpu_models, ["V100M16", "V100M32"]);
        assert_eq!(jobs[0].cells, ["c1", "c2"]);
        assert_eq!(jobs[0].time_limit, None);
        assert_eq!(jobs[1].shape, TaskShape::default());
        assert_eq!(jobs[1].submit, SimTime(0));
        assert_eq!(jobs[1].time_limit, Some(SimDuration::ZERO));
    }

    #[test]
    fn bad_csv_inputs_name_file_line_and_field() {
        let h = "id,submit_s,tenant,runtime_s,tasks\n";
        err_of("a.csv", &format!("{h}j1,abc,t,10,1\n"), 2, Some("submit_s"));
        err_of(
            "b.csv",
            &format!("{h}j1,1,t,10,1\nj2,2,t,10,-2\n"),
            3,
            Some("tasks"),
        );
        err_of("c.csv", &format!("{h}j1,1,t,10,0\n"), 2, Some("tasks"));
        err_of(
            "d.csv",
            "id,submit_s,tenant,runtime_s,colour\nj1,0,t,1,red\n",
            1,
            Some("colour"),
        );
        err_of(
            "e.csv",
            "id,submit_s,tenant,runtime_s,res_rdma\nj1,0,t,1,0\nj2,0,t,1,2\n",
            3,
            Some("res_rdma"),
        );
        err_of("f.csv", &format!("{h}j1,-5,t,10,1\n"), 2, Some("submit_s"));
        err_of(
            "g.csv",
            &format!("{h}j1,5,t,10,1\nj2,4,t,10,1\n"),
            3,
            Some("submit_s"),
        );
        err_of("h.csv", &format!("{h}j1,5,t,10\n"), 2, None);
        err_of("i.csv", &format!("{h}j1,5,t,,1\n"), 2, Some("runtime_s"));
        err_of("j.csv", &format!("{h}j1,5,t,-1,1\n"), 2, Some("runtime_s"));
        err_of("k.csv", &format!("{h}j1,5,,1,1\n"), 2, Some("tenant"));
        err_of(
            "l.csv",
            "id,submit_s,tenant,runtime_s,gpu_models\nj1,0,t,1,H100|X9\n",
            2,
            Some("gpu_models"),
        );
        err_of(
            "m.csv",
            "id,submit_s,tenant,start_s\nj1,0,t,1\n",
            2,
            Some("end_s"),
        );
        err_of(
            "n.csv",
            "id,submit_s,tenant,start_s,end_s\nj1,0,t,5,4\n",
            2,
            Some("end_s"),
        );
        err_of(
            "o.csv",
            "id,submit_s,tenant,runtime_s,start_s,end_s\nj1,0,t,3,5,9\n",
            2,
            Some("runtime_s"),
        );
        err_of(
            "p.csv",
            "id,submit_s,tenant,runtime_s,num_gpu,gpu_milli\nj1,0,t,3,0,500\n",
            2,
            Some("gpu_milli"),
        );
        err_of(
            "q.csv",
            "id,submit_s,tenant,runtime_s,num_gpu,gpu_milli\nj1,0,t,3,1,1001\n",
            2,
            Some("gpu_milli"),
        );
        err_of(
            "r.csv",
            "id,submit_s,tenant,runtime_s,priority\nj1,0,t,3,high\n",
            2,
            Some("priority"),
        );
        err_of(
            "s.csv",
            "id,submit_s,tenant,runtime_s,cells\nj1,0,t,3,a||b\n",
            2,
            Some("cells"),
        );
        let e = err_of("t.csv", "id,tenant,runtime_s\nj1,t,3\n", 1, None);
        assert!(e.contains("submit_s"), "{e}");
        err_of(
            "u.csv",
            "id,submit_s,tenant,runtime_s,id\nj1,0,t,3,j1\n",
            1,
            Some("id"),
        );
    }

    #[test]
    fn bad_jsonl_inputs_name_file_line_and_field() {
        let ok = r#"{"id":"a","submit_s":0,"tenant":"t","runtime_s":1}"#;
        let e = err_of("a.jsonl", &format!("{ok}\n{{\"id\": \"b\", \n"), 2, None);
        assert!(e.contains("bad JSON"), "{e}");
        // A field named twice is refused, as a CSV column named twice is.
        let e = err_of(
            "dup.jsonl",
            &format!(
                "{ok}\n{}\n",
                r#"{"id":"b","submit_s":1,"tenant":"t","runtime_s":1,"submit_s":5}"#
            ),
            2,
            None,
        );
        assert!(e.contains("field `submit_s` appears twice"), "{e}");
        let e = err_of("arr.jsonl", "[1, 2]\n", 1, None);
        assert!(e.contains("expected a JSON object"), "{e}");
        err_of(
            "b.jsonl",
            &format!(
                "{ok}\n\n{}\n",
                r#"{"id":"b","submit_s":1,"tenant":"t","runtime_s":1,"colour":1}"#
            ),
            3,
            Some("colour"),
        );
        err_of(
            "c.jsonl",
            r#"{"id":"b","submit_s":1,"tenant":"t","runtime_s":1,"extra":{"rdma":0.5}}"#,
            1,
            Some("extra.rdma"),
        );
        err_of(
            "d.jsonl",
            r#"{"id":"b","submit_s":"1","tenant":"t","runtime_s":1}"#,
            1,
            Some("submit_s"),
        );
        err_of(
            "e.jsonl",
            r#"{"id":"b","submit_s":1,"tenant":"t","runtime_s":1,"tasks":-1}"#,
            1,
            Some("tasks"),
        );
        err_of(
            "f.jsonl",
            r#"{"id":"b","submit_s":1,"runtime_s":1}"#,
            1,
            Some("tenant"),
        );
        err_of("g.jsonl", "[1,2]\n", 1, None);
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "z.jsonl",
            r#"{"id":"b","submit_s":1,"tenant":"t","runtime_s":1,"extra":{"rdma":0},"gpu_models":["T4"],"cells":"x|y"}"#,
        );
        let jobs = all(&p).unwrap();
        assert_eq!(jobs[0].gpu_models, ["T4"]);
        assert_eq!(jobs[0].cells, ["x", "y"]);
    }

    fn sample_jobs() -> Vec<JobSpec> {
        let mut a = JobSpec::simple("plain", "t1", 0, 1, 10);
        a.runtime = SimDuration(1234);
        let mut b = JobSpec::simple("gang, \"quoted\"", "t2", 0, 8, 3600);
        b.tasks = 4;
        b.queue = Some("q".into());
        b.priority = -3;
        b.qos = Some("LS".into());
        b.gpu_models = vec!["H100".into(), "H200".into()];
        b.cells = vec!["east".into(), "west".into()];
        b.time_limit = Some(SimDuration(7_200_001));
        b.shape.cpu_milli = 96_000;
        b.shape.mem_mib = 786_432;
        let mut c = JobSpec::simple("frac", "t1", 5, 1, 60);
        c.shape.gpu_milli = 250;
        c.recorded_start = Some(SimTime(5_500));
        let mut d = JobSpec::simple("never", "t1", 7, 2, 0);
        d.recorded = RecordedKind::NeverRan;
        let mut e = JobSpec::simple("never0", "t1", 0, 2, 0);
        e.recorded = RecordedKind::NeverRan;
        e.submit = SimTime(0);
        let mut f = JobSpec::simple("pre", "t3", 0, 4, 200);
        f.recorded = RecordedKind::PreExisting;
        f.recorded_start = Some(SimTime::ZERO);
        let g = JobSpec::simple("cpu", "t3", 9, 0, 1);
        let mut jobs = vec![a, b, e, f, c, d, g];
        jobs.sort_by_key(|j| j.submit);
        jobs
    }

    #[test]
    fn csv_and_jsonl_round_trip() {
        let jobs = sample_jobs();
        let dir = tempfile::tempdir().unwrap();
        let csv_path = dir.path().join("rt.csv");
        write_csv(jobs.iter(), fs::File::create(&csv_path).unwrap()).unwrap();
        assert_eq!(all(&csv_path).unwrap(), jobs);
        let jsonl_path = dir.path().join("rt.jsonl");
        write_jsonl(jobs.iter(), fs::File::create(&jsonl_path).unwrap()).unwrap();
        assert_eq!(all(&jsonl_path).unwrap(), jobs);

        // gzip is recognized by the name.
        let gz_path = dir.path().join("rt.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        write_jsonl(jobs.iter(), &mut enc).unwrap();
        fs::write(&gz_path, enc.finish().unwrap()).unwrap();
        assert_eq!(all(&gz_path).unwrap(), jobs);
    }

    #[test]
    fn elastic_rows_read_and_are_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "e.csv",
            "id,submit_s,tenant,priority,min_gpus,max_gpus,work_gpu_s,throughput\nA,1.5,t,3,1,4,10.25,amdahl:0.5\n",
        );
        let jobs = all(&p).unwrap();
        assert_eq!((jobs[0].submit.0, jobs[0].priority), (1_500, 3));
        assert_eq!(
            (jobs[0].tasks, jobs[0].shape),
            (1, TaskShape::whole_gpus(1))
        );
        let Some(super::super::ElasticSpec::Sized(e)) = jobs[0].elastic.as_deref() else {
            panic!("a sized elastic spec");
        };
        assert_eq!((e.min, e.max, e.work_gpu_ms), (1, 4, 10_250));
        let j = write(
            &dir,
            "e.jsonl",
            r#"{"id":"A","submit_s":0,"tenant":"t","min_gpus":2,"max_gpus":2,"work_gpu_s":5,"throughput":"linear"}"#,
        );
        assert_eq!(all(&j).unwrap()[0].tasks, 2);
        let e = write_csv(jobs.iter(), Vec::new()).unwrap_err().to_string();
        assert!(e.contains("`A` is an elastic job"), "{e}");
        for work in ["0", "0.0004"] {
            let z = write(
                &dir,
                "z.csv",
                &format!("id,submit_s,tenant,min_gpus,max_gpus,work_gpu_s,throughput\nZ,0,t,1,2,{work},linear\n"),
            );
            let e = all(&z).unwrap_err().to_string();
            assert!(
                e.contains("work_gpu_s") && e.contains("at least 0.001"),
                "{e}"
            );
        }
    }

    #[test]
    fn unknown_extension_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, "trace.txt", "");
        let e = open(&p).err().unwrap().to_string();
        assert!(e.contains("trace.txt") && e.contains(".csv"), "{e}");
        assert_eq!(
            NativeFormat::from_path(Path::new("x/T.CSV.gz")),
            Some(NativeFormat::Csv)
        );
    }

    #[test]
    fn shipped_samples_parse_to_identical_jobs() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
        let csv = all(&dir.join("sample-small.csv")).unwrap();
        let jsonl = all(&dir.join("sample-small.jsonl")).unwrap();
        assert_eq!(csv, jsonl);
        assert_eq!(csv.len(), 20);
        assert!(csv.iter().any(|j| j.tasks > 1), "gangs");
        assert!(
            csv.iter().any(|j| j.shape.is_fractional()),
            "fractional GPUs"
        );
        assert!(csv.iter().any(|j| j.shape.num_gpu == 0), "CPU-only");
        assert!(
            csv.iter().any(|j| j.gpu_models.len() > 1),
            "model alternatives"
        );
        assert!(csv.iter().any(|j| j.cells.len() > 1), "cell alternatives");
        assert_eq!(csv[7].submit, SimTime(150_250));
        assert_eq!(csv[7].runtime, SimDuration(300_500));
    }
}
