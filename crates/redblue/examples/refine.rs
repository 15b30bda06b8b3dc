//! Example of composing a distributed solver: `A·X = B` by LU, then iterative refinement
//! (`R = B − A·X` with a distributed product, a correction solved with the same factors,
//! `X = X + D`), with the words every call moves next to its model. It runs the solver twice:
//! with every matrix block-cyclic (what a ScaLAPACK program would do), and with `A` and `B`
//! where the product's plan wants them. The book's "Using redblue" chapter walks through it.
//!
//! Usage: `refine [--n N] [--nrhs K] [--ranks P] [--backend threads|self|mpi]`
//! (`--backend mpi` needs `--features mpi` and `mpirun`).

use redblue::check::{solve_residual, LU_THRESHOLD};
use redblue::prelude::*;

// ANCHOR: setup
/// Where the solver keeps `A` and `B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// ScaLAPACK's habit: `64 × 64` blocks on the most square grid.
    BlockCyclic,
    /// `A` and `B` (and so `X` and `R`) where the residual product's plan wants them.
    Planned,
}

/// What one rank saw: the residual after each solve and the words each call moved.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// `‖B − A·X‖_∞ / (‖A‖_∞·‖X‖_∞·N·ε)` after the first solve and after each refinement.
    pub residuals: Vec<f64>,
    /// Each call's name and this rank's counters for it.
    pub calls: Vec<(&'static str, CommStats)>,
    /// The words this rank's residual product sends by its plan, before it runs.
    pub product_model: u64,
}
// ANCHOR_END: setup

// ANCHOR: solver
/// Solves `A·X = B` (`n × n`, `nrhs` right-hand sides, seeded random) and refines `X` twice.
pub fn refine<C: Communicator>(
    comm: &C,
    n: usize,
    nrhs: usize,
    placement: Placement,
) -> Result<Report, redblue::Error> {
    let p = comm.size();
    // R (n × nrhs) = A (n × n) · X (n × nrhs). Plans are pure: nothing is allocated yet.
    let (shape, ops, params) = (
        GemmShape::new(n, nrhs, n),
        (Op::NoTrans, Op::NoTrans),
        GemmParams::default(),
    );
    let [native_a, _, native_r] = GemmPlan::new(shape, ops, p, &params)?.native_layouts()?;
    let block_cyclic = |cols| BlockCyclic::near_square(n, cols, 64, 64, p);
    let (a_layout, b_layout) = match placement {
        Placement::BlockCyclic => (
            AnyLayout::from(block_cyclic(n)?),
            AnyLayout::from(block_cyclic(nrhs)?),
        ),
        Placement::Planned => (native_a.into(), native_r.into()),
    };
    // The same matrices on any rank count and in any layout: elements are functions of
    // (row, column, seed).
    let a = OwnedDistMatrix::<f64, _>::random(comm, a_layout, 1)?;
    let b = OwnedDistMatrix::<f64, _>::random(comm, b_layout, 2)?;
    let mut report = Report::default();
    let mut call = |name, comm: &C| {
        report.calls.push((name, comm.stats()));
        comm.reset_stats();
    };
    comm.reset_stats();

    let factors = lu(comm, &a, &LuParams::default())?; // copies A into LU's layout
    call("lu", comm);
    let mut x = factors.solve(comm, &b)?; // X in B's layout
    call("solve", comm);
    let mut residuals = vec![solve_residual(comm, &a, &x, &b)?];
    // The product planned for where A, X and R are (X and R in B's layout): its strategy
    // moves the least from there, and the plan says what it will move.
    let residual =
        GemmPlan::for_layouts(shape, ops, p, &params, a.layout(), b.layout(), b.layout())?;
    comm.reset_stats();
    for _ in 0..2 {
        let mut r = b.clone();
        gemm_with(comm, &residual, -1.0, &a, &x, 1.0, &mut r, Par::Seq)?; // R = B − A·X
        call("R = B - A·X", comm);
        let d = factors.solve(comm, &r)?; // A·D = R
        call("solve A·D = R", comm);
        x.axpy(comm, 1.0, &d)?; // X = X + D: the same layout, nothing moves
        call("X = X + D", comm);
        residuals.push(solve_residual(comm, &a, &x, &b)?);
        comm.reset_stats();
    }
    report.residuals = residuals;
    report.product_model = residual.rank_costs(8)[comm.rank()].words_sent;
    Ok(report)
}
// ANCHOR_END: solver

/// The report of every rank, printed: residuals, then each call's largest words sent.
fn print(placement: Placement, reports: &[Report]) {
    let residuals: Vec<String> = reports[0]
        .residuals
        .iter()
        .map(|r| format!("{r:.3}"))
        .collect();
    println!("{placement:?}: residuals {}", residuals.join(", "));
    for (i, (name, _)) in reports[0].calls.iter().enumerate() {
        let most = reports.iter().map(|r| r.calls[i].1.words_sent).max();
        println!(
            "  {name:<16} {:>10} words (most sent by a rank)",
            most.unwrap_or(0)
        );
    }
    let model = reports.iter().map(|r| r.product_model).max().unwrap_or(0);
    println!("  the residual product's plan said {model} words");
}

/// Runs both placements on `ranks` threads, or on this process, or under MPI.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    let n: usize = arg("--n", "1000").parse().expect("--n N");
    let nrhs: usize = arg("--nrhs", "4").parse().expect("--nrhs K");
    let ranks: usize = arg("--ranks", "4").parse().expect("--ranks P");
    let placements = [Placement::BlockCyclic, Placement::Planned];
    let check = |report: &Report| {
        let ok = report.residuals.iter().all(|&r| r < LU_THRESHOLD);
        assert!(ok, "residuals {:?} above {LU_THRESHOLD}", report.residuals);
    };
    match arg("--backend", "threads").as_str() {
        "threads" => {
            for placement in placements {
                let reports: Vec<Report> =
                    run_ranks(ranks, |comm| refine(&comm, n, nrhs, placement))
                        .into_iter()
                        .collect::<Result<_, _>>()
                        .expect("the solver runs");
                reports.iter().for_each(check);
                print(placement, &reports);
            }
        }
        "self" => {
            for placement in placements {
                let report = refine(&SelfComm::new(), n, nrhs, placement).expect("the solver runs");
                check(&report);
                print(placement, &[report]);
            }
        }
        #[cfg(feature = "mpi")]
        "mpi" => {
            let universe = MpiUniverse::init().expect("MPI initialisation failed");
            let world = universe.world();
            for placement in placements {
                let report = refine(&world, n, nrhs, placement).expect("the solver runs");
                check(&report);
                if world.rank() == 0 {
                    // Rank 0's counters (the others' are alike).
                    print(placement, &[report]);
                }
            }
        }
        other => {
            eprintln!("unknown backend {other:?}: threads, self, or mpi (with --features mpi)");
            std::process::exit(2);
        }
    }
}
