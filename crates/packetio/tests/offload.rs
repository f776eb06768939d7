//! `offload_of`: frames whose TCP/UDP checksum field holds only the
//! pseudo-header sum (what a stack with checksum offload hands its device)
//! are recognised as checksum-partial with the right offsets, and finishing
//! them the way the kernel does gives etherparse's checksum; finished
//! frames are left alone.

use etherparse::PacketBuilder;
use packetio::port_xdp::offload_of;
use packetio::vnet::VnetHdr;

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn sum(b: &[u8]) -> u32 {
    b.chunks(2)
        .map(|w| u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0)))
        .sum()
}

/// Replaces the finished checksum at `at` by the pseudo-header sum, as a
/// stack with offload leaves it; returns the finished one.
fn make_partial(f: &mut [u8], at: usize, pseudo: u32) -> u16 {
    let done = u16::from_be_bytes([f[at], f[at + 1]]);
    f[at..at + 2].copy_from_slice(&fold(pseudo).to_be_bytes());
    done
}

/// What the kernel does with CHECKSUM_PARTIAL: sum from csum_start to the
/// end (the field included) and store the complement.
fn finish(f: &mut [u8], v: VnetHdr) -> u16 {
    let start = v.csum_start as usize;
    let c = !fold(sum(&f[start..]));
    f[start + v.csum_offset as usize..][..2].copy_from_slice(&c.to_be_bytes());
    c
}

fn tcp4(vlan: Option<u16>, payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let mut out = Vec::new();
    match vlan {
        Some(id) => b
            .single_vlan(id.try_into().unwrap())
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 5201, 7, 65535)
            .write(&mut out, payload)
            .unwrap(),
        None => b
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 5201, 7, 65535)
            .write(&mut out, payload)
            .unwrap(),
    }
    out
}

#[test]
fn tcp_over_ipv4_partial_is_recognised_and_finishes_right() {
    for (vlan, l3) in [(None, 14usize), (Some(100), 18)] {
        for len in [0usize, 1, 7, 100, 1400] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut f = tcp4(vlan, &payload);
            assert_eq!(offload_of(&f), VnetHdr::default(), "a finished frame is left alone");
            let l4 = l3 + 20;
            let l4len = (f.len() - l4) as u32;
            let pseudo = sum(&f[l3 + 12..l3 + 20]) + 6 + l4len;
            let done = make_partial(&mut f, l4 + 16, pseudo);
            let v = offload_of(&f);
            assert!(v.checksum_partial(), "vlan {vlan:?} len {len}");
            assert_eq!((v.csum_start as usize, v.csum_offset), (l4, 16));
            assert_eq!(finish(&mut f, v), done, "finished as etherparse computed it");
        }
    }
}

#[test]
fn udp_over_ipv6_partial_is_recognised_and_finishes_right() {
    let src = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let dst = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let mut f = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv6(src, dst, 64)
        .udp(5353, 9999)
        .write(&mut f, b"some payload of odd length")
        .unwrap();
    assert_eq!(offload_of(&f), VnetHdr::default());
    let l4 = 14 + 40;
    let l4len = (f.len() - l4) as u32;
    let pseudo = sum(&f[14 + 8..14 + 40]) + 17 + l4len;
    let done = make_partial(&mut f, l4 + 6, pseudo);
    let v = offload_of(&f);
    assert_eq!(
        (v.flags, v.csum_start as usize, v.csum_offset),
        (VnetHdr::NEEDS_CSUM, l4, 6)
    );
    assert_eq!(finish(&mut f, v), done);
}

#[test]
fn udp_without_checksum_fragments_and_other_protocols_are_left_alone() {
    let mut f = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(1, 2)
        .write(&mut f, b"x")
        .unwrap();
    f[14 + 20 + 6..14 + 20 + 8].copy_from_slice(&[0, 0]);
    assert_eq!(offload_of(&f), VnetHdr::default(), "UDP checksum 0 means none");
    let mut g = tcp4(None, b"abc");
    let l4len = (g.len() - 34) as u32;
    let pseudo = sum(&g[26..34]) + 6 + l4len;
    make_partial(&mut g, 34 + 16, pseudo);
    let mut frag = g.clone();
    frag[20] |= 0x20; // more fragments
    assert_eq!(offload_of(&frag), VnetHdr::default());
    let mut arp = g.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(offload_of(&arp), VnetHdr::default());
    assert_eq!(offload_of(&g[..40]), VnetHdr::default(), "truncated");
}
