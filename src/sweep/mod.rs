//! Sweeps: the cartesian product of a scenario's sweep axes and seeds, run in parallel,
//! resumable, shardable over machines, with one row per run in `runs.csv`.
//!
//! ```toml
//! [sweep]
//! seeds = 3                      # scenario seed, +1, +2; or a list: seeds = [1, 7, 9]
//! [[sweep.axes]]
//! param = "policy.placement"     # any dotted path of the scenario (see scenario::overrides)
//! values = ["first-fit", "best-fit", "worst-fit"]
//! [[sweep.axes]]
//! param = "transforms.fleet_scale"
//! values = [0.5, 0.75, 1.0]
//! [[sweep.axes]]
//! param = "policy"               # a table value sets several fields at once
//! values = [{ queue_order = "fifo" }, { queue_order = "priority", queueing_strategy = "strict-fifo" }]
//! labels = ["fifo", "prio-strict"]   # optional names for the values (default: the value)
//! ```
//!
//! # Order, ids and determinism
//! Runs are numbered in cartesian order: the first axis varies slowest, seeds fastest. A run's
//! id is `PARAM=LABEL,…,seed=S`. Runs execute in parallel (rayon, one run per task, each run
//! single-threaded); results are collected per run and written in run order, so every output
//! is byte-identical whatever the thread count.
//!
//! # Output (`--out DIR`)
//! * `DIR/sweep.json`: the scenario (name, text, digest), axes, seeds, run count and the
//!   digest of every input file (a `--resume` over changed inputs is refused);
//! * `DIR/runs/NNNNN-ID/{summary.json,timeseries.csv,run.json}`: each run (`run.json`, written
//!   last with the other files' digests, marks it complete; `--resume` skips runs whose
//!   marker verifies);
//! * `DIR/runs.csv`: one row per run of this shard in run order: `run_index`, `run_id`, one
//!   column per axis (the value's label), `seed`, then every metric of
//!   [`crate::study::METRICS`];
//! * `DIR/report.html`, `DIR/report.md`: the table with the best value of each metric marked,
//!   plots of metrics against each numeric axis, the scenario;
//! * `DIR/complete.json`: written last, the digests of every file outside `runs/`
//!   ([`crate::report::outset`]); `merge` takes only shards whose marker verifies.
//!
//! # Shards
//! `--shard I/N` (1 ≤ I ≤ N) runs only the runs whose index is `I − 1` modulo `N`
//! (round-robin: the shards of `R` runs differ by at most one run), so N machines given
//! I = 1…N run every run exactly once. `--shard slurm` and `--shard k8s/N` take `I` (and for
//! Slurm `N`) from a Slurm job array's or a Kubernetes Indexed Job's environment
//! ([`Shard::parse_with_env`]). `fleetsim merge` joins the shards' directories: its `runs.csv`
//! is byte-identical to an unsharded sweep's.

pub mod merge;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::report::{html, plots};
use crate::scenario::overrides::{value_label, Override, Source};
use crate::scenario::TraceDir;
use crate::study::{self, fmt_opt, metric_value, BadInput, METRICS};

pub use crate::scenario::studies::{AxisSpec, Seeds, SweepSpec};

/// Most seeds of one study (`[sweep] seeds`, `--seeds`).
pub const MAX_SEEDS: u64 = 10_000;

/// Most runs of one sweep: axis values multiplied together, times the seeds. A run is at
/// least a few milliseconds and its row and folder stay on disk, so 100,000 runs is already
/// hours and gigabytes; a larger study is refused before anything is planned.
pub const MAX_RUNS: u64 = 100_000;

