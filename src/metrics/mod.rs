//! Metric collectors, accumulated in streaming form while the engine runs (DESIGN §6).
//!
//! * **allocated occupancy** (allocation rate) = allocated GPU-milli·ms / available
//!   GPU-milli·ms over the window `[a, b]`; a node that is down or drained is not available; a
//!   fractional task counts its GPU-milli. Fleet-wide, per cell and per accelerator model, and
//!   per time-series interval.
//! * **useful occupancy** (the headline `occupancy`) = (allocated − *unproductive*)
//!   GPU-milli·ms / available GPU-milli·ms, where the unproductive accelerator-time is what
//!   the allocation held without making progress a job keeps: work lost when a run is stopped
//!   (preemption, failure, eviction: from its last checkpoint to the stop, booked back in
//!   time when the stop happens), termination grace, the surviving members of a gang paused
//!   until it is whole again, and startup latency and restart overhead. Each is an interval
//!   of time on known nodes, so it is integrated exactly like the allocation, per cell,
//!   per model and per interval.
//! * **window**: `a` = first submission + warm-up; `b` = with a horizon, the horizon or the
//!   last event, whichever is first; without one, the last completion.
//! * **wait** (queueing delay, Tiresias's *pending time*) = every millisecond a job is
//!   pending: submit → first start, plus each preemption or failure → the next start (and,
//!   for a job pending again when the run stops, up to the end); taken when the job reaches
//!   its final state. **first-start wait** = first start − submit (Batsim's waiting time,
//!   Kueue's admission wait); **JCT** = finish − submit; **bounded slowdown** = max(1, JCT /
//!   max(run time, 10 s)) (Feitelson). Counted for jobs submitted inside the window; jobs
//!   that did not start by `b` are *censored*, counted apart. Jobs running before the trace
//!   window (pre-existing load) and serving replicas are left out of these per-job
//!   statistics (serving reports its replicas in its own section).
//! * **makespan** = last finish − first submission.
//! * **per tenant**: allocated GPU-milli·ms over the window (and per interval), the basis of
//!   the fairness figures (share vs entitlement, Jain's index) in the summary.
//!
//! * **split gangs**: started gangs (jobs of more than one task) whose tasks span more than
//!   one NVLink domain, out of all started gangs; of those, the *avoidable* ones: gangs whose
//!   whole accelerator request (GPU-milli) is at most the capacity of the largest NVLink
//!   domain of the cell they started in, so that some placement on an empty cell keeps them
//!   in one domain. A gang larger than every domain is split whatever the policy.
//! * **largest placeable gang** per cell and topology level (node, NVLink domain, block,
//!   cell): the most whole accelerators one group of that level has free — how big a gang of
//!   1-GPU tasks could start there now. Tracked (time-weighted mean and minimum over the
//!   window) when the fleet has domains of more than one node, where it differs from the
//!   per-node figure.
//!
//! Integrals are exact integers (`u128` GPU-milli·ms); ratios are formed once, at the end.

pub mod jobs;
pub mod slo;
pub mod stats;
pub mod steps;

use fleetsim_policies::{FleetState, SimTime, TaskAlloc, TenantId};

pub use stats::{dist_f64, dist_ms, Dist};

