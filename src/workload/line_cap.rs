//! A bound on the length of one line of a line-oriented input (the CSV readers, SWF, native
//! JSON Lines, the failures timeline): without it, a file with no newline (a binary file
//! named by mistake, `/dev/zero`, a truncated download) is buffered whole by `read_line`
//! or the `csv` crate before any check can run.
//!
//! [`LineCap`] wraps the byte stream (after gzip decompression) and fails the read with
//! [`LineTooLong`] as soon as a line exceeds [`MAX_LINE_BYTES`]; [`io_error`] turns that into
//! a [`TraceError::BadRow`] naming the file and the line. The bound is per physical line:
//! a quoted CSV field that spans several lines is bounded line by line, not as a whole.

use std::io::{self, Read};
use std::path::Path;

use super::TraceError;

/// The longest line any line-oriented reader accepts, bytes, without its line ending:
/// 1 MiB, three orders of magnitude above the longest line of the public traces (a few
/// kilobytes in the SWF headers).
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// The I/O error payload of a line longer than the cap.
#[derive(Debug, thiserror::Error)]
#[error(
    "line {line} is longer than {limit} bytes (the limit of one line; is this the right file?)"
)]
pub struct LineTooLong {
    /// 1-based line number.
    pub line: u64,
    /// The limit, bytes.
    pub limit: u64,
}

/// A reader that fails once a line grows beyond `limit` bytes (see the module docs).
pub struct LineCap<R> {
    inner: R,
    limit: u64,
    /// 1-based number of the line being read.
    line: u64,
    /// Bytes of that line so far.
    run: u64,
    /// The error to return on the next read, after the bytes before it were handed out.
    failed: Option<u64>,
}

impl<R: Read> LineCap<R> {
    /// `inner` with lines of at most `limit` bytes.
    pub fn new(inner: R, limit: u64) -> LineCap<R> {
        LineCap {
            inner,
            limit,
            line: 1,
            run: 0,
            failed: None,
        }
    }

    fn error(line: u64, limit: u64) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, LineTooLong { line, limit })
    }
}

impl<R: Read> Read for LineCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(line) = self.failed {
            return Err(Self::error(line, self.limit));
        }
        let n = self.inner.read(buf)?;
        let mut start = 0;
        while start < n {
            let rest = &buf[start..n];
            let (len, newline) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (rest.len(), false),
            };
            // `\r` of a CRLF ending counts toward the line; one byte does not matter.
            if self.run + len as u64 > self.limit {
                // Hand out the complete lines before this one; fail on the next read.
                self.failed = Some(self.line);
                let keep = start + (self.limit - self.run) as usize;
                return if keep == 0 {
                    Err(Self::error(self.line, self.limit))
                } else {
                    Ok(keep)
                };
            }
            if newline {
                self.line += 1;
                self.run = 0;
                start += len + 1;
            } else {
                self.run += len as u64;
                start = n;
            }
        }
        Ok(n)
    }
}

/// The [`TraceError`] of an I/O error while reading `path`: a [`LineTooLong`] becomes a
/// [`TraceError::BadRow`] naming its line, anything else [`TraceError::Io`].
pub fn io_error(path: &Path, source: io::Error) -> TraceError {
    if let Some(t) = source
        .get_ref()
        .and_then(|e| e.downcast_ref::<LineTooLong>())
    {
        return TraceError::BadRow {
            path: path.to_path_buf(),
            line: t.line,
            message: format!(
                "longer than {} bytes without a line break (the limit of one line; is this the right file?)",
                t.limit
            ),
        };
    }
    TraceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads everything through a cap of `limit`, in chunks of `chunk` bytes.
    fn read_all(data: &[u8], limit: u64, chunk: usize) -> Result<Vec<u8>, u64> {
        let mut r = LineCap::new(data, limit);
        let mut out = Vec::new();
        let mut buf = vec![0; chunk];
        loop {
            match r.read(&mut buf) {
                Ok(0) => return Ok(out),
                Ok(k) => out.extend_from_slice(&buf[..k]),
                Err(e) => {
                    let t = e.get_ref().unwrap().downcast_ref::<LineTooLong>().unwrap();
                    assert_eq!(t.limit, limit);
                    return Err(t.line);
                }
            }
        }
    }

    #[test]
    fn lines_up_to_the_limit_pass_unchanged() {
        let data = b"abcd\nefgh\n\nijkl";
        for chunk in [1, 2, 3, 5, 64] {
            assert_eq!(read_all(data, 4, chunk), Ok(data.to_vec()), "chunk {chunk}");
        }
    }

    #[test]
    fn a_longer_line_fails_naming_it_after_the_lines_before_it() {
        for chunk in [1, 2, 3, 7, 64] {
            assert_eq!(
                read_all(b"abcd\nefghi\nx\n", 4, chunk),
                Err(2),
                "chunk {chunk}"
            );
            assert_eq!(read_all(b"abcde", 4, chunk), Err(1), "chunk {chunk}");
            assert_eq!(
                read_all(b"a\nb\nc\nddddd", 4, chunk),
                Err(4),
                "chunk {chunk}"
            );
        }
        // Every complete line before the long one is handed out first.
        let mut r = LineCap::new(&b"ab\ncdefgh"[..], 4);
        let mut buf = [0; 64];
        let k = r.read(&mut buf).unwrap();
        assert!(buf[..k].starts_with(b"ab\n"), "{:?}", &buf[..k]);
        assert!(r.read(&mut buf).is_err());
        assert!(r.read(&mut buf).is_err());
    }

    #[test]
    fn the_error_names_file_and_line() {
        let e = io_error(Path::new("t.csv"), LineCap::<&[u8]>::error(7, 1 << 20));
        let text = e.to_string();
        assert!(
            text.contains("t.csv") && text.contains("line 7") && text.contains("1048576 bytes"),
            "{text}"
        );
        assert!(matches!(
            io_error(Path::new("t.csv"), io::Error::other("x")),
            TraceError::Io { .. }
        ));
    }
}
