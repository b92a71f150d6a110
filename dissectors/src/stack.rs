//! One call that dissects a captured frame through every layer it can.
//!
//! ```text
//! link ─┬─ Ethernet [802.1Q]* ─┬─ IPv4/IPv6 ─ UDP:4791 ─ BTH ... ICRC   (RoCEv2)
//!       │                      └─ 0x8915 ─ GRH ─ BTH ... ICRC          (RoCEv1)
//!       ├─ Linux cooked v1/v2 ─ (as Ethernet's EtherType)
//!       ├─ raw IPv4/IPv6
//!       └─ InfiniBand ─ LRH [GRH] ─ BTH ... ICRC VCRC                 (native IB)
//!
//! BTH ─┬─ UD SEND to QP1 ─ DETH ─ MAD ─ CM ─ [RDMA-CM header] ─ RFC 8797 private data
//!      └─ RC SEND First/Only ─ RPC-over-RDMA ─ ONC RPC ─ NFS
//! ```
//!
//! [`dissect`] keeps every layer that parsed; where parsing stopped,
//! [`Dissection::stop`] holds the error with its offset counted from the
//! start of the frame. A bad ICRC is a finding ([`Dissection::icrc`]), not a
//! parse failure.

use crate::error::Error;
use crate::ib::aeth::Aeth;
use crate::ib::atomic::{AtomicAckEth, AtomicEth};
use crate::ib::bth::{Bth, Opcode, Operation, Position};
use crate::ib::cm::{self, CmMessage};
use crate::ib::cma::CmaHeader;
use crate::ib::deth::Deth;
use crate::ib::grh::Grh;
use crate::ib::icrc::{self, IcrcStatus, VcrcStatus};
use crate::ib::ieth::Ieth;
use crate::ib::immdt::ImmDt;
use crate::ib::lrh::{LinkNextHeader, Lrh};
use crate::ib::mad::Mad;
use crate::ib::rdeth::Rdeth;
use crate::ib::reth::Reth;
use crate::ib::transport::{self, Transport};
use crate::ib::xrceth::XrcEth;
use crate::ip::{Ip, PROTO_TCP, PROTO_UDP};
use crate::iwarp::frame::{self as iwarp_frame, IwarpLayer, MpaCrc};
use crate::iwarp::rdmap::Body;
use crate::iwarp::NFS_RDMA_PORT;
use crate::layer::Layer;
use crate::link::{ether_type, Ethernet, Link, LinkType, LinuxSll, LinuxSll2, Vlan};
use crate::nfs::{self, CallSummary};
use crate::oncrpc::{MsgBody, RpcMsg};
use crate::rpcrdma::{Proc, RpcRdmaHeader};
use crate::rpcrdma_cm::{self, CmPrivateData};
use crate::tcp::{Tcp, TcpLayer};
use crate::udp::{Udp, ROCEV2_PORT};

/// How far [`dissect`] goes and what it assumes.
///
/// Options will be added, so the struct cannot be written as a literal
/// outside this crate: start from [`Config::default`] and change what you
/// need with the `with_*` methods (or assign the public fields).
///
/// ```
/// use rdma_dissectors::stack::{Config, RpcRdmaDecode};
/// let config = Config::default()
///     .with_rocev2_port(4792)
///     .with_rpcrdma(RpcRdmaDecode::Always);
/// assert!(config.verify_icrc);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// UDP destination port that marks RoCEv2 (4791 by IANA assignment).
    pub rocev2_port: u16,
    /// Verify the ICRC (and VCRC) of every frame.
    pub verify_icrc: bool,
    /// How to decide that a SEND's payload is RPC-over-RDMA.
    pub rpcrdma: RpcRdmaDecode,
    /// Read the iWARP at the start of TCP segments ([`Dissection::iwarp`]).
    /// Off by default: a frame-by-frame view (`frames`) wants it, while a
    /// caller that reassembles the TCP stream reads iWARP there instead.
    pub iwarp_frames: bool,
    /// TCP port taken for iWARP (NFS/RDMA's 20049) when a segment's payload
    /// starts with a plausible FPDU; an MPA key marks iWARP on any port.
    pub iwarp_port: u16,
    /// Whether the iWARP flows negotiated MPA CRCs (one frame cannot see it).
    pub mpa_crc: MpaCrc,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rocev2_port: ROCEV2_PORT,
            verify_icrc: true,
            rpcrdma: RpcRdmaDecode::Heuristic,
            iwarp_frames: false,
            iwarp_port: NFS_RDMA_PORT,
            mpa_crc: MpaCrc::Unknown,
        }
    }
}

impl Config {
    /// This configuration with RoCEv2 on UDP destination port `port`.
    #[must_use]
    pub const fn with_rocev2_port(mut self, port: u16) -> Self {
        self.rocev2_port = port;
        self
    }

    /// This configuration with the ICRC (and VCRC) check on or off.
    #[must_use]
    pub const fn with_verify_icrc(mut self, verify: bool) -> Self {
        self.verify_icrc = verify;
        self
    }

    /// This configuration reading (or not) the iWARP of each TCP segment.
    #[must_use]
    pub const fn with_iwarp_frames(mut self, on: bool) -> Self {
        self.iwarp_frames = on;
        self
    }

