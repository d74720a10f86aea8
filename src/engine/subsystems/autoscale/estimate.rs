//! The scale-up estimator: how many nodes of one group a blocked job needs, after the room
//! it already has.
//!
//! Cluster Autoscaler sizes a scale-up in two steps: "filter out schedulable pods" (a
//! pending pod that fits on an existing or upcoming node is simulated there, taking its
//! room, and triggers nothing) and the binpacking estimator (the remaining pods are packed
//! on template nodes of a node group, adding one when none holds the next pod). A gang
//! here is all-or-nothing (atomic scale-up, Kueue ProvisioningRequest), so both steps are
//! counted for the whole job in one cell:
//!
//! 1. **Room it has.** Its tasks are counted, node by node in node id order, on the free room
//!    of the cell's nodes that it may use: nodes in the fleet (static or autoscaled, of an
//!    allowed model) and nodes being provisioned (their whole capacity), less the room
//!    earlier jobs of the scan counted. A node holds as many tasks as its wholly free
//!    accelerators, CPU and memory allow; for a fractional task, at most what its
//!    accelerators' shares allow now ([`FleetState::tasks_fit_now`]).
//! 2. **Nodes it needs.** The rest go on empty nodes of the group: `⌈rest / k⌉`, `k` the
//!    tasks one empty node of the group holds ([`FleetState::tasks_per_empty_node`]).
//!
//! A job whose tasks take the node's shape ([`split`]) is counted as the members
//! placement places in that cell, with their slice constraint. A topology constraint is
//! kept: a **required level** (or Ray `STRICT_PACK`: one node) counts only the room and the
//! nodes of one group of that level (the one that needs the fewest new nodes, ties to the
//! lower group id); **slices** count whole slices per group of the slice level, both on
//! the room it has and on the new nodes (a last, smaller slice is counted as a whole one,
//! and a slice is not assembled from room in the fleet plus new nodes: at most one node
//! more than needed); Ray `STRICT_SPREAD` counts one task per node. A job none of whose
//! options can meet its constraint does not scale.

use fleetsim_policies::placement::{split, PlaceCtx};
use fleetsim_policies::topology::{Level, RayStrategy};
use fleetsim_policies::{CellId, FleetState, ModelId, ModelSet, NodeId, PendingJob, TaskShape};
use std::collections::BTreeMap;

/// Free room of one node in one scan: what earlier jobs of the scan have not counted.
#[derive(Clone, Copy, Debug)]
pub(super) struct Room {
    pub node: NodeId,
    pub model: Option<ModelId>,
    /// Accelerators of the node.
    pub gpus: u32,
    /// Being provisioned (a job counting on it waits for a scale-up).
    pub provisioning: bool,
    /// Being provisioned by a group an admission check provisions
    /// ([`super::GroupConfig::admission_check`]).
    pub checked: bool,
    /// Wholly free accelerators.
    pub whole: u32,
    pub gpu_milli: u64,
    pub cpu_milli: u64,
    pub mem_mib: u64,
}

impl Room {
    /// The whole capacity of an empty node `node` of `gpus` accelerators.
    pub fn empty(node: NodeId, model: Option<ModelId>, gpus: u32, cpu: u64, mem: u64) -> Room {
        Room {
            node,
            model,
            gpus,
            provisioning: true,
            checked: false,
            whole: gpus,
            gpu_milli: u64::from(gpus) * 1000,
            cpu_milli: cpu,
            mem_mib: mem,
        }
    }

    /// The free room of a node in the fleet now.
    pub fn free(fleet: &FleetState, node: NodeId) -> Room {
        let s = fleet.node(node);
        Room {
            node,
            model: s.model,
            gpus: s.gpus,
            provisioning: false,
            checked: false,
            whole: s.free_whole,
            gpu_milli: u64::from(s.free_gpu_milli),
            cpu_milli: s.free_cpu_milli,
            mem_mib: s.free_mem_mib,
        }
    }

