//! Property tests: on random fleets and workloads, under every policy combination, no node is
//! ever over-allocated (the engine audits the fleet after every instant), accelerator-time is
//! conserved, every job is accounted for, no job starts before it is submitted, gangs are
//! placed whole, and a strict-FIFO queue starts its jobs in queue order.

use std::collections::BTreeMap;

use fleetsim::engine::{EngineConfig, FinalState, JobRow, Simulation};
use fleetsim::scenario::QueueMapping;
use fleetsim::workload::{JobSpec, VecStream};
use fleetsim_policies::{
    CellId, CellSelectKind, FleetState, NodeSpec, PlacementKind, QueueOrderKind, QueueingStrategy,
    SchedulerConfig, SimDuration, SimTime, TaskShape,
};
use proptest::prelude::*;

use crate::support::{fleet_state, node};

fn fleet(nodes: &[(u8, u8)]) -> FleetState {
    let specs = nodes
        .iter()
        .enumerate()
        .map(|(i, &(cell, gpus))| NodeSpec {
            cell: CellId(cell as u16),
            ..node(i, gpus as u32)
        })
        .collect();
    fleet_state(&["a", "b"], &["H100"], specs)
}

#[derive(Clone, Debug)]
struct J {
    gap_s: u8,
    tasks: u8,
    gpus: u8,
    milli: u16,
    cpu: u16,
    run_s: u16,
    tenant: u8,
    prio: i8,
}

fn job_strategy() -> impl Strategy<Value = J> {
    (
        0u8..20,
        1u8..4,
        0u8..9,
        1u16..=1000,
        0u16..8000,
        0u16..500,
        0u8..3,
        -2i8..3,
    )
        .prop_map(|(gap_s, tasks, gpus, milli, cpu, run_s, tenant, prio)| J {
            gap_s,
            tasks,
            gpus,
            milli,
            cpu,
            run_s,
            tenant,
            prio,
        })
}

fn specs(jobs: &[J]) -> Vec<JobSpec> {
    let mut t = 0u64;
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            t += j.gap_s as u64;
            let gpu_milli = if j.gpus == 0 {
                0
            } else if j.gpus == 1 {
                j.milli as u32
            } else {
                1000
            };
            JobSpec {
                tasks: j.tasks as u32,
                shape: TaskShape {
                    num_gpu: j.gpus as u32,
                    gpu_milli,
                    cpu_milli: j.cpu as u64,
                    mem_mib: 0,
                },
                priority: j.prio as i32,
                ..JobSpec::simple(
                    &format!("j{i}"),
                    &format!("t{}", j.tenant),
                    t,
                    0,
                    j.run_s as u64,
                )
            }
        })
        .collect()
}

fn simulate(
    nodes: &[(u8, u8)],
    jobs: &[JobSpec],
    policies: SchedulerConfig,
) -> (fleetsim::engine::RunResult, Vec<JobRow>) {
    let cfg = EngineConfig {
        interval_ms: 7_000,
        audit_every_instant: true,
        queue_mapping: QueueMapping::PerTenant,
        ..EngineConfig::default()
    };
    let mut sim = Simulation::new(fleet(nodes), policies, cfg);
    let mut rows = Vec::new();
    let mut stream = VecStream::new(jobs.to_vec(), BTreeMap::new());
    let r = sim
        .run(&mut stream, &mut rows, &mut |_, _| {})
        .expect("run succeeds and audits pass");
    (r, rows)
}

