//! Kubernetes adapter: recorded `v1.Pod` and `v1.Node` objects → cluster
//! events, and admit decisions → `v1.Binding` objects. See the README's "Kubernetes
//! adapter" section for the mapping table; in short:
//!
//! **Nodes** → [`NodeAdded`]: `metadata.name`; GPUs from `status.allocatable["nvidia.com/gpu"]`
//! (required, whole GPUs); CPU (`cpu`, milli-cores) and memory (`memory`, bytes → MiB,
//! rounded down) from `status.allocatable` (0 when absent); the accelerator model from the
//! first of the product labels [`fleetsim::scenario::kueue::MODEL_LABELS`] mapped by
//! [`catalog_model`] (`NVIDIA-H100-80GB-HBM3` → `H100`, as for Kueue ResourceFlavors); the
//! cell from [`CELL_LABEL`] (else `topology.kubernetes.io/zone`, else `default`); the block
//! from [`BLOCK_LABEL`] and the NVLink domain (rack) from [`DOMAIN_LABEL`] (else the node
//! itself). The event time is `metadata.creationTimestamp`.
//!
//! **Pods** → [`JobSubmitted`]: one job per pod group, else per pod. The group is the label
//! `kueue.x-k8s.io/pod-group-name` (Kueue plain-pod groups; gang size from the annotation
//! `kueue.x-k8s.io/pod-group-total-count`, required) or `scheduling.x-k8s.io/pod-group`
//! (the coscheduling plugin; gang size = the pods of the group recorded, or the annotation
//! `scheduling.x-k8s.io/min-available` when given). Job name `namespace/group` (or
//! `namespace/pod`); tenant = namespace (Kueue's LocalQueues are namespaced); queue = the
//! label `kueue.x-k8s.io/queue-name`, which must name a LocalQueue of the pod's namespace
//! in the Kueue manifests, and becomes the LocalQueue's fleetsim queue name
//! ([`KueueConfig::local_queue_name`]); priority = the `kueue.x-k8s.io/priority-class`
//! label's WorkloadPriorityClass value, else `spec.priority`, else 0; per task: the sum over
//! `spec.containers[]` of `resources.requests` (`nvidia.com/gpu` required in at least one
//! container, whole GPUs; limits stand in for requests when requests are absent, as the API
//! server defaults them), `cpu`, `memory`; the model constraint from
//! `spec.nodeSelector`'s product label. All pods of a group must request the same shape, in
//! the same queue and priority, and declare the same group count. The event time is the newest `creationTimestamp` of the
//! group (a gang is whole when its last pod exists). Pods already bound (`spec.nodeName`)
//! are also returned as [`ObservedStart`]s — the other scheduler's decision, for shadow mode.
//!
//! Times are milliseconds since [`Recorded::origin`], the earliest `creationTimestamp` of
//! all the objects (Unix seconds), so a recording starts at 0. Events are ordered by
//! (time, nodes before jobs, name).
//!
//! **Bindings** ([`bindings`]): an admit of job `j` onto nodes `n0..nk` binds the group's
//! pods in name order, pod `i` → `n_i`: `{"apiVersion":"v1","kind":"Binding","metadata":
//! {"name","namespace","annotations":{"fleetsim.io/gpu-indices":"0,1"}},"target":
//! {"apiVersion":"v1","kind":"Node","name"}}`, POSTed to `pods/{name}/binding`.

use std::collections::BTreeMap;

use fleetsim::scenario::kueue::{catalog_model, KueueConfig, GPU_RESOURCE, MODEL_LABELS};
use fleetsim_policies::quantity::Quantity;
use serde_json::{json, Value};

/// Node label naming the node's cell (fleetsim's own; falls back to the zone label).
pub const CELL_LABEL: &str = "fleetsim.io/cell";
/// Node label naming the node's network block (GKE's compact-placement topology label).
pub const BLOCK_LABEL: &str = "cloud.google.com/gce-topology-block";
/// Node label naming the node's NVLink domain (GPU feature discovery's NVL72 clique id).
pub const DOMAIN_LABEL: &str = "nvidia.com/gpu.clique";
/// Kueue's queue label.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Kueue's workload priority class label.
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
/// Kueue plain-pod group label.
pub const KUEUE_GROUP_LABEL: &str = "kueue.x-k8s.io/pod-group-name";
/// Kueue plain-pod group size annotation.
pub const KUEUE_GROUP_COUNT: &str = "kueue.x-k8s.io/pod-group-total-count";
/// Coscheduling plugin's pod-group label.
pub const COSCHED_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// Optional gang size annotation for a coscheduling group.
pub const COSCHED_MIN_AVAILABLE: &str = "scheduling.x-k8s.io/min-available";
/// Binding annotation listing the GPU indices per task (informational: the device plugin
/// assigns devices itself).
pub const GPU_INDICES_ANNOTATION: &str = "fleetsim.io/gpu-indices";

