//! The test bed shared by the switch benchmarks (`bench switch`, `bench
//! dp`): two host namespaces with a veth each to the switch under test
//! (one veth pair between them for `veth`), built through netlab's kernel
//! calls (netlink, no `ip` processes); starting each kind of switch; the
//! rules the benchmarks install (through `ofconn`'s client); and one paced
//! or flat-out trial of test frames.

use netlab::kernel::{blocking, Nl};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use traffic::frame::Template;
use traffic::run::{generate, GenMethod, GenSpec, Receiver, RecvMethod};
pub(crate) const DUTS: [&str; 8] = [
    "sdnlab",
    "sdnlab-afxdp",
    "sdnlab-fastpath",
    "ovs",
    "ovs-afxdp",
    "bridge",
    "xdp-patch",
    "veth",
];
pub(crate) const GEN_MAC: [u8; 6] = [2, 0x66, 0, 0, 0, 1];
pub(crate) const RCV_MAC: [u8; 6] = [2, 0x66, 0, 0, 0, 2];
/// Test frames go to a MAC the receiving host does not own: its stack drops
/// them at once (PACKET_OTHERHOST) instead of routing them, which would
/// charge the receiving namespace's IP work to whatever sends into it.
pub(crate) const SINK_MAC: [u8; 6] = [2, 0x66, 0, 0, 0, 0x99];

