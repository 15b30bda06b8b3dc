//! Benchmark of the local kernels: gemm, getrf, potrf and trsm (left and right) at n = 512,
//! 1024, 2048 and 4096, f64 and c64, one and two threads, on the pure-Rust path (faer) and — with
//! `--features openblas` — on OpenBLAS, side by side in the same run; gemm also on
//! matrixmultiply (one thread). Throughput is reported in flops ("elem/s" = flop/s).
//!
//! ```text
//! cargo bench -p redblue-benches --features openblas --bench kernels            # everything
//! cargo bench -p redblue-benches --features openblas --bench kernels -- '/2048'  # one size
//! cargo bench -p redblue-benches --features openblas --bench kernels -- 'gemm/f64/.*1t/2048'
//! ```
//!
//! OpenBLAS reads `OPENBLAS_CORETYPE` when it is loaded, before `main`; a forced `Haswell`
//! halves its speed on an AVX-512 core. If the variable is set, this program re-runs itself
//! without it and says so.

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput};
use redblue::core::{c64, Diag, Op, Scalar, Side, Uplo};
use redblue::kernels::{
    gemm, getrf, potrf, set_system_blas, trsm, KernelScalar, Mat, Par, SYSTEM_BLAS,
};
use std::time::Duration;

const SIZES: [usize; 4] = [512, 1024, 2048, 4096];
const THREADS: [usize; 2] = [1, 2];

/// Where a kernel call runs.
#[derive(Clone, Copy, PartialEq)]
enum Backend {
    /// redblue-kernels' pure-Rust path.
    Faer,
    /// redblue-kernels with the system BLAS / LAPACK (the `openblas` feature of this package).
    OpenBlas,
    /// matrixmultiply's gemm, called directly (gemm only, one thread).
    MatrixMultiply,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Faer => "faer",
            Backend::OpenBlas => "openblas",
            Backend::MatrixMultiply => "matrixmultiply",
        }
    }

    /// The backends a kernel is measured on in this build.
    fn all(with_matrixmultiply: bool) -> Vec<Backend> {
        let mut all = vec![Backend::Faer];
        if SYSTEM_BLAS {
            all.push(Backend::OpenBlas);
        }
        if with_matrixmultiply {
            all.push(Backend::MatrixMultiply);
        }
        all
    }

    /// Sends the kernels to this backend.
    fn select(self) {
        set_system_blas(self == Backend::OpenBlas);
    }
}

/// The random matrix `seed`, uniform in `[−1, 1)` (real and imaginary parts).
fn random<T: Scalar>(m: usize, n: usize, seed: u64) -> Mat<T> {
    Mat::from_fn(m, n, |i, j| redblue::core::random::uniform(i, j, seed))
}

/// `R + Rᴴ + 2n·I`: Hermitian positive definite, and diagonally dominant (a well-conditioned
/// triangle for trsm).
fn hpd<T: Scalar>(n: usize) -> Mat<T> {
    let r = random::<T>(n, n, 5);
    Mat::from_fn(n, n, |i, j| {
        let d = if i == j {
            T::from_f64_parts(2.0 * n as f64, 0.0)
        } else {
            T::zero()
        };
        d + r[(i, j)] + r[(j, i)].conj()
    })
}

/// Real flops of `count` multiply-adds of `T` (2 per real, 8 per complex multiply-add).
fn flops<T: Scalar>(count: f64) -> u64 {
    let per = if T::IS_COMPLEX { 8.0 } else { 2.0 };
    (per * count) as u64
}

fn par(threads: usize) -> Par {
    if threads == 1 {
        Par::Seq
    } else {
        Par::Threads(threads)
    }
}

fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
}

