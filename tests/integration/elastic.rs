//! Elastic jobs sized by `[elastic] allocator = "grow-idle" | "fixed"` in the one engine:
//! field case B43 and exact sizes and completion times worked out by hand, the rigid
//! baseline, bad input refused naming the field, and the command line on such a scenario.

use fleetsim::engine::FinalState;

use crate::support::{
    burst_group, cell, fleetsim, job, load_error, output_text, refusal, run, service, span,
};

/// One cell `c` of one node `n1` of 4 × H100, the native trace `jobs.csv` beside the
/// scenario and `[elastic]` with `allocator` and `restart_s`.
fn scenario(allocator: &str, restart_s: u32) -> String {
    format!(
        "name = \"elastic\"\n{}[workload]\ntrace = {{ format = \"native\", path = \"jobs.csv\" }}\n[elastic]\nallocator = \"{allocator}\"\nrestart_s = {restart_s}\n",
        cell("c", &["n1"], "H100", 4)
    )
}

const HEADER: &str = "id,submit_s,tenant,priority,min_gpus,max_gpus,work_gpu_s,throughput\n";

/// The elastic section's GPU-seconds held (restart delays included).
fn gpu_s(out: &fleetsim::run::RunOutput) -> f64 {
    out.summary
        .elastic
        .as_ref()
        .expect("elastic section")
        .gpu_hours
        * 3600.0
}

/// A job never grows past its fastest size. One 4-GPU node, grow-idle, 10 s per resize,
/// each job alone:
///
/// - D (1..4, 100 GPU-s, `table:1|0.5|2|2`): fastest at 3 GPUs (rate 2; 4 is no faster):
///   it starts at 1 and grows to 3 at once (a start: no overhead) → 100 / 2 = 50 s, 150 GPU-s
///   (at 4 GPUs it would hold 200 GPU-s for the same 50 s);
/// - F (1..4, 100 GPU-s, `amdahl:1`, no speedup at any size): stays at 1 → 100 s, 100 GPU-s
///   (grown to 4 it would hold 400 GPU-s for the same 100 s).
#[test]
fn a_job_never_grows_past_its_fastest_size() {
    for (row, end, held) in [
        ("D,0,t,0,1,4,100,table:1|0.5|2|2", 50, 150.0),
        ("F,0,t,0,1,4,100,amdahl:1", 100, 100.0),
    ] {
        let jobs = format!("{HEADER}{row}\n");
        let out = run(&scenario("grow-idle", 10), &[("jobs.csv", &jobs)]);
        let name = &row[..1];
        assert_eq!(span(&out, name), (Some(0), Some(end)), "{row}");
        assert_eq!(gpu_s(&out), held, "{row}");
        assert_eq!(out.summary.useful_gpu_s, held, "{row}");
    }
}

