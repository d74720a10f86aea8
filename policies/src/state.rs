//! The fleet state a policy reads and reserves into: nodes with per-accelerator free shares,
//! CPU and memory, grouped into cells, with a capacity index per cell.
//!
//! # Topology
//! node → NVLink/ICI domain (an NVL72 rack, an HGX board) → block → cell. Domains and blocks are
//! fleet-wide dense ids; a node belongs to exactly one of each.
//!
//! # Reservation ("assume") semantics
//! As in the Kubernetes scheduler cache, a policy that decides to start a task reserves it in
//! this state at once ([`FleetState::allocate`]), so later decisions of the same pass see it; a
//! gang that cannot be completed is rolled back with [`FleetState::release`]. Every mutation is
//! checked: nothing is ever allocated beyond a node's capacity in any dimension, and a release
//! that does not match an allocation is an error, not a silent wrap.
//!
//! # Capacity index
//! Per cell and accelerator model, nodes that are up and schedulable are kept in a
//! [`BucketIndex`] ordered by `(free GPU-milli, node id)`; per cell, once a CPU-only task has been seen
//! ([`FleetState::enable_cpu_index`]), also by `(free CPU-milli, node id)`. Best-fit and
//! worst-fit find candidates in `O(log n)` plus the candidates they reject; see
//! [`FleetState::gpu_candidates`]. Each index update is a remove + insert (a lookup among the
//! distinct free amounts and a bit flip), and the CPU index is only kept when some task needs
//! it.

use std::collections::BTreeMap;

use crate::bucket_index::BucketIndex;
use std::fmt;

use crate::ids::{CellId, ModelId, NodeId};
use crate::resources::{ModelSet, TaskShape, MAX_GPUS_PER_NODE, WHOLE_GPU_MILLI};

/// How to declare one node when building a [`FleetState`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    /// Unique node name (e.g. `openb-node-0001`, `hopper/r03/n07`).
    pub name: String,
    /// The cell the node belongs to.
    pub cell: CellId,
    /// Fleet-wide block id.
    pub block: u32,
    /// Fleet-wide NVLink/ICI domain (rack) id.
    pub domain: u32,
    /// Accelerator model; `None` for a CPU-only node (then `gpus` must be 0).
    pub model: Option<ModelId>,
    /// Number of accelerators, `0..=64`.
    pub gpus: u32,
    /// CPU capacity, milli-cores.
    pub cpu_milli: u64,
    /// Memory capacity, MiB.
    pub mem_mib: u64,
}

/// Errors from building or mutating a [`FleetState`]. All are fatal for the operation that
/// returned them and leave the state unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateError {
    /// A node spec is inconsistent (zero capacity, too many GPUs, GPUs without a model…).
    InvalidNode {
        /// The node's name.
        node: String,
        /// What is wrong.
        reason: String,
    },
    /// A cell id in a node spec has no declared cell.
    UnknownCell(CellId),
    /// The allocation does not fit the node (it would over-allocate a dimension).
    DoesNotFit {
        /// The node.
        node: NodeId,
        /// The dimension that would be exceeded.
        dimension: &'static str,
    },
    /// A release names more than was allocated on the node.
    ReleaseMismatch {
        /// The node.
        node: NodeId,
        /// The dimension that would go above capacity.
        dimension: &'static str,
    },
    /// Task-class tracking was turned on while accelerators were allocated (the counts of
    /// the tasks already bound cannot be rebuilt).
    ClassTrackingOnBusyFleet,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::InvalidNode { node, reason } => write!(f, "node {node}: {reason}"),
            StateError::UnknownCell(c) => write!(f, "unknown cell id {c}"),
            StateError::ClassTrackingOnBusyFleet => write!(
                f,
                "task-class tracking turned on while accelerators are allocated"
            ),
            StateError::DoesNotFit { node, dimension } => {
                write!(f, "allocation on node {node} exceeds its free {dimension}")
            }
            StateError::ReleaseMismatch { node, dimension } => {
                write!(
                    f,
                    "release on node {node} frees more {dimension} than was allocated"
                )
            }
        }
    }
}

impl std::error::Error for StateError {}

/// One task's binding to one node: which accelerators and how much of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskAlloc {
    /// The node.
    pub node: NodeId,
    /// Bit `i` set = accelerator `i` of the node is bound.
    pub gpu_mask: u64,
    /// GPU-milli taken on each bound accelerator (`1..=1000`; 0 when no GPU is bound).
    pub gpu_milli: u32,
    /// CPU taken, milli-cores.
    pub cpu_milli: u64,
    /// Memory taken, MiB.
    pub mem_mib: u64,
}

/// Node `id` of a fleet as it would be with some bindings released, without touching the
/// fleet: [`FleetState::tasks_fit_now`] on that state, for a search that asks, binding after
/// binding, when a node takes one more task (`scheduler::las_nodes`). `O(accelerators)` to make, `O(1)`
/// plus the binding's accelerators per release.
#[derive(Clone, Debug)]
pub(crate) struct NodeAfterRelease {
    id: NodeId,
    schedulable: bool,
    model: Option<ModelId>,
    gpus: usize,
    free_cpu_milli: u64,
    free_mem_mib: u64,
    /// Free GPU-milli per accelerator.
    gpu_free: [u16; 64],
}

impl NodeAfterRelease {
    /// Node `id` as it is now.
    pub(crate) fn new(fleet: &FleetState, id: NodeId) -> NodeAfterRelease {
        let n = fleet.node(id);
        let mut gpu_free = [0u16; 64];
        let free = fleet.gpu_free(id);
        gpu_free[..free.len()].copy_from_slice(free);
        NodeAfterRelease {
            id,
            schedulable: n.schedulable,
            model: n.model,
            gpus: free.len(),
            free_cpu_milli: n.free_cpu_milli,
            free_mem_mib: n.free_mem_mib,
            gpu_free,
        }
    }

    /// Adds binding `a` back to the free resources, if it is on this node (as
    /// [`FleetState::release`] would; a binding it would refuse is not checked).
    pub(crate) fn release(&mut self, a: &TaskAlloc) {
        if a.node != self.id {
            return;
        }
        self.free_cpu_milli += a.cpu_milli;
        self.free_mem_mib += a.mem_mib;
        for i in bits(a.gpu_mask) {
            self.gpu_free[i] = self.gpu_free[i].saturating_add(a.gpu_milli as u16);
        }
    }

