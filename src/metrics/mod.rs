//! Metric collectors, accumulated in streaming form while the engine runs (DESIGN §6).
//!
//! * **occupancy** (allocation rate) = allocated GPU-milli·ms / available GPU-milli·ms over the
//!   window `[a, b]`; a node that is down or drained is not available; a fractional task counts
//!   its GPU-milli. Fleet-wide, per cell and per accelerator model, and per time-series interval.
//! * **window**: `a` = first submission + warm-up; `b` = last completion, or the horizon when
//!   the run stopped there with work left.
//! * **wait** (queueing delay) = first start − submit; **JCT** = finish − submit; **bounded
//!   slowdown** = max(1, JCT / max(run time, 10 s)) (Feitelson). Counted for jobs submitted
//!   inside the window; jobs that did not start by `b` are *censored*, counted apart. Jobs
//!   running before the trace window (pre-existing load) are left out of per-job statistics.
//! * **makespan** = last finish − first submission.
//! * **per tenant**: allocated GPU-milli·ms over the window (and per interval), the basis of
//!   the fairness figures (share vs entitlement, Jain's index) in the summary.
//! * **pending reasons**: pending jobs per [`PendingReason`] after every pass, integrated over
//!   the window (job·ms) and per interval.
//!
//! Integrals are exact integers (`u128` GPU-milli·ms); ratios are formed once, at the end.

pub mod stats;

use fleetsim_policies::{FleetState, PendingReason, SimTime, TaskAlloc, TenantId, WaitProfile};

/// Number of pending reasons.
const NR: usize = PendingReason::ALL.len();

pub use stats::{dist_f64, dist_ms, Dist};

/// One row of `timeseries.csv`: means over one interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesRow {
    /// Interval start, ms.
    pub start: SimTime,
    /// Interval length, ms (the last interval may be shorter).
    pub len_ms: u64,
    /// Time-integrated allocated accelerators per cell (GPU-milli·ms; divide by `len_ms`
    /// for the mean).
    pub allocated_milli: Vec<u128>,
    /// Time-integrated available accelerators per cell (GPU-milli·ms).
    pub available_milli: Vec<u128>,
    /// Time-integrated allocated accelerators per model (GPU-milli·ms).
    pub allocated_model_milli: Vec<u128>,
    /// Time-integrated available accelerators per model (GPU-milli·ms).
    pub available_model_milli: Vec<u128>,
    /// Time-integrated pending jobs (job·ms).
    pub pending_ms: u128,
    /// Time-integrated running jobs (job·ms).
    pub running_ms: u128,
    /// Time-integrated pending jobs per reason (job·ms), indexed by [`PendingReason::index`].
    pub pending_by_reason_ms: [u128; NR],
    /// Time-integrated allocated accelerators per tenant (GPU-milli·ms), by [`TenantId`]
    /// (shorter when later tenants had not appeared yet).
    pub allocated_tenant_milli: Vec<u128>,
}

#[derive(Clone, Debug, Default)]
struct Bucket {
    alloc: Vec<u128>,
    avail: Vec<u128>,
    alloc_model: Vec<u128>,
    avail_model: Vec<u128>,
    pending: u128,
    running: u128,
    by_reason: [u128; NR],
    tenant: Vec<u128>,
}

/// Streaming collector of every time-weighted and per-job metric.
#[derive(Clone, Debug)]
pub struct Collector {
    warmup_ms: u64,
    interval_ms: u64,
    window_start: Option<SimTime>,
    first_submit: Option<SimTime>,
    last_finish: Option<SimTime>,
    last_t: SimTime,
    // Current levels.
    alloc_cell: Vec<u64>,
    avail_cell: Vec<u64>,
    alloc_model: Vec<u64>,
    avail_model: Vec<u64>,
    pending: u64,
    running: u64,
    by_reason: WaitProfile,
    alloc_tenant: Vec<u64>,
    // Integrals over the window so far, GPU-milli·ms.
    alloc_int_cell: Vec<u128>,
    avail_int_cell: Vec<u128>,
    alloc_int_model: Vec<u128>,
    avail_int_model: Vec<u128>,
    // Available integrals frozen at the last completion (the default window end).
    avail_at_finish_cell: Vec<u128>,
    avail_at_finish_model: Vec<u128>,
    alloc_int_tenant: Vec<u128>,
    reason_int: [u128; NR],
    reason_at_finish: [u128; NR],
    tenant_at_finish: Vec<u128>,
    buckets: Vec<Bucket>,
    buckets_at_finish: usize,
    /// Waits of measured started jobs, ms.
    pub waits_ms: Vec<u64>,
    /// JCTs of measured finished jobs, ms.
    pub jcts_ms: Vec<u64>,
    /// Bounded slowdowns of measured finished jobs.
    pub slowdowns: Vec<f64>,
}

