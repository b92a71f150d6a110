//! Communication Management messages (IBA 12.6): the MAD class 0x07 that
//! sets up and tears down RC, UC and RD connections (REQ, REP, RTU, REJ, MRA,
//! DREQ, DREP, LAP, APR) and resolves UD service IDs (SIDR_REQ, SIDR_REP).
//!
//! Each message fills the 232-byte MAD data; its fixed fields come first and
//! the rest is consumer private data of a fixed size (IBA 12.6.5-12.6.13,
//! tables 99-120; Linux `IB_CM_*_PRIVATE_DATA_SIZE`):
//!
//! ```text
//! message   attr   fixed  private data      message   attr   fixed  private data
//! REQ      0x0010   140    92               DREQ     0x0015    12   220
//! MRA      0x0011    10   222               DREP     0x0016     8   224
//! REJ      0x0012    84   148               SIDR_REQ 0x0017    16   216
//! REP      0x0013    36   196               SIDR_REP 0x0018    96   136
//! RTU      0x0014     8   224               LAP      0x0019    64   168
//!                                           APR      0x001A    84   148
//!
//! REQ (offsets in the MAD data)
//!  0 LocalCommID   4 resv   8 ServiceID   16 LocalCAGUID   24 resv   28 LocalQKey
//! 32 LocalQPN(24) RespRes(8)   36 LocalEECN(24) InitDepth(8)
//! 40 RemoteEECN(24) RemoteCMRespTO(5) TransportSvcType(2) E2EFlowCtl(1)
//! 44 StartingPSN(24) LocalCMRespTO(5) RetryCount(3)
//! 48 P_Key(16) PathMTU(4) RDCExists(1) RNRRetry(3) MaxCMRetries(4) SRQ(1) ExtTransport(3)
//! 52 primary path (44)   96 alternate path (44), 139 bit 2: SAP supported
//! 140 private data (92)
//!
//! path: +0 LocalLID +2 RemoteLID +4 LocalGID +20 RemoteGID
//!       +36 FlowLabel(20) resv(6) PacketRate(6) +40 TClass +41 HopLimit
//!       +42 SL(4) SubnetLocal(1) resv(3) +43 LocalACKTimeout(5) resv(3)
//! ```

use core::fmt;

use super::mad::{self, Mad};
use super::{PKey, Psn, Qpn};

use crate::bytes::{put, put_u16, put_u32, put_u64, u32_at};
use crate::parse::{self, array, be_u16, be_u24, be_u32, be_u64, be_u8, take, PResult};
use crate::{Error, Layer, Result};

/// Length of the CM message: the whole MAD data.
pub const MESSAGE_LEN: usize = mad::DATA_LEN;

/// Private data sizes (IBA 12.6; Linux `IB_CM_*_PRIVATE_DATA_SIZE`).
pub mod private_data_size {
    /// REQ: 92 bytes.
    pub const REQ: usize = 92;
    /// MRA: 222 bytes.
    pub const MRA: usize = 222;
    /// REJ: 148 bytes.
    pub const REJ: usize = 148;
    /// REP: 196 bytes.
    pub const REP: usize = 196;
    /// RTU: 224 bytes.
    pub const RTU: usize = 224;
    /// DREQ: 220 bytes.
    pub const DREQ: usize = 220;
    /// DREP: 224 bytes.
    pub const DREP: usize = 224;
    /// SIDR_REQ: 216 bytes.
    pub const SIDR_REQ: usize = 216;
    /// SIDR_REP: 136 bytes.
    pub const SIDR_REP: usize = 136;
    /// LAP: 168 bytes.
    pub const LAP: usize = 168;
    /// APR: 148 bytes.
    pub const APR: usize = 148;
}

/// CM attribute IDs (IBA 12.6, table 98).
pub mod attr {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// ConnectRequest.
    pub const REQ: u16 = 0x0010;
    /// MsgRcptAck.
    pub const MRA: u16 = 0x0011;
    /// ConnectReject.
    pub const REJ: u16 = 0x0012;
    /// ConnectReply.
    pub const REP: u16 = 0x0013;
    /// ReadyToUse.
    pub const RTU: u16 = 0x0014;
    /// DisconnectRequest.
    pub const DREQ: u16 = 0x0015;
    /// DisconnectReply.
    pub const DREP: u16 = 0x0016;
    /// ServiceIDResReq.
    pub const SIDR_REQ: u16 = 0x0017;
    /// ServiceIDResReqResp.
    pub const SIDR_REP: u16 = 0x0018;
    /// LoadAlternatePath.
    pub const LAP: u16 = 0x0019;
    /// AlternatePathResponse.
    pub const APR: u16 = 0x001a;
}

/// A 64-bit service ID (IBA 12.7.3; annex A11 for the RDMA IP CM service
/// IDs, see [`ServiceId::rdma_cm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ServiceId(pub u64);

impl fmt::Display for ServiceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// A CM reject reason (IBA 12.6.7.2, table 112). Open: unknown values are data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RejReason(pub u16);

impl RejReason {
    /// 1: no QP available.
    pub const NO_QP: RejReason = RejReason(1);
    /// 2: no EE context available.
    pub const NO_EEC: RejReason = RejReason(2);
    /// 3: no resources available.
    pub const NO_RESOURCES: RejReason = RejReason(3);
    /// 4: timeout.
    pub const TIMEOUT: RejReason = RejReason(4);
    /// 5: unsupported request.
    pub const UNSUPPORTED_REQUEST: RejReason = RejReason(5);
    /// 6: invalid communication ID.
    pub const INVALID_COMM_ID: RejReason = RejReason(6);
    /// 7: invalid communication instance.
    pub const INVALID_COMM_INSTANCE: RejReason = RejReason(7);
    /// 8: invalid service ID (no listener).
    pub const INVALID_SERVICE_ID: RejReason = RejReason(8);
    /// 9: invalid transport service type.
    pub const INVALID_TRANSPORT_TYPE: RejReason = RejReason(9);
    /// 10: stale connection.
    pub const STALE_CONN: RejReason = RejReason(10);
    /// 26: invalid path MTU.
    pub const INVALID_MTU: RejReason = RejReason(26);
    /// 27: insufficient responder resources.
    pub const INSUFFICIENT_RESP_RESOURCES: RejReason = RejReason(27);
    /// 28: consumer reject: the application said no (RDMA-CM `rdma_reject`).
    pub const CONSUMER_DEFINED: RejReason = RejReason(28);
    /// 29: invalid RNR NAK retry count.
    pub const INVALID_RNR_RETRY: RejReason = RejReason(29);
    /// 30: duplicate local communication ID.
    pub const DUPLICATE_LOCAL_COMM_ID: RejReason = RejReason(30);
    /// 31: unsupported class version.
    pub const INVALID_CLASS_VERSION: RejReason = RejReason(31);
    /// 35: vendor option not supported (ECE).
    pub const VENDOR_OPTION_NOT_SUPPORTED: RejReason = RejReason(35);

    /// The reason's name (IBA table 112); "Unknown" if undefined.
    pub const fn name(self) -> &'static str {
        match self.0 {
            1 => "No QP available",
            2 => "No EE context available",
            3 => "No resources available",
            4 => "Timeout",
            5 => "Unsupported request",
            6 => "Invalid communication ID",
            7 => "Invalid communication instance",
            8 => "Invalid service ID",
            9 => "Invalid transport service type",
            10 => "Stale connection",
            11 => "RDC does not exist",
            12 => "Primary remote port GID rejected",
            13 => "Primary remote port LID rejected",
            14 => "Invalid primary SL",
            15 => "Invalid primary traffic class",
            16 => "Invalid primary hop limit",
            17 => "Invalid primary packet rate",
            18 => "Alternate remote port GID rejected",
            19 => "Alternate remote port LID rejected",
            20 => "Invalid alternate SL",
            21 => "Invalid alternate traffic class",
            22 => "Invalid alternate hop limit",
            23 => "Invalid alternate packet rate",
            24 => "Port and CM redirection",
            25 => "Port redirection not supported",
            26 => "Invalid path MTU",
            27 => "Insufficient responder resources",
            28 => "Consumer reject",
            29 => "Invalid RNR NAK retry count",
            30 => "Duplicate local communication ID",
            31 => "Unsupported class version",
            32 => "Invalid primary flow label",
            33 => "Invalid alternate flow label",
            35 => "Vendor option not supported",
            _ => "Unknown",
        }
    }
}

impl From<u16> for RejReason {
    fn from(v: u16) -> Self {
        RejReason(v)
    }
}

impl From<RejReason> for u16 {
    fn from(v: RejReason) -> Self {
        v.0
    }
}

impl fmt::Display for RejReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// The path MTU a 4-bit IBA MTU code stands for (IBA 9.6.2 and 12.6.5:
/// 1 = 256 … 5 = 4096 bytes), or `None` for other codes.
pub const fn mtu_bytes(code: u8) -> Option<u32> {
    match code {
        1..=5 => Some(128 << code),
        _ => None,
    }
}

