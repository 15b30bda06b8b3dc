//! Non-finite numbers. In a multiplication NaN and infinities in `alpha`, `beta`, `A`, `B` or
//! `C` propagate as IEEE arithmetic does, element by element: an entry of `C` that a NaN enters
//! is NaN; one that an infinity enters is infinite or NaN — which of the two depends on the
//! order of the additions (`∞ − ∞`), which no BLAS fixes (the reference `dgemm` multiplies each
//! term by `alpha`, so `alpha = ∞` gives NaN where terms differ in sign); finite ones stay
//! finite and right. BLAS's two conventions hold: `alpha = 0` reads neither `A` nor `B`, and
//! `beta = 0` does not read `C`, so what those hold does not matter then. Every schedule (COSMA, SUMMA, 2.5D, Cannon) on 1 to 5 ranks, real and
//! complex. The factorisations refuse a NaN or an infinity in what they read, and every rank
//! returns that same error, whichever rank holds it.

use redblue::gemm::{multiply, Algorithm, GemmShape, PlanOptions};
use redblue::kernels::Par;
use redblue_comm::{run_ranks, ThreadComm};
use redblue_core::{c64, random, Op};
use redblue_dist::{BlockCyclic, OwnedDistMatrix};
use redblue_tests::faults::{run_with_value, Operation};

/// A special value placed in one operand.
#[derive(Clone, Copy, Debug)]
enum Special {
    None,
    /// At `(i, j)` of the operand.
    At(usize, usize, f64),
}

fn place(special: Special, i: usize, j: usize, x: f64) -> f64 {
    match special {
        Special::At(si, sj, v) if (si, sj) == (i, j) => v,
        _ => x,
    }
}

/// A finite entry of operand `seed`, or the special value.
fn operand(seed: u64, special: Special) -> impl Fn(usize, usize) -> f64 + Sync {
    move |i, j| place(special, i, j, random::uniform(i, j, seed))
}

/// Whether `got` is what IEEE arithmetic gives for `want`, computed in one order: NaN where
/// `nan_in` (a NaN entered), non-finite where `want` is, else finite and close.
fn same(got: f64, want: f64, k: usize, nan_in: bool) -> bool {
    if want.is_nan() && nan_in {
        got.is_nan()
    } else if !want.is_finite() {
        !got.is_finite()
    } else {
        (got - want).abs() <= 1e-12 * (k + 1) as f64
    }
}

/// Whether the case puts a NaN in (rather than only infinities).
fn has_nan((alpha, beta): (f64, f64), specials: [Special; 3]) -> bool {
    alpha.is_nan()
        || beta.is_nan()
        || specials
            .iter()
            .any(|s| matches!(s, Special::At(_, _, v) if v.is_nan()))
}

/// `C = alpha·A·B + beta·C` of an `m × n × k` product with the specials, on `p` ranks with
/// `algorithm`, against the element-wise IEEE reference (each entry's sum in order).
#[allow(clippy::too_many_arguments)]
fn check_real(
    p: usize,
    algorithm: Algorithm,
    (m, n, k): (usize, usize, usize),
    (alpha, beta): (f64, f64),
    (sa, sb, sc): (Special, Special, Special),
) {
    let shape = GemmShape::new(m, n, k);
    let schedule = algorithm
        .schedule(shape, p, &PlanOptions::default())
        .unwrap();
    let (a, b, c0) = (operand(1, sa), operand(2, sb), operand(3, sc));
    let out = run_ranks(p, |comm: ThreadComm| {
        let bc = |r, c| BlockCyclic::new(r, c, 3, 3, 1, p).unwrap();
        let am = OwnedDistMatrix::from_fn(&comm, bc(m, k), &a).unwrap();
        let bm = OwnedDistMatrix::from_fn(&comm, bc(k, n), &b).unwrap();
        let mut cm = OwnedDistMatrix::from_fn(&comm, bc(m, n), &c0).unwrap();
        multiply(
            &comm,
            alpha,
            &am,
            Op::NoTrans,
            &bm,
            Op::NoTrans,
            beta,
            &mut cm,
            &schedule,
            Par::Seq,
        )
        .unwrap();
        cm.gather(&comm, 0).unwrap()
    });
    let c = out.into_iter().next().unwrap().unwrap();
    let nan_in = has_nan((alpha, beta), [sa, sb, sc]);
    for j in 0..n {
        for i in 0..m {
            let product = if alpha == 0.0 {
                0.0
            } else {
                alpha * (0..k).map(|l| a(i, l) * b(l, j)).sum::<f64>()
            };
            let want = if beta == 0.0 {
                product
            } else {
                product + beta * c0(i, j)
            };
            assert!(
                same(c[i + j * m], want, k, nan_in),
                "{algorithm} on {p}, alpha {alpha}, beta {beta}, {sa:?} {sb:?} {sc:?}: C[{i},{j}] = \
                 {} where IEEE gives {want}",
                c[i + j * m]
            );
        }
    }
}

