//! OpenFlow 1.3's port messages: `ofp_port`, PORT_STATUS and PORT_MOD.

use super::*;

// ------------------------------------------------------------ structures

/// `ofp_port` of 1.3 (64 bytes).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Port {
    pub port_no: u32,
    pub hw_addr: MacAddr,
    pub name: String,
    pub config: u32,
    pub state: u32,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
    pub curr_speed: u32,
    pub max_speed: u32,
}

impl Port {
    pub const LEN: usize = 64;

    /// Port `port_no` with this address and name, and nothing else set: no
    /// config or state bits, no features, no speeds.
    pub fn new(port_no: u32, hw_addr: MacAddr, name: impl Into<String>) -> Port {
        Port {
            port_no,
            hw_addr,
            name: name.into(),
            config: 0,
            state: 0,
            curr: 0,
            advertised: 0,
            supported: 0,
            peer: 0,
            curr_speed: 0,
            max_speed: 0,
        }
    }

    pub(super) fn decode(r: &mut Reader) -> Result<Port, DecodeError> {
        let port_no = r.u32()?;
        r.pad(4)?;
        let hw_addr = MacAddr(r.array()?);
        r.pad(2)?;
        Ok(Port {
            port_no,
            hw_addr,
            name: r.fixed_str::<16>("port name")?,
            config: r.u32()?,
            state: r.u32()?,
            curr: r.u32()?,
            advertised: r.u32()?,
            supported: r.u32()?,
            peer: r.u32()?,
            curr_speed: r.u32()?,
            max_speed: r.u32()?,
        })
    }
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_zeros(4);
        out.put_slice(&self.hw_addr.0);
        out.put_zeros(2);
        out.put_fixed_str(&self.name, 16);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
            self.curr_speed,
            self.max_speed,
        ] {
            out.put_u32(v);
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortStatus {
    pub reason: PortReason,
    pub desc: Port,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortMod {
    pub port_no: u32,
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
            desc: Port::decode(r)?,
        })
    }
}

impl PortMod {
    pub(super) fn decode(r: &mut Reader) -> Result<PortMod, DecodeError> {
        let port_no = r.u32()?;
        r.pad(4)?;
        let hw_addr = MacAddr(r.array()?);
        r.pad(2)?;
        let p = PortMod {
            port_no,
            hw_addr,
            config: r.u32()?,
            mask: r.u32()?,
            advertise: r.u32()?,
        };
        r.pad(4)?;
        Ok(p)
    }
}
