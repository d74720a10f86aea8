//! Topology constraints of a gang: where its tasks may go relative to each other.
//!
//! The fleet's levels, from the smallest group up: [`Level::Node`] → [`Level::Domain`] (an
//! NVLink/ICI domain, e.g. one GB200 NVL72 rack) → [`Level::Block`] (racks under one
//! spine/switch block) → [`Level::Cell`]. A [`TopologySpec`] names a level and whether packing
//! there is **required** or **preferred**, following:
//!
//! * Kueue Topology-Aware Scheduling: `kueue.x-k8s.io/podset-required-topology` (all pods in
//!   one domain of that level, or the workload waits) and `podset-preferred-topology` (as few
//!   domains as possible, climbing levels when one does not suffice); and
//!   `podset-slice-required-topology` + `podset-slice-size` (the gang is cut into slices of
//!   `slice_size` pods, each slice inside one domain of the slice level);
//! * Slurm `topology/block` (`--segment` = slice size; a job stays in one block when it can)
//!   and `--switches` (required);
//! * Volcano HyperNode `networkTopology.mode: hard|soft` with `highestTierAllowed`
//!   (hard = required, soft = preferred);
//! * Ray placement groups ([`RayStrategy`]): `STRICT_PACK` (all bundles on one node), `PACK`
//!   (as few nodes as possible), `STRICT_SPREAD` (every bundle on a different node), `SPREAD`
//!   (different nodes when possible). A job's tasks are its bundles.
//!
//! The placement side ([`crate::placement::topology`]) enforces these for every placement
//! policy: a `required` level is never violated, whatever policy scores the nodes.

use std::fmt;
use std::str::FromStr;

/// A level of the fleet's topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Level {
    /// One node (host, compute tray).
    Node,
    /// One NVLink/ICI domain (an NVL72 rack, an HGX board, a TPU cube).
    #[default]
    Domain,
    /// One block of domains (racks under a spine; Slurm `topology/block`).
    Block,
    /// The whole cell.
    Cell,
}

impl Level {
    /// Every level, smallest first.
    pub const ALL: [Level; 4] = [Level::Node, Level::Domain, Level::Block, Level::Cell];
    /// Every valid name.
    pub const NAMES: &'static [&'static str] = &["node", "domain", "block", "cell"];

    /// The name scenarios use.
    pub fn as_str(&self) -> &'static str {
        match self {
            Level::Node => "node",
            Level::Domain => "domain",
            Level::Block => "block",
            Level::Cell => "cell",
        }
    }

    /// The next larger level (`Cell` stays `Cell`).
    pub fn up(self) -> Level {
        match self {
            Level::Node => Level::Domain,
            Level::Domain => Level::Block,
            Level::Block | Level::Cell => Level::Cell,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Level {
    type Err = String;
    /// # Errors
    /// A message listing the valid names.
    fn from_str(s: &str) -> Result<Level, String> {
        match s {
            "node" => Ok(Level::Node),
            "domain" | "rack" => Ok(Level::Domain),
            "block" => Ok(Level::Block),
            "cell" => Ok(Level::Cell),
            _ => Err(format!(
                "unknown topology level `{s}`; valid names: {} (`rack` = `domain`)",
                Level::NAMES.join(", ")
            )),
        }
    }
}

/// How binding a [`TopologySpec`]'s level is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum TopologyMode {
    /// All tasks in one group of the level, or the gang does not start (Kueue required,
    /// Volcano hard).
    Required,
    /// As few groups of the level as possible; larger levels are tried when one group does
    /// not suffice (Kueue preferred, Volcano soft).
    #[default]
    Preferred,
}

/// Ray placement-group strategies for a gang's bundles (tasks), by Ray's own names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum RayStrategy {
    /// As few nodes as possible (best effort).
    #[cfg_attr(feature = "serde", serde(rename = "PACK"))]
    Pack,
    /// Different nodes where possible (best effort).
    #[cfg_attr(feature = "serde", serde(rename = "SPREAD"))]
    Spread,
    /// All bundles on one node, or none.
    #[cfg_attr(feature = "serde", serde(rename = "STRICT_PACK"))]
    StrictPack,
    /// Every bundle on a different node, or none.
    #[cfg_attr(feature = "serde", serde(rename = "STRICT_SPREAD"))]
    StrictSpread,
}

