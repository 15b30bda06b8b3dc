//! `mpi_smoke`: exercises every [`Communicator`] method of [`MpiComm`] and checks results,
//! errors and counters; exits non-zero on any failure.
//!
//! ```text
//! cargo build -p redblue-comm --features mpi --examples
//! mpirun -n 4 target/debug/examples/mpi_smoke     # also -n 1, 2, 3
//! ```
//!
//! (As root, Open MPI also needs `--allow-run-as-root`, and `--oversubscribe` for more ranks than
//! cores.) Every call's counter change is compared with the [`volume`] prediction (or, for
//! point-to-point, the one-message-per-call rule), and at the end the rank's counters with the
//! sum of all predictions.

use redblue_comm::volume::{self, Transfers};
use redblue_comm::{
    CommError, CommStats, Communicator, CommunicatorExt, Datum, DatumKind, MpiComm, MpiUniverse,
    ReduceOp, Request,
};
use redblue_core::c64;
use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Element types with exact, distinct test values.
trait Val: Datum + std::ops::Add<Output = Self> {
    fn val(r: usize, k: usize) -> Self;
    fn zero() -> Self;
    /// Whether `Max`/`Min` are defined.
    const ORDERED: bool;
}

impl Val for f64 {
    fn val(r: usize, k: usize) -> Self {
        (r * 100 + k) as f64
    }
    fn zero() -> Self {
        0.0
    }
    const ORDERED: bool = true;
}

impl Val for u64 {
    fn val(r: usize, k: usize) -> Self {
        (r * 100 + k) as u64
    }
    fn zero() -> Self {
        0
    }
    const ORDERED: bool = true;
}

impl Val for c64 {
    fn val(r: usize, k: usize) -> Self {
        c64::new((r * 100 + k) as f64, k as f64 - r as f64)
    }
    fn zero() -> Self {
        c64::new(0.0, 0.0)
    }
    const ORDERED: bool = false;
}

fn contribution<T: Val>(r: usize, n: usize) -> Vec<T> {
    (0..n).map(|k| T::val(r, k)).collect()
}

/// Element-wise `op` over ranks `0..p` of `val(i, offset + k)`.
fn reduced<T: Val>(p: usize, offset: usize, n: usize, op: ReduceOp) -> Vec<T> {
    (0..n)
        .map(|k| {
            let mut acc = T::val(0, offset + k);
            for i in 1..p {
                acc = T::combine(op, acc, T::val(i, offset + k)).expect("op defined");
            }
            acc
        })
        .collect()
}

/// The running prediction of this rank's counters.
struct Expect {
    total: CommStats,
}

impl Expect {
    /// Runs `f` on `comm` and checks that the world counters moved by exactly `want`.
    fn counted<R>(
        &mut self,
        comm: &MpiComm,
        want: CommStats,
        what: &str,
        f: impl FnOnce() -> R,
    ) -> R {
        let before = comm.stats();
        let out = f();
        let moved = comm.stats() - before;
        assert_eq!(moved, want, "{what}: counters on rank {}", comm.rank());
        self.total = self.total + want;
        out
    }

    /// As [`Expect::counted`], with the [`volume`] prediction of a collective.
    fn collective<T, R>(
        &mut self,
        comm: &MpiComm,
        t: Transfers,
        what: &str,
        f: impl FnOnce() -> R,
    ) -> R {
        let want = t.stats(comm.rank(), size_of::<T>());
        self.counted(comm, want, what, f)
    }
}

/// Point-to-point counters: one message per call, even when empty; nothing to or from self.
fn p2p<T>(me: usize, dest: Option<(usize, usize)>, src: Option<(usize, usize)>) -> CommStats {
    let mut s = CommStats::default();
    if let Some((d, n)) = dest {
        if d != me {
            s = s + CommStats::sent(n, size_of::<T>());
        }
    }
    if let Some((sr, n)) = src {
        if sr != me {
            s = s + CommStats::received(n, size_of::<T>());
        }
    }
    s
}

const LENGTHS: [usize; 5] = [0, 1, 3, 7, 10];

