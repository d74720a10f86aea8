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
//! * `DIR/sweep.json`: the scenario (name, text, digest), axes, seeds and run count;
//! * `DIR/runs/NNNNN-ID/{summary.json,timeseries.csv,run.json}`: each run (`run.json`, written
//!   last, marks it complete; `--resume` skips complete runs);
//! * `DIR/runs.csv`: one row per run of this shard in run order: `run_index`, `run_id`, one
//!   column per axis (the value's label), `seed`, then every metric of
//!   [`crate::study::METRICS`];
//! * `DIR/report.html`, `DIR/report.md`: the table with the best value of each metric marked,
//!   plots of metrics against each numeric axis, the scenario.
//!
//! # Shards
//! `--shard I/N` (1 ≤ I ≤ N) runs only the runs whose id hashes (FNV-1a 64) to `I − 1`
//! modulo `N`, so N machines given I = 1…N run every run exactly once. `fleetsim merge`
//! joins the shards' directories: its `runs.csv` is byte-identical to an unsharded sweep's.

pub mod merge;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::report::{html, plots};
use crate::scenario::overrides::{value_label, Override, Source};
use crate::scenario::TraceDir;
use crate::study::{self, fmt_opt, metric_value, BadInput, METRICS};

/// The `[sweep]` table.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Seeds: a count (scenario seed, +1, …) or a list (default: the scenario seed).
    #[serde(default)]
    pub seeds: Option<Seeds>,
    /// Axes, outermost first.
    #[serde(default)]
    pub axes: Vec<AxisSpec>,
}

/// Seeds of a sweep or comparison.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Seeds {
    /// `n` seeds: `s, s+1, …, s+n−1` from the scenario seed `s`.
    Count(u64),
    /// These seeds.
    List(Vec<u64>),
}

impl Seeds {
    /// The seeds, given the scenario seed.
    pub fn resolve(&self, base: u64) -> Vec<u64> {
        match self {
            Seeds::Count(n) => (0..*n).map(|i| base.wrapping_add(i)).collect(),
            Seeds::List(v) => v.clone(),
        }
    }
}

/// One axis.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// Dotted path of the scenario field.
    pub param: String,
    /// Values, in order.
    pub values: Vec<toml::Value>,
    /// Optional names of the values (default: the value as text).
    #[serde(default)]
    pub labels: Vec<String>,
}

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

/// A shard `I/N` of a sweep (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `1..=count`.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Parses `I/N`.
    ///
    /// # Errors
    /// [`BadInput`] unless `1 ≤ I ≤ N`.
    pub fn parse(s: &str) -> Result<Shard, BadInput> {
        let bad = || {
            BadInput(format!(
                "bad shard `{s}`: expected I/N with 1 ≤ I ≤ N, e.g. 1/3 (a Slurm array task: \
                 $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=1-N; a Kubernetes \
                 Indexed Job: $((JOB_COMPLETION_INDEX+1))/N)"
            ))
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (i, n): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if n == 0 || i == 0 || i > n {
            return Err(bad());
        }
        Ok(Shard { index: i, count: n })
    }

    /// True when run `id` belongs to this shard.
    pub fn contains(&self, id: &str) -> bool {
        study::fnv1a(id.as_bytes()) % self.count == self.index - 1
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
}

#[derive(Serialize, Deserialize)]
struct RunJson {
    index: usize,
    id: String,
    seed: u64,
    overrides: Vec<String>,
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
    let rj: RunJson =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).ok()?).ok()?;
    if rj.id != p.id || rj.index != p.index {
        return None;
    }
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).ok()?).ok()
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
    std::fs::create_dir_all(out.join("runs"))
        .with_context(|| format!("creating {}", out.display()))?;
    if out.join("sweep.json").exists() {
        let old = read_manifest(out)?;
        if old.digest != plan.manifest.digest || old.runs != plan.manifest.runs {
            return Err(BadInput(format!(
                "{} holds another sweep (scenario `{}`, digest {}); use a fresh --out",
                out.display(),
                old.scenario,
                old.digest
            ))
            .into());
        }
    }
    study::write_json(&out.join("sweep.json"), &plan.manifest)?;
    let selected: Vec<&RunPoint> = plan
        .points
        .iter()
        .filter(|p| opts.shard.contains(&p.id))
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
                study::write_point(&dir, &point)?;
                study::write_json(
                    &dir.join("run.json"),
                    &RunJson {
                        index: p.index,
                        id: p.id.clone(),
                        seed: p.seed,
                        overrides: o.iter().map(Override::label).collect(),
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
    for (p, r) in selected.iter().zip(results) {
        match r {
            Ok((s, was_resumed)) => {
                resumed += usize::from(was_resumed);
                rows.push(row(p, &s));
            }
            Err(e) => {
                eprintln!("run {} ({}) failed: {e:#}", p.index, p.id);
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
    Ok(SweepOutcome {
        total: plan.points.len(),
        selected: selected.len(),
        resumed,
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
                c.text = crate::compare::fmt_metric(name, v);
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
        for bad in ["3/2", "0/4", "1/0", "x/2", "2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let ids: Vec<String> = (0..50).map(|i| format!("a={i},seed=1")).collect();
        for id in &ids {
            let n = (1..=3)
                .filter(|&i| Shard { index: i, count: 3 }.contains(id))
                .count();
            assert_eq!(n, 1);
        }
    }
}
