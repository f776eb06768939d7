//! A patch cable in XDP: every frame that arrives on one interface leaves
//! by the other, redirected in the driver by a one-line program
//! through a two-slot DEVMAP, and the same the other way. No lookup, no
//! counters, no header read, no control plane: not a switch, but the
//! least any switch that forwards between these two interfaces in the
//! kernel can cost (one XDP run and one DEVMAP redirect a frame); the
//! program is `bpf/patch.bpf.c`. The switch benchmark uses it as the
//! floor a switch hop adds, beside the bare veth pair (no hop at all).
//!
//! The programs are attached through BPF links: dropping the `XdpPatch`
//! detaches them, and so does the process ending.

use crate::objects;
use crate::XdpMode;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// Two interfaces patched to each other; dropping it unpatches them.
pub struct XdpPatch {
    _obj: libbpf_rs::Object,
    _links: [OwnedFd; 2],
}

impl XdpPatch {
    /// Patches interfaces `a` and `b` (ifindexes) to each other in `mode`.
    /// A frame the kernel cannot hand to the other side (its slot gone,
    /// the peer of a veth without NAPI) is dropped and counted by the
    /// kernel as such, as a wire would lose it.
    pub fn attach(a: u32, b: u32, mode: XdpMode) -> io::Result<XdpPatch> {
        let obj = objects::load(
            objects::open(objects::PATCH, "sdnlab_patch")?,
            "loading the XDP patch (needs root or CAP_BPF)",
        )?;
        // Slot 0 leads out of `b`, slot 1 out of `a`.
        let what = "adding a port to the patch's DEVMAP";
        objects::update(&obj, "patch_ports", &0u32.to_ne_bytes(), &b.to_ne_bytes(), what)?;
        objects::update(&obj, "patch_ports", &1u32.to_ne_bytes(), &a.to_ne_bytes(), what)?;
        let links = [
            objects::attach_xdp(objects::prog(&obj, "sdnlab_patch_a")?.as_fd(), a, mode)?,
            objects::attach_xdp(objects::prog(&obj, "sdnlab_patch_b")?.as_fd(), b, mode)?,
        ];
        Ok(XdpPatch {
            _obj: obj,
            _links: links,
        })
    }
}