/// A path in a REQ (primary and alternate) or a LAP (alternate)
/// (IBA 12.6.5, table 99; 12.6.12, table 115).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CmPath {
    /// Local Port LID (0xFFFF, permissive, on RoCE).
    pub local_port_lid: u16,
    /// Remote Port LID.
    pub remote_port_lid: u16,
    /// Local Port GID (on RoCE the IPv6 or IPv4-mapped address).
    pub local_port_gid: [u8; 16],
    /// Remote Port GID.
    pub remote_port_gid: [u8; 16],
    /// Flow Label, 20 bits.
    pub flow_label: u32,
    /// Packet Rate, 6 bits (IBA 9.6.2 rate code).
    pub packet_rate: u8,
    /// Traffic Class.
    pub traffic_class: u8,
    /// Hop Limit.
    pub hop_limit: u8,
    /// SL, service level, 4 bits.
    pub sl: u8,
    /// Subnet Local: the remote port is in the local subnet.
    pub subnet_local: bool,
    /// Local ACK Timeout, 5 bits: 4.096 µs × 2^value.
    pub local_ack_timeout: u8,
}

/// Where the fields of a path sit: REQ and LAP order them differently.
struct PathLayout {
    rate: usize,
    traffic_class: usize,
    hop_limit: usize,
}

const REQ_PATH: PathLayout = PathLayout {
    rate: 39,
    traffic_class: 40,
    hop_limit: 41,
};
const LAP_PATH: PathLayout = PathLayout {
    traffic_class: 39,
    hop_limit: 40,
    rate: 41,
};

impl CmPath {
    fn write(&self, w: &mut Writer<'_>, at: usize, l: &PathLayout) -> Result<()> {
        w.u16(at, self.local_port_lid);
        w.u16(at + 2, self.remote_port_lid);
        w.bytes(at + 4, &self.local_port_gid);
        w.bytes(at + 20, &self.remote_port_gid);
        w.bits32(at + 36, 12, 20, self.flow_label, "flow_label")?;
        w.bits(at + l.rate, 0, 6, self.packet_rate, "packet_rate")?;
        w.u8(at + l.traffic_class, self.traffic_class);
        w.u8(at + l.hop_limit, self.hop_limit);
        w.bits(at + 42, 4, 4, self.sl, "sl")?;
        w.flag(at + 42, 3, self.subnet_local);
        w.bits(at + 43, 3, 5, self.local_ack_timeout, "local_ack_timeout")
    }
}

/// A path in a REQ (44 bytes); with it, its last byte, whose bit 2 is
/// SAP Supported in the alternate path.
#[inline(always)]
fn req_path(i: &[u8]) -> PResult<'_, (CmPath, u8)> {
    path(i, &REQ_PATH)
}

/// The alternate path in a LAP (44 bytes).
#[inline(always)]
fn lap_path(i: &[u8]) -> PResult<'_, (CmPath, u8)> {
    path(i, &LAP_PATH)
}

/// A path laid out as `l` says, and its last byte. Always inlined with a
/// constant layout, so that the byte order below folds away.
#[inline(always)]
fn path<'i>(i: &'i [u8], l: &PathLayout) -> PResult<'i, (CmPath, u8)> {
    {
        let (i, local_port_lid) = be_u16(i)?;
        let (i, remote_port_lid) = be_u16(i)?;
        let (i, local_port_gid) = array::<16>(i)?;
        let (i, remote_port_gid) = array::<16>(i)?;
        let (i, flow) = be_u24(i)?;
        let (i, b39) = be_u8(i)?;
        let (i, b40) = be_u8(i)?;
        let (i, b41) = be_u8(i)?;
        let (i, b42) = be_u8(i)?;
        let (i, b43) = be_u8(i)?;
        // Bytes 39 to 41 hold rate, traffic class and hop limit in an order
        // that depends on the message.
        let at = |off: usize| match off {
            39 => b39,
            40 => b40,
            _ => b41,
        };
        Ok((
            i,
            (
                CmPath {
                    local_port_lid,
                    remote_port_lid,
                    local_port_gid,
                    remote_port_gid,
                    flow_label: flow >> 4,
                    packet_rate: at(l.rate) & 0x3f,
                    traffic_class: at(l.traffic_class),
                    hop_limit: at(l.hop_limit),
                    sl: b42 >> 4,
                    subnet_local: b42 & 0x08 != 0,
                    local_ack_timeout: b43 >> 3,
                },
                b43,
            ),
        ))
    }
}

/// Writes fields into a zeroed message buffer, checking widths.
struct Writer<'b>(&'b mut [u8]);

impl Writer<'_> {
    fn u8(&mut self, at: usize, v: u8) {
        if let Some(b) = self.0.get_mut(at) {
            *b = v;
        }
    }
    fn u16(&mut self, at: usize, v: u16) {
        put_u16(self.0, at, v);
    }
    fn u32(&mut self, at: usize, v: u32) {
        put_u32(self.0, at, v);
    }
    fn u64(&mut self, at: usize, v: u64) {
        put_u64(self.0, at, v);
    }
    fn bytes(&mut self, at: usize, v: &[u8]) {
        put(self.0, at, v);
    }
    fn u24(&mut self, at: usize, v: u32, name: &'static str) -> Result<()> {
        self.bits32(at, 8, 24, v, name)
    }
    /// ORs a `width`-bit value at bit `shift` of the big-endian u32 at `at`.
    fn bits32(
        &mut self,
        at: usize,
        shift: u32,
        width: u32,
        v: u32,
        name: &'static str,
    ) -> Result<()> {
        if u64::from(v) >= 1u64 << width {
            return Err(bad(at, name, v.into(), width));
        }
        let old = u32_at(self.0, at);
        put_u32(self.0, at, old | (v << shift));
        Ok(())
    }
    /// ORs a `width`-bit value at bit `shift` of the byte at `at`.
    fn bits(&mut self, at: usize, shift: u8, width: u8, v: u8, name: &'static str) -> Result<()> {
        if u16::from(v) >= 1u16 << width {
            return Err(bad(at, name, v.into(), width.into()));
        }
        if let Some(b) = self.0.get_mut(at) {
            *b |= v << shift;
        }
        Ok(())
    }
    fn flag(&mut self, at: usize, bit: u8, v: bool) {
        if let Some(b) = self.0.get_mut(at) {
            *b |= u8::from(v) << bit;
        }
    }
    fn private_data(&mut self, at: usize, size: usize, v: &[u8]) -> Result<()> {
        if v.len() > size {
            return Err(Error::LimitExceeded {
                layer: Layer::Cm,
                offset: at,
                what: "private data bytes",
                limit: size,
            });
        }
        self.bytes(at, v);
        Ok(())
    }
}

fn bad(offset: usize, field: &'static str, value: u64, width: u32) -> Error {
    Error::BadField {
        layer: Layer::Cm,
        offset,
        field,
        value,
        expected: match width {
            1 => "1 bit",
            2 => "2 bits",
            3 => "3 bits",
            4 => "4 bits",
            5 => "5 bits",
            6 => "6 bits",
            7 => "7 bits",
            20 => "20 bits",
            24 => "24 bits",
            _ => "a narrower value",
        },
    }
}

/// Zeroes the message area of `buf` and hands out a writer for it.
fn writer(buf: &mut [u8]) -> Result<Writer<'_>> {
    let avail = buf.len();
    let b = buf
        .get_mut(..MESSAGE_LEN)
        .ok_or(Error::truncated(Layer::Cm, 0, MESSAGE_LEN, avail))?;
    b.fill(0);
    Ok(Writer(b))
}

fn tail(d: &[u8], at: usize) -> &[u8] {
    d.get(at..d.len().min(MESSAGE_LEN)).unwrap_or(&[])
}

fn bits(b: u8, shift: u8, width: u8) -> u8 {
    (b >> shift) & ((1u16 << width) - 1) as u8
}

fn flag(b: u8, bit: u8) -> bool {
    (b >> bit) & 1 != 0
}

