//! Kueue configurations simulated as written: for each ClusterQueue, Cohort and
//! Configuration field fleetsim simulates, a hand-computed schedule that changes when the
//! field changes (Kueue's semantics: `pkg/scheduler/preemption/` and
//! `site/content/en/docs/concepts/` of kubernetes-sigs/kueue). Every run audits every
//! instant. Jobs request only accelerators; runs have no checkpoint (a victim restarts from
//! scratch) and no grace period (Kueue's defaults).

use super::support::{job, run, span};
use fleetsim::engine::FinalState;

/// One 8-GPU H100 node.
const ONE_NODE: &str = r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 1
"#;

fn scenario(fleet: &str, policy: &str) -> String {
    format!(
        "name = \"kueue-semantics\"\nkueue = {{ path = \"k.yaml\" }}\n{fleet}\n[workload]\n\
         trace = {{ format = \"native\", path = \"jobs.csv\" }}\n[policy]\nqueue_order = \"priority\"\n{policy}\n"
    )
}

const FLAVOR: &str = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: h100
spec:
  nodeLabels:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
";

/// A ClusterQueue of GPU quota `nominal` in cohort `org` (when `cohort`), with `extra` YAML
/// under `spec` (4-space indented keys).
fn cq(name: &str, nominal: u32, cohort: bool, extra: &str) -> String {
    format!(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n{}{extra}  resourceGroups:\n  - coveredResources: [\"nvidia.com/gpu\"]\n    flavors:\n    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: {nominal}\n",
        if cohort { "  cohortName: org\n" } else { "" }
    )
}

const HEADER: &str = "id,submit_s,tenant,queue,priority,tasks,num_gpu,runtime_s\n";

/// `reclaimWithinCohort`. Queues `a` and `b` have 4 GPUs each in cohort `org`, on one 8-GPU
/// node. At 0 s `b1` (8 GPUs, 1,000 s) starts, borrowing `a`'s 4. At 10 s `a1` (4 GPUs,
/// 100 s) fits `a`'s nominal quota, which `b` borrows:
/// * `Never`: `a1` waits for `b1`: 1,000 → 1,100.
/// * `Any`: `a1` reclaims: `b1` is preempted at 10 s, `a1` runs 10 → 110, `b1` restarts
///   from scratch when the node is free again: 110 → 1,110.
/// * `LowerPriority` with `b1` of higher priority (5 > 0): as `Never`.
#[test]
fn reclaim_within_cohort_never_vs_any() {
    let jobs = format!("{HEADER}b1,0,t,b,0,1,8,1000\na1,10,t,a,0,1,4,100\n");
    let jobs_high = format!("{HEADER}b1,0,t,b,5,1,8,1000\na1,10,t,a,0,1,4,100\n");
    let with = |policy: &str, jobs: &str| {
        let k = format!(
            "{FLAVOR}{}{}",
            cq(
                "a",
                4,
                true,
                &format!("  preemption:\n    reclaimWithinCohort: {policy}\n")
            ),
            cq("b", 4, true, "")
        );
        run(
            &scenario(ONE_NODE, ""),
            &[("k.yaml", &k), ("jobs.csv", jobs)],
        )
    };
    let never = with("Never", &jobs);
    assert_eq!(span(&never, "a1"), (Some(1000), Some(1100)));
    assert_eq!(job(&never, "b1").preemptions, 0);
    let any = with("Any", &jobs);
    assert_eq!(span(&any, "a1"), (Some(10), Some(110)));
    let b1 = job(&any, "b1");
    assert_eq!(b1.preemptions, 1);
    assert_eq!(
        (
            b1.last_start.map(|t| t.0 / 1000),
            b1.finish.map(|t| t.0 / 1000)
        ),
        (Some(110), Some(1110))
    );
    assert_eq!(any.result.counts.preemptions_by_reason["reclaim"], 1);
    let lower = with("LowerPriority", &jobs_high);
    assert_eq!(span(&lower, "a1"), (Some(1000), Some(1100)));
}

/// `withinClusterQueue`. One queue of 8 GPUs. At 0 s `low` (priority 0, 8 GPUs, 1,000 s)
/// starts; at 10 s `high` (priority 10, 8 GPUs, 100 s) arrives:
/// * `Never`: `high` waits: 1,000 → 1,100.
/// * `LowerPriority`: `high` preempts `low` at 10 s and runs 10 → 110; `low` restarts at
///   110 and ends at 1,110.
/// * `LowerOrNewerEqualPriority` with equal priorities: `high` is newer than `low`, so it
///   may not preempt it (only newer jobs are victims): as `Never`.
#[test]
fn within_cluster_queue_never_vs_lower_priority() {
    let with = |policy: &str, high_prio: u32| {
        let k = format!(
            "{FLAVOR}{}",
            cq(
                "a",
                8,
                false,
                &format!("  preemption:\n    withinClusterQueue: {policy}\n")
            )
        );
        let jobs = format!("{HEADER}low,0,t,a,0,1,8,1000\nhigh,10,t,a,{high_prio},1,8,100\n");
        run(
            &scenario(ONE_NODE, ""),
            &[("k.yaml", &k), ("jobs.csv", &jobs)],
        )
    };
    assert_eq!(span(&with("Never", 10), "high"), (Some(1000), Some(1100)));
    let lp = with("LowerPriority", 10);
    assert_eq!(span(&lp, "high"), (Some(10), Some(110)));
    assert_eq!(job(&lp, "low").last_start.map(|t| t.0 / 1000), Some(110));
    assert_eq!(lp.result.counts.preemptions_by_reason["within_queue"], 1);
    let newer = with("LowerOrNewerEqualPriority", 0);
    assert_eq!(span(&newer, "high"), (Some(1000), Some(1100)));
}

/// `borrowWithinCohort`. `a` has 2 GPUs, `b` 6, in cohort `org`, one 8-GPU node. At 0 s
/// `b1` (priority 0, 8 GPUs, 1,000 s) starts, borrowing 2. At 10 s `a1` (priority 10, 4
/// GPUs, 100 s) needs 4 > `a`'s 2: it can only run borrowing, so reclaiming (which needs
/// `a1` within `a`'s nominal quota) cannot help it:
/// * `reclaimWithinCohort: Any` alone: `a1` waits: 1,000 → 1,100.
/// * with `borrowWithinCohort: {policy: LowerPriority}`: `b1` (priority 0 < 10, in `b`,
///   which borrows) is preempted at 10 s; `a1` runs 10 → 110 borrowing 2 of `b`'s unused
///   quota; `b1` restarts at 110 and ends at 1,110 (reason `reclaim_while_borrowing`).
/// * with `maxPriorityThreshold: -1`: `b1`'s priority 0 is above the threshold: as without.
#[test]
fn borrow_within_cohort_lower_priority_vs_never() {
    let jobs = format!("{HEADER}b1,0,t,b,0,1,8,1000\na1,10,t,a,10,1,4,100\n");
    let with = |borrow: &str| {
        let k = format!(
            "{FLAVOR}{}{}",
            cq(
                "a",
                2,
                true,
                &format!("  preemption:\n    reclaimWithinCohort: Any\n{borrow}")
            ),
            cq("b", 6, true, "")
        );
        run(
            &scenario(ONE_NODE, ""),
            &[("k.yaml", &k), ("jobs.csv", &jobs)],
        )
    };
    let none = with("");
    assert_eq!(span(&none, "a1"), (Some(1000), Some(1100)));
    let lp = with("    borrowWithinCohort:\n      policy: LowerPriority\n");
    assert_eq!(span(&lp, "a1"), (Some(10), Some(110)));
    assert_eq!(job(&lp, "b1").last_start.map(|t| t.0 / 1000), Some(110));
    assert_eq!(
        lp.result.counts.preemptions_by_reason["reclaim_while_borrowing"],
        1
    );
    let capped = with(
        "    borrowWithinCohort:\n      policy: LowerPriority\n      maxPriorityThreshold: -1\n",
    );
    assert_eq!(span(&capped, "a1"), (Some(1000), Some(1100)));
}

/// `fairSharing.weight`, with fair sharing on (a `Configuration` with `fairSharing`). `a`
/// and `b` have no quota of their own; cohort `org` holds all 8 GPUs. At 0 s `x1` (`a`, 4
/// GPUs, 100 s) and `y1` (`b`, 4 GPUs, 200 s) start; at 1 s `a2` and then `b2` (4 GPUs,
/// 100 s each) wait. At 100 s `x1` ends: `a` holds 0, `b` 4. Fair sharing admits the queue
/// whose dominant resource share after admission (borrowed / the cohort's 8, over the
/// weight) is lowest:
/// * equal weights: `a` 4/8 = 0.5 < `b` 8/8 = 1: `a2` at 100 → 200, `b2` when `y1` ends:
///   200 → 300;
/// * `b` weight 4: `b` 8/8 / 4 = 0.25 < `a` 0.5: `b2` at 100 → 200, `a2` at 200 → 300.
///
/// Without a Configuration (fair sharing off) the weight changes nothing (warned): Kueue's
/// classic order, priority then submit time, starts `a2` first.
#[test]
fn fair_sharing_weight_orders_admission() {
    let jobs = format!(
        "{HEADER}x1,0,t,a,0,1,4,100\ny1,0,t,b,0,1,4,200\na2,1,t,a,0,1,4,100\nb2,1,t,b,0,1,4,100\n"
    );
    let cohort = "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: org\nspec:\n  resourceGroups:\n  - coveredResources: [\"nvidia.com/gpu\"]\n    flavors:\n    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8\n";
    let config = "---\napiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfairSharing:\n  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n";
    let with = |b_weight: &str, fair: bool| {
        let k = format!(
            "{FLAVOR}{cohort}{}{}{}",
            cq("a", 0, true, ""),
            cq(
                "b",
                0,
                true,
                &format!("  fairSharing:\n    weight: \"{b_weight}\"\n")
            ),
            if fair { config } else { "" }
        );
        run(
            &scenario(ONE_NODE, ""),
            &[("k.yaml", &k), ("jobs.csv", &jobs)],
        )
    };
    let equal = with("1", true);
    assert_eq!(span(&equal, "a2"), (Some(100), Some(200)));
    assert_eq!(span(&equal, "b2"), (Some(200), Some(300)));
    let heavy = with("4", true);
    assert_eq!(span(&heavy, "b2"), (Some(100), Some(200)));
    assert_eq!(span(&heavy, "a2"), (Some(200), Some(300)));
    let off = with("4", false);
    assert_eq!(span(&off, "a2"), (Some(100), Some(200)));
    assert!(
        off.warnings
            .iter()
            .any(|w| w.contains("spec.fairSharing.weight") && w.contains("no effect")),
        "{:?}",
        off.warnings
    );
}

/// `flavorFungibility.whenCanBorrow`. An H100 node and an A100 node (8 GPUs each); `a` has
/// 4 H100 and 8 A100 GPUs, `b` 4 H100, in cohort `org`. At 0 s `a1` (8 GPUs, 1,000 s)
/// arrives; at 10 s `b1` (4 GPUs, 100 s) in `b`, which only has H100 quota:
/// * `MayStopSearch` (Kueue's default): `a1` borrows `b`'s 4 in its first flavor, H100, and
///   fills the H100 node; `b1` waits for it: 1,000 → 1,100.
/// * `TryNextFlavor`: `a1` takes the A100 flavor, within its nominal quota; `b1` starts at
///   once: 10 → 110.
#[test]
fn flavor_fungibility_when_can_borrow() {
    let fleet = "[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\npreset = \"hgx-h100\"\ncount = 1\nname_prefix = \"h\"\n[[fleet.cells.nodes]]\naccelerator = \"A100\"\ngpus = 8\ncpu_milli = 64000\nmem_mib = 512000\ncount = 1\nname_prefix = \"a\"\n";
    let a100 = "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: a100\nspec:\n  nodeLabels:\n    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n";
    let jobs = format!("{HEADER}a1,0,t,a,0,1,8,1000\nb1,10,t,b,0,1,4,100\n");
    let with = |fung: &str| {
        let a = format!(
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: a\nspec:\n  cohortName: org\n{fung}  resourceGroups:\n  - coveredResources: [\"nvidia.com/gpu\"]\n    flavors:\n    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 4\n    - name: a100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8\n"
        );
        let k = format!("{FLAVOR}{a100}{a}{}", cq("b", 4, true, ""));
        run(&scenario(fleet, ""), &[("k.yaml", &k), ("jobs.csv", &jobs)])
    };
    let stop = with("");
    assert_eq!(job(&stop, "a1").nodes, ["h-n00000"]);
    assert_eq!(span(&stop, "b1"), (Some(1000), Some(1100)));
    let next = with("  flavorFungibility:\n    whenCanBorrow: TryNextFlavor\n");
    assert_eq!(job(&next, "a1").nodes, ["a-n00000"]);
    assert_eq!(span(&next, "b1"), (Some(10), Some(110)));
    assert_eq!(job(&next, "b1").state, FinalState::Completed);
}

/// Fair-sharing preemption (`fairSharing.preemptionStrategies`) takes victims in other
/// ClusterQueues only as the preemptor's `reclaimWithinCohort` allows (Kueue's
/// `findCandidates`). `a` and `b` have no quota; cohort `org` holds the 8 GPUs. At 0 s `b1`
/// (8 GPUs, 1,000 s) starts; at 10 s `a1` (4 GPUs, 100 s) arrives. `a`'s share after
/// admitting it is 4/8 = 0.5 < `b`'s 8/8 = 1 (rule S2-b holds):
/// * `reclaimWithinCohort: Never` (Kueue's default): no victim: `a1` waits: 1,000 → 1,100;
/// * `Any`: `b1` is preempted at 10 s (`fair_share`), `a1` runs 10 → 110, `b1` 110 → 1,110.
#[test]
fn fair_sharing_preemption_follows_the_reclaim_policy() {
    let jobs = format!("{HEADER}b1,0,t,b,0,1,8,1000\na1,10,t,a,0,1,4,100\n");
    let cohort = "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: org\nspec:\n  resourceGroups:\n  - coveredResources: [\"nvidia.com/gpu\"]\n    flavors:\n    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8\n";
    let config = "---\napiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing:\n  enable: true\n";
    let with = |policy: &str| {
        let k = format!(
            "{FLAVOR}{cohort}{config}{}{}",
            cq(
                "a",
                0,
                true,
                &format!("  preemption:\n    reclaimWithinCohort: {policy}\n")
            ),
            cq("b", 0, true, "")
        );
        run(
            &scenario(ONE_NODE, ""),
            &[("k.yaml", &k), ("jobs.csv", &jobs)],
        )
    };
    let never = with("Never");
    assert_eq!(span(&never, "a1"), (Some(1000), Some(1100)));
    let any = with("Any");
    assert_eq!(span(&any, "a1"), (Some(10), Some(110)));
    assert_eq!(any.result.counts.preemptions_by_reason["fair_share"], 1);
    assert_eq!(job(&any, "b1").last_start.map(|t| t.0 / 1000), Some(110));
}

/// Manifests that cannot be simulated as written are refused or warned, naming the object
/// and field: a Helm template; `reclaimWithinCohort: Never` with `borrowWithinCohort`
/// (Kueue refuses it); `waitForPodsReady`'s `blockAdmission` (not simulated); a GPU fleet whose
/// ClusterQueues give no GPU quota; `[policy.preemption]` beside ClusterQueues without
/// `spec.preemption`; a Configuration inside Helm's ConfigMap is read.
#[test]
fn refusals_and_warnings_name_object_and_field() {
    let jobs = format!("{HEADER}j,0,t,a,0,1,1,10\n");
    let go = |k: &str, policy: &str| -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.yaml"), k).unwrap();
        std::fs::write(dir.path().join("jobs.csv"), &jobs).unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, scenario(ONE_NODE, policy)).unwrap();
        let l = fleetsim::scenario::load(&p).map_err(|e| e.to_string())?;
        let opts = fleetsim::run::RunOptions {
            seed: None,
            trace_dir: fleetsim::scenario::TraceDir(super::support::public_traces()),
            out_dir: None,
            keep_rows: false,
        };
        let out =
            fleetsim::run::run_scenario(&l, &opts, &mut |_, _| {}).map_err(|e| format!("{e:#}"))?;
        Ok(out.warnings)
    };
    let template = format!(
        "{FLAVOR}---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: {{{{ .Values.queue }}}}\n"
    );
    let e = go(&template, "").unwrap_err();
    assert!(
        e.contains("k.yaml: line 12")
            && e.contains("this is a template, render it first (helm template"),
        "{e}"
    );
    let bad = format!(
        "{FLAVOR}{}",
        cq(
            "a",
            8,
            true,
            "  preemption:\n    borrowWithinCohort:\n      policy: LowerPriority\n"
        )
    );
    let e = go(&bad, "").unwrap_err();
    assert!(
        e.contains("spec.preemption.borrowWithinCohort.policy")
            && e.contains("reclaimWithinCohort=Never"),
        "{e}"
    );
    let no_gpu = "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: default\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: a\nspec:\n  resourceGroups:\n  - coveredResources: [\"cpu\"]\n    flavors:\n    - name: default\n      resources:\n      - name: cpu\n        nominalQuota: 64\n";
    let w = go(no_gpu, "").unwrap();
    assert!(
        w.iter()
            .any(|w| w.contains("no ClusterQueue has accelerator quota")
                && w.contains("the fleet has 8 accelerators")
                && w.contains("ClusterQueue(s) a")),
        "{w:?}"
    );
    let wait = format!(
        "{FLAVOR}{}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kueue-manager-config\ndata:\n  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n    kind: Configuration\n    waitForPodsReady:\n      enable: true\n      timeout: 10m\n      blockAdmission: true\n",
        cq("a", 8, false, "")
    );
    let w = go(&wait, "").unwrap();
    assert!(
        w.iter()
            .any(|w| w.contains("`waitForPodsReady.blockAdmission: true` is not simulated")),
        "{w:?}"
    );
    assert!(
        !w.iter().any(|w| w.contains("pod-readiness")),
        "the timeout is simulated: {w:?}"
    );
    let w = go(
        &format!("{FLAVOR}{}", cq("a", 8, false, "")),
        "[policy.preemption]\nwithin_queue = \"lower-priority\"\n",
    )
    .unwrap();
    assert!(
        w.iter()
            .any(|w| w.contains("ClusterQueues a have no `spec.preemption`")
                && w.contains("within_queue = lower-priority")),
        "{w:?}"
    );
}

