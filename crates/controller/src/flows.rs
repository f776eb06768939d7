//! Flow entries described once, independent of the OpenFlow version, and
//! turned into the FLOW_MOD of the version a switch speaks. Used by the
//! network-wide apps (`topology`, `paths`) and by the REST API, whose JSON
//! is this structure. The per-packet path of `l2-learning` does not use it
//! (it writes its FLOW_MODs from templates, without allocating).
//!
//! Ports are numbered as in OpenFlow 1.3 (reserved ports are 0xffffff00 and
//! up; the names "controller", "flood", "all", "in_port", "local", "table"
//! and "normal" are accepted in JSON); for a 1.0 switch they are mapped to
//! 16 bits.

use ofwire::oxm::Oxm;
use ofwire::{v10, v13, Body, MacAddr, OFP10_VERSION, OFP13_VERSION};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// What a flow matches; absent fields are wildcards.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowMatch {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "port_opt")]
    pub in_port: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "mac_opt")]
    pub eth_src: Option<MacAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "mac_opt")]
    pub eth_dst: Option<MacAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eth_type: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_proto: Option<u8>,
    /// "10.0.0.0/24" or "10.0.0.1".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_src: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_dst: Option<String>,
    /// TCP or UDP port, by `ip_proto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp_src: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp_dst: Option<u16>,
}

/// What a flow does with a packet (in this order). An empty list drops it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FlowAction {
    /// Out of a port (a number or a reserved port's name).
    Output(#[serde(with = "port")] u32),
    SetEthSrc(#[serde(with = "mac")] MacAddr),
    SetEthDst(#[serde(with = "mac")] MacAddr),
}

/// One flow entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    #[serde(default)]
    pub table_id: u8,
    #[serde(default = "default_priority")]
    pub priority: u16,
    #[serde(default)]
    pub cookie: u64,
    #[serde(default)]
    pub idle_timeout: u16,
    #[serde(default)]
    pub hard_timeout: u16,
    #[serde(default, rename = "match")]
    pub match_: FlowMatch,
    #[serde(default)]
    pub actions: Vec<FlowAction>,
}

fn default_priority() -> u16 {
    0x8000
}

/// Which flows a delete removes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowFilter {
    #[serde(default, rename = "match")]
    pub match_: FlowMatch,
    /// Only flows with exactly this match and priority (DELETE_STRICT).
    #[serde(default)]
    pub strict: bool,
    #[serde(default)]
    pub priority: u16,
    /// Only flows whose cookie equals this (1.3; 1.0 has no cookie filter).
    #[serde(default)]
    pub cookie: Option<u64>,
    /// 1.3: the table (default: all tables).
    #[serde(default)]
    pub table_id: Option<u8>,
}

/// Why a flow, a filter or a packet-out cannot be written for a switch:
/// the REST API's 400 answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlowError {
    #[error("bad prefix length in '{0}'")]
    PrefixLength(String),
    #[error("'{0}' is not an IPv4 address or prefix")]
    NotIpv4(String),
    #[error("prefix length in '{0}' is over 32")]
    PrefixOver32(String),
    /// A field used without the one OpenFlow requires before it.
    #[error("{0}")]
    Prerequisite(&'static str),
    #[error("port {0} does not exist in OpenFlow 1.0 (ports stop at 65279)")]
    Port10(u32),
    /// Something OpenFlow 1.0's FLOW_MOD cannot say.
    #[error("OpenFlow 1.0 {0}")]
    NotIn10(&'static str),
    #[error("unsupported OpenFlow version {0:#04x}")]
    Version(u8),
}

fn parse_prefix(s: &str) -> Result<(Ipv4Addr, u8), FlowError> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, l.parse::<u8>().map_err(|_| FlowError::PrefixLength(s.to_string()))?),
        None => (s, 32),
    };
    let addr: Ipv4Addr = addr.parse().map_err(|_| FlowError::NotIpv4(s.to_string()))?;
    if len > 32 {
        return Err(FlowError::PrefixOver32(s.to_string()));
    }
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Ok((Ipv4Addr::from(u32::from(addr) & mask), len))
}

fn prefix_mask(len: u8) -> Option<Ipv4Addr> {
    (len < 32).then(|| Ipv4Addr::from(if len == 0 { 0 } else { u32::MAX << (32 - len) }))
}

