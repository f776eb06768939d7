//! Test instruments on the traffic-control hook (tcx): small eBPF programs
//! attached to a host's interface to produce frames the way other kernels
//! and drivers present them. `VlanTagOutOfBand` gives every frame leaving
//! an interface a VLAN tag held beside the frame (the skb's accelerated
//! tag), as a host's VLAN device on a veth does; an XDP program at the far
//! end then sees the frame without its tag. The kernels these tests run on
//! may lack VLAN devices (8021q), so this is how the case is made.

use crate::bpf::{bpf_fd, insn, Attr, BPF_LINK_CREATE, BPF_PROG_LOAD};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

const BPF_PROG_TYPE_SCHED_CLS: u32 = 3;
const BPF_TCX_EGRESS: u32 = 47;
const BPF_FUNC_SKB_VLAN_PUSH: i32 = 18;
const TC_ACT_OK: i32 = 0;

/// Every frame sent out of one interface carries a VLAN tag outside its
/// bytes while this lives.
pub struct VlanTagOutOfBand {
    _prog: OwnedFd,
    _link: OwnedFd,
}

impl VlanTagOutOfBand {
    /// Tags frames leaving `ifindex` with `vid` (TPID 0x8100, priority 0).
    pub fn attach(ifindex: u32, vid: u16) -> io::Result<VlanTagOutOfBand> {
        const MOV_K: u8 = 0xb7;
        const CALL: u8 = 0x85;
        const EXIT: u8 = 0x95;
        let prog = [
            // r1 = skb (already); bpf_skb_vlan_push(skb, htons(0x8100), vid)
            insn(MOV_K, 2, 0, 0, i32::from(0x8100u16.to_be())),
            insn(MOV_K, 3, 0, 0, i32::from(vid & 0x0fff)),
            insn(CALL, 0, 0, 0, BPF_FUNC_SKB_VLAN_PUSH),
            insn(MOV_K, 0, 0, 0, TC_ACT_OK),
            insn(EXIT, 0, 0, 0, 0),
        ];
        let license = b"Dual MIT/GPL\0";
        let prog_fd = bpf_fd(
            BPF_PROG_LOAD,
            Attr::new()
                .u32(0, BPF_PROG_TYPE_SCHED_CLS)
                .u32(4, prog.len() as u32)
                .u64(8, prog.as_ptr() as u64)
                .u64(16, license.as_ptr() as u64),
            "loading the VLAN-tagging tc program",
        )?;
        let link = bpf_fd(
            BPF_LINK_CREATE,
            Attr::new()
                .u32(0, prog_fd.as_raw_fd() as u32)
                .u32(4, ifindex)
                .u32(8, BPF_TCX_EGRESS),
            "attaching the VLAN-tagging tc program (tcx needs Linux 6.6)",
        )?;
        Ok(VlanTagOutOfBand {
            _prog: prog_fd,
            _link: link,
        })
    }
}
