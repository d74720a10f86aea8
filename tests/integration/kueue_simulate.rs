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
/// for the quota `fix` holds, then is readmitted at 110 s and runs from scratch to 1,110 s:
/// its first-start wait is 0 s, its wait (every pending second) 110 − 10 = 100 s. The
/// ClusterQueue's mean wait is (100 + 0) / 2 = 50 s, its mean first-start wait 0 s.
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
    assert_eq!(
        (
            sweep["first_start_wait_s"].as_f64(),
            sweep["wait_s"].as_f64()
        ),
        (Some(0.0), Some(100.0))
    );
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
    assert_eq!(
        (
            cq["mean_wait_s"].as_f64(),
            cq["max_wait_s"].as_f64(),
            cq["mean_first_start_wait_s"].as_f64(),
            cq["max_first_start_wait_s"].as_f64()
        ),
        (Some(50.0), Some(100.0), Some(0.0), Some(0.0))
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
        "  submitted 0 s, admitted 0 s (waited 0 s to first admission, 100 s pending in all) in flavor h100, finished 1110 s",
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

/// A Kueue Configuration with `waitForPodsReady` (timeout 5 min, backoff 60 s,
/// `backoffLimitCount` set per run) over one ClusterQueue of 16 H100 GPUs.
fn pods_ready_manifests(backoff_limit_count: u32) -> String {
    format!(
        "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
waitForPodsReady:
  timeout: 5m
  requeuingStrategy:
    backoffBaseSeconds: 60
    backoffLimitCount: {backoff_limit_count}
---
"
    ) + &MANIFESTS
        .replace("nominalQuota: 8", "nominalQuota: 16")
        .replace("  preemption:\n    withinClusterQueue: LowerPriority\n", "")
}

/// B52's fleet: a static node `n1` of 4 H100 GPUs and a cluster-autoscaler group `burst` of
/// up to 2 × 4-GPU nodes, none at the start, each scale-up taking 400 s, idle nodes
/// removed after 100 s.
const BURST_FLEET: &str = "[[fleet.cells]]
name = \"c\"
[[fleet.cells.nodes]]
names = [\"n1\"]
accelerator = \"H100\"
gpus = 4
[[fleet.cells.autoscaling]]
name = \"burst\"
min_nodes = 0
max_nodes = 2
node = { accelerator = \"H100\", gpus = 4 }
provisioning_delay = { distribution = \"fixed\", s = 400 }
scale_down_idle_s = 100
";

/// `waitForPodsReady` in `kueue simulate` (field case B52 from Kueue manifests): `hold`
/// (1 pod × 4 GPUs, 5,000 s) fills `n1` at 0 s; `gang` (2 pods × 4 GPUs, 100 s) arrives at
/// 10 s, fits the quota (4 + 8 ≤ 16) but no node: the autoscaler asks for burst-0/1 (joining
/// at 10 + 400 = 410 s) and Kueue reserves its quota at 10 s, its pods waiting.
/// - `backoffLimitCount: 1`: at 10 + 300 = 310 s its pods are not ready: evicted
///   (`PodsReadyTimeout`, `requeueState.count` 1, `requeueAt` 310 + 60 × 2⁰ = 370 s);
///   requeued at 370 s (`BackoffFinished`), its quota reserved again (deadline 670 s) on the
///   nodes on their way; they join at 410 s: it runs 410 → 510 s. Wait 400 s = its
///   first-start wait (it never ran before); pending spans [10, 310) and [370, 410).
///   ClusterQueue: mean wait (0 + 400) / 2 = 200 s, max 400 s; 1 eviction.
/// - `backoffLimitCount: 0`: the eviction at 310 s is one more than 0 allows: deactivated
///   at 310 s (`DeactivatedDueToRequeuingLimitExceeded`, `spec.active: false`), never run;
///   its pending span ends there (no "Kueue would admit it" to the end). ClusterQueue:
///   admitted 1 (`hold`, wait 0 s), deactivated 1, never admitted 0.
#[test]
fn wait_for_pods_ready_evicts_requeues_and_deactivates_in_kueues_words() {
    let dir = tempfile::tempdir().unwrap();
    let (m, w, f) = (
        dir.path().join("k.yaml"),
        dir.path().join("jobs.yaml"),
        dir.path().join("fleet.toml"),
    );
    std::fs::write(&f, BURST_FLEET).unwrap();
    std::fs::write(
        &w,
        job("hold", "0s", "5000s", 1, 4, "") + &job("gang", "10s", "100s", 2, 4, ""),
    )
    .unwrap();
    let args = [
        "--manifests",
        m.to_str().unwrap(),
        "--workload",
        w.to_str().unwrap(),
        "--fleet",
        f.to_str().unwrap(),
    ];

    std::fs::write(&m, pods_ready_manifests(1)).unwrap();
    let a = simulate(&args);
    let g = workload(&a, "Job ml/gang");
    assert_eq!(
        (
            g["admitted_s"].as_f64(),
            g["finished_s"].as_f64(),
            g["first_start_wait_s"].as_f64(),
            g["wait_s"].as_f64(),
            g["pods_ready_evictions"].as_u64(),
            g["deactivated_s"].as_f64(),
        ),
        (
            Some(410.0),
            Some(510.0),
            Some(400.0),
            Some(400.0),
            Some(1),
            None
        )
    );
    let steps: Vec<(f64, &str, Option<&str>)> = g["pods_ready"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["at_s"].as_f64().unwrap(),
                e["event"].as_str().unwrap(),
                e["reason"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (10.0, "QuotaReserved", None),
            (310.0, "Evicted", Some("PodsReadyTimeout")),
            (370.0, "Requeued", Some("BackoffFinished")),
            (370.0, "QuotaReserved", None),
        ]
    );
    let ev = &g["pods_ready"][1];
    assert_eq!(
        (ev["count"].as_u64(), ev["requeue_at_s"].as_f64()),
        (Some(1), Some(370.0))
    );
    assert_eq!(g["pods_ready"][3]["deadline_s"], 670.0);
    let spans: Vec<(f64, f64)> = g["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["from_s"].as_f64().unwrap(), p["to_s"].as_f64().unwrap()))
        .collect();
    assert_eq!(spans, [(10.0, 310.0), (370.0, 410.0)]);
    let cq = &a["cluster_queues"][0];
    assert_eq!(
        (
            cq["admitted"].as_u64(),
            cq["mean_wait_s"].as_f64(),
            cq["max_wait_s"].as_f64(),
            cq["mean_first_start_wait_s"].as_f64(),
            cq["pods_ready_evictions"].as_u64(),
            cq["deactivated"].as_u64(),
            cq["never_admitted"].as_u64(),
        ),
        (
            Some(2),
            Some(200.0),
            Some(400.0),
            Some(200.0),
            Some(1),
            Some(0),
            Some(0)
        )
    );

    std::fs::write(&m, pods_ready_manifests(0)).unwrap();
    let a = simulate(&args);
    let g = workload(&a, "Job ml/gang");
    assert_eq!(
        (
            g["admitted_s"].as_f64(),
            g["state"].as_str(),
            g["state_reason"].as_str(),
            g["deactivated_s"].as_f64(),
            g["pods_ready_evictions"].as_u64(),
            g["wait_s"].as_f64(),
        ),
        (
            None,
            Some("CANCELLED"),
            Some("requeuing_limit_exceeded"),
            Some(310.0),
            Some(1),
            Some(300.0)
        )
    );
    let last = g["pods_ready"].as_array().unwrap().last().unwrap();
    assert_eq!(
        (
            last["event"].as_str(),
            last["reason"].as_str(),
            last["count"].as_u64()
        ),
        (
            Some("Deactivated"),
            Some("DeactivatedDueToRequeuingLimitExceeded"),
            Some(1)
        )
    );
    assert_eq!(g["pending"].as_array().unwrap().len(), 1);
    assert_eq!(g["pending"][0]["to_s"], 310.0);
    let cq = &a["cluster_queues"][0];
    assert_eq!(
        (
            cq["admitted"].as_u64(),
            cq["mean_wait_s"].as_f64(),
            cq["deactivated"].as_u64(),
            cq["never_admitted"].as_u64(),
        ),
        (Some(1), Some(0.0), Some(1), Some(0))
    );
    // The text account says it in Kueue's words, and not that Kueue would admit it.
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["kueue", "simulate"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "  submitted 10 s, its pods never all ready: deactivated at 310 s after 1 PodsReadyTimeout eviction(s), more than backoffLimitCount allows: Kueue sets spec.active: false and does not admit it again",
        "  quota reserved 10 s: its pods wait for nodes being provisioned (waitForPodsReady: evicted at 310 s unless all are ready)",
        "  deactivated 310 s: PodsReadyTimeout eviction 1 exceeds backoffLimitCount (Evicted: DeactivatedDueToRequeuingLimitExceeded; spec.active: false)",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    assert!(!text.contains("–end"), "{text}");
}

/// An empty `--workload` file is refused, naming it.
#[test]
fn an_empty_workload_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (m, w) = (dir.path().join("k.yaml"), dir.path().join("none.yaml"));
    std::fs::write(&m, MANIFESTS).unwrap();
    std::fs::write(&w, "# no workloads yet\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["kueue", "simulate", "--manifests", m.to_str().unwrap()])
        .args(["--workload", w.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains(&format!(
                "{}: no Workload/Job/JobSet/RayJob objects in this workload file",
                w.display()
            )),
        "{err}"
    );
}

/// `waitForPodsReady` beside a ProvisioningRequest check: Kueue admits the workload when its
/// ProvisioningRequest is provisioned, and times its pods from then. `sweep` (2 × 4 GPUs,
/// 1,000 s, submitted at 0 s) waits for the node the check provisions (300 s,
/// `--provisioning-delay 5m`) with a 2-minute timeout and `backoffLimitCount: 0`: it is not
/// evicted at 120 s but admitted at 300 s and finishes at 1,300 s. The same nodes as a
/// plain cluster-autoscaler group (`--fleet`, no check) are waited for after admission:
/// evicted at 0 + 120 = 120 s, one eviction more than 0: deactivated.
#[test]
fn a_provisioning_request_check_admits_when_its_nodes_join_so_pods_ready_waits() {
    let dir = tempfile::tempdir().unwrap();
    let config = "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
waitForPodsReady:
  timeout: 2m
  requeuingStrategy:
    backoffLimitCount: 0
---
";
    let checked = MANIFESTS.replace(
        "  preemption:\n    withinClusterQueue: LowerPriority\n",
        "  admissionChecksStrategy:\n    admissionChecks:\n    - name: prov\n      onFlavors: [h100]\n",
    ) + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata:\n  name: prov\nspec:\n  controllerName: kueue.x-k8s.io/provisioning-request\n  parameters:\n    apiGroup: kueue.x-k8s.io\n    kind: ProvisioningRequestConfig\n    name: prov-config\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ProvisioningRequestConfig\nmetadata:\n  name: prov-config\nspec:\n  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io\n";
    let (m, w, f) = (
        dir.path().join("k.yaml"),
        dir.path().join("jobs.yaml"),
        dir.path().join("fleet.toml"),
    );
    std::fs::write(&w, job("sweep", "0s", "1000s", 2, 4, "")).unwrap();
    std::fs::write(&m, format!("{config}{checked}")).unwrap();
    let a = simulate(&[
        "--manifests",
        m.to_str().unwrap(),
        "--workload",
        w.to_str().unwrap(),
        "--provisioning-delay",
        "5m",
    ]);
    let sweep = workload(&a, "Job ml/sweep");
    assert_eq!(
        (
            sweep["admitted_s"].as_f64(),
            sweep["finished_s"].as_f64(),
            sweep["pods_ready_evictions"].as_u64(),
            sweep["pods_ready"].as_array().map(Vec::len),
        ),
        (Some(300.0), Some(1300.0), Some(0), Some(0))
    );
    // While the nodes are provisioned Kueue holds it with quota reserved, pending the check
    // (it does not admit it and leave its pods to kube-scheduler).
    let spans = sweep["pending"].as_array().unwrap();
    assert_eq!(
        (
            spans.len(),
            spans[0]["from_s"].as_f64(),
            spans[0]["to_s"].as_f64()
        ),
        (1, Some(0.0), Some(300.0)),
        "{spans:?}"
    );
    let reason = spans[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("quota reserved; waiting for AdmissionCheck prov (ProvisioningRequest)"),
        "{reason}"
    );
    // No check: one autoscaled node of 8 H100 GPUs joining after 300 s, as a fleet file.
    std::fs::write(
        &f,
        "[[fleet.cells]]\nname = \"c\"\nnodes = []\n[[fleet.cells.autoscaling]]\nname = \"h100\"\nmax_nodes = 1\nnode = { preset = \"hgx-h100\" }\nprovisioning_delay = { distribution = \"fixed\", s = 300 }\n",
    )
    .unwrap();
    std::fs::write(&m, format!("{config}{MANIFESTS}")).unwrap();
    let a = simulate(&[
        "--manifests",
        m.to_str().unwrap(),
        "--workload",
        w.to_str().unwrap(),
        "--fleet",
        f.to_str().unwrap(),
    ]);
    let sweep = workload(&a, "Job ml/sweep");
    assert_eq!(
        (
            sweep["admitted_s"].as_f64(),
            sweep["deactivated_s"].as_f64(),
            sweep["state"].as_str()
        ),
        (None, Some(120.0), Some("CANCELLED"))
    );
}
