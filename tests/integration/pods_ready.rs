//! Waiting for pods (Kueue `waitForPodsReady`) against slow node provisioning: field case
//! B52 (kubernetes-sigs/kueue #2215) worked out by hand, a timeout longer than the
//! provisioning delay, a requeue limit that deactivates, and bad settings refused naming
//! the field.

use fleetsim::engine::FinalState;

use crate::support::{burst_group, cell, job, refusal, run, span, NATIVE_JOBS_ONE_QUEUE};

/// B52's fleet and workload: static `n1` (4 GPUs) busy with S 0–5000; a group `burst` of
/// up to 2 × 4-GPU nodes, none at the start, fixed 400 s provisioning, 3.6 per node-hour,
/// removed after 100 s idle; G, a gang of 2 × 4 GPUs submitted at 10 for 100 s.
fn b52(wait_for_pods_ready: &str) -> String {
    format!(
        "name = \"B52\"\n{}{}[policy]\nqueueing_strategy = \"best-effort-fifo\"\nwait_for_pods_ready = {wait_for_pods_ready}\n{NATIVE_JOBS_ONE_QUEUE}",
        cell("c", &["n1"], "H100", 4),
        burst_group(2, "{ distribution = \"fixed\", s = 400 }", Some("3.6"), 100)
    )
}

const JOBS: &str = "id,submit_s,tenant,num_gpu,tasks,runtime_s
S,0,t,4,1,5000
G,10,t,4,2,100
";

/// B52 as written (timeout 300 s, backoff 60 s, no requeue limit). By hand:
/// - t=10: G cannot start (n1 is full). One burst node holds one 4-GPU task: the gang
///   needs ⌈2/1⌉ = 2 nodes, one request for burst-0 and burst-1, joining at 10 + 400 =
///   410. G waits for that scale-up: admitted at 10, deadline 10 + 300 = 310.
/// - t=310: G has not started: evicted (1st eviction), backoff 60 × 2^0 = 60 s. The
///   request is not cancelled: burst-0/1 still join at 410.
/// - t=370: G rejoins its queue; no room yet, it claims the room on its way (burst-0/1),
///   so no new request: admitted again at 370, deadline 670.
/// - t=410: burst-0/1 join; G starts on them (ready 40 s after its second admission),
///   ends at 510. Wait 410 − 10 = 400 s.
/// - t=510: burst-0/1 idle; still idle at 510 + 100 = 610: both removed.
/// - t=5000: S ends; the run ends.
///
/// Billed: 2 nodes × (610 − 10) = 1200 node-s = 1/3 node-h, cost × 3.6 = 1.2. Provisioned:
/// 2 × 4 GPUs × (610 − 410) = 1600 GPU-s. Pending for capacity: G over [10, 310) and
/// [370, 410): 300 + 40 = 340 job-s (not while backing off, out of its queue).
#[test]
fn b52_the_gang_is_evicted_at_310_requeued_at_370_and_runs_when_the_nodes_join_at_410() {
    let out = run(
        &b52("{ timeout_s = 300, backoff_base_s = 60 }"),
        &[("jobs.csv", JOBS)],
    );
    assert_eq!(span(&out, "S"), (Some(0), Some(5000)));
    assert_eq!(span(&out, "G"), (Some(410), Some(510)));
    let g = job(&out, "G");
    assert_eq!(g.state, FinalState::Completed);
    assert_eq!(g.pending_ms, Some(400_000));
    let mut nodes = g.nodes.clone();
    nodes.sort();
    assert_eq!(nodes, ["c-burst-n00000", "c-burst-n00001"]);
    let p = out.summary.pods_ready.as_ref().expect("pods_ready section");
    assert_eq!(p.timeout_s, 300.0);
    assert_eq!(
        (
            p.admissions_waiting,
            p.evictions,
            p.requeues,
            p.deactivated,
            p.backing_off_at_end
        ),
        (2, 1, 1, 0, 0)
    );
    let a = out.summary.autoscaling.as_ref().expect("autoscaling");
    assert_eq!((a.scale_ups, a.scale_downs), (1, 2));
    assert_eq!(a.node_hours, 1200.0 / 3600.0);
    assert_eq!(a.cost, 1200.0 / 3600.0 * 3.6);
    assert_eq!(a.gpu_hours_provisioned, 1600.0 / 3600.0);
    assert_eq!(a.pending_for_capacity_job_s, 340.0);
    // The printed summary shows the section.
    let text = fleetsim::report::table::render(&out.summary);
    assert!(
        text.contains(
            "pods ready within 300 s: 2 admissions waited for nodes; 1 evictions, 1 requeues, 0 deactivated"
        ),
        "{text}"
    );
}

