//! Kueue manifests (<https://kueue.sigs.k8s.io/docs/concepts/>) as a scenario's quota
//! configuration: multi-document YAML holding `ClusterQueue`, `Cohort`, `LocalQueue`,
//! `ResourceFlavor` and `WorkloadPriorityClass` objects of `kueue.x-k8s.io/v1beta1` or
//! `v1beta2` (`Cohort` also `v1alpha1`). Other kinds (Namespaces, Jobs…) are ignored and
//! counted in [`KueueConfig::ignored`].
//!
//! # What is read
//!
//! * `ClusterQueue.spec`: the cohort (`cohort` in v1beta1, `cohortName` in v1beta2),
//!   `queueingStrategy` (`StrictFIFO` | `BestEffortFIFO`, default `BestEffortFIFO`) and
//!   `resourceGroups[].{coveredResources, flavors[].{name, resources[].{name, nominalQuota,
//!   borrowingLimit, lendingLimit}}}`.
//! * `Cohort.spec`: the parent (`parent` in v1alpha1/v1beta1, `parentName` in v1beta2) and
//!   its own `resourceGroups`.
//! * `LocalQueue`: `metadata.namespace`, `metadata.name`, `spec.clusterQueue`.
//! * `ResourceFlavor.spec.nodeLabels`; `WorkloadPriorityClass.{value, description}`.
//!
//! Quantities are Kubernetes quantities (`500m`, `2`, `1.5`, `64Gi`, `1e3`, `4k`), kept
//! exactly as integer milli-units ([`Quantity`]).
//!
//! # Validation (each error names the file, the line where the object starts and the field)
//!
//! Unknown `kueue.x-k8s.io` versions; a missing `metadata.name`; duplicate names; the cohort
//! or parent field of the other API version; an unknown `queueingStrategy`; a flavor that is
//! not a declared ResourceFlavor; a flavor's resources differing from `coveredResources`; a
//! malformed or negative quantity; `borrowingLimit` on a ClusterQueue without a cohort;
//! `lendingLimit` above `nominalQuota`; a LocalQueue naming an unknown ClusterQueue; two
//! LocalQueues with the same name in different namespaces (fleetsim's queues are not
//! namespaced); a cycle in the cohort tree.
//!
//! # What fleetsim simulates ([`KueueConfig::quota`])
//!
//! * Each **ClusterQueue** becomes a scenario `[[queues]]` entry of the same name: its
//!   `queueingStrategy`, its cohort, and per flavor (in order) the nominal quota,
//!   `borrowingLimit` and `lendingLimit` of the accelerator resource ([`ACCELERATOR_RESOURCES`]
//!   → `gpus`), `cpu` (→ cores) and `memory` (bytes → GiB). Each of its **LocalQueues**
//!   becomes one of its `local_queues`: a job that names the LocalQueue (its `queue`, or its
//!   tenant under `queues = "per-tenant"`) is queued, admitted and preempted in the
//!   ClusterQueue, as in Kueue.
//! * Each **Cohort** (declared, or only named by a ClusterQueue or a parent) becomes a
//!   `[[cohorts]]` entry with its parent and its own quota.
//! * Each **ResourceFlavor** becomes a `[[flavors]]` entry whose accelerator model is the value
//!   of its first node label among [`MODEL_LABELS`] (e.g. `nvidia.com/gpu.product:
//!   NVIDIA-H100-80GB-HBM3` → the fleet's `H100`, see [`super::schema::FlavorSpec`]); a flavor
//!   without such a label covers every model. A label naming no model of the fleet is an
//!   error naming `flavors[i].models[j]`.
//!
//! What the scenario declares itself wins over the manifests, entry by entry (by name).
//! Admission order, preemption and fair sharing are the scenario's `[policy]` stages (Kueue's
//! `spec.preemption` and `fairSharing` of a ClusterQueue are not read). **Not simulated**, and
//! listed by `fleetsim validate`: resource groups without an accelerator resource beside one
//! with it (fleetsim assigns one flavor for all of a job's resources), resources other than
//! accelerators, `cpu` and `memory`, and WorkloadPriorityClasses (read and validated; job
//! priorities come from the trace).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use fleetsim_policies::QueueingStrategy;
use serde_yaml_ng::Value;

