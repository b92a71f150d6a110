//! The pcap and pcapng container formats: file headers, record headers and
//! blocks, parsed from bytes. No I/O: [`super::read::PcapReader`] moves the
//! bytes, this module says what they are, so there is one parser of each
//! format whoever reads the file.
//!
//! ```text
//! pcap:   file header (24) │ record header (16) │ frame │ record header │ frame │ …
//!         magic ver thiszone sigfigs snaplen link │ ts_sec ts_frac caplen orig_len
//! pcapng: block │ block │ …   each block: type (4) │ total length (4) │ body │ total length (4)
//!         SHB (0x0a0d0d0a, byte-order magic) · IDB (1: link type, options) ·
//!         EPB (6) · SPB (3) · obsolete PB (2) · anything else skipped
//! ```
//!
//! Every read is bounds-checked here (the input is untrusted); lengths that
//! cannot be right are [`Problem::Corrupt`], never a panic.

use std::ops::Range;

use rdma_dissectors::link::LinkType;

use super::erf;

/// pcapng blocks longer than this are treated as corruption rather than
/// data: it bounds the buffer.
pub const MAX_RECORD_LEN: usize = 16 << 20;

/// Frames captured longer than this are corruption: no link the analyzer
/// reads carries frames near it (RoCE jumbo frames are 9 KiB, InfiniBand
/// packets 4 KiB and headers), so a record that says more is a damaged
/// length field, and believing it would read what follows as garbage frames.
pub const MAX_FRAME_LEN: usize = 256 << 10;

/// pcapng files may declare many interfaces; past this we stop believing them.
const MAX_INTERFACES: usize = 4096;

/// Bytes of a classic pcap file header.
const PCAP_FILE_HEADER: usize = 24;
/// Bytes of a classic pcap record header.
const PCAP_RECORD_HEADER: usize = 16;
/// Bytes of a pcapng block that say its type and length (with the first
/// body word, which a section header needs for its byte order).
const PCAPNG_BLOCK_HEADER: usize = 12;

const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
const PCAPNG_IDB: u32 = 1;
const PCAPNG_PB: u32 = 2;
const PCAPNG_SPB: u32 = 3;
const PCAPNG_EPB: u32 = 6;

/// Which container format a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic libpcap.
    Pcap,
    /// pcapng.
    Pcapng,
}

