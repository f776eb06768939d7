//! Fuzz target: the worker's channel as a coordinator's frames reach it
//! after authentication: bytes cut into lines (at most `MAX_LINE` each,
//! `proto::read_line`), each line decoded as a request of the protocol.
//! A panic is a bug; so is a request decoded here that the worker's own
//! encoding does not read back as a request.
#![no_main]

use fleet::proto::{self, Request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = tokio::io::BufReader::new(data);
    // A slice is always ready: the future completes on its first poll.
    while let Ok(Some(line)) = futures::executor::block_on(proto::read_line(&mut r)) {
        if let Ok(req) = serde_json::from_slice::<Request>(&line) {
            let again = proto::line(&req);
            let back = serde_json::from_slice::<Request>(&again[..again.len() - 1]);
            assert!(back.is_ok(), "a request the worker took does not read back: {:?}", back.err());
        }
    }
});
