//! Topology-Aware Scheduling (TAS): Kueue's `Topology` objects (`spec.levels[].nodeLabel`,
//! top first), the ResourceFlavors whose nodes they describe (`spec.topologyName`), and a
//! workload's TAS annotations (<https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/>).
//!
//! A Topology's levels are fleetsim's levels ([`Level`]) counted from the lowest: when the
//! lowest label is `kubernetes.io/hostname` it is the node, and the ones above are the
//! domain (an NVLink/ICI island, a rack), the block and the cell; without a hostname level
//! the lowest is the domain. A Topology of more levels than that is refused. The fleet's
//! `nodes_per_domain` and `domains_per_block` stand for the labels' groups.
//!
//! A workload's pod-template annotations become its topology constraint
//! ([`fleetsim_policies::topology::TopologySpec`]):
//! `kueue.x-k8s.io/podset-required-topology: LABEL` (all pods in one group of that level),
//! `…-preferred-topology: LABEL` (as few groups as possible, climbing), `…-unconstrained-topology`
//! (none), `…-slice-required-topology: LABEL` with `…-slice-size: N` (slices of N pods, each
//! in one group). A workload without an annotation is unconstrained (Kueue's implied TAS).
//! A label that is not a level of its ClusterQueue's TAS flavor makes the workload
//! inadmissible in Kueue ("does not contain the requested level"): refused, naming it.
//!
//! Not simulated, noted: a ClusterQueue mixing TAS and other flavors gives, in Kueue, its TAS
//! flavors only to workloads asking for TAS; fleetsim offers every flavor to every workload.

use crate::scenario::yaml::Value;
use fleetsim_policies::topology::{Level, TopologyMode, TopologySpec};

use super::{check_keys, get, string, Ctx, KueueConfig, KueueError};

/// The hostname label: the node level.
pub const HOSTNAME: &str = "kubernetes.io/hostname";

