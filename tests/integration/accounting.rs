//! Issue 17, accounting you can trust: occupancy never above 1 with failures and grace
//! (held on failed nodes as its own account), conservation of accelerator-time, exact
//! totals for huge requests, never-fitting jobs rejected at submit, the measurement window
//! with a horizon, and per-job figures computed as the summary's.

use fleetsim::engine::FinalState;
use proptest::prelude::*;

use crate::support::{job, last_span, one_cell_first_fit, run};

/// A one-cell fleet of named 8-GPU H100 nodes, native trace `jobs.csv`, first-fit.
/// A failed node's capacity and the allocation it still holds through the grace leave
/// together.
///
/// n1, n2 (8 GPUs each). J and K (8 GPUs, 1,000 s) start at 0 on n1 and n2. n1 fails at
/// 100 s with a 300 s grace and is never repaired: J holds n1 until 400, then waits for n2
/// (K's until 1,000) and runs 1,000–2,000 (no checkpoint: its 100 s are lost).
/// Window 0–2,000. Available: n1 8 × 100 + n2 8 × 2,000 = 16,800 GPU-s. Allocated: J on n1
/// 8 × 100 = 800 (the grace 100–400 is on a failed node: not allocated), K 8,000, J again
/// 8,000 = 16,800 → allocated occupancy exactly 1 (it was 19,200 / 16,800 = 1.143 when the
/// grace counted); J's first 100 s were lost, so useful occupancy is 16,000 / 16,800. Held on failed nodes 8 × 300 = 2,400 GPU-s. Interval 100–200 (100 s
/// intervals): available n2 800, allocated K 800 → 1.0 (was 1,600 / 800 = 2.0).
/// The account: allocated J (100 + 300) × 8 + 8,000 + K 8,000 = 19,200 = goodput 16,000
/// + lost 8 × 100 = 800 + startup 0 + held on failed nodes 2,400.
#[test]
fn grace_on_a_failed_node_is_held_not_occupancy() {
    let scenario = format!(
        "name = \"held\"\n{}[metrics]\ntimeseries_interval_s = 100\n[[node_events]]\nat_s = 100\nnode = \"n1\"\nkind = \"fail\"\ngrace_s = 300\n[failures]\n",
        one_cell_first_fit(&["n1", "n2"], "H100", 8)
    );
    let out = run(
        &scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,runtime_s\nJ,0,T,8,1000\nK,0,T,8,1000\n",
        )],
    );
    assert_eq!(last_span(&out, "J"), (Some(1000), Some(2000)));
    let s = &out.summary;
    assert_eq!(s.available_gpu_s, 16_800.0);
    assert_eq!(s.allocated_gpu_s, 16_800.0);
    assert_eq!(s.allocated_occupancy, Some(1.0));
    assert_eq!(s.useful_gpu_s, 16_000.0);
    assert_eq!(s.occupancy, Some(16_000.0 / 16_800.0));
    assert_eq!(s.held_on_failed_nodes_gpu_s, 2_400.0);
    let series = &out.result.occupancy.series;
    let row = series.iter().find(|r| r.start.0 == 100_000).unwrap();
    assert_eq!(row.available_milli[0], 800 * 1_000_000);
    assert_eq!(row.allocated_milli[0], 800 * 1_000_000);
    let r = s.reliability.as_ref().unwrap();
    assert_eq!(r.allocated_gpu_s, 19_200.0);
    assert_eq!(r.goodput_gpu_s, 16_000.0);
    assert_eq!(r.lost_gpu_s, 800.0);
    assert_eq!(r.lost_to_failures_gpu_s, 800.0);
    assert_eq!(r.held_on_failed_nodes_gpu_s, 2_400.0);
    let j = job(&out, "J");
    assert_eq!(j.lost_gpu_milli_ms, 800 * 1_000_000);
    assert_eq!(j.held_on_failed_gpu_milli_ms, 2_400 * 1_000_000);
}