/// Field case B43 (kubernetes-sigs/kueue #9891: an elastic job grows by itself into GPUs
/// freed by a finishing job, paying the resize overhead once). One 4-GPU cell, grow-idle,
/// 10 s per resize. A 1..4, 1000 GPU-s, linear; B 2..2, 200 GPU-s; both at 0, A first.
///
/// - t=0: admission A 1, B 2 (reserve 3), spare 1 → A 2 (water-fill). B at rate 2 (2000
///   thousandths of a GPU-ms per ms): 200,000 GPU-ms / 2 = 100,000 ms → ends 100.
/// - t=100: A has done 100 s × 2 = 200 GPU-s, 800 left; B's completion frees 2 → A grows
///   2 → 4 at t=100 (one resize: no progress until 110); 800 / 4 = 200 s → ends 310.
///
/// A's GPU-s 2 × 100 + 4 × 210 = 1040, B's 2 × 100 = 200 → 1240. JCT mean (310 + 100) / 2 =
/// 205; makespan 310.
#[test]
fn b43_an_elastic_job_grows_at_100_into_the_gpus_b_frees_and_ends_at_310() {
    let jobs = format!("{HEADER}A,0,t,0,1,4,1000,linear\nB,0,t,0,2,2,200,linear\n");
    let out = run(&scenario("grow-idle", 10), &[("jobs.csv", &jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(310)));
    assert_eq!(span(&out, "B"), (Some(0), Some(100)));
    assert_eq!(job(&out, "A").state, FinalState::Completed);
    assert_eq!(out.summary.jct_s.mean, Some(205.0));
    assert_eq!(out.summary.makespan_s, Some(310.0));
    assert_eq!(gpu_s(&out), 1240.0);
    let e = out.summary.elastic.as_ref().unwrap();
    assert_eq!(
        (e.allocator.as_str(), e.round_s, e.restart_s),
        ("grow-idle", None, 10.0)
    );
    // Plans after the passes at t=0, 100 and 310; one resize (A 2 → 4).
    assert_eq!(
        (e.jobs, e.completed, e.rounds, e.reallocations),
        (2, 2, 3, 1)
    );
    assert!(
        out.summary.warnings.is_empty(),
        "{:?}",
        out.summary.warnings
    );
    assert!(e.job_lengths.starts_with("modelled"), "{}", e.job_lengths);
    // A's row reports its min part, the scheduler's job: one one-GPU task on n1 (its growth
    // GPUs are the elastic section's).
    assert_eq!(job(&out, "A").nodes, ["n1"]);
    // Occupancy over [0, 310) of 4 GPUs (1240 GPU-s available): allocated 1240 GPU-s; the
    // resize overhead (4 GPUs × 10 s = 40 GPU-s) is no useful work → useful 1200 GPU-s.
    assert_eq!(out.summary.allocated_gpu_s, 1240.0);
    assert_eq!(out.summary.useful_gpu_s, 1200.0);
    assert_eq!(out.summary.occupancy, Some(1200.0 / 1240.0));
    // The fault signature: without the resize at 100, A would end at 500; without the
    // overhead, at 300.
    let no_overhead = run(&scenario("grow-idle", 0), &[("jobs.csv", &jobs)]);
    assert_eq!(span(&no_overhead, "A"), (Some(0), Some(300)));
    // A decimal overhead is simulated to the millisecond: 2.5 s → ends at 302.5.
    let decimal = scenario("grow-idle", 0).replace("restart_s = 0", "restart_s = 2.5");
    let out = run(&decimal, &[("jobs.csv", &jobs)]);
    assert_eq!(out.summary.makespan_s, Some(302.5));
    for bad in ["-1", "nan", "1e12"] {
        let text = scenario("grow-idle", 0).replace("restart_s = 0", &format!("restart_s = {bad}"));
        let e = load_error(&text, &[("jobs.csv", &jobs)]);
        assert!(e.contains("elastic.restart_s"), "{bad}: {e}");
    }
}

/// One cell of 4 GPUs, 10 s per resize, grow-idle:
///
/// - E1 1..4, linear, 400 GPU-s, submit 0, priority 0;
/// - E2 1..2, Amdahl f = 0.5 (s(2) = 1/(0.5 + 0.25) → rate 1333), 100 GPU-s, submit 20;
/// - R 2..2 (min = max), linear, 200 GPU-s, submit 40, priority 5.
///
/// In ms (remaining work in thousandths of a GPU-ms; running jobs reserve their min, the
/// spare is water-filled one GPU per job per round in key order):
///
/// - t=0: E1 starts at 4 (rate 4000), 400e6 left.
/// - t=20000: E2 arrives; reserve 1 + 1, spare 2 → E1 2, E2 2. E1 did 20000·4000 = 80e6,
///   320e6 left, resumes 30000 at rate 2000. E2 starts at 2 (rate 1333).
/// - t=40000: R (priority 5) arrives; reserve 1 + 1, R takes 2, spare 0 → E1 and E2 shrink
///   to 1 (not evicted). E1 did 10000·2000 = 20e6 → 300e6 left; E2 did 20000·1333 =
///   26.66e6 → 73.34e6 left; both resume 50000 at rate 1000. R ends at 40000 + 100000 =
///   140000. E2 ends at 50000 + 73340 = 123340.
/// - t=123340: E2 ends; spare 1 → E1 2. E1 did 73340·1000 → 226.66e6 left; resumes 133340
///   at rate 2000.
/// - t=140000: R ends; E1 grows to 4. E1 did 6660·2000 = 13.32e6 → 213.34e6 left; resumes
///   150000 at rate 4000; ends at 150000 + 53335 = 203335.
///
/// JCTs 203335, 103340, 100000 ms → p50 (rank 2 of 3) 103.34 s. GPU-ms: E1 4·20000 +
/// 2·20000 + 1·83340 + 2·16660 + 4·63335 = 490000, E2 2·20000 + 1·83340 = 123340, R
/// 2·100000 = 200000 → 813.34 GPU-s; resizes E1 4 + E2 1 = 5.
#[test]
fn two_elastic_and_one_fixed_size_job_exact() {
    let jobs = format!(
        "{HEADER}E1,0,t,0,1,4,400,linear\nE2,20,t,0,1,2,100,amdahl:0.5\nR,40,t,5,2,2,200,linear\n"
    );
    let out = run(&scenario("grow-idle", 10), &[("jobs.csv", &jobs)]);
    let ms = |n: &str| {
        let r = job(&out, n);
        (r.start.unwrap().0, r.finish.unwrap().0)
    };
    assert_eq!(ms("E1"), (0, 203_335));
    assert_eq!(ms("E2"), (20_000, 123_340));
    assert_eq!(ms("R"), (40_000, 140_000));
    assert_eq!(out.summary.jct_s.p50, Some(103.34));
    assert!((gpu_s(&out) - 813.34).abs() < 1e-9, "{}", gpu_s(&out));
    let e = out.summary.elastic.as_ref().unwrap();
    assert_eq!(e.reallocations, 5);
    // A run time is the time the job held GPUs: E1 203.335 s.
    assert_eq!(job(&out, "E1").run_ms, Some(203_335));

    // The rigid baseline (`fixed`: every job at its min): E1 at 1 from 0 ends at 400 s, E2
    // at 1 from 20 (rate 1000) ends at 120, R at 2 from 40 ends at 140 (spare 4 − 1 − 1 = 2).
    let fixed = run(&scenario("fixed", 10), &[("jobs.csv", &jobs)]);
    assert_eq!(span(&fixed, "E1"), (Some(0), Some(400)));
    assert_eq!(span(&fixed, "E2"), (Some(20), Some(120)));
    assert_eq!(span(&fixed, "R"), (Some(40), Some(140)));
    let e = fixed.summary.elastic.as_ref().unwrap();
    assert_eq!((e.allocator.as_str(), e.reallocations), ("fixed", 0));
    // 400 + 100 + 2 · 100 GPU-s.
    assert_eq!(gpu_s(&fixed), 700.0);
}

/// A completion is the ceiling in milliseconds: Amdahl f = 0.5 at 2 GPUs is rate
/// round(1000 · 4/3) = 1333; 10 GPU-s = 10,000,000 thousandths; 10,000,000 / 1333 =
/// 7501.875 → ends at 7,502 ms.
#[test]
fn completion_is_the_ceiling() {
    let jobs = format!("{HEADER}j,0,t,0,2,2,10,amdahl:0.5\n");
    let out = run(&scenario("grow-idle", 10), &[("jobs.csv", &jobs)]);
    assert_eq!(job(&out, "j").finish.unwrap().0, 7_502);
}

/// A job whose `min` exceeds every cell's GPUs is rejected at submit, as a rigid gang would
/// be; the others run.
#[test]
fn a_min_above_every_cell_is_rejected_at_submit() {
    let jobs = format!("{HEADER}big,0,t,0,5,8,10,linear\nok,0,t,0,1,1,10,linear\n");
    let out = run(&scenario("grow-idle", 10), &[("jobs.csv", &jobs)]);
    assert_eq!(job(&out, "big").state, FinalState::Rejected);
    assert_eq!(span(&out, "ok"), (Some(0), Some(10)));
}

#[test]
fn bad_input_is_refused_naming_the_field() {
    let row = |r: &str| format!("{HEADER}{r}\n");
    // Rows: file, line and column.
    for (r, want) in [
        (
            "j,0,t,0,3,2,10,linear",
            "`max_gpus`: max_gpus 2 is below min_gpus 3",
        ),
        ("j,0,t,0,0,2,10,linear", "`min_gpus`: must be at least 1"),
        (
            "j,0,t,0,1,2,10,cubic",
            "`throughput`: `cubic` is not a throughput model",
        ),
        (
            "j,0,t,0,1,3,10,table:1|1.8",
            "`throughput`: no entry for size 3",
        ),
        (
            "j,0,t,0,1,1,10,amdahl:2",
            "`throughput`: 2 is not in [0, 1]",
        ),
        ("j,0,t,0,1,2,,linear", "`work_gpu_s`: missing"),
        (
            "j,0,t,0,1,2,10000000000000,linear",
            "`work_gpu_s`: above the limit of 1000000000000 GPU-seconds",
        ),
    ] {
        let e = refusal(&scenario("grow-idle", 10), &[("jobs.csv", &row(r))]);
        assert!(
            e.contains("jobs.csv") && e.contains("line 2") && e.contains(want),
            "want `{want}` in: {e}"
        );
    }
    // A rigid field on an elastic row.
    let e = refusal(
        &scenario("grow-idle", 10),
        &[(
            "jobs.csv",
            "id,submit_s,tenant,runtime_s,min_gpus,max_gpus,work_gpu_s,throughput\nj,0,t,5,1,2,10,linear\n",
        )],
    );
    assert!(
        e.contains("`runtime_s`") && e.contains("does not apply to an elastic row"),
        "{e}"
    );
    // An elastic row without `[elastic]`.
    let plain = scenario("grow-idle", 10);
    let plain = &plain[..plain.find("[elastic]").unwrap()];
    let e = refusal(plain, &[("jobs.csv", &row("j,0,t,0,1,2,10,linear"))]);
    assert!(e.contains("`min_gpus`") && e.contains("`[elastic]`"), "{e}");
    // A queue time limit does not apply to an elastic job's modelled length.
    let e = refusal(
        &(scenario("grow-idle", 10) + "[[queues]]\nname = \"t\"\ndefault_time_limit_s = 100\n"),
        &[("jobs.csv", &row("j,0,t,0,1,2,10,linear"))],
    );
    assert!(
        e.contains("time limits do not apply to elastic jobs"),
        "{e}"
    );
    // A table that does not compose, named with the jobs' kind.
    let e = load_error(
        &(scenario("grow-idle", 10) + "[platform]\nspeed = { H100 = 0.5 }\n"),
        &[],
    );
    assert!(
        e.contains("`platform`") && e.contains("does not compose with `[elastic]` (elastic jobs)"),
        "{e}"
    );
    // Table fields that do not apply to a sizing policy, and an unknown allocator.
    for (extra, field) in [
        ("round_s = 60\n", "elastic.round_s"),
        ("models = { path = \"m\" }\n", "elastic.models"),
    ] {
        let e = load_error(&(scenario("grow-idle", 10) + extra), &[]);
        assert!(
            e.contains(field) && e.contains("does not apply to `grow-idle`"),
            "{e}"
        );
    }
    let e = load_error(&scenario("shrink-all", 10), &[]);
    assert!(e.contains("shrink-all") && e.contains("grow-idle"), "{e}");
    // A `pollux` workload under a sizing policy.
    let e = load_error(
        &scenario("fixed", 10).replace(
            "{ format = \"native\", path = \"jobs.csv\" }",
            "{ format = \"pollux\", path = \"w.csv\" }",
        ),
        &[],
    );
    assert!(
        e.contains("elastic.allocator") && e.contains("`tiresias` or `pollux`"),
        "{e}"
    );
}

/// The old elastic dialect (`mode = "elastic"`) is refused naming `mode` and saying what
/// to write instead, by `run`, `validate` and the study commands alike.
#[test]
fn the_elastic_mode_is_refused_naming_mode() {
    let text = "mode = \"elastic\"\npolicy = \"grow-idle\"\ncells = [4]\n";
    let e = load_error(text, &[]);
    assert!(
        e.contains("`mode`") && e.contains("`[elastic]`") && e.contains("min_gpus"),
        "{e}"
    );
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("old.toml");
    std::fs::write(&file, text).unwrap();
    let f = file.to_str().unwrap();
    let o = d.path().join("o");
    let o = o.to_str().unwrap();
    for args in [
        vec!["validate", f],
        vec!["run", "-q", f, "--out", o],
        vec!["sweep", f, "--out", o],
        vec![
            "compare",
            f,
            "--policies",
            "a=policy.placement=best-fit",
            "--out",
            o,
        ],
        vec!["check", f, "--baseline", "reports/default.json"],
    ] {
        let out = fleetsim().args(&args).output().unwrap();
        let text = output_text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(
            text.contains("`mode`") && text.contains("`[elastic]`"),
            "{args:?}: {text}"
        );
    }
    // The same advice when the old dialect comes from a base the scenario extends.
    let child = d.path().join("child.toml");
    std::fs::write(&child, "extends = \"old.toml\"\nname = \"c\"\n").unwrap();
    let out = fleetsim()
        .args(["validate", child.to_str().unwrap()])
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("child.toml (with ")
            && text.contains("`mode`")
            && text.contains("`[elastic]`"),
        "{text}"
    );
}

