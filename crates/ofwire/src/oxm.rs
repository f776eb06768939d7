//! OpenFlow 1.3 OXM (OpenFlow Extensible Match) fields and `ofp_match`.
//!
//! Every OpenFlow-basic field (0..=39) is a typed `Oxm` variant, with a mask
//! where the specification allows one. Decoding checks each TLV's length
//! against the field's width, rejects masks on unmaskable fields, value bits
//! outside their mask, out-of-range values, duplicate fields and missing
//! prerequisites, each with the BAD_MATCH code the spec gives. Experimenter
//! (class 0xFFFF) and other classes (e.g. Nicira's NXM) are kept opaque.

use crate::codec::{align8, Put, Reader};
use crate::error::{BadMatchCode, DecodeError, ErrorCode};
use crate::types::{Bytes, MacAddr};
use std::net::{Ipv4Addr, Ipv6Addr};

pub const OFPXMC_NXM_0: u16 = 0x0000;
pub const OFPXMC_NXM_1: u16 = 0x0001;
pub const OFPXMC_OPENFLOW_BASIC: u16 = 0x8000;
pub const OFPXMC_EXPERIMENTER: u16 = 0xffff;

/// OFPMT_OXM, the only match type of 1.3.
pub const OFPMT_OXM: u16 = 1;
/// OFPVID_PRESENT: set in VLAN_VID when a VLAN tag is present.
pub const OFPVID_PRESENT: u16 = 0x1000;

/// OpenFlow-basic field numbers.
pub mod field {
    pub const IN_PORT: u8 = 0;
    pub const IN_PHY_PORT: u8 = 1;
    pub const METADATA: u8 = 2;
    pub const ETH_DST: u8 = 3;
    pub const ETH_SRC: u8 = 4;
    pub const ETH_TYPE: u8 = 5;
    pub const VLAN_VID: u8 = 6;
    pub const VLAN_PCP: u8 = 7;
    pub const IP_DSCP: u8 = 8;
    pub const IP_ECN: u8 = 9;
    pub const IP_PROTO: u8 = 10;
    pub const IPV4_SRC: u8 = 11;
    pub const IPV4_DST: u8 = 12;
    pub const TCP_SRC: u8 = 13;
    pub const TCP_DST: u8 = 14;
    pub const UDP_SRC: u8 = 15;
    pub const UDP_DST: u8 = 16;
    pub const SCTP_SRC: u8 = 17;
    pub const SCTP_DST: u8 = 18;
    pub const ICMPV4_TYPE: u8 = 19;
    pub const ICMPV4_CODE: u8 = 20;
    pub const ARP_OP: u8 = 21;
    pub const ARP_SPA: u8 = 22;
    pub const ARP_TPA: u8 = 23;
    pub const ARP_SHA: u8 = 24;
    pub const ARP_THA: u8 = 25;
    pub const IPV6_SRC: u8 = 26;
    pub const IPV6_DST: u8 = 27;
    pub const IPV6_FLABEL: u8 = 28;
    pub const ICMPV6_TYPE: u8 = 29;
    pub const ICMPV6_CODE: u8 = 30;
    pub const IPV6_ND_TARGET: u8 = 31;
    pub const IPV6_ND_SLL: u8 = 32;
    pub const IPV6_ND_TLL: u8 = 33;
    pub const MPLS_LABEL: u8 = 34;
    pub const MPLS_TC: u8 = 35;
    pub const MPLS_BOS: u8 = 36;
    pub const PBB_ISID: u8 = 37;
    pub const TUNNEL_ID: u8 = 38;
    pub const IPV6_EXTHDR: u8 = 39;

    /// Names as in the spec, without the OXM_OF_ prefix.
    pub const NAMES: [&str; 40] = [
        "IN_PORT",
        "IN_PHY_PORT",
        "METADATA",
        "ETH_DST",
        "ETH_SRC",
        "ETH_TYPE",
        "VLAN_VID",
        "VLAN_PCP",
        "IP_DSCP",
        "IP_ECN",
        "IP_PROTO",
        "IPV4_SRC",
        "IPV4_DST",
        "TCP_SRC",
        "TCP_DST",
        "UDP_SRC",
        "UDP_DST",
        "SCTP_SRC",
        "SCTP_DST",
        "ICMPV4_TYPE",
        "ICMPV4_CODE",
        "ARP_OP",
        "ARP_SPA",
        "ARP_TPA",
        "ARP_SHA",
        "ARP_THA",
        "IPV6_SRC",
        "IPV6_DST",
        "IPV6_FLABEL",
        "ICMPV6_TYPE",
        "ICMPV6_CODE",
        "IPV6_ND_TARGET",
        "IPV6_ND_SLL",
        "IPV6_ND_TLL",
        "MPLS_LABEL",
        "MPLS_TC",
        "MPLS_BOS",
        "PBB_ISID",
        "TUNNEL_ID",
        "IPV6_EXTHDR",
    ];

