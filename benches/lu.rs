//! Benchmark of distributed LU against the local kernel, side by side in one run (issue 5's
//! performance targets): COnfLUX on 2 ranks (threads-as-ranks, one thread each, native layout)
//! against redblue-kernels' single-process getrf on 2 threads for f64 `N = 4096` (target ≥
//! 0.8×), and COnfLUX against the 2D baseline on 4 ranks (target: at least as fast).
//! Throughput is reported in flops (`2N³/3`, "elem/s").
//!
//! ```text
//! cargo bench -p redblue-benches --bench lu
//! ```

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use redblue::comm::{run_ranks, Communicator};
use redblue::dist::{BlockCyclic, GridOrder, OwnedDistMatrix};
use redblue::kernels::{getrf, Mat, Par};
use redblue::lu::{lu_in_place, lu_plan, LuAlgorithm, LuParams};
use std::time::{Duration, Instant};

fn value(i: usize, j: usize) -> f64 {
    ((i * 7919 + j * 104_729) % 2001) as f64 / 1000.0 - 1.0 + if i == j { 0.5 } else { 0.0 }
}

/// Times `iters` factorisations on `p` threads-as-ranks (the slowest rank's time), in place
/// on a copy of the input made outside the timed region (as the kernel's arm clones its matrix
/// in criterion's untimed setup), the input already in the native layout.
fn distributed(n: usize, p: usize, params: &LuParams, iters: u64) -> Duration {
    let (grid, v) = lu_plan(n, p, params).unwrap();
    let times = run_ranks(p, |comm| {
        let layout = BlockCyclic::new(n, n, v, v, grid.px, grid.py)
            .unwrap()
            .with_order(GridOrder::ColMajor);
        let a = OwnedDistMatrix::from_fn(&comm, layout, value).unwrap();
        drop(lu_in_place(&comm, a.clone(), params).unwrap());
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let copy = a.clone();
            comm.barrier().unwrap();
            let start = Instant::now();
            let factors = lu_in_place(&comm, copy, params).unwrap();
            comm.barrier().unwrap();
            total += start.elapsed();
            drop(factors);
        }
        total
    });
    times.into_iter().max().unwrap_or_default()
}

fn bench_lu(c: &mut Criterion) {
    let mut group = c.benchmark_group("lu");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    let n = 4096;
    group.throughput(Throughput::Elements(
        (2.0 * (n as f64).powi(3) / 3.0) as u64,
    ));
    let id = format!("{n}");
    let a = Mat::from_fn(n, n, value);
    group.bench_function(BenchmarkId::new("kernel-getrf-2-threads", &id), |bench| {
        bench.iter_batched_ref(
            || a.clone(),
            |m| getrf(m.as_mut(), Par::Threads(2)).unwrap(),
            criterion::BatchSize::LargeInput,
        )
    });
    drop(a);
    let conflux = LuParams::default();
    let two_d = LuParams {
        algorithm: LuAlgorithm::TwoD,
        ..LuParams::default()
    };
    for (name, p, params) in [
        ("conflux-2-ranks", 2, &conflux),
        ("conflux-4-ranks", 4, &conflux),
        ("2d-4-ranks", 4, &two_d),
    ] {
        group.bench_function(BenchmarkId::new(name, &id), |bench| {
            bench.iter_custom(|iters| distributed(n, p, params, iters))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_lu);
criterion_main!(benches);
