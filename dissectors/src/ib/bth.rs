//! Base Transport Header (IBA 9.2) and the opcode table (IBA 9.2, table 38;
//! RoCEv2 CNP: annex A17.9.2).
//!
//! ```text
//!  byte  0        1                  2..4     4          5..8      8        9..12
//!       +--------+--+-+--+----+------+--------+-+-+------+---------+-+------+--------+
//!       | OpCode |SE|M|Pad|TVer|     | P_Key  |F|B|resv6a| DestQP  |A|resv7| PSN    |
//!       +--------+--+-+--+----+------+--------+-+-+------+---------+-+------+--------+
//!        8 bits   1  1  2   4          16       1 1  6      24       1  7     24
//! ```
//!
//! The opcode's top three bits name the transport service (RC, UC, RD, UD,
//! CNP, XRC) and its low five bits the operation; together they decide which
//! extension headers follow (see [`Opcode::ext_headers`]).

use core::fmt;

use super::{out, split, PKey, Psn, Qpn};
use crate::bytes::{put_u16, put_u24, u16_at, u24_at, u8_at};
use crate::{Error, Layer, Result};

mod field {
    use core::ops::Range;
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const P_KEY: Range<usize> = 2..4;
    pub const FECN_BECN: usize = 4;
    pub const DEST_QP: Range<usize> = 5..8;
    pub const ACK_REQ: usize = 8;
    pub const PSN: Range<usize> = 9..12;
}

/// Length of the BTH in bytes.
pub const HEADER_LEN: usize = 12;

/// Base Transport Header (IBA 9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bth {
    /// OpCode: transport service and operation (IBA 9.2, table 38).
    pub opcode: Opcode,
    /// SE, solicited event: the responder should raise a completion event (IBA 9.2.2).
    pub se: bool,
    /// M, MigReq: the path migration state (IBA 9.2.3, 17.2.8).
    pub m: bool,
    /// PadCnt: 0 to 3 pad bytes at the end of the payload (IBA 9.2.4).
    pub pad_count: u8,
    /// TVer, transport header version, 0 today (IBA 9.2.5).
    pub tver: u8,
    /// P_Key, partition key (IBA 9.2.6).
    pub p_key: PKey,
    /// FECN, forward congestion notification (IBA 9.2.7, A10).
    pub fecn: bool,
    /// BECN, backward congestion notification (IBA 9.2.7, A10).
    pub becn: bool,
    /// DestQP, destination queue pair, 24 bits (IBA 9.2.8).
    pub dest_qp: Qpn,
    /// A, AckReq: the requester asks for an acknowledgement (IBA 9.2.9).
    pub ack_req: bool,
    /// PSN, packet sequence number, 24 bits (IBA 9.2.10).
    pub psn: Psn,
}

impl Bth {
    /// Parses a BTH from the start of `input` and returns it with the bytes after it.
    ///
    /// The reserved bits (resv6a, resv7) are ignored.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `input` is shorter than [`HEADER_LEN`].
    pub fn parse(input: &[u8]) -> Result<(Bth, &[u8])> {
        let (h, rest) = split(input, Layer::Bth, HEADER_LEN)?;
        let flags = u8_at(h, field::FLAGS);
        let fb = u8_at(h, field::FECN_BECN);
        let bth = Bth {
            opcode: Opcode(u8_at(h, field::OPCODE)),
            se: flags & 0x80 != 0,
            m: flags & 0x40 != 0,
            pad_count: (flags >> 4) & 0x3,
            tver: flags & 0x0f,
            p_key: PKey(u16_at(h, field::P_KEY.start)),
            fecn: fb & 0x80 != 0,
            becn: fb & 0x40 != 0,
            dest_qp: Qpn::from_bits(u24_at(h, field::DEST_QP.start)),
            ack_req: u8_at(h, field::ACK_REQ) & 0x80 != 0,
            psn: Psn::from_bits(u24_at(h, field::PSN.start)),
        };
        Ok((bth, rest))
    }

    /// Writes the BTH (reserved bits zero) to the start of `buf`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`HEADER_LEN`];
    /// [`Error::BadField`] if `pad_count` > 3 or `tver` > 15.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.pad_count > 3 {
            return Err(bad_field(
                field::FLAGS,
                "pad_count",
                self.pad_count,
                "0..=3",
            ));
        }
        if self.tver > 15 {
            return Err(bad_field(field::FLAGS, "tver", self.tver, "0..=15"));
        }
        let h = out(buf, Layer::Bth, HEADER_LEN)?;
        h.fill(0);
        let flags =
            (u8::from(self.se) << 7) | (u8::from(self.m) << 6) | (self.pad_count << 4) | self.tver;
        if let Some(b) = h.get_mut(field::OPCODE) {
            *b = self.opcode.0;
        }
        if let Some(b) = h.get_mut(field::FLAGS) {
            *b = flags;
        }
        if let Some(b) = h.get_mut(field::FECN_BECN) {
            *b = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6);
        }
        if let Some(b) = h.get_mut(field::ACK_REQ) {
            *b = u8::from(self.ack_req) << 7;
        }
        put_u16(h, field::P_KEY.start, self.p_key.0);
        put_u24(h, field::DEST_QP.start, self.dest_qp.get());
        put_u24(h, field::PSN.start, self.psn.get());
        Ok(HEADER_LEN)
    }
}

fn bad_field(offset: usize, field: &'static str, value: u8, expected: &'static str) -> Error {
    Error::BadField {
        layer: Layer::Bth,
        offset,
        field,
        value: u64::from(value),
        expected,
    }
}

