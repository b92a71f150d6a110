//! Full-stack dissection of real frames: an RC SEND carrying an RPC-over-RDMA
//! NFS call, an RPC reply whose transport header has a write list, a CM REQ
//! with RFC 8797 private data, and an RDMA WRITE Middle, with and without
//! ICRC verification.
//! Targets (issue 2): under 100 ns per RPC-carrying frame, under 20 ns per
//! WRITE Middle.
//!
//! Each is measured through both entry points: `dissect`, which returns the
//! ~720-byte `Dissection` by value (criterion keeps the result, so the copy
//! is in the time), and `dissect_into`, which fills a fresh
//! `Dissection::default()` in place, as the analyzer's engine does.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{dissect, dissect_into, Config, Dissection};

#[path = "../tests/common/mod.rs"]
mod common;

fn bench(c: &mut Criterion) {
    let call = common::rpc_call_send();
    let middle = common::write_middle();
    let reply = common::reply_with_write_list();
    let req = common::cm_req();
    let verify = Config::default();
    let skip = Config::default().with_verify_icrc(false);
    let mut g = c.benchmark_group("stack");
    g.throughput(Throughput::Elements(1));
    for (name, frame) in [
        ("rpc_call_send", &call),
        ("write_middle", &middle),
        ("reply_write_list", &reply),
        ("cm_req_private", &req),
    ] {
        g.bench_function(format!("{name}/icrc"), |b| {
            b.iter(|| dissect(LinkType::ETHERNET, std::hint::black_box(frame), &verify))
        });
        g.bench_function(format!("{name}/no_icrc"), |b| {
            b.iter(|| dissect(LinkType::ETHERNET, std::hint::black_box(frame), &skip))
        });
        for (mode, config) in [("icrc", &verify), ("no_icrc", &skip)] {
            g.bench_function(format!("{name}/{mode}/in_place"), |b| {
                b.iter(|| {
                    let mut d = Dissection::default();
                    dissect_into(
                        LinkType::ETHERNET,
                        std::hint::black_box(frame),
                        config,
                        &mut d,
                    );
                    std::hint::black_box(&d);
                })
            });
        }
    }
    g.finish();
    let all = common::frames("v3-ddp.pcap");
    let bytes: usize = all.iter().map(Vec::len).sum();
    let mut g = c.benchmark_group("capture");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("v3-ddp/all_frames", |b| {
        b.iter(|| {
            for f in &all {
                std::hint::black_box(dissect(LinkType::ETHERNET, f, &verify));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
