//! Queue order: which pending job is considered next (the Kubernetes `QueueSort` extension
//! point; Kueue orders every queue by priority, then creation time).
//!
//! An order maps a job to an [`OrderKey`]; ascending keys are considered first. A queue is a
//! sorted set of keys, so a pass costs no sorting.
//!
//! # Static and dynamic orders
//! A *static* order's key depends on the job alone, and a pending job's attained service and
//! kept progress do not change while it waits, so [`Fifo`], [`Priority`], [`Sjf`], [`Srtf`]
//! and [`Las`] are computed once, at enqueue (and again when a preempted job is requeued):
//! `O(log n)` per job, nothing per pass. A *dynamic* order ([`Multifactor`], whose age and
//! fair-share factors move with time) says so through [`QueueOrder::rekey_interval`]; the
//! scheduler then recomputes every pending key at a pass once that interval has passed
//! (Slurm's `PriorityCalcPeriod`), `O(n log n)` per re-key, and keeps the `O(log n)` queues in
//! between.
//!
//! | order | key (smallest first) | follows |
//! |---|---|---|
//! | [`Fifo`] | submit, seq | FIFO |
//! | [`Priority`] | −priority, submit, seq | Kueue / Slurm base order |
//! | [`Sjf`] | estimated run time, submit, seq | shortest job first on user estimates (Slurm `SchedulerType` studies; Feitelson) |
//! | [`Srtf`] | estimated remaining time, submit, seq | shortest remaining time first |
//! | [`Las`] | LAS queue of the attained GPU-time, submit, seq | Tiresias discretized 2D-LAS (Gu et al., NSDI'19) |
//! | [`Multifactor`] | −(weighted age + size + fair-share + QOS), submit, seq | Slurm `priority/multifactor` |

use crate::job::{PendingJob, Tier};
use crate::time::{SimDuration, SimTime};

/// A total order key: `(primary, submit ms, seq)`, compared lexicographically, smallest first.
/// `seq` (input position) makes every key unique, so no two jobs ever tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OrderKey(pub i64, pub u64, pub u64);

/// What a dynamic order may read besides the job.
#[derive(Clone, Copy, Debug, Default)]
pub struct OrderCtx<'a> {
    /// The current time.
    pub now: SimTime,
    /// Fair-share factor per queue (by [`crate::QueueId`]), per-mille, Slurm's `2^(−U/S)`;
    /// queues beyond the slice count as 1000 (no usage).
    pub fair_share_permille: &'a [u32],
    /// Accelerators in the fleet, GPU-milli (the job-size factor's denominator).
    pub fleet_gpu_milli: u64,
}

/// A queue-order policy.
pub trait QueueOrder: Send + Sync {
    /// The name scenarios use.
    fn name(&self) -> &'static str;
    /// The job's key with no context (a dynamic order evaluates it at the job's submit time
    /// with neutral factors).
    fn key(&self, job: &PendingJob) -> OrderKey;
    /// The job's key at `ctx` (static orders ignore `ctx`).
    fn key_at(&self, job: &PendingJob, ctx: &OrderCtx<'_>) -> OrderKey {
        let _ = ctx;
        self.key(job)
    }
    /// For a dynamic order, how often pending keys must be recomputed; `None` for a static one.
    fn rekey_interval(&self) -> Option<SimDuration> {
        None
    }
    /// True when the order reads the queues' decayed usage ([`OrderCtx::fair_share_permille`]):
    /// the scheduler then keeps it (half-life default 7 days) even when no admission order
    /// asks for it.
    fn keeps_decayed_usage(&self) -> bool {
        false
    }
    /// Compares two jobs: `Less` means `a` is considered first.
    fn cmp(&self, a: &PendingJob, b: &PendingJob) -> std::cmp::Ordering {
        self.key(a).cmp(&self.key(b))
    }
}

/// First in, first out: submit time, then input sequence.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fifo;

impl QueueOrder for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn key(&self, job: &PendingJob) -> OrderKey {
        OrderKey(0, job.submit.0, job.seq)
    }
}

/// Priority (higher first), then submit time, then input sequence — Kueue's and Slurm's base
/// order, and the order the field cases assume.
#[derive(Clone, Copy, Debug, Default)]
pub struct Priority;

impl QueueOrder for Priority {
    fn name(&self) -> &'static str {
        "priority"
    }
    fn key(&self, job: &PendingJob) -> OrderKey {
        OrderKey(-(job.priority as i64), job.submit.0, job.seq)
    }
}