    /// Tasks of `shape` (models `models`) this room holds, at most `cap`.
    fn fits(&self, shape: &TaskShape, models: ModelSet, fleet: &FleetState, cap: u64) -> u64 {
        let mut k = cap;
        if let Some(whole) = self.whole.checked_div(shape.num_gpu) {
            if !self.model.is_some_and(|m| models.allows(m)) {
                return 0;
            }
            if shape.is_fractional() {
                k = k.min(self.gpu_milli / shape.total_gpu_milli());
                let per_node = if self.provisioning {
                    FleetState::tasks_per_empty_node(shape, self.gpus, u64::MAX, u64::MAX)
                } else {
                    u64::from(fleet.tasks_fit_now(self.node, shape, models))
                };
                k = k.min(per_node);
            } else {
                k = k.min(u64::from(whole));
            }
        }
        if let Some(c) = self.cpu_milli.checked_div(shape.cpu_milli) {
            k = k.min(c);
        }
        if let Some(m) = self.mem_mib.checked_div(shape.mem_mib) {
            k = k.min(m);
        }
        k
    }

    /// Counts `n` tasks of `shape` here (they fit: [`Room::fits`]).
    pub fn take(&mut self, shape: &TaskShape, n: u64) {
        self.gpu_milli -= n * shape.total_gpu_milli();
        if shape.is_fractional() {
            self.whole = self.whole.min((self.gpu_milli / 1000) as u32);
        } else {
            self.whole -= (n * u64::from(shape.num_gpu)) as u32;
        }
        self.cpu_milli -= n * shape.cpu_milli;
        self.mem_mib -= n * shape.mem_mib;
    }
}

/// How a job is counted in one cell: the tasks placement places there and the topology
/// they must keep.
#[derive(Clone, Copy, Debug)]
pub(super) struct Layout {
    /// The task (or member) shape.
    pub shape: TaskShape,
    /// Tasks (members) of the whole job.
    pub tasks: u64,
    /// At most one task per node (Ray `STRICT_SPREAD`).
    spread: bool,
    /// The whole job inside one group of this level (below the cell).
    level: Option<Level>,
    /// Tasks per slice (1: no slices) and the slices' level.
    unit: u64,
    unit_level: Level,
}

impl Layout {
    /// `job` as placement places it in `cell` ([`split::member_job`]).
    pub fn of(ctx: &mut PlaceCtx, fleet: &FleetState, cell: CellId, job: &PendingJob) -> Layout {
        let (shape, tasks, topo) = match split::member_job(ctx, fleet, cell, job) {
            Some(m) => (m.shape, u64::from(m.tasks), m.topology),
            None => (job.shape, u64::from(job.tasks), job.topology),
        };
        let topo = topo.unwrap_or_default();
        let mut level = topo.required_level();
        let mut slice = topo
            .slice_size
            .filter(|&s| s > 1)
            .map(|s| (u64::from(s), topo.slice_level));
        if let Some((s, l)) = slice {
            if s >= tasks {
                // One slice is the whole gang: one group of its level.
                level = Some(level.map_or(l, |g| g.min(l)));
                slice = None;
            } else if level.is_some_and(|g| g <= l) {
                // The gang's group holds every slice.
                slice = None;
            }
        }
        let (unit, unit_level) = slice.unwrap_or((1, Level::Node));
        Layout {
            shape,
            tasks,
            spread: topo.ray == Some(RayStrategy::StrictSpread),
            level: level.filter(|&l| l != Level::Cell),
            unit,
            unit_level,
        }
    }

    /// Tasks one empty node of this shape holds.
    fn per_node(&self, gpus: u32, cpu: u64, mem: u64) -> u64 {
        let k = FleetState::tasks_per_empty_node(&self.shape, gpus, cpu, mem);
        if self.spread {
            k.min(1)
        } else {
            k
        }
    }
}

/// Where a job's tasks are counted: `(room index, tasks)` on the room it has, and the
/// group's node records to provision (empty: it fits the room it has).
#[derive(Clone, Debug, Default)]
pub(super) struct Plan {
    pub claims: Vec<(usize, u64)>,
    pub nodes: Vec<u32>,
    /// Tasks on the new nodes.
    pub on_new: u64,
}

/// A node the group can add: its record and id.
pub(super) type Off = (u32, NodeId);

/// The plan that fits `l` on `room` (one cell's) alone, in the first group of its level
/// (ascending id) that holds it; `None` when none does.
pub(super) fn on_room(
    room: &[Room],
    l: &Layout,
    models: ModelSet,
    fleet: &FleetState,
) -> Option<Plan> {
    let fits = fits_of(room, l, models, fleet);
    regions(fleet, l, fits.iter().map(|&(i, _)| room[i].node))
        .into_iter()
        .find_map(|r| {
            let mine: Vec<(usize, u64)> = fits
                .iter()
                .copied()
                .filter(|&(i, _)| in_region(fleet, l, room[i].node, r))
                .collect();
            plan_in(fleet, room, &mine, &[], l, 0).filter(|p| p.nodes.is_empty())
        })
}

