//! Kueue manifests (<https://kueue.sigs.k8s.io/docs/concepts/>) as a scenario's quota
//! configuration, and the input of `fleetsim kueue simulate`: multi-document YAML holding
//! `ClusterQueue`, `Cohort`, `LocalQueue`, `ResourceFlavor`, `WorkloadPriorityClass`,
//! `Topology`, `AdmissionCheck` and `ProvisioningRequestConfig` objects of
//! `kueue.x-k8s.io/v1beta1` or `v1beta2` (`Cohort` also `v1alpha1`), Kubernetes
//! `PriorityClass` objects, and the controller's `Configuration` (the `configuration`
//! module). Other kinds (Namespaces, Jobs…) are ignored and counted in
//! [`KueueConfig::ignored`]. The reference, field by field (simulated, warned or
//! refused), is the book's `docs/src/reference/kueue.md`.
//!
//! # What is read
//!
//! * `ClusterQueue.spec`: the cohort (`cohort` in v1beta1, `cohortName` in v1beta2),
//!   `queueingStrategy` (`StrictFIFO` | `BestEffortFIFO`, default `BestEffortFIFO`),
//!   `resourceGroups[].{coveredResources, flavors[].{name, resources[].{name, nominalQuota,
//!   borrowingLimit, lendingLimit}}}`, `preemption`, `fairSharing.weight`,
//!   `flavorFungibility`, `admissionChecks` / `admissionChecksStrategy` ([`checks`]).
//! * `Cohort.spec`: the parent (`parent` in v1alpha1/v1beta1, `parentName` in v1beta2),
//!   its own `resourceGroups` and `fairSharing.weight`.
//! * `LocalQueue`: `metadata.namespace`, `metadata.name`, `spec.clusterQueue`.
//! * `ResourceFlavor.spec.{nodeLabels, topologyName}`; `Topology.spec.levels`
//!   ([`topology`]); `WorkloadPriorityClass.{value, description}`.
//!
//! Quantities are Kubernetes quantities (`500m`, `2`, `1.5`, `64Gi`, `1e3`, `4k`), kept
//! exactly as integer milli-units ([`Quantity`]).
//!
//! # Validation (each error names the file, the line of the field and the field)
//!
//! Every document must be a Kubernetes object (a mapping with `apiVersion` and `kind`); a
//! file with no object, or with no ClusterQueue, is an error, and so is a Helm template (a
//! `{{ … }}` action outside comments: render it first). Under `kueue.x-k8s.io`: an unknown
//! kind (upstream kinds fleetsim does not read, such as MultiKueueConfig, are ignored and
//! listed as not simulated); unknown versions; a key that the upstream API does not have at
//! the top level, in `spec` or in nested entries (a typo such as `cohortNmae` would otherwise
//! drop the setting); a missing `metadata.name`; duplicate names (of a LocalQueue: in one
//! namespace); the cohort or parent field of the other API version; v1beta2's
//! `concurrentAdmissionPolicy` in v1beta1; an unknown `queueingStrategy` or preemption
//! policy; `borrowWithinCohort` without `reclaimWithinCohort` (as Kueue); a flavor that is
//! not a declared ResourceFlavor; a flavor's resources differing from `coveredResources`; two
//! accelerator resources in one flavor (fleetsim gives a flavor one accelerator quota); a
//! malformed, negative or out of range quantity (above 2^63−1 units); `borrowingLimit` on a
//! ClusterQueue without a cohort; `lendingLimit` above `nominalQuota`; a LocalQueue naming an
//! unknown ClusterQueue; a Topology of more levels than fleetsim models; manifests without
//! any ClusterQueue, ResourceFlavor, Cohort, LocalQueue or WorkloadPriorityClass (a file of
//! ResourceFlavors alone is accepted: the scenario's `[[queues]]` may use them); a cycle in
//! the cohort tree (at the Cohort whose parent closes it). Lines are found by looking the
//! field's key path up in the document's block-style text; a field in flow style is reported
//! at its nearest enclosing key.
//!
//! # What fleetsim simulates ([`KueueConfig::quota`], merged into a scenario by `merge`)
//!
//! * Each **ClusterQueue** becomes a scenario `[[queues]]` entry of the same name: its
//!   `queueingStrategy`, its cohort, and per flavor (in order) the nominal quota,
//!   `borrowingLimit` and `lendingLimit` of the accelerator resource ([`ACCELERATOR_RESOURCES`]
//!   → `gpus`), `cpu` (→ cores) and `memory` (bytes → GiB); its `preemption` rules (for its
//!   jobs as preemptors), fair-sharing weight and `whenCanBorrow`. Each of its
//!   **LocalQueues** becomes one of its `local_queues`: a job that names the LocalQueue (its
//!   `queue`, or its tenant under `queues = "per-tenant"`) is queued, admitted and preempted
//!   in the ClusterQueue, as in Kueue. A job whose queue is neither a ClusterQueue, a
//!   LocalQueue nor a scenario `[[queues]]` entry is rejected at submit with the reason
//!   `unknown_queue` (Kueue never admits a workload of an unknown LocalQueue;
//!   [`crate::engine::EngineConfig::reject_unknown_queues`]). Scenarios without manifests
//!   keep such jobs in a queue of their own, outside quota.
//! * Each **Cohort** (declared, or only named by a ClusterQueue or a parent) becomes a
//!   `[[cohorts]]` entry with its parent, its own quota and weight.
//! * Each **ResourceFlavor** becomes a `[[flavors]]` entry whose accelerator model is the value
//!   of its node labels among [`MODEL_LABELS`], mapped to the accelerator catalog by
//!   [`catalog_model`] (`nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3` → `H100`,
//!   `Tesla-V100-SXM2-16GB` → `V100M16`, GKE `nvidia-l4` → `L4`, `tpu-v5p-slice` →
//!   `TPUv5p`); a flavor without such a label covers every model, and when it has other
//!   labels (an instance type, a node pool) that is listed as a note saying how to restrict
//!   it. A label naming no model of the fleet is an error naming the ResourceFlavor's line.
//! * The **Configuration**'s `fairSharing` turns on admission by dominant resource share and
//!   its preemption strategies; otherwise admission is Kueue's classic order (workloads
//!   within nominal quota first). **ProvisioningRequest checks** become autoscaled node
//!   groups ([`checks`]); **Topologies** map to fleetsim's topology levels ([`topology`]).
//! * The **Configuration**'s `waitForPodsReady` (`timeout`, `requeuingStrategy`'s backoff
//!   and `backoffLimitCount`) becomes `[policy] wait_for_pods_ready`
//!   ([`crate::engine::pods_ready`]).
//!
//! What the scenario declares itself wins over the manifests, entry by entry (by name).
//! Read and **not simulated**, each listed with its reason by `fleetsim validate`
//! ([`KueueQuota::unsimulated`]): `stopPolicy`, `admissionScope`,
//! `concurrentAdmissionPolicy`, a non-empty `namespaceSelector`, `whenCanPreempt:
//! MayStopSearch`, `flavorFungibility.preference`, a LocalQueue's `fairSharing`, a
//! ResourceFlavor's `nodeTaints` and `tolerations`, admission checks of other controllers,
//! the Configuration's `waitForPodsReady.blockAdmission: true`, `recoveryTimeout` and
//! `requeuingStrategy.timestamp: Creation`, `admissionFairSharing`, `resources`,
//! `featureGates` and `multiKueue`; resource groups without an accelerator resource beside
//! one with it (fleetsim assigns one flavor for all of a job's resources), resources other
//! than accelerators, `cpu` and `memory`; WorkloadPriorityClasses in a scenario (job
//! priorities come from the trace; `kueue simulate` applies them).

pub mod checks;
mod configuration;
pub mod topology;
pub mod workloads;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use configuration::{go_duration_ms, ControllerConfig, WaitForPodsReady};

use super::yaml::Value;
use fleetsim_policies::QueueingStrategy;

use super::schema::{
    CohortSpec, FlavorQuotaSpec, FlavorSpec, QueuePreemptionSpec, QueueSpec, ResourceQuotaSpec,
};

/// The GPU resource name whose quota becomes `max_gpus`.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

pub use fleetsim_policies::quantity::Quantity;

/// One resource's quota in a flavor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceQuota {
    /// Resource name (`cpu`, `memory`, `nvidia.com/gpu`, …).
    pub name: String,
    /// `nominalQuota`.
    pub nominal: Quantity,
    /// `borrowingLimit` (`None` = unlimited within the cohort).
    pub borrowing_limit: Option<Quantity>,
    /// `lendingLimit` (`None` = all unused nominal quota may be lent).
    pub lending_limit: Option<Quantity>,
}

/// A flavor's quotas within a resource group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlavorQuotas {
    /// The ResourceFlavor's name.
    pub flavor: String,
    /// One quota per covered resource.
    pub resources: Vec<ResourceQuota>,
}

/// A resource group: resources whose flavors are assigned together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceGroup {
    /// `coveredResources`.
    pub covered_resources: Vec<String>,
    /// Flavors in order of preference.
    pub flavors: Vec<FlavorQuotas>,
}

/// A ClusterQueue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterQueue {
    /// Name.
    pub name: String,
    /// Cohort it belongs to.
    pub cohort: Option<String>,
    /// `queueingStrategy`.
    pub strategy: QueueingStrategy,
    /// Quotas.
    pub resource_groups: Vec<ResourceGroup>,
    /// `spec.preemption` (Kueue's defaults, every policy `Never`, when absent).
    pub preemption: QueuePreemptionSpec,
    /// `spec.fairSharing.weight` (`None`: Kueue's default 1).
    pub fair_sharing_weight: Option<Quantity>,
    /// Admission checks: (AdmissionCheck name, the flavors it guards; empty: all).
    pub admission_checks: Vec<(String, Vec<String>)>,
    /// `spec.flavorFungibility.whenCanBorrow`, when set: `TryNextFlavor`, or borrowing in
    /// the first flavor with room (Kueue's default).
    pub when_can_borrow: Option<fleetsim_policies::quota::Fungibility>,
}

/// A Cohort object (a node of the cohort tree; cohorts named only by ClusterQueues exist
/// implicitly and are listed with no parent and no quota).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cohort {
    /// Name.
    pub name: String,
    /// Parent cohort.
    pub parent: Option<String>,
    /// The cohort's own quotas.
    pub resource_groups: Vec<ResourceGroup>,
    /// `spec.fairSharing.weight` (`None`: Kueue's default 1).
    pub fair_sharing_weight: Option<Quantity>,
}

/// A LocalQueue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalQueue {
    /// Namespace (`default` when absent).
    pub namespace: String,
    /// Name: fleetsim's queue name.
    pub name: String,
    /// The ClusterQueue it submits to.
    pub cluster_queue: String,
}

/// A ResourceFlavor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceFlavor {
    /// Name.
    pub name: String,
    /// `spec.nodeLabels`.
    pub node_labels: BTreeMap<String, String>,
    /// `spec.topologyName`: the Topology of its nodes (Topology-Aware Scheduling).
    pub topology_name: Option<String>,
    /// Line of `spec.nodeLabels` (else of the object) in the manifests.
    pub line: u64,
    /// The manifest file it is declared in.
    pub path: PathBuf,
}

/// A WorkloadPriorityClass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriorityClass {
    /// Name.
    pub name: String,
    /// `value`: higher runs first.
    pub value: i32,
    /// `description`.
    pub description: Option<String>,
}

/// A validated Kueue configuration. Maps are keyed by name (sorted: deterministic output).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KueueConfig {
    /// Cohorts: declared ones and those only named by ClusterQueues or parents.
    pub cohorts: BTreeMap<String, Cohort>,
    /// ClusterQueues.
    pub cluster_queues: BTreeMap<String, ClusterQueue>,
    /// LocalQueues by `namespace/name` (Kueue's LocalQueues are namespaced: `default` may
    /// exist in every namespace).
    pub local_queues: BTreeMap<String, LocalQueue>,
    /// ResourceFlavors.
    pub flavors: BTreeMap<String, ResourceFlavor>,
    /// WorkloadPriorityClasses.
    pub priority_classes: BTreeMap<String, PriorityClass>,
    /// Objects of other kinds, by `apiVersion/kind`.
    pub ignored: BTreeMap<String, u64>,
    /// Settings read but not simulated (upstream fields and kinds), one sentence each.
    pub notes: Vec<String>,
    /// The manifests file (named in errors found later, e.g. a flavor's model).
    pub path: PathBuf,
    /// The Kueue controller's `Configuration`, when the manifests hold one.
    pub controller: Option<ControllerConfig>,
    /// `Topology` objects: name → their levels' node labels, top first.
    pub topologies: BTreeMap<String, Vec<String>>,
    /// `AdmissionCheck` objects, by name.
    pub admission_checks: BTreeMap<String, checks::AdmissionCheck>,
    /// `ProvisioningRequestConfig` objects, by name.
    pub provisioning_configs: BTreeMap<String, checks::ProvisioningConfig>,
    /// Kubernetes `PriorityClass` objects (`scheduling.k8s.io/v1`): name → `value` (a pod
    /// template's `priorityClassName` gives a workload its priority).
    pub pod_priority_classes: BTreeMap<String, i32>,
}

