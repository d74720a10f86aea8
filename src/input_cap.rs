//! Bounds on inputs read whole or decompressed, so that a wrong or hostile file (`/dev/zero`,
//! a 2 GiB one-line TOML, a gzip bomb, YAML nested 40,000 levels deep) is refused with an
//! error naming the file and the cap instead of exhausting memory or time.
//!
//! * [`read_capped`]: a file read whole (scenario files and the files they `extend`, Kueue
//!   manifests), at most `cap` bytes: [`MAX_SCENARIO_BYTES`], [`MAX_MANIFEST_BYTES`];
//! * [`DecompressedCap`]: a gzip stream, at most [`GZ_MAX_RATIO`] times the compressed size
//!   (and at least [`GZ_MIN_CAP`]) of decompressed bytes;
//! * [`yaml_nesting`]: YAML nesting at most [`MAX_YAML_DEPTH`] levels, checked on the text
//!   before the parser sees it.

use std::io::{self, Read};
use std::path::Path;

/// Largest scenario file (and `extends` target), bytes: 16 MiB, some thousand times the
/// committed scenarios (a few kB).
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// Largest Kueue manifest file, bytes: 64 MiB (tens of thousands of queue objects).
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Most decompressed bytes per compressed byte of a gzip input. Text traces compress 5–15×
/// (the public SWF traces: 8.1× and 9.0×); a gzip bomb compresses about 1,000×.
pub const GZ_MAX_RATIO: u64 = 100;

/// The decompressed-size cap of a gzip input is never below this, bytes: 256 MiB.
pub const GZ_MIN_CAP: u64 = 256 << 20;

/// Deepest YAML nesting accepted (block indentation levels, sequence dashes and flow
/// brackets together). Kueue manifests nest about 8 levels.
pub const MAX_YAML_DEPTH: usize = 64;

/// Reads `path` as UTF-8 text of at most `cap` bytes; `what` names the kind of file in the
/// error ("scenario file").
///
/// # Errors
/// The I/O error; a file longer than `cap` gives an `InvalidData` error saying so (the file
/// is not read beyond `cap + 1` bytes), as does text that is not UTF-8.
pub fn read_capped(path: &Path, cap: u64, what: &str) -> io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut buf = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {cap} bytes, the limit for a {what}; is this the right file?"),
        ));
    }
    String::from_utf8(buf).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// The decompressed-size cap of a gzip file of `compressed` bytes (see [`GZ_MAX_RATIO`]).
pub fn gz_cap(compressed: u64) -> u64 {
    compressed.saturating_mul(GZ_MAX_RATIO).max(GZ_MIN_CAP)
}

/// A decompressed stream that fails once more than `cap` bytes have come out of it.
pub struct DecompressedCap<R> {
    inner: R,
    cap: u64,
    seen: u64,
}

impl<R: Read> DecompressedCap<R> {
    /// Wraps `inner` (a decoder) with a cap of `cap` bytes.
    pub fn new(inner: R, cap: u64) -> Self {
        DecompressedCap {
            inner,
            cap,
            seen: 0,
        }
    }
}

impl<R: Read> Read for DecompressedCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen += n as u64;
        if self.seen > self.cap {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "decompresses to more than {} bytes, the limit for this gzip file ({GZ_MAX_RATIO} × its compressed size, at least {GZ_MIN_CAP}); is it a gzip bomb?",
                    self.cap
                ),
            ));
        }
        Ok(n)
    }
}

/// Checks that no part of `text` (YAML) nests deeper than `cap` levels: on each line, the
/// indentation (counted as one level per increase over the enclosing lines), the
/// sequence dashes that open the line (`- - - x`) and the flow brackets `[`/`{` still open
/// (outside quotes) are added up.
///
/// # Errors
/// `(line, message)`: the 1-based line where the depth first exceeds `cap`.
pub fn yaml_nesting(text: &str, cap: usize) -> Result<(), (u64, String)> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    for (i, line) in text.lines().enumerate() {
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        if flow == 0 && !body.is_empty() && !body.starts_with('#') {
            while indents.last().is_some_and(|&d| d >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let mut rest = body;
        let mut dashes = 0;
        while let Some(r) = rest.strip_prefix("- ").or(rest.strip_prefix("-\t")) {
            dashes += 1;
            rest = r.trim_start();
        }
        let mut quote: Option<char> = None;
        let mut max_flow = flow;
        for c in rest.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') => break,
                (None, '[' | '{') => {
                    flow += 1;
                    max_flow = max_flow.max(flow);
                }
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
        }
        let depth = indents.len() + dashes + max_flow;
        if depth > cap {
            return Err((
                i as u64 + 1,
                format!("YAML nested {depth} levels deep, over the limit of {cap}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_depth_counts_indentation_dashes_and_brackets() {
        // Line 3: indentation levels 0, 2, 4 (3) + 0 dashes + 0 brackets = 3.
        assert!(yaml_nesting("a:\n  b:\n    c: 1\n", 3).is_ok());
        assert_eq!(yaml_nesting("a:\n  b:\n    c: 1\n", 2).unwrap_err().0, 3);
        // 1 indentation level + 3 dashes = 4.
        assert!(yaml_nesting("- - - x\n", 4).is_ok());
        assert!(yaml_nesting("- - - x\n", 3).is_err());
        // 1 + 5 brackets = 6; brackets inside quotes do not count.
        assert!(yaml_nesting("a: [[[[[1]]]]]\n", 6).is_ok());
        assert_eq!(
            yaml_nesting("a: [[[[[1]]]]]\n", 5).unwrap_err().1,
            "YAML nested 6 levels deep, over the limit of 5"
        );
        assert!(yaml_nesting("a: '[[[[[[[['\n", 2).is_ok());
    }

    #[test]
    fn reads_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "x".repeat(11)).unwrap();
        assert_eq!(read_capped(&p, 11, "test file").unwrap().len(), 11);
        let e = read_capped(&p, 10, "test file").unwrap_err();
        assert_eq!(
            e.to_string(),
            "larger than 10 bytes, the limit for a test file; is this the right file?"
        );
        // 1,024 bytes out of a stream capped at 100: the read fails.
        let mut r = DecompressedCap::new(&[0u8; 1024][..], 100);
        let mut out = Vec::new();
        assert!(r.read_to_end(&mut out).is_err());
        assert_eq!(gz_cap(1 << 20), GZ_MIN_CAP); // 100 MiB < 256 MiB
        assert_eq!(gz_cap(4 << 20), 400 << 20);
    }
}