/// Saturating `u64 → i64` for key components.
fn key_i64(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

/// Shortest job first: the estimated total run time (`runtime_estimate + done`, i.e. the
/// user's time limit or the oracle's run time), then submit time and sequence. A job without
/// an estimate sorts after every job with one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sjf;

impl QueueOrder for Sjf {
    fn name(&self) -> &'static str {
        "sjf"
    }
    fn key(&self, job: &PendingJob) -> OrderKey {
        let est = job
            .runtime_estimate
            .map_or(u64::MAX, |e| e.0.saturating_add(job.done.0));
        OrderKey(key_i64(est), job.submit.0, job.seq)
    }
}

/// Shortest remaining time first: the estimated time left (`runtime_estimate`, which already
/// excludes kept progress), then submit time and sequence; no estimate sorts last. Static
/// while a job waits: its remaining time only changes while it runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Srtf;

impl QueueOrder for Srtf {
    fn name(&self) -> &'static str {
        "srtf"
    }
    fn key(&self, job: &PendingJob) -> OrderKey {
        let est = job.runtime_estimate.map_or(u64::MAX, |e| e.0);
        OrderKey(key_i64(est), job.submit.0, job.seq)
    }
}

/// Tiresias' discretized two-dimensional least-attained-service (Gu et al., "Tiresias: A GPU
/// Cluster Manager for Distributed Deep Learning", NSDI'19, §4.1): a job's attained service is
/// GPUs × time it has run; the thresholds split it into queues 0, 1, … (queue `k` holds jobs
/// whose service is at least `thresholds[k-1]` and below `thresholds[k]`); lower queues go
/// first, FIFO (submit, sequence) within a queue. A pending job's service does not grow, so
/// the key is static; running jobs move down as they run, which matters for LAS preemption.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Las {
    /// Ascending thresholds in GPU·ms (GPU-milli × ms / 1000).
    pub thresholds_gpu_ms: Vec<u64>,
}

impl Default for Las {
    /// Tiresias' two-queue setting with one threshold of 3,200 GPU-seconds (its §6 default
    /// scale), here as 3.2·10⁶ GPU·ms.
    fn default() -> Las {
        Las {
            thresholds_gpu_ms: vec![3_200_000],
        }
    }
}

impl Las {
    /// LAS queues from ascending thresholds in GPU-seconds, each rounded to the nearest
    /// GPU·ms (a negative or NaN threshold gives 0; callers check them first, as
    /// [`crate::SchedulerSpec::validate`] does).
    pub fn from_gpu_s(thresholds_gpu_s: &[f64]) -> Las {
        Las {
            thresholds_gpu_ms: thresholds_gpu_s
                .iter()
                .map(|&t| (t * 1000.0).round() as u64)
                .collect(),
        }
    }

    /// When `job` entered LAS queue `level` (its current one): its recorded demotion into
    /// it, else its submit time.
    pub fn entered(&self, job: &PendingJob, level: usize) -> SimTime {
        match job.las_entered {
            Some((l, at)) if l == level => at,
            _ => job.submit,
        }
    }

    /// The first instant a run that started at `start` with `attained_gpu_ms` of earlier
    /// service, on `gpu_milli` accelerators, and has `attained_now_gpu_ms` now, reaches the
    /// threshold above its current queue; `None` in the last queue or without accelerators.
    /// Exact: attained service at `t` is `attained + ⌊(t − start) · gpu_milli / 1000⌋`, so
    /// the crossing is `start + ⌈(threshold − attained) · 1000 / gpu_milli⌉`.
    pub fn next_crossing(
        &self,
        attained_gpu_ms: u64,
        gpu_milli: u64,
        start: SimTime,
        attained_now_gpu_ms: u64,
    ) -> Option<SimTime> {
        let t = *self
            .thresholds_gpu_ms
            .get(self.level(attained_now_gpu_ms))?;
        if gpu_milli == 0 {
            return None;
        }
        let left = t.saturating_sub(attained_gpu_ms);
        // In u64 while it fits (the same value as in u128, without its division).
        let ms = match left.checked_mul(1000) {
            Some(need) => need.div_ceil(gpu_milli),
            None => {
                let need = left as u128 * 1000;
                need.div_ceil(gpu_milli as u128).min(u64::MAX as u128) as u64
            }
        };
        Some(SimTime(start.0.saturating_add(ms)))
    }

