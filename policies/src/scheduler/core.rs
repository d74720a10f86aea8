//! Everything but the pending queues: policies, quota, usage, running jobs, and the
//! per-job steps of a pass (admission, placement in cells, classification).

use super::*;

/// What a submit-time verdict depends on: shape, models, gang size, queue and whether the
/// tasks take the node's shape.
pub(crate) type ResolvableKey = (TaskShape, ModelSet, u32, QueueId, bool);

/// Everything but the pending queues, so that a pass can borrow one pending entry and the
/// rest of the scheduler at once.
///
/// A snapshot ([`crate::live::LiveState::save`]) leaves out the three policy objects: they
/// hold no state (every method takes `&self`) and are rebuilt from the spec on load.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Core {
    #[cfg_attr(feature = "serde", serde(skip, default = "unset::order"))]
    pub(crate) order: Box<dyn QueueOrder>,
    #[cfg_attr(feature = "serde", serde(skip, default = "unset::placement"))]
    pub(crate) placement: Box<dyn Placement>,
    /// The placement context (node rank, seeded generator, FGD's typical tasks).
    pub(crate) ctx: PlaceCtx,
    pub(crate) default_topology: Option<TopologySpec>,
    /// The configuration's own topology constraint (`None`: the placement's default).
    pub(crate) configured_topology: Option<TopologySpec>,
    #[cfg_attr(feature = "serde", serde(skip, default = "unset::cell_select"))]
    pub(crate) cell_select: Box<dyn CellSelect>,
    pub(crate) queues: Vec<QueueConfig>,
    pub(crate) default_queue: QueueConfig,
    pub(crate) queue_usage: Vec<u64>,
    pub(crate) cell_sets: BTreeMap<Vec<CellId>, u32>,
    /// The cell lists of [`Core::cell_sets`] by their interned id.
    pub(crate) cell_set_lists: Vec<Vec<CellId>>,
    /// Interned classes of the jobs of class-skipping queues ([`Core::class_skip`]): the id
    /// an [`Entry`] carries is the index here (ids grow in first-seen order, never reused).
    pub(crate) classes: Vec<ClassKey>,
    pub(crate) class_ids: BTreeMap<ClassKey, u32>,
    pub(crate) now: SimTime,
    pub(crate) quota: Option<QuotaTree>,
    pub(crate) fungibility: Fungibility,
    pub(crate) admission: AdmissionOrder,
    pub(crate) decayed: Option<DecayedUsage>,
    pub(crate) preemption: Option<PreemptionConfig>,
    pub(crate) backfill: Option<BackfillConfig>,
    pub(crate) budget: Option<u64>,
    /// Running jobs by [`JobId`], when kept.
    pub(crate) running: Option<Vec<Option<Box<Running>>>>,
    /// The ids whose slot in [`Core::running`] is filled, ascending (may hold ids whose slot
    /// was emptied since: readers skip those). Scans of the running set walk this instead of
    /// every slot, which would cost every job ever started.
    pub(crate) running_ids: BTreeSet<JobId>,
    /// [`Core::running_ids`] per queue, by [`QueueId`] index: the preemption search scans
    /// only the queues a victim can come from ([`super::preempt::candidates`]).
    pub(crate) running_by_queue: Vec<BTreeSet<JobId>>,
    /// GPU-milli of every job ever entered into the running set (wrapping): a pass reads
    /// how much started since an instant as a difference ([`super::running::RunSummary`]).
    pub(crate) started_gpu_milli: u64,
    pub(crate) nominated: Vec<Nomination>,
    /// Jobs preempted at `.0` (the current instant): never preempted twice at one instant, so
    /// a victim that restarts elsewhere at once is not thrashed.
    pub(crate) preempted_now: (SimTime, BTreeSet<JobId>),
    /// For each job in flight that was preempted (by input sequence), the sequence numbers of
    /// its preemptors: it never preempts them back (rule P2).
    pub(crate) preempted_by: BTreeMap<u64, Vec<u64>>,
    /// Rule P4: per job (input sequence), how often it was preempted since the last job
    /// completion anywhere (cleared at each completion).
    pub(crate) victim_counts: BTreeMap<u64, u32>,
    /// Per queue, pending jobs per stored reason (index [`PendingReason::index`]; a job not
    /// tried yet counts as [`PendingReason::NotTried`]).
    pub(crate) reason_counts: Vec<WaitProfile>,
    /// Wait profiles of jobs started since the caller last took them, by [`JobId`].
    pub(crate) waits: Vec<Option<Box<WaitProfile>>>,
    pub(crate) last_rekey: Option<SimTime>,
    pub(crate) fleet_gpu_milli: u64,
    pub(crate) fair_factors: Vec<u32>,
    pub(crate) reservations: Vec<Reservation>,
    /// [`Scheduler::check_resolvable`]'s verdicts for jobs that name no cells, by (shape,
    /// models, gang size, queue): it reads only those, the fleet's empty-node capacity
    /// classes and the queue and quota configuration, none of which change during a run.
    pub(crate) resolvable: BTreeMap<ResolvableKey, Result<(), RejectReason>>,
    /// The LAS queues when the `las` order or LAS preemption is on ([`super::las`]).
    pub(crate) las: Option<crate::queue_order::Las>,
    /// The last instant a running job was demoted to a lower LAS queue.
    pub(crate) las_demoted_at: Option<SimTime>,
    /// LAS wake-ups of running jobs, `(instant, job)`, when LAS is on outside the re-decide
    /// mode ([`super::las`]): each running job's next threshold crossing, plus re-checks at
    /// the current instant for jobs just started or moved; stale entries are skipped.
    pub(crate) las_wakes: Option<BTreeSet<(SimTime, JobId)>>,
    /// The running jobs in LAS victim order, with LAS preemption and wake-ups
    /// ([`super::las_victims`]).
    pub(crate) las_victims: Option<LasVictims>,
    /// The running jobs by expected end, with backfill on ([`super::ends`]).
    pub(crate) ends: Option<EndsIndex>,
    /// The running jobs not being evicted, counted by queue, priority and tier, with
    /// preemption on ([`super::run_counts`]).
    pub(crate) run_counts: Option<super::run_counts::RunCounts>,
    /// Preemption contexts of the passes since the last take, when recording is on
    /// ([`Scheduler::record_preemption_contexts`]).
    pub(crate) contexts: Option<Vec<crate::decision::PreemptionContext>>,
    /// Tests only: no class is parked ([`super::las`], "Parking"), so that every pass tries
    /// each class as the scheduler did without it.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) las_park_off: bool,
    /// Classes parked so far (the tests check that parking is exercised).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) las_parked: u64,
}

