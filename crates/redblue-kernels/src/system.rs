//! The system BLAS / LAPACK behind the `blas` feature: `?gemm`, `?trsm` (CBLAS) and `?getrf`,
//! `?potrf` (Fortran LAPACK) for the four scalars, and the count of calls that went there.
//!
//! Every kernel asks [`System`] first and falls back to its faer path when the answer is "not
//! taken": always without the feature, and with it when an operand cannot be described to
//! BLAS (a dimension or leading dimension above `i32::MAX`, a conjugated operand that is not
//! transposed, a view that is not column- or row-major). The trait is a supertrait of the
//! sealed [`KernelScalar`](crate::KernelScalar), so the choice is made per scalar type at
//! compile time, with no casts between types.
//!
//! This crate declares the symbols (`cblas-sys`, `lapack-sys`) and links no provider: a
//! library must not choose its users' BLAS. The final binary links one — with the
//! `openblas-system` feature, the system's `libopenblas` (which also holds LAPACK), whose
//! thread count is then set per call from [`Par`].

use crate::gemm::transpose_copy;
use crate::{KernelScalar, MatMut, MatRef, Par};
use faer::prelude::ReborrowMut;
use faer::{Accum, Conj};
use redblue_core::{Diag, Op, Side, Uplo};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Kernel calls that ran in the system BLAS / LAPACK (all threads, since the program started).
static CALLS: AtomicU64 = AtomicU64::new(0);

/// How many kernel calls ran in the system BLAS / LAPACK since the program started (across
/// all threads). Always 0 without the `blas` feature. A `gemm` is one call; a `gemmt`,
/// whose off-diagonal blocks are `gemm`s, is several.
pub fn system_calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// Whether this build can send kernels to the system BLAS / LAPACK (the `blas` feature).
pub const SYSTEM_BLAS: bool = cfg!(feature = "blas");

/// Whether the kernels use the system BLAS / LAPACK now (see [`set_system_blas`]).
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns the system BLAS / LAPACK off (`false`) or back on for the whole process, and returns
/// the previous setting. With it off, the kernels take their pure-Rust path. Meant for
/// comparing the two paths in one program (the kernel benchmarks do); without the `blas`
/// feature it changes nothing, as there is no system library to use.
pub fn set_system_blas(enabled: bool) -> bool {
    ENABLED.swap(enabled, Ordering::Relaxed)
}

/// Whether kernel calls go to the system BLAS / LAPACK now: the `blas` feature is on and
/// [`set_system_blas`] has not turned it off.
pub fn system_blas_active() -> bool {
    SYSTEM_BLAS && ENABLED.load(Ordering::Relaxed)
}

/// Products with at least this many multiply-adds (`m·n·k`) run in the `gemm` crate's
/// kernels; smaller ones in faer's matmul, whose small-size kernels (nano-gemm) avoid the
/// packing of the large-size path.
const LARGE_PRODUCT: usize = 64 * 64 * 64;

