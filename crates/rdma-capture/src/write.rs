//! Writing pcap and pcapng: the one writer behind `live --write` (pcapng,
//! nanosecond timestamps) and `synth` (classic pcap, as tcpdump writes).

use std::io::{self, Write};

use rdma_dissectors::link::LinkType;

use super::format::Format;

/// Snap length written in file headers: every frame is kept whole.
pub const SNAPLEN: u32 = 262_144;

/// Timestamp resolution of a classic pcap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Microseconds (the original format, magic `a1b2c3d4`).
    Micro,
    /// Nanoseconds (magic `a1b23c4d`; pcapng always uses this one here).
    Nano,
}

/// Writes frames to a capture file.
pub struct CaptureWriter<W: Write> {
    out: W,
    format: Format,
    resolution: Resolution,
    /// Bytes written so far, headers included.
    pub bytes: u64,
}

impl<W: Write> CaptureWriter<W> {
    /// Starts a file of `format` for frames of `link` on `out` (pcapng
    /// always has nanosecond timestamps).
    ///
    /// # Errors
    /// When writing the file header fails.
    pub fn new(out: W, format: Format, link: LinkType, resolution: Resolution) -> io::Result<Self> {
        let mut w = CaptureWriter {
            out,
            format,
            resolution: if format == Format::Pcapng {
                Resolution::Nano
            } else {
                resolution
            },
            bytes: 0,
        };
        match format {
            Format::Pcap => {
                let magic: u32 = match resolution {
                    Resolution::Micro => 0xa1b2_c3d4,
                    Resolution::Nano => 0xa1b2_3c4d,
                };
                let mut h = Vec::with_capacity(24);
                h.extend_from_slice(&magic.to_le_bytes());
                h.extend_from_slice(&2u16.to_le_bytes());
                h.extend_from_slice(&4u16.to_le_bytes());
                h.extend_from_slice(&[0; 8]);
                h.extend_from_slice(&SNAPLEN.to_le_bytes());
                h.extend_from_slice(&link.0.to_le_bytes());
                w.write(&h)?;
            }
            Format::Pcapng => {
                // Section header block: byte-order magic, version 1.0, unknown length.
                let mut shb = Vec::with_capacity(16);
                shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
                shb.extend_from_slice(&1u16.to_le_bytes());
                shb.extend_from_slice(&0u16.to_le_bytes());
                shb.extend_from_slice(&(-1i64).to_le_bytes());
                w.block(0x0A0D_0D0A, &shb, &[])?;
                // Interface description block, with if_tsresol = 9 (ns).
                let mut idb = Vec::with_capacity(20);
                idb.extend_from_slice(&(link.0 as u16).to_le_bytes());
                idb.extend_from_slice(&0u16.to_le_bytes());
                idb.extend_from_slice(&SNAPLEN.to_le_bytes());
                idb.extend_from_slice(&9u16.to_le_bytes());
                idb.extend_from_slice(&1u16.to_le_bytes());
                idb.extend_from_slice(&[9, 0, 0, 0]);
                idb.extend_from_slice(&[0, 0, 0, 0]);
                w.block(1, &idb, &[])?;
            }
        }
        Ok(w)
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.bytes += b.len() as u64;
        Ok(())
    }

    /// A pcapng block: `head` then `data`, padded to 32 bits, between its lengths.
    fn block(&mut self, kind: u32, head: &[u8], data: &[u8]) -> io::Result<()> {
        let body = head.len() + data.len();
        let pad = (4 - body % 4) % 4;
        let total = u32::try_from(12 + body + pad)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "block over 4 GiB"))?;
        self.write(&kind.to_le_bytes())?;
        self.write(&total.to_le_bytes())?;
        self.write(head)?;
        self.write(data)?;
        self.write([0u8; 3].get(..pad).unwrap_or_default())?;
        self.write(&total.to_le_bytes())
    }

    /// Appends one frame captured at `ts_ns` (ns since the epoch) that was
    /// `orig_len` bytes on the wire.
    ///
    /// # Errors
    /// When writing fails, or the frame is longer than a record can say.
    pub fn packet(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let caplen = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame over 4 GiB"))?;
        match self.format {
            Format::Pcap => {
                let secs = ts_ns / 1_000_000_000;
                let frac = ts_ns % 1_000_000_000;
                let frac = match self.resolution {
                    Resolution::Micro => frac / 1000,
                    Resolution::Nano => frac,
                };
                let mut h = [0u8; 16];
                h[0..4].copy_from_slice(&(secs as u32).to_le_bytes());
                h[4..8].copy_from_slice(&(frac as u32).to_le_bytes());
                h[8..12].copy_from_slice(&caplen.to_le_bytes());
                h[12..16].copy_from_slice(&orig_len.to_le_bytes());
                self.write(&h)?;
                self.write(data)
            }
            Format::Pcapng => {
                let mut h = [0u8; 20];
                h[4..8].copy_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
                h[8..12].copy_from_slice(&(ts_ns as u32).to_le_bytes());
                h[12..16].copy_from_slice(&caplen.to_le_bytes());
                h[16..20].copy_from_slice(&orig_len.to_le_bytes());
                self.block(6, &h, data)
            }
        }
    }

    /// Flushes and returns the output.
    ///
    /// # Errors
    /// When the final flush fails.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// Flushes what is buffered.
    ///
    /// # Errors
    /// When the flush fails.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::super::read::PcapReader;
    use super::*;

    #[test]
    fn what_is_written_reads_back_in_both_formats() {
        for (format, res) in [
            (Format::Pcapng, Resolution::Nano),
            (Format::Pcap, Resolution::Nano),
            (Format::Pcap, Resolution::Micro),
        ] {
            let mut w = CaptureWriter::new(Vec::new(), format, LinkType(1), res).unwrap();
            w.packet(1_700_000_000_123_456_789, 60, &[0xaa; 42])
                .unwrap();
            w.packet(1_700_000_000_223_456_789, 43, &[0xbb; 43])
                .unwrap();
            let bytes = w.finish().unwrap();
            let mut r = PcapReader::new(bytes.as_slice(), "w".into()).unwrap();
            assert_eq!(r.format(), format);
            let a = r.next_packet().unwrap().unwrap();
            let want = if res == Resolution::Micro {
                1_700_000_000_123_456_000
            } else {
                1_700_000_000_123_456_789
            };
            assert_eq!(a.ts_ns, want, "{format:?}");
            assert_eq!((a.orig_len, a.data.len()), (60, 42));
            let b = r.next_packet().unwrap().unwrap();
            assert_eq!(b.data, &[0xbb; 43][..]);
            assert!(r.next_packet().unwrap().is_none());
        }
    }
}
