//! Distribution summaries with exact, documented quantiles.

use serde::Serialize;

/// Summary of a sample, in the sample's unit (seconds for times).
///
/// Quantiles use the nearest-rank method: the `p`-quantile of `n` sorted values is the value
/// at 1-based rank `ceil(p × n)` (rank 1 for `p = 0`). Every field is `null` for an empty
/// sample, never NaN.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Dist {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    pub p999: Option<f64>,
    /// Maximum.
    pub max: Option<f64>,
}

/// Nearest-rank quantile of sorted values (`p` in `[0, 1]`).
pub fn nearest_rank<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
    Some(sorted[rank - 1])
}

/// The nearest-rank quantiles of `v` at `ps`, by selection (`O(n)` each, no full sort); `v` is
/// reordered. Exactly the values a sort would give.
fn select_quantiles(v: &mut [u64], ps: &[f64]) -> Vec<Option<u64>> {
    let n = v.len();
    ps.iter()
        .map(|&p| {
            if n == 0 {
                return None;
            }
            let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
            let (_, x, _) = v.select_nth_unstable(rank - 1);
            Some(*x)
        })
        .collect()
}

const PS: [f64; 6] = [0.50, 0.90, 0.95, 0.99, 0.999, 1.0];

/// Summarizes durations given in milliseconds, reporting seconds. Reorders `ms` (by
/// selection: afterwards it is *not* sorted).
pub fn dist_ms(ms: &mut [u64]) -> Dist {
    let sum: u128 = ms.iter().map(|&v| v as u128).sum();
    let q = select_quantiles(ms, &PS);
    let s = |v: Option<u64>| v.map(|v| v as f64 / 1000.0);
    Dist {
        count: ms.len() as u64,
        mean: (!ms.is_empty()).then(|| sum as f64 / ms.len() as f64 / 1000.0),
        p50: s(q[0]),
        p90: s(q[1]),
        p95: s(q[2]),
        p99: s(q[3]),
        p999: s(q[4]),
        max: s(q[5]),
    }
}

/// Groups `values` by `tags` in place (an American-flag bucket sort: `O(n + groups)` time, no
/// allocation beyond the group bounds): afterwards the values tagged `g` are
/// `values[ranges[g].clone()]`, in no particular order; `tags` is permuted alongside.
///
/// # Panics
/// If the slices differ in length or a tag is not below `groups`.
pub fn group_by_tag(
    values: &mut [u64],
    tags: &mut [u32],
    groups: usize,
) -> Vec<std::ops::Range<usize>> {
    assert_eq!(values.len(), tags.len(), "one tag per value");
    let mut counts = vec![0usize; groups];
    for &t in tags.iter() {
        counts[t as usize] += 1;
    }
    let mut ranges = Vec::with_capacity(groups);
    let mut at = 0;
    for &c in &counts {
        ranges.push(at..at + c);
        at += c;
    }
    let mut next: Vec<usize> = ranges.iter().map(|r| r.start).collect();
    for g in 0..groups {
        while next[g] < ranges[g].end {
            let i = next[g];
            let t = tags[i] as usize;
            if t == g {
                next[g] += 1;
            } else {
                let j = next[t];
                values.swap(i, j);
                tags.swap(i, j);
                next[t] += 1;
            }
        }
    }
    ranges
}

/// Summarizes unitless ratios (e.g. bounded slowdown). Sorts `v` in place; values must not be
/// NaN. The mean is summed in sorted order, so it does not depend on the order values came in.
pub fn dist_f64(v: &mut [f64]) -> Dist {
    v.sort_unstable_by(f64::total_cmp);
    let sum: f64 = v.iter().sum();
    Dist {
        count: v.len() as u64,
        mean: (!v.is_empty()).then(|| sum / v.len() as f64),
        p50: nearest_rank(v, 0.50),
        p90: nearest_rank(v, 0.90),
        p95: nearest_rank(v, 0.95),
        p99: nearest_rank(v, 0.99),
        p999: nearest_rank(v, 0.999),
        max: v.last().copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_in_place() {
        let mut v = vec![10, 20, 30, 40, 50, 60];
        let mut t = vec![2, 0, 2, 1, 0, 2];
        let r = group_by_tag(&mut v, &mut t, 3);
        let mut g: Vec<Vec<u64>> = r.iter().map(|r| v[r.clone()].to_vec()).collect();
        g.iter_mut().for_each(|x| x.sort());
        assert_eq!(g, vec![vec![20, 50], vec![40], vec![10, 30, 60]]);
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn nearest_rank_by_hand() {
        // 10 values 1..=10: p50 → rank 5 → 5; p90 → rank 9 → 9; p95 → rank ceil(9.5) = 10;
        // p99 → rank ceil(9.9) = 10.
        let v: Vec<u64> = (1..=10).map(|x| x * 1000).collect();
        let mut w = v.clone();
        let d = dist_ms(&mut w);
        assert_eq!(d.p50, Some(5.0));
        assert_eq!(d.p90, Some(9.0));
        assert_eq!(d.p95, Some(10.0));
        assert_eq!(d.p99, Some(10.0));
        assert_eq!(d.mean, Some(5.5));
        assert_eq!(dist_ms(&mut []).mean, None);
        // Selection gives what sorting gives, on any order.
        let mut shuffled: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 1000).collect();
        let mut sorted = shuffled.clone();
        sorted.sort_unstable();
        let d = dist_ms(&mut shuffled);
        assert_eq!(
            d.p999,
            Some(nearest_rank(&sorted, 0.999).unwrap() as f64 / 1000.0)
        );
        assert_eq!(
            d.p90,
            Some(nearest_rank(&sorted, 0.90).unwrap() as f64 / 1000.0)
        );
        assert_eq!(d.max, Some(0.999));
    }
}
