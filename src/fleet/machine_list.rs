//! Readers for public machine lists: the Alibaba openb node lists and the Philly
//! `cluster_machine_list`.
//!
//! # Alibaba openb (`openb_node_list_gpu_node.csv`, `openb_node_list_all_node.csv`)
//!
//! CSV, header `sn,cpu_milli,memory_mib,gpu,model` (any order; unknown or duplicated columns
//! are errors). One node per row: `sn` name, `cpu_milli` milli-cores, `memory_mib` MiB, `gpu`
//! accelerator count, `model` accelerator model (empty for CPU-only nodes). Mapped one to one
//! onto [`MachineRow`]. Errors (naming file, line, field): a non-numeric or negative number;
//! a `model` not in the accelerator catalog; `gpu` > 0 with an empty `model`; a `model` with
//! `gpu` = 0; `gpu` above [`fleetsim_policies::resources::MAX_GPUS_PER_NODE`]; a node with
//! zero `gpu`, `cpu_milli` and `memory_mib`; an empty or repeated `sn`.
//!
//! # Philly (`cluster_machine_list.csv`)
//!
//! CSV, header `machineId, number of GPUs, single GPU mem` (spaces after the commas; every
//! field is trimmed), values like `m0,2, 12GB`. The list names neither the GPU model nor CPU
//! or memory, so these are **assumptions** ([`PhillyMachineAssumptions`]): the model is looked
//! up by GPU memory size (default 12 GB → `K80`, 24 GB → `P40`: NVIDIA parts of 2017 with
//! those memory sizes, both in the catalog — a guess, not a fact of the trace), and CPU and
//! memory are a fixed amount per GPU (default 4 cores and 64 GiB, also assumed). Errors: an unknown GPU memory size (field
//! `single GPU mem`), a memory not written `<n>GB`, zero or non-numeric `number of GPUs`, an
//! empty or repeated `machineId`.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

use crate::catalog;
use crate::workload::native::{csv_reader, map_columns, next_record, parse_count};
use crate::workload::TraceError;

/// One machine from a machine list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineRow {
    /// Machine name, as the list gives it.
    pub name: String,
    /// Number of accelerators.
    pub gpus: u32,
    /// Accelerator model (catalog name); `None` for a CPU-only node.
    pub model: Option<String>,
    /// CPU capacity, milli-cores.
    pub cpu_milli: u64,
    /// Memory capacity, MiB.
    pub mem_mib: u64,
}

const OPENB_COLUMNS: [&str; 5] = ["sn", "cpu_milli", "memory_mib", "gpu", "model"];

/// Reads an Alibaba openb node list (see the module docs), in file order.
///
/// # Errors
/// [`TraceError::Io`] when the file cannot be read; [`TraceError::MissingColumn`] for a
/// missing column; [`TraceError::BadField`] for an unknown column or a bad value (see the
/// module docs); [`TraceError::BadRow`] for a wrong number of fields.
pub fn read_openb_nodes(path: &Path) -> Result<Vec<MachineRow>, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &OPENB_COLUMNS, &OPENB_COLUMNS, None)?;
    let mut rec = csv::StringRecord::new();
    let mut out = Vec::new();
    let mut names = BTreeSet::new();
    while let Some(line) = next_record(path, &mut rdr, &mut rec) {
        let line = line?;
        let bad = |k: usize, m: String| TraceError::field(path, line, OPENB_COLUMNS[k], m);
        let need = |k: usize| {
            cols.get(&rec, k)
                .ok_or_else(|| bad(k, "empty (required)".to_string()))
        };
        let name = need(0)?.to_string();
        if !names.insert(name.clone()) {
            return Err(bad(0, format!("node `{name}` appears twice")));
        }
        let cpu_milli: u64 = parse_count(need(1)?).map_err(|m| bad(1, m))?;
        let mem_mib: u64 = parse_count(need(2)?).map_err(|m| bad(2, m))?;
        let gpus: u32 = parse_count(need(3)?).map_err(|m| bad(3, m))?;
        if gpus > fleetsim_policies::resources::MAX_GPUS_PER_NODE {
            return Err(bad(
                3,
                format!(
                    "{gpus} exceeds the {} accelerators a node may have",
                    fleetsim_policies::resources::MAX_GPUS_PER_NODE
                ),
            ));
        }
        let model = cols.get(&rec, 4).map(str::to_string);
        match (&model, gpus) {
            (Some(m), g) if g > 0 => {
                catalog::lookup(m).map_err(|e| bad(4, e))?;
            }
            (Some(m), _) => {
                return Err(bad(4, format!("model `{m}` given for a node with 0 GPUs")))
            }
            (None, g) if g > 0 => {
                return Err(bad(4, format!("empty for a node with {g} GPUs")));
            }
            (None, _) => {}
        }
        if gpus == 0 && cpu_milli == 0 && mem_mib == 0 {
            return Err(bad(
                3,
                "the node has zero gpu, cpu_milli and memory_mib".to_string(),
            ));
        }
        out.push(MachineRow {
            name,
            gpus,
            model,
            cpu_milli,
            mem_mib,
        });
    }
    Ok(out)
}

