//! The engine's heap stays within `--memory-limit`, measured: a counting
//! allocator follows every byte the engine holds while the hostile floods
//! go through it, and the peak is compared with the budget. RSS (the other
//! measure, in `hostile.rs`) includes the allocator's slack and the reader's
//! buffers; this one is the engine's own accounting held to account.
//!
//! One test function: the allocator's counters are global, and tests of
//! one binary run on parallel threads.

// A global allocator is an unsafe trait; this one only counts, and passes
// every call to the system's unchanged.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Cursor;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use rdma_analyzer::engine::{Config, Engine, Event, Finding};
use rdma_analyzer::sources::pcap::read::{Batch, PcapReader};
use rdma_analyzer::synth::hostile::{self, Case};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call goes to the system allocator unchanged; the counters
// only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The peak heap above what was live before, while `capture` goes through
/// an engine with a budget of `limit` bytes; what the engine says it holds
/// at the end; the frames; and the entries it gave up for room.
fn peak_over(capture: &[u8], limit: usize) -> (usize, usize, u64, u64) {
    let mut reader =
        PcapReader::new(Cursor::new(capture), PathBuf::from("hostile.pcap")).expect("header");
    let mut batch = Batch::default();
    let mut out: Vec<Finding> = Vec::with_capacity(64);
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut engine = Engine::new(Config {
        memory_limit: limit,
        ..Config::default()
    });
    let mut frames = 0;
    loop {
        // The last batch comes with `false`: its frames count all the same.
        let more = reader
            .fill(&mut batch)
            .expect("the generated capture reads");
        for f in &batch.frames {
            engine.handle(Event::Frame(batch.frame(f)), &mut out);
            out.clear();
            frames += 1;
        }
        if !more {
            break;
        }
    }
    let used = engine.memory_used();
    let e = &engine.state().evictions;
    let evicted = e.connections + e.qps + e.calls;
    engine.finish(&mut drop);
    (PEAK.load(Ordering::Relaxed) - base, used, frames, evicted)
}

#[test]
fn the_engine_holds_no_more_than_its_budget() {
    const MIB: usize = 1 << 20;
    // The reader's batch buffer (up to 512 KiB) and the findings of one
    // frame are outside the engine's budget.
    const OUTSIDE: usize = 640 << 10;
    let cases = [
        ("unanswered", Case::Unanswered, 1024, 40, 8 * MIB),
        (
            "unanswered, one connection",
            Case::Unanswered,
            1,
            40_000,
            8 * MIB,
        ),
        ("qp-flood", Case::QpFlood, 50_000, 1, 8 * MIB),
        ("xid-reuse", Case::XidReuse, 1, 20_000, 8 * MIB),
        ("unanswered, 32 MiB", Case::Unanswered, 512, 100, 32 * MIB),
    ];
    let mut table = String::new();
    for (name, case, connections, calls, limit) in cases {
        let capture = hostile::write(case, connections, calls, Vec::new()).expect("generates");
        let (peak, used, frames, evicted) = peak_over(&capture, limit);
        table.push_str(&format!(
            "{name}: {frames} frames, {evicted} evicted, peak heap {:.1} MiB, accounted at the end {:.1} MiB, budget {} MiB\n",
            peak as f64 / MIB as f64,
            used as f64 / MIB as f64,
            limit / MIB
        ));
        let expected = match case {
            Case::Unanswered => u64::from(connections) * calls,
            Case::QpFlood => u64::from(connections),
            _ => 2 + 2 * calls,
        };
        assert_eq!(frames, expected, "{name}: every frame went through");
        assert!(evicted > 0, "{name}: the flood did not fill the budget");
        assert!(
            used <= limit,
            "{name}: the engine counts {used} bytes against a budget of {limit}\n{table}"
        );
        assert!(
            peak <= limit + OUTSIDE,
            "{name}: the engine's heap peaked at {peak} bytes over a budget of {limit}\n{table}"
        );
    }
    eprint!("{table}");
}
