//! iWARP in one TCP segment, without a stream reassembler.
//!
//! A frame-by-frame view cannot follow the byte stream, but it can read what
//! a segment starts with: the MPA Request or Reply (its key says so), or one
//! or more whole FPDUs. Linux `siw` and iWARP NICs align FPDUs to segments
//! (RFC 5044 section 8, "FPDU alignment"), so on real captures nearly every
//! segment of an iWARP stream starts at an FPDU boundary. A segment that does
//! not (a retransmission cut elsewhere, the tail of a long FPDU) is a
//! continuation: its bytes belong to an FPDU begun in an earlier segment,
//! which is not an error.
//!
//! Every FPDU ends with the four CRC octets (RFC 5044 section 4.1): zero
//! when CRCs were not negotiated. Whether they were was said in the MPA
//! exchange, which one frame does not see: [`MpaCrc`] says what to assume.
//! With [`MpaCrc::Unknown`] a CRC that matches is valid, a zero one is taken
//! for "not in use", and any other is a mismatch; [`Fpdus::crc_known`] is
//! then false and a view says so.

use super::ddp::Placement;
use super::mpa::{self, CrcStatus, Fpdu, RequestReply};
use super::rdmap::Segment;
use crate::error::Error;
use crate::stack::RpcRdmaDecode;

/// What the frame-level dissection assumes about MPA CRCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum MpaCrc {
    /// Not known: take the layout the segment's bytes fit, and say so.
    #[default]
    Unknown,
    /// CRCs were negotiated: every FPDU ends with one, checked.
    On,
    /// CRCs were not negotiated.
    Off,
}

/// The iWARP a TCP segment's payload starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IwarpLayer<'a> {
    /// An MPA Request or Reply.
    Setup(MpaSetup<'a>),
    /// One or more FPDUs, the first at the payload's start.
    Fpdus(Fpdus<'a>),
    /// The payload does not start at an FPDU boundary: it continues an
    /// FPDU from an earlier segment (or is not iWARP at all).
    Continuation,
}

/// An MPA Request or Reply at the start of a segment, kept as its bytes
/// (the dissection of every frame carries this slot, so it stays small)
/// and read with [`MpaSetup::frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpaSetup<'a>(&'a [u8]);

impl<'a> MpaSetup<'a> {
    /// The frame. `None` only for bytes [`dissect`] did not accept, which
    /// it never returns.
    pub fn frame(&self) -> Option<RequestReply<'a>> {
        RequestReply::parse(self.0).ok().map(|(f, _)| f)
    }
}

/// The FPDUs of one segment, read on demand (no allocation): iterate
/// [`Fpdus::iter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fpdus<'a> {
    bytes: &'a [u8],
    /// Offset of the TCP payload in the frame, for error offsets (a frame
    /// is under 4 GiB: the slot stays small).
    base: u32,
    crc: MpaCrc,
    cut: bool,
    /// How a Send's payload is taken for RPC-over-RDMA
    /// ([`crate::stack::iwarp_send_rpcrdma`]).
    rpcrdma: RpcRdmaDecode,
}

impl<'a> Fpdus<'a> {
    /// What was assumed about CRCs.
    pub const fn crc(&self) -> MpaCrc {
        self.crc
    }

    /// Whether the capture cut the segment: its last FPDU's bytes past the
    /// cut are not known.
    pub const fn cut(&self) -> bool {
        self.cut
    }

    /// How a Send's payload is taken for RPC-over-RDMA: the dissecting
    /// [`Config`](crate::stack::Config)'s `rpcrdma` (heuristic unless set).
    pub const fn rpcrdma(&self) -> RpcRdmaDecode {
        self.rpcrdma
    }

    /// These FPDUs, their Sends' payloads taken for RPC-over-RDMA by `decode`.
    #[must_use]
    pub(crate) const fn with_rpcrdma(mut self, decode: RpcRdmaDecode) -> Self {
        self.rpcrdma = decode;
        self
    }

    /// Whether CRC use was configured ([`MpaCrc::On`]/[`MpaCrc::Off`]).
    pub const fn crc_known(&self) -> bool {
        !matches!(self.crc, MpaCrc::Unknown)
    }

    /// The FPDUs in order; an error (its offset counted from the frame's
    /// start) ends the walk. An FPDU the capture cut is not returned.
    pub fn iter(&self) -> FpduIter<'a> {
        FpduIter {
            rest: self.bytes,
            at: self.base as usize,
            crc: self.crc,
            cut: self.cut,
            done: false,
        }
    }
}

