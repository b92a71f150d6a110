//! ERF (Endace Extensible Record Format) records, as they lie inside pcap
//! and pcapng frames of link type 197 (`LINKTYPE_ERF`): what Mellanox/NVIDIA
//! `ibdump` writes. Each frame of such a capture is one ERF record; this
//! module says which frame it carries, of which link type, when, and how
//! long it was on the wire.
//!
//! Reference: Endace "ERF Types Reference Guide" (EDM11-01); libpcap's
//! `LINKTYPE_ERF` entry; Wireshark's ERF record definitions.
//!
//! ```text
//!  0                               8       9       10      12      14      16
//!  │ timestamp (8, little-endian)  │ type  │ flags │ rlen  │ lctr  │ wlen  │
//!  │ seconds << 32 | binary fraction        bit 7 of type: extension headers follow
//!  16: extension headers, 8 bytes each, while bit 7 of the previous one's first byte is set
//!  then, for the Ethernet types only: offset (1) │ pad (1)
//!  then the frame: rlen counts everything from byte 0 (padded to 8 bytes);
//!  wlen is the frame's length on the wire (an Ethernet frame's with its FCS)
//! ```
//!
//! rlen, lctr and wlen are big-endian; only the timestamp is little-endian.

use core::ops::Range;

use crate::link::LinkType;

/// `LINKTYPE_ERF`: each frame is an ERF record.
pub const LINKTYPE_ERF: u32 = 197;

/// Bytes of the ERF record header.
pub const HEADER_LEN: usize = 16;

/// Bytes of one extension header.
const EXT_HEADER_LEN: usize = 8;

/// Extension headers believed before a record is called malformed: real
/// records carry a handful; the walk is bounded by the record anyway, but a
/// chain this long is a damaged record, not data.
pub const MAX_EXT_HEADERS: usize = 64;

/// The `offset` and `pad` bytes between the headers and an Ethernet frame.
const ETH_PAD: usize = 2;

/// The Ethernet FCS that ERF Ethernet records keep at the end of the frame
/// (and count in wlen), as DAG cards capture it.
const ETH_FCS: usize = 4;

mod field {
    use core::ops::Range;
    pub const TS: Range<usize> = 0..8;
    pub const TYPE: usize = 8;
    pub const RLEN: Range<usize> = 10..12;
    pub const WLEN: Range<usize> = 14..16;
}

/// Record types (the low 7 bits of the type byte) this module knows by name.
mod record_type {
    pub const ETH: u8 = 2;
    pub const COLOR_ETH: u8 = 11;
    pub const DSM_COLOR_ETH: u8 = 16;
    pub const COLOR_HASH_ETH: u8 = 20;
    pub const INFINIBAND: u8 = 21;
    pub const IPV4: u8 = 22;
    pub const IPV6: u8 = 23;
}

/// A record's frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The record's own capture time, ns since the Unix epoch.
    pub ts_ns: u64,
    /// What the frame is: Ethernet, InfiniBand (from the LRH), raw IPv4/IPv6.
    pub link: LinkType,
    /// Length on the wire, without an Ethernet FCS.
    pub orig_len: u32,
    /// Where the frame lies in the record.
    pub data: Range<usize>,
}

/// Why a record gives no frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// A record type that carries no frame the analyzer dissects (ATM,
    /// HDLC, InfiniBand link packets, metadata, padding...).
    UnsupportedType {
        /// The record type (bit 7 cleared).
        record_type: u8,
        /// The record's capture time.
        ts_ns: u64,
    },
    /// A header that cannot be right: what, and the value.
    Malformed(&'static str, u64),
}

/// The name of an ERF record type, for messages.
pub fn type_name(t: u8) -> &'static str {
    match t {
        0 => "LEGACY",
        1 => "HDLC_POS",
        2 => "ETH",
        3 => "ATM",
        4 => "AAL5",
        5 => "MC_HDLC",
        6 => "MC_RAW",
        7 => "MC_ATM",
        8 => "MC_RAW_CHANNEL",
        9 => "MC_AAL5",
        10 => "COLOR_HDLC_POS",
        11 => "COLOR_ETH",
        12 => "MC_AAL2",
        13 => "IP_COUNTER",
        14 => "TCP_FLOW_COUNTER",
        15 => "DSM_COLOR_HDLC_POS",
        16 => "DSM_COLOR_ETH",
        17 => "COLOR_MC_HDLC_POS",
        18 => "AAL2",
        19 => "COLOR_HASH_POS",
        20 => "COLOR_HASH_ETH",
        21 => "INFINIBAND",
        22 => "IPV4",
        23 => "IPV6",
        24 => "RAW_LINK",
        25 => "INFINIBAND_LINK",
        27 => "META",
        28 => "OPA_SNC",
        29 => "OPA_9B",
        48 => "PAD",
        _ => "unassigned",
    }
}

