//! Each frame's dissection as one typed, serializable object: the JSON
//! shape of `rdma-analyzer frames --json` (one object per line), and what
//! the Python binding returns, so both have the same field names by
//! construction.
//!
//! ```text
//! { "schema_version": 1, "frame": 30, "ts_ns": 1795217646553123456, "len": 62,
//!   "eth": {..}, "ip": {..}, "udp": {..}, "bth": {..}, "aeth": {..},
//!   "payload_len": 0, "icrc": "valid" }
//! ```
//!
//! Rules of the schema (version [`SCHEMA_VERSION`]):
//! - a layer's key is present only when the frame has that layer; inside a
//!   layer, keys are the spec's field names in snake_case;
//! - numbers (R_Keys, VAs, XIDs, timestamps in integer nanoseconds) are JSON
//!   numbers; addresses are strings in their usual text form, opaque bytes
//!   lower-case hex;
//! - code points come as their number plus a name where the spec names them
//!   (`opcode` and `opcode_name`, `accept_stat_code` and `accept_stat`); a
//!   name is never Rust `Debug` text;
//! - `null` marks a field the layer defines but this frame does not carry
//!   (an RPC-over-RDMA message without a reply chunk, an RFC 8797 private
//!   data version whose sizes this crate cannot decode).
//!
//! Keys are written in alphabetical order within each object.
//!
//! Serializing allocates nothing of its own (addresses and hex are written
//! through [`core::fmt`]), so the module works without `std`.
//!
//! ```
//! use rdma_dissectors::{link::LinkType, stack, view::FrameView};
//! # let frame: &[u8] = &[0u8; 20];
//! let d = stack::dissect(LinkType::ETHERNET, frame, &stack::Config::default());
//! let v = FrameView::new(1, 1_795_217_646_495_692_000, 20, &d);
//! assert_eq!(v.schema_version, 2);
//! // With serde_json, one line of `frames --json` (a time since the epoch
//! // is a string: a double cannot hold it exactly):
//! let line = serde_json::to_string(&v).unwrap();
//! assert!(line.ends_with(r#""frame":1,"len":20,"schema_version":2,"ts_ns":"1795217646495692000"}"#));
//! ```

use core::fmt;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::ser::{Serialize, Serializer};

use crate::ib::aeth::AckKind;
use crate::ib::cm::CmMessage;
use crate::ib::icrc::IcrcStatus;
use crate::ip::Ip;
use crate::link::{Link, Vlan};
use crate::nfs::CallSummary;
use crate::oncrpc::{
    AcceptStat, AcceptStatCode, AuthStat, AuthSys, MsgBody, RejectedReply, ReplyBody,
};
use crate::rpcrdma::{Body, Chunks, RdmaError, RpcRdmaHeader, WriteChunk};
use crate::rpcrdma_cm::CmPrivateData;
use crate::stack::Dissection;

#[cfg(feature = "schemars")]
use schemars::JsonSchema;

/// The version of the frame schema: the `schema_version` key of every
/// frame. It changes when a key is renamed or removed or a value changes
/// meaning; new keys do not change it.
pub const SCHEMA_VERSION: u32 = 2;

/// Numbers a JSON double cannot hold, written as strings: nanosecond
/// timestamps (about 1.8e18, above 2^53) and 64-bit data as decimal,
/// addresses, R_Keys, GUIDs, service and transaction ids as `"0x…"` hex,
/// as the text writes them. jq 1.6 and JavaScript keep a string exact.
/// (Schema version 2; version 1 wrote them as JSON numbers.) Public so that
/// other JSON over the same values (the analyzer's) writes them the same
/// way: `#[serde(serialize_with = "exact::decimal")]` on a `u64`, `u32`,
/// their `Option`s, or references to them.
pub mod exact {
    use serde::Serializer;

    /// A number written as a string, or null.
    pub trait Exact {
        /// The value; `None` for null.
        fn exact(&self) -> Option<u64>;
    }
    impl Exact for u64 {
        fn exact(&self) -> Option<u64> {
            Some(*self)
        }
    }
    impl Exact for u32 {
        fn exact(&self) -> Option<u64> {
            Some(u64::from(*self))
        }
    }
    impl<T: Exact> Exact for Option<T> {
        fn exact(&self) -> Option<u64> {
            self.as_ref().and_then(Exact::exact)
        }
    }
    impl<T: Exact + ?Sized> Exact for &T {
        fn exact(&self) -> Option<u64> {
            (**self).exact()
        }
    }

    /// `"1795217646495692000"`, or null.
    ///
    /// # Errors
    /// The serializer's.
    pub fn decimal<S: Serializer, T: Exact>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        match v.exact() {
            Some(x) => s.collect_str(&x),
            None => s.serialize_none(),
        }
    }

    /// `"0xfa7da3d48d23d000"`, or null.
    ///
    /// # Errors
    /// The serializer's.
    pub fn hex<S: Serializer, T: Exact>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        match v.exact() {
            Some(x) => s.collect_str(&format_args!("{x:#x}")),
            None => s.serialize_none(),
        }
    }
}

/// One frame: where and when it was captured, and every layer that parsed.
#[non_exhaustive]
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct FrameView<'a> {
    /// ACK Extended Transport Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aeth: Option<AethView>,
    /// Atomic ACK Extended Transport Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atomicacketh: Option<AtomicAckEthView>,
    /// Atomic Extended Transport Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atomiceth: Option<AtomicEthView>,
    /// Base Transport Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bth: Option<BthView>,
    /// Communication Manager message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cm: Option<CmView<'a>>,
    /// RDMA-CM header at the start of a REQ's private data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cma: Option<CmaView>,
    /// Datagram Extended Transport Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deth: Option<DethView>,
    /// Where and why dissection stopped, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorView>,
    /// Ethernet II header and VLAN tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eth: Option<EthView>,
    /// Frame number, counted from 1 as tshark does.
    pub frame: u64,
    /// Global Route Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grh: Option<GrhView>,
    /// ICRC verdict: `"valid"`, `"invalid"` or `"unchecked"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icrc: Option<&'static str>,
    /// Invalidate Extended Transport Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ieth: Option<IethView>,
    /// Immediate data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immdt: Option<ImmDtView>,
    /// IPv4 or IPv6 header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<IpView>,
    /// iWARP (MPA, DDP, RDMAP) at the start of a TCP segment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iwarp: Option<IwarpView<'a>>,
    /// Length of the frame on the wire (may exceed the captured bytes).
    pub len: u32,
    /// Local Route Header (native InfiniBand).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lrh: Option<LrhView>,
    /// Management datagram header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mad: Option<MadView>,
    /// NFS (or MOUNT, NLM, ...) call summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nfs: Option<NfsView>,
    /// Bytes of IBA payload after the transport headers (present for IB frames).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_len: Option<usize>,
    /// RDMA Extended Transport Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reth: Option<RethView>,
    /// ONC RPC call or reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc: Option<RpcView<'a>>,
    /// RPC-over-RDMA header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpcrdma: Option<RpcRdmaView<'a>>,
    /// RFC 8797 private data in a CM message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpcrdma_cm_private: Option<CmPrivateView>,
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Linux cooked capture v1 header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sll: Option<SllView>,
    /// Linux cooked capture v2 header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sll2: Option<Sll2View>,
    /// Capture time in nanoseconds since the Unix epoch.
    #[serde(serialize_with = "exact::decimal")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub ts_ns: u64,
    /// UDP header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpView>,
    /// XRC Extended Transport Header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xrceth: Option<XrcEthView>,
}

