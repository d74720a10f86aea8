//! The pending set: entries in queue order per queue, with their wait bookkeeping.

use super::*;

/// One pending job with its scheduler-side bookkeeping.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Entry {
    pub(crate) job: PendingJob,
    /// Interned id of `job.cells` (jobs with equal cell lists share it).
    pub(crate) cells_key: u32,
    /// Interned id of its [`ClassKey`] ([`Core::classes`]) in a class-skipping queue, else
    /// [`NO_CLASS`].
    pub(crate) class: u32,
    /// Why it could not start when last tried (`None`: not tried yet).
    pub(crate) reason: Option<PendingReason>,
    /// Since when `reason` holds.
    pub(crate) since: SimTime,
    /// Time pending so far, per reason; allocated when the job first waits a non-zero time
    /// (most jobs start in the pass that sees them arrive), so an entry stays small.
    pub(crate) waited: Option<Box<WaitProfile>>,
    /// Its last preemption search found no victims: the next one first draws the whole
    /// search without touching the fleet ([`super::preempt`]'s dry run), which is cheap
    /// when it fails again and a waste when it succeeds.
    pub(crate) search_failed: bool,
    /// Its last search failed at the check that even all candidates leave no room
    /// ([`super::preempt`]'s `no_room_even_with_all`): the next one asks it again before a
    /// dry run. (A search drawn from the lost-work order skips the check after a failure
    /// found otherwise: it walks every candidate's nodes, where a dry run walks only the
    /// victims it would take.)
    pub(crate) room_check_failed: bool,
}

/// A queue's pending jobs in queue order.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct QueueJobs {
    pub(crate) jobs: PendingMap,
}

/// Pending entries by `(order key, job id)`: the order map holds slab indices and the
/// entries stay put in the slab, so inserting or removing a job moves a few words in the
/// B-tree instead of shifting ~200-byte entries.
///
/// With the `serde` feature it serializes canonically: the entries in queue order, without
/// slab slots or the buckets' memos, so that two maps holding the same jobs write the same
/// bytes however their slots were reused (a snapshot's state check relies on it); loading
/// re-inserts them.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingMap {
    pub(crate) order: BTreeMap<(OrderKey, JobId), u32>,
    pub(crate) entries: slab::Slab<Entry>,
    /// For a queue whose pass may skip whole classes ([`Core::class_skip`]): its entries by
    /// (class, stored reason), each set in queue order.
    pub(crate) classes: Option<ClassIndex>,
}

/// What a pass's verdict on a job depends on when no quota, queue maximum or backfill is
/// configured: the exact requirements of [`ExactKey`] without the reservation prefix (always
/// 0 then), and the job's priority and tier (with the requirements and the queue, the
/// preemption search's memo: one failed search fails the whole class).
pub(crate) type ClassKey = (
    TaskShape,
    u32,
    ModelSet,
    u32,
    Option<TopologySpec>,
    i32,
    Tier,
    bool,
);

/// The class of an entry.
pub(crate) fn class_of(e: &Entry) -> ClassKey {
    (
        e.job.shape,
        e.job.tasks,
        e.job.models,
        e.cells_key,
        e.job.topology,
        e.job.priority,
        e.job.tier,
        e.job.split,
    )
}

/// [`Entry::class`] of a job outside class-skipping queues.
pub(crate) const NO_CLASS: u32 = u32::MAX;

/// Pending entries by (interned class, stored reason slot), each set in queue order.
pub(crate) type ClassIndex = BTreeMap<(u32, u8), Bucket>;

/// The entries of one (class, stored reason) bucket in queue order (each with its slab
/// index), with the answer of the last [`PendingMap::next_unskipped`] query: `(after, first)`, the first member after
/// `after` (`None`: none). A pass asks with ascending positions, so most queries are
/// answered from it; any insert or removal in the bucket drops it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bucket {
    pub(crate) set: BTreeMap<Position, u32>,
    next: Option<(Position, Option<(Position, u32)>)>,
}