    /// [`FleetState::tasks_fit_now`] on this state, for a task of whole accelerators (or
    /// none): how many such tasks the node takes one after another.
    pub(crate) fn whole_tasks(&self, shape: &TaskShape, models: ModelSet) -> u32 {
        debug_assert!(shape.num_gpu == 0 || shape.gpu_milli >= WHOLE_GPU_MILLI);
        if !self.schedulable {
            return 0;
        }
        let mut k = u64::from(u32::MAX);
        if let Some(c) = self.free_cpu_milli.checked_div(shape.cpu_milli) {
            k = k.min(c);
        }
        if let Some(m) = self.free_mem_mib.checked_div(shape.mem_mib) {
            k = k.min(m);
        }
        if shape.num_gpu > 0 {
            if !self.model.is_some_and(|m| models.allows(m)) {
                return 0;
            }
            let whole = self.gpu_free[..self.gpus]
                .iter()
                .filter(|&&f| u32::from(f) == WHOLE_GPU_MILLI)
                .count() as u64;
            k = k.min(whole / u64::from(shape.num_gpu));
        }
        k as u32
    }
}

impl TaskAlloc {
    /// Total GPU-milli bound by this task.
    pub fn total_gpu_milli(&self) -> u64 {
        self.gpu_mask.count_ones() as u64 * self.gpu_milli as u64
    }
}

/// One node's live state.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NodeState {
    /// The node's cell.
    pub cell: CellId,
    /// The node's position in its cell's node list (`CellState::nodes`).
    pub pos: u32,
    /// Fleet-wide block id.
    pub block: u32,
    /// Fleet-wide NVLink/ICI domain id.
    pub domain: u32,
    /// Accelerator model (`None` for CPU-only).
    pub model: Option<ModelId>,
    /// Accelerators on the node.
    pub gpus: u32,
    gpu_offset: u32,
    /// Sum of free GPU-milli over the node's accelerators.
    pub free_gpu_milli: u32,
    /// Accelerators that are wholly free (1000 GPU-milli).
    pub free_whole: u32,
    /// Bit `i` set = accelerator `i` is wholly free (`free_whole` bits are set).
    pub whole_mask: u64,
    /// CPU capacity, milli-cores.
    pub cpu_milli: u64,
    /// Free CPU, milli-cores.
    pub free_cpu_milli: u64,
    /// Memory capacity, MiB.
    pub mem_mib: u64,
    /// Free memory, MiB.
    pub free_mem_mib: u64,
    /// False while the node is down or drained: it takes no new work and, for the occupancy
    /// metric, is not available.
    pub schedulable: bool,
}

/// Per-cell totals and index.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CellState {
    /// The cell's name.
    pub name: String,
    /// The cell's nodes in id order.
    pub nodes: Vec<NodeId>,
    /// GPU-milli on schedulable nodes.
    pub available_gpu_milli: u64,
    /// GPU-milli bound to tasks (on any node of the cell).
    pub allocated_gpu_milli: u64,
    /// Free GPU-milli on schedulable nodes, per accelerator model (indexed by [`ModelId`];
    /// kept with the capacity index).
    free_by_model: Vec<u64>,
    gpu_index: BTreeMap<ModelId, BucketIndex>,
    cpu_index: BucketIndex,
    /// Distinct empty-node capacities `(model, gpus, cpu_milli, mem_mib)` with node counts;
    /// answers "could this job ever fit here" without scanning nodes.
    capacity_classes: BTreeMap<(Option<ModelId>, u32, u64, u64), u32>,
}

/// The whole fleet: nodes, cells, accelerator model names.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FleetState {
    nodes: Vec<NodeState>,
    names: Vec<String>,
    gpu_free: Vec<u16>,
    cells: Vec<CellState>,
    models: Vec<String>,
    cpu_index: bool,
    /// Per node: bumped on every change of its free resources or schedulability, so policies
    /// can cache per-node quantities (FGD's fragmentation) and recompute only what changed.
    versions: Vec<u64>,
    /// Bumped with every node version: equal counts mean an unchanged fleet.
    changes: u64,
    /// Per node: how many GPU tasks of each class it holds, as `(class, count)` sorted by
    /// class ([`FleetState::task_class`]); GpuClustering reads it. Kept only while
    /// `track_classes` is on ([`FleetState::stop_task_class_tracking`]).
    classes: Vec<Vec<(u8, u32)>>,
    track_classes: bool,
    /// While on ([`FleetState::journal_changes`]): every node whose version moved since the
    /// last [`FleetState::take_changed`], in order, repeats included. Not serialized: a
    /// loaded fleet has it off, and its reader rebuilds what it keeps from the whole fleet.
    #[cfg_attr(feature = "serde", serde(skip))]
    journal: Option<Vec<NodeId>>,
}

impl FleetState {
    /// Builds a fleet from cell names, model names and node specs. Node ids are assigned in
    /// the order of `nodes`; this order is the final tie-break of every placement policy.
    ///
    /// # Errors
    /// [`StateError::UnknownCell`] for a node naming an undeclared cell;
    /// [`StateError::InvalidNode`] for a node with zero capacity (no GPU, CPU or memory), more
    /// than 64 accelerators, accelerators without a model or a model without accelerators, or
    /// a model id outside `models`.
    pub fn new(
        cell_names: Vec<String>,
        models: Vec<String>,
        nodes: Vec<NodeSpec>,
    ) -> Result<FleetState, StateError> {
        let mut cells: Vec<CellState> = cell_names
            .into_iter()
            .map(|name| CellState {
                name,
                free_by_model: vec![0; models.len()],
                ..CellState::default()
            })
            .collect();
        let mut out_nodes = Vec::with_capacity(nodes.len());
        let mut names = Vec::with_capacity(nodes.len());
        let mut gpu_free = Vec::new();
        for (i, spec) in nodes.into_iter().enumerate() {
            let invalid = |reason: String| StateError::InvalidNode {
                node: spec.name.clone(),
                reason,
            };
            if spec.cell.index() >= cells.len() {
                return Err(StateError::UnknownCell(spec.cell));
            }
            if spec.gpus == 0 && spec.cpu_milli == 0 && spec.mem_mib == 0 {
                return Err(invalid("zero capacity in every dimension".into()));
            }
            if spec.gpus > MAX_GPUS_PER_NODE {
                return Err(invalid(format!(
                    "{} accelerators exceed the maximum of {MAX_GPUS_PER_NODE}",
                    spec.gpus
                )));
            }
            match spec.model {
                None if spec.gpus > 0 => {
                    return Err(invalid("accelerators given without a model".into()))
                }
                Some(_) if spec.gpus == 0 => {
                    return Err(invalid("a model given with 0 accelerators".into()))
                }
                Some(m) if m.index() >= models.len() => {
                    return Err(invalid(format!("model id {m} is not in the model table")))
                }
                _ => {}
            }
            let id = NodeId(i as u32);
            let node = NodeState {
                cell: spec.cell,
                pos: cells[spec.cell.index()].nodes.len() as u32,
                block: spec.block,
                domain: spec.domain,
                model: spec.model,
                gpus: spec.gpus,
                gpu_offset: gpu_free.len() as u32,
                free_gpu_milli: spec.gpus * WHOLE_GPU_MILLI,
                free_whole: spec.gpus,
                whole_mask: if spec.gpus == 64 {
                    u64::MAX
                } else {
                    (1u64 << spec.gpus) - 1
                },
                cpu_milli: spec.cpu_milli,
                free_cpu_milli: spec.cpu_milli,
                mem_mib: spec.mem_mib,
                free_mem_mib: spec.mem_mib,
                schedulable: true,
            };
            gpu_free.extend(std::iter::repeat_n(
                WHOLE_GPU_MILLI as u16,
                spec.gpus as usize,
            ));
            let cell = &mut cells[spec.cell.index()];
            cell.nodes.push(id);
            *cell
                .capacity_classes
                .entry((spec.model, spec.gpus, spec.cpu_milli, spec.mem_mib))
                .or_insert(0) += 1;
            out_nodes.push(node);
            names.push(spec.name);
        }
        let n_nodes = out_nodes.len();
        let mut fleet = FleetState {
            nodes: out_nodes,
            names,
            gpu_free,
            cells,
            models,
            cpu_index: false,
            versions: vec![0; n_nodes],
            changes: 0,
            classes: vec![Vec::new(); n_nodes],
            track_classes: true,
            journal: None,
        };
        for i in 0..fleet.nodes.len() {
            let id = NodeId(i as u32);
            fleet.index_insert(id);
            let n = &fleet.nodes[i];
            fleet.cells[n.cell.index()].available_gpu_milli += n.gpus as u64 * 1000;
        }
        Ok(fleet)
    }

