//! Simulated (or wall-clock, in production) time as integer milliseconds.
//!
//! Floats never appear in time keys: a trace's timestamps are converted once, at ingest, with
//! the reader's documented rounding rule (round half away from zero to the nearest millisecond).

use std::fmt;
use std::ops::{Add, Sub};

/// An instant: milliseconds since the scenario start (`t = 0`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimTime(pub u64);

/// A span of time in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimDuration(pub u64);

impl SimTime {
    /// `t = 0`, the scenario start.
    pub const ZERO: SimTime = SimTime(0);
    /// The largest representable instant; used as "never".
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// An instant `s` whole seconds after the start.
    pub const fn from_secs(s: u64) -> SimTime {
        SimTime(s * 1000)
    }

    /// Milliseconds since the start.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// Seconds since the start, as a float (for reports only, never for keys).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// `self - earlier`, or zero when `earlier` is later than `self`.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    /// Zero length.
    pub const ZERO: SimDuration = SimDuration(0);

    /// A span of `s` seconds (as a scenario writes them), rounded to the nearest
    /// millisecond, half away from zero; negative and NaN give zero (check first).
    pub fn from_secs_f64_rounded(s: f64) -> SimDuration {
        SimDuration((s * 1000.0).round() as u64)
    }

    /// A span of `s` whole seconds.
    pub const fn from_secs(s: u64) -> SimDuration {
        SimDuration(s * 1000)
    }

    /// Length in milliseconds.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// Length in seconds, as a float (for reports only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    /// Saturates at [`SimTime::MAX`] instead of overflowing.
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    /// Saturates at zero.
    fn sub(self, earlier: SimTime) -> SimDuration {
        self.saturating_since(earlier)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(SimTime(5) - SimTime(9), SimDuration::ZERO);
        assert_eq!(SimTime::MAX + SimDuration(1), SimTime::MAX);
        assert_eq!(
            SimTime::from_secs(2) + SimDuration::from_secs(3),
            SimTime(5000)
        );
        assert_eq!(SimTime(1500).to_string(), "1.500s");
    }
}