/// Time-weighted results at the end of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Occupancy {
    /// Window start.
    pub window_start: SimTime,
    /// Window end.
    pub window_end: SimTime,
    /// Allocated GPU-milli·ms per cell.
    pub allocated_cell: Vec<u128>,
    /// Available GPU-milli·ms per cell.
    pub available_cell: Vec<u128>,
    /// Allocated GPU-milli·ms per model.
    pub allocated_model: Vec<u128>,
    /// Available GPU-milli·ms per model.
    pub available_model: Vec<u128>,
    /// Time series rows.
    pub series: Vec<SeriesRow>,
    /// Allocated GPU-milli·ms per tenant over the window (by [`TenantId`]).
    pub allocated_tenant: Vec<u128>,
    /// Pending jobs per reason integrated over the window, job·ms.
    pub pending_by_reason_ms: [u128; NR],
}

/// allocated / available, or `None` when nothing was available.
pub fn ratio(allocated: u128, available: u128) -> Option<f64> {
    (available > 0).then(|| allocated as f64 / available as f64)
}

impl Collector {
    /// A collector for `fleet` with a warm-up and a time-series interval (both ms).
    pub fn new(fleet: &FleetState, warmup_ms: u64, interval_ms: u64) -> Collector {
        let cells = fleet.cells().len();
        let models = fleet.models().len();
        let mut c = Collector {
            warmup_ms,
            interval_ms: interval_ms.max(1),
            window_start: None,
            first_submit: None,
            last_finish: None,
            last_t: SimTime::ZERO,
            alloc_cell: vec![0; cells],
            avail_cell: vec![0; cells],
            alloc_model: vec![0; models],
            avail_model: vec![0; models],
            pending: 0,
            running: 0,
            by_reason: [0; NR],
            alloc_tenant: Vec::new(),
            alloc_int_tenant: Vec::new(),
            reason_int: [0; NR],
            reason_at_finish: [0; NR],
            tenant_at_finish: Vec::new(),
            alloc_int_cell: vec![0; cells],
            avail_int_cell: vec![0; cells],
            alloc_int_model: vec![0; models],
            avail_int_model: vec![0; models],
            avail_at_finish_cell: vec![0; cells],
            avail_at_finish_model: vec![0; models],
            buckets: Vec::new(),
            buckets_at_finish: 0,
            waits_ms: Vec::new(),
            jcts_ms: Vec::new(),
            slowdowns: Vec::new(),
        };
        c.refresh_capacity(fleet);
        c
    }

    /// The window start, once the first job has been submitted.
    pub fn window_start(&self) -> Option<SimTime> {
        self.window_start
    }

    /// True when a job submitted at `submit` is measured (inside the window).
    pub fn measured(&self, submit: SimTime) -> bool {
        self.window_start.is_some_and(|a| submit >= a)
    }

