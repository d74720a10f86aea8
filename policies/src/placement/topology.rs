//! Topology-aware gang placement: the [`crate::topology::TopologySpec`] of a job, enforced
//! around any node-level policy, and the `topology-aware` policy.
//!
//! # Algorithm (Kueue TAS "BestFit", Slurm `topology/block`)
//!
//! The capacity of a group (node, NVLink domain, block, cell) for the gang's task shape is
//! the sum over its nodes of [`FleetState::tasks_fit_now`] — exact for identical tasks, since
//! CPU, memory and accelerators are independent per node.
//!
//! * **Pack at level `L`**: among the groups of `L` whose capacity holds the whole gang, take
//!   the tightest, top-down: below the block level, first the tightest block (least
//!   capacity) that contains such a group, then (for `L` = node) the tightest domain in it,
//!   then the tightest `L`-group there (a tie at one step goes to the next; a tie at every
//!   step to the lowest block, domain, group id — the listing order, last); at the block
//!   and cell levels the least capacity, ties to the lowest id. Place every task inside it with the node-level policy. If none holds it:
//!   `required` → the gang does not start
//!   now; `preferred` → climb one level (domain → block → cell), take the tightest group
//!   there that holds the gang, and inside it fill `L`-groups in descending capacity order
//!   (ties by id), so the gang spans as few `L`-groups as possible.
//! * **Slices** (`slice_size = s`, `slice_level = Ls`): the gang is cut into `⌈tasks/s⌉`
//!   slices, placed in order, each packed at `Ls` as *required*. With a gang `level` too,
//!   the slices are first confined to the tightest group of that level able to hold them all
//!   (required: or not at all; preferred: else anywhere in the cell).
//! * **Ray strategies**: `STRICT_PACK` = pack at the node level, required; `PACK` = pack at
//!   the node level, preferred; `STRICT_SPREAD` = each task on a node no earlier task of the
//!   gang uses, or not at all; `SPREAD` = likewise, reusing nodes only when no unused node
//!   fits. A Ray strategy replaces `level` and slices.
//!
//! All of it is all-or-nothing: a failure releases every reservation made for the gang.
//! A `required` level is never violated by any policy: the node-level policy only sees nodes
//! inside the group being filled ([`PlaceCtx::allowed`]).

use std::collections::BTreeMap;

use super::{place_tasks, unreserve, Choice, PlaceCtx, Placement};
use crate::ids::{CellId, NodeId};
use crate::job::PendingJob;
use crate::resources::{ModelSet, TaskShape};
use crate::state::{FleetState, TaskAlloc};
use crate::topology::{Level, RayStrategy, TopologyMode, TopologySpec};

/// `topology-aware`: for gangs that carry no constraint, [`TopologySpec::PREFER_DOMAIN`] —
/// the whole gang in the tightest NVLink domain that holds it, else as few domains as
/// possible inside the tightest block.
///
/// Each task (a single-task job, or one task of a gang inside the group it was given) goes
/// by the Kueue TAS "BestFit" / Slurm `topology/block` rule, top-down, so small jobs fill the
/// busiest groups and leave whole racks and blocks free for the gangs that need them:
///
/// 1. the **tightest block** that can take the task: the least capacity for the task's
///    shape (tasks of that shape that fit now, summed over the block's allowed nodes,
///    [`FleetState::tasks_fit_now`]) among blocks with a fitting node;
/// 2. inside it, the **tightest NVLink domain** (rack) by the same measure;
/// 3. inside it, the **tightest node**: the fitting node with the least free GPU-milli (CPU
///    for CPU-only tasks);
/// 4. a tie at one step goes to the next (blocks of equal capacity: their tightest domain,
///    then node, competes); only when block, domain and node capacity all tie, the lowest
///    block id, then domain id, then node id — the fleet's listing order, the last
///    tie-break: mirroring the listing order mirrors every placement no such tie decided.
///
/// Sources: Kueue topology-aware scheduling, "BestFit" profile (KEP-2724: among the domains
/// that fit, the one with the least free capacity, level by level from the top);
/// Slurm `topology/block` (a job goes to the smallest block that holds it, then best fit
/// inside). `O(candidates)` per task with an accelerator (the nodes of the capacity index
/// with enough free GPU-milli), `O(nodes)` for a CPU-only task, plus `O(log groups)` per
/// candidate for the group sums.
#[derive(Clone, Copy, Debug, Default)]
pub struct TopologyAware;

