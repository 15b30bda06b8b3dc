//! Rank-local dense kernels: column-major views with a leading dimension, and BLAS-style
//! [`gemm`], [`gemmt`], [`trsm`], LAPACK-style [`getrf`] / [`laswp`] and [`potrf`], norms
//! ([`norm_fro`], [`norm_max`], [`norm_one`], [`norm_inf`]) and triangular copies
//! ([`copy_triangle`], [`extract_triangle`]), generic over the four redblue scalars.
//!
//! Every distributed algorithm in redblue spends its flops here. The kernels take
//! [`MatRef`] / [`MatMut`] views (a slice, a shape and a leading dimension, exactly what BLAS
//! takes, so any view can be handed to a BLAS later), the operation flags of `redblue-core`
//! ([`Op`](redblue_core::Op), [`Uplo`](redblue_core::Uplo)) and a per-call thread count
//! ([`Par`]). They forward to [faer](https://docs.rs/faer/0.24) through one generic code path
//! (see [`KernelScalar`]).
//!
//! Semantics follow BLAS: `beta = 0` never reads `C` (a NaN there does not leak), `alpha = 0`
//! or `k = 0` only scales `C` by `beta`, and any dimension may be zero. Shape mismatches return
//! [`KernelError`] instead of panicking.
//!
//! # Examples
//!
//! ```
//! use redblue_core::{Op, Uplo};
//! use redblue_kernels::{gemm, gemmt, Mat, Par};
//!
//! // C = A·Bᵀ with A 2×3 and B 2×3.
//! let a = Mat::from_fn(2, 3, |i, j| (i + j) as f64);
//! let b = Mat::from_fn(2, 3, |i, j| (i * j) as f64);
//! let mut c = Mat::<f64>::zeros(2, 2);
//! gemm(1.0, a.as_ref(), Op::NoTrans, b.as_ref(), Op::Trans, 0.0, c.as_mut(), Par::Seq)?;
//! assert_eq!(c[(1, 1)], 1.0 * 0.0 + 2.0 * 1.0 + 3.0 * 2.0);
//!
//! // The lower triangle of C = A·Aᴴ (a herk): the strict upper triangle is not touched.
//! let mut s = Mat::from_fn(2, 2, |_, _| -1.0);
//! gemmt(Uplo::Lower, 1.0, a.as_ref(), Op::NoTrans, a.as_ref(), Op::ConjTrans, 0.0, s.as_mut(), Par::Seq)?;
//! assert_eq!(s[(1, 0)], 0.0 * 1.0 + 1.0 * 2.0 + 2.0 * 3.0);
//! assert_eq!(s[(0, 1)], -1.0);
//! # Ok::<(), redblue_kernels::KernelError>(())
//! ```

mod cholesky;
mod error;
mod gemm;
mod gemmt;
mod lu;
mod narrow;
mod norms;
mod packed;
mod par;
pub mod reference;
mod scalar;
mod simd;
mod space;
mod system;
mod triangle;
mod trsm;
mod view;

pub use cholesky::{potrf, potrf_with_leaf, POTRF_LEAF};
pub use error::KernelError;
pub use gemm::gemm;
pub use gemmt::{gemm_lower_labelled, gemmt};
pub use lu::{getrf, laswp, Direction, LuInfo, LuPivots};
pub use norms::{max_abs_finite, norm_fro, norm_inf, norm_max, norm_one};
pub use par::Par;
pub use scalar::KernelScalar;
pub use system::{set_system_blas, system_blas_active, system_calls, SYSTEM_BLAS};
pub use triangle::{copy_triangle, extract_triangle};
pub use trsm::trsm;
pub use view::{Mat, MatMut, MatRef};
