//! Scenario overrides by dotted path: `--set PATH=VALUE`, sweep axes and compare policies all
//! edit the parsed TOML document before it is deserialized into a [`Scenario`], so every
//! field of the schema can be overridden (and swept), and a path the schema does not know is
//! an error naming the key (every table denies unknown keys).
//!
//! A path is dot-separated keys, each optionally indexed: `policy.placement`,
//! `workload.synthetic.arrival_rate_per_hour`, `fleet.cells[0].nodes[1].count`,
//! `transforms.fleet_scale`. Missing tables on the way are created (so `transforms.x` works on
//! a scenario without `[transforms]`); an index must name an existing array element. A table
//! value is merged into the table at the path (`policy = { placement = "best-fit" }` changes
//! one policy field and keeps the others); any other value replaces what was there.
//!
//! [`Scenario`]: super::Scenario

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::{Loaded, ScenarioError, DEFAULT_SCENARIO};

/// One override.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// Dotted path.
    pub path: String,
    /// New value.
    pub value: Value,
}

impl Override {
    /// Parses `PATH=VALUE`; VALUE is read as a TOML value (`0.5`, `true`, `"x"`,
    /// `{ a = 1 }`), and as a plain string when it is not one (`best-fit`).
    ///
    /// # Errors
    /// A message when there is no `=` or the path is empty.
    pub fn parse(arg: &str) -> Result<Override, String> {
        let (path, value) = arg.split_once('=').ok_or_else(|| {
            format!("`{arg}`: expected PATH=VALUE, e.g. policy.placement=best-fit")
        })?;
        let path = path.trim();
        if path.is_empty() {
            return Err(format!("`{arg}`: empty path"));
        }
        Ok(Override {
            path: path.to_string(),
            value: parse_value_text(value.trim()),
        })
    }

    /// `PATH=LABEL` (see [`value_label`]).
    pub fn label(&self) -> String {
        format!("{}={}", self.path, value_label(&self.value))
    }
}

/// Reads a TOML value, or takes the text as a string when it is not one.
pub fn parse_value_text(s: &str) -> Value {
    toml::from_str::<Table>(&format!("v = {s}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(s.to_string()))
}

/// A short, stable text for a value: strings bare, numbers and booleans as written by Rust's
/// shortest round-trip formatting, tables as `k=v+k=v` (sorted keys), arrays as `[a;b]`.
pub fn value_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(d) => d.to_string(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(value_label).collect::<Vec<_>>().join(";")
        ),
        Value::Table(t) => t
            .iter()
            .map(|(k, v)| format!("{k}={}", value_label(v)))
            .collect::<Vec<_>>()
            .join("+"),
    }
}

/// A scenario's text and where it came from, to load with different overrides.
#[derive(Clone, Debug)]
pub struct Source {
    /// The TOML text.
    pub text: String,
    /// File name for messages (`<embedded default scenario>` for the default).
    pub origin: String,
    /// Directory relative paths are resolved against.
    pub base_dir: PathBuf,
    doc: Table,
}

impl Source {
    /// Reads a scenario file, or the embedded default when `path` is `None`, and checks that
    /// it loads as it is.
    ///
    /// # Errors
    /// [`ScenarioError`] when the file cannot be read or does not load.
    pub fn read(path: Option<&Path>) -> Result<Source, ScenarioError> {
        let (text, origin, base_dir) = match path {
            Some(p) => (
                crate::input_cap::read_capped(
                    p,
                    crate::input_cap::MAX_SCENARIO_BYTES,
                    "scenario file",
                )
                .map_err(|source| ScenarioError::Io {
                    path: p.to_path_buf(),
                    source,
                })?,
                p.display().to_string(),
                p.parent().map(Path::to_path_buf).unwrap_or_default(),
            ),
            None => (
                DEFAULT_SCENARIO.to_string(),
                "<embedded default scenario>".to_string(),
                PathBuf::from("."),
            ),
        };
        Source::from_text(text, origin, base_dir)
    }

