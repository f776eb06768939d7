//! A real Open vSwitch (userspace datapath, private ovsdb-server and
//! ovs-vswitchd in a network namespace of this test's own) connects to a
//! controller listener of ours over a unix socket. We drive it through the
//! handshake, every multipart request, flow installation and removal, a
//! PACKET_IN and a PORT_STATUS, and check that every message the switch
//! sends decodes with us and re-encodes byte-exact.

mod common;
use common::record_vector;
use ofwire::{v10, v13, Body, Framer, Hello, Message, OFP10_VERSION, OFP13_VERSION};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Everything the test started, torn down on drop even when the test fails.
struct OvsInstance {
    dir: PathBuf,
    netns: String,
    children: Vec<Child>,
    bridge: String,
}

impl OvsInstance {
    fn start(tag: &str) -> OvsInstance {
        let netns = format!("sdnlab-t-ofw-{}-{tag}", std::process::id());
        let dir = std::env::temp_dir().join(&netns);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut inst = OvsInstance {
            dir: dir.clone(),
            netns: netns.clone(),
            children: Vec::new(),
            bridge: "sdnt0".into(),
        };
        run("ip", &["netns", "add", &netns]);
        run("ip", &["-n", &netns, "link", "set", "lo", "up"]);
        let db = dir.join("conf.db");
        run(
            "ovsdb-tool",
            &[
                "create",
                db.to_str().unwrap(),
                "/usr/share/openvswitch/vswitch.ovsschema",
            ],
        );
        let d = |f: &str| dir.join(f).to_str().unwrap().to_string();
        let ovsdb = Command::new("ovsdb-server")
            .args([
                &d("conf.db"),
                &format!("--remote=punix:{}", d("db.sock")),
                &format!("--unixctl={}", d("ovsdb.ctl")),
                &format!("--log-file={}", d("ovsdb.log")),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ovsdb-server not found: run scripts/install-deps.sh (openvswitch-switch)");
        inst.children.push(ovsdb);
        wait_for(&dir.join("db.sock"));
        inst.vsctl(&["--no-wait", "init"]);
        inst.vsctl(&[
            "--no-wait",
            "set",
            "Open_vSwitch",
            ".",
            "other_config:userspace-tso-enable=true",
        ]);
        let vswitchd = Command::new("ip")
            .args([
                "netns",
                "exec",
                &netns,
                "ovs-vswitchd",
                &format!("unix:{}", d("db.sock")),
                &format!("--unixctl={}", d("vswitchd.ctl")),
                &format!("--log-file={}", d("vswitchd.log")),
            ])
            .env("OVS_RUNDIR", &dir)
            .env("OVS_LOGDIR", &dir)
            .env("OVS_DBDIR", &dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        inst.children.push(vswitchd);
        wait_for(&dir.join("vswitchd.ctl"));
        inst
    }

    /// A secure-mode netdev bridge speaking only `version`, with datapath
    /// id `dpid`, whose controller is this test on a Unix socket: the
    /// controller, past the switch's HELLO.
    fn bridge_under_us(&self, version: u8, dpid: u64) -> Controller {
        let sock = self.dir.join("ctl.sock");
        let listener = UnixListener::bind(&sock).unwrap();
        let protocols = if version == OFP10_VERSION {
            "OpenFlow10"
        } else {
            "OpenFlow13"
        };
        let (br, protocols, dpid) = (
            self.bridge.as_str(),
            format!("protocols={protocols}"),
            format!("other-config:datapath-id={dpid:016x}"),
        );
        self.vsctl(&[
            "add-br",
            br,
            "--",
            "set",
            "bridge",
            br,
            "datapath_type=netdev",
            &protocols,
            &dpid,
            "fail-mode=secure",
        ]);
        self.vsctl(&["set-controller", br, &format!("unix:{}", sock.display())]);
        let mut c = Controller::accept(listener, version);
        c.until("HELLO", |m| matches!(m.body, Body::Hello(_)));
        c
    }

    /// An internal port added to the bridge (the switch says PORT_STATUS).
    fn add_internal_port(&self, name: &str) {
        let br = self.bridge.as_str();
        self.vsctl(&["add-port", br, name, "--", "set", "interface", name, "type=internal"]);
    }

    fn vsctl(&self, args: &[&str]) {
        let db = format!("--db=unix:{}", self.dir.join("db.sock").display());
        let mut all = vec![db.as_str(), "--timeout=20"];
        all.extend_from_slice(args);
        run("ovs-vsctl", &all);
    }

    fn mgmt(&self) -> String {
        format!("unix:{}", self.dir.join(format!("{}.mgmt", self.bridge)).display())
    }
}

impl Drop for OvsInstance {
    fn drop(&mut self) {
        for c in self.children.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.netns]).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn wait_for(p: &Path) {
    let t = Instant::now();
    while !p.exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Our end of the switch's controller connection.
struct Controller {
    stream: UnixStream,
    rx: mpsc::Receiver<Vec<u8>>,
    received: Vec<Vec<u8>>,
    xid: u32,
    version: u8,
}

impl Controller {
    fn accept(listener: UnixListener, version: u8) -> Controller {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = stream.try_clone().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut framer = Framer::default();
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                framer.push(&buf[..n]);
                while let Some(m) = framer.next_message().expect("switch stream unframeable") {
                    if tx.send(m.to_vec()).is_err() {
                        return;
                    }
                }
            }
        });
        let mut c = Controller {
            stream,
            rx,
            received: Vec::new(),
            xid: 100,
            version,
        };
        c.send_msg(Message::new(version, 1, Body::Hello(Hello::with_versions(&[version]))));
        c
    }

    fn send_msg(&mut self, m: Message) {
        self.stream.write_all(&m.to_bytes().unwrap()).unwrap();
    }

    fn send10(&mut self, b: v10::Body) -> u32 {
        self.xid += 1;
        self.send_msg(Message::v10(self.xid, b));
        self.xid
    }

    fn send13(&mut self, b: v13::Body) -> u32 {
        self.xid += 1;
        self.send_msg(Message::v13(self.xid, b));
        self.xid
    }

    /// Receives until `done` holds for a message, answering echoes.
    fn until(&mut self, what: &str, done: impl Fn(&Message) -> bool) -> Message {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let raw = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("switch never sent {what}"));
            let msg = ofwire::decode(&raw)
                .unwrap_or_else(|e| panic!("cannot decode what OVS sent: {e}\n{}", ofwire::types::to_hex(&raw)));
            assert_eq!(msg.to_bytes().unwrap(), raw, "re-encoding differs for {msg}");
            record_vector("ovs-vswitchd", &raw);
            self.received.push(raw);
            match &msg.body {
                Body::V10(v10::Body::EchoRequest(d)) => {
                    let r = Message::v10(msg.xid, v10::Body::EchoReply(d.clone()));
                    self.send_msg(r);
                }
                Body::V13(v13::Body::EchoRequest(d)) => {
                    let r = Message::v13(msg.xid, v13::Body::EchoReply(d.clone()));
                    self.send_msg(r);
                }
                _ => {}
            }
            if done(&msg) {
                return msg;
            }
        }
    }

    /// Receives until the barrier with `xid` is answered (all replies before it are in).
    fn barrier(&mut self) {
        let xid = if self.version == OFP10_VERSION {
            self.send10(v10::Body::BarrierRequest)
        } else {
            self.send13(v13::Body::BarrierRequest)
        };
        self.until("BARRIER_REPLY", |m| m.xid == xid && m.type_name() == "BARRIER_REPLY");
    }

    fn types(&self) -> BTreeSet<u8> {
        self.received.iter().map(|r| r[1]).collect()
    }
}

