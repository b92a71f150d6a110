//! One direction of a TCP connection put back into a byte stream, and cut
//! into what iWARP sends on it: the MPA Request or Reply, then FPDUs.
//!
//! This is the in-order version: a segment that does not start where the
//! stream is expected to continue (after an already-delivered prefix is
//! trimmed) leaves a [`Delivery::Gap`], and framing starts again only at an
//! MPA frame or where FPDU lengths and DDP/RDMAP headers line up. Markers
//! are not removed here: a direction that negotiated them is not framed,
//! and its bytes are delivered as gaps (said, never guessed).

use rdma_dissectors::iwarp::{crc32c, mpa};

use crate::keys::Map;

/// One direction of a TCP connection.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct FlowKey {
    pub src: std::net::SocketAddr,
    pub dst: std::net::SocketAddr,
}

/// One TCP segment as its frame carried it.
pub(crate) struct TcpSegment<'a> {
    pub frame: u64,
    pub ts: u64,
    pub seq: u32,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    /// What the capture kept of the payload.
    pub payload: &'a [u8],
    /// The payload's length on the wire (more than `payload.len()` when a snap length cut it).
    pub wire_len: u32,
}

/// What one direction's stream delivers, in stream order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The MPA Request or Reply frame that opens the direction (header and private data, whole).
    Mpa {
        first_frame: u64,
        frame: u64,
        ts: u64,
        bytes: Vec<u8>,
    },
    /// One FPDU, markers removed: ULPDU_Length, ULPDU, pad and CRC, as sent
    /// (RFC 5044 4.1: the CRC field is there even when CRCs were not
    /// negotiated; it then holds anything and is not checked).
    Fpdu {
        first_frame: u64,
        frame: u64,
        ts: u64,
        bytes: Vec<u8>,
    },
    /// `bytes` octets of the stream the capture lacks; what they held is unknown.
    Gap { frame: u64, ts: u64, bytes: u64 },
    /// Framing found again after a gap or a mid-stream start; `certain` false when only length/CRC plausibility found it.
    Resync {
        frame: u64,
        ts: u64,
        skipped: u64,
        certain: bool,
    },
    /// FIN or RST.
    Closed { frame: u64, ts: u64, reset: bool },
}

/// Where a direction's framing stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// From the SYN: the MPA Request or Reply comes first.
    Setup,
    /// In step: the buffer starts at an FPDU.
    Framed,
    /// After a gap or a mid-stream start: the buffer starts anywhere.
    Lost,
}

#[derive(Debug)]
struct Flow {
    /// The sequence number of the next octet the stream expects.
    next: Option<u32>,
    phase: Phase,
    /// Stream octets received and not yet delivered.
    buf: Vec<u8>,
    /// The frame that brought `buf`'s first octet.
    first_frame: u64,
    markers: bool,
    crc: bool,
    /// Octets passed over since framing was lost.
    skipped: u64,
}

/// Octets an unframed direction keeps while it looks for an FPDU: two of
/// the largest are enough to see one follow another.
const LOST_WINDOW: usize = 2 * (mpa::ULPDU_LENGTH_LEN + 65535 + 3 + mpa::CRC_LEN);

/// Every direction's stream.
pub(crate) struct Streams {
    flows: Map<FlowKey, Flow>,
    held: usize,
    limit: usize,
}

impl Streams {
    pub(crate) fn new() -> Self {
        Streams {
            flows: Map::default(),
            held: 0,
            limit: usize::MAX,
        }
    }

    /// Feeds one segment; pushes what it completes onto `out`, in stream order.
    pub(crate) fn segment(&mut self, key: FlowKey, seg: &TcpSegment<'_>, out: &mut Vec<Delivery>) {
        if seg.rst {
            out.push(Delivery::Closed {
                frame: seg.frame,
                ts: seg.ts,
                reset: true,
            });
            return self.forget(key);
        }
        let flow = self.flows.entry(key).or_insert_with(|| Flow {
            next: None,
            phase: Phase::Lost,
            buf: Vec::new(),
            first_frame: seg.frame,
            markers: false,
            crc: false,
            skipped: 0,
        });
        let before = flow.buf.len();
        if seg.syn {
            *flow = Flow {
                next: Some(seg.seq.wrapping_add(1)),
                phase: Phase::Setup,
                buf: Vec::new(),
                first_frame: seg.frame,
                ..*flow
            };
        } else {
            let from_mpa = mpa::frame_kind(seg.payload).is_some();
            flow.data(seg, from_mpa, out);
        }
        if seg.fin {
            out.push(Delivery::Closed {
                frame: seg.frame,
                ts: seg.ts,
                reset: false,
            });
        }
        let after = flow.buf.len();
        self.held = (self.held + after).saturating_sub(before);
        if self.held > self.limit {
            self.shed(seg);
        }
    }

