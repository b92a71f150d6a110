//! iWARP: RDMA over TCP, the stack iWARP NICs and Linux `siw` speak, and
//! under which NFS/RDMA runs on TCP port 20049.
//!
//! From TCP up:
//!
//! | module | protocol | spec |
//! |---|---|---|
//! | [`crc32c`] | the Castagnoli CRC that closes each FPDU | RFC 3385, RFC 3720 appendix B.4 |
//! | [`mpa`] | MPA Request/Reply frames (revision 1 and 2), FPDUs, markers | RFC 5044, RFC 6581 |
//! | [`ddp`] | DDP tagged and untagged headers | RFC 5041 section 4 |
//! | [`rdmap`] | RDMAP opcodes, Read Request, Terminate, RPC-over-RDMA in a Send | RFC 5040 |
//!
//! TCP is a byte stream: an FPDU may start anywhere in a segment and span
//! several. These parsers take the in-order stream bytes of one direction
//! (markers already removed with [`mpa::strip_markers`] when they were
//! negotiated); putting the stream together is the capture side's job.

pub mod crc32c;
pub mod ddp;
pub mod frame;
pub mod mpa;
pub mod rdmap;

/// The TCP port IANA assigned to NFS over RDMA (RFC 5666 section 10,
/// RFC 8267): iWARP carries RPC-over-RDMA there.
pub const NFS_RDMA_PORT: u16 = 20049;

#[cfg(test)]
mod tests;
