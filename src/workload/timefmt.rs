//! Timestamps of the formats that write naive wall-clock times (Philly, Helios, Slurm
//! `sacct`) and of Kubernetes objects (RFC 3339 UTC), on `chrono`'s proleptic Gregorian
//! calendar: naive times are never given a time zone or DST, and no host setting is read, so
//! the result does not depend on `TZ` (field case B18).

use chrono::{DateTime, NaiveDate, NaiveTime};

/// Parses a naive `YYYY-MM-DD HH:MM:SS` timestamp into seconds since 1970-01-01 00:00:00 of
/// the same naive clock (no time zone, no DST).
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
    // The exact shape first: chrono's parser would also take a sign, fewer digits or a
    // leap second.
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
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) {
        return Err(format!("`{text}`: month {mo} is out of range"));
    }
    // y ≤ 9999: always an i32.
    let date = NaiveDate::from_ymd_opt(y as i32, mo, d)
        .ok_or_else(|| format!("`{text}`: day {d} is out of range"))?;
    let time = NaiveTime::from_hms_opt(h, mi, s)
        .ok_or_else(|| format!("`{text}`: time of day is out of range"))?;
    Ok(date.and_time(time).and_utc().timestamp())
}

/// Unix seconds of an RFC 3339 UTC timestamp as Kubernetes writes them
/// (`2026-01-02T03:04:05Z`, optionally with a fraction, which is dropped).
///
/// # Errors
/// A message naming the text when it is not of that form (another offset, a lower-case `t`
/// or `z`, a leap second, a date that does not exist).
pub fn parse_rfc3339_utc(t: &str) -> Result<i64, String> {
    let bad = || format!("`{t}` is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");
    let b = t.as_bytes();
    if b.len() < 20 || b[10] != b'T' || !t.ends_with('Z') || (b.len() > 20 && b[19] != b'.') {
        return Err(bad());
    }
    let secs = parse_naive_datetime(&t[..19], b'T').map_err(|_| bad())?;
    // The fraction: digits only (chrono checks them; the value is dropped).
    DateTime::parse_from_rfc3339(t).map_err(|_| bad())?;
    Ok(secs)
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

/// `YYYY-MM-DDTHH:MM:SS` of `secs` since 1970-01-01 00:00:00 of some clock (the inverse of
/// [`parse_naive_datetime`] with `b'T'`).
pub fn format_datetime(secs: i64) -> String {
    match DateTime::from_timestamp(secs, 0) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S").to_string(),
        // Beyond chrono's ±262,000 years: the seconds themselves.
        None => format!("{secs}s"),
    }
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
