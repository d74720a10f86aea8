//! LAS victims by node: the search of [`super::las_victims::LasCursor`] answered from an
//! index of the nodes, without drawing the victims one by one.
//!
//! Where the LAS rule alone can give a preemptor victims ([`las_only_victims`]), the
//! preemptor's tasks are of whole GPUs and it has no topology constraint, and the placement
//! is pure and finds a node whenever one fits ([`crate::Placement::select_is_pure`],
//! [`crate::Placement::select_is_complete`]), a gang of `m` tasks fits in a cell exactly
//! when the cell's nodes take `m` tasks between them (each node as many as
//! [`FleetState::tasks_fit_now`] says, the placement taking them one by one). The greedy
//! search ([`crate::preemption::minimal_victim_set_from`]) takes victims in victim order
//! until the gang fits, and how many tasks a node takes depends on the victims bound on it
//! alone. So each node has, in victim order, the victims after whose release it takes one
//! more task (its *increments*; those it takes already count first), and the search stops
//! at the victim `s` that is the `m`-th increment of some cell, the earliest over the
//! cells. While the search minimizes, no other cell takes the gang (none did with even
//! more victims out), and putting back a victim on a node without an increment up to `s`
//! changes no node's count: it is put back. So the search over just the victims bound on
//! the nodes of that cell with an increment up to `s`, in victim order up to `s`, takes
//! and keeps the same victims and leaves the fleet in the same state, where the placement
//! then chooses the same nodes: the same decision. [`victims_by_node`] returns that short
//! sequence, which [`super::preempt::plan`] searches as usual; an empty one when no cell
//! can ever take the gang (the search would draw every victim in reach, take each out and
//! put each back).
//!
//! The index keeps, per node, the bindings of the indexed jobs on it in victim order
//! ([`LasNodes`], filed and unfiled by [`super::las_victims::LasVictims`]), and per *view*
//! (the preemptor's LAS queue, its tier, its task shape, models and cells) each node's
//! first increments and, per cell, every node's increments in order. A view is refreshed,
//! when read, for the nodes that changed since: those in the fleet's journal
//! ([`FleetState::take_changed`]) and those a job was filed on or unfiled from. The
//! cursor's per-preemptor filters (rules P3 and P4, and the priority rule's equal
//! priority) can only make increments later, so the answer stands when every victim it
//! draws passes them; when one does not, the cursor answers instead (rare: a job preempted
//! at this instant is not indexed unless it started again, and P4 counts restart at every
//! completion).
//!
//! A preemptor of one whole GPU and nothing else is left to the cursor: it fits on the node
//! of its first victim that holds a whole GPU, so the cursor's search is a draw or two, and
//! a view for it would be kept up to date for little.
//!
//! Cost: a search reads the first `m` increments of each cell and the bindings on the
//! nodes it returns; a changed node costs `O(bindings on it + m log nodes)` per view when
//! that view is next read. The cursor's search drew, at `saturated_las` with 30,000 jobs on
//! 128 nodes, about 317 victims per search of a gang, each taken out of the fleet and put
//! back.

use super::*;
use crate::decision::PreemptReason;
use crate::ids::NodeId;
use crate::preemption::{Candidate, CapacityPreemption};
use crate::state::NodeAfterRelease;

/// A victim's place in the LAS victim order of one phase, merged across queues: tier, then
/// the highest LAS queue, the newest entrant, the larger sequence, the smaller id
/// ([`super::las_victims::Slot`] without the queue).
pub(crate) type VKey = (u8, Reverse<usize>, Reverse<SimTime>, Reverse<u64>, JobId);

/// A node's increment: `(false, _)` for a task it takes with no victim out (first of all),
/// `(true, key)` for one it takes once the victim at `key` is out.
type Inc = (bool, VKey);

/// The increment a node has with no victim out.
const NOW: Inc = (
    false,
    (0, Reverse(0), Reverse(SimTime::ZERO), Reverse(0), JobId(0)),
);

/// What a view answers for: preemptors of one LAS queue and tier, with one task shape,
/// models and cell set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ViewKey {
    level: usize,
    max_tier: u8,
    shape: TaskShape,
    models: ModelSet,
    /// Interned cell list ([`Entry::cells_key`]; `u32::MAX`: every cell).
    cells: u32,
}