impl Placement for TopologyAware {
    fn name(&self) -> &'static str {
        "topology-aware"
    }
    fn select_is_pure(&self) -> bool {
        true
    }
    fn select(
        &self,
        ctx: &mut PlaceCtx,
        fleet: &FleetState,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Option<Choice> {
        let cands = node_capacities(ctx, fleet, cell, shape, models);
        let sums = GroupSums::new(fleet, &cands);
        cands
            .iter()
            .filter(|&&(n, _)| fleet.fits(n, shape, models))
            .map(|&(n, _)| {
                let node = fleet.node(n);
                let own = if shape.num_gpu == 0 {
                    node.free_cpu_milli
                } else {
                    u64::from(node.free_gpu_milli)
                };
                let (b, d) = (node.block, node.domain);
                (sums.block[&b], sums.domain[&d], own, b, d, n)
            })
            .min()
            .map(|(.., n)| Choice::node(n))
    }
    fn default_topology(&self) -> Option<TopologySpec> {
        Some(TopologySpec::PREFER_DOMAIN)
    }
}

/// The allowed nodes of `cell` that hold at least one task of `shape` now, with how many
/// ([`FleetState::tasks_fit_now`]). For a task with accelerators only the capacity index's
/// candidates of the allowed models are visited; a CPU-only task scans the cell.
fn node_capacities(
    ctx: &PlaceCtx,
    fleet: &FleetState,
    cell: CellId,
    shape: &TaskShape,
    models: ModelSet,
) -> Vec<(NodeId, u64)> {
    let mut out = Vec::new();
    let mut add = |n| {
        if !ctx.allowed(fleet, n) {
            return;
        }
        let k = u64::from(fleet.tasks_fit_now(n, shape, models));
        if k > 0 {
            out.push((n, k));
        }
    };
    match u32::try_from(shape.total_gpu_milli()) {
        Ok(need) if shape.num_gpu > 0 => {
            for m in fleet.cell_models(cell).filter(|&m| models.allows(m)) {
                fleet.gpu_candidates(cell, m, need).for_each(&mut add);
            }
        }
        _ => fleet.cells()[cell.index()]
            .nodes
            .iter()
            .copied()
            .for_each(&mut add),
    }
    out
}

/// Capacity (tasks of one shape) per block and per domain, summed over some nodes.
struct GroupSums {
    block: BTreeMap<u32, u64>,
    domain: BTreeMap<u32, u64>,
}

impl GroupSums {
    fn new(fleet: &FleetState, nodes: &[(NodeId, u64)]) -> GroupSums {
        let mut s = GroupSums {
            block: BTreeMap::new(),
            domain: BTreeMap::new(),
        };
        for &(n, k) in nodes {
            let node = fleet.node(n);
            *s.block.entry(node.block).or_insert(0) += k;
            *s.domain.entry(node.domain).or_insert(0) += k;
        }
        s
    }
}

/// The group of `level` (node or domain) a gang of `need` tasks is packed into: among the
/// groups whose capacity holds it, top-down — the tightest block containing one, then the
/// tightest domain in it (for `level` = node), then the tightest group (least capacity);
/// a tie at one step goes to the next, and only a tie at every step to the lowest block,
/// domain, group id. `None` when no group holds `need`.
fn tightest_nested(
    ctx: &PlaceCtx,
    fleet: &FleetState,
    cell: CellId,
    shape: &TaskShape,
    models: ModelSet,
    level: Level,
    need: u64,
) -> Option<u32> {
    debug_assert!(level < Level::Block);
    let cands = node_capacities(ctx, fleet, cell, shape, models);
    let sums = GroupSums::new(fleet, &cands);
    cands
        .iter()
        .filter_map(|&(n, k)| {
            let node = fleet.node(n);
            let (b, d) = (node.block, node.domain);
            let (dcap, dkey) = (sums.domain[&d], d);
            let (cap, id) = match level {
                Level::Node => (k, n.0),
                _ => (dcap, d),
            };
            (cap >= need).then_some((sums.block[&b], dcap, cap, b, dkey, id))
        })
        .min()
        .map(|(.., id)| id)
}

