//! The generator proper: connections, batches of calls, the server's RDMA
//! operations and replies, ACKs, and the injected violations.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};

use rdma_dissectors::ib::aeth::CREDIT_COUNT_INVALID;
use rdma_dissectors::ib::bth::Opcode;
use rdma_dissectors::ib::cm::{attr, CmDreq, CmIds, CmPath, CmRep, CmReq};
use rdma_dissectors::ib::{
    Aeth, Bth, CmaHeader, Deth, Ieth, Mad, PKey, PortSpace, Psn, Qpn, Reth, ServiceId, Transport,
};
use rdma_dissectors::oncrpc::{
    AcceptStat, AuthFlavor, Call, MsgBody, OpaqueAuth, ReplyBody, RpcMsg,
};
use rdma_dissectors::rpcrdma::{
    Body, Chunks, Proc, RdmaError, ReadSegment, RpcRdmaHeader, Segment, Xid,
};
use rdma_dissectors::rpcrdma_cm::RpcRdmaCmPrivate;

use super::nfs::{self, Proc3, AUTH_SYS_BODY, NFS_PROGRAM};
use super::prng::SplitMix64;
use super::wire::{Framing, Node, Wire};
use super::{Error, ExpectedAnomaly, Inject, Options, Summary};

/// 24-bit PSN and MSN arithmetic.
const MASK24: u32 = 0xff_ffff;
/// Largest segment of a chunk; bigger transfers use several (Linux splits
/// the same way, one memory registration per segment).
const SEG_MAX: u32 = 131_072;
/// Most segments one chunk holds here (4 MiB at `SEG_MAX`).
const MAX_SEGS: usize = 32;
/// Bytes the client offers for a reply chunk.
const REPLY_CHUNK_LEN: u32 = 32_768;
/// Directory entries in a READDIR reply: about 7 KB, beyond the default
/// inline threshold, which is why the client offered a reply chunk.
const READDIR_ENTRIES: u32 = 150;
/// RDMA-CM port of NFS/RDMA (RFC 8166 section 5).
const NFS_RDMA_PORT: u16 = 20049;
/// Capture start: 2026-01-01T00:00:00Z.
const START_NS: u64 = 1_767_225_600_000_000_000;

/// `n` bytes of what a transfer carries, from `off` on.
fn transfer_bytes<'a>(
    pattern: &'a [u8],
    body: &'a [u8],
    src: Src,
    off: usize,
    n: usize,
) -> &'a [u8] {
    match src {
        Src::Pattern => pattern.get(..n),
        Src::Body(at) => body.get(at + off..at + off + n),
    }
    .unwrap_or_default()
}

/// Rdma Write opcodes by packet position: only, first, middle, last.
const RDMA_WRITE_OPS: [Opcode; 4] = [
    Opcode::RC_RDMA_WRITE_ONLY,
    Opcode::RC_RDMA_WRITE_FIRST,
    Opcode::RC_RDMA_WRITE_MIDDLE,
    Opcode::RC_RDMA_WRITE_LAST,
];

/// Rdma Read Response opcodes by packet position: only, first, middle, last.
const RDMA_READ_RESPONSE_OPS: [Opcode; 4] = [
    Opcode::RC_RDMA_READ_RESPONSE_ONLY,
    Opcode::RC_RDMA_READ_RESPONSE_FIRST,
    Opcode::RC_RDMA_READ_RESPONSE_MIDDLE,
    Opcode::RC_RDMA_READ_RESPONSE_LAST,
];

/// The opcode of packet `i` of `npk`: `[only, first, middle, last]`.
fn by_position(npk: usize, i: usize, ops: [Opcode; 4]) -> Opcode {
    let [only, first, middle, last] = ops;
    match (npk == 1, i == 0, i + 1 == npk) {
        (true, _, _) => only,
        (false, true, _) => first,
        (false, false, false) => middle,
        (false, false, true) => last,
    }
}

/// Which chunk a call offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkUse {
    None,
    /// Write list: the server RDMA-writes the data (READ).
    Write,
    /// Read list: the server RDMA-reads the data (WRITE).
    Read,
    /// Reply chunk: the server RDMA-writes the whole reply (READDIR).
    Reply,
    /// Position-zero read chunk: the whole call is RDMA-read (a Long Call,
    /// RFC 8166 section 3.5.3), announced by an RDMA_NOMSG.
    LongCall,
}

/// One call as the client builds it.
#[derive(Debug, Clone, Copy)]
struct CallSpec {
    xid: u32,
    proc: Proc3,
    chunk: ChunkUse,
    segs: [Segment; MAX_SEGS],
    nseg: usize,
}

impl CallSpec {
    fn segments(&self) -> &[Segment] {
        self.segs.get(..self.nseg).unwrap_or_default()
    }
}

/// How a call's transport header is (mis)built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallHdr {
    Normal,
    XidMismatch,
    Msgp,
    Vers2,
    BadProc,
    /// Its read chunk two bytes past where the RPC message ends.
    UnalignedRead,
}

/// How a reply's transport header is (mis)built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReplyHdr {
    Normal,
    ErrVers {
        vers: u32,
    },
    ErrChunk,
    NomsgEmpty,
    ReadList,
    /// An inline GETATTR reply whose NFS status is this error.
    NfsError(u32),
}

/// One RC connection: the client and server QPs and their sequence state.
#[derive(Debug, Clone)]
struct Conn {
    client: Node,
    server: Node,
    cqpn: u32,
    sqpn: u32,
    csport: u16,
    ssport: u16,
    /// Next request PSN each side sends.
    c_psn: u32,
    s_psn: u32,
    /// Messages each side has completed as a responder (its AETH MSN).
    c_msn: u32,
    s_msn: u32,
    c_gsi_psn: u32,
    c_comm: u32,
    s_comm: u32,
    tid: u64,
    server_r: bool,
    /// Both peers set R: replies may use Send With Invalidate.
    inv: bool,
    /// A reply has granted credits (until then only one call may be outstanding).
    answered_once: bool,
    va_next: u64,
    file_offset: u64,
    /// The last XID answered (for RDMA_DONE).
    last_xid: u32,
    /// NFSv4.1 SEQUENCE ID of the session's slot 0.
    v4_seq: u32,
}

/// Where the payload of an RDMA Write comes from.
#[derive(Debug, Clone, Copy)]
enum Src {
    Pattern,
    /// `self.body` from this offset.
    Body(usize),
}

struct Gen<W: Write> {
    o: Options,
    wire: Wire<W>,
    rng: SplitMix64,
    conns: Vec<Conn>,
    pattern: Vec<u8>,
    /// The RPC-over-RDMA message being built.
    msg: Vec<u8>,
    /// The RPC message (call or reply) being built.
    body: Vec<u8>,
    /// NFS arguments or results being built.
    args: Vec<u8>,
    next_xid: u32,
    next_rkey: u32,
    sum: Summary,
    batch: Vec<CallSpec>,
    /// PSN of the server's QP1 (GSI), shared by all connections.
    server_gsi_psn: u32,
}

fn psn(v: u32) -> Psn {
    Psn::try_new(v & MASK24).unwrap_or_default()
}

fn qpn(v: u32) -> Qpn {
    Qpn::try_new(v & MASK24).unwrap_or_default()
}

