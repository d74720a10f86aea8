//! Autoscaled node groups: nodes provisioned for pending work, returned when idle.
//!
//! A group (`[[fleet.cells.autoscaling]]`) owns `max_nodes` nodes built into the fleet
//! after every static node (so static node ids are unchanged); all but the first
//! `min_nodes` start out of the fleet (unschedulable, not counted as capacity).
//!
//! # Scale-up
//! After the scheduling passes of an instant settle, the pending jobs that could not start
//! for want of capacity (pending reason `no_capacity`, `fragmentation` or `gang`; at most
//! [`MAX_SCAN`] pending jobs are looked at, queue by queue in queue order) are taken in
//! that order, each sized the way Cluster Autoscaler's binpacking estimator sizes pods,
//! for the whole gang at once ([`estimate`]). A job is first counted on the room it has in
//! a cell it may use (cells in id order): the free room of the cell's nodes in the fleet,
//! static or autoscaled, and the whole capacity of nodes being provisioned, less what
//! earlier jobs of the scan counted. A job that room holds scales nothing (it waits for a
//! scale-up when some of it is on nodes being provisioned, so capacity on its way is never
//! provisioned twice). Otherwise the expander ([`fleetsim_policies::autoscale`]) chooses
//! among the groups of its allowed cells and models that can still add every node the rest
//! of the gang needs (`⌈rest / tasks per node⌉`, all-or-nothing: Cluster Autoscaler atomic
//! scale-up, Kueue ProvisioningRequest), each counted with its cell's room; the chosen
//! group provisions them in one request, its lowest-numbered free nodes (of one topology
//! group when the job requires one), which join the fleet together after one delay drawn
//! from the group's stream. The job's room on the nodes in the fleet is counted as taken;
//! the rest of the new nodes' room can be counted by later jobs. A job with no such group
//! (its topology constraint cannot be met, or the groups are too small) scales nothing
//! and keeps the pending reason the scheduler gave it.

//! # Scale-down
//! A node of a group with no task is idle from the first instant it is seen so (after the
//! passes of an instant); one still idle `scale_down_idle_s` later leaves the fleet, unless
//! its group has only `min_nodes` nodes up or being provisioned.
//!
//! # Account
//! Billing runs from a node's scale-up request (or t = 0 for the `min_nodes`) to its removal
//! or the end of the run: cost = node-hours × price. Provisioned GPU-hours count a node's
//! accelerators while it is in the fleet; allocated GPU-hours the GPU-milli bound on it.
//! Time pending for capacity is the integral of the number of jobs waiting for a scale-up
//! (claiming room on nodes being provisioned), job-seconds.

use fleetsim_policies::topology::TopologySpec;
use fleetsim_policies::{
    CellId, Expander, ExpanderKind, FleetState, JobId, ModelId, ModelSet, NodeId, PendingJob,
    PendingReason, ScaleOption, Scheduler, SimDuration, SimTime, TaskShape,
};
use rand::Rng as _;
use rand_distr::{Distribution, LogNormal};
use std::collections::BTreeSet;

pub mod estimate;

use estimate::{Layout, Room};

use crate::engine::subsystem::{Ctx, Subsystem};
use crate::engine::{EngineError, RunResult};

/// The tag bit of an idle check among the autoscaler's events (the rest: the node record);
/// without it, the tag is a scale-up request whose nodes join.
const IDLE_CHECK: u32 = 1 << 31;

/// Most pending jobs one scale-up scan looks at.
pub const MAX_SCAN: usize = 4096;

/// A provisioning delay distribution (milliseconds once drawn).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Delay {
    /// Always this long.
    Fixed(SimDuration),
    /// Uniform on `[min, max]`, whole milliseconds.
    Uniform(SimDuration, SimDuration),
    /// Log-normal with this median, seconds, and log-scale `sigma`.
    Lognormal {
        /// Median, seconds (> 0).
        median_s: f64,
        /// Standard deviation of the logarithm (≥ 0).
        sigma: f64,
    },
}

