//! A seeded synthetic workload generator (`[workload.synthetic]` in a scenario).
//!
//! # Model
//!
//! * **Arrivals**: a Poisson process of `arrival_rate_per_hour` — exponential inter-arrival
//!   times with mean `3600 / rate` s, the first arrival one inter-arrival after t = 0. The
//!   stream stops after `jobs` jobs or at the first arrival at or after `duration_s`,
//!   whichever comes first (at least one of the two must be set).
//! * **Size**: a [`SizeMix`] entry drawn by weight. A job of `gpus` accelerators above
//!   `max_gpus_per_task` (default 8) becomes a gang per the Philly rule
//!   ([`super::philly::gang_split`]): tasks of the largest power of two ≤ `max_gpus_per_task`
//!   dividing `gpus` (16 → 2×8, 12 → 3×4). Each task asks for
//!   `cpu_milli_per_gpu × gpus_per_task` milli-cores and `mem_mib_per_gpu × gpus_per_task` MiB
//!   (for a fractional one-GPU job, scaled by `gpu_milli / 1000`, rounded down).
//! * **Runtime**: [`RuntimeDist`] (log-normal, Pareto or exponential), clamped to
//!   `[min_s, max_s]`.
//! * **Tenant**: a [`TenantMix`] entry drawn by weight; **priority**: a [`PriorityMix`] entry
//!   drawn by weight (all 0 when no mix is given). Queue none; no recorded times.
//! * **Name**: `syn-<n>`, n = 1, 2, … in arrival order.
//!
//! # Randomness and units
//!
//! Each dimension draws from its own named stream ([`crate::rng::stream`]):
//! `synthetic.arrivals`, `synthetic.sizes`, `synthetic.runtimes`, `synthetic.tenants`,
//! `synthetic.priorities`, so changing one mix never shifts another dimension's draws.
//! Arrival times are accumulated in `f64` seconds; every sampled time (arrival instant,
//! runtime) is converted to integer milliseconds once, rounding half away from zero
//! (`f64::round`). The stream is generated lazily: no job list is materialized.

use std::path::PathBuf;

use rand_distr::weighted::WeightedIndex;
use rand_distr::{Distribution, Exp, LogNormal, Pareto};
use serde::Deserialize;

use fleetsim_policies::resources::MAX_GPUS_PER_NODE;
use fleetsim_policies::spec::secs_to_ms;
use fleetsim_policies::{SimDuration, SimTime, TaskShape, WHOLE_GPU_MILLI};

use super::{JobSpec, JobStream, RecordedKind, Skipped, TraceError};
use crate::rng::{self, Rng};

fn default_max_gpus_per_task() -> u32 {
    8
}

fn default_min_s() -> f64 {
    1.0
}

fn default_gpu_milli() -> u32 {
    WHOLE_GPU_MILLI
}

/// Most jobs a synthetic workload may generate (10 times the largest bench workload,
/// `fleet_1m_gpus`): a typo in `jobs` or the arrival rate is refused up front instead of
/// running for hours.
pub const MAX_SYNTHETIC_JOBS: u64 = 100_000_000;

/// The synthetic generator's parameters (`[workload.synthetic]`).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyntheticSpec {
    /// Number of jobs to generate.
    #[serde(default)]
    pub jobs: Option<u64>,
    /// Length of the arrival window, seconds: no job arrives at or after it.
    #[serde(default)]
    pub duration_s: Option<u64>,
    /// Mean arrivals per hour (Poisson).
    pub arrival_rate_per_hour: f64,
    /// Tenants and their relative weights.
    pub tenants: Vec<TenantMix>,
    /// Job sizes and their relative weights.
    pub sizes: Vec<SizeMix>,
    /// Largest task, in accelerators; bigger jobs become gangs (default 8).
    #[serde(default = "default_max_gpus_per_task")]
    pub max_gpus_per_task: u32,
    /// Run-time distribution.
    pub runtime: RuntimeDist,
    /// CPU per accelerator, milli-cores (default 0).
    #[serde(default)]
    pub cpu_milli_per_gpu: u64,
    /// Memory per accelerator, MiB (default 0).
    #[serde(default)]
    pub mem_mib_per_gpu: u64,
    /// Priorities and their relative weights (default: every job priority 0).
    #[serde(default)]
    pub priorities: Vec<PriorityMix>,
}

