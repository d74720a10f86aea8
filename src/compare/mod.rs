//! `fleetsim compare`: several policies on the same workload and seeds (common random
//! numbers), with each metric's mean over seeds, the paired difference to a baseline policy
//! and its 95 % Student-t confidence interval ([`stats`]), a self-contained HTML and Markdown
//! report with plots, and every run's `summary.json`.
//!
//! # Naming policies
//! `--policies A,B,C`; each item is one policy variant:
//! * `FIELD=VALUE` sets `policy.FIELD` (`placement=worst-fit`); a path with a dot is taken as
//!   a whole scenario path (`transforms.fleet_scale=0.5`), so any variant can be compared;
//! * several settings joined with `+` form one variant
//!   (`queue_order=priority+queueing_strategy=strict-fifo`);
//! * a bare `NAME` is looked up among the fields of `[policy]`: it must be a valid value of
//!   exactly one field (`worst-fit` → `placement`, `least-loaded` → `cell_selection`); an
//!   ambiguous name (`first-fit`) is an error that lists the fields. The fields are read from
//!   the schema, so policies added later work without changes here;
//! * `LABEL=SETTING[,SETTING…]` names a variant: `none=flexibility.spatial=false`,
//!   `fast=worst-fit`, `both=flexibility.spatial=true,flexibility.platform=true`. After a
//!   label, the comma-separated settings without one belong to that variant until the next
//!   `LABEL=`. An item is labelled when its first `+`-joined part has two `=`
//!   (`LABEL=PATH=VALUE`) or one `=` whose left side is a plain name (letters, digits, `-`, `_`) that is not a `[policy]` field
//!   (`fast=worst-fit`). A variant that sets one path twice is an error. Commas and `+`
//!   inside a quoted string or a TOML array or inline table do not split:
//!   `more=transforms.add_nodes=[{ cell = "b200", nodes = [{ preset = "hgx-b200", count = 8 }] }]`.
//!
//! The metrics are [`crate::study::METRICS`], then [`crate::study::RELIABILITY_METRICS`]
//! (goodput, lost work, failures, cross-cell dispatches) when every run's summary has them.
//!
//! Every variant runs with every seed; runs are independent tasks on rayon and results are
//! reduced in (variant, seed) order, so outputs are byte-identical for any thread count.

pub mod stats;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::Serialize;

use crate::report::html::{self, Cell};
use crate::report::plots::{self, Figure, Kind, Series};
use crate::scenario::overrides::{Override, Source};
use crate::scenario::TraceDir;
use crate::study::{
    self, metric_value, BadInput, Better, Metric, Point, METRICS, RELIABILITY_METRICS,
};
use stats::PairedCi;

/// One policy variant to compare.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// The name it was given on the command line.
    pub label: String,
    /// The overrides it stands for.
    pub overrides: Vec<Override>,
}

/// The `[policy]` keys that take a policy name ([`fleetsim_policies::SchedulerSpec::STAGES`]).
pub fn policy_fields() -> Vec<&'static str> {
    fleetsim_policies::SchedulerSpec::STAGES
        .iter()
        .map(|s| s.field)
        .collect()
}

/// Parses `--policies`.
///
/// # Errors
/// [`BadInput`] for an empty list, a repeated name, a name no or several policy fields
/// accept, or a setting that does not load.
pub fn parse_variants(arg: &str, source: &Source, extra: &[Override]) -> Result<Vec<Variant>> {
    let mut out: Vec<Variant> = Vec::new();
    for (label, parts) in group_items(arg)? {
        let item = label.as_str();
        let mut overrides: Vec<Override> = Vec::new();
        for part in parts.iter().map(String::as_str) {
            if part.contains('=') {
                let mut o = Override::parse(part).map_err(BadInput)?;
                if !o.path.contains('.') {
                    o.path = format!("policy.{}", o.path);
                }
                overrides.push(o);
            } else {
                let accepted = fleetsim_policies::SchedulerSpec::stages_accepting(part);
                match accepted.as_slice() {
                    [f] => overrides.push(Override {
                        path: format!("policy.{f}"),
                        value: toml::Value::String(part.to_string()),
                    }),
                    [] => {
                        return Err(BadInput(format!(
                            "policy `{part}` is not a valid value of any [policy] field ({}); \
                             write FIELD=VALUE to see the valid names",
                            policy_fields().join(", ")
                        ))
                        .into())
                    }
                    many => {
                        return Err(BadInput(format!(
                            "policy `{part}` is ambiguous: it is a valid {}; write e.g. {}={part}",
                            many.join(" and a valid "),
                            many[0]
                        ))
                        .into())
                    }
                }
            }
        }
        if let Some(dup) = overrides
            .iter()
            .enumerate()
            .find(|(i, o)| overrides[..*i].iter().any(|p| p.path == o.path))
        {
            return Err(BadInput(format!(
                "policy `{item}` sets `{}` twice (after `LABEL=`, the comma-separated settings \
                 without a label belong to that variant; give each variant its own LABEL=)",
                dup.1.path
            ))
            .into());
        }
        let mut o = extra.to_vec();
        o.extend(overrides.iter().cloned());
        source
            .load(&o)
            .map_err(|e| BadInput(format!("policy `{item}`: {e}")))?;
        if out.iter().any(|v| v.label == item) {
            return Err(BadInput(format!("policy `{item}` is listed twice")).into());
        }
        out.push(Variant {
            label: item.to_string(),
            overrides,
        });
    }
    if out.len() < 2 {
        return Err(BadInput(
            "compare needs at least two policies, e.g. --policies best-fit,worst-fit".into(),
        )
        .into());
    }
    Ok(out)
}

