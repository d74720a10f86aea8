//! Global dispatch across cells and the flexibility dimensions (`[flexibility]`,
//! `policy.cell_selection`, `policy.dispatch_latency_s`): hand-computed cases.

use crate::support::{job, run, span};

/// Cells `a` (2 × 8 H100) and `b` (1 × 8 H100). J1 (8 GPUs, 100 s) at 0, J2 (a gang of
/// 2 × 8 GPUs, 50 s) at 1.
/// * `first-fit`: J1 goes to `a` (first cell that admits); at 1 `a` has 8 free and `b` 8:
///   no cell holds the gang, J2 waits for J1: 100–150.
/// * `best-fit-gang` (best fit of the whole gang): J1 goes to `b` (8 free, the least that holds it), so at
///   1 `a` holds the gang: J2 runs 1–51.
#[test]
fn best_fit_cell_keeps_the_big_cell_open_for_a_gang() {
    let scenario = |sel: &str| {
        format!(
            r#"
name = "cells"
[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
names = ["a1", "a2"]
accelerator = "H100"
gpus = 8
[[fleet.cells]]
name = "b"
[[fleet.cells.nodes]]
names = ["b1"]
accelerator = "H100"
gpus = 8
[workload]
trace = {{ format = "native", path = "jobs.csv" }}
[policy]
queueing_strategy = "best-effort-fifo"
cell_selection = "{sel}"
"#
        )
    };
    let jobs = "id,submit_s,tenant,num_gpu,tasks,runtime_s\nJ1,0,T,8,1,100\nJ2,1,T,8,2,50\n";
    let ff = run(&scenario("first-fit"), &[("jobs.csv", jobs)]);
    assert_eq!(job(&ff, "J1").cell.as_deref(), Some("a"));
    assert_eq!(span(&ff, "J2"), (Some(100), Some(150)));
    let bf = run(&scenario("best-fit-gang"), &[("jobs.csv", jobs)]);
    assert_eq!(job(&bf, "J1").cell.as_deref(), Some("b"));
    assert_eq!(span(&bf, "J2"), (Some(1), Some(51)));
    assert_eq!(job(&bf, "J2").cell.as_deref(), Some("a"));
}

/// Two cells of two generations, `hopper` (1 × 8 H100) and `ampere` (1 × 8 A100 at speed
/// 0.5); tenants get home cells round-robin in order of first appearance
/// (T0 → hopper first). T0 submits J1 and J2 (8 GPUs, 100 s each) at 0.
/// * no flexibility: J2 waits for its home cell: 100–200;
/// * spatial only: J2 may use `ampere` but not its A100s (platform off: the home cell's
///   models): still 100–200;
/// * spatial + platform: J2 trades speed for an earlier start: `ampere` at 0, 100 / 0.5 =
///   200 s: 0–200, one cross-cell dispatch; wait 0 instead of 100.
///
/// With a 5 s dispatch latency every job joins the queues 5 s after submission.
#[test]
fn spatial_and_platform_flexibility_and_dispatch_latency() {
    let scenario = |flex: &str, latency: f64| {
        format!(
            r#"
name = "flex"
[[fleet.cells]]
name = "hopper"
[[fleet.cells.nodes]]
names = ["h1"]
accelerator = "H100"
gpus = 8
[[fleet.cells]]
name = "ampere"
[[fleet.cells.nodes]]
names = ["x1"]
accelerator = "A100"
gpus = 8
[workload]
trace = {{ format = "native", path = "jobs.csv" }}
[policy]
queueing_strategy = "best-effort-fifo"
dispatch_latency_s = {latency}
[platform]
speed = {{ A100 = 0.5 }}
[flexibility]
{flex}
"#
        )
    };
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s\nJ1,0,T0,8,100\nJ2,0,T0,8,100\n";
    let none = run(&scenario("", 0.0), &[("jobs.csv", jobs)]);
    assert_eq!(span(&none, "J1"), (Some(0), Some(100)));
    assert_eq!(span(&none, "J2"), (Some(100), Some(200)));
    let spatial = run(&scenario("spatial = true", 0.0), &[("jobs.csv", jobs)]);
    assert_eq!(span(&spatial, "J2"), (Some(100), Some(200)));
    let both = run(
        &scenario("spatial = true\nplatform = true", 0.0),
        &[("jobs.csv", jobs)],
    );
    assert_eq!(span(&both, "J2"), (Some(0), Some(200)));
    assert_eq!(job(&both, "J2").cell.as_deref(), Some("ampere"));
    let r = both.summary.reliability.as_ref().unwrap();
    assert_eq!(r.cross_cell_dispatches, 1);
    assert_eq!(r.first_start_wait_s_mean_by_cell["ampere"], Some(0.0));
    let late = run(
        &scenario("spatial = true\nplatform = true", 5.0),
        &[("jobs.csv", jobs)],
    );
    assert_eq!(span(&late, "J1"), (Some(5), Some(105)));
    assert_eq!(span(&late, "J2"), (Some(5), Some(205)));
}

/// Quota flexibility: queues A and B (nominal 8 H100 each) in one cohort on 2 × 8 H100.
/// A submits J1 and J2 (8 GPUs, 100 s) at 0. Quota off (own nominal only): J2 waits for A's
/// quota: 100–200. Quota on: J2 borrows B's idle quota as best-effort: 0–100.
#[test]
fn quota_flexibility_borrows_idle_quota() {
    let scenario = |quota: bool| {
        format!(
            r#"
name = "quota-flex"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1", "n2"]
accelerator = "H100"
gpus = 8
[workload]
trace = {{ format = "native", path = "jobs.csv" }}
[policy]
queueing_strategy = "best-effort-fifo"
[[cohorts]]
name = "all"
[[queues]]
name = "A"
cohort = "all"
flavors = [{{ name = "H100", gpus = {{ nominal = 8 }} }}]
[[queues]]
name = "B"
cohort = "all"
flavors = [{{ name = "H100", gpus = {{ nominal = 8 }} }}]
[flexibility]
quota = {quota}
"#
        )
    };
    let jobs = "id,submit_s,tenant,queue,num_gpu,runtime_s\nJ1,0,A,A,8,100\nJ2,0,A,A,8,100\n";
    let off = run(&scenario(false), &[("jobs.csv", jobs)]);
    assert_eq!(span(&off, "J2"), (Some(100), Some(200)));
    let on = run(&scenario(true), &[("jobs.csv", jobs)]);
    assert_eq!(span(&on, "J2"), (Some(0), Some(100)));
}

/// A job still inside the dispatch latency when the run stops at its horizon was submitted
/// but never reached the queues: it is censored as `dispatching`, not as a replayed job
/// awaiting its recorded start. One 8-GPU node, latency 10 s, horizon 100 s: J1 (submit 0)
/// joins at 10 and runs 10–60; J2 (submit 95) would join at 105 > 100; J3 (submit 52, 8
/// GPUs, joins at 62) runs 62–562; J4 (submit 55) joins at 65 and waits for
/// J3 in the queue: censored with a pending reason.
#[test]
fn job_inside_dispatch_latency_at_horizon_is_censored_as_dispatching() {
    let scenario = r#"
name = "dispatch-horizon"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 8
[workload]
trace = { format = "native", path = "jobs.csv" }
[policy]
dispatch_latency_s = 10
[metrics]
horizon_s = 100
"#;
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s\nJ1,0,T,8,50\nJ3,52,T,8,500\nJ4,55,T,8,10\nJ2,95,T,8,10\n";
    let out = run(scenario, &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "J1"), (Some(10), Some(60)));
    assert_eq!(span(&out, "J3").0, Some(62));
    let j2 = job(&out, "J2");
    assert_eq!(j2.state, fleetsim::engine::FinalState::Censored);
    assert_eq!(j2.reason.as_deref(), Some("dispatching"));
    let j4 = job(&out, "J4");
    assert_eq!(j4.state, fleetsim::engine::FinalState::Censored);
    assert_ne!(j4.reason.as_deref(), Some("dispatching"));
    let c = &out.summary.jobs;
    assert_eq!(c.censored, 2);
    assert_eq!(c.censored_by_reason.get("dispatching"), Some(&1));
    assert_eq!(
        c.censored_by_reason.get("recorded_start_after_horizon"),
        None
    );
}