/// The transport service named by the top three bits of the opcode (IBA 9.2, table 38).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// Reliable Connection (0x00-0x1f).
    Rc,
    /// Unreliable Connection (0x20-0x3f).
    Uc,
    /// Reliable Datagram (0x40-0x5f).
    Rd,
    /// Unreliable Datagram (0x60-0x7f).
    Ud,
    /// Congestion Notification Packet, RoCEv2 (0x80-0x9f; only 0x81 is defined).
    Cnp,
    /// Extended Reliable Connection (0xa0-0xbf).
    Xrc,
    /// Reserved or manufacturer-specific (0xc0-0xff).
    Unknown,
}

impl Transport {
    /// Short upper-case name: "RC", "UC", "RD", "UD", "CNP", "XRC" or "Unknown".
    pub const fn name(self) -> &'static str {
        match self {
            Transport::Rc => "RC",
            Transport::Uc => "UC",
            Transport::Rd => "RD",
            Transport::Ud => "UD",
            Transport::Cnp => "CNP",
            Transport::Xrc => "XRC",
            Transport::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an opcode does, whatever its transport service and packet position.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// SEND, with or without immediate data or invalidate.
    Send,
    /// RDMA WRITE, with or without immediate data.
    RdmaWrite,
    /// RDMA READ Request.
    RdmaReadRequest,
    /// RDMA READ Response (First, Middle, Last, Only).
    RdmaReadResponse,
    /// Acknowledge (AETH only).
    Acknowledge,
    /// ATOMIC Acknowledge (AETH and AtomicAckETH).
    AtomicAcknowledge,
    /// ATOMIC CmpSwap.
    CompareSwap,
    /// ATOMIC FetchAdd.
    FetchAdd,
    /// RD RESYNC.
    Resync,
    /// ATOMIC WRITE (IBA 1.5, RC only).
    AtomicWrite,
    /// RoCEv2 Congestion Notification Packet.
    Cnp,
    /// A reserved or unrecognised opcode.
    Unknown,
}

/// Where a packet sits in a multi-packet message (IBA 9.2, table 38).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    /// First packet of a message.
    First,
    /// A packet between the first and the last.
    Middle,
    /// Last packet of a message.
    Last,
    /// The whole message in one packet.
    Only,
}

/// An extension transport header that can follow the BTH (IBA 9.3).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExtHeader {
    /// Reliable Datagram ETH, 4 bytes (IBA 9.3.1).
    Rdeth,
    /// Datagram ETH, 8 bytes (IBA 9.3.2).
    Deth,
    /// XRC ETH, 4 bytes (IBA 9.3.8).
    XrcEth,
    /// RDMA ETH, 16 bytes (IBA 9.3.3).
    Reth,
    /// Atomic ETH, 28 bytes (IBA 9.3.4).
    AtomicEth,
    /// ACK ETH, 4 bytes (IBA 9.3.5).
    Aeth,
    /// Atomic ACK ETH, 8 bytes (IBA 9.3.5.3).
    AtomicAckEth,
    /// Immediate data, 4 bytes (IBA 9.3.6).
    ImmDt,
    /// Invalidate ETH, 4 bytes (IBA 9.3.7).
    Ieth,
}

impl ExtHeader {
    /// The header's length on the wire.
    pub const fn wire_len(self) -> usize {
        match self {
            ExtHeader::Rdeth | ExtHeader::XrcEth | ExtHeader::Aeth => 4,
            ExtHeader::ImmDt | ExtHeader::Ieth => 4,
            ExtHeader::Deth | ExtHeader::AtomicAckEth => 8,
            ExtHeader::Reth => 16,
            ExtHeader::AtomicEth => 28,
        }
    }

    /// The layer that names this header in errors.
    pub const fn layer(self) -> Layer {
        match self {
            ExtHeader::Rdeth => Layer::Rdeth,
            ExtHeader::Deth => Layer::Deth,
            ExtHeader::XrcEth => Layer::XrcEth,
            ExtHeader::Reth => Layer::Reth,
            ExtHeader::AtomicEth => Layer::AtomicEth,
            ExtHeader::Aeth => Layer::Aeth,
            ExtHeader::AtomicAckEth => Layer::AtomicAckEth,
            ExtHeader::ImmDt => Layer::ImmDt,
            ExtHeader::Ieth => Layer::Ieth,
        }
    }
}

/// Most extension headers any opcode has (RD RDMA WRITE Only with
/// Immediate: RDETH, DETH, RETH, ImmDt).
const MAX_EXT_HEADERS: usize = 4;

/// The extension headers that follow the BTH for one opcode, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtHeaders {
    list: [ExtHeader; MAX_EXT_HEADERS],
    len: u8,
}

impl ExtHeaders {
    const NONE: ExtHeaders = ExtHeaders {
        list: [ExtHeader::Reth; MAX_EXT_HEADERS],
        len: 0,
    };

    const fn push(mut self, h: ExtHeader) -> Self {
        match self.len {
            0 => self.list[0] = h,
            1 => self.list[1] = h,
            2 => self.list[2] = h,
            3 => self.list[3] = h,
            _ => return self,
        }
        self.len += 1;
        self
    }

    // Only evaluated while building `EXT_HEADERS` at compile time.
    #[allow(clippy::indexing_slicing)]
    const fn extend(mut self, hs: &[ExtHeader]) -> Self {
        let mut i = 0;
        while i < hs.len() {
            self = self.push(hs[i]);
            i += 1;
        }
        self
    }

    /// The headers, in wire order.
    pub fn as_slice(&self) -> &[ExtHeader] {
        self.list.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// Iterates over the headers in wire order.
    pub fn iter(&self) -> impl Iterator<Item = ExtHeader> + '_ {
        self.as_slice().iter().copied()
    }

    /// Whether `h` is among them.
    pub fn contains(&self, h: ExtHeader) -> bool {
        self.as_slice().contains(&h)
    }

    /// How many headers.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Their total length on the wire.
    pub fn wire_len(&self) -> usize {
        self.iter().map(ExtHeader::wire_len).sum()
    }
}