/// The plan that fits `l` on `room` (one cell's) plus the fewest of `off` (the group's
/// nodes it can add, in order), each holding `(gpus, cpu, mem)`; `None` when even all of
/// them do not suffice in any group of its level. Ties between groups of the level go to
/// the lower group id.
pub(super) fn with_nodes(
    room: &[Room],
    off: &[Off],
    node: (u32, u64, u64),
    l: &Layout,
    models: ModelSet,
    fleet: &FleetState,
) -> Option<Plan> {
    let k = l.per_node(node.0, node.1, node.2);
    if k == 0 || off.is_empty() {
        return None;
    }
    let fits = fits_of(room, l, models, fleet);
    let mut best: Option<Plan> = None;
    for r in regions(fleet, l, off.iter().map(|&(_, n)| n)) {
        let mine: Vec<(usize, u64)> = fits
            .iter()
            .copied()
            .filter(|&(i, _)| in_region(fleet, l, room[i].node, r))
            .collect();
        let add: Vec<Off> = off
            .iter()
            .copied()
            .filter(|&(_, n)| in_region(fleet, l, n, r))
            .collect();
        if let Some(p) = plan_in(fleet, room, &mine, &add, l, k) {
            if best.as_ref().is_none_or(|b| p.nodes.len() < b.nodes.len()) {
                best = Some(p);
            }
        }
    }
    best
}