/// A node repaired while a job's grace still holds part of it, and another job running and
/// ending there meanwhile: the held account is the grace's, whatever else the node runs.
/// n0 and n1 (8 GPUs), first fit. A (4 GPUs, 1,000 s) starts on n0 at 0; n0 fails at 100
/// with a 300 s grace and is repaired at 150; B (2 GPUs, 100 s) starts on n0 at 200 (beside
/// A's 4 held GPUs) and ends at 300; A's grace ends at 400 and it reruns 400 to 1,400 (no
/// checkpoint). Held on failed nodes: A's 4 GPUs for 300 s, 1,200 GPU-s (B's release at 300
/// takes nothing from it). Occupancy's allocated time: A's 4 × 100 and 4 × 1,000 with B's
/// 2 × 100, 4,600 GPU-s, of which 4,200 useful (A's first 100 s are lost). Available over
/// 0 to 1,400: 16 × 1,400 less n0's 8 × 50 while down, 22,000 GPU-s.
#[test]
fn a_release_on_a_repaired_node_leaves_another_jobs_held_grace_alone() {
    let scenario = format!(
        "name = \"repaired\"\n{}[[node_events]]\nat_s = 100\nnode = \"n0\"\nkind = \"fail\"\ngrace_s = 300\n[[node_events]]\nat_s = 150\nnode = \"n0\"\nkind = \"repair\"\n[failures]\n",
        one_cell_first_fit(&["n0", "n1"], "H100", 8)
    );
    let out = run(
        &scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,runtime_s\nA,0,T,4,1000\nB,200,T,2,100\n",
        )],
    );
    assert_eq!(last_span(&out, "A"), (Some(400), Some(1400)));
    assert_eq!(last_span(&out, "B"), (Some(200), Some(300)));
    let s = &out.summary;
    assert_eq!(s.held_on_failed_nodes_gpu_s, 1_200.0);
    assert_eq!(
        s.reliability.as_ref().unwrap().held_on_failed_nodes_gpu_s,
        1_200.0
    );
    assert_eq!(s.allocated_gpu_s, 4_600.0);
    assert_eq!(s.useful_gpu_s, 4_200.0);
    assert_eq!(s.available_gpu_s, 22_000.0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, max_shrink_iters: 50, ..ProptestConfig::default() })]

    /// With generated failures, maintenance drains and evictions, a termination grace and
    /// hot spares, under both gang-recovery rules: occupancy ≤ 1 in every time-series
    /// interval and over the window, and accelerator-time is conserved: allocated = goodput
    /// + lost + startup + held on failed nodes + held by incomplete gangs, per job (a
    /// completed job's goodput is its run time × accelerators) and in total, and the
    /// occupancy integral's allocated + held on failed nodes equals the account's allocated
    /// time (survivors of an incomplete gang are bound on up nodes: occupancy).
    #[test]
    fn occupancy_at_most_one_and_accelerator_time_conserved(
        seed in 0u64..1000,
        jobs in prop::collection::vec((0u64..3000, 1u32..=8, 1u32..=2, 1u64..1500), 1..14),
        ckpt in prop::option::of(50u64..400),
        grace in 0u64..120,
        spares in 0u32..=1,
        maint in prop::collection::vec((0usize..4, 0u64..3000, 0u64..600, 1u64..900), 0..3),
        keep in any::<bool>(),
    ) {
        let rule = if keep { "keep_survivors" } else { "restart" };
        let mut sorted = jobs.clone();
        sorted.sort_by_key(|j| j.0);
        let mut csv = String::from("id,submit_s,tenant,num_gpu,tasks,runtime_s\n");
        for (i, (t, g, k, r)) in sorted.iter().enumerate() {
            csv += &format!("j{i},{t},T{},{g},{k},{r}\n", i % 2);
        }
        let mut toml = format!(
            "name = \"prop\"\nseed = {seed}\n{}gang_recovery = \"{rule}\"\n[metrics]\ntimeseries_interval_s = 50\n[failures]\nmtbf_h = {{ H100 = 0.4 }}\nrepair = {{ distribution = \"exponential\", mean_s = 300 }}\nuntil_s = 4000\ngrace_s = {grace}\nspares_per_cell = {spares}\n",
            one_cell_first_fit(&["n0", "n1", "n2", "n3"], "H100", 8)
        );
        if let Some(c) = ckpt {
            toml += &format!("[policy.preemption]\ncheckpoint_interval_s = {c}\n");
        }
        for (n, at, deadline, dur) in &maint {
            toml += &format!("[[failures.maintenance]]\nat_s = {at}\nnodes = [\"n{n}\"]\ndeadline_s = {deadline}\nduration_s = {dur}\n");
        }
        let out = run(&toml, &[("jobs.csv", &csv)]);
        let s = &out.summary;
        if let Some(o) = s.occupancy {
            prop_assert!(o <= 1.0 + 1e-12, "occupancy {}", o);
        }
        for r in &out.result.occupancy.series {
            let (a, v): (u128, u128) = (r.allocated_milli.iter().sum(), r.available_milli.iter().sum());
            prop_assert!(a <= v, "interval at {:?}: allocated {} > available {}", r.start, a, v);
        }
        let mut total = 0u128;
        let mut kept_total = 0u128;
        for r in out.jobs.as_ref().unwrap() {
            prop_assert_eq!(r.state, FinalState::Completed, "{:?}", r);
            let gpu = r.shape.total_gpu_milli() * r.tasks as u64;
            let (_, _, _, runtime) = sorted[r.id as usize];
            let kept = r.allocated_gpu_milli_ms - r.lost_gpu_milli_ms - r.startup_gpu_milli_ms
                - r.held_on_failed_gpu_milli_ms - r.held_by_incomplete_gang_gpu_milli_ms;
            prop_assert_eq!(kept, runtime * 1000 * gpu, "{:?}", r);
            total += r.allocated_gpu_milli_ms as u128;
            kept_total += kept as u128;
        }
        // Useful occupancy's numerator is exactly the kept work: every run lies inside the
        // window (first submit to last completion), and the occupancy integral's
        // unproductive part is the lost work, grace, startup and paused members.
        let o = &out.result.occupancy;
        let useful: u128 = o.allocated_cell.iter().zip(&o.unproductive_cell).map(|(a, u)| a - u).sum();
        prop_assert_eq!(useful, kept_total);
        for r in &o.series {
            for (a, u) in r.allocated_milli.iter().zip(&r.unproductive_milli) {
                prop_assert!(u <= a, "interval at {:?}: unproductive {} > allocated {}", r.start, u, a);
            }
        }
        let rel = s.reliability.as_ref().unwrap();
        prop_assert_eq!(rel.allocated_gpu_s, total as f64 / 1e6);
        let incomplete = rel.held_by_incomplete_gangs_gpu_s.unwrap_or(0.0);
        prop_assert_eq!(rel.held_by_incomplete_gangs_gpu_s.is_some(), keep);
        let sum = rel.goodput_gpu_s + rel.lost_gpu_s + rel.startup_gpu_s + rel.held_on_failed_nodes_gpu_s
            + incomplete;
        prop_assert!((sum - rel.allocated_gpu_s).abs() < 1e-6 * rel.allocated_gpu_s.max(1.0));
        let occ = s.allocated_gpu_s + s.held_on_failed_nodes_gpu_s;
        prop_assert!((occ - rel.allocated_gpu_s).abs() < 1e-6 * rel.allocated_gpu_s.max(1.0),
            "occupancy integral {} + held {} vs account {}", s.allocated_gpu_s, s.held_on_failed_nodes_gpu_s, rel.allocated_gpu_s);
    }
}