    /// Value width in bytes of each basic field.
    pub const WIDTH: [u8; 40] = [
        4, 4, 8, 6, 6, 2, 2, 1, 1, 1, 1, 4, 4, 2, 2, 2, 2, 2, 2, 1, 1, 2, 4, 4, 6, 6, 16, 16, 4, 1, 1, 16, 6, 6, 4, 1,
        1, 3, 8, 2,
    ];

    /// Whether the spec allows a mask on each basic field.
    pub fn maskable(f: u8) -> bool {
        matches!(
            f,
            METADATA
                | ETH_DST
                | ETH_SRC
                | VLAN_VID
                | IPV4_SRC
                | IPV4_DST
                | ARP_SPA
                | ARP_TPA
                | ARP_SHA
                | ARP_THA
                | IPV6_SRC
                | IPV6_DST
                | IPV6_FLABEL
                | PBB_ISID
                | TUNNEL_ID
                | IPV6_EXTHDR
        )
    }
}

/// One OXM TLV.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Oxm {
    InPort(u32),
    InPhyPort(u32),
    Metadata(u64, Option<u64>),
    EthDst(MacAddr, Option<MacAddr>),
    EthSrc(MacAddr, Option<MacAddr>),
    EthType(u16),
    /// VLAN id with OFPVID_PRESENT (0x1000) when tagged.
    VlanVid(u16, Option<u16>),
    VlanPcp(u8),
    IpDscp(u8),
    IpEcn(u8),
    IpProto(u8),
    Ipv4Src(Ipv4Addr, Option<Ipv4Addr>),
    Ipv4Dst(Ipv4Addr, Option<Ipv4Addr>),
    TcpSrc(u16),
    TcpDst(u16),
    UdpSrc(u16),
    UdpDst(u16),
    SctpSrc(u16),
    SctpDst(u16),
    Icmpv4Type(u8),
    Icmpv4Code(u8),
    ArpOp(u16),
    ArpSpa(Ipv4Addr, Option<Ipv4Addr>),
    ArpTpa(Ipv4Addr, Option<Ipv4Addr>),
    ArpSha(MacAddr, Option<MacAddr>),
    ArpTha(MacAddr, Option<MacAddr>),
    Ipv6Src(Ipv6Addr, Option<Ipv6Addr>),
    Ipv6Dst(Ipv6Addr, Option<Ipv6Addr>),
    Ipv6Flabel(u32, Option<u32>),
    Icmpv6Type(u8),
    Icmpv6Code(u8),
    Ipv6NdTarget(Ipv6Addr),
    Ipv6NdSll(MacAddr),
    Ipv6NdTll(MacAddr),
    MplsLabel(u32),
    MplsTc(u8),
    MplsBos(u8),
    /// 24-bit I-SID.
    PbbIsid(u32, Option<u32>),
    TunnelId(u64, Option<u64>),
    Ipv6Exthdr(u16, Option<u16>),
    /// Class 0xFFFF: experimenter id, then opaque value (and mask).
    Experimenter {
        field: u8,
        has_mask: bool,
        experimenter: u32,
        data: Bytes,
    },
    /// Any other class (Nicira NXM_0/NXM_1, packet registers, ...), opaque.
    Other {
        class: u16,
        field: u8,
        has_mask: bool,
        payload: Bytes,
    },
}

fn bad_match(code: BadMatchCode) -> ErrorCode {
    ErrorCode::BadMatch(code)
}

/// Big-endian integer of up to 8 bytes.
fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, &x| acc << 8 | x as u64)
}

fn mac(b: &[u8]) -> MacAddr {
    let mut m = [0u8; 6];
    m.copy_from_slice(b);
    MacAddr(m)
}

fn ipv6(b: &[u8]) -> Ipv6Addr {
    let mut m = [0u8; 16];
    m.copy_from_slice(b);
    Ipv6Addr::from(m)
}

impl Oxm {
    /// The OXM class.
    pub fn class(&self) -> u16 {
        match self {
            Oxm::Experimenter { .. } => OFPXMC_EXPERIMENTER,
            Oxm::Other { class, .. } => *class,
            _ => OFPXMC_OPENFLOW_BASIC,
        }
    }