/// A BTH with the defaults every generated packet shares.
pub(crate) fn bth(opcode: Opcode, dest_qp: u32, p: u32, ack_req: bool) -> Bth {
    Bth {
        opcode,
        se: false,
        m: false,
        pad_count: 0,
        tver: 0,
        p_key: PKey::DEFAULT,
        fecn: false,
        becn: false,
        dest_qp: qpn(dest_qp),
        ack_req,
        psn: psn(p),
    }
}

const PAD: [u8; 3] = [0; 3];

fn pad_for(len: usize) -> &'static [u8] {
    PAD.get(..(4 - len % 4) % 4).unwrap_or_default()
}

fn ack_aeth(msn: u32) -> Aeth {
    Aeth {
        syndrome: CREDIT_COUNT_INVALID,
        msn: msn & MASK24,
    }
}

/// Generates the capture described by `opts` into `out`; returns what it
/// contains and the writer.
///
/// # Errors
/// [`Error::Options`] for contradictory options; [`Error::Io`] when the
/// output fails.
pub fn generate<W: Write>(opts: &Options, out: W) -> Result<(Summary, W), Error> {
    validate(opts)?;
    let mut g = Gen::new(opts.clone(), out)?;
    g.run()?;
    let mut sum = g.sum;
    sum.options = Some(opts.clone());
    sum.frames = g.wire.frames;
    sum.bytes = g.wire.bytes;
    sum.transactions = sum.calls;
    sum.anomalies.sort();
    let out = g.wire.finish()?;
    Ok((sum, out))
}

fn validate(o: &Options) -> Result<(), Error> {
    let bad = |s: String| Err(Error::Options(s));
    if ![256, 512, 1024, 2048, 4096].contains(&o.mtu) {
        return bad(format!(
            "--mtu {} is not an InfiniBand MTU: use 256, 512, 1024, 2048 or 4096",
            o.mtu
        ));
    }
    if o.connections == 0 || o.connections > 60_000 {
        return bad(format!(
            "--connections {} is out of range: use 1 to 60000",
            o.connections
        ));
    }
    if o.io_size == 0 || o.io_size > SEG_MAX * MAX_SEGS as u32 {
        return bad(format!(
            "--io-size {} is out of range: use 1 to {} bytes",
            o.io_size,
            SEG_MAX * MAX_SEGS as u32
        ));
    }
    // QP 0 and 1 are the management QPs; connections count up from the base.
    let last_qpn = u64::from(o.qpn_base) + u64::from(o.connections);
    if o.qpn_base < 2 || last_qpn > u64::from(MASK24) + 1 {
        return bad(format!(
            "--qpn-base {:#x} with {} connections goes past the QPNs 2 to 0xffffff: use a base from 0x2 to {:#x}",
            o.qpn_base,
            o.connections,
            (u64::from(MASK24) + 1).saturating_sub(u64::from(o.connections))
        ));
    }
    if o.window == 0 {
        return bad("--window 0 would never send a call: use 1 or more".into());
    }
    if o.credits_granted == 0 {
        return bad("--credits 0 would deadlock the connection; inject zero_credit_grant to get one such reply".into());
    }
    if o.window > o.credits_granted {
        return bad(format!(
            "--window {} exceeds the {} credits the server grants: the client would overrun them; lower --window, raise --credits, or inject credit_overrun",
            o.window, o.credits_granted
        ));
    }
    let needs_two = o
        .inject
        .iter()
        .any(|k| matches!(k, Inject::ZeroCreditGrant | Inject::InvalidatedForeignStag));
    if needs_two && o.credits_granted < 2 {
        return bad("zero_credit_grant and invalidated_foreign_stag need two calls in flight: use --credits 2 or more".into());
    }
    if rdma_dissectors::rpcrdma_cm::encode_size(o.inline_threshold).is_none() {
        return bad(format!(
            "--inline-threshold {} cannot be advertised (RFC 8797): use a multiple of 1024 from 1024 to 262144",
            o.inline_threshold
        ));
    }
    Ok(())
}

impl<W: Write> Gen<W> {
    fn new(o: Options, out: W) -> Result<Self, Error> {
        let mut rng = SplitMix64::new(o.seed);
        let wire = Wire::with_framing(
            out,
            START_NS + rng.below(1_000_000_000),
            o.microseconds,
            o.framing,
        )?;
        let plen = (o.inline_threshold as usize + 4096).max(o.mtu as usize);
        let mut pattern = vec![0u8; plen];
        for chunk in pattern.chunks_mut(8) {
            let r = rng.next_u64().to_le_bytes();
            for (d, s) in chunk.iter_mut().zip(r) {
                *d = s;
            }
        }
        let wrap = o.inject.contains(&Inject::PsnWrap);
        let n = o.connections as usize
            + usize::from(o.inject.contains(&Inject::RemoteInvalidationNotNegotiated));
        let mut conns = Vec::with_capacity(n);
        // The server's communication IDs must differ between connections
        // (they name the connection in DREQ/DREP); consecutive ones do.
        let s_comm_base = rng.next_u32();
        for i in 0..n {
            let extra = i >= o.connections as usize;
            let host = 2 + i as u32;
            let client = Node {
                mac: [0x52, 0x54, 0x00, 0x99, (host >> 8) as u8, host as u8],
                ip: Ipv4Addr::new(10, 99, (host >> 8) as u8, host as u8),
            };
            let server = Node {
                mac: [0x52, 0x54, 0x00, 0x99, 0x00, 0x01],
                ip: Ipv4Addr::new(10, 99, 0, 1),
            };
            let start = |rng: &mut SplitMix64| {
                if wrap {
                    // A few packets before the wrap, so every sequence crosses it.
                    MASK24 - 2 - rng.below(8) as u32
                } else {
                    rng.next_u32() & MASK24
                }
            };
            let c_psn = start(&mut rng);
            let s_psn = start(&mut rng);
            // QPNs are 24 bits on the wire.
            let cqpn = o.qpn_base.wrapping_add(i as u32) & MASK24;
            let sqpn = cqpn;
            let server_r = o.remote_invalidation && !extra;
            conns.push(Conn {
                client,
                server,
                cqpn,
                sqpn,
                csport: 0xc000 | (rng.next_u32() as u16 & 0x3fff),
                ssport: 0xc000 | (rng.next_u32() as u16 & 0x3fff),
                c_psn,
                s_psn,
                c_msn: 0,
                s_msn: 0,
                c_gsi_psn: 3,
                c_comm: rng.next_u32(),
                s_comm: s_comm_base.wrapping_add(i as u32),
                tid: (2u64 << 32) | u64::from(rng.next_u32()),
                server_r,
                inv: o.remote_invalidation && server_r,
                answered_once: false,
                va_next: (u64::from(rng.next_u32() | 0x8000_0000) << 32) | 0x0c00_0000,
                file_offset: 0,
                last_xid: 0,
                v4_seq: 0,
            });
        }
        let msg_len = o.inline_threshold as usize + 8192;
        Ok(Gen {
            next_xid: rng.next_u32(),
            next_rkey: rng.next_u32() & 0x00ff_ff00,
            o,
            wire,
            rng,
            conns,
            pattern,
            msg: vec![0; msg_len],
            body: vec![0; msg_len.max(REPLY_CHUNK_LEN as usize)],
            args: vec![0; msg_len],
            sum: Summary::default(),
            batch: Vec::with_capacity(64),
            server_gsi_psn: 2,
        })
    }

