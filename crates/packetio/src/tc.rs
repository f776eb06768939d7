//! Test instruments on the traffic-control hook (tcx): small eBPF programs
//! attached to a host's interface to produce frames the way other kernels
//! and drivers present them. `VlanTagOutOfBand` gives every frame leaving
//! an interface a VLAN tag held beside the frame (the skb's accelerated
//! tag), as a host's VLAN device on a veth does; an XDP program at the far
//! end then sees the frame without its tag. The kernels these tests run on
//! may lack VLAN devices (8021q), so this is how the case is made. The
//! program is `bpf/vlan_tag.bpf.c`.

use crate::objects;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// Every frame sent out of one interface carries a VLAN tag outside its
/// bytes while this lives.
pub struct VlanTagOutOfBand {
    _obj: libbpf_rs::Object,
    _link: OwnedFd,
}

impl VlanTagOutOfBand {
    /// Tags frames leaving `ifindex` with `vid` (TPID 0x8100, priority 0).
    pub fn attach(ifindex: u32, vid: u16) -> io::Result<VlanTagOutOfBand> {
        let mut open = objects::open(objects::VLAN_TAG, "sdnlab_vlan_tag")?;
        objects::set_rodata(&mut open, objects::VLAN_TAG, &[("vid", &vid.to_ne_bytes())])?;
        let obj = objects::load(open, "loading the VLAN-tagging tc program")?;
        let link = objects::link(
            objects::prog(&obj, "sdnlab_vlan_tag")?.as_fd(),
            ifindex,
            libbpf_sys::BPF_TCX_EGRESS,
            0,
            "attaching the VLAN-tagging tc program (tcx needs Linux 6.6)",
        )?;
        Ok(VlanTagOutOfBand { _obj: obj, _link: link })
    }
}
