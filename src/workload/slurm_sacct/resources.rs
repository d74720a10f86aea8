//! A job's resources from whichever `sacct` fields the export has, resource by resource:
//! the allocated trackable resources (`AllocTRES`), else the requested ones (`ReqTRES`),
//! else the older and trimmed formats' own columns. Each choice is reported per job
//! (`cpus_from.*`, `memory_from.*`, `nodes_from.*`, `gpus_from.*` notes of
//! `fleetsim trace inspect`).
//!
//! | resource | from, in order |
//! |---|---|
//! | CPUs | `AllocTRES` `cpu`, `ReqTRES` `cpu`, `NCPUS`, `AllocCPUS`, `ReqCPUS` |
//! | nodes | `AllocTRES` `node`, `ReqTRES` `node`, `NNodes`, `AllocNodes`, `ReqNodes` |
//! | memory | `AllocTRES` `mem`, `ReqTRES` `mem`, `ReqMem` |
//! | GPUs | `AllocTRES` `gres/gpu`, `ReqTRES` `gres/gpu`, `AllocGRES` `gpu`, `ReqGRES` `gpu` |
//!
//! A TRES string that does not name a resource leaves it to the next source (sites that do
//! not list `gres/gpu` in `AccountingStorageTRES` have GPUs only in the GRES columns of Slurm
//! ≤ 20.02). Units and modelling choices:
//! * TRES `mem` and `ReqMem` take a `K`, `M`, `G`, `T` or `P` suffix (none: MiB), rounded up
//!   to MiB. `ReqMem` ending in `c` is per CPU (× the CPUs), in `n` per node (× the nodes):
//!   Slurm before 21.08; without either it is the job's whole request (Slurm 21.08 on, where
//!   it equals `ReqTRES` `mem`).
//! * GPUs: `gres/gpu=N`, else the sum of the typed `gres/gpu:TYPE=N`. In the GRES columns
//!   (`gpu:2`, `gpu:v100:2`, `gpu:2(IDX:0-1)`, a bare `gpu` = 1), `AllocGRES` is the job's
//!   total and `ReqGRES` is per node, as `--gres` is (× the nodes).
//! * A resource no source gives is 0 (nodes: 1).

use super::parse_mem_mib;
use crate::workload::native::parse_count;

/// The fields a job's resources may come from (trimmed, empty = absent), by name.
#[derive(Default)]
pub(super) struct Sources<'a> {
    pub alloc_tres: Option<&'a str>,
    pub req_tres: Option<&'a str>,
    pub ncpus: Option<&'a str>,
    pub alloc_cpus: Option<&'a str>,
    pub req_cpus: Option<&'a str>,
    pub nnodes: Option<&'a str>,
    pub alloc_nodes: Option<&'a str>,
    pub req_nodes: Option<&'a str>,
    pub req_mem: Option<&'a str>,
    pub alloc_gres: Option<&'a str>,
    pub req_gres: Option<&'a str>,
}

/// A job's resources, and the field each came from (`none` when no field gave it).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Resources {
    pub cpu: u64,
    pub mem_mib: u64,
    pub nodes: u64,
    pub gpus: u64,
    /// GPU types named, with counts (`gres/gpu:a100=4`, `gpu:v100:2`).
    pub gpu_types: Vec<(String, u64)>,
    pub cpu_from: &'static str,
    pub mem_from: &'static str,
    pub nodes_from: &'static str,
    pub gpus_from: &'static str,
}

/// One TRES string, each resource only if named.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Tres {
    pub cpu: Option<u64>,
    pub mem_mib: Option<u64>,
    pub nodes: Option<u64>,
    pub gpus: Option<u64>,
    pub gpu_types: Vec<(String, u64)>,
}

/// Parses `cpu=8,mem=64G,node=2,gres/gpu=4,gres/gpu:a100=4,billing=8` (other TRES ignored).
pub(super) fn parse_tres(text: &str) -> Result<Tres, String> {
    let mut t = Tres::default();
    let mut typed: Option<u64> = None;
    let mut untyped = None;
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("`{item}` is not `name=value`"))?;
        match k {
            "cpu" => t.cpu = Some(parse_count(v)?),
            "mem" => t.mem_mib = Some(parse_mem_mib(v)?),
            "node" => t.nodes = Some(parse_count(v)?),
            "gres/gpu" => untyped = Some(parse_count::<u64>(v)?),
            _ => {
                if let Some(ty) = k.strip_prefix("gres/gpu:") {
                    let n: u64 = parse_count(v)?;
                    typed = Some(
                        typed
                            .unwrap_or(0)
                            .checked_add(n)
                            .ok_or_else(|| format!("`{item}` is out of range"))?,
                    );
                    t.gpu_types.push((ty.to_string(), n));
                }
            }
        }
    }
    t.gpus = untyped.or(typed);
    Ok(t)
}