/// A tenant and its relative arrival weight.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantMix {
    /// Tenant name.
    pub name: String,
    /// Relative weight (> 0).
    pub weight: f64,
}

/// A job size and its relative weight.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SizeMix {
    /// Accelerators per job (≥ 1).
    pub gpus: u32,
    /// Share of each accelerator, milli-GPU (default 1000 = whole; below 1000 only with
    /// `gpus = 1`, a GPU-sharing job).
    #[serde(default = "default_gpu_milli")]
    pub gpu_milli: u32,
    /// Relative weight (> 0).
    pub weight: f64,
}

/// A priority and its relative weight.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriorityMix {
    /// Priority value (higher first).
    pub priority: i32,
    /// Relative weight (> 0).
    pub weight: f64,
}

/// Run-time distribution, tagged by `dist`. Every variant's sample is clamped to
/// `[min_s, max_s]` seconds (`min_s` default 1, `max_s` default none).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum RuntimeDist {
    /// Log-normal: `ln X ~ Normal(ln median_s, sigma)`.
    Lognormal {
        /// Median, seconds (> 0).
        median_s: f64,
        /// Standard deviation of `ln X` (≥ 0).
        sigma: f64,
        /// Lower cap, seconds.
        #[serde(default = "default_min_s")]
        min_s: f64,
        /// Upper cap, seconds.
        #[serde(default)]
        max_s: Option<f64>,
    },
    /// Pareto (type I): `P(X > x) = (scale_s / x)^shape` for `x ≥ scale_s`.
    Pareto {
        /// Scale (minimum value), seconds (> 0).
        scale_s: f64,
        /// Shape (tail index, > 0; ≤ 1 has an infinite mean and needs `max_s`).
        shape: f64,
        /// Lower cap, seconds.
        #[serde(default = "default_min_s")]
        min_s: f64,
        /// Upper cap, seconds.
        #[serde(default)]
        max_s: Option<f64>,
    },
    /// Exponential with mean `mean_s`.
    Exponential {
        /// Mean, seconds (> 0).
        mean_s: f64,
        /// Lower cap, seconds.
        #[serde(default = "default_min_s")]
        min_s: f64,
        /// Upper cap, seconds.
        #[serde(default)]
        max_s: Option<f64>,
    },
}

impl RuntimeDist {
    fn caps(&self) -> (f64, Option<f64>) {
        match *self {
            RuntimeDist::Lognormal { min_s, max_s, .. }
            | RuntimeDist::Pareto { min_s, max_s, .. }
            | RuntimeDist::Exponential { min_s, max_s, .. } => (min_s, max_s),
        }
    }

    /// Mean of the clamped run time, seconds, in closed form:
    /// * exponential (mean m): `a + m·(e^(−a/m) − e^(−b/m))`;
    /// * Pareto: `a + ∫_a^b P(X > x) dx` with the Pareto survival function;
    /// * log-normal: `a·Φ(α) + e^(μ+σ²/2)·(Φ(β−σ) − Φ(α−σ)) + b·(1 − Φ(β))` with
    ///   `α = (ln a − μ)/σ`, `β = (ln b − μ)/σ` (the normal CDF Φ from `statrs`' `erfc`);
    ///
    /// where `a = min_s` and `b = max_s` (∞ when unset).
    pub fn mean_s(&self) -> f64 {
        let (a, b) = self.caps();
        let b = b.unwrap_or(f64::INFINITY);
        match *self {
            RuntimeDist::Exponential { mean_s: m, .. } => a + m * ((-a / m).exp() - (-b / m).exp()),
            RuntimeDist::Pareto {
                scale_s: xm,
                shape: k,
                ..
            } => {
                let below = (b.min(xm) - a).max(0.0);
                let l = a.max(xm);
                let above = if b <= l {
                    0.0
                } else if (k - 1.0).abs() < 1e-12 {
                    xm * (b / l).ln()
                } else {
                    let ub = if b.is_infinite() {
                        0.0
                    } else {
                        b.powf(1.0 - k)
                    };
                    xm.powf(k) * (ub - l.powf(1.0 - k)) / (1.0 - k)
                };
                a + below + above
            }
            RuntimeDist::Lognormal {
                median_s, sigma, ..
            } => {
                if sigma == 0.0 {
                    return median_s.clamp(a, b.max(a));
                }
                let mu = median_s.ln();
                let alpha = (a.ln() - mu) / sigma;
                let mean = (mu + sigma * sigma / 2.0).exp();
                let (upper, tail) = if b.is_infinite() {
                    (1.0, 0.0)
                } else {
                    let beta = (b.ln() - mu) / sigma;
                    (normal_cdf(beta - sigma), b * (1.0 - normal_cdf(beta)))
                };
                let low = if a > 0.0 { a * normal_cdf(alpha) } else { 0.0 };
                low + mean * (upper - normal_cdf(alpha - sigma)) + tail
            }
        }
    }
}

