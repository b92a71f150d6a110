//! Synthetic iWARP captures: NFSv3 over RPC-over-RDMA over RDMAP, DDP and
//! MPA on TCP, with what Linux `siw` never does on request (markers,
//! CRCs, one wrong CRC, a Terminate) and what a capture does to a TCP
//! stream (a mid-stream start, reordered, retransmitted, overlapping and
//! lost segments). The sidecar says what a reader of the streams must
//! deliver: every FPDU with its frames, every gap and resynchronisation.
//!
//! ```text
//!  client 10.0.0.1:40000                          server 10.0.0.2:20049
//!    SYN ─────────────────────────────────────────►
//!    ◄───────────────────────────────────── SYN-ACK
//!    MPA Request (rev 2, RFC 8797 private data) ──►
//!    ◄──────────────────────────────────── MPA Reply
//!    per call:
//!      Send: RPC-over-RDMA call ─────────────────►
//!      inline ◄─────────────────────────── Send reply
//!      READ   ◄──── RDMA Write (1 KiB FPDUs) ... Send with Invalidate reply
//!      WRITE  ◄──── RDMA Read Request; Read Responses ──►; ◄── Send with Invalidate reply
//!    (Terminate ◄──), FIN both ways
//! ```
//!
//! Faults sit on fixed calls, so that each is alone in its stretch of the
//! stream: the capture starts in call 1, call 2 loses a segment, 3
//! reorders two, 4 retransmits one, 5 overlaps two, 6's reply has the
//! wrong CRC; the Terminate follows the last call.

mod stream;

use std::fmt;
use std::io::Write;
use std::net::Ipv4Addr;
use std::str::FromStr;

use rdma_capture::{CaptureWriter, Format, Resolution};
use rdma_dissectors::iwarp::mpa;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::oncrpc::{
    AcceptStat, AuthFlavor, Call, MsgBody, OpaqueAuth, ReplyBody, RpcMsg,
};
use rdma_dissectors::rpcrdma::{Body, Chunks, ReadSegment, RpcRdmaHeader, Segment, Xid};
use rdma_dissectors::rpcrdma_cm::RpcRdmaCmPrivate;
use serde::Serialize;

use self::stream::{End, ACK, FIN, PSH, SYN};
use super::nfs::{self, Proc3, AUTH_SYS_BODY, NFS_PROGRAM};
use super::prng::SplitMix64;
use super::Error;

/// Most data octets in one DDP segment: 1 KiB, so that an FPDU with its
/// headers, markers and CRC fits a 1448-octet TCP segment.
const MULPDU: usize = 1024;
/// Capture start: 2026-01-01T00:00:00Z.
const START_NS: u64 = 1_767_225_600_000_000_000;
/// The calls the faults sit on (see the module documentation).
const CALL_MID_STREAM: u64 = 1;
const CALL_LOST: u64 = 2;
const CALL_REORDER: u64 = 3;
const CALL_RETRANSMIT: u64 = 4;
const CALL_OVERLAP: u64 = 5;
const CALL_BAD_CRC: u64 = 6;
/// Calls a run with faults needs.
const MIN_CALLS_WITH_FAULTS: u64 = 8;

/// What the generator can do to the conversation or its capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The capture starts inside call 1's Send, mid-FPDU: no SYN, no MPA.
    MidStream,
    /// One RDMA Write segment of call 2 is missing from the capture (the
    /// receiver got it, and acknowledges it).
    LostSegment,
    /// Two RDMA Write segments of call 3 captured in swapped order.
    Reorder,
    /// An RDMA Write segment of call 4 captured twice.
    Retransmit,
    /// A retransmission across two RDMA Write segments of call 5, cut at
    /// other boundaries than the originals.
    Overlap,
    /// Call 6's reply carries a wrong CRC (needs CRCs on).
    BadCrc,
    /// The server sends a Terminate after the last call.
    Terminate,
}

impl Fault {
    /// Every fault, in the order they happen.
    pub const ALL: [Fault; 7] = [
        Fault::MidStream,
        Fault::LostSegment,
        Fault::Reorder,
        Fault::Retransmit,
        Fault::Overlap,
        Fault::BadCrc,
        Fault::Terminate,
    ];

    /// The name on the command line and in the sidecar.
    pub const fn as_str(self) -> &'static str {
        match self {
            Fault::MidStream => "mid_stream",
            Fault::LostSegment => "lost_segment",
            Fault::Reorder => "reorder",
            Fault::Retransmit => "retransmit",
            Fault::Overlap => "overlap",
            Fault::BadCrc => "bad_crc",
            Fault::Terminate => "terminate",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Fault::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Fault::ALL.iter().map(|k| k.as_str()).collect();
                format!(
                    "unknown iWARP fault {s:?}; choose from: {}",
                    names.join(", ")
                )
            })
    }
}

