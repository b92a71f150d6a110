//! ONC RPC version 2 messages (RFC 5531 section 9).
//!
//! In RPC-over-RDMA the Payload stream is one RPC message with no record
//! marking (RFC 8166 section 4); over TCP each message is preceded by record
//! marks (RFC 5531 section 11), see [`RecordMark`].
//!
//! ```text
//! call:   xid | 0 (CALL) | rpcvers | prog | vers | proc | cred | verf | args...
//! reply:  xid | 1 (REPLY) | 0 (MSG_ACCEPTED) | verf | accept_stat | [low high] | results...
//!         xid | 1 (REPLY) | 1 (MSG_DENIED) | 0 (RPC_MISMATCH) | low | high
//!         xid | 1 (REPLY) | 1 (MSG_DENIED) | 1 (AUTH_ERROR) | auth_stat
//! opaque_auth: flavor | length (<= 400) | body | pad
//! ```
//!
//! Arguments and results stay borrowed (`&'a [u8]`); with RPCSEC_GSS
//! integrity or privacy they are still wrapped and this module does not
//! unwrap them.

use crate::error::{Error, Result};
use crate::layer::Layer;
use crate::xdr::{Cursor, Writer};

/// The RPC protocol version this module knows (RFC 5531 section 9).
pub const RPC_VERSION: u32 = 2;

/// Largest `opaque_auth` body (RFC 5531 section 8.2, `MAX_AUTH_BYTES`).
pub const MAX_AUTH_BYTES: u32 = 400;

/// Largest AUTH_SYS machine name (RFC 5531 appendix A, `machinename<255>`).
pub const MAX_MACHINENAME_LEN: u32 = 255;

/// Largest AUTH_SYS group list (RFC 5531 appendix A, `gids<16>`).
pub const MAX_AUTH_SYS_GIDS: usize = 16;

macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[non_exhaustive]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this crate does not name.
            Unknown(u32),
        }

        impl From<u32> for $name {
            fn from(v: u32) -> Self {
                match v {
                    $( $value => $name::$variant, )*
                    other => $name::Unknown(other),
                }
            }
        }

        impl From<$name> for u32 {
            fn from(v: $name) -> u32 {
                match v {
                    $( $name::$variant => $value, )*
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}

open_enum! {
    /// Authentication flavor (RFC 5531 section 8.2; IANA "RPC Authentication Flavor Numbers").
    pub enum AuthFlavor {
        /// AUTH_NONE = 0.
        None = 0,
        /// AUTH_SYS = 1 (formerly AUTH_UNIX).
        Sys = 1,
        /// AUTH_SHORT = 2.
        Short = 2,
        /// AUTH_DH = 3.
        Dh = 3,
        /// AUTH_KERB4 = 4.
        Kerb4 = 4,
        /// AUTH_RSA = 5.
        Rsa = 5,
        /// RPCSEC_GSS = 6 (RFC 2203).
        RpcsecGss = 6,
        /// AUTH_TLS = 7 (RFC 9289).
        Tls = 7,
    }
}

open_enum! {
    /// Why a server refused the credentials (RFC 5531 section 9, `auth_stat`).
    pub enum AuthStat {
        /// AUTH_OK = 0.
        Ok = 0,
        /// AUTH_BADCRED = 1.
        BadCred = 1,
        /// AUTH_REJECTEDCRED = 2.
        RejectedCred = 2,
        /// AUTH_BADVERF = 3.
        BadVerf = 3,
        /// AUTH_REJECTEDVERF = 4.
        RejectedVerf = 4,
        /// AUTH_TOOWEAK = 5.
        TooWeak = 5,
        /// AUTH_INVALIDRESP = 6.
        InvalidResp = 6,
        /// AUTH_FAILED = 7.
        Failed = 7,
        /// AUTH_KERB_GENERIC = 8.
        KerbGeneric = 8,
        /// AUTH_TIMEEXPIRE = 9.
        TimeExpire = 9,
        /// AUTH_TKT_FILE = 10.
        TktFile = 10,
        /// AUTH_DECODE = 11.
        Decode = 11,
        /// AUTH_NET_ADDR = 12.
        NetAddr = 12,
        /// RPCSEC_GSS_CREDPROBLEM = 13 (RFC 2203).
        RpcsecGssCredProblem = 13,
        /// RPCSEC_GSS_CTXPROBLEM = 14 (RFC 2203).
        RpcsecGssCtxProblem = 14,
    }
}

/// Credentials or verifier (RFC 5531 section 8.2, `opaque_auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpaqueAuth<'a> {
    /// `flavor`.
    pub flavor: AuthFlavor,
    /// `body<400>`, without padding.
    pub body: &'a [u8],
}

impl<'a> OpaqueAuth<'a> {
    /// AUTH_NONE with an empty body.
    pub const NONE: OpaqueAuth<'static> = OpaqueAuth {
        flavor: AuthFlavor::None,
        body: &[],
    };

    fn read(c: &mut Cursor<'a>) -> Result<Self> {
        let flavor = AuthFlavor::from(c.u32()?);
        let body = c.opaque("opaque_auth.body length", MAX_AUTH_BYTES)?;
        Ok(OpaqueAuth { flavor, body })
    }

    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.u32(u32::from(self.flavor))?;
        w.opaque(self.body)
    }

    fn wire_len(&self) -> usize {
        8usize.saturating_add(crate::xdr::padded_len(self.body.len()))
    }

    /// The AUTH_SYS parameters, if the flavor is AUTH_SYS and the body
    /// decodes (RFC 5531 appendix A). Errors count from the body start.
    ///
    /// # Errors
    /// [`Error::Truncated`] or [`Error::BadField`] if the body is not a
    /// well-formed `authsys_parms`.
    pub fn auth_sys(&self) -> Result<Option<AuthSys<'a>>> {
        if self.flavor != AuthFlavor::Sys {
            return Ok(None);
        }
        AuthSys::parse(self.body).map(Some)
    }
}

