//! The real peer controllers `sdnlab bench ctl --peer` installs (when
//! missing), starts on a loopback port of their own, identifies and stops:
//! sdnlab's own controller as a separate process, Debian's
//! ovs-testcontroller, os-ken (a venv from PyPI, with the project's
//! learning-switch app embedded here), Ryu (which needs Python 3.9) and
//! Faucet (a venv from PyPI; OpenFlow 1.3 only, with a `faucet.yaml`
//! written for the emulated datapaths it will meet).
//! Each peer is stopped by the pid we started, never by name.
//!
//! For the RFC 8456 topology tests (`Role::Paths`) a peer runs its
//! topology discovery, a shortest-path app and a REST API instead:
//! sdnlab with `paths` (or `paths-proactive`) and its REST API; os-ken
//! 1.4.1, the last os-ken release shipping `rest_topology` and
//! `ofctl_rest`, with `--observe-links` and the project's shortest-path
//! app for os-ken (embedded here). The others have no topology service.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

crate::check::choice! {
    /// A peer controller sdnlab can install and start, by the name
    /// `--peer`, an experiment file and the reports give it.
    pub enum Name {
        /// sdnlab's own controller, as a process of its own.
        Sdnlab = "sdnlab",
        /// Debian's ovs-testcontroller.
        OvsTestcontroller = "ovs-testcontroller",
        /// os-ken, with the project's learning-switch app.
        OsKen = "os-ken",
        /// Ryu's simple_switch (Python 3.9).
        Ryu = "ryu",
        /// Faucet (OpenFlow 1.3 only).
        Faucet = "faucet",
    }
}

crate::check::choice! {
    /// Which PACKET_INs the slaves of sdnlab's cluster ask for.
    pub enum SlavePacketIns {
        /// Every one: they know the network at a takeover.
        All = "all",
        /// None: each PACKET_IN handled by its master alone.
        MastersOnly = "none",
    }
}

/// Why a peer could not be installed or started.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// A file, a directory, a port or a process of ours: what it was for.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A tool run to install or identify a peer (apt-get, pip, python)
    /// ended in failure; `detail` is the last line it wrote.
    #[error("{what} failed: {detail}")]
    Tool { what: String, detail: String },
    /// The peer ended before it was ready; `last_line` is its log's.
    #[error("{name} exited ({status}) {when}: {last_line}")]
    Exited {
        name: String,
        status: std::process::ExitStatus,
        when: &'static str,
        last_line: String,
    },
    /// The peer ran but was not ready in time.
    #[error("{name} {what} within {} s", within.as_secs())]
    NotReady {
        name: String,
        what: String,
        within: Duration,
    },
    /// A peer this machine cannot run, or one asked for what it does not do.
    #[error("{0}")]
    Unsupported(String),
    /// A package the peer needs, not installed and not installed now.
    #[error(transparent)]
    Install(#[from] netlab::install::InstallError),
}

impl PeerError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> PeerError {
        let what = what.into();
        move |source| PeerError::Io { what, source }
    }

    /// A port chosen free was taken before the peer bound it.
    fn port_taken(&self) -> bool {
        matches!(self, PeerError::Exited { last_line, .. } if last_line.contains("in use"))
    }
}

fn last_line(log: &Path) -> String {
    std::fs::read_to_string(log)
        .ok()
        .and_then(|t| t.lines().last().map(str::to_string))
        .unwrap_or_else(|| "no output".into())
}

/// The VLAN Faucet's configuration gives the emulated switches' ports
/// (`native_vlan`); the driver tags its frames with it, as they reach
/// Faucet from a real switch running Faucet's pipeline.
pub const FAUCET_VLAN: u16 = 100;

/// The emulated switches a peer will meet, for peers that must be told
/// (Faucet declares every datapath and port in its configuration).
#[derive(Clone, Debug)]
pub struct Datapaths {
    /// Ranges of datapath ids: the first and how many.
    pub ranges: Vec<(u64, usize)>,
    pub ports: u32,
}

impl Datapaths {
    fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.ranges
            .iter()
            .flat_map(|&(first, n)| (0..n as u64).map(move |i| first.wrapping_add(i)))
    }
}

