//! The Arrow tables of a run: one schema for `jobs` ([`jobs_schema`]) and one for
//! `timeseries` ([`timeseries_schema`]), shared by the Parquet outputs (`jobs.parquet`,
//! `timeseries.parquet`: `outputs = ["parquet"]` in `[metrics]`, or `fleetsim run --format`)
//! and the Python package's `pyarrow` tables, so that every run has the same column types.
//!
//! Types, stable across runs (`docs/src/reference/outputs.md`, "Output columns", lists them):
//! - times and durations: `Float64` seconds (the engine's integer milliseconds / 1000, the
//!   nearest double to the CSV's three-decimal text);
//! - counts and integer quantities (`job_id`, `priority`, `num_gpu`, `preemptions`, …):
//!   `Int64`;
//! - GPUs and time-averaged quantities: `Float64` (the CSV's three-decimal value);
//! - ratios (`stretch`, `bounded_slowdown`, `occupancy`, …): `Float64` at full precision (the
//!   CSV rounds them to 6 or 4 decimals);
//! - names, states, reasons: `Utf8`; `measured`: `Boolean`;
//! - a column is nullable exactly where the CSV can leave it empty (null there).
//!
//! `timeseries` has the fixed columns first, then per cell, per accelerator model, per
//! pending reason and per tenant ([`crate::report::timeseries`]); every one of these is
//! `Float64`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::engine::{JobRow, JobSink};
use crate::report::atomic::AtomicFile;
use crate::report::jobs_csv::{derived, HEADER};
use crate::report::timeseries::Series;

/// Rows per record batch of the jobs table (one Parquet row group holds up to 1,048,576).
pub const BATCH_ROWS: usize = 65_536;

/// The `created_by` written into every Parquet file: fixed, so that the same run gives the
/// same bytes whatever parquet crate version wrote it.
pub const CREATED_BY: &str = "fleetsim";

/// The type of each `jobs` column, in [`HEADER`] order: (type, nullable).
const JOB_TYPES: [(DataType, bool); 33] = {
    use DataType::{Boolean as B, Float64 as F, Int64 as I, Utf8 as S};
    [
        (I, false), // job_id
        (S, false), // name
        (S, false), // tenant
        (S, false), // queue
        (S, true),  // qos
        (I, false), // priority
        (F, false), // submission_time
        (F, true),  // starting_time
        (F, true),  // finish_time
        (F, true),  // waiting_time
        (F, true),  // execution_time
        (F, true),  // turnaround_time
        (F, true),  // stretch
        (F, true),  // bounded_slowdown
        (I, false), // requested_number_of_resources
        (I, false), // num_gpu
        (I, false), // gpu_milli
        (I, false), // cpu_milli
        (I, false), // mem_mib
        (F, false), // gpus
        (F, true),  // requested_time
        (S, true),  // cell
        (S, true),  // allocated_resources
        (I, false), // preemptions
        (S, false), // final_state
        (S, true),  // reason
        (B, false), // measured
        (F, true),  // last_start_time
        (I, false), // failures
        (F, false), // lost_gpu_s
        (S, true),  // pending_reason
        (F, true),  // service_time
        (F, true),  // pending_time
    ]
};

/// The schema of the `jobs` table: the columns of `jobs.csv`, in its order.
pub fn jobs_schema() -> SchemaRef {
    Arc::new(Schema::new(
        HEADER
            .iter()
            .zip(JOB_TYPES.iter())
            .map(|(n, (t, null))| Field::new(*n, t.clone(), *null))
            .collect::<Vec<_>>(),
    ))
}

/// The schema of the `timeseries` table of `series` (its columns depend on the fleet's cells
/// and models and the workload's tenants): every column `Float64`, nullable where
/// `timeseries.csv` can be empty.
pub fn timeseries_schema(series: &Series) -> SchemaRef {
    Arc::new(Schema::new(
        series
            .header
            .iter()
            .zip(&series.nullable)
            .map(|(n, &null)| Field::new(n, DataType::Float64, null))
            .collect::<Vec<_>>(),
    ))
}

