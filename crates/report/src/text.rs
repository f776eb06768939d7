//! How the reports write text: HTML escaped, units as people read them.
//! Shared by the pages (`html`, `suite`, `compare`) and the verdicts, so
//! neither depends on the other for it.

/// `s` safe inside HTML text and attribute values.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A unit as the reports write it: microseconds as µs, everywhere.
pub fn unit_text(unit: &str) -> String {
    if unit == "us" {
        "µs".into()
    } else {
        unit.replace(" us", " µs").replace("(us)", "(µs)")
    }
}
