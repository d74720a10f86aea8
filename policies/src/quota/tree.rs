//! The quota tree: Kueue's resource-node arithmetic over queues and cohorts.

use std::collections::BTreeMap;

use super::{Flavor, QuotaError, QuotaResource, QuotaSpec};
use crate::decision::PendingReason;
use crate::fairshare::Share;
use crate::ids::QueueId;
use crate::resources::ModelSet;

/// A request or an amount per [`QuotaResource`]: GPU-milli, milli-cores, MiB.
pub type Request = [u64; 3];

/// Levels of the cohort tree a [`FairKey`] orders by (the top ones).
pub const FAIR_KEY_LEVELS: usize = 4;

/// A fair-sharing admission key ([`QuotaTree::fair_order_key`]): exact shares per level,
/// the top level first; compared lexicographically, smaller first.
pub type FairKey = [Share; FAIR_KEY_LEVELS];

const R: usize = 3;

/// Whether a request fits a queue's quota in one flavor now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaFit {
    /// It fits (rule Q1); `borrows` when it takes the queue above its nominal quota (rule Q2).
    Fits {
        /// True when admitting it borrows from the cohort.
        borrows: bool,
    },
    /// It does not fit now.
    Blocked {
        /// Why ([`PendingReason::OverQuota`], [`PendingReason::BorrowingLimit`] or
        /// [`PendingReason::CohortQuota`]).
        reason: PendingReason,
        /// True when the queue would stay within its nominal quota (rule Q3): the cohort
        /// has lent that quota out, and preempting borrowers can take it back.
        within_nominal: bool,
    },
}

#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Node {
    name: String,
    parent: Option<usize>,
    /// Path length from the root (the root has depth 0).
    depth: usize,
    weight_milli: u64,
    /// Per slot: limited (and charged) here. Cohorts: every slot.
    declared: Vec<bool>,
    nominal: Vec<u64>,
    borrowing_limit: Vec<Option<u64>>,
    lending_limit: Vec<Option<u64>>,
    subtree: Vec<u64>,
    usage: Vec<u64>,
    /// Queues: declared flavors in order.
    flavors: Vec<u16>,
}

impl Node {
    /// Kueue `guaranteedQuota`: the part of the subtree quota that is never lent.
    fn guaranteed(&self, s: usize) -> u64 {
        match self.lending_limit[s] {
            Some(l) => self.subtree[s].saturating_sub(l),
            None => 0,
        }
    }

    /// Kueue `LocalAvailable`: guaranteed quota not in use.
    fn local_available(&self, s: usize) -> u64 {
        self.guaranteed(s).saturating_sub(self.usage[s])
    }
}

/// Queues and cohorts with their quotas and usage. See the [module docs](super).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct QuotaTree {
    flavors: Vec<Flavor>,
    nodes: Vec<Node>,
    /// Node of each queue (by [`QueueId`]), if it takes part in quota.
    queue_node: Vec<Option<usize>>,
}

