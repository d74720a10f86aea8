//! Preemption (the Kubernetes `PostFilter` extension point; Kueue's preemption): whom to evict
//! so that a job that cannot start now can, and at what cost.
//!
//! The rules are the scheduler's ([`PreemptionConfig`]); a queue may carry its own
//! within-queue, reclaim and borrow-within-cohort rules ([`QueuePreemption`], Kueue's
//! ClusterQueue `spec.preemption`), which replace them for its jobs as preemptors.
//!
//! # When
//! A job that fits neither quota nor the fleet now, is not best-effort, and has no victims
//! still terminating for it, looks for victims once per pass and per distinct requirement
//! (queue, priority, tier, shape, gang size, models, cells). A job that could never fit is
//! rejected at submit and never gets here (field case B01).
//!
//! # Who may be a victim (first matching rule)
//! A victim is running (not already terminating), never of a higher tier than the preemptor,
//! not preempted earlier at this instant (rule P3), never a job that preempted the
//! preemptor before (rule P2), and not preempted [`PreemptionConfig::victim_cap`] times
//! since the last job completion (rule P4). A victim taken for another queue (reclaim, fair
//! sharing) must leave its queue borrowing before it goes and, under the over-reclaim guard
//! ([`ReclaimGuard::Nominal`], the default), at or above its nominal quota after; a
//! candidate that fails a check is skipped and the search goes on (field case B24).
//!
//! | rule | victim | follows |
//! |---|---|---|
//! | [`PreemptReason::Tier`] | a job of a strictly lower tier (`tiers = true`) | Borg: best-effort is preempted first |
//! | [`PreemptReason::WithinQueue`] | same queue, lower priority (or also equal priority and newer) | Kueue `withinClusterQueue` |
//! | [`PreemptReason::Reclaim`] | another queue of the cohort tree while it borrows in the flavor, the preemptor staying within the nominal quota of its smallest subtree the victim is outside of (its own queue in a one-level cohort) | Kueue `reclaimWithinCohort`, PR #4806 (field cases B05, B06, B01, B22) |
//! | [`PreemptReason::ReclaimWhileBorrowing`] | another queue of the cohort tree while it borrows in the flavor, of lower priority (and at most the threshold), the reclaim policy allowing it; the preemptor may borrow | Kueue `borrowWithinCohort` (`ReclaimWhileBorrowing` in `classical/hierarchical_preemption.go`) |
//! | [`PreemptReason::Priority`] | a job of lower capacity rank, in any queue — with quota, only from a queue that borrows (Kueue `borrowWithinCohort`) | kube-scheduler `DefaultPreemption`, Volcano `preempt` (field case B10) |
//! | [`PreemptReason::Las`] | same, the rank being Tiresias' LAS queue after priority | Tiresias (NSDI'19) |
//! | [`PreemptReason::FairShare`] | another queue of the cohort tree while it borrows, if the fair-sharing strategy holds | Kueue KEP-1714 |
//!
//! The *capacity rank* is `(priority, −LAS queue)` with the components the configuration
//! turns on: one total order for the priority and LAS rules, so that neither can undo the
//! other (a running job's LAS queue only moves down, so a job preempted under LAS can come
//! back only after the preemptor has itself received more service: Tiresias' time-slicing).
//!
//! **Rule P1 (borrowing never grows by preemption)**: with quota, only the fair-sharing rule
//! (whose strategies bound shares), the tier rule (whose best-effort victims hold no quota)
//! and preemption while borrowing (Kueue's `borrowWithinCohort`, asked for by a queue's own
//! rules: [`QueuePreemption`]) may leave the preemptor's queue borrowing more than before; victims taken from other
//! queues under the reclaim, priority or LAS rules require the preemptor to end within its
//! nominal quota. Without P1, a priority swap inside a borrowing queue (a larger job for a
//! smaller one) raises that queue's share, fair sharing takes the room back, and three jobs go
//! round for ever (found by the `no_preemption_cycle` property test).
//!
//! # Victim order (the first are taken first), then minimization
//! 1. lower tier first; 2. borrowing queues first; 3. queues with the larger dominant resource
//!    share first; 4. other queues before the preemptor's own (Kueue `CandidatesOrdering`);
//! 5. lower priority first; 6. **less lost work first** (progress since the last checkpoint ×
//!    accelerators); 7. most recently started first; 8. larger input sequence first.
//!
//! Victims are removed one by one in that order — from quota and from the fleet — until the
//! preemptor fits quota *and* its whole gang can be placed (free capacity and victims'
//! capacity together: field case B10). Then, as Kueue's `minimalPreemptions` does, every
//! victim but the last is put back, latest first, if the preemptor still fits without it.
//! If no set of victims makes room, nothing is preempted. The order is [`VictimKey`] and the
//! take-then-minimize loop is [`minimal_victim_set`], both public: the extender's `preempt`
//! calls the same code.
//!
//! # Fair-sharing strategies
//! Strategies are tried in order, each a full round. Shares are dominant resource shares of
//! the queues ([`crate::quota::QuotaTree::drs`]), compared *exactly* (Kueue compares
//! truncated per-mille values, and equal truncated shares let two queues take turns):
//! * [`FairStrategy::LessThanOrEqualToFinalShare`] (rule S2-a): the preemptor's share after
//!   admission ≤ the victim queue's share after the victim leaves, which must be strictly
//!   below its share before (a victim that frees nothing the queue borrows is useless);
//! * [`FairStrategy::LessThanInitialShare`] (rule S2-b): the preemptor's share after admission
//!   < the victim queue's share before.
//!
//! # Why jobs never preempt each other in a loop
//! **Rule P4 bounds re-preemption for every mix of rules**: between two job completions a
//! job is a victim at most `victim_cap` times (default [`DEFAULT_VICTIM_CAP`] = 3). With `N`
//! jobs in the system, at most `N · victim_cap` preemptions can happen before some job
//! completes: the potential `Φ = Σ_jobs (victim_cap − preemptions since the last
//! completion)` is a non-negative integer that every preemption strictly decreases, and only
//! a completion (progress) restores it. So no cycle, of any length and across any rule kinds
//! (the three-job cycle: a within-queue swap, a fair-sharing eviction and one back),
//! can go on for ever; a job whose every candidate victim is exhausted waits with its
//! ordinary pending reason until a completion. `validate` refuses `victim_cap = 0`. The
//! rules below keep the common cases from using the budget at all:
//! * Between two queues and nothing else changing, fair sharing cannot swap back: `P`
//!   preempting `T` needs `s(P+p) ≤ s(T−t) < s(T)` (S2-a) or `s(P+p) < s(T)` (S2-b), and `T`'s
//!   job coming back by preempting `P`'s needs `s(T) ≤ s(P)` or `s(T) < s(P)`, yet
//!   `s(P) ≤ s(P+p) < s(T)`. Tier and capacity rank are strict orders; reclaim leaves the
//!   reclaimer within nominal (not a borrower, so not reclaimable); P1 keeps the other rules
//!   from feeding fair sharing.
//! * P2 makes it structural for any mix of rules and of admissions in between: a job never
//!   preempts a job that preempted it (the cycle check of kueue #6861, for two-job cycles).
//! * P3: a job is preempted at most once per instant, so the passes at one instant settle.
//! * A preemptor only preempts when it then fits, and the room it made stays its own: with a
//!   zero grace period it starts in the same pass, before a victim could take its place back
//!   (the B01 fault); with a grace period its request is reserved in its queue's quota and the
//!   free part of its planned placement is held by phantoms in every pass until its victims
//!   are gone (Kubernetes' nominated node); it is then tried first, and issues no more
//!   preemptions meanwhile (field case B03). Without the phantoms, other jobs took the free
//!   part during the grace period and the preemptor preempted again every few seconds without
//!   ever starting (found by the property tests).
//!
//! # Termination grace and requeue
//! With `grace = 0` victims are released and requeued in the same pass and the preemptor
//! starts at once. Otherwise victims keep their resources (and quota) for `grace`, stop
//! making progress, and are requeued when the caller releases them
//! ([`crate::Scheduler::on_released`]). A victim keeps the progress up to its last checkpoint
//! ([`crate::job::kept_progress`]).

