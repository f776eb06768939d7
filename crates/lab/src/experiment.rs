//! The content of an experiment file: which experiment, and its config.
//!
//! ```toml
//! experiment = "ctl"
//! test = "cbench"
//! mode = "latency"
//! switches = 16
//! ```
//!
//! Every parameter left out takes its documented default; an unknown one is
//! an error (a misspelt parameter must not silently run the default).
//! `to_toml` writes every parameter, resolved, so a file written by a run
//! repeats that run exactly.

use crate::ctl::CtlConfig;
use crate::{LabError, Observer, Outcome};
use serde::Serialize;
use std::path::Path;

/// Any experiment sdnlab runs from a file.
// One value per run, built once and passed by reference: its size is of
// no account (boxing the controller benchmark's variant would only add
// indirection to every match).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "experiment", rename_all = "kebab-case")]
pub enum Experiment {
    /// The controller benchmark (`sdnlab bench ctl`): cbench modes, the
    /// RFC 8456 tests and suite, against sdnlab's own controller, a
    /// target or the peers.
    Ctl(CtlConfig),
    /// The switch forwarding benchmark (`sdnlab bench switch`).
    Switch(crate::switch::SwitchConfig),
    /// The data-plane benchmark (`sdnlab bench dp`): RFC 2544 / 9004 and
    /// the OpenFlow scenarios.
    Dp(crate::dp::DpConfig),
    /// The traffic generators side by side (`sdnlab bench gen`).
    Gen(crate::gen::GenConfig),
    /// The load-balancing experiment (`sdnlab bench lb`).
    Lb(crate::lb::LbConfig),
    /// sdnlab's emulation against Mininet's (`sdnlab bench fidelity`).
    Fidelity(crate::fidelity::FidelityConfig),
    /// A network brought up and checked (pings, iperf3), on this machine
    /// or spread over workers.
    Net(crate::net::NetConfig),
}

const KINDS: &str = "write experiment = \"ctl\", \"switch\", \"dp\", \"gen\", \"lb\", \"fidelity\" or \"net\"";

/// Why a file's text is not an experiment: one line, naming the parameter
/// and its line where they are known.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Not TOML.
    #[error("{}{message}", place(.line))]
    Toml { line: Option<usize>, message: String },
    /// `experiment = ` something other than text.
    #[error("experiment = {0}: {KINDS}")]
    KindNotText(String),
    #[error("no experiment named: {KINDS} at the top of the file")]
    NoKind,
    #[error("experiment = \"{0}\" is not one sdnlab runs: {KINDS}")]
    UnknownKind(String),
    /// A parameter the experiment does not have, or a value of the wrong type.
    #[error("{}{}{message}", place(.line), .path.as_ref().map(|p| format!("{p}: ")).unwrap_or_default())]
    Value {
        line: Option<usize>,
        path: Option<String>,
        message: String,
    },
}

fn place(line: &Option<usize>) -> String {
    line.map(|l| format!("line {l}: ")).unwrap_or_default()
}

impl Experiment {
    /// Reads and validates an experiment file.
    pub fn load(path: &Path) -> Result<Experiment, LabError> {
        let file = |message: String| LabError::File {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file(e.to_string()))?;
        let e = Experiment::parse(&text).map_err(|e| file(e.to_string()))?;
        e.validate().map_err(|err| {
            let keys = FileKeys::new(&e, &text);
            match err {
                LabError::Config(m) => file(as_file_keys(&m, &keys, true)),
                LabError::Param(p) => file(param_in_file(&p, &keys)),
                LabError::Conflict(c) => file(conflict_in_file(&c, &keys)),
                other => other,
            }
        })?;
        Ok(e)
    }

