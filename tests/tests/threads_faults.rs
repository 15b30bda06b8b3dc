//! Failures on threads-as-ranks: one rank's error (its algorithm returns early) or panic in the
//! middle of gemm, LU, Cholesky and `transform`, at the first, a middle and the last of its
//! communication calls. Every rank must end with an error (the others' calls fail with
//! `PeerFailed` or `Deadlock` instead of waiting), `run_ranks` must return (no thread left
//! blocked), and every byte the scenario allocated — the buffer pool's included — must be
//! freed once its threads have ended.
//!
//! One test function, so that the allocation counter sees this scenario's threads only.

use redblue_comm::{run_ranks, ThreadComm};
use redblue_tests::faults::{calls_of, run_operation, Fault, Faulty, Operation, OPERATIONS};
use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The system allocator, counting the bytes alive.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to the system allocator with the caller's layout.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// How one rank ended.
#[derive(Clone, Debug)]
enum Outcome {
    Ok,
    Err(String),
    Panicked,
}

/// Runs `operation` on `p` ranks with `fault` on `rank` at call `at`: every rank's outcome.
fn scenario(p: usize, operation: Operation, fault: Fault, rank: usize, at: usize) -> Vec<Outcome> {
    let outcomes = Mutex::new(vec![Outcome::Panicked; p]);
    let run = catch_unwind(AssertUnwindSafe(|| {
        run_ranks(p, |comm: ThreadComm| {
            let me = comm.rank_of();
            let faulty = Faulty::new(comm, fault, rank, at);
            let outcome = match run_operation(&faulty, operation) {
                Ok(_) => Outcome::Ok,
                Err(e) => Outcome::Err(e.to_string()),
            };
            outcomes.lock().unwrap()[me] = outcome;
        })
    }));
    assert_eq!(
        run.is_err(),
        fault == Fault::Panic,
        "run_ranks panics exactly when a rank panicked"
    );
    outcomes.into_inner().unwrap()
}

/// `ThreadComm`'s rank without importing the trait into the closure's signature.
trait RankOf {
    fn rank_of(&self) -> usize;
}

impl RankOf for ThreadComm {
    fn rank_of(&self) -> usize {
        redblue_comm::Communicator::rank(self)
    }
}

#[test]
fn a_failing_rank_ends_every_rank_with_an_error_and_frees_everything() {
    // A hang fails the test instead of holding CI until its time limit.
    static DONE: AtomicBool = AtomicBool::new(false);
    std::thread::spawn(|| {
        for _ in 0..600 {
            std::thread::sleep(Duration::from_secs(1));
            if DONE.load(Ordering::SeqCst) {
                return;
            }
        }
        eprintln!("a fault scenario hung for 10 minutes");
        std::process::abort();
    });
    // Quiet the injected panics, which are expected; report any other.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let injected = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|m| m.contains("fault injected"));
        if !injected {
            report(info);
        }
    }));
    let mut scenarios = 0;
    for p in [2, 4] {
        for operation in OPERATIONS {
            for rank in [0, p - 1] {
                let calls = run_ranks(p, |comm| calls_of(comm, operation, rank).unwrap())[rank];
                assert!(calls >= 1, "{operation:?} on {p}: no calls");
                let mut points = vec![1, calls / 3, 2 * calls / 3, calls];
                points.retain(|&at| at >= 1);
                points.dedup();
                for at in points {
                    for fault in [Fault::Error, Fault::Panic] {
                        let before = LIVE.load(Ordering::SeqCst);
                        let outcomes = scenario(p, operation, fault, rank, at);
                        let after = LIVE.load(Ordering::SeqCst);
                        let case = format!("{operation:?} on {p} ranks, {fault:?} on rank {rank} at call {at} of {calls}");
                        for (r, outcome) in outcomes.iter().enumerate() {
                            match (outcome, r == rank, fault) {
                                (Outcome::Err(e), true, Fault::Error) => {
                                    assert!(e.contains("fault injected"), "{case}: rank {r}: {e}")
                                }
                                (Outcome::Panicked, true, Fault::Panic) => {}
                                (Outcome::Err(_), false, _) => {}
                                _ => panic!("{case}: rank {r} ended {outcome:?}"),
                            }
                        }
                        // Thread-local pools die with their threads: nothing stays allocated
                        // but bookkeeping of the harness (a few kilobytes at most).
                        assert!(
                            after - before < 64 * 1024,
                            "{case}: {} bytes still allocated",
                            after - before
                        );
                        scenarios += 1;
                    }
                }
            }
        }
    }
    DONE.store(true, Ordering::SeqCst);
    let _ = std::panic::take_hook();
    assert!(scenarios >= 100, "{scenarios} scenarios");
    // The counter sees what stays allocated: a buffer leaked on purpose by one rank.
    let before = LIVE.load(Ordering::SeqCst);
    run_ranks(2, |comm: ThreadComm| {
        if comm.rank_of() == 1 {
            std::mem::forget(vec![0u8; 1 << 20]);
        }
    });
    assert!(LIVE.load(Ordering::SeqCst) - before >= 1 << 20);
}
