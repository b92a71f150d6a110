//! The connection manager's state machine (IBA 12.9) as a capture sees it:
//! one [`CmState`] per connection, moved by the CM messages of both sides.
//!
//! ```text
//!              REQ (client)        REP (server)        RTU (client)
//!   NotSeen ─────────────► Requested ─────────► Replied ─────────► Established
//!                              │                   │                    │ DREQ (either)
//!                              └──── REJ (either) ─┴──► Rejected        ▼
//!                                                     Closed ◄──── Disconnecting
//!                                                              DREP (either)
//! ```
//!
//! A CM sends a MAD again until it is answered, so each
//! message may come again while its answer is on its way: a REQ retried
//! after its REP or REJ was sent, a REP retried after the RTU, a DREQ after
//! the DREP, and the answers to those. They leave the state where it is.
//! MRA, LAP, APR and SIDR do not move a connection's state and are not
//! judged here.

use std::fmt;

use rdma_dissectors::ib::cm::CmMessage;

use super::model::{CmState, Role};

/// A CM message that the state machine does not allow in the state its
/// connection is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadTransition {
    /// The state the connection was in.
    pub from: CmState,
    /// The message (`"RTU"`, `"DREP"`, ...).
    pub message: &'static str,
    /// Which side sent it.
    pub sender: Role,
    /// Where the connection stands after it all the same: the peers act on
    /// a message that ends or advances the connection whatever the capture
    /// showed before it (a DREP closes a connection whose DREQ was not
    /// seen), and a stale one changes nothing.
    pub then: CmState,
}

impl fmt::Display for BadTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sender = match self.sender {
            Role::Client => "client",
            Role::Server => "server",
        };
        write!(
            f,
            "cm: {} from the {sender} while the connection is {}",
            self.message,
            self.from.as_str()
        )
    }
}

/// The state a connection in `state` moves to when `sender` sends `msg`.
///
/// # Errors
///
/// [`BadTransition`] when the state machine does not allow `msg` from
/// `sender` in `state`; it says where the connection stands after it.
pub(crate) fn next(
    state: CmState,
    msg: &CmMessage<'_>,
    sender: Role,
) -> Result<CmState, BadTransition> {
    use CmState::{Closed, Disconnecting, Established, NotSeen, Rejected, Replied, Requested};
    use Role::{Client, Server};
    let to = match (state, msg, sender) {
        // Establishment.
        (NotSeen | Requested, CmMessage::Req(_), Client) => Requested,
        (Requested | Replied, CmMessage::Rep(_), Server) => Replied,
        (Replied, CmMessage::Rtu(_), Client) => Established,
        // Either side may refuse: the server a REQ, the client a REP.
        (Requested | Replied, CmMessage::Rej(_), _) => Rejected,
        // Release, by either side.
        (Established | Disconnecting, CmMessage::Dreq(_), _) => Disconnecting,
        (Disconnecting, CmMessage::Drep(_), _) => Closed,
        // Retried before their answers arrived, and the answers sent again.
        (Replied | Rejected, CmMessage::Req(_), Client) => state,
        (Established, CmMessage::Rep(_), Server) => Established,
        (Established, CmMessage::Rtu(_), Client) => Established,
        (Rejected, CmMessage::Rej(_), _) => Rejected,
        (Closed, CmMessage::Dreq(_) | CmMessage::Drep(_), _) => Closed,
        // Not part of the establishment and release this follows.
        (
            _,
            CmMessage::Mra(_)
            | CmMessage::Lap(_)
            | CmMessage::Apr(_)
            | CmMessage::SidrReq(_)
            | CmMessage::SidrRep(_)
            | CmMessage::Unknown { .. },
            _,
        ) => state,
        _ => {
            return Err(BadTransition {
                from: state,
                message: msg.name(),
                sender,
                then: after_bad(state, msg),
            })
        }
    };
    Ok(to)
}