impl FlowMatch {
    /// Prerequisites as OpenFlow states them, checked here so the user gets
    /// a clear answer instead of the switch's BAD_MATCH error.
    fn check(&self) -> Result<(), FlowError> {
        let ip = self.ipv4_src.is_some() || self.ipv4_dst.is_some() || self.ip_proto.is_some();
        if ip && self.eth_type != Some(0x0800) {
            return Err(FlowError::Prerequisite(
                "ipv4_src, ipv4_dst and ip_proto need \"eth_type\": 2048 (IPv4)",
            ));
        }
        if (self.tp_src.is_some() || self.tp_dst.is_some()) && !matches!(self.ip_proto, Some(6 | 17)) {
            return Err(FlowError::Prerequisite(
                "tp_src and tp_dst need \"ip_proto\": 6 (TCP) or 17 (UDP)",
            ));
        }
        Ok(())
    }

    pub fn to_v10(&self) -> Result<v10::Match, FlowError> {
        self.check()?;
        use v10::wildcards as w;
        let mut m = v10::Match::all();
        if let Some(p) = self.in_port {
            m.in_port = port10(p)?;
            m.wildcards &= !w::IN_PORT;
        }
        if let Some(a) = self.eth_src {
            m.dl_src = a;
            m.wildcards &= !w::DL_SRC;
        }
        if let Some(a) = self.eth_dst {
            m.dl_dst = a;
            m.wildcards &= !w::DL_DST;
        }
        if let Some(t) = self.eth_type {
            m.dl_type = t;
            m.wildcards &= !w::DL_TYPE;
        }
        if let Some(p) = self.ip_proto {
            m.nw_proto = p;
            m.wildcards &= !w::NW_PROTO;
        }
        if let Some(s) = &self.ipv4_src {
            let (a, l) = parse_prefix(s)?;
            m.set_nw_src_prefix(a, l);
        }
        if let Some(s) = &self.ipv4_dst {
            let (a, l) = parse_prefix(s)?;
            m.set_nw_dst_prefix(a, l);
        }
        if let Some(p) = self.tp_src {
            m.tp_src = p;
            m.wildcards &= !w::TP_SRC;
        }
        if let Some(p) = self.tp_dst {
            m.tp_dst = p;
            m.wildcards &= !w::TP_DST;
        }
        Ok(m)
    }

    pub fn to_v13(&self) -> Result<ofwire::oxm::Match, FlowError> {
        self.check()?;
        let mut f = Vec::new();
        if let Some(p) = self.in_port {
            f.push(Oxm::InPort(p));
        }
        if let Some(a) = self.eth_dst {
            f.push(Oxm::EthDst(a, None));
        }
        if let Some(a) = self.eth_src {
            f.push(Oxm::EthSrc(a, None));
        }
        if let Some(t) = self.eth_type {
            f.push(Oxm::EthType(t));
        }
        if let Some(p) = self.ip_proto {
            f.push(Oxm::IpProto(p));
        }
        if let Some(s) = &self.ipv4_src {
            let (a, l) = parse_prefix(s)?;
            f.push(Oxm::Ipv4Src(a, prefix_mask(l)));
        }
        if let Some(s) = &self.ipv4_dst {
            let (a, l) = parse_prefix(s)?;
            f.push(Oxm::Ipv4Dst(a, prefix_mask(l)));
        }
        let tcp = self.ip_proto == Some(6);
        if let Some(p) = self.tp_src {
            f.push(if tcp { Oxm::TcpSrc(p) } else { Oxm::UdpSrc(p) });
        }
        if let Some(p) = self.tp_dst {
            f.push(if tcp { Oxm::TcpDst(p) } else { Oxm::UdpDst(p) });
        }
        Ok(ofwire::oxm::Match::new(f))
    }
}

/// A 1.3 port number as 1.0 writes it.
pub fn port10(p: u32) -> Result<u16, FlowError> {
    if p >= v13::port::MAX {
        Ok((p & 0xffff) as u16)
    } else if p < v10::port::MAX as u32 {
        Ok(p as u16)
    } else {
        Err(FlowError::Port10(p))
    }
}

fn actions10(actions: &[FlowAction]) -> Result<Vec<v10::Action>, FlowError> {
    actions
        .iter()
        .map(|a| {
            Ok(match a {
                FlowAction::Output(p) => v10::Action::Output {
                    port: port10(*p)?,
                    max_len: 0xffff,
                },
                FlowAction::SetEthSrc(m) => v10::Action::SetDlSrc(*m),
                FlowAction::SetEthDst(m) => v10::Action::SetDlDst(*m),
            })
        })
        .collect()
}

