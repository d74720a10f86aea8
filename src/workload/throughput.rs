//! Throughput models of elastic jobs: how fast a job's work drains at a given size.
//!
//! Work is measured in **GPU-milliseconds at size 1** (what one GPU does in one millisecond).
//! A model gives the *speedup* `s(n)` at `n` GPUs (work per millisecond, in size-1 GPU-ms),
//! converted once to an integer rate in thousandths, `rate(n) = round(1000 · s(n))` (at least
//! 1), so that the simulation itself is integer throughout:
//!
//! - `linear`: `s(n) = n`;
//! - `amdahl` with serial fraction `f ∈ [0, 1]`: `s(n) = 1 / (f + (1 − f) / n)` (Amdahl 1967);
//! - `table`: `s(n)` given per size, e.g. measured throughput of each replica count divided
//!   by the one-GPU throughput (the form of Pollux's per-size throughput profiles, OSDI '21).
//!
//! In a native trace the model is the `throughput` field's text ([`ThroughputModel::parse`]):
//! `linear`, `amdahl:F` (e.g. `amdahl:0.05`) or `table:S1|S2|…` (e.g. `table:1|1.8|2.5`,
//! the speedups at sizes 1, 2, 3).

/// A throughput model. See the module docs for the formulas.
#[derive(Clone, Debug, PartialEq)]
pub enum ThroughputModel {
    /// `s(n) = n`.
    Linear,
    /// `s(n) = 1 / (f + (1 − f)/n)`.
    Amdahl {
        /// Serial fraction `f`, in `[0, 1]`.
        serial_fraction: f64,
    },
    /// `s(n)` per size: `speedup[n − 1]` is the speedup over one GPU at `n` GPUs (> 0).
    Table {
        /// Speedups at sizes 1, 2, 3, …
        speedup: Vec<f64>,
    },
}

/// The smallest speedup a table may give: rates are integer thousandths of one GPU's.
pub const MIN_SPEEDUP: f64 = 0.001;

/// The largest speedup a table may give (a million GPUs' worth).
pub const MAX_SPEEDUP: f64 = 1e6;

