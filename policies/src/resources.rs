//! Resource requests and capacities, in integer units.
//!
//! * GPU: `gpu_milli`, where 1000 is one whole accelerator (the Alibaba openb convention);
//!   fractional requests (< 1000) share one accelerator with other tasks.
//! * CPU: `cpu_milli` (1000 = one core).
//! * Memory: `mem_mib` (MiB).

/// The largest number of accelerators a node may have (GPU sets are 64-bit masks).
pub const MAX_GPUS_PER_NODE: u32 = 64;

/// One whole accelerator, in GPU-milli.
pub const WHOLE_GPU_MILLI: u32 = 1000;

/// What one task (pod) of a job asks for. All tasks of a job are identical replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskShape {
    /// Number of accelerators the task binds (0 for a CPU-only task).
    pub num_gpu: u32,
    /// Share of each bound accelerator, GPU-milli in `1..=1000`; 1000 means whole
    /// accelerators. Must be 0 when `num_gpu` is 0.
    pub gpu_milli: u32,
    /// CPU request, milli-cores.
    pub cpu_milli: u64,
    /// Memory request, MiB.
    pub mem_mib: u64,
}

impl TaskShape {
    /// A task of `n` whole accelerators and no CPU or memory request.
    pub const fn whole_gpus(n: u32) -> TaskShape {
        TaskShape {
            num_gpu: n,
            gpu_milli: if n == 0 { 0 } else { WHOLE_GPU_MILLI },
            cpu_milli: 0,
            mem_mib: 0,
        }
    }

    /// Total accelerator demand in GPU-milli: `num_gpu × gpu_milli`.
    pub const fn total_gpu_milli(&self) -> u64 {
        self.num_gpu as u64 * self.gpu_milli as u64
    }

    /// True when the task shares one accelerator (`gpu_milli < 1000`).
    pub const fn is_fractional(&self) -> bool {
        self.num_gpu > 0 && self.gpu_milli < WHOLE_GPU_MILLI
    }

    /// This task split for nodes of `node_gpus` accelerators: `(k, member)`, `k` identical
    /// node-sized members that together ask for what the task asks for. A task of more
    /// whole accelerators than the node has becomes `k` members of `num_gpu / k`
    /// accelerators, `k` the smallest divisor of `num_gpu` with `num_gpu / k ≤ node_gpus`
    /// (8 on 4-GPU nodes: 2 × 4; 12 on 8: 2 × 6; 6 on 4: 2 × 3), each with `⌈cpu / k⌉`
    /// milli-cores and `⌈mem / k⌉` MiB (rounded up: the members ask for at most `k − 1`
    /// milli-cores and MiB more than the task). A task that fits (`num_gpu ≤ node_gpus`), a
    /// fractional or CPU-only task, or `node_gpus` 0 is unchanged: `(1, self)`.
    pub fn split_for_node(&self, node_gpus: u32) -> (u32, TaskShape) {
        if self.num_gpu <= node_gpus || node_gpus == 0 || self.is_fractional() {
            return (1, *self);
        }
        let k = (2..=self.num_gpu)
            .find(|&k| self.num_gpu.is_multiple_of(k) && self.num_gpu / k <= node_gpus)
            .unwrap_or(self.num_gpu);
        let k64 = u64::from(k);
        (
            k,
            TaskShape {
                num_gpu: self.num_gpu / k,
                gpu_milli: self.gpu_milli,
                cpu_milli: self.cpu_milli.div_ceil(k64),
                mem_mib: self.mem_mib.div_ceil(k64),
            },
        )
    }

    /// Checks the shape's own consistency.
    ///
    /// # Errors
    /// A message naming the inconsistent field: `gpu_milli` outside `1..=1000` with GPUs
    /// requested, or `gpu_milli` set without GPUs. A task asking for more accelerators than
    /// a node may have ([`MAX_GPUS_PER_NODE`]) is consistent: it is refused at submit as
    /// larger than any node, not bad input.
    pub fn validate(&self) -> Result<(), String> {
        if self.num_gpu == 0 && self.gpu_milli != 0 {
            return Err(format!("gpu_milli {} given with num_gpu 0", self.gpu_milli));
        }
        if self.num_gpu > 0 && (self.gpu_milli == 0 || self.gpu_milli > WHOLE_GPU_MILLI) {
            return Err(format!(
                "gpu_milli {} must be in 1..=1000 when num_gpu > 0",
                self.gpu_milli
            ));
        }
        Ok(())
    }
}

/// A set of accelerator models a task may run on; empty means any model.
/// Bit `i` stands for [`crate::ModelId`]`(i)`; a fleet has at most 128 models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelSet(pub u128);

impl ModelSet {
    /// Any model.
    pub const ANY: ModelSet = ModelSet(0);

    /// True when no constraint is set.
    pub const fn is_any(&self) -> bool {
        self.0 == 0
    }

    /// The set of model `m` alone.
    pub const fn only(m: crate::ModelId) -> ModelSet {
        ModelSet(1u128 << m.0)
    }

    /// Adds a model to the set.
    pub fn insert(&mut self, m: crate::ModelId) {
        self.0 |= 1u128 << m.0;
    }

    /// The models both sets allow, or `None` when they have none in common (an empty set
    /// cannot be represented: `ModelSet(0)` means any model).
    pub const fn intersect(self, other: ModelSet) -> Option<ModelSet> {
        if self.0 == 0 {
            Some(other)
        } else if other.0 == 0 {
            Some(self)
        } else if self.0 & other.0 == 0 {
            None
        } else {
            Some(ModelSet(self.0 & other.0))
        }
    }

    /// True when a task with this constraint may run on model `m`.
    pub const fn allows(&self, m: crate::ModelId) -> bool {
        self.0 == 0 || (self.0 >> m.0) & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::TaskShape;

    /// 8 whole GPUs, 64 cores, 512 GiB on 4-GPU trays: 2 members of 4 GPUs, 32 cores,
    /// 256 GiB. 12 on 8: the smallest k with 12 / k ≤ 8 dividing 12 is 2 → 2 × 6. 7 on 4:
    /// 7 is prime → 7 × 1, CPU 10 cores → ⌈10 / 7⌉ = 1.429 cores each (1,429 milli). A task
    /// that fits, a fractional task and a CPU node leave it whole.
    #[test]
    fn tasks_split_into_node_sized_members() {
        let t = TaskShape {
            cpu_milli: 64_000,
            mem_mib: 512 * 1024,
            ..TaskShape::whole_gpus(8)
        };
        let (k, m) = t.split_for_node(4);
        assert_eq!(k, 2);
        assert_eq!(
            (m.num_gpu, m.gpu_milli, m.cpu_milli, m.mem_mib),
            (4, 1000, 32_000, 256 * 1024)
        );
        assert_eq!(TaskShape::whole_gpus(12).split_for_node(8).0, 2);
        assert_eq!(TaskShape::whole_gpus(12).split_for_node(8).1.num_gpu, 6);
        let p = TaskShape {
            cpu_milli: 10_000,
            ..TaskShape::whole_gpus(7)
        };
        assert_eq!(
            p.split_for_node(4),
            (
                7,
                TaskShape {
                    cpu_milli: 1_429,
                    ..TaskShape::whole_gpus(1)
                }
            )
        );
        assert_eq!(t.split_for_node(8), (1, t));
        assert_eq!(t.split_for_node(0), (1, t));
        let f = TaskShape {
            num_gpu: 1,
            gpu_milli: 500,
            cpu_milli: 0,
            mem_mib: 0,
        };
        assert_eq!(f.split_for_node(1), (1, f));
    }
}