/// Why a test bed could not be built or a trial on it could not run (the
/// switch benchmarks' one-line messages).
#[derive(Debug, thiserror::Error)]
pub enum BedError {
    /// Netlink, a namespace, a socket or a tool whose error names itself
    /// (ovs-vsctl), in its own words.
    #[error(transparent)]
    Kernel(#[from] std::io::Error),
    /// A file, a program or an interface of ours, and what it was for.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A tool (ovs-vsctl, iperf3, the generator) that failed, in its words.
    #[error("{what}: {detail}")]
    Tool { what: String, detail: String },
    /// What the bed cannot do as asked (an argument, a switch, a port).
    #[error("{0}")]
    Refused(String),
    /// The switch under test over OpenFlow: what was asked, and its answer.
    #[error("{what}: {source}")]
    OpenFlow {
        what: String,
        #[source]
        source: ofconn::blocking::ClientError,
    },
    /// The workers a remote bed runs on.
    #[error(transparent)]
    Fleet(#[from] fleet::FleetError),
    /// A stop signal came (`crate::stop`): the bed is removed.
    #[error(transparent)]
    Stopped(#[from] crate::stop::Stopped),
    /// RFC 2544's search at one frame size found no loss-free rate.
    #[error("{frame}-byte frames: {source}")]
    Search {
        frame: usize,
        #[source]
        source: Box<crate::method::rfc2544::MethodError<BedError>>,
    },
}

impl BedError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BedError {
        let what = what.into();
        move |source| BedError::Io { what, source }
    }

    pub(crate) fn of(what: impl Into<String>) -> impl FnOnce(ofconn::blocking::ClientError) -> BedError {
        let what = what.into();
        move |source| BedError::OpenFlow { what, source }
    }
}

/// The trial's stop check, as a bed's error.
pub(crate) fn check_stop() -> Result<(), BedError> {
    Ok(crate::stop::check()?)
}

/// A tool's output (versions of the systems under test).
pub(crate) fn sh(args: &[&str]) -> Result<String, BedError> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(BedError::io(args[0]))?;
    if !out.status.success() {
        return Err(BedError::Tool {
            what: args.join(" "),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The project's one OpenFlow client, as the benches use it.
pub(crate) type OfClient = ofconn::blocking::Client;

/// Kernel calls in namespace `ns` (None: this one) from sequential code.
fn k<T, F>(ns: Option<&str>, f: impl FnOnce(Nl) -> F) -> Result<T, BedError>
where
    F: std::future::Future<Output = std::io::Result<T>>,
{
    Ok(blocking(ns, f)?)
}

/// How test frames travel on a bed: how they are sent, how the receiving
/// host takes them, and every link's MTU (None: the default, 1500; a
/// bench that sends jumbo frames asks for 9000).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Links {
    pub(crate) generator: GenMethod,
    pub(crate) receiver: RecvMethod,
    pub(crate) mtu: Option<u32>,
}

/// The two hosts and the switches between them: one, or several in a
/// chain (host - switch 1 - switch 2 - ... - host), each with two ports.
pub(crate) struct Bed {
    pub(crate) tag: String,
    pub(crate) generator: GenMethod,
    /// How the receiving host takes test frames off its interface.
    pub(crate) receiver: RecvMethod,
    /// Every link's MTU (None: the default).
    pub(crate) mtu: Option<u32>,
    /// (generator and receiver, switch) cores, with two or more.
    pub(crate) cores: Option<(usize, usize)>,
    /// Each switch's two root-side ports, in path order (none for the
    /// direct veth pair).
    pub(crate) ports: Vec<(String, String)>,
    pub(crate) children: Vec<std::process::Child>,
    pub(crate) ovs: Option<netlab::ovs::Ovs>,
    /// `xdp-patch`'s programs, attached while these live.
    pub(crate) patches: Vec<packetio::XdpPatch>,
    pub(crate) dir: PathBuf,
    /// An external switch's two interfaces (generator side, receiver
    /// side), lent to the hosts' namespaces for the run.
    pub(crate) external: Option<(String, String)>,
    /// An external switch whose ports are on workers' machines: no host
    /// of this machine; each trial runs there.
    pub(crate) remote: Option<Remote>,
}

/// The two ends of an external switch that lie on workers' machines (a
/// hardware switch between a rack's servers): frames leave from one
/// worker's interface and come back on another's (or the same worker's),
/// driven over the fleet connected for the run. The interfaces stay in
/// their machines' own namespaces with their own addresses and MACs:
/// nothing is moved or configured there, so nothing needs restoring if a
/// machine is lost.
pub(crate) struct Remote {
    pub(crate) rt: tokio::runtime::Runtime,
    pub(crate) fleet: fleet::coordinator::Fleet,
    /// Each end: (its worker's index in the fleet, its interface there).
    pub(crate) gen: (usize, String),
    pub(crate) rcv: (usize, String),
    /// The two ports as their workers saw them, for meta.json.
    pub(crate) seen: Vec<netlab::kernel::PortInfo>,
}

impl Remote {
    /// "WORKER:IF" of an end.
    pub(crate) fn name(&self, end: &(usize, String)) -> String {
        format!("{}:{}", self.fleet.workers[end.0].name, end.1)
    }

    /// The two workers' clocks' offset is known within this much (µs; 0
    /// when both ends are on one worker).
    pub(crate) fn clock_uncertainty_us(&self) -> f64 {
        if self.gen.0 == self.rcv.0 {
            return 0.0;
        }
        let u = |w: usize| self.fleet.workers[w].clock.map_or(f64::INFINITY, |c| c.uncertainty_us);
        u(self.gen.0) + u(self.rcv.0)
    }
}

/// An external port on a worker, "WORKER:IF" (the worker as the inventory
/// or its host names it; an interface name never holds a colon).
pub(crate) fn split_remote_port(end: &str) -> Option<(&str, &str)> {
    end.rsplit_once(':').filter(|(w, i)| !w.is_empty() && !i.is_empty())
}

/// A switch sdnlab does not start (real hardware): the interfaces that
/// lead to it, and optionally its OpenFlow listener and the OpenFlow
/// numbers of the ports behind those interfaces.
#[derive(Clone, Debug)]
pub(crate) struct External {
    pub(crate) ifaces: (String, String),
    pub(crate) openflow: Option<std::net::SocketAddr>,
    pub(crate) of_ports: (u32, u32),
}

impl Bed {
    /// How frames travel on this bed (for another bed beside it).
    pub(crate) fn links(&self) -> Links {
        Links {
            generator: self.generator,
            receiver: self.receiver,
            mtu: self.mtu,
        }
    }

    pub(crate) fn gen_ns(&self) -> String {
        format!("{}g", self.tag)
    }
    pub(crate) fn rcv_ns(&self) -> String {
        format!("{}r", self.tag)
    }
    pub(crate) fn gen_if(&self) -> String {
        if let Some(r) = &self.remote {
            return r.gen.1.clone();
        }
        match &self.external {
            Some((g, _)) => g.clone(),
            None => format!("{}g", self.tag),
        }
    }
    pub(crate) fn rcv_if(&self) -> String {
        if let Some(r) = &self.remote {
            return r.rcv.1.clone();
        }
        match &self.external {
            Some((_, r)) => r.clone(),
            None => format!("{}r", self.tag),
        }
    }
    /// The name of switch `i`'s bridge (Open vSwitch or Linux).
    pub(crate) fn bridge_name(&self, i: usize) -> String {
        if self.ports.len() == 1 {
            format!("{}br", self.tag)
        } else {
            format!("{}br{}", self.tag, i + 1)
        }
    }

    /// A bed of `hops` switches in a chain (0 for `veth`), its names
    /// marked with `suffix` so that several beds can live side by side.
    /// With `external`, no switch of ours: the two named interfaces are
    /// moved into the hosts' namespaces (and back at the end).
    pub(crate) fn chain(
        dut: &str,
        dir: &Path,
        links: Links,
        suffix: &str,
        hops: usize,
        external: Option<&External>,
    ) -> Result<Bed, BedError> {
        let Links {
            generator,
            receiver,
            mtu,
        } = links;
        // From here on a SIGINT or SIGTERM ends the run at its next trial,
        // with the testbed removed.
        crate::stop::catch_stop_signals();
        let tag = format!("sbsw{:04x}{suffix}", std::process::id() & 0xffff);
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let hops = if dut == "veth" || external.is_some() {
            0
        } else {
            hops.max(1)
        };
        let ports = (1..=hops)
            .map(|i| {
                let n = if hops == 1 { String::new() } else { i.to_string() };
                (format!("{tag}{n}a"), format!("{tag}{n}b"))
            })
            .collect();
        let mut bed = Bed {
            tag,
            generator,
            receiver,
            mtu,
            cores: (cpus >= 2).then_some((0, cpus - 1)),
            ports,
            children: Vec::new(),
            ovs: None,
            patches: Vec::new(),
            dir: dir.to_path_buf(),
            external: None,
            remote: None,
        };
        bed.teardown();
        // On record until torn down: if this process is killed outright,
        // `sdnlab net clean` removes what it leaves.
        netlab::beds::register(&bed.tag, dir).map_err(BedError::io(format!(
            "{} (benchmarks need root)",
            netlab::beds::BEDS_ROOT
        )))?;
        let (g, r) = (bed.gen_ns(), bed.rcv_ns());
        for ns in [&g, &r] {
            netlab::kernel::netns_create(ns).map_err(BedError::io(format!("namespace {ns}")))?;
        }
        if let Some(ext) = external {
            for i in [&ext.ifaces.0, &ext.ifaces.1] {
                let name = i.clone();
                k(None, |nl| async move { nl.index(&name).await })
                    .map_err(|_| BedError::Refused(format!("--external-ports: no interface {i} here")))?;
            }
            bed.external = Some(ext.ifaces.clone());
        } else {
            // The path's links: host, each switch's ports in turn, host.
            let mut ends = vec![bed.gen_if()];
            for (a, b) in &bed.ports {
                ends.push(a.clone());
                ends.push(b.clone());
            }
            ends.push(bed.rcv_if());
            k(None, |nl| async move {
                for link in ends.chunks(2) {
                    nl.veth(&link[0], &link[1], 0).await?;
                }
                Ok(())
            })?;
        }
        let ports = bed.ports.clone();
        k(None, |nl| async move {
            for (a, b) in &ports {
                for p in [a, b] {
                    if let Some(mtu) = mtu {
                        nl.set_mtu(p, mtu).await?;
                    }
                    nl.set_up(p, true).await?;
                }
            }
            Ok(())
        })?;
        let external = bed.external.is_some();
        for (ifname, ns, mac, ip) in [
            (bed.gen_if(), &g, GEN_MAC, [10, 66, 0, 1]),
            (bed.rcv_if(), &r, RCV_MAC, [10, 66, 0, 2]),
        ] {
            let (name, to) = (ifname.clone(), ns.clone());
            k(None, |nl| async move { nl.move_to(&name, &to, &name).await })?;
            k(Some(ns), |nl| async move {
                if !external {
                    // (An external switch's interfaces keep their own MAC.)
                    nl.set_mac(&ifname, mac).await?;
                }
                if let Some(mtu) = mtu {
                    nl.set_mtu(&ifname, mtu)
                        .await
                        .map_err(|e| std::io::Error::other(format!("jumbo frames need MTU {mtu} on {ifname}: {e}")))?;
                }
                nl.add_addr(&ifname, ip.into(), 24).await?;
                nl.set_up(&ifname, true).await?;
                nl.set_up("lo", true).await
            })?;
        }
        bed.generator = generator;
        // A veth takes XDP frames only with NAPI on: GRO on at the veth
        // the generator's frames arrive at, and at the receiving host's
        // (where sdnlab's fast path redirects frames in the kernel). The
        // same for every switch; a bare veth pair's receiving end is both.
        let mut gro = Vec::new();
        if generator == GenMethod::Xdp && bed.external.is_none() {
            if let Some((a, _)) = bed.ports.first() {
                gro.push((None, a.clone()));
            }
        }
        if bed.external.is_none() && (generator == GenMethod::Xdp || !bed.ports.is_empty()) {
            gro.push((Some(bed.rcv_ns()), bed.rcv_if()));
        }
        for (ns, ifname) in gro {
            enable_gro(ns, ifname)?;
        }
        Ok(bed)
    }

    pub(crate) fn teardown(&mut self) {
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
        self.patches.clear();
        let mut gone: Vec<String> = Vec::new();
        for (i, (a, b)) in self.ports.iter().enumerate() {
            // (Deleting one end of a veth deletes the other: a missing name is skipped.)
            gone.push(a.clone());
            gone.push(b.clone());
            gone.push(self.bridge_name(i));
        }
        let _ = k(None, |nl| async move {
            for name in &gone {
                if nl.index(name).await.is_ok() {
                    let _ = nl.delete(name).await;
                }
            }
            Ok(())
        });
        if let Some((g, r)) = self.external.clone() {
            // Back to where they came from, without the bed's addresses.
            for (ns, ifname) in [(self.gen_ns(), g), (self.rcv_ns(), r)] {
                let _ = k(Some(&ns), |nl| async move {
                    nl.flush_addrs(&ifname).await?;
                    nl.move_to_pid(&ifname, 1).await
                });
            }
        }
        for ns in [self.gen_ns(), self.rcv_ns()] {
            if netlab::kernel::netns_path(&ns).exists() {
                let _ = netlab::kernel::netns_delete(&ns);
            }
        }
        // The record goes only with the last of the bed's objects: what
        // could not be removed here, `sdnlab net clean` finds by it.
        let tag = self.tag.clone();
        let interfaces = k(None, |nl| async move { nl.names_with_prefix(&tag).await }).unwrap_or_default();
        if netlab::kernel::netns_list(&self.tag).is_empty() && interfaces.is_empty() {
            netlab::beds::unregister(&self.tag);
        }
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.teardown();
    }
}

impl Bed {
    /// A bed whose two ends are interfaces on workers' machines, "WORKER:IF"
    /// each (`ext.ifaces`), the workers those of inventory `inv`: the
    /// fleet connected (every clock measured) and both ports checked there.
    fn remote(dir: &Path, links: Links, ext: &External, inv: &Path) -> Result<Bed, BedError> {
        crate::stop::catch_stop_signals();
        let inventory = fleet::inventory::Inventory::load(inv)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(BedError::io("tokio"))?;
        let fleet = rt.block_on(fleet::coordinator::Fleet::connect(&inventory))?;
        let mut ends = Vec::new();
        for end in [&ext.ifaces.0, &ext.ifaces.1] {
            let (w, iface) = split_remote_port(end).ok_or_else(|| {
                BedError::Refused(format!(
                    "--external-ports {end}: with --workers, name each port WORKER:IF"
                ))
            })?;
            let i = fleet.worker_named(w).ok_or_else(|| {
                let names: Vec<&str> = fleet.workers.iter().map(|w| w.name.as_str()).collect();
                BedError::Refused(format!(
                    "--external-ports {end}: no worker '{w}' in {} (its workers: {})",
                    inv.display(),
                    names.join(", ")
                ))
            })?;
            ends.push((i, iface.to_string()));
        }
        let mut seen = Vec::new();
        for (w, iface) in &ends {
            let port = rt
                .block_on(fleet.tester_ports(*w, std::slice::from_ref(iface)))
                .map_err(|e| BedError::Refused(format!("--external-ports: {e}")))?
                .remove(0);
            if let Some(mtu) = links.mtu.filter(|m| port.mtu < *m) {
                return Err(BedError::Refused(format!(
                    "jumbo frames need MTU {mtu} on {}:{iface} (it has {}): raise it there",
                    fleet.workers[*w].name, port.mtu
                )));
            }
            seen.push(port);
        }
        let rcv = ends.pop().expect("two ends");
        let gen = ends.pop().expect("two ends");
        Ok(Bed {
            tag: format!("sbsw{:04x}w", std::process::id() & 0xffff),
            generator: links.generator,
            receiver: links.receiver,
            mtu: links.mtu,
            cores: None,
            ports: Vec::new(),
            children: Vec::new(),
            ovs: None,
            patches: Vec::new(),
            dir: dir.to_path_buf(),
            external: None,
            remote: Some(Remote {
                rt,
                fleet,
                gen,
                rcv,
                seen,
            }),
        })
    }
}

/// Turns GRO on at interface `ifname` of namespace `ns` (None: this one),
/// so that the veth takes frames redirected to it by XDP.
fn enable_gro(ns: Option<String>, ifname: String) -> Result<(), BedError> {
    std::thread::spawn(move || -> std::io::Result<()> {
        if let Some(ns) = &ns {
            traffic::run::enter_netns(ns)?;
        }
        packetio::live::enable_gro(&ifname)
    })
    .join()
    .map_err(|_| BedError::Refused("the GRO thread panicked".into()))?
    .map_err(BedError::io("enabling GRO"))
}

/// A FLOW_MOD removing every rule of every table.
pub(crate) fn delete_all() -> ofwire::v13::FlowMod {
    ofwire::v13::FlowMod {
        command: ofwire::v13::FlowModCommand::Delete,
        table_id: ofwire::v13::TABLE_ALL,
        ..ofwire::v13::FlowMod::add(0)
    }
}

/// The time a core spent, by kind, from /proc/stat (in clock ticks).
#[derive(Clone, Copy, Default)]
struct CoreTicks([u64; 8]);

impl CoreTicks {
    fn read(core: usize) -> Option<CoreTicks> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let line = text.lines().find(|l| l.starts_with(&format!("cpu{core} ")))?;
        let mut t = [0u64; 8];
        for (slot, v) in t.iter_mut().zip(line.split_whitespace().skip(1)) {
            *slot = v.parse().ok()?;
        }
        Some(CoreTicks(t))
    }

    /// Shares (%) of user, nice, system, irq, softirq, idle (+ iowait, steal) since `before`.
    fn shares_since(&self, before: &CoreTicks) -> serde_json::Value {
        let d: Vec<f64> = self
            .0
            .iter()
            .zip(before.0.iter())
            .map(|(a, b)| a.saturating_sub(*b) as f64)
            .collect();
        let total = d.iter().sum::<f64>().max(1.0);
        let pct = |i: usize| (1000.0 * d[i] / total).round() / 10.0;
        // /proc/stat order: user nice system idle iowait irq softirq steal.
        serde_json::json!({"user": pct(0), "nice": pct(1), "system": pct(2), "irq": pct(5),
            "softirq": pct(6), "idle": pct(3) + pct(4), "steal": pct(7)})
    }
}

impl Bed {
    /// The processes of the measured path, for a [`crate::host::HostWatch`]:
    /// the switch's (its processes, or Open vSwitch's daemon) and this one
    /// (the generator and the receiver run in it).
    pub(crate) fn path_processes(&self) -> Vec<(String, u32)> {
        if self.remote.is_some() {
            // (On the workers' machines: none of this one's processes.)
            return Vec::new();
        }
        let mut v: Vec<(String, u32)> = self.children.iter().map(|c| ("switch".to_string(), c.id())).collect();
        if let Some(o) = &self.ovs {
            v.push(("ovs-vswitchd".into(), o.state.vswitchd_pid));
        }
        v.push(("sdnlab (generator, receiver)".into(), std::process::id()));
        v
    }
}

/// Samples the switch core's time (user, nice, system, irq, softirq)
/// every second while a trial runs.
pub(crate) struct CpuSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<serde_json::Value>>,
    first: Option<CoreTicks>,
    core: usize,
}

impl CpuSampler {
    pub(crate) fn start(core: usize) -> CpuSampler {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let first = CoreTicks::read(core);
        let thread = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut last = CoreTicks::read(core);
            let mut next = Instant::now() + Duration::from_secs(1);
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
                if Instant::now() >= next {
                    let now = CoreTicks::read(core);
                    if let (Some(a), Some(b)) = (now, last) {
                        out.push(a.shares_since(&b));
                    }
                    last = now;
                    next += Duration::from_secs(1);
                }
            }
            out
        });
        CpuSampler {
            stop,
            thread,
            first,
            core,
        }
    }

    /// {"core", "each_second": [...], "trial": shares over the whole trial}.
    pub(crate) fn finish(self) -> serde_json::Value {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let each = self.thread.join().unwrap_or_default();
        let whole = match (CoreTicks::read(self.core), self.first) {
            (Some(a), Some(b)) => a.shares_since(&b),
            _ => serde_json::Value::Null,
        };
        serde_json::json!({"core": self.core, "each_second": each, "trial": whole})
    }
}

