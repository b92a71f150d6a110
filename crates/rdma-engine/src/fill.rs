//! Record fields filled from what the dissectors decoded: a call's program
//! and procedure names, its NFS status, its RPC reply status. These are
//! the transaction's data (filters, metrics and the dataset read them), not
//! its presentation, which is the output layer's.

use rdma_dissectors::nfs;

use super::model::Transaction;

/// Fills program, version and procedure of a call from its RPC header.
pub(super) fn fill_call(
    rec: &mut Transaction,
    prog: u32,
    vers: u32,
    proc: u32,
    args: &[u8],
    ddp: nfs::Ddp<'_>,
) {
    rec.program = Some(prog);
    rec.version = Some(vers);
    rec.proc = Some(proc);
    rec.program_name = nfs::program_name(prog);
    let summary = nfs::describe_call_with(prog, vers, proc, args, ddp);
    // A CB_COMPOUND carries one too, but its program numbers its own
    // versions: the label would read as a version of NFS that is not one.
    rec.minorversion = summary.minorversion.filter(|_| prog == nfs::NFS_PROGRAM);
    let mut name = summary.procedure.map(str::to_string);
    let ops: Vec<&str> = summary
        .ops()
        .iter()
        .filter_map(|&op| summary.op_name(op))
        .collect();
    if !ops.is_empty() {
        let mut s = format!(
            "{}({}",
            name.as_deref().unwrap_or("COMPOUND"),
            ops.join(",")
        );
        if !summary.ops_complete {
            s.push_str(",...");
        }
        s.push(')');
        name = Some(s);
    }
    rec.procedure = name.or_else(|| Some(format!("proc {proc}")));
    if prog == nfs::NFS_PROGRAM {
        super::nfsio::fill_call(rec, vers, proc, args, ddp);
    }
}

/// Fills the NFS status of a reply to an NFSv3 or NFSv4 call (the call's
/// program, version and procedure are already in `rec`): its symbolic name
/// and, for a failed COMPOUND, the op that failed. Left `None` when the
/// reply carries no status or the capture cut it before the status.
pub(super) fn fill_nfs_status(rec: &mut Transaction, results: &[u8], ddp: nfs::Ddp<'_>) {
    let (Some(nfs::NFS_PROGRAM), Some(vers), Some(proc)) = (rec.program, rec.version, rec.proc)
    else {
        return;
    };
    super::nfsio::fill_reply(rec, vers, proc, results, ddp);
    let Ok(Some(status)) = nfs::reply_status(vers, proc, results, ddp) else {
        return;
    };
    rec.nfs_status = Some(status.name().map_or_else(
        || match status {
            nfs::NfsStatus::V3 { .. } => format!("nfsstat3 {}", status.code()),
            _ => format!("nfsstat4 {}", status.code()),
        },
        str::to_string,
    ));
    if let nfs::NfsStatus::V4 {
        failed: Some(op), ..
    } = status
    {
        rec.nfs_failed_op =
            Some(nfs::op_name(op.op).map_or_else(|| format!("op {}", op.op), str::to_string));
    }
}

/// The RPC reply status in words: `SUCCESS`, `PROG_MISMATCH`, `AUTH_ERROR`, ...
pub(super) fn reply_status(r: &rdma_dissectors::oncrpc::ReplyBody<'_>) -> String {
    use rdma_dissectors::oncrpc::{AcceptStat, RejectedReply, ReplyBody};
    match r {
        ReplyBody::Accepted { stat, .. } => match stat {
            AcceptStat::Success => "SUCCESS".into(),
            AcceptStat::ProgUnavail => "PROG_UNAVAIL".into(),
            AcceptStat::ProgMismatch { .. } => "PROG_MISMATCH".into(),
            AcceptStat::ProcUnavail => "PROC_UNAVAIL".into(),
            AcceptStat::GarbageArgs => "GARBAGE_ARGS".into(),
            AcceptStat::SystemErr => "SYSTEM_ERR".into(),
            other => format!("accept_stat {}", u32::from(other.code())),
        },
        ReplyBody::Denied(RejectedReply::RpcMismatch { .. }) => "RPC_MISMATCH".into(),
        ReplyBody::Denied(RejectedReply::AuthError(a)) => {
            format!("AUTH_ERROR({})", auth_stat(*a))
        }
        _ => "a reply of a kind this build does not know".into(),
    }
}

/// RFC 5531 (and RFC 2203) `auth_stat` names.
fn auth_stat(a: rdma_dissectors::oncrpc::AuthStat) -> String {
    use rdma_dissectors::oncrpc::AuthStat;
    let name = match a {
        AuthStat::Ok => "AUTH_OK",
        AuthStat::BadCred => "AUTH_BADCRED",
        AuthStat::RejectedCred => "AUTH_REJECTEDCRED",
        AuthStat::BadVerf => "AUTH_BADVERF",
        AuthStat::RejectedVerf => "AUTH_REJECTEDVERF",
        AuthStat::TooWeak => "AUTH_TOOWEAK",
        AuthStat::InvalidResp => "AUTH_INVALIDRESP",
        AuthStat::Failed => "AUTH_FAILED",
        AuthStat::KerbGeneric => "AUTH_KERB_GENERIC",
        AuthStat::TimeExpire => "AUTH_TIMEEXPIRE",
        AuthStat::TktFile => "AUTH_TKT_FILE",
        AuthStat::Decode => "AUTH_DECODE",
        AuthStat::NetAddr => "AUTH_NET_ADDR",
        AuthStat::RpcsecGssCredProblem => "RPCSEC_GSS_CREDPROBLEM",
        AuthStat::RpcsecGssCtxProblem => "RPCSEC_GSS_CTXPROBLEM",
        other => return format!("auth_stat {}", u32::from(other)),
    };
    name.into()
}
