//! Backfill reservations of a pass (the policy: [`crate::backfill`]).

use super::*;
use crate::backfill::*;
use crate::ids::NodeId;

/// Gives `job`, which cannot start now, a reservation in the current pass if the policy's
/// depth allows one.
pub(crate) fn reserve(
    c: &mut Core,
    pass: &mut PassState,
    fleet: &mut FleetState,
    job: &PendingJob,
) {
    let Some(cfg) = c.backfill else { return };
    if pass.reservations.len() >= cfg.depth || pass.reservations.iter().any(|r| r.job == job.id) {
        return;
    }
    let now = c.now;
    // The running set as it was at the pass's first reservation attempt, by expected end
    // (`super::ends`); taken out of the core for the walk, which places in it.
    let mut ends = c.ends.take().expect("kept with backfill on");
    if !pass.ends_taken {
        pass.ends_taken = true;
        ends.open();
        #[cfg(debug_assertions)]
        {
            let mut copy: Vec<(SimTime, JobId)> = c
                .running_jobs()
                .map(|r| (super::ends::end_of(r), r.job.id))
                .collect();
            copy.sort_unstable();
            assert!(ends.live().eq(copy), "the ends index holds the running set");
        }
    }
    ends.check_snapshot();
    let est = job.runtime_estimate;
    let need = job.total_gpu_milli();
    let mut released: Vec<TaskAlloc> = Vec::new();
    let mut room = NodeRoom::new(c, job);
    let mut found: Option<Reservation> = None;
    let mut walk = ends.snapshot().peekable();
    while let Some(&(group, _)) = walk.peek() {
        if group == SimTime::MAX {
            break;
        }
        let t = group.max(now);
        // Release every job ending at t (one stopped since the snapshot holds nothing).
        while let Some((_, id)) = walk.next_if(|e| e.0 == group) {
            let reg = c.running.as_ref().expect("ends come from the running set");
            let Some(r) = reg.get(id.index()).and_then(|r| r.as_deref()) else {
                continue;
            };
            for a in &r.allocs {
                let before = room.gang_room_of(fleet, a.node);
                fleet.release(a).expect("releasing a running job's binding");
                room.freed(fleet, a.node, before);
                released.push(*a);
            }
        }
        if need > c.free_for(fleet, job, job.models) {
            continue;
        }
        let end = est.map_or(SimTime::MAX, |e| t + e);
        let overlapping: Vec<Reservation> = pass
            .reservations
            .iter()
            .filter(|r| r.start < end && r.end > t)
            .cloned()
            .collect();
        if !room.may_place(fleet, job, &released) {
            #[cfg(debug_assertions)]
            {
                let phantoms = apply_phantoms(fleet, &overlapping);
                let placed = c.place_in_cells(pass, fleet, job, job.models);
                release_phantoms(fleet, &phantoms);
                assert!(
                    placed.is_none(),
                    "a reservation attempt skipped for want of a fitting node would have placed"
                );
            }
            continue;
        }
        let phantoms = apply_phantoms(fleet, &overlapping);
        let placed = c.place_in_cells(pass, fleet, job, job.models);
        release_phantoms(fleet, &phantoms);
        if let Some((cell, allocs)) = placed {
            for a in allocs.iter().rev() {
                fleet.release(a).expect("releasing a trial placement");
            }
            found = Some(Reservation {
                job: job.id,
                start: t,
                end,
                cell,
                allocs,
            });
            break;
        }
    }
    drop(walk);
    for a in released.iter().rev() {
        fleet
            .apply(a)
            .expect("restoring a running job's own binding cannot fail");
    }
    c.ends = Some(ends);
    if let Some(r) = found {
        let at = pass.reservations.partition_point(|x| x.start <= r.start);
        pass.reservations.insert(at, r);
    }
}

