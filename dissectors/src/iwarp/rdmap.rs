//! RDMAP: the RDMA Protocol over DDP (RFC 5040).
//!
//! RDMAP has no header of its own in most messages: its control octet is
//! the first RsvdULP octet of the DDP header (section 4.2: RV, two
//! reserved bits, opcode), and a Send with Invalidate puts the STag to
//! invalidate in the other four (section 4.3). Write and Read Response go
//! in tagged segments; Send, Read Request and Terminate in untagged ones on
//! queues 0, 1 and 2 (section 5). The Read Request (section 4.4) and the
//! Terminate (section 4.8) carry their own fields after the DDP header.
//!
//! NFS/RDMA puts the RPC-over-RDMA header at the start of each Send
//! ([`Segment::rpcrdma`]); its chunks travel as Writes and Reads.

use super::ddp::{self, DdpHeader, Placement};
use crate::error::{Error, Result};
use crate::layer::Layer;
use crate::parse::{self, PResult};
use crate::rpcrdma::RpcRdmaHeader;

/// The RDMAP version of RFC 5040 (RV).
pub const VERSION_1: u8 = 1;
/// Octets of a Read Request's fields after the DDP header (section 4.4).
pub const READ_REQUEST_LEN: usize = 28;

/// Untagged queue of Sends (section 5.1).
pub const QN_SEND: u32 = 0;
/// Untagged queue of Read Requests.
pub const QN_READ_REQUEST: u32 = 1;
/// Untagged queue of Terminates.
pub const QN_TERMINATE: u32 = 2;

/// An RDMAP opcode (RFC 5040 section 4.2, table 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// 0000b RDMA Write.
    Write,
    /// 0001b RDMA Read Request.
    ReadRequest,
    /// 0010b RDMA Read Response.
    ReadResponse,
    /// 0011b Send.
    Send,
    /// 0100b Send with Invalidate.
    SendInvalidate,
    /// 0101b Send with Solicited Event.
    SendSe,
    /// 0110b Send with Solicited Event and Invalidate.
    SendSeInvalidate,
    /// 0111b Terminate.
    Terminate,
}

impl Opcode {
    /// The opcode for the four bits, or `None` for one RFC 5040 reserves.
    pub const fn from_bits(bits: u8) -> Option<Opcode> {
        Some(match bits {
            0 => Opcode::Write,
            1 => Opcode::ReadRequest,
            2 => Opcode::ReadResponse,
            3 => Opcode::Send,
            4 => Opcode::SendInvalidate,
            5 => Opcode::SendSe,
            6 => Opcode::SendSeInvalidate,
            7 => Opcode::Terminate,
            _ => return None,
        })
    }

    /// The name RFC 5040 gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Opcode::Write => "RDMA Write",
            Opcode::ReadRequest => "RDMA Read Request",
            Opcode::ReadResponse => "RDMA Read Response",
            Opcode::Send => "Send",
            Opcode::SendInvalidate => "Send with Invalidate",
            Opcode::SendSe => "Send with Solicited Event",
            Opcode::SendSeInvalidate => "Send with Solicited Event and Invalidate",
            Opcode::Terminate => "Terminate",
        }
    }

    /// Whether the message goes in tagged segments.
    pub const fn tagged(self) -> bool {
        matches!(self, Opcode::Write | Opcode::ReadResponse)
    }

    /// The untagged queue of an untagged message.
    pub const fn queue(self) -> Option<u32> {
        match self {
            Opcode::Write | Opcode::ReadResponse => None,
            Opcode::ReadRequest => Some(QN_READ_REQUEST),
            Opcode::Terminate => Some(QN_TERMINATE),
            _ => Some(QN_SEND),
        }
    }

    /// One of the four Sends.
    pub const fn is_send(self) -> bool {
        matches!(
            self,
            Opcode::Send | Opcode::SendInvalidate | Opcode::SendSe | Opcode::SendSeInvalidate
        )
    }

    /// A Send that carries an STag to invalidate.
    pub const fn invalidates(self) -> bool {
        matches!(self, Opcode::SendInvalidate | Opcode::SendSeInvalidate)
    }
}