/// The `timeseries` table of `series`, as one record batch.
pub fn timeseries_batch(series: &Series) -> RecordBatch {
    let cols: Vec<ArrayRef> = (0..series.header.len())
        .map(|c| {
            let mut b = Float64Builder::with_capacity(series.rows.len());
            for row in &series.rows {
                b.append_option(row[c].number());
            }
            Arc::new(b.finish()) as ArrayRef
        })
        .collect();
    RecordBatch::try_new(timeseries_schema(series), cols).expect("columns match the schema")
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Builds the `jobs` table row by row, in record batches of [`BATCH_ROWS`].
pub struct JobsBuilder {
    ints: Vec<Int64Builder>,
    floats: Vec<Float64Builder>,
    strs: Vec<StringBuilder>,
    bools: Vec<BooleanBuilder>,
    rows: usize,
}

impl Default for JobsBuilder {
    fn default() -> Self {
        JobsBuilder::new()
    }
}

impl JobsBuilder {
    /// An empty builder.
    pub fn new() -> JobsBuilder {
        let count = |t: &DataType| JOB_TYPES.iter().filter(|(d, _)| d == t).count();
        JobsBuilder {
            ints: (0..count(&DataType::Int64))
                .map(|_| Int64Builder::new())
                .collect(),
            floats: (0..count(&DataType::Float64))
                .map(|_| Float64Builder::new())
                .collect(),
            strs: (0..count(&DataType::Utf8))
                .map(|_| StringBuilder::new())
                .collect(),
            bools: (0..count(&DataType::Boolean))
                .map(|_| BooleanBuilder::new())
                .collect(),
            rows: 0,
        }
    }

    /// Rows since the last [`JobsBuilder::finish`].
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when no row is pending.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Appends one row (values as in `jobs.csv`, see the module docs).
    pub fn push(&mut self, r: &JobRow) {
        let d = derived(r);
        let ms = |v: Option<u64>| v.map(secs);
        let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let ints = [
            int(r.id),
            i64::from(r.priority),
            i64::from(r.tasks),
            i64::from(r.shape.num_gpu),
            i64::from(r.shape.gpu_milli),
            int(r.shape.cpu_milli),
            int(r.shape.mem_mib),
            i64::from(r.preemptions),
            i64::from(r.failures),
        ];
        let floats = [
            Some(secs(r.submit.0)),
            ms(r.start.map(|s| s.0)),
            ms(r.finish.map(|f| f.0)),
            ms(d.wait_ms),
            ms(r.run_ms),
            ms(d.turnaround_ms),
            d.stretch,
            d.bounded_slowdown,
            Some(d.gpus_milli as f64 / 1000.0),
            ms(r.requested_time.map(|t| t.0)),
            ms(r.last_start.map(|s| s.0)),
            Some(d.lost_gpu_milli_s as f64 / 1000.0),
            ms(r.service_ms),
            ms(r.pending_ms),
        ];
        let nodes = (!r.nodes.is_empty()).then(|| r.nodes.join(" "));
        let strs = [
            Some(r.name.as_str()),
            Some(r.tenant.as_str()),
            Some(r.queue.as_str()),
            r.qos.as_deref(),
            r.cell.as_deref(),
            nodes.as_deref(),
            Some(r.state.as_str()),
            r.reason.as_deref(),
            r.pending_reason.map(|p| p.as_str()),
        ];
        for (b, v) in self.ints.iter_mut().zip(ints) {
            b.append_value(v);
        }
        for (b, v) in self.floats.iter_mut().zip(floats) {
            b.append_option(v);
        }
        for (b, v) in self.strs.iter_mut().zip(strs) {
            b.append_option(v);
        }
        self.bools[0].append_value(r.measured);
        self.rows += 1;
    }

    /// The rows pushed since the last call, as a record batch (the builder is then empty).
    pub fn finish(&mut self) -> RecordBatch {
        let (mut i, mut f, mut s, mut b) = (0, 0, 0, 0);
        let cols: Vec<ArrayRef> = JOB_TYPES
            .iter()
            .map(|(t, _)| -> ArrayRef {
                match t {
                    DataType::Int64 => {
                        i += 1;
                        Arc::new(self.ints[i - 1].finish())
                    }
                    DataType::Float64 => {
                        f += 1;
                        Arc::new(self.floats[f - 1].finish())
                    }
                    DataType::Utf8 => {
                        s += 1;
                        Arc::new(self.strs[s - 1].finish())
                    }
                    _ => {
                        b += 1;
                        Arc::new(self.bools[b - 1].finish())
                    }
                }
            })
            .collect();
        self.rows = 0;
        RecordBatch::try_new(jobs_schema(), cols).expect("columns match the schema")
    }
}

/// A [`JobSink`] keeping the `jobs` table in memory (the Python package's `Result.jobs`).
#[derive(Default)]
pub struct JobsTable {
    builder: JobsBuilder,
    /// The finished batches.
    pub batches: Vec<RecordBatch>,
}

impl JobsTable {
    /// All rows, as record batches of the [`jobs_schema`] (at least one, maybe empty).
    pub fn into_batches(mut self) -> Vec<RecordBatch> {
        if !self.builder.is_empty() || self.batches.is_empty() {
            self.batches.push(self.builder.finish());
        }
        self.batches
    }
}

impl JobSink for JobsTable {
    fn write(&mut self, row: &JobRow) -> std::io::Result<()> {
        self.builder.push(row);
        if self.builder.len() >= BATCH_ROWS {
            self.batches.push(self.builder.finish());
        }
        Ok(())
    }
}

/// The writer settings of every Parquet output: Snappy, a fixed `created_by`
/// ([`CREATED_BY`]), the defaults otherwise (dictionary encoding, statistics, row groups of
/// up to 1,048,576 rows). Nothing time- or machine-dependent goes into the file.
pub fn writer_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(CREATED_BY.to_string())
        .build()
}