/// AUTH_SYS credentials (RFC 5531 appendix A, `authsys_parms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuthSys<'a> {
    /// `stamp`: arbitrary ID the caller may generate.
    pub stamp: u32,
    /// `machinename<255>`: the caller's host name, undecoded.
    pub machinename: &'a [u8],
    /// `uid`: effective user ID.
    pub uid: u32,
    /// `gid`: effective group ID.
    pub gid: u32,
    gids: &'a [u8],
}

impl<'a> AuthSys<'a> {
    /// Decodes an `authsys_parms` from a credential body.
    ///
    /// # Errors
    /// [`Error::Truncated`]; [`Error::BadField`] if the machine name is
    /// over 255 bytes or there are more than 16 gids.
    pub fn parse(body: &'a [u8]) -> Result<Self> {
        let mut c = Cursor::new(body, Layer::OncRpc);
        let stamp = c.u32()?;
        let machinename = c.string("machinename length", MAX_MACHINENAME_LEN)?;
        let uid = c.u32()?;
        let gid = c.u32()?;
        let n = c.u32()?;
        if n as usize > MAX_AUTH_SYS_GIDS {
            return Err(c.bad_field(4, "gids count", u64::from(n), "at most 16"));
        }
        let gids = c.take((n as usize).saturating_mul(4))?;
        Ok(AuthSys {
            stamp,
            machinename,
            uid,
            gid,
            gids,
        })
    }

    /// Number of supplementary groups.
    pub fn gid_count(&self) -> usize {
        self.gids.len() / 4
    }

    /// The supplementary group IDs.
    pub fn gids(&self) -> impl Iterator<Item = u32> + 'a {
        self.gids
            .chunks_exact(4)
            .map(|g| crate::bytes::u32_at(g, 0))
    }
}

open_enum! {
    /// Outcome of an accepted call, without its data (RFC 5531 section 9, `accept_stat`).
    pub enum AcceptStatCode {
        /// SUCCESS = 0.
        Success = 0,
        /// PROG_UNAVAIL = 1.
        ProgUnavail = 1,
        /// PROG_MISMATCH = 2.
        ProgMismatch = 2,
        /// PROC_UNAVAIL = 3.
        ProcUnavail = 3,
        /// GARBAGE_ARGS = 4.
        GarbageArgs = 4,
        /// SYSTEM_ERR = 5.
        SystemErr = 5,
    }
}

