//! Capacity the workload can never use: node groups on which no job of the workload could
//! ever run, whatever the policy (`summary.json` → `unusable_capacity`; a warning from
//! `validate`, `run` and every study).
//!
//! A **node group** is one node shape of a cell's fixed nodes — accelerator model,
//! accelerators, CPU and memory per node (`(model, gpus, cpu_milli, mem_mib)`, the cell's
//! capacity class) — or one autoscaling group (`[[fleet.cells.autoscaling]]`). A job
//! **wants** a group when it may run in the group's cell (its `cells`); it **can use** the
//! group when one of its tasks (or, for a job whose tasks take the node's shape, one of its
//! node-sized members: [`crate::workload::JobSpec::split`]) fits an empty node of the group
//! and its whole gang fits the cell's nodes at once. A group that no job can use is
//! reported with the reason that kept away most of the jobs that wanted it:
//!
//! | reason | the nodes… |
//! |---|---|
//! | `accelerator_model` | have another accelerator model than the jobs allow (or none) |
//! | `gpus_per_node` | have fewer accelerators than each task asks for |
//! | `cpu` | have less CPU than each task asks for (`cpu_milli` missing: 0) |
//! | `memory` | have less memory than each task asks for (`mem_mib` missing: 0) |
//! | `topology` | fit a task, but the cell never holds the whole gang at once |
//! | `cell_not_allowed` | are in a cell that every job's `cells` leaves out |
//!
//! with the job classes (tasks × shape, and the number of jobs of each) that wanted it.
//! Deterministic: groups in cell order then shape order (autoscaling groups after the
//! fixed nodes of their cell, in scenario order); classes by job count, then label.

use std::collections::BTreeMap;

use fleetsim_policies::{CellId, FleetState, ModelId, TaskShape};

use crate::workload::JobSpec;

/// Most distinct job classes kept per group (the rest are counted together).
const MAX_CLASSES: usize = 64;

/// One unusable node group (`summary.json` → `unusable_capacity[]`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct UnusableGroup {
    /// The cell.
    pub cell: String,
    /// `nodes` (a node shape of the cell's fixed nodes) or the autoscaling group's name.
    pub group: String,
    /// The node shape: model, accelerators, CPU and memory per node.
    pub node: String,
    /// Nodes of the group (an autoscaling group: its `max_nodes`).
    pub nodes: u64,
    /// Accelerators of the group (nodes × accelerators per node).
    pub gpus: u64,
    /// Why no job can use it (see the module docs).
    pub reason: String,
    /// The reason in words.
    pub detail: String,
    /// Jobs that wanted it, by class (most jobs first): `tasks × shape` and why each could
    /// not use it.
    pub job_classes: Vec<WantedBy>,
}

/// A class of jobs that wanted a group.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct WantedBy {
    /// `tasks × accelerators, cores, GiB` of one task (and its allowed models).
    pub class: String,
    /// Jobs of the class.
    pub jobs: u64,
    /// Why they could not use the group.
    pub reason: String,
}

impl UnusableGroup {
    /// The warning `validate`, `run` and the studies print.
    pub fn warning(&self) -> String {
        let wanted: Vec<String> = self
            .job_classes
            .iter()
            .take(4)
            .map(|w| format!("{} ({} jobs: {})", w.class, w.jobs, w.reason))
            .collect();
        let more = self.job_classes.len().saturating_sub(4);
        format!(
            "cell `{}`, {} ({}: {} nodes, {} GPUs) can never host any job of the workload: {}{}",
            self.cell,
            if self.group == "nodes" {
                "nodes".to_string()
            } else {
                format!("autoscaling group `{}`", self.group)
            },
            self.node,
            self.nodes,
            self.gpus,
            self.detail,
            if wanted.is_empty() {
                String::new()
            } else {
                format!(
                    "; wanted by {}{}",
                    wanted.join(", "),
                    if more > 0 {
                        format!(" and {more} more classes")
                    } else {
                        String::new()
                    }
                )
            }
        )
    }
}

/// Why a job cannot use a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Why {
    Model,
    GpusPerNode,
    Cpu,
    Memory,
    Topology,
}

