//! The leaf width of the kernel crate's recursive `potrf` ([`POTRF_LEAF`]), chosen by
//! measurement: the factorisation of a Hermitian positive definite matrix (f64 and c64) with
//! each candidate width, interleaved round by round (one factorisation per width in every
//! round, the widths in a rotated order) so that a slow stretch of this shared machine hits
//! every width alike. Prints each width's median time relative to the current width's.
//!
//! ```text
//! cargo bench -p redblue-benches --bench potrf_leaf
//! ```

use redblue::core::{c64, Scalar, Uplo};
use redblue::kernels::{potrf_with_leaf, KernelScalar, Mat, Par, POTRF_LEAF};
use std::time::Instant;

/// The widths tried.
const LEAVES: [usize; 7] = [8, 16, 24, 32, 48, 64, 128];

/// `R + Rᴴ + 2n·I`: Hermitian positive definite.
fn hpd<T: Scalar>(n: usize) -> Mat<T> {
    let r = |i, j| redblue::core::random::uniform::<T>(i, j, 5);
    Mat::from_fn(n, n, |i, j| {
        let d = if i == j {
            T::from_f64_parts(2.0 * n as f64, 0.0)
        } else {
            T::zero()
        };
        d + r(i, j) + r(j, i).conj()
    })
}

/// Median seconds of each width over `rounds` interleaved rounds at order `n` on `par`.
fn sweep<T: KernelScalar>(n: usize, rounds: usize, par: Par) -> Vec<f64> {
    let a = hpd::<T>(n);
    let mut times = vec![Vec::new(); LEAVES.len()];
    for round in 0..rounds {
        for k in 0..LEAVES.len() {
            let at = (k + round) % LEAVES.len();
            let mut work = a.clone();
            let start = Instant::now();
            potrf_with_leaf(Uplo::Lower, work.as_mut(), par, LEAVES[at])
                .expect("positive definite");
            times[at].push(start.elapsed().as_secs_f64());
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        })
        .collect()
}

fn report<T: KernelScalar>(n: usize, rounds: usize, threads: usize) {
    let par = if threads == 1 {
        Par::Seq
    } else {
        Par::Threads(threads)
    };
    let medians = sweep::<T>(n, rounds, par);
    let current = LEAVES.iter().position(|&l| l == POTRF_LEAF).expect("tried");
    let line: Vec<String> = LEAVES
        .iter()
        .zip(&medians)
        .map(|(leaf, t)| format!("{leaf}: {:.3}", t / medians[current]))
        .collect();
    println!(
        "potrf_leaf/{}/{n}/{threads} thread(s): median time / leaf {POTRF_LEAF}'s ({:.4} s), {rounds} rounds: {}",
        T::NAME,
        medians[current],
        line.join(", ")
    );
}

fn main() {
    // cargo bench passes `--bench`; nothing else is read.
    for (n, rounds) in [(256, 41), (1024, 15), (4096, 9)] {
        report::<f64>(n, rounds, 1);
        report::<f64>(n, rounds, 2);
    }
    report::<c64>(1024, 15, 1);
}
