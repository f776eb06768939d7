//! How an emulated switch answers the controller's control messages
//! (protocol behaviour only, no I/O): FEATURES with its ports, port
//! description, GET_CONFIG, ECHO, BARRIER, DESC and the other stats a
//! controller may ask (answered empty, but well-formed), so controllers that
//! probe a switch before using it accept ours.

use ofwire::{v10, v13, Body, Message, OFP10_VERSION};

/// What the emulated switch is.
#[derive(Clone, Copy, Debug)]
pub struct Identity {
    pub datapath_id: u64,
    pub ports: u32,
}

/// The hardware address of an emulated port (the switch model's).
pub use ofswitch::emulated::port_mac;

/// What an emulated switch says it is (DESC).
pub fn desc() -> ofwire::DescStats {
    ofwire::DescStats {
        mfr_desc: "sdnlab".into(),
        hw_desc: "emulated switch".into(),
        sw_desc: env!("CARGO_PKG_VERSION").into(),
        serial_num: "0".into(),
        dp_desc: "sdnlab bench ctl".into(),
    }
}

/// The answer to a control message, as the messages that carry it: none,
/// one, or a multipart reply in parts under 64 KB (REPLY_MORE on all but
/// the last), as a switch must send it.
pub fn replies(id: Identity, m: &Message) -> Vec<Message> {
    const MAX_MESSAGE: usize = 60_000;
    match reply(id, m) {
        None => Vec::new(),
        Some(Message {
            version,
            xid,
            body: Body::V13(v13::Body::MultipartReply(r)),
        }) => r
            .split(MAX_MESSAGE)
            .into_iter()
            .map(|p| Message::new(version, xid, Body::V13(v13::Body::MultipartReply(p))))
            .collect(),
        Some(Message {
            version,
            xid,
            body: Body::V10(v10::Body::StatsReply(r)),
        }) => r
            .split(MAX_MESSAGE)
            .into_iter()
            .map(|p| Message::new(version, xid, Body::V10(v10::Body::StatsReply(p))))
            .collect(),
        Some(one) => vec![one],
    }
}

/// The answer to a control message, if it needs one, whole (`replies`
/// cuts a large multipart reply into the messages that carry it).
pub fn reply(id: Identity, m: &Message) -> Option<Message> {
    let x = m.xid;
    let ports10 = || -> Vec<v10::PhyPort> {
        (1..=id.ports.min(0xff00))
            .map(|p| v10::PhyPort {
                curr: 0x2c0,
                ..v10::PhyPort::new(p as u16, port_mac(id.datapath_id, p), format!("eth{p}"))
            })
            .collect()
    };
    let ports13 = || -> Vec<v13::Port> {
        (1..=id.ports)
            .map(|p| v13::Port {
                curr: 0x2040,
                curr_speed: 10_000_000,
                max_speed: 10_000_000,
                ..v13::Port::new(p, port_mac(id.datapath_id, p), format!("eth{p}"))
            })
            .collect()
    };
    let config = ofwire::SwitchConfig {
        flags: 0,
        miss_send_len: 128,
    };
    Some(match &m.body {
        Body::V10(b) => Message::v10(
            x,
            match b {
                v10::Body::EchoRequest(d) => v10::Body::EchoReply(d.clone()),
                v10::Body::FeaturesRequest => v10::Body::FeaturesReply(v10::FeaturesReply {
                    datapath_id: id.datapath_id,
                    n_buffers: 65536,
                    n_tables: 1,
                    capabilities: 0xc7,
                    actions: 0xfff,
                    ports: ports10(),
                }),
                v10::Body::GetConfigRequest => v10::Body::GetConfigReply(config),
                v10::Body::BarrierRequest => v10::Body::BarrierReply,
                v10::Body::StatsRequest(r) => v10::Body::StatsReply(v10::StatsReply {
                    flags: 0,
                    body: match &r.body {
                        v10::StatsRequestBody::Desc => v10::StatsReplyBody::Desc(desc()),
                        v10::StatsRequestBody::Flow(_) => v10::StatsReplyBody::Flow(vec![]),
                        v10::StatsRequestBody::Aggregate(_) => v10::StatsReplyBody::Aggregate(ofwire::AggregateStats {
                            packet_count: 0,
                            byte_count: 0,
                            flow_count: 0,
                        }),
                        v10::StatsRequestBody::Table => v10::StatsReplyBody::Table(vec![]),
                        v10::StatsRequestBody::Port { .. } => v10::StatsReplyBody::Port(vec![]),
                        v10::StatsRequestBody::Queue { .. } => v10::StatsReplyBody::Queue(vec![]),
                        v10::StatsRequestBody::PortDesc => v10::StatsReplyBody::PortDesc(ports10()),
                        v10::StatsRequestBody::Vendor { .. } => return None,
                    },
                }),
                _ => return None,
            },
        ),
        Body::V13(b) => Message::v13(
            x,
            match b {
                v13::Body::EchoRequest(d) => v13::Body::EchoReply(d.clone()),
                v13::Body::FeaturesRequest => v13::Body::FeaturesReply(v13::FeaturesReply {
                    datapath_id: id.datapath_id,
                    n_buffers: 65536,
                    n_tables: 254,
                    auxiliary_id: 0,
                    capabilities: 0x4f,
                    reserved: 0,
                }),
                v13::Body::GetConfigRequest => v13::Body::GetConfigReply(config),
                v13::Body::BarrierRequest => v13::Body::BarrierReply,
                // A switch with no roles model (the session-capacity and
                // security tests' switches; cbench's load keeps
                // `ofswitch::roles`): the role asked is the role held.
                v13::Body::RoleRequest(r) => v13::Body::RoleReply(r.clone()),
                v13::Body::MultipartRequest(r) => v13::Body::MultipartReply(v13::MultipartReply {
                    flags: 0,
                    body: match &r.body {
                        v13::MultipartRequestBody::Desc => v13::MultipartReplyBody::Desc(desc()),
                        v13::MultipartRequestBody::PortDesc => v13::MultipartReplyBody::PortDesc(ports13()),
                        v13::MultipartRequestBody::Flow(_) => v13::MultipartReplyBody::Flow(vec![]),
                        v13::MultipartRequestBody::Aggregate(_) => {
                            v13::MultipartReplyBody::Aggregate(ofwire::AggregateStats {
                                packet_count: 0,
                                byte_count: 0,
                                flow_count: 0,
                            })
                        }
                        v13::MultipartRequestBody::Table => v13::MultipartReplyBody::Table(vec![]),
                        v13::MultipartRequestBody::PortStats { .. } => v13::MultipartReplyBody::PortStats(vec![]),
                        v13::MultipartRequestBody::Queue { .. } => v13::MultipartReplyBody::Queue(vec![]),
                        v13::MultipartRequestBody::Group { .. } => v13::MultipartReplyBody::Group(vec![]),
                        v13::MultipartRequestBody::GroupDesc => v13::MultipartReplyBody::GroupDesc(vec![]),
                        v13::MultipartRequestBody::Meter { .. } => v13::MultipartReplyBody::Meter(vec![]),
                        v13::MultipartRequestBody::MeterConfig { .. } => v13::MultipartReplyBody::MeterConfig(vec![]),
                        _ => return None,
                    },
                }),
                _ => return None,
            },
        ),
        _ => return None,
    })
}

