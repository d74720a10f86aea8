//! Inference services beside training: an exact end-to-end case worked out
//! by hand under two co-location policies, and bad input refused naming the field.

use fleetsim::engine::FinalState;

use crate::support::{
    cell, csv_column, job, last_span, refusal, run, run_series, service, span, NATIVE_JOBS,
    NATIVE_JOBS_ONE_QUEUE,
};

/// Two 4-GPU nodes; one service `chat` of 4-GPU replicas whose load is 0, then 2 replicas
/// (8 GPUs) over [100 s, 400 s), then 0; target utilisation 1, scale-up delay 20 s,
/// scale-down delay 50 s; serving window 600 s. `preemption` is the `[policy.preemption]`
/// body.
fn scenario(preemption: &str) -> String {
    format!(
        "name = \"serving-tiny\"\n{}[policy]\nqueueing_strategy = \"best-effort-fifo\"\n[policy.preemption]\n{preemption}\n{NATIVE_JOBS_ONE_QUEUE}[serving]\nend_s = 600\n{}",
        cell("c", &["n1", "n2"], "H100", 4),
        service("chat", None, "[[0, 0], [100, 2], [400, 0]]", 20, 50)
    )
}

/// One training job: a gang of 2 × 4 GPUs (the whole fleet) for 1,000 s, submitted at 0.
const JOBS: &str = "id,submit_s,tenant,num_gpu,tasks,runtime_s
T,0,train,4,2,1000
";

/// Serving preempts training (`capacity = "lower-priority"`: replicas have priority 1000,
/// the training job 0), grace 10 s, checkpoints every 50 s. By hand:
/// - desired replicas: 2 over [100, 400). Target: the rise is acted on at 100 + 20 = 120,
///   the fall at 400 + max(50, 20) = 450: replicas r0 and r1 live over [120, 450).
/// - t=0: T starts on n1 + n2.
/// - t=120: r0, r1 are submitted; the fleet is full, so T is preempted: it ran 120 s,
///   keeps 100 s (last checkpoint), loses 20 s × 8 GPUs = 160 GPU-s of progress plus its
///   10 s grace × 8 GPUs = 80 GPU-s: 240 GPU-s lost to serving.
/// - t=130: T releases (grace over) and is requeued; r0 and r1 start, one per node.
/// - t=450: the replicas are removed; T restarts with 1000 − 100 = 900 s left, ends 1350.
///
/// Shortfall: 2 replicas × [100, 130) = 60 replica-s; attainment: the window [0, 600) is
/// short over [100, 130) only: 570 / 600 = 0.95. Desired 2 × 300 = 600 replica-s; running
/// 2 × (450 − 130) = 640 replica-s (the 50 s of scale-down delay included). Serving holds
/// 8 × 320 = 2560 GPU-s. Training holds 8 × 130 + 8 × 900 = 8240 GPU-s, loses 240: goodput
/// 8000 GPU-s = its 1000 s × 8 GPUs exactly. Fleet occupancy over [0, 1350): (8240 + 2560)
/// / (8 × 1350) = 1; serving's part 2560 / 10800.
#[test]
fn serving_preempts_training_and_training_fills_what_serving_leaves() {
    let out = run(
        &scenario("capacity = \"lower-priority\"\ngrace_s = 10\ncheckpoint_interval_s = 50"),
        &[("jobs.csv", JOBS)],
    );
    assert_eq!(span(&out, "T"), (Some(0), Some(1350)));
    assert_eq!(last_span(&out, "T"), (Some(450), Some(1350)));
    assert_eq!(job(&out, "T").preemptions, 1);
    assert_eq!(job(&out, "T").lost_gpu_milli_ms, 240 * 1_000_000);
    let r: Vec<_> = out
        .jobs
        .as_ref()
        .unwrap()
        .iter()
        .filter(|j| j.name.starts_with("chat/"))
        .map(|j| (j.name.clone(), j.start.map(|t| t.0), j.finish.map(|t| t.0)))
        .collect();
    assert_eq!(
        r,
        [
            ("chat/r0#0".to_string(), Some(130_000), Some(450_000)),
            ("chat/r1#1".to_string(), Some(130_000), Some(450_000)),
        ]
    );
    let s = out.summary.serving.as_ref().expect("serving section");
    assert_eq!(s.window_s, 600.0);
    let c = &s.services[0];
    assert_eq!(c.name, "chat");
    assert_eq!(
        (c.replicas_added, c.peak_desired, c.replica_stops),
        (2, 2, 0)
    );
    assert_eq!(c.desired_replica_s, 600.0);
    assert_eq!(c.running_replica_s, 640.0);
    assert_eq!(c.shortfall_replica_s, 60.0);
    assert_eq!(c.slo_attainment, 0.95);
    assert_eq!(s.serving_gpu_s, 2560.0);
    assert_eq!(s.training_allocated_gpu_s, 8240.0);
    assert_eq!(s.training_lost_to_serving_gpu_s, 240.0);
    assert_eq!(s.training_lost_gpu_s, 240.0);
    assert_eq!(s.training_goodput_gpu_s, 8000.0);
    assert_eq!(s.training_preemptions_by_serving, 1);
    assert_eq!(s.fleet_occupancy, 1.0);
    assert_eq!(s.serving_occupancy, 2560.0 / 10800.0);
    // Replicas are not jobs in the wait, JCT and slowdown statistics: T alone is, pending
    // 0 s before its first start and 450 − 120 = 330 s from its preemption to its restart;
    // its JCT is 1,350 s. The replicas waited 130 − 120 = 10 s each.
    let w = &out.summary.wait_s;
    assert_eq!((w.count, w.mean), (1, Some(330.0)));
    assert_eq!(out.summary.first_start_wait_s.max, Some(0.0));
    assert_eq!(
        (out.summary.jct_s.count, out.summary.jct_s.max),
        (1, Some(1350.0))
    );
    assert_eq!(out.summary.bounded_slowdown.count, 1);
    assert_eq!(
        (s.replica_wait_s.count, s.replica_wait_s.max),
        (2, Some(10.0))
    );
    // Useful occupancy leaves out T's 240 GPU-s lost: (10,800 − 240) / 10,800.
    assert_eq!(out.summary.allocated_occupancy, Some(1.0));
    assert_eq!(out.summary.occupancy, Some(10_560.0 / 10_800.0));
    assert!(job(&out, "chat/r0#0").serving_replica && !job(&out, "T").serving_replica);
}

