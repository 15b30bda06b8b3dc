//! `mpi-suite`: the communicator and distributed-matrix check suites on `MpiComm`, run under
//! `mpirun` by `cargo xtask test-mpi`. Also runs the accounting program on MPI and, on rank 0,
//! the same program on threads-as-ranks, and requires identical counters on every rank.

use redblue_comm::{run_ranks, CommStats, Communicator, MpiUniverse};
use redblue_tests::{comm_checks, dist_checks, residual_checks};

fn stats_words(s: &CommStats) -> [u64; 6] {
    [
        s.words_sent,
        s.words_received,
        s.bytes_sent,
        s.bytes_received,
        s.messages_sent,
        s.messages_received,
    ]
}

fn main() {
    // A failed check on one rank must end the whole job, not leave the others waiting in a
    // collective: exit without finalising, and mpirun tears the job down.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        eprintln!("mpi-suite: a check failed; aborting the job");
        std::process::exit(101);
    }));

    let universe = MpiUniverse::init().expect("MPI initialisation failed");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let mut passed = 0;

    comm_checks::check_all(&world);
    passed += 1;
    dist_checks::check_all(&world);
    passed += 1;
    residual_checks::check_all(&world);
    passed += 1;

    // Identical counters on MPI and on threads for one program.
    let on_mpi = stats_words(&comm_checks::accounting_program(&world));
    let mut all = vec![0u64; 6 * size];
    world
        .gather(&on_mpi, &mut all, 0)
        .expect("gather of counters");
    if rank == 0 {
        let on_threads = run_ranks(size, |comm| comm_checks::accounting_program(&comm));
        for (r, t) in on_threads.iter().enumerate() {
            assert_eq!(
                &all[6 * r..6 * r + 6],
                &stats_words(t)[..],
                "counters of rank {r}: MPI (left) against threads (right)"
            );
        }
    }
    passed += 1;
    world.barrier().expect("final barrier");
    if rank == 0 {
        println!("mpi-suite ran its suites on {size} ranks");
        println!("mpi-suite: {passed} passed, 0 failed");
    }
}
