//! The communicator check suites on threads-as-ranks, at every rank count of `RANK_COUNTS`.

use redblue_comm::{run_ranks, Communicator, SelfComm};
use redblue_tests::{comm_checks, RANK_COUNTS};

#[test]
fn communicator_contract_on_threads() {
    for p in RANK_COUNTS {
        run_ranks(p, |comm| comm_checks::check_all(&comm));
    }
}

#[test]
fn communicator_contract_on_self() {
    comm_checks::check_all(&SelfComm::new());
}

#[test]
fn accounting_is_symmetric_and_deterministic() {
    for p in RANK_COUNTS {
        let first = run_ranks(p, |comm| comm_checks::accounting_program(&comm));
        let second = run_ranks(p, |comm| comm_checks::accounting_program(&comm));
        assert_eq!(first, second);
        let total: redblue_comm::CommStats = first.iter().copied().sum();
        assert_eq!(total.words_sent, total.words_received);
        assert_eq!(total.bytes_sent, total.bytes_received);
        assert_eq!(total.messages_sent, total.messages_received);
    }
}

#[test]
fn a_panicking_rank_fails_the_others_promptly() {
    for p in [2, 3, 5] {
        let caught = std::panic::catch_unwind(|| {
            run_ranks(p, |comm| {
                if comm.rank() == 1 {
                    panic!("boom on purpose");
                }
                // Rank 1 never joins: without failure propagation this would hang forever.
                let mut buf = [0.0; 4];
                let err = comm.broadcast(&mut buf, 1).unwrap_err();
                assert!(matches!(
                    err,
                    redblue_comm::CommError::PeerFailed { rank: 1 }
                ));
                // The next call fails promptly too.
                assert!(comm.barrier().is_err());
            })
        });
        let payload = caught.expect_err("run_ranks must re-raise the panic");
        let msg = payload.downcast_ref::<String>().expect("a String message");
        assert!(msg.starts_with("rank 1 panicked: boom on purpose"), "{msg}");
    }
}

#[test]
fn sub_communicator_grids() {
    use redblue_comm::{Grid2d, Grid3d, GridOrder};
    run_ranks(6, |comm| {
        for order in [GridOrder::RowMajor, GridOrder::ColMajor] {
            for (r, c) in [(3, 2), (2, 3), (6, 1), (1, 6)] {
                let g = Grid2d::new(&comm, r, c, order).unwrap();
                let (i, j) = g.coords();
                assert_eq!(g.shape().rank(i, j), comm.rank());
                assert_eq!((g.row_comm().size(), g.row_comm().rank()), (c, j));
                assert_eq!((g.col_comm().size(), g.col_comm().rank()), (r, i));
                // Everyone in my row agrees on the row index.
                use redblue_comm::CommunicatorExt;
                let rows = g.row_comm().all_gather_one(i).unwrap();
                assert!(rows.iter().all(|&x| x == i));
            }
            let g = Grid3d::new(&comm, [1, 2, 3], order).unwrap();
            let c = g.coords();
            assert_eq!(g.shape().rank(c), comm.rank());
            for axis in 0..3 {
                assert_eq!(g.fiber(axis).size(), g.shape().dims[axis]);
                assert_eq!(g.fiber(axis).rank(), c[axis]);
                assert_eq!(g.plane(axis).size(), 6 / g.shape().dims[axis]);
            }
        }
        let bad = Grid2d::new(&comm, 4, 2, GridOrder::RowMajor).unwrap_err();
        assert_eq!(
            bad,
            redblue_comm::CommError::GridSizeMismatch {
                dims: vec![4, 2],
                size: 6
            }
        );
        assert!(Grid3d::new(&comm, [2, 2, 2], GridOrder::RowMajor).is_err());
    });
}

#[test]
fn mismatched_calls_report_a_deadlock_instead_of_hanging() {
    use redblue_comm::CommError;
    // Both ranks wait to receive first: no one will ever send.
    let out = run_ranks(2, |comm| {
        let mut buf = [0.0];
        comm.recv(&mut buf, 1 - comm.rank(), 0)
    });
    assert_eq!(
        out,
        vec![Err(CommError::Deadlock), Err(CommError::Deadlock)]
    );
    // Different collectives on different ranks, and a rank that returns early.
    let out = run_ranks(3, |comm| match comm.rank() {
        0 => comm.barrier(),
        1 => {
            let mut b = [0u8; 2];
            comm.broadcast(&mut b, 0)
        }
        _ => Ok(()),
    });
    assert_eq!(out[0], Err(CommError::Deadlock));
    assert_eq!(out[1], Err(CommError::Deadlock));
}