/// The tightest group of `level` that holds `need` tasks: block-first
/// ([`tightest_nested`]) below the block level, the least capacity (ties to the lowest id)
/// at the block and cell levels.
fn choose_group(
    ctx: &PlaceCtx,
    fleet: &FleetState,
    cell: CellId,
    shape: &TaskShape,
    models: ModelSet,
    level: Level,
    need: u64,
) -> Option<u32> {
    if level < Level::Block {
        tightest_nested(ctx, fleet, cell, shape, models, level, need)
    } else {
        let caps = group_capacities(ctx, fleet, cell, shape, models, level);
        tightest(&caps, need)
    }
}

/// Capacity for `shape` of every group of `level` among the allowed nodes of `cell`, by
/// group id (ascending).
///
/// A task with accelerators fits only a node with at least its total GPU-milli free, so
/// for one only the capacity index's candidates of the allowed models are visited (the
/// sums do not depend on the order nodes are visited in); a CPU-only task scans the cell.
pub fn group_capacities(
    ctx: &PlaceCtx,
    fleet: &FleetState,
    cell: CellId,
    shape: &TaskShape,
    models: ModelSet,
    level: Level,
) -> BTreeMap<u32, u64> {
    let mut caps = BTreeMap::new();
    // Nodes come mostly in id order, so runs of one group: a run is summed here and added
    // to the map once.
    let mut run: Option<(u32, u64)> = None;
    let mut add = |n| {
        if !ctx.allowed(fleet, n) {
            return;
        }
        let k = u64::from(fleet.tasks_fit_now(n, shape, models));
        if k == 0 {
            return;
        }
        let g = fleet.level_id(n, level);
        match &mut run {
            Some((rg, rk)) if *rg == g => *rk += k,
            _ => {
                if let Some((rg, rk)) = run.replace((g, k)) {
                    *caps.entry(rg).or_insert(0u64) += rk;
                }
            }
        }
    };
    match u32::try_from(shape.total_gpu_milli()) {
        Ok(need) if shape.num_gpu > 0 => {
            for m in fleet.cell_models(cell).filter(|&m| models.allows(m)) {
                fleet.gpu_candidates(cell, m, need).for_each(&mut add);
            }
        }
        _ => fleet.cells()[cell.index()]
            .nodes
            .iter()
            .copied()
            .for_each(&mut add),
    }
    if let Some((g, k)) = run {
        *caps.entry(g).or_insert(0u64) += k;
    }
    caps
}

/// The tightest group (least capacity ≥ `need`, ties to the lowest id).
fn tightest(caps: &BTreeMap<u32, u64>, need: u64) -> Option<u32> {
    caps.iter()
        .filter(|(_, &c)| c >= need)
        .min_by_key(|(&id, &c)| (c, id))
        .map(|(&id, _)| id)
}

/// Places `n` tasks inside group `id` of `level`; on failure releases `allocs` too.
#[allow(clippy::too_many_arguments)]
fn place_in(
    policy: &dyn Placement,
    ctx: &mut PlaceCtx,
    fleet: &mut FleetState,
    cell: CellId,
    job: &PendingJob,
    level: Level,
    id: u32,
    n: u32,
    allocs: Vec<TaskAlloc>,
) -> Option<Vec<TaskAlloc>> {
    ctx.push_restrict(level, id);
    let out = place_tasks(policy, ctx, fleet, cell, job, n, allocs);
    ctx.pop_restrict();
    out
}

