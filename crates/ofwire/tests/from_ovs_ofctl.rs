//! The other direction: messages produced by a real implementation. We
//! listen as a switch, let Open vSwitch's `ovs-ofctl` connect and send
//! FLOW_MODs, GROUP_MODs, METER_MODs, PACKET_OUTs, PORT_MODs and every stats
//! request it knows, answer what it waits for, and check that every message
//! it sent decodes with us and re-encodes byte-exact.

mod common;
use common::record_vector;
use ofwire::{v10, v13, Body, DescStats, Framer, Hello, Message, OFP10_VERSION, OFP13_VERSION};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

fn desc() -> DescStats {
    DescStats {
        mfr_desc: "sdnlab".into(),
        hw_desc: "test".into(),
        sw_desc: "0".into(),
        serial_num: "1".into(),
        dp_desc: "fake".into(),
    }
}

/// The one port the fake 1.0 switch has (FEATURES_REPLY, port description).
fn port10() -> v10::PhyPort {
    v10::PhyPort::new(1, ofwire::MacAddr([2, 0, 0, 0, 0, 1]), "p1")
}

fn reply10(req: &v10::Body, config: &mut ofwire::SwitchConfig) -> Option<v10::Body> {
    use v10::Body as B;
    Some(match req {
        B::EchoRequest(d) => B::EchoReply(d.clone()),
        B::BarrierRequest => B::BarrierReply,
        B::FeaturesRequest => B::FeaturesReply(v10::FeaturesReply {
            datapath_id: 1,
            n_buffers: 0,
            n_tables: 1,
            capabilities: 0,
            actions: 0xfff,
            ports: vec![port10()],
        }),
        B::GetConfigRequest => B::GetConfigReply(*config),
        B::SetConfig(c) => {
            *config = *c;
            return None;
        }
        B::QueueGetConfigRequest { port } => B::QueueGetConfigReply(v10::QueueGetConfigReply {
            port: *port,
            queues: vec![],
        }),
        B::StatsRequest(s) => {
            use v10::StatsReplyBody as R;
            use v10::StatsRequestBody as Q;
            let body = match &s.body {
                Q::Desc => R::Desc(desc()),
                Q::Flow(_) => R::Flow(vec![]),
                Q::Aggregate(_) => R::Aggregate(Default::default()),
                Q::Table => R::Table(vec![]),
                Q::Port { .. } => R::Port(vec![]),
                Q::Queue { .. } => R::Queue(vec![]),
                Q::PortDesc => R::PortDesc(vec![port10()]),
                // Nicira stats (OVS's default flow format on 1.0): an empty reply
                // echoing the vendor and the subtype word with its padding.
                // NXST_AGGREGATE (subtype 1) carries zeroed counters.
                Q::Vendor { vendor, data } => {
                    let mut body = data.0[..8.min(data.len())].to_vec();
                    if body.get(..4) == Some(&[0, 0, 0, 1]) {
                        body.extend_from_slice(&[0; 24]);
                    }
                    R::Vendor {
                        vendor: *vendor,
                        data: ofwire::Bytes(body),
                    }
                }
            };
            B::StatsReply(v10::StatsReply { flags: 0, body })
        }
        _ => return None,
    })
}

fn reply13(req: &v13::Body, config: &mut ofwire::SwitchConfig) -> Option<v13::Body> {
    use v13::Body as B;
    Some(match req {
        B::EchoRequest(d) => B::EchoReply(d.clone()),
        B::BarrierRequest => B::BarrierReply,
        B::FeaturesRequest => B::FeaturesReply(v13::FeaturesReply {
            datapath_id: 1,
            n_buffers: 0,
            n_tables: 1,
            auxiliary_id: 0,
            capabilities: 0x4f,
            reserved: 0,
        }),
        B::GetConfigRequest => B::GetConfigReply(*config),
        B::SetConfig(c) => {
            *config = *c;
            return None;
        }
        B::QueueGetConfigRequest { port } => B::QueueGetConfigReply(v13::QueueGetConfigReply {
            port: *port,
            queues: vec![],
        }),
        B::MultipartRequest(m) => {
            use v13::MultipartReplyBody as R;
            use v13::MultipartRequestBody as Q;
            let body = match &m.body {
                Q::Desc => R::Desc(desc()),
                Q::Flow(_) => R::Flow(vec![]),
                Q::Aggregate(_) => R::Aggregate(Default::default()),
                Q::Table => R::Table(vec![]),
                Q::PortStats { .. } => R::PortStats(vec![]),
                Q::Queue { .. } => R::Queue(vec![]),
                Q::Group { .. } => R::Group(vec![]),
                Q::GroupDesc => R::GroupDesc(vec![]),
                Q::GroupFeatures => R::GroupFeatures(v13::GroupFeatures {
                    types: 0xf,
                    capabilities: 0,
                    max_groups: [1; 4],
                    actions: [1; 4],
                }),
                Q::Meter { .. } => R::Meter(vec![]),
                Q::MeterConfig { .. } => R::MeterConfig(vec![]),
                Q::MeterFeatures => R::MeterFeatures(v13::MeterFeatures {
                    max_meter: 1,
                    band_types: 1,
                    capabilities: 1,
                    max_bands: 1,
                    max_color: 0,
                }),
                Q::TableFeatures(_) => R::TableFeatures(vec![ofwire::corpus::sample_table_features()]),
                Q::PortDesc => R::PortDesc(vec![v13::Port::new(1, ofwire::MacAddr([2, 0, 0, 0, 0, 1]), "p1")]),
                Q::Experimenter { .. } => return None,
            };
            B::MultipartReply(v13::MultipartReply { flags: 0, body })
        }
        _ => return None,
    })
}