/// Reads a `Topology`'s levels (node labels, top first).
pub(super) fn levels(c: &Ctx, spec: &Value) -> Result<Vec<String>, KueueError> {
    check_keys(c, spec, "spec", &["levels"])?;
    let Some(Value::Sequence(ls)) = get(spec, "levels") else {
        return Err(c.err("spec.levels", "missing: a Topology needs levels"));
    };
    let mut out = Vec::new();
    for (i, l) in ls.iter().enumerate() {
        let f = format!("spec.levels[{i}]");
        check_keys(c, l, &f, &["nodeLabel"])?;
        out.push(
            string(c, l, "nodeLabel", &format!("{f}.nodeLabel"))?
                .ok_or_else(|| c.err(&format!("{f}.nodeLabel"), "missing"))?,
        );
    }
    if mapping(&out).is_none() {
        return Err(c.err(
            "spec.levels",
            format!(
                "{} levels: fleetsim models at most the node (kubernetes.io/hostname), its domain, block and cell",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// Each label of `levels` (top first) with its fleetsim level, or `None` for too many.
pub fn mapping(levels: &[String]) -> Option<Vec<(String, Level)>> {
    let host = levels.last().is_some_and(|l| l == HOSTNAME);
    let ladder: &[Level] = if host {
        &[Level::Node, Level::Domain, Level::Block, Level::Cell]
    } else {
        &[Level::Domain, Level::Block, Level::Cell]
    };
    if levels.len() > ladder.len() {
        return None;
    }
    Some(
        levels
            .iter()
            .rev()
            .zip(ladder)
            .map(|(l, &lv)| (l.clone(), lv))
            .rev()
            .collect(),
    )
}

impl KueueConfig {
    /// The Topology of a ClusterQueue's first TAS flavor: (flavor, its label mapping).
    pub fn tas_of(&self, cluster_queue: &str) -> Option<(String, Vec<(String, Level)>)> {
        let cq = self.cluster_queues.get(cluster_queue)?;
        cq.resource_groups
            .iter()
            .flat_map(|g| &g.flavors)
            .find_map(|f| {
                let t = self.flavors.get(&f.flavor)?.topology_name.as_ref()?;
                let levels = self.topologies.get(t)?;
                Some((f.flavor.clone(), mapping(levels)?))
            })
    }

    /// Notes on the TAS flavors: how their levels map, and ClusterQueues mixing them with
    /// other flavors.
    pub(super) fn tas_notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in self.flavors.values() {
            let Some(t) = &f.topology_name else { continue };
            let Some(m) = self.topologies.get(t).and_then(|l| mapping(l)) else {
                continue;
            };
            out.push(format!(
                "ResourceFlavor {}: Topology `{t}`'s levels are {}: the fleet's nodes, domains (nodes_per_domain) and blocks (domains_per_block) stand for them; a workload without a TAS annotation is unconstrained (Kueue's implied TAS)",
                f.name,
                m.iter()
                    .map(|(l, lv)| format!("{l} = {}", lv.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for cq in self.cluster_queues.values() {
            let (tas, plain): (Vec<&str>, Vec<&str>) = cq
                .resource_groups
                .iter()
                .flat_map(|g| g.flavors.iter().map(|f| f.flavor.as_str()))
                .partition(|f| {
                    self.flavors
                        .get(*f)
                        .is_some_and(|x| x.topology_name.is_some())
                });
            if !tas.is_empty() && !plain.is_empty() {
                out.push(format!(
                    "ClusterQueue {}: mixes TAS flavors ({}) and others ({}): Kueue gives the TAS flavors only to workloads that ask for TAS; fleetsim offers every flavor to every workload",
                    cq.name,
                    tas.join(", "),
                    plain.join(", ")
                ));
            }
        }
        out
    }
}

/// The annotations a pod template carries.
const REQUIRED: &str = "kueue.x-k8s.io/podset-required-topology";
const PREFERRED: &str = "kueue.x-k8s.io/podset-preferred-topology";
const UNCONSTRAINED: &str = "kueue.x-k8s.io/podset-unconstrained-topology";
const SLICE_LEVEL: &str = "kueue.x-k8s.io/podset-slice-required-topology";
const SLICE_SIZE: &str = "kueue.x-k8s.io/podset-slice-size";

/// The topology constraint of a pod template's TAS annotations (`get(key)`), against the
/// mapping of its ClusterQueue's TAS flavor (`None`: the ClusterQueue has none). `Ok(None)`:
/// no annotation (or unconstrained).
///
/// # Errors
/// A message naming the annotation: a label that is not a level, a slice size that is not a
/// positive count, an annotation on a ClusterQueue without a TAS flavor.
pub fn constraint(
    get: &dyn Fn(&str) -> Option<String>,
    tas: Option<&(String, Vec<(String, Level)>)>,
) -> Result<Option<TopologySpec>, String> {
    let any = [REQUIRED, PREFERRED, SLICE_LEVEL, SLICE_SIZE]
        .iter()
        .any(|k| get(k).is_some());
    if !any {
        return Ok(None);
    }
    let Some((flavor, levels)) = tas else {
        return Err(
            "asks for Topology-Aware Scheduling, but its ClusterQueue has no flavor with a topologyName: Kueue does not admit it"
                .into(),
        );
    };
    let level = |key: &str| -> Result<Option<Level>, String> {
        let Some(label) = get(key) else {
            return Ok(None);
        };
        levels
            .iter()
            .find(|(l, _)| *l == label)
            .map(|&(_, lv)| Some(lv))
            .ok_or_else(|| {
                format!(
                    "`{key}: {label}`: flavor {flavor}'s Topology has no such level ({}): Kueue does not admit it",
                    levels.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>().join(", ")
                )
            })
    };
    if get(UNCONSTRAINED).is_some_and(|v| v == "true") {
        return Ok(None);
    }
    let (lv, mode) = match (level(REQUIRED)?, level(PREFERRED)?) {
        (Some(l), _) => (Some(l), TopologyMode::Required),
        (None, Some(l)) => (Some(l), TopologyMode::Preferred),
        (None, None) => (None, TopologyMode::Preferred),
    };
    let slice_size = get(SLICE_SIZE)
        .map(|t| {
            t.parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{SLICE_SIZE}: {t}` is not a positive count"))
        })
        .transpose()?;
    let slice_level = level(SLICE_LEVEL)?;
    Ok(Some(TopologySpec {
        level: lv,
        mode,
        slice_size: slice_size.or(slice_level.map(|_| 1)),
        slice_level: slice_level.unwrap_or(Level::Domain),
        ray: None,
    }))
}

/// What a pod template's TAS annotations require, in their own labels, for a pending
/// reason: `all its pods in one example.com/rack`, `each slice of 4 pods in one
/// example.com/rack`; `None` when they require nothing (preferred or unconstrained).
pub fn required_text(get: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if get(UNCONSTRAINED).is_some_and(|v| v == "true") {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(l) = get(REQUIRED) {
        parts.push(format!("all its pods in one {l}"));
    }
    if let Some(l) = get(SLICE_LEVEL) {
        let n = get(SLICE_SIZE).unwrap_or_else(|| "1".into());
        parts.push(format!("each slice of {n} pods in one {l}"));
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_from_the_lowest() {
        let m = mapping(&[
            "cloud.provider.com/topology-block".into(),
            "cloud.provider.com/topology-rack".into(),
            HOSTNAME.into(),
        ])
        .unwrap();
        assert_eq!(
            m.iter().map(|x| x.1).collect::<Vec<_>>(),
            [Level::Block, Level::Domain, Level::Node]
        );
        let m = mapping(&["b".into(), "r".into()]).unwrap();
        assert_eq!(
            m.iter().map(|x| x.1).collect::<Vec<_>>(),
            [Level::Block, Level::Domain]
        );
        assert!(mapping(&["a".into(), "b".into(), "c".into(), "d".into()]).is_none());
        let tas = ("f".to_string(), m);
        let ann = |k: &str| (k == REQUIRED).then(|| "r".to_string());
        let t = constraint(&ann, Some(&tas)).unwrap().unwrap();
        assert_eq!(
            (t.level, t.mode),
            (Some(Level::Domain), TopologyMode::Required)
        );
        let bad = |k: &str| (k == PREFERRED).then(|| "x".to_string());
        assert!(constraint(&bad, Some(&tas))
            .unwrap_err()
            .contains("no such level"));
        assert!(constraint(&ann, None)
            .unwrap_err()
            .contains("no flavor with a topologyName"));
        assert_eq!(constraint(&|_| None, Some(&tas)).unwrap(), None);
    }
}
