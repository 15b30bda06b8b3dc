//! Narrow products `C = accum(C) + alpha·A·B` — tall ones with few columns (`C` is `m × n`,
//! `n ≤ 16`) and short, wide ones with few rows (`m ≤ 16`): the shapes of a triangular solve's
//! updates with a handful of right-hand sides, straight and transposed. The large operand is
//! read where it is, without the packed copy a general kernel makes, which costs as much as
//! the product when only 16 columns (or rows) use it.
//!
//! f64 on an AVX-512 CPU only. A tall product works on `24 × 8` tiles of `C` in registers
//! (three vectors of `A`'s column and a broadcast of `B` per multiply-add step), reading each
//! `24 × k` strip of `A` for the first eight columns and again (mostly from the cache) for the
//! next eight, and fetching the strip eight ahead as it goes: `A`'s `k` columns are separate
//! streams the hardware prefetcher does not follow far enough. A wide product works on
//! `16 × 12` tiles (`A`'s 16 rows packed, two masked vectors; `B`'s columns broadcast, each
//! read in order), fetching the columns two tiles ahead. One core of a Zen 5,
//! `C(4096 × 16) += A(4096 × 64)·B(64 × 16)` over the 32 column blocks of a `4096 × 2048`
//! factor: 60–63 GFLOP/s against the `gemm` crate's 50–53 (45 without fetching ahead; 69–74
//! with a leading dimension of 4080, whose strips' columns do not share the cache's sets as
//! 4096's do). Other scalars, CPUs and shapes take the general
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

/// Whether `C` (`m × n`, depth `k`) is tall and narrow — at most 16 columns, at least two
/// tiles of rows — or short and wide — at most 16 rows, at least two tiles of columns (the
/// transposed form a solve multiplies in).
fn shape(m: usize, n: usize, k: usize) -> Option<Shape> {
    if k < 8 {
        None
    } else if (1..=NARROW_COLS).contains(&n) && m >= 2 * TILE_ROWS {
        Some(Shape::Tall)
    } else if (1..=NARROW_COLS).contains(&m) && n >= 2 * TILE_COLS {
        Some(Shape::Wide)
    } else {
        None
    }
}

/// The two shapes the f64 kernel takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    Tall,
    Wide,
}

