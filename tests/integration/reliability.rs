//! Failures, maintenance, startup latency, speed factors and the goodput account
//! (`src/reliability/`, `src/engine/reliability.rs`): hand-computed cases, the timeline file
//! round trip, and property tests of the account.

use fleetsim::engine::FinalState;
use fleetsim::run::{run_scenario, RunOptions};
use fleetsim::scenario::{self, TraceDir};
use proptest::prelude::*;

use crate::support::{job, last_span, one_cell_first_fit, run, span};

/// A one-cell fleet of named 8-GPU nodes of `model`, native trace `jobs.csv`.
/// A job with a 600 s checkpoint interval fails at 1,500 s of progress: it keeps the
/// checkpoint at 1,200 s and loses exactly 300 s.
///
/// J (8 GPUs, 3600 s) runs on n1 from 0; n1 fails at 1500 (grace 0). Kept 1200, lost
/// 1500 − 1200 = 300 s × 8 GPUs = 2,400 GPU-s. The retry starts at once on n2 and needs
/// 3600 − 1200 = 2400 s: 1500–3900. Allocated = 8 × (1500 + 2400) = 31,200 GPU-s = goodput
/// 28,800 + lost 2,400.
#[test]
fn checkpoint_600s_failure_at_1500s_loses_exactly_300s() {
    let scenario = format!(
        r#"
name = "ckpt"
{}
[policy.preemption]
checkpoint_interval_s = 600
[[node_events]]
at_s = 1500
node = "n1"
kind = "fail"
[failures]
"#,
        one_cell_first_fit(&["n1", "n2"], "H100", 8)
    );
    let out = run(
        &scenario,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,runtime_s\nJ,0,T,8,3600\n",
        )],
    );
    let j = job(&out, "J");
    assert_eq!(j.lost_gpu_milli_ms, 300_000 * 8_000);
    assert_eq!(last_span(&out, "J"), (Some(1500), Some(3900)));
    assert_eq!(j.nodes, vec!["n2"]);
    let r = out.summary.reliability.as_ref().unwrap();
    assert_eq!(r.lost_gpu_s, 2_400.0);
    assert_eq!(r.allocated_gpu_s, 31_200.0);
    assert_eq!(r.goodput_gpu_s, 28_800.0);
    assert_eq!(r.goodput, Some(28_800.0 / 31_200.0));
    // The node event's failure is counted with `[failures]` on; never repaired: no MTTR.
    assert_eq!((r.node_failures, r.job_failures), (1, 1));
    assert_eq!(r.node_mttr_s, None);
}

/// Speed factors: a job's run time is at reference speed and scales by 1 / speed.
///
/// `[platform] speed = { A100 = 0.6 }`. J1 (8 GPUs, 600 s) on the A100 node runs
/// 600 / 0.6 = 1000 s; J2 on an H100 node (unlisted: 1.0) runs 600 s. With startup
/// `base_s = 10, per_doubling_s = 5` and J3 a gang of 4 tasks × 8 GPUs (⌈log₂ 4⌉ = 2
/// doublings: 10 + 2 × 5 = 20 s) of 300 s on the H100 nodes: 320 s.
#[test]
fn speed_factors_and_startup_scale_run_times() {
    let scenario = r#"
name = "speed"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["a1"]
accelerator = "A100"
gpus = 8
[[fleet.cells.nodes]]
names = ["h1", "h2", "h3", "h4"]
accelerator = "H100"
gpus = 8
[workload]
trace = { format = "native", path = "jobs.csv" }
[policy]
placement = "first-fit"
[platform]
speed = { A100 = 0.6 }
"#;
    let jobs =
        "id,submit_s,tenant,num_gpu,runtime_s,gpu_models\nJ1,0,T,8,600,A100\nJ2,0,T,8,600,H100\n";
    let out = run(scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "J1"), (Some(0), Some(1000)));
    assert_eq!(span(&out, "J2"), (Some(0), Some(600)));
    let r = out.summary.reliability.as_ref().unwrap();
    // Goodput is wall accelerator-time of useful work: 8 × (1000 + 600).
    assert_eq!(r.goodput_gpu_s, 12_800.0);
    assert_eq!(r.startup_gpu_s, 0.0);

    let scenario = format!("{scenario}[startup]\nbase_s = 10\nper_doubling_s = 5\n");
    let jobs = "id,submit_s,tenant,num_gpu,tasks,runtime_s,gpu_models\nJ3,0,T,8,4,300,H100\n";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "J3"), (Some(0), Some(320)));
    let r = out.summary.reliability.as_ref().unwrap();
    assert_eq!(r.startup_gpu_s, 32.0 * 20.0);
    assert_eq!(r.goodput_gpu_s, 32.0 * 300.0);
    assert_eq!(r.allocated_gpu_s, 32.0 * 320.0);
}

