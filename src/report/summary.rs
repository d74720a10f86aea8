//! `summary.json`: the scenario, seed, policy, versions and every metric under stable
//! snake_case keys with the unit in the name. Nothing in it depends on the wall clock, the
//! host or the thread count.

use std::collections::BTreeMap;

use serde::Serialize;

use fleetsim_policies::PendingReason;

use crate::engine::{EndReason, RunResult};
use crate::metrics::{ratio, Dist};

/// Version of `summary.json`'s layout (both the run's [`Summary`] and inflation mode's
/// [`crate::inflation::report::InflationSummary`]): `schemas/summary.schema.json` and
/// `schemas/inflation-summary.schema.json` describe this version. Raised when a key is
/// removed, renamed or changes meaning or unit; keys may be added within a version.
pub const SCHEMA_VERSION: u32 = 2;

/// The whole summary.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Scenario description.
    pub description: String,
    /// Seed used.
    pub seed: u64,
    /// `schedule` or `replay` (inflation mode writes
    /// [`crate::inflation::report::InflationSummary`] instead, `mode` = `inflation`).
    #[schemars(extend("enum" = ["schedule", "replay"]))]
    pub mode: String,
    /// fleetsim version.
    pub fleetsim_version: String,
    /// [`SCHEMA_VERSION`]: the layout of this document.
    pub schema_version: u32,
    /// Policy names by stage, by `[policy]` key. `queueing_strategy` also counts the
    /// declared queues by strategy when one sets its own
    /// (`default:strict-fifo;queues:best-effort-fifo=11`: the default, for queues not
    /// declared, then the declared queues' strategies).
    pub policy: BTreeMap<String, String>,
    /// Fleet facts.
    pub fleet: FleetFacts,
    /// The absolute time that t = 0 (every `*_s` time here and in `jobs.csv`) stands for:
    /// `time` (RFC 3339 UTC when `utc_offset_known`, else the trace's naive wall clock),
    /// `zone` as the trace or its documentation names it. `null` for traces without an
    /// absolute clock (synthetic, Alibaba, native, Tiresias). SWF: `UnixStartTime`; `sacct`:
    /// the first (sorted: earliest) submit; Philly, Helios: the earliest submit. Transforms
    /// never move t = 0.
    pub trace_start: Option<crate::workload::TraceStart>,
    /// Measurement window.
    pub window: Window,
    /// `drained`, `horizon` or `stuck`.
    pub end_reason: String,
    /// Job counts.
    pub jobs: Jobs,
    /// Useful occupancy: accelerator-time of work that completed or is still kept /
    /// available accelerator-time, over the window (null if nothing was available). Useful =
    /// allocated minus work lost to preemption, failure or eviction (since the last
    /// checkpoint), termination grace, gang members paused for their missing peers, and
    /// startup and restart overhead.
    pub occupancy: Option<f64>,
    /// Allocated / available accelerator-time over the window (the allocation rate:
    /// everything held, useful or not).
    pub allocated_occupancy: Option<f64>,
    /// 100 × (1 − allocated occupancy): the FGD paper's unallocated %.
    pub unallocated_pct: Option<f64>,
    /// Useful accelerator-seconds in the window (GPU-s): the numerator of `occupancy`.
    pub useful_gpu_s: f64,
    /// Allocated accelerator-seconds in the window (GPU-s).
    pub allocated_gpu_s: f64,
    /// Available accelerator-seconds in the window (GPU-s).
    pub available_gpu_s: f64,
    /// Accelerator-seconds held through a termination grace on failed nodes in the window
    /// (GPU-s): a down node's capacity and allocation leave together, so this is neither
    /// allocated nor available.
    pub held_on_failed_nodes_gpu_s: f64,
    /// Useful occupancy per cell.
    pub occupancy_by_cell: BTreeMap<String, Option<f64>>,
    /// Allocated occupancy per cell.
    pub allocated_occupancy_by_cell: BTreeMap<String, Option<f64>>,
    /// Useful occupancy per accelerator model.
    pub occupancy_by_model: BTreeMap<String, Option<f64>>,
    /// Allocated occupancy per accelerator model.
    pub allocated_occupancy_by_model: BTreeMap<String, Option<f64>>,
    /// Queueing delay (Tiresias's pending time): every second a job was pending — submit →
    /// first start, plus each preemption or failure → its next start (→ the end of the run
    /// for a job pending again then) — over the measured jobs that started, seconds. Serving
    /// replicas are not counted (see `serving.replica_wait_s`); censored jobs are counted
    /// apart (`jobs.censored`).
    pub wait_s: Dist,
    /// First start − submit (Batsim's waiting time; Kueue's admission wait), same jobs,
    /// seconds.
    pub first_start_wait_s: Dist,
    /// Job completion time (finish − submit) of the measured jobs that finished (serving
    /// replicas left out), seconds.
    pub jct_s: Dist,
    /// max(1, JCT / max(run time, 10 s)).
    pub bounded_slowdown: Dist,
    /// Last finish − first submit, seconds.
    pub makespan_s: Option<f64>,
    /// Fleet fragmentation over the window (FGD measure).
    pub fragmentation: FragmentationSummary,
    /// Gangs split across NVLink domains; largest placeable gang per cell and level.
    pub topology: TopologySummary,
    /// Engine work done.
    pub engine: EngineFacts,
    /// Preemptions, node failures and the work they cost.
    pub preemption: PreemptionFacts,
    /// Pending jobs per reason, integrated over the window: job-seconds spent waiting for
    /// each reason (`not_tried`, `no_capacity`, `fragmentation`, `gang`, `queue_max`,
    /// `strict_fifo_head`, `over_quota`, `borrowing_limit`, `cohort_quota`, `reservation`,
    /// `preempting`, `node_shape`).
    pub pending_reasons_job_s: BTreeMap<String, f64>,
    /// Fairness across tenants (DESIGN §6).
    pub fairness: Fairness,
    /// Per tenant, by name.
    pub tenants: BTreeMap<String, TenantSummary>,
    /// Node groups (a node shape of a cell, or an autoscaling group) on which no job of the
    /// workload could ever run, with why and the job classes that wanted them (empty when
    /// every group can host some job; see [`crate::fleet::usable`]).
    pub unusable_capacity: Vec<crate::fleet::usable::UnusableGroup>,
    /// The warnings the run printed: settings that had no effect (e.g. backfill without time
    /// limits), capacity no job could use. Studies print each once.
    pub warnings: Vec<String>,
    /// The scenario's `[transforms]` table as declared (absent when there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transforms: Option<serde_json::Value>,
    /// Goodput, lost work, failures and recovery (present only with `[failures]` or
    /// `[startup]`; see [`crate::reliability`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliability: Option<crate::reliability::ReliabilitySummary>,
    /// Queueing SLOs by name (present only with `[[metrics.slo]]`; see
    /// [`crate::metrics::slo`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<BTreeMap<String, crate::metrics::slo::SloResult>>,
    /// Cost, GPU-hours provisioned vs allocated and time pending for capacity of the
    /// autoscaled node groups (present only with `[[fleet.cells.autoscaling]]`; see
    /// [`crate::engine::autoscale`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<crate::engine::autoscale::AutoscaleStats>,
    /// Waiting for pods: admissions that waited for nodes, evictions for a pods-ready
    /// timeout, requeues and deactivations (present only with `[policy]
    /// wait_for_pods_ready`; see [`crate::engine::pods_ready`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods_ready: Option<crate::engine::pods_ready::PodsReadyStats>,
    /// Inference services beside training: replica shortfall and SLO attainment per
    /// service, training goodput, fleet occupancy (present only with `[serving]`; see
    /// [`crate::engine::serving`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serving: Option<crate::engine::serving::ServingStats>,
    /// Round-allocated (elastic) jobs: the allocator, rounds, reallocations and GPU-hours
    /// held (present only with `[elastic]`; see [`crate::engine::elastic`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elastic: Option<crate::engine::elastic::ElasticStats>,
}