/// `fleetsim validate` and `fleetsim run` on a grow-idle scenario: validate counts the
/// jobs; run prints the elastic line, saying where the job lengths come from.
#[test]
fn the_command_line_on_a_grow_idle_scenario() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("e.toml");
    std::fs::write(&file, scenario("grow-idle", 10)).unwrap();
    std::fs::write(
        d.path().join("jobs.csv"),
        format!("{HEADER}A,0,t,0,1,4,1000,linear\nB,0,t,0,2,2,200,linear\n"),
    )
    .unwrap();
    let o = fleetsim().arg("validate").arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    let o = fleetsim()
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(d.path().join("o"))
        .output()
        .unwrap();
    let text = output_text(&o);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("elastic  sizing grow-idle above each elastic job's min")
            && text.contains("job lengths modelled from each job's work_gpu_s and throughput"),
        "{text}"
    );
    // B43's jobs: plans at 0, 100 and 310, one resize, 1,240 GPU-s = 0.34 GPU-h.
    assert!(
        text.contains("elastic  2 jobs, 2 completed; 3 plans, 1 resizes; 0.3 GPU-h held"),
        "{text}"
    );
    let jobs = std::fs::read_to_string(d.path().join("o/jobs.csv")).unwrap();
    assert_eq!(jobs.lines().count(), 3, "{jobs}");
}