    /// All nodes, indexed by [`NodeId`].
    pub fn nodes(&self) -> &[NodeState] {
        &self.nodes
    }

    /// One node.
    ///
    /// # Panics
    /// If `id` is not a node of this fleet.
    pub fn node(&self, id: NodeId) -> &NodeState {
        &self.nodes[id.index()]
    }

    /// A node's name.
    pub fn node_name(&self, id: NodeId) -> &str {
        &self.names[id.index()]
    }

    /// All cells, indexed by [`CellId`].
    pub fn cells(&self) -> &[CellState] {
        &self.cells
    }

    /// Accelerator model names, indexed by [`ModelId`].
    pub fn models(&self) -> &[String] {
        &self.models
    }

    /// Free GPU-milli of each accelerator of a node, in accelerator order.
    pub fn gpu_free(&self, id: NodeId) -> &[u16] {
        let n = &self.nodes[id.index()];
        &self.gpu_free[n.gpu_offset as usize..(n.gpu_offset + n.gpus) as usize]
    }

    /// GPU-milli on schedulable nodes, fleet-wide.
    pub fn available_gpu_milli(&self) -> u64 {
        self.cells.iter().map(|c| c.available_gpu_milli).sum()
    }

    /// GPU-milli bound to tasks, fleet-wide.
    pub fn allocated_gpu_milli(&self) -> u64 {
        self.cells.iter().map(|c| c.allocated_gpu_milli).sum()
    }

    /// True when `shape` fits the node's free resources now, on an allowed model.
    pub fn fits(&self, id: NodeId, shape: &TaskShape, models: ModelSet) -> bool {
        let n = &self.nodes[id.index()];
        if !n.schedulable || n.free_cpu_milli < shape.cpu_milli || n.free_mem_mib < shape.mem_mib {
            return false;
        }
        if shape.num_gpu == 0 {
            return true;
        }
        let Some(model) = n.model else { return false };
        if !models.allows(model) || n.free_gpu_milli < shape.total_gpu_milli() as u32 {
            return false;
        }
        if shape.gpu_milli >= WHOLE_GPU_MILLI {
            return n.free_whole >= shape.num_gpu;
        }
        let usable = self
            .gpu_free(id)
            .iter()
            .filter(|&&f| f as u32 >= shape.gpu_milli)
            .count();
        usable as u32 >= shape.num_gpu
    }

    /// Which accelerators of the node a task of `shape` takes: for whole accelerators the
    /// lowest-indexed free ones; for a share, the accelerators with the least free GPU-milli
    /// that still fit (tightest fit), ties to the lowest index. `None` if it does not fit.
    pub fn choose_gpus(&self, id: NodeId, shape: &TaskShape) -> Option<u64> {
        if shape.num_gpu == 0 {
            return Some(0);
        }
        if !shape.is_fractional() {
            // The lowest-indexed wholly free accelerators: no allocation, a bit per step.
            let n = &self.nodes[id.index()];
            if n.free_whole < shape.num_gpu {
                return None;
            }
            let mut rest = n.whole_mask;
            let mut mask = 0u64;
            for _ in 0..shape.num_gpu {
                let low = rest & rest.wrapping_neg();
                mask |= low;
                rest &= !low;
            }
            return Some(mask);
        }
        // Shares: repeatedly the tightest accelerator that still fits, ties to the lowest index.
        let free = self.gpu_free(id);
        let mut mask = 0u64;
        for _ in 0..shape.num_gpu {
            let mut best: Option<(u16, usize)> = None;
            for (i, &f) in free.iter().enumerate() {
                if mask >> i & 1 == 1 || (f as u32) < shape.gpu_milli {
                    continue;
                }
                if best.is_none_or(|b| (f, i) < b) {
                    best = Some((f, i));
                }
            }
            mask |= 1u64 << best?.1;
        }
        Some(mask)
    }

    /// Reserves one task of `shape` on a node, choosing accelerators by
    /// [`FleetState::choose_gpus`].
    ///
    /// # Errors
    /// [`StateError::DoesNotFit`] when the node cannot take the task (also when it is not
    /// schedulable); the state is unchanged.
    pub fn allocate(
        &mut self,
        id: NodeId,
        shape: &TaskShape,
        models: ModelSet,
    ) -> Result<TaskAlloc, StateError> {
        if !self.fits(id, shape, models) {
            return Err(StateError::DoesNotFit {
                node: id,
                dimension: "capacity",
            });
        }
        let mask = self.choose_gpus(id, shape).ok_or(StateError::DoesNotFit {
            node: id,
            dimension: "gpu",
        })?;
        let alloc = TaskAlloc {
            node: id,
            gpu_mask: mask,
            gpu_milli: if mask == 0 { 0 } else { shape.gpu_milli },
            cpu_milli: shape.cpu_milli,
            mem_mib: shape.mem_mib,
        };
        self.apply(&alloc)?;
        Ok(alloc)
    }