/// Serves one ovs-ofctl connection as a switch; returns every raw message received.
fn serve_one(stream: TcpStream) -> Vec<Vec<u8>> {
    let mut stream = stream;
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let mut framer = Framer::default();
    let mut config = ofwire::SwitchConfig {
        flags: 0,
        miss_send_len: 128,
    };
    let mut buf = [0u8; 65536];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => return got,
            Ok(n) => n,
        };
        framer.push(&buf[..n]);
        while let Some(raw) = framer.next_message().expect("ovs-ofctl sent an unframeable stream") {
            let raw = raw.to_vec();
            let msg = ofwire::decode(&raw).unwrap_or_else(|e| {
                panic!(
                    "cannot decode what ovs-ofctl sent: {e}\n{}",
                    ofwire::types::to_hex(&raw)
                )
            });
            got.push(raw);
            let reply = match &msg.body {
                Body::Hello(_) => {
                    let version = msg.version.min(OFP13_VERSION);
                    Some(Message::new(version, 0, Body::Hello(Hello::with_versions(&[version]))))
                }
                Body::V10(b) => reply10(b, &mut config).map(|r| Message::v10(msg.xid, r)),
                Body::V13(b) => reply13(b, &mut config).map(|r| Message::v13(msg.xid, r)),
            };
            if let Some(r) = reply {
                if stream.write_all(&r.to_bytes().unwrap()).is_err() {
                    return got;
                }
            }
        }
    }
}

/// Runs one ovs-ofctl command against a fresh listener of ours; ovs-ofctl
/// may open several connections for one command, so all are served.
fn run_ofctl(proto: &str, args: &[&str]) -> Vec<Vec<u8>> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let acceptor = std::thread::spawn(move || {
        let mut workers = Vec::new();
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            match listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    let tx = tx.clone();
                    workers.push(std::thread::spawn(move || tx.send(serve_one(s)).ok()));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        for w in workers {
            w.join().expect("serving thread panicked");
        }
    });
    let target = format!("tcp:{addr}");
    let out = Command::new("timeout")
        .args(["10", "ovs-ofctl", "-O", proto, args[0], &target])
        .args(&args[1..])
        .output()
        .expect("ovs-ofctl not found: run scripts/install-deps.sh");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    acceptor.join().expect("a serving thread panicked (see above)");
    assert!(
        out.status.success(),
        "ovs-ofctl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    rx.try_iter().flatten().collect()
}

fn check_round_trip(all: &[Vec<u8>]) -> BTreeSet<(u8, u8)> {
    let mut types = BTreeSet::new();
    for raw in all {
        record_vector("ovs-ofctl", raw);
        let msg = ofwire::decode(raw).unwrap();
        assert_eq!(&msg.to_bytes().unwrap(), raw, "re-encoding differs for {msg}");
        types.insert((msg.version, msg.msg_type()));
    }
    types
}

const FRAME: &str = "020000000002020000000001080045000020000100004011000a0a0000010a00000230390050000c000068692121";

