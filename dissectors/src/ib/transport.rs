//! The whole IBA transport layer of one packet: BTH, the extension headers
//! its opcode calls for, the payload and the pad bytes (IBA 9.2-9.3).
//!
//! ```text
//! +-----+----------------------------+-----------+-----+
//! | BTH | ext headers (0 to 4, table | payload   | pad |   (ICRC removed
//! | 12  | 38 order: RDETH/XRCETH,    |           | 0-3 |    by the caller)
//! |     | DETH, RETH, AtomicETH,     |           |     |
//! |     | AETH, AtomicAckETH, ImmDt, |           |     |
//! |     | IETH)                      |           |     |
//! +-----+----------------------------+-----------+-----+
//! ```

use super::aeth::Aeth;
use super::atomic::{AtomicAckEth, AtomicEth};
use super::bth::{self, Bth, ExtHeader};
use super::deth::Deth;
use super::ieth::Ieth;
use super::immdt::ImmDt;
use super::rdeth::Rdeth;
use super::reth::Reth;
use super::xrceth::XrcEth;
use crate::{Error, Layer, Result};

/// One packet's transport headers, payload and pad (IBA 9.2-9.3).
///
/// Exactly the extension headers named by `bth.opcode.ext_headers()` are
/// `Some`. Build one with [`Transport::new`] and set the headers, then
/// [`Transport::emit`] it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transport<'a> {
    /// Base Transport Header (IBA 9.2).
    pub bth: Bth,
    /// Reliable Datagram ETH, RD opcodes only (IBA 9.3.1).
    pub rdeth: Option<Rdeth>,
    /// XRC ETH, XRC requests only (IBA 9.3.8).
    pub xrceth: Option<XrcEth>,
    /// Datagram ETH, UD and RD requests (IBA 9.3.2).
    pub deth: Option<Deth>,
    /// RDMA ETH: RDMA WRITE First/Only, RDMA READ Request, ATOMIC WRITE (IBA 9.3.3).
    pub reth: Option<Reth>,
    /// Atomic ETH: CmpSwap and FetchAdd (IBA 9.3.4).
    pub atomiceth: Option<AtomicEth>,
    /// ACK ETH: Acknowledge, ATOMIC Acknowledge, RDMA READ Response First/Last/Only (IBA 9.3.5).
    pub aeth: Option<Aeth>,
    /// Atomic ACK ETH: ATOMIC Acknowledge (IBA 9.3.5.3).
    pub atomicacketh: Option<AtomicAckEth>,
    /// Immediate data: the "with Immediate" opcodes (IBA 9.3.6).
    pub immdt: Option<ImmDt>,
    /// Invalidate ETH: the "with Invalidate" opcodes (IBA 9.3.7).
    pub ieth: Option<Ieth>,
    /// The payload after the headers, without the pad bytes (IBA 9.4).
    pub payload: &'a [u8],
    /// The `bth.pad_count` pad bytes that end the payload (IBA 9.2.4).
    pub pad: &'a [u8],
    /// `Some` when the capture cut the packet short (a snap length): the
    /// payload's length on the wire, from the outer headers' lengths.
    /// `payload` then holds only what was captured of it, and `pad` is
    /// empty unless it was captured too. `None` for a whole packet.
    pub cut_payload_len: Option<u32>,
}

impl<'a> Transport<'a> {
    /// A packet with `bth`, no extension headers, `payload` and no pad.
    pub fn new(bth: Bth, payload: &'a [u8]) -> Self {
        Transport {
            bth,
            rdeth: None,
            xrceth: None,
            deth: None,
            reth: None,
            atomiceth: None,
            aeth: None,
            atomicacketh: None,
            immdt: None,
            ieth: None,
            payload,
            pad: &[],
            cut_payload_len: None,
        }
    }

    /// The payload's length on the wire: what was captured of it, or what
    /// the outer headers say when the capture cut the packet.
    pub fn payload_len_on_wire(&self) -> usize {
        self.cut_payload_len
            .map_or(self.payload.len(), |n| n as usize)
    }

    /// Whether the capture cut the packet (its ICRC at least is missing).
    pub fn is_cut(&self) -> bool {
        self.cut_payload_len.is_some()
    }

