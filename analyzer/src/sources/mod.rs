//! Sources: the only code that touches files, sockets or the kernel. Each one
//! turns bytes or kernel records into engine events.

pub mod ebpf;
pub mod live;
pub mod pcap;
