//! Captures built to hurt: what a hostile tester (or an unlucky capture)
//! feeds the analyzer, made on demand so that the repository holds the
//! generators, not the files (`rdma-analyzer synth --hostile CASE`).
//!
//! Every frame is a well-formed RoCEv2 frame written by the dissectors'
//! `emit` through the same [`Wire`] as the clean generator; what is hostile
//! is what the frames say to one another.

use std::io::Write;
use std::net::Ipv4Addr;
use std::str::FromStr;

use rdma_dissectors::ib::bth::Opcode;
use rdma_dissectors::ib::cm::{attr, CmIds, CmPath, CmRep, CmReq};
use rdma_dissectors::ib::{Deth, Mad, PKey, Psn, Qpn, Reth, ServiceId, Transport};
use rdma_dissectors::oncrpc::{
    AcceptStat, AuthFlavor, Call, MsgBody, OpaqueAuth, ReplyBody, RpcMsg,
};
use rdma_dissectors::rpcrdma::{Body, Chunks, Proc, RpcRdmaHeader, Segment, Xid};

use super::gen::bth;
use super::wire::{Node, Wire};
use super::Error;

/// What a hostile capture does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// `connections` connections (set up from traffic) with `calls`
    /// unanswered calls each, each call offering a reply chunk.
    Unanswered,
    /// `connections` distinct queue pairs, each sent one call.
    QpFlood,
    /// Eleven calls and replies on one connection, with one frame of a
    /// far-off PSN to the server's QP after the third call.
    StrayPsn,
    /// A call and its reply (granting 32 credits), then `calls` calls with
    /// one XID, all outstanding, then as many replies.
    XidReuse,
    /// Calls answered by replies stamped before them.
    TimeBackwards,
    /// A call, then a frame to the server's QP from a third host.
    WrongPeer,
    /// An RDMA_NOMSG call with only a reply chunk (RFC 8166 4.2.4).
    NomsgReplyChunkCall,
    /// A clean capture of `calls` calls over `connections` connections,
    /// gzip-compressed, its 8-byte trailer (CRC32, size) cut off: every
    /// frame is in the stream, only its check is missing.
    GzipNoTrailer,
    /// Two clean captures, each gzip-compressed, joined (`cat a.gz b.gz`):
    /// the second file header lies where a record would.
    JoinedGzip,
    /// A clean capture zstd-compressed with a 2 GiB window and no content
    /// size (`zstd --long=31` through a pipe).
    ZstdLongWindow,
    /// `connections` connections from traffic whose client QP is not
    /// known yet (a call each, offering a reply chunk), then `calls`
    /// frames from the server to client QPs no connection owns: RDMA
    /// Writes and Read requests naming STags nobody advertised, and
    /// replies to XIDs nobody sent. Each must cost what it costs with one
    /// connection, not a look at every connection.
    UnownedFlood,
    /// A connection set up by the CM (which announces each side's starting
    /// PSN), then one frame to the server's QP 1000 PSNs ahead of the
    /// announced start before any other, then eleven calls and replies.
    StrayPsnAtStart,
    /// Eleven calls and replies on a connection from traffic (no CM
    /// exchange), with one frame 1000 PSNs ahead after the first call: the
    /// first request the server's QP gets once the call made it known.
    StrayPsnFirst,
    /// `calls` calls on one connection, each of a procedure number NFSv3
    /// does not define (a distinct `NFS proc N` label each), each answered
    /// a second later: a latency histogram per label in the report.
    ManyLabels,
}

impl Case {
    /// Every case, with its name.
    pub const ALL: [(Case, &'static str); 14] = [
        (Case::Unanswered, "unanswered"),
        (Case::QpFlood, "qp-flood"),
        (Case::StrayPsn, "stray-psn"),
        (Case::XidReuse, "xid-reuse"),
        (Case::TimeBackwards, "time-backwards"),
        (Case::WrongPeer, "wrong-peer"),
        (Case::NomsgReplyChunkCall, "nomsg-reply-chunk-call"),
        (Case::GzipNoTrailer, "gzip-no-trailer"),
        (Case::JoinedGzip, "joined-gzip"),
        (Case::ZstdLongWindow, "zstd-long-window"),
        (Case::UnownedFlood, "unowned-flood"),
        (Case::StrayPsnAtStart, "stray-psn-at-start"),
        (Case::StrayPsnFirst, "stray-psn-first"),
        (Case::ManyLabels, "many-labels"),
    ];
}

impl FromStr for Case {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Case::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(c, _)| *c)
            .ok_or_else(|| {
                let names: Vec<&str> = Case::ALL.iter().map(|(_, n)| *n).collect();
                format!(
                    "unknown hostile case {s:?}; choose from: {}",
                    names.join(", ")
                )
            })
    }
}