/// Kueue kinds that exist upstream but are not read (ignored, counted and noted).
const OTHER_KINDS: [&str; 3] = ["Workload", "MultiKueueCluster", "MultiKueueConfig"];

/// A manifest error: file, line of the field (or of the object, or of the YAML error),
/// field, message. Line 0 with field `-`: the file could not be read.
#[derive(Debug)]
pub struct KueueError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line (0: the file as a whole).
    pub line: u64,
    /// Field path (`spec.resourceGroups[0].flavors[1].name`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for KueueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match (self.line, self.field.as_str()) {
            (0, "-") => write!(f, "{path}: {}", self.message),
            (line, "-") => write!(f, "{path}: line {line}: {}", self.message),
            (line, field) => write!(f, "{path}: line {line}: field `{field}`: {}", self.message),
        }
    }
}

impl std::error::Error for KueueError {}

struct Ctx<'a> {
    path: &'a Path,
    /// First line of the document.
    line: u64,
    /// The document's text.
    text: &'a str,
    /// The object's place in the document: empty, or `items[N].` for an item of a `List`.
    prefix: &'a str,
}

/// A line's mapping key (quotes removed) and its column, after any `- ` list markers.
fn key_of(line: &str) -> Option<(usize, &str)> {
    let mut col = line.len() - line.trim_start().len();
    let mut rest = line.trim_start();
    while let Some(r) = rest
        .strip_prefix("- ")
        .or_else(|| rest.strip_prefix('-').filter(|r| r.is_empty()))
    {
        col += rest.len() - r.trim_start().len();
        rest = r.trim_start();
    }
    let (key, after) = match rest.chars().next()? {
        q @ ('"' | '\'') => {
            let end = rest[1..].find(q)? + 1;
            (&rest[1..end], &rest[end + 1..])
        }
        _ => {
            let end = rest
                .find(": ")
                .or_else(|| rest.strip_suffix(':').map(str::len))?;
            (&rest[..end], &rest[end..])
        }
    };
    after.starts_with(':').then_some((col, key.trim_end()))
}

/// Whether a line holds nothing (blank or a comment).
fn blank(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// The 0-based line of `field` (`spec.resourceGroups[0].flavors[1].name`) in a block-style
/// YAML document: each key is looked for in order within the subtree of the previous one,
/// `[n]` is the n-th list item under it. A key that is not found (missing, or in flow
/// style) gives the line of the deepest one found; `None` when not even the first is.
fn locate(text: &str, field: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = None;
    let mut pos = 0;
    // Column of the enclosing key or list marker (keys of its subtree are to its right).
    let mut parent: Option<usize> = None;
    let mut on_item = false;
    for seg in field.split('.') {
        let (key, idx) = match seg.find('[') {
            Some(b) => (
                &seg[..b],
                seg[b + 1..]
                    .strip_suffix(']')
                    .and_then(|n| n.parse::<usize>().ok()),
            ),
            None => (seg, None),
        };
        let mut hit = None;
        for (i, l) in lines.iter().enumerate().skip(pos) {
            if blank(l) {
                continue;
            }
            let col = l.len() - l.trim_start().len();
            if parent.is_some_and(|p| col <= p) && !(on_item && i == pos) {
                break;
            }
            if let Some((kc, k)) = key_of(l) {
                if k == key && parent.is_none_or(|p| kc > p) {
                    hit = Some((i, kc));
                    break;
                }
            }
        }
        let Some((i, kc)) = hit else { break };
        found = Some(i);
        pos = i + 1;
        parent = Some(kc);
        on_item = false;
        if let Some(n) = idx {
            // The list items: `-` lines at the column of the first one, within the subtree.
            let mut items = Vec::new();
            let mut dash = None;
            for (j, l) in lines.iter().enumerate().skip(i + 1) {
                if blank(l) {
                    continue;
                }
                let col = l.len() - l.trim_start().len();
                let is_item = l.trim_start().starts_with('-');
                match dash {
                    None if is_item && col >= kc => dash = Some(col),
                    _ => {}
                }
                match dash {
                    Some(d) if col < d || (col == d && !is_item) => break,
                    None if col <= kc => break,
                    _ => {}
                }
                if is_item && Some(col) == dash {
                    items.push(j);
                }
            }
            let Some(&j) = items.get(n) else { break };
            found = Some(j);
            pos = j;
            parent = dash;
            on_item = true;
        }
    }
    found
}

impl Ctx<'_> {
    /// The absolute line of `field`, else of the object's first line.
    fn line_of(&self, field: &str) -> u64 {
        let first = self.text.lines().position(|l| !blank(l)).unwrap_or(0);
        let obj = self.prefix.trim_end_matches('.');
        let found = locate(self.text, &format!("{}{field}", self.prefix))
            .or_else(|| (!obj.is_empty()).then(|| locate(self.text, obj)).flatten());
        self.line + found.unwrap_or(first) as u64
    }

    fn err(&self, field: &str, message: impl Into<String>) -> KueueError {
        KueueError {
            path: self.path.to_path_buf(),
            line: self.line_of(field),
            field: format!("{}{field}", self.prefix),
            message: message.into(),
        }
    }
}

fn get<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    v.as_mapping()
        .and_then(|m| m.get(key))
        .filter(|x| !x.is_null())
}

fn string(c: &Ctx, v: &Value, key: &str, field: &str) -> Result<Option<String>, KueueError> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(c.err(field, format!("expected a string, found {other:?}"))),
    }
}

fn quantity(c: &Ctx, v: &Value, field: &str) -> Result<Quantity, KueueError> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => return Err(c.err(field, format!("expected a quantity, found {other:?}"))),
    };
    Quantity::parse(&text).map_err(|m| c.err(field, m))
}

fn seq<'v>(c: &Ctx, v: &'v Value, key: &str, field: &str) -> Result<&'v [Value], KueueError> {
    match get(v, key) {
        None => Ok(&[]),
        Some(Value::Sequence(s)) => Ok(s),
        Some(other) => Err(c.err(field, format!("expected a list, found {other:?}"))),
    }
}

/// Fails on a key of the mapping `v` (at `prefix`) that is not one of `known`, the keys the
/// upstream Kueue API has there (a typo such as `cohortNmae` would otherwise silently drop
/// the setting).
fn check_keys(c: &Ctx, v: &Value, prefix: &str, known: &[&str]) -> Result<(), KueueError> {
    let m = match v {
        Value::Null => return Ok(()),
        Value::Mapping(m) => m,
        other => return Err(c.err(prefix, format!("expected a mapping, found {other:?}"))),
    };
    for k in m.keys() {
        let Some(k) = k.as_str() else {
            return Err(c.err(prefix, format!("keys must be strings, found {k:?}")));
        };
        if !known.contains(&k) {
            let field = if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            };
            return Err(c.err(
                &field,
                format!("unknown field (the Kueue API has {})", known.join(", ")),
            ));
        }
    }
    Ok(())
}

/// Whether a value is absent or empty (`{}`, `[]`, `null`).
fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Mapping(m)) => m.is_empty(),
        Some(Value::Sequence(s)) => s.is_empty(),
        _ => false,
    }
}

/// Notes for the keys of `spec` that exist upstream but are not simulated (`(key, why)`),
/// when set to something non-empty.
fn unsimulated_keys(owner: &str, spec: &Value, keys: &[(&str, &str)], notes: &mut Vec<String>) {
    for (k, why) in keys {
        if let Some(v) = spec.as_mapping().and_then(|m| m.get(k)) {
            if !is_empty(Some(v)) {
                notes.push(format!("{owner}: `spec.{k}` is not simulated: {why}"));
            }
        }
    }
}

/// Why admission fair sharing is not simulated.
const AFS: &str = "admission fair sharing orders a ClusterQueue's workloads by their LocalQueues' decayed usage; in fleetsim a LocalQueue is a name of its ClusterQueue with no usage of its own, and the [policy] queue order decides";

/// A string field that must be one of `allowed` (Kueue's enum values), mapped by position.
fn enum_field<T: Copy>(
    c: &Ctx,
    v: &Value,
    key: &str,
    field: &str,
    allowed: &[(&str, T)],
    default: T,
) -> Result<T, KueueError> {
    match string(c, v, key, field)? {
        None => Ok(default),
        Some(s) => allowed
            .iter()
            .find(|(n, _)| *n == s)
            .map(|&(_, t)| t)
            .ok_or_else(|| {
                let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
                c.err(field, format!("`{s}` is not one of {}", names.join(", ")))
            }),
    }
}

/// `spec.fairSharing` of a ClusterQueue, Cohort or LocalQueue: its `weight` (a Kubernetes
/// quantity, ≥ 0).
fn fair_sharing_weight(c: &Ctx, spec: &Value) -> Result<Option<Quantity>, KueueError> {
    let Some(fs) = get(spec, "fairSharing") else {
        return Ok(None);
    };
    check_keys(c, fs, "spec.fairSharing", &["weight"])?;
    get(fs, "weight")
        .map(|w| quantity(c, w, "spec.fairSharing.weight"))
        .transpose()
}

/// The first line of `text` holding a Go template action (`{{ … }}`), outside comments: a
/// Helm chart's template, not a manifest.
fn template_line(text: &str) -> Option<usize> {
    text.lines().position(|l| {
        let code = l.split_once('#').map_or(l, |(a, _)| a);
        code.find("{{").is_some_and(|i| code[i..].contains("}}"))
    })
}

/// The Kueue Configuration a ConfigMap holds (a `data` value that is a `Configuration` of
/// `config.kueue.x-k8s.io`), if any.
fn configmap_configuration(v: &Value) -> Option<&str> {
    if get(v, "kind").and_then(Value::as_str) != Some("ConfigMap") {
        return None;
    }
    let data = get(v, "data")?.as_mapping()?;
    data.values()
        .filter_map(Value::as_str)
        .find(|t| t.contains("config.kueue.x-k8s.io/") && t.contains("kind: Configuration"))
}

/// Keeps the one Configuration of the manifests (a second one is an error naming it).
fn set_controller(
    cfg: &mut KueueConfig,
    conf: ControllerConfig,
    c: &Ctx,
) -> Result<(), KueueError> {
    if let Some((p, l)) = cfg.controller.as_ref().and_then(|x| x.source.clone()) {
        return Err(c.err(
            "kind",
            format!(
                "a second Kueue Configuration (the first is at {}: line {l}): give one",
                p.display()
            ),
        ));
    }
    cfg.notes.extend(conf.notes.iter().cloned());
    cfg.controller = Some(conf);
    Ok(())
}

/// `spec.flavorFungibility` of a ClusterQueue: `whenCanBorrow` (simulated: the queue's
/// `flavor_fungibility`), `whenCanPreempt` (Kueue's default `TryNextFlavor` is what fleetsim
/// does: a job is placed without preemption in any flavor before preempting in the first;
/// `MayStopSearch` is noted), `preference` (noted).
fn flavor_fungibility(
    c: &Ctx,
    spec: &Value,
    cq: &str,
    beta2: bool,
    notes: &mut Vec<String>,
) -> Result<Option<fleetsim_policies::quota::Fungibility>, KueueError> {
    use fleetsim_policies::quota::Fungibility as F;
    let Some(f) = get(spec, "flavorFungibility") else {
        return Ok(None);
    };
    let base = "spec.flavorFungibility";
    check_keys(
        c,
        f,
        base,
        &["whenCanBorrow", "whenCanPreempt", "preference"],
    )?;
    // v1beta1 spells the "stop" value `Borrow` / `Preempt`, v1beta2 `MayStopSearch`.
    let (stop_b, stop_p) = if beta2 {
        ("MayStopSearch", "MayStopSearch")
    } else {
        ("Borrow", "Preempt")
    };
    let borrow = get(f, "whenCanBorrow")
        .map(|_| {
            enum_field(
                c,
                f,
                "whenCanBorrow",
                &format!("{base}.whenCanBorrow"),
                &[(stop_b, F::Borrow), ("TryNextFlavor", F::TryNextFlavor)],
                F::Borrow,
            )
        })
        .transpose()?;
    let preempt_stops = enum_field(
        c,
        f,
        "whenCanPreempt",
        &format!("{base}.whenCanPreempt"),
        &[(stop_p, true), ("TryNextFlavor", false)],
        false,
    )?;
    if preempt_stops {
        notes.push(format!(
            "ClusterQueue {cq}: `{base}.whenCanPreempt: {stop_p}` is not simulated: fleetsim places a job without preemption in any of its flavors before preempting in the first (Kueue's TryNextFlavor)"
        ));
    }
    if get(f, "preference").is_some() {
        notes.push(format!(
            "ClusterQueue {cq}: `{base}.preference` is not simulated: when every flavor needs borrowing or preemption, fleetsim borrows in the first flavor that allows it before preempting"
        ));
    }
    Ok(borrow)
}

