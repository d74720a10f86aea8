//! `timeseries.csv`: one row per interval of the window with time-averaged values: allocated,
//! useful and available accelerators (fleet and per cell), useful occupancy (`occupancy`)
//! and allocated occupancy (`allocated_occupancy`; fleet, per cell, per accelerator model),
//! pending and running jobs, the fleet's fragmentation at the interval's
//! start (FGD measure: GPUs, % of capacity, ratio to idle GPUs; empty before the workload has
//! a GPU task), pending jobs per pending reason (`pending_<reason>`), and allocated
//! accelerators per tenant (`tenant_<name>_allocated_gpus`, tenants in name order; left out
//! when there are more than [`MAX_TENANT_COLUMNS`]).

use std::io::Write;
use std::path::Path;

use fleetsim_policies::PendingReason;

use crate::metrics::{ratio, Occupancy};
use crate::report::atomic::AtomicFile;
use crate::report::format::{milli_as_units, ms_as_secs};

/// Most tenants that get their own time-series column.
pub const MAX_TENANT_COLUMNS: usize = 64;

/// One value of the series, as computed (formatted for `timeseries.csv`, converted for the
/// Arrow table [`crate::report::tables::timeseries_batch`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A time or duration, ms (seconds with three decimals in the CSV).
    Ms(u64),
    /// A time-averaged quantity in thousandths (GPUs, jobs: three decimals in the CSV).
    Milli(u128),
    /// A quantity in thousandths that may be undefined (empty in the CSV).
    MaybeMilli(Option<u128>),
    /// A ratio, or `None` when undefined (empty in the CSV), printed with this many decimals.
    Ratio(Option<f64>, usize),
}

impl Value {
    /// As `timeseries.csv` prints it.
    pub fn text(&self) -> String {
        match *self {
            Value::Ms(ms) => ms_as_secs(ms),
            Value::Milli(m) => milli_as_units(m),
            Value::MaybeMilli(m) => m.map(milli_as_units).unwrap_or_default(),
            Value::Ratio(Some(v), d) => format!("{v:.d$}"),
            Value::Ratio(None, _) => String::new(),
        }
    }

    /// As a number in the table's unit (seconds, GPUs, jobs, ratio); `None` when undefined.
    pub fn number(&self) -> Option<f64> {
        match *self {
            Value::Ms(ms) => Some(ms as f64 / 1000.0),
            Value::Milli(m) => Some(m as f64 / 1000.0),
            Value::MaybeMilli(m) => m.map(|m| m as f64 / 1000.0),
            Value::Ratio(v, _) => v,
        }
    }
}

/// The series: column names and one row of values per interval (every row has a value of
/// the same [`Value`] variant in a given column).
#[derive(Clone, Debug)]
pub struct Series {
    /// Column names, in order.
    pub header: Vec<String>,
    /// Whether each column can be undefined in a row (a ratio: empty in the CSV, null in the
    /// table).
    pub nullable: Vec<bool>,
    /// The rows.
    pub rows: Vec<Vec<Value>>,
}

