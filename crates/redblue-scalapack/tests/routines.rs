//! The ScaLAPACK routines on threads-as-ranks: results against a serial reference, what is left
//! untouched (outside the submatrix, the other triangle, the padding rows), ScaLAPACK's `info`
//! for illegal arguments on every rank, and the cases passed on.

use redblue_comm::{run_ranks, Communicator, ThreadComm};
use redblue_core::{c32, c64, random, RealScalar, Scalar};
use redblue_dist::BlockCyclic;
use redblue_kernels::KernelScalar;
use redblue_scalapack::cholesky::{potrf_operand, potrs_operands, pposv, ppotrf, ppotrs};
use redblue_scalapack::gemm::{pgemm, GemmArgs};
use redblue_scalapack::lu::{gesv_operands, getrf_operand, getrs_operands, pgesv, pgetrf, pgetrs};
use redblue_scalapack::{Array, BlacsGrid, Descriptor, Outcome};

/// What padding rows and untouched elements hold.
const SENTINEL: f64 = -777.0;

/// A global matrix distributed as ScaLAPACK would: `m × n` in `mb × nb` blocks from grid
/// position `(rsrc, csrc)`, local arrays with two rows of padding.
#[derive(Clone, Copy)]
struct Dist {
    m: usize,
    n: usize,
    mb: usize,
    nb: usize,
    src: (usize, usize),
}

impl Dist {
    /// `n × n` in `nb × nb` blocks from grid position `(0, 0)`.
    fn square(n: usize, nb: usize) -> Self {
        Dist {
            m: n,
            n,
            mb: nb,
            nb,
            src: (0, 0),
        }
    }

    /// `m × k` right-hand sides, in `mb × 1` blocks from grid position `(0, 0)`.
    fn columns(m: usize, k: usize, mb: usize) -> Self {
        Dist {
            m,
            n: k,
            mb,
            nb: 1,
            src: (0, 0),
        }
    }

    fn layout(&self, g: &BlacsGrid) -> BlockCyclic {
        BlockCyclic::new(self.m, self.n, self.mb, self.nb, g.nprow, g.npcol)
            .unwrap()
            .with_source(self.src.0, self.src.1)
            .unwrap()
    }
    fn lld(&self, g: &BlacsGrid) -> usize {
        self.layout(g).local_shape(g.rank()).0 + 2
    }
    fn desc(&self, g: &BlacsGrid) -> Descriptor {
        Descriptor::from_9(&[
            1,
            0,
            self.m as i32,
            self.n as i32,
            self.mb as i32,
            self.nb as i32,
            self.src.0 as i32,
            self.src.1 as i32,
            self.lld(g) as i32,
        ])
    }
    /// This rank's local array of `f`, padding rows holding the sentinel.
    fn local<T: Scalar>(&self, g: &BlacsGrid, f: impl Fn(usize, usize) -> T) -> Vec<T> {
        let layout = self.layout(g);
        let (rows, cols) = layout.local_shape(g.rank());
        let lld = self.lld(g);
        let mut out = vec![T::from_f64_parts(SENTINEL, 0.0); lld * cols];
        for lj in 0..cols {
            for li in 0..rows {
                let (i, j) = layout.local_to_global(g.rank(), li, lj);
                out[li + lj * lld] = f(i, j);
            }
        }
        out
    }
    /// Every rank's local array gathered into the global matrix, and whether every padding
    /// entry still holds the sentinel.
    fn gather<T: Scalar>(&self, comm: &ThreadComm, g: &BlacsGrid, local: &[T]) -> (Vec<T>, bool) {
        let mut counts = vec![0usize; comm.size()];
        comm.all_gather(&[local.len()], &mut counts).unwrap();
        let mut all = vec![T::zero(); counts.iter().sum()];
        comm.all_gather_v(local, &mut all, &counts).unwrap();
        let mut global = vec![T::zero(); self.m * self.n];
        let mut padding_kept = true;
        let mut start = 0;
        for (r, &len) in counts.iter().enumerate() {
            let gr = BlacsGrid {
                myrow: r / g.npcol,
                mycol: r % g.npcol,
                ..*g
            };
            let layout = self.layout(&gr);
            let (rows, _) = layout.local_shape(r);
            let lld = self.lld(&gr);
            for pos in 0..len {
                let (li, lj) = (pos % lld, pos / lld);
                if li < rows {
                    let (i, j) = layout.local_to_global(r, li, lj);
                    global[i + j * self.m] = all[start + pos];
                } else {
                    padding_kept &= all[start + pos] == T::from_f64_parts(SENTINEL, 0.0);
                }
            }
            start += len;
        }
        (global, padding_kept)
    }
}

fn grid_of(comm: &ThreadComm, nprow: usize, npcol: usize) -> BlacsGrid {
    BlacsGrid {
        nprow,
        npcol,
        myrow: comm.rank() / npcol,
        mycol: comm.rank() % npcol,
    }
}

/// An entry of a test matrix (complex ones have both parts).
fn entry<T: Scalar>(i: usize, j: usize, seed: u64) -> T {
    let re = random::uniform(i, j, seed);
    let im = random::uniform(i, j, seed + 1000);
    T::from_f64_parts(re, im)
}