impl Core {
    /// Every queue's quota usage per slot, by [`QueueId`] index (`None`: no quota for that
    /// queue; empty without a quota tree).
    pub(crate) fn quota_usage_by_queue(&self) -> Vec<Option<Vec<u64>>> {
        let Some(t) = &self.quota else {
            return Vec::new();
        };
        let n = t.queues().map(|q| q.index() + 1).max().unwrap_or(0);
        (0..n)
            .map(|q| t.queue_usage(QueueId(q as u32)).map(<[u64]>::to_vec))
            .collect()
    }

    /// True when a pass may skip, in queue `q`, every pending job of a class whose verdict
    /// in this pass is known and equal to the job's stored reason (trying it would change
    /// nothing): `q` is best-effort FIFO, the order static, and there is no quota on `q`, no
    /// queue maximum, no admission order but the queue order, no backfill and no attempt
    /// budget — a job's verdict then depends on its class and the fleet alone
    /// ([`ClassKey`]). With preemption, a verdict is kept only once the class's preemption
    /// search failed in the pass (its memo then answers every job of the class the same way
    /// until a preemption succeeds, which drops the pass's verdicts with its memos).
    pub(crate) fn class_skip(&self, q: QueueId) -> bool {
        let qc = self.queue(q);
        qc.strategy == QueueingStrategy::BestEffortFifo
            && qc.max_gpu_milli.is_none()
            && self.order.rekey_interval().is_none()
            && self.admission == AdmissionOrder::QueueOrder
            && self.backfill.is_none()
            && self.budget.is_none()
            && self.quota.as_ref().is_none_or(|t| !t.has_queue(q))
    }