/// `[elastic]` over rigid rows only warns naming the table (the run equals one without it).
#[test]
fn elastic_without_elastic_jobs_warns() {
    let rigid = "id,submit_s,tenant,num_gpu,runtime_s\nR,0,t,2,100\n";
    let only_rigid = run(&scenario("grow-idle", 10), &[("jobs.csv", rigid)]);
    assert_eq!(only_rigid.summary.elastic.as_ref().unwrap().jobs, 0);
    assert!(
        only_rigid
            .summary
            .warnings
            .iter()
            .any(|w| w.starts_with("[elastic] (allocator = \"grow-idle\") does nothing here")),
        "{:?}",
        only_rigid.summary.warnings
    );
}

/// `fleetsim validate` refuses what `run` refuses on arrival, with the run's message: an
/// elastic row without `[elastic]`, and an elastic job whose queue gives it a time limit.
#[test]
fn validate_refuses_what_run_refuses() {
    let plain = scenario("grow-idle", 10);
    let plain = plain[..plain.find("[elastic]").unwrap()].to_string();
    for (toml, want) in [
        (plain, "it needs the scenario's `[elastic]` table"),
        (
            scenario("grow-idle", 10) + "[[queues]]\nname = \"t\"\ndefault_time_limit_s = 100\n",
            "time limits do not apply to elastic jobs",
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("e.toml");
        std::fs::write(&file, toml).unwrap();
        std::fs::write(
            d.path().join("jobs.csv"),
            format!("{HEADER}A,0,t,0,1,4,1000,linear\n"),
        )
        .unwrap();
        let out = d.path().join("o");
        for (cmd, args) in [
            ("validate", vec![file.as_os_str()]),
            (
                "run",
                vec![file.as_os_str(), "--out".as_ref(), out.as_os_str()],
            ),
        ] {
            let o = fleetsim().arg(cmd).args(args).output().unwrap();
            let text = output_text(&o);
            assert!(
                !o.status.success() && text.contains("job `A`") && text.contains(want),
                "{cmd}: want `{want}` in: {text}"
            );
        }
    }
}

/// Field case B45 (kubernetes-sigs/kueue #6969: an elastic job whose min does not fit beside
/// a running rigid lower-priority job preempts it). One 4-GPU node; priority preemption for
/// capacity (`[policy.preemption] capacity = "lower-priority"`); grow-idle, 10 s per resize.
/// L rigid, priority 0, 4 GPUs, 1000 s, at 0; H elastic, priority 10, 2..4 GPUs, 600 GPU-s
/// linear, at 100.
///
/// - t=0: L starts on the 4 GPUs.
/// - t=100: H's min (2) does not fit: the pass evicts L (grace 0; no checkpoint, so L's
///   100 s are lost) and starts H at 2. L (4 GPUs) cannot use the 2 GPUs left, so H grows
///   into them at once: H at 4 from 100 (a start, no overhead), 600 / 4 = 150 s → ends 250.
/// - t=250: L restarts from scratch, ends 1250.
///
/// With `grace_s = 30`, L holds its GPUs until 130: H starts at 130 at 4 and ends 280; L
/// runs 280–1280.
#[test]
fn b45_a_high_priority_elastic_job_evicts_the_rigid_one_and_starts_at_100() {
    let jobs =
        "id,submit_s,tenant,priority,num_gpu,runtime_s,min_gpus,max_gpus,work_gpu_s,throughput\n\
                L,0,t,0,4,1000,,,,\n\
                H,100,t,10,,,2,4,600,linear\n";
    let text = |grace: u32| {
        scenario("grow-idle", 10).replace(
            "[workload]",
            &format!(
                "[policy.preemption]\ncapacity = \"lower-priority\"\ngrace_s = {grace}\n[workload]"
            ),
        )
    };
    let out = run(&text(0), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "H"), (Some(100), Some(250)));
    assert_eq!(
        crate::support::last_span(&out, "L"),
        (Some(250), Some(1250))
    );
    assert_eq!(job(&out, "L").preemptions, 1);
    assert_eq!(
        job(&out, "H").nodes,
        ["n1"; 2],
        "H's min part: 2 one-GPU tasks"
    );
    let e = out.summary.elastic.as_ref().unwrap();
    assert_eq!((e.jobs, e.completed, e.reallocations), (1, 1, 0));
    // H held 4 GPUs for 150 s.
    assert_eq!(gpu_s(&out), 600.0);
    let out = run(&text(30), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "H"), (Some(130), Some(280)));
    assert_eq!(
        crate::support::last_span(&out, "L"),
        (Some(280), Some(1280))
    );
}

