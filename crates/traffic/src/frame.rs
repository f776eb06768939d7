//! Test frames: Ethernet II, IPv4, UDP, then an 18-byte signature (16-bit
//! magic, 16-bit stream, 48-bit sequence, 64-bit send time in ns), which
//! just fits the smallest frame: 60 bytes before the FCS, i.e. the 64-byte
//! frame of RFC 2544.

pub const MAGIC: u16 = 0x5d1a;
/// Bytes before the signature: Ethernet 14, IPv4 20, UDP 8.
const SIG_AT: usize = 42;
pub const MIN_LEN: usize = 60;

/// A frame template for one stream; `stamp` fills in sequence and time.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Template {
    pub bytes: Vec<u8>,
}

fn checksum(b: &[u8]) -> u16 {
    let mut s = 0u32;
    for w in b.chunks(2) {
        s += u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

impl Template {
    /// A frame of `len` bytes (without FCS; at least 60) from `src` to `dst`.
    pub fn udp(
        len: usize,
        src_mac: [u8; 6],
        dst_mac: [u8; 6],
        src_ip: [u8; 4],
        dst_ip: [u8; 4],
        stream: u32,
    ) -> Template {
        let len = len.max(MIN_LEN);
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&dst_mac);
        f[6..12].copy_from_slice(&src_mac);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip_len = (len - 14) as u16;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&ip_len.to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&src_ip);
        f[30..34].copy_from_slice(&dst_ip);
        let c = checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f[34..36].copy_from_slice(&(10000 + (stream as u16 & 0x3fff)).to_be_bytes());
        f[36..38].copy_from_slice(&5001u16.to_be_bytes());
        f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
        // UDP checksum 0: none (IPv4 allows it), so stamping stays cheap.
        f[SIG_AT..SIG_AT + 2].copy_from_slice(&MAGIC.to_be_bytes());
        f[SIG_AT + 2..SIG_AT + 4].copy_from_slice(&(stream as u16).to_be_bytes());
        Template { bytes: f }
    }

    /// Writes sequence number and send time into the frame.
    #[inline]
    pub fn stamp(&mut self, seq: u64, sent_ns: u64) {
        self.bytes[SIG_AT + 4..SIG_AT + 10].copy_from_slice(&seq.to_be_bytes()[2..]);
        self.bytes[SIG_AT + 10..SIG_AT + 18].copy_from_slice(&sent_ns.to_be_bytes());
    }
}

/// The signature of a received frame: (stream, sequence, send time in ns).
#[inline]
pub fn signature(f: &[u8]) -> Option<(u32, u64, u64)> {
    // A switch may have pushed an 802.1Q tag (a receiver that gets it in
    // the frame rather than apart).
    let at = if f.get(12..14) == Some(&[0x81, 0x00]) {
        SIG_AT + 4
    } else {
        SIG_AT
    };
    let s = f.get(at..at + 18)?;
    if u16::from_be_bytes([s[0], s[1]]) != MAGIC {
        return None;
    }
    let mut seq = [0u8; 8];
    seq[2..].copy_from_slice(&s[4..10]);
    Some((
        u16::from_be_bytes([s[2], s[3]]) as u32,
        u64::from_be_bytes(seq),
        u64::from_be_bytes(s[10..18].try_into().ok()?),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_frame_reads_back_and_its_ip_header_checks() {
        let mut t = Template::udp(
            60,
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            7,
        );
        t.stamp(99, 123_456);
        assert_eq!(t.bytes.len(), 60);
        assert_eq!(signature(&t.bytes), Some((7, 99, 123_456)));
        assert_eq!(checksum(&t.bytes[14..34]), 0, "a header with its checksum sums to zero");
        let mut other = t.bytes.clone();
        other[SIG_AT] ^= 1;
        assert_eq!(signature(&other), None);
    }
}