    /// This configuration taking TCP port `port` for iWARP.
    #[must_use]
    pub const fn with_iwarp_port(mut self, port: u16) -> Self {
        self.iwarp_port = port;
        self
    }

    /// This configuration assuming `crc` about MPA CRCs.
    #[must_use]
    pub const fn with_mpa_crc(mut self, crc: MpaCrc) -> Self {
        self.mpa_crc = crc;
        self
    }

    /// This configuration deciding RPC-over-RDMA by `decode`.
    #[must_use]
    pub const fn with_rpcrdma(mut self, decode: RpcRdmaDecode) -> Self {
        self.rpcrdma = decode;
        self
    }
}

/// Whether to decode SEND payloads as RPC-over-RDMA.
///
/// A single frame does not say which upper-layer protocol a queue pair
/// carries; only the CM exchange does (RDMA-CM port 20049). The stack alone
/// therefore guesses from the header's shape, and a caller that tracks
/// connections (the analyzer's engine) can decide per QP instead.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcRdmaDecode {
    /// Decode when the header looks like RPC-over-RDMA version 1 (vers 1, a known proc).
    Heuristic,
    /// Decode every SEND First/Only payload.
    Always,
    /// Never decode; leave the payload raw.
    Never,
}

/// Everything [`dissect`] found in one frame.
///
/// The layers above the IBA transport come in two families that never share
/// a frame (management datagrams on QP0/QP1, RPC-over-RDMA on RC SENDs), so
/// they share one [`Upper`] slot: the struct is as big as the larger family,
/// not the sum, which matters because one is built and moved per frame.
/// Accessor methods ([`Dissection::bth`], [`Dissection::cm`],
/// [`Dissection::nfs`], ...) read through the nesting.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Dissection<'a> {
    /// The link-layer header.
    pub link: Option<Link>,
    /// 802.1Q tags, outermost first (at most two are kept; `vlan_count` counts all).
    pub vlan: [Option<Vlan>; 2],
    /// How many VLAN tags the frame carried.
    pub vlan_count: u8,
    /// IPv4 or IPv6 header (RoCEv2).
    pub ip: Option<Ip<'a>>,
    /// UDP header (RoCEv2).
    pub udp: Option<Udp>,
    /// TCP header and payload (iWARP). TCP is a byte stream: what the
    /// payload carries is for a stream reassembler to say, not this frame.
    pub tcp: Option<TcpLayer<'a>>,
    /// The iWARP a TCP segment starts with (MPA setup frame or FPDUs), when
    /// the flow is iWARP. An untagged Send's RPC-over-RDMA is in
    /// [`Dissection::upper`] as for RoCE (the first such Send of the
    /// segment; [`iwarp_send_rpcrdma`] reads each of them).
    pub iwarp: Option<IwarpLayer<'a>>,
    /// Local Route Header (native InfiniBand).
    pub lrh: Option<Lrh>,
    /// Global Route Header (RoCEv1, or native InfiniBand with a GRH).
    pub grh: Option<Grh>,
    /// BTH, extension headers, payload and pad.
    pub transport: Option<Transport<'a>>,
    /// Result of the ICRC check.
    pub icrc: Option<IcrcStatus>,
    /// Result of the VCRC check (native InfiniBand only).
    pub vcrc: Option<VcrcStatus>,
    /// The layers above the transport, if any parsed.
    pub upper: Upper<'a>,
    /// Where and why parsing stopped, if it did.
    pub stop: Option<Error>,
    /// The capture cut the packet short (a snap length): its ICRC is not
    /// there, and its payload and upper layers are only what was captured
    /// ([`Transport::cut_payload_len`] gives the payload's length on the
    /// wire). A layer that does not fit in what was captured is left out,
    /// not called malformed.
    pub cut: bool,
}

/// The layers above the IBA transport in one frame.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub enum Upper<'a> {
    /// Nothing above the transport was decoded.
    #[default]
    None,
    /// A MAD on QP0/QP1 and what it carries.
    Mad(MadLayers<'a>),
    /// An RC SEND First/Only taken for RPC-over-RDMA.
    RpcRdma(RpcRdmaLayers<'a>),
}

/// A MAD (UD SEND to QP0/QP1) and the CM layers inside it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct MadLayers<'a> {
    /// MAD header.
    pub mad: Mad,
    /// CM message in the MAD.
    pub cm: Option<CmMessage<'a>>,
    /// Bytes of the CM message the capture kept: [`cm::MESSAGE_LEN`] when
    /// whole. Fields of a cut message past these read as zero and are not
    /// known; so is private data past them.
    pub cm_len: usize,
    /// RDMA-CM header at the start of a REQ's private data.
    pub cma: Option<CmaHeader>,
    /// RFC 8797 private data and its offset in the consumer's private data.
    pub rpcrdma_cm_private: Option<(usize, CmPrivateData)>,
}

/// RPC-over-RDMA and the ONC RPC / NFS layers inside an RC SEND.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RpcRdmaLayers<'a> {
    /// Offset of the RPC-over-RDMA header in the frame.
    pub offset: usize,
    /// RPC-over-RDMA header (`None` when a SEND First cut it short).
    pub header: Option<RpcRdmaHeader<'a>>,
    /// ONC RPC message in an RDMA_MSG payload stream.
    pub rpc: Option<RpcMsg<'a>>,
    /// NFS (or MOUNT, NLM, ...) call summary.
    pub nfs: Option<CallSummary>,
}

