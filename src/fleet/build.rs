//! Builds a [`FleetState`] from a scenario's `[fleet]` section.
//!
//! Node ids follow declaration order: cells in order; within a cell, node groups in order,
//! then the machine list's rows in file order. Domains (racks) are consecutive runs of
//! `nodes_per_domain` nodes of a group or list; blocks are consecutive runs of
//! `domains_per_block` domains. Accelerator model ids are assigned in first-use order.

use std::collections::BTreeMap;

use fleetsim_policies::{CellId, FleetState, ModelId, NodeId, NodeSpec, SimDuration};

use super::machine_list::{self, MachineRow, PhillyMachineAssumptions};
use crate::catalog::{self, PRESETS};
use crate::engine::autoscale::Delay;
use crate::scenario::{
    DelaySpec, Loaded, MachineListFormat, NodeGroupSpec, ScenarioError, TraceDir,
};
use crate::workload::TraceError;

/// Errors from building a fleet.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The scenario's fleet section is inconsistent.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A machine list could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

const DEFAULT_DOMAINS_PER_BLOCK: u32 = 32;

/// The most nodes a fleet may have: 4,194,304, about 40 times the largest fleets operated
/// today and ~1.2 GiB of simulator state. A larger count is far more likely a typo than a
/// fleet, and would exhaust the machine's memory before the run could say so.
pub const MAX_NODES: usize = 1 << 22;

/// A built fleet and its descriptive tables.
#[derive(Clone, Debug)]
pub struct BuiltFleet {
    /// The live state policies read.
    pub state: FleetState,
    /// Accelerators per model name (ascending name), whole GPUs (static nodes only: not
    /// the autoscaled groups').
    pub gpus_by_model: BTreeMap<String, u64>,
    /// Autoscaled node groups (`[[fleet.cells.autoscaling]]`), their `max_nodes` nodes
    /// built after every static node (so static node ids do not move).
    pub autoscaling: Vec<crate::engine::autoscale::GroupConfig>,
}

struct Builder {
    nodes: Vec<NodeSpec>,
    models: Vec<String>,
    domain: u32,
    block: u32,
}

impl Builder {
    fn model_id(&mut self, name: &str) -> ModelId {
        match self.models.iter().position(|m| m == name) {
            Some(i) => ModelId(i as u16),
            None => {
                self.models.push(name.to_string());
                ModelId((self.models.len() - 1) as u16)
            }
        }
    }

    /// Adds nodes, opening a new domain every `npd` nodes and a new block every `dpb` domains.
    fn add(&mut self, cell: CellId, rows: Vec<MachineRow>, npd: u32, dpb: u32) {
        for (i, r) in rows.into_iter().enumerate() {
            let i = i as u32;
            if i > 0 && i.is_multiple_of(npd) {
                self.domain += 1;
                if (i / npd).is_multiple_of(dpb) {
                    self.block += 1;
                }
            }
            let model = r.model.as_deref().map(|m| self.model_id(m));
            self.nodes.push(NodeSpec {
                name: r.name,
                cell,
                block: self.block,
                domain: self.domain,
                model,
                gpus: r.gpus,
                cpu_milli: r.cpu_milli,
                mem_mib: r.mem_mib,
            });
        }
        // The next group starts a fresh domain and block.
        self.domain += 1;
        self.block += 1;
    }
}

