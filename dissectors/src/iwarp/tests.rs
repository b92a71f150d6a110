//! Hand-built iWARP frames, field by field from RFC 5044/6581/5041/5040.

use super::crc32c;
use super::ddp::{DdpHeader, Placement, TAGGED_LEN, UNTAGGED_LEN};
use super::mpa::{self, CrcStatus, Fpdu, FrameKind, RequestReply};
use super::rdmap::{Body, Opcode, Segment, TermLayer};
use crate::error::Error;
use crate::layer::Layer;
use crate::rpcrdma::{Proc, Xid};
use crate::rpcrdma_cm::CmPrivateData;

/// A setup frame: key, flag octet, revision, private data.
fn setup(key: &[u8; 16], bits: u8, rev: u8, pd: &[u8]) -> Vec<u8> {
    let mut f = key.to_vec();
    f.push(bits);
    f.push(rev);
    f.extend_from_slice(&(pd.len() as u16).to_be_bytes());
    f.extend_from_slice(pd);
    f
}

/// The RFC 8797 message: 4 KiB send and receive, remote invalidation.
const RPCRDMA_CM: [u8; 8] = [0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3];

#[test]
fn mpa_v1_request_with_rpcrdma_private_data() {
    let mut f = setup(mpa::KEY_REQUEST, 0x40, 1, &RPCRDMA_CM);
    f.extend_from_slice(b"next");
    assert_eq!(mpa::frame_kind(&f), Some(FrameKind::Request));
    let (r, rest) = RequestReply::parse(&f).unwrap();
    assert_eq!(r.kind, FrameKind::Request);
    assert!(!r.markers && r.crc && !r.reject);
    assert_eq!((r.revision, r.pd_length, r.enhanced), (1, 8, None));
    assert_eq!(rest, b"next");
    let (off, m) = r.rpcrdma().unwrap();
    assert_eq!(off, 0);
    let CmPrivateData::V1(v1) = m else {
        panic!("{m:?}")
    };
    assert_eq!(
        (v1.send_size, v1.recv_size, v1.remote_invalidate),
        (4096, 4096, true)
    );
}

#[test]
fn mpa_v2_reply_enhanced_data_and_reject() {
    // P set, IRD 16; Read RTR, ORD 8; then the RFC 8797 message.
    let mut pd = vec![0x80, 0x10, 0x40, 0x08];
    pd.extend_from_slice(&RPCRDMA_CM);
    let f = setup(mpa::KEY_REPLY, 0xa0 | 0x03, 2, &pd);
    let (r, rest) = RequestReply::parse(&f).unwrap();
    assert_eq!(r.kind, FrameKind::Reply);
    assert!(r.markers && !r.crc && r.reject);
    assert_eq!(r.reserved, 0x03);
    let e = r.enhanced.unwrap();
    assert!(e.peer_to_peer && !e.send_rtr && !e.write_rtr && e.read_rtr);
    assert_eq!((e.ird, e.ord), (16, 8));
    assert_eq!(r.private_data, &RPCRDMA_CM);
    assert!(r.rpcrdma().is_some());
    assert!(rest.is_empty());
}

#[test]
fn mpa_setup_errors_name_field_and_offset() {
    let bad_key = setup(b"MPA ID Xxx Frame", 0, 1, &[]);
    assert!(matches!(
        RequestReply::parse(&bad_key),
        Err(Error::BadField {
            layer: Layer::Mpa,
            offset: 0,
            field: "key",
            ..
        })
    ));
    let bad_rev = setup(mpa::KEY_REQUEST, 0, 3, &[]);
    assert!(matches!(
        RequestReply::parse(&bad_rev),
        Err(Error::BadField {
            offset: 17,
            field: "rev",
            value: 3,
            ..
        })
    ));
    let short_v2 = setup(mpa::KEY_REQUEST, 0, 2, &[0, 1]);
    assert!(matches!(
        RequestReply::parse(&short_v2),
        Err(Error::BadField {
            offset: 18,
            field: "pd_length",
            value: 2,
            ..
        })
    ));
    let too_long = setup(mpa::KEY_REQUEST, 0, 1, &[0; 513]);
    assert!(matches!(
        RequestReply::parse(&too_long),
        Err(Error::BadField {
            field: "pd_length",
            value: 513,
            ..
        })
    ));
    let mut cut = setup(mpa::KEY_REQUEST, 0, 1, &RPCRDMA_CM);
    cut.truncate(24);
    assert!(matches!(
        RequestReply::parse(&cut),
        Err(Error::Truncated {
            offset: 20,
            needed: 8,
            available: 4,
            ..
        })
    ));
    assert_eq!(mpa::frame_kind(b"MPA ID Req Fram"), None);
}

