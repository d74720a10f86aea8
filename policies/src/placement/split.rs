//! Jobs that take the node's shape ([`PendingJob::split`]): in a cell whose nodes have fewer
//! accelerators than a task, each task is placed as node-sized members of one gang.
//!
//! Traces and generators record a job's size, not its pods: an 8-GPU job is one 8-GPU task
//! on an HGX node (8 accelerators), but on GB200 NVL72 compute trays (4 accelerators each)
//! it is 2 pods of 4 GPUs inside one NVLink domain. So the split depends on the cell the job
//! is placed in, and is decided there, by the placement stage, for every cell tried:
//!
//! * **members**: a task of `n` accelerators on a cell whose largest node of an allowed model
//!   has `g < n` ([`FleetState::max_node_gpus`]) becomes `k` members of `n / k`
//!   accelerators, `k` the smallest divisor of `n` with `n / k ≤ g`
//!   ([`TaskShape::split_for_node`]); CPU and memory are divided, rounded up. A cell whose
//!   nodes hold a whole task places the job as it is.
//! * **topology**: the `k` members of one task stay inside one group of the tightest level
//!   whose largest group can hold them ([`Level::Domain`] — one NVL72 rack — when one
//!   holds them, else a block, else the cell): a slice of `k` members, required. The whole
//!   gang is kept inside one group of that level when one has room now (preferred), so a
//!   16-GPU job (2 tasks of 8) does not spread over two racks when one rack can hold it;
//!   a level the job's own topology constraint names is kept instead, with its mode. A
//!   job's own slices are scaled to members (`slice_size × k`).
//!
//! Quota, usage and every total are the job's own (the members add up to its request, up
//! to the CPU and memory rounding). The running job's bindings are its members.

use crate::ids::CellId;
use crate::job::PendingJob;
use crate::resources::TaskShape;
use crate::state::FleetState;
use crate::topology::{Level, TopologyMode, TopologySpec};

use super::PlaceCtx;

/// `(k, member)`: how `job`'s tasks are placed in `cell` — `k` members of shape `member`
/// each — or `None` when they are placed whole (a rigid job, a CPU-only or fractional task,
/// or nodes that hold a whole task). `O(capacity classes of the cell)`.
pub fn members_in(fleet: &FleetState, cell: CellId, job: &PendingJob) -> Option<(u32, TaskShape)> {
    if !job.split || job.shape.num_gpu == 0 || job.shape.is_fractional() {
        return None;
    }
    let g = fleet.max_node_gpus(cell, job.models);
    match job.shape.split_for_node(g) {
        (1, _) => None,
        split => Some(split),
    }
}

/// The tightest level of `cell` one of whose groups (empty, every node up) holds `k` tasks of
/// `member` of models `models`: the domain, the block or (else) the cell. Cached in `ctx`
/// (node shapes and the topology do not change during a run). `O(nodes)` on a miss.
fn slice_level(
    ctx: &mut PlaceCtx,
    fleet: &FleetState,
    cell: CellId,
    member: &TaskShape,
    job: &PendingJob,
    k: u32,
) -> Level {
    let key = (cell, *member, job.models, k);
    if let Some(&l) = ctx.split_levels.get(&key) {
        return l;
    }
    let level = [Level::Domain, Level::Block]
        .into_iter()
        .find(|&l| fleet.group_capacity(cell, member, job.models, l).0 >= u64::from(k))
        .unwrap_or(Level::Cell);
    ctx.split_levels.insert(key, level);
    level
}

/// The gang `job` is placed as in `cell` ([`members_in`]) — its members, rigid, with the
/// topology constraint of the module docs — or `None` when it is placed as it is.
pub fn member_job(
    ctx: &mut PlaceCtx,
    fleet: &FleetState,
    cell: CellId,
    job: &PendingJob,
) -> Option<PendingJob> {
    let (k, member) = members_in(fleet, cell, job)?;
    let slice = slice_level(ctx, fleet, cell, &member, job, k);
    let own = job.topology.unwrap_or_default();
    let (level, mode) = match own.level {
        Some(l) => (Some(l), own.mode),
        None => (Some(slice), TopologyMode::Preferred),
    };
    let (slice_size, slice_level) = match own.slice_size.filter(|&s| s > 0) {
        Some(s) => (s.saturating_mul(k), own.slice_level.max(slice)),
        None => (k, slice),
    };
    Some(PendingJob {
        shape: member,
        tasks: job.tasks.saturating_mul(k),
        split: false,
        topology: Some(TopologySpec {
            level,
            mode,
            slice_size: Some(slice_size),
            slice_level,
            ray: own.ray,
        }),
        ..job.clone_without_cells()
    })
}

