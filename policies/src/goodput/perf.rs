//! The throughput model a Pollux agent fits to the step times it observes, and the goodput
//! it predicts (Pollux, OSDI '21, §3.1–3.2; the artifact's `simulator/goodput.py` and
//! `speedup.py`, read, not copied):
//!
//! - compute time of a micro-step: `T_c = α_c + β_c · atomic_bsz`;
//! - synchronisation: over the network when the job spans several nodes,
//!   `T_n = α_n + β_n · max(r − 2, 0)`, within a node when it has several replicas,
//!   `T_n = α_r + β_r · max(r − 2, 0)`, none on one GPU;
//! - an optimizer step overlaps the two: `T_step = (T_c^γ + T_n^γ)^(1/γ)`, `γ ∈ [1, 10]`;
//!   with `s` accumulation steps `T = s · T_c + T_step`;
//! - throughput `= batch_size / T`, efficiency `= gain / scale` with
//!   `gain = (var + sqr) / (var / scale + sqr)` and `scale = batch_size / init_batch_size`;
//!   goodput = throughput × efficiency.
//!
//! [`PerfParams::fit`] fits the seven parameters to the observed `(nodes, replicas,
//! atomic_bsz) → (step, compute)` times by minimising the artifact's objective (RMS error of
//! the log times, plus its two regularisers), with the artifact's rules for fixing parameters
//! the observations cannot identify. The artifact minimises with L-BFGS-B from a fixed start;
//! this crate uses a deterministic pattern search (Hooke–Jeeves, log-scaled for the positive
//! parameters) from the same start: both find a minimum of the same objective, and the fit
//! matters only through the speedups it predicts.

use std::collections::BTreeMap;

/// The seven parameters of the throughput model (seconds; `gamma` unitless).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerfParams {
    /// Constant part of a micro-step's compute time.
    pub alpha_c: f64,
    /// Compute time per sample.
    pub beta_c: f64,
    /// Constant part of the inter-node synchronisation time.
    pub alpha_n: f64,
    /// Inter-node synchronisation time per replica beyond two.
    pub beta_n: f64,
    /// Constant part of the intra-node synchronisation time.
    pub alpha_r: f64,
    /// Intra-node synchronisation time per replica beyond two.
    pub beta_r: f64,
    /// Overlap of compute and synchronisation, `[1, 10]` (1 = none).
    pub gamma: f64,
}

const LOWER: f64 = 1e-8;

impl PerfParams {
    fn from_vec(v: [f64; 7]) -> PerfParams {
        PerfParams {
            alpha_c: v[0],
            beta_c: v[1],
            alpha_n: v[2],
            beta_n: v[3],
            alpha_r: v[4],
            beta_r: v[5],
            gamma: v[6],
        }
    }

    /// Compute time of one micro-step of `atomic_bsz` samples, seconds.
    pub fn compute_time(&self, atomic_bsz: f64) -> f64 {
        self.alpha_c + self.beta_c * atomic_bsz
    }

    /// Synchronisation time at `nodes` nodes and `replicas` replicas, seconds.
    pub fn network_time(&self, nodes: u32, replicas: u32) -> f64 {
        let extra = (f64::from(replicas) - 2.0).max(1e-8);
        if nodes > 1 {
            self.alpha_n + self.beta_n * extra
        } else if replicas > 1 {
            self.alpha_r + self.beta_r * extra
        } else {
            1e-8 + 1e-8 * extra
        }
    }

    /// `ln` of the optimizer step's time: `ln(T_c^γ + T_n^γ) / γ`.
    fn log_step_time(&self, compute: f64, network: f64) -> f64 {
        libm::log(libm::pow(compute, self.gamma) + libm::pow(network, self.gamma)) / self.gamma
    }

    /// Seconds per optimizer step with `accum_steps` accumulation micro-steps.
    pub fn step_time(&self, nodes: u32, replicas: u32, atomic_bsz: f64, accum_steps: u32) -> f64 {
        let c = self.compute_time(atomic_bsz);
        let n = self.network_time(nodes, replicas);
        f64::from(accum_steps) * c + libm::exp(self.log_step_time(c, n))
    }