/// An FPDU around `ulpdu`, with a CRC when `crc`.
fn fpdu(ulpdu: &[u8], crc: bool) -> Vec<u8> {
    let mut f = (ulpdu.len() as u16).to_be_bytes().to_vec();
    f.extend_from_slice(ulpdu);
    f.resize(f.len() + usize::from(mpa::pad_len(ulpdu.len() as u16)), 0);
    // Without CRCs the field is still sent (RFC 5044 section 4.1), as
    // zeros by siw; it is not checked, so anything would do.
    let c = if crc { crc32c::checksum(&f) } else { 0 };
    f.extend_from_slice(&c.to_le_bytes());
    f
}

#[test]
fn fpdu_pad_and_crc() {
    assert_eq!(
        (
            mpa::pad_len(2),
            mpa::pad_len(3),
            mpa::pad_len(4),
            mpa::pad_len(5)
        ),
        (0, 3, 2, 1)
    );
    let mut two = fpdu(b"abcde", true);
    two.extend_from_slice(&fpdu(b"xy", true));
    let (a, rest) = Fpdu::parse(&two, true).unwrap();
    assert_eq!(
        (a.ulpdu, a.pad, a.crc, a.len()),
        (&b"abcde"[..], 1, CrcStatus::Valid, 12)
    );
    let (b, rest) = Fpdu::parse(rest, true).unwrap();
    assert_eq!((b.ulpdu, b.pad, b.crc), (&b"xy"[..], 0, CrcStatus::Valid));
    assert!(rest.is_empty());

    let mut bad = fpdu(b"abcde", true);
    bad[3] ^= 1;
    let (f, _) = Fpdu::parse(&bad, true).unwrap();
    assert!(matches!(f.crc, CrcStatus::Invalid { found, computed } if found != computed));

    let plain = fpdu(b"abcd", false);
    let (p, rest) = Fpdu::parse(&plain, false).unwrap();
    assert_eq!(
        (p.crc, p.len(), rest.len()),
        (CrcStatus::NotNegotiated, 12, 0)
    );
    assert!(matches!(
        Fpdu::parse(&plain[..5], false),
        Err(Error::Truncated {
            layer: Layer::Mpa,
            offset: 2,
            needed: 4,
            ..
        })
    ));
}

/// A stream of `data` with a marker at every 512th octet from offset 0;
/// each marker's FPDUPTR is its offset as a u16, to tell them apart.
fn with_markers(data: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    for b in data {
        if (s.len() as u64).is_multiple_of(mpa::MARKER_INTERVAL) {
            let ptr = s.len() as u16;
            s.extend_from_slice(&[0, 0]);
            s.extend_from_slice(&ptr.to_be_bytes());
        }
        s.push(*b);
    }
    s
}

#[test]
fn markers_stripped_across_segment_boundaries() {
    let data: Vec<u8> = (0..1500u32).map(|i| (i % 251) as u8).collect();
    let stream = with_markers(&data);
    assert_eq!(stream.len(), 1500 + 3 * 4);
    let mut out = vec![0u8; stream.len()];
    let whole = mpa::strip_markers(0, &stream, &mut out).unwrap();
    assert_eq!(
        (whole.written, whole.markers, whole.last_fpdu_ptr),
        (1500, 3, Some(1024))
    );
    assert_eq!(&out[..1500], &data[..]);

    // Segments cut inside the second marker: 514 ends two octets into it.
    for cut in [1, 511, 512, 513, 514, 515, 516, 1030] {
        let mut out = vec![0u8; stream.len()];
        let a = mpa::strip_markers(0, &stream[..cut], &mut out).unwrap();
        let b = mpa::strip_markers(cut as u64, &stream[cut..], &mut out[a.written..]).unwrap();
        assert_eq!(a.written + b.written, 1500, "cut at {cut}");
        assert_eq!(&out[..1500], &data[..], "cut at {cut}");
    }
    let mut small = [0u8; 100];
    assert!(matches!(
        mpa::strip_markers(0, &stream, &mut small),
        Err(Error::LimitExceeded {
            layer: Layer::Mpa,
            limit: 100,
            ..
        })
    ));
}