/// Writes the scenario and files and runs it without unwrapping: `Ok` summary or the error
/// text (a scenario or trace error), never a panic.
fn try_run(
    scenario_toml: &str,
    files: &[(&str, &str)],
) -> Result<fleetsim::run::RunOutput, String> {
    use fleetsim::run::run_scenario;
    use fleetsim::scenario;
    let (_dir, path) = crate::support::write_scenario(scenario_toml, files);
    let mut loaded = scenario::load(&path).map_err(|e| e.to_string())?;
    loaded.scenario.metrics.audit_every_instant = true;
    let opts = crate::support::run_options(None, true);
    run_scenario(&loaded, &opts, &mut |_, _| {}).map_err(|e| e.to_string())
}

/// A node with (practically) unlimited CPU and a queue with a 1,000-core CPU quota.
fn huge_cpu_quota_scenario() -> String {
    "name = \"huge\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [\"n1\", \"n2\", \"n3\", \"n4\"]\naccelerator = \"H100\"\ngpus = 8\ncpu_milli = 9223372036854775807\nmem_mib = 9223372036854775807\n[workload]\ntrace = { format = \"native\", path = \"jobs.csv\" }\n[policy]\nplacement = \"first-fit\"\n[[cohorts]]\nname = \"co\"\n[[queues]]\nname = \"T\"\ncohort = \"co\"\nflavors = [{ name = \"H100\", gpus = { nominal = 32 }, cpus = { nominal = 1000 } }]\n".to_string()
}

