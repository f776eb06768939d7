//! The switches under test: each one's version, started on a bed (sdnlab's
//! builds, Open vSwitch, the Linux bridge, the XDP patch, ...) and the
//! bed opened around it.

use super::*;

/// What a bed is opened around: a switch sdnlab starts, or an external
/// one it only reaches through the given interfaces.
pub(crate) enum OnBed {
    Started(Dut),
    External(External),
}

impl OnBed {
    /// The switch's name, as runs and reports give it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            OnBed::Started(d) => d.name(),
            OnBed::External(_) => "external",
        }
    }
}

/// The version of a switch under test, as its own tools say.
pub(crate) fn dut_version(dut: Dut) -> String {
    let kernel = || {
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    match dut {
        Dut::Sdnlab | Dut::SdnlabAfxdp | Dut::SdnlabFastpath => env!("CARGO_PKG_VERSION").to_string(),
        Dut::Ovs | Dut::OvsAfxdp => sh(&["ovs-vswitchd", "--version"])
            .map(|v| v.lines().next().unwrap_or_default().to_string())
            .unwrap_or_default(),
        Dut::Bridge | Dut::XdpPatch | Dut::Veth => format!("Linux {}", kernel()),
    }
}

/// Brings the switches under test up on the bed (for Open vSwitch, as
/// bridges of `shared_ovs` when given, else of a daemon of the bed's own);
/// their OpenFlow addresses, in path order.
pub(crate) fn start_dut(
    dut: Dut,
    bed: &mut Bed,
    shared_ovs: Option<&netlab::ovs::Ovs>,
) -> Result<Vec<std::net::SocketAddr>, BedError> {
    let mut addrs = Vec::new();
    let is_ovs = matches!(dut, Dut::Ovs | Dut::OvsAfxdp);
    if is_ovs && shared_ovs.is_none() && !bed.ports.is_empty() {
        bed.ovs = Some(netlab::ovs::Ovs::start(&bed.dir, &bed.tag).map_err(BedError::io("Open vSwitch"))?);
    }
    for (i, (a, b)) in bed.ports.clone().into_iter().enumerate() {
        let port = netlab::ports::free_loopback_port().map_err(BedError::io("a free loopback port"))?;
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("literal");
        let br = bed.bridge_name(i);
        match dut {
            Dut::Sdnlab | Dut::SdnlabAfxdp | Dut::SdnlabFastpath => {
                let (a, b) = if dut == Dut::Sdnlab {
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
                    .args(["switch", "--port", &a, "--port", &b])
                    .args(["--listen", &format!("ptcp:{port}")])
                    .args(["--ring", "4096", "--threads", "1"])
                    .args((dut == Dut::SdnlabFastpath).then_some("--xdp-fast-path"))
                    .args(bed.cores.map(|(_, sw)| format!("--cores={sw}")))
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .map_err(BedError::io("sdnlab switch"))?;
                bed.children.push(child);
                addrs.push(addr);
            }
            Dut::Ovs | Dut::OvsAfxdp => {
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
                    if dut == Dut::OvsAfxdp {
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
            Dut::Bridge => {
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
            Dut::XdpPatch => {
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
            // The hosts' veths joined: no port of a switch to start on.
            Dut::Veth => {}
        }
    }
    Ok(addrs)
}

/// A bed of `hops` switches in a chain (names marked with `suffix`) in
/// `dir`, the switches started and their in_port forwarding rules
/// installed; their OpenFlow addresses.
pub(crate) fn open_chain(
    dut: Dut,
    dir: &Path,
    links: Links,
    suffix: &str,
    hops: usize,
    shared_ovs: Option<&netlab::ovs::Ovs>,
) -> Result<(Bed, Vec<std::net::SocketAddr>), BedError> {
    std::fs::create_dir_all(dir).map_err(BedError::io(dir.display().to_string()))?;
    let hops = if dut == Dut::Veth { 0 } else { hops.max(1) };
    let mut bed = Bed::chain(dir, links, suffix, hops, None)?;
    let addrs = start_dut(dut, &mut bed, shared_ovs)?;
    for addr in &addrs {
        OfClient::connect(*addr)
            .and_then(|mut c| c.install(&forward_rules(1, 2)))
            .map(drop)
            .map_err(BedError::of("forwarding rules"))?;
    }
    Ok((bed, addrs))
}

/// A fresh run directory for the switch under `dir`, its test bed, the
/// switch started, and the in_port forwarding rules installed when it
/// speaks OpenFlow (then its OpenFlow address).
pub(crate) fn open_bed(
    on: OnBed,
    dir: &Path,
    links: Links,
    workers: Option<&Path>,
) -> Result<(Bed, Option<std::net::SocketAddr>), BedError> {
    let dut_dir = dir.join(on.name());
    let _ = std::fs::remove_dir_all(&dut_dir);
    std::fs::create_dir_all(&dut_dir).map_err(BedError::io(dut_dir.display().to_string()))?;
    let dut = match on {
        OnBed::Started(d) => d,
        OnBed::External(ext) => {
            let bed = match workers {
                Some(inv) => Bed::remote(&dut_dir, links, &ext, inv)?,
                None => Bed::chain(&dut_dir, links, "", 0, Some(&ext))?,
            };
            if let Some(addr) = ext.openflow {
                OfClient::connect(addr)
                    .and_then(|mut c| c.install(&forward_rules(ext.of_ports.0, ext.of_ports.1)))
                    .map(drop)
                    .map_err(BedError::of("forwarding rules on the external switch"))?;
            }
            return Ok((bed, ext.openflow));
        }
    };
    let (bed, addrs) = open_chain(dut, &dut_dir, links, "", 1, None)?;
    let of_addr = addrs.first().copied();
    Ok((bed, of_addr))
}