impl Delay {
    /// One draw, rounded to the millisecond.
    pub fn sample(&self, rng: &mut crate::rng::Rng) -> SimDuration {
        match *self {
            Delay::Fixed(d) => d,
            Delay::Uniform(a, b) => SimDuration(rng.random_range(a.0..=b.0)),
            Delay::Lognormal { median_s, sigma } => {
                let x: f64 = LogNormal::new(median_s.ln(), sigma)
                    .expect("validated: sigma ≥ 0")
                    .sample(rng);
                SimDuration((x * 1000.0).round().clamp(0.0, 1e15) as u64)
            }
        }
    }
}

/// One group, as built from the scenario.
#[derive(Clone, Debug)]
pub struct GroupConfig {
    /// `<cell>/<group>`.
    pub name: String,
    /// Its cell.
    pub cell: CellId,
    /// Accelerator model of its nodes.
    pub model: Option<ModelId>,
    /// Accelerators per node.
    pub gpus: u32,
    /// CPU per node, milli-cores.
    pub cpu_milli: u64,
    /// Memory per node, MiB.
    pub mem_mib: u64,
    /// Its `max_nodes` nodes, in order (the first `min_nodes` start up).
    pub nodes: Vec<NodeId>,
    /// Nodes up from the start and never scaled below.
    pub min_nodes: u32,
    /// Provisioning delay.
    pub delay: Delay,
    /// Price per node-hour.
    pub price_per_node_hour: f64,
    /// Priority for the `priority` expander.
    pub priority: i32,
    /// Idle time before a node is removed.
    pub scale_down_idle: SimDuration,
    /// A Kueue ProvisioningRequest admission check provisions its nodes: Kueue admits a
    /// workload waiting for them when they join, so its pods-ready timeout
    /// ([`crate::engine::pods_ready`]) does not run while they are provisioned.
    pub admission_check: bool,
}

/// Every group and the expander.
#[derive(Clone, Debug, Default)]
pub struct AutoscaleConfig {
    /// Groups, in scenario order (cells in order, groups in order within a cell).
    pub groups: Vec<GroupConfig>,
    /// The expander.
    pub expander: ExpanderKind,
    /// Scenario seed (each group draws from stream `autoscaling/<cell>/<group>`).
    pub seed: u64,
}

/// One group's account.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct GroupStats {
    /// `<cell>/<group>`.
    pub name: String,
    /// Scale-up requests.
    pub scale_ups: u64,
    /// Nodes requested by scale-ups.
    pub nodes_provisioned: u64,
    /// Nodes removed after idling.
    pub nodes_removed: u64,
    /// Most nodes up or being provisioned at once.
    pub peak_nodes: u32,
    /// Node-hours billed.
    pub node_hours: f64,
    /// `node_hours × price_per_node_hour`.
    pub cost: f64,
    /// Accelerator-hours of its nodes while in the fleet.
    pub gpu_hours_provisioned: f64,
    /// Accelerator-hours bound on its nodes.
    pub gpu_hours_allocated: f64,
}

/// The autoscaling account of a run (`summary.json` section `autoscaling`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct AutoscaleStats {
    /// The expander's name.
    pub expander: String,
    /// Sum of the groups' costs.
    pub cost: f64,
    /// Sum of the groups' billed node-hours.
    pub node_hours: f64,
    /// Accelerator-hours of autoscaled nodes while in the fleet.
    pub gpu_hours_provisioned: f64,
    /// Accelerator-hours bound on autoscaled nodes.
    pub gpu_hours_allocated: f64,
    /// Time jobs waited for a scale-up (summed over jobs), seconds.
    pub pending_for_capacity_job_s: f64,
    /// Scale-up requests.
    pub scale_ups: u64,
    /// Nodes removed after idling.
    pub scale_downs: u64,
    /// Per group, in scenario order.
    pub groups: Vec<GroupStats>,
    /// Levels over the run, summed over groups, for `timeseries.csv` (not in the summary).
    #[serde(skip)]
    #[schemars(skip)]
    pub levels: AutoscaleLevels,
}

/// The autoscaling levels over a run, summed over groups: the `autoscaling_*` columns of
/// `timeseries.csv` are their interval means.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AutoscaleLevels {
    /// Autoscaled nodes in the fleet (up, `min_nodes` included).
    pub nodes_up: crate::metrics::steps::StepLog,
    /// Autoscaled nodes requested and not yet up (being provisioned).
    pub nodes_provisioning: crate::metrics::steps::StepLog,
    /// Jobs waiting for a scale-up (the integrand of `pending_for_capacity_job_s`).
    pub pending_for_capacity: crate::metrics::steps::StepLog,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Off,
    Provisioning,
    Up,
}