    /// Whether extension header `h` is present.
    pub fn has(&self, h: ExtHeader) -> bool {
        match h {
            ExtHeader::Rdeth => self.rdeth.is_some(),
            ExtHeader::XrcEth => self.xrceth.is_some(),
            ExtHeader::Deth => self.deth.is_some(),
            ExtHeader::Reth => self.reth.is_some(),
            ExtHeader::AtomicEth => self.atomiceth.is_some(),
            ExtHeader::Aeth => self.aeth.is_some(),
            ExtHeader::AtomicAckEth => self.atomicacketh.is_some(),
            ExtHeader::ImmDt => self.immdt.is_some(),
            ExtHeader::Ieth => self.ieth.is_some(),
        }
    }

    /// Length of BTH and extension headers, i.e. the offset of the payload.
    pub fn header_len(&self) -> usize {
        bth::HEADER_LEN + self.bth.opcode.ext_headers().wire_len()
    }

    /// Bytes [`Transport::emit`] writes: headers, payload and pad.
    pub fn wire_len(&self) -> usize {
        self.header_len() + self.payload.len() + self.pad.len()
    }

    /// Writes BTH, extension headers, payload and pad to `buf`; returns the
    /// bytes written. The BTH's pad count is taken from `pad.len()`.
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] (layer `bth`) if `buf` is shorter than
    /// [`Transport::wire_len`]; [`Error::BadField`] if `pad` is longer than 3
    /// bytes, or if an extension header the opcode calls for is `None`
    /// (`field` "present") or one it does not call for is `Some` (`field`
    /// "opcode").
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let exts = self.bth.opcode.ext_headers();
        let Ok(pad_count) = u8::try_from(self.pad.len()) else {
            return Err(bad_pad(self.pad.len()));
        };
        if pad_count > 3 {
            return Err(bad_pad(self.pad.len()));
        }
        let mut off = bth::HEADER_LEN;
        for h in exts.iter() {
            if !self.has(h) {
                return Err(Error::BadField {
                    layer: h.layer(),
                    offset: off,
                    field: "present",
                    value: 0,
                    expected: "the extension header the opcode calls for",
                });
            }
            off += h.wire_len();
        }
        let all = [
            ExtHeader::Rdeth,
            ExtHeader::XrcEth,
            ExtHeader::Deth,
            ExtHeader::Reth,
            ExtHeader::AtomicEth,
            ExtHeader::Aeth,
            ExtHeader::AtomicAckEth,
            ExtHeader::ImmDt,
            ExtHeader::Ieth,
        ];
        if all.iter().filter(|&&h| self.has(h)).count() != exts.len() {
            return Err(Error::BadField {
                layer: Layer::Bth,
                offset: 0,
                field: "opcode",
                value: u64::from(self.bth.opcode.0),
                expected: "an opcode that calls for every extension header given",
            });
        }
        let total = self.wire_len();
        let avail = buf.len();
        let Some(out) = buf.get_mut(..total) else {
            return Err(Error::truncated(Layer::Bth, 0, total, avail));
        };
        let bth = Bth {
            pad_count,
            ..self.bth
        };
        let mut at = bth.emit(out)?;
        for h in exts.iter() {
            let dst = out.get_mut(at..).unwrap_or_default();
            let n = match h {
                ExtHeader::Rdeth => self.rdeth.map(|v| v.emit(dst)),
                ExtHeader::XrcEth => self.xrceth.map(|v| v.emit(dst)),
                ExtHeader::Deth => self.deth.map(|v| v.emit(dst)),
                ExtHeader::Reth => self.reth.map(|v| v.emit(dst)),
                ExtHeader::AtomicEth => self.atomiceth.map(|v| v.emit(dst)),
                ExtHeader::Aeth => self.aeth.map(|v| v.emit(dst)),
                ExtHeader::AtomicAckEth => self.atomicacketh.map(|v| v.emit(dst)),
                ExtHeader::ImmDt => self.immdt.map(|v| v.emit(dst)),
                ExtHeader::Ieth => self.ieth.map(|v| v.emit(dst)),
            };
            at += n.unwrap_or(Ok(0)).map_err(|e| e.at(at))?;
        }
        for part in [self.payload, self.pad] {
            let end = at + part.len();
            if let Some(dst) = out.get_mut(at..end) {
                dst.copy_from_slice(part);
            }
            at = end;
        }
        Ok(at)
    }
}

fn bad_pad(len: usize) -> Error {
    Error::BadField {
        layer: Layer::Bth,
        offset: 1,
        field: "pad_count",
        value: u64::try_from(len).unwrap_or(u64::MAX),
        expected: "0..=3",
    }
}

