//! Inference services beside training: `[serving]` in a scenario.
//!
//! A service has a replica shape (one task of `gpus` accelerators, optional CPU, memory and
//! accelerator models), a demand series (its load, in replicas' worth at 100 % utilisation,
//! over time) and an autoscaler (target utilisation, scale-up and scale-down delay). The
//! demand is exogenous, so the replica count the autoscaler asks for is known before the run
//! ([`plan`]); the engine ([`crate::engine::serving`]) submits each replica as a job
//! of the service's queue (a high tier: it preempts training through the scheduler's own
//! preemption path when the scenario's policy lets that tier preempt) and ends it when the
//! autoscaler removes it.
//!
//! # The autoscaler (deterministic, integer ms)
//! `desired(t) = ⌈load(t) / target_utilization⌉` (a step function: a diurnal load is sampled
//! every `step_s`; a table holds its value until the next point; a trace's count of live
//! instances changes at its creations and deletions). With `u = scale_up_delay_s` and
//! `w = max(scale_down_delay_s, u)`, the replica target is
//! `target(t) = max { desired(s) : t − w ≤ s ≤ t − u }` (0 before any demand): a rise of
//! demand is acted on `u` later; a fall only once the demand has stayed lower for `w`
//! (the Kubernetes HPA's scale-down stabilisation window, here with a scale-up lag too).
//! Replica `k` (0-based) of a service exists while `target(t) > k`: the newest replica is
//! removed first. Replicas are submitted at the instant they are added, before the trace's
//! arrivals of that instant, in service order then replica index (the tie key).
//!
//! SLO attainment compares the replicas *running* with `desired(t)` (not the lagged
//! target): the scale-up delay, waiting for capacity and victims' grace periods all count
//! as shortfall.

pub mod demand;

use serde::Deserialize;

use fleetsim_policies::SimTime;

pub use demand::{DemandSpec, StepFn};

/// `[serving]`: inference services placed beside the training workload.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServingSpec {
    /// Start of the demand series, seconds (default 0): no demand before it, and the
    /// serving window starts there.
    #[serde(default)]
    pub start_s: i64,
    /// End of the demand series, seconds: no replica exists from then on (and the metrics'
    /// serving window ends there, or at the end of the run if that is earlier).
    pub end_s: i64,
    /// Co-location by reserved pool: names of cells that only serving uses. Every
    /// service's replicas are placed in these cells only, and training jobs (every other
    /// tenant) never in them (a training job that names only reserved cells is rejected
    /// with `no_allowed_cell`). Empty (the default): serving and training share every cell.
    /// Each name must be a fleet cell, at most once, and at least one cell must be left to
    /// training.
    #[serde(default)]
    pub reserved_cells: Vec<String>,
    /// The services, in tie order.
    pub services: Vec<ServiceSpec>,
}

/// One `[[serving.services]]` entry.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    /// Service name (unique); replica jobs are named `<name>/r<k>#<n>`.
    pub name: String,
    /// Queue of its replicas (default: the service name). Give it a high `tier` (e.g.
    /// `production`) in `[[queues]]` for serving to preempt training.
    #[serde(default)]
    pub queue: Option<String>,
    /// Tenant of its replicas (default `serving-<name>`); must not be a training tenant.
    #[serde(default)]
    pub tenant: Option<String>,
    /// Priority of its replica jobs (default 1000: first under `queue_order = "priority"`).
    #[serde(default = "default_priority")]
    pub priority: i32,
    /// One replica's shape.
    pub replica: ReplicaSpec,
    /// Load over time, in replicas' worth at 100 % utilisation.
    pub demand: Option<DemandSpec>,
    /// Autoscaler settings.
    #[serde(default)]
    pub autoscaler: AutoscalerSpec,
}

fn default_priority() -> i32 {
    1000
}