/// Columns of `C` in a tile of a short, wide product (rows: at most 16, two vectors).
const TILE_COLS: usize = 12;

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
        let Some(shape) = shape(m, n, k) else {
            return false;
        };
        // `A` (tall) or `B` (wide) and `C` column-major, one thread, an AVX-512 CPU.
        let read = match shape {
            Shape::Tall => lhs.row_stride(),
            Shape::Wide => rhs.row_stride(),
        };
        if read != 1
            || dst.row_stride() != 1
            || par.degree() != 1
            || crate::simd::isa() != crate::simd::Isa::V4
        {
            return false;
        }
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
            match shape {
                Shape::Tall => {
                    let tiled = m / TILE_ROWS * TILE_ROWS;
                    // SAFETY: AVX-512 checked above; the views are live with the shapes and
                    // non-negative strides passed (`A` is `m × k`, `B` is `k × n`, `C` is
                    // `m × n`, `A` and `C` with row stride 1), `C` borrowed mutably, and the
                    // kernel reads and writes only rows `..tiled` of `A` and `C`.
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
                }
                Shape::Wide => {
                    // `A`'s columns of 16 rows (zeros below its `m`), one after the other.
                    let mut packed = vec![0.0; 16 * k];
                    for (p, column) in packed.chunks_exact_mut(16).enumerate() {
                        for (i, x) in column.iter_mut().take(m).enumerate() {
                            *x = lhs[(i, p)];
                        }
                    }
                    // SAFETY: AVX-512 checked above; `packed` is `16 × k` contiguous, `B` is
                    // `k × n` with row stride 1 and `C` is `m × n` with row stride 1, live, `C`
                    // borrowed mutably; the kernel writes only `C`'s `m` rows.
                    unsafe {
                        x86::wide_v4(
                            (m, n, k),
                            packed.as_ptr(),
                            (rhs.as_ptr(), csb),
                            (dst.rb_mut().as_ptr_mut(), ldc),
                            alpha,
                            add,
                        );
                    }
                }
            }
            #[cfg(test)]
            TAKEN.with(|t| t.set(t.get() + 1));
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
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

    /// How far ahead (in columns of `B`) a short, wide product fetches: two tiles.
    const AHEAD_COLS: usize = 2 * super::TILE_COLS;

    /// `C = accum(C) + alpha·A·B` for `C` `m × n` with `m ≤ 16`: every `m × 12` tile of `C`,
    /// then the last `n mod 12` columns by tiles of 8, 4, 2 and 1 columns.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `a` is `16 × k` contiguous, `b` (`k × n`, row stride 1, column
    /// stride `ldb`) and `c` (`m × n`, row stride 1, column stride `ldc`) are valid for those
    /// shapes, `c` for writes and not overlapping the others; `m ≤ 16`.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
    pub(super) unsafe fn wide_v4(
        (m, n, k): (usize, usize, usize),
        a: *const f64,
        (b, ldb): (*const f64, usize),
        (c, ldc): (*mut f64, usize),
        alpha: f64,
        add: bool,
    ) {
        let masks = [
            ((1u16 << m.min(8)) - 1) as u8,
            ((1u16 << m.saturating_sub(8).min(8)) - 1) as u8,
        ];
        // SAFETY: the tile's columns `j..j + W` lie inside `B` and `C`.
        let tile = |j: usize| Wide {
            k,
            a,
            b: (unsafe { b.add(j * ldb) }, ldb),
            c: (unsafe { c.add(j * ldc) }, ldc),
            masks,
            alpha,
            add,
        };
        let mut j = 0;
        while j + super::TILE_COLS <= n {
            // SAFETY: as above.
            unsafe { tile(j).run::<{ super::TILE_COLS }>() };
            j += super::TILE_COLS;
        }
        // SAFETY: as above.
        unsafe {
            if j + 8 <= n {
                tile(j).run::<8>();
                j += 8;
            }
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

    /// One `m × W` tile of a short, wide `C` (`m ≤ 16`, two masked vectors a column):
    /// `C = accum(C) + alpha·A(16 × k)·B(k × W)`, fetching the columns of `B` `AHEAD_COLS`
    /// to the right into the cache.
    struct Wide {
        k: usize,
        a: *const f64,
        b: (*const f64, usize),
        c: (*mut f64, usize),
        masks: [u8; 2],
        alpha: f64,
        add: bool,
    }

    impl Wide {
        /// # Safety
        /// As [`wide_v4`], for the tile's columns; called from it (AVX-512).
        #[inline(always)]
        unsafe fn run<const W: usize>(&self) {
            let ((b, ldb), (c, ldc)) = (self.b, self.c);
            // SAFETY: as the function's contract.
            unsafe {
                let mut acc = [[_mm512_setzero_pd(); 2]; W];
                for p in 0..self.k {
                    let ap = self.a.add(16 * p);
                    let a0 = _mm512_loadu_pd(ap);
                    let a1 = _mm512_loadu_pd(ap.add(8));
                    if p % 8 == 0 {
                        // A hint only: an address past the matrix is never read.
                        let next = b.wrapping_add(AHEAD_COLS * ldb + p);
                        for jj in 0..W {
                            _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(jj * ldb).cast::<i8>());
                        }
                    }
                    for (jj, acc) in acc.iter_mut().enumerate() {
                        let bb = _mm512_set1_pd(*b.add(p + jj * ldb));
                        acc[0] = _mm512_fmadd_pd(a0, bb, acc[0]);
                        acc[1] = _mm512_fmadd_pd(a1, bb, acc[1]);
                    }
                }
                let alpha = _mm512_set1_pd(self.alpha);
                for (jj, acc) in acc.iter().enumerate() {
                    let cp = c.add(jj * ldc);
                    for (q, (&v, &mask)) in acc.iter().zip(&self.masks).enumerate() {
                        if mask == 0 {
                            continue;
                        }
                        let v = _mm512_mul_pd(alpha, v);
                        let out = match self.add {
                            true => _mm512_add_pd(_mm512_maskz_loadu_pd(mask, cp.add(8 * q)), v),
                            false => v,
                        };
                        _mm512_mask_storeu_pd(cp.add(8 * q), mask, out);
                    }
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

    /// Short, wide products (at most 16 rows: a solve's transposed form): every height,
    /// widths around the tile's, `A` transposed (as the solve passes it) or not, `B` with a
    /// leading dimension larger than its rows, and `beta` 0, 1 and other.
    #[test]
    fn short_wide_products_equal_the_reference_and_are_taken_on_avx512() {
        let v4 = crate::simd::isa() == crate::simd::Isa::V4;
        for m in 1..=16 {
            for &(n, k) in &[(24, 8), (25, 64), (37, 9), (100, 65), (263, 33)] {
                for (op_a, beta, alpha) in [
                    (Op::Trans, 0.0, 1.0),
                    (Op::NoTrans, 1.0, -1.0),
                    (Op::Trans, 0.5, 2.0),
                ] {
                    let a = match op_a {
                        Op::NoTrans => Mat::from_fn(m, k, |i, j| value(i, j, 0.1)),
                        _ => Mat::from_fn(k, m, |i, j| value(j, i, 0.1)),
                    };
                    let ldb = k + 5;
                    let b_data: Vec<f64> =
                        (0..ldb * n).map(|x| value(x % ldb, x / ldb, 0.7)).collect();
                    let b = MatRef::from_slice(&b_data, k, n, ldb).unwrap();
                    let fill = if beta == 0.0 { f64::NAN } else { 0.25 };
                    let mut c = Mat::from_fn(m, n, |i, j| fill * value(i, j, 0.3));
                    let mut want = Mat::from_fn(m, n, |i, j| fill * value(i, j, 0.3));
                    let before = taken();
                    let (a, nt) = (a.as_ref(), Op::NoTrans);
                    gemm(alpha, a, op_a, b, nt, beta, c.as_mut(), Par::Seq).unwrap();
                    reference::gemm(alpha, a, op_a, b, nt, beta, want.as_mut()).unwrap();
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

    /// Too wide, too short, shallow, threaded, the streamed operand transposed: the general
    /// path.
    #[test]
    fn other_products_are_not_taken() {
        let nt = Op::NoTrans;
        let before = taken();
        let tr = Op::Trans;
        for (m, n, k, op_a, op_b, par) in [
            (64, 17, 16, nt, nt, Par::Seq),
            (47, 8, 16, nt, nt, Par::Seq),
            (64, 8, 7, nt, nt, Par::Seq),
            (64, 8, 16, nt, nt, Par::Threads(2)),
            (64, 8, 16, tr, nt, Par::Seq),
            (17, 40, 16, nt, nt, Par::Seq),
            (16, 23, 16, nt, nt, Par::Seq),
            (16, 40, 16, nt, tr, Par::Seq),
        ] {
            let a = match op_a {
                Op::NoTrans => Mat::from_fn(m, k, |i, j| value(i, j, 0.1)),
                _ => Mat::from_fn(k, m, |i, j| value(j, i, 0.1)),
            };
            let b = match op_b {
                Op::NoTrans => Mat::from_fn(k, n, |i, j| value(i, j, 0.2)),
                _ => Mat::from_fn(n, k, |i, j| value(j, i, 0.2)),
            };
            let mut c = Mat::<f64>::zeros(m, n);
            let mut want = Mat::<f64>::zeros(m, n);
            let (a, b) = (a.as_ref(), b.as_ref());
            gemm(1.0, a, op_a, b, op_b, 0.0, c.as_mut(), par).unwrap();
            reference::gemm(1.0, a, op_a, b, op_b, 0.0, want.as_mut()).unwrap();
            assert!((0..m).all(|i| (0..n).all(|j| (c[(i, j)] - want[(i, j)]).abs() < 1e-12)));
        }
        assert_eq!(taken(), before);
    }
}