impl<'a> FrameView<'a> {
    /// The view of frame `number` captured at `ts_ns` (nanoseconds since
    /// the epoch), `orig_len` bytes long on the wire, dissected as `d`.
    pub fn new(number: u64, ts_ns: u64, orig_len: u32, d: &Dissection<'a>) -> Self {
        let (eth, sll, sll2) = match d.link {
            Some(Link::Ethernet(e)) => (
                Some(EthView {
                    dst: Mac(e.destination),
                    ether_type: e.ether_type,
                    src: Mac(e.source),
                    vlan: VlanIds(d.vlan),
                }),
                None,
                None,
            ),
            Some(Link::LinuxSll(s)) => (
                None,
                Some(SllView {
                    packet_type: s.packet_type,
                    protocol: s.protocol,
                }),
                None,
            ),
            Some(Link::LinuxSll2(s)) => (
                None,
                None,
                Some(Sll2View {
                    interface_index: s.interface_index,
                    packet_type: s.packet_type,
                    protocol: s.protocol,
                }),
            ),
            _ => (None, None, None),
        };
        let bth = d.bth();
        FrameView {
            aeth: d.aeth().map(|a| AethView::new(a.syndrome, a.msn, a.kind())),
            atomicacketh: d.atomicacketh().map(|h| AtomicAckEthView {
                orig_remote_data: h.orig_remote_data,
            }),
            atomiceth: d.atomiceth().map(|h| AtomicEthView {
                compare_data: h.compare_data,
                r_key: h.r_key,
                swap_add_data: h.swap_add_data,
                va: h.va,
            }),
            bth: bth.map(|b| BthView {
                ack_req: b.ack_req,
                becn: b.becn,
                dest_qp: b.dest_qp.get(),
                fecn: b.fecn,
                m: b.m,
                opcode: b.opcode.0,
                opcode_name: b.opcode.name(),
                p_key: b.p_key.get(),
                pad_count: b.pad_count,
                psn: b.psn.get(),
                se: b.se,
                tver: b.tver,
            }),
            cm: d.cm().map(CmView::new),
            cma: d.cma().map(|c| CmaView {
                cma_version: c.cma_version,
                dst_addr: c.dst_addr,
                ip_version: c.ip_version,
                src_addr: c.src_addr,
                src_port: c.src_port,
            }),
            deth: d.deth().map(|h| DethView {
                q_key: h.q_key,
                src_qp: h.src_qp.get(),
            }),
            error: d.stop.map(|e| ErrorView {
                layer: e.layer().name(),
                message: Text(e),
                offset: e.offset(),
            }),
            eth,
            frame: number,
            grh: d.grh.map(|g| GrhView {
                dgid: Ipv6Addr::from(g.dgid),
                flow_label: g.flow_label,
                hop_lmt: g.hop_lmt,
                ip_ver: g.ip_ver,
                nxt_hdr: g.nxt_hdr,
                pay_len: g.pay_len,
                sgid: Ipv6Addr::from(g.sgid),
                tclass: g.tclass,
            }),
            icrc: d.icrc.map(|s| match s {
                IcrcStatus::Valid => "valid",
                IcrcStatus::Invalid { .. } => "invalid",
                _ => "unchecked",
            }),
            ieth: d.ieth().map(|h| IethView { r_key: h.r_key }),
            immdt: d.immdt().map(|h| ImmDtView { imm: h.imm }),
            ip: d.ip.map(IpView::new),
            iwarp: d.iwarp.as_ref().map(IwarpView::new),
            len: orig_len,
            lrh: d.lrh.map(|l| LrhView {
                dlid: l.dlid,
                lnh: l.lnh,
                lver: l.lver,
                packet_length: l.packet_length,
                sl: l.sl,
                slid: l.slid,
                vl: l.vl,
            }),
            mad: d.mad().map(|m| MadView {
                attribute_id: m.attribute_id,
                attribute_modifier: m.attribute_modifier,
                base_version: m.base_version,
                class_version: m.class_version,
                method: m.method,
                mgmt_class: m.mgmt_class,
                status: m.status,
                transaction_id: m.transaction_id,
            }),
            nfs: d.nfs().map(|n| NfsView::new(*n)),
            payload_len: bth.map(|_| d.payload().len()),
            reth: d.reth().map(|h| RethView {
                dma_length: h.dma_length,
                r_key: h.r_key,
                va: h.va,
            }),
            rpc: d.rpc().map(|r| RpcView::new(r.xid, &r.body)),
            rpcrdma: d.rpcrdma().map(RpcRdmaView::new),
            rpcrdma_cm_private: d
                .rpcrdma_cm_private()
                .map(|(offset, p)| CmPrivateView::new(offset, p)),
            schema_version: SCHEMA_VERSION,
            sll,
            sll2,
            ts_ns,
            udp: d.udp.map(|u| UdpView {
                checksum: u.checksum,
                dst_port: u.destination_port,
                length: u.length,
                src_port: u.source_port,
            }),
            xrceth: d.xrceth().map(|h| XrcEthView { xrc_srq: h.xrc_srq }),
        }
    }
}

// ---------------------------------------------------------------------------
// Values written as text or lists without allocating.

/// A MAC address, written `52:54:00:99:00:01`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl Serialize for Mac {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Bytes written as lower-case hex, two digits each, no separator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hex<'a>(pub &'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Serialize for Hex<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Bytes written as UTF-8 text, with U+FFFD for what does not decode (as
/// `String::from_utf8_lossy` would).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lossy<'a>(pub &'a [u8]);

impl fmt::Display for Lossy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{fffd}")?;
            }
        }
        Ok(())
    }
}

impl Serialize for Lossy<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Any `Display` value written as a string (an [`crate::Error`]'s message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Text<T>(pub T);

impl<T: fmt::Display> Serialize for Text<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// The VLAN IDs of a frame's 802.1Q tags, outermost first, as a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanIds(pub [Option<Vlan>; 2]);

impl Serialize for VlanIds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().flatten().map(|v| v.vid))
    }
}

#[cfg(feature = "schemars")]
mod schema_impls {
    //! `JsonSchema` of the hand-written `Serialize` values.
    use super::*;
    use alloc::borrow::Cow;
    use schemars::{json_schema, Schema, SchemaGenerator};

    extern crate alloc;

    macro_rules! string_schema {
        ($t:ty, $name:literal, $desc:literal) => {
            impl JsonSchema for $t {
                fn inline_schema() -> bool {
                    true
                }
                fn schema_name() -> Cow<'static, str> {
                    $name.into()
                }
                fn json_schema(_: &mut SchemaGenerator) -> Schema {
                    json_schema!({ "type": "string", "description": $desc })
                }
            }
        };
    }
    string_schema!(Mac, "Mac", "MAC address, aa:bb:cc:dd:ee:ff");
    string_schema!(Hex<'_>, "Hex", "bytes as lower-case hex");
    string_schema!(
        Lossy<'_>,
        "Lossy",
        "bytes as UTF-8 text (U+FFFD where invalid)"
    );
    string_schema!(Text<crate::Error>, "ErrorMessage", "the error's message");

    macro_rules! array_schema {
        ($t:ty, $name:literal, $item:ty) => {
            impl JsonSchema for $t {
                fn inline_schema() -> bool {
                    true
                }
                fn schema_name() -> Cow<'static, str> {
                    $name.into()
                }
                fn json_schema(g: &mut SchemaGenerator) -> Schema {
                    json_schema!({ "type": "array", "items": g.subschema_for::<$item>() })
                }
            }
        };
    }
    array_schema!(VlanIds, "VlanIds", u16);
    array_schema!(ReadListView<'_>, "ReadList", ReadSegmentView);
    array_schema!(WriteListView<'_>, "WriteList", SegmentsView<'static>);
    array_schema!(SegmentsView<'_>, "Segments", SegmentView);
    array_schema!(Gids<'_>, "Gids", u32);
    array_schema!(OpNames, "OpNames", str);
}

// ---------------------------------------------------------------------------
// Link, network and UDP.

/// Ethernet II header and the frame's VLAN tags.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct EthView {
    /// Destination address.
    pub dst: Mac,
    /// EtherType of the innermost header.
    pub ether_type: u16,
    /// Source address.
    pub src: Mac,
    /// VLAN IDs of the 802.1Q tags (at most two kept), outermost first.
    pub vlan: VlanIds,
}

/// Linux cooked capture (v1) header.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct SllView {
    /// Packet type (0 to us, 4 sent by us, ...).
    pub packet_type: u16,
    /// Protocol (EtherType).
    pub protocol: u16,
}

