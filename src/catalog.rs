//! The accelerator catalog: every model a fleet or trace may name, and the node presets
//! (node shapes and rack sizes) a fleet section may build from.
//!
//! Figures are public vendor specifications (memory, NVLink/ICI domain, board power). Relative
//! speed is a coarse dense-training throughput factor against H100 = 1000 (per-mille); it
//! scales run times only where a scenario turns platform flexibility on. Trace codes whose
//! hardware was not disclosed (Alibaba `G2`, `G3`) carry no memory figure and speed 1000.

/// One accelerator model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accelerator {
    /// Catalog name, as scenarios and traces spell it.
    pub name: &'static str,
    /// Vendor.
    pub vendor: &'static str,
    /// Memory per accelerator, GiB (0 = not disclosed).
    pub memory_gib: u32,
    /// Relative speed, per-mille of an H100 (1000).
    pub speed_permille: u32,
    /// Accelerators in one NVLink / ICI domain (1 = no scale-up fabric beyond the device).
    pub domain_size: u32,
    /// Board power, watts (0 = not disclosed).
    pub power_w: u32,
}

macro_rules! acc {
    ($n:literal, $v:literal, $m:literal, $s:literal, $d:literal, $p:literal) => {
        Accelerator {
            name: $n,
            vendor: $v,
            memory_gib: $m,
            speed_permille: $s,
            domain_size: $d,
            power_w: $p,
        }
    };
}

/// Every known model, in a fixed order (the order model ids are not taken from: a fleet
/// numbers only the models it uses, in first-use order).
pub const CATALOG: &[Accelerator] = &[
    acc!("H100", "NVIDIA", 80, 1000, 8, 700),
    acc!("H200", "NVIDIA", 141, 1150, 8, 700),
    acc!("H800", "NVIDIA", 80, 950, 8, 700),
    acc!("B200", "NVIDIA", 192, 2200, 8, 1000),
    acc!("GB200", "NVIDIA", 186, 2500, 72, 1200),
    acc!("GB300", "NVIDIA", 288, 3000, 72, 1400),
    acc!("VR200", "NVIDIA", 288, 5000, 144, 1800),
    acc!("A100", "NVIDIA", 80, 330, 8, 400),
    acc!("A800", "NVIDIA", 80, 310, 8, 400),
    acc!("A10", "NVIDIA", 24, 100, 1, 150),
    // L4 (Ada, 24 GB, 72 W): dense FP16 about 121 TFLOPS against the H100's 989.
    acc!("L4", "NVIDIA", 24, 120, 1, 72),
    acc!("T4", "NVIDIA", 16, 40, 1, 70),
    acc!("P100", "NVIDIA", 16, 60, 1, 250),
    acc!("P40", "NVIDIA", 24, 50, 1, 250),
    acc!("K80", "NVIDIA", 12, 20, 1, 150),
    acc!("V100M16", "NVIDIA", 16, 150, 8, 300),
    acc!("V100M32", "NVIDIA", 32, 150, 8, 300),
    acc!("MI300X", "AMD", 192, 1100, 8, 750),
    acc!("MI355X", "AMD", 288, 2000, 8, 1400),
    acc!("TPUv5p", "Google", 95, 600, 4, 0),
    acc!("G2", "Alibaba (undisclosed)", 0, 1000, 8, 0),
    acc!("G3", "Alibaba (undisclosed)", 0, 1000, 8, 0),
];

/// Looks a model up by its exact catalog name.
///
/// # Errors
/// A message naming the unknown model and listing every valid name.
pub fn lookup(name: &str) -> Result<&'static Accelerator, String> {
    CATALOG.iter().find(|a| a.name == name).ok_or_else(|| {
        let names: Vec<&str> = CATALOG.iter().map(|a| a.name).collect();
        format!(
            "unknown accelerator model `{name}`; known models: {}",
            names.join(", ")
        )
    })
}

/// A building block: the node shape and rack size a preset stands for.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    /// Preset name.
    pub name: &'static str,
    /// Accelerator model.
    pub accelerator: &'static str,
    /// Accelerators per node.
    pub gpus: u32,
    /// CPU per node, milli-cores.
    pub cpu_milli: u64,
    /// Memory per node, MiB.
    pub mem_mib: u64,
    /// Nodes per NVLink/ICI domain.
    pub nodes_per_domain: u32,
}

/// Every preset. HGX/OAM boards are one 8-accelerator NVLink/Infinity Fabric domain per node;
/// an NVL72 rack is 18 compute trays of 4 GPUs in one NVLink domain; a TPU v5p host has 4
/// chips and a 4×4×4 cube (16 hosts) shares one ICI domain.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "hgx-h100",
        accelerator: "H100",
        gpus: 8,
        cpu_milli: 224_000,
        mem_mib: 2_097_152,
        nodes_per_domain: 1,
    },
    Preset {
        name: "hgx-h200",
        accelerator: "H200",
        gpus: 8,
        cpu_milli: 224_000,
        mem_mib: 2_097_152,
        nodes_per_domain: 1,
    },
    Preset {
        name: "hgx-b200",
        accelerator: "B200",
        gpus: 8,
        cpu_milli: 224_000,
        mem_mib: 4_194_304,
        nodes_per_domain: 1,
    },
    Preset {
        name: "gb200-nvl72",
        accelerator: "GB200",
        gpus: 4,
        cpu_milli: 144_000,
        mem_mib: 983_040,
        nodes_per_domain: 18,
    },
    Preset {
        name: "gb300-nvl72",
        accelerator: "GB300",
        gpus: 4,
        cpu_milli: 144_000,
        mem_mib: 983_040,
        nodes_per_domain: 18,
    },
    Preset {
        name: "mi300x",
        accelerator: "MI300X",
        gpus: 8,
        cpu_milli: 256_000,
        mem_mib: 2_097_152,
        nodes_per_domain: 1,
    },
    Preset {
        name: "mi355x",
        accelerator: "MI355X",
        gpus: 8,
        cpu_milli: 256_000,
        mem_mib: 3_145_728,
        nodes_per_domain: 1,
    },
    Preset {
        name: "tpu-v5p",
        accelerator: "TPUv5p",
        gpus: 4,
        cpu_milli: 208_000,
        mem_mib: 458_752,
        nodes_per_domain: 16,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lookup_lists_them() {
        for (i, a) in CATALOG.iter().enumerate() {
            assert!(
                CATALOG[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
        assert_eq!(lookup("GB200").unwrap().domain_size, 72);
        let e = lookup("H1000").unwrap_err();
        assert!(e.contains("H1000") && e.contains("MI300X"), "{e}");
    }
}