/// A maintenance drain: no new work from `at_s`; jobs still running at the deadline are
/// evicted; the node is back `duration_s` later.
///
/// n1, n2 × 8 GPUs, first-fit. J1 (8 GPUs, 1000 s) starts on n1 at 0. n1 is drained at 100
/// (deadline 500 s, down 1000 s after it). J2 (8 GPUs, 200 s, at 150) runs on n2 150–350.
/// J3 (8 GPUs, 100 s, at 400) cannot use n1 (drained, and busy): n2, 400–500. At 600 J1 is
/// evicted (no checkpoint: 600 s × 8 lost), requeued, and restarts on n2 at 600: 600–1600.
/// n1 is back at 1600.
#[test]
fn maintenance_drain_then_eviction_at_deadline() {
    let scenario = format!(
        r#"
name = "maint"
{}
[[failures.maintenance]]
at_s = 100
nodes = ["n1"]
deadline_s = 500
duration_s = 1000
"#,
        one_cell_first_fit(&["n1", "n2"], "H100", 8)
    );
    let jobs =
        "id,submit_s,tenant,num_gpu,runtime_s\nJ1,0,T,8,1000\nJ2,150,T,8,200\nJ3,400,T,8,100\n";
    let out = run(&scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "J2"), (Some(150), Some(350)));
    assert_eq!(job(&out, "J2").nodes, vec!["n2"]);
    assert_eq!(span(&out, "J3"), (Some(400), Some(500)));
    assert_eq!(job(&out, "J3").nodes, vec!["n2"]);
    assert_eq!(last_span(&out, "J1"), (Some(600), Some(1600)));
    assert_eq!(job(&out, "J1").failures, 0);
    assert_eq!(job(&out, "J1").lost_gpu_milli_ms, 600_000 * 8_000);
    let r = out.summary.reliability.as_ref().unwrap();
    assert_eq!(r.evictions, 1);
    assert_eq!(r.lost_to_evictions_gpu_s, 4_800.0);
    assert_eq!(r.maintenance_drains, 1);
    assert_eq!(r.node_failures, 0);
}

const GEN_FLEET: &str = r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 6
nodes_per_domain = 2
[workload.synthetic]
duration_s = 172800
arrival_rate_per_hour = 3.0
max_gpus_per_task = 8
tenants = [{ name = "a", weight = 0.5 }, { name = "b", weight = 0.5 }]
sizes = [{ gpus = 1, weight = 0.5 }, { gpus = 8, weight = 0.3 }, { gpus = 16, weight = 0.2 }]
runtime = { dist = "lognormal", median_s = 3600.0, sigma = 1.0, min_s = 60.0, max_s = 86400.0 }
"#;

fn run_dir(toml: &str, files: &[(&str, String)], seed: u64) -> (tempfile::TempDir, String) {
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let (dir, path) = crate::support::write_scenario(toml, &files);
    let loaded = scenario::load(&path).unwrap();
    let out = dir.path().join("out");
    let opts = RunOptions {
        seed: Some(seed),
        trace_dir: TraceDir(crate::support::public_traces()),
        out_dir: Some(out.clone()),
        keep_rows: false,
    };
    run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    let all = format!(
        "{}\n{}\n{}",
        read("failures.csv"),
        read("jobs.csv"),
        read("summary.json")
    );
    (dir, all)
}

