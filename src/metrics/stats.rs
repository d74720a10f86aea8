//! Distribution summaries with exact, documented quantiles.

use serde::Serialize;

/// Summary of a sample, in the sample's unit (seconds for times).
///
/// Quantiles use the nearest-rank method: the `p`-quantile of `n` sorted values is the value
/// at 1-based rank `ceil(p × n)` (rank 1 for `p = 0`). Every field is `null` for an empty
/// sample, never NaN.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Dist {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
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

/// Summarizes durations given in milliseconds, reporting seconds. Sorts `ms` in place.
pub fn dist_ms(ms: &mut [u64]) -> Dist {
    ms.sort_unstable();
    let sum: u128 = ms.iter().map(|&v| v as u128).sum();
    let s = |v: u64| v as f64 / 1000.0;
    Dist {
        count: ms.len() as u64,
        mean: (!ms.is_empty()).then(|| sum as f64 / ms.len() as f64 / 1000.0),
        p50: nearest_rank(ms, 0.50).map(s),
        p90: nearest_rank(ms, 0.90).map(s),
        p99: nearest_rank(ms, 0.99).map(s),
        p999: nearest_rank(ms, 0.999).map(s),
        max: ms.last().copied().map(s),
    }
}

/// Summarizes unitless ratios (e.g. bounded slowdown). Sorts `v` in place; values must not be
/// NaN. The mean is summed in sorted order so it does not depend on input order.
pub fn dist_f64(v: &mut [f64]) -> Dist {
    v.sort_unstable_by(f64::total_cmp);
    let sum: f64 = v.iter().sum();
    Dist {
        count: v.len() as u64,
        mean: (!v.is_empty()).then(|| sum / v.len() as f64),
        p50: nearest_rank(v, 0.50),
        p90: nearest_rank(v, 0.90),
        p99: nearest_rank(v, 0.99),
        p999: nearest_rank(v, 0.999),
        max: v.last().copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_by_hand() {
        // 10 values 1..=10: p50 → rank 5 → 5; p90 → rank 9 → 9; p99 → rank ceil(9.9)=10.
        let v: Vec<u64> = (1..=10).map(|x| x * 1000).collect();
        let mut w = v.clone();
        let d = dist_ms(&mut w);
        assert_eq!(d.p50, Some(5.0));
        assert_eq!(d.p90, Some(9.0));
        assert_eq!(d.p99, Some(10.0));
        assert_eq!(d.mean, Some(5.5));
        assert_eq!(dist_ms(&mut []).mean, None);
    }
}
