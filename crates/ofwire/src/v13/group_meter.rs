//! OpenFlow 1.3's groups and meters: GROUP_MOD with its buckets, METER_MOD
//! with its bands.

use super::*;

wire_enum! {
    /// `ofp_group_mod_command`.
    pub enum GroupModCommand: u16 {
        Add = 0 => "ADD",
        Modify = 1 => "MODIFY",
        Delete = 2 => "DELETE",
    }
}

wire_enum! {
    /// `ofp_group_type`.
    pub enum GroupType: u8 {
        All = 0 => "ALL",
        Select = 1 => "SELECT",
        Indirect = 2 => "INDIRECT",
        FastFailover = 3 => "FF",
    }
}

/// `ofp_bucket`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Bucket {
    pub weight: u16,
    pub watch_port: u32,
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupMod {
    pub command: GroupModCommand,
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

pub(super) fn decode_buckets(r: &mut Reader) -> Result<Vec<Bucket>, DecodeError> {
    let bad_bucket = ErrorCode::GroupModFailed(GroupModFailedCode::BadBucket);
    let mut out = Vec::new();
    while !r.is_empty() {
        let len = r.clone().u16()? as usize;
        if len < 16 || !len.is_multiple_of(8) {
            return Err(r.error(
                bad_bucket,
                format_args!("bucket length {len} is below 16 or not a multiple of 8"),
            ));
        }
        let mut b = r.sub_with(len, bad_bucket, "bucket")?;
        b.u16()?;
        let weight = b.u16()?;
        let watch_port = b.u32()?;
        let watch_group = b.u32()?;
        b.pad(4)?;
        let mut ar = b.sub_with(b.remaining(), bad_action(BadActionCode::BadLen), "bucket actions")?;
        out.push(Bucket {
            weight,
            watch_port,
            watch_group,
            actions: Action::decode_list(&mut ar)?,
        });
    }
    Ok(out)
}

pub(super) fn encode_buckets(buckets: &[Bucket], out: &mut Vec<u8>) {
    for b in buckets {
        let start = out.len();
        out.put_u16(0);
        out.put_u16(b.weight);
        out.put_u32(b.watch_port);
        out.put_u32(b.watch_group);
        out.put_zeros(4);
        encode_actions(&b.actions, out);
        let len = (out.len() - start) as u16;
        out.patch_u16(start, len);
    }
}

wire_enum! {
    /// `ofp_meter_mod_command`.
    pub enum MeterModCommand: u16 {
        Add = 0 => "ADD",
        Modify = 1 => "MODIFY",
        Delete = 2 => "DELETE",
    }
}

/// `ofp_meter_flags`.
pub mod meter_flags {
    pub const KBPS: u16 = 1;
    pub const PKTPS: u16 = 2;
    pub const BURST: u16 = 4;
    pub const STATS: u16 = 8;
}

/// A meter band (`ofp_meter_band_*`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MeterBand {
    Drop {
        rate: u32,
        burst_size: u32,
    },
    DscpRemark {
        rate: u32,
        burst_size: u32,
        prec_level: u8,
    },
    Experimenter {
        rate: u32,
        burst_size: u32,
        experimenter: u32,
        data: Bytes,
    },
}

pub(super) fn decode_bands(r: &mut Reader) -> Result<Vec<MeterBand>, DecodeError> {
    let bad_band = ErrorCode::MeterModFailed(MeterModFailedCode::BadBand);
    let mut out = Vec::new();
    while !r.is_empty() {
        let mut h = r.clone();
        let ty = h.u16()?;
        let len = h.u16()? as usize;
        if len < 16 || !len.is_multiple_of(8) {
            return Err(r.error(
                bad_len(),
                format_args!("meter band length {len} is below 16 or not a multiple of 8"),
            ));
        }
        let mut b = r.sub(len, "meter band")?;
        b.u32()?;
        let rate = b.u32()?;
        let burst_size = b.u32()?;
        let band = match ty {
            1 => {
                b.pad(4)?;
                MeterBand::Drop { rate, burst_size }
            }
            2 => {
                let prec_level = b.u8()?;
                b.pad(3)?;
                MeterBand::DscpRemark {
                    rate,
                    burst_size,
                    prec_level,
                }
            }
            0xffff => MeterBand::Experimenter {
                rate,
                burst_size,
                experimenter: b.u32()?,
                data: Bytes::from(b.rest()),
            },
            other => return Err(b.error(bad_band, format_args!("unknown meter band type {other}"))),
        };
        b.finish()?;
        out.push(band);
    }
    Ok(out)
}

pub(super) fn encode_bands(bands: &[MeterBand], out: &mut Vec<u8>) {
    for band in bands {
        let start = out.len();
        let (ty, rate, burst) = match band {
            MeterBand::Drop { rate, burst_size } => (1u16, rate, burst_size),
            MeterBand::DscpRemark { rate, burst_size, .. } => (2, rate, burst_size),
            MeterBand::Experimenter { rate, burst_size, .. } => (0xffff, rate, burst_size),
        };
        out.put_u16(ty);
        out.put_u16(0);
        out.put_u32(*rate);
        out.put_u32(*burst);
        match band {
            MeterBand::Drop { .. } => out.put_zeros(4),
            MeterBand::DscpRemark { prec_level, .. } => {
                out.put_u8(*prec_level);
                out.put_zeros(3);
            }
            MeterBand::Experimenter { experimenter, data, .. } => {
                out.put_u32(*experimenter);
                out.put_slice(&data.0);
                out.pad_to_8(start);
            }
        }
        let len = (out.len() - start) as u16;
        out.patch_u16(start + 2, len);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MeterMod {
    pub command: MeterModCommand,
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

impl GroupMod {
    pub(super) fn decode(r: &mut Reader) -> Result<GroupMod, DecodeError> {
        let command = GroupModCommand::from(r.u16()?);
        if let GroupModCommand::Unknown(c) = command {
            return Err(r.error(
                ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand),
                format_args!("unknown group command {c}"),
            ));
        }
        let group_type = GroupType::from(r.u8()?);
        if let GroupType::Unknown(t) = group_type {
            return Err(r.error(
                ErrorCode::GroupModFailed(GroupModFailedCode::BadType),
                format_args!("unknown group type {t}"),
            ));
        }
        r.pad(1)?;
        let group_id = r.u32()?;
        Ok(GroupMod {
            command,
            group_type,
            group_id,
            buckets: decode_buckets(r)?,
        })
    }
}

impl MeterMod {
    pub(super) fn decode(r: &mut Reader) -> Result<MeterMod, DecodeError> {
        let command = MeterModCommand::from(r.u16()?);
        if let MeterModCommand::Unknown(c) = command {
            return Err(r.error(
                ErrorCode::MeterModFailed(MeterModFailedCode::BadCommand),
                format_args!("unknown meter command {c}"),
            ));
        }
        let flags = r.u16()?;
        let meter_id = r.u32()?;
        Ok(MeterMod {
            command,
            flags,
            meter_id,
            bands: decode_bands(r)?,
        })
    }
}
