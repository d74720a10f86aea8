//! One scheduling pass: merging the queues' heads, trying each job, settling outcomes.

use super::*;

/// A heap entry: (tier rank, admission prefix, key, job, queue), smallest first.
/// A queue head in a pass: (tier rank, admission prefix, key, job, queue), smallest first.
pub(crate) type Head = Reverse<(u8, AdmissionPrefix, OrderKey, JobId, QueueId)>;

/// The admission stage's prefix of a head: an integer (nominal-first, decayed usage) and the
/// exact fair-sharing key (DRF), compared in that order.
pub(crate) type AdmissionPrefix = (u64, crate::quota::FairKey);

/// A preemption search that failed in the current pass: queue, priority, tier, shape,
/// tasks, models, cell set and whether the tasks take the node's shape.
pub(crate) type PreemptMemo = (QueueId, i32, Tier, TaskShape, u32, ModelSet, u32, bool);

/// Reusable per-pass buffers.
#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct PassState {
    pub(crate) heads: BinaryHeap<Head>,
    pub(crate) failed_exact: BTreeMap<ExactKey, PendingReason>,
    pub(crate) failed_single: Vec<(TaskShape, ModelSet, u32, u32, PendingReason)>,
    pub(crate) failed_preempt: BTreeSet<PreemptMemo>,
    pub(crate) cells: Vec<CellId>,
    /// Placement attempts left.
    pub(crate) budget: u64,
    /// Victims requeued in this pass (not retried before the next pass).
    pub(crate) requeue: Vec<PendingJob>,
    pub(crate) requeued: BTreeSet<JobId>,
    /// Backfill reservations made in this pass, ascending by start.
    pub(crate) reservations: Vec<Reservation>,
    /// True once a reservation attempt of the pass took the running set's snapshot
    /// ([`super::ends`]).
    pub(crate) ends_taken: bool,
    /// Phantoms holding the free part of nominated preemptors' room until the pass ends.
    pub(crate) held: Vec<TaskAlloc>,
    /// What running jobs offer as victims (built on the first preemption attempt).
    pub(crate) run_summary: Option<RunSummary>,
    /// Classes of indexed queues ([`Core::class_skip`]) found blocked in this pass: the
    /// reason, and the fleet's change count when the verdict holds only while the fleet is
    /// unchanged (`None`: a failure of the exact requirements, which holds all pass).
    /// Keyed by (queue, interned class [`Core::classes`]).
    pub(crate) verdicts: Verdicts,
    /// The slab index of each queue's head in [`PassState::heads`], by [`QueueId`] index
    /// (a full pass holds at most one head per queue).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) head_slots: Vec<u32>,
    /// Scratch for [`super::preempt`]'s room bound: GPU-milli freed per node by
    /// [`NodeId`](crate::ids::NodeId) index, all zero between uses.
    pub(crate) freed_by_node: Vec<u64>,
    /// The first position of a class parked at the start of the pass that would have built
    /// [`PassState::run_summary`] when tried ([`Scheduler::park_hopeless`]); the summary is
    /// built when the pass goes past it, as that try would have.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) park_first: Option<super::pending::Position>,
}

/// A class's verdict in a pass: the reason, and the fleet's change count while which it
/// holds (`None`: all pass).
pub(crate) type Verdict = (PendingReason, Option<u64>);

/// The pass's class verdicts by (queue, interned class), stored densely by class (the pass
/// asks for them once per bucket at every step): per class, the verdicts of the
/// queues that have one (only `QueueId(u32::MAX)`, shared by all queues, without
/// preemption), stamped with the generation of the pass that made them, so that
/// [`Verdicts::clear`] is `O(1)`.
///
/// A full pass without preemption opens with a cut ([`Verdicts::open_cut`]): every class
/// whose whole request exceeds the free GPU-milli of its (cell set, models) group has the
/// verdict `(NoCapacity, None)` in the shared queue without one being stored, so that the
/// opening costs the groups, not one write per class present. The cut is rebuilt at every
/// opening and is not serialized (a snapshot is taken between passes).
#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Verdicts {
    generation: u32,
    by_class: Vec<(u32, Vec<(QueueId, Verdict)>)>,
    /// The generation whose verdicts include the cut (`None`: no cut).
    #[cfg_attr(feature = "serde", serde(skip))]
    cut: Option<u32>,
    /// Per interned class: its whole request (tasks × per-task GPU-milli) and its group's
    /// index in `groups` (`u32::MAX`: a class without GPUs, never in the cut).
    #[cfg_attr(feature = "serde", serde(skip))]
    need: Vec<(u64, u32)>,
    /// The (interned cell set, models) groups of the classes in `need`, with their free
    /// GPU-milli at the cut's opening.
    #[cfg_attr(feature = "serde", serde(skip))]
    groups: Vec<((u32, ModelSet), u64)>,
}

