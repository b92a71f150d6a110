//! XDR primitives (RFC 4506) for the RPC-over-RDMA, ONC RPC and NFS layers.
//!
//! Every XDR item is a multiple of four bytes, big-endian:
//!
//! ```text
//!  0        4        8
//! +--------+                    unsigned int / enum / bool (RFC 4506 4.1-4.4)
//! +--------+--------+           unsigned hyper (RFC 4506 4.5)
//! +--------+--------....--+--+  opaque<> / string<>: length, bytes, 0-3 zero pad
//!  length   bytes            pad  (RFC 4506 4.10, 4.11)
//! ```
//!
//! Each item is a nom parser over `&[u8]` (the crate-private functions
//! below: `u32`, `u64`, `bool`, `fixed_opaque`, `skip`)
//! returning the crate's small `Copy` failure type, so that layers written
//! as nom combinators (the RPC-over-RDMA header) use them directly.
//! [`Cursor`] runs the same parsers one after another over a message for
//! the layers that read item by item (ONC RPC, NFS), and reports every
//! problem as an [`Error`] carrying the layer and the offset counted from the
//! start of the message (plus an optional base, for a slice cut out of a
//! larger one).
//!
//! Speed: an RPC call is dozens of these items. nom's `complete::be_u32` on
//! `&[u8]` compiles to one length check and one load; what once made nom
//! cost several times the read (1701 against 1161 callgrind instructions
//! per RPC call frame) was nom's default error, which carries the input
//! slice, and re-measuring the rest after each item. The failure type here
//! holds a byte count and `&'static str`s, and [`Cursor`] keeps one
//! position. [`Writer`] is the matching encoder used by the `emit`
//! functions. Neither allocates.

use crate::error::{Error, Result};
use crate::layer::Layer;
use crate::parse::{self, Fail, PResult};

/// Reads an `unsigned int` (RFC 4506 4.2).
#[inline(always)]
pub(crate) fn u32(i: &[u8]) -> PResult<'_, u32> {
    parse::be_u32(i)
}

/// Reads an `unsigned hyper` (RFC 4506 4.5).
#[inline(always)]
pub(crate) fn u64(i: &[u8]) -> PResult<'_, u64> {
    parse::be_u64(i)
}

/// Reads a `bool` (RFC 4506 4.4): 0 or 1; anything else is a bad `field`.
#[inline(always)]
pub(crate) fn bool<'a>(field: &'static str) -> impl Fn(&'a [u8]) -> PResult<'a, bool> {
    move |i| match u32(i)? {
        (rest, 0) => Ok((rest, false)),
        (rest, 1) => Ok((rest, true)),
        (_, v) => Err(Fail::bad_field(i, field, u64::from(v), "0 or 1")),
    }
}

/// Reads `n` bytes of fixed-length opaque data and its padding
/// (RFC 4506 4.9); returns the `n` bytes without the padding. A cut short
/// item reports the padded length as needed.
#[inline(always)]
pub(crate) fn fixed_opaque<'a>(n: usize) -> impl Fn(&'a [u8]) -> PResult<'a, &'a [u8]> {
    move |i| {
        let (rest, all) = parse::take(padded_len(n))(i)?;
        Ok((rest, all.get(..n).unwrap_or(all)))
    }
}

/// Skips `n` bytes.
#[inline(always)]
pub(crate) fn skip<'a>(n: usize) -> impl Fn(&'a [u8]) -> PResult<'a, ()> {
    move |i| parse::take(n)(i).map(|(rest, _)| (rest, ()))
}

/// Number of zero bytes that follow `len` bytes of opaque data (RFC 4506 4.10).
#[inline]
pub const fn pad_len(len: usize) -> usize {
    (4 - (len % 4)) % 4
}

/// `len` rounded up to a multiple of four, saturating (RFC 4506 4.10).
#[inline]
pub const fn padded_len(len: usize) -> usize {
    len.saturating_add(pad_len(len))
}