/// What to generate.
#[derive(Debug, Clone, Serialize)]
pub struct IwarpOptions {
    /// RPC calls.
    pub calls: u64,
    /// PRNG seed: the same seed gives the same bytes.
    pub seed: u64,
    /// Both ends set M: markers in both directions.
    pub markers: bool,
    /// Both ends set C: a CRC closes every FPDU.
    pub crc: bool,
    /// Bytes per READ and WRITE.
    pub io_size: u32,
    /// Inline threshold both ends advertise in their RFC 8797 private data.
    pub inline_threshold: u32,
    /// Both ends set R: replies to calls with chunks invalidate the client's STag.
    pub remote_invalidation: bool,
    /// What to do to the conversation or its capture.
    pub faults: Vec<Fault>,
}

impl Default for IwarpOptions {
    fn default() -> Self {
        IwarpOptions {
            calls: 12,
            seed: 1,
            markers: false,
            crc: true,
            io_size: 4096,
            inline_threshold: 4096,
            remote_invalidation: true,
            faults: Vec::new(),
        }
    }
}

/// One FPDU a reader of the stream must deliver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FpduTruth {
    /// The frame that carried its first octet (first copy captured).
    pub first_frame: u64,
    /// The frame that carried its last octet.
    pub frame: u64,
    /// Its RDMAP opcode's name (RFC 5040).
    pub opcode: &'static str,
    /// ULPDU_Length.
    pub ulpdu_length: u16,
    /// Whether its CRC is right; `None` without CRCs.
    pub crc_valid: Option<bool>,
    /// Its octets, markers out, CRC in (not in the sidecar).
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

/// A stream event a reader must report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Octets the capture lacks.
    Gap {
        /// The frame after which the reader knows.
        frame: u64,
        /// How many.
        bytes: u64,
    },
    /// Framing found again.
    Resync {
        /// The frame holding the FPDU framing resumes at.
        frame: u64,
        /// Octets passed over before it.
        skipped: u64,
        /// Whether CRCs or a marker confirm it.
        certain: bool,
    },
    /// FIN.
    Closed {
        /// The frame carrying it.
        frame: u64,
    },
}

/// One direction of the connection and what it must yield.
#[derive(Debug, Clone, Serialize)]
pub struct DirectionTruth {
    /// Sender, `ip:port`.
    pub from: String,
    /// Receiver.
    pub to: String,
    /// The frame of its MPA Request or Reply, when captured.
    pub mpa_frame: Option<u64>,
    /// The FPDUs, in stream order.
    pub fpdus: Vec<FpduTruth>,
    /// Gaps, resynchronisations and the close, in stream order.
    pub events: Vec<StreamEvent>,
}

/// The Terminate, when one was sent.
#[derive(Debug, Clone, Serialize)]
pub struct TerminateTruth {
    /// Its frame.
    pub frame: u64,
    /// Layer (0 RDMAP), EType and error code (RFC 5040 section 4.8).
    pub layer: u8,
    /// EType.
    pub etype: u8,
    /// Error code.
    pub code: u8,
    /// The error's name.
    pub name: &'static str,
}

/// What a run produced: the sidecar `FILE.expected.json`.
#[derive(Debug, Clone, Serialize)]
pub struct IwarpSummary {
    /// `"iwarp"`.
    pub fabric: &'static str,
    /// The options (rerun them for the same bytes).
    pub options: IwarpOptions,
    /// Frames written.
    pub frames: u64,
    /// Bytes written, file header included.
    pub bytes: u64,
    /// RPC calls sent.
    pub calls: u64,
    /// RDMA Writes, Read Requests and Sends with Invalidate sent (messages).
    pub rdma_writes: u64,
    /// RDMA Read Requests.
    pub read_requests: u64,
    /// Replies sent with Send with Invalidate.
    pub remote_invalidations: u64,
    /// Calls whose call and reply FPDUs a reader gets all of: the
    /// transactions an analyzer can put together (the rest lie before a
    /// mid-stream start).
    pub transactions: u64,
    /// Client to server, then server to client.
    pub directions: [DirectionTruth; 2],
    /// Frames whose FPDU has a wrong CRC.
    pub bad_crc_frames: Vec<u64>,
    /// The Terminate.
    pub terminate: Option<TerminateTruth>,
}

/// One TCP segment, in capture order.
#[derive(Debug, Clone)]
struct Pkt {
    /// 0: client to server; 1: server to client.
    dir: usize,
    /// Stream offset of its first payload octet.
    off: u64,
    len: u64,
    bytes: Vec<u8>,
    ts: u64,
    captured: bool,
    fin: bool,
}

/// An FPDU as sent.
#[derive(Debug, Clone)]
struct Planned {
    dir: usize,
    start: u64,
    end: u64,
    clean: Vec<u8>,
    opcode: &'static str,
    ulen: u16,
    crc_valid: Option<bool>,
}