/// `spec.preemption` of a ClusterQueue: `withinClusterQueue`, `reclaimWithinCohort`,
/// `borrowWithinCohort.{policy, maxPriorityThreshold}` (Kueue's API and defaults, and its
/// rule that `borrowWithinCohort` needs `reclaimWithinCohort` other than `Never`).
fn preemption(c: &Ctx, spec: &Value) -> Result<QueuePreemptionSpec, KueueError> {
    use fleetsim_policies::preemption::{ReclaimWithinCohort as R, WithinQueue as W};
    use fleetsim_policies::{BorrowWithinCohort, BorrowWithinCohortPolicy as B};
    let Some(p) = get(spec, "preemption") else {
        return Ok(QueuePreemptionSpec::default());
    };
    check_keys(
        c,
        p,
        "spec.preemption",
        &[
            "withinClusterQueue",
            "reclaimWithinCohort",
            "borrowWithinCohort",
        ],
    )?;
    let within_queue = enum_field(
        c,
        p,
        "withinClusterQueue",
        "spec.preemption.withinClusterQueue",
        &[
            ("Never", W::Never),
            ("LowerPriority", W::LowerPriority),
            ("LowerOrNewerEqualPriority", W::LowerOrNewerEqualPriority),
        ],
        W::Never,
    )?;
    let reclaim_within_cohort = enum_field(
        c,
        p,
        "reclaimWithinCohort",
        "spec.preemption.reclaimWithinCohort",
        &[
            ("Never", R::Never),
            ("LowerPriority", R::LowerPriority),
            ("Any", R::Any),
        ],
        R::Never,
    )?;
    let mut borrow_within_cohort = BorrowWithinCohort::default();
    if let Some(b) = get(p, "borrowWithinCohort") {
        let f = "spec.preemption.borrowWithinCohort";
        check_keys(c, b, f, &["policy", "maxPriorityThreshold"])?;
        borrow_within_cohort.policy = enum_field(
            c,
            b,
            "policy",
            &format!("{f}.policy"),
            &[("Never", B::Never), ("LowerPriority", B::LowerPriority)],
            B::Never,
        )?;
        borrow_within_cohort.max_priority_threshold = match get(b, "maxPriorityThreshold") {
            None => None,
            Some(Value::Number(n)) => Some(
                n.as_i64()
                    .and_then(|x| i32::try_from(x).ok())
                    .ok_or_else(|| {
                        c.err(
                            &format!("{f}.maxPriorityThreshold"),
                            "expected a 32-bit integer",
                        )
                    })?,
            ),
            Some(_) => {
                return Err(c.err(
                    &format!("{f}.maxPriorityThreshold"),
                    "expected a 32-bit integer",
                ))
            }
        };
        if borrow_within_cohort.policy != B::Never && reclaim_within_cohort == R::Never {
            return Err(c.err(
                &format!("{f}.policy"),
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never (Kueue refuses \
                 this ClusterQueue: preempting while borrowing needs reclaimWithinCohort)",
            ));
        }
    }
    Ok(QueuePreemptionSpec {
        within_queue,
        reclaim_within_cohort,
        borrow_within_cohort,
    })
}

fn resource_groups(
    c: &Ctx,
    spec: &Value,
    flavors: &BTreeSet<String>,
    has_cohort: bool,
) -> Result<Vec<ResourceGroup>, KueueError> {
    let mut out = Vec::new();
    for (gi, g) in seq(c, spec, "resourceGroups", "spec.resourceGroups")?
        .iter()
        .enumerate()
    {
        let gf = format!("spec.resourceGroups[{gi}]");
        check_keys(c, g, &gf, &["coveredResources", "flavors"])?;
        let covered: Vec<String> =
            seq(c, g, "coveredResources", &format!("{gf}.coveredResources"))?
                .iter()
                .map(|r| r.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    c.err(
                        &format!("{gf}.coveredResources"),
                        "expected a list of names",
                    )
                })?;
        let mut fl = Vec::new();
        for (fi, f) in seq(c, g, "flavors", &format!("{gf}.flavors"))?
            .iter()
            .enumerate()
        {
            let ff = format!("{gf}.flavors[{fi}]");
            check_keys(c, f, &ff, &["name", "resources"])?;
            let name = string(c, f, "name", &format!("{ff}.name"))?
                .ok_or_else(|| c.err(&format!("{ff}.name"), "missing"))?;
            if !flavors.contains(&name) {
                return Err(c.err(
                    &format!("{ff}.name"),
                    format!("`{name}` is not a declared ResourceFlavor"),
                ));
            }
            let mut resources = Vec::new();
            for (ri, r) in seq(c, f, "resources", &format!("{ff}.resources"))?
                .iter()
                .enumerate()
            {
                let rf = format!("{ff}.resources[{ri}]");
                check_keys(
                    c,
                    r,
                    &rf,
                    &["name", "nominalQuota", "borrowingLimit", "lendingLimit"],
                )?;
                let rname = string(c, r, "name", &format!("{rf}.name"))?
                    .ok_or_else(|| c.err(&format!("{rf}.name"), "missing"))?;
                let nominal = get(r, "nominalQuota")
                    .ok_or_else(|| c.err(&format!("{rf}.nominalQuota"), "missing"))
                    .and_then(|v| quantity(c, v, &format!("{rf}.nominalQuota")))?;
                let borrowing_limit = get(r, "borrowingLimit")
                    .map(|v| quantity(c, v, &format!("{rf}.borrowingLimit")))
                    .transpose()?;
                let lending_limit = get(r, "lendingLimit")
                    .map(|v| quantity(c, v, &format!("{rf}.lendingLimit")))
                    .transpose()?;
                if borrowing_limit.is_some() && !has_cohort {
                    return Err(c.err(
                        &format!("{rf}.borrowingLimit"),
                        "set on a queue without a cohort (nothing to borrow from)",
                    ));
                }
                if lending_limit.is_some_and(|l| l > nominal) {
                    return Err(c.err(&format!("{rf}.lendingLimit"), "above nominalQuota"));
                }
                if ACCELERATOR_RESOURCES.contains(&rname.as_str()) {
                    if let Some(other) = resources
                        .iter()
                        .find(|x: &&ResourceQuota| ACCELERATOR_RESOURCES.contains(&x.name.as_str()))
                    {
                        return Err(c.err(
                            &format!("{rf}.name"),
                            format!(
                                "flavor `{name}` already has a quota for the accelerator resource `{}`: fleetsim gives a flavor one accelerator quota (use one ResourceFlavor per accelerator)",
                                other.name
                            ),
                        ));
                    }
                }
                resources.push(ResourceQuota {
                    name: rname,
                    nominal,
                    borrowing_limit,
                    lending_limit,
                });
            }
            let names: Vec<&str> = resources.iter().map(|r| r.name.as_str()).collect();
            let want: Vec<&str> = covered.iter().map(String::as_str).collect();
            if names != want {
                return Err(c.err(
                    &format!("{ff}.resources"),
                    format!("resources {names:?} must be the coveredResources {want:?}, in order"),
                ));
            }
            fl.push(FlavorQuotas {
                flavor: name,
                resources,
            });
        }
        out.push(ResourceGroup {
            covered_resources: covered,
            flavors: fl,
        });
    }
    Ok(out)
}

/// Splits multi-document YAML at `---` lines: (first line of the document, text).
fn documents(text: &str) -> Vec<(u64, String)> {
    let mut docs = vec![(1u64, String::new())];
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("---")
            && line[3..]
                .trim_start()
                .chars()
                .next()
                .is_none_or(|c| c == '#')
        {
            docs.push((i as u64 + 2, String::new()));
        } else {
            let d = docs.last_mut().expect("non-empty");
            d.1.push_str(line);
            d.1.push('\n');
        }
    }
    docs
}

/// `text` with every `line N` (a position within one document) moved by `offset` lines: the
/// line in the file.
fn absolute_lines(text: &str, offset: u64) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("line ") {
        let (head, tail) = rest.split_at(i + 5);
        out.push_str(head);
        let n = tail.bytes().take_while(u8::is_ascii_digit).count();
        match tail[..n].parse::<u64>() {
            Ok(v) => out.push_str(&(v + offset).to_string()),
            Err(_) => out.push_str(&tail[..n]),
        }
        rest = &tail[n..];
    }
    out.push_str(rest);
    out
}

/// Reads and validates Kueue manifests from `path`, a file or a directory (see
/// [`load_paths`]).
///
/// # Errors
/// [`KueueError`] naming the file, line and field of the first problem (a file that cannot be
/// read is named with the reason only).
pub fn load(path: &Path) -> Result<KueueConfig, KueueError> {
    load_paths(&[path.to_path_buf()])
}

/// The manifest files of `paths`: each file as given, each directory's `*.yaml` and `*.yml`
/// files (not its subdirectories) in name order.
///
/// # Errors
/// [`KueueError`] (line 0) for a path that cannot be read or a directory without manifests.
pub fn manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, KueueError> {
    let io = |p: &Path, m: String| KueueError {
        path: p.to_path_buf(),
        line: 0,
        field: "-".into(),
        message: m,
    };
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| io(p, format!("cannot read the Kueue manifests directory: {e}")))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                f.is_file()
                    && f.extension()
                        .and_then(|x| x.to_str())
                        .is_some_and(|x| x == "yaml" || x == "yml")
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(io(
                p,
                "the Kueue manifests directory has no .yaml or .yml file".into(),
            ));
        }
        out.extend(files);
    }
    Ok(out)
}

/// Reads and validates the Kueue manifests of several files and directories as one
/// configuration ([`manifest_files`]; objects may refer to objects of other files: a
/// ClusterQueue in one file to the ResourceFlavors of another).
///
/// # Errors
/// As [`load`].
pub fn load_paths(paths: &[PathBuf]) -> Result<KueueConfig, KueueError> {
    let mut sources = Vec::new();
    for f in manifest_files(paths)? {
        let text = crate::input_cap::read_capped(
            &f,
            crate::input_cap::MAX_MANIFEST_BYTES,
            "Kueue manifest file",
        )
        .map_err(|e| KueueError {
            path: f.clone(),
            line: 0,
            field: "-".into(),
            message: format!("cannot read the Kueue manifests: {e}"),
        })?;
        sources.push((f, text));
    }
    let name = paths.first().cloned().unwrap_or_default();
    parse_sources(&sources, &name)
}

/// Parses and validates manifest text; `path` names it in errors.
///
/// # Errors
/// As [`load`].
pub fn parse(text: &str, path: &Path) -> Result<KueueConfig, KueueError> {
    parse_sources(&[(path.to_path_buf(), text.to_string())], path)
}

/// One YAML document of a manifest file.
struct Doc {
    path: PathBuf,
    /// Its first line in the file.
    line: u64,
    text: String,
}

/// Parses and validates the manifests of `(file, text)` pairs as one configuration; `name`
/// (the file or directory the scenario gives) names the whole in errors about it.
/// An object of the manifests: its document, its place in it (empty, or `items[N].` for
/// an item of a `List`) and its value.
type Object = (usize, String, Value);

