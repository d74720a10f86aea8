//! One training application's measured model: step time by placement and per-GPU batch
//! size, and the gradient statistics and progress of training runs at several global batch
//! sizes (Pollux, OSDI '21, §5.3 "Simulator construction"; the artifact's
//! `simulator/applications.py` at `petuum/adaptdl@c793c70`, read, not copied).
//!
//! The tables are given already parsed (the engine reads the files; this crate does no I/O).
//! Every lookup is a pure function of the tables; interpolation is linear and written out in
//! the order the artifact's (`scipy.interpolate.interp1d`) evaluates it, so values agree with
//! the artifact's to the last bits wherever the placement was measured.

use std::collections::BTreeMap;

/// Measured `(per-GPU batch size, step time, sync time)` rows, sorted by batch size.
type BszRows = Vec<(f64, f64, f64)>;

/// One measured step: the placement (`placement[i]` replicas on the i-th node; empty for a
/// row of the scalability table, which gives only node and replica counts), the per-GPU
/// (atomic) batch size and the times in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRow {
    /// Replicas per node, in the order measured (`[2, 2]` = 2 nodes × 2 GPUs); empty for a
    /// scalability row.
    pub placement: Vec<u32>,
    /// Nodes spanned.
    pub num_nodes: u32,
    /// Replicas (GPUs) in all.
    pub num_replicas: u32,
    /// Per-GPU batch size, samples.
    pub local_bsz: u32,
    /// Time of one optimizer step, seconds.
    pub step_time: f64,
    /// Its gradient-synchronisation part, seconds.
    pub sync_time: f64,
}

/// One epoch of a training run at a fixed global batch size (`validation-<B>.csv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochRow {
    /// Progress after the epoch (the artifact's unit: samples processed, scaled to the initial
    /// batch size's statistical efficiency).
    pub progress: f64,
    /// Optimizer steps after the epoch.
    pub iteration: f64,
    /// Validation metric after the epoch.
    pub metric: f64,
    /// Squared norm of the gradient during the epoch.
    pub grad_sqr: f64,
    /// Variance of the gradient during the epoch.
    pub grad_var: f64,
}

/// Settings of an application that are not in its tables (the artifact's `APPLICATIONS`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AppSettings {
    /// Epochs to train (the target); `None` = the shortest validation run.
    pub max_epochs: Option<u32>,
    /// Largest per-GPU batch size that fits in memory; `None` = the largest measured.
    pub max_local_bsz: Option<u32>,
}

/// A bad table, naming the application and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoodputError {
    /// The application.
    pub app: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for GoodputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "application `{}`: {}", self.app, self.message)
    }
}

impl std::error::Error for GoodputError {}

/// A training application: measured throughput and statistical efficiency.
///
/// Built once from its tables ([`AppModel::new`]); all queries take `&self`.
#[derive(Clone, Debug)]
pub struct AppModel {
    name: String,
    /// Measured placements, keyed by the rotation-normalised placement.
    by_placement: BTreeMap<Vec<u32>, BszRows>,
    /// Mean step/sync time by `(nodes, replicas)`, then by batch size (sorted), for
    /// placements that were not measured.
    grid: BTreeMap<(u32, u32), BszRows>,
    /// Training runs by global batch size.
    validation: BTreeMap<u32, Vec<EpochRow>>,
    init_batch_size: u32,
    max_batch_size: u32,
    min_local_bsz: u32,
    max_local_bsz: u32,
    max_epochs: u32,
    /// `progress_of[e]` = progress when epoch `e` starts (`[0] = 0`).
    progress_of: Vec<f64>,
}

/// The lexicographically smallest rotation of `placement` without empty nodes (the
/// artifact's normal form: `[2, 1]` and `[1, 2]` are one placement).
pub fn normalize_placement(placement: &[u32]) -> Vec<u32> {
    let p: Vec<u32> = placement.iter().copied().filter(|&r| r > 0).collect();
    (0..p.len())
        .map(|i| {
            let mut r = p[i..].to_vec();
            r.extend_from_slice(&p[..i]);
            r
        })
        .min()
        .unwrap_or_default()
}