/// Fleet fragmentation over the window (DESIGN §6; Weng et al., ATC'23): the expected
/// free GPU-milli that a task drawn from the workload's typical tasks cannot use, summed over
/// nodes. The engine samples it at every time-series interval start (the `fragmented_*`
/// columns of `timeseries.csv`); here each sample stands for its whole interval. All
/// fields are `null` when no sample was defined (no GPU task submitted yet, or no interval).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct FragmentationSummary {
    /// Time-weighted mean of fragmented GPUs: `Σ frag·len / Σ len`, GPUs.
    pub mean_gpus: Option<f64>,
    /// Time-weighted fragmented share of capacity: `100 · Σ frag·len / Σ available·len`, %.
    pub mean_pct_of_capacity: Option<f64>,
    /// Fragmented over idle GPU-time: `Σ frag·len / Σ idle·len` (0–1; the FGD paper's
    /// fragmentation ratio, time-weighted).
    pub mean_ratio_to_idle: Option<f64>,
    /// Largest sample, GPUs.
    pub max_gpus: Option<f64>,
}

/// Time-weighted fragmentation over the series rows that hold a sample.
fn fragmentation(series: &[crate::metrics::SeriesRow]) -> FragmentationSummary {
    let (mut frag_ms, mut len_ms, mut avail_ms, mut idle_ms, mut max) =
        (0u128, 0u128, 0u128, 0u128, None);
    for row in series {
        let Some(f) = row.frag_milli else { continue };
        let len = u128::from(row.len_ms);
        frag_ms += u128::from(f) * len;
        len_ms += len;
        avail_ms += row.available_milli.iter().sum::<u128>();
        idle_ms += u128::from(row.idle_milli) * len;
        max = Some(max.map_or(f, |m: u64| m.max(f)));
    }
    FragmentationSummary {
        mean_gpus: ratio(frag_ms, len_ms).map(|v| v / 1000.0),
        mean_pct_of_capacity: ratio(frag_ms, avail_ms).map(|v| 100.0 * v),
        mean_ratio_to_idle: ratio(frag_ms, idle_ms),
        max_gpus: max.map(|m| m as f64 / 1000.0),
    }
}