/// Every collective for one element type, with exact results and counters.
fn collectives<T: Val>(comm: &MpiComm, ex: &mut Expect, label: &str) {
    let (r, p) = (comm.rank(), comm.size());
    let ops: &[ReduceOp] = if T::ORDERED {
        &[ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min]
    } else {
        &[ReduceOp::Sum]
    };
    for n in LENGTHS {
        let what = |call: &str| format!("{label} {call} n={n}");
        let counts: Vec<usize> = (0..p).map(|i| (n + i) % 3 + n / 2).collect();
        let total: usize = counts.iter().sum();
        for root in 0..p {
            // broadcast
            let mut buf = if r == root {
                contribution::<T>(root, n)
            } else {
                vec![T::zero(); n]
            };
            ex.collective::<T, _>(
                comm,
                volume::broadcast(r, p, n, root),
                &what("broadcast"),
                || comm.broadcast(&mut buf, root).unwrap(),
            );
            assert_eq!(buf, contribution::<T>(root, n), "{}", what("broadcast"));

            // reduce, every operator
            for &op in ops {
                let mine = contribution::<T>(r, n);
                let mut out = vec![T::zero(); if r == root { n } else { 0 }];
                ex.collective::<T, _>(comm, volume::reduce(r, p, n, root), &what("reduce"), || {
                    comm.reduce(&mine, &mut out, op, root).unwrap()
                });
                if r == root {
                    assert_eq!(out, reduced::<T>(p, 0, n, op), "{} {op:?}", what("reduce"));
                }
            }

            // gather_v
            let mine = contribution::<T>(r, counts[r]);
            let mut all = vec![T::zero(); if r == root { total } else { 0 }];
            ex.collective::<T, _>(
                comm,
                volume::gather_v(r, &counts, root),
                &what("gather_v"),
                || comm.gather_v(&mine, &mut all, &counts, root).unwrap(),
            );
            let concatenated: Vec<T> = (0..p)
                .flat_map(|i| contribution::<T>(i, counts[i]))
                .collect();
            if r == root {
                assert_eq!(all, concatenated, "{}", what("gather_v"));
            }

            // scatter_v
            let mut piece = vec![T::zero(); counts[r]];
            let send = if r == root {
                concatenated.clone()
            } else {
                vec![]
            };
            ex.collective::<T, _>(
                comm,
                volume::scatter_v(r, &counts, root),
                &what("scatter_v"),
                || comm.scatter_v(&send, &counts, &mut piece, root).unwrap(),
            );
            assert_eq!(
                piece,
                contribution::<T>(r, counts[r]),
                "{}",
                what("scatter_v")
            );

            // gather and scatter with equal counts
            let fixed_counts = vec![n; p];
            let mine = contribution::<T>(r, n);
            let mut all = vec![T::zero(); if r == root { n * p } else { 0 }];
            ex.collective::<T, _>(
                comm,
                volume::gather_v(r, &fixed_counts, root),
                &what("gather"),
                || comm.gather(&mine, &mut all, root).unwrap(),
            );
            let fixed: Vec<T> = (0..p).flat_map(|i| contribution::<T>(i, n)).collect();
            if r == root {
                assert_eq!(all, fixed, "{}", what("gather"));
            }
            let mut piece = vec![T::zero(); n];
            let send = if r == root { fixed.clone() } else { vec![] };
            ex.collective::<T, _>(
                comm,
                volume::scatter_v(r, &fixed_counts, root),
                &what("scatter"),
                || comm.scatter(&send, &mut piece, root).unwrap(),
            );
            assert_eq!(piece, mine, "{}", what("scatter"));
        }

        // all_reduce, every operator
        for &op in ops {
            let mine = contribution::<T>(r, n);
            let mut out = vec![T::zero(); n];
            ex.collective::<T, _>(
                comm,
                volume::all_reduce(r, p, n),
                &what("all_reduce"),
                || comm.all_reduce(&mine, &mut out, op).unwrap(),
            );
            assert_eq!(
                out,
                reduced::<T>(p, 0, n, op),
                "{} {op:?}",
                what("all_reduce")
            );
        }

        // all_gather_v and all_gather
        let mine = contribution::<T>(r, counts[r]);
        let mut all = vec![T::zero(); total];
        ex.collective::<T, _>(
            comm,
            volume::all_gather_v(r, &counts),
            &what("all_gather_v"),
            || comm.all_gather_v(&mine, &mut all, &counts).unwrap(),
        );
        let concatenated: Vec<T> = (0..p)
            .flat_map(|i| contribution::<T>(i, counts[i]))
            .collect();
        assert_eq!(all, concatenated, "{}", what("all_gather_v"));
        let mut all = vec![T::zero(); n * p];
        ex.collective::<T, _>(
            comm,
            volume::all_gather_v(r, &vec![n; p]),
            &what("all_gather"),
            || comm.all_gather(&contribution::<T>(r, n), &mut all).unwrap(),
        );
        let fixed: Vec<T> = (0..p).flat_map(|i| contribution::<T>(i, n)).collect();
        assert_eq!(all, fixed, "{}", what("all_gather"));

        // reduce_scatter with unequal and with equal counts, every operator
        for counts in [counts.clone(), vec![n; p]] {
            let total: usize = counts.iter().sum();
            let start: usize = counts[..r].iter().sum();
            for &op in ops {
                let mine = contribution::<T>(r, total);
                let mut piece = vec![T::zero(); counts[r]];
                ex.collective::<T, _>(
                    comm,
                    volume::reduce_scatter(r, &counts),
                    &what("reduce_scatter"),
                    || comm.reduce_scatter(&mine, &mut piece, &counts, op).unwrap(),
                );
                assert_eq!(
                    piece,
                    reduced::<T>(p, start, counts[r], op),
                    "{} {counts:?} {op:?}",
                    what("reduce_scatter")
                );
            }
        }

        // all_to_all_v: rank i sends (i + j + n) % 4 elements to rank j.
        let sc: Vec<usize> = (0..p).map(|j| (r + j + n) % 4).collect();
        let rc: Vec<usize> = (0..p).map(|i| (i + r + n) % 4).collect();
        let send: Vec<T> = (0..p)
            .flat_map(|j| (0..sc[j]).map(move |k| T::val(r, 10 * j + k)))
            .collect();
        let mut recv = vec![T::zero(); rc.iter().sum()];
        ex.collective::<T, _>(
            comm,
            volume::all_to_all_v(&sc, &rc),
            &what("all_to_all_v"),
            || comm.all_to_all_v(&send, &sc, &mut recv, &rc).unwrap(),
        );
        let want: Vec<T> = (0..p)
            .flat_map(|i| (0..rc[i]).map(move |k| T::val(i, 10 * r + k)))
            .collect();
        assert_eq!(recv, want, "{}", what("all_to_all_v"));
    }
}