/// 4 tasks × 2⁶² milli-cores = 2⁶⁴: an unchecked 64-bit multiply wraps it to 0 (release)
/// or panics (debug) and the job is admitted under a 1,000-core quota. Each task fits a
/// node (cpu 2⁶³ − 1, the most TOML holds), so the refusal is for the gang's total: `request_too_large`. The
/// small job beside it runs.
#[test]
fn gang_total_beyond_u64_is_rejected_not_wrapped() {
    let csv = "id,submit_s,tenant,queue,num_gpu,tasks,cpu_milli,runtime_s\nH,0,T,T,1,4,4611686018427387904,100\nS,0,T,T,1,1,1000,100\n";
    let out = try_run(&huge_cpu_quota_scenario(), &[("jobs.csv", csv)]).unwrap();
    assert_eq!(out.summary.jobs.rejected, 1);
    assert_eq!(out.summary.jobs.rejected_by_reason["request_too_large"], 1);
    let h = job(&out, "H");
    assert_eq!(h.state, FinalState::Rejected);
    assert_eq!(h.reason.as_deref(), Some("request_too_large"));
    assert_eq!(job(&out, "S").state, FinalState::Completed);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 50, ..ProptestConfig::default() })]

    /// Requests up to `u64::MAX` in any per-task field (num_gpu and gpu_milli up to
    /// `u32::MAX`, cpu_milli and mem_mib up to `u64::MAX`; gangs of 1, 4 or 65 tasks, so
    /// 4 × 2⁶² and 65 × `u64::MAX` overflow 64 bits): the
    /// run either refuses the row with an error or runs, rejecting what cannot fit; never a
    /// wrap or a panic (debug builds check arithmetic overflow). Every job ends rejected
    /// or completed, and tenant demand counts completed jobs only.
    #[test]
    fn huge_requests_error_or_reject_never_wrap(
        rows in prop::collection::vec((
            prop_oneof![Just(0u64), Just(1), Just(8), Just(65), Just(u64::from(u32::MAX))],
            prop_oneof![Just(1000u64), Just(500), Just(0), Just(u64::from(u32::MAX))],
            prop_oneof![Just(1u64), Just(4), Just(65)],
            prop_oneof![Just(0u64), Just(1000), Just(1 << 62), Just(u64::MAX)],
            prop_oneof![Just(0u64), Just(1024), Just(1 << 62), Just(u64::MAX)],
            1u64..1000,
        ), 1..6),
    ) {
        let mut csv = String::from("id,submit_s,tenant,queue,num_gpu,gpu_milli,tasks,cpu_milli,mem_mib,runtime_s\n");
        for (i, (g, m, t, c, mem, r)) in rows.iter().enumerate() {
            let m = if *g == 0 { 0 } else { *m };
            csv += &format!("j{i},{i},T,T,{g},{m},{t},{c},{mem},{r}\n");
        }
        match try_run(&huge_cpu_quota_scenario(), &[("jobs.csv", &csv)]) {
            Err(e) => prop_assert!(e.contains("jobs.csv") || e.contains("job"), "{}", e),
            Ok(out) => {
                let mut demand = 0.0;
                for r in out.jobs.as_ref().unwrap() {
                    prop_assert!(matches!(r.state, FinalState::Rejected | FinalState::Completed), "{:?}", r);
                    if r.state == FinalState::Completed {
                        demand += (r.shape.total_gpu_milli() * r.tasks as u64 * r.run_ms.unwrap()) as f64 / 1e6;
                    }
                }
                let t = &out.summary.tenants["T"];
                prop_assert!((t.demand_gpu_s - demand).abs() <= 1e-9 * demand.max(1.0), "{} vs {}", t.demand_gpu_s, demand);
            }
        }
    }
}

