//! IPv4 fragments: a fragment after the first starts in the middle of its
//! datagram, so no UDP header (and no RoCEv2 packet) is read from it; a
//! first fragment still shows what it starts with.

use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{dissect, rocev2_icrc_status, Config};

mod common;

/// The first RoCEv2 frame of a bundled capture, with IPv4 flags and offset
/// set to `flags_frag` (the header checksum is not checked by the dissector).
fn fragment(flags_frag: u16) -> Vec<u8> {
    let mut f = common::frames("v3-inline.pcap")
        .into_iter()
        .find(|f| {
            dissect(LinkType::ETHERNET, f, &Config::default())
                .bth()
                .is_some()
        })
        .expect("a RoCEv2 frame");
    f[14 + 6..14 + 8].copy_from_slice(&flags_frag.to_be_bytes());
    f
}

#[test]
fn a_later_fragment_is_not_read_as_udp() {
    let config = Config::default();
    // Offset 185 (1480 bytes in), no more fragments.
    let f = fragment(185);
    let d = dissect(LinkType::ETHERNET, &f, &config);
    let ip = d.ip.expect("the IPv4 header is read");
    assert!(ip.is_fragment() && ip.is_later_fragment());
    assert!(d.udp.is_none() && d.bth().is_none(), "{d:?}");
    assert_eq!(rocev2_icrc_status(LinkType::ETHERNET, &f, &config), None);
}

#[test]
fn a_first_fragment_shows_what_it_starts_with() {
    let config = Config::default();
    // More fragments, offset 0.
    let f = fragment(0x2000);
    let d = dissect(LinkType::ETHERNET, &f, &config);
    let ip = d.ip.expect("the IPv4 header is read");
    assert!(ip.is_fragment() && !ip.is_later_fragment());
    assert!(d.udp.is_some());
    // A whole datagram is no fragment.
    let whole = fragment(0x4000);
    let d = dissect(LinkType::ETHERNET, &whole, &config);
    assert!(!d.ip.expect("ip").is_fragment());
}
