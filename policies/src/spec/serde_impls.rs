//! Serde for the stage specs: a bare name, or a table with `name` and the policy's
//! parameters; written back as a bare name when the parameters are the defaults.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::registry::{
    CellSelectKind, CellSelectSpec, PlacementKind, PlacementSpec, QueueOrderKind, QueueOrderSpec,
};

/// Serde for one stage spec: a bare name parses through the stage's name enum (whose error
/// lists the valid names) into the policy with default parameters; a table goes to the
/// spec's derived, internally tagged form (`name` plus the variant's fields, unknown keys
/// refused). Written back as a bare name when the parameters are the defaults.
macro_rules! stage_serde {
    ($spec:ident, $kind:ident, $stage:literal) => {
        impl<'de> Deserialize<'de> for $spec {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $spec;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!(
                            "a ",
                            $stage,
                            " name, or a table with `name` and its parameters"
                        ))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$spec, E> {
                        v.parse::<$kind>().map(<$spec>::from).map_err(E::custom)
                    }
                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$spec, A::Error> {
                        <$spec>::deserialize(de::value::MapAccessDeserializer::new(map))
                    }
                }
                d.deserialize_any(V)
            }
        }

        impl Serialize for $spec {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                if *self == <$spec>::from(self.kind()) {
                    s.serialize_str(self.kind().as_str())
                } else {
                    <$spec>::serialize(self, s)
                }
            }
        }
    };
}

/// JSON Schema of a stage spec, as its serde reads it: a bare name, or a table with a `name`
/// (one of the same names) and the policy's parameters (checked when the scenario is read).
#[cfg(feature = "schema")]
macro_rules! stage_schema {
    ($spec:ident, $kind:ident, $stage:literal) => {
        impl schemars::JsonSchema for $spec {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($spec).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let names: Vec<&str> = $kind::NAMES.to_vec();
                schemars::json_schema!({
                    "description": concat!(
                        "A ",
                        $stage,
                        " name, or a table with `name` and its parameters"
                    ),
                    "anyOf": [
                        { "type": "string", "enum": names },
                        {
                            "type": "object",
                            "required": ["name"],
                            "properties": { "name": { "type": "string", "enum": names } }
                        }
                    ]
                })
            }
        }
    };
}

#[cfg(feature = "schema")]
stage_schema!(QueueOrderSpec, QueueOrderKind, "queue order");
#[cfg(feature = "schema")]
stage_schema!(PlacementSpec, PlacementKind, "placement");
#[cfg(feature = "schema")]
stage_schema!(CellSelectSpec, CellSelectKind, "cell selection");

stage_serde!(QueueOrderSpec, QueueOrderKind, "queue order");
stage_serde!(PlacementSpec, PlacementKind, "placement");
stage_serde!(CellSelectSpec, CellSelectKind, "cell selection");

#[cfg(test)]
mod tests {
    use crate::spec::SchedulerSpec;
    use crate::*;
    use crate::{CellSelectKind, PlacementKind, QueueOrderKind};

    fn parse(s: &str) -> Result<SchedulerSpec, String> {
        toml::from_str(s).map_err(|e| e.message().to_string())
    }

    #[test]
    fn bare_names_and_tables_read_alike() {
        let a = parse("queue_order = \"las\"\nplacement = \"fgd\"").unwrap();
        let b = parse("queue_order = { name = \"las\" }\nplacement = { name = \"fgd\" }").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.placement, registry::PlacementSpec::Fgd {});
        let c = parse("queue_order = { name = \"las\", thresholds_gpu_s = [1.5, 9] }").unwrap();
        assert_eq!(
            c.queue_order,
            registry::QueueOrderSpec::Las {
                thresholds_gpu_s: Some(vec![1.5, 9.0])
            }
        );
    }

    #[test]
    fn unknown_names_and_foreign_parameters_are_refused() {
        let e = parse("placement = \"bestfit\"").unwrap_err();
        assert!(
            e.contains("unknown PlacementKind `bestfit`; valid names: first-fit, best-fit"),
            "{e}"
        );
        let e = parse("queue_order = { name = \"fifo\", thresholds_gpu_s = [1] }").unwrap_err();
        assert_eq!(e, "unknown field `thresholds_gpu_s`, there are no fields");
        let e = parse("queue_order = { name = \"las\", weight_age = 1 }").unwrap_err();
        assert_eq!(e, "unknown field `weight_age`, expected `thresholds_gpu_s`");
        let e = parse("cell_selection = { name = \"best-fit\" }").unwrap_err();
        assert!(e.contains("unknown variant `best-fit`"), "{e}");
        assert!(parse("placement = { name = \"fgd\", alpha = 1 }")
            .unwrap_err()
            .contains("unknown field `alpha`"));
        assert!(parse("plasement = \"fgd\"")
            .unwrap_err()
            .contains("unknown field `plasement`"));
    }

    /// Every name reads alike as a bare name and as a one-key table (the derived table
    /// form's names agree with the name tables).
    #[test]
    fn every_name_reads_as_a_table() {
        for n in QueueOrderKind::NAMES {
            let a = parse(&format!("queue_order = \"{n}\"")).unwrap();
            let b = parse(&format!("queue_order = {{ name = \"{n}\" }}")).unwrap();
            assert_eq!(a, b, "{n}");
        }
        for n in PlacementKind::NAMES {
            let a = parse(&format!("placement = \"{n}\"")).unwrap();
            let b = parse(&format!("placement = {{ name = \"{n}\" }}")).unwrap();
            assert_eq!(a, b, "{n}");
        }
        for n in CellSelectKind::NAMES {
            let a = parse(&format!("cell_selection = \"{n}\"")).unwrap();
            let b = parse(&format!("cell_selection = {{ name = \"{n}\" }}")).unwrap();
            assert_eq!(a, b, "{n}");
        }
    }

    #[test]
    fn round_trips_through_toml_and_json() {
        let s = parse(
            "queue_order = { name = \"multifactor\", weight_age = 5, favor_small = true }\n\
             placement = \"topology-aware\"\ncell_selection = \"quota-aware\"\n\
             admission_order = \"drf\"\nbackfill = \"easy\"\n\
             [preemption]\nreclaim_within_cohort = \"any\"\ngrace_s = 30\n\
             [topology]\npreferred = \"block\"\n",
        )
        .unwrap();
        let t = toml::to_string(&s).unwrap();
        assert_eq!(parse(&t).unwrap(), s, "{t}");
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<SchedulerSpec>(&j).unwrap(), s, "{j}");
        // Default parameters are written as a bare name.
        let d = toml::to_string(&SchedulerSpec::default()).unwrap();
        assert!(d.contains("queue_order = \"fifo\"\n"), "{d}");
    }
}