/// The verdict of a class in the cut ([`Verdicts::open_cut`]).
const CUT: Verdict = (PendingReason::NoCapacity, None);

impl Verdicts {
    /// Forgets every verdict (and the cut).
    pub(crate) fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        self.cut = None;
        if self.generation == 0 {
            self.by_class.clear();
        }
    }

    /// Opens the cut of this generation on `fleet` (see [`Verdicts`]): learns the classes
    /// interned since the last opening, then the free GPU-milli of every group. `O(g c)` for
    /// `g` groups over `c` cells, plus the new classes.
    pub(crate) fn open_cut(&mut self, core: &Core, fleet: &FleetState) {
        for &(shape, tasks, models, cells_key, ..) in &core.classes[self.need.len()..] {
            if shape.num_gpu == 0 {
                self.need.push((0, u32::MAX));
                continue;
            }
            let g = match self
                .groups
                .iter()
                .position(|(k, _)| *k == (cells_key, models))
            {
                Some(g) => g,
                None => {
                    self.groups.push(((cells_key, models), 0));
                    self.groups.len() - 1
                }
            };
            let need = shape.total_gpu_milli().saturating_mul(tasks as u64);
            self.need.push((need, g as u32));
        }
        for ((cells_key, models), free) in &mut self.groups {
            *free = core.group_free(fleet, *cells_key, *models);
        }
        self.cut = Some(self.generation);
    }

    /// True when class `cid` is in this generation's cut.
    fn in_cut(&self, cid: u32) -> bool {
        self.cut == Some(self.generation)
            && self
                .need
                .get(cid as usize)
                .is_some_and(|&(need, g)| g != u32::MAX && need > self.groups[g as usize].1)
    }

    /// The verdict of class `cid` in queue `q`.
    pub(crate) fn get(&self, q: QueueId, cid: u32) -> Option<&Verdict> {
        if let Some((g, list)) = self.by_class.get(cid as usize) {
            if *g == self.generation {
                if let Some((_, v)) = list.iter().find(|(vq, _)| *vq == q) {
                    return Some(v);
                }
            }
        }
        (q == QueueId(u32::MAX) && self.in_cut(cid)).then_some(&CUT)
    }

    /// The verdict of class `cid` in queue `q`, set to `v` when there is none (to the cut's
    /// when the class is in it).
    pub(crate) fn get_or_insert(&mut self, q: QueueId, cid: u32, v: Verdict) -> &mut Verdict {
        let i = cid as usize;
        let v = if q == QueueId(u32::MAX) && self.in_cut(cid) {
            CUT
        } else {
            v
        };
        if i >= self.by_class.len() {
            self.by_class.resize_with(i + 1, Default::default);
        }
        let (g, list) = &mut self.by_class[i];
        if *g != self.generation {
            *g = self.generation;
            list.clear();
        }
        let at = match list.iter().position(|(vq, _)| *vq == q) {
            Some(at) => at,
            None => {
                list.push((q, v));
                list.len() - 1
            }
        };
        &mut list[at].1
    }
}

