//! The `sdnlab` switch kind: one `sdnlab switch` process per switch, its
//! ports the root-namespace ends of the switch's links (numbered as for
//! Open vSwitch: in link order, from 1), listening for `ovs-ofctl` on a
//! Unix socket in the run directory (`NAME.mgmt`, mode 0600: as Open
//! vSwitch's management sockets, root's only; a loopback TCP port would
//! let any local user reprogram the switch) and connecting to the run's
//! controller(s). The process carries a pid file in the run directory on
//! its command line, so teardown finds it even if the `up` process died.

use crate::state::State;
pub use crate::state::SwitchProcess;
use crate::topo::Topology;
use crate::NetError;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `sdnlab` executable: `SDNLAB_BIN`, else this process if it is
/// sdnlab, else the workspace's newest build.
pub fn binary() -> Result<PathBuf, NetError> {
    if let Some(p) = std::env::var_os("SDNLAB_BIN") {
        return Ok(PathBuf::from(p));
    }
    if let Ok(me) = std::env::current_exe() {
        if me.file_name().is_some_and(|n| n == "sdnlab") {
            return Ok(me);
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    ["release", "debug"]
        .iter()
        .map(|p| root.join(p).join("sdnlab"))
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| {
            NetError::Refused("cannot find the sdnlab binary for --switch sdnlab: build it or set SDNLAB_BIN".into())
        })
}

/// The root-namespace interfaces of each switch, in port order.
fn ports_of(st: &State) -> std::collections::HashMap<String, Vec<String>> {
    st.ports()
        .into_iter()
        .map(|(sw, ports)| (sw, ports.into_iter().map(|p| p.interface).collect()))
        .collect()
}

/// Starts one switch process; it is ready once [`wait_listening`] says so.
fn spawn_one(
    bin: &Path,
    dir: &Path,
    sw: &crate::topo::Switch,
    ports: &[String],
    default_controller: Option<&str>,
    shaped: bool,
) -> Result<(SwitchProcess, Child), NetError> {
    let pidfile = dir.join(format!("{}.pid", sw.name));
    let mgmt = mgmt_socket(dir, &sw.name);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{}.log", sw.name)))
        .map_err(NetError::io(dir.display().to_string()))?;
    let mut c = Command::new(bin);
    c.arg("switch");
    for p in ports {
        c.args(["--port", p]);
    }
    c.args(["--dpid", &format!("{:016x}", sw.dpid)])
        .arg("--listen")
        .arg(format!("punix:{}", mgmt.display()))
        .args(["--threads", "1", "--ring", "1024"])
        .arg("--pidfile")
        .arg(&pidfile);
    if shaped {
        // The run's tc rate limits must apply to what the switch sends.
        c.arg("--through-qdisc");
    }
    let controller = sw.controller.as_deref().or(default_controller);
    match controller {
        Some(cs) => {
            for one in cs.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                if one.starts_with("ssl:") {
                    return Err(NetError::Refused(
                        "the sdnlab switch has no TLS yet: use a tcp: controller".into(),
                    ));
                }
                c.args(["--controller", one]);
            }
        }
        None => {
            c.args(["--fail-mode", "standalone"]);
        }
    }
    c.stdin(Stdio::null())
        .stdout(log.try_clone().map_err(NetError::io(format!("{}'s log", sw.name)))?)
        .stderr(log);
    let child = c.spawn().map_err(NetError::io(bin.display().to_string()))?;
    let p = SwitchProcess {
        name: sw.name.clone(),
        pid: child.id(),
        ofp: format!("unix:{}", mgmt.display()),
    };
    Ok((p, child))
}

/// Where switch `name` of the run in `dir` listens for `ovs-ofctl`.
pub fn mgmt_socket(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.mgmt"))
}

/// Waits (10 s at most) until a started switch listens on its socket.
fn wait_listening(dir: &Path, s: &SwitchProcess, child: &mut Child) -> Result<(), NetError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mgmt = mgmt_socket(dir, &s.name);
    loop {
        if std::os::unix::net::UnixStream::connect(&mgmt).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(dir.join(format!("{}.log", s.name))).unwrap_or_default();
            return Err(NetError::Tool {
                what: format!("sdnlab switch {} exited ({status})", s.name),
                detail: log.trim().to_string(),
            });
        }
        if Instant::now() > deadline {
            return Err(NetError::Tool {
                what: format!("sdnlab switch {}", s.name),
                detail: "did not start listening within 10 s".into(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether any link of the topology is rate-limited (tc tbf on its ends).
pub(crate) fn shaped(topo: &Topology) -> bool {
    topo.links.iter().any(|l| l.rate_mbit.is_some())
}

/// Starts every switch; on error the ones started are returned for
/// teardown through `children`.
pub fn start(
    dir: &Path,
    topo: &Topology,
    st: &State,
    default_controller: Option<&str>,
    children: &mut Vec<Child>,
) -> Result<Vec<SwitchProcess>, NetError> {
    let bin = binary()?;
    let ports = ports_of(st);
    let mut out = Vec::new();
    for sw in &topo.switches {
        let Some(my_ports) = ports.get(&sw.name).filter(|p| !p.is_empty()) else {
            continue;
        };
        let (p, child) = spawn_one(&bin, dir, sw, my_ports, default_controller, shaped(topo))?;
        out.push(p);
        children.push(child);
    }
    // Ready when each listens on its socket.
    for (s, child) in out.iter().zip(children.iter_mut()) {
        wait_listening(dir, s, child)?;
    }
    Ok(out)
}

/// Starts one switch of a run again (after `switch S stop`), as `start` did.
pub fn restart(st: &State, name: &str) -> Result<(SwitchProcess, Child), NetError> {
    let topo = st
        .topology
        .as_ref()
        .ok_or_else(|| NetError::Refused("this run's state has no topology (brought up by an older sdnlab)".into()))?;
    let sw = topo
        .switches
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| NetError::NotFound(format!("no switch '{name}'")))?;
    let ports = ports_of(st);
    let my_ports = ports.get(name).cloned().unwrap_or_default();
    let dir = st.dir();
    let (p, mut child) = spawn_one(
        &binary()?,
        &dir,
        sw,
        &my_ports,
        st.options.controller.as_deref(),
        shaped(topo),
    )?;
    if let Err(e) = wait_listening(&dir, &p, &mut child) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok((p, child))
}

/// Stops switch processes: SIGTERM, then reap (they are our children when
/// `children` holds them; otherwise wait for them to go).
pub fn stop(children: &mut Vec<Child>) {
    nsexec::stop(children.drain(..), nsexec::GRACE);
}
