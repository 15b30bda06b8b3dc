//! Checks of the residual checks themselves: each accepts an honest result and rejects the same
//! result with one entry changed (a check that cannot fail checks nothing).

use redblue::check::{
    cholesky_residual, factor_residual, gemm_residual, lu_residual, solve_residual,
    CHOLESKY_THRESHOLD, GEMM_THRESHOLD, LU_THRESHOLD, PROBE_SEED,
};
use redblue::cholesky::{cholesky, CholeskyAlgorithm, CholeskyParams};
use redblue::comm::{Communicator, CommunicatorExt};
use redblue::core::{c32, c64, random, Op, RealScalar, Scalar, Uplo};
use redblue::dist::{BlockCyclic, DistMatrix, DistMatrixMut, GridLayout, Layout, OwnedDistMatrix};
use redblue::gemm::{multiply, Algorithm, GemmShape, PlanOptions};
use redblue::kernels::{KernelScalar, Par};
use redblue::lu::{lu, LuAlgorithm, LuParams};

/// `m` with `delta` added to element `(i, j)` (by its owner).
fn perturbed<T: Scalar, L: Layout>(
    m: &OwnedDistMatrix<T, L>,
    i: usize,
    j: usize,
    delta: f64,
) -> OwnedDistMatrix<T, L> {
    let mut out = m.clone();
    let (owner, pos) = m.layout().to_local(i, j);
    if owner == out.rank() {
        out.local_mut()[pos] += T::from_f64_parts(delta, 0.0);
    }
    out
}

fn eps<T: Scalar>() -> f64 {
    T::epsilon().to_f64()
}

/// The LU factor residual and the solve residual pass for honest factors and solutions of a
/// random matrix (and are not zero: the right-hand side is independent of `A`), and fail when
/// one entry of `U`, of `L` or of `X` moves by a hundred thresholds' worth.
pub fn check_lu_residuals<C: Communicator, T: KernelScalar>(comm: &C) {
    let p = comm.size();
    let n = 37;
    let layout = BlockCyclic::new(n, n, 4, 4, 1, p).unwrap();
    let a = OwnedDistMatrix::<T, _>::random(comm, layout, 1).unwrap();
    for algorithm in [LuAlgorithm::Conflux, LuAlgorithm::TwoD] {
        let params = LuParams::default().with_algorithm(algorithm).with_block(4);
        let fac = lu(comm, &a, &params).unwrap();
        let honest = lu_residual(comm, &a, &fac).unwrap();
        assert!((0.0..=1.0).contains(&honest), "{algorithm}: {honest}");

        let (l, u) = (fac.lower(comm).unwrap(), fac.upper(comm).unwrap());
        let delta =
            100.0 * LU_THRESHOLD * n as f64 * eps::<T>() * a.norm_one(comm).unwrap().to_f64();
        let bad_u = perturbed(&u, n / 2, n - 3, delta);
        let r = factor_residual(comm, &a, fac.perm(), &l, &bad_u).unwrap();
        assert!(
            r > LU_THRESHOLD,
            "{algorithm}: U changed in one entry passes: {r}"
        );
        let bad_l = perturbed(&l, n - 1, 0, delta);
        let r = factor_residual(comm, &a, fac.perm(), &bad_l, &u).unwrap();
        assert!(
            r > LU_THRESHOLD,
            "{algorithm}: L changed in one entry passes: {r}"
        );
        assert!(factor_residual(comm, &a, fac.perm(), &l, &u).unwrap() <= 1.0);

        let b = OwnedDistMatrix::<T, _>::random(comm, GridLayout::even(n, 3, p, 1).unwrap(), 2)
            .unwrap();
        let x = fac.solve(comm, &b).unwrap();
        let honest = solve_residual(comm, &a, &x, &b).unwrap();
        assert!(honest > 0.0 && honest <= 1.0, "{algorithm}: solve {honest}");
        let scale = a.norm_inf(comm).unwrap().to_f64() * x.norm_inf(comm).unwrap().to_f64();
        let delta = 100.0 * LU_THRESHOLD * n as f64 * eps::<T>() * scale;
        let r = solve_residual(comm, &a, &perturbed(&x, 5, 1, delta), &b).unwrap();
        assert!(
            r > LU_THRESHOLD,
            "{algorithm}: X changed in one entry passes: {r}"
        );
    }
}