/// `interp1d`'s linear interpolation of `xs → ys` at `x` (`xs` ascending, length ≥ 1):
/// the bracketing pair is found as `searchsorted(xs, x)` (left), clipped into range, and the
/// value is `slope · (x − x_lo) + y_lo`. Outside `xs` the end segment is extended flat (the
/// artifact refuses such a query; callers clamp first).
fn interp(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    if xs.len() == 1 {
        return ys[0];
    }
    let x = x.clamp(xs[0], xs[xs.len() - 1]);
    let idx = xs.partition_point(|&v| v < x).clamp(1, xs.len() - 1);
    let (lo, hi) = (idx - 1, idx);
    let slope = (ys[hi] - ys[lo]) / (xs[hi] - xs[lo]);
    slope * (x - xs[lo]) + ys[lo]
}

/// Step and sync time at batch size `b` from rows `(bsz, step, sync)` sorted by bsz.
fn interp_rows(rows: &[(f64, f64, f64)], b: f64) -> (f64, f64) {
    let xs: Vec<f64> = rows.iter().map(|r| r.0).collect();
    let st: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let sy: Vec<f64> = rows.iter().map(|r| r.2).collect();
    (interp(&xs, &st, b), interp(&xs, &sy, b))
}

impl AppModel {
    /// Builds the model from its tables.
    ///
    /// # Errors
    /// No placement row, no validation run, a validation run shorter than `max_epochs`, a
    /// placement with no replicas, a non-positive or non-finite time or progress.
    pub fn new(
        name: &str,
        placements: &[StepRow],
        scalability: &[StepRow],
        validation: Vec<(u32, Vec<EpochRow>)>,
        settings: AppSettings,
    ) -> Result<AppModel, GoodputError> {
        let err = |message: String| GoodputError {
            app: name.to_string(),
            message,
        };
        if placements.is_empty() {
            return Err(err("no placement measurement".into()));
        }
        if validation.is_empty() {
            return Err(err("no validation run".into()));
        }
        let mut by_placement: BTreeMap<Vec<u32>, BszRows> = BTreeMap::new();
        // (nodes, replicas, bsz) → (sum step, sum sync, count), for the grid of means.
        let mut sums: BTreeMap<(u32, u32, u32), (f64, f64, u32)> = BTreeMap::new();
        for r in placements.iter().chain(scalability) {
            if !(r.step_time.is_finite() && r.step_time > 0.0 && r.sync_time.is_finite()) {
                return Err(err(format!(
                    "a step time of {} s (sync {} s) is not a positive number",
                    r.step_time, r.sync_time
                )));
            }
            if r.num_replicas == 0 || r.num_nodes == 0 || r.local_bsz == 0 {
                return Err(err("a measurement with no node, replica or sample".into()));
            }
            let e = sums
                .entry((r.num_nodes, r.num_replicas, r.local_bsz))
                .or_insert((0.0, 0.0, 0));
            e.0 += r.step_time;
            e.1 += r.sync_time;
            e.2 += 1;
        }
        for r in placements {
            let key = normalize_placement(&r.placement);
            if key.is_empty() {
                return Err(err("a placement row with no replica".into()));
            }
            by_placement.entry(key).or_default().push((
                f64::from(r.local_bsz),
                r.step_time,
                r.sync_time,
            ));
        }
        for rows in by_placement.values_mut() {
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let mut grid: BTreeMap<(u32, u32), BszRows> = BTreeMap::new();
        for ((n, r, b), (st, sy, k)) in sums {
            let k = f64::from(k);
            grid.entry((n, r))
                .or_default()
                .push((f64::from(b), st / k, sy / k));
        }
        let validation: BTreeMap<u32, Vec<EpochRow>> = validation.into_iter().collect();
        let shortest = validation.values().map(Vec::len).min().unwrap_or(0) as u32;
        let max_epochs = settings.max_epochs.unwrap_or(shortest);
        if max_epochs == 0 || max_epochs > shortest {
            return Err(err(format!(
                "{max_epochs} epochs to train, but the shortest validation run has {shortest}"
            )));
        }
        for (b, rows) in &validation {
            if let Some(bad) = rows
                .iter()
                .find(|e| !(e.progress.is_finite() && e.progress >= 0.0))
            {
                return Err(err(format!(
                    "validation run {b}: progress {} is not a non-negative number",
                    bad.progress
                )));
            }
        }
        // Epoch e starts at the least progress any run had after epoch e − 1.
        let mut progress_of = vec![0.0];
        for e in 1..=max_epochs as usize {
            let p = validation
                .values()
                .map(|rows| rows[e - 1].progress)
                .fold(f64::INFINITY, f64::min);
            progress_of.push(p);
        }
        let min_local_bsz = placements.iter().map(|r| r.local_bsz).min().unwrap_or(1);
        let measured_max = placements.iter().map(|r| r.local_bsz).max().unwrap_or(1);
        let init_batch_size = *validation.keys().next().unwrap_or(&1);
        let max_batch_size = *validation.keys().next_back().unwrap_or(&1);
        if max_batch_size < min_local_bsz {
            return Err(err(format!(
                "largest validated batch size {max_batch_size} is below the smallest per-GPU batch size {min_local_bsz}"
            )));
        }
        Ok(AppModel {
            name: name.to_string(),
            by_placement,
            grid,
            validation,
            init_batch_size,
            max_batch_size,
            min_local_bsz,
            max_local_bsz: settings.max_local_bsz.unwrap_or(measured_max),
            max_epochs,
            progress_of,
        })
    }

    /// The application's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Smallest validated global batch size, samples (the batch size efficiency is relative to).
    pub fn init_batch_size(&self) -> u32 {
        self.init_batch_size
    }
    /// Largest validated global batch size, samples.
    pub fn max_batch_size(&self) -> u32 {
        self.max_batch_size
    }
    /// Smallest measured per-GPU batch size, samples.
    pub fn min_local_bsz(&self) -> u32 {
        self.min_local_bsz
    }
    /// Largest per-GPU batch size that fits in memory, samples.
    pub fn max_local_bsz(&self) -> u32 {
        self.max_local_bsz
    }
    /// Epochs to train: the job is done when it starts epoch `max_epochs`.
    pub fn max_epochs(&self) -> u32 {
        self.max_epochs
    }

    /// Progress at which epoch `epoch` starts (`epoch ≤ max_epochs`).
    pub fn progress_at(&self, epoch: u32) -> f64 {
        self.progress_of[(epoch as usize).min(self.progress_of.len() - 1)]
    }

    /// The validated batch sizes bracketing `batch_size` (equal when it was validated),
    /// clamped into the validated range.
    fn bracket(&self, batch_size: f64) -> (u32, u32) {
        let mut lo = *self.validation.keys().next().unwrap_or(&0);
        let mut hi = *self.validation.keys().next_back().unwrap_or(&0);
        if batch_size <= f64::from(lo) {
            return (lo, lo);
        }
        if batch_size >= f64::from(hi) {
            return (hi, hi);
        }
        for &b in self.validation.keys() {
            if f64::from(b) <= batch_size {
                lo = b;
            }
            if f64::from(b) >= batch_size {
                hi = b;
                break;
            }
        }
        (lo, hi)
    }

    /// Squared norm and variance of the gradient at global batch size `batch_size` during
    /// epoch `epoch`: linear between the two validated batch sizes that bracket it (the
    /// artifact's `get_grad_stats`).
    pub fn grad_stats(&self, batch_size: f64, epoch: u32) -> (f64, f64) {
        let (lo, hi) = self.bracket(batch_size);
        let row = |b: u32| {
            let rows = &self.validation[&b];
            rows[(epoch as usize).min(rows.len() - 1)]
        };
        let (l, u) = (row(lo), row(hi));
        if lo == hi {
            return (l.grad_sqr, l.grad_var);
        }
        let (bl, bu) = (f64::from(lo), f64::from(hi));
        let sqr = ((batch_size - bl) * u.grad_sqr + (bu - batch_size) * l.grad_sqr) / (bu - bl);
        let var = ((batch_size - bl) * u.grad_var + (bu - batch_size) * l.grad_var) / (bu - bl);
        (sqr, var)
    }

    /// Statistical efficiency's gain at global batch size `batch_size` during `epoch`: the
    /// progress one step makes, relative to a step at the initial batch size,
    /// `(var + sqr) / (var / scale + sqr)` with `scale = batch_size / init_batch_size`
    /// (McCandlish et al.'s gradient noise scale, as Pollux uses it).
    pub fn gain(&self, batch_size: f64, epoch: u32) -> f64 {
        let scale = batch_size / f64::from(self.init_batch_size);
        let (sqr, var) = self.grad_stats(batch_size, epoch);
        let denom = var / scale + sqr;
        if denom > 0.0 {
            (var + sqr) / denom
        } else {
            1.0
        }
    }

    /// Step time and its synchronisation part, seconds, of one step at `placement`
    /// (replicas per node) and per-GPU batch size `local_bsz`.
    ///
    /// A measured placement (after rotation to its normal form) is interpolated linearly in
    /// the batch size, as the artifact does. Any other placement is interpolated over the
    /// grid of mean times by `(nodes, replicas)` (measured placements and the scalability
    /// table): linearly in the batch size at each grid point, then in the replica count at
    /// each bracketing node count, then in the node count. The artifact interpolates those
    /// points over a Delaunay triangulation (`scipy`'s `LinearNDInterpolator`); the two agree
    /// wherever `(nodes, replicas)` is a grid point and differ slightly between grid points.
    /// Outside the measured range (more nodes, replicas per node or samples than measured)
    /// the nearest measured value is used; the artifact refuses such queries.
    pub fn step_time(&self, placement: &[u32], local_bsz: f64) -> (f64, f64) {
        let key = normalize_placement(placement);
        if let Some(rows) = self.by_placement.get(&key) {
            return interp_rows(rows, local_bsz);
        }
        let nodes = key.len() as u32;
        let replicas: u32 = key.iter().sum();
        self.grid_time(nodes.max(1), replicas.max(1), local_bsz)
    }

    /// See [`Self::step_time`]: the grid interpolation at `(nodes, replicas, bsz)`.
    fn grid_time(&self, nodes: u32, replicas: u32, bsz: f64) -> (f64, f64) {
        let levels: Vec<u32> = {
            let mut v: Vec<u32> = self.grid.keys().map(|k| k.0).collect();
            v.dedup();
            v
        };
        let n = nodes.clamp(levels[0], levels[levels.len() - 1]);
        let hi = levels.partition_point(|&l| l < n);
        let (n_lo, n_hi) = if levels[hi] == n {
            (n, n)
        } else {
            (levels[hi - 1], levels[hi])
        };
        let at_level = |level: u32| -> (f64, f64) {
            let pts: Vec<(u32, (f64, f64))> = self
                .grid
                .range((level, 0)..=(level, u32::MAX))
                .map(|(&(_, r), rows)| (r, interp_rows(rows, bsz)))
                .collect();
            let rs: Vec<f64> = pts.iter().map(|p| f64::from(p.0)).collect();
            let st: Vec<f64> = pts.iter().map(|p| p.1 .0).collect();
            let sy: Vec<f64> = pts.iter().map(|p| p.1 .1).collect();
            let r = f64::from(replicas);
            (interp(&rs, &st, r), interp(&rs, &sy, r))
        };
        let lo = at_level(n_lo);
        if n_lo == n_hi {
            return lo;
        }
        let up = at_level(n_hi);
        let f = f64::from(n - n_lo) / f64::from(n_hi - n_lo);
        (lo.0 + (up.0 - lo.0) * f, lo.1 + (up.1 - lo.1) * f)
    }
}
