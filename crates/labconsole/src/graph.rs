//! The topology of a run as Graphviz DOT: switches as boxes, hosts as
//! ellipses with their addresses, each link labelled with the switch's port
//! numbers; a link that is down (or left down to break a loop) is dashed.

use netlab::run::State;

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn quote(s: &str) -> String {
    format!("\"{}\"", escape(s))
}

/// A label of several lines: each escaped, joined by DOT's line break
/// (which escaping the joined text would turn into a visible `\n`).
fn lines(ls: &[&str]) -> String {
    let parts: Vec<String> = ls.iter().map(|l| escape(l)).collect();
    format!("\"{}\"", parts.join("\\n"))
}

fn is_up(ifname: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{ifname}/flags"))
        .ok()
        .and_then(|f| u32::from_str_radix(f.trim().trim_start_matches("0x"), 16).ok())
        .is_some_and(|f| f & 1 != 0)
}

/// The run as a DOT graph.
pub fn dot(st: &State) -> String {
    let mut out = format!("graph {} {{\n  layout=dot;\n", quote(&format!("sdnlab run {}", st.id)));
    out.push_str("  node [shape=box, style=rounded];\n");
    for (name, _) in &st.switches {
        out.push_str(&format!("  {};\n", quote(name)));
    }
    out.push_str("  node [shape=ellipse, style=solid];\n");
    for h in &st.hosts {
        out.push_str(&format!(
            "  {} [label={}];\n",
            quote(&h.name),
            lines(&[&h.name, &h.ip.to_string()])
        ));
    }
    let ports = st.ports();
    let port_of = |sw: &str, iface: &str| {
        netlab::state::State::port_no(&ports, sw, iface).map_or(String::new(), |n| n.to_string())
    };
    for l in &st.links {
        let (ta, hb) = if l.root_ends.len() == 2 {
            (port_of(&l.a, &l.root_ends[0]), port_of(&l.b, &l.root_ends[1]))
        } else if st.switches.iter().any(|(n, _)| *n == l.a) {
            (port_of(&l.a, &l.root_ends[0]), "eth0".to_string())
        } else {
            ("eth0".to_string(), port_of(&l.b, &l.root_ends[0]))
        };
        let down = l.blocked || !l.root_ends.iter().all(|e| is_up(e));
        out.push_str(&format!(
            "  {} -- {} [taillabel={}, headlabel={}{}];\n",
            quote(&l.a),
            quote(&l.b),
            quote(&ta),
            quote(&hb),
            if down { ", style=dashed" } else { "" }
        ));
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's name and address on two lines, as Graphviz draws them:
    /// one DOT line break (`\n`), not an escaped backslash that shows.
    #[test]
    fn a_label_of_two_lines_keeps_its_line_break() {
        assert_eq!(lines(&["h1", "10.0.0.1"]), "\"h1\\n10.0.0.1\"");
        assert_eq!(lines(&["a\"b", "c\\d"]), "\"a\\\"b\\nc\\\\d\"");
    }
}
