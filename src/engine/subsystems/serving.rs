//! Inference services in the engine ([`crate::serving`]): replica jobs and their account.
//!
//! Each planned replica ([`crate::serving::Replica`]) is submitted as a one-task job of its
//! service's queue and tenant at its start (before the trace's arrivals of that instant; tie
//! key: service order, then replica index). When it starts, its completion is queued at its
//! planned stop (not `start + run time`), so a replica that waited for capacity still ends
//! when the autoscaler removes it. It is placed, preempts and is preempted by the
//! scheduler's own stages like any job: serving takes capacity back from training only if
//! the scenario's preemption policy lets the service's queue preempt (e.g. `tiers = true`
//! with a `production` queue), victims keep their grace period and checkpoint.
//!
//! A replica still pending at its planned stop is withdrawn from its queue
//! ([`fleetsim_policies::Scheduler::withdraw`]) at that instant, after the instant's
//! completions (event class of node events, before arrivals and the pass): it never runs
//! again, and `jobs.csv` has it as `CANCELLED` with reason `withdrawn`. One still inside
//! a grace period or the dispatch latency at its stop is withdrawn as soon as it would
//! rejoin the queue.
//!
//! # Account (over `[start_s, min(end_s, end of run))`)
//! * shortfall: `∫ max(0, desired(t) − running(t)) dt`, replica-seconds, where `running`
//!   counts replicas holding resources outside a grace period;
//! * SLO attainment: the fraction of the window with `running(t) ≥ desired(t)`;
//! * training: GPU-time allocated to jobs of other tenants (the occupancy integral, window
//!   of the run's metrics), lost to preemptions by replicas, lost in all, and goodput =
//!   allocated − lost.

use std::collections::BTreeMap;

use fleetsim_policies::{JobId, SimTime, TaskShape};

use crate::serving::{ServingPlan, StepFn};
use crate::workload::{JobSpec, RecordedKind};

/// One service's account (`summary.json` `serving.services[]`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct ServiceStats {
    /// Service name.
    pub name: String,
    /// Replicas the autoscaler added (replica jobs submitted).
    pub replicas_added: u64,
    /// Most replicas desired at once.
    pub peak_desired: u32,
    /// Desired replica-seconds over the window.
    pub desired_replica_s: f64,
    /// Running replica-seconds over the window.
    pub running_replica_s: f64,
    /// Replica shortfall, replica-seconds: `∫ max(0, desired − running) dt`.
    pub shortfall_replica_s: f64,
    /// Fraction of the window with running ≥ desired.
    pub slo_attainment: f64,
    /// Times its replicas were preempted or lost.
    pub replica_stops: u64,
    /// Desired replicas over the serving window (0 outside it), for `timeseries.csv`
    /// (not in the summary).
    #[serde(skip)]
    #[schemars(skip)]
    pub desired_levels: crate::metrics::steps::StepLog,
    /// Running replicas (holding resources outside a grace period) over the run, for
    /// `timeseries.csv` (not in the summary).
    #[serde(skip)]
    #[schemars(skip)]
    pub running_levels: crate::metrics::steps::StepLog,
}

/// The serving account of a run (`summary.json` section `serving`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct ServingStats {
    /// Length of the serving window, seconds.
    pub window_s: f64,
    /// Per service, in scenario order.
    pub services: Vec<ServiceStats>,
    /// Accelerator-seconds of replicas running (outside grace periods), whole run.
    pub serving_gpu_s: f64,
    /// Accelerator-seconds allocated to training jobs (every other tenant) over the
    /// metrics window, grace periods included.
    pub training_allocated_gpu_s: f64,
    /// Training accelerator-seconds lost to preemptions by replicas (progress since the last
    /// checkpoint plus grace).
    pub training_lost_to_serving_gpu_s: f64,
    /// Training accelerator-seconds lost to any preemption or failure.
    pub training_lost_gpu_s: f64,
    /// `training_allocated_gpu_s − training_lost_gpu_s`: useful training work.
    pub training_goodput_gpu_s: f64,
    /// Training preemptions by replicas.
    pub training_preemptions_by_serving: u64,
    /// Fleet GPU occupancy over the metrics window (allocated / available), serving and
    /// training together.
    pub fleet_occupancy: f64,
    /// The part of `fleet_occupancy` held by replicas.
    pub serving_occupancy: f64,
    /// Waits of the replicas that started (all pending time, as the jobs' `wait_s`),
    /// seconds: replicas are not in the jobs' wait, JCT and slowdown statistics.
    pub replica_wait_s: crate::metrics::Dist,
}

#[derive(Clone, Debug)]
struct Svc {
    desired: StepFn,
    running: u32,
    since: SimTime,
    desired_ms: u128,
    running_ms: u128,
    short_ms: u128,
    ok_ms: u128,
    added: u64,
    stops: u64,
    running_log: crate::metrics::steps::StepLog,
}

