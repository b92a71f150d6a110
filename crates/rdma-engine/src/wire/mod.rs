//! The wire side of the engine: what captured frames say.
//!
//! `frame`, `conn`, `call`, `calls` and `rdma` are `impl Engine` blocks, one
//! per part of the protocol; they share the plain data of `state` and call
//! one another's methods on [`Engine`](super::Engine). The state they move
//! lives in parts that own it and are tested alone: `qp` and `qp_table`
//! (queue pairs), `reassembly` (Sends and their prefixes), the structs of
//! `calls` (outstanding and parked calls), `transfer` (deferred Middles) and
//! `conn_table` (each connection's private entry, opened and closed with its
//! public view). What they use besides is plain: `cost` (what the parts'
//! entries cost the budget), `raise` (anomalies through the findings
//! collector) and the judgements of [`crate::checks`].

pub(super) mod call;
pub(super) mod calls;
pub(super) mod conn;
pub(super) mod conn_table;
pub(super) mod cost;
pub(super) mod frame;
pub(super) mod index;
pub(super) mod qp;
pub(super) mod qp_table;
pub(super) mod raise;
pub(super) mod rdma;
pub(super) mod reassembly;
pub(super) mod state;
// The engine's iWARP path reads these streams; until it lands, only the
// tests and the fuzz target do.
#[allow(dead_code)]
pub(super) mod tcp;
pub(super) mod transfer;
pub(super) mod undecoded;
