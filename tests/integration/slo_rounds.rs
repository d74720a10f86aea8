//! Queueing SLOs (`[[metrics.slo]]`) and the round-based cadence (`[policy.cycle] round_s`),
//! on one tiny scenario whose every number is worked out by hand in the comments.

use fleetsim::metrics::slo::SloResult;
use fleetsim::run::RunOutput;

use crate::support::{load_error, run, span};

/// One node of 4 GPUs, best-effort FIFO; queues `prod` and `dev` (both of the default tier,
/// `batch`: a production tier would be served first).
const SCENARIO: &str = r#"
name = "slo-rounds"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 4
[workload]
trace = { format = "native", path = "jobs.csv" }
[[queues]]
name = "prod"
[[queues]]
name = "dev"
[metrics]
timeseries_interval_s = 100
[[metrics.slo]]
name = "prod-start"
kind = "start_within"
queues = ["prod"]
within_s = 60
target_fraction = 0.5
[[metrics.slo]]
name = "all-p60"
kind = "wait_quantile"
quantile = 0.6
target_s = 90
[[metrics.slo]]
name = "batch-tier"
kind = "start_within"
tier = "batch"
within_s = 60
target_fraction = 0.5
"#;

const JOBS: &str = "id,submit_s,tenant,queue,num_gpu,runtime_s
A,0,t,dev,4,100
B,10,t,prod,2,50
C,20,t,prod,2,50
D,30,t,dev,4,10
E,130,t,prod,1,10
";

fn with_policy(policy: &str) -> String {
    format!("{SCENARIO}[policy]\nqueueing_strategy = \"best-effort-fifo\"\n{policy}")
}

fn slo<'a>(out: &'a RunOutput, name: &str) -> &'a SloResult {
    &out.summary.slo.as_ref().expect("slo section")[name]
}

/// Exact cadence (no rounds):
/// t=0 A (4 GPUs) runs 0–100. B, C, D queue behind it.
/// t=100 A ends: B and C (2 + 2) start, 100–150; D (4) does not fit.
/// t=130 E (1) arrives: no GPU free. t=150 B, C end: D (first in FIFO) takes all 4, 150–160.
/// t=160 D ends: E runs 160–170. Waits A 0, B 90, C 80, D 120, E 30. Window [0, 170];
/// intervals [0, 100) and [100, 170].
///
/// `prod-start` (prod jobs start within 60 s, ≥ 50 %): B violated at its deadline 70,
/// C at 80 (both in interval 0), E met at its start 160 (interval 1) → 1/3, not met;
/// intervals: 0/2 (missed), 1/1 (met) → interval attainment 1/2.
///
/// `batch-tier` (every job here; within 60 s, ≥ 50 %): A met at 0, B, C, D violated at
/// their deadlines 70, 80, 90 (all interval 0), E met at 160 (interval 1) → 2/5, not met;
/// intervals 1/4 (missed) and 1/1 (met) → interval attainment 1/2.
///
/// `all-p60` (p60 wait ≤ 90 s): A met at 0 (interval 0); B met at its start 100 = its
/// deadline, C met at 100, D violated at its deadline 120, E met at 160 (interval 1) →
/// 4/5 = 0.8 ≥ 0.6, met; intervals 1/1 and 3/4 = 0.75, both met. Waits sorted
/// 0, 30, 80, 90, 120: nearest rank ⌈0.6 · 5⌉ = 3 → 80 s.
#[test]
fn slo_attainment_exact_cadence() {
    let out = run(&with_policy(""), &[("jobs.csv", JOBS)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(100)));
    assert_eq!(span(&out, "B"), (Some(100), Some(150)));
    assert_eq!(span(&out, "C"), (Some(100), Some(150)));
    assert_eq!(span(&out, "D"), (Some(150), Some(160)));
    assert_eq!(span(&out, "E"), (Some(160), Some(170)));
    let s = slo(&out, "prod-start");
    assert_eq!((s.jobs, s.met_jobs, s.violated_jobs), (3, 1, 2));
    assert_eq!(s.attainment, Some(1.0 / 3.0));
    assert_eq!(s.met, Some(false));
    assert_eq!((s.intervals, s.intervals_met), (2, 1));
    assert_eq!(s.interval_attainment, Some(0.5));
    assert_eq!(s.wait_s_at_quantile, None);
    let per: Vec<(u64, u64)> = s.per_interval.iter().map(|x| (x.met, x.violated)).collect();
    assert_eq!(per, vec![(0, 2), (1, 0)]);
    let s = slo(&out, "batch-tier");
    assert_eq!((s.jobs, s.met_jobs, s.attainment), (5, 2, Some(0.4)));
    assert_eq!((s.intervals, s.intervals_met), (2, 1));
    let per: Vec<(u64, u64)> = s.per_interval.iter().map(|x| (x.met, x.violated)).collect();
    assert_eq!(per, vec![(1, 3), (1, 0)]);
    let s = slo(&out, "all-p60");
    assert_eq!((s.jobs, s.met_jobs, s.violated_jobs), (5, 4, 1));
    assert_eq!(s.attainment, Some(0.8));
    assert_eq!(s.met, Some(true));
    assert_eq!(s.wait_s_at_quantile, Some(80.0));
    assert_eq!((s.intervals, s.intervals_met), (2, 2));
    let per: Vec<(u64, u64)> = s.per_interval.iter().map(|x| (x.met, x.violated)).collect();
    assert_eq!(per, vec![(1, 0), (3, 1)]);
}