use super::schema::{CohortSpec, FlavorQuotaSpec, FlavorSpec, QueueSpec, ResourceQuotaSpec};

/// The GPU resource name whose quota becomes `max_gpus`.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// A Kubernetes quantity in exact milli-units (`500m` = 500, `2` = 2,000, `1Ki` = 1,024,000).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity(pub u128);

impl Quantity {
    /// Parses a quantity: a decimal number (optional exponent `e`/`E`) with an optional
    /// suffix `m`, `k`, `M`, `G`, `T`, `P`, `E` (powers of 1000) or `Ki`, `Mi`, `Gi`, `Ti`,
    /// `Pi`, `Ei` (powers of 1024). Rounded up to a whole milli-unit, as Kubernetes does.
    ///
    /// # Errors
    /// A message naming the text when it is malformed, negative or out of range.
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let t = text.trim();
        let bad = || format!("`{text}` is not a Kubernetes quantity");
        let suffixes: [(&str, u128, u128); 13] = [
            ("Ki", 1 << 10, 1),
            ("Mi", 1 << 20, 1),
            ("Gi", 1 << 30, 1),
            ("Ti", 1 << 40, 1),
            ("Pi", 1 << 50, 1),
            ("Ei", 1 << 60, 1),
            ("m", 1, 1000),
            ("k", 1_000, 1),
            ("M", 1_000_000, 1),
            ("G", 1_000_000_000, 1),
            ("T", 1_000_000_000_000, 1),
            ("P", 1_000_000_000_000_000, 1),
            ("E", 1_000_000_000_000_000_000, 1),
        ];
        let (num, mul, div) = suffixes
            .iter()
            // `1E3` ends in a digit: an exponent, not the suffix E.
            .find(|(s, _, _)| t.ends_with(s) && t.len() > s.len())
            .map(|&(s, m, d)| (&t[..t.len() - s.len()], m, d))
            .unwrap_or((t, 1, 1));
        if num.starts_with('-') {
            return Err(format!("`{text}` is negative"));
        }
        // Exact: the number in milli-units via the seconds→ms parser, ×mul, ÷div rounded up.
        let milli = crate::workload::native::parse_seconds_ms(num).map_err(|_| bad())?;
        let milli = u128::try_from(milli).map_err(|_| format!("`{text}` is negative"))?;
        let v = milli
            .checked_mul(mul)
            .ok_or_else(|| format!("`{text}` is out of range"))?;
        Ok(Quantity(v.div_ceil(div)))
    }

    /// The quantity in whole units, as a float (for GPU counts).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }
}

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
    /// LocalQueues by name.
    pub local_queues: BTreeMap<String, LocalQueue>,
    /// ResourceFlavors.
    pub flavors: BTreeMap<String, ResourceFlavor>,
    /// WorkloadPriorityClasses.
    pub priority_classes: BTreeMap<String, PriorityClass>,
    /// Objects of other kinds, by `apiVersion/kind`.
    pub ignored: BTreeMap<String, u64>,
}

/// A manifest error: file, line where the object (or YAML error) is, field, message.
#[derive(Debug, thiserror::Error)]
#[error("{path}: line {line}: field `{field}`: {message}")]
pub struct KueueError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: u64,
    /// Field path (`spec.resourceGroups[0].flavors[1].name`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

struct Ctx<'a> {
    path: &'a Path,
    line: u64,
}