const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::Cosma,
    Algorithm::Summa,
    Algorithm::TwoAndHalfD,
    Algorithm::Cannon,
];

#[test]
fn non_finite_numbers_in_a_multiplication_propagate_as_ieee_arithmetic() {
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let none = Special::None;
    type Case = ((f64, f64), (Special, Special, Special));
    let cases: [Case; 12] = [
        // In the operands: a NaN row of C, an infinite row (and NaN where it meets a zero or
        // an infinity of the other sign).
        ((1.0, 0.0), (Special::At(2, 3, nan), none, none)),
        ((1.0, 1.0), (none, Special::At(4, 1, inf), none)),
        (
            (1.0, 1.0),
            (Special::At(0, 0, inf), Special::At(0, 2, 0.0), none),
        ),
        (
            (1.0, 1.0),
            (Special::At(1, 0, inf), Special::At(5, 1, -inf), none),
        ),
        ((1.0, 1.0), (none, none, Special::At(3, 2, nan))),
        ((2.0, -1.0), (none, none, Special::At(0, 4, -inf))),
        // In the scalars.
        ((nan, 1.0), (none, none, none)),
        ((inf, 0.0), (none, none, none)),
        ((1.0, nan), (none, none, none)),
        ((1.0, inf), (none, none, Special::At(2, 2, 0.0))),
        // BLAS's conventions: beta = 0 does not read C, alpha = 0 reads neither A nor B.
        ((1.0, 0.0), (none, none, Special::At(1, 1, nan))),
        (
            (0.0, 1.0),
            (Special::At(1, 1, nan), Special::At(2, 2, inf), none),
        ),
    ];
    for p in [1, 2, 3, 4, 5] {
        for algorithm in ALGORITHMS {
            for &(scalars, specials) in &cases {
                check_real(p, algorithm, (7, 6, 9), scalars, specials);
            }
        }
    }
}

#[test]
fn complex_non_finite_numbers_propagate_too() {
    let p = 4;
    let shape = GemmShape::new(6, 5, 7);
    let schedule = Algorithm::Cosma
        .schedule(shape, p, &PlanOptions::default())
        .unwrap();
    let a = |i: usize, j: usize| {
        if (i, j) == (2, 3) {
            c64::new(f64::NAN, 0.0)
        } else {
            random::uniform(i, j, 1)
        }
    };
    let out = run_ranks(p, |comm: ThreadComm| {
        let bc = |r, c| BlockCyclic::new(r, c, 2, 2, 2, 2).unwrap();
        let am = OwnedDistMatrix::from_fn(&comm, bc(6, 7), a).unwrap();
        let bm = OwnedDistMatrix::<c64, _>::random(&comm, bc(7, 5), 2).unwrap();
        let mut cm = OwnedDistMatrix::zeros(&comm, bc(6, 5)).unwrap();
        let one = c64::new(1.0, 0.0);
        multiply(
            &comm,
            one,
            &am,
            Op::NoTrans,
            &bm,
            Op::NoTrans,
            c64::new(0.0, 0.0),
            &mut cm,
            &schedule,
            Par::Seq,
        )
        .unwrap();
        cm.gather(&comm, 0).unwrap()
    });
    let c = out.into_iter().next().unwrap().unwrap();
    for j in 0..5 {
        for i in 0..6 {
            let x = c[i + 6 * j];
            let nan = x.re.is_nan() || x.im.is_nan();
            assert_eq!(nan, i == 2, "C[{i},{j}] = {x:?}");
            assert!(nan || (x.re.is_finite() && x.im.is_finite()));
        }
    }
}

#[test]
fn factorisations_refuse_a_nan_or_an_infinity_on_any_rank_alike() {
    for p in [1, 2, 3, 4] {
        for operation in [Operation::Lu, Operation::Cholesky] {
            for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                for rank in 0..p {
                    let out = run_ranks(p, |comm: ThreadComm| {
                        run_with_value(&comm, operation, rank, value).map_err(|e| e.to_string())
                    });
                    for (r, o) in out.iter().enumerate() {
                        let e = o.as_ref().expect_err("refused");
                        assert!(
                            e.contains("NaN or an infinity"),
                            "{operation:?} {value} on {rank}: rank {r}: {e}"
                        );
                        assert_eq!(o, &out[0]);
                    }
                }
            }
        }
    }
    // A product and a transform carry it on.
    for operation in [Operation::Gemm, Operation::Transform] {
        let out = run_ranks(3, |comm: ThreadComm| {
            run_with_value(&comm, operation, 1, f64::NAN)
        });
        let sums: Vec<f64> = out.into_iter().map(|o| o.unwrap()).collect();
        assert!(sums.iter().any(|s| s.is_nan()), "{operation:?}: {sums:?}");
    }
}