fn policies() -> impl Strategy<Value = SchedulerConfig> {
    (
        0usize..2,
        0usize..2,
        0usize..PlacementKind::NAMES.len(),
        0usize..2,
    )
        .prop_map(|(o, s, p, c)| SchedulerConfig {
            queue_order: [QueueOrderKind::Fifo, QueueOrderKind::Priority][o].into(),
            queueing_strategy: [
                QueueingStrategy::StrictFifo,
                QueueingStrategy::BestEffortFifo,
            ][s],
            placement: PlacementKind::NAMES[p]
                .parse::<PlacementKind>()
                .unwrap()
                .into(),
            cell_selection: [CellSelectKind::FirstFit, CellSelectKind::LeastLoaded][c].into(),
            topology: None,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn capacity_conservation_and_accounting(
        nodes in proptest::collection::vec((0u8..2, 1u8..9), 1..6),
        jobs in proptest::collection::vec(job_strategy(), 1..40),
        policies in policies(),
    ) {
        let specs = specs(&jobs);
        let (r, rows) = simulate(&nodes, &specs, policies);
        let c = &r.counts;
        prop_assert_eq!(c.started + c.rejected + c.censored + c.cancelled, c.submitted);
        prop_assert_eq!(c.submitted, specs.len() as u64);
        prop_assert_eq!(rows.len(), specs.len());
        // Nothing can be stuck: every job that is not rejected fits an empty cell.
        prop_assert_eq!(c.censored, 0);
        // Accelerator-time is conserved: the occupancy integral equals the sum over jobs of
        // GPU-milli × run time (ms).
        let mut per_job: u128 = 0;
        for row in &rows {
            if let (Some(s), Some(run)) = (row.start, row.run_ms) {
                prop_assert!(s >= row.submit, "job {} starts before it is submitted", row.name);
                prop_assert_eq!(row.nodes.len(), row.tasks as usize, "gang placed whole");
                per_job += (row.shape.total_gpu_milli() * row.tasks as u64) as u128 * run as u128;
            }
            prop_assert!(matches!(row.state, FinalState::Completed | FinalState::Rejected));
        }
        let integral: u128 = r.occupancy.allocated_cell.iter().sum();
        prop_assert_eq!(integral, per_job);
        let series: u128 = r.occupancy.series.iter().flat_map(|s| s.allocated_milli.iter()).sum();
        prop_assert_eq!(series, per_job, "the time series integrates to the same total");
        if let Some(o) = r.occupancy.available_cell.iter().sum::<u128>().checked_sub(0) {
            prop_assert!(integral <= o, "never more allocated than available");
        }
    }

    #[test]
    fn strict_fifo_starts_each_queue_in_order(
        nodes in proptest::collection::vec((0u8..2, 1u8..9), 1..5),
        jobs in proptest::collection::vec(job_strategy(), 1..40),
    ) {
        let specs = specs(&jobs);
        let policies = SchedulerConfig {
            queue_order: QueueOrderKind::Fifo.into(),
            queueing_strategy: QueueingStrategy::StrictFifo,
            ..SchedulerConfig::default()
        };
        let (_, rows) = simulate(&nodes, &specs, policies);
        let mut last_start: BTreeMap<String, SimTime> = BTreeMap::new();
        let mut by_id: Vec<&JobRow> = rows.iter().filter(|r| r.start.is_some()).collect();
        by_id.sort_by_key(|r| r.id);
        for r in by_id {
            let s = r.start.unwrap();
            if let Some(&prev) = last_start.get(&r.queue) {
                prop_assert!(s >= prev, "{} started before an earlier job of queue {}", r.name, r.queue);
            }
            last_start.insert(r.queue.clone(), s);
        }
    }

    #[test]
    fn same_input_same_rows(
        nodes in proptest::collection::vec((0u8..2, 1u8..9), 1..5),
        jobs in proptest::collection::vec(job_strategy(), 1..30),
        policies in policies(),
    ) {
        let specs = specs(&jobs);
        let (_, a) = simulate(&nodes, &specs, policies.clone());
        let (_, b) = simulate(&nodes, &specs, policies);
        prop_assert_eq!(a, b);
    }
}

#[test]
fn time_limits_cut_runs() {
    let mut j = JobSpec::simple("long", "t", 0, 1, 100);
    j.time_limit = Some(SimDuration::from_secs(30));
    let (r, rows) = simulate(&[(0, 1)], &[j], SchedulerConfig::default());
    assert_eq!(rows[0].state, FinalState::WalltimeReached);
    assert_eq!(rows[0].run_ms, Some(30_000));
    assert_eq!(r.counts.walltime_reached, 1);
}