    /// Applies an exact allocation (as a production adapter would on a bind).
    ///
    /// # Errors
    /// [`StateError::DoesNotFit`] naming the first dimension that would be over-allocated
    /// (`cpu`, `memory`, `gpu`, or `gpu index` for a bit beyond the node's accelerators).
    /// The state is unchanged on error.
    pub fn apply(&mut self, a: &TaskAlloc) -> Result<(), StateError> {
        let id = a.node;
        let n = &self.nodes[id.index()];
        let err = |dimension| StateError::DoesNotFit {
            node: id,
            dimension,
        };
        if n.free_cpu_milli < a.cpu_milli {
            return Err(err("cpu"));
        }
        if n.free_mem_mib < a.mem_mib {
            return Err(err("memory"));
        }
        if n.gpus < 64 && a.gpu_mask >> n.gpus != 0 {
            return Err(err("gpu index"));
        }
        let off = n.gpu_offset as usize;
        for i in bits(a.gpu_mask) {
            if (self.gpu_free[off + i] as u32) < a.gpu_milli {
                return Err(err("gpu"));
            }
        }
        self.index_remove(id);
        let n = &mut self.nodes[id.index()];
        n.free_cpu_milli -= a.cpu_milli;
        n.free_mem_mib -= a.mem_mib;
        for i in bits(a.gpu_mask) {
            let f = &mut self.gpu_free[off + i];
            if *f as u32 == WHOLE_GPU_MILLI {
                n.free_whole -= 1;
                n.whole_mask &= !(1u64 << i);
            }
            *f -= a.gpu_milli as u16;
        }
        let total = a.total_gpu_milli();
        n.free_gpu_milli -= total as u32;
        let cell = n.cell;
        self.cells[cell.index()].allocated_gpu_milli += total;
        self.index_insert(id);
        self.bump(id);
        if let Some(c) = Self::task_class(a).filter(|_| self.track_classes) {
            let v = &mut self.classes[id.index()];
            match v.binary_search_by_key(&c, |&(k, _)| k) {
                Ok(i) => v[i].1 += 1,
                Err(i) => v.insert(i, (c, 1)),
            }
        }
        Ok(())
    }

    /// Releases an allocation made by [`FleetState::allocate`] or [`FleetState::apply`].
    ///
    /// # Errors
    /// [`StateError::ReleaseMismatch`] when the release would free more than the node's
    /// capacity in some dimension; the state is unchanged.
    pub fn release(&mut self, a: &TaskAlloc) -> Result<(), StateError> {
        let id = a.node;
        let n = &self.nodes[id.index()];
        let err = |dimension| StateError::ReleaseMismatch {
            node: id,
            dimension,
        };
        if n.free_cpu_milli + a.cpu_milli > n.cpu_milli {
            return Err(err("cpu"));
        }
        if n.free_mem_mib + a.mem_mib > n.mem_mib {
            return Err(err("memory"));
        }
        if n.gpus < 64 && a.gpu_mask >> n.gpus != 0 {
            return Err(err("gpu index"));
        }
        let off = n.gpu_offset as usize;
        for i in bits(a.gpu_mask) {
            if self.gpu_free[off + i] as u32 + a.gpu_milli > WHOLE_GPU_MILLI {
                return Err(err("gpu"));
            }
        }
        self.index_remove(id);
        let n = &mut self.nodes[id.index()];
        n.free_cpu_milli += a.cpu_milli;
        n.free_mem_mib += a.mem_mib;
        for i in bits(a.gpu_mask) {
            let f = &mut self.gpu_free[off + i];
            *f += a.gpu_milli as u16;
            if *f as u32 == WHOLE_GPU_MILLI {
                n.free_whole += 1;
                n.whole_mask |= 1u64 << i;
            }
        }
        let total = a.total_gpu_milli();
        n.free_gpu_milli += total as u32;
        let cell = n.cell;
        self.cells[cell.index()].allocated_gpu_milli -= total;
        self.index_insert(id);
        self.bump(id);
        if let Some(c) = Self::task_class(a).filter(|_| self.track_classes) {
            let v = &mut self.classes[id.index()];
            if let Ok(i) = v.binary_search_by_key(&c, |&(k, _)| k) {
                v[i].1 -= 1;
                if v[i].1 == 0 {
                    v.remove(i);
                }
            }
        }
        Ok(())
    }

    /// Marks a node schedulable (up) or not (down, drained). An unschedulable node takes no
    /// new work, leaves the capacity index and stops counting as available; tasks already on
    /// it are the caller's to release.
    pub fn set_schedulable(&mut self, id: NodeId, schedulable: bool) {
        let n = &self.nodes[id.index()];
        if n.schedulable == schedulable {
            return;
        }
        self.index_remove(id);
        let n = &mut self.nodes[id.index()];
        n.schedulable = schedulable;
        let gpu = n.gpus as u64 * 1000;
        let cell = &mut self.cells[n.cell.index()];
        if schedulable {
            cell.available_gpu_milli += gpu;
        } else {
            cell.available_gpu_milli -= gpu;
        }
        self.index_insert(id);
        self.bump(id);
    }

    /// Moves node `id`'s version and the fleet's change count, and journals the node.
    fn bump(&mut self, id: NodeId) {
        self.versions[id.index()] += 1;
        self.changes += 1;
        if let Some(j) = self.journal.as_mut() {
            j.push(id);
        }
    }

    /// Turns on the journal of changed nodes ([`FleetState::take_changed`]), empty.
    pub(crate) fn journal_changes(&mut self) {
        self.journal = Some(Vec::new());
    }

    /// Appends to `into` the nodes whose version moved since the last call (or since
    /// [`FleetState::journal_changes`]), in order, repeats included, empties the journal,
    /// and returns the change count ([`FleetState::change_count`]) the journal started
    /// from: a reader that saw the fleet at that count now knows every change since. `None`,
    /// appending nothing, when the journal is off (a fleet loaded from a snapshot, or never
    /// turned on): then any node may have changed.
    pub(crate) fn take_changed(&mut self, into: &mut Vec<NodeId>) -> Option<u64> {
        let j = self.journal.as_mut()?;
        let from = self.changes - j.len() as u64;
        into.append(j);
        Some(from)
    }

    /// A counter bumped on every change of the node's free resources or schedulability:
    /// equal versions mean an unchanged node, so a per-node cache keyed by it stays exact
    /// whoever mutates the state.
    pub fn node_version(&self, id: NodeId) -> u64 {
        self.versions[id.index()]
    }

    /// A counter bumped with every node version ([`FleetState::node_version`]): equal
    /// counts mean no node changed, so a fleet-wide cache keyed by it stays exact.
    pub fn change_count(&self) -> u64 {
        self.changes
    }