/// The grids every test runs on.
const GRIDS: [(usize, usize); 5] = [(1, 1), (2, 2), (1, 3), (3, 1), (2, 3)];

/// `|x − y|` within `scale` times a few hundred rounding errors of `T`.
fn close<T: Scalar>(x: T, y: T, scale: f64) -> bool {
    (x - y).abs().to_f64() <= 300.0 * scale.max(1.0) * T::epsilon().to_f64()
}

fn gemm_case<T: KernelScalar>(transa: u8, transb: u8, nprow: usize, npcol: usize) {
    let (m, n, k) = (9, 7, 11);
    let (ia, ja, ib, jb, ic, jc) = (3, 2, 2, 4, 4, 1);
    let da = if transa == b'N' { (m, k) } else { (k, m) };
    let db = if transb == b'N' { (k, n) } else { (n, k) };
    let a = Dist {
        m: da.0 + ia + 1,
        n: da.1 + ja,
        mb: 3,
        nb: 2,
        src: (nprow - 1, 0),
    };
    let b = Dist {
        m: db.0 + ib,
        n: db.1 + jb + 2,
        mb: 2,
        nb: 3,
        src: (0, npcol - 1),
    };
    let c = Dist {
        m: m + ic + 2,
        n: n + jc,
        mb: 4,
        nb: 3,
        src: (0, 0),
    };
    let (alpha, beta) = (T::from_f64_parts(2.0, 0.0), T::from_f64_parts(-0.5, 0.0));
    let ok = run_ranks(nprow * npcol, |comm| {
        let g = grid_of(&comm, nprow, npcol);
        let la = a.local(&g, |i, j| entry::<T>(i, j, 1));
        let lb = b.local(&g, |i, j| entry::<T>(i, j, 2));
        let mut lc = c.local(&g, |i, j| entry::<T>(i, j, 3));
        let args = GemmArgs {
            transa,
            transb,
            m: m as i32,
            n: n as i32,
            k: k as i32,
            a: (ia as i32 + 1, ja as i32 + 1, a.desc(&g)),
            b: (ib as i32 + 1, jb as i32 + 1, b.desc(&g)),
            c: (ic as i32 + 1, jc as i32 + 1, c.desc(&g)),
        };
        let out = pgemm(
            &comm,
            &g,
            &args,
            alpha,
            &Array::read_only(&la),
            &Array::read_only(&lb),
            beta,
            &mut Array::new(&mut lc),
        )
        .unwrap();
        assert_eq!(out, Outcome::Served);
        let (got, padding_kept) = c.gather(&comm, &g, &lc);
        let op = |t: u8, x: T| if t == b'C' { x.conj() } else { x };
        let mut right = padding_kept;
        for j in 0..c.n {
            for i in 0..c.m {
                let before = entry::<T>(i, j, 3);
                let inside = (ic..ic + m).contains(&i) && (jc..jc + n).contains(&j);
                let want = if inside {
                    let (ii, jj) = (i - ic, j - jc);
                    let mut s = T::zero();
                    for l in 0..k {
                        let x = if transa == b'N' {
                            entry::<T>(ia + ii, ja + l, 1)
                        } else {
                            op(transa, entry::<T>(ia + l, ja + ii, 1))
                        };
                        let y = if transb == b'N' {
                            entry::<T>(ib + l, jb + jj, 2)
                        } else {
                            op(transb, entry::<T>(ib + jj, jb + l, 2))
                        };
                        s += x * y;
                    }
                    alpha * s + beta * before
                } else {
                    before
                };
                right &= if inside {
                    close(got[i + j * c.m], want, k as f64)
                } else {
                    got[i + j * c.m] == want
                };
            }
        }
        right
    });
    assert!(
        ok.iter().all(|&r| r),
        "{transa} {transb} on {nprow}x{npcol}"
    );
}

#[test]
fn gemm_on_unaligned_submatrices_matches_the_reference_and_writes_only_sub_c() {
    for (nprow, npcol) in GRIDS {
        for (ta, tb) in [(b'N', b'N'), (b'T', b'N'), (b'N', b'C'), (b'C', b'T')] {
            gemm_case::<f64>(ta, tb, nprow, npcol);
            gemm_case::<c64>(ta, tb, nprow, npcol);
        }
    }
    gemm_case::<f32>(b'N', b'T', 2, 2);
    gemm_case::<redblue_core::c32>(b'C', b'N', 2, 3);
}

/// `P·A = L·U` from the caller's `L\U` and ScaLAPACK's `IPIV` (gathered), for the `n × n`
/// submatrix at `(off, off)`; everything outside it unchanged.
fn check_lu<T: KernelScalar>(
    a: &Dist,
    off: usize,
    (m, n): (usize, usize),
    got: &[T],
    ipiv: &[i32],
    seed: u64,
) -> bool {
    let at = |i: usize, j: usize| got[off + i + (off + j) * a.m];
    let mut rows: Vec<usize> = (0..m).collect();
    for k in 0..m.min(n) {
        let p = ipiv[k] as usize - 1 - off;
        if p < k || p >= m {
            return false;
        }
        rows.swap(k, p);
    }
    let mut ok = true;
    for i in 0..m {
        for j in 0..n {
            let mut s = T::zero();
            for l in 0..=i.min(j).min(n - 1) {
                let lv = if l == i { T::one() } else { at(i, l) };
                s += lv * at(l, j);
            }
            ok &= close(s, entry::<T>(off + rows[i], off + j, seed), 10.0 * n as f64);
        }
    }
    for j in 0..a.n {
        for i in 0..a.m {
            let inside = (off..off + m).contains(&i) && (off..off + n).contains(&j);
            ok &= inside || got[i + j * a.m] == entry::<T>(i, j, seed);
        }
    }
    ok
}

