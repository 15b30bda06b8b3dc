//! Checks of the `Communicator` contract: every collective with counts 0, 1 and odd, every root,
//! sub-communicators, point-to-point, exact accounting, and bad input.

use redblue_comm::volume::{self, Transfers};
use redblue_comm::{CommError, CommStats, Communicator, CommunicatorExt, Request};
use redblue_core::{c64, Datum, ReduceOp, Scalar};
use std::mem::size_of;

/// The lengths every collective is run with.
pub const LENGTHS: [usize; 3] = [0, 1, 7];

/// Element `k` of rank `r`'s contribution: distinct for every (r, k), exact in f32.
fn val<T: Scalar>(r: usize, k: usize) -> T {
    T::from_f64_parts((r * 100 + k) as f64, k as f64 - r as f64)
}

fn contribution<T: Scalar>(r: usize, n: usize) -> Vec<T> {
    (0..n).map(|k| val(r, k)).collect()
}

/// Runs `f` and asserts that it moved exactly the words `expected` predicts on this rank.
fn counted<C: Communicator, T: Datum, R>(
    comm: &C,
    expected: Transfers,
    what: &str,
    f: impl FnOnce() -> R,
) -> R {
    let before = comm.stats();
    let out = f();
    let moved = comm.stats() - before;
    let want = expected.stats(comm.rank(), size_of::<T>());
    assert_eq!(moved, want, "{what}: counters on rank {}", comm.rank());
    out
}