    fn expect(&mut self, kind: &str, frames: Vec<u64>, by: Inject) {
        self.sum.anomalies.push(ExpectedAnomaly {
            kind: kind.to_string(),
            frames,
            injected_by: by.as_str().to_string(),
        });
    }

    fn run(&mut self) -> Result<(), Error> {
        let n_clean = self.o.connections as usize;
        self.sum.connections = self.conns.len() as u32;
        for ci in 0..self.conns.len() {
            self.connect(ci)?;
        }
        // Injected violations first, on connection 0, so their frames are early.
        self.inject_all()?;
        // Clean traffic, round robin over the connections.
        let mut done = 0u64;
        let mut ci = 0usize;
        loop {
            let remaining = match self.o.size {
                Some(size) => {
                    if self.wire.bytes >= size {
                        break;
                    }
                    u64::MAX
                }
                None => {
                    if done >= self.o.calls {
                        break;
                    }
                    self.o.calls - done
                }
            };
            let first = !self.conns.get(ci).is_some_and(|c| c.answered_once);
            let k = if first {
                1
            } else {
                u64::from(self.o.window).min(remaining)
            };
            self.clean_batch(ci, k as usize)?;
            done += k;
            ci = (ci + 1) % n_clean;
        }
        if self.o.inject.contains(&Inject::CallWithoutReply) {
            let spec = self.new_call(0, Some(Proc3::Getattr))?;
            let (f, _) = self.client_call(0, &spec, CallHdr::Normal)?;
            self.sum.calls += 1;
            self.wire.advance(2_000);
            self.server_ack(0)?;
            self.expect("call_without_reply", vec![f], Inject::CallWithoutReply);
        }
        for ci in 0..self.conns.len() {
            self.disconnect(ci)?;
        }
        Ok(())
    }

    // ---- the CM ----

    /// Sends one CM MAD: the common MAD header for `attr`, then the message
    /// `body` writes after it.
    fn cm_mad(
        &mut self,
        ci: usize,
        from_client: bool,
        attr: u16,
        tid: u64,
        body: impl FnOnce(&mut [u8]) -> rdma_dissectors::Result<usize>,
    ) -> Result<u64, Error> {
        let mut mad = [0u8; 256];
        Mad::cm(attr, tid).emit(&mut mad)?;
        body(mad.get_mut(24..).unwrap_or_default())?;
        self.ud_mad(ci, from_client, &mad)
    }

    fn ud_mad(&mut self, ci: usize, from_client: bool, mad: &[u8]) -> Result<u64, Error> {
        let Some(c) = self.conns.get_mut(ci) else {
            return Err(Error::NoConnection(ci));
        };
        let (src, dst, p) = if from_client {
            let p = c.c_gsi_psn;
            c.c_gsi_psn += 1;
            (c.client, c.server, p)
        } else {
            // One server, one QP1: its PSN runs across all connections.
            let p = self.server_gsi_psn;
            self.server_gsi_psn += 1;
            (c.server, c.client, p)
        };
        let mut t = Transport::new(bth(Opcode::UD_SEND_ONLY, 1, p, true), mad);
        t.deth = Some(Deth {
            q_key: Deth::GSI_Q_KEY,
            src_qp: Qpn::QP1,
        });
        self.wire.packet(&src, &dst, 0xd872, &t)
    }

    fn connect(&mut self, ci: usize) -> Result<(), Error> {
        let ib = self.o.framing == Framing::Ib;
        let c = self.conns.get(ci).cloned().ok_or(Error::NoConnection(ci))?;
        let th = self.o.inline_threshold;
        let client_priv = RpcRdmaCmPrivate::new(self.o.remote_invalidation, th, th);
        let server_priv = RpcRdmaCmPrivate::new(c.server_r, th, th);
        let mtu_code = match self.o.mtu {
            256 => 1,
            512 => 2,
            1024 => 3,
            2048 => 4,
            _ => 5,
        };
        let mapped = |ip: Ipv4Addr| ip.to_ipv6_mapped().octets();
        // REQ: the CMA header (Linux cma_hdr) then the RFC 8797 message.
        let mut private = [0u8; 44];
        CmaHeader {
            cma_version: 0,
            ip_version: 4,
            src_port: c.csport,
            src_addr: IpAddr::V4(c.client.ip),
            dst_addr: IpAddr::V4(c.server.ip),
        }
        .emit(&mut private)?;
        client_priv.emit(private.get_mut(36..).unwrap_or_default())?;
        let req = CmReq {
            local_comm_id: c.c_comm,
            service_id: ServiceId::for_rdma_cm(PortSpace::Tcp, NFS_RDMA_PORT),
            local_ca_guid: 0x5054_00ff_fe99_0000 | u64::from(c.client.mac[5]),
            local_q_key: 0,
            local_qpn: qpn(c.cqpn),
            responder_resources: 0x80,
            local_eecn: 0,
            initiator_depth: 0,
            remote_eecn: 0,
            remote_cm_response_timeout: 0x14,
            transport_service_type: 0,
            end_to_end_flow_control: false,
            // As the lab's soft-RoCE peers do: the REQ carries the PSN the
            // passive side will send with, the REP the active side's.
            starting_psn: psn(c.s_psn),
            local_cm_response_timeout: 0x14,
            retry_count: 6,
            p_key: PKey::DEFAULT,
            path_packet_payload_mtu: mtu_code,
            rdc_exists: false,
            rnr_retry_count: 0,
            max_cm_retries: 15,
            srq: false,
            extended_transport_type: 0,
            primary_path: CmPath {
                // Permissive on RoCE; the ports' LIDs on InfiniBand.
                local_port_lid: if ib { c.client.lid() } else { 0xffff },
                remote_port_lid: if ib { c.server.lid() } else { 0xffff },
                local_port_gid: mapped(c.client.ip),
                remote_port_gid: mapped(c.server.ip),
                // RoCEv2 derives the flow label from the UDP ports;
                // soft-RoCE leaves the packet rate at 0.
                flow_label: ((u32::from(c.csport) * 0x9e37) ^ u32::from(c.ssport)) & 0xf_ffff,
                packet_rate: 0,
                traffic_class: 0,
                hop_limit: if ib { 0 } else { 0x40 },
                sl: 0,
                subnet_local: ib,
                local_ack_timeout: 0x13,
            },
            alternate_path: CmPath::default(),
            sap_supported: false,
            private_data: &private,
        };
        self.cm_mad(ci, true, attr::REQ, c.tid, |b| req.emit(b))?;
        self.wire.advance(2_500);
        let mut rep_priv = [0u8; 8];
        server_priv.emit(&mut rep_priv)?;
        let rep = CmRep {
            local_comm_id: c.s_comm,
            remote_comm_id: c.c_comm,
            local_q_key: 0,
            local_qpn: qpn(c.sqpn),
            local_ee_context: 0,
            starting_psn: psn(c.c_psn),
            responder_resources: 0,
            initiator_depth: 0x80,
            target_ack_delay: 0x0f,
            failover_accepted: 0,
            end_to_end_flow_control: false,
            rnr_retry_count: 0,
            srq: false,
            local_ca_guid: 0x5054_00ff_fe99_0001,
            private_data: &rep_priv,
        };
        self.cm_mad(ci, false, attr::REP, c.tid, |b| rep.emit(b))?;
        self.wire.advance(7_500);
        let rtu = CmIds {
            local_comm_id: c.c_comm,
            remote_comm_id: c.s_comm,
            private_data: &[],
        };
        self.cm_mad(ci, true, attr::RTU, c.tid, |b| rtu.emit(b))?;
        self.wire.advance(10_000);
        Ok(())
    }