/// `IPIV` gathered: the entry of every global row from the process row holding it, checked to
/// be the same in every process column.
fn gather_ipiv(comm: &ThreadComm, g: &BlacsGrid, a: &Dist, local: &[i32]) -> Option<Vec<i32>> {
    let mut all = vec![0i32; local.len() * comm.size()];
    comm.all_gather(local, &mut all).unwrap();
    let mut out = vec![0; a.m];
    for i in 0..a.m {
        let prow = (i / a.mb + a.src.0) % g.nprow;
        let li = (i / a.mb / g.nprow) * a.mb + i % a.mb;
        let values: Vec<i32> = (0..g.npcol)
            .map(|pc| all[(prow * g.npcol + pc) * local.len() + li])
            .collect();
        if values.iter().any(|&v| v != values[0]) {
            return None;
        }
        out[i] = values[0];
    }
    Some(out)
}

fn lu_case<T: KernelScalar>(nprow: usize, npcol: usize, n: usize, nb: usize) {
    let off = nb; // the submatrix starts at the second block
    let a = Dist {
        m: n + off + 3,
        n: n + off + 1,
        mb: nb,
        nb,
        src: (nprow - 1, npcol - 1),
    };
    let nrhs = 3;
    let b = Dist {
        m: n + off,
        n: nrhs + 1,
        mb: nb,
        nb: 2,
        src: (nprow - 1, 0),
    };
    let ok = run_ranks(nprow * npcol, |comm| {
        let g = grid_of(&comm, nprow, npcol);
        let mut la = a.local(&g, |i, j| entry::<T>(i, j, 5));
        let mut ipiv = vec![0i32; a.m + nb]; // at least LOCr(M_A) + MB_A, the same on every rank
        let op = getrf_operand(
            n as i32,
            n as i32,
            off as i32 + 1,
            off as i32 + 1,
            a.desc(&g),
        );
        let out = pgetrf(&comm, &g, &op, &mut Array::new(&mut la), &mut ipiv).unwrap();
        assert_eq!(out, Outcome::Served);
        let (got, padding_kept) = a.gather(&comm, &g, &la);
        let full_ipiv =
            gather_ipiv(&comm, &g, &a, &ipiv).expect("IPIV the same in every process column");
        let factored = padding_kept && check_lu(&a, off, (n, n), &got, &full_ipiv[off..off + n], 5);
        // Solve with the factors in the caller's arrays.
        let mut lb = b.local(&g, |i, j| entry::<T>(i, j, 6));
        let ops = getrs_operands(
            n as i32,
            nrhs as i32,
            (off as i32 + 1, off as i32 + 1, a.desc(&g)),
            (off as i32 + 1, 2, b.desc(&g)),
        );
        let out = pgetrs(
            &comm,
            &g,
            b'N',
            &ops,
            &Array::read_only(&la),
            &ipiv,
            &mut Array::new(&mut lb),
        )
        .unwrap();
        assert_eq!(out, Outcome::Served);
        let (x, padding_kept) = b.gather(&comm, &g, &lb);
        let mut solved =
            factored && padding_kept && residual_ok(n, nrhs, off, &x, &b, (5, 6), b'N');
        // Transposed solves with the same factors.
        for trans in [b'T', b'C'] {
            let mut lb = b.local(&g, |i, j| entry::<T>(i, j, 6));
            let out = pgetrs(
                &comm,
                &g,
                trans,
                &ops,
                &Array::read_only(&la),
                &ipiv,
                &mut Array::new(&mut lb),
            )
            .unwrap();
            assert_eq!(out, Outcome::Served);
            let (x, padding_kept) = b.gather(&comm, &g, &lb);
            solved &= padding_kept && residual_ok(n, nrhs, off, &x, &b, (5, 6), trans);
        }
        solved
    });
    assert!(
        ok.iter().all(|&r| r),
        "LU of {n} in blocks of {nb} on {nprow}x{npcol}"
    );
}

