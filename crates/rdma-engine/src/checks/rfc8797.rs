//! RFC 8797 (the RPC-over-RDMA CM private data): the inline thresholds and
//! remote invalidation the peers negotiate when they connect.

use super::Violation;
use crate::Kind;

/// A Send of `total` bytes over the inline threshold negotiated for its
/// direction (RFC 8166 3.3.2, RFC 8797 4.2); an unknown threshold (no CM
/// exchange in the capture) is not guessed.
pub(crate) fn inline_threshold(
    total: usize,
    threshold: Option<u32>,
    client_to_server: bool,
) -> Option<Violation> {
    let th = threshold.filter(|&th| total > th as usize)?;
    let instead = if client_to_server {
        "a Long Call (position-zero read chunk)"
    } else {
        "the reply chunk (Long Reply)"
    };
    Some(Violation::new(
        Kind::InlineThresholdExceeded,
        format!("Send of {total} bytes exceeds the {th}-byte inline threshold the peers negotiated for this direction; it should have used {instead}"),
    ))
}

/// Send With Invalidate naming `rkey`, which none of the XID's chunks is
/// (4.1); `owned` is `None` when the call's chunk lists were cut, and
/// then the key may be one of them.
pub(crate) fn invalidated_foreign_stag(
    rkey: u32,
    owned: Option<bool>,
    xid: u32,
) -> Option<Violation> {
    (owned == Some(false)).then(|| {
        Violation::new(
            Kind::InvalidatedForeignStag,
            format!("Send With Invalidate names rkey {rkey:#x}, which is not one of xid {xid:#010x}'s chunks: the requester's other I/O may lose its memory registration"),
        )
    })
}

/// Send With Invalidate on a connection whose peers did not both set R in
/// their CM private data (4.1).
pub(crate) fn remote_invalidation_not_negotiated(client_r: bool, server_r: bool) -> Violation {
    let yn = |b: bool| if b { "set" } else { "did not set" };
    Violation::new(
        Kind::RemoteInvalidationNotNegotiated,
        format!("Send With Invalidate although the peers did not both advertise remote invalidation (client {} R, server {} R)", yn(client_r), yn(server_r)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_over_the_negotiated_inline_threshold() {
        assert_eq!(
            inline_threshold(1500, Some(1024), true),
            Some(Violation::new(
                Kind::InlineThresholdExceeded,
                "Send of 1500 bytes exceeds the 1024-byte inline threshold the peers negotiated for this direction; it should have used a Long Call (position-zero read chunk)"
            ))
        );
        assert_eq!(
            inline_threshold(1500, Some(1024), false).map(|v| v.message),
            Some("Send of 1500 bytes exceeds the 1024-byte inline threshold the peers negotiated for this direction; it should have used the reply chunk (Long Reply)".to_string())
        );
        assert_eq!(inline_threshold(1024, Some(1024), true), None);
        assert_eq!(inline_threshold(9000, None, true), None);
    }

    #[test]
    fn invalidating_an_stag_the_xid_did_not_advertise() {
        assert_eq!(
            invalidated_foreign_stag(0x77, Some(false), 0x12),
            Some(Violation::new(
                Kind::InvalidatedForeignStag,
                "Send With Invalidate names rkey 0x77, which is not one of xid 0x00000012's chunks: the requester's other I/O may lose its memory registration"
            ))
        );
        assert_eq!(invalidated_foreign_stag(0x77, Some(true), 0x12), None);
        assert_eq!(invalidated_foreign_stag(0x77, None, 0x12), None);
    }

    #[test]
    fn remote_invalidation_that_was_not_negotiated() {
        assert_eq!(
            remote_invalidation_not_negotiated(true, false),
            Violation::new(
                Kind::RemoteInvalidationNotNegotiated,
                "Send With Invalidate although the peers did not both advertise remote invalidation (client set R, server did not set R)"
            )
        );
    }
}
