//! The common 8-byte OpenFlow header, the HELLO message (which every version
//! must understand for negotiation) and the stream framer.

use crate::codec::{Put, Reader};
use crate::error::{BadRequestCode, DecodeError, ErrorCode, HelloFailedCode};
use crate::types::Bytes;

pub const OFP_HEADER_LEN: usize = 8;
pub const OFPT_HELLO: u8 = 0;

/// `ofp_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub msg_type: u8,
    pub length: u16,
    pub xid: u32,
}

impl Header {
    /// Reads a header from the first 8 bytes, if there are 8.
    #[inline]
    pub fn peek(b: &[u8]) -> Option<Header> {
        if b.len() < OFP_HEADER_LEN {
            return None;
        }
        Some(Header {
            version: b[0],
            msg_type: b[1],
            length: u16::from_be_bytes([b[2], b[3]]),
            xid: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        })
    }

    #[inline]
    pub fn write(out: &mut Vec<u8>, version: u8, msg_type: u8, xid: u32) -> usize {
        let start = out.len();
        out.put_u8(version);
        out.put_u8(msg_type);
        out.put_u16(0); // patched by `finish`
        out.put_u32(xid);
        start
    }

    /// Patches the length of the message that starts at `start`.
    #[inline]
    pub fn finish(out: &mut [u8], start: usize) -> Result<(), crate::EncodeError> {
        let len = out.len() - start;
        if len > u16::MAX as usize {
            return Err(crate::EncodeError::TooLong(len));
        }
        out[start + 2..start + 4].copy_from_slice(&(len as u16).to_be_bytes());
        Ok(())
    }
}

/// OFPHET_VERSIONBITMAP.
pub const OFPHET_VERSIONBITMAP: u16 = 1;

/// One HELLO element (1.3 and later).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum HelloElement {
    /// The versions the sender supports: bit N of word W means version 32*W+N.
    VersionBitmap(Vec<u32>),
    /// An element type we do not know; kept so the message re-encodes exactly.
    Unknown { element_type: u16, data: Bytes },
}

/// OFPT_HELLO.
#[derive(Clone, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub struct Hello {
    pub elements: Vec<HelloElement>,
    /// A body that is not a well-formed list of elements. OpenFlow 1.0 says a
    /// HELLO body must be ignored, so such a body is kept, not rejected, for
    /// versions before 1.3.
    pub opaque_body: Option<Bytes>,
}

impl Hello {
    /// A HELLO advertising exactly `versions` (wire numbers) in a bitmap.
    pub fn with_versions(versions: &[u8]) -> Hello {
        let max = versions.iter().copied().max().unwrap_or(0) as usize;
        let mut words = vec![0u32; max / 32 + 1];
        for &v in versions {
            words[v as usize / 32] |= 1 << (v % 32);
        }
        Hello {
            elements: vec![HelloElement::VersionBitmap(words)],
            opaque_body: None,
        }
    }

    /// The versions in the first version bitmap, if the HELLO carries one.
    pub fn bitmap_versions(&self) -> Option<Vec<u8>> {
        self.elements.iter().find_map(|e| match e {
            HelloElement::VersionBitmap(words) => Some(
                (0..words.len() * 32)
                    .filter(|&v| v <= u8::MAX as usize && words[v / 32] & (1 << (v % 32)) != 0)
                    .map(|v| v as u8)
                    .collect(),
            ),
            _ => None,
        })
    }

    pub(crate) fn decode(version: u8, body: &[u8]) -> Result<Hello, DecodeError> {
        match Self::decode_elements(body) {
            Ok(elements) => Ok(Hello {
                elements,
                opaque_body: None,
            }),
            Err(_) if version < crate::OFP13_VERSION => Ok(Hello {
                elements: Vec::new(),
                opaque_body: Some(Bytes::from(body)),
            }),
            Err(e) => Err(e),
        }
    }

    fn decode_elements(body: &[u8]) -> Result<Vec<HelloElement>, DecodeError> {
        let mut r = Reader::new(body, ErrorCode::BadRequest(BadRequestCode::BadLen), "HELLO");
        let mut elements = Vec::new();
        while !r.is_empty() {
            let element_type = r.u16()?;
            let len = r.u16()? as usize;
            if len < 4 {
                return Err(DecodeError::bad_len(format!("HELLO: element length {len} is below 4")));
            }
            let mut e = r.sub(len - 4, "HELLO element")?;
            // Every element, the last included, is zero-padded to 8 bytes.
            r.pad(crate::codec::align8(len) - len)?;
            elements.push(match element_type {
                OFPHET_VERSIONBITMAP => {
                    if e.remaining() % 4 != 0 {
                        return Err(DecodeError::bad_len(format!(
                            "HELLO: version bitmap of {} bytes is not a whole number of 32-bit words",
                            e.remaining()
                        )));
                    }
                    let mut words = Vec::with_capacity(e.remaining() / 4);
                    while !e.is_empty() {
                        words.push(e.u32()?);
                    }
                    HelloElement::VersionBitmap(words)
                }
                t => HelloElement::Unknown {
                    element_type: t,
                    data: Bytes::from(e.rest()),
                },
            });
        }
        Ok(elements)
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        if let Some(b) = &self.opaque_body {
            out.put_slice(&b.0);
            return;
        }
        for e in &self.elements {
            let start = out.len();
            match e {
                HelloElement::VersionBitmap(words) => {
                    out.put_u16(OFPHET_VERSIONBITMAP);
                    out.put_u16((4 + 4 * words.len()) as u16);
                    for w in words {
                        out.put_u32(*w);
                    }
                }
                HelloElement::Unknown { element_type, data } => {
                    out.put_u16(*element_type);
                    out.put_u16((4 + data.len()) as u16);
                    out.put_slice(&data.0);
                }
            }
            out.pad_to_8(start);
        }
    }
}

