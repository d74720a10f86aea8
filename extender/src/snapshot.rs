//! From a request's nodes and pod to the policy crate's snapshot ([`FleetState`]) and gang
//! ([`PendingJob`]). The keys read are listed in the crate docs; every malformed value is an
//! [`InputError`] naming the object and key.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use fleetsim_policies::{
    CellId, FleetState, Level, ModelId, ModelSet, NodeId, NodeSpec, PendingJob, RayStrategy,
    TaskAlloc, TaskShape, TopologyMode, TopologySpec,
};

use fleetsim_policies::quantity::{parse_scaled, Rounding};

use crate::wire::{Node, Pod};

/// Extended resource holding whole GPUs (NVIDIA device plugin).
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// Node label with the GPU model (NVIDIA GPU Feature Discovery).
pub const LABEL_GPU_PRODUCT: &str = "nvidia.com/gpu.product";
/// Node label overriding the GPU model name (e.g. to match a scenario's model names).
pub const LABEL_GPU_MODEL: &str = "fleetsim.io/gpu-model";
/// Node label: NVLink/ICI domain (rack) the node belongs to.
pub const LABEL_DOMAIN: &str = "fleetsim.io/domain";
/// Node label: block (group of domains) the node belongs to.
pub const LABEL_BLOCK: &str = "fleetsim.io/block";
/// Node label: the node's tie-break rank (a non-negative integer; lower wins). Nodes are
/// ordered by it, then by their position in the request.
pub const LABEL_RANK: &str = "fleetsim.io/rank";
/// Node annotation: free GPU-milli of each accelerator, comma-separated, in device order.
pub const ANN_GPU_FREE: &str = "fleetsim.io/gpu-free-milli";
/// Node annotation: free CPU, milli-cores.
pub const ANN_CPU_FREE: &str = "fleetsim.io/cpu-free-milli";
/// Node annotation: free memory, MiB.
pub const ANN_MEM_FREE: &str = "fleetsim.io/memory-free-mib";
/// Pod annotation: GPU-milli per bound accelerator (`1..=1000`; a GPU-sharing pod).
pub const ANN_GPU_MILLI: &str = "fleetsim.io/gpu-milli";
/// Pod annotation: accelerators per pod (overrides the `nvidia.com/gpu` request).
pub const ANN_GPU_COUNT: &str = "fleetsim.io/gpu-count";
/// Pod annotation: allowed GPU models, comma-separated (absent: any).
pub const ANN_GPU_MODELS: &str = "fleetsim.io/gpu-models";
/// Pod annotation: tasks of the gang still to place, this pod included (default 1).
pub const ANN_GANG_TASKS: &str = "fleetsim.io/gang-tasks";
/// Pod annotation: the gang's topology constraint, `required:<level>` or
/// `preferred:<level>` with level `node`, `domain`, `block` or `cell`.
pub const ANN_TOPOLOGY: &str = "fleetsim.io/topology";
/// Pod annotation: slices of the gang, `<tasks>:<level>`.
pub const ANN_TOPOLOGY_SLICE: &str = "fleetsim.io/topology-slice";
/// Pod annotation: a Ray placement-group strategy (`PACK`, `SPREAD`, `STRICT_PACK`,
/// `STRICT_SPREAD`).
pub const ANN_RAY: &str = "fleetsim.io/ray-strategy";
/// Pod annotation: the placement policy for this pod (overrides the server's default).
pub const ANN_PLACEMENT: &str = "fleetsim.io/placement";
/// Victim pod annotation: the accelerators it holds, `<mask>:<milli>` (mask in hex, e.g.
/// `0x3:1000`).
pub const ANN_GPU_ALLOC: &str = "fleetsim.io/gpu-alloc";

/// Longest value of a label or annotation the extender reads, bytes (`gpu-free-milli` of a
/// 64-accelerator node is under 320). Longer values are refused, naming the key; labels and
/// annotations the extender does not read are not limited here (only by the body limit)
/// and are never kept.
pub const MAX_VALUE_BYTES: usize = 4096;

/// Most tasks in a gang (`fleetsim.io/gang-tasks`).
pub const MAX_GANG_TASKS: u32 = 4096;

