//! Narrow products `C = accum(C) + alpha·A·B` with few columns (`B` is `k × n`, `n ≤ 16`):
//! the shape of a triangular solve's updates with a handful of right-hand sides. Read straight
//! from `A`'s columns, without the packed copy of `A` a general kernel makes, which costs as
//! much as the product when only `n` columns use it.
//!
//! The f64 kernel works on `24 × 8` tiles of `C` in AVX-512 registers (three vectors of `A`
//! and a broadcast of `B` per multiply-add step), reading each `24 × k` strip of `A` once for
//! the first eight columns (and from L1 for the next eight) and fetching the strip a few ahead
//! as it goes: `A`'s columns are `k` separate streams that the hardware prefetcher does not
//! follow far enough. One core of a Zen 5, `C(4096 × 16) += A(4096 × 64)·B(64 × 16)` over
//! 32 column blocks of a `4096 × 2048` factor: 62–65 GFLOP/s, the general kernel 50–53 and
//! without the prefetch 45. The other scalars, other CPUs and other shapes take the general
//! path ([`Narrow::narrow_matmul`] answers "not taken").

use crate::Par;
use faer::prelude::ReborrowMut;
use faer::{Accum, Conj};

/// At most this many columns of `C` make a product narrow.
pub(crate) const NARROW_COLS: usize = 16;

