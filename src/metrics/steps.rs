//! A piecewise-constant level recorded over a run (nodes up, replicas running…), for the
//! per-interval means of `timeseries.csv`.
//!
//! The level is `0` before its first point and holds each point's value until the next
//! point; integrals are exact integers (level · ms).

use fleetsim_policies::SimTime;

/// The change points of one level, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepLog {
    /// `(from, value)`: the level is `value` from `from` (ms) until the next point.
    points: Vec<(SimTime, u64)>,
}

impl StepLog {
    /// Sets the level to `v` from `t` on (`t` at or after the last point; a point at the
    /// same time replaces it, an unchanged value is not stored).
    pub fn set(&mut self, t: SimTime, v: u64) {
        push_step(&mut self.points, t, v, 0);
    }

    /// `∫ level dt` over `[a, b)`, level · ms (`0` when `b ≤ a`).
    pub fn integral(&self, a: SimTime, b: SimTime) -> u128 {
        if b <= a {
            return 0;
        }
        // The point in force at `a` (the last one at or before it), then every later one.
        let first = self.points.partition_point(|p| p.0 <= a).saturating_sub(1);
        let mut sum = 0u128;
        for (i, &(from, v)) in self.points.iter().enumerate().skip(first) {
            if from >= b {
                break;
            }
            let to = self.points.get(i + 1).map_or(b, |p| p.0.min(b));
            let from = from.max(a);
            if to > from {
                sum += u128::from(v) * u128::from(to.0 - from.0);
            }
        }
        sum
    }

    /// The time-mean level over `[start, start + len_ms)` in thousandths (the `timeseries.csv`
    /// unit of [`crate::report::timeseries::Value::Milli`]); `0` for an empty interval.
    pub fn mean_milli(&self, start: SimTime, len_ms: u64) -> u128 {
        if len_ms == 0 {
            return 0;
        }
        let end = SimTime(start.0 + len_ms);
        self.integral(start, end) * 1000 / u128::from(len_ms)
    }
}

/// Appends the point `(t, v)` to a step function's change points (`t` at or after the last
/// point): a point at the same time replaces it (and goes if that leaves two equal levels in
/// a row), an unchanged level is not stored, and a first point of level `zero` is not stored
/// (the level before the first point). [`StepLog::set`] and
/// [`crate::serving::StepFn::push`] share it.
pub(crate) fn push_step<T: Copy + PartialEq>(
    points: &mut Vec<(SimTime, T)>,
    t: SimTime,
    v: T,
    zero: T,
) {
    if let Some(last) = points.last_mut() {
        debug_assert!(t >= last.0, "step function out of order");
        if last.0 == t {
            last.1 = v;
            let n = points.len();
            if n >= 2 && points[n - 2].1 == v {
                points.pop();
            }
            return;
        }
        if last.1 == v {
            return;
        }
    } else if v == zero {
        return;
    }
    points.push((t, v));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_over_steps() {
        let mut s = StepLog::default();
        s.set(SimTime(0), 0); // not stored
        s.set(SimTime(100), 2);
        s.set(SimTime(100), 3); // replaces
        s.set(SimTime(250), 3); // unchanged
        s.set(SimTime(300), 1);
        s.set(SimTime(500), 0);
        assert_eq!(
            s.points,
            vec![(SimTime(100), 3), (SimTime(300), 1), (SimTime(500), 0)]
        );
        // [0, 1000): 3·200 + 1·200 = 800.
        assert_eq!(s.integral(SimTime(0), SimTime(1000)), 800);
        // [200, 400): 3·100 + 1·100 = 400.
        assert_eq!(s.integral(SimTime(200), SimTime(400)), 400);
        assert_eq!(s.integral(SimTime(400), SimTime(400)), 0);
        // Mean over [200, 400): 2.000 in thousandths.
        assert_eq!(s.mean_milli(SimTime(200), 200), 2000);
        assert_eq!(s.mean_milli(SimTime(600), 100), 0);
    }
}
