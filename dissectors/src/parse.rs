//! The glue between nom and the crate's [`Error`]: the error type every nom
//! parser of the crate returns, and the primitive parsers the layers combine.
//!
//! nom's default error carries the input slice it failed on and an
//! `ErrorKind`; a layer needs the failure's offset from the start of the
//! frame, what was expected, and nothing that borrows. [`Fail`] is a small
//! `Copy` value holding the number of bytes that were left where the parser
//! failed (`rest`) and what went wrong. The layer's entry point, which knows
//! where its input started, turns that into an [`Error`] with
//! [`Fail::into_error`]: offset = `base + input_len - rest`, exactly what the
//! hand-written readers reported.
//!
//! Only nom's `complete` parsers are used: a dissector sees whole captured
//! frames, so missing bytes are a truncation to report, never a request for
//! more input.

use nom::error::{ErrorKind, ParseError};
use nom::number::complete as num;
use nom::Parser;

use crate::error::Error;
use crate::layer::Layer;

/// What went wrong, without the layer and without the offset's base (see
/// the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `needed` bytes from the failure point were required.
    Truncated { needed: usize },
    /// The field starting at the failure point holds `value`.
    BadField {
        field: &'static str,
        value: u64,
        expected: &'static str,
    },
    /// A list or nesting reached its cap at the failure point.
    Limit { what: &'static str, limit: usize },
}

/// The error of the crate's nom parsers: where (as bytes left) and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fail {
    rest: usize,
    kind: Kind,
}

/// What the crate's nom parsers return.
pub(crate) type PResult<'a, O> = nom::IResult<&'a [u8], O, Fail>;

impl<'a> ParseError<&'a [u8]> for Fail {
    /// nom's `complete` number and `take` parsers fail only for want of
    /// bytes (`ErrorKind::Eof`); the primitive below that called one of
    /// them knows how many it needed and sets them with [`Fail::needing`].
    #[inline]
    fn from_error_kind(input: &'a [u8], _kind: ErrorKind) -> Self {
        Fail {
            rest: input.len(),
            kind: Kind::Truncated { needed: 0 },
        }
    }

    /// The innermost failure is the precise one: keep it.
    #[inline]
    fn append(_input: &'a [u8], _kind: ErrorKind, other: Self) -> Self {
        other
    }
}

impl Fail {
    /// `needed` bytes missing at `at` (the input where they would start).
    #[inline]
    pub(crate) fn truncated(at: &[u8], needed: usize) -> nom::Err<Fail> {
        nom::Err::Error(Fail {
            rest: at.len(),
            kind: Kind::Truncated { needed },
        })
    }

    /// The field starting at `at` holds a value the layer rejects.
    #[inline]
    pub(crate) fn bad_field(
        at: &[u8],
        field: &'static str,
        value: u64,
        expected: &'static str,
    ) -> nom::Err<Fail> {
        nom::Err::Error(Fail {
            rest: at.len(),
            kind: Kind::BadField {
                field,
                value,
                expected,
            },
        })
    }

    /// A cap reached at `at`.
    #[inline]
    pub(crate) fn limit(at: &[u8], what: &'static str, limit: usize) -> nom::Err<Fail> {
        nom::Err::Error(Fail {
            rest: at.len(),
            kind: Kind::Limit { what, limit },
        })
    }

    /// The same failure, stating that the item that was cut short needed
    /// `needed` bytes (nom's primitives do not say).
    #[inline(always)]
    fn needing(self, needed: usize) -> Fail {
        match self.kind {
            Kind::Truncated { .. } => Fail {
                rest: self.rest,
                kind: Kind::Truncated { needed },
            },
            _ => self,
        }
    }

    /// The crate's [`Error`] for this failure inside an input of
    /// `input_len` bytes whose first byte is `base` bytes into what the
    /// error's offsets count from.
    #[inline]
    pub(crate) fn into_error(self, layer: Layer, input_len: usize, base: usize) -> Error {
        let offset = base.saturating_add(input_len.saturating_sub(self.rest));
        match self.kind {
            Kind::Truncated { needed } => Error::Truncated {
                layer,
                offset,
                needed,
                available: self.rest,
            },
            Kind::BadField {
                field,
                value,
                expected,
            } => Error::BadField {
                layer,
                offset,
                field,
                value,
                expected,
            },
            Kind::Limit { what, limit } => Error::LimitExceeded {
                layer,
                offset,
                what,
                limit,
            },
        }
    }
}

/// Runs `parser` over `input` and reports a failure as the crate's
/// [`Error`] for `layer`, with offsets counted from `base` bytes before
/// `input`: the one place a layer leaves nom.
#[inline(always)]
pub(crate) fn run<'a, O>(
    mut parser: impl Parser<&'a [u8], Output = O, Error = Fail>,
    input: &'a [u8],
    layer: Layer,
    base: usize,
) -> Result<(&'a [u8], O), Error> {
    match parser.parse(input) {
        Ok(done) => Ok(done),
        Err(e) => Err(lift(e, input, layer, base)),
    }
}