impl<'a> Dissection<'a> {
    /// Forgets every layer. Field by field: assigning a whole
    /// `Dissection::default()` through a reference compiled to zeroing all
    /// ~720 bytes, where setting each layer to `None` writes a few tags.
    #[inline]
    fn clear(&mut self) {
        self.link = None;
        self.vlan = [None, None];
        self.vlan_count = 0;
        self.ip = None;
        self.udp = None;
        self.tcp = None;
        self.iwarp = None;
        self.lrh = None;
        self.grh = None;
        self.transport = None;
        self.icrc = None;
        self.vcrc = None;
        self.upper = Upper::None;
        self.stop = None;
        self.cut = false;
    }

    /// Whether the frame is RoCE or native InfiniBand traffic.
    pub fn is_ib(&self) -> bool {
        self.transport.is_some()
    }

    /// Base Transport Header.
    #[inline]
    pub fn bth(&self) -> Option<Bth> {
        self.transport.map(|t| t.bth)
    }

    /// Reliable Datagram extension header.
    #[inline]
    pub fn rdeth(&self) -> Option<Rdeth> {
        self.transport.and_then(|t| t.rdeth)
    }

    /// XRC extension header.
    #[inline]
    pub fn xrceth(&self) -> Option<XrcEth> {
        self.transport.and_then(|t| t.xrceth)
    }

    /// Datagram extension header (UD).
    #[inline]
    pub fn deth(&self) -> Option<Deth> {
        self.transport.and_then(|t| t.deth)
    }

    /// RDMA extension header.
    #[inline]
    pub fn reth(&self) -> Option<Reth> {
        self.transport.and_then(|t| t.reth)
    }

    /// Atomic extension header.
    #[inline]
    pub fn atomiceth(&self) -> Option<AtomicEth> {
        self.transport.and_then(|t| t.atomiceth)
    }

    /// ACK extension header.
    #[inline]
    pub fn aeth(&self) -> Option<Aeth> {
        self.transport.and_then(|t| t.aeth)
    }

    /// Atomic ACK extension header.
    #[inline]
    pub fn atomicacketh(&self) -> Option<AtomicAckEth> {
        self.transport.and_then(|t| t.atomicacketh)
    }

    /// Immediate data.
    #[inline]
    pub fn immdt(&self) -> Option<ImmDt> {
        self.transport.and_then(|t| t.immdt)
    }

    /// Invalidate extension header (the R_Key a Send With Invalidate names).
    #[inline]
    pub fn ieth(&self) -> Option<Ieth> {
        self.transport.and_then(|t| t.ieth)
    }

    /// The IB payload after the transport headers, without pad bytes
    /// (empty when the transport did not parse).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        self.transport.map_or(&[], |t| t.payload)
    }

    /// The MAD layers, if the frame is a MAD.
    #[inline]
    pub fn mad_layers(&self) -> Option<&MadLayers<'a>> {
        match &self.upper {
            Upper::Mad(m) => Some(m),
            _ => None,
        }
    }

    /// The RPC-over-RDMA layers, if the SEND was taken for RPC-over-RDMA.
    #[inline]
    pub fn rpcrdma_layers(&self) -> Option<&RpcRdmaLayers<'a>> {
        match &self.upper {
            Upper::RpcRdma(r) => Some(r),
            _ => None,
        }
    }

    /// MAD header (UD traffic to QP1).
    #[inline]
    pub fn mad(&self) -> Option<Mad> {
        self.mad_layers().map(|m| m.mad)
    }

    /// CM message in the MAD.
    #[inline]
    pub fn cm(&self) -> Option<&CmMessage<'a>> {
        self.mad_layers()?.cm.as_ref()
    }

    /// RDMA-CM header at the start of a REQ's private data.
    #[inline]
    pub fn cma(&self) -> Option<CmaHeader> {
        self.mad_layers()?.cma
    }

    /// RFC 8797 private data and its offset in the consumer's private data.
    #[inline]
    pub fn rpcrdma_cm_private(&self) -> Option<(usize, CmPrivateData)> {
        self.mad_layers()?.rpcrdma_cm_private
    }

    /// RPC-over-RDMA header.
    #[inline]
    pub fn rpcrdma(&self) -> Option<&RpcRdmaHeader<'a>> {
        self.rpcrdma_layers()?.header.as_ref()
    }

    /// Offset of the RPC-over-RDMA header in the frame (0 when the payload
    /// was not taken for RPC-over-RDMA).
    #[inline]
    pub fn rpcrdma_offset(&self) -> usize {
        self.rpcrdma_layers().map_or(0, |r| r.offset)
    }

    /// ONC RPC message in an RDMA_MSG payload stream.
    #[inline]
    pub fn rpc(&self) -> Option<&RpcMsg<'a>> {
        self.rpcrdma_layers()?.rpc.as_ref()
    }

    /// NFS (or MOUNT, NLM, ...) call summary.
    #[inline]
    pub fn nfs(&self) -> Option<&CallSummary> {
        self.rpcrdma_layers()?.nfs.as_ref()
    }
}