fn actions13(actions: &[FlowAction]) -> Vec<v13::Action> {
    actions
        .iter()
        .map(|a| match a {
            FlowAction::Output(p) => v13::Action::Output {
                port: *p,
                max_len: v13::CONTROLLER_MAX_LEN_NO_BUFFER,
            },
            FlowAction::SetEthSrc(m) => v13::Action::SetField(Oxm::EthSrc(*m, None)),
            FlowAction::SetEthDst(m) => v13::Action::SetField(Oxm::EthDst(*m, None)),
        })
        .collect()
}

impl FlowSpec {
    pub fn new(priority: u16, match_: FlowMatch, actions: Vec<FlowAction>) -> FlowSpec {
        FlowSpec {
            table_id: 0,
            priority,
            cookie: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            match_,
            actions,
        }
    }

    /// The FLOW_MOD ADD for a switch speaking `version`.
    pub fn add(&self, version: u8) -> Result<Body, FlowError> {
        match version {
            OFP10_VERSION => {
                if self.table_id != 0 {
                    return Err(FlowError::NotIn10("switches have no table_id in FLOW_MOD"));
                }
                Ok(Body::V10(v10::Body::FlowMod(v10::FlowMod {
                    match_: self.match_.to_v10()?,
                    cookie: self.cookie,
                    command: v10::FlowModCommand::Add,
                    idle_timeout: self.idle_timeout,
                    hard_timeout: self.hard_timeout,
                    priority: self.priority,
                    buffer_id: v10::NO_BUFFER,
                    out_port: v10::port::NONE,
                    flags: 0,
                    actions: actions10(&self.actions)?,
                })))
            }
            OFP13_VERSION => {
                let mut fm = v13::FlowMod::add(self.priority);
                fm.table_id = self.table_id;
                fm.cookie = self.cookie;
                fm.idle_timeout = self.idle_timeout;
                fm.hard_timeout = self.hard_timeout;
                fm.match_ = self.match_.to_v13()?;
                if !self.actions.is_empty() {
                    fm.instructions = vec![v13::Instruction::ApplyActions(actions13(&self.actions))];
                }
                Ok(Body::V13(v13::Body::FlowMod(fm)))
            }
            v => Err(FlowError::Version(v)),
        }
    }
}

impl FlowFilter {
    /// Every flow whose cookie is `cookie`.
    pub fn by_cookie(cookie: u64) -> FlowFilter {
        FlowFilter {
            cookie: Some(cookie),
            ..Default::default()
        }
    }

    /// The FLOW_MOD DELETE (or DELETE_STRICT) for a switch speaking `version`.
    /// Whether deleting with this filter removes `flow` (OpenFlow's rule:
    /// strict, the same match and priority; otherwise every field the
    /// filter names matches the flow's, prefixes within the filter's).
    pub fn covers(&self, flow: &FlowSpec) -> bool {
        if self.cookie.is_some_and(|c| c != flow.cookie) || self.table_id.is_some_and(|t| t != flow.table_id) {
            return false;
        }
        if self.strict {
            return self.match_ == flow.match_ && self.priority == flow.priority;
        }
        let (f, m) = (&self.match_, &flow.match_);
        fn same<T: PartialEq>(want: &Option<T>, got: &Option<T>) -> bool {
            want.is_none() || want == got
        }
        fn within(want: &Option<String>, got: &Option<String>) -> bool {
            let Some(w) = want else { return true };
            let (Some(g), Ok((wa, wl))) = (got, parse_prefix(w)) else {
                return false;
            };
            let Ok((ga, gl)) = parse_prefix(g) else { return false };
            let mask = |l: u8| if l == 0 { 0 } else { u32::MAX << (32 - l as u32) };
            gl >= wl && u32::from(wa) & mask(wl) == u32::from(ga) & mask(wl)
        }
        same(&f.in_port, &m.in_port)
            && same(&f.eth_src, &m.eth_src)
            && same(&f.eth_dst, &m.eth_dst)
            && same(&f.eth_type, &m.eth_type)
            && same(&f.ip_proto, &m.ip_proto)
            && within(&f.ipv4_src, &m.ipv4_src)
            && within(&f.ipv4_dst, &m.ipv4_dst)
            && same(&f.tp_src, &m.tp_src)
            && same(&f.tp_dst, &m.tp_dst)
    }