/// Standard normal CDF.
fn normal_cdf(x: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2)
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

impl SyntheticSpec {
    /// Checks the parameters.
    ///
    /// # Errors
    /// A message naming the offending field when: neither `jobs` nor `duration_s` is set or
    /// either is 0; the arrival rate is not a positive finite number; a mix is empty or has a
    /// weight that is not positive and finite; a tenant name is empty or repeated; a size has
    /// `gpus` 0, `gpu_milli` outside 1..=1000 or fractional with `gpus` > 1;
    /// `max_gpus_per_task` is outside `1..=64`; a distribution parameter is out of range
    /// (median/scale/mean ≤ 0, sigma < 0, shape ≤ 0, Pareto shape ≤ 1 without `max_s`,
    /// `min_s` < 0, `max_s` < `min_s`); more than [`MAX_SYNTHETIC_JOBS`] jobs (`jobs`, or
    /// without it the expected arrivals `arrival_rate_per_hour` × `duration_s`).
    pub fn validate(&self) -> Result<(), String> {
        match (self.jobs, self.duration_s) {
            (None, None) => return Err("set `jobs`, `duration_s` or both".to_string()),
            (Some(0), _) => return Err("`jobs` must be at least 1".to_string()),
            (_, Some(0)) => return Err("`duration_s` must be at least 1".to_string()),
            _ => {}
        }
        if !positive(self.arrival_rate_per_hour) {
            return Err(format!(
                "`arrival_rate_per_hour` must be a positive number, not {}",
                self.arrival_rate_per_hour
            ));
        }
        if let Some(n) = self.jobs.filter(|&n| n > MAX_SYNTHETIC_JOBS) {
            return Err(format!(
                "`jobs` = {n}: a synthetic workload has at most {MAX_SYNTHETIC_JOBS} jobs"
            ));
        }
        if let (None, Some(d)) = (self.jobs, self.duration_s) {
            let expected = self.arrival_rate_per_hour / 3600.0 * d as f64;
            if expected > MAX_SYNTHETIC_JOBS as f64 {
                return Err(format!(
                    "`arrival_rate_per_hour` × `duration_s` = {expected:.3e} jobs expected: a synthetic \
                     workload has at most {MAX_SYNTHETIC_JOBS} (set `jobs` to stop earlier, or lower the rate)"
                ));
            }
        }
        if self.tenants.is_empty() {
            return Err("`tenants` must not be empty".to_string());
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, t) in self.tenants.iter().enumerate() {
            if t.name.is_empty() {
                return Err(format!("`tenants[{i}].name` is empty"));
            }
            if !names.insert(t.name.as_str()) {
                return Err(format!("`tenants[{i}].name` `{}` repeats", t.name));
            }
            if !positive(t.weight) {
                return Err(format!("`tenants[{i}].weight` must be positive"));
            }
        }
        if self.sizes.is_empty() {
            return Err("`sizes` must not be empty".to_string());
        }
        if !(1..=MAX_GPUS_PER_NODE).contains(&self.max_gpus_per_task) {
            return Err(format!(
                "`max_gpus_per_task` must be in 1..={MAX_GPUS_PER_NODE}"
            ));
        }
        for (i, s) in self.sizes.iter().enumerate() {
            if s.gpus == 0 {
                return Err(format!("`sizes[{i}].gpus` must be at least 1"));
            }
            if !(1..=WHOLE_GPU_MILLI).contains(&s.gpu_milli) {
                return Err(format!("`sizes[{i}].gpu_milli` must be in 1..=1000"));
            }
            if s.gpu_milli < WHOLE_GPU_MILLI && s.gpus != 1 {
                return Err(format!(
                    "`sizes[{i}].gpu_milli` below 1000 (GPU sharing) needs `gpus = 1`"
                ));
            }
            if !positive(s.weight) {
                return Err(format!("`sizes[{i}].weight` must be positive"));
            }
        }
        for (i, p) in self.priorities.iter().enumerate() {
            if !positive(p.weight) {
                return Err(format!("`priorities[{i}].weight` must be positive"));
            }
        }
        let (min_s, max_s) = self.runtime.caps();
        if !(min_s.is_finite() && min_s >= 0.0) {
            return Err("`runtime.min_s` must be a non-negative number".to_string());
        }
        if let Some(m) = max_s {
            if !(m.is_finite() && m >= min_s) {
                return Err("`runtime.max_s` must be a number ≥ `runtime.min_s`".to_string());
            }
        }
        match self.runtime {
            RuntimeDist::Lognormal {
                median_s, sigma, ..
            } => {
                if !positive(median_s) {
                    return Err("`runtime.median_s` must be positive".to_string());
                }
                if !(sigma.is_finite() && sigma >= 0.0) {
                    return Err("`runtime.sigma` must be ≥ 0".to_string());
                }
            }
            RuntimeDist::Pareto { scale_s, shape, .. } => {
                if !positive(scale_s) {
                    return Err("`runtime.scale_s` must be positive".to_string());
                }
                if !positive(shape) {
                    return Err("`runtime.shape` must be positive".to_string());
                }
                if shape <= 1.0 && max_s.is_none() {
                    return Err(
                        "`runtime.shape` ≤ 1 gives an infinite mean: set `runtime.max_s`"
                            .to_string(),
                    );
                }
            }
            RuntimeDist::Exponential { mean_s, .. } => {
                if !positive(mean_s) {
                    return Err("`runtime.mean_s` must be positive".to_string());
                }
            }
        }
        Ok(())
    }

