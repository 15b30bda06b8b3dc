//! Example of the Cholesky crate from a user's side: a Hermitian positive definite matrix given
//! by its lower triangle in a block-cyclic layout (the upper triangle NaN, never read), its
//! factor, a solve with three right-hand sides, and ScaLAPACK's LLT residual; on 4 ranks as
//! threads. The book's Cholesky page shows the program.
//!
//! Usage: `cargo run --release -p redblue --example cholesky_solve`

use redblue::cholesky::{cholesky, CholeskyParams};
use redblue::core::Uplo;
use redblue::prelude::*;

// ANCHOR: program
/// Factors, solves and checks; returns the factor's residual.
fn program<C: Communicator>(comm: &C, n: usize) -> Result<f64, redblue::Error> {
    let layout = BlockCyclic::new(n, n, 32, 32, 2, 2)?;
    // Only the lower triangle is read: the upper may hold anything, NaN included.
    let a = OwnedDistMatrix::from_fn(comm, layout, |i, j| match i.cmp(&j) {
        std::cmp::Ordering::Equal => 2.0 * n as f64,
        std::cmp::Ordering::Greater => redblue::core::random::uniform(i, j, 1),
        std::cmp::Ordering::Less => f64::NAN,
    })?;
    let factor = cholesky(comm, &a, Uplo::Lower, &CholeskyParams::default())?;
    let b = OwnedDistMatrix::<f64, _>::random(comm, BlockCyclic::new(n, 3, 32, 32, 2, 2)?, 7)?;
    let x = factor.solve(comm, &b)?; // A·X = B, X in b's layout
    assert_eq!(x.shape(), (n, 3));
    // ‖A − L·Lᴴ‖₁ / (‖A‖₁·N·ε), ScaLAPACK's LLT tester's measure (threshold 3).
    redblue::check::cholesky_residual(comm, &a, Uplo::Lower, &factor)
}
// ANCHOR_END: program

fn main() {
    let residuals = run_ranks(4, |comm| program(&comm, 500));
    for r in &residuals {
        let r = r.as_ref().expect("the factorisation and the solve succeed");
        assert!(*r < 3.0, "residual {r}");
    }
    println!(
        "residual {:.4} (threshold 3) on 4 ranks",
        residuals[0].as_ref().unwrap()
    );
}
