//! RPC-over-RDMA version 1 CM private data (RFC 8797).
//!
//! Both peers may put eight octets in the private data of the CM REQ/REP
//! (RFC 8797 section 4):
//!
//! ```text
//!  0               1               2               3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Format Identifier (0xf6ab0e18)                | 0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |    Version    |  Reserved   |R|   Send Size   | Receive Size  | 4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The sizes are encoded as `(bytes / 1024) - 1`, so an octet covers
//! 1 KiB to 256 KiB (RFC 8797 section 4.2). The identifier may sit at any
//! offset of the private data, with no alignment (RFC 8797 section 5.2):
//! other layers (the RDMA-CM header, MPAv2) may come first. [`find`] does
//! that search; [`negotiate`] applies the rules of sections 4.1, 4.2 and 5.1
//! to the two peers' messages. The message is read by a nom parser
//! (`message`) whose failure becomes an [`Error`] in [`CmPrivateData::parse`].

use nom::Parser;

use crate::error::{Error, Result};
use crate::layer::Layer;
use crate::parse::{self, Fail, PResult};

/// The format identifier, in network byte order on the wire (RFC 8797 section 4, IANA section 8).
pub const FORMAT_IDENTIFIER: u32 = 0xf6ab0e18;

/// Length of the version 1 message, identifier included (RFC 8797 section 4).
pub const MESSAGE_LEN: usize = 8;

/// The only message format version defined (RFC 8797 section 4).
pub const VERSION_1: u8 = 1;

/// The inline threshold when a peer sent no usable private data
/// (RFC 8166 section 3.3.3, RFC 8797 section 5.1).
pub const DEFAULT_INLINE_THRESHOLD: u32 = 1024;

/// The largest size an octet can encode: (255 + 1) * 1024 (RFC 8797 section 4.2).
pub const MAX_INLINE_THRESHOLD: u32 = 262_144;

/// The R bit: the sender supports remote invalidation (RFC 8797 section 4, 4.1).
/// It is the lowest bit of the flags octet (bit 15 of the second word).
pub const FLAG_REMOTE_INVALIDATE: u8 = 0x01;

/// Offsets of the fields the emitter reports errors for.
mod field {
    pub const VERSION: usize = 4;
    pub const SEND_SIZE: usize = 6;
    pub const RECV_SIZE: usize = 7;
}

/// The eight octets (section 4): all of them or a truncation, then a
/// format identifier that must match.
fn message(i: &[u8]) -> PResult<'_, CmPrivateData> {
    let (rest, raw) = parse::array::<MESSAGE_LEN>(i)?;
    let (_, m) = octets(i)?;
    match m {
        Octets {
            ident: FORMAT_IDENTIFIER,
            ..
        } => Ok((rest, m.decode(raw))),
        Octets { ident, .. } => Err(Fail::bad_field(
            i,
            "format_identifier",
            u64::from(ident),
            "0xf6ab0e18",
        )),
    }
}

/// The fields of the eight octets, undecoded.
struct Octets {
    ident: u32,
    version: u8,
    flags: u8,
    send_size: u8,
    recv_size: u8,
}

fn octets(i: &[u8]) -> PResult<'_, Octets> {
    (
        parse::be_u32,
        parse::be_u8,
        parse::be_u8,
        parse::be_u8,
        parse::be_u8,
    )
        .map(|(ident, version, flags, send_size, recv_size)| Octets {
            ident,
            version,
            flags,
            send_size,
            recv_size,
        })
        .parse(i)
}

impl Octets {
    fn decode(&self, raw: [u8; MESSAGE_LEN]) -> CmPrivateData {
        if self.version != VERSION_1 {
            return CmPrivateData::UnknownVersion {
                version: self.version,
                raw,
            };
        }
        CmPrivateData::V1(RpcRdmaCmPrivate {
            version: self.version,
            remote_invalidate: self.flags & FLAG_REMOTE_INVALIDATE != 0,
            flags: self.flags,
            send_size: decode_size(self.send_size),
            recv_size: decode_size(self.recv_size),
        })
    }
}

/// Decodes a size octet: `(v + 1) * 1024` bytes (RFC 8797 section 4.2).
pub const fn decode_size(v: u8) -> u32 {
    (v as u32 + 1) * 1024
}

