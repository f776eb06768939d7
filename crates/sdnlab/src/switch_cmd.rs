//! `sdnlab switch`: runs sdnlab's userspace OpenFlow 1.3 switch on Linux
//! interfaces until Ctrl-C or SIGTERM.

use clap::Args;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct SwitchArgs {
    /// An interface to switch between (repeatable, in port order: the first is port 1). Any
    /// Linux interface (veth, a real NIC); it must be up. `afxdp:IF` opens it with AF_XDP
    /// sockets (faster for small frames), `IF` or `afpacket:IF` with AF_PACKET rings.
    #[arg(long = "port", value_name = "[afxdp:]IF", required = true)]
    pub ports: Vec<String>,
    /// Where AF_XDP ports run their XDP program: native (in the driver), generic (every
    /// interface), or auto (native if the driver has it).
    #[arg(long, default_value = "auto", value_parser = ["auto", "native", "generic"])]
    pub xdp_mode: String,
    /// Create a tap interface of this name as the switch's OFPP_LOCAL port (the host's own
    /// way into the network it switches; give it an address with `ip`).
    #[arg(long, value_name = "NAME")]
    pub local: Option<String>,
    /// A controller to connect to, tcp:HOST:PORT or HOST:PORT (repeatable; with several, they
    /// share the switch by OpenFlow 1.3 roles).
    #[arg(long = "controller", value_name = "tcp:HOST:PORT")]
    pub controllers: Vec<String>,
    /// Listen for controllers and tools (ovs-ofctl) on ptcp:PORT[:ADDR] or ADDR:PORT
    /// (repeatable). Default: ptcp:6634 on 127.0.0.1 when no controller is given.
    #[arg(long = "listen", value_name = "ptcp:PORT")]
    pub listen: Vec<String>,
    /// Datapath id, in hex or decimal (default: from the first port's MAC address).
    #[arg(long)]
    pub dpid: Option<String>,
    /// Datapath threads (default: one per port, at most one per core but one left for control).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Pin datapath threads to these cores, in order (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub cores: Vec<usize>,
    /// Flow tables.
    #[arg(long, default_value_t = 64)]
    pub tables: usize,
    /// Most flow rules held, all tables together (FLOW_MOD beyond it: TABLE_FULL).
    #[arg(long, default_value_t = 4_000_000)]
    pub max_rules: usize,
    /// Receive ring slots per port (2 KiB each; larger frames are read whole from the socket).
    #[arg(long, default_value_t = 8192)]
    pub ring: usize,
    /// standalone: the table-miss rule floods (a hub) until a controller replaces it; secure:
    /// nothing is forwarded until a controller (or ovs-ofctl) installs rules.
    #[arg(long, default_value = "secure", value_parser = ["secure", "standalone"])]
    pub fail_mode: String,
    /// Once listening, write where (`tcp:ADDR:PORT`, one per line) to this file: for
    /// `--listen ptcp:0`, which takes a free port.
    #[arg(long, value_name = "FILE")]
    pub listen_file: Option<std::path::PathBuf>,
    /// Write the process id to this file (removed on exit).
    #[arg(long, value_name = "FILE")]
    pub pidfile: Option<std::path::PathBuf>,
    /// Log connections.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Parses tcp:HOST:PORT, HOST:PORT or ptcp:PORT[:ADDR].
pub fn parse_addr(s: &str, passive: bool) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let bad = || {
        if passive {
            format!("{s:?} is not a listen address; use ptcp:PORT, ptcp:PORT:ADDR or ADDR:PORT")
        } else {
            format!("{s:?} is not a controller address; use tcp:HOST:PORT or HOST:PORT")
        }
    };
    if let Some(rest) = s.strip_prefix("ptcp:") {
        let (port, addr) = rest.split_once(':').unwrap_or((rest, "127.0.0.1"));
        let port: u16 = port.parse().map_err(|_| bad())?;
        return format!("{addr}:{port}")
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(bad);
    }
    let hostport = s.strip_prefix("tcp:").unwrap_or(s);
    hostport
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(bad)
}

fn parse_dpid(s: &str) -> Result<u64, String> {
    let t = s.trim_start_matches("0x");
    u64::from_str_radix(t, 16)
        .or_else(|_| s.parse())
        .map_err(|_| format!("--dpid {s:?} is not a number; give 16 hex digits or a decimal"))
}

