//! The `[transforms]` table: the spec of the what-if transforms ([`crate::whatif`], whose
//! module docs give the semantics of each transform). The scenario schema holds it; the
//! transforms, above the scenario, read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

use super::NodeGroupSpec;

/// Largest factor a transform may scale the fleet or the arrival rate by (and the
/// arrival rate's smallest factor is its inverse): beyond it a what-if is out of the range
/// the simulator is built for (a 1,000× fleet of the default scenario is 68,000 nodes).
pub const MAX_SCALE: f64 = 1000.0;

/// The `[transforms]` table, with the table as written kept for the echo in `summary.json`.
#[derive(Clone, Debug, Default)]
pub struct Transforms {
    /// The typed transforms.
    pub spec: TransformsSpec,
    /// The table as written (after any `--set` or sweep override), echoed in `summary.json`.
    pub raw: toml::Table,
}

/// The `[transforms]` table reads as [`TransformsSpec`].
impl schemars::JsonSchema for Transforms {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Transforms".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        TransformsSpec::json_schema(g)
    }
}

impl<'de> Deserialize<'de> for Transforms {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = toml::Table::deserialize(d)?;
        let spec = TransformsSpec::deserialize(toml::Value::Table(raw.clone()))
            .map_err(|e| serde::de::Error::custom(format!("in [transforms]: {}", e.message())))?;
        Ok(Transforms { spec, raw })
    }
}

impl Transforms {
    /// True when no transform is declared (the run is exactly the untransformed scenario).
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The table as JSON, for `summary.json` (keys in sorted order).
    pub fn echo(&self) -> serde_json::Value {
        serde_json::to_value(&self.raw).expect("a TOML table is JSON-representable")
    }
}

/// The typed transforms; see the module docs for the semantics of each.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransformsSpec {
    /// Arrival-rate factor (> 0): inter-arrival gaps are divided by it.
    #[serde(default)]
    pub arrival_rate_scale: Option<f64>,
    /// Probability of keeping each job, in (0, 1].
    #[serde(default)]
    pub sample_fraction: Option<f64>,
    /// Keep only jobs submitted in this window.
    #[serde(default)]
    pub window: Option<WindowSpec>,
    /// Tenant renames; the key `*` renames every tenant not listed.
    #[serde(default)]
    pub tenant_map: BTreeMap<String, String>,
    /// Factor (≥ 0) on every cell's NVLink domains.
    #[serde(default)]
    pub fleet_scale: Option<f64>,
    /// Per-cell / per-model factors, multiplied with `fleet_scale`.
    #[serde(default)]
    pub scale: Vec<ScaleSpec>,
    /// Nodes that join the fleet (at `at_s`).
    #[serde(default)]
    pub add_nodes: Vec<AddNodesSpec>,
    /// Nodes drained at `at_s`.
    #[serde(default)]
    pub remove_nodes: Vec<RemoveNodesSpec>,
}

/// A submit-time window, seconds since t = 0.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    /// First submit time kept, seconds (default 0).
    #[serde(default)]
    pub start_s: f64,
    /// Submit times at or after this are dropped, seconds (default: none).
    #[serde(default)]
    pub end_s: Option<f64>,
}

/// A fleet factor for a cell and/or an accelerator model.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaleSpec {
    /// Cell name (default: every cell).
    #[serde(default)]
    pub cell: Option<String>,
    /// Accelerator model (default: every model).
    #[serde(default)]
    pub model: Option<String>,
    /// Factor (≥ 0) on the matching domains.
    pub factor: f64,
}

/// Nodes that join the fleet.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddNodesSpec {
    /// When they come up, seconds since t = 0 (default 0: from the start).
    #[serde(default)]
    pub at_s: f64,
    /// The cell they join (created when no cell has this name).
    pub cell: String,
    /// Node groups, as in `[[fleet.cells.nodes]]`.
    pub nodes: Vec<NodeGroupSpec>,
}

