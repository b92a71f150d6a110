//! The queue-pair tracker: each QP's PSN sequence, path MTU, peer and the
//! Write it is in the middle of, moved by every packet to it (IBA 9.7).
//! Pure: a packet's facts in, what the QP says of the packet out; the
//! engine keeps the table ([`super::qp_table::QpTable`]) and raises what
//! a refused packet shows.

use rdma_dissectors::ib::bth::{Opcode, Operation, Position};
use rdma_dissectors::ib::Psn;

use super::state::{QpState, WriteCtx};
use crate::keys::{Addr, ConnId};

/// Requests further than this from the expected PSN, either way, are not
/// taken as the sequence without a second packet that follows them. An RDMA
/// READ of 4 MiB at a 256-byte MTU spans 16384 PSNs; losing more than this
/// many packets of one QP in a capture is itself worth a line.
const FAR: u32 = 1 << 16;

/// How far ahead of the starting PSN the CM exchange announced a QP's first
/// request seen may be and still start its sequence: the packets a capture
/// missed between the exchange and it. A first request further off is held
/// as a far packet (a stray frame there would make every request after it
/// look sent again), and the sequence starts with the next if it follows.
const START_SLACK: u32 = 64;

/// Where a request's PSN stands in its queue pair's sequence.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sequence {
    /// Seen before: the requester sent it again (after a NAK or a timeout).
    Again,
    /// The sequence goes on (with packets the capture missed when `gap`).
    Next { gap: bool },
    /// A PSN the RDMA READ before it holds (one PSN per response packet,
    /// IBA 9.7.1): the requester numbered this request as if the READ
    /// took fewer. Taken as the sequence from here on.
    InReadSpan { read: Psn, next: Psn },
    /// Far from the sequence, and not following a far packet before it:
    /// held as a candidate, not followed yet.
    Far,
    /// Well before the one request the sequence rested on (the first seen,
    /// with no CM exchange to say where it starts): that one was a stray
    /// frame ahead of the sequence, which starts here instead.
    Reseated { stray: Psn },
}

impl Sequence {
    /// Places `cur`, a request taking `span` PSNs (`None`: a READ whose
    /// response count is not known), in `q`'s sequence and moves the
    /// sequence on; a far packet becomes the sequence only when the next
    /// one follows it.
    pub(crate) fn of(q: &mut QpState, cur: Psn, span: Option<u32>) -> Sequence {
        let follows_far = q
            .far_psn
            .and_then(Psn::try_new)
            .is_some_and(|f| f.distance(cur) >= 1 && f.distance(cur) <= FAR);
        let cm_start = q
            .first_psn
            .filter(|_| q.first_from_cm)
            .and_then(Psn::try_new);
        let Some(last) = q.last_psn.and_then(Psn::try_new) else {
            if let Some(start) = cm_start {
                let ahead = start.distance(cur);
                if ahead > START_SLACK && !follows_far {
                    q.far_psn = Some(cur.get());
                    return Sequence::Far;
                }
                q.far_psn = None;
                q.last_psn = Some(cur.get());
                q.last_span = span;
                return Sequence::Next {
                    gap: ahead != 0 && !follows_far,
                };
            }
            q.last_psn = Some(cur.get());
            q.last_span = span;
            q.unconfirmed = true;
            if q.first_psn.is_none() {
                q.first_psn = Some(cur.get());
            }
            return Sequence::Next { gap: false };
        };
        let ahead = last.distance(cur);
        let behind = cur.distance(last);
        let near = ahead <= FAR || behind <= FAR;
        if !near && !follows_far {
            q.far_psn = Some(cur.get());
            return Sequence::Far;
        }
        q.far_psn = None;
        if q.unconfirmed && near && cur.is_before(last) && cur.distance(last) > START_SLACK {
            q.unconfirmed = false;
            q.last_psn = Some(cur.get());
            q.last_span = span;
            return Sequence::Reseated { stray: last };
        }
        if near && (cur == last || cur.is_before(last)) {
            return Sequence::Again;
        }
        q.unconfirmed = false;
        let next = q.last_span.map(|n| last.add(n.max(1)));
        q.last_psn = Some(cur.get());
        q.last_span = span;
        match next {
            Some(next) if near && cur.is_before(next) => Sequence::InReadSpan { read: last, next },
            Some(next) => Sequence::Next {
                gap: near && next != cur,
            },
            None => Sequence::Next { gap: false },
        }
    }
}

