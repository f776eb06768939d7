//! Range checks shared by every experiment's configuration: each refuses a
//! value with a `ParamError` naming the parameter and what it accepts,
//! which the command line says as `--name VALUE: ...` and an experiment
//! file's reader as `name = VALUE: ...` at its line. Nothing out of range
//! is clamped silently.

use crate::LabError;

/// Declares a choice among names (a switch, a load, a client): an enum
/// whose every variant has one name, the same on the command line (clap's
/// `ValueEnum`), in an experiment file (serde) and in reports (`Display`,
/// `name()`), with `ALL` in the order written.
macro_rules! choice {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $var:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
        $vis enum $name {
            $($(#[$vm])* #[serde(rename = $text)] #[value(name = $text)] $var),+
        }

        impl $name {
            /// Every one, in the order declared.
            pub const ALL: &'static [$name] = &[$($name::$var),+];

            /// Its name, as flags, files and reports give it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$var => $text),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}
pub(crate) use choice;

/// One parameter outside what it accepts. `name` is spelled as the
/// command line spells the option (`loop-ms`); a file's key is the same
/// with underscores (`loop_ms`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("--{name} {value}: {problem}")]
pub struct ParamError {
    pub name: String,
    /// The value as given (a word in quotes).
    pub value: String,
    /// What it accepts, or what is wrong with it.
    pub problem: String,
}

impl ParamError {
    pub fn new(name: &str, value: impl std::fmt::Display, problem: impl Into<String>) -> ParamError {
        ParamError {
            name: name.to_string(),
            value: value.to_string(),
            problem: problem.into(),
        }
    }
}

/// Parameters that do not go together, or one that needs another: each as
/// it was given, and what to change. The command line says it as
/// `--test failover --target 127.0.0.1:6653: ...`, a file's reader as
/// `line 4: test = failover, target = 127.0.0.1:6653: ...` (the line of
/// the first parameter the file sets).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}: {problem}", self.flags())]
pub struct Conflict {
    /// The parameters, as the command line spells them, in the order said.
    pub given: Vec<Given>,
    /// Why they do not go together, and the fix. It may name other
    /// options (`add --cluster N`), which a file's reader words as keys.
    pub problem: String,
}

/// One parameter of a `Conflict`: its name as the command line spells it,
/// and its value, none for a switch (`--quick`) or an option named only.
#[derive(Clone, Debug, PartialEq)]
pub struct Given {
    pub name: String,
    pub value: Option<String>,
}

impl Conflict {
    /// A conflict said by `problem`; name its parameters with `with` and `flag`.
    pub fn new(problem: impl Into<String>) -> Conflict {
        Conflict {
            given: Vec::new(),
            problem: problem.into(),
        }
    }

    /// Names a parameter and the value it was given.
    pub fn with(mut self, name: &str, value: impl std::fmt::Display) -> Conflict {
        self.given.push(Given {
            name: name.to_string(),
            value: Some(value.to_string()),
        });
        self
    }

    /// Names a parameter without a value: a switch, or an option whose
    /// value does not matter to the problem.
    pub fn flag(mut self, name: &str) -> Conflict {
        self.given.push(Given {
            name: name.to_string(),
            value: None,
        });
        self
    }

    /// The parameters as the command line gives them: `--a X --b`.
    pub fn flags(&self) -> String {
        self.given.iter().map(Given::as_flag).collect::<Vec<_>>().join(" ")
    }
}

impl Given {
    /// The parameter as the command line gives it: `--a X`, or `--b`.
    pub fn as_flag(&self) -> String {
        match &self.value {
            Some(v) => format!("--{} {v}", self.name),
            None => format!("--{}", self.name),
        }
    }
}

/// `--name: name at least one WHAT` if the list `name` is empty.
pub fn at_least_one<T>(name: &str, list: &[T], what: &str) -> Result<(), LabError> {
    if list.is_empty() {
        Err(Conflict::new(format!("name at least one {what}")).flag(name).into())
    } else {
        Ok(())
    }
}

/// `--name VALUE: must be at least LO and at most HI` unless `LO <= v <= HI`.
pub fn range<T: PartialOrd + std::fmt::Display>(name: &str, v: T, lo: T, hi: T) -> Result<(), LabError> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ParamError::new(name, v, format!("must be at least {lo} and at most {hi}")).into())
    }
}

/// Like `range` for reals, which must also be finite.
pub fn real(name: &str, v: f64, lo: f64, hi: f64) -> Result<(), LabError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ParamError::new(name, v, format!("must be a number at least {lo} and at most {hi}")).into())
    }
}

/// What is wrong with `v`, which is none of `allowed`: the likely meaning,
/// then the list ("did you mean 'b'? choose one of a, b").
pub(crate) fn not_one_of(v: &str, allowed: &[&str]) -> String {
    format!(
        "{}choose one of {}",
        closest(v, allowed.iter().copied())
            .map(|w| format!("did you mean '{w}'? "))
            .unwrap_or_default(),
        allowed.join(", ")
    )
}

/// The choice `word` most likely misspells, if one is close enough: the
/// Jaro similarity clap's "did you mean" uses, over its threshold (0.7).
pub fn closest<'a>(word: &str, choices: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    choices
        .into_iter()
        .map(|c| (strsim::jaro(word, c), c))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelling_finds_what_it_meant_and_nonsense_finds_nothing() {
        let keys = ["switches", "macs", "loops", "loop_ms", "test", "trials"];
        assert_eq!(closest("switchs", keys), Some("switches"));
        assert_eq!(closest("loop_sm", keys), Some("loop_ms"));
        assert_eq!(closest("tirals", keys), Some("trials"));
        assert_eq!(closest("zzzz", keys), None);
        let e = not_one_of("cbnech", &["cbench", "rate"]);
        assert_eq!(e, "did you mean 'cbench'? choose one of cbench, rate");
        let e = not_one_of("qqq", &["cbench", "rate"]);
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn a_conflict_names_each_parameter_as_the_command_line_gives_it() {
        let c = Conflict::new("choose one").with("test", "failover").flag("target");
        assert_eq!(c.to_string(), "--test failover --target: choose one");
        let e: LabError = c.clone().into();
        assert!(e.is_usage());
        assert_eq!(e.to_string(), c.to_string());
    }
}
