//! Kubernetes workloads as Kueue sees them, for `fleetsim kueue simulate`: `Job`
//! (`batch/v1`), `JobSet` (`jobset.x-k8s.io`), `RayJob` (`ray.io`) and Kueue's own
//! `Workload` (`kueue.x-k8s.io`) objects, in multi-document YAML files or directories.
//!
//! # What is read
//!
//! | field | becomes |
//! |---|---|
//! | `metadata.name` (else `generateName` + its position: `sample-job-1`), `metadata.namespace` (default `default`) | the workload's name, `Kind namespace/name` |
//! | label `kueue.x-k8s.io/queue-name`; a Workload's `spec.queueName` | its LocalQueue (in its namespace), hence its ClusterQueue |
//! | label `kueue.x-k8s.io/priority-class` (a WorkloadPriorityClass); a Workload's `spec.priorityClassName` / `spec.priority`; else the pod template's `priorityClassName` (a Kubernetes PriorityClass among the manifests) | its priority (0 when none) |
//! | pod sets: a Job's pods (`spec.parallelism`, default 1); a JobSet's `replicatedJobs` (`replicas` × `parallelism`); a RayJob's head (1) and worker groups (`replicas`); a Workload's `spec.podSets[].count` | the gang: one task per pod |
//! | each pod's `resources.requests` (limits where a request is absent): containers added up, init containers at their maximum (Kubernetes' effective request); `cpu`, `memory`, `nvidia.com/gpu`, `amd.com/gpu`, `google.com/tpu` | one task's shape |
//! | `nodeSelector` with a product label (`nvidia.com/gpu.product`, …) | the allowed accelerator model |
//! | a Job's `spec.activeDeadlineSeconds`; label `kueue.x-k8s.io/max-exec-time-seconds` | time limit |
//! | annotation `fleetsim.dev/runtime` (a duration: `90s`, `2h`) | run time (Kubernetes objects have none; else `--default-runtime`, noted) |
//! | annotation `fleetsim.dev/submit` (a duration after t = 0); else `metadata.creationTimestamp` (RFC 3339 UTC, from the earliest); else 0 | submit time |
//!
//! A workload of several pod sets (a JobSet's driver and workers, a RayJob's head and
//! workers) is one gang whose task is the per-resource maximum of the pod sets' (fleetsim
//! gives a gang one task shape; noted). TAS annotations (`kueue.x-k8s.io/podset-*-topology`)
//! become the gang's topology constraint ([`super::topology`]). Read and noted, not
//! simulated: partial admission (`minCount`,
//! `kueue.x-k8s.io/job-min-parallelism`), a RayJob's submitter pod, other resources and
//! node selectors, `spec.suspend`. Other kinds are refused, naming them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::scenario::yaml::Value;
use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::{
    catalog_model, get, go_duration_ms, manifest_files, parse_objects, string, Ctx, Doc,
    KueueConfig, KueueError, Quantity, ACCELERATOR_RESOURCES, MODEL_LABELS,
};
use crate::workload::{JobSpec, RecordedKind};

/// How to read workloads beyond their own fields.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Run time of a workload without a `fleetsim.dev/runtime` annotation, ms (`None`: such
    /// a workload is an error naming it).
    pub default_runtime_ms: Option<u64>,
}

/// One workload as read.
#[derive(Clone, Debug)]
pub struct Workload {
    /// `Job`, `JobSet`, `RayJob` or `Workload`.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Its LocalQueue's name, as the object gives it (`None`: no queue label).
    pub local_queue: Option<String>,
    /// The ClusterQueue that LocalQueue submits to (`None`: no such LocalQueue).
    pub cluster_queue: Option<String>,
    /// Its pod sets: name, pods, one pod's request.
    pub pod_sets: Vec<(String, u32, TaskShape)>,
    /// The job fleetsim runs (its `name` is [`Workload::id`]).
    pub job: JobSpec,
    /// What was read and not simulated, or assumed, for this workload.
    pub notes: Vec<String>,
    /// What its Topology-Aware Scheduling annotations require (`all its pods in one
    /// example.com/rack`), if anything.
    pub tas_required: Option<String>,
    /// Where it was read: `file: line N`.
    pub source: String,
}

