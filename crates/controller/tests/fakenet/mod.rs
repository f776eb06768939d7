//! A network of emulated OpenFlow switches with no sockets and no kernel
//! (in the manner of Faucet's fakeoftable): each switch is a multi-table
//! flow pipeline that applies the FLOW_MODs and PACKET_OUTs the controller
//! sends, wired to other switches and to hosts; each talks to the real
//! controller core (`controller::driver::Driver`) through the real wire
//! encoding. Tests send frames from hosts and read what every host got,
//! what every table holds, and whether a packet went round in circles.

#![allow(dead_code)]

use controller::app::AppFactory;
use controller::driver::{Command, Context, Driver, Environment, Stats};
use ofwire::oxm::Oxm;
use ofwire::{v10, v13, Body, Framer, Hello, MacAddr, Message, PacketInReason, OFP10_VERSION, OFP13_VERSION};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

pub const N_TABLES: usize = 4;

/// A switch port: (datapath id, port number).
pub type Attach = (u64, u32);

/// What a flow matches (absent: wildcard); the fields the apps use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FakeMatch {
    pub in_port: Option<u32>,
    pub eth_src: Option<MacAddr>,
    pub eth_dst: Option<MacAddr>,
    pub eth_type: Option<u16>,
}

impl FakeMatch {
    fn from_v10(m: &v10::Match) -> FakeMatch {
        use v10::wildcards as w;
        let known = w::IN_PORT | w::DL_SRC | w::DL_DST | w::DL_TYPE;
        assert!(
            m.wildcards & w::ALL & !known == w::ALL & !known,
            "the fake switch models in_port, dl_src, dl_dst and dl_type only: {m:?}"
        );
        FakeMatch {
            in_port: (m.wildcards & w::IN_PORT == 0).then_some(m.in_port as u32),
            eth_src: (m.wildcards & w::DL_SRC == 0).then_some(m.dl_src),
            eth_dst: (m.wildcards & w::DL_DST == 0).then_some(m.dl_dst),
            eth_type: (m.wildcards & w::DL_TYPE == 0).then_some(m.dl_type),
        }
    }

    fn from_v13(m: &ofwire::oxm::Match) -> FakeMatch {
        let mut f = FakeMatch::default();
        for o in &m.fields {
            match o {
                Oxm::InPort(p) => f.in_port = Some(*p),
                Oxm::EthSrc(a, None) => f.eth_src = Some(*a),
                Oxm::EthDst(a, None) => f.eth_dst = Some(*a),
                Oxm::EthType(t) => f.eth_type = Some(*t),
                other => panic!("the fake switch does not model {other:?}"),
            }
        }
        f
    }

    fn matches(&self, in_port: u32, frame: &[u8]) -> bool {
        let mac = |at: usize| MacAddr(frame[at..at + 6].try_into().unwrap());
        self.in_port.is_none_or(|p| p == in_port)
            && self.eth_dst.is_none_or(|a| a == mac(0))
            && self.eth_src.is_none_or(|a| a == mac(6))
            && self.eth_type.is_none_or(|t| t.to_be_bytes() == frame[12..14])
    }

