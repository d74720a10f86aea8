//! Elastic jobs: exact sizes and completion times on a tiny fleet, the
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

/// GPU-milliseconds held that exceed 2^64 are refused, not wrapped: 4,000,000,000 GPUs held
/// while Amdahl f = 1 (no speed-up at any size) drains 10^12 GPU-s at rate 1000, i.e. for
/// 10^15 ms: 4 · 10^24 GPU-ms.
#[test]
fn gpu_milliseconds_beyond_u64_are_refused() {
    let j = ElasticJob {
        model: ThroughputModel::Amdahl {
            serial_fraction: 1.0,
        },
        ..job(
            "huge",
            0,
            0,
            4_000_000_000,
            4_000_000_000,
            1_000_000_000_000,
        )
    };
    let cfg = ElasticConfig {
        kind: ElasticKind::GrowIdle,
        resize_overhead: SimDuration::ZERO,
        cells: vec![4_000_000_000],
    };
    let e = simulate(&cfg, &[j]).unwrap_err().to_string();
    assert!(e.contains("huge") && e.contains("exceed 2^64"), "{e}");
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
        format!("mode = \"elastic\"\n{head}\ncells = [4, 8]\n[[jobs]]\nname = \"j\"\nsubmit_s = 0\nwork_gpu_s = 10\n{job}\n")
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
            "mode = \"elastic\"\ncells = [4]\n".to_string(),
            "give exactly one of `[trace]` and `[[jobs]]`",
        ),
        // Values whose milliseconds would overflow are refused before any conversion.
        (
            with(&format!("min = 1\nmax = 2\n{lin}"), "")
                .replace("submit_s = 0", "submit_s = 100000000000000000"),
            "job `j`: field `submit_s`: 100000000000000000 is above the limit of 10000000000",
        ),
        (
            with(&format!("min = 1\nmax = 2\n{lin}"), "")
                .replace("work_gpu_s = 10", "work_gpu_s = 100000000000000000"),
            "job `j`: field `work_gpu_s`: 100000000000000000 is above the limit of 1000000000000",
        ),
        (
            with(
                &format!("min = 1\nmax = 2\n{lin}"),
                "resize_overhead_s = 1e16",
            ),
            "field `resize_overhead_s`: 10000000000000000 s is above the limit of 10000000000 s",
        ),
        (
            with(&format!("min = 1\nmax = 2\n{lin}"), "")
                .replace("mode = \"elastic\"", "mode = \"replay\""),
            "field `mode`: `replay` is not `elastic`",
        ),
        (
            with(&format!("min = 1\nmax = 2\n{lin}"), "").replace("mode = \"elastic\"\n", ""),
            "missing field `mode`",
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

/// One 4-GPU cell, grow-idle, 2.5 s per resize, linear throughput (rate n·1000 thousandths
/// of a GPU-ms per ms at n GPUs):
///
/// - A 1..4, 40 GPU-s (40e6), submit 0; B rigid 2, 20 GPU-s (20e6), submit 5.
/// - t=0: A starts at 4 (rate 4000).
/// - t=5000: B arrives: reserve 1 + 2, spare 1 → A 2 (resize 1). A did 5000·4000 = 20e6,
///   20e6 left, resumes 7500 at rate 2000. B starts at 2, ends 5000 + 20e6/2000 = 15000.
/// - t=15000: B ends; A grows to 4 (resize 2). A did 7500·2000 = 15e6 → 5e6 left; resumes
///   17500 at rate 4000; ends 17500 + 1250 = 18750.
///
/// GPU-ms: A 4·5000 + 2·10000 + 4·3750 = 55000, B 2·10000 = 20000. JCTs 18750 and 10000 →
/// mean 14.375 s, p50 (rank 1 of 2) 10 s, p95 (rank 2) 18.75 s; makespan 18.75 s.
const TINY: &str = r#"mode = "elastic"
policy = "grow-idle"
resize_overhead_s = 2.5
cells = [4]

[[jobs]]
name = "A"
submit_s = 0
min = 1
max = 4
work_gpu_s = 40
throughput = { kind = "linear" }

[[jobs]]
name = "B"
submit_s = 5
min = 2
max = 2
work_gpu_s = 20
throughput = { kind = "linear" }
"#;

fn fleetsim(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn elastic_cli_run_writes_exact_jobs_and_summary() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let out = d.path().join("o");
    let (code, stdout, stderr) = fleetsim(&[
        "run".as_ref(),
        file.as_ref(),
        "--out".as_ref(),
        out.as_ref(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("JCT mean (s)") && stdout.contains("14.375"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "wrote {}/{{jobs.csv,summary.json,complete.json}} in ",
            out.display()
        )),
        "{stderr}"
    );
    let marker: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("complete.json")).unwrap()).unwrap();
    let listed: Vec<&String> = marker["files"].as_object().unwrap().keys().collect();
    assert_eq!(listed, ["jobs.csv", "summary.json"]);
    assert_eq!(
        std::fs::read_to_string(out.join("jobs.csv")).unwrap(),
        "name,submit_s,start_s,finish_s,wait_s,jct_s,cell,start_gpus,final_gpus,resizes,gpu_s\n\
         A,0.000,0.000,18.750,0.000,18.750,0,4,4,2,55.000\n\
         B,5.000,5.000,15.000,0.000,10.000,0,2,2,0,20.000\n"
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        s,
        serde_json::json!({
            "mode": "elastic", "jobs": 2, "jct_mean_s": 14.375, "jct_p50_s": 10.0,
            "jct_p95_s": 18.75, "gpu_seconds": 75.0, "resizes": 2, "makespan_s": 18.75
        })
    );
    // --quiet: no table.
    let (code, stdout, _) = fleetsim(&[
        "run".as_ref(),
        "-q".as_ref(),
        file.as_ref(),
        "--out".as_ref(),
        out.as_ref(),
    ]);
    assert_eq!((code, stdout.as_str()), (0, ""));
}

