//! The crate's one error type.
//!
//! Every parser returns [`Error`] and never panics. Offsets are relative to the
//! slice the parser was given; [`Error::at`] shifts them so that errors coming
//! out of [`crate::stack::dissect`] count from the start of the frame.

use core::fmt;

use crate::layer::Layer;

/// Why a parser stopped.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The input ended before the header did.
    Truncated {
        /// The layer being parsed.
        layer: Layer,
        /// Offset where the missing bytes would start.
        offset: usize,
        /// How many bytes the layer needed from `offset`.
        needed: usize,
        /// How many bytes were left at `offset`.
        available: usize,
    },
    /// A field holds a value the layer cannot accept.
    BadField {
        /// The layer being parsed.
        layer: Layer,
        /// Offset of the field.
        offset: usize,
        /// The field's name, as the spec spells it (snake_case).
        field: &'static str,
        /// The value found.
        value: u64,
        /// What was expected, in words.
        expected: &'static str,
    },
    /// A list or nesting went past the crate's cap for it.
    LimitExceeded {
        /// The layer being parsed.
        layer: Layer,
        /// Offset where the cap was reached.
        offset: usize,
        /// What was being counted.
        what: &'static str,
        /// The cap.
        limit: usize,
    },
}

impl Error {
    /// Builds a [`Error::Truncated`] for `needed` bytes at `offset` of `input`.
    pub(crate) fn truncated(layer: Layer, offset: usize, needed: usize, input_len: usize) -> Self {
        Error::Truncated {
            layer,
            offset,
            needed,
            available: input_len.saturating_sub(offset),
        }
    }

    /// The layer that failed.
    pub const fn layer(&self) -> Layer {
        match self {
            Error::Truncated { layer, .. }
            | Error::BadField { layer, .. }
            | Error::LimitExceeded { layer, .. } => *layer,
        }
    }

    /// The offset where it failed.
    pub const fn offset(&self) -> usize {
        match self {
            Error::Truncated { offset, .. }
            | Error::BadField { offset, .. }
            | Error::LimitExceeded { offset, .. } => *offset,
        }
    }

    /// The same error with its offset moved by `base` bytes, for a parser
    /// that was handed a sub-slice starting at `base`.
    #[must_use]
    pub fn at(self, base: usize) -> Self {
        match self {
            Error::Truncated {
                layer,
                offset,
                needed,
                available,
            } => Error::Truncated {
                layer,
                offset: offset.saturating_add(base),
                needed,
                available,
            },
            Error::BadField {
                layer,
                offset,
                field,
                value,
                expected,
            } => Error::BadField {
                layer,
                offset: offset.saturating_add(base),
                field,
                value,
                expected,
            },
            Error::LimitExceeded {
                layer,
                offset,
                what,
                limit,
            } => Error::LimitExceeded {
                layer,
                offset: offset.saturating_add(base),
                what,
                limit,
            },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated {
                layer,
                offset,
                needed,
                available,
            } => write!(
                f,
                "{layer}: truncated at offset {offset}: need {needed} bytes, have {available}"
            ),
            Error::BadField {
                layer,
                offset,
                field,
                value,
                expected,
            } => write!(
                f,
                "{layer}: bad {field} at offset {offset}: {value:#x}, expected {expected}"
            ),
            Error::LimitExceeded {
                layer,
                offset,
                what,
                limit,
            } => write!(
                f,
                "{layer}: too many {what} at offset {offset}: the limit is {limit}"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// Shorthand for results of this crate.
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_truncated() {
        let e = Error::Truncated {
            layer: Layer::Bth,
            offset: 42,
            needed: 12,
            available: 7,
        };
        assert_eq!(
            e.to_string(),
            "bth: truncated at offset 42: need 12 bytes, have 7"
        );
    }

    #[test]
    fn display_bad_field() {
        let e = Error::BadField {
            layer: Layer::RpcRdma,
            offset: 4,
            field: "vers",
            value: 2,
            expected: "1",
        };
        assert_eq!(
            e.to_string(),
            "rpcrdma: bad vers at offset 4: 0x2, expected 1"
        );
    }

    #[test]
    fn display_limit() {
        let e = Error::LimitExceeded {
            layer: Layer::RpcRdma,
            offset: 28,
            what: "read list entries",
            limit: 64,
        };
        assert_eq!(
            e.to_string(),
            "rpcrdma: too many read list entries at offset 28: the limit is 64"
        );
    }

    #[test]
    fn at_shifts_offset() {
        let e = Error::truncated(Layer::Reth, 3, 16, 10).at(54);
        assert_eq!(e.offset(), 57);
        assert_eq!(e.layer(), Layer::Reth);
        assert_eq!(
            e,
            Error::Truncated {
                layer: Layer::Reth,
                offset: 57,
                needed: 16,
                available: 7
            }
        );
    }
}