    /// Non-strict delete: every field the filter sets, the flow sets the same.
    fn covers(&self, flow: &FakeMatch) -> bool {
        fn c<T: PartialEq>(f: &Option<T>, e: &Option<T>) -> bool {
            f.is_none() || f == e
        }
        c(&self.in_port, &flow.in_port)
            && c(&self.eth_src, &flow.eth_src)
            && c(&self.eth_dst, &flow.eth_dst)
            && c(&self.eth_type, &flow.eth_type)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Act {
    Output(u32),
    SetEthSrc(MacAddr),
    SetEthDst(MacAddr),
}

#[derive(Clone, Debug)]
pub struct Flow {
    pub priority: u16,
    pub cookie: u64,
    pub idle_timeout: u16,
    pub match_: FakeMatch,
    pub actions: Vec<Act>,
    pub goto: Option<u8>,
    pub n_packets: u64,
}

pub struct FakeSwitch {
    pub dpid: u64,
    pub version: u8,
    pub ports: Vec<u32>,
    pub tables: Vec<Vec<Flow>>,
    driver: Option<Driver>,
    commands: mpsc::UnboundedReceiver<Command>,
    from_controller: Framer,
    to_controller: Vec<u8>,
    pub packet_ins: u64,
    pub packet_outs: u64,
    pub flow_mods: u64,
    /// Messages the fake does not model (kind names).
    pub unhandled: Vec<String>,
    next_xid: u32,
}

fn port_of_10(p: u16) -> u32 {
    if p >= v10::port::MAX {
        p as u32 | 0xffff_0000
    } else {
        p as u32
    }
}

fn acts10(actions: &[v10::Action]) -> Vec<Act> {
    actions
        .iter()
        .map(|a| match a {
            v10::Action::Output { port, .. } => Act::Output(port_of_10(*port)),
            v10::Action::SetDlSrc(m) => Act::SetEthSrc(*m),
            v10::Action::SetDlDst(m) => Act::SetEthDst(*m),
            other => panic!("the fake switch does not model {other:?}"),
        })
        .collect()
}

fn acts13(actions: &[v13::Action]) -> Vec<Act> {
    actions
        .iter()
        .map(|a| match a {
            v13::Action::Output { port, .. } => Act::Output(*port),
            v13::Action::SetField(Oxm::EthSrc(m, None)) => Act::SetEthSrc(*m),
            v13::Action::SetField(Oxm::EthDst(m, None)) => Act::SetEthDst(*m),
            other => panic!("the fake switch does not model {other:?}"),
        })
        .collect()
}

/// A frame arriving at a switch port.
struct InFlight {
    dpid: u64,
    port: u32,
    frame: Vec<u8>,
    hops: u32,
}

pub struct FakeNet {
    pub env: Environment,
    pub switches: Vec<FakeSwitch>,
    /// (dpid, port) -> (dpid, port), both directions.
    pub links: HashMap<(u64, u32), (u64, u32)>,
    /// (dpid, port) -> host index.
    pub host_at: HashMap<(u64, u32), usize>,
    /// Frames each host received.
    pub received: Vec<Vec<Vec<u8>>>,
    queue: VecDeque<InFlight>,
    /// Frame deliveries processed (a storm shows as a huge number).
    pub frames_processed: u64,
    /// The largest number of switch hops any frame made.
    pub max_hops: u32,
    next_session: u64,
}

/// Host `i`'s MAC address.
pub fn host_mac(i: usize) -> MacAddr {
    MacAddr([0x02, 0, 0, 0, 0, i as u8 + 1])
}

pub fn host_ip(i: usize) -> [u8; 4] {
    [10, 0, 0, i as u8 + 1]
}

/// An ARP request from host `from` for host `to`'s address.
pub fn arp_request(from: usize, to: usize) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&[0xff; 6]);
    f.extend_from_slice(&host_mac(from).0);
    f.extend_from_slice(&[0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01]);
    f.extend_from_slice(&host_mac(from).0);
    f.extend_from_slice(&host_ip(from));
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&host_ip(to));
    f
}

/// An IPv4 (UDP-ish) frame from host `from` to host `to`, tagged with `seq`.
pub fn unicast(from: usize, to: usize, seq: u8) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&host_mac(to).0);
    f.extend_from_slice(&host_mac(from).0);
    f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 28, 0, seq, 0, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&host_ip(from));
    f.extend_from_slice(&host_ip(to));
    f.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
    f
}

