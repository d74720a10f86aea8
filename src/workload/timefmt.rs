//! Calendar arithmetic shared by the readers of formats that write naive wall-clock
//! timestamps (Philly, Helios, Slurm `sacct`): no time zone, no DST, no host setting and no
//! date library is ever involved, so the result does not depend on `TZ` (field case B18).

/// Days since 1970-01-01 of the proleptic Gregorian date `y-m-d` (H. Hinnant's
/// `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Parses a naive `YYYY-MM-DD HH:MM:SS` timestamp into seconds since 1970-01-01 00:00:00 of
/// the same naive clock, by calendar arithmetic only (no time zone, no DST).
///
/// # Errors
/// A message naming the text when it is not in that exact form or a component is out of
/// range (month 1–12, day within the month, hour 0–23, minute 0–59, second 0–59).
pub fn parse_naive_timestamp(text: &str) -> Result<i64, String> {
    parse_naive_datetime(text, b' ')
}

/// Like [`parse_naive_timestamp`] with `separator` between the date and the time of day
/// (`b' '` for `2017-10-07 01:11:39`, `b'T'` for Slurm's ISO-8601 `2024-03-01T10:00:00`).
/// The result is seconds since 1970-01-01 00:00:00 of the same naive clock.
///
/// # Errors
/// As [`parse_naive_timestamp`].
pub fn parse_naive_datetime(text: &str, separator: u8) -> Result<i64, String> {
    let sep = separator as char;
    let bad = || format!("`{text}` is not a `YYYY-MM-DD{sep}HH:MM:SS` timestamp");
    let b = text.as_bytes();
    if b.len() != 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != separator
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> Result<u32, String> {
        let s = &b[r];
        if !s.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        Ok(s.iter().fold(0u32, |a, &c| a * 10 + u32::from(c - b'0')))
    };
    let (y, mo, d) = (i64::from(num(0..4)?), num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) {
        return Err(format!("`{text}`: month {mo} is out of range"));
    }
    let month_len = match mo {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if d == 0 || d > month_len {
        return Err(format!("`{text}`: day {d} is out of range"));
    }
    if h > 23 || mi > 59 || s > 59 {
        return Err(format!("`{text}`: time of day is out of range"));
    }
    Ok(days_from_civil(y, mo, d) * 86_400 + i64::from(h * 3600 + mi * 60 + s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_separator() {
        let a = parse_naive_datetime("2024-03-10T02:30:00", b'T').unwrap();
        let b = parse_naive_timestamp("2024-03-10 02:30:00").unwrap();
        assert_eq!(a, b);
        assert!(parse_naive_datetime("2024-03-10 02:30:00", b'T').is_err());
        assert!(parse_naive_datetime("2024-03-10T02:30:0é", b'T').is_err());
    }
}

/// The origin of a trace whose times are absolute naive wall-clock seconds: t = 0 is the
/// given origin, or else the first time it is asked to convert (a streamed file's first
/// submit time).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Origin(pub Option<i64>);

impl Origin {
    /// Seconds since the origin, in milliseconds; `None` on overflow.
    pub fn rel_ms(&mut self, abs_s: i64) -> Option<i64> {
        let o = *self.0.get_or_insert(abs_s);
        abs_s.checked_sub(o)?.checked_mul(1000)
    }
}

/// The civil date `(y, m, d)` of `days` since 1970-01-01 (proleptic Gregorian; H. Hinnant's
/// `civil_from_days`, the inverse of [`days_from_civil`]).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `YYYY-MM-DDTHH:MM:SS` of `secs` since 1970-01-01 00:00:00 of some clock (the inverse of
/// [`parse_naive_datetime`] with `b'T'`).
pub fn format_datetime(secs: i64) -> String {
    let (days, s) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

#[cfg(test)]
mod format_tests {
    use super::*;

    #[test]
    fn format_inverts_parse() {
        assert_eq!(format_datetime(0), "1970-01-01T00:00:00");
        // 749458803 s = 8674 days (1970-01-01 + 8674 d = 1993-10-01) + 25203 s (7 h 0 min 3 s).
        assert_eq!(format_datetime(749_458_803), "1993-10-01T07:00:03");
        for t in [
            "2017-10-01T00:00:00",
            "2000-02-29T23:59:59",
            "1969-12-31T23:59:59",
        ] {
            assert_eq!(format_datetime(parse_naive_datetime(t, b'T').unwrap()), t);
        }
    }
}
