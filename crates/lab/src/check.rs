//! Range checks shared by every experiment's configuration: each refuses a
//! value with one line naming the option as the command line spells it and
//! what it accepts. Nothing out of range is clamped silently.

use crate::LabError;

/// `--name VALUE: must be at least LO and at most HI` unless `LO <= v <= HI`.
pub fn range<T: PartialOrd + std::fmt::Display>(name: &str, v: T, lo: T, hi: T) -> Result<(), LabError> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(LabError::Config(format!(
            "--{name} {v}: must be at least {lo} and at most {hi}"
        )))
    }
}

/// Like `range` for reals, which must also be finite.
pub fn real(name: &str, v: f64, lo: f64, hi: f64) -> Result<(), LabError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(LabError::Config(format!(
            "--{name} {v}: must be a number at least {lo} and at most {hi}"
        )))
    }
}

/// `--name 'v': did you mean 'w'? choose one of ...` unless `v` is allowed.
pub fn one_of(name: &str, v: &str, allowed: &[&str]) -> Result<(), LabError> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(LabError::Config(format!(
            "--{name} '{v}': {}choose one of {}",
            closest(v, allowed.iter().copied())
                .map(|w| format!("did you mean '{w}'? "))
                .unwrap_or_default(),
            allowed.join(", ")
        )))
    }
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
        let e = one_of("test", "cbnech", &["cbench", "rate"]).unwrap_err().to_string();
        assert!(e.contains("did you mean 'cbench'? choose one of cbench, rate"), "{e}");
        let e = one_of("test", "qqq", &["cbench", "rate"]).unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }
}