/// Dissects one frame captured on a link of type `link`.
///
/// Never fails and never panics: what could not be parsed is in
/// [`Dissection::stop`], and everything below it is kept.
#[inline]
pub fn dissect<'a>(link: LinkType, frame: &'a [u8], config: &Config) -> Dissection<'a> {
    let mut d = Dissection::default();
    dissect_into(link, frame, config, &mut d);
    d
}

/// As [`dissect`], into a [`Dissection`] the caller owns; whatever it held
/// before is cleared first.
///
/// For callers on a hot path: returning the ~720-byte dissection by value
/// costs a copy per frame that the compiler does not always elide.
///
/// ```
/// use rdma_dissectors::{link::LinkType, stack::{dissect_into, Config, Dissection}};
/// let mut d = Dissection::default();
/// dissect_into(LinkType::ETHERNET, &[0u8; 10], &Config::default(), &mut d);
/// assert!(d.stop.is_some()); // 10 bytes cannot hold an Ethernet header
/// ```
#[inline]
pub fn dissect_into<'a>(link: LinkType, frame: &'a [u8], config: &Config, d: &mut Dissection<'a>) {
    d.clear();
    if let Err(e) = dissect_link(link, frame, config, d) {
        d.stop = Some(e);
    }
}

/// Only the ICRC verdict of a RoCEv2 frame, without the rest of the
/// dissection: cheap enough to run on another thread ahead of [`dissect`]
/// (which then runs with `verify_icrc: false`). `None` when the frame is not
/// RoCEv2 over IPv4/IPv6 (RoCEv1 and native InfiniBand are left to
/// [`dissect`]) or its headers do not parse.
pub fn rocev2_icrc_status(link: LinkType, frame: &[u8], config: &Config) -> Option<IcrcStatus> {
    let (mut ether, mut rest) = match link {
        LinkType::ETHERNET => Ethernet::parse(frame)
            .ok()
            .map(|(e, r)| (e.ether_type, r))?,
        LinkType::LINUX_SLL => LinuxSll::parse(frame).ok().map(|(h, r)| (h.protocol, r))?,
        LinkType::LINUX_SLL2 => LinuxSll2::parse(frame).ok().map(|(h, r)| (h.protocol, r))?,
        LinkType::RAW
        | LinkType::RAW_BSD
        | LinkType::RAW_OPENBSD
        | LinkType::IPV4
        | LinkType::IPV6 => (ether_type::IPV4, frame),
        _ => return None,
    };
    let mut tags = 0;
    while ether == ether_type::VLAN || ether == ether_type::QINQ {
        let (v, r) = Vlan::parse(rest).ok()?;
        tags += 1;
        if tags > 8 {
            return None;
        }
        (ether, rest) = (v.ether_type, r);
    }
    if ether != ether_type::IPV4 && ether != ether_type::IPV6 {
        return None;
    }
    let (ip, payload) = Ip::parse(rest).ok()?;
    if ip.protocol() != PROTO_UDP || ip.is_later_fragment() {
        return None;
    }
    let (udp, ib) = Udp::parse(payload).ok()?;
    if udp.destination_port != config.rocev2_port || ib.len() < 4 {
        return None;
    }
    let whole = ip.captured_whole(rest.len()) && usize::from(udp.length) <= payload.len();
    Some(check_icrc(rest, ip, ib, whole))
}

/// The ICRC verdict of a RoCEv2 packet from `at` (its IP header's start)
/// through `ib` (the IBA packet with its ICRC): the headers lie end to end
/// in the frame, so the check reads them as one buffer.
fn check_icrc(at: &[u8], ip: Ip<'_>, ib: &[u8], whole: bool) -> IcrcStatus {
    let packet = at.get(..offset_in(at, ib) + ib.len()).unwrap_or_default();
    icrc::check_rocev2_packet(packet, ip.header().len(), whole)
}

/// Offset of `inner` inside `outer` (both borrowed from the same frame).
fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize)
}

fn dissect_link<'a>(
    link: LinkType,
    frame: &'a [u8],
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    let (ether, rest) = match link {
        LinkType::ETHERNET => {
            let (eth, rest) = Ethernet::parse(frame)?;
            d.link = Some(Link::Ethernet(eth));
            (eth.ether_type, rest)
        }
        LinkType::LINUX_SLL => {
            let (h, rest) = LinuxSll::parse(frame)?;
            d.link = Some(Link::LinuxSll(h));
            (h.protocol, rest)
        }
        LinkType::LINUX_SLL2 => {
            let (h, rest) = LinuxSll2::parse(frame)?;
            d.link = Some(Link::LinuxSll2(h));
            (h.protocol, rest)
        }
        LinkType::RAW
        | LinkType::RAW_BSD
        | LinkType::RAW_OPENBSD
        | LinkType::IPV4
        | LinkType::IPV6 => {
            d.link = Some(Link::Raw);
            return dissect_ip(frame, frame, config, d);
        }
        LinkType::INFINIBAND => {
            d.link = Some(Link::Raw);
            return dissect_native_ib(frame, config, d);
        }
        other => {
            return Err(Error::BadField {
                layer: Layer::Link,
                offset: 0,
                field: "link_type",
                value: other.0.into(),
                expected: "ethernet, linux cooked v1/v2, raw ip or infiniband",
            })
        }
    };
    let (mut ether, mut rest) = (ether, rest);
    while ether == ether_type::VLAN || ether == ether_type::QINQ {
        let (v, r) = Vlan::parse(rest).map_err(|e| e.at(offset_in(frame, rest)))?;
        if let Some(slot) = d.vlan.get_mut(usize::from(d.vlan_count)) {
            *slot = Some(v);
        }
        d.vlan_count = d.vlan_count.saturating_add(1);
        if d.vlan_count > 8 {
            return Err(Error::LimitExceeded {
                layer: Layer::Vlan,
                offset: offset_in(frame, rest),
                what: "stacked vlan tags",
                limit: 8,
            });
        }
        ether = v.ether_type;
        rest = r;
    }
    match ether {
        ether_type::IPV4 | ether_type::IPV6 => dissect_ip(frame, rest, config, d),
        ether_type::ROCE_V1 => dissect_rocev1(frame, rest, config, d),
        // Not RDMA: nothing more to say about it, and not an error either.
        _ => Ok(()),
    }
}