/// Whether the version is 1.0 (ports are 16 bits there).
pub fn is_v10(version: u8) -> bool {
    version == OFP10_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An emulated switch with 2,000 ports (128 KB of port descriptions)
    /// answers in parts that each fit a message, REPLY_MORE on all but the
    /// last, every port once.
    #[test]
    fn a_large_port_description_comes_in_parts() {
        let id = Identity {
            datapath_id: 7,
            ports: 2000,
        };
        let ask = Message::v13(
            3,
            v13::Body::MultipartRequest(v13::MultipartRequest {
                flags: 0,
                body: v13::MultipartRequestBody::PortDesc,
            }),
        );
        let parts = replies(id, &ask);
        assert!(parts.len() >= 3, "{} parts", parts.len());
        let mut ports = Vec::new();
        for (i, m) in parts.iter().enumerate() {
            let bytes = m.to_bytes().unwrap();
            assert!(bytes.len() <= 65_535 && m.xid == 3);
            let Body::V13(v13::Body::MultipartReply(r)) = ofwire::decode(&bytes).unwrap().body else {
                panic!("{m}")
            };
            assert_eq!(r.flags, if i + 1 < parts.len() { v13::MULTIPART_MORE } else { 0 });
            let v13::MultipartReplyBody::PortDesc(l) = r.body else {
                panic!()
            };
            ports.extend(l.iter().map(|p| p.port_no));
        }
        assert_eq!(ports, (1..=2000).collect::<Vec<u32>>());
        // A small answer stays one message.
        assert_eq!(
            replies(
                Identity {
                    datapath_id: 7,
                    ports: 4
                },
                &ask
            )
            .len(),
            1
        );
    }

    #[test]
    fn control_messages_get_well_formed_answers() {
        let id = Identity {
            datapath_id: 7,
            ports: 4,
        };
        let asks = [
            Message::v10(1, v10::Body::FeaturesRequest),
            Message::v10(2, v10::Body::GetConfigRequest),
            Message::v10(3, v10::Body::BarrierRequest),
            Message::v10(4, v10::Body::EchoRequest(ofwire::Bytes(vec![1, 2]))),
            Message::v10(
                5,
                v10::Body::StatsRequest(v10::StatsRequest {
                    flags: 0,
                    body: v10::StatsRequestBody::Desc,
                }),
            ),
            Message::v13(6, v13::Body::FeaturesRequest),
            Message::v13(
                7,
                v13::Body::MultipartRequest(v13::MultipartRequest {
                    flags: 0,
                    body: v13::MultipartRequestBody::PortDesc,
                }),
            ),
            Message::v13(8, v13::Body::BarrierRequest),
        ];
        for m in &asks {
            let r = reply(id, m).unwrap_or_else(|| panic!("no answer to {m}"));
            assert_eq!(r.xid, m.xid);
            // Encodes and decodes back: well-formed.
            let bytes = r.to_bytes().unwrap();
            assert_eq!(ofwire::decode(&bytes).unwrap(), r);
        }
        let Body::V10(v10::Body::FeaturesReply(f)) = reply(id, &asks[0]).unwrap().body else {
            panic!()
        };
        assert_eq!((f.datapath_id, f.ports.len()), (7, 4));
        assert!(reply(id, &Message::v10(9, v10::Body::BarrierReply)).is_none());
    }
}
