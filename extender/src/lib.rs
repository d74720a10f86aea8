//! # fleetsim-extender
//!
//! A Kubernetes scheduler extender (`k8s.io/kube-scheduler/extender/v1`) that answers
//! `filter`, `prioritize` and `preempt` with the placement policies of
//! [`fleetsim_policies`] — the same code, called the same way ([`fleetsim_policies::place_gang`]
//! on a [`fleetsim_policies::FleetState`]), as the simulator. The decision-equivalence test
//! (`tests/integration/equivalence.rs`) replays simulator decisions through this service over HTTP and
//! requires identical answers.
//!
//! Each request is decided on its own: the request's nodes become a one-cell snapshot
//! ([`snapshot::Snapshot`]), the pod a gang ([`snapshot::PodRequest`]), and the policy places
//! the whole gang ([`verbs::place`]). `filter` passes the nodes where one task fits (when the
//! gang fits at all); `prioritize` gives the node of the gang's first task
//! [`wire::MAX_EXTENDER_PRIORITY`] (10) and the response header [`server::PLACEMENT_HEADER`]
//! the whole gang's placement; `preempt` trims kube-scheduler's victims to a minimal set in
//! fleetsim's order ([`verbs::preempt`]).
//!
//! # What the extender reads
//!
//! | object | key | meaning |
//! |---|---|---|
//! | node | `status.allocatable.cpu`, `.memory`, `.nvidia.com/gpu` | capacity (milli-cores, MiB rounded down, accelerators) |
//! | node label | `fleetsim.io/gpu-model`, else `nvidia.com/gpu.product` (GPU Feature Discovery) | accelerator model |
//! | node label | `fleetsim.io/domain` | NVLink/ICI domain (rack); absent: the node is its own domain |
//! | node label | `fleetsim.io/block` | block of domains; absent: one block |
//! | node label | `fleetsim.io/rank` | tie-break rank (lower wins), then request order |
//! | node annotation | `fleetsim.io/gpu-free-milli` | free GPU-milli per accelerator, e.g. `1000,1000,500,0`; absent: all free |
//! | node annotation | `fleetsim.io/cpu-free-milli`, `fleetsim.io/memory-free-mib` | free CPU (milli-cores) and memory (MiB); absent: all free |
//! | node | `spec.unschedulable` | cordoned: takes nothing |
//! | pod | `spec.containers[].resources.requests` (`limits` for a resource not requested) | `cpu` (rounded up to milli-cores), `memory` (up to MiB), `nvidia.com/gpu` |
//! | pod annotation | `fleetsim.io/gpu-milli`, `fleetsim.io/gpu-count` | a GPU-sharing pod: share per accelerator (1–1000) and accelerators (default: the `nvidia.com/gpu` request, or 1) |
//! | pod annotation | `fleetsim.io/gpu-models` | allowed models, comma-separated |
//! | pod annotation | `fleetsim.io/gang-tasks` | tasks of the gang still to place, this pod included (default 1) |
//! | pod annotation | `fleetsim.io/topology`, `fleetsim.io/topology-slice`, `fleetsim.io/ray-strategy` | `required:<level>` / `preferred:<level>`; `<tasks>:<level>`; a Ray strategy |
//! | pod annotation | `fleetsim.io/placement` | the policy for this pod (a scenario name, e.g. `fgd`) |
//! | victim pod annotation | `fleetsim.io/gpu-alloc` | `<hex mask>:<milli>`: the accelerators it holds; used only when it agrees with the victim's requests and the node (a claim, see the README's Security section) |
//!
//! Units as in the policy crate: GPU-milli (1000 = one accelerator), milli-cores, MiB.
//!
//! # Trust and bounds
//!
//! Victims' annotations are claims, checked against their requests and the caller's own
//! node view before they count ([`verbs::preempt`]); callers authenticate with a token and
//! each has its own node cache ([`server::Auth`]); connections, time, bytes and work are
//! bounded ([`server::Limits`], [`snapshot::MAX_VALUE_BYTES`], [`snapshot::MAX_GANG_TASKS`],
//! [`snapshot::MAX_PLACEMENT_WORK`]). The README's Security section has the trust model.
//!
//! # Example
//!
//! The verbs are plain functions of a request (the HTTP layer, [`server`], only parses and
//! serializes):
//!
//! ```
//! use fleetsim_extender::{verbs, wire::ExtenderArgs};
//! use fleetsim_policies::PlacementKind;
//!
//! let args: ExtenderArgs = serde_json::from_str(r#"{
//!   "Pod": {"metadata": {"name": "p"}, "spec": {"containers": [
//!     {"name": "c", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "2"}}}]}},
//!   "Nodes": {"items": [
//!     {"metadata": {"name": "idle"},
//!      "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "4"}}},
//!     {"metadata": {"name": "busy", "annotations": {"fleetsim.io/gpu-free-milli": "0,0,1000,1000"}},
//!      "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "4"}}}]}
//! }"#).unwrap();
//! let (snap, pod) = verbs::read_args(&args).unwrap();
//! let placed = verbs::place(&snap, &pod, PlacementKind::BestFit);
//! let scores = verbs::prioritize(&snap, &placed);
//! // Best-fit: the busy node still holds the pod's two GPUs and has the least free.
//! assert_eq!((scores[1].host.as_str(), scores[1].score), ("busy", 10));
//! assert_eq!(verbs::placement_text(&snap, &placed), "busy:c");
//! let filtered = verbs::filter(&args, &snap, &placed);
//! assert_eq!(filtered.node_names.unwrap(), ["idle", "busy"]);
//! ```

pub mod server;
pub mod snapshot;
pub mod spec_file;
pub mod verbs;
pub mod wire;

pub use server::{router, serve, Config};
