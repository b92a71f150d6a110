//! Names for every protocol layer the crate knows, used in errors and in
//! [`crate::stack::Dissection`].

use core::fmt;

/// A protocol layer, from the link up to NFS.
///
/// Used by [`crate::Error`] to say where parsing stopped.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// The capture's link-layer framing as a whole (unknown link type, empty frame).
    Link,
    /// Ethernet II header (IEEE 802.3).
    Ethernet,
    /// IEEE 802.1Q VLAN tag.
    Vlan,
    /// Linux cooked capture v1 (`DLT_LINUX_SLL`).
    LinuxSll,
    /// Linux cooked capture v2 (`DLT_LINUX_SLL2`).
    LinuxSll2,
    /// IPv4 header (RFC 791).
    Ipv4,
    /// IPv6 header (RFC 8200).
    Ipv6,
    /// UDP header (RFC 768).
    Udp,
    /// InfiniBand Local Route Header (IBA 7.7).
    Lrh,
    /// InfiniBand Global Route Header (IBA 8.3), also the RoCEv1 network header.
    Grh,
    /// Base Transport Header (IBA 9.2).
    Bth,
    /// RDMA Extended Transport Header (IBA 9.3.3).
    Reth,
    /// ACK Extended Transport Header (IBA 9.3.5).
    Aeth,
    /// Invalidate Extended Transport Header (IBA 9.3.7).
    Ieth,
    /// Datagram Extended Transport Header (IBA 9.3.2).
    Deth,
    /// Reliable Datagram Extended Transport Header (IBA 9.3.1).
    Rdeth,
    /// Immediate data (IBA 9.3.6).
    ImmDt,
    /// Atomic Extended Transport Header (IBA 9.3.4).
    AtomicEth,
    /// Atomic ACK Extended Transport Header (IBA 9.3.5.3).
    AtomicAckEth,
    /// XRC Extended Transport Header (IBA 9.3.8).
    XrcEth,
    /// Packet payload and pad bytes after the transport headers.
    Payload,
    /// Invariant CRC (IBA 7.8.1, RoCEv2 annex A17.3.3).
    Icrc,
    /// Variant CRC of native InfiniBand frames (IBA 7.8.2).
    Vcrc,
    /// Common MAD header (IBA 13.4.3).
    Mad,
    /// Communication Management MADs (IBA 12.6).
    Cm,
    /// RDMA-CM header in the CM REQ private data (IBA annex A11, Linux `cma.c`).
    Cma,
    /// RPC-over-RDMA CM private data (RFC 8797).
    RpcRdmaCmPrivate,
    /// RPC-over-RDMA version 1 transport header (RFC 8166).
    RpcRdma,
    /// ONC RPC message (RFC 5531).
    OncRpc,
    /// NFS and related ONC RPC programs.
    Nfs,
    /// MPA Request/Reply frames and FPDUs of iWARP (RFC 5044, RFC 6581).
    Mpa,
    /// Direct Data Placement header of iWARP (RFC 5041).
    Ddp,
    /// RDMA Protocol header of iWARP (RFC 5040).
    Rdmap,
    // Last: a variant inserted among the others renumbers them, which
    // cargo-semver-checks rightly calls a breaking change.
    /// TCP header (RFC 9293).
    Tcp,
}

impl Layer {
    /// The short lowercase name used in error messages and JSON keys.
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Link => "link",
            Layer::Ethernet => "eth",
            Layer::Vlan => "vlan",
            Layer::LinuxSll => "sll",
            Layer::LinuxSll2 => "sll2",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Udp => "udp",
            Layer::Tcp => "tcp",
            Layer::Lrh => "lrh",
            Layer::Grh => "grh",
            Layer::Bth => "bth",
            Layer::Reth => "reth",
            Layer::Aeth => "aeth",
            Layer::Ieth => "ieth",
            Layer::Deth => "deth",
            Layer::Rdeth => "rdeth",
            Layer::ImmDt => "immdt",
            Layer::AtomicEth => "atomiceth",
            Layer::AtomicAckEth => "atomicacketh",
            Layer::XrcEth => "xrceth",
            Layer::Payload => "payload",
            Layer::Icrc => "icrc",
            Layer::Vcrc => "vcrc",
            Layer::Mad => "mad",
            Layer::Cm => "cm",
            Layer::Cma => "cma",
            Layer::RpcRdmaCmPrivate => "rpcrdma_cm_private",
            Layer::RpcRdma => "rpcrdma",
            Layer::OncRpc => "rpc",
            Layer::Nfs => "nfs",
            Layer::Mpa => "mpa",
            Layer::Ddp => "ddp",
            Layer::Rdmap => "rdmap",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
