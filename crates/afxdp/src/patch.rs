//! A patch cable in XDP: every frame that arrives on one interface leaves
//! by the other, redirected in the driver by a three-instruction program
//! through a two-slot DEVMAP, and the same the other way. No lookup, no
//! counters, no header read, no control plane: not a switch, but the
//! least any switch that forwards between these two interfaces in the
//! kernel can cost (one XDP run and one DEVMAP redirect a frame). The
//! switch benchmark uses it as the floor a switch hop adds, beside the
//! bare veth pair (no hop at all).
//!
//! The programs are attached through BPF links: dropping the `XdpPatch`
//! detaches them, and so does the process ending.

use crate::bpf::{
    attach_xdp, bpf_fd, insn, load_xdp, map_update, Attr, BPF_FUNC_REDIRECT_MAP, BPF_MAP_CREATE, BPF_MAP_TYPE_DEVMAP,
    BPF_PSEUDO_MAP_FD, CALL, EXIT, LD_IMM64, MOV_K,
};
use crate::XdpMode;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

const XDP_DROP: i32 = 1;

/// Two interfaces patched to each other; dropping it unpatches them.
pub struct XdpPatch {
    _ports: OwnedFd,
    _links: [OwnedFd; 2],
}

impl XdpPatch {
    /// Patches interfaces `a` and `b` (ifindexes) to each other in `mode`.
    /// A frame the kernel cannot hand to the other side (its slot gone,
    /// the peer of a veth without NAPI) is dropped and counted by the
    /// kernel as such, as a wire would lose it.
    pub fn attach(a: u32, b: u32, mode: XdpMode) -> io::Result<XdpPatch> {
        let ports = bpf_fd(
            BPF_MAP_CREATE,
            Attr::new().u32(0, BPF_MAP_TYPE_DEVMAP).u32(4, 4).u32(8, 4).u32(12, 2),
            "creating the patch's DEVMAP (needs root or CAP_BPF)",
        )?;
        // Slot 0 leads out of `b`, slot 1 out of `a`.
        map_update(ports.as_raw_fd(), &0u32, &b, "adding a port to the patch's DEVMAP")?;
        map_update(ports.as_raw_fd(), &1u32, &a, "adding a port to the patch's DEVMAP")?;
        let link = |ifindex: u32, slot: i32| -> io::Result<OwnedFd> {
            let prog = [
                insn(LD_IMM64, 1, BPF_PSEUDO_MAP_FD, 0, ports.as_raw_fd()),
                insn(0, 0, 0, 0, 0),
                insn(MOV_K, 2, 0, 0, slot),
                insn(MOV_K, 3, 0, 0, XDP_DROP),
                insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
                insn(EXIT, 0, 0, 0, 0),
            ];
            let fd = load_xdp(&prog, b"sdnlab_patch", None)?;
            attach_xdp(&fd, ifindex, mode)
        };
        let links = [link(a, 0)?, link(b, 1)?];
        Ok(XdpPatch {
            _ports: ports,
            _links: links,
        })
    }
}