/// `‖op(A)·X − B‖` small for the `n × n` submatrix of the original `A` (seed `seeds.0`, at
/// `(off, off)`; `trans` as ScaLAPACK's) and `X` in columns `1..=nrhs` of rows `off..` of `x`
/// (`B` of seed `seeds.1`); the other entries of `x` unchanged.
fn residual_ok<T: Scalar>(
    n: usize,
    nrhs: usize,
    off: usize,
    x: &[T],
    b: &Dist,
    seeds: (u64, u64),
    trans: u8,
) -> bool {
    let (sa, sb) = seeds;
    let op_a = |i: usize, l: usize| match trans {
        b'N' => entry::<T>(i, off + l, sa),
        b'T' => entry::<T>(off + l, i, sa),
        _ => entry::<T>(off + l, i, sa).conj(),
    };
    let mut ok = true;
    for j in 0..b.n {
        for i in 0..b.m {
            let inside = (off..off + n).contains(&i) && (1..1 + nrhs).contains(&j);
            if !inside {
                ok &= x[i + j * b.m] == entry::<T>(i, j, sb);
                continue;
            }
            let mut s = T::zero();
            for l in 0..n {
                s += op_a(i, l) * x[off + l + j * b.m];
            }
            ok &= close(s, entry::<T>(i, j, sb), 100.0 * n as f64);
        }
    }
    ok
}

#[test]
fn lu_leaves_lapack_factors_and_scalapack_ipiv_and_getrs_solves_with_them() {
    for (nprow, npcol) in GRIDS {
        for (n, nb) in [(1, 2), (7, 2), (16, 4), (23, 3)] {
            lu_case::<f64>(nprow, npcol, n, nb);
        }
        lu_case::<c64>(nprow, npcol, 13, 3);
    }
    lu_case::<f32>(2, 2, 10, 2);
    lu_case::<redblue_core::c32>(1, 3, 9, 4);
}

/// A Hermitian positive definite entry: `2N` on the diagonal.
fn spd<T: Scalar>(i: usize, j: usize, n: usize) -> T {
    match i.cmp(&j) {
        std::cmp::Ordering::Equal => T::from_f64_parts(2.0 * n as f64, 0.0),
        std::cmp::Ordering::Greater => entry::<T>(i, j, 8),
        std::cmp::Ordering::Less => entry::<T>(j, i, 8).conj(),
    }
}

/// The factor of `cholesky_case` gathered in `got` (`size × size`): its `uplo` triangle of the
/// `n × n` submatrix at `(off, off)` reproduces the matrix, and everything else is `value`'s.
fn factor_ok<T: Scalar>(
    got: &[T],
    size: usize,
    off: usize,
    n: usize,
    uplo: u8,
    value: &impl Fn(usize, usize) -> T,
) -> bool {
    let mut ok = true;
    let f = |i: usize, j: usize| got[off + i + (off + j) * size];
    for i in 0..n {
        for j in 0..n {
            // A(i, j) = Σ L(i,l)·conj(L(j,l)), or Σ conj(U(l,i))·U(l,j).
            let mut s = T::zero();
            for l in 0..=i.min(j) {
                s += if uplo == b'L' {
                    f(i, l) * f(j, l).conj()
                } else {
                    f(l, i).conj() * f(l, j)
                };
            }
            ok &= close(s, spd::<T>(off + i, off + j, size), 10.0 * n as f64);
        }
    }
    for j in 0..size {
        for i in 0..size {
            let inside = (off..off + n).contains(&i) && (off..off + n).contains(&j);
            let written = inside && if uplo == b'L' { i >= j } else { i <= j };
            let before = value(i, j);
            let same = got[i + j * size] == before
                || (!before.is_finite() && !got[i + j * size].is_finite());
            ok &= written || same;
        }
    }
    ok
}

fn cholesky_case<T: KernelScalar>(nprow: usize, npcol: usize, n: usize, nb: usize, uplo: u8) {
    let off = 2 * nb;
    let size = n + off + 2;
    let a = Dist {
        m: size,
        n: size,
        mb: nb,
        nb,
        src: (0, npcol - 1),
    };
    let nrhs = 2;
    let b = Dist {
        m: n + off,
        n: nrhs + 1,
        mb: nb,
        nb: 3,
        src: (0, 0),
    };
    // The matrix is Hermitian positive definite around the submatrix; the unread triangle of
    // the submatrix holds NaN.
    let value = move |i: usize, j: usize| -> T {
        let inside = (off..off + n).contains(&i) && (off..off + n).contains(&j);
        let unread = if uplo == b'L' { i < j } else { i > j };
        if inside && unread {
            T::from_f64_parts(f64::NAN, 0.0)
        } else {
            spd::<T>(i, j, size)
        }
    };
    let ok = run_ranks(nprow * npcol, |comm| {
        let g = grid_of(&comm, nprow, npcol);
        let mut la = a.local(&g, value);
        let op = potrf_operand(n as i32, off as i32 + 1, off as i32 + 1, a.desc(&g));
        assert_eq!(
            ppotrf(&comm, &g, uplo, &op, &mut Array::new(&mut la)).unwrap(),
            Outcome::Served
        );
        let (got, padding_kept) = a.gather(&comm, &g, &la);
        let ok = padding_kept && factor_ok(&got, size, off, n, uplo, &value);
        let mut lb = b.local(&g, |i, j| entry::<T>(i, j, 9));
        let ops = potrs_operands(
            n as i32,
            nrhs as i32,
            (off as i32 + 1, off as i32 + 1, a.desc(&g)),
            (off as i32 + 1, 2, b.desc(&g)),
        );
        assert_eq!(
            ppotrs(
                &comm,
                &g,
                uplo,
                &ops,
                &Array::read_only(&la),
                &mut Array::new(&mut lb)
            )
            .unwrap(),
            Outcome::Served
        );
        let (x, padding_kept) = b.gather(&comm, &g, &lb);
        ok && padding_kept && {
            let mut right = true;
            for j in 1..=nrhs {
                for i in 0..n {
                    let mut s = T::zero();
                    for l in 0..n {
                        s += spd::<T>(off + i, off + l, size) * x[off + l + j * b.m];
                    }
                    right &= close(s, entry::<T>(off + i, j, 9), 100.0 * n as f64);
                }
            }
            right
        }
    });
    assert!(
        ok.iter().all(|&r| r),
        "Cholesky {} of {n} in blocks of {nb} on {nprow}x{npcol}",
        uplo as char
    );
}