/// An RDMAP message to send.
#[derive(Debug, Clone, Copy)]
enum Msg {
    /// Send, or Send with Invalidate of the STag.
    Send { invalidate: Option<u32> },
    /// RDMA Write into `stag` at `to`.
    Write { stag: u32, to: u64 },
    /// RDMA Read Response into the requester's sink.
    ReadResponse { stag: u32, to: u64 },
    /// RDMA Read Request (its 28 octets are the data).
    ReadRequest,
    /// Terminate (its four octets are the data).
    Terminate,
}

impl Msg {
    /// RDMAP opcode, its name, and the untagged queue (RFC 5040 sections 4.2, 5.1).
    fn opcode(self) -> (u8, &'static str, Option<u32>) {
        match self {
            Msg::Write { .. } => (0, "RDMA Write", None),
            Msg::ReadRequest => (1, "RDMA Read Request", Some(1)),
            Msg::ReadResponse { .. } => (2, "RDMA Read Response", None),
            Msg::Send { invalidate: None } => (3, "Send", Some(0)),
            Msg::Send {
                invalidate: Some(_),
            } => (4, "Send with Invalidate", Some(0)),
            Msg::Terminate => (7, "Terminate", Some(2)),
        }
    }
}

/// Call types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Inline,
    Read,
    Write,
}

struct Gen {
    o: IwarpOptions,
    rng: SplitMix64,
    ends: [End; 2],
    pkts: Vec<Pkt>,
    planned: Vec<Planned>,
    ts: u64,
    /// Next MSN per direction and untagged queue (from 1, RFC 5041 section 5.1).
    msn: [[u32; 3]; 2],
    next_stag: u32,
    pattern: Vec<u8>,
    calls: u64,
    writes: u64,
    read_requests: u64,
    invalidations: u64,
    mpa_pkt: [Option<usize>; 2],
    bad_crc_pkt: Option<usize>,
    /// The next FPDU gets a wrong CRC.
    bad_crc_next: bool,
    terminate_pkt: Option<usize>,
    lost_pkt: Option<usize>,
    /// Per call, the FPDUs (indices into `planned`) of its call and its reply.
    messages: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
}

/// The Terminate the server sends: RDMAP layer, Remote Protection Error,
/// Invalid STag (RFC 5040 section 4.8).
const TERMINATE: (u8, u8, u8) = (0, 1, 0);

/// Generates the capture `o` describes into `out`; returns what it
/// contains and the writer.
///
/// # Errors
/// [`Error::Options`] for contradictory options, [`Error::Io`] when the
/// output fails.
pub fn generate_iwarp<W: Write>(o: &IwarpOptions, out: W) -> Result<(IwarpSummary, W), Error> {
    validate(o)?;
    let mut g = Gen::new(o.clone());
    g.run()?;
    g.write(out)
}

/// Checks `o` before anything is written.
///
/// # Errors
/// [`Error::Options`] saying which options contradict each other.
pub fn validate(o: &IwarpOptions) -> Result<(), Error> {
    let bad = |s: &str| Err(Error::Options(s.to_string()));
    if o.calls == 0 {
        return bad("--calls 0: an iWARP capture needs at least one call");
    }
    let on_calls = o.faults.iter().any(|f| *f != Fault::Terminate);
    if on_calls && o.calls < MIN_CALLS_WITH_FAULTS {
        return Err(Error::Options(format!(
            "--iwarp-faults on calls need --calls {MIN_CALLS_WITH_FAULTS} or more (faults sit on calls 1 to 6)"
        )));
    }
    if o.faults.contains(&Fault::BadCrc) && !o.crc {
        return bad("bad_crc needs CRCs: leave out --no-crc");
    }
    let segments = o.faults.iter().any(|f| {
        matches!(
            f,
            Fault::LostSegment | Fault::Reorder | Fault::Retransmit | Fault::Overlap
        )
    });
    if o.io_size == 0 || o.io_size > 1 << 20 {
        return bad("--io-size out of range: use 1 to 1M bytes");
    }
    if segments && (o.io_size as usize) <= 2 * MULPDU {
        return bad("lost_segment, reorder, retransmit and overlap need READs of three DDP segments or more: use --io-size 3K or more");
    }
    if rdma_dissectors::rpcrdma_cm::encode_size(o.inline_threshold).is_none() {
        return bad("--inline-threshold cannot be advertised (RFC 8797): use a multiple of 1024 from 1024 to 262144");
    }
    Ok(())
}

