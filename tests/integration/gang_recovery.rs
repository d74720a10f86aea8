//! Issue #17 item 9: a gang below its size after a node failure, under both rules of
//! `[policy] gang_recovery` — `restart` (the default: the whole gang is requeued) and
//! `keep_survivors` (Volcano `minAvailable`, Kueue `waitForPodsReady` recovery: survivors stay
//! bound with progress paused, the missing members go ahead of equal-priority jobs).

use crate::support::{job, last_span, run};

/// Three 8-GPU nodes n1–n3, first-fit, best-effort FIFO, `rule` for gangs, no checkpoints,
/// n1 fails at 100 s with a 50 s termination grace and is never repaired.
/// Trace: G (2 tasks × 8 GPUs, 1,000 s, t = 0) on n1 + n2; K (8 GPUs, 500 s, t = 0) on n3;
/// J (8 GPUs, 1,000 s, t = 200, same priority as G).
fn scenario(rule: &str) -> fleetsim::run::RunOutput {
    let toml = format!(
        "name = \"gang\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [\"n1\", \"n2\", \"n3\"]\naccelerator = \"H100\"\ngpus = 8\n[workload]\ntrace = {{ format = \"native\", path = \"jobs.csv\" }}\n[policy]\nplacement = \"first-fit\"\nqueueing_strategy = \"best-effort-fifo\"\ngang_recovery = \"{rule}\"\n[[node_events]]\nat_s = 100\nnode = \"n1\"\nkind = \"fail\"\ngrace_s = 50\n[failures]\n"
    );
    run(
        &toml,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,tasks,runtime_s\nG,0,T,8,2,1000\nK,0,T,8,1,500\nJ,200,T,8,1,1000\n",
        )],
    )
}

/// `restart`: at 100 G stops (no checkpoint: its 100 s are lost) and holds both nodes through
/// the grace until 150, then is requeued. At 200 J arrives: G (2 nodes) does not fit beside
/// K, best-effort lets J take n2 (200–1,200). K ends at 500: one node free, G still waits;
/// J ends at 1,200: G runs on n2 + n3, 1,200–2,200.
/// Account of G: allocated (100 + 50) × 16 = 2,400 + 1,000 × 16 = 16,000 → 18,400 GPU-s =
/// goodput 16,000 + lost 100 × 16 + 50 × 8 (grace on n2) = 2,000 + held on failed nodes
/// 50 × 8 (grace on n1) = 400. Totals: + K 4,000 + J 8,000 → allocated 30,400.
#[test]
fn restart_requeues_the_whole_gang() {
    let out = scenario("restart");
    assert_eq!(last_span(&out, "G"), (Some(1200), Some(2200)));
    assert_eq!(last_span(&out, "J"), (Some(200), Some(1200)));
    let g = job(&out, "G");
    let m = 1_000_000; // GPU-milli·ms per GPU-s
    assert_eq!(g.allocated_gpu_milli_ms, 18_400 * m);
    assert_eq!(g.lost_gpu_milli_ms, 2_000 * m);
    assert_eq!(g.held_on_failed_gpu_milli_ms, 400 * m);
    assert_eq!(g.held_by_incomplete_gang_gpu_milli_ms, 0);
    let r = out.summary.reliability.as_ref().unwrap();
    assert_eq!(r.allocated_gpu_s, 30_400.0);
    assert_eq!(r.goodput_gpu_s, 28_000.0);
    assert_eq!(
        r.held_by_incomplete_gangs_gpu_s, None,
        "absent under restart"
    );
    assert_eq!(r.job_mttr_s, Some(1_100.0)); // failure 100 → restart 1,200
}

/// `keep_survivors`: at 100 G's run stops (its 100 s are lost; no grace: the member on n1
/// is released at once, the survivor on n2 stays bound, paused). At 200 J arrives: n2 is
/// G's, n3 K's — J waits. K ends at 500: before the pass, G (no pending job outranks it)
/// gets its missing member on n3 and resumes 500–1,500 (no checkpoint: the whole 1,000 s);
/// J waits for it and runs 1,500–2,500.
/// Account of G: run 1: 100 × 16 = 1,600 (lost), paused: 400 s × 8 = 3,200 held by
/// incomplete gangs, run 2: 1,000 × 16 = 16,000 (goodput) → allocated 20,800 = 16,000 +
/// 1,600 + 3,200. Totals: + K 4,000 + J 8,000 → allocated 32,800 = goodput 28,000 + lost
/// 1,600 + held by incomplete gangs 3,200.
#[test]
fn keep_survivors_pauses_and_places_the_missing_member_first() {
    let out = scenario("keep_survivors");
    assert_eq!(last_span(&out, "G"), (Some(500), Some(1500)));
    assert_eq!(last_span(&out, "J"), (Some(1500), Some(2500)));
    let g = job(&out, "G");
    let m = 1_000_000;
    assert_eq!(g.allocated_gpu_milli_ms, 20_800 * m);
    assert_eq!(g.lost_gpu_milli_ms, 1_600 * m);
    assert_eq!(g.held_on_failed_gpu_milli_ms, 0);
    assert_eq!(g.held_by_incomplete_gang_gpu_milli_ms, 3_200 * m);
    let r = out.summary.reliability.as_ref().unwrap();
    assert_eq!(r.allocated_gpu_s, 32_800.0);
    assert_eq!(r.goodput_gpu_s, 28_000.0);
    assert_eq!(r.lost_gpu_s, 1_600.0);
    assert_eq!(r.held_by_incomplete_gangs_gpu_s, Some(3_200.0));
    assert_eq!(r.gangs_recovered, Some(1));
    assert_eq!(r.job_mttr_s, Some(400.0)); // failure 100 → whole again 500
}