    /// The GpuClustering class of a bound task: `Some(0)` for a GPU-sharing task (one
    /// accelerator, < 1000 GPU-milli), `Some(k)` for a task of `k` whole accelerators, `None`
    /// for a CPU-only task.
    pub fn task_class(a: &TaskAlloc) -> Option<u8> {
        let k = a.gpu_mask.count_ones();
        if k == 0 {
            None
        } else if a.gpu_milli < WHOLE_GPU_MILLI {
            Some(0)
        } else {
            Some(k as u8)
        }
    }

    /// The classes of GPU tasks on a node with their counts, ascending by class
    /// ([`FleetState::task_class`]).
    ///
    /// # Panics
    /// If task classes are not tracked ([`FleetState::stop_task_class_tracking`]).
    pub fn task_classes(&self, id: NodeId) -> &[(u8, u32)] {
        assert!(
            self.track_classes,
            "task classes are not tracked: call FleetState::start_task_class_tracking on the empty fleet"
        );
        &self.classes[id.index()]
    }

    /// Stops keeping the per-node task-class counts ([`FleetState::task_classes`], read only
    /// by [`crate::placement::GpuClustering`]): a fleet whose placement never reads them
    /// saves a per-node list update on every bind and release. Kept by default.
    pub fn stop_task_class_tracking(&mut self) {
        self.track_classes = false;
        self.classes = vec![Vec::new(); self.nodes.len()];
    }

    /// Starts keeping the per-node task-class counts again. The counts cannot be rebuilt
    /// from free capacity, so this works only while no accelerator is allocated.
    ///
    /// # Errors
    /// [`StateError::ClassTrackingOnBusyFleet`] when some accelerator is allocated; the
    /// state is unchanged.
    pub fn start_task_class_tracking(&mut self) -> Result<(), StateError> {
        if self.track_classes {
            return Ok(());
        }
        if self.cells.iter().any(|c| c.allocated_gpu_milli > 0) {
            return Err(StateError::ClassTrackingOnBusyFleet);
        }
        self.track_classes = true;
        Ok(())
    }

    /// True while per-node task classes are kept ([`FleetState::stop_task_class_tracking`]).
    pub fn tracks_task_classes(&self) -> bool {
        self.track_classes
    }

    /// How many more tasks of `shape` the node can take now (each dimension independently:
    /// CPU, memory, whole accelerators or per-accelerator shares); 0 if it is unschedulable
    /// or its model is not allowed. `u32::MAX` for a task that asks for nothing.
    pub fn tasks_fit_now(&self, id: NodeId, shape: &TaskShape, models: ModelSet) -> u32 {
        let n = &self.nodes[id.index()];
        if !n.schedulable {
            return 0;
        }
        let mut k = u64::from(u32::MAX);
        if let Some(c) = n.free_cpu_milli.checked_div(shape.cpu_milli) {
            k = k.min(c);
        }
        if let Some(m) = n.free_mem_mib.checked_div(shape.mem_mib) {
            k = k.min(m);
        }
        if let Some(whole) = n.free_whole.checked_div(shape.num_gpu) {
            let Some(model) = n.model else { return 0 };
            if !models.allows(model) {
                return 0;
            }
            // Shares of several accelerators per task: an upper bound (the traces have none).
            let g = if shape.gpu_milli >= WHOLE_GPU_MILLI {
                u64::from(whole)
            } else {
                let shares: u64 = self
                    .gpu_free(id)
                    .iter()
                    .map(|&f| u64::from(f as u32 / shape.gpu_milli.max(1)))
                    .sum();
                shares / u64::from(shape.num_gpu)
            };
            k = k.min(g);
        }
        k as u32
    }

    /// The id of the node's group at a topology level: the node id, its NVLink domain, its
    /// block, or its cell.
    pub fn level_id(&self, id: NodeId, level: crate::topology::Level) -> u32 {
        use crate::topology::Level;
        let n = &self.nodes[id.index()];
        match level {
            Level::Node => id.0,
            Level::Domain => n.domain,
            Level::Block => n.block,
            Level::Cell => u32::from(n.cell.0),
        }
    }