impl Gen {
    fn new(o: IwarpOptions) -> Self {
        let mut rng = SplitMix64::new(o.seed);
        // The client's sequence numbers wrap within the first calls.
        let client_isn = u32::MAX - 3000 - rng.below(1000) as u32;
        let server_isn = rng.next_u32();
        let mut ends = [
            End::new(
                [2, 0, 0, 0, 0, 1],
                Ipv4Addr::new(10, 0, 0, 1),
                40_000,
                client_isn,
            ),
            End::new(
                [2, 0, 0, 0, 0, 2],
                Ipv4Addr::new(10, 0, 0, 2),
                mpa_port(),
                server_isn,
            ),
        ];
        for e in &mut ends {
            e.markers = o.markers;
            e.crc = o.crc;
        }
        let mut pattern = vec![0u8; (o.io_size as usize).max(o.inline_threshold as usize)];
        for chunk in pattern.chunks_mut(8) {
            let r = rng.next_u64().to_le_bytes();
            for (d, s) in chunk.iter_mut().zip(r) {
                *d = s;
            }
        }
        Gen {
            ts: START_NS + rng.below(1_000_000_000),
            next_stag: 0x1000 + (rng.next_u32() & 0xffff) * 0x100,
            o,
            rng,
            ends,
            pkts: Vec::new(),
            planned: Vec::new(),
            msn: [[1; 3]; 2],
            pattern,
            calls: 0,
            writes: 0,
            read_requests: 0,
            invalidations: 0,
            mpa_pkt: [None; 2],
            bad_crc_pkt: None,
            bad_crc_next: false,
            terminate_pkt: None,
            lost_pkt: None,
            messages: Vec::new(),
        }
    }

    fn has(&self, f: Fault) -> bool {
        self.o.faults.contains(&f)
    }

    fn fresh_stag(&mut self) -> u32 {
        self.next_stag = self.next_stag.wrapping_add(0x100);
        self.next_stag
    }

    /// A segment of `payload` from `dir`'s sender at its next offset.
    fn segment(&mut self, dir: usize, payload: &[u8], flags: u8) -> Result<usize, Error> {
        let [client, server] = &mut self.ends;
        let (from, to) = if dir == 0 {
            (client, &*server)
        } else {
            (server, &*client)
        };
        let off = from.sent;
        let bytes = from.frame(to, Some(off), flags, payload)?;
        from.sent += payload.len() as u64;
        if flags & FIN != 0 {
            from.sent += 1;
        }
        self.ts += 5_000 + self.rng.below(45_000);
        self.pkts.push(Pkt {
            dir,
            off,
            len: payload.len() as u64,
            bytes,
            ts: self.ts,
            captured: true,
            fin: flags & FIN != 0,
        });
        Ok(self.pkts.len() - 1)
    }
}

/// The server's port: NFS/RDMA's (RFC 5666 section 10).
const fn mpa_port() -> u16 {
    rdma_dissectors::iwarp::NFS_RDMA_PORT
}

impl Gen {
    fn run(&mut self) -> Result<(), Error> {
        self.handshake()?;
        for i in 0..self.o.calls {
            self.call(i)?;
        }
        if self.has(Fault::Terminate) {
            let (layer, etype, code) = TERMINATE;
            let body = [layer << 4 | etype, code, 0, 0];
            let pkts = self.message(1, Msg::Terminate, &body, false)?;
            self.terminate_pkt = pkts.first().copied();
        }
        self.segment(0, &[], FIN | ACK)?;
        self.segment(1, &[], FIN | ACK)?;
        self.segment(0, &[], ACK)?;
        Ok(())
    }

    /// SYN, SYN-ACK, ACK, then the MPA Request and Reply (RFC 5044
    /// section 7.1, revision 2 of RFC 6581 section 5) with the RFC 8797
    /// private data after the enhanced connection data.
    fn handshake(&mut self) -> Result<(), Error> {
        for (dir, flags) in [(0usize, SYN), (1, SYN | ACK)] {
            let [client, server] = &mut self.ends;
            let bytes = if dir == 0 {
                client.frame(server, None, flags, &[])?
            } else {
                server.frame(client, None, flags, &[])?
            };
            self.ts += 20_000;
            self.pkts.push(Pkt {
                dir,
                off: 0,
                len: 0,
                bytes,
                ts: self.ts,
                captured: true,
                fin: false,
            });
        }
        self.segment(0, &[], ACK)?;
        for dir in [0, 1] {
            let frame = self.mpa_frame(dir == 0)?;
            let p = self.segment(dir, &frame, ACK | PSH)?;
            self.mpa_pkt[dir] = Some(p);
            let sent = self.ends[dir].sent;
            self.ends[dir].base = Some(sent);
        }
        Ok(())
    }

    fn mpa_frame(&self, request: bool) -> Result<Vec<u8>, Error> {
        let mut f = Vec::with_capacity(40);
        f.extend_from_slice(if request {
            mpa::KEY_REQUEST
        } else {
            mpa::KEY_REPLY
        });
        f.push(u8::from(self.o.markers) << 7 | u8::from(self.o.crc) << 6);
        f.push(2);
        let mut pd = [0u8; 8];
        let private = RpcRdmaCmPrivate {
            version: 1,
            remote_invalidate: self.o.remote_invalidation,
            flags: u8::from(self.o.remote_invalidation),
            send_size: self.o.inline_threshold,
            recv_size: self.o.inline_threshold,
        };
        let n = private.emit(&mut pd)?;
        let pd_len = (mpa::ENHANCED_LEN + n) as u16;
        f.extend_from_slice(&pd_len.to_be_bytes());
        // IRD and ORD 16, client-server model, no ready-to-receive message.
        f.extend_from_slice(&[0, 16, 0, 16]);
        f.extend_from_slice(pd.get(..n).unwrap_or_default());
        Ok(f)
    }

