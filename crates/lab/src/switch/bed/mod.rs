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

mod cpu;
mod duts;
mod rules;
pub(crate) mod runner;
mod trials;
pub(crate) use cpu::*;
pub(crate) use duts::*;
pub(crate) use rules::*;
pub(crate) use trials::*;
crate::check::choice! {
    /// A switch `bench switch` and `bench dp` start and measure (or a
    /// reference that is none: the XDP patch, the bare veth pair).
    pub enum Dut {
        /// sdnlab's switch, AF_PACKET ports.
        Sdnlab = "sdnlab",
        /// sdnlab's switch, AF_XDP ports.
        SdnlabAfxdp = "sdnlab-afxdp",
        /// sdnlab's switch, AF_XDP ports with the in-kernel fast path.
        SdnlabFastpath = "sdnlab-fastpath",
        /// Open vSwitch's userspace datapath, system (AF_PACKET) ports.
        Ovs = "ovs",
        /// Open vSwitch's userspace datapath, AF_XDP ports.
        OvsAfxdp = "ovs-afxdp",
        /// The Linux bridge.
        Bridge = "bridge",
        /// Not a switch: every frame redirected to the other port by XDP, the
        /// floor of a hop in the kernel.
        XdpPatch = "xdp-patch",
        /// No hop at all: the two hosts' veths joined.
        Veth = "veth",
    }
}

impl Dut {
    /// Whether it speaks OpenFlow (its table can be filled and timed).
    pub fn openflow(self) -> bool {
        matches!(
            self,
            Dut::Sdnlab | Dut::SdnlabAfxdp | Dut::SdnlabFastpath | Dut::Ovs | Dut::OvsAfxdp
        )
    }
}

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
    /// A tool run through `nsexec` that did not start or failed.
    #[error(transparent)]
    Exec(#[from] nsexec::ToolError),
    /// A tool the trial needs, not installed and not installed now.
    #[error(transparent)]
    Install(#[from] netlab::install::InstallError),
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

/// A failure on one switch's bed, named by the switch (both benchmarks'
/// one-line setup errors).
pub(crate) fn on_dut<E: std::fmt::Display>(dut: &str) -> impl Fn(E) -> crate::LabError + '_ {
    move |e| crate::LabError::setup(format!("{dut}: {e}"))
}

/// A tool's output (versions of the systems under test).
pub(crate) fn sh(args: &[&str]) -> Result<String, BedError> {
    Ok(nsexec::run_tool(
        Command::new(args[0]).args(&args[1..]),
        &args.join(" "),
    )?)
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
#[derive(Clone, Debug)]
pub(crate) struct Links {
    pub(crate) generator: GenMethod,
    pub(crate) receiver: RecvMethod,
    pub(crate) mtu: Option<u32>,
    /// The run's stop token: a trial on the bed checks it first.
    pub(crate) stop: crate::stop::Stop,
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
    /// The run's stop token: a trial checks it first (stopped, the run
    /// ends at its next trial, with the testbed removed).
    pub(crate) stop: crate::stop::Stop,
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
            stop: self.stop.clone(),
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

    /// A bed of `hops` switches in a chain (0: the hosts' veths joined),
    /// its names marked with `suffix` so that several beds can live side
    /// by side. With `external`, no switch of ours: the two named
    /// interfaces are moved into the hosts' namespaces (and back at the end).
    pub(crate) fn chain(
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
            stop,
        } = links;
        let tag = format!("sbsw{:04x}{suffix}", std::process::id() & 0xffff);
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let hops = if external.is_some() { 0 } else { hops };
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
            stop,
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
        nsexec::stop(self.children.drain(..), nsexec::GRACE);
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
            stop: links.stop,
        })
    }
}

/// Turns GRO on at interface `ifname` of namespace `ns` (None: this one),
/// so that the veth takes frames redirected to it by XDP.
fn enable_gro(ns: Option<String>, ifname: String) -> Result<(), BedError> {
    nsexec::on_thread(ns.as_deref(), move || packetio::live::enable_gro(&ifname)).map_err(BedError::io("enabling GRO"))
}
