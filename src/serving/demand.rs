//! Demand series of a service and the step functions they become.

use serde::Deserialize;

use fleetsim_policies::SimTime;

use super::FieldError;

/// `demand = { kind = …, … }`: a service's load, in replicas' worth at 100 % utilisation.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DemandSpec {
    /// `mean_replicas + amplitude · sin(2π (t − phase_s) / period_s)`, sampled every
    /// `step_s` seconds (held constant between samples).
    Diurnal {
        /// Mean load, replicas (> 0).
        mean_replicas: f64,
        /// Amplitude, replicas (0 ≤ amplitude ≤ mean: the load never goes negative).
        amplitude: f64,
        /// Period, seconds (> 0; 86,400 for a day).
        period_s: i64,
        /// Phase, seconds (the sinusoid crosses its mean upwards at `phase_s`).
        #[serde(default)]
        phase_s: i64,
        /// Sampling step, seconds (> 0; default 300).
        #[serde(default = "default_step")]
        step_s: i64,
    },
    /// Points `[t_s, replicas]`, strictly increasing in time; each value holds until the
    /// next point (0 before the first).
    Table {
        /// The points.
        points: Vec<(f64, f64)>,
    },
    /// Derived from a public trace's creations and deletions: the Alibaba DLRM 2025
    /// instances (`format = "alibaba-dlrm"`) with a GPU request, optionally of one app; the
    /// load at `t` is `instances alive at t × replicas_per_instance`, shifted by
    /// `offset_s` (the trace's second `offset_s` is the run's t = 0).
    Trace {
        /// Trace format; only `alibaba-dlrm`.
        format: String,
        /// File under the trace directory (e.g.
        /// `alibaba-dlrm-2025/disaggregated_DLRM_trace.csv`).
        public_path: String,
        /// Only instances of this `app_name`; all GPU instances when absent.
        #[serde(default)]
        app: Option<String>,
        /// Replicas' worth of load per live instance (> 0).
        replicas_per_instance: f64,
        /// Trace second that is the run's t = 0 (≥ 0).
        #[serde(default)]
        offset_s: i64,
    },
}

fn default_step() -> i64 {
    300
}

/// A right-continuous step function of time, `u32` valued: the value of the last point at or
/// before `t` (0 before the first). Points are strictly increasing in time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepFn {
    /// `(from, value)` points.
    pub points: Vec<(SimTime, u32)>,
}

impl StepFn {
    /// Appends a point at or after the last one (one at the same time replaces it; an
    /// unchanged value is not stored).
    pub fn push(&mut self, t: SimTime, v: u32) {
        crate::metrics::steps::push_step(&mut self.points, t, v, 0);
    }

    /// The value at `t`.
    pub fn at(&self, t: SimTime) -> u32 {
        match self.points.partition_point(|p| p.0 <= t) {
            0 => 0,
            i => self.points[i - 1].1,
        }
    }

    /// The largest value on `[lo, hi]` ms (0 when `nonempty` is false). Linear in the points
    /// the window spans.
    pub fn max_over(&self, lo: u64, hi: u64, nonempty: bool) -> u32 {
        if !nonempty || hi < lo {
            return 0;
        }
        let mut m = self.at(SimTime(lo));
        let a = self.points.partition_point(|p| p.0 .0 <= lo);
        let b = self.points.partition_point(|p| p.0 .0 <= hi);
        for p in &self.points[a..b] {
            m = m.max(p.1);
        }
        m
    }

    /// `∫ value dt` over `[0, end)`, value·ms.
    pub fn integral(&self, end: SimTime) -> u128 {
        let mut sum = 0u128;
        for (i, &(t, v)) in self.points.iter().enumerate() {
            if t >= end {
                break;
            }
            let next = self.points.get(i + 1).map_or(end, |p| p.0.min(end));
            sum += v as u128 * (next.0 - t.0) as u128;
        }
        sum
    }
}

fn desired_of(load: f64, target: f64) -> u32 {
    // A tolerance of 1e-9 replicas so that 8 / 1.0 or 6.4 / 0.8 is not rounded up to 9.
    ((load / target) - 1e-9).ceil().clamp(0.0, u32::MAX as f64) as u32
}