const CLIENT: Node = Node {
    mac: [0x52, 0x54, 0, 0x99, 0, 2],
    ip: Ipv4Addr::new(10, 99, 0, 2),
};
const SERVER: Node = Node {
    mac: [0x52, 0x54, 0, 0x99, 0, 1],
    ip: Ipv4Addr::new(10, 99, 0, 1),
};
const STRANGER: Node = Node {
    mac: [0x52, 0x54, 0, 0x99, 0, 9],
    ip: Ipv4Addr::new(10, 99, 0, 9),
};
/// Capture start: 2026-01-01T00:00:00Z.
const START_NS: u64 = 1_767_225_600_000_000_000;

/// An NFSv3 GETATTR call, RDMA_MSG (or RDMA_NOMSG with `chunks`).
fn call(xid: u32, proc: Proc, chunks: Chunks<'_>, buf: &mut [u8]) -> Result<usize, Error> {
    nfs_call(xid, 1, proc, chunks, buf)
}

/// An NFSv3 call of procedure number `nfs_proc`, RDMA_MSG (or RDMA_NOMSG
/// with `chunks`).
fn nfs_call(
    xid: u32,
    nfs_proc: u32,
    proc: Proc,
    chunks: Chunks<'_>,
    buf: &mut [u8],
) -> Result<usize, Error> {
    let hdr = RpcRdmaHeader {
        xid: Xid(xid),
        vers: 1,
        credits: 32,
        proc,
        body: match proc {
            Proc::Nomsg => Body::Nomsg(chunks),
            _ => Body::Msg(chunks),
        },
    };
    let n = hdr.emit(buf)?;
    if proc == Proc::Nomsg {
        return Ok(n);
    }
    let fh = [0u8; 36];
    let msg = RpcMsg {
        xid,
        body: MsgBody::Call(Call {
            rpcvers: 2,
            prog: 100_003,
            vers: 3,
            proc: nfs_proc,
            cred: OpaqueAuth {
                flavor: AuthFlavor::from(0),
                body: &[],
            },
            verf: OpaqueAuth::NONE,
            args: &fh,
        }),
    };
    Ok(n + msg.emit(buf.get_mut(n..).unwrap_or_default())?)
}

/// A successful reply to `xid`, RDMA_MSG, granting 32 credits.
fn reply(xid: u32, buf: &mut [u8]) -> Result<usize, Error> {
    let hdr = RpcRdmaHeader {
        xid: Xid(xid),
        vers: 1,
        credits: 32,
        proc: Proc::Msg,
        body: Body::Msg(Chunks::EMPTY),
    };
    let n = hdr.emit(buf)?;
    let msg = RpcMsg {
        xid,
        body: MsgBody::Reply(ReplyBody::Accepted {
            verf: OpaqueAuth::NONE,
            stat: AcceptStat::Success,
            results: &[0, 0, 0, 0],
        }),
    };
    Ok(n + msg.emit(buf.get_mut(n..).unwrap_or_default())?)
}

/// One side of a connection: where it sends from and the PSN it is at.
struct Sender {
    from: Node,
    to: Node,
    dest_qp: u32,
    psn: u32,
}

impl Sender {
    fn send<W: Write>(&mut self, wire: &mut Wire<W>, payload: &[u8]) -> Result<u64, Error> {
        let t = Transport::new(
            bth(Opcode::RC_SEND_ONLY, self.dest_qp, self.psn, true),
            payload,
        );
        self.psn = (self.psn + 1) & 0xff_ffff;
        wire.packet(&self.from, &self.to, 49152, &t)
    }
}

/// A connection from traffic: the client's QP `qpn`, the server's `qpn + 1`.
fn pair(qpn: u32) -> (Sender, Sender) {
    (
        Sender {
            from: CLIENT,
            to: SERVER,
            dest_qp: qpn + 1,
            psn: 100,
        },
        Sender {
            from: SERVER,
            to: CLIENT,
            dest_qp: qpn,
            psn: 5000,
        },
    )
}

