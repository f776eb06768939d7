//! Byte-level reading and writing shared by every message module.
//!
//! `Reader` is a bounds-checked big-endian cursor: every read either returns
//! the bytes that are really there or a `DecodeError` carrying the OpenFlow
//! error code the caller chose for "this structure is too short". Nothing in
//! the decoders indexes a slice directly, so no length field can make them
//! panic or over-read. `Put` is the matching writer on `Vec<u8>`; lengths are
//! patched after a body is written, so callers never compute them by hand.

use crate::error::{DecodeError, ErrorCode};

/// A bounds-checked big-endian cursor over one structure.
#[derive(Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// The error reported when this structure turns out to be too short.
    short: ErrorCode,
    /// What is being decoded, for error messages ("FLOW_MOD", "action OUTPUT").
    ctx: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], short: ErrorCode, ctx: &'static str) -> Self {
        Reader {
            data,
            pos: 0,
            short,
            ctx,
        }
    }

    pub fn ctx(&self) -> &'static str {
        self.ctx
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    /// An error about this structure, naming it.
    pub fn error(&self, code: ErrorCode, what: impl std::fmt::Display) -> DecodeError {
        DecodeError::new(code, format!("{}: {}", self.ctx, what))
    }

    fn truncated(&self, need: usize) -> DecodeError {
        self.error(
            self.short,
            format_args!(
                "truncated: needs {} more bytes at offset {}, only {} present",
                need,
                self.pos,
                self.remaining()
            ),
        )
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(self.truncated(n));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let b = self.bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Padding: must be present and zero, so that re-encoding is byte-exact
    /// and garbage in a pad field is noticed.
    pub fn pad(&mut self, n: usize) -> Result<(), DecodeError> {
        let start = self.pos;
        let b = self.bytes(n)?;
        if b.iter().any(|&x| x != 0) {
            return Err(self.error(self.short, format_args!("non-zero padding at offset {start}")));
        }
        Ok(())
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.data[self.pos..];
        self.pos = self.data.len();
        out
    }

    /// Items decoded by `f` one after another until nothing is left: a
    /// list that fills its message, or the part of one it was given.
    pub fn until_empty<T>(
        &mut self,
        mut f: impl FnMut(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let mut out = Vec::new();
        while !self.is_empty() {
            out.push(f(self)?);
        }
        Ok(out)
    }

    /// A reader over the next `n` bytes (same error conventions), advancing past them.
    pub fn sub(&mut self, n: usize, ctx: &'static str) -> Result<Reader<'a>, DecodeError> {
        let b = self.bytes(n)?;
        Ok(Reader::new(b, self.short, ctx))
    }

    /// A reader over the next `n` bytes with its own "too short" error code.
    pub fn sub_with(&mut self, n: usize, short: ErrorCode, ctx: &'static str) -> Result<Reader<'a>, DecodeError> {
        let b = self.bytes(n)?;
        Ok(Reader::new(b, short, ctx))
    }

    /// Fails if any byte is left: a structure longer than its contents is malformed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() != 0 {
            return Err(self.error(
                self.short,
                format_args!("{} unexpected trailing bytes", self.remaining()),
            ));
        }
        Ok(())
    }

    /// A fixed-size, NUL-terminated string field (port names, descriptions).
    /// The NUL must be there and everything after it must be zero.
    pub fn fixed_str<const N: usize>(&mut self, field: &str) -> Result<String, DecodeError> {
        let raw = self.array::<N>()?;
        let Some(nul) = raw.iter().position(|&b| b == 0) else {
            return Err(self.error(
                self.short,
                format_args!("{field} is not NUL-terminated within its {N} bytes"),
            ));
        };
        if raw[nul..].iter().any(|&b| b != 0) {
            return Err(self.error(
                self.short,
                format_args!("{field} has non-zero bytes after its NUL terminator"),
            ));
        }
        match std::str::from_utf8(&raw[..nul]) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(self.error(self.short, format_args!("{field} is not valid UTF-8"))),
        }
    }
}

/// A type-length element whose length must be a positive multiple of 8
/// (actions and instructions), with a reader over what follows its header.
pub struct Tlv8<'a> {
    pub ty: u16,
    pub len: usize,
    pub body: Reader<'a>,
    code: ErrorCode,
    what: &'static str,
}

impl<'a> Tlv8<'a> {
    /// Reads the element at the front of `r`; `code` is the error for a bad length.
    pub fn read(r: &mut Reader<'a>, code: ErrorCode, what: &'static str) -> Result<Tlv8<'a>, DecodeError> {
        let mut head = Reader::new(r.data.get(r.pos..).unwrap_or(&[]), code, what);
        let ty = head.u16()?;
        let len = head.u16()? as usize;
        if len < 8 || !len.is_multiple_of(8) {
            return Err(r.error(
                code,
                format_args!("{what} type {ty} has length {len}, not a positive multiple of 8"),
            ));
        }
        let mut body = r.sub_with(len, code, what)?;
        body.u32()?;
        Ok(Tlv8 {
            ty,
            len,
            body,
            code,
            what,
        })
    }

    /// Fails unless the element is exactly `want` bytes long.
    pub fn expect_len(&self, want: usize) -> Result<(), DecodeError> {
        if self.len != want {
            return Err(self.body.error(
                self.code,
                format_args!(
                    "{} type {} must be {want} bytes, length field says {}",
                    self.what, self.ty, self.len
                ),
            ));
        }
        Ok(())
    }
}

/// Big-endian writing on a byte vector.
pub trait Put {
    fn put_u8(&mut self, v: u8);
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_zeros(&mut self, n: usize);
    fn put_slice(&mut self, b: &[u8]);
    fn patch_u16(&mut self, at: usize, v: u16);
    /// Writes a fixed-size NUL-padded string, truncating so a NUL always fits.
    fn put_fixed_str(&mut self, s: &str, size: usize);
    /// Zero-pads so that the bytes written since `start` are a multiple of 8.
    fn pad_to_8(&mut self, start: usize);
    /// An experimenter body: its id, its type and its data, as every
    /// experimenter message, multipart body and property carries them.
    #[inline]
    fn put_experimenter(&mut self, experimenter: u32, exp_type: u32, data: &[u8]) {
        self.put_u32(experimenter);
        self.put_u32(exp_type);
        self.put_slice(data);
    }
}

impl Put for Vec<u8> {
    #[inline]
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    #[inline]
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    #[inline]
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    #[inline]
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    #[inline]
    fn put_zeros(&mut self, n: usize) {
        self.resize(self.len() + n, 0);
    }
    #[inline]
    fn put_slice(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
    #[inline]
    fn patch_u16(&mut self, at: usize, v: u16) {
        self[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }
    fn put_fixed_str(&mut self, s: &str, size: usize) {
        let b = s.as_bytes();
        let n = b.len().min(size - 1);
        self.extend_from_slice(&b[..n]);
        self.put_zeros(size - n);
    }
    #[inline]
    fn pad_to_8(&mut self, start: usize) {
        let len = self.len() - start;
        self.put_zeros((8 - len % 8) % 8);
    }
}

/// Round `n` up to the next multiple of 8.
pub const fn align8(n: usize) -> usize {
    (n + 7) & !7
}
