//! The victim order as an integer sort key, shared by the listed victim search
//! ([`super::preempt`]) and the lost-work order's cursor ([`super::quota_victims`]).

use std::cmp::Reverse;

use super::*;
use crate::fairshare::Share;

/// Every share a candidate can have (its queue's; zero outside quota), largest first and
/// distinct: a share's position here orders candidates as the exact share does (component 3
/// of the victim order), at the cost of an integer comparison.
pub(crate) fn share_ranks(c: &Core) -> Vec<Share> {
    let mut shares: Vec<Share> = c
        .quota
        .as_ref()
        .map_or(Vec::new(), |t| t.queues().map(|q| t.drs(q)).collect());
    shares.push(Share::ZERO);
    shares.sort_unstable_by(|a, b| b.cmp(a));
    shares.dedup();
    shares
}

/// The sort key of a candidate: [`crate::preemption::VictimKey`]'s components in its order, the share replaced by
/// its rank among the call's shares (0 for the largest), then the job id.
pub(crate) type SortKey = (
    u8,
    bool,
    u32,
    bool,
    i32,
    u128,
    Reverse<u64>,
    Reverse<u64>,
    JobId,
);