/// `dst = accum(dst) + alpha·lhs·rhs` (each operand conjugated if its flag says so), with `par`
/// threads: in the narrow kernel if it takes it (`narrow.rs`; after the system BLAS on CPUs
/// where that was the faster), otherwise in the system BLAS if it takes it; small products in
/// faer's matmul, large ones in this crate's packed kernels if they take it (real scalars on
/// AVX2 CPUs without AVX-512: `packed.rs`), else in the `gemm` crate. Every product of the
/// kernels outside their narrow leaves goes through here.
///
/// Why the `gemm` crate for large products: it is the crate faer's matmul was built on, and
/// with its AVX-512 kernels (feature `x86-v4`, chosen at run time) it measured 0.97–1.0× of
/// OpenBLAS's dgemm on this project's machine, where faer 0.24's own x86 kernel
/// (`private-gemm-x86`) measured 0.82× (book: the kernels page).
pub(crate) fn matmul<T: KernelScalar>(
    mut dst: faer::MatMut<'_, T>,
    accum: Accum,
    lhs: (faer::MatRef<'_, T>, Conj),
    rhs: (faer::MatRef<'_, T>, Conj),
    alpha: T,
    par: Par,
) {
    // Narrow products first, before a system BLAS too where the narrow kernels were the
    // faster (AVX-512 CPUs), after it elsewhere: `narrow::before_system_blas`.
    let first = crate::narrow::before_system_blas();
    if (first && T::narrow_matmul(dst.rb_mut(), accum, lhs, rhs, alpha, par))
        || T::system_matmul(dst.rb_mut(), accum, lhs, rhs, alpha, par)
        || (!first && T::narrow_matmul(dst.rb_mut(), accum, lhs, rhs, alpha, par))
    {
        return;
    }
    let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.0.ncols());
    if m.saturating_mul(n).saturating_mul(k) < LARGE_PRODUCT {
        faer::linalg::matmul::matmul_with_conj(
            dst,
            accum,
            lhs.0,
            lhs.1,
            rhs.0,
            rhs.1,
            alpha,
            par.to_faer(),
        );
        return;
    }
    if T::packed_matmul(dst.rb_mut(), accum, lhs, rhs, alpha, par) {
        return;
    }
    let parallelism = match par.degree() {
        1 => ::gemm::Parallelism::None,
        n => ::gemm::Parallelism::Rayon(n),
    };
    // The `gemm` crate's conjugating kernels ran at 0.6× of its plain ones (c64, 1024³, this
    // project's machine); a conjugated copy costs one pass over the operand.
    let (mut lhs_buf, mut rhs_buf) = (Vec::new(), Vec::new());
    let lhs = without_conj(lhs, &mut lhs_buf);
    let rhs = without_conj(rhs, &mut rhs_buf);
    let step = panel_columns::<T>(k);
    let mut j0 = 0;
    while j0 < n {
        let w = step.min(n - j0);
        // SAFETY: the three views are live and of matching shapes (m × k, k × w, m × w), `dst` is
        // borrowed mutably, and `T` is one of the four types the `gemm` crate dispatches on (it
        // checks the type itself). With `read_dst = false` (`Accum::Replace`) `dst` is not read.
        // The crate's naming is `dst = alpha·dst + beta·lhs·rhs`.
        unsafe {
            ::gemm::gemm(
                m,
                w,
                k,
                dst.rb_mut().get_mut(.., j0..j0 + w).as_ptr_mut(),
                dst.col_stride(),
                dst.row_stride(),
                accum == Accum::Add,
                lhs.as_ptr(),
                lhs.col_stride(),
                lhs.row_stride(),
                rhs.get(.., j0..j0 + w).as_ptr(),
                rhs.col_stride(),
                rhs.row_stride(),
                T::one(),
                alpha,
                false,
                false,
                false,
                parallelism,
            )
        };
        j0 += w;
    }
}

/// The most bytes of `rhs` one call of the `gemm` crate packs at a time (its `kc × nc` panel).
const PANEL_BYTES: usize = 4 << 20;

/// The widest block of columns one call of the `gemm` crate gets for a product of depth `k`:
/// as many as keep its packed `rhs` panel (`min(k, 512)` deep, the crate's largest `kc`) within
/// [`PANEL_BYTES`]. The crate sizes that panel from the whole L3 (up to 16 MiB of f64 at
/// `kc = 512` with a 32 MiB L3), which the other ranks and programs share. Measured on one
/// core of a Zen 5 (f64, interleaved, medians of 7): 4096 × 2048 × 4096 and 4096³ 1–5 %
/// faster in 4 MiB panels, 4096 × 2048 × 256 and 2048³ alike.
fn panel_columns<T>(k: usize) -> usize {
    (PANEL_BYTES / (std::mem::size_of::<T>() * k.clamp(1, 512))).max(64)
}

/// `m` if it is not conjugated (or real); otherwise `conj(m)` copied into `buf` as a
/// column-major matrix.
fn without_conj<'a, T: KernelScalar>(
    (m, conj): (faer::MatRef<'a, T>, Conj),
    buf: &'a mut Vec<T>,
) -> faer::MatRef<'a, T> {
    if !T::IS_COMPLEX || conj == Conj::No {
        return m;
    }
    let (r, c) = (m.nrows(), m.ncols());
    buf.clear();
    buf.resize(r * c, T::zero());
    let mut dst = faer::MatMut::from_column_major_slice_mut(buf, r, c);
    if m.col_stride() == 1 && m.row_stride() != 1 {
        // A transposed view: copy by tiles.
        transpose_copy(m.transpose(), dst.rb_mut());
    } else {
        dst.copy_from(m);
    }
    for x in buf.iter_mut() {
        *x = x.conj();
    }
    faer::MatRef::from_column_major_slice(buf, r, c)
}

