//! Fuzz target: what the REST API does with a write's body before any
//! switch sees it: the JSON of a flow to add (`POST
//! /switches/{dpid}/flows`) and of a filter of flows to delete (`DELETE`),
//! turned into FLOW_MODs for OpenFlow 1.0 and 1.3. A panic is a bug; so is
//! a FLOW_MOD accepted here that does not encode.
#![no_main]

use controller::flows::{FlowFilter, FlowSpec};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for version in [ofwire::OFP10_VERSION, ofwire::OFP13_VERSION] {
        if let Ok(spec) = serde_json::from_str::<FlowSpec>(text) {
            if let Ok(body) = spec.add(version) {
                ofwire::Message::new(version, 1, body).to_bytes().expect("an accepted flow encodes");
            }
        }
        if let Ok(filter) = serde_json::from_str::<FlowFilter>(text) {
            if let Ok(body) = filter.delete(version) {
                ofwire::Message::new(version, 1, body).to_bytes().expect("an accepted filter encodes");
            }
        }
    }
});
