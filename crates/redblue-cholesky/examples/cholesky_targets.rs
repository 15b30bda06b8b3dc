//! Prints COnfCHOX's and the 2D baseline's planned grids and exact per-rank maxima at
//! N = 16384 for a range of rank counts: `cargo run --release -p redblue-cholesky --example
//! cholesky_targets`.

use redblue_cholesky::{CholeskyAlgorithm, CholeskyParams, CholeskyPlan};

fn main() {
    let n = 16384;
    for p in [16, 64, 512, 4096] {
        let mut row = Vec::new();
        for algorithm in [CholeskyAlgorithm::Confchox, CholeskyAlgorithm::TwoD] {
            let plan =
                CholeskyPlan::new(n, p, &CholeskyParams::default().with_algorithm(algorithm))
                    .expect("a plan");
            let stats = plan.rank_costs(p, 8);
            let sent = stats.iter().map(|s| s.words_sent).max().unwrap_or(0);
            let received = stats.iter().map(|s| s.words_received).max().unwrap_or(0);
            row.push((plan.grid, plan.block, sent, received));
        }
        let (c, d) = (row[0], row[1]);
        println!(
            "P={p}: confchox {} v={} sent {} recv {} | 2d {} v={} sent {} recv {} | ratios {:.3} {:.3}",
            c.0, c.1, c.2, c.3, d.0, d.1, d.2, d.3,
            c.2 as f64 / d.2 as f64,
            c.3 as f64 / d.3 as f64
        );
    }
}