    /// The GPU-milli a job of class `cid` needs in all (tasks × per-task) and the free
    /// GPU-milli of its models in the cells it allows: [`Core::free_for`] for the class.
    /// `frees` remembers the free amounts by (cell set, models) on one unchanged fleet.
    pub(crate) fn class_need_and_free(
        &self,
        fleet: &FleetState,
        cid: u32,
        frees: &mut Vec<((u32, ModelSet), u64)>,
    ) -> (u64, u64) {
        let (shape, tasks, models, cells_key, ..) = self.classes[cid as usize];
        let need = shape.total_gpu_milli().saturating_mul(tasks as u64);
        if let Some(&(_, free)) = frees.iter().find(|(k, _)| *k == (cells_key, models)) {
            return (need, free);
        }
        let free = self.group_free(fleet, cells_key, models);
        frees.push(((cells_key, models), free));
        (need, free)
    }

    /// The free GPU-milli of models `models` in the cells of interned cell set `cells_key`
    /// (every cell for an empty set). `O(c)` for `c` cells.
    pub(crate) fn group_free(&self, fleet: &FleetState, cells_key: u32, models: ModelSet) -> u64 {
        let cells = self
            .cell_set_lists
            .get(cells_key as usize)
            .map_or(&[][..], Vec::as_slice);
        (0..fleet.cells().len())
            .map(|c| CellId(c as u16))
            .filter(|c| cells.is_empty() || cells.binary_search(c).is_ok())
            .map(|c| fleet.free_gpu_milli(c, models))
            .sum()
    }

    /// The interned id of class `k` (see [`Core::classes`]).
    pub(crate) fn intern_class(&mut self, k: ClassKey) -> u32 {
        let next = u32::try_from(self.classes.len()).expect("fewer than 2^32 job classes");
        *self.class_ids.entry(k).or_insert_with(|| {
            self.classes.push(k);
            next
        })
    }

    /// Enters `id`, of queue `q`, into the running id sets.
    pub(crate) fn track(&mut self, id: JobId, q: QueueId) {
        self.running_ids.insert(id);
        let i = q.index();
        if i >= self.running_by_queue.len() {
            self.running_by_queue.resize_with(i + 1, BTreeSet::new);
        }
        self.running_by_queue[i].insert(id);
    }

    /// After `id`'s running record (of queue `q`) was taken out of [`Core::running`]: takes
    /// it out of the running id sets and the indexes of running jobs (the LAS victim order,
    /// the ends index, the run counts).
    pub(crate) fn untrack(&mut self, id: JobId, q: QueueId) {
        self.running_ids.remove(&id);
        if let Some(s) = self.running_by_queue.get_mut(q.index()) {
            s.remove(&id);
        }
        if let Some(ix) = self.las_victims.as_mut() {
            ix.remove(id);
        }
        self.running_sync(id);
    }

    /// The running jobs of queue `q` (evicting ones included), in ascending [`JobId`] order.
    pub(crate) fn running_jobs_of(&self, q: QueueId) -> impl Iterator<Item = &Running> {
        let reg = self.running.as_deref().unwrap_or(&[]);
        self.running_by_queue
            .get(q.index())
            .into_iter()
            .flatten()
            .filter_map(move |id| reg.get(id.index()).and_then(|r| r.as_deref()))
    }

    /// The running jobs (evicting ones included) in ascending [`JobId`] order, the order of a
    /// walk over every slot of [`Core::running`], in time proportional to the running set.
    pub(crate) fn running_jobs(&self) -> impl Iterator<Item = &Running> {
        let reg = self.running.as_deref().unwrap_or(&[]);
        self.running_ids
            .iter()
            .filter_map(move |id| reg.get(id.index()).and_then(|r| r.as_deref()))
    }

    pub(crate) fn queue(&self, q: QueueId) -> QueueConfig {
        self.queues
            .get(q.index())
            .copied()
            .unwrap_or(self.default_queue)
    }

