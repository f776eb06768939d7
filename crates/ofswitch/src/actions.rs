//! Actions: OpenFlow 1.3 actions checked and compiled into `Act`, and the
//! header rewrites they make on a frame, with IPv4 and transport checksums
//! kept right (incrementally, RFC 1624), also for frames whose transport
//! checksum the sender left for offload ("partial": the field holds the
//! pseudo-header sum, so only pseudo-header changes touch it).

use crate::key::{self, Key, Layout};
use crate::matching;
use ofwire::error::BadActionCode;
use ofwire::oxm::{field, Oxm, OFPVID_PRESENT};
use ofwire::v13::Action;
use ofwire::ErrorCode;

/// A set_field, ready to apply: the field and its value bytes (full width).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldWrite {
    pub field: u8,
    pub value: [u8; 16],
    pub len: u8,
}

impl FieldWrite {
    pub fn bytes(&self) -> &[u8] {
        &self.value[..self.len as usize]
    }
}

/// A compiled action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Act {
    Output {
        port: u32,
        max_len: u16,
    },
    Group(u32),
    SetField(FieldWrite),
    PushVlan(u16),
    PopVlan,
    DecNwTtl,
    SetNwTtl(u8),
    /// SET_QUEUE: accepted; this switch has one queue per port.
    SetQueue(u32),
    /// OpenFlow 1.0's SET_VLAN_VID: set the VLAN id, pushing a tag first
    /// if the frame has none (1.3's set_field leaves untagged frames alone).
    SetVlanOrPush(u16),
}

/// sdnlab's private experimenter id, for actions only it defines (carried
/// in 1.3 form when a 1.0 action has no 1.3 equivalent).
pub const SDNLAB_EXPERIMENTER: u32 = 0x005d_1a00;

/// The experimenter action standing for 1.0's SET_VLAN_VID.
pub fn set_vlan_or_push(vid: u16) -> Action {
    let mut data = vec![0u8; 8];
    data[..2].copy_from_slice(&(vid & 0x0fff).to_be_bytes());
    Action::Experimenter {
        experimenter: SDNLAB_EXPERIMENTER,
        data: ofwire::Bytes(data),
    }
}

/// The VLAN id of a `set_vlan_or_push` action.
pub fn vlan_or_push_vid(a: &Action) -> Option<u16> {
    match a {
        Action::Experimenter { experimenter, data } if *experimenter == SDNLAB_EXPERIMENTER && data.0.len() >= 2 => {
            Some(u16::from_be_bytes([data.0[0], data.0[1]]) & 0x0fff)
        }
        _ => None,
    }
}

fn bad(c: BadActionCode) -> ErrorCode {
    ErrorCode::BadAction(c)
}

/// Fields set_field may write.
fn settable(f: u8) -> bool {
    use field::*;
    matches!(
        f,
        ETH_DST
            | ETH_SRC
            | VLAN_VID
            | VLAN_PCP
            | IP_DSCP
            | IP_ECN
            | IPV4_SRC
            | IPV4_DST
            | TCP_SRC
            | TCP_DST
            | UDP_SRC
            | UDP_DST
            | SCTP_SRC
            | SCTP_DST
            | ICMPV4_TYPE
            | ICMPV4_CODE
            | ARP_OP
            | ARP_SPA
            | ARP_TPA
            | ARP_SHA
            | ARP_THA
            | IPV6_SRC
            | IPV6_DST
            | IPV6_FLABEL
            | ICMPV6_TYPE
            | ICMPV6_CODE
            | IPV6_ND_TARGET
            | IPV6_ND_SLL
            | IPV6_ND_TLL
    )
}

