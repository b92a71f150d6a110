//! The engine's small enums as the JSON and its JSON Schema name them: one
//! snake_case string per variant, each described by its doc comment. The
//! engine keeps its own `as_str` names for the text output and filters;
//! `output_enums_name_variants_as_the_engine_does` keeps the two in step.

use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::{
    AtFault, Carries, ChunkKind, CmMsg, CmState, Harm, Kind, Origin, Role, Severity, Transfer,
};

/// How a call or a reply travelled.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "Transfer", rename_all = "snake_case")]
pub enum TransferView {
    /// The whole message in one Send.
    Inline,
    /// Call with read chunks (DDP of call data by RDMA Read).
    ReadChunks,
    /// Call in a position-zero read chunk (Long Call), RDMA_NOMSG.
    LongCall,
    /// Reply with data moved into write chunks by RDMA Write.
    WriteChunks,
    /// Reply in the reply chunk (Long Reply), RDMA_NOMSG.
    ReplyChunk,
    /// RDMA_ERROR instead of a reply.
    Error,
    /// Not seen (no reply).
    None,
    /// Not known: the capture cut the header that says (a snap length).
    Unknown,
}

impl From<Transfer> for TransferView {
    fn from(x: Transfer) -> Self {
        match x {
            Transfer::Inline => TransferView::Inline,
            Transfer::ReadChunks => TransferView::ReadChunks,
            Transfer::LongCall => TransferView::LongCall,
            Transfer::WriteChunks => TransferView::WriteChunks,
            Transfer::ReplyChunk => TransferView::ReplyChunk,
            Transfer::Error => TransferView::Error,
            Transfer::None => TransferView::None,
            Transfer::Unknown => TransferView::Unknown,
        }
    }
}

/// Back to the engine's enum, whose `as_str` the text output and the
/// dataset use.
impl From<TransferView> for Transfer {
    fn from(x: TransferView) -> Self {
        match x {
            TransferView::Inline => Transfer::Inline,
            TransferView::ReadChunks => Transfer::ReadChunks,
            TransferView::LongCall => Transfer::LongCall,
            TransferView::WriteChunks => Transfer::WriteChunks,
            TransferView::ReplyChunk => Transfer::ReplyChunk,
            TransferView::Error => Transfer::Error,
            TransferView::None => Transfer::None,
            TransferView::Unknown => Transfer::Unknown,
        }
    }
}

/// Which list a segment was advertised in.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "ChunkKind", rename_all = "snake_case")]
pub enum ChunkKindView {
    /// Read list (the responder RDMA Reads it).
    Read,
    /// Write list (the responder RDMA Writes into it).
    Write,
    /// Reply chunk.
    Reply,
}

impl From<ChunkKind> for ChunkKindView {
    fn from(x: ChunkKind) -> Self {
        match x {
            ChunkKind::Read => ChunkKindView::Read,
            ChunkKind::Write => ChunkKindView::Write,
            ChunkKind::Reply => ChunkKindView::Reply,
        }
    }
}

/// Back to the engine's enum, whose `as_str` the text output and the
/// dataset use.
impl From<ChunkKindView> for ChunkKind {
    fn from(x: ChunkKindView) -> Self {
        match x {
            ChunkKindView::Read => ChunkKind::Read,
            ChunkKindView::Write => ChunkKind::Write,
            ChunkKindView::Reply => ChunkKind::Reply,
        }
    }
}

/// What a connection carries, as far as the capture tells.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "Carries", rename_all = "snake_case")]
pub enum CarriesView {
    /// RPC-over-RDMA: said by the CM exchange (RDMA-CM port 20049, RFC 8797
    /// private data) or by a message that decoded as one.
    RpcRdma,
    /// Something else: another RDMA-CM port and no RFC 8797 private data,
    /// or Sends that are not RPC-over-RDMA version 1.
    Other,
}

impl From<Carries> for CarriesView {
    fn from(x: Carries) -> Self {
        match x {
            Carries::RpcRdma => CarriesView::RpcRdma,
            Carries::Other => CarriesView::Other,
        }
    }
}