    fn disconnect(&mut self, ci: usize) -> Result<(), Error> {
        let c = self.conns.get(ci).cloned().ok_or(Error::NoConnection(ci))?;
        self.wire.advance(50_000);
        let dreq = CmDreq {
            local_comm_id: c.c_comm,
            remote_comm_id: c.s_comm,
            remote_qpn_eecn: c.sqpn,
            private_data: &[],
        };
        self.cm_mad(ci, true, attr::DREQ, c.tid, |b| dreq.emit(b))?;
        self.wire.advance(2_500);
        let drep = CmIds {
            local_comm_id: c.s_comm,
            remote_comm_id: c.c_comm,
            private_data: &[],
        };
        self.cm_mad(ci, false, attr::DREP, c.tid, |b| drep.emit(b))?;
        Ok(())
    }

    // ---- calls ----

    fn fresh_xid(&mut self) -> u32 {
        let x = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        x
    }

    fn fresh_rkey(&mut self) -> u32 {
        self.next_rkey = self
            .next_rkey
            .wrapping_add(1 + (self.rng.next_u32() & 0x7f));
        self.next_rkey
    }

    /// A new call on connection `ci`: of `proc` if given, else drawn from the mix.
    fn new_call(&mut self, ci: usize, proc: Option<Proc3>) -> Result<CallSpec, Error> {
        let io = self.o.io_size;
        let drawn = proc.is_none();
        let proc = proc.unwrap_or_else(|| {
            let m = self.o.mix;
            let total =
                u64::from(m.inline + m.read + m.write + m.readdir + m.compound + m.longcall);
            let r = self.rng.below(total);
            let offset = self.conns.get(ci).map_or(0, |c| c.file_offset);
            if r >= u64::from(m.inline + m.read + m.write + m.readdir + m.compound) {
                // Too big for a Send: the inline threshold plus a bit.
                Proc3::Write {
                    offset,
                    count: self.o.inline_threshold + 2048,
                    inline: true,
                }
            } else if r >= u64::from(m.inline + m.read + m.write + m.readdir) {
                let c = self.conns.get_mut(ci);
                let seqid = c.map_or(1, |c| {
                    c.v4_seq = c.v4_seq.wrapping_add(1);
                    c.v4_seq
                });
                Proc3::Compound41 { seqid }
            } else if r < u64::from(m.inline) {
                match self.rng.below(3) {
                    0 => Proc3::Getattr,
                    1 => Proc3::Lookup,
                    _ => Proc3::Access,
                }
            } else if r < u64::from(m.inline + m.read) {
                Proc3::Read { offset, count: io }
            } else if r < u64::from(m.inline + m.read + m.write) {
                Proc3::Write {
                    offset,
                    count: io,
                    inline: false,
                }
            } else {
                Proc3::Readdir {
                    entries: READDIR_ENTRIES,
                }
            }
        });
        let chunk = match proc {
            Proc3::Read { .. } => ChunkUse::Write,
            Proc3::Write { inline: false, .. } => ChunkUse::Read,
            // Drawn from the mix, an inline WRITE is a Long Call; asked for
            // (inline_threshold_exceeded), it goes in the Send as it is.
            Proc3::Write { inline: true, .. } if drawn => ChunkUse::LongCall,
            Proc3::Readdir { .. } => ChunkUse::Reply,
            _ => ChunkUse::None,
        };
        let mut spec = CallSpec {
            xid: self.fresh_xid(),
            proc,
            chunk,
            segs: [Segment::default(); MAX_SEGS],
            nseg: 0,
        };
        let total = match chunk {
            ChunkUse::None => 0,
            ChunkUse::Reply => REPLY_CHUNK_LEN,
            ChunkUse::LongCall => self.build_rpc_call(&spec, spec.xid)? as u32,
            ChunkUse::Write | ChunkUse::Read => io,
        };
        let mut left = total;
        while left > 0 && spec.nseg < MAX_SEGS {
            let len = left.min(SEG_MAX);
            let handle = self.fresh_rkey();
            let Some(c) = self.conns.get_mut(ci) else {
                break;
            };
            let offset = c.va_next;
            c.va_next += u64::from(len).next_multiple_of(4096) + 4096;
            if let Some(s) = spec.segs.get_mut(spec.nseg) {
                *s = Segment {
                    handle,
                    length: len,
                    offset,
                };
            }
            spec.nseg += 1;
            left -= len;
        }
        if let Some(c) = self.conns.get_mut(ci) {
            match proc {
                Proc3::Read { count, .. } | Proc3::Write { count, .. } => {
                    c.file_offset += u64::from(count);
                }
                _ => {}
            }
        }
        Ok(spec)
    }

    /// Builds the RPC call into `self.body`; returns its length.
    fn build_rpc_call(&mut self, spec: &CallSpec, rpc_xid: u32) -> Result<usize, Error> {
        let n = nfs::call_args(spec.proc, &self.pattern, &mut self.args)?;
        let call = RpcMsg {
            xid: rpc_xid,
            body: MsgBody::Call(Call {
                rpcvers: 2,
                prog: NFS_PROGRAM,
                vers: spec.proc.version(),
                proc: spec.proc.number(),
                cred: OpaqueAuth {
                    flavor: AuthFlavor::Sys,
                    body: &AUTH_SYS_BODY,
                },
                verf: OpaqueAuth::NONE,
                args: self.args.get(..n).unwrap_or_default(),
            }),
        };
        Ok(call.emit(&mut self.body)?)
    }

    /// Builds the RPC reply into `self.body`; returns its length.
    fn build_rpc_reply(&mut self, proc: Proc3, xid: u32) -> Result<usize, Error> {
        let n = nfs::reply_results(proc, &mut self.args)?;
        let reply = RpcMsg {
            xid,
            body: MsgBody::Reply(ReplyBody::Accepted {
                verf: OpaqueAuth::NONE,
                stat: AcceptStat::Success,
                results: self.args.get(..n).unwrap_or_default(),
            }),
        };
        Ok(reply.emit(&mut self.body)?)
    }

    /// Appends `self.body[..rpc_len]` after a header of `hdr_len` in `self.msg`.
    fn append_body(&mut self, hdr_len: usize, rpc_len: usize) -> usize {
        let end = hdr_len + rpc_len;
        if let (Some(d), Some(s)) = (self.msg.get_mut(hdr_len..end), self.body.get(..rpc_len)) {
            d.copy_from_slice(s);
        }
        end
    }

