//! The workload transforms as a [`JobStream`] adaptor (sample, window, arrival rate, tenant
//! map; see the [module docs](super) for the exact rules).

use std::collections::BTreeMap;

use fleetsim_policies::SimTime;
use rand::Rng as _;

use super::TransformsSpec;
use crate::rng::{self, Rng};
use crate::scenario::secs_to_ms;
use crate::workload::{JobSpec, JobStream, Skipped, TraceError};

/// A job stream with the workload transforms applied.
pub struct TransformedStream {
    inner: Box<dyn JobStream>,
    sample: Option<(f64, Rng)>,
    window: Option<(u64, Option<u64>)>,
    rate_scale: Option<f64>,
    t0: Option<u64>,
    tenant_map: BTreeMap<String, String>,
    dropped_sample: u64,
    dropped_window: u64,
}

impl TransformedStream {
    /// Wraps `inner`; `seed` seeds the sampling stream `whatif.sample`.
    pub fn new(inner: Box<dyn JobStream>, spec: &TransformsSpec, seed: u64) -> TransformedStream {
        TransformedStream {
            inner,
            sample: spec
                .sample_fraction
                .map(|p| (p, rng::stream(seed, "whatif.sample"))),
            window: spec
                .window
                .as_ref()
                .map(|w| (secs_to_ms(w.start_s), w.end_s.map(secs_to_ms))),
            rate_scale: spec.arrival_rate_scale,
            t0: None,
            tenant_map: spec.tenant_map.clone(),
            dropped_sample: 0,
            dropped_window: 0,
        }
    }

    fn map_time(&self, t0: u64, t: u64, scale: f64) -> u64 {
        if t < t0 {
            return t;
        }
        t0 + ((t - t0) as f64 / scale).round() as u64
    }
}

impl Iterator for TransformedStream {
    type Item = Result<JobSpec, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let mut job = match self.inner.next()? {
                Ok(j) => j,
                Err(e) => return Some(Err(e)),
            };
            let keep = match &mut self.sample {
                Some((p, rng)) => rng.random::<f64>() < *p,
                None => true,
            };
            if let Some((a, b)) = self.window {
                let t = job.submit.0;
                if t < a || b.is_some_and(|b| t >= b) {
                    self.dropped_window += 1;
                    continue;
                }
            }
            if !keep {
                self.dropped_sample += 1;
                continue;
            }
            if let Some(scale) = self.rate_scale {
                let t0 = *self.t0.get_or_insert(job.submit.0);
                job.submit = SimTime(self.map_time(t0, job.submit.0, scale));
                job.recorded_start = job
                    .recorded_start
                    .map(|s| SimTime(self.map_time(t0, s.0, scale)));
            }
            if let Some(to) = self
                .tenant_map
                .get(job.tenant.as_str())
                .or_else(|| self.tenant_map.get("*"))
            {
                job.tenant = to.as_str().into();
            }
            return Some(Ok(job));
        }
    }
}

impl JobStream for TransformedStream {
    fn trace_start(&self) -> Option<crate::workload::TraceStart> {
        self.inner.trace_start()
    }

    fn skipped(&self) -> Skipped {
        let mut s = self.inner.skipped();
        if self.dropped_sample > 0 {
            *s.entry("transform_sample".into()).or_insert(0) += self.dropped_sample;
        }
        if self.dropped_window > 0 {
            *s.entry("transform_window".into()).or_insert(0) += self.dropped_window;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::VecStream;

    fn jobs() -> Vec<JobSpec> {
        (0..10)
            .map(|i| {
                JobSpec::simple(
                    &format!("j{i}"),
                    if i % 2 == 0 { "a" } else { "b" },
                    100 + 10 * i,
                    1,
                    5,
                )
            })
            .collect()
    }

    fn run(spec: &str) -> (Vec<JobSpec>, Skipped) {
        let t: super::super::Transforms = toml::from_str(spec).unwrap();
        let inner = Box::new(VecStream::new(jobs(), Skipped::new()));
        let mut s = TransformedStream::new(inner, &t.spec, 1);
        let out: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        (out, s.skipped())
    }

    #[test]
    fn rate_scale_compresses_gaps_from_the_first_job() {
        // Submits 100, 110, …, 190 s; scale 2 → 100 + (t − 100) / 2 = 100, 105, …, 145 s.
        let (out, _) = run("arrival_rate_scale = 2.0");
        let s: Vec<u64> = out.iter().map(|j| j.submit.0 / 1000).collect();
        assert_eq!(s, vec![100, 105, 110, 115, 120, 125, 130, 135, 140, 145]);
    }

    #[test]
    fn window_and_tenant_map() {
        // [120, 150) keeps j2, j3, j4; a → x, b → "*" → y.
        let (out, skipped) = run(
            "window = { start_s = 120, end_s = 150 }\ntenant_map = { a = \"x\", \"*\" = \"y\" }",
        );
        let names: Vec<(&str, &str)> = out
            .iter()
            .map(|j| (j.name.as_str(), j.tenant.as_str()))
            .collect();
        assert_eq!(names, vec![("j2", "x"), ("j3", "y"), ("j4", "x")]);
        assert_eq!(skipped["transform_window"], 7);
    }

    #[test]
    fn sampling_is_seeded_and_counted() {
        let (a, sa) = run("sample_fraction = 0.5");
        let (b, _) = run("sample_fraction = 0.5");
        assert_eq!(a, b);
        assert_eq!(a.len() as u64 + sa["transform_sample"], 10);
    }
}
