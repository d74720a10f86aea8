//! Node changes (failures, repairs, drains, evictions) and node events (joins, drains).

use std::collections::BTreeSet;

use fleetsim_policies::live;
use fleetsim_policies::NodeId;

use crate::engine::{EngineError, NodeChangeKind, Simulation};

/// The nodes outside scheduling for a while: drained ones and the held-out hot spares.
#[derive(Debug, Default)]
pub(in crate::engine) struct NodeSets {
    /// Nodes drained by a node event (down): no new work, gone when their last task ends.
    pub(in crate::engine) draining: BTreeSet<NodeId>,
    /// Held-out hot spares ([`EngineConfig::spares`](crate::engine::EngineConfig::spares)).
    pub(in crate::engine) spares: BTreeSet<NodeId>,
    /// The spares that are down or drained.
    pub(in crate::engine) spares_down: BTreeSet<NodeId>,
}

impl Simulation {
    /// Applies node change `i`.
    pub(in crate::engine) fn node_change(&mut self, i: usize) -> Result<(), EngineError> {
        let change = self.cfg.node_changes[i];
        if self.node_sets.spares.contains(&change.node) {
            // A held-out spare stays out of scheduling; it is free again once repaired.
            if change.kind == NodeChangeKind::Repair {
                self.node_sets.spares_down.remove(&change.node);
                if self.node_sets.draining.remove(&change.node) {
                    self.metrics.add_draining(&self.fleet, change.node, false);
                    self.metrics.refresh_capacity(&self.fleet);
                }
            } else {
                self.node_sets.spares_down.insert(change.node);
            }
            return Ok(());
        }
        let node = change.node.0;
        self.record_live(|t| match change.kind {
            NodeChangeKind::Repair => live::Event::NodeRecovered { t, node },
            NodeChangeKind::Fail { .. } => live::Event::NodeFailed { t, node },
            NodeChangeKind::Drain | NodeChangeKind::Evict { .. } => {
                live::Event::NodeDrained { t, node }
            }
        });
        match change.kind {
            NodeChangeKind::Repair => {
                self.fleet.set_schedulable(change.node, true);
                if self.node_sets.draining.remove(&change.node) {
                    self.metrics.add_draining(&self.fleet, change.node, false);
                }
            }
            NodeChangeKind::Fail { grace } => {
                self.fleet.set_schedulable(change.node, false);
                self.elastic_node_down(change.node)?;
                self.stop_jobs_on(change.node, grace, false);
                self.book_held_on_failed(change.node);
                // Capacity and allocation of a down node leave together: a
                // drained node stops counting as available, and what its stopped jobs
                // hold through the grace becomes "held on failed nodes".
                if self.node_sets.draining.remove(&change.node) {
                    self.metrics.add_draining(&self.fleet, change.node, false);
                }
                self.metrics.node_failed(&self.fleet, change.node);
            }
            NodeChangeKind::Drain => {
                let n = change.node;
                if self.fleet.node(n).schedulable {
                    self.fleet.set_schedulable(n, false);
                    if self.node_busy(n) && self.node_sets.draining.insert(n) {
                        self.metrics.add_draining(&self.fleet, n, true);
                    }
                }
            }
            NodeChangeKind::Evict { grace } => {
                self.fleet.set_schedulable(change.node, false);
                self.elastic_node_down(change.node)?;
                self.stop_jobs_on(change.node, grace, true);
            }
        }
        self.metrics.refresh_capacity(&self.fleet);
        self.pass.dirty = true;
        Ok(())
    }

    /// Applies node event `i` of the configuration (see [`NodeEvent`](crate::engine::NodeEvent)).
    pub(in crate::engine) fn node_event(&mut self, i: usize) {
        let e = self.cfg.node_events[i].clone();
        for &n in &e.nodes {
            self.record_live(|t| match e.up {
                true => live::Event::NodeRecovered { t, node: n.0 },
                false => live::Event::NodeDrained { t, node: n.0 },
            });
            if e.up {
                if self.node_sets.draining.remove(&n) {
                    self.metrics.add_draining(&self.fleet, n, false);
                }
                self.fleet.set_schedulable(n, true);
            } else if self.fleet.node(n).schedulable {
                self.fleet.set_schedulable(n, false);
                if self.node_busy(n) && self.node_sets.draining.insert(n) {
                    self.metrics.add_draining(&self.fleet, n, true);
                }
            }
        }
        self.metrics.refresh_capacity(&self.fleet);
        self.pass.dirty = true;
    }

    pub(in crate::engine) fn node_busy(&self, n: NodeId) -> bool {
        let s = self.fleet.node(n);
        s.free_gpu_milli < s.gpus * 1000
            || s.free_cpu_milli < s.cpu_milli
            || s.free_mem_mib < s.mem_mib
    }

    /// Drained nodes among `nodes` that are now empty leave the available capacity.
    pub(in crate::engine) fn settle_drained(&mut self, nodes: &[NodeId]) {
        let mut changed = false;
        for &n in nodes {
            if self.node_sets.draining.contains(&n) && !self.node_busy(n) {
                self.node_sets.draining.remove(&n);
                self.metrics.add_draining(&self.fleet, n, false);
                changed = true;
            }
        }
        if changed {
            self.metrics.refresh_capacity(&self.fleet);
        }
    }
}