    /// Nodes of `cell` with accelerator `model` that are schedulable and have at least
    /// `min_free_gpu_milli` free, ascending by `(free GPU-milli, node id)`. A candidate may still
    /// fail [`FleetState::fits`] (CPU, memory, or a share that is spread over several
    /// accelerators).
    pub fn gpu_candidates(
        &self,
        cell: CellId,
        model: ModelId,
        min_free_gpu_milli: u32,
    ) -> impl Iterator<Item = NodeId> + '_ {
        let c = &self.cells[cell.index()];
        c.gpu_index
            .get(&model)
            .into_iter()
            .flat_map(move |idx| idx.ascending(min_free_gpu_milli as u64))
            .map(move |(_, pos)| c.nodes[pos as usize])
    }

    /// The first of [`FleetState::gpu_candidates`]`(cell, model, min_free_gpu_milli)` for
    /// which `pred` holds: the same node as that iterator's `find`, without its chain.
    pub fn find_gpu_candidate(
        &self,
        cell: CellId,
        model: ModelId,
        min_free_gpu_milli: u32,
        mut pred: impl FnMut(NodeId) -> bool,
    ) -> Option<NodeId> {
        let c = &self.cells[cell.index()];
        let idx = c.gpu_index.get(&model)?;
        idx.find_ascending(min_free_gpu_milli as u64, |pos| pred(c.nodes[pos as usize]))
            .map(|(_, pos)| c.nodes[pos as usize])
    }

    /// At least how many tasks of `shape` (a GPU task: `num_gpu` ≥ 1) the schedulable nodes of
    /// `cell` with a model in `models` could hold by free GPU-milli alone, counted until it
    /// reaches `want`: `Σ ⌊free GPU-milli / task GPU-milli⌋` over those nodes. CPU, memory
    /// and how a share spreads over accelerators only lower what fits, so when this is
    /// below `want`, no placement of `want` such tasks in `cell` exists. `O(models ×
    /// distinct free amounts)`.
    pub fn gpu_task_room(
        &self,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
        want: u64,
    ) -> u64 {
        let need = shape.total_gpu_milli();
        let c = &self.cells[cell.index()];
        let mut room = 0u64;
        for (_, idx) in c.gpu_index.iter().filter(|(&m, _)| models.allows(m)) {
            room = room.saturating_add(idx.room(need, want - room.min(want)));
            if room >= want {
                break;
            }
        }
        room
    }

    /// As [`FleetState::gpu_candidates`], descending by `(free GPU-milli, node id)`.
    pub fn gpu_candidates_desc(
        &self,
        cell: CellId,
        model: ModelId,
        min_free_gpu_milli: u32,
    ) -> impl Iterator<Item = NodeId> + '_ {
        let c = &self.cells[cell.index()];
        c.gpu_index
            .get(&model)
            .into_iter()
            .flat_map(move |idx| idx.descending(min_free_gpu_milli as u64))
            .map(move |(_, pos)| c.nodes[pos as usize])
    }

    /// Starts maintaining the per-cell CPU index (idempotent), which makes
    /// [`FleetState::cpu_candidates`] `O(log n)`. [`crate::place_gang`] and
    /// [`crate::Scheduler::submit`] call it when a CPU-only task appears.
    pub fn enable_cpu_index(&mut self) {
        if self.cpu_index {
            return;
        }
        self.cpu_index = true;
        for c in &mut self.cells {
            c.cpu_index = BucketIndex::new(c.nodes.len());
        }
        for n in &self.nodes {
            if n.schedulable {
                self.cells[n.cell.index()]
                    .cpu_index
                    .insert(n.free_cpu_milli, n.pos);
            }
        }
    }

    /// True once [`FleetState::enable_cpu_index`] has been called.
    pub fn has_cpu_index(&self) -> bool {
        self.cpu_index
    }

    /// Schedulable nodes of `cell` (with or without accelerators) having at least
    /// `min_free_cpu_milli` free CPU, ascending by `(free CPU, node id)`. Served by the CPU index
    /// once [`FleetState::enable_cpu_index`] has been called; before that, by a sorted scan of
    /// the cell's nodes (same order, `O(n log n)`).
    pub fn cpu_candidates(
        &self,
        cell: CellId,
        min_free_cpu_milli: u64,
    ) -> Box<dyn Iterator<Item = NodeId> + '_> {
        let c = &self.cells[cell.index()];
        if self.cpu_index {
            Box::new(
                c.cpu_index
                    .ascending(min_free_cpu_milli)
                    .map(move |(_, pos)| c.nodes[pos as usize]),
            )
        } else {
            Box::new(self.cpu_scan(cell, min_free_cpu_milli).into_iter())
        }
    }

    /// As [`FleetState::cpu_candidates`], descending by `(free CPU, node id)`.
    pub fn cpu_candidates_desc(
        &self,
        cell: CellId,
        min_free_cpu_milli: u64,
    ) -> Box<dyn Iterator<Item = NodeId> + '_> {
        let c = &self.cells[cell.index()];
        if self.cpu_index {
            Box::new(
                c.cpu_index
                    .descending(min_free_cpu_milli)
                    .map(move |(_, pos)| c.nodes[pos as usize]),
            )
        } else {
            Box::new(self.cpu_scan(cell, min_free_cpu_milli).into_iter().rev())
        }
    }

    /// The CPU candidates without the index, ascending by `(free CPU, node id)`.
    fn cpu_scan(&self, cell: CellId, min_free_cpu_milli: u64) -> Vec<NodeId> {
        let mut v: Vec<(u64, NodeId)> = self.cells[cell.index()]
            .nodes
            .iter()
            .map(|&id| (self.nodes[id.index()].free_cpu_milli, id))
            .filter(|&(f, id)| f >= min_free_cpu_milli && self.nodes[id.index()].schedulable)
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, id)| id).collect()
    }

    /// Free GPU-milli on the schedulable nodes of `cell` whose model `models` allows.
    /// `O(models)`.
    pub fn free_gpu_milli(&self, cell: CellId, models: ModelSet) -> u64 {
        self.cells[cell.index()]
            .free_by_model
            .iter()
            .enumerate()
            .filter(|&(m, _)| models.allows(ModelId(m as u16)))
            .map(|(_, &f)| f)
            .sum()
    }

    /// Accelerator models present in `cell` (ascending id).
    pub fn cell_models(&self, cell: CellId) -> impl Iterator<Item = ModelId> + '_ {
        self.cells[cell.index()].gpu_index.keys().copied()
    }

    /// The most tasks of `shape` one empty node of `gpus` accelerators, `cpu` milli-cores and
    /// `mem` MiB can hold (`u64::MAX` for a shape that asks for nothing).
    pub fn tasks_per_empty_node(shape: &TaskShape, gpus: u32, cpu: u64, mem: u64) -> u64 {
        let mut k = u64::MAX;
        if shape.num_gpu > 0 {
            let per_gpu = if shape.is_fractional() {
                (WHOLE_GPU_MILLI / shape.gpu_milli) as u64
            } else {
                1
            };
            k = k.min(gpus as u64 * per_gpu / shape.num_gpu as u64);
        }
        if let Some(c) = cpu.checked_div(shape.cpu_milli) {
            k = k.min(c);
        }
        if let Some(m) = mem.checked_div(shape.mem_mib) {
            k = k.min(m);
        }
        k
    }

    /// Could a gang of `tasks` tasks of `shape` ever run in `cell`, on an empty cell with
    /// every node up? Uses the cell's capacity classes: `O(classes)`, not `O(nodes)`.
    pub fn can_ever_fit(
        &self,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
        tasks: u32,
    ) -> bool {
        let mut room: u64 = 0;
        for (&(model, gpus, cpu, mem), &count) in &self.cells[cell.index()].capacity_classes {
            if shape.num_gpu > 0 && !model.is_some_and(|m| models.allows(m)) {
                continue;
            }
            let k = Self::tasks_per_empty_node(shape, gpus, cpu, mem);
            room = room.saturating_add(k.saturating_mul(count as u64));
            if room >= tasks as u64 {
                return true;
            }
        }
        room >= tasks as u64
    }

    /// The most tasks of `shape` that empty nodes of one group of `level` in `cell` could
    /// hold together (every node up; a model outside `models` holds none), and the number
    /// of nodes of `cell` that could hold at least one. `O(nodes of the fleet)`.
    pub fn group_capacity(
        &self,
        cell: CellId,
        shape: &TaskShape,
        models: ModelSet,
        level: crate::topology::Level,
    ) -> (u64, u64) {
        let mut per_group: std::collections::BTreeMap<u32, u64> = Default::default();
        let mut nodes = 0u64;
        for (i, n) in self.nodes.iter().enumerate() {
            if n.cell != cell || (shape.num_gpu > 0 && !n.model.is_some_and(|m| models.allows(m))) {
                continue;
            }
            let k = Self::tasks_per_empty_node(shape, n.gpus, n.cpu_milli, n.mem_mib);
            if k == 0 {
                continue;
            }
            nodes += 1;
            let g = per_group
                .entry(self.level_id(NodeId(i as u32), level))
                .or_insert(0);
            *g = g.saturating_add(k);
        }
        (per_group.values().copied().max().unwrap_or(0), nodes)
    }

    /// The most accelerators one node of `cell` of a model `models` allows has (every node,
    /// up or not, autoscaled ones included); 0 when none. `O(capacity classes of the cell)`.
    pub fn max_node_gpus(&self, cell: CellId, models: ModelSet) -> u32 {
        self.cells[cell.index()]
            .capacity_classes
            .keys()
            .filter(|(m, ..)| m.is_some_and(|m| models.allows(m)))
            .map(|&(_, g, ..)| g)
            .max()
            .unwrap_or(0)
    }

    /// True when one task of `shape` fits some empty node of `cell`.
    pub fn task_fits_some_node(&self, cell: CellId, shape: &TaskShape, models: ModelSet) -> bool {
        self.can_ever_fit(cell, shape, models, 1)
    }

    /// Recomputes every node's free resources from `allocs` (the tasks the caller believes
    /// are running) and compares with the state.
    ///
    /// # Errors
    /// A message naming the first node whose free CPU, memory or per-accelerator GPU-milli
    /// disagrees, or a cell whose allocated total disagrees.
    pub fn audit<'a>(&self, allocs: impl IntoIterator<Item = &'a TaskAlloc>) -> Result<(), String> {
        let mut cpu: Vec<u64> = self.nodes.iter().map(|n| n.cpu_milli).collect();
        let mut mem: Vec<u64> = self.nodes.iter().map(|n| n.mem_mib).collect();
        let mut gpu: Vec<u32> = vec![WHOLE_GPU_MILLI; self.gpu_free.len()];
        let mut cell_alloc = vec![0u64; self.cells.len()];
        for a in allocs {
            let n = &self.nodes[a.node.index()];
            let i = a.node.index();
            cpu[i] = cpu[i]
                .checked_sub(a.cpu_milli)
                .ok_or_else(|| format!("node {}: cpu over-allocated", self.names[i]))?;
            mem[i] = mem[i]
                .checked_sub(a.mem_mib)
                .ok_or_else(|| format!("node {}: memory over-allocated", self.names[i]))?;
            for g in bits(a.gpu_mask) {
                let slot = &mut gpu[n.gpu_offset as usize + g];
                *slot = slot
                    .checked_sub(a.gpu_milli)
                    .ok_or_else(|| format!("node {}: gpu {g} over-allocated", self.names[i]))?;
            }
            cell_alloc[n.cell.index()] += a.total_gpu_milli();
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if cpu[i] != n.free_cpu_milli || mem[i] != n.free_mem_mib {
                return Err(format!(
                    "node {}: free cpu/memory disagree with running tasks",
                    self.names[i]
                ));
            }
            let off = n.gpu_offset as usize;
            let free = &self.gpu_free[off..off + n.gpus as usize];
            let whole = free
                .iter()
                .enumerate()
                .filter(|(_, &f)| f as u32 == WHOLE_GPU_MILLI)
                .fold(0u64, |m, (g, _)| m | 1u64 << g);
            let sum: u32 = free.iter().map(|&f| f as u32).sum();
            if whole != n.whole_mask
                || whole.count_ones() != n.free_whole
                || sum != n.free_gpu_milli
            {
                return Err(format!(
                    "node {}: free-accelerator summaries disagree with the shares",
                    self.names[i]
                ));
            }
            for g in 0..n.gpus as usize {
                if gpu[off + g] != self.gpu_free[off + g] as u32 {
                    return Err(format!(
                        "node {}: gpu {g} free share disagrees with running tasks",
                        self.names[i]
                    ));
                }
            }
        }
        for (c, cell) in self.cells.iter().enumerate() {
            let mut by_model = vec![0u64; self.models.len()];
            for &id in &cell.nodes {
                let n = &self.nodes[id.index()];
                if let (Some(m), true) = (n.model, n.schedulable) {
                    by_model[m.index()] += n.free_gpu_milli as u64;
                }
            }
            if by_model != cell.free_by_model {
                return Err(format!(
                    "cell {}: free GPU-milli per model disagrees with the nodes",
                    cell.name
                ));
            }
            if cell.allocated_gpu_milli != cell_alloc[c] {
                return Err(format!(
                    "cell {}: allocated GPU-milli disagrees with running tasks",
                    cell.name
                ));
            }
        }
        Ok(())
    }

    fn index_remove(&mut self, id: NodeId) {
        let n = &self.nodes[id.index()];
        if !n.schedulable {
            return;
        }
        let cell = &mut self.cells[n.cell.index()];
        if let Some(m) = n.model {
            cell.free_by_model[m.index()] -= n.free_gpu_milli as u64;
            if let Some(idx) = cell.gpu_index.get_mut(&m) {
                idx.remove(n.free_gpu_milli as u64, n.pos);
            }
        }
        if self.cpu_index {
            cell.cpu_index.remove(n.free_cpu_milli, n.pos);
        }
    }

    fn index_insert(&mut self, id: NodeId) {
        let n = &self.nodes[id.index()];
        if !n.schedulable {
            return;
        }
        let cell = &mut self.cells[n.cell.index()];
        let len = cell.nodes.len();
        if let Some(m) = n.model {
            cell.free_by_model[m.index()] += n.free_gpu_milli as u64;
            cell.gpu_index
                .entry(m)
                .or_insert_with(|| BucketIndex::new(len))
                .insert(n.free_gpu_milli as u64, n.pos);
        }
        if self.cpu_index {
            cell.cpu_index.insert(n.free_cpu_milli, n.pos);
        }
    }
}