    /// The LAS queue of a job that has received `attained_gpu_ms`.
    pub fn level(&self, attained_gpu_ms: u64) -> usize {
        self.thresholds_gpu_ms
            .iter()
            .take_while(|&&t| attained_gpu_ms >= t)
            .count()
    }
}

impl QueueOrder for Las {
    fn name(&self) -> &'static str {
        "las"
    }
    /// (LAS queue, when the job entered it, sequence): a demoted job queues behind the jobs
    /// already waiting in its new queue.
    fn key(&self, job: &PendingJob) -> OrderKey {
        let level = self.level(job.attained_gpu_ms);
        OrderKey(level as i64, self.entered(job, level).0, job.seq)
    }
}

/// Slurm's multifactor priority (<https://slurm.schedmd.com/priority_multifactor.html>):
/// `priority = Σ weight_i × factor_i / 1000`, each factor in per-mille (0–1000):
///
/// * **age**: time pending since submit, capped at `max_age` (`PriorityMaxAge`), over it;
/// * **job size**: the job's accelerators over the fleet's (`favor_small` inverts it, as
///   `PriorityFavorSmall`);
/// * **fair-share**: the queue's `2^(−U/S)` factor ([`crate::fairshare::fair_share_factor`]) on
///   decayed usage;
/// * **QOS**: the tier (production 1000, batch 500, best-effort 0).
///
/// Higher priority first, then submit time, then sequence. Age and fair-share move with time:
/// keys are recomputed every `rekey_interval` (`PriorityCalcPeriod`, default 5 minutes).
#[derive(Clone, Copy, Debug)]
pub struct Multifactor {
    /// `PriorityWeightAge`.
    pub weight_age: u64,
    /// `PriorityWeightJobSize`.
    pub weight_job_size: u64,
    /// `PriorityWeightFairshare`.
    pub weight_fair_share: u64,
    /// `PriorityWeightQOS`.
    pub weight_qos: u64,
    /// `PriorityMaxAge`.
    pub max_age: SimDuration,
    /// `PriorityFavorSmall`.
    pub favor_small: bool,
    /// `PriorityCalcPeriod`.
    pub rekey: SimDuration,
}

impl Default for Multifactor {
    /// Slurm's documented example weights (fair-share dominant) and defaults (`PriorityMaxAge`
    /// 7 days, `PriorityCalcPeriod` 5 minutes).
    fn default() -> Multifactor {
        Multifactor {
            weight_age: 1000,
            weight_job_size: 1000,
            weight_fair_share: 10_000,
            weight_qos: 2000,
            max_age: SimDuration::from_secs(7 * 86_400),
            favor_small: false,
            rekey: SimDuration::from_secs(300),
        }
    }
}

impl Multifactor {
    /// The job's priority at `ctx` (higher first).
    pub fn priority(&self, job: &PendingJob, ctx: &OrderCtx<'_>) -> u64 {
        let age = ctx.now.saturating_since(job.submit).0.min(self.max_age.0);
        let age_f = if self.max_age.0 == 0 {
            0
        } else {
            age as u128 * 1000 / self.max_age.0 as u128
        };
        let size = if ctx.fleet_gpu_milli == 0 {
            0
        } else {
            (job.total_gpu_milli() as u128 * 1000 / ctx.fleet_gpu_milli as u128).min(1000)
        };
        let size_f = if self.favor_small { 1000 - size } else { size };
        let fs_f = ctx
            .fair_share_permille
            .get(job.queue.index())
            .copied()
            .unwrap_or(1000) as u128;
        let qos_f: u128 = match job.tier {
            Tier::Production => 1000,
            Tier::Batch => 500,
            Tier::BestEffort => 0,
        };
        let p = self.weight_age as u128 * age_f
            + self.weight_job_size as u128 * size_f
            + self.weight_fair_share as u128 * fs_f
            + self.weight_qos as u128 * qos_f;
        (p / 1000).min(u64::MAX as u128) as u64
    }
}

