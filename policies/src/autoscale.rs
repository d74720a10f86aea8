//! The autoscaler's expander: which node group a scale-up takes its nodes from.
//!
//! When pending work needs capacity that no node (up or being provisioned) can give, the
//! engine lists every node group able to hold the whole gang (all-or-nothing, as the Cluster
//! Autoscaler's atomic scale-up and Kueue's ProvisioningRequest) as a [`ScaleOption`], and the
//! expander picks one. The names follow the Cluster Autoscaler's `--expander` flag
//! (kubernetes/autoscaler, `cluster-autoscaler/expander/`): `least-waste`, `price`,
//! `priority`. No engine dependency: the options are plain numbers.

use crate::registry::ExpanderKind;

/// One node group able to take a scale-up, as the expander sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleOption {
    /// The group's index in the engine's list (the final tie-break: lower first).
    pub group: u32,
    /// Nodes the scale-up would add.
    pub nodes: u32,
    /// Accelerator capacity left unused on the new nodes once the gang runs, GPU-milli.
    pub waste_gpu_milli: u64,
    /// CPU left unused on the new nodes once the gang runs, milli-cores.
    pub waste_cpu_milli: u64,
    /// Price of the new nodes, micro-units per hour (`nodes ×` the group's price per
    /// node-hour `× 10⁶`, rounded).
    pub price_micro_per_hour: u64,
    /// The group's priority (higher preferred by `priority`).
    pub priority: i32,
}

/// An expander policy.
pub trait Expander {
    /// The name scenarios use.
    fn name(&self) -> &'static str;
    /// The option to scale up, by position in `options` (`None` for an empty list). Every
    /// tie is broken by lower [`ScaleOption::group`].
    fn choose(&self, options: &[ScaleOption]) -> Option<usize>;
}

fn min_by_key<K: Ord>(options: &[ScaleOption], key: impl Fn(&ScaleOption) -> K) -> Option<usize> {
    options
        .iter()
        .enumerate()
        .min_by_key(|(_, o)| (key(o), o.group))
        .map(|(i, _)| i)
}

/// Least waste: the fewest unused GPU-milli, then CPU milli-cores, then the lower price
/// (the Cluster Autoscaler's `least-waste`, which scores unused CPU and memory).
#[derive(Clone, Copy, Debug, Default)]
pub struct LeastWaste;

impl Expander for LeastWaste {
    fn name(&self) -> &'static str {
        "least-waste"
    }
    fn choose(&self, options: &[ScaleOption]) -> Option<usize> {
        min_by_key(options, |o| {
            (o.waste_gpu_milli, o.waste_cpu_milli, o.price_micro_per_hour)
        })
    }
}

/// Cheapest: the lowest price of the added nodes per hour, then the least GPU waste (the
/// Cluster Autoscaler's `price`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cheapest;

impl Expander for Cheapest {
    fn name(&self) -> &'static str {
        "price"
    }
    fn choose(&self, options: &[ScaleOption]) -> Option<usize> {
        min_by_key(options, |o| (o.price_micro_per_hour, o.waste_gpu_milli))
    }
}

/// Priority: the highest group priority, then the least GPU waste (the Cluster Autoscaler's
/// `priority`, whose priorities come from a ConfigMap; here from each group's `priority`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ByPriority;

impl Expander for ByPriority {
    fn name(&self) -> &'static str {
        "priority"
    }
    fn choose(&self, options: &[ScaleOption]) -> Option<usize> {
        min_by_key(options, |o| {
            (std::cmp::Reverse(o.priority), o.waste_gpu_milli)
        })
    }
}

impl ExpanderKind {
    /// The policy object.
    pub fn build(self) -> Box<dyn Expander> {
        match self {
            ExpanderKind::LeastWaste => Box::new(LeastWaste),
            ExpanderKind::Price => Box::new(Cheapest),
            ExpanderKind::Priority => Box::new(ByPriority),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(group: u32, waste: u64, price: u64, priority: i32) -> ScaleOption {
        ScaleOption {
            group,
            nodes: 1,
            waste_gpu_milli: waste,
            waste_cpu_milli: 0,
            price_micro_per_hour: price,
            priority,
        }
    }

    #[test]
    fn each_expander_picks_by_its_own_key_and_breaks_ties_by_group() {
        // Group 0: wasteful and cheap; 1: tight and dear; 2: as tight as 1, cheaper, top priority.
        let o = [
            opt(0, 4000, 1_000_000, 0),
            opt(1, 0, 9_000_000, 1),
            opt(2, 0, 5_000_000, 5),
        ];
        assert_eq!(LeastWaste.choose(&o), Some(2)); // waste tie 1 vs 2 → lower price
        assert_eq!(Cheapest.choose(&o), Some(0));
        assert_eq!(ByPriority.choose(&o), Some(2));
        let tie = [opt(3, 0, 1, 0), opt(1, 0, 1, 0)];
        assert_eq!(LeastWaste.choose(&tie), Some(1));
        assert_eq!(Cheapest.choose(&tie), Some(1));
        assert_eq!(ByPriority.choose(&tie), Some(1));
        assert_eq!(LeastWaste.choose(&[]), None);
    }

    #[test]
    fn every_name_builds_the_expander_of_that_name() {
        for n in ExpanderKind::NAMES {
            let k: ExpanderKind = n.parse().unwrap();
            assert_eq!(k.build().name(), *n);
        }
        assert!("cheapest"
            .parse::<ExpanderKind>()
            .unwrap_err()
            .contains("least-waste, price, priority"));
    }
}