/// in_port forwarding both ways between OpenFlow ports `a` and `b`.
pub(crate) fn forward_rules(a: u32, b: u32) -> Vec<ofwire::v13::FlowMod> {
    use ofwire::oxm::{Match, Oxm};
    use ofwire::v13::{Action, FlowMod, Instruction};
    [(a, b), (b, a)]
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
pub(crate) const FILLER_COOKIE: u64 = 0x5d1a_f111;

pub(crate) fn filler_rules(n: usize, base: u32, out: u32) -> Vec<ofwire::v13::FlowMod> {
    use ofwire::oxm::{Match, Oxm};
    use ofwire::v13::{Action, FlowMod, Instruction};
    (0..n as u32)
        .map(|i| FlowMod {
            match_: Match::new(vec![
                Oxm::EthType(0x0800),
                Oxm::Ipv4Dst(std::net::Ipv4Addr::from(0x0b00_0000 + base + i), None),
            ]),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output {
                port: out,
                max_len: 0,
            }])],
            cookie: FILLER_COOKIE,
            ..FlowMod::add(100)
        })
        .collect()
}

/// Removes every extra rule (by cookie).
pub(crate) fn remove_filler() -> ofwire::v13::FlowMod {
    ofwire::v13::FlowMod {
        command: ofwire::v13::FlowModCommand::Delete,
        table_id: ofwire::v13::TABLE_ALL,
        cookie: FILLER_COOKIE,
        cookie_mask: u64::MAX,
        ..ofwire::v13::FlowMod::add(0)
    }
}