/// One replica: a single task.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplicaSpec {
    /// Whole accelerators per replica (≥ 1, at most any node's).
    pub gpus: i64,
    /// CPU per replica, milli-cores.
    #[serde(default)]
    pub cpu_milli: u64,
    /// Memory per replica, MiB.
    #[serde(default)]
    pub mem_mib: u64,
    /// Accelerator models allowed (catalog names); empty: any.
    #[serde(default)]
    pub gpu_models: Vec<String>,
}

/// `autoscaler = { … }` of a service.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AutoscalerSpec {
    /// Target utilisation of a replica, in (0, 1] (default 1).
    #[serde(default = "one")]
    pub target_utilization: f64,
    /// Time from a rise of demand to the replica request, seconds (default 0).
    #[serde(default)]
    pub scale_up_delay_s: f64,
    /// Time demand must stay lower before replicas are removed, seconds (default 0).
    #[serde(default)]
    pub scale_down_delay_s: f64,
}

fn one() -> f64 {
    1.0
}

impl Default for AutoscalerSpec {
    fn default() -> Self {
        AutoscalerSpec {
            target_utilization: 1.0,
            scale_up_delay_s: 0.0,
            scale_down_delay_s: 0.0,
        }
    }
}

/// A bad `[serving]` field: the field path (`serving.services[0].demand.amplitude`) and
/// what is wrong.
pub type FieldError = (String, String);

/// Checks `[serving]` against the fleet's largest node (accelerators), naming the field of
/// the first problem.
///
/// # Errors
/// The field path and a message.
pub fn validate(s: &ServingSpec, max_node_gpus: u32) -> Result<(), FieldError> {
    let e = |f: String, m: &str| Err((f, m.to_string()));
    if s.start_s < 0 {
        return e("serving.start_s".into(), "must be ≥ 0 seconds");
    }
    if s.end_s <= s.start_s {
        return e("serving.end_s".into(), "must be after start_s");
    }
    if s.services.is_empty() {
        return e("serving.services".into(), "give at least one service");
    }
    for (i, svc) in s.services.iter().enumerate() {
        let f = format!("serving.services[{i}]");
        if svc.name.is_empty() {
            return e(format!("{f}.name"), "must not be empty");
        }
        if s.services[..i].iter().any(|o| o.name == svc.name) {
            return e(format!("{f}.name"), "duplicate service name");
        }
        if svc.replica.gpus < 1 {
            return e(format!("{f}.replica.gpus"), "must be at least 1");
        }
        if svc.replica.gpus > max_node_gpus as i64 {
            return Err((
                format!("{f}.replica.gpus"),
                format!(
                    "a replica of {} accelerators fits on no node (the largest has {max_node_gpus})",
                    svc.replica.gpus
                ),
            ));
        }
        let a = &svc.autoscaler;
        if !(a.target_utilization > 0.0 && a.target_utilization <= 1.0) {
            return e(
                format!("{f}.autoscaler.target_utilization"),
                "must be in (0, 1]",
            );
        }
        for (name, v) in [
            ("scale_up_delay_s", a.scale_up_delay_s),
            ("scale_down_delay_s", a.scale_down_delay_s),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return e(
                    format!("{f}.autoscaler.{name}"),
                    "must be a finite number of seconds ≥ 0",
                );
            }
        }
        match &svc.demand {
            None => {
                return e(
                    format!("{f}.demand"),
                    "a service needs a demand series (kind = \"diurnal\", \"table\" or \"trace\")",
                )
            }
            Some(d) => d.validate(&format!("{f}.demand"))?,
        }
    }
    Ok(())
}

/// One replica's life as the autoscaler plans it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replica {
    /// Replica index `k` (0-based) within its service.
    pub index: u32,
    /// When it is added (submitted).
    pub start: SimTime,
    /// When it is removed.
    pub stop: SimTime,
}