/// The LU residual of a rectangular matrix's factors (tall and wide) passes, and fails when one
/// entry of `A` moves (the factors then belong to another matrix).
pub fn check_rectangular_lu_residuals<C: Communicator, T: KernelScalar>(comm: &C) {
    let p = comm.size();
    for (m, n) in [(41, 13), (13, 41)] {
        let layout = BlockCyclic::new(m, n, 4, 4, 1, p).unwrap();
        let a = OwnedDistMatrix::<T, _>::random(comm, layout, 1).unwrap();
        let fac = lu(comm, &a, &LuParams::default().with_block(4)).unwrap();
        let honest = lu_residual(comm, &a, &fac).unwrap();
        assert!((0.0..=1.0).contains(&honest), "{m}x{n}: {honest}");
        let delta = 100.0 * LU_THRESHOLD * m.max(n) as f64 * eps::<T>();
        let other = perturbed(&a, m - 1, n - 1, delta * a.norm_one(comm).unwrap().to_f64());
        let r = lu_residual(comm, &other, &fac).unwrap();
        assert!(
            r > LU_THRESHOLD,
            "{m}x{n}: A changed in one entry passes: {r}"
        );
    }
}

/// The GEMM residual passes for an honest product (any ops, α, β) and fails when one entry of
/// `C` moves.
pub fn check_gemm_residual<C: Communicator, T: KernelScalar>(comm: &C) {
    let p = comm.size();
    let (m, n, k) = (23, 19, 31);
    let alpha = T::from_f64_parts(0.75, -0.5);
    for (op_a, op_b, beta) in [
        (Op::NoTrans, Op::NoTrans, T::zero()),
        (Op::Trans, Op::ConjTrans, T::from_f64_parts(-1.5, 0.25)),
    ] {
        let a_shape = op_a.apply_shape((m, k));
        let b_shape = op_b.apply_shape((k, n));
        let a = OwnedDistMatrix::<T, _>::random(
            comm,
            BlockCyclic::new(a_shape.0, a_shape.1, 3, 5, p, 1).unwrap(),
            1,
        )
        .unwrap();
        let b = OwnedDistMatrix::<T, _>::random(
            comm,
            GridLayout::even(b_shape.0, b_shape.1, 1, p).unwrap(),
            2,
        )
        .unwrap();
        let c0 =
            OwnedDistMatrix::<T, _>::random(comm, BlockCyclic::new(m, n, 4, 4, 1, p).unwrap(), 3)
                .unwrap();
        let mut c = c0.clone();
        let schedule = Algorithm::Cosma
            .schedule(GemmShape::new(m, n, k), p, &PlanOptions::default())
            .unwrap();
        multiply(
            comm,
            alpha,
            &a,
            op_a,
            &b,
            op_b,
            beta,
            &mut c,
            &schedule,
            Par::Seq,
        )
        .unwrap();
        let honest = gemm_residual(comm, alpha, &a, op_a, &b, op_b, beta, &c0, &c).unwrap();
        assert!(honest <= 3.0, "{op_a:?} {op_b:?}: {honest}");

        let (i, j) = (m - 2, n / 2);
        let x: Vec<T> = (0..n).map(|j| random::uniform(j, 0, PROBE_SEED)).collect();
        let x_norm = x.iter().map(|v| v.abs_sqr().to_f64()).sum::<f64>().sqrt();
        let scale = alpha.abs().to_f64()
            * a.norm_fro(comm).unwrap().to_f64()
            * b.norm_fro(comm).unwrap().to_f64()
            + beta.abs().to_f64() * c0.norm_fro(comm).unwrap().to_f64();
        let delta =
            100.0 * GEMM_THRESHOLD * scale * x_norm * k as f64 * eps::<T>() / x[j].abs().to_f64();
        let bad = perturbed(&c, i, j, delta);
        let r = gemm_residual(comm, alpha, &a, op_a, &b, op_b, beta, &c0, &bad).unwrap();
        assert!(
            r > GEMM_THRESHOLD,
            "{op_a:?} {op_b:?}: C changed in one entry passes: {r}"
        );
    }
}