/// The version of a switch under test, as its own tools say.
pub(crate) fn dut_version(dut: &str) -> String {
    let kernel = || {
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    match dut {
        "sdnlab" | "sdnlab-afxdp" | "sdnlab-fastpath" => env!("CARGO_PKG_VERSION").to_string(),
        "external" => "not started by sdnlab".to_string(),
        "ovs" | "ovs-afxdp" => sh(&["ovs-vswitchd", "--version"])
            .map(|v| v.lines().next().unwrap_or_default().to_string())
            .unwrap_or_default(),
        _ => format!("Linux {}", kernel()),
    }
}

/// Brings the switches under test up on the bed (for Open vSwitch, as
/// bridges of `shared_ovs` when given, else of a daemon of the bed's own);
/// their OpenFlow addresses, in path order.
pub(crate) fn start_dut(
    dut: &str,
    bed: &mut Bed,
    shared_ovs: Option<&netlab::ovs::Ovs>,
) -> Result<Vec<std::net::SocketAddr>, BedError> {
    let mut addrs = Vec::new();
    if dut.starts_with("ovs") && shared_ovs.is_none() && !bed.ports.is_empty() {
        bed.ovs = Some(netlab::ovs::Ovs::start(&bed.dir, &bed.tag).map_err(BedError::io("Open vSwitch"))?);
    }
    for (i, (a, b)) in bed.ports.clone().into_iter().enumerate() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(BedError::io("a free loopback port"))?
            .port();
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("literal");
        let br = bed.bridge_name(i);
        match dut {
            "sdnlab" | "sdnlab-afxdp" | "sdnlab-fastpath" => {
                let (a, b) = if dut == "sdnlab" {
                    (a, b)
                } else {
                    (format!("afxdp:{a}"), format!("afxdp:{b}"))
                };
                let me = std::env::current_exe().map_err(BedError::io("finding sdnlab itself"))?;
                let log_name = if bed.ports.len() == 1 {
                    "sdnlab-switch.log".to_string()
                } else {
                    format!("sdnlab-switch{}.log", i + 1)
                };
                let log = std::fs::File::create(bed.dir.join(&log_name)).map_err(BedError::io(log_name.clone()))?;
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
                    .args((dut == "sdnlab-fastpath").then_some("--xdp-fast-path"))
                    .args(bed.cores.map(|(_, sw)| format!("--cores={sw}")))
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .map_err(BedError::io("sdnlab switch"))?;
                bed.children.push(child);
                addrs.push(addr);
            }
            "ovs" | "ovs-afxdp" => {
                let ovs = shared_ovs.or(bed.ovs.as_ref()).expect("started above");
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
                    if let Some(mtu) = bed.mtu {
                        args.push(format!("mtu_request={mtu}"));
                    }
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
                ovs.vsctl(&refs)?;
                if let Some((_, sw)) = bed.cores {
                    // Every other thread too (the main thread polls `system` ports).
                    traffic::run::pin_process(ovs.state.vswitchd_pid, sw)
                        .map_err(BedError::io("pinning ovs-vswitchd"))?;
                }
                addrs.push(addr);
            }
            "bridge" => {
                let mtu = bed.mtu;
                k(None, |nl| async move {
                    nl.bridge(&br, 0).await?;
                    if let Some(mtu) = mtu {
                        nl.set_mtu(&br, mtu).await?;
                    }
                    nl.enslave(&a, &br).await?;
                    nl.enslave(&b, &br).await
                })?;
            }
            "xdp-patch" => {
                // Not a switch: the least a switch hop in the kernel costs
                // (see packetio::patch).
                let index = |name: &str| packetio::ifindex(name).map_err(BedError::io(name));
                let patch = packetio::XdpPatch::attach(index(&a)?, index(&b)?, packetio::XdpMode::Native)
                    .map_err(BedError::io("xdp-patch"))?;
                bed.patches.push(patch);
                if i == 0 {
                    // Replies redirected back out of the first port (TCP
                    // trials) land in the generating host's veth.
                    enable_gro(Some(bed.gen_ns()), bed.gen_if())?;
                }
            }
            other => {
                return Err(BedError::Refused(format!(
                    "unknown switch '{other}': choose from {}",
                    DUTS.join(", ")
                )))
            }
        }
    }
    Ok(addrs)
}

