//! `batsim_jobs.csv`: the jobs table in Batsim's dialect, which evalys
//! (`evalys.jobset.JobSet.from_csv`) loads unmodified. Written when the scenario's
//! `[metrics] outputs` lists `"batsim"`, beside `jobs.csv` (which stays fleetsim's own table).
//!
//! **Columns** are those Batsim writes, in its order: `job_id`, `workload_name`, `profile`,
//! `submission_time`, `requested_number_of_resources`, `requested_time`, `success`,
//! `final_state`, `starting_time`, `execution_time`, `finish_time`, `waiting_time`,
//! `turnaround_time`, `stretch`, `allocated_resources`, `consumed_energy`, `metadata`.
//! Times are seconds (three decimals, exact from fleetsim's milliseconds).
//!
//! **Resources are GPUs**, numbered globally: GPU `i` of node `n` is
//! `base(n) + i`, where `base(n)` is the sum of the accelerators of the nodes before `n` in
//! the fleet's node order (cells in declaration order, each cell's nodes in the order they
//! are declared or generated; the order of `fleet.nodes()`). `allocated_resources` is the set
//! of the run's GPU ids in Batsim's interval syntax (`0-3 5`, ascending, runs of consecutive
//! ids joined by `-`). A run that holds no GPU (a CPU-only job) has an empty set.
//!
//! **One row per run.** A job preempted or lost with a node and restarted has one row per run
//! (its execution segments), so that evalys, which counts a row's resources from
//! `starting_time` to `finish_time`, sees exactly the GPU-time fleetsim allocated: a run
//! spans from its start (startup latency included) to the release of its resources (the end
//! of its termination grace when it had one). The first run keeps the job's id (`17`), run
//! `k ≥ 1` after it is `17#k` (the resubmission naming of Batsim's schedulers); all runs
//! keep the job's `submission_time`, so `waiting_time` = run start − submission.
//! Jobs that never held resources (rejected, censored, cancelled in the trace) have no row:
//! Batsim writes only jobs that ran to a completed state; they are in `jobs.csv`.
//!
//! **final_state** (Batsim's values) from fleetsim's (`jobs.csv`'s `final_state`):
//!
//! | fleetsim run | Batsim `final_state` | `success` |
//! |---|---|---|
//! | last run of `COMPLETED_SUCCESSFULLY` | `COMPLETED_SUCCESSFULLY` | 1 |
//! | last run of `COMPLETED_WALLTIME_REACHED` | `COMPLETED_WALLTIME_REACHED` | 0 |
//! | a run stopped by a preemption or a node failure | `COMPLETED_KILLED` | 0 |
//! | the run of a job still running at the end (`RUNNING_AT_END`), cut at the stop | `COMPLETED_KILLED` | 0 |
//!
//! `metadata` keeps fleetsim's view as JSON: `{"fleetsim_state":"…","run":k,"runs":n}`.
//! `requested_time` is the time limit in seconds, `-1` when the job has none;
//! `consumed_energy` is `-1` (Batsim's value when energy is not simulated);
//! `requested_number_of_resources` is the number of GPUs of the run; `stretch` is
//! turnaround / execution time (Batsim's), `inf` for a zero-length run.
//!
//! **Utilisation.** evalys's utilisation (`JobSet.utilisation`, `mean_utilisation`) integrated
//! over fleetsim's measurement window equals fleetsim's allocated GPU-time
//! (`summary.json`'s `allocated_gpu_s`) when every task takes whole GPUs; with
//! `JobSet.from_csv(path, resource_bounds=(0, G − 1))`, `G` the fleet's GPUs, its mean over
//! the window equals `occupancy` (no node down during the run). The two differ where a row
//! cannot say what fleetsim counts: GPUs shared by fractional tasks (`gpu_milli` < 1000:
//! evalys counts a shared GPU once per job on it, fleetsim the GPU-milli bound), a
//! termination grace on a failed node (fleetsim counts it as neither allocated nor
//! available), and capacity that changes during the run (what-if transforms, failures).
//! A task moved onto a hot spare keeps the GPU ids of its last node for its whole run.

use std::collections::BTreeSet;
use std::path::Path;

use crate::engine::{FinalState, JobRow, JobSink, RunEnd};
use crate::report::atomic::AtomicFile;
use crate::report::format::ms_as_secs;

/// The file's name in a run's output folder.
pub const FILE: &str = "batsim_jobs.csv";

/// The header, in Batsim's column order.
pub const HEADER: &[&str] = &[
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
];

/// Global GPU ids: the first id of every node, in the fleet's node order.
#[derive(Clone, Debug, Default)]
pub struct GpuNumbering {
    base: Vec<u64>,
}

impl GpuNumbering {
    /// From each node's accelerator count, in the fleet's node order: node `n`'s first id is
    /// the sum of the counts before it.
    pub fn new(gpus_per_node: impl IntoIterator<Item = u32>) -> GpuNumbering {
        let mut next = 0u64;
        let base = gpus_per_node
            .into_iter()
            .map(|g| {
                let b = next;
                next += u64::from(g);
                b
            })
            .collect();
        GpuNumbering { base }
    }

    /// The global ids of the accelerators in `mask` (bit `i` = accelerator `i`) of node
    /// index `node`. A node index outside the fleet yields none.
    pub fn ids(&self, node: usize, mask: u64) -> impl Iterator<Item = u64> + '_ {
        let base = self.base.get(node).copied();
        (0..64u64)
            .filter(move |i| base.is_some() && mask >> i & 1 == 1)
            .map(move |i| base.unwrap_or(0) + i)
    }
}