/// [`Opcode::ext_headers`] for every opcode, built at compile time: the
/// lookup is on every packet's path.
// Evaluated at compile time: an out-of-range index fails the build.
#[allow(clippy::indexing_slicing)]
const EXT_HEADERS: [ExtHeaders; 256] = {
    let mut t = [ExtHeaders::NONE; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = Opcode(i as u8).compute_ext_headers();
        i += 1;
    }
    t
};

/// [`Opcode::operation`] for every opcode, built at compile time.
// Evaluated at compile time: an out-of-range index fails the build.
#[allow(clippy::indexing_slicing)]
const OPERATIONS: [Operation; 256] = {
    let mut t = [Operation::Unknown; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = Opcode(i as u8).compute_operation();
        i += 1;
    }
    t
};

/// [`Opcode::position`] for every opcode, built at compile time.
// Evaluated at compile time: an out-of-range index fails the build.
#[allow(clippy::indexing_slicing)]
const POSITIONS: [Option<Position>; 256] = {
    let mut t = [None; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = Opcode(i as u8).compute_position();
        i += 1;
    }
    t
};

/// A BTH opcode (IBA 9.2, table 38). Open: any byte is an opcode, and an
/// undefined one is [`Transport::Unknown`]/[`Operation::Unknown`], not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Opcode(pub u8);

impl From<u8> for Opcode {
    fn from(v: u8) -> Self {
        Opcode(v)
    }
}