impl Workload {
    /// `Kind namespace/name`.
    pub fn id(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// Annotation giving a workload's run time.
pub const RUNTIME_ANNOTATION: &str = "fleetsim.dev/runtime";
/// Annotation giving a workload's submit time after t = 0.
pub const SUBMIT_ANNOTATION: &str = "fleetsim.dev/submit";

const TAS_ANNOTATIONS: [&str; 6] = [
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-size",
    "kueue.x-k8s.io/podset-group-name",
];

/// Seconds since 1970 of an RFC 3339 UTC timestamp (`2024-03-01T10:00:00Z`).
fn rfc3339_s(t: &str) -> Result<i64, String> {
    let naive = t
        .strip_suffix('Z')
        .ok_or_else(|| format!("`{t}` is not an RFC 3339 UTC timestamp (…Z)"))?;
    crate::workload::timefmt::parse_naive_datetime(naive, b'T')
}

fn labels<'v>(meta: Option<&'v Value>, key: &str) -> BTreeMap<String, &'v str> {
    meta.and_then(|m| get(m, key))
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// One pod's request from a pod spec (`template.spec`), with notes.
fn pod_request(
    c: &Ctx,
    spec: &Value,
    field: &str,
    notes: &mut Vec<String>,
) -> Result<TaskShape, KueueError> {
    // Per resource: the containers' requests added up, and the init containers' largest.
    let mut sum: BTreeMap<String, u128> = BTreeMap::new();
    let mut init: BTreeMap<String, u128> = BTreeMap::new();
    for (list, into) in [("containers", &mut sum), ("initContainers", &mut init)] {
        let Some(Value::Sequence(cs)) = get(spec, list) else {
            continue;
        };
        for (i, ctr) in cs.iter().enumerate() {
            let res = get(ctr, "resources");
            let req = res
                .and_then(|r| get(r, "requests"))
                .and_then(Value::as_mapping);
            let lim = res
                .and_then(|r| get(r, "limits"))
                .and_then(Value::as_mapping);
            let mut names: Vec<String> = req
                .into_iter()
                .chain(lim)
                .flat_map(|m| m.keys().filter_map(|k| k.as_str().map(str::to_string)))
                .collect();
            names.sort();
            names.dedup();
            for name in names {
                let v = req
                    .and_then(|m| m.get(name.as_str()))
                    .or_else(|| lim.and_then(|m| m.get(name.as_str())));
                let Some(v) = v else { continue };
                let f = format!("{field}.{list}[{i}].resources.requests.{name}");
                let q = super::quantity(c, v, &f)?;
                let e = into.entry(name).or_insert(0);
                if list == "containers" {
                    *e += q.0;
                } else {
                    *e = (*e).max(q.0);
                }
            }
        }
    }
    for (k, v) in init {
        let e = sum.entry(k).or_insert(0);
        *e = (*e).max(v);
    }
    let mut shape = TaskShape::default();
    for (name, milli) in sum {
        match name.as_str() {
            "cpu" => shape.cpu_milli = u64::try_from(milli).unwrap_or(u64::MAX),
            // Bytes (milli-units / 1000) to MiB, rounded up.
            "memory" => {
                shape.mem_mib = u64::try_from(milli.div_ceil(1000 << 20)).unwrap_or(u64::MAX)
            }
            n if ACCELERATOR_RESOURCES.contains(&n) => {
                if milli % 1000 != 0 {
                    return Err(c.err(
                        field,
                        format!(
                            "`{n}` must be a whole number of devices, found {}",
                            Quantity(milli).as_f64()
                        ),
                    ));
                }
                let n = u32::try_from(milli / 1000)
                    .map_err(|_| c.err(field, "too many accelerators"))?;
                shape = TaskShape {
                    cpu_milli: shape.cpu_milli,
                    mem_mib: shape.mem_mib,
                    ..TaskShape::whole_gpus(shape.num_gpu + n)
                };
            }
            other => notes.push(format!(
                "resource `{other}` is not simulated (fleetsim counts accelerators, cpu and memory)"
            )),
        }
    }
    Ok(shape)
}

/// The accelerator models a pod spec's `nodeSelector` names through product labels.
fn models_of(spec: &Value, notes: &mut Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(Value::Mapping(m)) = get(spec, "nodeSelector") {
        for (k, v) in m {
            let (Some(k), Some(v)) = (k.as_str(), v.as_str()) else {
                continue;
            };
            if MODEL_LABELS.contains(&k) {
                out.push(catalog_model(k, v));
            } else {
                notes.push(format!(
                    "nodeSelector `{k}: {v}` is not simulated (fleetsim selects nodes by accelerator model)"
                ));
            }
        }
    }
    for key in ["affinity", "tolerations", "topologySpreadConstraints"] {
        if get(spec, key).is_some() {
            notes.push(format!("pod `{key}` is not simulated"));
        }
    }
    out
}

/// A pod template's TAS annotations, as `key → value`.
fn tas_annotations(template: &Value) -> BTreeMap<String, String> {
    labels(get(template, "metadata"), "annotations")
        .into_iter()
        .filter(|(k, _)| TAS_ANNOTATIONS.contains(&k.as_str()))
        .map(|(k, v)| (k, v.to_string()))
        .collect()
}

/// The pod sets of one object: name, pods, pod template.
fn pod_sets<'v>(
    c: &Ctx,
    kind: &str,
    v: &'v Value,
) -> Result<Vec<(String, u32, &'v Value, String)>, KueueError> {
    let count = |x: Option<&Value>, field: &str, default: u32| -> Result<u32, KueueError> {
        match x {
            None => Ok(default),
            Some(Value::Number(n)) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| c.err(field, "expected a count")),
            Some(other) => Err(c.err(field, format!("expected a count, found {other:?}"))),
        }
    };
    static EMPTY: Value = Value::Null;
    let empty = &EMPTY;
    let spec = get(v, "spec").unwrap_or(empty);
    let template = |x: &'v Value, f: &str| -> Result<&'v Value, KueueError> {
        get(x, "template").ok_or_else(|| c.err(&format!("{f}.template"), "missing"))
    };
    Ok(match kind {
        "Job" => {
            let n = count(get(spec, "parallelism"), "spec.parallelism", 1)?;
            vec![(
                "main".into(),
                n,
                template(spec, "spec")?,
                "spec.template".into(),
            )]
        }
        "JobSet" => {
            let Some(Value::Sequence(rjs)) = get(spec, "replicatedJobs") else {
                return Err(c.err(
                    "spec.replicatedJobs",
                    "missing: a JobSet needs replicatedJobs",
                ));
            };
            let mut out = Vec::new();
            for (i, rj) in rjs.iter().enumerate() {
                let f = format!("spec.replicatedJobs[{i}]");
                let name = string(c, rj, "name", &format!("{f}.name"))?
                    .unwrap_or_else(|| format!("job{i}"));
                let replicas = count(get(rj, "replicas"), &format!("{f}.replicas"), 1)?;
                let jt = template(rj, &f)?;
                let js = get(jt, "spec").unwrap_or(empty);
                let par = count(
                    get(js, "parallelism"),
                    &format!("{f}.template.spec.parallelism"),
                    1,
                )?;
                let pods = replicas
                    .checked_mul(par)
                    .ok_or_else(|| c.err(&f, "too many pods"))?;
                out.push((
                    name,
                    pods,
                    template(js, &format!("{f}.template.spec"))?,
                    format!("{f}.template.spec.template"),
                ));
            }
            out
        }
        "RayJob" => {
            let rc = get(spec, "rayClusterSpec").ok_or_else(|| {
                c.err(
                    "spec.rayClusterSpec",
                    "missing: fleetsim simulates a RayJob's own RayCluster",
                )
            })?;
            let mut out = Vec::new();
            let head = get(rc, "headGroupSpec")
                .ok_or_else(|| c.err("spec.rayClusterSpec.headGroupSpec", "missing"))?;
            out.push((
                "head".into(),
                1,
                template(head, "spec.rayClusterSpec.headGroupSpec")?,
                "spec.rayClusterSpec.headGroupSpec.template".into(),
            ));
            if let Some(Value::Sequence(ws)) = get(rc, "workerGroupSpecs") {
                for (i, w) in ws.iter().enumerate() {
                    let f = format!("spec.rayClusterSpec.workerGroupSpecs[{i}]");
                    let name = string(c, w, "groupName", &format!("{f}.groupName"))?
                        .unwrap_or_else(|| format!("workers{i}"));
                    let n = count(get(w, "replicas"), &format!("{f}.replicas"), 1)?;
                    out.push((name, n, template(w, &f)?, format!("{f}.template")));
                }
            }
            out
        }
        "Workload" => {
            let Some(Value::Sequence(ps)) = get(spec, "podSets") else {
                return Err(c.err("spec.podSets", "missing: a Workload needs podSets"));
            };
            let mut out = Vec::new();
            for (i, p) in ps.iter().enumerate() {
                let f = format!("spec.podSets[{i}]");
                let name = string(c, p, "name", &format!("{f}.name"))?
                    .unwrap_or_else(|| format!("podset{i}"));
                let n = count(get(p, "count"), &format!("{f}.count"), 1)?;
                out.push((name, n, template(p, &f)?, format!("{f}.template")));
            }
            out
        }
        _ => unreachable!("checked by the caller"),
    })
}

