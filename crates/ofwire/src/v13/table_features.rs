//! OpenFlow 1.3's table features (`ofp_table_features` and its properties),
//! the largest multipart body: decode and encode side by side.

use super::*;

/// An instruction or action id in a table-features property: the element's
/// type and whatever follows its 4-byte header (experimenter ids have more).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TypeId {
    pub id_type: u16,
    pub data: Bytes,
}

/// An OXM id: a 32-bit header, plus the experimenter id for class 0xFFFF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OxmId {
    pub header: u32,
    pub experimenter: Option<u32>,
}

/// A table-features property (`ofp_table_feature_prop_*`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TableFeatureProp {
    Instructions(Vec<TypeId>),
    InstructionsMiss(Vec<TypeId>),
    NextTables(Vec<u8>),
    NextTablesMiss(Vec<u8>),
    WriteActions(Vec<TypeId>),
    WriteActionsMiss(Vec<TypeId>),
    ApplyActions(Vec<TypeId>),
    ApplyActionsMiss(Vec<TypeId>),
    Match(Vec<OxmId>),
    Wildcards(Vec<OxmId>),
    WriteSetfield(Vec<OxmId>),
    WriteSetfieldMiss(Vec<OxmId>),
    ApplySetfield(Vec<OxmId>),
    ApplySetfieldMiss(Vec<OxmId>),
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
    ExperimenterMiss {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
}

impl TableFeatureProp {
    pub fn prop_type(&self) -> u16 {
        use TableFeatureProp::*;
        match self {
            Instructions(_) => 0,
            InstructionsMiss(_) => 1,
            NextTables(_) => 2,
            NextTablesMiss(_) => 3,
            WriteActions(_) => 4,
            WriteActionsMiss(_) => 5,
            ApplyActions(_) => 6,
            ApplyActionsMiss(_) => 7,
            Match(_) => 8,
            Wildcards(_) => 10,
            WriteSetfield(_) => 12,
            WriteSetfieldMiss(_) => 13,
            ApplySetfield(_) => 14,
            ApplySetfieldMiss(_) => 15,
            Experimenter { .. } => 0xfffe,
            ExperimenterMiss { .. } => 0xffff,
        }
    }
}

/// `ofp_table_features`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableFeatures {
    pub table_id: u8,
    pub name: String,
    pub metadata_match: u64,
    pub metadata_write: u64,
    pub config: u32,
    pub max_entries: u32,
    pub properties: Vec<TableFeatureProp>,
}

pub(super) fn tf_err(c: TableFeaturesFailedCode) -> ErrorCode {
    ErrorCode::TableFeaturesFailed(c)
}

pub(super) fn decode_table_features_list(r: &mut Reader) -> Result<Vec<TableFeatures>, DecodeError> {
    let mut out = Vec::new();
    while !r.is_empty() {
        let len = r.clone().u16()? as usize;
        if len < 64 || !len.is_multiple_of(8) {
            return Err(r.error(
                tf_err(TableFeaturesFailedCode::BadLen),
                format_args!("table features length {len} is below 64 or not a multiple of 8"),
            ));
        }
        let mut t = r.sub_with(len, tf_err(TableFeaturesFailedCode::BadLen), "table features")?;
        t.u16()?;
        let table_id = t.u8()?;
        t.pad(5)?;
        let name = t.fixed_str::<32>("table name")?;
        let metadata_match = t.u64()?;
        let metadata_write = t.u64()?;
        let config = t.u32()?;
        let max_entries = t.u32()?;
        let mut properties = Vec::new();
        while !t.is_empty() {
            properties.push(decode_table_feature_prop(&mut t)?);
        }
        out.push(TableFeatures {
            table_id,
            name,
            metadata_match,
            metadata_write,
            config,
            max_entries,
            properties,
        });
    }
    Ok(out)
}