/// ConnectRequest (IBA 12.6.5, table 99).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmReq<'a> {
    /// Local Communication ID: the sender's handle for the connection.
    pub local_comm_id: u32,
    /// ServiceID: whom the sender wants to reach (RDMA-CM: annex A11).
    pub service_id: ServiceId,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Local Q_Key (RD only).
    pub local_q_key: u32,
    /// Local QPN: the sender's QP for the connection.
    pub local_qpn: Qpn,
    /// Responder Resources: RDMA READ/atomic requests the sender accepts at once.
    pub responder_resources: u8,
    /// Local EECN (RD only), 24 bits.
    pub local_eecn: u32,
    /// Initiator Depth: RDMA READ/atomic requests the sender issues at once.
    pub initiator_depth: u8,
    /// Remote EECN (RD only), 24 bits.
    pub remote_eecn: u32,
    /// Remote CM Response Timeout, 5 bits: 4.096 µs × 2^value.
    pub remote_cm_response_timeout: u8,
    /// Transport Service Type, 2 bits: 0 RC, 1 UC, 2 RD, 3 see extended.
    pub transport_service_type: u8,
    /// End-to-End Flow Control.
    pub end_to_end_flow_control: bool,
    /// Starting PSN of the sender's send queue.
    pub starting_psn: Psn,
    /// Local CM Response Timeout, 5 bits.
    pub local_cm_response_timeout: u8,
    /// Retry Count, 3 bits: transport retries on timeout.
    pub retry_count: u8,
    /// Partition Key.
    pub p_key: PKey,
    /// Path Packet Payload MTU, 4-bit code; see [`mtu_bytes`].
    pub path_packet_payload_mtu: u8,
    /// RDC Exists (RD only).
    pub rdc_exists: bool,
    /// RNR Retry Count, 3 bits (7: retry forever).
    pub rnr_retry_count: u8,
    /// Max CM Retries, 4 bits.
    pub max_cm_retries: u8,
    /// SRQ: the sender's QP uses a shared receive queue.
    pub srq: bool,
    /// Extended Transport Type, 3 bits (1: XRC when the service type is 3).
    pub extended_transport_type: u8,
    /// The primary path.
    pub primary_path: CmPath,
    /// The alternate path (all zero when there is none).
    pub alternate_path: CmPath,
    /// SAP Supported.
    pub sap_supported: bool,
    /// Private Data, 92 bytes (RDMA-CM: starts with the CMA header).
    pub private_data: &'a [u8],
}

/// Offsets of a REQ's fields in the message (IBA 12.6.5), to tell which
/// fields of a message the capture cut ([`parse_cm_prefix`]) were kept.
#[allow(missing_docs)]
pub mod req {
    pub const LOCAL_COMM_ID: usize = 0;
    pub const SERVICE_ID: usize = 8;
    pub const LOCAL_CA_GUID: usize = 16;
    pub const LOCAL_Q_KEY: usize = 28;
    pub const LOCAL_QPN: usize = 32;
    pub const RESPONDER_RESOURCES: usize = 35;
    pub const LOCAL_EECN: usize = 36;
    pub const INITIATOR_DEPTH: usize = 39;
    pub const REMOTE_EECN: usize = 40;
    pub const TIMEOUT_TYPE_FLOW: usize = 43;
    pub const STARTING_PSN: usize = 44;
    pub const TIMEOUT_RETRY: usize = 47;
    pub const P_KEY: usize = 48;
    pub const MTU_RDC_RNR: usize = 50;
    pub const RETRIES_SRQ_EXT: usize = 51;
    pub const PRIMARY_PATH: usize = 52;
    pub const ALTERNATE_PATH: usize = 96;
    pub const SAP_SUPPORTED: usize = 139;
    pub const PRIVATE_DATA: usize = 140;
}

impl<'a> CmReq<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        use req::*;
        let (i, local_comm_id) = be_u32(i)?;
        let (i, _) = take(4)(i)?;
        let (i, service_id) = be_u64(i)?;
        let (i, local_ca_guid) = be_u64(i)?;
        let (i, _) = take(4)(i)?;
        let (i, local_q_key) = be_u32(i)?;
        let (i, local_qpn) = be_u24(i)?;
        let (i, responder_resources) = be_u8(i)?;
        let (i, local_eecn) = be_u24(i)?;
        let (i, initiator_depth) = be_u8(i)?;
        let (i, remote_eecn) = be_u24(i)?;
        let (i, ttf) = be_u8(i)?;
        let (i, starting_psn) = be_u24(i)?;
        let (i, tr) = be_u8(i)?;
        let (i, p_key) = be_u16(i)?;
        let (i, mrr) = be_u8(i)?;
        let (i, rse) = be_u8(i)?;
        let (i, (primary_path, _)) = req_path(i)?;
        let (i, (alternate_path, b139)) = req_path(i)?;
        Ok((
            i,
            CmReq {
                local_comm_id,
                service_id: ServiceId(service_id),
                local_ca_guid,
                local_q_key,
                local_qpn: Qpn::from_bits(local_qpn),
                responder_resources,
                local_eecn,
                initiator_depth,
                remote_eecn,
                remote_cm_response_timeout: bits(ttf, 3, 5),
                transport_service_type: bits(ttf, 1, 2),
                end_to_end_flow_control: flag(ttf, 0),
                starting_psn: Psn::from_bits(starting_psn),
                local_cm_response_timeout: bits(tr, 3, 5),
                retry_count: bits(tr, 0, 3),
                p_key: PKey(p_key),
                path_packet_payload_mtu: bits(mrr, 4, 4),
                rdc_exists: flag(mrr, 3),
                rnr_retry_count: bits(mrr, 0, 3),
                max_cm_retries: bits(rse, 4, 4),
                srq: flag(rse, 3),
                extended_transport_type: bits(rse, 0, 3),
                primary_path,
                alternate_path,
                sap_supported: flag(b139, 2),
                private_data: tail(src, PRIVATE_DATA),
            },
        ))
    }

    /// Writes the message (the 232 bytes of MAD data); returns [`MESSAGE_LEN`].
    ///
    /// # Errors
    ///
    /// [`Error::Truncated`] if `buf` is shorter than [`MESSAGE_LEN`];
    /// [`Error::BadField`] if a field is wider than its slot;
    /// [`Error::LimitExceeded`] if the private data is longer than 92 bytes
    /// (shorter private data is padded with zeros).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        use req::*;
        let mut w = writer(buf)?;
        w.u32(LOCAL_COMM_ID, self.local_comm_id);
        w.u64(SERVICE_ID, self.service_id.0);
        w.u64(LOCAL_CA_GUID, self.local_ca_guid);
        w.u32(LOCAL_Q_KEY, self.local_q_key);
        w.u24(LOCAL_QPN, self.local_qpn.get(), "local_qpn")?;
        w.u8(RESPONDER_RESOURCES, self.responder_resources);
        w.u24(LOCAL_EECN, self.local_eecn, "local_eecn")?;
        w.u8(INITIATOR_DEPTH, self.initiator_depth);
        w.u24(REMOTE_EECN, self.remote_eecn, "remote_eecn")?;
        let t = self.remote_cm_response_timeout;
        w.bits(TIMEOUT_TYPE_FLOW, 3, 5, t, "remote_cm_response_timeout")?;
        let t = self.transport_service_type;
        w.bits(TIMEOUT_TYPE_FLOW, 1, 2, t, "transport_service_type")?;
        w.flag(TIMEOUT_TYPE_FLOW, 0, self.end_to_end_flow_control);
        w.u24(STARTING_PSN, self.starting_psn.get(), "starting_psn")?;
        let t = self.local_cm_response_timeout;
        w.bits(TIMEOUT_RETRY, 3, 5, t, "local_cm_response_timeout")?;
        w.bits(TIMEOUT_RETRY, 0, 3, self.retry_count, "retry_count")?;
        w.u16(P_KEY, self.p_key.0);
        let m = self.path_packet_payload_mtu;
        w.bits(MTU_RDC_RNR, 4, 4, m, "path_packet_payload_mtu")?;
        w.flag(MTU_RDC_RNR, 3, self.rdc_exists);
        w.bits(MTU_RDC_RNR, 0, 3, self.rnr_retry_count, "rnr_retry_count")?;
        w.bits(RETRIES_SRQ_EXT, 4, 4, self.max_cm_retries, "max_cm_retries")?;
        w.flag(RETRIES_SRQ_EXT, 3, self.srq);
        let e = self.extended_transport_type;
        w.bits(RETRIES_SRQ_EXT, 0, 3, e, "extended_transport_type")?;
        self.primary_path.write(&mut w, PRIMARY_PATH, &REQ_PATH)?;
        self.alternate_path
            .write(&mut w, ALTERNATE_PATH, &REQ_PATH)?;
        w.flag(SAP_SUPPORTED, 2, self.sap_supported);
        w.private_data(PRIVATE_DATA, private_data_size::REQ, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// MsgRcptAck: "I got your message, wait longer" (IBA 12.6.6, table 100).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmMra<'a> {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// Message MRAed, 2 bits: 0 REQ, 1 REP, 2 LAP.
    pub message_mraed: u8,
    /// Service Timeout, 5 bits: 4.096 µs × 2^value.
    pub service_timeout: u8,
    /// Private Data, 222 bytes.
    pub private_data: &'a [u8],
}

mod mra {
    pub const LOCAL_COMM_ID: usize = 0;
    pub const REMOTE_COMM_ID: usize = 4;
    pub const MESSAGE_MRAED: usize = 8;
    pub const SERVICE_TIMEOUT: usize = 9;
    pub const PRIVATE_DATA: usize = 10;
}

