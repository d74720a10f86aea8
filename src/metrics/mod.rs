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
//!
//! * **split gangs**: started gangs (jobs of more than one task) whose tasks span more than
//!   one NVLink domain, out of all started gangs.
//! * **largest placeable gang** per cell and topology level (node, NVLink domain, block,
//!   cell): the most whole accelerators one group of that level has free — how big a gang of
//!   1-GPU tasks could start there now. Tracked (time-weighted mean and minimum over the
//!   window) when the fleet has domains of more than one node, where it differs from the
//!   per-node figure.
//!
//! Integrals are exact integers (`u128` GPU-milli·ms); ratios are formed once, at the end.

pub mod stats;

use fleetsim_policies::{FleetState, SimTime, TaskAlloc, TenantId};

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
    /// Fleet fragmentation at the interval's start (FGD measure), GPU-milli; `None` before
    /// the workload has any GPU task.
    pub frag_milli: Option<u64>,
    /// Idle GPU-milli (available − allocated) at the interval's start.
    pub idle_milli: u64,
    /// Time-integrated pending jobs (job·ms).
    pub pending_ms: u128,
    /// Time-integrated running jobs (job·ms).
    pub running_ms: u128,
    /// Time-integrated pending jobs per pending reason (job·ms), indexed like
    /// [`Occupancy::pending_reasons`] (shorter when later reasons had not appeared yet).
    pub pending_by_reason_ms: Vec<u128>,
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
    by_reason: Vec<u128>,
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
    // Pending jobs by reason after the last pass, indexed like `reason_names` (first-seen order).
    reason_names: Vec<&'static str>,
    by_reason: Vec<u64>,
    // Allocated GPU-milli per tenant now, and its integral over the window so far.
    alloc_tenant: Vec<u64>,
    alloc_int_tenant: Vec<u128>,
    // Capacity of drained nodes still running work, counted as available until they empty.
    draining_cell: Vec<u64>,
    draining_model: Vec<u64>,
    // Integrals over the window so far, GPU-milli·ms.
    alloc_int_cell: Vec<u128>,
    avail_int_cell: Vec<u128>,
    alloc_int_model: Vec<u128>,
    avail_int_model: Vec<u128>,
    // Available integrals frozen at the last completion (the default window end).
    avail_at_finish_cell: Vec<u128>,
    avail_at_finish_model: Vec<u128>,
    buckets: Vec<Bucket>,
    buckets_at_finish: usize,
    /// Fragmentation samples at interval starts `a + k·Δ`: (fragmented, idle) GPU-milli.
    frag_samples: Vec<(Option<u64>, u64)>,
    /// Waits of measured started jobs, ms.
    pub waits_ms: Vec<u64>,
    /// JCTs of measured finished jobs, ms.
    pub jcts_ms: Vec<u64>,
    /// Bounded slowdowns of measured finished jobs.
    pub slowdowns: Vec<f64>,
    topo: TopoTracker,
}

/// Split gangs and the largest placeable gang per cell and level.
#[derive(Clone, Debug, Default)]
struct TopoTracker {
    enabled: bool,
    domain_cell: Vec<usize>,
    block_cell: Vec<usize>,
    dom_sum: Vec<u64>,
    block_sum: Vec<u64>,
    current: Vec<[u64; 4]>,
    min: Vec<[u64; 4]>,
    integral: Vec<[u128; 4]>,
    gangs: u64,
    split_gangs: u64,
}

impl TopoTracker {
    fn new(fleet: &FleetState) -> TopoTracker {
        let nd = fleet
            .nodes()
            .iter()
            .map(|n| n.domain + 1)
            .max()
            .unwrap_or(0) as usize;
        let nb = fleet.nodes().iter().map(|n| n.block + 1).max().unwrap_or(0) as usize;
        let mut per_domain = vec![0u32; nd];
        let mut domain_cell = vec![0usize; nd];
        let mut block_cell = vec![0usize; nb];
        for n in fleet.nodes() {
            per_domain[n.domain as usize] += 1;
            domain_cell[n.domain as usize] = n.cell.index();
            block_cell[n.block as usize] = n.cell.index();
        }
        let cells = fleet.cells().len();
        let mut t = TopoTracker {
            enabled: per_domain.iter().any(|&k| k > 1),
            domain_cell,
            block_cell,
            dom_sum: vec![0; nd],
            block_sum: vec![0; nb],
            current: vec![[0; 4]; cells],
            min: vec![[u64::MAX; 4]; cells],
            integral: vec![[0; 4]; cells],
            gangs: 0,
            split_gangs: 0,
        };
        t.refresh(fleet);
        t
    }

