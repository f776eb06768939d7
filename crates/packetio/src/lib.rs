//! Packet I/O for sdnlab, in one place: AF_PACKET sockets and rings
//! (`port`: the switch's ports, also the traffic generator's; `ring`: the
//! receivers' TPACKET_V3 ring), the virtio-net header (`vnet`, from
//! ofwire, where the switch's packets find it too), AF_XDP
//! sockets with their UMEM and rings (`xsk`), the XDP program that steers
//! an interface's frames into them (`bpf`), `XdpInterface`, which puts the
//! two together for every receive queue of one interface, the switch port
//! on top (`port_xdp`), the kernel fast path (`fastpath`), the in-kernel
//! generator (`live`), the XDP patch and the tc tagger. The BPF programs are
//! C (`bpf/*.bpf.c`), loaded through libbpf (`objects`). Used by the
//! switch, the traffic generator and receiver, and the benches. Needs root
//! (or CAP_NET_RAW, CAP_BPF and CAP_NET_ADMIN).

pub mod bpf;
pub mod fastpath;
pub mod live;
pub mod netdev;
mod objects;
pub mod patch;
pub mod port;
pub mod port_xdp;
pub mod ring;
pub mod tc;
/// The virtio-net header, a wire format: it lives in ofwire, beside the
/// switch's other formats.
pub use ofwire::vnet;
pub mod xsk;

pub use bpf::{XdpMode, XdpRedirect};
pub use patch::XdpPatch;
pub use xsk::{Xsk, XskConfig, XskStats};

use std::io;

/// Every receive queue of one interface steered into its own AF_XDP
/// socket. Frames longer than a UMEM chunk holds go on to the kernel's
/// stack (an AF_PACKET socket on the interface still sees them).
pub struct XdpInterface {
    pub name: String,
    pub ifindex: u32,
    /// One per receive queue, in queue order.
    pub sockets: Vec<Xsk>,
    redirect: XdpRedirect,
}

/// How many receive queues `ifname` has: the driver's answer to
/// ETHTOOL_GCHANNELS, asked in the calling thread's namespace (sysfs shows
/// the namespace it was mounted in, which for an interface inside another
/// namespace is the wrong one); sysfs if the driver does not answer, else 1.
pub fn rx_queues(ifname: &str) -> u32 {
    channels(ifname).unwrap_or_else(|| {
        std::fs::read_dir(format!("/sys/class/net/{ifname}/queues"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                    .count() as u32
            })
            .unwrap_or(1)
            .max(1)
    })
}

/// Receive (or combined) channels in use, from SIOCETHTOOL.
fn channels(ifname: &str) -> Option<u32> {
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    if ifname.len() >= libc::IFNAMSIZ {
        return None;
    }
    // struct ethtool_channels: cmd, then the max and current counts of
    // rx, tx, other and combined channels.
    let mut ch = [0u32; 9];
    ch[0] = ETHTOOL_GCHANNELS;
    ethtool_ioctl(ifname, &mut ch, "reading channels").ok()?;
    let (rx, combined) = (ch[5], ch[8]);
    Some(rx.max(combined)).filter(|&n| n > 0)
}

/// One SIOCETHTOOL request on `ifname` (in this thread's namespace):
/// `request` is the ethtool command structure, starting with its command.
pub(crate) fn ethtool_ioctl<T>(ifname: &str, request: &mut T, what: &str) -> io::Result<()> {
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    #[repr(C)]
    struct Ifreq<T> {
        name: [u8; 16],
        data: *mut T,
        _pad: [u8; 16],
    }
    let mut req = Ifreq {
        name: [0; 16],
        data: request,
        _pad: [0; 16],
    };
    let n = ifname.len().min(15);
    req.name[..n].copy_from_slice(&ifname.as_bytes()[..n]);
    // SAFETY: a datagram socket for the ioctl, closed below; the request
    // points at a live value the kernel reads and writes within its size.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // The request's type is c_ulong on glibc, c_int on musl.
        let r = libc::ioctl(fd, SIOCETHTOOL as _, &mut req);
        let e = io::Error::last_os_error();
        libc::close(fd);
        if r < 0 {
            return Err(io::Error::new(e.kind(), format!("{ifname}: {what}: {e}")));
        }
    }
    Ok(())
}

pub fn ifindex(ifname: &str) -> io::Result<u32> {
    let cname = std::ffi::CString::new(ifname)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL byte"))?;
    // SAFETY: valid C string.
    let i = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if i == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{ifname}: no such network interface"),
        ));
    }
    Ok(i)
}

impl XdpInterface {
    /// Attaches the redirect program to `ifname` (`mode` None: native if
    /// the driver takes it, else generic) and opens a socket per receive
    /// queue, at most `max_queues`.
    pub fn open(ifname: &str, mode: Option<XdpMode>, config: XskConfig, max_queues: u32) -> io::Result<XdpInterface> {
        XdpInterface::open_with(ifname, mode, config, max_queues, None, false)
    }

    /// As `open`, each frame stamped with its receive time in the kernel
    /// (read it with `Xsk::recv_stamped`).
    pub fn open_stamped(ifname: &str, mode: XdpMode, config: XskConfig, max_queues: u32) -> io::Result<XdpInterface> {
        XdpInterface::open_with(ifname, Some(mode), config, max_queues, None, true)
    }

    /// As `open`, with the switch's fast path in front of the sockets for
    /// frames arriving on this interface as port `fast.1`.
    pub fn open_with(
        ifname: &str,
        mode: Option<XdpMode>,
        config: XskConfig,
        max_queues: u32,
        fast: Option<(&fastpath::FastPath, u32)>,
        stamp: bool,
    ) -> io::Result<XdpInterface> {
        let ifindex = ifindex(ifname)?;
        let queues = rx_queues(ifname).min(max_queues.max(1));
        let max_len = config.max_frame();
        let redirect = match mode {
            Some(m) => XdpRedirect::attach(ifindex, queues, max_len, m, fast, stamp),
            None => XdpRedirect::attach(ifindex, queues, max_len, XdpMode::Native, fast, stamp)
                .or_else(|_| XdpRedirect::attach(ifindex, queues, max_len, XdpMode::Generic, fast, stamp)),
        }
        .map_err(|e| io::Error::new(e.kind(), format!("{ifname}: {e}")))?;
        let mut sockets = Vec::new();
        for q in 0..queues {
            let x = Xsk::open(ifindex, q, config).map_err(|e| io::Error::new(e.kind(), format!("{ifname}: {e}")))?;
            redirect
                .add_socket(q, x.fd())
                .map_err(|e| io::Error::new(e.kind(), format!("{ifname}: {e}")))?;
            sockets.push(x);
        }
        Ok(XdpInterface {
            name: ifname.to_string(),
            ifindex,
            sockets,
            redirect,
        })
    }

    pub fn mode(&self) -> XdpMode {
        self.redirect.mode()
    }

    /// See `XdpRedirect::vlan_outside_frame`.
    pub fn vlan_outside_frame(&self) -> Result<(), &str> {
        self.redirect.vlan_outside_frame()
    }
}
