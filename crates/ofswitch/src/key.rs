//! The flow key: every header field a rule can match, extracted from a frame
//! once and laid out at fixed byte offsets, so a rule's match is a (value,
//! mask) pair of keys and matching is a word-wise AND and compare. Fields
//! that can never appear together share bytes, as in Open vSwitch: IPv4 and
//! ARP addresses, TCP/UDP/SCTP ports and ICMP type/code, ARP and ND link
//! addresses (a rule's prerequisites, checked by the wire library, keep them
//! apart).
//!
//! `parse` also records where the layers start (`Layout`), for the actions
//! that rewrite headers.

use ofwire::oxm::field;

/// Bytes in a key.
pub const KEY_LEN: usize = 120;
/// 64-bit words in a key.
pub const KEY_WORDS: usize = KEY_LEN / 8;

/// Where a basic OXM field lives in the key: (offset, width).
pub fn location(f: u8) -> Option<(usize, usize)> {
    use field::*;
    Some(match f {
        IN_PORT => (0, 4),
        ETH_TYPE => (4, 2),
        VLAN_VID => (6, 2),
        METADATA => (8, 8),
        ETH_DST => (16, 6),
        ETH_SRC => (22, 6),
        VLAN_PCP => (28, 1),
        IP_DSCP => (29, 1),
        IP_ECN => (30, 1),
        IP_PROTO => (31, 1),
        IPV4_SRC | ARP_SPA => (32, 4),
        IPV4_DST | ARP_TPA => (36, 4),
        TCP_SRC | UDP_SRC | SCTP_SRC | ICMPV4_TYPE | ICMPV6_TYPE => (40, 2),
        TCP_DST | UDP_DST | SCTP_DST | ICMPV4_CODE | ICMPV6_CODE => (42, 2),
        ARP_OP => (44, 2),
        IPV6_FLABEL => (48, 4),
        IN_PHY_PORT => (52, 4),
        ARP_SHA | IPV6_ND_SLL => (56, 6),
        ARP_THA | IPV6_ND_TLL => (64, 6),
        IPV6_SRC => (72, 16),
        IPV6_DST => (88, 16),
        IPV6_ND_TARGET => (104, 16),
        _ => return None,
    })
}

/// A flow key (or a mask over one).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct Key(pub [u8; KEY_LEN]);

impl Default for Key {
    fn default() -> Key {
        Key([0; KEY_LEN])
    }
}

impl std::hash::Hash for Key {
    /// One word for the hasher: the key's words through a multiply-add
    /// chain, then one folded multiply (the 128-bit product's halves
    /// xored). The hash tables index by the low bits, and multiplies only
    /// carry bits upward: without the fold, keys that differ only high in
    /// a word (an IPv4 destination's last bytes sit in bits 48-63 of
    /// theirs) all landed in a few buckets, and a million such rules made
    /// every FLOW_MOD a long probe of 120-byte compares.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        const K: u64 = 0xf135_7aea_2e62_a9c5;
        let mut acc = 0u64;
        for i in 0..KEY_WORDS {
            acc = acc.wrapping_add(self.word(i)).wrapping_mul(K);
        }
        let p = (acc as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h.write_u64((p as u64) ^ ((p >> 64) as u64));
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 && i % 8 == 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl Key {
    #[inline]
    pub fn word(&self, i: usize) -> u64 {
        u64::from_ne_bytes(self.0[i * 8..i * 8 + 8].try_into().unwrap())
    }

    #[inline]
    pub fn set_word(&mut self, i: usize, w: u64) {
        self.0[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
    }

    /// `self & mask`, word by word.
    #[inline]
    pub fn masked(&self, mask: &Key) -> Key {
        let mut out = Key::default();
        for i in 0..KEY_WORDS {
            out.set_word(i, self.word(i) & mask.word(i));
        }
        out
    }

    /// `self & mask` over the listed words only (the others stay zero).
    #[inline]
    pub fn masked_words(&self, mask: &Key, words: &[u8]) -> Key {
        let mut out = Key::default();
        for &i in words {
            let i = i as usize;
            out.set_word(i, self.word(i) & mask.word(i));
        }
        out
    }

    pub fn is_zero(&self) -> bool {
        (0..KEY_WORDS).all(|i| self.word(i) == 0)
    }

    /// Every bit set in `other` is set in `self`.
    pub fn covers(&self, other: &Key) -> bool {
        (0..KEY_WORDS).all(|i| self.word(i) & other.word(i) == other.word(i))
    }

    pub fn set(&mut self, f: u8, value: &[u8]) {
        if let Some((off, len)) = location(f) {
            let n = value.len().min(len);
            self.0[off + len - n..off + len].copy_from_slice(&value[value.len() - n..]);
        }
    }

    pub fn get(&self, f: u8) -> &[u8] {
        match location(f) {
            Some((off, len)) => &self.0[off..off + len],
            None => &[],
        }
    }

    pub fn u16_at(&self, off: usize) -> u16 {
        u16::from_be_bytes([self.0[off], self.0[off + 1]])
    }

    pub fn in_port(&self) -> u32 {
        u32::from_be_bytes(self.0[0..4].try_into().unwrap())
    }

    pub fn eth_type(&self) -> u16 {
        self.u16_at(4)
    }

    pub fn ip_proto(&self) -> u8 {
        self.0[31]
    }

    /// The VLAN_VID field: 0 when untagged, else OFPVID_PRESENT | vid.
    pub fn vlan_vid(&self) -> u16 {
        self.u16_at(6)
    }
}

/// Where the headers of a parsed frame start (byte offsets), for rewrites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Offset of the (innermost) VLAN tag's TCI, if tagged.
    pub vlan: Option<u16>,
    /// Offset of the EtherType that names the L3 protocol.
    pub eth_type: u16,
    /// Start of the L3 header (IPv4, IPv6, ARP), if any.
    pub l3: Option<u16>,
    /// Start of the L4 header (TCP, UDP, SCTP, ICMP), if any and not a
    /// later fragment.
    pub l4: Option<u16>,
}

pub const ETH_TYPE_IPV4: u16 = 0x0800;
pub const ETH_TYPE_IPV6: u16 = 0x86dd;
pub const ETH_TYPE_ARP: u16 = 0x0806;
pub const ETH_TYPE_VLAN: u16 = 0x8100;
pub const ETH_TYPE_QINQ: u16 = 0x88a8;
pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_SCTP: u8 = 132;
pub const PROTO_ICMPV6: u8 = 58;

fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(off)?, *b.get(off + 1)?]))
}

