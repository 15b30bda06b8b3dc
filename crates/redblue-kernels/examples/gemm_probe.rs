//! A quick throughput probe (not a benchmark suite): GFLOP/s of `gemm` and `gemmt` at one size,
//! with matrixmultiply's dgemm beside it.
//!
//! Run with `cargo run --release -p redblue-kernels --example gemm_probe [n]` (default
//! n = 2048). Prints the best of a few repetitions after one warm-up; compare with the
//! core's f64 peak. The criterion bench `benches/kernels.rs` is the side-by-side comparison.

use redblue_core::{c64, Op, Scalar, Uplo};
use redblue_kernels::{gemm, gemmt, KernelScalar, Mat, Par};
use std::time::Instant;

const REPS: usize = 5;

/// Best wall time in seconds of `REPS` runs of `f` after one warm-up.
fn best_of(mut f: impl FnMut()) -> f64 {
    f();
    (0..REPS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn input<T: Scalar>(n: usize, seed: f64) -> Mat<T> {
    Mat::from_fn(n, n, |i, j| {
        let x = (i as f64 * 0.37 + j as f64 * 0.11 + seed).sin();
        T::from_f64_parts(x, 0.5 * x)
    })
}

/// Real flops per multiply-add: 2 for real types, 8 for complex ones.
fn flops_per_fma<T: Scalar>() -> f64 {
    if T::IS_COMPLEX {
        8.0
    } else {
        2.0
    }
}

fn probe_gemm<T: KernelScalar>(n: usize, par: Par, op_b: Op) {
    let (a, b) = (input::<T>(n, 0.0), input::<T>(n, 1.0));
    let mut c = Mat::<T>::zeros(n, n);
    let secs = best_of(|| {
        gemm(
            T::one(),
            a.as_ref(),
            Op::NoTrans,
            b.as_ref(),
            op_b,
            T::zero(),
            c.as_mut(),
            par,
        )
        .unwrap()
    });
    let gflops = flops_per_fma::<T>() * (n as f64).powi(3) / secs / 1e9;
    println!(
        "gemm  {} n={n} N{op_b} {par:?}: {:.3} s, {gflops:.1} GFLOP/s",
        T::NAME,
        secs
    );
}

fn probe_gemmt<T: KernelScalar>(n: usize, par: Par) {
    let a = input::<T>(n, 0.0);
    let mut c = input::<T>(n, 2.0);
    let secs = best_of(|| {
        gemmt(
            Uplo::Lower,
            -T::one(),
            a.as_ref(),
            Op::NoTrans,
            a.as_ref(),
            Op::ConjTrans,
            T::one(),
            c.as_mut(),
            par,
        )
        .unwrap()
    });
    // Useful flops of a triangle: n·(n + 1)/2 inner products of length n.
    let gflops = flops_per_fma::<T>() * (n * (n + 1) / 2) as f64 * n as f64 / secs / 1e9;
    println!(
        "gemmt {} n={n} {par:?} (herk, lower): {:.3} s, {gflops:.1} GFLOP/s",
        T::NAME,
        secs
    );
}

fn probe_matrixmultiply(n: usize) {
    let (a, b) = (input::<f64>(n, 0.0), input::<f64>(n, 1.0));
    let mut c = Mat::<f64>::zeros(n, n);
    let secs = best_of(|| {
        let cs = c.ld() as isize;
        let cp = c.as_mut().into_faer().as_ptr_mut();
        // SAFETY: the three n×n column-major buffers are in bounds with row stride 1 and
        // column stride n, and C does not alias A or B.
        unsafe {
            matrixmultiply::dgemm(
                n,
                n,
                n,
                1.0,
                a.as_slice().as_ptr(),
                1,
                a.ld() as isize,
                b.as_slice().as_ptr(),
                1,
                b.ld() as isize,
                0.0,
                cp,
                1,
                cs,
            )
        }
    });
    let gflops = 2.0 * (n as f64).powi(3) / secs / 1e9;
    println!("matrixmultiply dgemm n={n} (1 thread): {secs:.3} s, {gflops:.1} GFLOP/s");
}

fn main() {
    let n = std::env::args()
        .nth(1)
        .map_or(2048, |s| s.parse().expect("n must be an integer"));
    probe_gemm::<f64>(n, Par::Seq, Op::NoTrans);
    probe_matrixmultiply(n);
    probe_gemm::<f64>(n, Par::Seq, Op::Trans);
    probe_gemm::<f64>(n, Par::Threads(2), Op::NoTrans);
    probe_gemm::<c64>(n / 2, Par::Seq, Op::NoTrans);
    probe_gemm::<c64>(n / 2, Par::Seq, Op::Trans);
    probe_gemm::<c64>(n / 2, Par::Seq, Op::ConjTrans);
    probe_gemm::<c64>(n / 8, Par::Seq, Op::NoTrans);
    probe_gemm::<c64>(n / 8, Par::Seq, Op::ConjTrans);
    probe_gemmt::<f64>(n, Par::Seq);
}
