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

/// A throughput model. See the module docs for the formulas.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
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
    /// Checks the model for a job of `min..=max` GPUs.
    ///
    /// # Errors
    /// `throughput.serial_fraction` outside `[0, 1]` or not a number;
    /// `throughput.speedup` missing a size in `min..=max`, or with a value that is not a
    /// positive finite number.
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
                        Some(_) => {}
                    }
                }
                Ok(())
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
    }
}