/// Indices of the set bits of `mask`, ascending.
pub fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if mask == 0 {
            None
        } else {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            Some(i)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Half of one accelerator, nothing else.
    const HALF: TaskShape = TaskShape {
        num_gpu: 1,
        gpu_milli: 500,
        cpu_milli: 0,
        mem_mib: 0,
    };

    fn two_nodes() -> FleetState {
        let spec = |name: &str, gpus| NodeSpec {
            name: name.into(),
            cell: CellId(0),
            block: 0,
            domain: 0,
            model: Some(ModelId(0)),
            gpus,
            cpu_milli: 8000,
            mem_mib: 1024,
        };
        FleetState::new(
            vec!["c".into()],
            vec!["H100".into()],
            vec![spec("n1", 2), spec("n2", 1)],
        )
        .unwrap()
    }

    #[test]
    fn fractional_share_takes_tightest_gpu() {
        let mut f = two_nodes();
        let half = HALF;
        let quarter = TaskShape {
            num_gpu: 1,
            gpu_milli: 250,
            ..half
        };
        let a = f.allocate(NodeId(0), &half, ModelSet::ANY).unwrap();
        assert_eq!(a.gpu_mask, 0b01);
        // 500 free on gpu0, 1000 on gpu1: the tightest fit is gpu0.
        let b = f.allocate(NodeId(0), &quarter, ModelSet::ANY).unwrap();
        assert_eq!(b.gpu_mask, 0b01);
        assert_eq!(f.gpu_free(NodeId(0)), &[250, 1000]);
        assert_eq!(f.node(NodeId(0)).free_whole, 1);
        let two = TaskShape::whole_gpus(2);
        assert!(!f.fits(NodeId(0), &two, ModelSet::ANY));
        f.release(&a).unwrap();
        f.release(&b).unwrap();
        assert!(f.fits(NodeId(0), &two, ModelSet::ANY));
        assert!(f.release(&b).is_err(), "double release must be refused");
        f.audit(std::iter::empty()).unwrap();
    }

    #[test]
    fn index_orders_by_free_then_id() {
        let mut f = two_nodes();
        let one = TaskShape::whole_gpus(1);
        let got: Vec<_> = f.gpu_candidates(CellId(0), ModelId(0), 1000).collect();
        assert_eq!(got, vec![NodeId(1), NodeId(0)]);
        let a = f.allocate(NodeId(1), &one, ModelSet::ANY).unwrap();
        let got: Vec<_> = f.gpu_candidates(CellId(0), ModelId(0), 1000).collect();
        assert_eq!(got, vec![NodeId(0)]);
        assert_eq!(f.cells()[0].allocated_gpu_milli, 1000);
        f.audit([&a]).unwrap();
        assert!(f.audit(std::iter::empty()).is_err());
    }

    #[test]
    fn ever_fit_uses_capacity_classes() {
        let f = two_nodes();
        assert!(f.can_ever_fit(CellId(0), &TaskShape::whole_gpus(1), ModelSet::ANY, 3));
        assert!(!f.can_ever_fit(CellId(0), &TaskShape::whole_gpus(1), ModelSet::ANY, 4));
        assert!(!f.task_fits_some_node(CellId(0), &TaskShape::whole_gpus(3), ModelSet::ANY));
    }

    #[test]
    fn task_classes_counted_until_tracking_stops() {
        let mut f = two_nodes();
        let half = HALF;
        let a = f
            .allocate(NodeId(0), &TaskShape::whole_gpus(1), ModelSet::ANY)
            .unwrap();
        let b = f.allocate(NodeId(0), &half, ModelSet::ANY).unwrap();
        assert_eq!(f.task_classes(NodeId(0)), &[(0, 1), (1, 1)]);
        f.release(&a).unwrap();
        assert_eq!(f.task_classes(NodeId(0)), &[(0, 1)]);
        // Counts cannot be rebuilt: starting again on a busy fleet is refused.
        f.stop_task_class_tracking();
        assert!(!f.tracks_task_classes());
        assert_eq!(
            f.start_task_class_tracking(),
            Err(StateError::ClassTrackingOnBusyFleet)
        );
        f.release(&b).unwrap();
        f.start_task_class_tracking().unwrap();
        assert!(f.task_classes(NodeId(0)).is_empty());
        f.allocate(NodeId(1), &TaskShape::whole_gpus(1), ModelSet::ANY)
            .unwrap();
        assert_eq!(f.task_classes(NodeId(1)), &[(1, 1)]);
    }

    #[test]
    #[should_panic(expected = "task classes are not tracked")]
    fn task_classes_refused_while_untracked() {
        let mut f = two_nodes();
        f.stop_task_class_tracking();
        let _ = f.task_classes(NodeId(0));
    }

    #[test]
    fn zero_capacity_node_is_refused() {
        let spec = NodeSpec {
            name: "z".into(),
            cell: CellId(0),
            block: 0,
            domain: 0,
            model: None,
            gpus: 0,
            cpu_milli: 0,
            mem_mib: 0,
        };
        let e = FleetState::new(vec!["c".into()], vec![], vec![spec]).unwrap_err();
        assert!(e.to_string().contains("zero capacity"));
    }

    /// The journal lists every node whose version moved, in order, and says from which
    /// change count; off, it says nothing.
    #[test]
    fn the_journal_lists_changed_nodes() {
        let mut f = two_nodes();
        let mut got = Vec::new();
        assert_eq!(f.take_changed(&mut got), None);
        let a = f.allocate(NodeId(0), &HALF, ModelSet::ANY).unwrap();
        f.journal_changes();
        let from = f.change_count();
        f.release(&a).unwrap();
        f.set_schedulable(NodeId(1), false);
        f.set_schedulable(NodeId(1), false); // no change, no entry
        assert_eq!(f.take_changed(&mut got), Some(from));
        assert_eq!(got, vec![NodeId(0), NodeId(1)]);
        got.clear();
        assert_eq!(f.take_changed(&mut got), Some(from + 2));
        assert!(got.is_empty());
    }

    proptest::proptest! {
        /// [`NodeAfterRelease::whole_tasks`] after releasing some of a node's bindings (of
        /// whole and shared accelerators, CPU and memory) is [`FleetState::tasks_fit_now`]
        /// after releasing them for real, for tasks of whole accelerators or none, on a node
        /// up or taken down.
        #[test]
        fn after_release_fits_as_the_fleet_does(
            tasks in proptest::collection::vec((0u32..4, 1u32..=1000, 0u64..3000, 0u64..300), 1..12),
            released in proptest::collection::vec(proptest::bool::ANY, 12),
            want in (0u32..5, 0u64..8000, 0u64..1024),
            down in proptest::bool::ANY,
        ) {
            let mut f = FleetState::new(
                vec!["c".into()],
                vec!["H100".into()],
                vec![NodeSpec {
                    name: "n".into(),
                    cell: CellId(0),
                    block: 0,
                    domain: 0,
                    model: Some(ModelId(0)),
                    gpus: 4,
                    cpu_milli: 8000,
                    mem_mib: 1024,
                }],
            )
            .unwrap();
            let id = NodeId(0);
            let mut held = Vec::new();
            for (gpus, milli, cpu, mem) in tasks {
                let shape = TaskShape {
                    num_gpu: gpus,
                    gpu_milli: if gpus == 0 { 0 } else if milli == 1000 || gpus > 1 { 1000 } else { milli },
                    cpu_milli: cpu,
                    mem_mib: mem,
                };
                if let Ok(a) = f.allocate(id, &shape, ModelSet::ANY) {
                    held.push(a);
                }
            }
            if down {
                f.set_schedulable(id, false);
            }
            let shape = TaskShape {
                num_gpu: want.0,
                gpu_milli: if want.0 == 0 { 0 } else { 1000 },
                cpu_milli: want.1,
                mem_mib: want.2,
            };
            let mut after = NodeAfterRelease::new(&f, id);
            for (a, &r) in held.iter().zip(&released) {
                if r {
                    after.release(a);
                    f.release(a).unwrap();
                }
            }
            proptest::prop_assert_eq!(
                after.whole_tasks(&shape, ModelSet::ANY),
                f.tasks_fit_now(id, &shape, ModelSet::ANY)
            );
        }
    }
}
