//! Dissects one real frame N times: a fixed workload for instruction
//! counting under `valgrind --tool=callgrind` (stable on a noisy machine,
//! unlike wall-clock benchmarks).
//!
//! ```text
//! cargo build --release -p rdma-dissectors --example dissect_loop
//! valgrind --tool=callgrind target/release/examples/dissect_loop call 100000
//! ```
//!
//! Frames: `call` (RPC call in a SEND Only), `reply` (RPC reply whose
//! transport header has a write list), `req` (CM REQ MAD with RFC 8797
//! private data), `middle` (RDMA WRITE Middle). Count a run of 0 frames too
//! and subtract: what is left is the per-frame cost.

use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{dissect, Config};

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "call".into());
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let icrc = args.next().as_deref() != Some("no-icrc");
    let frame = match which.as_str() {
        "middle" => common::write_middle(),
        "reply" => common::reply_with_write_list(),
        "req" => common::cm_req(),
        _ => common::rpc_call_send(),
    };
    let config = Config::default().with_verify_icrc(icrc);
    let mut sink = 0u64;
    for _ in 0..n {
        let d = dissect(LinkType::ETHERNET, std::hint::black_box(&frame), &config);
        sink = sink.wrapping_add(d.payload().len() as u64);
    }
    println!("{which} x{n} icrc={icrc}: {sink}");
}
