//! TCP header (RFC 9293 section 3.1). iWARP (MPA/DDP/RDMAP) rides on TCP,
//! NFS over RDMA on port 20049.
//!
//! ```text
//!  0 source_port  2 destination_port  4 sequence_number  8 acknowledgment_number
//! 12 data_offset(4) reserved(4)  13 flags  14 window  16 checksum  18 urgent_pointer
//! 20 options (data_offset * 4 - 20 bytes)
//! ```

use crate::bytes::{u16_at, u32_at};
use crate::error::{Error, Result};
use crate::layer::Layer;

/// A TCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tcp {
    /// Source port.
    pub source_port: u16,
    /// Destination port.
    pub destination_port: u16,
    /// Sequence number of the first payload octet (of the SYN itself on a SYN).
    pub seq: u32,
    /// Acknowledgment number (meaningful when `ack` is set).
    pub ack_number: u32,
    /// Header length in octets, options included (20 to 60).
    pub data_offset: u8,
    /// SYN: synchronize sequence numbers.
    pub syn: bool,
    /// FIN: no more data from the sender.
    pub fin: bool,
    /// RST: reset the connection.
    pub rst: bool,
    /// ACK: the acknowledgment number is significant.
    pub ack: bool,
    /// PSH: push function.
    pub psh: bool,
    /// Receive window, unscaled, as found.
    pub window: u16,
}

/// A TCP header with the payload the capture kept of its segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpLayer<'a> {
    /// The header.
    pub header: Tcp,
    /// What the capture kept of the payload.
    pub payload: &'a [u8],
    /// The payload's length on the wire, from the IP length: more than
    /// `payload.len()` when a snap length cut the segment.
    pub wire_len: u32,
}

impl TcpLayer<'_> {
    /// Whether the capture kept less of the payload than the segment carried.
    #[inline]
    pub fn cut(&self) -> bool {
        (self.payload.len() as u64) < u64::from(self.wire_len)
    }
}

impl Tcp {
    /// Length of a header without options.
    pub const MIN_HEADER_LEN: usize = 20;

    /// Parses the header of `segment` (the IP payload as captured) and
    /// returns it with the payload after the options.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the header (options included) is not all
    /// there; [`Error::BadField`] when the data offset is below 5 words.
    pub fn parse(segment: &[u8]) -> Result<(Tcp, &[u8])> {
        let fixed = segment
            .get(..Self::MIN_HEADER_LEN)
            .ok_or_else(|| Error::truncated(Layer::Tcp, 0, Self::MIN_HEADER_LEN, segment.len()))?;
        let byte = |i: usize| fixed.get(i).copied().unwrap_or(0);
        let data_offset = (byte(12) >> 4) * 4;
        if usize::from(data_offset) < Self::MIN_HEADER_LEN {
            return Err(Error::BadField {
                layer: Layer::Tcp,
                offset: 12,
                field: "data_offset",
                value: u64::from(byte(12) >> 4),
                expected: "at least 5 (32-bit words)",
            });
        }
        let payload = segment.get(usize::from(data_offset)..).ok_or_else(|| {
            Error::truncated(Layer::Tcp, 0, usize::from(data_offset), segment.len())
        })?;
        let flags = byte(13);
        let tcp = Tcp {
            source_port: u16_at(fixed, 0),
            destination_port: u16_at(fixed, 2),
            seq: u32_at(fixed, 4),
            ack_number: u32_at(fixed, 8),
            data_offset,
            fin: flags & 0x01 != 0,
            syn: flags & 0x02 != 0,
            rst: flags & 0x04 != 0,
            psh: flags & 0x08 != 0,
            ack: flags & 0x10 != 0,
            window: u16_at(fixed, 14),
        };
        Ok((tcp, payload))
    }

    /// Whether either port is `port`.
    #[inline]
    pub fn has_port(&self, port: u16) -> bool {
        self.source_port == port || self.destination_port == port
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    /// 20049 -> 40000, seq 0x01020304, ack 0x0a0b0c0d, 8 words (12 option
    /// octets: NOP NOP timestamp), flags ACK|PSH, window 512.
    const TCP: [u8; 32] = hex!(
        "4e 51 9c 40 01 02 03 04 0a 0b 0c 0d 80 18 02 00 00 00 00 00"
        "01 01 08 0a 00 00 00 01 00 00 00 02"
    );

    #[test]
    fn parse_tcp() {
        let mut s = TCP.to_vec();
        s.extend_from_slice(b"payload");
        let (h, payload) = Tcp::parse(&s).unwrap();
        assert_eq!(
            h,
            Tcp {
                source_port: 20049,
                destination_port: 40000,
                seq: 0x0102_0304,
                ack_number: 0x0a0b_0c0d,
                data_offset: 32,
                syn: false,
                fin: false,
                rst: false,
                ack: true,
                psh: true,
                window: 512,
            }
        );
        assert_eq!(payload, b"payload");
        assert!(h.has_port(20049) && !h.has_port(4791));
    }

    #[test]
    fn flags() {
        let mut s = TCP;
        s[13] = 0x07;
        let (h, _) = Tcp::parse(&s).unwrap();
        assert!(h.syn && h.fin && h.rst && !h.ack && !h.psh);
    }

    #[test]
    fn options_cut_is_truncated_not_bad() {
        for cut in 0..TCP.len() {
            let e = Tcp::parse(&TCP[..cut]).unwrap_err();
            let needed = if cut < 20 { 20 } else { 32 };
            assert_eq!(
                e,
                Error::Truncated {
                    layer: Layer::Tcp,
                    offset: 0,
                    needed,
                    available: cut
                }
            );
        }
    }

    #[test]
    fn short_data_offset_is_bad() {
        let mut s = TCP;
        s[12] = 0x40;
        assert!(matches!(
            Tcp::parse(&s).unwrap_err(),
            Error::BadField {
                field: "data_offset",
                value: 4,
                ..
            }
        ));
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok((h, payload)) = Tcp::parse(&data) {
                prop_assert_eq!(usize::from(h.data_offset) + payload.len(), data.len());
            }
        }
    }
}