/// One FPDU of a segment, with its DDP/RDMAP reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IwarpFpdu<'a> {
    /// Offset of the FPDU's ULPDU_Length field in the frame.
    pub offset: usize,
    /// The FPDU, read with its CRC field (which is always there) and
    /// checked as if CRCs were in use.
    pub fpdu: Fpdu<'a>,
    /// The CRC verdict given what [`MpaCrc`] says of the negotiation:
    /// [`CrcStatus::NotNegotiated`] when CRCs are off (or, unknown, the
    /// field is zero).
    pub crc: CrcStatus,
    /// The CRC field as sent (zero when CRCs are not in use).
    pub crc_field: u32,
    /// Its ULPDU as DDP and RDMAP, or why that failed.
    pub segment: Result<Segment<'a>, Error>,
}

impl IwarpFpdu<'_> {
    /// Whether this is the first segment of an untagged Send (Message
    /// Offset 0): the one an RPC-over-RDMA header starts in.
    pub fn starts_send(&self) -> bool {
        match &self.segment {
            Ok(s) => {
                s.opcode.is_send() && matches!(s.ddp.placement, Placement::Untagged { mo: 0, .. })
            }
            Err(_) => false,
        }
    }
}

/// Iterator over a segment's FPDUs ([`Fpdus::iter`]).
#[derive(Debug, Clone)]
pub struct FpduIter<'a> {
    rest: &'a [u8],
    at: usize,
    crc: MpaCrc,
    cut: bool,
    done: bool,
}

impl<'a> Iterator for FpduIter<'a> {
    type Item = Result<IwarpFpdu<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.rest.is_empty() {
            return None;
        }
        match Fpdu::parse(self.rest, true) {
            Ok((fpdu, rest)) => {
                let offset = self.at;
                let header = mpa::ULPDU_LENGTH_LEN;
                let segment = Segment::parse(fpdu.ulpdu).map_err(|e| e.at(offset + header));
                let used = self.rest.len() - rest.len();
                let crc_field = match self.rest.get(used.saturating_sub(mpa::CRC_LEN)..used) {
                    Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
                    _ => 0,
                };
                self.at += used;
                self.rest = rest;
                Some(Ok(IwarpFpdu {
                    offset,
                    fpdu,
                    crc: verdict(fpdu.crc, self.crc),
                    crc_field,
                    segment,
                }))
            }
            // What the capture cut off is not known, not malformed.
            Err(Error::Truncated { .. }) if self.cut => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e.at(self.at)))
            }
        }
    }
}

/// The CRC verdict of an FPDU read with its CRC field, given what is
/// known of the negotiation.
fn verdict(checked: CrcStatus, crc: MpaCrc) -> CrcStatus {
    match (crc, checked) {
        (MpaCrc::Off, _) | (MpaCrc::Unknown, CrcStatus::Invalid { found: 0, .. }) => {
            CrcStatus::NotNegotiated
        }
        (_, v) => v,
    }
}

/// Whether `payload` is a whole number of FPDUs (or, for a cut segment,
/// whole FPDUs up to a cut one), the first of them a plausible DDP/RDMAP
/// segment.
fn tiles(payload: &[u8], cut: bool) -> bool {
    let mut rest = payload;
    let mut first = true;
    while !rest.is_empty() {
        match Fpdu::parse(rest, true) {
            Ok((fpdu, r)) => {
                if first && Segment::parse(fpdu.ulpdu).is_err() {
                    return false;
                }
                first = false;
                rest = r;
            }
            Err(Error::Truncated { .. }) => return cut && !first,
            Err(_) => return false,
        }
    }
    true
}

/// Reads the iWARP at the start of a TCP payload of a flow already taken
/// for iWARP (or whose payload starts with an MPA key). `base` is the
/// payload's offset in the frame, `cut` whether the capture cut it.
///
/// # Errors
/// An MPA Request/Reply that does not parse, its offset from the frame.
pub fn dissect(
    payload: &[u8],
    base: usize,
    cut: bool,
    crc: MpaCrc,
) -> Result<IwarpLayer<'_>, Error> {
    if mpa::frame_kind(payload).is_some() {
        return match RequestReply::parse(payload) {
            Ok(_) => Ok(IwarpLayer::Setup(MpaSetup(payload))),
            Err(Error::Truncated { .. }) if cut => Ok(IwarpLayer::Continuation),
            Err(e) => Err(e.at(base)),
        };
    }
    if !tiles(payload, cut) {
        return Ok(IwarpLayer::Continuation);
    }
    Ok(IwarpLayer::Fpdus(Fpdus {
        bytes: payload,
        base: u32::try_from(base).unwrap_or(u32::MAX),
        crc,
        cut,
        rpcrdma: RpcRdmaDecode::Heuristic,
    }))
}