/// An untagged DDP header with RDMAP control for `opcode`.
fn untagged(opcode: u8, last: bool, inv: u32, qn: u32, msn: u32, mo: u32) -> Vec<u8> {
    let mut h = vec![if last { 0x41 } else { 0x01 }, 0x40 | opcode];
    for w in [inv, qn, msn, mo] {
        h.extend_from_slice(&w.to_be_bytes());
    }
    h
}

#[test]
fn tagged_write_segment() {
    let mut s = vec![0xc1, 0x40, 0, 0, 0x12, 0x34];
    s.extend_from_slice(&0x1000u64.to_be_bytes());
    s.extend_from_slice(b"data");
    let (h, payload) = DdpHeader::parse(&s).unwrap();
    assert!(h.tagged() && h.last);
    assert_eq!(h.len(), TAGGED_LEN);
    assert_eq!(
        h.placement,
        Placement::Tagged {
            stag: 0x1234,
            to: 0x1000
        }
    );
    assert_eq!(payload, b"data");
    let seg = Segment::parse(&s).unwrap();
    assert_eq!(
        (seg.opcode, seg.opcode.name()),
        (Opcode::Write, "RDMA Write")
    );
    assert_eq!(seg.body, Body::Data(b"data"));
    assert!(seg.rpcrdma().is_none());
}

/// RDMA_MSG, XID 0x6d7a4c01, version 1, 128 credits, no chunks.
const RPCRDMA_MSG: [u8; 28] = [
    0x6d, 0x7a, 0x4c, 0x01, 0, 0, 0, 1, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0,
];

