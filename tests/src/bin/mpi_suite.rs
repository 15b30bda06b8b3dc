//! `mpi-suite`: placeholder
fn main() {}
