//! The LLDP probe the `topology` app sends out of every switch port (IEEE
//! 802.1AB): wire format only. The chassis id names the sending switch
//! (locally assigned, "dpid:<16 hex digits>", as Ryu and ONOS write it),
//! the port id its port number (locally assigned, decimal text: binary port
//! ids under the "port component" subtype, as Ryu sends them, are read as
//! malformed text by Wireshark), TTL 120 s.
//! A probe that comes back as a PACKET_IN on another switch is a link.

use ofwire::MacAddr;

pub const ETHERTYPE: u16 = 0x88cc;
/// Nearest-bridge group address: not forwarded by 802.1D bridges.
pub const DESTINATION: MacAddr = MacAddr([0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e]);

const TLV_END: u8 = 0;
const TLV_CHASSIS_ID: u8 = 1;
const TLV_PORT_ID: u8 = 2;
const TLV_TTL: u8 = 3;
const CHASSIS_LOCALLY_ASSIGNED: u8 = 7;
const PORT_LOCALLY_ASSIGNED: u8 = 7;
const CHASSIS_PREFIX: &[u8] = b"dpid:";

/// Where a probe was sent from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    pub datapath_id: u64,
    pub port: u32,
}

fn put_tlv(out: &mut Vec<u8>, kind: u8, value: &[&[u8]]) {
    let len: usize = value.iter().map(|v| v.len()).sum();
    debug_assert!(len < 512);
    out.extend_from_slice(&(((kind as u16) << 9) | len as u16).to_be_bytes());
    for v in value {
        out.extend_from_slice(v);
    }
}

/// Appends the Ethernet frame of a probe from `probe`, sent by `src`.
pub fn write_probe(out: &mut Vec<u8>, src: MacAddr, probe: Probe) {
    let start = out.len();
    out.extend_from_slice(&DESTINATION.0);
    out.extend_from_slice(&src.0);
    out.extend_from_slice(&ETHERTYPE.to_be_bytes());
    let hex = format!("{:016x}", probe.datapath_id);
    put_tlv(
        out,
        TLV_CHASSIS_ID,
        &[&[CHASSIS_LOCALLY_ASSIGNED], CHASSIS_PREFIX, hex.as_bytes()],
    );
    let port = probe.port.to_string();
    put_tlv(out, TLV_PORT_ID, &[&[PORT_LOCALLY_ASSIGNED], port.as_bytes()]);
    put_tlv(out, TLV_TTL, &[&120u16.to_be_bytes()]);
    put_tlv(out, TLV_END, &[]);
    // Ethernet minimum frame (without FCS).
    if out.len() - start < 60 {
        out.resize(start + 60, 0);
    }
}

/// Whether an Ethernet frame is LLDP (untagged).
pub fn is_lldp(frame: &[u8]) -> bool {
    frame.len() >= 14 && frame[12..14] == ETHERTYPE.to_be_bytes()
}

/// Reads a probe out of an LLDP frame. `Ok(None)`: well-formed LLDP that is
/// not one of ours (another controller's, a host's); `Err`: malformed.
pub fn parse_probe(frame: &[u8]) -> Result<Option<Probe>, &'static str> {
    if !is_lldp(frame) {
        return Err("not an LLDP frame");
    }
    let mut rest = &frame[14..];
    let mut chassis: Option<Option<u64>> = None;
    let mut port: Option<Option<u32>> = None;
    loop {
        if rest.len() < 2 {
            return Err("LLDP TLV header truncated");
        }
        let head = u16::from_be_bytes([rest[0], rest[1]]);
        let (kind, len) = ((head >> 9) as u8, (head & 0x1ff) as usize);
        let value = rest.get(2..2 + len).ok_or("LLDP TLV runs past the frame")?;
        rest = &rest[2 + len..];
        match kind {
            TLV_END => break,
            TLV_CHASSIS_ID => {
                let ours = value.len() == 1 + CHASSIS_PREFIX.len() + 16
                    && value[0] == CHASSIS_LOCALLY_ASSIGNED
                    && value[1..1 + CHASSIS_PREFIX.len()] == *CHASSIS_PREFIX;
                chassis = Some(if ours {
                    let hex =
                        std::str::from_utf8(&value[1 + CHASSIS_PREFIX.len()..]).map_err(|_| "chassis id not text")?;
                    Some(u64::from_str_radix(hex, 16).map_err(|_| "chassis id not hexadecimal")?)
                } else {
                    None
                });
            }
            TLV_PORT_ID => {
                if value.is_empty() {
                    return Err("empty port id");
                }
                let digits = &value[1..];
                port = Some(
                    if value[0] == PORT_LOCALLY_ASSIGNED
                        && (1..=10).contains(&digits.len())
                        && digits.iter().all(u8::is_ascii_digit)
                    {
                        std::str::from_utf8(digits).ok().and_then(|d| d.parse().ok())
                    } else {
                        None
                    },
                );
            }
            _ => {}
        }
    }
    match (chassis, port) {
        (Some(Some(datapath_id)), Some(Some(port))) => Ok(Some(Probe { datapath_id, port })),
        (Some(_), Some(_)) => Ok(None),
        _ => Err("LLDP without chassis id or port id"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_round_trips() {
        let mut f = Vec::new();
        let p = Probe {
            datapath_id: 0x0000_0a0b_0c0d_0e0f,
            port: 0xfffffff0,
        };
        write_probe(&mut f, MacAddr([2, 0, 0, 0, 0, 1]), p);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[0..6], &DESTINATION.0);
        assert_eq!(parse_probe(&f), Ok(Some(p)));
    }

    #[test]
    fn foreign_and_broken_lldp() {
        // Another agent's LLDP: chassis id is a MAC (subtype 4), port id an interface name (5).
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x88, 0xcc]);
        f.extend_from_slice(&[0x02, 0x07, 4, 1, 2, 3, 4, 5, 6]);
        f.extend_from_slice(&[0x04, 0x05, 5, b'e', b't', b'h', b'0']);
        f.extend_from_slice(&[0x06, 0x02, 0, 120, 0, 0]);
        assert_eq!(parse_probe(&f), Ok(None));
        // Each truncation is an error, never a panic.
        for cut in 14..f.len() - 2 {
            assert!(parse_probe(&f[..cut]).is_err(), "cut at {cut}");
        }
        let mut ours = Vec::new();
        write_probe(
            &mut ours,
            MacAddr::ZERO,
            Probe {
                datapath_id: 1,
                port: 2,
            },
        );
        ours[14 + 2 + 6] = b'z'; // a non-hex digit in "dpid:0000..."
        assert!(parse_probe(&ours).is_err());
    }
}