/// Splits `(file, text)` pairs into their documents and objects: a Helm template is refused,
/// YAML nesting bounded, `List` exports expanded; null documents left out.
///
/// # Errors
/// A template, a document nested too deep, or bad YAML, naming the file and line.
fn parse_objects(sources: &[(PathBuf, String)]) -> Result<(Vec<Doc>, Vec<Object>), KueueError> {
    // A Helm chart's templates are not manifests: say so before the YAML parser fails on
    // `{{ … }}` with a message about flow mappings.
    for (p, text) in sources {
        if let Some(i) = template_line(text) {
            return Err(KueueError {
                path: p.clone(),
                line: i as u64 + 1,
                field: "-".into(),
                message: "this is a template, render it first (helm template …, or the \
                          chart's own renderer) and give fleetsim the rendered manifests"
                    .into(),
            });
        }
    }
    // The YAML parser's time grows with the square of the nesting depth: bound it first.
    for (p, text) in sources {
        crate::input_cap::yaml_nesting(text, crate::input_cap::MAX_YAML_DEPTH).map_err(
            |(line, message)| KueueError {
                path: p.clone(),
                line,
                field: "-".into(),
                message,
            },
        )?;
    }
    // First pass: parse every document, collect flavors (referenced by queues).
    let docs: Vec<Doc> = sources
        .iter()
        .flat_map(|(p, text)| {
            documents(text).into_iter().map(|(line, text)| Doc {
                path: p.clone(),
                line,
                text,
            })
        })
        .collect();
    // (document, `items[N].` prefix for an item of a List, object)
    let mut objects: Vec<(usize, String, Value)> = Vec::new();
    for (di, d) in docs.iter().enumerate() {
        let line = d.line;
        let v: Value = super::yaml::from_str(&d.text).map_err(|e| {
            // The message alone (no source snippet: its line numbers would be the
            // document's, not the file's).
            let text = e.without_snippet().to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text).to_string();
            let (abs, message) = match e.location() {
                Some(l) => {
                    let abs = line + l.line().saturating_sub(1);
                    // The parser's own position is within the document: give the file's
                    // line (in the error's place) and the column.
                    let rel = format!("line {} column {}: ", l.line(), l.column());
                    let m = match text.strip_prefix(&rel) {
                        Some(m) => format!("{m} at column {}", l.column()),
                        None => text.clone(),
                    };
                    (abs, absolute_lines(&m, line - 1))
                }
                None => (line, absolute_lines(&text, line - 1)),
            };
            let message = if message.contains("as u128") || message.contains("as i128") {
                format!("a number out of range ({message})")
            } else {
                message
            };
            KueueError {
                path: d.path.clone(),
                line: abs,
                field: "-".into(),
                message: format!("bad YAML: {message}"),
            }
        })?;
        if v.is_null() {
            continue;
        }
        // `kubectl get … -o yaml` exports: a `List` (or `ClusterQueueList`, …) of objects.
        let is_list = get(&v, "kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
            && get(&v, "items").is_some_and(Value::is_sequence);
        if is_list {
            let items = get(&v, "items")
                .and_then(Value::as_sequence)
                .expect("checked");
            for (i, item) in items.iter().enumerate() {
                objects.push((di, format!("items[{i}]."), item.clone()));
            }
            continue;
        }
        objects.push((di, String::new(), v));
    }
    Ok((docs, objects))
}

fn parse_sources(sources: &[(PathBuf, String)], name: &Path) -> Result<KueueConfig, KueueError> {
    let path = name;
    let (docs, objects) = parse_objects(sources)?;
    fn ctx<'a>(docs: &'a [Doc], di: usize, prefix: &'a str) -> Ctx<'a> {
        Ctx {
            path: &docs[di].path,
            line: docs[di].line,
            text: &docs[di].text,
            prefix,
        }
    }
    if objects.is_empty() {
        return Err(KueueError {
            path: path.to_path_buf(),
            line: 0,
            field: "-".into(),
            message: "no Kubernetes objects (the file is empty or only comments); expected Kueue manifests with at least one ClusterQueue".into(),
        });
    }
    let mut cfg = KueueConfig {
        path: path.to_path_buf(),
        ..KueueConfig::default()
    };
    let kind_of = |c: &Ctx, v: &Value| -> Result<(String, String, String), KueueError> {
        if !v.is_mapping() {
            let what = match v {
                Value::Sequence(_) => "a list".to_string(),
                other => format!("{other:?}"),
            };
            return Err(c.err(
                "-",
                format!("a document must be a Kubernetes object (a mapping with apiVersion and kind), found {what}"),
            ));
        }
        let api = string(c, v, "apiVersion", "apiVersion")?.ok_or_else(|| {
            c.err(
                "apiVersion",
                "missing: every object needs apiVersion and kind",
            )
        })?;
        let kind = string(c, v, "kind", "kind")?
            .ok_or_else(|| c.err("kind", "missing: every object needs apiVersion and kind"))?;
        let name = get(v, "metadata")
            .map(|m| string(c, m, "name", "metadata.name"))
            .transpose()?
            .flatten()
            .unwrap_or_default();
        Ok((api, kind, name))
    };
    let mut flavor_names = BTreeSet::new();
    for (di, prefix, v) in &objects {
        let c = ctx(&docs, *di, prefix);
        let (api, kind, name) = kind_of(&c, v)?;
        if api.starts_with("kueue.x-k8s.io/") && kind == "ResourceFlavor" {
            flavor_names.insert(name);
        }
    }
    // LocalQueue `namespace/name` → where it is declared (for the cross-reference check).
    let mut lq_at: BTreeMap<String, (usize, String)> = BTreeMap::new();
    // ClusterQueue → where it is declared (for its admission checks' cross-references).
    let mut cq_checks_at: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut cohort_lines: BTreeMap<String, (PathBuf, u64, String)> = BTreeMap::new();
    for (di, prefix, v) in &objects {
        let c = ctx(&docs, *di, prefix);
        let (api, kind, name) = kind_of(&c, v)?;
        if let (Some(version), "Configuration") =
            (api.strip_prefix("config.kueue.x-k8s.io/"), kind.as_str())
        {
            let conf = configuration::parse(&c, v, version)?;
            set_controller(&mut cfg, conf, &c)?;
            continue;
        }
        if (api.as_str(), kind.as_str()) == ("scheduling.k8s.io/v1", "PriorityClass") {
            let value = match get(v, "value") {
                Some(Value::Number(n)) => n.as_i64().and_then(|x| i32::try_from(x).ok()),
                _ => None,
            }
            .ok_or_else(|| c.err("value", "expected a 32-bit integer"))?;
            cfg.pod_priority_classes.insert(name, value);
            continue;
        }
        if let Some(inner) = configmap_configuration(v) {
            // Helm's `kueue-manager-config`: the Configuration as a string.
            let inner_v: Value = super::yaml::from_str(inner).map_err(|e| {
                c.err(
                    "data",
                    format!("the Kueue Configuration in this ConfigMap is not YAML: {e}"),
                )
            })?;
            let version = get(&inner_v, "apiVersion")
                .and_then(Value::as_str)
                .and_then(|a| a.strip_prefix("config.kueue.x-k8s.io/"))
                .unwrap_or("")
                .to_string();
            let ic = Ctx {
                path: c.path,
                line: c.line_of("data"),
                text: inner,
                prefix: "",
            };
            let conf = configuration::parse(&ic, &inner_v, &version)?;
            set_controller(&mut cfg, conf, &c)?;
            continue;
        }
        let Some(version) = api.strip_prefix("kueue.x-k8s.io/") else {
            *cfg.ignored.entry(format!("{api}/{kind}")).or_insert(0) += 1;
            continue;
        };
        match kind.as_str() {
            "ClusterQueue" | "Cohort" | "LocalQueue" | "ResourceFlavor" | "WorkloadPriorityClass"
            | "AdmissionCheck" | "ProvisioningRequestConfig" | "Topology" => {}
            k if OTHER_KINDS.contains(&k) => {
                *cfg.ignored.entry(format!("{api}/{kind}")).or_insert(0) += 1;
                cfg.notes.push(format!(
                    "{kind} `{name}` is not simulated (fleetsim reads {})",
                    "ClusterQueue, Cohort, LocalQueue, ResourceFlavor and WorkloadPriorityClass"
                ));
                continue;
            }
            _ => {
                return Err(c.err(
                    "kind",
                    format!(
                        "`{kind}` is not a Kueue kind (ClusterQueue, Cohort, LocalQueue, ResourceFlavor, WorkloadPriorityClass, AdmissionCheck, ProvisioningRequestConfig, Topology, {})",
                        OTHER_KINDS.join(", ")
                    ),
                ))
            }
        }
        let top: &[&str] = if kind == "WorkloadPriorityClass" {
            &["apiVersion", "kind", "metadata", "value", "description"]
        } else {
            &["apiVersion", "kind", "metadata", "spec", "status"]
        };
        check_keys(&c, v, "", top)?;
        let ok_version = match kind.as_str() {
            "Cohort" => matches!(version, "v1alpha1" | "v1beta1" | "v1beta2"),
            _ => matches!(version, "v1beta1" | "v1beta2"),
        };
        if !ok_version {
            return Err(c.err(
                "apiVersion",
                format!("`{api}` is not a supported version for {kind} (v1beta1, v1beta2)"),
            ));
        }
        if name.is_empty() {
            return Err(c.err("metadata.name", "missing"));
        }
        let beta2 = version == "v1beta2";
        let empty = Value::Null;
        let spec = get(v, "spec").unwrap_or(&empty);
        let dup = |c: &Ctx| c.err("metadata.name", format!("duplicate {kind} `{name}`"));
        match kind.as_str() {
            "ResourceFlavor" => {
                check_keys(
                    &c,
                    spec,
                    "spec",
                    &["nodeLabels", "nodeTaints", "tolerations", "topologyName"],
                )?;
                unsimulated_keys(
                    &format!("ResourceFlavor {name}"),
                    spec,
                    &[
                        (
                            "nodeTaints",
                            "fleetsim places jobs by accelerator model, not by taints",
                        ),
                        (
                            "tolerations",
                            "fleetsim places jobs by accelerator model, not by taints",
                        ),
                    ],
                    &mut cfg.notes,
                );
                let mut node_labels = BTreeMap::new();
                if let Some(Value::Mapping(m)) = get(spec, "nodeLabels") {
                    for (k, val) in m.iter() {
                        let (Some(k), Some(val)) = (k.as_str(), val.as_str()) else {
                            return Err(c.err("spec.nodeLabels", "labels must be strings"));
                        };
                        node_labels.insert(k.to_string(), val.to_string());
                    }
                }
                if cfg
                    .flavors
                    .insert(
                        name.clone(),
                        ResourceFlavor {
                            name: name.clone(),
                            topology_name: string(&c, spec, "topologyName", "spec.topologyName")?,
                            node_labels,
                            line: c.line_of("spec.nodeLabels"),
                            path: c.path.to_path_buf(),
                        },
                    )
                    .is_some()
                {
                    return Err(dup(&c));
                }
            }
            "ClusterQueue" => {
                check_keys(
                    &c,
                    spec,
                    "spec",
                    &[
                        "cohort",
                        "cohortName",
                        "queueingStrategy",
                        "namespaceSelector",
                        "resourceGroups",
                        "preemption",
                        "fairSharing",
                        "flavorFungibility",
                        "stopPolicy",
                        "admissionChecks",
                        "admissionChecksStrategy",
                        "admissionScope",
                        "concurrentAdmissionPolicy",
                    ],
                )?;
                if !beta2 && get(spec, "concurrentAdmissionPolicy").is_some() {
                    return Err(c.err(
                        "spec.concurrentAdmissionPolicy",
                        format!("not a {version} field: it exists in kueue.x-k8s.io/v1beta2 only"),
                    ));
                }
                unsimulated_keys(
                    &format!("ClusterQueue {name}"),
                    spec,
                    &[
                        ("namespaceSelector", "jobs reach a queue by its name (or a LocalQueue's), from any namespace"),
                        ("stopPolicy", "queues are always active"),
                        ("admissionScope", AFS),
                        ("concurrentAdmissionPolicy", "one admission at a time per workload: concurrent admission and flavor migration are not simulated"),
                    ],
                    &mut cfg.notes,
                );
                let (key, wrong) = if beta2 {
                    ("cohortName", "cohort")
                } else {
                    ("cohort", "cohortName")
                };
                if get(spec, wrong).is_some() {
                    return Err(c.err(
                        &format!("spec.{wrong}"),
                        format!("not a {version} field; use `spec.{key}`"),
                    ));
                }
                let cohort = string(&c, spec, key, &format!("spec.{key}"))?;
                let strategy = match string(&c, spec, "queueingStrategy", "spec.queueingStrategy")?
                    .as_deref()
                {
                    None | Some("BestEffortFIFO") => QueueingStrategy::BestEffortFifo,
                    Some("StrictFIFO") => QueueingStrategy::StrictFifo,
                    Some(other) => {
                        return Err(c.err(
                            "spec.queueingStrategy",
                            format!("`{other}` is not StrictFIFO or BestEffortFIFO"),
                        ))
                    }
                };
                let resource_groups = resource_groups(&c, spec, &flavor_names, cohort.is_some())?;
                let preemption = preemption(&c, spec)?;
                let fair_sharing_weight = fair_sharing_weight(&c, spec)?;
                let when_can_borrow = flavor_fungibility(&c, spec, &name, beta2, &mut cfg.notes)?;
                let admission_checks = checks::cluster_queue_checks(&c, spec)?;
                cq_checks_at.insert(name.clone(), (*di, prefix.clone()));
                let cq = ClusterQueue {
                    name: name.clone(),
                    cohort,
                    strategy,
                    resource_groups,
                    preemption,
                    fair_sharing_weight,
                    when_can_borrow,
                    admission_checks,
                };
                if cfg.cluster_queues.insert(name.clone(), cq).is_some() {
                    return Err(dup(&c));
                }
            }
            "Cohort" => {
                check_keys(
                    &c,
                    spec,
                    "spec",
                    &["parent", "parentName", "resourceGroups", "fairSharing"],
                )?;
                let (key, wrong) = if beta2 {
                    ("parentName", "parent")
                } else {
                    ("parent", "parentName")
                };
                if get(spec, wrong).is_some() {
                    return Err(c.err(
                        &format!("spec.{wrong}"),
                        format!("not a {version} field; use `spec.{key}`"),
                    ));
                }
                let parent = string(&c, spec, key, &format!("spec.{key}"))?;
                let pf = format!("spec.{key}");
                cohort_lines.insert(name.clone(), (c.path.to_path_buf(), c.line_of(&pf), pf));
                let resource_groups = resource_groups(&c, spec, &flavor_names, true)?;
                let fair_sharing_weight = fair_sharing_weight(&c, spec)?;
                if cfg
                    .cohorts
                    .insert(
                        name.clone(),
                        Cohort {
                            name: name.clone(),
                            parent,
                            resource_groups,
                            fair_sharing_weight,
                        },
                    )
                    .is_some()
                {
                    return Err(dup(&c));
                }
            }
            "LocalQueue" => {
                check_keys(
                    &c,
                    spec,
                    "spec",
                    &["clusterQueue", "stopPolicy", "fairSharing"],
                )?;
                unsimulated_keys(
                    &format!("LocalQueue {name}"),
                    spec,
                    &[
                        ("stopPolicy", "queues are always active"),
                        ("fairSharing", AFS),
                    ],
                    &mut cfg.notes,
                );
                let namespace = get(v, "metadata")
                    .map(|m| string(&c, m, "namespace", "metadata.namespace"))
                    .transpose()?
                    .flatten()
                    .unwrap_or_else(|| "default".to_string());
                let cluster_queue = string(&c, spec, "clusterQueue", "spec.clusterQueue")?
                    .ok_or_else(|| c.err("spec.clusterQueue", "missing"))?;
                let key = format!("{namespace}/{name}");
                if cfg.local_queues.contains_key(&key) {
                    return Err(dup(&c));
                }
                lq_at.insert(key.clone(), (*di, prefix.clone()));
                cfg.local_queues.insert(
                    key,
                    LocalQueue {
                        namespace,
                        name: name.clone(),
                        cluster_queue,
                    },
                );
                // The ClusterQueue is checked once every object is read (below).
            }
            "Topology" => {
                let levels = topology::levels(&c, spec)?;
                if cfg.topologies.insert(name.clone(), levels).is_some() {
                    return Err(dup(&c));
                }
            }
            "AdmissionCheck" => {
                let ac = checks::admission_check(&c, &name, spec)?;
                if cfg.admission_checks.insert(name.clone(), ac).is_some() {
                    return Err(dup(&c));
                }
            }
            "ProvisioningRequestConfig" => {
                let pc = checks::provisioning_config(&c, &name, spec)?;
                if cfg.provisioning_configs.insert(name.clone(), pc).is_some() {
                    return Err(dup(&c));
                }
            }
            "WorkloadPriorityClass" => {
                let value = match get(v, "value") {
                    Some(Value::Number(n)) => n.as_i64().and_then(|x| i32::try_from(x).ok()),
                    _ => None,
                }
                .ok_or_else(|| c.err("value", "expected a 32-bit integer"))?;
                let description = string(&c, v, "description", "description")?;
                if cfg
                    .priority_classes
                    .insert(
                        name.clone(),
                        PriorityClass {
                            name: name.clone(),
                            value,
                            description,
                        },
                    )
                    .is_some()
                {
                    return Err(dup(&c));
                }
            }
            _ => {
                *cfg.ignored.entry(format!("{api}/{kind}")).or_insert(0) += 1;
            }
        }
    }
    // A file of ResourceFlavors (or Cohorts) alone is a configuration too: the scenario's
    // `[[queues]]` may use them. A file with no Kueue object at all is not.
    if cfg.cluster_queues.is_empty()
        && cfg.flavors.is_empty()
        && cfg.cohorts.is_empty()
        && cfg.local_queues.is_empty()
        && cfg.priority_classes.is_empty()
    {
        return Err(KueueError {
            path: path.to_path_buf(),
            line: 0,
            field: "-".into(),
            message: format!(
                "no kueue.x-k8s.io ClusterQueue, ResourceFlavor, Cohort or LocalQueue among the {} object(s): nothing to simulate quota with",
                objects.len()
            ),
        });
    }
    // Cross references.
    for (key, lq) in &cfg.local_queues {
        if !cfg.cluster_queues.contains_key(&lq.cluster_queue) {
            let (di, prefix) = &lq_at[key];
            return Err(ctx(&docs, *di, prefix).err(
                "spec.clusterQueue",
                format!("`{}` is not a declared ClusterQueue", lq.cluster_queue),
            ));
        }
    }
    for f in cfg.flavors.values() {
        if let Some(t) = &f.topology_name {
            if !cfg.topologies.contains_key(t) {
                cfg.notes.push(format!(
                    "ResourceFlavor {}: Topology `{t}` is not among the manifests: Kueue keeps its ClusterQueues inactive (TopologyNotFound) until it exists; fleetsim uses the flavor without Topology-Aware Scheduling",
                    f.name
                ));
            }
        }
    }
    for cq in cfg.cluster_queues.values() {
        for (check, on) in &cq.admission_checks {
            let (di, prefix) = &cq_checks_at[&cq.name];
            let c = ctx(&docs, *di, prefix);
            if !cfg.admission_checks.contains_key(check) {
                cfg.notes.push(format!(
                    "ClusterQueue {}: AdmissionCheck `{check}` is not among the manifests: Kueue keeps this ClusterQueue inactive (AdmissionCheckNotFound) until it exists; fleetsim admits its workloads without the check",
                    cq.name
                ));
                continue;
            }
            let flavors: Vec<&str> = cq
                .resource_groups
                .iter()
                .flat_map(|g| g.flavors.iter().map(|f| f.flavor.as_str()))
                .collect();
            if let Some(f) = on.iter().find(|f| !flavors.contains(&f.as_str())) {
                return Err(c.err(
                    "spec.admissionChecksStrategy",
                    format!("onFlavors names `{f}`, not a flavor of this ClusterQueue"),
                ));
            }
        }
    }
    let named: Vec<String> = cfg
        .cluster_queues
        .values()
        .filter_map(|q| q.cohort.clone())
        .chain(cfg.cohorts.values().filter_map(|c| c.parent.clone()))
        .collect();
    for n in named {
        cfg.cohorts.entry(n.clone()).or_insert(Cohort {
            name: n,
            parent: None,
            resource_groups: Vec::new(),
            fair_sharing_weight: None,
        });
    }
    for start in cfg.cohorts.keys() {
        let mut seen = BTreeSet::new();
        let mut cur = Some(start.clone());
        let mut prev: Option<String> = None;
        while let Some(n) = cur {
            if !seen.insert(n.clone()) {
                // The Cohort whose parent closes the cycle.
                let closing = prev.unwrap_or_else(|| n.clone());
                let (file, line, field) = cohort_lines.get(&closing).cloned().unwrap_or((
                    path.to_path_buf(),
                    0,
                    "spec.parent".into(),
                ));
                return Err(KueueError {
                    path: file,
                    line,
                    field,
                    message: format!(
                        "Cohort `{closing}`: parent `{n}` closes a cycle in the cohort tree"
                    ),
                });
            }
            cur = cfg.cohorts.get(&n).and_then(|c| c.parent.clone());
            prev = Some(n);
        }
    }
    Ok(cfg)
}