fn parquet_err(e: parquet::errors::ParquetError) -> std::io::Error {
    match e {
        parquet::errors::ParquetError::External(inner) => std::io::Error::other(inner),
        other => std::io::Error::other(other.to_string()),
    }
}

/// A [`JobSink`] writing `jobs.parquet` atomically.
pub struct JobsParquet {
    w: ArrowWriter<AtomicFile>,
    builder: JobsBuilder,
}

impl JobsParquet {
    /// Starts `dest`.
    ///
    /// # Errors
    /// The I/O error from creating the file.
    pub fn create(dest: &Path) -> std::io::Result<JobsParquet> {
        let w = ArrowWriter::try_new(
            AtomicFile::create(dest)?,
            jobs_schema(),
            Some(writer_properties()),
        )
        .map_err(parquet_err)?;
        Ok(JobsParquet {
            w,
            builder: JobsBuilder::new(),
        })
    }

    /// Writes the last rows and the footer, and renames the file into place.
    ///
    /// # Errors
    /// The I/O error from writing or committing.
    pub fn commit(mut self) -> std::io::Result<()> {
        if !self.builder.is_empty() {
            self.w.write(&self.builder.finish()).map_err(parquet_err)?;
        }
        self.w.into_inner().map_err(parquet_err)?.commit()
    }
}

impl JobSink for JobsParquet {
    fn write(&mut self, row: &JobRow) -> std::io::Result<()> {
        self.builder.push(row);
        if self.builder.len() >= BATCH_ROWS {
            self.w.write(&self.builder.finish()).map_err(parquet_err)?;
        }
        Ok(())
    }
}

/// Writes `series` as `timeseries.parquet`, atomically.
///
/// # Errors
/// The I/O error from writing.
pub fn write_timeseries(dest: &Path, series: &Series) -> std::io::Result<()> {
    let batch = timeseries_batch(series);
    let mut w = ArrowWriter::try_new(
        AtomicFile::create(dest)?,
        batch.schema(),
        Some(writer_properties()),
    )
    .map_err(parquet_err)?;
    w.write(&batch).map_err(parquet_err)?;
    w.into_inner().map_err(parquet_err)?.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_schema_has_one_type_per_csv_column() {
        let s = jobs_schema();
        assert_eq!(s.fields().len(), HEADER.len());
        assert_eq!(s.field(0).name(), "job_id");
        assert_eq!(s.field(0).data_type(), &DataType::Int64);
        assert_eq!(
            s.field_with_name("measured").unwrap().data_type(),
            &DataType::Boolean
        );
        assert!(s.field_with_name("starting_time").unwrap().is_nullable());
        assert!(!s.field_with_name("submission_time").unwrap().is_nullable());
    }

    #[test]
    fn empty_table_has_the_schema() {
        let b = JobsTable::default().into_batches();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].num_rows(), 0);
        assert_eq!(b[0].schema(), jobs_schema());
    }
}
