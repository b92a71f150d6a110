//! What the findings could not be checked on. "Anomalies: none" on a
//! capture cut to 64 bytes a frame would read as "the peers behaved",
//! while the checks that rest on the CM private data or on what the snap
//! length cut were never made: the report says which, and why.

use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::{Carries, Connection, Kind, Totals};

/// The kinds checked against what the CM exchange negotiated (RFC 8797):
/// without it there is no threshold or R bit to hold a message against.
pub const NEGOTIATED: [Kind; 2] = [
    Kind::InlineThresholdExceeded,
    Kind::RemoteInvalidationNotNegotiated,
];

/// Connections named in the text at most; JSON lists every one.
const NAMED: usize = 8;

/// One reason some findings were not checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NotChecked {
    /// Why, a stable name: `cm_cut` (the snap length cut the CM exchange's
    /// private data), `no_cm` (the capture has no CM exchange for the
    /// connection: it was up before the capture began), `frames_cut` (the
    /// snap length cut frames, so what they carried was not read).
    pub reason: &'static str,
    /// The kinds not checked; null for `frames_cut`: every check of what
    /// the cut frames carried past the cut (RPC-over-RDMA and NFS headers,
    /// chunk lists, ICRC), whichever kinds those would have been.
    pub kinds: Option<Vec<&'static str>>,
    /// The connections it concerns (`c1`); empty for `frames_cut`.
    pub connections: Vec<String>,
    /// Frames concerned: the cut frames for `frames_cut`, else null.
    pub frames: Option<u64>,
    /// The same, in a sentence.
    pub text: String,
}

/// What could not be checked, over the connections the report shows.
pub fn not_checked<'a>(
    connections: impl Iterator<Item = &'a Connection>,
    totals: &Totals,
) -> Vec<NotChecked> {
    let (mut cut, mut none) = (Vec::new(), Vec::new());
    for c in connections.filter(|c| c.carries == Some(Carries::RpcRdma) && c.negotiated.is_none()) {
        if c.cm_cut {
            cut.push(c.id.to_string());
        } else {
            none.push(c.id.to_string());
        }
    }
    let mut out = Vec::new();
    let kinds: Vec<&'static str> = NEGOTIATED.iter().map(|k| k.as_str()).collect();
    for (reason, conns, why) in [
        (
            "cm_cut",
            cut,
            "the negotiation is unknown (the capture's snap length cut the CM private data)",
        ),
        (
            "no_cm",
            none,
            "the negotiation is unknown (the capture has no CM exchange for it: up before the capture began)",
        ),
    ] {
        if conns.is_empty() {
            continue;
        }
        out.push(NotChecked {
            reason,
            kinds: Some(kinds.clone()),
            text: format!("{} on {}: {why}", kinds.join(", "), named(&conns)),
            connections: conns,
            frames: None,
        });
    }
    if totals.cut_frames > 0 {
        out.push(NotChecked {
            reason: "frames_cut",
            kinds: None,
            connections: Vec::new(),
            frames: Some(totals.cut_frames),
            text: format!(
                "what {} {} carried past the capture's snap length (RPC-over-RDMA and NFS headers, chunk lists, the ICRC): the findings about it",
                totals.cut_frames,
                if totals.cut_frames == 1 { "frame" } else { "frames" }
            ),
        });
    }
    out
}

/// `c1, c2, … (12 connections)`: the first few, and how many in all.
fn named(conns: &[String]) -> String {
    if conns.len() <= NAMED {
        return conns.join(", ");
    }
    format!(
        "{}, … ({} connections)",
        conns[..NAMED].join(", "),
        conns.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_connections_are_named_by_the_first_few_and_counted() {
        let conns: Vec<String> = (1..=12).map(|i| format!("c{i}")).collect();
        assert_eq!(
            named(&conns),
            "c1, c2, c3, c4, c5, c6, c7, c8, … (12 connections)"
        );
        assert_eq!(named(&conns[..2]), "c1, c2");
    }

    #[test]
    fn a_whole_capture_with_its_negotiation_has_nothing_unchecked() {
        assert!(not_checked(std::iter::empty(), &Totals::default()).is_empty());
    }

    #[test]
    fn cut_frames_are_said_with_their_count() {
        let totals = Totals {
            cut_frames: 1,
            ..Totals::default()
        };
        let n = not_checked(std::iter::empty(), &totals);
        assert_eq!(n.len(), 1);
        assert_eq!((n[0].reason, n[0].frames), ("frames_cut", Some(1)));
        assert!(
            n[0].text.starts_with("what 1 frame carried"),
            "{}",
            n[0].text
        );
    }
}