/// Topology metrics (DESIGN §6).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TopologySummary {
    /// Started gangs (jobs of more than one task).
    pub gangs: u64,
    /// Of those, gangs whose tasks span more than one NVLink domain.
    pub split_gangs: u64,
    /// Of the split gangs, those whose whole request fits the largest NVLink domain of their
    /// cell: a placement could have kept them in one domain (the others are larger than
    /// every domain and split under any policy).
    pub avoidable_split_gangs: u64,
    /// Per cell, per level (`node`, `domain`, `block`, `cell`): the largest gang of 1-GPU
    /// tasks that could start inside one group of the level — time-weighted mean and minimum
    /// over the window, whole GPUs. Present when the fleet has multi-node NVLink domains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_gang_gpus: Option<BTreeMap<String, BTreeMap<String, LargestGang>>>,
}

/// Largest placeable gang over the window.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct LargestGang {
    /// Time-weighted mean, GPUs.
    pub mean: f64,
    /// Minimum, GPUs.
    pub min: u64,
}

/// Preemption and failure counts.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct PreemptionFacts {
    /// Preemptions (a job preempted twice counts twice).
    pub preemptions: u64,
    /// Preemptions by rule (`within_queue`, `reclaim`, `fair_share`, `tier`, `priority`, `las`).
    pub by_reason: BTreeMap<String, u64>,
    /// Runs stopped by node failures.
    pub failures: u64,
    /// Accelerator-time lost: progress since the last checkpoint of every stopped run plus
    /// the time victims held their accelerators in a grace period, GPU-s.
    pub lost_gpu_s: f64,
    /// `lost_gpu_s` in GPU-hours.
    pub lost_gpu_h: f64,
    /// Preemptions per started job (`preemptions / jobs.started`; null when none started).
    pub preemptions_per_job: Option<f64>,
    /// Started jobs pending again (requeued) when the run stopped.
    pub requeued_at_end: u64,
}

