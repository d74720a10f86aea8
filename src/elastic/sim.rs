//! The elastic-job engine: an event loop over cells' GPU pools in integer milliseconds.
//!
//! Jobs arrive at their submit time, are sized by the policy stage
//! [`fleetsim_policies::elastic::plan_sizes`] and drain their work at their current rate
//! ([`ThroughputModel::rate_milli`]). At one instant the order is: (1) completions, in job
//! input order; (2) arrivals, in input order; (3) one sizing pass, applied in input order.
//!
//! Mechanics (all integer):
//! - a job's remaining work is kept in thousandths of a size-1 GPU-millisecond
//!   (`work_gpu_ms · 1000` at submit);
//! - from the time progress resumes, `rate(n)` thousandths drain per millisecond at `n` GPUs;
//! - a start has no overhead; a **resize** at `t` first credits the progress made up to `t`,
//!   then makes no progress for the resize overhead: progress resumes at `t + overhead`
//!   (a resize during an overhead restarts it);
//! - the completion time is `resume + ceil(remaining / rate)` milliseconds;
//! - a job holds its GPUs during an overhead (they count in its GPU-seconds).
//!
//! Capacity is a pool of whole GPUs per cell: node-level placement of elastic jobs is not
//! modelled (a job's replicas are fungible within its cell).

use super::throughput::{ModelError, ThroughputModel};
use crate::metrics::stats::nearest_rank;
use fleetsim_policies::elastic::{plan_sizes, ElasticJobView};
use fleetsim_policies::{ElasticKind, JobId, SimDuration, SimTime};

/// One elastic (or rigid: `min = max`) job.
#[derive(Clone, Debug, PartialEq)]
pub struct ElasticJob {
    /// The job's name, for reports.
    pub name: String,
    /// Submission time (milliseconds).
    pub submit: SimTime,
    /// Priority; higher first.
    pub priority: i32,
    /// Fewest GPUs, ≥ 1.
    pub min: u32,
    /// Most GPUs, ≥ `min`.
    pub max: u32,
    /// Work in GPU-milliseconds at size 1.
    pub work_gpu_ms: u64,
    /// How fast the work drains at each size.
    pub model: ThroughputModel,
}

/// The engine's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ElasticConfig {
    /// The sizing policy.
    pub kind: ElasticKind,
    /// No-progress time after each resize.
    pub resize_overhead: SimDuration,
    /// Whole GPUs of each cell, in cell order.
    pub cells: Vec<u32>,
}

/// Bad elastic input, naming the job (when one is at fault) and the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}field `{field}`: {message}", job.as_ref().map(|j| format!("job `{j}`: ")).unwrap_or_default())]
pub struct ElasticError {
    /// The job's name, if a job is at fault.
    pub job: Option<String>,
    /// The field (`min`, `max`, `resize_overhead_s`, `throughput.speedup`, …).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl ElasticError {
    fn job(job: &str, field: &str, message: String) -> ElasticError {
        ElasticError {
            job: Some(job.into()),
            field: field.into(),
            message,
        }
    }
}

/// The resize overhead in milliseconds from seconds (rounded to the nearest millisecond).
///
/// # Errors
/// Field `resize_overhead_s` when negative or not finite.
pub fn overhead_from_secs(s: f64) -> Result<SimDuration, ElasticError> {
    if !s.is_finite() || s < 0.0 {
        return Err(ElasticError {
            job: None,
            field: "resize_overhead_s".into(),
            message: format!("{s} is not a non-negative number of seconds"),
        });
    }
    if s > MAX_SECONDS as f64 {
        return Err(ElasticError {
            job: None,
            field: "resize_overhead_s".into(),
            message: format!("{s} s is above the limit of {MAX_SECONDS} s"),
        });
    }
    Ok(SimDuration::from_secs_f64_rounded(s))
}

/// Largest submit time or resize overhead an elastic scenario may give, seconds (10^10 s,
/// about 317 years): larger values are refused, so that converting them to milliseconds
/// cannot overflow.
pub const MAX_SECONDS: u64 = 10_000_000_000;

/// Largest `work_gpu_s` of one job, GPU-seconds (10^12, about 32,000 GPU-years).
pub const MAX_WORK_GPU_S: u64 = 1_000_000_000_000;