/// Resources that count as accelerators (`gpus` in a quota flavor).
pub const ACCELERATOR_RESOURCES: [&str; 3] = [GPU_RESOURCE, "amd.com/gpu", "google.com/tpu"];

/// Node-label keys whose value names a ResourceFlavor's accelerator model.
pub const MODEL_LABELS: [&str; 4] = [
    "nvidia.com/gpu.product",
    "amd.com/gpu.product-name",
    "cloud.google.com/gke-accelerator",
    "cloud.google.com/gke-tpu-accelerator",
];

/// The accelerator-catalog model a node label's value names ([`crate::catalog`]), for
/// the product labels clusters carry: NVIDIA GPU feature discovery's `nvidia.com/gpu.product`
/// (`NVIDIA-H100-80GB-HBM3`, `NVIDIA-L4`, `Tesla-V100-SXM2-16GB`, `NVIDIA-A10G`), GKE's
/// `cloud.google.com/gke-accelerator` (`nvidia-l4`, `nvidia-tesla-v100`, `nvidia-a100-80gb`)
/// and `cloud.google.com/gke-tpu-accelerator` (`tpu-v5p-slice`), AMD's
/// `amd.com/gpu.product-name` (`AMD_Instinct_MI300X`). Tokens are the value split at `-`, `_`,
/// `.`, `/` and spaces, compared ignoring case: a V100 is `V100M32` with a `32GB` token, else
/// `V100M16` (GKE's `nvidia-tesla-v100` is the 16 GB part); `A10G` is the `A10`; a `tpu` with
/// a `v5p` token is `TPUv5p`; otherwise the first token that is a catalog name. A value naming
/// no catalog model is returned unchanged, for the fleet's own model names to match (and for
/// an error naming it when none does).
pub fn catalog_model(label: &str, value: &str) -> String {
    let tokens: Vec<String> = value
        .split(|c: char| matches!(c, '-' | '_' | '.' | '/') || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let has = |t: &str| tokens.iter().any(|x| x == t);
    let name = if has("v100") {
        Some(if has("32gb") { "V100M32" } else { "V100M16" })
    } else if has("a10g") {
        Some("A10")
    } else if label == "cloud.google.com/gke-tpu-accelerator" || has("tpu") {
        has("v5p").then_some("TPUv5p")
    } else {
        tokens.iter().find_map(|t| {
            crate::catalog::CATALOG
                .iter()
                .find(|a| a.name.eq_ignore_ascii_case(t))
                .map(|a| a.name)
        })
    };
    name.map_or_else(|| value.to_string(), str::to_string)
}

/// A Kueue configuration as scenario quota settings (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct KueueQuota {
    /// One queue per ClusterQueue, with its LocalQueues as `local_queues`.
    pub queues: Vec<QueueSpec>,
    /// Every cohort (declared or only named).
    pub cohorts: Vec<CohortSpec>,
    /// One flavor per ResourceFlavor.
    pub flavors: Vec<FlavorSpec>,
    /// What was read but is not simulated, one sentence each (printed by `fleetsim validate`).
    pub unsimulated: Vec<String>,
    /// The flavors whose nodes a ProvisioningRequest check provisions ([`checks`]).
    pub provisioned: Vec<checks::Provisioned>,
    /// Fair sharing (the `Configuration`'s `fairSharing`): its preemption strategies. Kueue
    /// then admits in order of dominant resource share (`[policy] admission_order = "drf"`)
    /// and preempts across ClusterQueues by these strategies.
    pub fair_sharing: Option<Vec<fleetsim_policies::preemption::FairStrategy>>,
    /// The `Configuration`'s `waitForPodsReady`, as `[policy] wait_for_pods_ready`.
    pub wait_for_pods_ready: Option<fleetsim_policies::spec::WaitForPodsReadySpec>,
}

fn resource_quota(r: &ResourceQuota, scale: f64) -> ResourceQuotaSpec {
    ResourceQuotaSpec {
        nominal: r.nominal.as_f64() / scale,
        borrowing_limit: r.borrowing_limit.map(|q| q.as_f64() / scale),
        lending_limit: r.lending_limit.map(|q| q.as_f64() / scale),
    }
}

/// Quota flavors of a ClusterQueue's or Cohort's resource groups: every flavor of a group
/// that covers an accelerator resource (or of every group when none does), with its
/// accelerator, `cpu` (cores) and `memory` (GiB) quotas.
fn flavor_quotas(
    owner: &str,
    groups: &[ResourceGroup],
    notes: &mut Vec<String>,
) -> Vec<FlavorQuotaSpec> {
    let is_accel = |g: &ResourceGroup| {
        g.covered_resources
            .iter()
            .any(|r| ACCELERATOR_RESOURCES.contains(&r.as_str()))
    };
    let any_accel = groups.iter().any(is_accel);
    let mut out = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        if any_accel && !is_accel(g) {
            notes.push(format!(
                "{owner}: resource group {gi} ({}) is not simulated: fleetsim assigns one flavor for all of a job's resources, taken from the accelerator group",
                g.covered_resources.join(", ")
            ));
            continue;
        }
        for f in &g.flavors {
            let mut q = FlavorQuotaSpec {
                name: f.flavor.clone(),
                gpus: None,
                cpus: None,
                memory_gib: None,
            };
            for r in &f.resources {
                match r.name.as_str() {
                    n if ACCELERATOR_RESOURCES.contains(&n) => {
                        q.gpus = Some(resource_quota(r, 1.0))
                    }
                    "cpu" => q.cpus = Some(resource_quota(r, 1.0)),
                    // Bytes (a quantity in milli-units / 1000) to GiB.
                    "memory" => q.memory_gib = Some(resource_quota(r, (1u64 << 30) as f64)),
                    other => notes.push(format!(
                        "{owner}: flavor `{}` resource `{other}` is not simulated",
                        f.flavor
                    )),
                }
            }
            out.push(q);
        }
    }
    out
}

