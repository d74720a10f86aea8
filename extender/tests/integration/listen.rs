//! Starting the service on an address another process holds: one line naming the address
//! and the likely cause, exit code 1, no backtrace.

#[test]
fn address_in_use_is_one_line_without_a_backtrace() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim-extender"))
        .arg("--listen")
        .arg(addr.to_string())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("error: cannot listen on {addr}: "))
            && err.contains("another process (another fleetsim-extender?) is listening there"),
        "{err}"
    );
    assert!(
        !err.contains("backtrace") && !err.contains("Caused by"),
        "{err}"
    );
    drop(held);
}
