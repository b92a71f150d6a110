//! Formatting helpers shared by the screens.

use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders};

use crate::engine::{ChunkKind, Kind, Severity, Transfer};

/// The block every screen draws its main table in.
pub fn block(title: String) -> Block<'static> {
    Block::default().borders(Borders::ALL).title(title)
}

/// Style of the header row.
pub fn header_style() -> Style {
    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
}

/// Style of the selected row.
pub fn selected_style() -> Style {
    Style::new()
        .bg(Color::DarkGray)
        .add_modifier(Modifier::BOLD)
}

/// `1.5 KiB`, `12.0 MiB`.
pub fn bytes(n: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// A duration in ns as `812 ns`, `41.8 µs`, `43.25 ms`, `1.234 s`.
pub fn dur(ns: u64) -> String {
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

/// `per second` rate of `n` over `ns`.
pub fn rate(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

/// Short transfer names for narrow tables.
pub fn transfer_short(t: Transfer) -> &'static str {
    match t {
        Transfer::Inline => "inline",
        Transfer::ReadChunks => "read",
        Transfer::LongCall => "long",
        Transfer::WriteChunks => "write",
        Transfer::ReplyChunk => "reply",
        Transfer::Error => "error",
        Transfer::Unknown => "?",
        Transfer::None => "-",
    }
}

/// Name of a chunk list.
pub fn chunk_kind(k: ChunkKind) -> &'static str {
    match k {
        ChunkKind::Read => "read",
        ChunkKind::Write => "write",
        ChunkKind::Reply => "reply",
    }
}

/// Colour of a severity.
pub fn severity_style(s: Severity) -> Style {
    match s {
        Severity::Error => Style::new().fg(Color::Red),
        Severity::Warning => Style::new().fg(Color::Yellow),
        Severity::Info => Style::new().fg(Color::Gray),
    }
}

/// Name of a severity.
pub fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// What an anomaly kind means, for the user.
pub fn explain(k: Kind) -> &'static str {
    match k {
        Kind::CreditOverrun => "The requester had more calls outstanding than the responder granted credits; the responder may drop them or the connection.",
        Kind::ZeroCreditGrant => "A reply granted zero credits: the requester can send nothing more and the connection deadlocks.",
        Kind::InlineThresholdExceeded => "A Send larger than the receiver's inline threshold (negotiated in the CM private data, 1024 B by default); the receive buffer overflows.",
        Kind::RemoteInvalidationNotNegotiated => "Send With Invalidate on a connection where the peers did not both set R in their CM private data.",
        Kind::InvalidatedForeignStag => "Send With Invalidate named an STag that this XID did not advertise: a region still in use may have been invalidated.",
        Kind::ShortHeader => "An RPC-over-RDMA message shorter than the fixed 28-byte header.",
        Kind::VersionMismatch => "rdma_vers is not 1.",
        Kind::ErrVers => "The peer answered RDMA_ERROR ERR_VERS: it does not speak this version.",
        Kind::ErrChunk => "The peer answered RDMA_ERROR ERR_CHUNK: a chunk list could not be processed.",
        Kind::XidMismatch => "The RPC-over-RDMA header's XID differs from the RPC message it carries.",
        Kind::BadProc => "Unknown rdma_proc value.",
        Kind::NomsgWithoutChunks => "RDMA_NOMSG without a position-zero read chunk or a reply chunk: there is no message anywhere.",
        Kind::MsgpUsed => "RDMA_MSGP, which RFC 8166 no longer supports.",
        Kind::DoneUsed => "RDMA_DONE, which RFC 8166 no longer supports.",
        Kind::ReadListInReply => "A reply carried a read list; only calls may.",
        Kind::ErrorFromRequester => "The requester sent RDMA_ERROR; only responders may.",
        Kind::RdmaOutsideChunk => "An RDMA Read or Write touched an R_Key or address range no outstanding call advertised.",
        Kind::IcrcMismatch => "The invariant CRC does not match: corruption on the wire or in the capture.",
        Kind::Malformed => "A header the dissectors could not parse.",
        Kind::CallWithoutReply => "A call still unanswered when the capture ended.",
        Kind::ReplyWithoutCall => "A reply whose call is not in the capture (often: the capture started late).",
        Kind::Retransmission => "A request packet sequence number seen again: a transport retransmission.",
        Kind::Nak => "The receiver NAKed a packet (PSN sequence error, remote access error, ...).",
        Kind::StateEvicted => "A table reached its cap and forgot its oldest entry; raise the cap to keep everything.",
        Kind::ConnectionRejected => "The RDMA-CM connection request was rejected.",
        Kind::CmBadTransition => "A CM message its connection's state did not allow (an RTU before the REP, a DREP without a DREQ, ...): MADs the capture missed, or a peer's CM gone wrong.",
        Kind::XidReused => "An XID sent again while its earlier call still waited for a reply: both are kept, and replies pair with them in order.",
        Kind::TimeWentBackwards => "A reply stamped before its call: the capture's clock went backwards, so the latency is unknown.",
        Kind::PsnOutOfSequence => "A request packet far from its queue pair's PSN sequence that the next packets do not follow: another incarnation of the QP, or a stray frame.",
        Kind::WrongPeer => "A frame to a known queue pair from a host that is not its connection's peer: not part of the connection.",
        Kind::IpFragment => "A RoCEv2 packet in IPv4 fragments: RoCEv2 packets are not to be fragmented.",
        Kind::ReadSpanPsnReused => "A request numbered with a PSN that the RDMA READ before it still holds: a READ takes one PSN per response packet.",
        Kind::AckPsnNotSent => "An ACK for a PSN that no request of its queue pair was sent with.",
        Kind::CallRetransmitted => "A call sent again on a new connection after the one it waited on was torn down: one operation, the application waited across the outage.",
    }
}

/// First row to show so that `sel` is visible in `page` rows, starting from
/// the remembered `top` (the terminal may be smaller than `UiState` thinks).
pub fn window(top: usize, sel: usize, page: usize) -> usize {
    top.min(sel).max((sel + 1).saturating_sub(page.max(1)))
}
