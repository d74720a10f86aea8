//! Errors from reading traces and machine lists.

use std::path::PathBuf;

/// A trace or machine-list reading error. Every variant is fatal for the read that returned
/// it; the message names the file, the 1-based line (the header is line 1) and the field.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A required column is missing from the header.
    #[error("{path}: line 1: missing column `{column}`")]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
    },
    /// A field could not be used.
    #[error("{path}: line {line}: field `{field}`: {message}")]
    BadField {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The column or field name.
        field: String,
        /// What is wrong, with the offending value.
        message: String,
    },
    /// A row is malformed as a whole (wrong number of fields, bad CSV/JSON).
    #[error("{path}: line {line}: {message}")]
    BadRow {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
}

impl TraceError {
    /// A [`TraceError::BadField`].
    pub fn field(
        path: &std::path::Path,
        line: u64,
        field: &str,
        message: impl Into<String>,
    ) -> TraceError {
        TraceError::BadField {
            path: path.to_path_buf(),
            line,
            field: field.to_string(),
            message: message.into(),
        }
    }
}
