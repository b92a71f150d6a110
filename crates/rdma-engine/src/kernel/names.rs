//! Program and procedure names from the kernel's RPC layer (`sunrpc`
//! tracepoints): the transport's own events carry XIDs and chunks, never
//! what the call is, so without these a kernel view has no procedure.
//!
//! ```text
//!  client: rpc_request(task, "nfs", v3, "READ") ─► held by task ─► taken by xprtrdma_marshal(task)
//!  server: svc_process(xid, "nfsd", v3, proc 6, "READ") ─► the nfsd thread's call with that XID
//! ```

use rdma_dissectors::nfs;

use crate::Transaction;

/// What the kernel's RPC layer says a call is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RpcName {
    /// The kernel's name for the program (client `cl_program->name`,
    /// server `pg_name`).
    pub(crate) program: Option<String>,
    /// Program version.
    pub(crate) version: Option<u32>,
    /// Procedure number, when the event carries it (the server's).
    pub(crate) proc: Option<u32>,
    /// The kernel's name for the procedure.
    pub(crate) procedure: Option<String>,
}

/// The RPC program number a kernel's program name stands for. The client
/// and the server name their programs differently (`nfs` / `nfsd`), and
/// neither event carries the number. Unknown names give `None`.
pub(crate) fn program_number(kernel_name: &str) -> Option<u32> {
    Some(match kernel_name {
        "nfs" | "nfsd" => nfs::NFS_PROGRAM,
        "nfsacl" => nfs::NFSACL_PROGRAM,
        "lockd" | "nlockmgr" => nfs::NLM_PROGRAM,
        "mount" | "mountd" => nfs::MOUNT_PROGRAM,
        "rpcbind" | "portmap" => 100_000,
        "statd" | "status" => 100_024,
        "nfs4_cb" | "NFSv4 callback" => nfs::NFS4_CALLBACK_PROGRAM_LINUX,
        _ => return None,
    })
}

/// The procedure number of `name` in `prog` version `vers`, where the
/// protocol gives every name one number. NFSv4 has two procedures; the
/// client names a COMPOUND by its purpose (`READ`, `OPEN`), so anything
/// but `NULL` there is COMPOUND (1).
fn proc_number(prog: u32, vers: u32, name: &str) -> Option<u32> {
    if prog == nfs::NFS_PROGRAM && vers == 4 {
        return Some(u32::from(name != "NULL"));
    }
    (0..64).find(|&p| nfs::proc_name(prog, vers, p) == Some(name))
}

impl RpcName {
    /// Fills the program and procedure fields of a kernel view. What the
    /// event did not carry stays `None`; a procedure name the kernel gives
    /// is used as it is (for the NFSv4 client, the COMPOUND's purpose).
    pub(crate) fn fill(&self, t: &mut Transaction) {
        let prog = self.program.as_deref().and_then(program_number);
        t.program = prog;
        t.program_name = prog.and_then(nfs::program_name);
        t.version = self.version;
        t.proc = self.proc.or_else(|| {
            let (prog, vers, name) = (prog?, self.version?, self.procedure.as_deref()?);
            proc_number(prog, vers, name)
        });
        t.procedure = self.procedure.clone().or_else(|| {
            let (prog, vers, p) = (prog?, self.version?, self.proc?);
            nfs::proc_name(prog, vers, p).map(str::to_string)
        });
    }

    /// `nfs v3 READ`, for the call header's words (the kernel's own names,
    /// including a program this analyzer does not know).
    pub(crate) fn words(&self) -> String {
        let mut s = self.program.clone().unwrap_or_else(|| "?".into());
        if let Some(v) = self.version {
            s.push_str(&format!(" v{v}"));
        }
        s.push(' ');
        s.push_str(self.procedure.as_deref().unwrap_or("?"));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CallHeader;
    use crate::{ConnId, Origin};

    fn txn() -> Transaction {
        Transaction::new(
            Origin::ClientProbes,
            ConnId(1),
            7,
            1,
            0,
            CallHeader::Text(String::new()),
        )
    }

    fn name(program: &str, version: u32, proc: Option<u32>, procedure: Option<&str>) -> RpcName {
        RpcName {
            program: Some(program.into()),
            version: Some(version),
            proc,
            procedure: procedure.map(String::from),
        }
    }

    #[test]
    fn client_nfsv3_name_gives_the_number() {
        let mut t = txn();
        name("nfs", 3, None, Some("READ")).fill(&mut t);
        assert_eq!(t.program, Some(100_003));
        assert_eq!(t.program_name, Some("NFS"));
        assert_eq!((t.version, t.proc), (Some(3), Some(6)));
        assert_eq!(t.procedure_label(), "NFS READ");
    }

    #[test]
    fn client_nfsv4_purpose_is_a_compound() {
        let mut t = txn();
        name("nfs", 4, None, Some("EXCHANGE_ID")).fill(&mut t);
        assert_eq!(
            (t.proc, t.procedure.as_deref()),
            (Some(1), Some("EXCHANGE_ID"))
        );
        name("nfs", 4, None, Some("NULL")).fill(&mut t);
        assert_eq!(t.proc, Some(0));
    }

    #[test]
    fn server_number_without_a_name_gets_the_protocols_name() {
        // Kernels whose svc_process has no `procedure` field.
        let mut t = txn();
        name("nfsd", 3, Some(7), None).fill(&mut t);
        assert_eq!(t.procedure.as_deref(), Some("WRITE"));
        assert_eq!(t.program_name, Some("NFS"));
    }

    #[test]
    fn unknown_program_stays_unknown() {
        let mut t = txn();
        name("frobd", 1, None, Some("POKE")).fill(&mut t);
        assert_eq!((t.program, t.program_name, t.proc), (None, None, None));
        assert_eq!(t.procedure.as_deref(), Some("POKE"));
        assert_eq!(name("frobd", 1, None, None).words(), "frobd v1 ?");
        let mut t = txn();
        RpcName::default().fill(&mut t);
        assert_eq!(t.procedure_label(), "?");
    }
}