/// Linux cooked capture v2 header.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct Sll2View {
    /// Interface index.
    pub interface_index: u32,
    /// Packet type.
    pub packet_type: u8,
    /// Protocol (EtherType).
    pub protocol: u16,
}

/// IPv4 or IPv6 header; `version` tells which.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
#[serde(untagged)]
pub enum IpView {
    /// IPv4.
    V4(Ipv4View),
    /// IPv6.
    V6(Ipv6View),
}

impl IpView {
    fn new(ip: Ip<'_>) -> Self {
        match ip {
            Ip::V4(h) => {
                let h = h.fields();
                IpView::V4(Ipv4View {
                    dscp: h.dscp,
                    dst: h.destination,
                    ecn: h.ecn,
                    len: h.total_len,
                    proto: h.protocol,
                    src: h.source,
                    ttl: h.ttl,
                    version: 4,
                })
            }
            Ip::V6(h) => {
                let h = h.fields();
                IpView::V6(Ipv6View {
                    dst: h.destination,
                    flow_label: h.flow_label,
                    hop_limit: h.hop_limit,
                    len: h.payload_len,
                    proto: h.next_header,
                    src: h.source,
                    traffic_class: h.traffic_class,
                    version: 6,
                })
            }
        }
    }
}

/// IPv4 header (RFC 791).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct Ipv4View {
    /// Differentiated services code point.
    pub dscp: u8,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// ECN bits.
    pub ecn: u8,
    /// Total length.
    pub len: u16,
    /// Protocol (17 for UDP).
    pub proto: u8,
    /// Source address.
    pub src: Ipv4Addr,
    /// Time to live.
    pub ttl: u8,
    /// 4.
    pub version: u8,
}

/// IPv6 header (RFC 8200).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct Ipv6View {
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Flow label.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Payload length.
    pub len: u16,
    /// Next header (17 for UDP).
    pub proto: u8,
    /// Source address.
    pub src: Ipv6Addr,
    /// Traffic class.
    pub traffic_class: u8,
    /// 6.
    pub version: u8,
}

/// UDP header (RFC 768).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct UdpView {
    /// Checksum as sent (0: none, as RoCEv2 senders do).
    pub checksum: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Length field.
    pub length: u16,
    /// Source port.
    pub src_port: u16,
}

// ---------------------------------------------------------------------------
// InfiniBand.

/// Local Route Header (IBA 7.7).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct LrhView {
    /// Destination LID.
    pub dlid: u16,
    /// Link next header.
    pub lnh: u8,
    /// Link version.
    pub lver: u8,
    /// Packet length in 4-byte words.
    pub packet_length: u16,
    /// Service level.
    pub sl: u8,
    /// Source LID.
    pub slid: u16,
    /// Virtual lane.
    pub vl: u8,
}

/// Global Route Header (IBA 8.3).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct GrhView {
    /// Destination GID, written as an IPv6 address.
    pub dgid: Ipv6Addr,
    /// Flow label.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_lmt: u8,
    /// IP version (6).
    pub ip_ver: u8,
    /// Next header (0x1b: BTH).
    pub nxt_hdr: u8,
    /// Payload length.
    pub pay_len: u16,
    /// Source GID, written as an IPv6 address.
    pub sgid: Ipv6Addr,
    /// Traffic class.
    pub tclass: u8,
}

/// Base Transport Header (IBA 9.2).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct BthView {
    /// AckReq.
    pub ack_req: bool,
    /// BECN.
    pub becn: bool,
    /// Destination QP.
    pub dest_qp: u32,
    /// FECN.
    pub fecn: bool,
    /// MigReq.
    pub m: bool,
    /// OpCode.
    pub opcode: u8,
    /// The opcode's IBA name ("RC SEND Only", ...).
    pub opcode_name: &'static str,
    /// Partition key.
    pub p_key: u16,
    /// Pad count.
    pub pad_count: u8,
    /// Packet sequence number.
    pub psn: u32,
    /// Solicited event.
    pub se: bool,
    /// Transport header version.
    pub tver: u8,
}

/// XRC Extended Transport Header (IBA 9.3.1).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct XrcEthView {
    /// XRC SRQ number.
    pub xrc_srq: u32,
}

/// Datagram Extended Transport Header (IBA 9.3.2).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct DethView {
    /// Queue key.
    pub q_key: u32,
    /// Source QP.
    pub src_qp: u32,
}

/// RDMA Extended Transport Header (IBA 9.3.3).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct RethView {
    /// DMA length.
    pub dma_length: u32,
    /// Remote key.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub r_key: u32,
    /// Virtual address.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub va: u64,
}

/// Atomic Extended Transport Header (IBA 9.3.4).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct AtomicEthView {
    /// Compare data.
    #[serde(serialize_with = "exact::decimal")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub compare_data: u64,
    /// Remote key.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub r_key: u32,
    /// Swap or add data.
    #[serde(serialize_with = "exact::decimal")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub swap_add_data: u64,
    /// Virtual address.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub va: u64,
}

/// ACK Extended Transport Header (IBA 9.3.5) with its syndrome decoded.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct AethView {
    /// For `"ack"`: the 5-bit credit count code (IBA table 43).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credit_count: Option<u8>,
    /// `"ack"`, `"rnr_nak"`, `"nak"` or `"reserved"`: the syndrome's type
    /// (IBA table 42).
    pub kind: &'static str,
    /// Message sequence number.
    pub msn: u32,
    /// For `"nak"`: the NAK code (IBA table 44).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nak_code: Option<u8>,
    /// For `"nak"`: the NAK code's IBA name ("PSN Sequence Error", ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nak_name: Option<&'static str>,
    /// The syndrome byte as sent.
    pub syndrome: u8,
    /// For `"rnr_nak"`: the 5-bit RNR timer code (IBA table 45).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer: Option<u8>,
}

impl AethView {
    fn new(syndrome: u8, msn: u32, kind: AckKind) -> Self {
        let mut v = AethView {
            credit_count: None,
            kind: kind.name(),
            msn,
            nak_code: None,
            nak_name: None,
            syndrome,
            timer: None,
        };
        match kind {
            AckKind::Ack { credit_count } => v.credit_count = Some(credit_count),
            AckKind::RnrNak { timer } => v.timer = Some(timer),
            AckKind::Nak(code) => {
                v.nak_code = Some(code.into());
                v.nak_name = Some(code.name());
            }
            AckKind::Reserved(_) => {}
        }
        v
    }
}

/// Atomic ACK Extended Transport Header (IBA 9.3.6).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct AtomicAckEthView {
    /// The remote data before the operation.
    #[serde(serialize_with = "exact::decimal")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub orig_remote_data: u64,
}

/// Immediate data (IBA 9.3.7).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct ImmDtView {
    /// The immediate value.
    pub imm: u32,
}

/// Invalidate Extended Transport Header (IBA 9.3.8).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct IethView {
    /// The R_Key to invalidate.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub r_key: u32,
}

/// Management datagram common header (IBA 13.4.3).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct MadView {
    /// Attribute ID.
    pub attribute_id: u16,
    /// Attribute modifier.
    pub attribute_modifier: u32,
    /// Base version.
    pub base_version: u8,
    /// Class version.
    pub class_version: u8,
    /// Method.
    pub method: u8,
    /// Management class (7: CM).
    pub mgmt_class: u8,
    /// Status.
    pub status: u16,
    /// Transaction ID.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub transaction_id: u64,
}