/// A pending entry's place in its queue: `(order key, job id)`.
pub(crate) type Position = (OrderKey, JobId);

impl Bucket {
    fn insert(&mut self, k: Position, slab: u32) {
        self.next = None;
        self.set.insert(k, slab);
    }

    fn remove(&mut self, k: &Position) {
        self.next = None;
        self.set.remove(k);
    }

    /// The first member after `k`, with its slab index: from the last answer when it was
    /// asked at or before `k` and its member lies after `k` (nothing lies between), else from
    /// the set.
    fn first_after(&mut self, k: Position) -> Option<(Position, u32)> {
        if let Some((after, first)) = self.next {
            if after <= k && first.is_none_or(|(f, _)| f > k) {
                return first;
            }
        }
        let first = self
            .set
            .range((Bound::Excluded(k), Bound::Unbounded))
            .next()
            .map(|(p, &i)| (*p, i));
        self.next = Some((k, first));
        first
    }
}

/// The entries of a [`PendingMap`] in queue order, as its canonical form serializes them.
#[cfg(feature = "serde")]
struct InOrder<'a>(&'a PendingMap);

#[cfg(feature = "serde")]
impl serde::Serialize for InOrder<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        s.collect_seq(m.order.iter().map(|(k, &i)| (k, &m.entries[i as usize])))
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for PendingMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("PendingMap", 2)?;
        st.serialize_field("class_index", &self.classes.is_some())?;
        st.serialize_field("entries", &InOrder(self))?;
        st.end()
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for PendingMap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Canonical {
            class_index: bool,
            entries: Vec<((OrderKey, JobId), Entry)>,
        }
        let c = Canonical::deserialize(d)?;
        let mut m = PendingMap {
            classes: c.class_index.then(BTreeMap::new),
            ..PendingMap::default()
        };
        for (k, e) in c.entries {
            m.insert(k, e);
        }
        Ok(m)
    }
}

/// A stored reason as a bucket index (`u8::MAX`: not tried yet).
pub(crate) fn reason_slot(r: Option<PendingReason>) -> u8 {
    r.map_or(u8::MAX, |r| r.index() as u8)
}

impl PendingMap {
    pub(crate) fn first_key_value(&self) -> Option<(&(OrderKey, JobId), &Entry)> {
        self.order
            .first_key_value()
            .map(|(k, &i)| (k, &self.entries[i as usize]))
    }

    pub(crate) fn get(&self, k: &(OrderKey, JobId)) -> Option<&Entry> {
        let i = *self.order.get(k)?;
        Some(&self.entries[i as usize])
    }

    pub(crate) fn get_mut(&mut self, k: &(OrderKey, JobId)) -> Option<&mut Entry> {
        let i = *self.order.get(k)?;
        Some(&mut self.entries[i as usize])
    }

    /// The entry at `k`, looked up first at slab index `slot` (where a pass found it): a
    /// job is pending at most once, so the entry there holding `k`'s job is `k`'s entry;
    /// otherwise the order map answers, as [`PendingMap::get_mut`].
    pub(crate) fn get_mut_at(&mut self, k: &(OrderKey, JobId), slot: u32) -> Option<&mut Entry> {
        let here = self
            .entries
            .get(slot as usize)
            .is_some_and(|e| e.job.id == k.1);
        if here {
            debug_assert_eq!(
                self.order.get(k),
                Some(&slot),
                "the job's entry at the hinted slot is its entry in queue order"
            );
            return Some(&mut self.entries[slot as usize]);
        }
        self.get_mut(k)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.order.values().map(|&i| &self.entries[i as usize])
    }

    /// The first entry after `k` in queue order.
    pub(crate) fn next_after(&self, k: (OrderKey, JobId)) -> Option<(&(OrderKey, JobId), &Entry)> {
        self.order
            .range((Bound::Excluded(k), Bound::Unbounded))
            .next()
            .map(|(k, &i)| (k, &self.entries[i as usize]))
    }

