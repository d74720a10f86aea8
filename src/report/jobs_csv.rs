//! `jobs.csv`: one row per job, streamed as each job reaches its final state (completions
//! and rejections in event order, then censored and still-running jobs in job-id order).
//!
//! Columns follow Batsim's `jobs.csv` names where they exist, so analysis scripts written for
//! Batsim read it: `job_id`, `submission_time`, `starting_time`, `finish_time`,
//! `waiting_time`, `execution_time`, `turnaround_time`, `stretch`,
//! `requested_number_of_resources` (here: tasks of the gang), `requested_time`,
//! `allocated_resources` (node names, space-separated, one per task), `final_state`. Times
//! are seconds with millisecond precision; empty means "does not apply".
//!
//! After Batsim's columns and ours (`preemptions`, `reason`, `measured`): `last_start_time`
//! (start of the last run, after preemptions or failures), `failures` (runs lost to node
//! failures), `lost_gpu_s` (accelerator-time lost to them and to preemption, GPU-s) and
//! `pending_reason` (the reason the job waited longest, summed over all its waits),
//! `service_time` (time it ran, over all its runs) and `pending_time` (every second it was
//! pending: submit → first start plus each stop → the next start, grace included; the
//! summary's `wait_s` of the job, Tiresias's pending time). `waiting_time` is Batsim's
//! (first start − submission: the summary's `first_start_wait_s`). `stretch` is
//! turnaround / run time and `bounded_slowdown` max(1, turnaround / max(run time, 10 s)),
//! over the job's run time as the summary computes them.

use std::path::Path;

use crate::engine::{JobRow, JobSink};
use crate::report::atomic::AtomicFile;
use crate::report::format::ms_as_secs;

/// The header, in column order.
pub const HEADER: &[&str] = &[
    "job_id",
    "name",
    "tenant",
    "queue",
    "qos",
    "priority",
    "submission_time",
    "starting_time",
    "finish_time",
    "waiting_time",
    "execution_time",
    "turnaround_time",
    "stretch",
    "bounded_slowdown",
    "requested_number_of_resources",
    "num_gpu",
    "gpu_milli",
    "cpu_milli",
    "mem_mib",
    "gpus",
    "requested_time",
    "cell",
    "allocated_resources",
    "preemptions",
    "final_state",
    "reason",
    "measured",
    "last_start_time",
    "failures",
    "lost_gpu_s",
    "pending_reason",
    "service_time",
    "pending_time",
];

/// A [`JobSink`] writing `jobs.csv` atomically.
pub struct JobsCsv {
    w: csv::Writer<AtomicFile>,
    rows: u64,
}

impl JobsCsv {
    /// Starts `dest`.
    ///
    /// # Errors
    /// The I/O error from creating the file.
    pub fn create(dest: &Path) -> std::io::Result<JobsCsv> {
        let mut w = csv::Writer::from_writer(AtomicFile::create(dest)?);
        w.write_record(HEADER).map_err(std::io::Error::other)?;
        Ok(JobsCsv { w, rows: 0 })
    }

    /// Rows written.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Renames the file into place.
    ///
    /// # Errors
    /// The I/O error from committing.
    pub fn commit(self) -> std::io::Result<()> {
        self.w
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))?
            .commit()
    }
}

/// The values of a row that are computed from several fields, shared by `jobs.csv` and the
/// Arrow table ([`crate::report::tables`]) so both hold the same numbers.
#[derive(Clone, Copy, Debug)]
pub struct Derived {
    /// `waiting_time`: first start − submission, ms.
    pub wait_ms: Option<u64>,
    /// `turnaround_time`: finish − submission, ms.
    pub turnaround_ms: Option<u64>,
    /// `stretch`: turnaround / run time (`None` without a finish or with a zero run time).
    pub stretch: Option<f64>,
    /// `bounded_slowdown`: max(1, turnaround / max(run time, 10 s)).
    pub bounded_slowdown: Option<f64>,
    /// `gpus`: accelerators of the whole gang, GPU-milli.
    pub gpus_milli: u128,
    /// `lost_gpu_s`: accelerator-time lost, GPU-milli·s (truncated from GPU-milli·ms).
    pub lost_gpu_milli_s: u128,
}

/// The computed values of `r`.
pub fn derived(r: &JobRow) -> Derived {
    let turnaround = r.finish.map(|f| (f - r.submit).0);
    // As the summary computes them: over the job's run time (not finish − first start,
    // which includes the time lost to preemptions and the waits between runs).
    let e = r.runtime_ms;
    Derived {
        wait_ms: r.start.map(|s| (s - r.submit).0),
        turnaround_ms: turnaround,
        stretch: turnaround.filter(|_| e > 0).map(|t| t as f64 / e as f64),
        bounded_slowdown: turnaround.map(|t| (t as f64 / e.max(10_000) as f64).max(1.0)),
        gpus_milli: u128::from(r.shape.total_gpu_milli()) * u128::from(r.tasks),
        lost_gpu_milli_s: r.lost_gpu_milli_ms as u128 / 1000,
    }
}

/// The fields of one row, as text.
pub fn record(r: &JobRow) -> Vec<String> {
    let opt = |v: Option<u64>| v.map(ms_as_secs).unwrap_or_default();
    let d = derived(r);
    let six = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    vec![
        r.id.to_string(),
        r.name.clone(),
        r.tenant.clone(),
        r.queue.clone(),
        r.qos.clone().unwrap_or_default(),
        r.priority.to_string(),
        ms_as_secs(r.submit.0),
        opt(r.start.map(|s| s.0)),
        opt(r.finish.map(|f| f.0)),
        opt(d.wait_ms),
        opt(r.run_ms),
        opt(d.turnaround_ms),
        six(d.stretch),
        six(d.bounded_slowdown),
        r.tasks.to_string(),
        r.shape.num_gpu.to_string(),
        r.shape.gpu_milli.to_string(),
        r.shape.cpu_milli.to_string(),
        r.shape.mem_mib.to_string(),
        crate::report::format::milli_as_units(d.gpus_milli),
        opt(r.requested_time.map(|d| d.0)),
        r.cell.clone().unwrap_or_default(),
        r.nodes.join(" "),
        r.preemptions.to_string(),
        r.state.as_str().to_string(),
        r.reason.clone().unwrap_or_default(),
        (if r.measured { "1" } else { "0" }).to_string(),
        opt(r.last_start.map(|s| s.0)),
        r.failures.to_string(),
        crate::report::format::milli_as_units(d.lost_gpu_milli_s),
        r.pending_reason
            .map(|p| p.as_str().to_string())
            .unwrap_or_default(),
        opt(r.service_ms),
        opt(r.pending_ms),
    ]
}

impl JobSink for JobsCsv {
    fn write(&mut self, row: &JobRow) -> std::io::Result<()> {
        self.w
            .write_record(record(row))
            .map_err(std::io::Error::other)?;
        self.rows += 1;
        Ok(())
    }
}
