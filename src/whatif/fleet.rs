//! The fleet transforms: scale, add nodes, remove nodes (see the [module docs](super)).

use std::collections::{BTreeMap, BTreeSet};

use fleetsim_policies::{CellId, FleetState, ModelId, NodeId, NodeSpec, SimTime};

use crate::engine::NodeEvent;
use crate::fleet::build::{build_fleet, BuildError, BuiltFleet};
use crate::scenario::{secs_to_ms, CellSpec, FleetSpec, Loaded, ScenarioError, TraceDir};

/// A fleet with the transforms applied, and the node events they schedule.
#[derive(Clone, Debug)]
pub struct TransformedFleet {
    /// The fleet at t = 0 (nodes that join later are already in it, down).
    pub built: BuiltFleet,
    /// Node changes over time, sorted by time (declaration order at equal times).
    pub events: Vec<NodeEvent>,
}

fn specs_of(state: &FleetState) -> Vec<NodeSpec> {
    state
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| NodeSpec {
            name: state.node_name(NodeId(i as u32)).to_string(),
            cell: n.cell,
            block: n.block,
            domain: n.domain,
            model: n.model,
            gpus: n.gpus,
            cpu_milli: n.cpu_milli,
            mem_mib: n.mem_mib,
        })
        .collect()
}