    /// A scenario given as TOML text (the Python package's `fleetsim.run(toml_text)`):
    /// `origin` names it in messages, relative paths resolve against `base_dir`; checked to
    /// load as it is.
    ///
    /// # Errors
    /// [`ScenarioError`] when it does not load.
    pub fn from_text(
        text: String,
        origin: String,
        base_dir: PathBuf,
    ) -> Result<Source, ScenarioError> {
        super::parse(&text, &origin, base_dir.clone())?;
        let mut doc: Table = toml::from_str(&text).map_err(|e| ScenarioError::Parse {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        // Overrides address the merged scenario: `fleet.cells[0]…` of a file that takes its
        // fleet from the base it `extends`.
        if doc.contains_key("extends") {
            doc = super::validate::resolve_extends(doc, &origin, &base_dir, 0)?;
        }
        Ok(Source {
            text,
            origin,
            base_dir,
            doc,
        })
    }

    /// The parsed document.
    pub fn doc(&self) -> &Table {
        &self.doc
    }

    /// Loads the scenario with `overrides` applied in order.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] for a path that cannot be set (an index out of range, a key
    /// under a value that is not a table); [`ScenarioError::Parse`] or `Invalid` when the
    /// result does not match the schema (an unknown key, a wrong type, an unknown policy
    /// name) or is out of range. Messages name the override.
    pub fn load(&self, overrides: &[Override]) -> Result<Loaded, ScenarioError> {
        if overrides.is_empty() {
            return super::parse(&self.text, &self.origin, self.base_dir.clone());
        }
        let mut doc = self.doc.clone();
        for o in overrides {
            set(&mut doc, &o.path, o.value.clone()).map_err(|message| ScenarioError::Invalid {
                origin: self.origin.clone(),
                field: o.path.clone(),
                message,
            })?;
        }
        let labels: Vec<String> = overrides.iter().map(Override::label).collect();
        let origin = format!("{} with {}", self.origin, labels.join(", "));
        super::parse_value(Value::Table(doc), &origin, self.base_dir.clone())
    }
}

fn parse_path(path: &str) -> Result<Vec<(String, Vec<usize>)>, String> {
    path.split('.')
        .map(|seg| {
            let (key, rest) = match seg.find('[') {
                Some(i) => (&seg[..i], &seg[i..]),
                None => (seg, ""),
            };
            if key.is_empty() {
                return Err(format!("empty key in path `{path}`"));
            }
            let mut idx = Vec::new();
            let mut r = rest;
            while !r.is_empty() {
                let close = r
                    .find(']')
                    .filter(|_| r.starts_with('['))
                    .ok_or_else(|| format!("bad index in `{seg}` (write key[0])"))?;
                let n: usize = r[1..close]
                    .parse()
                    .map_err(|_| format!("bad index in `{seg}` (write key[0])"))?;
                idx.push(n);
                r = &r[close + 1..];
            }
            Ok((key.to_string(), idx))
        })
        .collect()
}

fn merge(slot: &mut Value, value: Value) {
    match (slot, value) {
        (Value::Table(old), Value::Table(new)) => {
            for (k, v) in new {
                old.insert(k, v);
            }
        }
        (slot, value) => *slot = value,
    }
}

/// Sets `path` to `value` in `doc` (see the module docs).
///
/// # Errors
/// A message naming the part of the path that cannot be followed.
pub fn set(doc: &mut Table, path: &str, value: Value) -> Result<(), String> {
    let segs = parse_path(path)?;
    let mut cur: &mut Table = doc;
    let mut walked = String::new();
    for (n, (key, idx)) in segs.iter().enumerate() {
        let last = n + 1 == segs.len();
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(key);
        let slot: &mut Value = if idx.is_empty() {
            if last {
                match cur.get_mut(key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        cur.insert(key.clone(), value);
                    }
                }
                return Ok(());
            }
            cur.entry(key.clone())
                .or_insert_with(|| Value::Table(Table::new()))
        } else {
            let mut v = cur.get_mut(key).ok_or_else(|| {
                format!("`{walked}` is not in the scenario, so it cannot be indexed")
            })?;
            for &i in idx {
                let arr = v
                    .as_array_mut()
                    .ok_or_else(|| format!("`{walked}` is not an array"))?;
                let len = arr.len();
                v = arr.get_mut(i).ok_or_else(|| {
                    format!("index {i} is out of range: `{walked}` has {len} entries")
                })?;
                walked.push_str(&format!("[{i}]"));
            }
            if last {
                merge(v, value);
                return Ok(());
            }
            v
        };
        cur = slot
            .as_table_mut()
            .ok_or_else(|| format!("`{walked}` is not a table"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Table {
        toml::from_str("a = 1\n[p]\nx = \"u\"\ny = \"v\"\n[[c]]\nn = 1\n[[c]]\nn = 2\n").unwrap()
    }

    #[test]
    fn set_paths() {
        let mut d = doc();
        set(&mut d, "p.x", Value::String("w".into())).unwrap();
        set(&mut d, "c[1].n", Value::Integer(5)).unwrap();
        set(&mut d, "new.deep.k", Value::Float(0.5)).unwrap();
        set(&mut d, "p", parse_value_text("{ y = \"z\" }")).unwrap();
        assert_eq!(d["p"]["x"].as_str(), Some("w"));
        assert_eq!(d["p"]["y"].as_str(), Some("z"));
        assert_eq!(d["c"][1]["n"].as_integer(), Some(5));
        assert_eq!(d["new"]["deep"]["k"].as_float(), Some(0.5));
        assert!(set(&mut d, "c[2].n", Value::Integer(1))
            .unwrap_err()
            .contains("out of range"));
        assert!(set(&mut d, "a.b", Value::Integer(1))
            .unwrap_err()
            .contains("not a table"));
    }

    #[test]
    fn values_and_labels() {
        assert_eq!(
            parse_value_text("best-fit"),
            Value::String("best-fit".into())
        );
        assert_eq!(parse_value_text("0.5"), Value::Float(0.5));
        assert_eq!(parse_value_text("\"7\""), Value::String("7".into()));
        assert_eq!(
            value_label(&parse_value_text("{ b = 1, a = \"x\" }")),
            "a=x+b=1"
        );
        assert_eq!(Override::parse("x.y=2").unwrap().label(), "x.y=2");
        assert!(Override::parse("novalue").is_err());
    }

    #[test]
    fn unknown_paths_are_errors() {
        let src = Source::read(None).unwrap();
        let ok = src
            .load(&[Override::parse("workload.synthetic.arrival_rate_per_hour=10").unwrap()])
            .unwrap();
        assert_eq!(
            ok.scenario
                .workload
                .synthetic
                .unwrap()
                .arrival_rate_per_hour,
            10.0
        );
        let err = src
            .load(&[Override::parse("workload.synthetic.arival_rate=10").unwrap()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("arival_rate"), "{err}");
        let err = src
            .load(&[Override::parse("policy.placement=bestest-fit").unwrap()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("bestest-fit"), "{err}");
    }
}