/// Packs `n` tasks at `level` (see the module docs); on failure releases `allocs` too.
#[allow(clippy::too_many_arguments)]
fn pack(
    policy: &dyn Placement,
    ctx: &mut PlaceCtx,
    fleet: &mut FleetState,
    cell: CellId,
    job: &PendingJob,
    n: u32,
    level: Level,
    mode: TopologyMode,
    allocs: Vec<TaskAlloc>,
) -> Option<Vec<TaskAlloc>> {
    if let Some(id) = choose_group(
        ctx,
        fleet,
        cell,
        &job.shape,
        job.models,
        level,
        u64::from(n),
    ) {
        return place_in(policy, ctx, fleet, cell, job, level, id, n, allocs);
    }
    if mode == TopologyMode::Required || level == Level::Cell {
        unreserve(fleet, &allocs);
        return None;
    }
    // Preferred: the tightest larger group that holds the gang, filled with as few
    // `level`-groups as possible.
    let mut up = level.up();
    loop {
        if let Some(uid) = choose_group(ctx, fleet, cell, &job.shape, job.models, up, u64::from(n))
        {
            ctx.push_restrict(up, uid);
            let inner = group_capacities(ctx, fleet, cell, &job.shape, job.models, level);
            let mut order: Vec<(u64, u32)> = inner.into_iter().map(|(id, c)| (c, id)).collect();
            order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut left = n;
            let mut acc = allocs;
            for (c, id) in order {
                if left == 0 {
                    break;
                }
                let k = left.min(c.min(u64::from(u32::MAX)) as u32);
                match place_in(policy, ctx, fleet, cell, job, level, id, k, acc) {
                    Some(a) => acc = a,
                    None => {
                        ctx.pop_restrict();
                        return None;
                    }
                }
                left -= k;
            }
            ctx.pop_restrict();
            if left > 0 {
                unreserve(fleet, &acc);
                return None;
            }
            return Some(acc);
        }
        if up == Level::Cell {
            unreserve(fleet, &allocs);
            return None;
        }
        up = up.up();
    }
}

/// Spread: each task on a node no earlier task of the gang uses; `strict` fails when none
/// is left, otherwise nodes are reused.
fn spread(
    policy: &dyn Placement,
    ctx: &mut PlaceCtx,
    fleet: &mut FleetState,
    cell: CellId,
    job: &PendingJob,
    strict: bool,
) -> Option<Vec<TaskAlloc>> {
    let saved = std::mem::take(ctx.exclude_mut());
    let mut allocs: Vec<TaskAlloc> = Vec::with_capacity(job.tasks as usize);
    let mut ok = true;
    for _ in 0..job.tasks {
        let used: Vec<_> = allocs.iter().map(|a| a.node).collect();
        *ctx.exclude_mut() = saved.iter().copied().chain(used).collect();
        let mut got = super::place_task(policy, ctx, fleet, cell, &job.shape, job.models);
        if got.is_none() && !strict {
            ctx.exclude_mut().clone_from(&saved);
            got = super::place_task(policy, ctx, fleet, cell, &job.shape, job.models);
        }
        match got {
            Some(a) => allocs.push(a),
            None => {
                ok = false;
                break;
            }
        }
    }
    *ctx.exclude_mut() = saved;
    if ok {
        Some(allocs)
    } else {
        unreserve(fleet, &allocs);
        None
    }
}