#[test]
fn cholesky_writes_only_its_triangle_and_potrs_solves_with_it() {
    for (nprow, npcol) in GRIDS {
        for uplo in [b'L', b'U'] {
            for (n, nb) in [(1, 2), (9, 2), (17, 4)] {
                cholesky_case::<f64>(nprow, npcol, n, nb, uplo);
            }
            cholesky_case::<c64>(nprow, npcol, 11, 3, uplo);
        }
    }
    cholesky_case::<f32>(2, 2, 10, 2, b'U');
    cholesky_case::<redblue_core::c32>(2, 3, 9, 3, b'L');
}

/// `p?potrs` reads a factor of either triangle where it is on a 2D grid: what moves is the
/// solve's traffic, a few vectors of `N`, not the factor (an upper one was moved whole on every
/// call while only the lower triangle's grid was renumbered for the pipeline).
#[test]
fn potrs_reads_either_triangle_where_it_is_on_a_2d_grid() {
    let (n, nb) = (96, 4);
    let a = Dist::square(n, nb);
    let b = Dist::columns(n, 1, nb);
    for uplo in [b'L', b'U'] {
        let words = run_ranks(4, |comm| {
            let g = grid_of(&comm, 2, 2);
            let mut la = a.local(&g, |i, j| spd::<f64>(i, j, n));
            let op = potrf_operand(n as i32, 1, 1, a.desc(&g));
            let outcome = ppotrf(&comm, &g, uplo, &op, &mut Array::new(&mut la)).unwrap();
            assert_eq!(outcome, Outcome::Served);
            let mut lb = b.local(&g, |i, j| entry::<f64>(i, j, 9));
            let ops = potrs_operands(n as i32, 1, (1, 1, a.desc(&g)), (1, 1, b.desc(&g)));
            comm.barrier().unwrap();
            comm.reset_stats();
            let (la, mut lb) = (Array::read_only(&la), Array::new(&mut lb));
            let outcome = ppotrs(&comm, &g, uplo, &ops, &la, &mut lb).unwrap();
            assert_eq!(outcome, Outcome::Served);
            comm.stats().words_sent
        });
        let total: u64 = words.iter().sum();
        // The lower triangle has N²/2 elements; a solve of one right-hand side moves O(N) per
        // step of its sweeps.
        assert!(
            total < (n * n / 8) as u64,
            "UPLO = {}: {total} words moved",
            uplo as char
        );
    }
}

#[test]
fn gesv_and_posv_factor_and_solve() {
    for (nprow, npcol) in [(1, 1), (2, 2), (2, 3)] {
        let n = 12;
        let a = Dist {
            m: n,
            n,
            mb: 3,
            nb: 3,
            src: (0, 0),
        };
        let b = Dist::columns(n, 2, 3);
        let ok = run_ranks(nprow * npcol, |comm| {
            let g = grid_of(&comm, nprow, npcol);
            let mut la = a.local(&g, |i, j| entry::<f64>(i, j, 11));
            let mut lb = b.local(&g, |i, j| entry::<f64>(i, j, 12));
            let mut ipiv = vec![0; a.layout(&g).local_shape(g.rank()).0 + 3];
            let ops = gesv_operands(n as i32, 2, (1, 1, a.desc(&g)), (1, 1, b.desc(&g)));
            assert_eq!(
                pgesv(
                    &comm,
                    &g,
                    &ops,
                    &mut Array::new(&mut la),
                    &mut ipiv,
                    &mut Array::new(&mut lb)
                )
                .unwrap(),
                Outcome::Served
            );
            let (x, _) = b.gather(&comm, &g, &lb);
            let gesv_ok = (0..2).all(|j| {
                (0..n).all(|i| {
                    let s: f64 = (0..n).map(|l| entry::<f64>(i, l, 11) * x[l + j * n]).sum();
                    (s - entry::<f64>(i, j, 12)).abs() < 1e-10
                })
            });
            let mut la = a.local(&g, |i, j| spd::<f64>(i, j, n));
            let mut lb = b.local(&g, |i, j| entry::<f64>(i, j, 12));
            let ops = potrs_operands(n as i32, 2, (1, 1, a.desc(&g)), (1, 1, b.desc(&g)));
            assert_eq!(
                pposv(
                    &comm,
                    &g,
                    b'L',
                    &ops,
                    &mut Array::new(&mut la),
                    &mut Array::new(&mut lb)
                )
                .unwrap(),
                Outcome::Served
            );
            let (x, _) = b.gather(&comm, &g, &lb);
            let posv_ok = (0..2).all(|j| {
                (0..n).all(|i| {
                    let s: f64 = (0..n).map(|l| spd::<f64>(i, l, n) * x[l + j * n]).sum();
                    (s - entry::<f64>(i, j, 12)).abs() < 1e-10
                })
            });
            gesv_ok && posv_ok
        });
        assert!(ok.iter().all(|&r| r));
    }
}

