//! LAS (Tiresias 2D-LAS) in fleetsim's own preemption model, by hand: demotion as an event of
//! its own, the LAS victim order (newest entrant of the lowest queue, not the most recently
//! started job, not steered by priority), a demoted job yielding to the jobs waiting in its
//! new queue, and a preempted job taking its former preemptor's place once that one is
//! demoted below it. Preemption is free here (checkpoints every second, integer times).

use crate::support::{job, run, span};

fn scenario(gpus: u32, thresholds: &str) -> String {
    format!(
        r#"name = "las"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = {gpus}
[workload]
trace = {{ format = "native", path = "jobs.csv" }}
queues = "single"
[policy]
queue_order = "las"
queueing_strategy = "best-effort-fifo"
[policy.las]
thresholds_gpu_s = [{thresholds}]
[policy.preemption]
las = true
checkpoint_interval_s = 1
"#
    )
}

fn last_start(out: &fleetsim::run::RunOutput, name: &str) -> u64 {
    job(out, name).last_start.unwrap().0 / 1000
}

/// One GPU, threshold 100 GPU-s, no retry interval. A (300 s) runs from 0; B (50 s) arrives
/// at 10 in the same queue (A has 10 GPU-s) and waits. A reaches 100 GPU-s at t = 100: that
/// crossing is an event, A drops to the second queue and B preempts it: B runs 100–150, A
/// resumes at 150 with 200 s left and ends at 350. (Before: nothing happened at 100; B
/// waited until A ended at 300.)
///
/// Fails without the fix (issue #16 item 7, third bullet: `Scheduler::next_wake` returning
/// no LAS crossing, `policies/src/scheduler/mod.rs`): B's span expected (100, 150), got
/// (300, 350) (checked by reverting the fix).
#[test]
fn a_threshold_crossing_is_an_event() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s\nA,0,t,1,300\nB,10,t,1,50\n";
    let out = run(&scenario(1, "100"), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "B"), (Some(100), Some(150)));
    assert_eq!(span(&out, "A"), (Some(0), Some(350)));
    assert_eq!(last_start(&out, "A"), 150);
    assert_eq!(job(&out, "A").preemptions, 1);
}

/// Three GPUs, threshold 100 GPU-s. X (1 GPU) starts at 0 and reaches 100 GPU-s at t = 100;
/// Y (2 GPUs) starts at 10 and reaches them at 10 + 100/2 = 60. At 120, Z (1 GPU, 30 s,
/// first queue) finds no GPU free; both X and Y are in the second queue. Tiresias takes the
/// newest entrant of the lowest queue: X (entered at 100, after Y's 60), which frees the one
/// GPU Z needs, though Y started later (10 > 0). Z runs 120–150, X resumes at 150 with
/// 1000 − 120 = 880 s left: ends 1030; Y is never preempted and ends at 1010. (Before: the
/// most recently started, Y, was evicted, leaving one of its two GPUs idle.)
///
/// Fails without the fix (issue #16 item 7, first bullet: the LAS victim key
/// `las_victim_key` not applied in `candidates`, `policies/src/scheduler/preempt.rs`): Y's
/// preemptions expected 0, got 1 (checked by reverting the fix).
#[test]
fn las_victims_are_the_newest_entrants_of_the_lowest_queue() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s\nX,0,t,1,1000\nY,10,t,2,1000\nZ,120,t,1,30\n";
    let out = run(&scenario(3, "100"), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "Z"), (Some(120), Some(150)));
    assert_eq!(job(&out, "Y").preemptions, 0);
    assert_eq!(span(&out, "Y"), (Some(10), Some(1010)));
    assert_eq!(job(&out, "X").preemptions, 1);
    assert_eq!(last_start(&out, "X"), 150);
    assert_eq!(span(&out, "X"), (Some(0), Some(1030)));
}

/// As above with priorities that would pick Y (priority 0) before X (priority 5) if the
/// `priority` column steered LAS victims: LAS ignores priority, X is still the victim.
///
/// Fails without the fix (issue #16 item 7, fifth bullet: `las_victim_key` keeping the job's
/// priority instead of −queue, `policies/src/scheduler/las.rs`): Y's preemptions expected 0,
/// got 1 (checked by reverting the fix).
#[test]
fn priority_does_not_steer_las_victims() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s,priority\nX,0,t,1,1000,5\nY,10,t,2,1000,0\nZ,120,t,1,30,0\n";
    let out = run(&scenario(3, "100"), &[("jobs.csv", jobs)]);
    assert_eq!(job(&out, "Y").preemptions, 0);
    assert_eq!(job(&out, "X").preemptions, 1);
    assert_eq!(span(&out, "Z"), (Some(120), Some(150)));
}

/// One GPU, thresholds 100 and 1,000 GPU-s. A (400 s) runs from 0; B (400 s) arrives at 1.
/// At 100 A enters the second queue and B preempts it (A waits there since 100). B reaches
/// 100 GPU-s at 200 and enters the second queue behind A, which has waited there since 100:
/// A takes the GPU back at 200 (A preempted B before: rule P2 yields, B is now behind it).
/// A runs 200–500 (300 s left), B resumes at 500 with 300 s left: ends 800. (Before: B kept
/// the GPU until it ended at 500; A ran 500–800.)
///
/// Fails without the fix (issue #16 item 7, second bullet: `las_outranks` without its
/// same-queue clause, `policies/src/scheduler/las.rs`): A's span expected (0, 500), got
/// (0, 800) (checked by reverting the fix).
#[test]
fn a_demoted_job_yields_to_the_jobs_waiting_in_its_new_queue() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s\nA,0,t,1,400\nB,1,t,1,400\n";
    let out = run(&scenario(1, "100, 1000"), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(500)));
    assert_eq!(last_start(&out, "A"), 200);
    assert_eq!(span(&out, "B"), (Some(100), Some(800)));
    assert_eq!(last_start(&out, "B"), 500);
    assert_eq!(
        (job(&out, "A").preemptions, job(&out, "B").preemptions),
        (1, 1)
    );
}

/// Time slicing (Tiresias): one GPU, thresholds 100 and 200 GPU-s, A and B of 500 s at 0
/// and 50. 100: A → queue 2, B preempts A. 200: B → queue 2 behind A: A preempts B.
/// 300: A (200 GPU-s) → queue 3, below B: B preempts its former preemptor A. 400: B → queue
/// 3 behind A: A preempts B. A ends at 400 + 300 = 700, B at 700 + 300 = 1000; two
/// preemptions each (the peer's dlas-gpu does exactly this). (Before: A and B could never
/// preempt each other back; A ran 0–100, B 100–600, A 600–1000.)
///
/// Fails without the fix (issue #16 item 7, fourth bullet: rule P2 skipping the job's
/// preemptors even when `las_ahead`, `candidates` in `policies/src/scheduler/preempt.rs`):
/// A's span expected (0, 700), got (0, 1000) (checked by reverting the fix).
#[test]
fn a_preempted_job_preempts_its_preemptor_once_that_one_is_demoted_below_it() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s\nA,0,t,1,500\nB,50,t,1,500\n";
    let out = run(&scenario(1, "100, 200"), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "A"), (Some(0), Some(700)));
    assert_eq!(last_start(&out, "A"), 400);
    assert_eq!(span(&out, "B"), (Some(100), Some(1000)));
    assert_eq!(last_start(&out, "B"), 700);
    assert_eq!(
        (job(&out, "A").preemptions, job(&out, "B").preemptions),
        (2, 2)
    );
}