    pub(crate) fn insert(&mut self, k: (OrderKey, JobId), e: Entry) {
        let b = (e.class, reason_slot(e.reason));
        let i = u32::try_from(self.entries.insert(e)).expect("fewer than 2^32 pending jobs");
        if let Some(old) = self.order.insert(k, i) {
            let old = self.entries.remove(old as usize);
            self.unindex(&k, &old);
        }
        if let Some(ix) = &mut self.classes {
            ix.entry(b).or_default().insert(k, i);
        }
    }

    pub(crate) fn remove(&mut self, k: &(OrderKey, JobId)) -> Option<Entry> {
        let i = self.order.remove(k)?;
        let e = self.entries.remove(i as usize);
        self.unindex(k, &e);
        Some(e)
    }

    fn unindex(&mut self, k: &(OrderKey, JobId), e: &Entry) {
        if let Some(ix) = &mut self.classes {
            let b = (e.class, reason_slot(e.reason));
            if let Some(bucket) = ix.get_mut(&b) {
                bucket.remove(k);
                if bucket.set.is_empty() {
                    ix.remove(&b);
                }
            }
        }
    }

    /// Keeps the class index right when the entry at `k` moves from stored reason `old` to
    /// `new` (call before the move; a no-op without an index).
    pub(crate) fn reindex(
        &mut self,
        k: (OrderKey, JobId),
        old: Option<PendingReason>,
        new: PendingReason,
    ) {
        if old == Some(new) {
            return;
        }
        let Some(&i) = self.order.get(&k) else {
            return;
        };
        let class = self.entries[i as usize].class;
        if let Some(ix) = &mut self.classes {
            let from = (class, reason_slot(old));
            if let Some(bucket) = ix.get_mut(&from) {
                bucket.remove(&k);
                if bucket.set.is_empty() {
                    ix.remove(&from);
                }
            }
            ix.entry((class, reason_slot(Some(new))))
                .or_default()
                .insert(k, i);
        }
    }

    /// Files every entry of class `cid` after position `after` (all of them: `None`) under
    /// reason `r` at `now` (charging each its time under its old reason, as [`set_reason`]
    /// does), moving them into the `(cid, r)` bucket: what trying each of them would do
    /// once the class's verdict `r` holds for the rest of the pass. Per bucket, `O(m log n)`
    /// for `m` entries moved into a bucket of `n`, or `O(m + n)` when `m` is at least a
    /// sixteenth of `n` (a bucket moved whole when the target is empty). A no-op without an
    /// index.
    pub(crate) fn refile_class(
        &mut self,
        cid: u32,
        after: Option<Position>,
        r: PendingReason,
        now: SimTime,
        counts: &mut WaitProfile,
    ) {
        let Some(ix) = &mut self.classes else {
            return;
        };
        let to = reason_slot(Some(r));
        // The class's other slots: at most one per reason plus "not tried", listed without
        // allocating.
        let mut from = [0u8; PendingReason::ALL.len() + 1];
        let mut n = 0;
        for (&(_, s), bucket) in ix.range((cid, 0)..=(cid, u8::MAX)) {
            // A bucket with no member after `after` has nothing to move.
            let tail = after.is_none_or(|k| {
                bucket
                    .set
                    .last_key_value()
                    .is_some_and(|(last, _)| *last > k)
            });
            if s != to && tail {
                from[n] = s;
                n += 1;
            }
        }
        for &s in &from[..n] {
            let bucket = ix.get_mut(&(cid, s)).expect("listed");
            let mut moved = match after {
                None => std::mem::take(&mut bucket.set),
                Some(k) => {
                    let mut tail = bucket.set.split_off(&k);
                    // `split_off` keeps `k` itself in the tail.
                    if let Some(i) = tail.remove(&k) {
                        bucket.set.insert(k, i);
                    }
                    tail
                }
            };
            if moved.is_empty() {
                continue;
            }
            bucket.next = None;
            if bucket.set.is_empty() {
                ix.remove(&(cid, s));
            }
            for &i in moved.values() {
                set_reason(counts, &mut self.entries[i as usize], r, now);
            }
            let target = ix.entry((cid, to)).or_default();
            target.next = None;
            if target.set.len() < moved.len() {
                std::mem::swap(&mut target.set, &mut moved);
            }
            // `append` rebuilds both maps (`O(n + m)`): only for a large move; a few
            // entries joining a long bucket are inserted one by one (`O(m log n)`).
            if moved.len() * 16 >= target.set.len() {
                target.set.append(&mut moved);
            } else {
                target.set.extend(moved);
            }
        }
    }