/// A Communication Manager message (IBA 12.6); `message` names it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
#[serde(untagged)]
pub enum CmView<'a> {
    /// ConnectRequest.
    Req(CmReqView<'a>),
    /// ConnectReply.
    Rep(CmRepView<'a>),
    /// ConnectReject.
    Rej(CmRejView<'a>),
    /// MRA, RTU, DREQ, DREP, SIDR, LAP, APR and unknown messages.
    Other(CmOtherView),
}

impl<'a> CmView<'a> {
    /// The view of one CM message.
    pub fn new(cm: &CmMessage<'a>) -> Self {
        let ids = |message, local: u32, remote: u32| CmOtherView {
            message,
            local_comm_id: Some(local),
            remote_comm_id: Some(remote),
            ..CmOtherView::EMPTY
        };
        match cm {
            CmMessage::Req(r) => CmView::Req(CmReqView {
                end_to_end_flow_control: r.end_to_end_flow_control,
                initiator_depth: r.initiator_depth,
                local_ca_guid: r.local_ca_guid,
                local_cm_response_timeout: r.local_cm_response_timeout,
                local_comm_id: r.local_comm_id,
                local_q_key: r.local_q_key,
                local_qpn: r.local_qpn.get(),
                max_cm_retries: r.max_cm_retries,
                message: "REQ",
                p_key: r.p_key.get(),
                path_packet_payload_mtu: r.path_packet_payload_mtu,
                private_data: Hex(r.private_data),
                remote_cm_response_timeout: r.remote_cm_response_timeout,
                responder_resources: r.responder_resources,
                retry_count: r.retry_count,
                rnr_retry_count: r.rnr_retry_count,
                service_id: r.service_id.0,
                srq: r.srq,
                starting_psn: r.starting_psn.get(),
                transport_service_type: r.transport_service_type,
            }),
            CmMessage::Rep(r) => CmView::Rep(CmRepView {
                end_to_end_flow_control: r.end_to_end_flow_control,
                failover_accepted: r.failover_accepted,
                initiator_depth: r.initiator_depth,
                local_ca_guid: r.local_ca_guid,
                local_comm_id: r.local_comm_id,
                local_q_key: r.local_q_key,
                local_qpn: r.local_qpn.get(),
                message: "REP",
                private_data: Hex(r.private_data),
                remote_comm_id: r.remote_comm_id,
                responder_resources: r.responder_resources,
                rnr_retry_count: r.rnr_retry_count,
                srq: r.srq,
                starting_psn: r.starting_psn.get(),
                target_ack_delay: r.target_ack_delay,
            }),
            CmMessage::Rej(r) => CmView::Rej(CmRejView {
                ari: Hex(r.ari),
                local_comm_id: r.local_comm_id,
                message: "REJ",
                message_rejected: r.message_rejected,
                private_data: Hex(r.private_data),
                reason: r.reason.0,
                reason_name: r.reason.name(),
                remote_comm_id: r.remote_comm_id,
            }),
            CmMessage::Rtu(r) => CmView::Other(ids("RTU", r.local_comm_id, r.remote_comm_id)),
            CmMessage::Dreq(r) => CmView::Other(CmOtherView {
                remote_qpn_eecn: Some(r.remote_qpn_eecn),
                ..ids("DREQ", r.local_comm_id, r.remote_comm_id)
            }),
            CmMessage::Drep(r) => CmView::Other(ids("DREP", r.local_comm_id, r.remote_comm_id)),
            CmMessage::Mra(r) => CmView::Other(CmOtherView {
                message_mraed: Some(r.message_mraed),
                service_timeout: Some(r.service_timeout),
                ..ids("MRA", r.local_comm_id, r.remote_comm_id)
            }),
            CmMessage::SidrReq(r) => CmView::Other(CmOtherView {
                message: "SIDR_REQ",
                p_key: Some(r.p_key.get()),
                request_id: Some(r.request_id),
                service_id: Some(r.service_id.0),
                ..CmOtherView::EMPTY
            }),
            CmMessage::SidrRep(r) => CmView::Other(CmOtherView {
                message: "SIDR_REP",
                q_key: Some(r.q_key),
                qpn: Some(r.qpn.get()),
                request_id: Some(r.request_id),
                service_id: Some(r.service_id.0),
                status: Some(r.status),
                ..CmOtherView::EMPTY
            }),
            CmMessage::Lap(r) => CmView::Other(ids("LAP", r.local_comm_id, r.remote_comm_id)),
            CmMessage::Apr(r) => CmView::Other(CmOtherView {
                ar_status: Some(r.ar_status),
                ..ids("APR", r.local_comm_id, r.remote_comm_id)
            }),
            CmMessage::Unknown { attribute_id, .. } => CmView::Other(CmOtherView {
                attribute_id: Some(*attribute_id),
                ..CmOtherView::EMPTY
            }),
            #[allow(unreachable_patterns)]
            _ => CmView::Other(CmOtherView::EMPTY),
        }
    }

    /// The message's short name ("REQ", "REP", ..., "unknown").
    pub const fn message(&self) -> &'static str {
        match self {
            CmView::Req(r) => r.message,
            CmView::Rep(r) => r.message,
            CmView::Rej(r) => r.message,
            CmView::Other(r) => r.message,
        }
    }

    /// The sender's QP number, for REQ and REP.
    pub const fn local_qpn(&self) -> Option<u32> {
        match self {
            CmView::Req(r) => Some(r.local_qpn),
            CmView::Rep(r) => Some(r.local_qpn),
            _ => None,
        }
    }
}

/// CM ConnectRequest (IBA 12.6.5).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct CmReqView<'a> {
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Local CA GUID.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub local_ca_guid: u64,
    /// Local CM response timeout.
    pub local_cm_response_timeout: u8,
    /// Local communication ID.
    pub local_comm_id: u32,
    /// Local Q_Key.
    pub local_q_key: u32,
    /// Local QPN.
    pub local_qpn: u32,
    /// Max CM retries.
    pub max_cm_retries: u8,
    /// `"REQ"`.
    pub message: &'static str,
    /// Partition key.
    pub p_key: u16,
    /// Path packet payload MTU code.
    pub path_packet_payload_mtu: u8,
    /// Private data, hex.
    pub private_data: Hex<'a>,
    /// Remote CM response timeout.
    pub remote_cm_response_timeout: u8,
    /// Responder resources.
    pub responder_resources: u8,
    /// Retry count.
    pub retry_count: u8,
    /// RNR retry count.
    pub rnr_retry_count: u8,
    /// Service ID.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub service_id: u64,
    /// SRQ.
    pub srq: bool,
    /// Starting PSN.
    pub starting_psn: u32,
    /// Transport service type.
    pub transport_service_type: u8,
}

/// CM ConnectReply (IBA 12.6.8).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct CmRepView<'a> {
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// Failover accepted.
    pub failover_accepted: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Local CA GUID.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub local_ca_guid: u64,
    /// Local communication ID.
    pub local_comm_id: u32,
    /// Local Q_Key.
    pub local_q_key: u32,
    /// Local QPN.
    pub local_qpn: u32,
    /// `"REP"`.
    pub message: &'static str,
    /// Private data, hex.
    pub private_data: Hex<'a>,
    /// Remote communication ID.
    pub remote_comm_id: u32,
    /// Responder resources.
    pub responder_resources: u8,
    /// RNR retry count.
    pub rnr_retry_count: u8,
    /// SRQ.
    pub srq: bool,
    /// Starting PSN.
    pub starting_psn: u32,
    /// Target ACK delay.
    pub target_ack_delay: u8,
}

/// CM ConnectReject (IBA 12.6.7).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct CmRejView<'a> {
    /// Additional reject information, hex.
    pub ari: Hex<'a>,
    /// Local communication ID.
    pub local_comm_id: u32,
    /// `"REJ"`.
    pub message: &'static str,
    /// Which message was rejected.
    pub message_rejected: u8,
    /// Private data, hex.
    pub private_data: Hex<'a>,
    /// Reject reason code (IBA table 112).
    pub reason: u16,
    /// The reason's name.
    pub reason_name: &'static str,
    /// Remote communication ID.
    pub remote_comm_id: u32,
}