    pub(crate) fn usage(&self, q: QueueId) -> u64 {
        self.queue_usage.get(q.index()).copied().unwrap_or(0)
    }

    pub(crate) fn usage_mut(&mut self, q: QueueId) -> &mut u64 {
        if q.index() >= self.queue_usage.len() {
            self.queue_usage.resize(q.index() + 1, 0);
        }
        &mut self.queue_usage[q.index()]
    }

    /// The job's key in its queue now.
    pub(crate) fn key_of(&self, job: &PendingJob) -> OrderKey {
        let ctx = OrderCtx {
            now: self.now,
            fair_share_permille: &self.fair_factors,
            fleet_gpu_milli: self.fleet_gpu_milli,
        };
        self.order.key_at(job, &ctx)
    }

    /// Slurm fair-share factors per queue from decayed usage, for dynamic orders.
    pub(crate) fn refresh_fair_factors(&mut self, now: SimTime, queues: usize) {
        let Some(d) = &self.decayed else {
            return;
        };
        let n = queues.max(self.queues.len());
        let usage: Vec<u128> = (0..n).map(|q| d.value(q, now)).collect();
        let shares: Vec<u64> = (0..n)
            .map(|q| self.queue(QueueId(q as u32)).weight_milli)
            .collect();
        let total_u: u128 = usage.iter().sum();
        let total_s: u64 = shares.iter().sum();
        self.fair_factors = (0..n)
            .map(|q| fair_share_factor(usage[q], total_u, shares[q], total_s))
            .collect();
    }

    /// The heap entry of a queue head.
    pub(crate) fn head(&self, q: QueueId, key: OrderKey, id: JobId, job: &PendingJob) -> Head {
        let tier = self.queue(q).tier;
        let prefix = match self.admission {
            AdmissionOrder::QueueOrder => (0, Default::default()),
            AdmissionOrder::NominalFirst | AdmissionOrder::Drf | AdmissionOrder::Hdrf => {
                match self.first_flavor(job) {
                    None => (0, Default::default()),
                    Some(f) => {
                        let t = self.quota.as_ref().expect("a flavor implies quota");
                        let req = request(job);
                        if self.admission == AdmissionOrder::Drf {
                            (0, t.fair_order_key(q, f, &req))
                        } else if self.admission == AdmissionOrder::Hdrf {
                            (0, t.hdrf_order_key(q, f, &req))
                        } else {
                            match t.check(q, f, &req) {
                                QuotaFit::Fits { borrows: false } => (0, Default::default()),
                                _ => (1, Default::default()),
                            }
                        }
                    }
                }
            }
            AdmissionOrder::DecayedUsage => match &self.decayed {
                None => (0, Default::default()),
                Some(d) => {
                    let w = self.queue(q).weight_milli.max(1) as u128;
                    let usage = d.value(q.index(), self.now);
                    // Exact usage / weight (usage · 1000 / weight_milli).
                    let mut k: crate::quota::FairKey = Default::default();
                    k[0] = crate::fairshare::Share::new(usage, w);
                    (0, k)
                }
            },
        };
        Reverse((tier.order_rank(), prefix, key, id, q))
    }

    /// The first quota flavor of the job's queue that offers a model the job allows.
    pub(crate) fn first_flavor(&self, job: &PendingJob) -> Option<u16> {
        if job.tier == Tier::BestEffort {
            return None;
        }
        let t = self.quota.as_ref()?;
        t.queue_flavors(job.queue)?
            .iter()
            .copied()
            .find(|&f| job.models.intersect(t.flavor_models(f)).is_some())
    }