/// What is wrong with the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The first four bytes are no known magic.
    NotACapture {
        /// The first four bytes, as a big-endian number.
        magic: u32,
    },
    /// More bytes are needed than there are.
    Truncated {
        /// Bytes the header or record needs.
        needed: usize,
        /// Bytes there are.
        available: usize,
    },
    /// A field that cannot be right, and its value.
    Corrupt(&'static str, u64),
    /// There is nothing at all.
    Empty,
    /// The file is compressed (its format named) rather than a capture.
    Compressed(&'static str),
    /// Frames of a link type the analyzer does not dissect.
    UnsupportedLink {
        /// The link type (`LINKTYPE_*` number).
        link: u32,
    },
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: LinkType,
    /// Timestamp units per second.
    units_per_sec: u64,
    offset_secs: i64,
    /// Longest frame the capture kept (0: no limit given).
    snaplen: u32,
    /// Bytes of Ethernet FCS at the end of each whole frame (libpcap's
    /// FCS bits in the link-type field, pcapng's `if_fcslen`).
    fcs_len: u32,
}

impl Interface {
    /// Checks a record's captured length against what the file allows.
    fn check_caplen(&self, caplen: usize) -> Result<(), Problem> {
        if caplen > MAX_FRAME_LEN {
            return Err(Problem::Corrupt(
                "captured length over 256 KiB",
                caplen as u64,
            ));
        }
        if self.snaplen > 0 && caplen > self.snaplen as usize {
            return Err(Problem::Corrupt(
                "captured length over the capture's snap length",
                caplen as u64,
            ));
        }
        Ok(())
    }

    /// A frame of `caplen` bytes at `at` in the record `b`: the FCS is
    /// taken off a whole frame; an ERF record gives the frame it carries.
    fn packet(
        &self,
        b: &[u8],
        ts_ns: u64,
        at: usize,
        caplen: usize,
        orig_len: u32,
    ) -> Result<Record, Problem> {
        if self.link_type.0 == erf::LINKTYPE_ERF {
            return Ok(erf_packet(b, ts_ns, at..at + caplen));
        }
        if self.link_type.name().is_none() {
            return Err(Problem::UnsupportedLink {
                link: self.link_type.0,
            });
        }
        let fcs = self.fcs_len as usize;
        let orig = orig_len as usize;
        // Only the bytes past the frame proper: a cut frame may hold part
        // of its FCS, or none of it.
        let keep = caplen.min(orig.saturating_sub(fcs));
        Ok(Record::Packet {
            ts_ns,
            link: self.link_type,
            orig_len: u32::try_from(orig.saturating_sub(fcs)).unwrap_or(orig_len),
            data: at..at + keep,
            note: None,
        })
    }
}

/// The frame an ERF record (at `span` of `b`) carries. A record without
/// one is still a frame of the capture (tshark counts it, and so do frame
/// numbers): it goes on as an undissectable `LINKTYPE_ERF` frame with a
/// note saying why, never dropped unsaid. Its container is whole, so the
/// frames after it are read as usual.
fn erf_packet(b: &[u8], pcap_ts_ns: u64, span: Range<usize>) -> Record {
    let rec = b.get(span.clone()).unwrap_or_default();
    let whole = |ts_ns, problem| Record::Packet {
        ts_ns,
        link: LinkType(erf::LINKTYPE_ERF),
        orig_len: rec.len() as u32,
        data: span.clone(),
        note: Some(Note::Erf(problem)),
    };
    match erf::parse(rec) {
        Ok(f) => Record::Packet {
            ts_ns: f.ts_ns,
            link: f.link,
            orig_len: f.orig_len,
            data: span.start + f.data.start..span.start + f.data.end,
            note: None,
        },
        Err(p @ erf::Problem::UnsupportedType { ts_ns, .. }) => whole(ts_ns, p),
        Err(p @ erf::Problem::Malformed(..)) => whole(pcap_ts_ns, p),
    }
}

/// Something to tell about one frame that is not damage to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// The frame is an ERF record with no frame the analyzer dissects.
    Erf(erf::Problem),
}

/// One record, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A captured frame: its bytes are `data` within the record.
    Packet {
        /// Capture time, ns since the Unix epoch (0 when the format has none).
        ts_ns: u64,
        /// Link type of the interface it was captured on.
        link: LinkType,
        /// Length on the wire.
        orig_len: u32,
        /// Where the frame lies in the record.
        data: Range<usize>,
        /// Why the frame cannot be dissected, when the container says so
        /// (an ERF record of a type the analyzer does not read).
        note: Option<Note>,
    },
    /// A record with no frame (pcapng section and interface blocks, statistics, unknown).
    Other,
}

/// What [`Parser::section_at`] sees where a record should start.
#[derive(Debug)]
pub enum Section {
    /// A record of this capture.
    No,
    /// Perhaps another file header: this many bytes tell.
    NeedMore(usize),
    /// Another file header: its parser and the bytes of header to skip,
    /// or what is wrong with it.
    Starts(Result<(Parser, usize), Problem>),
}

/// Reads records of one file, one after the other; holds what earlier
/// records declared (byte order, pcapng interfaces).
#[derive(Debug, Clone)]
pub struct Parser {
    format: Format,
    big_endian: bool,
    /// pcap: the one link type and resolution; pcapng: per interface.
    interfaces: Vec<Interface>,
    /// Frames that were ERF records (link type 197).
    erf_records: u64,
}

fn word(b: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let w: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    })
}