/// The nodes' increments for one [`ViewKey`].
#[derive(Debug)]
struct View {
    key: ViewKey,
    /// The cells the preemptor allows, by cell index.
    allowed: Vec<bool>,
    /// How many increments are kept per node (the largest gang asked for so far).
    depth: usize,
    /// Each node's first `depth` increments, ascending, by node index.
    incs: Vec<Vec<Inc>>,
    /// Per cell: the increments of its nodes, ascending, each with its node and its place
    /// among the node's (a node may take several tasks at one victim).
    cells: Vec<BTreeSet<(Inc, NodeId, u32)>>,
    /// Nodes changed since the view was last read, and whether each is listed.
    dirty: Vec<NodeId>,
    is_dirty: Vec<bool>,
}

impl View {
    fn mark(&mut self, n: NodeId) {
        let i = n.index();
        if i >= self.is_dirty.len() {
            self.is_dirty.resize(i + 1, false);
        }
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(n);
        }
    }

    fn mark_all(&mut self, nodes: usize) {
        for i in 0..nodes {
            self.mark(NodeId(i as u32));
        }
    }
}

/// One binding of an indexed job on a node, with what the filters read of the job.
#[derive(Clone, Copy, Debug)]
struct Resident {
    key: VKey,
    priority: i32,
    alloc: TaskAlloc,
}

/// The index (module docs). Not serialized: a loaded scheduler rebuilds it when a search
/// first reads it.
#[derive(Debug, Default)]
pub(crate) struct LasNodes {
    /// Whether the residents are kept (from the first read on).
    built: bool,
    /// Per node: the bindings of the indexed jobs on it, ascending by [`VKey`] (a job's
    /// bindings on one node are neighbours).
    residents: Vec<Vec<Resident>>,
    /// Per job (by [`JobId`] index): the nodes it is filed on.
    filed: Vec<Vec<NodeId>>,
    views: Vec<View>,
    /// The fleet's change count ([`FleetState::change_count`]) the views were last brought
    /// up to.
    seen: u64,
    /// Scratch for the fleet's journal.
    changed: Vec<NodeId>,
}

impl LasNodes {
    /// Starts keeping the residents (an empty index, before every job is filed).
    pub(super) fn set_built(&mut self) {
        self.built = true;
    }

    /// Files indexed job `key.4` (of priority `priority`) under `key` on the nodes of its
    /// bindings `allocs` (no-op before the index is built).
    pub(crate) fn file(&mut self, key: VKey, priority: i32, allocs: &[TaskAlloc]) {
        if !self.built {
            return;
        }
        let id = key.4;
        if id.index() >= self.filed.len() {
            self.filed.resize_with(id.index() + 1, Vec::new);
        }
        for a in allocs {
            let n = a.node;
            if !self.filed[id.index()].contains(&n) {
                self.filed[id.index()].push(n);
                for v in &mut self.views {
                    v.mark(n);
                }
            }
            if n.index() >= self.residents.len() {
                self.residents.resize_with(n.index() + 1, Vec::new);
            }
            let list = &mut self.residents[n.index()];
            let at = list.partition_point(|r| r.key <= key);
            list.insert(
                at,
                Resident {
                    key,
                    priority,
                    alloc: *a,
                },
            );
        }
    }

    /// Unfiles job `id` from every node it is filed on.
    pub(crate) fn unfile(&mut self, id: JobId) {
        let Some(nodes) = self.filed.get_mut(id.index()) else {
            return;
        };
        for n in nodes.drain(..) {
            self.residents[n.index()].retain(|r| r.key.4 != id);
            for v in &mut self.views {
                v.mark(n);
            }
        }
    }

    /// Marks the nodes the fleet changed since the last call in every view. When the
    /// fleet's journal does not start where the views were left (a fleet loaded from a
    /// snapshot keeps none; another fleet, or a copy of this one made earlier, starts
    /// elsewhere), turns a fresh journal on and drops the views (rebuilt when next read).
    pub(crate) fn absorb(&mut self, fleet: &mut FleetState) {
        if !self.built {
            return;
        }
        let mut changed = std::mem::take(&mut self.changed);
        if fleet.take_changed(&mut changed) == Some(self.seen) {
            for &n in &changed {
                for v in &mut self.views {
                    v.mark(n);
                }
            }
        } else {
            self.restart(fleet);
        }
        self.seen = fleet.change_count();
        changed.clear();
        self.changed = changed;
    }

    /// Turns a fresh journal on in `fleet` and drops the views.
    pub(super) fn restart(&mut self, fleet: &mut FleetState) {
        fleet.journal_changes();
        self.views.clear();
        self.seen = fleet.change_count();
    }
}