use std::cmp::Reverse;

use crate::decision::PreemptReason;
use crate::fairshare::Share;
use crate::ids::JobId;
use crate::queue_order::Las;
use crate::time::SimDuration;

named_enum!(
    /// Preemption within a queue (Kueue `withinClusterQueue`).
    WithinQueue {
        /// Never.
        #[default]
        Never => "never",
        /// Jobs of lower priority.
        LowerPriority => "lower-priority",
        /// Jobs of lower priority, or of equal priority submitted later.
        LowerOrNewerEqualPriority => "lower-or-newer-equal-priority",
    }
);

named_enum!(
    /// Reclaiming nominal quota from borrowing queues of the cohort (Kueue
    /// `reclaimWithinCohort`).
    ReclaimWithinCohort {
        /// Never.
        #[default]
        Never => "never",
        /// Only borrowers' jobs of lower priority.
        LowerPriority => "lower-priority",
        /// Any borrower's job.
        Any => "any",
    }
);

named_enum!(
    /// The over-reclaim guard: may a victim taken for another queue (reclaim, fair sharing)
    /// take its own queue below its nominal quota?
    ReclaimGuard {
        /// No: a candidate whose removal would leave its queue below nominal in some
        /// resource is skipped and the search goes on (YuniKorn `preemption.go` guarantee
        /// check, Volcano `reclaim`; field case B24 and its variant).
        #[default]
        Nominal => "nominal",
        /// Yes: the victim's queue need only be borrowing before the victim leaves (Kueue
        /// classic preemption).
        Off => "off",
    }
);

