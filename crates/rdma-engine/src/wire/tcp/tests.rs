//! The reassembler on hand-built streams: each test states the stream the
//! sender wrote and checks what comes out against it.

use std::net::SocketAddr;

use rdma_dissectors::iwarp::{crc32c, mpa};

use super::{Delivery, FlowKey, Streams, TcpSegment};

fn key() -> FlowKey {
    FlowKey {
        src: SocketAddr::from(([10, 0, 0, 1], 40000)),
        dst: SocketAddr::from(([10, 0, 0, 2], 20049)),
    }
}

/// An MPA revision 2 frame with `pd` octets of private data after the
/// enhanced data.
fn mpa_frame(request: bool, markers: bool, crc: bool, pd: usize) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(if request {
        mpa::KEY_REQUEST
    } else {
        mpa::KEY_REPLY
    });
    f.push(u8::from(markers) << 7 | u8::from(crc) << 6);
    f.push(2);
    f.extend_from_slice(&((4 + pd) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 16, 0, 16]);
    f.extend((0..pd).map(|i| i as u8));
    f
}

/// An untagged Send FPDU (no CRC yet) with `data` octets of payload.
fn send_body(msn: u32, data: usize) -> Vec<u8> {
    let ulen = (18 + data) as u16;
    let mut f = ulen.to_be_bytes().to_vec();
    f.extend_from_slice(&[0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&msn.to_be_bytes());
    f.extend_from_slice(&0u32.to_be_bytes());
    f.extend((0..data).map(|i| (i as u8).wrapping_mul(7).wrapping_add(msn as u8)));
    f.resize(f.len() + usize::from(mpa::pad_len(ulen)), 0);
    f
}

/// A sender's stream after its MPA frame: FPDUs, CRCs and markers as
/// RFC 5044 sections 4.3 and 4.4 place them.
struct Sender {
    raw: Vec<u8>,
    /// The FPDUs, markers left out, as the receiver must get them.
    clean: Vec<Vec<u8>>,
    markers: bool,
    crc: bool,
}

impl Sender {
    fn new(markers: bool, crc: bool) -> Self {
        Sender {
            raw: Vec::new(),
            clean: Vec::new(),
            markers,
            crc,
        }
    }

    fn put(&mut self, bytes: &[u8], start: usize) {
        for &b in bytes {
            self.marker_if_due(start);
            self.raw.push(b);
        }
    }

    fn marker_if_due(&mut self, start: usize) {
        if self.markers && self.raw.len().is_multiple_of(512) {
            let ptr = (self.raw.len() - start) as u16;
            self.raw.extend_from_slice(&[0, 0]);
            self.raw.extend_from_slice(&ptr.to_be_bytes());
        }
    }

    fn fpdu(&mut self, body: &[u8], bad_crc: bool) {
        let start = self.raw.len();
        self.put(body, start);
        let mut clean = body.to_vec();
        // The CRC field is sent with or without CRCs (RFC 5044 section
        // 4.1); without them siw sends zeros.
        self.marker_if_due(start);
        let sum = if self.crc {
            crc32c::checksum(&self.raw[start..]) ^ u32::from(bad_crc)
        } else {
            0
        };
        self.put(&sum.to_le_bytes(), start);
        clean.extend_from_slice(&sum.to_le_bytes());
        self.clean.push(clean);
    }

    fn sends(&mut self, sizes: &[usize]) {
        for (i, &n) in sizes.iter().enumerate() {
            self.fpdu(&send_body(i as u32 + 1, n), false);
        }
    }
}

struct Feed {
    streams: Streams,
    out: Vec<Delivery>,
    frame: u64,
}

impl Feed {
    fn new() -> Self {
        Feed {
            streams: Streams::new(),
            out: Vec::new(),
            frame: 0,
        }
    }

    /// What the MPA exchange negotiated, as the engine tells it.
    fn negotiated(markers: bool, crc: bool) -> Self {
        let mut f = Feed::new();
        f.streams.negotiated(key(), markers, crc);
        f
    }

    fn seg(&mut self, seq: u32, payload: &[u8], syn: bool, fin: bool) {
        self.cut(seq, payload, payload.len(), syn, fin);
    }

    fn cut(&mut self, seq: u32, payload: &[u8], wire: usize, syn: bool, fin: bool) {
        self.frame += 1;
        let seg = TcpSegment {
            frame: self.frame,
            ts: self.frame * 1000,
            seq,
            syn,
            fin,
            rst: false,
            payload,
            wire_len: wire as u32,
        };
        self.streams.segment(key(), &seg, &mut self.out);
    }

    fn fpdus(&self) -> Vec<Vec<u8>> {
        self.out
            .iter()
            .filter_map(|d| match d {
                Delivery::Fpdu { bytes, .. } => Some(bytes.clone()),
                _ => None,
            })
            .collect()
    }

    /// Deliveries other than FPDUs, in order.
    fn events(&self) -> Vec<Delivery> {
        self.out
            .iter()
            .filter(|d| !matches!(d, Delivery::Fpdu { .. } | Delivery::Mpa { .. }))
            .cloned()
            .collect()
    }
}

/// SYN at `isn`, then the MPA frame and `stream` in segments of the
/// given sizes.
fn stream_in_pieces(isn: u32, stream: &[u8], pieces: &[usize], crc: bool) -> Feed {
    let mut f = Feed::negotiated(false, crc);
    f.seg(isn, &[], true, false);
    let mut seq = isn.wrapping_add(1);
    let mut rest = stream;
    for &n in pieces.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (a, b) = rest.split_at(n.min(rest.len()));
        f.seg(seq, a, false, false);
        seq = seq.wrapping_add(a.len() as u32);
        rest = b;
    }
    f
}

