//! A cache prefetch hint: the one place the crate allows `unsafe` (see `lib.rs`).
//!
//! The engine finishes ~10⁵ in-flight jobs whose records are scattered in memory; asking the
//! CPU to fetch the next completion's record while the current event is processed hides
//! the cache miss. A plain read of the value also starts the fetch, but it must complete
//! before the read retires, which stalls the pipeline; a prefetch instruction does not.

/// Hints the CPU to bring every cache line of `value` (64-byte lines) into all cache
/// levels. No effect on the program's results; a no-op on targets other than x86-64.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = value as *const T as usize;
        let end = start + std::mem::size_of::<T>().max(1);
        let mut line = start & !63;
        while line < end {
            #[allow(unsafe_code)]
            // SAFETY: PREFETCHT0 is a hint. It never faults, whatever the address, and
            // writes nothing; the lines prefetched are those of a valid reference. SSE,
            // which provides it, is part of the x86-64 baseline.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(line as *const i8);
            }
            line += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