    /// What the MPA exchange negotiated for this direction, so framing can use it.
    pub(crate) fn negotiated(&mut self, key: FlowKey, markers: bool, crc: bool) {
        if let Some(f) = self.flows.get_mut(&key) {
            f.markers = markers;
            f.crc = crc;
        }
    }

    /// Octets held now (for `wire/cost.rs` and the memory budget), and the cap on them.
    pub(crate) fn bytes(&self) -> usize {
        self.held
    }

    pub(crate) fn set_limit(&mut self, bytes: usize) {
        self.limit = bytes;
    }

    /// Drops a direction's state (connection closed or evicted).
    pub(crate) fn forget(&mut self, key: FlowKey) {
        if let Some(f) = self.flows.remove(&key) {
            self.held = self.held.saturating_sub(f.buf.len());
        }
    }

    /// Over the cap: every buffer goes (its directions lose framing and
    /// find it again), the memory budget being the harder limit.
    #[cold]
    fn shed(&mut self, seg: &TcpSegment<'_>) {
        for f in self.flows.values_mut() {
            f.skipped += f.buf.len() as u64;
            f.buf = Vec::new();
            f.phase = Phase::Lost;
            f.first_frame = seg.frame;
        }
        self.held = 0;
    }
}

impl Flow {
    /// A segment's payload into the stream, and what it completes out.
    fn data(&mut self, seg: &TcpSegment<'_>, from_mpa: bool, out: &mut Vec<Delivery>) {
        let next = *self.next.get_or_insert(seg.seq);
        let wire = seg.wire_len.max(seg.payload.len() as u32);
        // Signed distance: sequence numbers wrap.
        let ahead = seg.seq.wrapping_sub(next) as i32;
        let mut payload = seg.payload;
        let mut lacking = u64::from(wire) - seg.payload.len() as u64;
        if ahead < 0 {
            let old = ahead.unsigned_abs() as usize;
            if old >= wire as usize {
                return; // All of it delivered already: a retransmission.
            }
            payload = payload.get(old..).unwrap_or_default();
            lacking = lacking.saturating_sub(old.saturating_sub(seg.payload.len()) as u64);
        } else if ahead > 0 {
            out.push(Delivery::Gap {
                frame: seg.frame,
                ts: seg.ts,
                bytes: u64::from(ahead.unsigned_abs()),
            });
            self.lose();
        }
        self.next = Some(seg.seq.wrapping_add(wire));
        if self.buf.is_empty() {
            self.first_frame = seg.frame;
        }
        if from_mpa && ahead != 0 && self.phase == Phase::Lost {
            self.phase = Phase::Setup;
        }
        let mark = self.buf.len();
        self.buf.extend_from_slice(payload);
        self.frame(seg, mark, out);
        if lacking > 0 {
            out.push(Delivery::Gap {
                frame: seg.frame,
                ts: seg.ts,
                bytes: lacking,
            });
            self.lose();
        }
    }

    /// Framing is lost: what is buffered cannot be completed.
    fn lose(&mut self) {
        self.skipped += self.buf.len() as u64;
        self.buf.clear();
        self.phase = Phase::Lost;
    }

    /// Delivers every whole frame at the buffer's start. `mark` is where
    /// this segment's octets start in the buffer.
    fn frame(&mut self, seg: &TcpSegment<'_>, mut mark: usize, out: &mut Vec<Delivery>) {
        loop {
            let len = match self.phase {
                Phase::Setup => match mpa_len(&self.buf) {
                    Some(Ok(n)) => n,
                    Some(Err(())) => {
                        self.phase = Phase::Lost;
                        continue;
                    }
                    None => return,
                },
                Phase::Framed if self.markers => {
                    // Markers are not removed here: say so by the octets.
                    out.push(Delivery::Gap {
                        frame: seg.frame,
                        ts: seg.ts,
                        bytes: self.buf.len() as u64,
                    });
                    return self.buf.clear();
                }
                Phase::Framed => match fpdu_len(&self.buf) {
                    Some(n) => n,
                    None => return,
                },
                Phase::Lost => match self.resync() {
                    Some((certain, dropped)) => {
                        out.push(Delivery::Resync {
                            frame: seg.frame,
                            ts: seg.ts,
                            skipped: std::mem::take(&mut self.skipped),
                            certain,
                        });
                        mark = mark.saturating_sub(dropped);
                        continue;
                    }
                    None => return,
                },
            };
            if self.buf.len() < len {
                return;
            }
            let rest = self.buf.split_off(len);
            let bytes = std::mem::replace(&mut self.buf, rest);
            let (first_frame, frame, ts) = (self.first_frame, seg.frame, seg.ts);
            out.push(if self.phase == Phase::Setup {
                self.crc = bytes.get(16).is_some_and(|b| b & 0x40 != 0);
                self.markers = bytes.get(16).is_some_and(|b| b & 0x80 != 0);
                self.phase = Phase::Framed;
                Delivery::Mpa {
                    first_frame,
                    frame,
                    ts,
                    bytes,
                }
            } else {
                Delivery::Fpdu {
                    first_frame,
                    frame,
                    ts,
                    bytes,
                }
            });
            // Octets left over came from this segment once the older ones are gone.
            if len >= mark {
                self.first_frame = seg.frame;
            }
            mark = mark.saturating_sub(len);
        }
    }