#[derive(Clone, Debug)]
struct NodeRec {
    id: NodeId,
    group: u32,
    state: State,
    idle_since: Option<SimTime>,
}

#[derive(Clone, Debug)]
struct Request {
    nodes: Vec<u32>,
}

#[derive(Clone, Debug, Default)]
struct Integrals {
    billed_ms: u128,
    up_gpu_ms: u128,
    alloc_gpu_milli_ms: u128,
}

/// The autoscaler's state in a run.
pub struct Autoscaler {
    cfg: AutoscaleConfig,
    expander: Box<dyn Expander>,
    rngs: Vec<crate::rng::Rng>,
    nodes: Vec<NodeRec>,
    /// Per group, its node records (indices into `nodes`).
    group_nodes: Vec<Vec<u32>>,
    requests: Vec<Request>,
    last_t: SimTime,
    /// Jobs waiting for a scale-up since the last scan.
    waiting: u64,
    /// Those jobs, in scan order.
    waiting_jobs: Vec<JobId>,
    waiting_ms: u128,
    integrals: Vec<Integrals>,
    stats: Vec<GroupStats>,
    levels: AutoscaleLevels,
    /// The placement context the estimator reads split layouts through (a cache of
    /// node shapes and topology, which do not change during a run).
    ctx: Box<fleetsim_policies::placement::PlaceCtx>,
}

/// What the engine must queue after a scan: request `u32` joins at the time.
pub type Joins = Vec<(SimTime, u32)>;

fn hours(ms: u128) -> f64 {
    ms as f64 / 3_600_000.0
}

impl Autoscaler {
    /// The autoscaler of `cfg`; takes every group node above `min_nodes` out of `fleet`.
    pub fn new(cfg: AutoscaleConfig, fleet: &mut FleetState) -> Autoscaler {
        let mut nodes = Vec::new();
        let mut group_nodes = Vec::new();
        let mut rngs = Vec::new();
        let mut stats = Vec::new();
        for (gi, g) in cfg.groups.iter().enumerate() {
            let mut mine = Vec::new();
            for (i, &id) in g.nodes.iter().enumerate() {
                let up = (i as u32) < g.min_nodes;
                if !up {
                    fleet.set_schedulable(id, false);
                }
                mine.push(nodes.len() as u32);
                nodes.push(NodeRec {
                    id,
                    group: gi as u32,
                    state: if up { State::Up } else { State::Off },
                    idle_since: None,
                });
            }
            group_nodes.push(mine);
            rngs.push(crate::rng::stream(
                cfg.seed,
                &format!("autoscaling/{}", g.name),
            ));
            stats.push(GroupStats {
                name: g.name.clone(),
                peak_nodes: g.min_nodes,
                ..GroupStats::default()
            });
        }
        Autoscaler {
            expander: cfg.expander.build(),
            integrals: vec![Integrals::default(); cfg.groups.len()],
            cfg,
            rngs,
            nodes,
            group_nodes,
            requests: Vec::new(),
            last_t: SimTime::ZERO,
            waiting: 0,
            waiting_jobs: Vec::new(),
            waiting_ms: 0,
            stats,
            levels: AutoscaleLevels::default(),
            ctx: Box::new(fleetsim_policies::placement::PlaceCtx::new()),
        }
    }

    fn active(&self, g: usize) -> u32 {
        self.group_nodes[g]
            .iter()
            .filter(|&&n| self.nodes[n as usize].state != State::Off)
            .count() as u32
    }

    /// Integrates the account up to `t` (call before anything changes at `t`).
    pub fn advance(&mut self, t: SimTime, fleet: &FleetState) {
        let dt = u128::from(t.0.saturating_sub(self.last_t.0));
        if dt == 0 {
            return;
        }
        self.record_levels();
        self.last_t = t;
        self.waiting_ms += u128::from(self.waiting) * dt;
        for n in &self.nodes {
            let acc = &mut self.integrals[n.group as usize];
            match n.state {
                State::Off => {}
                State::Provisioning => acc.billed_ms += dt,
                State::Up => {
                    let s = fleet.node(n.id);
                    acc.billed_ms += dt;
                    acc.up_gpu_ms += u128::from(s.gpus) * dt;
                    let used = u128::from(s.gpus * 1000 - s.free_gpu_milli.min(s.gpus * 1000));
                    acc.alloc_gpu_milli_ms += used * dt;
                }
            }
        }
    }

