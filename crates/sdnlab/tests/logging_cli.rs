//! Logs through `tracing`: a component turned up by name (RUST_LOG or
//! --log-level), JSON lines a machine parses back, the default lines as
//! people have always read them, and a bad filter in one line. As root
//! (`net up` makes namespaces).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn sdnlab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sdnlab"));
    c.env_remove("RUST_LOG");
    c
}

/// `net up single,2` until it is up, then down; its stderr.
fn up_and_down(env: Option<(&str, &str)>, args: &[&str]) -> String {
    let mut c = sdnlab();
    c.args(["net", "up", "single,2", "--no-live"]).args(args);
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    let mut up = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = up.stdout.take().unwrap();
    let mut seen = Vec::new();
    let t = Instant::now();
    let mut buf = [0u8; 4096];
    // The run's id is on its first line ("run ID: ...").
    let id = loop {
        let n = out.read(&mut buf).unwrap();
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(l) = text.lines().find(|l| l.starts_with("run ") && l.contains(": ")) {
            break l[4..l.find(':').unwrap()].to_string();
        }
        assert!(n > 0 && t.elapsed() < Duration::from_secs(30), "never up: {text}");
    };
    let down = sdnlab().args(["net", "down", "--id", &id]).output().unwrap();
    assert!(down.status.success(), "{}", String::from_utf8_lossy(&down.stderr));
    let mut err = String::new();
    up.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(up.wait().unwrap().success(), "{err}");
    err
}

#[test]
fn a_component_is_turned_up_by_name_and_json_is_parsed_back() {
    // Default: netlab's phase times are debug, not shown.
    let plain = up_and_down(None, &[]);
    assert!(!plain.contains("netlab: namespaces at"), "{plain}");
    // RUST_LOG turns netlab up, and only netlab.
    let traced = up_and_down(Some(("RUST_LOG", "info,netlab=debug")), &[]);
    assert!(traced.contains("netlab: namespaces at"), "{traced}");
    assert!(traced.contains("netlab: teardown: interfaces gone at"), "{traced}");
    // The same through the flag, as JSON: every stderr line an object
    // with its level, target and message.
    let json = up_and_down(None, &["--log-level", "warn,netlab=debug", "--log-format", "json"]);
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let phase = lines
        .iter()
        .find(|l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("netlab: namespaces at"))
        })
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(phase["level"], "DEBUG", "{phase}");
    assert!(phase["target"].as_str().unwrap().starts_with("netlab"), "{phase}");
    assert!(phase["timestamp"].is_string(), "{phase}");
}

#[test]
fn default_lines_are_the_message_alone_and_bad_filters_one_line() {
    let r = sdnlab().args(["switch", "--port", "zz9none"]).output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&r.stderr).trim(),
        "sdnlab: zz9none: no such network interface"
    );
    let r = sdnlab()
        .args(["--log-level", "controller=loud", "ofp", "decode", "00"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("sdnlab: --log-level 'controller=loud' is not a level or filter"),
        "{err}"
    );
    let r = sdnlab()
        .env("RUST_LOG", "controller=loud")
        .args(["ofp", "decode", "00"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&r.stderr).starts_with("sdnlab: RUST_LOG 'controller=loud' is not a filter"));
}