/// A timeout above the provisioning delay (500 s > 400 s): G, admitted at 10 (deadline
/// 510), starts when its nodes join at 410 and is never evicted; the deadline at 510 finds
/// it ended (at 510, a completion is applied before it). Nodes idle 510 → removed 610:
/// the same 1200 node-s as B52; pending for capacity 10 → 410 = 400 job-s.
#[test]
fn a_timeout_above_the_provisioning_delay_evicts_nothing() {
    let out = run(&b52("{ timeout_s = 500 }"), &[("jobs.csv", JOBS)]);
    assert_eq!(span(&out, "G"), (Some(410), Some(510)));
    let p = out.summary.pods_ready.as_ref().unwrap();
    assert_eq!(
        (p.admissions_waiting, p.evictions, p.requeues, p.deactivated),
        (1, 0, 0, 0)
    );
    let a = out.summary.autoscaling.as_ref().unwrap();
    assert_eq!(a.node_hours, 1200.0 / 3600.0);
    assert_eq!(a.pending_for_capacity_job_s, 400.0);
}

/// One requeue allowed (Kueue `backoffLimitCount: 1`: the eviction after one requeue
/// deactivates), timeout 100 s, backoff 60 s. By hand:
/// - t=10: admitted waiting for burst-0/1 (join at 410); deadline 110.
/// - t=110: evicted (1st; 1 ≤ 1 requeue allowed), requeued at 110 + 60 = 170.
/// - t=170: rejoins, claims the room on the way: admitted, deadline 270.
/// - t=270: evicted again (2nd > 1): deactivated, `CANCELLED`, reason
///   `requeuing_limit_exceeded`; pending 270 − 10 = 260 s.
/// - t=410: burst-0/1 join, nothing for them: idle → removed at 510.
///
/// Billed 2 × (510 − 10) = 1000 node-s (cost 1.0); provisioned 2 × 4 × (510 − 410) = 800
/// GPU-s; pending for capacity [10, 110) + [170, 270) = 200 job-s. Jobs: 2 submitted, S
/// started, G cancelled.
#[test]
fn a_job_evicted_more_often_than_the_limit_allows_is_deactivated() {
    let out = run(
        &b52("{ timeout_s = 100, backoff_base_s = 60, backoff_limit_count = 1 }"),
        &[("jobs.csv", JOBS)],
    );
    let g = job(&out, "G");
    assert_eq!(g.state, FinalState::Cancelled);
    assert_eq!(g.reason.as_deref(), Some("requeuing_limit_exceeded"));
    assert_eq!((g.start, g.finish), (None, None));
    assert_eq!(g.pending_ms, Some(260_000));
    let p = out.summary.pods_ready.as_ref().unwrap();
    assert_eq!(
        (p.admissions_waiting, p.evictions, p.requeues, p.deactivated),
        (2, 2, 1, 1)
    );
    let j = &out.summary.jobs;
    assert_eq!((j.submitted, j.started, j.cancelled), (2, 1, 1));
    let a = out.summary.autoscaling.as_ref().unwrap();
    assert_eq!((a.scale_ups, a.scale_downs), (1, 2));
    assert_eq!(a.node_hours, 1000.0 / 3600.0);
    assert_eq!(a.gpu_hours_provisioned, 800.0 / 3600.0);
    assert_eq!(a.pending_for_capacity_job_s, 200.0);
}