/// `scenarios/elastic/beside-rigid.toml` (2 nodes × 4 GPUs, priority preemption, grow-idle,
/// 10 s per resize): elastic E (priority 0, 2..8 GPUs, 8000 GPU-s linear, at 0); rigid R1
/// (priority 5, 4 GPUs, 500 s, at 100); rigid R2 (priority 10, 8 GPUs, 300 s, at 1000).
///
/// - t=0: E starts at 2 and grows to 8 (a start: no overhead); rate 8 → 1000 s of work.
/// - t=100: E has done 800 GPU-s (7200 left). R1 arrives: E's 6 growth GPUs are free to the
///   pass, which starts R1 on 4 of them (no eviction: E's min is untouched); E keeps the 2
///   left → 4 GPUs (a resize: no progress until 110); 7200 / 4 = 1800 s.
/// - t=600: R1 ends. E has done 490 s × 4 = 1960 (5240 left) and grows into the freed node:
///   8 GPUs (a resize: until 610); 5240 / 8 = 655 s → would end 1265.
/// - t=1000: E has done 390 s × 8 = 3120 (2120 left). R2 needs all 8 GPUs, E's min too: E
///   is evicted (below its min; it keeps its progress). R2 runs 1000–1300.
/// - t=1300: E restarts at 2, grows to 8 (a start); 2120 / 8 = 265 s → ends 1565.
///
/// E held 8 × 100 + 4 × 500 + 8 × 400 + 8 × 265 = 8120 GPU-s (its 8000 of work and the two
/// resizes' 4 × 10 + 8 × 10); 2 resizes; 1 preemption; it ran 1000 + 265 = 1265 s.
#[test]
fn an_elastic_job_shrinks_for_a_rigid_one_grows_into_a_freed_node_and_is_evicted_only_below_min() {
    let path = crate::support::repo().join("scenarios/elastic/beside-rigid.toml");
    let mut loaded = fleetsim::scenario::load(&path).unwrap();
    loaded.scenario.metrics.audit_every_instant = true;
    let opts = crate::support::run_options(None, true);
    let out = fleetsim::run::run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
    assert_eq!(span(&out, "E"), (Some(0), Some(1565)));
    assert_eq!(
        crate::support::last_span(&out, "E"),
        (Some(1300), Some(1565))
    );
    assert_eq!(span(&out, "R1"), (Some(100), Some(600)));
    assert_eq!(span(&out, "R2"), (Some(1000), Some(1300)));
    let e = job(&out, "E");
    assert_eq!((e.preemptions, e.service_ms), (1, Some(1_265_000)));
    let s = out.summary.elastic.as_ref().unwrap();
    assert_eq!((s.jobs, s.completed, s.reallocations), (1, 1, 2));
    assert_eq!(gpu_s(&out), 8120.0);
    // E keeps its progress: no work is lost to its eviction.
    assert_eq!(out.summary.preemption.lost_gpu_s, 0.0);
}

/// [`scenario`] on one node `n1` of 8 × H100.
fn scenario8(allocator: &str, restart_s: u32, extra: &str) -> String {
    scenario(allocator, restart_s).replace("gpus = 4", "gpus = 8") + extra
}