/// The default synthetic workload on six HGX H100 nodes with generated node and domain
/// failures and a maintenance drain: the timeline is the same for a seed, differs between
/// seeds, and replaying the written `failures.csv` reproduces the run byte for byte.
/// Turning failures on does not change the workload (the submit column of `jobs.csv`).
#[test]
fn failure_timeline_is_deterministic_and_replays_from_its_file() {
    let base = format!("name = \"gen\"\n{GEN_FLEET}[metrics]\nhorizon_s = 259200\n");
    let failures = "[failures]\nmtbf_h = { H100 = 48 }\ncorrelated = [{ level = \"domain\", mtbf_h = 200 }]\ngrace_s = 30\nrestart_overhead_s = 120\nrepair = { distribution = \"lognormal\", mean_s = 3600, sigma = 1.0 }\n[[failures.maintenance]]\nat_s = 86400\nnodes = [\"c-r000-n01\"]\ndeadline_s = 1800\nduration_s = 7200\n[policy.preemption]\ncheckpoint_interval_s = 900\n";
    let gen = format!("{base}{failures}");
    let (_d1, a) = run_dir(&gen, &[], 7);
    let (_d2, b) = run_dir(&gen, &[], 7);
    assert_eq!(a, b, "same seed, same outputs");
    let (_d3, c) = run_dir(&gen, &[], 8);
    let timeline = a.split("\n\n").next().unwrap().to_string();
    assert_ne!(
        timeline,
        c.split("\n\n").next().unwrap(),
        "another seed, another timeline"
    );
    assert!(timeline.lines().count() > 5, "{timeline}");
    assert!(timeline.contains(",fail,30000,node"), "{timeline}");
    assert!(timeline.contains(",drain,0,maintenance"), "{timeline}");
    let failures_csv = format!("{timeline}\n");
    assert!(failures_csv.starts_with("time_ms,node,event,grace_ms,cause\n"));
    let replay = format!(
        "{base}[failures]\ntimeline = {{ path = \"failures.csv\" }}\nrestart_overhead_s = 120\n[policy.preemption]\ncheckpoint_interval_s = 900\n"
    );
    let (_d4, r) = run_dir(&replay, &[("failures.csv", failures_csv)], 7);
    assert_eq!(a, r, "the replayed timeline gives the same run");

    // Failures on or off: the same jobs, submitted at the same times.
    let (_d5, off) = run_dir(&format!("{base}[failures]\n"), &[], 7);
    let submits = |all: &str| -> Vec<String> {
        let jobs = all.split("\n\n").nth(1).unwrap_or(all);
        let mut v: Vec<String> = jobs
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with('{'))
            .map(|l| {
                let c: Vec<&str> = l.split(',').collect();
                format!("{},{}", c[0], c[1])
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(submits(&a), submits(&off));
}

/// A bad timeline row is an error naming the file, line and column (exit code 2 in the CLI:
/// a scenario error), and so is an event that does not follow from its node's state.
#[test]
fn bad_timeline_row_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "name = \"bad\"\n{}[failures]\ntimeline = {{ path = \"t.csv\" }}\n",
        one_cell_first_fit(&["n1"], "H100", 8)
    );
    std::fs::write(dir.path().join("scenario.toml"), toml).unwrap();
    std::fs::write(
        dir.path().join("jobs.csv"),
        "id,submit_s,tenant,num_gpu,runtime_s\n",
    )
    .unwrap();
    let loaded = scenario::load(&dir.path().join("scenario.toml")).unwrap();
    let opts = crate::support::run_options(None, true);
    for (text, line, field) in [
        (
            "time_ms,node,event,grace_ms,cause\n0,n1,fail,0,x\n5,n9,repair,0,x\n",
            ":3",
            "`node`",
        ),
        (
            "time_ms,node,event,grace_ms,cause\n0,n1,explode,0,x\n",
            ":2",
            "`event`",
        ),
        (
            "time_ms,node,event,grace_ms,cause\n1.5,n1,fail,0,x\n",
            ":2",
            "`time_ms`",
        ),
        ("time,node\n", ":1", "`header`"),
        (
            "time_ms,node,event,grace_ms,cause\n0,n1,fail,18446744073709551615,x\n",
            ":2",
            "`grace_ms`: 18446744073709551615 ms: a grace period is at most 31536000000 ms",
        ),
        // Events that do not follow from the node's state: a second failure of a down node
        // (overlapping failures are one fail/repair pair), a repair of an up node, an
        // eviction without a drain.
        (
            "time_ms,node,event,grace_ms,cause\n0,n1,fail,0,node\n5,n1,fail,0,block\n9,n1,repair,0,x\n",
            ":3",
            "`event`: `fail` of node `n1` at 5 ms, but the node is already down (since line 2)",
        ),
        (
            "time_ms,node,event,grace_ms,cause\n0,n1,repair,0,x\n",
            ":2",
            "`event`: `repair` of node `n1` at 0 ms, but the node is up (from the start)",
        ),
        (
            "time_ms,node,event,grace_ms,cause\n0,n1,fail,0,x\n5,n1,repair,0,x\n6,n1,repair,0,x\n",
            ":4",
            "`repair` of node `n1` at 6 ms, but the node is up (since line 3)",
        ),
        (
            "time_ms,node,event,grace_ms,cause\n0,n1,evict,0,x\n",
            ":2",
            "drain the node first",
        ),
        (
            "time_ms,node,event,grace_ms,cause\n0,n1,drain,0,x\n1,n1,drain,0,x\n",
            ":3",
            "`drain` of node `n1` at 1 ms, but the node is draining (since line 2)",
        ),
    ] {
        std::fs::write(dir.path().join("t.csv"), text).unwrap();
        let e = run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap_err();
        assert!(fleetsim::cli::is_bad_input(&anyhow::Error::from(e)));
        let e = run_scenario(&loaded, &opts, &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("t.csv{line}")), "{e}");
        assert!(e.contains(field), "{e}");
    }
    // Every sequence the generator writes is accepted: fail → repair, drain → evict →
    // repair, drain → fail (a failure during the drain) → repair, a drain ended by a
    // repair, and a node that ends the file down.
    std::fs::write(
        dir.path().join("t.csv"),
        "time_ms,node,event,grace_ms,cause\n0,n1,fail,0,x\n5,n1,repair,0,x\n6,n1,drain,0,m\n7,n1,evict,0,m\n8,n1,repair,0,m\n9,n1,drain,0,m\n10,n1,fail,0,m\n11,n1,repair,0,m\n12,n1,drain,0,m\n13,n1,repair,0,m\n14,n1,fail,0,x\n",
    )
    .unwrap();
    run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, max_shrink_iters: 100, ..ProptestConfig::default() })]

    /// For every job: goodput + lost work + startup time + grace held on failed nodes =
    /// allocated accelerator-time, where
    /// a completed job's goodput is exactly its run time × its accelerators (all nodes at
    /// reference speed); summed over jobs, the allocated time equals the occupancy
    /// integral's allocated accelerator-time. And a drained node gets no new work: no job's
    /// (last) run starts on a node inside one of its maintenance windows.
    #[test]
    fn goodput_lost_startup_sum_to_allocated_and_drained_nodes_get_no_work(
        seed in 0u64..1000,
        jobs in prop::collection::vec((0u64..3000, 1u32..=8, 1u32..=2, 1u64..1500), 1..14),
        ckpt in prop::option::of(50u64..400),
        grace in 0u64..60,
        base in 0u64..40,
        per_doubling in 0u64..20,
        restart in 0u64..60,
        maint in prop::collection::vec((0usize..3, 0u64..3000, 0u64..600, 1u64..900), 0..3),
    ) {
        let mut sorted = jobs.clone();
        sorted.sort_by_key(|j| j.0);
        let mut csv = String::from("id,submit_s,tenant,num_gpu,tasks,runtime_s\n");
        for (i, (t, g, k, r)) in sorted.iter().enumerate() {
            csv += &format!("j{i},{t},T{},{g},{k},{r}\n", i % 2);
        }
        let mut toml = format!(
            "name = \"prop\"\nseed = {seed}\n{}[failures]\nmtbf_h = {{ H100 = 0.4 }}\nrepair = {{ distribution = \"exponential\", mean_s = 300 }}\nuntil_s = 4000\ngrace_s = {grace}\nrestart_overhead_s = {restart}\n[startup]\nbase_s = {base}\nper_doubling_s = {per_doubling}\n",
            one_cell_first_fit(&["n0", "n1", "n2"], "H100", 8)
        );
        if let Some(c) = ckpt {
            toml += &format!("[policy.preemption]\ncheckpoint_interval_s = {c}\n");
        }
        for (n, at, deadline, dur) in &maint {
            toml += &format!("[[failures.maintenance]]\nat_s = {at}\nnodes = [\"n{n}\"]\ndeadline_s = {deadline}\nduration_s = {dur}\n");
        }
        let out = run(&toml, &[("jobs.csv", &csv)]);
        let rows = out.jobs.as_ref().unwrap();
        let mut total_alloc = 0u128;
        for r in rows {
            prop_assert_eq!(r.state, FinalState::Completed, "{:?}", r);
            let gpu = r.shape.total_gpu_milli() * r.tasks as u64;
            let (_, _, _, runtime) = sorted[r.id as usize];
            let kept = r.allocated_gpu_milli_ms - r.lost_gpu_milli_ms - r.startup_gpu_milli_ms
                - r.held_on_failed_gpu_milli_ms;
            prop_assert_eq!(kept, runtime * 1000 * gpu, "{:?}", r);
            total_alloc += r.allocated_gpu_milli_ms as u128;
            let start = r.last_start.unwrap().0;
            for (n, at, deadline, dur) in &maint {
                let (a, b) = (at * 1000, (at + deadline + dur) * 1000);
                let on = r.nodes.iter().any(|x| x == &format!("n{n}"));
                prop_assert!(!(on && start >= a && start < b), "{:?} started in a drain of n{}", r, n);
            }
        }
        let rel = out.summary.reliability.as_ref().unwrap();
        prop_assert_eq!(rel.allocated_gpu_s, total_alloc as f64 / 1e6);
        // Grace on failed nodes is held, not occupancy.
        let occ = out.summary.allocated_gpu_s + out.summary.held_on_failed_nodes_gpu_s;
        prop_assert!((occ - rel.allocated_gpu_s).abs() < 1e-6 * rel.allocated_gpu_s.max(1.0),
            "occupancy integral + held {} vs account {}", occ, rel.allocated_gpu_s);
    }
}