/// [`crate::topology::feasible`] for a job as it is placed: a job whose tasks take the
/// node's shape is feasible when, in some cell it allows, the gang it is placed as there
/// ([`member_job`]) is. `O(nodes)` per allowed cell.
pub fn feasible(fleet: &FleetState, job: &PendingJob, default: Option<TopologySpec>) -> bool {
    if !job.split {
        return crate::topology::feasible(fleet, job, default);
    }
    (0..fleet.cells().len())
        .map(|c| CellId(c as u16))
        .filter(|&c| job.allows_cell(c))
        .any(|c| {
            let mut m =
                member_job(&mut PlaceCtx::new(), fleet, c, job).unwrap_or_else(|| job.clone());
            m.cells = vec![c];
            crate::topology::feasible(fleet, &m, default)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ModelId;
    use crate::placement::{place_gang, BestFit};
    use crate::resources::ModelSet;
    use crate::state::NodeSpec;

    /// A cell `hgx` of 2 nodes × 8 H100 (each its own domain) and a cell `gb` of 2 NVL72
    /// racks × 3 trays × 4 GB200 (domain = rack).
    fn fleet() -> FleetState {
        let mut nodes = Vec::new();
        for i in 0..2 {
            nodes.push(NodeSpec {
                name: format!("h{i}"),
                cell: CellId(0),
                model: Some(ModelId(0)),
                gpus: 8,
                domain: i,
                block: 0,
                cpu_milli: 0,
                mem_mib: 0,
            });
        }
        for r in 0..2u32 {
            for t in 0..3u32 {
                nodes.push(NodeSpec {
                    name: format!("g{r}-{t}"),
                    cell: CellId(1),
                    model: Some(ModelId(1)),
                    gpus: 4,
                    domain: 2 + r,
                    block: 1,
                    cpu_milli: 0,
                    mem_mib: 0,
                });
            }
        }
        FleetState::new(
            vec!["hgx".into(), "gb".into()],
            vec!["H100".into(), "GB200".into()],
            nodes,
        )
        .unwrap()
    }

    fn job(tasks: u32, gpus: u32) -> PendingJob {
        PendingJob {
            tasks,
            shape: TaskShape::whole_gpus(gpus),
            split: true,
            ..PendingJob::default()
        }
    }

    /// An 8-GPU job is 1 × 8 on HGX and 2 × 4 in one rack on GB200; rigid, it is not split.
    #[test]
    fn an_eight_gpu_job_takes_each_cells_node_shape() {
        let f = fleet();
        let j = job(1, 8);
        assert_eq!(members_in(&f, CellId(0), &j), None);
        assert_eq!(
            members_in(&f, CellId(1), &j),
            Some((2, TaskShape::whole_gpus(4)))
        );
        let mut ctx = PlaceCtx::new();
        let m = member_job(&mut ctx, &f, CellId(1), &j).unwrap();
        assert_eq!((m.tasks, m.shape.num_gpu, m.split), (2, 4, false));
        let t = m.topology.unwrap();
        assert_eq!(
            (t.level, t.mode, t.slice_size, t.slice_level),
            (
                Some(Level::Domain),
                TopologyMode::Preferred,
                Some(2),
                Level::Domain
            )
        );
        let rigid = PendingJob {
            split: false,
            ..j.clone()
        };
        assert_eq!(members_in(&f, CellId(1), &rigid), None);
        let mut ff = f.clone();
        let a = place_gang(&BestFit, &mut ctx, &mut ff, CellId(1), &j).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(ff.node(a[0].node).domain, ff.node(a[1].node).domain);
        let mut ff = f.clone();
        let a = place_gang(&BestFit, &mut ctx, &mut ff, CellId(0), &j).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].gpu_mask.count_ones(), 8);
        let _ = ModelSet::ANY;
    }
}