/// A bad object: which object (`Pod team-a/train-0`), which field, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: {field}: {message}")]
pub struct AdapterError {
    /// `Kind namespace/name` (or `Kind name`, `items[3]` without a name).
    pub object: String,
    /// Field path, e.g. `spec.containers[0].resources.requests.nvidia.com/gpu`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// A node joined the fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAdded {
    /// Milliseconds since [`Recorded::origin`].
    pub time_ms: u64,
    /// Node name.
    pub name: String,
    /// Cell name.
    pub cell: String,
    /// Block label value (empty when absent).
    pub block: String,
    /// NVLink domain label value (the node name when absent).
    pub domain: String,
    /// Accelerator model (catalog name), `None` when no product label.
    pub model: Option<String>,
    /// Whole GPUs allocatable.
    pub gpus: u32,
    /// CPU allocatable, milli-cores.
    pub cpu_milli: u64,
    /// Memory allocatable, MiB.
    pub mem_mib: u64,
}

/// A job (pod group or single pod) was submitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSubmitted {
    /// Milliseconds since [`Recorded::origin`].
    pub time_ms: u64,
    /// `namespace/group` or `namespace/pod`.
    pub job: String,
    /// Tenant (the namespace).
    pub tenant: String,
    /// fleetsim queue name of the LocalQueue.
    pub queue: String,
    /// Priority (higher first).
    pub priority: i32,
    /// Gang size (pods).
    pub tasks: u32,
    /// Per task: GPU-milli (1000 per whole GPU).
    pub gpu_milli: u64,
    /// Per task: CPU milli-cores.
    pub cpu_milli: u64,
    /// Per task: memory MiB (rounded up).
    pub mem_mib: u64,
    /// Required accelerator model, if the pods select one.
    pub model: Option<String>,
    /// The pods as `namespace/name`, in name order (task `i` is pod `i`).
    pub pods: Vec<String>,
}

/// An event read from the recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterEvent {
    /// See [`NodeAdded`].
    NodeAdded(NodeAdded),
    /// See [`JobSubmitted`].
    JobSubmitted(JobSubmitted),
}

impl ClusterEvent {
    /// Event time, ms since origin.
    pub fn time_ms(&self) -> u64 {
        match self {
            ClusterEvent::NodeAdded(n) => n.time_ms,
            ClusterEvent::JobSubmitted(j) => j.time_ms,
        }
    }
}

/// What the other scheduler did: a job whose pods were bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedStart {
    /// The job.
    pub job: String,
    /// Milliseconds since origin: the latest of the pods' `status.startTime` (else their
    /// `PodScheduled` condition's `lastTransitionTime`).
    pub time_ms: Option<u64>,
    /// Node of each task, in pod name order.
    pub nodes: Vec<String>,
}

/// A recording turned into events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Unix seconds of time 0.
    pub origin: i64,
    /// Events in (time, nodes first, name) order.
    pub events: Vec<ClusterEvent>,
    /// Jobs whose pods were all bound, in job name order.
    pub observed: Vec<ObservedStart>,
}

/// The objects of a recording: a `v1.List` (`kubectl get pods,nodes -o json`), a JSON array
/// of objects, or one object.
///
/// # Errors
/// The JSON error, or a document that is none of these.
pub fn objects(text: &str) -> Result<Vec<Value>, AdapterError> {
    let v: Value = serde_json::from_str(text).map_err(|e| AdapterError {
        object: "recording".into(),
        field: "-".into(),
        message: format!("not JSON: {e}"),
    })?;
    Ok(match v {
        Value::Array(items) => items,
        Value::Object(ref o) if o.get("items").is_some_and(Value::is_array) => {
            o["items"].as_array().cloned().unwrap_or_default()
        }
        Value::Object(_) => vec![v],
        _ => {
            return Err(AdapterError {
                object: "recording".into(),
                field: "-".into(),
                message: "expected a List, an array of objects or an object".into(),
            })
        }
    })
}

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