    /// Charges a started job: queue usage, quota in `flavor`, decayed usage, and the running
    /// set (when kept).
    pub(crate) fn admit(&mut self, job: &PendingJob, flavor: Option<u16>, allocs: &[TaskAlloc]) {
        let total = job.total_gpu_milli();
        *self.usage_mut(job.queue) += total;
        let now = self.now;
        if let Some(d) = &mut self.decayed {
            d.add_rate(job.queue.index(), total as i64, now);
        }
        let charged = flavor.filter(|_| job.tier != Tier::BestEffort);
        let req = if charged.is_some() {
            request(job)
        } else {
            [0; 3]
        };
        if let (Some(t), Some(f)) = (self.quota.as_mut(), charged) {
            t.add_usage(job.queue, f, &req);
        }
        let Some(reg) = self.running.as_mut() else {
            return;
        };
        let i = job.id.index();
        if i >= reg.len() {
            reg.resize_with(i + 1, || None);
        }
        let est_end = job.runtime_estimate.map_or(SimTime::MAX, |e| now + e);
        self.started_gpu_milli = self.started_gpu_milli.wrapping_add(total);
        reg[i] = Some(Box::new(Running {
            job: job.clone_without_cells(),
            flavor: charged,
            req,
            allocs: allocs.to_vec(),
            start: now,
            est_end,
            evicting: None,
        }));
        self.track(job.id, job.queue);
        self.las_recheck(job.id);
        self.las_reindex(job.id, now);
        self.running_sync(job.id);
    }

    /// Moves a started job into its running record (made by [`Core::admit`] with a copy that
    /// leaves out the cell list, so that starting a job allocates nothing it does not keep).
    pub(crate) fn register(&mut self, job: PendingJob) {
        let id = job.id;
        if let Some(reg) = self.running.as_mut() {
            if let Some(Some(r)) = reg.get_mut(id.index()) {
                r.job = job;
            }
        }
        self.running_sync(id);
    }

    /// Undoes [`Core::admit`]'s queue usage and decayed usage for `gpu_milli`.
    pub(crate) fn uncharge(&mut self, queue: QueueId, gpu_milli: u64, now: SimTime) {
        let u = self.usage_mut(queue);
        *u = u
            .checked_sub(gpu_milli)
            .expect("queue usage would go negative: a job ended that was never started");
        if let Some(d) = &mut self.decayed {
            d.add_rate(queue.index(), -(gpu_milli as i64), now);
        }
    }

    /// Releases the quota a nomination held.
    pub(crate) fn unreserve(&mut self, n: &Nomination) {
        if let (Some(t), Some((f, req))) = (self.quota.as_mut(), n.reserved) {
            t.remove_usage(n.queue, f, &req);
        }
    }

    /// Forgets `job`'s nomination, if any, releasing its quota.
    pub(crate) fn drop_nomination(&mut self, job: JobId) {
        if let Some(i) = self.nominated.iter().position(|n| n.preemptor == job) {
            let n = self.nominated.remove(i);
            self.unreserve(&n);
        }
    }

    /// True when `job` nominated victims that are still inside their grace period.
    pub(crate) fn awaits_victims(&self, job: JobId) -> bool {
        self.nominated
            .iter()
            .any(|n| n.preemptor == job && !n.victims.is_empty())
    }

    /// Places `job` in its first fitting allowed cell with models `models`, respecting the
    /// pass's backfill reservations. `Ok(None)`: no attempt left in the pass budget.
    pub(crate) fn try_place(
        &mut self,
        pass: &mut PassState,
        fleet: &mut FleetState,
        job: &PendingJob,
        cells_key: u32,
        models: ModelSet,
    ) -> Result<Option<(CellId, Vec<TaskAlloc>)>, PendingReason> {
        let prefix = self.reservation_prefix(pass, job);
        let exact = (
            job.shape,
            job.tasks,
            models,
            cells_key,
            job.topology,
            prefix as u32,
            job.split,
        );
        if let Some(&r) = pass.failed_exact.get(&exact) {
            return Err(r);
        }
        // A rigid single task that failed rules out larger rigid ones (a job that takes the
        // node's shape may fit where a rigid task of its size does not: never ruled out).
        let dominated = pass.failed_single.iter().find(|&&(s, m, c, p, _)| {
            !job.split
                && job.topology.is_none()
                && m == models
                && c == cells_key
                && p == prefix as u32
                && s.num_gpu <= job.shape.num_gpu
                && s.gpu_milli <= job.shape.gpu_milli
                && s.cpu_milli <= job.shape.cpu_milli
                && s.mem_mib <= job.shape.mem_mib
        });
        if let Some(&(_, _, _, _, r)) = dominated {
            let r = if r == PendingReason::Reservation
                || job.total_gpu_milli() <= self.free_for(fleet, job, models)
            {
                r
            } else {
                PendingReason::NoCapacity
            };
            return Err(r);
        }
        if pass.budget == 0 {
            return Ok(None);
        }
        pass.budget -= 1;
        let placed = if prefix == 0 {
            self.place_in_cells(pass, fleet, job, models)
        } else {
            let phantoms = crate::backfill::apply_phantoms(fleet, &pass.reservations[..prefix]);
            let placed = self.place_in_cells(pass, fleet, job, models);
            crate::backfill::release_phantoms(fleet, &phantoms);
            placed
        };
        if let Some(p) = placed {
            return Ok(Some(p));
        }
        let mut reason = self.classify(fleet, job, models);
        if prefix > 0 && reason != PendingReason::NoCapacity {
            // Would it fit without the reservations?
            if let Some((_, allocs)) = self.place_in_cells(pass, fleet, job, models) {
                for a in allocs.iter().rev() {
                    fleet.release(a).expect("releasing a placement made here");
                }
                reason = PendingReason::Reservation;
            }
        }
        if job.tasks == 1 && job.topology.is_none() && !job.split {
            pass.failed_single
                .push((job.shape, models, cells_key, prefix as u32, reason));
        }
        pass.failed_exact.insert(exact, reason);
        Err(reason)
    }