named_enum!(
    /// Preempting, in other queues of the cohort, for a job that borrows (Kueue
    /// `borrowWithinCohort.policy`).
    BorrowWithinCohortPolicy {
        /// Never: a victim of another queue is taken only if the preemptor then stays within
        /// its nominal quota (the reclaim rule).
        #[default]
        Never => "never",
        /// Victims of lower priority (at most [`BorrowWithinCohort::max_priority_threshold`])
        /// even while the preemptor borrows.
        LowerPriority => "lower-priority",
    }
);

/// Kueue `borrowWithinCohort`: may a job preempt in other queues of its cohort while it
/// borrows? Only jobs that the reclaim policy also allows, of strictly lower priority than
/// the preemptor and at most `max_priority_threshold` (Kueue
/// `pkg/scheduler/preemption/classical/hierarchical_preemption.go`,
/// `ReclaimWhileBorrowing`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct BorrowWithinCohort {
    /// `never` (default) or `lower-priority`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub policy: BorrowWithinCohortPolicy,
    /// Only victims of at most this priority (`None`: any lower priority). Always
    /// serialized (as `null` when `None`): the live scheduler's binary snapshots cannot
    /// decode a struct that omits fields.
    #[cfg_attr(feature = "serde", serde(default))]
    pub max_priority_threshold: Option<i32>,
}

impl BorrowWithinCohort {
    /// Whether a victim of priority `victim` may be taken for a borrowing preemptor of
    /// priority `preemptor`.
    pub fn allows(&self, victim: i32, preemptor: i32) -> bool {
        self.policy == BorrowWithinCohortPolicy::LowerPriority
            && victim < preemptor
            && self.max_priority_threshold.is_none_or(|t| victim <= t)
    }
}

/// A queue's own preemption rules, Kueue's ClusterQueue `spec.preemption`: for a preemptor
/// of this queue they replace [`PreemptionConfig`]'s `within_queue`,
/// `reclaim_within_cohort` and `borrow_within_cohort`, and a fair-sharing victim of another
/// queue must also satisfy `reclaim_within_cohort` (Kueue's fair-sharing candidates are the
/// reclaim policy's: `findCandidates` in `pkg/scheduler/preemption/preemption.go`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct QueuePreemption {
    /// Kueue `withinClusterQueue`.
    pub within_queue: WithinQueue,
    /// Kueue `reclaimWithinCohort`.
    pub reclaim_within_cohort: ReclaimWithinCohort,
    /// Kueue `borrowWithinCohort`.
    pub borrow_within_cohort: BorrowWithinCohort,
}