impl<'a> CmMra<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        use mra::*;
        let (i, local_comm_id) = be_u32(i)?;
        let (i, remote_comm_id) = be_u32(i)?;
        let (i, m) = be_u8(i)?;
        let (i, t) = be_u8(i)?;
        Ok((
            i,
            CmMra {
                local_comm_id,
                remote_comm_id,
                message_mraed: bits(m, 6, 2),
                service_timeout: bits(t, 3, 5),
                private_data: tail(src, PRIVATE_DATA),
            },
        ))
    }

    /// Writes the message; see [`CmReq::emit`] for the errors.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 222 bytes of private data.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        use mra::*;
        let mut w = writer(buf)?;
        w.u32(LOCAL_COMM_ID, self.local_comm_id);
        w.u32(REMOTE_COMM_ID, self.remote_comm_id);
        w.bits(MESSAGE_MRAED, 6, 2, self.message_mraed, "message_mraed")?;
        w.bits(
            SERVICE_TIMEOUT,
            3,
            5,
            self.service_timeout,
            "service_timeout",
        )?;
        w.private_data(PRIVATE_DATA, private_data_size::MRA, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// ConnectReject (IBA 12.6.7, table 101).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmRej<'a> {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID (0 when rejecting a REQ before a REP).
    pub remote_comm_id: u32,
    /// Message Rejected, 2 bits: 0 REQ, 1 REP, 2 no message (timeout/other).
    pub message_rejected: u8,
    /// Reject Info Length, 7 bits: bytes of `ari` that carry information.
    pub reject_info_length: u8,
    /// Reason (IBA table 112).
    pub reason: RejReason,
    /// ARI, Additional Reject Information, 72 bytes (see [`CmRej::ari_used`]).
    pub ari: &'a [u8],
    /// Private Data, 148 bytes.
    pub private_data: &'a [u8],
}

mod rej {
    pub const LOCAL_COMM_ID: usize = 0;
    pub const REMOTE_COMM_ID: usize = 4;
    pub const MESSAGE_REJECTED: usize = 8;
    pub const REJECT_INFO_LENGTH: usize = 9;
    pub const REASON: usize = 10;
    pub const ARI: usize = 12;
    pub const ARI_LEN: usize = 72;
    pub const PRIVATE_DATA: usize = 84;
}

impl<'a> CmRej<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        use rej::*;
        let (i, local_comm_id) = be_u32(i)?;
        let (i, remote_comm_id) = be_u32(i)?;
        let (i, m) = be_u8(i)?;
        let (i, l) = be_u8(i)?;
        let (i, reason) = be_u16(i)?;
        let (i, _ari) = take(ARI_LEN)(i)?;
        Ok((
            i,
            CmRej {
                local_comm_id,
                remote_comm_id,
                message_rejected: bits(m, 6, 2),
                reject_info_length: bits(l, 1, 7),
                reason: RejReason(reason),
                ari: src.get(ARI..ARI + ARI_LEN).unwrap_or(&[]),
                private_data: tail(src, PRIVATE_DATA),
            },
        ))
    }

    /// The first `reject_info_length` bytes of the ARI (at most 72).
    pub fn ari_used(&self) -> &'a [u8] {
        let n = usize::from(self.reject_info_length).min(self.ari.len());
        self.ari.get(..n).unwrap_or(&[])
    }

    /// Writes the message.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 148 bytes of private data;
    /// [`Error::LimitExceeded`] also for an ARI longer than 72 bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        use rej::*;
        let mut w = writer(buf)?;
        w.u32(LOCAL_COMM_ID, self.local_comm_id);
        w.u32(REMOTE_COMM_ID, self.remote_comm_id);
        let m = self.message_rejected;
        w.bits(MESSAGE_REJECTED, 6, 2, m, "message_rejected")?;
        let l = self.reject_info_length;
        w.bits(REJECT_INFO_LENGTH, 1, 7, l, "reject_info_length")?;
        w.u16(REASON, self.reason.0);
        if self.ari.len() > ARI_LEN {
            return Err(Error::LimitExceeded {
                layer: Layer::Cm,
                offset: ARI,
                what: "ARI bytes",
                limit: ARI_LEN,
            });
        }
        w.bytes(ARI, self.ari);
        w.private_data(PRIVATE_DATA, private_data_size::REJ, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// ConnectReply (IBA 12.6.8, table 103).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmRep<'a> {
    /// Local Communication ID (the replier's).
    pub local_comm_id: u32,
    /// Remote Communication ID (the requester's, from the REQ).
    pub remote_comm_id: u32,
    /// Local Q_Key (RD only).
    pub local_q_key: u32,
    /// Local QPN: the replier's QP.
    pub local_qpn: Qpn,
    /// Local EE Context (RD only), 24 bits.
    pub local_ee_context: u32,
    /// Starting PSN of the replier's send queue.
    pub starting_psn: Psn,
    /// Responder Resources.
    pub responder_resources: u8,
    /// Initiator Depth.
    pub initiator_depth: u8,
    /// Target ACK Delay, 5 bits.
    pub target_ack_delay: u8,
    /// Failover Accepted, 2 bits: 0 accepted, 1 not supported, 2 rejected.
    pub failover_accepted: u8,
    /// End-to-End Flow Control.
    pub end_to_end_flow_control: bool,
    /// RNR Retry Count, 3 bits.
    pub rnr_retry_count: u8,
    /// SRQ: the replier's QP uses a shared receive queue.
    pub srq: bool,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Private Data, 196 bytes (the consumer's: no CMA header).
    pub private_data: &'a [u8],
}

/// Offsets of a REP's fields in the message (IBA 12.6.8), to tell which
/// fields of a message the capture cut ([`parse_cm_prefix`]) were kept.
#[allow(missing_docs)]
pub mod rep {
    pub const LOCAL_COMM_ID: usize = 0;
    pub const REMOTE_COMM_ID: usize = 4;
    pub const LOCAL_Q_KEY: usize = 8;
    pub const LOCAL_QPN: usize = 12;
    pub const LOCAL_EE_CONTEXT: usize = 16;
    pub const STARTING_PSN: usize = 20;
    pub const RESPONDER_RESOURCES: usize = 24;
    pub const INITIATOR_DEPTH: usize = 25;
    pub const DELAY_FAILOVER_FLOW: usize = 26;
    pub const RNR_SRQ: usize = 27;
    pub const LOCAL_CA_GUID: usize = 28;
    pub const PRIVATE_DATA: usize = 36;
}

impl<'a> CmRep<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        use rep::*;
        let (i, local_comm_id) = be_u32(i)?;
        let (i, remote_comm_id) = be_u32(i)?;
        let (i, local_q_key) = be_u32(i)?;
        let (i, local_qpn) = be_u24(i)?;
        let (i, _) = be_u8(i)?;
        let (i, local_ee_context) = be_u24(i)?;
        let (i, _) = be_u8(i)?;
        let (i, starting_psn) = be_u24(i)?;
        let (i, _) = be_u8(i)?;
        let (i, responder_resources) = be_u8(i)?;
        let (i, initiator_depth) = be_u8(i)?;
        let (i, dff) = be_u8(i)?;
        let (i, rs) = be_u8(i)?;
        let (i, local_ca_guid) = be_u64(i)?;
        Ok((
            i,
            CmRep {
                local_comm_id,
                remote_comm_id,
                local_q_key,
                local_qpn: Qpn::from_bits(local_qpn),
                local_ee_context,
                starting_psn: Psn::from_bits(starting_psn),
                responder_resources,
                initiator_depth,
                target_ack_delay: bits(dff, 3, 5),
                failover_accepted: bits(dff, 1, 2),
                end_to_end_flow_control: flag(dff, 0),
                rnr_retry_count: bits(rs, 5, 3),
                srq: flag(rs, 4),
                local_ca_guid,
                private_data: tail(src, PRIVATE_DATA),
            },
        ))
    }

    /// Writes the message.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 196 bytes of private data.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        use rep::*;
        let mut w = writer(buf)?;
        w.u32(LOCAL_COMM_ID, self.local_comm_id);
        w.u32(REMOTE_COMM_ID, self.remote_comm_id);
        w.u32(LOCAL_Q_KEY, self.local_q_key);
        w.u24(LOCAL_QPN, self.local_qpn.get(), "local_qpn")?;
        w.u24(LOCAL_EE_CONTEXT, self.local_ee_context, "local_ee_context")?;
        w.u24(STARTING_PSN, self.starting_psn.get(), "starting_psn")?;
        w.u8(RESPONDER_RESOURCES, self.responder_resources);
        w.u8(INITIATOR_DEPTH, self.initiator_depth);
        let t = self.target_ack_delay;
        w.bits(DELAY_FAILOVER_FLOW, 3, 5, t, "target_ack_delay")?;
        let f = self.failover_accepted;
        w.bits(DELAY_FAILOVER_FLOW, 1, 2, f, "failover_accepted")?;
        w.flag(DELAY_FAILOVER_FLOW, 0, self.end_to_end_flow_control);
        w.bits(RNR_SRQ, 5, 3, self.rnr_retry_count, "rnr_retry_count")?;
        w.flag(RNR_SRQ, 4, self.srq);
        w.u64(LOCAL_CA_GUID, self.local_ca_guid);
        w.private_data(PRIVATE_DATA, private_data_size::REP, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// A message that holds only the two communication IDs and private data:
/// ReadyToUse (IBA 12.6.9, table 104) and DisconnectReply (12.6.11, table 106).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmIds<'a> {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// Private Data, 224 bytes.
    pub private_data: &'a [u8],
}