/// Most placement work per request: gang tasks × nodes. Placing a gang visits every node
/// once per task; 4,000,000 is about a quarter of a second on one core (4,096 tasks on
/// 976 nodes, or 1,000 tasks on 4,000).
pub const MAX_PLACEMENT_WORK: u64 = 4_000_000;

/// The node labels the extender reads.
pub const NODE_LABELS: &[&str] = &[
    LABEL_GPU_MODEL,
    LABEL_GPU_PRODUCT,
    LABEL_DOMAIN,
    LABEL_BLOCK,
    LABEL_RANK,
];
/// The node annotations the extender reads.
pub const NODE_ANNOTATIONS: &[&str] = &[ANN_GPU_FREE, ANN_CPU_FREE, ANN_MEM_FREE];
/// The pod annotations the extender reads.
pub const POD_ANNOTATIONS: &[&str] = &[
    ANN_GPU_MILLI,
    ANN_GPU_COUNT,
    ANN_GPU_MODELS,
    ANN_GANG_TASKS,
    ANN_TOPOLOGY,
    ANN_TOPOLOGY_SLICE,
    ANN_RAY,
    ANN_PLACEMENT,
    ANN_GPU_ALLOC,
];

fn check_sizes(
    obj: &str,
    map: &BTreeMap<String, String>,
    keys: &[&str],
    kind: &str,
) -> Result<(), InputError> {
    for k in keys {
        if let Some(v) = map.get(*k) {
            if v.len() > MAX_VALUE_BYTES {
                return Err(bad(format!(
                    "{obj}: {kind} {k} is {} bytes, over the limit of {MAX_VALUE_BYTES}",
                    v.len()
                )));
            }
        }
    }
    Ok(())
}

/// A node object trimmed to what the extender reads (name, the labels and annotations in
/// [`NODE_LABELS`] and [`NODE_ANNOTATIONS`], `spec.unschedulable`, and the allocatable
/// `cpu`, `memory` and `nvidia.com/gpu`), as JSON; `None` when `raw` is not a node.
pub fn trim_node(raw: &serde_json::value::RawValue) -> Option<Box<serde_json::value::RawValue>> {
    let mut n: Node = serde_json::from_str(raw.get()).ok()?;
    n.metadata
        .labels
        .retain(|k, _| NODE_LABELS.contains(&k.as_str()));
    n.metadata
        .annotations
        .retain(|k, _| NODE_ANNOTATIONS.contains(&k.as_str()));
    n.metadata.uid.clear();
    n.metadata.namespace.clear();
    n.status
        .allocatable
        .retain(|k, _| ["cpu", "memory", GPU_RESOURCE].contains(&k.as_str()));
    serde_json::value::to_raw_value(&n).ok()
}

/// A request that cannot be turned into a snapshot: the object, the key, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

fn bad(what: impl Into<String>) -> InputError {
    InputError(what.into())
}

/// A Kubernetes quantity (`"500m"`, `"2"`, `"1.5"`, `"4Gi"`, `"1e3"`, or a JSON number) in
/// units of `1/scale` of the base unit, rounded up when `ceil`, else down
/// ([`fleetsim_policies::quantity::parse_scaled`]).
///
/// # Errors
/// A message for an unparsable, negative or out-of-range quantity.
pub fn quantity(v: &serde_json::Value, scale: u128, ceil: bool) -> Result<u64, String> {
    let s = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        other => return Err(format!("quantity must be a string or number, got {other}")),
    };
    let rounding = if ceil { Rounding::Up } else { Rounding::Down };
    let q = parse_scaled(&s, scale, rounding)?;
    u64::try_from(q).map_err(|_| format!("`{s}` is too large"))
}

/// An extended-resource quantity (`nvidia.com/gpu`): a whole number. Kubernetes refuses a
/// fractional extended resource (`"0.5"`, `"1.5"`, `"1m"`), so such a request is malformed,
/// not rounded; GPU sharing is asked for with the `fleetsim.io/gpu-milli` annotation.
///
/// # Errors
/// A message for an unparsable, negative or fractional quantity.
pub fn whole_quantity(v: &serde_json::Value) -> Result<u64, String> {
    let milli = quantity(v, 1000, true)?;
    if milli % 1000 != 0 || quantity(v, 1000, false)? != milli {
        return Err(format!(
            "`{}` is not a whole number: {GPU_RESOURCE} is an extended resource, counted in whole accelerators (share one with the {ANN_GPU_MILLI} annotation)",
            v.as_str().map_or_else(|| v.to_string(), str::to_string)
        ));
    }
    Ok(milli / 1000)
}

