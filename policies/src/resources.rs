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

    /// Checks the shape's own consistency.
    ///
    /// # Errors
    /// A message naming the inconsistent field: `gpu_milli` outside `1..=1000` with GPUs
    /// requested, or `gpu_milli` set without GPUs. A task asking for more accelerators than
    /// a node may have ([`MAX_GPUS_PER_NODE`]) is consistent: it is refused at submit as
    /// larger than any node, not bad input (issue 17).
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