    /// The first entry after `k` in queue order outside the (class, stored reason) buckets
    /// `skip` names, with its slab index. Without an index, [`PendingMap::next_after`]'s key. `O(b)` for `b`
    /// buckets when asked with ascending `k` (a pass), plus `O(log n)` per bucket whose
    /// cached answer ([`Bucket`]) no longer holds.
    pub(crate) fn next_unskipped(
        &mut self,
        k: (OrderKey, JobId),
        skip: impl Fn(u32, u8) -> bool,
    ) -> Option<((OrderKey, JobId), u32)> {
        let Some(ix) = &mut self.classes else {
            return self
                .order
                .range((Bound::Excluded(k), Bound::Unbounded))
                .next()
                .map(|(k, &i)| (*k, i));
        };
        ix.iter_mut()
            .filter(|((c, r), _)| !skip(*c, *r))
            .filter_map(|(_, bucket)| bucket.first_after(k))
            .min()
    }

    /// Empties the map, returning its entries in queue order.
    pub(crate) fn drain_in_order(&mut self) -> Vec<((OrderKey, JobId), Entry)> {
        if let Some(ix) = &mut self.classes {
            ix.clear();
        }
        let order = std::mem::take(&mut self.order);
        let mut entries = std::mem::take(&mut self.entries);
        order
            .into_iter()
            .map(|(k, i)| (k, entries.remove(i as usize)))
            .collect()
    }
}

/// Requirements that failed in the current pass, keyed without allocation: shape, tasks,
/// models, cell set, topology constraint, how many backfill reservations were in force, and
/// whether the tasks take the node's shape ([`PendingJob::split`]).
pub(crate) type ExactKey = (
    TaskShape,
    u32,
    ModelSet,
    u32,
    Option<TopologySpec>,
    u32,
    bool,
);

/// Moves an entry to reason `r` at `now`, charging the time since its last change to its old
/// reason.
pub(crate) fn set_reason(counts: &mut WaitProfile, e: &mut Entry, r: PendingReason, now: SimTime) {
    let old = e.reason.unwrap_or(PendingReason::NotTried);
    if e.reason == Some(r) {
        return;
    }
    charge(e, old, now);
    e.since = now;
    counts[old.index()] -= 1;
    counts[r.index()] += 1;
    e.reason = Some(r);
}

/// Charges the time since the entry's last reason change to reason `old`.
pub(crate) fn charge(e: &mut Entry, old: PendingReason, now: SimTime) {
    let dt = now.saturating_since(e.since).0;
    if dt > 0 {
        e.waited
            .get_or_insert_with(|| Box::new([0; PendingReason::ALL.len()]))[old.index()] += dt;
    }
}

impl PendingJob {
    /// A copy without the cell list (which allocates).
    pub(crate) fn clone_without_cells(&self) -> PendingJob {
        PendingJob {
            id: self.id,
            tenant: self.tenant,
            queue: self.queue,
            priority: self.priority,
            submit: self.submit,
            seq: self.seq,
            shape: self.shape,
            tasks: self.tasks,
            models: self.models,
            cells: Vec::new(),
            runtime_estimate: self.runtime_estimate,
            topology: self.topology,
            tier: self.tier,
            done: self.done,
            attained_gpu_ms: self.attained_gpu_ms,
            checkpoint_interval: self.checkpoint_interval,
            las_entered: self.las_entered,
            split: self.split,
        }
    }
}
