//! `timeseries.csv`: one row per interval of the window with time-averaged values: allocated
//! and available accelerators (fleet and per cell), occupancy (fleet, per cell, per
//! accelerator model), pending and running jobs, the fleet's fragmentation at the interval's
//! start (FGD measure: GPUs, % of capacity, ratio to idle GPUs; empty before the workload has
//! a GPU task), pending jobs per pending reason (`pending_<reason>`), and allocated
//! accelerators per tenant (`tenant_<name>_allocated_gpus`, tenants in name order; left out
//! when there are more than [`MAX_TENANT_COLUMNS`]).

use std::io::Write;
use std::path::Path;

use fleetsim_policies::PendingReason;

use crate::metrics::{ratio, Occupancy};
use crate::report::atomic::AtomicFile;
use crate::report::format::{milli_as_units, ms_as_secs, ratio6};

/// Most tenants that get their own time-series column.
pub const MAX_TENANT_COLUMNS: usize = 64;

/// Writes the series for cells named `cells`, accelerator models named `models` and tenants
/// named `tenants` (by tenant id).
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
    let mut by_name: Vec<(usize, &String)> = tenants.iter().enumerate().collect();
    by_name.sort_by(|a, b| a.1.cmp(b.1));
    if by_name.len() > MAX_TENANT_COLUMNS {
        by_name.clear();
    }
    let mut w = csv::Writer::from_writer(AtomicFile::create(dest)?);
    let mut header: Vec<String> = [
        "time_s",
        "interval_s",
        "allocated_gpus",
        "available_gpus",
        "occupancy",
        "pending_jobs",
        "running_jobs",
        "fragmented_gpus",
        "fragmented_pct_of_capacity",
        "fragmented_ratio_to_idle",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for c in cells {
        header.push(format!("{c}_allocated_gpus"));
        header.push(format!("{c}_available_gpus"));
        header.push(format!("{c}_occupancy"));
    }
    for m in models {
        header.push(format!("model_{m}_allocated_gpus"));
        header.push(format!("model_{m}_occupancy"));
    }
    // Every reason gets a column, in a fixed order, whether it occurred or not.
    let reason_ix: Vec<Option<usize>> = PendingReason::ALL
        .iter()
        .map(|r| o.pending_reasons.iter().position(|&n| n == r.as_str()))
        .collect();
    for r in PendingReason::ALL {
        header.push(format!("pending_{}", r.as_str()));
    }
    for (_, t) in &by_name {
        header.push(format!("tenant_{t}_allocated_gpus"));
    }
    w.write_record(&header).map_err(std::io::Error::other)?;
    for row in &o.series {
        let len = row.len_ms as u128;
        let alloc: u128 = row.allocated_milli.iter().sum();
        let avail: u128 = row.available_milli.iter().sum();
        let mut rec = vec![
            ms_as_secs(row.start.0),
            ms_as_secs(row.len_ms),
            milli_as_units(alloc / len),
            milli_as_units(avail / len),
            ratio6(ratio(alloc, avail)),
            milli_as_units(row.pending_ms * 1000 / len),
            milli_as_units(row.running_ms * 1000 / len),
            row.frag_milli
                .map(|f| milli_as_units(u128::from(f)))
                .unwrap_or_default(),
            row.frag_milli
                .and_then(|f| ratio(u128::from(f) * 100, avail / len))
                .map(|v| format!("{v:.4}"))
                .unwrap_or_default(),
            row.frag_milli
                .and_then(|f| ratio(u128::from(f), u128::from(row.idle_milli)))
                .map(|v| format!("{v:.6}"))
                .unwrap_or_default(),
        ];
        for (i, _) in cells.iter().enumerate() {
            rec.push(milli_as_units(row.allocated_milli[i] / len));
            rec.push(milli_as_units(row.available_milli[i] / len));
            rec.push(ratio6(ratio(
                row.allocated_milli[i],
                row.available_milli[i],
            )));
        }
        for (i, _) in models.iter().enumerate() {
            rec.push(milli_as_units(row.allocated_model_milli[i] / len));
            rec.push(ratio6(ratio(
                row.allocated_model_milli[i],
                row.available_model_milli[i],
            )));
        }
        for &i in &reason_ix {
            let v = i.and_then(|i| row.pending_by_reason_ms.get(i).copied());
            rec.push(milli_as_units(v.unwrap_or(0) * 1000 / len));
        }
        for &(i, _) in &by_name {
            let v = row.allocated_tenant_milli.get(i).copied().unwrap_or(0);
            rec.push(milli_as_units(v / len));
        }
        w.write_record(&rec).map_err(std::io::Error::other)?;
    }
    let mut f = w
        .into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    f.flush()?;
    f.commit()
}
