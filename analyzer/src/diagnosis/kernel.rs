//! The causes only the client's kernel sees: its MRs and its local
//! invalidations never reach the wire. The caller reads the kernel's
//! counters (`/proc/self/mountstats`, before and after the window) and
//! hands their deltas here as a [`KernelView`]; without one these causes
//! are "not checked", never silently absent.

use super::{Cause, CauseName, Diagnosis, Evidence, Peer};

/// `no_remote_invalidation`: local invalidations at least this share of
/// the chunk segments the kernel registered. Stock Linux 6.1 peers stay far
/// below it whenever each call's chunks share one R_key (`v42-reminv`: 0 of
/// 28, `parallel`: 3 of 483, `nconnect`: 3 of 147; the 3 are the mount's
/// multi-segment reply chunks) and reach it when they do not (`v3-ddp`, a
/// 256 KiB rsize: 52 of 52).
pub(super) const LOCAL_INV_SHARE: f64 = 0.5;
/// ... and at least this many (a mount's few reply chunks of several
/// segments are always invalidated locally).
pub(super) const LOCAL_INV_MIN: u64 = 20;

/// The client kernel's counters over the window, all its RDMA transports
/// summed (`xprt: rdma` fields, `mountstats` names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelView {
    /// The RDMA mounts read (`server:/export on /mnt`).
    pub mounts: Vec<String>,
    /// RDMA transports (`xprt:` lines) summed.
    pub transports: u64,
    /// No BEFORE: the counters run from each mount's start, so they hold
    /// what came before the capture too.
    pub since_mount: bool,
    /// `local_inv_needed`: chunk segments the client invalidated itself.
    pub local_inv_needed: Option<u64>,
    /// `read_chunk_count + write_chunk_count + reply_chunk_count`.
    pub chunk_segments: Option<u64>,
    /// `mrs_allocated`.
    pub mrs_allocated: Option<u64>,
    /// `mrs_orphaned`: MRs lost to a failed reset, gone from the pool.
    pub mrs_orphaned: Option<u64>,
    /// Transports whose `mrs_allocated` grew in the window while their
    /// `connect_count` did not: a refill after the pool ran dry (`None`
    /// without BEFORE: since mount, a connect's allocation and a refill
    /// cannot be told apart).
    pub refilled_transports: Option<u64>,
    /// Transports whose counters went backwards between BEFORE and AFTER
    /// (a remount): their window is not known and they were left out.
    pub reset_transports: u64,
}

/// Counters from the wire the kernel view is set against.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct WireChunks {
    /// RPCs answered whose call advertised chunks.
    pub rpcs: u64,
    /// Of them, those whose reply invalidated none (no Send With Invalidate).
    pub rpcs_without_reminv: u64,
    /// Chunk segments advertised.
    pub segments: u64,
    /// Segments the reply's Send With Invalidate named.
    pub remotely_invalidated: u64,
}

impl WireChunks {
    pub(super) fn merge(&mut self, o: &WireChunks) {
        self.rpcs += o.rpcs;
        self.rpcs_without_reminv += o.rpcs_without_reminv;
        self.segments += o.segments;
        self.remotely_invalidated += o.remotely_invalidated;
    }

    pub(super) fn note(&mut self, t: &crate::engine::Transaction) {
        if t.chunks.is_empty() || t.reply_frame.is_none() {
            return;
        }
        self.rpcs += 1;
        self.segments += t.chunks.len() as u64;
        let reminv = t.chunks.iter().filter(|s| s.remotely_invalidated).count() as u64;
        self.remotely_invalidated += reminv;
        if reminv == 0 && t.remote_invalidated_rkey.is_none() {
            self.rpcs_without_reminv += 1;
        }
    }
}

/// The causes named from the kernel view in `d` (none without one).
pub(super) fn causes(d: &Diagnosis) -> Vec<Cause> {
    let Some(k) = &d.kernel else {
        return Vec::new();
    };
    let mut v = Vec::new();
    v.extend(no_remote_invalidation(d, k));
    v.extend(mr_exhaustion(d, k));
    v
}

fn evidence(k: &KernelView, examples: Vec<String>) -> Evidence {
    Evidence {
        examples: k
            .mounts
            .iter()
            .map(|m| format!("mount {m}"))
            .chain(examples)
            .collect(),
        ..Evidence::default()
    }
}