fn dissect_ip<'a>(
    frame: &'a [u8],
    at: &'a [u8],
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    let base = offset_in(frame, at);
    let (ip, payload) = Ip::parse(at).map_err(|e| e.at(base))?;
    d.ip = Some(ip);
    if ip.protocol() == PROTO_TCP {
        return dissect_tcp(frame, ip, payload, config, d);
    }
    // A fragment after the first starts in the middle of its datagram:
    // reading a UDP header there would make one up.
    if ip.protocol() != PROTO_UDP || ip.is_later_fragment() {
        return Ok(());
    }
    let whole = ip.captured_whole(at.len());
    let (udp, ib) = Udp::parse(payload).map_err(|e| e.at(offset_in(frame, payload)))?;
    d.udp = Some(udp);
    if udp.destination_port != config.rocev2_port {
        return Ok(());
    }
    let whole = whole && usize::from(udp.length) <= payload.len();
    if config.verify_icrc {
        d.icrc = Some(check_icrc(at, ip, ib, whole));
    }
    if !whole {
        // UDP's length says how long the packet was: 8 bytes of UDP
        // header, the IBA packet and its 4-byte ICRC.
        let wire = usize::from(udp.length).saturating_sub(Udp::HEADER_LEN + 4);
        return dissect_cut(frame, ib, wire, config, d);
    }
    let (body, _) = split_crc(frame, ib, 4, Layer::Icrc)?;
    dissect_transport(frame, body, config, d)
}

/// The TCP header and payload of an IP packet whose payload is `segment`
/// (as captured). A fragment's payload is not a whole segment, so none is
/// read from it: TCP does not fragment in practice, and a header read from
/// one would be made up for a later fragment.
fn dissect_tcp<'a>(
    frame: &'a [u8],
    ip: Ip<'a>,
    segment: &'a [u8],
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    if ip.is_fragment() {
        return Ok(());
    }
    let (header, payload) = Tcp::parse(segment).map_err(|e| e.at(offset_in(frame, segment)))?;
    let announced = match ip {
        Ip::V4(h) => usize::from(h.total_len()).saturating_sub(ip.header().len()),
        Ip::V6(h) => usize::from(h.payload_len()),
    };
    let wire = announced.saturating_sub(usize::from(header.data_offset));
    d.tcp = Some(TcpLayer {
        header,
        payload,
        wire_len: u32::try_from(wire.max(payload.len())).unwrap_or(u32::MAX),
    });
    let cut = wire > payload.len();
    dissect_iwarp(frame, &header, payload, cut, config, d)
}

/// The iWARP layers of a TCP segment on an iWARP flow: an MPA key on any
/// port, or a payload on the iWARP port that starts with a plausible FPDU.
fn dissect_iwarp<'a>(
    frame: &'a [u8],
    tcp: &Tcp,
    payload: &'a [u8],
    cut: bool,
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    if !config.iwarp_frames
        || payload.is_empty()
        || !(tcp.has_port(config.iwarp_port) || crate::iwarp::mpa::frame_kind(payload).is_some())
    {
        return Ok(());
    }
    let layer = match iwarp_frame::dissect(payload, offset_in(frame, payload), cut, config.mpa_crc)?
    {
        IwarpLayer::Fpdus(f) => IwarpLayer::Fpdus(f.with_rpcrdma(config.rpcrdma)),
        other => other,
    };
    d.iwarp = Some(layer);
    let IwarpLayer::Fpdus(fpdus) = layer else {
        return Ok(());
    };
    for item in fpdus.iter() {
        let fpdu = item?;
        let Ok(seg) = fpdu.segment else { continue };
        if let (true, Body::Data(data)) = (fpdu.starts_send(), seg.body) {
            // A Send's later segments are in later FPDUs: a header that
            // ends with this one is not malformed.
            let partial = !seg.ddp.last || cut;
            return dissect_rpcrdma(frame, data, partial, config, d);
        }
    }
    Ok(())
}