struct Obj<'a> {
    v: &'a Value,
    id: String,
}

impl Obj<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> AdapterError {
        AdapterError {
            object: self.id.clone(),
            field: field.into(),
            message: message.into(),
        }
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.v.get("metadata")?.get("labels")?.get(key)?.as_str()
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        self.v
            .get("metadata")?
            .get("annotations")?
            .get(key)?
            .as_str()
    }
    fn created(&self) -> Result<i64, AdapterError> {
        let f = "metadata.creationTimestamp";
        let t =
            s(self.v, &["metadata", "creationTimestamp"]).ok_or_else(|| self.err(f, "missing"))?;
        parse_time(t).map_err(|m| self.err(f, m))
    }
    fn quantity(&self, v: &Value, field: &str) -> Result<Quantity, AdapterError> {
        let text = match v {
            Value::String(t) => t.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(self.err(field, "expected a quantity string")),
        };
        Quantity::parse(&text).map_err(|m| self.err(field, m))
    }
    fn whole(&self, q: Quantity, field: &str) -> Result<u32, AdapterError> {
        if !q.0.is_multiple_of(1000) {
            return Err(self.err(field, "GPUs must be whole (an integer extended resource)"));
        }
        u32::try_from(q.0 / 1000).map_err(|_| self.err(field, "too many GPUs"))
    }
}

/// Unix seconds of an RFC 3339 UTC timestamp as Kubernetes writes them
/// (`2026-01-02T03:04:05Z`, optionally with a fraction, which is dropped).
///
/// # Errors
/// A message naming the text when it is not of that form.
pub fn parse_time(t: &str) -> Result<i64, String> {
    fleetsim::workload::timefmt::parse_rfc3339_utc(t)
}

fn model_of(labels: Option<&Value>) -> Option<String> {
    let labels = labels?;
    MODEL_LABELS.iter().find_map(|k| {
        labels
            .get(*k)
            .and_then(Value::as_str)
            .map(|v| catalog_model(k, v))
    })
}

fn node(o: &Obj, t0: i64) -> Result<NodeAdded, AdapterError> {
    let name = s(o.v, &["metadata", "name"])
        .unwrap_or_default()
        .to_string();
    let alloc = o.v.get("status").and_then(|s| s.get("allocatable"));
    let gpu_field = format!("status.allocatable.{GPU_RESOURCE}");
    let g = alloc.and_then(|a| a.get(GPU_RESOURCE)).ok_or_else(|| {
        o.err(
            &gpu_field,
            "missing (a node without GPUs is not schedulable here)",
        )
    })?;
    let gpus = o.whole(o.quantity(g, &gpu_field)?, &gpu_field)?;
    let cpu_milli = match alloc.and_then(|a| a.get("cpu")) {
        Some(v) => o.quantity(v, "status.allocatable.cpu")?.0 as u64,
        None => 0,
    };
    let mem_mib = match alloc.and_then(|a| a.get("memory")) {
        Some(v) => (o.quantity(v, "status.allocatable.memory")?.0 / 1000 / (1 << 20)) as u64,
        None => 0,
    };
    let labels = o.v.get("metadata").and_then(|m| m.get("labels"));
    Ok(NodeAdded {
        time_ms: ms(o.created()? - t0),
        cell: o
            .label(CELL_LABEL)
            .or_else(|| o.label("topology.kubernetes.io/zone"))
            .unwrap_or("default")
            .to_string(),
        block: o.label(BLOCK_LABEL).unwrap_or("").to_string(),
        domain: o.label(DOMAIN_LABEL).unwrap_or(&name).to_string(),
        model: model_of(labels),
        gpus,
        cpu_milli,
        mem_mib,
        name,
    })
}

fn ms(secs: i64) -> u64 {
    (secs.max(0) as u64) * 1000
}

/// One pod's contribution.
struct PodInfo {
    name: String,
    group: Option<(String, Option<u32>)>,
    created: i64,
    queue: String,
    priority: i32,
    gpu_milli: u64,
    cpu_milli: u64,
    mem_mib: u64,
    model: Option<String>,
    node: Option<String>,
    started: Option<i64>,
}