/// Back to the engine's enum, whose `as_str` the text output and the
/// dataset use.
impl From<CarriesView> for Carries {
    fn from(x: CarriesView) -> Self {
        match x {
            CarriesView::RpcRdma => Carries::RpcRdma,
            CarriesView::Other => Carries::Other,
        }
    }
}

/// What a kind of finding costs when it is real (`docs/findings.md`).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "Harm", rename_all = "snake_case")]
pub enum HarmView {
    /// Nothing: worth knowing, or an artefact of the capture.
    None,
    /// Slower I/O, nothing lost.
    Performance,
    /// Data or replies may be wrong, lost, or the connection may die.
    Correctness,
    /// Peers that follow the RFC to the letter may not work together.
    Interoperability,
}

impl From<Harm> for HarmView {
    fn from(x: Harm) -> Self {
        match x {
            Harm::None => HarmView::None,
            Harm::Performance => HarmView::Performance,
            Harm::Correctness => HarmView::Correctness,
            Harm::Interoperability => HarmView::Interoperability,
        }
    }
}

/// Where the fix for a kind of finding belongs (`docs/findings.md`).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "AtFault", rename_all = "snake_case")]
pub enum AtFaultView {
    /// The requester (the NFS client).
    Client,
    /// The responder (the NFS server).
    Server,
    /// Either peer: the frames say which.
    Either,
    /// The network between them.
    Fabric,
    /// No peer: how or where the capture was taken, or the tool's limits.
    Capture,
}

impl From<AtFault> for AtFaultView {
    fn from(x: AtFault) -> Self {
        match x {
            AtFault::Client => AtFaultView::Client,
            AtFault::Server => AtFaultView::Server,
            AtFault::Either => AtFaultView::Either,
            AtFault::Fabric => AtFaultView::Fabric,
            AtFault::Capture => AtFaultView::Capture,
        }
    }
}

/// How much an anomaly matters.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "Severity", rename_all = "snake_case")]
pub enum SeverityView {
    /// Worth knowing; often a capture artefact.
    Info,
    /// Unusual or degraded, but within what peers may do.
    Warning,
    /// A peer broke a MUST of the RFCs.
    Error,
}

impl From<Severity> for SeverityView {
    fn from(x: Severity) -> Self {
        match x {
            Severity::Info => SeverityView::Info,
            Severity::Warning => SeverityView::Warning,
            Severity::Error => SeverityView::Error,
        }
    }
}

/// Back to the engine's enum, whose `as_str` the text output and the
/// dataset use.
impl From<SeverityView> for Severity {
    fn from(x: SeverityView) -> Self {
        match x {
            SeverityView::Info => Severity::Info,
            SeverityView::Warning => Severity::Warning,
            SeverityView::Error => Severity::Error,
        }
    }
}

/// Who saw a transaction or an anomaly: the wire, or one side's kernel
/// through the probes.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename = "Origin", rename_all = "snake_case")]
pub enum OriginView {
    /// Packet capture.
    Wire,
    /// The client's kernel (`xprtrdma_*` probes).
    ClientProbes,
    /// The server's kernel (`svcrdma_*` probes).
    ServerProbes,
}

impl From<Origin> for OriginView {
    fn from(x: Origin) -> Self {
        match x {
            Origin::Wire => OriginView::Wire,
            Origin::ClientProbes => OriginView::ClientProbes,
            Origin::ServerProbes => OriginView::ServerProbes,
        }
    }
}

/// Back to the engine's enum, whose `as_str` the text output and the
/// dataset use.
impl From<OriginView> for Origin {
    fn from(x: OriginView) -> Self {
        match x {
            OriginView::Wire => Origin::Wire,
            OriginView::ClientProbes => Origin::ClientProbes,
            OriginView::ServerProbes => Origin::ServerProbes,
        }
    }
}