impl KueueConfig {
    /// The queue name jobs reach a LocalQueue by: its name, or `namespace/name` when
    /// LocalQueues of that name in other namespaces submit to other ClusterQueues.
    pub fn local_queue_name(&self, lq: &LocalQueue) -> String {
        let ambiguous = self
            .local_queues
            .values()
            .any(|o| o.name == lq.name && o.cluster_queue != lq.cluster_queue);
        if ambiguous {
            format!("{}/{}", lq.namespace, lq.name)
        } else {
            lq.name.clone()
        }
    }

    /// The scenario quota settings the manifests map onto (see the module docs): cohorts
    /// and ClusterQueues in name order, LocalQueues as each queue's `local_queues`.
    pub fn quota(&self) -> KueueQuota {
        let mut notes = self.notes.clone();
        let (provisioned, check_notes) = self.provisioning();
        notes.extend(check_notes);
        notes.extend(self.tas_notes());
        let fair_sharing = self
            .controller
            .as_ref()
            .and_then(|c| c.fair_sharing.clone());
        let wait_for_pods_ready = self
            .controller
            .as_ref()
            .and_then(|c| c.wait_for_pods_ready.as_ref())
            .map(configuration::WaitForPodsReady::spec);
        let flavors = self
            .flavors
            .values()
            .map(|f| {
                let models: Vec<String> = MODEL_LABELS
                    .iter()
                    .filter_map(|k| f.node_labels.get(*k).map(|v| catalog_model(k, v)))
                    .collect();
                if models.is_empty() && !f.node_labels.is_empty() {
                    let labels: Vec<String> =
                        f.node_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    notes.push(format!(
                        "ResourceFlavor {}: its nodeLabels ({}) name no accelerator model, so it covers every model of the fleet; to restrict it, add a label among {} or declare [[flavors]] name = \"{}\" with models = [...] in the scenario",
                        f.name,
                        labels.join(", "),
                        MODEL_LABELS.join(", "),
                        f.name
                    ));
                }
                FlavorSpec {
                    name: f.name.clone(),
                    models,
                    source: Some(format!(
                        "{}: line {}: ResourceFlavor `{}`",
                        f.path.display(),
                        f.line,
                        f.name
                    )),
                }
            })
            .collect();
        let cohorts = self
            .cohorts
            .values()
            .map(|c| CohortSpec {
                name: c.name.clone(),
                parent: c.parent.clone(),
                weight: c.fair_sharing_weight.map(Quantity::as_f64),
                flavors: flavor_quotas(
                    &format!("Cohort {}", c.name),
                    &c.resource_groups,
                    &mut notes,
                ),
            })
            .collect();
        let queues = self
            .cluster_queues
            .values()
            .map(|cq| QueueSpec {
                source: Some(format!("ClusterQueue `{}`", cq.name)),
                name: cq.name.clone(),
                strategy: Some(cq.strategy),
                max_gpus: None,
                default_time_limit_s: None,
                max_time_limit_s: None,
                cohort: cq.cohort.clone(),
                weight: cq.fair_sharing_weight.map(Quantity::as_f64),
                flavor_fungibility: cq.when_can_borrow,
                tier: None,
                flavors: flavor_quotas(
                    &format!("ClusterQueue {}", cq.name),
                    &cq.resource_groups,
                    &mut notes,
                ),
                preemption: {
                    let mut p = cq.preemption;
                    if fair_sharing.is_some()
                        && p.borrow_within_cohort != fleetsim_policies::BorrowWithinCohort::default()
                    {
                        notes.push(format!(
                            "ClusterQueue {}: `spec.preemption.borrowWithinCohort` is not simulated: Kueue applies it only without fair sharing, and the Configuration turns fair sharing on",
                            cq.name
                        ));
                        p.borrow_within_cohort = Default::default();
                    }
                    // Under fair sharing every ClusterQueue's own rules (Kueue's defaults
                    // too) gate its fair-sharing victims.
                    (fair_sharing.is_some() || p != QueuePreemptionSpec::default()).then_some(p)
                },
                local_queues: {
                    let mut v: Vec<String> = self
                        .local_queues
                        .values()
                        .filter(|lq| lq.cluster_queue == cq.name)
                        .map(|lq| self.local_queue_name(lq))
                        .filter(|n| *n != cq.name)
                        .collect();
                    v.sort();
                    v.dedup();
                    v
                },
            })
            .collect();
        let mut by_name: BTreeMap<&str, Vec<&LocalQueue>> = BTreeMap::new();
        for lq in self.local_queues.values() {
            by_name.entry(lq.name.as_str()).or_default().push(lq);
        }
        for (name, lqs) in by_name {
            if lqs.len() > 1 {
                let places: Vec<String> = lqs
                    .iter()
                    .map(|lq| format!("{}/{name} → {}", lq.namespace, lq.cluster_queue))
                    .collect();
                notes.push(if self.local_queue_name(lqs[0]) == name {
                    format!(
                        "LocalQueue `{name}` is declared in {} namespaces ({}), all of one ClusterQueue: a job's queue `{name}` reaches it (trace jobs carry no namespace)",
                        lqs.len(),
                        places.join(", ")
                    )
                } else {
                    format!(
                        "LocalQueue `{name}` is declared in {} namespaces for different ClusterQueues ({}): trace jobs carry no namespace, so a job reaches one as `NAMESPACE/{name}` (its queue); a bare `{name}` is an unknown queue",
                        lqs.len(),
                        places.join(", ")
                    )
                });
            }
        }
        if !self.priority_classes.is_empty() {
            notes.push(format!(
                "{} WorkloadPriorityClass(es) read and validated, not applied: job priorities come from the trace",
                self.priority_classes.len()
            ));
        }
        KueueQuota {
            queues,
            cohorts,
            flavors,
            unsimulated: notes,
            fair_sharing,
            provisioned,
            wait_for_pods_ready,
        }
    }
}

/// Adds the Kueue manifests' settings to a scenario, and their notes to `scenario.notes`.
/// What the scenario declares itself wins: a `[[queues]]`, `[[cohorts]]` or `[[flavors]]`
/// entry with the same name as a ClusterQueue, Cohort or ResourceFlavor replaces it, except
/// that a queue also keeps the ClusterQueue's LocalQueues as `local_queues`.
///
/// `[policy]` follows Kueue where the scenario leaves the default: `admission_order` is
/// `drf` with fair sharing on (the `Configuration`'s `fairSharing`), else `nominal-first`
/// (Kueue's classic order: workloads that fit their nominal quota before borrowing ones);
/// with fair
/// sharing, `[policy.preemption]` gets its strategies (created with Kueue's defaults when
/// absent). With `[policy.preemption]`, a ClusterQueue without `spec.preemption` takes
/// Kueue's default (every policy `Never`), not the scenario's rules.
pub(crate) fn merge(scenario: &mut super::Scenario, k: KueueQuota) {
    use fleetsim_policies::registry::AdmissionOrder;
    let mut notes = k.unsimulated.clone();
    notes.extend(map_provisioning(scenario, &k));
    let scenario_preempts = scenario.policy.preemption.is_some();
    let mut defaulted = Vec::new();
    for mut q in k.queues {
        match scenario.queues.iter_mut().find(|e| e.name == q.name) {
            Some(e) => {
                for lq in q.local_queues {
                    if !e.local_queues.contains(&lq) {
                        e.local_queues.push(lq);
                    }
                }
            }
            None => {
                if scenario_preempts && q.preemption.is_none() {
                    q.preemption = Some(QueuePreemptionSpec::default());
                    defaulted.push(q.name.clone());
                }
                scenario.queues.push(q)
            }
        }
    }
    if !defaulted.is_empty() {
        let p = scenario.policy.preemption.as_ref().expect("checked");
        notes.push(format!(
            "ClusterQueues {} have no `spec.preemption`: Kueue's default (every policy Never) applies to their jobs as preemptors, not [policy.preemption]'s within_queue = {}, reclaim_within_cohort = {}",
            defaulted.join(", "),
            p.within_queue,
            p.reclaim_within_cohort
        ));
    }
    for c in k.cohorts {
        if !scenario.cohorts.iter().any(|e| e.name == c.name) {
            scenario.cohorts.push(c);
        }
    }
    for f in k.flavors {
        if !scenario.flavors.iter().any(|e| e.name == f.name) {
            scenario.flavors.push(f);
        }
    }
    let policy = &mut scenario.policy;
    let want = if k.fair_sharing.is_some() {
        AdmissionOrder::Drf
    } else {
        AdmissionOrder::NominalFirst
    };
    if policy.admission_order == AdmissionOrder::QueueOrder {
        policy.admission_order = want;
    } else if policy.admission_order != want {
        notes.push(format!(
            "[policy] admission_order = {} is the scenario's; Kueue's order here is {want} ({})",
            policy.admission_order,
            if want == AdmissionOrder::Drf {
                "fair sharing is on"
            } else {
                "classic: workloads within nominal quota first"
            }
        ));
    }
    match (&policy.wait_for_pods_ready, k.wait_for_pods_ready) {
        (None, w) => policy.wait_for_pods_ready = w,
        (Some(mine), Some(theirs)) if *mine != theirs => notes.push(format!(
            "[policy] wait_for_pods_ready is the scenario's; the Kueue Configuration's waitForPodsReady (timeout {} s) is not used",
            theirs.timeout_s
        )),
        _ => {}
    }
    if let Some(strategies) = &k.fair_sharing {
        match policy.preemption.as_mut() {
            None => {
                policy.preemption = Some(fleetsim_policies::spec::PreemptionSpec {
                    fair_sharing: strategies.clone(),
                    reclaim_guard: fleetsim_policies::preemption::ReclaimGuard::Off,
                    ..Default::default()
                })
            }
            Some(p) if p.fair_sharing.is_empty() => p.fair_sharing = strategies.clone(),
            Some(p) if p.fair_sharing != *strategies => notes.push(format!(
                "[policy.preemption] fair_sharing = {:?} is the scenario's; the Kueue Configuration's preemptionStrategies are {:?}",
                p.fair_sharing.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                strategies.iter().map(|s| s.as_str()).collect::<Vec<_>>()
            )),
            Some(_) => {}
        }
    }
    let weighted: Vec<&str> = scenario
        .queues
        .iter()
        .filter(|q| q.source.is_some() && q.weight.is_some())
        .map(|q| q.name.as_str())
        .chain(
            scenario
                .cohorts
                .iter()
                .filter(|c| c.weight.is_some())
                .map(|c| c.name.as_str()),
        )
        .collect();
    let uses_weights = matches!(
        scenario.policy.admission_order,
        AdmissionOrder::Drf | AdmissionOrder::Hdrf | AdmissionOrder::DecayedUsage
    ) || scenario
        .policy
        .preemption
        .as_ref()
        .is_some_and(|p| !p.fair_sharing.is_empty());
    if !weighted.is_empty() && !uses_weights {
        notes.push(format!(
            "`spec.fairSharing.weight` of {} has no effect: fair sharing is off (no Kueue Configuration with `fairSharing` among the manifests, and [policy] neither orders nor preempts by share)",
            weighted.join(", ")
        ));
    }
    scenario.notes.extend(notes);
}