/// The same case's `timeseries.csv` with 100 s intervals over the window [0, 1350) (14 rows,
/// the last [1300, 1350)). By hand: desired replicas are 2 over [100, 400): 0, 2, 2, 2, then
/// 0; running replicas are 2 over [130, 450): [100, 200) holds 2 × 70 = 140 → 1.400, then
/// 2.000, 2.000, [400, 500) 2 × 50 → 1.000, then 0. Without `[serving]` the columns are
/// absent.
#[test]
fn timeseries_has_desired_and_running_replicas() {
    let toml = format!(
        "{}
[metrics]
timeseries_interval_s = 100
",
        scenario("capacity = \"lower-priority\"\ngrace_s = 10\ncheckpoint_interval_s = 50")
    );
    let (_, series) = run_series(&toml, &[("jobs.csv", JOBS)]);
    let zeros = |n: usize| vec!["0.000".to_string(); n];
    let mut desired = vec!["0.000", "2.000", "2.000", "2.000"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    desired.extend(zeros(10));
    assert_eq!(
        csv_column(&series, "serving_chat_desired_replicas"),
        desired
    );
    let mut running = vec!["0.000", "1.400", "2.000", "2.000", "1.000"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    running.extend(zeros(9));
    assert_eq!(
        csv_column(&series, "serving_chat_running_replicas"),
        running
    );
    let plain = scenario("").replace(&scenario("")[scenario("").find("[serving]").unwrap()..], "");
    let (_, series) = run_series(&plain, &[("jobs.csv", JOBS)]);
    assert!(!series.contains("serving_"), "{series}");
}

/// Serving only takes free capacity (no preemption rule). By hand: T holds the whole fleet
/// over [0, 1000); r0 and r1 (submitted at 120, removed at 450) never get room before their
/// stop, so at 450 they are withdrawn from the queue: `CANCELLED`, reason `withdrawn`, no
/// start, counted as cancelled (3 submitted = 1 started + 2 cancelled). Nothing is pending
/// once T ends: the run drains at 1000. Shortfall 2 × 300 = 600 replica-s; attainment
/// (600 − 300) / 600 = 0.5; training loses nothing: goodput 8000 GPU-s.
#[test]
fn serving_without_preemption_waits_for_free_capacity() {
    let out = run(&scenario(""), &[("jobs.csv", JOBS)]);
    assert_eq!(span(&out, "T"), (Some(0), Some(1000)));
    assert_eq!(job(&out, "T").preemptions, 0);
    for r in ["chat/r0#0", "chat/r1#1"] {
        let j = job(&out, r);
        assert_eq!((j.start, j.finish), (None, None), "{r}");
        assert_eq!(j.state, FinalState::Cancelled, "{r}");
        assert_eq!(j.reason.as_deref(), Some("withdrawn"), "{r}");
        assert_eq!(j.pending_ms, Some(330_000), "{r}: pending over [120, 450)");
    }
    let jobs = &out.summary.jobs;
    assert_eq!(
        (jobs.submitted, jobs.started, jobs.cancelled, jobs.censored),
        (3, 1, 2, 0)
    );
    assert_eq!(out.summary.makespan_s, Some(1000.0));
    let s = out.summary.serving.as_ref().expect("serving section");
    let c = &s.services[0];
    assert_eq!(c.shortfall_replica_s, 600.0);
    assert_eq!(c.running_replica_s, 0.0);
    assert_eq!(c.slo_attainment, 0.5);
    assert_eq!(s.training_goodput_gpu_s, 8000.0);
    assert_eq!(s.training_lost_to_serving_gpu_s, 0.0);
    assert_eq!(s.serving_gpu_s, 0.0);
}

/// Serving figures in `check` and `compact` goals: the preempting run's service attainment
/// (0.95) and training goodput (8000 GPU-s) are the baseline; the free-capacity run's
/// attainment (0.5) fell, which is a regression (higher is better), while its goodput (8000)
/// is unchanged. The goal `attainment >= 0.9` holds for the first run only.
#[test]
fn serving_figures_gate_check_and_compact_goals() {
    use fleetsim::check::{baseline_of, compare, CheckSpec, Status};
    use fleetsim::compact::Goal;
    let preempting = run(
        &scenario("capacity = \"lower-priority\"\ngrace_s = 10\ncheckpoint_interval_s = 50"),
        &[("jobs.csv", JOBS)],
    );
    let free = run(&scenario(""), &[("jobs.csv", JOBS)]);
    let a = serde_json::to_value(&preempting.summary).unwrap();
    let b = serde_json::to_value(&free.summary).unwrap();
    let spec: CheckSpec = toml::from_str(
        "metrics = [\"serving.services.chat.slo_attainment\", \"serving.training_goodput_gpu_s\"]",
    )
    .unwrap();
    // Two seeds of the same run (no spread: exact tolerances).
    let base = baseline_of(&spec, &[1, 2], &[a.clone(), a.clone()]).unwrap();
    assert_eq!(
        base.metrics.values().map(|m| m.mean).collect::<Vec<_>>(),
        [Some(0.95), Some(8000.0)]
    );
    let lines = compare(&spec, &base, &[b.clone(), b.clone()]).unwrap();
    assert_eq!(lines[0].now, Some(0.5));
    assert_eq!(lines[0].status, Status::Regressed);
    assert_eq!(lines[1].status, Status::Ok);
    let goal = Goal::parse("serving.services.chat.slo_attainment>=0.9").unwrap();
    assert!(goal.met(&a));
    assert!(!goal.met(&b));
    let bad: CheckSpec =
        toml::from_str("metrics = [\"serving.services.nope.slo_attainment\"]").unwrap();
    assert!(baseline_of(&bad, &[1, 2], &[a.clone(), a]).is_err());
}

/// Without `[serving]` there is no section and no replica job.
#[test]
fn no_serving_no_section() {
    let toml = scenario("").replace(&scenario("")[scenario("").find("[serving]").unwrap()..], "");
    let out = run(&toml, &[("jobs.csv", JOBS)]);
    assert!(out.summary.serving.is_none());
    assert_eq!(out.jobs.as_ref().unwrap().len(), 1);
}

fn load_err(service: &str) -> String {
    let toml = format!(
        "name = \"bad\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\ncount = 2\naccelerator = \"H100\"\ngpus = 4\n{NATIVE_JOBS}[serving]\nend_s = 600\n[[serving.services]]\n{service}\n"
    );
    // The replica-fits-a-node check needs the built fleet: it runs with the run.
    refusal(&toml, &[("jobs.csv", JOBS)])
}

const DIURNAL: &str =
    "demand = { kind = \"diurnal\", mean_replicas = 2, amplitude = 1, period_s = 86400 }";

#[test]
fn bad_services_are_refused_naming_the_field() {
    let cases = [
        (
            "name = \"s\"\nreplica = { gpus = 4 }".to_string(),
            "serving.services[0].demand",
        ),
        (
            "name = \"s\"\nreplica = { gpus = 4 }\ndemand = { kind = \"diurnal\", mean_replicas = 2, amplitude = 3, period_s = 86400 }".to_string(),
            "serving.services[0].demand.amplitude",
        ),
        (
            format!("name = \"s\"\nreplica = {{ gpus = 4 }}\n{DIURNAL}\nautoscaler = {{ scale_up_delay_s = -5 }}"),
            "serving.services[0].autoscaler.scale_up_delay_s",
        ),
        (
            format!("name = \"s\"\nreplica = {{ gpus = 4 }}\n{DIURNAL}\nautoscaler = {{ scale_down_delay_s = -1 }}"),
            "serving.services[0].autoscaler.scale_down_delay_s",
        ),
        (
            format!("name = \"s\"\nreplica = {{ gpus = 4 }}\n{DIURNAL}\nautoscaler = {{ target_utilization = 0 }}"),
            "serving.services[0].autoscaler.target_utilization",
        ),
        (
            format!("name = \"s\"\nreplica = {{ gpus = 8 }}\n{DIURNAL}"),
            "serving.services[0].replica.gpus",
        ),
        (
            "name = \"s\"\nreplica = { gpus = 4 }\ndemand = { kind = \"table\", points = [[10, 1], [5, 2]] }".to_string(),
            "serving.services[0].demand.points[1]",
        ),
    ];
    for (service, field) in cases {
        let e = load_err(&service);
        assert!(e.contains(&format!("`{field}`")), "{field}: {e}");
    }
    // Unknown keys are refused.
    let e = load_err(&format!(
        "name = \"s\"\nreplica = {{ gpus = 4 }}\n{DIURNAL}\nreplicas = 3"
    ));
    assert!(e.contains("replicas"), "{e}");
    let e = load_err(&format!(
        "name = \"s\"\nreplica = {{ gpus = 4, gpu = 1 }}\n{DIURNAL}"
    ));
    assert!(e.contains("gpu"), "{e}");
}

/// A demand series from the Alibaba DLRM 2025 trace (skipped without it): `app_80` has three
/// GPU instances — A alive from the trace start to 325,822 s, B from the start on, C from
/// 325,366 s on. With `offset_s = 325000` (the trace's 325,000 s is t = 0), one replica per
/// instance, no delays: desired 2 over [0, 366), 3 over [366, 822), 2 over [822, 1000) —
/// 2 × 366 + 3 × 456 + 2 × 178 = 2456 replica-s; replicas r0, r1 over [0, 1000) and r2 over
/// [366, 822). Three empty 4-GPU nodes hold them at once: no shortfall, attainment 1.
#[test]
fn a_trace_demand_follows_the_instances_creations_and_deletions() {
    let traces = crate::support::public_traces();
    if !traces.join("alibaba-dlrm-2025").exists() {
        eprintln!("skipping: no public traces at {}", traces.display());
        return;
    }
    let toml = r#"name = "serving-trace"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
count = 3
accelerator = "H100"
gpus = 4
[workload]
trace = { format = "native", path = "jobs.csv" }
queues = "single"
[serving]
end_s = 1000
[[serving.services]]
name = "dlrm"
replica = { gpus = 4 }
demand = { kind = "trace", format = "alibaba-dlrm", public_path = "alibaba-dlrm-2025/disaggregated_DLRM_trace.csv", app = "app_80", replicas_per_instance = 1.0, offset_s = 325000 }
"#;
    let out = run(
        toml,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,tasks,runtime_s\nT,900,train,4,1,10\n",
        )],
    );
    let s = out.summary.serving.as_ref().expect("serving section");
    let c = &s.services[0];
    assert_eq!((c.replicas_added, c.peak_desired), (3, 3));
    assert_eq!(c.desired_replica_s, 2456.0);
    assert_eq!(c.running_replica_s, 2456.0);
    assert_eq!(c.shortfall_replica_s, 0.0);
    assert_eq!(c.slo_attainment, 1.0);
    assert_eq!(span(&out, "dlrm/r2#2"), (Some(366), Some(822)));
    assert_eq!(span(&out, "T"), (Some(900), Some(910)));
}

