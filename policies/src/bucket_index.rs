//! A capacity index: the nodes of one cell bucketed by a free amount (GPU-milli or
//! CPU-milli), each bucket a two-level bitset over the nodes' positions in their cell.
//!
//! Iteration order is `(free amount, position)` ascending — the same as a sorted set of
//! `(free, node id)`, since positions follow node ids — or exactly reversed. Insert and
//! remove cost one `BTreeMap` lookup among the *distinct* free amounts (a handful for
//! whole-GPU workloads) plus a bit flip; finding the next member of a bucket skips 64 empty
//! words at a time through the summary level.

use std::collections::BTreeMap;

/// A set of positions `0..len` as a two-level bitset.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Bitset {
    words: Vec<u64>,
    summary: Vec<u64>,
    count: u32,
}

impl Bitset {
    fn new(len: usize) -> Bitset {
        let words = len.div_ceil(64).max(1);
        Bitset {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
            count: 0,
        }
    }

    fn insert(&mut self, pos: u32) -> bool {
        let (w, b) = ((pos / 64) as usize, pos % 64);
        if self.words[w] >> b & 1 == 1 {
            return false;
        }
        self.words[w] |= 1 << b;
        self.summary[w / 64] |= 1 << (w % 64);
        self.count += 1;
        true
    }

    fn remove(&mut self, pos: u32) -> bool {
        let (w, b) = ((pos / 64) as usize, pos % 64);
        if self.words[w] >> b & 1 == 0 {
            return false;
        }
        self.words[w] &= !(1 << b);
        if self.words[w] == 0 {
            self.summary[w / 64] &= !(1 << (w % 64));
        }
        self.count -= 1;
        true
    }

    /// Members ascending.
    fn iter_asc(&self) -> impl Iterator<Item = u32> + '_ {
        let mut s = 0usize;
        let mut smask = self.summary.first().copied().unwrap_or(0);
        let mut w = 0usize;
        let mut wmask = 0u64;
        std::iter::from_fn(move || loop {
            if wmask != 0 {
                let b = wmask.trailing_zeros();
                wmask &= wmask - 1;
                return Some((w * 64) as u32 + b);
            }
            while smask == 0 {
                s += 1;
                if s >= self.summary.len() {
                    return None;
                }
                smask = self.summary[s];
            }
            let b = smask.trailing_zeros() as usize;
            smask &= smask - 1;
            w = s * 64 + b;
            wmask = self.words[w];
        })
    }

    /// The first member ascending for which `pred` holds: [`Bitset::iter_asc`]'s `find`,
    /// as plain loops (the iterator's state is copied at every step of a flattened chain).
    fn find_asc(&self, pred: &mut impl FnMut(u32) -> bool) -> Option<u32> {
        for (s, &smask) in self.summary.iter().enumerate() {
            let mut smask = smask;
            while smask != 0 {
                let w = s * 64 + smask.trailing_zeros() as usize;
                smask &= smask - 1;
                let mut wmask = self.words[w];
                while wmask != 0 {
                    let pos = (w * 64) as u32 + wmask.trailing_zeros();
                    wmask &= wmask - 1;
                    if pred(pos) {
                        return Some(pos);
                    }
                }
            }
        }
        None
    }

    /// Members descending.
    fn iter_desc(&self) -> impl Iterator<Item = u32> + '_ {
        let mut s = self.summary.len();
        let mut smask = 0u64;
        let mut w = 0usize;
        let mut wmask = 0u64;
        std::iter::from_fn(move || loop {
            if wmask != 0 {
                let b = 63 - wmask.leading_zeros();
                wmask &= !(1 << b);
                return Some((w * 64) as u32 + b);
            }
            while smask == 0 {
                if s == 0 {
                    return None;
                }
                s -= 1;
                smask = self.summary[s];
            }
            let b = 63 - smask.leading_zeros() as usize;
            smask &= !(1 << b);
            w = s * 64 + b;
            wmask = self.words[w];
        })
    }
}

/// Positions `0..len` of one cell's nodes, bucketed by a free amount.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BucketIndex {
    len: usize,
    buckets: BTreeMap<u64, Bitset>,
}

impl BucketIndex {
    /// An empty index over positions `0..len`.
    pub fn new(len: usize) -> BucketIndex {
        BucketIndex {
            len,
            buckets: BTreeMap::new(),
        }
    }

    /// Adds position `pos` with free amount `free`.
    ///
    /// # Panics
    /// If `pos >= len`.
    pub fn insert(&mut self, free: u64, pos: u32) {
        let len = self.len;
        self.buckets
            .entry(free)
            .or_insert_with(|| Bitset::new(len))
            .insert(pos);
    }

    /// Removes position `pos` filed under `free` (no-op when absent).
    pub fn remove(&mut self, free: u64, pos: u32) {
        if let Some(b) = self.buckets.get_mut(&free) {
            b.remove(pos);
        }
    }

