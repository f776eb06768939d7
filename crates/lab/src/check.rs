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

/// `--name 'v': choose one of ...` unless `v` is allowed.
pub fn one_of(name: &str, v: &str, allowed: &[&str]) -> Result<(), LabError> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(LabError::Config(format!(
            "--{name} '{v}': choose one of {}",
            allowed.join(", ")
        )))
    }
}