/// The autoscaler's replica target from `desired` (see the module docs): a step function.
///
/// `up_ms` and `down_ms` are the scale-up and scale-down delays; `end` cuts every replica.
pub fn target(desired: &StepFn, up_ms: u64, down_ms: u64, end: SimTime) -> StepFn {
    let w = down_ms.max(up_ms);
    // target changes only where a breakpoint enters (b + up) or leaves (b + w) the window.
    let mut cand: Vec<u64> = Vec::with_capacity(desired.points.len() * 2 + 1);
    for &(b, _) in &desired.points {
        cand.push(b.0.saturating_add(up_ms));
        cand.push(b.0.saturating_add(w));
    }
    cand.push(end.0);
    cand.sort_unstable();
    cand.dedup();
    let mut out = StepFn::default();
    for t in cand {
        let v = if t >= end.0 {
            0
        } else {
            desired.max_over(t.saturating_sub(w), t - up_ms.min(t), t >= up_ms)
        };
        out.push(SimTime(t), v);
    }
    out
}

/// Replica lives from a replica target: replica `k` from each rise of the target above `k`
/// to the next fall to `k` or below. Sorted by start, then index.
pub fn replicas(target: &StepFn) -> Vec<Replica> {
    let mut open: Vec<SimTime> = Vec::new();
    let mut out = Vec::new();
    for &(t, v) in &target.points {
        let v = v as usize;
        while open.len() > v {
            let k = open.len() - 1;
            let start = open.pop().expect("nonempty");
            out.push(Replica {
                index: k as u32,
                start,
                stop: t,
            });
        }
        while open.len() < v {
            open.push(t);
        }
    }
    // A target never falls back to 0 only if it had no end point; close at the last point.
    let last = target.points.last().map_or(SimTime::ZERO, |p| p.0);
    while let Some(start) = open.pop() {
        out.push(Replica {
            index: open.len() as u32,
            start,
            stop: last,
        });
    }
    out.retain(|r| r.stop > r.start);
    out.sort_by_key(|r| (r.start, r.index));
    out
}

/// A service as the engine runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServicePlan {
    /// Service name.
    pub name: String,
    /// Queue of its replicas.
    pub queue: String,
    /// Tenant of its replicas.
    pub tenant: String,
    /// Priority of its replica jobs.
    pub priority: i32,
    /// Accelerators per replica.
    pub gpus: u32,
    /// CPU per replica, milli-cores.
    pub cpu_milli: u64,
    /// Memory per replica, MiB.
    pub mem_mib: u64,
    /// Allowed accelerator models.
    pub gpu_models: Vec<String>,
    /// Desired replicas over time (the SLO's reference).
    pub desired: StepFn,
    /// The replicas, sorted by start then index.
    pub replicas: Vec<Replica>,
}

/// Every service of a run, and the end of the serving window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServingPlan {
    /// Start of the demand series and of the serving window.
    pub start: SimTime,
    /// End of the demand series.
    pub end: SimTime,
    /// Cells only serving uses ([`ServingSpec::reserved_cells`]); empty: shared.
    pub reserved_cells: Vec<String>,
    /// The services, in scenario order.
    pub services: Vec<ServicePlan>,
}

/// Most replicas one service may desire at once: 2^20, about the accelerators of the
/// largest fleets (a demand beyond it is a unit mistake, and its replica jobs would not fit
/// in memory).
pub const MAX_REPLICAS: u32 = 1 << 20;

