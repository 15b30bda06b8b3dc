//! A ScaLAPACK-compatible library: redblue behind ScaLAPACK's own interface, so that programs
//! written against ScaLAPACK use redblue's multiplication, LU and Cholesky unchanged.
//!
//! With the `mpi` feature the crate builds a shared library exporting the Fortran symbols
//! `p{s,d,c,z}gemm_`, `p?getrf_`, `p?getrs_`, `p?gesv_`, `p?potrf_`, `p?potrs_` and `p?posv_`;
//! preloaded (or linked before ScaLAPACK), it receives those calls. Each call:
//!
//! 1. finds the BLACS grid of the first operand's context and its MPI communicator;
//! 2. checks every argument as ScaLAPACK does, numbering an illegal one as ScaLAPACK does, the
//!    same `info` on every process ([`args`]; [`common::agree`]);
//! 3. runs redblue's algorithm on the caller's arrays where they are
//!    ([`redblue_dist::BlockCyclicSubmatrix`]: any `ia`, `ja`, `lld`, `rsrc`, `csrc`);
//! 4. leaves what ScaLAPACK leaves: `L\U` in LAPACK's row order with ScaLAPACK's distributed
//!    `IPIV`, the named triangle of a Cholesky factor (the other untouched), the solution in `B`.
//!
//! What redblue does not serve — a case it cannot (a replicated operand, a first block of
//! another size) or a failure whose partial results ScaLAPACK defines (a singular or not
//! positive definite matrix, NaN) — is passed on, before anything is written, to the real
//! ScaLAPACK behind it (`dlsym(RTLD_NEXT, …)`). With `REDBLUE_SCALAPACK_REPORT=1` the library
//! prints at exit how many calls of each routine it served and passed on.
//!
//! Without the `mpi` feature, the routines ([`gemm::pgemm`], [`lu::pgetrf`], …) run on any
//! [`redblue_comm::Communicator`]: the tests call them on threads.

pub mod args;
pub mod cholesky;
pub mod common;
#[cfg(feature = "mpi")]
pub mod ffi;
pub mod gemm;
pub mod lu;

pub use args::{BlacsGrid, Descriptor, Operand, Position};
pub use common::{Array, Outcome, ServeError};
