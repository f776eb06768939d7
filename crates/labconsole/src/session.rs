//! What the prompt's commands do to a running network: a [`Console`] holds
//! the run (owned, when `net up --cli` brought it up in this process, or
//! attached to one another process brought up) and carries out each
//! [`Command`], printing as Mininet's console does. Every failure is one
//! line and the prompt stays; only `exit` ends the session.

use crate::command::{Command, Names, COMMANDS};
use crate::ConsoleError;
use netlab::run::{self, Net, State, SwitchKind};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The run the console drives.
pub enum Lab {
    /// Brought up by this process: it goes down with the console (unless kept).
    Owned(Net),
    /// Brought up by another process (`sdnlab net up`), found by its state.
    Attached(State),
}

/// Where the run's controller answers REST requests, and the token its
/// closed endpoints need.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Rest {
    pub addr: SocketAddr,
    #[serde(skip)]
    pub token: Option<String>,
}

/// The file in a run directory that names the built-in controller's REST
/// API (the token beside it, readable by root only).
pub const REST_FILE: &str = "controller-rest.json";
const TOKEN_FILE: &str = "controller-rest.token";

impl Rest {
    /// Records the REST API of the controller `net up --app` started, so a
    /// console attached later finds it.
    pub fn save(&self, run_dir: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::write(run_dir.join(REST_FILE), serde_json::to_vec(self)?)?;
        if let Some(t) = &self.token {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(run_dir.join(TOKEN_FILE))?;
            f.write_all(t.as_bytes())?;
        }
        Ok(())
    }

    /// What a run directory says about its controller's REST API, if anything.
    pub fn load(run_dir: &Path) -> Option<Rest> {
        let mut r: Rest = serde_json::from_slice(&std::fs::read(run_dir.join(REST_FILE)).ok()?).ok()?;
        r.token = std::fs::read_to_string(run_dir.join(TOKEN_FILE)).ok();
        Some(r)
    }
}

/// What a command asks of the loop around it.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit,
}

pub struct Console {
    rt: tokio::runtime::Handle,
    lab: Lab,
    rest: Option<Rest>,
    /// Set by SIGINT while a command runs (the child gets the signal too).
    pub interrupted: Arc<AtomicBool>,
    depth: usize,
}

fn bits(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mbit/s", bps / 1e6)
    } else {
        format!("{:.1} kbit/s", bps / 1e3)
    }
}