/// Extracts the key of `frame` arriving on `in_port`. Short or odd headers
/// leave the fields they would have filled at zero, as a switch must still
/// forward what it cannot parse.
pub fn parse(frame: &[u8], in_port: u32, metadata: u64) -> (Key, Layout) {
    let mut k = Key::default();
    let mut lay = Layout::default();
    k.0[0..4].copy_from_slice(&in_port.to_be_bytes());
    k.0[52..56].copy_from_slice(&in_port.to_be_bytes());
    k.0[8..16].copy_from_slice(&metadata.to_be_bytes());
    if frame.len() < 14 {
        return (k, lay);
    }
    k.0[16..22].copy_from_slice(&frame[0..6]);
    k.0[22..28].copy_from_slice(&frame[6..12]);
    let mut off = 12usize;
    let mut ty = be16(frame, off).unwrap_or(0);
    // The outermost tag is the one OpenFlow's VLAN fields see; further
    // tags are skipped to find the L3 type.
    let mut first_tag = true;
    while (ty == ETH_TYPE_VLAN || ty == ETH_TYPE_QINQ) && frame.len() >= off + 6 {
        let tci = be16(frame, off + 2).unwrap_or(0);
        if first_tag {
            let vid = (tci & 0x0fff) | ofwire::oxm::OFPVID_PRESENT;
            k.0[6..8].copy_from_slice(&vid.to_be_bytes());
            k.0[28] = (tci >> 13) as u8;
            lay.vlan = Some(off as u16 + 2);
            first_tag = false;
        }
        off += 4;
        ty = be16(frame, off).unwrap_or(0);
    }
    lay.eth_type = off as u16;
    k.0[4..6].copy_from_slice(&ty.to_be_bytes());
    let l3 = off + 2;
    match ty {
        ETH_TYPE_IPV4 => parse_ipv4(frame, l3, &mut k, &mut lay),
        ETH_TYPE_IPV6 => parse_ipv6(frame, l3, &mut k, &mut lay),
        ETH_TYPE_ARP => parse_arp(frame, l3, &mut k, &mut lay),
        _ => {}
    }
    (k, lay)
}