    /// Records the levels in force from `last_t` (the state since the last change).
    fn record_levels(&mut self) {
        let (mut up, mut prov) = (0u64, 0u64);
        for n in &self.nodes {
            match n.state {
                State::Off => {}
                State::Provisioning => prov += 1,
                State::Up => up += 1,
            }
        }
        let t = self.last_t;
        self.levels.nodes_up.set(t, up);
        self.levels.nodes_provisioning.set(t, prov);
        self.levels.pending_for_capacity.set(t, self.waiting);
    }

    /// Request `r`'s nodes join the fleet now.
    pub fn provisioned(&mut self, r: u32, fleet: &mut FleetState) {
        for &n in &self.requests[r as usize].nodes {
            let rec = &mut self.nodes[n as usize];
            rec.state = State::Up;
            rec.idle_since = None;
            fleet.set_schedulable(rec.id, true);
        }
    }

    /// The node of record `n` when its idle check at `t` would remove it were it empty
    /// (up, idle since `scale_down_idle` ago, its group above `min_nodes`).
    pub fn due_node(&self, n: u32, t: SimTime) -> Option<NodeId> {
        let rec = &self.nodes[n as usize];
        let g = rec.group as usize;
        let due = rec
            .idle_since
            .is_some_and(|s| s + self.cfg.groups[g].scale_down_idle <= t);
        (rec.state == State::Up && due && self.active(g) > self.cfg.groups[g].min_nodes)
            .then_some(rec.id)
    }

    /// Node record `n`'s idle check at `t`: removes it when idle since `scale_down_idle`
    /// ago and its group is above `min_nodes`. True when it left the fleet.
    pub fn idle_check(&mut self, n: u32, t: SimTime, fleet: &mut FleetState) -> bool {
        let rec = &self.nodes[n as usize];
        let g = rec.group as usize;
        let due = rec
            .idle_since
            .is_some_and(|s| s + self.cfg.groups[g].scale_down_idle <= t);
        if rec.state != State::Up || !due || busy(fleet, rec.id) {
            return false;
        }
        if self.active(g) <= self.cfg.groups[g].min_nodes {
            return false;
        }
        let rec = &mut self.nodes[n as usize];
        rec.state = State::Off;
        rec.idle_since = None;
        fleet.set_schedulable(rec.id, false);
        self.stats[g].nodes_removed += 1;
        true
    }

    /// After the passes of instant `t`: marks idle nodes (returning the idle checks to
    /// queue: node record, time) and scales up for pending work (returning the joins).
    pub fn after_passes(
        &mut self,
        t: SimTime,
        fleet: &FleetState,
        sched: &Scheduler,
    ) -> (Vec<(SimTime, u32)>, Joins) {
        let mut checks = Vec::new();
        for (i, rec) in self.nodes.iter_mut().enumerate() {
            if rec.state != State::Up {
                continue;
            }
            if busy(fleet, rec.id) {
                rec.idle_since = None;
            } else if rec.idle_since.is_none() {
                rec.idle_since = Some(t);
                let idle = self.cfg.groups[rec.group as usize].scale_down_idle;
                checks.push((t + idle, i as u32));
            }
        }
        let joins = self.scan(t, fleet, &Self::blocked(sched));
        (checks, joins)
    }

    /// The pending jobs blocked for want of capacity ([`MAX_SCAN`] at most, queue by queue
    /// in queue order).
    fn blocked(sched: &Scheduler) -> Vec<&PendingJob> {
        sched
            .pending_with_reasons()
            .take(MAX_SCAN)
            .filter(|(_, r)| {
                matches!(
                    r,
                    PendingReason::NoCapacity | PendingReason::Fragmentation | PendingReason::Gang
                )
            })
            .map(|(j, _)| j)
            .collect()
    }