    /// Builds and sends a call; returns its first and last frame.
    fn client_call(
        &mut self,
        ci: usize,
        spec: &CallSpec,
        how: CallHdr,
    ) -> Result<(u64, u64), Error> {
        let rpc_xid = if how == CallHdr::XidMismatch {
            spec.xid ^ 0x0100_0000
        } else {
            spec.xid
        };
        let rpc_len = self.build_rpc_call(spec, rpc_xid)?;
        let mut reads = [ReadSegment::default(); MAX_SEGS];
        let segs = spec.segments();
        let one_chunk = [segs];
        let (read, write, reply): (&[ReadSegment], &[&[Segment]], Option<&[Segment]>) =
            match spec.chunk {
                ChunkUse::None => (&[], &[], None),
                ChunkUse::Write => (&[], &one_chunk, None),
                ChunkUse::Reply => (&[], &[], Some(segs)),
                ChunkUse::Read => {
                    let skew = if how == CallHdr::UnalignedRead { 2 } else { 0 };
                    for (r, s) in reads.iter_mut().zip(segs) {
                        *r = ReadSegment {
                            position: rpc_len as u32 + skew,
                            segment: *s,
                        };
                    }
                    (reads.get(..segs.len()).unwrap_or_default(), &[], None)
                }
                ChunkUse::LongCall => {
                    for (r, s) in reads.iter_mut().zip(segs) {
                        *r = ReadSegment {
                            position: 0,
                            segment: *s,
                        };
                    }
                    (reads.get(..segs.len()).unwrap_or_default(), &[], None)
                }
            };
        let chunks = Chunks::new(read, write, reply);
        let long = spec.chunk == ChunkUse::LongCall;
        let body = if long {
            Body::Nomsg(chunks)
        } else if how == CallHdr::Msgp {
            Body::Msgp {
                align: 4096,
                thresh: 0,
                chunks,
            }
        } else {
            Body::Msg(chunks)
        };
        let hdr = RpcRdmaHeader {
            xid: Xid(spec.xid),
            vers: if how == CallHdr::Vers2 { 2 } else { 1 },
            credits: self.o.credits_requested,
            proc: body.proc(),
            body,
        };
        let hlen = hdr.emit(&mut self.msg)?;
        if how == CallHdr::BadProc {
            // No emit writes an undefined procedure: patch rdma_proc.
            if let Some(p) = self.msg.get_mut(12..16) {
                p.copy_from_slice(&7u32.to_be_bytes());
            }
        }
        // A Long Call's RPC message is in the read chunk, not the Send.
        let len = if long {
            hlen
        } else {
            self.append_body(hlen, rpc_len)
        };
        self.send(ci, true, len, None)
    }

    /// Sends `self.msg[..len]` as one RC Send message (several packets when
    /// longer than the MTU); returns its first and last frame.
    fn send(
        &mut self,
        ci: usize,
        from_client: bool,
        len: usize,
        invalidate: Option<u32>,
    ) -> Result<(u64, u64), Error> {
        let mtu = self.o.mtu as usize;
        let Some(c) = self.conns.get_mut(ci) else {
            return Err(Error::NoConnection(ci));
        };
        let (src, dst, port, dqp) = if from_client {
            c.s_msn = (c.s_msn + 1) & MASK24;
            (c.client, c.server, c.csport, c.sqpn)
        } else {
            c.c_msn = (c.c_msn + 1) & MASK24;
            (c.server, c.client, c.ssport, c.cqpn)
        };
        let npk = len.div_ceil(mtu).max(1);
        let mut first = 0;
        let mut last = 0;
        for i in 0..npk {
            let Some(c) = self.conns.get_mut(ci) else {
                break;
            };
            let seq = if from_client {
                &mut c.c_psn
            } else {
                &mut c.s_psn
            };
            let p = *seq;
            *seq = (*seq + 1) & MASK24;
            let is_last = i + 1 == npk;
            let op = match (npk == 1, i == 0, is_last, invalidate.is_some()) {
                (true, _, _, false) => Opcode::RC_SEND_ONLY,
                (true, _, _, true) => Opcode::RC_SEND_ONLY_WITH_INVALIDATE,
                (false, true, _, _) => Opcode::RC_SEND_FIRST,
                (false, false, false, _) => Opcode::RC_SEND_MIDDLE,
                (false, false, true, false) => Opcode::RC_SEND_LAST,
                (false, false, true, true) => Opcode::RC_SEND_LAST_WITH_INVALIDATE,
            };
            let payload = self
                .msg
                .get(i * mtu..((i + 1) * mtu).min(len))
                .unwrap_or_default();
            let mut t = Transport::new(bth(op, dqp, p, is_last), payload);
            t.pad = pad_for(payload.len());
            if is_last {
                t.ieth = invalidate.map(|r_key| Ieth { r_key });
            }
            let f = self.wire.packet(&src, &dst, port, &t)?;
            if i == 0 {
                first = f;
            }
            last = f;
        }
        Ok((first, last))
    }

    /// The server acknowledges everything the client sent so far.
    fn server_ack(&mut self, ci: usize) -> Result<u64, Error> {
        self.ack(ci, true)
    }

    /// The client acknowledges everything the server sent so far.
    fn client_ack(&mut self, ci: usize) -> Result<u64, Error> {
        self.ack(ci, false)
    }

    /// One side acknowledges everything the other sent so far.
    fn ack(&mut self, ci: usize, by_server: bool) -> Result<u64, Error> {
        let c = self.conns.get(ci).ok_or(Error::NoConnection(ci))?;
        let (qpn, psn, msn, src, dst, port) = if by_server {
            (c.cqpn, c.c_psn, c.s_msn, c.server, c.client, c.ssport)
        } else {
            (c.sqpn, c.s_psn, c.c_msn, c.client, c.server, c.csport)
        };
        let mut t = Transport::new(
            bth(Opcode::RC_ACKNOWLEDGE, qpn, psn.wrapping_sub(1), false),
            &[],
        );
        t.aeth = Some(ack_aeth(msn));
        self.wire.packet(&src, &dst, port, &t)
    }

    /// The client sends a RoCEv2 Congestion Notification Packet to the
    /// server's QP (IBA annex A17.9.2: BTH opcode 0x81 with BECN set, 16
    /// reserved bytes); returns its frame.
    fn cnp(&mut self, ci: usize) -> Result<u64, Error> {
        let c = self.conns.get(ci).ok_or(Error::NoConnection(ci))?;
        let (src, dst, port) = (c.client, c.server, c.csport);
        let mut b = bth(Opcode::CNP, c.sqpn, 0, false);
        b.becn = true;
        let t = Transport::new(b, &[0; 16]);
        self.wire.packet(&src, &dst, port, &t)
    }

    /// The server RDMA-writes `len` bytes to (`rkey`, `va`); returns the first frame.
    fn rdma_write(
        &mut self,
        ci: usize,
        rkey: u32,
        va: u64,
        len: u32,
        src: Src,
    ) -> Result<u64, Error> {
        let mtu = self.o.mtu as usize;
        let Some(c) = self.conns.get_mut(ci) else {
            return Err(Error::NoConnection(ci));
        };
        c.c_msn = (c.c_msn + 1) & MASK24;
        let (from, to, port, dqp) = (c.server, c.client, c.ssport, c.cqpn);
        let len = len as usize;
        let npk = len.div_ceil(mtu).max(1);
        let mut first = 0;
        for i in 0..npk {
            let Some(c) = self.conns.get_mut(ci) else {
                break;
            };
            let p = c.s_psn;
            c.s_psn = (c.s_psn + 1) & MASK24;
            let n = mtu.min(len - i * mtu);
            let is_last = i + 1 == npk;
            let op = by_position(npk, i, RDMA_WRITE_OPS);
            let payload = transfer_bytes(&self.pattern, &self.body, src, i * mtu, n);
            let mut t = Transport::new(bth(op, dqp, p, is_last), payload);
            t.pad = pad_for(n);
            if i == 0 {
                t.reth = Some(Reth {
                    va,
                    r_key: rkey,
                    dma_length: len as u32,
                });
            }
            let f = self.wire.packet(&from, &to, port, &t)?;
            if i == 0 {
                first = f;
            }
        }
        Ok(first)
    }