    /// Sends `data` as one RDMAP message in DDP segments of at most
    /// `MULPDU` octets, one FPDU per TCP segment; with `split`, the first
    /// FPDU goes in two segments and the capture starts at the second.
    /// Returns the segments, in order.
    fn message(
        &mut self,
        dir: usize,
        m: Msg,
        data: &[u8],
        split: bool,
    ) -> Result<Vec<usize>, Error> {
        let (op, name, queue) = m.opcode();
        let msn = queue.map(|q| {
            let slot = &mut self.msn[dir][q as usize];
            let v = *slot;
            *slot = v.wrapping_add(1);
            v
        });
        let chunks: Vec<&[u8]> = if data.is_empty() {
            vec![&[]]
        } else {
            data.chunks(MULPDU).collect()
        };
        let mut pkts = Vec::new();
        for (k, chunk) in chunks.iter().enumerate() {
            let last = k + 1 == chunks.len();
            let mo = (k * MULPDU) as u32;
            let mut u = Vec::with_capacity(chunk.len() + 18);
            u.push(0x01 | u8::from(last) << 6 | if queue.is_none() { 0x80 } else { 0 });
            u.push(0x40 | op);
            match (m, queue, msn) {
                (Msg::Write { stag, to } | Msg::ReadResponse { stag, to }, _, _) => {
                    u.extend_from_slice(&stag.to_be_bytes());
                    u.extend_from_slice(&(to + u64::from(mo)).to_be_bytes());
                }
                (_, Some(q), Some(msn)) => {
                    let inv = match m {
                        Msg::Send { invalidate } => invalidate.unwrap_or(0),
                        _ => 0,
                    };
                    for w in [inv, q, msn, mo] {
                        u.extend_from_slice(&w.to_be_bytes());
                    }
                }
                _ => {}
            }
            u.extend_from_slice(chunk);
            let p = self.fpdu(dir, &u, name, split && k == 0)?;
            pkts.extend(p);
        }
        Ok(pkts)
    }

    /// One FPDU in one segment (two when `split`, the first not captured
    /// and every segment before it with it: the mid-stream start).
    fn fpdu(
        &mut self,
        dir: usize,
        ulpdu: &[u8],
        opcode: &'static str,
        split: bool,
    ) -> Result<Vec<usize>, Error> {
        let bad_crc = self.o.crc && std::mem::take(&mut self.bad_crc_next);
        let built = self.ends[dir].fpdu(ulpdu, bad_crc)?;
        let start = self.ends[dir].sent;
        let pkts = if split {
            let half = built.raw.len() / 2;
            let (a, b) = built.raw.split_at(half);
            let first = self.segment(dir, a, ACK)?;
            let second = self.segment(dir, b, ACK | PSH)?;
            for p in self.pkts.iter_mut().take(second) {
                p.captured = false;
            }
            vec![first, second]
        } else {
            vec![self.segment(dir, &built.raw, ACK | PSH)?]
        };
        if bad_crc {
            self.bad_crc_pkt = pkts.last().copied();
        }
        self.planned.push(Planned {
            dir,
            start,
            end: start + built.raw.len() as u64,
            clean: built.clean,
            opcode,
            ulen: ulpdu.len() as u16,
            crc_valid: self.o.crc.then_some(!bad_crc),
        });
        Ok(pkts)
    }
}

impl Gen {
    fn kind(i: u64) -> Kind {
        match i {
            CALL_LOST..=CALL_OVERLAP => Kind::Read,
            _ => match i % 3 {
                0 => Kind::Inline,
                1 => Kind::Read,
                _ => Kind::Write,
            },
        }
    }

