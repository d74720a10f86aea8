//! A job's training progress under the measured model, advanced over time at one
//! configuration (placement and batch size), as the Pollux artifact's simulator does
//! (`Job.step` in `simulator/simulator.py`, read, not copied):
//!
//! - a step at `placement` and per-GPU batch size `atomic_bsz` with `accum_steps` gradient
//!   accumulation steps takes `step_time + accum_steps · (step_time − sync_time)` seconds and
//!   makes `gain(batch_size, epoch)` progress ([`AppModel::gain`]), so progress grows at
//!   `goodput = gain / total_time` per second;
//! - epoch `e` ends when progress reaches [`AppModel::progress_at`]`(e + 1)`; the time to that
//!   boundary is **rounded to whole seconds** (Python's `round`, ties to even), progress is set
//!   to the boundary, and the next epoch's gain applies from there;
//! - the job is done when it starts epoch [`AppModel::max_epochs`]: no job length is assumed,
//!   each runs to its target.

use super::app::AppModel;

/// Per-GPU batch size and gradient-accumulation steps of a running job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchConfig {
    /// Samples per GPU per micro-step.
    pub atomic_bsz: u32,
    /// Extra micro-steps accumulated before each optimizer step (0 = none).
    pub accum_steps: u32,
}

impl BatchConfig {
    /// Global batch size at `replicas` GPUs: `replicas · atomic_bsz · (accum_steps + 1)`.
    pub fn batch_size(&self, replicas: u32) -> u32 {
        replicas
            .saturating_mul(self.atomic_bsz)
            .saturating_mul(self.accum_steps + 1)
    }

    /// The configuration that keeps a fixed global batch size `target` on `replicas` GPUs
    /// (the artifact's rigid jobs): per-GPU share `ceil(target / replicas)`, split into
    /// micro-steps no larger than [`AppModel::max_local_bsz`], with at least one accumulation
    /// step on a single GPU above the initial batch size, and capped so the global batch stays
    /// within [`AppModel::max_batch_size`].
    pub fn fixed(app: &AppModel, target: u32, replicas: u32) -> BatchConfig {
        let eps = 1e-8;
        let replicas = replicas.max(1);
        let local = (f64::from(target) / f64::from(replicas) - eps).ceil();
        let mut accum = ((local / f64::from(app.max_local_bsz()) - eps).ceil() - 1.0).max(0.0);
        if replicas == 1 && target > app.init_batch_size() {
            accum = accum.max(1.0);
        }
        let atomic = (local / (accum + 1.0) - eps).ceil();
        let count = f64::from(replicas) * (accum + 1.0);
        let cap = (f64::from(app.max_batch_size()) / count).floor();
        BatchConfig {
            atomic_bsz: atomic.min(cap).max(1.0) as u32,
            accum_steps: accum as u32,
        }
    }
}

/// Goodput (progress per second) of `app` in epoch `epoch` at `placement` and `batch`.
pub fn goodput(app: &AppModel, epoch: u32, placement: &[u32], batch: BatchConfig) -> f64 {
    let replicas: u32 = placement.iter().sum();
    let batch_size = f64::from(batch.batch_size(replicas));
    let (step, sync) = app.step_time(placement, f64::from(batch.atomic_bsz));
    let total = step + (step - sync) * f64::from(batch.accum_steps);
    app.gain(batch_size, epoch) / total
}

/// Python's `round` on a non-negative float: to the nearest integer, ties to even.
fn round_even(x: f64) -> u64 {
    x.round_ties_even().max(0.0) as u64
}

/// What one [`Progress::step_epoch`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochStep {
    /// The span ended inside the epoch (or no progress was possible): all of it was used.
    Within,
    /// The epoch ended after this many milliseconds (whole seconds); more epochs remain.
    Crossed(u64),
    /// The last epoch ended after this many milliseconds: the job reached its target.
    Finished(u64),
}

/// Where a job is in its training: the epoch it is in and the progress made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// The epoch the job is in (0-based); `max_epochs` = done.
    pub epoch: u32,
    /// Progress made ([`AppModel::progress_at`]'s unit).
    pub progress: f64,
}

impl Progress {
    /// Whether the job has reached its target.
    pub fn done(&self, app: &AppModel) -> bool {
        self.epoch >= app.max_epochs()
    }