fn half(b: &[u8], at: usize, big_endian: bool) -> Option<u16> {
    let w: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
    Some(if big_endian {
        u16::from_be_bytes(w)
    } else {
        u16::from_le_bytes(w)
    })
}

/// A field the caller has already checked the length for; a short record
/// here would be a bug in this module, reported as corruption rather than a panic.
fn field(v: Option<u32>, what: &'static str) -> Result<u32, Problem> {
    v.ok_or(Problem::Corrupt(what, 0))
}

impl Parser {
    /// Reads the start of a file: which format, and how many bytes of file
    /// header to skip before the first record (a pcapng section header is a
    /// block like any other, so 0 there).
    ///
    /// # Errors
    /// Unknown magic, or a classic header cut short.
    pub fn start(head: &[u8]) -> Result<(Parser, usize), Problem> {
        if head.is_empty() {
            return Err(Problem::Empty);
        }
        match head {
            [0x1f, 0x8b, ..] => return Err(Problem::Compressed("gzip")),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => return Err(Problem::Compressed("zstd")),
            [b'B', b'Z', b'h', ..] => return Err(Problem::Compressed("bzip2")),
            [0xfd, b'7', b'z', b'X', b'Z', ..] => return Err(Problem::Compressed("xz")),
            _ => {}
        }
        let Some(magic) = word(head, 0, false) else {
            return Err(Problem::Truncated {
                needed: 4,
                available: head.len(),
            });
        };
        let (units, big_endian) = match magic {
            0xa1b2_c3d4 => (1_000_000, false),
            0xd4c3_b2a1 => (1_000_000, true),
            0xa1b2_3c4d => (1_000_000_000, false),
            0x4d3c_b2a1 => (1_000_000_000, true),
            PCAPNG_SHB => {
                let p = Parser {
                    format: Format::Pcapng,
                    big_endian: false,
                    interfaces: Vec::new(),
                    erf_records: 0,
                };
                return Ok((p, 0));
            }
            m => {
                return Err(Problem::NotACapture {
                    magic: m.swap_bytes(),
                })
            }
        };
        let (Some(snaplen), Some(link)) = (word(head, 16, big_endian), word(head, 20, big_endian))
        else {
            return Err(Problem::Truncated {
                needed: PCAP_FILE_HEADER,
                available: head.len(),
            });
        };
        // The link-type word's top bits say whether frames end in an FCS
        // and how long it is, in 16-bit units (libpcap's LT_FCS_* bits).
        let fcs_len = if link & 0x0400_0000 != 0 {
            (link >> 28) * 2
        } else {
            0
        };
        let iface = Interface {
            link_type: LinkType(link & 0x03ff_ffff),
            units_per_sec: units,
            offset_secs: 0,
            snaplen,
            fcs_len,
        };
        if iface.link_type.name().is_none() && iface.link_type.0 != erf::LINKTYPE_ERF {
            return Err(Problem::UnsupportedLink {
                link: iface.link_type.0,
            });
        }
        let p = Parser {
            format: Format::Pcap,
            big_endian,
            interfaces: vec![iface],
            erf_records: 0,
        };
        Ok((p, PCAP_FILE_HEADER))
    }

