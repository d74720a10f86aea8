//! `fleetsim run` and `fleetsim validate` on an elastic scenario file (top-level
//! `mode = "elastic"`, [`crate::elastic::scenario`]).
//!
//! `run` writes two files to its output directory, each atomically:
//! - `jobs.csv`: one row per job in input order — `name, submit_s, start_s, finish_s, wait_s,
//!   jct_s, cell, start_gpus, final_gpus, resizes, gpu_s` (times and GPU-seconds in seconds
//!   with 3 decimals, exact from the engine's integer milliseconds; `cell` is the 0-based
//!   index into `cells`);
//! - `summary.json`: `"mode": "elastic"` and the fields of [`ElasticSummary`];
//!
//! and then `complete.json`, the marker of a complete output set
//! ([`crate::report::outset`]): removed before the first file is written, written last.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use crate::elastic::{simulate, summarize, ElasticSummary, JobOutcome};
use crate::report::atomic::write_atomic;
use crate::report::outset;
use crate::report::table::count;
use crate::scenario::TraceDir;
use crate::study::BadInput;

/// True when `path` is a TOML file whose top-level `mode` is the string `elastic`. A file that
/// cannot be read (or is longer than [`crate::input_cap::MAX_SCENARIO_BYTES`]) or does not
/// parse as TOML is not (the normal loader then reports its
/// error, with the line). The main format's `mode` (`schedule`, `replay`, `inflation`) never
/// is `elastic`.
pub fn is_elastic(path: &Path) -> bool {
    let Ok(text) =
        crate::input_cap::read_capped(path, crate::input_cap::MAX_SCENARIO_BYTES, "scenario file")
    else {
        return false;
    };
    text.parse::<toml::Table>()
        .ok()
        .and_then(|t| {
            t.get("mode")
                .and_then(|m| m.as_str())
                .map(|m| m == "elastic")
        })
        .unwrap_or(false)
}

/// Refuses a study command (`sweep`, `compare`, `compact`, `check`) on an elastic file, which
/// only `run` and `validate` take, instead of letting the main loader report its keys as
/// unknown.
///
/// # Errors
/// [`BadInput`] (exit code 2) naming the file and the command.
pub fn refuse_study(file: Option<&Path>, command: &str) -> Result<()> {
    match file.filter(|f| is_elastic(f)) {
        Some(f) => Err(BadInput(format!(
            "{}: an elastic scenario (`mode = \"elastic\"`) runs with `fleetsim run` and `fleetsim validate`; `fleetsim {command}` takes the main scenario format only",
            f.display()
        ))
        .into()),
        None => Ok(()),
    }
}

/// Options of `run` that do not apply to an elastic file, checked by [`run`].
#[derive(Debug, Default)]
pub struct Refused {
    /// `--seed` was given.
    pub seed: bool,
    /// `--format` was given.
    pub format: bool,
}

