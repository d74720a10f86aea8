//! `fleetsim kueue simulate` end to end: the Kueue project's own examples (setups and the
//! workloads that go with them, `tests/fixtures/kueue-upstream`, see its SOURCE.md) run
//! through it, and a hand-computed account of a preemption in Kueue's terms.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn upstream(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kueue-upstream/v1beta2")
        .join(name)
}

/// Runs `fleetsim kueue simulate … --json` and returns the account.
fn simulate(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["kueue", "simulate", "--json"])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?}: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn workload<'a>(a: &'a Value, id: &str) -> &'a Value {
    a["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["workload"] == id)
        .unwrap_or_else(|| panic!("no workload {id}: {a}"))
}

/// Each upstream setup with the example workloads written for it, on the fleet derived from
/// its quota, with a run time of 60 s for every workload (none carries one): each is
/// admitted at once in the setup's flavor and finishes at 60 s. The TAS example's JobSet
/// names `user-queue`, which the TAS setup does not declare (it has `tas-user-queue`): it
/// is rejected as Kueue would leave it, for an unknown LocalQueue.
#[test]
fn upstream_examples_run_through_kueue_simulate() {
    let w = |n: &str| upstream(&format!("workloads/{n}")).display().to_string();
    let m = |n: &str| upstream(n).display().to_string();
    /// (setup, its workloads, the workloads admitted with their flavor).
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case; 6] = [
        (
            "getting-started_quick-start-setup.yaml",
            &["getting-started_quick-start-job.yaml"],
            &[("Job default/sample-job", "default-flavor")],
        ),
        (
            "admin_single-clusterqueue-setup.yaml",
            &[
                "jobs_sample-job.yaml",
                "jobs_sample-jobset.yaml",
                "jobs_ray-job-sample.yaml",
            ],
            &[
                ("Job default/sample-job-1", "default-flavor"),
                ("JobSet default/sleep-job-1", "default-flavor"),
                ("RayJob default/rayjob-sample", "default-flavor"),
            ],
        ),
        (
            "admission-fs_admission-fair-sharing-setup.yaml",
            &[
                "admission-fs_lq-a-simple-job.yaml",
                "admission-fs_lq-b-simple-job.yaml",
            ],
            &[
                ("Job default/sample-job-1", "default-flavor"),
                ("Job default/sample-job-2", "default-flavor"),
            ],
        ),
        (
            "admin_shared-quota-setup.yaml",
            &["admin_shared-quota-sample-job.yaml"],
            &[("Job default/sample-job-1", "on-demand")],
        ),
        (
            "provisioning_provisioning-setup.yaml",
            &["provisioning_sample-job.yaml"],
            &[("Job default/sample-job-1", "default-flavor")],
        ),
        (
            "tas_sample-queues.yaml",
            &["jobs_sample-jobset-tas-required.yaml"],
            &[],
        ),
    ];
    for (manifests, workloads, admitted) in cases {
        let mut args = vec![
            "--default-runtime".to_string(),
            "60s".into(),
            "--manifests".into(),
            m(manifests),
            "--workload".into(),
        ];
        args.extend(workloads.iter().map(|x| w(x)));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let a = simulate(&refs);
        for (id, flavor) in admitted {
            let x = workload(&a, id);
            assert_eq!(x["admitted_s"], 0.0, "{manifests}: {id}: {x}");
            assert_eq!(x["flavor"], *flavor, "{manifests}: {id}: {x}");
            assert_eq!(x["finished_s"], 60.0, "{manifests}: {id}: {x}");
        }
        if admitted.is_empty() {
            let x = workload(&a, "JobSet default/jobset-tas-required");
            assert_eq!(
                (x["state"].as_str(), x["state_reason"].as_str()),
                (Some("REJECTED"), Some("unknown_queue"))
            );
            assert_eq!(
                x["rejected_because"],
                "LocalQueue default/user-queue does not exist: Kueue keeps the workload pending, inadmissible"
            );
        }
    }
}

const MANIFESTS: &str = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: h100
spec:
  nodeLabels:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: research
