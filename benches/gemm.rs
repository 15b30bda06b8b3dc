//! Benchmark of distributed multiplication against the local kernel, side by side in one run:
//! COSMA on 2 ranks (threads-as-ranks, one thread each, native layouts) against
//! redblue-kernels' single-process dgemm on 2 threads, for square `4096³`, tall-skinny
//! `512 × 512 × 65536` and flat `4096 × 4096 × 256` (issue 4's performance targets: ≥ 0.9×,
//! ≥ 0.85×, ≥ 0.85×). Throughput is reported in flops ("elem/s").
//!
//! ```text
//! cargo bench -p redblue-benches --bench gemm
//! cargo bench -p redblue-benches --bench gemm -- flat
//! ```

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use redblue::comm::{run_ranks, Communicator};
use redblue::core::Op;
use redblue::dist::OwnedDistMatrix;
use redblue::gemm::{cosma, native_layouts, plan_strategy, GemmShape, PlanOptions};
use redblue::kernels::{gemm, Mat, Par};
use std::time::{Duration, Instant};

/// Element `(i, j)` of the random matrix `seed` (uniform in `[−1, 1)`).
fn value(i: usize, j: usize, seed: u64) -> f64 {
    redblue::core::random::uniform(i, j, seed)
}

fn bench_gemm(c: &mut Criterion) {
    let mut group = c.benchmark_group("gemm-2");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for (name, m, n, k) in [
        ("square", 4096, 4096, 4096),
        ("tall-skinny", 512, 512, 65536),
        ("flat", 4096, 4096, 256),
    ] {
        group.throughput(Throughput::Elements(
            (2.0 * m as f64 * n as f64 * k as f64) as u64,
        ));
        let id = format!("{m}x{n}x{k}");
        let (a, b) = (
            Mat::from_fn(m, k, |i, j| value(i, j, 1)),
            Mat::from_fn(k, n, |i, j| value(i, j, 2)),
        );
        let mut out = Mat::<f64>::zeros(m, n);
        group.bench_function(
            BenchmarkId::new(format!("{name}/kernel-2-threads"), &id),
            |bench| {
                bench.iter(|| {
                    gemm(
                        1.0,
                        a.as_ref(),
                        Op::NoTrans,
                        b.as_ref(),
                        Op::NoTrans,
                        0.0,
                        out.as_mut(),
                        Par::Threads(2),
                    )
                    .unwrap()
                })
            },
        );
        drop((a, b, out));
        let shape = GemmShape::new(m, n, k);
        let strategy = plan_strategy(shape, 2, &PlanOptions::default()).unwrap();
        group.bench_function(
            BenchmarkId::new(format!("{name}/cosma-2-ranks"), &id),
            |bench| {
                bench.iter_custom(|iters| {
                    // One set of ranks per sample; time only the multiplications.
                    let times = run_ranks(2, |comm| {
                        let [la, lb, lc] =
                            native_layouts(&strategy, shape, (Op::NoTrans, Op::NoTrans), 2)
                                .unwrap();
                        let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| value(i, j, 1)).unwrap();
                        let b = OwnedDistMatrix::from_fn(&comm, lb, |i, j| value(i, j, 2)).unwrap();
                        let mut c = OwnedDistMatrix::zeros(&comm, lc).unwrap();
                        // One untimed call: first-touch page faults of C and of the exchange
                        // buffers are not timed (the kernel arm reuses its C warm too).
                        cosma(
                            &comm,
                            1.0,
                            &a,
                            Op::NoTrans,
                            &b,
                            Op::NoTrans,
                            0.0,
                            &mut c,
                            &strategy,
                            Par::Seq,
                        )
                        .unwrap();
                        comm.barrier().unwrap();
                        let start = Instant::now();
                        for _ in 0..iters {
                            cosma(
                                &comm,
                                1.0,
                                &a,
                                Op::NoTrans,
                                &b,
                                Op::NoTrans,
                                0.0,
                                &mut c,
                                &strategy,
                                Par::Seq,
                            )
                            .unwrap();
                        }
                        comm.barrier().unwrap();
                        start.elapsed()
                    });
                    times.into_iter().max().unwrap_or_default()
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench_gemm);
criterion_main!(benches);