/// Node `n`'s first `depth` increments in view `key` over `residents` (its bindings in
/// victim order), counting the victims in reach (a LAS queue below the view's, a tier at
/// most the view's); none outside the view's cells.
fn increments(
    fleet: &FleetState,
    residents: &[Resident],
    n: NodeId,
    key: &ViewKey,
    allowed: &[bool],
    depth: usize,
    out: &mut Vec<Inc>,
) {
    out.clear();
    if !allowed
        .get(fleet.node(n).cell.index())
        .copied()
        .unwrap_or(false)
    {
        return;
    }
    let mut after = NodeAfterRelease::new(fleet, n);
    let mut tasks = after.whole_tasks(&key.shape, key.models) as usize;
    out.extend(std::iter::repeat_n(NOW, tasks.min(depth)));
    for (i, r) in residents.iter().enumerate() {
        if out.len() >= depth || r.key.0 > key.max_tier {
            break;
        }
        if r.key.1 .0 <= key.level {
            continue;
        }
        after.release(&r.alloc);
        // A job's bindings on the node are neighbours: count once all of them are out.
        if residents.get(i + 1).is_some_and(|next| next.key == r.key) {
            continue;
        }
        let now = after.whole_tasks(&key.shape, key.models) as usize;
        while tasks < now && out.len() < depth {
            out.push((true, r.key));
            tasks += 1;
        }
    }
}

/// The victims the LAS search for `job` (`models`, cells `cells_key`) needs to draw, in
/// victim order ([`super::las_victims::LasCursor`]'s, with its filters): those bound on
/// the nodes of the stopping cell with an increment up to the stopping victim, up to it
/// (module docs). `Some` of an empty list: no cell can take the job with every victim in
/// reach out, the search fails. `None`: the index does not answer for this search (draw
/// from the cursor): not the LAS rule alone, one task of one whole GPU and nothing else,
/// tasks of a shared GPU or none, a topology constraint, a placement that is not pure and
/// complete, a recording context, a job of the preemptor's LAS queue entered at this
/// instant that it outranks (a victim the order reaches differently), jobs of the
/// preemptor's queue and of another queue in one tier (the cursor takes the other queues'
/// first), the job fitting with no victim out, or a victim to draw that the filters drop.
pub(crate) fn victims_by_node(
    c: &mut Core,
    fleet: &mut FleetState,
    cfg: &PreemptionConfig,
    job: &PendingJob,
    models: ModelSet,
    cells_key: u32,
) -> Option<Vec<Candidate>> {
    let p = c.placement.as_ref();
    let one_gpu = job.tasks == 1 && job.shape == TaskShape::whole_gpus(1);
    if one_gpu
        || job.tasks == 0
        || job.shape.num_gpu == 0
        || job.shape.gpu_milli < crate::resources::WHOLE_GPU_MILLI
        || job.topology.is_some_and(|t| !t.is_empty())
        || !p.select_is_pure()
        || !p.select_is_complete()
        || c.ctx.records()
    {
        return None;
    }
    let las = c.las.clone()?;
    let mut ix = c.las_victims.take()?;
    let answer = search(&mut ix, c, fleet, cfg, &las, job, models, cells_key);
    c.las_victims = Some(ix);
    answer
}