/// Without `wait_for_pods_ready` the summary has no section and G waits for its nodes:
/// 410–510, pending for capacity 400 job-s.
#[test]
fn without_the_setting_an_admitted_job_waits_as_long_as_it_takes() {
    let toml = b52("{ timeout_s = 1 }").replace("wait_for_pods_ready = { timeout_s = 1 }\n", "");
    let out = run(&toml, &[("jobs.csv", JOBS)]);
    assert_eq!(span(&out, "G"), (Some(410), Some(510)));
    assert!(out.summary.pods_ready.is_none());
    let json = serde_json::to_string(&out.summary).unwrap();
    assert!(!json.contains("pods_ready"), "{json}");
}

#[test]
fn bad_settings_are_refused_naming_the_field() {
    for (setting, field) in [
        ("{ timeout_s = 0 }", "wait_for_pods_ready.timeout_s"),
        ("{ timeout_s = -5 }", "wait_for_pods_ready.timeout_s"),
        (
            "{ timeout_s = 300, backoff_base_s = -1 }",
            "wait_for_pods_ready.backoff_base_s",
        ),
        (
            "{ timeout_s = 300, block_admission = true }",
            "wait_for_pods_ready.block_admission",
        ),
        ("{ timeout_s = 300, recovery = 5 }", "recovery"),
        ("{ backoff_base_s = 60 }", "timeout_s"),
    ] {
        let e = refusal(&b52(setting), &[("jobs.csv", JOBS)]);
        assert!(e.contains(field), "{setting}: {e}");
    }
}

/// A backoff that outlasts the nodes' idle time, with no requeue limit: B52 with a 600 s
/// base. G is evicted at 310 and rejoins at 910; its nodes joined at 410 and, idle, left at
/// 510, so it asks again and is evicted again, for ever (Kueue's endless requeue). The run
/// stops with an error naming the job and the settings, instead of running without end.
#[test]
fn an_endless_requeue_stops_the_run_naming_the_settings() {
    let e = refusal(
        &b52("{ timeout_s = 300, backoff_base_s = 600 }"),
        &[("jobs.csv", JOBS)],
    );
    assert!(
        e.contains("job `G`") && e.contains("backoff_limit_count"),
        "{e}"
    );
}

/// A random fleet of one static 4-GPU node and one autoscaled group, random jobs and random
/// `wait_for_pods_ready` settings, stopped at a horizon of 5,000 s (1,000 evictions of a
/// job take at least 10,000 s at a 10 s timeout, so no run stops as an endless requeue).
fn random_case(
    jobs: &[(u16, u8, u8, u16)],
    (timeout_s, base_s, limit): (u16, u16, Option<u8>),
    (delay_s, idle_s, max_nodes): (u16, u16, u8),
) -> (String, String) {
    let limit = limit.map_or(String::new(), |l| format!(", backoff_limit_count = {l}"));
    let delay = format!(
        "{{ distribution = \"uniform\", min_s = {delay_s}, max_s = {} }}",
        delay_s * 2
    );
    let toml = format!(
        r#"name = "pods-ready-random"
{}{}[policy]
queueing_strategy = "best-effort-fifo"
wait_for_pods_ready = {{ timeout_s = {timeout_s}, backoff_base_s = {base_s}, backoff_max_s = 600{limit} }}
[metrics]
horizon_s = 5000
{NATIVE_JOBS_ONE_QUEUE}"#,
        cell("c", &["n1"], "H100", 4),
        burst_group(max_nodes.into(), &delay, None, idle_s.into())
    );
    let mut csv = String::from("id,submit_s,tenant,num_gpu,tasks,runtime_s\n");
    let mut t = 0u32;
    for (i, &(gap, gpus, tasks, run)) in jobs.iter().enumerate() {
        t += u32::from(gap);
        csv.push_str(&format!("j{i},{t},t,{gpus},{tasks},{run}\n"));
    }
    (toml, csv)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Every eviction ends requeued, deactivated or backing off at the end; the deactivated
    /// and backing-off jobs are the rows that say so; same scenario, same summary.
    #[test]
    fn evictions_are_accounted_for_and_runs_repeat(
        jobs in proptest::collection::vec((0u16..300, 1u8..=4, 1u8..=2, 1u16..600), 1..12),
        wait in (10u16..200, 0u16..120, proptest::option::of(0u8..3)),
        group in (20u16..300, 10u16..300, 1u8..=3),
    ) {
        let (toml, csv) = random_case(&jobs, wait, group);
        let out = run(&toml, &[("jobs.csv", &csv)]);
        let p = out.summary.pods_ready.as_ref().expect("section");
        proptest::prop_assert_eq!(p.evictions, p.requeues + p.deactivated + p.backing_off_at_end);
        let rows = out.jobs.as_ref().unwrap();
        let with = |reason: &str| {
            rows.iter().filter(|r| r.reason.as_deref() == Some(reason)).count() as u64
        };
        proptest::prop_assert_eq!(with("requeuing_limit_exceeded"), p.deactivated);
        proptest::prop_assert_eq!(with("pods_ready_backoff"), p.backing_off_at_end);
        if wait.2.is_none() {
            proptest::prop_assert_eq!(p.deactivated, 0);
        }
        for r in rows {
            if r.reason.as_deref() == Some("requeuing_limit_exceeded") {
                proptest::prop_assert_eq!(r.state, FinalState::Cancelled);
                proptest::prop_assert!(r.start.is_none());
            }
        }
        let again = run(&toml, &[("jobs.csv", &csv)]);
        proptest::prop_assert_eq!(
            serde_json::to_string(&out.summary).unwrap(),
            serde_json::to_string(&again.summary).unwrap()
        );
    }
}