/// ReadyToUse (IBA 12.6.9).
pub type CmRtu<'a> = CmIds<'a>;
/// DisconnectReply (IBA 12.6.11).
pub type CmDrep<'a> = CmIds<'a>;

impl<'a> CmIds<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        let (i, local_comm_id) = be_u32(i)?;
        let (i, remote_comm_id) = be_u32(i)?;
        Ok((
            i,
            CmIds {
                local_comm_id,
                remote_comm_id,
                private_data: tail(src, 8),
            },
        ))
    }

    /// Writes the message.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 224 bytes of private data.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let mut w = writer(buf)?;
        w.u32(0, self.local_comm_id);
        w.u32(4, self.remote_comm_id);
        w.private_data(8, private_data_size::RTU, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// DisconnectRequest (IBA 12.6.10, table 105).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmDreq<'a> {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// Remote QPN/EECN, 24 bits: the peer's QP being disconnected.
    pub remote_qpn_eecn: u32,
    /// Private Data, 220 bytes.
    pub private_data: &'a [u8],
}

impl<'a> CmDreq<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        let (i, local_comm_id) = be_u32(i)?;
        let (i, remote_comm_id) = be_u32(i)?;
        let (i, remote_qpn_eecn) = be_u24(i)?;
        let (i, _) = be_u8(i)?;
        Ok((
            i,
            CmDreq {
                local_comm_id,
                remote_comm_id,
                remote_qpn_eecn,
                private_data: tail(src, 12),
            },
        ))
    }

    /// Writes the message.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 220 bytes of private data.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let mut w = writer(buf)?;
        w.u32(0, self.local_comm_id);
        w.u32(4, self.remote_comm_id);
        w.u24(8, self.remote_qpn_eecn, "remote_qpn_eecn")?;
        w.private_data(12, private_data_size::DREQ, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// ServiceIDResReq (IBA 12.11.1, table 119).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmSidrReq<'a> {
    /// RequestID.
    pub request_id: u32,
    /// Partition Key.
    pub p_key: PKey,
    /// ServiceID to resolve.
    pub service_id: ServiceId,
    /// Private Data, 216 bytes (RDMA-CM: starts with the CMA header).
    pub private_data: &'a [u8],
}

impl<'a> CmSidrReq<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        let (i, request_id) = be_u32(i)?;
        let (i, p_key) = be_u16(i)?;
        let (i, _) = take(2)(i)?;
        let (i, service_id) = be_u64(i)?;
        Ok((
            i,
            CmSidrReq {
                request_id,
                p_key: PKey(p_key),
                service_id: ServiceId(service_id),
                private_data: tail(src, 16),
            },
        ))
    }

    /// Writes the message.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 216 bytes of private data.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let mut w = writer(buf)?;
        w.u32(0, self.request_id);
        w.u16(4, self.p_key.0);
        w.u64(8, self.service_id.0);
        w.private_data(16, private_data_size::SIDR_REQ, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// ServiceIDResReqResp (IBA 12.11.2, table 120).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmSidrRep<'a> {
    /// RequestID, from the SIDR_REQ.
    pub request_id: u32,
    /// Status: 0 valid, 1 service ID not supported, 2 rejected, 3 no QP,
    /// 4 redirect, 5 unsupported class version (IBA table 121).
    pub status: u8,
    /// Additional Information Length.
    pub additional_information_length: u8,
    /// QPN of the UD service.
    pub qpn: Qpn,
    /// ServiceID.
    pub service_id: ServiceId,
    /// Q_Key of the UD service.
    pub q_key: u32,
    /// Additional Information, 72 bytes.
    pub additional_information: &'a [u8],
    /// Private Data, 136 bytes.
    pub private_data: &'a [u8],
}

impl<'a> CmSidrRep<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        let (i, request_id) = be_u32(i)?;
        let (i, status) = be_u8(i)?;
        let (i, additional_information_length) = be_u8(i)?;
        let (i, _) = take(2)(i)?;
        let (i, qpn) = be_u24(i)?;
        let (i, _) = be_u8(i)?;
        let (i, service_id) = be_u64(i)?;
        let (i, q_key) = be_u32(i)?;
        let (i, _info) = take(72)(i)?;
        Ok((
            i,
            CmSidrRep {
                request_id,
                status,
                additional_information_length,
                qpn: Qpn::from_bits(qpn),
                service_id: ServiceId(service_id),
                q_key,
                additional_information: src.get(24..96).unwrap_or(&[]),
                private_data: tail(src, 96),
            },
        ))
    }

    /// Writes the message.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 136 bytes of private data and 72 of
    /// additional information.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let mut w = writer(buf)?;
        w.u32(0, self.request_id);
        w.u8(4, self.status);
        w.u8(5, self.additional_information_length);
        w.u24(8, self.qpn.get(), "qpn")?;
        w.u64(12, self.service_id.0);
        w.u32(20, self.q_key);
        w.private_data(24, 72, self.additional_information)?;
        w.private_data(96, private_data_size::SIDR_REP, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// LoadAlternatePath (IBA 12.8.1, table 115).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmLap<'a> {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// Remote QPN/EECN, 24 bits.
    pub remote_qpn_eecn: u32,
    /// Remote CM Response Timeout, 5 bits.
    pub remote_cm_response_timeout: u8,
    /// The new alternate path.
    pub alternate_path: CmPath,
    /// Private Data, 168 bytes.
    pub private_data: &'a [u8],
}

impl<'a> CmLap<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        let (i, local_comm_id) = be_u32(i)?;
        let (i, remote_comm_id) = be_u32(i)?;
        let (i, _) = take(4)(i)?;
        let (i, remote_qpn_eecn) = be_u24(i)?;
        let (i, t) = be_u8(i)?;
        let (i, _) = take(4)(i)?;
        let (i, (alternate_path, _)) = lap_path(i)?;
        Ok((
            i,
            CmLap {
                local_comm_id,
                remote_comm_id,
                remote_qpn_eecn,
                remote_cm_response_timeout: bits(t, 3, 5),
                alternate_path,
                private_data: tail(src, 64),
            },
        ))
    }

    /// Writes the message.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 168 bytes of private data.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let mut w = writer(buf)?;
        w.u32(0, self.local_comm_id);
        w.u32(4, self.remote_comm_id);
        w.u24(12, self.remote_qpn_eecn, "remote_qpn_eecn")?;
        let t = self.remote_cm_response_timeout;
        w.bits(15, 3, 5, t, "remote_cm_response_timeout")?;
        self.alternate_path.write(&mut w, 20, &LAP_PATH)?;
        w.private_data(64, private_data_size::LAP, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// AlternatePathResponse (IBA 12.8.2, table 116).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmApr<'a> {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// Additional Information Length.
    pub additional_information_length: u8,
    /// AP Status: 0 loaded, 1 invalid comm ID, 2 unsupported, 3 rejected, … (IBA table 117).
    pub ar_status: u8,
    /// Additional Information, 72 bytes.
    pub additional_information: &'a [u8],
    /// Private Data, 148 bytes.
    pub private_data: &'a [u8],
}

impl<'a> CmApr<'a> {
    #[inline(always)]
    fn parse<'i>(i: &'i [u8], src: &'a [u8]) -> PResult<'i, Self> {
        let (i, local_comm_id) = be_u32(i)?;
        let (i, remote_comm_id) = be_u32(i)?;
        let (i, additional_information_length) = be_u8(i)?;
        let (i, ar_status) = be_u8(i)?;
        let (i, _) = take(2)(i)?;
        let (i, _info) = take(72)(i)?;
        Ok((
            i,
            CmApr {
                local_comm_id,
                remote_comm_id,
                additional_information_length,
                ar_status,
                additional_information: src.get(12..84).unwrap_or(&[]),
                private_data: tail(src, 84),
            },
        ))
    }

    /// Writes the message.
    ///
    /// # Errors
    ///
    /// As [`CmReq::emit`], with 148 bytes of private data and 72 of
    /// additional information.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let mut w = writer(buf)?;
        w.u32(0, self.local_comm_id);
        w.u32(4, self.remote_comm_id);
        w.u8(8, self.additional_information_length);
        w.u8(9, self.ar_status);
        w.private_data(12, 72, self.additional_information)?;
        w.private_data(84, private_data_size::APR, self.private_data)?;
        Ok(MESSAGE_LEN)
    }
}

