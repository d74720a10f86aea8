//! JSON Schemas of fleetsim's documents, generated from the Rust types that read or write
//! them (schemars derives beside the serde derives), committed under `schemas/` and printed
//! by `fleetsim schema KIND`:
//!
//! * `scenario` — the scenario file, read as JSON (a TOML scenario converted key by key).
//!   A scenario with `extends` is checked after merging onto its base (a base's keys may be
//!   required). Stage specs (`queue_order`, `placement`, `cell_selection`) are a name or a
//!   table with `name`; their parameters are checked when the scenario is read.
//! * `summary` — `summary.json` of a run (`mode` `schedule` or `replay`).
//! * `inflation-summary` — `summary.json` of inflation mode (`mode` = `inflation`).
//!
//! Both summaries carry [`crate::report::summary::SCHEMA_VERSION`] as `schema_version`;
//! `mode` tells which schema applies. `tests/integration/schemas.rs` fails when a committed
//! schema is stale (`FLEETSIM_UPDATE_SCHEMAS=1` rewrites them) and validates every committed
//! scenario and the summaries of runs against them.

/// A document with a schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The scenario file.
    Scenario,
    /// A run's `summary.json`.
    Summary,
    /// Inflation mode's `summary.json`.
    InflationSummary,
}

impl Kind {
    /// Every kind, in the order `fleetsim schema` lists them.
    pub const ALL: [Kind; 3] = [Kind::Scenario, Kind::Summary, Kind::InflationSummary];

    /// Its name on the command line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Scenario => "scenario",
            Kind::Summary => "summary",
            Kind::InflationSummary => "inflation-summary",
        }
    }

    /// The committed file, relative to the repository root.
    pub fn file(&self) -> String {
        format!("schemas/{}.schema.json", self.as_str())
    }

    /// The kind named `s`.
    ///
    /// # Errors
    /// A message listing the valid names.
    pub fn parse(s: &str) -> Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(Kind::as_str).collect();
                format!("unknown schema `{s}`; valid names: {}", names.join(", "))
            })
    }
}

/// The schema of `kind` as a JSON value (JSON Schema 2020-12).
pub fn schema(kind: Kind) -> serde_json::Value {
    let s = match kind {
        Kind::Scenario => schemars::schema_for!(crate::scenario::Scenario),
        Kind::Summary => schemars::schema_for!(crate::report::summary::Summary),
        Kind::InflationSummary => {
            schemars::schema_for!(crate::inflation::report::InflationSummary)
        }
    };
    s.to_value()
}

/// The schema of `kind` as the committed file holds it: pretty JSON and a final newline.
pub fn schema_text(kind: Kind) -> String {
    let mut t = serde_json::to_string_pretty(&schema(kind)).expect("a schema serializes");
    t.push('\n');
    t
}
