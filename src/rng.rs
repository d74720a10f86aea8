//! Named, seeded random-number streams.
//!
//! Every component that draws random numbers (arrivals, runtimes, failures, a policy's
//! tie-break) gets its own stream, seeded from the scenario seed and the stream's name, so
//! adding draws to one component never shifts another's. The generator is `Pcg64Mcg`
//! (`rand_pcg`), whose output is fixed by its specification on every platform; `StdRng` and
//! `thread_rng` are never used.

use rand_pcg::Pcg64Mcg;

/// The generator type of every stream.
pub type Rng = Pcg64Mcg;

/// SplitMix64 finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a 64-bit of `bytes` (the `fnv` crate's hasher fed the bytes alone, no length
/// prefix): a stable hash (unlike `std::hash`, across platforms and Rust versions) for RNG
/// stream names, run ids, shards and output digests.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(bytes);
    h.finish()
}

/// The 128-bit seed of stream `name` under scenario seed `seed`.
pub fn stream_seed(seed: u64, name: &str) -> u128 {
    let h = fnv1a(name.as_bytes());
    let lo = mix64(seed ^ h);
    let hi = mix64(lo ^ h.rotate_left(32));
    ((hi as u128) << 64) | lo as u128
}

/// A fresh generator for stream `name` under scenario seed `seed`.
pub fn stream(seed: u64, name: &str) -> Rng {
    Pcg64Mcg::new(stream_seed(seed, name) | 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn streams_are_fixed_and_independent() {
        let a: Vec<u64> = (0..3)
            .map({
                let mut r = stream(42, "arrivals");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..3)
            .map({
                let mut r = stream(42, "arrivals");
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(stream(42, "runtimes").next_u64(), a[0]);
        assert_ne!(stream(43, "arrivals").next_u64(), a[0]);
    }
}