/// Point-to-point for one element type: ring shifts with send/recv, sendrecv and isend/irecv in
/// both directions, messages of every length.
fn point_to_point<T: Val>(comm: &MpiComm, ex: &mut Expect, label: &str) {
    let (r, p) = (comm.rank(), comm.size());
    let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
    for n in LENGTHS {
        let mine = contribution::<T>(r, n);
        // Blocking send/recv, alternating send-first and receive-first (and a self-send on 1 rank).
        let mut got = vec![T::zero(); n];
        ex.counted(
            comm,
            p2p::<T>(r, Some((next, n)), Some((prev, n))),
            &format!("{label} send/recv n={n}"),
            || {
                if r % 2 == 0 {
                    comm.send(&mine, next, 5).unwrap();
                    comm.recv(&mut got, prev, 5).unwrap();
                } else {
                    comm.recv(&mut got, prev, 5).unwrap();
                    comm.send(&mine, next, 5).unwrap();
                }
            },
        );
        assert_eq!(got, contribution::<T>(prev, n), "{label} send/recv n={n}");

        let mut got = vec![T::zero(); n];
        ex.counted(
            comm,
            p2p::<T>(r, Some((next, n)), Some((prev, n))),
            &format!("{label} sendrecv n={n}"),
            || comm.sendrecv(&mine, next, &mut got, prev, 6).unwrap(),
        );
        assert_eq!(got, contribution::<T>(prev, n), "{label} sendrecv n={n}");

        // isend/irecv, both directions at once.
        let (mut from_prev, mut from_next) = (vec![T::zero(); n], vec![T::zero(); n]);
        let want = p2p::<T>(r, Some((next, n)), Some((prev, n)))
            + p2p::<T>(r, Some((prev, n)), Some((next, n)));
        ex.counted(comm, want, &format!("{label} isend/irecv n={n}"), || {
            let a = comm.irecv(&mut from_prev, prev, 7).unwrap();
            let b = comm.irecv(&mut from_next, next, 8).unwrap();
            let c = comm.isend(&mine, next, 7).unwrap();
            let d = comm.isend(&mine, prev, 8).unwrap();
            redblue_comm::wait_all([c, d]).unwrap();
            b.wait().unwrap();
            a.wait().unwrap();
        });
        assert_eq!(
            from_prev,
            contribution::<T>(prev, n),
            "{label} irecv from prev n={n}"
        );
        assert_eq!(
            from_next,
            contribution::<T>(next, n),
            "{label} irecv from next n={n}"
        );
    }
}

