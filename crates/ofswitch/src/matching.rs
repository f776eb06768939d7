//! OpenFlow 1.3 matches as (value, mask) keys, and the field writes that
//! set_field actions make, checked against what this switch supports.

use crate::key::{location, Key};
use ofwire::error::BadMatchCode;
use ofwire::oxm::{field, Match, Oxm, OFPXMC_OPENFLOW_BASIC};
use ofwire::ErrorCode;

/// The fields this switch matches on (every basic field but MPLS, PBB,
/// tunnel id and IPv6 extension headers).
pub fn supported(f: u8) -> bool {
    location(f).is_some()
}

/// The value bytes and the mask bytes (all ones when unmasked) of an OXM.
pub fn value_and_mask(o: &Oxm) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut raw = Vec::with_capacity(40);
    o.encode(&mut raw);
    // 4-byte OXM header, then the value, then the mask if any.
    let len = raw.get(3).copied()? as usize;
    let body = raw.get(4..4 + len)?;
    if o.has_mask() {
        let half = len / 2;
        Some((body[..half].to_vec(), body[half..].to_vec()))
    } else {
        Some((body.to_vec(), vec![0xff; len]))
    }
}

/// The (value, mask) pair a match stands for, or the OpenFlow error that
/// refuses it.
pub fn keys_of(m: &Match) -> Result<(Key, Key), ErrorCode> {
    let mut value = Key::default();
    let mut mask = Key::default();
    for o in &m.fields {
        if o.class() != OFPXMC_OPENFLOW_BASIC || !supported(o.field()) {
            return Err(ErrorCode::BadMatch(BadMatchCode::BadField));
        }
        let (v, mut mk) = value_and_mask(o).ok_or(ErrorCode::BadMatch(BadMatchCode::BadLen))?;
        // VLAN_VID with OFPVID_PRESENT as its only bit in the mask means
        // "any tagged frame"; an exact 0 means "untagged". Both work as is
        // with the key's convention (0 untagged, PRESENT|vid tagged).
        if o.field() == field::VLAN_VID && !o.has_mask() {
            mk = vec![0x1f, 0xff];
        }
        if v.iter().zip(&mk).any(|(v, m)| v & !m != 0) {
            // 1.3.5 section 7.2.3.5: value bits outside the mask are an error.
            return Err(ErrorCode::BadMatch(BadMatchCode::BadWildcards));
        }
        value.set(o.field(), &v);
        mask.set(o.field(), &mk);
    }
    Ok((value, mask))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofwire::MacAddr;
    use std::net::Ipv4Addr;

    #[test]
    fn masked_and_exact_fields_become_keys() {
        let m = Match::new(vec![
            Oxm::InPort(2),
            Oxm::EthDst(MacAddr([1, 2, 3, 4, 5, 6]), None),
            Oxm::EthType(0x0800),
            Oxm::Ipv4Src(Ipv4Addr::new(10, 1, 0, 0), Some(Ipv4Addr::new(255, 255, 0, 0))),
        ]);
        let (v, mk) = keys_of(&m).unwrap();
        assert_eq!(v.get(field::IN_PORT), &[0, 0, 0, 2]);
        assert_eq!(mk.get(field::IN_PORT), &[0xff; 4]);
        assert_eq!(v.get(field::IPV4_SRC), &[10, 1, 0, 0]);
        assert_eq!(mk.get(field::IPV4_SRC), &[255, 255, 0, 0]);
        assert_eq!(mk.get(field::IPV4_DST), &[0; 4]);
        assert_eq!(v.get(field::ETH_DST), &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn bits_outside_the_mask_and_unsupported_fields_are_refused() {
        let m = Match::new(vec![
            Oxm::EthType(0x0800),
            Oxm::Ipv4Src(Ipv4Addr::new(10, 1, 0, 1), Some(Ipv4Addr::new(255, 255, 0, 0))),
        ]);
        assert_eq!(keys_of(&m), Err(ErrorCode::BadMatch(BadMatchCode::BadWildcards)));
        let m = Match::new(vec![Oxm::EthType(0x8847), Oxm::MplsLabel(5)]);
        assert_eq!(keys_of(&m), Err(ErrorCode::BadMatch(BadMatchCode::BadField)));
    }
}
