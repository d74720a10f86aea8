//! Exact text formatting of integer quantities (no float rounding in outputs that are
//! integers underneath).

/// Milliseconds as seconds with three decimals: `1500` → `1.500`.
pub fn ms_as_secs(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// GPU-milli as GPUs with three decimals: `2500` → `2.500`.
pub fn milli_as_units(milli: u128) -> String {
    format!("{}.{:03}", milli / 1000, milli % 1000)
}

/// A ratio with six decimals, or empty when undefined.
pub fn ratio6(r: Option<f64>) -> String {
    r.map(|v| format!("{v:.6}")).unwrap_or_default()
}

/// Formats a number for reports (fixed decimals by magnitude).
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

/// Formats a value of metric `name` for reports: durations in human units
/// ([`crate::report::plots::fmt_duration`]: `2.73 h`), anything else by [`fmt_num`]. CSV and JSON keep
/// the raw numbers.
pub fn fmt_metric(name: &str, v: f64) -> String {
    if crate::report::plots::is_duration_metric(name) {
        crate::report::plots::fmt_duration(v)
    } else {
        fmt_num(v)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exact() {
        assert_eq!(super::ms_as_secs(1500), "1.500");
        assert_eq!(super::ms_as_secs(7), "0.007");
        assert_eq!(super::milli_as_units(2_500), "2.500");
        assert_eq!(super::ratio6(None), "");
    }
}