    /// The free room of every cell with a group, per cell index: nodes in the fleet, in id
    /// order, then the nodes being provisioned (their whole capacity).
    /// A node with no free accelerator holds no GPU task: it is left out unless `cpu_jobs`
    /// (some job asks for no accelerator).
    fn room(&self, fleet: &FleetState, cpu_jobs: bool) -> Vec<Vec<Room>> {
        let mut room: Vec<Vec<Room>> = vec![Vec::new(); fleet.cells().len()];
        let mut has_group = vec![false; fleet.cells().len()];
        for g in &self.cfg.groups {
            has_group[g.cell.index()] = true;
        }
        for (i, n) in fleet.nodes().iter().enumerate() {
            let useful = n.free_gpu_milli > 0 || (cpu_jobs && n.free_cpu_milli > 0);
            if n.schedulable && useful && has_group[n.cell.index()] {
                room[n.cell.index()].push(Room::free(fleet, NodeId(i as u32)));
            }
        }
        for rec in &self.nodes {
            if rec.state == State::Provisioning {
                let g = &self.cfg.groups[rec.group as usize];
                room[g.cell.index()].push(Room {
                    checked: g.admission_check,
                    ..Room::empty(rec.id, g.model, g.gpus, g.cpu_milli, g.mem_mib)
                });
            }
        }
        room
    }

    /// One scale-up scan at `t` over `jobs` (blocked for want of capacity, in order), on
    /// `fleet` as it is after the passes: counts each job on the room it has in a cell it
    /// may use and, when that is not enough, asks the expander to choose among the groups
    /// that can add the nodes it still needs ([`estimate`]). Returns the joins to queue.
    pub fn scan(&mut self, t: SimTime, fleet: &FleetState, jobs: &[&PendingJob]) -> Joins {
        let mut room = self.room(fleet, jobs.iter().any(|j| j.shape.num_gpu == 0));
        let mut joins = Vec::new();
        let mut waiting = 0u64;
        self.waiting_jobs.clear();
        // Jobs alike in everything the estimate reads that neither fit the room nor scale:
        // an equal job finds the same while the room is unchanged.
        type Alike = (
            TaskShape,
            u32,
            ModelSet,
            Vec<CellId>,
            Option<TopologySpec>,
            bool,
        );
        let mut stuck: BTreeSet<Alike> = BTreeSet::new();
        for job in jobs {
            let alike: Alike = (
                job.shape,
                job.tasks,
                job.models,
                job.cells.clone(),
                job.topology,
                job.split,
            );
            if stuck.contains(&alike) {
                continue;
            }
            let eligible = |g: &GroupConfig| {
                job.allows_cell(g.cell)
                    && (job.shape.num_gpu == 0 || g.model.is_some_and(|m| job.models.allows(m)))
            };
            let mut cells: Vec<CellId> = self
                .cfg
                .groups
                .iter()
                .filter(|g| eligible(g))
                .map(|g| g.cell)
                .collect();
            cells.sort_unstable();
            cells.dedup();
            // 1. The room it has: a job it holds scales nothing (it waits for a scale-up
            // when some of that room is on its way).
            let layouts: Vec<(CellId, Layout)> = cells
                .iter()
                .map(|&c| (c, Layout::of(&mut self.ctx, fleet, c, job)))
                .collect();
            let held = layouts.iter().find_map(|(c, l)| {
                estimate::on_room(&room[c.index()], l, job.models, fleet).map(|p| (*c, l, p))
            });
            if let Some((c, l, plan)) = held {
                stuck.clear();
                let cell = &mut room[c.index()];
                let (mut on_the_way, mut unchecked) = (false, false);
                for &(i, n) in &plan.claims {
                    cell[i].take(&l.shape, n);
                    on_the_way |= cell[i].provisioning;
                    unchecked |= cell[i].provisioning && !cell[i].checked;
                }
                if on_the_way {
                    waiting += 1;
                    // Admitted now (Kueue's view) unless all its room on the way is on
                    // nodes an admission check provisions.
                    if unchecked {
                        self.waiting_jobs.push(job.id);
                    }
                }
                continue;
            }
            // 2. The nodes it still needs, per group that can add them all.
            let mut options = Vec::new();
            let mut plans = Vec::new();
            for (gi, g) in self.cfg.groups.iter().enumerate() {
                if !eligible(g) {
                    continue;
                }
                let l = &layouts
                    .iter()
                    .find(|(c, _)| *c == g.cell)
                    .expect("its cell")
                    .1;
                let off: Vec<estimate::Off> = self.group_nodes[gi]
                    .iter()
                    .map(|&n| (n, &self.nodes[n as usize]))
                    .filter(|(_, rec)| rec.state == State::Off)
                    .map(|(n, rec)| (n, rec.id))
                    .collect();
                let node = (g.gpus, g.cpu_milli, g.mem_mib);
                let Some(plan) =
                    estimate::with_nodes(&room[g.cell.index()], &off, node, l, job.models, fleet)
                else {
                    continue;
                };
                let need = plan.nodes.len() as u64;
                options.push(ScaleOption {
                    group: gi as u32,
                    nodes: need as u32,
                    waste_gpu_milli: (need * u64::from(g.gpus) * 1000)
                        .saturating_sub(plan.on_new * l.shape.total_gpu_milli()),
                    waste_cpu_milli: (need * g.cpu_milli)
                        .saturating_sub(plan.on_new * l.shape.cpu_milli),
                    price_micro_per_hour: (need as f64 * g.price_per_node_hour * 1e6).round()
                        as u64,
                    priority: g.priority,
                });
                plans.push((*l, plan));
            }
            let Some(pick) = self.expander.choose(&options) else {
                stuck.insert(alike);
                continue;
            };
            stuck.clear();
            let o = options[pick];
            let (l, plan) = &plans[pick];
            let gi = o.group as usize;
            let g = &self.cfg.groups[gi];
            let cell = &mut room[g.cell.index()];
            let mut unchecked = !g.admission_check;
            for &(i, n) in &plan.claims {
                cell[i].take(&l.shape, n);
                unchecked |= cell[i].provisioning && !cell[i].checked;
            }
            let delay = g.delay.sample(&mut self.rngs[gi]);
            // The job's own tasks take their room on the new nodes; the rest is claimable.
            let k = FleetState::tasks_per_empty_node(&l.shape, g.gpus, g.cpu_milli, g.mem_mib);
            let mut left = plan.on_new;
            for &n in &plan.nodes {
                let rec = &mut self.nodes[n as usize];
                rec.state = State::Provisioning;
                let mut fresh = Room {
                    checked: g.admission_check,
                    ..Room::empty(rec.id, g.model, g.gpus, g.cpu_milli, g.mem_mib)
                };
                let here = left.min(k);
                fresh.take(&l.shape, here);
                left -= here;
                cell.push(fresh);
            }
            let id = self.requests.len() as u32;
            self.requests.push(Request {
                nodes: plan.nodes.clone(),
            });
            joins.push((t + delay, id));
            let active = self.active(gi);
            let s = &mut self.stats[gi];
            s.scale_ups += 1;
            s.nodes_provisioned += u64::from(o.nodes);
            s.peak_nodes = s.peak_nodes.max(active);
            waiting += 1;
            if unchecked {
                self.waiting_jobs.push(job.id);
            }
        }
        self.waiting = waiting;
        joins
    }

