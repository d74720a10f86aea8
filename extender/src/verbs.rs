//! The three verbs as pure functions of a request: no I/O, no clock. The HTTP layer
//! ([`crate::server`]) only parses, calls these, and serializes.

use std::collections::BTreeMap;

use fleetsim_policies::{
    minimal_victim_set, place_gang, FleetState, ModelSet, NodeId, PlaceCtx, PlacementKind,
    TaskAlloc, TaskShape, VictimKey, VictimTrial,
};

use crate::snapshot::{InputError, PodRequest, Snapshot, ANN_GPU_ALLOC};
use crate::wire::{
    ExtenderArgs, ExtenderFilterResult, ExtenderPreemptionArgs, ExtenderPreemptionResult,
    HostPriority, MetaPod, MetaVictims, NodeList, Pod, MAX_EXTENDER_PRIORITY,
};

/// The policy a request is decided with: the pod's `fleetsim.io/placement` annotation, or
/// the server's default.
///
/// # Errors
/// [`InputError`] listing the valid names for an unknown policy name.
pub fn policy_for(pod: &PodRequest, default: PlacementKind) -> Result<PlacementKind, InputError> {
    match &pod.placement {
        None => Ok(default),
        Some(name) => name.parse::<PlacementKind>().map_err(|e| {
            InputError(format!(
                "annotation {}: {e}",
                crate::snapshot::ANN_PLACEMENT
            ))
        }),
    }
}

/// The placement decision for a pod on a snapshot: the whole gang's allocations, as the
/// simulator's [`place_gang`] makes them (same policy object, fresh [`PlaceCtx`]: node rank =
/// node id, seed 0).
#[derive(Clone, Debug)]
pub struct Placed {
    /// The policy used.
    pub policy: PlacementKind,
    /// Tasks of the gang placed (the pod and the rest of its gang).
    pub tasks: u32,
    /// One allocation per task of the gang; `None` when the gang does not fit.
    pub gang: Option<Vec<TaskAlloc>>,
    /// Per node (by [`NodeId`]): `Some(reason)` when one task of the pod does not fit there
    /// now, with `true` when it never could (capacity or model).
    pub misfit: Vec<Option<(String, bool)>>,
    /// Per node (by [`NodeId`]): the policy's own score ([`fleetsim_policies::Placement::node_score`]),
    /// when it has one and the node fits.
    pub scores: Vec<Option<i64>>,
}

/// Why one task of `req` does not fit node `n` now (`None`: it fits), and whether no
/// eviction could help.
fn misfit(
    fleet: &FleetState,
    n: NodeId,
    req: &PodRequest,
    models: Result<fleetsim_policies::ModelSet, String>,
) -> Option<(String, bool)> {
    let s = &req.shape;
    let node = fleet.node(n);
    let models = match models {
        Ok(m) => m,
        Err(names) if s.num_gpu > 0 => {
            return Some((format!("no node has GPU model {names}"), true))
        }
        Err(_) => fleetsim_policies::ModelSet::ANY,
    };
    if s.num_gpu > 0 {
        match node.model {
            None => return Some(("node has no GPU".into(), true)),
            Some(m) if !models.allows(m) => {
                return Some((
                    format!(
                        "GPU model {} not in the pod's models {}",
                        fleet.models()[m.index()],
                        req.models.join(",")
                    ),
                    true,
                ))
            }
            _ => {}
        }
        if node.gpus < s.num_gpu {
            return Some((
                format!("node has {} GPUs, pod needs {}", node.gpus, s.num_gpu),
                true,
            ));
        }
    }
    if node.cpu_milli < s.cpu_milli {
        return Some((
            format!(
                "node has {} CPU milli-cores, pod needs {}",
                node.cpu_milli, s.cpu_milli
            ),
            true,
        ));
    }
    if node.mem_mib < s.mem_mib {
        return Some((
            format!(
                "node has {} MiB memory, pod needs {}",
                node.mem_mib, s.mem_mib
            ),
            true,
        ));
    }
    if !node.schedulable {
        return Some(("node is unschedulable".into(), false));
    }
    if fleet.fits(n, s, models) {
        return None;
    }
    let why = if node.free_cpu_milli < s.cpu_milli {
        format!(
            "insufficient CPU: {} milli-cores free, pod needs {}",
            node.free_cpu_milli, s.cpu_milli
        )
    } else if node.free_mem_mib < s.mem_mib {
        format!(
            "insufficient memory: {} MiB free, pod needs {}",
            node.free_mem_mib, s.mem_mib
        )
    } else {
        format!(
            "insufficient GPU: pod needs {} GPU(s) with {} GPU-milli free each; free per GPU: {:?}",
            s.num_gpu,
            s.gpu_milli,
            fleet.gpu_free(n)
        )
    };
    Some((why, false))
}