    /// The field number within its class.
    pub fn field(&self) -> u8 {
        use field::*;
        match self {
            Oxm::InPort(_) => IN_PORT,
            Oxm::InPhyPort(_) => IN_PHY_PORT,
            Oxm::Metadata(..) => METADATA,
            Oxm::EthDst(..) => ETH_DST,
            Oxm::EthSrc(..) => ETH_SRC,
            Oxm::EthType(_) => ETH_TYPE,
            Oxm::VlanVid(..) => VLAN_VID,
            Oxm::VlanPcp(_) => VLAN_PCP,
            Oxm::IpDscp(_) => IP_DSCP,
            Oxm::IpEcn(_) => IP_ECN,
            Oxm::IpProto(_) => IP_PROTO,
            Oxm::Ipv4Src(..) => IPV4_SRC,
            Oxm::Ipv4Dst(..) => IPV4_DST,
            Oxm::TcpSrc(_) => TCP_SRC,
            Oxm::TcpDst(_) => TCP_DST,
            Oxm::UdpSrc(_) => UDP_SRC,
            Oxm::UdpDst(_) => UDP_DST,
            Oxm::SctpSrc(_) => SCTP_SRC,
            Oxm::SctpDst(_) => SCTP_DST,
            Oxm::Icmpv4Type(_) => ICMPV4_TYPE,
            Oxm::Icmpv4Code(_) => ICMPV4_CODE,
            Oxm::ArpOp(_) => ARP_OP,
            Oxm::ArpSpa(..) => ARP_SPA,
            Oxm::ArpTpa(..) => ARP_TPA,
            Oxm::ArpSha(..) => ARP_SHA,
            Oxm::ArpTha(..) => ARP_THA,
            Oxm::Ipv6Src(..) => IPV6_SRC,
            Oxm::Ipv6Dst(..) => IPV6_DST,
            Oxm::Ipv6Flabel(..) => IPV6_FLABEL,
            Oxm::Icmpv6Type(_) => ICMPV6_TYPE,
            Oxm::Icmpv6Code(_) => ICMPV6_CODE,
            Oxm::Ipv6NdTarget(_) => IPV6_ND_TARGET,
            Oxm::Ipv6NdSll(_) => IPV6_ND_SLL,
            Oxm::Ipv6NdTll(_) => IPV6_ND_TLL,
            Oxm::MplsLabel(_) => MPLS_LABEL,
            Oxm::MplsTc(_) => MPLS_TC,
            Oxm::MplsBos(_) => MPLS_BOS,
            Oxm::PbbIsid(..) => PBB_ISID,
            Oxm::TunnelId(..) => TUNNEL_ID,
            Oxm::Ipv6Exthdr(..) => IPV6_EXTHDR,
            Oxm::Experimenter { field, .. } | Oxm::Other { field, .. } => *field,
        }
    }

    /// Whether this TLV carries a mask.
    pub fn has_mask(&self) -> bool {
        let mut buf = [0u8; 32];
        self.basic_value(&mut buf).map(|(_, m)| m).unwrap_or(match self {
            Oxm::Experimenter { has_mask, .. } | Oxm::Other { has_mask, .. } => *has_mask,
            _ => false,
        })
    }