    /// Parses TOML text (not validated); the error is one line naming the
    /// parameter and its line.
    pub fn parse(text: &str) -> Result<Experiment, ParseError> {
        let mut table: toml::Table = toml::from_str(text).map_err(|e| ParseError::Toml {
            // toml's message spans lines (the offending line, a caret); keep
            // its first sentence and the place.
            line: e.span().map(|s| line_of(text, s.start)),
            message: e.message().replace('\n', " "),
        })?;
        let kind = match table.remove("experiment") {
            Some(toml::Value::String(k)) => k,
            Some(other) => return Err(ParseError::KindNotText(other.to_string())),
            None => return Err(ParseError::NoKind),
        };
        // The config is read from the table with the path of any bad value
        // kept, so the message names the parameter (and its line).
        fn config<T: serde::de::DeserializeOwned>(text: &str, table: toml::Table) -> Result<T, ParseError> {
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let path = e.path().to_string();
                // The key the path starts with (`failures[1]`: `failures`).
                let key = path.split(['.', '[']).next().unwrap_or_default().to_string();
                let inner = e.into_inner().to_string();
                let (message, of_value) = unknown_with_hint(inner.lines().next().unwrap_or_default(), &path);
                let line = key_line(text, &key).filter(|_| !key.is_empty()).map(|i| i + 1);
                match line {
                    // The key is in the message (as `check::not_one_of` words it).
                    Some(_) if of_value || message.starts_with("unknown key") => ParseError::Value {
                        line,
                        path: None,
                        message,
                    },
                    Some(_) if path != "." => ParseError::Value {
                        line,
                        path: Some(path),
                        message,
                    },
                    _ => ParseError::Value {
                        line: None,
                        path: None,
                        message,
                    },
                }
            })
        }
        match kind.as_str() {
            "ctl" => Ok(Experiment::Ctl(config(text, table)?)),
            "switch" => Ok(Experiment::Switch(config(text, table)?)),
            "dp" => Ok(Experiment::Dp(config(text, table)?)),
            "gen" => Ok(Experiment::Gen(config(text, table)?)),
            "lb" => Ok(Experiment::Lb(config(text, table)?)),
            "fidelity" => Ok(Experiment::Fidelity(config(text, table)?)),
            "net" => Ok(Experiment::Net(config(text, table)?)),
            other => Err(ParseError::UnknownKind(other.into())),
        }
    }

    /// Every parameter, resolved, as an experiment file.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).unwrap_or_else(|e| format!("# cannot write the experiment: {e}\n"));
        format!(
            "# sdnlab experiment, every parameter resolved: `sdnlab run THIS_FILE` repeats it.\n\
             # Parameters: docs/EXPERIMENTS.md.\n{body}"
        )
    }

    /// The options whose key in a file is another word than the flag's
    /// (`--peer` sets `peers`), as (flag, key): read from the config's
    /// own command-line declaration, so the two cannot drift apart.
    fn renamed_flags(&self) -> Vec<(String, String)> {
        use clap::Args;
        let cmd = clap::Command::new("sdnlab");
        let cmd = match self {
            Experiment::Ctl(_) => CtlConfig::augment_args(cmd),
            Experiment::Switch(_) => crate::switch::SwitchConfig::augment_args(cmd),
            Experiment::Dp(_) => crate::dp::DpConfig::augment_args(cmd),
            Experiment::Gen(_) => crate::gen::GenConfig::augment_args(cmd),
            Experiment::Lb(_) => crate::lb::LbConfig::augment_args(cmd),
            Experiment::Fidelity(_) => crate::fidelity::FidelityConfig::augment_args(cmd),
            // Not declared for the command line: its keys are its flags.
            Experiment::Net(_) => return Vec::new(),
        };
        cmd.get_arguments()
            .filter_map(|a| {
                let (long, id) = (a.get_long()?, a.get_id().as_str());
                (long.replace('-', "_") != id).then(|| (long.to_string(), id.to_string()))
            })
            .collect()
    }

    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), LabError> {
        match self {
            Experiment::Ctl(c) => c.validate(),
            Experiment::Switch(c) => c.validate(),
            Experiment::Dp(c) => c.validate(),
            Experiment::Gen(c) => c.validate(),
            Experiment::Lb(c) => c.validate(),
            Experiment::Fidelity(c) => c.validate(),
            Experiment::Net(c) => c.validate(),
        }
    }

    /// Runs the experiment into `place`.
    pub fn run(&self, place: &crate::rundir::Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
        if place.workers.is_some() {
            match self {
                Experiment::Net(_) => {}
                // (Its own checks: the external switch only, ports named WORKER:IF.)
                Experiment::Dp(_) => {}
                Experiment::Ctl(c) if c.test.spreads_over_workers() && c.suite.is_none() && c.peers.is_empty() =>
                {
                    // (sdnlab's cluster is started on the workers themselves.)
                    if c.target.is_none() && !(c.cluster > 0 && c.peer.is_none()) {
                        return Err(crate::check::Conflict::new(
                            "name the controller the workers reach (--target HOST:PORT), or start sdnlab's cluster on them (--cluster N)",
                        )
                        .flag("workers")
                        .into());
                    }
                }
                _ => {
                    return Err(crate::check::Conflict::new(
                        "workers spread experiment = \"net\", the controller benchmark's cbench, rate, sessions, dos, discovery, discovery-size and change-detection tests (with a target), and bench dp's external switch so far; run this one without --workers",
                    )
                    .flag("workers")
                    .into())
                }
            }
        }
        let r = match self {
            Experiment::Ctl(c) => crate::ctl::run(c, place, obs),
            Experiment::Switch(c) => crate::switch::run(c, place, obs),
            Experiment::Dp(c) => crate::dp::run(c, place, obs),
            Experiment::Gen(c) => crate::gen::run(c, place, obs),
            Experiment::Lb(c) => crate::lb::run(c, place, obs),
            Experiment::Fidelity(c) => crate::fidelity::run(c, place, obs),
            // (A network's run ends with Ctrl-C by design.)
            Experiment::Net(c) => return crate::net::run(c, place, obs),
        };
        // An experiment that ended its trials early on a stop signal and
        // wrote its run: said as one interrupted (exit code 130), and its
        // run directory marked so, in meta.json and the report.
        let dir = match &r {
            _ if !place.stop.stopping() => return r,
            Err(LabError::Interrupted { .. }) => return r,
            Ok(o) => o.dir.clone(),
            // Ended by an error on its way out: its run directory, if it
            // wrote one.
            Err(_) => match place.handed.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                Some(d) if d.join("meta.json").exists() => d,
                _ => return r,
            },
        };
        let event = format!("interrupted; partial results in {}", dir.display());
        report::add_event(&dir, &event).map_err(crate::rundir::io_error(&dir))?;
        Err(LabError::Interrupted { dir })
    }
}