/// Which end of an RPC-over-RDMA connection a queue pair is.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "Role", rename_all = "snake_case")]
pub enum RoleView {
    /// The requester (NFS client): sent the CM REQ, sends calls.
    Client,
    /// The responder (NFS server).
    Server,
}

impl From<Role> for RoleView {
    fn from(x: Role) -> Self {
        match x {
            Role::Client => RoleView::Client,
            Role::Server => RoleView::Server,
        }
    }
}

/// Back to the engine's enum, whose `as_str` the text output and the
/// dataset use.
impl From<RoleView> for Role {
    fn from(x: RoleView) -> Self {
        match x {
            RoleView::Client => Role::Client,
            RoleView::Server => Role::Server,
        }
    }
}

/// A CM message the connection's state follows (IBA 12.6).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "CmMsg")]
pub enum CmMsgView {
    /// ConnectRequest.
    #[serde(rename = "REQ")]
    Req,
    /// ConnectReply.
    #[serde(rename = "REP")]
    Rep,
    /// ReadyToUse.
    #[serde(rename = "RTU")]
    Rtu,
    /// ConnectReject.
    #[serde(rename = "REJ")]
    Rej,
    /// DisconnectRequest.
    #[serde(rename = "DREQ")]
    Dreq,
    /// DisconnectReply.
    #[serde(rename = "DREP")]
    Drep,
    /// iWARP: MPA Request (RFC 5044 7.1).
    #[serde(rename = "MPA-REQ")]
    MpaRequest,
    /// iWARP: MPA Reply accepting the connection.
    #[serde(rename = "MPA-REP")]
    MpaReply,
    /// iWARP: MPA Reply with the Reject flag.
    #[serde(rename = "MPA-REJ")]
    MpaReject,
    /// iWARP: TCP FIN.
    #[serde(rename = "FIN")]
    Fin,
    /// iWARP: TCP RST.
    #[serde(rename = "RST")]
    Rst,
}

impl From<CmMsg> for CmMsgView {
    fn from(x: CmMsg) -> Self {
        match x {
            CmMsg::Req => CmMsgView::Req,
            CmMsg::Rep => CmMsgView::Rep,
            CmMsg::Rtu => CmMsgView::Rtu,
            CmMsg::Rej => CmMsgView::Rej,
            CmMsg::Dreq => CmMsgView::Dreq,
            CmMsg::Drep => CmMsgView::Drep,
            CmMsg::MpaRequest => CmMsgView::MpaRequest,
            CmMsg::MpaReply => CmMsgView::MpaReply,
            CmMsg::MpaReject => CmMsgView::MpaReject,
            CmMsg::Fin => CmMsgView::Fin,
            CmMsg::Rst => CmMsgView::Rst,
        }
    }
}

/// Back to the engine's enum, whose `as_str` the text output and the
/// dataset use.
impl From<CmMsgView> for CmMsg {
    fn from(x: CmMsgView) -> Self {
        match x {
            CmMsgView::Req => CmMsg::Req,
            CmMsgView::Rep => CmMsg::Rep,
            CmMsgView::Rtu => CmMsg::Rtu,
            CmMsgView::Rej => CmMsg::Rej,
            CmMsgView::Dreq => CmMsg::Dreq,
            CmMsgView::Drep => CmMsg::Drep,
            CmMsgView::MpaRequest => CmMsg::MpaRequest,
            CmMsgView::MpaReply => CmMsg::MpaReply,
            CmMsgView::MpaReject => CmMsg::MpaReject,
            CmMsgView::Fin => CmMsg::Fin,
            CmMsgView::Rst => CmMsg::Rst,
        }
    }
}

/// Where the CM exchange of a connection stands.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "CmState", rename_all = "snake_case")]
pub enum CmStateView {
    /// The capture started after the CM exchange: parameters are unknown.
    NotSeen,
    /// REQ seen.
    Requested,
    /// REP seen.
    Replied,
    /// RTU seen.
    Established,
    /// REJ seen.
    Rejected,
    /// DREQ seen.
    Disconnecting,
    /// DREP seen.
    Closed,
}