    /// One call: the client's Send, the server's RDMA, the reply, and an
    /// acknowledgement each way.
    fn call(&mut self, i: u64) -> Result<(), Error> {
        let kind = Self::kind(i);
        let xid = self.rng.next_u32();
        let stag = self.fresh_stag();
        let to = 0x7f00_0000_0000 + (self.rng.below(1 << 20) << 12);
        let io = self.o.io_size;
        let call = self.rpc_call(kind, xid, stag, to)?;
        let split = i == CALL_MID_STREAM && self.has(Fault::MidStream);
        let call_from = self.planned.len();
        self.message(0, Msg::Send { invalidate: None }, &call, split)?;
        let call_fpdus = call_from..self.planned.len();
        self.calls += 1;
        self.segment(1, &[], ACK)?;
        let data = self.pattern.get(..io as usize).unwrap_or_default().to_vec();
        match kind {
            Kind::Inline => {}
            Kind::Read => {
                let pkts = self.message(1, Msg::Write { stag, to }, &data, false)?;
                self.writes += 1;
                self.segment_faults(i, &pkts)?;
            }
            Kind::Write => {
                let sink = self.fresh_stag();
                let sink_to = 0x5500_0000_0000 + (self.rng.below(1 << 20) << 12);
                let mut req = Vec::with_capacity(28);
                req.extend_from_slice(&sink.to_be_bytes());
                req.extend_from_slice(&sink_to.to_be_bytes());
                req.extend_from_slice(&io.to_be_bytes());
                req.extend_from_slice(&stag.to_be_bytes());
                req.extend_from_slice(&to.to_be_bytes());
                self.message(1, Msg::ReadRequest, &req, false)?;
                self.read_requests += 1;
                let resp = Msg::ReadResponse {
                    stag: sink,
                    to: sink_to,
                };
                self.message(0, resp, &data, false)?;
            }
        }
        let invalidate = (kind != Kind::Inline && self.o.remote_invalidation).then_some(stag);
        self.invalidations += u64::from(invalidate.is_some());
        let reply = self.rpc_reply(kind, xid, stag, to)?;
        self.bad_crc_next = i == CALL_BAD_CRC && self.has(Fault::BadCrc);
        let reply_from = self.planned.len();
        self.message(1, Msg::Send { invalidate }, &reply, false)?;
        self.messages
            .push((call_fpdus, reply_from..self.planned.len()));
        self.segment(0, &[], ACK)?;
        Ok(())
    }

    /// What the capture does to the RDMA Write segments `w` of call `i`.
    fn segment_faults(&mut self, i: u64, w: &[usize]) -> Result<(), Error> {
        let (Some(&a), Some(&b), Some(&c)) = (w.first(), w.get(1), w.get(2)) else {
            return Ok(());
        };
        match i {
            CALL_LOST if self.has(Fault::LostSegment) => {
                if let Some(p) = self.pkts.get_mut(b) {
                    p.captured = false;
                }
                self.lost_pkt = Some(b);
            }
            CALL_REORDER if self.has(Fault::Reorder) => {
                // Captured in swapped order, each at the time it arrived.
                self.pkts.swap(b, c);
                if let (Some(tb), Some(tc)) = (
                    self.pkts.get(b).map(|p| p.ts),
                    self.pkts.get(c).map(|p| p.ts),
                ) {
                    if let Some(p) = self.pkts.get_mut(b) {
                        p.ts = tc;
                    }
                    if let Some(p) = self.pkts.get_mut(c) {
                        p.ts = tb;
                    }
                }
            }
            CALL_RETRANSMIT if self.has(Fault::Retransmit) => {
                let mut again = self.pkts.get(a).cloned().ok_or(Error::NoConnection(a))?;
                self.ts += 200_000;
                again.ts = self.ts;
                self.pkts.push(again);
            }
            CALL_OVERLAP if self.has(Fault::Overlap) => self.overlap(a, b)?,
            _ => {}
        }
        Ok(())
    }

    /// A retransmission of the second half of segment `a` and the first
    /// half of `b` (the next in the stream), as one segment.
    fn overlap(&mut self, a: usize, b: usize) -> Result<(), Error> {
        let (Some(pa), Some(pb)) = (self.pkts.get(a), self.pkts.get(b)) else {
            return Ok(());
        };
        let payload = |p: &Pkt| p.bytes.get(stream::HEADERS..).unwrap_or_default().to_vec();
        let mut both = payload(pa);
        let half_a = both.len() / 2;
        let pb_payload = payload(pb);
        both.extend_from_slice(&pb_payload);
        let cut = both
            .get(half_a..half_a + (both.len() - half_a) / 2)
            .unwrap_or_default()
            .to_vec();
        let (dir, off) = (pa.dir, pa.off + half_a as u64);
        let [client, server] = &mut self.ends;
        let (from, to) = if dir == 0 {
            (client, &*server)
        } else {
            (server, &*client)
        };
        let bytes = from.frame(to, Some(off), ACK, &cut)?;
        self.ts += 200_000;
        self.pkts.push(Pkt {
            dir,
            off,
            len: cut.len() as u64,
            bytes,
            ts: self.ts,
            captured: true,
            fin: false,
        });
        Ok(())
    }

