//! Output writers: `summary.json`, `jobs.csv`, `timeseries.csv` (all written atomically) and
//! the readable summary table printed by `fleetsim run`.

pub mod atomic;
pub mod batsim;
pub mod format;
pub mod html;
pub mod jobs_csv;
pub mod outset;
pub mod plots;
pub mod summary;
pub mod table;
pub mod tables;
pub mod timeseries;
pub mod tracked;
