//! Zero-copy, never-panicking dissectors for RPC-over-RDMA and everything under it.
//!
//! Layers, from the wire up:
//!
//! | module | protocol | spec |
//! |---|---|---|
//! | [`link`] | Ethernet II, 802.1Q, Linux cooked v1/v2, raw IP, pcap link types | IEEE 802.3, tcpdump.org link types |
//! | [`ib`] | LRH, GRH, BTH and every extension header, ICRC/VCRC, MADs, CM, RDMA-CM | IBA vol. 1 ch. 7, 9, 12, 13; RoCEv2 annex A17 |
//! | [`rpcrdma_cm`] | RPC-over-RDMA CM private data | RFC 8797 |
//! | [`rpcrdma`] | RPC-over-RDMA version 1 transport header | RFC 8166 |
//! | [`oncrpc`] | ONC RPC call and reply | RFC 5531 |
//! | [`nfs`] | NFSv3, NFSv4.x COMPOUND, NFSACL, MOUNT, NLM, NFSv4 callback names | RFC 1813, 7530, 8881, 7862 |
//! | [`stack`] | one call that runs them all over a captured frame | |
//!
//! Every parser takes bytes, returns a typed header and the rest of the input,
//! and reports a problem as an [`Error`] naming the layer, the offset and what
//! was wrong. No parser allocates or panics, whatever the input.
//!
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable
    )
)]

pub mod error;
pub mod ib;
pub mod ip;
pub mod layer;
pub mod link;
pub mod nfs;
pub mod oncrpc;
pub mod rpcrdma;
pub mod rpcrdma_cm;
pub mod stack;
pub mod udp;
pub mod xdr;

mod bytes;

pub use error::{Error, Result};
pub use layer::Layer;