pub fn run(args: SwitchArgs) -> ExitCode {
    use crate::net_cmd::fail;
    let controllers: Vec<_> = match args.controllers.iter().map(|c| parse_addr(c, false)).collect() {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let mut listen: Vec<_> = match args.listen.iter().map(|c| parse_addr(c, true)).collect() {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    if listen.is_empty() && controllers.is_empty() {
        listen.push("127.0.0.1:6634".parse().expect("literal"));
    }
    let mut ports: Vec<Arc<dyn ofswitch::port::PortIo>> = Vec::new();
    let xdp_mode = match args.xdp_mode.as_str() {
        "native" => Some(afxdp::XdpMode::Native),
        "generic" => Some(afxdp::XdpMode::Generic),
        _ => None,
    };
    for spec in &args.ports {
        let (kind, name) = spec.split_once(':').unwrap_or(("afpacket", spec));
        let opened: std::io::Result<Arc<dyn ofswitch::port::PortIo>> = match kind {
            _ if name.is_empty() => return fail(format!("--port {spec}: the interface name is missing")),
            "afxdp" => ofswitch::port_xdp::XdpPort::open(name, xdp_mode, args.ring.max(64) as u32).map(|p| {
                eprintln!(
                    "sdnlab switch: {name}: AF_XDP, {} XDP, {} queue(s)",
                    p.mode(),
                    p.queues()
                );
                Arc::new(p) as Arc<dyn ofswitch::port::PortIo>
            }),
            "afpacket" => ofswitch::port::AfPacketPort::open(name, args.ring.max(8))
                .map(|p| Arc::new(p) as Arc<dyn ofswitch::port::PortIo>),
            _ => {
                return fail(format!(
                    "--port {spec}: unknown port type {kind:?}; give IF, afxdp:IF or afpacket:IF"
                ))
            }
        };
        match opened {
            Ok(p) => ports.push(p),
            Err(e) => return fail(e),
        }
    }
    let local: Option<Arc<dyn ofswitch::port::PortIo>> = match &args.local {
        Some(name) => match ofswitch::port::TapPort::create(name) {
            Ok(t) => Some(Arc::new(t)),
            Err(e) => return fail(e),
        },
        None => None,
    };
    let dpid = match &args.dpid {
        Some(d) => match parse_dpid(d) {
            Ok(v) => v,
            Err(e) => return fail(e),
        },
        None => ports[0].hw_addr().0.iter().fold(0u64, |a, b| a << 8 | *b as u64),
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = args
        .threads
        .unwrap_or_else(|| ports.len().min(cores.saturating_sub(1).max(1)));
    let cfg = ofswitch::switch::Config {
        datapath_id: dpid,
        ports,
        local,
        controllers: controllers.clone(),
        listen,
        n_tables: args.tables.clamp(1, 254),
        max_rules: args.max_rules,
        datapath_threads: threads,
        cores: args.cores.clone(),
        verbose: args.verbose,
        flood_on_miss: args.fail_mode == "standalone",
    };
    if let Some(p) = &args.pidfile {
        if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
            return fail(format!("--pidfile {}: {e}", p.display()));
        }
    }
    let handle = match ofswitch::switch::start(cfg) {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    let listening: Vec<String> = handle.listening.iter().map(|a| format!("ptcp:{a}")).collect();
    if let Some(f) = &args.listen_file {
        let text: String = handle.listening.iter().map(|a| format!("tcp:{a}\n")).collect();
        // Written whole under another name, then renamed: a reader never sees half.
        let tmp = f.with_extension("tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, f)) {
            return fail(format!("--listen-file {}: {e}", f.display()));
        }
    }
    let ctls: Vec<String> = controllers.iter().map(|a| format!("tcp:{a}")).collect();
    eprintln!(
        "sdnlab switch: dpid {dpid:016x}, ports {}; {threads} datapath thread(s); controllers [{}], listening [{}]; Ctrl-C stops",
        args.ports.join(","),
        ctls.join(" "),
        listening.join(" ")
    );
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    });
    let rules = handle.pipeline().read().map(|p| p.rule_count()).unwrap_or(0);
    handle.stop();
    if let Some(p) = &args.pidfile {
        let _ = std::fs::remove_file(p);
    }
    eprintln!("sdnlab switch: stopped ({rules} rules)");
    ExitCode::SUCCESS
}