impl RayStrategy {
    /// Every valid name (Ray's).
    pub const NAMES: &'static [&'static str] = &["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"];

    /// Ray's name.
    pub fn as_str(&self) -> &'static str {
        match self {
            RayStrategy::Pack => "PACK",
            RayStrategy::Spread => "SPREAD",
            RayStrategy::StrictPack => "STRICT_PACK",
            RayStrategy::StrictSpread => "STRICT_SPREAD",
        }
    }
}

impl FromStr for RayStrategy {
    type Err = String;
    /// # Errors
    /// A message listing Ray's names.
    fn from_str(s: &str) -> Result<RayStrategy, String> {
        match s {
            "PACK" => Ok(RayStrategy::Pack),
            "SPREAD" => Ok(RayStrategy::Spread),
            "STRICT_PACK" => Ok(RayStrategy::StrictPack),
            "STRICT_SPREAD" => Ok(RayStrategy::StrictSpread),
            _ => Err(format!(
                "unknown Ray placement strategy `{s}`; valid names: {}",
                RayStrategy::NAMES.join(", ")
            )),
        }
    }
}

/// A gang's topology constraint. All fields are optional; an all-`None` spec places tasks
/// one by one with the placement policy, as without a spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TopologySpec {
    /// Pack the whole gang at this level (`None`: no gang-level constraint).
    pub level: Option<Level>,
    /// Whether `level` is required or preferred.
    pub mode: TopologyMode,
    /// Cut the gang into slices of this many tasks (the last may be smaller), each required
    /// to stay inside one group of `slice_level`.
    pub slice_size: Option<u32>,
    /// The level each slice must stay in (default [`Level::Domain`]).
    pub slice_level: Level,
    /// A Ray placement-group strategy over the gang's tasks.
    pub ray: Option<RayStrategy>,
}

impl TopologySpec {
    /// Kueue TAS's common case: prefer one NVLink domain, climbing to block and cell.
    pub const PREFER_DOMAIN: TopologySpec = TopologySpec {
        level: Some(Level::Domain),
        mode: TopologyMode::Preferred,
        slice_size: None,
        slice_level: Level::Domain,
        ray: None,
    };

    /// True when the spec asks for nothing.
    pub fn is_empty(&self) -> bool {
        self.level.is_none() && self.slice_size.is_none() && self.ray.is_none()
    }

    /// The level whose groups must each hold the whole gang, if any: a required `level`, or
    /// the node for `STRICT_PACK`.
    pub fn required_level(&self) -> Option<Level> {
        match (self.ray, self.level, self.mode) {
            (Some(RayStrategy::StrictPack), _, _) => Some(Level::Node),
            (_, Some(l), TopologyMode::Required) => Some(l),
            _ => None,
        }
    }
}

/// True when some cell `job` allows could, empty and with every node up, meet the gang's
/// topology (its own, or `default` for a gang): a strict spread needs as
/// many distinct nodes that hold a task as it has tasks; a strict pack, or a required
/// level, needs one group of that level holding the whole gang; a slice needs one group
/// of its level holding a whole slice. `O(nodes)` per cell.
pub fn feasible(
    fleet: &crate::FleetState,
    job: &crate::PendingJob,
    default: Option<TopologySpec>,
) -> bool {
    let topo = match job.topology {
        Some(t) => t,
        None if job.tasks > 1 => match default {
            Some(t) => t,
            None => return true,
        },
        None => return true,
    };
    let tasks = u64::from(job.tasks);
    let mut needs: Vec<(Level, u64)> = Vec::new();
    match topo.ray {
        Some(RayStrategy::StrictPack) => needs.push((Level::Node, tasks)),
        Some(RayStrategy::StrictSpread) => needs.push((Level::Cell, u64::MAX)),
        _ => {}
    }
    if let (Some(l), TopologyMode::Required) = (topo.level, topo.mode) {
        needs.push((l, tasks));
    }
    if let Some(s) = topo.slice_size.filter(|&s| s > 0) {
        needs.push((topo.slice_level, u64::from(s).min(tasks)));
    }
    if needs.is_empty() {
        return true;
    }
    (0..fleet.cells().len())
        .map(|c| crate::CellId(c as u16))
        .filter(|&c| job.allows_cell(c))
        .any(|c| {
            needs.iter().all(|&(level, n)| {
                let (most, nodes) = fleet.group_capacity(c, &job.shape, job.models, level);
                if n == u64::MAX {
                    nodes >= tasks // strict spread: one task per distinct node
                } else {
                    most >= n
                }
            })
        })
}
