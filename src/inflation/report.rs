//! Outputs of the inflation experiment: `curves.csv` (every run's curve and the per-policy
//! median), `summary.json` (per-policy medians at the report point, per-seed values, the
//! comparison with published numbers) and `allocation.svg` (allocated % vs arrived % per
//! policy, the paper's figure shape). All written atomically; nothing depends on the wall
//! clock or the thread count.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

#[cfg(feature = "plots")]
use plotters::prelude::*;
use serde::Serialize;

use super::{median, CurvePoint, Results};
use crate::report::atomic::{write_atomic, AtomicFile};

/// One run's curve, with its seed.
pub type SeedCurve = (u64, Vec<CurvePoint>);

/// Per-policy medians over seeds, at every arrived % (0..=target).
pub struct Medians {
    /// Policy name → curve of medians.
    pub by_policy: Vec<(String, Vec<CurvePoint>)>,
    /// Policy name → per-seed curves (seed order).
    pub per_seed: Vec<(String, Vec<SeedCurve>)>,
}

/// Builds every run's curve and the medians.
pub fn medians(r: &Results) -> Medians {
    let max = r.spec.target_pct;
    let mut by_policy = Vec::new();
    let mut per_seed = Vec::new();
    for &p in &r.spec.policies {
        let curves: Vec<SeedCurve> = r
            .runs
            .iter()
            .filter(|t| t.policy == p)
            .map(|t| (t.seed, t.curve.clone()))
            .collect();
        let mut med = Vec::new();
        for x in 0..=max {
            let pts: Vec<&CurvePoint> = curves
                .iter()
                .filter_map(|(_, c)| c.iter().find(|q| q.arrived_pct == x))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let m = |f: fn(&CurvePoint) -> f64| {
                median(&mut pts.iter().map(|q| f(q)).collect::<Vec<_>>())
            };
            med.push(CurvePoint {
                arrived_pct: x,
                allocated_pct: m(|q| q.allocated_pct),
                fragmented_pct: m(|q| q.fragmented_pct),
                frag_of_idle_pct: m(|q| q.frag_of_idle_pct),
            });
        }
        by_policy.push((p.as_str().to_string(), med));
        per_seed.push((p.as_str().to_string(), curves));
    }
    Medians {
        by_policy,
        per_seed,
    }
}

/// `summary.json` of an inflation run.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct InflationSummary {
    /// Scenario name.
    pub scenario: String,
    /// Description.
    pub description: String,
    /// Always `inflation`.
    #[schemars(extend("const" = "inflation"))]
    pub mode: String,
    /// fleetsim version.
    pub fleetsim_version: String,
    /// [`crate::report::summary::SCHEMA_VERSION`]: the layout of this document.
    pub schema_version: u32,
    /// Nodes in the fleet.
    pub nodes: u64,
    /// GPU capacity, GPUs.
    pub capacity_gpus: f64,
    /// Pods in the pod list.
    pub pods_in_list: u64,
    /// GPU demand of the pod list, % of capacity.
    pub pod_list_demand_pct: f64,
    /// Target arrived demand, % of capacity.
    pub target_pct: u32,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Pods offered per seed.
    pub arrivals_per_seed: Vec<u64>,
    /// FGD typical-pod table: groups kept, share of pods they cover (%), heaviest weight.
    pub typical_pods: TypicalFacts,
    /// Where the per-policy numbers are taken (arrived % of capacity).
    pub report_at_pct: u32,
    /// One entry per policy, in the scenario's order.
    pub policies: Vec<PolicyResult>,
    /// The published numbers and the comparison, when given.
    pub reference: Option<ReferenceCheck>,
    /// With `order_from`: the replayed log and the row-by-row agreement checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<super::Replay>,
}

/// Facts of the typical-pod table.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TypicalFacts {
    /// Groups kept.
    pub groups: u64,
    /// Pods covered by them, % of the list.
    pub coverage_pct: f64,
    /// Weight of the heaviest group.
    pub heaviest_weight: f64,
    /// Summed weight of CPU-only groups.
    pub cpu_only_weight: f64,
}

