//! `sdnlab ofp decode` as a user runs it: exit codes, stdout, stderr.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn sdnlab(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn capture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../captures/ovs-learning-switch.pcapng")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn bundled_capture_of_real_ovs_decodes_completely() {
    let out = sdnlab(&["ofp", "decode", "--pcap", capture().to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.lines().count() >= 20, "{stdout}");
    for want in [
        "v1.0 PACKET_IN",
        "v1.3 PACKET_IN",
        "v1.0 FLOW_MOD",
        "v1.3 FLOW_MOD",
        "v1.0 FEATURES_REPLY",
        "v1.3 HELLO",
        "127.0.0.1:6653 >",
    ] {
        assert!(stdout.contains(want), "missing {want}:\n{stdout}");
    }
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn classic_pcap_gives_the_same_messages_as_pcapng() {
    let dir = std::env::temp_dir().join(format!("sdnlab-t-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("c.pcap");
    let st = Command::new("editcap")
        .args(["-F", "pcap", capture().to_str().unwrap(), pcap.to_str().unwrap()])
        .status()
        .expect("editcap (Debian wireshark-common) missing");
    assert!(st.success());
    let a = sdnlab(&["ofp", "decode", "--pcap", capture().to_str().unwrap()], None);
    let b = sdnlab(&["ofp", "decode", "--pcap", pcap.to_str().unwrap()], None);
    std::fs::remove_dir_all(&dir).ok();
    assert!(b.status.success());
    assert_eq!(text(&a.stdout), text(&b.stdout));
}

#[test]
fn json_lines_carry_type_xid_and_body() {
    let out = sdnlab(
        &["ofp", "decode", "--json", "--pcap", capture().to_str().unwrap()],
        None,
    );
    assert!(out.status.success());
    let mut types = Vec::new();
    for line in text(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(
            v["xid"].is_u64() && v["body"].is_object() && v["flow"].is_string(),
            "{line}"
        );
        types.push(v["type"].as_str().unwrap().to_string());
    }
    assert!(types.iter().any(|t| t == "PACKET_IN"));
}

#[test]
fn stdin_lines_decode_and_a_bad_line_is_named_with_a_nonzero_exit() {
    let input = "# a HELLO and an ECHO in one line, then a FEATURES_REQUEST with a stray byte\n0100000800000001010200090000000207\n\n0405000900000003ff\n";
    let out = sdnlab(&["ofp", "decode", "-"], Some(input));
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("v1.0 HELLO xid=1") && stdout.contains("v1.0 ECHO_REQUEST xid=2"),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("line 4") && stderr.contains("BAD_REQUEST/BAD_LEN"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn hello_of_any_version_decodes() {
    let out = sdnlab(&["ofp", "decode", "0600001000000007000100080000007a"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("HELLO xid=7"));
}

#[test]
fn user_errors_are_one_line_with_exit_code_two() {
    for args in [
        vec!["ofp", "decode"],
        vec!["ofp", "decode", "--pcap", "/nonexistent/x.pcap"],
    ] {
        let out = sdnlab(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("sdnlab: "), "{stderr}");
    }
    let out = sdnlab(
        &["ofp", "decode", "--pcap", capture().to_str().unwrap(), "--port", "1234"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no OpenFlow messages"));
}
