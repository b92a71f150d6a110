//! RFC 5044 (MPA), 5041 (DDP) and 5040 (RDMAP): what an iWARP stream's
//! setup frames and FPDUs show. The stream (`wire/tcp.rs`) and the iWARP
//! path (`wire/iwarp.rs`) find the facts — a frame that did not parse, the
//! CRC the FPDU carried and the one computed, a Terminate's fields — and
//! these say which kind they are and why.

use std::fmt::Display;
use std::net::SocketAddr;

use rdma_dissectors::iwarp::mpa::CrcStatus;
use rdma_dissectors::iwarp::rdmap::Terminate;

use super::Violation;
use crate::Kind;

/// An MPA Request or Reply that did not parse: its sender's stack or the
/// capture's framing is at fault, and which cannot be told from here.
pub(crate) fn setup_malformed(src: SocketAddr, e: &impl Display) -> Violation {
    Violation::new(
        Kind::Malformed,
        format!("MPA frame from {src} could not be dissected: {e}"),
    )
}

/// An FPDU whose MPA framing (length, padding, CRC field) did not parse.
pub(crate) fn fpdu_malformed(src: SocketAddr, e: &impl Display) -> Violation {
    Violation::new(
        Kind::Malformed,
        format!("FPDU from {src} could not be dissected: {e}"),
    )
}

/// An MPA Reply with the Reject bit (RFC 5044 7.1): the server refused
/// the connection the client asked for.
pub(crate) fn mpa_reject(server: SocketAddr, client: SocketAddr) -> Violation {
    Violation::new(
        Kind::MpaReject,
        format!("{server} rejected the MPA Request from {client} (RFC 5044 7.1): no RDMA connection was made"),
    )
}

/// An FPDU whose CRC32c field is not the CRC of its octets (RFC 5044
/// 4.4): the receiver must drop it, so its segment is not read either. A
/// CRC not negotiated or not checkable shows nothing.
pub(crate) fn crc(status: CrcStatus, src: SocketAddr, frame: u64) -> Option<Violation> {
    let CrcStatus::Invalid { found, computed } = status else {
        return None;
    };
    Some(Violation::new(
        Kind::MpaCrcMismatch,
        format!("FPDU from {src} ending in frame {frame}: CRC32c {found:#010x} found, {computed:#010x} computed; its segment is not used"),
    ))
}

/// A DDP segment or RDMAP message inside a well-framed FPDU that breaks
/// RFC 5041 or 5040 (an unknown version or opcode, a header cut short):
/// both RFCs make the receiver terminate the connection.
pub(crate) fn segment_violation(src: SocketAddr, frame: u64, e: &impl Display) -> Violation {
    Violation::new(
        Kind::IwarpViolation,
        format!("DDP/RDMAP segment from {src} in frame {frame}: {e}; the receiver must terminate the connection"),
    )
}

/// An RDMAP Terminate (RFC 5040 5.3.5, 4.8): the connection is over, and
/// its layer, type and code say why.
pub(crate) fn terminate(src: SocketAddr, t: &Terminate<'_>) -> Violation {
    let name = t
        .error_name()
        .unwrap_or("an error code the RFCs do not name");
    Violation::new(
        Kind::IwarpTerminate,
        format!(
            "{src} terminated the iWARP connection: {} error, type {:#x}, code {:#04x} ({name})",
            t.layer.name(),
            t.etype,
            t.code
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma_dissectors::iwarp::rdmap::TermLayer;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("a socket address")
    }

    #[test]
    fn a_rejected_mpa_request() {
        let v = mpa_reject(addr("10.0.0.2:20049"), addr("10.0.0.1:40000"));
        assert_eq!(v.kind, Kind::MpaReject);
        assert_eq!(
            v.message,
            "10.0.0.2:20049 rejected the MPA Request from 10.0.0.1:40000 (RFC 5044 7.1): no RDMA connection was made"
        );
    }

    #[test]
    fn only_an_invalid_crc_is_a_mismatch() {
        let src = addr("10.0.0.1:40000");
        assert_eq!(crc(CrcStatus::Valid, src, 7), None);
        assert_eq!(crc(CrcStatus::NotNegotiated, src, 7), None);
        let v = crc(
            CrcStatus::Invalid {
                found: 0xdead_beef,
                computed: 0x0102_0304,
            },
            src,
            7,
        );
        assert_eq!(
            v,
            Some(Violation::new(
                Kind::MpaCrcMismatch,
                "FPDU from 10.0.0.1:40000 ending in frame 7: CRC32c 0xdeadbeef found, 0x01020304 computed; its segment is not used"
            ))
        );
    }

    #[test]
    fn unparsable_frames_and_segments() {
        let src = addr("10.0.0.1:40000");
        let v = setup_malformed(src, &"too short");
        assert_eq!(
            (v.kind, v.message.as_str()),
            (
                Kind::Malformed,
                "MPA frame from 10.0.0.1:40000 could not be dissected: too short"
            )
        );
        let v = fpdu_malformed(src, &"bad length");
        assert_eq!(
            (v.kind, v.message.as_str()),
            (
                Kind::Malformed,
                "FPDU from 10.0.0.1:40000 could not be dissected: bad length"
            )
        );
        let v = segment_violation(src, 3, &"DDP version 2");
        assert_eq!(v.kind, Kind::IwarpViolation);
        assert_eq!(
            v.message,
            "DDP/RDMAP segment from 10.0.0.1:40000 in frame 3: DDP version 2; the receiver must terminate the connection"
        );
    }

    #[test]
    fn a_terminate_says_its_layer_type_code_and_name() {
        let t = Terminate {
            layer: TermLayer::Rdmap,
            etype: 1,
            code: 0,
            ddp_segment_length: None,
            ddp_header: None,
            rdma_header: None,
            rest: &[],
        };
        let v = terminate(addr("10.0.0.2:20049"), &t);
        assert_eq!(v.kind, Kind::IwarpTerminate);
        assert_eq!(
            v.message,
            "10.0.0.2:20049 terminated the iWARP connection: RDMAP error, type 0x1, code 0x00 (Remote Protection Error: Invalid STag)"
        );
        let odd = Terminate {
            layer: TermLayer::Other(3),
            etype: 9,
            code: 0x42,
            ..t
        };
        assert!(terminate(addr("10.0.0.2:20049"), &odd)
            .message
            .ends_with("(an error code the RFCs do not name)"));
    }
}
