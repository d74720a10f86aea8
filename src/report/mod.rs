//! Output writers: `summary.json`, `jobs.csv`, `timeseries.csv` (all written atomically) and
//! the readable summary table printed by `fleetsim run`.

pub mod atomic;
pub mod batsim;
pub mod format;
pub mod html;
pub mod jobs_csv;
pub mod kueue;
pub mod outset;
pub mod plots;
pub mod summary;
pub mod table;
#[cfg(feature = "parquet")]
pub mod tables;
pub mod timeseries;
pub mod tracked;

/// Sends every row to each sink in order (`jobs.csv`, `jobs.parquet`, `batsim_jobs.csv` and
/// the SLO tracker in one run).
pub struct Tee<'a> {
    /// The sinks, in order.
    pub sinks: Vec<&'a mut dyn crate::engine::JobSink>,
}

impl crate::engine::JobSink for Tee<'_> {
    fn write(&mut self, row: &crate::engine::JobRow) -> std::io::Result<()> {
        for s in &mut self.sinks {
            s.write(row)?;
        }
        Ok(())
    }
}
