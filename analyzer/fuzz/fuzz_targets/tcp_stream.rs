//! The iWARP TCP stream reassembler over arbitrary segments: SYN, FIN
//! and RST anywhere, sequence numbers anywhere, payloads cut by a snap
//! length, negotiation and forgetting between them, several directions
//! under one small limit. It must not panic and must never hold more
//! than its limit (the entry point asserts it after every segment).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rdma_analyzer::engine::fuzz_tcp_stream(data);
});