/// One 4-GPU node and two services of one 4-GPU replica each, no delays: `batch` (priority
/// 10) is desired over [0, 200), `chat` (priority 1000, preempts lower priority) over
/// [100, 400); `grace_s` is the victim's grace period. The trace has no training job.
fn two_services(grace_s: u64) -> String {
    format!(
        "name = \"serving-withdraw\"\n{}[policy]\nqueueing_strategy = \"best-effort-fifo\"\n[policy.preemption]\ncapacity = \"lower-priority\"\ngrace_s = {grace_s}\n{NATIVE_JOBS_ONE_QUEUE}[serving]\nend_s = 600\n{}{}",
        cell("c", &["n1"], "H100", 4),
        service("batch", Some(10), "[[0, 1], [200, 0]]", 0, 0),
        service("chat", None, "[[0, 0], [100, 1], [400, 0]]", 0, 0)
    )
}

const NO_JOBS: &str = "id,submit_s,tenant,num_gpu,tasks,runtime_s\n";

/// A replica that ran, was preempted and is pending again at its planned stop is withdrawn
/// then. By hand (grace 10 s): `batch/r0` starts at 0; at 100 `chat/r0` preempts it; it
/// releases at 110 and is requeued; `chat/r0` runs over [110, 400). At 200, the stop of
/// `batch/r0`, it is still pending: withdrawn, `CANCELLED`, reason `withdrawn`, its first
/// start kept (counted in `started`, not in `cancelled`). Without withdrawal it would have
/// started at 400 for no time. The run ends at 400, so the serving window is [0, 400).
/// `batch` ran [0, 100) of its desired [0, 200): shortfall 100 replica-s, attainment
/// (400 − 100) / 400 = 0.75; `chat` ran [110, 400) of [100, 400): shortfall 10 replica-s,
/// attainment 390 / 400.
#[test]
fn a_preempted_replica_pending_at_its_stop_is_withdrawn() {
    let out = run(&two_services(10), &[("jobs.csv", NO_JOBS)]);
    let b = job(&out, "batch/r0#0");
    assert_eq!(b.state, FinalState::Cancelled);
    assert_eq!(b.reason.as_deref(), Some("withdrawn"));
    assert_eq!((b.start.map(|t| t.0), b.finish), (Some(0), None));
    assert_eq!(b.preemptions, 1);
    assert_eq!(span(&out, "chat/r0#1"), (Some(110), Some(400)));
    let jobs = &out.summary.jobs;
    assert_eq!(
        (jobs.submitted, jobs.started, jobs.completed, jobs.cancelled),
        (2, 2, 1, 0)
    );
    let s = out.summary.serving.as_ref().expect("serving section");
    let (batch, chat) = (&s.services[0], &s.services[1]);
    assert_eq!((batch.shortfall_replica_s, batch.replica_stops), (100.0, 1));
    assert_eq!(s.window_s, 400.0);
    assert_eq!(batch.slo_attainment, 0.75);
    assert_eq!(chat.shortfall_replica_s, 10.0);
    assert_eq!(chat.slo_attainment, 390.0 / 400.0);
    assert_eq!(s.serving_gpu_s, 4.0 * (100.0 + 290.0));
}