impl QueueOrder for Multifactor {
    fn keeps_decayed_usage(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "multifactor"
    }
    fn key(&self, job: &PendingJob) -> OrderKey {
        let ctx = OrderCtx {
            now: job.submit,
            ..OrderCtx::default()
        };
        self.key_at(job, &ctx)
    }
    fn key_at(&self, job: &PendingJob, ctx: &OrderCtx<'_>) -> OrderKey {
        OrderKey(-key_i64(self.priority(job, ctx)), job.submit.0, job.seq)
    }
    fn rekey_interval(&self) -> Option<SimDuration> {
        Some(self.rekey)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::QueueId;
    use crate::resources::TaskShape;

    fn job(seq: u64, est_s: Option<u64>, attained_gpu_s: u64) -> PendingJob {
        PendingJob {
            seq,
            submit: SimTime::from_secs(seq),
            shape: TaskShape::whole_gpus(1),
            tasks: 1,
            runtime_estimate: est_s.map(SimDuration::from_secs),
            attained_gpu_ms: attained_gpu_s * 1000,
            ..PendingJob::default()
        }
    }

    #[test]
    fn sjf_srtf_las_orders() {
        let (a, b, c) = (
            job(0, Some(100), 0),
            job(1, Some(10), 5000),
            job(2, None, 0),
        );
        assert!(Sjf.key(&b) < Sjf.key(&a) && Sjf.key(&a) < Sjf.key(&c));
        let mut done = job(3, Some(50), 0);
        done.done = SimDuration::from_secs(60);
        assert!(Srtf.key(&done) < Srtf.key(&a) && Sjf.key(&a) < Sjf.key(&done));
        let las = Las {
            thresholds_gpu_ms: vec![1_000_000, 10_000_000],
        };
        assert_eq!(las.level(999_999), 0);
        assert_eq!(las.level(1_000_000), 1);
        assert_eq!(las.level(u64::MAX), 2);
        assert!(las.key(&a) < las.key(&b), "b has 5000 GPU-s of service");
        assert!(las.key(&a) < las.key(&c), "same queue: FIFO");
    }

    #[test]
    fn multifactor_weighs_age_and_fair_share() {
        let m = Multifactor {
            weight_age: 1000,
            weight_job_size: 0,
            weight_fair_share: 1000,
            weight_qos: 0,
            max_age: SimDuration::from_secs(100),
            ..Multifactor::default()
        };
        let mut a = job(0, None, 0);
        a.queue = QueueId(0);
        let mut b = job(50, None, 0);
        b.queue = QueueId(1);
        let fs = [200, 900];
        let ctx = OrderCtx {
            now: SimTime::from_secs(100),
            fair_share_permille: &fs,
            fleet_gpu_milli: 8000,
        };
        // a: age 1000 + fs 200 = 1200; b: age 500 + fs 900 = 1400.
        assert_eq!(m.priority(&a, &ctx), 1200);
        assert_eq!(m.priority(&b, &ctx), 1400);
        assert!(m.key_at(&b, &ctx) < m.key_at(&a, &ctx));
        assert!(m.rekey_interval().is_some() && Fifo.rekey_interval().is_none());
    }
}

/// Slurm multifactor priority weights (`queue_order = { name = "multifactor", … }` or
/// `[policy.multifactor]`); each `None` takes [`Multifactor::default`]'s value.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct MultifactorParams {
    /// `PriorityWeightAge` (default 1000).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub weight_age: Option<u64>,
    /// `PriorityWeightJobSize` (default 1000).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub weight_job_size: Option<u64>,
    /// `PriorityWeightFairshare` (default 10000).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub weight_fair_share: Option<u64>,
    /// `PriorityWeightQOS`, on the tier (default 2000).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub weight_qos: Option<u64>,
    /// `PriorityMaxAge`, seconds (default 7 days).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub max_age_s: Option<f64>,
    /// `PriorityFavorSmall` (default false).
    #[cfg_attr(feature = "serde", serde(default))]
    pub favor_small: bool,
    /// `PriorityCalcPeriod`, seconds (default 300): how often pending priorities are
    /// recomputed.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub recalc_interval_s: Option<f64>,
}

impl MultifactorParams {
    /// The policy object.
    pub fn build(&self) -> Multifactor {
        let d = Multifactor::default();
        Multifactor {
            weight_age: self.weight_age.unwrap_or(d.weight_age),
            weight_job_size: self.weight_job_size.unwrap_or(d.weight_job_size),
            weight_fair_share: self.weight_fair_share.unwrap_or(d.weight_fair_share),
            weight_qos: self.weight_qos.unwrap_or(d.weight_qos),
            max_age: self
                .max_age_s
                .map_or(d.max_age, SimDuration::from_secs_f64_rounded),
            favor_small: self.favor_small,
            rekey: self
                .recalc_interval_s
                .map_or(d.rekey, SimDuration::from_secs_f64_rounded),
        }
    }
}