/// PSNs an RDMA READ of `len` bytes takes at path MTU `mtu`: one per
/// response packet, at least one (IBA 9.7.1).
pub(crate) fn read_span(len: u32, mtu: u32) -> u32 {
    len.div_ceil(mtu.max(1)).max(1)
}

/// The path MTU a full packet's payload says, if it is one: First and
/// Middle packets carry exactly the path MTU (IBA 9.7.7).
fn full_packet_mtu(payload: usize) -> Option<u32> {
    matches!(payload, 256 | 512 | 1024 | 2048 | 4096).then_some(payload as u32)
}

/// Whether a packet of `operation` is a request: one that takes PSNs of
/// its sender's sequence (responses and ACKs echo the requester's).
pub(crate) fn is_request(operation: Operation) -> bool {
    matches!(
        operation,
        Operation::Send
            | Operation::RdmaWrite
            | Operation::RdmaReadRequest
            | Operation::CompareSwap
            | Operation::FetchAdd
    )
}

/// What a packet's queue pair said of it ([`QpState::place`]).
pub(crate) struct Placed {
    pub conn: Option<ConnId>,
    /// Where a request's PSN stands in its QP's sequence (`None`: not a request).
    pub seq: Option<Sequence>,
    /// The path MTU a full packet said, when its QP did not know it.
    pub learnt_mtu: Option<u32>,
    /// The READ before this request, when that READ's span was not known.
    pub after_unknown_read: Option<u32>,
    /// The Write this packet continues, when it has no RETH of its own.
    pub write: Option<WriteCtx>,
}

/// A packet to a QP, as far as the QP's state needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packet {
    pub src: Addr,
    pub ts: u64,
    pub opcode: Opcode,
    pub psn: Psn,
    /// PSNs a request takes ([`read_span`] for a READ; `None`: unknown).
    pub span: Option<u32>,
    /// Payload bytes on the wire.
    pub payload: usize,
    pub has_reth: bool,
}

/// Why a QP left a packet out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// From a host that is not the QP's connection peer.
    WrongPeer { peer: Option<Addr> },
    /// A request far from the sequence (its last PSN, or the CM's start).
    Far {
        last: Option<u32>,
        cm_start: Option<u32>,
    },
}

