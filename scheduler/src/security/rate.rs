//! Per-principal rate limit: a token bucket each (refill `rate` per second up to `burst`).
//!
//! A hand-written bucket rather than a governor crate: it is twenty lines, keyed by the
//! principal's name in a `BTreeMap` (bounded by the tokens file's length), and takes the
//! time as an argument so that it is unit-tested without sleeping.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by principal name.
#[derive(Debug, Default)]
pub struct RateLimiter {
    buckets: Mutex<BTreeMap<String, Bucket>>,
}

impl RateLimiter {
    /// Takes one request from `key`'s bucket (refilled at `rate_per_second` up to `burst`,
    /// full at first) at time `now`. `Ok(())` if allowed, else `Err(wait)`: the time until
    /// one request's worth has refilled.
    pub fn check(
        &self,
        key: &str,
        rate_per_second: f64,
        burst: u32,
        now: Instant,
    ) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let burst = f64::from(burst.max(1));
        let b = buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate_per_second).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - b.tokens) / rate_per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_burst_then_refills_at_rate() {
        let r = RateLimiter::default();
        let t0 = Instant::now();
        // burst 3: three at once pass, the fourth waits 1/2 s at 2 per second.
        for _ in 0..3 {
            assert_eq!(r.check("a", 2.0, 3, t0), Ok(()));
        }
        assert_eq!(r.check("a", 2.0, 3, t0), Err(Duration::from_millis(500)));
        // another principal has its own bucket
        assert_eq!(r.check("b", 2.0, 3, t0), Ok(()));
        // 0.5 s later one token has refilled
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(r.check("a", 2.0, 3, t1), Ok(()));
        assert!(r.check("a", 2.0, 3, t1).is_err());
    }
}