    /// Fits the model to observations `(nodes, replicas, atomic_bsz) → (step_time,
    /// sync_time)` (seconds), starting from `warm` (the previous fit, when the job has one;
    /// else the artifact's start). See the module docs; deterministic for the same inputs.
    pub fn fit(
        observed: &BTreeMap<(u32, u32, u32), (f64, f64)>,
        warm: Option<PerfParams>,
    ) -> PerfParams {
        let obs: Vec<(u32, u32, f64, f64, f64)> = observed
            .iter()
            .map(|(&(n, r, b), &(step, sync))| {
                (
                    n,
                    r,
                    f64::from(b),
                    libm::log((step - sync).max(1e-9)),
                    libm::log(step),
                )
            })
            .collect();
        let mut start = match warm {
            Some(p) => [
                p.alpha_c, p.beta_c, p.alpha_n, p.beta_n, p.alpha_r, p.beta_r, p.gamma,
            ],
            None => [0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.0 + 1e-3],
        };
        let mut fixed = [false; 7];
        let distinct_bsz = {
            let mut b: Vec<u64> = obs.iter().map(|o| o.2.to_bits()).collect();
            b.sort_unstable();
            b.dedup();
            b.len()
        };
        if distinct_bsz == 1 {
            start[0] = observed
                .values()
                .map(|&(st, sy)| (st - sy).max(1e-9))
                .sum::<f64>()
                / obs.len() as f64
                / 2.0;
            fixed[0] = true;
        }
        let multi_node = obs.iter().any(|o| o.0 > 1);
        if !multi_node {
            (start[2], start[3]) = (LOWER, LOWER);
            (fixed[2], fixed[3]) = (true, true);
        }
        if !obs.iter().any(|o| o.0 == 1 && o.1 > 1) {
            (start[4], start[5]) = (LOWER, LOWER);
            (fixed[4], fixed[5]) = (true, true);
        }
        if !obs.iter().any(|o| o.1 > 2) {
            (start[3], start[5]) = (LOWER, LOWER);
            (fixed[3], fixed[5]) = (true, true);
        }
        let objective = |v: &[f64; 7]| -> f64 {
            let p = PerfParams::from_vec(*v);
            let k = obs.len() as f64;
            let (mut e1, mut e2) = (0.0, 0.0);
            for &(n, r, b, ln_compute, ln_step) in &obs {
                let c = p.compute_time(b);
                let net = p.network_time(n, r);
                let d1 = libm::log(c) - ln_compute;
                let d2 = p.log_step_time(c, net) - ln_step;
                e1 += d1 * d1;
                e2 += d2 * d2;
            }
            let (g, bn, br) = (p.gamma - 1.0, p.beta_n / p.alpha_n, p.beta_r / p.alpha_r);
            let reg1 = 1e-3 * g * g;
            let reg2 = 1e-2 * (bn * bn + br * br);
            (e1 / k).sqrt() + (e2 / k).sqrt() + reg1 + reg2
        };
        let params = pattern_search(
            start,
            fixed,
            if warm.is_some() { 0.25 } else { 1.0 },
            objective,
        );
        let mut p = PerfParams::from_vec(params);
        if !multi_node {
            // The artifact's prior: the network is at least as slow as a node's links.
            p.alpha_n = p.alpha_n.max(p.alpha_r * 1.1);
            p.beta_n = p.beta_n.max(p.beta_r * 1.1);
        }
        p
    }
}

/// Hooke–Jeeves pattern search over the free coordinates from `start` with initial step
/// `step`: positive parameters move by factors `e^±step` (bounded below by 1e-8), `gamma`
/// (index 6) by `±step` within `[1, 10]`. The step halves when no coordinate move improves,
/// down to 1e-4; at most 5,000 evaluations.
fn pattern_search(
    start: [f64; 7],
    fixed: [bool; 7],
    mut step: f64,
    f: impl Fn(&[f64; 7]) -> f64,
) -> [f64; 7] {
    let clamp = |i: usize, v: f64| {
        if i == 6 {
            v.clamp(1.0, 10.0)
        } else {
            v.max(LOWER)
        }
    };
    let mut x = start;
    let mut fx = f(&x);
    let mut evals = 0;
    while step > 1e-4 && evals < 5_000 {
        let mut improved = false;
        for i in 0..7 {
            if fixed[i] {
                continue;
            }
            for dir in [1.0, -1.0] {
                let mut y = x;
                y[i] = if i == 6 {
                    clamp(i, x[i] + dir * step)
                } else {
                    clamp(i, x[i] * libm::exp(dir * step))
                };
                evals += 1;
                let fy = f(&y);
                if fy < fx {
                    x = y;
                    fx = fy;
                    improved = true;
                    break;
                }
            }
        }
        if !improved {
            step /= 2.0;
        }
    }
    x
}

/// A job's fitted throughput model with its latest gradient statistics: the goodput it
/// predicts at any allocation and batch size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerfModel {
    /// The fitted throughput parameters.
    pub params: PerfParams,
    /// Squared norm of the gradient (latest observed).
    pub grad_sqr: f64,
    /// Variance of the gradient (latest observed).
    pub grad_var: f64,
    /// Initial (smallest) global batch size, samples.
    pub init_batch_size: u32,
    /// Largest global batch size, samples.
    pub max_batch_size: u32,
    /// Smallest and largest per-GPU micro-batch, samples.
    pub atomic_bsz_range: (u32, u32),
}

impl PerfModel {
    /// Predicted goodput at `nodes`, `replicas`, micro-batch `atomic_bsz` and `accum_steps`.
    pub fn goodput(&self, nodes: u32, replicas: u32, atomic_bsz: f64, accum_steps: u32) -> f64 {
        let batch = f64::from(replicas) * atomic_bsz * f64::from(accum_steps + 1);
        let t = self
            .params
            .step_time(nodes, replicas, atomic_bsz, accum_steps);
        let scale = batch / f64::from(self.init_batch_size);
        let denom = self.grad_var / scale + self.grad_sqr;
        let gain = if denom > 0.0 {
            (self.grad_var + self.grad_sqr) / denom
        } else {
            1.0
        };
        batch / t * gain / scale
    }