/// A ProvisioningRequest check (class `best-effort-atomic-scale-up`) on queue `a`'s flavor
/// `h100`: with an autoscaled group of H100 nodes (none up, 120 s to provision), `j` (8
/// GPUs, 100 s) submitted at 0 s starts when its node joins: 120 → 220. Without such a
/// group the check is warned as not simulated and `j` starts on the static node at 0 s.
#[test]
fn provisioning_request_check_uses_the_autoscaled_group() {
    let jobs = format!("{HEADER}j,0,t,a,0,1,8,100\n");
    let k = format!(
        "{FLAVOR}{}---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata:\n  name: prov\nspec:\n  controllerName: kueue.x-k8s.io/provisioning-request\n  parameters:\n    apiGroup: kueue.x-k8s.io\n    kind: ProvisioningRequestConfig\n    name: cfg\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ProvisioningRequestConfig\nmetadata:\n  name: cfg\nspec:\n  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io\n  retryStrategy:\n    backoffLimitCount: 2\n",
        cq("a", 8, false, "  admissionChecks: [prov]\n")
    );
    let scaled = "[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.autoscaling]]\nname = \"gpu\"\nmin_nodes = 0\nmax_nodes = 1\nnode = { preset = \"hgx-h100\" }\nprovisioning_delay = { distribution = \"fixed\", s = 120 }\n";
    let out = run(
        &scenario(scaled, ""),
        &[("k.yaml", &k), ("jobs.csv", &jobs)],
    );
    assert_eq!(span(&out, "j"), (Some(120), Some(220)));
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("simulated by the autoscaled node group(s) c/gpu")),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings.iter().any(
            |w| w.contains("ProvisioningRequestConfig cfg: `spec.retryStrategy` not simulated")
        ),
        "{:?}",
        out.warnings
    );
    let fixed = run(
        &scenario(ONE_NODE, ""),
        &[("k.yaml", &k), ("jobs.csv", &jobs)],
    );
    assert_eq!(span(&fixed, "j"), (Some(0), Some(100)));
    assert!(
        fixed
            .warnings
            .iter()
            .any(|w| w.contains("no autoscaled node group of its model (H100): not simulated")),
        "{:?}",
        fixed.warnings
    );
}

