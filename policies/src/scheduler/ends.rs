//! The running jobs by the instant their resources are expected back: what a
//! backfill reservation walks, kept as jobs start, change their end and stop, instead of a
//! collection and a sort of the whole running set in every pass that reserves.
//!
//! Kept with backfill on. Each tracked running job is at `(end, job)`, where `end` is the
//! release instant of a job being evicted and its estimated end otherwise
//! ([`Running::est_end`]; [`SimTime::MAX`] when unknown), ascending by that pair.
//!
//! A pass reads the running set as it was at its first reservation attempt (the
//! reservation walk's snapshot semantics, [`super::reserve()`]): [`EndsIndex::open`] starts a
//! journal of the entries added and removed after that point, and [`EndsIndex::snapshot`]
//! walks the live set without the added entries and with the removed ones, merged in
//! order: the same sequence a sorted copy taken at the open would give, at the cost of the
//! entries walked plus the journal. The journal stays open until the next full pass
//! closes it ([`EndsIndex::close`]), as the copy it replaces stayed in the pass state.

use super::*;

/// A running job's entry: (expected end, job), ascending.
type Entry = (SimTime, JobId);

/// The index (module docs).
#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct EndsIndex {
    set: BTreeSet<Entry>,
    /// Each job's entry instant, by [`JobId`] index (`None`: not running).
    end_of: Vec<Option<SimTime>>,
    /// The entries added and removed since [`EndsIndex::open`], when open.
    journal: Option<Journal>,
    /// A copy of the set taken at the open, which every snapshot must equal (checked in
    /// debug builds, [`EndsIndex::check_snapshot`]).
    #[cfg(debug_assertions)]
    at_open: Vec<Entry>,
}

#[derive(Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Journal {
    added: BTreeSet<Entry>,
    removed: BTreeSet<Entry>,
}

impl EndsIndex {
    /// Puts `job` at `end` (`None`: removes it). `O(log n)`.
    pub(crate) fn set(&mut self, job: JobId, end: Option<SimTime>) {
        let i = job.index();
        if i >= self.end_of.len() {
            self.end_of.resize(i + 1, None);
        }
        let old = self.end_of[i];
        if old == end {
            return;
        }
        self.end_of[i] = end;
        if let Some(o) = old {
            self.set.remove(&(o, job));
            if let Some(j) = &mut self.journal {
                if !j.added.remove(&(o, job)) {
                    j.removed.insert((o, job));
                }
            }
        }
        if let Some(n) = end {
            self.set.insert((n, job));
            if let Some(j) = &mut self.journal {
                if !j.removed.remove(&(n, job)) {
                    j.added.insert((n, job));
                }
            }
        }
    }

    /// Takes the snapshot that [`EndsIndex::snapshot`] walks: the set as it is now.
    pub(crate) fn open(&mut self) {
        self.journal = Some(Journal::default());
        #[cfg(debug_assertions)]
        {
            self.at_open = self.set.iter().copied().collect();
        }
    }

    /// Debug builds: panics unless [`EndsIndex::snapshot`] gives the set as it was at the
    /// open (the sorted copy the journal replaces).
    pub(crate) fn check_snapshot(&self) {
        #[cfg(debug_assertions)]
        if self.journal.is_some() {
            assert!(
                self.snapshot().eq(self.at_open.iter().copied()),
                "the ends snapshot is the running set at the pass's first reservation"
            );
        }
    }

    /// Forgets the snapshot.
    pub(crate) fn close(&mut self) {
        self.journal = None;
    }

    /// The entries of the snapshot (the live set when none is open), ascending.
    pub(crate) fn snapshot(&self) -> impl Iterator<Item = Entry> + '_ {
        let (added, removed) = match &self.journal {
            Some(j) => (Some(&j.added), Some(&j.removed)),
            None => (None, None),
        };
        let live = self
            .set
            .iter()
            .filter(move |e| added.is_none_or(|a| !a.contains(e)))
            .copied()
            .peekable();
        let gone = removed.into_iter().flatten().copied().peekable();
        Merge { a: live, b: gone }
    }

    /// The entries, ascending, for checks (debug builds and tests).
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn live(&self) -> impl Iterator<Item = Entry> + '_ {
        self.set.iter().copied()
    }
}

/// Two ascending iterators of distinct entries, merged.
struct Merge<A: Iterator<Item = Entry>, B: Iterator<Item = Entry>> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<A: Iterator<Item = Entry>, B: Iterator<Item = Entry>> Iterator for Merge<A, B> {
    type Item = Entry;
    fn next(&mut self) -> Option<Entry> {
        match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) if y < x => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

/// A running record's entry instant: its release when being evicted, else its estimated
/// end.
pub(crate) fn end_of(r: &Running) -> SimTime {
    r.evicting.map_or(r.est_end, |e| e.release_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime(ms)
    }

    /// The snapshot is the set as it was at the open, whatever was added, moved or removed
    /// since, and an entry added then removed (or removed then put back) leaves no trace.
    #[test]
    fn snapshot_is_the_set_at_the_open() {
        let mut ix = EndsIndex::default();
        ix.set(JobId(1), Some(t(50)));
        ix.set(JobId(2), Some(t(20)));
        ix.set(JobId(3), Some(t(20)));
        ix.set(JobId(4), Some(SimTime::MAX));
        ix.open();
        let at_open: Vec<Entry> = ix.snapshot().collect();
        assert_eq!(
            at_open,
            vec![
                (t(20), JobId(2)),
                (t(20), JobId(3)),
                (t(50), JobId(1)),
                (SimTime::MAX, JobId(4))
            ]
        );
        ix.set(JobId(5), Some(t(10))); // started after the open
        ix.set(JobId(1), Some(t(5))); // evicted: released earlier
        ix.set(JobId(2), None); // ended
        ix.set(JobId(6), Some(t(30)));
        ix.set(JobId(6), None); // started and gone again
        ix.set(JobId(3), None);
        ix.set(JobId(3), Some(t(20))); // gone and back at the same entry
        assert_eq!(ix.snapshot().collect::<Vec<_>>(), at_open);
        assert_eq!(
            ix.live().collect::<Vec<_>>(),
            vec![
                (t(5), JobId(1)),
                (t(10), JobId(5)),
                (t(20), JobId(3)),
                (SimTime::MAX, JobId(4))
            ]
        );
        ix.close();
        assert_eq!(
            ix.snapshot().collect::<Vec<_>>(),
            ix.live().collect::<Vec<_>>()
        );
    }
}