/// What a settled pass left: a pass that started nothing, over queues that all
/// skip classes ([`Core::class_skip`]), without preemption, LAS or nominated preemptors and
/// with a pure placement ([`Placement::select_is_pure`]), leaves every pending job holding
/// the reason that trying it on the fleet as it is would give. Until the fleet changes (its
/// change count) or anything but an arrival happens, the next pass need try only the jobs
/// that arrived since, when they all come after every older job in the pass's order: the
/// older ones, tried first, would each be blocked again for its stored reason on the same
/// fleet (or skipped as their class's verdict, `policies/tests/class_skip.rs`), which
/// changes nothing.
#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Settled {
    /// The fleet's change count ([`FleetState::change_count`]) the pass left.
    pub(crate) changes: u64,
    /// Jobs enqueued since, in enqueue order: (queue, order key, job).
    pub(crate) arrived: Vec<(QueueId, OrderKey, JobId)>,
}

impl Settled {
    /// More arrivals than this between two passes: the next pass is a full one.
    pub(crate) const MAX_ARRIVED: usize = 256;
}

/// Outcome of trying one job.
pub(crate) enum Outcome {
    Started,
    Blocked(PendingReason),
    /// Requeued in this pass: not tried, does not block its queue.
    Skipped,
}

impl Outcome {
    /// The outcome to settle for a job whose stored reason is `stored`: blocked again for
    /// that reason changes nothing in its entry, so it is settled as skipped.
    fn against(self, stored: Option<PendingReason>) -> Outcome {
        match self {
            Outcome::Blocked(r) if stored == Some(r) => Outcome::Skipped,
            out => out,
        }
    }
}

impl Scheduler {
    /// One scheduling pass at the current time (the last [`Scheduler::schedule_at`] time, or
    /// the latest submit).
    pub fn schedule(&mut self, fleet: &mut FleetState) -> Vec<Decision> {
        let now = self.core.now;
        self.schedule_at(fleet, now)
    }

    /// One scheduling pass at `now` over every pending job in the cross-queue order (see the
    /// module docs). Started jobs are reserved in `fleet`, removed from the pending set and
    /// returned as [`Decision::Start`]; evictions are returned as [`Decision::Preempt`]
    /// (a zero-grace victim is released in `fleet` and requeued at once), in the order they
    /// were decided.
    pub fn schedule_at(&mut self, fleet: &mut FleetState, now: SimTime) -> Vec<Decision> {
        let mut decisions = Vec::new();
        self.schedule_into(fleet, now, &mut decisions);
        decisions
    }

    /// As [`Scheduler::schedule_at`], appending the decisions to `decisions` (a buffer the
    /// caller reuses from pass to pass, so a pass allocates no list of its own).
    pub fn schedule_into(
        &mut self,
        fleet: &mut FleetState,
        now: SimTime,
        decisions: &mut Vec<Decision>,
    ) {
        if self.redecide.is_some() {
            return self.redecide_into(fleet, now, decisions);
        }
        self.core.now = now;
        if let Some(ix) = self.core.las_victims.as_mut() {
            // The fleet's journal of changed nodes, read at every pass so it stays short.
            ix.nodes.absorb(fleet);
        }
        self.core.record_demotions(now);
        self.core.fleet_gpu_milli = fleet.cells().iter().map(|c| c.available_gpu_milli).sum();
        self.maybe_rekey(now);
        let changes = fleet.change_count();
        let settles = self.settles();
        if let Some(mut s) = self.settled.take() {
            if settles && s.changes == changes && self.arrivals_last(&s.arrived) {
                self.arrivals_pass(fleet, &mut s.arrived, decisions);
                if fleet.change_count() == changes {
                    self.settled = Some(s);
                }
                return;
            }
        }
        self.full_pass(fleet, decisions);
        if settles && fleet.change_count() == changes {
            self.settled = Some(Settled {
                changes,
                arrived: Vec::new(),
            });
        }
    }

    /// True when a pass that starts nothing leaves the scheduler settled ([`Settled`]).
    fn settles(&self) -> bool {
        self.core.preemption.is_none()
            && self.core.las.is_none()
            && self.core.nominated.is_empty()
            && self.core.placement.select_is_pure()
            && (0..self.pending.len()).all(|q| self.core.class_skip(QueueId(q as u32)))
    }