/// The series for cells named `cells`, accelerator models named `models` and tenants named
/// `tenants` (by tenant id).
pub fn series(cells: &[String], models: &[String], tenants: &[String], o: &Occupancy) -> Series {
    let mut by_name: Vec<(usize, &String)> = tenants.iter().enumerate().collect();
    by_name.sort_by(|a, b| a.1.cmp(b.1));
    if by_name.len() > MAX_TENANT_COLUMNS {
        by_name.clear();
    }
    let mut header: Vec<(String, bool)> = [
        ("time_s", false),
        ("interval_s", false),
        ("allocated_gpus", false),
        ("useful_gpus", false),
        ("available_gpus", false),
        ("occupancy", true),
        ("allocated_occupancy", true),
        ("pending_jobs", false),
        ("running_jobs", false),
        ("fragmented_gpus", true),
        ("fragmented_pct_of_capacity", true),
        ("fragmented_ratio_to_idle", true),
    ]
    .iter()
    .map(|&(s, n)| (s.to_string(), n))
    .collect();
    for c in cells {
        header.push((format!("{c}_allocated_gpus"), false));
        header.push((format!("{c}_available_gpus"), false));
        header.push((format!("{c}_occupancy"), true));
        header.push((format!("{c}_allocated_occupancy"), true));
    }
    for m in models {
        header.push((format!("model_{m}_allocated_gpus"), false));
        header.push((format!("model_{m}_occupancy"), true));
        header.push((format!("model_{m}_allocated_occupancy"), true));
    }
    // Every reason gets a column, in a fixed order, whether it occurred or not.
    let reason_ix: Vec<Option<usize>> = PendingReason::ALL
        .iter()
        .map(|r| o.pending_reasons.iter().position(|&n| n == r.as_str()))
        .collect();
    for r in PendingReason::ALL {
        header.push((format!("pending_{}", r.as_str()), false));
    }
    for (_, t) in &by_name {
        header.push((format!("tenant_{t}_allocated_gpus"), false));
    }
    let mut rows = Vec::with_capacity(o.series.len());
    for row in &o.series {
        let len = row.len_ms as u128;
        let alloc: u128 = row.allocated_milli.iter().sum();
        let avail: u128 = row.available_milli.iter().sum();
        let useful_of =
            |a: &[u128], u: &[u128], i: usize| a[i].saturating_sub(u.get(i).copied().unwrap_or(0));
        let useful: u128 = (0..row.allocated_milli.len())
            .map(|i| useful_of(&row.allocated_milli, &row.unproductive_milli, i))
            .sum();
        let mut rec = vec![
            Value::Ms(row.start.0),
            Value::Ms(row.len_ms),
            Value::Milli(alloc / len),
            Value::Milli(useful / len),
            Value::Milli(avail / len),
            Value::Ratio(ratio(useful, avail), 6),
            Value::Ratio(ratio(alloc, avail), 6),
            Value::Milli(row.pending_ms * 1000 / len),
            Value::Milli(row.running_ms * 1000 / len),
            Value::MaybeMilli(row.frag_milli.map(u128::from)),
            Value::Ratio(
                row.frag_milli
                    .and_then(|f| ratio(u128::from(f) * 100, avail / len)),
                4,
            ),
            Value::Ratio(
                row.frag_milli
                    .and_then(|f| ratio(u128::from(f), u128::from(row.idle_milli))),
                6,
            ),
        ];
        for (i, _) in cells.iter().enumerate() {
            rec.push(Value::Milli(row.allocated_milli[i] / len));
            rec.push(Value::Milli(row.available_milli[i] / len));
            rec.push(Value::Ratio(
                ratio(
                    useful_of(&row.allocated_milli, &row.unproductive_milli, i),
                    row.available_milli[i],
                ),
                6,
            ));
            rec.push(Value::Ratio(
                ratio(row.allocated_milli[i], row.available_milli[i]),
                6,
            ));
        }
        for (i, _) in models.iter().enumerate() {
            rec.push(Value::Milli(row.allocated_model_milli[i] / len));
            rec.push(Value::Ratio(
                ratio(
                    useful_of(&row.allocated_model_milli, &row.unproductive_model_milli, i),
                    row.available_model_milli[i],
                ),
                6,
            ));
            rec.push(Value::Ratio(
                ratio(row.allocated_model_milli[i], row.available_model_milli[i]),
                6,
            ));
        }
        for &i in &reason_ix {
            let v = i.and_then(|i| row.pending_by_reason_ms.get(i).copied());
            rec.push(Value::Milli(v.unwrap_or(0) * 1000 / len));
        }
        for &(i, _) in &by_name {
            let v = row.allocated_tenant_milli.get(i).copied().unwrap_or(0);
            rec.push(Value::Milli(v / len));
        }
        rows.push(rec);
    }
    let (header, nullable) = header.into_iter().unzip();
    Series {
        header,
        nullable,
        rows,
    }
}