/// Faucet's configuration for `dps`: one VLAN, every port of every
/// datapath in it untagged, no limit on hosts learnt (`max_hosts: 0`;
/// Faucet's defaults, 256 per VLAN and 255 per port, ban learning within
/// a second of this load); everything else Faucet's defaults.
pub fn faucet_yaml(dps: &Datapaths) -> String {
    let mut y = format!("vlans:\n  lab:\n    vid: {FAUCET_VLAN}\n    max_hosts: 0\ndps:\n");
    for dpid in dps.ids() {
        y += &format!("  sw{dpid:x}:\n    dp_id: {dpid}\n    hardware: \"Open vSwitch\"\n    interfaces:\n");
        for p in 1..=dps.ports {
            y += &format!("      {p}:\n        native_vlan: lab\n        max_hosts: 0\n");
        }
    }
    y
}

const OSKEN_RUN: &str = include_str!("../../../scripts/peers/osken_run.py");
const OSKEN_L2: &str = include_str!("../../../scripts/peers/osken_l2_learning.py");
const OSKEN_PATHS: &str = include_str!("../../../scripts/peers/osken_paths.py");
const OSKEN_REST_RUN: &str = include_str!("../../../scripts/peers/osken_rest_run.py");

/// What a peer is started to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Role {
    /// A learning switch (the throughput, latency and robustness tests).
    Learning,
    /// Topology discovery, shortest paths (reactive, or only where provisioned) and a REST API.
    Paths { proactive: bool },
}

/// A running peer; dropping it stops the process and removes its files.
pub struct Peer {
    pub name: String,
    pub version: String,
    pub command: String,
    pub addr: SocketAddr,
    pub rest: Option<ctlbench::northbound::Northbound>,
    child: Child,
    /// The peer's launchers, configuration and log: a private temporary
    /// directory (random name, 0700), removed when the peer is dropped.
    _dir: netlab::private::TempDir,
}