    /// Writes value then mask of a basic field into `buf`; returns
    /// (value width, has mask). `None` for experimenter and other classes.
    #[inline]
    fn basic_value(&self, buf: &mut [u8; 32]) -> Option<(usize, bool)> {
        fn put<const N: usize>(buf: &mut [u8; 32], v: [u8; N], m: Option<[u8; N]>) -> Option<(usize, bool)> {
            buf[..N].copy_from_slice(&v);
            if let Some(m) = m {
                buf[N..2 * N].copy_from_slice(&m);
            }
            Some((N, m.is_some()))
        }
        fn u24(v: u32) -> [u8; 3] {
            let b = v.to_be_bytes();
            [b[1], b[2], b[3]]
        }
        match *self {
            Oxm::InPort(v) | Oxm::InPhyPort(v) | Oxm::MplsLabel(v) => put(buf, v.to_be_bytes(), None),
            Oxm::Metadata(v, m) | Oxm::TunnelId(v, m) => put(buf, v.to_be_bytes(), m.map(u64::to_be_bytes)),
            Oxm::EthDst(v, m) | Oxm::EthSrc(v, m) | Oxm::ArpSha(v, m) | Oxm::ArpTha(v, m) => {
                put(buf, v.0, m.map(|m| m.0))
            }
            Oxm::EthType(v)
            | Oxm::TcpSrc(v)
            | Oxm::TcpDst(v)
            | Oxm::UdpSrc(v)
            | Oxm::UdpDst(v)
            | Oxm::SctpSrc(v)
            | Oxm::SctpDst(v)
            | Oxm::ArpOp(v) => put(buf, v.to_be_bytes(), None),
            Oxm::VlanVid(v, m) | Oxm::Ipv6Exthdr(v, m) => put(buf, v.to_be_bytes(), m.map(u16::to_be_bytes)),
            Oxm::VlanPcp(v)
            | Oxm::IpDscp(v)
            | Oxm::IpEcn(v)
            | Oxm::IpProto(v)
            | Oxm::Icmpv4Type(v)
            | Oxm::Icmpv4Code(v)
            | Oxm::Icmpv6Type(v)
            | Oxm::Icmpv6Code(v)
            | Oxm::MplsTc(v)
            | Oxm::MplsBos(v) => put(buf, [v], None),
            Oxm::Ipv4Src(v, m) | Oxm::Ipv4Dst(v, m) | Oxm::ArpSpa(v, m) | Oxm::ArpTpa(v, m) => {
                put(buf, v.octets(), m.map(|m| m.octets()))
            }
            Oxm::Ipv6Src(v, m) | Oxm::Ipv6Dst(v, m) => put(buf, v.octets(), m.map(|m| m.octets())),
            Oxm::Ipv6Flabel(v, m) => put(buf, v.to_be_bytes(), m.map(u32::to_be_bytes)),
            Oxm::Ipv6NdTarget(v) => put(buf, v.octets(), None),
            Oxm::Ipv6NdSll(v) | Oxm::Ipv6NdTll(v) => put(buf, v.0, None),
            Oxm::PbbIsid(v, m) => put(buf, u24(v), m.map(u24)),
            Oxm::Experimenter { .. } | Oxm::Other { .. } => None,
        }
    }

    /// Bytes this TLV takes on the wire (4-byte header included).
    pub fn wire_len(&self) -> usize {
        let mut buf = [0u8; 32];
        match self.basic_value(&mut buf) {
            Some((w, m)) => 4 + w * (1 + m as usize),
            None => match self {
                Oxm::Experimenter { data, .. } => 8 + data.len(),
                Oxm::Other { payload, .. } => 4 + payload.len(),
                _ => unreachable!("basic fields always have a value"),
            },
        }
    }

    /// Appends this TLV.
    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut buf = [0u8; 32];
        match self.basic_value(&mut buf) {
            Some((w, m)) => {
                let len = w * (1 + m as usize);
                out.put_u32(oxm_header(OFPXMC_OPENFLOW_BASIC, self.field(), m, len as u8));
                out.put_slice(&buf[..len]);
            }
            None => match self {
                Oxm::Experimenter {
                    field,
                    has_mask,
                    experimenter,
                    data,
                } => {
                    out.put_u32(oxm_header(
                        OFPXMC_EXPERIMENTER,
                        *field,
                        *has_mask,
                        (4 + data.len()) as u8,
                    ));
                    out.put_u32(*experimenter);
                    out.put_slice(&data.0);
                }
                Oxm::Other {
                    class,
                    field,
                    has_mask,
                    payload,
                } => {
                    out.put_u32(oxm_header(*class, *field, *has_mask, payload.len() as u8));
                    out.put_slice(&payload.0);
                }
                _ => {}
            },
        }
    }

    /// Decodes one TLV, checking length, mask and value rules.
    pub fn decode(r: &mut Reader) -> Result<Oxm, DecodeError> {
        let header = r.u32()?;
        let class = (header >> 16) as u16;
        let field = ((header >> 9) & 0x7f) as u8;
        let has_mask = header & 0x100 != 0;
        let len = (header & 0xff) as usize;
        let payload = r.bytes(len)?;
        match class {
            OFPXMC_OPENFLOW_BASIC => decode_basic(r, field, has_mask, payload),
            OFPXMC_EXPERIMENTER => {
                if len < 4 {
                    return Err(r.error(
                        bad_match(BadMatchCode::BadLen),
                        format_args!("experimenter OXM of length {len} has no room for its experimenter id"),
                    ));
                }
                Ok(Oxm::Experimenter {
                    field,
                    has_mask,
                    experimenter: be(&payload[..4]) as u32,
                    data: Bytes::from(&payload[4..]),
                })
            }
            _ => {
                if has_mask && !len.is_multiple_of(2) {
                    return Err(r.error(
                        bad_match(BadMatchCode::BadLen),
                        format_args!("masked OXM class {class:#06x} field {field} has odd length {len}"),
                    ));
                }
                Ok(Oxm::Other {
                    class,
                    field,
                    has_mask,
                    payload: Bytes::from(payload),
                })
            }
        }
    }
}

