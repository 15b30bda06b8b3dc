//! Benchmark of `transform`: an n×n f64 matrix from block-cyclic 64×64 to 1D columns, with and
//! without transposition, on threads-as-ranks.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use redblue::prelude::*;

fn bench_transform(c: &mut Criterion) {
    let mut group = c.benchmark_group("transform");
    group.sample_size(10);
    for &(ranks, n) in &[(2usize, 2048usize), (4, 2048)] {
        for op in [Op::NoTrans, Op::Trans] {
            group.throughput(Throughput::Bytes((n * n * 8) as u64));
            let id = BenchmarkId::new(format!("{op}/p{ranks}"), n);
            group.bench_with_input(id, &n, |bench, &n| {
                bench.iter_custom(|iters| {
                    // One set of ranks per sample; time only the transforms.
                    let times = run_ranks(ranks, |comm| {
                        let pr = if ranks == 4 { 2 } else { 1 };
                        let la = BlockCyclic::new(n, n, 64, 64, pr, ranks / pr).unwrap();
                        let lb = GridLayout::even(n, n, 1, ranks).unwrap();
                        let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| (i + j) as f64).unwrap();
                        let mut b = OwnedDistMatrix::zeros(&comm, lb).unwrap();
                        comm.barrier().unwrap();
                        let start = std::time::Instant::now();
                        for _ in 0..iters {
                            transform(&comm, 1.0, &a, op, 0.0, &mut b).unwrap();
                        }
                        comm.barrier().unwrap();
                        start.elapsed()
                    });
                    times.into_iter().max().unwrap_or_default()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_transform);
criterion_main!(benches);
