//! The LLDP probes `topology` sends, read by an independent dissector
//! (tshark): chassis id, port id and TTL as we meant them, and no warning
//! or error from Wireshark's LLDP dissector.

use controller::lldp::{write_probe, Probe};
use ofwire::MacAddr;
use std::process::Command;

fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [
        0xa1b2c3d4u32.to_le_bytes().to_vec(),
        vec![2, 0, 4, 0],
        vec![0; 8],
        65535u32.to_le_bytes().to_vec(),
        1u32.to_le_bytes().to_vec(),
    ] {
        out.extend_from_slice(&v);
    }
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

#[test]
fn tshark_reads_our_probes_as_meant() {
    let probes = [
        Probe {
            datapath_id: 1,
            port: 1,
        },
        Probe {
            datapath_id: 0x0000_0a0b_0c0d_0e0f,
            port: 65534,
        },
        Probe {
            datapath_id: u64::MAX,
            port: 0xffff_ff00,
        },
    ];
    let frames: Vec<Vec<u8>> = probes
        .iter()
        .map(|p| {
            let mut f = Vec::new();
            write_probe(&mut f, MacAddr([2, 0, 0, 0, 0, 9]), *p);
            f
        })
        .collect();
    let path = std::env::temp_dir().join(format!("sdnlab-lldp-{}.pcap", std::process::id()));
    std::fs::write(&path, pcap(&frames)).unwrap();
    let fields = Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-T", "fields", "-E", "separator=|"])
        .args(["-e", "eth.dst", "-e", "lldp.chassis.subtype", "-e", "lldp.chassis.id"])
        .args("-e lldp.port.subtype -e lldp.port.id -e lldp.time_to_live".split_whitespace())
        .output()
        .expect("tshark runs (scripts/install-deps.sh installs it)");
    assert!(fields.status.success(), "{}", String::from_utf8_lossy(&fields.stderr));
    let text = String::from_utf8_lossy(&fields.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), probes.len(), "{text}");
    for (line, p) in lines.iter().zip(&probes) {
        let chassis_hex: String = format!("dpid:{:016x}", p.datapath_id)
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        let want = format!("01:80:c2:00:00:0e|7|{chassis_hex}|7|{}|120", p.port);
        assert_eq!(*line, want);
    }
    // Nothing the dissector finds wrong (notes about Ethernet padding aside).
    let bad = Command::new("tshark")
        .args([
            "-r",
            path.to_str().unwrap(),
            "-Y",
            "_ws.malformed || _ws.expert.severity >= 0x600000",
        ])
        .output()
        .unwrap();
    assert!(bad.status.success());
    assert_eq!(
        String::from_utf8_lossy(&bad.stdout).trim(),
        "",
        "tshark flags our probes"
    );
    let _ = std::fs::remove_file(&path);
}