fn operstate(ifname: &str) -> String {
    std::fs::read_to_string(format!("/sys/class/net/{ifname}/operstate"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "gone".into())
}

impl Console {
    pub fn new(rt: tokio::runtime::Handle, lab: Lab, rest: Option<Rest>) -> Console {
        Console {
            rt,
            lab,
            rest,
            interrupted: Arc::new(AtomicBool::new(false)),
            depth: 0,
        }
    }

    pub fn state(&self) -> &State {
        match &self.lab {
            Lab::Owned(n) => &n.state,
            Lab::Attached(s) => s,
        }
    }

    pub fn names(&self) -> Names {
        Names::of(self.state())
    }

    /// Reads and carries out one line; a failure is printed as one line.
    pub fn line(&mut self, line: &str) -> Flow {
        self.interrupted.store(false, Ordering::Relaxed);
        let names = self.names();
        let r = Command::parse(line, &names)
            .map_err(ConsoleError::from)
            .and_then(|c| self.run(c, &names));
        match r {
            Ok(f) => f,
            Err(e) => {
                println!("*** {e}");
                Flow::Continue
            }
        }
    }

    /// Takes the network down (unless `keep`); what to tell the person.
    pub fn finish(self, keep: bool) -> Result<String, ConsoleError> {
        let id = self.state().id.clone();
        if keep {
            if let Lab::Owned(net) = self.lab {
                // Its processes and interfaces outlive this process;
                // `sdnlab net down` (or clean) finds them by the state.
                std::mem::forget(net);
            }
            return Ok(format!("run {id} stays up; `sdnlab net down --id {id}` takes it down"));
        }
        let t = Instant::now();
        let r = match self.lab {
            Lab::Owned(net) => self.rt.block_on(net.down()),
            Lab::Attached(st) => self.rt.block_on(run::stop_run(&st)),
        };
        match r {
            Ok(()) => Ok(format!("run {id} down in {:.2} s", t.elapsed().as_secs_f64())),
            Err(e) => Err(ConsoleError::refused(format!(
                "teardown of run {id} left something behind ({e}); `sdnlab net clean` removes it"
            ))),
        }
    }

    fn run(&mut self, c: Command, names: &Names) -> Result<Flow, ConsoleError> {
        match c {
            Command::Nothing => {}
            Command::Exit => return Ok(Flow::Exit),
            Command::Help => {
                println!("Commands (Mininet's, and sdnlab's own):");
                for (name, args, what) in COMMANDS {
                    println!("  {:<30} {what}", format!("{name} {args}").trim_end());
                }
            }
            Command::Nodes => {
                println!("available nodes are:");
                println!("{}", names.nodes().join(" "));
            }
            Command::Net => self.net(),
            Command::Links => self.links(),
            Command::Ports => {
                for (sw, ports) in self.state().ports() {
                    let list: Vec<String> = ports
                        .iter()
                        .map(|p| format!("{}:{}({})", p.no, p.interface, p.peer))
                        .collect();
                    println!("{sw}: {}", list.join(" "));
                }
            }
            Command::Intfs => {
                let st = self.state();
                let mgmt = st.topology.as_ref().is_some_and(|t| t.mgmt.is_some());
                for h in &st.hosts {
                    println!("{}: eth0{}", h.name, if mgmt { ",mgmt0" } else { "" });
                }
                for (sw, ports) in st.ports() {
                    let list: Vec<&str> = ports.iter().map(|p| p.interface.as_str()).collect();
                    println!("{sw}: {}", list.join(","));
                }
            }
            Command::Dump => self.dump(),
            Command::PingAll { full } => self.pingall(full, None)?,
            Command::PingPair => {
                let st = self.state();
                if st.hosts.len() < 2 {
                    return Err(ConsoleError::refused("pingpair needs two hosts"));
                }
                let pair = [st.hosts[0].name.clone(), st.hosts[1].name.clone()];
                self.pingall(false, Some(pair))?
            }
            Command::Iperf { pair, seconds } => self.iperf(pair, seconds, None)?,
            Command::IperfUdp { rate, pair, seconds } => self.iperf(pair, seconds, Some(rate))?,
            Command::Link { a, b, up } => {
                self.rt.block_on(run::set_link(self.state(), &a, &b, up))?;
                println!("link {a} - {b} {}", if up { "up" } else { "down" });
            }
            Command::Switch { name, start } => {
                let r = match &mut self.lab {
                    Lab::Owned(net) => self.rt.block_on(net.switch_set(&name, start)),
                    Lab::Attached(st) => self.rt.block_on(run::switch_set(st, &name, start)).map(|_| ()),
                };
                r?;
                println!("switch {name} {}", if start { "started" } else { "stopped" });
            }
            Command::Dpctl { args } => self.dpctl(&args)?,
            Command::Flows { switch } => self.flows(&switch)?,
            Command::Controller => self.controller()?,
            Command::Watch { switch, seconds } => self.watch(&switch, seconds)?,
            Command::Graph { file } => self.graph(file.as_deref())?,
            Command::Source { path } => {
                if self.depth >= 8 {
                    return Err(ConsoleError::refused(format!(
                        "{path}: sourced files nest deeper than 8"
                    )));
                }
                let text = std::fs::read_to_string(&path).map_err(ConsoleError::io(path.clone()))?;
                self.depth += 1;
                let mut flow = Flow::Continue;
                for l in text.lines() {
                    if self.line(l) == Flow::Exit {
                        flow = Flow::Exit;
                        break;
                    }
                    if self.interrupted.load(Ordering::Relaxed) {
                        println!("*** interrupted: the rest of {path} is not run");
                        break;
                    }
                }
                self.depth -= 1;
                return Ok(flow);
            }
            Command::Sh { line } => {
                let mut c = std::process::Command::new("sh");
                c.args(["-c", &line]);
                self.foreground(c)?;
            }
            Command::Node { node, line } => {
                let line = crate::command::substitute(&line, names);
                let c = if names.is_host(&node) {
                    run::command_in(self.state(), &node, &["sh", "-c", &line])?
                } else {
                    // Switches live in the root namespace, as in Mininet.
                    let mut c = std::process::Command::new("sh");
                    c.args(["-c", &line]);
                    c
                };
                self.foreground(c)?;
            }
        }
        Ok(Flow::Continue)
    }

    /// Runs a command on the terminal (Ctrl-C stops it, not the console).
    fn foreground(&self, mut c: std::process::Command) -> Result<(), ConsoleError> {
        let status = c.status().map_err(ConsoleError::io(format!("{:?}", c.get_program())))?;
        if !status.success() && !self.interrupted.load(Ordering::Relaxed) {
            if let Some(code) = status.code() {
                println!("*** exit status {code}");
            }
        }
        Ok(())
    }

    fn net(&self) {
        let st = self.state();
        let ports = st.ports();
        let port_of = |sw: &str, iface: &str| netlab::state::State::port_no(&ports, sw, iface).unwrap_or(0);
        for h in &st.hosts {
            let peers: Vec<String> = ports
                .iter()
                .flat_map(|(sw, ps)| {
                    ps.iter()
                        .filter(|p| p.peer == h.name)
                        .map(move |p| format!("eth0:{sw}-port{}", p.no))
                })
                .collect();
            println!("{} {}", h.name, peers.join(" "));
        }
        for (sw, ps) in &ports {
            let list: Vec<String> = ps
                .iter()
                .map(|p| {
                    let far = if st.hosts.iter().any(|h| h.name == p.peer) {
                        format!("{}-eth0", p.peer)
                    } else {
                        let other = st
                            .links
                            .iter()
                            .find(|l| l.root_ends.len() == 2 && l.root_ends.contains(&p.interface))
                            .and_then(|l| l.root_ends.iter().find(|e| **e != p.interface))
                            .map(|e| port_of(&p.peer, e))
                            .unwrap_or(0);
                        format!("{}-port{other}", p.peer)
                    };
                    format!("port{}:{far}", p.no)
                })
                .collect();
            println!("{sw} {}", list.join(" "));
        }
    }

    fn links(&self) {
        for l in &self.state().links {
            let states: Vec<String> = l.root_ends.iter().map(|e| format!("{e} {}", operstate(e))).collect();
            let note = if l.blocked { " (left down to break a loop)" } else { "" };
            println!("{}<->{} ({}){note}", l.a, l.b, states.join(", "));
        }
    }

    fn dump(&self) {
        let st = self.state();
        for h in &st.hosts {
            println!("<Host {}: eth0:{} namespace={}>", h.name, h.ip, h.netns);
        }
        for (name, br) in &st.switches {
            let what = match st.options.kind {
                SwitchKind::Bridge => format!("<LinuxBridge {name}: {br} {}>", operstate(br)),
                SwitchKind::Ovs => format!(
                    "<OVSSwitch {name}: bridge={br} ofctl={}>",
                    self.ofctl_target(name).unwrap_or_default()
                ),
                SwitchKind::Sdnlab if st.ovs.is_some() => format!(
                    "<SdnlabSwitch {name}: bridge={br} ovsdb ofctl={}>",
                    self.ofctl_target(name).unwrap_or_default()
                ),
                SwitchKind::Sdnlab => match st.sdnlab.iter().find(|p| &p.name == name) {
                    Some(p) if p.pid != 0 => format!("<SdnlabSwitch {name}: ofctl={} pid={}>", p.ofp, p.pid),
                    _ => format!("<SdnlabSwitch {name}: stopped>"),
                },
            };
            println!("{what}");
        }
        if let Some(c) = &st.options.controller {
            println!("<Controller: {c}>");
        }
        if let Some(r) = &self.rest {
            println!("<Controller REST API: http://{}>", r.addr);
        }
    }

    fn pingall(&self, full: bool, only: Option<[String; 2]>) -> Result<(), ConsoleError> {
        println!("*** Ping: testing ping reachability");
        let mut st = self.state().clone();
        if let Some(pair) = &only {
            st.hosts.retain(|h| pair.contains(&h.name));
        }
        // One ping a pair, as Mininet's pingall, answered within 5 s.
        let results = self.rt.block_on(run::ping_all_waiting(&st, 1, 5));
        let mut got = 0;
        for a in &st.hosts {
            let mut line = format!("{} ->", a.name);
            for b in st.hosts.iter().filter(|b| b.name != a.name) {
                let r = results.iter().find(|r| r.from == a.name && r.to == b.name);
                match r {
                    Some(r) if r.received > 0 => {
                        got += 1;
                        line.push_str(&format!(" {}", b.name));
                        if full {
                            if let Some(ms) = r.rtt_avg_ms {
                                line.push_str(&format!(" ({ms:.3} ms)"));
                            }
                        }
                    }
                    _ => line.push_str(" X"),
                }
            }
            println!("{line}");
        }
        let n = results.len().max(1);
        println!(
            "*** Results: {}% dropped ({got}/{} received)",
            100 * (results.len() - got) / n,
            results.len()
        );
        Ok(())
    }

    fn iperf(&self, pair: Option<(String, String)>, seconds: u32, udp: Option<String>) -> Result<(), ConsoleError> {
        let st = self.state();
        let (client, server) = match pair {
            Some(p) => p,
            None => {
                if st.hosts.len() < 2 {
                    return Err(ConsoleError::refused("iperf needs two hosts"));
                }
                (st.hosts[0].name.clone(), st.hosts[st.hosts.len() - 1].name.clone())
            }
        };
        let what = match &udp {
            Some(r) => format!("UDP at {r}bit/s"),
            None => "TCP".into(),
        };
        println!("*** Iperf: testing {what} bandwidth between {client} and {server} ({seconds} s)");
        let watch = lab::host::HostWatch::start(Vec::new(), lab::host::Rule::default());
        let add = watch.adder();
        let r = self
            .rt
            .block_on(run::iperf(st, &client, &server, seconds, udp.as_deref(), &add));
        let host = watch.finish();
        let r = r?;
        match r.lost {
            Some(lost) => println!(
                "*** Results: sent {}, received {}, {:.2}% lost",
                bits(r.sent_bps),
                bits(r.received_bps),
                lost * 100.0
            ),
            None => println!(
                "*** Results: {} received, {} sent ({} retransmits)",
                bits(r.received_bps),
                bits(r.sent_bps),
                r.retransmits
            ),
        }
        println!("*** Host: {}", host.line());
        Ok(())
    }

    /// Where `ovs-ofctl` reaches a switch.
    fn ofctl_target(&self, switch: &str) -> Option<String> {
        let st = self.state();
        if let Some(p) = st.sdnlab.iter().find(|p| p.name == switch) {
            return (p.pid != 0).then(|| p.ofp.clone());
        }
        let br = &st.switches.iter().find(|(n, _)| n == switch)?.1;
        st.ovs
            .as_ref()
            .map(|o| format!("unix:{}", o.dir.join(format!("{br}.mgmt")).display()))
    }

    fn dpctl(&self, args: &[String]) -> Result<(), ConsoleError> {
        let st = self.state();
        if st.options.kind == SwitchKind::Bridge {
            return Err(ConsoleError::refused(
                "dpctl needs OpenFlow switches (this run's are Linux bridges: --switch ovs or sdnlab)",
            ));
        }
        let chooses_version = args.iter().any(|a| a == "-O" || a.starts_with("--protocols"));
        netlab::install::need(&[netlab::install::OVS_OFCTL]).map_err(netlab::NetError::from)?;
        for (name, _) in &st.switches {
            println!("*** {name} {}", "-".repeat(60));
            let Some(target) = self.ofctl_target(name) else {
                println!("*** {name} is stopped");
                continue;
            };
            let mut c = std::process::Command::new("ovs-ofctl");
            if !chooses_version {
                let protocols = st
                    .topology
                    .as_ref()
                    .and_then(|t| t.switches.iter().find(|s| &s.name == name))
                    .map(|s| s.protocols.join(","))
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "OpenFlow10,OpenFlow13".into());
                c.args(["-O", &protocols]);
            }
            // ovs-ofctl [OPTIONS] COMMAND SWITCH [ARGS]: the switch goes after the command.
            let mut k = 0;
            while k < args.len() && args[k].starts_with('-') {
                k += if args[k] == "-O" { 2 } else { 1 };
            }
            let Some((cmd, cmd_args)) = args.get(k..).and_then(|r| r.split_first()) else {
                return Err(crate::command::BadLine::Usage("dpctl [OPTIONS] CMD [ARGS]".into()).into());
            };
            let options = &args[..k];
            c.args(options).arg(cmd).arg(&target).args(cmd_args);
            self.foreground(c).map_err(|e| match e {
                ConsoleError::Io { source, .. } => ConsoleError::Io {
                    what: "ovs-ofctl".into(),
                    source,
                },
                e => e,
            })?;
        }
        Ok(())
    }

    fn flows(&self, switch: &str) -> Result<(), ConsoleError> {
        let st = self.state();
        if st.options.kind == SwitchKind::Bridge {
            return Err(ConsoleError::refused(format!(
                "{switch} is a Linux bridge, which has no flow table (bring the network up with --switch ovs or sdnlab for OpenFlow switches)"
            )));
        }
        if !st.switches.iter().any(|(n, _)| n == switch) {
            let names: Vec<&str> = st.switches.iter().map(|(n, _)| n.as_str()).collect();
            return Err(ConsoleError::refused(format!(
                "no switch '{switch}' in this run (switches: {})",
                names.join(" ")
            )));
        }
        let target = self
            .ofctl_target(switch)
            .ok_or_else(|| ConsoleError::refused(format!("{switch} is stopped or has no OpenFlow listener")))?;
        let patience = Duration::from_secs(5);
        let mut client = if let Some(path) = target.strip_prefix("unix:") {
            ofconn::blocking::Client::connect_unix(Path::new(path), patience)
        } else {
            let addr: SocketAddr = target
                .trim_start_matches("tcp:")
                .parse()
                .map_err(|_| ConsoleError::refused(format!("{switch}: cannot read its address '{target}'")))?;
            let cfg = ofconn::Config {
                versions: vec![ofwire::OFP13_VERSION],
                miss_send_len: 128,
                ..Default::default()
            };
            ofconn::blocking::Client::connect_with(addr, cfg, patience)
        }
        .map_err(|e| ConsoleError::Peer {
            what: switch.to_string(),
            detail: format!("{e} (flows speaks OpenFlow 1.3)"),
        })?;
        client.patience = patience;
        let flows = client.flows().map_err(|e| ConsoleError::Peer {
            what: switch.to_string(),
            detail: e.to_string(),
        })?;
        println!(
            "{switch} (datapath {:016x}): {} flow entries",
            client.info().datapath_id,
            flows.len()
        );
        for f in &flows {
            println!(" {}", crate::flows::line(f));
        }
        Ok(())
    }

    fn rest_get(&self, rest: &Rest, path: &str) -> Result<serde_json::Value, ConsoleError> {
        let peer = |detail: String| ConsoleError::Peer {
            what: format!("the controller's REST API ({path})"),
            detail,
        };
        let req = httpc::Request {
            token: rest.token.as_deref(),
            ..httpc::Request::get(path)
        };
        let r = httpc::request_blocking(rest.addr, req, std::time::Duration::from_secs(5))
            .map_err(|e| peer(e.to_string()))?;
        if r.status != 200 {
            return Err(peer(format!("GET {path} answered {}: {}", r.status, r.body.trim())));
        }
        serde_json::from_str(&r.body).map_err(|e| peer(format!("GET {path}: {e}")))
    }

    fn controller(&self) -> Result<(), ConsoleError> {
        let rest = self.rest.as_ref().ok_or_else(|| ConsoleError::refused(
            "no controller REST API is known for this run: bring it up with --app, or attach with `sdnlab net cli --rest HOST:PORT`",
        ))?;
        println!("controller REST API at http://{}", rest.addr);
        let switches = self.rest_get(rest, "/switches")?;
        let list = switches.as_array().cloned().unwrap_or_default();
        println!("switches: {}", list.len());
        for s in &list {
            let ports: Vec<String> = s["ports"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            let down = if p["up"].as_bool() == Some(false) { " down" } else { "" };
                            format!("{}:{}{down}", p["port_no"], p["name"].as_str().unwrap_or("?"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            println!(
                "  {}  OpenFlow {}  ports {}",
                s["dpid_hex"].as_str().unwrap_or("?"),
                s["openflow"].as_str().unwrap_or("?"),
                ports.join(" ")
            );
        }
        // Links, hosts and paths exist only with the apps that learn them;
        // the controller says which, and that is shown as it says it.
        let section =
            |name: &str, path: &str, show: &dyn Fn(&serde_json::Value) -> String| match self.rest_get(rest, path) {
                Ok(v) => {
                    let items = match path {
                        "/topology" => v["links"].as_array().cloned().unwrap_or_default(),
                        _ => v.as_array().cloned().unwrap_or_default(),
                    };
                    println!("{name}: {}", items.len());
                    for i in &items {
                        println!("  {}", show(i));
                    }
                }
                Err(e) => {
                    let e = match e {
                        ConsoleError::Peer { detail, .. } => detail,
                        e => e.to_string(),
                    };
                    let why = e
                        .split_once(": ")
                        .map(|(_, body)| body)
                        .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
                        .and_then(|v| v["error"].as_str().map(String::from))
                        .unwrap_or(e);
                    println!("{name}: not known ({why})");
                }
            };
        section("links", "/topology", &|l| {
            let end = |e: &serde_json::Value| match (e["dpid"].as_u64(), e["port"].as_u64()) {
                (Some(d), Some(p)) => format!("{d:016x}:{p}"),
                _ => e.to_string(),
            };
            format!("{} -> {}", end(&l["src"]), end(&l["dst"]))
        });
        section("hosts", "/hosts", &|h| h.to_string());
        section("paths", "/paths", &|p| p.to_string());
        // A cluster's members and who masters which switch; a lone
        // controller answers 404 and shows nothing here.
        if let Ok(c) = self.rest_get(rest, "/cluster") {
            let members: Vec<&str> = c["members"]
                .as_array()
                .map(|m| m.iter().filter_map(|x| x.as_str()).collect())
                .unwrap_or_default();
            println!(
                "cluster: {} members ({}), this API is {}'s; etcd {}",
                members.len(),
                members.join(" "),
                c["member"].as_str().unwrap_or("?"),
                if c["etcd_reachable"] == true {
                    "reachable"
                } else {
                    "NOT reachable: roles kept as they are"
                }
            );
            if let Some(m) = c["masters"].as_object() {
                for (dpid, x) in m {
                    println!(
                        "  {dpid}  master {}  generation {}  connected to {}",
                        x["master"].as_str().unwrap_or("?"),
                        x["generation_id"],
                        x["connected"]
                            .as_array()
                            .map(|c| c.iter().filter_map(|n| n.as_str()).collect::<Vec<_>>().join(","))
                            .unwrap_or_default()
                    );
                }
            }
        }
        Ok(())
    }

    fn watch(&self, switch: &str, seconds: Option<u32>) -> Result<(), ConsoleError> {
        let ports = self
            .state()
            .ports()
            .into_iter()
            .find(|(n, _)| n == switch)
            .map(|(_, p)| p)
            .unwrap_or_default();
        if ports.is_empty() {
            return Err(ConsoleError::refused(format!("{switch} has no ports")));
        }
        crate::watch::run(&self.rt, switch, &ports, seconds, &self.interrupted)
    }

    fn graph(&self, file: Option<&str>) -> Result<(), ConsoleError> {
        let dot = crate::graph::dot(self.state());
        match file {
            None => print!("{dot}"),
            Some(f) if f.ends_with(".svg") => {
                netlab::install::need(&[netlab::install::DOT]).map_err(netlab::NetError::from)?;
                let mut child = std::process::Command::new("dot")
                    .args(["-Tsvg", "-o", f])
                    .stdin(std::process::Stdio::piped())
                    .spawn()
                    .map_err(ConsoleError::io("dot"))?;
                child
                    .stdin
                    .take()
                    .expect("piped")
                    .write_all(dot.as_bytes())
                    .map_err(ConsoleError::io("dot"))?;
                let status = child.wait().map_err(ConsoleError::io("dot"))?;
                if !status.success() {
                    return Err(ConsoleError::refused(format!("dot could not draw {f}")));
                }
                println!("topology drawn into {f}");
            }
            Some(f) => {
                std::fs::write(f, dot).map_err(ConsoleError::io(f))?;
                println!("topology written into {f} (DOT)");
            }
        }
        Ok(())
    }

    /// The run's directory.
    pub fn dir(&self) -> PathBuf {
        self.state().dir()
    }
}
