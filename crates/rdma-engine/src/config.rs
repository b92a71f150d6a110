//! The engine's caps and switches.

use rdma_dissectors::stack::{self, RpcRdmaDecode};

use crate::budget::DEFAULT_MEMORY_LIMIT;
use crate::merge::MergeConfig;

/// Caps and switches.
#[derive(Debug, Clone)]
pub struct Config {
    /// Dissector settings (RoCEv2 port, ICRC verification).
    pub stack: stack::Config,
    /// Bytes all the engine's tables may hold together (see [`budget`](crate::budget));
    /// the `max_*` caps below apply where they are the smaller.
    pub memory_limit: usize,
    /// Connections tracked at once.
    pub max_connections: usize,
    /// Queue pairs tracked at once (including those not yet paired).
    pub max_qps: usize,
    /// Outstanding calls per connection.
    pub max_outstanding: usize,
    /// RDMA Read requests awaiting responses per connection.
    pub max_reads: usize,
    /// Bytes of a multi-packet Send kept to decode its headers.
    pub max_message_prefix: usize,
    /// Points of credit history per connection (older ones are thinned out).
    pub max_credit_points: usize,
    /// Steps recorded per transaction for the ladder diagram.
    pub max_ladder_steps: usize,
    /// Add up the Middle packets of an RDMA Write or Read Response before
    /// writing them to their transaction (the default). Off, each is written
    /// as it comes: the results are the same, only slower, and that is the
    /// reference the deferral is tested against.
    pub defer_middle_packets: bool,
    /// Join the wire's and the kernels' views of each XID into one
    /// transaction (live mode with probes); `None` hands each out as it is.
    pub merge: Option<MergeConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            stack: stack::Config::default().with_rpcrdma(RpcRdmaDecode::Never),
            memory_limit: DEFAULT_MEMORY_LIMIT,
            max_connections: 4096,
            max_qps: 16384,
            max_outstanding: 65536,
            max_reads: 4096,
            max_message_prefix: 8192,
            max_credit_points: 4096,
            max_ladder_steps: 64,
            defer_middle_packets: true,
            merge: None,
        }
    }
}