    pub fn delete(&self, version: u8) -> Result<Body, FlowError> {
        match version {
            OFP10_VERSION => {
                if self.cookie.is_some() {
                    return Err(FlowError::NotIn10("cannot delete by cookie"));
                }
                Ok(Body::V10(v10::Body::FlowMod(v10::FlowMod {
                    match_: self.match_.to_v10()?,
                    cookie: 0,
                    command: if self.strict {
                        v10::FlowModCommand::DeleteStrict
                    } else {
                        v10::FlowModCommand::Delete
                    },
                    idle_timeout: 0,
                    hard_timeout: 0,
                    priority: self.priority,
                    buffer_id: v10::NO_BUFFER,
                    out_port: v10::port::NONE,
                    flags: 0,
                    actions: Vec::new(),
                })))
            }
            OFP13_VERSION => {
                let mut fm = v13::FlowMod::add(self.priority);
                fm.command = if self.strict {
                    v13::FlowModCommand::DeleteStrict
                } else {
                    v13::FlowModCommand::Delete
                };
                fm.table_id = self.table_id.unwrap_or(v13::TABLE_ALL);
                if let Some(c) = self.cookie {
                    fm.cookie = c;
                    fm.cookie_mask = u64::MAX;
                }
                fm.match_ = self.match_.to_v13()?;
                Ok(Body::V13(v13::Body::FlowMod(fm)))
            }
            v => Err(FlowError::Version(v)),
        }
    }
}

/// A packet sent out of `ports` of a switch: the data, or the switch's
/// buffer `buffer_id` when it is not NO_BUFFER; `in_port` None means the
/// packet comes from the controller.
pub fn packet_out(
    version: u8,
    buffer_id: u32,
    in_port: Option<u32>,
    ports: &[u32],
    data: &[u8],
) -> Result<Body, FlowError> {
    let data = ofwire::Bytes(data.to_vec());
    match version {
        OFP10_VERSION => Ok(Body::V10(v10::Body::PacketOut(v10::PacketOut {
            buffer_id,
            in_port: in_port.map_or(Ok(v10::port::NONE), port10)?,
            actions: ports
                .iter()
                .map(|p| {
                    Ok(v10::Action::Output {
                        port: port10(*p)?,
                        max_len: 0,
                    })
                })
                .collect::<Result<_, FlowError>>()?,
            data,
        }))),
        OFP13_VERSION => Ok(Body::V13(v13::Body::PacketOut(v13::PacketOut {
            buffer_id,
            in_port: in_port.unwrap_or(v13::port::CONTROLLER),
            actions: ports
                .iter()
                .map(|p| v13::Action::Output { port: *p, max_len: 0 })
                .collect(),
            data,
        }))),
        v => Err(FlowError::Version(v)),
    }
}

const RESERVED_PORTS: [(&str, u32); 7] = [
    ("in_port", v13::port::IN_PORT),
    ("table", v13::port::TABLE),
    ("normal", v13::port::NORMAL),
    ("flood", v13::port::FLOOD),
    ("all", v13::port::ALL),
    ("controller", v13::port::CONTROLLER),
    ("local", v13::port::LOCAL),
];

/// Ports in JSON: a number, or a reserved port's name.
mod port {
    use super::RESERVED_PORTS;
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u32),
        Name(String),
    }

    pub fn serialize<S: Serializer>(p: &u32, s: S) -> Result<S::Ok, S::Error> {
        match RESERVED_PORTS.iter().find(|(_, n)| n == p) {
            Some((name, _)) => s.serialize_str(name),
            None => s.serialize_u32(*p),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        match Either::deserialize(d)? {
            Either::Number(n) => Ok(n),
            Either::Name(s) => RESERVED_PORTS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(&s))
                .map(|(_, n)| *n)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "unknown port '{s}': use a number or one of in_port, table, normal, flood, all, controller, local"
                    ))
                }),
        }
    }
}