    /// The server RDMA-reads `len` bytes from (`rkey`, `va`) and the client responds.
    fn rdma_read(
        &mut self,
        ci: usize,
        rkey: u32,
        va: u64,
        len: u32,
        src: Src,
    ) -> Result<(), Error> {
        let mtu = self.o.mtu as usize;
        let len = len as usize;
        let npk = len.div_ceil(mtu).max(1);
        let Some(c) = self.conns.get_mut(ci) else {
            return Err(Error::NoConnection(ci));
        };
        let req_psn = c.s_psn;
        c.s_psn = (c.s_psn + npk as u32) & MASK24;
        c.c_msn = (c.c_msn + 1) & MASK24;
        let c = c.clone();
        let mut t = Transport::new(
            bth(Opcode::RC_RDMA_READ_REQUEST, c.cqpn, req_psn, true),
            &[],
        );
        t.reth = Some(Reth {
            va,
            r_key: rkey,
            dma_length: len as u32,
        });
        self.wire.packet(&c.server, &c.client, c.ssport, &t)?;
        self.wire.advance(3_000);
        for i in 0..npk {
            let n = mtu.min(len - i * mtu);
            let is_last = i + 1 == npk;
            let op = by_position(npk, i, RDMA_READ_RESPONSE_OPS);
            let payload = transfer_bytes(&self.pattern, &self.body, src, i * mtu, n);
            let mut t = Transport::new(
                bth(op, c.sqpn, req_psn.wrapping_add(i as u32), false),
                payload,
            );
            t.pad = pad_for(n);
            if i == 0 || is_last {
                t.aeth = Some(ack_aeth(c.c_msn));
            }
            self.wire.packet(&c.client, &c.server, c.csport, &t)?;
        }
        Ok(())
    }

    /// The server's side of a call: RDMA transfers, then the reply. Returns
    /// the reply's frame.
    fn serve(
        &mut self,
        ci: usize,
        spec: &CallSpec,
        how: ReplyHdr,
        credits: u32,
        invalidate: Option<u32>,
    ) -> Result<u64, Error> {
        self.wire.advance(5_000);
        let mut moved = 0u64;
        let mut reply_chunk_len = 0u32;
        let err = matches!(how, ReplyHdr::ErrVers { .. } | ReplyHdr::ErrChunk);
        if !err {
            match spec.chunk {
                ChunkUse::None => {}
                ChunkUse::Write => {
                    for s in spec.segments() {
                        self.rdma_write(ci, s.handle, s.offset, s.length, Src::Pattern)?;
                        moved += u64::from(s.length);
                    }
                }
                ChunkUse::Read => {
                    for s in spec.segments() {
                        self.rdma_read(ci, s.handle, s.offset, s.length, Src::Pattern)?;
                        moved += u64::from(s.length);
                    }
                    self.wire.advance(4_000);
                }
                ChunkUse::LongCall => {
                    // The client's memory holds the call as it built it.
                    self.build_rpc_call(spec, spec.xid)?;
                    let mut at = 0;
                    for s in spec.segments() {
                        self.rdma_read(ci, s.handle, s.offset, s.length, Src::Body(at))?;
                        at += s.length as usize;
                        moved += u64::from(s.length);
                    }
                    self.wire.advance(4_000);
                }
                ChunkUse::Reply => {
                    let n = self.build_rpc_reply(spec.proc, spec.xid)?;
                    if let Some(s) = spec.segments().first() {
                        let n = n.min(s.length as usize) as u32;
                        self.rdma_write(ci, s.handle, s.offset, n, Src::Body(0))?;
                        moved += u64::from(n);
                        reply_chunk_len = n;
                    }
                }
            }
        }
        let len = self.build_reply(spec, how, credits, reply_chunk_len)?;
        let (_, f) = self.send(ci, false, len, invalidate)?;
        self.sum.replies += 1;
        if !err {
            self.sum.chunk_bytes += moved;
        }
        if invalidate.is_some() {
            self.sum.remote_invalidations += 1;
        }
        if let Some(c) = self.conns.get_mut(ci) {
            c.answered_once = true;
            c.last_xid = spec.xid;
        }
        self.wire.advance(2_000);
        self.client_ack(ci)?;
        Ok(f)
    }

    /// Builds a reply's RPC-over-RDMA message into `self.msg`; returns its length.
    fn build_reply(
        &mut self,
        spec: &CallSpec,
        how: ReplyHdr,
        credits: u32,
        reply_chunk_len: u32,
    ) -> Result<usize, Error> {
        let xid = Xid(spec.xid);
        let hdr = |proc, body| RpcRdmaHeader {
            xid,
            vers: 1,
            credits,
            proc,
            body,
        };
        match how {
            ReplyHdr::ErrVers { vers } => {
                let mut h = hdr(
                    Proc::Error,
                    Body::Error(RdmaError::Vers { low: 1, high: 1 }),
                );
                h.vers = vers;
                Ok(h.emit(&mut self.msg)?)
            }
            ReplyHdr::ErrChunk => {
                Ok(hdr(Proc::Error, Body::Error(RdmaError::Chunk)).emit(&mut self.msg)?)
            }
            ReplyHdr::NomsgEmpty => {
                Ok(hdr(Proc::Nomsg, Body::Nomsg(Chunks::EMPTY)).emit(&mut self.msg)?)
            }
            ReplyHdr::ReadList => {
                let rs = [ReadSegment {
                    position: 0,
                    segment: Segment {
                        handle: self.next_rkey.wrapping_add(0x40_0000),
                        length: 4096,
                        offset: 0x7f00_0000_0000,
                    },
                }];
                let rpc_len = self.build_rpc_reply(spec.proc, spec.xid)?;
                let h = hdr(Proc::Msg, Body::Msg(Chunks::new(&rs, &[], None)));
                let hl = h.emit(&mut self.msg)?;
                Ok(self.append_body(hl, rpc_len))
            }
            ReplyHdr::NfsError(status) => {
                let n = nfs::error_results(status, &mut self.args)?;
                let reply = RpcMsg {
                    xid: spec.xid,
                    body: MsgBody::Reply(ReplyBody::Accepted {
                        verf: OpaqueAuth::NONE,
                        stat: AcceptStat::Success,
                        results: self.args.get(..n).unwrap_or_default(),
                    }),
                };
                let rpc_len = reply.emit(&mut self.body)?;
                let hl = hdr(Proc::Msg, Body::Msg(Chunks::EMPTY)).emit(&mut self.msg)?;
                Ok(self.append_body(hl, rpc_len))
            }
            ReplyHdr::Normal => match spec.chunk {
                ChunkUse::Reply => {
                    let mut seg = spec.segments().first().copied().unwrap_or_default();
                    seg.length = reply_chunk_len;
                    let one = [seg];
                    let h = hdr(Proc::Nomsg, Body::Nomsg(Chunks::new(&[], &[], Some(&one))));
                    Ok(h.emit(&mut self.msg)?)
                }
                ChunkUse::Write => {
                    let rpc_len = self.build_rpc_reply(spec.proc, spec.xid)?;
                    let segs = [spec.segments()];
                    let h = hdr(Proc::Msg, Body::Msg(Chunks::new(&[], &segs, None)));
                    let hl = h.emit(&mut self.msg)?;
                    Ok(self.append_body(hl, rpc_len))
                }
                ChunkUse::None | ChunkUse::Read | ChunkUse::LongCall => {
                    let rpc_len = self.build_rpc_reply(spec.proc, spec.xid)?;
                    let h = hdr(Proc::Msg, Body::Msg(Chunks::EMPTY));
                    let hl = h.emit(&mut self.msg)?;
                    Ok(self.append_body(hl, rpc_len))
                }
            },
        }
    }