/// Outcome of an accepted call (RFC 5531 section 9, `accepted_reply`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AcceptStat {
    /// SUCCESS: results follow.
    Success,
    /// PROG_UNAVAIL: program not exported.
    ProgUnavail,
    /// PROG_MISMATCH: versions `low..=high` are supported.
    ProgMismatch {
        /// Lowest version supported.
        low: u32,
        /// Highest version supported.
        high: u32,
    },
    /// PROC_UNAVAIL: no such procedure.
    ProcUnavail,
    /// GARBAGE_ARGS: arguments could not be decoded.
    GarbageArgs,
    /// SYSTEM_ERR: e.g. memory allocation failure.
    SystemErr,
    /// Another value (no data decoded).
    Unknown(u32),
}

impl AcceptStat {
    /// The code without its data.
    pub fn code(&self) -> AcceptStatCode {
        match self {
            AcceptStat::Success => AcceptStatCode::Success,
            AcceptStat::ProgUnavail => AcceptStatCode::ProgUnavail,
            AcceptStat::ProgMismatch { .. } => AcceptStatCode::ProgMismatch,
            AcceptStat::ProcUnavail => AcceptStatCode::ProcUnavail,
            AcceptStat::GarbageArgs => AcceptStatCode::GarbageArgs,
            AcceptStat::SystemErr => AcceptStatCode::SystemErr,
            AcceptStat::Unknown(v) => AcceptStatCode::Unknown(*v),
        }
    }
}

/// Why a call was rejected (RFC 5531 section 9, `rejected_reply`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectedReply {
    /// RPC_MISMATCH: RPC versions `low..=high` are supported.
    RpcMismatch {
        /// Lowest RPC version supported.
        low: u32,
        /// Highest RPC version supported.
        high: u32,
    },
    /// AUTH_ERROR with the reason.
    AuthError(AuthStat),
}

/// An RPC call (RFC 5531 section 9, `call_body`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Call<'a> {
    /// `rpcvers`: must be 2.
    pub rpcvers: u32,
    /// `prog`: program number.
    pub prog: u32,
    /// `vers`: program version.
    pub vers: u32,
    /// `proc`: procedure number.
    pub proc: u32,
    /// `cred`: credentials.
    pub cred: OpaqueAuth<'a>,
    /// `verf`: verifier.
    pub verf: OpaqueAuth<'a>,
    /// The procedure's arguments: every byte after `verf`.
    pub args: &'a [u8],
}

impl<'a> Call<'a> {
    /// The AUTH_SYS credentials, if the credential flavor is AUTH_SYS and
    /// its body decodes.
    pub fn auth_sys(&self) -> Option<AuthSys<'a>> {
        self.cred.auth_sys().ok().flatten()
    }
}

/// An RPC reply (RFC 5531 section 9, `reply_body`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyBody<'a> {
    /// MSG_ACCEPTED.
    Accepted {
        /// The server's verifier.
        verf: OpaqueAuth<'a>,
        /// `accept_stat` and its data.
        stat: AcceptStat,
        /// The procedure's results for SUCCESS (every byte after the
        /// status); empty otherwise.
        results: &'a [u8],
    },
    /// MSG_DENIED.
    Denied(RejectedReply),
}

/// Call or reply (RFC 5531 section 9, `rpc_msg.body`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MsgBody<'a> {
    /// CALL = 0.
    Call(Call<'a>),
    /// REPLY = 1.
    Reply(ReplyBody<'a>),
}

/// An ONC RPC message (RFC 5531 section 9, `rpc_msg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RpcMsg<'a> {
    /// `xid`: transaction ID matching a reply to its call.
    pub xid: u32,
    /// The call or reply.
    pub body: MsgBody<'a>,
}

