//! The `rdma-analyzer` command line.
fn main() {}
