//! Correlation keys, the hash tables keyed by them, and who saw what.

use std::net::{IpAddr, Ipv6Addr};

use rdma_dissectors::rpcrdma::Xid;
use rdma_dissectors::stack::Dissection;

/// The engine's hash tables. Keys come off the wire, so the hash is keyed
/// per process (foldhash's quality variant): cheaper than SipHash for the
/// lookups every frame makes, and an attacker cannot precompute collisions.
pub(crate) type Map<K, V> = std::collections::HashMap<K, V, foldhash::quality::RandomState>;

/// A connection's identifier: small, stable for the whole run, in order of
/// discovery. Written `c1` everywhere (text, JSON, `--filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u32);

impl std::fmt::Display for ConnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "c{}", self.0)
    }
}

/// A port as the wire names it: by IP address on RoCEv2, by LID on native
/// InfiniBand (the LRH every packet carries, GRH or not), by GID on RoCEv1
/// (a GRH and no LRH). Written `10.0.0.1`, `lid:3`, `gid:[fe80::1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Addr {
    /// RoCEv2: the IPv4 or IPv6 address.
    Ip(IpAddr),
    /// Native InfiniBand: the port's LID.
    Lid(u16),
    /// RoCEv1: the port's GID.
    Gid(Ipv6Addr),
    /// iWARP: the host's IPv4 or IPv6 address. The TCP connection is the
    /// queue pair, so a [`QpKey`]'s `qpn` holds the endpoint's TCP port:
    /// the host stays one address across its connections (a reconnect's
    /// new source port is the same client), as on RoCE.
    Iwarp(IpAddr),
}

impl Addr {
    /// The source and destination ports of a dissected frame, from the
    /// outermost header that names them; `None` for frames with none.
    pub fn of_frame(d: &Dissection<'_>) -> Option<(Addr, Addr)> {
        if let Some(ip) = d.ip {
            return Some((Addr::Ip(ip.source()), Addr::Ip(ip.destination())));
        }
        if let Some(l) = d.lrh {
            return Some((Addr::Lid(l.slid), Addr::Lid(l.dlid)));
        }
        d.grh.map(|g| {
            (
                Addr::Gid(Ipv6Addr::from(g.sgid)),
                Addr::Gid(Ipv6Addr::from(g.dgid)),
            )
        })
    }

    /// The framing that names ports this way.
    pub fn fabric(self) -> &'static str {
        match self {
            Addr::Ip(_) => "RoCEv2",
            Addr::Lid(_) => "InfiniBand",
            Addr::Gid(_) => "RoCEv1",
            Addr::Iwarp(_) => "iWARP",
        }
    }
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Ip(a) | Addr::Iwarp(a) => a.fmt(f),
            Addr::Lid(l) => write!(f, "lid:{l}"),
            Addr::Gid(g) => write!(f, "gid:[{g}]"),
        }
    }
}

/// A queue pair as the wire names it: the port's address and its QP number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct QpKey {
    /// The port that owns the QP.
    pub addr: Addr,
    /// QP number.
    pub qpn: u32,
}

/// One word per IPv4 or LID key: the derived hash fed the address's enum
/// tags, its bytes and the QPN separately, and this table is looked up for
/// every packet.
impl std::hash::Hash for QpKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self.addr {
            Addr::Ip(IpAddr::V4(a)) | Addr::Iwarp(IpAddr::V4(a)) => {
                state.write_u64(u64::from(a.to_bits()) << 32 | u64::from(self.qpn));
            }
            Addr::Lid(l) => state.write_u64(1 << 63 | u64::from(l) << 32 | u64::from(self.qpn)),
            Addr::Ip(IpAddr::V6(a)) | Addr::Gid(a) | Addr::Iwarp(IpAddr::V6(a)) => {
                state.write_u128(a.to_bits());
                state.write_u32(self.qpn);
            }
        }
    }
}

impl std::fmt::Display for QpKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.addr {
            // The TCP endpoint, as every TCP tool writes it.
            Addr::Iwarp(a) => write!(f, "{}", std::net::SocketAddr::new(a, self.qpn as u16)),
            _ => write!(f, "{}/{:#x}", self.addr, self.qpn),
        }
    }
}

/// Hands out connection ids in order of discovery, to the wire side and the
/// kernel side alike, so that no two connections share one.
#[derive(Debug)]
pub(crate) struct ConnIds {
    next: u32,
}

impl Default for ConnIds {
    fn default() -> Self {
        ConnIds { next: 1 }
    }
}

impl ConnIds {
    /// An id no connection has had.
    pub(crate) fn new_id(&mut self) -> ConnId {
        let id = ConnId(self.next);
        self.next += 1;
        id
    }
}

/// An outstanding call on one connection. Each side numbers its own calls,
/// so a forward call and a backchannel call may carry the same XID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CallKey {
    /// Whether the call went server to client (NFSv4.1 backchannel).
    pub backchannel: bool,
    /// The call's XID (`rdma_xid`, RFC 8166 4.2.1).
    pub xid: Xid,
}

/// A connection as one side's kernel tracepoints name it: they carry no
/// addresses or QP numbers, so the two sides' names for one connection
/// cannot be matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum KernelConnKey {
    /// The client's RPC client (`client_id`: one per mount and transport).
    Client {
        /// `client_id` of the `xprtrdma_*` tracepoints.
        client_id: u32,
    },
    /// The server's receive completion queue (one per connection).
    Server {
        /// `cq.id` of the `svcrdma_*` tracepoints.
        cq_id: u32,
    },
}

/// Who saw a transaction or an anomaly: the wire, or one side's kernel
/// through the probes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// Packet capture.
    #[default]
    Wire,
    /// The client's kernel (`xprtrdma_*` probes).
    ClientProbes,
    /// The server's kernel (`svcrdma_*` probes).
    ServerProbes,
}

impl Origin {
    /// Stable name (JSON, TUI).
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Wire => "wire",
            Origin::ClientProbes => "client_probes",
            Origin::ServerProbes => "server_probes",
        }
    }
}