    /// Looks for framing in a buffer that starts anywhere: an MPA key
    /// (certain), or an FPDU whose length leads to another plausible FPDU
    /// or exactly to the buffer's end. Drops what comes before it.
    fn resync(&mut self) -> Option<(bool, usize)> {
        let crc = self.crc;
        let found = (0..self.buf.len()).find_map(|at| {
            let b = self.buf.get(at..)?;
            if mpa::frame_kind(b).is_some() {
                return Some((at, true, Phase::Setup));
            }
            let n = plausible_fpdu(b)?;
            let next = b.get(n..)?;
            // With CRCs negotiated, a matching CRC32c is 32 bits of proof.
            if crc && crc_matches(b.get(..n)?) {
                return Some((at, true, Phase::Framed));
            }
            let follows = next.is_empty() || plausible_fpdu(next).is_some();
            follows.then_some((at, false, Phase::Framed))
        });
        let Some((at, certain, phase)) = found else {
            if self.buf.len() > LOST_WINDOW {
                let drop = self.buf.len() - LOST_WINDOW / 2;
                self.buf.drain(..drop);
                self.skipped += drop as u64;
            }
            return None;
        };
        self.buf.drain(..at);
        self.skipped += at as u64;
        self.phase = phase;
        Some((certain, at))
    }
}

/// The length of the MPA frame at the buffer's start, once its header is
/// there; `Err` when the buffer does not start with one.
fn mpa_len(buf: &[u8]) -> Option<Result<usize, ()>> {
    let head = buf.get(..mpa::FRAME_HEADER_LEN)?;
    if mpa::frame_kind(head).is_none() {
        return Some(Err(()));
    }
    let pd = u16::from_be_bytes([head[18], head[19]]);
    Some(Ok(mpa::FRAME_HEADER_LEN + usize::from(pd)))
}

/// Whether a whole FPDU's CRC field holds the CRC32c of its other octets.
fn crc_matches(fpdu: &[u8]) -> bool {
    let Some((body, tail)) = fpdu.split_last_chunk::<4>() else {
        return false;
    };
    crc32c::checksum(body) == crc32c::wire_value(*tail)
}

/// The length of the FPDU at the buffer's start, once its length field is
/// there. Its CRC field is always sent (RFC 5044 4.1), negotiated or not.
fn fpdu_len(buf: &[u8]) -> Option<usize> {
    let &[hi, lo] = buf.first_chunk::<2>()?;
    let ulpdu = u16::from_be_bytes([hi, lo]);
    Some(
        mpa::ULPDU_LENGTH_LEN
            + usize::from(ulpdu)
            + usize::from(mpa::pad_len(ulpdu))
            + mpa::CRC_LEN,
    )
}

