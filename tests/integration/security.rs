//! A scenario's `public_path` stays inside the trace directory: an
//! absolute path, a `..` component, a symbolic link out of the folder (file or directory)
//! are refused before the file is opened, with exit code 2, naming the field and never
//! printing the file's content.

use std::path::Path;
use std::process::Command;

const SECRET: &str = "SECRET-FIRST-LINE-do-not-print";

fn scenario(public_path: &str) -> String {
    format!(
        "name = \"sec\"\n[workload]\ntrace = {{ format = \"native\", public_path = {public_path:?} }}\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\npreset = \"hgx-h100\"\ncount = 2\n"
    )
}

/// Runs `fleetsim <cmd> s.toml --trace-dir <dir>/traces`; returns exit code and stderr.
fn run(dir: &Path, cmd: &str, public_path: &str) -> (i32, String) {
    let s = dir.join("s.toml");
    std::fs::write(&s, scenario(public_path)).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_fleetsim"));
    c.arg(cmd)
        .arg(&s)
        .arg("--trace-dir")
        .arg(dir.join("traces"));
    if cmd == "run" {
        c.arg("--out").arg(dir.join("out")).arg("--quiet");
    }
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[cfg(unix)]
#[test]
fn public_paths_cannot_escape_the_trace_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("traces/sub")).unwrap();
    let good = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/sample-small.csv"),
    )
    .unwrap();
    std::fs::write(dir.join("traces/ok.csv"), &good).unwrap();
    // A file outside the trace folder whose first line must never appear in an error.
    std::fs::write(dir.join("secret.csv"), format!("{SECRET}\n1,2,3\n")).unwrap();
    std::os::unix::fs::symlink(dir.join("secret.csv"), dir.join("traces/link.csv")).unwrap();
    std::os::unix::fs::symlink(dir, dir.join("traces/up")).unwrap();
    // A symbolic link that stays inside the folder is fine.
    std::os::unix::fs::symlink(dir.join("traces/ok.csv"), dir.join("traces/sub/alias.csv"))
        .unwrap();

    let absolute = dir.join("secret.csv").display().to_string();
    for (p, why) in [
        (absolute.as_str(), "relative path"),
        ("../secret.csv", "without `..`"),
        ("sub/../../secret.csv", "without `..`"),
        ("link.csv", "outside the trace directory"),
        ("up/secret.csv", "outside the trace directory"),
    ] {
        for cmd in ["validate", "run"] {
            let (code, err) = run(dir, cmd, p);
            assert_eq!(code, 2, "{cmd} {p}: {err}");
            assert!(
                err.contains("`workload.trace.public_path`"),
                "{cmd} {p}: {err}"
            );
            assert!(err.contains(why), "{cmd} {p}: {err}");
            assert!(!err.contains(SECRET), "{cmd} {p} echoed the file: {err}");
        }
    }
    assert!(!dir.join("out").exists(), "no run may start");
    for p in ["ok.csv", "sub/alias.csv"] {
        let (code, err) = run(dir, "validate", p);
        assert_eq!(code, 0, "{p}: {err}");
    }
}

/// A file that is not a trace at all (inside the folder, or named by `path`) gets an error
/// that does not print its first line.
#[test]
fn a_header_that_is_not_a_trace_is_not_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    std::fs::write(
        dir.join("traces/x.csv"),
        "root:x:0:0:root:/root:/bin/bash\n",
    )
    .unwrap();
    let (code, err) = run(dir, "validate", "x.csv");
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("root:x"), "{err}");
    // "root:x:0:0:root:/root:/bin/bash" is 31 bytes.
    assert!(
        err.contains("line 1: field `<31 bytes, not a column name>`"),
        "{err}"
    );
}