/// GPU types named, with counts (`gres/gpu:a100=4`, `gpu:v100:2`).
pub(super) type GpuTypes = Vec<(String, u64)>;

/// GPUs of a GRES string (`gpu:2`, `gpu:tesla:2(IDX:0-1),mic:1`, `gpu`): their count (`None`
/// when no `gpu` entry) and types.
pub(super) fn parse_gres(text: &str) -> Result<(Option<u64>, GpuTypes), String> {
    let mut count: Option<u64> = None;
    let mut types = Vec::new();
    // Items are separated by commas outside parentheses (`(IDX:0,1)` holds commas).
    let mut depth = 0i32;
    let mut start = 0;
    let mut items = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    for item in items.into_iter().map(str::trim).filter(|s| !s.is_empty()) {
        let item = item.split('(').next().unwrap_or("");
        let item = item.strip_prefix("gres/").unwrap_or(item);
        let mut parts = item.split(':');
        if parts.next() != Some("gpu") {
            continue;
        }
        let rest: Vec<&str> = parts.collect();
        let (ty, n) = match rest.as_slice() {
            [] => (None, 1),
            [n] if n.bytes().all(|b| b.is_ascii_digit()) => (None, parse_count::<u64>(n)?),
            [ty] => (Some(*ty), 1),
            [ty, n] => (Some(*ty), parse_count::<u64>(n)?),
            _ => return Err(format!("`{item}` is not a GRES `gpu[:TYPE][:COUNT]`")),
        };
        count = Some(
            count
                .unwrap_or(0)
                .checked_add(n)
                .ok_or_else(|| format!("`{item}` is out of range"))?,
        );
        if let Some(ty) = ty {
            types.push((ty.to_string(), n));
        }
    }
    Ok((count, types))
}