/// A task of 65 GPUs (more than any node may have) was bad input that failed the whole
/// trace (exit 2); it is now rejected at submit like any never-fitting job and counted by
/// reason. And a rejected job is not demand: T's demand is the small job's 8 GPUs × 100 s
/// = 800 GPU-s (the 65-GPU job would have added 65 × 100 = 6,500). The `tasks` column keeps
/// the task rigid (without it, a 65-GPU job would take the node's shape: 13 members of 5
/// GPUs, too many for the two nodes: `gang_larger_than_cell`).
#[test]
fn oversize_task_is_rejected_at_submit_and_not_demand() {
    let scenario = format!(
        "name = \"oversize\"\n{}",
        one_cell_first_fit(&["n1", "n2"], "H100", 8)
    );
    let out = run(
        &scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,tasks,num_gpu,runtime_s\nBIG,0,T,1,65,100\nS,0,T,1,8,100\n",
        )],
    );
    assert_eq!(out.summary.jobs.rejected, 1);
    assert_eq!(
        out.summary.jobs.rejected_by_reason["task_larger_than_any_node"],
        1
    );
    assert_eq!(job(&out, "S").state, FinalState::Completed);
    assert_eq!(out.summary.tenants["T"].demand_gpu_s, 800.0);
}

/// With `horizon_s`, the window ends at the horizon or the last event, whichever is first,
/// not at the last completion.
///
/// n1, n2 (8 GPUs). A (8 GPUs, 100 s) runs on n1 0–100. n2 fails at 50 for good, so B (2
/// tasks × 8 GPUs) waits forever (resolvable: the cell holds 2 nodes). n1 (empty) fails
/// at 400, the last event. Horizon 10,000 s: the
/// window is 0–400. Available n1 8 × 400 + n2 8 × 50 = 3,600 GPU-s; allocated 800 →
/// occupancy 0.2222 (it was 800 / (800 + 400) = 0.667 with the window cut at A's end).
#[test]
fn horizon_window_ends_at_the_last_event_not_the_last_completion() {
    let scenario = format!(
        "name = \"win\"\n{}[metrics]\nhorizon_s = 10000\n[[node_events]]\nat_s = 50\nnode = \"n2\"\nkind = \"fail\"\n[[node_events]]\nat_s = 400\nnode = \"n1\"\nkind = \"fail\"\n",
        one_cell_first_fit(&["n1", "n2"], "H100", 8)
    );
    let out = run(
        &scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,tasks,runtime_s\nA,0,T,8,1,100\nB,1,T,8,2,100\n",
        )],
    );
    assert_eq!(out.summary.available_gpu_s, 3_600.0);
    assert_eq!(out.summary.allocated_gpu_s, 800.0);
    assert_eq!(out.summary.occupancy, Some(800.0 / 3_600.0));
    assert_eq!(out.result.occupancy.window_end.0, 400_000);
}