/// Builds a 32-bit OXM header.
#[inline]
pub const fn oxm_header(class: u16, field: u8, has_mask: bool, len: u8) -> u32 {
    (class as u32) << 16 | ((field as u32) & 0x7f) << 9 | (has_mask as u32) << 8 | len as u32
}

fn decode_basic(r: &Reader, f: u8, has_mask: bool, p: &[u8]) -> Result<Oxm, DecodeError> {
    use field::*;
    if f as usize >= WIDTH.len() {
        return Err(r.error(
            bad_match(BadMatchCode::BadField),
            format_args!("unknown OpenFlow-basic field {f}"),
        ));
    }
    let name = NAMES[f as usize];
    let w = WIDTH[f as usize] as usize;
    if has_mask && !maskable(f) {
        return Err(r.error(
            bad_match(BadMatchCode::BadMask),
            format_args!("{name} cannot be masked"),
        ));
    }
    let want = w * (1 + has_mask as usize);
    if p.len() != want {
        return Err(r.error(
            bad_match(BadMatchCode::BadLen),
            format_args!(
                "{name}{} must be {want} bytes, OXM length says {}",
                if has_mask { "/mask" } else { "" },
                p.len()
            ),
        ));
    }
    let (v, m) = p.split_at(w);
    let m = has_mask.then_some(m);
    if let Some(m) = m {
        if v.iter().zip(m).any(|(v, m)| v & !m != 0) {
            return Err(r.error(
                bad_match(BadMatchCode::BadWildcards),
                format_args!("{name} value has bits set outside its mask"),
            ));
        }
    }
    let range = |max: u64| -> Result<(), DecodeError> {
        let x = be(v);
        if x > max {
            return Err(r.error(
                bad_match(BadMatchCode::BadValue),
                format_args!("{name} value {x:#x} exceeds its maximum {max:#x}"),
            ));
        }
        Ok(())
    };
    let u = be(v);
    let mu = m.map(be);
    let ip4 = |b: &[u8]| Ipv4Addr::from(be(b) as u32);
    Ok(match f {
        IN_PORT => Oxm::InPort(u as u32),
        IN_PHY_PORT => Oxm::InPhyPort(u as u32),
        METADATA => Oxm::Metadata(u, mu),
        ETH_DST => Oxm::EthDst(mac(v), m.map(mac)),
        ETH_SRC => Oxm::EthSrc(mac(v), m.map(mac)),
        ETH_TYPE => Oxm::EthType(u as u16),
        VLAN_VID => {
            range(0x1fff)?;
            if let Some(mm) = mu {
                if mm > 0x1fff {
                    return Err(r.error(bad_match(BadMatchCode::BadMask), "VLAN_VID mask exceeds 13 bits"));
                }
            }
            Oxm::VlanVid(u as u16, mu.map(|x| x as u16))
        }
        VLAN_PCP => {
            range(7)?;
            Oxm::VlanPcp(u as u8)
        }
        IP_DSCP => {
            range(63)?;
            Oxm::IpDscp(u as u8)
        }
        IP_ECN => {
            range(3)?;
            Oxm::IpEcn(u as u8)
        }
        IP_PROTO => Oxm::IpProto(u as u8),
        IPV4_SRC => Oxm::Ipv4Src(ip4(v), m.map(ip4)),
        IPV4_DST => Oxm::Ipv4Dst(ip4(v), m.map(ip4)),
        TCP_SRC => Oxm::TcpSrc(u as u16),
        TCP_DST => Oxm::TcpDst(u as u16),
        UDP_SRC => Oxm::UdpSrc(u as u16),
        UDP_DST => Oxm::UdpDst(u as u16),
        SCTP_SRC => Oxm::SctpSrc(u as u16),
        SCTP_DST => Oxm::SctpDst(u as u16),
        ICMPV4_TYPE => Oxm::Icmpv4Type(u as u8),
        ICMPV4_CODE => Oxm::Icmpv4Code(u as u8),
        ARP_OP => Oxm::ArpOp(u as u16),
        ARP_SPA => Oxm::ArpSpa(ip4(v), m.map(ip4)),
        ARP_TPA => Oxm::ArpTpa(ip4(v), m.map(ip4)),
        ARP_SHA => Oxm::ArpSha(mac(v), m.map(mac)),
        ARP_THA => Oxm::ArpTha(mac(v), m.map(mac)),
        IPV6_SRC => Oxm::Ipv6Src(ipv6(v), m.map(ipv6)),
        IPV6_DST => Oxm::Ipv6Dst(ipv6(v), m.map(ipv6)),
        IPV6_FLABEL => {
            range(0xfffff)?;
            Oxm::Ipv6Flabel(u as u32, mu.map(|x| x as u32))
        }
        ICMPV6_TYPE => Oxm::Icmpv6Type(u as u8),
        ICMPV6_CODE => Oxm::Icmpv6Code(u as u8),
        IPV6_ND_TARGET => Oxm::Ipv6NdTarget(ipv6(v)),
        IPV6_ND_SLL => Oxm::Ipv6NdSll(mac(v)),
        IPV6_ND_TLL => Oxm::Ipv6NdTll(mac(v)),
        MPLS_LABEL => {
            range(0xfffff)?;
            Oxm::MplsLabel(u as u32)
        }
        MPLS_TC => {
            range(7)?;
            Oxm::MplsTc(u as u8)
        }
        MPLS_BOS => {
            range(1)?;
            Oxm::MplsBos(u as u8)
        }
        PBB_ISID => Oxm::PbbIsid(u as u32, mu.map(|x| x as u32)),
        TUNNEL_ID => Oxm::TunnelId(u, mu),
        IPV6_EXTHDR => {
            range(0x1ff)?;
            Oxm::Ipv6Exthdr(u as u16, mu.map(|x| x as u16))
        }
        _ => unreachable!("field number checked against WIDTH above"),
    })
}

