//! Helpers shared by the scheduler's unit tests.

use super::*;
use crate::ids::ModelId;
use crate::state::NodeSpec;

/// A fleet of one node `n1` of `gpus` accelerators of model `G` (1,000 milli-cores,
/// 1,000 MiB) in cell `c`.
pub(crate) fn one_node_fleet(gpus: u32) -> FleetState {
    let node = NodeSpec {
        name: "n1".into(),
        cell: CellId(0),
        block: 0,
        domain: 0,
        model: Some(ModelId(0)),
        gpus,
        cpu_milli: 1000,
        mem_mib: 1000,
    };
    FleetState::new(vec!["c".into()], vec!["G".into()], vec![node]).unwrap()
}

/// The jobs started by `d`, in decision order.
pub(crate) fn started(d: &[Decision]) -> Vec<u32> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Start { job, .. } => Some(job.0),
            _ => None,
        })
        .collect()
}
