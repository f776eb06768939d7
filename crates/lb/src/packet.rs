//! The few frames the `lb` app reads and writes itself: ARP (requests for
//! the VIP, answers to its health checks) and the first TCP segment of a
//! flow. Wire format only.

use ofwire::MacAddr;
use std::net::Ipv4Addr;

pub const ETH_IPV4: u16 = 0x0800;
pub const ETH_ARP: u16 = 0x0806;
pub const IPPROTO_TCP: u8 = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arp {
    pub op: u16,
    pub sha: MacAddr,
    pub spa: Ipv4Addr,
    pub tha: MacAddr,
    pub tpa: Ipv4Addr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tcp {
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    Arp(Arp),
    Tcp(Tcp),
    /// IPv4 that is not TCP (or a fragment after the first).
    OtherIpv4 {
        dst: Ipv4Addr,
    },
    Other,
}

fn mac(b: &[u8]) -> MacAddr {
    let mut m = [0u8; 6];
    m.copy_from_slice(&b[..6]);
    MacAddr(m)
}

fn ip(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

/// Reads an untagged Ethernet frame; anything short or odd is `Other`.
pub fn parse(data: &[u8]) -> Frame {
    if data.len() < 14 {
        return Frame::Other;
    }
    let ethertype = u16::from_be_bytes([data[12], data[13]]);
    let l3 = &data[14..];
    match ethertype {
        ETH_ARP if l3.len() >= 28 && l3[0..6] == [0, 1, 8, 0, 6, 4] => Frame::Arp(Arp {
            op: u16::from_be_bytes([l3[6], l3[7]]),
            sha: mac(&l3[8..]),
            spa: ip(&l3[14..]),
            tha: mac(&l3[18..]),
            tpa: ip(&l3[24..]),
        }),
        ETH_IPV4 if l3.len() >= 20 && l3[0] >> 4 == 4 => {
            let ihl = (l3[0] & 0x0f) as usize * 4;
            let dst = ip(&l3[16..]);
            let first_fragment = u16::from_be_bytes([l3[6], l3[7]]) & 0x1fff == 0;
            if l3[9] != IPPROTO_TCP || !first_fragment || ihl < 20 || l3.len() < ihl + 4 {
                return Frame::OtherIpv4 { dst };
            }
            Frame::Tcp(Tcp {
                dst_mac: mac(data),
                src_mac: mac(&data[6..]),
                src: ip(&l3[12..]),
                dst,
                sport: u16::from_be_bytes([l3[ihl], l3[ihl + 1]]),
                dport: u16::from_be_bytes([l3[ihl + 2], l3[ihl + 3]]),
            })
        }
        _ => Frame::Other,
    }
}

/// An Ethernet/IPv4 ARP frame (42 bytes; the switch pads it).
pub fn arp_frame(eth_dst: MacAddr, a: &Arp) -> Vec<u8> {
    let mut f = Vec::with_capacity(42);
    f.extend_from_slice(&eth_dst.0);
    f.extend_from_slice(&a.sha.0);
    f.extend_from_slice(&ETH_ARP.to_be_bytes());
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4]);
    f.extend_from_slice(&a.op.to_be_bytes());
    f.extend_from_slice(&a.sha.0);
    f.extend_from_slice(&a.spa.octets());
    f.extend_from_slice(&a.tha.0);
    f.extend_from_slice(&a.tpa.octets());
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arp_frames_read_back() {
        let a = Arp {
            op: 2,
            sha: MacAddr([2, 0, 0, 0, 1, 0]),
            spa: Ipv4Addr::new(10, 0, 0, 100),
            tha: MacAddr([2, 0, 0, 0, 0, 1]),
            tpa: Ipv4Addr::new(10, 0, 0, 1),
        };
        let f = arp_frame(a.tha, &a);
        assert_eq!(f.len(), 42);
        assert_eq!(parse(&f), Frame::Arp(a));
        assert_eq!(parse(&f[..41]), Frame::Other);
    }

    #[test]
    fn the_first_tcp_segment_gives_addresses_and_ports() {
        let mut f = vec![0u8; 14 + 24 + 20];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 1, 0]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[8, 0]);
        f[14] = 0x46; // a 24-byte header, with options
        f[14 + 9] = 6;
        f[14 + 12..14 + 16].copy_from_slice(&[10, 0, 0, 1]);
        f[14 + 16..14 + 20].copy_from_slice(&[10, 0, 0, 100]);
        f[38..40].copy_from_slice(&40000u16.to_be_bytes());
        f[40..42].copy_from_slice(&80u16.to_be_bytes());
        let Frame::Tcp(t) = parse(&f) else {
            panic!("{:?}", parse(&f))
        };
        assert_eq!(
            (t.src, t.dst, t.sport, t.dport),
            (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 100), 40000, 80)
        );
        assert_eq!(t.dst_mac, MacAddr([2, 0, 0, 0, 1, 0]));
        // A later fragment carries no ports.
        f[14 + 7] = 1;
        assert_eq!(
            parse(&f),
            Frame::OtherIpv4 {
                dst: Ipv4Addr::new(10, 0, 0, 100)
            }
        );
    }
}