/// The first source that gives a value, and its name.
fn first<T, const N: usize>(options: [(Option<T>, &'static str); N]) -> Option<(T, &'static str)> {
    options
        .into_iter()
        .find_map(|(v, name)| v.map(|v| (v, name)))
}

/// Resolves a job's resources (see the module docs). Errors name the field.
pub(super) fn resolve(s: &Sources) -> Result<Resources, (&'static str, String)> {
    let alloc = s
        .alloc_tres
        .map(parse_tres)
        .transpose()
        .map_err(|m| ("AllocTRES", m))?
        .unwrap_or_default();
    let req = s
        .req_tres
        .map(parse_tres)
        .transpose()
        .map_err(|m| ("ReqTRES", m))?
        .unwrap_or_default();
    let count = |v: Option<&str>, f: &'static str| -> Result<Option<u64>, (&'static str, String)> {
        v.map(|t| parse_count::<u64>(t).map_err(|m| (f, m)))
            .transpose()
    };
    let (cpu, cpu_from) = first([
        (alloc.cpu, "AllocTRES"),
        (req.cpu, "ReqTRES"),
        (count(s.ncpus, "NCPUS")?, "NCPUS"),
        (count(s.alloc_cpus, "AllocCPUS")?, "AllocCPUS"),
        (count(s.req_cpus, "ReqCPUS")?, "ReqCPUS"),
    ])
    .unwrap_or((0, "none"));
    let (nodes, nodes_from) = first([
        (alloc.nodes, "AllocTRES"),
        (req.nodes, "ReqTRES"),
        (count(s.nnodes, "NNodes")?, "NNodes"),
        (count(s.alloc_nodes, "AllocNodes")?, "AllocNodes"),
        (count(s.req_nodes, "ReqNodes")?, "ReqNodes"),
    ])
    .unwrap_or((1, "none"));
    let req_mem = s
        .req_mem
        .map(|t| req_mem_mib(t, cpu, nodes))
        .transpose()
        .map_err(|m| ("ReqMem", m))?;
    let (mem_mib, mem_from) = first([
        (alloc.mem_mib, "AllocTRES"),
        (req.mem_mib, "ReqTRES"),
        (
            req_mem.map(|(m, _)| m),
            req_mem.map_or("ReqMem", |(_, f)| f),
        ),
    ])
    .unwrap_or((0, "none"));
    let alloc_gres = s
        .alloc_gres
        .map(parse_gres)
        .transpose()
        .map_err(|m| ("AllocGRES", m))?;
    let req_gres = s
        .req_gres
        .map(parse_gres)
        .transpose()
        .map_err(|m| ("ReqGRES", m))?;
    let (gpus, gpu_types, gpus_from) = if let Some(g) = alloc.gpus {
        (g, alloc.gpu_types, "AllocTRES")
    } else if let Some(g) = req.gpus {
        (g, req.gpu_types, "ReqTRES")
    } else if let Some((Some(g), types)) = alloc_gres {
        (g, types, "AllocGRES")
    } else if let Some((Some(g), types)) = req_gres {
        let per_node = nodes.max(1);
        let total = g.checked_mul(per_node).ok_or((
            "ReqGRES",
            format!("{g} GPUs per node × {per_node} nodes is out of range"),
        ))?;
        let types = types.into_iter().map(|(t, n)| (t, n * per_node)).collect();
        (total, types, "ReqGRES_per_node")
    } else {
        (0, Vec::new(), "none")
    };
    Ok(Resources {
        cpu,
        mem_mib,
        nodes,
        gpus,
        gpu_types,
        cpu_from,
        mem_from,
        nodes_from,
        gpus_from,
    })
}

/// `ReqMem` in MiB for the whole job, and how it was read: `2800Mc` per CPU, `180000Mn` per
/// node, `4000M` the job's.
fn req_mem_mib(text: &str, cpus: u64, nodes: u64) -> Result<(u64, &'static str), String> {
    let (amount, mul, how) = if let Some(a) = text.strip_suffix('c') {
        (a, cpus.max(1), "ReqMem_per_cpu")
    } else if let Some(a) = text.strip_suffix('n') {
        (a, nodes.max(1), "ReqMem_per_node")
    } else {
        (text, 1, "ReqMem")
    };
    let mib = parse_mem_mib(amount)?
        .checked_mul(mul)
        .ok_or_else(|| format!("`{text}` × {mul} is out of range"))?;
    Ok((mib, how))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tres_and_gres() {
        let t = parse_tres("billing=8,cpu=16,gres/gpu:a100=4,gres/gpu=4,mem=500G,node=2").unwrap();
        assert_eq!(
            (t.cpu, t.gpus, t.nodes, t.mem_mib),
            (Some(16), Some(4), Some(2), Some(512_000))
        );
        assert_eq!(
            parse_tres("gres/gpu:h100=2,gres/gpu:a100=1").unwrap().gpus,
            Some(3)
        );
        assert_eq!(parse_tres("cpu=4").unwrap().gpus, None);
        assert!(parse_tres("cpu=x").is_err() && parse_tres("cpu").is_err());
        assert_eq!(parse_gres("gpu:2").unwrap(), (Some(2), vec![]));
        assert_eq!(
            parse_gres("gpu:v100:2(IDX:0,1),mic:1").unwrap(),
            (Some(2), vec![("v100".into(), 2)])
        );
        assert_eq!(parse_gres("gpu").unwrap(), (Some(1), vec![]));
        assert_eq!(parse_gres("mic:1").unwrap(), (None, vec![]));
        assert!(parse_gres("gpu:a:b:c").is_err());
    }

    /// Fallbacks, resource by resource. `2800Mc` × 12 CPUs = 33,600 MiB; `180000Mn` × 2
    /// nodes = 360,000 MiB; `ReqGRES` `gpu:4` per node × 2 nodes = 8 GPUs.
    #[test]
    fn each_resource_falls_back_on_its_own() {
        let r = resolve(&Sources {
            alloc_tres: Some("cpu=12,node=1"),
            req_tres: Some("cpu=12,mem=33600M,node=1"),
            alloc_gres: Some("gpu:2"),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!((r.cpu, r.mem_mib, r.nodes, r.gpus), (12, 33_600, 1, 2));
        assert_eq!(
            (r.cpu_from, r.mem_from, r.nodes_from, r.gpus_from),
            ("AllocTRES", "ReqTRES", "AllocTRES", "AllocGRES")
        );
        let r = resolve(&Sources {
            ncpus: Some("12"),
            nnodes: Some("1"),
            req_mem: Some("2800Mc"),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!((r.cpu, r.mem_mib, r.gpus), (12, 33_600, 0));
        assert_eq!((r.mem_from, r.gpus_from), ("ReqMem_per_cpu", "none"));
        let r = resolve(&Sources {
            req_cpus: Some("80"),
            req_nodes: Some("2"),
            req_mem: Some("180000Mn"),
            req_gres: Some("gpu:4"),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!((r.cpu, r.nodes, r.mem_mib, r.gpus), (80, 2, 360_000, 8));
        assert_eq!(
            (r.cpu_from, r.nodes_from, r.mem_from, r.gpus_from),
            ("ReqCPUS", "ReqNodes", "ReqMem_per_node", "ReqGRES_per_node")
        );
        let r = resolve(&Sources {
            req_mem: Some("0n"),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!((r.mem_mib, r.nodes, r.nodes_from), (0, 1, "none"));
        assert_eq!(
            resolve(&Sources {
                ncpus: Some("x"),
                ..Sources::default()
            })
            .unwrap_err()
            .0,
            "NCPUS"
        );
    }
}
