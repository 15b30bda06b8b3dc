//! Example distributed program: moves an n×n matrix from ScaLAPACK block-cyclic to a 1D column
//! layout with a transposition (`B = Aᵀ`), checks every element, and reports the words each rank
//! sent against the plan's prediction.
//!
//! Usage: `redistribute [--ranks P] [--n N] [--backend threads|self|mpi]`
//! (`--backend mpi` needs `--features mpi` and `mpirun`).

use redblue::prelude::*;
use std::time::Instant;

// ANCHOR: program
/// The program, written once against `Communicator`.
fn program<C: Communicator>(comm: &C, n: usize) -> Result<(CommStats, usize, f64), DistError> {
    let p = comm.size();
    // A square-ish grid for block-cyclic A.
    let pr = (1..=p)
        .filter(|r| p.is_multiple_of(*r) && r * r <= p)
        .max()
        .unwrap_or(1);
    let a_layout = BlockCyclic::new(n, n, 64, 64, pr, p / pr)?;
    let b_layout = GridLayout::even(n, n, 1, p)?;
    let a = OwnedDistMatrix::from_fn(comm, a_layout.clone(), |i, j| (i * n + j) as f64)?;
    let mut b = OwnedDistMatrix::zeros(comm, b_layout.clone())?;

    let predicted = TransformPlan::new(&a_layout, Op::Trans, &b_layout, comm.rank(), p)?;
    comm.reset_stats();
    let start = Instant::now();
    transform(comm, 1.0, &a, Op::Trans, 0.0, &mut b)?;
    let seconds = start.elapsed().as_secs_f64();
    let stats = comm.stats();

    let mut wrong = 0usize;
    b.for_each_local(|i, j, x| wrong += usize::from(x != (j * n + i) as f64));
    let wrong = comm.all_reduce_one(wrong, ReduceOp::Sum)?;
    assert_eq!(wrong, 0, "elements of B that differ from A^T");
    assert_eq!(stats.words_sent as usize, predicted.words_sent());
    Ok((stats, predicted.words_sent(), seconds))
}
// ANCHOR_END: program

fn report(rank: usize, (stats, predicted, seconds): (CommStats, usize, f64)) {
    println!(
        "rank {rank:>3}: sent {:>10} words (plan: {predicted:>10}) in {:>4} messages, {:.3} ms",
        stats.words_sent,
        stats.messages_sent,
        seconds * 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    let ranks: usize = arg("--ranks", "4").parse().expect("--ranks takes a number");
    let n: usize = arg("--n", "1000").parse().expect("--n takes a number");
    let backend = arg("--backend", "threads");
    let header = || {
        println!("redistribute: {n}x{n} f64, block-cyclic 64x64 -> 1D columns, B = A^T ({backend})")
    };
    match backend.as_str() {
        "threads" => {
            header();
            let results = run_ranks(ranks, |comm| program(&comm, n));
            for (r, res) in results.into_iter().enumerate() {
                report(r, res.expect("program failed"));
            }
        }
        "self" => {
            header();
            report(0, program(&SelfComm::new(), n).expect("program failed"));
        }
        #[cfg(feature = "mpi")]
        "mpi" => {
            let universe = MpiUniverse::init().expect("MPI initialisation failed");
            let world = universe.world();
            if world.rank() == 0 {
                header();
            }
            let out = program(&world, n).expect("program failed");
            for r in 0..world.size() {
                if r == world.rank() {
                    report(r, out);
                }
                world.barrier().expect("barrier failed");
            }
        }
        other => {
            eprintln!("unknown backend {other:?}: threads, self, or mpi (with --features mpi)");
            std::process::exit(2);
        }
    }
}
