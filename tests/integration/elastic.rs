//! Elastic jobs (issue 22 item 2): exact sizes and completion times on a tiny fleet, the
//! rigid baseline, bad input refused naming the field, and the Pollux scenario.

use fleetsim::elastic::scenario::load;
use fleetsim::elastic::{simulate, summarize, ElasticConfig, ElasticJob, ThroughputModel};
use fleetsim::policies::{ElasticKind, SimDuration, SimTime};
use fleetsim::scenario::TraceDir;

use crate::support::public_traces;

fn job(name: &str, submit_s: u64, prio: i32, min: u32, max: u32, work_gpu_s: u64) -> ElasticJob {
    ElasticJob {
        name: name.into(),
        submit: SimTime::from_secs(submit_s),
        priority: prio,
        min,
        max,
        work_gpu_ms: work_gpu_s * 1000,
        model: ThroughputModel::Linear,
    }
}

/// One cell of 4 GPUs, resize overhead 10 s, `grow-idle`:
///
/// - E1 elastic 1..4, linear, 400 GPU-s, submit 0, priority 0;
/// - E2 elastic 1..2, Amdahl f = 0.5 (s(2) = 1/(0.5 + 0.25) → rate 1333), 100 GPU-s, submit 20;
/// - R rigid 2, linear, 200 GPU-s, submit 40, priority 5.
///
/// Worked out in ms (remaining work in thousandths of a GPU-ms; running jobs reserve their
/// min, the spare is water-filled one GPU per job per round in key order):
///
/// - t=0: E1 starts at 4 (rate 4000), 400e6 left.
/// - t=20000: E2 arrives; reserve 1 + 1, spare 2 → E1 2, E2 2. E1 did 20000·4000 = 80e6,
///   320e6 left, resumes 30000 at rate 2000. E2 starts at 2 (rate 1333).
/// - t=40000: R (priority 5) arrives; reserve 1 + 1, R takes 2, spare 0 → E1 and E2 shrink
///   to 1 (not evicted). E1 did 10000·2000 = 20e6 → 300e6 left; E2 did 20000·1333 =
///   26.66e6 → 73.34e6 left; both resume 50000 at rate 1000. R ends at 40000 + 100000 = 140000.
///   E2 ends at 50000 + 73340 = 123340.
/// - t=123340: E2 ends; spare 1 → E1 2. E1 did 73340·1000 → 226.66e6 left; resumes 133340
///   at rate 2000.
/// - t=140000: R ends; E1 grows to 4. E1 did 6660·2000 = 13.32e6 → 213.34e6 left; resumes
///   150000 at rate 4000; ends at 150000 + 53335 = 203335.
///
/// JCTs 203335, 103340, 100000 ms → mean 135558.33, p50 (rank 2 of 3) 103340, p95 (rank 3)
/// 203335. GPU-ms: E1 4·20000 + 2·20000 + 1·83340 + 2·16660 + 4·63335 = 490000, E2
/// 2·20000 + 1·83340 = 123340, R 2·100000 = 200000 → 813.34 GPU-s; resizes 4 + 1 = 5.
#[test]
fn two_elastic_one_rigid_exact() {
    let e2 = ElasticJob {
        model: ThroughputModel::Amdahl {
            serial_fraction: 0.5,
        },
        ..job("E2", 20, 0, 1, 2, 100)
    };
    let jobs = vec![job("E1", 0, 0, 1, 4, 400), e2, job("R", 40, 5, 2, 2, 200)];
    let cfg = ElasticConfig {
        kind: ElasticKind::GrowIdle,
        resize_overhead: SimDuration::from_secs(10),
        cells: vec![4],
    };
    let out = simulate(&cfg, &jobs).unwrap();
    let s = SimTime::from_secs;
    assert_eq!(
        out[0].sizes,
        vec![
            (s(0), 4),
            (s(20), 2),
            (s(40), 1),
            (SimTime(123_340), 2),
            (s(140), 4)
        ]
    );
    assert_eq!(out[1].sizes, vec![(s(20), 2), (s(40), 1)]);
    assert_eq!(out[2].sizes, vec![(s(40), 2)]);
    let spans: Vec<(u64, u64, u32, u64)> = out
        .iter()
        .map(|o| (o.start.0, o.finish.0, o.resizes, o.gpu_ms))
        .collect();
    assert_eq!(
        spans,
        vec![
            (0, 203_335, 4, 490_000),
            (20_000, 123_340, 1, 123_340),
            (40_000, 140_000, 0, 200_000)
        ]
    );
    let sum = summarize(&out);
    assert_eq!(
        (sum.jct_p50_s, sum.jct_p95_s, sum.gpu_seconds, sum.resizes),
        (103.34, 203.335, 813.34, 5)
    );
    assert!((sum.jct_mean_s - 406.675 / 3.0).abs() < 1e-9);

    // Rigid baseline (`fixed`: every job at its min): E1 at 1 from 0 ends at 400 s, E2 at 1
    // from 20 ends at 120, R at 2 from 40 ends at 140 (spare 4 − 1 − 1 = 2). No resizes.
    let fixed = simulate(
        &ElasticConfig {
            kind: ElasticKind::Fixed,
            ..cfg
        },
        &jobs,
    )
    .unwrap();
    let ends: Vec<u64> = fixed.iter().map(|o| o.finish.0).collect();
    assert_eq!(ends, vec![400_000, 120_000, 140_000]);
    assert_eq!(summarize(&fixed).resizes, 0);
}