    /// Integrates the current levels from the last call up to `t`. Call before changing any
    /// level at `t`.
    pub fn advance(&mut self, t: SimTime) {
        let Some(a) = self.window_start else {
            self.last_t = t;
            return;
        };
        let from = self.last_t.max(a);
        self.last_t = t;
        if t <= from {
            return;
        }
        let dt = (t.0 - from.0) as u128;
        for (i, &v) in self.alloc_cell.iter().enumerate() {
            self.alloc_int_cell[i] += v as u128 * dt;
        }
        for (i, &v) in self.avail_cell.iter().enumerate() {
            self.avail_int_cell[i] += v as u128 * dt;
        }
        for (i, &v) in self.alloc_model.iter().enumerate() {
            self.alloc_int_model[i] += v as u128 * dt;
        }
        for (i, &v) in self.avail_model.iter().enumerate() {
            self.avail_int_model[i] += v as u128 * dt;
        }
        if self.alloc_int_tenant.len() < self.alloc_tenant.len() {
            self.alloc_int_tenant.resize(self.alloc_tenant.len(), 0);
        }
        for (i, &v) in self.alloc_tenant.iter().enumerate() {
            self.alloc_int_tenant[i] += v as u128 * dt;
        }
        for (i, &v) in self.by_reason.iter().enumerate() {
            self.reason_int[i] += v as u128 * dt;
        }
        // Split [from, t) over time-series buckets.
        let mut s = from.0;
        while s < t.0 {
            let k = ((s - a.0) / self.interval_ms) as usize;
            let bucket_end = a.0 + (k as u64 + 1) * self.interval_ms;
            let e = bucket_end.min(t.0);
            let d = (e - s) as u128;
            if self.buckets.len() <= k {
                let cells = self.alloc_cell.len();
                let models = self.alloc_model.len();
                self.buckets.resize(
                    k + 1,
                    Bucket {
                        alloc: vec![0; cells],
                        avail: vec![0; cells],
                        alloc_model: vec![0; models],
                        avail_model: vec![0; models],
                        ..Bucket::default()
                    },
                );
            }
            let b = &mut self.buckets[k];
            for (i, &v) in self.alloc_cell.iter().enumerate() {
                b.alloc[i] += v as u128 * d;
            }
            for (i, &v) in self.avail_cell.iter().enumerate() {
                b.avail[i] += v as u128 * d;
            }
            for (i, &v) in self.alloc_model.iter().enumerate() {
                b.alloc_model[i] += v as u128 * d;
            }
            for (i, &v) in self.avail_model.iter().enumerate() {
                b.avail_model[i] += v as u128 * d;
            }
            b.pending += self.pending as u128 * d;
            b.running += self.running as u128 * d;
            for (i, &v) in self.by_reason.iter().enumerate() {
                b.by_reason[i] += v as u128 * d;
            }
            if b.tenant.len() < self.alloc_tenant.len() {
                b.tenant.resize(self.alloc_tenant.len(), 0);
            }
            for (i, &v) in self.alloc_tenant.iter().enumerate() {
                b.tenant[i] += v as u128 * d;
            }
            s = e;
        }
    }

    /// Re-reads available capacity per cell and model from the fleet (after a node goes up or
    /// down).
    pub fn refresh_capacity(&mut self, fleet: &FleetState) {
        for (i, c) in fleet.cells().iter().enumerate() {
            self.avail_cell[i] = c.available_gpu_milli;
        }
        self.avail_model.iter_mut().for_each(|v| *v = 0);
        for n in fleet.nodes() {
            if let (Some(m), true) = (n.model, n.schedulable) {
                self.avail_model[m.index()] += n.gpus as u64 * 1000;
            }
        }
    }

    /// A job was submitted at `t` (after [`Collector::advance`]`(t)`).
    pub fn on_submit(&mut self, t: SimTime) {
        if self.first_submit.is_none() {
            self.first_submit = Some(t);
            self.window_start = Some(t + fleetsim_policies::SimDuration(self.warmup_ms));
            self.last_t = t;
        }
    }

    /// Pending-queue length changed.
    pub fn set_pending(&mut self, pending: u64) {
        self.pending = pending;
    }

    /// Pending jobs per reason after a pass.
    pub fn set_pending_reasons(&mut self, counts: &WaitProfile) {
        self.by_reason = *counts;
    }

    /// A job of `tenant` bound (`bind`) or released `gpu_milli` accelerators.
    pub fn on_tenant_alloc(&mut self, tenant: TenantId, gpu_milli: u64, bind: bool) {
        let i = tenant.index();
        if i >= self.alloc_tenant.len() {
            self.alloc_tenant.resize(i + 1, 0);
        }
        let v = &mut self.alloc_tenant[i];
        if bind {
            *v += gpu_milli;
        } else {
            *v -= gpu_milli;
        }
    }