/// A bed of `hops` switches in a chain (names marked with `suffix`) in
/// `dir`, the switches started and their in_port forwarding rules
/// installed; their OpenFlow addresses.
pub(crate) fn open_chain(
    dut: &str,
    dir: &Path,
    links: Links,
    suffix: &str,
    hops: usize,
    shared_ovs: Option<&netlab::ovs::Ovs>,
) -> Result<(Bed, Vec<std::net::SocketAddr>), BedError> {
    std::fs::create_dir_all(dir).map_err(BedError::io(dir.display().to_string()))?;
    let mut bed = Bed::chain(dut, dir, links, suffix, hops, None)?;
    let addrs = start_dut(dut, &mut bed, shared_ovs)?;
    for addr in &addrs {
        OfClient::connect(*addr)
            .and_then(|mut c| c.install(&forward_rules(1, 2)))
            .map(drop)
            .map_err(BedError::of("forwarding rules"))?;
    }
    Ok((bed, addrs))
}

/// A fresh run directory for `dut` under `dir`, its test bed, the switch
/// started, and the in_port forwarding rules installed when it speaks
/// OpenFlow (then its OpenFlow address).
pub(crate) fn open_bed(
    dut: &str,
    dir: &Path,
    links: Links,
    external: Option<&External>,
    workers: Option<&Path>,
) -> Result<(Bed, Option<std::net::SocketAddr>), BedError> {
    let dut_dir = dir.join(dut);
    let _ = std::fs::remove_dir_all(&dut_dir);
    std::fs::create_dir_all(&dut_dir).map_err(BedError::io(dut_dir.display().to_string()))?;
    if let Some(ext) = external {
        let bed = match workers {
            Some(inv) => Bed::remote(&dut_dir, links, ext, inv)?,
            None => Bed::chain(dut, &dut_dir, links, "", 0, Some(ext))?,
        };
        if let Some(addr) = ext.openflow {
            OfClient::connect(addr)
                .and_then(|mut c| c.install(&forward_rules(ext.of_ports.0, ext.of_ports.1)))
                .map(drop)
                .map_err(BedError::of("forwarding rules on the external switch"))?;
        }
        return Ok((bed, ext.openflow));
    }
    let (bed, addrs) = open_chain(dut, &dut_dir, links, "", 1, None)?;
    let of_addr = addrs.first().copied();
    Ok((bed, of_addr))
}

