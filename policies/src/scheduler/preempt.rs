//! The preemption search of a pass: candidates by rule, a minimal victim set, the plan
//! and its application (the rules and the victim order: [`crate::preemption`]).

use super::quota_victims::QuotaCursor;
use super::run_counts::VictimView;
use super::victim_groups::{GroupWalk, VictimGroups, NO_GROUP};
use super::victim_key::{share_ranks, SortKey};
use super::*;
use crate::decision::PreemptReason;
use crate::fairshare::Share;
use crate::ids::NodeId;
use crate::preemption::*;

/// A victim taken out of quota and the fleet during planning.
pub(crate) struct Removed {
    pub(crate) id: JobId,
    pub(crate) rule: PreemptReason,
}

/// Looks for victims for `entry`'s job and applies them. `None`: no preemption. `Some(true)`:
/// victims were released and the job started (zero grace). `Some(false)`: victims were told
/// to terminate and the job waits for them.
pub(crate) fn preempt_for(
    c: &mut Core,
    pass: &mut PassState,
    fleet: &mut FleetState,
    entry: &mut Entry,
    key: OrderKey,
    out: &mut Vec<Decision>,
) -> Option<bool> {
    let job = &entry.job;
    let memo = (
        job.queue,
        job.priority,
        job.tier,
        job.shape,
        job.tasks,
        job.models,
        entry.cells_key,
        job.split,
    );
    if pass.failed_preempt.contains(&memo) || pass.budget == 0 {
        return None;
    }
    pass.budget -= 1;
    let dry = entry.search_failed;
    let room_check = !dry || entry.room_check_failed;
    let mut room_check_failed = false;
    let flavors: Vec<(Option<u16>, ModelSet)> = match c.quota.as_ref() {
        Some(t) if t.has_queue(job.queue) => t
            .queue_flavors(job.queue)
            .expect("checked")
            .iter()
            .filter_map(|&f| {
                job.models
                    .intersect(t.flavor_models(f))
                    .map(|m| (Some(f), m))
            })
            .collect(),
        _ => vec![(None, job.models)],
    };
    // The preemptor's queue's own rules replace the scheduler's (Kueue: the preemptor's
    // ClusterQueue's `spec.preemption`).
    let cfg = c
        .preemption
        .as_ref()
        .expect("called with preemption on")
        .for_queue(c.queue(job.queue).preemption.as_ref());
    // The instant the preemption is decided: nothing taken out yet.
    let context = c.contexts.is_some().then(|| context(c, fleet, job.id));
    let rounds: Vec<Option<crate::preemption::FairStrategy>> = if cfg.fair_sharing.is_empty() {
        vec![None]
    } else {
        cfg.fair_sharing.iter().map(|&s| Some(s)).collect()
    };
    for (flavor, models) in flavors {
        if !could_preempt(c, pass, &cfg, job, flavor) {
            continue;
        }
        // Under LAS alone, too few accelerators held by jobs it outranks: every plan below
        // would fail its capacity check (`SimTrial::fits`), so the running set is not scanned.
        let bound = pass
            .run_summary
            .as_ref()
            .and_then(|s| las_only_bound(c, s, &cfg, job));
        if bound.is_some_and(|b| c.free_for(fleet, job, models) + b < job.total_gpu_milli()) {
            continue;
        }
        // Under the LAS rule alone, the victims come from the index in victim order, and the
        // search stops at the first set that makes room (`scheduler::las_victims`); for one
        // task, only the victims on the nodes where it stops are drawn
        // (`scheduler::las_nodes`).
        let indexed = las_only_victims(c, &cfg, job);
        let given = if indexed {
            super::las_nodes::victims_by_node(c, fleet, &cfg, job, models, entry.cells_key)
        } else {
            None
        };
        if given.as_ref().is_some_and(Vec::is_empty) {
            // No node fits even with every victim in reach out: the search fails.
            continue;
        }
        // Under quota alone, the victims come from the running jobs kept in lost-work order
        // (`scheduler::quota_victims`), drawn as far as the search goes.
        let cursor = (!indexed && super::quota_victims::applies(c, &cfg, job, flavor)).then(|| {
            let queues =
                scanned_queues(c, &cfg, job, flavor).expect("applies: the queue rules only");
            QuotaCursor::new(c, &cfg, job, flavor, &queues)
        });
        #[cfg(debug_assertions)]
        if let Some(cur) = &cursor {
            debug_assert_eq!(
                cur.clone().drain(c, &cfg, job),
                candidates(c, &cfg, job, flavor).sorted(),
                "the lost-work order gives the listed candidates in victim order"
            );
        }
        let mut cands = if indexed || cursor.is_some() {
            Listed::default()
        } else {
            candidates(c, &cfg, job, flavor)
        };
        let no_room = |c: &Core, pass: &mut PassState, ids: &mut dyn Iterator<Item = JobId>| {
            no_room_even_with_all(c, pass, fleet, job, models, ids)
        };
        let skip = match &cursor {
            // The room check walks the nodes of every job of the streams. After a failure
            // it did not find (`Entry::room_check_failed`), the dry run certifies one from
            // the victims it would take instead, fewer than all (`saturated_quota_preempt`:
            // the check never certifies, and cost a quarter of the run).
            Some(cur) => cur.is_empty() || (room_check && no_room(c, pass, &mut cur.member_ids(c))),
            None => {
                !indexed
                    && (cands.cands.is_empty()
                        || no_room(c, pass, &mut cands.cands.iter().map(|v| v.id)))
            }
        };
        if skip {
            room_check_failed |= cursor.as_ref().is_some_and(|cur| !cur.is_empty());
            continue;
        }
        // The keys, for the heap of each round (the last takes them).
        let mut order = std::mem::take(&mut cands.order);
        for (round, &strategy) in rounds.iter().enumerate() {
            let last = round + 1 == rounds.len();
            let source = match (indexed, c.las.as_ref(), &cursor) {
                (true, _, _) if given.is_some() => Source::Given(given.clone().expect("checked")),
                (true, Some(las), _) => Source::Las(LasCursor::new(las, job), &cfg),
                (_, _, Some(cur)) => Source::Quota(cur.clone(), &cfg),
                _ => Source::Listed(
                    &cands,
                    BinaryHeap::from(if last {
                        std::mem::take(&mut order)
                    } else {
                        order.clone()
                    }),
                ),
            };
            if let Some((cell, allocs, victims)) =
                plan(c, pass, fleet, job, flavor, models, source, strategy, dry)
            {
                if let (Some(list), Some(mut ctx)) = (c.contexts.as_mut(), context) {
                    ctx.victims = victims.iter().map(|v| v.id).collect();
                    list.push(ctx);
                }
                let plan = Plan {
                    flavor,
                    cell,
                    allocs,
                    victims,
                };
                let started = apply(c, pass, fleet, job, key, plan, out, &cfg);
                entry.search_failed = false;
                entry.room_check_failed = false;
                return Some(started);
            }
        }
    }
    pass.failed_preempt.insert(memo);
    entry.search_failed = true;
    entry.room_check_failed = room_check_failed;
    None
}

/// The fleet's free resources and the queues' quota usage now, for `preemptor`
/// ([`crate::PreemptionContext`]; its victims are filled in by the caller).
fn context(c: &Core, fleet: &FleetState, preemptor: JobId) -> crate::PreemptionContext {
    let free = fleet
        .nodes()
        .iter()
        .map(|n| {
            if n.schedulable {
                crate::NodeFree {
                    whole_gpus: n.free_whole,
                    gpu_milli: n.free_gpu_milli,
                    cpu_milli: n.free_cpu_milli,
                    mem_mib: n.free_mem_mib,
                }
            } else {
                crate::NodeFree::default()
            }
        })
        .collect();
    crate::PreemptionContext {
        preemptor,
        victims: Vec::new(),
        free,
        queue_usage: c.quota_usage_by_queue(),
    }
}

