//! The engine over sequences of protocol events: structure-aware.
//!
//! The grammar is two-level. First the synthetic generator's options (how
//! many connections and calls, which transfer modes, MTU, credits, inline
//! thresholds, remote invalidation, injected RFC violations): it writes a
//! well-formed conversation, CM exchange, RPC-over-RDMA calls and replies,
//! RDMA Reads and Writes. Then edits on those frames (drop, duplicate,
//! swap, corrupt a byte, cut, move in time, set a PSN far off), which make
//! the hostile sequences: lost, repeated and reordered packets, stray
//! PSNs, clocks going backwards. The engine runs under a small memory
//! budget: it must not panic, and its tables must stay within the budget.
#![no_main]
use std::collections::HashMap;
use std::sync::Mutex;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rdma_analyzer::engine::{Config, Engine, Event, Finding, Frame};
use rdma_analyzer::sources::pcap::PcapReader;
use rdma_analyzer::synth::{generate, Inject, Mix, Options};
use rdma_dissectors::link::LinkType;

/// Which of 1024 conversations: its bits choose the generator's options
/// (so that a small cache holds every conversation and most inputs only
/// differ in their edits).
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Conversation(u16);

#[derive(Arbitrary, Debug)]
enum Edit {
    Drop(u16),
    Duplicate(u16),
    Swap(u16),
    Flip { frame: u16, at: u16, xor: u8 },
    Cut { frame: u16, len: u16 },
    Time { frame: u16, delta_us: i16 },
    /// Sets the BTH PSN of a RoCEv2 frame (offset 42 + 9 in an untagged
    /// Ethernet/IPv4/UDP frame).
    Psn { frame: u16, psn: u32 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    conversation: Conversation,
    edits: Vec<Edit>,
    /// The budget, in KiB above 1 MiB.
    memory_kib: u16,
}

impl Conversation {
    fn options(&self) -> Options {
        let r = u32::from(self.0 % 1024);
        let bit = |n: u32| r >> n & 1;
        let mix = Mix {
            inline: 1 + 3 * bit(0),
            read: 2 * bit(1),
            write: 2 * bit(2),
            readdir: bit(3),
            compound: bit(4),
            longcall: bit(5),
        };
        let inject: Vec<Inject> = match r >> 6 {
            0..=3 => Vec::new(),
            k => vec![Inject::ALL[(k as usize * 7 + r as usize) % Inject::ALL.len()]],
        };
        Options {
            calls: u64::from(4 + r % 9),
            connections: 1 + r % 3,
            mix,
            io_size: 512 << (r % 4),
            mtu: [256, 1024, 4096][(r % 3) as usize],
            window: 1 + r % 6,
            credits_granted: [0, 1, 4, 32][(r >> 2 & 3) as usize],
            credits_requested: 8 + r % 32,
            inline_threshold: [1024, 4096][(r >> 4 & 1) as usize],
            remote_invalidation: bit(7) == 1,
            size: None,
            seed: u64::from(r),
            inject,
            microseconds: false,
        }
    }

    /// The conversation's frames (timestamp, bytes), from a small cache:
    /// most inputs differ only in their edits.
    fn frames(&self) -> Vec<(u64, Vec<u8>)> {
        static CACHE: Mutex<Option<HashMap<Conversation, Vec<(u64, Vec<u8>)>>>> = Mutex::new(None);
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let map = cache.get_or_insert_with(HashMap::new);
        if let Some(f) = map.get(self) {
            return f.clone();
        }
        let Ok((_, bytes)) = generate(&self.options(), Vec::new()) else {
            return Vec::new();
        };
        let mut frames = Vec::new();
        if let Ok(mut r) = PcapReader::new(bytes.as_slice(), "synth".into()) {
            while let Ok(Some(p)) = r.next_packet() {
                frames.push((p.ts_ns, p.data.to_vec()));
            }
        }
        map.insert(*self, frames.clone());
        frames
    }
}

fn edit(frames: &mut Vec<(u64, Vec<u8>)>, e: &Edit) {
    let n = frames.len();
    if n == 0 {
        return;
    }
    let at = |i: u16| usize::from(i) % n;
    match *e {
        Edit::Drop(i) => {
            frames.remove(at(i));
        }
        Edit::Duplicate(i) => {
            let f = frames[at(i)].clone();
            frames.insert(at(i), f);
        }
        Edit::Swap(i) => frames.swap(at(i), (at(i) + 1) % n),
        Edit::Flip { frame, at: b, xor } => {
            let f = &mut frames[at(frame)].1;
            if !f.is_empty() {
                let k = usize::from(b) % f.len();
                f[k] ^= xor;
            }
        }
        Edit::Cut { frame, len } => {
            let f = &mut frames[at(frame)].1;
            f.truncate(usize::from(len) % (f.len() + 1));
        }
        Edit::Time { frame, delta_us } => {
            let t = &mut frames[at(frame)].0;
            *t = t.saturating_add_signed(i64::from(delta_us) * 1000);
        }
        Edit::Psn { frame, psn } => {
            let f = &mut frames[at(frame)].1;
            if let Some(b) = f.get_mut(42 + 9..42 + 12) {
                b.copy_from_slice(&psn.to_be_bytes()[1..]);
            }
        }
    }
}

fuzz_target!(|input: Input| {
    let mut frames = input.conversation.frames();
    for e in input.edits.iter().take(32) {
        edit(&mut frames, e);
    }
    let limit = (1 << 20) + usize::from(input.memory_kib) * 1024;
    let mut engine = Engine::new(Config {
        memory_limit: limit,
        ..Config::default()
    });
    let mut out: Vec<Finding> = Vec::new();
    for (i, (ts, data)) in frames.iter().enumerate() {
        engine.handle(
            Event::Frame(Frame {
                number: i as u64 + 1,
                ts_ns: *ts,
                link: LinkType::ETHERNET,
                orig_len: data.len() as u32,
                data,
                icrc: None,
            }),
            &mut out,
        );
        out.clear();
        // The tables stay within the budget, bar one call's overshoot.
        if i % 8 == 7 || i + 1 == frames.len() {
            let used = engine.memory_used();
            assert!(used <= limit + limit / 10 + (64 << 10), "{used} bytes of a {limit}-byte budget");
        }
    }
    engine.handle(Event::End, &mut out);
    assert_eq!(engine.outstanding_calls(), 0, "the end closes every call out");
});