/// The version two peers speak after exchanging HELLOs, following the 1.3
/// rules: with bitmaps on both sides, the highest common version; otherwise
/// the lower of the two header versions, if we support it. The error is the
/// HELLO_FAILED/INCOMPATIBLE a peer should be told.
pub fn negotiate_version(ours: &[u8], their_header_version: u8, their_hello: &Hello) -> Result<u8, DecodeError> {
    let chosen = match their_hello.bitmap_versions() {
        Some(theirs) => ours.iter().copied().filter(|v| theirs.contains(v)).max(),
        None => {
            let our_max = ours.iter().copied().max().unwrap_or(0);
            let v = our_max.min(their_header_version);
            ours.contains(&v).then_some(v)
        }
    };
    chosen.ok_or_else(|| {
        DecodeError::new(
            ErrorCode::HelloFailed(HelloFailedCode::Incompatible),
            format!(
                "no common OpenFlow version: we support {ours:?}, peer sent HELLO version {their_header_version:#04x}"
            ),
        )
    })
}

/// Splits a byte stream into whole OpenFlow messages.
///
/// Feed it whatever a read returned (`push`), or read straight into it
/// (`spare`, then `commit`: no copy, for hot loops); take messages out with
/// `next_message`. A length field below 8 or above `max_len` means the
/// stream can no longer be trusted: the error says so and the caller should
/// close the session.
#[derive(Debug)]
pub struct Framer {
    /// Bytes `start..end` are received and not yet returned; the rest is
    /// room (initialised once, when the buffer grows).
    buf: Vec<u8>,
    start: usize,
    end: usize,
    max_len: usize,
}

impl Default for Framer {
    fn default() -> Self {
        Framer::new(u16::MAX as usize)
    }
}

impl Framer {
    /// A framer for messages of at most `max_len` bytes. It allocates as
    /// bytes arrive (an idle connection holds next to nothing) and gives
    /// back a buffer grown past 256 KiB once it has been read through.
    pub fn new(max_len: usize) -> Self {
        Self::unallocated(max_len)
    }

    /// A framer that has not allocated yet (for swapping in and out of a struct).
    pub const fn unallocated(max_len: usize) -> Self {
        Framer {
            buf: Vec::new(),
            start: 0,
            end: 0,
            max_len,
        }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, data: &[u8]) {
        self.spare(data.len())[..data.len()].copy_from_slice(data);
        self.end += data.len();
    }

