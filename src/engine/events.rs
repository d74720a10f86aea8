//! The event queue: a radix heap on event time, keyed by `(time, class rank, sequence
//! number)`.
//!
//! Entries are three packed `u64`s (24 bytes): the time, then `class << 56 | seq`, then the
//! payload. Event times never precede the last popped time (the engine queues nothing in
//! its past), which is what a radix heap needs (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster
//! algorithms for the shortest path problem", JACM 1990; the monotone integer priority
//! queue): an event goes to bucket `i` = the position of the highest bit in which its time
//! differs from the last popped time `last` (bucket 0: time ≤ `last`). Only bucket 0 is
//! ordered (a small binary heap by the full key, so ties keep their class and FIFO order);
//! when it runs dry, the lowest non-empty bucket is drained into lower ones around its
//! minimum time. Buckets are appended to and drained sequentially, so with ~10⁵
//! completions in flight the queue touches few cache lines per event, where a comparison
//! heap walks `log n` scattered levels per pop. Each event moves down at most 64 buckets;
//! in practice a few. An event queued *before* `last` (never done by the engine) still
//! pops in key order: it goes to bucket 0, which always drains first.
//!
//! Arrivals are not queued here: they are streamed from the trace (see
//! [`super::Simulation`]), so the queue holds only in-flight work.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fleetsim_policies::{JobId, SimTime};

/// Event classes in the order they are applied at one instant (lower first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum EventClass {
    /// A job completes and releases its resources.
    Finish = 0,
    /// A node fails, drains, returns or changes capacity.
    Node = 1,
    /// A job is submitted (streamed from the trace, never stored in the heap).
    Arrival = 2,
    /// Replay mode: a job starts at its recorded start time.
    ForcedStart = 3,
    /// A periodic scheduling pass (a retry interval while jobs are pending).
    Tick = 4,
}

impl EventClass {
    fn from_bits(b: u64) -> EventClass {
        match b {
            0 => EventClass::Finish,
            1 => EventClass::Node,
            2 => EventClass::Arrival,
            3 => EventClass::ForcedStart,
            _ => EventClass::Tick,
        }
    }
}

/// What happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// Job `JobId` completes; `u32` is its run epoch (stale events of an earlier run of a
    /// restarted job are ignored).
    Finish(JobId, u32),
    /// Job starts at its recorded time (replay mode).
    ForcedStart(JobId),
    /// A terminating job (preempted with a grace period, or lost with its node) releases its
    /// resources; `u32` is the run epoch it was stopped in (class of [`EventClass::Finish`]).
    Release(JobId, u32),
    /// Node event `u32` of [`super::EngineConfig::node_events`] (what-if transforms).
    Node(u32),
    /// Node failure or repair number `u32` of [`super::EngineConfig::node_changes`].
    NodeChange(u32),
    /// Event `tag` of registered subsystem `id` (the engine's `Subsystem::on_event`; class
    /// of [`EventClass::Node`]).
    Subsystem {
        /// The subsystem's place in the registry.
        id: u8,
        /// What the subsystem queued (its own numbering).
        tag: u32,
    },
    /// The planned stop of serving replica arrival `u32` ([`super::serving`]): withdraw
    /// it if it is still pending.
    ReplicaStop(u32),
    /// A periodic pass.
    Tick,
    /// A round of the round-allocated jobs ([`super::elastic`]); class of
    /// [`EventClass::Tick`].
    ElasticRound,
}

impl EventKind {
    fn class(&self) -> EventClass {
        match self {
            EventKind::Finish(..) | EventKind::Release(..) => EventClass::Finish,
            EventKind::NodeChange(_) | EventKind::Subsystem { .. } | EventKind::ReplicaStop(_) => {
                EventClass::Node
            }
            EventKind::ForcedStart(_) => EventClass::ForcedStart,
            EventKind::Node(_) => EventClass::Node,
            EventKind::Tick | EventKind::ElasticRound => EventClass::Tick,
        }
    }

    fn pack(&self) -> u64 {
        // Finish and Release share a class: bit 63 tells them apart (job ids are 32 bits).
        match *self {
            EventKind::Finish(j, e) => (j.0 as u64) << 32 | e as u64,
            EventKind::Release(j, e) => 1 << 63 | (j.0 as u64) << 32 | e as u64,
            EventKind::ForcedStart(j) => (j.0 as u64) << 32,
            EventKind::Node(i) => i as u64,
            EventKind::NodeChange(i) => 1 << 62 | i as u64,
            EventKind::Subsystem { id, tag } => 1 << 61 | (id as u64) << 32 | tag as u64,
            EventKind::ReplicaStop(i) => 1 << 59 | i as u64,
            EventKind::Tick => 0,
            EventKind::ElasticRound => 1,
        }
    }