named_enum!(
    /// Cluster-wide priority preemption for capacity (kube-scheduler, Volcano).
    CapacityPreemption {
        /// Never.
        #[default]
        Never => "never",
        /// Jobs of lower priority, in any queue.
        LowerPriority => "lower-priority",
    }
);

named_enum!(
    /// A Kueue fair-sharing preemption strategy (`fairSharing.preemptionStrategies`).
    FairStrategy {
        /// Rule S2-a.
        #[default]
        LessThanOrEqualToFinalShare => "less-than-or-equal-to-final-share",
        /// Rule S2-b.
        LessThanInitialShare => "less-than-initial-share",
    }
);

/// Preemption settings. [`PreemptionConfig::default`] preempts nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PreemptionConfig {
    /// Within a queue.
    pub within_queue: WithinQueue,
    /// Reclaiming nominal quota within the cohort.
    pub reclaim_within_cohort: ReclaimWithinCohort,
    /// Fair-sharing strategies, tried in order (empty: no fair-sharing preemption).
    pub fair_sharing: Vec<FairStrategy>,
    /// Cluster-wide priority preemption for capacity.
    pub capacity: CapacityPreemption,
    /// Higher tiers preempt lower ones.
    pub tiers: bool,
    /// Tiresias LAS preemption with these queues.
    pub las: Option<Las>,
    /// Termination grace period of victims.
    pub grace: SimDuration,
    /// The over-reclaim guard.
    pub reclaim_guard: ReclaimGuard,
    /// Rule P4: a job is a victim at most this many times between two job completions
    /// (anywhere in the fleet). [`DEFAULT_VICTIM_CAP`] unless set.
    pub victim_cap: u32,
    /// Preempting in other queues of the cohort while borrowing (Kueue
    /// `borrowWithinCohort`); set per queue ([`QueuePreemption`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub borrow_within_cohort: BorrowWithinCohort,
    /// A fair-sharing victim of another queue must satisfy `reclaim_within_cohort` too (set
    /// for a queue with its own rules, [`QueuePreemption`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub fair_sharing_needs_reclaim: bool,
}

impl WithinQueue {
    /// Could this rule give a preemptor of `priority` a victim among running jobs of its
    /// queue whose least priority is `queue_min` (`None`: it has none)? A necessary
    /// condition: under [`WithinQueue::LowerOrNewerEqualPriority`] an equal priority
    /// counts, whatever the submit times.
    pub(crate) fn could_take(self, queue_min: Option<i32>, priority: i32) -> bool {
        match self {
            WithinQueue::Never => false,
            WithinQueue::LowerPriority => queue_min.is_some_and(|m| m < priority),
            WithinQueue::LowerOrNewerEqualPriority => queue_min.is_some_and(|m| m <= priority),
        }
    }
}

impl PreemptionConfig {
    /// True without the tier rule, capacity preemption by priority, the LAS rule and
    /// preemption while borrowing: a victim can then only come from the within-queue,
    /// reclaim and fair-sharing rules, which look at the queues alone.
    pub(crate) fn queue_rules_only(&self) -> bool {
        !self.tiers
            && self.capacity != CapacityPreemption::LowerPriority
            && self.las.is_none()
            && self.borrow_within_cohort.policy == BorrowWithinCohortPolicy::Never
    }

    /// These rules for a preemptor of a queue with its own rules `q` (`None`: as they are).
    pub fn for_queue(&self, q: Option<&QueuePreemption>) -> PreemptionConfig {
        let mut c = self.clone();
        if let Some(q) = q {
            c.within_queue = q.within_queue;
            c.reclaim_within_cohort = q.reclaim_within_cohort;
            c.borrow_within_cohort = q.borrow_within_cohort;
            c.fair_sharing_needs_reclaim = true;
        }
        c
    }

    /// Whether the reclaim policy lets a preemptor of priority `preemptor` take a victim of
    /// priority `victim` in another queue of the cohort.
    pub(crate) fn reclaim_allows(&self, victim: i32, preemptor: i32) -> bool {
        match self.reclaim_within_cohort {
            ReclaimWithinCohort::Never => false,
            ReclaimWithinCohort::LowerPriority => victim < preemptor,
            ReclaimWithinCohort::Any => true,
        }
    }

