//! Small value types shared by both protocol versions.

use std::fmt;

/// An Ethernet address. Prints as `aa:bb:cc:dd:ee:ff`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 == 1
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why text did not parse as a MAC address or as hex (the wire crate
/// keeps to hand-written errors, as its decoder's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextError {
    /// A MAC address without six ':'-separated bytes.
    MacParts(String),
    /// A byte of a MAC address that is not hex.
    MacByte { mac: String, byte: String },
    /// Hex with an odd number of digits.
    OddHex(usize),
    /// A character that is not a hex digit, at this digit.
    NotHex { digit: char, at: usize },
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::MacParts(s) => write!(f, "MAC address '{s}' must have six ':'-separated bytes"),
            TextError::MacByte { mac, byte } => write!(f, "MAC address '{mac}': bad byte '{byte}'"),
            TextError::OddHex(n) => write!(f, "odd number of hex digits ({n})"),
            TextError::NotHex { digit, at } => write!(f, "'{digit}' at hex digit {at} is not a hex digit"),
        }
    }
}

impl std::error::Error for TextError {}

impl std::str::FromStr for MacAddr {
    type Err = TextError;
    fn from_str(s: &str) -> Result<Self, TextError> {
        let mut out = [0u8; 6];
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 6 {
            return Err(TextError::MacParts(s.to_string()));
        }
        for (o, p) in out.iter_mut().zip(parts) {
            *o = u8::from_str_radix(p, 16).map_err(|_| TextError::MacByte {
                mac: s.to_string(),
                byte: p.to_string(),
            })?;
        }
        Ok(MacAddr(out))
    }
}

impl serde::Serialize for MacAddr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Opaque bytes (packet data, experimenter bodies). Serialises as hex.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Bytes(pub Vec<u8>);

impl Bytes {
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&[u8]> for Bytes {
    fn from(b: &[u8]) -> Self {
        Bytes(b.to_vec())
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(b: Vec<u8>) -> Self {
        Bytes(b)
    }
}

/// Lower-case hex of a byte slice.
pub fn to_hex(b: &[u8]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// Parses hex, ignoring whitespace and an optional `0x`; names the bad spot.
pub fn from_hex(s: &str) -> Result<Vec<u8>, TextError> {
    let s = s.trim();
    let s = s.strip_prefix("0x").unwrap_or(s);
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(TextError::OddHex(digits.len()));
    }
    let val = |c: u8, i: usize| -> Result<u8, TextError> {
        (c as char).to_digit(16).map(|d| d as u8).ok_or(TextError::NotHex {
            digit: c as char,
            at: i,
        })
    };
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, p)| Ok(val(p[0], 2 * i)? << 4 | val(p[1], 2 * i + 1)?))
        .collect()
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.len() > 64 {
            write!(f, "{}…({} bytes)", to_hex(&self.0[..64]), self.0.len())
        } else {
            write!(f, "{}", to_hex(&self.0))
        }
    }
}

impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&to_hex(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_prints_and_parses() {
        let m: MacAddr = "00:1b:21:0a:ff:01".parse().unwrap();
        assert_eq!(m.0, [0, 0x1b, 0x21, 0x0a, 0xff, 1]);
        assert_eq!(m.to_string(), "00:1b:21:0a:ff:01");
        assert!("00:1b:21".parse::<MacAddr>().is_err());
        assert!(MacAddr::BROADCAST.is_multicast());
    }

    #[test]
    fn hex_round_trips_and_names_bad_digits() {
        assert_eq!(from_hex("0x01 0a ff").unwrap(), vec![1, 10, 255]);
        assert_eq!(to_hex(&[1, 10, 255]), "010aff");
        assert_eq!(from_hex("abc").unwrap_err(), TextError::OddHex(3));
        assert_eq!(from_hex("zz").unwrap_err(), TextError::NotHex { digit: 'z', at: 0 });
        assert!(from_hex("zz").unwrap_err().to_string().contains("'z'"));
    }
}