    /// The jobs the last scan counted as waiting for a scale-up (claiming room on nodes
    /// being provisioned, their own request's included), in scan order, but those whose
    /// room is all on groups an admission check provisions ([`GroupConfig::admission_check`]):
    /// the jobs Kueue has admitted while their nodes are provisioned.
    pub fn waiting_jobs(&self) -> &[JobId] {
        &self.waiting_jobs
    }

    /// The account at the end of the run (`t`: its end).
    pub fn finish(&mut self, t: SimTime, fleet: &FleetState) -> AutoscaleStats {
        self.advance(t, fleet);
        self.record_levels();
        let mut out = AutoscaleStats {
            expander: self.cfg.expander.as_str().to_string(),
            pending_for_capacity_job_s: self.waiting_ms as f64 / 1000.0,
            ..AutoscaleStats::default()
        };
        for (gi, s) in self.stats.iter_mut().enumerate() {
            let acc = &self.integrals[gi];
            s.node_hours = hours(acc.billed_ms);
            s.cost = s.node_hours * self.cfg.groups[gi].price_per_node_hour;
            s.gpu_hours_provisioned = hours(acc.up_gpu_ms);
            s.gpu_hours_allocated = hours(acc.alloc_gpu_milli_ms) / 1000.0;
            out.cost += s.cost;
            out.node_hours += s.node_hours;
            out.gpu_hours_provisioned += s.gpu_hours_provisioned;
            out.gpu_hours_allocated += s.gpu_hours_allocated;
            out.scale_ups += s.scale_ups;
            out.scale_downs += s.nodes_removed;
            out.groups.push(s.clone());
        }
        out.levels = std::mem::take(&mut self.levels);
        out
    }
}