    /// Whether the fair-sharing rule may consider a victim of priority `victim` in another
    /// queue of the cohort (the strategies decide after).
    pub(crate) fn fair_share_allows(&self, victim: i32, preemptor: i32) -> bool {
        !self.fair_sharing.is_empty()
            && (!self.fair_sharing_needs_reclaim || self.reclaim_allows(victim, preemptor))
    }

    /// Whether preemption while borrowing could take a victim of priority `victim` in
    /// another queue of the cohort (Kueue: the reclaim policy, and `borrowWithinCohort`).
    pub(crate) fn borrow_allows(&self, victim: i32, preemptor: i32) -> bool {
        self.reclaim_allows(victim, preemptor)
            && self.borrow_within_cohort.allows(victim, preemptor)
    }
}

/// Rule P4's default: a job is preempted at most 3 times between two completions.
pub const DEFAULT_VICTIM_CAP: u32 = 3;

impl Default for PreemptionConfig {
    fn default() -> PreemptionConfig {
        PreemptionConfig {
            within_queue: WithinQueue::default(),
            reclaim_within_cohort: ReclaimWithinCohort::default(),
            fair_sharing: Vec::new(),
            capacity: CapacityPreemption::default(),
            tiers: false,
            las: None,
            grace: SimDuration::ZERO,
            reclaim_guard: ReclaimGuard::default(),
            victim_cap: DEFAULT_VICTIM_CAP,
            borrow_within_cohort: BorrowWithinCohort::default(),
            fair_sharing_needs_reclaim: false,
        }
    }
}

/// One eligible victim with its sort key.
#[derive(Clone, Copy)]
pub(crate) struct Candidate {
    pub(crate) id: JobId,
    pub(crate) rule: PreemptReason,
    /// Its place in the victim order. Kept by debug builds only, which check the search's
    /// order against it (a release build orders by the listing's sort keys, and a search
    /// lists every running job of the queues it may draw from).
    #[cfg(debug_assertions)]
    pub(crate) key: VictimKey,
}

/// One victim's place in the simulator's victim order (module docs, "Victim order"): the
/// first in [`Ord`] order are taken first. Every field is a sort component, in order of
/// significance; a caller that does not know one (the extender, from pods) sets it to the
/// same value for every candidate, so that it orders nothing.
///
/// Source: Kueue `CandidatesOrdering` (components 1–4, 7) and the simulator's rules (5, 6, 8);
/// component 3 is compared exactly, where Kueue truncates to per mille.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct VictimKey {
    /// 1. The victim's tier ([`crate::Tier`] as `u8`): lower first.
    pub tier: u8,
    /// 2. Whether the victim's queue borrows in its flavor: borrowers first.
    pub borrowing: bool,
    /// 3. The victim queue's dominant resource share, exact
    ///    ([`crate::fairshare::Share`]; not rounded: tiny shares must not tie): larger
    ///    first.
    pub share: Share,
    /// 4. Whether the victim is of the preemptor's own queue: other queues first.
    pub same_queue: bool,
    /// 5. The victim's priority: lower first.
    pub priority: i32,
    /// 6. Work lost by preempting it, in GPU-milli × ms (progress since its last checkpoint
    ///    × accelerators): less first.
    pub lost_gpu_milli_ms: u128,
    /// 7. When it started (ms of simulated time, or any value increasing with the start
    ///    time): most recent first.
    pub start_ms: u64,
    /// 8. Its input sequence (any stable id): larger first.
    pub seq: u64,
}

impl VictimKey {
    /// The key as an ascending tuple (the order of [`Ord`]).
    #[allow(clippy::type_complexity)]
    fn tuple(
        &self,
    ) -> (
        u8,
        bool,
        Reverse<Share>,
        bool,
        i32,
        u128,
        Reverse<u64>,
        Reverse<u64>,
    ) {
        (
            self.tier,
            !self.borrowing,
            Reverse(self.share),
            self.same_queue,
            self.priority,
            self.lost_gpu_milli_ms,
            Reverse(self.start_ms),
            Reverse(self.seq),
        )
    }
}