/// One CM MAD (REQ, REP or RTU) from `from` to `to`, on QP1.
fn cm_mad<W: Write>(
    wire: &mut Wire<W>,
    from: &Node,
    to: &Node,
    psn: u32,
    attr: u16,
    body: impl FnOnce(&mut [u8]) -> rdma_dissectors::Result<usize>,
) -> Result<u64, Error> {
    let mut mad = [0u8; 256];
    Mad::cm(attr, 0x4242).emit(&mut mad)?;
    body(mad.get_mut(24..).unwrap_or_default())?;
    let mut t = Transport::new(bth(Opcode::UD_SEND_ONLY, 1, psn, true), &mad);
    t.deth = Some(Deth {
        q_key: Deth::GSI_Q_KEY,
        src_qp: Qpn::QP1,
    });
    wire.packet(from, to, 0xd872, &t)
}

/// The CM exchange (REQ, REP, RTU) that sets up `pair(qpn)`'s connection
/// and announces the PSNs the two sides start at.
fn cm_connect<W: Write>(
    wire: &mut Wire<W>,
    qpn: u32,
    client: &Sender,
    server: &Sender,
) -> Result<(), Error> {
    let (c_comm, s_comm) = (0x1111_0001, 0x2222_0001);
    let q = |v: u32| Qpn::try_new(v).unwrap_or(Qpn::QP1);
    let p = |v: u32| Psn::try_new(v).unwrap_or_default();
    let req = CmReq {
        local_comm_id: c_comm,
        // Not RDMA-CM's: its REQ would need the CMA header in its private data.
        service_id: ServiceId(0x0000_0001_0000_4e51),
        local_ca_guid: 0x5054_00ff_fe99_0002,
        local_q_key: 0,
        local_qpn: q(qpn),
        responder_resources: 0x80,
        local_eecn: 0,
        initiator_depth: 0,
        remote_eecn: 0,
        remote_cm_response_timeout: 0x14,
        transport_service_type: 0,
        end_to_end_flow_control: false,
        // The PSN the server will send with (to the client's QP).
        starting_psn: p(server.psn),
        local_cm_response_timeout: 0x14,
        retry_count: 6,
        p_key: PKey::DEFAULT,
        path_packet_payload_mtu: 3,
        rdc_exists: false,
        rnr_retry_count: 0,
        max_cm_retries: 15,
        srq: false,
        extended_transport_type: 0,
        primary_path: CmPath::default(),
        alternate_path: CmPath::default(),
        sap_supported: false,
        private_data: &[],
    };
    cm_mad(wire, &CLIENT, &SERVER, 0, attr::REQ, |b| req.emit(b))?;
    wire.advance(2_500);
    let rep = CmRep {
        local_comm_id: s_comm,
        remote_comm_id: c_comm,
        local_q_key: 0,
        local_qpn: q(qpn + 1),
        local_ee_context: 0,
        // The PSN the client will send with (to the server's QP).
        starting_psn: p(client.psn),
        responder_resources: 0,
        initiator_depth: 0x80,
        target_ack_delay: 0x0f,
        failover_accepted: 0,
        end_to_end_flow_control: false,
        rnr_retry_count: 0,
        srq: false,
        local_ca_guid: 0x5054_00ff_fe99_0001,
        private_data: &[],
    };
    cm_mad(wire, &SERVER, &CLIENT, 0, attr::REP, |b| rep.emit(b))?;
    wire.advance(2_500);
    let rtu = CmIds {
        local_comm_id: c_comm,
        remote_comm_id: s_comm,
        private_data: &[],
    };
    cm_mad(wire, &CLIENT, &SERVER, 1, attr::RTU, |b| rtu.emit(b))?;
    wire.advance(10_000);
    Ok(())
}