/// Completion of remaining work at a rate is the ceiling in milliseconds: Amdahl f = 0.5 at
/// 2 GPUs is rate round(1000 · 4/3) = 1333; 10 GPU-s = 10,000,000 thousandths;
/// 10,000,000 / 1333 = 7501.875 → ends at 7,502 ms.
#[test]
fn completion_is_the_ceiling() {
    let j = ElasticJob {
        model: ThroughputModel::Amdahl {
            serial_fraction: 0.5,
        },
        ..job("A", 0, 0, 2, 2, 10)
    };
    let cfg = ElasticConfig {
        kind: ElasticKind::GrowIdle,
        resize_overhead: SimDuration::ZERO,
        cells: vec![2],
    };
    assert_eq!(simulate(&cfg, &[j]).unwrap()[0].finish, SimTime(7_502));
}

fn load_text(toml: &str) -> anyhow::Result<usize> {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("e.toml");
    std::fs::write(&p, toml).unwrap();
    load(&p, &TraceDir(public_traces())).map(|(_, j)| j.len())
}

#[test]
fn bad_input_is_refused_naming_the_field() {
    let with = |job: &str, head: &str| {
        format!("{head}\ncells = [4, 8]\n[[jobs]]\nname = \"j\"\nsubmit_s = 0\nwork_gpu_s = 10\n{job}\n")
    };
    let lin = "throughput = { kind = \"linear\" }";
    assert_eq!(
        load_text(&with(&format!("min = 1\nmax = 2\n{lin}"), "")).unwrap(),
        1
    );
    let cases = [
        (
            with(&format!("min = 3\nmax = 2\n{lin}"), ""),
            "job `j`: field `max`: max 2 is below min 3",
        ),
        (
            with(&format!("min = 9\nmax = 9\n{lin}"), ""),
            "field `min`: min 9 is above every cell's capacity (largest cell: 8 GPUs)",
        ),
        (
            with(
                &format!("min = 1\nmax = 2\n{lin}"),
                "resize_overhead_s = -1",
            ),
            "field `resize_overhead_s`",
        ),
        (
            with(
                "min = 1\nmax = 3\nthroughput = { kind = \"table\", speedup = [1.0, 1.8] }",
                "",
            ),
            "job `j`: field `throughput.speedup`: no entry for size 3",
        ),
        (
            with(
                "min = 1\nmax = 1\nthroughput = { kind = \"amdahl\", serial_fraction = 2.0 }",
                "",
            ),
            "field `throughput.serial_fraction`",
        ),
        (
            with(&format!("min = 1\nmax = 2\nsize = 4\n{lin}"), ""),
            "unknown field `size`",
        ),
        (
            "cells = [4]\n".to_string(),
            "give exactly one of `[trace]` and `[[jobs]]`",
        ),
    ];
    for (text, want) in cases {
        let e = format!("{:#}", load_text(&text).unwrap_err());
        assert!(e.contains(want), "want `{want}` in: {e}");
    }
}

/// The committed Pollux scenarios load their public trace (160 jobs at load 1.0) and every
/// job finishes; the figures of both are in the README.
#[test]
fn pollux_scenario_elastic_vs_rigid() {
    let traces = public_traces();
    if !traces
        .join("pollux-workloads/load-1.0/workload-1.csv")
        .is_file()
    {
        eprintln!("skipped: no pollux-workloads under {}", traces.display());
        return;
    }
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let run = |name: &str| {
        let (cfg, jobs) = load(
            &root.join("scenarios/elastic").join(name),
            &TraceDir(traces.clone()),
        )
        .unwrap();
        assert_eq!(jobs.len(), 160);
        summarize(&simulate(&cfg, &jobs).unwrap())
    };
    let e = run("pollux-load1-elastic.toml");
    let r = run("pollux-load1-rigid.toml");
    eprintln!("elastic {e:?}\nrigid {r:?}");
    assert_eq!((e.jobs, r.jobs), (160, 160));
    assert_eq!(r.resizes, 0);
    assert!(e.resizes > 0);
}
