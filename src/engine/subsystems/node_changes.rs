//! The scenario's `[[node_events]]` as the engine's node changes ([`NodeChange`]), checked
//! against the built fleet's node names.

use std::collections::BTreeMap;

use fleetsim_policies::{FleetState, NodeId, SimDuration, SimTime};

use crate::engine::{NodeChange, NodeChangeKind};
use crate::scenario::{secs_to_ms, Loaded, NodeEventKind, ScenarioError};

/// The scenario's node events against the fleet's node names.
///
/// Events of one node must follow its state as the rows of a failures timeline file do
/// (`crate::reliability`, "Timeline file"), in the order the engine applies them (time,
/// then position in the file): a node starts up, `fail` takes an up node down and `repair`
/// brings a down node back up. The events are checked on their own, not against a
/// `[failures]` timeline.
///
/// # Errors
/// [`ScenarioError::Invalid`] naming `node_events[i].node` for an unknown node, or
/// `node_events[i]` for a `fail` of a node that is already down or a `repair` of a node
/// that is up.
pub fn node_changes(loaded: &Loaded, fleet: &FleetState) -> Result<Vec<NodeChange>, ScenarioError> {
    let s = &loaded.scenario;
    if s.node_events.is_empty() {
        return Ok(Vec::new());
    }
    let names: BTreeMap<&str, NodeId> = (0..fleet.nodes().len())
        .map(|i| (fleet.node_name(NodeId(i as u32)), NodeId(i as u32)))
        .collect();
    let changes = s
        .node_events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let node = *names
                .get(e.node.as_str())
                .ok_or_else(|| ScenarioError::Invalid {
                    origin: loaded.origin.clone(),
                    field: format!("node_events[{i}].node"),
                    message: format!("unknown node `{}`", e.node),
                })?;
            Ok(NodeChange {
                at: SimTime(secs_to_ms(e.at_s)),
                node,
                kind: match e.kind {
                    NodeEventKind::Fail => NodeChangeKind::Fail {
                        grace: SimDuration(secs_to_ms(e.grace_s)),
                    },
                    NodeEventKind::Repair => NodeChangeKind::Repair,
                },
            })
        })
        .collect::<Result<Vec<_>, ScenarioError>>()?;
    // Application order: time, then position (the engine's FIFO among equal times).
    let mut order: Vec<usize> = (0..changes.len()).collect();
    order.sort_by_key(|&i| changes[i].at);
    // Per node: down, and the event that set its state.
    let mut down: BTreeMap<NodeId, usize> = BTreeMap::new();
    for i in order {
        let c = &changes[i];
        let e = &s.node_events[i];
        let (kind, allowed, hint) = match e.kind {
            NodeEventKind::Fail => (
                "fail",
                !down.contains_key(&c.node),
                "; overlapping failures are one down interval (one fail, one repair): a repair \
                 brings a node up whatever failed it",
            ),
            NodeEventKind::Repair => (
                "repair",
                down.contains_key(&c.node),
                "; a repair must follow a fail of the node",
            ),
        };
        if !allowed {
            let state = match down.get(&c.node) {
                Some(j) => format!("already down (since node_events[{j}])"),
                None => "up (no earlier fail of it)".to_string(),
            };
            return Err(ScenarioError::Invalid {
                origin: loaded.origin.clone(),
                field: format!("node_events[{i}]"),
                message: format!(
                    "`{kind}` of node `{}` at {} s, but the node is {state}{hint}",
                    e.node, e.at_s
                ),
            });
        }
        match e.kind {
            NodeEventKind::Fail => down.insert(c.node, i),
            NodeEventKind::Repair => down.remove(&c.node),
        };
    }
    Ok(changes)
}