fn parse_ipv4(f: &[u8], l3: usize, k: &mut Key, lay: &mut Layout) {
    if f.len() < l3 + 20 || f[l3] >> 4 != 4 {
        return;
    }
    let ihl = (f[l3] & 0x0f) as usize * 4;
    if ihl < 20 || f.len() < l3 + ihl {
        return;
    }
    lay.l3 = Some(l3 as u16);
    k.0[29] = f[l3 + 1] >> 2;
    k.0[30] = f[l3 + 1] & 3;
    let proto = f[l3 + 9];
    k.0[31] = proto;
    k.0[32..40].copy_from_slice(&f[l3 + 12..l3 + 20]);
    let frag_offset = be16(f, l3 + 6).unwrap_or(0) & 0x1fff;
    if frag_offset == 0 {
        parse_l4(f, l3 + ihl, proto, k, lay);
    }
}

fn parse_ipv6(f: &[u8], l3: usize, k: &mut Key, lay: &mut Layout) {
    if f.len() < l3 + 40 || f[l3] >> 4 != 6 {
        return;
    }
    lay.l3 = Some(l3 as u16);
    let tc = (f[l3] << 4) | (f[l3 + 1] >> 4);
    k.0[29] = tc >> 2;
    k.0[30] = tc & 3;
    let flabel = u32::from_be_bytes([0, f[l3 + 1] & 0x0f, f[l3 + 2], f[l3 + 3]]);
    k.0[48..52].copy_from_slice(&flabel.to_be_bytes());
    k.0[72..104].copy_from_slice(&f[l3 + 8..l3 + 40]);
    // Skip the extension headers that carry no transport header of their
    // own (hop-by-hop, routing, destination options); a fragment header
    // ends the walk unless it is the first fragment.
    let mut next = f[l3 + 6];
    let mut off = l3 + 40;
    loop {
        match next {
            0 | 43 | 60 => {
                let (Some(&nh), Some(&len)) = (f.get(off), f.get(off + 1)) else {
                    return;
                };
                next = nh;
                off += (len as usize + 1) * 8;
            }
            44 => {
                let (Some(&nh), Some(fo)) = (f.get(off), be16(f, off + 2)) else {
                    return;
                };
                k.0[31] = nh;
                if fo & 0xfff8 != 0 {
                    return;
                }
                next = nh;
                off += 8;
            }
            _ => break,
        }
    }
    k.0[31] = next;
    parse_l4(f, off, next, k, lay);
}

fn parse_l4(f: &[u8], l4: usize, proto: u8, k: &mut Key, lay: &mut Layout) {
    match proto {
        PROTO_TCP | PROTO_UDP | PROTO_SCTP => {
            let min = match proto {
                PROTO_TCP => 20,
                PROTO_UDP => 8,
                _ => 12,
            };
            if f.len() >= l4 + min {
                k.0[40..44].copy_from_slice(&f[l4..l4 + 4]);
                lay.l4 = Some(l4 as u16);
            }
        }
        PROTO_ICMP | PROTO_ICMPV6 => {
            if f.len() >= l4 + 4 {
                k.0[41] = f[l4];
                k.0[43] = f[l4 + 1];
                lay.l4 = Some(l4 as u16);
            }
            // Neighbour solicitation / advertisement: target and the link
            // address option.
            if proto == PROTO_ICMPV6 && (f[l4..].first() == Some(&135) || f[l4..].first() == Some(&136)) {
                if f.len() < l4 + 24 {
                    return;
                }
                k.0[104..120].copy_from_slice(&f[l4 + 8..l4 + 24]);
                let mut o = l4 + 24;
                while o + 8 <= f.len() {
                    let (ty, len) = (f[o], f[o + 1] as usize * 8);
                    if len == 0 || o + len > f.len() {
                        break;
                    }
                    if len == 8 {
                        match (ty, f[l4]) {
                            (1, 135) => k.0[56..62].copy_from_slice(&f[o + 2..o + 8]),
                            (2, 136) => k.0[64..70].copy_from_slice(&f[o + 2..o + 8]),
                            _ => {}
                        }
                    }
                    o += len;
                }
            }
        }
        _ => {}
    }
}