/// [`victims_by_node`] with the index taken out of the core.
#[allow(clippy::too_many_arguments)]
fn search(
    ix: &mut LasVictims,
    c: &Core,
    fleet: &mut FleetState,
    cfg: &PreemptionConfig,
    las: &crate::queue_order::Las,
    job: &PendingJob,
    models: ModelSet,
    cells_key: u32,
) -> Option<Vec<Candidate>> {
    let now = c.now;
    let level = las.level(job.attained_gpu_ms);
    let max_tier = job.tier as u8;
    if !ix.phases_merge(job.queue, max_tier)
        || ix.entered_at(max_tier, level, now, |id| {
            las_outranks(las, job, running(c, id), now)
        })
    {
        return None;
    }
    if !ix.nodes.built {
        ix.build_nodes(c);
        ix.nodes.restart(fleet);
    } else {
        ix.nodes.absorb(fleet);
    }
    let key = ViewKey {
        level,
        max_tier,
        shape: job.shape,
        models,
        cells: cells_key,
    };
    let m = job.tasks as usize;
    let nodes = &mut ix.nodes;
    let n_nodes = fleet.nodes().len();
    let vi = match nodes
        .views
        .iter()
        .position(|v| v.key == key && v.incs.len() == n_nodes)
    {
        Some(i) => i,
        None => {
            nodes.views.retain(|v| v.key != key);
            nodes.views.push(View {
                key,
                allowed: (0..fleet.cells().len())
                    .map(|cell| job.allows_cell(CellId(cell as u16)))
                    .collect(),
                depth: m,
                incs: vec![Vec::new(); n_nodes],
                cells: vec![BTreeSet::new(); fleet.cells().len()],
                dirty: Vec::new(),
                is_dirty: Vec::new(),
            });
            let v = nodes.views.last_mut().expect("pushed");
            v.mark_all(n_nodes);
            nodes.views.len() - 1
        }
    };
    let LasNodes {
        residents, views, ..
    } = nodes;
    let v = &mut views[vi];
    if m > v.depth {
        v.depth = m;
        v.mark_all(n_nodes);
    }
    let mut dirty = std::mem::take(&mut v.dirty);
    let mut incs = Vec::new();
    for &n in &dirty {
        v.is_dirty[n.index()] = false;
        let res = residents.get(n.index()).map_or(&[][..], Vec::as_slice);
        increments(fleet, res, n, &v.key, &v.allowed, v.depth, &mut incs);
        let old = &mut v.incs[n.index()];
        if *old != incs {
            let cell = &mut v.cells[fleet.node(n).cell.index()];
            for (i, &k) in old.iter().enumerate() {
                cell.remove(&(k, n, i as u32));
            }
            for (i, &k) in incs.iter().enumerate() {
                cell.insert((k, n, i as u32));
            }
            std::mem::swap(old, &mut incs);
        }
    }
    dirty.clear();
    v.dirty = dirty;
    #[cfg(debug_assertions)]
    for (i, kept) in v.incs.iter().enumerate() {
        let res = residents.get(i).map_or(&[][..], Vec::as_slice);
        let n = NodeId(i as u32);
        increments(fleet, res, n, &v.key, &v.allowed, v.depth, &mut incs);
        debug_assert_eq!(kept, &incs, "a view's node has its increments");
    }
    // The cell whose `m`-th increment comes first, and that increment.
    let mut stop: Option<(Inc, usize)> = None;
    for (ci, cell) in v.cells.iter().enumerate() {
        let Some(&(k, ..)) = cell.iter().nth(m - 1) else {
            continue;
        };
        if stop.is_none_or(|(s, _)| k < s) {
            stop = Some((k, ci));
        }
    }
    let Some((stop, ci)) = stop else {
        return Some(Vec::new());
    };
    if !stop.0 {
        // The job fits with no victim out (not expected after a failed placement): the
        // search stops at its first victim, wherever it is.
        return None;
    }
    let stop = stop.1;
    // The nodes of the stopping cell with an increment up to the stopping victim.
    let mut at: Vec<NodeId> = v.cells[ci]
        .iter()
        .take_while(|(k, ..)| !k.0 || k.1 <= stop)
        .map(|&(_, n, _)| n)
        .collect();
    at.sort_unstable();
    at.dedup();
    // Every victim in reach bound on them, up to the stopping one, in victim order; the
    // cursor's per-preemptor filters must keep each (P2 never applies here: a victim in a
    // lower LAS queue is behind the preemptor in the LAS order).
    let keep = |r: &Resident| {
        !((c.preempted_now.0 == now && c.preempted_now.1.contains(&r.key.4))
            || c.victim_counts.get(&r.key.3 .0).copied().unwrap_or(0) >= cfg.victim_cap
            || (cfg.capacity == CapacityPreemption::LowerPriority && r.priority != job.priority))
    };
    let mut out: Vec<VKey> = Vec::new();
    for n in at {
        let res = residents.get(n.index()).map_or(&[][..], Vec::as_slice);
        for r in res
            .iter()
            .take_while(|r| r.key <= stop)
            .filter(|r| r.key.0 <= max_tier && r.key.1 .0 > level)
        {
            if !keep(r) {
                return None;
            }
            out.push(r.key);
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(
        out.into_iter()
            .map(|k| Candidate {
                id: k.4,
                rule: PreemptReason::Las,
                #[cfg(debug_assertions)]
                key: {
                    let r = running(c, k.4);
                    las_victim_key(
                        las,
                        r,
                        now,
                        crate::preemption::VictimKey {
                            tier: r.job.tier as u8,
                            borrowing: false,
                            share: crate::fairshare::Share::ZERO,
                            same_queue: r.job.queue == job.queue,
                            priority: r.job.priority,
                            lost_gpu_milli_ms: r.lost_gpu_milli_ms(now),
                            start_ms: r.start.0,
                            seq: r.job.seq,
                        },
                    )
                },
            })
            .collect(),
    )
}