    /// Tasks were bound (`sign = +1`) or released (`-1`).
    pub fn on_allocs(&mut self, fleet: &FleetState, allocs: &[TaskAlloc], bind: bool) {
        for a in allocs {
            let n = fleet.node(a.node);
            let g = a.total_gpu_milli();
            let (cell, model) = (&mut self.alloc_cell[n.cell.index()], n.model);
            if bind {
                *cell += g;
            } else {
                *cell -= g;
            }
            if let Some(m) = model {
                let v = &mut self.alloc_model[m.index()];
                if bind {
                    *v += g;
                } else {
                    *v -= g;
                }
            }
        }
        if bind {
            self.running += 1;
        } else {
            self.running -= 1;
        }
    }

    /// A job started at `start`, submitted at `submit`; `pre_existing` jobs are left out of
    /// per-job statistics.
    pub fn on_start(&mut self, submit: SimTime, start: SimTime, pre_existing: bool) {
        if !pre_existing && self.measured(submit) {
            self.waits_ms.push((start - submit).0);
        }
    }

    /// A job finished at `t` after running `run_ms`.
    pub fn on_finish(&mut self, submit: SimTime, t: SimTime, run_ms: u64, pre_existing: bool) {
        self.last_finish = Some(t);
        self.avail_at_finish_cell.clone_from(&self.avail_int_cell);
        self.avail_at_finish_model.clone_from(&self.avail_int_model);
        self.reason_at_finish = self.reason_int;
        self.tenant_at_finish.clone_from(&self.alloc_int_tenant);
        self.buckets_at_finish = self.buckets.len();
        if !pre_existing && self.measured(submit) {
            let jct = (t - submit).0;
            self.jcts_ms.push(jct);
            let denom = run_ms.max(10_000);
            self.slowdowns.push((jct as f64 / denom as f64).max(1.0));
        }
    }

    /// First submission, if any.
    pub fn first_submit(&self) -> Option<SimTime> {
        self.first_submit
    }

    /// Last completion, if any.
    pub fn last_finish(&self) -> Option<SimTime> {
        self.last_finish
    }

    /// Closes the window. `stopped_at_horizon` is the horizon when the run stopped there with
    /// work left (the window then ends at the horizon); otherwise it ends at the last
    /// completion. Call after [`Collector::advance`] to the final time.
    pub fn finish(&mut self, stopped_at_horizon: Option<SimTime>) -> Occupancy {
        let a = self.window_start.unwrap_or(SimTime::ZERO);
        let (end, avail_cell, avail_model, nb, by_reason, tenant) = match stopped_at_horizon {
            Some(h) => (
                h,
                self.avail_int_cell.clone(),
                self.avail_int_model.clone(),
                self.buckets.len(),
                self.reason_int,
                self.alloc_int_tenant.clone(),
            ),
            None => (
                self.last_finish.unwrap_or(a).max(a),
                self.avail_at_finish_cell.clone(),
                self.avail_at_finish_model.clone(),
                self.buckets_at_finish,
                self.reason_at_finish,
                self.tenant_at_finish.clone(),
            ),
        };
        let series = self.buckets[..nb]
            .iter()
            .enumerate()
            .map(|(k, b)| {
                let start = a.0 + k as u64 * self.interval_ms;
                let len = (start + self.interval_ms).min(end.0).saturating_sub(start);
                SeriesRow {
                    start: SimTime(start),
                    len_ms: len,
                    allocated_milli: b.alloc.clone(),
                    available_milli: b.avail.clone(),
                    allocated_model_milli: b.alloc_model.clone(),
                    available_model_milli: b.avail_model.clone(),
                    pending_ms: b.pending,
                    running_ms: b.running,
                    pending_by_reason_ms: b.by_reason,
                    allocated_tenant_milli: b.tenant.clone(),
                }
            })
            .filter(|r| r.len_ms > 0)
            .collect();
        Occupancy {
            window_start: a,
            window_end: end,
            allocated_cell: self.alloc_int_cell.clone(),
            available_cell: avail_cell,
            allocated_model: self.alloc_int_model.clone(),
            available_model: avail_model,
            series,
            allocated_tenant: tenant,
            pending_by_reason_ms: by_reason,
        }
    }
}