#[test]
fn elastic_cli_refuses_seed_and_format() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let out = d.path().join("o");
    for (flag, value) in [("--seed", "3"), ("--format", "csv")] {
        let (code, _, stderr) = fleetsim(&[
            "run".as_ref(),
            file.as_ref(),
            "--out".as_ref(),
            out.as_ref(),
            flag.as_ref(),
            value.as_ref(),
        ]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(&format!("`{flag}` does not apply to an elastic scenario")),
            "{stderr}"
        );
    }
    assert!(
        !out.exists(),
        "nothing is written when an option is refused"
    );
}

#[test]
fn elastic_cli_validate() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let (code, stdout, stderr) = fleetsim(&["validate".as_ref(), file.as_ref()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        format!(
            "{}: ok — 1 cell, 4 GPUs; 2 elastic jobs (elastic)\n",
            file.display()
        )
    );
    // min > max names the job and the field.
    std::fs::write(&file, TINY.replace("min = 2\nmax = 2", "min = 2\nmax = 1")).unwrap();
    let (code, _, stderr) = fleetsim(&["validate".as_ref(), file.as_ref()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: job `B`: field `max`: max 1 is below min 2",
            file.display()
        )),
        "{stderr}"
    );
    // A file that is not TOML goes to the main loader, whose error gives the line.
    std::fs::write(&file, "mode = \"elastic\"\ncells = [4\n").unwrap();
    let (code, _, stderr) = fleetsim(&["validate".as_ref(), file.as_ref()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
}

/// The committed Pollux scenario through the CLI (skipped without the public traces).
#[test]
fn elastic_cli_pollux_scenario() {
    let traces = public_traces();
    if !traces
        .join("pollux-workloads/load-1.0/workload-1.csv")
        .is_file()
    {
        eprintln!("skipped: no pollux-workloads under {}", traces.display());
        return;
    }
    let file = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/elastic/pollux-load1-elastic.toml");
    let td = ["--trace-dir".as_ref(), traces.as_os_str()];
    let (code, stdout, stderr) =
        fleetsim(&[&["validate".as_ref(), file.as_os_str()], &td[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.ends_with(": ok — 1 cell, 64 GPUs; 160 elastic jobs (elastic)\n"),
        "{stdout}"
    );
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("p");
    let (code, _, stderr) = fleetsim(
        &[
            &[
                "run".as_ref(),
                "-q".as_ref(),
                file.as_os_str(),
                "--out".as_ref(),
                out.as_os_str(),
            ],
            &td[..],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{stderr}");
    let jobs = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
    assert_eq!(jobs.lines().count(), 161);
}

/// The study commands take the main format only: on an elastic file they say so (exit code
/// 2) instead of reporting its keys as unknown.
#[test]
fn study_commands_refuse_an_elastic_file_by_name() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    for (cmd, required) in [
        ("sweep", &[][..]),
        (
            "compare",
            &["--policies", "a=policy.placement=best-fit"][..],
        ),
        ("compact", &["--goal", "occupancy>=0.5"][..]),
        ("check", &["--baseline", "reports/default.json"][..]),
    ] {
        let mut args: Vec<&std::ffi::OsStr> = vec![cmd.as_ref(), file.as_ref()];
        args.extend(required.iter().map(std::ffi::OsStr::new));
        let (code, _, stderr) = fleetsim(&args);
        assert_eq!(code, 2, "{cmd}: {stderr}");
        assert!(
            stderr.contains("an elastic scenario (`mode = \"elastic\"`) runs with `fleetsim run`")
                && stderr.contains(&format!(
                    "`fleetsim {cmd}` takes the main scenario format only"
                )),
            "{cmd}: {stderr}"
        );
    }
}
