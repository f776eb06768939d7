//! The virtio-net header AF_PACKET's PACKET_VNET_HDR puts before each
//! frame (and TAP devices with IFF_VNET_HDR): checksum and segmentation
//! work the kernel left to whoever sends the frame on.

/// The virtio-net header that AF_PACKET's PACKET_VNET_HDR adds to each
/// frame: how the kernel left checksum and segmentation to be done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub const LEN: usize = 10;
    pub const NEEDS_CSUM: u8 = 1;

    pub fn checksum_partial(&self) -> bool {
        self.flags & Self::NEEDS_CSUM != 0
    }

    /// Moves the offsets after `at` by `delta` bytes (a VLAN tag pushed or
    /// popped in front of them).
    pub fn shift(&mut self, at: usize, delta: isize) {
        if self.checksum_partial() && self.csum_start as usize >= at {
            self.csum_start = (self.csum_start as isize + delta) as u16;
        }
        if self.gso_type != 0 && self.hdr_len as usize >= at {
            self.hdr_len = (self.hdr_len as isize + delta) as u16;
        }
    }
}
