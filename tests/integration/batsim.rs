//! Issue 19 item 3: `batsim_jobs.csv`, the jobs table in Batsim's dialect (one row per run,
//! global GPU ids in interval syntax, Batsim's final states).

use fleetsim::run::run_scenario;
use fleetsim::scenario;

use crate::support::one_cell;

/// n1, n2 (8 GPUs each; GPU ids 0-7 and 8-15). J and K (8 GPUs, 1,000 s) start at 0 on n1
/// and n2 (first-fit). n1 fails at 100 s with no grace and is never repaired: J's first run
/// is 0–100 on 0-7 (killed), then it waits for n2 (K's until 1,000) and runs 1,000–2,000 on
/// 8-15 (turnaround 2,000 / execution 1,000 = stretch 2). Rows in the order jobs end: K at
/// 1,000, then both runs of J at 2,000. GPU-time of the rows: 8 × 100 + 8 × 1,000 +
/// 8 × 1,000 = 16,800 GPU-s = the summary's allocated_gpu_s.
#[test]
fn one_row_per_run_with_global_gpu_ids() {
    let (dir, path) = crate::support::write_scenario(
        &format!(
            "name = \"held\"\n{}[policy]\nplacement = \"first-fit\"\n[metrics]\noutputs = [\"csv\", \"batsim\"]\n[[node_events]]\nat_s = 100\nnode = \"n1\"\nkind = \"fail\"\ngrace_s = 0\n[failures]\n",
            one_cell(&["n1", "n2"], "H100", 8)
        ),
        &[("jobs.csv", "id,submit_s,tenant,num_gpu,runtime_s\nJ,0,T,8,1000\nK,0,T,8,1000\n")],
    );
    let loaded = scenario::load(&path).unwrap();
    let out_dir = dir.path().join("out");
    let opts = crate::support::run_options(Some(out_dir.clone()), false);
    let out = run_scenario(&loaded, &opts, &mut |_, _| {}).unwrap();
    assert_eq!(out.summary.allocated_gpu_s, 16_800.0);
    let text = std::fs::read_to_string(out_dir.join("batsim_jobs.csv")).unwrap();
    let want = "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata
1,held,K,0.000,8,-1,1,COMPLETED_SUCCESSFULLY,0.000,1000.000,1000.000,0.000,1000.000,1.000000,8-15,-1,\"{\"\"fleetsim_state\"\":\"\"COMPLETED_SUCCESSFULLY\"\",\"\"run\"\":1,\"\"runs\"\":1}\"
0,held,J,0.000,8,-1,0,COMPLETED_KILLED,0.000,100.000,100.000,0.000,100.000,1.000000,0-7,-1,\"{\"\"fleetsim_state\"\":\"\"STOPPED\"\",\"\"run\"\":1,\"\"runs\"\":2}\"
0#1,held,J,0.000,8,-1,1,COMPLETED_SUCCESSFULLY,1000.000,1000.000,2000.000,1000.000,2000.000,2.000000,8-15,-1,\"{\"\"fleetsim_state\"\":\"\"COMPLETED_SUCCESSFULLY\"\",\"\"run\"\":2,\"\"runs\"\":2}\"
";
    assert_eq!(text, want);
    // jobs.csv is unchanged by the option: still one row per job.
    let jobs = std::fs::read_to_string(out_dir.join("jobs.csv")).unwrap();
    assert_eq!(jobs.lines().count(), 3);
}

/// An unknown output kind is refused when the scenario is read, naming the value.
#[test]
fn unknown_output_kind_is_refused() {
    let err = crate::support::load_error(
        &format!(
            "name = \"x\"\n{}[metrics]\noutputs = [\"batsm\"]\n",
            one_cell(&["n1"], "H100", 8)
        ),
        &[],
    );
    assert!(err.contains("batsm") && err.contains("line 11"), "{err}");
}