/// Where a connection stands after a message [`next`] does not allow.
fn after_bad(state: CmState, msg: &CmMessage<'_>) -> CmState {
    use CmState::{Closed, Disconnecting, Established, NotSeen, Rejected, Replied, Requested};
    match (state, msg) {
        // Its REP was not seen; the peers are connected.
        (NotSeen | Requested, CmMessage::Rtu(_)) => Established,
        // Released before it was established.
        (NotSeen | Requested | Replied, CmMessage::Dreq(_)) => Disconnecting,
        (Rejected, _) => Rejected,
        (_, CmMessage::Drep(_)) => Closed,
        (NotSeen, CmMessage::Rej(_)) => Rejected,
        // Stale or misdirected: nothing changes.
        _ => state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma_dissectors::ib::cm::{attr, parse_cm, MESSAGE_LEN};
    use rdma_dissectors::ib::mad::Mad;

    /// A CM message of attribute `id`; its fields do not matter here.
    fn msg(id: u16) -> CmMessage<'static> {
        static ZEROS: [u8; MESSAGE_LEN] = [0; MESSAGE_LEN];
        parse_cm(&Mad::cm(id, 0), &ZEROS).unwrap()
    }
    fn req() -> CmMessage<'static> {
        msg(attr::REQ)
    }
    fn rep() -> CmMessage<'static> {
        msg(attr::REP)
    }
    fn rtu() -> CmMessage<'static> {
        msg(attr::RTU)
    }
    fn rej() -> CmMessage<'static> {
        msg(attr::REJ)
    }
    fn dreq() -> CmMessage<'static> {
        msg(attr::DREQ)
    }
    fn drep() -> CmMessage<'static> {
        msg(attr::DREP)
    }

    /// Runs `msgs` from `NotSeen`, failing at the first bad transition.
    fn run(msgs: &[(CmMessage<'static>, Role)]) -> Result<CmState, BadTransition> {
        msgs.iter()
            .try_fold(CmState::NotSeen, |s, (m, r)| next(s, m, *r))
    }

    use Role::{Client, Server};

    #[test]
    fn establishment_and_release() {
        let ok = [
            (req(), Client),
            (rep(), Server),
            (rtu(), Client),
            (dreq(), Client),
            (drep(), Server),
        ];
        assert_eq!(run(&ok), Ok(CmState::Closed));
        // The server may disconnect too, and both at once.
        let both = [
            (req(), Client),
            (rep(), Server),
            (rtu(), Client),
            (dreq(), Server),
            (dreq(), Client),
            (drep(), Client),
            (drep(), Server),
        ];
        assert_eq!(run(&both), Ok(CmState::Closed));
    }

    #[test]
    fn rejections() {
        assert_eq!(
            run(&[(req(), Client), (rej(), Server)]),
            Ok(CmState::Rejected)
        );
        assert_eq!(
            run(&[(req(), Client), (rep(), Server), (rej(), Client)]),
            Ok(CmState::Rejected)
        );
    }

    /// Retries and their answers, wherever they fall (reconnect.pcap has a
    /// REQ and a DREQ each sent twice).
    #[test]
    fn retries_leave_the_state_alone() {
        let retried = [
            (req(), Client),
            (req(), Client),
            (rep(), Server),
            (req(), Client),
            (rep(), Server),
            (rtu(), Client),
            (rep(), Server),
            (rtu(), Client),
            (dreq(), Client),
            (dreq(), Client),
            (drep(), Server),
            (dreq(), Client),
            (drep(), Server),
        ];
        assert_eq!(run(&retried), Ok(CmState::Closed));
        assert_eq!(
            run(&[
                (req(), Client),
                (rej(), Server),
                (req(), Client),
                (rej(), Server)
            ]),
            Ok(CmState::Rejected)
        );
    }

    #[test]
    fn bad_transitions_say_where_the_connection_stands() {
        // A DREP whose DREQ was not seen still closes the connection.
        let e = run(&[
            (req(), Client),
            (rep(), Server),
            (rtu(), Client),
            (drep(), Server),
        ])
        .unwrap_err();
        assert_eq!(
            e,
            BadTransition {
                from: CmState::Established,
                message: "DREP",
                sender: Server,
                then: CmState::Closed,
            }
        );
        assert_eq!(
            e.to_string(),
            "cm: DREP from the server while the connection is established"
        );
        // An RTU before any REP: connected all the same.
        let e = run(&[(req(), Client), (rtu(), Client)]).unwrap_err();
        assert_eq!((e.from, e.then), (CmState::Requested, CmState::Established));
        // Messages from the wrong side.
        assert!(run(&[(req(), Server)]).is_err());
        assert!(run(&[(req(), Client), (rep(), Client)]).is_err());
        assert!(run(&[(req(), Client), (rep(), Server), (rtu(), Server)]).is_err());
        // A stale REQ after establishment changes nothing.
        let e = run(&[
            (req(), Client),
            (rep(), Server),
            (rtu(), Client),
            (req(), Client),
        ])
        .unwrap_err();
        assert_eq!(e.then, CmState::Established);
        // A REJ once established is not how a connection ends.
        let e = run(&[
            (req(), Client),
            (rep(), Server),
            (rtu(), Client),
            (rej(), Server),
        ])
        .unwrap_err();
        assert_eq!(e.then, CmState::Established);
    }

    /// Every state and message gives a state, allowed or not: the table
    /// has no hole that could panic or lose a connection.
    #[test]
    fn every_state_and_message_has_an_answer() {
        let states = [
            CmState::NotSeen,
            CmState::Requested,
            CmState::Replied,
            CmState::Established,
            CmState::Rejected,
            CmState::Disconnecting,
            CmState::Closed,
        ];
        for s in states {
            for m in [req(), rep(), rtu(), rej(), dreq(), drep()] {
                for r in [Client, Server] {
                    let to = next(s, &m, r).unwrap_or_else(|e| e.then);
                    if s == CmState::Rejected {
                        assert_eq!(to, CmState::Rejected, "{s:?} {m:?} {r:?}");
                    }
                }
            }
        }
    }
}