/// An RDMA Read Request's fields (RFC 5040 section 4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadRequest {
    /// Data Sink STag: the requester's buffer the response is placed in.
    pub sink_stag: u32,
    /// Data Sink Tagged Offset.
    pub sink_to: u64,
    /// RDMA Read Message Size in octets.
    pub size: u32,
    /// Data Source STag: the responder's buffer read from.
    pub source_stag: u32,
    /// Data Source Tagged Offset.
    pub source_to: u64,
}

fn read_request(i: &[u8]) -> PResult<'_, ReadRequest> {
    let (rest, (sink_stag, sink_to, size, source_stag, source_to)) = nom::Parser::parse(
        &mut (
            parse::be_u32,
            parse::be_u64,
            parse::be_u32,
            parse::be_u32,
            parse::be_u64,
        ),
        i,
    )?;
    Ok((
        rest,
        ReadRequest {
            sink_stag,
            sink_to,
            size,
            source_stag,
            source_to,
        },
    ))
}

/// The layer a Terminate blames (RFC 5040 section 4.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TermLayer {
    /// 0: RDMAP.
    Rdmap,
    /// 1: DDP.
    Ddp,
    /// 2: the lower layer protocol (MPA/TCP).
    Llp,
    /// Any other value, as sent.
    Other(u8),
}

impl TermLayer {
    const fn from_bits(b: u8) -> Self {
        match b {
            0 => TermLayer::Rdmap,
            1 => TermLayer::Ddp,
            2 => TermLayer::Llp,
            v => TermLayer::Other(v),
        }
    }

    /// Its name.
    pub const fn name(self) -> &'static str {
        match self {
            TermLayer::Rdmap => "RDMAP",
            TermLayer::Ddp => "DDP",
            TermLayer::Llp => "LLP",
            TermLayer::Other(_) => "unknown layer",
        }
    }
}

/// A Terminate message (RFC 5040 section 4.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminate<'a> {
    /// The layer that found the error.
    pub layer: TermLayer,
    /// EType: the class of error within the layer (4 bits).
    pub etype: u8,
    /// Error Code within the class.
    pub code: u8,
    /// DDP Segment Length of the terminated segment (M bit).
    pub ddp_segment_length: Option<u16>,
    /// Copy of the terminated segment's DDP header (D bit), parsed.
    pub ddp_header: Option<DdpHeader>,
    /// Copy of the terminated Read Request's fields (R bit).
    pub rdma_header: Option<ReadRequest>,
    /// Octets after the copies (the terminated ULP's data, if any).
    pub rest: &'a [u8],
}

impl Terminate<'_> {
    /// The error's name from layer, EType and code (RFC 5040 section 4.8,
    /// RFC 5041 section 7.2, RFC 5044 section 8), or `None` for a
    /// combination these do not name.
    pub const fn error_name(&self) -> Option<&'static str> {
        term_error_name(self.layer, self.etype, self.code)
    }
}