impl DemandSpec {
    /// Checks the series' own fields (`f`: its field path).
    ///
    /// # Errors
    /// The field path and a message.
    pub fn validate(&self, f: &str) -> Result<(), FieldError> {
        let e = |g: &str, m: &str| Err((format!("{f}.{g}"), m.to_string()));
        match self {
            DemandSpec::Diurnal {
                mean_replicas,
                amplitude,
                period_s,
                phase_s,
                step_s,
            } => {
                if !(mean_replicas.is_finite() && *mean_replicas > 0.0) {
                    return e("mean_replicas", "must be > 0");
                }
                if !(amplitude.is_finite() && *amplitude >= 0.0) {
                    return e("amplitude", "must be ≥ 0");
                }
                if amplitude > mean_replicas {
                    return e(
                        "amplitude",
                        "must not exceed mean_replicas (the load would go negative)",
                    );
                }
                if *period_s <= 0 {
                    return e("period_s", "must be > 0 seconds");
                }
                if *phase_s < 0 {
                    return e("phase_s", "must be ≥ 0 seconds");
                }
                if *step_s <= 0 {
                    return e("step_s", "must be > 0 seconds");
                }
            }
            DemandSpec::Table { points } => {
                if points.is_empty() {
                    return e("points", "give at least one [t_s, replicas] point");
                }
                let mut prev = -1.0;
                for (i, &(t, v)) in points.iter().enumerate() {
                    if !(t.is_finite() && t >= 0.0) {
                        return e(&format!("points[{i}]"), "time must be ≥ 0 seconds");
                    }
                    if t <= prev {
                        return e(&format!("points[{i}]"), "times must be strictly increasing");
                    }
                    if !(v.is_finite() && v >= 0.0) {
                        return e(&format!("points[{i}]"), "replicas must be ≥ 0");
                    }
                    prev = t;
                }
            }
            DemandSpec::Trace {
                format,
                replicas_per_instance,
                offset_s,
                ..
            } => {
                if format != "alibaba-dlrm" {
                    return e("format", "only `alibaba-dlrm` is supported");
                }
                if !(replicas_per_instance.is_finite() && *replicas_per_instance > 0.0) {
                    return e("replicas_per_instance", "must be > 0");
                }
                if *offset_s < 0 {
                    return e("offset_s", "must be ≥ 0 seconds");
                }
            }
        }
        Ok(())
    }

    /// Desired replicas `⌈load / target⌉` over `[0, end)` as a step function.
    ///
    /// # Errors
    /// A trace that cannot be read or holds no matching instance.
    pub fn desired(
        &self,
        end: SimTime,
        target: f64,
        f: &str,
        trace_path: &mut dyn FnMut(&str, &str) -> Result<std::path::PathBuf, FieldError>,
    ) -> Result<StepFn, FieldError> {
        let mut out = StepFn::default();
        match self {
            DemandSpec::Diurnal {
                mean_replicas,
                amplitude,
                period_s,
                phase_s,
                step_s,
            } => {
                let mut t = 0u64;
                let step = *step_s as u64 * 1000;
                while t < end.0 {
                    let x = std::f64::consts::TAU * (t as f64 / 1000.0 - *phase_s as f64)
                        / *period_s as f64;
                    out.push(
                        SimTime(t),
                        desired_of(mean_replicas + amplitude * x.sin(), target),
                    );
                    t += step;
                }
            }
            DemandSpec::Table { points } => {
                for &(t, v) in points {
                    let t = SimTime((t * 1000.0).round() as u64);
                    if t < end {
                        out.push(t, desired_of(v, target));
                    }
                }
            }
            DemandSpec::Trace {
                public_path,
                app,
                replicas_per_instance,
                offset_s,
                ..
            } => {
                let path = trace_path(&format!("{f}.public_path"), public_path)?;
                let alive = dlrm_alive(&path, app.as_deref(), *offset_s as u64 * 1000, end)
                    .map_err(|m| (format!("{f}.public_path"), m))?;
                if alive.points.is_empty() {
                    return Err((
                        format!("{f}.app"),
                        "no GPU instance of the trace is alive in the serving window".into(),
                    ));
                }
                for &(t, n) in &alive.points {
                    out.push(t, desired_of(n as f64 * replicas_per_instance, target));
                }
            }
        }
        out.push(end, 0);
        Ok(out)
    }
}