/// Every collective for one scalar type, with exact results and exact counters.
pub fn check_collectives_for<C: Communicator, T: Scalar>(comm: &C) {
    let (r, p) = (comm.rank(), comm.size());
    for n in LENGTHS {
        let counts: Vec<usize> = (0..p).map(|i| (n + i) % 3 + n / 2).collect();
        let total: usize = counts.iter().sum();
        for root in 0..p {
            // broadcast
            let mut buf = if r == root {
                contribution::<T>(root, n)
            } else {
                vec![T::zero(); n]
            };
            counted::<C, T, _>(comm, volume::broadcast(r, p, n, root), "broadcast", || {
                comm.broadcast(&mut buf, root).unwrap()
            });
            assert_eq!(buf, contribution::<T>(root, n), "broadcast from {root}");

            // reduce
            let mine = contribution::<T>(r, n);
            let mut out = vec![T::zero(); if r == root { n } else { 0 }];
            counted::<C, T, _>(comm, volume::reduce(r, p, n, root), "reduce", || {
                comm.reduce(&mine, &mut out, ReduceOp::Sum, root).unwrap()
            });
            if r == root {
                let want: Vec<T> = (0..n)
                    .map(|k| (0..p).map(|i| val::<T>(i, k)).sum())
                    .collect();
                assert_eq!(out, want, "reduce to {root}");
            }

            // gather_v
            let mine = contribution::<T>(r, counts[r]);
            let mut all = vec![T::zero(); if r == root { total } else { 0 }];
            counted::<C, T, _>(comm, volume::gather_v(r, &counts, root), "gather_v", || {
                comm.gather_v(&mine, &mut all, &counts, root).unwrap()
            });
            let concatenated: Vec<T> = (0..p)
                .flat_map(|i| contribution::<T>(i, counts[i]))
                .collect();
            if r == root {
                assert_eq!(all, concatenated, "gather_v to {root}");
            }

            // scatter_v
            let mut piece = vec![T::zero(); counts[r]];
            let send = if r == root {
                concatenated.clone()
            } else {
                vec![]
            };
            counted::<C, T, _>(
                comm,
                volume::scatter_v(r, &counts, root),
                "scatter_v",
                || comm.scatter_v(&send, &counts, &mut piece, root).unwrap(),
            );
            assert_eq!(
                piece,
                contribution::<T>(r, counts[r]),
                "scatter_v from {root}"
            );

            // fixed-count gather and scatter
            let mine = contribution::<T>(r, n);
            let mut all = vec![T::zero(); if r == root { n * p } else { 0 }];
            comm.gather(&mine, &mut all, root).unwrap();
            let fixed: Vec<T> = (0..p).flat_map(|i| contribution::<T>(i, n)).collect();
            if r == root {
                assert_eq!(all, fixed, "gather to {root}");
            }
            let mut piece = vec![T::zero(); n];
            let send = if r == root { fixed.clone() } else { vec![] };
            comm.scatter(&send, &mut piece, root).unwrap();
            assert_eq!(piece, mine, "scatter from {root}");
        }

        // all_reduce
        let mine = contribution::<T>(r, n);
        let mut out = vec![T::zero(); n];
        counted::<C, T, _>(comm, volume::all_reduce(r, p, n), "all_reduce", || {
            comm.all_reduce(&mine, &mut out, ReduceOp::Sum).unwrap()
        });
        let want: Vec<T> = (0..n)
            .map(|k| (0..p).map(|i| val::<T>(i, k)).sum())
            .collect();
        assert_eq!(out, want, "all_reduce");

        // all_gather_v and all_gather
        let mine = contribution::<T>(r, counts[r]);
        let mut all = vec![T::zero(); total];
        counted::<C, T, _>(
            comm,
            volume::all_gather_v(r, &counts),
            "all_gather_v",
            || comm.all_gather_v(&mine, &mut all, &counts).unwrap(),
        );
        let concatenated: Vec<T> = (0..p)
            .flat_map(|i| contribution::<T>(i, counts[i]))
            .collect();
        assert_eq!(all, concatenated, "all_gather_v");
        let mut all = vec![T::zero(); n * p];
        comm.all_gather(&contribution::<T>(r, n), &mut all).unwrap();
        let fixed: Vec<T> = (0..p).flat_map(|i| contribution::<T>(i, n)).collect();
        assert_eq!(all, fixed, "all_gather");

        // reduce_scatter: every rank contributes val(r, k) for the full vector.
        let mine = contribution::<T>(r, total);
        let mut piece = vec![T::zero(); counts[r]];
        counted::<C, T, _>(
            comm,
            volume::reduce_scatter(r, &counts),
            "reduce_scatter",
            || {
                comm.reduce_scatter(&mine, &mut piece, &counts, ReduceOp::Sum)
                    .unwrap()
            },
        );
        let start: usize = counts[..r].iter().sum();
        let want: Vec<T> = (start..start + counts[r])
            .map(|k| (0..p).map(|i| val::<T>(i, k)).sum())
            .collect();
        assert_eq!(piece, want, "reduce_scatter");

        // all_to_all_v: rank i sends (i + j + n) % 4 elements to rank j.
        let sc: Vec<usize> = (0..p).map(|j| (r + j + n) % 4).collect();
        let rc: Vec<usize> = (0..p).map(|i| (i + r + n) % 4).collect();
        let send: Vec<T> = (0..p)
            .flat_map(|j| (0..sc[j]).map(move |k| val::<T>(r, 10 * j + k)))
            .collect();
        let mut recv = vec![T::zero(); rc.iter().sum()];
        counted::<C, T, _>(comm, volume::all_to_all_v(&sc, &rc), "all_to_all_v", || {
            comm.all_to_all_v(&send, &sc, &mut recv, &rc).unwrap()
        });
        let want: Vec<T> = (0..p)
            .flat_map(|i| (0..rc[i]).map(move |k| val::<T>(i, 10 * r + k)))
            .collect();
        assert_eq!(recv, want, "all_to_all_v");
    }
}

/// Max and Min reductions on real and integer data; complex Max is refused on every rank.
pub fn check_reduce_ops<C: Communicator>(comm: &C) {
    let (r, p) = (comm.rank(), comm.size());
    let x = [r as f64, -(r as f64)];
    let mut out = [0.0; 2];
    comm.all_reduce(&x, &mut out, ReduceOp::Max).unwrap();
    assert_eq!(out, [(p - 1) as f64, 0.0]);
    comm.all_reduce(&x, &mut out, ReduceOp::Min).unwrap();
    assert_eq!(out, [0.0, -((p - 1) as f64)]);
    assert_eq!(
        comm.all_reduce_one(r as u64 + 1, ReduceOp::Sum).unwrap(),
        (p * (p + 1) / 2) as u64
    );
    assert_eq!(
        comm.all_reduce_one(r as i32, ReduceOp::Max).unwrap(),
        p as i32 - 1
    );
    assert!(comm.any(r == p - 1).unwrap());
    assert!(!comm.all(r == 0).unwrap() || p == 1);
    assert_eq!(comm.all_gather_one(r).unwrap(), (0..p).collect::<Vec<_>>());
    assert_eq!(comm.broadcast_one(r * 3, p - 1).unwrap(), (p - 1) * 3);
    assert_eq!(comm.agree_failed_rank(r == p / 2).unwrap(), Some(p / 2));
    assert_eq!(comm.agree_failed_rank(false).unwrap(), None);
    let z = [c64::new(1.0, 2.0)];
    let mut zo = z;
    assert_eq!(
        comm.all_reduce(&z, &mut zo, ReduceOp::Max),
        Err(CommError::UnsupportedReduction {
            op: ReduceOp::Max,
            kind: redblue_core::DatumKind::C64
        })
    );
}