    /// Whether the record that starts `b` is instead the file header of
    /// another capture joined to this one end to end (`cat a.pcap b.pcap`,
    /// or `cat a.pcap.gz b.pcap.gz`, whose gzip members decompress as one
    /// stream). Read as a record, such a header is a phantom frame stamped
    /// in 2055 or later followed by garbage; it is a new section instead.
    ///
    /// A classic header is recognised by its magic followed by version 2.4
    /// (as a record header: a time in 2055 with exactly 262,146 µs, which
    /// no capture holds), a pcapng section header by its type and
    /// byte-order magic (a pcapng section header within pcapng is a
    /// section of the format itself, read as a record).
    pub fn section_at(&self, b: &[u8]) -> Section {
        let Some(magic) = word(b, 0, false) else {
            return Section::No;
        };
        let big_endian = match magic {
            0xa1b2_c3d4 | 0xa1b2_3c4d => false,
            0xd4c3_b2a1 | 0x4d3c_b2a1 => true,
            PCAPNG_SHB if self.format == Format::Pcap => {
                return match b.get(8..12) {
                    None => Section::NeedMore(PCAPNG_BLOCK_HEADER),
                    Some([0x1a, 0x2b, 0x3c, 0x4d] | [0x4d, 0x3c, 0x2b, 0x1a]) => {
                        Section::Starts(Parser::start(b))
                    }
                    Some(_) => Section::No,
                };
            }
            _ => return Section::No,
        };
        match (half(b, 4, big_endian), half(b, 6, big_endian)) {
            (Some(2), Some(4)) if b.len() < PCAP_FILE_HEADER => Section::NeedMore(PCAP_FILE_HEADER),
            (Some(2), Some(4)) => Section::Starts(Parser::start(b)),
            (None, _) | (_, None) => Section::NeedMore(8),
            _ => Section::No,
        }
    }