mod port_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
        match p {
            Some(p) => super::port::serialize(p, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        #[derive(Deserialize)]
        struct W(#[serde(with = "super::port")] u32);
        Ok(Option::<W>::deserialize(d)?.map(|w| w.0))
    }
}

/// MAC addresses in JSON: "02:00:00:00:00:01".
pub mod mac {
    use ofwire::MacAddr;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn parse(s: &str) -> Option<MacAddr> {
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for b in out.iter_mut() {
            let p = parts.next()?;
            if p.len() != 2 {
                return None;
            }
            *b = u8::from_str_radix(p, 16).ok()?;
        }
        parts.next().is_none().then_some(MacAddr(out))
    }

    pub fn serialize<S: Serializer>(m: &MacAddr, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&m.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<MacAddr, D::Error> {
        let s = String::deserialize(d)?;
        parse(&s).ok_or_else(|| serde::de::Error::custom(format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)")))
    }
}

mod mac_opt {
    use ofwire::MacAddr;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(m: &Option<MacAddr>, s: S) -> Result<S::Ok, S::Error> {
        match m {
            Some(m) => super::mac::serialize(m, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<MacAddr>, D::Error> {
        #[derive(Deserialize)]
        struct W(#[serde(with = "super::mac")] MacAddr);
        Ok(Option::<W>::deserialize(d)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_covers_the_flows_openflow_would_delete() {
        let flow: FlowSpec = serde_json::from_str(
            r#"{"priority": 700, "cookie": 7, "match": {"eth_type": 2048, "ipv4_dst": "10.1.2.0/24", "tp_dst": 53, "ip_proto": 17}, "actions": []}"#,
        )
        .unwrap();
        let f = |s: &str| serde_json::from_str::<FlowFilter>(s).unwrap();
        assert!(f("{}").covers(&flow));
        assert!(f(r#"{"match": {"eth_type": 2048}}"#).covers(&flow));
        assert!(f(r#"{"match": {"ipv4_dst": "10.1.0.0/16"}}"#).covers(&flow));
        assert!(!f(r#"{"match": {"ipv4_dst": "10.1.2.128/25"}}"#).covers(&flow));
        assert!(!f(r#"{"match": {"ipv4_dst": "10.2.0.0/16"}}"#).covers(&flow));
        assert!(!f(r#"{"match": {"tp_dst": 54}}"#).covers(&flow));
        assert!(!f(r#"{"match": {"in_port": 1}}"#).covers(&flow));
        assert!(f(r#"{"cookie": 7}"#).covers(&flow));
        assert!(!f(r#"{"cookie": 8}"#).covers(&flow));
        // Strict: the same match and priority only.
        assert!(!f(r#"{"strict": true, "priority": 700, "match": {"eth_type": 2048}}"#).covers(&flow));
        let exact = format!(
            r#"{{"strict": true, "priority": 700, "match": {}}}"#,
            serde_json::to_string(&flow.match_).unwrap()
        );
        assert!(f(&exact).covers(&flow));
        assert!(!f(&exact.replace("700", "701")).covers(&flow));
    }

    #[test]
    fn json_flow_becomes_both_versions() {
        let spec: FlowSpec = serde_json::from_str(
            r#"{"priority": 300, "match": {"in_port": 1, "eth_type": 2048, "ipv4_dst": "10.0.0.0/24",
                "ip_proto": 6, "tp_dst": 80}, "actions": [{"output": 2}, {"output": "controller"}]}"#,
        )
        .unwrap();
        let Body::V10(v10::Body::FlowMod(fm)) = spec.add(OFP10_VERSION).unwrap() else {
            panic!()
        };
        assert_eq!(fm.match_.nw_dst_prefix_len(), 24);
        assert_eq!(fm.match_.tp_dst, 80);
        assert_eq!(
            fm.actions[1],
            v10::Action::Output {
                port: 0xfffd,
                max_len: 0xffff
            }
        );
        let Body::V13(v13::Body::FlowMod(fm)) = spec.add(OFP13_VERSION).unwrap() else {
            panic!()
        };
        assert!(fm.match_.fields.contains(&Oxm::TcpDst(80)));
        assert!(fm.match_.fields.contains(&Oxm::Ipv4Dst(
            Ipv4Addr::new(10, 0, 0, 0),
            Some(Ipv4Addr::new(255, 255, 255, 0))
        )));
        // Encodes (the wire library validates prerequisites and lengths).
        ofwire::Message::new(OFP13_VERSION, 1, Body::V13(v13::Body::FlowMod(fm)))
            .encode(&mut Vec::new())
            .unwrap();
        let back: FlowSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
    }

    #[test]
    fn bad_flows_are_explained() {
        let missing: FlowSpec = serde_json::from_str(r#"{"match": {"ipv4_dst": "10.0.0.1"}}"#).unwrap();
        assert!(missing.add(OFP13_VERSION).unwrap_err().to_string().contains("eth_type"));
        let e = serde_json::from_str::<FlowSpec>(r#"{"actions": [{"output": "sideways"}]}"#).unwrap_err();
        assert!(e.to_string().contains("unknown port 'sideways'"), "{e}");
        let e = serde_json::from_str::<FlowSpec>(r#"{"match": {"eth_dst": "02:00"}}"#).unwrap_err();
        assert!(e.to_string().contains("not a MAC address"), "{e}");
        let e = serde_json::from_str::<FlowSpec>(r#"{"match": {"vlan": 5}}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
        let big = FlowSpec::new(1, FlowMatch::default(), vec![FlowAction::Output(70000)]);
        assert!(big.add(OFP10_VERSION).unwrap_err().to_string().contains("1.0"));
    }
}
