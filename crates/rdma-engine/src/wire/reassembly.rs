//! Multi-packet Sends put back together, and the bytes their prefixes hold
//! in the budget: a queue pair keeps the message it is receiving (the
//! first `max_message_prefix` bytes, enough to decode its headers), and
//! the prefixes of all queue pairs together stay within their share.

/// A multi-packet Send being put back together.
#[derive(Debug, Clone)]
pub(crate) struct Reassembly {
    pub first_frame: u64,
    pub prefix: Vec<u8>,
    pub total: usize,
    /// A packet of it was cut by the capture: `prefix` ends there, for
    /// bytes after a gap would not be the message's.
    pub cut: bool,
}

/// One packet of a Send: its payload as captured, its length on the wire,
/// and whether the capture cut it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendPacket<'a> {
    pub bytes: &'a [u8],
    pub total: usize,
    pub cut: bool,
}

/// Bytes the queue pairs' Send prefixes hold, all together.
#[derive(Debug, Default)]
pub(crate) struct Prefixes {
    bytes: usize,
}

impl Prefixes {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes a share of `limit` still has room for.
    pub fn room(&self, limit: usize) -> usize {
        limit.saturating_sub(self.bytes)
    }

    /// Starts the message whose First packet is `p` in `slot`, keeping
    /// `keep` bytes of it; a message the slot held unfinished is dropped.
    pub fn start(
        &mut self,
        slot: &mut Option<Reassembly>,
        first_frame: u64,
        p: SendPacket<'_>,
        keep: usize,
    ) {
        let r = Reassembly {
            first_frame,
            prefix: p.bytes.get(..keep).unwrap_or_default().to_vec(),
            total: p.total,
            cut: p.cut,
        };
        let held = r.prefix.capacity();
        let freed = slot.replace(r).map_or(0, |r| r.prefix.capacity());
        self.bytes = (self.bytes + held).saturating_sub(freed);
    }

    /// Adds Middle packet `p` to `r`, up to `room` more bytes.
    pub fn extend(&mut self, r: &mut Reassembly, p: SendPacket<'_>, room: usize) {
        let held = r.prefix.capacity();
        append(r, p, room);
        self.bytes += r.prefix.capacity() - held;
    }

    /// Adds Last packet `p` to the message in `slot`, up to `room` more
    /// bytes, and hands the whole message out of the slot.
    pub fn finish(
        &mut self,
        slot: &mut Option<Reassembly>,
        p: SendPacket<'_>,
        room: usize,
    ) -> Option<Reassembly> {
        let r = slot.as_mut()?;
        let held = r.prefix.capacity();
        append(r, p, room);
        self.bytes = self.bytes.saturating_sub(held);
        slot.take()
    }

    /// Forgets the message `slot` held (its queue pair goes or starts over).
    pub fn forget(&mut self, slot: Option<&Reassembly>) {
        if let Some(r) = slot {
            self.bytes = self.bytes.saturating_sub(r.prefix.capacity());
        }
    }
}

/// Adds `p` to `r`: up to `room` bytes, none after a cut (bytes after a gap
/// would not be the message's).
fn append(r: &mut Reassembly, p: SendPacket<'_>, room: usize) {
    let take = if r.cut { 0 } else { p.bytes.len().min(room) };
    r.prefix
        .extend_from_slice(p.bytes.get(..take).unwrap_or_default());
    r.total += p.total;
    r.cut |= p.cut;
}

#[cfg(test)]
mod tests {
    use super::{Prefixes, Reassembly, SendPacket};

    fn packet(bytes: &[u8], cut: bool) -> SendPacket<'_> {
        SendPacket {
            bytes,
            total: bytes.len(),
            cut,
        }
    }

    #[test]
    fn a_send_is_put_back_together_and_its_bytes_given_back() {
        let mut p = Prefixes::default();
        let mut slot: Option<Reassembly> = None;
        p.start(&mut slot, 5, packet(&[1, 2, 3], false), 3);
        assert_eq!(p.bytes(), slot.as_ref().unwrap().prefix.capacity());
        p.extend(slot.as_mut().unwrap(), packet(&[4, 5], false), 1);
        let r = p.finish(&mut slot, packet(&[6], false), 8).unwrap();
        assert!(slot.is_none());
        assert_eq!((r.first_frame, r.total), (5, 6));
        assert_eq!(
            r.prefix,
            [1, 2, 3, 4, 6],
            "the Middle had room for one byte"
        );
        assert_eq!(p.bytes(), 0);
    }

    #[test]
    fn nothing_is_kept_past_a_cut() {
        let mut p = Prefixes::default();
        let mut slot = None;
        p.start(&mut slot, 1, packet(&[1, 2], true), 2);
        let r = p.finish(&mut slot, packet(&[3, 4], false), 8).unwrap();
        assert_eq!(
            (r.prefix.as_slice(), r.total, r.cut),
            (&[1, 2][..], 4, true)
        );
    }

    #[test]
    fn a_new_first_packet_drops_the_unfinished_message() {
        let mut p = Prefixes::default();
        let mut slot = None;
        p.start(&mut slot, 1, packet(&[0; 64], false), 64);
        p.start(&mut slot, 2, packet(&[0; 8], false), 8);
        assert_eq!(p.bytes(), slot.as_ref().unwrap().prefix.capacity());
        p.forget(slot.as_ref());
        assert_eq!((p.bytes(), p.room(100)), (0, 100));
    }
}