/// Reads the workloads of `paths` (files, or directories of `*.yaml`/`*.yml`), resolving
/// queues and priorities through `cfg`.
///
/// # Errors
/// [`KueueError`] naming file, line and field: a file that cannot be read; a kind other than
/// Job, JobSet, RayJob and Workload; a malformed field; a workload without a run time when
/// no default is given; a submit annotation or timestamp that does not parse.
pub fn read(
    paths: &[PathBuf],
    cfg: &KueueConfig,
    opts: &ReadOptions,
) -> Result<Vec<Workload>, KueueError> {
    let mut sources = Vec::new();
    for f in manifest_files(paths)? {
        let text = crate::input_cap::read_capped(
            &f,
            crate::input_cap::MAX_MANIFEST_BYTES,
            "workload file",
        )
        .map_err(|e| KueueError {
            path: f.clone(),
            line: 0,
            field: "-".into(),
            message: format!("cannot read the workloads: {e}"),
        })?;
        sources.push((f, text));
    }
    let (docs, objects) = parse_objects(&sources)?;
    if objects.is_empty() {
        let files: Vec<String> = sources
            .iter()
            .map(|(f, _)| f.display().to_string())
            .collect();
        return Err(KueueError {
            path: PathBuf::from(files.join(", ")),
            line: 0,
            field: "-".into(),
            message: format!(
                "no Workload/Job/JobSet/RayJob objects in {}: nothing to simulate",
                if files.len() == 1 {
                    "this workload file"
                } else {
                    "these workload files"
                }
            ),
        });
    }
    let ctx = |docs: &'_ [Doc], di: usize, prefix: &'_ str| -> (PathBuf, u64, String, String) {
        (
            docs[di].path.clone(),
            docs[di].line,
            docs[di].text.clone(),
            prefix.to_string(),
        )
    };
    let mut out = Vec::new();
    let mut generated: BTreeMap<String, u32> = BTreeMap::new();
    let mut created: Vec<Option<i64>> = Vec::new();
    for (di, prefix, v) in &objects {
        let (path, line, text, prefix) = ctx(&docs, *di, prefix);
        let c = Ctx {
            path: &path,
            line,
            text: &text,
            prefix: &prefix,
        };
        let kind = string(&c, v, "kind", "kind")?.unwrap_or_default();
        let api = string(&c, v, "apiVersion", "apiVersion")?.unwrap_or_default();
        let group = api.split('/').next().unwrap_or("");
        let ok = matches!(
            (kind.as_str(), group),
            ("Job", "batch")
                | ("JobSet", "jobset.x-k8s.io")
                | ("RayJob", "ray.io")
                | ("Workload", "kueue.x-k8s.io")
        );
        if !ok {
            return Err(c.err(
                "kind",
                format!(
                    "`{api}` `{kind}` is not a workload fleetsim simulates (batch/v1 Job, jobset.x-k8s.io JobSet, ray.io RayJob, kueue.x-k8s.io Workload); Kueue objects (queues, flavors) go in --manifests"
                ),
            ));
        }
        let meta = get(v, "metadata");
        let namespace = meta
            .map(|m| string(&c, m, "namespace", "metadata.namespace"))
            .transpose()?
            .flatten()
            .unwrap_or_else(|| "default".into());
        let name = match meta
            .map(|m| string(&c, m, "name", "metadata.name"))
            .transpose()?
            .flatten()
        {
            Some(n) => n,
            None => {
                let g = meta
                    .map(|m| string(&c, m, "generateName", "metadata.generateName"))
                    .transpose()?
                    .flatten()
                    .ok_or_else(|| c.err("metadata.name", "missing (and no generateName)"))?;
                let n = generated.entry(g.clone()).or_insert(0);
                *n += 1;
                format!("{g}{n}")
            }
        };
        let lbl = labels(meta, "labels");
        let ann = labels(meta, "annotations");
        let mut notes = Vec::new();
        let spec = get(v, "spec");
        let local_queue: Option<String> = match kind.as_str() {
            "Workload" => spec
                .map(|s| string(&c, s, "queueName", "spec.queueName"))
                .transpose()?
                .flatten(),
            _ => lbl.get("kueue.x-k8s.io/queue-name").map(|s| s.to_string()),
        };
        if local_queue.is_none() && kind != "Workload" {
            notes.push(
                "no `kueue.x-k8s.io/queue-name` label: Kueue does not manage it (unless `manageJobsWithoutQueueName`) and kube-scheduler runs it outside quota; fleetsim does not run it (rejected, unknown_queue)"
                    .into(),
            );
        }
        let lq_key = local_queue.as_ref().map(|q| format!("{namespace}/{q}"));
        let lq = lq_key.as_ref().and_then(|k| cfg.local_queues.get(k));
        let cluster_queue = lq.map(|l| l.cluster_queue.clone());
        // The queue name the scenario's engine knows the LocalQueue by; a workload of an
        // unknown LocalQueue keeps its name and is rejected at submit (`unknown_queue`).
        let queue = match (lq, &local_queue) {
            (Some(l), _) => Some(cfg.local_queue_name(l)),
            (None, Some(q)) => Some(format!("{namespace}/{q}")),
            (None, None) => None,
        };
        let sets = pod_sets(&c, &kind, v)?;
        let mut pod_sets_out = Vec::new();
        let mut tasks: u32 = 0;
        let mut shape = TaskShape::default();
        let mut models: Vec<String> = Vec::new();
        let mut widened = false;
        let mut pod_priority_class = None;
        let mut tas: Option<(String, BTreeMap<String, String>)> = None;
        for (ps_name, n, template, f) in &sets {
            let pspec =
                get(template, "spec").ok_or_else(|| c.err(&format!("{f}.spec"), "missing"))?;
            let req = pod_request(&c, pspec, &format!("{f}.spec"), &mut notes)?;
            let ann = tas_annotations(template);
            if !ann.is_empty() {
                match &tas {
                    None => tas = Some((format!("{f}.metadata.annotations"), ann)),
                    Some((_, first)) if *first != ann => notes.push(format!(
                        "pod set `{ps_name}` asks for another topology than the first: the gang takes the first pod set's"
                    )),
                    Some(_) => {}
                }
            }
            for m in models_of(pspec, &mut notes) {
                if !models.contains(&m) {
                    models.push(m);
                }
            }
            if pod_priority_class.is_none() {
                pod_priority_class = string(
                    &c,
                    pspec,
                    "priorityClassName",
                    &format!("{f}.spec.priorityClassName"),
                )?;
            }
            if *n == 0 {
                continue;
            }
            if tasks > 0 && req != shape {
                widened = true;
            }
            shape = if tasks == 0 {
                req
            } else {
                TaskShape {
                    num_gpu: shape.num_gpu.max(req.num_gpu),
                    gpu_milli: shape.gpu_milli.max(req.gpu_milli),
                    cpu_milli: shape.cpu_milli.max(req.cpu_milli),
                    mem_mib: shape.mem_mib.max(req.mem_mib),
                }
            };
            tasks = tasks
                .checked_add(*n)
                .ok_or_else(|| c.err(f, "too many pods"))?;
            pod_sets_out.push((ps_name.clone(), *n, req));
        }
        if tasks == 0 {
            return Err(c.err("spec", "no pod to run (every pod set has 0 pods)"));
        }
        if widened {
            notes.push(format!(
                "its {} pod sets differ: simulated as one gang of {tasks} pods, each the largest request of any pod set (fleetsim gives a gang one pod shape)",
                pod_sets_out.len()
            ));
        }
        if kind == "RayJob"
            && spec
                .and_then(|s| get(s, "submissionMode"))
                .and_then(Value::as_str)
                .is_none_or(|m| m == "K8sJobMode")
        {
            notes.push("its submitter pod (K8sJobMode) is not simulated".into());
        }
        if kind == "Workload" {
            if let Some(Value::Sequence(ps)) = spec.and_then(|s| get(s, "podSets")) {
                if ps.iter().any(|p| get(p, "minCount").is_some()) {
                    notes.push("pod set `minCount` (partial admission) is not simulated: the whole gang is admitted or none".into());
                }
            }
        }
        if lbl.contains_key("kueue.x-k8s.io/job-min-parallelism") {
            notes.push("`kueue.x-k8s.io/job-min-parallelism` (partial admission) is not simulated: the whole gang is admitted or none".into());
        }
        if spec.and_then(|s| get(s, "suspend")).is_some() {
            notes.push(
                "`spec.suspend` is not simulated: Kueue suspends and admits the workload itself"
                    .into(),
            );
        }
        // Priority: Kueue's WorkloadPriorityClass, else the pods' PriorityClass.
        let wpc = match kind.as_str() {
            "Workload" => spec
                .map(|s| string(&c, s, "priorityClassName", "spec.priorityClassName"))
                .transpose()?
                .flatten(),
            _ => lbl
                .get("kueue.x-k8s.io/priority-class")
                .map(|s| s.to_string()),
        };
        let explicit = match kind.as_str() {
            "Workload" => match spec.and_then(|s| get(s, "priority")) {
                Some(Value::Number(n)) => n.as_i64().and_then(|x| i32::try_from(x).ok()),
                _ => None,
            },
            _ => None,
        };
        let priority = match (explicit, &wpc) {
            (Some(p), _) => p,
            (None, Some(name)) => match cfg.priority_classes.get(name) {
                Some(pc) => pc.value,
                None => match cfg.pod_priority_classes.get(name) {
                    Some(&p) => p,
                    None => {
                        notes.push(format!(
                            "priority class `{name}` is not among the manifests: priority 0"
                        ));
                        0
                    }
                },
            },
            (None, None) => match &pod_priority_class {
                Some(name) => match cfg.pod_priority_classes.get(name) {
                    Some(&p) => p,
                    None => {
                        notes.push(format!(
                            "PriorityClass `{name}` is not among the manifests: priority 0"
                        ));
                        0
                    }
                },
                None => 0,
            },
        };
        let runtime_ms = match ann.get(RUNTIME_ANNOTATION) {
            Some(t) => go_duration_ms(t).map_err(|m| {
                c.err(&format!("metadata.annotations.{RUNTIME_ANNOTATION}"), m)
            })?,
            None => match opts.default_runtime_ms {
                Some(d) => {
                    notes.push(format!(
                        "no `{RUNTIME_ANNOTATION}` annotation: run time {} s (--default-runtime)",
                        d as f64 / 1000.0
                    ));
                    d
                }
                None => {
                    return Err(c.err(
                        "metadata.annotations",
                        format!(
                            "{kind} {namespace}/{name}: no run time; add the annotation `{RUNTIME_ANNOTATION}: 1h` (any duration) or give --default-runtime"
                        ),
                    ))
                }
            },
        };
        let submit_ms = match ann.get(SUBMIT_ANNOTATION) {
            Some(t) => Some(
                go_duration_ms(t)
                    .map_err(|m| c.err(&format!("metadata.annotations.{SUBMIT_ANNOTATION}"), m))?,
            ),
            None => None,
        };
        let created_s = meta
            .map(|m| string(&c, m, "creationTimestamp", "metadata.creationTimestamp"))
            .transpose()?
            .flatten()
            .map(|t| rfc3339_s(&t).map_err(|m| c.err("metadata.creationTimestamp", m)))
            .transpose()?;
        created.push(if submit_ms.is_some() { None } else { created_s });
        let limit_s = match (
            lbl.get("kueue.x-k8s.io/max-exec-time-seconds"),
            spec.and_then(|s| get(s, "activeDeadlineSeconds"))
                .and_then(Value::as_u64),
        ) {
            (Some(t), _) => Some(t.parse::<u64>().map_err(|_| {
                c.err(
                    "metadata.labels.kueue.x-k8s.io/max-exec-time-seconds",
                    format!("`{t}` is not whole seconds"),
                )
            })?),
            (None, a) => a,
        };
        // A workload of an unknown LocalQueue is rejected before TAS is considered.
        let topology = match (&tas, &cluster_queue) {
            (None, _) | (_, None) => None,
            (Some((field, ann)), Some(_)) => {
                let of_cq = cluster_queue.as_ref().and_then(|q| cfg.tas_of(q));
                super::topology::constraint(&|k| ann.get(k).cloned(), of_cq.as_ref())
                    .map_err(|m| c.err(field, format!("{kind} {namespace}/{name}: {m}")))?
            }
        };
        let tas_required = match (&tas, &topology) {
            (Some((_, ann)), Some(_)) => super::topology::required_text(&|k| ann.get(k).cloned()),
            _ => None,
        };
        if let Some(t) = &topology {
            if let Some(sz) = t.slice_size {
                notes.push(format!(
                    "Topology-Aware Scheduling: slices of {sz} pods, each in one {}",
                    t.slice_level.as_str()
                ));
            }
        }
        let id = format!("{kind} {namespace}/{name}");
        let job = JobSpec {
            name: id.as_str().into(),
            tenant: namespace.as_str().into(),
            queue: queue.clone(),
            priority,
            qos: None,
            submit: SimTime(submit_ms.unwrap_or(0)),
            tasks,
            shape,
            gpu_models: models,
            cells: Vec::new(),
            runtime: SimDuration(runtime_ms),
            time_limit: limit_s.map(|s| SimDuration(s.saturating_mul(1000))),
            recorded_start: None,
            recorded: RecordedKind::Normal,
            topology,
            // A pod set's pods are given: rigid.
            split: false,
            elastic: None,
        };
        out.push(Workload {
            kind,
            namespace,
            name,
            local_queue,
            cluster_queue,
            pod_sets: pod_sets_out,
            job,
            notes,
            tas_required,
            source: format!("{}: line {}", path.display(), c.line_of("kind")),
        });
    }
    // Creation timestamps count from the earliest; a workload with neither annotation nor
    // timestamp is submitted at 0.
    if let Some(first) = created.iter().flatten().min().copied() {
        for (w, c) in out.iter_mut().zip(&created) {
            if let Some(s) = c {
                w.job.submit = SimTime(((s - first).max(0) as u64).saturating_mul(1000));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFESTS: &str = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: h100
spec:
  nodeLabels:
    nvidia.com/gpu.product: H100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cq
spec:
  resourceGroups:
  - coveredResources: [\"cpu\", \"memory\", \"nvidia.com/gpu\"]
    flavors:
    - name: h100
      resources:
      - name: cpu
        nominalQuota: 64
      - name: memory
        nominalQuota: 512Gi
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: team
  name: lq
spec:
  clusterQueue: cq
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 100
";

    /// A JobSet of 2 workers (4 GPUs, 8 CPUs each) and a driver (1 CPU, 2 Gi): one gang of
    /// 3 pods, each the largest request: 4 GPUs, 8 CPUs, 2 GiB; priority 100 from the
    /// WorkloadPriorityClass; run time 2 h; submit 30 s; LocalQueue team/lq → cq.
    #[test]
    fn a_jobset_is_one_gang_of_its_pods() {
        let cfg = super::super::parse(MANIFESTS, std::path::Path::new("m.yaml")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.yaml");
        std::fs::write(
            &p,
            "apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: train
  namespace: team
  labels:
    kueue.x-k8s.io/queue-name: lq
    kueue.x-k8s.io/priority-class: high
  annotations:
    fleetsim.dev/runtime: 2h
    fleetsim.dev/submit: 30s
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 1
        template:
          spec:
            containers:
            - name: w
              resources:
                requests:
                  cpu: 8
                  memory: 1Gi
                limits:
                  nvidia.com/gpu: 4
  - name: driver
    template:
      spec:
        template:
          spec:
            containers:
            - name: d
              resources:
                requests:
                  cpu: 1
                  memory: 2Gi
",
        )
        .unwrap();
        let w = read(&[p], &cfg, &ReadOptions::default()).unwrap();
        assert_eq!(w.len(), 1);
        let j = &w[0].job;
        assert_eq!(w[0].id(), "JobSet team/train");
        assert_eq!(w[0].cluster_queue.as_deref(), Some("cq"));
        assert_eq!(j.queue.as_deref(), Some("lq"));
        assert_eq!(
            (j.tasks, j.shape.num_gpu, j.shape.cpu_milli, j.shape.mem_mib),
            (3, 4, 8000, 2048)
        );
        assert_eq!(j.priority, 100);
        assert_eq!(j.runtime, SimDuration::from_secs(7200));
        assert_eq!(j.submit, SimTime::from_secs(30));
        assert!(
            w[0].notes.iter().any(|n| n.contains("pod sets differ")),
            "{:?}",
            w[0].notes
        );
    }

    #[test]
    fn a_workload_set_without_objects_is_refused_naming_its_files() {
        let cfg = super::super::parse(MANIFESTS, std::path::Path::new("m.yaml")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.yaml");
        std::fs::write(&empty, "").unwrap();
        let comments = dir.path().join("comments.yaml");
        std::fs::write(&comments, "# nothing yet\n---\n").unwrap();
        let e = read(std::slice::from_ref(&empty), &cfg, &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "{}: no Workload/Job/JobSet/RayJob objects in this workload file: nothing to simulate",
                empty.display()
            )
        );
        let e = read(
            &[empty.clone(), comments.clone()],
            &cfg,
            &ReadOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            format!(
                "{}, {}: no Workload/Job/JobSet/RayJob objects in these workload files: nothing to simulate",
                empty.display(),
                comments.display()
            )
        );
    }

    #[test]
    fn other_kinds_and_missing_run_times_are_refused() {
        let cfg = super::super::parse(MANIFESTS, std::path::Path::new("m.yaml")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.yaml");
        std::fs::write(
            &p,
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
        )
        .unwrap();
        let e = read(std::slice::from_ref(&p), &cfg, &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("not a workload fleetsim simulates"),
            "{e}"
        );
        std::fs::write(
            &p,
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: sample-\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        resources:\n          requests:\n            cpu: 500m\n",
        )
        .unwrap();
        let e = read(std::slice::from_ref(&p), &cfg, &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("Job default/sample-1: no run time"), "{e}");
        let w = read(
            &[p],
            &cfg,
            &ReadOptions {
                default_runtime_ms: Some(60_000),
            },
        )
        .unwrap();
        assert_eq!(
            (w[0].job.shape.cpu_milli, w[0].job.queue.clone()),
            (500, None)
        );
        assert!(w[0].notes.iter().any(|n| n.contains("--default-runtime")));
    }
}
