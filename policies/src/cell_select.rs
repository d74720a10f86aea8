//! Cell selection for multi-cell fleets (Kueue MultiKueue dispatch, Borg cell choice): the
//! order in which a job's allowed cells are tried. The scheduler places the job in the first
//! cell of that order where the whole gang fits.

use crate::ids::CellId;
use crate::job::PendingJob;
use crate::state::FleetState;

/// A cell-selection policy.
pub trait CellSelect: Send + Sync {
    /// The name scenarios use.
    fn name(&self) -> &'static str;
    /// Writes the cells to try for `job`, in order, into `out` (cleared first). Only cells the
    /// job allows.
    fn candidates(&self, fleet: &FleetState, job: &PendingJob, out: &mut Vec<CellId>);
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