/// Builds the scenario's fleet and applies its fleet transforms. Without fleet transforms
/// this is exactly [`build_fleet`].
///
/// # Errors
/// [`BuildError`] for the base fleet, an added node group, or a transform naming an unknown
/// cell or model or removing more nodes than match.
pub fn build(loaded: &Loaded, trace_dir: &TraceDir) -> Result<TransformedFleet, BuildError> {
    let base = build_fleet(loaded, trace_dir)?;
    let spec = &loaded.scenario.transforms.spec;
    if !spec.changes_fleet() {
        return Ok(TransformedFleet {
            built: base,
            events: Vec::new(),
        });
    }
    let invalid = |field: String, message: String| {
        BuildError::Scenario(ScenarioError::Invalid {
            origin: loaded.origin.clone(),
            field,
            message,
        })
    };
    if !base.autoscaling.is_empty() {
        // The transforms renumber nodes; the groups own fixed node ids.
        return Err(invalid(
            "transforms".into(),
            "fleet transforms (scale, add_nodes, remove_nodes) cannot be combined with \
             `[[fleet.cells.autoscaling]]` groups"
                .into(),
        ));
    }
    let st = &base.state;
    let mut cells: Vec<String> = st.cells().iter().map(|c| c.name.clone()).collect();
    let mut models: Vec<String> = st.models().to_vec();
    for (i, s) in spec.scale.iter().enumerate() {
        if let Some(c) = &s.cell {
            if !cells.contains(c) {
                return Err(invalid(
                    format!("transforms.scale[{i}].cell"),
                    format!("no cell `{c}`; cells: {}", cells.join(", ")),
                ));
            }
        }
        if let Some(m) = &s.model {
            if !models.contains(m) {
                return Err(invalid(
                    format!("transforms.scale[{i}].model"),
                    format!(
                        "no accelerator model `{m}` in the fleet; models: {}",
                        models.join(", ")
                    ),
                ));
            }
        }
    }
    let factor = |cell: &str, model: Option<&str>| -> f64 {
        let mut f = spec.fleet_scale.unwrap_or(1.0);
        for s in &spec.scale {
            let cell_ok = s.cell.as_deref().is_none_or(|c| c == cell);
            let model_ok = s.model.as_deref().is_none_or(|m| Some(m) == model);
            if cell_ok && model_ok {
                f *= s.factor;
            }
        }
        f
    };

    // 1. Scale each (cell, model) group's domains.
    let specs = specs_of(st);
    let block_stride = specs.iter().map(|n| n.block).max().unwrap_or(0) + 1;
    let mut next_domain = specs.iter().map(|n| n.domain).max().unwrap_or(0) + 1;
    let mut out: Vec<NodeSpec> = Vec::with_capacity(specs.len());
    for cell in st.cells() {
        let mut groups: BTreeMap<Option<ModelId>, Vec<u32>> = BTreeMap::new();
        let mut members: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for &nid in &cell.nodes {
            let n = &specs[nid.index()];
            let m = members.entry(n.domain).or_default();
            if m.is_empty() {
                groups.entry(n.model).or_default().push(n.domain);
            }
            m.push(nid.index());
        }
        let mut keep: BTreeSet<u32> = BTreeSet::new();
        let mut copies: Vec<(u32, u32)> = Vec::new();
        for (model, doms) in &groups {
            let f = factor(&cell.name, model.map(|m| models[m.index()].as_str()));
            let d = doms.len();
            let k = if f == 0.0 {
                0
            } else {
                ((d as f64 * f).round() as usize).max(1)
            };
            // Each domain has at least one node: refuse before building a fleet this large.
            if out.len() + k > crate::fleet::build::MAX_NODES {
                return Err(invalid(
                    "transforms.fleet_scale".into(),
                    format!(
                        "the scaled fleet would have more than {} nodes",
                        crate::fleet::build::MAX_NODES
                    ),
                ));
            }
            if k <= d {
                keep.extend(
                    (0..d)
                        .filter(|j| (j + 1) * k / d > j * k / d)
                        .map(|j| doms[j]),
                );
            } else {
                keep.extend(doms.iter().copied());
                copies.extend((0..k - d).map(|e| (doms[e % d], 2 + (e / d) as u32)));
            }
        }
        for &nid in &cell.nodes {
            if keep.contains(&specs[nid.index()].domain) {
                out.push(specs[nid.index()].clone());
            }
        }
        let total = out.len()
            + copies
                .iter()
                .map(|(src, _)| members[src].len())
                .sum::<usize>();
        if total > crate::fleet::build::MAX_NODES {
            return Err(invalid(
                "transforms.fleet_scale".into(),
                format!(
                    "the scaled fleet would have {total} nodes or more: at most {}",
                    crate::fleet::build::MAX_NODES
                ),
            ));
        }
        for (src, copy) in copies {
            let dom = next_domain;
            next_domain += 1;
            for &i in &members[&src] {
                let mut s = specs[i].clone();
                s.name = format!("{}~{copy}", s.name);
                s.domain = dom;
                s.block += (copy - 1) * block_stride;
                out.push(s);
            }
        }
    }

    // 2. Added node groups, after every existing node.
    let mut events: Vec<NodeEvent> = Vec::new();
    let mut initially_down: Vec<NodeId> = Vec::new();
    for (k, add) in spec.add_nodes.iter().enumerate() {
        let mut groups = add.nodes.clone();
        for g in &mut groups {
            if g.name_prefix.is_none() && g.names.is_none() {
                g.name_prefix = Some(format!("{}-add{k}", add.cell));
            }
        }
        let mut mini = loaded.clone();
        mini.origin = format!(
            "{} (transforms.add_nodes[{k}] as fleet.cells[0])",
            loaded.origin
        );
        mini.scenario.fleet = FleetSpec {
            cells: vec![CellSpec {
                name: add.cell.clone(),
                nodes: groups,
                machine_list: None,
                autoscaling: Vec::new(),
            }],
        };
        let added = build_fleet(&mini, trace_dir)?;
        let cell = match cells.iter().position(|c| c == &add.cell) {
            Some(i) => i,
            None => {
                cells.push(add.cell.clone());
                cells.len() - 1
            }
        };
        let dom_off = out.iter().map(|n| n.domain).max().unwrap_or(0) + 1;
        let blk_off = out.iter().map(|n| n.block).max().unwrap_or(0) + 1;
        let mut ids = Vec::new();
        for mut s in specs_of(&added.state) {
            s.model = s.model.map(|m| {
                let name = &added.state.models()[m.index()];
                match models.iter().position(|x| x == name) {
                    Some(i) => ModelId(i as u16),
                    None => {
                        models.push(name.clone());
                        ModelId((models.len() - 1) as u16)
                    }
                }
            });
            s.cell = CellId(cell as u16);
            s.domain += dom_off;
            s.block += blk_off;
            ids.push(NodeId(out.len() as u32));
            out.push(s);
        }
        if add.at_s > 0.0 {
            initially_down.extend(&ids);
            events.push(NodeEvent {
                at: SimTime(secs_to_ms(add.at_s)),
                nodes: ids,
                up: true,
            });
        }
    }

    // 3. Drained nodes.
    let mut removed: BTreeSet<usize> = BTreeSet::new();
    for (k, r) in spec.remove_nodes.iter().enumerate() {
        let field = format!("transforms.remove_nodes[{k}]");
        let cid = cells.iter().position(|c| c == &r.cell).ok_or_else(|| {
            invalid(
                format!("{field}.cell"),
                format!("no cell `{}`; cells: {}", r.cell, cells.join(", ")),
            )
        })?;
        let mid = match &r.model {
            Some(m) => Some(models.iter().position(|x| x == m).ok_or_else(|| {
                invalid(
                    format!("{field}.model"),
                    format!("no accelerator model `{m}`; models: {}", models.join(", ")),
                )
            })?),
            None => None,
        };
        let matching: Vec<usize> = (0..out.len())
            .rev()
            .filter(|&i| {
                out[i].cell.index() == cid
                    && mid.is_none_or(|m| out[i].model == Some(ModelId(m as u16)))
                    && !removed.contains(&i)
            })
            .collect();
        let count = match (r.nodes, r.fraction) {
            (Some(n), _) => n as usize,
            (None, Some(f)) => (f * matching.len() as f64).round() as usize,
            (None, None) => 0,
        };
        if count > matching.len() {
            return Err(invalid(
                field,
                format!(
                    "removes {count} nodes but only {} nodes of cell `{}` match",
                    matching.len(),
                    r.cell
                ),
            ));
        }
        let mut ids: Vec<usize> = matching[..count].to_vec();
        ids.sort_unstable();
        removed.extend(&ids);
        events.push(NodeEvent {
            at: SimTime(secs_to_ms(r.at_s)),
            nodes: ids.into_iter().map(|i| NodeId(i as u32)).collect(),
            up: false,
        });
    }
    events.sort_by_key(|e| e.at);

    let mut seen = BTreeSet::new();
    for n in &out {
        if !seen.insert(n.name.as_str()) {
            return Err(invalid(
                "transforms".into(),
                format!("duplicate node name `{}` after the transforms", n.name),
            ));
        }
    }
    let mut gpus_by_model = BTreeMap::new();
    for n in &out {
        if let Some(m) = n.model {
            *gpus_by_model.entry(models[m.index()].clone()).or_insert(0) += n.gpus as u64;
        }
    }
    let mut state = FleetState::new(cells, models, out)
        .map_err(|e| invalid("transforms".into(), e.to_string()))?;
    for id in initially_down {
        state.set_schedulable(id, false);
    }
    Ok(TransformedFleet {
        built: BuiltFleet {
            state,
            gpus_by_model,
            autoscaling: Vec::new(),
        },
        events,
    })
}