/// A read position in an XDR-encoded message.
///
/// Offsets in errors are `base + position`, where `position` counts from the
/// start of the slice given to [`Cursor::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor<'a> {
    // The unread bytes, as nom hands them back: a read just takes what the
    // parser returns, with no position to re-slice from or re-measure.
    rest: &'a [u8],
    input_len: usize,
    base: usize,
    layer: Layer,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `input`, reporting errors for `layer`.
    pub const fn new(input: &'a [u8], layer: Layer) -> Self {
        Cursor {
            rest: input,
            input_len: input.len(),
            base: 0,
            layer,
        }
    }

    /// A cursor whose error offsets are shifted by `base`: use it when
    /// `input` starts `base` bytes into the message being reported on.
    pub const fn with_base(input: &'a [u8], layer: Layer, base: usize) -> Self {
        Cursor {
            rest: input,
            input_len: input.len(),
            base,
            layer,
        }
    }

    /// Bytes consumed so far from the start of the slice.
    pub const fn position(&self) -> usize {
        self.input_len.saturating_sub(self.rest.len())
    }

    /// Offset of the next item as reported in errors (`base + position`).
    pub const fn offset(&self) -> usize {
        self.base.saturating_add(self.position())
    }

    /// The layer named in errors.
    pub const fn layer(&self) -> Layer {
        self.layer
    }

    /// The bytes not yet consumed.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Number of bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// True when every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The error for `needed` bytes missing at the current position.
    pub fn truncated(&self, needed: usize) -> Error {
        Error::Truncated {
            layer: self.layer,
            offset: self.offset(),
            needed,
            available: self.remaining(),
        }
    }

    /// A [`Error::BadField`] for a field that started `back` bytes before
    /// the current position.
    pub fn bad_field(
        &self,
        back: usize,
        field: &'static str,
        value: u64,
        expected: &'static str,
    ) -> Error {
        Error::BadField {
            layer: self.layer,
            offset: self.offset().saturating_sub(back),
            field,
            value,
            expected,
        }
    }

    /// A [`Error::LimitExceeded`] at the current position.
    pub fn limit(&self, what: &'static str, limit: usize) -> Error {
        Error::LimitExceeded {
            layer: self.layer,
            offset: self.offset(),
            what,
            limit,
        }
    }

    /// Runs the nom parser `p` at the current position: on success moves
    /// past what it consumed, on failure reports it for this cursor's layer
    /// and base (nothing consumed).
    #[inline(always)]
    fn run<T>(&mut self, p: impl FnOnce(&'a [u8]) -> PResult<'a, T>) -> Result<T> {
        match p(self.rest) {
            Ok((after, v)) => {
                self.rest = after;
                Ok(v)
            }
            Err(e) => Err(parse::lift(e, self.rest, self.layer, self.offset())),
        }
    }

    /// Reads an `unsigned int` (RFC 4506 4.2).
    ///
    /// # Errors
    /// [`Error::Truncated`] if fewer than 4 bytes remain.
    #[inline(always)]
    pub fn u32(&mut self) -> Result<u32> {
        self.run(u32)
    }

    /// Reads an `unsigned hyper` (RFC 4506 4.5).
    ///
    /// # Errors
    /// [`Error::Truncated`] if fewer than 8 bytes remain.
    #[inline(always)]
    pub fn u64(&mut self) -> Result<u64> {
        self.run(u64)
    }

    /// Reads a `bool` (RFC 4506 4.4): 0 or 1.
    ///
    /// # Errors
    /// [`Error::Truncated`] if fewer than 4 bytes remain; [`Error::BadField`]
    /// naming `field` if the value is neither 0 nor 1.
    pub fn bool(&mut self, field: &'static str) -> Result<bool> {
        // Item by item, not `bool`: a bad value leaves the cursor after the
        // word, as it always has.
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.bad_field(4, field, u64::from(v), "0 or 1")),
        }
    }

    /// Reads `n` bytes of fixed-length opaque data and its padding
    /// (RFC 4506 4.9); returns the `n` bytes without the padding.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the data or its padding is cut short.
    #[inline(always)]
    pub fn fixed_opaque(&mut self, n: usize) -> Result<&'a [u8]> {
        self.run(fixed_opaque(n))
    }

    /// Reads a variable-length `opaque<max>` (RFC 4506 4.10) and returns its
    /// bytes without the padding. Padding bytes are not checked for zero
    /// (receivers should ignore them).
    ///
    /// # Errors
    /// [`Error::Truncated`] if the length word, data or padding is cut short;
    /// [`Error::BadField`] naming `field` if the length exceeds `max`.
    #[inline(always)]
    pub fn opaque(&mut self, field: &'static str, max: u32) -> Result<&'a [u8]> {
        // Item by item, not `opaque`: a bad or cut short body leaves the
        // cursor after the length word, as it always has.
        let len = self.u32()?;
        if len > max {
            return Err(self.bad_field(4, field, u64::from(len), "a length within the XDR bound"));
        }
        self.fixed_opaque(len as usize)
    }

    /// Reads a `string<max>` (RFC 4506 4.11); same as [`Cursor::opaque`]:
    /// the bytes are returned undecoded.
    ///
    /// # Errors
    /// As [`Cursor::opaque`].
    pub fn string(&mut self, field: &'static str, max: u32) -> Result<&'a [u8]> {
        self.opaque(field, max)
    }

    /// Skips `n` bytes.
    ///
    /// # Errors
    /// [`Error::Truncated`] if fewer than `n` bytes remain.
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.run(skip(n))
    }

    /// Takes the next `n` bytes as a slice (no padding handling).
    ///
    /// # Errors
    /// [`Error::Truncated`] if fewer than `n` bytes remain.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        self.run(parse::take(n))
    }
}

/// An XDR encoder into a caller-provided buffer, for `emit`.
#[derive(Debug)]
pub struct Writer<'b> {
    buf: &'b mut [u8],
    pos: usize,
    layer: Layer,
}

impl<'b> Writer<'b> {
    /// A writer at the start of `buf`, reporting a short buffer for `layer`.
    pub fn new(buf: &'b mut [u8], layer: Layer) -> Self {
        Writer { buf, pos: 0, layer }
    }