impl QpState {
    /// Places `p` in this QP's state: its peer, its PSN sequence, the path
    /// MTU a full packet says, the Write a RETH-less packet continues.
    pub(crate) fn place(&mut self, p: &Packet) -> Result<Placed, Refused> {
        let conn = self.conn;
        if self.peer.is_some_and(|peer| peer != p.src) {
            return Err(Refused::WrongPeer { peer: self.peer });
        }
        self.last_ts_ns = p.ts;
        self.referenced = true;
        // A full packet says the path MTU, once per QP.
        let mut learnt_mtu = None;
        let position = p.opcode.position();
        if self.mtu.is_none() && matches!(position, Some(Position::First | Position::Middle)) {
            learnt_mtu = full_packet_mtu(p.payload);
            self.mtu = learnt_mtu;
        }
        // The READ before this request, if its span was not known: its
        // responses will say whether this request reused one of its PSNs.
        let after_unknown_read = self.last_span.is_none().then_some(self.last_psn).flatten();
        let operation = p.opcode.operation();
        let seq = is_request(operation).then(|| Sequence::of(self, p.psn, p.span));
        if seq == Some(Sequence::Far) {
            let cm_start = self.first_psn.filter(|_| self.first_from_cm);
            return Err(Refused::Far {
                last: self.last_psn,
                cm_start,
            });
        }
        // A Write's later packets carry no RETH: its context says where they go.
        let mut write = None;
        let again = seq == Some(Sequence::Again);
        if !again && operation == Operation::RdmaWrite && !p.has_reth {
            write = self.write;
            if matches!(position, Some(Position::Last)) {
                self.write = None;
            }
        }
        Ok(Placed {
            conn,
            seq,
            learnt_mtu,
            after_unknown_read,
            write,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(q: &mut QpState, psn: u32) -> &'static str {
        name(Sequence::of(q, Psn::try_new(psn).unwrap(), Some(1)))
    }

    fn name(s: Sequence) -> &'static str {
        match s {
            Sequence::Again => "again",
            Sequence::Next { gap: false } => "next",
            Sequence::Next { gap: true } => "gap",
            Sequence::InReadSpan { .. } => "in-read",
            Sequence::Far => "far",
            Sequence::Reseated { .. } => "reseated",
        }
    }

    /// A READ of 2400 bytes at a 1024-byte MTU takes three PSNs: the next
    /// request follows the third, one on the third reused it (what the
    /// emulator of `Roce_PacketSize_2400_stall.pcapng` does), and a READ
    /// whose span is not known lets the next request be anything after it.
    #[test]
    fn a_read_takes_one_psn_per_response() {
        let psn = |p: u32| Psn::try_new(p).unwrap();
        let mut q = QpState::default();
        let span = Some(read_span(2400, 1024));
        assert_eq!(span, Some(3));
        assert_eq!(name(Sequence::of(&mut q, psn(0x7243ff), span)), "next");
        assert_eq!(name(Sequence::of(&mut q, psn(0x724402), Some(1))), "next");
        let mut q = QpState::default();
        Sequence::of(&mut q, psn(0x7243ff), span);
        assert_eq!(
            Sequence::of(&mut q, psn(0x724401), Some(1)),
            Sequence::InReadSpan {
                read: psn(0x7243ff),
                next: psn(0x724402)
            }
        );
        let mut q = QpState::default();
        Sequence::of(&mut q, psn(0xff_fffe), span);
        assert_eq!(name(Sequence::of(&mut q, psn(1), Some(1))), "next");
        let mut q = QpState::default();
        Sequence::of(&mut q, psn(10), None);
        assert_eq!(name(Sequence::of(&mut q, psn(11), Some(1))), "next");
        assert_eq!(name(Sequence::of(&mut q, psn(13), Some(1))), "gap");
        assert_eq!(
            (
                read_span(0, 1024),
                read_span(1024, 1024),
                read_span(1025, 256)
            ),
            (1, 1, 5)
        );
    }

    /// A lone far packet is held out and the sequence goes on where it was;
    /// a far packet the next one follows is where the sequence went (another
    /// incarnation of the QP); retransmissions and gaps keep their meaning;
    /// and it all holds across the 24-bit wrap.
    #[test]
    fn the_psn_sequence_follows_what_the_next_packets_agree_on() {
        let mut q = QpState::default();
        let seq: Vec<&str> = [
            100, 101, 3_000_000, 102, 103, 101, 110, 0x60_0000, 0x60_0001, 0x60_0002,
        ]
        .into_iter()
        .map(|p| step(&mut q, p))
        .collect();
        assert_eq!(
            seq,
            ["next", "next", "far", "next", "next", "again", "gap", "far", "next", "next"]
        );
        let mut q = QpState::default();
        let wrap: Vec<&str> = [0xff_fffe, 0xff_ffff, 0, 1]
            .into_iter()
            .map(|p| step(&mut q, p))
            .collect();
        assert_eq!(wrap, ["next", "next", "next", "next"]);
    }

    /// With the CM's starting PSN, the first request must start near it: a
    /// lone frame far ahead of it (or behind) is held out; a few missed
    /// packets are a gap; a far one the next follows is where the sequence
    /// went (another incarnation).
    #[test]
    fn the_cm_start_decides_where_the_sequence_starts() {
        let from_cm = |start: u32| QpState {
            first_psn: Some(start),
            first_from_cm: true,
            ..QpState::default()
        };
        let run = |start: u32, psns: &[u32]| -> Vec<&'static str> {
            let mut q = from_cm(start);
            psns.iter().map(|&p| step(&mut q, p)).collect()
        };
        assert_eq!(run(100, &[1100, 100, 101]), ["far", "next", "next"]);
        assert_eq!(run(100, &[50, 100]), ["far", "next"]);
        assert_eq!(run(100, &[105, 106]), ["gap", "next"]);
        assert_eq!(run(100, &[5000, 5001, 5002]), ["far", "next", "next"]);
        assert_eq!(run(0xff_fff0, &[0xff_fff0, 0]), ["next", "gap"]);
        // Without the CM's word, the first request starts the sequence; a
        // request well before it says it was a stray, and the sequence
        // starts there instead.
        let mut q = QpState::default();
        let seq: Vec<&str> = [1100, 100, 101, 1100, 102]
            .into_iter()
            .map(|p| step(&mut q, p))
            .collect();
        assert_eq!(seq, ["next", "reseated", "next", "gap", "again"]);
        // Once two requests agree, one before them is sent again.
        let mut q = QpState::default();
        let seq: Vec<&str> = [1100, 1101, 100]
            .into_iter()
            .map(|p| step(&mut q, p))
            .collect();
        assert_eq!(seq, ["next", "next", "again"]);
        // A first request sent again, or a go-back-N a few PSNs back, is
        // no stray.
        let mut q = QpState::default();
        let seq: Vec<&str> = [1100, 1100, 1090, 1091]
            .into_iter()
            .map(|p| step(&mut q, p))
            .collect();
        assert_eq!(seq, ["next", "again", "again", "again"]);
    }
    fn packet(opcode: Opcode, psn: u32) -> Packet {
        Packet {
            src: Addr::Lid(1),
            ts: 5,
            opcode,
            psn: Psn::try_new(psn).unwrap(),
            span: Some(1),
            payload: 1024,
            has_reth: false,
        }
    }

