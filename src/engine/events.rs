//! The event queue: a binary heap keyed by `(time, class rank, sequence number)`.
//!
//! Cost: push and pop `O(log n)` for `n` queued events. Arrivals are not queued here: they are
//! streamed from the trace (see [`super::Simulation`]), so the heap holds only in-flight work.

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
}

/// What happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// Job `JobId` completes; `u32` is its run epoch (stale events of an earlier run of a
    /// restarted job are ignored).
    Finish(JobId, u32),
    /// Job starts at its recorded time (replay mode).
    ForcedStart(JobId),
}

impl EventKind {
    fn class(&self) -> EventClass {
        match self {
            EventKind::Finish(..) => EventClass::Finish,
            EventKind::ForcedStart(_) => EventClass::ForcedStart,
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

/// A min-heap of events.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(EventKey, EventKind)>>,
    seq: u64,
}

impl EventQueue {
    /// Queues an event.
    pub fn push(&mut self, time: SimTime, kind: EventKind) {
        let key = EventKey {
            time,
            class: kind.class(),
            seq: self.seq,
        };
        self.seq += 1;
        self.heap.push(Reverse((key, kind)));
    }

    /// The next key without removing it.
    pub fn peek(&self) -> Option<EventKey> {
        self.heap.peek().map(|Reverse((k, _))| *k)
    }

    /// Removes and returns the next event.
    pub fn pop(&mut self) -> Option<(EventKey, EventKind)> {
        self.heap.pop().map(|Reverse(e)| e)
    }

    /// Queued events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_time_then_class_then_fifo() {
        let mut q = EventQueue::default();
        q.push(SimTime(5), EventKind::ForcedStart(JobId(1)));
        q.push(SimTime(5), EventKind::Finish(JobId(2), 0));
        q.push(SimTime(5), EventKind::Finish(JobId(3), 0));
        q.push(SimTime(4), EventKind::ForcedStart(JobId(4)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, k)| k).collect();
        assert_eq!(
            order,
            vec![
                EventKind::ForcedStart(JobId(4)),
                EventKind::Finish(JobId(2), 0),
                EventKind::Finish(JobId(3), 0),
                EventKind::ForcedStart(JobId(1)),
            ]
        );
    }
}