fn pod(o: &Obj, kueue: &KueueConfig) -> Result<PodInfo, AdapterError> {
    let ns = s(o.v, &["metadata", "namespace"]).unwrap_or("default");
    let name = s(o.v, &["metadata", "name"]).unwrap_or_default();
    let lq = o.label(QUEUE_LABEL).ok_or_else(|| {
        o.err(
            &format!("metadata.labels.{QUEUE_LABEL}"),
            "missing: every pod must name its LocalQueue",
        )
    })?;
    let queue = kueue
        .local_queues
        .get(&format!("{ns}/{lq}"))
        .map(|q| kueue.local_queue_name(q))
        .ok_or_else(|| {
            o.err(
                &format!("metadata.labels.{QUEUE_LABEL}"),
                format!("unknown queue `{lq}`: no LocalQueue `{lq}` in namespace `{ns}` in the Kueue manifests"),
            )
        })?;
    let priority = if let Some(pc) = o.label(PRIORITY_CLASS_LABEL) {
        kueue
            .priority_classes
            .get(pc)
            .map(|c| c.value)
            .ok_or_else(|| {
                o.err(
                    &format!("metadata.labels.{PRIORITY_CLASS_LABEL}"),
                    format!("unknown WorkloadPriorityClass `{pc}`"),
                )
            })?
    } else if let Some(p) = o.v.get("spec").and_then(|s| s.get("priority")) {
        p.as_i64()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| o.err("spec.priority", "expected a 32-bit integer"))?
    } else {
        0
    };
    let containers =
        o.v.get("spec")
            .and_then(|s| s.get("containers"))
            .and_then(Value::as_array)
            .ok_or_else(|| o.err("spec.containers", "missing"))?;
    let (mut gpu, mut cpu, mut mem, mut any_gpu) = (0u64, 0u64, 0u128, false);
    for (i, c) in containers.iter().enumerate() {
        let res = c.get("resources");
        let req = res.and_then(|r| r.get("requests"));
        let lim = res.and_then(|r| r.get("limits"));
        let get = |k: &str| -> Option<(&Value, &'static str)> {
            req.and_then(|r| r.get(k))
                .map(|v| (v, "requests"))
                .or_else(|| lim.and_then(|l| l.get(k)).map(|v| (v, "limits")))
        };
        if let Some((v, which)) = get(GPU_RESOURCE) {
            let f = format!("spec.containers[{i}].resources.{which}.{GPU_RESOURCE}");
            gpu += u64::from(o.whole(o.quantity(v, &f)?, &f)?) * 1000;
            any_gpu = true;
        }
        if let Some((v, which)) = get("cpu") {
            cpu += o
                .quantity(v, &format!("spec.containers[{i}].resources.{which}.cpu"))?
                .0 as u64;
        }
        if let Some((v, which)) = get("memory") {
            mem += o
                .quantity(v, &format!("spec.containers[{i}].resources.{which}.memory"))?
                .0
                / 1000;
        }
    }
    if !any_gpu {
        return Err(o.err(
            &format!("spec.containers[].resources.requests.{GPU_RESOURCE}"),
            "missing: no container requests GPUs",
        ));
    }
    if gpu == 0 {
        return Err(o.err(
            &format!("spec.containers[].resources.requests.{GPU_RESOURCE}"),
            "0 GPUs requested: the scheduler places GPU jobs (request at least 1)",
        ));
    }
    let group = if let Some(g) = o.label(KUEUE_GROUP_LABEL) {
        let f = format!("metadata.annotations.{KUEUE_GROUP_COUNT}");
        let n = o
            .annotation(KUEUE_GROUP_COUNT)
            .ok_or_else(|| o.err(&f, "missing: a Kueue pod group needs its total count"))?;
        let n = n
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| o.err(&f, format!("`{n}` is not a positive integer")))?;
        Some((g.to_string(), Some(n)))
    } else if let Some(g) = o.label(COSCHED_GROUP_LABEL) {
        let n = match o.annotation(COSCHED_MIN_AVAILABLE) {
            Some(n) => Some(n.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                o.err(
                    &format!("metadata.annotations.{COSCHED_MIN_AVAILABLE}"),
                    format!("`{n}` is not a positive integer"),
                )
            })?),
            None => None,
        };
        Some((g.to_string(), n))
    } else {
        None
    };
    let spec = o.v.get("spec");
    let started = match s(o.v, &["status", "startTime"]) {
        Some(t) => Some(parse_time(t).map_err(|m| o.err("status.startTime", m))?),
        None => {
            o.v.get("status")
                .and_then(|s| s.get("conditions"))
                .and_then(Value::as_array)
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"))
                })
                .and_then(|c| c.get("lastTransitionTime"))
                .and_then(Value::as_str)
                .map(parse_time)
                .transpose()
                .map_err(|m| o.err("status.conditions[PodScheduled].lastTransitionTime", m))?
        }
    };
    Ok(PodInfo {
        name: format!("{ns}/{name}"),
        group,
        created: o.created()?,
        queue,
        priority,
        gpu_milli: gpu,
        cpu_milli: cpu,
        mem_mib: u64::try_from(mem.div_ceil(1 << 20)).unwrap_or(u64::MAX),
        model: model_of(spec.and_then(|s| s.get("nodeSelector"))),
        node: spec
            .and_then(|s| s.get("nodeName"))
            .and_then(Value::as_str)
            .map(str::to_string),
        started,
    })
}

