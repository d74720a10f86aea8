//! Paired statistics over seeds: mean, sample standard deviation and the Student-t 95 %
//! confidence interval of a mean difference.
//!
//! For `n` seeds with per-seed differences `d_i = m_policy,i − m_baseline,i` (common random
//! numbers: both runs of seed `i` see the same workload draws), the interval is
//! `d̄ ± t(0.975, n − 1) · s_d / √n`, where `s_d` is the sample standard deviation (divisor
//! `n − 1`) and `t(p, ν)` the Student-t quantile. It is undefined for `n < 2`. When every
//! `d_i` is equal (a deterministic trace with no seeded randomness), the interval has zero
//! width.
//!
//! `t(p, ν)` is `statrs`' Student-t inverse CDF.

/// Mean of a non-empty sample.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Sample standard deviation (divisor `n − 1`); `None` for fewer than 2 values.
pub fn sd(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = mean(v)?;
    let ss: f64 = v.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (v.len() - 1) as f64).sqrt())
}

/// A paired difference and its 95 % confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PairedCi {
    /// Pairs used.
    pub n: usize,
    /// Mean difference.
    pub mean_diff: f64,
    /// Sample standard deviation of the differences (`None` for n < 2).
    pub sd_diff: Option<f64>,
    /// `t(0.975, n − 1)`.
    pub t: Option<f64>,
    /// Lower bound (`None` for n < 2).
    pub ci_low: Option<f64>,
    /// Upper bound.
    pub ci_high: Option<f64>,
}

impl PairedCi {
    /// True when the interval excludes 0.
    pub fn significant(&self) -> bool {
        match (self.ci_low, self.ci_high) {
            (Some(l), Some(h)) => l > 0.0 || h < 0.0,
            _ => false,
        }
    }
}

/// The paired difference `a − b` over pairs; `None` without pairs.
pub fn paired(a: &[f64], b: &[f64]) -> Option<PairedCi> {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let m = mean(&d)?;
    let s = sd(&d);
    let n = d.len();
    let t = (n >= 2).then(|| t_quantile(0.975, (n - 1) as f64));
    let half = match (s, t) {
        (Some(s), Some(t)) => Some(t * s / (n as f64).sqrt()),
        _ => None,
    };
    Some(PairedCi {
        n,
        mean_diff: m,
        sd_diff: s,
        t,
        ci_low: half.map(|h| m - h),
        ci_high: half.map(|h| m + h),
    })
}

/// Student-t quantile for `p` in (0.5, 1) with `df` degrees of freedom (`statrs`).
///
/// # Panics
/// If `p` is not in (0.5, 1) or `df` is not positive.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    assert!(p > 0.5 && p < 1.0 && df > 0.0, "t_quantile({p}, {df})");
    StudentsT::new(0.0, 1.0, df)
        .expect("df > 0: a valid Student-t")
        .inverse_cdf(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        // Two-sided 95 % critical values from any t table.
        for (df, t) in [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (4.0, 2.776_445_105),
            (9.0, 2.262_157_163),
            (30.0, 2.042_272_456),
            (1000.0, 1.962_339_077),
        ] {
            let q = t_quantile(0.975, df);
            assert!((q - t).abs() < 1e-6, "df {df}: {q} vs {t}");
        }
    }

    #[test]
    fn paired_ci_by_hand() {
        // Differences 1, 2, 3: mean 2, s = 1, n = 3, t(0.975, 2) = 4.302653:
        // half-width = 4.302653 / √3 = 2.484138.
        let ci = paired(&[2.0, 4.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(ci.mean_diff, 2.0);
        assert!((ci.ci_low.unwrap() - (2.0 - 2.484_138)).abs() < 1e-5);
        assert!(!ci.significant());
        let same = paired(&[1.0, 1.0], &[0.0, 0.0]).unwrap();
        assert_eq!((same.ci_low, same.ci_high), (Some(1.0), Some(1.0)));
        assert!(same.significant());
        assert_eq!(paired(&[1.0], &[0.0]).unwrap().ci_low, None);
    }
}