pub(crate) struct Trial {
    pub(crate) offered_pps: f64,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) rx_pps: f64,
    pub(crate) latency_us_p50: f64,
    pub(crate) latency_us_p99: f64,
    pub(crate) latency_us_p999: f64,
    pub(crate) latency_us_min: f64,
    pub(crate) latency_us_mean: f64,
    pub(crate) latency_us_max: f64,
    pub(crate) reordered: u64,
    pub(crate) duplicates: u64,
    pub(crate) receiver_drops: u64,
    /// How far the latencies may be off because the generator's and the
    /// receiver's clocks are two machines' (µs; 0 on one machine).
    pub(crate) clock_uncertainty_us: f64,
    pub(crate) gen: traffic::run::GenReport,
    pub(crate) rx: traffic::run::RecvReport,
}

impl Trial {
    /// What a live view is told of this trial when it ends.
    pub(crate) fn figures(&self, system: &str, test: &str, frame: usize) -> crate::TrialFigures {
        crate::TrialFigures {
            system: system.to_string(),
            test: test.to_string(),
            frame,
            offered_pps: self.offered_pps,
            sent: self.sent,
            received: self.received,
            latency_us: (self.received > 0).then_some([self.latency_us_p50, self.latency_us_p99, self.latency_us_max]),
        }
    }
}