    /// Mean accelerators per job: the weighted mean of `gpus × gpu_milli / 1000`.
    pub fn mean_gpus(&self) -> f64 {
        let total: f64 = self.sizes.iter().map(|s| s.weight).sum();
        self.sizes
            .iter()
            .map(|s| s.weight * f64::from(s.gpus) * f64::from(s.gpu_milli) / 1000.0)
            .sum::<f64>()
            / total
    }

    /// Offered load in accelerators (Little's law): arrivals per second × mean accelerators
    /// per job ([`Self::mean_gpus`]) × mean clamped run time in seconds
    /// ([`RuntimeDist::mean_s`], closed form) — the average number of accelerators busy if
    /// every job started on arrival. Meaningful only for a spec that passes
    /// [`Self::validate`]; for scenario documentation, never for simulation.
    pub fn offered_load_gpus(&self) -> f64 {
        self.arrival_rate_per_hour / 3600.0 * self.mean_gpus() * self.runtime.mean_s()
    }
}

enum RuntimeSampler {
    LogNormal(LogNormal<f64>),
    Pareto(Pareto<f64>),
    Exp(Exp<f64>),
}

/// The compiled samplers of a valid spec.
struct Samplers {
    inter_arrival: Exp<f64>,
    size: WeightedIndex<f64>,
    tenant: WeightedIndex<f64>,
    priority: Option<WeightedIndex<f64>>,
    runtime: RuntimeSampler,
}

fn compile(spec: &SyntheticSpec) -> Result<Samplers, String> {
    spec.validate()?;
    let e = |what: &str, err: &dyn std::fmt::Display| format!("{what}: {err}");
    let runtime = match spec.runtime {
        RuntimeDist::Lognormal {
            median_s, sigma, ..
        } => RuntimeSampler::LogNormal(
            LogNormal::new(median_s.ln(), sigma).map_err(|x| e("runtime", &x))?,
        ),
        RuntimeDist::Pareto { scale_s, shape, .. } => {
            RuntimeSampler::Pareto(Pareto::new(scale_s, shape).map_err(|x| e("runtime", &x))?)
        }
        RuntimeDist::Exponential { mean_s, .. } => {
            RuntimeSampler::Exp(Exp::new(1.0 / mean_s).map_err(|x| e("runtime", &x))?)
        }
    };
    Ok(Samplers {
        inter_arrival: Exp::new(spec.arrival_rate_per_hour / 3600.0)
            .map_err(|x| e("arrival_rate_per_hour", &x))?,
        size: WeightedIndex::new(spec.sizes.iter().map(|s| s.weight))
            .map_err(|x| e("sizes", &x))?,
        tenant: WeightedIndex::new(spec.tenants.iter().map(|t| t.weight))
            .map_err(|x| e("tenants", &x))?,
        priority: if spec.priorities.is_empty() {
            None
        } else {
            Some(
                WeightedIndex::new(spec.priorities.iter().map(|p| p.weight))
                    .map_err(|x| e("priorities", &x))?,
            )
        },
        runtime,
    })
}