impl<'a> RpcMsg<'a> {
    /// Parses an RPC message (no record mark) from the start of `input`.
    ///
    /// Returns the message and the bytes after its header: the call's
    /// arguments or a successful reply's results (the same slice as
    /// `args`/`results`), otherwise whatever follows (normally nothing).
    ///
    /// # Errors
    /// - [`Error::Truncated`] with the offset of the missing item;
    /// - [`Error::BadField`] for `msg_type` (offset 4) not CALL/REPLY,
    ///   `reply_stat` or `reject_stat` unknown, an `opaque_auth` body over
    ///   400 bytes.
    pub fn parse(input: &'a [u8]) -> Result<(RpcMsg<'a>, &'a [u8])> {
        let mut c = Cursor::new(input, Layer::OncRpc);
        let xid = c.u32()?;
        let body = match c.u32()? {
            0 => {
                let rpcvers = c.u32()?;
                let prog = c.u32()?;
                let vers = c.u32()?;
                let proc = c.u32()?;
                let cred = OpaqueAuth::read(&mut c)?;
                let verf = OpaqueAuth::read(&mut c)?;
                MsgBody::Call(Call {
                    rpcvers,
                    prog,
                    vers,
                    proc,
                    cred,
                    verf,
                    args: c.rest(),
                })
            }
            1 => MsgBody::Reply(match c.u32()? {
                0 => {
                    let verf = OpaqueAuth::read(&mut c)?;
                    let stat = match AcceptStatCode::from(c.u32()?) {
                        AcceptStatCode::Success => AcceptStat::Success,
                        AcceptStatCode::ProgUnavail => AcceptStat::ProgUnavail,
                        AcceptStatCode::ProgMismatch => AcceptStat::ProgMismatch {
                            low: c.u32()?,
                            high: c.u32()?,
                        },
                        AcceptStatCode::ProcUnavail => AcceptStat::ProcUnavail,
                        AcceptStatCode::GarbageArgs => AcceptStat::GarbageArgs,
                        AcceptStatCode::SystemErr => AcceptStat::SystemErr,
                        AcceptStatCode::Unknown(v) => AcceptStat::Unknown(v),
                    };
                    let results = if stat == AcceptStat::Success {
                        c.rest()
                    } else {
                        &[]
                    };
                    ReplyBody::Accepted {
                        verf,
                        stat,
                        results,
                    }
                }
                1 => ReplyBody::Denied(match c.u32()? {
                    0 => RejectedReply::RpcMismatch {
                        low: c.u32()?,
                        high: c.u32()?,
                    },
                    1 => RejectedReply::AuthError(AuthStat::from(c.u32()?)),
                    v => return Err(c.bad_field(4, "reject_stat", u64::from(v), "0 or 1")),
                }),
                v => return Err(c.bad_field(4, "reply_stat", u64::from(v), "0 or 1")),
            }),
            v => return Err(c.bad_field(4, "msg_type", u64::from(v), "0 or 1")),
        };
        Ok((RpcMsg { xid, body }, c.rest()))
    }