impl crate::method::rfc2544::Observed for Trial {
    fn sent(&self) -> u64 {
        self.sent
    }
    fn received(&self) -> u64 {
        self.received
    }
    fn offered_pps(&self) -> f64 {
        self.offered_pps
    }
    fn rx_pps(&self) -> f64 {
        self.rx_pps
    }
}

/// The test frames of a trial on `bed`: `frame` bytes (FCS included)
/// from the generating host to a MAC nobody owns, 16 streams (UDP source
/// ports), `seconds` at `rate` (None: flat out).
pub(crate) fn load(bed: &Bed, frame: usize, rate: Option<f64>, seconds: f64) -> GenSpec {
    GenSpec {
        streams: 16,
        method: bed.generator,
        core: bed.cores.map(|(gen, _)| gen),
        ..GenSpec::new(
            Some(bed.gen_ns()),
            bed.gen_if(),
            Template::udp(frame - 4, GEN_MAC, SINK_MAC, [10, 66, 0, 1], [10, 66, 0, 99], 0),
            rate,
            Duration::from_secs_f64(seconds),
        )
    }
}

pub(crate) fn trial(bed: &Bed, frame: usize, rate: Option<f64>, seconds: f64) -> Result<Trial, BedError> {
    run_trial(bed, &load(bed, frame, rate, seconds))
}

/// Sends `spec`'s frames and counts what arrives at the receiving host,
/// after the traffic has stopped and drained.
pub(crate) fn run_trial(bed: &Bed, spec: &GenSpec) -> Result<Trial, BedError> {
    check_stop()?;
    if let Some(rm) = &bed.remote {
        let (g, r, uncertainty) = rm.rt.block_on(rm.fleet.tester_trial(
            rm.gen.0,
            (rm.rcv.0, &rm.rcv.1),
            bed.receiver,
            spec,
            Duration::from_millis(100),
            Duration::from_secs(2),
        ))?;
        return Ok(Trial::of(g, r, uncertainty));
    }
    let rx = Receiver::start_on(
        Some(&bed.rcv_ns()),
        &bed.rcv_if(),
        bed.cores.map(|(gen, _)| gen),
        bed.receiver,
    )
    .map_err(BedError::io("the receiver"))?;
    let g = generate(spec).map_err(BedError::io("the generator"))?;
    // RFC 2544 section 23 waits 2 s for residual frames; a switch that has
    // delivered everything is done long before, so stop after 100 ms of
    // silence and wait the 2 s only for one still delivering.
    let r = rx.finish_when_quiet(Duration::from_millis(100), Duration::from_secs(2));
    Ok(Trial::of(g, r, 0.0))
}

