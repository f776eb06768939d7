//! A flow table as a person reads it: one line per entry, in the words
//! `ovs-ofctl dump-flows` uses (`table=0, priority=10, n_packets=3,
//! in_port=1,dl_dst=... actions=output:2`), so what `flows S` shows can be
//! compared with what `dpctl dump-flows` shows.

use ofwire::oxm::Oxm;
use ofwire::v13::{self, Action, FlowStats, Instruction};

fn masked<T: std::fmt::Display>(v: &T, m: &Option<T>) -> String {
    match m {
        Some(m) => format!("{v}/{m}"),
        None => v.to_string(),
    }
}

fn port(p: u32) -> String {
    match p {
        v13::port::IN_PORT => "IN_PORT".into(),
        v13::port::TABLE => "TABLE".into(),
        v13::port::NORMAL => "NORMAL".into(),
        v13::port::FLOOD => "FLOOD".into(),
        v13::port::ALL => "ALL".into(),
        v13::port::CONTROLLER => "CONTROLLER".into(),
        v13::port::LOCAL => "LOCAL".into(),
        v13::port::ANY => "ANY".into(),
        n => n.to_string(),
    }
}

/// One match field as `name=value`.
pub fn field(f: &Oxm) -> String {
    match f {
        Oxm::InPort(p) => format!("in_port={}", port(*p)),
        Oxm::Metadata(v, m) => format!("metadata={}", masked(&format!("{v:#x}"), &m.map(|m| format!("{m:#x}")))),
        Oxm::EthDst(v, m) => format!("dl_dst={}", masked(v, m)),
        Oxm::EthSrc(v, m) => format!("dl_src={}", masked(v, m)),
        Oxm::EthType(t) => format!("dl_type={t:#06x}"),
        Oxm::VlanVid(v, m) => format!("dl_vlan={}", masked(&(v & 0xfff), &m.map(|m| m & 0xfff))),
        Oxm::VlanPcp(p) => format!("dl_vlan_pcp={p}"),
        Oxm::IpDscp(d) => format!("ip_dscp={d}"),
        Oxm::IpProto(p) => format!("nw_proto={p}"),
        Oxm::Ipv4Src(v, m) => format!("nw_src={}", masked(v, m)),
        Oxm::Ipv4Dst(v, m) => format!("nw_dst={}", masked(v, m)),
        Oxm::Ipv6Src(v, m) => format!("ipv6_src={}", masked(v, m)),
        Oxm::Ipv6Dst(v, m) => format!("ipv6_dst={}", masked(v, m)),
        Oxm::TcpSrc(p) => format!("tp_src={p}"),
        Oxm::TcpDst(p) => format!("tp_dst={p}"),
        Oxm::UdpSrc(p) => format!("udp_src={p}"),
        Oxm::UdpDst(p) => format!("udp_dst={p}"),
        Oxm::Icmpv4Type(t) => format!("icmp_type={t}"),
        Oxm::Icmpv4Code(c) => format!("icmp_code={c}"),
        Oxm::ArpOp(o) => format!("arp_op={o}"),
        Oxm::ArpSpa(v, m) => format!("arp_spa={}", masked(v, m)),
        Oxm::ArpTpa(v, m) => format!("arp_tpa={}", masked(v, m)),
        other => format!("{other:?}"),
    }
}

/// One action as `ovs-ofctl` writes it.
pub fn action(a: &Action) -> String {
    match a {
        Action::Output { port: p, .. } => match *p {
            v13::port::CONTROLLER => "CONTROLLER".into(),
            n if n > v13::port::MAX => port(n),
            n => format!("output:{n}"),
        },
        Action::Group(g) => format!("group:{g}"),
        Action::SetQueue(q) => format!("set_queue:{q}"),
        Action::PushVlan(t) => format!("push_vlan:{t:#06x}"),
        Action::PopVlan => "pop_vlan".into(),
        Action::DecNwTtl => "dec_ttl".into(),
        Action::SetField(f) => {
            let text = field(f);
            match text.split_once('=') {
                Some((k, v)) => format!("set_field:{v}->{k}"),
                None => text,
            }
        }
        other => format!("{other:?}").to_lowercase(),
    }
}

/// One flow entry on one line.
pub fn line(f: &FlowStats) -> String {
    let mut head = format!(
        "table={}, priority={}, n_packets={}, n_bytes={}, duration={}.{:03}s",
        f.table_id,
        f.priority,
        f.packet_count,
        f.byte_count,
        f.duration_sec,
        f.duration_nsec / 1_000_000
    );
    if f.cookie != 0 {
        head.push_str(&format!(", cookie={:#x}", f.cookie));
    }
    if f.idle_timeout != 0 {
        head.push_str(&format!(", idle_timeout={}", f.idle_timeout));
    }
    if f.hard_timeout != 0 {
        head.push_str(&format!(", hard_timeout={}", f.hard_timeout));
    }
    let m: Vec<String> = f.match_.fields.iter().map(field).collect();
    let mut acts: Vec<String> = Vec::new();
    for i in &f.instructions {
        match i {
            Instruction::ApplyActions(a) => acts.extend(a.iter().map(action)),
            Instruction::WriteActions(a) => acts.push(format!(
                "write_actions({})",
                a.iter().map(action).collect::<Vec<_>>().join(",")
            )),
            Instruction::GotoTable(t) => acts.push(format!("goto_table:{t}")),
            Instruction::ClearActions => acts.push("clear_actions".into()),
            Instruction::Meter(m) => acts.push(format!("meter:{m}")),
            other => acts.push(format!("{other:?}").to_lowercase()),
        }
    }
    let acts = if acts.is_empty() {
        "drop".to_string()
    } else {
        acts.join(",")
    };
    if m.is_empty() {
        format!("{head}, actions={acts}")
    } else {
        format!("{head}, {} actions={acts}", m.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofwire::oxm::Match;

    #[test]
    fn a_learnt_entry_reads_as_ovs_ofctl_writes_it() {
        let f = FlowStats {
            table_id: 0,
            duration_sec: 4,
            duration_nsec: 250_000_000,
            priority: 10,
            idle_timeout: 60,
            hard_timeout: 0,
            flags: 0,
            cookie: 0,
            packet_count: 3,
            byte_count: 294,
            match_: Match::new(vec![
                Oxm::InPort(1),
                Oxm::EthDst(ofwire::types::MacAddr([0, 0, 0, 0, 0, 2]), None),
            ]),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: 0 }])],
        };
        assert_eq!(
            line(&f),
            "table=0, priority=10, n_packets=3, n_bytes=294, duration=4.250s, idle_timeout=60, \
             in_port=1,dl_dst=00:00:00:00:00:02 actions=output:2"
        );
        let miss = FlowStats {
            priority: 0,
            idle_timeout: 0,
            match_: Match::default(),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output {
                port: v13::port::CONTROLLER,
                max_len: 0xffff,
            }])],
            ..f
        };
        assert!(line(&miss).ends_with(", actions=CONTROLLER"), "{}", line(&miss));
    }
}