/// The autoscaler's hooks: its account advances with the clock; after the passes it marks
/// idle nodes (queueing their idle checks), scales up for the blocked jobs (queueing the
/// joins) and announces the jobs waiting for the nodes on the way, in scan order; its
/// events are the joins and the idle checks; its section is `autoscaling`.
impl Subsystem for Autoscaler {
    fn advance(&mut self, ctx: &mut Ctx<'_>, t: SimTime) {
        Autoscaler::advance(self, t, ctx.fleet());
    }

    fn on_event(&mut self, ctx: &mut Ctx<'_>, tag: u32) -> Result<(), EngineError> {
        if tag & IDLE_CHECK == 0 {
            self.provisioned(tag, ctx.fleet_mut());
            ctx.refresh_capacity();
            ctx.mark_changed();
        } else {
            let n = tag & !IDLE_CHECK;
            // Growth of elastic jobs does not keep a node up: they shrink first.
            if let Some(node) = self.due_node(n, ctx.now()) {
                ctx.release_opportunistic(node)?;
            }
            if self.idle_check(n, ctx.now(), ctx.fleet_mut()) {
                ctx.refresh_capacity();
            }
        }
        Ok(())
    }

    fn after_passes(&mut self, ctx: &mut Ctx<'_>, t: SimTime) {
        let (checks, joins) = Autoscaler::after_passes(self, t, ctx.fleet(), ctx.sched());
        for (at, n) in checks {
            debug_assert!(n < IDLE_CHECK, "fewer than 2^31 node records");
            ctx.schedule(at, IDLE_CHECK | n);
        }
        for (at, r) in joins {
            debug_assert!(r < IDLE_CHECK, "fewer than 2^31 scale-up requests");
            ctx.schedule(at, r);
        }
        for &id in &self.waiting_jobs {
            ctx.announce_waiting(id, t);
        }
    }

    fn finish(&mut self, ctx: &mut Ctx<'_>, result: &mut RunResult) {
        result.autoscaling = Some(Autoscaler::finish(self, ctx.now(), ctx.fleet()));
    }

    fn live_unsupported(&self) -> Option<&'static str> {
        // Nodes the autoscaler provisions and removes change the fleet without events in
        // the live stream, so a service replaying it would diverge.
        Some("autoscaling (nodes provisioned and removed)")
    }
}