impl FakeNet {
    /// Switches `(dpid, ports)`, links between `(dpid, port)` pairs, hosts
    /// at `(dpid, port)` (host i gets `host_mac(i)`), all speaking `version`.
    pub fn new(
        version: u8,
        switches: &[(u64, u32)],
        links: &[(Attach, Attach)],
        hosts: &[(u64, u32)],
        apps: Vec<AppFactory>,
    ) -> FakeNet {
        let env = Environment {
            apps,
            session: ofconn::Config {
                versions: vec![version],
                ..Default::default()
            },
            ctx: Context::default(),
            stats: Arc::new(Stats::default()),
            verbose: false,
        };
        let mut net = FakeNet {
            env,
            switches: Vec::new(),
            links: HashMap::new(),
            host_at: HashMap::new(),
            received: vec![Vec::new(); hosts.len()],
            queue: VecDeque::new(),
            frames_processed: 0,
            max_hops: 0,
            next_session: 1,
        };
        for &(a, b) in links {
            net.links.insert(a, b);
            net.links.insert(b, a);
        }
        for (i, &h) in hosts.iter().enumerate() {
            net.host_at.insert(h, i);
        }
        for &(dpid, n_ports) in switches {
            let (tx, rx) = mpsc::unbounded_channel();
            let id = net.next_session;
            net.next_session += 1;
            let mut sw = FakeSwitch {
                dpid,
                version,
                ports: (1..=n_ports).collect(),
                tables: vec![Vec::new(); N_TABLES],
                driver: Some(Driver::new(id, &net.env, tx, Instant::now())),
                commands: rx,
                from_controller: Framer::default(),
                to_controller: Vec::new(),
                packet_ins: 0,
                packet_outs: 0,
                flow_mods: 0,
                unhandled: Vec::new(),
                next_xid: 0x1000,
            };
            sw.send(Body::Hello(Hello::with_versions(&[version])));
            net.switches.push(sw);
        }
        net
    }

    fn index(&self, dpid: u64) -> usize {
        self.switches
            .iter()
            .position(|s| s.dpid == dpid)
            .expect("no such switch")
    }

    pub fn switch(&self, dpid: u64) -> &FakeSwitch {
        &self.switches[self.index(dpid)]
    }

    /// Host `i` sends `frame`.
    pub fn send(&mut self, host: usize, frame: Vec<u8>) {
        let (&(dpid, port), _) = self.host_at.iter().find(|(_, &h)| h == host).expect("no such host");
        self.queue.push_back(InFlight {
            dpid,
            port,
            frame,
            hops: 0,
        });
    }

    /// Takes (and forgets) what each host received so far, but for the
    /// LLDP probes that reach hosts as they reach real ones.
    pub fn take_received(&mut self) -> Vec<Vec<Vec<u8>>> {
        let n = self.received.len();
        let mut got = std::mem::replace(&mut self.received, vec![Vec::new(); n]);
        for frames in &mut got {
            frames.retain(|f| f[12..14] != [0x88, 0xcc]);
        }
        got
    }

    /// Runs the controller and the switches until nothing is left to do
    /// (panics past `limit` frame deliveries: a storm).
    pub fn settle(&mut self, limit: u64) {
        for _round in 0..10_000 {
            let mut busy = false;
            for i in 0..self.switches.len() {
                busy |= self.exchange(i);
            }
            while let Some(f) = self.queue.pop_front() {
                busy = true;
                self.frames_processed += 1;
                assert!(
                    self.frames_processed <= limit,
                    "more than {limit} frame deliveries: a loop or a storm"
                );
                self.max_hops = self.max_hops.max(f.hops);
                let i = self.index(f.dpid);
                self.pipeline(i, f.port, f.frame, f.hops, 0);
            }
            if !busy {
                return;
            }
        }
        panic!("the fake network did not settle");
    }

