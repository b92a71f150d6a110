//! Walks a pcap or pcapng file with the dissector library alone and prints a
//! count of what it found per layer, plus every parse error.
//!
//! ```text
//! cargo run -p rdma-dissectors --example walk_pcap -- captures/v3-ddp.pcap
//! cargo run -p rdma-dissectors --example walk_pcap -- captures/v3-ddp.pcap --seeds dissectors/fuzz/corpus
//! ```
//!
//! With `--seeds DIR` it also writes fuzzing seeds: each frame cut at the
//! layer each fuzz target parses (`DIR/<target>/<frame>`).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use pcap_parser::{Block, PcapBlockOwned, PcapError};
use rdma_dissectors::link::LinkType;
use rdma_dissectors::stack::{self, Dissection};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().ok_or("usage: walk_pcap FILE [--seeds DIR]")?);
    let seeds = match (args.next().as_deref(), args.next()) {
        (Some("--seeds"), Some(d)) => Some(PathBuf::from(d)),
        _ => None,
    };
    let mut reader = pcap_parser::create_reader(1 << 20, File::open(&path)?)?;
    let mut links: Vec<LinkType> = Vec::new();
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut frame = 0u64;
    let config = stack::Config::default();
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                let data = match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        links = vec![LinkType(h.network.0 as u32)];
                        None
                    }
                    PcapBlockOwned::Legacy(b) => Some((links.first().copied(), b.data)),
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => {
                        links.clear();
                        None
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        links.push(LinkType(idb.linktype.0 as u32));
                        None
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                        Some((links.get(epb.if_id as usize).copied(), epb.data))
                    }
                    PcapBlockOwned::NG(_) => None,
                };
                if let Some((link, data)) = data {
                    frame += 1;
                    let d = stack::dissect(link.unwrap_or(LinkType::ETHERNET), data, &config);
                    tally(&d, &mut counts);
                    if let Some(e) = d.stop {
                        println!("frame {frame}: {e}");
                    }
                    if let Some(dir) = &seeds {
                        write_seeds(dir, frame, data, &d)?;
                    }
                }
                reader.consume(offset);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                if let Err(e) = reader.refill() {
                    return Err(format!("{}: frame {}: {e:?}", path.display(), frame + 1).into());
                }
            }
            Err(e) => {
                let msg = format!("{}: frame {}: {e:?}", path.display(), frame + 1);
                return Err(msg.into());
            }
        }
    }
    println!("{}: {frame} frames", path.display());
    for (k, v) in counts {
        println!("  {k:<20} {v}");
    }
    Ok(())
}

fn tally(d: &Dissection<'_>, counts: &mut BTreeMap<&'static str, u64>) {
    let mut add = |k: &'static str, present: bool| {
        if present {
            *counts.entry(k).or_default() += 1;
        }
    };
    add("ip", d.ip.is_some());
    add("udp", d.udp.is_some());
    add("bth", d.bth().is_some());
    add("reth", d.reth().is_some());
    add("aeth", d.aeth().is_some());
    add("ieth", d.ieth().is_some());
    add("deth", d.deth().is_some());
    add("mad", d.mad().is_some());
    add("cm", d.cm().is_some());
    add("cma", d.cma().is_some());
    add("rpcrdma_cm_private", d.rpcrdma_cm_private().is_some());
    add("rpcrdma", d.rpcrdma().is_some());
    add("rpc", d.rpc().is_some());
    add("nfs", d.nfs().is_some());
    add("errors", d.stop.is_some());
}

/// Writes the bytes each fuzz target starts from.
fn write_seeds(dir: &Path, frame: u64, data: &[u8], d: &Dissection<'_>) -> std::io::Result<()> {
    let base = data.as_ptr() as usize;
    let from = |s: &[u8]| s.as_ptr() as usize - base;
    let put = |target: &str, bytes: &[u8]| -> std::io::Result<()> {
        let p = dir.join(target);
        std::fs::create_dir_all(&p)?;
        std::fs::write(p.join(frame.to_string()), bytes)
    };
    put("stack", data)?;
    put("link", data)?;
    // Whole frames: the lengths the ICRC's CRC kernel sees.
    put("crc32", data)?;
    if let Some(udp) = d.udp {
        // BTH starts 8 bytes after the UDP header's start.
        let ip_len = d.ip.map_or(0, |i| i.header().len());
        let start = 14 + ip_len + 8;
        if let Some(ib) = data.get(start..data.len().saturating_sub(4)) {
            put("ib_transport", ib)?;
        }
        let _ = udp;
    }
    if !d.payload().is_empty() {
        let p = &data[from(d.payload())..from(d.payload()) + d.payload().len()];
        if d.mad().is_some() {
            put("mad_cm", p)?;
        } else {
            put("rpcrdma", p)?;
            if let Some(h) = &d.rpcrdma() {
                if let Some(rpc) = p.get(h.header_len()..) {
                    put("oncrpc", rpc)?;
                }
            }
        }
    }
    if let Some(cm) = d.cm() {
        let private = match cm {
            rdma_dissectors::ib::cm::CmMessage::Req(r) => Some(r.private_data),
            rdma_dissectors::ib::cm::CmMessage::Rep(r) => Some(r.private_data),
            _ => None,
        };
        if let Some(p) = private {
            put("cma", p)?;
            put("rpcrdma_cm", p)?;
        }
    }
    Ok(())
}