pub(super) fn decode_table_feature_prop(t: &mut Reader) -> Result<TableFeatureProp, DecodeError> {
    use TableFeatureProp::*;
    let ty = t.u16()?;
    let len = t.u16()? as usize;
    if len < 4 {
        return Err(t.error(
            tf_err(TableFeaturesFailedCode::BadLen),
            format_args!("property length {len} is below 4"),
        ));
    }
    let mut p = t.sub(len - 4, "table feature property")?;
    t.pad(align8(len) - len)?;
    let type_ids = |p: &mut Reader| -> Result<Vec<TypeId>, DecodeError> {
        let mut v = Vec::new();
        while !p.is_empty() {
            let id_type = p.u16()?;
            let l = p.u16()? as usize;
            if l < 4 {
                return Err(p.error(
                    tf_err(TableFeaturesFailedCode::BadLen),
                    format_args!("id length {l} is below 4"),
                ));
            }
            v.push(TypeId {
                id_type,
                data: Bytes::from(p.bytes(l - 4)?),
            });
        }
        Ok(v)
    };
    let oxm_ids = |p: &mut Reader| -> Result<Vec<OxmId>, DecodeError> {
        let mut v = Vec::new();
        while !p.is_empty() {
            let header = p.u32()?;
            let experimenter = if header >> 16 == 0xffff { Some(p.u32()?) } else { None };
            v.push(OxmId { header, experimenter });
        }
        Ok(v)
    };
    Ok(match ty {
        0 => Instructions(type_ids(&mut p)?),
        1 => InstructionsMiss(type_ids(&mut p)?),
        2 => NextTables(p.rest().to_vec()),
        3 => NextTablesMiss(p.rest().to_vec()),
        4 => WriteActions(type_ids(&mut p)?),
        5 => WriteActionsMiss(type_ids(&mut p)?),
        6 => ApplyActions(type_ids(&mut p)?),
        7 => ApplyActionsMiss(type_ids(&mut p)?),
        8 => Match(oxm_ids(&mut p)?),
        10 => Wildcards(oxm_ids(&mut p)?),
        12 => WriteSetfield(oxm_ids(&mut p)?),
        13 => WriteSetfieldMiss(oxm_ids(&mut p)?),
        14 => ApplySetfield(oxm_ids(&mut p)?),
        15 => ApplySetfieldMiss(oxm_ids(&mut p)?),
        0xfffe | 0xffff => {
            let experimenter = p.u32()?;
            let exp_type = p.u32()?;
            let data = Bytes::from(p.rest());
            if ty == 0xfffe {
                Experimenter {
                    experimenter,
                    exp_type,
                    data,
                }
            } else {
                ExperimenterMiss {
                    experimenter,
                    exp_type,
                    data,
                }
            }
        }
        other => {
            return Err(p.error(
                tf_err(TableFeaturesFailedCode::BadType),
                format_args!("unknown table feature property type {other}"),
            ))
        }
    })
}

pub(super) fn encode_table_features_list(list: &[TableFeatures], out: &mut Vec<u8>) {
    use TableFeatureProp::*;
    for t in list {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(t.table_id);
        out.put_zeros(5);
        out.put_fixed_str(&t.name, 32);
        out.put_u64(t.metadata_match);
        out.put_u64(t.metadata_write);
        out.put_u32(t.config);
        out.put_u32(t.max_entries);
        for p in &t.properties {
            let ps = out.len();
            out.put_u16(p.prop_type());
            out.put_u16(0);
            match p {
                Instructions(ids)
                | InstructionsMiss(ids)
                | WriteActions(ids)
                | WriteActionsMiss(ids)
                | ApplyActions(ids)
                | ApplyActionsMiss(ids) => {
                    for id in ids {
                        out.put_u16(id.id_type);
                        out.put_u16((4 + id.data.len()) as u16);
                        out.put_slice(&id.data.0);
                    }
                }
                NextTables(ids) | NextTablesMiss(ids) => out.put_slice(ids),
                Match(ids)
                | Wildcards(ids)
                | WriteSetfield(ids)
                | WriteSetfieldMiss(ids)
                | ApplySetfield(ids)
                | ApplySetfieldMiss(ids) => {
                    for id in ids {
                        out.put_u32(id.header);
                        if let Some(e) = id.experimenter {
                            out.put_u32(e);
                        }
                    }
                }
                Experimenter {
                    experimenter,
                    exp_type,
                    data,
                }
                | ExperimenterMiss {
                    experimenter,
                    exp_type,
                    data,
                } => out.put_experimenter(*experimenter, *exp_type, &data.0),
            }
            let plen = (out.len() - ps) as u16;
            out.patch_u16(ps + 2, plen);
            out.pad_to_8(ps);
        }
        let len = (out.len() - start) as u16;
        out.patch_u16(start, len);
    }
}