    fn unpack(class: EventClass, p: u64) -> EventKind {
        let job = JobId((p >> 32 & 0x7FFF_FFFF) as u32);
        match class {
            EventClass::ForcedStart => EventKind::ForcedStart(job),
            EventClass::Node if p >> 62 & 1 == 1 => EventKind::NodeChange(p as u32),
            EventClass::Node if p >> 61 & 1 == 1 => EventKind::Subsystem {
                id: (p >> 32) as u8,
                tag: p as u32,
            },
            EventClass::Node if p >> 59 & 1 == 1 => EventKind::ReplicaStop(p as u32),
            EventClass::Node => EventKind::Node(p as u32),
            EventClass::Tick if p & 1 == 1 => EventKind::ElasticRound,
            EventClass::Tick => EventKind::Tick,
            _ if p >> 63 == 1 => EventKind::Release(job, p as u32),
            _ => EventKind::Finish(job, p as u32),
        }
    }
}

/// The total order key of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventKey {
    /// When.
    pub time: SimTime,
    /// Class rank at that instant.
    pub class: EventClass,
    /// Insertion sequence number: FIFO among equal `(time, class)`.
    pub seq: u64,
}

const SEQ_BITS: u32 = 56;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    time: u64,
    tie: u64,
    payload: u64,
}

impl Entry {
    fn event_key(&self) -> EventKey {
        EventKey {
            time: SimTime(self.time),
            class: EventClass::from_bits(self.tie >> SEQ_BITS),
            seq: self.tie & SEQ_MASK,
        }
    }
}

/// A monotone priority queue of events (see the module docs).
#[derive(Debug)]
pub struct EventQueue {
    /// Events at time ≤ `last`, ordered by their full key.
    near: BinaryHeap<Reverse<Entry>>,
    /// `buckets[i]` for `i` in `1..=64`: events whose time exceeds `last` and differs from
    /// it first at bit `i − 1`; unordered.
    buckets: Vec<Vec<Entry>>,
    /// Bit `i` set ⇔ `buckets[i]` is non-empty.
    nonempty: u128,
    /// The time the buckets are arranged around (the last refill's minimum).
    last: u64,
    len: usize,
    seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            near: BinaryHeap::new(),
            buckets: (0..=64).map(|_| Vec::new()).collect(),
            nonempty: 0,
            last: 0,
            len: 0,
            seq: 0,
        }
    }
}

/// The bucket of an event at `time` around `last`.
fn bucket_of(last: u64, time: u64) -> usize {
    if time <= last {
        0
    } else {
        64 - (time ^ last).leading_zeros() as usize
    }
}

impl EventQueue {
    /// Queues an event.
    ///
    /// # Panics
    /// After 2⁵⁶ pushes (sequence numbers would wrap).
    pub fn push(&mut self, time: SimTime, kind: EventKind) {
        assert!(self.seq < SEQ_MASK, "event sequence numbers exhausted");
        let e = Entry {
            time: time.0,
            tie: (kind.class() as u64) << SEQ_BITS | self.seq,
            payload: kind.pack(),
        };
        self.seq += 1;
        self.len += 1;
        self.place(e);
    }

    fn place(&mut self, e: Entry) {
        match bucket_of(self.last, e.time) {
            0 => self.near.push(Reverse(e)),
            b => {
                self.buckets[b].push(e);
                self.nonempty |= 1 << b;
            }
        }
    }

    /// Makes `near` hold the next event, if any: drains the lowest non-empty bucket around
    /// its minimum time. Every event of bucket `b` lands in a bucket below `b`.
    fn refill(&mut self) {
        if !self.near.is_empty() || self.nonempty == 0 {
            return;
        }
        let b = self.nonempty.trailing_zeros() as usize;
        let mut drained = std::mem::take(&mut self.buckets[b]);
        self.nonempty &= !(1 << b);
        self.last = drained
            .iter()
            .map(|e| e.time)
            .min()
            .expect("non-empty bucket");
        for e in drained.drain(..) {
            self.place(e);
        }
        // Keep the bucket's capacity for the next events that land there.
        self.buckets[b] = drained;
    }

    /// The next key without removing it.
    pub fn peek(&mut self) -> Option<EventKey> {
        self.refill();
        self.near.peek().map(|e| e.0.event_key())
    }

