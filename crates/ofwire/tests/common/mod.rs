//! Helpers shared by the tests that talk to real Open vSwitch.

/// With SDNLAB_RECORD_VECTORS=FILE, appends each message received from the
/// real peer as a `source hex` line (scripts/record-vectors.sh uses this to
/// refresh crates/ofwire/tests/vectors/ovs.txt).
pub fn record_vector(source: &str, raw: &[u8]) {
    if let Ok(path) = std::env::var("SDNLAB_RECORD_VECTORS") {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("vector file");
        writeln!(f, "{source} {}", ofwire::types::to_hex(raw)).expect("write vector");
    }
}