/// Parses BTH, the extension headers its opcode calls for (in table 38
/// order), the payload and the pad.
///
/// `input` runs from the first byte of the BTH to the last pad byte: the
/// caller removes the ICRC (and, on native IB, the VCRC). An opcode the IBA
/// does not define is not an error: it gets no extension headers and the rest
/// of `input` (less the pad) is its payload.
///
/// # Errors
///
/// [`Error::Truncated`] naming the header that did not fit, with offsets
/// counted from the start of `input`; [`Error::BadField`] (layer `bth`,
/// field `pad_count`) if there are fewer bytes after the headers than the
/// pad count.
pub fn parse_transport(input: &[u8]) -> Result<Transport<'_>> {
    fill(input, &mut None).map(|t| *t)
}

/// Parses a packet the capture cut short: `input` is what was captured from
/// the BTH on, `wire_len` the packet's length on the wire from the BTH up
/// to (not including) the ICRC, as the outer headers give it. The headers
/// must have been captured; the payload is what was captured of it, and
/// [`Transport::cut_payload_len`] its length on the wire.
///
/// # Errors
///
/// [`Error::Truncated`] naming the header the capture cut;
/// [`Error::BadField`] (layer `bth`, field `pad_count`) if `wire_len` is
/// shorter than the headers and the pad.
pub fn parse_transport_cut(input: &[u8], wire_len: usize) -> Result<Transport<'_>> {
    fill_cut(input, wire_len, &mut None).map(|t| *t)
}

/// [`parse_transport_cut`] into `slot`, which is left `None` on error.
#[inline(never)]
pub(crate) fn parse_transport_cut_into<'a>(
    input: &'a [u8],
    wire_len: usize,
    slot: &mut Option<Transport<'a>>,
) -> Result<()> {
    match fill_cut(input, wire_len, slot) {
        Ok(_) => Ok(()),
        Err(e) => {
            *slot = None;
            Err(e)
        }
    }
}

fn fill_cut<'a, 's>(
    input: &'a [u8],
    wire_len: usize,
    slot: &'s mut Option<Transport<'a>>,
) -> Result<&'s mut Transport<'a>> {
    let (bth, mut rest) = Bth::parse(input)?;
    let t = slot.insert(Transport::new(bth, &[]));
    let exts = bth.opcode.ext_headers();
    if !exts.is_empty() {
        rest = parse_ext_headers(t, &exts, rest)?;
    }
    let headers = input.len() - rest.len();
    let pad = usize::from(bth.pad_count);
    let Some(on_wire) = wire_len.checked_sub(headers + pad) else {
        return Err(Error::BadField {
            layer: Layer::Bth,
            offset: 1,
            field: "pad_count",
            value: u64::from(bth.pad_count),
            expected: "no more than the bytes after the headers",
        });
    };
    let (payload, after) = rest.split_at(rest.len().min(on_wire));
    t.payload = payload;
    t.pad = after.get(..pad).unwrap_or_default();
    t.cut_payload_len = Some(u32::try_from(on_wire).unwrap_or(u32::MAX));
    Ok(t)
}

/// [`parse_transport`] into `slot`, which is left `None` on error.
///
/// Building the 192-byte [`Transport`] where it will live, rather than
/// returning it through a `Result` and moving it again, is a measurable part
/// of a whole-frame dissection.
#[inline]
pub(crate) fn parse_transport_into<'a>(
    input: &'a [u8],
    slot: &mut Option<Transport<'a>>,
) -> Result<()> {
    match fill(input, slot) {
        Ok(_) => Ok(()),
        Err(e) => {
            *slot = None;
            Err(e)
        }
    }
}

#[inline(always)]
fn fill<'a, 's>(
    input: &'a [u8],
    slot: &'s mut Option<Transport<'a>>,
) -> Result<&'s mut Transport<'a>> {
    let (bth, mut rest) = Bth::parse(input)?;
    let t = slot.insert(Transport::new(bth, &[]));
    let exts = bth.opcode.ext_headers();
    // Middle packets, the bulk of any transfer, carry no extension header.
    if !exts.is_empty() {
        rest = parse_ext_headers(t, &exts, rest)?;
    }
    let pad = usize::from(bth.pad_count);
    let Some(payload_len) = rest.len().checked_sub(pad) else {
        return Err(Error::BadField {
            layer: Layer::Bth,
            offset: 1,
            field: "pad_count",
            value: u64::from(bth.pad_count),
            expected: "no more than the bytes after the headers",
        });
    };
    let (payload, pad) = rest.split_at(payload_len);
    t.payload = payload;
    t.pad = pad;
    Ok(t)
}