/// Fairness across tenants.
///
/// A tenant's **share** is its allocated accelerator-time over everyone's, in the window; its
/// **entitlement** is its nominal GPU quota (the queue named after it) over the sum of the
/// tenants' nominal quotas (`nominal_quota`), or an equal part when no quota is configured
/// (`equal`). **Jain's index** (Jain, Chiu & Hawe, 1984) over `x_i = share_i / entitlement_i`
/// is `(Σx)² / (n Σx²)`: 1 when every tenant got exactly its entitlement, `1/n` when one got
/// everything. The **demand-capped** index uses `x_i = allocated_i / min(entitlement_i ×
/// capacity, demand_i)` instead, so a tenant that asked for less than its entitlement and got
/// it counts as served. Tenants without jobs or entitlement are left out.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Fairness {
    /// `nominal_quota` or `equal`.
    pub entitlement_basis: String,
    /// Tenants counted.
    pub tenants: u64,
    /// Jain's index over share / entitlement (null with no tenant).
    pub jain_index: Option<f64>,
    /// Jain's index over allocation / min(entitled allocation, demand).
    pub jain_index_demand_capped: Option<f64>,
}

/// One tenant's results.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TenantSummary {
    /// Jobs submitted.
    pub jobs: u64,
    /// Jobs started at least once.
    pub started: u64,
    /// Allocated accelerator-time in the window, GPU-s.
    pub allocated_gpu_s: f64,
    /// Share of all allocated accelerator-time in the window.
    pub share: Option<f64>,
    /// Entitled share (see [`Fairness`]).
    pub entitlement: Option<f64>,
    /// share / entitlement.
    pub share_over_entitlement: Option<f64>,
    /// Nominal GPU quota of its queue, GPUs (null without quota).
    pub nominal_gpus: Option<f64>,
    /// Accelerator-time its jobs asked for (run time × accelerators), GPU-s.
    pub demand_gpu_s: f64,
    /// Times its jobs were preempted.
    pub preemptions: u64,
    /// Times its jobs were lost to node failures.
    pub failures: u64,
    /// Accelerator-time it lost, GPU-s.
    pub lost_gpu_s: f64,
    /// Waits (all pending time, as the fleet's `wait_s`) of its measured jobs that
    /// started, seconds.
    pub wait_s: Dist,
}

/// Fleet facts: the fixed nodes, and the autoscaled groups' at their `max_nodes` apart.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct FleetFacts {
    /// Cells.
    pub cells: u64,
    /// Fixed nodes (not autoscaled).
    pub nodes: u64,
    /// Accelerators of the fixed nodes.
    pub gpus: u64,
    /// Accelerators of the fixed nodes per model.
    pub gpus_by_model: BTreeMap<String, u64>,
    /// Accelerators of the fixed nodes per cell.
    pub gpus_by_cell: BTreeMap<String, u64>,
    /// Nodes of the autoscaled groups at their `max_nodes` (0 without autoscaling).
    pub autoscaled_nodes_max: u64,
    /// Accelerators of the autoscaled groups at their `max_nodes`.
    pub autoscaled_gpus_max: u64,
}

/// The window.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Window {
    /// Start, seconds since t = 0.
    pub start_s: f64,
    /// End, seconds since t = 0.
    pub end_s: f64,
    /// Length, seconds.
    pub length_s: f64,
}

