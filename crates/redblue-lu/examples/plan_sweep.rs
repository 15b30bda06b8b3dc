//! Plans COnfLUX and the 2D baseline with default options for `N = 16384` (or the first
//! argument) on every rank count from the second argument to the third (default 16 to 4096),
//! and prints every `P` where COnfLUX's exact largest words sent or received by a rank exceed
//! the 2D baseline's, then the worst ratios. The planner tests check a sample of these `P`;
//! this checks them all:
//!
//! ```text
//! cargo run --release -p redblue-lu --example plan_sweep -- 16384 16 4096
//! ```

use redblue_lu::{diagonal_pivots, lu_plan, lu_rank_costs, LuAlgorithm, LuParams};

/// The exact largest words sent and received by a rank of the default plan.
fn maxima(n: usize, p: usize, algorithm: LuAlgorithm) -> (u64, u64, String) {
    let params = LuParams::default().with_algorithm(algorithm);
    let (grid, v) = lu_plan(n, p, &params).expect("a plan");
    let given = params.with_grid(grid).with_block(v);
    let costs = lu_rank_costs(n, p, &given, &diagonal_pivots(n, v), 8).expect("a plan");
    let sent = costs.iter().map(|s| s.words_sent).max().unwrap_or(0);
    let received = costs.iter().map(|s| s.words_received).max().unwrap_or(0);
    (sent, received, format!("{grid} v={v}"))
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: N, first P, last P"))
        .collect();
    let n = args.first().copied().unwrap_or(16384);
    let first = args.get(1).copied().unwrap_or(16);
    let last = args.get(2).copied().unwrap_or(4096);
    let (mut worst_sent, mut worst_received, mut over) = ((0.0, 0), (0.0, 0), 0);
    for p in first..=last {
        let (cs, cr, plan) = maxima(n, p, LuAlgorithm::Conflux);
        let (ds, dr, plan_2d) = maxima(n, p, LuAlgorithm::TwoD);
        let (rs, rr) = (cs as f64 / ds as f64, cr as f64 / dr as f64);
        if rs > 1.0 || rr > 1.0 {
            over += 1;
            println!("P={p}: COnfLUX {plan} {cs}/{cr} against 2D {plan_2d} {ds}/{dr}");
        }
        worst_sent = if rs > worst_sent.0 {
            (rs, p)
        } else {
            worst_sent
        };
        worst_received = if rr > worst_received.0 {
            (rr, p)
        } else {
            worst_received
        };
    }
    println!(
        "N={n}, P={first}..={last}: {over} rank counts over 2D; worst sent ratio {:.4} (P={}), \
         worst received ratio {:.4} (P={})",
        worst_sent.0, worst_sent.1, worst_received.0, worst_received.1
    );
}