    /// The STag a normal reply to `spec` invalidates, if any.
    fn inv_key(&self, ci: usize, spec: &CallSpec) -> Option<u32> {
        let inv = self.conns.get(ci).is_some_and(|c| c.inv);
        if inv {
            spec.segments().first().map(|s| s.handle)
        } else {
            None
        }
    }

    fn clean_batch(&mut self, ci: usize, k: usize) -> Result<(), Error> {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        for _ in 0..k {
            let spec = self.new_call(ci, None)?;
            batch.push(spec);
        }
        for spec in &batch {
            self.client_call(ci, spec, CallHdr::Normal)?;
            self.sum.calls += 1;
            self.wire.advance(1_000);
        }
        self.wire.advance(1_000);
        self.server_ack(ci)?;
        let credits = self.o.credits_granted;
        for spec in &batch {
            let inv = self.inv_key(ci, spec);
            self.serve(ci, spec, ReplyHdr::Normal, credits, inv)?;
        }
        self.batch = batch;
        Ok(())
    }

    /// One call, acknowledged, answered as `how`; returns (call frame, reply frame).
    fn simple(
        &mut self,
        ci: usize,
        proc: Proc3,
        call: CallHdr,
        reply: ReplyHdr,
    ) -> Result<(u64, u64), Error> {
        let spec = self.new_call(ci, Some(proc))?;
        let (f, _) = self.client_call(ci, &spec, call)?;
        if matches!(
            call,
            CallHdr::Normal | CallHdr::XidMismatch | CallHdr::Msgp | CallHdr::UnalignedRead
        ) {
            self.sum.calls += 1;
        }
        self.wire.advance(2_000);
        self.server_ack(ci)?;
        let inv = match reply {
            ReplyHdr::Normal => self.inv_key(ci, &spec),
            _ => None,
        };
        let r = self.serve(ci, &spec, reply, self.o.credits_granted, inv)?;
        Ok((f, r))
    }

    fn inject_all(&mut self) -> Result<(), Error> {
        let kinds: Vec<Inject> = Inject::ALL
            .into_iter()
            .filter(|k| self.o.inject.contains(k))
            .collect();
        if kinds.is_empty() {
            return Ok(());
        }
        let g = self.o.credits_granted;
        // Connection 0's first exchange: one call, or two for credit_overrun.
        if kinds.contains(&Inject::CreditOverrun) {
            let a = self.new_call(0, Some(Proc3::Getattr))?;
            let b = self.new_call(0, Some(Proc3::Access))?;
            self.client_call(0, &a, CallHdr::Normal)?;
            self.wire.advance(1_000);
            let (fb, _) = self.client_call(0, &b, CallHdr::Normal)?;
            self.sum.calls += 2;
            self.expect("credit_overrun", vec![fb], Inject::CreditOverrun);
            self.server_ack(0)?;
            self.serve(0, &a, ReplyHdr::Normal, g, None)?;
            self.serve(0, &b, ReplyHdr::Normal, g, None)?;
        } else {
            self.simple(0, Proc3::Getattr, CallHdr::Normal, ReplyHdr::Normal)?;
        }
        for k in kinds {
            self.wire.advance(20_000);
            self.inject_one(k)?;
        }
        Ok(())
    }

