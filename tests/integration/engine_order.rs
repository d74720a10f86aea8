//! The engine's same-instant ordering guarantees.

use crate::support::{run, span};

const FLEET_1_GPU: &str = r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 1
[workload]
trace = { format = "native", path = "jobs.csv" }
queues = "single"
"#;

/// A completion at t frees resources for a job submitted at t: B starts at 100, wait 0.
#[test]
fn completion_before_arrival_at_same_instant() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s
A,0,t,1,100
B,100,t,1,50
";
    let out = run(
        &format!("name = \"o1\"\n{FLEET_1_GPU}"),
        &[("jobs.csv", jobs)],
    );
    assert_eq!(span(&out, "A"), (Some(0), Some(100)));
    assert_eq!(span(&out, "B"), (Some(100), Some(150)));
}

/// Arrivals at one instant are considered in trace order: X (first in the file) gets the GPU.
#[test]
fn arrivals_at_same_instant_in_trace_order() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s
X,5,t,1,10
Y,5,t,1,10
";
    let out = run(
        &format!("name = \"o2\"\n{FLEET_1_GPU}"),
        &[("jobs.csv", jobs)],
    );
    assert_eq!(span(&out, "X"), (Some(5), Some(15)));
    assert_eq!(span(&out, "Y"), (Some(15), Some(25)));
    let swapped = "id,submit_s,tenant,num_gpu,runtime_s
Y,5,t,1,10
X,5,t,1,10
";
    let out = run(
        &format!("name = \"o3\"\n{FLEET_1_GPU}"),
        &[("jobs.csv", swapped)],
    );
    assert_eq!(span(&out, "Y"), (Some(5), Some(15)));
}

/// Zero-length jobs end at the instant they start, and what they free is used at once:
/// Z (0 s) and then W (10 s) both at t=3 on one GPU: Z 3–3, W 3–13.
#[test]
fn zero_length_job_frees_at_the_same_instant() {
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s
Z,3,t,1,0
W,3,t,1,10
";
    let out = run(
        &format!("name = \"o4\"\n{FLEET_1_GPU}"),
        &[("jobs.csv", jobs)],
    );
    assert_eq!(span(&out, "Z"), (Some(3), Some(3)));
    assert_eq!(span(&out, "W"), (Some(3), Some(13)));
}