/// Its stop falls inside the grace period (grace 150 s): `batch/r0` still holds the node at
/// 200 and releases at 250, when it would rejoin the queue: it is withdrawn at once, and
/// `chat/r0` starts at 250 (no zero-length run of `batch/r0` in between).
#[test]
fn a_replica_in_its_grace_period_at_its_stop_is_withdrawn_on_release() {
    let out = run(&two_services(150), &[("jobs.csv", NO_JOBS)]);
    let b = job(&out, "batch/r0#0");
    assert_eq!(b.state, FinalState::Cancelled);
    assert_eq!(b.reason.as_deref(), Some("withdrawn"));
    assert_eq!(b.start.map(|t| t.0), Some(0));
    assert_eq!(span(&out, "chat/r0#1"), (Some(250), Some(400)));
    assert_eq!(out.summary.jobs.completed, 1);
    let chat = &out.summary.serving.as_ref().unwrap().services[1];
    assert_eq!(chat.shortfall_replica_s, 150.0);
}

/// Cells `train` and `serve` of one 4-GPU node each; two training jobs of 4 GPUs for 100 s
/// submitted at 0; a service `chat` of one 4-GPU replica desired over [50, 150), no
/// delays, no preemption. `reserved` is the `[serving]` `reserved_cells` value.
fn pool_scenario(reserved: &str) -> String {
    format!(
        "name = \"serving-pool\"\n{}{}[policy]\nqueueing_strategy = \"best-effort-fifo\"\n{NATIVE_JOBS_ONE_QUEUE}[serving]\nend_s = 600\nreserved_cells = {reserved}\n{}",
        cell("train", &["t1"], "H100", 4),
        cell("serve", &["s1"], "H100", 4),
        service("chat", None, "[[0, 0], [50, 1], [150, 0]]", 0, 0)
    )
}

