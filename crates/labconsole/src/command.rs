//! The prompt's language, without I/O: a typed line becomes a [`Command`]
//! (or one line saying what is wrong), node names in a node's command
//! become addresses as Mininet does, and a partial line gets its tab
//! completions. Everything here is a pure function of the line and the
//! network's names, so it is tested without a network.

/// The names the prompt knows: hosts (with their addresses) and switches.
#[derive(Clone, Debug, Default)]
pub struct Names {
    pub hosts: Vec<(String, String)>,
    pub switches: Vec<String>,
}

impl Names {
    pub fn is_host(&self, n: &str) -> bool {
        self.hosts.iter().any(|(h, _)| h == n)
    }
    pub fn is_switch(&self, n: &str) -> bool {
        self.switches.iter().any(|s| s == n)
    }
    pub fn is_node(&self, n: &str) -> bool {
        self.is_host(n) || self.is_switch(n)
    }
    /// Every node name, hosts first.
    pub fn nodes(&self) -> Vec<&str> {
        self.hosts
            .iter()
            .map(|(h, _)| h.as_str())
            .chain(self.switches.iter().map(String::as_str))
            .collect()
    }
    fn address(&self, n: &str) -> Option<&str> {
        self.hosts.iter().find(|(h, _)| h == n).map(|(_, a)| a.as_str())
    }

    /// The names of a run's nodes.
    pub fn of(st: &netlab::run::State) -> Names {
        Names {
            hosts: st.hosts.iter().map(|h| (h.name.clone(), h.ip.to_string())).collect(),
            switches: st.switches.iter().map(|(n, _)| n.clone()).collect(),
        }
    }

    /// A command's arguments with each that is a host's name made its
    /// address (the program, the first, is left as it is): `ping h4`.
    pub fn substitute_args(&self, argv: &[String]) -> Vec<String> {
        argv.iter()
            .enumerate()
            .map(|(i, a)| match self.address(a) {
                Some(addr) if i > 0 => addr.to_string(),
                _ => a.clone(),
            })
            .collect()
    }
}

/// One line of the prompt, understood.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// An empty line or a comment.
    Nothing,
    Help,
    Exit,
    /// Every ordered host pair, one ping each (`full`: with round-trip times).
    PingAll {
        full: bool,
    },
    /// The first two hosts, both ways.
    PingPair,
    /// TCP throughput between two hosts (the first and last by default).
    Iperf {
        pair: Option<(String, String)>,
        seconds: u32,
    },
    /// UDP at an offered rate (iperf3's `-b`, e.g. `10M`).
    IperfUdp {
        rate: String,
        pair: Option<(String, String)>,
        seconds: u32,
    },
    Link {
        a: String,
        b: String,
        up: bool,
    },
    Nodes,
    Net,
    Links,
    Ports,
    Dump,
    Intfs,
    /// `ovs-ofctl CMD TARGET ARGS...` against every switch.
    Dpctl {
        args: Vec<String>,
    },
    Switch {
        name: String,
        start: bool,
    },
    Source {
        path: String,
    },
    /// A shell command in the root namespace.
    Sh {
        line: String,
    },
    /// A shell command in a node (a host's namespace; a switch's is the root).
    Node {
        node: String,
        line: String,
    },
    /// The switch's flow table, read through OpenFlow.
    Flows {
        switch: String,
    },
    /// What the controller's REST API says.
    Controller,
    /// Live port counters of a switch (for `seconds`, or until a key).
    Watch {
        switch: String,
        seconds: Option<u32>,
    },
    /// The topology as DOT; SVG into `file` when it ends in `.svg`.
    Graph {
        file: Option<String>,
    },
}

