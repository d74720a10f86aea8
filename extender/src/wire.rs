//! The Kubernetes scheduler-extender wire shapes (`k8s.io/kube-scheduler/extender/v1`) and the
//! parts of `v1.Pod` and `v1.Node` the extender reads.
//!
//! The extender types have no JSON tags upstream, so their keys are the Go field names
//! (PascalCase: `Pod`, `Nodes`, `NodeNames`, `FailedNodes`, `Host`, `Score`, …); the core API
//! objects inside them keep their own camelCase keys (`metadata`, `status.allocatable`).
//! Node and victim objects are kept as raw JSON so that `filter` returns the nodes it
//! received unchanged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// The highest score a `prioritize` answer may give (`MaxExtenderPriority`).
pub const MAX_EXTENDER_PRIORITY: i64 = 10;

/// `ExtenderArgs`: the body of `filter` and `prioritize`.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct ExtenderArgs {
    /// The pod being scheduled (`v1.Pod`).
    #[serde(rename = "Pod")]
    pub pod: Pod,
    /// Candidate nodes (`v1.NodeList`); sent when the extender is not `nodeCacheCapable`,
    /// which this extender requires (it reads the nodes' resources from them).
    #[serde(rename = "Nodes", default)]
    pub nodes: Option<NodeList>,
    /// Candidate node names; sent instead of `Nodes` when `nodeCacheCapable` is true.
    #[serde(rename = "NodeNames", default)]
    pub node_names: Option<Vec<String>>,
}

/// `v1.NodeList`: only `items` is read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct NodeList {
    /// The nodes, as received (raw JSON text: parsed once into [`Node`], returned unchanged).
    #[serde(default)]
    pub items: Vec<Box<RawValue>>,
}

/// `ExtenderFilterResult`: the nodes that pass, and why the others fail.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ExtenderFilterResult {
    /// The nodes that pass (as received), when the request carried `Nodes`.
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeList>,
    /// The names of the nodes that pass.
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<String>>,
    /// Node name → why it fails; preemption may help.
    #[serde(rename = "FailedNodes")]
    pub failed_nodes: BTreeMap<String, String>,
    /// Node name → why it fails; preemption cannot help (the node could never hold the pod).
    #[serde(rename = "FailedAndUnresolvableNodes")]
    pub failed_and_unresolvable_nodes: BTreeMap<String, String>,
    /// A non-empty message fails the whole scheduling attempt.
    #[serde(rename = "Error")]
    pub error: String,
}

/// `HostPriority`: one node's score, `0..=10`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct HostPriority {
    /// The node's name.
    #[serde(rename = "Host")]
    pub host: String,
    /// The score, `0..=`[`MAX_EXTENDER_PRIORITY`].
    #[serde(rename = "Score")]
    pub score: i64,
}

/// `ExtenderPreemptionArgs`: the body of `preempt`.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct ExtenderPreemptionArgs {
    /// The pod that needs room.
    #[serde(rename = "Pod")]
    pub pod: Pod,
    /// Node name → the victims kube-scheduler proposes there, as full pods (sent when the
    /// extender is not `nodeCacheCapable`).
    #[serde(rename = "NodeNameToVictims", default)]
    pub node_name_to_victims: Option<BTreeMap<String, Victims>>,
    /// Node name → the victims as UIDs (sent when `nodeCacheCapable`).
    #[serde(rename = "NodeNameToMetaVictims", default)]
    pub node_name_to_meta_victims: Option<BTreeMap<String, MetaVictims>>,
}

/// `Victims`: pods to evict on one node.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Victims {
    /// The victim pods.
    #[serde(rename = "Pods", default)]
    pub pods: Vec<Pod>,
    /// Pod disruption budgets the eviction would violate.
    #[serde(rename = "NumPDBViolations", default)]
    pub num_pdb_violations: i64,
}

/// `MetaPod`: a pod by UID.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct MetaPod {
    /// The pod's `metadata.uid`.
    #[serde(rename = "UID")]
    pub uid: String,
}

/// `MetaVictims`: victims by UID.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct MetaVictims {
    /// The victims.
    #[serde(rename = "Pods", default)]
    pub pods: Vec<MetaPod>,
    /// Pod disruption budgets the eviction would violate.
    #[serde(rename = "NumPDBViolations", default)]
    pub num_pdb_violations: i64,
}

/// `ExtenderPreemptionResult`: the nodes (and victims on each) the extender accepts.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ExtenderPreemptionResult {
    /// Node name → victims by UID.
    #[serde(rename = "NodeNameToMetaVictims")]
    pub node_name_to_meta_victims: BTreeMap<String, MetaVictims>,
}

/// `v1.ObjectMeta`: the fields read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ObjectMeta {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// UID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `v1.Pod`: the fields read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Pod {
    /// Metadata (annotations carry fleetsim's keys, see the crate docs).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: PodSpec,
    /// Status (`startTime` orders preemption victims).
    #[serde(default)]
    pub status: PodStatus,
}

/// `v1.PodSpec`: the fields read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct PodSpec {
    /// Containers; their requests are summed.
    #[serde(default)]
    pub containers: Vec<Container>,
    /// Priority (from the priority class).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// `v1.PodStatus`: the fields read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct PodStatus {
    /// RFC 3339 start time.
    #[serde(rename = "startTime", default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
}

/// `v1.Container`: the fields read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Container {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Resources.
    #[serde(default)]
    pub resources: ResourceRequirements,
}

/// `v1.ResourceRequirements`: quantities as strings (`"500m"`, `"4Gi"`) or numbers.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ResourceRequirements {
    /// Requests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, Value>,
    /// Limits (an extended resource such as `nvidia.com/gpu` may be given as a limit only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, Value>,
}

/// `v1.Node`: the fields read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Node {
    /// Metadata (labels: GPU model and topology; annotations: free shares).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: NodeSpec,
    /// Status.
    #[serde(default)]
    pub status: NodeStatus,
}

/// `v1.NodeSpec`: the fields read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct NodeSpec {
    /// Cordoned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
}

/// `v1.NodeStatus`: the fields read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct NodeStatus {
    /// Allocatable resources (`cpu`, `memory`, `nvidia.com/gpu`).
    #[serde(default)]
    pub allocatable: BTreeMap<String, Value>,
}
