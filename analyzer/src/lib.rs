//! rdma-analyzer: sources, correlation engine and front ends.
