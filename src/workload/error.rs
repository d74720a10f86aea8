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
    /// A [`TraceError::BadField`]. A `field` that is not a plausible column name (more
    /// than 64 bytes, or a character other than ASCII letters, digits, `_`, `-`, `.`, `[`,
    /// `]` and space; field paths such as `attempts[1].end_time` are column names), e.g. the
    /// first line of a file that is not a trace at all, is not echoed: the error describes
    /// it by its length instead, so that an error never prints a file's content.
    pub fn field(
        path: &std::path::Path,
        line: u64,
        field: &str,
        message: impl Into<String>,
    ) -> TraceError {
        TraceError::BadField {
            path: path.to_path_buf(),
            line,
            field: printable_field(field),
            message: message.into(),
        }
    }
}

/// `field` itself when it looks like a column name, else a description of it that does not
/// reveal its content (see [`TraceError::field`]).
fn printable_field(field: &str) -> String {
    let plausible = !field.is_empty()
        && field.len() <= 64
        && field.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b' ' | b'[' | b']')
        });
    if plausible {
        field.to_string()
    } else {
        format!("<{} bytes, not a column name>", field.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_that_are_not_column_names_are_not_echoed() {
        let p = std::path::Path::new("t.csv");
        let e = TraceError::field(p, 1, "root:x:0:0:root:/root:/bin/bash", "unknown column");
        // 31 bytes: "root:x:0:0:root:/root:/bin/bash".len() == 31.
        assert_eq!(
            e.to_string(),
            "t.csv: line 1: field `<31 bytes, not a column name>`: unknown column"
        );
        let e = TraceError::field(p, 3, "gpu_milli", "bad value");
        assert_eq!(e.to_string(), "t.csv: line 3: field `gpu_milli`: bad value");
    }
}