/// Encodes a size in bytes as `(bytes / 1024) - 1` (RFC 8797 section 4.2),
/// or `None` if `bytes` is not a multiple of 1024 between 1024 and 262144.
pub const fn encode_size(bytes: u32) -> Option<u8> {
    if bytes < 1024 || bytes > MAX_INLINE_THRESHOLD || !bytes.is_multiple_of(1024) {
        return None;
    }
    Some((bytes / 1024 - 1) as u8)
}

/// A version 1 RPC-over-RDMA CM private data message (RFC 8797 section 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RpcRdmaCmPrivate {
    /// Message format version (RFC 8797 section 4); 1 for this struct.
    pub version: u8,
    /// The R bit: the sender supports remote invalidation (RFC 8797 sections 4, 4.1).
    pub remote_invalidate: bool,
    /// The whole flags octet as sent, reserved bits included (RFC 8797 section 4:
    /// senders set the reserved bits to zero, receivers ignore them).
    pub flags: u8,
    /// Largest RDMA Send this peer will transmit, in bytes, decoded (RFC 8797 section 4.2).
    pub send_size: u32,
    /// Largest RDMA Receive this peer will accept, in bytes, decoded (RFC 8797 section 4.2).
    pub recv_size: u32,
}

/// What was found after the format identifier.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmPrivateData {
    /// A version 1 message (RFC 8797 section 4).
    V1(RpcRdmaCmPrivate),
    /// The identifier followed by a version this crate does not know
    /// (RFC 8797 section 6); `raw` holds the eight octets from the identifier on.
    UnknownVersion {
        /// The version octet.
        version: u8,
        /// The eight octets starting at the format identifier.
        raw: [u8; 8],
    },
}

impl CmPrivateData {
    /// Parses the message at the start of `input` and returns the bytes after it.
    ///
    /// # Errors
    /// [`Error::Truncated`] if fewer than 8 bytes are given;
    /// [`Error::BadField`] if the first word is not [`FORMAT_IDENTIFIER`].
    pub fn parse(input: &[u8]) -> Result<(CmPrivateData, &[u8])> {
        parse::run(message, input, Layer::RpcRdmaCmPrivate, 0).map(|(rest, m)| (m, rest))
    }

    /// The version 1 message, if that is what this is.
    pub const fn v1(&self) -> Option<RpcRdmaCmPrivate> {
        match self {
            CmPrivateData::V1(p) => Some(*p),
            CmPrivateData::UnknownVersion { .. } => None,
        }
    }

    /// Length of the message on the wire (always [`MESSAGE_LEN`]).
    pub const fn buffer_len(&self) -> usize {
        MESSAGE_LEN
    }

    /// Writes the eight octets to the start of `buf`; returns 8.
    ///
    /// # Errors
    /// [`Error::Truncated`] if `buf` is shorter than 8 bytes; for
    /// [`CmPrivateData::V1`], [`Error::BadField`] if a size is not encodable
    /// (see [`encode_size`]) or `version` is not 1.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let octets = match self {
            CmPrivateData::V1(p) => p.octets()?,
            CmPrivateData::UnknownVersion { raw, .. } => *raw,
        };
        let Some(dst) = buf.get_mut(..MESSAGE_LEN) else {
            return Err(Error::truncated(
                Layer::RpcRdmaCmPrivate,
                0,
                MESSAGE_LEN,
                buf.len(),
            ));
        };
        dst.copy_from_slice(&octets);
        Ok(MESSAGE_LEN)
    }
}

impl RpcRdmaCmPrivate {
    /// A version 1 message with the R bit as given and no reserved bits.
    pub const fn new(remote_invalidate: bool, send_size: u32, recv_size: u32) -> Self {
        RpcRdmaCmPrivate {
            version: VERSION_1,
            remote_invalidate,
            flags: if remote_invalidate {
                FLAG_REMOTE_INVALIDATE
            } else {
                0
            },
            send_size,
            recv_size,
        }
    }

    /// The reserved bits of the flags octet that were set (RFC 8797 section 4:
    /// senders must send zero; a non-zero value is worth reporting).
    pub const fn reserved_bits(&self) -> u8 {
        self.flags & !FLAG_REMOTE_INVALIDATE
    }