impl Ctx<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> KueueError {
        KueueError {
            path: self.path.to_path_buf(),
            line: self.line,
            field: field.to_string(),
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

/// Reads and validates Kueue manifests from `path` (see the module docs).
///
/// # Errors
/// [`KueueError`] naming the file, line and field of the first problem (an I/O error is
/// reported at line 0).
pub fn load(path: &Path) -> Result<KueueConfig, KueueError> {
    let text = std::fs::read_to_string(path).map_err(|e| KueueError {
        path: path.to_path_buf(),
        line: 0,
        field: "-".into(),
        message: e.to_string(),
    })?;
    parse(&text, path)
}

/// Parses and validates manifest text; `path` names it in errors.
///
/// # Errors
/// As [`load`].
pub fn parse(text: &str, path: &Path) -> Result<KueueConfig, KueueError> {
    // First pass: parse every document, collect flavors (referenced by queues).
    let mut objects = Vec::new();
    for (line, doc) in documents(text) {
        let v: Value = serde_yaml_ng::from_str(&doc).map_err(|e| KueueError {
            path: path.to_path_buf(),
            line: line
                + e.location()
                    .map_or(0, |l| l.line() as u64)
                    .saturating_sub(1),
            field: "-".into(),
            message: format!("bad YAML: {e}"),
        })?;
        if v.is_null() {
            continue;
        }
        objects.push((line, v));
    }
    let mut cfg = KueueConfig::default();
    let kind_of = |c: &Ctx, v: &Value| -> Result<(String, String, String), KueueError> {
        let api = string(c, v, "apiVersion", "apiVersion")?.unwrap_or_default();
        let kind = string(c, v, "kind", "kind")?.unwrap_or_default();
        let name = get(v, "metadata")
            .map(|m| string(c, m, "name", "metadata.name"))
            .transpose()?
            .flatten()
            .unwrap_or_default();
        Ok((api, kind, name))
    };
    let mut flavor_names = BTreeSet::new();
    for (line, v) in &objects {
        let c = Ctx { path, line: *line };
        let (api, kind, name) = kind_of(&c, v)?;
        if api.starts_with("kueue.x-k8s.io/") && kind == "ResourceFlavor" {
            flavor_names.insert(name);
        }
    }
    let mut lq_namespaces: BTreeMap<String, String> = BTreeMap::new();
    for (line, v) in &objects {
        let c = Ctx { path, line: *line };
        let (api, kind, name) = kind_of(&c, v)?;
        let Some(version) = api.strip_prefix("kueue.x-k8s.io/") else {
            *cfg.ignored.entry(format!("{api}/{kind}")).or_insert(0) += 1;
            continue;
        };
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
                let mut node_labels = BTreeMap::new();
                if let Some(Value::Mapping(m)) = get(spec, "nodeLabels") {
                    for (k, val) in m {
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
                            node_labels,
                        },
                    )
                    .is_some()
                {
                    return Err(dup(&c));
                }
            }
            "ClusterQueue" => {
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
                let cq = ClusterQueue {
                    name: name.clone(),
                    cohort,
                    strategy,
                    resource_groups,
                };
                if cfg.cluster_queues.insert(name.clone(), cq).is_some() {
                    return Err(dup(&c));
                }
            }
            "Cohort" => {
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
                let resource_groups = resource_groups(&c, spec, &flavor_names, true)?;
                if cfg
                    .cohorts
                    .insert(
                        name.clone(),
                        Cohort {
                            name: name.clone(),
                            parent,
                            resource_groups,
                        },
                    )
                    .is_some()
                {
                    return Err(dup(&c));
                }
            }
            "LocalQueue" => {
                let namespace = get(v, "metadata")
                    .map(|m| string(&c, m, "namespace", "metadata.namespace"))
                    .transpose()?
                    .flatten()
                    .unwrap_or_else(|| "default".to_string());
                let cluster_queue = string(&c, spec, "clusterQueue", "spec.clusterQueue")?
                    .ok_or_else(|| c.err("spec.clusterQueue", "missing"))?;
                if let Some(other) = lq_namespaces.insert(name.clone(), namespace.clone()) {
                    return Err(c.err(
                        "metadata.name",
                        format!("LocalQueue `{name}` exists in namespaces `{other}` and `{namespace}`; fleetsim queue names are not namespaced"),
                    ));
                }
                cfg.local_queues.insert(
                    name.clone(),
                    LocalQueue {
                        namespace,
                        name: name.clone(),
                        cluster_queue,
                    },
                );
                // The ClusterQueue is checked once every object is read (below).
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
    // Cross references.
    for (line, v) in &objects {
        let c = Ctx { path, line: *line };
        let (api, kind, name) = kind_of(&c, v)?;
        if kind == "LocalQueue" && api.starts_with("kueue.x-k8s.io/") {
            let lq = &cfg.local_queues[&name];
            if !cfg.cluster_queues.contains_key(&lq.cluster_queue) {
                return Err(c.err(
                    "spec.clusterQueue",
                    format!("`{}` is not a declared ClusterQueue", lq.cluster_queue),
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
        });
    }
    for start in cfg.cohorts.keys() {
        let mut seen = BTreeSet::new();
        let mut cur = Some(start.clone());
        while let Some(n) = cur {
            if !seen.insert(n.clone()) {
                return Err(KueueError {
                    path: path.to_path_buf(),
                    line: 0,
                    field: "spec.parent".into(),
                    message: format!("the cohort tree has a cycle through `{start}`"),
                });
            }
            cur = cfg.cohorts.get(&n).and_then(|c| c.parent.clone());
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
    /// The scenario quota settings the manifests map onto (see the module docs): cohorts
    /// and ClusterQueues in name order, LocalQueues as each queue's `local_queues`.
    pub fn quota(&self) -> KueueQuota {
        let mut notes = Vec::new();
        let flavors = self
            .flavors
            .values()
            .map(|f| FlavorSpec {
                name: f.name.clone(),
                models: MODEL_LABELS
                    .iter()
                    .filter_map(|k| f.node_labels.get(*k).cloned())
                    .collect(),
            })
            .collect();
        let cohorts = self
            .cohorts
            .values()
            .map(|c| CohortSpec {
                name: c.name.clone(),
                parent: c.parent.clone(),
                weight: None,
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
                name: cq.name.clone(),
                strategy: Some(cq.strategy),
                max_gpus: None,
                default_time_limit_s: None,
                max_time_limit_s: None,
                cohort: cq.cohort.clone(),
                weight: None,
                tier: None,
                flavors: flavor_quotas(
                    &format!("ClusterQueue {}", cq.name),
                    &cq.resource_groups,
                    &mut notes,
                ),
                local_queues: self
                    .local_queues
                    .values()
                    .filter(|lq| lq.cluster_queue == cq.name && lq.name != cq.name)
                    .map(|lq| lq.name.clone())
                    .collect(),
            })
            .collect();
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
        }
    }
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
        assert_eq!(k2.flavors[0].models, ["NVIDIA-H100-80GB-HBM3"]);
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
    fn errors_name_file_line_and_field() {
        let cases = [
            (MANIFESTS.replace("cohortName: all", "cohort: all"), 9, "spec.cohort"),
            (MANIFESTS.replace("queueingStrategy: StrictFIFO", "queueingStrategy: LIFO"), 9, "spec.queueingStrategy"),
            (MANIFESTS.replace("nominalQuota: 500m", "nominalQuota: -1"), 9, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
            (MANIFESTS.replace("lendingLimit: 4", "lendingLimit: 40"), 9, "spec.resourceGroups[0].flavors[0].resources[1].lendingLimit"),
            (MANIFESTS.replace("    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8", "    - name: a100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8"), 28, "spec.resourceGroups[0].flavors[0].name"),
            (MANIFESTS.replace("clusterQueue: cq-b", "clusterQueue: cq-z"), 50, "spec.clusterQueue"),
            (MANIFESTS.replace("  name: product", "  name: research"), 50, "metadata.name"),
            (MANIFESTS.replace("kueue.x-k8s.io/v1beta1\nkind: LocalQueue", "kueue.x-k8s.io/v2\nkind: LocalQueue"), 42, "apiVersion"),
            (MANIFESTS.replace("coveredResources: [nvidia.com/gpu]", "coveredResources: 3"), 28, "spec.resourceGroups[0].coveredResources"),
            (MANIFESTS.replace("value: 1000", "value: high"), 65, "value"),
            (MANIFESTS.replace("spec:\n  parentName: org", "spec:\n  parentName: all"), 0, "spec.parent"),
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
        let e = parse("a: [1,\n", Path::new("k.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad YAML"), "{e}");
    }
}