/// Per room entry that holds a task: `(index, tasks it holds)`, at most the whole job.
fn fits_of(room: &[Room], l: &Layout, models: ModelSet, fleet: &FleetState) -> Vec<(usize, u64)> {
    let cap = if l.spread { 1 } else { l.tasks };
    room.iter()
        .enumerate()
        .map(|(i, r)| (i, r.fits(&l.shape, models, fleet, cap)))
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// The groups of the job's level the nodes fall in, ascending (one, the cell, without a
/// level).
fn regions(fleet: &FleetState, l: &Layout, nodes: impl Iterator<Item = NodeId>) -> Vec<u32> {
    match l.level {
        None => vec![0],
        Some(level) => {
            let mut ids: Vec<u32> = nodes.map(|n| fleet.level_id(n, level)).collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        }
    }
}

fn in_region(fleet: &FleetState, l: &Layout, node: NodeId, r: u32) -> bool {
    l.level.is_none_or(|level| fleet.level_id(node, level) == r)
}

/// Counts `l` inside one region: whole slices on the room `fits` (in slice-level group
/// order, ascending), then whole slices on the fewest nodes of `add` (`k` tasks each).
fn plan_in(
    fleet: &FleetState,
    room: &[Room],
    fits: &[(usize, u64)],
    add: &[Off],
    l: &Layout,
    k: u64,
) -> Option<Plan> {
    let needed = l.tasks.div_ceil(l.unit);
    let mut units = 0u64;
    let mut plan = Plan::default();
    let mut by_group: BTreeMap<u32, Vec<(usize, u64)>> = BTreeMap::new();
    for &(i, n) in fits {
        by_group
            .entry(fleet.level_id(room[i].node, l.unit_level))
            .or_default()
            .push((i, n));
    }
    let mut counted = 0u64;
    for entries in by_group.values() {
        if units == needed {
            break;
        }
        let held: u64 = entries.iter().map(|&(_, n)| n).fold(0, u64::saturating_add);
        let take = (held / l.unit).min(needed - units);
        units += take;
        let mut left = (take * l.unit).min(l.tasks - counted);
        counted += left;
        for &(i, n) in entries {
            if left == 0 {
                break;
            }
            let t = n.min(left);
            plan.claims.push((i, t));
            left -= t;
        }
    }
    if units == needed {
        return Some(plan);
    }
    if k == 0 {
        return None;
    }
    let mut by_group: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &(rec, n) in add {
        by_group
            .entry(fleet.level_id(n, l.unit_level))
            .or_default()
            .push(rec);
    }
    let mut left = needed - units;
    for recs in by_group.values() {
        if left == 0 {
            break;
        }
        let most = (recs.len() as u64).saturating_mul(k) / l.unit;
        let take = most.min(left);
        if take == 0 {
            continue;
        }
        let nodes = (take * l.unit).div_ceil(k) as usize;
        plan.nodes.extend_from_slice(&recs[..nodes]);
        left -= take;
    }
    if left > 0 {
        return None;
    }
    plan.on_new = l.tasks - counted;
    Some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetsim_policies::topology::{TopologyMode, TopologySpec};
    use fleetsim_policies::NodeSpec;

    /// Four 8-GPU nodes: 0 and 1 in domain 0, 2 and 3 in domain 1.
    fn fleet() -> FleetState {
        let nodes = (0..4)
            .map(|i| NodeSpec {
                name: format!("n{i}"),
                cell: CellId(0),
                block: 0,
                domain: i / 2,
                model: Some(ModelId(0)),
                gpus: 8,
                cpu_milli: 0,
                mem_mib: 0,
            })
            .collect();
        FleetState::new(vec!["c".into()], vec!["H100".into()], nodes).unwrap()
    }

    fn layout(f: &FleetState, tasks: u32, gpus: u32, topology: Option<TopologySpec>) -> Layout {
        let job = PendingJob {
            tasks,
            shape: TaskShape::whole_gpus(gpus),
            topology,
            ..PendingJob::default()
        };
        Layout::of(&mut PlaceCtx::new(), f, CellId(0), &job)
    }

    /// Node 0 is up with 8 free GPUs; nodes 1, 2, 3 can be added. A gang of 2 × 8 GPUs
    /// required in one domain: domain 0 needs node 1 beside node 0 (1 node), domain 1
    /// needs nodes 2 and 3 (2 nodes): domain 0, one node, with node 0's room counted.
    /// Without the constraint the same single node suffices; required on one node
    /// (`STRICT_PACK`) no option holds 16 GPUs.
    #[test]
    fn a_required_level_counts_one_group_of_it_and_takes_the_fewest_nodes() {
        let f = fleet();
        let room = [Room::free(&f, NodeId(0))];
        let off: Vec<Off> = (1..4).map(|i| (i, NodeId(i))).collect();
        let domain = TopologySpec {
            level: Some(Level::Domain),
            mode: TopologyMode::Required,
            ..TopologySpec::default()
        };
        let l = layout(&f, 2, 8, Some(domain));
        let p = with_nodes(&room, &off, (8, 0, 0), &l, ModelSet::ANY, &f).unwrap();
        assert_eq!(
            (p.claims.as_slice(), p.nodes.as_slice(), p.on_new),
            (&[(0, 1)][..], &[1][..], 1)
        );
        // Room only in domain 1: both of its nodes.
        let p = with_nodes(&[], &off, (8, 0, 0), &l, ModelSet::ANY, &f).unwrap();
        assert_eq!(p.nodes, [2, 3]);
        let l = layout(&f, 2, 8, None);
        let p = with_nodes(&room, &off, (8, 0, 0), &l, ModelSet::ANY, &f).unwrap();
        assert_eq!(p.nodes, [1]);
        let pack = TopologySpec {
            ray: Some(RayStrategy::StrictPack),
            ..TopologySpec::default()
        };
        let l = layout(&f, 2, 8, Some(pack));
        assert!(with_nodes(&room, &off, (8, 0, 0), &l, ModelSet::ANY, &f).is_none());
    }

    /// `STRICT_SPREAD` counts one task per node: 3 × 1 GPU on node 0's room (8 free) and
    /// new nodes takes 2 new nodes, not none; with one addable node it does not scale.
    #[test]
    fn a_strict_spread_counts_one_task_per_node() {
        let f = fleet();
        let room = [Room::free(&f, NodeId(0))];
        let spread = TopologySpec {
            ray: Some(RayStrategy::StrictSpread),
            ..TopologySpec::default()
        };
        let l = layout(&f, 3, 1, Some(spread));
        assert!(on_room(&room, &l, ModelSet::ANY, &f).is_none());
        let off: Vec<Off> = (1..4).map(|i| (i, NodeId(i))).collect();
        let p = with_nodes(&room, &off, (8, 0, 0), &l, ModelSet::ANY, &f).unwrap();
        assert_eq!(p.nodes, [1, 2]);
        assert!(with_nodes(&room, &off[..1], (8, 0, 0), &l, ModelSet::ANY, &f).is_none());
        // Without the constraint node 0's room holds all three.
        let l = layout(&f, 3, 1, None);
        assert_eq!(
            on_room(&room, &l, ModelSet::ANY, &f).unwrap().claims,
            [(0, 3)]
        );
    }
}
