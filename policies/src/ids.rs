//! Index newtypes. Every id is a dense index assigned in a deterministic order (input order for
//! jobs, declaration order for cells and nodes), so arrays can be indexed by them.

macro_rules! index_id {
    ($(#[$m:meta])* $name:ident, $inner:ty) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub struct $name(pub $inner);

        impl $name {
            /// The id as a `usize` array index.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

index_id!(
    /// A job (one submission), numbered in input order from 0.
    JobId,
    u32
);
index_id!(
    /// A node (machine), numbered in fleet declaration order from 0.
    NodeId,
    u32
);
index_id!(
    /// A cell: an independently scheduled cluster (Borg cell, Kueue cluster).
    CellId,
    u16
);
index_id!(
    /// An accelerator model (H100, V100M16, …): an index into the fleet's model table.
    ModelId,
    u16
);
index_id!(
    /// A tenant (Slurm account, Philly VC, Kueue namespace/team).
    TenantId,
    u32
);
index_id!(
    /// A queue (Kueue ClusterQueue/LocalQueue, Slurm partition, Volcano queue).
    QueueId,
    u32
);