impl QuotaTree {
    /// Builds the tree and its subtree quotas.
    ///
    /// # Errors
    /// [`QuotaError`] for a duplicate name, an unknown or cyclic cohort, an unknown or
    /// repeated flavor, a borrowing or lending limit without a cohort, or a lending limit
    /// above nominal.
    pub fn new(spec: &QuotaSpec) -> Result<QuotaTree, QuotaError> {
        let nf = spec.flavors.len();
        let slots = nf * R;
        let flavor_ix: BTreeMap<&str, usize> = spec
            .flavors
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_str(), i))
            .collect();
        let mut cohort_ix: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, c) in spec.cohorts.iter().enumerate() {
            if cohort_ix.insert(c.name.as_str(), i).is_some() {
                return Err(QuotaError::DuplicateName(c.name.clone()));
            }
        }
        let mut queue_names = std::collections::BTreeSet::new();
        for (_, q) in &spec.queues {
            if !queue_names.insert(q.name.as_str()) {
                return Err(QuotaError::DuplicateName(q.name.clone()));
            }
        }
        let all = spec
            .cohorts
            .iter()
            .map(|c| (c, false))
            .chain(spec.queues.iter().map(|(_, q)| (q, true)));
        let mut nodes = Vec::new();
        for (n, is_queue) in all {
            let parent =
                match &n.parent {
                    None => None,
                    Some(p) => Some(*cohort_ix.get(p.as_str()).ok_or_else(|| {
                        QuotaError::UnknownCohort {
                            node: n.name.clone(),
                            cohort: p.clone(),
                        }
                    })?),
                };
            let mut node = Node {
                name: n.name.clone(),
                parent,
                depth: 0,
                weight_milli: n.weight_milli,
                declared: vec![!is_queue; slots],
                nominal: vec![0; slots],
                borrowing_limit: vec![None; slots],
                lending_limit: vec![None; slots],
                subtree: vec![0; slots],
                usage: vec![0; slots],
                flavors: Vec::new(),
            };
            for fq in &n.flavors {
                let f = *flavor_ix.get(fq.flavor.as_str()).ok_or_else(|| {
                    QuotaError::UnknownFlavor {
                        node: n.name.clone(),
                        flavor: fq.flavor.clone(),
                    }
                })?;
                if node.flavors.contains(&(f as u16)) {
                    return Err(QuotaError::DuplicateFlavor {
                        node: n.name.clone(),
                        flavor: fq.flavor.clone(),
                    });
                }
                node.flavors.push(f as u16);
                for (r, rq) in fq.resources.iter().enumerate() {
                    let Some(rq) = rq else { continue };
                    let s = f * R + r;
                    let limit_err = |limit| QuotaError::LimitWithoutCohort {
                        node: n.name.clone(),
                        flavor: fq.flavor.clone(),
                        limit,
                    };
                    if parent.is_none() && rq.borrowing_limit.is_some() {
                        return Err(limit_err("borrowing_limit"));
                    }
                    if parent.is_none() && rq.lending_limit.is_some() {
                        return Err(limit_err("lending_limit"));
                    }
                    if rq.lending_limit.is_some_and(|l| l > rq.nominal) {
                        return Err(QuotaError::LendingAboveNominal {
                            node: n.name.clone(),
                            flavor: fq.flavor.clone(),
                        });
                    }
                    node.declared[s] = true;
                    node.nominal[s] = rq.nominal;
                    node.borrowing_limit[s] = rq.borrowing_limit;
                    node.lending_limit[s] = rq.lending_limit;
                }
            }
            nodes.push(node);
        }
        // Depths, with a cycle check: a chain of parents longer than the number of cohorts
        // loops.
        for i in 0..nodes.len() {
            let mut depth = 0;
            let mut cur = nodes[i].parent;
            while let Some(p) = cur {
                depth += 1;
                if depth > spec.cohorts.len() {
                    return Err(QuotaError::CohortCycle(nodes[p].name.clone()));
                }
                cur = nodes[p].parent;
            }
            nodes[i].depth = depth;
        }
        let mut queue_node = Vec::new();
        for (i, (q, _)) in spec.queues.iter().enumerate() {
            if q.index() >= queue_node.len() {
                queue_node.resize(q.index() + 1, None);
            }
            queue_node[q.index()] = Some(spec.cohorts.len() + i);
        }
        let mut tree = QuotaTree {
            flavors: spec.flavors.clone(),
            nodes,
            queue_node,
        };
        tree.compute_subtrees();
        Ok(tree)
    }

    /// Kueue `updateCohortResourceNode`: subtree quota = own nominal + what each child
    /// lends (its subtree minus its guaranteed part), deepest nodes first.
    fn compute_subtrees(&mut self) {
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(self.nodes[i].depth), i));
        for n in &mut self.nodes {
            n.subtree.clone_from(&n.nominal);
        }
        for i in order {
            if let Some(p) = self.nodes[i].parent {
                for s in 0..self.slots() {
                    let lent = self.nodes[i].subtree[s] - self.nodes[i].guaranteed(s);
                    self.nodes[p].subtree[s] += lent;
                }
            }
        }
    }

    fn slots(&self) -> usize {
        self.flavors.len() * R
    }

    /// The flavors.
    pub fn flavors(&self) -> &[Flavor] {
        &self.flavors
    }

    /// The accelerator models flavor `f` stands for.
    pub fn flavor_models(&self, f: u16) -> ModelSet {
        self.flavors[f as usize].models
    }

    fn node_of(&self, q: QueueId) -> Option<usize> {
        self.queue_node.get(q.index()).copied().flatten()
    }

    /// True when queue `q` takes part in quota.
    pub fn has_queue(&self, q: QueueId) -> bool {
        self.node_of(q).is_some()
    }

    /// The flavors queue `q` may use, in the order they are tried; `None` when the queue takes
    /// no part in quota.
    pub fn queue_flavors(&self, q: QueueId) -> Option<&[u16]> {
        self.node_of(q).map(|n| self.nodes[n].flavors.as_slice())
    }

    /// Kueue `available`: how much of slot `s` node `n` can take now, walking up the path and
    /// applying borrowing limits; negative after over-admission.
    fn available(&self, n: usize, s: usize) -> i128 {
        let node = &self.nodes[n];
        let Some(p) = node.parent else {
            return node.subtree[s] as i128 - node.usage[s] as i128;
        };
        let mut parent_available = self.available(p, s);
        if let Some(bl) = node.borrowing_limit[s] {
            let stored_in_parent = node.subtree[s] as i128 - node.guaranteed(s) as i128;
            let used_in_parent = (node.usage[s] as i128 - node.guaranteed(s) as i128).max(0);
            parent_available = parent_available.min(stored_in_parent - used_in_parent + bl as i128);
        }
        node.local_available(s) as i128 + parent_available
    }

    /// Kueue `potentialAvailable`: the most of slot `s` node `n` could ever take (no usage
    /// anywhere), respecting borrowing limits.
    fn potential_available(&self, n: usize, s: usize) -> u64 {
        let node = &self.nodes[n];
        let Some(p) = node.parent else {
            return node.subtree[s];
        };
        let mut available = node.guaranteed(s) + self.potential_available(p, s);
        if let Some(bl) = node.borrowing_limit[s] {
            available = available.min(node.subtree[s] + bl);
        }
        available
    }

    /// Queue `q`'s share of `req` in flavor `f` per slot (zero where the queue does not limit
    /// the resource).
    fn slots_of(&self, n: usize, f: u16, req: &Request) -> impl Iterator<Item = (usize, u64)> + '_ {
        let node = &self.nodes[n];
        let base = f as usize * R;
        let req = *req;
        (0..R)
            .map(move |r| (base + r, req[r]))
            .filter(move |&(s, _)| node.declared[s])
    }

    /// Could `req` ever be admitted in flavor `f` of queue `q`, with nothing else running?
    /// (Kueue `potentialAvailable`; used to reject at submit a job that can never fit, field
    /// case B01.)
    pub fn can_ever_fit(&self, q: QueueId, f: u16, req: &Request) -> bool {
        let Some(n) = self.node_of(q) else {
            return true;
        };
        self.slots_of(n, f, req)
            .all(|(s, v)| v <= self.potential_available(n, s))
    }

    /// Checks `req` against queue `q`'s quota in flavor `f`, by these rules:
    ///
    /// * **Q1 — fits**: in every resource the flavor limits, `req ≤ available(q)` (Kueue
    ///   `available`, which walks the cohort path applying borrowing limits).
    /// * **Q2 — borrows**: in some resource, `usage(q) + req > nominal(q)`.
    /// * **Q3 — within nominal**: in every limited resource, `usage(q) + req ≤ nominal(q)`;
    ///   when it does not fit but Q3 holds, the cohort has lent the queue's quota out and
    ///   preemption may reclaim it (Kueue `reclaimWithinCohort`).
    ///
    /// A blocked request's reason: no cohort → [`PendingReason::OverQuota`]; above the
    /// queue's own borrowing limit → [`PendingReason::BorrowingLimit`]; otherwise
    /// [`PendingReason::CohortQuota`]. A queue without quota always fits.
    pub fn check(&self, q: QueueId, f: u16, req: &Request) -> QuotaFit {
        let Some(n) = self.node_of(q) else {
            return QuotaFit::Fits { borrows: false };
        };
        let node = &self.nodes[n];
        let mut borrows = false;
        let mut within_nominal = true;
        let mut reason: Option<PendingReason> = None;
        for (s, v) in self.slots_of(n, f, req) {
            let after = node.usage[s].saturating_add(v);
            let over_nominal = after > node.subtree[s];
            borrows |= over_nominal;
            within_nominal &= !over_nominal;
            if (v as i128) <= self.available(n, s) {
                continue;
            }
            let r = if node.parent.is_none() {
                PendingReason::OverQuota
            } else if node.borrowing_limit[s].is_some_and(|bl| after > node.subtree[s] + bl) {
                PendingReason::BorrowingLimit
            } else {
                PendingReason::CohortQuota
            };
            reason = Some(reason.map_or(r, |old| severity_max(old, r)));
        }
        match reason {
            None => QuotaFit::Fits { borrows },
            Some(reason) => QuotaFit::Blocked {
                reason,
                within_nominal,
            },
        }
    }

    /// Rule Q3 after admission: would `usage(q) + req ≤ nominal(q)` hold in every resource
    /// flavor `f` limits? The reclaiming side of Kueue's `reclaimWithinCohort`.
    pub fn within_nominal_after(&self, q: QueueId, f: u16, req: &Request) -> bool {
        let Some(n) = self.node_of(q) else {
            return true;
        };
        let node = &self.nodes[n];
        self.slots_of(n, f, req)
            .all(|(s, v)| node.usage[s].saturating_add(v) <= node.subtree[s])
    }

    /// Would `req` keep node `n` within its subtree's nominal quota in flavor `f`, in every
    /// resource queue `q` (whose ancestor `n` is) limits?
    fn node_within_nominal_after(&self, q: usize, n: usize, f: u16, req: &Request) -> bool {
        let node = &self.nodes[n];
        self.slots_of(q, f, req)
            .all(|(s, v)| node.usage[s] + v <= node.subtree[s])
    }

    /// The reclaiming side of `reclaimWithinCohort` in a cohort tree (Kueue PR #4806, field
    /// case B22): may queue `q`, admitting `req` in flavor `f`, reclaim from queue `victim`?
    /// Yes when `req` fits within the nominal quota of the smallest subtree that holds `q`
    /// and not `victim` (the child, on `q`'s side, of their lowest common cohort): quota
    /// declared on a cohort is its queues' to reclaim from outside it. In a one-level
    /// cohort that subtree is `q` itself ([`QuotaTree::within_nominal_after`]).
    pub fn may_reclaim_from(&self, q: QueueId, victim: QueueId, f: u16, req: &Request) -> bool {
        let (Some(n), Some(v)) = (self.node_of(q), self.node_of(victim)) else {
            return false;
        };
        let mut a = n;
        while let Some(p) = self.nodes[a].parent {
            if self.is_ancestor(p, v) {
                return self.node_within_nominal_after(n, a, f, req);
            }
            a = p;
        }
        false
    }

    /// Could queue `q` reclaim from some queue outside one of its subtrees: does `req` fit
    /// the nominal quota of `q` or of one of its cohorts below the root?
    /// ([`QuotaTree::may_reclaim_from`] for some victim queue; a necessary condition.)
    pub fn may_reclaim_somewhere(&self, q: QueueId, f: u16, req: &Request) -> bool {
        let Some(n) = self.node_of(q) else {
            return true;
        };
        let mut a = n;
        while self.nodes[a].parent.is_some() {
            if self.node_within_nominal_after(n, a, f, req) {
                return true;
            }
            a = self.nodes[a].parent.expect("checked");
        }
        false
    }

    /// Is node `a` an ancestor of (or equal to) node `n`?
    fn is_ancestor(&self, a: usize, mut n: usize) -> bool {
        loop {
            if n == a {
                return true;
            }
            match self.nodes[n].parent {
                Some(p) => n = p,
                None => return false,
            }
        }
    }

    /// What queue `q` borrows in flavor `f` per resource (`max(0, usage − nominal)`), with
    /// `req` added when given; zero for a resource the flavor does not limit.
    pub fn borrowed(&self, q: QueueId, f: u16, add: Option<&Request>) -> Request {
        let mut out = [0; 3];
        let Some(n) = self.node_of(q) else { return out };
        let node = &self.nodes[n];
        for (r, o) in out.iter_mut().enumerate() {
            let s = f as usize * R + r;
            if node.declared[s] {
                let u = node.usage[s].saturating_add(add.map_or(0, |a| a[r]));
                *o = u.saturating_sub(node.subtree[s]);
            }
        }
        out
    }

    /// The over-reclaim guard ([`crate::preemption::ReclaimGuard::Nominal`]): after `req`
    /// leaves queue `q`'s usage in flavor `f`, is `usage ≥ nominal` still true in every
    /// resource of `req` the flavor limits and that was at or above nominal before? (A
    /// queue already below nominal in a resource does not block a victim for it.)
    pub fn keeps_nominal_after_removal(&self, q: QueueId, f: u16, req: &Request) -> bool {
        let Some(n) = self.node_of(q) else {
            return true;
        };
        let node = &self.nodes[n];
        self.slots_of(n, f, req).all(|(s, v)| {
            v == 0 || node.usage[s] < node.subtree[s] || node.usage[s] - v >= node.subtree[s]
        })
    }

    /// Is queue `q` borrowing in flavor `f`: `usage > nominal` in some resource? A reclaim
    /// victim's queue must be (Kueue: candidates from other ClusterQueues only while they
    /// borrow).
    pub fn is_borrowing(&self, q: QueueId, f: u16) -> bool {
        let Some(n) = self.node_of(q) else {
            return false;
        };
        let node = &self.nodes[n];
        let base = f as usize * R;
        (base..base + R).any(|s| node.declared[s] && node.usage[s] > node.subtree[s])
    }

    /// The queues that take part in quota, ascending.
    pub fn queues(&self) -> impl Iterator<Item = QueueId> + '_ {
        self.queue_node
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_some())
            .map(|(q, _)| QueueId(q as u32))
    }

    /// Is queue `q` borrowing in any flavor?
    pub fn borrows_any(&self, q: QueueId) -> bool {
        self.node_of(q).is_some_and(|n| {
            let node = &self.nodes[n];
            (0..node.usage.len()).any(|s| node.declared[s] && node.usage[s] > node.subtree[s])
        })
    }

    /// True when both queues are in the same cohort tree (same root), so one may borrow what
    /// the other lends.
    pub fn same_tree(&self, a: QueueId, b: QueueId) -> bool {
        match (self.node_of(a), self.node_of(b)) {
            (Some(x), Some(y)) => {
                let (rx, ry) = (self.root(x), self.root(y));
                self.nodes[rx].parent.is_none() && rx == ry && self.nodes[x].parent.is_some()
            }
            _ => false,
        }
    }

    fn root(&self, mut n: usize) -> usize {
        while let Some(p) = self.nodes[n].parent {
            n = p;
        }
        n
    }

    /// Kueue `addUsage`: charges `req` to queue `q` in flavor `f`; the part beyond each node's
    /// free guaranteed quota is stored in its parent. `O(depth)`.
    pub fn add_usage(&mut self, q: QueueId, f: u16, req: &Request) {
        let Some(n) = self.node_of(q) else { return };
        let base = f as usize * R;
        for (r, &v) in req.iter().enumerate() {
            let s = base + r;
            if v == 0 || !self.nodes[n].declared[s] {
                continue;
            }
            let mut cur = Some(n);
            let mut val = v;
            while let Some(i) = cur {
                let local = self.nodes[i].local_available(s);
                self.nodes[i].usage[s] += val;
                if val <= local {
                    break;
                }
                val -= local;
                cur = self.nodes[i].parent;
            }
        }
    }

    /// Kueue `removeUsage`: the inverse of [`QuotaTree::add_usage`].
    ///
    /// # Panics
    /// If a node's usage would go negative: the caller's accounting is broken.
    pub fn remove_usage(&mut self, q: QueueId, f: u16, req: &Request) {
        let Some(n) = self.node_of(q) else { return };
        let base = f as usize * R;
        for (r, &v) in req.iter().enumerate() {
            let s = base + r;
            if v == 0 || !self.nodes[n].declared[s] {
                continue;
            }
            let mut cur = Some(n);
            let mut val = v;
            while let Some(i) = cur {
                let node = &mut self.nodes[i];
                let stored_in_parent = node.usage[s] as i128 - node.guaranteed(s) as i128;
                node.usage[s] = node.usage[s]
                    .checked_sub(val)
                    .expect("quota usage would go negative");
                if stored_in_parent <= 0 {
                    break;
                }
                val = val.min(stored_in_parent as u64);
                cur = node.parent;
            }
        }
    }

    /// Kueue `dominantResourceShare` of node `n`, with `delta` (flavor, amount, `true` to
    /// add) applied to its usage: per resource, the amount borrowed above the subtree quota
    /// (summed over flavors) over what the parent can lend (its subtree quota, summed over
    /// flavors), the largest ratio, divided by the weight. Zero for a root or a node that
    /// borrows nothing; infinite for weight zero. Exact; see [`Share`].
    fn drs_node(&self, n: usize, delta: Option<(u16, &Request, bool)>) -> Share {
        self.drs_node_over(n, delta, [true; R])
    }

    /// [`QuotaTree::drs_node`] over the resources `over` selects only.
    fn drs_node_over(
        &self,
        n: usize,
        delta: Option<(u16, &Request, bool)>,
        over: [bool; R],
    ) -> Share {
        let node = &self.nodes[n];
        let Some(p) = node.parent else {
            return Share::ZERO;
        };
        if node.weight_milli == 0 {
            return Share::INFINITE;
        }
        let parent = &self.nodes[p];
        let mut best = Share::ZERO;
        for r in (0..R).filter(|&r| over[r]) {
            let mut borrowed: u128 = 0;
            let mut lendable: u128 = 0;
            for f in 0..self.flavors.len() {
                let s = f * R + r;
                lendable += parent.subtree[s] as u128;
                if !node.declared[s] {
                    continue;
                }
                let mut u = node.usage[s] as i128;
                if let Some((df, req, add)) = delta {
                    if df as usize == f {
                        u += if add {
                            req[r] as i128
                        } else {
                            -(req[r] as i128)
                        };
                    }
                }
                let b = u - node.subtree[s] as i128;
                if b > 0 {
                    borrowed += b as u128;
                }
            }
            if borrowed > 0 && lendable > 0 {
                let sh = Share::new(borrowed * 1000, lendable * node.weight_milli as u128);
                if sh > best {
                    best = sh;
                }
            }
        }
        best
    }

    /// Dominant resource share of queue `q` now ([`Share::ZERO`] without quota).
    pub fn drs(&self, q: QueueId) -> Share {
        self.node_of(q)
            .map_or(Share::ZERO, |n| self.drs_node(n, None))
    }

    /// Dominant resource share of queue `q` if `req` were added (`add`) to or removed from its
    /// usage in flavor `f`: the "new share" of Kueue's fair-sharing preemption rules.
    pub fn drs_with(&self, q: QueueId, f: u16, req: &Request, add: bool) -> Share {
        self.node_of(q)
            .map_or(Share::ZERO, |n| self.drs_node(n, Some((f, req, add))))
    }

    /// The fair-sharing order key of queue `q` admitting `req` in flavor `f`: the dominant
    /// resource shares after admission of each node on the path from the top of its cohort
    /// tree down to the queue, the top level first (up to [`FAIR_KEY_LEVELS`] levels; deeper
    /// ones are left out), levels beyond the path [`Share::ZERO`]. Smaller keys go first:
    /// lexicographic comparison is Kueue's tournament (KEP-1714 hierarchical fair sharing),
    /// which picks at each cohort the child with the lowest share. The shares are exact
    /// fractions (not Kueue's truncated per-mille: tiny shares would tie and first-come
    /// order decide, and scaling every weight by 1,000 could flip the order).
    pub fn fair_order_key(&self, q: QueueId, f: u16, req: &Request) -> FairKey {
        let mut key = [Share::ZERO; FAIR_KEY_LEVELS];
        let Some(n) = self.node_of(q) else { return key };
        let mut path = Vec::with_capacity(FAIR_KEY_LEVELS);
        let mut cur = n;
        while self.nodes[cur].parent.is_some() {
            path.push(cur);
            cur = self.nodes[cur].parent.expect("checked");
        }
        path.reverse();
        for (level, &node) in path.iter().take(FAIR_KEY_LEVELS).enumerate() {
            key[level] = self.drs_node(node, Some((f, req, true)));
        }
        key
    }

    /// The H-DRF admission key ([`crate::registry::AdmissionOrder::Hdrf`]): as
    /// [`QuotaTree::fair_order_key`], but each node's dominant share is taken over the
    /// resources `req` asks for only. A cohort's claim on GPUs is then judged by what its
    /// children hold of GPUs, not by a sibling's use of a resource the job does not compete
    /// for (CPU): the fault of naive hierarchical DRF that H-DRF (Bhattacharya et al.,
    /// "Hierarchical Scheduling for Diverse Datacenter Workloads", SoCC'13) removes by not
    /// counting leaves blocked on another resource (field case B34). Exact shares.
    pub fn hdrf_order_key(&self, q: QueueId, f: u16, req: &Request) -> FairKey {
        let mut key = [Share::ZERO; FAIR_KEY_LEVELS];
        let Some(n) = self.node_of(q) else { return key };
        let mut over = [false; R];
        for (o, &v) in over.iter_mut().zip(req) {
            *o = v > 0;
        }
        let mut path = Vec::with_capacity(FAIR_KEY_LEVELS);
        let mut cur = n;
        while self.nodes[cur].parent.is_some() {
            path.push(cur);
            cur = self.nodes[cur].parent.expect("checked");
        }
        path.reverse();
        for (level, &node) in path.iter().take(FAIR_KEY_LEVELS).enumerate() {
            key[level] = self.drs_node_over(node, Some((f, req, true)), over);
        }
        key
    }

    /// Nominal GPU-milli of queue `q`, summed over its flavors (its entitlement in
    /// fairness reports).
    pub fn nominal_gpu_milli(&self, q: QueueId) -> u64 {
        self.node_of(q).map_or(0, |n| {
            let node = &self.nodes[n];
            (0..self.flavors.len())
                .map(|f| f * R + QuotaResource::Gpu as usize)
                .filter(|&s| node.declared[s])
                .map(|s| node.nominal[s])
                .sum()
        })
    }

    /// Usage of queue `q` per slot (flavor-major, [`QuotaResource`] order within).
    pub fn queue_usage(&self, q: QueueId) -> Option<&[u64]> {
        self.node_of(q).map(|n| self.nodes[n].usage.as_slice())
    }

    /// Recomputes every cohort's usage from its queues' usage (Kueue
    /// `accumulateFromChild`: a child stores in its parent what exceeds its guaranteed quota)
    /// and compares with the incrementally kept values.
    ///
    /// # Errors
    /// A message naming the first cohort and flavor whose usage disagrees.
    pub fn audit(&self) -> Result<(), String> {
        let slots = self.slots();
        let mut is_queue = vec![false; self.nodes.len()];
        for n in self.queue_node.iter().flatten() {
            is_queue[*n] = true;
        }
        // Queues keep their own usage; cohorts are rebuilt from their children, deepest first.
        let mut usage: Vec<Vec<u64>> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if is_queue[i] {
                    n.usage.clone()
                } else {
                    vec![0; slots]
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(self.nodes[i].depth), i));
        for i in order {
            if let Some(p) = self.nodes[i].parent {
                let stored: Vec<u64> = usage[i]
                    .iter()
                    .enumerate()
                    .map(|(s, &u)| u.saturating_sub(self.nodes[i].guaranteed(s)))
                    .collect();
                for (u, st) in usage[p].iter_mut().zip(stored) {
                    *u += st;
                }
            }
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if usage[i] != n.usage {
                let s = (0..slots).find(|&s| usage[i][s] != n.usage[s]).unwrap_or(0);
                return Err(format!(
                    "quota usage of `{}` in flavor `{}` ({}) is {}, its queues add up to {}",
                    n.name,
                    self.flavors[s / R].name,
                    QuotaResource::ALL[s % R].as_str(),
                    n.usage[s],
                    usage[i][s]
                ));
            }
        }
        Ok(())
    }
}

