//! `stack::dissect_into` reuses the caller's `Dissection`: whatever the
//! previous frame left there must be gone, so a reused one always equals a
//! fresh `dissect` of the same frame.

use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{dissect, dissect_into, Config, Dissection};

mod common;

#[test]
fn a_reused_dissection_keeps_nothing_from_the_previous_frame() {
    let config = Config::default();
    let mut frames = common::frames("v3-ddp.pcap");
    frames.extend(common::frames("reconnect.pcap"));
    // Garbage and a frame cut inside the BTH, between full RDMA frames.
    frames.insert(1, vec![0xff; 9]);
    let cut = frames[5][..50].to_vec();
    frames.insert(6, cut);
    let mut reused = Dissection::default();
    for (i, f) in frames.iter().enumerate() {
        dissect_into(LinkType::ETHERNET, f, &config, &mut reused);
        let fresh = dissect(LinkType::ETHERNET, f, &config);
        // Dissection has no PartialEq (it borrows the frame); its Debug
        // form shows every layer.
        assert_eq!(format!("{reused:?}"), format!("{fresh:?}"), "frame {i}");
    }
}