/// The request's nodes as a one-cell fleet.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The fleet: one cell (`CellId(0)`), nodes in rank order, usage applied.
    pub fleet: FleetState,
    /// For each [`NodeId`], the node's index in the request.
    pub request_pos: Vec<usize>,
    /// For each request position, the node's name.
    pub names: Vec<String>,
    /// For each request position, its [`NodeId`].
    pub ids: Vec<NodeId>,
}

struct NodeIn {
    name: String,
    model: Option<String>,
    gpus: u32,
    cpu_milli: u64,
    mem_mib: u64,
    domain: Option<String>,
    block: Option<String>,
    rank: u64,
    gpu_free: Option<Vec<u32>>,
    cpu_free: Option<u64>,
    mem_free: Option<u64>,
    unschedulable: bool,
}

fn alloc_q(n: &Node, key: &str, scale: u128) -> Result<u64, InputError> {
    match n.status.allocatable.get(key) {
        None => Ok(0),
        Some(v) if key == GPU_RESOURCE => whole_quantity(v).map_err(|e| {
            bad(format!(
                "node `{}`: status.allocatable.{key}: {e}",
                n.metadata.name
            ))
        }),
        Some(v) => quantity(v, scale, false).map_err(|e| {
            bad(format!(
                "node `{}`: status.allocatable.{key}: {e}",
                n.metadata.name
            ))
        }),
    }
}

fn parse_u64(obj: &str, key: &str, v: &str) -> Result<u64, InputError> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| bad(format!("{obj}: {key} `{v}` is not a non-negative integer")))
}

fn node_in(n: &Node) -> Result<NodeIn, InputError> {
    let name = n.metadata.name.clone();
    if name.is_empty() {
        return Err(bad("a node has no metadata.name"));
    }
    let obj = format!("node `{name}`");
    if name.len() > MAX_VALUE_BYTES {
        return Err(bad(format!(
            "a node's metadata.name is {} bytes, over the limit of {MAX_VALUE_BYTES}",
            name.len()
        )));
    }
    check_sizes(&obj, &n.metadata.labels, NODE_LABELS, "label")?;
    check_sizes(
        &obj,
        &n.metadata.annotations,
        NODE_ANNOTATIONS,
        "annotation",
    )?;
    let gpus = alloc_q(n, GPU_RESOURCE, 1)?;
    if gpus > 64 {
        return Err(bad(format!(
            "{obj}: {gpus} accelerators exceed the maximum of 64"
        )));
    }
    let labels = &n.metadata.labels;
    let ann = &n.metadata.annotations;
    let model = labels
        .get(LABEL_GPU_MODEL)
        .or(labels.get(LABEL_GPU_PRODUCT))
        .cloned()
        .filter(|_| gpus > 0);
    let model = match (gpus, model) {
        (0, _) => None,
        (_, Some(m)) => Some(m),
        (_, None) => Some("unknown".to_string()),
    };
    let gpu_free = match ann.get(ANN_GPU_FREE) {
        None => None,
        Some(v) => {
            let list: Vec<u32> = if v.trim().is_empty() {
                Vec::new()
            } else {
                v.split(',')
                    .map(|x| {
                        parse_u64(&obj, ANN_GPU_FREE, x).and_then(|f| {
                            u32::try_from(f).ok().filter(|&f| f <= 1000).ok_or_else(|| {
                                bad(format!("{obj}: {ANN_GPU_FREE}: {f} exceeds 1000"))
                            })
                        })
                    })
                    .collect::<Result<_, _>>()?
            };
            if list.len() as u64 != gpus {
                return Err(bad(format!(
                    "{obj}: {ANN_GPU_FREE} lists {} accelerators, allocatable {GPU_RESOURCE} is {gpus}",
                    list.len()
                )));
            }
            Some(list)
        }
    };
    let opt = |key: &str| -> Result<Option<u64>, InputError> {
        ann.get(key).map(|v| parse_u64(&obj, key, v)).transpose()
    };
    Ok(NodeIn {
        model,
        gpus: gpus as u32,
        cpu_milli: alloc_q(n, "cpu", 1000)?,
        mem_mib: alloc_q(n, "memory", 1)? >> 20,
        domain: labels.get(LABEL_DOMAIN).cloned(),
        block: labels.get(LABEL_BLOCK).cloned(),
        rank: match labels.get(LABEL_RANK) {
            Some(v) => parse_u64(&obj, LABEL_RANK, v)?,
            None => u64::MAX,
        },
        gpu_free,
        cpu_free: opt(ANN_CPU_FREE)?,
        mem_free: opt(ANN_MEM_FREE)?,
        unschedulable: n.spec.unschedulable,
        name,
    })
}

