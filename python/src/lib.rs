//! `fleetsim._native`: the engine's library functions for Python. The public API (and its
//! docs) is `fleetsim/__init__.py`, which wraps these functions; tables cross as Arrow C
//! streams (`__arrow_c_stream__`), so pyarrow takes the engine's buffers without a copy.

use std::path::{Path, PathBuf};

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::SchemaRef;
use fleetsim::engine::{EngineError, JobSink};
use fleetsim::fleet::build::BuildError;
use fleetsim::report::tables::{self, JobsTable};
use fleetsim::run::{run_scenario, RunError as RunErr, RunOptions};
use fleetsim::scenario::overrides::{Override, Source};
use fleetsim::scenario::{Mode, ScenarioError as ScenarioErr, TraceDir};
use fleetsim::workload::TraceError as TraceErr;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

create_exception!(
    fleetsim,
    FleetsimError,
    PyException,
    "Any error of fleetsim."
);
create_exception!(
    fleetsim,
    ScenarioError,
    FleetsimError,
    "The scenario (or an override, or a study's arguments) is invalid."
);
create_exception!(
    fleetsim,
    TraceError,
    FleetsimError,
    "An input file (trace, machine list, timeline) cannot be read or has a bad field."
);
create_exception!(
    fleetsim,
    RunError,
    FleetsimError,
    "A run could not be carried out (outputs over inputs, an I/O error, the engine stopped)."
);

/// A table as an Arrow C stream: `pyarrow.table(obj)` reads it through
/// `__arrow_c_stream__` (the Arrow PyCapsule interface).
#[pyclass(module = "fleetsim._native", frozen)]
struct ArrowStream {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

#[pymethods]
impl ArrowStream {
    /// A capsule named `arrow_array_stream` holding a fresh stream over the batches (the
    /// buffers are shared, not copied). `requested_schema` is ignored: the schema is fixed.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(
            self.batches.clone().into_iter().map(Ok),
            self.schema.clone(),
        );
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

impl ArrowStream {
    fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> ArrowStream {
        ArrowStream { schema, batches }
    }
}

/// Where a bad input is: file, 1-based line, dotted field (each when known).
#[derive(Default)]
struct Place {
    file: Option<String>,
    line: Option<u64>,
    field: Option<String>,
}

/// The line of `field` (`metrics.outputs[1]`, `workload.trace`) in TOML `text`: the line of
/// its last key under the table named by the rest (indexes dropped). Best effort: `None`
/// when the key is not written literally (an override, an inline table's inner key).
fn line_of_field(text: &str, field: &str) -> Option<u64> {
    let strip = |s: &str| s.split('[').next().unwrap_or("").trim().to_string();
    let parts: Vec<String> = field.split('.').map(strip).collect();
    let (key, table) = parts.split_last()?;
    let table = table.join(".");
    let mut current = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with('[') {
            current = l.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            continue;
        }
        let Some((k, _)) = l.split_once('=') else {
            continue;
        };
        let k = k.trim().trim_matches('"');
        if current == table && k == key {
            return Some(i as u64 + 1);
        }
        // A dotted key in a parent table: `metrics.outputs = …` at the top.
        let full = if current.is_empty() {
            k.to_string()
        } else {
            format!("{current}.{k}")
        };
        if !table.is_empty() && full == format!("{table}.{key}") {
            return Some(i as u64 + 1);
        }
    }
    None
}

/// The dotted key written on 1-based `line` of `text` (its table's name first).
fn field_at_line(text: &str, line: u64) -> Option<String> {
    let mut current = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with('[') {
            current = l.trim_matches(|c| c == '[' || c == ']').trim().to_string();
        }
        if i as u64 + 1 == line {
            let (k, _) = l.split_once('=')?;
            let k = k.trim().trim_matches('"');
            return Some(if current.is_empty() {
                k.to_string()
            } else {
                format!("{current}.{k}")
            });
        }
    }
    None
}