const TWO_JOBS: &str = "id,submit_s,tenant,num_gpu,tasks,runtime_s
A,0,train,4,1,100
B,0,train,4,1,100
";

/// The reserved-pool co-location policy against sharing, by hand. Shared (`[]`): A and B
/// take both nodes over [0, 100); the replica submitted at 50 waits for A's node and runs
/// [100, 150): shortfall 50 replica-s, window [0, 150) (the run's end), attainment
/// 100 / 150; training waits 0. Reserved (`["serve"]`): A runs [0, 100) on `t1`, B waits
/// for it ([100, 200)) while `s1` stays idle for serving; the replica runs [50, 150) on
/// `s1`: no shortfall, attainment 1; fleet occupancy over [0, 200) = (4 × 200 + 4 × 100)
/// / (8 × 200) = 0.75, serving's part 400 / 1600.
#[test]
fn a_reserved_pool_keeps_training_off_the_serving_cells() {
    let shared = run(&pool_scenario("[]"), &[("jobs.csv", TWO_JOBS)]);
    assert_eq!(span(&shared, "A"), (Some(0), Some(100)));
    assert_eq!(span(&shared, "B"), (Some(0), Some(100)));
    assert_eq!(span(&shared, "chat/r0#0"), (Some(100), Some(150)));
    let c = &shared.summary.serving.as_ref().unwrap().services[0];
    assert_eq!(c.shortfall_replica_s, 50.0);
    assert_eq!(c.slo_attainment, 100.0 / 150.0);

    let pool = run(&pool_scenario("[\"serve\"]"), &[("jobs.csv", TWO_JOBS)]);
    assert_eq!(span(&pool, "A"), (Some(0), Some(100)));
    assert_eq!(span(&pool, "B"), (Some(100), Some(200)));
    for j in ["A", "B"] {
        assert_eq!(job(&pool, j).cell.as_deref(), Some("train"), "{j}");
    }
    assert_eq!(span(&pool, "chat/r0#0"), (Some(50), Some(150)));
    assert_eq!(job(&pool, "chat/r0#0").cell.as_deref(), Some("serve"));
    let s = pool.summary.serving.as_ref().unwrap();
    assert_eq!(s.services[0].shortfall_replica_s, 0.0);
    assert_eq!(s.services[0].slo_attainment, 1.0);
    assert_eq!(s.fleet_occupancy, 0.75);
    assert_eq!(s.serving_occupancy, 0.25);
    assert_eq!(s.training_goodput_gpu_s, 800.0);

    // A training job allowed only the reserved cell is rejected; one allowed both cells is
    // kept to `train` (C waits for A and B: [200, 300)).
    let three = "id,submit_s,tenant,num_gpu,tasks,runtime_s,cells
A,0,train,4,1,100,
B,0,train,4,1,100,
C,0,train,4,1,100,serve|train
D,0,train,4,1,100,serve
";
    let out = run(&pool_scenario("[\"serve\"]"), &[("jobs.csv", three)]);
    assert_eq!(span(&out, "C"), (Some(200), Some(300)));
    assert_eq!(job(&out, "C").cell.as_deref(), Some("train"));
    assert_eq!(job(&out, "D").state, FinalState::Rejected);
    assert_eq!(job(&out, "D").reason.as_deref(), Some("no_allowed_cell"));
}

/// `reserved_cells` naming no cell, a cell twice, or every cell is refused naming the field.
#[test]
fn bad_reserved_cells_are_refused_naming_the_field() {
    let err = |reserved: &str| refusal(&pool_scenario(reserved), &[("jobs.csv", TWO_JOBS)]);
    let e = err("[\"gpu\"]");
    assert!(
        e.contains("serving.reserved_cells[0]") && e.contains("`gpu` is not a cell"),
        "{e}"
    );
    let e = err("[\"serve\", \"serve\"]");
    assert!(
        e.contains("serving.reserved_cells[1]") && e.contains("named twice"),
        "{e}"
    );
    let e = err("[\"serve\", \"train\"]");
    assert!(
        e.contains("serving.reserved_cells") && e.contains("leave at least one"),
        "{e}"
    );
}