    /// Fraction of the target reached, in `[0, 1]`.
    pub fn fraction(&self, app: &AppModel) -> f64 {
        let end = app.progress_at(app.max_epochs());
        if end > 0.0 {
            (self.progress / end).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// Trains for at most `ms` milliseconds at `placement` and `batch`, stopping at the first
    /// epoch boundary: the artifact's loop body. Returns what happened and the milliseconds
    /// used (a configuration whose goodput is not positive makes no progress and uses all).
    pub fn step_epoch(
        &mut self,
        app: &AppModel,
        placement: &[u32],
        batch: BatchConfig,
        ms: u64,
    ) -> EpochStep {
        if self.done(app) || ms == 0 {
            return EpochStep::Within;
        }
        let left = ms as f64 / 1000.0;
        let g = goodput(app, self.epoch, placement, batch);
        if !(g.is_finite() && g > 0.0) {
            return EpochStep::Within;
        }
        let next = app.progress_at(self.epoch + 1);
        if self.progress + g * left < next {
            self.progress += g * left;
            return EpochStep::Within;
        }
        let delta_ms = (round_even((next - self.progress) / g).saturating_mul(1000)).min(ms);
        self.epoch += 1;
        self.progress = next;
        if self.done(app) {
            EpochStep::Finished(delta_ms)
        } else {
            EpochStep::Crossed(delta_ms)
        }
    }

    /// Trains for `ms` milliseconds at `placement`, epoch by epoch ([`Self::step_epoch`]),
    /// with `batch_for` giving the batch configuration at the start of each epoch's stretch
    /// (the artifact re-chooses it at every boundary; a rigid job returns the same one).
    /// Returns the offset in milliseconds at which the job reached its target, if it did
    /// within the span; the job then stops.
    pub fn advance(
        &mut self,
        app: &AppModel,
        placement: &[u32],
        mut batch_for: impl FnMut(&Progress) -> BatchConfig,
        ms: u64,
    ) -> Option<u64> {
        let mut used: u64 = 0;
        while used < ms {
            match self.step_epoch(app, placement, batch_for(self), ms - used) {
                EpochStep::Within => return None,
                EpochStep::Crossed(d) => used += d,
                EpochStep::Finished(d) => return Some(used + d),
            }
        }
        None
    }

    /// Milliseconds from now until the job reaches its target at a constant `placement`
    /// (with `batch_for` as in [`Self::advance`]); `None` if it never does (no goodput).
    pub fn time_to_finish(
        &self,
        app: &AppModel,
        placement: &[u32],
        mut batch_for: impl FnMut(&Progress) -> BatchConfig,
    ) -> Option<u64> {
        let mut p = *self;
        let mut secs: u64 = 0;
        while !p.done(app) {
            let g = goodput(app, p.epoch, placement, batch_for(&p));
            if !(g.is_finite() && g > 0.0) {
                return None;
            }
            let next = app.progress_at(p.epoch + 1);
            secs = secs.saturating_add(round_even((next - p.progress) / g));
            p.epoch += 1;
            p.progress = next;
        }
        Some(secs.saturating_mul(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goodput::{AppSettings, EpochRow, StepRow};

    /// One placement ([1] at 32 samples, `step_s` per step, no sync) and one validation run at
    /// batch 32 with two epochs ending at progress 10 and 20, no gradient noise (gain 1).
    fn toy(step_s: f64) -> AppModel {
        let step = StepRow {
            placement: vec![1],
            num_nodes: 1,
            num_replicas: 1,
            local_bsz: 32,
            step_time: step_s,
            sync_time: 0.0,
        };
        let epoch = |p: f64| EpochRow {
            progress: p,
            iteration: p,
            metric: 0.0,
            grad_sqr: 1.0,
            grad_var: 0.0,
        };
        AppModel::new(
            "toy",
            &[step],
            &[],
            vec![(32, vec![epoch(10.0), epoch(20.0)])],
            AppSettings::default(),
        )
        .unwrap()
    }

    const B: BatchConfig = BatchConfig {
        atomic_bsz: 32,
        accum_steps: 0,
    };

    /// Goodput 1 progress/s: epochs of 10 s; 15 s in, the job is in epoch 1 at 15; 5 s more
    /// finish it.
    #[test]
    fn a_job_runs_to_its_target_by_hand() {
        let app = toy(1.0);
        let mut p = Progress::default();
        assert_eq!(p.time_to_finish(&app, &[1], |_| B), Some(20_000));
        assert_eq!(p.advance(&app, &[1], |_| B, 15_000), None);
        assert_eq!((p.epoch, p.progress), (1, 15.0));
        assert_eq!(p.advance(&app, &[1], |_| B, 10_000), Some(5_000));
        assert!(p.done(&app));
    }

    /// Goodput 4 progress/s: each epoch needs 2.5 s, rounded half to even to 2 s (the
    /// artifact's Python `round`), so the job takes 4 s, not 5.
    #[test]
    fn epoch_ends_round_half_to_even() {
        let app = toy(0.25);
        assert_eq!(
            Progress::default().time_to_finish(&app, &[1], |_| B),
            Some(4_000)
        );
        let mut p = Progress::default();
        assert_eq!(
            p.step_epoch(&app, &[1], B, 10_000),
            EpochStep::Crossed(2_000)
        );
        assert_eq!(
            p.step_epoch(&app, &[1], B, 10_000),
            EpochStep::Finished(2_000)
        );
    }

    /// The artifact's rigid batch: 512 samples on 3 GPUs with at most 128 per micro-step →
    /// ceil(512/3) = 171 per GPU, ceil(171/128) − 1 = 1 accumulation step, micro-batch
    /// ceil(171/2) = 86.
    #[test]
    fn a_fixed_batch_splits_into_micro_steps() {
        let step = |b: u32| StepRow {
            placement: vec![1],
            num_nodes: 1,
            num_replicas: 1,
            local_bsz: b,
            step_time: 1.0,
            sync_time: 0.0,
        };
        let e = EpochRow {
            progress: 1.0,
            iteration: 1.0,
            metric: 0.0,
            grad_sqr: 1.0,
            grad_var: 0.0,
        };
        let app = AppModel::new(
            "toy",
            &[step(16), step(128)],
            &[],
            vec![(64, vec![e]), (1024, vec![e])],
            AppSettings::default(),
        )
        .unwrap();
        assert_eq!(
            BatchConfig::fixed(&app, 512, 3),
            BatchConfig {
                atomic_bsz: 86,
                accum_steps: 1
            }
        );
    }
}
