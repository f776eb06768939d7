//! A private Open vSwitch for one run: its own ovsdb-server and ovs-vswitchd
//! with database, sockets, pid and log files in the run directory (never the
//! system paths), userspace datapath (`datapath_type=netdev`; there is no OVS
//! kernel module here) and userspace TSO on, which TCP over veth needs.

pub use crate::state::OvsState;
use crate::state::{SslFiles, State};
use crate::topo::Topology;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Ovs {
    pub state: OvsState,
    children: Vec<Child>,
}

fn io_err(what: impl std::fmt::Display) -> io::Error {
    io::Error::other(what.to_string())
}

fn wait_for(path: &Path, what: &str) -> io::Result<()> {
    let t = Instant::now();
    while !path.exists() {
        if t.elapsed() > Duration::from_secs(20) {
            return Err(io_err(format!(
                "{what} did not start: {} never appeared",
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Starts `cmd` with Open vSwitch's directories set to `dir`.
fn spawn_in(dir: &Path, cmd: &str, args: Vec<String>) -> io::Result<Child> {
    Command::new(cmd)
        .args(args)
        .env("OVS_RUNDIR", dir)
        .env("OVS_LOGDIR", dir)
        .env("OVS_DBDIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| io_err(format!("{cmd}: {e} (run scripts/install-deps.sh)")))
}

/// A private ovsdb-server holding Open vSwitch's schema, its files in
/// `dir` (database `conf.db`, socket `db.sock`, control socket, log, pid
/// file), initialised (`ovs-vsctl --no-wait init`) and ready. The caller
/// owns the process (it is killed here if it cannot be made ready).
pub fn start_ovsdb(dir: &Path) -> io::Result<Child> {
    crate::install::need(&[crate::install::OVS]).map_err(io_err)?;
    let d = |f: &str| dir.join(f).display().to_string();
    let out = Command::new("ovsdb-tool")
        .args(["create", &d("conf.db"), "/usr/share/openvswitch/vswitch.ovsschema"])
        .output()
        .map_err(|e| io_err(format!("ovsdb-tool: {e} (run scripts/install-deps.sh)")))?;
    if !out.status.success() {
        return Err(io_err(format!(
            "ovsdb-tool create: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let mut child = spawn_in(
        dir,
        "ovsdb-server",
        vec![
            d("conf.db"),
            format!("--remote=punix:{}", d("db.sock")),
            format!("--unixctl={}", d("ovsdb.ctl")),
            format!("--log-file={}", d("ovsdb.log")),
            format!("--pidfile={}", d("ovsdb.pid")),
        ],
    )?;
    let ready = wait_for(&dir.join("db.sock"), "ovsdb-server").and_then(|_| vsctl_at(dir, &["--no-wait", "init"]));
    if let Err(e) = ready {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok(child)
}

/// What runs the switches the database describes.
pub enum Daemon {
    /// Open vSwitch's ovs-vswitchd (userspace datapath).
    Vswitchd,
    /// sdnlab's switch, managed through OVSDB (`sdnlab switch --ovsdb`),
    /// from this executable; `through_qdisc` when links are shaped.
    Sdnlab { bin: PathBuf, through_qdisc: bool },
}

impl Ovs {
    pub fn start(run_dir: &Path, id: &str) -> io::Result<Ovs> {
        Ovs::start_with(run_dir, id, Daemon::Vswitchd)
    }

    /// ovsdb-server and the switch daemon.
    pub fn start_with(run_dir: &Path, _id: &str, daemon: Daemon) -> io::Result<Ovs> {
        let dir = run_dir.join("ovs");
        std::fs::create_dir_all(&dir)?;
        let d = |f: &str| dir.join(f).display().to_string();
        let ovsdb = start_ovsdb(&dir)?;
        let mut ovs = Ovs {
            state: OvsState {
                dir: dir.clone(),
                ovsdb_pid: ovsdb.id(),
                vswitchd_pid: 0,
            },
            children: vec![ovsdb],
        };
        if let Daemon::Sdnlab { bin, through_qdisc } = &daemon {
            let mut args: Vec<String> = ["switch", "--ovsdb"].map(String::from).to_vec();
            args.push(format!("unix:{}", d("db.sock")));
            args.extend(["--threads", "1", "--ring", "1024", "--pidfile"].map(String::from));
            args.push(d("vswitchd.pid"));
            if *through_qdisc {
                args.push("--through-qdisc".into());
            }
            let log = std::fs::File::create(dir.join("vswitchd.log"))?;
            let child = Command::new(bin)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|e| io_err(format!("{}: {e}", bin.display())))?;
            ovs.state.vswitchd_pid = child.id();
            ovs.children.push(child);
            wait_for(&dir.join("vswitchd.pid"), "sdnlab switch --ovsdb")?;
            return Ok(ovs);
        }
        ovs.vsctl(&[
            "--no-wait",
            "set",
            "Open_vSwitch",
            ".",
            "other_config:userspace-tso-enable=true",
        ])?;
        let vswitchd = spawn_in(
            &dir,
            "ovs-vswitchd",
            vec![
                format!("unix:{}", d("db.sock")),
                format!("--unixctl={}", d("vswitchd.ctl")),
                format!("--log-file={}", d("vswitchd.log")),
                format!("--pidfile={}", d("vswitchd.pid")),
            ],
        )?;
        ovs.state.vswitchd_pid = vswitchd.id();
        ovs.children.push(vswitchd);
        wait_for(&dir.join("vswitchd.ctl"), "ovs-vswitchd")?;
        Ok(ovs)
    }

    pub fn vsctl(&self, args: &[&str]) -> io::Result<String> {
        vsctl_at(&self.state.dir, args)
    }

    /// The bridge's management socket, for `ovs-ofctl`.
    pub fn mgmt_socket(&self, bridge: &str) -> PathBuf {
        self.state.dir.join(format!("{bridge}.mgmt"))
    }

    /// Creates every switch with its ports and controller in one transaction.
    /// Controllers are `HOST:PORT` (TCP), or `tcp:...`, `ssl:...` as OVS writes them;
    /// `ssl` names the switch's key, certificate and CA certificate.
    pub fn add_switches(
        &self,
        topo: &Topology,
        st: &State,
        default_controller: Option<&str>,
        ssl: Option<&SslFiles>,
    ) -> io::Result<()> {
        add_switches_at(&self.state.dir, topo, st, default_controller, ssl, None)
    }
}

/// Creates the switches (every one, or `only` that one) with their ports
/// and controllers in one transaction, in the database whose files are in `dir`.
pub fn add_switches_at(
    dir: &Path,
    topo: &Topology,
    st: &State,
    default_controller: Option<&str>,
    ssl: Option<&SslFiles>,
    only: Option<&str>,
) -> io::Result<()> {
    let mut args: Vec<String> = Vec::new();
    if let Some(f) = ssl {
        args.extend([
            "--".to_string(),
            "set-ssl".to_string(),
            f.private_key.display().to_string(),
            f.certificate.display().to_string(),
            f.ca_certificate.display().to_string(),
        ]);
    }
    for (sw, (_, br)) in topo.switches.iter().zip(&st.switches) {
        if only.is_some_and(|o| o != sw.name) {
            continue;
        }
        let controller = sw.controller.as_deref().or(default_controller);
        let mut protocols = sw.protocols.join(",");
        if protocols.is_empty() {
            protocols = "OpenFlow10,OpenFlow13".into();
        }
        args.extend(
            [
                "--",
                "add-br",
                br,
                "--",
                "set",
                "bridge",
                br,
                "datapath_type=netdev",
                &format!("other-config:datapath-id={:016x}", sw.dpid),
                &format!("protocols={protocols}"),
                // With a controller, the switch forwards only what the controller
                // says; without one it is a learning switch.
                if controller.is_some() {
                    "fail-mode=secure"
                } else {
                    "fail-mode=standalone"
                },
            ]
            .map(String::from),
        );
        // Several controllers (comma-separated) each get a connection;
        // OpenFlow roles decide who acts.
        if let Some(c) = controller {
            args.extend(["--", "set-controller", br].map(String::from));
            for one in c.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                args.push(if one.starts_with("tcp:") || one.starts_with("ssl:") {
                    one.to_string()
                } else {
                    format!("tcp:{one}")
                });
            }
        }
    }
    let mut port_no: std::collections::HashMap<&str, u32> = Default::default();
    for l in &st.links {
        let ends: Vec<(&str, &str)> = if l.root_ends.len() == 1 {
            let sw = if topo.is_switch(&l.a) { &l.a } else { &l.b };
            vec![(sw.as_str(), l.root_ends[0].as_str())]
        } else {
            vec![
                (l.a.as_str(), l.root_ends[0].as_str()),
                (l.b.as_str(), l.root_ends[1].as_str()),
            ]
        };
        for (sw, port) in ends {
            let n = port_no.entry(sw).or_insert(0);
            *n += 1;
            if only.is_some_and(|o| o != sw) {
                continue;
            }
            let br = &st.switches.iter().find(|(n, _)| n == sw).expect("switch of link").1;
            args.extend(
                [
                    "--",
                    "add-port",
                    br,
                    port,
                    "--",
                    "set",
                    "interface",
                    port,
                    &format!("ofport_request={n}"),
                ]
                .map(String::from),
            );
        }
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    vsctl_at(dir, &refs).map(|_| ())
}

impl Drop for Ovs {
    fn drop(&mut self) {
        for c in self.children.iter_mut().rev() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let _ = c.wait();
        }
    }
}

/// Runs `ovs-vsctl` against the database of the run whose OVS files are in `dir`.
pub fn vsctl_at(dir: &Path, args: &[&str]) -> io::Result<String> {
    let db = format!("--db=unix:{}", dir.join("db.sock").display());
    let out = Command::new("ovs-vsctl")
        .arg(&db)
        .arg("--timeout=30")
        .args(args)
        .output()?;
    if !out.status.success() {
        return Err(io_err(format!(
            "ovs-vsctl: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Stops the processes a state file records, if they are still ours: the
/// command line must name this run's directory (a recycled pid is left alone).
pub fn stop(st: &OvsState) {
    for pid in [st.vswitchd_pid, st.ovsdb_pid] {
        if pid == 0 {
            continue;
        }
        let ours = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(&st.dir.display().to_string()))
            .unwrap_or(false);
        if ours {
            let p = nix::unistd::Pid::from_raw(pid as i32);
            let _ = nix::sys::signal::kill(p, nix::sys::signal::Signal::SIGTERM);
            let t = Instant::now();
            while Path::new(&format!("/proc/{pid}")).exists() && t.elapsed() < Duration::from_secs(5) {
                // Reap it if it is our child; otherwise just wait for it to go.
                let _ = nix::sys::wait::waitpid(p, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