impl Trial {
    /// A trial of what the generator sent and the receiver counted.
    fn of(g: traffic::run::GenReport, r: traffic::run::RecvReport, clock_uncertainty_us: f64) -> Trial {
        Trial {
            offered_pps: g.achieved_pps,
            sent: g.sent,
            received: r.received - r.duplicates,
            rx_pps: (r.received - r.duplicates) as f64 / g.elapsed_s,
            latency_us_p50: r.latency_us_p50,
            latency_us_p99: r.latency_us_p99,
            latency_us_p999: r.latency_us_p999,
            latency_us_min: r.latency_us_min,
            latency_us_mean: r.latency_us_mean,
            latency_us_max: r.latency_us_max,
            reordered: r.reordered,
            duplicates: r.duplicates,
            receiver_drops: r.receiver_drops,
            clock_uncertainty_us,
            gen: g,
            rx: r,
        }
    }
}

/// iperf3 from the generating host to the receiving one for `seconds`:
/// TCP, or UDP at `udp_mbit`; its JSON report.
pub(crate) fn iperf3(bed: &Bed, seconds: f64, udp_mbit: Option<f64>) -> Result<serde_json::Value, BedError> {
    check_stop()?;
    // Both ends on the measuring side's core, as the generator and the
    // receiver are: on the switch's core they would fight a polling
    // switch for it and their own losses would count as the switch's.
    let pin: Vec<String> = bed
        .cores
        .map(|(gen, _)| vec!["taskset".to_string(), "-c".to_string(), gen.to_string()])
        .unwrap_or_default();
    // Pinned through taskset when there is a core to pin to.
    let run_in = |ns: &str, argv: &[String]| -> Result<Command, BedError> {
        let mut c = netlab::kernel::command_in_netns(ns, &argv[0])?;
        c.args(&argv[1..]);
        Ok(c)
    };
    let with_pin =
        |tool: &[&str]| -> Vec<String> { pin.iter().cloned().chain(tool.iter().map(|s| s.to_string())).collect() };
    let mut server = run_in(&bed.rcv_ns(), &with_pin(&["iperf3", "-s", "-1", "-p", "5411"]))?
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(BedError::io("iperf3"))?;
    std::thread::sleep(Duration::from_millis(300));
    let secs = format!("{}", seconds.ceil().max(1.0) as u64);
    // A path that drops the handshake (an XDP patch loses the sender's
    // checksum offload state; so do Open vSwitch's AF_XDP ports) fails in
    // 5 s, not after the kernel's two minutes of SYN retries: on a bed of
    // veths the handshake crosses in well under a millisecond.
    let mut args = with_pin(&[
        "iperf3",
        "-c",
        "10.66.0.2",
        "-p",
        "5411",
        "-J",
        "--connect-timeout",
        "5000",
        "-t",
        &secs,
    ]);
    if let Some(mbit) = udp_mbit {
        args.extend([
            "-u".to_string(),
            "-b".to_string(),
            format!("{}K", (mbit * 1000.0) as u64),
        ]);
    }
    let out = run_in(&bed.gen_ns(), &args)?.output().map_err(BedError::io("iperf3"));
    let _ = server.kill();
    let _ = server.wait();
    let v: serde_json::Value = serde_json::from_slice(&out?.stdout).map_err(|e| BedError::Tool {
        what: "iperf3 output".into(),
        detail: e.to_string(),
    })?;
    if v["error"].is_string() {
        return Err(BedError::Tool {
            what: "iperf3".into(),
            detail: v["error"].to_string(),
        });
    }
    Ok(v)
}

/// TCP throughput in Gbit/s, as iperf3's receiver counts it.
pub(crate) fn iperf(bed: &Bed, seconds: f64) -> Result<f64, BedError> {
    let v = iperf3(bed, seconds, None)?;
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .map(|b| b / 1e9)
        .ok_or_else(|| BedError::Tool {
            what: "iperf3".into(),
            detail: "reported no received rate".into(),
        })
}

/// UDP at `mbit`: (Mbit/s received, % lost, jitter in ms), as iperf3's server reports them.
pub(crate) fn iperf_udp(bed: &Bed, seconds: f64, mbit: f64) -> Result<(f64, f64, f64), BedError> {
    let v = iperf3(bed, seconds, Some(mbit))?;
    let sum = &v["end"]["sum"];
    let received = v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .or_else(|| {
            let sent = sum["bits_per_second"].as_f64()?;
            Some(sent * (1.0 - sum["lost_percent"].as_f64()? / 100.0))
        })
        .ok_or_else(|| BedError::Tool {
            what: "iperf3".into(),
            detail: "reported no UDP rate".into(),
        })?;
    Ok((
        received / 1e6,
        sum["lost_percent"].as_f64().unwrap_or(f64::NAN),
        sum["jitter_ms"].as_f64().unwrap_or(f64::NAN),
    ))
}