    /// True when every job in `arrived` still pending comes, in the pass's order, after
    /// every other pending job (so that the others would be tried first, on the fleet as it
    /// is). `O(a (q + log n))` for `a` arrivals over `q` queues.
    fn arrivals_last(&self, arrived: &[(QueueId, OrderKey, JobId)]) -> bool {
        let is_new = |id: JobId| arrived.iter().any(|a| a.2 == id);
        let mut last_old = None;
        for (q, jobs) in self.pending.iter().enumerate() {
            let Some((&(key, id), &i)) = jobs.jobs.order.iter().rev().find(|(k, _)| !is_new(k.1))
            else {
                continue;
            };
            let e = &jobs.jobs.entries[i as usize];
            let h = self.core.head(QueueId(q as u32), key, id, &e.job);
            // Heads are `Reverse`d: the latest in the pass's order is the smallest.
            if last_old.as_ref().is_none_or(|l| h < *l) {
                last_old = Some(h);
            }
        }
        let Some(last_old) = last_old else {
            return true;
        };
        arrived.iter().all(|&(q, key, id)| {
            self.pending[q.index()]
                .jobs
                .get(&(key, id))
                .is_none_or(|e| self.core.head(q, key, id, &e.job) < last_old)
        })
    }

    /// The pass of a settled scheduler ([`Settled`]): tries only the jobs that arrived since
    /// the last pass, in the pass's order, as the full pass would after skipping the rest.
    fn arrivals_pass(
        &mut self,
        fleet: &mut FleetState,
        arrived: &mut Vec<(QueueId, OrderKey, JobId)>,
        decisions: &mut Vec<Decision>,
    ) {
        let mut pass = self.pass.take().unwrap_or_default();
        // The failure memos are kept: made on this fleet, they are the ones a full pass
        // would make again trying the older jobs first, and a memo hit decides the reason of
        // an arrival tried after another arrival started.
        pass.verdicts.clear();
        pass.budget = u64::MAX;
        let mut heads: Vec<Head> = arrived
            .drain(..)
            .filter_map(|(q, key, id)| {
                let e = self.pending[q.index()].jobs.get(&(key, id))?;
                Some(self.core.head(q, key, id, &e.job))
            })
            .collect();
        // Heads are `Reverse`d: descending heads are the pass's order.
        heads.sort_unstable_by(|a, b| b.cmp(a));
        for Reverse((_, _, key, id, queue)) in heads {
            let q = queue.index();
            let entry = self.pending[q]
                .jobs
                .get_mut(&(key, id))
                .expect("an arrival is pending");
            let old_reason = entry.reason;
            let out = try_job(
                &mut self.core,
                &mut pass,
                fleet,
                entry,
                key,
                decisions,
                true,
            );
            self.settle(q, key, id, out.against(old_reason), &mut pass);
        }
        self.pass = Some(pass);
    }