/// Checks every job against the fleet.
///
/// # Errors
/// `min` of 0; `max` below `min` (min > max); `min` above every cell's GPUs; `cells` empty;
/// a bad throughput model ([`ThroughputModel::validate`]).
pub fn validate(cfg: &ElasticConfig, jobs: &[ElasticJob]) -> Result<(), ElasticError> {
    let largest = cfg
        .cells
        .iter()
        .copied()
        .max()
        .ok_or_else(|| ElasticError {
            job: None,
            field: "cells".into(),
            message: "no cell: give at least one cell's GPU count".into(),
        })?;
    for j in jobs {
        if j.min == 0 {
            return Err(ElasticError::job(&j.name, "min", "must be ≥ 1".into()));
        }
        if j.max < j.min {
            return Err(ElasticError::job(
                &j.name,
                "max",
                format!("max {} is below min {}", j.max, j.min),
            ));
        }
        if j.min > largest {
            return Err(ElasticError::job(
                &j.name,
                "min",
                format!(
                    "min {} is above every cell's capacity (largest cell: {largest} GPUs)",
                    j.min
                ),
            ));
        }
        j.model
            .validate(j.min, j.max)
            .map_err(|ModelError { field, message }| ElasticError::job(&j.name, &field, message))?;
    }
    Ok(())
}

/// What happened to one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOutcome {
    /// The job's name.
    pub name: String,
    /// Submission time.
    pub submit: SimTime,
    /// Start time.
    pub start: SimTime,
    /// Completion time.
    pub finish: SimTime,
    /// The cell it ran in.
    pub cell: usize,
    /// Number of resizes.
    pub resizes: u32,
    /// GPU-milliseconds held (size × time, overheads included).
    pub gpu_ms: u64,
    /// `(time, size)` at its start and at every resize.
    pub sizes: Vec<(SimTime, u32)>,
}

impl JobOutcome {
    /// JCT = finish − submit.
    pub fn jct(&self) -> SimDuration {
        self.finish.saturating_since(self.submit)
    }
}

/// JCT statistics (seconds; quantiles by nearest rank) and totals over a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ElasticSummary {
    /// Jobs run.
    pub jobs: usize,
    /// Mean JCT, seconds.
    pub jct_mean_s: f64,
    /// Median JCT, seconds.
    pub jct_p50_s: f64,
    /// 95th-percentile JCT, seconds.
    pub jct_p95_s: f64,
    /// GPU-seconds held by all jobs.
    pub gpu_seconds: f64,
    /// Resizes over all jobs.
    pub resizes: u64,
    /// Last completion, seconds.
    pub makespan_s: f64,
}

/// Summarises outcomes (every job has finished).
pub fn summarize(out: &[JobOutcome]) -> ElasticSummary {
    let mut jct: Vec<u64> = out.iter().map(|o| o.jct().0).collect();
    jct.sort_unstable();
    let sum: u128 = jct.iter().map(|&v| u128::from(v)).sum();
    let ms = |v: Option<u64>| v.unwrap_or(0) as f64 / 1000.0;
    ElasticSummary {
        jobs: out.len(),
        jct_mean_s: if out.is_empty() {
            0.0
        } else {
            sum as f64 / out.len() as f64 / 1000.0
        },
        jct_p50_s: ms(nearest_rank(&jct, 0.50)),
        jct_p95_s: ms(nearest_rank(&jct, 0.95)),
        gpu_seconds: out.iter().map(|o| u128::from(o.gpu_ms)).sum::<u128>() as f64 / 1000.0,
        resizes: out.iter().map(|o| u64::from(o.resizes)).sum(),
        makespan_s: out.iter().map(|o| o.finish.0).max().unwrap_or(0) as f64 / 1000.0,
    }
}

#[derive(Clone, Copy)]
struct Live {
    cell: usize,
    size: u32,
    rate: u64,
    remaining: u128,
    resume: SimTime,
    since: SimTime,
}

impl Live {
    /// Saturates at `u64::MAX` ms, which [`simulate`] refuses as an overflow.
    fn finish(&self) -> SimTime {
        let left =
            u64::try_from(self.remaining.div_ceil(u128::from(self.rate))).unwrap_or(u64::MAX);
        SimTime(self.resume.0.saturating_add(left))
    }
    /// Credits progress and held GPU-ms up to `t`.
    fn advance(&mut self, t: SimTime, gpu_ms: &mut u64) {
        if t > self.resume {
            let done = u128::from(t.0 - self.resume.0) * u128::from(self.rate);
            self.remaining = self.remaining.saturating_sub(done);
            self.resume = t;
        }
        *gpu_ms = gpu_ms.saturating_add(u64::from(self.size).saturating_mul(t.0 - self.since.0));
        self.since = t;
    }
}

