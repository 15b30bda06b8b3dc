//! `mpi-faults`: one failure scenario under `mpirun`, run by `cargo xtask test-mpi`, which
//! checks how (and how fast) the job ends.
//!
//! Usage: `mpi-faults OPERATION FAULT RANK [CALL]`, OPERATION one of `gemm`, `lu`, `cholesky`,
//! `transform`, FAULT one of
//! - `nan`: a NaN in `RANK`'s part of the input only: LU and Cholesky must return the same
//!   error on every rank, and the program exits 0 on every rank when they all did;
//! - `error`: `RANK`'s `CALL`-th communication call fails, so its algorithm returns early; that
//!   rank ends the job (`MpiComm::abort`, as the miniapp does on a communication failure);
//! - `panic`: `RANK` panics at its `CALL`-th call; the panic hook of `MpiUniverse` aborts the job;
//! - `kill`: `RANK` is killed (`SIGKILL`) at its `CALL`-th call; `mpirun` ends the job.
//!
//! The last three must end the job with a non-zero status on every rank, and soon.

use redblue_comm::{Communicator, MpiUniverse};
use redblue_tests::faults::{run_operation, run_with_nan, Fault, Faulty, Operation};
use std::process::ExitCode;

fn operation(name: &str) -> Operation {
    match name {
        "gemm" => Operation::Gemm,
        "lu" => Operation::Lu,
        "cholesky" => Operation::Cholesky,
        "transform" => Operation::Transform,
        _ => panic!("unknown operation {name}"),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [op, fault, rank, rest @ ..] = args.as_slice() else {
        eprintln!("usage: mpi-faults OPERATION nan|error|panic|kill RANK [CALL]");
        return ExitCode::from(2);
    };
    let (operation, rank) = (operation(op), rank.parse::<usize>().expect("a rank"));
    let call = rest
        .first()
        .map_or(1, |c| c.parse::<usize>().expect("a call number"));
    let universe = MpiUniverse::init().expect("MPI initialisation failed");
    let world = universe.world();
    let me = world.rank();
    if fault == "nan" {
        return match run_with_nan(&world, operation, rank) {
            Err(e) if e.to_string().contains("NaN") => {
                println!("mpi-faults: rank {me}: {e}");
                ExitCode::SUCCESS
            }
            other => {
                eprintln!("mpi-faults: rank {me}: expected a NaN error, got {other:?}");
                ExitCode::FAILURE
            }
        };
    }
    let fault = match fault.as_str() {
        "error" => Fault::Error,
        "panic" => Fault::Panic,
        "kill" => Fault::Kill,
        other => panic!("unknown fault {other}"),
    };
    let faulty = Faulty::new(world, fault, rank, call);
    match run_operation(&faulty, operation) {
        Err(e) if e.comm_failure().is_some() => {
            eprintln!("mpi-faults: rank {me}: {e}; aborting the job");
            universe.world().abort(3)
        }
        outcome => {
            // The failure must not let the job end normally.
            eprintln!("mpi-faults: rank {me} finished: {outcome:?}");
            ExitCode::SUCCESS
        }
    }
}