/// Instances with a GPU request alive over time, from the Alibaba DLRM 2025 trace's
/// creations and deletions (its reader's rules: an instance created before the trace start
/// is alive from 0, one never deleted until the trace end), shifted by `offset_ms`.
fn dlrm_alive(
    path: &std::path::Path,
    app: Option<&str>,
    offset_ms: u64,
    end: SimTime,
) -> Result<StepFn, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |n: &str| {
        header
            .iter()
            .position(|h| *h == n)
            .ok_or_else(|| format!("{}: no `{n}` column", path.display()))
    };
    let (c_app, c_gpu, c_create, c_delete) = (
        col("app_name")?,
        col("gpu_request")?,
        col("creation_time")?,
        col("deletion_time")?,
    );
    // (time, +1 / −1) deltas; an absent time is the open end.
    let mut deltas: Vec<(u64, i64)> = Vec::new();
    for (i, line) in lines.enumerate() {
        let r: Vec<&str> = line.split(',').collect();
        let get = |c: usize| r.get(c).copied().unwrap_or("");
        let bad = |c: &str| format!("{}: row {}: bad `{c}`", path.display(), i + 2);
        let gpu: f64 = get(c_gpu).parse().map_err(|_| bad("gpu_request"))?;
        if gpu <= 0.0 || app.is_some_and(|a| a != get(c_app)) {
            continue;
        }
        let time = |c: usize, name: &str| -> Result<Option<u64>, String> {
            match get(c) {
                "" => Ok(None),
                s => s
                    .parse::<f64>()
                    .map(|x| Some((x.max(0.0) * 1000.0).round() as u64))
                    .map_err(|_| bad(name)),
            }
        };
        let from = time(c_create, "creation_time")?.unwrap_or(0);
        let to = time(c_delete, "deletion_time")?;
        if to.is_some_and(|d| d <= from) {
            continue;
        }
        deltas.push((from, 1));
        if let Some(d) = to {
            deltas.push((d, -1));
        }
    }
    deltas.sort_unstable();
    let mut out = StepFn::default();
    let mut n: i64 = 0;
    let mut i = 0;
    while i < deltas.len() {
        let t = deltas[i].0;
        while i < deltas.len() && deltas[i].0 == t {
            n += deltas[i].1;
            i += 1;
        }
        let rel = SimTime(t.saturating_sub(offset_ms));
        if rel < end {
            out.push(rel, n.max(0) as u32);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_becomes_desired_replicas_rounded_up_by_the_target() {
        let d = DemandSpec::Table {
            points: vec![(0.0, 0.0), (100.0, 3.0), (200.0, 0.0)],
        };
        let s = d
            .desired(
                SimTime::from_secs(1000),
                0.75,
                "d",
                &mut |_, _| unreachable!(),
            )
            .unwrap();
        // 3 / 0.75 = 4 exactly.
        assert_eq!(
            s.points,
            vec![(SimTime::from_secs(100), 4), (SimTime::from_secs(200), 0)]
        );
        assert_eq!(s.integral(SimTime::from_secs(1000)), 4 * 100_000);
    }

    #[test]
    fn a_diurnal_series_stays_within_mean_plus_minus_amplitude() {
        let d = DemandSpec::Diurnal {
            mean_replicas: 10.0,
            amplitude: 6.0,
            period_s: 86_400,
            phase_s: 0,
            step_s: 300,
        };
        let s = d
            .desired(
                SimTime::from_secs(86_400),
                1.0,
                "d",
                &mut |_, _| unreachable!(),
            )
            .unwrap();
        let max = s.points.iter().map(|p| p.1).max().unwrap();
        let min = s.points[..s.points.len() - 1]
            .iter()
            .map(|p| p.1)
            .min()
            .unwrap();
        assert_eq!((min, max), (4, 16));
        // The peak is at a quarter period (21,600 s): sin = 1, load 16.
        assert_eq!(s.at(SimTime::from_secs(21_600)), 16);
        assert_eq!(s.at(SimTime::from_secs(0)), 10);
    }

    #[test]
    fn bad_series_name_their_field() {
        let d = DemandSpec::Diurnal {
            mean_replicas: 2.0,
            amplitude: 3.0,
            period_s: 10,
            phase_s: 0,
            step_s: 1,
        };
        assert_eq!(d.validate("x").unwrap_err().0, "x.amplitude");
        let t = DemandSpec::Table {
            points: vec![(5.0, 1.0), (5.0, 2.0)],
        };
        assert_eq!(t.validate("x").unwrap_err().0, "x.points[1]");
    }
}