impl Why {
    fn as_str(self) -> &'static str {
        match self {
            Why::Model => "accelerator_model",
            Why::GpusPerNode => "gpus_per_node",
            Why::Cpu => "cpu",
            Why::Memory => "memory",
            Why::Topology => "topology",
        }
    }
}

#[derive(Clone, Debug)]
struct Group {
    cell: CellId,
    name: String,
    model: Option<ModelId>,
    gpus: u32,
    cpu_milli: u64,
    mem_mib: u64,
    nodes: u64,
    used: bool,
    /// Wanting classes: label → (jobs, why).
    wanted: BTreeMap<String, (u64, Why)>,
    /// Jobs of classes beyond [`MAX_CLASSES`], by why.
    other: BTreeMap<Why, u64>,
}

/// Per cell: its capacity classes `(model, gpus, cpu, mem) → nodes` (fixed and autoscaled).
type Classes = Vec<BTreeMap<(Option<ModelId>, u32, u64, u64), u32>>;

/// Watches a workload's jobs against a fleet's node groups.
#[derive(Clone, Debug)]
pub struct Usability {
    groups: Vec<Group>,
    cells: Vec<String>,
    models: Vec<String>,
    classes: Classes,
    /// Groups still unused (indices into `groups`).
    open: Vec<usize>,
    /// Whether any job was observed (an empty workload leaves no group unusable).
    seen: bool,
}

impl Usability {
    /// The node groups of `fleet`: the fixed nodes' shapes per cell, and `autoscaling`.
    pub fn new(
        fleet: &FleetState,
        autoscaling: &[crate::engine::autoscale::GroupConfig],
    ) -> Usability {
        let scaled: std::collections::BTreeSet<u32> = autoscaling
            .iter()
            .flat_map(|g| g.nodes.iter().map(|n| n.0))
            .collect();
        let mut fixed: BTreeMap<(CellId, Option<ModelId>, u32, u64, u64), u64> = BTreeMap::new();
        let mut classes: Classes = vec![BTreeMap::new(); fleet.cells().len()];
        for (i, n) in fleet.nodes().iter().enumerate() {
            *classes[n.cell.index()]
                .entry((n.model, n.gpus, n.cpu_milli, n.mem_mib))
                .or_insert(0) += 1;
            if scaled.contains(&(i as u32)) {
                continue;
            }
            *fixed
                .entry((n.cell, n.model, n.gpus, n.cpu_milli, n.mem_mib))
                .or_insert(0) += 1;
        }
        let mut groups: Vec<Group> = Vec::new();
        let new = |cell, name: String, model, gpus, cpu_milli, mem_mib, nodes| Group {
            cell,
            name,
            model,
            gpus,
            cpu_milli,
            mem_mib,
            nodes,
            used: false,
            wanted: BTreeMap::new(),
            other: BTreeMap::new(),
        };
        for c in 0..fleet.cells().len() {
            let cell = CellId(c as u16);
            for (&(_, model, gpus, cpu, mem), &n) in fixed.range(
                (cell, None, 0, 0, 0)
                    ..=(cell, Some(ModelId(u16::MAX)), u32::MAX, u64::MAX, u64::MAX),
            ) {
                groups.push(new(cell, "nodes".into(), model, gpus, cpu, mem, n));
            }
            for g in autoscaling.iter().filter(|g| g.cell == cell) {
                groups.push(new(
                    cell,
                    g.name.clone(),
                    g.model,
                    g.gpus,
                    g.cpu_milli,
                    g.mem_mib,
                    g.nodes.len() as u64,
                ));
            }
        }
        Usability {
            open: (0..groups.len()).collect(),
            groups,
            cells: fleet.cells().iter().map(|c| c.name.clone()).collect(),
            models: fleet.models().to_vec(),
            classes,
            seen: false,
        }
    }