/// The per-scalar narrow product: "not taken" (`false`) by default; f64 implements it.
pub trait Narrow: Sized {
    /// `dst = accum(dst) + alpha·lhs·rhs` when the product is narrow and this scalar has a
    /// narrow kernel for the running CPU; `false` (nothing written) otherwise. Callers have
    /// checked the shapes.
    #[allow(unused_variables)]
    fn narrow_matmul(
        dst: faer::MatMut<'_, Self>,
        accum: Accum,
        lhs: (faer::MatRef<'_, Self>, Conj),
        rhs: (faer::MatRef<'_, Self>, Conj),
        alpha: Self,
        par: Par,
    ) -> bool {
        false
    }
}

impl Narrow for f32 {}
impl Narrow for redblue_core::Complex<f32> {}
impl Narrow for redblue_core::Complex<f64> {}

/// Rows of `C` in a tile of the f64 kernel (three AVX-512 vectors).
const TILE_ROWS: usize = 24;

/// Whether the f64 kernel takes a product of `m × n` (depth `k`) with these strides: narrow,
/// tall enough to pay for itself, `A` and `C` column-major (row stride 1), one thread, an
/// AVX-512 CPU.
fn takes(m: usize, n: usize, k: usize, unit_rows: bool, par: Par) -> bool {
    (1..=NARROW_COLS).contains(&n)
        && m >= 2 * TILE_ROWS
        && k >= 8
        && unit_rows
        && par.degree() == 1
        && crate::simd::isa() == crate::simd::Isa::V4
}

impl Narrow for f64 {
    fn narrow_matmul(
        mut dst: faer::MatMut<'_, f64>,
        accum: Accum,
        (lhs, _): (faer::MatRef<'_, f64>, Conj),
        (rhs, _): (faer::MatRef<'_, f64>, Conj),
        alpha: f64,
        par: Par,
    ) -> bool {
        let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.ncols());
        let unit_rows = lhs.row_stride() == 1 && dst.row_stride() == 1;
        if !takes(m, n, k, unit_rows, par) {
            return false;
        }
        let tiled = m / TILE_ROWS * TILE_ROWS;
        #[cfg(target_arch = "x86_64")]
        {
            let strides = |s: isize| usize::try_from(s).ok();
            let (Some(lda), Some(ldc), Some(rsb), Some(csb)) = (
                strides(lhs.col_stride()),
                strides(dst.col_stride()),
                strides(rhs.row_stride()),
                strides(rhs.col_stride()),
            ) else {
                return false;
            };
            let add = accum == Accum::Add;
            // SAFETY: `takes` checked AVX-512 on the running CPU; the views are live with the
            // shapes and non-negative strides passed (`A` is `m × k`, `B` is `k × n`, `C` is
            // `m × n`, the first two with row stride 1), `C` borrowed mutably, and the kernel
            // reads and writes only rows `..tiled` of them.
            unsafe {
                x86::tiles_v4(
                    (tiled, n, k),
                    (lhs.as_ptr(), lda),
                    (rhs.as_ptr(), rsb, csb),
                    (dst.rb_mut().as_ptr_mut(), ldc),
                    alpha,
                    add,
                );
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        return false;
        #[cfg(test)]
        TAKEN.with(|t| t.set(t.get() + 1));
        // The last `m mod 24` rows by the general small-product kernel.
        if tiled < m {
            faer::linalg::matmul::matmul(
                dst.subrows_mut(tiled, m - tiled),
                accum,
                lhs.subrows(tiled, m - tiled),
                rhs,
                alpha,
                faer::Par::Seq,
            );
        }
        true
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// How far ahead (in rows of `A`) the strip is fetched: eight strips.
    const AHEAD: usize = 8 * super::TILE_ROWS;

    /// `C = accum(C) + alpha·A·B` for `m` a multiple of 24: every `24 × 8` tile of `C`, then
    /// the last `n mod 8` columns by tiles of 4, 2 and 1 columns.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `a` (`m × k`, column stride `lda`), `b` (`k × n`, strides `rsb`,
    /// `csb`) and `c` (`m × n`, column stride `ldc`) are valid for those shapes, `c` for
    /// writes and not overlapping the others.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
    pub(super) unsafe fn tiles_v4(
        (m, n, k): (usize, usize, usize),
        (a, lda): (*const f64, usize),
        b: (*const f64, usize, usize),
        (c, ldc): (*mut f64, usize),
        alpha: f64,
        add: bool,
    ) {
        let csb = b.2;
        for i in (0..m).step_by(super::TILE_ROWS) {
            // SAFETY: the tile's rows `i..i + 24` and columns `j..j + W` lie inside `A`, `B`
            // and `C`; a strip's first tile fetches ahead.
            let tile = |j: usize| Tile {
                k,
                a: unsafe { (a.add(i), lda) },
                b: unsafe { (b.0.add(j * csb), b.1, csb) },
                c: unsafe { (c.add(i + j * ldc), ldc) },
                alpha,
                add,
                ahead: j == 0,
            };
            let mut j = 0;
            while j + 8 <= n {
                // SAFETY: as above.
                unsafe { tile(j).run::<8>() };
                j += 8;
            }
            // SAFETY: as above.
            unsafe {
                if j + 4 <= n {
                    tile(j).run::<4>();
                    j += 4;
                }
                if j + 2 <= n {
                    tile(j).run::<2>();
                    j += 2;
                }
                if j < n {
                    tile(j).run::<1>();
                }
            }
        }
    }

    /// One `24 × W` tile of `C`: `C = accum(C) + alpha·A(24 × k)·B(k × W)`, fetching the
    /// strip `AHEAD` rows below into the cache when `ahead`.
    struct Tile {
        k: usize,
        a: (*const f64, usize),
        b: (*const f64, usize, usize),
        c: (*mut f64, usize),
        alpha: f64,
        add: bool,
        ahead: bool,
    }

    impl Tile {
        /// # Safety
        /// As [`tiles_v4`], for the tile's rows and columns; called from it (AVX-512).
        #[inline(always)]
        unsafe fn run<const W: usize>(&self) {
            let ((a, lda), (b, rsb, csb), (c, ldc)) = (self.a, self.b, self.c);
            // SAFETY: as the function's contract.
            unsafe {
                let mut acc = [[_mm512_setzero_pd(); 3]; W];
                for p in 0..self.k {
                    let ap = a.add(p * lda);
                    let a0 = _mm512_loadu_pd(ap);
                    let a1 = _mm512_loadu_pd(ap.add(8));
                    let a2 = _mm512_loadu_pd(ap.add(16));
                    if self.ahead {
                        // A hint only: an address past the matrix is never read.
                        let next = ap.wrapping_add(AHEAD).cast::<i8>();
                        _mm_prefetch::<_MM_HINT_T0>(next);
                        _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(64));
                        _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(128));
                    }
                    let bp = b.add(p * rsb);
                    for (jj, acc) in acc.iter_mut().enumerate() {
                        let bb = _mm512_set1_pd(*bp.add(jj * csb));
                        acc[0] = _mm512_fmadd_pd(a0, bb, acc[0]);
                        acc[1] = _mm512_fmadd_pd(a1, bb, acc[1]);
                        acc[2] = _mm512_fmadd_pd(a2, bb, acc[2]);
                    }
                }
                let alpha = _mm512_set1_pd(self.alpha);
                for (jj, acc) in acc.iter().enumerate() {
                    let cp = c.add(jj * ldc);
                    for (q, &v) in acc.iter().enumerate() {
                        let v = _mm512_mul_pd(alpha, v);
                        let out = match self.add {
                            true => _mm512_add_pd(_mm512_loadu_pd(cp.add(8 * q)), v),
                            false => v,
                        };
                        _mm512_storeu_pd(cp.add(8 * q), out);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Products the narrow kernel took on this thread (tests run one per thread).
    static TAKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gemm, reference, Mat, MatRef};
    use redblue_core::Op;

    fn taken() -> u64 {
        TAKEN.with(|t| t.get())
    }

    fn value(i: usize, j: usize, s: f64) -> f64 {
        ((i * 7 + j * 13) as f64 * 0.37 + s).sin()
    }

    /// Every narrow width, heights around the tile's, depths, a leading dimension larger than
    /// the rows, `B` transposed, `alpha`, and `beta` 0 (a NaN in `C` not read), 1 and other:
    /// the result within rounding of the reference's, by the narrow kernel on an AVX-512 CPU.
    #[test]
    fn narrow_products_equal_the_reference_and_are_taken_on_avx512() {
        let v4 = crate::simd::isa() == crate::simd::Isa::V4;
        for &(m, k) in &[(48, 8), (49, 9), (71, 64), (100, 33), (240, 64), (263, 17)] {
            for n in 1..=NARROW_COLS {
                for (op_b, beta, alpha) in [
                    (Op::NoTrans, 0.0, 1.0),
                    (Op::NoTrans, 1.0, -1.0),
                    (Op::Trans, 0.5, 2.0),
                ] {
                    let lda = m + 3;
                    let a_data: Vec<f64> =
                        (0..lda * k).map(|x| value(x % lda, x / lda, 0.1)).collect();
                    let a = MatRef::from_slice(&a_data, m, k, lda).unwrap();
                    let b = match op_b {
                        Op::NoTrans => Mat::from_fn(k, n, |i, j| value(i, j, 0.7)),
                        _ => Mat::from_fn(n, k, |i, j| value(j, i, 0.7)),
                    };
                    let fill = if beta == 0.0 { f64::NAN } else { 0.25 };
                    let mut c = Mat::from_fn(m, n, |i, j| fill * value(i, j, 0.3));
                    let mut want = Mat::from_fn(m, n, |i, j| fill * value(i, j, 0.3));
                    let before = taken();
                    let (b, nt) = (b.as_ref(), Op::NoTrans);
                    gemm(alpha, a, nt, b, op_b, beta, c.as_mut(), Par::Seq).unwrap();
                    reference::gemm(alpha, a, nt, b, op_b, beta, want.as_mut()).unwrap();
                    for i in 0..m {
                        for j in 0..n {
                            let (x, y) = (c[(i, j)], want[(i, j)]);
                            let close = (x - y).abs() <= 1e-12 * (1.0 + y.abs());
                            assert!(close, "{m}×{n}×{k} ({i}, {j}): {x} against {y}");
                        }
                    }
                    assert_eq!(taken() > before, v4, "{m}×{n}×{k}");
                }
            }
        }
    }

    /// Too wide, too short, shallow, threaded, `A` transposed: the general path.
    #[test]
    fn other_products_are_not_taken() {
        let nt = Op::NoTrans;
        let before = taken();
        for (m, n, k, op_a, par) in [
            (64, 17, 16, nt, Par::Seq),
            (47, 8, 16, nt, Par::Seq),
            (64, 8, 7, nt, Par::Seq),
            (64, 8, 16, nt, Par::Threads(2)),
            (64, 8, 16, Op::Trans, Par::Seq),
        ] {
            let a = match op_a {
                Op::NoTrans => Mat::from_fn(m, k, |i, j| value(i, j, 0.1)),
                _ => Mat::from_fn(k, m, |i, j| value(j, i, 0.1)),
            };
            let b = Mat::from_fn(k, n, |i, j| value(i, j, 0.2));
            let mut c = Mat::<f64>::zeros(m, n);
            let mut want = Mat::<f64>::zeros(m, n);
            gemm(1.0, a.as_ref(), op_a, b.as_ref(), nt, 0.0, c.as_mut(), par).unwrap();
            reference::gemm(1.0, a.as_ref(), op_a, b.as_ref(), nt, 0.0, want.as_mut()).unwrap();
            assert!((0..m).all(|i| (0..n).all(|j| (c[(i, j)] - want[(i, j)]).abs() < 1e-12)));
        }
        assert_eq!(taken(), before);
    }
}