fn group_rows(
    loaded: &Loaded,
    cell: &str,
    field: &str,
    g: &NodeGroupSpec,
) -> Result<(Vec<MachineRow>, u32, u32), ScenarioError> {
    let bad = |f: &str, message: String| ScenarioError::Invalid {
        origin: loaded.origin.clone(),
        field: format!("{field}.{f}"),
        message,
    };
    let preset = match &g.preset {
        Some(p) => Some(PRESETS.iter().find(|x| x.name == p).ok_or_else(|| {
            let names: Vec<&str> = PRESETS.iter().map(|x| x.name).collect();
            bad(
                "preset",
                format!("unknown preset `{p}`; known presets: {}", names.join(", ")),
            )
        })?),
        None => None,
    };
    let accelerator = g
        .accelerator
        .clone()
        .or(preset.map(|p| p.accelerator.to_string()));
    let gpus = g.gpus.or(preset.map(|p| p.gpus)).unwrap_or(0);
    let cpu = g.cpu_milli.or(preset.map(|p| p.cpu_milli)).unwrap_or(0);
    let mem = g.mem_mib.or(preset.map(|p| p.mem_mib)).unwrap_or(0);
    let npd = g
        .nodes_per_domain
        .or(preset.map(|p| p.nodes_per_domain))
        .unwrap_or(1);
    let dpb = g.domains_per_block.unwrap_or(DEFAULT_DOMAINS_PER_BLOCK);
    if let Some(a) = &accelerator {
        catalog::lookup(a).map_err(|m| bad("accelerator", m))?;
        if gpus == 0 {
            return Err(bad(
                "gpus",
                "an accelerator model is given but `gpus` is 0".into(),
            ));
        }
    } else if gpus > 0 {
        return Err(bad(
            "accelerator",
            "`gpus` > 0 needs an accelerator model".into(),
        ));
    }
    if gpus == 0 && cpu == 0 && mem == 0 {
        return Err(bad(
            "gpus",
            "a node with zero capacity in every dimension".into(),
        ));
    }
    let count = match (g.count, g.racks, &g.names) {
        (Some(c), _, _) => c,
        (None, Some(r), _) => r
            .checked_mul(npd)
            .ok_or_else(|| bad("racks", "too many nodes".into()))?,
        (None, None, Some(n)) => n.len() as u32,
        (None, None, None) => unreachable!("validated: count, racks or names"),
    };
    if count as usize > MAX_NODES {
        let key = if g.count.is_some() { "count" } else { "racks" };
        return Err(bad(
            key,
            format!("{count} nodes: a fleet has at most {MAX_NODES} nodes"),
        ));
    }
    let prefix = g.name_prefix.clone().unwrap_or_else(|| cell.to_string());
    let rows = (0..count)
        .map(|i| MachineRow {
            name: if let Some(names) = &g.names {
                names[i as usize].clone()
            } else if npd > 1 {
                format!("{prefix}-r{:03}-n{:02}", i / npd, i % npd)
            } else {
                format!("{prefix}-n{i:05}")
            },
            gpus,
            model: accelerator.clone(),
            cpu_milli: cpu,
            mem_mib: mem,
        })
        .collect();
    Ok((rows, npd, dpb))
}

