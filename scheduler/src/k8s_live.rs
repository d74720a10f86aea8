//! The Kubernetes adapter's events ([`crate::k8s::ClusterEvent`]) as the service's
//! [`Event`]s, resolved against the spec a service runs (its fleet and queues), and
//! the service's admit decisions back as `v1.Binding` objects.
//!
//! Resolution (each failure is an [`AdapterError`] naming the object and the field):
//! * a node by name to its index in the spec's fleet (`fleetsim_policies::FleetState::node_name`
//!   order); its recorded cell, GPUs and accelerator model must be the spec's node's, since the
//!   spec is what the policy was studied on. The event is `node_added` (the node is
//!   schedulable from then on);
//! * a job's queue (the LocalQueue's fleetsim queue name) to the index of the spec queue of
//!   that name or with it among its `local_queues` (scenario order, as the simulator numbers
//!   them);
//! * a job's tenant (the namespace) to a tenant number: from a tokens file's `[tenants]`
//!   table when one is given (so tenant tokens authorize the same numbers), else numbered
//!   0, 1, … in order of first appearance;
//! * a job's model constraint to the fleet's model index;
//! * job ids and input sequence numbers 0, 1, … in event order;
//! * after the events of each instant, a `pass` at that instant: the service decides only
//!   in passes, as the simulator passes after an instant's changes.
//!
//! The shape is the adapter's per-task request: `gpu_milli / 1000` whole accelerators,
//! CPU milli-cores, MiB; the event time is the adapter's (ms since the recording's origin).

use std::collections::BTreeMap;

use fleetsim::run::engine_config;
use fleetsim::scenario::Loaded;
use fleetsim_policies::live::{Decision, Event, JobSpec};
use fleetsim_policies::{FleetState, NodeId, TaskShape};
use serde_json::Value;

use crate::k8s::{bindings, AdapterError, ClusterEvent, JobSubmitted, Recorded, TaskBinding};

/// A recording resolved against a spec.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Translated {
    /// The service's events, in the recording's order, each instant closed by a `pass`.
    pub events: Vec<Event>,
    /// Tenant name → number used.
    pub tenants: BTreeMap<String, u32>,
    /// Job id → the adapter's job (its pods, for [`Translated::bindings`]).
    pub jobs: BTreeMap<u32, JobSubmitted>,
}

/// Queue name (and every LocalQueue alias) → queue index, in the order the simulator and the
/// service number the spec's queues.
pub fn queue_indices(loaded: &Loaded) -> BTreeMap<String, u32> {
    let (_, cfg) = engine_config(loaded);
    let mut out = BTreeMap::new();
    for (i, q) in cfg.queues.iter().enumerate() {
        out.entry(q.name.clone()).or_insert(i as u32);
        for lq in &q.local_queues {
            out.entry(lq.clone()).or_insert(i as u32);
        }
    }
    out
}

fn err(object: String, field: &str, message: String) -> AdapterError {
    AdapterError {
        object,
        field: field.into(),
        message,
    }
}