/// Messages far beyond the eager limit: irecv then blocking send on both ranks of a pair (a rank
/// without partner sends to itself), and a blocking self-send then receive.
fn large_messages(comm: &MpiComm, ex: &mut Expect) {
    let (r, p) = (comm.rank(), comm.size());
    let n = 1 << 21; // 16 MiB of f64
    let partner = if (r ^ 1) < p { r ^ 1 } else { r };
    let mine: Vec<f64> = (0..n).map(|k| (r * n + k) as f64).collect();
    let mut got = vec![0.0; n];
    ex.counted(
        comm,
        p2p::<f64>(r, Some((partner, n)), Some((partner, n))),
        "large irecv + send",
        || {
            let q = comm.irecv(&mut got, partner, 11).unwrap();
            comm.send(&mine, partner, 11).unwrap();
            q.wait().unwrap();
        },
    );
    assert!(
        got.iter()
            .enumerate()
            .all(|(k, &x)| x == (partner * n + k) as f64),
        "large exchange"
    );

    let mut back = vec![0.0; n];
    ex.counted(comm, CommStats::default(), "large self send/recv", || {
        comm.send(&mine, r, 12).unwrap();
        comm.recv(&mut back, r, 12).unwrap();
    });
    assert_eq!(back, mine, "large self-send");
}