/// `ofp_match` of 1.3: an ordered list of OXM TLVs.
#[derive(Clone, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub struct Match {
    pub fields: Vec<Oxm>,
}

impl Match {
    pub fn new(fields: Vec<Oxm>) -> Match {
        Match { fields }
    }

    /// The first basic field with number `f`.
    pub fn get(&self, f: u8) -> Option<&Oxm> {
        self.fields
            .iter()
            .find(|x| x.class() == OFPXMC_OPENFLOW_BASIC && x.field() == f)
    }

    pub fn in_port(&self) -> Option<u32> {
        match self.get(field::IN_PORT) {
            Some(Oxm::InPort(p)) => Some(*p),
            _ => None,
        }
    }

    /// Decodes an `ofp_match` including its padding.
    pub(crate) fn decode(r: &mut Reader) -> Result<Match, DecodeError> {
        let mut head = r.clone();
        let ty = head
            .u16()
            .map_err(|e| crate::v10::relabel(e, bad_match(BadMatchCode::BadLen)))?;
        let len = head
            .u16()
            .map_err(|e| crate::v10::relabel(e, bad_match(BadMatchCode::BadLen)))? as usize;
        if ty != OFPMT_OXM {
            return Err(r.error(
                bad_match(BadMatchCode::BadType),
                format_args!("match type {ty} is not OFPMT_OXM (1)"),
            ));
        }
        if len < 4 {
            return Err(r.error(
                bad_match(BadMatchCode::BadLen),
                format_args!("match length {len} is below 4"),
            ));
        }
        let mut m = r.sub_with(align8(len), bad_match(BadMatchCode::BadLen), "match")?;
        m.u32()?;
        let mut fr = m.sub(len - 4, "match field")?;
        m.pad(align8(len) - len)?;
        let mut fields = Vec::new();
        while !fr.is_empty() {
            fields.push(Oxm::decode(&mut fr)?);
        }
        check_fields(&fr, &fields)?;
        Ok(Match { fields })
    }

    /// Bytes on the wire, padding included.
    pub fn wire_len(&self) -> usize {
        align8(4 + self.fields.iter().map(Oxm::wire_len).sum::<usize>())
    }

    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_match_fields(&self.fields, out)
    }
}

/// Writes an `ofp_match` holding `fields`, padded to 8 bytes.
#[inline]
pub fn encode_match_fields(fields: &[Oxm], out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u16(OFPMT_OXM);
    out.put_u16(0);
    for f in fields {
        f.encode(out);
    }
    let len = (out.len() - start) as u16;
    out.patch_u16(start + 2, len);
    out.pad_to_8(start);
}

