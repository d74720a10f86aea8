//! Fair-share arithmetic in integers: exact shares, Kueue's per-mille dominant resource share,
//! exponentially decayed usage with a half-life, and Slurm's fair-share factor.
//!
//! # What it follows
//! * **Dominant resource fairness** (Ghodsi et al., "Dominant Resource Fairness: Fair
//!   Allocation of Multiple Resource Types", NSDI'11): a queue's share is the largest, over
//!   resources, of its allocation divided by the pool. Kueue's fair sharing (KEP-1714,
//!   <https://sigs.k8s.io/kueue/keps/1714-fair-sharing>) applies it to *borrowed* quota: the
//!   dominant resource share (DRS) of a ClusterQueue is `max_r borrowed_r / lendable_r`,
//!   divided by its weight, in per-mille (`pkg/cache/fair_sharing.go`). The quota tree
//!   ([`crate::quota::QuotaTree::drs`]) computes it; this module holds the [`Share`] type.
//! * **Decayed historical usage** (Slurm's fair-share, `PriorityDecayHalfLife`,
//!   <https://slurm.schedmd.com/priority_multifactor.html>; Kueue admission fair sharing,
//!   KEP-4136): usage is integrated over time with an exponential decay of half-life `h`, so
//!   what a queue used `h` ago counts half. [`DecayedUsage`] keeps it per queue, exactly in
//!   fixed point, and [`fair_share_factor`] is Slurm's classic `2^(−U/S)`.
//!
//! # Determinism
//! No float reaches a decision: shares are exact fractions compared by cross-multiplication
//! (256-bit), and `2^(−x)` is a fixed-point series ([`exp2_neg_q32`]) that gives the same bits
//! on every platform.

use std::cmp::Ordering;

use crate::time::{SimDuration, SimTime};

/// `1.0` in Q32 fixed point.
pub const ONE_Q32: u64 = 1 << 32;

/// `ln 2` in Q64 fixed point (`round(ln 2 · 2^64)`).
const LN2_Q64: u128 = 12_786_308_645_202_655_660;

/// `ln 2` in Q32 fixed point (`round(ln 2 · 2^32)`).
const LN2_Q32: u128 = 2_977_044_472;

/// `2^(−x)` where `x = x_q32 / 2^32`, in Q32 (`2^32` is 1.0). Exact to about 2⁻³²: the
/// whole part of `x` is a shift, the fractional part `e^(−f ln 2)` an alternating series in
/// Q64 integers.
pub fn exp2_neg_q32(x_q32: u128) -> u64 {
    let whole = x_q32 >> 32;
    if whole >= 64 {
        return 0;
    }
    let frac = x_q32 & 0xFFFF_FFFF;
    // y = f · ln 2 in Q64, below 0.7 · 2^64.
    let y = (frac * LN2_Q64) >> 32;
    let mut sum: i128 = 1 << 64;
    let mut term: u128 = 1 << 64;
    for k in 1..=24u128 {
        term = ((term * (y >> 32)) >> 32) / k;
        if term == 0 {
            break;
        }
        if k % 2 == 1 {
            sum -= term as i128;
        } else {
            sum += term as i128;
        }
    }
    let q64 = sum.max(0) as u128;
    // Round Q64 to Q32, then apply the whole halvings.
    let q32 = ((q64 + (1 << 31)) >> 32).min(ONE_Q32 as u128) as u64;
    q32 >> whole
}

/// A non-negative share as an exact fraction, or infinite (a queue of weight zero).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Share {
    num: u128,
    /// Zero means infinite.
    den: u128,
}

impl Default for Share {
    /// [`Share::ZERO`].
    fn default() -> Share {
        Share::ZERO
    }
}

impl Share {
    /// Zero: nothing borrowed.
    pub const ZERO: Share = Share { num: 0, den: 1 };
    /// Larger than every finite share (Kueue gives a weight-zero queue `MaxInt`).
    pub const INFINITE: Share = Share { num: 1, den: 0 };

    /// `num / den`; `den = 0` is infinite.
    pub const fn new(num: u128, den: u128) -> Share {
        Share { num, den }
    }

    /// True for [`Share::INFINITE`].
    pub const fn is_infinite(&self) -> bool {
        self.den == 0
    }