/// Non-overtaking order, a request dropped without `wait`, and length/type errors of receives,
/// after which the stream of the same source and tag is still in order. Ranks 0 and 1 only.
fn ordering_and_receive_errors(comm: &MpiComm, ex: &mut Expect) {
    let (r, p) = (comm.rank(), comm.size());
    // Non-blocking receives of the wrong length keep the stream in order only for unchunked
    // messages (see the module documentation of the MPI backend).
    let chunked = comm.max_message_elements() < i32::MAX as usize;
    if p < 2 || r > 1 {
        comm.barrier().unwrap();
        return;
    }
    let peer = 1 - r;
    let blocking_cases = [(7usize, 10usize), (10, 7), (3, 0), (0, 3), (6, 3)];
    let irecv_cases: &[(usize, usize)] = if chunked {
        &[]
    } else {
        &[(4, 5), (6, 5), (0, 2)]
    };
    let ten: Vec<f64> = (0..10).map(f64::from).collect();
    let follow_up = [42.0, 43.0];
    if r == 0 {
        let mut want = CommStats::default();
        for _ in 0..4 {
            want = want + CommStats::sent(1, 8);
        }
        ex.counted(comm, want, "ordered sends", || {
            for k in 0..4u64 {
                comm.send(&[k], peer, 9).unwrap();
            }
        });
        ex.counted(
            comm,
            CommStats::sent(5, 8),
            "send for a dropped irecv",
            || comm.send(&[1.5; 5], peer, 13).unwrap(),
        );
        let mut want = CommStats::default();
        for &(_, sent) in blocking_cases.iter().chain(irecv_cases) {
            want = want + CommStats::sent(sent, 8) + CommStats::sent(2, 8);
        }
        want = want + CommStats::sent(2, 1) + CommStats::sent(1, 8);
        ex.counted(comm, want, "sends of the wrong length or type", || {
            for &(_, sent) in blocking_cases.iter().chain(irecv_cases) {
                comm.send(&ten[..sent], peer, 14).unwrap();
                comm.send(&follow_up, peer, 14).unwrap();
            }
            // A message of another type: 2 bytes where an f64 is expected.
            comm.send(&[1u8, 2], peer, 15).unwrap();
            comm.send(&[7.0f64], peer, 15).unwrap();
        });
    } else {
        let (mut a, mut b, mut c, mut d) = ([9u64], [9u64], [9u64], [9u64]);
        let mut want = CommStats::default();
        for _ in 0..4 {
            want = want + CommStats::received(1, 8);
        }
        ex.counted(comm, want, "ordered receives", || {
            let qa = comm.irecv(&mut a, peer, 9).unwrap();
            let qb = comm.irecv(&mut b, peer, 9).unwrap();
            qb.wait().unwrap();
            comm.recv(&mut c, peer, 9).unwrap();
            qa.wait().unwrap();
            comm.recv(&mut d, peer, 9).unwrap();
        });
        assert_eq!(
            (a[0], b[0], c[0], d[0]),
            (0, 1, 2, 3),
            "non-overtaking order"
        );

        let mut buf = [0.0f64; 5];
        ex.counted(comm, CommStats::default(), "dropped irecv", || {
            let q = comm.irecv(&mut buf, peer, 13).unwrap();
            drop(q);
        });
        assert_eq!(buf, [1.5; 5], "a dropped irecv completes");

        let mut follow = [0.0; 2];
        // Blocking receives: exact `found`, chunked or not.
        for (expected, sent) in blocking_cases {
            let mut buf = vec![0.0f64; expected];
            let e = ex.counted(
                comm,
                CommStats::received(sent, 8),
                "recv of the wrong length",
                || comm.recv(&mut buf, peer, 14).unwrap_err(),
            );
            assert_eq!(
                e,
                CommError::LengthMismatch {
                    what: "received message",
                    expected,
                    found: sent
                },
                "recv of {sent} into {expected}"
            );
            ex.counted(
                comm,
                CommStats::received(2, 8),
                "recv after a length error",
                || comm.recv(&mut follow, peer, 14).unwrap(),
            );
            assert_eq!(follow, follow_up, "stream in order after a length error");
        }
        // Non-blocking receives: too long (MPI truncates: `found` is a lower bound) or too short.
        for &(expected, sent) in irecv_cases {
            let mut buf = vec![0.0f64; expected];
            let before = comm.stats();
            let e = comm.irecv(&mut buf, peer, 14).unwrap().wait().unwrap_err();
            match e {
                CommError::LengthMismatch {
                    what: "received message",
                    expected: x,
                    found,
                } => {
                    assert_eq!(x, expected);
                    if sent < expected {
                        assert_eq!(found, sent, "irecv of {sent} into {expected}");
                    } else {
                        assert!(
                            found > expected,
                            "irecv of {sent} into {expected}: found {found}"
                        );
                    }
                }
                other => panic!("irecv of {sent} into {expected}: {other:?}"),
            }
            let moved = comm.stats() - before;
            assert_eq!(
                moved.messages_received, 1,
                "a failed irecv counts one message"
            );
            ex.total = ex.total + moved;
            ex.counted(
                comm,
                CommStats::received(2, 8),
                "recv after an irecv length error",
                || comm.recv(&mut follow, peer, 14).unwrap(),
            );
            assert_eq!(
                follow, follow_up,
                "stream in order after an irecv length error"
            );
        }
        let mut x = [0.0f64; 1];
        ex.counted(comm, CommStats::default(), "recv of the wrong type", || {
            assert_eq!(
                comm.recv(&mut x, peer, 15),
                Err(CommError::TypeMismatch {
                    expected: DatumKind::F64
                })
            );
        });
        ex.counted(
            comm,
            CommStats::received(1, 8),
            "recv after a type error",
            || comm.recv(&mut x, peer, 15).unwrap(),
        );
        assert_eq!(x, [7.0]);
    }
    comm.barrier().unwrap();
}