/// A queue's hard maximum bounds growth. One node of 8 GPUs, queue `t` (the tenant's) with
/// `max_gpus = 3`; A 1..8, linear, 300 GPU-s at 0: its min takes 1, growth stops at the
/// queue's 3 (5 GPUs stay idle) → rate 3, 300 / 3 = 100 s. Without the bound: 8 GPUs,
/// 300 / 8 = 37.5 s. GPU-s 3 × 100 = 300.
#[test]
fn a_queue_max_gpus_bounds_growth() {
    let jobs = format!("{HEADER}A,0,t,0,1,8,300,linear\n");
    let capped = scenario8("grow-idle", 10, "[[queues]]\nname = \"t\"\nmax_gpus = 3\n");
    let out = run(&capped, &[("jobs.csv", &jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(100)));
    assert_eq!(gpu_s(&out), 300.0);
    let free = run(&scenario8("grow-idle", 10, ""), &[("jobs.csv", &jobs)]);
    assert_eq!(job(&free, "A").finish.unwrap().0, 37_500);
}

/// Quota bounds growth as admission counts it, and growth gives back what a cohort
/// peer's admission needs without a preemption. One node of 8 × H100; queues `a` and `b`
/// (the tenants') in cohort C, each nominal 2 H100, `a` may borrow 1; restart 10 s.
/// A (queue a) 1..8, linear, 300 GPU-s at 0; R (queue b) rigid, 2 GPUs for 100 s at 50.
///
/// - t=0: A's min 1 (a uses 1 of its 2); growth: 1 more within nominal, 1 borrowed from b's
///   unused 2 (a's limit 1) → size 3 (5 GPUs idle): rate 3.
/// - t=50: A did 50 × 3 = 150 GPU-s, 150 left. Its growth is released before the passes:
///   R fits b's nominal 2 and starts (no preemption). After the passes a may take 1 more
///   within its nominal, and borrow nothing (b uses its 2) → A 3 → 2 (one resize):
///   resumes at 60 at rate 2, 150 / 2 = 75 s → ends 135. R ends 150.
///
/// A's GPU-s 3 × 50 + 2 × 85 = 320; R 200.
#[test]
fn quota_bounds_growth_and_a_peer_queue_gets_its_nominal_back_without_preemption() {
    let quota = "[[cohorts]]\nname = \"C\"\n[[queues]]\nname = \"a\"\ncohort = \"C\"\nflavors = [{ name = \"H100\", gpus = { nominal = 2, borrowing_limit = 1 } }]\n[[queues]]\nname = \"b\"\ncohort = \"C\"\nflavors = [{ name = \"H100\", gpus = { nominal = 2 } }]\n";
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s,min_gpus,max_gpus,work_gpu_s,throughput\n\
                A,0,a,,,1,8,300,linear\n\
                R,50,b,2,100,,,,\n";
    let out = run(&scenario8("grow-idle", 10, quota), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(135)));
    assert_eq!(span(&out, "R"), (Some(50), Some(150)));
    assert_eq!(out.summary.preemption.preemptions, 0);
    assert_eq!(gpu_s(&out), 320.0);
    let e = out.summary.elastic.as_ref().unwrap();
    assert_eq!(e.reallocations, 1);
}

/// The same bounds through `[kueue]`: ClusterQueues `a` and `b` in cohort C as in the
/// test above map to the same quota, so A runs at 3 GPUs and ends at 300 / 3 = 100 s.
#[test]
fn kueue_quota_bounds_growth() {
    let kueue = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: H100\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: a\nspec:\n  cohort: C\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: H100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 2\n        borrowingLimit: 1\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: b\nspec:\n  cohort: C\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: H100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 2\n";
    let jobs = "id,submit_s,tenant,queue,min_gpus,max_gpus,work_gpu_s,throughput\nA,0,t,a,1,8,300,linear\n";
    let out = run(
        &format!(
            "kueue = {{ path = \"kueue.yaml\" }}\n{}",
            scenario8("grow-idle", 10, "")
        ),
        &[("jobs.csv", jobs), ("kueue.yaml", kueue)],
    );
    assert_eq!(span(&out, "A"), (Some(0), Some(100)));
}

/// A required topology level keeps growth in the group its min was placed in. Cell of two
/// nodes n1, n2 × 4 H100, `required = "node"`, restart 10 s; A 2..8, linear, 600 GPU-s at
/// 0; R rigid 4 GPUs for 100 s at 50.
///
/// - t=0: A's min (2) on n1; its growth only on n1 → size 4 (n2 idle), rate 4.
/// - t=50: A's growth released; R (4 GPUs, one node) takes n2; A gets its 2 back on n1:
///   size unchanged, no resize. A ends at 600 / 4 = 150; R 50 → 150.
///
/// Without the level: A grows to 8 at 0; at 50 it did 400, 200 left; R takes n2, A shrinks
/// to 4 (resize: resumes 60), 200 / 4 = 50 → ends 110.
#[test]
fn a_required_topology_level_keeps_growth_in_the_min_s_domain() {
    let fleet = cell("c", &["n1", "n2"], "H100", 4);
    let base = scenario("grow-idle", 10).replace(&cell("c", &["n1"], "H100", 4), &fleet);
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s,min_gpus,max_gpus,work_gpu_s,throughput\n\
                A,0,t,,,2,8,600,linear\n\
                R,50,t,4,100,,,,\n";
    let out = run(
        &(base.clone() + "[policy.topology]\nrequired = \"node\"\n"),
        &[("jobs.csv", jobs)],
    );
    assert_eq!(span(&out, "A"), (Some(0), Some(150)));
    assert_eq!(span(&out, "R"), (Some(50), Some(150)));
    assert_eq!(job(&out, "A").nodes, ["n1", "n1"]);
    assert_eq!(job(&out, "R").nodes, ["n2"]);
    assert_eq!(out.summary.elastic.as_ref().unwrap().reallocations, 0);
    // A held 4 × 150 = 600 GPU-s.
    assert_eq!(gpu_s(&out), 600.0);
    let free = run(&base, &[("jobs.csv", jobs)]);
    assert_eq!(span(&free, "A"), (Some(0), Some(110)));
    // Topology constraints growth does not keep to are refused naming the field.
    for (extra, field) in [
        (
            "ray_strategy = \"STRICT_SPREAD\"\n",
            "`policy.topology.ray_strategy`",
        ),
        ("slice_size = 2\n", "`policy.topology.slice_size`"),
    ] {
        let e = load_error(&(base.clone() + "[policy.topology]\n" + extra), &[]);
        assert!(
            e.contains(field) && e.contains("does not bound the growth of elastic jobs"),
            "want {field} in: {e}"
        );
    }
}