fn ident(v: &Value, i: usize) -> String {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("object");
    match (
        s(v, &["metadata", "namespace"]),
        s(v, &["metadata", "name"]),
    ) {
        (Some(ns), Some(n)) if kind == "Pod" => format!("Pod {ns}/{n}"),
        (None, Some(n)) if kind == "Pod" => format!("Pod default/{n}"),
        (_, Some(n)) => format!("{kind} {n}"),
        _ => format!("items[{i}] ({kind})"),
    }
}

/// Turns recorded Pods and Nodes into events (see the module docs). Other kinds are
/// skipped.
///
/// # Errors
/// The first bad object, naming it and its field: a missing or malformed name,
/// `creationTimestamp`, GPU allocatable or request, an unknown LocalQueue or priority
/// class, a group whose pods differ in shape, queue or priority, a Kueue group with fewer
/// or more pods than its total count, a name used twice.
pub fn read(objects: &[Value], kueue: &KueueConfig) -> Result<Recorded, AdapterError> {
    let objs: Vec<Obj> = objects
        .iter()
        .enumerate()
        .filter(|(_, v)| matches!(v.get("kind").and_then(Value::as_str), Some("Pod" | "Node")))
        .map(|(i, v)| Obj { v, id: ident(v, i) })
        .collect();
    for o in &objs {
        if s(o.v, &["metadata", "name"]).is_none_or(str::is_empty) {
            return Err(o.err("metadata.name", "missing"));
        }
    }
    let mut t0 = i64::MAX;
    for o in &objs {
        t0 = t0.min(o.created()?);
    }
    if objs.is_empty() {
        t0 = 0;
    }
    let mut events = Vec::new();
    let mut seen_nodes = BTreeMap::new();
    let mut jobs: BTreeMap<String, Vec<(PodInfo, &Obj)>> = BTreeMap::new();
    for o in &objs {
        if o.v["kind"] == "Node" {
            let n = node(o, t0)?;
            if seen_nodes.insert(n.name.clone(), ()).is_some() {
                return Err(o.err("metadata.name", "node recorded twice"));
            }
            events.push(ClusterEvent::NodeAdded(n));
        } else {
            let p = pod(o, kueue)?;
            let ns = p
                .name
                .split_once('/')
                .map_or("default", |x| x.0)
                .to_string();
            let job = match &p.group {
                Some((g, _)) => format!("{ns}/{g}"),
                None => p.name.clone(),
            };
            jobs.entry(job).or_default().push((p, o));
        }
    }
    let mut observed = Vec::new();
    for (job, mut pods) in jobs {
        pods.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        for w in pods.windows(2) {
            if w[0].0.name == w[1].0.name {
                return Err(w[1].1.err("metadata.name", "pod recorded twice"));
            }
        }
        let (first, _) = &pods[0];
        for (p, o) in &pods[1..] {
            let differs = [
                (
                    p.queue != first.queue,
                    "metadata.labels.kueue.x-k8s.io/queue-name",
                ),
                (p.priority != first.priority, "priority"),
                (
                    p.gpu_milli != first.gpu_milli
                        || p.cpu_milli != first.cpu_milli
                        || p.mem_mib != first.mem_mib,
                    "spec.containers[].resources",
                ),
                (p.model != first.model, "spec.nodeSelector"),
                (
                    p.group != first.group,
                    if o.label(KUEUE_GROUP_LABEL).is_some() {
                        "metadata.annotations.kueue.x-k8s.io/pod-group-total-count"
                    } else {
                        "metadata.annotations.scheduling.x-k8s.io/min-available"
                    },
                ),
            ];
            if let Some((_, f)) = differs.iter().find(|d| d.0) {
                return Err(o.err(
                    f,
                    format!("differs from pod {} of the same group `{job}`", first.name),
                ));
            }
        }
        let count = pods.len() as u32;
        if let Some((_, Some(total))) = &first.group {
            if *total != count {
                let f = if first.group.is_some() && pods[0].1.label(KUEUE_GROUP_LABEL).is_some() {
                    KUEUE_GROUP_COUNT
                } else {
                    COSCHED_MIN_AVAILABLE
                };
                return Err(pods[0].1.err(
                    &format!("metadata.annotations.{f}"),
                    format!(
                        "group `{job}` declares {total} pod{}, {count} recorded",
                        if *total == 1 { "" } else { "s" }
                    ),
                ));
            }
        }
        let created = pods.iter().map(|p| p.0.created).max().unwrap_or(t0);
        if pods.iter().all(|p| p.0.node.is_some()) {
            let started = pods.iter().map(|p| p.0.started).collect::<Option<Vec<_>>>();
            observed.push(ObservedStart {
                job: job.clone(),
                time_ms: started
                    .and_then(|v| v.into_iter().max())
                    .map(|t| ms(t - t0)),
                nodes: pods.iter().filter_map(|p| p.0.node.clone()).collect(),
            });
        }
        events.push(ClusterEvent::JobSubmitted(JobSubmitted {
            time_ms: ms(created - t0),
            tenant: job.split_once('/').map_or("default", |x| x.0).to_string(),
            queue: first.queue.clone(),
            priority: first.priority,
            tasks: count,
            gpu_milli: first.gpu_milli,
            cpu_milli: first.cpu_milli,
            mem_mib: first.mem_mib,
            model: first.model.clone(),
            pods: pods.iter().map(|p| p.0.name.clone()).collect(),
            job,
        }));
    }
    events.sort_by(|a, b| {
        let key = |e: &ClusterEvent| match e {
            ClusterEvent::NodeAdded(n) => (n.time_ms, 0, n.name.clone()),
            ClusterEvent::JobSubmitted(j) => (j.time_ms, 1, j.job.clone()),
        };
        key(a).cmp(&key(b))
    });
    Ok(Recorded {
        origin: t0,
        events,
        observed,
    })
}