/// Batsim's interval syntax of a set of ids: ascending, consecutive ids joined as `a-b`,
/// intervals separated by a space (`{0,1,2,3,5}` → `0-3 5`; empty set → empty string).
pub fn interval_syntax(ids: &BTreeSet<u64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = ids.iter().copied();
    let Some(mut lo) = it.next() else {
        return String::new();
    };
    let mut hi = lo;
    let push = |lo: u64, hi: u64, out: &mut Vec<String>| {
        out.push(if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}-{hi}")
        })
    };
    for id in it {
        if id == hi + 1 {
            hi = id;
        } else {
            push(lo, hi, &mut out);
            lo = id;
            hi = id;
        }
    }
    push(lo, hi, &mut out);
    out.join(" ")
}

/// The Batsim rows of one fleetsim job row (one per run; none when it never ran).
pub fn records(r: &JobRow, workload: &str, gpus: &GpuNumbering) -> Vec<Vec<String>> {
    let n = r.runs.len();
    r.runs
        .iter()
        .enumerate()
        .map(|(k, run)| {
            let (state, success) = match (run.ended, r.state) {
                (RunEnd::Finished, FinalState::WalltimeReached) => {
                    ("COMPLETED_WALLTIME_REACHED", 0)
                }
                (RunEnd::Finished, _) => ("COMPLETED_SUCCESSFULLY", 1),
                (RunEnd::Stopped | RunEnd::AtEnd, _) => ("COMPLETED_KILLED", 0),
            };
            let fleetsim_state = match run.ended {
                RunEnd::Stopped => "STOPPED",
                RunEnd::Finished | RunEnd::AtEnd => r.state.as_str(),
            };
            let ids: BTreeSet<u64> = run
                .gpus
                .iter()
                .flat_map(|&(node, mask)| gpus.ids(node.index(), mask))
                .collect();
            let exec = run.end.saturating_since(run.start).0;
            let wait = run.start.saturating_since(r.submit).0;
            let turnaround = run.end.saturating_since(r.submit).0;
            let stretch = if exec == 0 {
                "inf".to_string()
            } else {
                format!("{:.6}", turnaround as f64 / exec as f64)
            };
            vec![
                if k == 0 {
                    r.id.to_string()
                } else {
                    format!("{}#{k}", r.id)
                },
                workload.to_string(),
                r.name.clone(),
                ms_as_secs(r.submit.0),
                ids.len().to_string(),
                r.requested_time
                    .map_or_else(|| "-1".to_string(), |d| ms_as_secs(d.0)),
                success.to_string(),
                state.to_string(),
                ms_as_secs(run.start.0),
                ms_as_secs(exec),
                ms_as_secs(run.end.0),
                ms_as_secs(wait),
                ms_as_secs(turnaround),
                stretch,
                interval_syntax(&ids),
                "-1".to_string(),
                format!(
                    "{{\"fleetsim_state\":\"{fleetsim_state}\",\"run\":{},\"runs\":{n}}}",
                    k + 1
                ),
            ]
        })
        .collect()
}

/// A [`JobSink`] writing `batsim_jobs.csv` atomically.
pub struct BatsimJobs {
    w: csv::Writer<AtomicFile>,
    workload: String,
    gpus: GpuNumbering,
}

impl BatsimJobs {
    /// Starts `dest`; `workload` fills `workload_name` (the scenario's name).
    ///
    /// # Errors
    /// The I/O error from creating the file.
    pub fn create(dest: &Path, workload: &str, gpus: GpuNumbering) -> std::io::Result<BatsimJobs> {
        let mut w = csv::Writer::from_writer(AtomicFile::create(dest)?);
        w.write_record(HEADER).map_err(std::io::Error::other)?;
        Ok(BatsimJobs {
            w,
            workload: workload.to_string(),
            gpus,
        })
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

impl JobSink for BatsimJobs {
    fn write(&mut self, row: &JobRow) -> std::io::Result<()> {
        for rec in records(row, &self.workload, &self.gpus) {
            self.w.write_record(rec).map_err(std::io::Error::other)?;
        }
        Ok(())
    }
}

/// Two sinks fed the same rows (`jobs.csv` and `batsim_jobs.csv`).
pub struct Tee<'a, A: JobSink, B: JobSink> {
    /// The first sink.
    pub a: &'a mut A,
    /// The second sink.
    pub b: &'a mut B,
}

impl<A: JobSink, B: JobSink> JobSink for Tee<'_, A, B> {
    fn write(&mut self, row: &JobRow) -> std::io::Result<()> {
        self.a.write(row)?;
        self.b.write(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        let s = |v: &[u64]| interval_syntax(&v.iter().copied().collect());
        assert_eq!(s(&[0, 1, 2, 3, 5]), "0-3 5");
        assert_eq!(s(&[]), "");
        assert_eq!(s(&[7]), "7");
        assert_eq!(s(&[2, 4, 5, 9, 10, 11]), "2 4-5 9-11");
    }

    #[test]
    fn numbering() {
        // Nodes of 8, 4 and 8 GPUs: bases 0, 8, 12.
        let g = GpuNumbering::new([8, 4, 8]);
        assert_eq!(g.ids(1, 0b1010).collect::<Vec<_>>(), vec![9, 11]);
        assert_eq!(g.ids(2, 0b1).collect::<Vec<_>>(), vec![12]);
        assert_eq!(g.ids(3, 0b1).count(), 0);
    }
}