/// A lazily generated synthetic job stream (see the module docs).
pub struct SyntheticStream {
    spec: SyntheticSpec,
    samplers: Result<Samplers, String>,
    arrivals: Rng,
    sizes: Rng,
    runtimes: Rng,
    tenants: Rng,
    priorities: Rng,
    now_s: f64,
    emitted: u64,
    done: bool,
}

/// Starts generating `spec` under scenario seed `seed`. Same spec and seed ⇒ the same
/// sequence, on any machine.
///
/// A spec that fails [`SyntheticSpec::validate`] yields a single
/// [`TraceError::BadRow`] (path `workload.synthetic`, line 0) carrying the validation
/// message, then ends; validate first to report it earlier.
pub fn generate(spec: &SyntheticSpec, seed: u64) -> SyntheticStream {
    SyntheticStream {
        spec: spec.clone(),
        samplers: compile(spec),
        arrivals: rng::stream(seed, "synthetic.arrivals"),
        sizes: rng::stream(seed, "synthetic.sizes"),
        runtimes: rng::stream(seed, "synthetic.runtimes"),
        tenants: rng::stream(seed, "synthetic.tenants"),
        priorities: rng::stream(seed, "synthetic.priorities"),
        now_s: 0.0,
        emitted: 0,
        done: false,
    }
}

/// `prefix` followed by `n` in decimal, without the formatting machinery (this runs once per
/// generated job).
fn numbered_name(prefix: &str, mut n: u64) -> compact_str::CompactString {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut s = compact_str::CompactString::with_capacity(prefix.len() + digits.len() - i);
    s.push_str(prefix);
    s.extend(digits[i..].iter().map(|&d| d as char));
    s
}

impl Iterator for SyntheticStream {
    type Item = Result<JobSpec, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let s = match &self.samplers {
            Ok(s) => s,
            Err(m) => {
                self.done = true;
                return Some(Err(TraceError::BadRow {
                    path: PathBuf::from("workload.synthetic"),
                    line: 0,
                    message: m.clone(),
                }));
            }
        };
        let spec = &self.spec;
        if spec.jobs.is_some_and(|n| self.emitted >= n) {
            self.done = true;
            return None;
        }
        self.now_s += s.inter_arrival.sample(&mut self.arrivals);
        let submit = secs_to_ms(self.now_s);
        if spec
            .duration_s
            .is_some_and(|d| submit >= d.saturating_mul(1000))
        {
            self.done = true;
            return None;
        }
        self.emitted += 1;

        let size = &spec.sizes[s.size.sample(&mut self.sizes)];
        let (tasks, per_task) = super::philly::gang_split(size.gpus, spec.max_gpus_per_task);
        let scale = |per_gpu: u64| {
            per_gpu.saturating_mul(u64::from(per_task)) * u64::from(size.gpu_milli)
                / u64::from(WHOLE_GPU_MILLI)
        };
        let shape = TaskShape {
            num_gpu: per_task,
            gpu_milli: size.gpu_milli,
            cpu_milli: scale(spec.cpu_milli_per_gpu),
            mem_mib: scale(spec.mem_mib_per_gpu),
        };

        let raw = match &s.runtime {
            RuntimeSampler::LogNormal(d) => d.sample(&mut self.runtimes),
            RuntimeSampler::Pareto(d) => d.sample(&mut self.runtimes),
            RuntimeSampler::Exp(d) => d.sample(&mut self.runtimes),
        };
        let (min_s, max_s) = spec.runtime.caps();
        let runtime_s = raw.max(min_s).min(max_s.unwrap_or(f64::INFINITY));