/// The prompt's commands, their arguments and what they do (`help`, and
/// the first word's completions).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("help", "", "this list"),
    ("nodes", "", "the nodes of the network"),
    ("net", "", "each node's links (interface:peer)"),
    ("links", "", "every link, its interfaces and their state"),
    ("ports", "", "each switch's OpenFlow ports"),
    ("intfs", "", "each node's interfaces"),
    ("dump", "", "each node: kind, address, namespace or process"),
    ("pingall", "", "one ping between every ordered host pair"),
    ("pingallfull", "", "pingall with round-trip times"),
    ("pingpair", "", "ping between the first two hosts"),
    (
        "iperf",
        "[H1 H2] [SECONDS]",
        "TCP throughput (first and last host by default)",
    ),
    (
        "iperfudp",
        "[RATE] [H1 H2] [SECONDS]",
        "UDP at RATE (default 10M): received rate and loss",
    ),
    ("link", "A B up|down", "bring a link up or down"),
    ("switch", "S start|stop", "stop a switch or start it again"),
    (
        "dpctl",
        "CMD [ARGS]",
        "ovs-ofctl CMD against every switch (dump-flows, show, ...)",
    ),
    ("flows", "S", "switch S's flow table, read through OpenFlow"),
    ("controller", "", "the controller's view: switches, links, hosts, paths"),
    (
        "watch",
        "S [SECONDS]",
        "switch S's port counters, live, until a key is pressed",
    ),
    ("graph", "[FILE.svg]", "the topology as DOT, or drawn as SVG into FILE"),
    ("source", "FILE", "run the commands in FILE"),
    ("sh", "CMD", "run CMD in a shell in the root namespace"),
    (
        "NODE",
        "CMD",
        "run CMD in NODE (other node names become their addresses)",
    ),
    (
        "exit",
        "",
        "leave (the network goes down unless --keep); also quit, Ctrl-D",
    ),
];

/// `ovs-ofctl` subcommands offered after `dpctl`.
pub const DPCTL: &[&str] = &[
    "show",
    "dump-flows",
    "dump-ports",
    "dump-ports-desc",
    "dump-tables",
    "dump-groups",
    "dump-meters",
    "dump-aggregate",
    "add-flow",
    "del-flows",
    "mod-port",
    "get-frags",
];

/// A line the console cannot run: what is wrong, in the one line shown.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadLine {
    /// The command's usage.
    #[error("usage: {0}")]
    Usage(String),
    /// A name that is not one of the network's nodes.
    #[error("no {kind} '{name}' (`nodes` lists them)")]
    NoSuch { kind: &'static str, name: String },
    #[error("'{0}' is not a duration in seconds (1 to 3600)")]
    NotSeconds(String),
    #[error("'{0}' is not a rate (e.g. 10M, 1.5G, 800k)")]
    NotRate(String),
    #[error("'{word}': {what}")]
    NotOneOf { word: String, what: &'static str },
    #[error("unbalanced quotes")]
    Quotes,
    /// `iperf H1`: a host alone.
    #[error("iperf {0}: give two hosts (iperf {0} H2 [SECONDS]), or none for the first and last")]
    OneHost(String),
    #[error("unknown command or node '{0}' (`help` lists the commands, `nodes` the nodes)")]
    Unknown(String),
}

fn usage(u: impl Into<String>) -> BadLine {
    BadLine::Usage(u.into())
}

fn need(words: &[String], n: usize, u: &str) -> Result<(), BadLine> {
    if words.len() != n {
        Err(usage(u))
    } else {
        Ok(())
    }
}

fn seconds(s: &str) -> Result<u32, BadLine> {
    match s.parse::<u32>() {
        Ok(n) if (1..=3600).contains(&n) => Ok(n),
        _ => Err(BadLine::NotSeconds(s.to_string())),
    }
}

/// Whether `s` reads as iperf3's rate (`10M`, `1.5G`, `800k`, `1000000`).
fn is_rate(s: &str) -> bool {
    let digits = s.trim_end_matches(['k', 'K', 'm', 'M', 'g', 'G']);
    !digits.is_empty() && digits.len() + 1 >= s.len() && digits.parse::<f64>().is_ok_and(|v| v > 0.0)
}

impl Command {
    /// Reads one line. An error is the one line to show.
    pub fn parse(line: &str, names: &Names) -> Result<Command, BadLine> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(Command::Nothing);
        }
        let (first, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        if names.is_node(first) {
            if rest.is_empty() {
                return Err(usage(format!("{first} CMD (a command to run in {first})")));
            }
            return Ok(Command::Node {
                node: first.into(),
                line: rest.into(),
            });
        }
        if first == "sh" {
            if rest.is_empty() {
                return Err(usage("sh CMD"));
            }
            return Ok(Command::Sh { line: rest.into() });
        }
        let words = shlex::split(line).ok_or(BadLine::Quotes)?;
        let args = &words[1..];
        let switch = |n: &String| known(names, "switch", n);
        Ok(match first {
            "help" | "?" => Command::Help,
            "exit" | "quit" => Command::Exit,
            "pingall" => {
                need(&words, 1, "pingall")?;
                Command::PingAll { full: false }
            }
            "pingallfull" => {
                need(&words, 1, "pingallfull")?;
                Command::PingAll { full: true }
            }
            "pingpair" => {
                need(&words, 1, "pingpair")?;
                Command::PingPair
            }
            "nodes" | "net" | "links" | "ports" | "dump" | "intfs" | "controller" => {
                need(&words, 1, first)?;
                match first {
                    "nodes" => Command::Nodes,
                    "net" => Command::Net,
                    "links" => Command::Links,
                    "ports" => Command::Ports,
                    "dump" => Command::Dump,
                    "intfs" => Command::Intfs,
                    _ => Command::Controller,
                }
            }
            "iperf" => parse_iperf(args, names)?,
            "iperfudp" => parse_iperfudp(args, names)?,
            "link" => parse_link(&words, names)?,
            "switch" => parse_switch(&words, names)?,
            "dpctl" => {
                if args.is_empty() {
                    return Err(usage("dpctl CMD [ARGS] (e.g. dpctl dump-flows)"));
                }
                Command::Dpctl { args: args.to_vec() }
            }
            "flows" => {
                need(&words, 2, "flows S")?;
                Command::Flows {
                    switch: switch(&args[0])?,
                }
            }
            "watch" => {
                if !(2..=3).contains(&words.len()) {
                    return Err(usage("watch S [SECONDS]"));
                }
                Command::Watch {
                    switch: switch(&args[0])?,
                    seconds: args.get(1).map(|s| seconds(s)).transpose()?,
                }
            }
            "graph" => match args.len() {
                0 => Command::Graph { file: None },
                1 => Command::Graph {
                    file: Some(args[0].clone()),
                },
                _ => return Err(usage("graph [FILE.svg]")),
            },
            "source" => {
                need(&words, 2, "source FILE")?;
                Command::Source { path: args[0].clone() }
            }
            other => return Err(BadLine::Unknown(other.to_string())),
        })
    }
}