    /// Recomputes the largest placeable gang per cell and level: `O(nodes)`.
    fn refresh(&mut self, fleet: &FleetState) {
        if !self.enabled {
            return;
        }
        self.dom_sum.iter_mut().for_each(|v| *v = 0);
        self.block_sum.iter_mut().for_each(|v| *v = 0);
        let mut cur = vec![[0u64; 4]; self.current.len()];
        for n in fleet.nodes() {
            if !n.schedulable {
                continue;
            }
            let fw = u64::from(n.free_whole);
            let c = n.cell.index();
            cur[c][0] = cur[c][0].max(fw);
            cur[c][3] += fw;
            self.dom_sum[n.domain as usize] += fw;
            self.block_sum[n.block as usize] += fw;
        }
        for (d, &v) in self.dom_sum.iter().enumerate() {
            let c = self.domain_cell[d];
            cur[c][1] = cur[c][1].max(v);
        }
        for (b, &v) in self.block_sum.iter().enumerate() {
            let c = self.block_cell[b];
            cur[c][2] = cur[c][2].max(v);
        }
        self.current = cur;
    }

    fn integrate(&mut self, dt: u128) {
        if !self.enabled || dt == 0 {
            return;
        }
        for (c, cur) in self.current.iter().enumerate() {
            for (l, &v) in cur.iter().enumerate() {
                self.integral[c][l] += u128::from(v) * dt;
                self.min[c][l] = self.min[c][l].min(v);
            }
        }
    }
}

