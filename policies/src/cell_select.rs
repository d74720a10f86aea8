//! Cell selection for multi-cell fleets (Kueue MultiKueue dispatch, Borg cell choice): the
//! order in which a job's allowed cells are tried. The scheduler places the job in the first
//! cell of that order where the whole gang fits: the global level of a two-level scheduler
//! (the global queue's order and fair share pick the job, this picks its cell, then the
//! cell's placement policy picks nodes).

use crate::ids::CellId;
use crate::job::PendingJob;
use crate::quota::QuotaTree;
use crate::state::FleetState;

/// A cell-selection policy.
pub trait CellSelect: Send + Sync {
    /// The name scenarios use.
    fn name(&self) -> &'static str;
    /// Writes the cells to try for `job`, in order, into `out` (cleared first): every cell the
    /// job allows, and only those. (A preemption search relies on it: a cell where the job
    /// still fits is still tried.)
    fn candidates(&self, fleet: &FleetState, job: &PendingJob, out: &mut Vec<CellId>);
    /// As [`CellSelect::candidates`], with the quota tree when one is configured (for
    /// quota-aware selection). The default ignores the quota.
    fn candidates_with_quota(
        &self,
        fleet: &FleetState,
        quota: Option<&QuotaTree>,
        job: &PendingJob,
        out: &mut Vec<CellId>,
    ) {
        let _ = quota;
        self.candidates(fleet, job, out);
    }
}

fn allowed(fleet: &FleetState, job: &PendingJob, out: &mut Vec<CellId>) {
    out.clear();
    out.extend(
        (0..fleet.cells().len())
            .map(|c| CellId(c as u16))
            .filter(|&c| job.allows_cell(c)),
    );
}

/// First cell that fits, in cell declaration order (MultiKueue's first-admitting dispatch with
/// a fixed cluster order).
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstCell;

impl CellSelect for FirstCell {
    fn name(&self) -> &'static str {
        "first-fit"
    }
    fn candidates(&self, fleet: &FleetState, job: &PendingJob, out: &mut Vec<CellId>) {
        allowed(fleet, job, out);
    }
}

/// Least-loaded cell first: ascending allocated/available GPU-milli in parts per million
/// (integer arithmetic; a cell with nothing available sorts last), ties to the lower cell id.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeastLoaded;

impl LeastLoaded {
    /// The load of a cell in parts per million of its available GPU-milli.
    pub fn load_ppm(fleet: &FleetState, cell: CellId) -> u64 {
        let c = &fleet.cells()[cell.index()];
        if c.available_gpu_milli == 0 {
            u64::MAX
        } else {
            (c.allocated_gpu_milli as u128 * 1_000_000 / c.available_gpu_milli as u128) as u64
        }
    }
}

impl CellSelect for LeastLoaded {
    fn name(&self) -> &'static str {
        "least-loaded"
    }
    fn candidates(&self, fleet: &FleetState, job: &PendingJob, out: &mut Vec<CellId>) {
        allowed(fleet, job, out);
        out.sort_by_key(|&c| (Self::load_ppm(fleet, c), c));
    }
}

/// Best fit of the whole gang: among the cells whose free GPU-milli (of the job's allowed
/// models, on schedulable nodes) can hold the whole gang, the one with the least free first,
/// so large cells stay open for large gangs (best fit at cell granularity, as Borg's
/// "best fit" scoring applied to cells); cells that cannot hold it after, by id. Ties go to
/// the lower cell id.
#[derive(Clone, Copy, Debug, Default)]
pub struct BestFitCell;

impl CellSelect for BestFitCell {
    fn name(&self) -> &'static str {
        "best-fit-gang"
    }
    fn candidates(&self, fleet: &FleetState, job: &PendingJob, out: &mut Vec<CellId>) {
        allowed(fleet, job, out);
        let need = job.total_gpu_milli();
        out.sort_by_key(|&c| {
            let free = fleet.free_gpu_milli(c, job.models);
            if free >= need {
                (0, free, c)
            } else {
                (1, 0, c)
            }
        });
    }
}

/// Quota-aware: cells where the job fits within its queue's nominal (guaranteed) quota in a
/// flavor covering the cell's models first, then cells where it would borrow, then cells no
/// flavor of its queue covers; least loaded first within each class, ties to the lower id
/// (MultiKueue dispatch to the worker cluster whose ClusterQueue has the quota). Without a
/// quota tree, or for a queue outside it, it is [`LeastLoaded`].
///
/// In a scheduling pass the flavor is assigned before the cell (Kueue order), which already
/// narrows the job to the models of a flavor with room (`flavor_fungibility =
/// "try-next-flavor"` prefers one within nominal quota); the classes then separate cells only
/// where a flavor spans several models. Outside passes ([`crate::Scheduler::place_now`]:
/// replayed and pre-existing starts) the flavor follows the cell, and the order decides it.
#[derive(Clone, Copy, Debug, Default)]
pub struct QuotaAware;

impl CellSelect for QuotaAware {
    fn name(&self) -> &'static str {
        "quota-aware"
    }
    fn candidates(&self, fleet: &FleetState, job: &PendingJob, out: &mut Vec<CellId>) {
        LeastLoaded.candidates(fleet, job, out);
    }
    fn candidates_with_quota(
        &self,
        fleet: &FleetState,
        quota: Option<&QuotaTree>,
        job: &PendingJob,
        out: &mut Vec<CellId>,
    ) {
        let Some(flavors) = quota.and_then(|t| t.queue_flavors(job.queue).map(|f| (t, f))) else {
            return self.candidates(fleet, job, out);
        };
        let (tree, flavors) = flavors;
        allowed(fleet, job, out);
        let req = crate::quota::request(job);
        out.sort_by_key(|&c| {
            let mut class = 2u8;
            for &f in flavors {
                let models = tree.flavor_models(f);
                if !fleet
                    .cell_models(c)
                    .any(|m| models.allows(m) && job.models.allows(m))
                {
                    continue;
                }
                class = class.min(if tree.within_nominal_after(job.queue, f, &req) {
                    0
                } else {
                    1
                });
            }
            (class, LeastLoaded::load_ppm(fleet, c), c)
        });
    }
}
