//! What a trace reads as, before a run trusts it: row counts, skipped rows by reason, the
//! reader's notes, time span, job size and runtime distributions, offered load over time
//! and per tenant. Backs `fleetsim trace inspect`.
//!
//! Definitions (all from the jobs the reader produced, after its documented rules):
//!
//! * A job's **demand** is its total GPU-milli (`tasks × num_gpu × gpu_milli`); sizes are
//!   reported in GPUs (demand / 1000).
//! * **Runtime** statistics cover the jobs that ran (not
//!   [`RecordedKind::NeverRan`]); quantiles by nearest rank
//!   ([`crate::metrics::stats::nearest_rank`]).
//! * **Offered load** assumes every job that ran holds its demand from its recorded start
//!   (or its submit time when none is recorded) for its runtime — no queueing. Per bucket of
//!   `bucket_s` seconds from t = 0 it is the mean number of GPUs demanded; the **peak** is the
//!   exact instantaneous maximum (a job ending at `t` is released before one starting at
//!   `t` is counted).
//! * **GPU-hours** = demand × runtime.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{JobSpec, JobStream, RecordedKind, Skipped, TraceError};
use crate::metrics::stats::{dist_ms, nearest_rank, Dist};

/// Runtime quantiles beyond [`Dist`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RuntimeStats {
    /// Count, mean, p50, p90, p99, p999, max (seconds).
    #[serde(flatten)]
    pub dist: Dist,
    /// Minimum, seconds.
    pub min: Option<f64>,
    /// 10th percentile, seconds.
    pub p10: Option<f64>,
    /// 25th percentile, seconds.
    pub p25: Option<f64>,
    /// 75th percentile, seconds.
    pub p75: Option<f64>,
    /// Jobs with runtime exactly 0.
    pub zero: u64,
}

/// One tenant's share of the trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TenantStats {
    /// Jobs.
    pub jobs: u64,
    /// GPU-hours of the jobs that ran.
    pub gpu_hours: f64,
}

/// One bucket of the offered-load series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadBucket {
    /// Bucket start, seconds since t = 0.
    pub start_s: u64,
    /// Jobs submitted in the bucket.
    pub submitted: u64,
    /// Mean GPUs demanded over the bucket.
    pub mean_gpus: f64,
}

/// Jobs of one total size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeCount {
    /// Total GPUs of the job (demand / 1000; fractional for shared GPUs).
    pub gpus: f64,
    /// Jobs of that size.
    pub jobs: u64,
}

/// Counts of the recorded kinds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RecordedCounts {
    /// Normal jobs.
    pub normal: u64,
    /// Jobs running before the trace window opened (field case B18).
    pub pre_existing: u64,
    /// Jobs that never ran (reported as cancelled).
    pub never_ran: u64,
    /// Jobs with a recorded start (replay mode starts them then).
    pub with_recorded_start: u64,
}

/// The result of inspecting a trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Inspection {
    /// Jobs produced.
    pub jobs: u64,
    /// Elastic jobs among them (native rows with `min_gpus`, `max_gpus`, `work_gpu_s`,
    /// `throughput`, or a `pollux` workload's jobs): their size and length are decided by the
    /// scenario's `[elastic]` table while they run, so they are left out of every other
    /// figure (sizes, gangs, run times, GPU-hours, peak, offered load, tenants' GPU-hours);
    /// their submits are in the submit span.
    pub elastic: u64,
    /// Rows skipped by the format's convention, by reason.
    pub skipped: Skipped,
    /// Sum of `skipped`.
    pub skipped_total: u64,
    /// The reader's notes (statuses, censoring, header values, fields not simulated).
    pub notes: Skipped,
    /// Recorded kinds.
    pub recorded: RecordedCounts,
    /// First submit, seconds since t = 0.
    pub first_submit_s: Option<f64>,
    /// Last submit, seconds since t = 0.
    pub last_submit_s: Option<f64>,
    /// Last end (recorded start or submit, plus runtime), seconds since t = 0.
    pub last_end_s: Option<f64>,
    /// Jobs by total GPUs demanded, smallest first (GPUs 0 = CPU-only).
    pub size_gpus: Vec<SizeCount>,
    /// Jobs by gang size (tasks).
    pub tasks: BTreeMap<u32, u64>,
    /// Runtime distribution of the jobs that ran, seconds.
    pub runtime_s: RuntimeStats,
    /// Total GPU-hours of the jobs that ran.
    pub gpu_hours: f64,
    /// Exact peak of GPUs demanded if every job ran at its recorded start or submit time.
    pub peak_gpus: f64,
    /// Width of an offered-load bucket, seconds.
    pub bucket_s: u64,
    /// Offered load per bucket, from the bucket holding the first submit.
    pub offered_load: Vec<LoadBucket>,
    /// Per tenant.
    pub tenants: BTreeMap<String, TenantStats>,
}