/// The more binding of two quota reasons: over quota, then borrowing limit, then cohort.
fn severity_max(a: PendingReason, b: PendingReason) -> PendingReason {
    let rank = |r| match r {
        PendingReason::OverQuota => 2,
        PendingReason::BorrowingLimit => 1,
        _ => 0,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FlavorQuota, QuotaNodeSpec, ResourceQuota};
    use super::*;

    fn gpus(nominal: u64, bl: Option<u64>, ll: Option<u64>) -> [Option<ResourceQuota>; 3] {
        [
            Some(ResourceQuota {
                nominal: nominal * 1000,
                borrowing_limit: bl.map(|v| v * 1000),
                lending_limit: ll.map(|v| v * 1000),
            }),
            None,
            None,
        ]
    }

    fn node(name: &str, parent: Option<&str>, res: [Option<ResourceQuota>; 3]) -> QuotaNodeSpec {
        QuotaNodeSpec {
            name: name.into(),
            parent: parent.map(String::from),
            flavors: vec![FlavorQuota {
                flavor: "g".into(),
                resources: res,
            }],
            weight_milli: 1000,
        }
    }

    fn spec(cohorts: Vec<QuotaNodeSpec>, queues: Vec<QuotaNodeSpec>) -> QuotaSpec {
        QuotaSpec {
            flavors: vec![Flavor {
                name: "g".into(),
                models: ModelSet::ANY,
            }],
            cohorts,
            queues: queues
                .into_iter()
                .enumerate()
                .map(|(i, q)| (QueueId(i as u32), q))
                .collect(),
        }
    }

    fn g(n: u64) -> Request {
        [n * 1000, 0, 0]
    }

    /// Issue #16 item 3: shares below a thousandth are ordered exactly, and multiplying
    /// every weight by 1,000 keeps the order.
    ///
    /// Cohort C = {a, b nominal 0; big nominal 10,000}: the lendable GPUs are 10,000. a
    /// borrows 1 GPU, b 2: shares after admitting 1 more GPU are 2/10,000 and 3/10,000 (both 0
    /// per mille: under the truncated key they tied and first-come order decided). With
    /// weights × 1,000 (weight_milli 1,000,000) the shares are 2/10⁷ and 3/10⁷: same order.
    ///
    /// Fails without the fix (issue #16 item 3 in the admission order: each level of
    /// `fair_order_key` rounded to per mille again): `ka < kb` expected, got `ka == kb` at
    /// scale 1 (both 0‰) (checked by reverting the fix). The victim order's half of item 3:
    /// `reclaim_victims_follow_exact_shares_under_weight_scaling` in
    /// `tests/integration/field_cases_contention.rs`.
    #[test]
    fn tiny_shares_order_exactly_and_weight_scaling_keeps_it() {
        for scale in [1, 1000] {
            let c = QuotaNodeSpec {
                name: "C".into(),
                parent: None,
                flavors: vec![],
                weight_milli: 1000,
            };
            let mut a = node("a", Some("C"), gpus(0, None, None));
            let mut b = node("b", Some("C"), gpus(0, None, None));
            a.weight_milli *= scale;
            b.weight_milli *= scale;
            let big = node("big", Some("C"), gpus(10_000, None, None));
            let mut t = QuotaTree::new(&spec(vec![c], vec![a, b, big])).unwrap();
            let (qa, qb) = (QueueId(0), QueueId(1));
            t.add_usage(qa, 0, &g(1));
            t.add_usage(qb, 0, &g(2));
            let (ka, kb) = (
                t.fair_order_key(qa, 0, &g(1)),
                t.fair_order_key(qb, 0, &g(1)),
            );
            assert_eq!(ka[0].per_mille(), kb[0].per_mille());
            assert!(ka < kb, "scale {scale}");
            assert_eq!(
                ka[0],
                Share::new(2000 * 1000, 10_000_000 * 1000 * scale as u128)
            );
            // H-DRF over the GPU only gives the same here (the request asks for GPUs only).
            assert_eq!(t.hdrf_order_key(qa, 0, &g(1)), ka);
            assert!(t.drs(qa) < t.drs(qb));
        }
    }

    /// Field case B01's cohort: A nominal 3, B nominal 0 borrowing up to 3.
    #[test]
    fn borrowing_and_reclaim_rules() {
        let c = QuotaNodeSpec {
            name: "C".into(),
            parent: None,
            flavors: vec![],
            weight_milli: 1000,
        };
        let mut t = QuotaTree::new(&spec(
            vec![c],
            vec![
                node("A", Some("C"), gpus(3, None, None)),
                node("B", Some("C"), gpus(0, Some(3), None)),
            ],
        ))
        .unwrap();
        let (a, b) = (QueueId(0), QueueId(1));
        assert_eq!(t.check(b, 0, &g(1)), QuotaFit::Fits { borrows: true });
        t.add_usage(b, 0, &g(1));
        assert!(t.is_borrowing(b, 0));
        assert!(!t.can_ever_fit(a, 0, &g(4)), "4 > the cohort's 3");
        assert!(t.can_ever_fit(a, 0, &g(3)));
        assert_eq!(
            t.check(a, 0, &g(3)),
            QuotaFit::Blocked {
                reason: PendingReason::CohortQuota,
                within_nominal: true
            }
        );
        assert_eq!(t.check(a, 0, &g(2)), QuotaFit::Fits { borrows: false });
        assert_eq!(
            t.check(b, 0, &g(3)),
            QuotaFit::Blocked {
                reason: PendingReason::BorrowingLimit,
                within_nominal: false
            }
        );
        t.audit().unwrap();
        t.remove_usage(b, 0, &g(1));
        t.add_usage(a, 0, &g(3));
        t.audit().unwrap();
        assert!(t.drs(a) == Share::ZERO);
    }

    #[test]
    fn lending_limit_keeps_guaranteed_quota() {
        let c = QuotaNodeSpec {
            name: "C".into(),
            parent: None,
            flavors: vec![],
            weight_milli: 1000,
        };
        // A lends at most 1 of its 4; B has 0 and borrows.
        let mut t = QuotaTree::new(&spec(
            vec![c],
            vec![
                node("A", Some("C"), gpus(4, None, Some(1))),
                node("B", Some("C"), gpus(0, None, None)),
            ],
        ))
        .unwrap();
        let (a, b) = (QueueId(0), QueueId(1));
        assert_eq!(t.check(b, 0, &g(1)), QuotaFit::Fits { borrows: true });
        assert!(matches!(t.check(b, 0, &g(2)), QuotaFit::Blocked { .. }));
        t.add_usage(a, 0, &g(3));
        // A used 3 of its guaranteed 3: nothing stored in the cohort.
        t.audit().unwrap();
        assert_eq!(t.check(b, 0, &g(1)), QuotaFit::Fits { borrows: true });
        t.add_usage(a, 0, &g(1));
        assert!(matches!(t.check(b, 0, &g(1)), QuotaFit::Blocked { .. }));
        t.audit().unwrap();
        t.remove_usage(a, 0, &g(4));
        t.audit().unwrap();
    }

    #[test]
    fn hierarchy_and_fair_keys() {
        let root = QuotaNodeSpec {
            name: "root".into(),
            parent: None,
            flavors: vec![],
            weight_milli: 1000,
        };
        let mk = |n: &str| QuotaNodeSpec {
            name: n.into(),
            parent: Some("root".into()),
            flavors: vec![],
            weight_milli: 1000,
        };
        let mut t = QuotaTree::new(&spec(
            vec![root, mk("x"), mk("y")],
            vec![
                node("x1", Some("x"), gpus(2, None, None)),
                node("x2", Some("x"), gpus(2, None, None)),
                node("y1", Some("y"), gpus(4, None, None)),
            ],
        ))
        .unwrap();
        let (x1, x2, y1) = (QueueId(0), QueueId(1), QueueId(2));
        assert!(t.same_tree(x1, y1));
        // x1 may take all 8 of the root.
        assert!(t.can_ever_fit(x1, 0, &g(8)));
        t.add_usage(x1, 0, &g(4));
        t.audit().unwrap();
        // x1 borrows 2 of x's 4: per-mille 2/4 at the queue level; x itself borrows nothing.
        assert_eq!(t.drs(x1).per_mille(), 500);
        let kx2 = t.fair_order_key(x2, 0, &g(1));
        let ky1 = t.fair_order_key(y1, 0, &g(1));
        assert_eq!(kx2[3], Share::ZERO);
        assert!(
            ky1 < kx2,
            "y's subtree is below its quota: {ky1:?} vs {kx2:?}"
        );
        t.add_usage(y1, 0, &g(4));
        assert_eq!(
            t.check(x2, 0, &g(1)),
            QuotaFit::Blocked {
                reason: PendingReason::CohortQuota,
                within_nominal: true
            }
        );
        t.audit().unwrap();
    }

    #[test]
    fn configuration_errors_name_the_node() {
        let cyc = |n: &str, p: &str| QuotaNodeSpec {
            name: n.into(),
            parent: Some(p.into()),
            flavors: vec![],
            weight_milli: 1000,
        };
        let e = QuotaTree::new(&spec(vec![cyc("a", "b"), cyc("b", "a")], vec![])).unwrap_err();
        assert!(matches!(e, QuotaError::CohortCycle(_)), "{e}");
        let e = QuotaTree::new(&spec(vec![], vec![node("q", None, gpus(1, Some(1), None))]))
            .unwrap_err();
        assert!(e.to_string().contains("borrowing_limit"), "{e}");
        let e = QuotaTree::new(&spec(
            vec![],
            vec![node("q", Some("nope"), gpus(1, None, None))],
        ))
        .unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
        let mut bad = node("q", None, gpus(1, None, None));
        bad.flavors[0].flavor = "h".into();
        let e = QuotaTree::new(&spec(vec![], vec![bad])).unwrap_err();
        assert!(matches!(e, QuotaError::UnknownFlavor { .. }), "{e}");
    }
}