/// `waitForPodsReady` of the Kueue `Configuration` becomes `[policy] wait_for_pods_ready`:
/// timeout 1m, backoff base 30 s. The autoscaled group of the case above, as the cluster
/// autoscaler's (no admission check): `j` (8 GPUs, 100 s) submitted at 0 waits for the
/// group's node (joins at 120). By hand:
/// - `backoffLimitCount` absent: admitted at 0 (it asks for the node), deadline 60:
///   evicted at 60, requeued at 60 + 30 = 90, claims the node on its way (admitted again,
///   deadline 150), starts when it joins: 120 → 220, as without the setting, with 1
///   eviction and 1 requeue.
/// - `backoffLimitCount: 0`: the first eviction, at 60, deactivates it: it never runs
///   (`CANCELLED`, `requeuing_limit_exceeded`).
/// - `timeout: 3m` (above the 120 s delay): no eviction.
/// - With the ProvisioningRequest check of the case above guarding the flavor, Kueue admits
///   `j` when its node joins (120), so the 1-minute timeout evicts nothing: 120 → 220, even
///   with `backoffLimitCount: 0`.
#[test]
fn wait_for_pods_ready_of_the_configuration_is_simulated() {
    let jobs = format!("{HEADER}j,0,t,a,0,1,8,100\n");
    let k = |wait: &str, checked: bool| {
        format!(
            "{FLAVOR}{}---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata:\n  name: prov\nspec:\n  controllerName: kueue.x-k8s.io/provisioning-request\n  parameters:\n    apiGroup: kueue.x-k8s.io\n    kind: ProvisioningRequestConfig\n    name: cfg\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ProvisioningRequestConfig\nmetadata:\n  name: cfg\nspec:\n  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io\n---\napiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady:\n{wait}",
            cq(
                "a",
                8,
                false,
                if checked {
                    "  admissionChecks: [prov]\n"
                } else {
                    ""
                }
            )
        )
    };
    let scaled = "[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.autoscaling]]\nname = \"gpu\"\nmin_nodes = 0\nmax_nodes = 1\nnode = { preset = \"hgx-h100\" }\nprovisioning_delay = { distribution = \"fixed\", s = 120 }\n";
    let go_with = |wait: &str, checked: bool| {
        run(
            &scenario(scaled, ""),
            &[("k.yaml", &k(wait, checked)), ("jobs.csv", &jobs)],
        )
    };
    let go = |wait: &str| go_with(wait, false);
    let requeued = go("  timeout: 1m\n  requeuingStrategy:\n    backoffBaseSeconds: 30\n");
    assert_eq!(span(&requeued, "j"), (Some(120), Some(220)));
    let p = requeued.summary.pods_ready.as_ref().expect("simulated");
    assert_eq!(p.timeout_s, 60.0);
    assert_eq!((p.evictions, p.requeues, p.deactivated), (1, 1, 0));
    let limited = go(
        "  timeout: 1m\n  requeuingStrategy:\n    backoffBaseSeconds: 30\n    backoffLimitCount: 0\n",
    );
    let j = job(&limited, "j");
    assert_eq!(
        (j.start, j.reason.as_deref()),
        (None, Some("requeuing_limit_exceeded"))
    );
    let p = limited.summary.pods_ready.as_ref().unwrap();
    assert_eq!((p.evictions, p.requeues, p.deactivated), (1, 0, 1));
    let long = go("  timeout: 3m\n");
    assert_eq!(span(&long, "j"), (Some(120), Some(220)));
    assert_eq!(long.summary.pods_ready.as_ref().unwrap().evictions, 0);
    let checked = go_with(
        "  timeout: 1m\n  requeuingStrategy:\n    backoffBaseSeconds: 30\n    backoffLimitCount: 0\n",
        true,
    );
    assert_eq!(span(&checked, "j"), (Some(120), Some(220)));
    let p = checked.summary.pods_ready.as_ref().unwrap();
    assert_eq!(
        (p.admissions_waiting, p.evictions, p.deactivated),
        (0, 0, 0)
    );
}