/// Replica arrivals in submit order: (start, service, replica index, stop).
type Arrival = (SimTime, u32, u32, SimTime);

/// The serving state of a run.
pub struct Serving {
    plan: ServingPlan,
    arrivals: Vec<Arrival>,
    next: usize,
    svcs: Vec<Svc>,
    /// Replica jobs in flight: job → (service, stop, running, arrival number).
    jobs: BTreeMap<JobId, (u32, SimTime, bool, u32)>,
    /// Replica jobs in flight by arrival number (the key of their stop events).
    by_arrival: BTreeMap<u32, JobId>,
    serving_gpu_ms: u128,
    held_gpus: u64,
    held_since: SimTime,
    /// Tenant names of the services.
    pub tenants: Vec<String>,
    lost_to_serving: u128,
    preemptions_by_serving: u64,
}

fn secs(ms: u128) -> f64 {
    ms as f64 / 1000.0
}

impl Serving {
    /// The state of `plan` at t = 0.
    pub fn new(plan: ServingPlan) -> Serving {
        let mut arrivals: Vec<Arrival> = Vec::new();
        for (s, svc) in plan.services.iter().enumerate() {
            for r in &svc.replicas {
                arrivals.push((r.start, s as u32, r.index, r.stop));
            }
        }
        arrivals.sort_unstable();
        let svcs = plan
            .services
            .iter()
            .map(|s| Svc {
                desired: s.desired.clone(),
                running: 0,
                since: plan.start,
                desired_ms: 0,
                running_ms: 0,
                short_ms: 0,
                ok_ms: 0,
                added: 0,
                stops: 0,
                running_log: crate::metrics::steps::StepLog::default(),
            })
            .collect();
        Serving {
            tenants: plan.services.iter().map(|s| s.tenant.clone()).collect(),
            plan,
            arrivals,
            next: 0,
            svcs,
            jobs: BTreeMap::new(),
            by_arrival: BTreeMap::new(),
            serving_gpu_ms: 0,
            held_gpus: 0,
            held_since: SimTime::ZERO,
            lost_to_serving: 0,
            preemptions_by_serving: 0,
        }
    }

    /// Submit time of the next replica not yet submitted.
    pub fn next_arrival(&self) -> Option<SimTime> {
        self.arrivals.get(self.next).map(|a| a.0)
    }

    /// The next replica due at `t` as a job with its service, planned stop and arrival
    /// number, or `None`.
    pub fn take_due(&mut self, t: SimTime) -> Option<(JobSpec, u32, SimTime, u32)> {
        let &(start, s, k, stop) = self.arrivals.get(self.next)?;
        if start != t {
            return None;
        }
        let n = self.next;
        self.next += 1;
        let p = &self.plan.services[s as usize];
        self.svcs[s as usize].added += 1;
        let mut shape = TaskShape::whole_gpus(p.gpus);
        shape.cpu_milli = p.cpu_milli;
        shape.mem_mib = p.mem_mib;
        let spec = JobSpec {
            name: format!("{}/r{k}#{n}", p.name).into(),
            tenant: p.tenant.as_str().into(),
            queue: Some(p.queue.clone()),
            priority: p.priority,
            qos: Some("serving".into()),
            submit: start,
            tasks: 1,
            shape,
            gpu_models: p.gpu_models.clone(),
            cells: self
                .plan
                .reserved_cells
                .iter()
                .map(|c| c.as_str().into())
                .collect(),
            runtime: stop.saturating_since(start),
            time_limit: None,
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology: None,
            // A replica's shape is given: rigid.
            split: false,
            elastic: None,
        };
        Some((spec, s, stop, n as u32))
    }

    /// Registers submitted replica job `id`, arrival number `n`.
    pub fn register(&mut self, id: JobId, service: u32, stop: SimTime, n: u32) {
        self.jobs.insert(id, (service, stop, false, n));
        self.by_arrival.insert(n, id);
    }

    /// The replica job of arrival number `n` while it is in flight.
    pub fn job_of(&self, n: u32) -> Option<JobId> {
        self.by_arrival.get(&n).copied()
    }

    /// The arrival number of replica job `id`, `None` for a training job.
    pub fn arrival_of(&self, id: JobId) -> Option<u32> {
        self.jobs.get(&id).map(|j| j.3)
    }

    /// Replica `id`, pending, was withdrawn at its stop: it leaves the account.
    pub fn on_withdrawn(&mut self, id: JobId) {
        if let Some(j) = self.jobs.remove(&id) {
            debug_assert!(!j.2, "a withdrawn replica was pending");
            self.by_arrival.remove(&j.3);
        }
    }

    /// The planned stop of replica job `id`, `None` for a training job.
    pub fn stop_of(&self, id: JobId) -> Option<SimTime> {
        self.jobs.get(&id).map(|j| j.1)
    }

