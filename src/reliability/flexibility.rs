//! Workload flexibility (`[flexibility]` in a scenario): which cells, accelerator models and
//! quota a job may use, so the value of each dimension is measured by running the same
//! workload with it off and on (`fleetsim compare … --policies
//! flexibility.spatial=false,flexibility.spatial=true`).
//!
//! ```toml
//! [flexibility]
//! spatial = true      # any cell (else only its home cell)
//! platform = true     # any accelerator model, at its speed ([platform]); else its home
//!                     # cell's models
//! quota = true        # borrow idle quota in the cohort as best-effort (else only its own)
//! home_cells = { vc1 = "east" }   # else round-robin over the cells, first appearance order
//! ```
//!
//! Every job has a **home cell**: its tenant's entry in `home_cells` (`"*"` for the rest),
//! else the tenants are dealt to the cells round-robin in the order they first appear in the
//! trace (deterministic for a trace). A job that names its own cells or models in the trace
//! keeps them. Otherwise:
//!
//! * **spatial** off: the job may run only in its home cell; on: in any cell, its home cell
//!   listed first (a start elsewhere is a cross-cell dispatch in `summary.json`);
//! * **platform** off: only on the accelerator models of its home cell; on: on any model, its
//!   run time scaled by the model's speed (`[platform]`);
//! * **quota** off: cohorts are removed, so each queue runs only within its own nominal
//!   (guaranteed) quota; on: the scenario's cohorts stand, so a queue borrows idle quota of
//!   the others as best-effort work that the owners reclaim first (`reclaim_within_cohort`,
//!   Kueue semantics; issue #3's quota tree).

use std::collections::BTreeMap;

use fleetsim_policies::FleetState;

pub use crate::scenario::reliability::FlexibilitySpec;
use crate::workload::{JobSpec, JobStream, Skipped, TraceError};

/// The job stream with the flexibility of `[flexibility]` applied.
pub struct FlexibleStream {
    inner: Box<dyn JobStream>,
    spec: FlexibilitySpec,
    /// Cell names in cell-id order.
    cells: Vec<String>,
    /// Accelerator model names of each cell.
    cell_models: Vec<Vec<String>>,
    /// Home cells dealt so far, by tenant.
    dealt: BTreeMap<String, usize>,
}

impl FlexibleStream {
    /// Wraps `inner` for the cells of `fleet`.
    ///
    /// # Errors
    /// A message naming `flexibility.home_cells.<tenant>` for an unknown cell.
    pub fn new(
        inner: Box<dyn JobStream>,
        spec: &FlexibilitySpec,
        fleet: &FleetState,
    ) -> Result<FlexibleStream, (String, String)> {
        let cells: Vec<String> = fleet.cells().iter().map(|c| c.name.clone()).collect();
        for (t, c) in &spec.home_cells {
            if !cells.contains(c) {
                return Err((
                    format!("flexibility.home_cells.{t}"),
                    format!("unknown cell `{c}`; cells: {}", cells.join(", ")),
                ));
            }
        }
        let cell_models = (0..cells.len())
            .map(|c| {
                let mut v: Vec<String> = fleet
                    .cell_models(fleetsim_policies::CellId(c as u16))
                    .map(|m| fleet.models()[m.index()].clone())
                    .collect();
                v.sort();
                v.dedup();
                v
            })
            .collect();
        Ok(FlexibleStream {
            inner,
            spec: spec.clone(),
            cells,
            cell_models,
            dealt: BTreeMap::new(),
        })
    }

    fn home(&mut self, tenant: &str) -> usize {
        let named = self
            .spec
            .home_cells
            .get(tenant)
            .or_else(|| self.spec.home_cells.get("*"));
        if let Some(c) = named {
            return self.cells.iter().position(|x| x == c).expect("checked");
        }
        let n = self.dealt.len();
        let cells = self.cells.len();
        *self.dealt.entry(tenant.to_string()).or_insert(n % cells)
    }

    fn apply(&mut self, mut job: JobSpec) -> JobSpec {
        let home = self.home(&job.tenant);
        if job.cells.is_empty() {
            job.cells = if self.spec.spatial {
                let mut v = vec![self.cells[home].clone()];
                v.extend(
                    (0..self.cells.len())
                        .filter(|&c| c != home)
                        .map(|c| self.cells[c].clone()),
                );
                v
            } else {
                vec![self.cells[home].clone()]
            };
        }
        if job.gpu_models.is_empty() && job.shape.num_gpu > 0 && !self.spec.platform {
            job.gpu_models = self.cell_models[home].clone();
        }
        job
    }
}

impl Iterator for FlexibleStream {
    type Item = Result<JobSpec, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        let j = self.inner.next()?;
        Some(j.map(|j| self.apply(j)))
    }
}

impl JobStream for FlexibleStream {
    fn trace_start(&self) -> Option<crate::workload::TraceStart> {
        self.inner.trace_start()
    }

    fn skipped(&self) -> Skipped {
        self.inner.skipped()
    }
    fn notes(&self) -> Skipped {
        self.inner.notes()
    }
}
