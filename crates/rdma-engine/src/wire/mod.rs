//! The wire side of the engine: what captured frames say.
//!
//! `conn`, `call`, `calls` and `rdma` are `impl Engine` blocks, one per part of the
//! protocol; they share the plain data of `state` and call one another's
//! methods on [`Engine`](super::Engine), but import nothing of one another.
//! What they use besides is plain: `qp` (the queue-pair tracker, pure over
//! one QP's state), `cost` (what their tables' entries cost the budget),
//! and the judgements of [`crate::checks`].

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
pub(super) mod transfer;
