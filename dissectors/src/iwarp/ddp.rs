//! DDP: Direct Data Placement (RFC 5041 section 4), the header at the start
//! of each MPA ULPDU.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |T|L| Resrv | DV|   RsvdULP     |  tagged: STag (32), TO (64)
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  untagged: RsvdULP (32 more),
//!                                     QN (32), MSN (32), MO (32)
//! ```
//!
//! T says which of the two (section 4.2 tagged, 4.3 untagged), L marks the
//! last segment of a message, DV is the DDP version (1). RsvdULP belongs to
//! the protocol above: RDMAP puts its control octet in the first octet and,
//! in an untagged header, the STag to invalidate in the next four
//! ([`super::rdmap`]).

use crate::error::Result;
use crate::layer::Layer;
use crate::parse::{self, Fail, PResult};

/// Octets of a tagged header (section 4.2).
pub const TAGGED_LEN: usize = 14;
/// Octets of an untagged header (section 4.3).
pub const UNTAGGED_LEN: usize = 18;
/// The one DDP version defined (section 4.1).
pub const VERSION_1: u8 = 1;

/// Where a segment's data goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placement {
    /// A tagged buffer: the remote peer's advertised STag and offset.
    Tagged {
        /// Steering Tag of the buffer.
        stag: u32,
        /// Tagged Offset: where in the buffer the segment's data goes.
        to: u64,
    },
    /// An untagged buffer: the next one posted on queue `qn`.
    Untagged {
        /// The four RsvdULP octets after the first (RDMAP: the STag to
        /// invalidate).
        rsvd_ulp: u32,
        /// Queue Number (RDMAP: 0 Send, 1 Read Request, 2 Terminate).
        qn: u32,
        /// Message Sequence Number on that queue, from 1.
        msn: u32,
        /// Message Offset: where in the message the segment's data goes.
        mo: u32,
    },
}

/// A DDP segment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DdpHeader {
    /// L: the last segment of its message.
    pub last: bool,
    /// The four reserved bits, as sent (zero per RFC 5041).
    pub reserved: u8,
    /// DV: the DDP version.
    pub version: u8,
    /// The first RsvdULP octet (RDMAP's control octet).
    pub ulp_control: u8,
    /// Tagged or untagged, with its fields.
    pub placement: Placement,
}

impl DdpHeader {
    /// The T bit.
    pub const fn tagged(&self) -> bool {
        matches!(self.placement, Placement::Tagged { .. })
    }

    /// Octets of the header.
    pub const fn len(&self) -> usize {
        if self.tagged() {
            TAGGED_LEN
        } else {
            UNTAGGED_LEN
        }
    }

    /// Never: a header has at least its control octets.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Parses the header at the start of a ULPDU; returns it and the
    /// segment's payload.
    ///
    /// # Errors
    /// [`crate::Error::BadField`] for a DV other than 1 (offset 0);
    /// [`crate::Error::Truncated`] when the header is cut.
    pub fn parse(ulpdu: &[u8]) -> Result<(DdpHeader, &[u8])> {
        parse::run(header, ulpdu, Layer::Ddp, 0).map(|(rest, h)| (h, rest))
    }
}

pub(crate) fn header(i: &[u8]) -> PResult<'_, DdpHeader> {
    let (after, [control, ulp_control]) = parse::array::<2>(i)?;
    let version = control & 0x03;
    if version != VERSION_1 {
        return Err(Fail::bad_field(
            i,
            "dv",
            version.into(),
            "1 (RFC 5041 section 4.1)",
        ));
    }
    let (rest, placement) = if control & 0x80 != 0 {
        let (rest, (stag, to)) = nom::Parser::parse(&mut (parse::be_u32, parse::be_u64), after)?;
        (rest, Placement::Tagged { stag, to })
    } else {
        let (rest, (rsvd_ulp, qn, msn, mo)) = nom::Parser::parse(
            &mut (parse::be_u32, parse::be_u32, parse::be_u32, parse::be_u32),
            after,
        )?;
        (
            rest,
            Placement::Untagged {
                rsvd_ulp,
                qn,
                msn,
                mo,
            },
        )
    };
    Ok((
        rest,
        DdpHeader {
            last: control & 0x40 != 0,
            reserved: (control >> 2) & 0x0f,
            version,
            ulp_control,
            placement,
        },
    ))
}