spec:
  preemption:
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: [\"nvidia.com/gpu\"]
    flavors:
    - name: h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: ml
  name: training
spec:
  clusterQueue: research
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: urgent
value: 1000
";

fn job(name: &str, submit: &str, runtime: &str, pods: u32, gpus: u32, class: &str) -> String {
    format!(
        "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: ml\n  labels:\n    kueue.x-k8s.io/queue-name: training\n{class}  annotations:\n    fleetsim.dev/submit: {submit}\n    fleetsim.dev/runtime: {runtime}\nspec:\n  parallelism: {pods}\n  template:\n    spec:\n      containers:\n      - name: c\n        resources:\n          limits:\n            nvidia.com/gpu: {gpus}\n"
    )
}

/// One ClusterQueue of 8 H100 GPUs (`withinClusterQueue: LowerPriority`), the fleet derived
/// from it: one HGX H100 node. `sweep` (2 pods × 4 GPUs, 1,000 s) starts at 0 s; `fix`
/// (priority 1,000 from the WorkloadPriorityClass `urgent`, 1 pod × 8 GPUs, 100 s) arrives
/// at 10 s and preempts it (`InClusterQueue`); it runs 10 → 110. `sweep` waits from 10 s
/// for the quota `fix` holds, then is readmitted at 110 s and runs from scratch to 1,110 s.
#[test]
fn a_preemption_in_kueues_terms() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("k.yaml");
    std::fs::write(&m, MANIFESTS).unwrap();
    let w = dir.path().join("jobs.yaml");
    std::fs::write(
        &w,
        job("sweep", "0s", "1000s", 2, 4, "")
            + &job(
                "fix",
                "10s",
                "100s",
                1,
                8,
                "    kueue.x-k8s.io/priority-class: urgent\n",
            ),
    )
    .unwrap();
    let a = simulate(&[
        "--manifests",
        m.to_str().unwrap(),
        "--workload",
        w.to_str().unwrap(),
    ]);
    assert!(
        a["fleet"]
            .as_str()
            .unwrap()
            .contains("1 × hgx-h100 node(s) of 8 H100 for flavor h100"),
        "{}",
        a["fleet"]
    );
    let sweep = workload(&a, "Job ml/sweep");
    assert_eq!(
        (sweep["admitted_s"].as_f64(), sweep["flavor"].as_str()),
        (Some(0.0), Some("h100"))
    );
    assert_eq!(sweep["local_queue"], "ml/training");
    assert_eq!(sweep["cluster_queue"], "research");
    assert_eq!(sweep["preempted_by"][0]["workload"], "Job ml/fix");
    assert_eq!(sweep["preempted_by"][0]["at_s"], 10.0);
    assert_eq!(sweep["preempted_by"][0]["reason"], "InClusterQueue");
    assert_eq!(sweep["readmitted"][0][0], 110.0);
    assert_eq!(sweep["finished_s"], 1110.0);
    let pending = &sweep["pending"][0];
    assert_eq!(
        (pending["from_s"].as_f64(), pending["to_s"].as_f64()),
        (Some(10.0), Some(110.0))
    );
    assert_eq!(
        pending["reason"],
        "couldn't assign flavors: insufficient unused quota in ClusterQueue research (flavors h100); no cohort to borrow from"
    );
    let fix = workload(&a, "Job ml/fix");
    assert_eq!(
        (fix["admitted_s"].as_f64(), fix["finished_s"].as_f64()),
        (Some(10.0), Some(110.0))
    );
    assert_eq!(fix["preempted"][0]["workload"], "Job ml/sweep");
    let cq = &a["cluster_queues"][0];
    assert_eq!(
        (
            cq["name"].as_str(),
            cq["workloads"].as_u64(),
            cq["preemptions_caused"].as_u64(),
            cq["preemptions_suffered"].as_u64()
        ),
        (Some("research"), Some(2), Some(1), Some(1))
    );
    // The text account says the same.
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args([
            "kueue",
            "simulate",
            "--manifests",
            m.to_str().unwrap(),
            "--workload",
            w.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "Job ml/sweep  [ml/training → ClusterQueue research]",
        "  preempted by Job ml/fix at 10 s (InClusterQueue)",
        "  readmitted 110 s in flavor h100",
        "  pending 10 s–110 s: couldn't assign flavors: insufficient unused quota in ClusterQueue research",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
}

/// A ProvisioningRequest admission check of class `best-effort-atomic-scale-up` on flavor
/// `h100`: its node (8 GPUs) is an autoscaled group of one node, none up at the start,
/// brought in 300 s (`--provisioning-delay 5m`). `sweep` (2 × 4 GPUs, 1,000 s) submitted at
/// 0 s is admitted when the node joins: 300 s, finishing at 1,300 s. With class
/// `check-capacity.autoscaling.x-k8s.io` the node is there from the start (the check only
/// waits for room): admitted at 0 s. Without a delay the run is refused, naming the check.
#[test]
fn provisioning_request_checks_provision_nodes_after_the_delay() {
    let dir = tempfile::tempdir().unwrap();
    let with_class = |class: &str| {
        MANIFESTS.replace(
            "  preemption:\n    withinClusterQueue: LowerPriority\n",
            "  admissionChecksStrategy:\n    admissionChecks:\n    - name: prov\n      onFlavors: [h100]\n",
        ) + &format!(
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata:\n  name: prov\nspec:\n  controllerName: kueue.x-k8s.io/provisioning-request\n  parameters:\n    apiGroup: kueue.x-k8s.io\n    kind: ProvisioningRequestConfig\n    name: prov-config\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ProvisioningRequestConfig\nmetadata:\n  name: prov-config\nspec:\n  provisioningClassName: {class}\n"
        )
    };
    let w = dir.path().join("jobs.yaml");
    std::fs::write(&w, job("sweep", "0s", "1000s", 2, 4, "")).unwrap();
    let m = dir.path().join("k.yaml");
    std::fs::write(
        &m,
        with_class("best-effort-atomic-scale-up.autoscaling.x-k8s.io"),
    )
    .unwrap();
    let (m, w) = (m.to_str().unwrap(), w.to_str().unwrap());
    let a = simulate(&[
        "--manifests",
        m,
        "--workload",
        w,
        "--provisioning-delay",
        "5m",
    ]);
    let sweep = workload(&a, "Job ml/sweep");
    assert_eq!(
        (sweep["admitted_s"].as_f64(), sweep["finished_s"].as_f64()),
        (Some(300.0), Some(1300.0))
    );
    assert!(
        a["fleet"]
            .as_str()
            .unwrap()
            .contains("provisioned on demand for AdmissionCheck `prov` after 300 s"),
        "{}",
        a["fleet"]
    );
    assert!(
        a["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("is simulated by the autoscaled node group(s) kueue/h100")),
        "{}",
        a["notes"]
    );
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["kueue", "simulate", "--manifests", m, "--workload", w])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("AdmissionCheck `prov`")
            && err.contains("--provisioning-delay"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("k.yaml"),
        with_class("check-capacity.autoscaling.x-k8s.io"),
    )
    .unwrap();
    let a = simulate(&["--manifests", m, "--workload", w]);
    assert_eq!(workload(&a, "Job ml/sweep")["admitted_s"], 0.0);
}

const TAS_MANIFESTS: &str = "apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata:
  name: racks
spec:
  levels:
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: h100
spec:
  nodeLabels:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
  topologyName: racks
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: research
spec:
  resourceGroups:
  - coveredResources: [\"nvidia.com/gpu\"]
    flavors:
    - name: h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 32
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: ml
  name: training
spec:
  clusterQueue: research
";

/// Four HGX H100 nodes: `rack-a-` is one rack (domain) of two nodes, the two `solo-` nodes
/// are a rack each.
const TAS_FLEET: &str = "[[fleet.cells]]
name = \"dc\"
[[fleet.cells.nodes]]
preset = \"hgx-h100\"
count = 2
nodes_per_domain = 2
name_prefix = \"rack-a-\"
[[fleet.cells.nodes]]
preset = \"hgx-h100\"
count = 2
name_prefix = \"solo-\"
";

/// A JobSet of 2 pods × 8 GPUs running 100 s, its pod template annotated with `annotation`.
fn jobset(name: &str, submit: &str, annotation: &str) -> String {
    let ann = if annotation.is_empty() {
        String::new()
    } else {
        format!("          metadata:\n            annotations:\n              {annotation}\n")
    };
    format!(
        "---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: {name}\n  namespace: ml\n  labels:\n    kueue.x-k8s.io/queue-name: training\n  annotations:\n    fleetsim.dev/submit: {submit}\n    fleetsim.dev/runtime: 100s\nspec:\n  replicatedJobs:\n  - name: workers\n    replicas: 1\n    template:\n      spec:\n        parallelism: 2\n        template:\n{ann}          spec:\n            containers:\n            - name: c\n              resources:\n                limits:\n                  nvidia.com/gpu: 8\n"
    )
}

/// Topology-Aware Scheduling: the Topology `racks` (example.com/rack over the hostname)
/// maps the rack to fleetsim's domain. `a` and `b` (2 pods × 8 GPUs each, 100 s) require
/// one rack (`podset-required-topology: example.com/rack`); `c` asks for nothing. Only
/// `rack-a` holds two nodes: `a` (0 s) takes it; `b` (1 s) fits the quota (16 of 32 GPUs
/// free) and the solo nodes' 16 free GPUs, but no rack, so it waits for `a` to finish and
/// runs 100 → 200 s; `c` (2 s) takes the two solo nodes at once. Without the annotations
/// `b` is admitted on the solo nodes at 1 s and `c` waits for `a`: 100 s.
#[test]
fn a_required_topology_waits_for_a_whole_rack() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("k.yaml");
    std::fs::write(&m, TAS_MANIFESTS).unwrap();
    let f = dir.path().join("fleet.toml");
    std::fs::write(&f, TAS_FLEET).unwrap();
    let rack = "kueue.x-k8s.io/podset-required-topology: example.com/rack";
    for (tas, b_at, c_at) in [(true, 100.0, 2.0), (false, 1.0, 100.0)] {
        let ann = if tas { rack } else { "" };
        let w = dir.path().join("jobs.yaml");
        std::fs::write(
            &w,
            jobset("a", "0s", ann) + &jobset("b", "1s", ann) + &jobset("c", "2s", ""),
        )
        .unwrap();
        let a = simulate(&[
            "--manifests",
            m.to_str().unwrap(),
            "--workload",
            w.to_str().unwrap(),
            "--fleet",
            f.to_str().unwrap(),
        ]);
        let at = |n: &str| workload(&a, &format!("JobSet ml/{n}"))["admitted_s"].as_f64();
        assert_eq!(
            (at("a"), at("b"), at("c")),
            (Some(0.0), Some(b_at), Some(c_at)),
            "tas {tas}"
        );
        if tas {
            assert_eq!(
                workload(&a, "JobSet ml/b")["pending"][0]["reason"],
                "quota fits; Topology-Aware Scheduling: no free room for all its pods in one example.com/rack (the pods fit elsewhere)"
            );
            assert!(
                a["notes"].as_array().unwrap().iter().any(|n| n
                    .as_str()
                    .unwrap()
                    .contains("example.com/rack = domain, kubernetes.io/hostname = node")),
                "{}",
                a["notes"]
            );
        }
    }
    // A level the flavor's Topology does not have: Kueue never admits it; refused, naming it.
    let w = dir.path().join("bad.yaml");
    std::fs::write(
        &w,
        jobset(
            "a",
            "0s",
            "kueue.x-k8s.io/podset-required-topology: example.com/zone",
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["kueue", "simulate", "--manifests", m.to_str().unwrap()])
        .args([
            "--workload",
            w.to_str().unwrap(),
            "--fleet",
            f.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("example.com/zone")
            && err.contains("no such level (example.com/rack, kubernetes.io/hostname)"),
        "{err}"
    );
}
