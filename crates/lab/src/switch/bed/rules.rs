//! The flow rules a bed installs: forwarding between its two ports, the
//! filler rules of the table-size variants, and their removal.

/// A FLOW_MOD removing every rule of every table.
pub(crate) fn delete_all() -> ofwire::v13::FlowMod {
    ofwire::v13::FlowMod {
        command: ofwire::v13::FlowModCommand::Delete,
        table_id: ofwire::v13::TABLE_ALL,
        ..ofwire::v13::FlowMod::add(0)
    }
}

/// in_port forwarding both ways between OpenFlow ports `a` and `b`.
pub(crate) fn forward_rules(a: u32, b: u32) -> Vec<ofwire::v13::FlowMod> {
    use ofwire::oxm::{Match, Oxm};
    use ofwire::v13::{Action, FlowMod, Instruction};
    [(a, b), (b, a)]
        .into_iter()
        .map(|(i, o)| FlowMod {
            match_: Match::new(vec![Oxm::InPort(i)]),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output { port: o, max_len: 0 }])],
            ..FlowMod::add(10)
        })
        .collect()
}

/// `n` rules at a higher priority that no test frame matches (exact IPv4
/// destinations in 11.0.0.0/8), so every frame still takes the forwarding
/// rule, past a table of `n`.
/// The cookie of the extra rules, so they can be removed at once.
pub(crate) const FILLER_COOKIE: u64 = 0x5d1a_f111;

pub(crate) fn filler_rules(n: usize, base: u32, out: u32) -> Vec<ofwire::v13::FlowMod> {
    use ofwire::oxm::{Match, Oxm};
    use ofwire::v13::{Action, FlowMod, Instruction};
    (0..n as u32)
        .map(|i| FlowMod {
            match_: Match::new(vec![
                Oxm::EthType(0x0800),
                Oxm::Ipv4Dst(std::net::Ipv4Addr::from(0x0b00_0000 + base + i), None),
            ]),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output {
                port: out,
                max_len: 0,
            }])],
            cookie: FILLER_COOKIE,
            ..FlowMod::add(100)
        })
        .collect()
}

/// Removes every extra rule (by cookie).
pub(crate) fn remove_filler() -> ofwire::v13::FlowMod {
    ofwire::v13::FlowMod {
        command: ofwire::v13::FlowModCommand::Delete,
        table_id: ofwire::v13::TABLE_ALL,
        cookie: FILLER_COOKIE,
        cookie_mask: u64::MAX,
        ..ofwire::v13::FlowMod::add(0)
    }
}