/// [`Fail::into_error`] for any `nom::Err`. Complete parsers never return
/// `Incomplete`; were one to, it is reported as bytes missing at the end.
#[cold]
pub(crate) fn lift(e: nom::Err<Fail>, input: &[u8], layer: Layer, base: usize) -> Error {
    match e {
        nom::Err::Error(f) | nom::Err::Failure(f) => f.into_error(layer, input.len(), base),
        nom::Err::Incomplete(needed) => Fail {
            rest: 0,
            kind: Kind::Truncated {
                needed: match needed {
                    nom::Needed::Size(n) => n.get(),
                    nom::Needed::Unknown => 0,
                },
            },
        }
        .into_error(layer, input.len(), base),
    }
}

/// Sets `needed` on a truncation coming out of one of nom's primitives.
#[inline(always)]
fn need<'a, O>(needed: usize, r: PResult<'a, O>) -> PResult<'a, O> {
    match r {
        Ok(done) => Ok(done),
        Err(e) => Err(e.map(|f| f.needing(needed))),
    }
}

/// A byte.
#[inline(always)]
pub(crate) fn be_u8(i: &[u8]) -> PResult<'_, u8> {
    need(1, num::be_u8(i))
}

// The wider numbers are nom's `take` and `from_be_bytes`, not nom's
// `be_u16`..`be_u64`: those build the value byte by byte with `(v << 8) + b`,
// which LLVM turns into one load and a `bswap` only in small functions. In
// a CM REQ (40 fields in one function) it hoisted every byte load, spilled
// them to the stack and rebuilt each value with shifts and adds
// (`objdump -d` of `parse_cm_fields`).

/// A big-endian 16-bit word.
#[inline(always)]
pub(crate) fn be_u16(i: &[u8]) -> PResult<'_, u16> {
    let (rest, b) = array::<2>(i)?;
    Ok((rest, u16::from_be_bytes(b)))
}

/// A big-endian 24-bit value (QPNs, PSNs, EECNs).
#[inline(always)]
pub(crate) fn be_u24(i: &[u8]) -> PResult<'_, u32> {
    let (rest, [a, b, c]) = array::<3>(i)?;
    Ok((rest, u32::from_be_bytes([0, a, b, c])))
}

/// A big-endian 32-bit word.
#[inline(always)]
pub(crate) fn be_u32(i: &[u8]) -> PResult<'_, u32> {
    let (rest, b) = array::<4>(i)?;
    Ok((rest, u32::from_be_bytes(b)))
}

/// A big-endian 64-bit word.
#[inline(always)]
pub(crate) fn be_u64(i: &[u8]) -> PResult<'_, u64> {
    let (rest, b) = array::<8>(i)?;
    Ok((rest, u64::from_be_bytes(b)))
}

/// The next `n` bytes.
#[inline(always)]
pub(crate) fn take<'a>(n: usize) -> impl Fn(&'a [u8]) -> PResult<'a, &'a [u8]> {
    #[inline(always)]
    move |i| need(n, nom::bytes::complete::take(n)(i))
}

/// The next `N` bytes as an array: the fixed-width reads (numbers, GIDs).
///
/// Written against `split_first_chunk` rather than nom's `take`: nom's
/// `Take::process` carries no inline hint, and in the CM parsers (one
/// function reading a whole 232-byte message) LLVM left it as a call per
/// field; this form is always inlined and, when the input's length is
/// known, its check folds away.
#[inline(always)]
pub(crate) fn array<const N: usize>(i: &[u8]) -> PResult<'_, [u8; N]> {
    match i.split_first_chunk::<N>() {
        Some((b, rest)) => Ok((rest, *b)),
        None => Err(Fail::truncated(i, N)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_count_from_the_base() {
        let b = [0u8, 0, 0, 1, 0, 0];
        let r = run((be_u32, be_u32), &b, Layer::RpcRdma, 100);
        assert_eq!(
            r,
            Err(Error::Truncated {
                layer: Layer::RpcRdma,
                offset: 104,
                needed: 4,
                available: 2,
            })
        );
        let r = run((be_u16, be_u24, be_u8), &b, Layer::Cm, 0);
        assert_eq!(r, Ok((&[][..], (0, 0x100, 0))));
        let r = run(array::<7>, &b, Layer::Cm, 0);
        assert_eq!(
            r,
            Err(Error::Truncated {
                layer: Layer::Cm,
                offset: 0,
                needed: 7,
                available: 6,
            })
        );
    }

    #[test]
    fn bad_field_and_limit_keep_their_place() {
        let b = [0u8; 12];
        let at = b.get(8..).unwrap_or(&[]);
        assert_eq!(
            lift(Fail::bad_field(at, "f", 9, "0"), &b, Layer::Nfs, 4),
            Error::BadField {
                layer: Layer::Nfs,
                offset: 12,
                field: "f",
                value: 9,
                expected: "0",
            }
        );
        assert_eq!(
            lift(Fail::limit(&b, "things", 3), &b, Layer::Nfs, 0),
            Error::LimitExceeded {
                layer: Layer::Nfs,
                offset: 0,
                what: "things",
                limit: 3,
            }
        );
        assert_eq!(
            lift(nom::Err::Incomplete(nom::Needed::new(2)), &b, Layer::Nfs, 0),
            Error::Truncated {
                layer: Layer::Nfs,
                offset: 12,
                needed: 2,
                available: 0,
            }
        );
    }
}