/// Writes `case` to `out`: `connections` and `calls` size the floods.
///
/// # Errors
/// When the output fails (or a frame does not fit: a generator bug).
pub fn write<W: Write>(case: Case, connections: u32, calls: u64, mut out: W) -> Result<W, Error> {
    if let Some(packed) = container(case, connections, calls)? {
        out.write_all(&packed)?;
        return Ok(out);
    }
    let mut wire = Wire::new(out, START_NS, false)?;
    let mut buf = [0u8; 512];
    match case {
        Case::Unanswered => {
            let mut sides: Vec<Sender> = (0..connections).map(|c| pair(0x100 + 2 * c).0).collect();
            for i in 0..calls {
                for (c, s) in sides.iter_mut().enumerate() {
                    let xid = (c as u32) << 20 | (i as u32 & 0xf_ffff);
                    // Each offers memory for its reply, as a large reply
                    // would: the STags index grows with the calls.
                    let reply_chunk = [Segment {
                        handle: xid,
                        length: 4096,
                        offset: 0x7f00_0000_0000 | u64::from(xid) << 12,
                    }];
                    let chunks = Chunks::new(&[], &[], Some(&reply_chunk));
                    let n = call(xid, Proc::Msg, chunks, &mut buf)?;
                    s.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                }
            }
        }
        Case::QpFlood => {
            for c in 0..connections {
                let n = call(c, Proc::Msg, Chunks::EMPTY, &mut buf)?;
                pair(0x100 + 2 * c)
                    .0
                    .send(&mut wire, buf.get(..n).unwrap_or_default())?;
            }
        }
        Case::StrayPsn => {
            let (mut client, mut server) = pair(0x10);
            for i in 0..11u32 {
                let n = call(0x5000 + i, Proc::Msg, Chunks::EMPTY, &mut buf)?;
                client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                if i == 2 {
                    // A frame far ahead in the server QP's sequence.
                    let mut stray = Sender {
                        psn: client.psn + 3_000_000,
                        ..pair(0x10).0
                    };
                    let n = call(0x9999, Proc::Msg, Chunks::EMPTY, &mut buf)?;
                    stray.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                }
                wire.advance(20_000);
                let n = reply(0x5000 + i, &mut buf)?;
                server.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            }
        }
        Case::XidReuse => {
            let (mut client, mut server) = pair(0x10);
            // A first call and reply: the reply grants 32 credits.
            let n = call(0x7776, Proc::Msg, Chunks::EMPTY, &mut buf)?;
            client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            let n = reply(0x7776, &mut buf)?;
            server.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            for _ in 0..calls {
                let n = call(0x7777, Proc::Msg, Chunks::EMPTY, &mut buf)?;
                client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                wire.advance(1_000);
            }
            for _ in 0..calls {
                let n = reply(0x7777, &mut buf)?;
                server.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                wire.advance(1_000);
            }
        }
        Case::TimeBackwards => {
            let (mut client, mut server) = pair(0x10);
            for i in 0..4u32 {
                let n = call(0x6000 + i, Proc::Msg, Chunks::EMPTY, &mut buf)?;
                client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                // Odd replies come stamped 30 µs before their calls.
                if i % 2 == 1 {
                    wire.ts_ns -= 30_000;
                } else {
                    wire.advance(30_000);
                }
                let n = reply(0x6000 + i, &mut buf)?;
                server.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                wire.advance(100_000);
            }
        }
        Case::WrongPeer => {
            let (mut client, mut server) = pair(0x10);
            let n = call(0x4000, Proc::Msg, Chunks::EMPTY, &mut buf)?;
            client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            let mut stranger = Sender {
                from: STRANGER,
                ..pair(0x10).0
            };
            stranger.psn = client.psn;
            let n = call(0x4001, Proc::Msg, Chunks::EMPTY, &mut buf)?;
            stranger.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            let n = reply(0x4000, &mut buf)?;
            server.send(&mut wire, buf.get(..n).unwrap_or_default())?;
        }
        Case::NomsgReplyChunkCall => {
            // A first call and its reply make the connection known.
            let (mut client, mut server) = pair(0x10);
            let n = call(0x2fff, Proc::Msg, Chunks::EMPTY, &mut buf)?;
            client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            let n = reply(0x2fff, &mut buf)?;
            server.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            // A Long Call must come with a position-zero read chunk; a
            // reply chunk is for the reply.
            let reply_chunk = [Segment {
                handle: 0x1234,
                length: 8192,
                offset: 0x7f00_0000,
            }];
            let n = call(
                0x3000,
                Proc::Nomsg,
                Chunks::new(&[], &[], Some(&reply_chunk)),
                &mut buf,
            )?;
            client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
        }
        // Written whole above.
        Case::GzipNoTrailer | Case::JoinedGzip | Case::ZstdLongWindow => {}
        Case::StrayPsnAtStart | Case::StrayPsnFirst => {
            let (mut client, mut server) = pair(0x10);
            // With the CM exchange, the stray comes before any call; without
            // it, after the first (which makes the connection known).
            let before = match case {
                Case::StrayPsnAtStart => {
                    cm_connect(&mut wire, 0x10, &client, &server)?;
                    0
                }
                _ => 1,
            };
            for i in 0..11u32 {
                if i == before {
                    // A frame 1000 PSNs ahead of the next one, near enough
                    // to pass for the sequence.
                    let mut stray = Sender {
                        psn: client.psn + 1000,
                        ..pair(0x10).0
                    };
                    let n = call(0x9999, Proc::Msg, Chunks::EMPTY, &mut buf)?;
                    stray.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                    wire.advance(20_000);
                }
                let n = call(0x5000 + i, Proc::Msg, Chunks::EMPTY, &mut buf)?;
                client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                wire.advance(20_000);
                let n = reply(0x5000 + i, &mut buf)?;
                server.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            }
        }
        Case::ManyLabels => {
            let (mut client, mut server) = pair(0x10);
            for i in 0..calls {
                let xid = 0x4000_0000 | (i as u32);
                // NFSv3 defines procedures 0 to 21.
                let nfs_proc = 1000 + (i as u32);
                let n = nfs_call(xid, nfs_proc, Proc::Msg, Chunks::EMPTY, &mut buf)?;
                client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                wire.advance(1_000_000_000);
                let n = reply(xid, &mut buf)?;
                server.send(&mut wire, buf.get(..n).unwrap_or_default())?;
            }
        }
        Case::UnownedFlood => {
            for c in 0..connections {
                let (mut client, _) = pair(0x100 + 2 * c);
                let reply_chunk = [Segment {
                    handle: 0x1000_0000 | c,
                    length: 4096,
                    offset: 0x7f00_0000_0000,
                }];
                let chunks = Chunks::new(&[], &[], Some(&reply_chunk));
                let n = call(0x100_0000 | c, Proc::Msg, chunks, &mut buf)?;
                client.send(&mut wire, buf.get(..n).unwrap_or_default())?;
                wire.advance(1_000);
            }
            // Client QPs well away from the connections' (0x100 on).
            const FLOOD_QPS: u32 = 4096;
            let mut psn = [0u32; FLOOD_QPS as usize];
            for i in 0..calls {
                let qp = (i % u64::from(FLOOD_QPS)) as u32;
                let dest_qp = 0x80_0000 + qp;
                let p = psn.get_mut(qp as usize).map_or(0, |p| {
                    *p = (*p + 1) & 0xff_ffff;
                    *p
                });
                let unknown = 0xdead_0000 ^ (i as u32);
                let reth = Some(Reth {
                    va: 0x7f00_0000_0000,
                    r_key: unknown,
                    dma_length: 64,
                });
                match i % 3 {
                    0 => {
                        let payload = [0u8; 64];
                        let mut t = Transport::new(
                            bth(Opcode::RC_RDMA_WRITE_ONLY, dest_qp, p, true),
                            &payload,
                        );
                        t.reth = reth;
                        wire.packet(&SERVER, &CLIENT, 49152, &t)?;
                    }
                    1 => {
                        let mut t = Transport::new(
                            bth(Opcode::RC_RDMA_READ_REQUEST, dest_qp, p, true),
                            &[],
                        );
                        t.reth = reth;
                        wire.packet(&SERVER, &CLIENT, 49152, &t)?;
                    }
                    _ => {
                        let n = reply(unknown, &mut buf)?;
                        let t = Transport::new(
                            bth(Opcode::RC_SEND_ONLY, dest_qp, p, true),
                            buf.get(..n).unwrap_or_default(),
                        );
                        wire.packet(&SERVER, &CLIENT, 49152, &t)?;
                    }
                }
                wire.advance(1_000);
            }
        }
    }
    wire.finish()
}

/// The bytes of a case whose damage is in the container, not the frames:
/// a clean capture, compressed and then damaged or joined.
fn container(case: Case, connections: u32, calls: u64) -> Result<Option<Vec<u8>>, Error> {
    if !matches!(
        case,
        Case::GzipNoTrailer | Case::JoinedGzip | Case::ZstdLongWindow
    ) {
        return Ok(None);
    }
    let opts = super::Options {
        calls: calls.max(1),
        connections: connections.max(1),
        ..super::Options::default()
    };
    let (_, clean) = super::gen::generate(&opts, Vec::new())?;
    let gzip = |b: &[u8]| -> Result<Vec<u8>, Error> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b)?;
        Ok(e.finish()?)
    };
    Ok(Some(match case {
        Case::GzipNoTrailer => {
            let mut g = gzip(&clean)?;
            g.truncate(g.len().saturating_sub(8));
            g
        }
        Case::JoinedGzip => {
            let mut g = gzip(&clean)?;
            g.extend(gzip(&clean)?);
            g
        }
        _ => {
            let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3)?;
            e.window_log(31)?;
            e.long_distance_matching(true)?;
            e.write_all(&clean)?;
            e.finish()?
        }
    }))
}