pub(crate) fn summary(c: &Core, cfg: &PreemptionConfig) -> RunSummary {
    if let (Some(ix), true) = (
        c.las_victims.as_ref(),
        cfg.las.is_some() && c.las == cfg.las,
    ) {
        return ix.summary(c);
    }
    if let (Some(ix), None) = (c.run_counts.as_ref(), cfg.las.as_ref()) {
        let (min_prio, tiers) = ix.summary();
        let s = RunSummary {
            min_prio_all: min_prio.iter().flatten().min().copied(),
            min_prio,
            tiers,
            started_at: c.started_gpu_milli,
            ..RunSummary::default()
        };
        debug_assert_eq!(
            s,
            summary_walk(c, cfg),
            "the run counts give the walk's summary"
        );
        return s;
    }
    summary_walk(c, cfg)
}

/// [`summary`] by a walk over the running jobs.
fn summary_walk(c: &Core, cfg: &PreemptionConfig) -> RunSummary {
    let mut s = RunSummary {
        started_at: c.started_gpu_milli,
        ..RunSummary::default()
    };
    let same_las = cfg.las.is_some() && c.las == cfg.las;
    for r in c.running_jobs().filter(|r| r.evicting.is_none()) {
        let q = r.job.queue.index();
        if q >= s.min_prio.len() {
            s.min_prio.resize(q + 1, None);
        }
        let p = r.job.priority;
        s.min_prio[q] = Some(s.min_prio[q].map_or(p, |m: i32| m.min(p)));
        s.min_prio_all = Some(s.min_prio_all.map_or(p, |m: i32| m.min(p)));
        s.tiers[r.job.tier as usize] += 1;
        if let Some(l) = &cfg.las {
            let level = l.level(r.attained_gpu_ms(c.now));
            s.max_level = s.max_level.max(level);
            if same_las {
                if level >= s.level_gpu_milli.len() {
                    s.level_gpu_milli.resize(level + 1, (0, 0));
                }
                let gpu = r.job.total_gpu_milli();
                let slot = &mut s.level_gpu_milli[level];
                slot.0 += gpu;
                if las_place(l, r, c.now).1 == c.now {
                    slot.1 += gpu;
                }
            }
        }
    }
    s
}

/// An upper bound, GPU-milli, on what [`candidates`] could offer `job` when the LAS rule is
/// the only one that can give it a victim; `None` when another rule might. Under LAS alone a
/// victim is a running job in a higher LAS queue than the job's, or in the same queue having
/// entered it at this instant ([`super::las::las_outranks`]); the summary counts both as of
/// its making, and every job started since is added (the summary does not see them, and any
/// rule might take them).
pub(crate) fn las_only_bound(
    c: &Core,
    s: &RunSummary,
    cfg: &PreemptionConfig,
    job: &PendingJob,
) -> Option<u64> {
    let las = cfg.las.as_ref()?;
    if c.quota.is_some() || c.las.as_ref() != Some(las) {
        return None;
    }
    if cfg.tiers && s.tiers[..job.tier as usize].iter().any(|&n| n > 0) {
        return None;
    }
    let within = within_queue_possible(s, cfg, job);
    if within
        || (cfg.capacity == CapacityPreemption::LowerPriority
            && s.min_prio_all.is_some_and(|m| m < job.priority))
    {
        return None;
    }
    let level = las.level(job.attained_gpu_ms);
    let same = s.level_gpu_milli.get(level).map_or(0, |&(_, now)| now);
    let above: u64 = s
        .level_gpu_milli
        .iter()
        .skip(level + 1)
        .map(|&(all, _)| all)
        .sum();
    Some(same + above + c.started_gpu_milli.wrapping_sub(s.started_at))
}

/// Could the within-queue rule give `job` a victim among the summary's running jobs?
fn within_queue_possible(s: &RunSummary, cfg: &PreemptionConfig, job: &PendingJob) -> bool {
    let queue_min = s.min_prio.get(job.queue.index()).copied().flatten();
    cfg.within_queue.could_take(queue_min, job.priority)
}

/// Could any rule give `job` a victim in `flavor`? A cheap necessary condition: per rule,
/// does some running job (or queue) meet its prerequisite? `O(queues)`.
pub(crate) fn could_preempt(
    c: &Core,
    pass: &mut PassState,
    cfg: &PreemptionConfig,
    job: &PendingJob,
    flavor: Option<u16>,
) -> bool {
    if pass.run_summary.is_none() {
        pass.run_summary = Some(summary(c, cfg));
    }
    let s = pass.run_summary.as_ref().expect("set above");
    if cfg.tiers && s.tiers[..job.tier as usize].iter().any(|&n| n > 0) {
        return true;
    }
    let within = within_queue_possible(s, cfg, job);
    if within {
        return true;
    }
    if cfg.capacity == CapacityPreemption::LowerPriority
        && s.min_prio_all.is_some_and(|m| m < job.priority)
    {
        return true;
    }
    if let Some(l) = &cfg.las {
        // A job demoted at this instant yields to those already waiting in its new queue.
        if s.max_level > l.level(job.attained_gpu_ms) || c.las_demoted_at == Some(c.now) {
            return true;
        }
    }
    let (Some(t), Some(f)) = (c.quota.as_ref(), flavor) else {
        return false;
    };
    let req = request(job);
    let reclaim = cfg.reclaim_within_cohort != ReclaimWithinCohort::Never
        && t.may_reclaim_somewhere(job.queue, f, &req);
    // Preempting while borrowing needs only a borrowing queue of the cohort.
    let borrow = cfg.borrow_within_cohort.policy != BorrowWithinCohortPolicy::Never
        && cfg.reclaim_within_cohort != ReclaimWithinCohort::Never;
    let fair = !cfg.fair_sharing.is_empty()
        && (!cfg.fair_sharing_needs_reclaim
            || cfg.reclaim_within_cohort != ReclaimWithinCohort::Never);
    if !reclaim && !fair && !borrow {
        return false;
    }
    // Both need another queue of the tree that borrows; fair sharing needs its share above
    // the preemptor's share after admission (S2-a and S2-b both imply it).
    let preemptor_new = if fair {
        t.drs_with(job.queue, f, &req, true)
    } else {
        Share::ZERO
    };
    t.queues().any(|q| {
        q != job.queue
            && t.same_tree(q, job.queue)
            && t.borrows_any(q)
            && (reclaim || borrow || (fair && t.drs(q) > preemptor_new))
    })
}

/// The eligible victims of a search, in the order the running set was walked, with their
/// sort keys and their groups by rule with a check. A plan draws them in victim order from
/// a heap of the keys (a failed search draws only as far as its last victim taken, issue
/// #18), so the list is never sorted whole.
#[derive(Default)]
pub(crate) struct Listed {
    pub(crate) cands: Vec<Candidate>,
    /// Each candidate's sort key and position in `cands`, unordered, reversed for a heap
    /// with the least on top.
    order: Vec<Reverse<(SortKey, u32)>>,
    /// The groups, by position in `cands`.
    pub(crate) groups: VictimGroups,
}

impl Listed {
    /// The candidates' ids in victim order (a sort of the whole list, for debug checks).
    fn sorted_ids(&self) -> Vec<JobId> {
        self.sorted().into_iter().map(|(id, _)| id).collect()
    }

    /// The candidates with their rules in victim order (a sort of the whole list, for debug
    /// checks).
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    pub(crate) fn sorted(&self) -> Vec<(JobId, PreemptReason)> {
        let mut o = self.order.clone();
        o.sort_unstable_by_key(|a| a.0);
        o.iter()
            .map(|r| {
                let cand = &self.cands[r.0 .1 as usize];
                (cand.id, cand.rule)
            })
            .collect()
    }
}