    /// Cell selection then gang placement with models `models`.
    pub(crate) fn place_in_cells(
        &mut self,
        pass: &mut PassState,
        fleet: &mut FleetState,
        job: &PendingJob,
        models: ModelSet,
    ) -> Option<(CellId, Vec<TaskAlloc>)> {
        self.cell_select
            .candidates_with_quota(fleet, self.quota.as_ref(), job, &mut pass.cells);
        // A flavor narrows the models; the copy leaves out the cell list (not read by
        // placement), so it allocates nothing.
        let narrowed;
        let job = if models == job.models {
            job
        } else {
            narrowed = PendingJob {
                models,
                ..job.clone_without_cells()
            };
            &narrowed
        };
        for &cell in &pass.cells {
            if let Some(tasks) =
                place_gang(self.placement.as_ref(), &mut self.ctx, fleet, cell, job)
            {
                return Some((cell, tasks));
            }
        }
        None
    }

    /// Free GPU-milli of models `models` in the cells `job` allows.
    pub(crate) fn free_for(&self, fleet: &FleetState, job: &PendingJob, models: ModelSet) -> u64 {
        (0..fleet.cells().len())
            .map(|c| CellId(c as u16))
            .filter(|&c| job.allows_cell(c))
            .map(|c| fleet.free_gpu_milli(c, models))
            .sum()
    }

    /// Why a job that fit quota did not fit the fleet: not enough free accelerators
    /// ([`PendingReason::NoCapacity`]); enough, but not on nodes of a shape that can hold one
    /// of its tasks ([`PendingReason::NodeShape`]); enough, and single tasks would fit, but
    /// not the whole gang ([`PendingReason::Gang`]); enough, but no node has room for a task
    /// ([`PendingReason::Fragmentation`]).
    pub(crate) fn classify(
        &self,
        fleet: &FleetState,
        job: &PendingJob,
        models: ModelSet,
    ) -> PendingReason {
        if job.shape.num_gpu == 0 || job.total_gpu_milli() > self.free_for(fleet, job, models) {
            return PendingReason::NoCapacity;
        }
        if job.total_gpu_milli() > free_on_fitting_shapes(fleet, job, models) {
            return PendingReason::NodeShape;
        }
        // Does one task fit some node now? (The capacity index, not the placement policy,
        // so that a policy's own state — a seeded generator — is not touched.)
        if (job.tasks > 1 || job.split) && one_task_fits(fleet, job, models) {
            return PendingReason::Gang;
        }
        PendingReason::Fragmentation
    }
}