    /// The share in per-mille, rounded down (Kueue's unit); `u64::MAX` when infinite.
    pub fn per_mille(&self) -> u64 {
        let (hi, lo) = mul_wide(self.num, 1000);
        if hi != 0 {
            return u64::MAX;
        }
        lo.checked_div(self.den)
            .map_or(u64::MAX, |v| v.min(u64::MAX as u128) as u64)
    }
}

/// `a × b` as a 256-bit `(high, low)` pair.
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    let mask = u64::MAX as u128;
    let (a1, a0) = (a >> 64, a & mask);
    let (b1, b0) = (b >> 64, b & mask);
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 64) + (p01 & mask) + (p10 & mask);
    let lo = (p00 & mask) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (hi, lo)
}

impl PartialEq for Share {
    fn eq(&self, other: &Share) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Share {}

impl PartialOrd for Share {
    fn partial_cmp(&self, other: &Share) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Share {
    /// Exact comparison: `a/b` vs `c/d` as `a·d` vs `c·b` in 256 bits; infinite is largest.
    fn cmp(&self, other: &Share) -> Ordering {
        match (self.den == 0, other.den == 0) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => mul_wide(self.num, other.den).cmp(&mul_wide(other.num, self.den)),
        }
    }
}

/// Usage integrated over time with exponential decay, one entry per key (queue), in
/// GPU-milli·ms: `U(t) = ∫ r(s) · 2^(−(t−s)/h) ds` for the rate `r` (GPU-milli held) and
/// half-life `h`. Updated lazily: `O(1)` per rate change or read.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DecayedUsage {
    half_life_ms: u64,
    entries: Vec<DecayEntry>,
}

#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct DecayEntry {
    value: u128,
    rate: u64,
    last: SimTime,
}

impl DecayedUsage {
    /// An empty ledger with half-life `half_life` (at least 1 ms).
    pub fn new(half_life: SimDuration) -> DecayedUsage {
        DecayedUsage {
            half_life_ms: half_life.0.max(1),
            entries: Vec::new(),
        }
    }

    /// The half-life.
    pub fn half_life(&self) -> SimDuration {
        SimDuration(self.half_life_ms)
    }

    fn entry(&mut self, key: usize) -> &mut DecayEntry {
        if key >= self.entries.len() {
            self.entries.resize(key + 1, DecayEntry::default());
        }
        &mut self.entries[key]
    }

    /// `e` brought forward to `now` (unchanged when `now` is not later).
    fn advanced(&self, e: DecayEntry, now: SimTime) -> DecayEntry {
        if now <= e.last {
            return e;
        }
        let dt = (now.0 - e.last.0) as u128;
        let x = (dt << 32) / self.half_life_ms as u128;
        let d = exp2_neg_q32(x) as u128;
        let decayed = (e.value >> 32) * d + (((e.value & 0xFFFF_FFFF) * d) >> 32);
        // ∫_0^dt r · 2^(−(dt−s)/h) ds = r · h / ln 2 · (1 − 2^(−dt/h)).
        let gained = e.rate as u128 * self.half_life_ms as u128 * (ONE_Q32 as u128 - d) / LN2_Q32;
        DecayEntry {
            value: decayed.saturating_add(gained),
            rate: e.rate,
            last: now,
        }
    }

    /// Decayed usage of `key` at `now`, GPU-milli·ms.
    pub fn value(&self, key: usize, now: SimTime) -> u128 {
        self.entries
            .get(key)
            .map_or(0, |&e| self.advanced(e, now).value)
    }

    /// Changes the rate of `key` by `delta_gpu_milli` at `now` (a job of the queue started,
    /// `+`, or released its accelerators, `−`).
    ///
    /// # Panics
    /// If the rate would go negative: the caller's accounting is broken.
    pub fn add_rate(&mut self, key: usize, delta_gpu_milli: i64, now: SimTime) {
        let e = *self.entry(key);
        let mut e = self.advanced(e, now);
        e.rate = e
            .rate
            .checked_add_signed(delta_gpu_milli)
            .expect("decayed-usage rate would go negative");
        self.entries[key] = e;
    }
}