/// Splits `--policies` into variants: `(label, settings)`, each setting one `+`-joined part
/// of an item ([`parse_variants`] docs give the syntax).
///
/// # Errors
/// [`BadInput`] for an empty label or setting.
fn group_items(arg: &str) -> Result<Vec<(String, Vec<String>)>, BadInput> {
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    let mut groups: Vec<(String, Vec<String>, bool)> = Vec::new();
    for item in split_top(arg, ',')
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        // The label, if any, is judged on the first `+`-joined part alone.
        let first = split_top(item, '+')[0];
        let label = match first.split_once('=') {
            Some((l, rest))
                if plain(l) && (rest.contains('=') || !policy_fields().contains(&l)) =>
            {
                Some((l, &item[l.len() + 1..]))
            }
            _ => None,
        };
        let split = |s: &str| -> Result<Vec<String>, BadInput> {
            split_top(s, '+')
                .into_iter()
                .map(|p| {
                    let p = p.trim();
                    if p.is_empty() {
                        Err(BadInput(format!("policy `{item}`: an empty setting")))
                    } else {
                        Ok(p.to_string())
                    }
                })
                .collect()
        };
        match label {
            Some((l, rest)) => groups.push((l.to_string(), split(rest)?, true)),
            None => match groups.last_mut() {
                Some((_, parts, true)) => parts.extend(split(item)?),
                _ => groups.push((item.to_string(), split(item)?, false)),
            },
        }
    }
    Ok(groups.into_iter().map(|(l, p, _)| (l, p)).collect())
}

/// Splits `s` at every `sep` outside quotes (`"…"`, `'…'`) and brackets (`[…]`, `{…}`), so
/// that a TOML value such as `[{ cell = "b", nodes = [...] }]` stays whole.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, c) if c == sep && depth <= 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// How to compare.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// Output directory.
    pub out: PathBuf,
    /// Seeds (every variant runs each).
    pub seeds: Vec<u64>,
    /// Label of the baseline variant (default: the first).
    pub baseline: Option<String>,
    /// Public traces.
    pub trace_dir: TraceDir,
    /// Also write PNG plots.
    pub png: bool,
    /// Worker threads.
    pub threads: Option<usize>,
    /// Skip runs already complete in `out` (a folder written by the same comparison: same
    /// scenario, overrides, policies, seeds and input files, else refused).
    pub resume: bool,
}

/// `compare-manifest.json`: what a comparison folder holds, so that `--resume` can refuse a
/// folder of another comparison (or of changed input files).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompareManifest {
    /// FNV-1a of the scenario text and the `--set` overrides, hex.
    pub digest: String,
    /// `--set` overrides.
    pub set: Vec<String>,
    /// Policies: label and overrides (`PATH=VALUE`).
    pub policies: Vec<(String, Vec<String>)>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Input files' digests (as [`crate::sweep::Manifest::inputs`]).
    pub inputs: BTreeMap<String, String>,
}

/// The files of one compare run folder.
const COMPARE_RUN_FILES: [&str; 3] = ["summary.json", "timeseries.csv", "point.json"];

/// The point of the complete run in `dir`, if any.
fn load_point(dir: &std::path::Path, id: &str, index: usize) -> Option<Point> {
    crate::sweep::complete_files(dir, id, index, &COMPARE_RUN_FILES)?;
    serde_json::from_str(&std::fs::read_to_string(dir.join("point.json")).ok()?).ok()
}

/// One metric of one variant.
#[derive(Clone, Debug, Serialize)]
pub struct MetricStats {
    /// Value per seed (in seed order).
    pub values: Vec<Option<f64>>,
    /// Mean over seeds where defined.
    pub mean: Option<f64>,
    /// Sample standard deviation over seeds.
    pub sd: Option<f64>,
    /// Paired difference to the baseline (absent for the baseline itself).
    pub diff: Option<PairedCi>,
}

/// One variant's results.
#[derive(Clone, Debug, Serialize)]
pub struct VariantStats {
    /// Label.
    pub label: String,
    /// Its overrides, as `PATH=VALUE`.
    pub overrides: Vec<String>,
    /// Metrics by name.
    pub metrics: BTreeMap<String, MetricStats>,
}

/// The comparison (`compare.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Scenario name.
    pub scenario: String,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Baseline label.
    pub baseline: String,
    /// `--set` overrides for every run.
    pub set: Vec<String>,
    /// How the intervals are computed.
    pub method: String,
    /// The metrics, in report order.
    pub metric_order: Vec<String>,
    /// Variants in command-line order.
    pub policies: Vec<VariantStats>,
    /// The runs' warnings, each once ([`study::distinct_warnings`]).
    pub warnings: Vec<String>,
}