/// One policy's results at the report point. A median (and a per-seed value) is `null` in
/// JSON when no run reached the report point (NaN in Rust; serde_json writes it as null).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct PolicyResult {
    /// Policy name.
    pub policy: String,
    /// Median over seeds of allocated GPUs, % of capacity.
    #[schemars(with = "Option<f64>")]
    pub median_allocated_pct: f64,
    /// 100 − the above: the paper's unallocated %.
    #[schemars(with = "Option<f64>")]
    pub median_unallocated_pct: f64,
    /// Median fragmented GPUs (FGD's measure), % of capacity.
    #[schemars(with = "Option<f64>")]
    pub median_fragmented_pct: f64,
    /// Median fragmented GPUs, % of idle GPUs.
    #[schemars(with = "Option<f64>")]
    pub median_frag_of_idle_pct: f64,
    /// Per seed (seed order): allocated % at the report point.
    #[schemars(with = "Vec<Option<f64>>")]
    pub allocated_pct_per_seed: Vec<f64>,
    /// Median over seeds of pods that fit nowhere over the whole run.
    pub median_failed_pods: f64,
    /// Share of scored decisions where more than one node had the top score (the rank
    /// decided), all seeds.
    pub tied_decision_share: f64,
    /// Allocated % at the end of the runs (median).
    pub median_final_allocated_pct: f64,
    /// Fragmented GPUs at the end of the runs, % of capacity (median).
    pub median_final_fragmented_pct: f64,
    /// Fragmented GPUs at the end of the runs, % of idle GPUs (median).
    pub median_final_frag_of_idle_pct: f64,
}

/// Measured vs published.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ReferenceCheck {
    /// Where the numbers come from.
    pub source: String,
    /// Accepted |difference|, percentage points.
    pub tolerance_pp: f64,
    /// Per policy: published, measured, difference (pp), within tolerance.
    pub rows: Vec<ReferenceRow>,
    /// Every policy within tolerance.
    pub all_within_tolerance: bool,
    /// Policies ranked by measured unallocated %, as published.
    pub same_order: bool,
}

/// One policy vs the published number.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ReferenceRow {
    /// Policy name.
    pub policy: String,
    /// Published median unallocated %.
    pub published_unallocated_pct: f64,
    /// Measured median unallocated %.
    #[schemars(with = "Option<f64>")]
    pub measured_unallocated_pct: f64,
    /// measured − published, pp.
    #[schemars(with = "Option<f64>")]
    pub diff_pp: f64,
    /// |diff| ≤ tolerance.
    pub within_tolerance: bool,
}

fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// Builds the summary.
pub fn summary(name: &str, description: &str, r: &Results, m: &Medians) -> InflationSummary {
    let at = r.spec.report_at_pct;
    let cap = r.exp.capacity_milli as f64;
    let typical = &r.exp.typical;
    let w = typical.weight_total() as f64;
    let mut policies = Vec::new();
    for (i, (name, med)) in m.by_policy.iter().enumerate() {
        let point = med.iter().find(|q| q.arrived_pct == at);
        let runs: Vec<_> = r
            .runs
            .iter()
            .filter(|t| t.policy.as_str() == name)
            .collect();
        let per_seed: Vec<f64> = m.per_seed[i]
            .1
            .iter()
            .map(|(_, c)| {
                c.iter()
                    .find(|q| q.arrived_pct == at)
                    .map_or(f64::NAN, |q| round4(q.allocated_pct))
            })
            .collect();
        let failed = median(&mut runs.iter().map(|t| t.failed as f64).collect::<Vec<_>>());
        let final_alloc = median(
            &mut runs
                .iter()
                .map(|t| 100.0 * t.last.allocated_milli as f64 / cap)
                .collect::<Vec<_>>(),
        );
        let final_frag = |of_idle: bool| {
            median(
                &mut runs
                    .iter()
                    .map(|t| {
                        let e = t.last;
                        let frag = e.frag_scaled as f64 / w;
                        let base = if of_idle {
                            cap - e.allocated_milli as f64
                        } else {
                            cap
                        };
                        if base > 0.0 {
                            100.0 * frag / base
                        } else {
                            0.0
                        }
                    })
                    .collect::<Vec<_>>(),
            )
        };
        let decided: u64 = runs.iter().map(|t| t.decided).sum();
        let tied: u64 = runs.iter().map(|t| t.tied).sum();
        let alloc = point.map_or(f64::NAN, |q| q.allocated_pct);
        policies.push(PolicyResult {
            policy: name.clone(),
            median_allocated_pct: round4(alloc),
            median_unallocated_pct: round4(100.0 - alloc),
            median_fragmented_pct: round4(point.map_or(f64::NAN, |q| q.fragmented_pct)),
            median_frag_of_idle_pct: round4(point.map_or(f64::NAN, |q| q.frag_of_idle_pct)),
            allocated_pct_per_seed: per_seed,
            median_failed_pods: failed,
            tied_decision_share: if decided == 0 {
                0.0
            } else {
                round4(tied as f64 / decided as f64)
            },
            median_final_allocated_pct: round4(final_alloc),
            median_final_fragmented_pct: round4(final_frag(false)),
            median_final_frag_of_idle_pct: round4(final_frag(true)),
        });
    }
    let reference = r.spec.reference.as_ref().map(|refr| {
        let rows: Vec<ReferenceRow> = policies
            .iter()
            .filter_map(|p| {
                refr.unallocated_pct.get(&p.policy).map(|&published| {
                    let diff = p.median_unallocated_pct - published;
                    ReferenceRow {
                        policy: p.policy.clone(),
                        published_unallocated_pct: published,
                        measured_unallocated_pct: p.median_unallocated_pct,
                        diff_pp: round4(diff),
                        within_tolerance: diff.abs() <= refr.tolerance_pp,
                    }
                })
            })
            .collect();
        let order = |key: fn(&ReferenceRow) -> f64| {
            let mut v: Vec<(f64, String)> =
                rows.iter().map(|x| (key(x), x.policy.clone())).collect();
            v.sort_by(|a, b| b.0.total_cmp(&a.0));
            v.into_iter().map(|(_, p)| p).collect::<Vec<_>>()
        };
        ReferenceCheck {
            source: refr.source.clone(),
            tolerance_pp: refr.tolerance_pp,
            all_within_tolerance: rows.iter().all(|x| x.within_tolerance),
            same_order: order(|x| x.published_unallocated_pct)
                == order(|x| x.measured_unallocated_pct),
            rows,
        }
    });
    let demand: u64 = r.exp.pods.iter().map(|p| p.shape.total_gpu_milli()).sum();
    InflationSummary {
        scenario: name.to_string(),
        description: description.to_string(),
        mode: "inflation".into(),
        fleetsim_version: env!("CARGO_PKG_VERSION").to_string(),
        schema_version: crate::report::summary::SCHEMA_VERSION,
        nodes: r.exp.fleet.nodes().len() as u64,
        capacity_gpus: cap / 1000.0,
        pods_in_list: r.exp.pods.len() as u64,
        pod_list_demand_pct: round4(100.0 * demand as f64 / cap),
        target_pct: r.spec.target_pct,
        seeds: r.seeds.clone(),
        arrivals_per_seed: r.arrivals.iter().map(|&a| a as u64).collect(),
        typical_pods: TypicalFacts {
            groups: typical.tasks().len() as u64,
            coverage_pct: round4(100.0 * w / typical.all_tasks() as f64),
            heaviest_weight: round4(typical.tasks().first().map_or(0, |t| t.count) as f64 / w),
            cpu_only_weight: round4(
                typical
                    .tasks()
                    .iter()
                    .filter(|t| t.num_gpu == 0)
                    .map(|t| t.count)
                    .sum::<u64>() as f64
                    / w,
            ),
        },
        report_at_pct: at,
        policies,
        reference,
        replay: r.replay.clone(),
    }
}

/// Writes `curves.csv`: `policy,seed,arrived_pct,allocated_pct,fragmented_pct,frag_of_idle_pct`,
/// one row per run and arrived %, then the medians with `seed = median`.
///
/// # Errors
/// The I/O error from writing.
pub fn write_curves(dest: &Path, m: &Medians) -> std::io::Result<()> {
    let mut f = AtomicFile::create(dest)?;
    writeln!(
        f,
        "policy,seed,arrived_pct,allocated_pct,fragmented_pct,frag_of_idle_pct"
    )?;
    let row = |f: &mut AtomicFile, p: &str, s: &str, q: &CurvePoint| {
        writeln!(
            f,
            "{p},{s},{},{:.4},{:.4},{:.4}",
            q.arrived_pct, q.allocated_pct, q.fragmented_pct, q.frag_of_idle_pct
        )
    };
    for (p, seeds) in &m.per_seed {
        for (s, c) in seeds {
            for q in c {
                row(&mut f, p, &s.to_string(), q)?;
            }
        }
    }
    for (p, c) in &m.by_policy {
        for q in c {
            row(&mut f, p, "median", q)?;
        }
    }
    f.flush()?;
    f.commit()
}