/// Decides a pod on a snapshot with the simulator's code.
pub fn place(snap: &Snapshot, req: &PodRequest, policy: PlacementKind) -> Placed {
    let p = policy.build();
    let models = req.model_set(&snap.fleet);
    let fleet = &snap.fleet;
    let n = fleet.nodes().len();
    let misfits: Vec<Option<(String, bool)>> = (0..n)
        .map(|i| misfit(fleet, NodeId(i as u32), req, models.clone()))
        .collect();
    let Ok(set) = models else {
        return Placed {
            policy,
            tasks: req.gang_tasks,
            gang: None,
            misfit: misfits,
            scores: vec![None; n],
        };
    };
    let mut ctx = PlaceCtx::new();
    let scores = (0..n)
        .map(|i| {
            let id = NodeId(i as u32);
            if misfits[i].is_some() {
                return None;
            }
            p.node_score(&mut ctx, fleet, id, &req.shape, set)
                .map(|(s, _)| s)
        })
        .collect();
    let job = req.job(set, p.default_topology());
    let mut work = fleet.clone();
    let mut ctx = PlaceCtx::new();
    let gang = place_gang(
        p.as_ref(),
        &mut ctx,
        &mut work,
        fleetsim_policies::CellId(0),
        &job,
    );
    Placed {
        policy,
        tasks: req.gang_tasks,
        gang,
        misfit: misfits,
        scores,
    }
}

/// The snapshot and pod of a `filter` / `prioritize` request.
///
/// # Errors
/// [`InputError`] when `Nodes` is missing (the extender needs node objects:
/// `nodeCacheCapable: false`) or a node or the pod is malformed.
pub fn read_args(args: &ExtenderArgs) -> Result<(Snapshot, PodRequest), InputError> {
    let Some(nodes) = &args.nodes else {
        return Err(InputError(
            "missing field `Nodes`: this extender reads node resources from the request; set nodeCacheCapable: false".into(),
        ));
    };
    let snap = Snapshot::build(&nodes.items)?;
    let req = PodRequest::from_pod(&args.pod)?;
    let work = u64::from(req.gang_tasks) * snap.names.len() as u64;
    if work > crate::snapshot::MAX_PLACEMENT_WORK {
        return Err(InputError(format!(
            "a gang of {} task(s) on {} nodes is {work} task-node steps, over the limit of {}",
            req.gang_tasks,
            snap.names.len(),
            crate::snapshot::MAX_PLACEMENT_WORK
        )));
    }
    Ok((snap, req))
}

/// `filter`: nodes where one task of the pod fits now pass, provided the pod's whole gang can
/// be placed on the nodes given; the others fail with a reason (unresolvable when the node
/// could never hold the task).
pub fn filter(args: &ExtenderArgs, snap: &Snapshot, placed: &Placed) -> ExtenderFilterResult {
    let mut out = ExtenderFilterResult::default();
    let items = &args.nodes.as_ref().expect("read_args checked Nodes").items;
    let mut pass = Vec::new();
    let mut names = Vec::new();
    for (pos, item) in items.iter().enumerate() {
        let id = snap.ids[pos];
        let name = snap.names[pos].clone();
        match &placed.misfit[id.index()] {
            Some((why, true)) => {
                out.failed_and_unresolvable_nodes.insert(name, why.clone());
            }
            Some((why, false)) => {
                out.failed_nodes.insert(name, why.clone());
            }
            None if placed.gang.is_none() => {
                out.failed_nodes.insert(
                    name,
                    format!(
                        "the pod's gang of {} task(s) does not fit the nodes given (policy {})",
                        placed.tasks, placed.policy
                    ),
                );
            }
            None => {
                pass.push(item.clone());
                names.push(name);
            }
        }
    }
    out.nodes = Some(NodeList { items: pass });
    out.node_names = Some(names);
    out
}