/// The `info` of `pgetrf` on every rank of a 2 × 2 grid when `spoil` changes this rank's
/// arguments.
fn getrf_info(
    spoil: impl Fn(usize, &mut [i32; 9], &mut (i32, i32, i32, i32)) + Sync,
) -> Vec<Outcome> {
    let a = Dist {
        m: 8,
        n: 8,
        mb: 2,
        nb: 2,
        src: (0, 0),
    };
    run_ranks(4, |comm| {
        let g = grid_of(&comm, 2, 2);
        let mut la = a.local(&g, |i, j| entry::<f64>(i, j, 1));
        let before = la.clone();
        let d = a.desc(&g);
        let mut raw = [d.dtype, d.ctxt, d.m, d.n, d.mb, d.nb, d.rsrc, d.csrc, d.lld];
        let mut mnij = (8, 8, 1, 1);
        spoil(comm.rank(), &mut raw, &mut mnij);
        let op = getrf_operand(mnij.0, mnij.1, mnij.2, mnij.3, Descriptor::from_9(&raw));
        let mut ipiv = vec![0; 8];
        let out = pgetrf(&comm, &g, &op, &mut Array::new(&mut la), &mut ipiv).unwrap();
        assert!(
            matches!(out, Outcome::Served) || la == before,
            "written despite {out:?}"
        );
        out
    })
}