/// Checks one action list and compiles it. `valid_port` says whether a
/// port number is one of the switch's ports. With `known` (what the
/// flow's match says about the packet), every set_field must find its
/// field's prerequisites there or in an earlier action (a pushed VLAN
/// tag), as OpenFlow 1.3 section 7.2.5 asks: MATCH_INCONSISTENT if not.
/// Group buckets and packet-outs have no match and are not checked.
pub fn compile(
    actions: &[Action],
    valid_port: &dyn Fn(u32) -> bool,
    known: Option<ofwire::oxm::Known>,
) -> Result<Vec<Act>, ErrorCode> {
    use ofwire::v13::port;
    let mut out = Vec::with_capacity(actions.len());
    let mut known = known;
    for a in actions {
        if let Some(k) = known.as_mut() {
            match a {
                Action::SetField(o)
                    if o.class() == ofwire::oxm::OFPXMC_OPENFLOW_BASIC && k.allows(o.field()).is_err() =>
                {
                    return Err(bad(BadActionCode::MatchInconsistent));
                }
                Action::PushVlan(_) => k.vlan_tagged = true,
                Action::PopVlan => k.vlan_tagged = false,
                a @ Action::Experimenter { .. } if vlan_or_push_vid(a).is_some() => k.vlan_tagged = true,
                _ => {}
            }
        }
        out.push(match a {
            Action::Output { port: p, max_len } => {
                let ok = match *p {
                    port::IN_PORT | port::FLOOD | port::ALL | port::CONTROLLER | port::LOCAL | port::TABLE => true,
                    port::NORMAL | port::ANY => false,
                    p if p == 0 || p > port::MAX => false,
                    p => valid_port(p),
                };
                if !ok {
                    return Err(bad(BadActionCode::BadOutPort));
                }
                Act::Output {
                    port: *p,
                    max_len: *max_len,
                }
            }
            Action::Group(g) => Act::Group(*g),
            Action::SetField(o) => Act::SetField(field_write(o)?),
            Action::PushVlan(t) => {
                if *t != key::ETH_TYPE_VLAN && *t != key::ETH_TYPE_QINQ {
                    return Err(bad(BadActionCode::BadArgument));
                }
                Act::PushVlan(*t)
            }
            Action::PopVlan => Act::PopVlan,
            Action::DecNwTtl => Act::DecNwTtl,
            Action::SetNwTtl(t) => Act::SetNwTtl(*t),
            Action::SetQueue(q) => Act::SetQueue(*q),
            a @ Action::Experimenter { experimenter, .. } => match vlan_or_push_vid(a) {
                Some(vid) => Act::SetVlanOrPush(vid),
                None if *experimenter == SDNLAB_EXPERIMENTER => return Err(bad(BadActionCode::BadExpType)),
                None => return Err(bad(BadActionCode::BadExperimenter)),
            },
            _ => return Err(bad(BadActionCode::BadType)),
        });
    }
    Ok(out)
}

fn field_write(o: &Oxm) -> Result<FieldWrite, ErrorCode> {
    if o.class() != ofwire::oxm::OFPXMC_OPENFLOW_BASIC || !settable(o.field()) {
        return Err(bad(BadActionCode::BadSetType));
    }
    if o.has_mask() {
        return Err(bad(BadActionCode::BadSetArgument));
    }
    let (v, _) = matching::value_and_mask(o).ok_or(bad(BadActionCode::BadSetLen))?;
    let mut value = [0u8; 16];
    value[..v.len()].copy_from_slice(&v);
    Ok(FieldWrite {
        field: o.field(),
        value,
        len: v.len() as u8,
    })
}

pub use ofwire::vnet::VnetHdr;

/// A frame in flight, with the key and layout of its current headers.
#[derive(Clone, Debug)]
pub struct Packet {
    pub data: Vec<u8>,
    pub key: Key,
    pub layout: Layout,
    pub vnet: VnetHdr,
}

impl Packet {
    pub fn new(data: Vec<u8>, in_port: u32) -> Packet {
        Packet::with_vnet(data, in_port, VnetHdr::default())
    }

    pub fn with_vnet(data: Vec<u8>, in_port: u32, vnet: VnetHdr) -> Packet {
        let (key, layout) = key::parse(&data, in_port, 0);
        Packet {
            data,
            key,
            layout,
            vnet,
        }
    }

    fn reparse(&mut self) {
        let metadata = u64::from_be_bytes(self.key.0[8..16].try_into().unwrap());
        let (k, l) = key::parse(&self.data, self.key.in_port(), metadata);
        self.key = k;
        self.layout = l;
    }
}