/// The name of a Terminate error (see [`Terminate::error_name`]).
pub const fn term_error_name(layer: TermLayer, etype: u8, code: u8) -> Option<&'static str> {
    Some(match (layer, etype, code) {
        (TermLayer::Rdmap, 0, _) => "Local Catastrophic Error",
        (TermLayer::Rdmap, 1, 0x00) => "Remote Protection Error: Invalid STag",
        (TermLayer::Rdmap, 1, 0x01) => "Remote Protection Error: Base or bounds violation",
        (TermLayer::Rdmap, 1, 0x02) => "Remote Protection Error: Access rights violation",
        (TermLayer::Rdmap, 1, 0x03) => {
            "Remote Protection Error: STag not associated with RDMAP Stream"
        }
        (TermLayer::Rdmap, 1, 0x04) => "Remote Protection Error: TO wrap",
        (TermLayer::Rdmap, 1, 0x09) => "Remote Protection Error: STag cannot be invalidated",
        (TermLayer::Rdmap, 1, 0xff) => "Remote Protection Error: Unspecified",
        (TermLayer::Rdmap, 2, 0x05) => "Remote Operation Error: Invalid RDMAP version",
        (TermLayer::Rdmap, 2, 0x06) => "Remote Operation Error: Unexpected OpCode",
        (TermLayer::Rdmap, 2, 0x07) => {
            "Remote Operation Error: Catastrophic error, localized to RDMAP Stream"
        }
        (TermLayer::Rdmap, 2, 0x08) => "Remote Operation Error: Catastrophic error, global",
        (TermLayer::Rdmap, 2, 0x09) => "Remote Operation Error: STag cannot be invalidated",
        (TermLayer::Rdmap, 2, 0xff) => "Remote Operation Error: Unspecified",
        (TermLayer::Ddp, 0, _) => "DDP Local Catastrophic Error",
        (TermLayer::Ddp, 1, 0x00) => "Tagged Buffer Error: Invalid STag",
        (TermLayer::Ddp, 1, 0x01) => "Tagged Buffer Error: Base or bounds violation",
        (TermLayer::Ddp, 1, 0x02) => "Tagged Buffer Error: STag not associated with DDP Stream",
        (TermLayer::Ddp, 1, 0x03) => "Tagged Buffer Error: TO wrap",
        (TermLayer::Ddp, 1, 0x04) => "Tagged Buffer Error: Invalid DDP version",
        (TermLayer::Ddp, 2, 0x01) => "Untagged Buffer Error: Invalid QN",
        (TermLayer::Ddp, 2, 0x02) => "Untagged Buffer Error: Invalid MSN, no buffer available",
        (TermLayer::Ddp, 2, 0x03) => "Untagged Buffer Error: Invalid MSN, MSN range",
        (TermLayer::Ddp, 2, 0x04) => "Untagged Buffer Error: Invalid MO",
        (TermLayer::Ddp, 2, 0x05) => "Untagged Buffer Error: DDP Message too long",
        (TermLayer::Ddp, 2, 0x06) => "Untagged Buffer Error: Invalid DDP version",
        (TermLayer::Llp, 0, 0x01) => "MPA: TCP connection closed, terminated or lost",
        (TermLayer::Llp, 0, 0x02) => "MPA: CRC error",
        (TermLayer::Llp, 0, 0x03) => "MPA: Marker and ULPDU_Length mismatch",
        (TermLayer::Llp, 0, 0x04) => "MPA: Invalid Request or Reply frame",
        _ => return None,
    })
}

const HDRCT_M: u8 = 0x80;
const HDRCT_D: u8 = 0x40;
const HDRCT_R: u8 = 0x20;

fn terminate(i: &[u8]) -> PResult<'_, Terminate<'_>> {
    let (mut rest, [le, code, hdrct, _]) = parse::array::<4>(i)?;
    let mut ddp_segment_length = None;
    if hdrct & HDRCT_M != 0 {
        let (r, v) = parse::be_u16(rest)?;
        ddp_segment_length = Some(v);
        rest = r;
    }
    let mut ddp_header = None;
    if hdrct & HDRCT_D != 0 {
        let (r, h) = ddp::header(rest)?;
        ddp_header = Some(h);
        rest = r;
    }
    let mut rdma_header = None;
    if hdrct & HDRCT_R != 0 {
        let (r, h) = read_request(rest)?;
        rdma_header = Some(h);
        rest = r;
    }
    let t = Terminate {
        layer: TermLayer::from_bits(le >> 4),
        etype: le & 0x0f,
        code,
        ddp_segment_length,
        ddp_header,
        rdma_header,
        rest,
    };
    Ok((&[], t))
}

