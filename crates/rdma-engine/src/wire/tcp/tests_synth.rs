//! The reassembler against the iWARP generator's truth: every capture
//! `rdma-synth` writes is read back frame by frame, its TCP segments fed
//! to [`Streams`] (acknowledgements included), and what each direction
//! delivers compared with what the generator says it must.

use std::net::{Ipv4Addr, SocketAddr};

use rdma_dissectors::iwarp::{crc32c, mpa, rdmap};
use rdma_synth::iwarp::{FpduTruth, StreamEvent};
use rdma_synth::{generate_iwarp, Fault, IwarpOptions, IwarpSummary};

use super::{Delivery, FlowKey, Streams, TcpSegment};

const TCP_ACK: u8 = 0x10;

/// One TCP segment of an Ethernet/IPv4 frame: key, segment, ACK number.
fn tcp(number: u64, ts: u64, data: &[u8]) -> Option<(FlowKey, TcpSegment<'_>, Option<u32>)> {
    let ip = data.get(14..)?;
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    let addr = |at: usize| {
        Some(Ipv4Addr::new(
            *ip.get(at)?,
            *ip.get(at + 1)?,
            *ip.get(at + 2)?,
            *ip.get(at + 3)?,
        ))
    };
    let (src, dst) = (addr(12)?, addr(16)?);
    let t = ip.get(ihl..)?;
    let word = |at: usize| Some(u32::from_be_bytes(*t.get(at..at + 4)?.first_chunk::<4>()?));
    let port = |at: usize| Some(u16::from_be_bytes([*t.get(at)?, *t.get(at + 1)?]));
    let doff = usize::from(t.get(12)? >> 4) * 4;
    let flags = *t.get(13)?;
    let payload = t.get(doff..)?;
    let key = FlowKey {
        src: SocketAddr::from((src, port(0)?)),
        dst: SocketAddr::from((dst, port(2)?)),
    };
    let seg = TcpSegment {
        frame: number,
        ts,
        seq: word(4)?,
        syn: flags & 0x02 != 0,
        fin: flags & 0x01 != 0,
        rst: flags & 0x04 != 0,
        payload,
        wire_len: (total - ihl - doff) as u32,
    };
    Some((key, seg, (flags & TCP_ACK != 0).then(|| word(8)).flatten()))
}

/// The capture `o` describes, through the reassembler: the summary, and
/// each direction's deliveries (client to server first).
fn replay(o: &IwarpOptions) -> (IwarpSummary, [Vec<Delivery>; 2]) {
    let (sum, bytes) = generate_iwarp(o, Vec::new()).unwrap();
    let mut reader =
        rdma_capture::PcapReader::new(std::io::Cursor::new(bytes), "iwarp.pcap".into()).unwrap();
    let mut streams = Streams::new();
    let mut out: [Vec<Delivery>; 2] = [Vec::new(), Vec::new()];
    while let Some(f) = reader.next_packet().unwrap() {
        let (key, seg, ack) = tcp(f.number, f.ts_ns, f.data).expect("an Ethernet/IPv4/TCP frame");
        let dir = usize::from(key.src.port() == rdma_dissectors::iwarp::NFS_RDMA_PORT);
        if let Some(ack) = ack {
            streams.acked(key.reverse(), ack, f.number, f.ts_ns, &mut out[1 - dir]);
        }
        streams.segment(key, &seg, &mut out[dir]);
    }
    (sum, out)
}

fn events(out: &[Delivery]) -> Vec<StreamEvent> {
    out.iter()
        .filter_map(|d| match *d {
            Delivery::Gap { frame, bytes, .. } => Some(StreamEvent::Gap { frame, bytes }),
            Delivery::Resync {
                frame,
                skipped,
                certain,
                ..
            } => Some(StreamEvent::Resync {
                frame,
                skipped,
                certain,
            }),
            Delivery::Closed { frame, .. } => Some(StreamEvent::Closed { frame }),
            _ => None,
        })
        .collect()
}

fn fpdus(out: &[Delivery]) -> Vec<(u64, u64, Vec<u8>)> {
    out.iter()
        .filter_map(|d| match d {
            Delivery::Fpdu {
                first_frame,
                frame,
                bytes,
                ..
            } => Some((*first_frame, *frame, bytes.clone())),
            _ => None,
        })
        .collect()
}

/// Whether each FPDU's CRC checks: over its octets, or with markers over
/// what the reassembler computed with them in.
fn crcs_valid(out: &[Delivery], crc: bool) -> Vec<bool> {
    out.iter()
        .filter_map(|d| match d {
            Delivery::Fpdu {
                bytes,
                crc_with_markers: Some(sum),
                ..
            } => {
                let tail = bytes.get(bytes.len() - 4..)?.first_chunk::<4>()?;
                Some(crc32c::wire_value(*tail) == *sum)
            }
            Delivery::Fpdu { bytes, .. } => {
                let (f, _) = mpa::Fpdu::parse(bytes, crc).ok()?;
                Some(!matches!(f.crc, mpa::CrcStatus::Invalid { .. }))
            }
            _ => None,
        })
        .collect()
}

fn truth(f: &[FpduTruth]) -> Vec<(u64, u64, Vec<u8>)> {
    f.iter()
        .map(|t| (t.first_frame, t.frame, t.bytes.clone()))
        .collect()
}

