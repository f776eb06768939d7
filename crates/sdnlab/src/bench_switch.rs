//! `sdnlab bench switch`: forwarding between two veths through each switch
//! under test, side by side in one run with the same generator and
//! receiver: sdnlab's switch, Open vSwitch's userspace datapath with
//! `system` (AF_PACKET) and `afxdp` ports, the Linux bridge, and a direct
//! veth pair with no switch (the machine's limit). Per switch: the most the
//! receiver gets with the generator flat out, the highest zero-loss rate
//! (binary search), TCP throughput (iperf3, hosts' offloads left on),
//! FLOW_MOD insertion rate, and all of it again with a million extra rules
//! in the table. Every trial is written to `samples.jsonl` as it ends.
//!
//! The two hosts are namespaces of this run (prefix `sbsw`); everything is
//! removed at the end, on error too.

use clap::Args;
use serde_json::json;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};
use traffic::frame::Template;
use traffic::run::{generate, GenMethod, GenSpec, Receiver};

#[derive(Args)]
pub struct SwitchBenchArgs {
    /// Switches under test, comma-separated: sdnlab (AF_PACKET ports), sdnlab-afxdp (AF_XDP
    /// ports), ovs (system ports), ovs-afxdp, bridge, veth.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "sdnlab,sdnlab-afxdp,ovs,ovs-afxdp,bridge,veth"
    )]
    pub dut: Vec<String>,
    /// Frame size in bytes, FCS included (64 is RFC 2544's smallest).
    #[arg(long, default_value_t = 64)]
    pub frame: usize,
    /// Seconds per trial.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Extra non-matching rules installed before measuring, comma-separated (OpenFlow switches).
    #[arg(long, value_delimiter = ',', default_value = "0,1000000")]
    pub rules: Vec<usize>,
    /// FLOW_MODs sent to time insertion (OpenFlow switches).
    #[arg(long, default_value_t = 100_000)]
    pub flow_mods: usize,
    /// Zero-loss search stops when the bracket is this fraction of the rate.
    #[arg(long, default_value_t = 0.02)]
    pub resolution: f64,
    /// Rounds: each round measures every extra-rules count in turn (the table filled and
    /// emptied again between them), so 0 and 1,000,000 rules are compared in alternation;
    /// the summary gives the median of the rounds.
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Skip the iperf3 TCP trial.
    #[arg(long)]
    pub no_tcp: bool,
    /// How test frames are sent: xdp (an XDP program in live-frame mode transmits them from
    /// inside the kernel; GRO is turned on at the veth that receives them, for every switch
    /// alike) or afpacket (an AF_PACKET socket, sendmmsg).
    #[arg(long, default_value = "xdp")]
    pub generator: traffic::run::GenMethod,
    /// A smoke run: short trials, a coarse search, 10,000 extra rules.
    #[arg(long)]
    pub quick: bool,
    /// Run directory (default results/bench-switch-<time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

const DUTS: [&str; 6] = ["sdnlab", "sdnlab-afxdp", "ovs", "ovs-afxdp", "bridge", "veth"];
const GEN_MAC: [u8; 6] = [2, 0x66, 0, 0, 0, 1];
const RCV_MAC: [u8; 6] = [2, 0x66, 0, 0, 0, 2];
/// Test frames go to a MAC the receiving host does not own: its stack drops
/// them at once (PACKET_OTHERHOST) instead of routing them, which would
/// charge the receiving namespace's IP work to whatever sends into it.
const SINK_MAC: [u8; 6] = [2, 0x66, 0, 0, 0, 0x99];