/// Point-to-point: a ring shift with send/recv, sendrecv and isend/irecv, message order, and
/// exact counters.
pub fn check_point_to_point<C: Communicator>(comm: &C) {
    let (r, p) = (comm.rank(), comm.size());
    let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
    for n in LENGTHS {
        let mine = contribution::<f64>(r, n);
        let mut got = vec![0.0; n];
        let expected = volume::point_to_point(Some((next, n)), Some((prev, n)));
        // Ranks alternate send-first and receive-first, so even without buffering this works.
        counted::<C, f64, _>(comm, expected.clone(), "send/recv", || {
            if r % 2 == 0 {
                comm.send(&mine, next, 5).unwrap();
                comm.recv(&mut got, prev, 5).unwrap();
            } else {
                let mut tmp = vec![0.0; n];
                comm.recv(&mut tmp, prev, 5).unwrap();
                comm.send(&mine, next, 5).unwrap();
                got = tmp;
            }
        });
        // With one rank the ring is a self-send: no counters move.
        assert_eq!(got, contribution::<f64>(prev, n), "ring send/recv");

        let mut got = vec![c64::new(0.0, 0.0); n];
        counted::<C, c64, _>(comm, expected.clone(), "sendrecv", || {
            comm.sendrecv(&contribution::<c64>(r, n), next, &mut got, prev, 6)
                .unwrap()
        });
        assert_eq!(got, contribution::<c64>(prev, n), "sendrecv");

        let mut got = vec![0.0f32; n];
        let mine32 = contribution::<f32>(r, n);
        counted::<C, f32, _>(comm, expected, "isend/irecv", || {
            let rq = comm.irecv(&mut got, prev, 7).unwrap();
            let sq = comm.isend(&mine32, next, 7).unwrap();
            sq.wait().unwrap();
            rq.wait().unwrap();
        });
        assert_eq!(got, contribution::<f32>(prev, n), "isend/irecv");
    }
    // Messages with the same tag arrive in order, also when irecvs are posted first.
    if p > 1 {
        if r == 0 {
            for k in 0..4u64 {
                comm.send(&[k], 1, 9).unwrap();
            }
        } else if r == 1 {
            let (mut a, mut b) = ([9u64], [9u64]);
            let qa = comm.irecv(&mut a, 0, 9).unwrap();
            let qb = comm.irecv(&mut b, 0, 9).unwrap();
            let mut c = [9u64];
            qb.wait().unwrap();
            comm.recv(&mut c, 0, 9).unwrap();
            qa.wait().unwrap();
            let mut d = [9u64];
            comm.recv(&mut d, 0, 9).unwrap();
            assert_eq!(
                (a[0], b[0], c[0], d[0]),
                (0, 1, 2, 3),
                "non-overtaking order"
            );
        }
    }
    comm.barrier().unwrap();
}

/// Sub-communicators: split by parity and by a single colour; collectives on them; counters of
/// sub-communicator traffic land in the world rank's counters.
pub fn check_split<C: Communicator>(comm: &C) {
    let (r, p) = (comm.rank(), comm.size());
    let parity = comm.split((r % 2) as u32, p - r).unwrap();
    let members: Vec<usize> = (0..p).filter(|i| i % 2 == r % 2).rev().collect();
    assert_eq!(parity.size(), members.len());
    assert_eq!(
        members[parity.rank()],
        r,
        "split orders by key (descending ranks here)"
    );
    let world_ranks = parity.all_gather_one(r).unwrap();
    assert_eq!(world_ranks, members);

    let before = comm.stats();
    let sum = parity.all_reduce_one(r as f64, ReduceOp::Sum).unwrap();
    assert_eq!(sum, members.iter().sum::<usize>() as f64);
    let moved = comm.stats() - before;
    let want = volume::all_reduce(parity.rank(), parity.size(), 1).stats(parity.rank(), 8);
    assert_eq!(
        moved, want,
        "sub-communicator traffic counts on the world rank"
    );

    // A split of a split, and a second split with the same colours: independent communicators.
    let again = comm.split((r % 2) as u32, r).unwrap();
    let sub = again.split(0, 0).unwrap();
    assert_eq!(sub.size(), again.size());
    let x = sub.broadcast_one(r, 0).unwrap();
    assert_eq!(x, r % 2, "rank 0 of each parity group is world rank r % 2");
    let y = parity.broadcast_one(r, 0).unwrap();
    assert_eq!(y, *members.first().unwrap());
    comm.barrier().unwrap();
}

