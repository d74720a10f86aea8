//! Agreement with the Tiresias simulator, job for job: its per-job results for `fifo`,
//! `sjf`, `shortest` and `dlas-gpu` on 2,000 Philly jobs on 256 GPUs
//! (`shared/traces/peer-tiresias/job_<S>_count.csv`, semantics in its SOURCE.md) replayed
//! with `scenarios/tiresias-peer.toml`. Every job's first start, end and preemption count
//! must equal the peer's; on failure the message shows the first differing job (by job id)
//! with both sides' rows.
//!
//! The files are read from `FLEETSIM_TRACE_DIR` or `../shared/traces` beside the checkout.
//! Without them the tests say so and return; with `FLEETSIM_TRACE_DIR` set a missing file is
//! a failure, never a silent pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fleetsim::run::RunOutput;

use crate::support::{public_traces, run};

const JOBS: usize = 2_000;
const INPUT: &str = "peer-tiresias/philly_oct2000_job.csv";

fn traces() -> Option<PathBuf> {
    let dir = public_traces();
    if dir.join(INPUT).is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("FLEETSIM_TRACE_DIR").is_none(),
        "FLEETSIM_TRACE_DIR={} has no {INPUT}",
        dir.display()
    );
    eprintln!("skipping: no peer-tiresias files under {}", dir.display());
    None
}

/// The committed scenario with its `[policy]` table replaced by `policy`.
fn scenario(policy: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tiresias-peer.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let head = text.split("[policy]").next().unwrap();
    format!("{head}[policy]\n{policy}\n")
}

/// One peer row: (first start, end, preemptions), seconds.
type Row = (u64, u64, u32);

fn peer(dir: &Path, schedule: &str) -> BTreeMap<u64, (Row, String)> {
    let path = dir.join(format!("peer-tiresias/job_{schedule}_count.csv"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (id, start, end, pre) = (
        col("job_id"),
        col("start_time"),
        col("end_time"),
        col("preempt"),
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            (n(id), ((n(start), n(end), n(pre) as u32), l.to_string()))
        })
        .collect()
}

/// Runs `policy` and compares with the peer's `schedule`; returns the jobs that agree.
fn agreement(dir: &Path, policy: &str, schedule: &str) -> usize {
    let out: RunOutput = run(&scenario(policy), &[]);
    let theirs = peer(dir, schedule);
    assert_eq!(theirs.len(), JOBS);
    let rows = out.jobs.as_ref().unwrap();
    assert_eq!(rows.len(), JOBS);
    let mut ours: BTreeMap<u64, (Row, String)> = BTreeMap::new();
    for r in rows {
        let s = |t: Option<fleetsim_policies::SimTime>| t.expect("every job runs").0 / 1000;
        let row = (s(r.start), s(r.finish), r.preemptions);
        let shown = format!(
            "start {} s, end {} s, last start {:?}, preemptions {}, {} GPUs",
            row.0,
            row.1,
            r.last_start.map(|t| t.0 / 1000),
            row.2,
            r.tasks
        );
        ours.insert(r.name.parse().unwrap(), (row, shown));
    }
    let mut agree = 0;
    let mut first = None;
    for (id, (row, line)) in &theirs {
        let (mine, shown) = &ours[id];
        if mine == row {
            agree += 1;
        } else if first.is_none() {
            first = Some(format!(
                "{schedule}: job {id} differs (first by job id)\n ours: {shown}\n peer: (start, end, preempt) = {row:?}; row {line}"
            ));
        }
    }
    if let Some(msg) = first {
        panic!("{msg}\n{agree} of {JOBS} jobs agree");
    }
    agree
}

/// The peer's `fifo` (strict head-of-line FIFO, no preemption) is fleetsim's own strict FIFO.
#[test]
fn fifo_agrees_with_the_peer_on_every_job() {
    let Some(dir) = traces() else { return };
    let p =
        "queue_order = \"fifo\"\nqueueing_strategy = \"strict-fifo\"\nplacement = \"first-fit\"";
    assert_eq!(agreement(&dir, p, "fifo"), JOBS);
}

/// The peer's `sjf` (fewest GPUs first, re-decided at every event).
#[test]
fn sjf_agrees_with_the_peer_on_every_job() {
    let Some(dir) = traces() else { return };
    let p = "preemption_model = \"tiresias\"\nqueue_order = \"sjf\"\nruntime_estimate = \"oracle\"\nplacement = \"first-fit\"";
    assert_eq!(agreement(&dir, p, "sjf"), JOBS);
}

/// The peer's `shortest`: preemptive shortest remaining time first.
///
/// Fails without the fix (issue #16 item 8: `RedecideOrder::Remaining` ranking running jobs
/// first, i.e. non-preemptive SRTF, `policies/src/scheduler/redecide.rs`): 745 of 2,000 jobs
/// agree; the first differing, job 68, expected (start, end, preemptions) = (10528, 145223,
/// 10) as the peer's, got (10528, 138502, 0) (checked by reverting the fix).
#[test]
fn preemptive_srtf_agrees_with_the_peers_shortest_on_every_job() {
    let Some(dir) = traces() else { return };
    let p = "preemption_model = \"tiresias\"\nqueue_order = \"srtf\"\nruntime_estimate = \"oracle\"\nplacement = \"first-fit\"";
    assert_eq!(agreement(&dir, p, "shortest"), JOBS);
}

/// The peer's `dlas-gpu` (the committed scenario's own policy), with its late demotion
/// wake-up.
#[test]
fn dlas_gpu_agrees_with_the_peer_on_every_job() {
    let Some(dir) = traces() else { return };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tiresias-peer.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let policy = text.split("[policy]\n").nth(1).unwrap();
    assert_eq!(agreement(&dir, policy, "dlas-gpu"), JOBS);
}