impl SweepSpec {
    /// Checks the table's shape; returns `(field, message)` for the first problem.
    ///
    /// # Errors
    /// An empty axis, a missing `param`, a repeated param, labels not matching values, zero
    /// seeds or repeated seeds.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let mut seen = std::collections::BTreeSet::new();
        for (i, a) in self.axes.iter().enumerate() {
            let f = format!("sweep.axes[{i}]");
            if a.param.trim().is_empty() {
                return Err((format!("{f}.param"), "must not be empty".into()));
            }
            if !seen.insert(a.param.as_str()) {
                return Err((
                    format!("{f}.param"),
                    format!("`{}` is swept twice", a.param),
                ));
            }
            if a.values.is_empty() {
                return Err((
                    format!("{f}.values"),
                    format!("axis `{}` has no values", a.param),
                ));
            }
            if !a.labels.is_empty() && a.labels.len() != a.values.len() {
                return Err((
                    format!("{f}.labels"),
                    format!("{} labels for {} values", a.labels.len(), a.values.len()),
                ));
            }
        }
        match &self.seeds {
            Some(Seeds::Count(0)) => Err(("sweep.seeds".into(), "must be at least 1".into())),
            Some(Seeds::List(v)) if v.is_empty() => {
                Err(("sweep.seeds".into(), "must not be empty".into()))
            }
            Some(Seeds::List(v)) => {
                let set: std::collections::BTreeSet<_> = v.iter().collect();
                if set.len() != v.len() {
                    return Err(("sweep.seeds".into(), "a seed is listed twice".into()));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// One axis as planned: its param and value labels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// Dotted path.
    pub param: String,
    /// Value labels, in order.
    pub labels: Vec<String>,
}

/// One run of a sweep.
#[derive(Clone, Debug)]
pub struct RunPoint {
    /// Position in cartesian order.
    pub index: usize,
    /// `PARAM=LABEL,…,seed=S`.
    pub id: String,
    /// One override per axis.
    pub overrides: Vec<Override>,
    /// One label per axis.
    pub labels: Vec<String>,
    /// Seed.
    pub seed: u64,
}

impl RunPoint {
    /// The run's directory name under `runs/`.
    pub fn dir_name(&self) -> String {
        format!("{:05}-{}", self.index, study::safe_name(&self.id))
    }
}

/// The manifest `sweep.json`: identical for every shard of one sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Scenario name.
    pub scenario: String,
    /// FNV-1a of the scenario text and the `--set` overrides, hex.
    pub digest: String,
    /// Runs in the whole sweep.
    pub runs: usize,
    /// Axes.
    pub axes: Vec<Axis>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// `--set` overrides applied to every run.
    pub set: Vec<String>,
    /// The scenario text.
    pub scenario_text: String,
    /// Every file the runs read — the scenario and the files it `extends`, traces, machine
    /// lists, failure timelines, Kueue manifests ([`crate::run::input_files`]), for the base
    /// scenario and each axis value — by `what (file name)`, with the FNV-1a 64 of its
    /// content. Filled in by [`run`]; `--resume` refuses a folder whose inputs differ.
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
}

/// A planned sweep.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The manifest.
    pub manifest: Manifest,
    /// Every run, in order.
    pub points: Vec<RunPoint>,
}

/// Plans the sweep of `source` with `extra` overrides (`--set`) applied to every run; `seeds`
/// overrides the scenario's `[sweep] seeds`.
///
/// # Errors
/// [`BadInput`] for a scenario without axes or seeds to sweep, or an axis value that does not
/// load (unknown param, wrong type, bad policy name).
pub fn plan(source: &Source, extra: &[Override], seeds: Option<Seeds>) -> Result<Plan> {
    let base = source.load(extra)?;
    let spec = base.scenario.sweep.clone().unwrap_or_default();
    // The size first, from the counts alone: a billion seeds must not be listed to be refused.
    let from_flag = seeds.is_some();
    let n_seeds = seeds
        .as_ref()
        .or(spec.seeds.as_ref())
        .map_or(1, Seeds::count);
    if n_seeds > MAX_SEEDS {
        let what = if from_flag { "--seeds" } else { "sweep.seeds" };
        return Err(BadInput(format!(
            "{}: {what} = {n_seeds} is over the limit of {MAX_SEEDS} seeds",
            source.origin
        ))
        .into());
    }
    let runs = spec
        .axes
        .iter()
        .try_fold(n_seeds, |acc, a| acc.checked_mul(a.values.len() as u64));
    match runs {
        Some(r) if r <= MAX_RUNS => {}
        _ => {
            let sizes: Vec<String> = spec
                .axes
                .iter()
                .map(|a| a.values.len().to_string())
                .collect();
            let total = runs.map_or("more than 2^64".to_string(), |r| r.to_string());
            return Err(BadInput(format!(
                "{}: the sweep is {} axis value(s) × {n_seeds} seed(s) = {total} runs, over the limit of {MAX_RUNS}; sweep fewer values or seeds, or split the study into several scenarios",
                source.origin,
                if sizes.is_empty() { "1".to_string() } else { sizes.join(" × ") }
            ))
            .into());
        }
    }
    let seeds = seeds
        .or(spec.seeds.clone())
        .map(|s| s.resolve(base.scenario.seed))
        .unwrap_or_else(|| vec![base.scenario.seed]);
    if seeds.is_empty() {
        return Err(BadInput("no seeds to run".into()).into());
    }
    if spec.axes.is_empty() && seeds.len() < 2 {
        return Err(BadInput(format!(
            "{}: nothing to sweep: add [[sweep.axes]] (param, values) or seeds to the scenario",
            source.origin
        ))
        .into());
    }
    let mut axes = Vec::new();
    for (ai, a) in spec.axes.iter().enumerate() {
        let labels: Vec<String> = if a.labels.is_empty() {
            a.values.iter().map(value_label).collect()
        } else {
            a.labels.clone()
        };
        // Labels name runs (and their directories): two equal labels would be one run id.
        let mut seen = std::collections::BTreeSet::new();
        for (vi, l) in labels.iter().enumerate() {
            if !seen.insert(l.as_str()) {
                let what = if a.labels.is_empty() {
                    "values"
                } else {
                    "labels"
                };
                return Err(BadInput(format!(
                    "{}: field `sweep.axes[{ai}].{what}[{vi}]`: `{l}` appears twice on the axis `{}`; every run needs its own id",
                    source.origin, a.param
                ))
                .into());
            }
        }
        for v in &a.values {
            let mut o = extra.to_vec();
            o.push(Override {
                path: a.param.clone(),
                value: v.clone(),
            });
            source.load(&o).map_err(|e| {
                BadInput(format!(
                    "sweep axis `{}` = {}: {e}",
                    a.param,
                    value_label(v)
                ))
            })?;
        }
        axes.push(Axis {
            param: a.param.clone(),
            labels,
        });
    }
    let mut points = Vec::new();
    let mut combo = vec![0usize; spec.axes.len()];
    loop {
        for &seed in &seeds {
            let mut parts: Vec<String> = combo
                .iter()
                .enumerate()
                .map(|(i, &v)| format!("{}={}", axes[i].param, axes[i].labels[v]))
                .collect();
            parts.push(format!("seed={seed}"));
            points.push(RunPoint {
                index: points.len(),
                id: parts.join(","),
                overrides: combo
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| Override {
                        path: spec.axes[i].param.clone(),
                        value: spec.axes[i].values[v].clone(),
                    })
                    .collect(),
                labels: combo
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| axes[i].labels[v].clone())
                    .collect(),
                seed,
            });
        }
        // Next combination, last axis fastest.
        let mut i = combo.len();
        loop {
            if i == 0 {
                let set: Vec<String> = extra.iter().map(Override::label).collect();
                let digest =
                    study::fnv1a(format!("{}\n{}", source.text, set.join("\n")).as_bytes());
                return Ok(Plan {
                    manifest: Manifest {
                        scenario: base.scenario.name.clone(),
                        digest: format!("{digest:016x}"),
                        runs: points.len(),
                        axes,
                        seeds,
                        set,
                        scenario_text: source.text.clone(),
                        inputs: BTreeMap::new(),
                    },
                    points,
                });
            }
            i -= 1;
            combo[i] += 1;
            if combo[i] < spec.axes[i].values.len() {
                break;
            }
            combo[i] = 0;
        }
    }
}

