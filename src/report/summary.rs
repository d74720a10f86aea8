//! `summary.json`: the scenario, seed, policy, versions and every metric under stable
//! snake_case keys with the unit in the name. Nothing in it depends on the wall clock, the
//! host or the thread count.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::{EndReason, RunResult};
use crate::metrics::{ratio, Dist};

/// The whole summary.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Scenario description.
    pub description: String,
    /// Seed used.
    pub seed: u64,
    /// `schedule` or `replay`.
    pub mode: String,
    /// fleetsim version.
    pub fleetsim_version: String,
    /// Policy names by stage.
    pub policy: BTreeMap<String, String>,
    /// Fleet facts.
    pub fleet: FleetFacts,
    /// Measurement window.
    pub window: Window,
    /// `drained`, `horizon` or `stuck`.
    pub end_reason: String,
    /// Job counts.
    pub jobs: Jobs,
    /// Allocated / available accelerator-time over the window (null if nothing was available).
    pub occupancy: Option<f64>,
    /// 100 × (1 − occupancy): the FGD paper's unallocated %.
    pub unallocated_pct: Option<f64>,
    /// Allocated accelerator-seconds in the window (GPU-s).
    pub allocated_gpu_s: f64,
    /// Available accelerator-seconds in the window (GPU-s).
    pub available_gpu_s: f64,
    /// Occupancy per cell.
    pub occupancy_by_cell: BTreeMap<String, Option<f64>>,
    /// Occupancy per accelerator model.
    pub occupancy_by_model: BTreeMap<String, Option<f64>>,
    /// Queueing delay (first start − submit), seconds.
    pub wait_s: Dist,
    /// Job completion time (finish − submit), seconds.
    pub jct_s: Dist,
    /// max(1, JCT / max(run time, 10 s)).
    pub bounded_slowdown: Dist,
    /// Last finish − first submit, seconds.
    pub makespan_s: Option<f64>,
    /// Gangs split across NVLink domains; largest placeable gang per cell and level.
    pub topology: TopologySummary,
    /// Engine work done.
    pub engine: EngineFacts,
    /// The scenario's `[transforms]` table as declared (absent when there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transforms: Option<serde_json::Value>,
}

/// Topology metrics (DESIGN §6).
#[derive(Clone, Debug, Serialize)]
pub struct TopologySummary {
    /// Started gangs (jobs of more than one task).
    pub gangs: u64,
    /// Of those, gangs whose tasks span more than one NVLink domain.
    pub split_gangs: u64,
    /// Per cell, per level (`node`, `domain`, `block`, `cell`): the largest gang of 1-GPU
    /// tasks that could start inside one group of the level — time-weighted mean and minimum
    /// over the window, whole GPUs. Present when the fleet has multi-node NVLink domains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_gang_gpus: Option<BTreeMap<String, BTreeMap<String, LargestGang>>>,
}

/// Largest placeable gang over the window.
#[derive(Clone, Debug, Serialize)]
pub struct LargestGang {
    /// Time-weighted mean, GPUs.
    pub mean: f64,
    /// Minimum, GPUs.
    pub min: u64,
}

/// Fleet facts.
#[derive(Clone, Debug, Serialize)]
pub struct FleetFacts {
    /// Cells.
    pub cells: u64,
    /// Nodes.
    pub nodes: u64,
    /// Accelerators.
    pub gpus: u64,
    /// Accelerators per model.
    pub gpus_by_model: BTreeMap<String, u64>,
    /// Accelerators per cell.
    pub gpus_by_cell: BTreeMap<String, u64>,
}

/// The window.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// Start, seconds since t = 0.
    pub start_s: f64,
    /// End, seconds since t = 0.
    pub end_s: f64,
    /// Length, seconds.
    pub length_s: f64,
}

/// Job counts (`started + rejected + censored + cancelled = submitted`).
#[derive(Clone, Debug, Serialize)]
pub struct Jobs {
    /// Read from the workload.
    pub submitted: u64,
    /// Started at least once.
    pub started: u64,
    /// Finished.
    pub completed: u64,
    /// Killed at their time limit.
    pub walltime_reached: u64,
    /// Refused at submit.
    pub rejected: u64,
    /// Never started in the window.
    pub censored: u64,
    /// Recorded in the trace as never run.
    pub cancelled: u64,
    /// Still running at the end.
    pub running_at_end: u64,
    /// Running before the trace window.
    pub pre_existing: u64,
    /// Replay: recorded starts that did not fit.
    pub replay_conflicts: u64,
    /// Refusals by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Censored jobs by the reason they waited at the end.
    pub censored_by_reason: BTreeMap<String, u64>,
    /// Trace rows skipped by the format's convention, by reason.
    pub skipped_rows: BTreeMap<String, u64>,
}