/// `line N` in a parser's message.
fn line_in_message(m: &str) -> Option<u64> {
    let at = m.find("line ")?;
    let digits: String = m[at + 5..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The file of a scenario error's origin (`s.toml with policy.placement=fgd` → `s.toml`).
fn origin_file(origin: &str) -> String {
    origin.split(" with ").next().unwrap_or(origin).to_string()
}

fn scenario_place(e: &ScenarioErr, text: Option<&str>) -> Place {
    match e {
        ScenarioErr::Io { path, .. } => Place {
            file: Some(path.display().to_string()),
            ..Place::default()
        },
        ScenarioErr::Parse { origin, message } => {
            let line = line_in_message(message);
            // `missing field `fleet``: the field is the one missing, not the key on the line.
            let missing = message.split("missing field `").nth(1).and_then(|r| {
                let name = r.split('`').next()?;
                let table = line
                    .and_then(|l| field_at_line(text?, l))
                    .and_then(|f| f.rsplit_once('.').map(|(t, _)| t.to_string()));
                Some(match table {
                    Some(t) if line != Some(1) => format!("{t}.{name}"),
                    _ => name.to_string(),
                })
            });
            Place {
                file: Some(origin_file(origin)),
                line,
                field: missing.or_else(|| line.and_then(|l| field_at_line(text?, l))),
            }
        }
        ScenarioErr::Invalid { origin, field, .. } => Place {
            file: Some(origin_file(origin)),
            line: text.and_then(|t| line_of_field(t, field)),
            field: Some(field.clone()),
        },
        ScenarioErr::Kueue(_) => Place::default(),
    }
}

fn trace_place(e: &TraceErr) -> Place {
    let file = |p: &Path| Some(p.display().to_string());
    match e {
        TraceErr::Io { path, .. } => Place {
            file: file(path),
            ..Place::default()
        },
        TraceErr::MissingColumn { path, column } => Place {
            file: file(path),
            line: Some(1),
            field: Some(column.clone()),
        },
        TraceErr::BadField {
            path, line, field, ..
        } => Place {
            file: file(path),
            line: Some(*line),
            field: Some(field.clone()),
        },
        TraceErr::BadRow { path, line, .. } => Place {
            file: file(path),
            line: Some(*line),
            field: None,
        },
    }
}

/// A Python exception for `e` (the most specific class found along its chain), carrying
/// `file`, `line` and `field` attributes (`None` when unknown).
fn to_py(py: Python<'_>, e: &(dyn std::error::Error + 'static), text: Option<&str>) -> PyErr {
    let mut kind = 0u8; // 0 run, 1 scenario, 2 trace
    let mut place = Place::default();
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = at {
        if let Some(s) = err.downcast_ref::<ScenarioErr>() {
            kind = 1;
            place = scenario_place(s, text);
            break;
        }
        if let Some(t) = err.downcast_ref::<TraceErr>() {
            kind = 2;
            place = trace_place(t);
            break;
        }
        // `#[error(transparent)]` variants hide the inner error from `source()`: open them.
        let inner_s = err.downcast_ref::<RunErr>().and_then(|r| match r {
            RunErr::Scenario(s) | RunErr::Build(BuildError::Scenario(s)) => Some(s),
            _ => None,
        });
        if let Some(s) = inner_s {
            kind = 1;
            place = scenario_place(s, text);
            break;
        }
        let inner_t = match err.downcast_ref::<RunErr>() {
            Some(RunErr::Trace(t))
            | Some(RunErr::Build(BuildError::Trace(t)))
            | Some(RunErr::Engine(EngineError::Trace(t))) => Some(t),
            _ => err.downcast_ref::<EngineError>().and_then(|e| match e {
                EngineError::Trace(t) => Some(t),
                _ => None,
            }),
        };
        if let Some(t) = inner_t {
            kind = 2;
            place = trace_place(t);
            break;
        }
        if let Some(
            RunErr::OutputIsInput { path, .. }
            | RunErr::OutIsNotADirectory { path }
            | RunErr::InputInsideOutDir { path, .. }
            | RunErr::Io { path, .. },
        ) = err.downcast_ref::<RunErr>()
        {
            place.file = Some(path.display().to_string());
        }
        if err.downcast_ref::<fleetsim::study::BadInput>().is_some() {
            kind = 1;
        }
        at = err.source();
    }
    let message = e.to_string();
    let err = match kind {
        1 => ScenarioError::new_err(message),
        2 => TraceError::new_err(message),
        _ => RunError::new_err(message),
    };
    let v = err.value(py);
    let _ = v.setattr("file", place.file);
    let _ = v.setattr("line", place.line);
    let _ = v.setattr("field", place.field);
    err
}

fn anyhow_to_py(py: Python<'_>, e: &anyhow::Error, text: Option<&str>) -> PyErr {
    to_py(py, e.as_ref(), text)
}

/// Reads the scenario: a file when `is_path`, else TOML text (relative paths against the
/// current directory).
fn source(scenario: &str, is_path: bool) -> Result<Source, ScenarioErr> {
    if is_path {
        Source::read(Some(Path::new(scenario)))
    } else {
        Source::from_text(
            scenario.to_string(),
            "<scenario text>".to_string(),
            PathBuf::from("."),
        )
    }
}

fn parse_overrides(py: Python<'_>, overrides: &[String]) -> PyResult<Vec<Override>> {
    overrides
        .iter()
        .map(|s| {
            Override::parse(s).map_err(|m| {
                let e = ScenarioError::new_err(m);
                let v = e.value(py);
                let _ = v.setattr("file", None::<String>);
                let _ = v.setattr("line", None::<u64>);
                let _ = v.setattr("field", s.split('=').next().map(str::to_string));
                e
            })
        })
        .collect()
}

/// Text of the scenario for locating fields in messages (the file's, or the text given).
fn scenario_text(scenario: &str, is_path: bool) -> Option<String> {
    if is_path {
        std::fs::read_to_string(scenario).ok()
    } else {
        Some(scenario.to_string())
    }
}

/// Runs one scenario; returns (summary JSON, jobs stream, timeseries stream), the streams
/// `None` for an inflation scenario. The GIL is released while it runs.
#[pyfunction]
#[pyo3(signature = (scenario, is_path, overrides, seed=None, trace_dir=None))]
fn run(
    py: Python<'_>,
    scenario: String,
    is_path: bool,
    overrides: Vec<String>,
    seed: Option<u64>,
    trace_dir: Option<PathBuf>,
) -> PyResult<(String, Option<ArrowStream>, Option<ArrowStream>)> {
    let extra = parse_overrides(py, &overrides)?;
    let text = scenario_text(&scenario, is_path);
    let out = py.detach(move || -> Result<_, anyhow::Error> {
        let src = source(&scenario, is_path)?;
        let loaded = src.load(&extra)?;
        let opts = RunOptions {
            seed,
            trace_dir: TraceDir::resolve(trace_dir),
            out_dir: None,
            keep_rows: true,
        };
        if loaded.scenario.mode == Mode::Inflation {
            let s = fleetsim::run::run_inflation(&loaded, &opts)?;
            return Ok((serde_json::to_string(&s)?, None));
        }
        let output = run_scenario(&loaded, &opts, &mut |_, _| {})?;
        let mut jobs = JobsTable::default();
        for row in output.jobs.iter().flatten() {
            jobs.write(row)?;
        }
        let ts = tables::timeseries_batch(&output.timeseries());
        Ok((
            serde_json::to_string(&output.summary)?,
            Some((jobs.into_batches(), ts)),
        ))
    });
    match out {
        Ok((summary, None)) => Ok((summary, None, None)),
        Ok((summary, Some((jobs, ts)))) => Ok((
            summary,
            Some(ArrowStream::new(tables::jobs_schema(), jobs)),
            Some(ArrowStream::new(ts.schema(), vec![ts])),
        )),
        Err(e) => Err(anyhow_to_py(py, &e, text.as_deref())),
    }
}

/// `fleetsim compare`: writes the comparison into `out` and returns `compare.json`'s text.
#[pyfunction]
#[pyo3(signature = (scenario, is_path, policies, seeds, overrides, out, baseline=None, trace_dir=None, threads=None))]
#[allow(clippy::too_many_arguments)]
fn compare(
    py: Python<'_>,
    scenario: String,
    is_path: bool,
    policies: String,
    seeds: u64,
    overrides: Vec<String>,
    out: PathBuf,
    baseline: Option<String>,
    trace_dir: Option<PathBuf>,
    threads: Option<usize>,
) -> PyResult<String> {
    let extra = parse_overrides(py, &overrides)?;
    let text = scenario_text(&scenario, is_path);
    let r = py.detach(move || -> Result<String, anyhow::Error> {
        let src = source(&scenario, is_path)?;
        let base = src.load(&extra)?;
        let variants = fleetsim::compare::parse_variants(&policies, &src, &extra)?;
        let trace_dir = TraceDir::resolve(trace_dir);
        fleetsim::run::check_study_out_dir(&base, &trace_dir, &out)?;
        let opts = fleetsim::compare::CompareOptions {
            out,
            seeds: (0..seeds)
                .map(|i| base.scenario.seed.wrapping_add(i))
                .collect(),
            baseline,
            trace_dir,
            png: false,
            threads,
            resume: false,
        };
        let c = fleetsim::compare::run(&src, &extra, &variants, &opts)?;
        Ok(serde_json::to_string(&c)?)
    });
    r.map_err(|e| anyhow_to_py(py, &e, text.as_deref()))
}

/// `fleetsim sweep`: runs the scenario's `[sweep]` into `out` (`runs.csv`, `report.html`,
/// one folder per run).
///
/// `shard = (I, N)` runs only shard `I/N` (1-based; the CLI's `--shard I/N`, the engine's
/// [`fleetsim::sweep::Shard`]); default: every run. Returns the number of runs in the whole
/// sweep.
#[pyfunction]
#[pyo3(signature = (scenario, is_path, overrides, out, seeds=None, trace_dir=None, threads=None, shard=None))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    scenario: String,
    is_path: bool,
    overrides: Vec<String>,
    out: PathBuf,
    seeds: Option<u64>,
    trace_dir: Option<PathBuf>,
    threads: Option<usize>,
    shard: Option<(u64, u64)>,
) -> PyResult<usize> {
    let extra = parse_overrides(py, &overrides)?;
    let text = scenario_text(&scenario, is_path);
    let r = py.detach(move || -> Result<usize, anyhow::Error> {
        let shard = match shard {
            None => fleetsim::sweep::Shard::ALL,
            // The CLI's parser, for its checks (1 ≤ I ≤ N) and messages.
            Some((i, n)) => fleetsim::sweep::Shard::parse(&format!("{i}/{n}"))?,
        };
        let src = source(&scenario, is_path)?;
        let plan = fleetsim::sweep::plan(&src, &extra, seeds.map(fleetsim::sweep::Seeds::Count))?;
        let trace_dir = TraceDir::resolve(trace_dir);
        fleetsim::run::check_study_out_dir(&src.load(&extra)?, &trace_dir, &out)?;
        let opts = fleetsim::sweep::SweepOptions {
            out,
            shard,
            resume: false,
            trace_dir,
            png: false,
            threads,
        };
        let o = fleetsim::sweep::run(&src, &extra, &plan, &opts)?;
        Ok(o.total)
    });
    r.map_err(|e| anyhow_to_py(py, &e, text.as_deref()))
}