    /// Runs the timers (LLDP probes, echoes) and settles; repeated for `d`.
    pub fn run_for(&mut self, d: Duration, limit: u64) {
        let end = Instant::now() + d;
        loop {
            let now = Instant::now();
            for sw in &mut self.switches {
                if let Some(drv) = sw.driver.as_mut() {
                    drv.on_timer(now);
                }
            }
            self.settle(limit);
            if now >= end {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Moves bytes both ways between switch `i` and its driver; true if any moved.
    fn exchange(&mut self, i: usize) -> bool {
        let mut moved = false;
        let now = Instant::now();
        let sw = &mut self.switches[i];
        let Some(drv) = sw.driver.as_mut() else { return false };
        while let Ok(cmd) = sw.commands.try_recv() {
            drv.on_command(cmd);
            moved = true;
        }
        if !sw.to_controller.is_empty() {
            let bytes = std::mem::take(&mut sw.to_controller);
            drv.on_bytes(&bytes, now);
            moved = true;
        }
        let out = drv.take_transmit();
        if out.is_empty() {
            return moved;
        }
        sw.from_controller.push(&out);
        let mut msgs = Vec::new();
        while let Ok(Some(raw)) = sw.from_controller.next_message() {
            msgs.push(ofwire::decode(raw).expect("the controller sent a malformed message"));
        }
        for m in msgs {
            self.handle_message(i, m);
        }
        true
    }

    fn handle_message(&mut self, i: usize, m: Message) {
        let sw = &mut self.switches[i];
        let xid = m.xid;
        match m.body {
            Body::Hello(_) => {}
            Body::V10(v10::Body::FeaturesRequest) => {
                let ports = sw
                    .ports
                    .iter()
                    .map(|&p| v10::PhyPort {
                        port_no: p as u16,
                        hw_addr: MacAddr([0x0a, 0, 0, sw.dpid as u8, 0, p as u8]),
                        name: format!("s{}-eth{p}", sw.dpid),
                        config: 0,
                        state: 0,
                        curr: 0,
                        advertised: 0,
                        supported: 0,
                        peer: 0,
                    })
                    .collect();
                let fr = v10::FeaturesReply {
                    datapath_id: sw.dpid,
                    n_buffers: 0,
                    n_tables: 1,
                    capabilities: 0,
                    actions: 0,
                    ports,
                };
                sw.reply(xid, Body::V10(v10::Body::FeaturesReply(fr)));
            }
            Body::V13(v13::Body::FeaturesRequest) => {
                let fr = v13::FeaturesReply {
                    datapath_id: sw.dpid,
                    n_buffers: 0,
                    n_tables: N_TABLES as u8,
                    auxiliary_id: 0,
                    capabilities: 0,
                    reserved: 0,
                };
                sw.reply(xid, Body::V13(v13::Body::FeaturesReply(fr)));
            }
            Body::V13(v13::Body::MultipartRequest(r)) if matches!(r.body, v13::MultipartRequestBody::PortDesc) => {
                let ports = sw
                    .ports
                    .iter()
                    .map(|&p| v13::Port {
                        port_no: p,
                        hw_addr: MacAddr([0x0a, 0, 0, sw.dpid as u8, 0, p as u8]),
                        name: format!("s{}-eth{p}", sw.dpid),
                        config: 0,
                        state: 0,
                        curr: 0,
                        advertised: 0,
                        supported: 0,
                        peer: 0,
                        curr_speed: 0,
                        max_speed: 0,
                    })
                    .collect();
                let r = v13::MultipartReply {
                    flags: 0,
                    body: v13::MultipartReplyBody::PortDesc(ports),
                };
                sw.reply(xid, Body::V13(v13::Body::MultipartReply(r)));
            }
            Body::V10(v10::Body::SetConfig(_)) | Body::V13(v13::Body::SetConfig(_)) => {}
            Body::V10(v10::Body::BarrierRequest) => sw.reply(xid, Body::V10(v10::Body::BarrierReply)),
            Body::V13(v13::Body::BarrierRequest) => sw.reply(xid, Body::V13(v13::Body::BarrierReply)),
            Body::V10(v10::Body::FlowMod(fm)) => {
                sw.flow_mods += 1;
                let flow = Flow {
                    priority: fm.priority,
                    cookie: fm.cookie,
                    idle_timeout: fm.idle_timeout,
                    match_: FakeMatch::from_v10(&fm.match_),
                    actions: acts10(&fm.actions),
                    goto: None,
                    n_packets: 0,
                };
                sw.flow_mod(0, fm.command, flow, 0);
            }
            Body::V13(v13::Body::FlowMod(fm)) => {
                sw.flow_mods += 1;
                let mut actions = Vec::new();
                let mut goto = None;
                for ins in &fm.instructions {
                    match ins {
                        v13::Instruction::ApplyActions(a) => actions.extend(acts13(a)),
                        v13::Instruction::GotoTable(t) => goto = Some(*t),
                        other => panic!("the fake switch does not model {other:?}"),
                    }
                }
                let flow = Flow {
                    priority: fm.priority,
                    cookie: fm.cookie,
                    idle_timeout: fm.idle_timeout,
                    match_: FakeMatch::from_v13(&fm.match_),
                    actions,
                    goto,
                    n_packets: 0,
                };
                sw.flow_mod(fm.table_id, fm.command, flow, fm.cookie_mask);
            }
            Body::V10(v10::Body::PacketOut(po)) => {
                sw.packet_outs += 1;
                assert_eq!(po.buffer_id, v10::NO_BUFFER, "the fake switch buffers nothing");
                let acts = acts10(&po.actions);
                let in_port = port_of_10(po.in_port);
                self.apply(i, in_port, po.data.0, &acts, 0);
            }
            Body::V13(v13::Body::PacketOut(po)) => {
                sw.packet_outs += 1;
                assert_eq!(po.buffer_id, v13::NO_BUFFER, "the fake switch buffers nothing");
                let acts = acts13(&po.actions);
                self.apply(i, po.in_port, po.data.0, &acts, 0);
            }
            other => sw.unhandled.push(format!("{other:?}").chars().take(60).collect()),
        }
    }

    /// The pipeline from table `table` for a frame that came in by `in_port`.
    fn pipeline(&mut self, i: usize, in_port: u32, frame: Vec<u8>, hops: u32, table: u8) {
        let sw = &mut self.switches[i];
        let best = sw.tables[table as usize]
            .iter_mut()
            .filter(|f| f.match_.matches(in_port, &frame))
            .max_by_key(|f| f.priority);
        let Some(flow) = best else {
            // A 1.0 table miss goes to the controller; 1.3 drops it.
            if sw.version == OFP10_VERSION {
                sw.packet_in(in_port, &frame, PacketInReason::NoMatch);
            }
            return;
        };
        flow.n_packets += 1;
        let (acts, goto) = (flow.actions.clone(), flow.goto);
        let frame = self.apply(i, in_port, frame, &acts, hops);
        if let Some(t) = goto {
            assert!(t > table, "goto_table must go forward");
            self.pipeline(i, in_port, frame, hops, t);
        }
    }

    /// Applies actions; returns the frame as modified.
    fn apply(&mut self, i: usize, in_port: u32, mut frame: Vec<u8>, acts: &[Act], hops: u32) -> Vec<u8> {
        for a in acts {
            match a {
                Act::SetEthDst(m) => frame[0..6].copy_from_slice(&m.0),
                Act::SetEthSrc(m) => frame[6..12].copy_from_slice(&m.0),
                Act::Output(port) => {
                    let dpid = self.switches[i].dpid;
                    let all: Vec<u32> = self.switches[i].ports.clone();
                    let targets: Vec<u32> = match *port {
                        v13::port::CONTROLLER => {
                            self.switches[i].packet_in(in_port, &frame, PacketInReason::Action);
                            vec![]
                        }
                        v13::port::FLOOD | v13::port::ALL => all.into_iter().filter(|p| *p != in_port).collect(),
                        v13::port::IN_PORT => vec![in_port],
                        v13::port::TABLE => {
                            self.pipeline(i, in_port, frame.clone(), hops, 0);
                            vec![]
                        }
                        p if p < v13::port::MAX && p != in_port => vec![p],
                        // OpenFlow: output to the input port needs IN_PORT.
                        _ => vec![],
                    };
                    for p in targets {
                        self.transmit(dpid, p, frame.clone(), hops);
                    }
                }
            }
        }
        frame
    }

    fn transmit(&mut self, dpid: u64, port: u32, frame: Vec<u8>, hops: u32) {
        if let Some(&(d, p)) = self.links.get(&(dpid, port)) {
            self.queue.push_back(InFlight {
                dpid: d,
                port: p,
                frame,
                hops: hops + 1,
            });
        } else if let Some(&h) = self.host_at.get(&(dpid, port)) {
            self.received[h].push(frame);
        }
    }

    /// Ends switch `dpid`'s session (the switch died).
    pub fn kill_switch(&mut self, dpid: u64) {
        let i = self.index(dpid);
        if let Some(mut d) = self.switches[i].driver.take() {
            d.on_eof();
            d.finish();
        }
    }

    /// Takes a link down on both ends (PORT_STATUS with LINK_DOWN from both switches).
    pub fn cut_link(&mut self, a: (u64, u32)) {
        let b = self.links.remove(&a).expect("no such link");
        self.links.remove(&b);
        for (dpid, port) in [a, b] {
            let i = self.index(dpid);
            let sw = &mut self.switches[i];
            let body = if sw.version == OFP10_VERSION {
                Body::V10(v10::Body::PortStatus(v10::PortStatus {
                    reason: ofwire::PortReason::Modify,
                    desc: v10::PhyPort {
                        port_no: port as u16,
                        hw_addr: MacAddr([0x0a, 0, 0, dpid as u8, 0, port as u8]),
                        name: format!("s{dpid}-eth{port}"),
                        config: 0,
                        state: 1,
                        curr: 0,
                        advertised: 0,
                        supported: 0,
                        peer: 0,
                    },
                }))
            } else {
                Body::V13(v13::Body::PortStatus(v13::PortStatus {
                    reason: ofwire::PortReason::Modify,
                    desc: v13::Port {
                        port_no: port,
                        hw_addr: MacAddr([0x0a, 0, 0, dpid as u8, 0, port as u8]),
                        name: format!("s{dpid}-eth{port}"),
                        config: 0,
                        state: 1,
                        curr: 0,
                        advertised: 0,
                        supported: 0,
                        peer: 0,
                        curr_speed: 0,
                        max_speed: 0,
                    },
                }))
            };
            sw.send(body);
        }
    }
}

impl FakeSwitch {
    fn send(&mut self, body: Body) {
        self.next_xid += 1;
        let x = self.next_xid;
        self.reply(x, body);
    }

    fn reply(&mut self, xid: u32, body: Body) {
        let version = match &body {
            Body::V10(_) => OFP10_VERSION,
            Body::V13(_) => OFP13_VERSION,
            _ => self.version,
        };
        Message::new(version, xid, body)
            .encode(&mut self.to_controller)
            .expect("the fake switch's message encodes");
    }

    fn packet_in(&mut self, in_port: u32, frame: &[u8], reason: PacketInReason) {
        self.packet_ins += 1;
        let data = ofwire::Bytes(frame.to_vec());
        let body = if self.version == OFP10_VERSION {
            Body::V10(v10::Body::PacketIn(v10::PacketIn {
                buffer_id: v10::NO_BUFFER,
                total_len: frame.len() as u16,
                in_port: in_port as u16,
                reason,
                data,
            }))
        } else {
            Body::V13(v13::Body::PacketIn(v13::PacketIn {
                buffer_id: v13::NO_BUFFER,
                total_len: frame.len() as u16,
                reason,
                table_id: 0,
                cookie: 0,
                match_: ofwire::oxm::Match::new(vec![Oxm::InPort(in_port)]),
                data,
            }))
        };
        self.send(body);
    }

    fn flow_mod(&mut self, table: u8, command: v10::FlowModCommand, flow: Flow, cookie_mask: u64) {
        use v10::FlowModCommand as C;
        let tables: Vec<usize> = if table == v13::TABLE_ALL {
            (0..N_TABLES).collect()
        } else {
            vec![table as usize]
        };
        for t in tables {
            let entries = &mut self.tables[t];
            let cookie_ok = |f: &Flow| f.cookie & cookie_mask == flow.cookie & cookie_mask;
            match command {
                C::Add => {
                    entries.retain(|f| !(f.priority == flow.priority && f.match_ == flow.match_));
                    entries.push(flow.clone());
                }
                C::Delete => entries.retain(|f| !(flow.match_.covers(&f.match_) && cookie_ok(f))),
                C::DeleteStrict => {
                    entries.retain(|f| !(f.priority == flow.priority && f.match_ == flow.match_ && cookie_ok(f)))
                }
                C::Modify | C::ModifyStrict => {
                    for f in entries.iter_mut().filter(|f| flow.match_.covers(&f.match_)) {
                        f.actions = flow.actions.clone();
                    }
                }
                other => panic!("unknown FLOW_MOD command {other:?}"),
            }
        }
    }

    /// Flows of table 0 with this cookie.
    pub fn flows_with_cookie(&self, cookie: u64) -> Vec<&Flow> {
        self.tables[0].iter().filter(|f| f.cookie == cookie).collect()
    }
}