/// Two nodes n1, n2 × 4 H100, restart 10 s; A 1..8, linear, 800 GPU-s at 0: its min on n1,
/// growth 3 on n1 and 4 on n2 → 8 (rate 8).
fn two_nodes(extra: &str) -> String {
    scenario("grow-idle", 10).replace(
        &cell("c", &["n1"], "H100", 4),
        &cell("c", &["n1", "n2"], "H100", 4),
    ) + extra
}

/// A node failure that hits only growth GPUs shrinks the job, which keeps its progress and
/// pays the resize overhead. n2 fails at 50: A did 50 × 8 = 400 GPU-s, 400 left; its growth
/// on n2 is gone → A 8 → 4 on n1, resumes at 60, 400 / 4 = 100 → ends 160. No failure of A.
/// GPU-s 8 × 50 + 4 × 110 = 840.
#[test]
fn a_failure_of_growth_gpus_shrinks_the_job() {
    let jobs = format!("{HEADER}A,0,t,0,1,8,800,linear\n");
    let out = run(
        &two_nodes("[[node_events]]\nat_s = 50\nnode = \"n2\"\nkind = \"fail\"\n"),
        &[("jobs.csv", &jobs)],
    );
    assert_eq!(span(&out, "A"), (Some(0), Some(160)));
    assert_eq!(job(&out, "A").failures, 0);
    assert_eq!(gpu_s(&out), 840.0);
    assert_eq!(out.summary.elastic.as_ref().unwrap().reallocations, 1);
}