/// Places a gang under `spec` (see the module docs): all tasks or none.
pub fn place_gang_topology(
    policy: &dyn Placement,
    ctx: &mut PlaceCtx,
    fleet: &mut FleetState,
    cell: CellId,
    job: &PendingJob,
    spec: &TopologySpec,
) -> Option<Vec<TaskAlloc>> {
    match spec.ray {
        Some(RayStrategy::StrictPack) => {
            return pack(
                policy,
                ctx,
                fleet,
                cell,
                job,
                job.tasks,
                Level::Node,
                TopologyMode::Required,
                Vec::new(),
            )
        }
        Some(RayStrategy::Pack) => {
            return pack(
                policy,
                ctx,
                fleet,
                cell,
                job,
                job.tasks,
                Level::Node,
                TopologyMode::Preferred,
                Vec::new(),
            )
        }
        Some(RayStrategy::StrictSpread) => return spread(policy, ctx, fleet, cell, job, true),
        Some(RayStrategy::Spread) => return spread(policy, ctx, fleet, cell, job, false),
        None => {}
    }
    let Some(size) = spec.slice_size.filter(|&s| s > 0) else {
        return match spec.level {
            Some(level) => pack(
                policy,
                ctx,
                fleet,
                cell,
                job,
                job.tasks,
                level,
                spec.mode,
                Vec::new(),
            ),
            None => place_tasks(policy, ctx, fleet, cell, job, job.tasks, Vec::new()),
        };
    };
    let slices = job.tasks.div_ceil(size);
    // Confine the slices to one group of the gang level, if one can hold them all (the
    // gang level may be the slices' own: all slices in one group when one has room).
    let mut confined = false;
    if let Some(level) = spec.level.filter(|&l| l >= spec.slice_level) {
        let caps = group_capacities(ctx, fleet, cell, &job.shape, job.models, spec.slice_level);
        let mut slice_room: BTreeMap<u32, u64> = BTreeMap::new();
        for (&sub, &c) in &caps {
            // Any node of the sub-group names its parent group.
            if let Some(&n) = fleet.cells()[cell.index()]
                .nodes
                .iter()
                .find(|&&n| fleet.level_id(n, spec.slice_level) == sub)
            {
                *slice_room.entry(fleet.level_id(n, level)).or_insert(0) += c / u64::from(size);
            }
        }
        match tightest(&slice_room, u64::from(slices)) {
            Some(id) => {
                ctx.push_restrict(level, id);
                confined = true;
            }
            None if spec.mode == TopologyMode::Required => return None,
            None => {}
        }
    }
    let mut allocs = Vec::with_capacity(job.tasks as usize);
    let mut left = job.tasks;
    let mut ok = true;
    while left > 0 {
        let k = left.min(size);
        match pack(
            policy,
            ctx,
            fleet,
            cell,
            job,
            k,
            spec.slice_level,
            TopologyMode::Required,
            allocs,
        ) {
            Some(a) => allocs = a,
            None => {
                ok = false;
                allocs = Vec::new();
                break;
            }
        }
        left -= k;
    }
    if confined {
        ctx.pop_restrict();
    }
    ok.then_some(allocs)
}