/// Resolves `rec` against `fleet` (the service's) and `queues` ([`queue_indices`] of its
/// spec); `tenants` is a tokens file's `[tenants]` table, if any (see the module docs).
///
/// # Errors
/// An [`AdapterError`]: a node the spec does not have, or whose cell, GPUs or model differ
/// from the spec's node; a job whose queue is not a queue of the spec, whose tenant is not in
/// `tenants` (when given), or whose model no node of the fleet has; more than `u32::MAX` jobs.
pub fn translate(
    rec: &Recorded,
    fleet: &FleetState,
    queues: &BTreeMap<String, u32>,
    tenants: Option<&BTreeMap<String, u32>>,
) -> Result<Translated, AdapterError> {
    let nodes: BTreeMap<&str, u32> = (0..fleet.nodes().len())
        .map(|i| (fleet.node_name(NodeId(i as u32)), i as u32))
        .collect();
    let model_index = |m: &str| fleet.models().iter().position(|x| x == m);
    let mut out = Translated::default();
    for (k, ev) in rec.events.iter().enumerate() {
        match ev {
            ClusterEvent::NodeAdded(n) => {
                let object = format!("Node {}", n.name);
                let &i = nodes.get(n.name.as_str()).ok_or_else(|| {
                    err(
                        object.clone(),
                        "metadata.name",
                        "no node of this name in the spec's fleet".into(),
                    )
                })?;
                let s = &fleet.nodes()[i as usize];
                let cell = &fleet.cells()[s.cell.index()].name;
                if *cell != n.cell {
                    return Err(err(
                        object,
                        "metadata.labels",
                        format!("in cell `{}`, the spec's node is in `{cell}`", n.cell),
                    ));
                }
                if s.gpus != n.gpus {
                    return Err(err(
                        object,
                        "status.allocatable.nvidia.com/gpu",
                        format!("{} GPUs, the spec's node has {}", n.gpus, s.gpus),
                    ));
                }
                let spec_model = s.model.map(|m| fleet.models()[m.index()].as_str());
                if n.model.is_some() && n.model.as_deref() != spec_model {
                    return Err(err(
                        object,
                        "metadata.labels.nvidia.com/gpu.product",
                        format!(
                            "model {}, the spec's node has {}",
                            n.model.as_deref().unwrap_or("none"),
                            spec_model.unwrap_or("none")
                        ),
                    ));
                }
                out.events.push(Event::NodeAdded {
                    t: n.time_ms,
                    node: i,
                });
            }
            ClusterEvent::JobSubmitted(j) => {
                let object = format!("job {}", j.job);
                let queue = *queues.get(&j.queue).ok_or_else(|| {
                    err(
                        object.clone(),
                        "metadata.labels.kueue.x-k8s.io/queue-name",
                        format!("queue `{}` is not a queue of the spec", j.queue),
                    )
                })?;
                let tenant = match tenants {
                    Some(t) => *t.get(&j.tenant).ok_or_else(|| {
                        err(
                            object.clone(),
                            "metadata.namespace",
                            format!(
                                "tenant `{}` is not in the tokens file's [tenants] table",
                                j.tenant
                            ),
                        )
                    })?,
                    None => {
                        let next = out.tenants.len() as u32;
                        *out.tenants.get(&j.tenant).unwrap_or(&next)
                    }
                };
                out.tenants.insert(j.tenant.clone(), tenant);
                let models = match &j.model {
                    None => Vec::new(),
                    Some(m) => vec![model_index(m).ok_or_else(|| {
                        err(
                            object.clone(),
                            "spec.nodeSelector",
                            format!("no node of the spec's fleet has model {m}"),
                        )
                    })? as u16],
                };
                let id = u32::try_from(out.jobs.len()).map_err(|_| {
                    err(
                        object.clone(),
                        "metadata.name",
                        "more than 2^32 jobs".into(),
                    )
                })?;
                out.events.push(Event::JobSubmitted {
                    t: j.time_ms,
                    job: JobSpec {
                        id,
                        tenant,
                        queue,
                        priority: j.priority,
                        submit: None,
                        seq: u64::from(id),
                        shape: TaskShape {
                            num_gpu: (j.gpu_milli / 1000) as u32,
                            gpu_milli: if j.gpu_milli == 0 { 0 } else { 1000 },
                            cpu_milli: j.cpu_milli,
                            mem_mib: j.mem_mib,
                        },
                        tasks: j.tasks,
                        models,
                        cells: Vec::new(),
                        runtime_estimate_ms: None,
                        topology: None,
                        checkpoint_interval_ms: None,
                        done_ms: 0,
                        attained_gpu_ms: 0,
                        // Pods are shapes, not sizes: rigid.
                        split: false,
                    },
                });
                out.jobs.insert(id, j.clone());
            }
        }
        let t = ev.time_ms();
        if rec.events.get(k + 1).is_none_or(|next| next.time_ms() != t) {
            out.events.push(Event::Pass { t });
        }
    }
    Ok(out)
}