/// Free GPU-milli of models `models` in the cells `job` allows, counting a cell's model only
/// when some node shape of it (its capacity classes: model, accelerators, CPU, memory) could
/// hold one of the job's tasks when empty. `O(cells × capacity classes)`.
pub(crate) fn free_on_fitting_shapes(
    fleet: &FleetState,
    job: &PendingJob,
    models: ModelSet,
) -> u64 {
    (0..fleet.cells().len())
        .map(|c| CellId(c as u16))
        .filter(|&c| job.allows_cell(c))
        .map(|c| {
            let shape = task_shape_in(fleet, c, job);
            fleet
                .cell_models(c)
                .filter(|&m| models.allows(m))
                .filter(|&m| fleet.task_fits_some_node(c, &shape, ModelSet::only(m)))
                .map(|m| fleet.free_gpu_milli(c, ModelSet::only(m)))
                .sum::<u64>()
        })
        .sum()
}

/// The task shape `job` places in `cell`: its member's when its tasks take the node's shape
/// there ([`crate::placement::split`]), else its own.
pub(crate) fn task_shape_in(fleet: &FleetState, cell: CellId, job: &PendingJob) -> TaskShape {
    crate::placement::split::members_in(fleet, cell, job).map_or(job.shape, |(_, m)| m)
}

/// True when some node of a cell `job` allows fits one of its GPU tasks with models
/// `models` now ([`FleetState::fits`]), found through the capacity index. `O(cells ×
/// models)` index lookups plus the nodes with enough free GPU-milli that fail on CPU,
/// memory or how a share spreads.
pub(crate) fn one_task_fits(fleet: &FleetState, job: &PendingJob, models: ModelSet) -> bool {
    (0..fleet.cells().len())
        .map(|c| CellId(c as u16))
        .filter(|&c| job.allows_cell(c))
        .any(|c| {
            let shape = task_shape_in(fleet, c, job);
            let need = shape.total_gpu_milli() as u32;
            fleet.cell_models(c).filter(|&m| models.allows(m)).any(|m| {
                fleet
                    .find_gpu_candidate(c, m, need, |n| fleet.fits(n, &shape, models))
                    .is_some()
            })
        })
}

/// True when some node holding one of `allocs` is in a cell `job` allows and fits one of
/// its GPU tasks with models `models` now ([`FleetState::fits`]): after a whole-fleet
/// [`one_task_fits`], the only nodes that can start to fit when those bindings were freed.
pub(crate) fn fits_on_any<'a>(
    fleet: &FleetState,
    job: &PendingJob,
    models: ModelSet,
    allocs: impl IntoIterator<Item = &'a TaskAlloc>,
) -> bool {
    allocs.into_iter().any(|a| {
        let cell = fleet.node(a.node).cell;
        job.allows_cell(cell) && fleet.fits(a.node, &task_shape_in(fleet, cell, job), models)
    })
}

/// True when `node` counts toward a cell's room for GPU tasks of models `models`
/// ([`FleetState::gpu_task_room`]: a schedulable node of an allowed model).
pub(crate) fn in_gpu_room(node: &crate::state::NodeState, models: ModelSet) -> bool {
    node.schedulable && node.model.is_some_and(|m| models.allows(m))
}

impl Core {
    /// How many of the pass's reservations (ascending by start) begin before `job`, started
    /// now, would end by its estimate: those it must not use.
    pub(crate) fn reservation_prefix(&self, pass: &PassState, job: &PendingJob) -> usize {
        if pass.reservations.is_empty() {
            return 0;
        }
        let end = job.runtime_estimate.map_or(SimTime::MAX, |e| self.now + e);
        pass.reservations.partition_point(|r| r.start < end)
    }
}

/// Stand-ins for the policy objects while a snapshot loads; [`Scheduler::adopt_policies`]
/// replaces them with the ones built from the spec.
#[cfg(feature = "serde")]
mod unset {
    use super::*;

    pub(super) fn order() -> Box<dyn QueueOrder> {
        Box::new(crate::queue_order::Fifo)
    }

    pub(super) fn placement() -> Box<dyn Placement> {
        Box::new(crate::placement::FirstFit)
    }

    pub(super) fn cell_select() -> Box<dyn CellSelect> {
        Box::new(crate::cell_select::FirstCell)
    }
}
