//! The performance floor of the saturated bench rows and of `fleet_1m_gpus`: the least work
//! any simulator must do for the same workload. `fleetsim bench` runs it beside those rows
//! and prints the ratio of their CPU times.
//!
//! Source: the reference program `bench-floor/floor.rs` that the saturated bench rows
//! are measured against (kept beside the repository in the shared workspace,
//! `rustc -O floor.rs`; its first argument line is [`run`]'s). This module is that
//! program's loop with its names spelled out, step for step: the same generator, the same arithmetic, the same output, so that
//! `floor JOBS NODES LOAD [strict] CAP MEAN` and `fleetsim bench --child floor:ROW` agree.
//!
//! What it does: Poisson arrivals at `load` × the GPUs of `nodes` 8-GPU nodes (one pool, no
//! cells), the Philly size mix of [`super::PHILLY_SIZES`], log-normal run times (median
//! [`super::PHILLY_MEDIAN_S`], σ [`super::SIGMA`]) clamped to `[1 s, cap]`, best-fit over
//! per-node free-GPU buckets (a node is only its free count), completions in a binary heap
//! (ties by job), and the pending jobs grouped by size class, so that a best-effort FIFO
//! pass costs `O(classes)` per start; a job above 8 GPUs takes whole free nodes. With
//! `strict`, the earliest pending job is the only one tried. No quota, no preemption, no
//! topology, no metrics but four totals.
//!
//! Its generator is the reference program's xorshift64 with a fixed seed, not a
//! [`crate::rng`] stream: the floor is a fixed program whose figures must match the
//! reference's, not a simulation of the scenario (its arrivals and sizes are drawn alike,
//! not identically).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// What a floor run reached (the reference program's one output line).
#[derive(Clone, Debug, PartialEq)]
pub struct FloorRun {
    /// Jobs generated.
    pub jobs: u64,
    /// Jobs started (all of them: the floor runs until every job has ended).
    pub started: u64,
    /// The last event's time, seconds.
    pub makespan_s: f64,
    /// Mean wait (submit → start), seconds.
    pub mean_wait_s: f64,
    /// Most jobs pending at once (after an instant's arrivals).
    pub max_pending: usize,
}

impl std::fmt::Display for FloorRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "jobs {} started {} makespan_s {:.0} mean_wait_s {:.1} max_pending {}",
            self.jobs, self.started, self.makespan_s, self.mean_wait_s, self.max_pending
        )
    }
}

/// The reference program's xorshift64.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform on `[0, 1)` from the top 53 bits.
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box–Muller, cosine branch).
    fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Nodes by free GPUs (0–8): each bucket a list, with each node's place in its list.
struct FreeBuckets {
    free: Vec<u8>,
    pos: Vec<usize>,
    buckets: Vec<Vec<usize>>,
}

impl FreeBuckets {
    fn new(nodes: usize) -> FreeBuckets {
        let mut buckets = vec![Vec::new(); 9];
        buckets[8] = (0..nodes).collect();
        FreeBuckets {
            free: vec![8; nodes],
            pos: (0..nodes).collect(),
            buckets,
        }
    }

    /// Moves node `n` to `to` free GPUs (swap-remove from its bucket, push onto the new one).
    fn set(&mut self, n: usize, to: u8) {
        let from = self.free[n] as usize;
        let p = self.pos[n];
        let last = *self.buckets[from].last().expect("n is in its bucket");
        self.buckets[from][p] = last;
        self.pos[last] = p;
        self.buckets[from].pop();
        self.free[n] = to;
        self.pos[n] = self.buckets[to as usize].len();
        self.buckets[to as usize].push(n);
    }

    /// Could a job of `gpus` GPUs start now (a node with that many free, or enough whole
    /// free nodes above 8)?
    fn fits(&self, gpus: u32) -> bool {
        if gpus <= 8 {
            (gpus as usize..=8).any(|l| !self.buckets[l].is_empty())
        } else {
            self.buckets[8].len() >= gpus.div_ceil(8) as usize
        }
    }
}

/// A pending job: (arrival sequence, submit ms, GPUs, run time ms).
type Pending = (u64, u64, u32, u64);