/// Sub-communicators: two colours ordered by a descending key, huge colours and keys, a split of
/// a split; traffic on them lands in the world rank's counters.
fn split(comm: &MpiComm, ex: &mut Expect) {
    let (r, p) = (comm.rank(), comm.size());
    let parity = comm.split((r % 2) as u32, p - r).unwrap();
    let members: Vec<usize> = (0..p).filter(|i| i % 2 == r % 2).rev().collect();
    assert_eq!(parity.size(), members.len());
    assert_eq!(members[parity.rank()], r, "split orders by key");
    let (sr, sp) = (parity.rank(), parity.size());
    let world_ranks = ex.collective::<usize, _>(
        &parity,
        volume::all_gather_v(sr, &vec![1; sp]),
        "sub all_gather",
        || parity.all_gather_one(r).unwrap(),
    );
    assert_eq!(world_ranks, members);
    let sum = ex.collective::<f64, _>(
        &parity,
        volume::all_reduce(sr, sp, 1),
        "sub all_reduce",
        || parity.all_reduce_one(r as f64, ReduceOp::Sum).unwrap(),
    );
    assert_eq!(sum, members.iter().sum::<usize>() as f64);
    collectives::<f64>(&parity, ex, "parity f64");
    point_to_point::<c64>(&parity, ex, "parity c64");

    // Colours and keys beyond MPI's int range.
    let color = if r % 2 == 0 { u32::MAX } else { u32::MAX - 1 };
    let huge = comm.split(color, usize::MAX - r).unwrap();
    assert_eq!(huge.size(), members.len());
    assert_eq!(members[huge.rank()], r, "huge keys order like small ones");

    let again = comm.split(0, r).unwrap();
    assert_eq!((again.rank(), again.size()), (r, p));
    let sub = again.split(0, 0).unwrap();
    assert_eq!(sub.size(), p);
    let x = ex.collective::<usize, _>(
        &sub,
        volume::broadcast(sub.rank(), p, 1, 0),
        "split of split broadcast",
        || sub.broadcast_one(r, 0).unwrap(),
    );
    assert_eq!(x, 0);
    ex.counted(&sub, CommStats::default(), "barrier", || {
        sub.barrier().unwrap()
    });
}

/// Bad arguments: the same error on every rank (or, for root-only arguments, on the root), and
/// the communicator still works afterwards.
fn bad_input(comm: &MpiComm, ex: &mut Expect) {
    let (r, p) = (comm.rank(), comm.size());
    let mut buf = [0.0; 3];
    let none = CommStats::default();
    ex.counted(comm, none, "bad input", || {
        assert_eq!(
            comm.broadcast(&mut buf, p),
            Err(CommError::RankOutOfRange {
                what: "root",
                rank: p,
                size: p
            })
        );
        let mut out = [0.0; 3];
        assert_eq!(
            comm.reduce(&buf, &mut out, ReduceOp::Sum, p + 2),
            Err(CommError::RankOutOfRange {
                what: "root",
                rank: p + 2,
                size: p
            })
        );
        assert!(matches!(
            comm.send(&buf, p + 1, 0),
            Err(CommError::RankOutOfRange {
                what: "destination",
                ..
            })
        ));
        assert!(matches!(
            comm.recv(&mut buf, p, 0),
            Err(CommError::RankOutOfRange { what: "source", .. })
        ));
        assert!(matches!(
            comm.irecv(&mut buf, p, 0),
            Err(CommError::RankOutOfRange { .. })
        ));
        assert!(matches!(
            comm.isend(&buf, p, 0),
            Err(CommError::RankOutOfRange { .. })
        ));
        assert!(
            matches!(comm.send(&buf, r, u32::MAX), Err(CommError::Mpi(_))),
            "tag above MPI_TAG_UB"
        );
        let mut two = [0.0; 2];
        assert_eq!(
            comm.all_reduce(&buf, &mut two, ReduceOp::Sum),
            Err(CommError::LengthMismatch {
                what: "all_reduce receive buffer",
                expected: 3,
                found: 2
            })
        );
        let z = [c64::new(1.0, 2.0)];
        let mut zo = z;
        for op in [ReduceOp::Max, ReduceOp::Min] {
            let unsupported = Err(CommError::UnsupportedReduction {
                op,
                kind: DatumKind::C64,
            });
            assert_eq!(comm.all_reduce(&z, &mut zo, op), unsupported);
            assert_eq!(comm.reduce(&z, &mut zo, op, 0), unsupported);
            let zs = vec![z[0]; p];
            assert_eq!(
                comm.reduce_scatter(&zs, &mut zo, &vec![1; p], op),
                unsupported
            );
        }
        let counts = vec![1; p + 1];
        let mut all = vec![0.0; p + 1];
        assert!(matches!(
            comm.all_gather_v(&[1.0], &mut all, &counts),
            Err(CommError::LengthMismatch {
                what: "all_gather_v counts",
                ..
            })
        ));
        let mut recv = vec![0.0; 2 * p];
        assert!(matches!(
            comm.all_to_all_v(&[1.0; 3], &vec![2; p], &mut recv, &vec![2; p]),
            Err(CommError::LengthMismatch {
                what: "all_to_all_v send buffer",
                ..
            })
        ));
    });

    // Root-only checks: the root reports, the other ranks complete.
    let root = p - 1;
    let mine = [r as f64; 4];
    let mut short = [0.0; 3];
    let want = if r == root {
        none
    } else {
        CommStats::sent(4, 8)
    };
    let res = ex.counted(comm, want, "reduce with a short root buffer", || {
        comm.reduce(&mine, &mut short, ReduceOp::Sum, root)
    });
    if r == root {
        assert_eq!(
            res,
            Err(CommError::LengthMismatch {
                what: "reduce receive buffer",
                expected: 4,
                found: 3
            })
        );
    } else {
        res.unwrap();
    }
    let bad_counts = vec![2; p + 1];
    let mut all = vec![0.0; 2 * p];
    let res = ex.counted(comm, want, "gather_v with bad root counts", || {
        comm.gather_v(&mine, &mut all, &bad_counts, root)
    });
    if r == root {
        assert!(
            matches!(
                res,
                Err(CommError::LengthMismatch {
                    what: "gather_v counts",
                    ..
                })
            ),
            "{res:?}"
        );
    } else {
        res.unwrap();
    }
    let mut piece = [0.0; 2];
    let want = if r == root {
        none
    } else {
        CommStats::received(0, 8)
    };
    let res = ex.counted(comm, want, "scatter_v with bad root counts", || {
        comm.scatter_v(&[1.0; 5], &vec![2; p], &mut piece, root)
    });
    assert!(
        matches!(res, Err(CommError::LengthMismatch { .. })),
        "scatter_v error on every rank: {res:?}"
    );

    // The communicator still works.
    let s = ex.collective::<u64, _>(comm, volume::all_reduce(r, p, 1), "after errors", || {
        comm.all_reduce_one(1u64, ReduceOp::Sum).unwrap()
    });
    assert_eq!(s, p as u64);
}