/// Dense ids for label values: numbers in numeric order, then other strings in byte order.
fn dense_ids(values: impl Iterator<Item = String>) -> BTreeMap<String, u32> {
    let set: BTreeSet<(u64, String)> = values
        .map(|v| (v.parse::<u64>().unwrap_or(u64::MAX), v))
        .collect();
    set.into_iter()
        .enumerate()
        .map(|(i, (_, v))| (v, i as u32))
        .collect()
}

impl Snapshot {
    /// Builds the snapshot of `nodes` (raw `v1.Node` objects, in request order).
    ///
    /// Capacity: `status.allocatable` `cpu`, `memory`, `nvidia.com/gpu`; GPU model from the
    /// labels; topology from `fleetsim.io/domain` / `fleetsim.io/block` (a node without a
    /// domain label is a domain of its own; without a block label, block `""`); usage from the
    /// free-resource annotations (absent: the node is free in that dimension). Node ids follow
    /// `fleetsim.io/rank`, then request order: the final tie-break of every policy.
    ///
    /// # Errors
    /// [`InputError`] naming the node and key for a malformed node, a duplicate name, or free
    /// amounts above capacity.
    pub fn build(nodes: &[Box<serde_json::value::RawValue>]) -> Result<Snapshot, InputError> {
        let mut ins = Vec::with_capacity(nodes.len());
        let mut seen = BTreeSet::new();
        for (i, v) in nodes.iter().enumerate() {
            let n: Node =
                serde_json::from_str(v.get()).map_err(|e| bad(format!("Nodes.items[{i}]: {e}")))?;
            let n = node_in(&n)?;
            if !seen.insert(n.name.clone()) {
                return Err(bad(format!("node `{}` appears twice", n.name)));
            }
            ins.push(n);
        }
        let mut order: Vec<usize> = (0..ins.len()).collect();
        order.sort_by_key(|&i| (ins[i].rank, i));
        let models: Vec<String> = ins
            .iter()
            .filter_map(|n| n.model.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let domains = dense_ids(ins.iter().map(|n| match &n.domain {
            Some(d) => d.clone(),
            None => format!("\u{0}node/{}", n.name),
        }));
        let blocks = dense_ids(ins.iter().map(|n| n.block.clone().unwrap_or_default()));
        let specs: Vec<NodeSpec> = order
            .iter()
            .map(|&i| {
                let n = &ins[i];
                let domain_key = match &n.domain {
                    Some(d) => d.clone(),
                    None => format!("\u{0}node/{}", n.name),
                };
                NodeSpec {
                    name: n.name.clone(),
                    cell: CellId(0),
                    block: blocks[&n.block.clone().unwrap_or_default()],
                    domain: domains[&domain_key],
                    model: n.model.as_ref().map(|m| {
                        ModelId(models.iter().position(|x| x == m).expect("collected") as u16)
                    }),
                    gpus: n.gpus,
                    cpu_milli: n.cpu_milli,
                    mem_mib: n.mem_mib,
                }
            })
            .collect();
        if models.len() > 128 {
            return Err(bad("more than 128 distinct GPU models"));
        }
        let mut fleet = FleetState::new(vec!["cluster".into()], models, specs)
            .map_err(|e| bad(e.to_string()))?;
        let mut ids = vec![NodeId(0); ins.len()];
        let mut request_pos = vec![0; ins.len()];
        for (id, &i) in order.iter().enumerate() {
            ids[i] = NodeId(id as u32);
            request_pos[id] = i;
        }
        for (id, &i) in order.iter().enumerate() {
            let n = &ins[i];
            let node = NodeId(id as u32);
            let obj = format!("node `{}`", n.name);
            if let Some(free) = &n.gpu_free {
                for (g, &f) in free.iter().enumerate() {
                    if f < 1000 {
                        fleet
                            .apply(&TaskAlloc {
                                node,
                                gpu_mask: 1 << g,
                                gpu_milli: 1000 - f,
                                cpu_milli: 0,
                                mem_mib: 0,
                            })
                            .map_err(|e| bad(format!("{obj}: {e}")))?;
                    }
                }
            }
            let over = |key: &str, free: u64, cap: u64| {
                bad(format!("{obj}: {key} {free} exceeds the capacity {cap}"))
            };
            let cpu_used = match n.cpu_free {
                Some(f) if f > n.cpu_milli => return Err(over(ANN_CPU_FREE, f, n.cpu_milli)),
                Some(f) => n.cpu_milli - f,
                None => 0,
            };
            let mem_used = match n.mem_free {
                Some(f) if f > n.mem_mib => return Err(over(ANN_MEM_FREE, f, n.mem_mib)),
                Some(f) => n.mem_mib - f,
                None => 0,
            };
            if cpu_used > 0 || mem_used > 0 {
                fleet
                    .apply(&TaskAlloc {
                        node,
                        gpu_mask: 0,
                        gpu_milli: 0,
                        cpu_milli: cpu_used,
                        mem_mib: mem_used,
                    })
                    .map_err(|e| bad(format!("{obj}: {e}")))?;
            }
            if n.unschedulable {
                fleet.set_schedulable(node, false);
            }
        }
        Ok(Snapshot {
            fleet,
            request_pos,
            names: ins.into_iter().map(|n| n.name).collect(),
            ids,
        })
    }

    /// The name of a node of the fleet.
    pub fn name(&self, id: NodeId) -> &str {
        &self.names[self.request_pos[id.index()]]
    }
}

/// The pod as the policy crate sees it: one task of a gang.
#[derive(Clone, Debug)]
pub struct PodRequest {
    /// One task's request.
    pub shape: TaskShape,
    /// Allowed GPU model names (empty: any).
    pub models: Vec<String>,
    /// Tasks of the gang still to place, this pod included.
    pub gang_tasks: u32,
    /// The gang's topology constraint, if the pod gives one.
    pub topology: Option<TopologySpec>,
    /// The placement policy the pod asks for, if any.
    pub placement: Option<String>,
}

fn level(obj: &str, key: &str, s: &str) -> Result<Level, InputError> {
    match s {
        "node" => Ok(Level::Node),
        "domain" => Ok(Level::Domain),
        "block" => Ok(Level::Block),
        "cell" => Ok(Level::Cell),
        _ => Err(bad(format!(
            "{obj}: {key}: unknown level `{s}`; valid levels: node, domain, block, cell"
        ))),
    }
}

impl PodRequest {
    /// Reads a pod: container requests (and limits, for `nvidia.com/gpu` given only as a
    /// limit) summed over containers; CPU rounded up to milli-cores, memory up to MiB.
    ///
    /// # Errors
    /// [`InputError`] naming the pod and key for a malformed quantity or annotation, or a
    /// shape the policy crate rejects ([`TaskShape::validate`]).
    pub fn from_pod(pod: &Pod) -> Result<PodRequest, InputError> {
        PodRequest::read(pod, false)
    }