/// The RPC-over-RDMA (and the RPC and NFS inside it) of an FPDU that starts
/// an untagged Send (Message Offset 0), read as [`dissect`] reads a
/// segment's first such Send into [`Dissection::upper`]: a TCP segment can
/// carry several FPDUs, and a per-FPDU view wants every Send's. `fpdus` is
/// the segment's [`IwarpLayer::Fpdus`] (whether it was cut, how a payload
/// is taken for RPC-over-RDMA). `None` for an FPDU that starts no Send or
/// whose payload is not taken for RPC-over-RDMA; otherwise the layers that
/// parsed (offsets from the frame's start) and the error that stopped the
/// rest, if one did.
pub fn iwarp_send_rpcrdma<'a>(
    fpdu: &iwarp_frame::IwarpFpdu<'a>,
    fpdus: &iwarp_frame::Fpdus<'a>,
) -> Option<(RpcRdmaLayers<'a>, Option<Error>)> {
    let seg = fpdu.segment.as_ref().ok()?;
    let (true, Body::Data(data)) = (fpdu.starts_send(), seg.body) else {
        return None;
    };
    let partial = !seg.ddp.last || fpdus.cut();
    let config = Config::default().with_rpcrdma(fpdus.rpcrdma());
    // Read against the FPDU's ULPDU, then moved to frame offsets: the
    // frame's own bytes are not at hand here.
    let ulpdu = fpdu.fpdu.ulpdu;
    let shift = fpdu.offset + crate::iwarp::mpa::ULPDU_LENGTH_LEN;
    let mut d = Dissection::default();
    let stop = dissect_rpcrdma(ulpdu, data, partial, &config, &mut d).err();
    let Upper::RpcRdma(mut layers) = d.upper else {
        return None;
    };
    layers.offset += shift;
    Some((layers, stop.map(|e| e.at(shift))))
}

/// The transport and above of a packet the capture cut: `ib` is what was
/// captured from the BTH on, `wire` the packet's length to its ICRC.
#[cold]
#[inline(never)]
fn dissect_cut<'a>(
    frame: &'a [u8],
    ib: &'a [u8],
    wire: usize,
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    d.cut = true;
    let base = offset_in(frame, ib);
    transport::parse_transport_cut_into(ib, wire, &mut d.transport).map_err(|e| e.at(base))?;
    dissect_upper(frame, config, d)
}

fn dissect_rocev1<'a>(
    frame: &'a [u8],
    at: &'a [u8],
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    let (grh, rest) = Grh::parse(at).map_err(|e| e.at(offset_in(frame, at)))?;
    d.grh = Some(grh);
    // The GRH's payload length says where the packet ends (Ethernet may pad).
    let end = (usize::from(grh.pay_len)).min(rest.len());
    let whole = usize::from(grh.pay_len) <= rest.len();
    let rest = rest.get(..end).unwrap_or_default();
    if config.verify_icrc {
        let grh_to_icrc = at
            .get(..crate::ib::grh::HEADER_LEN + end)
            .unwrap_or_default();
        d.icrc = Some(icrc::check_rocev1(grh_to_icrc, whole));
    }
    if !whole {
        let wire = usize::from(grh.pay_len).saturating_sub(4);
        return dissect_cut(frame, rest, wire, config, d);
    }
    let (body, _) = split_crc(frame, rest, 4, Layer::Icrc)?;
    dissect_transport(frame, body, config, d)
}

fn dissect_native_ib<'a>(
    frame: &'a [u8],
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    let (lrh, mut rest) = Lrh::parse(frame)?;
    d.lrh = Some(lrh);
    match lrh.next_header() {
        LinkNextHeader::IbaGlobal => {
            let (grh, r) = Grh::parse(rest).map_err(|e| e.at(offset_in(frame, rest)))?;
            d.grh = Some(grh);
            rest = r;
        }
        LinkNextHeader::IbaLocal => {}
        // Raw packets carry no IBA transport.
        _ => return Ok(()),
    }
    // The LRH's packet length (in 4-byte words, through the ICRC) plus the
    // 2-byte VCRC says where the packet ends.
    let total = lrh.packet_bytes() + 2;
    let whole = frame.len() >= total;
    let packet = frame.get(..total.min(frame.len())).unwrap_or_default();
    let headers = offset_in(frame, rest);
    let rest = rest
        .get(..packet.len().saturating_sub(headers))
        .unwrap_or_default();
    if config.verify_icrc {
        let (i, v) = icrc::check_ib(packet, whole);
        d.icrc = Some(i);
        d.vcrc = Some(v);
    }
    if !whole {
        // The LRH's length runs through the ICRC.
        let wire = lrh.packet_bytes().saturating_sub(headers + 4);
        return dissect_cut(frame, rest, wire, config, d);
    }
    // Native IB ends with a 4-byte ICRC and a 2-byte VCRC.
    let (body, _) = split_crc(frame, rest, 6, Layer::Vcrc)?;
    dissect_transport(frame, body, config, d)
}

/// Splits `n` trailing CRC bytes off `ib`.
fn split_crc<'a>(
    frame: &[u8],
    ib: &'a [u8],
    n: usize,
    layer: Layer,
) -> Result<(&'a [u8], &'a [u8]), Error> {
    if ib.len() < n {
        return Err(Error::truncated(layer, 0, n, ib.len()).at(offset_in(frame, ib)));
    }
    Ok(ib.split_at(ib.len() - n))
}

