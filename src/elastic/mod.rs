//! Elastic jobs: jobs that run on `min ..= max` GPUs, sized by the policy
//! stage [`fleetsim_policies::elastic`], draining work at a throughput model's rate, with a
//! resize overhead. [`sim`] is the engine, [`throughput`] the models, [`pollux`] the reader
//! of the Pollux OSDI '21 workloads and [`scenario`] the strict elastic scenario file.

pub mod pollux;
pub mod scenario;
pub mod sim;
pub mod throughput;

pub use sim::{
    simulate, summarize, ElasticConfig, ElasticError, ElasticJob, ElasticSummary, JobOutcome,
};
pub use throughput::ThroughputModel;