impl From<Opcode> for u8 {
    fn from(v: Opcode) -> Self {
        v.0
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// Low five bits of the opcode, shared by RC, UC, RD, UD and XRC.
const SEND_FIRST: u8 = 0x00;
const SEND_MIDDLE: u8 = 0x01;
const SEND_LAST: u8 = 0x02;
const SEND_LAST_IMM: u8 = 0x03;
const SEND_ONLY: u8 = 0x04;
const SEND_ONLY_IMM: u8 = 0x05;
const WRITE_FIRST: u8 = 0x06;
const WRITE_MIDDLE: u8 = 0x07;
const WRITE_LAST: u8 = 0x08;
const WRITE_LAST_IMM: u8 = 0x09;
const WRITE_ONLY: u8 = 0x0a;
const WRITE_ONLY_IMM: u8 = 0x0b;
const READ_REQUEST: u8 = 0x0c;
const READ_RESPONSE_FIRST: u8 = 0x0d;
const READ_RESPONSE_MIDDLE: u8 = 0x0e;
const READ_RESPONSE_LAST: u8 = 0x0f;
const READ_RESPONSE_ONLY: u8 = 0x10;
const ACKNOWLEDGE: u8 = 0x11;
const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
const COMPARE_SWAP: u8 = 0x13;
const FETCH_ADD: u8 = 0x14;
const RESYNC: u8 = 0x15;
const SEND_LAST_INV: u8 = 0x16;
const SEND_ONLY_INV: u8 = 0x17;
const ATOMIC_WRITE: u8 = 0x1d;

impl Opcode {
    /// RC SEND First (0x00).
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    /// RC SEND Middle (0x01).
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    /// RC SEND Last (0x02).
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    /// RC SEND Last with Immediate (0x03).
    pub const RC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x03);
    /// RC SEND Only (0x04).
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    /// RC SEND Only with Immediate (0x05).
    pub const RC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x05);
    /// RC RDMA WRITE First (0x06).
    pub const RC_RDMA_WRITE_FIRST: Opcode = Opcode(0x06);
    /// RC RDMA WRITE Middle (0x07).
    pub const RC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x07);
    /// RC RDMA WRITE Last (0x08).
    pub const RC_RDMA_WRITE_LAST: Opcode = Opcode(0x08);
    /// RC RDMA WRITE Last with Immediate (0x09).
    pub const RC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x09);
    /// RC RDMA WRITE Only (0x0a).
    pub const RC_RDMA_WRITE_ONLY: Opcode = Opcode(0x0a);
    /// RC RDMA WRITE Only with Immediate (0x0b).
    pub const RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x0b);
    /// RC RDMA READ Request (0x0c).
    pub const RC_RDMA_READ_REQUEST: Opcode = Opcode(0x0c);
    /// RC RDMA READ Response First (0x0d).
    pub const RC_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0x0d);
    /// RC RDMA READ Response Middle (0x0e).
    pub const RC_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x0e);
    /// RC RDMA READ Response Last (0x0f).
    pub const RC_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0x0f);
    /// RC RDMA READ Response Only (0x10).
    pub const RC_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0x10);
    /// RC Acknowledge (0x11).
    pub const RC_ACKNOWLEDGE: Opcode = Opcode(0x11);
    /// RC ATOMIC Acknowledge (0x12).
    pub const RC_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0x12);
    /// RC CmpSwap (0x13).
    pub const RC_COMPARE_SWAP: Opcode = Opcode(0x13);
    /// RC FetchAdd (0x14).
    pub const RC_FETCH_ADD: Opcode = Opcode(0x14);
    /// RC SEND Last with Invalidate (0x16).
    pub const RC_SEND_LAST_WITH_INVALIDATE: Opcode = Opcode(0x16);
    /// RC SEND Only with Invalidate (0x17).
    pub const RC_SEND_ONLY_WITH_INVALIDATE: Opcode = Opcode(0x17);
    /// RC ATOMIC WRITE (0x1d).
    pub const RC_ATOMIC_WRITE: Opcode = Opcode(0x1d);
    /// UC SEND First (0x20).
    pub const UC_SEND_FIRST: Opcode = Opcode(0x20);
    /// UC SEND Middle (0x21).
    pub const UC_SEND_MIDDLE: Opcode = Opcode(0x21);
    /// UC SEND Last (0x22).
    pub const UC_SEND_LAST: Opcode = Opcode(0x22);
    /// UC SEND Last with Immediate (0x23).
    pub const UC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x23);
    /// UC SEND Only (0x24).
    pub const UC_SEND_ONLY: Opcode = Opcode(0x24);
    /// UC SEND Only with Immediate (0x25).
    pub const UC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x25);
    /// UC RDMA WRITE First (0x26).
    pub const UC_RDMA_WRITE_FIRST: Opcode = Opcode(0x26);
    /// UC RDMA WRITE Middle (0x27).
    pub const UC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x27);
    /// UC RDMA WRITE Last (0x28).
    pub const UC_RDMA_WRITE_LAST: Opcode = Opcode(0x28);
    /// UC RDMA WRITE Last with Immediate (0x29).
    pub const UC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x29);
    /// UC RDMA WRITE Only (0x2a).
    pub const UC_RDMA_WRITE_ONLY: Opcode = Opcode(0x2a);
    /// UC RDMA WRITE Only with Immediate (0x2b).
    pub const UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x2b);
    /// RD SEND First (0x40).
    pub const RD_SEND_FIRST: Opcode = Opcode(0x40);
    /// RD SEND Middle (0x41).
    pub const RD_SEND_MIDDLE: Opcode = Opcode(0x41);
    /// RD SEND Last (0x42).
    pub const RD_SEND_LAST: Opcode = Opcode(0x42);
    /// RD SEND Last with Immediate (0x43).
    pub const RD_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x43);
    /// RD SEND Only (0x44).
    pub const RD_SEND_ONLY: Opcode = Opcode(0x44);
    /// RD SEND Only with Immediate (0x45).
    pub const RD_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x45);
    /// RD RDMA WRITE First (0x46).
    pub const RD_RDMA_WRITE_FIRST: Opcode = Opcode(0x46);
    /// RD RDMA WRITE Middle (0x47).
    pub const RD_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x47);
    /// RD RDMA WRITE Last (0x48).
    pub const RD_RDMA_WRITE_LAST: Opcode = Opcode(0x48);
    /// RD RDMA WRITE Last with Immediate (0x49).
    pub const RD_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x49);
    /// RD RDMA WRITE Only (0x4a).
    pub const RD_RDMA_WRITE_ONLY: Opcode = Opcode(0x4a);
    /// RD RDMA WRITE Only with Immediate (0x4b).
    pub const RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x4b);
    /// RD RDMA READ Request (0x4c).
    pub const RD_RDMA_READ_REQUEST: Opcode = Opcode(0x4c);
    /// RD RDMA READ Response First (0x4d).
    pub const RD_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0x4d);
    /// RD RDMA READ Response Middle (0x4e).
    pub const RD_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x4e);
    /// RD RDMA READ Response Last (0x4f).
    pub const RD_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0x4f);
    /// RD RDMA READ Response Only (0x50).
    pub const RD_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0x50);
    /// RD Acknowledge (0x51).
    pub const RD_ACKNOWLEDGE: Opcode = Opcode(0x51);
    /// RD ATOMIC Acknowledge (0x52).
    pub const RD_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0x52);
    /// RD CmpSwap (0x53).
    pub const RD_COMPARE_SWAP: Opcode = Opcode(0x53);
    /// RD FetchAdd (0x54).
    pub const RD_FETCH_ADD: Opcode = Opcode(0x54);
    /// RD RESYNC (0x55).
    pub const RD_RESYNC: Opcode = Opcode(0x55);
    /// UD SEND Only (0x64).
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    /// UD SEND Only with Immediate (0x65).
    pub const UD_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x65);
    /// XRC SEND First (0xa0).
    pub const XRC_SEND_FIRST: Opcode = Opcode(0xa0);
    /// XRC SEND Middle (0xa1).
    pub const XRC_SEND_MIDDLE: Opcode = Opcode(0xa1);
    /// XRC SEND Last (0xa2).
    pub const XRC_SEND_LAST: Opcode = Opcode(0xa2);
    /// XRC SEND Last with Immediate (0xa3).
    pub const XRC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0xa3);
    /// XRC SEND Only (0xa4).
    pub const XRC_SEND_ONLY: Opcode = Opcode(0xa4);
    /// XRC SEND Only with Immediate (0xa5).
    pub const XRC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0xa5);
    /// XRC RDMA WRITE First (0xa6).
    pub const XRC_RDMA_WRITE_FIRST: Opcode = Opcode(0xa6);
    /// XRC RDMA WRITE Middle (0xa7).
    pub const XRC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0xa7);
    /// XRC RDMA WRITE Last (0xa8).
    pub const XRC_RDMA_WRITE_LAST: Opcode = Opcode(0xa8);
    /// XRC RDMA WRITE Last with Immediate (0xa9).
    pub const XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0xa9);
    /// XRC RDMA WRITE Only (0xaa).
    pub const XRC_RDMA_WRITE_ONLY: Opcode = Opcode(0xaa);
    /// XRC RDMA WRITE Only with Immediate (0xab).
    pub const XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0xab);
    /// XRC RDMA READ Request (0xac).
    pub const XRC_RDMA_READ_REQUEST: Opcode = Opcode(0xac);
    /// XRC RDMA READ Response First (0xad).
    pub const XRC_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0xad);
    /// XRC RDMA READ Response Middle (0xae).
    pub const XRC_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0xae);
    /// XRC RDMA READ Response Last (0xaf).
    pub const XRC_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0xaf);
    /// XRC RDMA READ Response Only (0xb0).
    pub const XRC_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0xb0);
    /// XRC Acknowledge (0xb1).
    pub const XRC_ACKNOWLEDGE: Opcode = Opcode(0xb1);
    /// XRC ATOMIC Acknowledge (0xb2).
    pub const XRC_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0xb2);
    /// XRC CmpSwap (0xb3).
    pub const XRC_COMPARE_SWAP: Opcode = Opcode(0xb3);
    /// XRC FetchAdd (0xb4).
    pub const XRC_FETCH_ADD: Opcode = Opcode(0xb4);
    /// XRC SEND Last with Invalidate (0xb6).
    pub const XRC_SEND_LAST_WITH_INVALIDATE: Opcode = Opcode(0xb6);
    /// XRC SEND Only with Invalidate (0xb7).
    pub const XRC_SEND_ONLY_WITH_INVALIDATE: Opcode = Opcode(0xb7);
    /// RoCEv2 Congestion Notification Packet (0x81, annex A17.9).
    pub const CNP: Opcode = Opcode(0x81);

    /// The transport service (top three bits).
    pub const fn transport(self) -> Transport {
        match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            5 => Transport::Xrc,
            _ => Transport::Unknown,
        }
    }

    /// The low five bits, which name the operation within a service.
    const fn low(self) -> u8 {
        self.0 & 0x1f
    }

    /// Whether table 38 (or annex A17 for CNP) defines this opcode.
    pub const fn is_known(self) -> bool {
        let low = self.low();
        match self.transport() {
            Transport::Rc => matches!(low, 0x00..=0x14 | 0x16 | 0x17 | ATOMIC_WRITE),
            Transport::Uc => low <= WRITE_ONLY_IMM,
            Transport::Rd => low <= RESYNC,
            Transport::Ud => matches!(low, SEND_ONLY | SEND_ONLY_IMM),
            Transport::Cnp => self.0 == Opcode::CNP.0,
            Transport::Xrc => matches!(low, 0x00..=0x14 | 0x16 | 0x17),
            Transport::Unknown => false,
        }
    }

    /// The operation; [`Operation::Unknown`] for undefined opcodes.
    // A u8 index into a 256-entry table cannot miss.
    #[allow(clippy::indexing_slicing)]
    #[inline]
    pub const fn operation(self) -> Operation {
        OPERATIONS[self.0 as usize]
    }

    /// [`Opcode::operation`] worked out from table 38; tabulated at compile
    /// time in `OPERATIONS`, as it is asked of every packet.
    const fn compute_operation(self) -> Operation {
        if !self.is_known() {
            return Operation::Unknown;
        }
        if matches!(self.transport(), Transport::Cnp) {
            return Operation::Cnp;
        }
        match self.low() {
            SEND_FIRST..=SEND_ONLY_IMM | SEND_LAST_INV | SEND_ONLY_INV => Operation::Send,
            WRITE_FIRST..=WRITE_ONLY_IMM => Operation::RdmaWrite,
            READ_REQUEST => Operation::RdmaReadRequest,
            READ_RESPONSE_FIRST..=READ_RESPONSE_ONLY => Operation::RdmaReadResponse,
            ACKNOWLEDGE => Operation::Acknowledge,
            ATOMIC_ACKNOWLEDGE => Operation::AtomicAcknowledge,
            COMPARE_SWAP => Operation::CompareSwap,
            FETCH_ADD => Operation::FetchAdd,
            RESYNC => Operation::Resync,
            ATOMIC_WRITE => Operation::AtomicWrite,
            _ => Operation::Unknown,
        }
    }

    /// The packet's place in its message, for SEND, RDMA WRITE and RDMA
    /// READ Response opcodes; `None` for the others.
    // A u8 index into a 256-entry table cannot miss.
    #[allow(clippy::indexing_slicing)]
    #[inline]
    pub const fn position(self) -> Option<Position> {
        POSITIONS[self.0 as usize]
    }

    /// [`Opcode::position`] worked out from table 38; tabulated at compile
    /// time in `POSITIONS`.
    const fn compute_position(self) -> Option<Position> {
        if !self.is_known() || matches!(self.transport(), Transport::Cnp) {
            return None;
        }
        match self.low() {
            SEND_FIRST | WRITE_FIRST | READ_RESPONSE_FIRST => Some(Position::First),
            SEND_MIDDLE | WRITE_MIDDLE | READ_RESPONSE_MIDDLE => Some(Position::Middle),
            SEND_LAST | SEND_LAST_IMM | WRITE_LAST | WRITE_LAST_IMM | READ_RESPONSE_LAST
            | SEND_LAST_INV => Some(Position::Last),
            SEND_ONLY | SEND_ONLY_IMM | WRITE_ONLY | WRITE_ONLY_IMM | READ_RESPONSE_ONLY
            | SEND_ONLY_INV => Some(Position::Only),
            _ => None,
        }
    }

    /// Whether an ImmDt header follows (the "with Immediate" opcodes).
    pub const fn has_immediate(self) -> bool {
        self.is_known()
            && !matches!(self.transport(), Transport::Cnp)
            && matches!(
                self.low(),
                SEND_LAST_IMM | SEND_ONLY_IMM | WRITE_LAST_IMM | WRITE_ONLY_IMM
            )
    }

    /// Whether an IETH follows (the "with Invalidate" opcodes).
    pub const fn has_invalidate(self) -> bool {
        self.is_known()
            && !matches!(self.transport(), Transport::Cnp)
            && matches!(self.low(), SEND_LAST_INV | SEND_ONLY_INV)
    }

    /// Whether packets with this opcode carry data after the headers
    /// (SEND, RDMA WRITE, RDMA READ Response, ATOMIC WRITE).
    pub const fn carries_payload(self) -> bool {
        matches!(
            self.operation(),
            Operation::Send
                | Operation::RdmaWrite
                | Operation::RdmaReadResponse
                | Operation::AtomicWrite
        )
    }

    /// Whether this is a response (RDMA READ Response, Acknowledge, ATOMIC
    /// Acknowledge), which travels from responder to requester.
    pub const fn is_response(self) -> bool {
        matches!(
            self.operation(),
            Operation::RdmaReadResponse | Operation::Acknowledge | Operation::AtomicAcknowledge
        )
    }

    /// The extension headers that follow the BTH, in wire order (IBA 9.2,
    /// table 38 "headers" column). Empty for unknown opcodes and CNP.
    pub fn ext_headers(self) -> ExtHeaders {
        EXT_HEADERS
            .get(usize::from(self.0))
            .copied()
            .unwrap_or(ExtHeaders::NONE)
    }

    /// [`Opcode::ext_headers`] worked out from table 38; tabulated at
    /// compile time in `EXT_HEADERS`.
    const fn compute_ext_headers(self) -> ExtHeaders {
        use ExtHeader::{AtomicAckEth, AtomicEth, Deth, Ieth, ImmDt, Rdeth, Reth, XrcEth};
        if !self.is_known() {
            return ExtHeaders::NONE;
        }
        let prefix = ExtHeaders::NONE;
        let prefix = match self.transport() {
            Transport::Rd if self.is_response() => prefix.push(Rdeth),
            Transport::Rd => prefix.push(Rdeth).push(Deth),
            Transport::Ud => prefix.push(Deth),
            Transport::Xrc if !self.is_response() => prefix.push(XrcEth),
            Transport::Cnp => return prefix,
            _ => prefix,
        };
        let rest: &[ExtHeader] = match self.low() {
            SEND_LAST_IMM | SEND_ONLY_IMM | WRITE_LAST_IMM => &[ImmDt],
            WRITE_FIRST | WRITE_ONLY | READ_REQUEST | ATOMIC_WRITE => &[Reth],
            WRITE_ONLY_IMM => &[Reth, ImmDt],
            READ_RESPONSE_FIRST | READ_RESPONSE_LAST | READ_RESPONSE_ONLY | ACKNOWLEDGE => {
                &[ExtHeader::Aeth]
            }
            ATOMIC_ACKNOWLEDGE => &[ExtHeader::Aeth, AtomicAckEth],
            COMPARE_SWAP | FETCH_ADD => &[AtomicEth],
            SEND_LAST_INV | SEND_ONLY_INV => &[Ieth],
            _ => &[],
        };
        prefix.extend(rest)
    }

    /// The name as Wireshark and the IBA write it: "RC SEND Only",
    /// "UD SEND Only with Immediate", "CNP"; "Unknown" if undefined.
    pub const fn name(self) -> &'static str {
        match self.0 {
            0x00 => "RC SEND First",
            0x01 => "RC SEND Middle",
            0x02 => "RC SEND Last",
            0x03 => "RC SEND Last with Immediate",
            0x04 => "RC SEND Only",
            0x05 => "RC SEND Only with Immediate",
            0x06 => "RC RDMA WRITE First",
            0x07 => "RC RDMA WRITE Middle",
            0x08 => "RC RDMA WRITE Last",
            0x09 => "RC RDMA WRITE Last with Immediate",
            0x0a => "RC RDMA WRITE Only",
            0x0b => "RC RDMA WRITE Only with Immediate",
            0x0c => "RC RDMA READ Request",
            0x0d => "RC RDMA READ Response First",
            0x0e => "RC RDMA READ Response Middle",
            0x0f => "RC RDMA READ Response Last",
            0x10 => "RC RDMA READ Response Only",
            0x11 => "RC Acknowledge",
            0x12 => "RC ATOMIC Acknowledge",
            0x13 => "RC CmpSwap",
            0x14 => "RC FetchAdd",
            0x16 => "RC SEND Last with Invalidate",
            0x17 => "RC SEND Only with Invalidate",
            0x1d => "RC ATOMIC WRITE",
            0x20 => "UC SEND First",
            0x21 => "UC SEND Middle",
            0x22 => "UC SEND Last",
            0x23 => "UC SEND Last with Immediate",
            0x24 => "UC SEND Only",
            0x25 => "UC SEND Only with Immediate",
            0x26 => "UC RDMA WRITE First",
            0x27 => "UC RDMA WRITE Middle",
            0x28 => "UC RDMA WRITE Last",
            0x29 => "UC RDMA WRITE Last with Immediate",
            0x2a => "UC RDMA WRITE Only",
            0x2b => "UC RDMA WRITE Only with Immediate",
            0x40 => "RD SEND First",
            0x41 => "RD SEND Middle",
            0x42 => "RD SEND Last",
            0x43 => "RD SEND Last with Immediate",
            0x44 => "RD SEND Only",
            0x45 => "RD SEND Only with Immediate",
            0x46 => "RD RDMA WRITE First",
            0x47 => "RD RDMA WRITE Middle",
            0x48 => "RD RDMA WRITE Last",
            0x49 => "RD RDMA WRITE Last with Immediate",
            0x4a => "RD RDMA WRITE Only",
            0x4b => "RD RDMA WRITE Only with Immediate",
            0x4c => "RD RDMA READ Request",
            0x4d => "RD RDMA READ Response First",
            0x4e => "RD RDMA READ Response Middle",
            0x4f => "RD RDMA READ Response Last",
            0x50 => "RD RDMA READ Response Only",
            0x51 => "RD Acknowledge",
            0x52 => "RD ATOMIC Acknowledge",
            0x53 => "RD CmpSwap",
            0x54 => "RD FetchAdd",
            0x55 => "RD RESYNC",
            0x64 => "UD SEND Only",
            0x65 => "UD SEND Only with Immediate",
            0xa0 => "XRC SEND First",
            0xa1 => "XRC SEND Middle",
            0xa2 => "XRC SEND Last",
            0xa3 => "XRC SEND Last with Immediate",
            0xa4 => "XRC SEND Only",
            0xa5 => "XRC SEND Only with Immediate",
            0xa6 => "XRC RDMA WRITE First",
            0xa7 => "XRC RDMA WRITE Middle",
            0xa8 => "XRC RDMA WRITE Last",
            0xa9 => "XRC RDMA WRITE Last with Immediate",
            0xaa => "XRC RDMA WRITE Only",
            0xab => "XRC RDMA WRITE Only with Immediate",
            0xac => "XRC RDMA READ Request",
            0xad => "XRC RDMA READ Response First",
            0xae => "XRC RDMA READ Response Middle",
            0xaf => "XRC RDMA READ Response Last",
            0xb0 => "XRC RDMA READ Response Only",
            0xb1 => "XRC Acknowledge",
            0xb2 => "XRC ATOMIC Acknowledge",
            0xb3 => "XRC CmpSwap",
            0xb4 => "XRC FetchAdd",
            0xb6 => "XRC SEND Last with Invalidate",
            0xb7 => "XRC SEND Only with Invalidate",
            0x81 => "CNP",
            _ => "Unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::testutil::{emits, truncated_at_every_offset};
    use hex_literal::hex;
    use proptest::prelude::*;

    // RC SEND Only, SE, MigReq, pad 3, default P_Key, BECN, QP 0x000011,
    // AckReq, PSN 0xabcdef (IBA 9.2 layout).
    const BYTES: [u8; 12] = hex!("04 f0 ffff 40 000011 80 abcdef");
    fn sample() -> Bth {
        Bth {
            opcode: Opcode::RC_SEND_ONLY,
            se: true,
            m: true,
            pad_count: 3,
            tver: 0,
            p_key: PKey::DEFAULT,
            fecn: false,
            becn: true,
            dest_qp: Qpn::try_new(0x11).unwrap(),
            ack_req: true,
            psn: Psn::try_new(0xab_cdef).unwrap(),
        }
    }

    #[test]
    fn parse_rc_send_only() {
        assert_eq!(Bth::parse(&BYTES), Ok((sample(), &[][..])));
    }

    #[test]
    fn reserved_bits_are_ignored() {
        let (b, _) = Bth::parse(&hex!("04 f0 ffff 7f 000011 ff abcdef")).unwrap();
        assert_eq!(b, sample());
    }

    #[test]
    fn emit_rc_send_only() {
        emits(&BYTES, Layer::Bth, |b| sample().emit(b));
    }

    #[test]
    fn emit_rejects_wide_fields() {
        let mut buf = [0u8; 12];
        let b = Bth {
            pad_count: 4,
            ..sample()
        };
        assert!(matches!(
            b.emit(&mut buf),
            Err(Error::BadField {
                field: "pad_count",
                ..
            })
        ));
        let b = Bth {
            tver: 16,
            ..sample()
        };
        assert!(matches!(
            b.emit(&mut buf),
            Err(Error::BadField { field: "tver", .. })
        ));
    }

    #[test]
    fn truncated_at_every_offset_bth() {
        truncated_at_every_offset(&BYTES, HEADER_LEN, Layer::Bth, Bth::parse);
    }

    #[test]
    fn opcode_names() {
        assert_eq!(Opcode::RC_SEND_ONLY.name(), "RC SEND Only");
        assert_eq!(Opcode::RC_RDMA_WRITE_MIDDLE.name(), "RC RDMA WRITE Middle");
        assert_eq!(
            Opcode::RC_SEND_ONLY_WITH_INVALIDATE.name(),
            "RC SEND Only with Invalidate"
        );
        assert_eq!(
            Opcode::UD_SEND_ONLY_WITH_IMMEDIATE.name(),
            "UD SEND Only with Immediate"
        );
        assert_eq!(
            Opcode::XRC_RDMA_READ_RESPONSE_LAST.name(),
            "XRC RDMA READ Response Last"
        );
        assert_eq!(Opcode::RD_RESYNC.name(), "RD RESYNC");
        assert_eq!(Opcode::CNP.name(), "CNP");
        assert_eq!(Opcode(0x15).name(), "Unknown");
        assert_eq!(Opcode(0xff).name(), "Unknown");
        assert_eq!(Opcode::RC_ACKNOWLEDGE.to_string(), "RC Acknowledge");
        assert_eq!(u8::from(Opcode::from(0x64)), 0x64);
    }

    #[test]
    fn opcode_classification() {
        let o = Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
        assert_eq!(o.transport(), Transport::Rc);
        assert_eq!(o.operation(), Operation::RdmaWrite);
        assert_eq!(o.position(), Some(Position::Only));
        assert!(o.has_immediate() && !o.has_invalidate() && o.carries_payload());
        assert_eq!(
            o.ext_headers().as_slice(),
            &[ExtHeader::Reth, ExtHeader::ImmDt]
        );

        let o = Opcode::RC_SEND_LAST_WITH_INVALIDATE;
        assert_eq!(o.position(), Some(Position::Last));
        assert!(o.has_invalidate());
        assert_eq!(o.ext_headers().as_slice(), &[ExtHeader::Ieth]);

        assert_eq!(
            Opcode::RC_RDMA_READ_REQUEST.operation(),
            Operation::RdmaReadRequest
        );
        assert!(!Opcode::RC_RDMA_READ_REQUEST.carries_payload());
        assert_eq!(Opcode::RC_RDMA_READ_RESPONSE_MIDDLE.ext_headers().len(), 0);
        assert_eq!(
            Opcode::RC_ATOMIC_ACKNOWLEDGE.ext_headers().as_slice(),
            &[ExtHeader::Aeth, ExtHeader::AtomicAckEth]
        );
        assert_eq!(
            Opcode::RC_FETCH_ADD.ext_headers().as_slice(),
            &[ExtHeader::AtomicEth]
        );
        assert_eq!(
            Opcode::RC_ATOMIC_WRITE.ext_headers().as_slice(),
            &[ExtHeader::Reth]
        );
        assert_eq!(Opcode::UC_SEND_FIRST.transport(), Transport::Uc);
        assert_eq!(
            Opcode::UD_SEND_ONLY.ext_headers().as_slice(),
            &[ExtHeader::Deth]
        );
        assert_eq!(
            Opcode::UD_SEND_ONLY_WITH_IMMEDIATE.ext_headers().as_slice(),
            &[ExtHeader::Deth, ExtHeader::ImmDt]
        );
        assert_eq!(
            Opcode::RD_RDMA_WRITE_FIRST.ext_headers().as_slice(),
            &[ExtHeader::Rdeth, ExtHeader::Deth, ExtHeader::Reth]
        );
        assert_eq!(
            Opcode::RD_ACKNOWLEDGE.ext_headers().as_slice(),
            &[ExtHeader::Rdeth, ExtHeader::Aeth]
        );
        assert_eq!(
            Opcode::RD_RESYNC.ext_headers().as_slice(),
            &[ExtHeader::Rdeth, ExtHeader::Deth]
        );
        assert_eq!(
            Opcode::XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE
                .ext_headers()
                .as_slice(),
            &[ExtHeader::XrcEth, ExtHeader::Reth, ExtHeader::ImmDt]
        );
        assert_eq!(
            Opcode::XRC_RDMA_READ_RESPONSE_ONLY.ext_headers().as_slice(),
            &[ExtHeader::Aeth]
        );
        assert_eq!(Opcode::CNP.transport(), Transport::Cnp);
        assert_eq!(Opcode::CNP.operation(), Operation::Cnp);
        assert!(Opcode::CNP.ext_headers().is_empty());
        assert_eq!(Opcode(0x66).operation(), Operation::Unknown);
        assert_eq!(Opcode(0xc4).transport(), Transport::Unknown);
        assert_eq!(Opcode(0x82).transport(), Transport::Cnp);
        assert!(!Opcode(0x82).is_known());
    }

    #[test]
    fn every_known_opcode_has_a_name_and_the_other_way_round() {
        for v in 0..=255u8 {
            let o = Opcode(v);
            assert_eq!(o.is_known(), o.name() != "Unknown", "{v:#04x}");
            if o.is_known() {
                assert!(o.name().starts_with(o.transport().name()), "{v:#04x}");
                assert_ne!(o.operation(), Operation::Unknown);
                assert_eq!(
                    o.has_immediate(),
                    o.ext_headers().contains(ExtHeader::ImmDt)
                );
                assert_eq!(
                    o.has_invalidate(),
                    o.ext_headers().contains(ExtHeader::Ieth)
                );
            } else {
                assert!(o.ext_headers().is_empty());
                assert_eq!(o.position(), None);
            }
        }
    }

    /// IBA 9.2 table 38 "headers" column, transcribed independently of
    /// `ext_headers` (low five bits -> headers after the BTH, RC form).
    const RC_HEADERS: [(u8, &str); 24] = [
        (0x00, ""),
        (0x01, ""),
        (0x02, ""),
        (0x03, "ImmDt"),
        (0x04, ""),
        (0x05, "ImmDt"),
        (0x06, "Reth"),
        (0x07, ""),
        (0x08, ""),
        (0x09, "ImmDt"),
        (0x0a, "Reth"),
        (0x0b, "Reth ImmDt"),
        (0x0c, "Reth"),
        (0x0d, "Aeth"),
        (0x0e, ""),
        (0x0f, "Aeth"),
        (0x10, "Aeth"),
        (0x11, "Aeth"),
        (0x12, "Aeth AtomicAckEth"),
        (0x13, "AtomicEth"),
        (0x14, "AtomicEth"),
        (0x16, "Ieth"),
        (0x17, "Ieth"),
        (0x1d, "Reth"),
    ];

    fn names(h: ExtHeaders) -> String {
        h.iter()
            .map(|h| format!("{h:?}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn join(prefix: &str, rest: &str) -> String {
        [prefix, rest]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn ext_headers_follow_table_38() {
        for (low, rc) in RC_HEADERS {
            let response = (0x0d..=0x12).contains(&low);
            assert_eq!(names(Opcode(low).ext_headers()), rc, "RC {low:#04x}");
            if low <= 0x0b {
                assert_eq!(names(Opcode(0x20 | low).ext_headers()), rc, "UC {low:#04x}");
            } else {
                assert!(Opcode(0x20 | low).ext_headers().is_empty());
            }
            if low <= 0x14 {
                let rd = join(if response { "Rdeth" } else { "Rdeth Deth" }, rc);
                assert_eq!(names(Opcode(0x40 | low).ext_headers()), rd, "RD {low:#04x}");
            }
            if low != 0x1d {
                let xrc = join(if response { "" } else { "XrcEth" }, rc);
                assert_eq!(
                    names(Opcode(0xa0 | low).ext_headers()),
                    xrc,
                    "XRC {low:#04x}"
                );
            }
        }
        assert_eq!(names(Opcode::RD_RESYNC.ext_headers()), "Rdeth Deth");
        assert_eq!(names(Opcode::UD_SEND_ONLY.ext_headers()), "Deth");
        assert_eq!(
            names(Opcode::UD_SEND_ONLY_WITH_IMMEDIATE.ext_headers()),
            "Deth ImmDt"
        );
        // 84 defined opcodes: RC 24, UC 12, RD 22, UD 2, XRC 23, CNP 1.
        assert_eq!((0..=255u8).filter(|&v| Opcode(v).is_known()).count(), 84);
    }

    proptest! {
        #[test]
        fn round_trip(op: u8, se: bool, m: bool, pad_count in 0u8..4, tver in 0u8..16,
                      p_key: u16, fecn: bool, becn: bool, qp in 0u32..1 << 24,
                      ack_req: bool, psn in 0u32..1 << 24) {
            let b = Bth {
                opcode: Opcode(op), se, m, pad_count, tver, p_key: PKey(p_key), fecn, becn,
                dest_qp: Qpn::try_new(qp).unwrap(), ack_req, psn: Psn::try_new(psn).unwrap(),
            };
            let mut buf = [0u8; HEADER_LEN];
            prop_assert_eq!(b.emit(&mut buf), Ok(HEADER_LEN));
            prop_assert_eq!(Bth::parse(&buf).unwrap().0, b);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..20)) {
            let _ = Bth::parse(&b);
        }
    }
}