    /// Cells only serving uses (empty: shared).
    pub fn reserved_cells(&self) -> &[String] {
        &self.plan.reserved_cells
    }

    /// Whether `id` is a replica job.
    pub fn is_replica(&self, id: JobId) -> bool {
        self.jobs.contains_key(&id)
    }

    /// Integrates every service up to `t`.
    pub fn advance(&mut self, t: SimTime) {
        let end = self.plan.end;
        for s in &mut self.svcs {
            let to = t.min(end);
            let mut a = s.since;
            while a < to {
                // The desired value is constant on [a, next breakpoint).
                let i = s.desired.points.partition_point(|p| p.0 <= a);
                let b = s.desired.points.get(i).map_or(to, |p| p.0.min(to));
                let d = s.desired.at(a);
                let dt = (b.0 - a.0) as u128;
                s.desired_ms += d as u128 * dt;
                s.running_ms += s.running as u128 * dt;
                s.short_ms += d.saturating_sub(s.running) as u128 * dt;
                if s.running >= d {
                    s.ok_ms += dt;
                }
                a = b;
            }
            s.since = s.since.max(to);
        }
        self.serving_gpu_ms +=
            self.held_gpus as u128 * t.saturating_since(self.held_since).0 as u128;
        self.held_since = t;
    }

    /// Replica `id` started (it holds `gpus` accelerators).
    pub fn on_start(&mut self, id: JobId, gpus: u64) {
        if let Some(j) = self.jobs.get_mut(&id) {
            j.2 = true;
            let s = &mut self.svcs[j.0 as usize];
            s.running += 1;
            s.running_log.set(self.held_since, u64::from(s.running));
            self.held_gpus += gpus;
        }
    }

    /// Replica `id` stopped running (ended, preempted or lost); `end` removes it.
    pub fn on_stop(&mut self, id: JobId, gpus: u64, end: bool) {
        let Some(j) = self.jobs.get_mut(&id) else {
            return;
        };
        if j.2 {
            j.2 = false;
            let s = &mut self.svcs[j.0 as usize];
            s.running -= 1;
            s.running_log.set(self.held_since, u64::from(s.running));
            if !end {
                s.stops += 1;
            }
            self.held_gpus -= gpus;
        }
        if end {
            if let Some(j) = self.jobs.remove(&id) {
                self.by_arrival.remove(&j.3);
            }
        }
    }

    /// A training job lost `lost` GPU-milli·ms to a preemption by a replica.
    pub fn on_preempted_by_serving(&mut self, lost: u128) {
        self.lost_to_serving += lost;
        self.preemptions_by_serving += 1;
    }

    /// The account at the end of the run (`end`); `training_allocated` and `training_lost`
    /// in GPU-milli·ms, `occupancy` = (allocated, available, serving allocated) GPU-milli·ms
    /// over the metrics window.
    pub fn finish(
        &mut self,
        end: SimTime,
        training_allocated: u128,
        training_lost: u128,
        occupancy: (u128, u128, u128),
    ) -> ServingStats {
        self.advance(end);
        let window = end.min(self.plan.end).saturating_since(self.plan.start).0 as u128;
        let services = self
            .plan
            .services
            .iter()
            .zip(&self.svcs)
            .map(|(p, s)| ServiceStats {
                name: p.name.clone(),
                replicas_added: s.added,
                peak_desired: s.desired.points.iter().map(|p| p.1).max().unwrap_or(0),
                desired_replica_s: secs(s.desired_ms),
                running_replica_s: secs(s.running_ms),
                shortfall_replica_s: secs(s.short_ms),
                slo_attainment: if window == 0 {
                    1.0
                } else {
                    s.ok_ms as f64 / window as f64
                },
                replica_stops: s.stops,
                desired_levels: {
                    let mut d = crate::metrics::steps::StepLog::default();
                    for &(t, v) in &s.desired.points {
                        if t < self.plan.end {
                            d.set(t.max(self.plan.start), u64::from(v));
                        }
                    }
                    d.set(self.plan.end, 0);
                    d
                },
                running_levels: s.running_log.clone(),
            })
            .collect();
        let milli_s = |v: u128| v as f64 / 1e6;
        let ratio = |a: u128, b: u128| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        ServingStats {
            window_s: secs(window),
            services,
            serving_gpu_s: secs(self.serving_gpu_ms),
            training_allocated_gpu_s: milli_s(training_allocated),
            training_lost_to_serving_gpu_s: milli_s(self.lost_to_serving),
            training_lost_gpu_s: milli_s(training_lost),
            training_goodput_gpu_s: milli_s(training_allocated.saturating_sub(training_lost)),
            training_preemptions_by_serving: self.preemptions_by_serving,
            fleet_occupancy: ratio(occupancy.0, occupancy.1),
            serving_occupancy: ratio(occupancy.2, occupancy.1),
            replica_wait_s: crate::metrics::Dist::default(),
        }
    }
}