/// `cell_selection = "quota-aware"`: cells where the job stays within its queue's nominal
/// quota first, then the least loaded (allocated / available GPUs), ties to the lower id.
///
/// Replay mode, where the cell order alone decides (jobs start at their recorded times
/// through `place_now`; the flavor charged follows the cell the job lands in, so no flavor
/// assignment narrows the choice first). Cells `a` (2 × 8 H100) and `b` (2 × 8 A100); one
/// queue `q` with flavors `fh` (H100, nominal 8) and `fa` (A100, nominal 16). Three
/// 8-GPU jobs start at 0, 10 and 20 and run to 1,000.
///
/// quota-aware (class 0 = within nominal after admission, 1 = over):
/// * J1 at 0: `a` fh 0 + 8 ≤ 8 → class 0, load 0; `b` fa 0 + 8 ≤ 16 → class 0, load 0.
///   Tie → `a`; fh usage 8.
/// * J2 at 10: `a` fh 8 + 8 = 16 > 8 → class 1; `b` fa 0 + 8 ≤ 16 → class 0 → `b`; fa 8.
/// * J3 at 20: `a` class 1 (fh 16 > 8), load 8/16 = 50 %; `b` fa 8 + 8 = 16 ≤ 16 → class 0,
///   load 50 % → `b`; fa 16.
///
/// least-loaded (same loads, no classes): J1 → `a` (tie), J2 → `b` (0 % < 50 %), J3 → `a`
/// (50 % = 50 %, tie to the lower id). Only J3 tells them apart.
#[test]
fn quota_aware_cell_selection_prefers_cells_within_nominal_quota() {
    let scenario = |sel: &str| {
        format!(
            r#"
name = "quota-aware"
mode = "replay"
[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
names = ["a1", "a2"]
accelerator = "H100"
gpus = 8
[[fleet.cells]]
name = "b"
[[fleet.cells.nodes]]
names = ["b1", "b2"]
accelerator = "A100"
gpus = 8
[workload]
trace = {{ format = "native", path = "jobs.csv" }}
[[flavors]]
name = "fh"
models = ["H100"]
[[flavors]]
name = "fa"
models = ["A100"]
[[queues]]
name = "q"
flavors = [{{ name = "fh", gpus = {{ nominal = 8 }} }}, {{ name = "fa", gpus = {{ nominal = 16 }} }}]
[policy]
placement = "first-fit"
cell_selection = "{sel}"
"#
        )
    };
    let jobs = "id,tenant,queue,submit_s,start_s,end_s,num_gpu\nJ1,t,q,0,0,1000,8\nJ2,t,q,10,10,1000,8\nJ3,t,q,20,20,1000,8\n";
    let cells = |sel: &str| {
        let out = run(&scenario(sel), &[("jobs.csv", jobs)]);
        for (j, start) in [("J1", 0), ("J2", 10), ("J3", 20)] {
            assert_eq!(span(&out, j), (Some(start), Some(1000)), "{sel} {j}");
        }
        ["J1", "J2", "J3"].map(|j| {
            let r = job(&out, j);
            (r.cell.clone().unwrap(), r.nodes.join("+"))
        })
    };
    let c = |cell: &str, node: &str| (cell.to_string(), node.to_string());
    assert_eq!(
        cells("quota-aware"),
        [c("a", "a1"), c("b", "b1"), c("b", "b2")]
    );
    assert_eq!(
        cells("least-loaded"),
        [c("a", "a1"), c("b", "b1"), c("a", "a2")]
    );
}