/// Engine counters.
#[derive(Clone, Debug, Serialize)]
pub struct EngineFacts {
    /// Events applied.
    pub events: u64,
    /// Scheduling passes.
    pub passes: u64,
    /// Simulated time at the end, seconds.
    pub end_time_s: f64,
}

/// Context the run result does not carry.
pub struct SummaryInput<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// Description.
    pub description: &'a str,
    /// Seed.
    pub seed: u64,
    /// Mode name.
    pub mode: &'a str,
    /// Policy names by stage.
    pub policy: BTreeMap<String, String>,
    /// Cell names.
    pub cells: Vec<String>,
    /// Model names.
    pub models: Vec<String>,
    /// Nodes.
    pub nodes: u64,
    /// Accelerators per model.
    pub gpus_by_model: BTreeMap<String, u64>,
    /// Accelerators per cell.
    pub gpus_by_cell: BTreeMap<String, u64>,
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Builds the summary.
pub fn build(input: SummaryInput<'_>, r: &RunResult) -> Summary {
    let o = &r.occupancy;
    let alloc: u128 = o.allocated_cell.iter().sum();
    let avail: u128 = o.available_cell.iter().sum();
    let occ = ratio(alloc, avail);
    let by = |names: &[String], a: &[u128], b: &[u128]| {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), ratio(a[i], b[i])))
            .collect()
    };
    let c = &r.counts;
    Summary {
        scenario: input.scenario.to_string(),
        description: input.description.to_string(),
        seed: input.seed,
        mode: input.mode.to_string(),
        fleetsim_version: env!("CARGO_PKG_VERSION").to_string(),
        policy: input.policy,
        fleet: FleetFacts {
            cells: input.cells.len() as u64,
            nodes: input.nodes,
            gpus: input.gpus_by_model.values().sum(),
            gpus_by_model: input.gpus_by_model,
            gpus_by_cell: input.gpus_by_cell,
        },
        window: Window {
            start_s: secs(o.window_start.0),
            end_s: secs(o.window_end.0),
            length_s: secs((o.window_end - o.window_start).0),
        },
        end_reason: match r.end {
            EndReason::Drained => "drained",
            EndReason::Horizon => "horizon",
            EndReason::Stuck { .. } => "stuck",
        }
        .to_string(),
        jobs: Jobs {
            submitted: c.submitted,
            started: c.started,
            completed: c.completed,
            walltime_reached: c.walltime_reached,
            rejected: c.rejected,
            censored: c.censored,
            cancelled: c.cancelled,
            running_at_end: c.running_at_end,
            pre_existing: c.pre_existing,
            replay_conflicts: c.replay_conflicts,
            rejected_by_reason: c.rejected_by_reason.clone(),
            censored_by_reason: c.censored_by_reason.clone(),
            skipped_rows: r.skipped_rows.clone(),
        },
        occupancy: occ,
        unallocated_pct: occ.map(|v| 100.0 * (1.0 - v)),
        allocated_gpu_s: alloc as f64 / 1e6,
        available_gpu_s: avail as f64 / 1e6,
        occupancy_by_cell: by(&input.cells, &o.allocated_cell, &o.available_cell),
        occupancy_by_model: by(&input.models, &o.allocated_model, &o.available_model),
        wait_s: r.wait_s.clone(),
        jct_s: r.jct_s.clone(),
        bounded_slowdown: r.bounded_slowdown.clone(),
        makespan_s: r.makespan_ms.map(secs),
        topology: TopologySummary {
            gangs: o.topology.gangs,
            split_gangs: o.topology.split_gangs,
            largest_gang_gpus: o.topology.largest_gang.as_ref().map(|per_cell| {
                per_cell
                    .iter()
                    .enumerate()
                    .map(|(c, levels)| {
                        let m = fleetsim_policies::Level::ALL
                            .iter()
                            .zip(levels)
                            .map(|(l, &(mean, min))| {
                                (
                                    l.as_str().to_string(),
                                    LargestGang {
                                        mean: (mean * 1000.0).round() / 1000.0,
                                        min,
                                    },
                                )
                            })
                            .collect();
                        (input.cells[c].clone(), m)
                    })
                    .collect()
            }),
        },
        engine: EngineFacts {
            events: r.events,
            passes: r.passes,
            end_time_s: secs(r.end_time.0),
        },
        transforms: None,
    }
}