/// Whether a placement of the job may succeed in the fleet as the walk has freed it so
/// far (overlapping reservations' phantoms aside: they only take room). Two necessary
/// conditions, each kept up to date from the nodes the walk releases, since the walk only
/// frees room:
/// - some node of a cell the job allows fits one of its GPU tasks ([`FleetState::fits`]):
///   each task goes to a node it fits. After one answer over the whole fleet
///   ([`super::core::one_task_fits`]), only the nodes released since can start to fit.
/// - for a gang, some allowed cell could hold all its tasks by free GPU-milli alone
///   ([`FleetState::gpu_task_room`], the check a pure placement makes first in every
///   cell): counted once per cell, then raised by what each released node adds.
///
/// With a pure placement ([`crate::placement::Placement::select_is_pure`]: a failed
/// attempt leaves nothing behind) an attempt that cannot succeed is skipped.
/// `saturated_quota_preempt`: a reservation walked 33 groups on average, each
/// with a placement attempt, all of which failed but the last.
struct NodeRoom {
    /// False when every attempt is made: a CPU-only job, an impure placement or a recorded
    /// context (every attempt is then seen).
    on: bool,
    /// Whether some node fits a task: `None` until first asked.
    fits: Option<bool>,
    /// How many of the walk's released bindings `fits` has seen.
    seen: usize,
    /// For a gang, per cell (`None` for a cell it does not allow): how many of its tasks
    /// the cell could hold by free GPU-milli, exact below the gang's size and at least it
    /// otherwise. Empty until first asked and for a single task.
    gang_room: Vec<Option<u64>>,
    /// GPU-milli of one task.
    need: u64,
    /// The gang's tasks.
    tasks: u64,
    models: ModelSet,
}

impl NodeRoom {
    fn new(c: &Core, job: &PendingJob) -> NodeRoom {
        NodeRoom {
            // Room is counted in whole tasks: not for tasks that take the node's shape.
            on: job.shape.num_gpu > 0
                && !job.split
                && c.placement.select_is_pure()
                && !c.ctx.records(),
            fits: None,
            seen: 0,
            gang_room: Vec::new(),
            need: job.shape.total_gpu_milli(),
            tasks: u64::from(job.tasks),
            models: job.models,
        }
    }

    /// What node `n` adds to its cell's gang room now ([`BucketIndex::room`]'s term:
    /// `⌊free GPU-milli / task GPU-milli⌋` for a schedulable node of an allowed model);
    /// 0 while the gang room is not kept.
    ///
    /// [`BucketIndex::room`]: crate::bucket_index::BucketIndex::room
    fn gang_room_of(&self, fleet: &FleetState, n: NodeId) -> u64 {
        if self.gang_room.is_empty() {
            return 0;
        }
        let node = fleet.node(n);
        if super::core::in_gpu_room(node, self.models) {
            u64::from(node.free_gpu_milli) / self.need
        } else {
            0
        }
    }

    /// Raises `n`'s cell's gang room by what releasing a binding on it added (`before`:
    /// [`NodeRoom::gang_room_of`] before the release).
    fn freed(&mut self, fleet: &FleetState, n: NodeId, before: u64) {
        if self.gang_room.is_empty() {
            return;
        }
        let after = self.gang_room_of(fleet, n);
        if let Some(r) = &mut self.gang_room[fleet.node(n).cell.index()] {
            *r = r.saturating_add(after - before);
        }
    }

    /// False only when no placement of `job` can succeed in `fleet` now; `released` are the
    /// bindings the walk has released so far, in order.
    fn may_place(&mut self, fleet: &FleetState, job: &PendingJob, released: &[TaskAlloc]) -> bool {
        if !self.on {
            return true;
        }
        let fits = match self.fits {
            Some(true) => true,
            Some(false) => super::core::fits_on_any(fleet, job, job.models, &released[self.seen..]),
            None => super::core::one_task_fits(fleet, job, job.models),
        };
        self.fits = Some(fits);
        self.seen = released.len();
        if !fits || self.tasks == 1 {
            return fits;
        }
        if self.gang_room.is_empty() {
            self.gang_room = (0..fleet.cells().len())
                .map(|c| {
                    let cell = CellId(c as u16);
                    job.allows_cell(cell)
                        .then(|| fleet.gpu_task_room(cell, &job.shape, job.models, self.tasks))
                })
                .collect();
        }
        self.gang_room.iter().flatten().any(|&r| r >= self.tasks)
    }
}