/// serde's "unknown field `x`, expected one of `a`, `b`, ..." as the
/// likely meaning ("unknown key `x`: did you mean `b`?") or, with none
/// close enough, the list; its "unknown variant" of the value at `path`
/// as a choice's own check words it (`mode = 'x': did you mean 'y'?
/// choose one of y, z`), and whether it was one.
fn unknown_with_hint(message: &str, path: &str) -> (String, bool) {
    let (what, rest) = if let Some(r) = message.strip_prefix("unknown field `") {
        ("key", r)
    } else if let Some(r) = message.strip_prefix("unknown variant `") {
        ("value", r)
    } else {
        return (message.to_string(), false);
    };
    let Some((word, rest)) = rest.split_once('`') else {
        return (message.to_string(), false);
    };
    let choices: Vec<&str> = rest
        .split_once("expected one of ")
        .or_else(|| rest.split_once("expected "))
        .map(|(_, list)| {
            // "`a`, `b`, `c`", or of two "`a` or `b`".
            list.split(", ")
                .flat_map(|c| c.split(" or "))
                .map(|c| c.trim_matches(|ch| ch == '`' || ch == ' '))
                .collect()
        })
        .unwrap_or_default();
    if what == "value" {
        let problem = crate::check::not_one_of(word, &choices);
        return (format!("{path} = '{word}': {problem}"), true);
    }
    let message = match crate::check::closest(word, choices.iter().copied()) {
        Some(m) => format!("unknown key `{word}`: did you mean `{m}`?"),
        None => format!("unknown key `{word}` (the keys: {})", choices.join(", ")),
    };
    (message, false)
}

/// How a file names the options a check speaks of, as the command line
/// spells them: its text; the experiment with every key, which tells
/// flags that are keys from those that are not (`--workers`); and the
/// flags whose key is another word (`--peer` sets `peers`).
struct FileKeys<'a> {
    text: &'a str,
    all: String,
    renamed: Vec<(String, String)>,
}