    /// The RPC-over-RDMA header and RPC call of a call (RFC 8166 section
    /// 4; RFC 8267 section 4 for where NFS data goes).
    fn rpc_call(&mut self, kind: Kind, xid: u32, stag: u32, to: u64) -> Result<Vec<u8>, Error> {
        let io = self.o.io_size;
        let proc = match kind {
            Kind::Inline => Proc3::Getattr,
            Kind::Read => Proc3::Read {
                offset: 0,
                count: io,
            },
            Kind::Write => Proc3::Write {
                offset: 0,
                count: io,
                inline: false,
            },
        };
        let mut args = vec![0u8; 1024];
        let n = nfs::call_args(proc, &self.pattern, &mut args)?;
        let msg = RpcMsg {
            xid,
            body: MsgBody::Call(Call {
                rpcvers: 2,
                prog: NFS_PROGRAM,
                vers: proc.version(),
                proc: proc.number(),
                cred: OpaqueAuth {
                    flavor: AuthFlavor::Sys,
                    body: &AUTH_SYS_BODY,
                },
                verf: OpaqueAuth::NONE,
                args: args.get(..n).unwrap_or_default(),
            }),
        };
        let mut rpc = vec![0u8; 2048];
        let rpc_len = msg.emit(&mut rpc)?;
        let seg = Segment {
            handle: stag,
            length: io,
            offset: to,
        };
        let segs = [seg];
        let write = [&segs[..]];
        let read = [ReadSegment {
            position: rpc_len as u32,
            segment: seg,
        }];
        let chunks = match kind {
            Kind::Inline => Chunks::EMPTY,
            Kind::Read => Chunks::new(&[], &write, None),
            Kind::Write => Chunks::new(&read, &[], None),
        };
        self.rpcrdma(xid, chunks, rpc.get(..rpc_len).unwrap_or_default())
    }

    /// The reply: a READ's echoes its write chunk with the length written
    /// (RFC 8166 section 3.6.1).
    fn rpc_reply(&mut self, kind: Kind, xid: u32, stag: u32, to: u64) -> Result<Vec<u8>, Error> {
        let io = self.o.io_size;
        let proc = match kind {
            Kind::Inline => Proc3::Getattr,
            Kind::Read => Proc3::Read {
                offset: 0,
                count: io,
            },
            Kind::Write => Proc3::Write {
                offset: 0,
                count: io,
                inline: false,
            },
        };
        let mut res = vec![0u8; 1024];
        let n = nfs::reply_results(proc, &mut res)?;
        let msg = RpcMsg {
            xid,
            body: MsgBody::Reply(ReplyBody::Accepted {
                verf: OpaqueAuth::NONE,
                stat: AcceptStat::Success,
                results: res.get(..n).unwrap_or_default(),
            }),
        };
        let mut rpc = vec![0u8; 2048];
        let rpc_len = msg.emit(&mut rpc)?;
        let segs = [Segment {
            handle: stag,
            length: io,
            offset: to,
        }];
        let write = [&segs[..]];
        let chunks = if kind == Kind::Read {
            Chunks::new(&[], &write, None)
        } else {
            Chunks::EMPTY
        };
        self.rpcrdma(xid, chunks, rpc.get(..rpc_len).unwrap_or_default())
    }

    fn rpcrdma(&self, xid: u32, chunks: Chunks<'_>, rpc: &[u8]) -> Result<Vec<u8>, Error> {
        let body = Body::Msg(chunks);
        let hdr = RpcRdmaHeader {
            xid: Xid(xid),
            vers: 1,
            credits: 32,
            proc: body.proc(),
            body,
        };
        let mut m = vec![0u8; 512 + rpc.len()];
        let n = hdr.emit(&mut m)?;
        m.truncate(n);
        m.extend_from_slice(rpc);
        Ok(m)
    }
}

/// Where each captured segment of a direction landed: its frame, stream
/// offset and length, in capture order.
type Landed = Vec<(u64, u64, u64)>;

/// The frame of the first captured copy of stream octet `at`.
fn first_cover(landed: &Landed, at: u64) -> Option<u64> {
    landed
        .iter()
        .find(|&&(_, off, len)| off <= at && at < off + len)
        .map(|l| l.0)
}

impl Gen {
    /// Writes the captured segments and works out what a reader of each
    /// direction must deliver.
    fn write<W: Write>(self, out: W) -> Result<(IwarpSummary, W), Error> {
        let mut w = CaptureWriter::new(out, Format::Pcap, LinkType::ETHERNET, Resolution::Nano)?;
        let mut frame_of = vec![None; self.pkts.len()];
        let mut landed: [Landed; 2] = [Vec::new(), Vec::new()];
        let mut fins = [None; 2];
        let mut n = 0u64;
        for (i, p) in self.pkts.iter().enumerate() {
            if !p.captured {
                continue;
            }
            n += 1;
            w.packet(p.ts, p.bytes.len() as u32, &p.bytes)?;
            frame_of[i] = Some(n);
            if let Some(l) = landed.get_mut(p.dir) {
                l.push((n, p.off, p.len));
            }
            if p.fin {
                fins[p.dir] = Some((n, p.off));
            }
        }
        let mut delivered = vec![false; self.planned.len()];
        let directions =
            [0, 1].map(|d| self.direction(d, &landed[d], &frame_of, fins[d], &mut delivered));
        let all = |r: &std::ops::Range<usize>| {
            delivered
                .get(r.clone())
                .is_some_and(|v| v.iter().all(|&x| x))
        };
        let transactions = self
            .messages
            .iter()
            .filter(|(c, r)| all(c) && all(r))
            .count() as u64;
        let terminate = self.terminate_pkt.and_then(|p| frame_of[p]).map(|frame| {
            let (layer, etype, code) = TERMINATE;
            TerminateTruth {
                frame,
                layer,
                etype,
                code,
                name: "Remote Protection Error: Invalid STag",
            }
        });
        let summary = IwarpSummary {
            fabric: "iwarp",
            options: self.o.clone(),
            frames: n,
            bytes: w.bytes,
            calls: self.calls,
            rdma_writes: self.writes,
            read_requests: self.read_requests,
            remote_invalidations: self.invalidations,
            transactions,
            directions,
            bad_crc_frames: self
                .bad_crc_pkt
                .and_then(|p| frame_of[p])
                .into_iter()
                .collect(),
            terminate,
        };
        Ok((summary, w.finish()?))
    }