fn opening(markers: bool, crc: bool) -> Vec<u8> {
    mpa_frame(true, markers, crc, 24)
}

/// The stream a request side writes: its MPA frame (asking for `markers`
/// in what it receives, which the test's negotiation sets), then FPDUs.
fn request_stream(sender: &Sender) -> Vec<u8> {
    let mut s = opening(false, sender.crc);
    s.extend_from_slice(&sender.raw);
    s
}

#[test]
fn fpdus_across_and_within_segments_in_order() {
    let mut s = Sender::new(false, true);
    s.sends(&[100, 3000, 8, 9, 10, 600]);
    let stream = request_stream(&s);
    // 7-octet, 1000-octet and 1460-octet segments: the 3000-octet Send
    // spans three, the three small ones share one.
    for pieces in [&[7usize][..], &[1000], &[1460], &[stream.len()]] {
        let f = stream_in_pieces(7, &stream, pieces, true);
        assert_eq!(f.fpdus(), s.clean, "pieces {pieces:?}");
        let mpa: Vec<_> = f
            .out
            .iter()
            .filter(|d| matches!(d, Delivery::Mpa { .. }))
            .collect();
        assert_eq!(mpa.len(), 1);
        assert!(f.events().is_empty(), "{:?}", f.events());
    }
}

#[test]
fn first_and_last_frames_of_a_split_fpdu() {
    let mut s = Sender::new(false, true);
    s.sends(&[2000]);
    let stream = request_stream(&s);
    let f = stream_in_pieces(1, &stream, &[700], true);
    let Some(Delivery::Fpdu {
        first_frame,
        frame,
        ts,
        ..
    }) = f.out.iter().find(|d| matches!(d, Delivery::Fpdu { .. }))
    else {
        panic!("no FPDU in {:?}", f.out);
    };
    // SYN is frame 1; the MPA frame (48 octets) and the FPDU (2024) start
    // in frame 2 and end in frame 4.
    assert_eq!((*first_frame, *frame, *ts), (2, 4, 4000));
}

#[test]
fn sequence_numbers_wrap() {
    let mut s = Sender::new(false, true);
    s.sends(&[500, 500, 500, 500]);
    let stream = request_stream(&s);
    let f = stream_in_pieces(u32::MAX - 900, &stream, &[333], true);
    assert_eq!(f.fpdus(), s.clean);
    assert!(f.events().is_empty());
}

