//! Fuzz target: the whole decoding surface on arbitrary bytes. Panics are
//! bugs; so is accepting a message that does not re-encode to its own bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // As a stream: framing, then each message.
    let mut framer = ofwire::Framer::default();
    framer.push(data);
    while let Ok(Some(msg)) = framer.next_message() {
        let msg = msg.to_vec();
        if let Ok(m) = ofwire::decode(&msg) {
            assert_eq!(m.to_bytes().expect("decoded messages encode"), msg, "not byte-exact: {m}");
        }
        let _ = ofwire::hot::PacketInView::parse(&msg);
        let _ = ofwire::decode_in_session(&msg, ofwire::OFP13_VERSION);
    }
    // As one message with an honest length, so bodies are reached directly.
    if data.len() >= 8 && data.len() <= 65535 {
        let mut msg = data.to_vec();
        msg[2..4].copy_from_slice(&(data.len() as u16).to_be_bytes());
        if let Ok(m) = ofwire::decode(&msg) {
            assert_eq!(m.to_bytes().expect("decoded messages encode"), msg, "not byte-exact: {m}");
        }
    }
});