impl Peer {
    /// The peer's process id (for accounting its CPU time, never to signal it by).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the peer outright (SIGKILL, its process group with it), as
    /// a failure would, and reaps it; its files go when it is dropped.
    pub fn kill(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // The peer and every process it started (its group), while the
        // peer is not yet reaped: its pid, which names the group, cannot
        // have been given to another process.
        if matches!(self.child.try_wait(), Ok(None)) {
            let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // `dir` goes when the fields are dropped, after this.
    }
}

/// A loopback port for a peer to bind: netlab's, which no other process
/// takes in the meantime.
fn free_port() -> Result<u16, PeerError> {
    netlab::ports::free_loopback_port().map_err(PeerError::io("no free loopback port"))
}

/// Where the peers' environments are kept: this user's cache (never a
/// world-writable place: what is there is run).
fn cache_dir() -> Result<PathBuf, PeerError> {
    netlab::private::cache_dir("peers").map_err(PeerError::io("the peers' cache"))
}

/// A new private directory for one peer's files (random name, 0700:
/// another user cannot plant what the peer runs).
fn peer_dir(name: &str) -> Result<netlab::private::TempDir, PeerError> {
    netlab::private::temp_dir(&format!("sdnlab-peer-{name}-")).map_err(PeerError::io(format!("a directory for {name}")))
}

fn run(cmd: &mut Command, what: &str) -> Result<String, PeerError> {
    let out = cmd.output().map_err(PeerError::io(what))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(PeerError::Tool {
            what: what.to_string(),
            detail: err.lines().last().unwrap_or("").trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether `python -c code` succeeds.
fn python_says(python: impl AsRef<std::ffi::OsStr>, code: &str) -> bool {
    Command::new(python)
        .args(["-c", code])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A venv with `packages` installed (once), made with `python`.
fn venv(name: &str, python: &str, packages: &[&[&str]], check: &str) -> Result<PathBuf, PeerError> {
    let dir = cache_dir()?.join(name);
    let py = dir.join("bin/python");
    let ready = py.exists() && python_says(&py, check);
    if !ready {
        if python == "python3" {
            let mut missing = Vec::new();
            // Debian's python3 makes venvs only with python3-venv (not in
            // the main job's packages: installed here, the first time a
            // peer needs it).
            if !python_says("python3", "import ensurepip") {
                missing.push(netlab::install::PYTHON3_VENV);
            }
            // A package without a wheel for this Python is built from
            // source (Faucet's pytricia): Debian's python3 has its headers
            // only with python3-dev (a fresh machine's `pip install faucet`
            // failed on a missing Python.h, 2026-11-30).
            if !python_says(
                "python3",
                "import os, sysconfig; exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))",
            ) {
                missing.push(netlab::install::PYTHON3_DEV);
            }
            netlab::install::provide(missing)?;
        }
        tracing::info!("sdnlab: installing {name} into {} (PyPI)", dir.display());
        run(
            Command::new(python).args(["-m", "venv"]).arg(&dir),
            &format!("creating the {name} venv"),
        )?;
        for pkgs in packages {
            run(
                Command::new(dir.join("bin/pip")).args(["install", "-q"]).args(*pkgs),
                &format!("pip install {}", pkgs.join(" ")),
            )?;
        }
    }
    Ok(py)
}

/// What a peer is waited for, as its errors say it: before which moment
/// it exited, and what it did not do in time (on the address).
struct Awaited {
    when: &'static str,
    not_done: &'static str,
}

/// The peer's OpenFlow port.
const LISTENING: Awaited = Awaited {
    when: "before listening",
    not_done: "did not listen",
};

/// The peer's REST API, which may come up after its OpenFlow port.
const REST_LISTENING: Awaited = Awaited {
    when: "before its REST API listened",
    not_done: "did not open its REST API",
};

fn wait_listening(
    child: &mut Child,
    addr: SocketAddr,
    log: &Path,
    name: &str,
    within: Duration,
    awaited: Awaited,
) -> Result<(), PeerError> {
    let t = Instant::now();
    while t.elapsed() < within {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(PeerError::Exited {
                name: name.to_string(),
                status,
                when: awaited.when,
                last_line: last_line(log),
            });
        }
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(PeerError::NotReady {
        name: name.to_string(),
        what: format!("{} on {addr}", awaited.not_done),
        within,
    })
}

/// A Python 3.9 interpreter: pyenv's, then the system's (pyenv shims are
/// skipped: they fail when several versions are selected).
fn python39() -> Option<PathBuf> {
    let mut found = Vec::new();
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root/.pyenv"));
    if let Ok(entries) = std::fs::read_dir(root.join("versions")) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("3.9") {
                found.push(e.path().join("bin/python3.9"));
            }
        }
    }
    found.sort();
    found.push(PathBuf::from("/usr/bin/python3.9"));
    found.into_iter().find(|p| p.exists())
}

/// Installs (if needed) and starts peer `name` on a free loopback port.
pub fn start(name: Name) -> Result<Peer, PeerError> {
    start_as(name, Role::Learning)
}

/// `start`, telling the peer the emulated switches it will meet (Faucet
/// needs them; the others ignore them).
pub fn start_for(name: Name, dps: Datapaths) -> Result<Peer, PeerError> {
    match name {
        Name::Faucet => start_faucet(dps),
        _ => start(name),
    }
}

fn start_faucet(dps: Datapaths) -> Result<Peer, PeerError> {
    let port = free_port()?;
    let prometheus = free_port()?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let tmp = peer_dir("faucet")?;
    let dir = tmp.path().to_path_buf();
    let py = venv("faucet", "python3", &[&["faucet==1.10.12"]], "import faucet")?;
    let bin = py.parent().map(Path::to_path_buf).unwrap_or_default();
    let conf = dir.join("faucet.yaml");
    std::fs::write(&conf, faucet_yaml(&dps)).map_err(PeerError::io(conf.display().to_string()))?;
    let v = run(
        Command::new(&py).args([
            "-c",
            "import importlib.metadata as m; print(m.version('faucet'), m.version('os-ken'))",
        ]),
        "faucet version",
    )?;
    let (fv, ov) = v.split_once(' ').unwrap_or((&v, "?"));
    // `faucet` execs osken-manager, which it finds on PATH.
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut c = Command::new(bin.join("faucet"));
    c.arg(format!("--ryu-ofp-tcp-listen-port={port}"))
        .arg("--ryu-ofp-listen-host=127.0.0.1")
        .env("PATH", path)
        .env("FAUCET_CONFIG", &conf)
        .env("FAUCET_LOG", dir.join("faucet.log"))
        .env("FAUCET_EXCEPTION_LOG", dir.join("faucet-exception.log"))
        .env("FAUCET_PROMETHEUS_PORT", prometheus.to_string())
        .env("FAUCET_PROMETHEUS_ADDR", "127.0.0.1");
    let ranges: Vec<String> = dps.ranges.iter().map(|(f, n)| format!("{n} from {f:#x}")).collect();
    let version = format!(
        "faucet {fv} (os-ken {ov}; datapaths {}, {} ports each, native VLAN {FAUCET_VLAN}; answers matched by new source MAC)",
        ranges.join(" and "),
        dps.ports
    );
    // Faucet sets up every datapath it declares before it listens, and
    // again after (its event loop busy, no switch answered): seconds per
    // thousand datapaths. The peer is ready once a new switch is greeted.
    let within = Duration::from_secs(60) + Duration::from_millis(20) * dps.ids().count() as u32;
    let mut peer = launch_within("faucet", c, version, addr, None, tmp, within)?;
    wait_greeting(&mut peer, within)?;
    Ok(peer)
}

/// Waits until the controller at `peer.addr` greets a new switch: answers
/// its OpenFlow 1.3 HELLO with a FEATURES_REQUEST. The probe closes before
/// it says which datapath it is.
fn wait_greeting(peer: &mut Peer, within: Duration) -> Result<(), PeerError> {
    use std::io::{Read, Write};
    let t = Instant::now();
    let hello = ofwire::Message::new(
        ofwire::OFP13_VERSION,
        1,
        ofwire::Body::Hello(ofwire::Hello::with_versions(&[ofwire::OFP13_VERSION])),
    )
    .to_bytes()
    .expect("hello");
    while t.elapsed() < within {
        if let Ok(Some(status)) = peer.child.try_wait() {
            return Err(PeerError::Exited {
                name: peer.name.clone(),
                status,
                when: "while setting up",
                last_line: last_line(&peer._dir.path().join("log")),
            });
        }
        let Ok(mut s) = std::net::TcpStream::connect_timeout(&peer.addr, Duration::from_secs(1)) else {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        if s.write_all(&hello).is_err() {
            continue;
        }
        let mut framer = ofwire::Framer::default();
        let mut buf = [0u8; 4096];
        while t.elapsed() < within {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => framer.push(&buf[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
                Err(_) => break,
            }
            while let Ok(Some(m)) = framer.next_message() {
                // OFPT_FEATURES_REQUEST
                if m[1] == 5 {
                    return Ok(());
                }
            }
        }
    }
    Err(PeerError::NotReady {
        name: peer.name.clone(),
        what: format!("listened on {} but greeted no switch", peer.addr),
        within,
    })
}

/// `start`, for a role.
pub fn start_as(name: Name, role: Role) -> Result<Peer, PeerError> {
    if let Role::Paths { proactive } = role {
        return start_paths(name, paths_app(proactive), &[], None);
    }
    let port = free_port()?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let tmp = peer_dir(name.name())?;
    let dir = tmp.path().to_path_buf();
    let (cmd, version) = match name {
        Name::Sdnlab => {
            let exe = std::env::current_exe().map_err(PeerError::io("finding sdnlab itself"))?;
            let mut c = Command::new(exe);
            c.args([
                "controller",
                "--listen",
                &addr.to_string(),
                "--no-rest",
                "--app",
                "l2-learning",
            ]);
            (c, env!("CARGO_PKG_VERSION").to_string())
        }
        Name::OvsTestcontroller => {
            netlab::install::need(&[netlab::install::OVS_TESTCONTROLLER])?;
            let v = run(
                Command::new("ovs-testcontroller").arg("--version"),
                "ovs-testcontroller --version",
            )?;
            let mut c = Command::new("ovs-testcontroller");
            c.arg(format!("--unixctl={}", dir.join("tc.ctl").display()))
                .arg(format!("ptcp:{port}:127.0.0.1"));
            (c, v.lines().next().unwrap_or("").to_string())
        }
        Name::OsKen => {
            let py = venv("osken", "python3", &[&["os-ken==4.2.2"]], "import os_ken")?;
            for (file, text) in [("osken_run.py", OSKEN_RUN), ("osken_l2_learning.py", OSKEN_L2)] {
                std::fs::write(dir.join(file), text).map_err(PeerError::io(format!("writing {file}")))?;
            }
            let v = run(
                Command::new(&py).args(["-c", "import importlib.metadata as m; print(m.version('os-ken'))"]),
                "os-ken version",
            )?;
            let mut c = Command::new(&py);
            c.arg(dir.join("osken_run.py"))
                .arg(port.to_string())
                .arg(dir.join("osken_l2_learning.py"))
                .env("OSKEN_HUB_TYPE", "eventlet");
            (c, format!("os-ken {v} (eventlet hub, sdnlab's learning-switch app)"))
        }
        Name::Ryu => {
            let python = python39().ok_or_else(|| {
                PeerError::Unsupported(
                    "ryu needs Python 3.9 (it does not run on Debian 12's 3.11), and none was found".into(),
                )
            })?;
            let python = python.to_str().unwrap_or_default();
            let py = venv(
                "ryu",
                python,
                &[
                    &["setuptools==67.6.1", "pbr", "wheel"],
                    &["--no-build-isolation", "ryu", "eventlet==0.30.2"],
                ],
                "import ryu",
            )?;
            let v = run(
                Command::new(&py).args(["-c", "import importlib.metadata as m; print(m.version('ryu'))"]),
                "ryu version",
            )?;
            let mut c = Command::new(py.with_file_name("ryu-manager"));
            c.args([
                "--ofp-tcp-listen-port",
                &port.to_string(),
                "--ofp-listen-host",
                "127.0.0.1",
            ])
            .arg("ryu.app.simple_switch");
            (c, format!("ryu {v} (simple_switch)"))
        }
        Name::Faucet => {
            return Err(PeerError::Unsupported(
                "faucet is started with the datapaths it will meet (peers::start_for)".into(),
            ))
        }
    };
    launch(name.name(), cmd, version, addr, None, tmp)
}

/// A standby for the active peer whose REST API is at `active_rest`
/// (`Role::Paths`, reactive); only sdnlab has a standby mode.
pub fn start_standby(name: Name, active_rest: SocketAddr) -> Result<Peer, PeerError> {
    if name != Name::Sdnlab {
        return Err(PeerError::Unsupported(format!(
            "peer '{name}' has no standby mode: the failover test takes sdnlab (active/standby with OpenFlow 1.3 roles)"
        )));
    }
    start_paths(
        name,
        paths_app(false),
        &["--standby-for".into(), active_rest.to_string()],
        None,
    )
}

/// Starts sdnlab's controller (`app`, REST API) as member `member` of the
/// cluster `cluster` on the etcd at `endpoints`; its OpenFlow port is
/// `port` (a member started again where its switches reconnect) or a free
/// one.
pub fn start_member(
    endpoints: &str,
    cluster: &str,
    member: &str,
    app: &str,
    slave_packet_ins: SlavePacketIns,
    port: Option<u16>,
) -> Result<Peer, PeerError> {
    let args: Vec<String> = [
        "--cluster",
        endpoints,
        "--member",
        member,
        "--cluster-name",
        cluster,
        "--slave-packet-ins",
        slave_packet_ins.name(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    start_paths(Name::Sdnlab, app, &args, port)
}

/// sdnlab's app for `Role::Paths`.
fn paths_app(proactive: bool) -> &'static str {
    if proactive {
        "paths-proactive"
    } else {
        "paths"
    }
}

/// Peers with topology discovery, shortest paths and a REST API (sdnlab
/// with `app`: paths, paths-proactive, or topology for discovery alone).
fn start_paths(peer: Name, app: &str, sdnlab_args: &[String], port: Option<u16>) -> Result<Peer, PeerError> {
    let name = peer.name();
    let proactive = app == "paths-proactive";
    // The ports are chosen free, then bound by the peer: another program
    // may take one in between (seen in CI beside the suite). Such a start
    // is tried again on new ports, twice at most.
    let mut tries = 0;
    loop {
        let port = match port {
            Some(p) => p,
            None => free_port()?,
        };
        let rest_port = free_port()?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let rest_addr: SocketAddr = ([127, 0, 0, 1], rest_port).into();
        let tmp = peer_dir(name)?;
        let dir = tmp.path().to_path_buf();
        let (cmd, version, rest) = match peer {
            Name::Sdnlab => {
                let exe = std::env::current_exe().map_err(PeerError::io("finding sdnlab itself"))?;
                // The REST API's token, for the bench's path requests.
                let token = controller::rest::new_token().map_err(PeerError::io("a REST token"))?;
                let token_file = dir.join("rest-token");
                netlab::private::write_secret(&token_file, token.as_bytes())
                    .map_err(PeerError::io(token_file.display().to_string()))?;
                let mut c = Command::new(exe);
                c.args([
                    "controller",
                    "--listen",
                    &addr.to_string(),
                    "--rest",
                    &rest_addr.to_string(),
                ])
                .arg("--rest-token-file")
                .arg(&token_file)
                .args(["--app", app]);
                c.args(sdnlab_args);
                (
                    c,
                    env!("CARGO_PKG_VERSION").to_string(),
                    ctlbench::northbound::Northbound::Sdnlab(rest_addr, Some(token)),
                )
            }
            Name::OsKen => {
                let py = venv(
                    "osken-1.4.1",
                    "python3",
                    &[&["os-ken==1.4.1", "eventlet==0.41.3", "dnspython>=2.6"]],
                    "import importlib.metadata as m, webob, routes; assert m.version('os-ken') == '1.4.1'",
                )?;
                for (file, text) in [("osken_rest_run.py", OSKEN_REST_RUN), ("osken_paths.py", OSKEN_PATHS)] {
                    std::fs::write(dir.join(file), text).map_err(PeerError::io(format!("writing {file}")))?;
                }
                let mut c = Command::new(&py);
                c.arg(dir.join("osken_rest_run.py"))
                    .args([
                        "--ofp-tcp-listen-port",
                        &port.to_string(),
                        "--ofp-listen-host",
                        "127.0.0.1",
                    ])
                    .args(["--wsapi-host", "127.0.0.1", "--wsapi-port", &rest_port.to_string()])
                    .args(["--observe-links", "os_ken.app.rest_topology", "os_ken.app.ofctl_rest"])
                    .arg(dir.join("osken_paths.py"));
                if proactive {
                    c.env("SDNLAB_PATHS_PROACTIVE", "1");
                }
                let mode = if proactive { "proactive-only" } else { "reactive" };
                (
                    c,
                    format!(
                        "os-ken 1.4.1 (--observe-links, rest_topology, ofctl_rest, sdnlab's {mode} shortest-path app)"
                    ),
                    ctlbench::northbound::Northbound::OsKen(rest_addr),
                )
            }
            other => {
                return Err(PeerError::Unsupported(format!(
                    "peer '{other}' has no topology discovery or REST API: the topology tests take sdnlab or os-ken"
                )))
            }
        };
        let up = launch(name, cmd, version, addr, Some(rest), tmp).and_then(|mut peer| {
            let log = peer._dir.path().join("log");
            let within = Duration::from_secs(30);
            wait_listening(&mut peer.child, rest_addr, &log, name, within, REST_LISTENING).map(|()| peer)
        });
        match up {
            Err(e) if tries < 2 && e.port_taken() => {
                tracing::warn!("{name}: a port was taken before it could bind it ({e}); starting again on new ports");
            }
            r => return r,
        }
        tries += 1;
    }
}

/// Starts `cmd` with its output in `dir`/log and waits for it to listen on `addr`.
fn launch(
    name: &str,
    cmd: Command,
    version: String,
    addr: SocketAddr,
    rest: Option<ctlbench::northbound::Northbound>,
    dir: netlab::private::TempDir,
) -> Result<Peer, PeerError> {
    launch_within(name, cmd, version, addr, rest, dir, Duration::from_secs(60))
}

/// `launch`, waiting up to `within` for the peer to listen.
fn launch_within(
    name: &str,
    mut cmd: Command,
    version: String,
    addr: SocketAddr,
    rest: Option<ctlbench::northbound::Northbound>,
    dir: netlab::private::TempDir,
    within: Duration,
) -> Result<Peer, PeerError> {
    let log = dir.path().join("log");
    let logfile = || std::fs::File::create(&log).map_err(PeerError::io(log.display().to_string()));
    let command = format!("{cmd:?}").replace('"', "");
    let out = logfile()?;
    let err = out.try_clone().map_err(PeerError::io(log.display().to_string()))?;
    // A process group of its own: a Ctrl-C at the terminal reaches sdnlab,
    // which stops the peer (and whatever the peer started) when the run
    // ends, instead of the peer dying, or not, in the middle of a trial.
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    // Killed outright, the run takes its peers with it.
    cluster::etcd::die_with_parent(&mut cmd);
    let mut child = match cmd.stdin(Stdio::null()).stdout(out).stderr(err).spawn() {
        Ok(c) => c,
        Err(e) => {
            return Err(PeerError::Io {
                what: format!("starting {name} ({command})"),
                source: e,
            });
        }
    };
    if let Err(e) = wait_listening(&mut child, addr, &log, name, within, LISTENING) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok(Peer {
        name: name.to_string(),
        version,
        command,
        addr,
        rest,
        child,
        _dir: dir,
    })
}