/// Builds the plan of a validated `[serving]`; `trace_path` resolves a `kind = "trace"`
/// demand's file (field, public path) to a path under the trace directory.
///
/// # Errors
/// The field and message of an unreadable or empty trace demand, or of a demand above
/// [`MAX_REPLICAS`].
pub fn plan(
    s: &ServingSpec,
    trace_path: &mut dyn FnMut(&str, &str) -> Result<std::path::PathBuf, FieldError>,
) -> Result<ServingPlan, FieldError> {
    let end = SimTime::from_secs(s.end_s as u64);
    let mut services = Vec::new();
    for (i, svc) in s.services.iter().enumerate() {
        let f = format!("serving.services[{i}].demand");
        let d = svc.demand.as_ref().expect("validated");
        let a = &svc.autoscaler;
        let start = SimTime::from_secs(s.start_s as u64);
        let full = d.desired(end, a.target_utilization, &f, trace_path)?;
        let mut desired = StepFn::default();
        desired.push(SimTime::ZERO, 0);
        desired.push(start, full.at(start));
        for &(t, v) in full.points.iter().filter(|p| p.0 > start) {
            desired.push(t, v);
        }
        if let Some(&(t, v)) = desired.points.iter().find(|p| p.1 > MAX_REPLICAS) {
            return Err((
                f,
                format!(
                    "the demand asks for {}{v} replicas at {} s (load / target utilization); at most {MAX_REPLICAS} replicas per service",
                    if v == u32::MAX { "at least " } else { "" },
                    t.0 / 1000
                ),
            ));
        }
        let ms = |x: f64| (x * 1000.0).round() as u64;
        let tgt = target(
            &desired,
            ms(a.scale_up_delay_s),
            ms(a.scale_down_delay_s),
            end,
        );
        services.push(ServicePlan {
            name: svc.name.clone(),
            queue: svc.queue.clone().unwrap_or_else(|| svc.name.clone()),
            tenant: svc
                .tenant
                .clone()
                .unwrap_or_else(|| format!("serving-{}", svc.name)),
            priority: svc.priority,
            gpus: svc.replica.gpus as u32,
            cpu_milli: svc.replica.cpu_milli,
            mem_mib: svc.replica.mem_mib,
            gpu_models: svc.replica.gpu_models.clone(),
            replicas: replicas(&tgt),
            desired,
        });
    }
    Ok(ServingPlan {
        start: SimTime::from_secs(s.start_s as u64),
        end,
        reserved_cells: s.reserved_cells.clone(),
        services,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(p: &[(u64, u32)]) -> StepFn {
        let mut s = StepFn::default();
        for &(t, v) in p {
            s.push(SimTime::from_secs(t), v);
        }
        s
    }

    #[test]
    fn target_lags_rises_by_up_and_falls_by_the_window() {
        // desired 0 → 2 at 100 s → 0 at 300 s; up 10 s, down 60 s; end 1000 s.
        let d = step(&[(0, 0), (100, 2), (300, 0)]);
        let t = target(&d, 10_000, 60_000, SimTime::from_secs(1000));
        let at = |s: u64| t.at(SimTime::from_secs(s));
        assert_eq!(at(109), 0);
        assert_eq!(at(110), 2);
        assert_eq!(at(359), 2);
        assert_eq!(at(360), 0);
        let r = replicas(&t);
        assert_eq!(
            r,
            vec![
                Replica {
                    index: 0,
                    start: SimTime::from_secs(110),
                    stop: SimTime::from_secs(360)
                },
                Replica {
                    index: 1,
                    start: SimTime::from_secs(110),
                    stop: SimTime::from_secs(360)
                },
            ]
        );
    }

    #[test]
    fn a_dip_shorter_than_the_window_removes_nothing_and_the_newest_goes_first() {
        // 3 → 1 for 30 s → 3 → 1 for good at 200 s; down window 60 s; no up delay.
        let d = step(&[(0, 3), (100, 1), (130, 3), (200, 1)]);
        let t = target(&d, 0, 60_000, SimTime::from_secs(500));
        assert_eq!(t.at(SimTime::from_secs(150)), 3);
        assert_eq!(t.at(SimTime::from_secs(259)), 3);
        assert_eq!(t.at(SimTime::from_secs(260)), 1);
        let r = replicas(&t);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].stop, SimTime::from_secs(500)); // replica 0 to the end
        assert_eq!((r[1].index, r[1].stop), (1, SimTime::from_secs(260)));
        assert_eq!((r[2].index, r[2].stop), (2, SimTime::from_secs(260)));
    }
}