fn parse_arp(f: &[u8], l3: usize, k: &mut Key, lay: &mut Layout) {
    // Ethernet/IPv4 ARP only (htype 1, ptype 0x0800, hlen 6, plen 4).
    if f.len() < l3 + 28
        || be16(f, l3) != Some(1)
        || be16(f, l3 + 2) != Some(0x0800)
        || f[l3 + 4] != 6
        || f[l3 + 5] != 4
    {
        return;
    }
    lay.l3 = Some(l3 as u16);
    let op = be16(f, l3 + 6).unwrap_or(0);
    // ARP_OP is 16 bits on the wire but OpenFlow 1.0 carried its low byte
    // in nw_proto; keep the full value at its own place.
    k.0[44..46].copy_from_slice(&op.to_be_bytes());
    k.0[56..62].copy_from_slice(&f[l3 + 8..l3 + 14]);
    k.0[32..36].copy_from_slice(&f[l3 + 14..l3 + 18]);
    k.0[64..70].copy_from_slice(&f[l3 + 18..l3 + 24]);
    k.0[36..40].copy_from_slice(&f[l3 + 24..l3 + 28]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_differ_high_in_a_word_spread_over_the_low_hash_bits() {
        use std::hash::BuildHasher;
        // 4,096 rules on IPv4 destinations 11.0.x.y: only bits 48-63 of
        // one word differ. The tables index by the low bits.
        let build = rustc_hash::FxBuildHasher;
        let low: std::collections::HashSet<u64> = (0..4096u32)
            .map(|i| {
                let mut k = Key::default();
                k.set(field::ETH_TYPE, &0x0800u16.to_be_bytes());
                k.set(field::IPV4_DST, &(0x0b00_0000 + i).to_be_bytes());
                build.hash_one(k) & 0xfff
            })
            .collect();
        // Random hashes would give about 2,590 distinct 12-bit values.
        assert!(low.len() > 2000, "only {} distinct low 12 bits", low.len());
    }

    #[test]
    fn fields_do_not_overlap_unless_exclusive() {
        use field::*;
        let mut owner = [None::<u8>; KEY_LEN];
        let shared = |a: u8, b: u8| {
            let groups: [&[u8]; 4] = [
                &[IPV4_SRC, ARP_SPA],
                &[IPV4_DST, ARP_TPA],
                &[
                    TCP_SRC,
                    UDP_SRC,
                    SCTP_SRC,
                    ICMPV4_TYPE,
                    ICMPV6_TYPE,
                    TCP_DST,
                    UDP_DST,
                    SCTP_DST,
                    ICMPV4_CODE,
                    ICMPV6_CODE,
                ],
                &[ARP_SHA, IPV6_ND_SLL, ARP_THA, IPV6_ND_TLL],
            ];
            groups.iter().any(|g| g.contains(&a) && g.contains(&b))
        };
        for f in 0..40u8 {
            let Some((off, len)) = location(f) else { continue };
            assert!(
                len >= field::WIDTH[f as usize] as usize
                    || f == ICMPV4_TYPE
                    || f == ICMPV4_CODE
                    || f == ICMPV6_TYPE
                    || f == ICMPV6_CODE
            );
            for (i, slot) in owner.iter_mut().enumerate().skip(off).take(len) {
                if let Some(o) = *slot {
                    assert!(
                        shared(o, f),
                        "{} and {} share byte {i}",
                        NAMES[o as usize],
                        NAMES[f as usize]
                    );
                }
                *slot = Some(f);
            }
        }
    }

    #[test]
    fn a_tagged_udp_frame_fills_every_layer() {
        let mut f = vec![0u8; 0];
        f.extend([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        f.extend([0x81, 0x00, 0xa0, 0x0a]); // pcp 5, vid 10
        f.extend([0x08, 0x00]);
        f.extend([0x45, 0xb9, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend([0x30, 0x39, 0x00, 0x35, 0, 12, 0, 0, 1, 2, 3, 4]);
        let (k, lay) = parse(&f, 3, 0);
        assert_eq!(k.in_port(), 3);
        assert_eq!(k.vlan_vid(), 0x1000 | 10);
        assert_eq!(k.get(field::VLAN_PCP), &[5]);
        assert_eq!(k.eth_type(), 0x0800);
        assert_eq!(k.get(field::IP_DSCP), &[0xb9 >> 2]);
        assert_eq!(k.get(field::IP_ECN), &[1]);
        assert_eq!(k.ip_proto(), 17);
        assert_eq!(k.get(field::IPV4_DST), &[10, 0, 0, 2]);
        assert_eq!(k.get(field::UDP_SRC), &12345u16.to_be_bytes());
        assert_eq!(k.get(field::UDP_DST), &53u16.to_be_bytes());
        assert_eq!(lay.vlan, Some(14));
        assert_eq!(lay.l3, Some(18));
        assert_eq!(lay.l4, Some(38));
    }

    #[test]
    fn truncated_frames_parse_without_panicking() {
        let f = [
            2u8, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6,
        ];
        for n in 0..f.len() {
            let _ = parse(&f[..n], 1, 0);
        }
    }
}
