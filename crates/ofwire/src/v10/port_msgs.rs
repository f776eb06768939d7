//! OpenFlow 1.0's port messages: `ofp_phy_port`, PORT_STATUS and PORT_MOD.

use super::*;

/// `ofp_phy_port` (48 bytes).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PhyPort {
    pub port_no: u16,
    pub hw_addr: MacAddr,
    pub name: String,
    pub config: u32,
    pub state: u32,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
}

impl PhyPort {
    pub const LEN: usize = 48;

    /// Port `port_no` with this address and name, and nothing else set: no
    /// config or state bits, no features.
    pub fn new(port_no: u16, hw_addr: MacAddr, name: impl Into<String>) -> PhyPort {
        PhyPort {
            port_no,
            hw_addr,
            name: name.into(),
            config: 0,
            state: 0,
            curr: 0,
            advertised: 0,
            supported: 0,
            peer: 0,
        }
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<PhyPort, DecodeError> {
        Ok(PhyPort {
            port_no: r.u16()?,
            hw_addr: MacAddr(r.array()?),
            name: r.fixed_str::<16>("port name")?,
            config: r.u32()?,
            state: r.u32()?,
            curr: r.u32()?,
            advertised: r.u32()?,
            supported: r.u32()?,
            peer: r.u32()?,
        })
    }
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.port_no);
        out.put_slice(&self.hw_addr.0);
        out.put_fixed_str(&self.name, 16);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
        ] {
            out.put_u32(v);
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortStatus {
    pub reason: PortReason,
    pub desc: PhyPort,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortMod {
    pub port_no: u16,
    pub hw_addr: MacAddr,
    pub config: u32,
    pub mask: u32,
    pub advertise: u32,
}

impl PortStatus {
    pub(super) fn decode(r: &mut Reader) -> Result<PortStatus, DecodeError> {
        let reason = r.u8()?.into();
        r.pad(7)?;
        Ok(PortStatus {
            reason,
            desc: PhyPort::decode(r)?,
        })
    }
}

impl PortMod {
    pub(super) fn decode(r: &mut Reader) -> Result<PortMod, DecodeError> {
        let port_no = r.u16()?;
        let hw_addr = MacAddr(r.array()?);
        let config = r.u32()?;
        let mask = r.u32()?;
        let advertise = r.u32()?;
        r.pad(4)?;
        Ok(PortMod {
            port_no,
            hw_addr,
            config,
            mask,
            advertise,
        })
    }
}
