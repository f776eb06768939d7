//! Independent oracle: Wireshark's OpenFlow dissector (Debian `tshark`) must
//! dissect every corpus message we encode with no malformed-packet or
//! error-severity expert flag, and must read the same type and xid we wrote.

use std::io::Write;
use std::process::Command;

/// Valid messages Wireshark 4.0's dissector mis-handles, with the evidence.
/// `ovs-ofctl ofp-print` decodes the first four (the other oracle test).
const DISSECTOR_BUGS: &[(&str, &str)] = &[
    (
        "v10_flow_mod_modify",
        "openflow_v1 reads an action header past the end of a FLOW_MOD with no actions; OVS prints actions=drop",
    ),
    ("v10_flow_mod_delete", "same: FLOW_MOD with no actions"),
    ("v10_flow_mod_delete_strict", "same: FLOW_MOD with no actions"),
    (
        "v13_mp_reply_experimenter",
        "flags an experimenter multipart reply whose request, with the identical layout, dissects cleanly",
    ),
    (
        "v13_meter_mod_experimenter",
        "flags a 16-byte experimenter band (ofp_meter_band_experimenter is exactly 16 bytes in 1.3)",
    ),
];

/// A classic pcap (Ethernet link type) holding one TCP segment per payload,
/// from 10.0.0.1:40000 to 10.0.0.2:6653, sequence numbers continuing.
fn pcap_of(payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [0xa1b2c3d4u32.to_le_bytes(), 0x0004_0002u32.to_le_bytes()] {
        out.extend_from_slice(&v); // magic, then version 2.4 as two u16 LE
    }
    out.extend_from_slice(&0i32.to_le_bytes()); // thiszone
    out.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
    out.extend_from_slice(&262_144u32.to_le_bytes()); // snaplen
    out.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    let mut seq: u32 = 1000;
    for (i, p) in payloads.iter().enumerate() {
        let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let total = 20 + 20 + p.len();
        let mut ip = vec![
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            1,
            0x40,
            0,
            64,
            6,
            0,
            0,
            10,
            0,
            0,
            1,
            10,
            0,
            0,
            2,
        ];
        let sum = ip
            .chunks(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]) as u32)
            .sum::<u32>();
        let folded = !(((sum & 0xffff) + (sum >> 16)) as u16);
        ip[10..12].copy_from_slice(&folded.to_be_bytes());
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&40000u16.to_be_bytes());
        frame.extend_from_slice(&6653u16.to_be_bytes());
        frame.extend_from_slice(&seq.to_be_bytes());
        frame.extend_from_slice(&1u32.to_be_bytes()); // ack
        frame.extend_from_slice(&[0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]); // PSH|ACK, window, csum, urg
        frame.extend_from_slice(p);
        seq = seq.wrapping_add(p.len() as u32);
        out.extend_from_slice(&(i as u32 + 1).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        out.extend_from_slice(&frame);
    }
    out
}

fn tshark(pcap: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(pcap)
        .args(["-o", "openflow.tcp.port:6653"])
        .args(args)
        .output()
        .expect("tshark not found: run scripts/install-deps.sh (Debian package tshark)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn tshark_dissects_every_message_we_encode_without_malformed_flags() {
    let corpus = ofwire::corpus::all();
    let payloads: Vec<Vec<u8>> = corpus.iter().map(|(_, m)| m.to_bytes().unwrap()).collect();
    let dir = TempDir(std::env::temp_dir().join(format!("sdnlab-t-tshark-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let path = dir.0.join("corpus.pcap");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&pcap_of(&payloads))
        .unwrap();

    let flagged = tshark(
        &path,
        &[
            "-Y",
            "_ws.malformed || _ws.expert.severity >= \"Error\"",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ],
    );
    let bad: Vec<String> = flagged
        .lines()
        .filter_map(|l| l.trim().parse::<usize>().ok())
        .map(|n| corpus[n - 1].0.clone())
        .collect();
    let known: Vec<String> = DISSECTOR_BUGS.iter().map(|(n, _)| n.to_string()).collect();
    let unexpected: Vec<&String> = bad.iter().filter(|n| !known.contains(n)).collect();
    assert!(
        unexpected.is_empty(),
        "tshark flags these messages as malformed: {unexpected:?}"
    );
    for k in &known {
        assert!(
            bad.contains(k),
            "{k} is listed as a dissector bug but tshark now accepts it: remove it from DISSECTOR_BUGS"
        );
    }

    let fields = tshark(
        &path,
        &[
            "-T",
            "fields",
            "-E",
            "separator=;",
            "-e",
            "frame.number",
            "-e",
            "openflow.version",
            "-e",
            "openflow_1_0.type",
            "-e",
            "openflow_v4.type",
            "-e",
            "openflow.xid",
            "-e",
            "openflow_v4.xid",
            "-e",
            "openflow_v6.type",
        ],
    );
    let mut seen = 0;
    for line in fields.lines() {
        let f: Vec<&str> = line.split(';').collect();
        let n: usize = f[0].parse().unwrap();
        let (name, msg) = &corpus[n - 1];
        let (ty, xid) = match msg.version {
            ofwire::OFP10_VERSION => (f[2], f[4]),
            ofwire::OFP13_VERSION => (f[3], f[5]),
            _ => (f[6], ""),
        };
        assert_eq!(
            ty.split(',').next().unwrap(),
            msg.msg_type().to_string(),
            "{name}: tshark reads another type: {line}"
        );
        if !xid.is_empty() {
            assert_eq!(
                xid.split(',').next().unwrap(),
                msg.xid.to_string(),
                "{name}: tshark reads another xid"
            );
        }
        seen += 1;
    }
    assert_eq!(seen, corpus.len(), "tshark did not dissect every frame");
}

/// Removes the directory even when an assertion fails.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