fn run(universe: &MpiUniverse) {
    let world = universe.world();
    let (r, p) = (world.rank(), world.size());
    assert_eq!(world.world_rank(), r);
    assert!(
        matches!(MpiUniverse::init(), Err(CommError::Mpi(_))),
        "second init is an error"
    );
    world.reset_stats();
    let mut ex = Expect {
        total: CommStats::default(),
    };

    ex.counted(&world, CommStats::default(), "barrier", || {
        world.barrier().unwrap()
    });
    collectives::<f64>(&world, &mut ex, "f64");
    collectives::<c64>(&world, &mut ex, "c64");
    collectives::<u64>(&world, &mut ex, "u64");
    point_to_point::<f64>(&world, &mut ex, "f64");
    point_to_point::<c64>(&world, &mut ex, "c64");
    point_to_point::<u64>(&world, &mut ex, "u64");
    large_messages(&world, &mut ex);
    ordering_and_receive_errors(&world, &mut ex);

    // The same with messages split into chunks of at most 3 elements.
    let mut small = universe.world();
    small.set_max_message_elements(3);
    assert_eq!(small.max_message_elements(), 3);
    collectives::<f64>(&small, &mut ex, "chunked f64");
    collectives::<c64>(&small, &mut ex, "chunked c64");
    collectives::<u64>(&small, &mut ex, "chunked u64");
    point_to_point::<f64>(&small, &mut ex, "chunked f64");
    point_to_point::<c64>(&small, &mut ex, "chunked c64");
    point_to_point::<u64>(&small, &mut ex, "chunked u64");
    ordering_and_receive_errors(&small, &mut ex);

    split(&world, &mut ex);
    split(&small, &mut ex);
    bad_input(&world, &mut ex);
    bad_input(&small, &mut ex);

    world.barrier().unwrap();
    assert_eq!(world.stats(), ex.total, "total counters on rank {r}");
    assert_eq!(
        small.stats(),
        ex.total,
        "handles of one world rank share counters"
    );
    let total = world
        .all_reduce_one(ex.total.words_sent, ReduceOp::Sum)
        .unwrap();
    world.reset_stats();
    assert_eq!(world.stats(), CommStats::default());
    if r == 0 {
        println!("mpi_smoke: OK on {p} ranks ({total} words sent in total)");
    }
}

fn main() {
    let universe = match MpiUniverse::init() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("mpi_smoke: {e}");
            std::process::exit(2);
        }
    };
    if catch_unwind(AssertUnwindSafe(|| run(&universe))).is_err() {
        eprintln!("mpi_smoke: FAILED");
        universe.world().abort(1);
    }
}
