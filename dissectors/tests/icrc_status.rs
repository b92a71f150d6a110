//! `stack::rocev2_icrc_status` (the ICRC check alone, run ahead on another
//! thread by the analyzer) gives the verdict the full dissection gives, on
//! every frame of every real capture, and on a corrupted copy of each.

use rdma_dissectors::ib::icrc::IcrcStatus;
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{dissect, rocev2_icrc_status, Config};

mod common;

#[test]
fn icrc_alone_agrees_with_the_full_dissection() {
    let config = Config::default();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures");
    let mut checked = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.ends_with(".pcap") {
            continue;
        }
        for mut f in common::frames(&name) {
            let full = dissect(LinkType::ETHERNET, &f, &config).icrc;
            assert_eq!(
                rocev2_icrc_status(LinkType::ETHERNET, &f, &config),
                full,
                "{name}"
            );
            if full == Some(IcrcStatus::Valid) {
                checked += 1;
                let last = f.len() - 1;
                f[last] ^= 0x40;
                assert!(matches!(
                    rocev2_icrc_status(LinkType::ETHERNET, &f, &config),
                    Some(IcrcStatus::Invalid { .. })
                ));
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}
