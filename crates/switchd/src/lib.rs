//! `sdnlab switch` (and the switch-only binary `sdnlab-switch`): runs
//! sdnlab's userspace OpenFlow 1.3 switch on Linux interfaces until Ctrl-C
//! or SIGTERM. The command line and the configuration file live here, apart
//! from the rest of sdnlab, so a router build carries the switch alone
//! (no controller, no TLS library, no benchmarks).
//!
//! The switch running lives here too, on top of the I/O-free model in
//! `ofswitch`: `switch` (controller sessions, listeners, the agent's
//! thread), `datapath` (the threads that move frames between ports
//! through the pipeline, with their flow cache) and `fast_egress` (which
//! ports the in-kernel fast path may redirect to).

pub mod datapath;
pub mod fast_egress;
pub mod ovsdb;
pub mod switch;

use clap::Args;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct SwitchArgs {
    /// An interface to switch between (repeatable, in port order: the first is port 1). Any
    /// Linux interface (veth, a real NIC); it must be up. `afxdp:IF` opens it with AF_XDP
    /// sockets (faster for small frames), `IF` or `afpacket:IF` with AF_PACKET rings.
    #[arg(long = "port", value_name = "[afxdp:]IF", required_unless_present_any = ["config", "ovsdb"])]
    pub ports: Vec<String>,
    /// Where AF_XDP ports run their XDP program: native (in the driver), generic (every
    /// interface), or auto (native if the driver has it).
    #[arg(long, default_value = "auto", value_parser = ["auto", "native", "generic"])]
    pub xdp_mode: String,
    /// Forward in the kernel, between AF_XDP ports, the flows whose rules only send them out
    /// of another AF_XDP port unchanged (IPv4 or IPv6, untagged or with one VLAN tag): the XDP program redirects them and
    /// they never reach user space; counters are folded in every 100 ms. Every other frame
    /// takes the usual path. A port that cannot take redirected frames (a veth whose peer has
    /// neither GRO nor an XDP program) is served from user space until it can.
    #[arg(long)]
    pub xdp_fast_path: bool,
    /// Create a tap interface of this name as the switch's OFPP_LOCAL port (the host's own
    /// way into the network it switches; give it an address with `ip`).
    #[arg(long, value_name = "NAME")]
    pub local: Option<String>,
    /// A controller to connect to, tcp:HOST:PORT or HOST:PORT (repeatable; with several, they
    /// share the switch by OpenFlow 1.3 roles).
    #[arg(long = "controller", value_name = "tcp:HOST:PORT")]
    pub controllers: Vec<String>,
    /// Listen for controllers and tools (ovs-ofctl) on ptcp:PORT[:ADDR] or ADDR:PORT
    /// (repeatable), or on a Unix socket, punix:PATH (mode 0600: this user's tools only,
    /// never refused for want of room). Default: ptcp:6634 on 127.0.0.1 when no controller
    /// is given.
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
    /// Send through the interfaces' queueing disciplines instead of
    /// bypassing them (AF_PACKET ports): slower, but rate limits and queues
    /// set with tc on the ports (e.g. tbf) then apply to what the switch sends.
    #[arg(long)]
    pub through_qdisc: bool,
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
    /// Seconds a control connection may take to send its HELLO, or to finish a message it
    /// has begun, before it is closed.
    #[arg(long, default_value_t = 20.0, value_name = "SECS")]
    pub session_deadline: f64,
    /// Connections the listeners hold at once, all bridges together (default: the
    /// open-file limit less an eighth of it, at most 128), a quarter of them from one address; a newcomer over the
    /// limit takes the place of the oldest connection still in its handshake, or is refused.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Seconds without hearing from a control connection (nor writing to it) before it is
    /// sent an ECHO_REQUEST, and closed if still silent as long again (Open vSwitch's
    /// inactivity probe; 0: never).
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub inactivity_probe: f64,
    /// Run the bridges a TOML file describes (`[[bridge]]` tables with name, ports,
    /// controllers, listen, dpid, threads, cores, tables, max_rules, ring, fail_mode,
    /// xdp_mode, xdp_fast_path, local) in one process, instead of one bridge from the options above.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["ports", "controllers", "listen", "dpid", "local"])]
    pub config: Option<std::path::PathBuf>,
    /// Take the bridges, ports and controllers from Open vSwitch's database, as ovs-vswitchd
    /// does (unix:PATH or tcp:HOST:PORT of an ovsdb-server holding vswitch.ovsschema): manage
    /// the switch with ovs-vsctl. Instead of --port, --controller, --listen, --dpid, --local,
    /// --config.
    #[arg(long, value_name = "unix:PATH", conflicts_with_all = ["ports", "controllers", "listen", "dpid", "local", "config"])]
    pub ovsdb: Option<String>,
    /// With --ovsdb: where each bridge's BRIDGE.mgmt socket goes, for `ovs-ofctl BRIDGE`
    /// (which looks in $OVS_RUNDIR). Default: the database socket's directory, or
    /// /var/run/openvswitch.
    #[arg(long, value_name = "DIR", requires = "ovsdb")]
    pub rundir: Option<std::path::PathBuf>,
}