/// Runs the floor: `jobs` jobs on `nodes` 8-GPU nodes at offered `load` (fraction of the
/// GPUs), best-effort FIFO (or strict FIFO with `strict`), run times capped at `cap_s`
/// seconds; `mean_runtime_s` is the capped mean that sets the arrival rate (the reference
/// program's defaults, Philly's uncapped 53-day tail, are not used by the bench).
///
/// A job above 8 GPUs takes `⌈gpus / 8⌉` whole free nodes: on a fleet of fewer nodes it never
/// starts (`started < jobs`; the bench's fleets hold the largest Philly size, 128 GPUs, from
/// 16 nodes).
pub fn run(
    jobs: u64,
    nodes: usize,
    load: f64,
    strict: bool,
    cap_s: f64,
    mean_runtime_s: f64,
) -> FloorRun {
    const SIZES: [(u32, f64); 10] = [
        (1, 76627.),
        (2, 1818.),
        (4, 1870.),
        (8, 1643.),
        (12, 7.),
        (16, 199.),
        (24, 7.),
        (32, 67.),
        (64, 6.),
        (128, 3.),
    ];
    let total: f64 = SIZES.iter().map(|s| s.1).sum();
    let mean_gpus: f64 = SIZES.iter().map(|s| s.0 as f64 * s.1).sum::<f64>() / total;
    let (sigma, median) = (super::SIGMA, super::PHILLY_MEDIAN_S);
    let rate = load * (nodes as f64 * 8.0) / (mean_gpus * mean_runtime_s); // jobs per second
    let mut rng = Xorshift(0x9E37_79B9_7F4A_7C15);
    let mut fleet = FreeBuckets::new(nodes);
    // Completions: (end ms, job); per job: GPUs per node and its nodes.
    let mut ends: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut allocs: Vec<(u32, Vec<usize>)> = Vec::new();
    let mut classes: Vec<VecDeque<Pending>> = vec![VecDeque::new(); SIZES.len()];
    let class_of = |g: u32| SIZES.iter().position(|s| s.0 == g).expect("a size");
    let mut arrival_s = 0f64;
    let (mut next_seq, mut made, mut pending, mut max_pending) = (0u64, 0u64, 0usize, 0usize);
    let (mut wait_sum, mut started, mut now) = (0f64, 0u64, 0u64);
    let mut draw = |rng: &mut Xorshift| -> (u64, u32, u64) {
        arrival_s += -rng.uniform().max(1e-300).ln() / rate;
        let mut x = rng.uniform() * total;
        let mut gpus = 1;
        for s in SIZES.iter() {
            if x < s.1 {
                gpus = s.0;
                break;
            }
            x -= s.1;
        }
        let run_s = (median * (sigma * rng.normal()).exp()).clamp(1.0, cap_s);
        ((arrival_s * 1000.0) as u64, gpus, (run_s * 1000.0) as u64)
    };
    let mut next = (jobs > 0).then(|| {
        made = 1;
        draw(&mut rng)
    });
    loop {
        // The next instant: a completion or an arrival (completions first at equal times).
        let t = match (ends.peek().map(|r| r.0 .0), next.map(|n| n.0)) {
            (None, None) => break,
            (Some(c), None) => c,
            (None, Some(a)) => a,
            (Some(c), Some(a)) => c.min(a),
        };
        now = t;
        while let Some(&Reverse((e, j))) = ends.peek() {
            if e != t {
                break;
            }
            ends.pop();
            let (g, ns) = std::mem::take(&mut allocs[j as usize]);
            for n in ns {
                let to = fleet.free[n] + g as u8;
                fleet.set(n, to);
            }
        }
        while let Some(n) = next {
            if n.0 != t {
                break;
            }
            classes[class_of(n.1)].push_back((next_seq, n.0, n.1, n.2));
            next_seq += 1;
            pending += 1;
            next = (made < jobs).then(|| {
                made += 1;
                draw(&mut rng)
            });
        }
        max_pending = max_pending.max(pending);
        // The pass: start the earliest pending head among the classes that fit (strict:
        // the earliest head, if it fits), until none does.
        loop {
            let mut best: Option<usize> = None;
            for (c, q) in classes.iter().enumerate() {
                let Some(h) = q.front() else { continue };
                let earlier = best.is_none_or(|b| classes[b].front().expect("a head").0 > h.0);
                if earlier && (strict || fleet.fits(h.2)) {
                    best = Some(c);
                }
            }
            let Some(c) = best else { break };
            let h = *classes[c].front().expect("a head");
            let g = h.2;
            if !fleet.fits(g) {
                break; // the strict head is blocked
            }
            classes[c].pop_front();
            pending -= 1;
            started += 1;
            wait_sum += (t - h.1) as f64 / 1000.0;
            let j = allocs.len() as u32;
            if g <= 8 {
                // Best fit: a node of the fewest free GPUs that holds the job.
                let l = (g as usize..=8)
                    .find(|&l| !fleet.buckets[l].is_empty())
                    .expect("fits");
                let n = *fleet.buckets[l].last().expect("non-empty");
                fleet.set(n, (l - g as usize) as u8);
                allocs.push((g, vec![n]));
            } else {
                let k = g.div_ceil(8) as usize;
                let mut ns = Vec::with_capacity(k);
                for _ in 0..k {
                    let n = *fleet.buckets[8].last().expect("fits");
                    fleet.set(n, 0);
                    ns.push(n);
                }
                allocs.push((8, ns));
            }
            ends.push(Reverse((t + h.3, j)));
        }
    }
    FloorRun {
        jobs,
        started,
        makespan_s: now as f64 / 1000.0,
        mean_wait_s: wait_sum / started as f64,
        max_pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference program's own output for these arguments
    /// (`floor 20000 128 1.1 x 14400 2682.782710273375` and the same with `strict`, built
    /// with `rustc -O`): the loop is the same step for step.
    #[test]
    fn agrees_with_the_reference_program() {
        let mean = 2682.782710273375;
        assert_eq!(
            run(20_000, 128, 1.1, false, 14_400.0, mean).to_string(),
            REFERENCE_BEST_EFFORT
        );
        assert_eq!(
            run(20_000, 128, 1.1, true, 14_400.0, mean).to_string(),
            REFERENCE_STRICT
        );
    }

    const REFERENCE_BEST_EFFORT: &str =
        "jobs 20000 started 20000 makespan_s 86742 mean_wait_s 342.8 max_pending 273";
    const REFERENCE_STRICT: &str =
        "jobs 20000 started 20000 makespan_s 94408 mean_wait_s 8053.1 max_pending 4456";

    /// A fleet that never fills starts every job on arrival: no wait, nothing left pending.
    #[test]
    fn an_idle_fleet_never_waits() {
        let r = run(500, 1024, 0.05, true, 14_400.0, 2682.782710273375);
        assert_eq!((r.jobs, r.started), (500, 500));
        assert_eq!(r.mean_wait_s, 0.0);
    }
}
