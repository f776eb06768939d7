//! A tool installed the first time it is needed, for real: Debian's
//! `hello` (one small package with no service and nothing depending on it)
//! through `netlab::install::need`, as root with apt-get. Refused first
//! with `SDNLAB_INSTALL=never` (the one command said), then installed
//! (and run), then removed again if this test put it there.

use netlab::install::{need, InstallError, Tool};

const HELLO: Tool = Tool {
    program: "hello",
    package: "hello",
    what: "GNU hello",
    service: None,
};

fn installed() -> bool {
    std::process::Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "hello"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

#[test]
fn a_missing_tool_is_installed_on_first_use_or_its_command_said() {
    if installed() {
        // Someone's own `hello`: not ours to remove and reinstall.
        eprintln!("hello is installed on this machine already; nothing to show");
        return;
    }
    struct Purge;
    impl Drop for Purge {
        fn drop(&mut self) {
            let _ = std::process::Command::new("apt-get")
                .args(["-q", "-y", "purge", "hello"])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .output();
        }
    }
    let _purge = Purge;
    // (This binary's only test: no other thread reads the environment.)
    std::env::set_var("SDNLAB_INSTALL", "never");
    match need(&[HELLO]) {
        Err(e @ InstallError::Missing { .. }) => {
            assert_eq!(
                e.to_string(),
                "not installed: GNU hello; run `apt-get install hello` (or scripts/install-deps.sh peers)"
            )
        }
        other => panic!("SDNLAB_INSTALL=never must refuse and say how: {other:?}"),
    }
    assert!(!installed());
    std::env::remove_var("SDNLAB_INSTALL");
    need(&[HELLO]).expect("hello installed through apt-get");
    assert!(installed());
    let out = std::process::Command::new("hello").output().expect("hello runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Hello, world!");
    // Found now: a second call installs nothing.
    need(&[HELLO]).unwrap();
}