/// Eligible victims for `job` in `flavor`, to be drawn in victim order.
pub(crate) fn candidates(
    c: &Core,
    cfg: &PreemptionConfig,
    job: &PendingJob,
    flavor: Option<u16>,
) -> Listed {
    let scanned = scanned_queues(c, cfg, job, flavor);
    let out = candidates_in(c, cfg, job, flavor, scanned.as_deref());
    debug_assert!(
        scanned.is_none() || {
            // The full scan, less the queues left out as dead, is the same list; and what
            // those queues held is fair sharing's alone.
            let all = candidates_in(c, cfg, job, flavor, None);
            let queue_of = |id: JobId| running(c, id).job.queue;
            let kept: Vec<JobId> = all
                .sorted_ids()
                .into_iter()
                .filter(|&id| !fair_only_dead(c, cfg, job, flavor, queue_of(id)))
                .collect();
            kept == out.sorted_ids()
                && all.cands.iter().all(|cand| {
                    !fair_only_dead(c, cfg, job, flavor, queue_of(cand.id))
                        || cand.rule == PreemptReason::FairShare
                })
        },
        "the queues left out of the scan hold no candidate that could be taken"
    );
    out
}

/// Without the tier, priority and LAS rules (`None` otherwise), the queues whose running
/// jobs can hold candidates for `job` in `flavor`: a victim of another queue must be taken
/// by reclaim or fair sharing, which both need its queue borrowing; one of the preemptor's
/// own queue, by the within-queue rule. The other queues hold no candidate, and their jobs
/// are not looked at (the victim order does not depend on the walk's).
pub(crate) fn scanned_queues(
    c: &Core,
    cfg: &PreemptionConfig,
    job: &PendingJob,
    flavor: Option<u16>,
) -> Option<Vec<crate::ids::QueueId>> {
    cfg.queue_rules_only().then(|| {
        let mut qs: Vec<crate::ids::QueueId> = c.quota.as_ref().map_or(Vec::new(), |t| {
            t.queues()
                .filter(|&q| {
                    q != job.queue && t.borrows_any(q) && !fair_only_dead(c, cfg, job, flavor, q)
                })
                .collect()
        });
        if cfg.within_queue != WithinQueue::Never {
            qs.push(job.queue);
        }
        qs
    })
}

/// With the within-queue rule off too (and no tier, priority or LAS rule), no victim of the
/// preemptor's queue can be taken, so its share after admission stays put through the
/// search. A queue none of whose jobs could be reclaimed (only fair sharing could take them)
/// and whose share is at or below that share gives no victim in any round: both strategies
/// need the preemptor to end below the victim queue's share before (`SimTrial::eligible`),
/// and that share only falls as the queue's jobs leave. Its jobs are not walked either.
fn fair_only_dead(
    c: &Core,
    cfg: &PreemptionConfig,
    job: &PendingJob,
    flavor: Option<u16>,
    q: crate::ids::QueueId,
) -> bool {
    let (Some(t), Some(pf)) = (c.quota.as_ref(), flavor) else {
        return false;
    };
    let req = request(job);
    cfg.queue_rules_only()
        && cfg.within_queue == WithinQueue::Never
        && (cfg.reclaim_within_cohort == ReclaimWithinCohort::Never
            || !t.may_reclaim_from(job.queue, q, pf, &req))
        && t.drs_with(job.queue, pf, &req, true) >= t.drs(q)
}

/// [`candidates`] among the running jobs of `queues` (`None`: every running job).
fn candidates_in(
    c: &Core,
    cfg: &PreemptionConfig,
    job: &PendingJob,
    flavor: Option<u16>,
    queues: Option<&[crate::ids::QueueId]>,
) -> Listed {
    if c.running.is_none() {
        return Listed::default();
    }
    let now = c.now;
    let quota = c.quota.as_ref();
    let req = request(job);
    // May the job reclaim from queue `vq` (field case B22: quota on an ancestor cohort)?
    let reclaimer = |vq: crate::ids::QueueId| match (quota, flavor) {
        (Some(t), Some(f)) => t.may_reclaim_from(job.queue, vq, f, &req),
        _ => false,
    };
    let job_rank = (
        if cfg.capacity == CapacityPreemption::LowerPriority {
            job.priority
        } else {
            0
        },
        cfg.las
            .as_ref()
            .map_or(0, |l| -(l.level(job.attained_gpu_ms) as i64)),
    );
    let my_preemptors: &[u64] = c.preempted_by.get(&job.seq).map_or(&[], Vec::as_slice);
    let shares = share_ranks(c);
    // Per queue, computed once per call: whether it is in the preemptor's cohort tree (and
    // not its own queue), whether the preemptor may reclaim from it (computed when first
    // asked), its share and that share's rank; and per flavor, whether it borrows in it.
    let mut queue_info: Vec<Option<QueueInfo>> = Vec::new();
    let info = |cache: &mut Vec<Option<QueueInfo>>, q: crate::ids::QueueId, f: Option<u16>| {
        let i = q.index();
        if i >= cache.len() {
            cache.resize(i + 1, None);
        }
        let slot = &mut cache[i];
        if slot.is_none_or(|s| s.flavor != f) {
            let share = slot.map_or_else(|| quota.map_or(Share::ZERO, |t| t.drs(q)), |s| s.share);
            *slot = Some(QueueInfo {
                flavor: f,
                borrowing: match (quota, f) {
                    (Some(t), Some(f)) => t.is_borrowing(q, f),
                    _ => false,
                },
                share,
                rank: shares.partition_point(|x| *x > share) as u32,
                same_tree: match quota {
                    Some(t) => q != job.queue && t.same_tree(q, job.queue),
                    None => false,
                },
                reclaim: None,
            });
        }
        i
    };
    // The running jobs not being evicted: in the queues given, their views kept by queue
    // (`scheduler::run_counts`, read in a stream), else their records, viewed one by one.
    type Walk<'w> = Box<dyn Iterator<Item = (VictimView, Option<&'w Running>)> + 'w>;
    let of_record = |r: &Running| r.evicting.is_none().then(|| VictimView::of(r));
    let (walk, len): (Walk, usize) = match (queues, c.run_counts.as_ref()) {
        (Some(qs), Some(rc)) => (
            Box::new(
                qs.iter()
                    .flat_map(move |&q| rc.views(q).iter().map(|&v| (v, None))),
            ),
            qs.iter().map(|&q| rc.views(q).len()).sum(),
        ),
        (Some(qs), None) => (
            Box::new(
                qs.iter()
                    .flat_map(|&q| c.running_jobs_of(q))
                    .filter_map(move |r| of_record(r).map(|v| (v, Some(r)))),
            ),
            qs.iter()
                .map(|q| c.running_by_queue.get(q.index()).map_or(0, BTreeSet::len))
                .sum(),
        ),
        (None, _) => (
            Box::new(
                c.running_jobs()
                    .filter_map(move |r| of_record(r).map(|v| (v, Some(r)))),
            ),
            c.running_ids.len(),
        ),
    };
    // The candidates, and their sort keys with their positions (sorting the keys alone
    // moves a third of the bytes).
    let mut out: Vec<Candidate> = Vec::with_capacity(len);
    let mut order: Vec<Reverse<(SortKey, u32)>> = Vec::with_capacity(len);
    let mut groups = VictimGroups::default();
    for (v, rec) in walk {
        if v.id == job.id {
            continue;
        }
        debug_assert!(
            rec.is_some() || {
                let r = running(c, v.id);
                r.evicting.is_none() && VictimView::of(r) == v
            },
            "a kept view is its record's"
        );
        // The record, for the LAS components only.
        let r = || rec.unwrap_or_else(|| running(c, v.id));
        if c.preempted_now.0 == now && c.preempted_now.1.contains(&v.id) {
            // Rule P3: preempted earlier at this instant and restarted: not again now.
            continue;
        }
        if c.victim_counts.get(&v.seq).copied().unwrap_or(0) >= cfg.victim_cap {
            // Rule P4: preempted `victim_cap` times since the last completion: not again
            // until some job completes (bounds every cycle, of any length and rule mix).
            continue;
        }
        // Rule P2: never preempt back a job that preempted this one, unless it is now behind
        // this one in the LAS order (scheduler::las).
        let p2 = my_preemptors.contains(&v.seq);
        let las_ahead = c.las.is_some() && cfg.las.is_some();
        let las_ahead = las_ahead && las_outranks(c.las.as_ref().expect("set"), job, r(), now);
        if p2 && !las_ahead {
            continue;
        }
        let same_queue = v.queue == job.queue;
        let qi = info(&mut queue_info, v.queue, v.flavor);
        let QueueInfo {
            same_tree,
            borrowing,
            share,
            rank,
            ..
        } = queue_info[qi].expect("set by info");
        // Never a higher tier; a lower one only under the tier rule or quota rules.
        if v.tier > job.tier {
            continue;
        }
        // The capacity rank (priority, then LAS queue): one total order for the priority and
        // LAS rules, so that neither can undo the other.
        let v_rank = (
            if cfg.capacity == CapacityPreemption::LowerPriority {
                v.priority
            } else {
                0
            },
            cfg.las
                .as_ref()
                .map_or(0, |l| -(l.level(r().attained_gpu_ms(now)) as i64)),
        );
        // With quota, a job charged to another queue is a capacity victim only while that queue
        // borrows (Kueue `borrowWithinCohort`): never below its nominal quota.
        let capacity_ok =
            !(same_tree || (quota.is_some() && !same_queue && v.flavor.is_some())) || borrowing;
        let rule = if cfg.tiers && job.tier > v.tier {
            Some(PreemptReason::Tier)
        } else if same_queue
            && match cfg.within_queue {
                WithinQueue::Never => false,
                WithinQueue::LowerPriority => v.priority < job.priority,
                WithinQueue::LowerOrNewerEqualPriority => {
                    v.priority < job.priority
                        || (v.priority == job.priority && (v.submit, v.seq) > (job.submit, job.seq))
                }
            }
        {
            Some(PreemptReason::WithinQueue)
        } else if same_tree
            && borrowing
            && cfg.reclaim_allows(v.priority, job.priority)
            && *queue_info[qi]
                .as_mut()
                .expect("set by info")
                .reclaim
                .get_or_insert_with(|| reclaimer(v.queue))
        {
            Some(PreemptReason::Reclaim)
        } else if same_tree && borrowing && cfg.borrow_allows(v.priority, job.priority) {
            Some(PreemptReason::ReclaimWhileBorrowing)
        } else if capacity_ok && (job_rank > v_rank || (job_rank.0 == v_rank.0 && las_ahead)) {
            Some(if job_rank.0 > v_rank.0 {
                PreemptReason::Priority
            } else {
                PreemptReason::Las
            })
        } else if same_tree && borrowing && cfg.fair_share_allows(v.priority, job.priority) {
            Some(PreemptReason::FairShare)
        } else {
            None
        };
        let Some(rule) = rule else { continue };
        if p2 && rule != PreemptReason::Las {
            continue;
        }
        let key = VictimKey {
            tier: v.tier as u8,
            borrowing,
            share,
            same_queue,
            priority: v.priority,
            lost_gpu_milli_ms: v.lost_gpu_milli_ms(now),
            start_ms: v.start.0,
            seq: v.seq,
        };
        let key = match (rule, c.las.as_ref()) {
            (PreemptReason::Las, Some(l)) => las_victim_key(l, r(), now, key),
            _ => key,
        };
        let sort = (
            key.tier,
            !key.borrowing,
            rank,
            key.same_queue,
            key.priority,
            key.lost_gpu_milli_ms,
            Reverse(key.start_ms),
            Reverse(key.seq),
            v.id,
        );
        order.push(Reverse((sort, out.len() as u32)));
        groups.push(rule, v.queue, v.flavor, v.req);
        out.push(Candidate {
            id: v.id,
            rule,
            #[cfg(debug_assertions)]
            key,
        });
    }
    // The keys order as the victim order ([`VictimKey`]'s `Ord`), then the job id.
    #[cfg(debug_assertions)]
    {
        let mut o = order.clone();
        o.sort_unstable_by_key(|a| a.0);
        debug_assert!(o.windows(2).all(|w| {
            let (a, b) = (&out[w[0].0 .1 as usize], &out[w[1].0 .1 as usize]);
            a.key.cmp(&b.key).then(a.id.cmp(&b.id)).is_lt()
        }));
    }
    Listed {
        cands: out,
        order,
        groups,
    }
}