    fn direction(
        &self,
        d: usize,
        landed: &Landed,
        frame_of: &[Option<u64>],
        fin: Option<(u64, u64)>,
        delivered: &mut [bool],
    ) -> DirectionTruth {
        let name = |e: &End| format!("{}:{}", e.ip, e.port);
        let (from, to) = (&self.ends[d], &self.ends[1 - d]);
        let mut t = DirectionTruth {
            from: name(from),
            to: name(to),
            mpa_frame: self.mpa_pkt[d].and_then(|p| frame_of[p]),
            fpdus: Vec::new(),
            events: Vec::new(),
        };
        let fpdus = self.planned.iter().enumerate().filter(|(_, p)| p.dir == d);
        // A mid-stream start: framing resumes at the first FPDU that
        // starts at or after the first octet captured, markers or not
        // (a reader finds them from the first FPDU that has one).
        let mut resume = None;
        let mid_stream = t.mpa_frame.is_none();
        if mid_stream {
            resume = landed.first().map(|l| l.1);
        }
        let lost = self
            .lost_pkt
            .and_then(|p| self.pkts.get(p))
            .filter(|p| p.dir == d);
        for (i, p) in fpdus {
            if let Some(l) = lost.filter(|l| l.off == p.start) {
                let next = l.off + l.len;
                t.events.push(StreamEvent::Gap {
                    frame: first_cover(landed, next).unwrap_or(0),
                    bytes: l.len,
                });
                resume = Some(next);
                continue;
            }
            if let Some(from) = resume {
                // Only the first resync of a mid-stream start hunts without
                // knowing the markers; by a later gap the reader has met one.
                let first = !t
                    .events
                    .iter()
                    .any(|e| matches!(e, StreamEvent::Resync { .. }));
                let Some(at) = self.resume_at(d, from, p, mid_stream && first) else {
                    continue;
                };
                // A marker negotiated or CRCs confirm the boundary;
                // lengths alone do not, nor markers found in the stream
                // without a CRC to check them.
                t.events.push(StreamEvent::Resync {
                    frame: first_cover(landed, at).unwrap_or(0),
                    skipped: p.start - from,
                    certain: self.o.crc || self.o.markers && !mid_stream,
                });
                resume = None;
            }
            if let Some(v) = delivered.get_mut(i) {
                *v = true;
            }
            t.fpdus.push(FpduTruth {
                first_frame: first_cover(landed, p.start).unwrap_or(0),
                frame: first_cover(landed, p.end - 1).unwrap_or(0),
                opcode: p.opcode,
                ulpdu_length: p.ulen,
                crc_valid: p.crc_valid,
                bytes: p.clean.clone(),
            });
        }
        if let Some((frame, _)) = fin {
            t.events.push(StreamEvent::Closed { frame });
        }
        t
    }

    /// Whether a reader resuming at stream offset `from` resumes at `p`,
    /// and the octet whose frame it names: without markers the first
    /// FPDU at or after `from` (the hunt tries each position in turn);
    /// with markers the FPDU the first marker at or after `from` points
    /// into (RFC 5044 section 4.3), which may be a later one. A reader that
    /// started mid-stream does not know where markers sit until an FPDU
    /// shows one: it hunts as without them.
    fn resume_at(&self, d: usize, from: u64, p: &Planned, mid_stream: bool) -> Option<u64> {
        if p.start < from {
            return None;
        }
        let negotiated = self.o.markers && !mid_stream;
        let Some(base) = self.ends[d].base.filter(|_| negotiated) else {
            return Some(p.start);
        };
        let into = (from - base) % mpa::MARKER_INTERVAL;
        let m = if into == 0 {
            from
        } else {
            from + mpa::MARKER_INTERVAL - into
        };
        (p.start <= m && m < p.end).then_some(m)
    }
}