        let tenant = compact_str::CompactString::from(
            spec.tenants[s.tenant.sample(&mut self.tenants)]
                .name
                .as_str(),
        );
        let priority = s
            .priority
            .as_ref()
            .map(|w| spec.priorities[w.sample(&mut self.priorities)].priority)
            .unwrap_or(0);

        Some(Ok(JobSpec {
            name: numbered_name("syn-", self.emitted),
            tenant,
            queue: None,
            priority,
            qos: None,
            submit: SimTime(submit),
            tasks,
            shape,
            gpu_models: Vec::new(),
            cells: Vec::new(),
            runtime: SimDuration(secs_to_ms(runtime_s)),
            time_limit: None,
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology: None,
            // A job size, not a pod shape: takes the node's shape.
            split: true,
            elastic: None,
        }))
    }
}

impl JobStream for SyntheticStream {
    fn skipped(&self) -> Skipped {
        Skipped::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SyntheticSpec {
        toml::from_str(
            r#"
            jobs = 2000
            arrival_rate_per_hour = 60
            tenants = [{ name = "a", weight = 3 }, { name = "b", weight = 1 }]
            sizes = [
                { gpus = 1, weight = 6 },
                { gpus = 1, gpu_milli = 250, weight = 1 },
                { gpus = 8, weight = 1 },
                { gpus = 12, weight = 1 },
                { gpus = 16, weight = 1 },
            ]
            runtime = { dist = "lognormal", median_s = 600, sigma = 2.0, min_s = 30, max_s = 7200 }
            cpu_milli_per_gpu = 4000
            mem_mib_per_gpu = 65536
            priorities = [{ priority = 0, weight = 1 }, { priority = 5, weight = 1 }]
            "#,
        )
        .unwrap()
    }

    fn jobs(spec: &SyntheticSpec, seed: u64) -> Vec<JobSpec> {
        generate(spec, seed).map(Result::unwrap).collect()
    }

    #[test]
    fn job_counts_over_the_cap_are_refused_up_front() {
        let mut s = spec();
        s.jobs = Some(MAX_SYNTHETIC_JOBS);
        assert_eq!(s.validate(), Ok(()));
        s.jobs = Some(MAX_SYNTHETIC_JOBS + 1);
        let e = s.validate().unwrap_err();
        assert!(e.starts_with("`jobs` = 100000001: "), "{e}");
        // Without `jobs`, the expected arrivals over `duration_s`: 1e12 an hour for 1 s.
        s.jobs = None;
        s.duration_s = Some(1);
        s.arrival_rate_per_hour = 1e12;
        let e = s.validate().unwrap_err();
        assert!(e.contains("2.778e8 jobs expected"), "{e}");
        // With `jobs` set the stream stops there, whatever the rate.
        s.jobs = Some(1_000);
        assert_eq!(s.validate(), Ok(()));
    }

    #[test]
    fn deterministic_per_seed() {
        let s = spec();
        s.validate().unwrap();
        let a = jobs(&s, 7);
        assert_eq!(a.len(), 2000);
        assert_eq!(a, jobs(&s, 7));
        assert_ne!(a, jobs(&s, 8));
        assert!(a.windows(2).all(|w| w[0].submit <= w[1].submit));
        assert_eq!(a[0].name, "syn-1");
        assert_eq!(numbered_name("syn-", 0), "syn-0");
        assert_eq!(numbered_name("x", u64::MAX), format!("x{}", u64::MAX));
        assert!(a.iter().any(|j| j.priority == 5) && a.iter().any(|j| j.priority == 0));
        assert!(a.iter().any(|j| j.tenant == "b"));
    }

    #[test]
    fn dimensions_use_independent_streams() {
        let s = spec();
        let mut t = spec();
        t.tenants = vec![TenantMix {
            name: "only".into(),
            weight: 1.0,
        }];
        let (a, b) = (jobs(&s, 3), jobs(&t, 3));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (x.submit, x.tasks, x.shape, x.runtime),
                (y.submit, y.tasks, y.shape, y.runtime)
            );
        }
    }

    #[test]
    fn arrival_count_matches_rate() {
        for rate in [10.0, 60.0, 250.0] {
            let mut s = spec();
            s.jobs = None;
            s.duration_s = Some(7 * 24 * 3600);
            s.arrival_rate_per_hour = rate;
            let n = generate(&s, 11).count() as f64;
            let want = rate * 168.0;
            assert!(
                (n - want).abs() <= 0.05 * want,
                "rate {rate}: {n} vs {want}"
            );
            let last = jobs(&s, 11).last().unwrap().submit;
            assert!(last < SimTime::from_secs(7 * 24 * 3600));
        }
        // jobs stops first when it comes first.
        let mut s = spec();
        s.jobs = Some(10);
        s.duration_s = Some(7 * 24 * 3600);
        assert_eq!(generate(&s, 1).count(), 10);
    }

    #[test]
    fn caps_and_gangs() {
        let s = spec();
        let all = jobs(&s, 5);
        for j in &all {
            assert!(
                j.runtime >= SimDuration::from_secs(30)
                    && j.runtime <= SimDuration::from_secs(7200)
            );
            let total = j.total_gpu_milli();
            match total {
                250 => assert_eq!(
                    (
                        j.tasks,
                        j.shape.num_gpu,
                        j.shape.gpu_milli,
                        j.shape.cpu_milli
                    ),
                    (1, 1, 250, 1000)
                ),
                1000 => assert_eq!((j.tasks, j.shape.num_gpu, j.shape.cpu_milli), (1, 1, 4000)),
                8000 => assert_eq!((j.tasks, j.shape.num_gpu), (1, 8)),
                12000 => assert_eq!(
                    (j.tasks, j.shape.num_gpu, j.shape.cpu_milli),
                    (3, 4, 16_000)
                ),
                16000 => assert_eq!(
                    (j.tasks, j.shape.num_gpu, j.shape.mem_mib),
                    (2, 8, 8 * 65536)
                ),
                other => panic!("unexpected size {other}"),
            }
        }
        assert!(all.iter().any(|j| j.runtime == SimDuration::from_secs(30)));
        assert!(all
            .iter()
            .any(|j| j.runtime == SimDuration::from_secs(7200)));
    }

    /// Monte-Carlo mean of the clamped distribution, to check the closed forms.
    fn mc_mean(d: &RuntimeDist) -> f64 {
        let mut s = spec();
        s.runtime = d.clone();
        s.jobs = Some(200_000);
        let total: f64 = generate(&s, 99)
            .map(|j| j.unwrap().runtime.as_secs_f64())
            .sum();
        total / 200_000.0
    }

    #[test]
    fn closed_form_means_match_sampling() {
        let dists = [
            RuntimeDist::Lognormal {
                median_s: 600.0,
                sigma: 1.5,
                min_s: 1.0,
                max_s: None,
            },
            RuntimeDist::Lognormal {
                median_s: 600.0,
                sigma: 2.0,
                min_s: 60.0,
                max_s: Some(7200.0),
            },
            RuntimeDist::Lognormal {
                median_s: 600.0,
                sigma: 0.0,
                min_s: 1.0,
                max_s: Some(300.0),
            },
            RuntimeDist::Pareto {
                scale_s: 100.0,
                shape: 1.5,
                min_s: 1.0,
                max_s: Some(1e5),
            },
            RuntimeDist::Pareto {
                scale_s: 100.0,
                shape: 2.5,
                min_s: 150.0,
                max_s: None,
            },
            RuntimeDist::Pareto {
                scale_s: 100.0,
                shape: 1.0,
                min_s: 0.0,
                max_s: Some(1e4),
            },
            RuntimeDist::Exponential {
                mean_s: 900.0,
                min_s: 60.0,
                max_s: Some(3000.0),
            },
            RuntimeDist::Exponential {
                mean_s: 900.0,
                min_s: 1.0,
                max_s: None,
            },
        ];
        for d in &dists {
            let (analytic, sampled) = (d.mean_s(), mc_mean(d));
            assert!(
                (analytic - sampled).abs() <= 0.03 * analytic,
                "{d:?}: {analytic} vs {sampled}"
            );
        }
        let s = spec();
        let load = s.offered_load_gpus();
        let expect = 60.0 / 3600.0 * s.mean_gpus() * s.runtime.mean_s();
        assert!((load - expect).abs() < 1e-9);
        assert!((s.mean_gpus() - (6.0 + 0.25 + 8.0 + 12.0 + 16.0) / 10.0).abs() < 1e-12);
    }

    #[test]
    fn lazily_generated() {
        let mut s = spec();
        s.jobs = Some(MAX_SYNTHETIC_JOBS);
        assert_eq!(generate(&s, 1).take(3).count(), 3);
    }

    #[test]
    fn validation() {
        let bad = |f: &dyn Fn(&mut SyntheticSpec), needle: &str| {
            let mut s = spec();
            f(&mut s);
            let e = s.validate().unwrap_err();
            assert!(e.contains(needle), "{e}");
            let mut g = generate(&s, 1);
            assert!(g.next().unwrap().is_err());
            assert!(g.next().is_none());
        };
        bad(&|s| s.jobs = None, "duration_s");
        bad(&|s| s.jobs = Some(0), "jobs");
        bad(&|s| s.arrival_rate_per_hour = 0.0, "arrival_rate_per_hour");
        bad(
            &|s| s.arrival_rate_per_hour = f64::NAN,
            "arrival_rate_per_hour",
        );
        bad(&|s| s.tenants.clear(), "tenants");
        bad(&|s| s.tenants[1].name = "a".into(), "tenants[1].name");
        bad(&|s| s.tenants[0].weight = -1.0, "tenants[0].weight");
        bad(&|s| s.sizes.clear(), "sizes");
        bad(&|s| s.sizes[0].gpus = 0, "sizes[0].gpus");
        bad(&|s| s.sizes[2].gpu_milli = 500, "sizes[2].gpu_milli");
        bad(&|s| s.sizes[0].gpu_milli = 0, "sizes[0].gpu_milli");
        bad(&|s| s.priorities[1].weight = 0.0, "priorities[1].weight");
        bad(&|s| s.max_gpus_per_task = 0, "max_gpus_per_task");
        bad(
            &|s| {
                s.runtime = RuntimeDist::Lognormal {
                    median_s: 1.0,
                    sigma: -1.0,
                    min_s: 1.0,
                    max_s: None,
                }
            },
            "sigma",
        );
        bad(
            &|s| {
                s.runtime = RuntimeDist::Pareto {
                    scale_s: 1.0,
                    shape: 0.9,
                    min_s: 1.0,
                    max_s: None,
                }
            },
            "max_s",
        );
        bad(
            &|s| {
                s.runtime = RuntimeDist::Exponential {
                    mean_s: 10.0,
                    min_s: 5.0,
                    max_s: Some(4.0),
                }
            },
            "max_s",
        );
        bad(
            &|s| {
                s.runtime = RuntimeDist::Exponential {
                    mean_s: 0.0,
                    min_s: 5.0,
                    max_s: None,
                }
            },
            "mean_s",
        );
    }

    #[test]
    fn serde_defaults_and_unknown_fields() {
        let s: SyntheticSpec = toml::from_str(
            r#"
            duration_s = 3600
            arrival_rate_per_hour = 1.5
            tenants = [{ name = "a", weight = 1 }]
            sizes = [{ gpus = 2, weight = 1 }]
            runtime = { dist = "pareto", scale_s = 10, shape = 2 }
            "#,
        )
        .unwrap();
        assert_eq!(s.max_gpus_per_task, 8);
        assert_eq!(s.sizes[0].gpu_milli, 1000);
        assert_eq!(s.cpu_milli_per_gpu, 0);
        assert!(s.priorities.is_empty());
        assert_eq!(
            s.runtime,
            RuntimeDist::Pareto {
                scale_s: 10.0,
                shape: 2.0,
                min_s: 1.0,
                max_s: None
            }
        );
        s.validate().unwrap();
        let base = "arrival_rate_per_hour = 1\njobs = 1\ntenants = []\nsizes = []\n";
        let err = |extra: &str| {
            toml::from_str::<SyntheticSpec>(&format!("{base}{extra}"))
                .unwrap_err()
                .to_string()
        };
        let e = err("runtime = { dist = \"exponential\", mean_s = 1, median_s = 2 }");
        assert!(e.contains("median_s"), "{e}");
        let e = err("runtime = { dist = \"weibull\", mean_s = 1 }");
        assert!(e.contains("weibull"), "{e}");
        let e = err("colour = 1\nruntime = { dist = \"exponential\", mean_s = 1 }");
        assert!(e.contains("colour"), "{e}");
    }
}