    fn octets(&self) -> Result<[u8; 8]> {
        let bad = |offset: usize, field: &'static str, value: u64, expected: &'static str| {
            Error::BadField {
                layer: Layer::RpcRdmaCmPrivate,
                offset,
                field,
                value,
                expected,
            }
        };
        if self.version != VERSION_1 {
            return Err(bad(field::VERSION, "version", u64::from(self.version), "1"));
        }
        let Some(send) = encode_size(self.send_size) else {
            return Err(bad(
                field::SEND_SIZE,
                "send_size",
                u64::from(self.send_size),
                "a multiple of 1024 from 1024 to 262144",
            ));
        };
        let Some(recv) = encode_size(self.recv_size) else {
            return Err(bad(
                field::RECV_SIZE,
                "recv_size",
                u64::from(self.recv_size),
                "a multiple of 1024 from 1024 to 262144",
            ));
        };
        // The R bit wins over whatever `flags` says about bit 0.
        let flags = (self.flags & !FLAG_REMOTE_INVALIDATE)
            | if self.remote_invalidate {
                FLAG_REMOTE_INVALIDATE
            } else {
                0
            };
        let [a, b, c, d] = FORMAT_IDENTIFIER.to_be_bytes();
        Ok([a, b, c, d, self.version, flags, send, recv])
    }

    /// Writes the eight octets to the start of `buf`; returns 8.
    ///
    /// # Errors
    /// As [`CmPrivateData::emit`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        CmPrivateData::V1(*self).emit(buf)
    }
}

/// Searches `private_data` for the format identifier at any byte offset
/// (RFC 8797 section 5.2: "not restricted to any alignment") and decodes the
/// eight octets there.
///
/// Returns the offset of the identifier and the message. An occurrence with
/// fewer than eight octets after its start is skipped ("the size of the
/// content does not overrun the length of the buffer", section 5.2) and the
/// search goes on. `None` means no RPC-over-RDMA private data: the peer must
/// be treated as using the defaults (section 5.1).
pub fn find(private_data: &[u8]) -> Option<(usize, CmPrivateData)> {
    let ident = FORMAT_IDENTIFIER.to_be_bytes();
    private_data
        .windows(MESSAGE_LEN)
        .enumerate()
        .find(|(_, w)| w.starts_with(&ident))
        .and_then(|(off, w)| {
            let (_, raw) = parse::array::<MESSAGE_LEN>(w).ok()?;
            let (_, m) = octets(w).ok()?;
            Some((off, m.decode(raw)))
        })
}

/// The connection properties both peers end up with.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Negotiated {
    /// The responder may use Send With Invalidate: both peers set R
    /// (RFC 8797 section 4.1).
    pub remote_invalidation: bool,
    /// Inline threshold from the local peer to the remote one, in bytes.
    pub inline_send: u32,
    /// Inline threshold from the remote peer to the local one, in bytes.
    pub inline_recv: u32,
}