/// Job counts (`started + rejected + censored + cancelled = submitted`).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Jobs {
    /// Read from the workload and submitted by the horizon.
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
    /// Recorded in the trace as never run, or serving replicas withdrawn at their planned
    /// stop before they ever started.
    pub cancelled: u64,
    /// Still running at the end.
    pub running_at_end: u64,
    /// Running before the trace window.
    pub pre_existing: u64,
    /// Replay: recorded starts that did not fit.
    pub replay_conflicts: u64,
    /// Started, then preempted or lost, and pending again at the end.
    pub requeued_at_end: u64,
    /// Refusals by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Censored jobs by the reason they waited at the end (`dispatching`: still inside
    /// `policy.dispatch_latency_s`; `recorded_start_after_horizon`: replay, awaiting a
    /// recorded start; otherwise a pending reason).
    pub censored_by_reason: BTreeMap<String, u64>,
    /// Trace rows not simulated, by reason, over the whole workload: skipped by the format's
    /// convention, dropped by `[transforms]` (`transform_window`, `transform_sample`), or
    /// submitted after `metrics.horizon_s` (`after_horizon`: read, not submitted, not in
    /// `jobs.csv`).
    pub skipped_rows: BTreeMap<String, u64>,
}

/// Engine counters.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
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
    /// Fixed nodes.
    pub nodes: u64,
    /// Accelerators of the fixed nodes per model.
    pub gpus_by_model: BTreeMap<String, u64>,
    /// Accelerators of the fixed nodes per cell.
    pub gpus_by_cell: BTreeMap<String, u64>,
    /// Nodes and accelerators of the autoscaled groups at their `max_nodes`.
    pub autoscaled: (u64, u64),
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Builds the summary.
pub fn build(input: SummaryInput<'_>, r: &RunResult) -> Summary {
    let o = &r.occupancy;
    let alloc: u128 = o.allocated_cell.iter().sum();
    let avail: u128 = o.available_cell.iter().sum();
    let useful_cell = useful(&o.allocated_cell, &o.unproductive_cell);
    let useful_model = useful(&o.allocated_model, &o.unproductive_model);
    let use_total: u128 = useful_cell.iter().sum();
    let occ = ratio(alloc, avail);
    let by = |names: &[String], a: &[u128], b: &[u128]| {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), ratio(a[i], b[i])))
            .collect()
    };
    let c = &r.counts;
    let (fair, tenants) = fairness(r, avail);
    Summary {
        scenario: input.scenario.to_string(),
        description: input.description.to_string(),
        seed: input.seed,
        mode: input.mode.to_string(),
        fleetsim_version: env!("CARGO_PKG_VERSION").to_string(),
        schema_version: SCHEMA_VERSION,
        policy: input.policy,
        fleet: FleetFacts {
            cells: input.cells.len() as u64,
            nodes: input.nodes,
            gpus: input.gpus_by_model.values().sum(),
            gpus_by_model: input.gpus_by_model,
            gpus_by_cell: input.gpus_by_cell,
            autoscaled_nodes_max: input.autoscaled.0,
            autoscaled_gpus_max: input.autoscaled.1,
        },
        trace_start: r.trace_start.clone(),
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
            requeued_at_end: c.requeued_at_end,
            rejected_by_reason: c.rejected_by_reason.clone(),
            censored_by_reason: c.censored_by_reason.clone(),
            skipped_rows: r.skipped_rows.clone(),
        },
        occupancy: ratio(use_total, avail),
        allocated_occupancy: occ,
        unallocated_pct: occ.map(|v| 100.0 * (1.0 - v)),
        useful_gpu_s: use_total as f64 / 1e6,
        allocated_gpu_s: alloc as f64 / 1e6,
        available_gpu_s: avail as f64 / 1e6,
        held_on_failed_nodes_gpu_s: o.held_on_failed_nodes as f64 / 1e6,
        occupancy_by_cell: by(&input.cells, &useful_cell, &o.available_cell),
        allocated_occupancy_by_cell: by(&input.cells, &o.allocated_cell, &o.available_cell),
        occupancy_by_model: by(&input.models, &useful_model, &o.available_model),
        allocated_occupancy_by_model: by(&input.models, &o.allocated_model, &o.available_model),
        wait_s: r.wait_s.clone(),
        first_start_wait_s: r.first_start_wait_s.clone(),
        jct_s: r.jct_s.clone(),
        bounded_slowdown: r.bounded_slowdown.clone(),
        makespan_s: r.makespan_ms.map(secs),
        fragmentation: fragmentation(&o.series),
        topology: TopologySummary {
            gangs: o.topology.gangs,
            split_gangs: o.topology.split_gangs,
            avoidable_split_gangs: o.topology.avoidable_split_gangs,
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
        preemption: PreemptionFacts {
            preemptions: c.preemptions,
            by_reason: c.preemptions_by_reason.clone(),
            failures: c.failures,
            lost_gpu_s: r.lost_gpu_milli_ms as f64 / 1e6,
            lost_gpu_h: r.lost_gpu_milli_ms as f64 / 3.6e9,
            preemptions_per_job: (c.started > 0).then(|| c.preemptions as f64 / c.started as f64),
            requeued_at_end: c.requeued_at_end,
        },
        pending_reasons_job_s: pending_reasons_job_s(o),
        fairness: fair,
        tenants,
        unusable_capacity: Vec::new(),
        warnings: Vec::new(),
        transforms: None,
        reliability: None,
        slo: None,
        autoscaling: r.autoscaling.clone(),
        pods_ready: r.pods_ready.clone(),
        serving: r.serving.clone(),
        elastic: r.elastic.clone(),
    }
}