/// Every FPDU, gap, resync and close the generator promises, and
/// nothing else; the wrong CRC where it says, the Terminate it sent.
fn check(o: &IwarpOptions) {
    let (sum, out) = replay(o);
    // Calls 0 and 1 lie before a mid-stream start; every other call and
    // reply is whole.
    let lost_calls = if o.faults.contains(&Fault::MidStream) {
        2
    } else {
        0
    };
    assert_eq!(sum.transactions, o.calls - lost_calls, "{o:?}");
    for (d, (want, got)) in sum.directions.iter().zip(&out).enumerate() {
        let ctx = format!("{o:?} direction {d}");
        assert_eq!(events(got), want.events, "{ctx}");
        let mpa_frames: Vec<u64> = got
            .iter()
            .filter_map(|x| match x {
                Delivery::Mpa { frame, .. } => Some(*frame),
                _ => None,
            })
            .collect();
        assert_eq!(
            mpa_frames,
            want.mpa_frame.into_iter().collect::<Vec<_>>(),
            "{ctx}"
        );
        let valid = crcs_valid(got, o.crc);
        let got = fpdus(got);
        assert!(!got.is_empty(), "{ctx}");
        assert_eq!(valid.len(), got.len(), "{ctx}");
        assert_eq!(got.len(), want.fpdus.len(), "{ctx}");
        assert!(got == truth(&want.fpdus), "{ctx}: FPDUs differ");
        for ((g, t), &valid) in got.iter().zip(&want.fpdus).zip(&valid) {
            let (f, _) = mpa::Fpdu::parse(&g.2, o.crc).unwrap();
            assert_eq!(
                valid,
                !sum.bad_crc_frames.contains(&g.1),
                "{ctx} frame {}",
                g.1
            );
            assert_eq!(t.crc_valid, o.crc.then_some(valid), "{ctx}");
            let seg = rdmap::Segment::parse(f.ulpdu).unwrap();
            assert_eq!(seg.opcode.name(), t.opcode, "{ctx}");
            if let (rdmap::Body::Terminate(term), Some(want)) = (seg.body, &sum.terminate) {
                assert_eq!(
                    (term.etype, term.code, g.1),
                    (want.etype, want.code, want.frame)
                );
                assert_eq!(term.error_name(), Some(want.name));
            }
        }
    }
}

#[test]
fn clean_captures_deliver_every_fpdu() {
    for (markers, crc) in [(false, true), (false, false), (true, true), (true, false)] {
        check(&IwarpOptions {
            markers,
            crc,
            ..IwarpOptions::default()
        });
    }
}

#[test]
fn every_fault_is_reported_where_the_generator_put_it() {
    for (markers, crc) in [(false, true), (false, false), (true, true), (true, false)] {
        let faults = Fault::ALL
            .into_iter()
            .filter(|f| crc || *f != Fault::BadCrc)
            .collect();
        let o = IwarpOptions {
            markers,
            crc,
            faults,
            ..IwarpOptions::default()
        };
        check(&o);
        let (sum, _) = replay(&o);
        let gaps = sum.directions[1]
            .events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Gap { .. }))
            .count();
        assert_eq!(gaps, 1, "{o:?}");
        assert_eq!(sum.bad_crc_frames.len(), usize::from(crc), "{o:?}");
        assert!(sum.terminate.is_some());
    }
}

#[test]
fn each_fault_alone() {
    for f in Fault::ALL {
        for seed in [1, 7] {
            check(&IwarpOptions {
                faults: vec![f],
                seed,
                io_size: 5000,
                ..IwarpOptions::default()
            });
        }
    }
}

/// A capture that starts mid-stream on a connection that negotiated
/// markers: no MPA exchange says they run or where. The reader finds
/// them from the first FPDU that carries one (its FPDUPTR points back to
/// the FPDU's start), takes them out from there on, and delivers every
/// FPDU the sidecar lists; certain only with CRCs to confirm it.
#[test]
fn a_mid_stream_start_finds_the_markers() {
    for crc in [true, false] {
        for seed in 1..=16 {
            for io_size in [4096, 5000] {
                let o = IwarpOptions {
                    markers: true,
                    crc,
                    seed,
                    io_size,
                    faults: vec![Fault::MidStream],
                    ..IwarpOptions::default()
                };
                check(&o);
                let (sum, out) = replay(&o);
                for (d, got) in out.iter().enumerate() {
                    let resyncs: Vec<bool> = got
                        .iter()
                        .filter_map(|x| match x {
                            Delivery::Resync { certain, .. } => Some(*certain),
                            _ => None,
                        })
                        .collect();
                    assert_eq!(resyncs, [crc], "{o:?} direction {d}");
                    // Markers really were in the FPDUs read: with CRCs each
                    // one checked over the octets as sent, markers in.
                    if crc {
                        let marked = got
                            .iter()
                            .filter(|x| {
                                matches!(
                                    x,
                                    Delivery::Fpdu {
                                        crc_with_markers: Some(_),
                                        ..
                                    }
                                )
                            })
                            .count();
                        assert!(marked > 0, "{o:?} direction {d}");
                    }
                }
                assert_eq!(sum.transactions, o.calls - 2, "{o:?}");
            }
        }
    }
}