/// The Cholesky residual passes for an honest factor (both triangles, both algorithms) of a
/// Hermitian positive definite matrix given by one triangle (NaN in the other), and fails when
/// one entry of the factor moves by a hundred thresholds' worth.
pub fn check_cholesky_residuals<C: Communicator, T: KernelScalar>(comm: &C) {
    let p = comm.size();
    let n = 41;
    for uplo in [Uplo::Lower, Uplo::Upper] {
        let layout = BlockCyclic::new(n, n, 4, 4, 1, p).unwrap();
        let a = OwnedDistMatrix::from_fn(comm, layout, |i, j| {
            let inside = if uplo == Uplo::Lower { i >= j } else { i <= j };
            match (inside, i.cmp(&j)) {
                (false, _) => T::from_f64_parts(f64::NAN, 0.0),
                (_, std::cmp::Ordering::Equal) => T::from_f64_parts(2.0 * n as f64, 0.0),
                (_, std::cmp::Ordering::Greater) => random::uniform(i, j, 4),
                (_, std::cmp::Ordering::Less) => random::uniform::<T>(j, i, 4).conj(),
            }
        })
        .unwrap();
        for algorithm in [CholeskyAlgorithm::Confchox, CholeskyAlgorithm::TwoD] {
            let params = CholeskyParams::default()
                .with_algorithm(algorithm)
                .with_block(4);
            let fac = cholesky(comm, &a, uplo, &params).unwrap();
            let honest = cholesky_residual(comm, &a, uplo, &fac).unwrap();
            assert!(
                (0.0..=0.5).contains(&honest),
                "{algorithm} {uplo:?}: {honest}"
            );
            // A factor with one entry of its triangle off.
            let f = fac.factor(comm).unwrap();
            let (i, j) = if uplo == Uplo::Lower {
                (n - 2, 3)
            } else {
                (3, n - 2)
            };
            let delta = 100.0 * CHOLESKY_THRESHOLD * n as f64 * eps::<T>() * 2.0 * n as f64;
            let bad = perturbed(&f, i, j, delta);
            let r = bad_cholesky_residual(comm, &a, uplo, &bad);
            assert!(
                r > CHOLESKY_THRESHOLD,
                "{algorithm}: a bad factor passes: {r}"
            );
        }
    }
}

/// The residual of a given factor `f` (as [`cholesky_residual`] computes it for a
/// factorisation's).
fn bad_cholesky_residual<C: Communicator, T: KernelScalar, L: Layout>(
    comm: &C,
    a: &OwnedDistMatrix<T, L>,
    uplo: Uplo,
    f: &OwnedDistMatrix<T, L>,
) -> f64 {
    // A − F·Fᴴ (Lower) or A − Fᴴ·F (Upper) on the triangle, through the same product.
    let (m, _) = a.shape();
    let (op_a, op_b) = if uplo == Uplo::Lower {
        (Op::NoTrans, Op::ConjTrans)
    } else {
        (Op::ConjTrans, Op::NoTrans)
    };
    let mut r = a.clone();
    let schedule = Algorithm::Cosma
        .schedule(
            GemmShape::new(m, m, m),
            comm.size(),
            &PlanOptions::default(),
        )
        .unwrap();
    let minus = T::zero() - T::one();
    multiply(
        comm,
        minus,
        f,
        op_a,
        f,
        op_b,
        T::one(),
        &mut r,
        &schedule,
        Par::Seq,
    )
    .unwrap();
    let tri = |x: &OwnedDistMatrix<T, L>| -> f64 {
        let mut sums = vec![0.0f64; m];
        x.for_each_local(|i, j, v| {
            let inside = if uplo == Uplo::Lower { i >= j } else { i <= j };
            if inside {
                sums[j] += v.abs().to_f64();
                if i != j {
                    sums[i] += v.abs().to_f64();
                }
            }
        });
        comm.all_reduce_in_place(&mut sums, redblue::comm::ReduceOp::Sum)
            .unwrap();
        sums.into_iter().fold(0.0, f64::max)
    };
    tri(&r) / (tri(a) * m as f64 * eps::<T>())
}

/// Every residual check, for all four scalars.
pub fn check_all<C: Communicator>(comm: &C) {
    check_lu_residuals::<C, f64>(comm);
    check_lu_residuals::<C, f32>(comm);
    check_lu_residuals::<C, c64>(comm);
    check_lu_residuals::<C, c32>(comm);
    check_rectangular_lu_residuals::<C, f64>(comm);
    check_rectangular_lu_residuals::<C, c32>(comm);
    check_gemm_residual::<C, f64>(comm);
    check_gemm_residual::<C, f32>(comm);
    check_gemm_residual::<C, c64>(comm);
    check_gemm_residual::<C, c32>(comm);
    check_cholesky_residuals::<C, f64>(comm);
    check_cholesky_residuals::<C, f32>(comm);
    check_cholesky_residuals::<C, c64>(comm);
    check_cholesky_residuals::<C, c32>(comm);
}