/// What [`candidates`] knows of a victim's queue during one call.
#[derive(Clone, Copy)]
struct QueueInfo {
    /// The flavor `borrowing` is for.
    flavor: Option<u16>,
    borrowing: bool,
    share: Share,
    rank: u32,
    /// In the preemptor's cohort tree, not its own queue.
    same_tree: bool,
    /// May the preemptor reclaim from it (asked once).
    reclaim: Option<bool>,
}

/// True when `job` (with models `models`) could not fit in any cell it allows even with the
/// accelerators of all of `victims` (running jobs) freed, by free GPU-milli per node alone
/// ([`FleetState::gpu_task_room`]: `Σ ⌊free / per-task GPU-milli⌋` over the cell's
/// schedulable nodes of those models, below the gang size): then every trial that frees a
/// subset of them fails. With a pure placement ([`crate::Placement::select_is_pure`]) a
/// gang below that bound is refused ([`crate::placement::place_gang`]) and a single task
/// fits only on a node with room for it, so each of the trial's capacity checks answers no;
/// its trial leaves nothing behind. [`preempt_for`] asks it of every candidate before a
/// plan, [`SimTrial::dry_run`] of the victims a plan would take. `false` (plan as usual) for
/// CPU-only tasks, other placements and a recording context. `O(victims' tasks + cells ×
/// distinct free amounts)`, without touching the fleet, where each failed plan takes every
/// victim out and tries a placement after each.
fn no_room_even_with_all(
    c: &Core,
    pass: &mut PassState,
    fleet: &FleetState,
    job: &PendingJob,
    models: ModelSet,
    victims: impl Iterator<Item = JobId>,
) -> bool {
    // Room is counted in whole tasks: not for tasks that take the node's shape.
    if job.shape.num_gpu == 0 || job.split || !c.placement.select_is_pure() || c.ctx.records() {
        return false;
    }
    let want = u64::from(job.tasks);
    let need = job.shape.total_gpu_milli();
    if need == 0 {
        return false;
    }
    // Room per allowed cell; any cell with room already ends the question.
    let mut room: Vec<Option<u64>> = vec![None; fleet.cells().len()];
    for (i, slot) in room.iter_mut().enumerate() {
        let cell = CellId(i as u16);
        if job.allows_cell(cell) {
            let r = fleet.gpu_task_room(cell, &job.shape, models, want);
            if r >= want {
                return false;
            }
            *slot = Some(r);
        }
    }
    // What the victims free, per node (a job's tasks may share a node), summed in the
    // pass's scratch array (`touched` lists the nodes with a sum, cleared on return); each
    // sum's gain in whole tasks is added to its cell's room as it grows, so the walk ends
    // at the first cell with room.
    let freed = &mut pass.freed_by_node;
    if freed.len() < fleet.nodes().len() {
        freed.resize(fleet.nodes().len(), 0);
    }
    let mut touched: Vec<NodeId> = Vec::new();
    let mut no_room = true;
    for a in victims.flat_map(|id| running(c, id).allocs.iter()) {
        let extra = a.total_gpu_milli();
        let n = fleet.node(a.node);
        if extra == 0 || !super::core::in_gpu_room(n, models) {
            continue;
        }
        let Some(r) = room[n.cell.index()].as_mut() else {
            continue;
        };
        let slot = &mut freed[a.node.index()];
        if *slot == 0 {
            touched.push(a.node);
        }
        let free = u64::from(n.free_gpu_milli);
        *r += (free + *slot + extra) / need - (free + *slot) / need;
        *slot += extra;
        if *r >= want {
            no_room = false;
            break;
        }
    }
    for node in touched {
        freed[node.index()] = 0;
    }
    no_room
}

