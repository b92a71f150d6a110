//! InfiniBand and RoCE transport layers.