/// Bad input: every rank gets the same clear error, and nobody hangs.
pub fn check_bad_input<C: Communicator>(comm: &C) {
    let p = comm.size();
    let mut buf = [0.0; 3];
    let e = comm.broadcast(&mut buf, p).unwrap_err();
    assert_eq!(
        e,
        CommError::RankOutOfRange {
            what: "root",
            rank: p,
            size: p
        }
    );
    assert!(matches!(
        comm.send(&buf, p + 1, 0),
        Err(CommError::RankOutOfRange { .. })
    ));
    let mut out = [0.0; 2];
    assert!(matches!(
        comm.all_reduce(&buf, &mut out, ReduceOp::Sum),
        Err(CommError::LengthMismatch { .. })
    ));
    let counts = vec![1; p + 1];
    let mut all = vec![0.0; p + 1];
    assert!(matches!(
        comm.all_gather_v(&[1.0], &mut all, &counts),
        Err(CommError::LengthMismatch { .. })
    ));
    // The communicator still works after refused calls.
    assert_eq!(comm.all_reduce_one(1u64, ReduceOp::Sum).unwrap(), p as u64);
}

/// A fixed program mixing every kind of call on the world and on sub-communicators; returns the
/// counters it produced, so backends can be compared.
pub fn accounting_program<C: Communicator>(comm: &C) -> CommStats {
    comm.reset_stats();
    let (r, p) = (comm.rank(), comm.size());
    let mut buf: Vec<f64> = contribution(r, 11);
    comm.broadcast(&mut buf, p / 2).unwrap();
    let mut out = vec![c64::new(0.0, 0.0); 13];
    comm.all_reduce(&contribution::<c64>(r, 13), &mut out, ReduceOp::Sum)
        .unwrap();
    let counts: Vec<usize> = (0..p).map(|i| i + 1).collect();
    let mut all = vec![0.0f32; counts.iter().sum()];
    comm.all_gather_v(&contribution::<f32>(r, r + 1), &mut all, &counts)
        .unwrap();
    let sub = comm.split((r % 2) as u32, r).unwrap();
    let mut piece = vec![0.0; sub.rank() + 2];
    let sub_counts: Vec<usize> = (0..sub.size()).map(|i| i + 2).collect();
    sub.reduce_scatter(
        &contribution::<f64>(r, sub_counts.iter().sum()),
        &mut piece,
        &sub_counts,
        ReduceOp::Sum,
    )
    .unwrap();
    let sc: Vec<usize> = (0..p).map(|j| (r * j) % 5).collect();
    let rc: Vec<usize> = (0..p).map(|i| (i * r) % 5).collect();
    let mut recv = vec![0u64; rc.iter().sum()];
    comm.all_to_all_v(&vec![7u64; sc.iter().sum()], &sc, &mut recv, &rc)
        .unwrap();
    if p > 1 {
        let mut got = [0.0; 5];
        comm.sendrecv(&[1.0; 5], (r + 1) % p, &mut got, (r + p - 1) % p, 3)
            .unwrap();
    }
    comm.barrier().unwrap();
    comm.stats()
}

/// All communicator checks, in order.
pub fn check_all<C: Communicator>(comm: &C) {
    check_collectives_for::<C, f64>(comm);
    check_collectives_for::<C, f32>(comm);
    check_collectives_for::<C, c64>(comm);
    check_collectives_for::<C, redblue_core::c32>(comm);
    check_reduce_ops(comm);
    check_point_to_point(comm);
    check_split(comm);
    check_bad_input(comm);
}
