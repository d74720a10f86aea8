//! What-if transforms (`[transforms]` in a scenario): change the workload or the fleet of a
//! scenario declaratively, so a capacity question is one table in a TOML file (and a sweep
//! axis) rather than a new trace or machine list.
//!
//! ```toml
//! [transforms]
//! arrival_rate_scale = 2.0                 # twice the arrival rate: inter-arrival gaps halved
//! sample_fraction = 0.5                    # keep each job with probability 0.5 (seeded)
//! window = { start_s = 0, end_s = 604800 } # keep jobs submitted in [start_s, end_s)
//! tenant_map = { vc1 = "research", "*" = "other" }   # rename tenants ("*": all others)
//! fleet_scale = 0.5                        # every cell at half its NVLink domains (racks)
//! scale = [{ cell = "hopper", model = "H100", factor = 2.0 }]
//!
//! [[transforms.add_nodes]]                 # a new generation arrives on day 3
//! at_s = 259200
//! cell = "rubin"                           # a new cell, or an existing one
//! nodes = [{ preset = "gb300-nvl72", racks = 2 }]
//!
//! [[transforms.remove_nodes]]              # lose 8 H100 nodes on day 5 (drained)
//! at_s = 432000
//! cell = "hopper"
//! nodes = 8
//! ```
//!
//! # Workload transforms
//! Applied to the job stream in this order, in a single pass (nothing is materialized):
//! 1. **sample**: one uniform draw per input job, in input order, from the RNG stream
//!    `whatif.sample` of the run's seed; the job is kept when the draw is below
//!    `sample_fraction`. Every job consumes a draw, so which jobs are kept for a seed does
//!    not depend on the other transforms.
//! 2. **window**: jobs submitted before `start_s` or at/after `end_s` (original times) are
//!    dropped. Times are not shifted.
//! 3. **arrival rate**: with `t0` the first kept job's submit time, a submit time `t`
//!    becomes `t0 + round((t − t0) / arrival_rate_scale)` (ms, half away from zero); the
//!    recorded start of a replayed job is mapped the same way. Run times are unchanged, so
//!    scale 2 doubles the offered load.
//! 4. **tenant_map**: a job's tenant `x` becomes `tenant_map[x]`, else `tenant_map["*"]`,
//!    else stays `x`. Queues follow the tenant when the trace names none.
//!
//! Dropped jobs are counted in `summary.json` under `jobs.skipped_rows` as
//! `transform_sample` and `transform_window`.
//!
//! # Fleet transforms
//! 1. **scale**: nodes are grouped by (cell, accelerator model) and each group's NVLink
//!    domains (a rack, or one node where a domain is a node) are scaled by
//!    `fleet_scale × Π factor` of the matching `scale` entries (an entry without `cell` or
//!    `model` matches every cell or model). A group of `D` domains keeps
//!    `k = round(D × factor)` of them (at least one when the factor is positive; none when it
//!    is 0), evenly spaced in declaration order (domain `j` is kept iff
//!    `⌊(j+1)k/D⌋ > ⌊jk/D⌋`). Above 1, every domain is kept and `k − D` copies are added after
//!    the cell's nodes, copying domains in order; a copy's nodes are named `NAME~2`, `NAME~3`…
//!    and get fresh domain and block ids.
//! 2. **add_nodes**: the node groups are built as in `[fleet]` (default name prefix
//!    `CELL-addK`, K the entry's position) and appended after every existing node, to the
//!    named cell (a new cell when no cell has that name). With `at_s > 0` they are down
//!    until then and come up at `at_s`.
//! 3. **remove_nodes**: at `at_s`, `nodes` (or `fraction` × the matching nodes, rounded) of
//!    the cell's nodes with the given model (any model when omitted) are drained: highest
//!    node id first, skipping nodes an earlier entry removed. A drained node takes no new
//!    work; jobs on it run to completion; it counts as available until it is empty, then
//!    leaves the fleet.
//!
//! Fleet facts in `summary.json` (`fleet.gpus`, …) count every node the run ever had.
//! A job that could fit only on nodes that arrive later waits for them; one that could fit
//! only on removed nodes waits and is censored at the end.

pub mod fleet;
pub mod stream;

pub use crate::scenario::transforms::{
    AddNodesSpec, RemoveNodesSpec, ScaleSpec, Transforms, TransformsSpec, WindowSpec, MAX_SCALE,
};
