//! Ids and small values the JSON writes as strings in the engine's own
//! notation (`Display`): a connection, a port's address, a QP, an NFS file
//! handle, a `stable_how`. The schema's descriptions and patterns are here.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

use crate::engine::{Addr, ConnId, FileHandle, QpKey, Stable};

/// Writes a value as its `Display` text.
macro_rules! as_text {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&self.0)
            }
        }
    };
}

/// A port as the wire names it (`10.0.0.1`, `lid:3`, `gid:[fe80::1]`).
#[derive(Debug, Clone, Copy)]
pub struct AddrView(pub Addr);

as_text!(AddrView);

impl JsonSchema for AddrView {
    fn schema_name() -> Cow<'static, str> {
        "Addr".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A port as the wire names it: an IP address (RoCEv2), `lid:` and the decimal LID (native InfiniBand), or `gid:` and the GID in IPv6 notation within brackets (RoCEv1).",
            "type": "string"
        })
    }
}

/// A queue pair as the wire names it: the port's address and its QP number.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename = "QpKey")]
#[schemars(deny_unknown_fields)]
pub struct QpKeyView {
    /// The port that owns the QP.
    pub addr: AddrView,
    /// QP number; on iWARP (`fabric` "iWARP"), where the TCP connection is
    /// the queue pair, the endpoint's TCP port.
    pub qpn: u32,
}

impl From<QpKey> for QpKeyView {
    fn from(q: QpKey) -> Self {
        QpKeyView {
            addr: AddrView(q.addr),
            qpn: q.qpn,
        }
    }
}

/// An NFS file handle in lowercase hex.
#[derive(Debug, Clone, Copy)]
pub struct FileHandleView<'a>(pub &'a FileHandle);

as_text!(FileHandleView<'_>);

impl JsonSchema for FileHandleView<'_> {
    fn schema_name() -> Cow<'static, str> {
        "FileHandle".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An NFS file handle in lowercase hex (at most 128 bytes: NFSv3's are at most 64).",
            "type": "string",
            "pattern": "^([0-9a-f]{2}){0,128}$"
        })
    }
}

/// A `stable_how` by name.
#[derive(Debug, Clone, Copy)]
pub struct StableView(pub Stable);

as_text!(StableView);

impl JsonSchema for StableView {
    fn schema_name() -> Cow<'static, str> {
        "StableHow".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "`stable_how` (RFC 1813 3.3.7, RFC 7530 16.36): `UNSTABLE`, `DATA_SYNC`, `FILE_SYNC`, or `stable_how N` for a value no RFC defines.",
            "type": "string"
        })
    }
}

/// A connection, `c` and its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConnIdView(pub ConnId);

as_text!(ConnIdView);

impl JsonSchema for ConnIdView {
    fn schema_name() -> Cow<'static, str> {
        "ConnId".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A connection, `c` and its number in order of discovery.",
            "type": "string",
            "pattern": "^c[0-9]+$"
        })
    }
}

/// The text output writes the same name as the JSON.
impl std::fmt::Display for ConnIdView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