/// Parses the extension headers `exts` (table 38 order) into `t`; returns
/// what follows them.
fn parse_ext_headers<'a>(
    t: &mut Transport<'a>,
    exts: &bth::ExtHeaders,
    mut rest: &'a [u8],
) -> Result<&'a [u8]> {
    let mut off = bth::HEADER_LEN;
    for h in exts.iter() {
        let at = |e: Error| e.at(off);
        rest = match h {
            ExtHeader::Rdeth => Rdeth::parse(rest).map(|(v, r)| (t.rdeth = Some(v), r)),
            ExtHeader::XrcEth => XrcEth::parse(rest).map(|(v, r)| (t.xrceth = Some(v), r)),
            ExtHeader::Deth => Deth::parse(rest).map(|(v, r)| (t.deth = Some(v), r)),
            ExtHeader::Reth => Reth::parse(rest).map(|(v, r)| (t.reth = Some(v), r)),
            ExtHeader::AtomicEth => AtomicEth::parse(rest).map(|(v, r)| (t.atomiceth = Some(v), r)),
            ExtHeader::Aeth => Aeth::parse(rest).map(|(v, r)| (t.aeth = Some(v), r)),
            ExtHeader::AtomicAckEth => {
                AtomicAckEth::parse(rest).map(|(v, r)| (t.atomicacketh = Some(v), r))
            }
            ExtHeader::ImmDt => ImmDt::parse(rest).map(|(v, r)| (t.immdt = Some(v), r)),
            ExtHeader::Ieth => Ieth::parse(rest).map(|(v, r)| (t.ieth = Some(v), r)),
        }
        .map_err(at)?
        .1;
        off += h.wire_len();
    }
    Ok(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::aeth::AckKind;
    use crate::ib::bth::Opcode;
    use crate::ib::{PKey, Psn, Qpn};
    use hex_literal::hex;
    use proptest::prelude::*;

    fn bth(opcode: Opcode, pad_count: u8) -> Bth {
        Bth {
            opcode,
            se: false,
            m: false,
            pad_count,
            tver: 0,
            p_key: PKey::DEFAULT,
            fecn: false,
            becn: false,
            dest_qp: Qpn::try_new(0x11).unwrap(),
            ack_req: false,
            psn: Psn::try_new(0x1234).unwrap(),
        }
    }

    #[test]
    fn parse_rc_send_only_with_pad() {
        // RC SEND Only, pad 2: 6 payload bytes then 2 pad bytes.
        let b = hex!("04 20 ffff 00 000011 00 001234" "0102 0304 0506 0000");
        let t = parse_transport(&b).unwrap();
        assert_eq!(t.bth, bth(Opcode::RC_SEND_ONLY, 2));
        assert_eq!(t.payload, &hex!("0102 0304 0506"));
        assert_eq!(t.pad, &[0, 0]);
        assert!(t.reth.is_none() && t.aeth.is_none() && t.ieth.is_none());
        let mut buf = [0xa5u8; 20];
        assert_eq!(t.emit(&mut buf), Ok(20));
        assert_eq!(buf, b);
    }

    #[test]
    fn parse_rc_send_only_with_invalidate() {
        let b = hex!("17 00 ffff 00 000011 00 001234" "0000 4321" "abcd");
        let t = parse_transport(&b).unwrap();
        assert_eq!(t.ieth, Some(Ieth { r_key: 0x4321 }));
        assert_eq!(t.payload, &hex!("abcd"));
    }

    #[test]
    fn parse_rdma_write_only_with_immediate() {
        let b = hex!(
            "0b 00 ffff 00 000011 80 001234"
            "0000 0000 1000 0000 0000 0042 0000 0004" // RETH
            "cafe babe"                               // ImmDt
            "1122 3344"                               // payload
        );
        let t = parse_transport(&b).unwrap();
        assert!(t.bth.ack_req);
        assert_eq!(
            t.reth,
            Some(Reth {
                va: 0x1000_0000,
                r_key: 0x42,
                dma_length: 4
            })
        );
        assert_eq!(t.immdt, Some(ImmDt { imm: 0xcafe_babe }));
        assert_eq!(t.payload, &hex!("1122 3344"));
        assert_eq!(t.header_len(), 32);
        let mut buf = [0xa5u8; 36];
        assert_eq!(t.emit(&mut buf), Ok(36));
        assert_eq!(buf, b);
    }

    #[test]
    fn parse_read_response_first_and_ack() {
        let b = hex!("0d 00 ffff 00 000011 00 001234" "1f 000007" "99");
        let t = parse_transport(&b).unwrap();
        assert_eq!(
            t.aeth.map(|a| a.kind()),
            Some(AckKind::Ack { credit_count: 31 })
        );
        assert_eq!(t.payload, &[0x99]);
        let b = hex!("11 00 ffff 00 000011 00 001234" "60 000007");
        let t = parse_transport(&b).unwrap();
        assert!(t.payload.is_empty());
        assert_eq!(t.aeth.map(|a| a.msn), Some(7));
    }

    #[test]
    fn parse_ud_send_only_cm_mad() {
        // UD SEND Only to QP1, DETH with the GSI Q_Key, then a MAD.
        let mut b = hex!("64 00 ffff 00 000001 00 000000" "8001 0000 00 000001").to_vec();
        b.extend_from_slice(&[0x01, 0x07, 0x02, 0x03]);
        let t = parse_transport(&b).unwrap();
        assert_eq!(t.deth.map(|d| d.src_qp), Some(Qpn::QP1));
        assert_eq!(t.payload, &[0x01, 0x07, 0x02, 0x03]);
    }

    #[test]
    fn parse_atomic_ack_rd_and_xrc() {
        let b = hex!("12 00 ffff 00 000011 00 001234" "00 000001" "0000 0000 0000 0005");
        let t = parse_transport(&b).unwrap();
        assert_eq!(
            t.atomicacketh,
            Some(AtomicAckEth {
                orig_remote_data: 5
            })
        );
        // RD RDMA WRITE Only with Immediate: RDETH, DETH, RETH, ImmDt.
        let b = hex!(
            "4b 00 ffff 00 000011 00 001234" "00 000009" "0000 0001 00 000002"
            "0000 0000 0000 0000 0000 0000 0000 0000" "0000 0001"
        );
        let t = parse_transport(&b).unwrap();
        assert_eq!(t.rdeth, Some(Rdeth { ee_context: 9 }));
        assert_eq!(t.deth.map(|d| d.q_key), Some(1));
        assert_eq!(t.immdt, Some(ImmDt { imm: 1 }));
        // XRC SEND Only: XRCETH; XRC Acknowledge: no XRCETH.
        let t = parse_transport(&hex!("a4 00 ffff 00 000011 00 001234 00 000077 aa")).unwrap();
        assert_eq!(t.xrceth, Some(XrcEth { xrc_srq: 0x77 }));
        assert_eq!(t.payload, &[0xaa]);
        let t = parse_transport(&hex!("b1 00 ffff 00 000011 00 001234 00 000077")).unwrap();
        assert_eq!(t.xrceth, None);
        assert!(t.aeth.is_some());
    }

    #[test]
    fn unknown_opcode_is_all_payload() {
        let b = hex!("1f 00 ffff 00 000011 00 001234 0102 0304");
        let t = parse_transport(&b).unwrap();
        assert_eq!(t.bth.opcode.name(), "Unknown");
        assert_eq!(t.payload, &hex!("0102 0304"));
    }

    #[test]
    fn cnp_payload_is_the_reserved_bytes() {
        let mut b = hex!("81 00 ffff 40 000011 00 000000").to_vec();
        b.extend_from_slice(&[0; 16]);
        let t = parse_transport(&b).unwrap();
        assert!(t.bth.becn);
        assert_eq!(t.payload.len(), 16);
    }

    #[test]
    fn truncated_extension_header_offsets() {
        let b = hex!(
            "0b 00 ffff 00 000011 80 001234"
            "0000 0000 1000 0000 0000 0042 0000 0004"
            "cafe babe"
        );
        for cut in 0..b.len() {
            let e = parse_transport(&b[..cut]).unwrap_err();
            let want = if cut < 12 {
                Error::Truncated {
                    layer: Layer::Bth,
                    offset: 0,
                    needed: 12,
                    available: cut,
                }
            } else if cut < 28 {
                Error::Truncated {
                    layer: Layer::Reth,
                    offset: 12,
                    needed: 16,
                    available: cut - 12,
                }
            } else {
                Error::Truncated {
                    layer: Layer::ImmDt,
                    offset: 28,
                    needed: 4,
                    available: cut - 28,
                }
            };
            assert_eq!(e, want, "cut at {cut}");
        }
        assert!(parse_transport(&b).is_ok());
    }

    #[test]
    fn pad_longer_than_payload() {
        // RC Acknowledge with pad count 3: nothing after the AETH to strip.
        let b = hex!("11 30 ffff 00 000011 00 001234 00 000001");
        assert_eq!(
            parse_transport(&b),
            Err(Error::BadField {
                layer: Layer::Bth,
                offset: 1,
                field: "pad_count",
                value: 3,
                expected: "no more than the bytes after the headers",
            })
        );
    }

    #[test]
    fn emit_checks_headers_and_room() {
        let mut t = Transport::new(bth(Opcode::RC_RDMA_WRITE_FIRST, 0), &[1, 2, 3]);
        let mut buf = [0u8; 64];
        assert!(matches!(
            t.emit(&mut buf),
            Err(Error::BadField {
                layer: Layer::Reth,
                offset: 12,
                field: "present",
                ..
            })
        ));
        t.reth = Some(Reth {
            va: 1,
            r_key: 2,
            dma_length: 3,
        });
        t.aeth = Some(Aeth {
            syndrome: 0,
            msn: 0,
        });
        assert!(matches!(
            t.emit(&mut buf),
            Err(Error::BadField {
                field: "opcode",
                ..
            })
        ));
        t.aeth = None;
        assert_eq!(t.emit(&mut buf), Ok(31));
        assert_eq!(
            t.emit(&mut buf[..30]),
            Err(Error::Truncated {
                layer: Layer::Bth,
                offset: 0,
                needed: 31,
                available: 30
            })
        );
        t.pad = &[0; 4];
        assert!(matches!(
            t.emit(&mut buf),
            Err(Error::BadField {
                field: "pad_count",
                ..
            })
        ));
    }

    proptest! {
        /// Every defined opcode, with exactly its extension headers filled
        /// in from random values, emits and parses back to itself.
        #[test]
        fn every_known_opcode_round_trips(
            op: u8, words in proptest::array::uniform8(any::<u64>()),
            payload in proptest::collection::vec(any::<u8>(), 0..40), pad_len in 0usize..4,
        ) {
            let opcode = Opcode(op);
            prop_assume!(opcode.is_known());
            let w = |i: usize| words[i];
            let mut t = Transport::new(bth(opcode, 0), &payload);
            let pad = [0u8; 3];
            t.pad = &pad[..pad_len];
            for h in opcode.ext_headers().iter() {
                match h {
                    ExtHeader::Rdeth => t.rdeth = Some(Rdeth { ee_context: w(0) as u32 & 0xff_ffff }),
                    ExtHeader::XrcEth => t.xrceth = Some(XrcEth { xrc_srq: w(0) as u32 & 0xff_ffff }),
                    ExtHeader::Deth => t.deth = Some(Deth {
                        q_key: w(1) as u32,
                        src_qp: Qpn::try_new(w(1) as u32 >> 8).unwrap(),
                    }),
                    ExtHeader::Reth => t.reth = Some(Reth { va: w(2), r_key: w(3) as u32, dma_length: (w(3) >> 32) as u32 }),
                    ExtHeader::AtomicEth => t.atomiceth = Some(AtomicEth {
                        va: w(2), r_key: w(3) as u32, swap_add_data: w(4), compare_data: w(5),
                    }),
                    ExtHeader::Aeth => t.aeth = Some(Aeth { syndrome: w(6) as u8, msn: (w(6) >> 8) as u32 & 0xff_ffff }),
                    ExtHeader::AtomicAckEth => t.atomicacketh = Some(AtomicAckEth { orig_remote_data: w(7) }),
                    ExtHeader::ImmDt => t.immdt = Some(ImmDt { imm: w(7) as u32 }),
                    ExtHeader::Ieth => t.ieth = Some(Ieth { r_key: (w(7) >> 32) as u32 }),
                }
            }
            let mut buf = vec![0u8; t.wire_len()];
            prop_assert_eq!(t.emit(&mut buf), Ok(buf.len()));
            let back = parse_transport(&buf).unwrap();
            prop_assert_eq!(back.bth.pad_count as usize, pad_len);
            prop_assert_eq!(Transport { bth: Bth { pad_count: 0, ..back.bth }, ..back }, t);
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = parse_transport(&b);
        }

        #[test]
        fn parse_emit_round_trip(b in proptest::collection::vec(any::<u8>(), 12..96)) {
            if let Ok(t) = parse_transport(&b) {
                let mut buf = vec![0u8; t.wire_len()];
                prop_assert_eq!(t.emit(&mut buf), Ok(buf.len()));
                let again = parse_transport(&buf).unwrap();
                prop_assert_eq!(again, t);
            }
        }
    }
}