fn bench_gemm<T: KernelScalar>(c: &mut Criterion) {
    let mut group = c.benchmark_group(format!("gemm/{}", T::NAME));
    configure(&mut group);
    for n in SIZES {
        let (a, b) = (random::<T>(n, n, 1), random::<T>(n, n, 2));
        let mut out = Mat::<T>::zeros(n, n);
        group.throughput(Throughput::Elements(flops::<T>((n as f64).powi(3))));
        for backend in Backend::all(true) {
            for threads in THREADS {
                if backend == Backend::MatrixMultiply && threads > 1 {
                    continue;
                }
                backend.select();
                let id = BenchmarkId::new(format!("{}-{threads}t", backend.name()), n);
                group.bench_function(id, |bench| {
                    bench.iter(|| match backend {
                        Backend::MatrixMultiply => matrixmultiply_gemm(&a, &b, &mut out),
                        _ => gemm(
                            T::one(),
                            a.as_ref(),
                            Op::NoTrans,
                            b.as_ref(),
                            Op::NoTrans,
                            T::zero(),
                            out.as_mut(),
                            par(threads),
                        )
                        .unwrap(),
                    })
                });
            }
        }
    }
    group.finish();
}

/// `out = a·b` with matrixmultiply (f64 and c64 only; column-major strides).
fn matrixmultiply_gemm<T: Scalar>(a: &Mat<T>, b: &Mat<T>, out: &mut Mat<T>) {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let (lda, ldb, ldc) = (a.ld() as isize, b.ld() as isize, out.ld() as isize);
    let (pa, pb) = (a.as_slice().as_ptr(), b.as_slice().as_ptr());
    let pc = out.as_mut().into_faer().as_ptr_mut();
    // SAFETY: the pointers cover m×k, k×n and m×n column-major matrices with these strides,
    // and `T` is f64 or c64 as checked by the prefix.
    unsafe {
        match T::BLAS_PREFIX {
            'd' => matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                pa.cast(),
                1,
                lda,
                pb.cast(),
                1,
                ldb,
                0.0,
                pc.cast(),
                1,
                ldc,
            ),
            'z' => matrixmultiply::zgemm(
                matrixmultiply::CGemmOption::Standard,
                matrixmultiply::CGemmOption::Standard,
                m,
                k,
                n,
                [1.0, 0.0],
                pa.cast(),
                1,
                lda,
                pb.cast(),
                1,
                ldb,
                [0.0, 0.0],
                pc.cast(),
                1,
                ldc,
            ),
            other => unreachable!("matrixmultiply: no {other}gemm measured"),
        }
    }
}

/// Benchmarks an in-place factorisation or solve: `setup` makes the fixed operands and the
/// operand overwritten by the kernel; each iteration runs `kernel` on a fresh copy of the
/// latter (the copy is not timed).
fn bench_in_place<T: KernelScalar, F>(
    c: &mut Criterion,
    name: &str,
    multiply_adds: impl Fn(f64) -> f64,
    setup: impl Fn(usize) -> (F, Mat<T>),
    kernel: impl Fn(&F, &mut Mat<T>, Par),
) {
    let mut group = c.benchmark_group(format!("{name}/{}", T::NAME));
    configure(&mut group);
    for n in SIZES {
        let (fixed, input) = setup(n);
        group.throughput(Throughput::Elements(flops::<T>(multiply_adds(n as f64))));
        for backend in Backend::all(false) {
            for threads in THREADS {
                backend.select();
                let id = BenchmarkId::new(format!("{}-{threads}t", backend.name()), n);
                group.bench_function(id, |bench| {
                    bench.iter_batched_ref(
                        || input.clone(),
                        |a| kernel(&fixed, a, par(threads)),
                        BatchSize::LargeInput,
                    )
                });
            }
        }
    }
    group.finish();
}

fn bench_factorisations<T: KernelScalar>(c: &mut Criterion) {
    bench_in_place::<T, ()>(
        c,
        "getrf",
        |n| n * n * n / 3.0,
        |n| ((), random(n, n, 3)),
        |_, a, par| {
            let info = getrf(a.as_mut(), par).unwrap();
            assert_eq!(info.first_zero_pivot, None);
        },
    );
    bench_in_place::<T, ()>(
        c,
        "potrf",
        |n| n * n * n / 6.0,
        |n| ((), hpd(n)),
        |_, a, par| potrf(Uplo::Lower, a.as_mut(), par).unwrap(),
    );
}