/// The per-scalar entry points of the system BLAS / LAPACK. Every method returns "not taken"
/// (`false` / `None`) by default; the `blas` feature implements them for the four scalars.
/// Callers have checked the shapes.
pub trait System: Sized {
    /// `dst = accum(dst) + alpha·lhs·rhs`, each operand conjugated if its flag says so.
    #[allow(unused_variables)]
    fn system_matmul(
        dst: faer::MatMut<'_, Self>,
        accum: Accum,
        lhs: (faer::MatRef<'_, Self>, Conj),
        rhs: (faer::MatRef<'_, Self>, Conj),
        alpha: Self,
        par: Par,
    ) -> bool {
        false
    }

    /// `B ← alpha·op(A)⁻¹·B` (left) or `B ← alpha·B·op(A)⁻¹` (right).
    #[allow(unused_variables)]
    fn system_trsm(
        side: Side,
        uplo: Uplo,
        op: Op,
        diag: Diag,
        alpha: Self,
        a: MatRef<'_, Self>,
        b: MatMut<'_, Self>,
        par: Par,
    ) -> bool {
        false
    }

    /// LU with partial pivoting in place: writes 0-based `ipiv` and returns the first
    /// zero-pivot column, or `None` if not taken.
    #[allow(unused_variables)]
    fn system_getrf(a: MatMut<'_, Self>, ipiv: &mut [usize], par: Par) -> Option<Option<usize>> {
        None
    }

    /// Cholesky in place: `Err(column)` if not positive definite, or `None` if not taken.
    #[allow(unused_variables)]
    fn system_potrf(uplo: Uplo, a: MatMut<'_, Self>, par: Par) -> Option<Result<(), usize>> {
        None
    }
}

#[cfg(not(feature = "blas"))]
mod imp {
    use super::System;
    use redblue_core::Complex;

    impl System for f32 {}
    impl System for f64 {}
    impl System for Complex<f32> {}
    impl System for Complex<f64> {}
}

#[cfg(feature = "blas")]
mod imp {
    use super::{System, CALLS};
    use crate::{MatMut, MatRef, Par};
    use cblas_sys::{
        CBLAS_DIAG, CBLAS_LAYOUT::CblasColMajor, CBLAS_SIDE, CBLAS_TRANSPOSE, CBLAS_UPLO,
    };
    use faer::prelude::Reborrow;
    use faer::{Accum, Conj};
    use redblue_core::{Complex, Diag, Op, Scalar, Side, Uplo};
    use std::ffi::{c_char, c_int};
    use std::sync::atomic::Ordering;

    /// `x` as a BLAS integer, if it fits.
    fn int(x: usize) -> Option<c_int> {
        c_int::try_from(x).ok()
    }

    /// A matrix operand as BLAS sees it: a transpose flag, a pointer and a leading dimension.
    struct Operand<T> {
        trans: CBLAS_TRANSPOSE,
        ptr: *const T,
        ld: c_int,
    }

    /// Describes `m` (conjugated if `conj`) as `op(X)` of a column-major `X`, if BLAS can:
    /// unit row stride gives `X = m` (not conjugated: BLAS has no conjugate-only operand),
    /// unit column stride gives `X = mᵀ` and `op` = `T` or `C`.
    fn operand<T: Scalar>(m: faer::MatRef<'_, T>, conj: Conj) -> Option<Operand<T>> {
        let conj = conj == Conj::Yes && T::IS_COMPLEX;
        let (r, c) = (m.nrows(), m.ncols());
        let (rs, cs) = (m.row_stride(), m.col_stride());
        // A leading dimension `ld` that makes element (i, j) of X sit at i + j·ld.
        let ld = |rows: usize, cols: usize, stride: isize| -> Option<c_int> {
            let stride = if cols <= 1 {
                rows.max(1)
            } else {
                usize::try_from(stride).ok()?
            };
            (stride >= rows.max(1)).then_some(())?;
            int(stride)
        };
        if (rs == 1 || r <= 1) && !conj {
            if let Some(ld) = ld(r, c, cs) {
                let trans = CBLAS_TRANSPOSE::CblasNoTrans;
                return Some(Operand {
                    trans,
                    ptr: m.as_ptr(),
                    ld,
                });
            }
        }
        if cs == 1 || c <= 1 {
            let trans = if conj {
                CBLAS_TRANSPOSE::CblasConjTrans
            } else {
                CBLAS_TRANSPOSE::CblasTrans
            };
            return Some(Operand {
                trans,
                ptr: m.as_ptr(),
                ld: ld(c, r, rs)?,
            });
        }
        None
    }

    fn trans(op: Op) -> CBLAS_TRANSPOSE {
        match op {
            Op::NoTrans => CBLAS_TRANSPOSE::CblasNoTrans,
            Op::Trans => CBLAS_TRANSPOSE::CblasTrans,
            Op::ConjTrans => CBLAS_TRANSPOSE::CblasConjTrans,
        }
    }

    fn fortran_uplo(uplo: Uplo) -> c_char {
        (match uplo {
            Uplo::Lower => b'L',
            Uplo::Upper => b'U',
        }) as c_char
    }

    /// Sets the provider's thread count to `par`'s degree (only OpenBLAS has a call for it).
    fn set_threads(par: Par) {
        #[cfg(feature = "openblas-system")]
        {
            use std::sync::atomic::AtomicUsize;
            static CURRENT: AtomicUsize = AtomicUsize::new(0);
            extern "C" {
                fn openblas_set_num_threads(n: c_int);
            }
            let n = par.degree().min(c_int::MAX as usize);
            if CURRENT.swap(n, Ordering::Relaxed) != n {
                // SAFETY: a plain setter of OpenBLAS, linked by this feature.
                unsafe { openblas_set_num_threads(n as c_int) };
            }
        }
        #[cfg(not(feature = "openblas-system"))]
        let _ = par;
    }

    /// Stack for LAPACK calls that may run OpenBLAS's threaded factorisations.
    const LAPACK_STACK_BYTES: usize = 64 << 20;

    /// Runs `f` (a LAPACK call) on the calling thread when `par` is sequential, and otherwise
    /// on a helper thread with a [`LAPACK_STACK_BYTES`] stack: OpenBLAS's threaded
    /// `?getrf` keeps per-thread job tables on the stack, which overflowed the 2 MiB stack of
    /// a Rust thread (a segmentation fault, seen with Debian's OpenBLAS 0.3.21 on a 300 × 300
    /// `dgetrf` with two threads). The helper thread costs microseconds, against the
    /// milliseconds of a factorisation large enough to be threaded.
    fn on_big_stack<R: Send>(par: Par, f: impl FnOnce() -> R + Send) -> R {
        if par.degree() == 1 {
            return f();
        }
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(LAPACK_STACK_BYTES)
                .spawn_scoped(s, f)
                .expect("spawning a thread for LAPACK")
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    fn count() {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }

    /// Real BLAS takes `alpha` by value ...
    fn by_value<T: Copy>(x: &T) -> T {
        *x
    }

    /// ... complex BLAS by pointer to two reals.
    fn by_ptr<T, R>(x: &T) -> *const R {
        (x as *const T).cast()
    }

    macro_rules! system {
        ($t:ty, $pass:ident, $gemm:ident, $trsm:ident, $getrf:ident, $potrf:ident) => {
            impl System for $t {
                fn system_matmul(
                    dst: faer::MatMut<'_, Self>,
                    accum: Accum,
                    (lhs, conj_lhs): (faer::MatRef<'_, Self>, Conj),
                    (rhs, conj_rhs): (faer::MatRef<'_, Self>, Conj),
                    alpha: Self,
                    par: Par,
                ) -> bool {
                    if !super::system_blas_active() {
                        return false;
                    }
                    let (Some(m), Some(n), Some(k)) =
                        (int(dst.nrows()), int(dst.ncols()), int(lhs.ncols()))
                    else {
                        return false;
                    };
                    let (Some(a), Some(b)) = (operand(lhs, conj_lhs), operand(rhs, conj_rhs))
                    else {
                        return false;
                    };
                    let Some(c) = operand(dst.rb(), Conj::No) else {
                        return false;
                    };
                    if !matches!(c.trans, CBLAS_TRANSPOSE::CblasNoTrans) {
                        return false;
                    }
                    let beta = match accum {
                        Accum::Replace => <$t as Scalar>::zero(),
                        Accum::Add => <$t as Scalar>::one(),
                    };
                    set_threads(par);
                    // SAFETY: the operands describe live views of the right shapes (checked by
                    // the caller); `dst` is borrowed mutably for the call.
                    unsafe {
                        cblas_sys::$gemm(
                            CblasColMajor,
                            a.trans,
                            b.trans,
                            m,
                            n,
                            k,
                            $pass(&alpha),
                            a.ptr.cast(),
                            a.ld,
                            b.ptr.cast(),
                            b.ld,
                            $pass(&beta),
                            dst.as_ptr_mut().cast(),
                            c.ld,
                        )
                    };
                    count();
                    true
                }

                fn system_trsm(
                    side: Side,
                    uplo: Uplo,
                    op: Op,
                    diag: Diag,
                    alpha: Self,
                    a: MatRef<'_, Self>,
                    mut b: MatMut<'_, Self>,
                    par: Par,
                ) -> bool {
                    if !super::system_blas_active() {
                        return false;
                    }
                    let (Some(m), Some(n), Some(lda), Some(ldb)) =
                        (int(b.nrows()), int(b.ncols()), int(a.ld()), int(b.ld()))
                    else {
                        return false;
                    };
                    let side = match side {
                        Side::Left => CBLAS_SIDE::CblasLeft,
                        Side::Right => CBLAS_SIDE::CblasRight,
                    };
                    let uplo = match uplo {
                        Uplo::Lower => CBLAS_UPLO::CblasLower,
                        Uplo::Upper => CBLAS_UPLO::CblasUpper,
                    };
                    let diag = match diag {
                        Diag::Unit => CBLAS_DIAG::CblasUnit,
                        Diag::NonUnit => CBLAS_DIAG::CblasNonUnit,
                    };
                    set_threads(par);
                    // SAFETY: `a` and `b` are valid column-major views of the checked shapes.
                    unsafe {
                        cblas_sys::$trsm(
                            CblasColMajor,
                            side,
                            uplo,
                            trans(op),
                            diag,
                            m,
                            n,
                            $pass(&alpha),
                            a.as_slice().as_ptr().cast(),
                            lda,
                            b.to_faer().as_ptr_mut().cast(),
                            ldb,
                        )
                    };
                    count();
                    true
                }

                fn system_getrf(
                    mut a: MatMut<'_, Self>,
                    ipiv: &mut [usize],
                    par: Par,
                ) -> Option<Option<usize>> {
                    super::system_blas_active().then_some(())?;
                    let (m, n, lda) = (int(a.nrows())?, int(a.ncols())?, int(a.ld())?);
                    let mut raw: Vec<c_int> = vec![0; ipiv.len()];
                    set_threads(par);
                    let info = on_big_stack(par, || {
                        let mut info: c_int = 0;
                        // SAFETY: `a` is a valid `m × n` column-major view with leading
                        // dimension `lda ≥ max(1, m)`; `raw` holds `min(m, n)` entries.
                        unsafe {
                            lapack_sys::$getrf(
                                &m,
                                &n,
                                a.to_faer().as_ptr_mut().cast(),
                                &lda,
                                raw.as_mut_ptr(),
                                &mut info,
                            )
                        };
                        info
                    });
                    assert!(
                        info >= 0,
                        "{}: argument {} rejected",
                        stringify!($getrf),
                        -info
                    );
                    count();
                    for (p, r) in ipiv.iter_mut().zip(&raw) {
                        *p = *r as usize - 1;
                    }
                    Some((info > 0).then(|| info as usize - 1))
                }

                fn system_potrf(
                    uplo: Uplo,
                    mut a: MatMut<'_, Self>,
                    par: Par,
                ) -> Option<Result<(), usize>> {
                    super::system_blas_active().then_some(())?;
                    let (n, lda) = (int(a.nrows())?, int(a.ld())?);
                    set_threads(par);
                    let info = on_big_stack(par, || {
                        let mut info: c_int = 0;
                        // SAFETY: `a` is a valid `n × n` column-major view, `lda ≥ max(1, n)`.
                        unsafe {
                            lapack_sys::$potrf(
                                &fortran_uplo(uplo),
                                &n,
                                a.to_faer().as_ptr_mut().cast(),
                                &lda,
                                &mut info,
                            )
                        };
                        info
                    });
                    assert!(
                        info >= 0,
                        "{}: argument {} rejected",
                        stringify!($potrf),
                        -info
                    );
                    count();
                    if info > 0 {
                        return Some(Err(info as usize - 1));
                    }
                    // OpenBLAS takes a NaN pivot for positive (reference LAPACK does not): a
                    // NaN pivot leaves a NaN on the factor's diagonal from its column on, and
                    // the columns before it hold their factor.
                    let nan = (0..a.nrows()).find(|&j| a.get(j, j).re().is_nan());
                    Some(nan.map_or(Ok(()), Err))
                }
            }
        };
    }

    system!(f32, by_value, cblas_sgemm, cblas_strsm, sgetrf_, spotrf_);
    system!(f64, by_value, cblas_dgemm, cblas_dtrsm, dgetrf_, dpotrf_);
    system!(
        Complex<f32>,
        by_ptr,
        cblas_cgemm,
        cblas_ctrsm,
        cgetrf_,
        cpotrf_
    );
    system!(
        Complex<f64>,
        by_ptr,
        cblas_zgemm,
        cblas_ztrsm,
        zgetrf_,
        zpotrf_
    );
}