/// Where a plan's candidates come from, in victim order.
pub(crate) enum Source<'a> {
    /// A list made by [`candidates`], and the heap of its keys not drawn yet, least on
    /// top.
    Listed(&'a Listed, BinaryHeap<Reverse<(SortKey, u32)>>),
    /// A walk of the LAS victim index ([`las_only_victims`]), with the preemption settings.
    Las(LasCursor, &'a PreemptionConfig),
    /// A merge of the running jobs kept in lost-work order
    /// ([`super::quota_victims::applies`]), with the preemption settings.
    Quota(QuotaCursor, &'a PreemptionConfig),
    /// The candidates to draw, in victim order, all known before the search
    /// ([`super::las_nodes::victims_by_node`]); moved into [`SimTrial::drawn`] by [`plan`].
    Given(Vec<Candidate>),
}

/// The simulator's [`VictimTrial`]: victims are indices into the candidates drawn so far;
/// the trial changes quota and the fleet, and holds the preemptor's tentative placement.
pub(crate) struct SimTrial<'a> {
    pub(crate) c: &'a mut Core,
    pub(crate) pass: &'a mut PassState,
    pub(crate) fleet: &'a mut FleetState,
    pub(crate) job: &'a PendingJob,
    pub(crate) flavor: Option<u16>,
    pub(crate) models: ModelSet,
    pub(crate) source: Source<'a>,
    /// Candidates drawn from a [`Source::Las`] or [`Source::Quota`] walk, in order (with a
    /// [`Source::Given`], all of them from the start).
    pub(crate) drawn: Vec<Candidate>,
    /// With a [`Source::Given`]: how many of `drawn` were drawn.
    pub(crate) given_drawn: usize,
    pub(crate) strategy: Option<FairStrategy>,
    pub(crate) req: crate::quota::Request,
    pub(crate) need: u64,
    /// What the preemptor's queue borrows before any victim leaves.
    pub(crate) before: crate::quota::Request,
    /// The preemptor's share after admission (changes only when a victim of its own queue
    /// leaves).
    pub(crate) pn_cache: Option<Share>,
    /// Per queue, its share (changes only when a victim of it leaves).
    pub(crate) old_cache: Vec<Option<Share>>,
    pub(crate) fit: Option<(CellId, Vec<TaskAlloc>)>,
    /// The over-reclaim guard in force.
    pub(crate) guard: ReclaimGuard,
    /// With a listed source: the walk over its groups ([`super::victim_groups`]).
    pub(crate) walk: Option<GroupWalk>,
    /// The rules of the victims out now.
    pub(crate) taken: TakenRules,
    /// While victims are taken: whether some node could hold one of the preemptor's tasks
    /// (`None`: not asked yet). See [`SimTrial::may_place`].
    pub(crate) node_room: Option<bool>,
    /// Victims taken out or put back so far (of quota, with or without the fleet).
    pub(crate) moves: u64,
    /// `moves` when the last candidate was drawn from a [`Source::Quota`] (`None`: none yet).
    pub(crate) drawn_at: Option<u64>,
    /// The tentative placement `fit` was kept over a victim put back beside it
    /// ([`SimTrial::fit_survives`]): still valid, but not necessarily the placement the
    /// policy would choose now. [`SimTrial::fresh_fit`] asks again.
    pub(crate) stale: bool,
}

impl SimTrial<'_> {
    /// The candidates drawn so far (a listed source: all of them).
    fn cands(&self) -> &[Candidate] {
        match &self.source {
            Source::Listed(list, _) => &list.cands,
            Source::Las(..) | Source::Quota(..) | Source::Given(..) => &self.drawn,
        }
    }

    /// False only when no placement of the preemptor can succeed now: no node of a cell it
    /// allows fits one of its tasks ([`FleetState::fits`]). A pure placement
    /// ([`crate::placement::Placement::select_is_pure`]) picks among nodes that fit, so its
    /// attempt would fail and leave nothing behind; the attempt is skipped (a
    /// many-GPU preemptor takes many one-GPU victims spread over the fleet, and each take
    /// cost a placement attempt). Victims are only taken out between two calls, which frees
    /// room and never takes it, so after one answer over the whole fleet only the nodes of
    /// the victim just taken can start to fit. Always true for a CPU-only preemptor, an
    /// impure placement or a recorded context (every attempt is then seen).
    fn may_place(&mut self, taken: &[usize]) -> bool {
        if self.job.shape.num_gpu == 0
            || self.job.split
            || !self.c.placement.select_is_pure()
            || self.c.ctx.records()
        {
            return true;
        }
        let room = match self.node_room {
            Some(true) => true,
            Some(false) => {
                let last = *taken.last().expect("fits is asked after a take");
                let r = running(self.c, self.cands()[last].id);
                super::core::fits_on_any(self.fleet, self.job, self.models, &r.allocs)
            }
            None => super::core::one_task_fits(self.fleet, self.job, self.models),
        };
        self.node_room = Some(room);
        room
    }

    /// True when putting back running job `id` leaves the tentative placement valid and the
    /// placement would still find one: a pure and complete placement
    /// ([`crate::placement::Placement::select_is_complete`]) of a single task without a
    /// topology constraint, not recorded, and the victim on none of the placement's nodes.
    /// (Cell selection lists every allowed cell, so the placement's cell is still tried.)
    fn fit_survives(&self, id: JobId) -> bool {
        let Some((_, allocs)) = &self.fit else {
            return false;
        };
        let p = self.c.placement.as_ref();
        if self.job.tasks != 1
            || self.job.split
            || self.job.topology.is_some_and(|t| !t.is_empty())
            || !p.select_is_pure()
            || !p.select_is_complete()
            || self.c.ctx.records()
        {
            return false;
        }
        running(self.c, id)
            .allocs
            .iter()
            .all(|v| allocs.iter().all(|a| a.node != v.node))
    }

    /// Replaces a kept tentative placement ([`SimTrial::stale`]) by the one the placement
    /// chooses in the current state, which a search without kept placements ends with.
    fn fresh_fit(&mut self) {
        if !self.stale {
            return;
        }
        self.stale = false;
        if let Some((_, allocs)) = self.fit.take() {
            release(self.fleet, &allocs);
            self.fit = Some(
                self.c
                    .place_in_cells(self.pass, self.fleet, self.job, self.models)
                    .expect("a valid placement was kept, so the placement finds one"),
            );
        }
    }

    /// For a listed source, a pure placement and a GPU preemptor (not recorded): draws the
    /// whole search with the victims taken out of quota only, puts them back, and returns the
    /// draws in order with whether the search certainly fails.
    ///
    /// The draws and the eligibility checks read quota and the walk's groups, never the
    /// fleet, so a search whose capacity check never passes draws exactly these candidates
    /// and takes exactly the eligible ones (`taken`). Taking victims out only frees room, so
    /// if the preemptor has no room even with all of `taken` freed
    /// ([`no_room_even_with_all`]), no capacity check along the way passes: the search
    /// fails, and nothing of it needs to touch the fleet. Otherwise the search runs as
    /// usual over the recorded draws, which are the ones [`SimTrial::draw`] would return up
    /// to its first fit. `saturated_quota_preempt`: 98.6 % of its plans fail,
    /// each taking out and putting back about 216 victims spread over the fleet with a
    /// placement check after each. A search that succeeds would stop at its first fit, so
    /// [`plan`] asks for a dry run only for a preemptor whose last search failed
    /// ([`Entry::search_failed`]). `None`: not applicable, search as usual.
    fn dry_run(&mut self) -> Option<(Vec<usize>, bool)> {
        if !matches!(self.source, Source::Listed(..) | Source::Quota(..))
            || self.job.shape.num_gpu == 0
            || self.job.split
            || !self.c.placement.select_is_pure()
            || self.c.ctx.records()
        {
            return None;
        }
        let mut draws = Vec::new();
        let mut taken = Vec::new();
        while let Some(v) = self.draw() {
            draws.push(v);
            if self.eligible(v) {
                self.move_quota(v, true);
                taken.push(v);
            }
        }
        for &v in taken.iter().rev() {
            self.move_quota(v, false);
        }
        self.taken = TakenRules::default();
        let ids: Vec<JobId> = taken.iter().map(|&v| self.cands()[v].id).collect();
        let fails = no_room_even_with_all(
            self.c,
            self.pass,
            self.fleet,
            self.job,
            self.models,
            ids.into_iter(),
        );
        Some((draws, fails))
    }

    /// Takes candidate `v` out of quota (`out`) or puts it back, without touching the fleet.
    fn move_quota(&mut self, v: usize, out: bool) {
        let (id, rule) = (self.cands()[v].id, self.cands()[v].rule);
        let vq = running(self.c, id).job.queue;
        charge_quota(self.c, id, out);
        self.moved(vq, rule, out);
    }

    /// The index of the next candidate in victim order (`None`: no more).
    fn draw(&mut self) -> Option<usize> {
        match &mut self.source {
            Source::Listed(list, _) => {
                let list: &Listed = list;
                loop {
                    let Source::Listed(_, heap) = &mut self.source else {
                        unreachable!("matched above")
                    };
                    let i = heap.pop()?.0 .1 as usize;
                    let g = list.groups.of[i];
                    self.pass_over(list, i);
                    if g == NO_GROUP || !self.group_dead(list, g as usize) {
                        return Some(i);
                    }
                    // No member of the group could be taken now.
                    debug_assert!(!self.eligible(i), "a dead group's member is ineligible");
                    let w = self.walk.as_ref().expect("a listed source has a walk");
                    if w.unchecked == 0 && self.all_dead(list) {
                        // Only dead groups' members are left: the search would check each
                        // and take none.
                        #[cfg(debug_assertions)]
                        {
                            let Source::Listed(_, heap) = &self.source else {
                                unreachable!("matched above")
                            };
                            let rest: Vec<usize> = heap.iter().map(|r| r.0 .1 as usize).collect();
                            debug_assert!(rest.into_iter().all(|j| !self.eligible(j)));
                        }
                        return None;
                    }
                }
            }
            Source::Given(..) => {
                let i = self.given_drawn;
                self.given_drawn += 1;
                (i < self.drawn.len()).then_some(i)
            }
            Source::Las(cursor, cfg) => {
                let cand = cursor.next(self.c, cfg, self.job)?;
                self.drawn.push(cand);
                Some(self.drawn.len() - 1)
            }
            Source::Quota(..) => loop {
                let Source::Quota(cursor, _) = &self.source else {
                    unreachable!("matched above")
                };
                let (rule, q, f, least) = cursor.peek()?;
                // A stream whose least request fails the quota checks has no member that
                // could be taken now; victims are only taken out while drawing, which never
                // revives it (its queue's usage falls; the preemptor's own queue gives no
                // victim here), so it is dropped whole. Its members are ineligible, so the
                // check is made only when the last candidate drawn was not taken (or none
                // was drawn yet): a stream that dies gives at most one draw more.
                let check = self.drawn_at.is_none_or(|m| m == self.moves);
                let live = !check || self.quota_checks(rule, q, f, &least, true);
                let Source::Quota(cursor, cfg) = &mut self.source else {
                    unreachable!("matched above")
                };
                if !live {
                    cursor.discard();
                    continue;
                }
                if let Some(cand) = cursor.advance(self.c, cfg, self.job) {
                    self.drawn_at = Some(self.moves);
                    self.drawn.push(cand);
                    return Some(self.drawn.len() - 1);
                }
            },
        }
    }

    /// The walk has drawn the candidate at `pos` of `list`.
    fn pass_over(&mut self, list: &Listed, pos: usize) {
        let g = list.groups.of[pos];
        let w = self.walk.as_mut().expect("a listed source has a walk");
        if g == NO_GROUP {
            w.unchecked -= 1;
        } else {
            w.left[g as usize] -= 1;
        }
    }

    /// True when every group with members not yet passed is dead.
    fn all_dead(&mut self, list: &Listed) -> bool {
        (0..list.groups.groups.len()).all(|g| {
            self.walk.as_ref().expect("a listed source has a walk").left[g] == 0
                || self.group_dead(list, g)
        })
    }

    /// True when no member of group `g` could be taken in the current state: the checks of
    /// [`SimTrial::eligible`] fail for the group's least request ([`super::victim_groups`]).
    fn group_dead(&mut self, list: &Listed, g: usize) -> bool {
        if let Some(d) = self.walk.as_ref().expect("a listed source has a walk").dead[g] {
            return d;
        }
        let x = &list.groups.groups[g];
        let dead = !self.quota_checks(x.rule, x.queue, x.flavor, &x.least, true);
        self.walk.as_mut().expect("a listed source has a walk").dead[g] = Some(dead);
        dead
    }

    /// The reclaim and fair-sharing rules' checks on a victim of queue `vq`, charged in
    /// flavor `vf` with request `vreq`: may it be taken now? With `bound`, the one check that
    /// a larger request passes more easily (fair sharing's S2-a needs the victim's queue
    /// share to fall strictly) is left out, so that a `false` holds for every request at
    /// least `vreq` in each resource (the dead groups of [`super::victim_groups`]).
    fn quota_checks(
        &mut self,
        rule: PreemptReason,
        vq: crate::ids::QueueId,
        vf: Option<u16>,
        vreq: &crate::quota::Request,
        bound: bool,
    ) -> bool {
        let t = self
            .c
            .quota
            .as_ref()
            .expect("reclaim and fair sharing imply quota");
        let Some(f) = vf else { return false };
        // Rule: the victim's queue must still be borrowing after earlier removals, and (the
        // guard) not fall below its nominal quota by this removal.
        if !t.is_borrowing(vq, f)
            || (self.guard == ReclaimGuard::Nominal && !t.keeps_nominal_after_removal(vq, f, vreq))
        {
            return false;
        }
        if rule != PreemptReason::FairShare {
            return true;
        }
        let Some(pf) = self.flavor else { return false };
        let (job, req) = (self.job, &self.req);
        let preemptor_new = *self
            .pn_cache
            .get_or_insert_with(|| t.drs_with(job.queue, pf, req, true));
        let qi = vq.index();
        if qi >= self.old_cache.len() {
            self.old_cache.resize(qi + 1, None);
        }
        let target_old = *self.old_cache[qi].get_or_insert_with(|| t.drs(vq));
        // Both strategies need the preemptor to end below the target's share before.
        if preemptor_new >= target_old {
            return false;
        }
        match self.strategy {
            Some(FairStrategy::LessThanOrEqualToFinalShare) => {
                let target_new = t.drs_with(vq, f, vreq, false);
                preemptor_new <= target_new && (bound || target_new < target_old)
            }
            Some(FairStrategy::LessThanInitialShare) => true,
            None => false,
        }
    }

    /// A victim of queue `q` under `rule` was taken out (`out`) or put back: the shares
    /// cached for `q` (and the preemptor's, if `q` is its queue) and the verdicts of `q`'s
    /// groups no longer hold, and the count of taken rules moves.
    fn moved(&mut self, q: crate::ids::QueueId, rule: PreemptReason, out: bool) {
        self.moves += 1;
        if q == self.job.queue {
            self.pn_cache = None;
        }
        if let Some(slot) = self.old_cache.get_mut(q.index()) {
            *slot = None;
        }
        if let (Source::Listed(list, _), Some(w)) = (&self.source, self.walk.as_mut()) {
            w.changed(&list.groups, q, self.job.queue);
        }
        self.taken.count(rule, q, self.job.queue, out);
    }
}

