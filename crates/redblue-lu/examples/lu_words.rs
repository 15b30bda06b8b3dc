//! Prints (as `series,x,y` lines) the words each rank receives in an LU factorisation of order
//! `N = 16384` (no interchanges) against the number of ranks, each algorithm with its default
//! plan (grid and tile width chosen by `lu_plan`): COnfLUX, the 2D baseline and seed 001's
//! 2.5D LU without pivoting and with CA-pivoting by their exact per-rank models (the largest
//! receive), the 2D model `N²/√P`, seed 001's `N²/√(cP)` at its plan's `c`, the COnfLUX leading
//! term `N³/(P√M)` and the lower bound, both with the memory `M` of COnfLUX's grid. `cargo
//! xtask plot` draws it to `book/src/img/lu-words.svg`.

use redblue_lu::{
    conflux_leading_words, diagonal_pivots, lu_lower_bound, lu_plan, lu_rank_costs, two_d_words,
    two_five_d_words, LuAlgorithm, LuParams,
};

fn main() {
    let n = 16384;
    let ranks: Vec<usize> = (1..=12).map(|e| 1 << e).collect();
    println!("# title: LU words received per rank (model), N = 16384, default plans");
    println!("series,x,y");
    for (name, algorithm) in [
        ("COnfLUX (exact)", LuAlgorithm::Conflux),
        ("2D (exact)", LuAlgorithm::TwoD),
        ("2.5D no pivoting (exact)", LuAlgorithm::NoPivot25d),
        ("2.5D CA-pivoting (exact)", LuAlgorithm::CaPivot25d),
    ] {
        for &p in &ranks {
            let params = LuParams::default().with_algorithm(algorithm);
            let (grid, v) = lu_plan(n, p, &params).expect("a grid fits");
            let given = params.with_grid(grid).with_block(v);
            let costs =
                lu_rank_costs(n, p, &given, &diagonal_pivots(n, v), 8).expect("a grid fits");
            let most = costs.iter().map(|s| s.words_received).max().unwrap_or(0);
            println!("{name},{p},{most}");
        }
    }
    let nf = n as f64;
    for &p in &ranks {
        let (grid, _) = lu_plan(n, p, &LuParams::default()).expect("a grid fits");
        let (used, memory) = (grid.ranks() as f64, grid.replica_words(n));
        println!("2D model N²/√P,{p},{}", two_d_words(nf, p as f64));
        let sd = LuParams::default().with_algorithm(LuAlgorithm::NoPivot25d);
        let (g, _) = lu_plan(n, p, &sd).expect("a grid fits");
        println!(
            "2.5D N²/√(cP),{p},{}",
            two_five_d_words(nf, g.ranks() as f64, g.c as f64)
        );
        println!(
            "COnfLUX N³/(P√M),{p},{}",
            conflux_leading_words(nf, used, memory)
        );
        println!("lower bound,{p},{}", lu_lower_bound(nf, used, memory));
    }
}
