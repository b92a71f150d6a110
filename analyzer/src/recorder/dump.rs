//! A recorder dump as pcapng: what Wireshark and tshark open, with the
//! trigger as the section's comment, the findings as their frames'
//! comments and the probe records and mountstats snapshots in custom
//! blocks (the layout is `docs/recorder.md`'s).

use std::io::{self, Write};

use rdma_dissectors::link::LinkType;

use super::probe_text;
use super::ring::{Entry, Item};

/// pcapng's copiable Custom Block: a tool that rewrites the file may keep it.
pub const CUSTOM_BLOCK: u32 = 0x0000_0BAD;
/// The Private Enterprise Number the custom blocks carry. The project has
/// none registered with IANA; 32473 is the number RFC 5612 sets aside for
/// examples and documentation, so it cannot collide with a registered
/// vendor's blocks. Readers match it together with [`MAGIC`].
pub const PEN: u32 = 32_473;
/// The first bytes of a custom block's data: which layout follows.
pub const MAGIC: &[u8; 8] = b"RDMAREC1";
/// A custom block's record kinds.
pub const KIND_PROBE: u32 = 1;
/// /proc/self/mountstats's RDMA mounts, as the kernel printed them.
pub const KIND_MOUNTSTATS: u32 = 2;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const EPB: u32 = 6;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_TSRESOL: u16 = 9;

/// Writes pcapng blocks, little-endian.
pub struct DumpWriter<W: Write> {
    out: W,
    links: Vec<LinkType>,
    snaplen: u32,
    /// Bytes written so far.
    pub bytes: u64,
}

fn option(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    // An option's length is 16 bits: a longer comment is cut (at a char).
    let mut end = value.len().min(usize::from(u16::MAX) - 3);
    while end < value.len() && (value[end] & 0xc0) == 0x80 {
        end -= 1;
    }
    let value = &value[..end];
    buf.extend_from_slice(&code.to_le_bytes());
    buf.extend_from_slice(&(value.len() as u16).to_le_bytes());
    buf.extend_from_slice(value);
    buf.resize(buf.len() + (4 - value.len() % 4) % 4, 0);
}

fn end_of_options(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[0; 4]);
}

impl<W: Write> DumpWriter<W> {
    /// Starts the file: a section whose comment is `comment`, written by us.
    ///
    /// # Errors
    /// When writing fails.
    pub fn new(out: W, comment: &str, snaplen: u32) -> io::Result<Self> {
        let mut w = DumpWriter {
            out,
            links: Vec::new(),
            snaplen,
            bytes: 0,
        };
        let mut body = Vec::with_capacity(64 + comment.len());
        body.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&(-1i64).to_le_bytes());
        option(&mut body, OPT_COMMENT, comment.as_bytes());
        let app = concat!(
            "rdma-analyzer ",
            env!("CARGO_PKG_VERSION"),
            " flight recorder"
        );
        option(&mut body, SHB_USERAPPL, app.as_bytes());
        end_of_options(&mut body);
        w.block(SHB, &body)?;
        Ok(w)
    }

    fn block(&mut self, kind: u32, body: &[u8]) -> io::Result<()> {
        let pad = (4 - body.len() % 4) % 4;
        let total = u32::try_from(12 + body.len() + pad)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "block over 4 GiB"))?;
        self.out.write_all(&kind.to_le_bytes())?;
        self.out.write_all(&total.to_le_bytes())?;
        self.out.write_all(body)?;
        self.out.write_all(&[0u8; 3][..pad])?;
        self.out.write_all(&total.to_le_bytes())?;
        self.bytes += u64::from(total);
        Ok(())
    }

    /// The interface of `link`, described the first time it is needed.
    fn interface(&mut self, link: LinkType) -> io::Result<u32> {
        if let Some(i) = self.links.iter().position(|l| *l == link) {
            return Ok(i as u32);
        }
        let mut body = Vec::with_capacity(20);
        body.extend_from_slice(&(link.0 as u16).to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&self.snaplen.to_le_bytes());
        option(&mut body, IF_TSRESOL, &[9]);
        end_of_options(&mut body);
        self.block(IDB, &body)?;
        self.links.push(link);
        Ok(self.links.len() as u32 - 1)
    }

    /// One custom block of `kind` at `ts_ns`.
    ///
    /// # Errors
    /// When writing fails.
    pub fn custom(&mut self, kind: u32, ts_ns: u64, seq: u64, text: &str) -> io::Result<()> {
        let mut body = Vec::with_capacity(32 + text.len());
        body.extend_from_slice(&PEN.to_le_bytes());
        body.extend_from_slice(MAGIC);
        body.extend_from_slice(&kind.to_le_bytes());
        body.extend_from_slice(&ts_ns.to_le_bytes());
        body.extend_from_slice(&seq.to_le_bytes());
        body.extend_from_slice(&(text.len() as u32).to_le_bytes());
        body.extend_from_slice(text.as_bytes());
        self.block(CUSTOM_BLOCK, &body)
    }

    /// One ring entry: a frame as an Enhanced Packet Block with its
    /// findings as comments, a probe record as a custom block.
    ///
    /// # Errors
    /// When writing fails.
    pub fn entry(&mut self, e: &Entry) -> io::Result<()> {
        match &e.item {
            Item::Frame {
                link,
                orig_len,
                data,
                comments,
                ..
            } => {
                let id = self.interface(*link)?;
                let mut body = Vec::with_capacity(32 + data.len());
                body.extend_from_slice(&id.to_le_bytes());
                body.extend_from_slice(&((e.ts_ns >> 32) as u32).to_le_bytes());
                body.extend_from_slice(&(e.ts_ns as u32).to_le_bytes());
                body.extend_from_slice(&(data.len() as u32).to_le_bytes());
                body.extend_from_slice(&orig_len.to_le_bytes());
                body.extend_from_slice(data);
                body.resize(body.len() + (4 - data.len() % 4) % 4, 0);
                if !comments.is_empty() {
                    for c in comments {
                        option(&mut body, OPT_COMMENT, c.as_bytes());
                    }
                    end_of_options(&mut body);
                }
                self.block(EPB, &body)
            }
            Item::Probe(p) => self.custom(KIND_PROBE, e.ts_ns, p.meta.seq, &probe_text::format(p)),
        }
    }

    /// Flushes and returns the output.
    ///
    /// # Errors
    /// When the flush fails.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A custom block of ours, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// [`KIND_PROBE`] or [`KIND_MOUNTSTATS`] (others from later versions).
    pub kind: u32,
    /// ns since the epoch.
    pub ts_ns: u64,
    /// The probe record's sequence number (0 for a snapshot).
    pub seq: u64,
    /// The text.
    pub text: String,
}

/// Reads one of our records from a custom block's data (after its PEN);
/// `None` for another layout under the same number.
pub fn parse_custom(data: &[u8]) -> Option<Record> {
    let rest = data.strip_prefix(MAGIC.as_slice())?;
    let kind = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?);
    let ts_ns = u64::from_le_bytes(rest.get(4..12)?.try_into().ok()?);
    let seq = u64::from_le_bytes(rest.get(12..20)?.try_into().ok()?);
    let len = u32::from_le_bytes(rest.get(20..24)?.try_into().ok()?) as usize;
    let text = rest.get(24..24usize.checked_add(len)?)?;
    Some(Record {
        kind,
        ts_ns,
        seq,
        text: String::from_utf8_lossy(text).into_owned(),
    })
}