/// The most offered-load buckets [`inspect`] makes; wider buckets are used when the span
/// would need more (the width given or chosen is raised to `span / MAX_LOAD_BUCKETS + 1` s).
pub const MAX_LOAD_BUCKETS: u64 = 10_000;

/// The bucket width chosen when none is given: a day for spans of 3 days or more, an hour
/// for 3 hours or more, else a minute (seconds).
pub fn auto_bucket_s(span_ms: u64) -> u64 {
    if span_ms >= 3 * 86_400_000 {
        86_400
    } else if span_ms >= 3 * 3_600_000 {
        3_600
    } else {
        60
    }
}

/// Reads the whole stream and summarizes it (see the module docs for each definition).
/// `bucket_s` = offered-load bucket width in seconds (`None`: [`auto_bucket_s`]).
///
/// # Errors
/// The first [`TraceError`] of the stream.
pub fn inspect(
    stream: &mut dyn JobStream,
    bucket_s: Option<u64>,
) -> Result<Inspection, TraceError> {
    let mut jobs = 0u64;
    let mut elastic = 0u64;
    let mut recorded = RecordedCounts::default();
    let mut size_gpus: BTreeMap<u64, u64> = BTreeMap::new();
    let mut tasks: BTreeMap<u32, u64> = BTreeMap::new();
    let mut runtimes: Vec<u64> = Vec::new();
    let mut tenants: BTreeMap<String, (u64, u128)> = BTreeMap::new();
    // (start ms, end ms, demand GPU-milli) of the jobs that ran.
    let mut spans: Vec<(u64, u64, u64)> = Vec::new();
    let mut submits: Vec<u64> = Vec::new();
    let mut total_gpu_milli_ms: u128 = 0;
    for job in &mut *stream {
        let job: JobSpec = job?;
        jobs += 1;
        submits.push(job.submit.0);
        if job.elastic.is_some() {
            // No recorded size or length to report: both are decided while it runs.
            elastic += 1;
            tenants.entry(job.tenant.to_string()).or_insert((0, 0)).0 += 1;
            continue;
        }
        match job.recorded {
            RecordedKind::Normal => recorded.normal += 1,
            RecordedKind::PreExisting => recorded.pre_existing += 1,
            RecordedKind::NeverRan => recorded.never_ran += 1,
        }
        if job.recorded_start.is_some() {
            recorded.with_recorded_start += 1;
        }
        let demand = job.total_gpu_milli();
        *size_gpus.entry(demand).or_insert(0) += 1;
        *tasks.entry(job.tasks).or_insert(0) += 1;
        let t = tenants.entry(job.tenant.to_string()).or_insert((0, 0));
        t.0 += 1;
        if job.recorded != RecordedKind::NeverRan {
            runtimes.push(job.runtime.0);
            let start = job.recorded_start.unwrap_or(job.submit).0;
            let end = start.saturating_add(job.runtime.0);
            let work = u128::from(demand) * u128::from(job.runtime.0);
            t.1 += work;
            total_gpu_milli_ms += work;
            spans.push((start, end, demand));
        }
    }
    let first_submit = submits.iter().min().copied();
    let last_submit = submits.iter().max().copied();
    let last_end = spans.iter().map(|s| s.1).max();
    let origin = first_submit.unwrap_or(0);
    let horizon = last_end
        .unwrap_or(origin)
        .max(last_submit.unwrap_or(origin));
    // At most MAX_LOAD_BUCKETS buckets, whatever the span: a trace whose times reach
    // 10^12 s must not ask for a 10^9-element series (found by fuzzing).
    let span_s = (horizon - origin) / 1000;
    let min_width_s = span_s / MAX_LOAD_BUCKETS + 1;
    let bucket_s = bucket_s
        .unwrap_or_else(|| auto_bucket_s(horizon - origin))
        .max(min_width_s)
        .max(1);
    let width = bucket_s * 1000;
    let first_bucket = origin / width;
    let n_buckets = (horizon / width - first_bucket + 1) as usize;
    // GPU-milli·ms per bucket: partial overlaps added directly, full buckets through a
    // difference array of demand.
    let mut work = vec![0u128; n_buckets];
    let mut full = vec![0i128; n_buckets + 1];
    let mut submitted = vec![0u64; n_buckets];
    for &s in &submits {
        submitted[(s / width - first_bucket) as usize] += 1;
    }
    let mut events: Vec<(u64, bool, u64)> = Vec::with_capacity(spans.len() * 2);
    for &(s, e, g) in &spans {
        if e > s && g > 0 {
            events.push((s, true, g));
            events.push((e, false, g));
            let (bs, be) = (s / width, (e - 1) / width);
            let (is, ie) = ((bs - first_bucket) as usize, (be - first_bucket) as usize);
            let g128 = u128::from(g);
            if bs == be {
                work[is] += g128 * u128::from(e - s);
            } else {
                work[is] += g128 * u128::from((bs + 1) * width - s);
                work[ie] += g128 * u128::from(e - be * width);
                full[is + 1] += g as i128;
                full[ie] -= g as i128;
            }
        }
    }
    let mut running: i128 = 0;
    let mut offered_load = Vec::with_capacity(n_buckets);
    for i in 0..n_buckets {
        running += full[i];
        let w = work[i] + running as u128 * u128::from(width);
        offered_load.push(LoadBucket {
            start_s: (first_bucket + i as u64) * bucket_s,
            submitted: submitted[i],
            mean_gpus: w as f64 / width as f64 / 1000.0,
        });
    }
    // Releases (false) sort before arrivals (true) at the same instant.
    events.sort_unstable();
    let (mut now, mut peak) = (0u64, 0u64);
    for (_, arrive, g) in events {
        if arrive {
            now += g;
            peak = peak.max(now);
        } else {
            now -= g;
        }
    }
    let runtime_s = {
        let zero = runtimes.iter().filter(|&&r| r == 0).count() as u64;
        let dist = dist_ms(&mut runtimes);
        // dist_ms reorders by selection; the extra quantiles below need a sorted sample.
        runtimes.sort_unstable();
        let q = |p: f64| nearest_rank(&runtimes, p).map(|v| v as f64 / 1000.0);
        RuntimeStats {
            dist,
            min: runtimes.first().map(|&v| v as f64 / 1000.0),
            p10: q(0.10),
            p25: q(0.25),
            p75: q(0.75),
            zero,
        }
    };
    let hours = |milli_ms: u128| milli_ms as f64 / 1000.0 / 3_600_000.0;
    let skipped = stream.skipped();
    Ok(Inspection {
        jobs,
        elastic,
        skipped_total: skipped.values().sum(),
        skipped,
        notes: stream.notes(),
        recorded,
        first_submit_s: first_submit.map(|v| v as f64 / 1000.0),
        last_submit_s: last_submit.map(|v| v as f64 / 1000.0),
        last_end_s: last_end.map(|v| v as f64 / 1000.0),
        size_gpus: size_gpus
            .into_iter()
            .map(|(k, jobs)| SizeCount {
                gpus: k as f64 / 1000.0,
                jobs,
            })
            .collect(),
        tasks,
        runtime_s,
        gpu_hours: hours(total_gpu_milli_ms),
        peak_gpus: peak as f64 / 1000.0,
        bucket_s,
        offered_load: if jobs == 0 { Vec::new() } else { offered_load },
        tenants: tenants
            .into_iter()
            .map(|(k, (jobs, w))| {
                (
                    k,
                    TenantStats {
                        jobs,
                        gpu_hours: hours(w),
                    },
                )
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    /// Fuzzing found a pod list whose deletion time (1.25·10¹² s) made inspect ask for a
    /// 35 GB offered-load series; the bucket count is now bounded.
    #[test]
    fn huge_spans_get_bounded_buckets() {
        let mut j = crate::workload::JobSpec::simple("p", "t", 0, 1, 0);
        j.runtime = fleetsim_policies::SimDuration(1_253_749_629_600_000);
        let mut s = crate::workload::VecStream::new(vec![j], Default::default());
        let i = super::inspect(&mut s, None).unwrap();
        assert!(
            i.offered_load.len() as u64 <= super::MAX_LOAD_BUCKETS + 1,
            "{}",
            i.offered_load.len()
        );
        let mut j2 = crate::workload::JobSpec::simple("q", "t", 0, 1, 0);
        j2.runtime = fleetsim_policies::SimDuration(u64::MAX / 2);
        let mut s = crate::workload::VecStream::new(vec![j2], Default::default());
        assert!(
            super::inspect(&mut s, Some(1)).unwrap().offered_load.len() as u64
                <= super::MAX_LOAD_BUCKETS + 1
        );
    }

    use super::*;
    use crate::workload::VecStream;

    #[test]
    fn hand_computed_load() {
        // a: 2 GPUs over 0–90 s; b: 1 GPU over 30–150 s; c never ran.
        let a = JobSpec::simple("a", "t1", 0, 2, 90);
        let b = JobSpec::simple("b", "t2", 30, 1, 120);
        let mut c = JobSpec::simple("c", "t2", 40, 4, 0);
        c.recorded = RecordedKind::NeverRan;
        let mut s = VecStream::new(vec![a, b, c], Skipped::new());
        let i = inspect(&mut s, Some(60)).unwrap();
        assert_eq!(i.jobs, 3);
        assert_eq!(i.recorded.never_ran, 1);
        assert_eq!(i.peak_gpus, 3.0);
        // Bucket 0–60: 2·60 + 1·30 = 150 GPU·s → 2.5; 60–120: 2·30 + 60 = 120 → 2;
        // 120–180: 30 → 0.5.
        let means: Vec<f64> = i.offered_load.iter().map(|b| b.mean_gpus).collect();
        assert_eq!(means, [2.5, 2.0, 0.5]);
        assert_eq!(i.offered_load[0].submitted, 3);
        assert_eq!(i.runtime_s.dist.count, 2);
        assert_eq!(i.runtime_s.dist.p50, Some(90.0));
        assert_eq!(i.tenants["t2"].jobs, 2);
        assert!((i.gpu_hours - (180.0 + 120.0) / 3600.0).abs() < 1e-12);
        assert_eq!(i.size_gpus[1], SizeCount { gpus: 2.0, jobs: 1 });
    }

    /// An elastic row has no recorded size or length: it is counted as elastic and left out
    /// of the figures a rigid job's recorded run makes (here a zero-length 1-GPU job would
    /// otherwise show).
    #[test]
    fn elastic_jobs_are_counted_apart() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.csv");
        std::fs::write(
            &p,
            "id,submit_s,tenant,num_gpu,runtime_s,min_gpus,max_gpus,work_gpu_s,throughput\n\
             R,0,t,2,90,,,,\n\
             E,30,u,,,1,4,100,linear\n",
        )
        .unwrap();
        let mut s =
            crate::workload::open_trace(crate::workload::TraceFormat::Native, &p, false).unwrap();
        let i = inspect(s.as_mut(), Some(60)).unwrap();
        assert_eq!((i.jobs, i.elastic), (2, 1));
        assert_eq!(i.recorded.normal, 1);
        assert_eq!(i.runtime_s.dist.count, 1);
        assert_eq!(i.size_gpus, [SizeCount { gpus: 2.0, jobs: 1 }]);
        assert_eq!(i.tasks.values().sum::<u64>(), 1);
        // Only R's 2 GPUs over 0–90 s: 180 GPU-s.
        assert!((i.gpu_hours - 180.0 / 3600.0).abs() < 1e-12);
        assert_eq!(i.peak_gpus, 2.0);
        assert_eq!(i.last_submit_s, Some(30.0));
        assert_eq!((i.tenants["u"].jobs, i.tenants["u"].gpu_hours), (1, 0.0));
    }
}