/// Why a switch could not be configured or started: what the one line on
/// stderr says.
#[derive(Debug, thiserror::Error)]
pub enum SwitchdError {
    /// An argument or a configuration value, named as the user wrote it,
    /// with what it accepts.
    #[error("{0}")]
    Usage(String),
    /// A `--config` file that cannot be read or says something wrong.
    #[error("--config {}: {}{message}", path.display(), line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Config {
        path: std::path::PathBuf,
        line: Option<usize>,
        message: String,
    },
    /// A port, a tap or the fast path that could not be opened (the
    /// error names the interface).
    #[error(transparent)]
    Open(std::io::Error),
    /// A bridge that could not start (its name, and why).
    #[error("bridge {bridge}: {source}")]
    Bridge {
        bridge: String,
        #[source]
        source: std::io::Error,
    },
}

/// Parses tcp:HOST:PORT, HOST:PORT or ptcp:PORT[:ADDR].
pub fn parse_addr(s: &str, passive: bool) -> Result<std::net::SocketAddr, SwitchdError> {
    use std::net::ToSocketAddrs;
    let bad = || {
        SwitchdError::Usage(if passive {
            format!("{s:?} is not a listen address; use ptcp:PORT, ptcp:PORT:ADDR or ADDR:PORT")
        } else {
            format!("{s:?} is not a controller address; use tcp:HOST:PORT or HOST:PORT")
        })
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

fn parse_dpid(s: &str) -> Result<u64, SwitchdError> {
    let t = s.trim_start_matches("0x");
    u64::from_str_radix(t, 16)
        .or_else(|_| s.parse())
        .map_err(|_| SwitchdError::Usage(format!("--dpid {s:?} is not a number; give 16 hex digits or a decimal")))
}

/// One bridge: what `--port`, `--controller` and the rest say on the command
/// line, or one `[[bridge]]` table of a `--config` file.
#[derive(serde::Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct BridgeSpec {
    #[serde(default = "default_bridge_name")]
    pub name: String,
    pub ports: Vec<String>,
    #[serde(default)]
    pub controllers: Vec<String>,
    #[serde(default)]
    pub listen: Vec<String>,
    #[serde(default)]
    pub dpid: Option<String>,
    #[serde(default)]
    pub threads: Option<usize>,
    #[serde(default)]
    pub cores: Vec<usize>,
    #[serde(default = "default_tables")]
    pub tables: usize,
    #[serde(default = "default_max_rules")]
    pub max_rules: usize,
    #[serde(default = "default_ring")]
    pub ring: usize,
    #[serde(default)]
    pub through_qdisc: bool,
    #[serde(default = "default_fail_mode")]
    pub fail_mode: String,
    #[serde(default = "default_xdp_mode")]
    pub xdp_mode: String,
    #[serde(default)]
    pub xdp_fast_path: bool,
    #[serde(default)]
    pub local: Option<String>,
}

fn default_bridge_name() -> String {
    "br0".into()
}
fn default_tables() -> usize {
    64
}
fn default_max_rules() -> usize {
    4_000_000
}
fn default_ring() -> usize {
    8192
}
fn default_fail_mode() -> String {
    "secure".into()
}
fn default_xdp_mode() -> String {
    "auto".into()
}

/// A `--config` file: one or more `[[bridge]]` tables.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    bridge: Vec<BridgeSpec>,
}