/// `prioritize`: the node the policy places the pod's task on (the first task of the gang)
/// gets [`MAX_EXTENDER_PRIORITY`]; every other node that fits gets the policy's own score
/// ([`fleetsim_policies::Placement::node_score`]) scaled linearly onto `0..=9` across those
/// nodes (0 for a policy without per-node scores); nodes that do not fit get 0. Hosts are in
/// request order.
pub fn prioritize(snap: &Snapshot, placed: &Placed) -> Vec<HostPriority> {
    let chosen = placed.gang.as_ref().and_then(|g| g.first()).map(|a| a.node);
    let others: Vec<i64> = placed
        .scores
        .iter()
        .enumerate()
        .filter(|&(i, s)| s.is_some() && Some(NodeId(i as u32)) != chosen)
        .filter_map(|(_, s)| *s)
        .collect();
    let lo = others.iter().copied().min().unwrap_or(0);
    let hi = others.iter().copied().max().unwrap_or(0);
    snap.ids
        .iter()
        .enumerate()
        .map(|(pos, &id)| {
            let score = if Some(id) == chosen {
                MAX_EXTENDER_PRIORITY
            } else {
                match placed.scores[id.index()] {
                    Some(s) if hi > lo => (s - lo) * (MAX_EXTENDER_PRIORITY - 1) / (hi - lo),
                    Some(_) => MAX_EXTENDER_PRIORITY - 1,
                    None => 0,
                }
            };
            HostPriority {
                host: snap.names[pos].clone(),
                score,
            }
        })
        .collect()
}