/// Maps the ProvisioningRequest checks onto the scenario's fleet: the flavor's nodes must be
/// an autoscaled node group of its model (see [`checks`]); each such group is marked with
/// the check ([`super::schema::AutoscalingGroupSpec::admission_check`]: Kueue admits a
/// workload waiting for its nodes when they join). Returns a note per check.
fn map_provisioning(scenario: &mut super::Scenario, k: &KueueQuota) -> Vec<String> {
    let mut out = Vec::new();
    for p in &k.provisioned {
        let models: Vec<String> = k
            .flavors
            .iter()
            .chain(&scenario.flavors)
            .find(|f| f.name == p.flavor)
            .map(|f| f.models.clone())
            .unwrap_or_default();
        let at: Vec<(usize, usize)> = scenario
            .fleet
            .cells
            .iter()
            .enumerate()
            .flat_map(|(ci, c)| {
                c.autoscaling
                    .iter()
                    .enumerate()
                    .map(move |(gi, g)| (ci, gi, g))
            })
            .filter(|(_, _, g)| {
                let model = g.node.accelerator.clone().or_else(|| {
                    g.node.preset.as_ref().and_then(|n| {
                        crate::catalog::PRESETS
                            .iter()
                            .find(|x| x.name == n.as_str())
                            .map(|x| x.accelerator.to_string())
                    })
                });
                models.is_empty()
                    || model.is_some_and(|m| models.iter().any(|x| x.eq_ignore_ascii_case(&m)))
            })
            .map(|(ci, gi, _)| (ci, gi))
            .collect();
        let mut groups = Vec::new();
        for &(ci, gi) in &at {
            let c = &mut scenario.fleet.cells[ci];
            groups.push(format!("{}/{}", c.name, c.autoscaling[gi].name));
            c.autoscaling[gi].admission_check = Some(p.check.clone());
        }
        out.push(if groups.is_empty() {
            format!(
                "ClusterQueue {}: AdmissionCheck `{}` ({}) has the cluster autoscaler bring flavor {}'s nodes; the fleet has no autoscaled node group of its model{}: not simulated (its nodes are static); add [[fleet.cells.autoscaling]] with your autoscaler's provisioning_delay",
                p.cluster_queue,
                p.check,
                p.class,
                p.flavor,
                if models.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", models.join(", "))
                }
            )
        } else {
            format!(
                "ClusterQueue {}: AdmissionCheck `{}` ({}) is simulated by the autoscaled node group(s) {} for flavor {}: nodes come after their provisioning_delay; Kueue reserves the quota meanwhile, fleetsim charges it at the start; a workload waiting for them is admitted when they join (its waitForPodsReady timeout starts then)",
                p.cluster_queue,
                p.check,
                p.class,
                groups.join(", "),
                p.flavor
            )
        });
    }
    out
}