/// Duplicate fields and prerequisites (OpenFlow 1.3 section 7.2.3.6).
fn check_fields(r: &Reader, fields: &[Oxm]) -> Result<(), DecodeError> {
    use field::*;
    let mut seen: u64 = 0;
    for f in fields.iter().filter(|f| f.class() == OFPXMC_OPENFLOW_BASIC) {
        let bit = 1u64 << f.field();
        if seen & bit != 0 {
            return Err(r.error(
                bad_match(BadMatchCode::DupField),
                format_args!("{} appears twice", NAMES[f.field() as usize]),
            ));
        }
        seen |= bit;
    }
    let known = Known::of_match(fields);
    for f in fields.iter().filter(|f| f.class() == OFPXMC_OPENFLOW_BASIC) {
        if let Err(need) = known.allows(f.field()) {
            return Err(r.error(
                bad_match(BadMatchCode::BadPrereq),
                format_args!("{} needs {need} in the same match", NAMES[f.field() as usize]),
            ));
        }
    }
    Ok(())
}

/// What a match (and the actions applied so far) says about a packet,
/// as far as field prerequisites go (OpenFlow 1.3 section 7.2.3.6): a
/// match field, or a set_field action, needs the header it lives in.
#[derive(Clone, Copy, Debug, Default)]
pub struct Known {
    pub eth_type: Option<u16>,
    pub ip_proto: Option<u8>,
    pub icmpv6_type: Option<u8>,
    pub vlan_tagged: bool,
    pub in_port: bool,
}

impl Known {
    pub fn of_match(fields: &[Oxm]) -> Known {
        let mut k = Known::default();
        for f in fields {
            match f {
                Oxm::EthType(t) => k.eth_type = Some(*t),
                Oxm::IpProto(p) => k.ip_proto = Some(*p),
                Oxm::Icmpv6Type(t) => k.icmpv6_type = Some(*t),
                Oxm::VlanVid(v, _) if v & OFPVID_PRESENT != 0 => k.vlan_tagged = true,
                Oxm::InPort(_) => k.in_port = true,
                _ => {}
            }
        }
        k
    }

