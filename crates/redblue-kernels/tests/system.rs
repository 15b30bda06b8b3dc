//! The `blas` feature really sends every kernel to the system BLAS / LAPACK, and without it
//! nothing goes there.
//!
//! Run with `cargo test -p redblue-kernels --features openblas-system` for the BLAS path
//! (`cargo xtask ci` does); the plain `cargo test` checks the faer path.

mod common;

use common::Lcg;
use redblue_core::{c32, c64, Diag, Op, Side, Uplo};
use redblue_kernels::{
    gemm, gemmt, getrf, potrf, set_system_blas, system_blas_active, system_calls, trsm,
    KernelScalar, Mat, Par, SYSTEM_BLAS,
};

/// How many calls `kernel` made to the system library. The counter is global to the process,
/// so only one test of this file calls kernels.
fn calls_of(kernel: impl FnOnce()) -> u64 {
    let before = system_calls();
    kernel();
    system_calls() - before
}

fn random<T: KernelScalar>(rng: &mut Lcg, m: usize, n: usize) -> Mat<T> {
    Mat::from_fn(m, n, |_, _| rng.scalar())
}

/// A Hermitian positive definite matrix: `n·I + R + Rᴴ`.
fn spd<T: KernelScalar>(rng: &mut Lcg, n: usize) -> Mat<T> {
    let r = random::<T>(rng, n, n);
    Mat::from_fn(n, n, |i, j| {
        let d = if i == j {
            T::from_f64_parts(n as f64, 0.0)
        } else {
            T::zero()
        };
        d + r[(i, j)] + r[(j, i)].conj()
    })
}

fn each_kernel_dispatches<T: KernelScalar>(to_system: bool) {
    let mut rng = Lcg::new(7);
    let n = 40;
    let (a, b) = (random::<T>(&mut rng, n, n), random::<T>(&mut rng, n, n));
    let expected = u64::from(to_system);
    let mut c = Mat::<T>::zeros(n, n);
    let one = T::one();
    let cases: Vec<(&str, u64)> = vec![
        (
            "gemm N·C",
            calls_of(|| {
                gemm(
                    one,
                    a.as_ref(),
                    Op::NoTrans,
                    b.as_ref(),
                    Op::ConjTrans,
                    T::zero(),
                    c.as_mut(),
                    Par::Seq,
                )
                .unwrap()
            }),
        ),
        (
            "trsm right",
            calls_of(|| {
                let mut x = b.clone();
                trsm(
                    Side::Right,
                    Uplo::Upper,
                    Op::Trans,
                    Diag::Unit,
                    one,
                    a.as_ref(),
                    x.as_mut(),
                    Par::Seq,
                )
                .unwrap()
            }),
        ),
        (
            "getrf",
            calls_of(|| {
                let mut lu = a.clone();
                let _ = getrf(lu.as_mut(), Par::Seq).unwrap();
            }),
        ),
        (
            "potrf",
            calls_of(|| {
                let mut l = spd::<T>(&mut rng, n);
                potrf(Uplo::Lower, l.as_mut(), Par::Seq).unwrap()
            }),
        ),
    ];
    for (kernel, calls) in cases {
        assert_eq!(
            calls,
            expected,
            "{kernel} on {}: calls to the system library",
            T::NAME
        );
    }
    // gemmt is a recursion of products: every one of them goes to BLAS.
    let calls = calls_of(|| {
        let (a, mut s) = (random::<T>(&mut rng, 200, 30), Mat::<T>::zeros(200, 200));
        gemmt(
            Uplo::Lower,
            one,
            a.as_ref(),
            Op::NoTrans,
            a.as_ref(),
            Op::ConjTrans,
            T::zero(),
            s.as_mut(),
            Par::Seq,
        )
        .unwrap()
    });
    assert_eq!(calls > 0, to_system, "gemmt on {}: {calls} calls", T::NAME);
}

// One test (one thread) for all scalars, so that the global counter sees no other test's calls.
#[test]
fn every_kernel_goes_to_the_system_library_exactly_when_the_feature_is_on() {
    assert_eq!(system_blas_active(), SYSTEM_BLAS);
    for on in [SYSTEM_BLAS, false, SYSTEM_BLAS] {
        set_system_blas(on);
        each_kernel_dispatches::<f32>(on);
        each_kernel_dispatches::<f64>(on);
        each_kernel_dispatches::<c32>(on);
        each_kernel_dispatches::<c64>(on);
    }
    assert_eq!(system_blas_active(), SYSTEM_BLAS);
}

/// The library answering is OpenBLAS: its own configuration string, asked through a symbol
/// only OpenBLAS exports.
#[cfg(feature = "openblas-system")]
#[test]
fn the_linked_provider_is_openblas() {
    extern "C" {
        fn openblas_get_config() -> *const std::ffi::c_char;
    }
    // SAFETY: returns a static NUL-terminated string.
    let config = unsafe { std::ffi::CStr::from_ptr(openblas_get_config()) };
    let config = config.to_string_lossy();
    assert!(config.contains("OpenBLAS"), "{config}");
}