impl<'a> FileKeys<'a> {
    fn new(e: &Experiment, text: &'a str) -> FileKeys<'a> {
        FileKeys {
            text,
            all: e.to_toml(),
            renamed: e.renamed_flags(),
        }
    }

    /// The key a file sets option `name` (a flag without its dashes) by.
    fn key(&self, name: &str) -> String {
        match self.renamed.iter().find(|(flag, _)| flag == name) {
            Some((_, key)) => key.clone(),
            None => name.replace('-', "_"),
        }
    }

    /// Whether `k` is a key of the experiment's file: in the text, or
    /// among every key of the experiment.
    fn is_key(&self, k: &str) -> bool {
        self.all.lines().chain(self.text.lines()).any(|l| sets(l, k))
    }

    /// The 0-based line of the text that sets key `k`.
    fn line(&self, k: &str) -> Option<usize> {
        key_line(self.text, k)
    }
}

/// The 0-based line of `text` that sets key `k`.
fn key_line(text: &str, k: &str) -> Option<usize> {
    text.lines().position(|l| sets(l, k))
}

/// Whether line `l` of a TOML file sets key `k`.
fn sets(l: &str, k: &str) -> bool {
    l.trim_start()
        .strip_prefix(k)
        .is_some_and(|r| r.trim_start().starts_with('='))
}

/// A parameter's error as a file's reader needs it: its key as the file
/// writes it, and its line ("line 2: switches = 0: ..."); the command
/// line's form for an option that is no key of the file.
fn param_in_file(p: &crate::check::ParamError, keys: &FileKeys) -> String {
    let key = keys.key(&p.name);
    if !keys.is_key(&key) {
        return p.to_string();
    }
    let said = format!("{key} = {}: {}", p.value, p.problem);
    match keys.line(&key) {
        Some(i) => format!("line {}: {said}", i + 1),
        None => said,
    }
}

/// A conflict as a file's reader needs it: each parameter that is a key
/// of the file as `key = VALUE` (or the key alone, when its value is not
/// the point), the others as the command line gives them, the options
/// the problem names as keys, at the line of the first parameter the file
/// sets ("line 4: test = failover, target = ...: ...").
fn conflict_in_file(c: &crate::check::Conflict, keys: &FileKeys) -> String {
    let mut line = None;
    let mut said = Vec::new();
    for g in &c.given {
        let key = keys.key(&g.name);
        if !keys.is_key(&key) {
            said.push(g.as_flag());
            continue;
        }
        line = line.or_else(|| keys.line(&key));
        said.push(match &g.value {
            Some(v) => format!("{key} = {v}"),
            None => key,
        });
    }
    let said = format!("{}: {}", said.join(", "), as_file_keys(&c.problem, keys, false));
    match line {
        Some(i) => format!("line {}: {said}", i + 1),
        None => said,
    }
}

/// A check's text, which spells options as the command line does
/// (`--switches 0: ...`), as a file's reader needs it: each flag that is
/// a key written as the key, the leading one as "key =", and the line of
/// the first ("line 2: ..."). For the checks that are not one parameter's
/// (`ParamError`): those that relate several.
fn as_file_keys(message: &str, keys: &FileKeys, at_line: bool) -> String {
    let mut out = String::new();
    let mut first_key = None;
    let mut rest = message;
    while let Some(i) = rest.find("--") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(after.len());
        let key = keys.key(&after[..len]);
        if len > 0 && keys.is_key(&key) {
            // The leading "--key VALUE:" reads "key = VALUE:".
            let leading = out.is_empty() && after[len..].starts_with(' ');
            out.push_str(&key);
            if leading {
                out.push_str(" =");
            }
            first_key.get_or_insert(key);
        } else {
            out.push_str(&rest[i..i + 2 + len]);
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    match first_key.and_then(|k| keys.line(&k)).filter(|_| at_line) {
        Some(i) => format!("line {}: {out}", i + 1),
        None => out,
    }
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctl::CtlTest;

    /// A parameter out of range is said at its key and line in a file,
    /// and as its flag on the command line, from one structured error.
    #[test]
    fn a_parameter_out_of_range_is_said_at_its_key_and_line() {
        let text = "experiment = \"switch\"\n\n# a comment\nflow_mods = 0\n";
        let e = Experiment::parse(text).unwrap();
        let err = e.validate().unwrap_err();
        let LabError::Param(p) = &err else {
            panic!("not structured: {err:?}")
        };
        assert_eq!((p.name.as_str(), p.value.as_str()), ("flow-mods", "0"));
        assert_eq!(
            err.to_string(),
            "--flow-mods 0: must be at least 1 and at most 10000000"
        );
        assert_eq!(
            param_in_file(p, &FileKeys::new(&e, text)),
            "line 4: flow_mods = 0: must be at least 1 and at most 10000000"
        );
        // An option that is no key of the file keeps its flag.
        let flag = crate::check::ParamError::new("workers", "x", "no such file");
        assert_eq!(
            param_in_file(&flag, &FileKeys::new(&e, text)),
            "--workers x: no such file"
        );
    }

    /// Parameters that do not go together are said as flags on the command
    /// line and, from the same structured error, as keys at the line of
    /// the first one a file sets; the options the fix names become keys.
    #[test]
    fn a_conflict_is_said_at_its_keys_and_line() {
        let text = "experiment = \"ctl\"\n# a failover\ntest = \"failover\"\ncluster = 1\n";
        let e = Experiment::parse(text).unwrap();
        let err = e.validate().unwrap_err();
        let LabError::Conflict(c) = &err else {
            panic!("not structured: {err:?}")
        };
        let named: Vec<&str> = c.given.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(named, ["cluster", "test"]);
        assert_eq!(
            err.to_string(),
            "--cluster 1 --test failover: a failover needs a member to take over; give 2 or more"
        );
        assert_eq!(
            conflict_in_file(c, &FileKeys::new(&e, text)),
            "line 4: cluster = 1, test = failover: a failover needs a member to take over; give 2 or more"
        );
        // A key the file leaves at its default is still said as a key,
        // the fix's option too; the line is the first key's the file sets.
        let text = "experiment = \"ctl\"\n\nmatch_by = \"new-source\"\n";
        let e = Experiment::parse(text).unwrap();
        let Err(LabError::Conflict(c)) = e.validate() else {
            panic!("match_by without ofp 1.3 was taken")
        };
        assert_eq!(
            conflict_in_file(&c, &FileKeys::new(&e, text)),
            "line 3: match_by = new-source, ofp = 1.0: the answers are OpenFlow 1.3 FLOW_MODs; add ofp 1.3"
        );
        // An option that is no key of the file keeps its flag.
        let c = crate::check::Conflict::new("leave one of them out")
            .with("cluster", 2)
            .flag("workers");
        assert_eq!(
            conflict_in_file(&c, &FileKeys::new(&e, "experiment = \"ctl\"\ncluster = 2\n")),
            "line 2: cluster = 2, --workers: leave one of them out"
        );
    }

    /// A flag whose key is another word is said by the key in a file
    /// (`--peer` sets `peers`), as the config's declaration maps them.
    #[test]
    fn a_renamed_flag_is_said_by_its_key() {
        let text = "experiment = \"ctl\"\npeers = [\"sdnlab\"]\ntarget = \"127.0.0.1:6653\"\n";
        let e = Experiment::parse(text).unwrap();
        let err = e.validate().unwrap_err();
        let LabError::Conflict(c) = &err else {
            panic!("not structured: {err:?}")
        };
        assert!(err.to_string().starts_with("--target --peer: choose one"), "{err}");
        assert_eq!(
            conflict_in_file(c, &FileKeys::new(&e, text)),
            "line 3: target, peers: choose one (a target is a controller sdnlab does not start)"
        );
        let keys = FileKeys::new(&e, text);
        assert_eq!(
            (keys.key("peer"), keys.key("loop-ms")),
            ("peers".to_string(), "loop_ms".to_string())
        );
    }

    /// `bench ctl`'s test is one of its names, refused otherwise with the
    /// closest and the list, at its line.
    #[test]
    fn an_unknown_ctl_test_is_said_with_the_tests() {
        let e = Experiment::parse("experiment = \"ctl\"\ntest = \"discovry\"\n").unwrap_err();
        let said = e.to_string();
        assert!(
            said.starts_with("line 2: test = 'discovry': did you mean 'discovery'?"),
            "{said}"
        );
        for t in CtlTest::ALL {
            assert!(said.contains(t.name()), "{t} missing: {said}");
        }
        let Experiment::Ctl(c) = Experiment::parse("experiment = \"ctl\"\ntest = \"change-detection\"\n").unwrap()
        else {
            panic!("not ctl")
        };
        assert_eq!(c.test, CtlTest::ChangeDetection);
    }

    /// A choice read from a file is refused with the names it has, at its
    /// line: the net experiment's switch kind (netlab's own type).
    #[test]
    fn an_unknown_switch_kind_is_said_with_the_kinds() {
        let e = Experiment::parse("experiment = \"net\"\nswitch = \"ovss\"\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: switch = 'ovss': did you mean 'ovs'? choose one of bridge, ovs, sdnlab"
        );
        let Ok(Experiment::Net(c)) = Experiment::parse("experiment = \"net\"\nswitch = \"sdnlab\"\n") else {
            panic!("a known kind was refused")
        };
        assert_eq!(c.switch, netlab::run::SwitchKind::Sdnlab);
    }

    /// The examples in the repository are experiments sdnlab accepts as written.
    #[test]
    fn every_example_file_is_a_valid_experiment() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/experiments");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let e = Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"));
                // What a run writes reads back as the same experiment.
                assert_eq!(Experiment::parse(&e.to_toml()).unwrap(), e, "{}", path.display());
                n += 1;
            }
        }
        assert!(n >= 4, "{n} examples in {}", dir.display());
    }
}