impl BridgeSpec {
    fn from_args(a: &SwitchArgs) -> BridgeSpec {
        BridgeSpec {
            name: default_bridge_name(),
            ports: a.ports.clone(),
            controllers: a.controllers.clone(),
            listen: a.listen.clone(),
            dpid: a.dpid.clone(),
            threads: a.threads,
            cores: a.cores.clone(),
            tables: a.tables,
            max_rules: a.max_rules,
            ring: a.ring,
            through_qdisc: a.through_qdisc,
            fail_mode: a.fail_mode.clone(),
            xdp_mode: a.xdp_mode.clone(),
            xdp_fast_path: a.xdp_fast_path,
            local: a.local.clone(),
        }
    }
}

/// Reads a `--config` file; errors are one line naming the file.
pub fn load_config(path: &std::path::Path) -> Result<Vec<BridgeSpec>, SwitchdError> {
    let bad = |line: Option<usize>, message: String| SwitchdError::Config {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(None, e.to_string()))?;
    let cfg: ConfigFile = toml::from_str(&text).map_err(|e| {
        let msg = e.message().replace('\n', " ");
        bad(e.span().map(|sp| text[..sp.start].matches('\n').count() + 1), msg)
    })?;
    let mut names = std::collections::HashSet::new();
    for b in &cfg.bridge {
        if !names.insert(b.name.clone()) {
            return Err(bad(None, format!("two bridges named {:?}", b.name)));
        }
        if b.ports.is_empty() {
            return Err(bad(None, format!("bridge {:?} has no ports", b.name)));
        }
        if cfg.bridge.len() > 1 && b.listen.is_empty() && b.controllers.is_empty() {
            return Err(bad(
                None,
                format!(
                    "bridge {:?} needs `controllers` or `listen` (with several bridges there is no default listener)",
                    b.name
                ),
            ));
        }
        if !["secure", "standalone"].contains(&b.fail_mode.as_str()) {
            return Err(bad(
                None,
                format!("bridge {:?}: fail_mode is secure or standalone", b.name),
            ));
        }
        if !["auto", "native", "generic"].contains(&b.xdp_mode.as_str()) {
            return Err(bad(
                None,
                format!("bridge {:?}: xdp_mode is auto, native or generic", b.name),
            ));
        }
    }
    if cfg.bridge.is_empty() {
        return Err(bad(None, "no [[bridge]] tables".into()));
    }
    Ok(cfg.bridge)
}

/// Opens an AF_PACKET port with `ring` slots: through the interface's
/// queueing discipline when asked (the ring is needed then), else falling
/// back to a plain socket where the ring is refused, `warn` told why.
pub(crate) fn open_afpacket(
    name: &str,
    ring: usize,
    through_qdisc: bool,
    warn: impl FnOnce(String),
) -> std::io::Result<Arc<dyn packetio::port::PortIo>> {
    if through_qdisc {
        let p = packetio::port::AfPacketPort::open(name, ring.max(8))?;
        p.through_qdisc()?;
        return Ok(Arc::new(p));
    }
    let (p, fallback) = packetio::port::open_packet_port(name, ring.max(8))?;
    if let Some(why) = fallback {
        warn(why);
    }
    Ok(p)
}

/// Flows the fast path holds at most, per bridge (a flow beyond it stays
/// on the user-space path).
const FAST_PATH_FLOWS: u32 = 65_536;

/// A running bridge and what to say about it.
struct Running {
    handle: crate::switch::Handle,
    spec: BridgeSpec,
    dpid: u64,
    threads: usize,
}

/// Opens a bridge's ports and starts it; errors are one line.
/// What every bridge's control connections are held to.
struct Hygiene {
    deadline: std::time::Duration,
    probe: Option<std::time::Duration>,
    limits: ofconn::admission::Limits,
}