    /// The goodput-optimal batch configuration at `nodes` and `replicas` and its goodput:
    /// 50 global batch sizes spaced geometrically from `max(init_batch_size, min_atomic ·
    /// replicas)` to `max_batch_size`, each split into micro-steps no larger than the largest
    /// micro-batch (at least one accumulation step on one GPU above the initial batch size);
    /// the first best wins. `None` when no batch size is valid.
    pub fn best_batch(&self, nodes: u32, replicas: u32) -> Option<(f64, super::BatchConfig)> {
        let eps = 1e-8;
        let (min_a, max_a) = (
            f64::from(self.atomic_bsz_range.0),
            f64::from(self.atomic_bsz_range.1),
        );
        let r = f64::from(replicas.max(1));
        let lo = f64::from(self.init_batch_size).max(min_a * r);
        let hi = f64::from(self.max_batch_size);
        let mut best: Option<(f64, super::BatchConfig)> = None;
        for k in 0..50 {
            // numpy's geomspace: exp(linspace(ln lo, ln hi, 50)), exact at both ends.
            let b = if k == 0 {
                lo
            } else if k == 49 {
                hi
            } else {
                libm::exp(libm::log(lo) + (libm::log(hi) - libm::log(lo)) * f64::from(k) / 49.0)
            };
            let local = b / r;
            let mut accum = ((local / max_a - eps).ceil() - 1.0).max(0.0);
            if replicas == 1 && local > f64::from(self.init_batch_size) + eps {
                accum = accum.max(1.0);
            }
            let atomic = (local / (accum + 1.0) - eps).ceil();
            let g = if atomic >= min_a && atomic <= max_a {
                self.goodput(nodes, replicas, atomic, accum as u32)
            } else {
                0.0
            };
            if best.is_none_or(|(bg, _)| g > bg) {
                best = Some((
                    g,
                    super::BatchConfig {
                        atomic_bsz: atomic as u32,
                        accum_steps: accum as u32,
                    },
                ));
            }
        }
        best.filter(|(g, _)| *g > 0.0)
    }

    /// Goodput at the best batch size for `(nodes, replicas)` over the goodput at
    /// `base` `(nodes, replicas)`; 0 for no replicas.
    pub fn speedup(&self, nodes: u32, replicas: u32, base: (u32, u32)) -> f64 {
        if replicas == 0 {
            return 0.0;
        }
        let g = self.best_batch(nodes, replicas).map_or(0.0, |b| b.0);
        let b = self.best_batch(base.0, base.1).map_or(0.0, |b| b.0);
        if b > 0.0 {
            g / b
        } else {
            0.0
        }
    }
}

/// A job class's throughput per accelerator type, relative to a reference type (1.0):
/// Gavel's throughput matrix row (D. Narayanan et al., OSDI '20), as Sia (S. Jayaram Subramanya
/// et al., SOSP '23) uses it for heterogeneous fleets. Keys are accelerator model names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThroughputMatrix {
    /// Relative throughput by accelerator model name; a type not named cannot run the class.
    pub by_model: BTreeMap<String, f64>,
}

impl ThroughputMatrix {
    /// Relative throughput on `model`, 0 when the class cannot run there.
    pub fn on(&self, model: &str) -> f64 {
        self.by_model.get(model).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fit_recovers_a_model_it_was_drawn_from() {
        let truth = PerfParams {
            alpha_c: 0.02,
            beta_c: 0.001,
            alpha_n: 0.08,
            beta_n: 0.004,
            alpha_r: 0.01,
            beta_r: 0.001,
            gamma: 1.5,
        };
        let mut obs = BTreeMap::new();
        for &(n, r) in &[(1, 1), (1, 2), (1, 4), (2, 8), (4, 16)] {
            for b in [32u32, 64, 128] {
                let step = truth.step_time(n, r, f64::from(b), 0);
                let sync = step - truth.compute_time(f64::from(b));
                obs.insert((n, r, b), (step, sync));
            }
        }
        let p = PerfParams::fit(&obs, None);
        for &(n, r, b) in &[(1, 2, 64.0), (2, 8, 100.0), (4, 16, 32.0)] {
            let (want, got) = (truth.step_time(n, r, b, 0), p.step_time(n, r, b, 0));
            assert!(
                (got / want - 1.0).abs() < 0.05,
                "{n} {r} {b}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn one_gpu_observations_fix_the_network_terms() {
        let mut obs = BTreeMap::new();
        obs.insert((1, 1, 64), (0.1, 0.0));
        let p = PerfParams::fit(&obs, None);
        // One micro-batch size: α_c is half the mean compute time.
        assert_eq!(p.alpha_c, 0.05);
        // No multi-GPU observation: the network terms stay at the lower bound (then α_n is
        // raised to 1.1 α_r, still 1.1e-8).
        assert!(p.alpha_r <= 1e-8 && p.alpha_n <= 1.2e-8, "{p:?}");
    }
}