    /// A pass over every pending job (module docs).
    fn full_pass(&mut self, fleet: &mut FleetState, decisions: &mut Vec<Decision>) {
        let now = self.core.now;
        let mut pass = self.pass.take().unwrap_or_default();
        pass.heads.clear();
        pass.failed_exact.clear();
        pass.failed_single.clear();
        pass.failed_preempt.clear();
        pass.requeued.clear();
        pass.reservations.clear();
        pass.ends_taken = false;
        if let Some(ix) = self.core.ends.as_mut() {
            ix.close();
        }
        pass.run_summary = None;
        pass.verdicts.clear();
        pass.budget = self.core.budget.unwrap_or(u64::MAX);
        self.certain_no_capacity(fleet, &mut pass);
        self.park_hopeless(fleet, &mut pass);
        // A preemptor whose planned placement lost a node plans again now, at the failure,
        // instead of waiting for its victims with a stale plan: its
        // nomination and reserved quota are dropped (its victims still terminate).
        if self
            .core
            .nominated
            .iter()
            .any(|n| n.allocs.iter().any(|a| !fleet.node(a.node).schedulable))
        {
            let (stale, kept): (Vec<Nomination>, Vec<Nomination>) =
                std::mem::take(&mut self.core.nominated)
                    .into_iter()
                    .partition(|n| n.allocs.iter().any(|a| !fleet.node(a.node).schedulable));
            self.core.nominated = kept;
            for n in &stale {
                self.core.unreserve(n);
            }
        }
        // Preemptors whose victims are gone go first: the room was made for them.
        if !self.core.nominated.is_empty() {
            let ready: Vec<Nomination> = self
                .core
                .nominated
                .iter()
                .filter(|n| n.victims.is_empty())
                .cloned()
                .collect();
            self.core.nominated.retain(|n| !n.victims.is_empty());
            for n in ready {
                self.core.unreserve(&n);
                let q = n.queue.index();
                // A waiting preemptor holds no claim against jobs of higher priority ahead of
                // it in its own queue (arrived meanwhile): they are tried first, without
                // preempting, and the room made counts towards them (field case B33). Only a
                // strictly higher priority: the preemptor's own victims, requeued ahead of it
                // (FIFO order), would otherwise take the room back and be preempted again
                // (found by the randomized checker).
                let Some(prio) = self.pending[q]
                    .jobs
                    .get_mut(&(n.key, n.preemptor))
                    .map(|e| e.job.priority)
                else {
                    continue;
                };
                let mut ahead = Vec::new();
                let mut cur = self.pending[q].jobs.first_key_value().map(|(k, _)| *k);
                while let Some(k) = cur {
                    if k >= (n.key, n.preemptor) || ahead.len() >= 64 {
                        break;
                    }
                    ahead.push(k);
                    cur = self.pending[q].jobs.next_after(k).map(|(k, _)| *k);
                }
                for (key, id) in ahead {
                    if pass.requeued.contains(&id) || self.core.awaits_victims(id) {
                        continue;
                    }
                    let Some(entry) = self.pending[q].jobs.get_mut(&(key, id)) else {
                        continue;
                    };
                    if entry.job.priority <= prio {
                        continue;
                    }
                    let out = try_job(
                        &mut self.core,
                        &mut pass,
                        fleet,
                        entry,
                        key,
                        decisions,
                        false,
                    );
                    if matches!(out, Outcome::Started) {
                        self.settle(q, key, id, out, &mut pass);
                    }
                }
                let Some(entry) = self
                    .pending
                    .get_mut(q)
                    .and_then(|p| p.jobs.get_mut(&(n.key, n.preemptor)))
                else {
                    continue;
                };
                let out = try_job(
                    &mut self.core,
                    &mut pass,
                    fleet,
                    entry,
                    n.key,
                    decisions,
                    false,
                );
                self.settle(q, n.key, n.preemptor, out, &mut pass);
            }
        }
        // Where each queue's head in the heap lies in its slab (one head per queue).
        pass.head_slots.clear();
        pass.head_slots.resize(self.pending.len(), u32::MAX);
        for (q, jobs) in self.pending.iter().enumerate() {
            if let Some((&(key, id), &i)) = jobs.jobs.order.first_key_value() {
                let e = &jobs.jobs.entries[i as usize];
                let h = self.core.head(QueueId(q as u32), key, id, &e.job);
                pass.heads.push(h);
                pass.head_slots[q] = i;
            }
        }
        // The room nominated preemptors still wait for is theirs: its free part is held by
        // phantoms for the rest of the pass (Kubernetes' nominated node).
        pass.held = if self.core.nominated.is_empty() {
            Vec::new()
        } else {
            crate::backfill::apply_phantom_allocs(
                fleet,
                self.core.nominated.iter().flat_map(|n| n.allocs.iter()),
            )
        };
        while let Some(Reverse((_, _, key, id, queue))) = pass.heads.pop() {
            if pass.budget == 0 {
                break;
            }
            let q = queue.index();
            let indexed = self.pending[q].jobs.classes.is_some();
            let entry = self.pending[q]
                .jobs
                .get_mut_at(&(key, id), pass.head_slots[q])
                .expect("a head is pending");
            let class = indexed.then_some(entry.class);
            let old_reason = entry.reason;
            if pass.park_first.is_some_and(|p| p < (key, id)) {
                pass.park_first = None;
                self.core.summary_for_parked(&mut pass);
            }
            let out = if pass.requeued.contains(&id) {
                Outcome::Skipped
            } else {
                try_job(
                    &mut self.core,
                    &mut pass,
                    fleet,
                    entry,
                    key,
                    decisions,
                    true,
                )
            };
            let blocked_strict = matches!(out, Outcome::Blocked(_))
                && self.core.queue(queue).strategy == QueueingStrategy::StrictFifo;
            // With preemption, a verdict stands for the class only when no job of it can
            // preempt in the rest of the pass: best-effort tier, or its search failed (memo).
            // Verdicts are per queue with preemption (the search's memo names the queue),
            // shared by all queues without.
            let vq = if self.core.preemption.is_some() {
                queue
            } else {
                QueueId(u32::MAX)
            };
            let mut refile = None;
            if let (Some(cid), Outcome::Blocked(r)) = (class, &out) {
                let c = self.core.classes[cid as usize];
                let settled = self.core.preemption.is_none()
                    || (*r != PendingReason::Preempting
                        && (c.6 == Tier::BestEffort
                            || pass
                                .failed_preempt
                                .contains(&(queue, c.5, c.6, c.0, c.1, c.2, c.3, c.7))));
                if settled {
                    let exact = (c.0, c.1, c.2, c.3, c.4, 0, c.7);
                    let holds = if pass.failed_exact.get(&exact) == Some(r) {
                        None
                    } else {
                        Some(fleet.change_count())
                    };
                    // A verdict that holds all pass (certain from the start, or a failure
                    // of the exact requirements) is not narrowed by a later equal one.
                    let v = pass.verdicts.get_or_insert(vq, cid, (*r, holds));
                    if *v != (*r, None) {
                        *v = (*r, holds);
                    }
                    // Without preemption, a verdict that holds all pass answers every later
                    // job of the class the same way (a cache hit, no side effect): file
                    // them now, at the time their tries would file them, instead of trying
                    // each. (A stored reason only lets a job be skipped while the verdict
                    // holds; a job the pass reaches otherwise is tried as before.)
                    if *v == (*r, None) && self.core.preemption.is_none() {
                        refile = Some((cid, *r));
                    }
                }
            }
            let out = out.against(old_reason);
            self.settle(q, key, id, out, &mut pass);
            if let Some((cid, r)) = refile {
                self.pending[q].jobs.refile_class(
                    cid,
                    Some((key, id)),
                    r,
                    now,
                    &mut self.core.reason_counts[q],
                );
            }
            if blocked_strict {
                // The head is blocked: nothing more from this queue in this pass.
                continue;
            }
            // Skip the jobs of classes blocked in this pass whose stored reason already is
            // the verdict: trying them would hit the same cache and change nothing. A verdict
            // that holds only while the fleet is unchanged is used only when no other queue
            // has a head, so that nothing can start between here and the jobs skipped. With
            // preemption every verdict is: another queue's job may preempt in between, which
            // drops the memos the verdict rests on.
            let alone = pass.heads.is_empty();
            let any_ok = alone || self.core.preemption.is_none();
            let changes = fleet.change_count();
            let verdicts = &pass.verdicts;
            let next = self.pending[q].jobs.next_unskipped((key, id), |c, slot| {
                any_ok
                    && verdicts.get(vq, c).is_some_and(|&(r, holds)| {
                        r.index() as u8 == slot && holds.is_none_or(|n| alone && n == changes)
                    })
            });
            if let Some((k, i)) = next {
                let e = &self.pending[q].jobs.entries[i as usize];
                let h = self.core.head(queue, k.0, k.1, &e.job);
                pass.heads.push(h);
                pass.head_slots[q] = i;
            }
        }
        let held = std::mem::take(&mut pass.held);
        crate::backfill::release_phantoms(fleet, &held);
        self.core.reservations = std::mem::take(&mut pass.reservations);
        self.pass = Some(pass);
    }