    /// Room for at least `min` more bytes, to read into; `commit` then
    /// says how many were read. Unread bytes move to the front only when
    /// the room at the back is short.
    #[inline]
    pub fn spare(&mut self, min: usize) -> &mut [u8] {
        if self.start == self.end {
            if self.buf.len() > 256 * 1024 {
                self.buf = Vec::new();
            }
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end < min {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.buf.len() - self.end < min {
                self.buf.resize(self.end + min, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// Takes `n` bytes read into `spare`'s room as received.
    #[inline]
    pub fn commit(&mut self, n: usize) {
        assert!(self.end + n <= self.buf.len(), "committed past the room given");
        self.end += n;
    }

    /// Bytes received but not yet returned as messages.
    pub fn pending(&self) -> usize {
        self.end - self.start
    }

    /// The next whole message, `Ok(None)` if more bytes are needed.
    #[inline]
    pub fn next_message(&mut self) -> Result<Option<&[u8]>, DecodeError> {
        match frame_len(&self.buf[self.start..self.end], self.max_len)? {
            None => Ok(None),
            Some(n) => {
                let at = self.start;
                self.start += n;
                Ok(Some(&self.buf[at..at + n]))
            }
        }
    }
}

/// The length of the message at the front of `buf` if all of it is there,
/// `Ok(None)` if more bytes are needed, an error if the length field is
/// impossible (below 8, or above `max_len`).
#[inline]
pub fn frame_len(buf: &[u8], max_len: usize) -> Result<Option<usize>, DecodeError> {
    let Some(h) = Header::peek(buf) else { return Ok(None) };
    let len = h.length as usize;
    if len < OFP_HEADER_LEN {
        return Err(DecodeError::bad_len(format!(
            "header length field {len} is below the 8-byte header (type {}, xid {:#x}); stream cannot be resynchronised",
            h.msg_type, h.xid
        )));
    }
    if len > max_len {
        return Err(DecodeError::bad_len(format!(
            "message length {len} exceeds the limit of {max_len} bytes"
        )));
    }
    Ok((buf.len() >= len).then_some(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framer_handles_partial_and_batched_reads() {
        let hello = [4u8, 0, 0, 8, 0, 0, 0, 1];
        let echo = [4u8, 2, 0, 12, 0, 0, 0, 2, 0xde, 0xad, 0xbe, 0xef];
        let mut stream = Vec::new();
        stream.extend_from_slice(&hello);
        stream.extend_from_slice(&echo);
        stream.extend_from_slice(&hello);
        // One byte at a time.
        let mut f = Framer::default();
        let mut got = Vec::new();
        for b in &stream {
            f.push(std::slice::from_ref(b));
            while let Some(m) = f.next_message().unwrap() {
                got.push(m.to_vec());
            }
        }
        assert_eq!(got, vec![hello.to_vec(), echo.to_vec(), hello.to_vec()]);
        // All at once.
        let mut f = Framer::default();
        f.push(&stream);
        let mut n = 0;
        while f.next_message().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 3);
        assert_eq!(f.pending(), 0);
    }

    /// Reading straight into the framer gives the same messages as
    /// pushing, across partial reads, with the room reused.
    #[test]
    fn framer_reads_in_place() {
        let echo = [4u8, 2, 0, 12, 0, 0, 0, 2, 0xde, 0xad, 0xbe, 0xef];
        let stream: Vec<u8> = echo.iter().copied().cycle().take(echo.len() * 50).collect();
        let mut f = Framer::default();
        let mut got = 0;
        for chunk in stream.chunks(7) {
            let room = f.spare(16);
            assert!(room.len() >= 16);
            room[..chunk.len()].copy_from_slice(chunk);
            f.commit(chunk.len());
            while let Some(m) = f.next_message().unwrap() {
                assert_eq!(m, echo);
                got += 1;
            }
        }
        assert_eq!((got, f.pending()), (50, 0));
        // The room never grew past what one read asked for and a partial message.
        assert!(f.buf.len() <= 16 + echo.len(), "{}", f.buf.len());
    }

    #[test]
    fn framer_rejects_impossible_lengths() {
        let mut f = Framer::default();
        f.push(&[1, 0, 0, 4, 0, 0, 0, 0]);
        let e = f.next_message().unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest(BadRequestCode::BadLen));
        assert!(e.what.contains("below the 8-byte header"));
        let mut f = Framer::new(1024);
        f.push(&[4, 14, 0x10, 0x00, 0, 0, 0, 0]);
        assert!(f.next_message().unwrap_err().what.contains("exceeds the limit"));
    }

    #[test]
    fn negotiation_follows_bitmaps_then_header_versions() {
        let h13 = Hello::with_versions(&[1, 4]);
        assert_eq!(h13.bitmap_versions().unwrap(), vec![1, 4]);
        assert_eq!(negotiate_version(&[1, 4], 4, &h13).unwrap(), 4);
        assert_eq!(negotiate_version(&[1], 4, &h13).unwrap(), 1);
        let only5 = Hello::with_versions(&[5, 6]);
        let e = negotiate_version(&[1, 4], 6, &only5).unwrap_err();
        assert_eq!(e.code, ErrorCode::HelloFailed(HelloFailedCode::Incompatible));
        // No bitmap: lower of the header versions.
        assert_eq!(negotiate_version(&[1, 4], 1, &Hello::default()).unwrap(), 1);
        assert_eq!(negotiate_version(&[1, 4], 6, &Hello::default()).unwrap(), 4);
        assert!(negotiate_version(&[4], 2, &Hello::default()).is_err());
    }

    #[test]
    fn hello_elements_decode_and_pad() {
        // 1.3 HELLO body: bitmap element with one word (0x12 = versions 1 and 4), padded to 8.
        let body = [0, 1, 0, 8, 0, 0, 0, 0x12];
        let h = Hello::decode(4, &body).unwrap();
        assert_eq!(h.bitmap_versions().unwrap(), vec![1, 4]);
        let mut out = Vec::new();
        h.encode_body(&mut out);
        assert_eq!(out, body);
        // Element length below 4 is an error in 1.3, kept opaque in 1.0.
        let bad = [0, 1, 0, 2, 0, 0, 0, 0];
        assert!(Hello::decode(4, &bad).is_err());
        assert_eq!(Hello::decode(1, &bad).unwrap().opaque_body.unwrap().0, bad);
    }
}