/// One task's placement in an admit decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskBinding {
    /// Node name.
    pub node: String,
    /// GPU indices on that node.
    pub gpus: Vec<u32>,
}

/// The `v1.Binding` objects for an admit of `job` (its pods from [`JobSubmitted::pods`]):
/// pod `i` → `tasks[i]`.
///
/// # Errors
/// When the number of tasks differs from the number of pods.
pub fn bindings(job: &JobSubmitted, tasks: &[TaskBinding]) -> Result<Vec<Value>, AdapterError> {
    if tasks.len() != job.pods.len() {
        return Err(AdapterError {
            object: format!("job {}", job.job),
            field: "tasks".into(),
            message: format!(
                "admit has {} tasks for {} pods",
                tasks.len(),
                job.pods.len()
            ),
        });
    }
    Ok(job
        .pods
        .iter()
        .zip(tasks)
        .map(|(pod, t)| {
            let (ns, name) = pod.split_once('/').unwrap_or(("default", pod));
            let gpus: Vec<String> = t.gpus.iter().map(u32::to_string).collect();
            json!({
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "annotations": { GPU_INDICES_ANNOTATION: gpus.join(",") },
                },
                "target": { "apiVersion": "v1", "kind": "Node", "name": t.node },
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubernetes_timestamps() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Ok(0));
        // 2026-03-01: 20,513 days after the epoch (2026-01-01 is day 20,454; + 31 + 28)
        assert_eq!(parse_time("2026-03-01T00:00:10Z"), Ok(20_513 * 86_400 + 10));
        assert_eq!(
            parse_time("2024-02-29T23:59:59.123Z"),
            Ok(19_782 * 86_400 + 86_399)
        );
        assert!(parse_time("2026-03-01 00:00:10").is_err());
        assert!(parse_time("2026-13-01T00:00:10Z").is_err());
        // Days the month lacks, and second 60, are refused; 2024 is a leap year, 2100 is not.
        assert!(parse_time("2026-02-29T00:00:00Z").is_err());
        assert!(parse_time("2100-02-29T00:00:00Z").is_err());
        assert!(parse_time("2026-04-31T00:00:00Z").is_err());
        assert!(parse_time("2026-03-01T08:00:60Z").is_err());
        assert!(parse_time("2000-02-29T00:00:00Z").is_ok());
    }
}