    /// Whether OpenFlow-basic field `field` may be matched or set; if
    /// not, what it needs.
    pub fn allows(&self, field: u8) -> Result<(), &'static str> {
        use field::*;
        let is_eth = |types: &[u16]| self.eth_type.is_some_and(|t| types.contains(&t));
        let is_proto = |p: u8| self.ip_proto == Some(p);
        let (ok, need) = match field {
            IN_PHY_PORT => (self.in_port, "IN_PORT"),
            VLAN_PCP => (self.vlan_tagged, "VLAN_VID with OFPVID_PRESENT"),
            IP_DSCP | IP_ECN | IP_PROTO => (is_eth(&[0x0800, 0x86dd]), "ETH_TYPE=0x0800 or 0x86dd"),
            IPV4_SRC | IPV4_DST => (is_eth(&[0x0800]), "ETH_TYPE=0x0800"),
            TCP_SRC | TCP_DST => (is_proto(6), "IP_PROTO=6"),
            UDP_SRC | UDP_DST => (is_proto(17), "IP_PROTO=17"),
            SCTP_SRC | SCTP_DST => (is_proto(132), "IP_PROTO=132"),
            ICMPV4_TYPE | ICMPV4_CODE => (is_proto(1) && is_eth(&[0x0800]), "ETH_TYPE=0x0800 and IP_PROTO=1"),
            ARP_OP | ARP_SPA | ARP_TPA | ARP_SHA | ARP_THA => (is_eth(&[0x0806]), "ETH_TYPE=0x0806"),
            IPV6_SRC | IPV6_DST | IPV6_FLABEL | IPV6_EXTHDR => (is_eth(&[0x86dd]), "ETH_TYPE=0x86dd"),
            ICMPV6_TYPE | ICMPV6_CODE => (is_proto(58) && is_eth(&[0x86dd]), "ETH_TYPE=0x86dd and IP_PROTO=58"),
            IPV6_ND_TARGET => (matches!(self.icmpv6_type, Some(135 | 136)), "ICMPV6_TYPE=135 or 136"),
            IPV6_ND_SLL => (self.icmpv6_type == Some(135), "ICMPV6_TYPE=135"),
            IPV6_ND_TLL => (self.icmpv6_type == Some(136), "ICMPV6_TYPE=136"),
            MPLS_LABEL | MPLS_TC | MPLS_BOS => (is_eth(&[0x8847, 0x8848]), "ETH_TYPE=0x8847 or 0x8848"),
            PBB_ISID => (is_eth(&[0x88e7]), "ETH_TYPE=0x88e7"),
            _ => (true, ""),
        };
        if ok {
            Ok(())
        } else {
            Err(need)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(b: &[u8]) -> Result<Match, DecodeError> {
        Match::decode(&mut Reader::new(b, bad_match(BadMatchCode::BadLen), "test"))
    }

    #[test]
    fn match_with_in_port_decodes_and_reencodes() {
        // type=1 len=12, IN_PORT=7, pad 4
        let b = [0, 1, 0, 12, 0x80, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 0];
        let m = dec(&b).unwrap();
        assert_eq!(m.fields, vec![Oxm::InPort(7)]);
        assert_eq!(m.in_port(), Some(7));
        let mut out = Vec::new();
        m.encode(&mut out);
        assert_eq!(out, b);
        assert_eq!(m.wire_len(), 16);
    }

    #[test]
    fn masked_ipv4_with_prerequisite() {
        let m = Match::new(vec![
            Oxm::EthType(0x0800),
            Oxm::Ipv4Src(Ipv4Addr::new(10, 0, 0, 0), Some(Ipv4Addr::new(255, 0, 0, 0))),
        ]);
        let mut out = Vec::new();
        m.encode(&mut out);
        // 4 + 6 + 12 = 22 -> padded to 24
        assert_eq!(out.len(), 24);
        assert_eq!(&out[..4], &[0, 1, 0, 22]);
        assert_eq!(&out[10..14], &[0x80, 0, 0x17, 8]);
        assert_eq!(dec(&out).unwrap(), m);
    }

    fn code_of(fields: Vec<Oxm>) -> ErrorCode {
        let mut out = Vec::new();
        encode_match_fields(&fields, &mut out);
        dec(&out).unwrap_err().code
    }

    #[test]
    fn every_malformed_oxm_class_gets_its_error_code() {
        // Prerequisite missing.
        assert_eq!(code_of(vec![Oxm::TcpDst(80)]), bad_match(BadMatchCode::BadPrereq));
        assert_eq!(
            code_of(vec![Oxm::EthType(0x86dd), Oxm::Ipv4Dst(Ipv4Addr::LOCALHOST, None)]),
            bad_match(BadMatchCode::BadPrereq)
        );
        assert_eq!(code_of(vec![Oxm::VlanPcp(3)]), bad_match(BadMatchCode::BadPrereq));
        // Duplicate.
        assert_eq!(
            code_of(vec![Oxm::InPort(1), Oxm::InPort(2)]),
            bad_match(BadMatchCode::DupField)
        );
        // Mask on an unmaskable field: IN_PORT with hasmask and 8 bytes.
        let b = [0, 1, 0, 16, 0x80, 0, 1, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(dec(&b).unwrap_err().code, bad_match(BadMatchCode::BadMask));
        // Wrong length for the field: IN_PORT with 2 bytes.
        let b = [0, 1, 0, 10, 0x80, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0];
        assert_eq!(dec(&b).unwrap_err().code, bad_match(BadMatchCode::BadLen));
        // OXM length running past the match.
        let b = [0, 1, 0, 8, 0x80, 0, 0, 4, 0, 0, 0, 0];
        assert_eq!(dec(&b).unwrap_err().code, bad_match(BadMatchCode::BadLen));
        // Value bits outside the mask.
        assert_eq!(
            code_of(vec![Oxm::Metadata(0xff, Some(0xf0))]),
            bad_match(BadMatchCode::BadWildcards)
        );
        // Out of range value.
        assert_eq!(
            code_of(vec![Oxm::EthType(0x0800), Oxm::IpDscp(64)]),
            bad_match(BadMatchCode::BadValue)
        );
        // Unknown basic field 40.
        let b = [0, 1, 0, 8, 0x80, 0, 0x50, 0, 0, 0, 0, 0];
        assert_eq!(dec(&b[..8]).unwrap_err().code, bad_match(BadMatchCode::BadField));
        // Wrong match type.
        let b = [0, 0, 0, 4, 0, 0, 0, 0];
        assert_eq!(dec(&b).unwrap_err().code, bad_match(BadMatchCode::BadType));
        // Non-zero padding.
        let b = [0, 1, 0, 4, 0, 0, 0, 1];
        assert_eq!(dec(&b).unwrap_err().code, bad_match(BadMatchCode::BadLen));
    }

    #[test]
    fn experimenter_and_nicira_fields_are_kept_opaque() {
        let m = Match::new(vec![
            Oxm::Experimenter {
                field: 3,
                has_mask: false,
                experimenter: 0x4f4e4600,
                data: Bytes(vec![1, 2]),
            },
            Oxm::Other {
                class: OFPXMC_NXM_1,
                field: 0,
                has_mask: false,
                payload: Bytes(vec![0, 0, 0, 9]),
            },
        ]);
        let mut out = Vec::new();
        m.encode(&mut out);
        assert_eq!(dec(&out).unwrap(), m);
    }
}