/// A failure of the node holding the min stops the job as a rigid one: back to its last
/// checkpoint, requeued, started again (at its min, then grown) where it fits.
///
/// - No checkpoint: n1 fails at 50 (grace 0); A lost its 400 GPU-s, restarts at 50 on n2 at
///   size 4 (a start: no resize overhead), 800 / 4 = 200 → ends 250.
/// - `checkpoint_interval_s = 30`: A's checkpoint at 30 s of progress kept 30 × 8 = 240
///   GPU-s; 560 left at rate 4 → 140 s → ends 190.
#[test]
fn a_failure_of_the_min_s_node_goes_back_to_the_checkpoint_and_requeues() {
    let jobs = format!("{HEADER}A,0,t,0,1,8,800,linear\n");
    let fail = "[[node_events]]\nat_s = 50\nnode = \"n1\"\nkind = \"fail\"\n";
    let out = run(&two_nodes(fail), &[("jobs.csv", &jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(250)));
    assert_eq!(job(&out, "A").failures, 1);
    assert_eq!(job(&out, "A").nodes, ["n2"]);
    // The lost accelerator-time is the min's (1 GPU × 50 s), with or without `[failures]`.
    assert_eq!(out.summary.preemption.lost_gpu_s, 50.0);
    let ckpt = format!("{fail}[policy.preemption]\ncheckpoint_interval_s = 30\n");
    let out = run(&two_nodes(&ckpt), &[("jobs.csv", &jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(190)));
    // 1 GPU × (50 − 30) s since its checkpoint.
    assert_eq!(out.summary.preemption.lost_gpu_s, 20.0);
    let out = run(
        &two_nodes(&format!("{ckpt}[failures]\nmtbf_h = {{}}\n")),
        &[("jobs.csv", &jobs)],
    );
    assert_eq!(span(&out, "A"), (Some(0), Some(190)));
    assert_eq!(out.summary.preemption.lost_gpu_s, 20.0);
}

/// Added nodes are grown into after the next passes; removed (drained) nodes take their
/// growth GPUs away. One node n1 × 4; A 1..8, linear, 800 GPU-s at 0 → size 4, rate 4.
/// `add_nodes` of n2 (4 GPUs) at 100: A did 400, grows 4 → 8, resumes 110, 400 / 8 = 50 →
/// ends 160.
#[test]
fn added_nodes_are_grown_into() {
    let jobs = format!("{HEADER}A,0,t,0,1,8,800,linear\n");
    let add = "[[transforms.add_nodes]]\nat_s = 100\ncell = \"c\"\n[[transforms.add_nodes.nodes]]\nnames = [\"n2\"]\naccelerator = \"H100\"\ngpus = 4\n";
    let out = run(&(scenario("grow-idle", 10) + add), &[("jobs.csv", &jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(160)));
}

/// `[startup]` delays the progress of the min's start; growth pays `restart_s`. One node of
/// 4; A 1..4, linear, 400 GPU-s at 0 with a 20 s startup: size 4 from 0, progress from 20,
/// 400 / 4 = 100 → ends 120.
#[test]
fn startup_delays_the_min_s_start() {
    let jobs = format!("{HEADER}A,0,t,0,1,4,400,linear\n");
    let out = run(
        &(scenario("grow-idle", 10) + "[startup]\nbase_s = 20\n"),
        &[("jobs.csv", &jobs)],
    );
    assert_eq!(span(&out, "A"), (Some(0), Some(120)));
}

/// Autoscaling: a pending job scales up, growth does not, and a node holding only growth is
/// idle for scale-down (the job shrinks first). Static n1 × 4 H100 and a group `burst` of
/// up to 2 × 4 (none at start, 60 s provisioning, removed after 120 s idle); restart 10 s.
/// A 1..8, linear, 2000 GPU-s at 0; R rigid 4 GPUs for 100 s at 10.
///
/// - t=0: A's min on n1, growth 3 → size 4 (rate 4); no scale-up (growth asks for none).
/// - t=10: R fits no node (n1 has 3 free with A's growth released): burst-0 requested,
///   joins at 70; A gets its 3 back (unchanged).
/// - t=70: R starts on burst-0, ends 170; A unchanged.
/// - t=170: burst-0 is idle to the autoscaler (growth is no demand): idle since 170. A grows
///   to 8 (3 on n1, 4 on burst-0): done 4 × 170 = 680, 1320 left, resumes 180 at rate 8.
/// - t=290: burst-0's idle check: it holds only A's growth, so A shrinks first and burst-0
///   leaves. A did 8 × 110 = 880, 440 left; 8 → 4, resumes 300, 440 / 4 = 110 → ends 410.
///
/// burst-0 billed 10 → 290 = 280 node-s; A held 4 × 170 + 8 × 120 + 4 × 120 = 2120 GPU-s.
#[test]
fn autoscaling_scales_up_for_pending_work_not_growth_and_scales_down_under_growth() {
    let toml = scenario("grow-idle", 10).replace(
        &cell("c", &["n1"], "H100", 4),
        &(cell("c", &["n1"], "H100", 4)
            + &burst_group(2, "{ distribution = \"fixed\", s = 60 }", Some("2.0"), 120)),
    );
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s,min_gpus,max_gpus,work_gpu_s,throughput\n\
                A,0,t,,,1,8,2000,linear\n\
                R,10,t,4,100,,,,\n";
    let out = run(&toml, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "R"), (Some(70), Some(170)));
    assert_eq!(span(&out, "A"), (Some(0), Some(410)));
    let a = out
        .summary
        .autoscaling
        .as_ref()
        .expect("autoscaling section");
    assert_eq!((a.scale_ups, a.scale_downs), (1, 1));
    assert_eq!(a.node_hours, 280.0 / 3600.0);
    assert_eq!(gpu_s(&out), 2120.0);
    assert_eq!(out.summary.elastic.as_ref().unwrap().reallocations, 2);
}

/// Serving takes growth GPUs before it would preempt training. Nodes n1, n2 × 4 H100,
/// restart 10 s, capacity preemption of lower priorities on; A (priority 0) 1..8, linear,
/// 800 GPU-s at 0 → size 8 (min on n1). Service `chat` of 4-GPU replicas (priority 1000)
/// desired 1 over [50, 150), no delays.
///
/// - t=50: A did 400, 400 left; its growth is released before the passes: the replica
///   takes n2 (n1 holds A's min) without a preemption. A 8 → 4 on n1, resumes 60.
/// - t=150: the replica leaves; A did 90 × 4 = 360, 40 left; grows to 8 again, resumes
///   160, 40 / 8 = 5 → ends 165.
#[test]
fn serving_takes_growth_before_preempting_training() {
    let toml = two_nodes(&format!(
        "[policy.preemption]\ncapacity = \"lower-priority\"\n[serving]\nend_s = 600\n{}",
        service("chat", None, "[[0, 0], [50, 1], [150, 0]]", 0, 0)
    ));
    let jobs = format!("{HEADER}A,0,t,0,1,8,800,linear\n");
    let out = run(&toml, &[("jobs.csv", &jobs)]);
    assert_eq!(span(&out, "chat/r0#0"), (Some(50), Some(150)));
    assert_eq!(job(&out, "chat/r0#0").nodes, ["n2"]);
    assert_eq!(span(&out, "A"), (Some(0), Some(165)));
    assert_eq!(out.summary.preemption.preemptions, 0);
    assert_eq!(out.summary.elastic.as_ref().unwrap().reallocations, 2);
}

/// The committed mixed scenario (`scenarios/elastic/mixed.toml`: rigid and elastic training,
/// a diurnal service, an autoscaled group, cohort quota) under `run`, `sweep`, `compare` and
/// `check`. Its exact behaviours are the hand cases above; here every command takes it and
/// every job completes.
#[test]
fn the_mixed_scenario_runs_under_run_sweep_compare_and_check() {
    let f = crate::support::repo().join("scenarios/elastic/mixed.toml");
    let d = tempfile::tempdir().unwrap();
    let out = |name: &str| d.path().join(name);
    let baseline = out("b.json");
    for args in [
        vec!["run".into(), f.clone(), "--out".into(), out("run")],
        vec!["sweep".into(), f.clone(), "--out".into(), out("sweep")],
        vec![
            "compare".into(),
            f.clone(),
            "--policies".into(),
            "placement=best-fit,placement=first-fit".into(),
            "--seeds".into(),
            "2".into(),
            "--out".into(),
            out("compare"),
        ],
        vec![
            "check".into(),
            f.clone(),
            "--baseline".into(),
            baseline.clone(),
            "--update".into(),
            "--seeds".into(),
            "2".into(),
        ],
        vec![
            "check".into(),
            f.clone(),
            "--baseline".into(),
            baseline.clone(),
        ],
    ] {
        let o = fleetsim().args(&args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", output_text(&o));
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out("run/summary.json")).unwrap()).unwrap();
    // Eight training rows (four elastic) and the service's replicas all complete.
    assert_eq!(summary["elastic"]["jobs"], 4);
    assert_eq!(summary["elastic"]["completed"], 4);
    assert_eq!(summary["jobs"]["rejected"], 0);
    assert_eq!(summary["jobs"]["submitted"], summary["jobs"]["completed"]);
    assert!(summary["autoscaling"]["scale_ups"].as_u64().unwrap() > 0);
    assert!(
        summary["serving"]["services"][0]["replicas_added"]
            .as_u64()
            .unwrap()
            > 0
    );
}