    /// Bytes written so far.
    pub const fn position(&self) -> usize {
        self.pos
    }

    fn short(&self, needed: usize) -> Error {
        Error::Truncated {
            layer: self.layer,
            offset: self.pos,
            needed,
            available: self.buf.len().saturating_sub(self.pos),
        }
    }

    /// Writes raw bytes.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is too small.
    pub fn bytes(&mut self, src: &[u8]) -> Result<()> {
        let end = self.pos.saturating_add(src.len());
        let Some(dst) = self.buf.get_mut(self.pos..end) else {
            return Err(self.short(src.len()));
        };
        dst.copy_from_slice(src);
        self.pos = end;
        Ok(())
    }

    /// Writes an `unsigned int`.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is too small.
    pub fn u32(&mut self, v: u32) -> Result<()> {
        self.bytes(&v.to_be_bytes())
    }

    /// Writes an `unsigned hyper`.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is too small.
    pub fn u64(&mut self, v: u64) -> Result<()> {
        self.bytes(&v.to_be_bytes())
    }

    /// Writes a `bool`.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is too small.
    pub fn bool(&mut self, v: bool) -> Result<()> {
        self.u32(u32::from(v))
    }

    /// Writes fixed-length opaque data and its zero padding.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is too small.
    pub fn fixed_opaque(&mut self, data: &[u8]) -> Result<()> {
        let pad = pad_len(data.len());
        if padded_len(data.len()) > self.buf.len().saturating_sub(self.pos) {
            return Err(self.short(padded_len(data.len())));
        }
        self.bytes(data)?;
        self.bytes([0u8; 3].get(..pad).unwrap_or(&[]))
    }

    /// Writes a variable-length opaque: length word, data, zero padding.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is too small; [`Error::BadField`]
    /// if `data` is longer than `u32::MAX` bytes.
    pub fn opaque(&mut self, data: &[u8]) -> Result<()> {
        let Ok(len) = u32::try_from(data.len()) else {
            return Err(Error::BadField {
                layer: self.layer,
                offset: self.pos,
                field: "opaque length",
                value: data.len() as u64,
                expected: "at most 2^32-1 bytes",
            });
        };
        if padded_len(data.len()).saturating_add(4) > self.buf.len().saturating_sub(self.pos) {
            return Err(self.short(padded_len(data.len()).saturating_add(4)));
        }
        self.u32(len)?;
        self.fixed_opaque(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;

    #[test]
    fn reads_primitives() {
        let b = hex!("00000001 00000002 00000000 00000005 0102030405060708 00000003 616263 00");
        let mut c = Cursor::new(&b, Layer::OncRpc);
        assert_eq!(c.u32(), Ok(1));
        assert_eq!(c.u32(), Ok(2));
        assert_eq!(c.bool("b"), Ok(false));
        assert_eq!(c.fixed_opaque(4), Ok(&[0, 0, 0, 5][..]));
        assert_eq!(c.u64(), Ok(0x0102030405060708));
        assert_eq!(c.opaque("s", 255), Ok(&b"abc"[..]));
        assert!(c.is_empty());
        assert_eq!(
            c.u32(),
            Err(Error::Truncated {
                layer: Layer::OncRpc,
                offset: 32,
                needed: 4,
                available: 0
            })
        );
    }

    #[test]
    fn bad_bool_and_bound() {
        let b = hex!("00000002 00000009");
        let mut c = Cursor::with_base(&b, Layer::Nfs, 100);
        assert_eq!(
            c.bool("eof"),
            Err(Error::BadField {
                layer: Layer::Nfs,
                offset: 100,
                field: "eof",
                value: 2,
                expected: "0 or 1"
            })
        );
        assert!(matches!(
            c.opaque("tag", 8),
            Err(Error::BadField {
                offset: 104,
                value: 9,
                ..
            })
        ));
    }

    #[test]
    fn opaque_truncated_reports_data_offset() {
        let b = hex!("00000005 616263");
        let mut c = Cursor::new(&b, Layer::Nfs);
        assert_eq!(
            c.opaque("x", 100),
            Err(Error::Truncated {
                layer: Layer::Nfs,
                offset: 4,
                needed: 8,
                available: 3
            })
        );
    }

    #[test]
    fn writer_round_trip() {
        let mut buf = [0xa5u8; 20];
        let mut w = Writer::new(&mut buf, Layer::OncRpc);
        w.u32(7).unwrap();
        w.opaque(b"hello").unwrap();
        w.bool(true).unwrap();
        assert_eq!(w.position(), 20);
        assert!(w.u32(1).is_err());
        assert_eq!(buf, hex!("00000007 00000005 68656c6c6f000000 00000001"));
    }

    #[test]
    fn writer_short_buffer() {
        let mut buf = [0u8; 6];
        let mut w = Writer::new(&mut buf, Layer::OncRpc);
        assert!(matches!(
            w.opaque(b"ab"),
            Err(Error::Truncated {
                needed: 8,
                available: 6,
                ..
            })
        ));
        assert_eq!(w.position(), 0);
    }
}