/// The other CM messages: each has `message` and the fields it defines.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct CmOtherView {
    /// APR: AP status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ar_status: Option<u8>,
    /// Unknown messages: the MAD attribute ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_id: Option<u16>,
    /// Local communication ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_comm_id: Option<u32>,
    /// `"MRA"`, `"RTU"`, `"DREQ"`, `"DREP"`, `"SIDR_REQ"`, `"SIDR_REP"`,
    /// `"LAP"`, `"APR"` or `"unknown"`.
    pub message: &'static str,
    /// MRA: which message is being acknowledged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_mraed: Option<u8>,
    /// SIDR_REQ: partition key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_key: Option<u16>,
    /// SIDR_REP: Q_Key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q_key: Option<u32>,
    /// SIDR_REP: QPN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qpn: Option<u32>,
    /// Remote communication ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_comm_id: Option<u32>,
    /// DREQ: remote QPN/EECN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_qpn_eecn: Option<u32>,
    /// SIDR: request ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<u32>,
    /// SIDR: service ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "Option<String>"))]
    pub service_id: Option<u64>,
    /// MRA: service timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_timeout: Option<u8>,
    /// SIDR_REP: status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u8>,
}

impl CmOtherView {
    const EMPTY: CmOtherView = CmOtherView {
        ar_status: None,
        attribute_id: None,
        local_comm_id: None,
        message: "unknown",
        message_mraed: None,
        p_key: None,
        q_key: None,
        qpn: None,
        remote_comm_id: None,
        remote_qpn_eecn: None,
        request_id: None,
        service_id: None,
        service_timeout: None,
        status: None,
    };
}

/// The RDMA-CM header in a REQ's private data.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct CmaView {
    /// CMA version.
    pub cma_version: u8,
    /// Destination address.
    pub dst_addr: IpAddr,
    /// IP version (4 or 6).
    pub ip_version: u8,
    /// Source address.
    pub src_addr: IpAddr,
    /// Source port.
    pub src_port: u16,
}

/// RFC 8797 private data: one shape for every version; what a version
/// this crate does not know leaves undefined is `null`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct CmPrivateView {
    /// Offset of the message in the consumer's private data.
    pub offset: usize,
    /// Receive size in bytes, decoded (RFC 8797 section 4.2).
    pub recv_size: Option<u32>,
    /// The R bit (RFC 8797 section 4.1).
    pub remote_invalidate: Option<bool>,
    /// Send size in bytes, decoded (RFC 8797 section 4.2).
    pub send_size: Option<u32>,
    /// The version octet.
    pub version: u8,
}

impl CmPrivateView {
    fn new(offset: usize, p: CmPrivateData) -> Self {
        match p {
            CmPrivateData::V1(v) => CmPrivateView {
                offset,
                recv_size: Some(v.recv_size),
                remote_invalidate: Some(v.remote_invalidate),
                send_size: Some(v.send_size),
                version: v.version,
            },
            CmPrivateData::UnknownVersion { version, .. } => CmPrivateView {
                offset,
                recv_size: None,
                remote_invalidate: None,
                send_size: None,
                version,
            },
            #[allow(unreachable_patterns)]
            _ => CmPrivateView {
                offset,
                recv_size: None,
                remote_invalidate: None,
                send_size: None,
                version: 0,
            },
        }
    }
}

// ---------------------------------------------------------------------------
// RPC-over-RDMA, ONC RPC, NFS.

/// RPC-over-RDMA version 1 header (RFC 8166 section 4).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct RpcRdmaView<'a> {
    /// RDMA_MSGP: `rdma_align`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub align: Option<u32>,
    /// Credits requested or granted.
    pub credits: u32,
    /// RDMA_ERROR: `"ERR_VERS"`, `"ERR_CHUNK"` or the unknown code's number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub err: Option<RdmaErrView>,
    /// Length of the transport header in bytes.
    pub header_len: usize,
    /// `true` for the obsolete RDMA_MSGP and RDMA_DONE (RFC 8166 section 4.6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub obsolete: Option<bool>,
    /// `"RDMA_MSG"`, `"RDMA_NOMSG"`, ... or `"unknown"`.
    pub proc: &'static str,
    /// Read list (MSG, NOMSG, MSGP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_list: Option<ReadListView<'a>>,
    /// Reply chunk (MSG, NOMSG, MSGP): `null` when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_chunk: Option<Option<SegmentsView<'a>>>,
    /// RDMA_MSGP: `rdma_thresh`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thresh: Option<u32>,
    /// Version (1).
    pub vers: u32,
    /// ERR_VERS: highest version supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vers_high: Option<u32>,
    /// ERR_VERS: lowest version supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vers_low: Option<u32>,
    /// Write list (MSG, NOMSG, MSGP): one list of segments per chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_list: Option<WriteListView<'a>>,
    /// Transaction ID.
    pub xid: u32,
}

impl<'a> RpcRdmaView<'a> {
    fn new(h: &RpcRdmaHeader<'a>) -> Self {
        let chunks = h.chunks();
        let mut v = RpcRdmaView {
            align: None,
            credits: h.credits,
            err: None,
            header_len: h.header_len(),
            obsolete: None,
            proc: h.proc.name().unwrap_or("unknown"),
            read_list: chunks.map(ReadListView),
            reply_chunk: chunks.map(|c| c.reply_chunk().map(SegmentsView)),
            thresh: None,
            vers: h.vers,
            vers_high: None,
            vers_low: None,
            write_list: chunks.map(WriteListView),
            xid: h.xid.0,
        };
        match h.body {
            Body::Msgp { align, thresh, .. } => {
                v.align = Some(align);
                v.thresh = Some(thresh);
                v.obsolete = Some(true);
            }
            Body::Done => v.obsolete = Some(true),
            Body::Error(e) => match e {
                RdmaError::Vers { low, high } => {
                    v.err = Some(RdmaErrView::Name("ERR_VERS"));
                    v.vers_low = Some(low);
                    v.vers_high = Some(high);
                }
                RdmaError::Chunk => v.err = Some(RdmaErrView::Name("ERR_CHUNK")),
                RdmaError::Unknown(c) => v.err = Some(RdmaErrView::Code(c)),
                #[allow(unreachable_patterns)]
                _ => {}
            },
            _ => {}
        }
        v
    }
}

/// An RDMA_ERROR code: its RFC 8166 name, or the number of one it does not name.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
#[serde(untagged)]
pub enum RdmaErrView {
    /// `"ERR_VERS"` or `"ERR_CHUNK"`.
    Name(&'static str),
    /// Another code.
    Code(u32),
}

/// The read list: `{position, handle, length, offset}` per segment.
#[derive(Debug, Clone, Copy)]
pub struct ReadListView<'a>(pub Chunks<'a>);

impl Serialize for ReadListView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.read_list().map(|r| ReadSegmentView {
            handle: r.segment.handle,
            length: r.segment.length,
            offset: r.segment.offset,
            position: r.position,
        }))
    }
}

/// One read segment (RFC 8166 section 4.3.1).
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct ReadSegmentView {
    /// R_Key.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub handle: u32,
    /// Length in bytes.
    pub length: u32,
    /// Remote offset (address).
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub offset: u64,
    /// XDR position in the Payload stream.
    pub position: u32,
}

/// The write list: one list of segments per write chunk.
#[derive(Debug, Clone, Copy)]
pub struct WriteListView<'a>(pub Chunks<'a>);

impl Serialize for WriteListView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.write_list().map(SegmentsView))
    }
}

/// The segments of one write chunk or of the reply chunk.
#[derive(Debug, Clone, Copy)]
pub struct SegmentsView<'a>(pub WriteChunk<'a>);

impl Serialize for SegmentsView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.segments().map(|g| SegmentView {
            handle: g.handle,
            length: g.length,
            offset: g.offset,
        }))
    }
}

/// One RDMA segment (RFC 8166 section 4.1.2 `xdr_rdma_segment`).
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct SegmentView {
    /// R_Key.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub handle: u32,
    /// Length in bytes.
    pub length: u32,
    /// Remote offset (address).
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub offset: u64,
}