    /// One job of the workload. `O(groups not used yet)`.
    pub fn observe(&mut self, job: &JobSpec) {
        self.seen = true;
        if self.open.is_empty() {
            return;
        }
        let mut i = 0;
        while i < self.open.len() {
            let gi = self.open[i];
            match self.verdict(gi, job) {
                None => i += 1, // not wanted
                Some(Ok(())) => {
                    let g = &mut self.groups[gi];
                    g.used = true;
                    g.wanted.clear();
                    g.other.clear();
                    self.open.swap_remove(i);
                }
                Some(Err(why)) => {
                    let label = class_label(job, &self.models);
                    let g = &mut self.groups[gi];
                    if let Some(e) = g.wanted.get_mut(&label) {
                        e.0 += 1;
                    } else if g.wanted.len() < MAX_CLASSES {
                        g.wanted.insert(label, (1, why));
                    } else {
                        *g.other.entry(why).or_insert(0) += 1;
                    }
                    i += 1;
                }
            }
        }
        // Keep the scan order deterministic (swap_remove moved the last group forward).
        self.open.sort_unstable();
    }

    /// `None` when `job` does not want group `gi` (another cell); else whether it can use it.
    fn verdict(&self, gi: usize, job: &JobSpec) -> Option<Result<(), Why>> {
        let g = &self.groups[gi];
        let cell = &self.cells[g.cell.index()];
        if !job.cells.is_empty() && !job.cells.iter().any(|c| c == cell) {
            return None;
        }
        let shape = job.shape;
        if shape.num_gpu > 0 {
            let Some(m) = g.model else {
                return Some(Err(Why::Model));
            };
            if !job.gpu_models.is_empty()
                && !job.gpu_models.iter().any(|x| *x == self.models[m.index()])
            {
                return Some(Err(Why::Model));
            }
        }
        let (tasks, member) = if job.split {
            let g = self.max_node_gpus(g.cell, &job.gpu_models);
            let (k, m) = job.shape.split_for_node(g);
            (job.tasks.saturating_mul(k), m)
        } else {
            (job.tasks, job.shape)
        };
        if member.num_gpu > g.gpus {
            return Some(Err(Why::GpusPerNode));
        }
        if member.cpu_milli > g.cpu_milli {
            return Some(Err(Why::Cpu));
        }
        if member.mem_mib > g.mem_mib {
            return Some(Err(Why::Memory));
        }
        if !self.gang_fits(g.cell, &member, &job.gpu_models, tasks) {
            return Some(Err(Why::Topology));
        }
        Some(Ok(()))
    }

    /// The most accelerators a node of `cell` of a model in `models` (empty: any) has.
    fn max_node_gpus(&self, cell: CellId, models: &[String]) -> u32 {
        self.classes[cell.index()]
            .keys()
            .filter(|(m, ..)| {
                m.is_some_and(|m| {
                    models.is_empty() || models.iter().any(|x| *x == self.models[m.index()])
                })
            })
            .map(|&(_, g, ..)| g)
            .max()
            .unwrap_or(0)
    }

    /// Could `tasks` tasks of `shape` run in `cell` at once (empty, every node up, the
    /// autoscaled ones at their most)? `O(capacity classes of the cell)`.
    fn gang_fits(&self, cell: CellId, shape: &TaskShape, models: &[String], tasks: u32) -> bool {
        let mut room = 0u64;
        for (&(model, gpus, cpu, mem), &count) in &self.classes[cell.index()] {
            if shape.num_gpu > 0 {
                let Some(m) = model else { continue };
                if !models.is_empty() && !models.iter().any(|x| *x == self.models[m.index()]) {
                    continue;
                }
            }
            let k = FleetState::tasks_per_empty_node(shape, gpus, cpu, mem);
            room = room.saturating_add(k.saturating_mul(u64::from(count)));
            if room >= u64::from(tasks) {
                return true;
            }
        }
        false
    }