impl Ord for VictimKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.tuple().cmp(&other.tuple())
    }
}

impl PartialOrd for VictimKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The state a victim search changes tentatively: the simulator's quota tree and fleet, or
/// the extender's copy of one node. [`minimal_victim_set`] drives it.
pub trait VictimTrial {
    /// A victim handle (an index into the caller's candidates).
    type Victim: Copy;
    /// May `v` be taken now, given what was taken before? (The simulator re-checks the
    /// reclaim and fair-sharing conditions here.) Default: always.
    fn eligible(&mut self, v: Self::Victim) -> bool {
        let _ = v;
        true
    }
    /// Frees `v`'s resources (and quota).
    fn take_out(&mut self, v: Self::Victim);
    /// Undoes [`VictimTrial::take_out`] for `v`, after releasing the preemptor's tentative
    /// placement if there is one.
    fn put_back(&mut self, v: Self::Victim);
    /// Taking victims: does the preemptor fit now, with `taken` out? On `true` it may hold a
    /// tentative placement.
    fn fits(&mut self, taken: &[Self::Victim]) -> bool;
    /// Minimizing: does the preemptor still fit with only `taken` out (a victim was just put
    /// back)? Default: [`VictimTrial::fits`].
    fn still_fits(&mut self, taken: &[Self::Victim]) -> bool {
        self.fits(taken)
    }
    /// After a failed [`VictimTrial::still_fits`] and the victim taken out again: restore the
    /// preemptor's placement with `taken` out (it fitted with this very set). Default: none.
    fn refit(&mut self, taken: &[Self::Victim]) {
        let _ = taken;
    }
}

/// The simulator's victim selection, shared with the extender: victims are taken in the
/// order given (sort them by [`VictimKey`]) until the preemptor fits; then, as Kueue's
/// `minimalPreemptions` (`fillBackWorkloads`) does, every victim but the last is put back,
/// latest first, if the preemptor still fits without it. Returns the victims kept, in
/// victim order, with `trial` left in the state where they are out (and the preemptor
/// placed, if [`VictimTrial::fits`] places it); `None`, with every victim put back, when even
/// all eligible victims do not make room.
pub fn minimal_victim_set<T: VictimTrial>(
    trial: &mut T,
    candidates: impl IntoIterator<Item = T::Victim>,
) -> Option<Vec<T::Victim>> {
    let mut candidates = candidates.into_iter();
    minimal_victim_set_from(trial, |_| candidates.next())
}

/// [`minimal_victim_set`] with the candidates drawn one by one, in victim order, by `next`,
/// which may read the trial (a search over an index of the running jobs that stops at the
/// first victim set that makes room).
pub fn minimal_victim_set_from<T: VictimTrial>(
    trial: &mut T,
    mut next: impl FnMut(&mut T) -> Option<T::Victim>,
) -> Option<Vec<T::Victim>> {
    let mut taken: Vec<T::Victim> = Vec::new();
    let mut fit = false;
    while let Some(v) = next(trial) {
        if !trial.eligible(v) {
            continue;
        }
        trial.take_out(v);
        taken.push(v);
        if trial.fits(&taken) {
            fit = true;
            break;
        }
    }
    if !fit {
        for &v in taken.iter().rev() {
            trial.put_back(v);
        }
        return None;
    }
    let mut i = taken.len().saturating_sub(1);
    while i > 0 {
        i -= 1;
        trial.put_back(taken[i]);
        let kept = taken.remove(i);
        if !trial.still_fits(&taken) {
            trial.take_out(kept);
            taken.insert(i, kept);
            trial.refit(&taken);
        }
    }
    Some(taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            "lower-or-newer-equal-priority".parse::<WithinQueue>(),
            Ok(WithinQueue::LowerOrNewerEqualPriority)
        );
        assert!("sometimes"
            .parse::<ReclaimWithinCohort>()
            .unwrap_err()
            .contains("never, lower-priority, any"));
        assert_eq!(
            FairStrategy::LessThanInitialShare.as_str(),
            "less-than-initial-share"
        );
    }
}