/// Slurm's classic fair-share factor `F = 2^(−U/S)` in per-mille, where `U = usage /
/// total_usage` and `S = shares / total_shares` (normalized usage and normalized shares;
/// <https://slurm.schedmd.com/priority_multifactor.html#fairshare>). With no usage at all
/// every account gets 1000; with no shares, 0.
pub fn fair_share_factor(usage: u128, total_usage: u128, shares: u64, total_shares: u64) -> u32 {
    if shares == 0 || total_shares == 0 {
        return 0;
    }
    if usage == 0 || total_usage == 0 {
        return 1000;
    }
    // x = (usage / total_usage) / (shares / total_shares), in Q32; both factors kept exact as
    // far as u128 allows (usage is scaled down first when it is huge).
    let shift = (128 - usage.leading_zeros()).saturating_sub(60);
    let (u, tu) = (usage >> shift, (total_usage >> shift).max(1));
    let num = u * total_shares as u128;
    let den = tu * shares as u128;
    let x = if num >> 90 != 0 {
        u128::MAX
    } else {
        (num << 32) / den
    };
    (exp2_neg_q32(x) as u128 * 1000 / ONE_Q32 as u128) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp2_is_accurate() {
        assert_eq!(exp2_neg_q32(0), ONE_Q32);
        assert_eq!(exp2_neg_q32(1 << 32), ONE_Q32 / 2);
        assert_eq!(exp2_neg_q32(3 << 32), ONE_Q32 / 8);
        // 2^-0.5 = 0.70710678118…
        let h = exp2_neg_q32(1 << 31) as f64 / ONE_Q32 as f64;
        assert!((h - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9, "{h}");
        for i in 0..100u128 {
            let x = i * (1 << 32) / 37;
            let got = exp2_neg_q32(x) as f64 / ONE_Q32 as f64;
            let want = (-(x as f64) / (1u64 << 32) as f64).exp2();
            assert!((got - want).abs() < 1e-9, "{i}: {got} vs {want}");
        }
        assert_eq!(exp2_neg_q32(u128::MAX), 0);
    }

    #[test]
    fn shares_compare_exactly() {
        let a = Share::new(1, 3);
        let b = Share::new(333, 1000);
        assert!(a > b, "1/3 > 0.333 although both are 333 per-mille");
        assert_eq!(a.per_mille(), 333);
        assert_eq!(b.per_mille(), 333);
        assert_eq!(Share::new(2, 6), a);
        assert!(Share::INFINITE > Share::new(u128::MAX, 1));
        assert_eq!(Share::ZERO.per_mille(), 0);
        let big = Share::new(u128::MAX / 2, u128::MAX);
        assert!(big < Share::new(1, 1));
    }

    #[test]
    fn decayed_usage_halves_each_half_life() {
        let h = SimDuration::from_secs(100);
        let mut u = DecayedUsage::new(h);
        // 1000 GPU-milli for 100 s, then idle.
        u.add_rate(0, 1000, SimTime(0));
        u.add_rate(0, -1000, SimTime::from_secs(100));
        let at100 = u.value(0, SimTime::from_secs(100));
        // ∫_0^100 1000 · 2^(-(100-s)/100) ds = 1000 · 100000 / ln2 · (1 − 1/2) ms.
        let want = 1000.0 * 100_000.0 / std::f64::consts::LN_2 * 0.5;
        assert!(
            (at100 as f64 - want).abs() / want < 1e-6,
            "{at100} vs {want}"
        );
        let at200 = u.value(0, SimTime::from_secs(200));
        assert!((at200 as f64 * 2.0 - at100 as f64).abs() / (at100 as f64) < 1e-6);
        assert_eq!(u.value(7, SimTime::from_secs(200)), 0);
    }

    #[test]
    fn slurm_factor() {
        // Used exactly its share: 2^-1.
        assert_eq!(fair_share_factor(50, 100, 1, 2), 500);
        assert_eq!(fair_share_factor(0, 100, 1, 2), 1000);
        assert_eq!(fair_share_factor(100, 100, 1, 4), 62); // 2^-4 = 0.0625
        assert_eq!(fair_share_factor(100, 100, 0, 4), 0);
    }
}
