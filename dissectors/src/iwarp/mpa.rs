//! MPA: Marker PDU Aligned framing for TCP (RFC 5044), with the enhanced
//! connection establishment of RFC 6581 (MPA revision 2).
//!
//! An MPA connection opens with one Request and one Reply frame
//! (RFC 5044 section 7.1):
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Key: "MPA ID Req Frame" or "MPA ID Rep Frame" (16 octets)   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |M|C|R| Res     |     Rev       |          PD_Length            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Private Data (PD_Length octets)               |
//! ```
//!
//! With Rev 2 the private data starts with the enhanced connection data
//! (RFC 6581 section 5): `|P|Z| IRD (14) |W|R| ORD (14) |`, peer-to-peer
//! mode, and which zero-length message (Send, Write or Read) is the
//! ready-to-receive one. The ULP's private data follows; for NFS/RDMA it
//! may hold the RFC 8797 message, which [`RequestReply::rpcrdma`] finds.
//!
//! After the exchange each direction is a sequence of FPDUs (section 4):
//! ULPDU_Length (16 bits), the ULPDU (a DDP segment), pad to a multiple of
//! four octets, and a CRC32c when either side asked for one (C bit). When
//! markers were negotiated (M bit), a four-octet marker sits at every
//! 512th octet of the stream, counted from the first octet of the first
//! FPDU (section 4.3): [`strip_markers`] takes them out.

use nom::Parser;

use super::crc32c;
use crate::error::{Error, Result};
use crate::layer::Layer;
use crate::parse::{self, Fail, PResult};
use crate::rpcrdma_cm::{self, CmPrivateData};

/// The Request frame's key (RFC 5044 section 7.1).
pub const KEY_REQUEST: &[u8; 16] = b"MPA ID Req Frame";
/// The Reply frame's key (RFC 5044 section 7.1).
pub const KEY_REPLY: &[u8; 16] = b"MPA ID Rep Frame";
/// Octets of a Request/Reply frame before its private data.
pub const FRAME_HEADER_LEN: usize = 20;
/// The most private data a frame may carry (RFC 5044 section 7.1).
pub const MAX_PRIVATE_DATA: u16 = 512;
/// Octets of the RFC 6581 enhanced connection data.
pub const ENHANCED_LEN: usize = 4;
/// Distance between markers in the TCP stream (RFC 5044 section 4.3).
pub const MARKER_INTERVAL: u64 = 512;
/// Octets of a marker.
pub const MARKER_LEN: usize = 4;
/// Octets of ULPDU_Length.
pub const ULPDU_LENGTH_LEN: usize = 2;
/// Octets of the FPDU CRC.
pub const CRC_LEN: usize = 4;

const FLAG_MARKERS: u8 = 0x80;
const FLAG_CRC: u8 = 0x40;
const FLAG_REJECT: u8 = 0x20;
const RESERVED_MASK: u8 = 0x1f;
const IRD_ORD_MASK: u16 = 0x3fff;

/// Which of the two setup frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// "MPA ID Req Frame", from the initiator.
    Request,
    /// "MPA ID Rep Frame", from the responder.
    Reply,
}

impl FrameKind {
    /// The frame's name as the RFC writes it.
    pub const fn name(self) -> &'static str {
        match self {
            FrameKind::Request => "MPA Request",
            FrameKind::Reply => "MPA Reply",
        }
    }
}

/// Which setup frame `data` starts with, from its key alone: the cheap
/// test a capture reader runs on every TCP payload.
pub fn frame_kind(data: &[u8]) -> Option<FrameKind> {
    if data.starts_with(KEY_REQUEST) {
        Some(FrameKind::Request)
    } else if data.starts_with(KEY_REPLY) {
        Some(FrameKind::Reply)
    } else {
        None
    }
}

/// The RFC 6581 section 5 enhanced connection data of a revision 2 frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Enhanced {
    /// The peer-to-peer connection model is asked for (bit 0 of IRD's word).
    pub peer_to_peer: bool,
    /// A zero-length Send is to be the ready-to-receive message.
    pub send_rtr: bool,
    /// Inbound RDMA Read queue depth (14 bits).
    pub ird: u16,
    /// A zero-length RDMA Write is to be the ready-to-receive message.
    pub write_rtr: bool,
    /// A zero-length RDMA Read is to be the ready-to-receive message.
    pub read_rtr: bool,
    /// Outbound RDMA Read queue depth (14 bits).
    pub ord: u16,
}

impl Enhanced {
    fn from_words(ird: u16, ord: u16) -> Self {
        Enhanced {
            peer_to_peer: ird & 0x8000 != 0,
            send_rtr: ird & 0x4000 != 0,
            ird: ird & IRD_ORD_MASK,
            write_rtr: ord & 0x8000 != 0,
            read_rtr: ord & 0x4000 != 0,
            ord: ord & IRD_ORD_MASK,
        }
    }
}

