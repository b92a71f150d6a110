//! The indexes a frame's lookups go through, so that no frame costs a walk
//! of every connection: connections can be made from traffic alone, and a
//! few thousand of them would otherwise make each stray frame (a Write,
//! Read or reply to a QP no connection owns) cost tens of microseconds.
//!
//! ```text
//!  half_open[(server address, client address, Rkey r)]  a call of it named STag r
//!  half_open[(server address, client address, Xid x)]   a forward call x is outstanding
//!  comm_ids[(address, comm id)]                          a side at that address has that CM comm id
//! ```
//!
//! A half-open connection is one made from traffic whose server QP is known
//! and whose client QP is not yet: the first Write, Read or reply to the
//! client's QP that names its STag or XID gives it.
//!
//! Each entry lists connections in id order, and a lookup takes the newest
//! that still answers when its own tables are asked (so an entry left
//! behind can cost a look, never a wrong answer). Entries come and go with what they index: a call's STags and
//! XID when it leaves; all of a connection's when its client QP becomes
//! known, when it closes out or is evicted; its comm ids when it goes.
//! Entries that no longer answer are dropped when met, so a lookup is
//! constant time amortised whatever went wrong in keeping them in step.

use super::cost::HALF_OPEN_ENTRY_BYTES;
use crate::keys::{Addr, CallKey, ConnId, Map, QpKey};
use crate::model::Role;
use crate::Engine;
use rdma_dissectors::rpcrdma::Xid;

use super::state::{Corr, Txn};

/// What a frame to a half-open connection's client QP can pair by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Tag {
    /// An RDMA Write or Read request's R_Key: an STag a call advertised.
    Rkey(u32),
    /// A reply's XID: a forward call outstanding.
    Xid(u32),
}

#[derive(Debug, Default)]
pub(crate) struct Index {
    pub half_open: Map<(Addr, Addr, Tag), Vec<ConnId>>,
    pub comm_ids: Map<(Addr, u32), Vec<ConnId>>,
}

fn add<K: std::hash::Hash + Eq>(map: &mut Map<K, Vec<ConnId>>, key: K, id: ConnId) {
    let v = map.entry(key).or_default();
    if let Err(at) = v.binary_search(&id) {
        v.insert(at, id);
    }
}

fn remove<K: std::hash::Hash + Eq>(map: &mut Map<K, Vec<ConnId>>, key: &K, id: ConnId) {
    if let Some(v) = map.get_mut(key) {
        if let Ok(at) = v.binary_search(&id) {
            v.remove(at);
        }
        if v.is_empty() {
            map.remove(key);
        }
    }
}

/// The tags of `corr` that a half-open connection is indexed under: the
/// STags its calls name and its outstanding forward calls' XIDs.
fn tags(corr: &Corr) -> Vec<Tag> {
    corr.stags
        .keys()
        .map(|&h| Tag::Rkey(h))
        .chain(
            corr.calls
                .keys()
                .filter(|k| !k.backchannel)
                .map(|k| Tag::Xid(k.xid.0)),
        )
        .collect()
}

impl Engine {
    /// The server's and the client's addresses of `id` if it is half-open.
    pub(crate) fn half_open_ends(&self, id: ConnId) -> Option<(Addr, Addr)> {
        let c = self.state.connections.get(&id)?;
        let peer = self.conns.corr.get(&id)?.peer_addr?;
        match (c.client, c.server) {
            (None, Some(s)) => Some((s.addr, peer)),
            _ => None,
        }
    }

    /// Indexes call `t` of `key`, just put in `id`'s tables, if `id` is
    /// half-open; returns the bytes the budget counts for its entries.
    pub(crate) fn index_call(&mut self, id: ConnId, key: CallKey, t: &Txn) -> usize {
        let Some((server, client)) = self.half_open_ends(id) else {
            return 0;
        };
        let map = &mut self.conns.index.half_open;
        let mut n = 0;
        for s in &t.rec.chunks {
            add(map, (server, client, Tag::Rkey(s.handle)), id);
            n += 1;
        }
        if !key.backchannel {
            add(map, (server, client, Tag::Xid(key.xid.0)), id);
            n += 1;
        }
        n * HALF_OPEN_ENTRY_BYTES
    }