impl From<CmState> for CmStateView {
    fn from(x: CmState) -> Self {
        match x {
            CmState::NotSeen => CmStateView::NotSeen,
            CmState::Requested => CmStateView::Requested,
            CmState::Replied => CmStateView::Replied,
            CmState::Established => CmStateView::Established,
            CmState::Rejected => CmStateView::Rejected,
            CmState::Disconnecting => CmStateView::Disconnecting,
            CmState::Closed => CmStateView::Closed,
        }
    }
}

/// Back to the engine's enum, whose `as_str` the text output and the
/// dataset use.
impl From<CmStateView> for CmState {
    fn from(x: CmStateView) -> Self {
        match x {
            CmStateView::NotSeen => CmState::NotSeen,
            CmStateView::Requested => CmState::Requested,
            CmStateView::Replied => CmState::Replied,
            CmStateView::Established => CmState::Established,
            CmStateView::Rejected => CmState::Rejected,
            CmStateView::Disconnecting => CmState::Disconnecting,
            CmStateView::Closed => CmState::Closed,
        }
    }
}

/// Writes [`KindView`] from the engine's table of kinds: the JSON name of
/// each kind is its stable name, its schema description its doc comment.
macro_rules! kind_view {
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident = $name:literal { $($row:tt)* }
    ),* $(,)?) => {
        /// What was found. The `as_str` names are a stable interface.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
        #[serde(rename = "Kind")]
        pub enum KindView {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $name)]
                $kind,
            )*
        }

        impl From<Kind> for KindView {
            fn from(k: Kind) -> Self {
                match k {
                    $(Kind::$kind => KindView::$kind,)*
                }
            }
        }
    };
}

crate::engine::with_kind_table!(kind_view);

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(v: T) -> String {
        serde_json::to_value(v)
            .expect("a name")
            .as_str()
            .expect("a string")
            .to_string()
    }

    /// The JSON names are the engine's `as_str` names, which the text
    /// output, `--filter` and the dataset use: one word per variant
    /// everywhere.
    #[test]
    fn output_enums_name_variants_as_the_engine_does() {
        use Transfer::*;
        for t in [
            Inline,
            ReadChunks,
            LongCall,
            WriteChunks,
            ReplyChunk,
            Error,
            None,
            Unknown,
        ] {
            assert_eq!(json(TransferView::from(t)), t.as_str());
            assert_eq!(Transfer::from(TransferView::from(t)), t);
        }
        for o in [Origin::Wire, Origin::ClientProbes, Origin::ServerProbes] {
            assert_eq!(json(OriginView::from(o)), o.as_str());
        }
        for s in [Severity::Info, Severity::Warning, Severity::Error] {
            assert_eq!(json(SeverityView::from(s)), s.as_str());
        }
        for k in Kind::ALL {
            assert_eq!(json(KindView::from(k)), k.as_str());
        }
        for c in [Carries::RpcRdma, Carries::Other] {
            assert_eq!(json(CarriesView::from(c)), c.as_str());
        }
        use CmState::*;
        let states = [
            NotSeen,
            Requested,
            Replied,
            Established,
            Rejected,
            Disconnecting,
            Closed,
        ];
        for c in states {
            assert_eq!(json(CmStateView::from(c)), c.as_str());
        }
        use CmMsg::*;
        for m in [Req, Rep, Rtu, Rej, Dreq, Drep] {
            assert_eq!(json(CmMsgView::from(m)), m.as_str());
        }
        assert_eq!(json(RoleView::from(Role::Client)), "client");
        assert_eq!(json(RoleView::from(Role::Server)), "server");
        let chunks = [
            (ChunkKind::Read, "read"),
            (ChunkKind::Write, "write"),
            (ChunkKind::Reply, "reply"),
        ];
        for (k, name) in chunks {
            assert_eq!(json(ChunkKindView::from(k)), name);
        }
    }
}
