//! The `fleetsim` binary as a user runs it: the default scenario, and bad input.

use std::process::Command;

fn fleetsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
}

#[test]
fn run_without_scenario_runs_the_embedded_default() {
    let out = tempfile::tempdir().unwrap();
    let o = fleetsim()
        .args(["run", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(
        table.contains("scenario default") && table.contains("occupancy"),
        "{table}"
    );
    for f in ["summary.json", "jobs.csv", "timeseries.csv"] {
        assert!(out.path().join(f).is_file(), "{f}");
    }
}

fn bad_scenario(text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, text).unwrap();
    let o = fleetsim().arg("validate").arg(&p).output().unwrap();
    (
        o.status.code().unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

const OK_FLEET: &str = r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 2
"#;

#[test]
fn unknown_scenario_key_is_named() {
    let (code, err) = bad_scenario(&format!(
        "name = \"x\"\nsede = 3\n{OK_FLEET}[workload.synthetic]\njobs = 1\n"
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("s.toml") && err.contains("sede"), "{err}");
}

#[test]
fn unknown_policy_name_lists_valid_ones() {
    let (code, err) = bad_scenario(&format!(
        "name = \"x\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"native\", path = \"j.csv\" }}\n[policy]\nplacement = \"bestfit\"\n"
    ));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bestfit") && err.contains("best-fit"), "{err}");
}

#[test]
fn unknown_accelerator_and_zero_capacity_are_named() {
    let (code, err) = bad_scenario(
        "name = \"x\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\naccelerator = \"H1000\"\ngpus = 8\ncount = 1\n[workload]\ntrace = { format = \"native\", path = \"j.csv\" }\n",
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("fleet.cells[0].nodes[0].accelerator") && err.contains("H1000"),
        "{err}"
    );
    let (code, err) = bad_scenario(
        "name = \"x\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\ncount = 1\n[workload]\ntrace = { format = \"native\", path = \"j.csv\" }\n",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zero capacity"), "{err}");
}

#[test]
fn bad_trace_row_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("j.csv"),
        "id,submit_s,tenant,num_gpu,runtime_s\na,0,t,1,10\nb,zz,t,1,10\n",
    )
    .unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(
        &p,
        format!("name = \"x\"\n{OK_FLEET}[workload]\ntrace = {{ format = \"native\", path = \"j.csv\" }}\n"),
    )
    .unwrap();
    let out_dir = dir.path().join("o");
    for cmd in ["validate", "run"] {
        let mut c = fleetsim();
        c.arg(cmd).arg(&p).arg("--trace-dir").arg(dir.path());
        if cmd == "run" {
            c.arg("--out").arg(&out_dir);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("j.csv") && err.contains("line 3") && err.contains("submit_s"),
            "{cmd}: {err}"
        );
    }
    // A failed run leaves no half-written output.
    let o = dir.path().join("o");
    assert!(!o.join("jobs.csv").exists() && !o.join("summary.json").exists());
}