/// One's-complement sum of 16-bit words.
fn sum16(b: &[u8]) -> u32 {
    let mut s = 0u32;
    let mut c = b.chunks_exact(2);
    for w in &mut c {
        s += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [x] = c.remainder() {
        s += (*x as u32) << 8;
    }
    s
}

fn fold(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// RFC 1624 eqn. 3: the checksum after words `old` became `new`.
fn csum_replace(check: u16, old: &[u8], new: &[u8]) -> u16 {
    let s = (!check) as u32 + fold(!fold(sum16(old)) as u32) as u32 + sum16(new);
    !fold(s)
}

/// Which checksums cover a rewritten range.
#[derive(Clone, Copy)]
struct Covers {
    ipv4_header: bool,
    /// The transport checksum, and whether the bytes are in its
    /// pseudo-header (addresses) rather than in the transport header.
    l4: bool,
    pseudo: bool,
}

impl Packet {
    /// The frame as a receiver would see it: a transport checksum the
    /// sender left to offload ("partial") is completed. The controller gets
    /// the bytes without the vnet header's hints, and a frame it sends back
    /// out in a PACKET_OUT would otherwise carry a checksum nobody finishes.
    pub fn data_with_checksum(&self) -> Vec<u8> {
        let mut d = self.data.clone();
        if self.vnet.checksum_partial() {
            let start = self.vnet.csum_start as usize;
            let at = start + self.vnet.csum_offset as usize;
            if at + 2 <= d.len() {
                let mut c = !fold(sum16(&d[start..]));
                if c == 0 && self.vnet.csum_offset == 6 {
                    c = 0xffff; // UDP sends a zero sum as all ones
                }
                d[at..at + 2].copy_from_slice(&c.to_be_bytes());
            }
        }
        d
    }

    /// Offset of the transport checksum field, if the frame has one that
    /// is in use (UDP over IPv4 may leave it zero).
    fn l4_check_offset(&self) -> Option<usize> {
        let l4 = self.layout.l4? as usize;
        let off = match self.key.ip_proto() {
            key::PROTO_TCP => l4 + 16,
            key::PROTO_UDP => l4 + 6,
            key::PROTO_ICMP | key::PROTO_ICMPV6 => l4 + 2,
            _ => return None,
        };
        if off + 2 > self.data.len() {
            return None;
        }
        let v = u16::from_be_bytes([self.data[off], self.data[off + 1]]);
        if self.key.ip_proto() == key::PROTO_UDP && v == 0 && self.key.eth_type() == key::ETH_TYPE_IPV4 {
            return None;
        }
        Some(off)
    }

    /// Writes `new` at `off`, fixing the checksums in `covers`.
    fn rewrite(&mut self, off: usize, new: &[u8], covers: Covers) {
        if off + new.len() > self.data.len() {
            return;
        }
        // Checksummed headers start at even offsets here, so an even-aligned
        // window around the change is made of whole 16-bit words.
        let start = off & !1;
        let end = (off + new.len() + 1) & !1;
        let end = end.min(self.data.len());
        let mut old = [0u8; 20];
        let n = end - start;
        old[..n].copy_from_slice(&self.data[start..end]);
        self.data[off..off + new.len()].copy_from_slice(new);
        let (old, new) = (&old[..n], &self.data[start..end].to_vec()[..]);
        if covers.ipv4_header {
            if let Some(l3) = self.layout.l3 {
                let c = l3 as usize + 10;
                let check = u16::from_be_bytes([self.data[c], self.data[c + 1]]);
                self.data[c..c + 2].copy_from_slice(&csum_replace(check, old, new).to_be_bytes());
            }
        }
        if covers.l4 {
            let partial = self.vnet.checksum_partial();
            if partial && !covers.pseudo {
                // The offload will sum the transport header itself.
                return;
            }
            if let Some(c) = self.l4_check_offset() {
                let check = u16::from_be_bytes([self.data[c], self.data[c + 1]]);
                let mut v = if partial {
                    !csum_replace(!check, old, new)
                } else {
                    csum_replace(check, old, new)
                };
                if v == 0 && self.key.ip_proto() == key::PROTO_UDP && !partial {
                    v = 0xffff;
                }
                self.data[c..c + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
    }

    /// Applies a set_field. Fields the frame does not have are left alone
    /// (the match's prerequisites normally rule that out).
    pub fn set_field(&mut self, w: &FieldWrite) {
        use field::*;
        let v = w.bytes();
        let l3 = self.layout.l3.map(|x| x as usize);
        let l4 = self.layout.l4.map(|x| x as usize);
        let ty = self.key.eth_type();
        let is4 = ty == key::ETH_TYPE_IPV4;
        let is6 = ty == key::ETH_TYPE_IPV6;
        let none = Covers {
            ipv4_header: false,
            l4: false,
            pseudo: false,
        };
        let l4_only = Covers {
            ipv4_header: false,
            l4: true,
            pseudo: false,
        };
        let pseudo = Covers {
            ipv4_header: is4,
            l4: true,
            pseudo: true,
        };
        match w.field {
            ETH_DST => self.rewrite(0, v, none),
            ETH_SRC => self.rewrite(6, v, none),
            VLAN_VID => {
                if let Some(t) = self.layout.vlan {
                    let t = t as usize;
                    let vid = u16::from_be_bytes([v[0], v[1]]) & 0x0fff;
                    let tci = u16::from_be_bytes([self.data[t], self.data[t + 1]]) & 0xf000 | vid;
                    self.rewrite(t, &tci.to_be_bytes(), none);
                }
            }
            VLAN_PCP => {
                if let Some(t) = self.layout.vlan {
                    let t = t as usize;
                    self.data[t] = (self.data[t] & 0x1f) | ((v[0] & 7) << 5);
                }
            }
            IP_DSCP | IP_ECN => self.set_tos(w.field, v[0], l3, is4, is6),
            IPV4_SRC if is4 => {
                if let Some(l3) = l3 {
                    self.rewrite(l3 + 12, v, pseudo)
                }
            }
            IPV4_DST if is4 => {
                if let Some(l3) = l3 {
                    self.rewrite(l3 + 16, v, pseudo)
                }
            }
            IPV6_SRC if is6 => {
                if let Some(l3) = l3 {
                    self.rewrite(l3 + 8, v, pseudo)
                }
            }
            IPV6_DST if is6 => {
                if let Some(l3) = l3 {
                    self.rewrite(l3 + 24, v, pseudo)
                }
            }
            IPV6_FLABEL if is6 => {
                if let Some(l3) = l3 {
                    let fl = u32::from_be_bytes([v[0], v[1], v[2], v[3]]) & 0xfffff;
                    self.data[l3 + 1] = (self.data[l3 + 1] & 0xf0) | (fl >> 16) as u8;
                    self.data[l3 + 2] = (fl >> 8) as u8;
                    self.data[l3 + 3] = fl as u8;
                }
            }
            TCP_SRC | UDP_SRC | SCTP_SRC => {
                if let Some(l4) = l4 {
                    self.rewrite(l4, v, l4_only);
                    self.fix_sctp(l4);
                }
            }
            TCP_DST | UDP_DST | SCTP_DST => {
                if let Some(l4) = l4 {
                    self.rewrite(l4 + 2, v, l4_only);
                    self.fix_sctp(l4);
                }
            }
            ICMPV4_TYPE | ICMPV6_TYPE => {
                if let Some(l4) = l4 {
                    self.rewrite(l4, v, l4_only)
                }
            }
            ICMPV4_CODE | ICMPV6_CODE => {
                if let Some(l4) = l4 {
                    self.rewrite(l4 + 1, v, l4_only)
                }
            }
            IPV6_ND_TARGET => {
                if let Some(l4) = l4 {
                    self.rewrite(l4 + 8, v, l4_only)
                }
            }
            IPV6_ND_SLL | IPV6_ND_TLL => {
                if let Some(l4) = l4 {
                    self.set_nd_lla(w.field == IPV6_ND_SLL, l4, v)
                }
            }
            ARP_OP | ARP_SHA | ARP_SPA | ARP_THA | ARP_TPA if ty == key::ETH_TYPE_ARP => {
                if let Some(l3) = l3 {
                    let off = match w.field {
                        ARP_OP => 6,
                        ARP_SHA => 8,
                        ARP_SPA => 14,
                        ARP_THA => 18,
                        _ => 24,
                    };
                    self.rewrite(l3 + off, v, none);
                }
            }
            _ => return,
        }
        self.key.set(w.field, v);
        if w.field == VLAN_VID && self.layout.vlan.is_some() {
            let vid = (u16::from_be_bytes([v[0], v[1]]) & 0x0fff) | OFPVID_PRESENT;
            self.key.set(VLAN_VID, &vid.to_be_bytes());
        }
    }

    /// IP_DSCP or IP_ECN: the six or two bits of IPv4's TOS (its header
    /// checksum fixed) or of IPv6's traffic class.
    #[inline]
    fn set_tos(&mut self, which: u8, v: u8, l3: Option<usize>, is4: bool, is6: bool) {
        match l3 {
            Some(l3) if is4 => {
                let tos = self.data[l3 + 1];
                let tos = if which == field::IP_DSCP {
                    (v << 2) | (tos & 3)
                } else {
                    (tos & 0xfc) | (v & 3)
                };
                self.rewrite(
                    l3 + 1,
                    &[tos],
                    Covers {
                        ipv4_header: true,
                        l4: false,
                        pseudo: false,
                    },
                );
            }
            Some(l3) if is6 => {
                let tc = (self.data[l3] << 4) | (self.data[l3 + 1] >> 4);
                let tc = if which == field::IP_DSCP {
                    (v << 2) | (tc & 3)
                } else {
                    (tc & 0xfc) | (v & 3)
                };
                self.data[l3] = (self.data[l3] & 0xf0) | (tc >> 4);
                self.data[l3 + 1] = (self.data[l3 + 1] & 0x0f) | (tc << 4);
            }
            _ => {}
        }
    }

    /// IPV6_ND_SLL or IPV6_ND_TLL: the link-layer address in the neighbour
    /// discovery message's source (or target) option, if it has one.
    #[inline]
    fn set_nd_lla(&mut self, source: bool, l4: usize, v: &[u8]) {
        let want = if source { 1 } else { 2 };
        let l4_only = Covers {
            ipv4_header: false,
            l4: true,
            pseudo: false,
        };
        let mut o = l4 + 24;
        while o + 8 <= self.data.len() {
            let (t, len) = (self.data[o], self.data[o + 1] as usize * 8);
            if len == 0 {
                break;
            }
            if t == want && len == 8 {
                self.rewrite(o + 2, v, l4_only);
                break;
            }
            o += len;
        }
    }

    fn fix_sctp(&mut self, l4: usize) {
        if self.key.ip_proto() != key::PROTO_SCTP || self.data.len() < l4 + 12 {
            return;
        }
        self.data[l4 + 8..l4 + 12].fill(0);
        let c = crc32c(&self.data[l4..]);
        self.data[l4 + 8..l4 + 12].copy_from_slice(&c.to_le_bytes());
    }

    /// Pushes a VLAN tag in front of the current outermost EtherType; the
    /// new tag copies VID and PCP from the tag it covers, if any.
    pub fn push_vlan(&mut self, tpid: u16) {
        if self.data.len() < 14 {
            return;
        }
        let tci = match self.layout.vlan {
            Some(t) => u16::from_be_bytes([self.data[t as usize], self.data[t as usize + 1]]),
            None => 0,
        };
        let mut tag = [0u8; 4];
        tag[..2].copy_from_slice(&tpid.to_be_bytes());
        tag[2..].copy_from_slice(&tci.to_be_bytes());
        self.data.splice(12..12, tag);
        self.vnet.shift(12, 4);
        self.reparse();
    }

    pub fn pop_vlan(&mut self) {
        if self.layout.vlan.is_none() || self.data.len() < 18 {
            return;
        }
        self.data.drain(12..16);
        self.vnet.shift(12, -4);
        self.reparse();
    }

    /// Decrements the IPv4 TTL / IPv6 hop limit. False when it was already
    /// 0 or 1 (the packet must be dropped, or sent to the controller as
    /// INVALID_TTL).
    pub fn dec_ttl(&mut self) -> bool {
        let Some(l3) = self.layout.l3.map(|x| x as usize) else {
            return true;
        };
        match self.key.eth_type() {
            key::ETH_TYPE_IPV4 => {
                let ttl = self.data[l3 + 8];
                if ttl <= 1 {
                    return false;
                }
                self.rewrite(
                    l3 + 8,
                    &[ttl - 1],
                    Covers {
                        ipv4_header: true,
                        l4: false,
                        pseudo: false,
                    },
                );
                true
            }
            key::ETH_TYPE_IPV6 => {
                let hl = self.data[l3 + 7];
                if hl <= 1 {
                    return false;
                }
                self.data[l3 + 7] = hl - 1;
                true
            }
            _ => true,
        }
    }

    pub fn set_ttl(&mut self, ttl: u8) {
        let Some(l3) = self.layout.l3.map(|x| x as usize) else {
            return;
        };
        match self.key.eth_type() {
            key::ETH_TYPE_IPV4 => self.rewrite(
                l3 + 8,
                &[ttl],
                Covers {
                    ipv4_header: true,
                    l4: false,
                    pseudo: false,
                },
            ),
            key::ETH_TYPE_IPV6 => self.data[l3 + 7] = ttl,
            _ => {}
        }
    }
}

/// CRC-32C (Castagnoli), as SCTP's checksum.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_checksum_matches_a_full_recomputation() {
        let mut hdr = vec![0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        let full = |h: &[u8]| !fold(sum16(h));
        let c = full(&hdr);
        hdr[10..12].copy_from_slice(&c.to_be_bytes());
        let old = hdr[12..16].to_vec();
        hdr[12..16].copy_from_slice(&[192, 168, 7, 9]);
        let inc = csum_replace(c, &old, &hdr[12..16]);
        hdr[10..12].fill(0);
        assert_eq!(inc, full(&hdr));
    }

    #[test]
    fn a_partial_checksum_is_completed_for_the_controller() {
        use etherparse::{PacketBuilder, TcpHeader};
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 100], 64)
            .tcp(40000, 80, 7, 64240);
        let payload = b"GET / HTTP/1.1\r\n\r\n";
        let mut frame = Vec::new();
        b.write(&mut frame, payload).unwrap();
        let l4 = 14 + 20;
        let want = u16::from_be_bytes([frame[l4 + 16], frame[l4 + 17]]);
        // What a sender offloading the checksum hands over: the pseudo-header sum only.
        let ip = etherparse::Ipv4HeaderSlice::from_slice(&frame[14..])
            .unwrap()
            .to_header();
        let tcp = TcpHeader::from_slice(&frame[l4..]).unwrap().0;
        assert_eq!(tcp.calc_checksum_ipv4(&ip, payload).unwrap(), want);
        let len = (frame.len() - l4) as u32;
        let pseudo = fold(sum16(&frame[26..34]) + 6 + len);
        frame[l4 + 16..l4 + 18].copy_from_slice(&pseudo.to_be_bytes());
        let vnet = VnetHdr {
            flags: VnetHdr::NEEDS_CSUM,
            csum_start: l4 as u16,
            csum_offset: 16,
            ..Default::default()
        };
        let p = Packet::with_vnet(frame.clone(), 1, vnet);
        let done = p.data_with_checksum();
        assert_eq!(u16::from_be_bytes([done[l4 + 16], done[l4 + 17]]), want);
        assert_eq!(done[..l4 + 16], frame[..l4 + 16], "nothing else changes");
        // A frame with its checksum already done is left alone.
        assert_eq!(Packet::new(frame.clone(), 1).data_with_checksum(), frame);
    }

    #[test]
    fn crc32c_known_answer() {
        // RFC 3720 B.4: 32 bytes of zeros.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
    }
}