fn dissect_transport<'a>(
    frame: &'a [u8],
    ib: &'a [u8],
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    let base = offset_in(frame, ib);
    transport::parse_transport_into(ib, &mut d.transport).map_err(|e| e.at(base))?;
    dissect_upper(frame, config, d)
}

/// The layers above the transport `d` holds.
#[inline(always)]
fn dissect_upper<'a>(
    frame: &'a [u8],
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    let Some(t) = &d.transport else {
        return Ok(());
    };
    let (op, payload) = (t.bth.opcode, t.payload);
    if op == Opcode::UD_SEND_ONLY && t.deth.is_some() && matches!(t.bth.dest_qp.get(), 0 | 1) {
        return dissect_mad(frame, payload, d);
    }
    if op.operation() == Operation::Send
        && matches!(op.position(), Some(Position::First | Position::Only))
    {
        // The rest of a multi-packet SEND is in later frames, the rest of a
        // cut one nowhere: a header that ends there is not malformed.
        let partial = op.position() == Some(Position::First) || d.cut;
        return dissect_rpcrdma(frame, payload, partial, config, d);
    }
    Ok(())
}

fn dissect_mad<'a>(
    frame: &'a [u8],
    payload: &'a [u8],
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    let base = offset_in(frame, payload);
    let cut = d.cut;
    let parsed = if cut {
        Mad::parse_prefix(payload)
    } else {
        Mad::parse(payload)
    };
    let (mad, data) = match parsed {
        Ok(v) => v,
        // The capture kept less than a MAD header: nothing to say.
        Err(Error::Truncated { .. }) if cut => return Ok(()),
        Err(e) => return Err(e.at(base)),
    };
    d.upper = Upper::Mad(MadLayers {
        mad,
        cm: None,
        cm_len: 0,
        cma: None,
        rpcrdma_cm_private: None,
    });
    let Upper::Mad(layers) = &mut d.upper else {
        return Ok(());
    };
    if mad.mgmt_class != crate::ib::mad::class::CM {
        return Ok(());
    }
    let msg = if cut {
        cm::parse_cm_prefix(&mad, data)
    } else {
        cm::parse_cm(&mad, data)
    }
    .map_err(|e| e.at(offset_in(frame, data)))?;
    layers.cm = Some(msg);
    layers.cm_len = data.len().min(cm::MESSAGE_LEN);
    let private = match msg {
        CmMessage::Req(r) => r.private_data,
        CmMessage::Rep(r) => r.private_data,
        CmMessage::Rej(r) => r.private_data,
        _ => return Ok(()),
    };
    let consumer = match msg {
        CmMessage::Req(r) if r.service_id.rdma_cm().is_some() => match CmaHeader::parse(private) {
            Ok((cma, rest)) => {
                layers.cma = Some(cma);
                rest
            }
            Err(Error::Truncated { .. }) if cut => return Ok(()),
            Err(e) => return Err(e.at(offset_in(frame, private))),
        },
        _ => private,
    };
    layers.rpcrdma_cm_private = rpcrdma_cm::find(consumer);
    Ok(())
}

fn dissect_rpcrdma<'a>(
    frame: &'a [u8],
    payload: &'a [u8],
    partial: bool,
    config: &Config,
    d: &mut Dissection<'a>,
) -> Result<(), Error> {
    let decode = match config.rpcrdma {
        RpcRdmaDecode::Never => false,
        RpcRdmaDecode::Always => true,
        RpcRdmaDecode::Heuristic => looks_like_rpcrdma(payload),
    };
    if !decode {
        return Ok(());
    }
    let base = offset_in(frame, payload);
    d.upper = Upper::RpcRdma(RpcRdmaLayers {
        offset: base,
        header: None,
        rpc: None,
        nfs: None,
    });
    let Upper::RpcRdma(layers) = &mut d.upper else {
        return Ok(());
    };
    let (hdr, stream) = match RpcRdmaHeader::parse(payload) {
        Ok(v) => v,
        Err(Error::Truncated { .. }) if partial => return Ok(()),
        Err(e) => return Err(e.at(base)),
    };
    layers.header = Some(hdr);
    if !matches!(hdr.proc, Proc::Msg | Proc::Msgp) || stream.is_empty() {
        return Ok(());
    }
    let stream_base = offset_in(frame, stream);
    match RpcMsg::parse(stream) {
        Ok((msg, _)) => {
            if let MsgBody::Call(call) = &msg.body {
                // Data items moved by DDP are missing from the stream; the
                // read list says where, so the COMPOUND walk can step over them.
                let ddp = match hdr.chunks() {
                    Some(c) => nfs::Ddp::new(c, msg.header_len()),
                    None => nfs::Ddp::NONE,
                };
                layers.nfs = Some(nfs::describe_call_with(
                    call.prog, call.vers, call.proc, call.args, ddp,
                ));
            }
            layers.rpc = Some(msg);
            Ok(())
        }
        Err(Error::Truncated { .. }) if partial => Ok(()),
        Err(e) => Err(e.at(stream_base)),
    }
}