/// The largest gang of `shape` tasks that could start now inside one group of `level` in
/// `cell` (the largest group capacity), ignoring any restriction. For whole-GPU shapes of one
/// accelerator this is the largest placeable gang in accelerators.
pub fn largest_gang(
    fleet: &FleetState,
    cell: CellId,
    shape: &TaskShape,
    models: ModelSet,
    level: Level,
) -> u64 {
    group_capacities(&PlaceCtx::new(), fleet, cell, shape, models, level)
        .values()
        .copied()
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{JobId, ModelId, NodeId, QueueId, TenantId};
    use crate::placement::{place_gang, BestFit};
    use crate::state::NodeSpec;
    use crate::time::SimTime;

    /// Two "racks" (domains) of 3 nodes × 4 GPUs, in one block.
    fn racks() -> FleetState {
        let nodes = (0..6)
            .map(|i| NodeSpec {
                name: format!("r{}n{}", i / 3, i % 3),
                cell: CellId(0),
                block: 0,
                domain: i / 3,
                model: Some(ModelId(0)),
                gpus: 4,
                cpu_milli: 64_000,
                mem_mib: 1 << 20,
            })
            .collect();
        FleetState::new(vec!["c".into()], vec!["GB200".into()], nodes).unwrap()
    }

    fn gang(tasks: u32, gpus: u32, topology: Option<TopologySpec>) -> PendingJob {
        PendingJob {
            id: JobId(0),
            tenant: TenantId(0),
            queue: QueueId(0),
            priority: 0,
            submit: SimTime(0),
            seq: 0,
            shape: TaskShape::whole_gpus(gpus),
            tasks,
            models: ModelSet::ANY,
            cells: vec![],
            runtime_estimate: None,
            topology,
            ..PendingJob::default()
        }
    }

    fn domains(f: &FleetState, a: &[TaskAlloc]) -> Vec<u32> {
        let mut d: Vec<u32> = a.iter().map(|x| f.node(x.node).domain).collect();
        d.dedup();
        d
    }

    #[test]
    fn prefers_the_tightest_domain_that_holds_the_gang() {
        let mut f = racks();
        let mut ctx = PlaceCtx::new();
        // Occupy 1 node of rack 1: rack 1 now holds 8 GPUs, rack 0 holds 12.
        f.allocate(NodeId(3), &TaskShape::whole_gpus(4), ModelSet::ANY)
            .unwrap();
        let g = gang(2, 4, Some(TopologySpec::PREFER_DOMAIN));
        let a = place_gang(&TopologyAware, &mut ctx, &mut f, CellId(0), &g).unwrap();
        assert_eq!(domains(&f, &a), vec![1], "tightest rack that fits");
        // Best-fit alone puts the two tasks on nodes 0 and 1 (rack 0) — fine — but a 3-task
        // gang now fits only rack 0 whole.
        let g3 = gang(3, 4, Some(TopologySpec::PREFER_DOMAIN));
        let a3 = place_gang(&TopologyAware, &mut ctx, &mut f, CellId(0), &g3).unwrap();
        assert_eq!(domains(&f, &a3), vec![0]);
    }

    #[test]
    fn required_level_is_never_violated() {
        let mut f = racks();
        let mut ctx = PlaceCtx::new();
        let req = TopologySpec {
            level: Some(Level::Domain),
            mode: TopologyMode::Required,
            ..TopologySpec::default()
        };
        // 4 tasks × 4 GPUs = 16 > 12 per rack: required cannot start, nothing is held.
        assert!(place_gang(
            &BestFit,
            &mut ctx,
            &mut f,
            CellId(0),
            &gang(4, 4, Some(req))
        )
        .is_none());
        assert_eq!(f.allocated_gpu_milli(), 0);
        // Preferred spans two racks.
        let pref = TopologySpec {
            mode: TopologyMode::Preferred,
            ..req
        };
        let a = place_gang(
            &BestFit,
            &mut ctx,
            &mut f,
            CellId(0),
            &gang(4, 4, Some(pref)),
        )
        .unwrap();
        assert_eq!(domains(&f, &a), vec![0, 1]);
    }

    #[test]
    fn slices_stay_in_one_domain_and_ray_strategies() {
        let mut f = racks();
        let mut ctx = PlaceCtx::new();
        let sliced = TopologySpec {
            slice_size: Some(3),
            slice_level: Level::Domain,
            ..TopologySpec::default()
        };
        // 6 tasks of 2 GPUs in slices of 3: each slice inside one rack.
        let a = place_gang(
            &BestFit,
            &mut ctx,
            &mut f,
            CellId(0),
            &gang(6, 2, Some(sliced)),
        )
        .unwrap();
        for s in a.chunks(3) {
            assert_eq!(domains(&f, s).len(), 1);
        }
        let mut f = racks();
        let strict_spread = TopologySpec {
            ray: Some(RayStrategy::StrictSpread),
            ..TopologySpec::default()
        };
        let a = place_gang(
            &BestFit,
            &mut ctx,
            &mut f,
            CellId(0),
            &gang(6, 1, Some(strict_spread)),
        )
        .unwrap();
        let mut nodes: Vec<_> = a.iter().map(|x| x.node).collect();
        nodes.dedup();
        assert_eq!(nodes.len(), 6);
        assert!(place_gang(
            &BestFit,
            &mut ctx,
            &mut f,
            CellId(0),
            &gang(7, 1, Some(strict_spread))
        )
        .is_none());
        let strict_pack = TopologySpec {
            ray: Some(RayStrategy::StrictPack),
            ..TopologySpec::default()
        };
        let a = place_gang(
            &BestFit,
            &mut ctx,
            &mut f,
            CellId(0),
            &gang(3, 1, Some(strict_pack)),
        )
        .unwrap();
        assert!(a.iter().all(|x| x.node == a[0].node));
        assert!(place_gang(
            &BestFit,
            &mut ctx,
            &mut f,
            CellId(0),
            &gang(5, 1, Some(strict_pack))
        )
        .is_none());
    }

    #[test]
    fn largest_gang_per_level() {
        let mut f = racks();
        f.allocate(NodeId(0), &TaskShape::whole_gpus(3), ModelSet::ANY)
            .unwrap();
        let one = TaskShape::whole_gpus(1);
        let c = CellId(0);
        assert_eq!(largest_gang(&f, c, &one, ModelSet::ANY, Level::Node), 4);
        assert_eq!(largest_gang(&f, c, &one, ModelSet::ANY, Level::Domain), 12);
        assert_eq!(largest_gang(&f, c, &one, ModelSet::ANY, Level::Block), 21);
    }
}