    /// Goes on with `next`, the parser of a section that starts here,
    /// keeping the count of ERF records so far.
    pub fn continue_with(&mut self, next: Parser) {
        let erf_records = self.erf_records;
        *self = next;
        self.erf_records = erf_records;
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Bytes a record's header takes, which [`Parser::record_len`] needs.
    pub fn header_len(&self) -> usize {
        match self.format {
            Format::Pcap => PCAP_RECORD_HEADER,
            Format::Pcapng => PCAPNG_BLOCK_HEADER,
        }
    }

    /// Whether a packet was declared on an interface yet (an error before
    /// the first one names no frame).
    pub fn has_interfaces(&self) -> bool {
        !self.interfaces.is_empty()
    }

    /// The whole length of the record that starts `b`, read from its header
    /// (`b` must hold at least [`Parser::header_len`] bytes). A pcapng
    /// section header sets the byte order of what follows.
    ///
    /// # Errors
    /// A length that cannot be right.
    pub fn record_len(&mut self, b: &[u8]) -> Result<usize, Problem> {
        match self.format {
            Format::Pcap => {
                let caplen = field(word(b, 8, self.big_endian), "record header")? as usize;
                if let Some(iface) = self.interfaces.first() {
                    iface.check_caplen(caplen)?;
                }
                Ok(PCAP_RECORD_HEADER + caplen)
            }
            Format::Pcapng => {
                if field(word(b, 0, self.big_endian), "block type")? == PCAPNG_SHB {
                    // A section header: its byte-order magic decides how to read the rest.
                    let bom = b.get(8..12).unwrap_or_default();
                    self.big_endian = match bom {
                        [0x1a, 0x2b, 0x3c, 0x4d] => true,
                        [0x4d, 0x3c, 0x2b, 0x1a] => false,
                        _ => {
                            return Err(Problem::Corrupt(
                                "section header byte-order magic",
                                word(b, 8, true).map_or(0, u64::from),
                            ))
                        }
                    };
                }
                let total = field(word(b, 4, self.big_endian), "block header")? as usize;
                if total < 12 || !total.is_multiple_of(4) || total > MAX_RECORD_LEN {
                    return Err(Problem::Corrupt("block total length", total as u64));
                }
                Ok(total)
            }
        }
    }

    /// Parses one whole record (`b` is exactly [`Parser::record_len`] bytes).
    ///
    /// # Errors
    /// A field that cannot be right.
    pub fn parse(&mut self, b: &[u8]) -> Result<Record, Problem> {
        match self.format {
            Format::Pcap => self.pcap_record(b),
            Format::Pcapng => self.pcapng_block(b),
        }
    }

    /// Frames so far that were ERF records (link type 197), whether or not
    /// they carried a frame.
    pub fn erf_records(&self) -> u64 {
        self.erf_records
    }

    /// A packet on `iface`, counted if it is an ERF record.
    fn packet_on(
        &mut self,
        iface: Interface,
        b: &[u8],
        ts_ns: u64,
        at: usize,
        caplen: usize,
        orig_len: u32,
    ) -> Result<Record, Problem> {
        if iface.link_type.0 == erf::LINKTYPE_ERF {
            self.erf_records += 1;
        }
        iface.packet(b, ts_ns, at, caplen, orig_len)
    }

    fn pcap_record(&mut self, b: &[u8]) -> Result<Record, Problem> {
        let be = self.big_endian;
        let secs = u64::from(field(word(b, 0, be), "record header")?);
        let frac = u64::from(field(word(b, 4, be), "record header")?);
        let orig_len = field(word(b, 12, be), "record header")?;
        let iface = *self
            .interfaces
            .first()
            .ok_or(Problem::Corrupt("no file header", 0))?;
        let ts_ns = secs * 1_000_000_000 + frac * (1_000_000_000 / iface.units_per_sec.max(1));
        self.packet_on(
            iface,
            b,
            ts_ns,
            PCAP_RECORD_HEADER,
            b.len() - PCAP_RECORD_HEADER,
            orig_len,
        )
    }

    fn pcapng_block(&mut self, b: &[u8]) -> Result<Record, Problem> {
        let be = self.big_endian;
        let total = b.len();
        let kind = field(word(b, 0, be), "block type")?;
        let trailer = field(word(b, total.saturating_sub(4), be), "block trailer")?;
        if trailer as usize != total {
            return Err(Problem::Corrupt(
                "block trailing length differs from leading length",
                u64::from(trailer),
            ));
        }
        match kind {
            PCAPNG_SHB => {
                self.interfaces.clear();
                Ok(Record::Other)
            }
            PCAPNG_IDB => {
                if total < 20 {
                    return Err(Problem::Corrupt(
                        "interface description block length",
                        total as u64,
                    ));
                }
                if self.interfaces.len() >= MAX_INTERFACES {
                    return Err(Problem::Corrupt(
                        "too many interfaces",
                        self.interfaces.len() as u64,
                    ));
                }
                let link = u32::from(half(b, 8, be).ok_or(Problem::Corrupt("link type", 0))?);
                let snaplen = field(word(b, 12, be), "snap length")?;
                let (units_per_sec, offset_secs, fcs_len) = self.idb_options(b, 16, total - 4);
                self.interfaces.push(Interface {
                    link_type: LinkType(link),
                    units_per_sec,
                    offset_secs,
                    snaplen,
                    fcs_len,
                });
                Ok(Record::Other)
            }
            PCAPNG_EPB | PCAPNG_PB => {
                // Enhanced packet block, or the obsolete packet block (16-bit interface id).
                if total < 32 {
                    return Err(Problem::Corrupt("packet block length", total as u64));
                }
                let iface_id = if kind == PCAPNG_EPB {
                    field(word(b, 8, be), "interface id")? as usize
                } else {
                    usize::from(half(b, 8, be).ok_or(Problem::Corrupt("interface id", 0))?)
                };
                let Some(iface) = self.interfaces.get(iface_id).copied() else {
                    return Err(Problem::Corrupt(
                        "packet names an undeclared interface",
                        iface_id as u64,
                    ));
                };
                let ts_hi = u64::from(field(word(b, 12, be), "timestamp")?);
                let ts_lo = u64::from(field(word(b, 16, be), "timestamp")?);
                let caplen = field(word(b, 20, be), "captured length")? as usize;
                let orig_len = field(word(b, 24, be), "original length")?;
                if 28 + caplen > total - 4 {
                    return Err(Problem::Corrupt(
                        "captured length runs past the block",
                        caplen as u64,
                    ));
                }
                iface.check_caplen(caplen)?;
                self.packet_on(
                    iface,
                    b,
                    scale_ts((ts_hi << 32) | ts_lo, iface),
                    28,
                    caplen,
                    orig_len,
                )
            }
            PCAPNG_SPB => {
                // Simple packet block: interface 0, no timestamp. Its
                // fixed part is 16 bytes: a shorter one holds no length.
                if total < 16 {
                    return Err(Problem::Corrupt("simple packet block length", total as u64));
                }
                let Some(iface) = self.interfaces.first().copied() else {
                    return Err(Problem::Corrupt(
                        "simple packet block before any interface",
                        0,
                    ));
                };
                let orig_len = field(word(b, 8, be), "original length")?;
                let caplen = (orig_len as usize).min(total - 16);
                iface.check_caplen(caplen)?;
                self.packet_on(iface, b, 0, 12, caplen, orig_len)
            }
            _ => Ok(Record::Other),
        }
    }

    /// Reads `if_tsresol`, `if_tsoffset` and `if_fcslen` from an interface
    /// block's options.
    fn idb_options(&self, b: &[u8], mut at: usize, end: usize) -> (u64, i64, u32) {
        let be = self.big_endian;
        let mut units = 1_000_000u64;
        let mut offset = 0i64;
        let mut fcs_len = 0u32;
        while at + 4 <= end {
            let (Some(code), Some(len)) = (half(b, at, be), half(b, at + 2, be)) else {
                break;
            };
            let len = usize::from(len);
            let val = at + 4;
            if code == 0 || val + len > end {
                break;
            }
            match (code, len) {
                (9, 1) => {
                    let r = b.get(val).copied().unwrap_or(6);
                    let exp = u32::from(r & 0x7f);
                    units = if r & 0x80 == 0 {
                        10u64.checked_pow(exp).unwrap_or(1_000_000_000)
                    } else {
                        1u64.checked_shl(exp).unwrap_or(1_000_000_000)
                    };
                }
                (13, 1) => fcs_len = u32::from(b.get(val).copied().unwrap_or(0)),
                (14, 8) => {
                    if let (Some(hi), Some(lo)) = (word(b, val, be), word(b, val + 4, be)) {
                        let (hi, lo) = (u64::from(hi), u64::from(lo));
                        offset = if be { (hi << 32) | lo } else { (lo << 32) | hi } as i64;
                    }
                }
                _ => {}
            }
            at = val + len.div_ceil(4) * 4;
        }
        (units.max(1), offset, fcs_len)
    }
}

/// The registered name of a link type (tcpdump.org `LINKTYPE_*`), for
/// messages about one the analyzer does not dissect.
pub fn link_type_name(link: u32) -> &'static str {
    match link {
        0 => "LINKTYPE_NULL (BSD loopback)",
        1 => "LINKTYPE_ETHERNET",
        101 => "LINKTYPE_RAW",
        105 => "LINKTYPE_IEEE802_11 (Wi-Fi)",
        108 => "LINKTYPE_LOOP (OpenBSD loopback)",
        113 => "LINKTYPE_LINUX_SLL",
        127 => "LINKTYPE_IEEE802_11_RADIOTAP",
        147..=162 => "LINKTYPE_USER (private use)",
        189 => "LINKTYPE_USB_LINUX",
        197 => "LINKTYPE_ERF (Endace ERF records, as ibdump writes them)",
        220 => "LINKTYPE_USB_LINUX_MMAPPED",
        228 => "LINKTYPE_IPV4",
        229 => "LINKTYPE_IPV6",
        247 => "LINKTYPE_INFINIBAND",
        252 => "LINKTYPE_WIRESHARK_UPPER_PDU",
        276 => "LINKTYPE_LINUX_SLL2",
        _ => "not a link type this analyzer knows",
    }
}

fn scale_ts(ts: u64, iface: Interface) -> u64 {
    let units = iface.units_per_sec.max(1);
    let secs = ts / units;
    let frac = ts % units;
    let ns = (u128::from(frac) * 1_000_000_000 / u128::from(units)) as u64;
    let secs = secs.saturating_add_signed(iface.offset_secs);
    secs.saturating_mul(1_000_000_000).saturating_add(ns)
}