#[test]
fn send_with_invalidate_carries_rpcrdma() {
    let mut s = untagged(4, true, 0xabcd, 0, 1, 0);
    s.extend_from_slice(&RPCRDMA_MSG);
    let seg = Segment::parse(&s).unwrap();
    assert_eq!(seg.opcode, Opcode::SendInvalidate);
    assert_eq!(seg.invalidate_stag, Some(0xabcd));
    assert_eq!(seg.ddp.len(), UNTAGGED_LEN);
    let h = seg.rpcrdma().unwrap().unwrap();
    assert_eq!(
        (h.xid, h.proc, h.credits),
        (Xid(0x6d7a4c01), Proc::Msg, 128)
    );

    // A later segment of the same message has no header to read.
    let mut later = untagged(3, true, 0, 0, 1, 4096);
    later.extend_from_slice(&RPCRDMA_MSG);
    let seg = Segment::parse(&later).unwrap();
    assert_eq!(seg.invalidate_stag, None);
    assert!(seg.rpcrdma().is_none());

    // A cut RPC-over-RDMA header is reported at its frame offset.
    let mut cut = untagged(3, true, 0, 0, 1, 0);
    cut.extend_from_slice(&RPCRDMA_MSG[..10]);
    let err = Segment::parse(&cut)
        .unwrap()
        .rpcrdma()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Truncated {
                layer: Layer::RpcRdma,
                offset: 26,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn read_request_fields() {
    let mut s = untagged(1, true, 0, 1, 7, 0);
    for w in [
        0x11u32.to_be_bytes().to_vec(),
        0x2000u64.to_be_bytes().to_vec(),
        8192u32.to_be_bytes().to_vec(),
        0x33u32.to_be_bytes().to_vec(),
        0x4000u64.to_be_bytes().to_vec(),
    ] {
        s.extend_from_slice(&w);
    }
    let seg = Segment::parse(&s).unwrap();
    let Body::ReadRequest(r) = seg.body else {
        panic!("{:?}", seg.body)
    };
    assert_eq!(
        (r.sink_stag, r.sink_to, r.size, r.source_stag, r.source_to),
        (0x11, 0x2000, 8192, 0x33, 0x4000)
    );
    assert!(matches!(
        Segment::parse(&s[..30]),
        Err(Error::Truncated {
            layer: Layer::Rdmap,
            offset: 30,
            needed: 4,
            ..
        })
    ));
}

#[test]
fn terminate_with_header_copies() {
    let mut s = untagged(7, true, 0, 2, 1, 0);
    // Layer RDMAP, EType 1 (remote protection), code 0 (invalid STag), M D R.
    s.extend_from_slice(&[0x01, 0x00, 0xe0, 0x00]);
    s.extend_from_slice(&100u16.to_be_bytes());
    let copied = untagged(1, true, 0, 1, 3, 0);
    s.extend_from_slice(&copied);
    s.extend_from_slice(&[0u8; 28]);
    let seg = Segment::parse(&s).unwrap();
    let Body::Terminate(t) = seg.body else {
        panic!("{:?}", seg.body)
    };
    assert_eq!((t.layer, t.etype, t.code), (TermLayer::Rdmap, 1, 0));
    assert_eq!(
        t.error_name(),
        Some("Remote Protection Error: Invalid STag")
    );
    assert_eq!(t.ddp_segment_length, Some(100));
    assert!(matches!(
        t.ddp_header.unwrap().placement,
        Placement::Untagged { qn: 1, msn: 3, .. }
    ));
    assert_eq!(t.rdma_header.unwrap().size, 0);
    assert!(t.rest.is_empty());

    let mut llp = untagged(7, true, 0, 2, 1, 0);
    llp.extend_from_slice(&[0x20, 0x02, 0x00, 0x00]);
    let Body::Terminate(t) = Segment::parse(&llp).unwrap().body else {
        panic!()
    };
    assert_eq!(
        (t.layer.name(), t.error_name()),
        ("LLP", Some("MPA: CRC error"))
    );
}

#[test]
fn rdmap_and_ddp_errors() {
    let mut v0 = untagged(3, true, 0, 0, 1, 0);
    v0[0] = 0x40; // DV 0
    assert!(matches!(
        Segment::parse(&v0),
        Err(Error::BadField {
            layer: Layer::Ddp,
            field: "dv",
            value: 0,
            ..
        })
    ));
    let mut rv2 = untagged(3, true, 0, 0, 1, 0);
    rv2[1] = 0x83;
    assert!(matches!(
        Segment::parse(&rv2),
        Err(Error::BadField {
            layer: Layer::Rdmap,
            field: "rv",
            value: 2,
            ..
        })
    ));
    let atomic = untagged(8, true, 0, 0, 1, 0);
    assert!(matches!(
        Segment::parse(&atomic),
        Err(Error::BadField {
            field: "opcode",
            value: 8,
            ..
        })
    ));
    let mut tagged_send = vec![0xc1, 0x43, 0, 0, 0, 1];
    tagged_send.extend_from_slice(&[0; 8]);
    assert!(matches!(
        Segment::parse(&tagged_send),
        Err(Error::BadField { field: "t", .. })
    ));
    let send_on_q1 = untagged(3, true, 0, 1, 1, 0);
    assert!(matches!(
        Segment::parse(&send_on_q1),
        Err(Error::BadField {
            offset: 6,
            field: "qn",
            value: 1,
            ..
        })
    ));
    assert!(matches!(
        DdpHeader::parse(&[0x41, 0x43, 0]),
        Err(Error::Truncated {
            layer: Layer::Ddp,
            ..
        })
    ));
}

/// A tagged RDMA Write DDP header.
fn tagged(stag: u32, to: u64) -> Vec<u8> {
    let mut h = vec![0xc1, 0x40];
    h.extend_from_slice(&stag.to_be_bytes());
    h.extend_from_slice(&to.to_be_bytes());
    h
}

/// A segment of two FPDUs (a Write, then a Send of an RPC-over-RDMA
/// header) with their CRC fields: computed when `crc`, zero otherwise.
fn two_fpdus(crc: bool) -> Vec<u8> {
    let mut write = tagged(0x1234_5678, 0xffff_8a80_0000_1000);
    write.extend_from_slice(&[7; 9]);
    let mut send = untagged(3, true, 0, 0, 5, 0);
    send.extend_from_slice(&RPCRDMA_MSG);
    let mut seg = Vec::new();
    for u in [write, send] {
        // `fpdu` writes the CRC field, zeros without CRCs.
        seg.extend_from_slice(&fpdu(&u, crc));
    }
    seg
}

#[test]
fn frame_reads_every_fpdu_of_a_segment() {
    use super::frame::{self, IwarpLayer, MpaCrc};
    let seg = two_fpdus(false);
    let Ok(IwarpLayer::Fpdus(f)) = frame::dissect(&seg, 54, false, MpaCrc::Unknown) else {
        panic!("not FPDUs");
    };
    assert!(!f.crc_known());
    let fpdus: Vec<_> = f.iter().map(Result::unwrap).collect();
    assert_eq!(fpdus.len(), 2);
    assert_eq!((fpdus[0].offset, fpdus[0].fpdu.ulpdu_length), (54, 23));
    // 2 + 23 + 3 pad + 4 CRC octets.
    assert_eq!(fpdus[1].offset, 54 + 32);
    let w = fpdus[0].segment.unwrap();
    assert_eq!(w.opcode, Opcode::Write);
    assert_eq!(
        w.ddp.placement,
        Placement::Tagged {
            stag: 0x1234_5678,
            to: 0xffff_8a80_0000_1000
        }
    );
    // A zero CRC field with CRC use unknown: taken as "not in use".
    assert_eq!(fpdus[0].crc, CrcStatus::NotNegotiated);
    assert_eq!(fpdus[0].crc_field, 0);
    assert!(!fpdus[0].starts_send() && fpdus[1].starts_send());
    assert_eq!(fpdus[1].segment.unwrap().opcode, Opcode::Send);
}

#[test]
fn frame_crc_verdict_follows_what_is_known() {
    use super::frame::{self, IwarpLayer, MpaCrc};
    let good = two_fpdus(true);
    for (crc, want) in [
        (MpaCrc::Unknown, CrcStatus::Valid),
        (MpaCrc::On, CrcStatus::Valid),
        (MpaCrc::Off, CrcStatus::NotNegotiated),
    ] {
        let Ok(IwarpLayer::Fpdus(f)) = frame::dissect(&good, 0, false, crc) else {
            panic!("not FPDUs");
        };
        assert!(f.iter().all(|x| x.unwrap().crc == want), "{crc:?}");
    }
    // CRCs negotiated but the field is zero: a mismatch, not "none".
    let zero = two_fpdus(false);
    let Ok(IwarpLayer::Fpdus(f)) = frame::dissect(&zero, 0, false, MpaCrc::On) else {
        panic!("not FPDUs");
    };
    let first = f.iter().next().unwrap().unwrap();
    assert!(matches!(first.crc, CrcStatus::Invalid { found: 0, .. }));
}

#[test]
fn frame_mid_fpdu_is_a_continuation_and_a_cut_tail_is_not_an_error() {
    use super::frame::{self, IwarpLayer, MpaCrc};
    let seg = two_fpdus(false);
    // Starting 5 octets into the first FPDU: not a boundary.
    assert_eq!(
        frame::dissect(&seg[5..], 0, false, MpaCrc::Unknown),
        Ok(IwarpLayer::Continuation)
    );
    // A segment ending inside its second FPDU, not cut by the capture:
    // the FPDU goes on in the next segment, so one frame cannot read it.
    let short = &seg[..40];
    assert_eq!(
        frame::dissect(short, 0, false, MpaCrc::Unknown),
        Ok(IwarpLayer::Continuation)
    );
    // The same bytes cut by a snap length: the whole FPDU, then nothing.
    let Ok(IwarpLayer::Fpdus(f)) = frame::dissect(short, 0, true, MpaCrc::Unknown) else {
        panic!("not FPDUs");
    };
    assert_eq!(f.iter().count(), 1);
    assert!(f.iter().all(|x| x.is_ok()));
}

#[test]
fn frame_reads_the_mpa_setup_frame() {
    use super::frame::{self, IwarpLayer, MpaCrc};
    let mut req = b"MPA ID Req Frame".to_vec();
    req.extend_from_slice(&[0x40, 1, 0, 0]);
    let Some(m) = (match frame::dissect(&req, 0, false, MpaCrc::Unknown) {
        Ok(IwarpLayer::Setup(s)) => s.frame(),
        _ => None,
    }) else {
        panic!("not a setup frame");
    };
    assert_eq!((m.kind, m.crc, m.revision), (FrameKind::Request, true, 1));
    // A bad revision is an error at its offset in the frame.
    req[17] = 9;
    let e = frame::dissect(&req, 66, false, MpaCrc::Unknown).unwrap_err();
    assert_eq!(e.offset(), 66 + 17);
}