impl VictimTrial for SimTrial<'_> {
    type Victim = usize;

    fn eligible(&mut self, v: usize) -> bool {
        let cand = &self.cands()[v];
        let rule = cand.rule;
        match rule {
            PreemptReason::Reclaim
            | PreemptReason::ReclaimWhileBorrowing
            | PreemptReason::FairShare => {
                let r = running(self.c, cand.id);
                let (vq, vf, vreq) = (r.job.queue, r.flavor, r.req);
                self.quota_checks(rule, vq, vf, &vreq, false)
            }
            _ => true,
        }
    }

    fn take_out(&mut self, v: usize) {
        let (id, rule) = (self.cands()[v].id, self.cands()[v].rule);
        let vq = running(self.c, id).job.queue;
        take_out(self.c, self.fleet, id);
        self.moved(vq, rule, true);
    }

    fn put_back(&mut self, v: usize) {
        let (id, rule) = (self.cands()[v].id, self.cands()[v].rule);
        if !self.fit_survives(id) {
            if let Some((_, allocs)) = self.fit.take() {
                release(self.fleet, &allocs);
            }
        }
        let vq = running(self.c, id).job.queue;
        put_back(self.c, self.fleet, id);
        self.moved(vq, rule, false);
    }

    fn fits(&mut self, taken: &[usize]) -> bool {
        if !self.may_place(taken) {
            debug_assert!(
                self.c
                    .place_in_cells(self.pass, self.fleet, self.job, self.models)
                    .is_none(),
                "a placement succeeded where no node fits a task"
            );
            return false;
        }
        if !quota_ok(
            self.c,
            self.job,
            self.flavor,
            &self.req,
            taken,
            self.cands(),
            &self.taken,
            &self.before,
        ) || self.c.free_for(self.fleet, self.job, self.models) < self.need
        {
            return false;
        }
        self.fit = self
            .c
            .place_in_cells(self.pass, self.fleet, self.job, self.models);
        self.fit.is_some()
    }

    fn still_fits(&mut self, taken: &[usize]) -> bool {
        let quota = quota_ok(
            self.c,
            self.job,
            self.flavor,
            &self.req,
            taken,
            self.cands(),
            &self.taken,
            &self.before,
        );
        if let Some((_, allocs)) = &self.fit {
            // Kept over the put-back (`fit_survives`): the placement would find one.
            if quota {
                #[cfg(debug_assertions)]
                {
                    let mut fleet = self.fleet.clone();
                    release(&mut fleet, allocs);
                    debug_assert!(
                        self.c
                            .place_in_cells(self.pass, &mut fleet, self.job, self.models)
                            .is_some(),
                        "a kept placement stands for one the placement finds"
                    );
                }
                self.stale = true;
                return true;
            }
            release(self.fleet, allocs);
            self.fit = None;
            self.stale = false;
            return false;
        }
        self.stale = false;
        self.fit = if quota {
            self.c
                .place_in_cells(self.pass, self.fleet, self.job, self.models)
        } else {
            None
        };
        self.fit.is_some()
    }

    fn refit(&mut self, _taken: &[usize]) {
        self.stale = false;
        self.fit = Some(
            self.c
                .place_in_cells(self.pass, self.fleet, self.job, self.models)
                .expect("the preemptor fitted with this very victim set"),
        );
    }
}