    /// A preemption victim as a request: as [`PodRequest::from_pod`], except that the
    /// number of accelerators it holds is its `nvidia.com/gpu` request whenever it has one
    /// (the device plugin allocated exactly that many; a `fleetsim.io/gpu-count` annotation,
    /// which the pod's owner can edit at any time, cannot lower it).
    ///
    /// # Errors
    /// As [`PodRequest::from_pod`].
    pub fn victim_from_pod(pod: &Pod) -> Result<PodRequest, InputError> {
        PodRequest::read(pod, true)
    }

    fn read(pod: &Pod, victim: bool) -> Result<PodRequest, InputError> {
        let obj = if pod.metadata.namespace.is_empty() {
            format!("pod `{}`", pod.metadata.name)
        } else {
            format!("pod `{}/{}`", pod.metadata.namespace, pod.metadata.name)
        };
        let mut cpu = 0u64;
        let mut mem = 0u64;
        let mut gpus = 0u64;
        for (ci, c) in pod.spec.containers.iter().enumerate() {
            let q = |key: &str, scale: u128| -> Result<u64, InputError> {
                let r = &c.resources;
                match r.requests.get(key).or_else(|| r.limits.get(key)) {
                    None => Ok(0),
                    Some(v) if key == GPU_RESOURCE => whole_quantity(v).map_err(|e| {
                        bad(format!(
                            "{obj}: spec.containers[{ci}].resources.requests.{key}: {e}"
                        ))
                    }),
                    Some(v) => quantity(v, scale, true).map_err(|e| {
                        bad(format!(
                            "{obj}: spec.containers[{ci}].resources.requests.{key}: {e}"
                        ))
                    }),
                }
            };
            cpu = cpu.saturating_add(q("cpu", 1000)?);
            mem = mem.saturating_add(q("memory", 1)?.div_ceil(1 << 20));
            gpus = gpus.saturating_add(q(GPU_RESOURCE, 1)?);
        }
        let ann = &pod.metadata.annotations;
        check_sizes(&obj, ann, POD_ANNOTATIONS, "annotation")?;
        let num = |key: &str| -> Result<Option<u64>, InputError> {
            ann.get(key).map(|v| parse_u64(&obj, key, v)).transpose()
        };
        let milli = num(ANN_GPU_MILLI)?;
        let count = match num(ANN_GPU_COUNT)? {
            _ if victim && gpus > 0 => gpus,
            Some(c) => c,
            None if gpus == 0 && milli.is_some() => 1,
            None => gpus,
        };
        let shape = TaskShape {
            num_gpu: u32::try_from(count).unwrap_or(u32::MAX),
            gpu_milli: if count == 0 {
                0
            } else {
                u32::try_from(milli.unwrap_or(1000)).unwrap_or(u32::MAX)
            },
            cpu_milli: cpu,
            mem_mib: mem,
        };
        shape
            .validate()
            .map_err(|e| bad(format!("{obj}: GPU request: {e}")))?;
        let gang_tasks = match num(ANN_GANG_TASKS)? {
            None => 1,
            Some(n) if (1..=u64::from(MAX_GANG_TASKS)).contains(&n) => n as u32,
            Some(n) => {
                return Err(bad(format!(
                    "{obj}: {ANN_GANG_TASKS} {n} is outside 1..={MAX_GANG_TASKS}"
                )))
            }
        };
        let mut topo = TopologySpec::default();
        if let Some(v) = ann.get(ANN_TOPOLOGY) {
            let (mode, lv) = v.split_once(':').ok_or_else(|| {
                bad(format!(
                    "{obj}: {ANN_TOPOLOGY} `{v}` is not `required:<level>` or `preferred:<level>`"
                ))
            })?;
            topo.mode = match mode {
                "required" => TopologyMode::Required,
                "preferred" => TopologyMode::Preferred,
                _ => {
                    return Err(bad(format!(
                        "{obj}: {ANN_TOPOLOGY}: unknown mode `{mode}`; valid: required, preferred"
                    )))
                }
            };
            topo.level = Some(level(&obj, ANN_TOPOLOGY, lv)?);
        }
        if let Some(v) = ann.get(ANN_TOPOLOGY_SLICE) {
            let (n, lv) = v.split_once(':').ok_or_else(|| {
                bad(format!(
                    "{obj}: {ANN_TOPOLOGY_SLICE} `{v}` is not `<tasks>:<level>`"
                ))
            })?;
            let n = parse_u64(&obj, ANN_TOPOLOGY_SLICE, n)?;
            if n == 0 || n > u64::from(u32::MAX) {
                return Err(bad(format!("{obj}: {ANN_TOPOLOGY_SLICE}: slice size {n}")));
            }
            topo.slice_size = Some(n as u32);
            topo.slice_level = level(&obj, ANN_TOPOLOGY_SLICE, lv)?;
        }
        if let Some(v) = ann.get(ANN_RAY) {
            topo.ray = Some(
                v.parse::<RayStrategy>()
                    .map_err(|e| bad(format!("{obj}: {ANN_RAY}: {e}")))?,
            );
        }
        Ok(PodRequest {
            shape,
            models: ann
                .get(ANN_GPU_MODELS)
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            gang_tasks,
            topology: (!topo.is_empty()).then_some(topo),
            placement: ann.get(ANN_PLACEMENT).cloned(),
        })
    }