/// `n` if it names a `kind` ("host", "switch" or "node") of the network.
fn known(names: &Names, kind: &'static str, n: &str) -> Result<String, BadLine> {
    let is = match kind {
        "host" => names.is_host(n),
        "switch" => names.is_switch(n),
        _ => names.is_node(n),
    };
    if is {
        Ok(n.to_string())
    } else {
        Err(BadLine::NoSuch {
            kind,
            name: n.to_string(),
        })
    }
}

/// `iperf [H1 H2] [SECONDS]`.
fn parse_iperf(args: &[String], names: &Names) -> Result<Command, BadLine> {
    let host = |n: &String| known(names, "host", n);
    let u = "iperf [H1 H2] [SECONDS]";
    let (pair, secs) = match args.len() {
        0 => (None, 5),
        1 if names.is_host(&args[0]) => return Err(BadLine::OneHost(args[0].clone())),
        1 => (None, seconds(&args[0])?),
        2 => (Some((host(&args[0])?, host(&args[1])?)), 5),
        3 => (Some((host(&args[0])?, host(&args[1])?)), seconds(&args[2])?),
        _ => return Err(usage(u)),
    };
    Ok(Command::Iperf { pair, seconds: secs })
}

/// `iperfudp [RATE] [H1 H2] [SECONDS]`.
fn parse_iperfudp(args: &[String], names: &Names) -> Result<Command, BadLine> {
    let host = |n: &String| known(names, "host", n);
    let mut a: &[String] = args;
    let mut rate = "10M".to_string();
    if let Some(r) = a.first().filter(|r| !names.is_node(r)) {
        if !is_rate(r) {
            return Err(BadLine::NotRate(r.clone()));
        }
        rate = r.clone();
        a = &a[1..];
    }
    let (pair, secs) = match a.len() {
        0 => (None, 5),
        2 => (Some((host(&a[0])?, host(&a[1])?)), 5),
        3 => (Some((host(&a[0])?, host(&a[1])?)), seconds(&a[2])?),
        _ => return Err(usage("iperfudp [RATE] [H1 H2] [SECONDS]")),
    };
    Ok(Command::IperfUdp {
        rate,
        pair,
        seconds: secs,
    })
}