    /// The call, if this is one.
    pub const fn call(&self) -> Option<&Call<'a>> {
        match &self.body {
            MsgBody::Call(c) => Some(c),
            MsgBody::Reply(_) => None,
        }
    }

    /// Length of the header, i.e. the offset of the arguments or results.
    pub fn header_len(&self) -> usize {
        match &self.body {
            MsgBody::Call(c) => 24usize
                .saturating_add(c.cred.wire_len())
                .saturating_add(c.verf.wire_len()),
            MsgBody::Reply(ReplyBody::Accepted { verf, stat, .. }) => {
                let extra = if matches!(stat, AcceptStat::ProgMismatch { .. }) {
                    8
                } else {
                    0
                };
                16usize
                    .saturating_add(verf.wire_len())
                    .saturating_add(extra)
            }
            MsgBody::Reply(ReplyBody::Denied(RejectedReply::RpcMismatch { .. })) => 24,
            MsgBody::Reply(ReplyBody::Denied(RejectedReply::AuthError(_))) => 20,
        }
    }

    /// Length of the whole message: header plus arguments or results.
    pub fn buffer_len(&self) -> usize {
        let data = match &self.body {
            MsgBody::Call(c) => c.args.len(),
            MsgBody::Reply(ReplyBody::Accepted { results, .. }) => results.len(),
            MsgBody::Reply(ReplyBody::Denied(_)) => 0,
        };
        self.header_len().saturating_add(data)
    }

    /// Writes the message, arguments or results included, to the start of
    /// `buf`; returns its length ([`RpcMsg::buffer_len`]).
    ///
    /// # Errors
    /// [`Error::Truncated`] if `buf` is too small; [`Error::BadField`] if an
    /// `opaque_auth` body is over 400 bytes or results are given with a
    /// status other than SUCCESS.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let mut w = Writer::new(buf, Layer::OncRpc);
        w.u32(self.xid)?;
        match &self.body {
            MsgBody::Call(c) => {
                check_auth(&c.cred, 32)?;
                w.u32(0)?;
                w.u32(c.rpcvers)?;
                w.u32(c.prog)?;
                w.u32(c.vers)?;
                w.u32(c.proc)?;
                c.cred.write(&mut w)?;
                check_auth(&c.verf, w.position())?;
                c.verf.write(&mut w)?;
                w.bytes(c.args)?;
            }
            MsgBody::Reply(ReplyBody::Accepted {
                verf,
                stat,
                results,
            }) => {
                check_auth(verf, 16)?;
                w.u32(1)?;
                w.u32(0)?;
                verf.write(&mut w)?;
                w.u32(u32::from(stat.code()))?;
                if let AcceptStat::ProgMismatch { low, high } = stat {
                    w.u32(*low)?;
                    w.u32(*high)?;
                }
                if *stat != AcceptStat::Success && !results.is_empty() {
                    return Err(Error::BadField {
                        layer: Layer::OncRpc,
                        offset: w.position(),
                        field: "results",
                        value: results.len() as u64,
                        expected: "no results unless accept_stat is SUCCESS",
                    });
                }
                w.bytes(results)?;
            }
            MsgBody::Reply(ReplyBody::Denied(r)) => {
                w.u32(1)?;
                w.u32(1)?;
                match r {
                    RejectedReply::RpcMismatch { low, high } => {
                        w.u32(0)?;
                        w.u32(*low)?;
                        w.u32(*high)?;
                    }
                    RejectedReply::AuthError(s) => {
                        w.u32(1)?;
                        w.u32(u32::from(*s))?;
                    }
                }
            }
        }
        Ok(w.position())
    }
}

fn check_auth(a: &OpaqueAuth<'_>, offset: usize) -> Result<()> {
    if a.body.len() > MAX_AUTH_BYTES as usize {
        return Err(Error::BadField {
            layer: Layer::OncRpc,
            offset,
            field: "opaque_auth.body length",
            value: a.body.len() as u64,
            expected: "a length within the XDR bound",
        });
    }
    Ok(())
}

/// An RPC record mark for stream transports such as TCP (RFC 5531 section 11).
///
/// Not used by RPC-over-RDMA, whose Payload stream carries no record mark
/// (RFC 8166 section 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordMark {
    /// The last fragment of the record (top bit).
    pub last: bool,
    /// Fragment length in bytes (low 31 bits).
    pub len: u32,
}

impl RecordMark {
    /// Reads the 4-byte mark and returns the fragment and the bytes after it.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the mark or the fragment is incomplete: for a
    /// stream, read more and try again.
    pub fn parse(input: &[u8]) -> Result<(RecordMark, &[u8], &[u8])> {
        let mut c = Cursor::new(input, Layer::OncRpc);
        let w = c.u32()?;
        let mark = RecordMark {
            last: w & 0x8000_0000 != 0,
            len: w & 0x7fff_ffff,
        };
        let fragment = c.take(mark.len as usize)?;
        Ok((mark, fragment, c.rest()))
    }