/// What the Philly machine list does not say, assumed.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PhillyMachineAssumptions {
    /// GPU model by the list's per-GPU memory in GB (catalog names).
    pub model_by_gpu_mem_gb: Vec<(u32, String)>,
    /// CPU per GPU, milli-cores.
    pub cpu_milli_per_gpu: u64,
    /// Memory per GPU, MiB.
    pub mem_mib_per_gpu: u64,
}

impl Default for PhillyMachineAssumptions {
    /// 12 GB → `K80`, 24 GB → `P40`; 4 cores (4000 milli) and 64 GiB (65,536 MiB) per GPU.
    fn default() -> Self {
        PhillyMachineAssumptions {
            model_by_gpu_mem_gb: vec![(12, "K80".to_string()), (24, "P40".to_string())],
            cpu_milli_per_gpu: 4000,
            mem_mib_per_gpu: 64 * 1024,
        }
    }
}

const PHILLY_COLUMNS: [&str; 3] = ["machineId", "number of GPUs", "single GPU mem"];

/// Reads the Philly `cluster_machine_list` (see the module docs), in file order, applying
/// `assume` for the model, CPU and memory.
///
/// # Errors
/// [`TraceError::Io`], [`TraceError::MissingColumn`], [`TraceError::BadRow`] as for any CSV;
/// [`TraceError::BadField`] for an unknown column, an empty or repeated `machineId`, a zero or
/// non-numeric `number of GPUs`, a `single GPU mem` not written `<n>GB`, a memory size with
/// no model in `assume`, a model of `assume` that is not in the catalog, or a capacity that
/// overflows.
pub fn read_philly_machines(
    path: &Path,
    assume: &PhillyMachineAssumptions,
) -> Result<Vec<MachineRow>, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &PHILLY_COLUMNS, &PHILLY_COLUMNS, None)?;
    let mut rec = csv::StringRecord::new();
    let mut out = Vec::new();
    let mut names = BTreeSet::new();
    while let Some(line) = next_record(path, &mut rdr, &mut rec) {
        let line = line?;
        let bad = |k: usize, m: String| TraceError::field(path, line, PHILLY_COLUMNS[k], m);
        let need = |k: usize| {
            cols.get(&rec, k)
                .ok_or_else(|| bad(k, "empty (required)".to_string()))
        };
        let name = need(0)?.to_string();
        if !names.insert(name.clone()) {
            return Err(bad(0, format!("machine `{name}` appears twice")));
        }
        let gpus: u32 = parse_count(need(1)?).map_err(|m| bad(1, m))?;
        if gpus == 0 || gpus > fleetsim_policies::resources::MAX_GPUS_PER_NODE {
            return Err(bad(
                1,
                format!(
                    "{gpus} is outside 1..={}",
                    fleetsim_policies::resources::MAX_GPUS_PER_NODE
                ),
            ));
        }
        let mem_text = need(2)?;
        let gb: u32 = mem_text
            .strip_suffix("GB")
            .or_else(|| mem_text.strip_suffix("gb"))
            .map(str::trim)
            .ok_or_else(|| bad(2, format!("`{mem_text}` is not written `<n>GB`")))
            .and_then(|n| parse_count(n).map_err(|m| bad(2, m)))?;
        let model = assume
            .model_by_gpu_mem_gb
            .iter()
            .find(|(g, _)| *g == gb)
            .map(|(_, m)| m.clone())
            .ok_or_else(|| {
                let known: Vec<String> = assume
                    .model_by_gpu_mem_gb
                    .iter()
                    .map(|(g, m)| format!("{g} GB → {m}"))
                    .collect();
                bad(
                    2,
                    format!(
                        "no GPU model is assumed for {gb} GB GPUs (assumed: {})",
                        known.join(", ")
                    ),
                )
            })?;
        catalog::lookup(&model).map_err(|e| bad(2, format!("assumed model: {e}")))?;
        let per = |x: u64| {
            x.checked_mul(u64::from(gpus))
                .ok_or_else(|| bad(1, "capacity overflows".to_string()))
        };
        out.push(MachineRow {
            name,
            gpus,
            model: Some(model),
            cpu_milli: per(assume.cpu_milli_per_gpu)?,
            mem_mib: per(assume.mem_mib_per_gpu)?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const OPENB_H: &str = "sn,cpu_milli,memory_mib,gpu,model\n";

    #[test]
    fn openb_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "nodes.csv",
            &format!("{OPENB_H}n0,32000,262144,0,\nn1,96000,786432,8,G2\nn2,64000,262144,2,T4\n"),
        );
        let rows = read_openb_nodes(&p).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].model, None);
        assert_eq!(
            rows[1],
            MachineRow {
                name: "n1".into(),
                gpus: 8,
                model: Some("G2".into()),
                cpu_milli: 96_000,
                mem_mib: 786_432
            }
        );
    }

    #[test]
    fn openb_bad_rows() {
        let cases = [
            ("n1,96000,786432,8,H9000\n", "model"),
            ("n1,96000,786432,8,\n", "model"),
            ("n1,96000,786432,0,T4\n", "model"),
            ("n1,0,0,0,\n", "gpu"),
            ("n1,-1,0,0,\n", "cpu_milli"),
            ("n1,1,x,0,\n", "memory_mib"),
            ("n1,1,1,65,G2\n", "gpu"),
            ("n0,1,1,0,\n", "sn"),
            (",1,1,0,\n", "sn"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (i, (row, field)) in cases.iter().enumerate() {
            let name = format!("bad{i}.csv");
            let p = write(&dir, &name, &format!("{OPENB_H}n0,1,1,0,\n{row}"));
            let e = read_openb_nodes(&p).expect_err(row).to_string();
            assert!(
                e.contains(&name) && e.contains("line 3:") && e.contains(&format!("`{field}`")),
                "{e}"
            );
        }
        let p = write(&dir, "short.csv", "sn,cpu_milli,memory_mib,gpu\n");
        assert!(matches!(
            read_openb_nodes(&p),
            Err(TraceError::MissingColumn { column, .. }) if column == "model"
        ));
    }

    const PHILLY_H: &str = "machineId, number of GPUs, single GPU mem\n";

    #[test]
    fn philly_machines() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "m.csv",
            &format!("{PHILLY_H}m0,2, 12GB\nm1,8, 24GB\n"),
        );
        let rows = read_philly_machines(&p, &PhillyMachineAssumptions::default()).unwrap();
        assert_eq!(
            rows,
            [
                MachineRow {
                    name: "m0".into(),
                    gpus: 2,
                    model: Some("K80".into()),
                    cpu_milli: 8000,
                    mem_mib: 131_072
                },
                MachineRow {
                    name: "m1".into(),
                    gpus: 8,
                    model: Some("P40".into()),
                    cpu_milli: 32_000,
                    mem_mib: 524_288
                },
            ]
        );
        for (row, field) in [
            ("m2,8, 16GB\n", "single GPU mem"),
            ("m2,8, 24\n", "single GPU mem"),
            ("m2,0, 24GB\n", "number of GPUs"),
            ("m2,x, 24GB\n", "number of GPUs"),
            ("m0,2, 12GB\n", "machineId"),
        ] {
            let p = write(&dir, "bad.csv", &format!("{PHILLY_H}m0,2, 12GB\n{row}"));
            let e = read_philly_machines(&p, &PhillyMachineAssumptions::default())
                .expect_err(row)
                .to_string();
            assert!(
                e.contains("bad.csv") && e.contains("line 3:") && e.contains(&format!("`{field}`")),
                "{e}"
            );
        }
        let mut bad_model = PhillyMachineAssumptions::default();
        bad_model.model_by_gpu_mem_gb[0].1 = "K8000".into();
        assert!(read_philly_machines(&p, &bad_model).is_err());
    }

    fn public(rel: &str) -> Option<PathBuf> {
        crate::public_trace(rel)
    }

    #[test]
    fn public_machine_lists() {
        if let Some(p) = public("alibaba-gpu-2023/openb_node_list_gpu_node.csv") {
            let rows = read_openb_nodes(&p).unwrap();
            assert_eq!(rows.len(), 1213);
            assert_eq!(rows.iter().map(|r| u64::from(r.gpus)).sum::<u64>(), 6212);
            assert!(rows.iter().all(|r| r.gpus > 0));
            let g2: u32 = rows
                .iter()
                .filter(|r| r.model.as_deref() == Some("G2"))
                .map(|r| r.gpus)
                .sum();
            assert_eq!(g2, 4392);
        }
        if let Some(p) = public("alibaba-gpu-2023/openb_node_list_all_node.csv") {
            let rows = read_openb_nodes(&p).unwrap();
            assert_eq!(rows.len(), 1523);
            assert_eq!(rows.iter().filter(|r| r.gpus == 0).count(), 310);
            assert_eq!(rows.iter().map(|r| u64::from(r.gpus)).sum::<u64>(), 6212);
        }
        if let Some(p) = public("philly/cluster_machine_list.csv") {
            let rows = read_philly_machines(&p, &PhillyMachineAssumptions::default()).unwrap();
            assert_eq!(rows.len(), 552);
            assert_eq!(rows.iter().filter(|r| r.gpus == 2).count(), 321);
            assert_eq!(rows.iter().filter(|r| r.gpus == 8).count(), 231);
            assert_eq!(rows.iter().map(|r| u64::from(r.gpus)).sum::<u64>(), 2490);
            assert!(rows
                .iter()
                .all(|r| (r.gpus == 2) == (r.model.as_deref() == Some("K80"))));
        }
    }

    #[test]
    fn assumptions_deserialize_from_toml() {
        let a: PhillyMachineAssumptions =
            toml::from_str("model_by_gpu_mem_gb = [[12, \"K80\"], [16, \"P100\"]]").unwrap();
        assert_eq!(a.model_by_gpu_mem_gb[1], (16, "P100".to_string()));
        assert_eq!(a.cpu_milli_per_gpu, 4000);
        assert!(toml::from_str::<PhillyMachineAssumptions>("cpus = 3").is_err());
    }
}