/// Split gangs and largest placeable gangs at the end of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopologyFacts {
    /// Started gangs (jobs of more than one task).
    pub gangs: u64,
    /// Of those, gangs whose tasks span more than one NVLink domain.
    pub split_gangs: u64,
    /// Per cell, per level (node, domain, block, cell): the time-weighted mean and the
    /// minimum over the window of the largest placeable gang, whole accelerators; `None`
    /// when not tracked (every domain is one node).
    pub largest_gang: Option<Vec<[(f64, u64); 4]>>,
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
    /// Names of the pending reasons seen, in first-seen order (see
    /// [`SeriesRow::pending_by_reason_ms`]).
    pub pending_reasons: Vec<&'static str>,
    /// Allocated GPU-milli·ms per tenant over the window (by [`TenantId`]).
    pub allocated_tenant: Vec<u128>,
    /// Split gangs and largest placeable gangs.
    pub topology: TopologyFacts,
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
            reason_names: Vec::new(),
            alloc_tenant: Vec::new(),
            alloc_int_tenant: Vec::new(),
            by_reason: Vec::new(),
            draining_cell: vec![0; cells],
            draining_model: vec![0; models],
            alloc_int_cell: vec![0; cells],
            avail_int_cell: vec![0; cells],
            alloc_int_model: vec![0; models],
            avail_int_model: vec![0; models],
            avail_at_finish_cell: vec![0; cells],
            avail_at_finish_model: vec![0; models],
            buckets: Vec::new(),
            buckets_at_finish: 0,
            frag_samples: Vec::new(),
            waits_ms: Vec::new(),
            jcts_ms: Vec::new(),
            slowdowns: Vec::new(),
            topo: TopoTracker::new(fleet),
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
        self.topo.integrate(dt);
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
            if b.by_reason.len() < self.by_reason.len() {
                b.by_reason.resize(self.by_reason.len(), 0);
            }
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
            self.avail_cell[i] = c.available_gpu_milli + self.draining_cell[i];
        }
        self.avail_model.clone_from(&self.draining_model);
        for n in fleet.nodes() {
            if let (Some(m), true) = (n.model, n.schedulable) {
                self.avail_model[m.index()] += n.gpus as u64 * 1000;
            }
        }
    }

    /// A drained node that still runs work starts (`true`) or stops (`false`) counting as
    /// available. Call [`Collector::refresh_capacity`] afterwards.
    pub fn add_draining(&mut self, fleet: &FleetState, node: fleetsim_policies::NodeId, on: bool) {
        let n = fleet.node(node);
        let g = n.gpus as u64 * 1000;
        let cell = &mut self.draining_cell[n.cell.index()];
        *cell = if on { *cell + g } else { *cell - g };
        if let Some(m) = n.model {
            let v = &mut self.draining_model[m.index()];
            *v = if on { *v + g } else { *v - g };
        }
    }

    /// Starts a new count of pending jobs by reason (after a scheduling pass); add the counts
    /// with [`Collector::add_pending_reason`].
    pub fn clear_pending_reasons(&mut self) {
        self.by_reason.iter_mut().for_each(|v| *v = 0);
    }

    /// `jobs` more pending jobs wait for `reason`.
    pub fn add_pending_reason(&mut self, reason: &'static str, jobs: u64) {
        match self.reason_names.iter().position(|&n| n == reason) {
            Some(i) => self.by_reason[i] += jobs,
            None => {
                self.reason_names.push(reason);
                self.by_reason.push(jobs);
            }
        }
    }

    /// The next interval start whose fragmentation sample is due (`None` before the window
    /// opens). The engine samples the state that holds *before* the events at a time `t` for
    /// every due boundary `≤ t`, then calls [`Collector::advance`]`(t)`.
    pub fn next_sample_at(&self) -> Option<SimTime> {
        self.window_start
            .map(|a| SimTime(a.0 + self.frag_samples.len() as u64 * self.interval_ms))
    }

    /// Records the sample due at [`Collector::next_sample_at`]: fragmented GPU-milli (if
    /// defined) and idle GPU-milli.
    pub fn record_fragmentation(&mut self, frag_milli: Option<u64>, idle_milli: u64) {
        self.frag_samples.push((frag_milli, idle_milli));
    }

    /// The last fragmentation sample taken, if any.
    pub fn last_fragmentation(&self) -> Option<(Option<u64>, u64)> {
        self.frag_samples.last().copied()
    }

    /// A job was submitted at `t` (after [`Collector::advance`]`(t)`).
    pub fn on_submit(&mut self, t: SimTime) {
        if self.first_submit.is_none() {
            self.first_submit = Some(t);
            self.window_start = Some(t + fleetsim_policies::SimDuration(self.warmup_ms));
            self.last_t = t;
        }
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

    /// Pending-queue length changed.
    pub fn set_pending(&mut self, pending: u64) {
        self.pending = pending;
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
            if allocs.len() > 1 {
                self.topo.gangs += 1;
                let d0 = fleet.node(allocs[0].node).domain;
                if allocs.iter().any(|a| fleet.node(a.node).domain != d0) {
                    self.topo.split_gangs += 1;
                }
            }
        } else {
            self.running -= 1;
        }
        self.topo.refresh(fleet);
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
        let (end, avail_cell, avail_model, nb) = match stopped_at_horizon {
            Some(h) => (
                h,
                self.avail_int_cell.clone(),
                self.avail_int_model.clone(),
                self.buckets.len(),
            ),
            None => (
                self.last_finish.unwrap_or(a).max(a),
                self.avail_at_finish_cell.clone(),
                self.avail_at_finish_model.clone(),
                self.buckets_at_finish,
            ),
        };
        let series = self.buckets[..nb]
            .iter()
            .enumerate()
            .map(|(k, b)| {
                let start = a.0 + k as u64 * self.interval_ms;
                let len = (start + self.interval_ms).min(end.0).saturating_sub(start);
                let (frag_milli, idle_milli) =
                    self.frag_samples.get(k).copied().unwrap_or((None, 0));
                SeriesRow {
                    start: SimTime(start),
                    len_ms: len,
                    frag_milli,
                    idle_milli,
                    allocated_milli: b.alloc.clone(),
                    available_milli: b.avail.clone(),
                    allocated_model_milli: b.alloc_model.clone(),
                    available_model_milli: b.avail_model.clone(),
                    pending_ms: b.pending,
                    running_ms: b.running,
                    pending_by_reason_ms: b.by_reason.clone(),
                    allocated_tenant_milli: b.tenant.clone(),
                }
            })
            .filter(|r| r.len_ms > 0)
            .collect();
        let window_ms = u128::from(end.0.saturating_sub(a.0));
        let topology = TopologyFacts {
            gangs: self.topo.gangs,
            split_gangs: self.topo.split_gangs,
            largest_gang: self.topo.enabled.then(|| {
                self.topo
                    .integral
                    .iter()
                    .zip(&self.topo.min)
                    .zip(&self.topo.current)
                    .map(|((int, min), cur)| {
                        std::array::from_fn(|l| {
                            if window_ms == 0 {
                                (cur[l] as f64, cur[l])
                            } else {
                                (int[l] as f64 / window_ms as f64, min[l].min(cur[l]))
                            }
                        })
                    })
                    .collect()
            }),
        };
        Occupancy {
            topology,
            window_start: a,
            window_end: end,
            allocated_cell: self.alloc_int_cell.clone(),
            available_cell: avail_cell,
            allocated_model: self.alloc_int_model.clone(),
            available_model: avail_model,
            series,
            pending_reasons: self.reason_names.clone(),
            // Nothing is allocated after the last completion: the integral so far is the
            // window's.
            allocated_tenant: self.alloc_int_tenant.clone(),
        }
    }
}