/// An ONC RPC call or reply (RFC 5531). Which keys appear depends on
/// `msg_type`, `reply_stat` and `reject_stat`, as RFC 5531's unions do.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct RpcView<'a> {
    /// Accepted reply: the status's snake_case RFC 5531 name
    /// (`"success"`, `"prog_mismatch"`, ..., `"unknown"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_stat: Option<&'static str>,
    /// Accepted reply: the status's number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_stat_code: Option<u32>,
    /// AUTH_ERROR: the snake_case RFC 5531 name (`"auth_badcred"`, ...,
    /// `"unknown"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_stat: Option<&'static str>,
    /// AUTH_ERROR: the status's number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_stat_code: Option<u32>,
    /// Call with AUTH_SYS credentials: their contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_sys: Option<AuthSysView<'a>>,
    /// Call: credential flavor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cred_flavor: Option<u32>,
    /// Call: credential body length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cred_len: Option<usize>,
    /// PROG_MISMATCH or RPC_MISMATCH: highest version supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch_high: Option<u32>,
    /// PROG_MISMATCH or RPC_MISMATCH: lowest version supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch_low: Option<u32>,
    /// `"call"` or `"reply"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg_type: Option<&'static str>,
    /// Call: procedure number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub procedure: Option<u32>,
    /// Call: program number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<u32>,
    /// Denied reply: `"rpc_mismatch"` or `"auth_error"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reject_stat: Option<&'static str>,
    /// Reply: `"accepted"` or `"denied"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_stat: Option<&'static str>,
    /// Call: RPC version (2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpcvers: Option<u32>,
    /// Call: verifier flavor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verf_flavor: Option<u32>,
    /// Call: verifier body length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verf_len: Option<usize>,
    /// Call: program version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Transaction ID.
    pub xid: u32,
}

impl<'a> RpcView<'a> {
    const EMPTY: RpcView<'static> = RpcView {
        accept_stat: None,
        accept_stat_code: None,
        auth_stat: None,
        auth_stat_code: None,
        auth_sys: None,
        cred_flavor: None,
        cred_len: None,
        mismatch_high: None,
        mismatch_low: None,
        msg_type: None,
        procedure: None,
        program: None,
        reject_stat: None,
        reply_stat: None,
        rpcvers: None,
        verf_flavor: None,
        verf_len: None,
        version: None,
        xid: 0,
    };

    fn new(xid: u32, body: &MsgBody<'a>) -> Self {
        let mut v = RpcView { xid, ..Self::EMPTY };
        match body {
            MsgBody::Call(c) => {
                v.msg_type = Some("call");
                v.rpcvers = Some(c.rpcvers);
                v.program = Some(c.prog);
                v.version = Some(c.vers);
                v.procedure = Some(c.proc);
                v.cred_flavor = Some(c.cred.flavor.into());
                v.cred_len = Some(c.cred.body.len());
                v.verf_flavor = Some(c.verf.flavor.into());
                v.verf_len = Some(c.verf.body.len());
                v.auth_sys = c.auth_sys().map(AuthSysView);
            }
            MsgBody::Reply(rb) => {
                v.msg_type = Some("reply");
                match rb {
                    ReplyBody::Accepted { stat, .. } => {
                        v.reply_stat = Some("accepted");
                        let code = stat.code();
                        v.accept_stat = Some(accept_stat_name(code));
                        v.accept_stat_code = Some(code.into());
                        if let AcceptStat::ProgMismatch { low, high } = stat {
                            v.mismatch_low = Some(*low);
                            v.mismatch_high = Some(*high);
                        }
                    }
                    ReplyBody::Denied(rej) => {
                        v.reply_stat = Some("denied");
                        match rej {
                            RejectedReply::RpcMismatch { low, high } => {
                                v.reject_stat = Some("rpc_mismatch");
                                v.mismatch_low = Some(*low);
                                v.mismatch_high = Some(*high);
                            }
                            RejectedReply::AuthError(a) => {
                                v.reject_stat = Some("auth_error");
                                v.auth_stat = Some(auth_stat_name(*a));
                                v.auth_stat_code = Some((*a).into());
                            }
                            #[allow(unreachable_patterns)]
                            _ => {}
                        }
                    }
                    #[allow(unreachable_patterns)]
                    _ => {}
                }
            }
            #[allow(unreachable_patterns)]
            _ => {}
        }
        v
    }
}

/// RFC 5531 `accept_stat` names, in snake_case.
fn accept_stat_name(c: AcceptStatCode) -> &'static str {
    match c {
        AcceptStatCode::Success => "success",
        AcceptStatCode::ProgUnavail => "prog_unavail",
        AcceptStatCode::ProgMismatch => "prog_mismatch",
        AcceptStatCode::ProcUnavail => "proc_unavail",
        AcceptStatCode::GarbageArgs => "garbage_args",
        AcceptStatCode::SystemErr => "system_err",
        _ => "unknown",
    }
}

/// RFC 5531 and RFC 2203 `auth_stat` names, in snake_case.
fn auth_stat_name(a: AuthStat) -> &'static str {
    match a {
        AuthStat::Ok => "auth_ok",
        AuthStat::BadCred => "auth_badcred",
        AuthStat::RejectedCred => "auth_rejectedcred",
        AuthStat::BadVerf => "auth_badverf",
        AuthStat::RejectedVerf => "auth_rejectedverf",
        AuthStat::TooWeak => "auth_tooweak",
        AuthStat::InvalidResp => "auth_invalidresp",
        AuthStat::Failed => "auth_failed",
        AuthStat::KerbGeneric => "auth_kerb_generic",
        AuthStat::TimeExpire => "auth_timeexpire",
        AuthStat::TktFile => "auth_tkt_file",
        AuthStat::Decode => "auth_decode",
        AuthStat::NetAddr => "auth_net_addr",
        AuthStat::RpcsecGssCredProblem => "rpcsec_gss_credproblem",
        AuthStat::RpcsecGssCtxProblem => "rpcsec_gss_ctxproblem",
        _ => "unknown",
    }
}

/// AUTH_SYS credentials (RFC 5531 appendix A).
#[derive(Debug, Clone, Copy)]
pub struct AuthSysView<'a>(pub AuthSys<'a>);

impl Serialize for AuthSysView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        AuthSysFields {
            gid: self.0.gid,
            gids: Gids(self.0),
            machinename: Lossy(self.0.machinename),
            stamp: self.0.stamp,
            uid: self.0.uid,
        }
        .serialize(s)
    }
}

/// The keys of [`AuthSysView`].
#[derive(serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
struct AuthSysFields<'a> {
    /// Group ID.
    gid: u32,
    /// Supplementary group IDs.
    gids: Gids<'a>,
    /// Machine name.
    machinename: Lossy<'a>,
    /// Stamp.
    stamp: u32,
    /// User ID.
    uid: u32,
}

#[cfg(feature = "schemars")]
impl JsonSchema for AuthSysView<'_> {
    fn schema_name() -> alloc::borrow::Cow<'static, str> {
        "AuthSys".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        AuthSysFields::json_schema(g)
    }
}

#[cfg(feature = "schemars")]
extern crate alloc;

/// The supplementary group IDs of AUTH_SYS credentials.
#[derive(Debug, Clone, Copy)]
pub struct Gids<'a>(pub AuthSys<'a>);

impl Serialize for Gids<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.gids())
    }
}

/// NFS (or MOUNT, NLM, ...) call summary.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct NfsView {
    /// `numops` of a COMPOUND as sent (0 for other procedures).
    pub op_count: u32,
    /// The first op names of a COMPOUND (`"?"` for an unknown op).
    pub ops: OpNames,
    /// Whether every op was walked and listed.
    pub ops_complete: bool,
    /// Procedure name, `null` if unknown.
    pub procedure: Option<&'static str>,
    /// Program name, `null` if unknown.
    pub program: Option<&'static str>,
}

impl NfsView {
    fn new(n: CallSummary) -> Self {
        NfsView {
            op_count: n.op_count,
            ops: OpNames(n),
            ops_complete: n.ops_complete,
            procedure: n.procedure,
            program: n.program,
        }
    }
}

/// The op names of a COMPOUND call summary.
#[derive(Debug, Clone, Copy)]
pub struct OpNames(pub CallSummary);

impl Serialize for OpNames {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.0
                .ops()
                .iter()
                .map(|&o| self.0.op_name(o).unwrap_or("?")),
        )
    }
}

/// Where and why dissection stopped.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct ErrorView {
    /// The layer's name.
    pub layer: &'static str,
    /// The error's message (as its `Display`).
    pub message: Text<crate::Error>,
    /// Offset from the start of the frame.
    pub offset: usize,
}