    /// The groups no job could use, in group order; none when no job was observed (the
    /// run warns of an empty workload instead).
    pub fn unusable(&self) -> Vec<UnusableGroup> {
        if !self.seen {
            return Vec::new();
        }
        self.groups
            .iter()
            .filter(|g| !g.used)
            .map(|g| {
                let mut by_why: BTreeMap<Why, u64> = g.other.clone();
                for &(n, why) in g.wanted.values() {
                    *by_why.entry(why).or_insert(0) += n;
                }
                // The reason that kept most jobs away (ties: the table's order).
                let top = by_why
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(&w, _)| w);
                let node = node_label(g, &self.models);
                let (reason, detail) = match top {
                    None => (
                        "cell_not_allowed".to_string(),
                        "every job names other cells".to_string(),
                    ),
                    Some(w) => (w.as_str().to_string(), detail(w, g, &self.models)),
                };
                let mut classes: Vec<WantedBy> = g
                    .wanted
                    .iter()
                    .map(|(c, &(n, w))| WantedBy {
                        class: c.clone(),
                        jobs: n,
                        reason: w.as_str().to_string(),
                    })
                    .collect();
                classes.sort_by(|a, b| b.jobs.cmp(&a.jobs).then(a.class.cmp(&b.class)));
                for (&w, &n) in &g.other {
                    classes.push(WantedBy {
                        class: "other classes".into(),
                        jobs: n,
                        reason: w.as_str().to_string(),
                    });
                }
                UnusableGroup {
                    cell: self.cells[g.cell.index()].clone(),
                    group: g.name.clone(),
                    node,
                    nodes: g.nodes,
                    gpus: g.nodes * u64::from(g.gpus),
                    reason,
                    detail,
                    job_classes: classes,
                }
            })
            .collect()
    }
}

fn model_name(m: Option<ModelId>, models: &[String]) -> String {
    m.map_or_else(
        || "no accelerator".to_string(),
        |m| models[m.index()].clone(),
    )
}

fn node_label(g: &Group, models: &[String]) -> String {
    format!(
        "{} × {}, {} cores, {} GiB per node",
        model_name(g.model, models),
        g.gpus,
        fmt_milli(g.cpu_milli),
        fmt_mib(g.mem_mib)
    )
}

fn fmt_milli(v: u64) -> String {
    if v.is_multiple_of(1000) {
        (v / 1000).to_string()
    } else {
        format!("{:.3}", v as f64 / 1000.0)
    }
}

fn fmt_mib(v: u64) -> String {
    if v.is_multiple_of(1024) {
        (v / 1024).to_string()
    } else {
        format!("{:.2}", v as f64 / 1024.0)
    }
}

fn detail(w: Why, g: &Group, models: &[String]) -> String {
    match w {
        Why::Model => format!(
            "their accelerator ({}) is not one the jobs allow",
            model_name(g.model, models)
        ),
        Why::GpusPerNode => format!(
            "{} accelerators per node are fewer than each task asks for",
            g.gpus
        ),
        Why::Cpu if g.cpu_milli == 0 => {
            "the nodes have no CPU (`cpu_milli` not given) and every task asks for some".into()
        }
        Why::Cpu => format!(
            "{} cores per node are fewer than each task asks for",
            fmt_milli(g.cpu_milli)
        ),
        Why::Memory if g.mem_mib == 0 => {
            "the nodes have no memory (`mem_mib` not given) and every task asks for some".into()
        }
        Why::Memory => format!(
            "{} GiB per node are less than each task asks for",
            fmt_mib(g.mem_mib)
        ),
        Why::Topology => {
            "a task fits a node, but the cell never holds the whole gang at once".into()
        }
    }
}

/// `tasks × accelerators, cores, GiB` of one job (and its allowed models, if any).
fn class_label(job: &JobSpec, _models: &[String]) -> String {
    let s = &job.shape;
    let gpu = if s.num_gpu == 0 {
        "no GPU".to_string()
    } else if s.is_fractional() {
        format!("{}/1000 GPU", s.gpu_milli)
    } else {
        format!("{} GPU", s.num_gpu)
    };
    let mut label = format!(
        "{} × {gpu}, {} cores, {} GiB",
        job.tasks,
        fmt_milli(s.cpu_milli),
        fmt_mib(s.mem_mib)
    );
    if !job.gpu_models.is_empty() {
        let mut m = job.gpu_models.clone();
        m.sort();
        m.dedup();
        label.push_str(&format!(" on {}", m.join("|")));
    }
    label
}
