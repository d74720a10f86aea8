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