    /// Takes call `t` of `key`, just gone from `id`'s tables, off the index:
    /// the STags no call of `id` names any more, its XID if no call of it
    /// is left.
    pub(crate) fn unindex_call(&mut self, id: ConnId, key: CallKey, t: &Txn) {
        let Some((server, client)) = self.half_open_ends(id) else {
            return;
        };
        let Some(corr) = self.conns.corr.get(&id) else {
            return;
        };
        let map = &mut self.conns.index.half_open;
        for s in &t.rec.chunks {
            if !corr.stags.contains_key(&s.handle) {
                remove(map, &(server, client, Tag::Rkey(s.handle)), id);
            }
        }
        if !key.backchannel && !corr.calls.contains(&key) {
            remove(map, &(server, client, Tag::Xid(key.xid.0)), id);
        }
    }

    /// Takes every entry of `id` off the half-open index: its client QP is
    /// about to be known, or its calls all go.
    pub(crate) fn unindex_half_open(&mut self, id: ConnId) {
        let Some((server, client)) = self.half_open_ends(id) else {
            return;
        };
        let Some(corr) = self.conns.corr.get(&id) else {
            return;
        };
        for tag in tags(corr) {
            remove(&mut self.conns.index.half_open, &(server, client, tag), id);
        }
    }

    /// Gives half-open `id` its client QP.
    pub(crate) fn set_client(&mut self, id: ConnId, client: QpKey) {
        self.unindex_half_open(id);
        if let Some(c) = self.state.connections.get_mut(&id) {
            c.client = Some(client);
        }
    }

    /// The newest half-open connection whose server sends from `server`,
    /// whose client is at `client`, and which `tag` pairs: a call of it
    /// names the STag, or a forward call of the XID is outstanding.
    pub(crate) fn half_open_conn(
        &mut self,
        server: Addr,
        client: Addr,
        tag: Tag,
    ) -> Option<ConnId> {
        let key = (server, client, tag);
        let ids = self.conns.index.half_open.get(&key)?;
        let answers = |id: &ConnId| {
            let (Some(c), Some(corr)) = (self.state.connections.get(id), self.conns.corr.get(id))
            else {
                return false;
            };
            c.client.is_none()
                && c.server.is_some_and(|s| s.addr == server)
                && corr.peer_addr == Some(client)
                && match tag {
                    Tag::Rkey(r) => corr.stags.contains_key(&r),
                    Tag::Xid(x) => corr.calls.contains(&CallKey {
                        backchannel: false,
                        xid: Xid(x),
                    }),
                }
        };
        let passed = ids.iter().rev().position(answers);
        let id = passed.and_then(|i| ids.get(ids.len() - 1 - i)).copied();
        // Those passed over no longer answer: they go.
        let stale = passed.unwrap_or(ids.len());
        if stale > 0 {
            if let Some(v) = self.conns.index.half_open.get_mut(&key) {
                v.truncate(v.len() - stale);
                if v.is_empty() {
                    self.conns.index.half_open.remove(&key);
                }
            }
        }
        id
    }

    /// Indexes `id`'s side at `addr` under its CM comm id.
    pub(crate) fn index_comm_id(&mut self, id: ConnId, addr: Addr, comm_id: u32) {
        add(&mut self.conns.index.comm_ids, (addr, comm_id), id);
    }

    /// Takes connection `c`, gone, off the comm id index.
    pub(crate) fn unindex_comm_ids(&mut self, c: &crate::model::Connection) {
        let sides = [(c.client, c.client_comm_id), (c.server, c.server_comm_id)];
        for (qp, comm_id) in sides {
            if let (Some(qp), Some(comm_id)) = (qp, comm_id) {
                remove(&mut self.conns.index.comm_ids, &(qp.addr, comm_id), c.id);
            }
        }
    }