/// One row of `timeseries.csv`: means over one interval.
#[derive(
    Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct SeriesRow {
    /// Interval start, ms.
    pub start: SimTime,
    /// Interval length, ms (the last interval may be shorter).
    pub len_ms: u64,
    /// Time-integrated allocated accelerators per cell (GPU-milli·ms; divide by `len_ms`
    /// for the mean).
    pub allocated_milli: Vec<u128>,
    /// The part of `allocated_milli` that made no kept progress (lost work, grace, paused
    /// gang members, startup), per cell (GPU-milli·ms): useful = allocated − this.
    #[serde(default)]
    pub unproductive_milli: Vec<u128>,
    /// Time-integrated available accelerators per cell (GPU-milli·ms).
    pub available_milli: Vec<u128>,
    /// Time-integrated allocated accelerators per model (GPU-milli·ms).
    pub allocated_model_milli: Vec<u128>,
    /// The unproductive part of `allocated_model_milli`, per model (GPU-milli·ms).
    #[serde(default)]
    pub unproductive_model_milli: Vec<u128>,
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

/// A piecewise-constant level (allocated GPU-milli of a cell, pending jobs…) kept so that its
/// integral from 0 to any time `t` after its last change is `J(t) = v·t − s`, where `s` is
/// the sum of `Δv · t_change` over its changes. A change costs one multiply-add and the
/// levels that do not change cost nothing per instant; an integral over `[t0, t1)` is
/// `J(t1) − J(t0)`, exact in integers (every term is an integer; the result equals the sum
/// of `v · dt` over the steps).
#[derive(Clone, Copy, Debug, Default)]
struct Level {
    v: u64,
    s: i128,
}

impl Level {
    /// Sets the level to `v` at time `now` (ms).
    fn set(&mut self, v: u64, now: SimTime) {
        self.s += (i128::from(v) - i128::from(self.v)) * i128::from(now.0);
        self.v = v;
    }

    fn add(&mut self, dv: u64, now: SimTime) {
        self.set(self.v + dv, now);
    }

    fn sub(&mut self, dv: u64, now: SimTime) {
        self.set(self.v - dv, now);
    }

    /// `∫_0^t v`, for `t` at or after the last change.
    fn j(&self, t: SimTime) -> i128 {
        i128::from(self.v) * i128::from(t.0) - self.s
    }
}

/// One task's share of a running startup: its cell, its model (if any) and its GPU-milli.
type StartupPart = (usize, Option<usize>, u64);

/// Every level's `J` at one time (an interval boundary, the last completion, the end).
#[derive(Clone, Debug, Default)]
struct Snap {
    alloc: Vec<i128>,
    unprod: Vec<i128>,
    unprod_model: Vec<i128>,
    avail: Vec<i128>,
    alloc_model: Vec<i128>,
    avail_model: Vec<i128>,
    pending: i128,
    running: i128,
    by_reason: Vec<i128>,
    tenant: Vec<i128>,
    held: Vec<i128>,
}

/// `later − earlier` elementwise (entries missing from `earlier` appeared after it: 0).
fn diff(later: &[i128], earlier: &[i128]) -> Vec<u128> {
    later
        .iter()
        .enumerate()
        .map(|(i, &l)| to_u128(l - earlier.get(i).copied().unwrap_or(0)))
        .collect()
}

/// An integral of a non-negative level over a non-empty span is never negative.
fn to_u128(x: i128) -> u128 {
    debug_assert!(x >= 0, "negative integral {x}");
    x.max(0) as u128
}

/// Bytes of one interval boundary's snapshot for a fleet of `cells` cells and `models`
/// accelerator models with `reasons` pending reasons and `tenants` tenants seen: the
/// snapshot itself plus one heap block (16 bytes of allocator overhead) of 16-byte
/// integrals per non-empty level list. An estimate, for the time series' memory cap
/// ([`crate::engine::series_interval_cap`]).
pub fn snapshot_bytes(cells: usize, models: usize, reasons: usize, tenants: usize) -> u64 {
    let block = |len: usize| if len == 0 { 0 } else { 16 * len as u64 + 16 };
    std::mem::size_of::<Snap>() as u64
        + 4 * block(cells)
        + 3 * block(models)
        + block(reasons)
        + block(tenants)
}

/// Streaming collector of every time-weighted and per-job metric.
#[derive(Clone, Debug)]
pub struct Collector {
    warmup_ms: u64,
    interval_ms: u64,
    window_start: Option<SimTime>,
    first_submit: Option<SimTime>,
    last_finish: Option<SimTime>,
    /// The time of the last [`Collector::advance`]: the current time of every change.
    last_t: SimTime,
    // Current levels.
    alloc_cell: Vec<Level>,
    /// Allocated GPU-milli that makes no kept progress now (grace, paused gang members,
    /// startup), per cell and model; lost work is booked back in time into the same levels
    /// ([`Collector::lost_work`]).
    unprod_cell: Vec<Level>,
    unprod_model: Vec<Level>,
    /// Per node: GPU-milli of its allocation counted as unproductive now (grace, paused).
    unprod_node: Vec<u64>,
    /// Startup intervals still running: at their end time (key: end, run id) their
    /// GPU-milli per (cell, model) stop counting as unproductive.
    startups: std::collections::BTreeMap<(SimTime, u32), Vec<StartupPart>>,
    avail_cell: Vec<Level>,
    alloc_model: Vec<Level>,
    avail_model: Vec<Level>,
    pending: Level,
    /// Most pending jobs at any instant (not only in the window).
    pending_max: u64,
    running: Level,
    // Pending jobs by reason after the last pass, indexed like `reason_names` (first-seen order).
    reason_names: Vec<&'static str>,
    by_reason: Vec<Level>,
    // Allocated GPU-milli per tenant now.
    alloc_tenant: Vec<Level>,
    // Capacity of drained nodes still running work, counted as available until they empty.
    draining_cell: Vec<u64>,
    draining_model: Vec<u64>,
    /// Accelerators held (in a termination grace) on failed nodes, per cell: out of the
    /// allocation as their node is out of the capacity (see [`Collector::node_failed`]).
    held_cell: Vec<Level>,
    /// Per node: GPU-milli of its allocation counted in `held_cell` instead of allocated.
    held_node: Vec<u64>,
    /// `J` of every level at the interval boundaries `a + k·Δ` passed so far (`k = 0` is
    /// the window start).
    bounds: Vec<Snap>,
    /// `J` of the available levels at the last completion, taken before the next change of
    /// capacity (`None` while no completion is pending a snapshot).
    avail_at_finish: Option<(Vec<i128>, Vec<i128>)>,
    avail_finish_stale: bool,
    /// Fragmentation samples at interval starts `a + k·Δ`: (fragmented, idle) GPU-milli.
    frag_samples: Vec<(Option<u64>, u64)>,
    /// Waits (all pending time) of measured started jobs, ms, in the order they settled.
    pub waits_ms: Vec<u64>,
    /// First-start waits of measured started jobs, ms.
    pub first_waits_ms: Vec<u64>,
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
    avoidable_split_gangs: u64,
    /// Per cell: the GPU-milli capacity of its largest NVLink domain.
    max_domain_milli: Vec<u64>,
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
        let mut domain_milli = vec![0u64; nd];
        for n in fleet.nodes() {
            domain_milli[n.domain as usize] += u64::from(n.gpus) * 1000;
            per_domain[n.domain as usize] += 1;
            domain_cell[n.domain as usize] = n.cell.index();
            block_cell[n.block as usize] = n.cell.index();
        }
        let cells = fleet.cells().len();
        let mut max_domain_milli = vec![0u64; cells];
        for (d, &m) in domain_milli.iter().enumerate() {
            let c = domain_cell[d];
            max_domain_milli[c] = max_domain_milli[c].max(m);
        }
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
            avoidable_split_gangs: 0,
            max_domain_milli,
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
#[derive(
    Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct TopologyFacts {
    /// Started gangs (jobs of more than one task).
    pub gangs: u64,
    /// Of those, gangs whose tasks span more than one NVLink domain.
    pub split_gangs: u64,
    /// Of those, gangs whose whole request fits the largest NVLink domain of their cell
    /// (a placement could have kept them in one domain).
    pub avoidable_split_gangs: u64,
    /// Per cell, per level (node, domain, block, cell): the time-weighted mean and the
    /// minimum over the window of the largest placeable gang, whole accelerators; `None`
    /// when not tracked (every domain is one node).
    pub largest_gang: Option<Vec<[(f64, u64); 4]>>,
}

/// Time-weighted results at the end of a run. Serializable so that `compare --resume` can
/// read a finished run back.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Occupancy {
    /// Window start.
    pub window_start: SimTime,
    /// Window end.
    pub window_end: SimTime,
    /// Allocated GPU-milli·ms per cell.
    pub allocated_cell: Vec<u128>,
    /// Of the allocated GPU-milli·ms per cell, those that made no kept progress (lost work,
    /// grace, paused gang members, startup): useful = allocated − unproductive.
    pub unproductive_cell: Vec<u128>,
    /// Available GPU-milli·ms per cell.
    pub available_cell: Vec<u128>,
    /// Allocated GPU-milli·ms per model.
    pub allocated_model: Vec<u128>,
    /// Unproductive GPU-milli·ms per model.
    pub unproductive_model: Vec<u128>,
    /// Available GPU-milli·ms per model.
    pub available_model: Vec<u128>,
    /// Time series rows.
    pub series: Vec<SeriesRow>,
    /// Names of the pending reasons seen, in first-seen order (see
    /// [`SeriesRow::pending_by_reason_ms`]).
    #[serde(deserialize_with = "interned_names")]
    pub pending_reasons: Vec<&'static str>,
    /// Allocated GPU-milli·ms per tenant over the window (by [`TenantId`]).
    pub allocated_tenant: Vec<u128>,
    /// Split gangs and largest placeable gangs.
    pub topology: TopologyFacts,
    /// Most jobs pending at once over the whole run (the pending-queue depth's maximum).
    pub pending_max: u64,
    /// GPU-milli·ms held through termination grace on failed nodes over the window (neither
    /// allocated nor available: see [`Collector::node_failed`]).
    pub held_on_failed_nodes: u128,
}

/// Reads names as `&'static str`, each distinct name allocated once for the whole process
/// (pending reasons: a dozen names), so that reading runs back does not leak per run.
fn interned_names<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<&'static str>, D::Error> {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let names: Vec<String> = serde::Deserialize::deserialize(d)?;
    let mut set = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    Ok(names
        .into_iter()
        .map(|n| match set.get(n.as_str()) {
            Some(&s) => s,
            None => {
                let s: &'static str = Box::leak(n.into_boxed_str());
                set.insert(s);
                s
            }
        })
        .collect())
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
            alloc_cell: vec![Level::default(); cells],
            unprod_cell: vec![Level::default(); cells],
            unprod_model: vec![Level::default(); models],
            unprod_node: vec![0; fleet.nodes().len()],
            startups: std::collections::BTreeMap::new(),
            avail_cell: vec![Level::default(); cells],
            alloc_model: vec![Level::default(); models],
            avail_model: vec![Level::default(); models],
            pending: Level::default(),
            pending_max: 0,
            running: Level::default(),
            reason_names: Vec::new(),
            alloc_tenant: Vec::new(),
            by_reason: Vec::new(),
            draining_cell: vec![0; cells],
            draining_model: vec![0; models],
            held_cell: vec![Level::default(); cells],
            held_node: vec![0; fleet.nodes().len()],
            bounds: Vec::new(),
            avail_at_finish: None,
            avail_finish_stale: false,
            frag_samples: Vec::new(),
            waits_ms: Vec::new(),
            first_waits_ms: Vec::new(),
            jcts_ms: Vec::new(),
            slowdowns: Vec::new(),
            topo: TopoTracker::new(fleet),
        };
        c.refresh_capacity(fleet);
        c
    }

    fn snap(&self, t: SimTime) -> Snap {
        let j = |v: &[Level]| v.iter().map(|l| l.j(t)).collect::<Vec<_>>();
        Snap {
            alloc: j(&self.alloc_cell),
            unprod: j(&self.unprod_cell),
            unprod_model: j(&self.unprod_model),
            avail: j(&self.avail_cell),
            alloc_model: j(&self.alloc_model),
            avail_model: j(&self.avail_model),
            pending: self.pending.j(t),
            running: self.running.j(t),
            by_reason: j(&self.by_reason),
            tenant: j(&self.alloc_tenant),
            held: j(&self.held_cell),
        }
    }

    /// Snapshots the available levels at the last completion if a change of capacity is
    /// about to happen (they have not changed since that completion).
    fn settle_avail_at_finish(&mut self) {
        if !self.avail_finish_stale {
            return;
        }
        self.avail_finish_stale = false;
        if let Some(t) = self.last_finish {
            let j = |v: &[Level]| v.iter().map(|l| l.j(t)).collect::<Vec<_>>();
            self.avail_at_finish = Some((j(&self.avail_cell), j(&self.avail_model)));
        }
    }

    /// Bytes one more interval boundary's snapshot takes now: the snapshot itself plus one
    /// heap block (16 bytes of allocator overhead) of 16-byte integrals per non-empty level
    /// list (per cell, per model, per pending reason and per tenant seen so far). An
    /// estimate of the time series' memory per interval, for [`crate::engine`]'s cap.
    pub fn snapshot_bytes(&self) -> u64 {
        snapshot_bytes(
            self.alloc_cell.len(),
            self.alloc_model.len(),
            self.by_reason.len(),
            self.alloc_tenant.len(),
        )
    }

    /// The window start, once the first job has been submitted.
    pub fn window_start(&self) -> Option<SimTime> {
        self.window_start
    }

    /// True when a job submitted at `submit` is measured (inside the window).
    pub fn measured(&self, submit: SimTime) -> bool {
        self.window_start.is_some_and(|a| submit >= a)
    }

    /// Moves the current time to `t`: snapshots every level at the interval boundaries
    /// passed. Call before changing any level at `t`. `O(1)` per call plus `O(levels)` per
    /// boundary passed (a level that does not change costs nothing).
    pub fn advance(&mut self, t: SimTime) {
        let Some(a) = self.window_start else {
            self.end_startups(t);
            self.last_t = t;
            return;
        };
        let from = self.last_t.max(a);
        if t > from {
            self.topo.integrate((t.0 - from.0) as u128);
        }
        // Boundaries at or before `t` (the state holds only changes before them), with the
        // startups that ended before each.
        while let Some(b) =
            a.0.checked_add(self.bounds.len() as u64 * self.interval_ms)
                .filter(|&b| b <= t.0)
        {
            self.end_startups(SimTime(b));
            let snap = self.snap(SimTime(b));
            self.bounds.push(snap);
        }
        self.end_startups(t);
        self.last_t = self.last_t.max(t);
    }

    /// Sets the available levels from the fleet's schedulable capacity plus drained nodes
    /// still running work. `O(nodes)`.
    pub fn refresh_capacity(&mut self, fleet: &FleetState) {
        self.settle_avail_at_finish();
        let now = self.last_t;
        for (i, c) in fleet.cells().iter().enumerate() {
            self.avail_cell[i].set(c.available_gpu_milli + self.draining_cell[i], now);
        }
        let mut model = self.draining_model.clone();
        for n in fleet.nodes() {
            if let (Some(m), true) = (n.model, n.schedulable) {
                model[m.index()] += n.gpus as u64 * 1000;
            }
        }
        for (l, v) in self.avail_model.iter_mut().zip(model) {
            l.set(v, now);
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

    /// Node `node` failed (after its jobs were stopped and it left the schedulable capacity):
    /// what is still allocated on it — tasks held through their termination grace — leaves
    /// the allocation together with the node's capacity and is counted as *held on failed
    /// nodes* until released, so occupancy never exceeds 1. `O(1)`.
    pub fn node_failed(&mut self, fleet: &FleetState, node: fleetsim_policies::NodeId) {
        let now = self.last_t;
        let n = fleet.node(node);
        let used = (n.gpus as u64 * 1000).saturating_sub(u64::from(n.free_gpu_milli));
        let h = &mut self.held_node[node.index()];
        let g = used.saturating_sub(*h);
        if g == 0 {
            return;
        }
        *h += g;
        self.alloc_cell[n.cell.index()].sub(g, now);
        self.held_cell[n.cell.index()].add(g, now);
        if let Some(m) = n.model {
            self.alloc_model[m.index()].sub(g, now);
        }
        // What leaves the allocation was unproductive (every job on the node was stopped).
        let u = &mut self.unprod_node[node.index()];
        let idle = g.min(*u);
        debug_assert_eq!(idle, g, "a failed node's allocation is all in grace");
        if idle > 0 {
            *u -= idle;
            self.unprod_cell[n.cell.index()].sub(idle, now);
            if let Some(m) = n.model {
                self.unprod_model[m.index()].sub(idle, now);
            }
        }
    }

    /// Starts a new count of pending jobs by reason (after a scheduling pass); add the counts
    /// with [`Collector::add_pending_reason`].
    pub fn clear_pending_reasons(&mut self) {
        let now = self.last_t;
        for l in &mut self.by_reason {
            if l.v != 0 {
                l.set(0, now);
            }
        }
    }

    /// `jobs` more pending jobs wait for `reason`.
    pub fn add_pending_reason(&mut self, reason: &'static str, jobs: u64) {
        let now = self.last_t;
        match self.reason_names.iter().position(|&n| n == reason) {
            Some(i) => self.by_reason[i].add(jobs, now),
            None => {
                self.reason_names.push(reason);
                let mut l = Level::default();
                l.set(jobs, now);
                self.by_reason.push(l);
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
            self.alloc_tenant.resize(i + 1, Level::default());
        }
        let now = self.last_t;
        let l = &mut self.alloc_tenant[i];
        if bind {
            l.add(gpu_milli, now);
        } else {
            l.sub(gpu_milli, now);
        }
    }

    /// Pending-queue length changed.
    pub fn set_pending(&mut self, pending: u64) {
        self.pending_max = self.pending_max.max(pending);
        if pending != self.pending.v {
            self.pending.set(pending, self.last_t);
        }
    }

    /// Some members of a gang that keeps running (or stays bound) were bound or released:
    /// the allocated levels move, the running-job count and the gang statistics do not
    /// ([`fleetsim_policies::GangRecovery::KeepSurvivors`]). Released members counted as
    /// unproductive (`idle`: in a grace or paused, [`Collector::unproductive`]) leave that
    /// account too.
    pub fn on_members(&mut self, fleet: &FleetState, allocs: &[TaskAlloc], bind: bool, idle: bool) {
        let now = self.last_t;
        for a in allocs {
            let n = fleet.node(a.node);
            let mut g = a.total_gpu_milli();
            if !bind {
                // Only tasks in a grace (`idle`) are held on a failed node: their release
                // leaves the held account first. A productive task's release never does,
                // though the node may hold another job's grace since before its repair.
                if idle {
                    let h = &mut self.held_node[a.node.index()];
                    let from_held = g.min(*h);
                    *h -= from_held;
                    g -= from_held;
                    if from_held > 0 {
                        self.held_cell[n.cell.index()].sub(from_held, now);
                    }
                    let u = &mut self.unprod_node[a.node.index()];
                    let off = g.min(*u);
                    if off > 0 {
                        *u -= off;
                        self.unprod_cell[n.cell.index()].sub(off, now);
                        if let Some(m) = n.model {
                            self.unprod_model[m.index()].sub(off, now);
                        }
                    }
                }
            }
            let cell = &mut self.alloc_cell[n.cell.index()];
            if bind {
                cell.add(g, now);
            } else {
                cell.sub(g, now);
            }
            if let Some(m) = n.model {
                let l = &mut self.alloc_model[m.index()];
                if bind {
                    l.add(g, now);
                } else {
                    l.sub(g, now);
                }
            }
        }
        self.topo.refresh(fleet);
    }

    /// Bound tasks `allocs` stop (`on`) or start again (`!on`) making kept progress while
    /// they stay allocated: a termination grace, a gang paused for its missing members.
    /// A release of unproductive tasks ([`Collector::on_allocs`]) ends their account by
    /// itself. `O(tasks)`.
    pub fn unproductive(&mut self, fleet: &FleetState, allocs: &[TaskAlloc], on: bool) {
        let now = self.last_t;
        for a in allocs {
            let n = fleet.node(a.node);
            let u = &mut self.unprod_node[a.node.index()];
            let g = if on {
                a.total_gpu_milli()
            } else {
                a.total_gpu_milli().min(*u)
            };
            if g == 0 {
                continue;
            }
            if on {
                *u += g;
                self.unprod_cell[n.cell.index()].add(g, now);
                if let Some(m) = n.model {
                    self.unprod_model[m.index()].add(g, now);
                }
            } else {
                *u -= g;
                self.unprod_cell[n.cell.index()].sub(g, now);
                if let Some(m) = n.model {
                    self.unprod_model[m.index()].sub(g, now);
                }
            }
        }
    }

    /// A run on `allocs` (run id `run`) starts now with a startup latency (and restart
    /// overhead) until `end`: its accelerators count as unproductive until then (or until
    /// [`Collector::startup_cut`]).
    pub fn startup(&mut self, fleet: &FleetState, allocs: &[TaskAlloc], run: u32, end: SimTime) {
        let now = self.last_t;
        if end <= now {
            return;
        }
        let parts: Vec<StartupPart> = allocs
            .iter()
            .map(|a| {
                let n = fleet.node(a.node);
                (
                    n.cell.index(),
                    n.model.map(|m| m.index()),
                    a.total_gpu_milli(),
                )
            })
            .collect();
        for &(c, m, g) in &parts {
            self.unprod_cell[c].add(g, now);
            if let Some(m) = m {
                self.unprod_model[m].add(g, now);
            }
        }
        self.startups.insert((end, run), parts);
    }

    /// Run `run`, whose startup was to end at `end`, stops now: its startup ends now.
    pub fn startup_cut(&mut self, run: u32, end: SimTime) {
        let now = self.last_t;
        if let Some(parts) = self.startups.remove(&(end, run)) {
            self.end_startup(&parts, now);
        }
    }

    fn end_startup(&mut self, parts: &[StartupPart], at: SimTime) {
        for &(c, m, g) in parts {
            self.unprod_cell[c].sub(g, at);
            if let Some(m) = m {
                self.unprod_model[m].sub(g, at);
            }
        }
    }

    /// Ends the startups due at or before `t`, each at its own end time.
    fn end_startups(&mut self, t: SimTime) {
        while let Some(e) = self.startups.first_entry() {
            if e.key().0 > t {
                break;
            }
            let ((at, _), parts) = e.remove_entry();
            self.end_startup(&parts, at);
        }
    }

    /// A run on `allocs` stopped now lost its last `wall_ms` ms of work (since its last
    /// checkpoint): that accelerator-time, allocated until now, is booked as unproductive
    /// back in time, into the levels and into the interval boundaries passed since.
    /// `O(tasks × boundaries in the lost span)`.
    pub fn lost_work(&mut self, fleet: &FleetState, allocs: &[TaskAlloc], wall_ms: u64) {
        let now = self.last_t;
        let t0 = now.0.saturating_sub(wall_ms);
        let w = i128::from(now.0 - t0);
        if w == 0 {
            return;
        }
        // Boundaries in (t0, now]: the first is `a + k0·Δ` with k0 = ⌊(t0 − a)/Δ⌋ + 1.
        let k0 = match self.window_start {
            Some(a) if t0 >= a.0 => ((t0 - a.0) / self.interval_ms + 1) as usize,
            Some(_) => 0,
            None => self.bounds.len(),
        };
        for a in allocs {
            let n = fleet.node(a.node);
            let g = i128::from(a.total_gpu_milli());
            let (c, m) = (n.cell.index(), n.model.map(|m| m.index()));
            self.unprod_cell[c].s -= g * w;
            if let Some(m) = m {
                self.unprod_model[m].s -= g * w;
            }
            let start = self.window_start.map_or(0, |a| a.0);
            for k in k0..self.bounds.len() {
                let b = start + k as u64 * self.interval_ms;
                let part = g * i128::from(b.min(now.0).saturating_sub(t0));
                self.bounds[k].unprod[c] += part;
                if let Some(m) = m {
                    self.bounds[k].unprod_model[m] += part;
                }
            }
        }
    }

    /// A job's tasks were bound (`bind`) or released (`idle`: released from a grace period,
    /// counted as unproductive until now).
    pub fn on_allocs(&mut self, fleet: &FleetState, allocs: &[TaskAlloc], bind: bool, idle: bool) {
        let now = self.last_t;
        self.on_members(fleet, allocs, bind, idle);
        if bind {
            self.running.add(1, now);
            if allocs.len() > 1 {
                self.topo.gangs += 1;
                let d0 = fleet.node(allocs[0].node).domain;
                if allocs.iter().any(|a| fleet.node(a.node).domain != d0) {
                    self.topo.split_gangs += 1;
                    let total: u64 = allocs.iter().map(TaskAlloc::total_gpu_milli).sum();
                    let cell = fleet.node(allocs[0].node).cell.index();
                    if total <= self.topo.max_domain_milli[cell] {
                        self.topo.avoidable_split_gangs += 1;
                    }
                }
            }
        } else {
            self.running.sub(1, now);
        }
    }

    /// A job started for the first time at `start`, submitted at `submit`; `pre_existing`
    /// jobs (and any other job kept out of per-job statistics) are left out.
    pub fn on_start(&mut self, submit: SimTime, start: SimTime, pre_existing: bool) {
        if !pre_existing && self.measured(submit) {
            self.first_waits_ms.push((start - submit).0);
        }
    }

    /// A job that started at least once reached its final state (or the end of the run)
    /// after `pending_ms` pending in all (first wait and every wait after a preemption or
    /// failure). Returns whether it was counted (submitted inside the window, not
    /// `pre_existing`).
    pub fn on_settled(&mut self, submit: SimTime, pending_ms: u64, pre_existing: bool) -> bool {
        let counted = !pre_existing && self.measured(submit);
        if counted {
            self.waits_ms.push(pending_ms);
        }
        counted
    }

    /// A job finished at `t` after running `run_ms`.
    pub fn on_finish(&mut self, submit: SimTime, t: SimTime, run_ms: u64, pre_existing: bool) {
        self.last_finish = Some(t);
        self.avail_finish_stale = true;
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

    /// Closes the window. `stopped_at_horizon` is the window's end when the scenario has a
    /// horizon (the horizon when the run stopped there with work left, else the last
    /// event); without one (`None`) the window ends at the last completion. Call after
    /// [`Collector::advance`] to the final time.
    pub fn finish(&mut self, stopped_at_horizon: Option<SimTime>) -> Occupancy {
        self.settle_avail_at_finish();
        let a = self.window_start.unwrap_or(SimTime::ZERO);
        let now = self.last_t;
        // Intervals touched up to `t`: those starting before it.
        let touched = |t: SimTime| -> usize {
            match self.window_start {
                Some(a) if t > a => (t.0 - a.0).div_ceil(self.interval_ms) as usize,
                _ => 0,
            }
        };
        let at_now = self.snap(now);
        let opened = self.window_start.is_some_and(|a| now > a);
        let start = self.bounds.first().cloned().unwrap_or_default();
        let over_window = |later: &[i128], earlier: &[i128]| -> Vec<u128> {
            if opened {
                diff(later, earlier)
            } else {
                vec![0; later.len()]
            }
        };
        let (end, avail_cell, avail_model, nb) = match stopped_at_horizon {
            Some(h) => (
                h,
                over_window(&at_now.avail, &start.avail),
                over_window(&at_now.avail_model, &start.avail_model),
                touched(now),
            ),
            None => {
                let f = self.last_finish.unwrap_or(a).max(a);
                let (cell, model) = match (&self.avail_at_finish, self.window_start) {
                    (Some((c, m)), Some(a)) if f > a => {
                        (diff(c, &start.avail), diff(m, &start.avail_model))
                    }
                    _ => (
                        vec![0; at_now.avail.len()],
                        vec![0; at_now.avail_model.len()],
                    ),
                };
                (f, cell, model, touched(f))
            }
        };
        let series = (0..nb)
            .map(|k| {
                let lo = &self.bounds[k];
                let hi = self.bounds.get(k + 1).unwrap_or(&at_now);
                let start = a.0 + k as u64 * self.interval_ms;
                let len = (start + self.interval_ms).min(end.0).saturating_sub(start);
                let (frag_milli, idle_milli) =
                    self.frag_samples.get(k).copied().unwrap_or((None, 0));
                SeriesRow {
                    start: SimTime(start),
                    len_ms: len,
                    frag_milli,
                    idle_milli,
                    allocated_milli: diff(&hi.alloc, &lo.alloc),
                    unproductive_milli: diff(&hi.unprod, &lo.unprod),
                    unproductive_model_milli: diff(&hi.unprod_model, &lo.unprod_model),
                    available_milli: diff(&hi.avail, &lo.avail),
                    allocated_model_milli: diff(&hi.alloc_model, &lo.alloc_model),
                    available_model_milli: diff(&hi.avail_model, &lo.avail_model),
                    pending_ms: to_u128(hi.pending - lo.pending),
                    running_ms: to_u128(hi.running - lo.running),
                    pending_by_reason_ms: diff(&hi.by_reason, &lo.by_reason),
                    allocated_tenant_milli: diff(&hi.tenant, &lo.tenant),
                }
            })
            .filter(|r| r.len_ms > 0)
            .collect();
        let allocated_cell = over_window(&at_now.alloc, &start.alloc);
        let allocated_model = over_window(&at_now.alloc_model, &start.alloc_model);
        let unproductive_cell = over_window(&at_now.unprod, &start.unprod);
        let unproductive_model = over_window(&at_now.unprod_model, &start.unprod_model);
        debug_assert!(
            unproductive_cell
                .iter()
                .zip(&allocated_cell)
                .all(|(u, a)| u <= a),
            "unproductive {unproductive_cell:?} above allocated {allocated_cell:?}"
        );
        // Nothing is allocated after the last completion: the integral so far is the
        // window's.
        let allocated_tenant = over_window(&at_now.tenant, &start.tenant);
        let window_ms = u128::from(end.0.saturating_sub(a.0));
        let topology = TopologyFacts {
            gangs: self.topo.gangs,
            split_gangs: self.topo.split_gangs,
            avoidable_split_gangs: self.topo.avoidable_split_gangs,
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
        let held_on_failed_nodes = over_window(&at_now.held, &start.held).iter().sum();
        Occupancy {
            held_on_failed_nodes,
            topology,
            window_start: a,
            window_end: end,
            allocated_cell,
            unproductive_cell,
            available_cell: avail_cell,
            allocated_model,
            unproductive_model,
            available_model: avail_model,
            series,
            pending_reasons: self.reason_names.clone(),
            allocated_tenant,
            pending_max: self.pending_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::snapshot_bytes;
    use crate::engine::series_interval_cap;

    /// A snapshot is 9 level lists (24 bytes each, 216, padded to 224 for the two i128
    /// counters) + 32 = 256 bytes; a list of one integral is one 16-byte block + 16 of
    /// allocator overhead = 32. One cell, one model: 4 + 3 lists = 224, so 480 bytes, and
    /// 128 MiB / 480 = 279,620 intervals. With a tenant too: 512 → 262,144. A fleet of
    /// 10,000 cells: 256 + 4 × 160,016 + 3 × 32 = 640,416 → 209.
    #[test]
    fn the_interval_cap_follows_the_snapshot_size() {
        assert_eq!(snapshot_bytes(1, 1, 0, 0), 480);
        assert_eq!(series_interval_cap(snapshot_bytes(1, 1, 0, 0)), 279_620);
        assert_eq!(series_interval_cap(snapshot_bytes(1, 1, 0, 1)), 262_144);
        assert_eq!(snapshot_bytes(10_000, 1, 0, 0), 640_416);
        assert_eq!(series_interval_cap(snapshot_bytes(10_000, 1, 0, 0)), 209);
        // The interval count cap still holds for a tiny snapshot.
        assert_eq!(series_interval_cap(1), crate::engine::MAX_SERIES_INTERVALS);
    }
}