/// Generated failures start at the workload's first submit time (`failures.start_s`'s
/// default), not at 0: with a trace whose only job arrives at 100,000 s, every renewal
/// process starts there, so the timeline is exactly the `start_s = 0` one shifted by
/// 100,000 s (same streams, same gaps; fixed repair, `until_s` shifted too), and equals
/// the one with an explicit `start_s = 100000`.
#[test]
fn generated_failures_start_at_the_first_submit() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s\nJ,100000,T,8,600\n".to_string();
    let scen = |extra: &str| {
        format!(
            "name = \"origin\"\n{}[failures]\nmtbf_h = {{ H100 = 10 }}\nrepair = {{ distribution = \"fixed\", mean_s = 600 }}\n{extra}",
            one_cell_first_fit(&["n1", "n2"], "H100", 8)
        )
    };
    let timeline = |all: &str| -> Vec<(u64, String)> {
        all.split("\n\n")
            .next()
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| {
                let (t, rest) = l.split_once(',').unwrap();
                (t.parse().unwrap(), rest.to_string())
            })
            .collect()
    };
    let files = [("jobs.csv", jobs)];
    let (_a, from0) = run_dir(&scen("start_s = 0\nuntil_s = 200000\n"), &files, 3);
    let (_b, default) = run_dir(&scen("until_s = 300000\n"), &files, 3);
    let (_c, explicit) = run_dir(&scen("start_s = 100000\nuntil_s = 300000\n"), &files, 3);
    let (from0, default, explicit) = (timeline(&from0), timeline(&default), timeline(&explicit));
    // MTBF 10 h on 2 nodes over 200,000 s: about 11 failures expected.
    assert!(
        from0.iter().filter(|e| e.1.contains(",fail,")).count() >= 3,
        "{from0:?}"
    );
    assert!(from0.iter().any(|e| e.0 < 100_000_000), "{from0:?}");
    let shifted: Vec<(u64, String)> = from0
        .iter()
        .map(|(t, r)| (t + 100_000_000, r.clone()))
        .collect();
    assert_eq!(default, shifted);
    assert_eq!(explicit, default);
    assert!(default.iter().all(|e| e.0 > 100_000_000));
}