    /// The connection whose side at `addr` has CM communication ID
    /// `comm_id`, and which side that is: the newest, its client side
    /// before its server side.
    pub(crate) fn conn_by_comm_id(&self, addr: Addr, comm_id: u32) -> Option<(ConnId, Role)> {
        let ids = self.conns.index.comm_ids.get(&(addr, comm_id))?;
        ids.iter().rev().find_map(|id| {
            let c = self.state.connections.get(id)?;
            if c.client_comm_id == Some(comm_id) && c.client.is_some_and(|q| q.addr == addr) {
                Some((c.id, Role::Client))
            } else if c.server_comm_id == Some(comm_id) && c.server.is_some_and(|q| q.addr == addr)
            {
                Some((c.id, Role::Server))
            } else {
                None
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use crate::Event;
    use rdma_synth::hostile::{self, Case};

    /// The engine after `case`, written as a capture and read back frame by
    /// frame, as it stands before the capture's end closes every
    /// connection out.
    fn after(case: Case, connections: u32, calls: u64, config: Config) -> Engine {
        let mut bytes = Vec::new();
        hostile::write(case, connections, calls, &mut bytes).unwrap();
        let mut reader =
            rdma_capture::PcapReader::new(std::io::Cursor::new(bytes), "hostile.pcap".into())
                .unwrap();
        let mut e = Engine::new(config);
        let mut out = Vec::new();
        while let Some(p) = reader.next_packet().unwrap() {
            e.handle(Event::Frame(p), &mut out);
            out.clear();
        }
        e
    }

    /// The index holds exactly what the walks it replaced would find: every
    /// entry a live half-open connection that answers it, and every tag of
    /// every half-open connection an entry. Returns the entries.
    fn check(e: &Engine) -> usize {
        let mut n = 0;
        for (&(server, client, tag), ids) in &e.conns.index.half_open {
            assert!(!ids.is_empty() && ids.windows(2).all(|w| w[0] < w[1]));
            for id in ids {
                assert_eq!(e.half_open_ends(*id), Some((server, client)), "{id}");
                let corr = e.conns.corr.get(id).unwrap();
                assert!(tags(corr).contains(&tag), "{id} {tag:?}");
                n += 1;
            }
        }
        let mut expected = 0;
        for id in e.state.connections.keys() {
            let Some((server, client)) = e.half_open_ends(*id) else {
                continue;
            };
            for tag in tags(e.conns.corr.get(id).unwrap()) {
                let ids = e.conns.index.half_open.get(&(server, client, tag));
                assert!(ids.is_some_and(|v| v.contains(id)), "{id} {tag:?}");
                expected += 1;
            }
        }
        assert_eq!(n, expected);
        for (&(addr, comm_id), ids) in &e.conns.index.comm_ids {
            for id in ids {
                assert!(e.conn_by_comm_id(addr, comm_id).is_some(), "{id}");
            }
        }
        n
    }

    #[test]
    fn half_open_connections_are_indexed_by_what_pairs_them() {
        // 64 connections, 3 calls each with a reply chunk: an STag and an
        // XID per call, all outstanding.
        let e = after(Case::Unanswered, 64, 3, Config::default());
        assert_eq!(check(&e), 64 * 3 * 2);
        // The flood's frames find nothing and leave the index as it was.
        let e = after(Case::UnownedFlood, 64, 3000, Config::default());
        assert_eq!(check(&e), 64 * 2);
    }

    #[test]
    fn evicted_connections_and_calls_leave_the_index() {
        // 16 connections at most: the calls go round 64 QPs, so each call
        // finds its connection evicted and makes a new one, with one call.
        let config = Config {
            max_connections: 16,
            ..Config::default()
        };
        let e = after(Case::Unanswered, 64, 10, config);
        assert_eq!(e.state.connections.len(), 16);
        assert_eq!(e.state.evictions.connections, 64 * 10 - 16);
        assert_eq!(check(&e), 16 * 2);
        // 4 calls per connection at most: the older 6 of 10 went.
        let config = Config {
            max_outstanding: 4,
            ..Config::default()
        };
        let e = after(Case::Unanswered, 4, 10, config);
        assert_eq!(e.state.evictions.calls, 4 * 6);
        assert_eq!(check(&e), 4 * 4 * 2);
    }

    #[test]
    fn a_connection_whose_client_qp_is_known_leaves_the_index() {
        // Calls answered: each reply made its connection whole.
        let e = after(Case::XidReuse, 1, 50, Config::default());
        assert_eq!(check(&e), 0);
        assert!(e.conns.index.half_open.is_empty());
    }

    #[test]
    fn the_cm_comm_ids_find_their_connection() {
        let e = after(Case::StrayPsnAtStart, 1, 0, Config::default());
        check(&e);
        let c = e.state.connections.values().next().unwrap();
        let (client, server) = (c.client.unwrap(), c.server.unwrap());
        assert_eq!(
            e.conn_by_comm_id(client.addr, c.client_comm_id.unwrap()),
            Some((c.id, Role::Client))
        );
        assert_eq!(
            e.conn_by_comm_id(server.addr, c.server_comm_id.unwrap()),
            Some((c.id, Role::Server))
        );
        assert_eq!(e.conn_by_comm_id(server.addr, 0x5555), None);
    }
}