    /// The next event without removing it.
    pub fn peek_event(&mut self) -> Option<EventKind> {
        self.refill();
        self.near
            .peek()
            .map(|e| EventKind::unpack(e.0.event_key().class, e.0.payload))
    }

    /// Removes and returns the next event.
    pub fn pop(&mut self) -> Option<(EventKey, EventKind)> {
        self.refill();
        let Reverse(top) = self.near.pop()?;
        self.len -= 1;
        let k = top.event_key();
        Some((k, EventKind::unpack(k.class, top.payload)))
    }

    /// Queued events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn order_is_time_then_class_then_fifo() {
        let mut q = EventQueue::default();
        q.push(SimTime(5), EventKind::ForcedStart(JobId(1)));
        q.push(SimTime(5), EventKind::Finish(JobId(2), 0));
        q.push(SimTime(5), EventKind::Finish(JobId(3), 7));
        q.push(SimTime(4), EventKind::ForcedStart(JobId(4)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, k)| k).collect();
        assert_eq!(
            order,
            vec![
                EventKind::ForcedStart(JobId(4)),
                EventKind::Finish(JobId(2), 0),
                EventKind::Finish(JobId(3), 7),
                EventKind::ForcedStart(JobId(1)),
            ]
        );
    }

    #[test]
    fn every_kind_round_trips_through_its_packed_form() {
        let kinds = [
            EventKind::Finish(JobId(0x7FFF_FFFF), u32::MAX - 1),
            EventKind::Release(JobId(5), 9),
            EventKind::ForcedStart(JobId(6)),
            EventKind::Node(7),
            EventKind::NodeChange(8),
            EventKind::Subsystem { id: 0, tag: 9 },
            EventKind::Subsystem {
                id: u8::MAX,
                tag: u32::MAX,
            },
            EventKind::ReplicaStop(11),
            EventKind::ReplicaStop(u32::MAX),
            EventKind::Tick,
        ];
        for k in kinds {
            assert_eq!(EventKind::unpack(k.class(), k.pack()), k, "{k:?}");
        }
    }

    proptest! {
        /// The heap pops exactly what a sort by (time, class, insertion order) gives.
        #[test]
        fn pops_in_sorted_order(ops in proptest::collection::vec((0u64..50, any::<bool>(), 0u32..1000), 0..300)) {
            let mut q = EventQueue::default();
            let mut expect = Vec::new();
            for (i, &(t, fin, j)) in ops.iter().enumerate() {
                let kind = if fin { EventKind::Finish(JobId(j), j / 3) } else { EventKind::ForcedStart(JobId(j)) };
                q.push(SimTime(t), kind);
                expect.push(((t, kind.class(), i), kind));
            }
            expect.sort_by_key(|e| e.0);
            let got: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(k, e)| ((k.time.0, k.class, k.seq as usize), e)).collect();
            prop_assert_eq!(got, expect);
        }

        /// Pushes interleaved with pops, as the engine does (times at or after the last
        /// popped one, sometimes far ahead), plus some before it: every pop returns the
        /// smallest queued key, as a sorted set would.
        #[test]
        fn interleaved_pops_match_a_sorted_set(ops in proptest::collection::vec(
            (0u64..4, 0u64..1 << 40, 0u8..3, 0u32..1000), 0..400)) {
            let mut q = EventQueue::default();
            let mut model = std::collections::BTreeSet::new();
            let mut now = 0u64;
            let mut pushes = 0u64;
            for &(op, dt, class, j) in &ops {
                if op == 0 {
                    let got = q.pop();
                    let want = model.pop_first();
                    prop_assert_eq!(got.map(|(k, e)| (k.time.0, k.class, k.seq, e)), want);
                    if let Some((t, ..)) = want {
                        now = t;
                    }
                } else {
                    // Mostly near `now`, sometimes far ahead, sometimes (op 3) before it.
                    let t = match op {
                        1 => now + dt % 1000,
                        2 => now + dt,
                        _ => now.saturating_sub(dt % 50),
                    };
                    let kind = match class {
                        0 => EventKind::Finish(JobId(j), j / 3),
                        1 => EventKind::Node(j),
                        _ => EventKind::Tick,
                    };
                    q.push(SimTime(t), kind);
                    model.insert((t, kind.class(), pushes, kind));
                    pushes += 1;
                }
                prop_assert_eq!(q.len(), model.len());
            }
            while let Some((k, e)) = q.pop() {
                prop_assert_eq!(Some((k.time.0, k.class, k.seq, e)), model.pop_first());
            }
            prop_assert!(model.is_empty());
        }
    }
}