/// A shard `I/N` of a sweep (1-based): run `r` (0-based, cartesian order) belongs to shard
/// `r mod N + 1`, so the shards of a sweep of `R` runs hold `⌈R/N⌉` or `⌊R/N⌋` runs each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `1..=count`.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

/// The `--shard` forms, for error messages.
const SHARD_FORMS: &str = "expected I/N with 1 ≤ I ≤ N (e.g. 1/3); `slurm` (inside a Slurm job \
     array: the shard from SLURM_ARRAY_TASK_ID, _MIN, _MAX, _STEP and _COUNT, any --array=A-B[:S]); \
     or `k8s/N` (inside a Kubernetes Indexed Job of N completions: shard JOB_COMPLETION_INDEX+1)";

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Parses `I/N`, `slurm` or `k8s/N`, the latter two reading this process's environment
    /// (see [`Shard::parse_with_env`]).
    ///
    /// # Errors
    /// [`BadInput`] naming the form or the environment variable that is wrong.
    pub fn parse(s: &str) -> Result<Shard, BadInput> {
        Shard::parse_with_env(s, |k| std::env::var(k).ok())
    }

    /// Parses a `--shard` value, looking environment variables up with `env`:
    /// * `I/N`: shard I of N (1 ≤ I ≤ N);
    /// * `slurm`: this Slurm array task's shard (see [`Shard::from_slurm`]);
    /// * `k8s/N`: shard `JOB_COMPLETION_INDEX + 1` of N (Kubernetes Indexed Jobs number pods
    ///   `0…completions−1`; N must equal the Job's `completions`).
    ///
    /// # Errors
    /// [`BadInput`] for any other form, `I` outside `1…N`, or missing or inconsistent variables.
    pub fn parse_with_env(
        s: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Shard, BadInput> {
        let bad = || BadInput(format!("bad shard `{s}`: {SHARD_FORMS}"));
        let t = s.trim();
        if t.eq_ignore_ascii_case("slurm") {
            return Shard::from_slurm(env);
        }
        let (i, n) = t.split_once('/').ok_or_else(bad)?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        if n == 0 {
            return Err(bad());
        }
        if i.trim().eq_ignore_ascii_case("k8s") {
            let var = "JOB_COMPLETION_INDEX";
            let raw = env(var).ok_or_else(|| {
                BadInput(format!(
                    "bad shard `{s}`: {var} is not set (`k8s/N` is for the pods of a Kubernetes \
                     Job with completionMode: Indexed; elsewhere give --shard I/N)"
                ))
            })?;
            let k: u64 = raw.trim().parse().map_err(|_| {
                BadInput(format!(
                    "bad shard `{s}`: {var}=`{raw}` is not a non-negative integer"
                ))
            })?;
            if k >= n {
                return Err(BadInput(format!(
                    "bad shard `{s}`: {var}={k} but the Job has indexes 0…{} only: N in \
                     `k8s/N` must equal the Job's `completions`",
                    n - 1
                )));
            }
            return Ok(Shard {
                index: k + 1,
                count: n,
            });
        }
        let i: u64 = i.trim().parse().map_err(|_| bad())?;
        if i == 0 || i > n {
            return Err(bad());
        }
        Ok(Shard { index: i, count: n })
    }

    /// This Slurm array task's shard. Slurm numbers tasks as `--array` says (`1-8`, `0-7`,
    /// `0-30:3`, …) and sets `SLURM_ARRAY_TASK_ID` (this task), `_MIN`, `_MAX`, `_STEP` and
    /// `_COUNT`; task `ID` is shard `(ID − MIN) / STEP + 1` of `COUNT`. Without `_STEP` (older
    /// Slurm) the step is `(MAX − MIN) / (COUNT − 1)`.
    ///
    /// # Errors
    /// [`BadInput`] when a variable is missing or not an integer, or when the array is not an
    /// evenly spaced range (`--array=1,4,5`): such arrays have no shard numbering; use
    /// `--array=A-B[:S]` or `--shard I/N`.
    pub fn from_slurm(env: impl Fn(&str) -> Option<String>) -> Result<Shard, BadInput> {
        let get = |k: &str| -> Result<Option<u64>, BadInput> {
            match env(k) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| {
                    BadInput(format!(
                        "bad shard `slurm`: {k}=`{v}` is not a non-negative integer"
                    ))
                }),
            }
        };
        let need = |k: &str| -> Result<u64, BadInput> {
            get(k)?.ok_or_else(|| {
                BadInput(format!(
                    "bad shard `slurm`: {k} is not set (`--shard slurm` is for the tasks of a \
                     Slurm job array, `sbatch --array=…`; elsewhere give --shard I/N)"
                ))
            })
        };
        let id = need("SLURM_ARRAY_TASK_ID")?;
        let count = need("SLURM_ARRAY_TASK_COUNT")?;
        let min = need("SLURM_ARRAY_TASK_MIN")?;
        let max = get("SLURM_ARRAY_TASK_MAX")?;
        let uneven = |why: String| {
            BadInput(format!(
                "bad shard `slurm`: {why}; only evenly spaced arrays (--array=A-B or A-B:S) \
                 number shards: resubmit with such an array or give --shard I/N"
            ))
        };
        if count == 0 {
            return Err(uneven("SLURM_ARRAY_TASK_COUNT=0".into()));
        }
        if id < min || max.is_some_and(|m| id > m || m < min) {
            return Err(uneven(format!(
                "task {id} is outside SLURM_ARRAY_TASK_MIN={min}…MAX={}",
                max.map_or("?".into(), |m| m.to_string())
            )));
        }
        let step = match (get("SLURM_ARRAY_TASK_STEP")?, max) {
            _ if count == 1 => 1,
            (Some(s), _) if s > 0 => s,
            (_, Some(m)) if (m - min) % (count - 1) == 0 && m > min => (m - min) / (count - 1),
            (_, Some(m)) => {
                return Err(uneven(format!(
                    "{count} tasks do not evenly span {min}…{m}"
                )))
            }
            (_, None) => {
                return Err(uneven(
                    "neither SLURM_ARRAY_TASK_STEP nor SLURM_ARRAY_TASK_MAX is set".into(),
                ))
            }
        };
        if let Some(m) = max {
            if m - min != step * (count - 1) {
                return Err(uneven(format!(
                    "{count} tasks of step {step} from {min} do not end at \
                     SLURM_ARRAY_TASK_MAX={m}"
                )));
            }
        }
        if (id - min) % step != 0 || (id - min) / step >= count {
            return Err(uneven(format!(
                "task {id} is not one of {count} tasks {min}, {}, … of step {step}",
                min + step
            )));
        }
        Ok(Shard {
            index: (id - min) / step + 1,
            count,
        })
    }

    /// True when run number `run_index` (0-based, cartesian order) belongs to this shard.
    pub fn contains(&self, run_index: usize) -> bool {
        run_index as u64 % self.count == self.index - 1
    }
}

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    /// Output directory.
    pub out: PathBuf,
    /// Which shard.
    pub shard: Shard,
    /// Skip complete runs.
    pub resume: bool,
    /// Public traces.
    pub trace_dir: TraceDir,
    /// Also write PNG plots.
    pub png: bool,
    /// Worker threads (default: rayon's, i.e. `RAYON_NUM_THREADS` or the core count).
    pub threads: Option<usize>,
}