#[test]
fn duplicates_overlaps_and_a_filled_hole_deliver_each_octet_once() {
    let mut s = Sender::new(false, true);
    s.sends(&[300, 300, 300, 300]);
    let stream = request_stream(&s);
    let isn = 1000u32;
    let at = |o: usize| isn + 1 + o as u32;
    let mut f = Feed::negotiated(false, true);
    f.seg(isn, &[], true, false);
    f.seg(at(0), &stream[..400], false, false);
    f.seg(at(0), &stream[..400], false, false); // exact duplicate
    f.seg(at(200), &stream[200..600], false, false); // half old, half new
    f.seg(at(900), &stream[900..1100], false, false); // after a hole
    f.seg(at(1000), &stream[1000..1200], false, false); // overlapping the held piece
    f.seg(at(550), &stream[550..950], false, false); // the retransmission that fills the hole
    f.seg(at(1200), &stream[1200..], false, false);
    f.seg(at(1200), &stream[1200..], false, false);
    assert_eq!(f.fpdus(), s.clean);
    assert!(f.events().is_empty(), "{:?}", f.events());
    assert_eq!(f.streams.bytes(), 0);
}

#[test]
fn out_of_order_segments_wait_for_the_hole() {
    let mut s = Sender::new(false, false);
    s.sends(&[100, 100, 100]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(false, false);
    f.seg(0, &[], true, false);
    f.seg(201, &stream[200..], false, false);
    assert!(f.fpdus().is_empty());
    assert_eq!(f.streams.bytes(), stream.len() - 200 + super::ENTRY_COST);
    f.seg(1, &stream[..200], false, false);
    assert_eq!(f.fpdus(), s.clean);
    assert_eq!(f.streams.bytes(), 0);
}

/// A hole whose retransmission never comes (the capture dropped it) is
/// given up once the direction holds more than the limit: a gap of its
/// size, and framing resumes at the FPDU after it, whose start the cut
/// FPDU's length gives.
#[test]
fn the_bound_gives_up_the_oldest_hole() {
    let mut s = Sender::new(false, true);
    s.sends(&[1000; 12]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(false, true);
    f.streams.set_limit(4000);
    f.seg(0, &[], true, false);
    f.seg(1, &stream[..1500], false, false);
    // Octets 1500..2000 never arrive.
    for at in (2000..stream.len()).step_by(1000) {
        f.seg(
            1 + at as u32,
            &stream[at..(at + 1000).min(stream.len())],
            false,
            false,
        );
        assert!(f.streams.bytes() <= 4000, "{} held", f.streams.bytes());
    }
    let ev = f.events();
    assert!(matches!(ev[0], Delivery::Gap { bytes: 500, .. }), "{ev:?}");
    // The second FPDU (48 + 1024 .. 48 + 2048) lost its middle: what
    // came of it on both sides of the gap is skipped, and framing is
    // certain again at the third.
    let fpdu_len = s.clean[0].len();
    let skipped = (fpdu_len - 500) as u64;
    assert!(
        matches!(ev[1], Delivery::Resync { skipped: n, certain: true, .. } if n == skipped),
        "{ev:?}"
    );
    let got = f.fpdus();
    assert_eq!(got[0], s.clean[0]);
    assert_eq!(&got[1..], &s.clean[2..]);
}

#[test]
fn fin_past_a_hole_makes_it_a_gap_then_closes() {
    let mut s = Sender::new(false, false);
    s.sends(&[100, 100]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(false, false);
    f.seg(0, &[], true, false);
    f.seg(1, &stream[..50], false, false);
    let end = stream.len() as u32;
    f.seg(1 + end, &[], false, true);
    let ev = f.events();
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert!(matches!(ev[0], Delivery::Gap { bytes, .. } if bytes == u64::from(end) - 50));
    assert!(matches!(ev[1], Delivery::Closed { reset: false, .. }));
    assert_eq!(f.streams.bytes(), 0);
}

#[test]
fn a_reset_closes() {
    let mut f = Feed::new();
    f.seg(0, &[], true, false);
    f.seg(1, &opening(false, false), false, false);
    f.frame += 1;
    let seg = TcpSegment {
        frame: f.frame,
        ts: 0,
        seq: 999,
        syn: false,
        fin: false,
        rst: true,
        payload: &[],
        wire_len: 0,
    };
    f.streams.segment(key(), &seg, &mut f.out);
    assert!(matches!(
        f.events()[..],
        [Delivery::Closed { reset: true, .. }]
    ));
    // Nothing after it is framed.
    f.seg(49, &[0; 40], false, false);
    assert_eq!(f.events().len(), 1);
}

#[test]
fn a_snap_length_cut_is_a_gap_and_the_fpdu_length_resyncs() {
    let mut s = Sender::new(false, true);
    s.sends(&[1400, 1400, 1400]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(false, true);
    f.seg(0, &[], true, false);
    // The second segment kept 128 of its 300 octets; the first FPDU
    // (48..1472) goes on past them.
    f.seg(1, &stream[..1000], false, false);
    f.cut(1001, &stream[1000..1128], 300, false, false);
    f.seg(1301, &stream[1300..], false, false);
    let ev = f.events();
    // Skipped: the 1080 octets of the first FPDU before the gap, 172 after.
    assert!(
        matches!(
            ev[..],
            [
                Delivery::Gap {
                    bytes: 172,
                    frame: 3,
                    ..
                },
                Delivery::Resync {
                    certain: true,
                    skipped: 1252,
                    frame: 4,
                    ..
                }
            ]
        ),
        "{ev:?}"
    );
    assert_eq!(f.fpdus(), s.clean[1..]);
}

/// A capture that starts inside an FPDU: the hunt passes over octets
/// until two FPDUs in a row are plausible, certain only when their CRCs
/// check.
#[test]
fn a_mid_stream_start_is_found_again() {
    for crc in [true, false] {
        let mut s = Sender::new(false, crc);
        s.sends(&[300, 20, 700, 64, 64]);
        let from = 150; // inside the first FPDU
        let mut f = Feed::new();
        f.seg(5000, &s.raw[from..], false, false);
        let ev = f.events();
        let skipped = (s.clean[0].len() - from) as u64;
        assert!(
            matches!(ev[..], [Delivery::Resync { skipped: n, certain, .. }] if n == skipped && certain == crc),
            "crc {crc}: {ev:?}"
        );
        assert_eq!(f.fpdus(), s.clean[1..], "crc {crc}");
    }
}

/// A mid-stream start on a stream with markers, fed in 700-octet
/// segments: the reader finds the markers from the FPDUs that carry one
/// and delivers every FPDU after the start, markers out; certain only with
/// CRCs to confirm the boundary.
#[test]
fn a_mid_stream_start_finds_markers_in_the_fpdus() {
    for crc in [true, false] {
        let mut s = Sender::new(true, crc);
        s.sends(&[300, 20, 700, 64, 1500, 30, 600, 40, 40, 200, 900, 24]);
        let from = 150;
        let mut f = Feed::new();
        for (i, chunk) in s.raw[from..].chunks(700).enumerate() {
            f.seg(5000 + (i * 700) as u32, chunk, false, false);
        }
        let ev = f.events();
        assert!(
            matches!(ev[..], [Delivery::Resync { certain, .. }] if certain == crc),
            "crc {crc}: {ev:?}"
        );
        assert_eq!(f.fpdus(), s.clean[1..], "crc {crc}");
    }
}

/// Without markers, a data word that looks like one (reserved half zero,
/// FPDUPTR its own distance back to its FPDU's start) does not make the
/// reader take it for one: the reading without markers holds.
#[test]
fn a_marker_lookalike_in_data_is_data() {
    for crc in [true, false] {
        let mut s = Sender::new(false, crc);
        let mut body = send_body(1, 400);
        // Octet 100 of the FPDU: 0x0000_0064, as a marker there would be.
        body.splice(100..104, [0, 0, 0, 100]);
        s.fpdu(&send_body(9, 200), false);
        s.fpdu(&body, false);
        s.sends(&[300, 20, 700, 64, 64]);
        let from = 50;
        let mut f = Feed::new();
        f.seg(5000, &s.raw[from..], false, false);
        assert_eq!(f.fpdus(), s.clean[1..], "crc {crc}");
    }
}

#[test]
fn a_mid_stream_start_at_the_mpa_frame_is_read_from_it() {
    let mut s = Sender::new(false, true);
    s.sends(&[64, 64]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(false, true);
    f.seg(77, &stream, false, false);
    assert_eq!(f.fpdus(), s.clean);
    assert!(f.events().is_empty());
}

#[test]
fn markers_are_taken_out_and_the_crc_covers_them() {
    let mut s = Sender::new(true, true);
    s.sends(&[100, 1500, 490, 3, 2000, 506, 506, 506]);
    let stream = request_stream(&s);
    let f = {
        let mut f = Feed::negotiated(true, true);
        f.seg(0, &[], true, false);
        let mut at = 0;
        while at < stream.len() {
            let end = (at + 777).min(stream.len());
            f.seg(1 + at as u32, &stream[at..end], false, false);
            at = end;
        }
        f
    };
    assert_eq!(f.fpdus(), s.clean);
    for d in &f.out {
        if let Delivery::Fpdu {
            bytes,
            crc_with_markers,
            ..
        } = d
        {
            let tail = bytes[bytes.len() - 4..].try_into().unwrap();
            assert_eq!(*crc_with_markers, Some(crc32c::wire_value(tail)));
        }
    }
    assert!(f.events().is_empty(), "{:?}", f.events());
}

#[test]
fn after_a_gap_a_marker_points_at_the_next_fpdu() {
    let mut s = Sender::new(true, false);
    s.sends(&[40; 40]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(true, false);
    f.seg(0, &[], true, false);
    f.seg(1, &stream[..300], false, false);
    // 300..700 lost at a boundary no length gives: octets 1000.. arrive,
    // and the FIN makes the hole a gap.
    f.seg(701, &stream[700..], false, false);
    f.seg(1 + stream.len() as u32, &[], false, true);
    let ev = f.events();
    assert!(matches!(ev[0], Delivery::Gap { bytes: 400, .. }), "{ev:?}");
    assert!(
        matches!(ev[1], Delivery::Resync { certain: true, .. }),
        "{ev:?}"
    );
    let got = f.fpdus();
    // Every FPDU delivered is one the sender wrote, the last ones all.
    assert!(got.iter().all(|g| s.clean.contains(g)));
    assert_eq!(got.last(), s.clean.last());
    assert!(
        got.len() >= s.clean.len() - 12,
        "{} of {}",
        got.len(),
        s.clean.len()
    );
}

#[test]
fn a_wrong_crc_in_step_is_delivered_as_sent() {
    let mut s = Sender::new(false, true);
    s.sends(&[64]);
    s.fpdu(&super::tests::send_body(2, 64), true);
    s.sends(&[64]);
    let stream = request_stream(&s);
    let f = stream_in_pieces(0, &stream, &[1460], true);
    assert_eq!(f.fpdus(), s.clean);
    assert!(f.events().is_empty());
}

#[test]
fn a_segment_far_ahead_gives_up_the_hole() {
    let mut s = Sender::new(false, false);
    s.sends(&[64, 64]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(false, false);
    f.streams.set_limit(1 << 20);
    f.seg(0, &[], true, false);
    f.seg(1, &stream, false, false);
    f.seg(
        1 + stream.len() as u32 + (2 << 20),
        &[1, 2, 3],
        false,
        false,
    );
    let ev = f.events();
    assert!(
        matches!(ev[..], [Delivery::Gap { bytes, .. }] if bytes == 2 << 20),
        "{ev:?}"
    );
}

#[test]
fn forget_frees_what_a_direction_held() {
    let mut f = Feed::new();
    f.seg(0, &[], true, false);
    f.seg(500, &[7; 300], false, false);
    assert_eq!(f.streams.bytes(), 300 + super::ENTRY_COST);
    f.streams.forget(key());
    assert_eq!(f.streams.bytes(), 0);
}

#[test]
fn the_fuzz_entry_keeps_to_its_limit() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..300 {
        let data: Vec<u8> = (0..3000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        super::fuzz_tcp_stream(&data);
    }
}

#[test]
fn an_acknowledged_hole_is_given_up_at_once() {
    let mut s = Sender::new(false, true);
    s.sends(&[100, 100, 100, 100]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(false, true);
    f.seg(0, &[], true, false);
    let second = 48 + s.clean[0].len();
    let third = second + s.clean[1].len();
    f.seg(1, &stream[..second], false, false);
    f.seg(1 + third as u32, &stream[third..], false, false);
    assert!(f.events().is_empty());
    // The receiver acknowledges all of it: the second FPDU reached it,
    // not the capture.
    f.frame += 1;
    f.streams
        .acked(key(), 1 + stream.len() as u32, f.frame, 0, &mut f.out);
    let ev = f.events();
    assert!(
        matches!(ev[..], [Delivery::Gap { bytes, frame: 3, .. }, Delivery::Resync { skipped: 0, certain: true, .. }] if bytes == s.clean[1].len() as u64),
        "{ev:?}"
    );
    assert_eq!(f.fpdus(), [&s.clean[..1], &s.clean[2..]].concat());
    // An acknowledgement of what was delivered changes nothing.
    f.streams
        .acked(key(), 1 + stream.len() as u32, f.frame, 0, &mut f.out);
    assert_eq!(f.events().len(), 2);
}

/// Out-of-order segments of one octet each cost their entries, not just
/// their octets: the limit holds them to what it says, and the oldest hole
/// is given up rather than holding a hundred times the limit.
#[test]
fn one_octet_segments_count_their_entries_against_the_limit() {
    let mut s = Sender::new(false, false);
    s.sends(&[4000]);
    let stream = request_stream(&s);
    let mut f = Feed::negotiated(false, false);
    let limit = 16 * 1024;
    f.streams.set_limit(limit);
    f.seg(0, &[], true, false);
    // Octet 0 never comes; every other octet after it comes alone.
    for at in (2..stream.len()).step_by(2) {
        f.seg(1 + at as u32, &stream[at..at + 1], false, false);
        assert!(
            f.streams.bytes() <= limit,
            "{} > {limit}",
            f.streams.bytes()
        );
    }
    assert!(
        f.events().iter().any(|d| matches!(d, Delivery::Gap { .. })),
        "the bound gave up a hole"
    );
}

/// What a hostile stream costs the hunt: every octet 0x41, so that every
/// position reads as an FPDU header (DDP and RDMAP version 1, a Read
/// Request) with a ULPDU_Length of 16705, and every candidate pair asks
/// for 33 KiB of parsing and CRC. `pieces` sizes the segments (cycled).
fn hostile(f: &mut Feed, total: usize, pieces: &[usize]) -> u64 {
    let stream = vec![0x41u8; total];
    let mut at = 0;
    for &n in pieces.iter().cycle() {
        if at >= total {
            break;
        }
        let end = (at + n).min(total);
        f.seg(7000 + at as u32, &stream[at..end], false, false);
        at = end;
    }
    f.streams.search_work(key())
}

/// After a mid-stream start (the same after a gap: both hunt), the hunt
/// parses and CRCs at most 64 octets per octet received, plus one
/// candidate's overrun (a pair read both ways, with markers or without),
/// whether markers and CRCs are known or not and however the octets are
/// cut: a stream that looks like FPDU headers everywhere costs linear
/// work. In 64 KB segments (a capture after receive offload) every
/// candidate's pair is buffered when it is scanned, and only the credit
/// stops the hunt from reading each one's 33 KiB; in small segments the
/// scan reaches the end first and the candidates wait.
#[test]
fn the_hunt_works_at_most_64_octets_per_octet_received() {
    // A candidate read both ways, markers or not: what one may overrun.
    const PAIR: u64 = 2 * 4 * (16_712 + 16_712 + 516);
    for (total, pieces) in [
        (400_000, &[65_000][..]),
        (60_000, &[1448][..]),
        (20_000, &[1][..]),
        (60_000, &[1, 7, 300, 1448, 2][..]),
    ] {
        for negotiated in [None, Some((false, true)), Some((false, false))] {
            let mut f = match negotiated {
                Some((markers, crc)) => Feed::negotiated(markers, crc),
                None => Feed::new(),
            };
            let work = hostile(&mut f, total, pieces);
            let what = format!("{pieces:?} {negotiated:?}");
            assert!(
                work <= 64 * total as u64 + PAIR,
                "{what}: {work} octets of work for {total} received"
            );
            if pieces == [65_000] {
                // Candidates were read whole (a pair is 33 KiB), as many as
                // the credit allowed: reading every one would cost 13 G.
                assert!(work >= 33_000, "{what}: {work}");
            }
            assert!(f.fpdus().is_empty(), "{what}");
        }
    }
}

/// The bound does not starve a real stream: after a gap (a lost segment
/// the receiver acknowledged), the hunt finds the FPDUs again and every
/// one after the gap is delivered.
#[test]
fn the_hunt_still_resyncs_after_a_gap() {
    for crc in [true, false] {
        let mut s = Sender::new(false, crc);
        s.sends(&[300, 20, 700, 64, 1500, 30, 600, 40, 40, 200, 900, 24]);
        let stream = request_stream(&s);
        let mpa = stream.len() - s.raw.len();
        let mut f = Feed::negotiated(false, crc);
        f.seg(0, &[], true, false);
        // The MPA frame and the first FPDU whole, then 100 octets lost:
        // the second FPDU (44 octets) and the start of the third, whose
        // length was never read.
        let first = mpa + s.clean[0].len();
        f.seg(1, &stream[..first], false, false);
        let resume = first + 100;
        for (i, chunk) in stream[resume..].chunks(500).enumerate() {
            f.seg((1 + resume + i * 500) as u32, chunk, false, false);
        }
        f.streams
            .acked(key(), (1 + stream.len()) as u32, 99, 99, &mut f.out);
        let ev = f.events();
        assert!(
            matches!(ev[..], [Delivery::Gap { bytes: 100, .. }, Delivery::Resync { certain, .. }] if certain == crc),
            "crc {crc}: {ev:?}"
        );
        // The hunt finds the fourth FPDU, and every one after it.
        let mut want = vec![s.clean[0].clone()];
        want.extend_from_slice(&s.clean[3..]);
        let lens = |v: &[Vec<u8>]| v.iter().map(Vec::len).collect::<Vec<_>>();
        assert_eq!(lens(&f.fpdus()), lens(&want), "crc {crc}: {ev:?}");
        assert!(f.fpdus() == want, "crc {crc}");
        assert!(f.streams.search_work(key()) > 0, "crc {crc}");
    }
}

/// Sends of `sizes` with markers, the raw offset each FPDU starts at.
fn marked_sends(crc: bool, sizes: &[usize]) -> (Sender, Vec<usize>) {
    let mut s = Sender::new(true, crc);
    let mut starts = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        starts.push(s.raw.len());
        s.fpdu(&send_body(i as u32 + 1, n), false);
    }
    (s, starts)
}

/// A mid-stream start whose FPDUs showed no marker yet, then an FPDU whose
/// marker is its last four octets but one word (or two) of the length it
/// would have without it, fed in a segment that ends there: the scan sees
/// the marker in what is buffered and the FPDU is read with it. FPDUs are
/// padded to four octets (RFC 5044 section 4.1) and markers sit four-aligned
/// from the first, so a marker never starts one to three octets before that
/// end, where the buffered octets would cut it.
#[test]
fn a_marker_in_the_last_octets_of_an_fpdu_is_found() {
    for crc in [true, false] {
        for lead in [4usize, 8] {
            // FPDU 3 straddles stream octet 512, the marker there `lead`
            // octets before the end the FPDU would have without it.
            let (s, starts, plain) = (0..400)
                .find_map(|x| {
                    let (s, starts) = marked_sends(crc, &[300, 20, x, 40, 64, 700]);
                    let plain = s.clean[3].len();
                    (starts[3] + plain == 512 + lead).then_some((s, starts, plain))
                })
                .expect("a size puts the marker there");
            let from = 150;
            let cut = starts[3] + plain;
            let mut f = Feed::new();
            f.seg(5000, &s.raw[from..cut], false, false);
            f.seg(5000 + (cut - from) as u32, &s.raw[cut..], false, false);
            let ev = f.events();
            assert!(
                matches!(ev[..], [Delivery::Resync { .. }]),
                "crc {crc} lead {lead}: {ev:?}"
            );
            assert_eq!(f.fpdus(), s.clean[1..], "crc {crc} lead {lead}");
        }
    }
}

/// A mid-stream start whose FPDUs showed no marker yet, then a short FPDU
/// that starts at a marker (FPDUPTR 0, a zero word): without CRCs only the
/// headers tell it from an FPDU of length 0, and they do (none is
/// plausible at the zero word, both after the marker are), so that Send
/// is read with its marker, not lost.
#[test]
fn a_short_fpdu_led_by_its_marker_is_read_without_crcs() {
    for crc in [false, true] {
        let (s, starts) = (0..400)
            .map(|x| marked_sends(crc, &[300, 20, x, 40, 64, 700]))
            .find(|(_, starts)| starts[3] == 512)
            .expect("a size starts FPDU 3 at the marker");
        assert_eq!(s.raw[512..516], [0, 0, 0, 0]);
        let from = 150;
        let mut f = Feed::new();
        for (i, chunk) in s.raw[from..].chunks(300).enumerate() {
            f.seg(5000 + (i * 300) as u32, chunk, false, false);
        }
        let ev = f.events();
        assert!(
            matches!(ev[..], [Delivery::Resync { .. }]),
            "crc {crc}: {ev:?}"
        );
        assert_eq!(f.fpdus(), s.clean[1..], "crc {crc}");
        assert!(
            starts[3] - starts[1] < 512,
            "markers undecided until FPDU 3"
        );
    }
}

/// The bound holds on the marker path too, and for the candidates that
/// wait: 64 hunt candidates, each a plausible header whose FPDU runs to
/// the same point 65 000 octets on and holds a word that reads as its
/// marker (FPDUPTR 508), are all pending after the first segment (their
/// FPDUs are not here: free to look at). Then the FPDUs come in one
/// segment and the octets after them one per segment: each candidate's
/// reading with markers waits for the header after its FPDU, and must not
/// strip its 65 000 octets again on every segment while it does, nor CRC
/// them uncharged because it waited.
#[test]
fn waiting_candidates_with_markers_keep_to_the_bound() {
    const END: usize = 65_000;
    const TOTAL: usize = END + 700;
    // One candidate's reading both ways, with and without CRCs: what the
    // last one may overrun.
    const ONE: u64 = 8 * 65_540;
    let mut stream = vec![0xffu8; TOTAL];
    for j in 0..64 {
        let p = 8 * j;
        let ulen = (END - p - 6) as u16;
        stream[p..p + 2].copy_from_slice(&ulen.to_be_bytes());
        stream[p + 2..p + 4].copy_from_slice(&[0x41, 0x41]);
        stream[p + 508..p + 512].copy_from_slice(&[0, 0, 0x01, 0xfc]);
    }
    let mut f = Feed::new();
    f.seg(7000, &stream[..1100], false, false);
    f.seg(7000 + 1100, &stream[1100..END + 400], false, false);
    for at in END + 400..TOTAL {
        f.seg(7000 + at as u32, &stream[at..=at], false, false);
    }
    let work = f.streams.search_work(key());
    assert!(
        work <= 64 * TOTAL as u64 + ONE,
        "{work} octets of work for {TOTAL} received"
    );
    // The waiting candidates were read as far as the credit went: the FPDUs'
    // segment brought the most credit saved up (two of the largest pairs).
    assert!(work >= 4 * 65_540, "{work}");
    assert!(f.fpdus().is_empty());
}