fn sh(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The two hosts and the switch's two ports.
struct Bed {
    tag: String,
    generator: GenMethod,
    /// (generator and receiver, switch) cores, with two or more.
    cores: Option<(usize, usize)>,
    /// Root-side port names (absent for the direct veth pair).
    ports: Option<(String, String)>,
    children: Vec<std::process::Child>,
    ovs: Option<netlab::ovs::Ovs>,
    dir: PathBuf,
}

impl Bed {
    fn gen_ns(&self) -> String {
        format!("{}g", self.tag)
    }
    fn rcv_ns(&self) -> String {
        format!("{}r", self.tag)
    }
    fn gen_if(&self) -> String {
        format!("{}g", self.tag)
    }
    fn rcv_if(&self) -> String {
        format!("{}r", self.tag)
    }

    fn new(dut: &str, dir: &Path, generator: GenMethod) -> Result<Bed, String> {
        let tag = format!("sbsw{:04x}", std::process::id() & 0xffff);
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let mut bed = Bed {
            tag,
            generator,
            cores: (cpus >= 2).then_some((0, cpus - 1)),
            ports: None,
            children: Vec::new(),
            ovs: None,
            dir: dir.to_path_buf(),
        };
        bed.teardown();
        let (g, r) = (bed.gen_ns(), bed.rcv_ns());
        sh(&["ip", "netns", "add", &g])?;
        sh(&["ip", "netns", "add", &r])?;
        if dut == "veth" {
            sh(&[
                "ip",
                "link",
                "add",
                &bed.gen_if(),
                "type",
                "veth",
                "peer",
                "name",
                &bed.rcv_if(),
            ])?;
        } else {
            let (a, b) = (format!("{}a", bed.tag), format!("{}b", bed.tag));
            sh(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &bed.gen_if()])?;
            sh(&["ip", "link", "add", &b, "type", "veth", "peer", "name", &bed.rcv_if()])?;
            sh(&["ip", "link", "set", &a, "up"])?;
            sh(&["ip", "link", "set", &b, "up"])?;
            bed.ports = Some((a, b));
        }
        for (ifname, ns, mac, ip) in [
            (bed.gen_if(), &g, GEN_MAC, "10.66.0.1/24"),
            (bed.rcv_if(), &r, RCV_MAC, "10.66.0.2/24"),
        ] {
            let mac = mac.map(|b| format!("{b:02x}")).join(":");
            sh(&["ip", "link", "set", &ifname, "netns", ns])?;
            sh(&["ip", "-n", ns, "link", "set", &ifname, "address", &mac])?;
            sh(&["ip", "-n", ns, "addr", "add", ip, "dev", &ifname])?;
            sh(&["ip", "-n", ns, "link", "set", &ifname, "up"])?;
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        }
        bed.generator = generator;
        if generator == GenMethod::Xdp {
            // The veth the generator's frames arrive at needs NAPI to take
            // XDP frames: GRO on (the same for every switch).
            let (ns, ifname) = match &bed.ports {
                Some((a, _)) => (None, a.clone()),
                None => (Some(bed.rcv_ns()), bed.rcv_if()),
            };
            std::thread::spawn(move || -> std::io::Result<()> {
                if let Some(ns) = &ns {
                    traffic::run::enter_netns(ns)?;
                }
                afxdp::live::enable_gro(&ifname)
            })
            .join()
            .map_err(|_| "GRO thread panicked".to_string())?
            .map_err(|e| e.to_string())?;
        }
        Ok(bed)
    }

    fn teardown(&mut self) {
        for c in self.children.iter() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        for mut c in self.children.drain(..) {
            let _ = c.wait();
        }
        drop(self.ovs.take());
        for suffix in ["a", "b", "br"] {
            let _ = sh(&["ip", "link", "del", &format!("{}{suffix}", self.tag)]);
        }
        let _ = sh(&["ip", "netns", "del", &self.gen_ns()]);
        let _ = sh(&["ip", "netns", "del", &self.rcv_ns()]);
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// A minimal OpenFlow 1.3 client for installing rules: pipelined
/// FLOW_MODs, then a BARRIER whose reply says they are in.
struct OfClient {
    s: std::net::TcpStream,
    framer: ofwire::header::Framer,
}

impl OfClient {
    fn connect(addr: std::net::SocketAddr) -> Result<OfClient, String> {
        let t = Instant::now();
        let s = loop {
            match std::net::TcpStream::connect(addr) {
                Ok(s) => break s,
                Err(e) if t.elapsed() > Duration::from_secs(10) => return Err(format!("{addr}: {e}")),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut c = OfClient {
            s,
            framer: ofwire::header::Framer::default(),
        };
        let hello = ofwire::Message {
            version: ofwire::OFP13_VERSION,
            xid: 1,
            body: ofwire::Body::Hello(ofwire::header::Hello::with_versions(&[ofwire::OFP13_VERSION])),
        };
        c.s.write_all(&hello.to_bytes().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        Ok(c)
    }

    /// Sends the flow mods and waits for the barrier; (seconds, errors).
    fn install(&mut self, mods: &[ofwire::v13::FlowMod]) -> Result<(f64, u64), String> {
        let t0 = Instant::now();
        let mut buf = Vec::with_capacity(1 << 20);
        for (i, fm) in mods.iter().enumerate() {
            ofwire::Message::v13(100 + i as u32, ofwire::v13::Body::FlowMod(fm.clone()))
                .encode(&mut buf)
                .map_err(|e| e.to_string())?;
            if buf.len() > (1 << 20) - 512 {
                self.s.write_all(&buf).map_err(|e| e.to_string())?;
                buf.clear();
            }
        }
        let barrier_xid = 0x7fff_fff0;
        ofwire::Message::v13(barrier_xid, ofwire::v13::Body::BarrierRequest)
            .encode(&mut buf)
            .map_err(|e| e.to_string())?;
        self.s.write_all(&buf).map_err(|e| e.to_string())?;
        self.s
            .set_read_timeout(Some(Duration::from_secs(120)))
            .map_err(|e| e.to_string())?;
        let mut errors = 0;
        let mut rd = vec![0u8; 65536];
        loop {
            while let Ok(Some(m)) = self.framer.next_message() {
                match ofwire::decode(m) {
                    Ok(ofwire::Message {
                        xid,
                        body: ofwire::Body::V13(ofwire::v13::Body::BarrierReply),
                        ..
                    }) if xid == barrier_xid => return Ok((t0.elapsed().as_secs_f64(), errors)),
                    Ok(ofwire::Message {
                        body: ofwire::Body::V13(ofwire::v13::Body::Error(_)),
                        ..
                    }) => errors += 1,
                    Ok(ofwire::Message {
                        xid,
                        body: ofwire::Body::V13(ofwire::v13::Body::EchoRequest(d)),
                        ..
                    }) => {
                        let r = ofwire::Message::v13(xid, ofwire::v13::Body::EchoReply(d));
                        let _ = self.s.write_all(&r.to_bytes().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            let n = self
                .s
                .read(&mut rd)
                .map_err(|e| format!("waiting for the barrier: {e}"))?;
            if n == 0 {
                return Err("the switch closed the connection".into());
            }
            self.framer.push(&rd[..n]);
        }
    }
}

impl OfClient {
    /// The switch's port statistics.
    fn port_stats(&mut self) -> Result<Vec<ofwire::v13::PortStats>, String> {
        let req = ofwire::Message::v13(
            0x7fff_ff00,
            ofwire::v13::Body::MultipartRequest(ofwire::v13::MultipartRequest {
                flags: 0,
                body: ofwire::v13::MultipartRequestBody::PortStats {
                    port_no: ofwire::v13::port::ANY,
                },
            }),
        );
        self.s
            .write_all(&req.to_bytes().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let mut rd = vec![0u8; 65536];
        loop {
            while let Ok(Some(m)) = self.framer.next_message() {
                if let Ok(ofwire::Message {
                    body:
                        ofwire::Body::V13(ofwire::v13::Body::MultipartReply(ofwire::v13::MultipartReply {
                            body: ofwire::v13::MultipartReplyBody::PortStats(ps),
                            ..
                        })),
                    ..
                }) = ofwire::decode(m)
                {
                    return Ok(ps);
                }
            }
            let n = self.s.read(&mut rd).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("closed".into());
            }
            self.framer.push(&rd[..n]);
        }
    }
}

fn forward_rules() -> Vec<ofwire::v13::FlowMod> {
    use ofwire::oxm::{Match, Oxm};
    use ofwire::v13::{Action, FlowMod, Instruction};
    [(1u32, 2u32), (2, 1)]
        .into_iter()
        .map(|(i, o)| FlowMod {
            match_: Match::new(vec![Oxm::InPort(i)]),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output { port: o, max_len: 0 }])],
            ..FlowMod::add(10)
        })
        .collect()
}

/// `n` rules at a higher priority that no test frame matches (exact IPv4
/// destinations in 11.0.0.0/8), so every frame still takes the forwarding
/// rule, past a table of `n`.
/// The cookie of the extra rules, so they can be removed at once.
const FILLER_COOKIE: u64 = 0x5d1a_f111;

fn filler_rules(n: usize, base: u32) -> Vec<ofwire::v13::FlowMod> {
    use ofwire::oxm::{Match, Oxm};
    use ofwire::v13::{Action, FlowMod, Instruction};
    (0..n as u32)
        .map(|i| FlowMod {
            match_: Match::new(vec![
                Oxm::EthType(0x0800),
                Oxm::Ipv4Dst(std::net::Ipv4Addr::from(0x0b00_0000 + base + i), None),
            ]),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: 0 }])],
            cookie: FILLER_COOKIE,
            ..FlowMod::add(100)
        })
        .collect()
}

/// Removes every extra rule (by cookie).
fn remove_filler() -> ofwire::v13::FlowMod {
    ofwire::v13::FlowMod {
        command: ofwire::v13::FlowModCommand::Delete,
        table_id: ofwire::v13::TABLE_ALL,
        cookie: FILLER_COOKIE,
        cookie_mask: u64::MAX,
        ..ofwire::v13::FlowMod::add(0)
    }
}

/// Brings the switch under test up on the bed; its OpenFlow address if any.
fn start_dut(dut: &str, bed: &mut Bed) -> Result<Option<std::net::SocketAddr>, String> {
    let Some((a, b)) = bed.ports.clone() else {
        return Ok(None);
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("literal");
    match dut {
        "sdnlab" | "sdnlab-afxdp" => {
            let (a, b) = if dut == "sdnlab-afxdp" {
                (format!("afxdp:{a}"), format!("afxdp:{b}"))
            } else {
                (a, b)
            };
            let me = std::env::current_exe().map_err(|e| e.to_string())?;
            let log = std::fs::File::create(bed.dir.join("sdnlab-switch.log")).map_err(|e| e.to_string())?;
            let child = Command::new(me)
                .args([
                    "switch",
                    "--port",
                    &a,
                    "--port",
                    &b,
                    "--listen",
                    &format!("ptcp:{port}"),
                ])
                .args(["--ring", "4096", "--threads", "1"])
                .args(bed.cores.map(|(_, sw)| format!("--cores={sw}")))
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|e| e.to_string())?;
            bed.children.push(child);
            Ok(Some(addr))
        }
        "ovs" | "ovs-afxdp" => {
            let ovs = netlab::ovs::Ovs::start(&bed.dir, &bed.tag).map_err(|e| e.to_string())?;
            let br = format!("{}br", bed.tag);
            let mut args: Vec<String> = [
                "--",
                "add-br",
                &br,
                "--",
                "set",
                "bridge",
                &br,
                "datapath_type=netdev",
                "fail-mode=secure",
                "protocols=OpenFlow13",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if let Some((_, sw)) = bed.cores {
                // Its packet-processing thread on the switch's core.
                args.extend(["--", "set", "Open_vSwitch", "."].map(String::from));
                args.push(format!("other_config:pmd-cpu-mask={:#x}", 1u64 << sw));
            }
            for (n, p) in [(1, &a), (2, &b)] {
                args.extend(["--", "add-port", &br, p, "--", "set", "interface", p].map(String::from));
                args.push(format!("ofport_request={n}"));
                if dut == "ovs-afxdp" {
                    args.push("type=afxdp".into());
                }
            }
            args.extend([
                "--".to_string(),
                "set-controller".to_string(),
                br.clone(),
                format!("ptcp:{port}:127.0.0.1"),
            ]);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            ovs.vsctl(&refs).map_err(|e| e.to_string())?;
            if let Some((_, sw)) = bed.cores {
                // Every other thread too (the main thread polls `system` ports).
                traffic::run::pin_process(ovs.state.vswitchd_pid, sw).map_err(|e| e.to_string())?;
            }
            bed.ovs = Some(ovs);
            Ok(Some(addr))
        }
        "bridge" => {
            let br = format!("{}br", bed.tag);
            sh(&["ip", "link", "add", &br, "type", "bridge"])?;
            sh(&["ip", "link", "set", &a, "master", &br])?;
            sh(&["ip", "link", "set", &b, "master", &br])?;
            sh(&["ip", "link", "set", &br, "up"])?;
            Ok(None)
        }
        other => Err(format!("unknown switch '{other}': choose from {}", DUTS.join(", "))),
    }
}

struct Trial {
    offered_pps: f64,
    sent: u64,
    received: u64,
    rx_pps: f64,
    latency_us_p50: f64,
    latency_us_p99: f64,
    receiver_drops: u64,
}

fn trial(bed: &Bed, frame: usize, rate: Option<f64>, seconds: f64) -> Result<Trial, String> {
    let rx = Receiver::start_on(Some(&bed.rcv_ns()), &bed.rcv_if(), bed.cores.map(|(gen, _)| gen))
        .map_err(|e| e.to_string())?;
    let spec = GenSpec {
        netns: Some(bed.gen_ns()),
        ifname: bed.gen_if(),
        template: Template::udp(frame - 4, GEN_MAC, SINK_MAC, [10, 66, 0, 1], [10, 66, 0, 99], 0),
        rate_pps: rate,
        duration: Duration::from_secs_f64(seconds),
        streams: 16,
        method: bed.generator,
        core: bed.cores.map(|(gen, _)| gen),
    };
    let g = generate(&spec).map_err(|e| e.to_string())?;
    let r = rx.finish(Duration::from_millis(300));
    Ok(Trial {
        offered_pps: g.achieved_pps,
        sent: g.sent,
        received: r.received - r.duplicates,
        rx_pps: (r.received - r.duplicates) as f64 / g.elapsed_s,
        latency_us_p50: r.latency_us_p50,
        latency_us_p99: r.latency_us_p99,
        receiver_drops: r.receiver_drops,
    })
}

fn iperf(bed: &Bed, seconds: f64) -> Result<f64, String> {
    let mut server = Command::new("ip")
        .args(["netns", "exec", &bed.rcv_ns(), "iperf3", "-s", "-1", "-p", "5411"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("iperf3: {e}"))?;
    std::thread::sleep(Duration::from_millis(300));
    let secs = format!("{}", seconds.ceil().max(1.0) as u64);
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &bed.gen_ns(),
            "iperf3",
            "-c",
            "10.66.0.2",
            "-p",
            "5411",
            "-J",
            "-t",
            &secs,
        ])
        .output()
        .map_err(|e| format!("iperf3: {e}"))?;
    let _ = server.kill();
    let _ = server.wait();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("iperf3 output: {e}"))?;
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .map(|b| b / 1e9)
        .ok_or_else(|| format!("iperf3: {}", v["error"]))
}

pub fn run(args: SwitchBenchArgs) -> ExitCode {
    use crate::net_cmd::fail;
    if !nix::unistd::Uid::effective().is_root() {
        return fail("bench switch needs root (network namespaces, AF_PACKET)");
    }
    for d in &args.dut {
        if !DUTS.contains(&d.as_str()) {
            return fail(format!(
                "unknown switch '{d}' in --dut: choose from {}",
                DUTS.join(", ")
            ));
        }
    }
    if args.frame < 64 || args.frame > 1518 {
        return fail(format!("--frame {} is outside 64..=1518", args.frame));
    }
    let seconds = if args.quick {
        args.seconds.min(0.5)
    } else {
        args.seconds
    };
    let resolution = if args.quick {
        args.resolution.max(0.1)
    } else {
        args.resolution
    };
    let rules: Vec<usize> = if args.quick {
        args.rules.iter().map(|&r| r.min(10_000)).collect()
    } else {
        args.rules.clone()
    };
    let flow_mods = if args.quick {
        args.flow_mods.min(10_000)
    } else {
        args.flow_mods
    };
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/bench-switch-{}", crate::time_tag())));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fail(format!("{}: {e}", dir.display()));
    }
    // Open vSwitch's sockets need an absolute path.
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let samples_path = dir.join("samples.jsonl");
    let mut samples = match std::fs::File::create(&samples_path) {
        Ok(f) => f,
        Err(e) => return fail(format!("{}: {e}", samples_path.display())),
    };
    let mut rows: Vec<serde_json::Value> = Vec::new();
    for dut in &args.dut {
        let openflow = matches!(dut.as_str(), "sdnlab" | "sdnlab-afxdp" | "ovs" | "ovs-afxdp");
        let rule_counts: Vec<usize> = if openflow { rules.clone() } else { vec![0] };
        let dut_dir = dir.join(dut);
        let _ = std::fs::remove_dir_all(&dut_dir);
        if let Err(e) = std::fs::create_dir_all(&dut_dir) {
            return fail(format!("{}: {e}", dut_dir.display()));
        }
        let mut bed = match Bed::new(dut, &dut_dir, args.generator) {
            Ok(b) => b,
            Err(e) => return fail(format!("{dut}: {e}")),
        };
        let of_addr = match start_dut(dut, &mut bed) {
            Ok(a) => a,
            Err(e) => return fail(format!("{dut}: {e}")),
        };
        let mut insert_rate = None;
        if let Some(addr) = of_addr {
            let mut c = match OfClient::connect(addr) {
                Ok(c) => c,
                Err(e) => return fail(format!("{dut}: {e}")),
            };
            if let Err(e) = c.install(&forward_rules()) {
                return fail(format!("{dut}: forwarding rules: {e}"));
            }
            // Insertion rate: flow_mods distinct rules, then removed again.
            let mods = filler_rules(flow_mods, 0x0080_0000);
            match c.install(&mods) {
                Ok((s, errors)) => {
                    insert_rate = Some(flow_mods as f64 / s);
                    let v = json!({"dut": dut, "test": "flow_mod_insertion", "flow_mods": flow_mods, "seconds": s, "errors": errors, "per_s": flow_mods as f64 / s});
                    let _ = writeln!(samples, "{v}");
                    eprintln!(
                        "{dut}: {flow_mods} FLOW_MODs in {s:.2} s ({:.0}/s, {errors} errors)",
                        flow_mods as f64 / s
                    );
                }
                Err(e) => return fail(format!("{dut}: flow mods: {e}")),
            }
            let mut del = ofwire::v13::FlowMod::add(100);
            del.command = ofwire::v13::FlowModCommand::Delete;
            del.match_ = ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::EthType(0x0800)]);
            if let Err(e) = c.install(&[del]) {
                return fail(format!("{dut}: removing the timed rules: {e}"));
            }
        }
        // Let ARP and IPv6 chatter settle before counting.
        std::thread::sleep(Duration::from_millis(300));
        let mut installed = 0usize;
        let plan: Vec<(usize, usize)> = (0..args.rounds.max(1))
            .flat_map(|round| rule_counts.iter().map(move |&extra| (round, extra)))
            .collect();
        for (round, extra) in plan {
            if extra < installed {
                if let Some(addr) = of_addr {
                    if let Err(e) = OfClient::connect(addr).and_then(|mut c| c.install(&[remove_filler()])) {
                        return fail(format!("{dut}: emptying the table: {e}"));
                    }
                    installed = 0;
                }
            }
            if extra > installed {
                // A fresh connection: one left idle through the trials may
                // have been dropped for an unanswered echo.
                if let Some(addr) = of_addr {
                    let t = Instant::now();
                    let filled = OfClient::connect(addr)
                        .and_then(|mut c| c.install(&filler_rules(extra - installed, installed as u32)));
                    if let Err(e) = filled {
                        return fail(format!("{dut}: filling the table: {e}"));
                    }
                    eprintln!(
                        "{dut}: {extra} extra rules in the table ({:.1} s)",
                        t.elapsed().as_secs_f64()
                    );
                    installed = extra;
                }
            }
            let max = match trial(&bed, args.frame, None, seconds) {
                Ok(t) => t,
                Err(e) => return fail(format!("{dut}: {e}")),
            };
            let stats = |addr: Option<std::net::SocketAddr>| {
                addr.and_then(|a| OfClient::connect(a).ok())
                    .and_then(|mut c| c.port_stats().ok())
                    .map(|v| {
                        v.iter()
                            .map(|p| {
                                let c = &p.counters;
                                json!({"port": p.port_no, "rx": c.rx_packets, "tx": c.tx_packets,
                                    "rx_dropped": c.rx_dropped, "tx_dropped": c.tx_dropped})
                            })
                            .collect::<Vec<_>>()
                    })
            };
            let mut record = |kind: &str, t: &Trial| {
                let v = json!({"switch_ports": stats(of_addr),"dut": dut, "rules": extra, "round": round, "test": kind, "frame": args.frame, "seconds": seconds,
                    "offered_pps": t.offered_pps, "sent": t.sent, "received": t.received, "rx_pps": t.rx_pps,
                    "latency_us_p50": t.latency_us_p50, "latency_us_p99": t.latency_us_p99,
                    "receiver_drops": t.receiver_drops});
                let _ = writeln!(samples, "{v}");
                let _ = samples.flush();
            };
            record("max", &max);
            // Zero-loss search between nothing and what the generator can offer.
            let (mut lo, mut hi) = (0.0f64, max.offered_pps);
            let mut best: Option<Trial> = None;
            for probe in 0..12 {
                if hi - lo <= resolution * hi {
                    break;
                }
                // First just under what got through flat out, then bisect.
                let rate = if probe == 0 {
                    max.rx_pps.min(hi) * 0.98
                } else {
                    (lo + hi) / 2.0
                };
                let t = match trial(&bed, args.frame, Some(rate), seconds) {
                    Ok(t) => t,
                    Err(e) => return fail(format!("{dut}: {e}")),
                };
                record("zero_loss_search", &t);
                if t.received >= t.sent {
                    lo = rate;
                    best = Some(t);
                } else {
                    hi = rate;
                }
            }
            let tcp = if args.no_tcp {
                None
            } else {
                iperf(&bed, seconds.max(2.0)).ok()
            };
            if let Some(g) = tcp {
                let _ = writeln!(
                    samples,
                    "{}",
                    json!({"dut": dut, "rules": extra, "round": round, "test": "tcp", "gbit_s": g})
                );
            }
            let row = json!({
                "dut": dut, "rules": extra, "round": round,
                "max_rx_pps": max.rx_pps, "generator_pps": max.offered_pps,
                "zero_loss_pps": best.as_ref().map(|b| b.offered_pps).unwrap_or(0.0),
                "latency_us_p50": best.as_ref().map(|b| b.latency_us_p50),
                "tcp_gbit_s": tcp, "flow_mods_per_s": insert_rate,
            });
            eprintln!("{row}");
            rows.push(row);
        }
        drop(bed);
    }
    // One line per switch and rule count: the median of its rounds.
    let mut table = String::from(
        "| switch | extra rules | rounds | generator pps | max received pps | zero-loss pps | p50 latency at zero loss (µs) | TCP Gbit/s | FLOW_MOD/s |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let median = |group: &[&serde_json::Value], key: &str| -> Option<f64> {
        let mut v: Vec<f64> = group.iter().filter_map(|r| r[key].as_f64()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        })
    };
    let num = |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "-".into());
    let mut keys: Vec<(String, u64)> = Vec::new();
    for r in &rows {
        let k = (
            r["dut"].as_str().unwrap_or("").to_string(),
            r["rules"].as_u64().unwrap_or(0),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (dut, extra) in keys {
        let group: Vec<&serde_json::Value> = rows
            .iter()
            .filter(|r| r["dut"] == dut.as_str() && r["rules"].as_u64() == Some(extra))
            .collect();
        table.push_str(&format!(
            "| {dut} | {extra} | {} | {} | {} | {} | {} | {} | {} |\n",
            group.len(),
            num(median(&group, "generator_pps"), 0),
            num(median(&group, "max_rx_pps"), 0),
            num(median(&group, "zero_loss_pps"), 0),
            num(median(&group, "latency_us_p50"), 0),
            num(median(&group, "tcp_gbit_s"), 2),
            num(median(&group, "flow_mods_per_s"), 0),
        ));
    }
    let meta = json!({
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "frame": args.frame, "seconds": seconds, "rules": rules, "flow_mods": flow_mods, "rounds": args.rounds,
        "generator": args.generator,
        "pinning": "generator and receiver on core 0, the switch process on the last core (OVS: pmd-cpu-mask too); kernel switches (bridge, veth) where the kernel runs them",
        "kernel": sh(&["uname", "-r"]).unwrap_or_default().trim(),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    });
    let _ = std::fs::write(
        dir.join("meta.json"),
        serde_json::to_vec_pretty(&meta).unwrap_or_default(),
    );
    let _ = std::fs::write(dir.join("summary.md"), &table);
    println!("{table}");
    println!("samples: {}", samples_path.display());
    ExitCode::SUCCESS
}