/// Greedy removal in victim order until `job` fits, then minimization
/// ([`minimal_victim_set`]). On success the victims are out of quota and the fleet and the
/// job is placed; on failure nothing changed. With `dry` (the preemptor's last search
/// failed), the search is first drawn without touching the fleet ([`SimTrial::dry_run`]):
/// the same victims and placement, found faster when the search fails again.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    c: &mut Core,
    pass: &mut PassState,
    fleet: &mut FleetState,
    job: &PendingJob,
    flavor: Option<u16>,
    models: ModelSet,
    source: Source,
    strategy: Option<FairStrategy>,
    dry: bool,
) -> Option<(CellId, Vec<TaskAlloc>, Vec<Removed>)> {
    let req = request(job);
    let need = job.total_gpu_milli();
    let guard = c
        .preemption
        .as_ref()
        .map_or(ReclaimGuard::Nominal, |p| p.reclaim_guard);
    let before = match (c.quota.as_ref(), flavor) {
        (Some(t), Some(f)) => t.borrowed(job.queue, f, None),
        _ => [0; 3],
    };
    let walk = match &source {
        Source::Listed(list, _) => Some(GroupWalk::new(&list.groups)),
        Source::Las(..) | Source::Quota(..) | Source::Given(..) => None,
    };
    let mut source = source;
    let drawn = match &mut source {
        Source::Given(v) => std::mem::take(v),
        _ => Vec::new(),
    };
    let mut trial = SimTrial {
        c,
        pass,
        fleet,
        job,
        flavor,
        models,
        source,
        drawn,
        given_drawn: 0,
        strategy,
        req,
        need,
        before,
        pn_cache: None,
        old_cache: Vec::new(),
        walk,
        taken: TakenRules::default(),
        fit: None,
        guard,
        node_room: None,
        stale: false,
        moves: 0,
        drawn_at: None,
    };
    let taken = match if dry { trial.dry_run() } else { None } {
        None => minimal_victim_set_from(&mut trial, SimTrial::draw),
        Some((_draws, true)) => {
            #[cfg(debug_assertions)]
            {
                let mut replay = _draws.into_iter();
                debug_assert!(
                    minimal_victim_set_from(&mut trial, |_| replay.next()).is_none(),
                    "a search certified to fail found victims"
                );
            }
            None
        }
        Some((draws, false)) => {
            let mut replay = draws.into_iter();
            minimal_victim_set_from(&mut trial, |_| replay.next())
        }
    }?;
    trial.fresh_fit();
    let (cell, allocs) = trial.fit.take().expect("a victim set is returned placed");
    let cands = trial.cands();
    let removed = taken
        .into_iter()
        .map(|i| Removed {
            id: cands[i].id,
            rule: cands[i].rule,
        })
        .collect();
    Some((cell, allocs, removed))
}

/// The rules of the victims a trial has out, counted: what [`quota_ok`] reads of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct TakenRules {
    /// Under the within-queue rule.
    within: u32,
    /// Under the priority or LAS rule, from the preemptor's queue.
    capacity_own: u32,
    /// Under the priority or LAS rule, from other queues.
    capacity_other: u32,
    /// Under the reclaim rule, per victim queue (queues in first-taken order).
    reclaim: Vec<(crate::ids::QueueId, u32)>,
}

impl TakenRules {
    /// A victim under `rule`, of queue `vq`, was taken out (`out`) or put back, for a
    /// preemptor of queue `own`.
    pub(crate) fn count(
        &mut self,
        rule: PreemptReason,
        vq: crate::ids::QueueId,
        own: crate::ids::QueueId,
        out: bool,
    ) {
        let n = match rule {
            PreemptReason::FairShare
            | PreemptReason::Tier
            | PreemptReason::ReclaimWhileBorrowing => return,
            PreemptReason::WithinQueue => &mut self.within,
            PreemptReason::Priority | PreemptReason::Las if vq == own => &mut self.capacity_own,
            PreemptReason::Priority | PreemptReason::Las => &mut self.capacity_other,
            PreemptReason::Reclaim => match self.reclaim.iter().position(|x| x.0 == vq) {
                Some(i) => &mut self.reclaim[i].1,
                None => {
                    self.reclaim.push((vq, 0));
                    &mut self.reclaim.last_mut().expect("pushed").1
                }
            },
        };
        if out {
            *n += 1;
        } else {
            *n -= 1;
        }
    }
}