    /// Writes the mark to the start of `buf`; returns 4.
    ///
    /// # Errors
    /// [`Error::Truncated`] if `buf` is shorter than 4 bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let mut w = Writer::new(buf, Layer::OncRpc);
        w.u32((self.len & 0x7fff_ffff) | if self.last { 0x8000_0000 } else { 0 })?;
        Ok(4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    // NFSv3 GETATTR call with AUTH_SYS (RFC 5531 section 9 and appendix A
    // layouts; machine name "client", uid/gid 0, one extra gid 10), followed
    // by a 32-byte file handle argument.
    const CALL: [u8; 108] = hex!(
        "12345678 00000000 00000002 000186a3 00000003 00000001"
        "00000001 00000020"
        "00000000 00000006 636c69656e740000 00000000 00000000 00000001 0000000a"
        "00000000 00000000"
        "00000020 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"
    );

    const REPLY_OK: [u8; 32] = hex!(
        "12345678 00000001 00000000 00000000 00000000 00000000"
        "00000000 00000002"
    );

    #[test]
    fn real_frames_payloads() {
        use crate::rpcrdma::real_frames::{V3_READ_REPLY, V3_WRITE_CALL};
        use crate::rpcrdma::RpcRdmaHeader;
        // captures/v3-ddp.pcap frame 80: NFSv3 WRITE call, AUTH_SYS.
        let (h, payload) = RpcRdmaHeader::parse(&V3_WRITE_CALL).unwrap();
        let (m, args) = RpcMsg::parse(payload).unwrap();
        assert_eq!(
            m.xid, h.xid.0,
            "rdma_xid matches the RPC XID (RFC 8166 4.5.2)"
        );
        let c = m.call().unwrap();
        assert_eq!((c.rpcvers, c.prog, c.vers, c.proc), (2, 100_003, 3, 7));
        let a = c.auth_sys().unwrap();
        assert_eq!(a.machinename, b"labclient");
        assert_eq!((a.uid, a.gid, a.gid_count()), (0, 0, 0));
        assert_eq!(c.verf, OpaqueAuth::NONE);
        assert_eq!(args.len(), 60);
        let mut buf = [0xa5u8; 132];
        assert_eq!(m.emit(&mut buf), Ok(132));
        assert_eq!(&buf[..], payload);
        // captures/v3-ddp.pcap frame 2565: the READ reply.
        let (h, payload) = RpcRdmaHeader::parse(&V3_READ_REPLY).unwrap();
        let (m, results) = RpcMsg::parse(payload).unwrap();
        assert_eq!(m.xid, h.xid.0);
        assert!(matches!(
            m.body,
            MsgBody::Reply(ReplyBody::Accepted {
                stat: AcceptStat::Success,
                ..
            })
        ));
        assert_eq!(results.len(), 104);
    }

    #[test]
    fn parse_call() {
        let (m, rest) = RpcMsg::parse(&CALL).unwrap();
        assert_eq!(m.xid, 0x12345678);
        let c = m.call().unwrap();
        assert_eq!((c.rpcvers, c.prog, c.vers, c.proc), (2, 100_003, 3, 1));
        assert_eq!(c.cred.flavor, AuthFlavor::Sys);
        assert_eq!(c.verf, OpaqueAuth::NONE);
        assert_eq!(c.args.len(), 36);
        assert_eq!(rest, c.args);
        assert_eq!(m.header_len(), 72);
        let a = c.auth_sys().unwrap();
        assert_eq!(a.machinename, b"client");
        assert_eq!((a.stamp, a.uid, a.gid), (0, 0, 0));
        assert_eq!(a.gid_count(), 1);
        assert_eq!(a.gids().collect::<Vec<_>>(), [10]);
    }

    #[test]
    fn parse_replies() {
        let (m, rest) = RpcMsg::parse(&REPLY_OK).unwrap();
        assert_eq!(
            m.body,
            MsgBody::Reply(ReplyBody::Accepted {
                verf: OpaqueAuth::NONE,
                stat: AcceptStat::Success,
                results: &hex!("00000000 00000002")
            })
        );
        assert_eq!(rest.len(), 8);
        let b = hex!("00000001 00000001 00000000 00000000 00000000 00000002 00000002 00000004");
        let (m, _) = RpcMsg::parse(&b).unwrap();
        assert!(matches!(
            m.body,
            MsgBody::Reply(ReplyBody::Accepted {
                stat: AcceptStat::ProgMismatch { low: 2, high: 4 },
                results: &[],
                ..
            })
        ));
        let b = hex!("00000001 00000001 00000001 00000000 00000002 00000002");
        let (m, _) = RpcMsg::parse(&b).unwrap();
        assert_eq!(
            m.body,
            MsgBody::Reply(ReplyBody::Denied(RejectedReply::RpcMismatch {
                low: 2,
                high: 2
            }))
        );
        let b = hex!("00000001 00000001 00000001 00000001 0000000d");
        let (m, _) = RpcMsg::parse(&b).unwrap();
        assert_eq!(
            m.body,
            MsgBody::Reply(ReplyBody::Denied(RejectedReply::AuthError(
                AuthStat::RpcsecGssCredProblem
            )))
        );
    }

    #[test]
    fn emit_gives_the_bytes() {
        for bytes in [&CALL[..], &REPLY_OK[..]] {
            let (m, _) = RpcMsg::parse(bytes).unwrap();
            let mut buf = vec![0xa5u8; bytes.len() + 3];
            assert_eq!(m.emit(&mut buf), Ok(bytes.len()));
            assert_eq!(&buf[..bytes.len()], bytes);
            assert_eq!(&buf[bytes.len()..], &[0xa5; 3]);
            assert_eq!(m.buffer_len(), bytes.len());
        }
    }

    #[test]
    fn truncated_at_every_offset() {
        let (m, _) = RpcMsg::parse(&CALL).unwrap();
        for cut in 0..m.header_len() {
            match RpcMsg::parse(&CALL[..cut]) {
                Err(Error::Truncated {
                    layer: Layer::OncRpc,
                    offset,
                    needed,
                    available,
                }) => {
                    assert!(offset <= cut && offset + needed > cut, "cut {cut}");
                    assert_eq!(available, cut - offset);
                }
                other => panic!("cut {cut}: {other:?}"),
            }
            assert!(m.emit(&mut vec![0; cut]).is_err());
        }
        let (m, _) = RpcMsg::parse(&REPLY_OK).unwrap();
        for cut in 0..m.header_len() {
            assert!(matches!(
                RpcMsg::parse(&REPLY_OK[..cut]),
                Err(Error::Truncated { .. })
            ));
        }
    }

    #[test]
    fn validation_rules() {
        let b = hex!("00000001 00000002");
        assert_eq!(
            RpcMsg::parse(&b),
            Err(Error::BadField {
                layer: Layer::OncRpc,
                offset: 4,
                field: "msg_type",
                value: 2,
                expected: "0 or 1"
            })
        );
        assert!(matches!(
            RpcMsg::parse(&hex!("00000001 00000001 00000003")),
            Err(Error::BadField {
                offset: 8,
                field: "reply_stat",
                ..
            })
        ));
        assert!(matches!(
            RpcMsg::parse(&hex!("00000001 00000001 00000001 00000007")),
            Err(Error::BadField {
                offset: 12,
                field: "reject_stat",
                ..
            })
        ));
        // cred body of 404 bytes > MAX_AUTH_BYTES
        let b = hex!("00000001 00000000 00000002 000186a3 00000003 00000001 00000001 00000194");
        assert!(matches!(
            RpcMsg::parse(&b),
            Err(Error::BadField {
                offset: 28,
                value: 404,
                ..
            })
        ));
        // 17 gids
        let body = hex!("00000000 00000000 00000000 00000000 00000011");
        assert!(matches!(
            AuthSys::parse(&body),
            Err(Error::BadField {
                offset: 16,
                field: "gids count",
                value: 17,
                ..
            })
        ));
        let sys = OpaqueAuth {
            flavor: AuthFlavor::Sys,
            body: &body,
        };
        assert!(sys.auth_sys().is_err());
        assert_eq!(OpaqueAuth::NONE.auth_sys(), Ok(None));
    }

    #[test]
    fn record_marking() {
        let b = hex!("80000004 deadbeef 00");
        let (m, frag, rest) = RecordMark::parse(&b).unwrap();
        assert_eq!(m, RecordMark { last: true, len: 4 });
        assert_eq!(frag, &hex!("deadbeef"));
        assert_eq!(rest, &[0]);
        let mut buf = [0u8; 4];
        m.emit(&mut buf).unwrap();
        assert_eq!(buf, hex!("80000004"));
        assert!(matches!(
            RecordMark::parse(&b[..6]),
            Err(Error::Truncated {
                offset: 4,
                needed: 4,
                available: 2,
                ..
            })
        ));
    }

    fn arb_auth() -> impl Strategy<Value = (u32, Vec<u8>)> {
        (0u32..10, proptest::collection::vec(any::<u8>(), 0..40))
    }

    proptest! {
        #[test]
        fn call_round_trip(
            xid in any::<u32>(), prog in any::<u32>(), vers in any::<u32>(), proc_ in any::<u32>(),
            cred in arb_auth(), verf in arb_auth(),
            args in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let m = RpcMsg { xid, body: MsgBody::Call(Call {
                rpcvers: 2, prog, vers, proc: proc_,
                cred: OpaqueAuth { flavor: cred.0.into(), body: &cred.1 },
                verf: OpaqueAuth { flavor: verf.0.into(), body: &verf.1 },
                args: &args,
            })};
            let mut buf = vec![0xa5u8; m.buffer_len()];
            prop_assert_eq!(m.emit(&mut buf), Ok(m.buffer_len()));
            let (p, rest) = RpcMsg::parse(&buf).unwrap();
            prop_assert_eq!(p, m);
            prop_assert_eq!(rest, &args[..]);
        }

        #[test]
        fn reply_round_trip(
            xid in any::<u32>(), verf in arb_auth(), stat in 0u32..8, low in any::<u32>(), high in any::<u32>(),
            results in proptest::collection::vec(any::<u8>(), 0..40), denied in 0u32..3,
        ) {
            let body = match denied {
                0 => {
                    let stat = match AcceptStatCode::from(stat) {
                        AcceptStatCode::Success => AcceptStat::Success,
                        AcceptStatCode::ProgMismatch => AcceptStat::ProgMismatch { low, high },
                        AcceptStatCode::ProgUnavail => AcceptStat::ProgUnavail,
                        AcceptStatCode::ProcUnavail => AcceptStat::ProcUnavail,
                        AcceptStatCode::GarbageArgs => AcceptStat::GarbageArgs,
                        AcceptStatCode::SystemErr => AcceptStat::SystemErr,
                        AcceptStatCode::Unknown(v) => AcceptStat::Unknown(v),
                    };
                    let results: &[u8] = if stat == AcceptStat::Success { &results } else { &[] };
                    ReplyBody::Accepted { verf: OpaqueAuth { flavor: verf.0.into(), body: &verf.1 }, stat, results }
                }
                1 => ReplyBody::Denied(RejectedReply::RpcMismatch { low, high }),
                _ => ReplyBody::Denied(RejectedReply::AuthError(AuthStat::from(stat))),
            };
            let m = RpcMsg { xid, body: MsgBody::Reply(body) };
            let mut buf = vec![0xa5u8; m.buffer_len()];
            prop_assert_eq!(m.emit(&mut buf), Ok(m.buffer_len()));
            prop_assert_eq!(RpcMsg::parse(&buf).unwrap().0, m);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok((m, rest)) = RpcMsg::parse(&data) {
                prop_assert_eq!(m.header_len() + rest.len(), data.len());
                if let MsgBody::Call(c) = m.body { let _ = c.auth_sys(); }
                let mut buf = vec![0u8; m.buffer_len()];
                if m.emit(&mut buf).is_ok() {
                    prop_assert_eq!(RpcMsg::parse(&buf).unwrap().0, m);
                }
            }
            let _ = RecordMark::parse(&data);
        }
    }
}
