//! The quota-ruled candidates of a listed victim search, grouped by (queue, flavor, rule):
//! a group none of whose members could be taken in the current state is
//! passed over without a check per member, and the search ends as soon as only such groups
//! are left.
//!
//! Only the reclaim and fair-sharing rules ask more of a victim than being listed
//! ([`SimTrial::eligible`](super::preempt::SimTrial)); their checks read the victim's queue
//! usage, the victim's request and (fair sharing) the preemptor's share after admission.
//! Each check is monotone in the request: a victim that asks more frees more, so it keeps
//! its queue at nominal less often ([`crate::quota::QuotaTree::keeps_nominal_after_removal`])
//! and leaves its queue a smaller share ([`crate::quota::QuotaTree::drs_with`]). A group's
//! checks made with its members' componentwise least request therefore bound every
//! member's: when they fail, every member fails. The state they read changes only when a
//! victim of that queue is taken out or put back (the preemptor's share, when a victim of the
//! preemptor's own queue is, which the reclaim and fair-sharing rules never list), so a
//! verdict holds until then. A search that has only members of dead groups left would check
//! each, take none and so change nothing: it fails, as it does here at once.

use super::*;
use crate::decision::PreemptReason;
use crate::quota::Request;

/// A group: the listed candidates of one queue and flavor under one of the rules with a
/// check.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub(crate) queue: QueueId,
    pub(crate) flavor: Option<u16>,
    pub(crate) rule: PreemptReason,
    /// The componentwise least request of its members.
    pub(crate) least: Request,
    /// Its members.
    pub(crate) members: u32,
}

/// The groups of a candidate list.
#[derive(Clone, Debug, Default)]
pub(crate) struct VictimGroups {
    pub(crate) groups: Vec<Group>,
    /// Each candidate's group, by position in the list; [`NO_GROUP`] for a rule without a
    /// check.
    pub(crate) of: Vec<u16>,
    /// The candidates without a group.
    pub(crate) unchecked: u32,
}

/// [`VictimGroups::of`] for a candidate under a rule without a check.
pub(crate) const NO_GROUP: u16 = u16::MAX;

impl VictimGroups {
    /// Adds the next candidate of the list: its rule, queue, flavor and request.
    pub(crate) fn push(
        &mut self,
        rule: PreemptReason,
        queue: QueueId,
        flavor: Option<u16>,
        req: Request,
    ) {
        if !matches!(
            rule,
            PreemptReason::Reclaim
                | PreemptReason::ReclaimWhileBorrowing
                | PreemptReason::FairShare
        ) {
            self.of.push(NO_GROUP);
            self.unchecked += 1;
            return;
        }
        let i = match self
            .groups
            .iter()
            .position(|x| (x.queue, x.flavor, x.rule) == (queue, flavor, rule))
        {
            Some(i) => i,
            None => {
                self.groups.push(Group {
                    queue,
                    flavor,
                    rule,
                    least: req,
                    members: 0,
                });
                self.groups.len() - 1
            }
        };
        let x = &mut self.groups[i];
        x.members += 1;
        for (l, r) in x.least.iter_mut().zip(req) {
            *l = (*l).min(r);
        }
        self.of
            .push(u16::try_from(i).expect("fewer than 65,535 queue and flavor groups"));
    }
}

/// A search's walk over the groups: members not drawn yet, each group's verdict in the
/// current state (`None`: to be made), and candidates without a group not drawn yet.
#[derive(Clone, Debug)]
pub(crate) struct GroupWalk {
    pub(crate) left: Vec<u32>,
    pub(crate) dead: Vec<Option<bool>>,
    pub(crate) unchecked: u32,
}

impl GroupWalk {
    pub(crate) fn new(g: &VictimGroups) -> GroupWalk {
        GroupWalk {
            left: g.groups.iter().map(|x| x.members).collect(),
            dead: vec![None; g.groups.len()],
            unchecked: g.unchecked,
        }
    }

    /// A victim of queue `q` was taken out or put back: the verdicts of `q`'s groups no
    /// longer hold (every group's, when `q` is the preemptor's: its share moved).
    pub(crate) fn changed(&mut self, g: &VictimGroups, q: QueueId, preemptors: QueueId) {
        for (d, x) in self.dead.iter_mut().zip(&g.groups) {
            if q == preemptors || x.queue == q {
                *d = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups collect the least request per resource and count the unchecked candidates.
    #[test]
    fn build_groups() {
        let (a, b) = (QueueId(1), QueueId(2));
        let mut g = VictimGroups::default();
        for (rule, q, f, req) in [
            (PreemptReason::FairShare, a, Some(0), [4000, 10, 7]),
            (PreemptReason::WithinQueue, b, Some(0), [1000, 1, 1]),
            (PreemptReason::FairShare, a, Some(0), [8000, 2, 9]),
            (PreemptReason::Reclaim, a, Some(0), [1000, 1, 1]),
            (PreemptReason::FairShare, a, Some(1), [2000, 3, 3]),
        ] {
            g.push(rule, q, f, req);
        }
        assert_eq!(g.of, vec![0, NO_GROUP, 0, 1, 2]);
        assert_eq!(g.unchecked, 1);
        assert_eq!(g.groups[0].least, [4000, 2, 7]);
        assert_eq!(g.groups[0].members, 2);
        assert_eq!(g.groups[1].rule, PreemptReason::Reclaim);
        assert_eq!(g.groups[2].flavor, Some(1));
        let mut w = GroupWalk::new(&g);
        assert_eq!(w.left, vec![2, 1, 1]);
        w.dead = vec![Some(true); 3];
        w.changed(&g, b, QueueId(9));
        assert_eq!(w.dead, vec![Some(true); 3]);
        w.changed(&g, a, QueueId(9));
        assert_eq!(w.dead, vec![None; 3]);
        w.dead = vec![Some(false); 3];
        w.changed(&g, QueueId(9), QueueId(9));
        assert_eq!(w.dead, vec![None; 3]);
    }
}