/// What a sweep did.
#[derive(Clone, Debug)]
pub struct SweepOutcome {
    /// Runs in the whole sweep.
    pub total: usize,
    /// Runs of this shard.
    pub selected: usize,
    /// Of those, skipped as already complete.
    pub resumed: usize,
    /// The runs' warnings, each once ([`study::distinct_warnings`]).
    pub warnings: Vec<String>,
}

/// `run.json`, a run folder's completion marker (written last): the run and the digests of
/// its files ([`crate::report::outset`]).
#[derive(Serialize, Deserialize)]
pub(crate) struct RunJson {
    pub(crate) index: usize,
    pub(crate) id: String,
    pub(crate) seed: u64,
    pub(crate) overrides: Vec<String>,
    /// `summary.json` and `timeseries.csv`: size and digest. Absent in folders written
    /// before markers had digests, which therefore count as incomplete.
    #[serde(default)]
    pub(crate) files: BTreeMap<String, crate::report::outset::FileDigest>,
}

/// The files of a run folder ([`study::write_point`]).
pub(crate) const RUN_FILES: [&str; 2] = ["summary.json", "timeseries.csv"];

/// The summary of the complete run in `dir` whose marker says `id` / `index`, if any.
pub(crate) fn complete_run(dir: &Path, id: &str, index: usize) -> Option<serde_json::Value> {
    complete_files(dir, id, index, &RUN_FILES)?;
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).ok()?).ok()
}