/// The number of runs of the scenario's `[sweep]` (its plan; nothing is run).
#[pyfunction]
#[pyo3(signature = (scenario, is_path, overrides, seeds=None))]
fn sweep_runs(
    py: Python<'_>,
    scenario: String,
    is_path: bool,
    overrides: Vec<String>,
    seeds: Option<u64>,
) -> PyResult<usize> {
    let extra = parse_overrides(py, &overrides)?;
    let text = scenario_text(&scenario, is_path);
    let r = py.detach(move || -> Result<usize, anyhow::Error> {
        let src = source(&scenario, is_path)?;
        let plan = fleetsim::sweep::plan(&src, &extra, seeds.map(fleetsim::sweep::Seeds::Count))?;
        Ok(plan.points.len())
    });
    r.map_err(|e| anyhow_to_py(py, &e, text.as_deref()))
}

/// `fleetsim merge`: joins the shard folders `inputs` into `out` (its `runs.csv` is
/// byte-identical to an unsharded sweep's). Returns the number of runs merged.
#[pyfunction]
fn merge(py: Python<'_>, inputs: Vec<PathBuf>, out: PathBuf) -> PyResult<usize> {
    let r = py.detach(move || fleetsim::sweep::merge::merge(&inputs, &out, false));
    r.map(|o| o.runs).map_err(|e| anyhow_to_py(py, &e, None))
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_runs, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_class::<ArrowStream>()?;
    m.add("FleetsimError", py.get_type::<FleetsimError>())?;
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
