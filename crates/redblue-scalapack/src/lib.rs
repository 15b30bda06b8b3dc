//! A ScaLAPACK-compatible library: redblue behind ScaLAPACK's own interface.

pub mod args;