/// `Some(())` when `dir/run.json` names run `id` / `index` and records exactly `files`, each
/// unchanged since.
pub(crate) fn complete_files(dir: &Path, id: &str, index: usize, files: &[&str]) -> Option<()> {
    let rj: RunJson =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).ok()?).ok()?;
    let listed: Vec<&str> = rj.files.keys().map(String::as_str).collect();
    let mut want = files.to_vec();
    want.sort_unstable();
    if rj.id != id || rj.index != index || listed != want {
        return None;
    }
    crate::report::outset::verify_files(dir, &rj.files).ok()
}

/// Writes a run folder as an all-or-nothing set: removes `run.json`, writes the point,
/// then `run.json` with the files' digests.
///
/// # Errors
/// The I/O error.
pub(crate) fn write_run(
    dir: &Path,
    point: &study::Point,
    mut marker: RunJson,
) -> std::io::Result<()> {
    write_run_with(dir, point, &mut marker, &RUN_FILES, |_| Ok(()))
}

/// [`write_run`] with more files: `extra` writes them after the point, `files` lists every
/// file of the folder.
pub(crate) fn write_run_with(
    dir: &Path,
    point: &study::Point,
    marker: &mut RunJson,
    files: &[&str],
    extra: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    crate::report::outset::begin(dir, "run.json")?;
    study::write_point(dir, point)?;
    extra(dir)?;
    let names: Vec<String> = files.iter().map(|s| s.to_string()).collect();
    marker.files = crate::report::outset::digests(dir, &names)?;
    study::write_json(&dir.join("run.json"), &*marker)
}

/// Digests of every input file of the base scenario (with `extra`) and of the scenario with
/// each override in `pairs` (axis values; repeated ones loaded once), keyed
/// `what (file name)` ([`Manifest::inputs`]). Files that cannot be read are left out (the
/// runs report them).
///
/// # Errors
/// A scenario that does not load with an override.
pub fn input_digests(
    source: &Source,
    extra: &[Override],
    pairs: &[Override],
    trace_dir: &TraceDir,
) -> Result<BTreeMap<String, String>> {
    let mut seen_overrides = std::collections::BTreeSet::new();
    let mut loads = vec![source.load(extra)?];
    for o in pairs {
        if seen_overrides.insert(o.label()) {
            let mut all = extra.to_vec();
            all.push(o.clone());
            loads.push(source.load(&all)?);
        }
    }
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut hashed = std::collections::BTreeSet::new();
    for l in &loads {
        for (what, path) in crate::run::input_files(l, trace_dir) {
            if !hashed.insert(path.clone()) {
                continue;
            }
            let Ok(d) = crate::report::outset::digest(&path) else {
                continue;
            };
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut key = format!("{what} ({name})");
            let mut k = 2;
            while out.get(&key).is_some_and(|v| *v != d.fnv1a) {
                key = format!("{what} ({name}) #{k}");
                k += 1;
            }
            out.insert(key, d.fnv1a);
        }
    }
    Ok(out)
}