/// Writes `summary.json`.
///
/// # Errors
/// The I/O error from writing.
pub fn write_summary(dest: &Path, s: &InflationSummary) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(s).expect("summary serializes");
    text.push('\n');
    write_atomic(dest, text.as_bytes())
}

/// Writes `allocation.svg`: median allocated % vs arrived % per policy, with the
/// `allocated = arrived` diagonal, like the paper's Fig. 9.
///
/// # Errors
/// The I/O error from writing; without the `plots` feature, an `Unsupported` error.
#[cfg(feature = "plots")]
pub fn write_plot(dest: &Path, title: &str, m: &Medians, max_pct: u32) -> std::io::Result<()> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<std::io::Error>| std::io::Error::other(e.to_string());
        root.fill(&WHITE).map_err(err)?;
        let x_max = f64::from(max_pct);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..x_max, 0f64..100f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("arrived GPU demand (% of capacity)")
            .y_desc("allocated GPUs (% of capacity)")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, 0.0), (100.0, 100.0)],
                ShapeStyle::from(&BLACK.mix(0.3)).stroke_width(1),
            ))
            .map_err(err)?
            .label("allocated = arrived")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.3)));
        for (i, (p, c)) in m.by_policy.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    c.iter()
                        .map(|q| (f64::from(q.arrived_pct), q.allocated_pct)),
                    ShapeStyle::from(&color).stroke_width(2),
                ))
                .map_err(err)?
                .label(p.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(
                        [(x, y), (x + 20, y)],
                        ShapeStyle::from(&color).stroke_width(2),
                    )
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    write_atomic(dest, svg.as_bytes())
}

/// Without the `plots` feature: refuses (this build links no plotting library).
///
/// # Errors
/// Always.
#[cfg(not(feature = "plots"))]
pub fn write_plot(dest: &Path, _title: &str, _m: &Medians, _max_pct: u32) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!(
            "{}: this build of fleetsim draws no plots (built without the Cargo feature `plots`)",
            dest.display()
        ),
    ))
}

/// The readable table printed by `fleetsim run` for an inflation scenario.
pub fn table(s: &InflationSummary) -> String {
    let mut out = String::new();
    let refs: BTreeMap<&str, &ReferenceRow> = s
        .reference
        .iter()
        .flat_map(|r| r.rows.iter().map(|x| (x.policy.as_str(), x)))
        .collect();
    out.push_str(&format!(
        "{}: {} nodes, {:.0} GPUs, {} pods → {}% of capacity, {} seeds; at arrived = {}%:\n",
        s.scenario,
        s.nodes,
        s.capacity_gpus,
        s.pods_in_list,
        s.target_pct,
        s.seeds.len(),
        s.report_at_pct
    ));
    out.push_str(&format!(
        "{:<16} {:>10} {:>12} {:>11} {:>10} {:>9}\n",
        "policy", "allocated%", "unallocated%", "fragmented%", "published%", "diff pp"
    ));
    for p in &s.policies {
        let (pubd, diff) = match refs.get(p.policy.as_str()) {
            Some(r) => (
                format!("{:.2}", r.published_unallocated_pct),
                format!("{:+.2}", r.diff_pp),
            ),
            None => (String::from("-"), String::from("-")),
        };
        out.push_str(&format!(
            "{:<16} {:>10.2} {:>12.2} {:>11.2} {:>10} {:>9}\n",
            p.policy,
            p.median_allocated_pct,
            p.median_unallocated_pct,
            p.median_fragmented_pct,
            pubd,
            diff
        ));
    }
    if let Some(r) = &s.reference {
        out.push_str(&format!(
            "within ±{} pp of the published medians: {}; same order of policies: {}\n",
            r.tolerance_pp,
            if r.all_within_tolerance { "yes" } else { "NO" },
            if r.same_order { "yes" } else { "NO" }
        ));
    }
    if let Some(r) = &s.replay {
        out.push_str(&format!(
            "replayed {} attempts in the order and node rank of {} ({} arithmetic)\n",
            r.attempts, r.order_from, r.arithmetic
        ));
        for a in &r.agreement {
            out.push_str(&a.describe());
        }
    }
    out
}