    /// Verdicts known before the pass tries anything: without preemption and with a pure
    /// placement, a class whose whole request (tasks × per-task GPU-milli, on GPUs) exceeds
    /// the free GPU-milli of its models in its cells is blocked for
    /// [`PendingReason::NoCapacity`] all pass, wherever its jobs stand in the queue. Within a
    /// pass nothing is released (no preemption, no backfill phantoms in a class-skipping
    /// queue), so placement fails at every point and classification says `NoCapacity`; a
    /// pure placement's failed try leaves no trace but the pass's caches, which give the same
    /// reasons. So the jobs of such a class already filed under `NoCapacity` are skipped
    /// without a try: a pass over a saturated fleet costs the classes that might fit, not
    /// one try per class present.
    fn certain_no_capacity(&mut self, fleet: &FleetState, pass: &mut PassState) {
        if self.core.preemption.is_some() || !self.core.placement.select_is_pure() {
            return;
        }
        let now = self.core.now;
        // The verdicts of the classes in the cut are implicit; only the jobs of those classes
        // filed under another reason are looked at.
        pass.verdicts.open_cut(&self.core, fleet);
        let all = QueueId(u32::MAX);
        let nc = PendingReason::NoCapacity.index() as u8;
        let mut certain = Vec::new();
        for (q, jobs) in self.pending.iter_mut().enumerate() {
            let Some(ix) = &jobs.jobs.classes else {
                continue;
            };
            certain.clear();
            for &(cid, slot) in ix.keys() {
                if slot != nc
                    && certain.last() != Some(&cid)
                    && pass.verdicts.get(all, cid) == Some(&(PendingReason::NoCapacity, None))
                {
                    certain.push(cid);
                }
            }
            // Their jobs filed otherwise (not tried yet, or blocked for another reason in
            // the last pass) would each be tried to be filed under NoCapacity: filed now.
            for &cid in &certain {
                jobs.jobs.refile_class(
                    cid,
                    None,
                    PendingReason::NoCapacity,
                    now,
                    &mut self.core.reason_counts[q],
                );
            }
        }
    }