/// `op(A)·X = B` (left) or `X·op(A) = B` (right) with a lower triangular `A` and `B` `n × n`.
fn bench_trsm<T: KernelScalar>(c: &mut Criterion) {
    for (side, name) in [(Side::Left, "trsm-left"), (Side::Right, "trsm-right")] {
        bench_in_place::<T, Mat<T>>(
            c,
            name,
            |n| n * n * n / 2.0,
            |n| (hpd(n), random(n, n, 4)),
            move |a, b, par| {
                let (op, diag) = (Op::NoTrans, Diag::NonUnit);
                trsm(
                    side,
                    Uplo::Lower,
                    op,
                    diag,
                    T::one(),
                    a.as_ref(),
                    b.as_mut(),
                    par,
                )
                .unwrap()
            },
        );
    }
}

/// The f64 peak of one core, measured: independent AVX-512 (or AVX2) FMA chains, best of three
/// runs of about 0.3 s. The targets of the kernels are ratios to it, taken in the same run.
#[cfg(target_arch = "x86_64")]
fn measured_peak_gflops() -> Option<f64> {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    fn chains512(iters: u64) -> f64 {
        let (a, b) = (_mm512_set1_pd(1.000_000_1), _mm512_set1_pd(0.999_999_9));
        let mut acc = [_mm512_set1_pd(0.0); 12];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm512_fmadd_pd(*x, a, b);
            }
        }
        acc.iter().map(|&x| _mm512_reduce_add_pd(x)).sum()
    }

    #[target_feature(enable = "avx2,fma")]
    fn chains256(iters: u64) -> f64 {
        let (a, b) = (_mm256_set1_pd(1.000_000_1), _mm256_set1_pd(0.999_999_9));
        let mut acc = [_mm256_set1_pd(0.0); 12];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm256_fmadd_pd(*x, a, b);
            }
        }
        let mut out = [0.0; 4];
        acc.iter().for_each(|&x| {
            let mut lanes = [0.0; 4];
            // SAFETY: `lanes` holds four f64.
            unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), x) };
            out.iter_mut().zip(lanes).for_each(|(o, l)| *o += l);
        });
        out.iter().sum()
    }

    let (lanes, run): (f64, fn(u64) -> f64) = if is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked above).
        (8.0, |n| unsafe { chains512(n) })
    } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        (4.0, |n| unsafe { chains256(n) })
    } else {
        return None;
    };
    let iters = 20_000_000;
    let best = (0..3)
        .map(|_| {
            let start = std::time::Instant::now();
            std::hint::black_box(run(std::hint::black_box(iters)));
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    Some(iters as f64 * 12.0 * lanes * 2.0 / best / 1e9)
}

#[cfg(not(target_arch = "x86_64"))]
fn measured_peak_gflops() -> Option<f64> {
    None
}

fn main() {
    redblue_benches::without_forced_coretype("kernels");
    match measured_peak_gflops() {
        Some(peak) => println!("kernels bench: measured f64 peak of one core: {peak:.1} GFLOP/s"),
        None => println!("kernels bench: no FMA peak probe on this CPU"),
    }
    println!(
        "kernels bench: backends faer{}, matrixmultiply (gemm, 1 thread); OPENBLAS_CORETYPE unset",
        if SYSTEM_BLAS {
            ", openblas"
        } else {
            " (build with --features openblas for OpenBLAS)"
        }
    );
    let mut c = Criterion::default().configure_from_args();
    bench_gemm::<f64>(&mut c);
    bench_gemm::<c64>(&mut c);
    bench_factorisations::<f64>(&mut c);
    bench_factorisations::<c64>(&mut c);
    bench_trsm::<f64>(&mut c);
    bench_trsm::<c64>(&mut c);
    c.final_summary();
}