/// Nodes drained at a given time.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveNodesSpec {
    /// When, seconds since t = 0.
    pub at_s: f64,
    /// The cell.
    pub cell: String,
    /// Only nodes of this accelerator model (default: any).
    #[serde(default)]
    pub model: Option<String>,
    /// How many nodes.
    #[serde(default)]
    pub nodes: Option<u32>,
    /// Or which fraction of the matching nodes (rounded).
    #[serde(default)]
    pub fraction: Option<f64>,
}

impl TransformsSpec {
    /// Checks ranges (see [`MAX_SCALE`]); returns `(field, message)` for the first problem.
    ///
    /// # Errors
    /// The dotted field under `transforms` and what is wrong with it.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, m: &str| Err((format!("transforms.{f}"), m.to_string()));
        if let Some(v) = self.arrival_rate_scale {
            if !(1.0 / MAX_SCALE..=MAX_SCALE).contains(&v) {
                return bad(
                    "arrival_rate_scale",
                    &format!("must be a number in [{}, {MAX_SCALE}]", 1.0 / MAX_SCALE),
                );
            }
        }
        if let Some(v) = self.sample_fraction {
            if !(v > 0.0 && v <= 1.0) {
                return bad("sample_fraction", "must be in (0, 1]");
            }
        }
        if let Some(w) = &self.window {
            if !(w.start_s.is_finite() && w.start_s >= 0.0) {
                return bad("window.start_s", "must be a number ≥ 0");
            }
            if let Some(e) = w.end_s {
                if !(e.is_finite() && e > w.start_s) {
                    return bad("window.end_s", "must be a number > start_s");
                }
            }
        }
        if let Some(v) = self.fleet_scale {
            if !(v > 0.0 && v <= MAX_SCALE) {
                return bad(
                    "fleet_scale",
                    &format!(
                        "must be a number in (0, {MAX_SCALE}] (cut single cells with `scale`)"
                    ),
                );
            }
        }
        for (i, s) in self.scale.iter().enumerate() {
            if !(s.factor >= 0.0 && s.factor <= MAX_SCALE) {
                return bad(
                    &format!("scale[{i}].factor"),
                    &format!("must be a number in [0, {MAX_SCALE}]"),
                );
            }
        }
        for (i, a) in self.add_nodes.iter().enumerate() {
            if !(a.at_s.is_finite() && a.at_s >= 0.0) {
                return bad(&format!("add_nodes[{i}].at_s"), "must be a number ≥ 0");
            }
            if a.cell.trim().is_empty() {
                return bad(&format!("add_nodes[{i}].cell"), "must not be empty");
            }
            if a.nodes.is_empty() {
                return bad(
                    &format!("add_nodes[{i}].nodes"),
                    "give at least one node group",
                );
            }
        }
        for (i, r) in self.remove_nodes.iter().enumerate() {
            if !(r.at_s.is_finite() && r.at_s >= 0.0) {
                return bad(&format!("remove_nodes[{i}].at_s"), "must be a number ≥ 0");
            }
            match (r.nodes, r.fraction) {
                (Some(_), None) => {}
                (None, Some(f)) if (0.0..=1.0).contains(&f) => {}
                (None, Some(_)) => {
                    return bad(&format!("remove_nodes[{i}].fraction"), "must be in [0, 1]")
                }
                _ => {
                    return bad(
                        &format!("remove_nodes[{i}]"),
                        "give exactly one of `nodes` and `fraction`",
                    )
                }
            }
        }
        Ok(())
    }

    /// True when the fleet is changed (scaled, added to or drained).
    pub fn changes_fleet(&self) -> bool {
        self.fleet_scale.is_some()
            || !self.scale.is_empty()
            || !self.add_nodes.is_empty()
            || !self.remove_nodes.is_empty()
    }

    /// True when the job stream is changed.
    pub fn changes_workload(&self) -> bool {
        self.arrival_rate_scale.is_some()
            || self.sample_fraction.is_some()
            || self.window.is_some()
            || !self.tenant_map.is_empty()
    }
}