fn busy(fleet: &FleetState, id: NodeId) -> bool {
    let s = fleet.node(id);
    s.free_gpu_milli < s.gpus * 1000 || s.free_cpu_milli < s.cpu_milli || s.free_mem_mib < s.mem_mib
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetsim_policies::{ModelSet, NodeSpec, TaskShape};
    use proptest::prelude::*;

    /// One cell: `statics` 8-GPU nodes, then a group of `max` nodes of `gpus` accelerators
    /// (the first `min` up), each in an NVLink domain of its own; `used[i]` accelerators of
    /// node `i` (static or up) bound. Returns the fleet and its autoscaler.
    fn cell(
        statics: usize,
        gpus: u32,
        max: usize,
        min: u32,
        used: &[u32],
    ) -> (FleetState, Autoscaler) {
        let spec = |i: usize, g: u32| NodeSpec {
            name: format!("n{i}"),
            cell: CellId(0),
            block: u32::from(i >= statics),
            domain: i as u32,
            model: Some(ModelId(0)),
            gpus: g,
            cpu_milli: 0,
            mem_mib: 0,
        };
        let nodes = (0..statics + max)
            .map(|i| spec(i, if i < statics { 8 } else { gpus }))
            .collect();
        let mut fleet = FleetState::new(vec!["c".into()], vec!["H100".into()], nodes).unwrap();
        let group = GroupConfig {
            name: "c/g".into(),
            cell: CellId(0),
            model: Some(ModelId(0)),
            gpus,
            cpu_milli: 0,
            mem_mib: 0,
            nodes: (statics..statics + max).map(|i| NodeId(i as u32)).collect(),
            min_nodes: min,
            delay: Delay::Fixed(SimDuration(60_000)),
            price_per_node_hour: 1.0,
            priority: 0,
            scale_down_idle: SimDuration(100_000),
            admission_check: false,
        };
        let cfg = AutoscaleConfig {
            groups: vec![group],
            expander: ExpanderKind::default(),
            seed: 1,
        };
        let auto = Autoscaler::new(cfg, &mut fleet);
        for (i, &u) in used.iter().enumerate().take(statics + min as usize) {
            let n = NodeId(i as u32);
            let u = u.min(fleet.node(n).gpus);
            if u > 0 {
                fleet
                    .allocate(n, &TaskShape::whole_gpus(u), ModelSet::ANY)
                    .unwrap();
            }
        }
        (fleet, auto)
    }

    /// Tasks of `shape` the fleet's schedulable nodes hold now, node by node.
    fn room_now(fleet: &FleetState, shape: &TaskShape) -> u64 {
        (0..fleet.nodes().len())
            .map(|i| u64::from(fleet.tasks_fit_now(NodeId(i as u32), shape, ModelSet::ANY)))
            .sum()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A blocked job that would fit on the free room of the nodes in the fleet plus the
        /// nodes its group can still add gets a scale-up in the scan of the instant it is
        /// blocked, of exactly `⌈(tasks − room) / per node⌉` nodes; once they join it fits.
        /// A job the room already holds, or one even every addable node would not hold,
        /// scales nothing; and a second scan before the nodes join asks for nothing more.
        #[test]
        fn a_blocked_job_that_fits_with_the_addable_nodes_scales_up_once(
            statics in 0usize..4,
            gpus in prop::sample::select(vec![4u32, 8]),
            max in 1usize..6,
            min in 0u32..3,
            used in proptest::collection::vec(0u32..=8, 8),
            tasks in 1u32..10,
            per_task in prop::sample::select(vec![1u32, 2, 4, 8]),
        ) {
            let min = min.min(max as u32);
            let (mut fleet, mut auto) = cell(statics, gpus, max, min, &used);
            let shape = TaskShape::whole_gpus(per_task);
            let job = PendingJob {
                id: JobId(0),
                tasks,
                shape,
                ..PendingJob::default()
            };
            let room = room_now(&fleet, &shape);
            let k = FleetState::tasks_per_empty_node(&shape, gpus, 0, 0);
            let addable = (max as u64 - u64::from(min)) * k;
            let t = u64::from(tasks);
            let joins = auto.scan(SimTime(5_000), &fleet, &[&job]);
            let added = |a: &Autoscaler| a.stats[0].nodes_provisioned;
            if room >= t || room + addable < t {
                prop_assert!(joins.is_empty(), "room {room}, addable {addable}, tasks {t}");
                prop_assert_eq!(added(&auto), 0);
                return Ok(());
            }
            prop_assert_eq!(joins.len(), 1);
            prop_assert_eq!(joins[0].0, SimTime(65_000));
            prop_assert_eq!(added(&auto), (t - room).div_ceil(k));
            prop_assert_eq!(auto.waiting_jobs(), &[JobId(0)]);
            // Scanned again before the nodes join: the room on its way holds it.
            prop_assert!(auto.scan(SimTime(6_000), &fleet, &[&job]).is_empty());
            prop_assert_eq!(added(&auto), (t - room).div_ceil(k));
            prop_assert_eq!(auto.waiting_jobs(), &[JobId(0)]);
            auto.provisioned(joins[0].1, &mut fleet);
            prop_assert!(room_now(&fleet, &shape) >= t);
        }
    }

    #[test]
    fn delays_draw_within_their_bounds_and_repeat_per_seed() {
        let mut a = crate::rng::stream(7, "autoscaling/c/g");
        let mut b = crate::rng::stream(7, "autoscaling/c/g");
        let u = Delay::Uniform(SimDuration(1000), SimDuration(2000));
        for _ in 0..100 {
            let x = u.sample(&mut a);
            assert!((1000..=2000).contains(&x.0));
            assert_eq!(x, u.sample(&mut b));
        }
        assert_eq!(Delay::Fixed(SimDuration(5)).sample(&mut a), SimDuration(5));
        let ln = Delay::Lognormal {
            median_s: 60.0,
            sigma: 0.0,
        };
        assert_eq!(ln.sample(&mut a), SimDuration(60_000));
    }
}