    /// Applies a try's outcome to the entry `(key, id)` of queue `q`, then requeues the
    /// pass's victims.
    pub(crate) fn settle(
        &mut self,
        q: usize,
        key: OrderKey,
        id: JobId,
        out: Outcome,
        pass: &mut PassState,
    ) {
        let now = self.core.now;
        match out {
            Outcome::Started => {
                let mut e = self.pending[q].jobs.remove(&(key, id)).expect("present");
                self.pending_len -= 1;
                let counts = &mut self.core.reason_counts[q];
                let old = e.reason.unwrap_or(PendingReason::NotTried);
                counts[old.index()] -= 1;
                charge(&mut e, old, now);
                if let Some(waited) = e.waited.take() {
                    let w = &mut self.core.waits;
                    if id.index() >= w.len() {
                        w.resize(id.index() + 1, None);
                    }
                    match &mut w[id.index()] {
                        Some(prev) => {
                            for (a, b) in prev.iter_mut().zip(waited.iter()) {
                                *a += b;
                            }
                        }
                        slot => *slot = Some(waited),
                    }
                }
                self.core.drop_nomination(id);
                self.core.register(e.job);
            }
            Outcome::Blocked(r) => {
                let jobs = &mut self.pending[q].jobs;
                let old = jobs.get_mut(&(key, id)).expect("present").reason;
                jobs.reindex((key, id), old, r);
                let e = jobs.get_mut(&(key, id)).expect("present");
                set_reason(&mut self.core.reason_counts[q], e, r, now);
            }
            Outcome::Skipped => {}
        }
        for job in std::mem::take(&mut pass.requeue) {
            pass.requeued.insert(job.id);
            self.enqueue(job, now);
        }
    }

    /// Recomputes every pending key when the order is dynamic and its interval has passed.
    pub(crate) fn maybe_rekey(&mut self, now: SimTime) {
        let Some(iv) = self.core.order.rekey_interval() else {
            return;
        };
        if self.core.last_rekey.is_some_and(|t| now < t + iv) {
            return;
        }
        self.core.last_rekey = Some(now);
        self.core.refresh_fair_factors(now, self.pending.len());
        let c = &mut self.core;
        for jobs in &mut self.pending {
            for ((_, id), e) in jobs.jobs.drain_in_order() {
                let k = c.key_of(&e.job);
                for n in &mut c.nominated {
                    if n.preemptor == id {
                        n.key = k;
                    }
                }
                jobs.jobs.insert((k, id), e);
            }
        }
    }
}