const FRAME: &str = "020000000002020000000001080045000020000100004011000a0a0000010a00000230390050000c000068692121";

fn ofctl(version: &str, args: &[&str]) {
    let mut all = vec!["-O", version];
    all.extend_from_slice(args);
    run("ovs-ofctl", &all);
}

#[test]
fn messages_from_a_real_ovs_switch_openflow13_decode_and_reencode_byte_exact() {
    let ovs = OvsInstance::start("13");
    let mut c = ovs.bridge_under_us(OFP13_VERSION, 0xa1);
    let fx = c.send13(v13::Body::FeaturesRequest);
    let f = c.until("FEATURES_REPLY", |m| m.xid == fx);
    match f.body {
        Body::V13(v13::Body::FeaturesReply(f)) => assert_eq!(f.datapath_id, 0xa1),
        other => panic!("expected FEATURES_REPLY, got {other:?}"),
    }
    c.send13(v13::Body::SetConfig(ofwire::SwitchConfig {
        flags: 0,
        miss_send_len: 0xffff,
    }));
    c.send13(v13::Body::GetConfigRequest);
    c.send13(v13::Body::RoleRequest(v13::Role {
        role: v13::ControllerRole::NoChange,
        generation_id: 0,
    }));
    c.send13(v13::Body::GetAsyncRequest);
    c.send13(v13::Body::QueueGetConfigRequest { port: v13::port::ANY });
    c.send13(v13::Body::EchoRequest(ofwire::Bytes(vec![1, 2, 3])));
    // A flow that sends table misses to us, and one with a meter and a group.
    let mut miss = v13::FlowMod::add(0);
    miss.instructions = vec![v13::Instruction::ApplyActions(vec![v13::Action::Output {
        port: v13::port::CONTROLLER,
        max_len: 0xffff,
    }])];
    c.send13(v13::Body::FlowMod(miss));
    let mut removable = v13::FlowMod::add(5);
    removable.flags = v13::flow_mod_flags::SEND_FLOW_REM;
    removable.cookie = 0x77;
    removable.match_ = ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::EthType(0x0806)]);
    c.send13(v13::Body::FlowMod(removable));
    c.send13(v13::Body::GroupMod(v13::GroupMod {
        command: v13::GroupModCommand::Add,
        group_type: v13::GroupType::Select,
        group_id: 1,
        buckets: vec![v13::Bucket {
            weight: 1,
            watch_port: v13::port::ANY,
            watch_group: v13::GROUP_ANY,
            actions: vec![v13::Action::Output {
                port: v13::port::LOCAL,
                max_len: 0,
            }],
        }],
    }));
    c.send13(v13::Body::MeterMod(v13::MeterMod {
        command: v13::MeterModCommand::Add,
        flags: v13::meter_flags::KBPS | v13::meter_flags::STATS,
        meter_id: 1,
        bands: vec![v13::MeterBand::Drop {
            rate: 1000,
            burst_size: 0,
        }],
    }));
    c.barrier();
    use v13::MultipartRequestBody as Q;
    let all_flows = v13::FlowStatsRequest::all();
    for q in [
        Q::Desc,
        Q::Flow(all_flows.clone()),
        Q::Aggregate(all_flows),
        Q::Table,
        Q::PortStats {
            port_no: v13::port::ANY,
        },
        Q::Queue {
            port_no: v13::port::ANY,
            queue_id: 0xffff_ffff,
        },
        Q::Group {
            group_id: v13::GROUP_ALL,
        },
        Q::GroupDesc,
        Q::GroupFeatures,
        Q::Meter { meter_id: 0xffff_ffff },
        Q::MeterConfig { meter_id: 0xffff_ffff },
        Q::MeterFeatures,
        Q::TableFeatures(vec![]),
        Q::PortDesc,
    ] {
        c.send13(v13::Body::MultipartRequest(v13::MultipartRequest { flags: 0, body: q }));
    }
    c.barrier();
    // A PACKET_IN: the switch sends a frame from LOCAL through its table.
    ofctl("OpenFlow13", &["packet-out", &ovs.mgmt(), "LOCAL", "controller", FRAME]);
    c.until("PACKET_IN", |m| matches!(m.body, Body::V13(v13::Body::PacketIn(_))));
    // A PORT_STATUS: a new port appears.
    ovs.add_internal_port("sdnt0p1");
    c.until("PORT_STATUS", |m| matches!(m.body, Body::V13(v13::Body::PortStatus(_))));
    // A FLOW_REMOVED: delete the flow that asked for one.
    let mut del = v13::FlowMod::add(5);
    del.command = v10::FlowModCommand::DeleteStrict;
    del.table_id = 0;
    del.match_ = ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::EthType(0x0806)]);
    c.send13(v13::Body::FlowMod(del));
    c.until(
        "FLOW_REMOVED",
        |m| matches!(&m.body, Body::V13(v13::Body::FlowRemoved(f)) if f.cookie == 0x77),
    );
    // A malformed request: the switch's OFPT_ERROR decodes too.
    c.send_msg(Message::v13(
        999,
        v13::Body::TableMod(v13::TableMod {
            table_id: 0xfe,
            config: 0x8,
        }),
    ));
    c.stream.write_all(&[4, 99, 0, 8, 0, 0, 3, 0xe8]).unwrap();
    c.until("ERROR", |m| matches!(&m.body, Body::V13(v13::Body::Error(e)) if m.xid == 1000 && e.code == ofwire::ErrorCode::BadRequest(ofwire::error::BadRequestCode::BadType)));
    c.barrier();

    use v13::msg_type::*;
    let types = c.types();
    for t in [
        HELLO,
        ERROR,
        ECHO_REPLY,
        FEATURES_REPLY,
        GET_CONFIG_REPLY,
        PACKET_IN,
        FLOW_REMOVED,
        PORT_STATUS,
        MULTIPART_REPLY,
        BARRIER_REPLY,
        QUEUE_GET_CONFIG_REPLY,
        ROLE_REPLY,
        GET_ASYNC_REPLY,
    ] {
        assert!(types.contains(&t), "the switch never sent {}: {types:?}", name(t));
    }
    let mut mp_types = BTreeSet::new();
    let mut more = false;
    for raw in &c.received {
        if let Body::V13(v13::Body::MultipartReply(r)) = ofwire::decode(raw).unwrap().body {
            mp_types.insert(r.body.multipart_type());
            more |= r.flags & v13::MULTIPART_MORE != 0;
        }
    }
    assert_eq!(mp_types, (0..=13).collect::<BTreeSet<u16>>(), "multipart replies seen");
    assert!(more, "OVS splits table features over several replies with REPLY_MORE");
}