    fn inject_one(&mut self, k: Inject) -> Result<(), Error> {
        let g = self.o.credits_granted;
        let io = self.o.io_size;
        let read = Proc3::Read {
            offset: 0,
            count: io,
        };
        match k {
            Inject::CreditOverrun | Inject::PsnWrap | Inject::CallWithoutReply => {}
            Inject::ZeroCreditGrant => {
                let a = self.new_call(0, Some(Proc3::Getattr))?;
                let b = self.new_call(0, Some(Proc3::Getattr))?;
                self.client_call(0, &a, CallHdr::Normal)?;
                self.client_call(0, &b, CallHdr::Normal)?;
                self.sum.calls += 2;
                self.server_ack(0)?;
                let f = self.serve(0, &a, ReplyHdr::Normal, 0, None)?;
                self.expect("zero_credit_grant", vec![f], k);
                self.serve(0, &b, ReplyHdr::Normal, g, None)?;
            }
            Inject::RemoteInvalidationNotNegotiated => {
                let ci = self.conns.len() - 1;
                let spec = self.new_call(ci, Some(read))?;
                self.client_call(ci, &spec, CallHdr::Normal)?;
                self.sum.calls += 1;
                self.server_ack(ci)?;
                let key = spec.segments().first().map(|s| s.handle);
                let f = self.serve(ci, &spec, ReplyHdr::Normal, g, key)?;
                self.expect("remote_invalidation_not_negotiated", vec![f], k);
            }
            Inject::InvalidatedForeignStag => {
                let a = self.new_call(0, Some(read))?;
                let b = self.new_call(0, Some(Proc3::Getattr))?;
                self.client_call(0, &a, CallHdr::Normal)?;
                self.client_call(0, &b, CallHdr::Normal)?;
                self.sum.calls += 2;
                self.server_ack(0)?;
                // B's reply invalidates A's STag; A's reply then has nothing to invalidate.
                let foreign = a.segments().first().map(|s| s.handle);
                for s in a.segments() {
                    self.rdma_write(0, s.handle, s.offset, s.length, Src::Pattern)?;
                }
                let f = self.serve(0, &b, ReplyHdr::Normal, g, foreign)?;
                self.expect("invalidated_foreign_stag", vec![f], k);
                if !self.conns.first().is_some_and(|c| c.inv) {
                    self.expect("remote_invalidation_not_negotiated", vec![f], k);
                }
                // A's data was written above: reply without moving it again.
                let len = self.build_reply(&a, ReplyHdr::Normal, g, 0)?;
                self.send(0, false, len, None)?;
                self.sum.replies += 1;
                self.sum.chunk_bytes += u64::from(io);
                self.client_ack(0)?;
            }
            Inject::InlineThresholdExceeded => {
                let w = Proc3::Write {
                    offset: 0,
                    count: self.o.inline_threshold + 512,
                    inline: true,
                };
                let spec = self.new_call(0, Some(w))?;
                let (first, last) = self.client_call(0, &spec, CallHdr::Normal)?;
                self.sum.calls += 1;
                self.expect("inline_threshold_exceeded", vec![first, last], k);
                self.server_ack(0)?;
                self.serve(0, &spec, ReplyHdr::Normal, g, None)?;
            }
            Inject::ErrVers => {
                let (_, r) = self.simple(
                    0,
                    Proc3::Getattr,
                    CallHdr::Normal,
                    ReplyHdr::ErrVers { vers: 1 },
                )?;
                self.expect("err_vers", vec![r], k);
            }
            Inject::ErrChunk => {
                let (_, r) = self.simple(0, Proc3::Getattr, CallHdr::Normal, ReplyHdr::ErrChunk)?;
                self.expect("err_chunk", vec![r], k);
            }
            Inject::ShortHeader => {
                let xid = self.fresh_xid();
                let words = [xid, 1, self.o.credits_requested, 0, 0];
                for (i, w) in words.iter().enumerate() {
                    if let Some(d) = self.msg.get_mut(i * 4..i * 4 + 4) {
                        d.copy_from_slice(&w.to_be_bytes());
                    }
                }
                let (f, _) = self.send(0, true, 20, None)?;
                self.server_ack(0)?;
                self.expect("short_header", vec![f], k);
            }
            Inject::XidMismatch => {
                let (c, r) =
                    self.simple(0, Proc3::Getattr, CallHdr::XidMismatch, ReplyHdr::ErrChunk)?;
                self.expect("xid_mismatch", vec![c], k);
                self.expect("err_chunk", vec![r], k);
            }
            Inject::MsgpUsed => {
                let (c, _) = self.simple(0, Proc3::Getattr, CallHdr::Msgp, ReplyHdr::Normal)?;
                self.expect("msgp_used", vec![c], k);
            }
            Inject::DoneUsed => {
                let xid = self.conns.first().map_or(0, |c| c.last_xid);
                let h = RpcRdmaHeader {
                    xid: Xid(xid),
                    vers: 1,
                    credits: self.o.credits_requested,
                    proc: Proc::Done,
                    body: Body::Done,
                };
                let n = h.emit(&mut self.msg)?;
                let (f, _) = self.send(0, true, n, None)?;
                self.server_ack(0)?;
                self.expect("done_used", vec![f], k);
            }
            Inject::VersionMismatch => {
                let (c, r) = self.simple(
                    0,
                    Proc3::Getattr,
                    CallHdr::Vers2,
                    ReplyHdr::ErrVers { vers: 2 },
                )?;
                // The ERR_VERS answers a call the analyzer could not take as one.
                self.sum.replies -= 1;
                self.expect("version_mismatch", vec![c], k);
                self.expect("err_vers", vec![r], k);
            }
            Inject::BadProc => {
                let (c, r) =
                    self.simple(0, Proc3::Getattr, CallHdr::BadProc, ReplyHdr::ErrChunk)?;
                self.sum.replies -= 1;
                self.expect("bad_proc", vec![c], k);
                self.expect("err_chunk", vec![r], k);
            }
            Inject::RdmaOutsideChunk => {
                let rkey = self.next_rkey.wrapping_add(0x80_0000);
                let f = self.rdma_write(0, rkey, 0x7e00_0000_1000, 512, Src::Pattern)?;
                self.wire.advance(2_000);
                self.client_ack(0)?;
                self.expect("rdma_outside_chunk", vec![f], k);
            }
            Inject::IcrcMismatch => {
                let spec = self.new_call(0, Some(Proc3::Getattr))?;
                self.client_call(0, &spec, CallHdr::Normal)?;
                self.sum.calls += 1;
                self.wire.corrupt_next_icrc = true;
                let f = self.server_ack(0)?;
                self.expect("icrc_mismatch", vec![f], k);
                self.serve(0, &spec, ReplyHdr::Normal, g, None)?;
            }
            Inject::ReadListInReply => {
                let (_, r) = self.simple(0, Proc3::Getattr, CallHdr::Normal, ReplyHdr::ReadList)?;
                self.expect("read_list_in_reply", vec![r], k);
            }
            Inject::NomsgWithoutChunks => {
                let (_, r) =
                    self.simple(0, Proc3::Getattr, CallHdr::Normal, ReplyHdr::NomsgEmpty)?;
                self.expect("nomsg_without_chunks", vec![r], k);
            }
            Inject::ErrorFromRequester => {
                let h = RpcRdmaHeader {
                    xid: Xid(self.fresh_xid()),
                    vers: 1,
                    credits: self.o.credits_requested,
                    proc: Proc::Error,
                    body: Body::Error(RdmaError::Vers { low: 1, high: 1 }),
                };
                let n = h.emit(&mut self.msg)?;
                let (f, _) = self.send(0, true, n, None)?;
                self.server_ack(0)?;
                self.expect("error_from_requester", vec![f], k);
                self.expect("err_vers", vec![f], k);
            }
            Inject::NfsError => {
                // The server cannot answer now (NFS3ERR_JUKEBOX, RFC 1813
                // 2.6); the client retries the same GETATTR under a new XID
                // after a delay (Linux waits 5 s; 100 ms here, to keep the
                // capture's timing close to the clean one's).
                self.simple(
                    0,
                    Proc3::Getattr,
                    CallHdr::Normal,
                    ReplyHdr::NfsError(nfs::NFS3ERR_JUKEBOX),
                )?;
                self.wire.advance(100_000_000);
                self.simple(0, Proc3::Getattr, CallHdr::Normal, ReplyHdr::Normal)?;
            }
            Inject::Congestion => {
                // A congested switch marks the server's RDMA Writes of a
                // READ: the first three CE (ECN, RFC 3168) and the first
                // FECN. The client, DCQCN's notification point, answers
                // with a CNP to the server's QP, the one to slow down.
                let spec = self.new_call(0, Some(read))?;
                self.client_call(0, &spec, CallHdr::Normal)?;
                self.sum.calls += 1;
                self.server_ack(0)?;
                self.wire.ce_next = 3;
                self.wire.fecn_next = true;
                let inv = self.inv_key(0, &spec);
                self.serve(0, &spec, ReplyHdr::Normal, g, inv)?;
                self.wire.ce_next = 0;
                self.cnp(0)?;
            }
            Inject::UnalignedReadPosition => {
                let write = Proc3::Write {
                    offset: 0,
                    count: io,
                    inline: false,
                };
                let (c, _) = self.simple(0, write, CallHdr::UnalignedRead, ReplyHdr::Normal)?;
                self.expect("unaligned_read_position", vec![c], k);
            }
            Inject::ReplyWithoutCall => {
                let spec = CallSpec {
                    xid: self.fresh_xid(),
                    proc: Proc3::Getattr,
                    chunk: ChunkUse::None,
                    segs: [Segment::default(); MAX_SEGS],
                    nseg: 0,
                };
                let len = self.build_reply(&spec, ReplyHdr::Normal, g, 0)?;
                let (f, _) = self.send(0, false, len, None)?;
                self.wire.advance(2_000);
                self.client_ack(0)?;
                self.expect("reply_without_call", vec![f], k);
            }
        }
        Ok(())
    }
}