/// Does `job` fit its quota in `flavor` now, given the victims `removed` so far (their rules
/// counted in `taken`)? Rule P1:
/// only the fair-sharing rule (whose strategies bound shares) and the tier rule (whose
/// best-effort victims hold no quota) may leave the preemptor's queue borrowing more than
/// `before`, what it borrowed before the preemption; and victims taken from other queues
/// under the reclaim, priority or LAS rules require the preemptor to end within its nominal
/// quota. Without P1 a priority swap inside a borrowing queue (a larger job for a smaller one)
/// raises that queue's share, fair sharing takes the room back, and the three jobs go round.
#[allow(clippy::too_many_arguments)]
pub(crate) fn quota_ok(
    c: &Core,
    job: &PendingJob,
    flavor: Option<u16>,
    req: &crate::quota::Request,
    removed: &[usize],
    cands: &[Candidate],
    taken: &TakenRules,
    before: &crate::quota::Request,
) -> bool {
    let (Some(t), Some(f)) = (c.quota.as_ref(), flavor) else {
        return true;
    };
    match t.check(job.queue, f, req) {
        QuotaFit::Fits { borrows: false } => true,
        QuotaFit::Fits { borrows: true } => {
            let after = t.borrowed(job.queue, f, Some(req));
            let increases = after.iter().zip(before).any(|(a, b)| a > b);
            // Reclaim: the preemptor ends within the nominal quota of its subtree that the
            // victim is outside of (its own queue's in a one-level cohort), asked once per
            // victim queue.
            let ok = !((increases && (taken.within > 0 || taken.capacity_own > 0))
                || taken.capacity_other > 0
                || taken.reclaim.iter().any(|&(vq, n)| {
                    n > 0 && (vq == job.queue || !t.may_reclaim_from(job.queue, vq, f, req))
                }));
            debug_assert_eq!(
                ok,
                quota_ok_by_victim(c, job, f, req, removed, cands, increases),
                "the counted rules answer as the victims do"
            );
            ok
        }
        QuotaFit::Blocked { .. } => false,
    }
}

/// [`quota_ok`]'s verdict on a borrowing fit, asked of each victim in `removed` (debug
/// builds check the counted verdict against it).
fn quota_ok_by_victim(
    c: &Core,
    job: &PendingJob,
    f: u16,
    req: &crate::quota::Request,
    removed: &[usize],
    cands: &[Candidate],
    increases: bool,
) -> bool {
    let t = c.quota.as_ref().expect("called with quota");
    !removed.iter().map(|&i| &cands[i]).any(|v| match v.rule {
        PreemptReason::FairShare | PreemptReason::Tier | PreemptReason::ReclaimWhileBorrowing => {
            false
        }
        PreemptReason::WithinQueue => increases,
        PreemptReason::Reclaim => {
            let vq = running(c, v.id).job.queue;
            vq == job.queue || !t.may_reclaim_from(job.queue, vq, f, req)
        }
        PreemptReason::Priority | PreemptReason::Las => {
            increases || running(c, v.id).job.queue != job.queue
        }
    })
}

/// Takes a running job out of quota and the fleet (tentatively).
pub(crate) fn take_out(c: &mut Core, fleet: &mut FleetState, id: JobId) {
    release(fleet, &running(c, id).allocs);
    charge_quota(c, id, true);
}

/// Undoes [`take_out`].
pub(crate) fn put_back(c: &mut Core, fleet: &mut FleetState, id: JobId) {
    for a in &running(c, id).allocs {
        fleet
            .apply(a)
            .expect("restoring a running job's own binding cannot fail");
    }
    charge_quota(c, id, false);
}

/// Removes running job `id`'s usage from its queue's quota (`out`) or adds it back.
fn charge_quota(c: &mut Core, id: JobId, out: bool) {
    let r = running(c, id);
    let (q, f, req) = (r.job.queue, r.flavor, r.req);
    if let (Some(t), Some(f)) = (c.quota.as_mut(), f) {
        if out {
            t.remove_usage(q, f, &req);
        } else {
            t.add_usage(q, f, &req);
        }
    }
}

pub(crate) fn release(fleet: &mut FleetState, allocs: &[TaskAlloc]) {
    for a in allocs.iter().rev() {
        fleet
            .release(a)
            .expect("releasing a binding made or restored in this pass cannot fail");
    }
}

/// A set of victims that makes room, and where the preemptor then goes.
pub(crate) struct Plan {
    pub(crate) flavor: Option<u16>,
    pub(crate) cell: CellId,
    pub(crate) allocs: Vec<TaskAlloc>,
    pub(crate) victims: Vec<Removed>,
}

/// Commits a plan. Zero grace: victims stay released, are requeued and the preemptor starts
/// (returns true). Otherwise the plan is undone, victims are marked terminating and the
/// preemptor waits (returns false).
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply(
    c: &mut Core,
    pass: &mut PassState,
    fleet: &mut FleetState,
    job: &PendingJob,
    key: OrderKey,
    plan: Plan,
    out: &mut Vec<Decision>,
    cfg: &PreemptionConfig,
) -> bool {
    let Plan {
        flavor,
        cell,
        allocs,
        victims,
    } = plan;
    let now = c.now;
    if c.preempted_now.0 != now {
        c.preempted_now = (now, std::collections::BTreeSet::new());
    }
    c.preempted_now.1.extend(victims.iter().map(|v| v.id));
    for v in &victims {
        let seq = running(c, v.id).job.seq;
        *c.victim_counts.entry(seq).or_insert(0) += 1;
        let by = c.preempted_by.entry(seq).or_default();
        if !by.contains(&job.seq) {
            by.push(job.seq);
        }
    }
    if cfg.grace == SimDuration::ZERO {
        for v in &victims {
            let r = c
                .running
                .as_mut()
                .and_then(|reg| reg.get_mut(v.id.index()))
                .and_then(Option::take)
                .expect("a victim is tracked");
            c.untrack(v.id, r.job.queue);
            c.uncharge(r.job.queue, r.job.total_gpu_milli(), now);
            requeue_in_pass(pass, stopped_job(&r, now));
            for n in &mut c.nominated {
                n.victims.retain(|&x| x != v.id);
            }
            out.push(Decision::Preempt {
                job: v.id,
                preemptor: job.id,
                reason: v.rule,
                grace: SimDuration::ZERO,
            });
        }
        c.admit(job, flavor, &allocs);
        out.push(Decision::Start {
            job: job.id,
            cell,
            tasks: allocs,
        });
        // The victims may have freed more than the preemptor took: what did not fit earlier
        // in the pass may fit now, so no "did not fit" memory survives (else a later job
        // preempts although room is free, issue #16 item 6).
        pass.failed_exact.clear();
        pass.failed_single.clear();
        pass.failed_preempt.clear();
        // Verdicts rest on those memos.
        pass.verdicts.clear();
        return true;
    }
    release(fleet, &allocs);
    for v in victims.iter().rev() {
        put_back(c, fleet, v.id);
    }
    // The free part of the room is the preemptor's from now on (the victims' part is theirs
    // until they go): held by phantoms for the rest of this pass, and in later passes.
    let phantoms = crate::backfill::apply_phantom_allocs(fleet, allocs.iter());
    pass.held.extend(phantoms);
    let held = allocs;
    let release_at = now + cfg.grace;
    let mut ids = Vec::new();
    for v in &victims {
        let reg = c.running.as_mut().expect("victims are tracked");
        let r = reg[v.id.index()].as_mut().expect("a victim is tracked");
        r.evicting = Some(Eviction {
            at: now,
            release_at,
        });
        if let Some(ix) = c.las_victims.as_mut() {
            ix.remove(v.id);
        }
        c.running_sync(v.id);
        ids.push(v.id);
        out.push(Decision::Preempt {
            job: v.id,
            preemptor: job.id,
            reason: v.rule,
            grace: cfg.grace,
        });
    }
    let reserved = flavor
        .filter(|_| job.tier != crate::Tier::BestEffort)
        .map(|f| (f, request(job)));
    if let (Some(t), Some((f, req))) = (c.quota.as_mut(), reserved) {
        t.add_usage(job.queue, f, &req);
    }
    c.nominated.push(Nomination {
        preemptor: job.id,
        queue: job.queue,
        key,
        victims: ids,
        reserved,
        allocs: held,
    });
    false
}
