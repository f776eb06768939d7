//! A network of emulated OpenFlow switches with no sockets and no kernel
//! (in the manner of Faucet's fakeoftable): each switch is sdnlab's switch
//! model (`ofswitch::emulated`: the real switch's pipeline and agent, with
//! no I/O), applying the FLOW_MODs and PACKET_OUTs the controller sends,
//! wired to other switches and to hosts;
//! each talks to the real controller core (`controller::driver::Driver`)
//! through the real wire encoding. Tests send frames from hosts and read
//! what every host got, what every table holds, and whether a packet went
//! round in circles.

#![allow(dead_code)]

use controller::app::AppFactory;
use controller::driver::{Driver, Environment};
use ofswitch::emulated::{Effect, Emulated};
use ofswitch::flow::Rule;
use ofwire::oxm::Oxm;
use ofwire::{v13, Body, Framer, Hello, MacAddr, Message};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const N_TABLES: usize = 4;

/// A switch port: (datapath id, port number).
pub type Attach = (u64, u32);

/// A rule as the switch holds it.
pub type Flow = Arc<Rule>;

/// A rule's destination MAC match, if it has one (exact).
pub fn eth_dst(f: &Rule) -> Option<MacAddr> {
    f.match_.fields.iter().find_map(|o| match o {
        Oxm::EthDst(m, None) => Some(*m),
        _ => None,
    })
}

/// A rule's ethertype match, if it has one.
pub fn eth_type(f: &Rule) -> Option<u16> {
    f.match_.fields.iter().find_map(|o| match o {
        Oxm::EthType(t) => Some(*t),
        _ => None,
    })
}

/// Whether a rule matches the input port.
pub fn matches_in_port(f: &Rule) -> bool {
    f.match_.fields.iter().any(|o| matches!(o, Oxm::InPort(_)))
}

/// The ports a rule's apply-actions output to, in order.
pub fn outputs(f: &Rule) -> Vec<u32> {
    f.instructions
        .iter()
        .filter_map(|i| match i {
            v13::Instruction::ApplyActions(a) => Some(a),
            _ => None,
        })
        .flatten()
        .filter_map(|a| match a {
            v13::Action::Output { port, .. } => Some(*port),
            _ => None,
        })
        .collect()
}

pub struct FakeSwitch {
    pub dpid: u64,
    pub dp: Emulated,
    conn: usize,
    driver: Option<Driver>,
    commands: std::sync::Arc<controller::shared::Mailbox>,
    from_controller: Framer,
    to_controller: Vec<u8>,
}

impl FakeSwitch {
    pub fn packet_ins(&self) -> u64 {
        self.dp.counters.packet_ins
    }

    /// The rules of each table.
    pub fn tables(&self) -> Vec<Vec<Flow>> {
        let n = self.dp.pipeline().tables.len();
        (0..n as u8).map(|t| self.dp.rules(t)).collect()
    }

    /// Rules of table 0 with this cookie.
    pub fn flows_with_cookie(&self, cookie: u64) -> Vec<Flow> {
        self.dp.rules(0).into_iter().filter(|r| r.cookie == cookie).collect()
    }

    fn send(&mut self, m: &Message) {
        m.encode(&mut self.to_controller)
            .expect("the fake switch's message encodes");
    }
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
        let session = ofconn::Config {
            versions: vec![version],
            ..Default::default()
        };
        let env = Environment::new(apps, session);
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
            let mailbox = controller::shared::Mailbox::detached();
            let id = net.next_session;
            net.next_session += 1;
            let n_tables = if version == ofwire::OFP10_VERSION { 1 } else { N_TABLES };
            let mut dp = Emulated::new(dpid, n_ports, n_tables, 100_000, ctlbench::switch::desc());
            let conn = dp.connect(version);
            let mut sw = FakeSwitch {
                dpid,
                dp,
                conn,
                driver: Some(Driver::new(
                    id,
                    &net.env,
                    controller::shared::Outbox::new(id, mailbox.clone()),
                    Instant::now(),
                )),
                commands: mailbox,
                from_controller: Framer::default(),
                to_controller: Vec::new(),
            };
            sw.send(&Message::new(version, 1, Body::Hello(Hello::with_versions(&[version]))));
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
                let mut effects = Vec::new();
                self.switches[i].dp.on_frame(f.port, f.frame, &mut effects);
                self.effects(i, effects, f.hops);
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
        for cmd in sw.commands.take_commands() {
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
        let mut effects = Vec::new();
        while let Ok(Some(raw)) = sw.from_controller.next_message() {
            let m = ofwire::decode(raw).expect("the controller sent a malformed message");
            sw.dp.on_message(sw.conn, &m, &mut effects);
        }
        let errors: Vec<&Message> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::ToController { msg, .. }
                    if matches!(
                        msg.body,
                        Body::V10(ofwire::v10::Body::Error(_)) | Body::V13(v13::Body::Error(_))
                    ) =>
                {
                    Some(msg)
                }
                _ => None,
            })
            .collect();
        assert!(
            errors.is_empty(),
            "the switch refused what the controller sent: {errors:?}"
        );
        self.effects(i, effects, 0);
        true
    }

    /// Carries out what switch `i` did: messages to the controller, frames out of ports.
    fn effects(&mut self, i: usize, effects: Vec<Effect>, hops: u32) {
        let dpid = self.switches[i].dpid;
        for e in effects {
            match e {
                Effect::ToController { msg, .. } => self.switches[i].send(&msg),
                Effect::Transmit { port, frame } => self.transmit(dpid, port, frame, hops),
            }
        }
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
            let mut effects = Vec::new();
            self.switches[i].dp.set_link(port, false, &mut effects);
            self.effects(i, effects, 0);
        }
    }
}