    /// The model constraint against `fleet`'s models: `Ok(ANY)` for no constraint; `Err` with
    /// the names when none of the named models is in the fleet (then no node fits).
    pub fn model_set(&self, fleet: &FleetState) -> Result<ModelSet, String> {
        if self.models.is_empty() {
            return Ok(ModelSet::ANY);
        }
        let mut set = ModelSet::ANY;
        for m in &self.models {
            if let Some(i) = fleet.models().iter().position(|x| x == m) {
                set.insert(ModelId(i as u16));
            }
        }
        if set.is_any() {
            Err(self.models.join(","))
        } else {
            Ok(set)
        }
    }

    /// The gang as a pending job (ids and times are irrelevant to placement). A gang of more
    /// than one task without a constraint of its own gets the policy's `default_topology`,
    /// as the simulator's scheduler gives it at submit.
    pub fn job(&self, models: ModelSet, default_topology: Option<TopologySpec>) -> PendingJob {
        PendingJob {
            shape: self.shape,
            tasks: self.gang_tasks,
            models,
            topology: self
                .topology
                .or(default_topology.filter(|_| self.gang_tasks > 1)),
            ..PendingJob::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities() {
        assert_eq!(quantity(&json!("500m"), 1000, true), Ok(500));
        assert_eq!(quantity(&json!("2"), 1000, true), Ok(2000));
        assert_eq!(quantity(&json!(1.5), 1000, true), Ok(1500));
        assert_eq!(quantity(&json!("4Gi"), 1, true), Ok(4 << 30));
        assert_eq!(quantity(&json!("1e3"), 1, true), Ok(1000));
        assert_eq!(quantity(&json!("1k"), 1, true), Ok(1000));
        assert_eq!(quantity(&json!("0.0001"), 1000, true), Ok(1));
        assert_eq!(quantity(&json!("0.0001"), 1000, false), Ok(0));
        assert!(quantity(&json!("-1"), 1, true).is_err());
        assert!(quantity(&json!("abc"), 1, true).is_err());
        assert!(quantity(&json!(""), 1, true).is_err());
        assert!(quantity(&json!(true), 1, true).is_err());
        assert!(quantity(&json!("99999999999999999999999Ei"), 1, true).is_err());
        // Far below a byte: one byte up, none down (the exponent clamps at −100).
        assert_eq!(quantity(&json!("1e-2147483648"), 1, true), Ok(1));
        assert_eq!(quantity(&json!("1e-2147483648"), 1, false), Ok(0));
        assert!(quantity(&json!("1e2147483647"), 1, true).is_err());
    }

    /// Issue #23 defect 8: a fractional `nvidia.com/gpu` request is malformed (400), not
    /// rounded up to a whole accelerator.
    #[test]
    fn fractional_gpu_requests_are_malformed() {
        assert_eq!(whole_quantity(&json!("2")), Ok(2));
        assert_eq!(whole_quantity(&json!(3)), Ok(3));
        assert_eq!(whole_quantity(&json!("1k")), Ok(1000));
        assert_eq!(whole_quantity(&json!("2000m")), Ok(2));
        for bad in [json!("0.5"), json!("1m"), json!("1.5"), json!(0.5)] {
            let e = whole_quantity(&bad).unwrap_err();
            assert!(e.contains("is not a whole number"), "{bad}: {e}");
        }
        let pod = |gpu: &str| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [
                {"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpu}}}]}}))
            .unwrap()
        };
        assert!(PodRequest::from_pod(&pod("1")).is_ok());
        for gpu in ["0.5", "1m", "1.5"] {
            let e = PodRequest::from_pod(&pod(gpu)).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "pod `p`: spec.containers[0].resources.requests.nvidia.com/gpu: `{gpu}` is not a whole number"
                )),
                "{e}"
            );
        }
    }
}