/// The FPDU's length when the buffer's start reads as one: a DDP header
/// of version 1 with an RDMAP control octet of version 1 and a defined
/// opcode, and room for the header in the ULPDU.
fn plausible_fpdu(buf: &[u8]) -> Option<usize> {
    let &[hi, lo, ddp, rdmap] = buf.first_chunk::<4>()?;
    let ulpdu = usize::from(u16::from_be_bytes([hi, lo]));
    let tagged = ddp & 0x80 != 0;
    let header = if tagged { 14 } else { 18 };
    let opcode = rdmap & 0x0f;
    let ok = ddp & 0x03 == 1
        && ddp & 0x3c == 0
        && rdmap >> 6 == 1
        && rdmap & 0x30 == 0
        && opcode <= 7
        && tagged == matches!(opcode, 0 | 2)
        && ulpdu >= header;
    ok.then(|| fpdu_len(buf)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> FlowKey {
        FlowKey {
            src: "10.0.0.1:40000".parse().unwrap(),
            dst: "10.0.0.2:20049".parse().unwrap(),
        }
    }

    /// An untagged Send FPDU with `n` payload octets.
    fn fpdu(n: usize) -> Vec<u8> {
        let ulpdu = 18 + n;
        let mut v = (ulpdu as u16).to_be_bytes().to_vec();
        v.extend_from_slice(&[0x41, 0x43]);
        v.extend_from_slice(&[0; 16]);
        v.extend(std::iter::repeat_n(7, n));
        v.extend(std::iter::repeat_n(
            0,
            usize::from(mpa::pad_len(ulpdu as u16)),
        ));
        // The CRC field, sent whether or not CRCs were negotiated.
        v.extend_from_slice(&[0; 4]);
        v
    }

    fn mpa_request() -> Vec<u8> {
        let mut v = mpa::KEY_REQUEST.to_vec();
        v.extend_from_slice(&[0, 2, 0, 4, 0, 8, 0, 8]);
        v
    }

    fn seg(frame: u64, seq: u32, payload: &[u8]) -> TcpSegment<'_> {
        TcpSegment {
            frame,
            ts: frame * 10,
            seq,
            syn: false,
            fin: false,
            rst: false,
            payload,
            wire_len: payload.len() as u32,
        }
    }

    #[test]
    fn mpa_then_fpdus_across_segments() {
        let mut s = Streams::new();
        let mut out = Vec::new();
        let syn = TcpSegment {
            syn: true,
            ..seg(1, 99, &[])
        };
        s.segment(key(), &syn, &mut out);
        let mut stream = mpa_request();
        let (a, b) = (fpdu(5), fpdu(40));
        stream.extend_from_slice(&a);
        stream.extend_from_slice(&b);
        let cut = mpa_request().len() + a.len() + 3;
        s.segment(key(), &seg(2, 100, &stream[..cut]), &mut out);
        assert_eq!(s.bytes(), 3);
        s.segment(key(), &seg(3, 100 + cut as u32, &stream[cut..]), &mut out);
        assert_eq!(
            out,
            vec![
                Delivery::Mpa {
                    first_frame: 2,
                    frame: 2,
                    ts: 20,
                    bytes: mpa_request()
                },
                Delivery::Fpdu {
                    first_frame: 2,
                    frame: 2,
                    ts: 20,
                    bytes: a
                },
                Delivery::Fpdu {
                    first_frame: 2,
                    frame: 3,
                    ts: 30,
                    bytes: b
                },
            ]
        );
        assert_eq!(s.bytes(), 0);
    }

    #[test]
    fn retransmission_is_trimmed_and_a_hole_is_a_gap_then_resync() {
        let mut s = Streams::new();
        let mut out = Vec::new();
        let (a, b, c) = (fpdu(8), fpdu(12), fpdu(4));
        s.segment(key(), &seg(1, 1000, &a), &mut out);
        // Mid-stream start: found by plausibility, not certain.
        assert!(matches!(
            out.as_slice(),
            [
                Delivery::Resync {
                    skipped: 0,
                    certain: false,
                    ..
                },
                Delivery::Fpdu { .. }
            ]
        ));
        out.clear();
        s.segment(key(), &seg(2, 1000, &a), &mut out);
        assert!(out.is_empty(), "a retransmission delivers nothing: {out:?}");
        // `b` is missing; `c` arrives after the hole.
        let at = 1000 + (a.len() + b.len()) as u32;
        s.segment(key(), &seg(3, at, &c), &mut out);
        assert_eq!(
            out[0],
            Delivery::Gap {
                frame: 3,
                ts: 30,
                bytes: b.len() as u64
            }
        );
        assert!(matches!(out[1], Delivery::Resync { certain: false, .. }));
        assert!(matches!(&out[2], Delivery::Fpdu { bytes, .. } if *bytes == c));
    }

    #[test]
    fn a_cut_segment_is_a_gap_and_fin_and_rst_close() {
        let mut s = Streams::new();
        let mut out = Vec::new();
        let a = fpdu(100);
        let cut = TcpSegment {
            wire_len: a.len() as u32,
            fin: true,
            ..seg(1, 5, &a[..30])
        };
        s.segment(key(), &cut, &mut out);
        assert_eq!(
            out.last(),
            Some(&Delivery::Closed {
                frame: 1,
                ts: 10,
                reset: false
            })
        );
        assert!(out.contains(&Delivery::Gap {
            frame: 1,
            ts: 10,
            bytes: (a.len() - 30) as u64
        }));
        out.clear();
        let rst = TcpSegment {
            rst: true,
            ..seg(2, 0, &[])
        };
        s.segment(key(), &rst, &mut out);
        assert_eq!(
            out,
            vec![Delivery::Closed {
                frame: 2,
                ts: 20,
                reset: true
            }]
        );
        assert_eq!(s.bytes(), 0);
    }
}
