//! OpenFlow 1.0's match (`ofp_match`, 40 bytes, with its wildcards).

use super::*;

/// `ofp_match` (40 bytes). Fields a wildcard bit covers are still carried so
/// the message re-encodes byte-exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Match {
    pub wildcards: u32,
    pub in_port: u16,
    pub dl_src: MacAddr,
    pub dl_dst: MacAddr,
    pub dl_vlan: u16,
    pub dl_vlan_pcp: u8,
    pub dl_type: u16,
    pub nw_tos: u8,
    pub nw_proto: u8,
    pub nw_src: Ipv4Addr,
    pub nw_dst: Ipv4Addr,
    pub tp_src: u16,
    pub tp_dst: u16,
}

impl Default for Match {
    /// Matches everything.
    fn default() -> Self {
        Match::all()
    }
}

impl Match {
    pub const LEN: usize = 40;

    /// The match-everything match.
    pub fn all() -> Match {
        Match {
            wildcards: wildcards::ALL,
            in_port: 0,
            dl_src: MacAddr::ZERO,
            dl_dst: MacAddr::ZERO,
            dl_vlan: 0,
            dl_vlan_pcp: 0,
            dl_type: 0,
            nw_tos: 0,
            nw_proto: 0,
            nw_src: Ipv4Addr::UNSPECIFIED,
            nw_dst: Ipv4Addr::UNSPECIFIED,
            tp_src: 0,
            tp_dst: 0,
        }
    }

    /// How many leading bits of nw_src are matched (0..=32).
    pub fn nw_src_prefix_len(&self) -> u8 {
        32 - ((self.wildcards & wildcards::NW_SRC_MASK) >> wildcards::NW_SRC_SHIFT).min(32) as u8
    }

    /// How many leading bits of nw_dst are matched (0..=32).
    pub fn nw_dst_prefix_len(&self) -> u8 {
        32 - ((self.wildcards & wildcards::NW_DST_MASK) >> wildcards::NW_DST_SHIFT).min(32) as u8
    }

    /// Sets how many leading bits of nw_src are matched.
    pub fn set_nw_src_prefix(&mut self, addr: Ipv4Addr, prefix_len: u8) {
        let wild = 32 - prefix_len.min(32) as u32;
        self.wildcards = (self.wildcards & !wildcards::NW_SRC_MASK) | (wild << wildcards::NW_SRC_SHIFT);
        self.nw_src = addr;
    }

    /// Sets how many leading bits of nw_dst are matched.
    pub fn set_nw_dst_prefix(&mut self, addr: Ipv4Addr, prefix_len: u8) {
        let wild = 32 - prefix_len.min(32) as u32;
        self.wildcards = (self.wildcards & !wildcards::NW_DST_MASK) | (wild << wildcards::NW_DST_SHIFT);
        self.nw_dst = addr;
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<Match, DecodeError> {
        let m = Match {
            wildcards: r.u32()?,
            in_port: r.u16()?,
            dl_src: MacAddr(r.array()?),
            dl_dst: MacAddr(r.array()?),
            dl_vlan: r.u16()?,
            dl_vlan_pcp: r.u8()?,
            dl_type: {
                r.pad(1)?;
                r.u16()?
            },
            nw_tos: r.u8()?,
            nw_proto: r.u8()?,
            nw_src: {
                r.pad(2)?;
                Ipv4Addr::from(r.u32()?)
            },
            nw_dst: Ipv4Addr::from(r.u32()?),
            tp_src: r.u16()?,
            tp_dst: r.u16()?,
        };
        Ok(m)
    }

    #[inline]
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.wildcards);
        out.put_u16(self.in_port);
        out.put_slice(&self.dl_src.0);
        out.put_slice(&self.dl_dst.0);
        out.put_u16(self.dl_vlan);
        out.put_u8(self.dl_vlan_pcp);
        out.put_u8(0);
        out.put_u16(self.dl_type);
        out.put_u8(self.nw_tos);
        out.put_u8(self.nw_proto);
        out.put_u16(0);
        out.put_u32(self.nw_src.into());
        out.put_u32(self.nw_dst.into());
        out.put_u16(self.tp_src);
        out.put_u16(self.tp_dst);
    }
}
