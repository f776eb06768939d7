//! AF_XDP for sdnlab: sockets with their UMEM and rings (`xsk`), the XDP
//! program that steers an interface's frames into them (`bpf`), and
//! `XdpInterface`, which puts the two together for every receive queue of
//! one interface. Used by the switch's AF_XDP ports and by the traffic
//! generator. Needs root (or CAP_NET_RAW, CAP_BPF and CAP_NET_ADMIN).

pub mod bpf;
pub mod btf;
pub mod fastpath;
pub mod live;
pub mod netdev;
pub mod tc;
pub mod xsk;

pub use bpf::{XdpMode, XdpRedirect};
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

/// How many receive queues `ifname` has (sysfs; 1 if unreadable).
pub fn rx_queues(ifname: &str) -> u32 {
    std::fs::read_dir(format!("/sys/class/net/{ifname}/queues"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
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
        XdpInterface::open_with(ifname, mode, config, max_queues, None)
    }

    /// As `open`, with the switch's fast path in front of the sockets for
    /// frames arriving on this interface as port `fast.1`.
    pub fn open_with(
        ifname: &str,
        mode: Option<XdpMode>,
        config: XskConfig,
        max_queues: u32,
        fast: Option<(&fastpath::FastPath, u32)>,
    ) -> io::Result<XdpInterface> {
        let ifindex = ifindex(ifname)?;
        let queues = rx_queues(ifname).min(max_queues.max(1));
        let max_len = config.max_frame();
        let redirect = match mode {
            Some(m) => XdpRedirect::attach(ifindex, queues, max_len, m, fast),
            None => XdpRedirect::attach(ifindex, queues, max_len, XdpMode::Native, fast)
                .or_else(|_| XdpRedirect::attach(ifindex, queues, max_len, XdpMode::Generic, fast)),
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