/// An MPA Request or Reply frame (RFC 5044 section 7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestReply<'a> {
    /// Request or Reply.
    pub kind: FrameKind,
    /// M: the sender wants markers in the stream it receives.
    pub markers: bool,
    /// C: the sender wants CRCs.
    pub crc: bool,
    /// R: the responder rejects the connection (Reply only).
    pub reject: bool,
    /// The five reserved bits, as sent (zero per RFC 5044).
    pub reserved: u8,
    /// Rev: 1 (RFC 5044) or 2 (RFC 6581).
    pub revision: u8,
    /// PD_Length: octets of private data, enhanced data included.
    pub pd_length: u16,
    /// The RFC 6581 data of a revision 2 frame.
    pub enhanced: Option<Enhanced>,
    /// The ULP's private data (after the enhanced data, if any).
    pub private_data: &'a [u8],
}

impl<'a> RequestReply<'a> {
    /// Parses a setup frame at the start of a direction's stream; returns it
    /// and the bytes after its private data (the first FPDUs, if the
    /// segment carried them).
    ///
    /// # Errors
    /// - [`Error::BadField`] for a key that is neither (offset 0), a
    ///   revision other than 1 or 2 (offset 17), a PD_Length over 512 or, in
    ///   revision 2, under 4 (offset 18);
    /// - [`Error::Truncated`] when the header or the private data is cut.
    pub fn parse(input: &'a [u8]) -> Result<(RequestReply<'a>, &'a [u8])> {
        parse::run(request_reply, input, Layer::Mpa, 0).map(|(rest, f)| (f, rest))
    }

    /// The RFC 8797 RPC-over-RDMA message in the ULP private data, with
    /// its offset there.
    pub fn rpcrdma(&self) -> Option<(usize, CmPrivateData)> {
        rpcrdma_cm::find(self.private_data)
    }
}

fn request_reply(i: &[u8]) -> PResult<'_, RequestReply<'_>> {
    let (after_key, key) = parse::array::<16>(i)?;
    let kind = match frame_kind(&key) {
        Some(k) => k,
        None => {
            return Err(Fail::bad_field(
                i,
                "key",
                0,
                "\"MPA ID Req Frame\" or \"MPA ID Rep Frame\"",
            ))
        }
    };
    let (at_len, (bits, revision)) = (parse::be_u8, parse::be_u8).parse(after_key)?;
    if revision != 1 && revision != 2 {
        return Err(Fail::bad_field(
            after_key.get(1..).unwrap_or_default(),
            "rev",
            revision.into(),
            "1 or 2 (RFC 5044, RFC 6581)",
        ));
    }
    let (at_pd, pd_length) = parse::be_u16(at_len)?;
    if pd_length > MAX_PRIVATE_DATA || (revision == 2 && usize::from(pd_length) < ENHANCED_LEN) {
        let expected = if revision == 2 {
            "4..=512 (RFC 6581 section 5)"
        } else {
            "at most 512 (RFC 5044 section 7.1)"
        };
        return Err(Fail::bad_field(
            at_len,
            "pd_length",
            pd_length.into(),
            expected,
        ));
    }
    let (rest, pd) = parse::take(usize::from(pd_length))(at_pd)?;
    let (private_data, enhanced) = if revision == 2 {
        let (ulp, (ird, ord)) = (parse::be_u16, parse::be_u16).parse(pd)?;
        (ulp, Some(Enhanced::from_words(ird, ord)))
    } else {
        (pd, None)
    };
    Ok((
        rest,
        RequestReply {
            kind,
            markers: bits & FLAG_MARKERS != 0,
            crc: bits & FLAG_CRC != 0,
            reject: bits & FLAG_REJECT != 0,
            reserved: bits & RESERVED_MASK,
            revision,
            pd_length,
            enhanced,
            private_data,
        },
    ))
}

/// The CRC verdict of an FPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrcStatus {
    /// No CRC was negotiated: the FPDU still ends in the four-octet CRC
    /// field (RFC 5044 section 4.1), which then holds anything and is not
    /// checked.
    NotNegotiated,
    /// The CRC matches.
    Valid,
    /// The CRC does not match.
    Invalid {
        /// The CRC the FPDU carries.
        found: u32,
        /// The CRC of its bytes.
        computed: u32,
    },
}

/// One FPDU (RFC 5044 section 4.1), markers already removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fpdu<'a> {
    /// ULPDU_Length: octets of the ULPDU, pad and markers excluded.
    pub ulpdu_length: u16,
    /// The ULPDU: one DDP segment ([`super::ddp`]).
    pub ulpdu: &'a [u8],
    /// Pad octets (0 to 3) after the ULPDU.
    pub pad: u8,
    /// The CRC verdict.
    pub crc: CrcStatus,
}