/// Appends the `slo_<name>_met_jobs`, `slo_<name>_violated_jobs` and `slo_<name>_attainment`
/// columns (one row per series interval, in the series' order) to `series`.
pub fn append_slo(series: &mut Series, results: &[crate::metrics::slo::SloResult]) {
    for r in results {
        series.header.push(format!("slo_{}_met_jobs", r.name));
        series.header.push(format!("slo_{}_violated_jobs", r.name));
        series.header.push(format!("slo_{}_attainment", r.name));
        series.nullable.extend([false, false, true]);
        for (row, x) in series.rows.iter_mut().zip(&r.per_interval) {
            row.push(Value::Ratio(Some(x.met as f64), 0));
            row.push(Value::Ratio(Some(x.violated as f64), 0));
            row.push(Value::Ratio(x.attainment, 4));
        }
    }
}

/// Appends one column per `(name, level)`: the level's time-mean over each row's interval
/// (three decimals, never empty), rows in the order of `o.series`.
pub fn append_levels(
    series: &mut Series,
    o: &Occupancy,
    columns: &[(String, &crate::metrics::steps::StepLog)],
) {
    for (name, level) in columns {
        series.header.push(name.clone());
        series.nullable.push(false);
        for (rec, row) in series.rows.iter_mut().zip(&o.series) {
            rec.push(Value::Milli(level.mean_milli(row.start, row.len_ms)));
        }
    }
}

/// The `autoscaling_*` columns (nodes up, nodes being provisioned, jobs pending for a
/// scale-up; interval means summed over groups) and the `serving_<service>_*` columns
/// (desired and running replicas, interval means) of a run; none without autoscaled groups
/// or `[serving]`.
pub fn append_autoscaling_and_serving(
    series: &mut Series,
    o: &Occupancy,
    autoscaling: Option<&crate::engine::autoscale::AutoscaleStats>,
    serving: Option<&crate::engine::serving::ServingStats>,
) {
    let mut cols: Vec<(String, &crate::metrics::steps::StepLog)> = Vec::new();
    if let Some(a) = autoscaling {
        cols.push(("autoscaling_nodes_up".into(), &a.levels.nodes_up));
        cols.push((
            "autoscaling_nodes_provisioning".into(),
            &a.levels.nodes_provisioning,
        ));
        cols.push((
            "autoscaling_pending_for_capacity_jobs".into(),
            &a.levels.pending_for_capacity,
        ));
    }
    if let Some(s) = serving {
        for svc in &s.services {
            cols.push((
                format!("serving_{}_desired_replicas", svc.name),
                &svc.desired_levels,
            ));
            cols.push((
                format!("serving_{}_running_replicas", svc.name),
                &svc.running_levels,
            ));
        }
    }
    append_levels(series, o, &cols);
}

/// Writes `timeseries.csv` for cells named `cells`, accelerator models named `models` and
/// tenants named `tenants` (by tenant id).
///
/// # Errors
/// The I/O error from writing.
pub fn write(
    dest: &Path,
    cells: &[String],
    models: &[String],
    tenants: &[String],
    o: &Occupancy,
) -> std::io::Result<()> {
    write_series(dest, &series(cells, models, tenants, o))
}

/// Writes `s` as `timeseries.csv`.
///
/// # Errors
/// The I/O error from writing.
pub fn write_series(dest: &Path, s: &Series) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(AtomicFile::create(dest)?);
    w.write_record(&s.header).map_err(std::io::Error::other)?;
    for row in &s.rows {
        w.write_record(row.iter().map(Value::text))
            .map_err(std::io::Error::other)?;
    }
    let mut f = w
        .into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    f.flush()?;
    f.commit()
}