const METHOD: &str = "Common random numbers: every policy runs on the same workload draws for \
each seed. For each metric, d_i = policy_i − baseline_i per seed i; the 95 % confidence \
interval of the mean difference is mean(d) ± t(0.975, n−1) · sd(d) / √n (Student t, n seeds, \
sd with divisor n−1). An interval that excludes 0 is shown bold. Zero-width intervals mean \
the seeds did not change the outcome (e.g. a trace with no seeded transform).";

pub use crate::report::format::{fmt_metric, fmt_num};

/// [`fmt_metric`] with a `+` on values ≥ 0 (differences).
fn fmt_metric_signed(name: &str, v: f64) -> String {
    let s = fmt_metric(name, v);
    if v >= 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// Runs the comparison and writes its outputs.
///
/// # Errors
/// [`BadInput`] for an unknown baseline or no seeds; the first failed run; I/O errors.
pub fn run(
    source: &Source,
    extra: &[Override],
    variants: &[Variant],
    opts: &CompareOptions,
) -> Result<Comparison> {
    if opts.seeds.is_empty() {
        return Err(BadInput("compare needs at least one seed".into()).into());
    }
    let baseline = opts
        .baseline
        .clone()
        .unwrap_or_else(|| variants[0].label.clone());
    let bi = variants
        .iter()
        .position(|v| v.label == baseline)
        .ok_or_else(|| {
            BadInput(format!(
                "baseline `{baseline}` is not one of the policies ({})",
                variants
                    .iter()
                    .map(|v| v.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    let tasks: Vec<(usize, u64)> = (0..variants.len())
        .flat_map(|v| opts.seeds.iter().map(move |&s| (v, s)))
        .collect();
    let set: Vec<String> = extra.iter().map(Override::label).collect();
    let pairs: Vec<Override> = variants
        .iter()
        .flat_map(|v| v.overrides.iter().cloned())
        .collect();
    let manifest = CompareManifest {
        digest: format!(
            "{:016x}",
            study::fnv1a(format!("{}\n{}", source.text, set.join("\n")).as_bytes())
        ),
        set,
        policies: variants
            .iter()
            .map(|v| {
                (
                    v.label.clone(),
                    v.overrides.iter().map(Override::label).collect(),
                )
            })
            .collect(),
        seeds: opts.seeds.clone(),
        inputs: crate::sweep::input_digests(source, extra, &pairs, &opts.trace_dir)?,
    };
    let manifest_path = opts.out.join("compare-manifest.json");
    if opts.resume && manifest_path.exists() {
        let old: Option<CompareManifest> = std::fs::read_to_string(&manifest_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        match old {
            Some(old) if old == manifest => {}
            Some(old) if old.inputs != manifest.inputs && old.digest == manifest.digest => {
                return Err(BadInput(format!(
                    "{}: the comparison's input files changed since its runs were written ({}); their results would be stale: use a fresh --out",
                    opts.out.display(),
                    crate::sweep::changed_inputs(&old.inputs, &manifest.inputs)
                ))
                .into())
            }
            _ => {
                return Err(BadInput(format!(
                    "{} holds another comparison (a different scenario, --set, policies or seeds); use a fresh --out",
                    opts.out.display()
                ))
                .into())
            }
        }
    }
    let run_id = |v: usize, seed: u64| format!("policy={},seed={seed}", variants[v].label);
    let work = || {
        tasks
            .par_iter()
            .enumerate()
            .map(|(index, &(v, seed))| -> Result<(Point, bool)> {
                let dir = opts
                    .out
                    .join("runs")
                    .join(study::safe_name(&variants[v].label))
                    .join(format!("seed-{seed}"));
                let id = run_id(v, seed);
                if opts.resume {
                    if let Some(p) = load_point(&dir, &id, index) {
                        return Ok((p, true));
                    }
                }
                let mut o = extra.to_vec();
                o.extend(variants[v].overrides.iter().cloned());
                let loaded = source.load(&o)?;
                let p = study::run_point(&loaded, seed, &opts.trace_dir, true)
                    .with_context(|| format!("policy `{}`, seed {seed}", variants[v].label))?;
                let mut marker = crate::sweep::RunJson {
                    index,
                    id,
                    seed,
                    overrides: o.iter().map(Override::label).collect(),
                    files: BTreeMap::new(),
                };
                crate::sweep::write_run_with(&dir, &p, &mut marker, &COMPARE_RUN_FILES, |d| {
                    study::write_json(&d.join("point.json"), &p)
                })?;
                Ok((p, false))
            })
            .collect::<Vec<_>>()
    };
    // The top level reads as incomplete until its marker is written, after the report.
    crate::report::outset::begin(&opts.out, crate::report::outset::MARKER)
        .with_context(|| format!("creating {}", opts.out.display()))?;
    study::write_json(&manifest_path, &manifest)?;
    let results = match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .context("starting worker threads")?
            .install(work),
        None => work(),
    };
    let mut points: Vec<Vec<Point>> = vec![Vec::new(); variants.len()];
    let mut resumed = 0;
    for (&(v, _), r) in tasks.iter().zip(results) {
        let (p, was) = r.context("complete runs are kept (rerun with --resume)")?;
        resumed += usize::from(was);
        points[v].push(p);
    }
    if opts.resume {
        errln!("{resumed} of {} runs already complete", tasks.len());
    }
    let scenario = points[0][0].summary["scenario"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let values = |v: usize, m: &str| -> Vec<Option<f64>> {
        points[v]
            .iter()
            .map(|p| metric_value(&p.summary, m))
            .collect()
    };
    // The goodput metrics only when every run has them (scenarios with `[failures]` etc.).
    let tracked: Vec<Metric> = METRICS
        .iter()
        .chain(RELIABILITY_METRICS.iter().filter(|_| {
            points
                .iter()
                .flatten()
                .all(|p| p.summary.get("reliability").is_some())
        }))
        .copied()
        .collect();
    let mut out = Vec::new();
    for (vi, var) in variants.iter().enumerate() {
        let mut metrics = BTreeMap::new();
        for m in &tracked {
            let vals = values(vi, m.name);
            let defined: Vec<f64> = vals.iter().flatten().copied().collect();
            let diff = if vi == bi {
                None
            } else {
                let base = values(bi, m.name);
                let (a, b): (Vec<f64>, Vec<f64>) = vals
                    .iter()
                    .zip(&base)
                    .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
                    .unzip();
                stats::paired(&a, &b)
            };
            metrics.insert(
                m.name.to_string(),
                MetricStats {
                    mean: stats::mean(&defined),
                    sd: stats::sd(&defined),
                    values: vals,
                    diff,
                },
            );
        }
        out.push(VariantStats {
            label: var.label.clone(),
            overrides: var.overrides.iter().map(Override::label).collect(),
            metrics,
        });
    }
    let cmp = Comparison {
        scenario,
        seeds: opts.seeds.clone(),
        baseline: baseline.clone(),
        set: extra.iter().map(Override::label).collect(),
        method: METHOD.to_string(),
        metric_order: tracked.iter().map(|m| m.name.to_string()).collect(),
        policies: out,
        warnings: study::distinct_warnings(points.iter().flatten().map(|p| &p.summary)),
    };
    study::write_json(&opts.out.join("compare.json"), &cmp)?;
    write_csv(&opts.out.join("compare.csv"), &cmp)?;
    let figures = figures(variants, &points, &opts.seeds);
    let rendered = plots::render_all(&opts.out, &figures, opts.png)?;
    let doc = html::ReportDoc {
        title: format!("fleetsim compare: {}", cmp.scenario),
        intro: vec![
            format!(
                "{} policies × {} seeds ({}); baseline `{}`. Per-run summary.json and timeseries.csv are under runs/POLICY/seed-S/.",
                variants.len(),
                opts.seeds.len(),
                opts.seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
                baseline
            ),
            format!(
                "Policies: {}",
                cmp.policies
                    .iter()
                    .map(|p| format!("`{}` = {}", p.label, p.overrides.join(" + ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            if cmp.set.is_empty() {
                String::new()
            } else {
                format!("Overrides for every run: {}", cmp.set.join(", "))
            },
            if cmp.warnings.is_empty() {
                String::new()
            } else {
                format!("Warnings: {}", cmp.warnings.join("; "))
            },
        ],
        tables: {
            let mut t = tables(&cmp, bi);
            t.push(occupancy_table(variants, &points));
            t
        },
        plots: rendered,
        notes: vec![
            METHOD.to_string(),
            "Occupancy, tenant-share and pending-reason plots show the first seed's run; the CDFs pool every seed's measured jobs (x axis log-scaled, values below 1 s drawn at 1 s). The wait CDF is of each job's whole pending time.".into(),
            "Tenant shares: each tenant's share of the GPU-time allocated in the interval; dashed lines are entitlements: each queue's nominal GPU quota over all nominal quotas when the scenario declares quotas, else the equal share 1/n over the n tenants with jobs.".into(),
            "Fragmentation: the fleet's fragmented GPUs (FGD measure, Weng et al. ATC'23, against the typical tasks submitted so far) sampled at each interval start, as a share of the capacity available in that interval; `fragmentation.mean_pct_of_capacity` is its time-weighted mean.".into(),
        ],
        scenario_text: source.text.clone(),
    };
    html::write(&opts.out, &doc)?;
    crate::sweep::complete_top_level(&opts.out)?;
    Ok(cmp)
}

fn write_csv(path: &std::path::Path, c: &Comparison) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "policy",
        "metric",
        "n",
        "mean",
        "sd",
        "diff_mean",
        "diff_ci_low",
        "diff_ci_high",
    ])?;
    for p in &c.policies {
        for m in &c.metric_order {
            let s = &p.metrics[m];
            let d = s.diff;
            w.write_record([
                p.label.clone(),
                m.clone(),
                s.values.iter().flatten().count().to_string(),
                study::fmt_opt(s.mean),
                study::fmt_opt(s.sd),
                study::fmt_opt(d.map(|d| d.mean_diff)),
                study::fmt_opt(d.and_then(|d| d.ci_low)),
                study::fmt_opt(d.and_then(|d| d.ci_high)),
            ])?;
        }
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    crate::report::atomic::write_atomic(path, &bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The names of every list, each once, in order of first appearance.
fn union<'a>(lists: impl Iterator<Item = &'a [String]>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in lists {
        for n in l {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

/// Occupancy per cell and per accelerator model, mean over seeds, for every cell and model
/// any variant has (`–` where a variant has none), from each run's `occupancy_by_cell` and
/// `occupancy_by_model`.
fn occupancy_table(variants: &[Variant], points: &[Vec<Point>]) -> html::Table {
    let mut header = vec!["occupancy of".to_string()];
    header.extend(variants.iter().map(|v| v.label.clone()));
    let mut rows = Vec::new();
    let cells = union(points.iter().map(|ps| ps[0].cells.as_slice()));
    let models = union(points.iter().map(|ps| ps[0].models.as_slice()));
    for (what, key, kind, names) in [
        ("cell", "occupancy_by_cell", "useful", &cells),
        ("cell", "allocated_occupancy_by_cell", "allocated", &cells),
        ("model", "occupancy_by_model", "useful", &models),
        (
            "model",
            "allocated_occupancy_by_model",
            "allocated",
            &models,
        ),
    ] {
        for n in names {
            let mut row = vec![Cell::plain(format!("{what} {n}, {kind}"))];
            for ps in points {
                let vals: Vec<f64> = ps
                    .iter()
                    .filter_map(|p| p.summary[key][n.as_str()].as_f64())
                    .collect();
                row.push(Cell::plain(
                    stats::mean(&vals).map_or_else(|| "–".into(), fmt_num),
                ));
            }
            rows.push(row);
        }
    }
    html::Table {
        title: "Occupancy per cell and accelerator model (mean over seeds)".into(),
        caption: "Useful occupancy (work completed or kept) and allocated occupancy (everything held, lost work and grace included) of every cell and model any policy's fleet has; – where a policy's fleet has none (a what-if that adds or removes a cell).".into(),
        header,
        rows,
    }
}

/// The tracked metric named `name`.
fn tracked_metric(name: &str) -> Option<Metric> {
    METRICS
        .iter()
        .chain(RELIABILITY_METRICS)
        .find(|m| m.name == name)
        .copied()
}

fn tables(c: &Comparison, bi: usize) -> Vec<html::Table> {
    let mut header = vec!["metric".to_string()];
    header.extend(c.policies.iter().map(|p| p.label.clone()));
    let mut means = Vec::new();
    for m in c.metric_order.iter().filter_map(|n| tracked_metric(n)) {
        let vals: Vec<Option<f64>> = c.policies.iter().map(|p| p.metrics[m.name].mean).collect();
        let best = vals
            .iter()
            .flatten()
            .copied()
            .reduce(|a, b| m.better.pick(a, b).unwrap_or(a))
            .filter(|_| m.better != Better::Neither);
        let mut row = vec![Cell::plain(m.name)];
        row.extend(vals.iter().map(|v| {
            Cell {
                text: v
                    .map(|v| fmt_metric(m.name, v))
                    .unwrap_or_else(|| "–".into()),
                best: v.is_some() && *v == best && vals.iter().flatten().any(|x| Some(*x) != best),
                strong: false,
            }
        }));
        means.push(row);
    }
    let mut dheader = vec!["metric".to_string()];
    dheader.extend(
        c.policies
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != bi)
            .map(|(_, p)| format!("{} − {}", p.label, c.baseline)),
    );
    let mut diffs = Vec::new();
    for m in c.metric_order.iter().filter_map(|n| tracked_metric(n)) {
        let mut row = vec![Cell::plain(m.name)];
        for (i, p) in c.policies.iter().enumerate() {
            if i == bi {
                continue;
            }
            row.push(match p.metrics[m.name].diff {
                Some(d) => Cell {
                    text: match (d.ci_low, d.ci_high) {
                        (Some(l), Some(h)) => format!(
                            "{} [{}, {}]",
                            fmt_metric_signed(m.name, d.mean_diff),
                            fmt_metric(m.name, l),
                            fmt_metric(m.name, h)
                        ),
                        _ => format!("{} (n={})", fmt_metric_signed(m.name, d.mean_diff), d.n),
                    },
                    best: false,
                    strong: d.significant(),
                },
                None => Cell::plain("–"),
            });
        }
        diffs.push(row);
    }
    vec![
        html::Table {
            title: "Mean over seeds".into(),
            caption: "Best policy per metric marked ★ (higher is better for occupancy — the useful occupancy: work completed or kept, not lost to preemption or failure — for fairness and completed jobs; lower for the rest; allocated occupancy is shown beside it unmarked; no mark when all are equal). wait_s counts every second a job was pending (submit → first start plus each preemption or failure → next start); first_start_wait_s only submit → first start.".into(),
            header,
            rows: means,
        },
        html::Table {
            title: format!("Paired difference to `{}`, 95 % confidence interval", c.baseline),
            caption: "mean difference [CI low, CI high] over seeds; bold: the interval excludes 0.".into(),
            header: dheader,
            rows: diffs,
        },
    ]
}

fn days(ms: u64, a: u64) -> f64 {
    (ms.saturating_sub(a)) as f64 / 86_400_000.0
}

/// One line per variant over the first seed's time series: `(days since the window start,
/// y(variant index, row))` for every interval where `y` is defined.
fn over_time(
    variants: &[Variant],
    points: &[Vec<Point>],
    y: impl Fn(usize, &crate::metrics::SeriesRow) -> Option<f64>,
) -> Vec<Series> {
    variants
        .iter()
        .zip(points)
        .enumerate()
        .map(|(vi, (v, ps))| {
            let o = &ps[0].occupancy;
            let a = o.window_start.0;
            Series {
                name: v.label.clone(),
                points: o
                    .series
                    .iter()
                    .filter_map(|r| y(vi, r).map(|y| (days(r.start.0, a), y)))
                    .collect(),
            }
        })
        .collect()
}

fn figures(variants: &[Variant], points: &[Vec<Point>], seeds: &[u64]) -> Vec<Figure> {
    let mut figs = Vec::new();
    let s0 = seeds[0];
    // Occupancy over time, per cell — every cell any variant has (a what-if may add one),
    // in order of first appearance; a variant without the cell has no line there — and
    // fleet-wide when there are several cells.
    let cells = union(points.iter().map(|ps| ps[0].cells.as_slice()));
    let mut targets: Vec<(String, Option<&str>)> = cells
        .iter()
        .map(|c| (format!("cell {c}"), Some(c.as_str())))
        .collect();
    if cells.len() > 1 {
        targets.insert(0, ("fleet".into(), None));
    }
    for (name, cell) in targets {
        // (allocated, unproductive, available) GPU-milli·ms of the row in the cell or fleet.
        let parts = |vi: usize, r: &crate::metrics::SeriesRow| -> Option<(u128, u128, u128)> {
            let unprod = |i: usize| r.unproductive_milli.get(i).copied().unwrap_or(0);
            Some(match cell {
                Some(c) => {
                    let i = points[vi][0].cells.iter().position(|x| x == c)?;
                    (
                        *r.allocated_milli.get(i)?,
                        unprod(i),
                        *r.available_milli.get(i)?,
                    )
                }
                None => (
                    r.allocated_milli.iter().sum(),
                    (0..r.allocated_milli.len()).map(unprod).sum(),
                    r.available_milli.iter().sum(),
                ),
            })
        };
        let useful = over_time(variants, points, |vi, r| {
            let (al, un, av) = parts(vi, r)?;
            crate::metrics::ratio(al.saturating_sub(un), av)
        });
        let allocated: Vec<Series> = over_time(variants, points, |vi, r| {
            let (al, _, av) = parts(vi, r)?;
            crate::metrics::ratio(al, av)
        })
        .into_iter()
        .map(|mut s| {
            s.name = format!("{} allocated", s.name);
            s
        })
        .collect();
        figs.push(Figure {
            file: format!("occupancy-{}", study::safe_name(&name.replace("cell ", ""))),
            title: format!("Occupancy over time, {name} (seed {s0})"),
            x_label: "days since the window start".into(),
            y_label: "useful (solid) and allocated (dashed) / available accelerators".into(),
            kind: Kind::LinesWithReference(useful, allocated),
        });
    }
    // Fragmentation over time (FGD measure sampled at each interval start), one line per
    // policy, as a share of the capacity available in that interval.
    let frag_series = over_time(variants, points, |_, r| {
        let f = u128::from(r.frag_milli?);
        let avail: u128 = r.available_milli.iter().sum();
        crate::metrics::ratio(f * u128::from(r.len_ms) * 100, avail)
    });
    if frag_series.iter().any(|s| !s.points.is_empty()) {
        figs.push(Figure {
            file: "fragmentation".into(),
            title: format!("Fragmentation over time (seed {s0})"),
            x_label: "days since the window start".into(),
            y_label: "fragmented GPUs, % of capacity".into(),
            kind: Kind::Lines(frag_series),
        });
    }
    // CDFs pooled over seeds.
    for (what, file, f) in [
        (
            "wait (all pending time)",
            "cdf-wait",
            study::Jobs::waits_s as fn(&study::Jobs) -> Vec<f64>,
        ),
        ("JCT", "cdf-jct", study::Jobs::jcts_s),
    ] {
        let series = variants
            .iter()
            .zip(points)
            .map(|(v, ps)| {
                let mut all: Vec<f64> = ps
                    .iter()
                    .filter_map(|p| p.jobs.as_ref())
                    .flat_map(f)
                    .collect();
                all.sort_by(f64::total_cmp);
                Series {
                    name: v.label.clone(),
                    points: plots::cdf_points(&all, 400),
                }
            })
            .collect();
        figs.push(Figure {
            file: file.into(),
            title: format!("CDF of {what} per policy (all seeds)"),
            x_label: format!("{} (log scale)", what.split(" (").next().unwrap_or(what)),
            y_label: "fraction of jobs".into(),
            kind: Kind::LogCdf(series),
        });
    }
    // Per policy: tenant shares and pending reasons over time.
    for (v, ps) in variants.iter().zip(points) {
        let p = &ps[0];
        let o = &p.occupancy;
        let a = o.window_start.0;
        let rows = &o.series;
        if let (Some(jobs), Some(r0)) = (&p.jobs, rows.first()) {
            let len = r0.len_ms.max(1);
            let n = rows.len();
            let alloc = jobs.tenant_allocation(a, len, n, p.end_ms);
            let totals: Vec<u128> = (0..jobs.tenants.len())
                .map(|t| alloc.iter().map(|b| b[t]).sum())
                .collect();
            let active: Vec<usize> = (0..jobs.tenants.len()).filter(|&t| totals[t] > 0).collect();
            let mut order = active.clone();
            order.sort_by(|&x, &y| totals[y].cmp(&totals[x]).then(x.cmp(&y)));
            let shown: Vec<usize> = order.iter().take(7).copied().collect();
            let rest: Vec<usize> = order.iter().skip(7).copied().collect();
            let share = |k: usize, ts: &[usize]| -> Option<f64> {
                let tot: u128 = alloc[k].iter().sum();
                (tot > 0).then(|| ts.iter().map(|&t| alloc[k][t]).sum::<u128>() as f64 / tot as f64)
            };
            let x = |k: usize| days(a + k as u64 * len, a);
            let mut series: Vec<Series> = shown
                .iter()
                .map(|&t| Series {
                    name: jobs.tenants[t].clone(),
                    points: (0..n)
                        .filter_map(|k| share(k, &[t]).map(|s| (x(k), s)))
                        .collect(),
                })
                .collect();
            if !rest.is_empty() {
                series.push(Series {
                    name: format!("{} others", rest.len()),
                    points: (0..n)
                        .filter_map(|k| share(k, &rest).map(|s| (x(k), s)))
                        .collect(),
                });
            }
            // Entitlement: the tenant's nominal quota over all nominal quotas when the
            // scenario has quotas (summary `fairness.entitlement_basis`), else 1/n.
            let quota_basis =
                p.summary["fairness"]["entitlement_basis"].as_str() == Some("nominal_quota");
            let entitlement = |t: usize| -> Option<f64> {
                p.summary["tenants"][jobs.tenants[t].as_str()]["entitlement"].as_f64()
            };
            let reference = if quota_basis {
                let mut refs: Vec<Series> = shown
                    .iter()
                    .map(|&t| {
                        let e = entitlement(t).unwrap_or(0.0);
                        Series {
                            name: format!("{} entitlement", jobs.tenants[t]),
                            points: vec![(0.0, e), (x(n), e)],
                        }
                    })
                    .collect();
                if !rest.is_empty() {
                    let e: f64 = rest.iter().filter_map(|&t| entitlement(t)).sum();
                    refs.push(Series {
                        name: format!("{} others' entitlement", rest.len()),
                        points: vec![(0.0, e), (x(n), e)],
                    });
                }
                refs
            } else {
                let eq = 1.0 / active.len().max(1) as f64;
                vec![Series {
                    name: format!("equal share 1/{}", active.len()),
                    points: vec![(0.0, eq), (x(n), eq)],
                }]
            };
            figs.push(Figure {
                file: format!("tenant-share-{}", study::safe_name(&v.label)),
                title: format!(
                    "Tenant share of allocated GPU-time vs {}, {} (seed {s0})",
                    if quota_basis {
                        "entitlement"
                    } else {
                        "equal share"
                    },
                    v.label
                ),
                x_label: "days since the window start".into(),
                y_label: "share of allocation".into(),
                kind: Kind::LinesWithReference(series, reference),
            });
        }
        let mut names: Vec<(usize, &str)> = o.pending_reasons.iter().copied().enumerate().collect();
        names.sort_by_key(|&(_, n)| n);
        let series: Vec<Series> = names
            .iter()
            .map(|&(i, name)| Series {
                name: name.to_string(),
                points: rows
                    .iter()
                    .filter(|r| r.len_ms > 0)
                    .map(|r| {
                        let v = r.pending_by_reason_ms.get(i).copied().unwrap_or(0);
                        (days(r.start.0, a), v as f64 / r.len_ms as f64)
                    })
                    .collect(),
            })
            .collect();
        figs.push(Figure {
            file: format!("pending-reasons-{}", study::safe_name(&v.label)),
            title: format!("Pending jobs by reason, {} (seed {s0})", v.label),
            x_label: "days since the window start".into(),
            y_label: "mean pending jobs".into(),
            kind: Kind::Stacked(series),
        });
    }
    figs
}

/// The table `fleetsim compare` prints.
pub fn render(c: &Comparison) -> String {
    let bi = c
        .policies
        .iter()
        .position(|p| p.label == c.baseline)
        .unwrap_or(0);
    // Column heads: a label longer than its column is cut, with a legend of full labels
    // under the table, so that long variant names never shift the columns.
    let head = |label: &str, w: usize| -> String {
        if label.chars().count() <= w {
            label.to_string()
        } else {
            let cut: String = label.chars().take(w - 1).collect();
            format!("{cut}…")
        }
    };
    let mut s = String::new();
    let w = 22;
    // The metric column fits the longest name (`fragmentation.mean_pct_of_capacity`).
    let mw = c
        .metric_order
        .iter()
        .map(|m| m.chars().count() + 1)
        .max()
        .unwrap_or(0)
        .max(24);
    s.push_str(&format!("{:<mw$}", "metric (mean)"));
    for p in &c.policies {
        s.push_str(&format!(" {:>w$}", head(&p.label, w)));
    }
    s.push('\n');
    for m in &c.metric_order {
        s.push_str(&format!("{m:<mw$}"));
        for p in &c.policies {
            s.push_str(&format!(
                " {:>w$}",
                p.metrics[m]
                    .mean
                    .map(|v| fmt_metric(m, v))
                    .unwrap_or_else(|| "-".into())
            ));
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "\npaired difference to `{}` [95 % CI]:\n",
        c.baseline
    ));
    s.push_str(&format!("{:<mw$}", "metric"));
    for (i, p) in c.policies.iter().enumerate() {
        if i != bi {
            s.push_str(&format!(" {:>34}", head(&p.label, 34)));
        }
    }
    s.push('\n');
    for m in &c.metric_order {
        s.push_str(&format!("{m:<mw$}"));
        for (i, p) in c.policies.iter().enumerate() {
            if i == bi {
                continue;
            }
            let t = match p.metrics[m].diff {
                Some(d) => match (d.ci_low, d.ci_high) {
                    (Some(l), Some(h)) => format!(
                        "{} [{}, {}]",
                        fmt_metric_signed(m, d.mean_diff),
                        fmt_metric(m, l),
                        fmt_metric(m, h)
                    ),
                    _ => fmt_metric_signed(m, d.mean_diff),
                },
                None => "-".into(),
            };
            s.push_str(&format!(" {t:>34}"));
        }
        s.push('\n');
    }
    let long: Vec<&VariantStats> = c
        .policies
        .iter()
        .filter(|p| p.label.chars().count() > w)
        .collect();
    if !long.is_empty() {
        s.push_str("\npolicies:\n");
        for p in long {
            s.push_str(&format!("  {} = {}\n", head(&p.label, w), p.label));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #23 defect 4: `LABEL=SETTING[,SETTING…]`.
    #[test]
    fn labelled_variants_group_their_settings() {
        let g = group_items(
            "none=flexibility.spatial=false,both=flexibility.spatial=true,flexibility.platform=true,fast=worst-fit",
        )
        .unwrap();
        let owned =
            |l: &str, p: &[&str]| (l.to_string(), p.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            g,
            vec![
                owned("none", &["flexibility.spatial=false"]),
                owned(
                    "both",
                    &["flexibility.spatial=true", "flexibility.platform=true"]
                ),
                owned("fast", &["worst-fit"]),
            ]
        );
        // Unlabelled items are variants of their own, named by themselves, as before.
        let g =
            group_items("best-fit,placement=first-fit,queue_order=priority+backfill=easy").unwrap();
        assert_eq!(
            g,
            vec![
                owned("best-fit", &["best-fit"]),
                owned("placement=first-fit", &["placement=first-fit"]),
                owned(
                    "queue_order=priority+backfill=easy",
                    &["queue_order=priority", "backfill=easy"]
                ),
            ]
        );
        assert!(group_items("a=b+").is_err());
        // Commas and `+` inside a TOML array or table, or a string, do not split.
        let g = group_items(
            "base=best-fit,more=transforms.add_nodes=[{ cell = \"r,+\", nodes = [{ preset = \"hgx-b200\", count = 2 }] }]",
        )
        .unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(
            g[1].1,
            ["transforms.add_nodes=[{ cell = \"r,+\", nodes = [{ preset = \"hgx-b200\", count = 2 }] }]"]
        );
    }

    #[test]
    fn policy_fields_come_from_the_schema() {
        let f = policy_fields();
        for name in [
            "queue_order",
            "queueing_strategy",
            "placement",
            "cell_selection",
        ] {
            assert!(f.contains(&name), "{f:?}");
        }
    }

    #[test]
    fn bare_names_resolve_to_one_field() {
        let src = Source::read(None).unwrap();
        let v = parse_variants(
            "worst-fit,least-loaded,placement=first-fit+queue_order=priority",
            &src,
            &[],
        )
        .unwrap();
        assert_eq!(v[0].overrides[0].path, "policy.placement");
        assert_eq!(v[1].overrides[0].path, "policy.cell_selection");
        assert_eq!(v[2].overrides.len(), 2);
        let v = parse_variants(
            "a=worst-fit,b=placement=best-fit,queue_order=priority",
            &src,
            &[],
        )
        .unwrap();
        assert_eq!((v[0].label.as_str(), v[1].label.as_str()), ("a", "b"));
        assert_eq!(v[0].overrides[0].path, "policy.placement");
        assert_eq!(v[1].overrides.len(), 2);
        let e = parse_variants("a=placement=best-fit,worst-fit", &src, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("sets `policy.placement` twice"), "{e}");
        let e = parse_variants("first-fit,worst-fit", &src, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("ambiguous") && e.contains("placement"), "{e}");
        let e = parse_variants("nope,worst-fit", &src, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a valid value"), "{e}");
    }
}