impl<'a> Fpdu<'a> {
    /// Octets the FPDU takes in the marker-free stream.
    pub const fn len(&self) -> usize {
        ULPDU_LENGTH_LEN + self.ulpdu_length as usize + self.pad as usize + CRC_LEN
    }

    /// Never: an FPDU has at least its length field.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Parses the FPDU at the start of `input` (marker-free stream bytes);
    /// `crc` says whether CRCs were negotiated, and the CRC is then checked
    /// over the FPDU's bytes. With markers the RFC's CRC also covers them:
    /// check it with [`crc32c`] over the raw bytes instead.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the FPDU is not all there (the stream's
    /// next segment may hold the rest).
    pub fn parse(input: &'a [u8], crc: bool) -> Result<(Fpdu<'a>, &'a [u8])> {
        parse::run(|i| fpdu(i, crc), input, Layer::Mpa, 0).map(|(rest, f)| (f, rest))
    }
}

/// Pad octets after a ULPDU of `ulpdu_length` octets (section 4.1: the
/// length field, ULPDU and pad make a multiple of four).
pub const fn pad_len(ulpdu_length: u16) -> u8 {
    ((4 - (ULPDU_LENGTH_LEN + ulpdu_length as usize) % 4) % 4) as u8
}

fn fpdu(i: &[u8], crc: bool) -> PResult<'_, Fpdu<'_>> {
    let (at_ulpdu, ulpdu_length) = parse::be_u16(i)?;
    let pad = pad_len(ulpdu_length);
    let (at_pad, ulpdu) = parse::take(usize::from(ulpdu_length))(at_ulpdu)?;
    let (at_crc, _) = parse::take(usize::from(pad))(at_pad)?;
    let (rest, octets) = parse::array::<CRC_LEN>(at_crc)?;
    if !crc {
        return Ok((
            rest,
            Fpdu {
                ulpdu_length,
                ulpdu,
                pad,
                crc: CrcStatus::NotNegotiated,
            },
        ));
    }
    let covered = i.get(..i.len() - at_crc.len()).unwrap_or_default();
    let computed = crc32c::checksum(covered);
    let found = crc32c::wire_value(octets);
    let status = if found == computed {
        CrcStatus::Valid
    } else {
        CrcStatus::Invalid { found, computed }
    };
    Ok((
        rest,
        Fpdu {
            ulpdu_length,
            ulpdu,
            pad,
            crc: status,
        },
    ))
}

/// What [`strip_markers`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stripped {
    /// Octets written to the output.
    pub written: usize,
    /// Markers that started inside the input.
    pub markers: usize,
    /// FPDUPTR of the last whole marker in the input: how far back from
    /// the marker its FPDU began (RFC 5044 section 4.3).
    pub last_fpdu_ptr: Option<u16>,
}

/// Copies `input` to `out` without its markers. `stream_offset` is the
/// position of `input[0]` in the stream counted from the first octet of the
/// first FPDU (the TCP sequence number minus the one that octet had), so a
/// segment may start or end inside a marker.
///
/// # Errors
/// [`Error::LimitExceeded`] when `out` is shorter than the marker-free
/// bytes; what fitted has been written.
pub fn strip_markers(stream_offset: u64, input: &[u8], out: &mut [u8]) -> Result<Stripped> {
    let mut s = Stripped::default();
    let mut pos = 0usize;
    while pos < input.len() {
        let at = stream_offset.wrapping_add(pos as u64);
        let into = at % MARKER_INTERVAL;
        let rest = input.get(pos..).unwrap_or_default();
        if into < MARKER_LEN as u64 {
            // Inside a marker: skip its remaining octets.
            let skip = (MARKER_LEN - into as usize).min(rest.len());
            if into == 0 {
                s.markers += 1;
                if let Some(&[_, _, hi, lo]) = rest.first_chunk::<4>() {
                    s.last_fpdu_ptr = Some(u16::from_be_bytes([hi, lo]));
                }
            }
            pos += skip;
            continue;
        }
        let data = (MARKER_INTERVAL - into) as usize;
        let chunk = rest.get(..data.min(rest.len())).unwrap_or_default();
        let Some(dst) = out.get_mut(s.written..s.written + chunk.len()) else {
            return Err(Error::LimitExceeded {
                layer: Layer::Mpa,
                offset: pos,
                what: "marker-free output",
                limit: out.len(),
            });
        };
        dst.copy_from_slice(chunk);
        s.written += chunk.len();
        pos += chunk.len();
    }
    Ok(s)
}
