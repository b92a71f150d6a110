//! The tracepoints the analyzer attaches to and relies on, by kernel name.

use super::format::FormatSet;
use super::load::Missing;

/// Tracepoint systems the live mode attaches to, in order.
pub const SYSTEMS: [&str; 4] = ["rpcrdma", "rdma_cma", "ib_cma", "sunrpc"];

/// The events of `sunrpc` the live mode wants: the ones that name the
/// program and procedure of a call. The system has over a hundred events,
/// most of them for every RPC over TCP too, so the rest stay detached.
pub const SUNRPC_EVENTS: [&str; 2] = ["rpc_request", "svc_process"];

/// The events the kernel view is built from, and what it cannot see on a
/// kernel that has none of an entry's names (they move between versions:
/// Linux 5.10 has no `svcrdma_decode_rseg`, and calls `svcrdma_wc_recv`
/// `svcrdma_wc_receive`).
pub const RELIED_ON: [(&str, &[&str], &str); 15] = [
    (
        "rpcrdma",
        &["xprtrdma_marshal"],
        "the client's calls (XIDs, how each was sent)",
    ),
    (
        "rpcrdma",
        &[
            "xprtrdma_chunk_read",
            "xprtrdma_chunk_write",
            "xprtrdma_chunk_reply",
        ],
        "the client's chunk segments",
    ),
    (
        "rpcrdma",
        &["xprtrdma_post_send"],
        "when the client sent each call",
    ),
    (
        "rpcrdma",
        &["xprtrdma_reply"],
        "the client's replies and the credits granted",
    ),
    (
        "rpcrdma",
        &["xprtrdma_mr_reminv"],
        "which R_Key the server invalidated remotely, on the client",
    ),
    (
        "rpcrdma",
        &["xprtrdma_decode_seg"],
        "the bytes the server wrote into the client's write and reply chunks",
    ),
    (
        "rpcrdma",
        &["svcrdma_wc_recv", "svcrdma_wc_receive"],
        "when each call reached the server",
    ),
    (
        "rpcrdma",
        &["svcrdma_decode_rqst"],
        "the server's calls (XIDs, credits requested)",
    ),
    (
        "rpcrdma",
        &["svcrdma_decode_rseg"],
        "the Read chunk segments of the server's calls (their handles; the bytes still show)",
    ),
    (
        "rpcrdma",
        &["svcrdma_decode_wseg"],
        "the write and reply chunk segments of the server's calls",
    ),
    (
        "rpcrdma",
        &["svcrdma_post_read_chunk", "svcrdma_post_chunk"],
        "when the server pulled Read chunks",
    ),
    (
        "rpcrdma",
        &["svcrdma_wc_read"],
        "when the server's Reads completed",
    ),
    (
        "rpcrdma",
        &["svcrdma_post_send"],
        "the server's replies and the R_Keys they invalidate",
    ),
    (
        "sunrpc",
        &["rpc_request"],
        "the procedure names of the client's calls",
    ),
    (
        "sunrpc",
        &["svc_process"],
        "the procedure names of the server's calls",
    ),
];

/// What the kernel view cannot see on a kernel with these `formats`: each
/// entry of [`RELIED_ON`] whose system is there but none of whose events is.
pub fn blind_spots(formats: &FormatSet, absent_systems: &[String]) -> Vec<Missing> {
    RELIED_ON
        .iter()
        .filter(|(sys, names, _)| {
            !absent_systems.iter().any(|a| a == sys)
                && !names.iter().any(|n| formats.by_name(sys, n).is_some())
        })
        .map(|(sys, names, lost)| Missing {
            what: format!("{sys}:{}", names.join("|")),
            why: format!("not on this kernel: {lost} stay unknown"),
        })
        .collect()
}

/// Whether live mode attaches to `system:event`.
pub fn wanted(system: &str, event: &str) -> bool {
    system != "sunrpc" || SUNRPC_EVENTS.contains(&event)
}

/// The events that fire on the normal path of every RPC (or every memory
/// registration, receive, send or chunk segment) and that the engine has
/// no use for. [`ProbeEvents::Used`] leaves them in the kernel: attached,
/// they would be most of the probes' cost. Any event not named here and not
/// used is rare (connections, errors, device changes) or new, and is
/// attached whole, so that an unknown event is counted, not missed.
pub const PER_RPC_UNUSED: [&str; 35] = [
    // The client: receives, sends, memory registration and invalidation.
    "xprtrdma_post_recv",
    "xprtrdma_post_recvs",
    "xprtrdma_wc_receive",
    "xprtrdma_wc_send",
    "xprtrdma_wc_fastreg",
    "xprtrdma_wc_li",
    "xprtrdma_wc_li_done",
    "xprtrdma_wc_li_wake",
    "xprtrdma_mr_get",
    "xprtrdma_mr_map",
    "xprtrdma_mr_unmap",
    "xprtrdma_mr_fastreg",
    "xprtrdma_mr_recycle",
    "xprtrdma_post_linv",
    "xprtrdma_fixup",
    "xprtrdma_defer_cmp",
    "xprtrdma_cb_call",
    "xprtrdma_cb_reply",
    // The server: receives, sends, DMA mapping, contexts.
    "svcrdma_post_recv",
    "svcrdma_wc_send",
    "svcrdma_wc_reply",
    "svcrdma_dma_map_page",
    "svcrdma_dma_unmap_page",
    "svcrdma_send_pullup",
    "svcrdma_cc_release",
    "svcrdma_read_finished",
    // Linux 5.10's server, one per chunk or segment it encodes or sends.
    "svcrdma_encode_read_chunk",
    "svcrdma_encode_rseg",
    "svcrdma_encode_write_chunk",
    "svcrdma_send_pzr",
    "svcrdma_send_read_chunk",
    "svcrdma_send_reply_chunk",
    "svcrdma_send_rseg",
    "svcrdma_send_write_chunk",
    "svcrdma_send_wseg",
];
