//! What the capture holds that this version recognises as RDMA traffic but
//! cannot decode (iWARP, RoCEv2 on another UDP port): the report's
//! `not_decoded` section, in JSON and text, so that such a capture never
//! reads as a clean, empty one. The exit status says it too (2, as for an
//! input not read whole).

use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::NotDecoded;

/// One kind of traffic recognised and not decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NotDecodedRow {
    /// `iwarp_tcp_20049`, `iwarp_mpa_setup` or `rocev2_other_port`.
    pub kind: &'static str,
    /// Frames of this kind.
    pub frames: u64,
    /// What it is, and what to do to have it analysed.
    pub what_to_do: String,
}

/// The rows for the frames counted in `n`; empty when none.
pub fn rows(n: &NotDecoded) -> Vec<NotDecodedRow> {
    let mut rows = Vec::new();
    if n.mpa_setup > 0 {
        rows.push(NotDecodedRow {
            kind: "iwarp_mpa_setup",
            frames: n.mpa_setup,
            what_to_do: "iWARP MPA Request/Reply frames (\"MPA ID Req/Rep Frame\", RFC 5044, RFC 6581) \
                         that do not parse: their connections are not analysed; the malformed finding of each says why"
                .to_string(),
        });
    }
    if n.tcp_20049 > 0 {
        rows.push(NotDecodedRow {
            kind: "iwarp_tcp_20049",
            frames: n.tcp_20049,
            what_to_do: "TCP frames to or from port 20049, NFS/RDMA over iWARP (MPA/DDP/RDMAP), \
                         in which no MPA frame or FPDU was found: a stream the capture joined mid-FPDU and never \
                         found framing in again, MPA markers, or another protocol on the port; capture from the \
                         mount on to have it analysed"
                .to_string(),
        });
    }
    if n.rocev2_other_port > 0 {
        let port = n
            .rocev2_port
            .map_or_else(|| "another port".to_string(), |p| p.to_string());
        rows.push(NotDecodedRow {
            kind: "rocev2_other_port",
            frames: n.rocev2_other_port,
            what_to_do: format!(
                "RoCEv2 packets (valid ICRC) on UDP port {port}, not the RoCEv2 port analysed: \
                 run again with --rocev2-port {port}"
            ),
        });
    }
    rows
}

/// The text lines for the report's header; empty when nothing was found.
pub fn text(n: &NotDecoded) -> String {
    let mut s = String::new();
    for r in rows(n) {
        s.push_str(&format!(
            "NOT DECODED: {} frames: {}\n",
            r.frames, r.what_to_do
        ));
    }
    s
}