fn start_bridge(spec: &BridgeSpec, verbose: bool, hygiene: &Hygiene) -> Result<Running, SwitchdError> {
    let controllers: Vec<_> = spec
        .controllers
        .iter()
        .map(|c| parse_addr(c, false))
        .collect::<Result<_, _>>()?;
    // punix:PATH: a Unix socket, for tools on this machine only (its
    // permissions decide who; the connection limits do not apply to it).
    let unix: Vec<std::path::PathBuf> = spec
        .listen
        .iter()
        .filter_map(|l| l.strip_prefix("punix:"))
        .map(std::path::PathBuf::from)
        .collect();
    if unix.len() > 1 || unix.iter().any(|p| p.as_os_str().is_empty()) {
        return Err(SwitchdError::Usage("--listen punix:PATH: give one path, once".into()));
    }
    let mut listen: Vec<_> = spec
        .listen
        .iter()
        .filter(|l| !l.starts_with("punix:"))
        .map(|c| parse_addr(c, true))
        .collect::<Result<_, _>>()?;
    if listen.is_empty() && controllers.is_empty() && unix.is_empty() {
        listen.push("127.0.0.1:6634".parse().expect("literal"));
    }
    let xdp_mode = match spec.xdp_mode.as_str() {
        "native" => Some(packetio::XdpMode::Native),
        "generic" => Some(packetio::XdpMode::Generic),
        _ => None,
    };
    let fast_path = if spec.xdp_fast_path {
        if !spec.ports.iter().any(|p| p.starts_with("afxdp:")) {
            return Err(SwitchdError::Usage(
                "--xdp-fast-path works between AF_XDP ports; give them as --port afxdp:IF".into(),
            ));
        }
        Some(Arc::new(
            packetio::fastpath::FastPath::new(FAST_PATH_FLOWS, spec.ports.len() as u32 + 1)
                .map_err(SwitchdError::Open)?,
        ))
    } else {
        None
    };
    let mut fast_ports = Vec::new();
    let mut ports: Vec<Arc<dyn packetio::port::PortIo>> = Vec::new();
    for port in &spec.ports {
        let (kind, name) = port.split_once(':').unwrap_or(("afpacket", port));
        let port_no = ports.len() as u32 + 1;
        let opened: std::io::Result<Arc<dyn packetio::port::PortIo>> = match kind {
            _ if name.is_empty() => {
                return Err(SwitchdError::Usage(format!(
                    "--port {port}: the interface name is missing"
                )))
            }
            "afxdp" => {
                let fast = fast_path.as_deref().map(|fp| (fp, port_no));
                packetio::port_xdp::XdpPort::open(name, xdp_mode, spec.ring.max(64) as u32, fast).map(|p| {
                    if fast_path.is_some() {
                        fast_ports.push(port_no);
                    }
                    tracing::info!(
                        "sdnlab switch: {name}: AF_XDP, {} XDP, {} queue(s){}",
                        p.mode(),
                        p.queues(),
                        if fast_path.is_some() { ", fast path" } else { "" }
                    );
                    if let Err(why) = p.vlan_outside_frame() {
                        tracing::warn!(
                            "sdnlab switch: {name}: warning: frames whose VLAN tag the kernel holds outside them \
                             (a NIC's VLAN stripping, a VLAN device on a veth's far end) lose the tag here: {why}; \
                             use an AF_PACKET port for VLAN traffic"
                        );
                    }
                    Arc::new(p) as Arc<dyn packetio::port::PortIo>
                })
            }
            "afpacket" => open_afpacket(name, spec.ring, spec.through_qdisc, |why| {
                tracing::warn!("sdnlab switch: {name}: warning: {why}")
            }),
            _ => {
                return Err(SwitchdError::Usage(format!(
                    "--port {port}: unknown port type {kind:?}; give IF, afxdp:IF or afpacket:IF"
                )))
            }
        };
        ports.push(opened.map_err(SwitchdError::Open)?);
    }
    let local: Option<Arc<dyn packetio::port::PortIo>> = match &spec.local {
        Some(name) => Some(Arc::new(
            packetio::port::TapPort::create(name).map_err(SwitchdError::Open)?,
        )),
        None => None,
    };
    let dpid = match &spec.dpid {
        Some(d) => parse_dpid(d)?,
        None => ports[0].hw_addr().0.iter().fold(0u64, |a, b| a << 8 | *b as u64),
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = spec
        .threads
        .unwrap_or_else(|| ports.len().min(cores.saturating_sub(1).max(1)));
    let cfg = crate::switch::Config {
        datapath_id: dpid,
        ports,
        local,
        controllers,
        listen,
        n_tables: spec.tables.clamp(1, 254),
        max_rules: spec.max_rules,
        datapath_threads: threads,
        cores: spec.cores.clone(),
        verbose,
        flood_on_miss: spec.fail_mode == "standalone",
        fast_path,
        fast_ports,
        session_deadline: hygiene.deadline,
        inactivity_probe: hygiene.probe,
        limits: Some(hygiene.limits),
        listen_unix: unix.into_iter().next(),
        ..Default::default()
    };
    let handle = crate::switch::start(cfg).map_err(|source| SwitchdError::Bridge {
        bridge: spec.name.clone(),
        source,
    })?;
    Ok(Running {
        handle,
        spec: spec.clone(),
        dpid,
        threads,
    })
}

/// One line on stderr, exit code 2.
fn fail(msg: impl std::fmt::Display) -> ExitCode {
    tracing::error!("sdnlab: {msg}");
    ExitCode::from(2)
}

pub fn run(args: SwitchArgs) -> ExitCode {
    let remote = match args.ovsdb.as_deref().map(ovsdb::client::Remote::parse).transpose() {
        Ok(r) => r,
        Err(e) => return fail(format!("--ovsdb: {e}")),
    };
    let specs = match (&args.config, &remote) {
        (_, Some(_)) => Vec::new(),
        (Some(path), None) => match load_config(path) {
            Ok(v) => v,
            Err(e) => return fail(e),
        },
        (None, None) => vec![BridgeSpec::from_args(&args)],
    };
    if !(args.session_deadline.is_finite() && (0.1..=3600.0).contains(&args.session_deadline)) {
        return fail(format!(
            "--session-deadline {} is outside 0.1..=3600 seconds",
            args.session_deadline
        ));
    }
    if !(args.inactivity_probe.is_finite()
        && (args.inactivity_probe == 0.0 || (0.1..=3600.0).contains(&args.inactivity_probe)))
    {
        return fail(format!(
            "--inactivity-probe {} is outside 0.1..=3600 seconds (0: never)",
            args.inactivity_probe
        ));
    }
    if args.max_connections == Some(0) {
        return fail("--max-connections 0: give at least 1 (the default follows the open-file limit)");
    }
    // The listeners' share of descriptors, split between the bridges.
    let total = args
        .max_connections
        .unwrap_or_else(|| ofconn::admission::Limits::for_open_files(ofconn::admission::open_file_limit()).total)
        / specs.len().max(1);
    let hygiene = Hygiene {
        deadline: std::time::Duration::from_secs_f64(args.session_deadline),
        probe: (args.inactivity_probe > 0.0).then(|| std::time::Duration::from_secs_f64(args.inactivity_probe)),
        limits: ofconn::admission::Limits {
            total: total.max(1),
            per_source: (total / 4).max(1),
        },
    };
    if let Some(p) = &args.pidfile {
        if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
            return fail(format!("--pidfile {}: {e}", p.display()));
        }
    }
    if let Some(remote) = remote {
        let code = run_managed(&args, remote, hygiene);
        if let Some(p) = &args.pidfile {
            let _ = std::fs::remove_file(p);
        }
        return code;
    }
    let mut running = Vec::new();
    for spec in &specs {
        match start_bridge(spec, args.verbose, &hygiene) {
            Ok(r) => running.push(r),
            Err(e) => {
                for r in running {
                    r.handle.stop();
                }
                if let Some(p) = &args.pidfile {
                    let _ = std::fs::remove_file(p);
                }
                return fail(e);
            }
        }
    }
    let listening: Vec<(&str, std::net::SocketAddr)> = running
        .iter()
        .flat_map(|r| r.handle.listening.iter().map(|a| ("OpenFlow", *a)))
        .collect();
    ofconn::admission::warn_plain_listeners("sdnlab switch", &listening, "--listen ptcp:PORT keeps it on 127.0.0.1");
    if let Some(f) = &args.listen_file {
        // One bridge: `tcp:ADDR:PORT` per line; several: `NAME tcp:ADDR:PORT`.
        let several = running.len() > 1;
        let text: String = running
            .iter()
            .flat_map(|r| {
                r.handle.listening.iter().map(move |a| match several {
                    true => format!("{} tcp:{a}\n", r.spec.name),
                    false => format!("tcp:{a}\n"),
                })
            })
            .collect();
        // Written whole under another name, then renamed: a reader never sees half.
        let tmp = f.with_extension("tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, f)) {
            return fail(format!("--listen-file {}: {e}", f.display()));
        }
    }
    for r in &running {
        let listening: Vec<String> = r.handle.listening.iter().map(|a| format!("ptcp:{a}")).collect();
        tracing::info!(
            "sdnlab switch: bridge {}, dpid {:016x}, ports {}; {} datapath thread(s); controllers [{}], listening [{}]",
            r.spec.name,
            r.dpid,
            r.spec.ports.join(","),
            r.threads,
            r.spec.controllers.join(" "),
            listening.join(" ")
        );
    }
    tracing::info!("sdnlab switch: running; Ctrl-C stops");
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    rt.block_on(stopped());
    let mut rules = 0;
    for r in running {
        rules += r.handle.pipeline().read().map(|p| p.rule_count()).unwrap_or(0);
        r.handle.stop();
    }
    if let Some(p) = &args.pidfile {
        let _ = std::fs::remove_file(p);
    }
    tracing::info!("sdnlab switch: stopped ({rules} rules)");
    ExitCode::SUCCESS
}

