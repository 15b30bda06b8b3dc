//! Seed 002's Table 1 on the larger sweeps of the book: every algorithm and layout on the
//! two-level memory simulator, the exponents of `n` and `M` fitted to its words and messages
//! beside the paper's orders, and the square recursive algorithm's ratios to the lower bounds.
//! Exits non-zero if a fitted exponent is more than 0.25 from the paper's (the tests check the
//! quicker sweeps):
//!
//! ```text
//! cargo run --release -p redblue-cholesky --example table1
//! ```

use redblue_cholesky::sequential::{table1, Table1Scale};

fn main() {
    let table = table1(Table1Scale::Full).expect("the simulator runs");
    println!("{table}");
    let mismatches: Vec<String> = table.rows.iter().flat_map(|r| r.mismatches(0.25)).collect();
    if !mismatches.is_empty() {
        eprintln!("exponents off the paper's orders: {mismatches:#?}");
        std::process::exit(1);
    }
}