/// RPC-over-RDMA version 1 has `vers` = 1 in its second word and a proc
/// number below 5 in its fourth; credits are small. Other upper layers on RC
/// queue pairs (iSER, SMB Direct, NVMe-oF) do not look like that.
fn looks_like_rpcrdma(p: &[u8]) -> bool {
    let word = |i: usize| match p.get(i * 4..i * 4 + 4) {
        Some(&[a, b, c, e]) => Some(u32::from_be_bytes([a, b, c, e])),
        _ => None,
    };
    matches!((word(1), word(2), word(3)), (Some(1), Some(credits), Some(proc)) if proc <= 4 && credits <= 0xffff)
}

#[cfg(test)]
mod tests {
    /// One is built and moved per frame, so its size shows in every
    /// benchmark: a new layer belongs in [`super::Upper`] if it cannot share
    /// a frame with the others.
    #[test]
    fn dissection_stays_small() {
        let size = core::mem::size_of::<super::Dissection<'_>>();
        // 768 until the iWARP slot (24 bytes: a slice, an offset and two
        // flags; the MPA frame is kept as bytes to stay that small). It
        // shares frames with RPC-over-RDMA in `upper`, so it cannot go there.
        // 8 more for the NFS call's COMPOUND minor version.
        assert!(size <= 800, "Dissection grew to {size} bytes");
    }

    /// Ethernet, IPv4 (total length 52 + `len`), TCP 20049 -> 40000 with
    /// SYN|ACK, then `len` payload octets of which `kept` were captured.
    fn tcp_frame(len: usize, kept: usize) -> std::vec::Vec<u8> {
        let mut f = std::vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        let total = u16::try_from(20 + 32 + len).unwrap().to_be_bytes();
        f.extend_from_slice(&[0x45, 0, total[0], total[1], 0, 0, 0x40, 0, 64, 6, 0, 0]);
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x4e, 0x51, 0x9c, 0x40, 0, 0, 0, 7, 0, 0, 0, 9, 0x80, 0x12]);
        f.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
        f.extend_from_slice(&[1; 12]);
        f.extend((0..kept).map(|i| i as u8));
        f
    }

    #[test]
    fn iwarp_per_segment_only_when_asked() {
        use super::{dissect, Config, IwarpLayer};
        use crate::link::LinkType;
        // An untagged Send FPDU of an RPC-over-RDMA RDMA_MSG from port 20049.
        let mut ulpdu = std::vec![0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
        ulpdu.extend_from_slice(&[0x6d, 0x7a, 0x4c, 1, 0, 0, 0, 1, 0, 0, 0, 0x80, 0, 0, 0, 0]);
        ulpdu.extend_from_slice(&[0; 12]);
        let mut payload = u16::try_from(ulpdu.len()).unwrap().to_be_bytes().to_vec();
        payload.extend_from_slice(&ulpdu);
        payload.resize(
            payload.len() + usize::from(crate::iwarp::mpa::pad_len(46)) + 4,
            0,
        );
        let mut f = tcp_frame(payload.len(), 0);
        f.extend_from_slice(&payload);
        let off = dissect(LinkType::ETHERNET, &f, &Config::default());
        assert!(off.iwarp.is_none() && off.rpcrdma().is_none() && off.stop.is_none());
        let on = Config::default().with_iwarp_frames(true);
        let d = dissect(LinkType::ETHERNET, &f, &on);
        assert!(
            matches!(d.iwarp, Some(IwarpLayer::Fpdus(_))),
            "{:?}",
            d.iwarp
        );
        assert_eq!(d.rpcrdma().map(|h| h.xid.0), Some(0x6d7a_4c01));
        assert!(d.stop.is_none(), "{:?}", d.stop);
        // Another port is not iWARP unless configured.
        let elsewhere = on.with_iwarp_port(4420);
        assert!(dissect(LinkType::ETHERNET, &f, &elsewhere).iwarp.is_none());
    }

    #[test]
    fn tcp_header_and_payload() {
        use crate::link::LinkType;
        let f = tcp_frame(10, 10);
        let d = super::dissect(LinkType::ETHERNET, &f, &super::Config::default());
        assert_eq!(d.stop, None);
        let tcp = d.tcp.expect("a TCP layer");
        assert_eq!(
            (tcp.header.source_port, tcp.header.destination_port),
            (20049, 40000)
        );
        assert_eq!((tcp.header.seq, tcp.header.ack_number), (7, 9));
        assert!(tcp.header.syn && tcp.header.ack && !tcp.header.fin && !tcp.header.rst);
        assert_eq!(tcp.header.data_offset, 32);
        assert_eq!(tcp.payload, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(tcp.wire_len, 10);
        assert!(!tcp.cut() && d.udp.is_none() && d.bth().is_none());
    }

    #[test]
    fn tcp_payload_cut_by_snap_length() {
        use crate::link::LinkType;
        let f = tcp_frame(1000, 4);
        let d = super::dissect(LinkType::ETHERNET, &f, &super::Config::default());
        let tcp = d.tcp.expect("a TCP layer");
        assert_eq!((tcp.payload.len(), tcp.wire_len), (4, 1000));
        assert!(tcp.cut());
        // The header itself cut: where parsing stopped, with its frame offset.
        let d = super::dissect(LinkType::ETHERNET, &f[..40], &super::Config::default());
        assert!(d.tcp.is_none());
        assert!(matches!(
            d.stop,
            Some(crate::Error::Truncated {
                layer: crate::layer::Layer::Tcp,
                offset: 34,
                ..
            })
        ));
    }
}