/// What follows the DDP header, by opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    /// Write, Read Response or a Send: the segment's data.
    Data(&'a [u8]),
    /// A Read Request's fields.
    ReadRequest(ReadRequest),
    /// A Terminate.
    Terminate(Terminate<'a>),
}

/// One DDP segment read as RDMAP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment<'a> {
    /// The DDP header.
    pub ddp: DdpHeader,
    /// RV: the RDMAP version.
    pub version: u8,
    /// The opcode.
    pub opcode: Opcode,
    /// The STag a Send with Invalidate invalidates.
    pub invalidate_stag: Option<u32>,
    /// Data or fields.
    pub body: Body<'a>,
}

impl<'a> Segment<'a> {
    /// Parses a ULPDU (an FPDU's payload) as DDP and RDMAP.
    ///
    /// # Errors
    /// - DDP's errors ([`DdpHeader::parse`]);
    /// - [`Error::BadField`] (layer `rdmap`, offset 1) for an RV other
    ///   than 1 or a reserved opcode, and for an opcode in the wrong kind
    ///   of segment (a Send tagged) or on the wrong queue (offset 6);
    /// - [`Error::Truncated`] for a cut Read Request or Terminate.
    pub fn parse(ulpdu: &'a [u8]) -> Result<Segment<'a>> {
        let (ddp, payload) = DdpHeader::parse(ulpdu)?;
        let (version, opcode) = control(&ddp)?;
        let base = ddp.len();
        let (invalidate_stag, body) = match ddp.placement {
            Placement::Tagged { .. } => (None, Body::Data(payload)),
            Placement::Untagged { rsvd_ulp, .. } => {
                let inv = opcode.invalidates().then_some(rsvd_ulp);
                let body = match opcode {
                    Opcode::ReadRequest => {
                        Body::ReadRequest(parse::run(read_request, payload, Layer::Rdmap, base)?.1)
                    }
                    Opcode::Terminate => {
                        Body::Terminate(parse::run(terminate, payload, Layer::Rdmap, base)?.1)
                    }
                    _ => Body::Data(payload),
                };
                (inv, body)
            }
        };
        Ok(Segment {
            ddp,
            version,
            opcode,
            invalidate_stag,
            body,
        })
    }

    /// The RPC-over-RDMA header at the start of a Send's message: only in
    /// the segment with Message Offset 0; `None` for anything else.
    pub fn rpcrdma(&self) -> Option<Result<RpcRdmaHeader<'a>>> {
        match (self.body, self.ddp.placement) {
            (Body::Data(data), Placement::Untagged { mo: 0, .. }) if self.opcode.is_send() => Some(
                RpcRdmaHeader::parse(data)
                    .map(|(h, _)| h)
                    .map_err(|e| e.at(self.ddp.len())),
            ),
            _ => None,
        }
    }
}

/// RV and opcode from the control octet, checked against the segment.
fn control(ddp: &DdpHeader) -> Result<(u8, Opcode)> {
    let c = ddp.ulp_control;
    let version = c >> 6;
    let bad = |offset, field, value: u64, expected| Error::BadField {
        layer: Layer::Rdmap,
        offset,
        field,
        value,
        expected,
    };
    if version != VERSION_1 {
        return Err(bad(1, "rv", version.into(), "1 (RFC 5040 section 4.2)"));
    }
    let Some(opcode) = Opcode::from_bits(c & 0x0f) else {
        return Err(bad(
            1,
            "opcode",
            (c & 0x0f).into(),
            "0..=7 (RFC 5040 section 4.2)",
        ));
    };
    if opcode.tagged() != ddp.tagged() {
        let expected = if opcode.tagged() {
            "a tagged segment"
        } else {
            "an untagged segment"
        };
        return Err(bad(0, "t", ddp.tagged().into(), expected));
    }
    if let (Placement::Untagged { qn, .. }, Some(want)) = (ddp.placement, opcode.queue()) {
        if qn != want {
            return Err(bad(
                6,
                "qn",
                qn.into(),
                "0 Send, 1 Read Request, 2 Terminate (RFC 5040 section 5)",
            ));
        }
    }
    Ok((version, opcode))
}