#[test]
fn illegal_arguments_give_scalapacks_info_on_every_rank_and_write_nothing() {
    let info = |outs: Vec<Outcome>| {
        let first = outs[0];
        assert!(outs.iter().all(|&o| o == first), "{outs:?}");
        match first {
            Outcome::Illegal(p) => p.info(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(info(getrf_info(|_, _, a| *a = (6, 6, 2, 1))), -4); // ia not on a block boundary
    assert_eq!(info(getrf_info(|_, _, a| a.3 = 0)), -5);
    assert_eq!(info(getrf_info(|_, d, _| d[5] = 3)), -606); // mb ≠ nb
    assert_eq!(
        info(getrf_info(|r, d, _| if r == 3 {
            d[8] = 1
        })),
        -609
    ); // one rank's lld
    assert_eq!(
        info(getrf_info(|r, _, a| if r == 2 {
            a.0 = 6
        })),
        -1
    ); // M differs on one rank
    assert_eq!(info(getrf_info(|_, d, _| d[0] = 7)), -601);
    assert_eq!(info(getrf_info(|_, _, a| a.0 = 9)), -1); // ia + m − 1 > M_A
    assert_eq!(
        info(getrf_info(|r, d, a| {
            a.1 = -1;
            if r == 0 {
                d[6] = 5
            }
        })),
        -2
    ); // smallest wins
       // PBLAS numbers pdgemm's descriptor entries in the 11-entry form.
    let out = run_ranks(2, |comm| {
        let g = grid_of(&comm, 1, 2);
        let a = Dist {
            m: 2,
            n: 2,
            mb: 1,
            nb: 1,
            src: (0, 0),
        };
        let mut d = a.desc(&g);
        d.mb = 0;
        d.imb = 0;
        let args = GemmArgs {
            transa: b'N',
            transb: b'/',
            m: 1,
            n: 1,
            k: 1,
            a: (1, 1, d),
            b: (1, 1, a.desc(&g)),
            c: (1, 1, a.desc(&g)),
        };
        let x = a.local(&g, |i, j| entry::<f64>(i, j, 1));
        let mut c = x.clone();
        let first = pgemm(
            &comm,
            &g,
            &args,
            1.0,
            &Array::read_only(&x),
            &Array::read_only(&x),
            1.0,
            &mut Array::new(&mut c),
        )
        .unwrap();
        let args = GemmArgs {
            transb: b'N',
            ..args
        };
        let second = pgemm(
            &comm,
            &g,
            &args,
            1.0,
            &Array::read_only(&x),
            &Array::read_only(&x),
            1.0,
            &mut Array::new(&mut c),
        )
        .unwrap();
        (first, second, c == x)
    });
    for (first, second, untouched) in out {
        assert_eq!(first, Outcome::Illegal(redblue_scalapack::Position::arg(2)));
        assert_eq!(
            second.clone(),
            Outcome::Illegal(redblue_scalapack::Position::entry(10, 5))
        );
        assert!(untouched);
    }
}

/// `p?getrf` of an `m × n` submatrix starting at the second block of a `nprow × npcol` grid:
/// served, `P·A = L·U` in the caller's array with `min(m, n)` interchanges in `IPIV`, everything
/// outside the submatrix unchanged.
fn rect_lu_case<T: KernelScalar>(nprow: usize, npcol: usize, (m, n): (usize, usize), nb: usize) {
    let off = nb;
    let a = Dist {
        m: m + off + 2,
        n: n + off + 1,
        mb: nb,
        nb,
        src: (nprow - 1, 0),
    };
    let ok = run_ranks(nprow * npcol, |comm| {
        let g = grid_of(&comm, nprow, npcol);
        let mut la = a.local(&g, |i, j| entry::<T>(i, j, 5));
        let mut ipiv = vec![0i32; a.m + nb];
        let op = getrf_operand(
            m as i32,
            n as i32,
            off as i32 + 1,
            off as i32 + 1,
            a.desc(&g),
        );
        let out = pgetrf(&comm, &g, &op, &mut Array::new(&mut la), &mut ipiv).unwrap();
        assert_eq!(out, Outcome::Served);
        let (got, padding_kept) = a.gather(&comm, &g, &la);
        let full_ipiv =
            gather_ipiv(&comm, &g, &a, &ipiv).expect("IPIV the same in every process column");
        let k = m.min(n);
        padding_kept && check_lu(&a, off, (m, n), &got, &full_ipiv[off..off + k], 5)
    });
    assert!(
        ok.iter().all(|&r| r),
        "LU of {m}x{n} in blocks of {nb} on {nprow}x{npcol}"
    );
}

#[test]
fn rectangular_lu_is_served_in_the_callers_arrays() {
    rect_lu_case::<f64>(2, 2, (31, 12), 4);
    rect_lu_case::<f64>(2, 3, (12, 31), 3);
    rect_lu_case::<f32>(3, 1, (40, 9), 4);
    rect_lu_case::<c64>(1, 3, (9, 40), 4);
    rect_lu_case::<c32>(2, 2, (25, 18), 5);
}

#[test]
fn lus_singular_and_nan_cases_are_passed_on_untouched_cholesky_stops_at_a_nan() {
    let a = Dist {
        m: 6,
        n: 6,
        mb: 2,
        nb: 2,
        src: (0, 0),
    };
    for (what, value, m) in [
        (
            "singular",
            (|i: usize, _j: usize| if i == 3 { 0.0 } else { entry::<f64>(i, _j, 1) })
                as fn(usize, usize) -> f64,
            6,
        ),
        (
            "NaN",
            |i, j| {
                if (i, j) == (4, 1) {
                    f64::NAN
                } else {
                    entry::<f64>(i, j, 1)
                }
            },
            6,
        ),
    ] {
        let out = run_ranks(4, |comm| {
            let g = grid_of(&comm, 2, 2);
            let mut la = a.local(&g, value);
            let before = la.clone();
            let mut ipiv = vec![-5; 8];
            let op = getrf_operand(m, 6, 1, 1, a.desc(&g));
            let out = pgetrf(&comm, &g, &op, &mut Array::new(&mut la), &mut ipiv).unwrap();
            let same = la
                .iter()
                .zip(&before)
                .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()));
            (out, same && ipiv == vec![-5; 8])
        });
        for (o, untouched) in out {
            assert!(matches!(o, Outcome::PassOn(_)), "{what}: {o:?}");
            assert!(untouched, "{what}");
        }
    }
    // Cholesky does not look for NaN first, as ScaLAPACK's: the NaN at (4, 1) reaches the
    // diagonal of row 4, whose pivot stops it there (`info = 5`), as LAPACK's would.
    let out = run_ranks(2, |comm| {
        let g = grid_of(&comm, 2, 1);
        let nan_at_4_1 = |i, j| {
            if (i, j) == (4, 1) {
                f64::NAN
            } else {
                spd(i, j, 6)
            }
        };
        let mut la = a.local(&g, nan_at_4_1);
        let op = potrf_operand(6, 1, 1, a.desc(&g));
        ppotrf(&comm, &g, b'L', &op, &mut Array::new(&mut la)).unwrap()
    });
    assert!(out.iter().all(|o| *o == Outcome::Stopped(5)), "{out:?}");
}

/// A whole `n × n` matrix (`IA = JA = 1`) in arrays whose leading dimension is their local
/// rows (`tight`) or two more: this rank's local array of `f` and its descriptor.
fn whole_array<T: Scalar>(
    g: &BlacsGrid,
    n: usize,
    nb: usize,
    tight: bool,
    f: impl Fn(usize, usize) -> T,
) -> (Vec<T>, Descriptor) {
    let a = Dist::square(n, nb);
    let layout = a.layout(g);
    let (rows, cols) = layout.local_shape(g.rank());
    let lld = if tight { rows.max(1) } else { rows + 2 };
    let mut out = vec![T::from_f64_parts(SENTINEL, 0.0); lld * cols];
    for lj in 0..cols {
        for li in 0..rows {
            let (i, j) = layout.local_to_global(g.rank(), li, lj);
            out[li + lj * lld] = f(i, j);
        }
    }
    let desc = Descriptor::from_9(&[
        1, 0, n as i32, n as i32, nb as i32, nb as i32, 0, 0, lld as i32,
    ]);
    (out, desc)
}

/// The whole `n × n` matrix (blocks of `nb`) from every process's array `la` of leading
/// dimension `lld`, on every process.
fn gathered_square(
    comm: &ThreadComm,
    g: &BlacsGrid,
    n: usize,
    nb: usize,
    la: &[f64],
    lld: usize,
) -> Vec<f64> {
    let a = Dist::square(n, nb);
    let layout = a.layout(g);
    let (rows, cols) = layout.local_shape(g.rank());
    let mut local = vec![0.0; rows * cols];
    for lj in 0..cols {
        local[lj * rows..][..rows].copy_from_slice(&la[lj * lld..][..rows]);
    }
    let mut counts = vec![0usize; comm.size()];
    comm.all_gather(&[local.len()], &mut counts).unwrap();
    let mut all = vec![0.0; counts.iter().sum()];
    comm.all_gather_v(&local, &mut all, &counts).unwrap();
    let mut got = vec![0.0; n * n];
    let mut start = 0;
    for (r, &len) in counts.iter().enumerate() {
        let (rr, cc) = layout.local_shape(r);
        for lj in 0..cc {
            for li in 0..rr {
                let (i, j) = layout.local_to_global(r, li, lj);
                got[i + j * n] = all[start + li + lj * rr];
            }
        }
        start += len;
    }
    got
}

/// `p?posv` of the `n × n` matrix `f` (blocks of `nb`, in a whole array, `tight` or padded) and
/// two right-hand sides: its outcome and the first entry of this process's array after it; the
/// right-hand sides must come back untouched.
fn posv_not_positive_definite(
    comm: &ThreadComm,
    g: &BlacsGrid,
    (n, nb): (usize, usize),
    tight: bool,
    f: &impl Fn(usize, usize) -> f64,
) -> (Outcome, f64) {
    let rhs = Dist::columns(n, 2, nb);
    let (mut la, desc) = whole_array(g, n, nb, tight, f);
    let mut lb = rhs.local(g, |i, j| entry::<f64>(i, j, 12));
    let b0 = lb.clone();
    let ops = potrs_operands(n as i32, 2, (1, 1, desc), (1, 1, rhs.desc(g)));
    let b_array = &mut Array::new(&mut lb);
    let out = pposv(comm, g, b'L', &ops, &mut Array::new(&mut la), b_array).unwrap();
    assert_eq!(lb, b0, "posv: B written");
    (out, la[0])
}

#[test]
fn cholesky_is_factored_in_the_callers_own_array_and_a_failing_column_is_its_info() {
    let (n, nb) = (24, 4);
    for (nprow, npcol) in [(1, 2), (2, 1), (2, 2), (1, 1), (2, 3)] {
        for tight in [true, false] {
            // Positive definite: the factor, the upper triangle (NaN) untouched.
            let value = |i: usize, j: usize| if i < j { f64::NAN } else { spd::<f64>(i, j, n) };
            let ok = run_ranks(nprow * npcol, |comm| {
                let g = grid_of(&comm, nprow, npcol);
                let (mut la, desc) = whole_array(&g, n, nb, tight, value);
                let op = potrf_operand(n as i32, 1, 1, desc);
                let out = ppotrf(&comm, &g, b'L', &op, &mut Array::new(&mut la)).unwrap();
                let got = gathered_square(&comm, &g, n, nb, &la, desc.lld as usize);
                out == Outcome::Served && factor_ok(&got, n, 0, n, b'L', &value)
            });
            assert!(ok.iter().all(|&k| k), "{nprow}x{npcol} tight {tight}");

            // Not positive definite at column 9: info 10 on every rank. In the caller's own
            // array (tight; a 2D grid's processes renumbered column-major, the plan's order)
            // the columns before it are factored, as ScaLAPACK leaves them: the first diagonal
            // entry is its square root; in a copy nothing is written.
            let bad = 9;
            let not_pd = |i: usize, j: usize| {
                if (i, j) == (bad, bad) {
                    -1.0
                } else {
                    value(i, j)
                }
            };
            // `p?posv` alike: the same info, in the caller's array when it is the
            // factorisation's own, the right-hand sides untouched.
            let out = run_ranks(nprow * npcol, |comm| {
                let g = grid_of(&comm, nprow, npcol);
                let (mut la, desc) = whole_array(&g, n, nb, tight, not_pd);
                let op = potrf_operand(n as i32, 1, 1, desc);
                let out = ppotrf(&comm, &g, b'L', &op, &mut Array::new(&mut la)).unwrap();
                let (posv, first) = posv_not_positive_definite(&comm, &g, (n, nb), tight, &not_pd);
                assert_eq!(posv, out, "posv {nprow}x{npcol} {tight}");
                assert_eq!(
                    first.to_bits(),
                    la[0].to_bits(),
                    "posv {nprow}x{npcol} {tight}"
                );
                (out, (g.rank() == 0).then(|| la[0]))
            });
            let in_place = tight;
            for (o, first) in out {
                assert_eq!(
                    o,
                    Outcome::Stopped(bad as i32 + 1),
                    "{nprow}x{npcol} {tight}"
                );
                if let Some(x) = first {
                    let want = if in_place {
                        (2.0 * n as f64).sqrt()
                    } else {
                        2.0 * n as f64
                    };
                    assert!(
                        (x - want).abs() < 1e-12,
                        "{nprow}x{npcol} tight {tight}: {x}"
                    );
                }
            }
        }
    }
}