#[test]
fn messages_from_a_real_ovs_switch_openflow10_decode_and_reencode_byte_exact() {
    let ovs = OvsInstance::start("10");
    let mut c = ovs.bridge_under_us(OFP10_VERSION, 0xa2);
    let fx = c.send10(v10::Body::FeaturesRequest);
    let f = c.until("FEATURES_REPLY", |m| m.xid == fx);
    match f.body {
        Body::V10(v10::Body::FeaturesReply(f)) => {
            assert_eq!(f.datapath_id, 0xa2);
            assert!(f.ports.iter().any(|p| p.port_no == v10::port::LOCAL));
        }
        other => panic!("expected FEATURES_REPLY, got {other:?}"),
    }
    c.send10(v10::Body::SetConfig(ofwire::SwitchConfig {
        flags: 0,
        miss_send_len: 0xffff,
    }));
    c.send10(v10::Body::GetConfigRequest);
    c.send10(v10::Body::QueueGetConfigRequest { port: v10::port::LOCAL });
    let mut miss = v10::FlowMod {
        match_: v10::Match::all(),
        cookie: 0,
        command: v10::FlowModCommand::Add,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 0,
        buffer_id: v10::NO_BUFFER,
        out_port: v10::port::NONE,
        flags: 0,
        actions: vec![v10::Action::Output {
            port: v10::port::CONTROLLER,
            max_len: 0xffff,
        }],
    };
    c.send10(v10::Body::FlowMod(miss.clone()));
    miss.priority = 5;
    miss.cookie = 0x77;
    miss.flags = v10::flow_mod_flags::SEND_FLOW_REM;
    miss.match_.wildcards &= !v10::wildcards::DL_TYPE;
    miss.match_.dl_type = 0x0806;
    miss.actions = vec![];
    c.send10(v10::Body::FlowMod(miss.clone()));
    c.barrier();
    use v10::StatsRequestBody as Q;
    let all = v10::FlowStatsRequest {
        match_: v10::Match::all(),
        table_id: 0xff,
        out_port: v10::port::NONE,
    };
    for q in [
        Q::Desc,
        Q::Flow(all.clone()),
        Q::Aggregate(all),
        Q::Table,
        Q::Port {
            port_no: v10::port::NONE,
        },
        Q::Queue {
            port_no: v10::port::ALL,
            queue_id: 0xffff_ffff,
        },
        // Open vSwitch's 1.0 extension (stats type 13).
        Q::PortDesc,
    ] {
        c.send10(v10::Body::StatsRequest(v10::StatsRequest { flags: 0, body: q }));
    }
    c.barrier();
    // Its answer: every port (the bridge's LOCAL port at least), decoded
    // and re-encoded byte-exact like everything else it sent.
    let port_desc = c.received.iter().find_map(|raw| match ofwire::decode(raw).ok()?.body {
        Body::V10(v10::Body::StatsReply(v10::StatsReply {
            body: v10::StatsReplyBody::PortDesc(ports),
            ..
        })) => Some(ports),
        _ => None,
    });
    let ports = port_desc.expect("OVS answered the 1.0 port description request");
    assert!(ports.iter().any(|p| p.port_no == v10::port::LOCAL), "{ports:?}");
    ofctl("OpenFlow10", &["packet-out", &ovs.mgmt(), "LOCAL", "controller", FRAME]);
    c.until("PACKET_IN", |m| matches!(m.body, Body::V10(v10::Body::PacketIn(_))));
    ovs.add_internal_port("sdnt0p1");
    c.until("PORT_STATUS", |m| matches!(m.body, Body::V10(v10::Body::PortStatus(_))));
    miss.command = v10::FlowModCommand::DeleteStrict;
    c.send10(v10::Body::FlowMod(miss));
    c.until(
        "FLOW_REMOVED",
        |m| matches!(&m.body, Body::V10(v10::Body::FlowRemoved(f)) if f.cookie == 0x77),
    );
    c.barrier();
    use v10::msg_type::*;
    let types = c.types();
    // OVS's netdev ports have no queues: its answer to QUEUE_GET_CONFIG is an ERROR.
    for t in [
        HELLO,
        ERROR,
        FEATURES_REPLY,
        GET_CONFIG_REPLY,
        PACKET_IN,
        FLOW_REMOVED,
        PORT_STATUS,
        STATS_REPLY,
        BARRIER_REPLY,
    ] {
        assert!(types.contains(&t), "the switch never sent {}: {types:?}", name(t));
    }
}