/// jobs.csv's per-job figures as the summary computes them, with service and pending time.
///
/// n1 (8 GPUs). L (8 GPUs, 1,000 s, priority 0) starts at 0; n1 fails at 100 (grace 0)
/// and is repaired at 300: L (no checkpoint) waits 100–300 and reruns 300–1,300.
/// Turnaround 1,300, run time 1,000: stretch 1.3, bounded slowdown 1.3 (the summary's
/// mean is the same 1.3; finish − first start would give 1.0). Service 100 + 1,000 =
/// 1,100 s; pending 0 + 200 = 200 s; failures 1.
#[test]
fn jobs_csv_stretch_service_and_pending_time_match_the_summary() {
    let scenario = format!(
        "name = \"perjob\"\n{}[[node_events]]\nat_s = 100\nnode = \"n1\"\nkind = \"fail\"\n[[node_events]]\nat_s = 300\nnode = \"n1\"\nkind = \"repair\"\n",
        one_cell_first_fit(&["n1"], "H100", 8)
    );
    let out = run(
        &scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,runtime_s\nL,0,T,8,1000\n",
        )],
    );
    let l = job(&out, "L");
    assert_eq!(
        (l.start, l.finish),
        (
            Some(fleetsim_policies::SimTime(0)),
            Some(fleetsim_policies::SimTime(1_300_000))
        )
    );
    assert_eq!(l.service_ms, Some(1_100_000));
    assert_eq!(l.pending_ms, Some(200_000));
    let rec = fleetsim::report::jobs_csv::record(l);
    let col = |name: &str| {
        let i = fleetsim::report::jobs_csv::HEADER
            .iter()
            .position(|h| *h == name)
            .unwrap();
        rec[i].clone()
    };
    assert_eq!(col("stretch"), "1.300000");
    assert_eq!(col("bounded_slowdown"), "1.300000");
    assert_eq!(col("service_time"), "1100.000");
    assert_eq!(col("pending_time"), "200.000");
    assert_eq!(col("failures"), "1");
    assert_eq!(out.summary.bounded_slowdown.mean, Some(1.3));
}

/// Field case B30: a strict-spread gang needing more distinct nodes than exist is rejected
/// at submit and never holds a strict-FIFO queue. n1, n2 (8 GPUs); pg1 = 3 bundles × 2
/// GPUs, pg2 = 2 × 2, both STRICT_SPREAD at 0: pg1 rejected (topology_infeasible), pg2
/// runs 0–600 on n1 + n2.
#[test]
fn b30_strict_spread_over_more_nodes_than_exist_is_rejected_at_submit() {
    let scenario = "name = \"b30\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [\"n1\", \"n2\"]\naccelerator = \"H100\"\ngpus = 8\n[workload]\ntrace = { format = \"native\", path = \"jobs.csv\" }\n[policy.topology]\nray_strategy = \"STRICT_SPREAD\"\n[[queues]]\nname = \"Q\"\nstrategy = \"strict-fifo\"\n";
    let out = run(
        scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,queue,tasks,num_gpu,runtime_s\npg1,0,t,Q,3,2,600\npg2,0,t,Q,2,2,600\n",
        )],
    );
    let pg1 = job(&out, "pg1");
    assert_eq!(pg1.state, FinalState::Rejected);
    assert_eq!(pg1.reason.as_deref(), Some("topology_infeasible"));
    let pg2 = job(&out, "pg2");
    assert_eq!(
        (pg2.start, pg2.finish),
        (
            Some(fleetsim_policies::SimTime(0)),
            Some(fleetsim_policies::SimTime(600_000))
        )
    );
    let mut nodes = pg2.nodes.clone();
    nodes.sort();
    assert_eq!(nodes, vec!["n1", "n2"]);
    assert_eq!(
        out.summary.jobs.rejected_by_reason["topology_infeasible"],
        1
    );
}

