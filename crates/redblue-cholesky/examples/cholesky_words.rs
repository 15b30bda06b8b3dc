//! Prints (as `series,x,y` lines) the words each rank receives in a Cholesky factorisation of
//! order `N = 16384` against the number of ranks, each algorithm with its default plan:
//! COnfCHOX and the 2D baseline by their exact per-rank models (the largest receive), and the
//! lower bound `N³/(3P√M) + N²/(2P) + N/P` with the memory `M` of COnfCHOX's grid. `cargo
//! xtask plot` draws it to `book/src/img/cholesky-words.svg`.

use redblue_cholesky::{cholesky_lower_bound, CholeskyAlgorithm, CholeskyParams, CholeskyPlan};

fn main() {
    let n = 16384;
    let ranks: Vec<usize> = (1..=12).map(|e| 1 << e).collect();
    println!("# title: Cholesky words received per rank (model), N = 16384, default plans");
    println!("series,x,y");
    for (name, algorithm) in [
        ("COnfCHOX (exact)", CholeskyAlgorithm::Confchox),
        ("2D (exact)", CholeskyAlgorithm::TwoD),
    ] {
        for &p in &ranks {
            let params = CholeskyParams::default().with_algorithm(algorithm);
            let plan = CholeskyPlan::new(n, p, &params).expect("a grid fits");
            let most = plan
                .rank_costs(p, 8)
                .iter()
                .map(|s| s.words_received)
                .max()
                .unwrap_or(0);
            println!("{name},{p},{most}");
        }
    }
    for &p in &ranks {
        let plan = CholeskyPlan::new(n, p, &CholeskyParams::default()).expect("a grid fits");
        let (used, memory) = (plan.ranks() as f64, plan.grid.replica_words(n));
        let bound = cholesky_lower_bound(n as f64, used, memory);
        println!("lower bound,{p},{bound}");
    }
}