/// `wait_for_pods_ready` on a fleet without an autoscaled group can never evict anyone
/// (pods wait only for provisioned nodes): the summary carries a warning naming the
/// field, with or without a failure model; with a group there is no such warning. The run
/// itself is unchanged: S 0–5000 on n1, G 5000–5100 on n1 and n2.
#[test]
fn wait_for_pods_ready_without_an_autoscaled_group_is_warned_about() {
    let group = "[[fleet.cells.autoscaling]]\nname = \"burst\"\nmin_nodes = 0\nmax_nodes = 2\nnode = { accelerator = \"H100\", gpus = 4 }\nprovisioning_delay = { distribution = \"fixed\", s = 400 }\nprice_per_node_hour = 3.6\nscale_down_idle_s = 100\n";
    let fixed = b52("{ timeout_s = 300 }")
        .replace(group, "")
        .replace("names = [\"n1\"]", "names = [\"n1\", \"n2\"]");
    assert!(!fixed.contains("autoscaling"), "{fixed}");
    let jobs = "id,submit_s,tenant,num_gpu,tasks,runtime_s\nS,0,t,4,2,5000\nG,10,t,4,2,100\n";
    let out = run(&fixed, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "G"), (Some(5000), Some(5100)));
    let w: Vec<&String> = out
        .summary
        .warnings
        .iter()
        .filter(|w| w.contains("wait_for_pods_ready"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", out.summary.warnings);
    assert!(w[0].contains("[policy] wait_for_pods_ready"), "{}", w[0]);
    assert!(w[0].contains("[[fleet.cells.autoscaling]]"), "{}", w[0]);
    // A failure model does not make pods late either.
    let failing = format!("{fixed}[failures]\nmtbf_h = {{ H100 = 1000 }}\nuntil_s = 6000\n");
    let out = run(&failing, &[("jobs.csv", jobs)]);
    assert!(
        out.summary
            .warnings
            .iter()
            .any(|w| w.contains("wait_for_pods_ready")),
        "{:?}",
        out.summary.warnings
    );
    // With the group, pods can be late: no warning.
    let out = run(&b52("{ timeout_s = 300 }"), &[("jobs.csv", JOBS)]);
    assert!(
        !out.summary
            .warnings
            .iter()
            .any(|w| w.contains("wait_for_pods_ready")),
        "{:?}",
        out.summary.warnings
    );
}