/// A gang required inside one NVLink domain larger than any domain is rejected at submit.
/// 4 nodes of 8 GPUs in domains of 2 nodes (16 GPUs each): G (3 × 8 GPUs, required
/// `domain`) can never be placed (24 > 16) though the cell holds 32; S (2 × 8) runs.
#[test]
fn required_domain_larger_than_any_domain_is_rejected_at_submit() {
    let scenario = "name = \"dom\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [\"n1\", \"n2\", \"n3\", \"n4\"]\naccelerator = \"H100\"\ngpus = 8\nnodes_per_domain = 2\n[workload]\ntrace = { format = \"native\", path = \"jobs.csv\" }\n[policy.topology]\nrequired = \"domain\"\n";
    let out = run(
        scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,tasks,num_gpu,runtime_s\nG,0,t,3,8,100\nS,0,t,2,8,100\n",
        )],
    );
    assert_eq!(
        job(&out, "G").reason.as_deref(),
        Some("topology_infeasible")
    );
    assert_eq!(job(&out, "S").state, FinalState::Completed);
}

/// `fleetsim validate` reports never-fitting jobs by count and reason and still succeeds:
/// on 2 nodes of 8 GPUs with STRICT_SPREAD gangs, a 65-GPU task (larger than any node), a
/// 3-task spread (more nodes than exist) and 4 tasks × 2⁶² milli-cores (request too large)
/// beside one job that fits.
#[test]
fn validate_reports_never_fitting_jobs_by_reason_without_failing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jobs.csv"),
        "id,submit_s,tenant,tasks,num_gpu,cpu_milli,runtime_s\nbig,0,t,1,65,0,10\nspread,0,t,3,2,0,10\nhuge,0,t,4,1,4611686018427387904,10\nok,0,t,2,2,0,10\n",
    )
    .unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, "name = \"v\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [\"n1\", \"n2\"]\naccelerator = \"H100\"\ngpus = 8\ncpu_milli = 9223372036854775807\n[workload]\ntrace = { format = \"native\", path = \"jobs.csv\" }\n[policy.topology]\nray_strategy = \"STRICT_SPREAD\"\n").unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .arg("validate")
        .arg(&p)
        .output()
        .unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("never fit (rejected at submit): 3 jobs: 1 request_too_large, 1 task_larger_than_any_node, 1 topology_infeasible"),
        "{out}"
    );
}

/// The summary names per-queue strategies and counts jobs still running at the horizon.
/// One 8-GPU node; queue A best-effort FIFO, queue B the default (strict FIFO); a1 (A, 8
/// GPUs, 0–1,000 s) completes, b1 (B, 8 GPUs, submitted at 0) starts at 1,000 s and is
/// still running at the 1,500 s horizon.
#[test]
fn summary_names_queue_strategies_and_jobs_running_at_the_horizon() {
    let scenario = format!(
        "name = \"qs\"\n{}[metrics]\nhorizon_s = 1500\n[[queues]]\nname = \"A\"\nstrategy = \"best-effort-fifo\"\n[[queues]]\nname = \"B\"\n",
        one_cell_first_fit(&["n1"], "H100", 8)
    );
    let out = run(
        &scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,queue,tasks,num_gpu,runtime_s\na1,0,t,A,1,8,1000\nb1,0,t,B,1,8,1000\n",
        )],
    );
    assert_eq!(
        out.summary.policy["queueing_strategy"],
        "default:strict-fifo;queues:best-effort-fifo=1,strict-fifo=1"
    );
    let (j, table) = (
        &out.summary.jobs,
        fleetsim::report::table::render(&out.summary),
    );
    assert_eq!((j.started, j.completed, j.running_at_end), (2, 1, 1));
    assert!(
        table.contains(
            "jobs     2 submitted, 2 started, 1 completed, 1 running at end, 0 rejected, 0 censored, 0 cancelled (horizon)"
        ),
        "{table}"
    );
    assert!(
        table.contains(
            "queueing_strategy=default:strict-fifo;queues:best-effort-fifo=1,strict-fifo=1"
        ),
        "{table}"
    );
}