/// Builds the fleet of a loaded scenario.
///
/// # Errors
/// [`BuildError::Scenario`] for an unknown preset or accelerator, a zero-capacity group, or
/// duplicate node names; [`BuildError::Trace`] for a machine list that cannot be read.
pub fn build_fleet(loaded: &Loaded, trace_dir: &TraceDir) -> Result<BuiltFleet, BuildError> {
    let spec = &loaded.scenario.fleet;
    let mut b = Builder {
        nodes: Vec::new(),
        models: Vec::new(),
        domain: 0,
        block: 0,
    };
    for (ci, cell) in spec.cells.iter().enumerate() {
        let cid = CellId(ci as u16);
        for (gi, g) in cell.nodes.iter().enumerate() {
            let field = format!("fleet.cells[{ci}].nodes[{gi}]");
            let (rows, npd, dpb) = group_rows(loaded, &cell.name, &field, g)?;
            if b.nodes.len() + rows.len() > MAX_NODES {
                return Err(BuildError::Scenario(ScenarioError::Invalid {
                    origin: loaded.origin.clone(),
                    field,
                    message: format!(
                        "the fleet would have {} nodes: at most {MAX_NODES}",
                        b.nodes.len() + rows.len()
                    ),
                }));
            }
            b.add(cid, rows, npd, dpb);
        }
        if let Some(ml) = &cell.machine_list {
            let field = format!("fleet.cells[{ci}].machine_list");
            let path = loaded.resolve_path(&field, &ml.path, &ml.public_path, trace_dir)?;
            let mut rows = match ml.format {
                MachineListFormat::AlibabaOpenb => machine_list::read_openb_nodes(&path)?,
                MachineListFormat::Philly => {
                    let mut assume = PhillyMachineAssumptions::default();
                    if let Some(map) = &ml.philly_models_by_gpu_mem_gb {
                        assume.model_by_gpu_mem_gb.clear();
                        for (gb, model) in map {
                            let gb: u32 = gb.parse().map_err(|_| ScenarioError::Invalid {
                                origin: loaded.origin.clone(),
                                field: format!("{field}.philly_models_by_gpu_mem_gb"),
                                message: format!("key `{gb}` is not a whole number of GB"),
                            })?;
                            catalog::lookup(model).map_err(|m| ScenarioError::Invalid {
                                origin: loaded.origin.clone(),
                                field: format!("{field}.philly_models_by_gpu_mem_gb"),
                                message: m,
                            })?;
                            assume.model_by_gpu_mem_gb.push((gb, model.clone()));
                        }
                    }
                    machine_list::read_philly_machines(&path, &assume)?
                }
            };
            if ml.gpu_nodes_only {
                rows.retain(|r| r.gpus > 0);
            }
            b.add(
                cid,
                rows,
                ml.nodes_per_domain.unwrap_or(1).max(1),
                ml.domains_per_block
                    .unwrap_or(DEFAULT_DOMAINS_PER_BLOCK)
                    .max(1),
            );
        }
    }
    let statics = b.nodes.len();
    let mut groups = Vec::new();
    for (ci, cell) in spec.cells.iter().enumerate() {
        for (gi, g) in cell.autoscaling.iter().enumerate() {
            let field = format!("fleet.cells[{ci}].autoscaling[{gi}].node");
            let shape = NodeGroupSpec {
                count: Some(g.max_nodes),
                name_prefix: Some(
                    g.node
                        .name_prefix
                        .clone()
                        .unwrap_or_else(|| format!("{}-{}", cell.name, g.name)),
                ),
                ..g.node.clone()
            };
            let (rows, npd, dpb) = group_rows(loaded, &cell.name, &field, &shape)?;
            if b.nodes.len() + rows.len() > MAX_NODES {
                return Err(BuildError::Scenario(ScenarioError::Invalid {
                    origin: loaded.origin.clone(),
                    field: format!("fleet.cells[{ci}].autoscaling[{gi}].max_nodes"),
                    message: format!(
                        "the fleet would have {} nodes: at most {MAX_NODES}",
                        b.nodes.len() + rows.len()
                    ),
                }));
            }
            let first = b.nodes.len() as u32;
            let (gpus, cpu_milli, mem_mib) = (rows[0].gpus, rows[0].cpu_milli, rows[0].mem_mib);
            let model = rows[0].model.as_deref().map(|m| b.model_id(m));
            b.add(CellId(ci as u16), rows, npd, dpb);
            let d = |s: f64| SimDuration(fleetsim_policies::spec::secs_to_ms(s));
            groups.push(crate::engine::autoscale::GroupConfig {
                name: format!("{}/{}", cell.name, g.name),
                cell: CellId(ci as u16),
                model,
                gpus,
                cpu_milli,
                mem_mib,
                nodes: (first..first + g.max_nodes).map(NodeId).collect(),
                min_nodes: g.min_nodes,
                delay: match g.provisioning_delay {
                    DelaySpec::Fixed { s } => Delay::Fixed(d(s)),
                    DelaySpec::Uniform { min_s, max_s } => Delay::Uniform(d(min_s), d(max_s)),
                    DelaySpec::Lognormal { median_s, sigma } => {
                        Delay::Lognormal { median_s, sigma }
                    }
                },
                price_per_node_hour: g.price_per_node_hour,
                priority: g.priority,
                scale_down_idle: d(g.scale_down_idle_s),
                admission_check: g.admission_check.is_some(),
            });
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for n in &b.nodes {
        if !seen.insert(n.name.as_str()) {
            return Err(ScenarioError::Invalid {
                origin: loaded.origin.clone(),
                field: "fleet".into(),
                message: format!("duplicate node name `{}`", n.name),
            }
            .into());
        }
    }
    if b.models.len() > 128 {
        return Err(ScenarioError::Invalid {
            origin: loaded.origin.clone(),
            field: "fleet".into(),
            message: "more than 128 accelerator models".into(),
        }
        .into());
    }
    let mut gpus_by_model = BTreeMap::new();
    for n in &b.nodes[..statics] {
        if let Some(m) = n.model {
            *gpus_by_model
                .entry(b.models[m.index()].clone())
                .or_insert(0) += n.gpus as u64;
        }
    }
    let cells = spec.cells.iter().map(|c| c.name.clone()).collect();
    let state = FleetState::new(cells, b.models, b.nodes).map_err(|e| ScenarioError::Invalid {
        origin: loaded.origin.clone(),
        field: "fleet".into(),
        message: e.to_string(),
    })?;
    Ok(BuiltFleet {
        state,
        gpus_by_model,
        autoscaling: groups,
    })
}
