//! The XDP side of an AF_XDP port: the steering program
//! (`bpf/xsk.bpf.c`) with its XSKMAP, attached to the interface through a
//! BPF link. It redirects each frame to the socket of its receive queue,
//! frames of flows held in the switch's fast path out of their port in the
//! kernel, and only frames of at most `max_len` bytes; longer ones (GSO
//! super-frames, jumbo frames that would not fit a UMEM chunk) go on to the
//! kernel's stack, where the port's AF_PACKET socket takes them. The link
//! detaches the program when its descriptor closes, also when the process
//! dies.

use crate::objects;
use std::io;
use std::os::fd::{AsFd, OwnedFd, RawFd};

const BPF_F_XDP_DEV_BOUND_ONLY: u32 = 1 << 6;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Where the kernel runs the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (veth has it; frames skip skb allocation on receive).
    Native,
    /// In the generic receive path, after the skb exists (every interface).
    Generic,
}

impl XdpMode {
    pub(crate) fn flags(self) -> u32 {
        match self {
            XdpMode::Native => XDP_FLAGS_DRV_MODE,
            XdpMode::Generic => XDP_FLAGS_SKB_MODE,
        }
    }
}

impl std::fmt::Display for XdpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        })
    }
}

/// Bytes of metadata the steering program puts before a frame with its
/// receive time (CLOCK_MONOTONIC ns), when asked to stamp.
pub const RECEIVE_TIME_META: usize = 8;

/// Whether the running kernel has the kfunc that tells an XDP program the
/// VLAN tag held beside its frame (Linux 6.8), looked up once in its BTF.
fn kernel_has_vlan_tag_kfunc() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        libbpf_rs::btf::Btf::from_vmlinux()
            .ok()
            .and_then(|btf| {
                btf.type_by_name::<libbpf_rs::btf::types::Func<'_>>("bpf_xdp_metadata_rx_vlan_tag")
                    .map(|_| ())
            })
            .is_some()
    })
}

/// The steering program's object for `queues` receive queues of
/// interface `ifindex`, loaded and not attached: with `vlan_check`, only
/// the device-bound program that first asks the driver for a VLAN tag held
/// outside the frame; else only the plain one.
pub(crate) fn load_xsk(
    ifindex: u32,
    queues: u32,
    max_len: u32,
    fast: Option<(&crate::fastpath::FastPath, u32)>,
    stamp: bool,
    vlan_check: bool,
) -> io::Result<libbpf_rs::Object> {
    let bytes = objects::XSK;
    let mut open = objects::open(bytes, "sdnlab_xsk")?;
    let in_port = fast.map_or(0, |(_, p)| p);
    let (mask, seed) = fast.map_or((0, 0), |(fp, _)| fp.slot_mask_and_seed());
    objects::set_rodata(
        &mut open,
        bytes,
        &[
            ("in_port", &in_port.to_ne_bytes()),
            ("max_len", &max_len.to_ne_bytes()),
            ("stamp", &[stamp as u8]),
            ("fast", &[fast.is_some() as u8]),
            ("slot_mask", &mask.to_ne_bytes()),
            ("hash_seed", &seed.to_ne_bytes()),
        ],
    )?;
    let shared = fast.map(|(fp, _)| fp.maps());
    for mut m in open.maps_mut() {
        let name = m.name().to_string_lossy().into_owned();
        if name == "xsks" {
            m.set_max_entries(queues.max(1))
                .map_err(objects::error("sizing the XSKMAP"))?;
        }
        if let Some(fd) = shared
            .iter()
            .flatten()
            .find(|(n, _)| name == *n || (n.starts_with('.') && name.ends_with(n)))
            .map(|(_, fd)| *fd)
        {
            m.reuse_fd(fd)
                .map_err(objects::error("giving the program the fast path's maps"))?;
        }
    }
    for mut p in open.progs_mut() {
        let vlan = p.name() == "sdnlab_xsk_vlan";
        p.set_autoload(vlan == vlan_check);
        if vlan && vlan_check {
            p.set_ifindex(ifindex);
            p.set_flags(BPF_F_XDP_DEV_BOUND_ONLY);
        }
    }
    objects::load(open, "loading the XDP program (needs root or CAP_BPF)")
}