/// Tries one pending job: queue maximum, quota and flavors, placement, then (if
/// `may_preempt`) preemption, then a backfill reservation.
pub(crate) fn try_job(
    c: &mut Core,
    pass: &mut PassState,
    fleet: &mut FleetState,
    entry: &mut Entry,
    key: OrderKey,
    out: &mut Vec<Decision>,
    may_preempt: bool,
) -> Outcome {
    let job = &entry.job;
    if c.awaits_victims(job.id) {
        // Its room is being made; its quota is reserved (see `Nomination`).
        return Outcome::Blocked(PendingReason::Preempting);
    }
    let qc = c.queue(job.queue);
    if let Some(max) = qc.max_gpu_milli {
        if c.usage(job.queue) + job.total_gpu_milli() > max {
            return Outcome::Blocked(PendingReason::QueueMax);
        }
    }
    // Admission: the flavors whose quota has room, in the order fungibility asks for.
    let mut candidates: Vec<(Option<u16>, ModelSet)> = Vec::new();
    let mut reason: Option<PendingReason> = None;
    let quota_applies =
        job.tier != Tier::BestEffort && c.quota.as_ref().is_some_and(|t| t.has_queue(job.queue));
    if quota_applies {
        let t = c.quota.as_ref().expect("checked");
        let req = request(job);
        // The queue's own setting (a Kueue ClusterQueue's `whenCanBorrow`) wins.
        let fungibility = c.queue(job.queue).fungibility.unwrap_or(c.fungibility);
        let mut later = Vec::new();
        for &f in t.queue_flavors(job.queue).expect("checked") {
            let Some(models) = job.models.intersect(t.flavor_models(f)) else {
                continue;
            };
            match t.check(job.queue, f, &req) {
                QuotaFit::Fits { borrows } => {
                    if borrows && fungibility == Fungibility::TryNextFlavor {
                        later.push((Some(f), models));
                    } else {
                        candidates.push((Some(f), models));
                    }
                }
                QuotaFit::Blocked { reason: r, .. } => {
                    reason.get_or_insert(r);
                }
            }
        }
        candidates.extend(later);
    }
    // Without quota the one candidate is the job's own models: no list to allocate.
    let unquoted = [(None, job.models)];
    let candidates: &[(Option<u16>, ModelSet)] = if quota_applies {
        &candidates
    } else {
        &unquoted
    };
    let mut physical: Option<PendingReason> = None;
    for &(flavor, models) in candidates {
        match c.try_place(pass, fleet, job, entry.cells_key, models) {
            Ok(Some((cell, tasks))) => {
                c.admit(job, flavor, &tasks);
                out.push(Decision::Start {
                    job: job.id,
                    cell,
                    tasks,
                });
                return Outcome::Started;
            }
            Ok(None) => return Outcome::Blocked(entry.reason.unwrap_or(PendingReason::NotTried)),
            Err(r) => {
                physical.get_or_insert(r);
            }
        }
    }
    let reason = physical.or(reason).unwrap_or(PendingReason::NoCapacity);
    if may_preempt && c.preemption.is_some() && job.tier != Tier::BestEffort {
        if let Some(started) = preempt_for(c, pass, fleet, entry, key, out) {
            if started {
                return Outcome::Started;
            }
            return Outcome::Blocked(PendingReason::Preempting);
        }
    }
    if c.backfill.is_some()
        && matches!(
            reason,
            PendingReason::NoCapacity
                | PendingReason::Fragmentation
                | PendingReason::Gang
                | PendingReason::Reservation
        )
    {
        reserve(c, pass, fleet, &entry.job);
    }
    Outcome::Blocked(reason)
}

/// Requeues a job stopped in this pass (after the current entry is settled; it is not tried
/// again in this pass).
pub(crate) fn requeue_in_pass(pass: &mut PassState, job: PendingJob) {
    pass.requeue.push(job);
}