impl Translated {
    /// The `v1.Binding` objects of an admit decision (pod `i` of the job → task `i`'s node,
    /// with its GPU indices); `None` for any other decision.
    ///
    /// # Errors
    /// An admit of a job this recording did not submit, of a node index outside `fleet`, or
    /// with a task count that differs from the job's pods.
    pub fn bindings(
        &self,
        fleet: &FleetState,
        d: &Decision,
    ) -> Result<Option<Vec<Value>>, AdapterError> {
        let Decision::Admit { job, tasks, .. } = d else {
            return Ok(None);
        };
        let j = self.jobs.get(job).ok_or_else(|| {
            err(
                format!("job {job}"),
                "job",
                "not a job of this recording".into(),
            )
        })?;
        let tasks = tasks
            .iter()
            .map(|b| {
                if b.node as usize >= fleet.nodes().len() {
                    return Err(err(
                        format!("job {}", j.job),
                        "tasks.node",
                        format!("node {} is not in the fleet", b.node),
                    ));
                }
                Ok(TaskBinding {
                    node: fleet.node_name(NodeId(b.node)).to_string(),
                    gpus: b.gpus.clone(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        bindings(j, &tasks).map(Some)
    }
}

/// `fleetsim-scheduler k8s-events`: reads the recorded objects (`objects`, each a
/// `kubectl get nodes,pods -o json` export, at most
/// [`fleetsim::input_cap::MAX_MANIFEST_BYTES`] each) with the Kueue manifests `kueue`,
/// resolves them against `spec` (and a tokens file's `[tenants]` table, if given), and
/// writes the events as one batch (`{"batch": 0, "events": […]}`, the body of `POST
/// /v1/events`) to `out`, atomically. Returns the summary line.
///
/// # Errors
/// A message naming the file, or the object and field ([`AdapterError`]).
pub fn run(
    spec: &std::path::Path,
    kueue: &std::path::Path,
    objects: &[std::path::PathBuf],
    tokens: Option<&std::path::Path>,
    out: &std::path::Path,
    trace_dir: fleetsim::scenario::TraceDir,
) -> Result<String, String> {
    let loaded = fleetsim::scenario::load(spec).map_err(|e| e.to_string())?;
    crate::serve::refuse_elastic(&loaded, spec)?;
    let opts = fleetsim::run::RunOptions {
        seed: None,
        trace_dir,
        out_dir: None,
        keep_rows: false,
    };
    let twin =
        fleetsim::run::live_twin(&loaded, &opts).map_err(|e| format!("{}: {e}", spec.display()))?;
    let manifests = fleetsim::scenario::kueue::load(kueue).map_err(|e| e.to_string())?;
    let mut all = Vec::new();
    for p in objects {
        let text = fleetsim::input_cap::read_capped(
            p,
            fleetsim::input_cap::MAX_MANIFEST_BYTES,
            "Kubernetes export",
        )
        .map_err(|e| format!("{}: {e}", p.display()))?;
        all.extend(crate::k8s::objects(&text).map_err(|e| format!("{}: {e}", p.display()))?);
    }
    let rec = crate::k8s::read(&all, &manifests).map_err(|e| e.to_string())?;
    let tenants = match tokens {
        Some(t) => Some(crate::security::Tokens::from_file(t)?.tenant_ids().clone()),
        None => None,
    };
    let tr = translate(
        &rec,
        twin.fleet(),
        &queue_indices(&loaded),
        tenants.as_ref(),
    )
    .map_err(|e| e.to_string())?;
    let batch = crate::service::Batch {
        batch: Some(0),
        events: tr.events.clone(),
    };
    let mut text = serde_json::to_string(&batch).map_err(|e| e.to_string())?;
    text.push('\n');
    fleetsim::report::atomic::write_atomic(out, text.as_bytes())
        .map_err(|e| format!("writing {}: {e}", out.display()))?;
    let nodes = tr
        .events
        .iter()
        .filter(|e| matches!(e, Event::NodeAdded { .. }))
        .count();
    let tenants: Vec<String> = tr.tenants.iter().map(|(n, i)| format!("{n}={i}")).collect();
    Ok(format!(
        "k8s-events: {nodes} nodes, {} jobs (tenants {}), origin {} (Unix s): {} events; wrote {}\n",
        tr.jobs.len(),
        tenants.join(", "),
        rec.origin,
        tr.events.len(),
        out.display()
    ))
}
