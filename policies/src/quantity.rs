//! Kubernetes resource quantities (`500m`, `2`, `1.5`, `4Gi`, `1e3`): the one exact parser
//! shared by the Kueue manifests reader, the live scheduler's Kubernetes adapter and the
//! scheduler extender. Pure string arithmetic in integers (no float rounding), following
//! `k8s.io/apimachinery/pkg/api/resource` (`Quantity`): a decimal number with an optional
//! exponent (`e`/`E`, only without a suffix) or one suffix, `m`, `k`, `M`, `G`, `T`, `P`,
//! `E` (powers of 1000) or `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei` (powers of 1024); at most
//! 2^63−1 base units.

/// Which way a value between two units is rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Towards +∞ (Kubernetes' own rule for a quantity finer than its unit; requests).
    Up,
    /// Towards 0 (capacity: never count a fraction of a unit that is not there).
    Down,
}

/// A Kubernetes quantity in exact milli-units (`500m` = 500, `2` = 2,000, `1Ki` = 1,024,000),
/// rounded up to a whole milli-unit as Kubernetes does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity(pub u128);

impl Quantity {
    /// Parses a quantity into milli-units, rounded up ([`parse_scaled`] with scale 1000).
    ///
    /// # Errors
    /// As [`parse_scaled`].
    pub fn parse(text: &str) -> Result<Quantity, String> {
        parse_scaled(text, 1000, Rounding::Up).map(Quantity)
    }

    /// The quantity in whole units, as a float (for GPU counts).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }
}

/// The value of `text` in units of `1/scale` of its base unit (`scale` 1000: milli-cores;
/// 1: bytes), rounded as `rounding`.
///
/// # Errors
/// A message naming the text when it is malformed (`` `x` is not a Kubernetes quantity ``),
/// negative, or out of range (above 2^63−1 base units, Kubernetes' limit: `1e18` and `8E`
/// are accepted, `1e19` and `10E` are not).
pub fn parse_scaled(text: &str, scale: u128, rounding: Rounding) -> Result<u128, String> {
    let t = text.trim();
    let bad = || format!("`{text}` is not a Kubernetes quantity");
    let suffixes: [(&str, u128, u128); 13] = [
        ("Ki", 1 << 10, 1),
        ("Mi", 1 << 20, 1),
        ("Gi", 1 << 30, 1),
        ("Ti", 1 << 40, 1),
        ("Pi", 1 << 50, 1),
        ("Ei", 1 << 60, 1),
        ("m", 1, 1000),
        ("k", 1_000, 1),
        ("M", 1_000_000, 1),
        ("G", 1_000_000_000, 1),
        ("T", 1_000_000_000_000, 1),
        ("P", 1_000_000_000_000_000, 1),
        ("E", 1_000_000_000_000_000_000, 1),
    ];
    let (num, mul, div) = suffixes
        .iter()
        // `1E3` ends in a digit: an exponent, not the suffix E.
        .find(|(s, _, _)| t.ends_with(s) && t.len() > s.len())
        .map(|&(s, m, d)| (&t[..t.len() - s.len()], m, d))
        .unwrap_or((t, 1, 1));
    if num.starts_with('-') {
        return Err(format!("`{text}` is negative"));
    }
    let range = || format!("`{text}` is out of range (at most {} units)", i64::MAX);
    let num = num.strip_prefix('+').unwrap_or(num);
    let (mant, exp) = match num.find(['e', 'E']) {
        Some(i) if mul == 1 && div == 1 => {
            let e = &num[i + 1..];
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            // Beyond ±100 the value is below any unit or out of range.
            let x: i64 = e
                .parse()
                .unwrap_or(if e.starts_with('-') { -100 } else { 100 });
            (&num[..i], x.clamp(-100, 100))
        }
        Some(_) => return Err(bad()),
        None => (num, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let mut m: u128 = 0;
    for b in digits.bytes() {
        m = m
            .checked_mul(10)
            .and_then(|m| m.checked_add(u128::from(b - b'0')))
            .ok_or_else(range)?;
    }
    let round = |n: u128, d: u128| match rounding {
        Rounding::Up => n.div_ceil(d),
        Rounding::Down => n / d,
    };
    // value (1/scale units) = m × 10^(exp − frac digits) × mul × scale ÷ div, rounded.
    let p = exp - frac.len() as i64;
    let scaled = m
        .checked_mul(mul)
        .and_then(|v| v.checked_mul(scale))
        .ok_or_else(range)?;
    let v = if m == 0 {
        0
    } else if p >= 0 {
        let n = 10u128
            .checked_pow(p as u32)
            .and_then(|t| scaled.checked_mul(t))
            .ok_or_else(range)?;
        round(n, div)
    } else {
        match 10u128
            .checked_pow((-p) as u32)
            .and_then(|t| t.checked_mul(div))
        {
            Some(d) => round(scaled, d),
            // Far below one unit: the smallest unit up, or nothing down.
            None => match rounding {
                Rounding::Up => 1,
                Rounding::Down => 0,
            },
        }
    };
    if v > (i64::MAX as u128).saturating_mul(scale) {
        return Err(range());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_exact_and_bounded() {
        let q = |t: &str| Quantity::parse(t);
        assert_eq!(q("500m").unwrap().0, 500);
        assert_eq!(q("2").unwrap().0, 2000);
        assert_eq!(q("1Ki").unwrap().0, 1_024_000);
        assert_eq!(q("1e18").unwrap().0, 10u128.pow(21));
        assert_eq!(q("1E18").unwrap().0, 10u128.pow(21));
        assert_eq!(q("8E").unwrap().0, 8 * 10u128.pow(21));
        // 2.5e-3 = 2.5 milli, up to 3.
        assert_eq!(q("2.5e-3").unwrap().0, 3);
        assert_eq!(q("1.5e2").unwrap().0, 150_000);
        for big in ["100E", "1e19", "99999999999999999999", "8Ei", "1e400"] {
            let e = q(big).unwrap_err();
            assert!(e.contains("out of range"), "{big}: {e}");
        }
        for bad in ["1e", "e3", "1e3k", "1.e", "1x", "", "lots"] {
            let e = q(bad).unwrap_err();
            assert!(e.contains("not a Kubernetes quantity"), "{bad}: {e}");
        }
        assert!(q("-1").unwrap_err().contains("negative"));
    }

    #[test]
    fn scaled_rounds_both_ways() {
        let s = |t: &str, scale, r| parse_scaled(t, scale, r).unwrap();
        // 0.0001 = 0.1 milli: up to 1, down to 0.
        assert_eq!(s("0.0001", 1000, Rounding::Up), 1);
        assert_eq!(s("0.0001", 1000, Rounding::Down), 0);
        assert_eq!(s("4Gi", 1, Rounding::Down), 4 << 30);
        assert_eq!(s("1e3", 1, Rounding::Up), 1000);
        assert_eq!(s("1k", 1, Rounding::Up), 1000);
        // 1e-200 is far below a milli-unit (the exponent clamps to −100).
        assert_eq!(s("1e-200", 1000, Rounding::Up), 1);
        assert_eq!(s("1e-200", 1000, Rounding::Down), 0);
        // 1.5 bytes: 2 up, 1 down.
        assert_eq!(s("1.5", 1, Rounding::Up), 2);
        assert_eq!(s("1.5", 1, Rounding::Down), 1);
    }
}