    /// A packet from a host that is not the peer, or far from the
    /// sequence, is refused and leaves the sequence where it was.
    #[test]
    fn a_qp_refuses_a_stranger_and_a_far_request() {
        let mut q = QpState {
            peer: Some(Addr::Lid(2)),
            ..QpState::default()
        };
        let send = packet(Opcode::RC_SEND_ONLY, 10);
        assert_eq!(
            q.place(&send).err(),
            Some(Refused::WrongPeer {
                peer: Some(Addr::Lid(2))
            })
        );
        q.peer = Some(Addr::Lid(1));
        assert!(q.place(&send).is_ok());
        assert_eq!(
            q.place(&packet(Opcode::RC_SEND_ONLY, 0x80_0000)).err(),
            Some(Refused::Far {
                last: Some(10),
                cm_start: None
            })
        );
        assert_eq!(q.last_psn, Some(10));
    }

    /// A full First packet teaches the path MTU once; a RETH-less Write
    /// packet continues the Write in progress, and its Last ends it.
    #[test]
    fn a_qp_learns_its_mtu_and_follows_a_write() {
        let mut q = QpState::default();
        let first = q.place(&packet(Opcode::RC_RDMA_WRITE_FIRST, 1)).unwrap();
        assert_eq!(first.learnt_mtu, Some(1024));
        let again = q.place(&packet(Opcode::RC_RDMA_WRITE_MIDDLE, 2)).unwrap();
        assert_eq!((again.learnt_mtu, q.mtu), (None, Some(1024)));
        q.write = Some(WriteCtx {
            conn: ConnId(1),
            target: None,
            rkey: 9,
        });
        let last = q.place(&packet(Opcode::RC_RDMA_WRITE_LAST, 3)).unwrap();
        assert!(last.write.is_some() && q.write.is_none());
        assert_eq!(last.seq, Some(Sequence::Next { gap: false }));
    }
}