use crate::iwarp::frame::MpaCrc;

/// The iWARP a TCP segment starts with ([`crate::iwarp::frame`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct IwarpView<'a> {
    /// `"setup"` (an MPA Request/Reply), `"fpdus"` (the payload starts at
    /// an FPDU boundary) or `"continuation"` (it continues an FPDU from an
    /// earlier segment; read it in stream order with the engine).
    pub kind: &'static str,
    /// Whether MPA CRCs were negotiated: `"on"`/`"off"` as configured
    /// (`frames --mpa-crc`), or `"unknown"` (a CRC that matches is then
    /// `"valid"`, a zero one `"none"`). Markers are not read per frame: a
    /// stream with markers shows as continuations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crc_mode: Option<&'static str>,
    /// The FPDUs, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(with = "Option<Vec<FpduView<'a>>>"))]
    pub fpdus: Option<FpduListView<'a>>,
    /// The MPA Request or Reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mpa: Option<MpaView>,
}

impl<'a> IwarpView<'a> {
    /// The view of a segment's iWARP layer.
    pub fn new(layer: &crate::iwarp::frame::IwarpLayer<'a>) -> Self {
        use crate::iwarp::frame::IwarpLayer;
        match layer {
            IwarpLayer::Setup(m) => IwarpView {
                kind: "setup",
                crc_mode: None,
                fpdus: None,
                mpa: m.frame().map(|m| MpaView::new(&m)),
            },
            IwarpLayer::Fpdus(f) => IwarpView {
                kind: "fpdus",
                crc_mode: Some(match f.crc() {
                    MpaCrc::On => "on",
                    MpaCrc::Off => "off",
                    _ => "unknown",
                }),
                fpdus: Some(FpduListView(*f)),
                mpa: None,
            },
            _ => IwarpView {
                kind: "continuation",
                crc_mode: None,
                fpdus: None,
                mpa: None,
            },
        }
    }
}

/// An MPA Request or Reply (RFC 5044 section 7.1, RFC 6581).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct MpaView {
    /// C: CRCs wanted.
    pub crc: bool,
    /// Enhanced data (revision 2): inbound RDMA Read queue depth.
    pub ird: Option<u16>,
    /// `"MPA Request"` or `"MPA Reply"`.
    pub kind: &'static str,
    /// M: markers wanted.
    pub markers: bool,
    /// Enhanced data (revision 2): outbound RDMA Read queue depth.
    pub ord: Option<u16>,
    /// PD_Length: private data octets, enhanced data included.
    pub pd_length: u16,
    /// R: the connection is rejected.
    pub reject: bool,
    /// The five reserved bits.
    pub res: u8,
    /// Rev.
    pub rev: u8,
    /// The RFC 8797 RPC-over-RDMA private data, if the ULP's carries one.
    pub rpcrdma_cm_private: Option<CmPrivateView>,
}

impl MpaView {
    fn new(m: &crate::iwarp::mpa::RequestReply<'_>) -> Self {
        MpaView {
            crc: m.crc,
            ird: m.enhanced.map(|e| e.ird),
            kind: m.kind.name(),
            markers: m.markers,
            ord: m.enhanced.map(|e| e.ord),
            pd_length: m.pd_length,
            reject: m.reject,
            res: m.reserved,
            rev: m.revision,
            rpcrdma_cm_private: m.rpcrdma().map(|(o, p)| CmPrivateView::new(o, p)),
        }
    }
}

/// A segment's FPDUs, serialized as a list without collecting them.
#[derive(Debug, Clone, Copy)]
pub struct FpduListView<'a>(crate::iwarp::frame::Fpdus<'a>);

impl<'a> FpduListView<'a> {
    /// Each FPDU's view, in order (a failed one as its error), read on
    /// demand as serializing does: for a caller that writes them otherwise.
    pub fn iter(&self) -> impl Iterator<Item = FpduView<'a>> + 'a {
        let fpdus = self.0;
        fpdus.iter().map(move |r| match r {
            Ok(f) => FpduView::new(&f, &fpdus),
            Err(e) => FpduView::error(e),
        })
    }
}

impl Serialize for FpduListView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// One FPDU: framing, DDP and RDMAP, and for one that starts a Send, the
/// RPC-over-RDMA, RPC and NFS in it (a segment can carry several Sends; the
/// frame's own `rpcrdma`, `rpc` and `nfs` are the first one's).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct FpduView<'a> {
    /// `"valid"`, `"invalid"` or `"none"` (CRCs not in use: not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crc: Option<&'static str>,
    /// The CRC field as sent (zero when CRCs are not in use).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "Option<String>"))]
    pub crc_value: Option<u32>,
    /// DDP header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ddp: Option<DdpView>,
    /// Why the FPDU (or its DDP/RDMAP) did not parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorView>,
    /// NFS (or MOUNT, NLM, ...) call summary of the Send this FPDU starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nfs: Option<NfsView>,
    /// Offset of the FPDU in the frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// RDMAP header and fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdmap: Option<RdmapView>,
    /// The ONC RPC message of the Send this FPDU starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc: Option<RpcView<'a>>,
    /// The RPC-over-RDMA header of the Send this FPDU starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpcrdma: Option<RpcRdmaView<'a>>,
    /// Where and why the decode of the Send's RPC-over-RDMA, RPC or NFS
    /// stopped (the FPDU itself parsed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_error: Option<ErrorView>,
    /// ULPDU_Length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ulpdu_length: Option<u16>,
}

impl<'a> FpduView<'a> {
    fn error(e: crate::error::Error) -> Self {
        FpduView {
            crc: None,
            crc_value: None,
            ddp: None,
            error: Some(error_view(e)),
            nfs: None,
            offset: None,
            rdmap: None,
            rpc: None,
            rpcrdma: None,
            send_error: None,
            ulpdu_length: None,
        }
    }

    fn new(f: &crate::iwarp::frame::IwarpFpdu<'a>, fpdus: &crate::iwarp::frame::Fpdus<'a>) -> Self {
        use crate::iwarp::mpa::CrcStatus;
        let crc = match f.crc {
            CrcStatus::NotNegotiated => "none",
            CrcStatus::Valid => "valid",
            CrcStatus::Invalid { .. } => "invalid",
        };
        let (ddp, rdmap, error) = match &f.segment {
            Ok(s) => (Some(DdpView::new(&s.ddp)), Some(RdmapView::new(s)), None),
            Err(e) => (None, None, Some(error_view(*e))),
        };
        let send = crate::stack::iwarp_send_rpcrdma(f, fpdus);
        let layers = send.as_ref().map(|(l, _)| l);
        FpduView {
            crc: Some(crc),
            crc_value: Some(f.crc_field),
            ddp,
            error,
            nfs: layers.and_then(|l| l.nfs).map(NfsView::new),
            offset: Some(f.offset),
            rdmap,
            rpc: layers.and_then(|l| l.rpc.as_ref().map(|r| RpcView::new(r.xid, &r.body))),
            rpcrdma: layers.and_then(|l| l.header.as_ref().map(RpcRdmaView::new)),
            send_error: send.and_then(|(_, e)| e).map(error_view),
            ulpdu_length: Some(f.fpdu.ulpdu_length),
        }
    }
}

/// A DDP header (RFC 5041 section 4).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct DdpView {
    /// DV.
    pub dv: u8,
    /// L: last segment of its message.
    pub last: bool,
    /// MO (untagged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mo: Option<u32>,
    /// MSN (untagged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msn: Option<u32>,
    /// QN (untagged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qn: Option<u32>,
    /// The four reserved bits.
    pub rsvd: u8,
    /// The four RsvdULP octets after RDMAP's control octet (untagged).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "Option<String>"))]
    pub rsvd_ulp: Option<u32>,
    /// STag (tagged).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "Option<String>"))]
    pub stag: Option<u32>,
    /// T: tagged.
    pub tagged: bool,
    /// Tagged Offset (tagged).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "Option<String>"))]
    pub to: Option<u64>,
}

