//! One training job under a round allocator, as the Pollux artifact's simulator runs it
//! (`Job` in `simulator/simulator.py`, read, not copied): its progress, its allocation and
//! batch configuration, its restart delay, the GPU-time it attained and — for an adaptive
//! (Pollux) job — the throughput model it fits to the step times it observes.
//!
//! This is the one implementation of a round-allocated job's step, progress and batch
//! choice: the engine's elastic subsystem and the test-side replay of the artifact's loop
//! both drive it.
//!
//! - [`TrainingJob::step`] trains for a span at the current allocation: the restart delay
//!   first (GPUs held, no progress), then epoch by epoch ([`Progress::step_epoch`]),
//!   re-choosing the batch at every epoch boundary; an adaptive job records each new
//!   configuration's step time and refits its [`PerfParams`].
//! - [`TrainingJob::reallocate`] applies a new allocation: the batch is re-chosen and the job
//!   restarts after the restart delay (an empty allocation pauses it).
//! - [`TrainingJob::max_replicas`] is the artifact's cap on the replicas the Pollux allocator
//!   may give a job: twice the most it has been profiled at (1 before any), at most 64 and
//!   at most `max_batch_size / min_local_bsz`; ncf (fixed batch) stays on one GPU.

use std::collections::BTreeMap;

use super::{AppModel, BatchConfig, EpochStep, PerfModel, PerfParams, Progress};
use crate::rounds::placement_of;

/// One round-allocated job's training state. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct TrainingJob {
    /// Fixed global batch size (rigid jobs; ncf under Pollux); `None`: adaptive.
    pub batch_target: Option<u32>,
    /// Training progress.
    pub progress: Progress,
    /// The current allocation: one node index per replica, grouped by node.
    pub alloc: Vec<usize>,
    /// The current batch configuration.
    pub batch: BatchConfig,
    /// Restart delay still to serve before training resumes, seconds.
    pub rescale_s: f64,
    /// GPU-seconds held so far (restart delays included).
    pub attained_gpu_s: f64,
    /// Allocation changes after the first start (`None` before the first start).
    pub restarts: Option<u32>,
    /// Whether the job fits a throughput model to what it observes (Pollux's agent).
    pub learns: bool,
    /// Observed `(nodes, replicas, atomic_bsz) → (step_time, sync_time)`, seconds.
    pub profile: BTreeMap<(u32, u32, u32), (f64, f64)>,
    /// The fitted throughput model, once the job has observed a step.
    pub perf: Option<PerfParams>,
    /// The last gradient statistics `(grad_sqr, grad_var)`.
    pub grad: (f64, f64),
}

impl TrainingJob {
    /// A job that has not started: fixed batch `batch_target` (or adaptive), fitting a
    /// throughput model when `learns`.
    pub fn new(batch_target: Option<u32>, learns: bool) -> TrainingJob {
        TrainingJob {
            batch_target,
            learns,
            ..TrainingJob::default()
        }
    }

    /// Whether the job has reached its target.
    pub fn done(&self, app: &AppModel) -> bool {
        self.progress.done(app)
    }

    /// The throughput model the job has fitted, with its current gradient statistics.
    pub fn perf_model(&self, app: &AppModel) -> Option<PerfModel> {
        self.perf.map(|params| PerfModel {
            params,
            grad_sqr: self.grad.0,
            grad_var: self.grad.1,
            init_batch_size: app.init_batch_size(),
            max_batch_size: app.max_batch_size(),
            atomic_bsz_range: (app.min_local_bsz(), app.max_local_bsz()),
        })
    }

    /// The artifact's `update_local_bsz`: the batch configuration at the current allocation.
    pub fn choose_batch(&mut self, app: &AppModel) {
        let p = placement_of(&self.alloc);
        let (n, r) = (p.len() as u32, p.iter().sum::<u32>());
        if r == 0 {
            return;
        }
        let mut b = match (self.batch_target, self.perf_model(app)) {
            (Some(t), _) => BatchConfig::fixed(app, t, r),
            (None, None) => {
                BatchConfig::fixed(app, app.init_batch_size().max(app.min_local_bsz() * r), r)
            }
            (None, Some(m)) => m.best_batch(n, r).map(|x| x.1).unwrap_or_default(),
        };
        let count = r * (b.accum_steps + 1);
        b.atomic_bsz = b.atomic_bsz.min(app.max_batch_size() / count).max(1);
        self.batch = b;
    }

    /// The artifact's `Job.step`: trains for `secs` seconds at the current allocation.
    /// Returns the offset in seconds from the start of the span at which the job reached
    /// its target, if it did (it then stops).
    pub fn step(&mut self, app: &AppModel, secs: f64) -> Option<f64> {
        if self.alloc.is_empty() || self.done(app) {
            return None;
        }
        let r = self.alloc.len() as f64;
        let delay = self.rescale_s.min(secs);
        self.rescale_s -= delay;
        self.attained_gpu_s += delay * r;
        let mut t = delay;
        let mut left = secs - delay;
        let place = placement_of(&self.alloc);
        let (n, rr) = (place.len() as u32, place.iter().sum::<u32>());
        while left > 0.0 && !self.done(app) {
            let bs = f64::from(self.batch.batch_size(rr));
            let (st, sy) = app.step_time(&place, f64::from(self.batch.atomic_bsz));
            self.grad = app.grad_stats(bs, self.progress.epoch);
            let key = (n, rr, self.batch.atomic_bsz);
            if self.learns {
                if let std::collections::btree_map::Entry::Vacant(e) = self.profile.entry(key) {
                    e.insert((st, sy));
                    self.perf = Some(PerfParams::fit(&self.profile, self.perf));
                }
            }
            let ms = (left * 1000.0).round() as u64;
            match self.progress.step_epoch(app, &place, self.batch, ms) {
                EpochStep::Within => {
                    self.attained_gpu_s += left * r;
                    left = 0.0;
                }
                EpochStep::Crossed(d) => {
                    let d = d as f64 / 1000.0;
                    self.attained_gpu_s += d * r;
                    t += d;
                    left -= d;
                }
                EpochStep::Finished(d) => {
                    let d = d as f64 / 1000.0;
                    self.attained_gpu_s += d * r;
                    return Some(t + d);
                }
            }
            self.choose_batch(app);
        }
        None
    }

    /// Applies a new allocation `alloc` if it differs from the current one: the batch is
    /// re-chosen and the job restarts after `restart_s` seconds; an empty allocation pauses
    /// it. Returns whether the allocation changed.
    pub fn reallocate(&mut self, app: &AppModel, alloc: Vec<usize>, restart_s: f64) -> bool {
        if alloc == self.alloc {
            return false;
        }
        self.alloc = alloc;
        if self.alloc.is_empty() {
            self.batch = BatchConfig::default();
        } else {
            self.choose_batch(app);
            self.rescale_s = restart_s;
            self.restarts = Some(self.restarts.map_or(0, |k| k + 1));
        }
        true
    }

    /// The artifact's cap on the replicas the Pollux allocator may give the job this round.
    pub fn max_replicas(&self, app: &AppModel) -> u32 {
        if app.name() == "ncf" {
            return 1;
        }
        let profiled = self.profile.keys().map(|k| k.1).max().unwrap_or(0);
        (2 * profiled)
            .clamp(1, 64)
            .min(app.max_batch_size() / app.min_local_bsz())
    }
}