fn window_words(k: &KernelView) -> &'static str {
    if k.since_mount {
        "since the mount (no --mountstats-before: what came before the capture is counted too)"
    } else {
        "over the window"
    }
}

fn no_remote_invalidation(d: &Diagnosis, k: &KernelView) -> Option<Cause> {
    let local = k.local_inv_needed?;
    let segments = k.chunk_segments?;
    if local < LOCAL_INV_MIN || (local as f64) < LOCAL_INV_SHARE * segments as f64 {
        return None;
    }
    let w = &d.wire_chunks;
    // Each RPC whose reply invalidated nothing needed at least one local
    // invalidation; the kernel's count bounds it from above.
    let rpcs = w.rpcs_without_reminv.min(local);
    let share_of_chunked = (w.rpcs > 0).then(|| rpcs as f64 / w.rpcs as f64);
    let measured = format!(
        "the client invalidated {local} of {segments} chunk segments itself {} ({:.0}%); on the wire {} RPCs with chunks, {} of them answered without Send With Invalidate ({}), {} of {} segments remotely invalidated. Each local invalidation is one LOCAL_INV work request, its completion interrupt and a context switch before the RPC completes (draft-cel-nfsv4-reminv-design, section 1)",
        window_words(k),
        100.0 * local as f64 / segments.max(1) as f64,
        w.rpcs,
        w.rpcs_without_reminv,
        share_of_chunked.map_or("?".to_string(), |s| format!("{:.0}%", 100.0 * s)),
        w.remotely_invalidated,
        w.segments,
    );
    let mut impact = super::rules::impact(d, measured, None, 0, Some(rpcs));
    // Extra work on each RPC, not a stall: ranked below the causes that
    // cost time by weighing it as the share of the RPCs that carry chunks.
    impact.score = share_of_chunked.unwrap_or(0.0) * (w.rpcs as f64 / d.ops.max(1) as f64);
    Some(Cause {
        cause: CauseName::NoRemoteInvalidation,
        impact,
        peer: Peer::Server,
        evidence: evidence(k, Vec::new()),
        advice: "the server did not Send With Invalidate (RFC 8797 4.2, RFC 8166 3.4.1): a Linux server (svcrdma) invalidates remotely only when the client's private data offers it and every chunk segment of the call has the same R_key. Offer it (a client of Linux 4.9 or later does) and keep each RPC's chunk to one registration: rsize/wsize at most the pages one MR maps (e.g. rsize=wsize=131072 on soft-RoCE, where a 256 KiB READ's write chunk takes two MRs), or a device with larger fast-register page lists".to_string(),
    })
}

fn mr_exhaustion(d: &Diagnosis, k: &KernelView) -> Option<Cause> {
    let orphaned = k.mrs_orphaned.unwrap_or(0);
    let refilled = k.refilled_transports.unwrap_or(0);
    if orphaned == 0 && refilled == 0 {
        return None;
    }
    let measured = format!(
        "the client's MR pool ran dry {}: {} of {} transports allocated MRs without reconnecting (rpcrdma_mrs_create, net/sunrpc/xprtrdma/verbs.c, allocates once per connect and again only when rpcrdma_mr_get found the pool empty and the RPC waited for buffer space; {} MRs allocated); {orphaned} MRs orphaned (an MR whose reset failed is dropped from the pool until the transport is rebuilt)",
        window_words(k),
        k.refilled_transports.map_or("?".to_string(), |r| r.to_string()),
        k.transports,
        k.mrs_allocated.map_or("?".to_string(), |a| a.to_string()),
    );
    // At least one RPC waited per refill; the kernel does not count them.
    let mut impact = super::rules::impact(d, measured, None, 0, None);
    impact.score = ((refilled + orphaned) as f64 / d.ops.max(1) as f64).min(1.0);
    Some(Cause {
        cause: CauseName::MrExhaustion,
        impact,
        peer: Peer::Client,
        evidence: evidence(k, Vec::new()),
        advice: "the client's memory registrations ran out: each transport allocates its device's max segments of MRs per connect and refills only when an RPC finds none. Fewer segments per RPC (smaller rsize/wsize), fewer RPCs in flight per transport (nconnect spreads them), or a device with more MRs; orphaned MRs point at a device or driver error (dmesg: \"FRWR reset failed\" / \"frwr_mr_put\")".to_string(),
    })
}
