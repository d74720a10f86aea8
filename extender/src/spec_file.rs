//! `--spec FILE`: the scheduler configuration a study was run with, loaded into the
//! service. The file is a scenario's `[policy]` table on its own (TOML, or JSON when the
//! name ends in `.json`), or a whole scenario file, of which the `[policy]` table is read.

use std::path::Path;

use fleetsim_policies::SchedulerSpec;

/// Largest spec file read, bytes (a `[policy]` table is a few hundred bytes; a scenario a
/// few kilobytes).
pub const MAX_SPEC_BYTES: u64 = 1 << 20;

/// Reads and checks a spec file.
///
/// # Errors
/// A message naming the file: unreadable, over [`MAX_SPEC_BYTES`], not TOML/JSON, an
/// unknown key or policy name (TOML errors give the line), or a bad value
/// ([`SchedulerSpec::validate`], naming the field).
pub fn load(path: &Path) -> Result<SchedulerSpec, String> {
    let shown = path.display();
    let len = std::fs::metadata(path)
        .map_err(|e| format!("{shown}: {e}"))?
        .len();
    if len > MAX_SPEC_BYTES {
        return Err(format!(
            "{shown}: {len} bytes, more than the {MAX_SPEC_BYTES}-byte limit of a spec file"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let spec = parse(&text, json).map_err(|e| format!("{shown}: {e}"))?;
    spec.validate()
        .map_err(|e| format!("{shown}: policy.{}: {}", e.field, e.message))?;
    Ok(spec)
}

/// Parses a spec from text: a `[policy]` table, or a document with a `policy` table (a
/// scenario), whose other keys are not read.
///
/// # Errors
/// The parser's message (TOML: with line and column).
pub fn parse(text: &str, json: bool) -> Result<SchedulerSpec, String> {
    if json {
        let mut v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if let Some(p) = v.get_mut("policy").filter(|p| p.is_object()) {
            v = p.take();
        }
        serde_json::from_value(v).map_err(|e| e.to_string())
    } else {
        let mut t: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        if let Some(toml::Value::Table(p)) = t.remove("policy") {
            return p.try_into().map_err(|e: toml::de::Error| e.to_string());
        }
        toml::from_str(text).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetsim_policies::PlacementKind;

    #[test]
    fn reads_a_policy_table_a_scenario_and_json() {
        let a = parse("placement = \"fgd\"\nbackfill = \"easy\"\n", false).unwrap();
        assert_eq!(a.placement.kind(), PlacementKind::Fgd);
        let b = parse(
            "name = \"x\"\n[fleet]\ncells = []\n[policy]\nplacement = \"fgd\"\nbackfill = \"easy\"\n",
            false,
        )
        .unwrap();
        assert_eq!(a, b);
        let c = parse(
            r#"{"policy": {"placement": "fgd", "backfill": "easy"}}"#,
            true,
        )
        .unwrap();
        assert_eq!(a, c);
    }

    #[test]
    fn errors_name_the_problem() {
        let e = parse("placement = \"bestfit\"\n", false).unwrap_err();
        assert!(
            e.contains("line 1") && e.contains("unknown PlacementKind `bestfit`"),
            "{e}"
        );
        let e = parse("[policy]\nplasement = \"fgd\"\n", false).unwrap_err();
        assert!(e.contains("unknown field `plasement`"), "{e}");
        let dir = std::env::temp_dir().join(format!("fleetsim-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("p.toml");
        std::fs::write(&f, "[preemption]\ngrace_s = -1\n").unwrap();
        let e = load(&f).unwrap_err();
        assert!(
            e.ends_with("policy.preemption.grace_s: must be a number ≥ 0, got -1"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