#[test]
fn messages_from_ovs_ofctl_openflow13_decode_and_reencode_byte_exact() {
    let cmds: &[&[&str]] = &[
        &["add-flow", "priority=10,in_port=1,actions=output:2"],
        &["add-flow", "table=1,cookie=0x5,priority=200,idle_timeout=30,hard_timeout=60,tcp,nw_src=10.0.0.0/8,nw_dst=10.0.0.2,tp_dst=80,actions=set_field:10.1.1.1->ip_dst,mod_dl_dst:02:00:00:00:00:09,dec_ttl,output:3"],
        &["add-flow", "ipv6,ipv6_src=2001:db8::/32,actions=push_vlan:0x8100,set_field:4100->vlan_vid,group:1"],
        &["add-flow", "arp,arp_tpa=10.0.0.1,actions=CONTROLLER:65535,write_metadata:0x1/0xff,goto_table:2"],
        &["add-flow", "udp,udp_dst=53,actions=meter:1,clear_actions,write_actions(set_queue:1,output:4)"],
        &["add-flow", "mpls,mpls_label=10,actions=pop_mpls:0x0800,output:1"],
        &["mod-flows", "tcp,actions=drop"],
        &["del-flows", "cookie=0x5/-1"],
        &["add-group", "group_id=1,type=select,bucket=weight:2,output:1,bucket=weight:1,output:2"],
        &["add-group", "group_id=2,type=ff,bucket=watch_port:1,output:1,bucket=watch_port:2,output:2"],
        &["mod-group", "group_id=1,type=all,bucket=output:1,bucket=output:3"],
        &["add-group", "group_id=3,type=indirect,bucket=output:3"],
        &["del-groups", "group_id=2"],
        &["add-meter", "meter=1,kbps,burst,stats,bands=type=drop,rate=1000,burst_size=100"],
        &["add-meter", "meter=2,pktps,bands=type=dscp_remark,rate=100,prec_level=1"],
        &["del-meters"],
        &["packet-out", "1", "output:2", FRAME],
        &["mod-port", "p1", "down"],
        &["dump-flows"],
        &["dump-aggregate"],
        &["dump-tables"],
        &["dump-ports"],
        &["dump-ports-desc"],
        &["dump-groups"],
        &["dump-group-stats"],
        &["dump-group-features"],
        &["dump-meters"],
        &["meter-stats"],
        &["meter-features"],
        &["queue-stats"],
        &["queue-get-config", "1"],
        &["dump-table-features"],
        &["show"],
        &["get-frags"],
        &["set-frags", "drop"],
    ];
    let mut types = BTreeSet::new();
    let mut count = 0;
    for args in cmds {
        let got = run_ofctl("OpenFlow13", args);
        count += got.len();
        types.extend(check_round_trip(&got));
    }
    use v13::msg_type::*;
    for t in [
        HELLO,
        FLOW_MOD,
        GROUP_MOD,
        METER_MOD,
        PACKET_OUT,
        PORT_MOD,
        MULTIPART_REQUEST,
        BARRIER_REQUEST,
        FEATURES_REQUEST,
        GET_CONFIG_REQUEST,
        SET_CONFIG,
        QUEUE_GET_CONFIG_REQUEST,
    ] {
        assert!(
            types.contains(&(OFP13_VERSION, t)),
            "ovs-ofctl never sent {}: {types:?}",
            v13::msg_type::name(t)
        );
    }
    assert!(count > 60, "only {count} messages captured");
}

#[test]
fn messages_from_ovs_ofctl_openflow10_decode_and_reencode_byte_exact() {
    let cmds: &[&[&str]] = &[
        &["add-flow", "priority=10,in_port=1,actions=output:2"],
        &["add-flow", "cookie=0x5,idle_timeout=30,tcp,nw_src=10.0.0.0/8,tp_dst=80,actions=mod_nw_dst:10.1.1.1,mod_dl_dst:02:00:00:00:00:09,mod_vlan_vid:5,enqueue:1:2,CONTROLLER:128"],
        &["add-flow", "dl_vlan=5,dl_vlan_pcp=2,actions=strip_vlan,mod_nw_tos:40,mod_tp_src:99,output:1"],
        &["mod-flows", "tcp,actions=drop"],
        &["del-flows", "tcp"],
        &["packet-out", "1", "output:2", FRAME],
        &["mod-port", "p1", "up"],
        &["dump-flows"],
        &["dump-aggregate"],
        &["dump-tables"],
        &["dump-ports"],
        &["queue-stats"],
        &["queue-get-config", "1"],
        &["show"],
        &["set-frags", "drop"],
    ];
    let mut types = BTreeSet::new();
    for args in cmds {
        types.extend(check_round_trip(&run_ofctl("OpenFlow10", args)));
    }
    // Open vSwitch's own 1.0 extension: the port description as stats type 13.
    let got = run_ofctl("OpenFlow10", &["dump-ports-desc"]);
    types.extend(check_round_trip(&got));
    let port_desc = got
        .iter()
        .find(|m| m[1] == v10::msg_type::STATS_REQUEST && m[8..10] == [0, 13]);
    let m = ofwire::decode(port_desc.expect("ovs-ofctl dump-ports-desc sent stats type 13 on 1.0")).unwrap();
    assert!(
        matches!(&m.body, Body::V10(v10::Body::StatsRequest(s)) if s.body == v10::StatsRequestBody::PortDesc),
        "{m:?}"
    );
    use v10::msg_type::*;
    for t in [
        HELLO,
        FLOW_MOD,
        PACKET_OUT,
        PORT_MOD,
        STATS_REQUEST,
        BARRIER_REQUEST,
        FEATURES_REQUEST,
        SET_CONFIG,
        QUEUE_GET_CONFIG_REQUEST,
    ] {
        assert!(
            types.contains(&(OFP10_VERSION, t)),
            "ovs-ofctl never sent {}: {types:?}",
            v10::msg_type::name(t)
        );
    }
}
