//! Sources: the only code that touches files, sockets or the kernel. Each
//! turns bytes or kernel records into engine events, as a pipeline
//! [`Source`](crate::pipeline::Source).

pub mod capture;
pub mod counters;
pub mod ebpf;
pub mod live;
pub mod pcap;
pub mod sys;