/// Runs `jobs` to completion on `cfg`'s cells; outcomes are in input order.
///
/// # Errors
/// Bad input ([`validate`]).
pub fn simulate(cfg: &ElasticConfig, jobs: &[ElasticJob]) -> Result<Vec<JobOutcome>, ElasticError> {
    validate(cfg, jobs)?;
    let n = jobs.len();
    let mut arrival: Vec<usize> = (0..n).collect();
    arrival.sort_by_key(|&i| (jobs[i].submit, i));
    let mut next_arrival = 0;
    let mut arrived = vec![false; n];
    let mut live: Vec<Option<Live>> = vec![None; n];
    let mut out: Vec<Option<JobOutcome>> = vec![None; n];
    let mut started: Vec<Option<JobOutcome>> = vec![None; n];
    let mut t = match arrival.first() {
        Some(&i) => jobs[i].submit,
        None => return Ok(Vec::new()),
    };
    loop {
        // (1) completions.
        for i in 0..n {
            if let Some(mut l) = live[i] {
                if l.finish() == t {
                    let mut o = started[i].take().expect("a running job has an outcome");
                    l.advance(t, &mut o.gpu_ms);
                    o.finish = t;
                    out[i] = Some(o);
                    live[i] = None;
                }
            }
        }
        // (2) arrivals.
        while next_arrival < n && jobs[arrival[next_arrival]].submit == t {
            arrived[arrival[next_arrival]] = true;
            next_arrival += 1;
        }
        // (3) one sizing pass over the arrived, unfinished jobs.
        let active: Vec<usize> = (0..n).filter(|&i| arrived[i] && out[i].is_none()).collect();
        let views: Vec<ElasticJobView> = active
            .iter()
            .map(|&i| ElasticJobView {
                id: JobId(i as u32),
                priority: jobs[i].priority,
                submit: jobs[i].submit,
                seq: i as u64,
                min: jobs[i].min,
                max: jobs[i].max,
                running: live[i].map(|l| (l.cell, l.size)),
            })
            .collect();
        let plan = plan_sizes(cfg.kind, &cfg.cells, &views);
        for (k, &i) in active.iter().enumerate() {
            let Some((cell, size)) = plan[k] else {
                continue;
            };
            let j = &jobs[i];
            match &mut live[i] {
                None => {
                    live[i] = Some(Live {
                        cell,
                        size,
                        rate: j.model.rate_milli(size),
                        remaining: u128::from(j.work_gpu_ms) * 1000,
                        resume: t,
                        since: t,
                    });
                    started[i] = Some(JobOutcome {
                        name: j.name.clone(),
                        submit: j.submit,
                        start: t,
                        finish: t,
                        cell,
                        resizes: 0,
                        gpu_ms: 0,
                        sizes: vec![(t, size)],
                    });
                }
                Some(l) if l.size != size => {
                    let o = started[i].as_mut().expect("a running job has an outcome");
                    l.advance(t, &mut o.gpu_ms);
                    l.size = size;
                    l.rate = j.model.rate_milli(size);
                    l.resume = SimTime(t.0.saturating_add(cfg.resize_overhead.0));
                    o.resizes += 1;
                    o.sizes.push((t, size));
                }
                Some(_) => {}
            }
        }
        let next_finish = live.iter().flatten().map(Live::finish).min();
        let next_arr = arrival.get(next_arrival).map(|&i| jobs[i].submit);
        t = match (next_finish, next_arr) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => break,
        };
    }
    let out: Vec<JobOutcome> = out
        .into_iter()
        .map(|o| o.expect("every job finishes: each fits some cell when it is empty"))
        .collect();
    // Times and GPU-ms saturate instead of wrapping; a saturated one is refused.
    if let Some(o) = out
        .iter()
        .find(|o| o.finish.0 == u64::MAX || o.gpu_ms == u64::MAX)
    {
        return Err(ElasticError::job(
            &o.name,
            "work_gpu_s",
            "its finish time or GPU-milliseconds held exceed 2^64: the work, the submit time or the resize overhead is too large".into(),
        ));
    }
    Ok(out)
}