/// The gang of the hot-spare cases: G (2 tasks × 8 GPUs, 3,600 s) and B (8 GPUs, 2,000 s),
/// both submitted at 0, on n1–n3 (8 H100 each); 600 s checkpoints, 100 s restart overhead,
/// n1 fails at 1,500 s (grace 0) and is repaired at 1,800 s.
fn spares_scenario(spares: &str) -> String {
    format!(
        r#"
name = "spares"
{}
[policy.preemption]
checkpoint_interval_s = 600
[[node_events]]
at_s = 1500
node = "n1"
kind = "fail"
[[node_events]]
at_s = 1800
node = "n1"
kind = "repair"
[failures]
restart_overhead_s = 100
{spares}
"#,
        one_cell_first_fit(&["n1", "n2", "n3"], "H100", 8)
    )
}

const SPARES_JOBS: &str =
    "id,submit_s,tenant,num_gpu,tasks,runtime_s\nG,0,T,8,2,3600\nB,0,T,8,1,2000\n";

/// A failure with and without a hot spare, by hand.
///
/// Without spares: G runs on n1+n2 from 0 and B on n3 from 0 (to 2,000). n1 fails at 1,500:
/// G keeps its 1,200 s checkpoint (300 s lost) and is requeued; n2 alone cannot take it
/// (n3 is B's) until n1 is back at 1,800, so it restarts there after 300 s in the queue and
/// runs 100 s overhead + 2,400 s: 1,800–4,300 (= 3,600 + 300 lost + 100 overhead + 300 wait).
///
/// With `spares_per_cell = 1` (n3 held out): G runs on n1+n2 from 0 and B waits. At 1,500
/// G's task on n1 moves onto n3 and G restarts at once: 100 + 2,400 → finishes at 4,000 =
/// failure-free 3,600 + 300 lost + 100 overhead, on n2+n3, no wait. n3 is a regular node
/// from then on and n1, repaired at 1,800, a spare: B still waits for G and runs on n2 from
/// 4,000 to 6,000.
///
/// Both runs: G allocated 16 GPUs × (1,500 + 2,500) = 64,000 GPU-s = goodput 16 × 3,600 =
/// 57,600 + lost 16 × 300 = 4,800 + restart overhead 16 × 100 = 1,600; B 16,000 all goodput.
/// Totals: allocated 80,000 = goodput 73,600 + lost 4,800 + startup 1,600.
#[test]
fn hot_spare_takes_over_a_failed_node_without_requeue() {
    let check_account = |out: &fleetsim::run::RunOutput| {
        let r = out.summary.reliability.as_ref().unwrap();
        assert_eq!(r.allocated_gpu_s, 80_000.0);
        assert_eq!(r.goodput_gpu_s, 73_600.0);
        assert_eq!(r.lost_gpu_s, 4_800.0);
        assert_eq!(r.lost_to_failures_gpu_s, 4_800.0);
        assert_eq!(r.startup_gpu_s, 1_600.0);
        assert_eq!(
            r.goodput_gpu_s + r.lost_gpu_s + r.startup_gpu_s,
            r.allocated_gpu_s
        );
        assert_eq!(r.job_failures, 1);
        // The `[[node_events]]` failure counts as a node failure (it was 0 beside
        // `job_failures` 1), repaired 300 s later.
        assert_eq!(r.node_failures, 1);
        assert_eq!(r.node_mttr_s, Some(300.0));
        assert_eq!(job(out, "G").lost_gpu_milli_ms, 300_000 * 16_000);
    };

    let off = run(&spares_scenario(""), &[("jobs.csv", SPARES_JOBS)]);
    assert_eq!(span(&off, "B"), (Some(0), Some(2000)));
    assert_eq!(last_span(&off, "G"), (Some(1800), Some(4300)));
    let r = off.summary.reliability.as_ref().unwrap();
    assert_eq!(r.hot_swaps, None);
    assert_eq!(r.job_mttr_s, Some(300.0));
    check_account(&off);

    let on = run(
        &spares_scenario("spares_per_cell = 1"),
        &[("jobs.csv", SPARES_JOBS)],
    );
    assert_eq!(span(&on, "G"), (Some(0), Some(4000)));
    assert_eq!(last_span(&on, "G"), (Some(1500), Some(4000)));
    let mut nodes = job(&on, "G").nodes.clone();
    nodes.sort();
    assert_eq!(nodes, vec!["n2", "n3"]);
    assert_eq!(span(&on, "B"), (Some(4000), Some(6000)));
    assert_eq!(job(&on, "B").nodes, vec!["n2"]);
    let r = on.summary.reliability.as_ref().unwrap();
    assert_eq!(r.hot_swaps, Some(1));
    assert_eq!(r.job_mttr_s, Some(0.0));
    check_account(&on);
}

/// `failures.spares_per_cell` below 0, or holding out every node of a cell, is a scenario
/// error naming the field (exit code 2 in the CLI).
#[test]
fn bad_spares_per_cell_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jobs.csv"), SPARES_JOBS).unwrap();
    let opts = crate::support::run_options(None, true);
    for n in ["-1", "3", "7"] {
        let toml = spares_scenario(&format!("spares_per_cell = {n}"));
        std::fs::write(dir.path().join("scenario.toml"), toml).unwrap();
        // A negative count is refused when the scenario loads, the others once the fleet
        // is built.
        let e = match scenario::load(&dir.path().join("scenario.toml")) {
            Ok(loaded) => {
                anyhow::Error::from(run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap_err())
            }
            Err(e) => anyhow::Error::from(e),
        };
        assert!(fleetsim::cli::is_bad_input(&e), "{e:#}");
        assert!(
            format!("{e:#}").contains("failures.spares_per_cell"),
            "{e:#}"
        );
    }
}