/// The inputs that differ between two [`Manifest::inputs`], named.
pub fn changed_inputs(old: &BTreeMap<String, String>, new: &BTreeMap<String, String>) -> String {
    let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    keys.into_iter()
        .filter(|k| old.get(*k) != new.get(*k))
        .map(|k| match (old.get(k), new.get(k)) {
            (Some(_), Some(_)) => format!("{k} changed"),
            (None, _) => format!("{k} added"),
            (_, None) => format!("{k} removed"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes the study's top-level [`crate::report::outset::MARKER`] over every file outside
/// `runs/` but the folder's ownership manifest ([`crate::outdir::MANIFEST`]), which the
/// study rewrites after the marker (it lists the marker among the study's files).
///
/// # Errors
/// The I/O error.
pub fn complete_top_level(out: &Path) -> Result<()> {
    let mut names = crate::report::outset::files_below(out, &["runs"])
        .with_context(|| format!("listing {}", out.display()))?;
    names.retain(|n| n != crate::outdir::MANIFEST);
    crate::report::outset::finish(out, &names).with_context(|| format!("writing {}", out.display()))
}

/// The `runs.csv` header for a manifest.
pub fn header(m: &Manifest) -> Vec<String> {
    let mut h = vec!["run_index".to_string(), "run_id".to_string()];
    h.extend(m.axes.iter().map(|a| a.param.clone()));
    h.push("seed".into());
    h.extend(METRICS.iter().map(|m| m.name.to_string()));
    h
}

fn row(p: &RunPoint, summary: &serde_json::Value) -> Vec<String> {
    let mut r = vec![p.index.to_string(), p.id.clone()];
    r.extend(p.labels.iter().cloned());
    r.push(p.seed.to_string());
    r.extend(
        METRICS
            .iter()
            .map(|m| fmt_opt(metric_value(summary, m.name))),
    );
    r
}

/// Writes `runs.csv` (atomically).
///
/// # Errors
/// The I/O error.
pub fn write_runs_csv(path: &Path, header: &[String], rows: &[Vec<String>]) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).map_err(std::io::Error::other)?;
    for r in rows {
        w.write_record(r).map_err(std::io::Error::other)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    crate::report::atomic::write_atomic(path, &bytes)
}

/// Reads `DIR/sweep.json`.
///
/// # Errors
/// I/O or JSON errors, with the path.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let p = dir.join("sweep.json");
    let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
}

fn load_complete(dir: &Path, p: &RunPoint) -> Option<serde_json::Value> {
    complete_run(dir, &p.id, p.index)
}

/// Runs the planned sweep (this shard of it) into `opts.out`.
///
/// # Errors
/// [`BadInput`] when the directory holds another sweep; the first failed run (after every
/// run has been tried; complete runs stay on disk for `--resume`); I/O errors.
pub fn run(
    source: &Source,
    extra: &[Override],
    plan: &Plan,
    opts: &SweepOptions,
) -> Result<SweepOutcome> {
    let out = &opts.out;
    let mut manifest = plan.manifest.clone();
    let pairs: Vec<Override> = plan
        .points
        .iter()
        .flat_map(|p| p.overrides.iter().cloned())
        .collect();
    manifest.inputs = input_digests(source, extra, &pairs, &opts.trace_dir)?;
    std::fs::create_dir_all(out.join("runs"))
        .with_context(|| format!("creating {}", out.display()))?;
    if out.join("sweep.json").exists() {
        let old = read_manifest(out)?;
        if old.digest != manifest.digest || old.runs != manifest.runs {
            return Err(BadInput(format!(
                "{} holds another sweep (scenario `{}`, digest {}); use a fresh --out",
                out.display(),
                old.scenario,
                old.digest
            ))
            .into());
        }
        if old.inputs != manifest.inputs {
            return Err(BadInput(format!(
                "{}: the sweep's input files changed since its runs were written ({}); their results would be stale: use a fresh --out",
                out.display(),
                changed_inputs(&old.inputs, &manifest.inputs)
            ))
            .into());
        }
    }
    // The top level reads as incomplete until its marker is written, after the report.
    crate::report::outset::begin(out, crate::report::outset::MARKER)
        .with_context(|| format!("writing {}", out.display()))?;
    study::write_json(&out.join("sweep.json"), &manifest)?;
    let selected: Vec<&RunPoint> = plan
        .points
        .iter()
        .filter(|p| opts.shard.contains(p.index))
        .collect();
    let work = || {
        selected
            .par_iter()
            .map(|p| -> Result<(serde_json::Value, bool)> {
                let dir = out.join("runs").join(p.dir_name());
                if opts.resume {
                    if let Some(s) = load_complete(&dir, p) {
                        return Ok((s, true));
                    }
                }
                let mut o = extra.to_vec();
                o.extend(p.overrides.iter().cloned());
                let loaded = source.load(&o)?;
                let point = study::run_point(&loaded, p.seed, &opts.trace_dir, false)
                    .with_context(|| format!("run {} ({})", p.index, p.id))?;
                write_run(
                    &dir,
                    &point,
                    RunJson {
                        index: p.index,
                        id: p.id.clone(),
                        seed: p.seed,
                        overrides: o.iter().map(Override::label).collect(),
                        files: BTreeMap::new(),
                    },
                )?;
                Ok((point.summary, false))
            })
            .collect::<Vec<_>>()
    };
    let results = match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .context("starting worker threads")?
            .install(work),
        None => work(),
    };
    let mut rows = Vec::new();
    let mut first_err = None;
    let mut resumed = 0;
    let mut summaries = Vec::new();
    for (p, r) in selected.iter().zip(results) {
        match r {
            Ok((s, was_resumed)) => {
                resumed += usize::from(was_resumed);
                rows.push(row(p, &s));
                summaries.push(s);
            }
            Err(e) => {
                errln!("run {} ({}) failed: {e:#}", p.index, p.id);
                first_err.get_or_insert(e);
            }
        }
    }
    write_runs_csv(&out.join("runs.csv"), &header(&plan.manifest), &rows)?;
    if let Some(e) = first_err {
        return Err(e.context(format!(
            "{} of {} runs failed; complete runs are kept (rerun with --resume)",
            selected.len() - rows.len(),
            selected.len()
        )));
    }
    write_report(out, &plan.manifest, &rows, opts.png)?;
    complete_top_level(out)?;
    Ok(SweepOutcome {
        total: plan.points.len(),
        selected: selected.len(),
        resumed,
        warnings: study::distinct_warnings(&summaries),
    })
}

/// Writes `report.html`, `report.md` and `plots/` for a sweep's rows.
///
/// # Errors
/// I/O or plotting errors.
pub fn write_report(dir: &Path, m: &Manifest, rows: &[Vec<String>], png: bool) -> Result<()> {
    let header = header(m);
    let n_axes = m.axes.len();
    let metric_col = |name: &str| header.iter().position(|h| h == name);
    let num = |s: &str| s.parse::<f64>().ok();
    // Plots: each numeric axis against occupancy, p99 wait and mean fragmentation, mean over seeds and every
    // other axis held, one line per combination of the other (non-seed) axes.
    let mut figures = Vec::new();
    for (ai, axis) in m.axes.iter().enumerate() {
        let numeric = axis.labels.iter().all(|l| num(l).is_some());
        if !numeric || axis.labels.len() < 2 {
            continue;
        }
        for metric in [
            "occupancy",
            "wait_s.p99",
            "fragmentation.mean_pct_of_capacity",
        ] {
            let Some(col) = metric_col(metric) else {
                continue;
            };
            let mut lines: std::collections::BTreeMap<String, Vec<(f64, f64, u32)>> =
                std::collections::BTreeMap::new();
            for r in rows {
                let others: Vec<String> = (0..n_axes)
                    .filter(|&j| j != ai)
                    .map(|j| {
                        let short = m.axes[j].param.rsplit('.').next().unwrap_or_default();
                        format!("{short}={}", r[2 + j])
                    })
                    .collect();
                let key = if others.is_empty() {
                    "all".to_string()
                } else {
                    others.join(",")
                };
                let (Some(x), Some(y)) = (num(&r[2 + ai]), num(&r[col])) else {
                    continue;
                };
                let line = lines.entry(key).or_default();
                match line.iter_mut().find(|(lx, _, _)| *lx == x) {
                    Some(e) => {
                        e.1 += y;
                        e.2 += 1;
                    }
                    None => line.push((x, y, 1)),
                }
            }
            let series: Vec<plots::Series> = lines
                .into_iter()
                .map(|(name, mut pts)| {
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    plots::Series {
                        name,
                        points: pts.into_iter().map(|(x, s, n)| (x, s / n as f64)).collect(),
                    }
                })
                .collect();
            figures.push(plots::Figure {
                file: format!(
                    "sweep-{}-{}",
                    study::safe_name(&axis.param),
                    study::safe_name(metric)
                ),
                title: format!("{metric} vs {} (mean over seeds)", axis.param),
                x_label: axis.param.clone(),
                y_label: metric.to_string(),
                kind: plots::Kind::Lines(series),
            });
        }
    }
    let rendered = plots::render_all(dir, &figures, png)?;
    // The table leaves out run_id: the axis columns and the seed say the same.
    let shown: Vec<usize> = (0..header.len()).filter(|&c| c != 1).collect();
    let table_header: Vec<String> = shown.iter().map(|&c| header[c].clone()).collect();
    let mut cells: Vec<Vec<html::Cell>> = rows
        .iter()
        .map(|r| shown.iter().map(|&c| html::Cell::plain(&r[c])).collect())
        .collect();
    html::mark_best_in_columns(&table_header, &mut cells);
    // Metric columns are shown rounded (runs.csv keeps every digit).
    // Durations in human units (`2.73 h`).
    let first_metric = table_header.len() - METRICS.len();
    for row in &mut cells {
        for (c, name) in row.iter_mut().zip(&table_header).skip(first_metric) {
            if let Ok(v) = c.text.parse::<f64>() {
                c.text = crate::report::format::fmt_metric(name, v);
            }
        }
    }
    let doc = html::ReportDoc {
        title: format!("fleetsim sweep: {}", m.scenario),
        intro: vec![
            format!(
                "{} runs: {} × {} seeds. Each row is one run (its summary.json is under runs/).",
                rows.len(),
                if m.axes.is_empty() {
                    "no axes".to_string()
                } else {
                    m.axes
                        .iter()
                        .map(|a| format!("{} ({} values)", a.param, a.labels.len()))
                        .collect::<Vec<_>>()
                        .join(" × ")
                },
                m.seeds.len()
            ),
            if m.set.is_empty() {
                String::new()
            } else {
                format!("Overrides for every run: {}", m.set.join(", "))
            },
        ],
        tables: vec![html::Table {
            title: "Runs".into(),
            caption: "The best value of each metric over all runs is marked ★; values are rounded here and durations shown in s, min, h or d; runs.csv has every digit, in seconds.".into(),
            header: table_header,
            rows: cells,
        }],
        plots: rendered,
        notes: Vec::new(),
        scenario_text: m.scenario_text.clone(),
    };
    html::write(dir, &doc)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        for bad in ["3/2", "0/4", "1/0", "x/2", "2", "k8s", "slurm/3"] {
            assert!(Shard::parse_with_env(bad, |_| None).is_err(), "{bad}");
        }
        for r in 0..50 {
            let n = (1..=3)
                .filter(|&i| Shard { index: i, count: 3 }.contains(r))
                .count();
            assert_eq!(n, 1);
        }
    }

    /// Issue #20: 36 runs on 8 shards. Round-robin: 36 = 4 × 8 + 4, so shards 1–4 get
    /// 5 runs (indexes r ≡ 0…3 mod 8: r, r+8, …, r+32) and shards 5–8 get 4 (r+32 > 35).
    /// The old FNV hash of the ids gave 3 to 6.
    #[test]
    fn shards_of_36_runs_on_8_differ_by_at_most_one() {
        let sizes: Vec<usize> = (1..=8)
            .map(|i| {
                (0..36)
                    .filter(|&r| Shard { index: i, count: 8 }.contains(r))
                    .count()
            })
            .collect();
        assert_eq!(sizes, [5, 5, 5, 5, 4, 4, 4, 4]);
        let first: Vec<usize> = (0..36)
            .filter(|&r| Shard { index: 3, count: 8 }.contains(r))
            .collect();
        assert_eq!(first, [2, 10, 18, 26, 34]);
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn slurm(
        id: u64,
        min: u64,
        max: u64,
        step: Option<u64>,
        count: u64,
    ) -> Result<Shard, BadInput> {
        let (id, min, max, count) = (
            id.to_string(),
            min.to_string(),
            max.to_string(),
            count.to_string(),
        );
        let step = step.map(|s| s.to_string());
        let mut v = vec![
            ("SLURM_ARRAY_TASK_ID", id.as_str()),
            ("SLURM_ARRAY_TASK_MIN", min.as_str()),
            ("SLURM_ARRAY_TASK_MAX", max.as_str()),
            ("SLURM_ARRAY_TASK_COUNT", count.as_str()),
        ];
        if let Some(s) = &step {
            v.push(("SLURM_ARRAY_TASK_STEP", s.as_str()));
        }
        Shard::parse_with_env("slurm", env(&v))
    }

    #[test]
    fn slurm_arrays_0_or_1_based_and_stepped() {
        let sh = |index, count| Shard { index, count };
        // --array=1-8: task 1 is shard 1/8, task 8 is 8/8.
        assert_eq!(slurm(1, 1, 8, Some(1), 8).unwrap(), sh(1, 8));
        assert_eq!(slurm(8, 1, 8, Some(1), 8).unwrap(), sh(8, 8));
        // --array=0-7: task 0 is shard 1/8, task 7 is 8/8.
        assert_eq!(slurm(0, 0, 7, Some(1), 8).unwrap(), sh(1, 8));
        assert_eq!(slurm(7, 0, 7, None, 8).unwrap(), sh(8, 8));
        // --array=0-30:3: tasks 0, 3, …, 30 = 11 tasks; task 21 is (21 − 0) / 3 + 1 = 8th.
        assert_eq!(slurm(21, 0, 30, Some(3), 11).unwrap(), sh(8, 11));
        // Without _STEP the step is (30 − 0) / (11 − 1) = 3.
        assert_eq!(slurm(30, 0, 30, None, 11).unwrap(), sh(11, 11));
        // --array=5-5: one task.
        assert_eq!(slurm(5, 5, 5, Some(1), 1).unwrap(), sh(1, 1));
        // --array=1,2,4 (COUNT 3, MIN 1, MAX 4, no _STEP): 3 tasks cannot evenly span 1…4
        // ((4 − 1) mod (3 − 1) = 1), refused with a way out.
        let e = slurm(2, 1, 4, None, 3).unwrap_err().0;
        assert!(
            e.contains("do not evenly span 1…4") && e.contains("--shard I/N"),
            "{e}"
        );
        // A task off the step grid, or a step that does not reach MAX.
        assert!(slurm(4, 0, 30, Some(3), 11)
            .unwrap_err()
            .0
            .contains("not one of 11 tasks"));
        assert!(slurm(3, 0, 30, Some(3), 8)
            .unwrap_err()
            .0
            .contains("do not end at"));
        // Outside a job array.
        let e = Shard::parse_with_env("slurm", |_| None).unwrap_err().0;
        assert!(e.contains("SLURM_ARRAY_TASK_ID is not set"), "{e}");
        let e = Shard::parse_with_env(
            "slurm",
            env(&[
                ("SLURM_ARRAY_TASK_ID", "x"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ]),
        )
        .unwrap_err()
        .0;
        assert!(e.contains("SLURM_ARRAY_TASK_ID=`x`"), "{e}");
    }

    #[test]
    fn kubernetes_indexed_job_index_is_0_based() {
        let k = |i: &str| Shard::parse_with_env("k8s/8", env(&[("JOB_COMPLETION_INDEX", i)]));
        assert_eq!(k("0").unwrap(), Shard { index: 1, count: 8 });
        assert_eq!(k("7").unwrap(), Shard { index: 8, count: 8 });
        assert!(k("8")
            .unwrap_err()
            .0
            .contains("must equal the Job's `completions`"));
        assert!(k("-1").is_err());
        let e = Shard::parse_with_env("k8s/8", |_| None).unwrap_err().0;
        assert!(e.contains("JOB_COMPLETION_INDEX is not set"), "{e}");
    }
}