impl DdpView {
    fn new(h: &crate::iwarp::ddp::DdpHeader) -> Self {
        use crate::iwarp::ddp::Placement;
        let (stag, to, rsvd_ulp, qn, msn, mo) = match h.placement {
            Placement::Tagged { stag, to } => (Some(stag), Some(to), None, None, None, None),
            Placement::Untagged {
                rsvd_ulp,
                qn,
                msn,
                mo,
            } => (None, None, Some(rsvd_ulp), Some(qn), Some(msn), Some(mo)),
        };
        DdpView {
            dv: h.version,
            last: h.last,
            mo,
            msn,
            qn,
            rsvd: h.reserved,
            rsvd_ulp,
            stag,
            tagged: h.tagged(),
            to,
        }
    }
}

/// The RDMAP header and its opcode's fields (RFC 5040 section 4).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct RdmapView {
    /// The STag a Send with Invalidate invalidates.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "Option<String>"))]
    pub inval_stag: Option<u32>,
    /// Opcode number.
    pub opcode: u8,
    /// Opcode name.
    pub opcode_name: &'static str,
    /// A Read Request's fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_request: Option<ReadRequestView>,
    /// The two reserved bits of the control octet.
    pub rsv: u8,
    /// A Terminate's fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminate: Option<TerminateView>,
    /// RV.
    pub version: u8,
}

impl RdmapView {
    fn new(s: &crate::iwarp::rdmap::Segment<'_>) -> Self {
        use crate::iwarp::rdmap::Body;
        let (read_request, terminate) = match s.body {
            Body::ReadRequest(r) => (
                Some(ReadRequestView {
                    rdmardsz: r.size,
                    sink_stag: r.sink_stag,
                    sink_to: r.sink_to,
                    src_stag: r.source_stag,
                    src_to: r.source_to,
                }),
                None,
            ),
            Body::Terminate(t) => (
                None,
                Some(TerminateView {
                    code: t.code,
                    error_name: t.error_name(),
                    etype: t.etype,
                    layer: match t.layer {
                        crate::iwarp::rdmap::TermLayer::Rdmap => 0,
                        crate::iwarp::rdmap::TermLayer::Ddp => 1,
                        crate::iwarp::rdmap::TermLayer::Llp => 2,
                        crate::iwarp::rdmap::TermLayer::Other(v) => v,
                    },
                    layer_name: t.layer.name(),
                }),
            ),
            Body::Data(_) => (None, None),
        };
        RdmapView {
            inval_stag: s.invalidate_stag,
            opcode: s.ddp.ulp_control & 0x0f,
            opcode_name: s.opcode.name(),
            read_request,
            rsv: (s.ddp.ulp_control >> 4) & 0x03,
            terminate,
            version: s.version,
        }
    }
}

/// An RDMA Read Request's fields (RFC 5040 section 4.4).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct ReadRequestView {
    /// RDMA Read Message Size.
    pub rdmardsz: u32,
    /// Data Sink STag.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub sink_stag: u32,
    /// Data Sink Tagged Offset.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub sink_to: u64,
    /// Data Source STag.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub src_stag: u32,
    /// Data Source Tagged Offset.
    #[serde(serialize_with = "exact::hex")]
    #[cfg_attr(feature = "schemars", schemars(with = "String"))]
    pub src_to: u64,
}

/// A Terminate's fields (RFC 5040 section 4.8).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(JsonSchema))]
pub struct TerminateView {
    /// Error Code.
    pub code: u8,
    /// The error's name, or null when the RFCs do not name the combination.
    pub error_name: Option<&'static str>,
    /// EType.
    pub etype: u8,
    /// Layer number (0 RDMAP, 1 DDP, 2 LLP).
    pub layer: u8,
    /// Layer name.
    pub layer_name: &'static str,
}

fn error_view(e: crate::Error) -> ErrorView {
    ErrorView {
        layer: e.layer().name(),
        message: Text(e),
        offset: e.offset(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::aeth::NakCode;
    use crate::oncrpc::RpcMsg;

    fn json<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn aeth_kinds_are_words_not_debug_text() {
        let ack = AethView::new(0x1f, 1, AckKind::Ack { credit_count: 31 });
        assert_eq!(
            json(&ack),
            r#"{"credit_count":31,"kind":"ack","msn":1,"syndrome":31}"#
        );
        let rnr = AethView::new(0x2e, 7, AckKind::RnrNak { timer: 14 });
        assert_eq!(
            json(&rnr),
            r#"{"kind":"rnr_nak","msn":7,"syndrome":46,"timer":14}"#
        );
        let nak = AethView::new(0x60, 9, AckKind::Nak(NakCode::PsnSequenceError));
        assert_eq!(
            json(&nak),
            r#"{"kind":"nak","msn":9,"nak_code":0,"nak_name":"PSN Sequence Error","syndrome":96}"#
        );
        let res = AethView::new(0x40, 0, AckKind::Reserved(0x40));
        assert_eq!(json(&res), r#"{"kind":"reserved","msn":0,"syndrome":64}"#);
    }

    #[test]
    fn private_data_has_one_shape() {
        // RFC 8797 section 4: identifier, version, flags, send and receive sizes.
        let v1 = CmPrivateData::parse(&[0xf6, 0xab, 0x0e, 0x18, 1, 1, 0, 3])
            .unwrap()
            .0;
        assert_eq!(
            json(&CmPrivateView::new(36, v1)),
            r#"{"offset":36,"recv_size":4096,"remote_invalidate":true,"send_size":1024,"version":1}"#
        );
        let v7 = CmPrivateData::parse(&[0xf6, 0xab, 0x0e, 0x18, 7, 1, 0, 3])
            .unwrap()
            .0;
        assert_eq!(
            json(&CmPrivateView::new(36, v7)),
            r#"{"offset":36,"recv_size":null,"remote_invalidate":null,"send_size":null,"version":7}"#
        );
    }

    #[test]
    fn rpc_statuses_are_snake_case_names_with_their_numbers() {
        // xid 5, REPLY, MSG_DENIED, AUTH_ERROR, AUTH_TOOWEAK (RFC 5531 section 9).
        let words = [5u32, 1, 1, 1, 5];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        let (m, _) = RpcMsg::parse(&bytes).unwrap();
        assert_eq!(
            json(&RpcView::new(m.xid, &m.body)),
            r#"{"auth_stat":"auth_tooweak","auth_stat_code":5,"msg_type":"reply","reject_stat":"auth_error","reply_stat":"denied","xid":5}"#
        );
        // xid 6, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, PROG_MISMATCH 2..4.
        let words = [6u32, 1, 0, 0, 0, 2, 2, 4];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        let (m, _) = RpcMsg::parse(&bytes).unwrap();
        assert_eq!(
            json(&RpcView::new(m.xid, &m.body)),
            r#"{"accept_stat":"prog_mismatch","accept_stat_code":2,"mismatch_high":4,"mismatch_low":2,"msg_type":"reply","reply_stat":"accepted","xid":6}"#
        );
    }

    #[test]
    fn hex_lossy_and_mac_write_without_allocating_their_own_strings() {
        assert_eq!(json(&Hex(&[0x00, 0xab, 0x0f])), r#""00ab0f""#);
        assert_eq!(json(&Lossy(b"syn\xffth")), "\"syn\u{fffd}th\"");
        assert_eq!(
            json(&Mac([0x52, 0x54, 0, 0x99, 0, 1])),
            r#""52:54:00:99:00:01""#
        );
    }

    #[test]
    fn a_frame_has_schema_version_and_nanoseconds_as_a_string() {
        let d = crate::stack::dissect(
            crate::link::LinkType::ETHERNET,
            &[0; 5],
            &crate::stack::Config::default(),
        );
        let s = json(&FrameView::new(3, 1_795_217_646_495_692_123, 5, &d));
        assert!(s.starts_with(r#"{"error":{"layer":"#), "{s}");
        assert!(
            s.ends_with(r#""frame":3,"len":5,"schema_version":2,"ts_ns":"1795217646495692123"}"#),
            "{s}"
        );
    }
}
