//! Zero-copy, never-panicking dissectors for RPC-over-RDMA and everything under it.
//!
//! Layers, from the wire up:
//!
//! | module | protocol | spec |
//! |---|---|---|
//! | [`link`] | Ethernet II, 802.1Q, Linux cooked v1/v2, raw IP, pcap link types | IEEE 802.3, tcpdump.org link types |
//! | [`ib`] | LRH, GRH, BTH and every extension header, ICRC/VCRC, MADs, CM, RDMA-CM | IBA vol. 1 ch. 7, 9, 12, 13; RoCEv2 annex A17 |
//! | [`iwarp`] | iWARP: MPA Request/Reply and FPDUs with CRC32c and markers, DDP tagged/untagged headers, RDMAP messages (Read Request, Terminate) | RFC 5044, 6581, 5041, 5040 |
//! | [`rpcrdma_cm`] | RPC-over-RDMA CM private data | RFC 8797 |
//! | [`rpcrdma`] | RPC-over-RDMA version 1 transport header | RFC 8166 |
//! | [`oncrpc`] | ONC RPC call and reply | RFC 5531 |
//! | [`nfs`] | NFSv3, NFSv4.x COMPOUND, NFSACL, MOUNT, NLM, NFSv4 callback names; file handle and byte range of READ/WRITE/COMMIT | RFC 1813, 7530, 8881, 7862 |
//! | [`stack`] | one call that runs them all over a captured frame | |
//! | [`frame`] | a captured frame with its number, time, link type and a reader's ICRC verdict | |
//!
//! Every parser takes bytes, returns a typed header and the rest of the input,
//! and reports a problem as an [`Error`] naming the layer, the offset and what
//! was wrong. No parser allocates or panics, whatever the input.
//!
//! # Example
//!
//! ```
//! use rdma_dissectors::ib::icrc::IcrcStatus;
//! use rdma_dissectors::{link::LinkType, stack};
//!
//! // Frame 30 of captures/v3-inline.pcap: the NFS server's RC Acknowledge
//! // (Ethernet, IPv4, UDP to 4791, BTH, AETH, ICRC).
//! let frame: &[u8] = &[
//!     0x52, 0x54, 0x00, 0x99, 0x00, 0x02, 0x52, 0x54, 0x00, 0x99, 0x00, 0x01, 0x08, 0x00,
//!     0x45, 0x00, 0x00, 0x30, 0x23, 0xe8, 0x40, 0x00, 0x40, 0x11, 0x02, 0x0d, 0x0a, 0x63,
//!     0x00, 0x01, 0x0a, 0x63, 0x00, 0x02, 0xd9, 0xf2, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00,
//!     0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0x43, 0x0a, 0xc5, 0x1f, 0x00,
//!     0x00, 0x01, 0xe0, 0xc4, 0x06, 0x51,
//! ];
//! let d = stack::dissect(LinkType::ETHERNET, frame, &stack::Config::default());
//! assert!(d.stop.is_none());
//! let bth = d.bth().expect("a RoCEv2 frame has a BTH");
//! assert_eq!(bth.opcode.name(), "RC Acknowledge");
//! assert_eq!(bth.dest_qp.get(), 0x11);
//! assert_eq!(bth.psn.get(), 0x430ac5);
//! assert_eq!(d.aeth().map(|a| a.msn), Some(1));
//! assert_eq!(d.icrc, Some(IcrcStatus::Valid));
//! ```
//!
//! # Features
//!
//! | feature | default | what |
//! |---|---|---|
//! | `std` | yes | runtime CPU detection for the ICRC's AVX-512 path (crc32-fold); nothing else. Without it the crate is `#![no_std]` and needs no allocator: every parser and emitter works on caller-owned byte slices, addresses are `core::net` types and [`Error`] implements `core::error::Error`. |
//! | `serde` | no | the [`view`] module: each frame as the typed JSON shape `rdma-analyzer frames --json` prints (`Serialize`). Works without `std` and without an allocator. |
//! | `schemars` | no | `JsonSchema` for the [`view`] types, to publish the schema (needs `std`). |
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
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

pub mod erf;
pub mod error;
pub mod frame;
pub mod ib;
pub mod ip;
pub mod iwarp;
pub mod layer;
pub mod link;
pub mod nfs;
pub mod oncrpc;
pub mod rpcrdma;
pub mod rpcrdma_cm;
pub mod stack;
pub mod tcp;
pub mod udp;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod view;
pub mod xdr;

mod bytes;
mod parse;

pub use error::{Error, Result};
pub use layer::Layer;