/// `link A B up|down`.
fn parse_link(words: &[String], names: &Names) -> Result<Command, BadLine> {
    let args = &words[1..];
    let node = |n: &String| known(names, "node", n);
    need(words, 4, "link A B up|down")?;
    let up = match args[2].as_str() {
        "up" => true,
        "down" => false,
        o => {
            return Err(BadLine::NotOneOf {
                word: o.to_string(),
                what: "a link goes up or down",
            })
        }
    };
    Ok(Command::Link {
        a: node(&args[0])?,
        b: node(&args[1])?,
        up,
    })
}

/// `switch S start|stop`.
fn parse_switch(words: &[String], names: &Names) -> Result<Command, BadLine> {
    let args = &words[1..];
    need(words, 3, "switch S start|stop")?;
    let start = match args[1].as_str() {
        "start" => true,
        "stop" => false,
        o => {
            return Err(BadLine::NotOneOf {
                word: o.to_string(),
                what: "a switch can start or stop",
            })
        }
    };
    Ok(Command::Switch {
        name: known(names, "switch", &args[0])?,
        start,
    })
}

/// Mininet's substitution: in a node's command, each word that is a host's
/// name becomes the host's address (`h1 ping -c1 h2`). Quoting is kept.
pub fn substitute(line: &str, names: &Names) -> String {
    let mut out = String::with_capacity(line.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match names.address(word) {
            Some(a) => out.push_str(a),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in line.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Tab completion: where the word under the cursor starts, and what it may become.
pub fn complete(line: &str, pos: usize, names: &Names) -> (usize, Vec<String>) {
    let before = &line[..pos.min(line.len())];
    let start = before.rfind(char::is_whitespace).map(|i| i + 1).unwrap_or(0);
    let partial = &before[start..];
    let done: Vec<&str> = before[..start].split_whitespace().collect();
    let nodes = names.nodes();
    let switches: Vec<&str> = names.switches.iter().map(String::as_str).collect();
    let hosts: Vec<&str> = names.hosts.iter().map(|(h, _)| h.as_str()).collect();
    let pool: Vec<&str> = match done.as_slice() {
        [] => COMMANDS
            .iter()
            .map(|c| c.0)
            .filter(|c| *c != "NODE")
            .chain(["quit", "sh"])
            .chain(nodes.iter().copied())
            .collect(),
        ["link"] | ["link", _] => nodes,
        ["link", _, _] => vec!["up", "down"],
        ["switch"] | ["flows"] | ["watch"] => switches,
        ["switch", _] => vec!["start", "stop"],
        ["dpctl"] => DPCTL.to_vec(),
        ["iperf"] | ["iperf", _] | ["iperfudp", ..] => hosts,
        ["source"] | ["graph"] | ["sh", ..] => Vec::new(),
        [first, ..] if names.is_node(first) => nodes,
        _ => Vec::new(),
    };
    let mut out: Vec<String> = pool
        .into_iter()
        .filter(|c| c.starts_with(partial))
        .map(String::from)
        .collect();
    out.sort();
    out.dedup();
    (start, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            hosts: vec![
                ("h1".into(), "10.0.0.1".into()),
                ("h2".into(), "10.0.0.2".into()),
                ("h10".into(), "10.0.0.10".into()),
            ],
            switches: vec!["s1".into(), "s2".into()],
        }
    }

    /// `net exec h1 -- ping h10`: the host's name becomes its address,
    /// whole words only, never the program.
    #[test]
    fn a_commands_arguments_get_addresses() {
        let argv: Vec<String> = ["h2", "-c", "1", "h10", "h1x", "s1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            names().substitute_args(&argv),
            ["h2", "-c", "1", "10.0.0.10", "h1x", "s1"]
        );
    }

    #[test]
    fn node_commands_and_substitution() {
        let n = names();
        assert_eq!(
            Command::parse("h1 ping -c1 h2", &n),
            Ok(Command::Node {
                node: "h1".into(),
                line: "ping -c1 h2".into()
            })
        );
        assert_eq!(substitute("ping -c1 h2", &n), "ping -c1 10.0.0.2");
        // Whole words only: h10 is not h1 followed by 0; s1 has no address.
        assert_eq!(substitute("ping h10 h1x s1  'h2'", &n), "ping 10.0.0.10 h1x s1  'h2'");
        assert!(Command::parse("h1", &n).unwrap_err().to_string().contains("usage"));
    }

    #[test]
    fn mininet_commands() {
        let n = names();
        let p = |l: &str| Command::parse(l, &n);
        assert_eq!(p("  "), Ok(Command::Nothing));
        assert_eq!(p("# a comment"), Ok(Command::Nothing));
        assert_eq!(p("pingall"), Ok(Command::PingAll { full: false }));
        assert_eq!(p("quit"), Ok(Command::Exit));
        assert_eq!(
            p("link s1 s2 down"),
            Ok(Command::Link {
                a: "s1".into(),
                b: "s2".into(),
                up: false
            })
        );
        assert_eq!(
            p("iperf h1 h2 3"),
            Ok(Command::Iperf {
                pair: Some(("h1".into(), "h2".into())),
                seconds: 3
            })
        );
        assert_eq!(
            p("iperfudp 20M h2 h1"),
            Ok(Command::IperfUdp {
                rate: "20M".into(),
                pair: Some(("h2".into(), "h1".into())),
                seconds: 5
            })
        );
        assert_eq!(
            p("iperfudp"),
            Ok(Command::IperfUdp {
                rate: "10M".into(),
                pair: None,
                seconds: 5
            })
        );
        assert_eq!(
            p("dpctl dump-flows -O OpenFlow13"),
            Ok(Command::Dpctl {
                args: vec!["dump-flows".into(), "-O".into(), "OpenFlow13".into()]
            })
        );
        assert_eq!(
            p("sh echo 'a  b' | wc -c"),
            Ok(Command::Sh {
                line: "echo 'a  b' | wc -c".into()
            })
        );
        assert_eq!(
            p("watch s1 2"),
            Ok(Command::Watch {
                switch: "s1".into(),
                seconds: Some(2)
            })
        );
    }

    #[test]
    fn bad_lines_get_one_line_each() {
        let n = names();
        for (line, says) in [
            ("frobnicate", "unknown command or node 'frobnicate'"),
            ("h9 ping h1", "unknown command or node 'h9'"),
            ("link s1 s9 down", "no node 's9'"),
            ("link s1 s2 sideways", "up or down"),
            ("iperf h1 s1", "no host 's1'"),
            ("iperf h1", "give two hosts (iperf h1 H2 [SECONDS])"),
            ("iperf h1 h2 0", "not a duration"),
            ("iperfudp fast", "not a rate"),
            ("switch h1 stop", "no switch 'h1'"),
            ("flows", "usage: flows S"),
            ("pingall now", "usage: pingall"),
            ("dpctl", "usage: dpctl"),
            ("source 'unterminated", "unbalanced quotes"),
        ] {
            let e = Command::parse(line, &n).expect_err(line).to_string();
            assert!(e.contains(says), "{line}: {e}");
            assert!(!e.contains('\n'), "{line}: one line");
        }
    }

    #[test]
    fn completion() {
        let n = names();
        assert_eq!(
            complete("pi", 2, &n),
            (0, vec!["pingall".into(), "pingallfull".into(), "pingpair".into()])
        );
        assert_eq!(
            complete("h1 ping h", 9, &n),
            (8, vec!["h1".into(), "h10".into(), "h2".into()])
        );
        assert_eq!(complete("link s1 s2 ", 11, &n), (11, vec!["down".into(), "up".into()]));
        assert_eq!(complete("flows ", 6, &n), (6, vec!["s1".into(), "s2".into()]));
        assert_eq!(complete("dpctl dump-f", 12, &n), (6, vec!["dump-flows".into()]));
        assert_eq!(complete("s", 1, &n).1, vec!["s1", "s2", "sh", "source", "switch"]);
    }
}
