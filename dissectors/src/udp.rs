//! UDP header (RFC 768). RoCEv2 rides on destination port 4791.
//!
//! ```text
//!  0 source_port  2 destination_port  4 length  6 checksum
//! ```

use crate::bytes::{put_u16, u16_at};
use crate::error::{Error, Result};
use crate::layer::Layer;

/// The IANA-assigned RoCEv2 UDP destination port.
pub const ROCEV2_PORT: u16 = 4791;

/// A UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Udp {
    /// Source port (RoCEv2 senders use it for flow entropy).
    pub source_port: u16,
    /// Destination port.
    pub destination_port: u16,
    /// Length of header and payload, as announced.
    pub length: u16,
    /// Checksum as found (RoCEv2 senders usually send 0).
    pub checksum: u16,
}

impl Udp {
    /// Length of the header on the wire.
    pub const HEADER_LEN: usize = 8;

    /// Parses the header and returns it with the payload, cut at the
    /// announced length.
    ///
    /// # Errors
    /// [`Error::Truncated`] when fewer than 8 bytes are given;
    /// [`Error::BadField`] when `length` is below 8.
    pub fn parse(input: &[u8]) -> Result<(Udp, &[u8])> {
        let h = etherparse::UdpHeaderSlice::from_slice(input)
            .map_err(|_| Error::truncated(Layer::Udp, 0, Self::HEADER_LEN, input.len()))?;
        let udp = Udp {
            source_port: h.source_port(),
            destination_port: h.destination_port(),
            length: h.length(),
            checksum: h.checksum(),
        };
        let len = usize::from(udp.length);
        if len < Self::HEADER_LEN {
            return Err(Error::BadField {
                layer: Layer::Udp,
                offset: 4,
                field: "length",
                value: len as u64,
                expected: "at least 8",
            });
        }
        let end = len.min(input.len());
        Ok((udp, input.get(Self::HEADER_LEN..end).unwrap_or_default()))
    }

    /// Writes the header for a payload of `payload_len` bytes with a zero
    /// checksum, as RoCEv2 senders do (RoCEv2 annex A17.3.2).
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is too short; [`Error::BadField`] when
    /// the payload does not fit the length field.
    pub fn emit(&self, payload_len: usize, buf: &mut [u8]) -> Result<usize> {
        let Ok(len) = u16::try_from(payload_len + Self::HEADER_LEN) else {
            return Err(Error::BadField {
                layer: Layer::Udp,
                offset: 4,
                field: "length",
                value: payload_len as u64,
                expected: "at most 65527 payload bytes",
            });
        };
        if buf.len() < Self::HEADER_LEN {
            return Err(Error::truncated(Layer::Udp, 0, Self::HEADER_LEN, buf.len()));
        }
        put_u16(buf, 0, self.source_port);
        put_u16(buf, 2, self.destination_port);
        put_u16(buf, 4, len);
        put_u16(buf, 6, self.checksum);
        Ok(Self::HEADER_LEN)
    }

    /// The announced length, read straight from raw header bytes.
    pub fn length_of(raw: &[u8]) -> u16 {
        u16_at(raw, 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    // UDP header of a RoCEv2 ACK from the lab: port 49152 -> 4791, 28 bytes.
    const UDP: [u8; 8] = hex!("c0 00 12 b7 00 1c 00 00");

    #[test]
    fn parse_udp() {
        let mut f = UDP.to_vec();
        f.extend_from_slice(&[1; 24]);
        let (h, payload) = Udp::parse(&f).unwrap();
        assert_eq!(
            h,
            Udp {
                source_port: 49152,
                destination_port: ROCEV2_PORT,
                length: 28,
                checksum: 0
            }
        );
        assert_eq!(payload.len(), 20);
        let mut buf = [0xa5; 8];
        h.emit(20, &mut buf).unwrap();
        assert_eq!(buf, UDP);
    }

    #[test]
    fn truncated_at_every_offset() {
        for cut in 0..8 {
            assert_eq!(
                Udp::parse(&UDP[..cut]).unwrap_err(),
                Error::Truncated {
                    layer: Layer::Udp,
                    offset: 0,
                    needed: 8,
                    available: cut
                }
            );
        }
    }

    #[test]
    fn short_length_is_bad() {
        let e = Udp::parse(&hex!("c0 00 12 b7 00 04 00 00")).unwrap_err();
        assert!(matches!(
            e,
            Error::BadField {
                field: "length",
                value: 4,
                ..
            }
        ));
    }

    proptest! {
        #[test]
        fn round_trip(sp: u16, dp: u16, len in 0usize..64) {
            let h = Udp { source_port: sp, destination_port: dp, length: (len + 8) as u16, checksum: 0 };
            let mut buf = vec![0u8; 8 + len];
            h.emit(len, &mut buf).unwrap();
            let (p, payload) = Udp::parse(&buf).unwrap();
            prop_assert_eq!(p, h);
            prop_assert_eq!(payload.len(), len);
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..32)) {
            let _ = Udp::parse(&data);
        }
    }
}