fn be16(b: &[u8], at: Range<usize>) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at)?.try_into().ok()?))
}

/// The ERF timestamp in ns: the binary fraction rounded to the nearest ns,
/// as libpcap and Wireshark round it.
pub fn ts_ns(ts: u64) -> u64 {
    let secs = ts >> 32;
    let frac = ts & 0xffff_ffff;
    // frac < 2^32, so frac * 10^9 + 2^31 < 2^62: no overflow. The largest
    // fractions round up to a whole second, which the sum carries.
    let ns = (frac * 1_000_000_000 + (1 << 31)) >> 32;
    secs.saturating_mul(1_000_000_000).saturating_add(ns)
}

/// Reads the ERF record `rec` (a frame of a `LINKTYPE_ERF` capture, as
/// captured: a snap length may have cut it, or the trailing padding that
/// rlen counts).
///
/// # Errors
/// A record type with no frame the analyzer dissects, or a header that
/// cannot be right.
pub fn parse(rec: &[u8]) -> Result<Frame, Problem> {
    let (Some(ts), Some(&kind), Some(rlen), Some(wlen)) = (
        rec.get(field::TS)
            .and_then(|t| <[u8; 8]>::try_from(t).ok())
            .map(u64::from_le_bytes),
        rec.get(field::TYPE),
        be16(rec, field::RLEN),
        be16(rec, field::WLEN),
    ) else {
        return Err(Problem::Malformed(
            "record shorter than the 16-byte ERF header",
            rec.len() as u64,
        ));
    };
    let rlen = usize::from(rlen);
    if rlen < HEADER_LEN {
        return Err(Problem::Malformed(
            "rlen shorter than the 16-byte ERF header",
            rlen as u64,
        ));
    }
    // A frame holds one record, perhaps cut (by a snap length, or of the
    // padding rlen counts), never more: a record shorter than its frame is
    // damage, or a capture whose header names the wrong link type.
    if rlen < rec.len() {
        return Err(Problem::Malformed(
            "rlen shorter than the frame that holds the record",
            rlen as u64,
        ));
    }
    let avail = rec.len();
    let mut at = HEADER_LEN;
    let mut more = kind & 0x80 != 0;
    let mut n = 0;
    while more {
        if n == MAX_EXT_HEADERS {
            return Err(Problem::Malformed(
                "more extension headers than any record carries",
                n as u64,
            ));
        }
        let Some(&ext) = rec.get(at).filter(|_| at + EXT_HEADER_LEN <= avail) else {
            return Err(Problem::Malformed(
                "extension headers run past the record",
                at as u64,
            ));
        };
        more = ext & 0x80 != 0;
        at += EXT_HEADER_LEN;
        n += 1;
    }
    let ts_ns = ts_ns(ts);
    let record_type = kind & 0x7f;
    let (link, pad, fcs) = match record_type {
        record_type::ETH
        | record_type::COLOR_ETH
        | record_type::DSM_COLOR_ETH
        | record_type::COLOR_HASH_ETH => (LinkType::ETHERNET, ETH_PAD, ETH_FCS),
        record_type::INFINIBAND => (LinkType::INFINIBAND, 0, 0),
        record_type::IPV4 => (LinkType::IPV4, 0, 0),
        record_type::IPV6 => (LinkType::IPV6, 0, 0),
        _ => return Err(Problem::UnsupportedType { record_type, ts_ns }),
    };
    if at + pad > avail {
        return Err(Problem::Malformed(
            "Ethernet record cut before its 2-byte pad",
            avail as u64,
        ));
    }
    at += pad;
    let orig = usize::from(wlen).saturating_sub(fcs);
    let keep = (avail - at).min(orig);
    Ok(Frame {
        ts_ns,
        link,
        orig_len: orig as u32,
        data: at..at + keep,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ERF header: `ts`, `kind` (with bit 7 for extension headers),
    /// rlen, wlen.
    fn header(ts: u64, kind: u8, rlen: u16, wlen: u16) -> Vec<u8> {
        let mut h = ts.to_le_bytes().to_vec();
        h.extend_from_slice(&[kind, 0x04]);
        h.extend_from_slice(&rlen.to_be_bytes());
        h.extend_from_slice(&0u16.to_be_bytes());
        h.extend_from_slice(&wlen.to_be_bytes());
        h
    }

    /// The first record of `/work/shared/external-captures/infiniband.pcap`
    /// (ibdump): type 21, flags 0x05, rlen 312, wlen 290; the pcap record
    /// holds 306 bytes (the 6 bytes of padding rlen counts are not there).
    #[test]
    fn parse_ibdump_infiniband_record() {
        let mut rec = header(0x482b_41ef_7feb_ea60, 21, 312, 290);
        rec.extend_from_slice(&[0xf0, 0x02, 0xff, 0xff]);
        rec.resize(306, 0);
        let f = parse(&rec).unwrap();
        // tshark: 1210794479.499693535
        assert_eq!(f.ts_ns, 1_210_794_479_499_693_535);
        assert_eq!(f.link, LinkType::INFINIBAND);
        assert_eq!((f.orig_len, f.data), (290, 16..306));
    }

    #[test]
    fn ethernet_records_skip_the_pad_and_drop_the_fcs() {
        let mut rec = header(1 << 32, 2, 16 + 2 + 64, 64);
        rec.extend_from_slice(&[0, 0]);
        rec.extend_from_slice(&[0xab; 60]);
        rec.extend_from_slice(b"FCS!");
        let f = parse(&rec).unwrap();
        assert_eq!(
            (f.link, f.orig_len, f.data),
            (LinkType::ETHERNET, 60, 18..78)
        );
        assert_eq!(f.ts_ns, 1_000_000_000);
    }

    #[test]
    fn extension_headers_are_skipped_whatever_their_number() {
        for n in 1..5usize {
            let len = 16 + 8 * n + 8;
            let mut rec = header(0, 0x80 | 22, len as u16, 8);
            for i in 0..n {
                let more = if i + 1 < n { 0x80 } else { 0 };
                rec.extend_from_slice(&[more | 3, 1, 2, 3, 4, 5, 6, 7]);
            }
            rec.extend_from_slice(&[0x45; 8]);
            let f = parse(&rec).unwrap();
            assert_eq!((f.link, f.data), (LinkType::IPV4, 16 + 8 * n..len), "{n}");
        }
        // A chain that never ends runs into the end of the record.
        let mut rec = header(0, 0x80 | 21, 40, 8);
        rec.extend_from_slice(&[0x80; 24]);
        assert!(matches!(parse(&rec), Err(Problem::Malformed(w, _)) if w.contains("run past")));
        // The same with rlen saying less than the frame holds.
        rec[10..12].copy_from_slice(&32u16.to_be_bytes());
        assert!(
            matches!(parse(&rec), Err(Problem::Malformed(w, 32)) if w.contains("shorter than the frame"))
        );
    }

    #[test]
    fn unknown_types_are_named_with_their_time() {
        let mut rec = header(2 << 32, 24, 24, 8);
        rec.extend_from_slice(&[0; 8]);
        assert_eq!(
            parse(&rec),
            Err(Problem::UnsupportedType {
                record_type: 24,
                ts_ns: 2_000_000_000
            })
        );
        assert_eq!(type_name(24), "RAW_LINK");
    }

    #[test]
    fn truncated_at_every_offset_is_an_error_or_a_shorter_frame() {
        let mut rec = header(0, 0x80 | 2, 16 + 8 + 2 + 20, 20);
        rec.extend_from_slice(&[0; 8]);
        rec.extend_from_slice(&[0, 0]);
        rec.extend_from_slice(&[7; 20]);
        for cut in 0..rec.len() {
            match parse(&rec[..cut]) {
                Ok(f) => {
                    assert!(cut >= 26, "{cut}");
                    // wlen 20 counts the 4-byte FCS: 16 bytes of frame.
                    assert_eq!(f.data, 26..cut.min(42));
                    assert_eq!(f.orig_len, 16);
                }
                Err(Problem::Malformed(..)) => assert!(cut < 26, "{cut}"),
                Err(e) => panic!("{cut}: {e:?}"),
            }
        }
        assert!(matches!(
            parse(&header(0, 21, 8, 0)),
            Err(Problem::Malformed(w, 8)) if w.contains("rlen")
        ));
    }

    #[test]
    fn the_fraction_rounds_to_the_nearest_nanosecond() {
        assert_eq!(ts_ns(0xffff_ffff), 1_000_000_000);
        assert_eq!(ts_ns(0xffff_fff0), 999_999_996);
        assert_eq!(ts_ns(1 << 31), 500_000_000);
        assert_eq!(ts_ns(u64::MAX), 4_294_967_296_000_000_000);
    }
}