/// The gang's placement as text: `node:mask` per task (mask in hex), comma-separated, or
/// `none` — the `fleetsim-placement` response header of `prioritize`.
pub fn placement_text(snap: &Snapshot, placed: &Placed) -> String {
    match &placed.gang {
        None => "none".into(),
        Some(g) => g
            .iter()
            .map(|a| format!("{}:{:x}", snap.name(a.node), a.gpu_mask))
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// A victim's claimed accelerators (`fleetsim.io/gpu-alloc`): `(mask, milli)` as written,
/// not yet checked against anything ([`trusted_alloc`] does that).
fn victim_alloc(v: &Pod) -> Result<(PodRequest, Option<(u64, u32)>), InputError> {
    let req = PodRequest::victim_from_pod(v)?;
    let known = match v.metadata.annotations.get(ANN_GPU_ALLOC) {
        None => None,
        Some(s) => {
            let err = || {
                InputError(format!(
                    "victim pod `{}`: {ANN_GPU_ALLOC} `{s}` is not `<hex mask>:<milli>`",
                    v.metadata.name
                ))
            };
            let (m, milli) = s.split_once(':').ok_or_else(err)?;
            let mask = u64::from_str_radix(m.trim_start_matches("0x"), 16).map_err(|_| err())?;
            let milli: u32 = milli.parse().map_err(|_| err())?;
            if milli == 0 || milli > 1000 {
                return Err(err());
            }
            Some((mask, milli))
        }
    };
    Ok((req, known))
}

/// A victim's `fleetsim.io/gpu-alloc` claim, kept only when it agrees with what the extender
/// trusts: the pod's own GPU shape ([`PodRequest::victim_from_pod`]: as many accelerators as
/// it requests, its share on each) and the node's view from the caller's own
/// `filter`/`prioritize` (every claimed accelerator exists on the node and has at least that
/// share in use). A claim that disagrees — `0:1000` (no accelerator), `1:1` (a smaller
/// share than the pod holds), `c0:1` (accelerators the node lacks) — is ignored and the
/// victim is assumed to hold its share on the fullest accelerators, as with no claim, so a
/// pod cannot make itself look cheaper to evict than it is.
fn trusted_alloc(
    fleet: &FleetState,
    node: NodeId,
    req: &PodRequest,
    claim: Option<(u64, u32)>,
) -> (Option<(u64, u32)>, bool) {
    let Some((mask, milli)) = claim else {
        return (None, false);
    };
    let free = fleet.gpu_free(node);
    let within = free.len() >= 64 || mask >> free.len() == 0;
    let ok = within
        && mask.count_ones() == req.shape.num_gpu
        && milli == req.shape.gpu_milli
        && (0..free.len())
            .filter(|&i| mask >> i & 1 == 1)
            .all(|i| 1000 - u32::from(free[i]) >= milli);
    if ok {
        (Some((mask, milli)), false)
    } else {
        (None, true)
    }
}

/// Frees a victim's resources on `node` in `fleet`: its annotated accelerators, or else
/// (approximation) its GPU-milli from the fullest accelerators that can take it back; CPU and
/// memory up to what is in use. Returns the release applied, to put it back with
/// [`FleetState::apply`].
fn free_victim(
    fleet: &mut FleetState,
    node: NodeId,
    req: &PodRequest,
    known: Option<(u64, u32)>,
) -> Vec<TaskAlloc> {
    let n = fleet.node(node).clone();
    let mut out = Vec::new();
    let cpu = req.shape.cpu_milli.min(n.cpu_milli - n.free_cpu_milli);
    let mem = req.shape.mem_mib.min(n.mem_mib - n.free_mem_mib);
    let mut gpu: Vec<TaskAlloc> = Vec::new();
    let free = fleet.gpu_free(node).to_vec();
    let milli = known.map(|k| k.1).unwrap_or(req.shape.gpu_milli);
    let mask = match known {
        Some((m, _)) => m,
        None => {
            // The accelerators with the least free share that can take the share back.
            let mut idx: Vec<usize> = (0..free.len())
                .filter(|&i| u32::from(free[i]) + milli <= 1000)
                .collect();
            idx.sort_by_key(|&i| (free[i], i));
            idx.iter()
                .take(req.shape.num_gpu as usize)
                .fold(0u64, |m, &i| m | 1 << i)
        }
    };
    for (i, &f) in free.iter().enumerate() {
        if mask >> i & 1 == 1 && u32::from(f) + milli <= 1000 && milli > 0 {
            gpu.push(TaskAlloc {
                node,
                gpu_mask: 1 << i,
                gpu_milli: milli,
                cpu_milli: 0,
                mem_mib: 0,
            });
        }
    }
    if cpu > 0 || mem > 0 {
        out.push(TaskAlloc {
            node,
            gpu_mask: 0,
            gpu_milli: 0,
            cpu_milli: cpu,
            mem_mib: mem,
        });
    }
    out.extend(gpu);
    out.retain(|a| fleet.release(a).is_ok());
    out
}

/// The extender's [`VictimTrial`] on a copy of one node: victims are indices into `pods`
/// (in victim order).
struct NodeTrial<'a> {
    fleet: &'a mut FleetState,
    node: NodeId,
    shape: TaskShape,
    models: ModelSet,
    pods: Vec<&'a Pod>,
    /// Per victim, what taking it out released (once taken).
    freed: Vec<Option<Vec<TaskAlloc>>>,
    /// Per victim, what putting it back applied.
    applied: Vec<Vec<TaskAlloc>>,
    /// The last put-back could not apply all the victim's resources.
    back_failed: bool,
    /// The first malformed victim met.
    err: Option<InputError>,
    /// Victim claims ignored ([`trusted_alloc`]).
    ignored: u64,
}

impl VictimTrial for NodeTrial<'_> {
    type Victim = usize;

    fn eligible(&mut self, v: usize) -> bool {
        if self.err.is_some() {
            return false;
        }
        match victim_alloc(self.pods[v]) {
            Ok((vr, claim)) => {
                let (known, ignored) = trusted_alloc(self.fleet, self.node, &vr, claim);
                self.ignored += u64::from(ignored);
                self.freed[v] = Some(free_victim(self.fleet, self.node, &vr, known));
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    fn take_out(&mut self, v: usize) {
        // The first time, `eligible` freed it; again after a failed put-back: release what
        // the put-back applied.
        for a in std::mem::take(&mut self.applied[v]).iter().rev() {
            let _ = self.fleet.release(a);
        }
    }

    fn put_back(&mut self, v: usize) {
        self.back_failed = false;
        let mut applied = Vec::new();
        for a in self.freed[v].as_deref().unwrap_or(&[]) {
            if self.fleet.apply(a).is_ok() {
                applied.push(*a);
            } else {
                self.back_failed = true;
                break;
            }
        }
        self.applied[v] = applied;
    }

    fn fits(&mut self, _taken: &[usize]) -> bool {
        self.fleet.fits(self.node, &self.shape, self.models)
    }

    fn still_fits(&mut self, _taken: &[usize]) -> bool {
        !self.back_failed && self.fleet.fits(self.node, &self.shape, self.models)
    }
}

/// `preempt`: on each node kube-scheduler proposes, the extender keeps the smallest victim set
/// in fleetsim's preemption order ([`VictimKey`], with what pods tell: lower priority first,
/// then most recently started first, then UID; the other components neutral) that lets one
/// task of the pod fit, chosen by the simulator's own [`minimal_victim_set`]: victims are
/// taken in that order until the task fits, then every victim but the last is put back,
/// latest first, if the task still fits without it (Kueue `minimalPreemptions`). A node where
/// even all victims do not make room is dropped. A node the extender has not seen in an
/// earlier `filter` or `prioritize` (no resources known) keeps kube-scheduler's victims.
///
/// `nodes` are the last seen node objects by name (the calling client's own view).
///
/// What victims say about themselves is checked before it counts: their GPU shape comes
/// from their resource requests ([`PodRequest::victim_from_pod`]), and a
/// `fleetsim.io/gpu-alloc` claim that disagrees with that shape or with the node is ignored
/// (see the README's Security section). Returns the answer and how many claims were ignored.
///
/// # Errors
/// [`InputError`] for a malformed pod, victim or node, or a request with neither victims
/// map.
pub fn preempt(
    args: &ExtenderPreemptionArgs,
    nodes: &BTreeMap<String, Box<serde_json::value::RawValue>>,
) -> Result<(ExtenderPreemptionResult, u64), InputError> {
    let req = PodRequest::from_pod(&args.pod)?;
    let mut out = ExtenderPreemptionResult::default();
    let mut ignored = 0u64;
    if let Some(meta) = &args.node_name_to_meta_victims {
        if args.node_name_to_victims.is_none() {
            // Only UIDs: nothing to weigh; keep kube-scheduler's choice.
            out.node_name_to_meta_victims = meta.clone();
            return Ok((out, 0));
        }
    }
    let Some(victims) = &args.node_name_to_victims else {
        return Err(InputError(
            "missing field `NodeNameToVictims` (or `NodeNameToMetaVictims`)".into(),
        ));
    };
    for (name, vs) in victims {
        let meta = |pods: &[&Pod]| MetaVictims {
            pods: pods
                .iter()
                .map(|p| MetaPod {
                    uid: p.metadata.uid.clone(),
                })
                .collect(),
            num_pdb_violations: vs.num_pdb_violations,
        };
        let Some(raw) = nodes.get(name) else {
            let all: Vec<&Pod> = vs.pods.iter().collect();
            out.node_name_to_meta_victims
                .insert(name.clone(), meta(&all));
            continue;
        };
        let snap = Snapshot::build(std::slice::from_ref(raw))?;
        let mut fleet = snap.fleet.clone();
        let node = NodeId(0);
        let models = match req.model_set(&fleet) {
            Ok(m) => m,
            Err(_) if req.shape.num_gpu > 0 => continue,
            Err(_) => fleetsim_policies::ModelSet::ANY,
        };
        // The simulator's victim order ([`VictimKey`]) with what pods tell: priority, start
        // time (as its rank among the victims) and UID (its rank); the rest neutral.
        let rank = |xs: Vec<&Option<String>>, x: &Option<String>| {
            let mut xs = xs;
            xs.sort();
            xs.dedup();
            xs.binary_search(&x).expect("listed") as u64
        };
        let starts: Vec<&Option<String>> = vs.pods.iter().map(|p| &p.status.start_time).collect();
        let uids: Vec<Option<String>> = vs
            .pods
            .iter()
            .map(|p| Some(p.metadata.uid.clone()))
            .collect();
        let mut order: Vec<(VictimKey, &Pod)> = vs
            .pods
            .iter()
            .zip(&uids)
            .map(|(p, uid)| {
                let key = VictimKey {
                    priority: p.spec.priority.unwrap_or(0),
                    start_ms: rank(starts.clone(), &p.status.start_time),
                    seq: rank(uids.iter().collect(), uid),
                    ..VictimKey::default()
                };
                (key, p)
            })
            .collect();
        order.sort_by_key(|&(k, _)| k);
        let chosen: Vec<&Pod> = if fleet.fits(node, &req.shape, models) {
            Vec::new()
        } else {
            let mut trial = NodeTrial {
                fleet: &mut fleet,
                node,
                shape: req.shape,
                models,
                pods: order.iter().map(|&(_, p)| p).collect(),
                freed: vec![None; order.len()],
                applied: vec![Vec::new(); order.len()],
                back_failed: false,
                err: None,
                ignored: 0,
            };
            let set = minimal_victim_set(&mut trial, 0..order.len());
            ignored += trial.ignored;
            if let Some(e) = trial.err {
                return Err(e);
            }
            match set {
                Some(set) => set.into_iter().map(|i| order[i].1).collect(),
                None => continue,
            }
        };
        out.node_name_to_meta_victims
            .insert(name.clone(), meta(&chosen));
    }
    Ok((out, ignored))
}

/// A request's nodes by name, for the server's node cache: each node trimmed to what the
/// extender reads ([`crate::snapshot::trim_node`]), so that the cache holds a few hundred
/// bytes a node whatever else the objects carry. Nodes that do not parse are skipped (the
/// snapshot was built from them, so none is).
pub fn node_names(
    snap: &Snapshot,
    items: &[Box<serde_json::value::RawValue>],
) -> Vec<(String, Box<serde_json::value::RawValue>)> {
    snap.names
        .iter()
        .zip(items)
        .filter_map(|(n, raw)| Some((n.clone(), crate::snapshot::trim_node(raw)?)))
        .collect()
}