/// Rounds of 60 s: passes only at 0, 60, 120, 180, 240.
/// t=0 (a boundary) A starts, 0–100. B, C, D arrive at 10, 20, 30: tried at 60, nothing
/// fits. t=100 A ends: acted on at 120, B and C start 120–170. t=130 E arrives; t=170 B and
/// C end: at 180 D (first in FIFO) starts, 180–190. t=190 D ends: at 240 E starts, 240–250.
/// Waits A 0, B 110, C 100, D 150, E 110.
///
/// `prod-start`: B, C, E all wait more than 60 s → 0/3. `all-p60`: only A within 90 s →
/// 1/5 = 0.2, not met; waits sorted 0, 100, 110, 110, 150 → rank 3 → 110 s.
#[test]
fn rounds_defer_decisions_to_boundaries() {
    let out = run(
        &with_policy("[policy.cycle]\nround_s = 60\n"),
        &[("jobs.csv", JOBS)],
    );
    assert_eq!(span(&out, "A"), (Some(0), Some(100)));
    assert_eq!(span(&out, "B"), (Some(120), Some(170)));
    assert_eq!(span(&out, "C"), (Some(120), Some(170)));
    assert_eq!(span(&out, "D"), (Some(180), Some(190)));
    assert_eq!(span(&out, "E"), (Some(240), Some(250)));
    assert_eq!(out.summary.makespan_s, Some(250.0));
    let w = &out.summary.wait_s;
    assert_eq!((w.mean, w.max), (Some(94.0), Some(150.0)));
    let s = slo(&out, "prod-start");
    assert_eq!((s.jobs, s.met_jobs, s.attainment), (3, 0, Some(0.0)));
    let s = slo(&out, "all-p60");
    assert_eq!((s.jobs, s.met_jobs, s.attainment), (5, 1, Some(0.2)));
    assert_eq!(s.met, Some(false));
    assert_eq!(s.wait_s_at_quantile, Some(110.0));
}

/// Without `[[metrics.slo]]` the summary has no `slo` section.
#[test]
fn no_slo_no_section() {
    let text = SCENARIO.split("[[metrics.slo]]").next().unwrap();
    let out = run(text, &[("jobs.csv", JOBS)]);
    assert!(out.summary.slo.is_none());
    let json = serde_json::to_value(&out.summary).unwrap();
    assert!(json.get("slo").is_none());
}

fn load_err(toml: &str) -> String {
    load_error(toml, &[("jobs.csv", JOBS)])
}

/// Bad input is refused naming the field.
#[test]
fn bad_slo_and_round_input_is_refused() {
    for (bad, field) in [
        ("round_s = 0", "cycle.round_s"),
        ("round_s = -60", "cycle.round_s"),
    ] {
        let e = load_err(&with_policy(&format!("[policy.cycle]\n{bad}\n")));
        assert!(e.contains(field), "{bad}: {e}");
    }
    for (from, to, field) in [
        (
            "quantile = 0.6",
            "quantile = 1.2",
            "metrics.slo[1].quantile",
        ),
        ("target_s = 90", "target_s = -90", "metrics.slo[1].target_s"),
        (
            "queues = [\"prod\"]",
            "queues = [\"nope\"]",
            "metrics.slo[0].queues[0]",
        ),
        (
            "within_s = 60\ntarget_fraction = 0.5\n[[metrics.slo]]\nname = \"all-p60\"",
            "within_s = -1\ntarget_fraction = 0.5\n[[metrics.slo]]\nname = \"all-p60\"",
            "metrics.slo[0].within_s",
        ),
    ] {
        assert!(SCENARIO.contains(from), "{from}");
        let e = load_err(&with_policy("").replacen(from, to, 1));
        assert!(e.contains(field), "{to}: {e}");
    }
    let e = load_err(&with_policy("").replacen("target_s = 90", "target_s = 90\nfoo = 1", 1));
    assert!(e.contains("foo"), "{e}");
}