    /// Members with free amount ≥ `min`, ascending by `(free, pos)`, with their amount.
    pub fn ascending(&self, min: u64) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.buckets
            .range(min..)
            .filter(|(_, b)| b.count > 0)
            .flat_map(|(&f, b)| b.iter_asc().map(move |p| (f, p)))
    }

    /// The first member with free amount ≥ `min`, ascending by `(free, pos)`, for which
    /// `pred` holds, with its amount: `ascending(min).find(..)` without the iterator chain.
    pub fn find_ascending(
        &self,
        min: u64,
        mut pred: impl FnMut(u32) -> bool,
    ) -> Option<(u64, u32)> {
        self.buckets
            .range(min..)
            .filter(|(_, b)| b.count > 0)
            .find_map(|(&f, b)| b.find_asc(&mut pred).map(|p| (f, p)))
    }

    /// Members with free amount ≥ `min`, descending by `(free, pos)`, with their amount.
    pub fn descending(&self, min: u64) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.buckets
            .range(min..)
            .rev()
            .filter(|(_, b)| b.count > 0)
            .flat_map(|(&f, b)| b.iter_desc().map(move |p| (f, p)))
    }

    /// How many items of `need` (> 0) the members with at least `need` free could hold by
    /// this amount alone, `Σ count × ⌊free / need⌋`, counted only until it reaches `want`
    /// (the answer is then `want` or more). An upper bound on what a placement can fit:
    /// every other resource only lowers it. `O(distinct free amounts ≥ need)`.
    pub fn room(&self, need: u64, want: u64) -> u64 {
        let mut room = 0u64;
        for (&f, b) in self.buckets.range(need.max(1)..) {
            room = room.saturating_add(u64::from(b.count).saturating_mul(f / need.max(1)));
            if room >= want {
                break;
            }
        }
        room
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.buckets.values().map(|b| b.count as usize).sum()
    }

    /// True when no position is indexed.
    pub fn is_empty(&self) -> bool {
        self.buckets.values().all(|b| b.count == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// The index iterates exactly as a sorted set of (free, pos) does, both ways.
        #[test]
        fn matches_a_sorted_set(
            len in 1usize..300,
            ops in proptest::collection::vec((any::<bool>(), 0u64..6, 0u32..300), 0..400),
            min in 0u64..7,
        ) {
            let mut idx = BucketIndex::new(len);
            let mut set = BTreeSet::new();
            for (ins, free, pos) in ops {
                let pos = pos % len as u32;
                if ins {
                    // A position is filed under one amount at a time, as in the fleet.
                    if let Some(&(f, _)) = set.iter().find(|&&(_, p)| p == pos) {
                        idx.remove(f, pos);
                        set.remove(&(f, pos));
                    }
                    idx.insert(free, pos);
                    set.insert((free, pos));
                } else if set.remove(&(free, pos)) {
                    idx.remove(free, pos);
                }
            }
            let asc: Vec<_> = idx.ascending(min).collect();
            let want: Vec<_> = set.range((min, 0)..).copied().collect();
            prop_assert_eq!(&asc, &want);
            let desc: Vec<_> = idx.descending(min).collect();
            let want_desc: Vec<_> = want.iter().rev().copied().collect();
            prop_assert_eq!(desc, want_desc);
            prop_assert_eq!(idx.len(), set.len());
            // The first member passing a predicate, as the sorted set's `find` has it.
            for k in 1..5u32 {
                let found = idx.find_ascending(min, |p| p % k == k - 1);
                let want_found = want.iter().copied().find(|&(_, p)| p % k == k - 1);
                prop_assert_eq!(found, want_found);
            }
            // Room for items of `need`: capped at `want`, else the exact sum.
            let need = min.max(1);
            let total: u64 = want.iter().map(|&(f, _)| f / need).sum();
            for cap in [1, 3, u64::MAX] {
                let room = idx.room(need, cap);
                if total >= cap {
                    prop_assert!(room >= cap && room <= total);
                } else {
                    prop_assert_eq!(room, total);
                }
            }
        }
    }

    #[test]
    fn room_counts_whole_items_per_member() {
        let mut idx = BucketIndex::new(8);
        idx.insert(8000, 0);
        idx.insert(8000, 1);
        idx.insert(3000, 2);
        idx.insert(7999, 3);
        // 8-GPU tasks: two nodes hold one each; 3,000 and 7,999 hold none.
        assert_eq!(idx.room(8000, u64::MAX), 2);
        // 2-GPU tasks: 4 + 4 + 1 + 3.
        assert_eq!(idx.room(2000, u64::MAX), 12);
        // Counting goes up the free amounts and stops once `want` is reached: 3,000 and
        // 7,999 give 1 + 3 = 4, enough for 4 and not for 5.
        assert_eq!(idx.room(2000, 4), 4);
        assert_eq!(idx.room(2000, 5), 12);
        idx.remove(8000, 1);
        assert_eq!(idx.room(8000, u64::MAX), 1);
    }
}
