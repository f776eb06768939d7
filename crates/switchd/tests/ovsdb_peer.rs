//! `sdnlab-switch --ovsdb` against a database server of this test's own
//! that sends what a real ovsdb-server never would: updates that are not
//! RFC 7047, tables and columns outside the schema. The switch logs each,
//! keeps its replica as it was, and still applies the next good update
//! (it writes cur_cfg for it). Debian's real ovsdb-server drives the same
//! switch in `crates/sdnlab/tests/switch_ovsdb.rs`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = "00000000-0000-0000-0000-000000000001";
const BR1: &str = "00000000-0000-0000-0000-0000000000b1";
const BR2: &str = "00000000-0000-0000-0000-0000000000b2";

/// Reads one JSON text from the stream (the switch sends one per write).
fn next_json(rd: &mut BufReader<UnixStream>, pending: &mut Vec<u8>) -> Value {
    loop {
        let mut it = serde_json::Deserializer::from_slice(pending).into_iter::<Value>();
        match it.next() {
            Some(Ok(v)) => {
                let used = it.byte_offset();
                pending.drain(..used);
                return v;
            }
            Some(Err(e)) if !e.is_eof() => panic!("the switch sent something not JSON: {e}"),
            _ => {}
        }
        let buf = rd.fill_buf().expect("read");
        assert!(!buf.is_empty(), "the switch closed the database connection");
        pending.extend_from_slice(buf);
        let n = buf.len();
        rd.consume(n);
    }
}

fn schema() -> Value {
    let cols = |names: &[&str]| -> Value {
        names
            .iter()
            .map(|n| (n.to_string(), json!({"type": "string"})))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    json!({"name": "Open_vSwitch", "version": "8.3.1", "tables": {
        "Open_vSwitch": {"columns": cols(&["bridges", "next_cfg", "cur_cfg"])},
        "Bridge": {"columns": cols(&["name", "ports", "controller", "fail_mode", "protocols", "other_config", "datapath_id"])},
        "Port": {"columns": cols(&["name", "interfaces"])},
        "Interface": {"columns": cols(&["name", "type", "ofport", "statistics"])},
        "Controller": {"columns": cols(&["target", "is_connected"])},
    }})
}

#[test]
fn malformed_updates_and_unknown_columns_are_logged_and_survived() {
    let dir = std::env::temp_dir().join(format!("sdnlab-ovsdb-peer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("db.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let mut sw = Command::new(env!("CARGO_BIN_EXE_sdnlab-switch"))
        .args(["--ovsdb", &format!("unix:{}", sock.display())])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut wr = conn.try_clone().unwrap();
    let mut rd = BufReader::new(conn);
    let mut pending = Vec::new();
    let mut send = |v: Value| {
        wr.write_all(v.to_string().as_bytes()).unwrap();
    };
    // get_schema, lock, monitor: answered as ovsdb-server would.
    let mut monitor_id = Value::Null;
    for _ in 0..3 {
        let req = next_json(&mut rd, &mut pending);
        let id = req["id"].clone();
        match req["method"].as_str().unwrap() {
            "get_schema" => send(json!({"id": id, "result": schema(), "error": null})),
            "lock" => send(json!({"id": id, "result": {"locked": true}, "error": null})),
            "monitor" => {
                monitor_id = req["params"][1].clone();
                send(json!({"id": id, "error": null, "result": {
                    "Open_vSwitch": {ROOT: {"new": {"bridges": ["uuid", BR1], "next_cfg": 1}}},
                    "Bridge": {BR1: {"new": {"name": "svdp1", "ports": ["set", []], "controller": ["set", []]}}},
                }}));
            }
            m => panic!("unexpected request {m}"),
        }
    }
    // Waits for a transact setting cur_cfg to `cfg`, answering every
    // transact on the way.
    let mut await_cfg = |send: &mut dyn FnMut(Value), cfg: i64| {
        let t = Instant::now();
        loop {
            assert!(t.elapsed() < Duration::from_secs(20), "no cur_cfg {cfg}");
            let req = next_json(&mut rd, &mut pending);
            if req["method"] != "transact" {
                continue;
            }
            let ops = req["params"].as_array().unwrap()[1..].to_vec();
            send(
                json!({"id": req["id"], "error": null, "result": ops.iter().map(|_| json!({"count": 1})).collect::<Vec<_>>()}),
            );
            if ops
                .iter()
                .any(|o| o["table"] == "Open_vSwitch" && o["row"]["cur_cfg"] == json!(cfg))
            {
                return ops;
            }
        }
    };
    let ops = await_cfg(&mut send, 1);
    // Without other_config:datapath-id: the low 48 bits of the row's UUID.
    assert!(
        ops.iter()
            .any(|o| o["table"] == "Bridge" && o["row"]["datapath_id"] == "00000000000000b1"),
        "{ops:?}"
    );
    // What no server should send.
    for bad in [
        json!({"method": "update", "params": [monitor_id, {"Bridge": 7}], "id": null}),
        json!({"method": "update", "params": [monitor_id, {"Bridge": {BR1: {"new": {"name": {"not": "an atom"}}}}}], "id": null}),
        json!({"method": "update", "params": [monitor_id, {"Bridge": {"x": {"new": {}}}}], "id": null}),
        json!({"method": "update", "params": [monitor_id], "id": null}),
        json!({"method": "no_such_notification", "params": [], "id": null}),
        json!({"method": "update", "params": [monitor_id, {"Frobnicator": {BR2: {"new": {"level": 11}}}}], "id": null}),
        json!({"method": "update", "params": [monitor_id, {"Bridge": {BR1: {"new": {"frobnicate": true}}}}], "id": null}),
    ] {
        send(bad);
    }
    // Then a good one: a second bridge, and next_cfg 2.
    send(json!({"method": "update", "params": [monitor_id, {
        "Open_vSwitch": {ROOT: {"new": {"bridges": ["set", [["uuid", BR1], ["uuid", BR2]]], "next_cfg": 2}}},
        "Bridge": {BR2: {"new": {"name": "svdp2", "ports": ["set", []], "controller": ["set", []],
            "other_config": ["map", [["datapath-id", "00000000000000e2"]]]}}},
    }], "id": null}));
    let ops = await_cfg(&mut send, 2);
    assert!(
        ops.iter().any(|o| o["table"] == "Bridge"
            && o["where"][0][2][1] == BR2
            && o["row"]["datapath_id"] == "00000000000000e2"),
        "the second bridge's datapath id was not written: {ops:?}"
    );
    // Both bridges listen where ovs-ofctl looks.
    for b in ["svdp1", "svdp2"] {
        assert!(UnixStream::connect(dir.join(format!("{b}.mgmt"))).is_ok(), "{b}.mgmt");
    }
    assert!(sw.try_wait().unwrap().is_none(), "the switch exited");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(sw.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = sw.wait().unwrap();
    let mut log = String::new();
    sw.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(status.success(), "{log}");
    for expected in [
        "a malformed update was ignored: table Bridge: not an object of rows",
        "column name: {\"not\":\"an atom\"} is not an atom",
        "row \"x\": not a UUID",
        "an update without table-updates was ignored",
        "table Frobnicator has rows; sdnlab's switch does not implement it",
        "Bridge.frobnicate (row svdp1) is not implemented",
    ] {
        assert!(log.contains(expected), "no {expected:?} in the log:\n{log}");
    }
    assert_eq!(log.matches("Bridge.frobnicate").count(), 1, "said once:\n{log}");
    assert!(
        !dir.join("svdp1.mgmt").exists(),
        "the management socket stays after the switch stopped"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
