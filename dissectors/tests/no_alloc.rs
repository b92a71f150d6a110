//! The hot paths allocate nothing: a counting global allocator proves it on
//! real frames (an RPC-carrying SEND and an RDMA WRITE Middle), and on every
//! frame of the real captures.

#![allow(unsafe_code)] // a global allocator needs it; the library itself forbids unsafe

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{dissect, Config, RpcRdmaDecode};

mod common;

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_of(f: impl FnOnce()) -> usize {
    let before = ALLOCS.load(Ordering::SeqCst);
    f();
    ALLOCS.load(Ordering::SeqCst) - before
}

#[test]
fn hot_paths_do_not_allocate() {
    let call = common::rpc_call_send();
    let middle = common::write_middle();
    let all: Vec<Vec<u8>> = ["v3-inline.pcap", "v3-ddp.pcap"]
        .iter()
        .flat_map(|n| common::frames(n))
        .collect();
    let config = Config::default();
    let always = Config::default().with_rpcrdma(RpcRdmaDecode::Always);
    let n = allocations_of(|| {
        let d = dissect(LinkType::ETHERNET, &call, &config);
        assert!(d.nfs().is_some() && d.rpc().is_some());
        std::hint::black_box(&d);
    });
    assert_eq!(n, 0, "dissecting an RPC call SEND allocated {n} times");
    let n = allocations_of(|| {
        std::hint::black_box(dissect(LinkType::ETHERNET, &middle, &config));
    });
    assert_eq!(n, 0, "dissecting a WRITE Middle allocated {n} times");
    let n = allocations_of(|| {
        for f in &all {
            std::hint::black_box(dissect(LinkType::ETHERNET, f, &always));
        }
    });
    assert_eq!(
        n,
        0,
        "dissecting {} real frames allocated {n} times",
        all.len()
    );
}