/// Until Ctrl-C or SIGTERM.
async fn stopped() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
}

/// `--ovsdb`: the bridges the database asks for, until stopped.
fn run_managed(args: &SwitchArgs, remote: ovsdb::client::Remote, hygiene: Hygiene) -> ExitCode {
    let rundir = match (&args.rundir, &remote) {
        (Some(d), _) => d.clone(),
        (None, ovsdb::client::Remote::Unix(p)) => p.parent().map(|d| d.to_path_buf()).unwrap_or_else(|| ".".into()),
        (None, _) => "/var/run/openvswitch".into(),
    };
    if !rundir.is_dir() {
        return fail(format!(
            "--rundir {}: not a directory (each bridge's BRIDGE.mgmt socket goes there)",
            rundir.display()
        ));
    }
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let settings = ovsdb::manager::Settings {
        remote,
        rundir,
        verbose: args.verbose,
        tables: args.tables,
        max_rules: args.max_rules,
        ring: args.ring,
        through_qdisc: args.through_qdisc,
        threads: args.threads.unwrap_or_else(|| cores.saturating_sub(1).max(1)),
        session_deadline: hygiene.deadline,
        inactivity_probe: hygiene.probe,
        limits: hygiene.limits,
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    let mut manager = ovsdb::manager::Manager::new(settings);
    tracing::info!("sdnlab switch: managed through OVSDB; Ctrl-C stops");
    let failed = rt.block_on(async {
        tokio::select! {
            r = manager.run() => r.err(),
            _ = stopped() => None,
        }
    });
    manager.shutdown();
    match failed {
        Some(e) => fail(e),
        None => {
            tracing::info!("sdnlab switch: stopped");
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OpenWrt package's configuration is one this switch takes, and
    /// its procd init script is valid shell.
    #[test]
    fn the_openwrt_files_are_valid() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/openwrt");
        let bridges = load_config(&dir.join("sdnlab-switch.toml")).unwrap();
        assert_eq!(bridges.len(), 1);
        assert_eq!(bridges[0].ports, ["lan1", "lan2", "lan3", "lan4"]);
        assert!(parse_addr(&bridges[0].controllers[0], false).is_ok());
        let sh = std::process::Command::new("sh")
            .arg("-n")
            .arg(dir.join("sdnlab-switch.init"))
            .output()
            .unwrap();
        assert!(sh.status.success(), "{}", String::from_utf8_lossy(&sh.stderr));
        let init = std::fs::read_to_string(dir.join("sdnlab-switch.init")).unwrap();
        assert!(init.contains("USE_PROCD=1") && init.contains("--config \"$CONF\""));
    }

    #[test]
    fn a_bad_config_is_one_line_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("switchd-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.toml");
        std::fs::write(&f, "[[bridge]]\nname = \"a\"\nports = [\"x\"]\nfail_mode = \"open\"\n").unwrap();
        let e = load_config(&f).unwrap_err();
        assert!(matches!(e, SwitchdError::Config { .. }), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains("bad.toml") && e.contains("fail_mode is secure or standalone") && !e.contains('\n'),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