/// Warnings about a fleet with accelerators whose ClusterQueues give none: Kueue admits no
/// workload asking for a resource its ClusterQueue does not cover, while fleetsim does not
/// limit a resource no flavor quota names. `fleet_gpus` is the fleet's accelerator count.
pub fn gpu_quota_notes(scenario: &super::Scenario, fleet_gpus: u64) -> Vec<String> {
    if fleet_gpus == 0 {
        return Vec::new();
    }
    let kueue: Vec<&QueueSpec> = scenario
        .queues
        .iter()
        .filter(|q| q.source.is_some())
        .collect();
    let without: Vec<&str> = kueue
        .iter()
        .filter(|q| q.flavors.iter().all(|f| f.gpus.is_none()))
        .map(|q| q.name.as_str())
        .collect();
    if without.is_empty() {
        return Vec::new();
    }
    let all = without.len() == kueue.len();
    vec![format!(
        "{}the fleet has {fleet_gpus} accelerators but ClusterQueue(s) {} cover no accelerator resource ({}): Kueue admits to them no workload that asks for one, while fleetsim does not limit the accelerators of their jobs; add the resource to their resourceGroups",
        if all { "no ClusterQueue has accelerator quota: " } else { "" },
        without.join(", "),
        ACCELERATOR_RESOURCES.join(", ")
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        let q = |t: &str| Quantity::parse(t).unwrap().0;
        assert_eq!(q("500m"), 500);
        assert_eq!(q("2"), 2000);
        assert_eq!(q("1.5"), 1500);
        assert_eq!(q("64Gi"), 64 * (1 << 30) * 1000);
        assert_eq!(q("4k"), 4_000_000);
        assert_eq!(q("1e3"), 1_000_000);
        assert_eq!(q("0.1m"), 1);
        for bad in ["", "-1", "abc", "1Zi", "Gi", "1.2.3"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }

    const MANIFESTS: &str = "apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: h100
spec:
  nodeLabels:
    gpu: h100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cq-a
spec:
  cohortName: all
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - name: cpu
        nominalQuota: 500m
      - name: nvidia.com/gpu
        nominalQuota: 16
        borrowingLimit: 8
        lendingLimit: 4
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: cq-b
spec:
  cohort: all
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: team-a
  name: research
spec:
  clusterQueue: cq-a
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: team-b
  name: product
spec:
  clusterQueue: cq-b
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: all
spec:
  parentName: org
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata:
  name: high
value: 1000
description: urgent
---
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
";

    #[test]
    fn reads_and_maps_manifests() {
        let c = parse(MANIFESTS, Path::new("k.yaml")).unwrap();
        assert_eq!(
            c.cluster_queues["cq-a"].strategy,
            QueueingStrategy::StrictFifo
        );
        assert_eq!(c.cohorts["all"].parent.as_deref(), Some("org"));
        assert!(c.cohorts.contains_key("org"));
        assert_eq!(c.priority_classes["high"].value, 1000);
        assert_eq!(c.flavors["h100"].node_labels["gpu"], "h100");
        assert_eq!(c.ignored["v1/Namespace"], 1);
        let k = c.quota();
        let names: Vec<&str> = k.queues.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["cq-a", "cq-b"]);
        let a = &k.queues[0];
        assert_eq!(a.strategy, Some(QueueingStrategy::StrictFifo));
        assert_eq!(a.cohort.as_deref(), Some("all"));
        assert_eq!(a.local_queues, ["research"]);
        assert_eq!(k.queues[1].local_queues, ["product"]);
        let f = &a.flavors[0];
        assert_eq!(f.name, "h100");
        let g = f.gpus.expect("GPU quota");
        assert_eq!((g.nominal, g.borrowing_limit), (16.0, Some(8.0)));
        assert_eq!(f.cpus.map(|c| c.nominal), Some(0.5));
        assert!(f.memory_gib.is_none());
        // The label `gpu` is not one of MODEL_LABELS: the flavor covers any model.
        assert_eq!(k.flavors.len(), 1);
        assert_eq!(k.flavors[0].name, "h100");
        assert!(k.flavors[0].models.is_empty());
        // Memory in GiB; a CPU-only group beside the accelerator group is reported, not used.
        let text = MANIFESTS
            .replace("    gpu: h100", "    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3")
            .replace(
                "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8",
                "  - coveredResources: [nvidia.com/gpu, memory]\n    flavors:\n    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8\n      - name: memory\n        nominalQuota: 64Gi\n  - coveredResources: [cpu]\n    flavors:\n    - name: h100\n      resources:\n      - name: cpu\n        nominalQuota: 96",
            );
        let k2 = parse(&text, Path::new("k.yaml")).unwrap().quota();
        // The GPU feature discovery label names the catalog model.
        assert_eq!(k2.flavors[0].models, ["H100"]);
        let b = &k2.queues[1].flavors;
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(b[0].memory_gib.map(|m| m.nominal), Some(64.0));
        assert!(b[0].cpus.is_none());
        assert!(
            k2.unsimulated
                .iter()
                .any(|n| n.contains("ClusterQueue cq-b: resource group 1 (cpu)")),
            "{:?}",
            k2.unsimulated
        );
        let parents: Vec<(&str, Option<&str>)> = k
            .cohorts
            .iter()
            .map(|c| (c.name.as_str(), c.parent.as_deref()))
            .collect();
        assert_eq!(parents, [("all", Some("org")), ("org", None)]);
        assert!(
            k.unsimulated
                .iter()
                .any(|n| n.contains("WorkloadPriorityClass")),
            "{:?}",
            k.unsimulated
        );
    }

    #[test]
    fn bad_wait_for_pods_ready_settings_name_the_field() {
        let config = |wait: &str| {
            format!("{MANIFESTS}---\napiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady:\n{wait}")
        };
        for (wait, field) in [
            ("  timeout: 0s\n", "waitForPodsReady.timeout"),
            (
                "  timeout: 5m\n  requeuingStrategy:\n    backoffBaseSeconds: -1\n",
                "waitForPodsReady.requeuingStrategy.backoffBaseSeconds",
            ),
            (
                "  timeout: 5m\n  requeuingStrategy:\n    backoffLimitCount: -2\n",
                "waitForPodsReady.requeuingStrategy.backoffLimitCount",
            ),
            (
                "  timeout: 5m\n  requeuingStrategy:\n    timestamp: Admission\n",
                "waitForPodsReady.requeuingStrategy.timestamp",
            ),
        ] {
            let e = parse(&config(wait), Path::new("k.yaml"))
                .expect_err(field)
                .to_string();
            assert!(e.contains("k.yaml") && e.contains(field), "{field}: {e}");
        }
        let ok = parse(
            &config("  timeout: 5m\n  requeuingStrategy:\n    backoffLimitCount: 3\n"),
            Path::new("k.yaml"),
        )
        .unwrap();
        let w = ok.quota().wait_for_pods_ready.expect("mapped");
        assert_eq!(
            (
                w.timeout_s,
                w.backoff_base_s,
                w.backoff_max_s,
                w.backoff_limit_count
            ),
            (300.0, Some(60.0), Some(3600.0), Some(3))
        );
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let cases = [
            (MANIFESTS.replace("cohortName: all", "cohort: all"), 14, "spec.cohort"),
            (MANIFESTS.replace("queueingStrategy: StrictFIFO", "queueingStrategy: LIFO"), 15, "spec.queueingStrategy"),
            (MANIFESTS.replace("nominalQuota: 500m", "nominalQuota: -1"), 22, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
            (MANIFESTS.replace("lendingLimit: 4", "lendingLimit: 40"), 26, "spec.resourceGroups[0].flavors[0].resources[1].lendingLimit"),
            (MANIFESTS.replace("    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8", "    - name: a100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8"), 37, "spec.resourceGroups[0].flavors[0].name"),
            (MANIFESTS.replace("clusterQueue: cq-b", "clusterQueue: cq-z"), 56, "spec.clusterQueue"),
            // The same LocalQueue twice in one namespace (in two namespaces it is two queues).
            (MANIFESTS.replace("  namespace: team-b\n  name: product", "  namespace: team-a\n  name: research"), 54, "metadata.name"),
            (MANIFESTS.replace("kueue.x-k8s.io/v1beta1\nkind: LocalQueue", "kueue.x-k8s.io/v2\nkind: LocalQueue"), 42, "apiVersion"),
            (MANIFESTS.replace("coveredResources: [nvidia.com/gpu]", "coveredResources: 3"), 35, "spec.resourceGroups[0].coveredResources"),
            (MANIFESTS.replace("value: 1000", "value: high"), 69, "value"),
            // The Cohort whose parent closes the cycle, not line 0.
            (MANIFESTS.replace("spec:\n  parentName: org", "spec:\n  parentName: all"), 63, "spec.parentName"),
            // Unknown fields (typos) are errors at their own line.
            (MANIFESTS.replace("cohortName: all", "cohortNmae: all"), 14, "spec.cohortNmae"),
            (MANIFESTS.replace("  cohort: all\n", "  cohort: all\n  bogusField: 1\n"), 34, "spec.bogusField"),
            (MANIFESTS.replace("        borrowingLimit: 8", "        borowingLimit: 8"), 25, "spec.resourceGroups[0].flavors[0].resources[1].borowingLimit"),
            (MANIFESTS.replace("    flavors:\n    - name: h100\n      resources:\n      - name: cpu", "    flavor:\n    - name: h100\n      resources:\n      - name: cpu"), 18, "spec.resourceGroups[0].flavor"),
            (MANIFESTS.replace("    - name: h100\n      resources:\n      - name: cpu", "    - name: h100\n      resource:\n      - name: cpu"), 20, "spec.resourceGroups[0].flavors[0].resource"),
            (MANIFESTS.replace("  nodeLabels:\n    gpu: h100", "  nodeLabel:\n    gpu: h100"), 6, "spec.nodeLabel"),
            (MANIFESTS.replace("  clusterQueue: cq-a", "  clusterQueue: cq-a\n  clusterqueue: cq-b"), 49, "spec.clusterqueue"),
            (MANIFESTS.replace("spec:\n  parentName: org", "sepc:\n  parentName: org"), 62, "sepc"),
            // Two accelerator resources in one flavor: fleetsim keeps one accelerator quota.
            (MANIFESTS.replace("[cpu, nvidia.com/gpu]", "[cpu, nvidia.com/gpu, amd.com/gpu]").replace("        lendingLimit: 4\n", "        lendingLimit: 4\n      - name: amd.com/gpu\n        nominalQuota: 2\n"), 27, "spec.resourceGroups[0].flavors[0].resources[2].name"),
            // Quantities out of range name the field.
            (MANIFESTS.replace("nominalQuota: 500m", "nominalQuota: 100E"), 22, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
            (MANIFESTS.replace("nominalQuota: 500m", "nominalQuota: \"99999999999999999999\""), 22, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
            // Unusable documents.
            (MANIFESTS.replace("kind: Cohort\n", "kind: Foo\n"), 59, "kind"),
            (MANIFESTS.replace("kind: Cohort\n", ""), 58, "kind"),
            (MANIFESTS.replace("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\n", "kind: Cohort\n"), 58, "apiVersion"),
        ];
        for (text, line, field) in cases {
            let e = parse(&text, Path::new("k.yaml"))
                .expect_err(field)
                .to_string();
            assert!(
                e.contains("k.yaml")
                    && e.contains(&format!("line {line}:"))
                    && e.contains(&format!("`{field}`")),
                "{field}: {e}"
            );
        }
        // Whole-file problems: the message says what is wrong, with no bogus field.
        for (text, want) in [
            ("", "no Kubernetes objects"),
            (
                "# only a comment\n---\n# another\n",
                "no Kubernetes objects",
            ),
            (
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n",
                "no kueue.x-k8s.io ClusterQueue, ResourceFlavor",
            ),
            (
                &MANIFESTS
                    .replace("kind: ClusterQueue", "kind: Cohort")
                    .replace(
                        "cohortName: all\n  queueingStrategy: StrictFIFO\n",
                        "parentName: all\n",
                    ),
                "unknown field",
            ),
        ] {
            let e = parse(text, Path::new("k.yaml")).unwrap_err().to_string();
            assert!(e.starts_with("k.yaml: ") && e.contains(want), "{want}: {e}");
        }
        let e = parse("# a list\n- a\n", Path::new("k.yaml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("k.yaml: line 2: ") && e.contains("found a list"),
            "{e}"
        );
        // A YAML syntax error: one absolute line, the document's own line not repeated.
        let e = parse(
            "apiVersion: v1\nkind: Namespace\n---\na: [1,\n",
            Path::new("k.yaml"),
        )
        .unwrap_err()
        .to_string();
        // The bracket left open is on line 4 of the file.
        assert!(e.contains("k.yaml: line 4: bad YAML"), "{e}");
        assert!(!e.contains("line 1") && !e.contains("-->"), "{e}");
        let e = parse(
            "apiVersion: v1\nkind: Namespace\n---\na: [1,\n  b: 2\nc: 3\n",
            Path::new("k.yaml"),
        )
        .unwrap_err()
        .to_string();
        // Every line the parser names is a line of the file: it stops at `c: 3`, line 6 of
        // the file (line 3 of its document).
        assert!(
            e.contains("k.yaml: line 6: bad YAML")
                && e.contains("at line 6")
                && !e.contains("line 3"),
            "{e}"
        );
        let e = parse(
            &MANIFESTS.replace("nominalQuota: 500m", "nominalQuota: 99999999999999999999"),
            Path::new("k.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 22") && e.contains("out of range"), "{e}");
        let e = load(Path::new("/nonexistent/k.yaml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/nonexistent/k.yaml: cannot read the Kueue manifests"),
            "{e}"
        );
        assert!(!e.contains("line 0") && !e.contains("field"), "{e}");
    }

    #[test]
    fn upstream_fields_not_simulated_are_listed() {
        let text = MANIFESTS
            .replace(
                "  queueingStrategy: StrictFIFO\n",
                "  queueingStrategy: StrictFIFO\n  preemption:\n    withinClusterQueue: LowerPriority\n  stopPolicy: Hold\n  namespaceSelector: {}\n",
            )
            .replace("    gpu: h100\n", "    gpu: h100\n  nodeTaints:\n  - key: gpu\n    effect: NoSchedule\n")
            + "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: AdmissionCheck\nmetadata:\n  name: prov\nspec:\n  controllerName: x\n";
        let c = parse(&text, Path::new("k.yaml")).unwrap();
        let q = c.quota();
        let notes = q.unsimulated;
        // `spec.preemption` is simulated: the queue carries its rules.
        let _ = &c.admission_checks;
        assert_eq!(
            q.queues[0].preemption.map(|p| p.within_queue),
            Some(fleetsim_policies::preemption::WithinQueue::LowerPriority)
        );
        assert!(
            !notes.iter().any(|n| n.contains("spec.preemption")),
            "{notes:?}"
        );
        for want in [
            "ClusterQueue cq-a: `spec.stopPolicy` is not simulated",
            "ResourceFlavor h100: `spec.nodeTaints` is not simulated",
            "ResourceFlavor h100: `spec.nodeTaints` is not simulated",
        ] {
            assert!(
                notes.iter().any(|n| n.starts_with(want)),
                "{want}: {notes:?}"
            );
        }
        // An empty namespaceSelector (every namespace) is what fleetsim does: no note.
        assert!(
            !notes.iter().any(|n| n.contains("namespaceSelector")),
            "{notes:?}"
        );
        // An AdmissionCheck that no ClusterQueue names is read, not ignored.
        assert_eq!(c.admission_checks["prov"].controller, "x");
    }

    #[test]
    fn gpu_and_tpu_product_labels_name_catalog_models() {
        let gfd = "nvidia.com/gpu.product";
        let gke = "cloud.google.com/gke-accelerator";
        let tpu = "cloud.google.com/gke-tpu-accelerator";
        for (label, value, model) in [
            (gfd, "NVIDIA-L4", "L4"),
            (gfd, "Tesla-V100-SXM2-16GB", "V100M16"),
            (gfd, "Tesla-V100-SXM2-32GB", "V100M32"),
            (gfd, "NVIDIA-H100-80GB-HBM3", "H100"),
            (gfd, "NVIDIA-A100-SXM4-40GB", "A100"),
            (gfd, "NVIDIA-A10G", "A10"),
            (gfd, "Tesla-T4", "T4"),
            (gke, "nvidia-l4", "L4"),
            (gke, "nvidia-tesla-v100", "V100M16"),
            (gke, "nvidia-a100-80gb", "A100"),
            (gke, "nvidia-h100-mega-80gb", "H100"),
            (tpu, "tpu-v5p-slice", "TPUv5p"),
            ("amd.com/gpu.product-name", "AMD_Instinct_MI300X", "MI300X"),
            // No catalog model: unchanged, so the error names the label's own value.
            (tpu, "tpu-v5-lite-podslice", "tpu-v5-lite-podslice"),
            (gfd, "NVIDIA-GeForce-RTX-4090", "NVIDIA-GeForce-RTX-4090"),
        ] {
            assert_eq!(catalog_model(label, value), model, "{label}: {value}");
        }
    }

    /// A flavor whose labels name no model (an instance type, a node pool) covers every
    /// model, and says so with what to do instead of doing it silently.
    #[test]
    fn instance_type_labels_are_listed_not_matched() {
        let text = MANIFESTS.replace(
            "    gpu: h100",
            "    node.kubernetes.io/instance-type: p4d.24xlarge",
        );
        let k = parse(&text, Path::new("k.yaml")).unwrap().quota();
        assert!(k.flavors[0].models.is_empty());
        let note = k
            .unsimulated
            .iter()
            .find(|n| n.contains("ResourceFlavor h100"))
            .expect("a note");
        assert!(
            note.contains("node.kubernetes.io/instance-type=p4d.24xlarge")
                && note.contains("covers every model")
                && note.contains("nvidia.com/gpu.product"),
            "{note}"
        );
    }

    /// `kubectl get clusterqueues,localqueues,resourceflavors -o yaml` gives one `List`; its
    /// items are read as objects, and errors name the item's own line and field.
    #[test]
    fn kubectl_list_exports() {
        let list = "apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n\
- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: ResourceFlavor\n  metadata:\n    name: l4\n    uid: 1f\n  spec:\n    nodeLabels:\n      cloud.google.com/gke-accelerator: nvidia-l4\n\
- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: ClusterQueue\n  metadata:\n    name: cq\n  spec:\n    queueingStrategy: StrictFIFO\n    resourceGroups:\n    - coveredResources: [nvidia.com/gpu]\n      flavors:\n      - name: l4\n        resources:\n        - name: nvidia.com/gpu\n          nominalQuota: 4\n  status:\n    pendingWorkloads: 0\n\
- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: LocalQueue\n  metadata:\n    name: default\n    namespace: ml\n  spec:\n    clusterQueue: cq\n";
        let k = parse(list, Path::new("export.yaml")).unwrap();
        assert_eq!(k.cluster_queues.len(), 1);
        assert_eq!(k.local_queues["ml/default"].cluster_queue, "cq");
        let q = k.quota();
        assert_eq!(q.flavors[0].models, ["L4"]);
        assert_eq!(q.queues[0].local_queues, ["default"]);
        // Line 19 is `    queueingStrategy: StrictFIFO` of item 1 (5 lines of List header, 8 of
        // item 0, then `- apiVersion`, `  kind`, `  metadata`, `    name`, `  spec`).
        let e = parse(
            &list.replace("StrictFIFO", "LIFO"),
            Path::new("export.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("line 19:") && e.contains("`items[1].spec.queueingStrategy`"),
            "{e}"
        );
    }

    /// The common pattern: a LocalQueue `default` in every namespace. Of one ClusterQueue:
    /// one queue name `default`; of different ClusterQueues: `NAMESPACE/default` each, noted.
    #[test]
    fn same_named_local_queues_in_namespaces() {
        let lq = |ns: &str, cq: &str| {
            format!("---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata:\n  namespace: {ns}\n  name: default\nspec:\n  clusterQueue: {cq}\n")
        };
        let same = format!("{MANIFESTS}{}{}", lq("ns1", "cq-a"), lq("ns2", "cq-a"));
        let q = parse(&same, Path::new("k.yaml")).unwrap().quota();
        assert_eq!(q.queues[0].local_queues, ["default", "research"]);
        assert!(q
            .unsimulated
            .iter()
            .any(|n| n.contains("in 2 namespaces") && n.contains("all of one ClusterQueue")));
        let split = format!("{MANIFESTS}{}{}", lq("ns1", "cq-a"), lq("ns2", "cq-b"));
        let q = parse(&split, Path::new("k.yaml")).unwrap().quota();
        assert_eq!(q.queues[0].local_queues, ["ns1/default", "research"]);
        assert_eq!(q.queues[1].local_queues, ["ns2/default", "product"]);
        assert!(
            q.unsimulated
                .iter()
                .any(|n| n.contains("NAMESPACE/default")),
            "{:?}",
            q.unsimulated
        );
    }

    /// Several files are one configuration: a ClusterQueue may use another file's flavors,
    /// errors name the file they are in, and a file of ResourceFlavors alone is accepted.
    #[test]
    fn several_files_and_flavor_only_files() {
        let flavors = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: v100\nspec:\n  nodeLabels:\n    nvidia.com/gpu.product: Tesla-V100-SXM2-16GB\n";
        let queues = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: cq\nspec:\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: v100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8\n";
        let k = parse_sources(
            &[
                (PathBuf::from("flavors.yaml"), flavors.to_string()),
                (PathBuf::from("queues.yaml"), queues.to_string()),
            ],
            Path::new("dir"),
        )
        .unwrap();
        let q = k.quota();
        assert_eq!(q.flavors[0].models, ["V100M16"]);
        assert!(q.flavors[0]
            .source
            .as_deref()
            .unwrap()
            .starts_with("flavors.yaml: line 6:"));
        assert_eq!(q.queues[0].flavors[0].name, "v100");
        // Line 9 of queues.yaml is `    - name: v100`.
        let e = parse_sources(
            &[
                (
                    PathBuf::from("flavors.yaml"),
                    flavors.replace("name: v100", "name: a100"),
                ),
                (PathBuf::from("queues.yaml"), queues.to_string()),
            ],
            Path::new("dir"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("queues.yaml: line 9:"), "{e}");
        let only = parse(flavors, Path::new("flavors.yaml")).unwrap();
        assert!(only.cluster_queues.is_empty() && only.flavors.contains_key("v100"));
    }

    /// v1beta2's `concurrentAdmissionPolicy` is read and listed as not simulated; in v1beta1
    /// (which has no such field) it is refused naming the version that has it.
    #[test]
    fn concurrent_admission_policy() {
        let cq = |api: &str| {
            format!("apiVersion: kueue.x-k8s.io/{api}\nkind: ClusterQueue\nmetadata:\n  name: cq\nspec:\n  concurrentAdmissionPolicy:\n    migration:\n      mode: TryPreferredFlavors\n")
        };
        let q = parse(&cq("v1beta2"), Path::new("k.yaml")).unwrap().quota();
        assert!(
            q.unsimulated
                .iter()
                .any(|n| n.contains("concurrentAdmissionPolicy") && n.contains("not simulated")),
            "{:?}",
            q.unsimulated
        );
        let e = parse(&cq("v1beta1"), Path::new("k.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 6:") && e.contains("v1beta2 only"), "{e}");
    }
}