/// `allocated − unproductive`, elementwise (GPU-milli·ms).
fn useful(allocated: &[u128], unproductive: &[u128]) -> Vec<u128> {
    allocated
        .iter()
        .enumerate()
        .map(|(i, &a)| a.saturating_sub(unproductive.get(i).copied().unwrap_or(0)))
        .collect()
}

/// Job-seconds pending per reason over the window, every reason listed (zero when unseen):
/// the time-series integrals of the pending-reason counts, summed.
fn pending_reasons_job_s(o: &crate::metrics::Occupancy) -> BTreeMap<String, f64> {
    PendingReason::ALL
        .iter()
        .map(|p| {
            let total: u128 = o
                .pending_reasons
                .iter()
                .position(|&n| n == p.as_str())
                .map_or(0, |i| {
                    o.series
                        .iter()
                        .map(|r| r.pending_by_reason_ms.get(i).copied().unwrap_or(0))
                        .sum()
                });
            (p.as_str().to_string(), total as f64 / 1000.0)
        })
        .collect()
}

/// The fairness figures and per-tenant summaries (see [`Fairness`]).
fn fairness(r: &RunResult, capacity: u128) -> (Fairness, BTreeMap<String, TenantSummary>) {
    let alloc = |i: usize| r.occupancy.allocated_tenant.get(i).copied().unwrap_or(0);
    let total: u128 = (0..r.tenants.len()).map(alloc).sum();
    let quota_basis = r.tenants.iter().any(|t| t.entitlement_gpu_milli.is_some());
    // Tenants counted: with jobs, and (under quota) with a non-zero nominal quota.
    let counted: Vec<usize> = (0..r.tenants.len())
        .filter(|&i| {
            let t = &r.tenants[i];
            t.jobs > 0 && (!quota_basis || t.entitlement_gpu_milli.is_some_and(|e| e > 0))
        })
        .collect();
    let ent_total: u128 = counted
        .iter()
        .map(|&i| r.tenants[i].entitlement_gpu_milli.unwrap_or(0) as u128)
        .sum();
    let entitlement = |i: usize| -> Option<f64> {
        if !counted.contains(&i) {
            return None;
        }
        if quota_basis {
            (ent_total > 0)
                .then(|| r.tenants[i].entitlement_gpu_milli.unwrap_or(0) as f64 / ent_total as f64)
        } else {
            Some(1.0 / counted.len() as f64)
        }
    };
    let share = |i: usize| ratio(alloc(i), total);
    let jain = |xs: &[f64]| -> Option<f64> {
        let n = xs.len() as f64;
        let sum: f64 = xs.iter().sum();
        let sq: f64 = xs.iter().map(|x| x * x).sum();
        (sq > 0.0).then(|| sum * sum / (n * sq))
    };
    let xs: Vec<f64> = counted
        .iter()
        .filter_map(|&i| Some(share(i)? / entitlement(i)?))
        .collect();
    let capped: Vec<f64> = counted
        .iter()
        .filter_map(|&i| {
            let entitled = entitlement(i)? * capacity as f64;
            let d = (r.tenants[i].demand_gpu_milli_ms as f64).min(entitled);
            (d > 0.0).then(|| alloc(i) as f64 / d)
        })
        .collect();
    let f = Fairness {
        entitlement_basis: if quota_basis {
            "nominal_quota"
        } else {
            "equal"
        }
        .to_string(),
        tenants: counted.len() as u64,
        jain_index: jain(&xs),
        jain_index_demand_capped: jain(&capped),
    };
    let per = r
        .tenants
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let sh = share(i);
            let ent = entitlement(i);
            (
                t.name.clone(),
                TenantSummary {
                    jobs: t.jobs,
                    started: t.started,
                    allocated_gpu_s: alloc(i) as f64 / 1e6,
                    share: sh,
                    entitlement: ent,
                    share_over_entitlement: match (sh, ent) {
                        (Some(s), Some(e)) if e > 0.0 => Some(s / e),
                        _ => None,
                    },
                    nominal_gpus: t.entitlement_gpu_milli.map(|e| e as f64 / 1000.0),
                    demand_gpu_s: t.demand_gpu_milli_ms as f64 / 1e6,
                    preemptions: t.preemptions,
                    failures: t.failures,
                    lost_gpu_s: t.lost_gpu_milli_ms as f64 / 1e6,
                    wait_s: t.wait_s.clone(),
                },
            )
        })
        .collect();
    (f, per)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::SeriesRow;

    fn row(len_ms: u64, frag: Option<u64>, idle: u64, avail_milli: u64) -> SeriesRow {
        SeriesRow {
            len_ms,
            frag_milli: frag,
            idle_milli: idle,
            available_milli: vec![u128::from(avail_milli) * u128::from(len_ms)],
            ..SeriesRow::default()
        }
    }

    #[test]
    fn fragmentation_is_time_weighted_over_defined_samples() {
        // 8 GPUs available throughout. Interval 1 (1,000 ms): 2 GPUs fragmented of 4 idle;
        // interval 2 (3,000 ms): 1 GPU of 2 idle; interval 0 has no sample yet.
        let rows = [
            row(5_000, None, 8_000, 8_000),
            row(1_000, Some(2_000), 4_000, 8_000),
            row(3_000, Some(1_000), 2_000, 8_000),
        ];
        let f = fragmentation(&rows);
        // (2·1 + 1·3) / 4 = 1.25 GPUs; 1.25 / 8 = 15.625 %; 5 / (4·1 + 2·3) = 0.5.
        assert_eq!(f.mean_gpus, Some(1.25));
        assert_eq!(f.mean_pct_of_capacity, Some(15.625));
        assert_eq!(f.mean_ratio_to_idle, Some(0.5));
        assert_eq!(f.max_gpus, Some(2.0));
        let none = fragmentation(&rows[..1]);
        assert_eq!(
            (none.mean_gpus, none.mean_pct_of_capacity, none.max_gpus),
            (None, None, None)
        );
    }
}