/// A bad throughput model or elastic size range, naming the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct ModelError {
    /// The field, dotted (`throughput.serial_fraction`, `throughput.speedup`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl ModelError {
    fn new(field: &str, message: impl Into<String>) -> ModelError {
        ModelError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl ThroughputModel {
    /// Reads a model's text: `linear`, `amdahl:F` or `table:S1|S2|…` (see the module docs).
    /// The values are checked against a job's sizes by [`Self::validate`].
    ///
    /// # Errors
    /// A message naming the text: an unknown kind, a missing or non-numeric parameter.
    pub fn parse(text: &str) -> Result<ThroughputModel, String> {
        let (kind, arg) = match text.split_once(':') {
            Some((k, a)) => (k.trim(), Some(a.trim())),
            None => (text.trim(), None),
        };
        let number = |t: &str| {
            t.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{t}` in `{text}` is not a number"))
        };
        match (kind, arg) {
            ("linear", None) => Ok(ThroughputModel::Linear),
            ("amdahl", Some(f)) => Ok(ThroughputModel::Amdahl {
                serial_fraction: number(f)?,
            }),
            ("table", Some(t)) => Ok(ThroughputModel::Table {
                speedup: t.split('|').map(number).collect::<Result<_, _>>()?,
            }),
            _ => Err(format!(
                "`{text}` is not a throughput model (`linear`, `amdahl:F` with a serial fraction F, or `table:S1|S2|…` with the speedup at each size)"
            )),
        }
    }

    /// Checks the model for a job of `min..=max` GPUs.
    ///
    /// # Errors
    /// `throughput.serial_fraction` outside `[0, 1]` or not a number;
    /// `throughput.speedup` missing a size in `min..=max`, or with a value that is not a
    /// number in [`MIN_SPEEDUP`]`..=`[`MAX_SPEEDUP`].
    pub fn validate(&self, min: u32, max: u32) -> Result<(), ModelError> {
        match self {
            ThroughputModel::Linear => Ok(()),
            ThroughputModel::Amdahl { serial_fraction: f } => {
                if !(0.0..=1.0).contains(f) {
                    return Err(ModelError::new(
                        "throughput.serial_fraction",
                        format!("{f} is not in [0, 1]"),
                    ));
                }
                Ok(())
            }
            ThroughputModel::Table { speedup } => {
                for n in min..=max {
                    match speedup.get(n as usize - 1) {
                        None => {
                            return Err(ModelError::new(
                                "throughput.speedup",
                                format!(
                                    "no entry for size {n}; the table must cover {min}..={max}"
                                ),
                            ))
                        }
                        Some(v) if !(v.is_finite() && *v > 0.0) => {
                            return Err(ModelError::new(
                                "throughput.speedup",
                                format!("size {n}: {v} is not a positive number"),
                            ))
                        }
                        // The rate is kept in thousandths: a smaller speedup would be
                        // simulated as 0.001, not as written.
                        Some(v) if !(MIN_SPEEDUP..=MAX_SPEEDUP).contains(v) => {
                            return Err(ModelError::new(
                                "throughput.speedup",
                                format!(
                                    "size {n}: {v} is outside [{MIN_SPEEDUP}, {MAX_SPEEDUP}] (rates are kept in thousandths of one GPU's)"
                                ),
                            ))
                        }
                        Some(_) => {}
                    }
                }
                Ok(())
            }
        }
    }

    /// The fewest GPUs in `min..=max` at which the job runs fastest: the smallest `n` of
    /// highest [`Self::rate_milli`]. A sized elastic job never grows past it — a GPU more
    /// would make it no faster (Amdahl's rates flatten in thousandths; a table may dip).
    /// `linear` and `amdahl` rates never fall with `n`, so a binary search finds it; a table
    /// is scanned (it covers `min..=max`: [`Self::validate`]).
    pub fn fastest_size(&self, min: u32, max: u32) -> u32 {
        match self {
            ThroughputModel::Linear => max,
            ThroughputModel::Amdahl { .. } => {
                let top = self.rate_milli(max);
                let (mut lo, mut hi) = (min, max);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if self.rate_milli(mid) >= top {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                lo
            }
            ThroughputModel::Table { .. } => {
                let (mut best, mut best_rate) = (min, self.rate_milli(min));
                for n in min + 1..=max {
                    let rate = self.rate_milli(n);
                    if rate > best_rate {
                        (best, best_rate) = (n, rate);
                    }
                }
                best
            }
        }
    }

    /// The speedup `s(n)` at `n ≥ 1` GPUs (a table must hold `n`: [`Self::validate`]).
    pub fn speedup(&self, n: u32) -> f64 {
        match self {
            ThroughputModel::Linear => f64::from(n),
            ThroughputModel::Amdahl { serial_fraction: f } => {
                1.0 / (f + (1.0 - f) / f64::from(n.max(1)))
            }
            ThroughputModel::Table { speedup } => {
                speedup.get((n.max(1) - 1) as usize).copied().unwrap_or(1.0)
            }
        }
    }

    /// The integer rate at `n` GPUs: `max(1, round(1000 · s(n)))` thousandths of a size-1
    /// GPU-millisecond of work per millisecond.
    pub fn rate_milli(&self, n: u32) -> u64 {
        ((self.speedup(n) * 1000.0).round() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_by_hand() {
        assert_eq!(ThroughputModel::Linear.rate_milli(4), 4000);
        // f = 0.2, n = 4: 1 / (0.2 + 0.8/4) = 1 / 0.4 = 2.5.
        let a = ThroughputModel::Amdahl {
            serial_fraction: 0.2,
        };
        assert_eq!(a.rate_milli(4), 2500);
        assert_eq!(a.rate_milli(1), 1000);
        let t = ThroughputModel::Table {
            speedup: vec![1.0, 1.5],
        };
        assert_eq!(t.rate_milli(2), 1500);
    }

    #[test]
    fn the_fastest_size_by_hand() {
        assert_eq!(ThroughputModel::Linear.fastest_size(2, 16), 16);
        // f = 1: s(n) = 1 at every size.
        let flat = ThroughputModel::Amdahl {
            serial_fraction: 1.0,
        };
        assert_eq!(flat.fastest_size(1, 8), 1);
        // f = 0.1: rate(n) = round(10000 n / (n + 9)); rate(1000) = round(9910.80) = 9911;
        // rate(997) = round(9910.54) = 9911, rate(996) = round(9910.45) = 9910: the rate
        // stops rising in thousandths at 997 GPUs.
        let tenth = ThroughputModel::Amdahl {
            serial_fraction: 0.1,
        };
        assert_eq!(tenth.fastest_size(1, 1000), 997);
        assert_eq!(tenth.fastest_size(1, 4), 4);
        // A dip: 2 GPUs are slower than 1, 3 the fastest.
        let t = ThroughputModel::Table {
            speedup: vec![1.0, 0.5, 3.0, 3.0],
        };
        assert_eq!(t.fastest_size(1, 4), 3);
        assert_eq!(t.fastest_size(1, 2), 1);
        assert_eq!(t.fastest_size(2, 2), 2);
    }

    #[test]
    fn parses_the_text_forms() {
        assert_eq!(
            ThroughputModel::parse("linear"),
            Ok(ThroughputModel::Linear)
        );
        assert_eq!(
            ThroughputModel::parse("amdahl:0.05"),
            Ok(ThroughputModel::Amdahl {
                serial_fraction: 0.05
            })
        );
        assert_eq!(
            ThroughputModel::parse("table:1|1.5"),
            Ok(ThroughputModel::Table {
                speedup: vec![1.0, 1.5]
            })
        );
        for bad in ["", "cubic", "linear:2", "amdahl", "amdahl:x", "table:1|y"] {
            let e = ThroughputModel::parse(bad).unwrap_err();
            assert!(e.contains('`'), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_models_name_the_field() {
        let a = ThroughputModel::Amdahl {
            serial_fraction: 1.5,
        };
        assert_eq!(
            a.validate(1, 2).unwrap_err().field,
            "throughput.serial_fraction"
        );
        let t = ThroughputModel::Table {
            speedup: vec![1.0, 1.5],
        };
        assert!(t.validate(1, 2).is_ok());
        let e = t.validate(1, 3).unwrap_err();
        assert_eq!(e.field, "throughput.speedup");
        assert!(e.message.contains("size 3"), "{e}");
        // Below a thousandth the rate would be simulated as 0.001, not as written.
        for v in [0.0004, 2e6] {
            let t = ThroughputModel::Table {
                speedup: vec![1.0, v],
            };
            let e = t.validate(1, 2).unwrap_err();
            assert!(
                e.message.contains("size 2") && e.message.contains("outside"),
                "{e}"
            );
        }
        let t = ThroughputModel::Table {
            speedup: vec![0.001],
        };
        assert_eq!((t.validate(1, 1), t.rate_milli(1)), (Ok(()), 1));
    }
}