/// One CM message, chosen by the MAD's attribute ID (IBA 12.6).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmMessage<'a> {
    /// ConnectRequest (0x0010).
    Req(CmReq<'a>),
    /// MsgRcptAck (0x0011).
    Mra(CmMra<'a>),
    /// ConnectReject (0x0012).
    Rej(CmRej<'a>),
    /// ConnectReply (0x0013).
    Rep(CmRep<'a>),
    /// ReadyToUse (0x0014).
    Rtu(CmRtu<'a>),
    /// DisconnectRequest (0x0015).
    Dreq(CmDreq<'a>),
    /// DisconnectReply (0x0016).
    Drep(CmDrep<'a>),
    /// ServiceIDResReq (0x0017).
    SidrReq(CmSidrReq<'a>),
    /// ServiceIDResReqResp (0x0018).
    SidrRep(CmSidrRep<'a>),
    /// LoadAlternatePath (0x0019).
    Lap(CmLap<'a>),
    /// AlternatePathResponse (0x001A).
    Apr(CmApr<'a>),
    /// ClassPortInfo or an undefined attribute: the raw 232 bytes.
    Unknown {
        /// The MAD's attribute ID.
        attribute_id: u16,
        /// The MAD data.
        data: &'a [u8],
    },
}

impl CmMessage<'_> {
    /// The MAD attribute ID of this message.
    pub const fn attribute_id(&self) -> u16 {
        match self {
            CmMessage::Req(_) => attr::REQ,
            CmMessage::Mra(_) => attr::MRA,
            CmMessage::Rej(_) => attr::REJ,
            CmMessage::Rep(_) => attr::REP,
            CmMessage::Rtu(_) => attr::RTU,
            CmMessage::Dreq(_) => attr::DREQ,
            CmMessage::Drep(_) => attr::DREP,
            CmMessage::SidrReq(_) => attr::SIDR_REQ,
            CmMessage::SidrRep(_) => attr::SIDR_REP,
            CmMessage::Lap(_) => attr::LAP,
            CmMessage::Apr(_) => attr::APR,
            CmMessage::Unknown { attribute_id, .. } => *attribute_id,
        }
    }

    /// The message's short name: "REQ", "REP", "RTU", … or "Unknown".
    pub const fn name(&self) -> &'static str {
        match self {
            CmMessage::Req(_) => "REQ",
            CmMessage::Mra(_) => "MRA",
            CmMessage::Rej(_) => "REJ",
            CmMessage::Rep(_) => "REP",
            CmMessage::Rtu(_) => "RTU",
            CmMessage::Dreq(_) => "DREQ",
            CmMessage::Drep(_) => "DREP",
            CmMessage::SidrReq(_) => "SIDR_REQ",
            CmMessage::SidrRep(_) => "SIDR_REP",
            CmMessage::Lap(_) => "LAP",
            CmMessage::Apr(_) => "APR",
            CmMessage::Unknown { .. } => "Unknown",
        }
    }

    /// The consumer private data carried by the message (empty for Unknown).
    pub const fn private_data(&self) -> &[u8] {
        match self {
            CmMessage::Req(m) => m.private_data,
            CmMessage::Mra(m) => m.private_data,
            CmMessage::Rej(m) => m.private_data,
            CmMessage::Rep(m) => m.private_data,
            CmMessage::Rtu(m) | CmMessage::Drep(m) => m.private_data,
            CmMessage::Dreq(m) => m.private_data,
            CmMessage::SidrReq(m) => m.private_data,
            CmMessage::SidrRep(m) => m.private_data,
            CmMessage::Lap(m) => m.private_data,
            CmMessage::Apr(m) => m.private_data,
            CmMessage::Unknown { .. } => &[],
        }
    }

    /// Writes the 232 bytes of MAD data for this message; returns [`MESSAGE_LEN`].
    /// The MAD header is [`Mad::cm`]`(msg.attribute_id(), tid)`.
    ///
    /// # Errors
    ///
    /// As the message type's `emit`; for `Unknown`, [`Error::LimitExceeded`]
    /// if `data` is longer than 232 bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        match self {
            CmMessage::Req(m) => m.emit(buf),
            CmMessage::Mra(m) => m.emit(buf),
            CmMessage::Rej(m) => m.emit(buf),
            CmMessage::Rep(m) => m.emit(buf),
            CmMessage::Rtu(m) | CmMessage::Drep(m) => m.emit(buf),
            CmMessage::Dreq(m) => m.emit(buf),
            CmMessage::SidrReq(m) => m.emit(buf),
            CmMessage::SidrRep(m) => m.emit(buf),
            CmMessage::Lap(m) => m.emit(buf),
            CmMessage::Apr(m) => m.emit(buf),
            CmMessage::Unknown { data, .. } => {
                let mut w = writer(buf)?;
                w.private_data(0, MESSAGE_LEN, data)?;
                Ok(MESSAGE_LEN)
            }
        }
    }
}

/// Decodes the CM message in `data` (the MAD data that [`Mad::parse`]
/// returned) according to `mad.attribute_id`.
///
/// # Errors
///
/// [`Error::BadField`] (layer `cm`, field `mgmt_class`) if the MAD is not of
/// the CM class; [`Error::Truncated`] if `data` is shorter than 232 bytes.
pub fn parse_cm<'a>(mad: &Mad, data: &'a [u8]) -> Result<CmMessage<'a>> {
    if mad.mgmt_class != mad::class::CM {
        return Err(Error::BadField {
            layer: Layer::Cm,
            offset: 0,
            field: "mgmt_class",
            value: mad.mgmt_class.into(),
            expected: "0x07 (CM)",
        });
    }
    let Some(d) = data.first_chunk::<MESSAGE_LEN>() else {
        return Err(Error::truncated(Layer::Cm, 0, MESSAGE_LEN, data.len()));
    };
    parse_cm_fields(mad, d, d)
}

/// The message's fields read by nom from `fields` (the whole 232 bytes: a
/// length known at compile time, so the parsers' length checks fold away);
/// its slices (private data, ARI, additional information) borrowed from
/// `src`, which is `fields` itself or, for a message the capture cut, what
/// was captured of it.
fn parse_cm_fields<'a>(
    mad: &Mad,
    fields: &[u8; MESSAGE_LEN],
    src: &'a [u8],
) -> Result<CmMessage<'a>> {
    // Called directly, not through `parse::run`: nom's `Parser` impl for
    // closures is a call LLVM keeps, and inside it the input's length (232)
    // is no longer known, so every field's length check would stay.
    match message(mad.attribute_id, fields.as_slice(), src) {
        Ok((_, m)) => Ok(m),
        Err(e) => Err(parse::lift(e, fields, Layer::Cm, 0)),
    }
}

/// The message named by `attribute_id`, its fields read from `i` and its
/// slices borrowed from `src` (see [`parse_cm_fields`]).
#[inline(always)]
fn message<'i, 'a>(attribute_id: u16, i: &'i [u8], src: &'a [u8]) -> PResult<'i, CmMessage<'a>> {
    match attribute_id {
        attr::REQ => CmReq::parse(i, src).map(|(r, m)| (r, CmMessage::Req(m))),
        attr::MRA => CmMra::parse(i, src).map(|(r, m)| (r, CmMessage::Mra(m))),
        attr::REJ => CmRej::parse(i, src).map(|(r, m)| (r, CmMessage::Rej(m))),
        attr::REP => CmRep::parse(i, src).map(|(r, m)| (r, CmMessage::Rep(m))),
        attr::RTU => CmIds::parse(i, src).map(|(r, m)| (r, CmMessage::Rtu(m))),
        attr::DREQ => CmDreq::parse(i, src).map(|(r, m)| (r, CmMessage::Dreq(m))),
        attr::DREP => CmIds::parse(i, src).map(|(r, m)| (r, CmMessage::Drep(m))),
        attr::SIDR_REQ => CmSidrReq::parse(i, src).map(|(r, m)| (r, CmMessage::SidrReq(m))),
        attr::SIDR_REP => CmSidrRep::parse(i, src).map(|(r, m)| (r, CmMessage::SidrRep(m))),
        attr::LAP => CmLap::parse(i, src).map(|(r, m)| (r, CmMessage::Lap(m))),
        attr::APR => CmApr::parse(i, src).map(|(r, m)| (r, CmMessage::Apr(m))),
        attribute_id => Ok((
            i,
            CmMessage::Unknown {
                attribute_id,
                data: src.get(..MESSAGE_LEN).unwrap_or(src),
            },
        )),
    }
}

/// [`parse_cm`] of a message the capture cut short: `data` is what was
/// captured of it. Fields past the captured bytes read as zero and are not
/// known (compare their offsets with `data.len()`); private data is what
/// was captured of it.
///
/// # Errors
///
/// [`Error::BadField`] (layer `cm`, field `mgmt_class`) if the MAD is not of
/// the CM class.
pub fn parse_cm_prefix<'a>(mad: &Mad, data: &'a [u8]) -> Result<CmMessage<'a>> {
    match data.get(..MESSAGE_LEN) {
        Some(whole) => parse_cm(mad, whole),
        None => {
            parse_cm(mad, &[0; MESSAGE_LEN])?;
            // A field the cut runs through is as unknown as one past it and
            // reads as zero too. Parsing what was captured stops at the
            // first field not wholly captured: copy the bytes before it into
            // a zeroed message and parse that.
            let known = match message(mad.attribute_id, data, data) {
                Ok(_) => data.len(),
                Err(e) => parse::lift(e, data, Layer::Cm, 0).offset(),
            };
            let mut fields = [0u8; MESSAGE_LEN];
            if let (Some(head), Some(kept)) = (fields.get_mut(..known), data.get(..known)) {
                head.copy_from_slice(kept);
            }
            parse_cm_fields(mad, &fields, data)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    /// captures/v3-inline.pcap frame 26: the NFS client's CM REQ (the MAD
    /// after BTH + DETH), sent by Linux 6.1 rdma_cm over soft-RoCE.
    pub(crate) const REQ_MAD: [u8; 256] = hex!(
        "01070203 00000000 00000002 ee7fef81 00100000 00000000 81ef7fee 00000000"
        "00000000 01064e51 505400ff fe990002 00000000 00000000 00001180 00000000"
        "000000a0 c97525a6 ffff30f0 ffffffff 00000000 00000000 0000ffff 0a630002"
        "00000000 00000000 0000ffff 0a630001 5d9e5000 00400098 00000000 00000000"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000"
        "00000000 0040b1ec 00000000 00000000 00000000 0a630002 00000000 00000000"
        "00000000 0a630001 f6ab0e18 01010303 00000000 00000000 00000000 00000000"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000"
    );

    /// captures/v3-inline.pcap frame 27: the server's CM REP.
    const REP_MAD: [u8; 256] = hex!(
        "01070203 00000000 00000002 ee7fef81 00130000 00000000 163d4967 81ef7fee"
        "00000000 00001100 00000000 430ac500 00807800 505400ff fe990001 f6ab0e18"
        "01000303 00000000 00000000 00000000 00000000 00000000 00000000 00000000"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000"
    );

    /// A message whose fixed part is `head` and whose MAD header is `attr`.
    fn mad_with(attr_id: u16, head: &[u8]) -> [u8; 256] {
        let mut m = [0u8; 256];
        Mad::cm(attr_id, 0x2_ee7f_ef81).emit(&mut m).unwrap();
        m[24..24 + head.len()].copy_from_slice(head);
        m
    }

    fn parse(m: &[u8]) -> CmMessage<'_> {
        let (mad, data) = Mad::parse(m).unwrap();
        parse_cm(&mad, data).unwrap()
    }

    fn emit_matches(m: &[u8]) {
        let msg = parse(m);
        let mut buf = [0xa5u8; MESSAGE_LEN];
        assert_eq!(msg.emit(&mut buf), Ok(MESSAGE_LEN));
        assert_eq!(&buf[..], &m[24..], "{}", msg.name());
    }

    #[test]
    fn parse_req_from_capture() {
        let CmMessage::Req(r) = parse(&REQ_MAD) else {
            panic!("not a REQ");
        };
        assert_eq!(r.local_comm_id, 0x81ef_7fee);
        assert_eq!(r.service_id, ServiceId(0x0000_0000_0106_4e51));
        assert_eq!(r.local_ca_guid, 0x5054_00ff_fe99_0002);
        assert_eq!(r.local_q_key, 0);
        assert_eq!(r.local_qpn.get(), 0x11);
        assert_eq!(r.responder_resources, 0x80);
        assert_eq!(r.initiator_depth, 0);
        assert_eq!(r.remote_cm_response_timeout, 0x14);
        assert_eq!(r.transport_service_type, 0);
        assert!(!r.end_to_end_flow_control);
        assert_eq!(r.starting_psn.get(), 0xc9_7525);
        assert_eq!(r.local_cm_response_timeout, 0x14);
        assert_eq!(r.retry_count, 6);
        assert_eq!(r.p_key, PKey::DEFAULT);
        assert_eq!(r.path_packet_payload_mtu, 3);
        assert_eq!(mtu_bytes(r.path_packet_payload_mtu), Some(1024));
        assert!(!r.rdc_exists);
        assert_eq!(r.rnr_retry_count, 0);
        assert_eq!(r.max_cm_retries, 15);
        assert!(!r.srq);
        assert_eq!(r.extended_transport_type, 0);
        let p = r.primary_path;
        assert_eq!((p.local_port_lid, p.remote_port_lid), (0xffff, 0xffff));
        assert_eq!(
            p.local_port_gid,
            hex!("0000 0000 0000 0000 0000 ffff 0a63 0002")
        );
        assert_eq!(
            p.remote_port_gid,
            hex!("0000 0000 0000 0000 0000 ffff 0a63 0001")
        );
        // Linux ibta_vol1_c12.h layout: 20-bit flow label at the top of
        // bytes 88-91, rate in the low 6 bits of byte 91. (Wireshark 4.0
        // shows this field shifted by a byte.)
        assert_eq!(p.flow_label, 0x5_d9e5);
        assert_eq!(p.packet_rate, 0);
        assert_eq!((p.traffic_class, p.hop_limit, p.sl), (0, 0x40, 0));
        assert!(!p.subnet_local);
        assert_eq!(p.local_ack_timeout, 0x13);
        assert_eq!(r.alternate_path, CmPath::default());
        assert!(!r.sap_supported);
        assert_eq!(r.private_data.len(), private_data_size::REQ);
        assert_eq!(&r.private_data[..4], &hex!("0040 b1ec"));
        emit_matches(&REQ_MAD);
    }

    #[test]
    fn parse_rep_from_capture() {
        let CmMessage::Rep(r) = parse(&REP_MAD) else {
            panic!("not a REP");
        };
        assert_eq!(
            (r.local_comm_id, r.remote_comm_id),
            (0x163d_4967, 0x81ef_7fee)
        );
        assert_eq!(r.local_qpn.get(), 0x11);
        assert_eq!(r.local_ee_context, 0);
        assert_eq!(r.starting_psn.get(), 0x43_0ac5);
        assert_eq!((r.responder_resources, r.initiator_depth), (0, 0x80));
        assert_eq!(r.target_ack_delay, 15);
        assert_eq!(r.failover_accepted, 0);
        assert!(!r.end_to_end_flow_control && !r.srq);
        assert_eq!(r.rnr_retry_count, 0);
        assert_eq!(r.local_ca_guid, 0x5054_00ff_fe99_0001);
        assert_eq!(r.private_data.len(), private_data_size::REP);
        // RFC 8797 private data straight away: no CMA header in a REP.
        assert_eq!(&r.private_data[..8], &hex!("f6ab0e18 01000303"));
        emit_matches(&REP_MAD);
    }

    #[test]
    fn parse_rtu_dreq_drep_from_capture() {
        // Frames 28, 237 and 238 of captures/v3-inline.pcap: zero after the IDs.
        let rtu = mad_with(attr::RTU, &hex!("81ef7fee 163d4967"));
        let CmMessage::Rtu(m) = parse(&rtu) else {
            panic!()
        };
        assert_eq!(
            (m.local_comm_id, m.remote_comm_id),
            (0x81ef_7fee, 0x163d_4967)
        );
        assert_eq!(m.private_data.len(), private_data_size::RTU);
        emit_matches(&rtu);
        let dreq = mad_with(attr::DREQ, &hex!("81ef7fee 163d4967 00001100"));
        let CmMessage::Dreq(m) = parse(&dreq) else {
            panic!()
        };
        assert_eq!(m.remote_qpn_eecn, 0x11);
        assert_eq!(m.private_data.len(), private_data_size::DREQ);
        emit_matches(&dreq);
        let drep = mad_with(attr::DREP, &hex!("163d4967 81ef7fee"));
        let CmMessage::Drep(m) = parse(&drep) else {
            panic!()
        };
        assert_eq!(m.private_data.len(), private_data_size::DREP);
        emit_matches(&drep);
    }

    #[test]
    fn parse_rej_consumer_defined() {
        // REJ of a REQ, consumer reject (28), 2 bytes of ARI, private data 0xaa.
        let mut m = mad_with(attr::REJ, &hex!("00000000 81ef7fee 00 04 001c 1234"));
        m[24 + 84] = 0xaa;
        let CmMessage::Rej(r) = parse(&m) else {
            panic!()
        };
        assert_eq!(r.remote_comm_id, 0x81ef_7fee);
        assert_eq!(r.message_rejected, 0);
        assert_eq!(r.reject_info_length, 2);
        assert_eq!(r.reason, RejReason::CONSUMER_DEFINED);
        assert_eq!(r.reason.name(), "Consumer reject");
        assert_eq!(r.reason.to_string(), "Consumer reject (28)");
        assert_eq!(r.ari.len(), 72);
        assert_eq!(r.ari_used(), &hex!("1234"));
        assert_eq!(r.private_data.len(), private_data_size::REJ);
        assert_eq!(r.private_data[0], 0xaa);
        assert_eq!(RejReason(8).name(), "Invalid service ID");
        assert_eq!(RejReason(34).name(), "Unknown");
        emit_matches(&m);
    }

    #[test]
    fn parse_mra_sidr_lap_apr() {
        let m = mad_with(attr::MRA, &hex!("00000001 00000002 40 a8"));
        let CmMessage::Mra(r) = parse(&m) else {
            panic!()
        };
        assert_eq!((r.message_mraed, r.service_timeout), (1, 21));
        assert_eq!(r.private_data.len(), private_data_size::MRA);
        emit_matches(&m);

        let m = mad_with(
            attr::SIDR_REQ,
            &hex!("00000007 ffff 0000 00000000 01114e51"),
        );
        let CmMessage::SidrReq(r) = parse(&m) else {
            panic!()
        };
        assert_eq!(
            (r.request_id, r.p_key, r.service_id),
            (7, PKey::DEFAULT, ServiceId(0x0111_4e51))
        );
        assert_eq!(r.private_data.len(), private_data_size::SIDR_REQ);
        emit_matches(&m);

        let m = mad_with(
            attr::SIDR_REP,
            &hex!("00000007 00 00 0000 00123400 00000000 01114e51 80010000"),
        );
        let CmMessage::SidrRep(r) = parse(&m) else {
            panic!()
        };
        assert_eq!((r.status, r.qpn.get(), r.q_key), (0, 0x1234, 0x8001_0000));
        assert_eq!(r.service_id, ServiceId(0x0111_4e51));
        assert_eq!(r.additional_information.len(), 72);
        assert_eq!(r.private_data.len(), private_data_size::SIDR_REP);
        emit_matches(&m);

        let mut lap = hex!("00000001 00000002 00000000 000011a0 00000000 0001 0002").to_vec();
        lap.extend_from_slice(&[0x11; 16]);
        lap.extend_from_slice(&[0x22; 16]);
        lap.extend_from_slice(&hex!("123450 07 40 2a 98 98"));
        let m = mad_with(attr::LAP, &lap);
        let CmMessage::Lap(r) = parse(&m) else {
            panic!()
        };
        assert_eq!(
            (r.remote_qpn_eecn, r.remote_cm_response_timeout),
            (0x11, 0x14)
        );
        let p = r.alternate_path;
        assert_eq!((p.local_port_lid, p.remote_port_lid), (1, 2));
        assert_eq!((p.local_port_gid[0], p.remote_port_gid[15]), (0x11, 0x22));
        assert_eq!(p.flow_label, 0x12345);
        assert_eq!(
            (p.traffic_class, p.hop_limit, p.packet_rate),
            (7, 0x40, 0x2a)
        );
        assert_eq!((p.sl, p.subnet_local, p.local_ack_timeout), (9, true, 0x13));
        assert_eq!(r.private_data.len(), private_data_size::LAP);
        emit_matches(&m);

        let m = mad_with(attr::APR, &hex!("00000001 00000002 00 03"));
        let CmMessage::Apr(r) = parse(&m) else {
            panic!()
        };
        assert_eq!(r.ar_status, 3);
        assert_eq!(r.private_data.len(), private_data_size::APR);
        emit_matches(&m);
    }

    #[test]
    fn unknown_attribute_and_wrong_class() {
        let m = mad_with(attr::CLASS_PORT_INFO, &[1, 2, 3]);
        let msg = parse(&m);
        assert_eq!(
            msg,
            CmMessage::Unknown {
                attribute_id: 1,
                data: &m[24..]
            }
        );
        assert_eq!(msg.name(), "Unknown");
        emit_matches(&m);
        let (mut mad, data) = Mad::parse(&REQ_MAD).unwrap();
        mad.mgmt_class = 0x03;
        assert!(matches!(
            parse_cm(&mad, data),
            Err(Error::BadField {
                field: "mgmt_class",
                ..
            })
        ));
    }

    #[test]
    fn truncated_data() {
        let (mad, data) = Mad::parse(&REQ_MAD).unwrap();
        for cut in 0..MESSAGE_LEN {
            assert_eq!(
                parse_cm(&mad, &data[..cut]),
                Err(Error::Truncated {
                    layer: Layer::Cm,
                    offset: 0,
                    needed: 232,
                    available: cut
                })
            );
        }
    }

    /// The 232 bytes `msg` emits.
    fn emitted(msg: &CmMessage<'_>) -> [u8; MESSAGE_LEN] {
        let mut b = [0u8; MESSAGE_LEN];
        msg.emit(&mut b).unwrap();
        b
    }

    /// A message with every byte non-zero, so that a field read from the
    /// wrong place or past the cut shows.
    fn busy_message() -> [u8; MESSAGE_LEN] {
        let mut full = [0u8; MESSAGE_LEN];
        for (i, b) in full.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) | 1;
        }
        full
    }

    #[test]
    fn prefix_reads_what_was_captured() {
        let full = busy_message();
        for attr_id in [0x0001, 0x0010, 0x0011, 0x0012, 0x0013, 0x0014, 0x0015]
            .into_iter()
            .chain(0x0016..=0x001a)
        {
            let mad = Mad::cm(attr_id, 1);
            assert_eq!(parse_cm_prefix(&mad, &full), parse_cm(&mad, &full));
            let whole = emitted(&parse_cm(&mad, &full).unwrap());
            for cut in 0..MESSAGE_LEN {
                let got = parse_cm_prefix(&mad, &full[..cut]).unwrap();
                assert_eq!(got.attribute_id(), attr_id);
                // Each byte is the whole message's or zero (a field not
                // known), and nothing past the cut is known.
                let a = emitted(&got);
                for (j, (&x, &y)) in a.iter().zip(&whole).enumerate() {
                    assert!(x == y || x == 0, "{attr_id:#x} cut {cut} byte {j}");
                    assert!(j < cut || x == 0, "{attr_id:#x} cut {cut} byte {j}");
                }
                // The private data is borrowed from what was captured.
                let p = got.private_data();
                let captured = full[..cut].as_ptr_range();
                assert!(p.is_empty() || captured.contains(&p.as_ptr()));
                assert!(p.len() <= cut);
            }
        }
    }

    #[test]
    fn prefix_field_cut_through_reads_as_zero() {
        // Field starts (reserved gaps included) of the REQ up to its paths
        // and of the whole REP fixed part: a cut at a start keeps every
        // field before it; a cut inside a field is the same as a cut at its
        // start (the field reads as zero, as one wholly past the cut).
        let req = [
            0, 4, 8, 16, 24, 28, 32, 35, 36, 39, 40, 43, 44, 47, 48, 50, 51, 52,
        ];
        let rep = [0, 4, 8, 12, 15, 16, 19, 20, 23, 24, 25, 26, 27, 28, 36];
        let full = busy_message();
        for (attr_id, starts) in [(attr::REQ, &req[..]), (attr::REP, &rep[..])] {
            let mad = Mad::cm(attr_id, 1);
            for w in starts.windows(2) {
                let (start, end) = (w[0], w[1]);
                let mut zeroed = [0u8; MESSAGE_LEN];
                zeroed[..start].copy_from_slice(&full[..start]);
                let at_start = emitted(&parse_cm_prefix(&mad, &full[..start]).unwrap());
                assert_eq!(
                    at_start,
                    emitted(&parse_cm(&mad, &zeroed).unwrap()),
                    "{attr_id:#x} cut at field start {start}"
                );
                for cut in start..end {
                    let got = emitted(&parse_cm_prefix(&mad, &full[..cut]).unwrap());
                    assert_eq!(
                        got, at_start,
                        "{attr_id:#x} cut {cut} inside {start}..{end}"
                    );
                }
            }
        }
    }

    #[test]
    fn emit_errors() {
        let CmMessage::Req(r) = parse(&REQ_MAD) else {
            panic!()
        };
        let mut buf = [0u8; MESSAGE_LEN];
        assert_eq!(
            r.emit(&mut buf[..231]),
            Err(Error::Truncated {
                layer: Layer::Cm,
                offset: 0,
                needed: 232,
                available: 231
            })
        );
        let long = [0u8; 93];
        let too_long = CmReq {
            private_data: &long,
            ..r
        };
        assert!(matches!(
            too_long.emit(&mut buf),
            Err(Error::LimitExceeded { limit: 92, .. })
        ));
        let wide = CmReq {
            retry_count: 8,
            ..r
        };
        assert!(matches!(
            wide.emit(&mut buf),
            Err(Error::BadField {
                field: "retry_count",
                ..
            })
        ));
        // Short private data is padded with zeros.
        let short = CmReq {
            private_data: &[1, 2],
            ..r
        };
        short.emit(&mut buf).unwrap();
        assert_eq!(&buf[140..144], &[1, 2, 0, 0]);
    }

    proptest! {
        #[test]
        fn parse_never_panics(attr_id in 0u16..0x20, data in proptest::collection::vec(any::<u8>(), 0..240)) {
            let mad = Mad::cm(attr_id, 1);
            let _ = parse_cm(&mad, &data);
        }

        #[test]
        fn parse_emit_parse(attr_id in 0x10u16..0x1b, data in proptest::collection::vec(any::<u8>(), 232)) {
            let mad = Mad::cm(attr_id, 1);
            let msg = parse_cm(&mad, &data).unwrap();
            let mut buf = [0u8; MESSAGE_LEN];
            prop_assert_eq!(msg.emit(&mut buf), Ok(MESSAGE_LEN));
            prop_assert_eq!(parse_cm(&mad, &buf).unwrap(), msg);
        }
    }
}