/// `fleetsim run FILE` on an elastic file: simulates it and writes `jobs.csv` and
/// `summary.json` to `out` (default `out/<file stem>`); prints a summary table unless
/// `quiet`, and the `wrote …` line on standard error.
///
/// # Errors
/// [`BadInput`] (exit code 2) for `--seed` or `--format`, or a bad scenario (naming the file
/// and field); an I/O error writing the outputs.
pub fn run(
    file: &Path,
    out: Option<PathBuf>,
    trace_dir: Option<PathBuf>,
    quiet: bool,
    refused: Refused,
) -> Result<()> {
    let what = |opt: &str, why: &str| {
        BadInput(format!(
            "{}: `{opt}` does not apply to an elastic scenario (`mode = \"elastic\"`): {why}",
            file.display()
        ))
    };
    if refused.seed {
        return Err(what("--seed", "the elastic engine has no randomness").into());
    }
    if refused.format {
        return Err(what("--format", "it always writes jobs.csv and summary.json").into());
    }
    let started = Instant::now();
    let (cfg, jobs) = load(file, trace_dir)?;
    let outcomes =
        simulate(&cfg, &jobs).map_err(|e| BadInput(format!("{}: {e}", file.display())))?;
    let summary = summarize(&outcomes);
    let out = out.unwrap_or_else(|| {
        let stem = file.file_stem().unwrap_or(file.as_os_str());
        PathBuf::from("out").join(stem)
    });
    // An all-or-nothing set, as a normal run's: the old marker goes first, the new one is
    // written last, so a killed run never leaves a folder that reads as complete.
    outset::begin(&out, outset::MARKER)
        .map_err(|e| anyhow::anyhow!("preparing output directory {}: {e}", out.display()))?;
    let write = |name: &str, bytes: &[u8]| {
        let p = out.join(name);
        write_atomic(&p, bytes).map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))
    };
    write("jobs.csv", jobs_csv(&outcomes)?.as_bytes())?;
    write("summary.json", summary_json(&summary)?.as_bytes())?;
    outset::finish(&out, &["jobs.csv".into(), "summary.json".into()])
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", out.join(outset::MARKER).display()))?;
    if !quiet {
        out!("{}", table(&summary));
    }
    errln!(
        "wrote {}/{{jobs.csv,summary.json,complete.json}} in {:.2} s",
        out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `fleetsim validate FILE` on an elastic file: loads and checks it (the whole workload) and
/// prints `FILE: ok — N cells, G GPUs; J elastic jobs (elastic)`.
///
/// # Errors
/// [`BadInput`] naming the file and the field.
pub fn validate(file: &Path, trace_dir: Option<PathBuf>) -> Result<()> {
    let (cfg, jobs) = load(file, trace_dir)?;
    let gpus: u64 = cfg.cells.iter().map(|&c| u64::from(c)).sum();
    outln!(
        "{}: ok — {}, {}; {} (elastic)",
        file.display(),
        count(cfg.cells.len() as u64, "cell"),
        count(gpus, "GPU"),
        count(jobs.len() as u64, "elastic job")
    );
    Ok(())
}

fn load(
    file: &Path,
    trace_dir: Option<PathBuf>,
) -> Result<(
    crate::elastic::ElasticConfig,
    Vec<crate::elastic::ElasticJob>,
)> {
    // The loader's messages already name the file and the field.
    crate::elastic::scenario::load(file, &TraceDir::resolve(trace_dir))
        .map_err(|e| BadInput(crate::cli::render_error(&e)).into())
}

/// Milliseconds as seconds with exactly 3 decimals.
fn secs(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// `jobs.csv`: header and one row per outcome, in order (see the module docs).
///
/// # Errors
/// Never in practice (writing to memory).
pub fn jobs_csv(outcomes: &[JobOutcome]) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "name",
        "submit_s",
        "start_s",
        "finish_s",
        "wait_s",
        "jct_s",
        "cell",
        "start_gpus",
        "final_gpus",
        "resizes",
        "gpu_s",
    ])?;
    for o in outcomes {
        let first = o.sizes.first().map_or(0, |&(_, n)| n);
        let last = o.sizes.last().map_or(0, |&(_, n)| n);
        w.write_record([
            o.name.clone(),
            secs(o.submit.0),
            secs(o.start.0),
            secs(o.finish.0),
            secs(o.start.saturating_since(o.submit).0),
            secs(o.jct().0),
            o.cell.to_string(),
            first.to_string(),
            last.to_string(),
            o.resizes.to_string(),
            secs(o.gpu_ms),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// `summary.json`: `{"mode": "elastic", …ElasticSummary}`, pretty-printed, newline-terminated.
///
/// # Errors
/// Never in practice (the summary's numbers are finite).
pub fn summary_json(s: &ElasticSummary) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        mode: &'static str,
        #[serde(flatten)]
        summary: &'a ElasticSummary,
    }
    let mut text = serde_json::to_string_pretty(&Doc {
        mode: "elastic",
        summary: s,
    })?;
    text.push('\n');
    Ok(text)
}

/// The stdout table of a run.
fn table(s: &ElasticSummary) -> String {
    let rows = [
        ("jobs", s.jobs.to_string()),
        ("JCT mean (s)", format!("{:.3}", s.jct_mean_s)),
        ("JCT p50 (s)", format!("{:.3}", s.jct_p50_s)),
        ("JCT p95 (s)", format!("{:.3}", s.jct_p95_s)),
        ("GPU-hours", format!("{:.3}", s.gpu_seconds / 3600.0)),
        ("resizes", s.resizes.to_string()),
        ("makespan (s)", format!("{:.3}", s.makespan_s)),
    ];
    let mut text = String::new();
    for (k, v) in rows {
        text.push_str(&format!("{k:<14} {v:>14}\n"));
    }
    text
}