/// What the steering program costs on `frame` arriving on port `in_port`,
/// as the kernel times it: `repeat` runs through BPF_PROG_TEST_RUN (the
/// program alone: not attached, no socket, the frame in cache), their
/// mean time per run, and the action the program returned. With `fast`,
/// the frame's flow is looked up in that fast path. For the benches.
pub fn steering_cost(
    fast: Option<&crate::fastpath::FastPath>,
    in_port: u32,
    frame: &[u8],
    repeat: u32,
) -> io::Result<(std::time::Duration, u32)> {
    let obj = load_xsk(1, 1, 4096, fast.map(|f| (f, in_port)), false, false)?;
    let prog = obj
        .progs_mut()
        .find(|p| p.name() == "sdnlab_xsk")
        .ok_or_else(|| io::Error::other("the object has no sdnlab_xsk"))?;
    let input = libbpf_rs::ProgramInput {
        data_in: Some(frame),
        repeat,
        ..Default::default()
    };
    let out = prog
        .test_run(input)
        .map_err(objects::error("timing the steering program (needs root or CAP_BPF)"))?;
    Ok((out.duration, out.return_value))
}

/// The steering program (`bpf/xsk.bpf.c`) attached to one interface with
/// its XSKMAP; dropping it detaches the program.
pub struct XdpRedirect {
    obj: libbpf_rs::Object,
    _link: OwnedFd,
    mode: XdpMode,
    // Text on purpose: the verifier's reason, kept to be said when a VLAN frame is refused.
    vlan_outside_frame: Result<(), String>,
}

impl XdpRedirect {
    /// Loads the program for `queues` receive queues and attaches it to
    /// interface `ifindex` in `mode`; with `fast` = (the switch's fast
    /// path, this port's number), frames of a flow in the fast path leave
    /// in the kernel; with `stamp`, every frame carries its receive time
    /// in metadata (`RECEIVE_TIME_META`).
    pub fn attach(
        ifindex: u32,
        queues: u32,
        max_len: u32,
        mode: XdpMode,
        fast: Option<(&crate::fastpath::FastPath, u32)>,
        stamp: bool,
    ) -> io::Result<XdpRedirect> {
        let load = |vlan_check: bool| load_xsk(ifindex, queues, max_len, fast, stamp, vlan_check);
        // In the driver, a frame whose VLAN tag is held beside it (a veth
        // whose host sent it through a VLAN device; a NIC that strips
        // tags) would reach the socket or the fast path untagged: the
        // program first sends such frames to the stack, where the port's
        // AF_PACKET socket gets the tag with them. Generic XDP cannot ask.
        let checked = match (mode, kernel_has_vlan_tag_kfunc()) {
            (XdpMode::Native, true) => load(true).map_err(|e| e.to_string()),
            (XdpMode::Native, false) => Err("this kernel has no bpf_xdp_metadata_rx_vlan_tag (Linux 6.8)".into()),
            (XdpMode::Generic, _) => Err("generic XDP cannot see them".into()),
        };
        let (obj, prog, vlan_outside_frame) = match checked {
            Ok(obj) => (obj, "sdnlab_xsk_vlan", Ok(())),
            Err(why) => (load(false)?, "sdnlab_xsk", Err(why)),
        };
        let link = objects::attach_xdp(objects::prog(&obj, prog)?.as_fd(), ifindex, mode)?;
        Ok(XdpRedirect {
            obj,
            _link: link,
            mode,
            vlan_outside_frame,
        })
    }

    /// Steers receive queue `queue` to the AF_XDP socket `xsk`.
    pub fn add_socket(&self, queue: u32, xsk: RawFd) -> io::Result<()> {
        objects::update(
            &self.obj,
            "xsks",
            &queue.to_ne_bytes(),
            &(xsk as u32).to_ne_bytes(),
            "adding the socket to the XSKMAP",
        )
    }

    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// Ok if frames whose VLAN tag is held outside them are sent to the
    /// stack with it (native XDP on Linux 6.8 or later); if not, why: such
    /// frames then reach the socket without their tag.
    pub fn vlan_outside_frame(&self) -> Result<(), &str> {
        self.vlan_outside_frame.as_ref().map(|_| ()).map_err(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    /// The tests of the VLAN tag held beside a frame need the kfunc (Linux
    /// 6.8): on an older kernel they would pass without covering it.
    #[test]
    fn the_running_kernel_has_the_vlan_tag_kfunc() {
        assert!(super::kernel_has_vlan_tag_kfunc());
    }
}