/// The negotiated connection properties seen from `local`'s side.
///
/// Rules (RFC 8797):
/// - A peer whose private data is absent or not version 1 counts as if it
///   sent R clear and both sizes encoded as zero, that is 1024 bytes
///   (section 5.1; 1024 is the RFC 8166 section 3.3.3 default).
/// - Each direction's inline threshold is the smaller of the sender's Send
///   Size and the receiver's Receive Size (section 4.2):
///   `inline_send = min(local.send_size, peer.recv_size)`,
///   `inline_recv = min(peer.send_size, local.recv_size)`.
/// - Remote invalidation only when both set R (section 4.1); then a
///   responder may invalidate only an STag of the XID in that reply's
///   `rdma_xid`.
pub fn negotiate(local: Option<RpcRdmaCmPrivate>, peer: Option<RpcRdmaCmPrivate>) -> Negotiated {
    let default = RpcRdmaCmPrivate::new(false, DEFAULT_INLINE_THRESHOLD, DEFAULT_INLINE_THRESHOLD);
    let l = local.unwrap_or(default);
    let p = peer.unwrap_or(default);
    Negotiated {
        remote_invalidation: local.is_some()
            && peer.is_some()
            && l.remote_invalidate
            && p.remote_invalidate,
        inline_send: l.send_size.min(p.recv_size),
        inline_recv: p.send_size.min(l.recv_size),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    // RFC 8797 section 4 layout; values as a Linux client sends them
    // (R set, 4 KiB send and receive: net/sunrpc/xprtrdma/verbs.c sets
    // cp_send_size = cp_recv_size = encoded inline thresholds of 4096).
    const LINUX_CLIENT: [u8; 8] = hex!("f6ab0e18 01 01 03 03");

    // captures/v3-inline.pcap frame 26 (CM REQ from the Debian 6.1 client):
    // the 92-byte REQ private data, a 36-byte RDMA-CM IP header (version 4,
    // port 0xb1ec, 10.99.0.2 -> 10.99.0.1) followed by ours at offset 36.
    const REAL_REQ_PRIVATE: [u8; 92] = hex!(
        "0040b1ec 00000000 00000000 00000000 0a630002 00000000 00000000 00000000 0a630001"
        "f6ab0e18 01010303 00000000 00000000 00000000 00000000 00000000 00000000"
        "00000000 00000000 00000000 00000000 00000000 00000000"
    );
    // captures/v3-inline.pcap frame 27 (CM REP from the server): the first
    // 32 bytes of the REP private data; ours at offset 0, R clear.
    const REAL_REP_PRIVATE: [u8; 32] =
        hex!("f6ab0e18 01000303 00000000 00000000 00000000 00000000 00000000 00000000");

    #[test]
    fn real_connection_setup() {
        let (off, req) = find(&REAL_REQ_PRIVATE).unwrap();
        assert_eq!(off, 36);
        let client = req.v1().unwrap();
        assert_eq!(client, RpcRdmaCmPrivate::new(true, 4096, 4096));
        let (off, rep) = find(&REAL_REP_PRIVATE).unwrap();
        assert_eq!(off, 0);
        let server = rep.v1().unwrap();
        assert_eq!(server, RpcRdmaCmPrivate::new(false, 4096, 4096));
        // The server did not set R, so no Send With Invalidate.
        assert_eq!(
            negotiate(Some(client), Some(server)),
            Negotiated {
                remote_invalidation: false,
                inline_send: 4096,
                inline_recv: 4096
            }
        );
    }

    #[test]
    fn parse_v1() {
        let (m, rest) = CmPrivateData::parse(&LINUX_CLIENT).unwrap();
        assert!(rest.is_empty());
        assert_eq!(
            m,
            CmPrivateData::V1(RpcRdmaCmPrivate {
                version: 1,
                remote_invalidate: true,
                flags: 1,
                send_size: 4096,
                recv_size: 4096
            })
        );
    }

    #[test]
    fn emit_v1() {
        let (m, _) = CmPrivateData::parse(&LINUX_CLIENT).unwrap();
        let mut buf = [0xa5u8; 10];
        assert_eq!(m.emit(&mut buf), Ok(8));
        assert_eq!(buf, hex!("f6ab0e18 01 01 03 03 a5 a5"));
    }

    #[test]
    fn size_bounds() {
        assert_eq!(decode_size(0), 1024);
        assert_eq!(decode_size(255), 262_144);
        assert_eq!(encode_size(1024), Some(0));
        assert_eq!(encode_size(262_144), Some(255));
        assert_eq!(encode_size(1000), None);
        assert_eq!(encode_size(1500), None);
        assert_eq!(encode_size(263_168), None);
        let bad = RpcRdmaCmPrivate::new(false, 1500, 1024);
        assert!(matches!(
            bad.emit(&mut [0; 8]),
            Err(Error::BadField {
                field: "send_size",
                offset: 6,
                ..
            })
        ));
    }

    #[test]
    fn reserved_bits_kept_and_reported() {
        let (m, _) = CmPrivateData::parse(&hex!("f6ab0e18 01 80 00 00")).unwrap();
        let p = m.v1().unwrap();
        assert!(!p.remote_invalidate);
        assert_eq!(p.reserved_bits(), 0x80);
        let mut buf = [0u8; 8];
        p.emit(&mut buf).unwrap();
        assert_eq!(buf, hex!("f6ab0e18 01 80 00 00"));
    }

    #[test]
    fn unknown_version() {
        let raw = hex!("f6ab0e18 02 01 03 03");
        let (m, _) = CmPrivateData::parse(&raw).unwrap();
        assert_eq!(m, CmPrivateData::UnknownVersion { version: 2, raw });
        assert_eq!(m.v1(), None);
        let mut buf = [0u8; 8];
        m.emit(&mut buf).unwrap();
        assert_eq!(buf, raw);
    }

    #[test]
    fn bad_identifier() {
        assert_eq!(
            CmPrivateData::parse(&hex!("f6ab0e19 01 01 03 03")),
            Err(Error::BadField {
                layer: Layer::RpcRdmaCmPrivate,
                offset: 0,
                field: "format_identifier",
                value: 0xf6ab0e19,
                expected: "0xf6ab0e18"
            })
        );
    }

    #[test]
    fn truncated_at_every_offset() {
        for cut in 0..LINUX_CLIENT.len() {
            assert_eq!(
                CmPrivateData::parse(&LINUX_CLIENT[..cut]),
                Err(Error::Truncated {
                    layer: Layer::RpcRdmaCmPrivate,
                    offset: 0,
                    needed: 8,
                    available: cut
                })
            );
            assert_eq!(find(&LINUX_CLIENT[..cut]), None);
        }
        assert!(CmPrivateData::V1(RpcRdmaCmPrivate::new(true, 1024, 1024))
            .emit(&mut [0; 7])
            .is_err());
    }

    #[test]
    fn find_unaligned_after_other_data() {
        // An RDMA-CM style header (36 bytes of anything) then our message at
        // offset 37, which is not four-byte aligned.
        let mut pd = [0u8; 56];
        pd[37..45].copy_from_slice(&LINUX_CLIENT);
        let (off, m) = find(&pd).unwrap();
        assert_eq!(off, 37);
        assert_eq!(m.v1().unwrap().send_size, 4096);
    }

    #[test]
    fn find_skips_identifier_too_close_to_end() {
        let mut pd = [0u8; 12];
        pd[6..10].copy_from_slice(&FORMAT_IDENTIFIER.to_be_bytes());
        assert_eq!(find(&pd), None);
        assert_eq!(find(&[]), None);
    }

    #[test]
    fn negotiate_rules() {
        // Section 5.1: nothing received means defaults both ways.
        assert_eq!(
            negotiate(None, None),
            Negotiated {
                remote_invalidation: false,
                inline_send: 1024,
                inline_recv: 1024
            }
        );
        let client = RpcRdmaCmPrivate::new(true, 4096, 8192);
        let server = RpcRdmaCmPrivate::new(true, 16384, 2048);
        // Section 4.2: each direction is min(sender send, receiver receive).
        assert_eq!(
            negotiate(Some(client), Some(server)),
            Negotiated {
                remote_invalidation: true,
                inline_send: 2048,
                inline_recv: 8192
            }
        );
        // Section 4.1: R must be set on both sides.
        let plain = RpcRdmaCmPrivate::new(false, 4096, 4096);
        assert!(!negotiate(Some(client), Some(plain)).remote_invalidation);
        assert!(!negotiate(Some(client), None).remote_invalidation);
        assert_eq!(negotiate(Some(client), None).inline_send, 1024);
        assert_eq!(negotiate(Some(client), None).inline_recv, 1024);
    }

    proptest! {
        #[test]
        fn emit_parse_round_trip(r in any::<bool>(), rsv in 0u8..128, s in any::<u8>(), v in any::<u8>()) {
            let p = RpcRdmaCmPrivate {
                version: 1,
                remote_invalidate: r,
                flags: (rsv << 1) | u8::from(r),
                send_size: decode_size(s),
                recv_size: decode_size(v),
            };
            let mut buf = [0xa5u8; 8];
            p.emit(&mut buf).unwrap();
            let (m, rest) = CmPrivateData::parse(&buf).unwrap();
            prop_assert!(rest.is_empty());
            prop_assert_eq!(m, CmPrivateData::V1(p));
        }

        #[test]
        fn parse_and_find_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = CmPrivateData::parse(&data);
            if let Some((off, m)) = find(&data) {
                prop_assert!(off + 8 <= data.len());
                let mut buf = [0u8; 8];
                prop_assert!(m.emit(&mut buf).is_ok());
                prop_assert_eq!(&buf[..], &data[off..off + 8]);
            }
        }
    }
}
