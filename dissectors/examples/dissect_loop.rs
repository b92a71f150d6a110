//! Dissects one real frame N times: a fixed workload for instruction
//! counting under `valgrind --tool=callgrind` (stable on a noisy machine,
//! unlike wall-clock benchmarks).
//!
//! ```text
//! cargo build --release -p rdma-dissectors --example dissect_loop
//! valgrind --tool=callgrind target/release/examples/dissect_loop call 100000
//! ```

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
