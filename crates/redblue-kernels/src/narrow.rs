//! Narrow products `C = accum(C) + alpha·A·B` — tall ones with few columns (`C` is `m × n`,
//! `n ≤ 16`) and short, wide ones with few rows (`m ≤ 16`): the shapes of a triangular solve's
//! updates with a handful of right-hand sides, straight and transposed. The large operand is
//! read where it is, without the packed copy a general kernel makes, which costs as much as
//! the product when only 16 columns (or rows) use it.
//!
//! f32 and f64 on CPUs with AVX-512 or AVX2 + FMA. A tall product works on tiles of `C` in
//! registers, a column of `A` in vectors and a broadcast of `B` per multiply-add step
//! (`24 × 8` tiles for f64 on AVX-512, `48 × 8` for f32: three vectors; `8 × 6` and `16 × 6` on
//! AVX2: two — three vectors by four columns left one accumulator on the stack, a chain of
//! stores and loads in every step), each strip of `A` read for the first tile of columns and
//! again for the next. On AVX-512 the strips are read where they are, the strip eight below
//! fetched into the cache as it goes: `A`'s `k` columns are separate streams the hardware
//! prefetcher does not follow far enough. On AVX2 blocks of 16 strips and 64 columns are copied
//! first, column by column (runs of 128 or 256 rows), and the tiles read the copy: a strip's
//! columns `lda` apart can fall in one set of the caches (`lda = 4096`), which then did not keep
//! them for the next tile (one Zen 3 core, f64, the product below: 12–13 GFLOP/s before, 15–19
//! after, OpenBLAS 20–23; f32 27–29 before, 28–31 after). A wide product works
//! on tiles of 16 (or 8) rows and 12, 24 or 6 columns (`A`'s rows packed, `B`'s columns
//! broadcast, each read in order), fetching the columns two tiles to the right. One core of a
//! Zen 5, f64, `C(4096 × 16) += A(4096 × 64)·B(64 × 16)` over the 32 column blocks of a
//! `4096 × 2048` factor: 61–64 GFLOP/s against the `gemm` crate's 51–53 (45 without fetching
//! ahead; 75–78 with a leading dimension of 4080, whose strips' columns do not share the
//! cache's sets as 4096's do); f32 132–135 against 109–112 (the kernels page of the book).
//! There they are asked before a system BLAS too: OpenBLAS ran the same tall product at 46–47
//! GFLOP/s (71–75 here) and the wide one, `C(16 × 4096) += Xᵀ·A(64 × 4096)`, at 31–33 (116
//! here). On AVX2 CPUs a system BLAS goes first ([`before_system_blas`]).
//! Complex scalars, other CPUs, threaded calls and other shapes take the general path
//! ([`Narrow::narrow_matmul`] answers "not taken").

use crate::simd::{isa, Isa};
use crate::{KernelScalar, Par};
use faer::prelude::ReborrowMut;
use faer::{Accum, Conj};

/// Whether the narrow kernels go before a system BLAS on this CPU: on AVX-512 ones, where
/// OpenBLAS ran a solve's narrow products at a third to two thirds of their speed (Zen 5); not
/// on AVX2 ones, where it ran the tall product `C(4096 × 16) += A(4096 × 64)·B(64 × 16)` of a
/// `4096 × 2048` factor at 20–24 GFLOP/s against their 13–15, 15–19 since they copy blocks of
/// `A` first (Zen 3: the 64 columns of a strip of `A`, 32 KiB apart, fall in one set of the
/// caches, and fetching ahead did not help), and ScaLAPACK's 1 × 2 solves through the library
/// ran about 1.3 times faster with OpenBLAS taking them (the kernels page of the book). Without
/// a system BLAS they are always asked: the `gemm` crate and faer were slower still.
pub(crate) fn before_system_blas() -> bool {
    isa() == Isa::V4
}

/// At most this many columns (tall) or rows (wide) of `C` make a product narrow.
pub(crate) const NARROW_COLS: usize = 16;

/// The per-scalar narrow product: "not taken" (`false`) by default; f32 and f64 implement it.
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

impl Narrow for redblue_core::Complex<f32> {}
impl Narrow for redblue_core::Complex<f64> {}

/// A tall kernel: `C = accum(C) + alpha·A·B` for `m` a multiple of its tile's rows (`C` and
/// `A` column-major: `(m, n, k)`, `A` and its column stride, `B` and its row and column
/// strides, `C` and its column stride, `alpha`, whether to add to `C`).
type TallFn<T> = unsafe fn(
    (usize, usize, usize),
    (*const T, usize),
    (*const T, usize, usize),
    (*mut T, usize),
    T,
    bool,
);

/// Tiles of columns a wide product does with every block of rows before the next ones, when
/// `C` has more rows than the kernel's tile (f64 on AVX2: 16 right-hand sides are two blocks of
/// 8): `B`'s columns read from memory once, not once per block. (1, 2 and 4 tiles alike within
/// the noise through a preloaded `pdpotrs_`, all 5–10 % faster than a block after the other.)
const WIDE_CHUNK_TILES: usize = 2;

/// A wide kernel: the same for `m` at most its tile's rows, `A` packed (`rows × k`
/// contiguous, zeros below `m`) and `B` column-major (its column stride).
type WideFn<T> =
    unsafe fn((usize, usize, usize), *const T, (*const T, usize), (*mut T, usize), T, bool);

/// One scalar's narrow kernels on one CPU, and their tiles' geometry.
struct Kernels<T> {
    /// Rows of a tall tile.
    tall_rows: usize,
    /// Rows a wide kernel takes at once (its packed `A`'s height).
    wide_rows: usize,
    /// Columns of a wide tile.
    wide_cols: usize,
    tall: TallFn<T>,
    wide: WideFn<T>,
}

/// The two shapes the kernels take.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    Tall,
    Wide,
}

/// Whether `C` (`m × n`, depth `k`) is tall and narrow — at most 16 columns, at least two
/// tiles of rows — or short and wide — at most 16 rows, at least two tiles of columns.
fn shape<T>(kernels: &Kernels<T>, m: usize, n: usize, k: usize) -> Option<Shape> {
    if k < 8 {
        None
    } else if (1..=NARROW_COLS).contains(&n) && m >= 2 * kernels.tall_rows {
        Some(Shape::Tall)
    } else if (1..=NARROW_COLS).contains(&m) && n >= 2 * kernels.wide_cols {
        Some(Shape::Wide)
    } else {
        None
    }
}

/// The narrow product with `kernels` (none: not taken): `A` (tall) or `B` (wide) and `C`
/// column-major, one thread.
fn narrow_with<T: KernelScalar>(
    kernels: Option<Kernels<T>>,
    mut dst: faer::MatMut<'_, T>,
    accum: Accum,
    lhs: faer::MatRef<'_, T>,
    rhs: faer::MatRef<'_, T>,
    alpha: T,
    par: Par,
) -> bool {
    let Some(kernels) = kernels else {
        return false;
    };
    let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.ncols());
    let Some(shape) = shape(&kernels, m, n, k) else {
        return false;
    };
    let read = match shape {
        Shape::Tall => lhs.row_stride(),
        Shape::Wide => rhs.row_stride(),
    };
    let strides = |s: isize| usize::try_from(s).ok();
    let (Some(lda), Some(ldc), Some(rsb), Some(csb)) = (
        strides(lhs.col_stride()),
        strides(dst.col_stride()),
        strides(rhs.row_stride()),
        strides(rhs.col_stride()),
    ) else {
        return false;
    };
    if read != 1 || dst.row_stride() != 1 || par.degree() != 1 {
        return false;
    }
    let add = accum == Accum::Add;
    match shape {
        Shape::Tall => {
            let tiled = m / kernels.tall_rows * kernels.tall_rows;
            // SAFETY: `kernels` is for the running CPU's features; the views are live with the
            // shapes and non-negative strides passed (`A` is `m × k`, `B` is `k × n`, `C` is
            // `m × n`, `A` and `C` with row stride 1), `C` borrowed mutably, and the kernel
            // reads and writes only rows `..tiled` of `A` and `C`.
            unsafe {
                (kernels.tall)(
                    (tiled, n, k),
                    (lhs.as_ptr(), lda),
                    (rhs.as_ptr(), rsb, csb),
                    (dst.rb_mut().as_ptr_mut(), ldc),
                    alpha,
                    add,
                );
            }
            // The last rows by the general small-product kernel.
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
            // SAFETY: `kernels` is for the running CPU's features; `B` has row stride 1 and
            // column stride `csb`, `C` row stride 1 and column stride `ldc` (checked above).
            unsafe { wide_product(&kernels, dst, lhs, rhs, (csb, ldc), alpha, add) };
        }
    }
    #[cfg(test)]
    TAKEN.with(|t| t.set(t.get() + 1));
    true
}

/// The wide product `C = accum(C) + alpha·A·B` (`C` at most [`NARROW_COLS`] rows) with
/// `kernels`: `A` packed a block of the kernel's rows at a time, and with more than one block,
/// every block on a few tiles of columns before the next tiles, so that those columns of `B`
/// come from memory once, then from L1.
///
/// # Safety
/// `kernels` is for the running CPU's features; `rhs` has row stride 1 and column stride `csb`,
/// `dst` row stride 1 and column stride `ldc`.
unsafe fn wide_product<T: KernelScalar>(
    kernels: &Kernels<T>,
    mut dst: faer::MatMut<'_, T>,
    lhs: faer::MatRef<'_, T>,
    rhs: faer::MatRef<'_, T>,
    (csb, ldc): (usize, usize),
    alpha: T,
    add: bool,
) {
    let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.ncols());
    let rows = kernels.wide_rows;
    let blocks = m.div_ceil(rows);
    // Every block of `rows` rows of `A`, a column after the other (zeros below `m`).
    let mut packed = vec![T::zero(); blocks * rows * k];
    for (b, block) in packed.chunks_exact_mut(rows * k).enumerate() {
        let (r0, h) = (b * rows, rows.min(m - b * rows));
        for (p, column) in block.chunks_exact_mut(rows).enumerate() {
            for (i, x) in column.iter_mut().take(h).enumerate() {
                *x = lhs[(r0 + i, p)];
            }
        }
    }
    let chunk = if blocks > 1 {
        WIDE_CHUNK_TILES * kernels.wide_cols
    } else {
        n
    };
    for c0 in (0..n).step_by(chunk) {
        let w = chunk.min(n - c0);
        for (b, block) in packed.chunks_exact(rows * k).enumerate() {
            let (r0, h) = (b * rows, rows.min(m - b * rows));
            // SAFETY: the contract; `block` is `rows × k` contiguous; columns `c0..c0 + w` of
            // `B` are `k × w` with row stride 1 and rows `r0..r0 + h` of those columns of `C`
            // are `h × w` with row stride 1, live, `C` borrowed mutably.
            unsafe {
                (kernels.wide)(
                    (h, w, k),
                    block.as_ptr(),
                    (rhs.subcols(c0, w).as_ptr(), csb),
                    (dst.rb_mut().submatrix_mut(r0, c0, h, w).as_ptr_mut(), ldc),
                    alpha,
                    add,
                );
            }
        }
    }
}

/// Implements [`Narrow`] for a real scalar with the kernels of `mod x86` named for it.
macro_rules! narrow_for {
    ($t:ty, $v4:ident, $v3:ident) => {
        impl Narrow for $t {
            fn narrow_matmul(
                dst: faer::MatMut<'_, $t>,
                accum: Accum,
                (lhs, _): (faer::MatRef<'_, $t>, Conj),
                (rhs, _): (faer::MatRef<'_, $t>, Conj),
                alpha: $t,
                par: Par,
            ) -> bool {
                let kernels = kernels_for(isa(), kernels_of!($v4), kernels_of!($v3));
                narrow_with(kernels, dst, accum, lhs, rhs, alpha, par)
            }
        }
    };
}

/// The [`Kernels`] of one module of `mod x86`.
macro_rules! kernels_of {
    ($m:ident) => {{
        #[cfg(target_arch = "x86_64")]
        {
            Some(Kernels {
                tall_rows: x86::$m::TALL_ROWS,
                wide_rows: x86::$m::WIDE_ROWS,
                wide_cols: x86::$m::WIDE_COLS,
                tall: x86::$m::tall,
                wide: x86::$m::wide,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }};
}

/// The kernels for `isa`: AVX-512's, AVX2's, or none.
fn kernels_for<T>(isa: Isa, v4: Option<Kernels<T>>, v3: Option<Kernels<T>>) -> Option<Kernels<T>> {
    match isa {
        Isa::V4 => v4,
        Isa::V3 => v3,
        Isa::Base => None,
    }
}

narrow_for!(f64, v4_f64, v3_f64);
narrow_for!(f32, v4_f32, v3_f32);

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// One scalar's kernels on one instruction set: `$t` in vectors `$v` of `$lanes`, through
    /// the intrinsics named; tall tiles of `$tv` vectors by the widths `[$tw…]` (the first
    /// repeated, the others once each, for the last columns), wide tiles of `$wv` vectors by
    /// the widths `[$ww…]`.
    macro_rules! kernels {
        (
            $name:ident, $t:ty, $feature:literal, $v:ty, $lanes:expr,
            $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident, $add:ident,
            tall: $tv:expr, [$tw0:literal $(, $tw:literal)*], copy: $copy:expr,
            wide: $wv:expr, [$ww0:literal $(, $ww:literal)*]
        ) => {
            pub(super) mod $name {
                // `j + 1 <= n`: the last of the widths is 1.
                #![allow(clippy::int_plus_one)]
                use std::arch::x86_64::*;

                /// Rows of a tall tile.
                pub(in super::super) const TALL_ROWS: usize = $tv * $lanes;
                /// Rows a wide tile takes.
                pub(in super::super) const WIDE_ROWS: usize = $wv * $lanes;
                /// Columns of a wide tile.
                pub(in super::super) const WIDE_COLS: usize = $ww0;
                /// How far ahead (rows of `A`) a tall product fetches: eight strips.
                const AHEAD: usize = 8 * TALL_ROWS;
                /// How far ahead (columns of `B`) a wide product fetches: two tiles.
                const AHEAD_COLS: usize = 2 * WIDE_COLS;
                /// Elements in a cache line.
                const LINE: usize = 64 / size_of::<$t>();
                /// Columns of `A` a tall product copies at a time.
                const STRIP_DEPTH: usize = 64;
                /// Strips a tall product copies at a time.
                const STRIPS: usize = 16;
                /// The elements of a tall product's copy (none for kernels without).
                const COPY_LEN: usize = if $copy { STRIPS * TALL_ROWS * STRIP_DEPTH } else { 0 };

                /// `C = accum(C) + alpha·A·B` for `m` a multiple of [`TALL_ROWS`], tile by
                /// tile.
                ///
                /// # Safety
                /// The CPU has the instruction set; `a` (`m × k`, column stride `lda`), `b`
                /// (`k × n`, strides `rsb`, `csb`) and `c` (`m × n`, column stride `ldc`) are
                /// valid for those shapes, `c` for writes and not overlapping the others.
                #[target_feature(enable = $feature)]
                pub(in super::super) unsafe fn tall(
                    (m, n, k): (usize, usize, usize),
                    (a, lda): (*const $t, usize),
                    (b, rsb, csb): (*const $t, usize, usize),
                    (c, ldc): (*mut $t, usize),
                    alpha: $t,
                    add: bool,
                ) {
                    // Strips more than one tile reads go through a copy, `STRIPS` strips and
                    // `STRIP_DEPTH` columns at a time, read column by column (runs of
                    // `STRIPS · TALL_ROWS` rows; the strips' columns, `lda` apart, can share
                    // one set of the caches, which then do not keep them for the next tile).
                    let copy = $copy && n > $tw0;
                    let (depth, strips) = if copy { (STRIP_DEPTH, STRIPS) } else { (k.max(1), 1) };
                    let mut buf = [0.0 as $t; COPY_LEN];
                    for i0 in (0..m).step_by(strips * TALL_ROWS) {
                        let h = (strips * TALL_ROWS).min(m - i0);
                        for p0 in (0..k).step_by(depth) {
                            let kb = depth.min(k - p0);
                            if copy {
                                // Strip by strip (`TALL_ROWS × kb` each), column by column.
                                let x = crate::packed::Operand { ptr: a, rs: 1, cs: lda as isize };
                                // SAFETY: rows `i0..i0 + h` (whole strips), columns
                                // `p0..p0 + kb` lie inside `A`; `buf` holds them.
                                unsafe {
                                    crate::packed::pack_columns::<$t, TALL_ROWS>(
                                        &mut buf,
                                        x,
                                        (i0, h / TALL_ROWS),
                                        (p0, kb),
                                    )
                                };
                            }
                            for i in (i0..i0 + h).step_by(TALL_ROWS) {
                                let (sa, slda) = if copy {
                                    (buf[(i - i0) * kb..].as_ptr(), TALL_ROWS)
                                } else {
                                    // SAFETY: inside `A`.
                                    (unsafe { a.add(i + p0 * lda) }, lda)
                                };
                                // SAFETY: the tile's rows `i..i + TALL_ROWS` and columns
                                // `j..j + W` lie inside `C` and `B`; the strip is
                                // `TALL_ROWS × kb`.
                                let tile = |j: usize| Tall {
                                    k: kb,
                                    a: (sa, slda),
                                    b: (unsafe { b.add(p0 * rsb + j * csb) }, rsb, csb),
                                    c: (unsafe { c.add(i + j * ldc) }, ldc),
                                    alpha,
                                    add: add || p0 > 0,
                                    ahead: !copy && j == 0,
                                };
                                let mut j = 0;
                                while j + $tw0 <= n {
                                    // SAFETY: as above.
                                    unsafe { tile(j).run::<$tw0>() };
                                    j += $tw0;
                                }
                                $(
                                    if j + $tw <= n {
                                        // SAFETY: as above.
                                        unsafe { tile(j).run::<$tw>() };
                                        j += $tw;
                                    }
                                )*
                            }
                        }
                    }
                }

                /// One tall tile: `C = accum(C) + alpha·A(TALL_ROWS × k)·B(k × W)`,
                /// fetching the strip [`AHEAD`] rows below when `ahead`.
                struct Tall {
                    k: usize,
                    a: (*const $t, usize),
                    b: (*const $t, usize, usize),
                    c: (*mut $t, usize),
                    alpha: $t,
                    add: bool,
                    ahead: bool,
                }

                impl Tall {
                    /// # Safety
                    /// As [`tall`], for the tile's rows and columns; called from it.
                    #[inline(always)]
                    unsafe fn run<const W: usize>(&self) {
                        let ((a, lda), (b, rsb, csb), (c, ldc)) = (self.a, self.b, self.c);
                        // SAFETY: as the function's contract.
                        unsafe {
                            let zero = $zero();
                            let mut acc = [[zero; $tv]; W];
                            let mut column = [zero; $tv];
                            for p in 0..self.k {
                                let ap = a.add(p * lda);
                                for (q, x) in column.iter_mut().enumerate() {
                                    *x = $load(ap.add(q * $lanes));
                                }
                                if self.ahead {
                                    // A hint only: an address past the matrix is never read.
                                    let next = ap.wrapping_add(AHEAD);
                                    for l in (0..TALL_ROWS).step_by(LINE) {
                                        _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(l).cast::<i8>());
                                    }
                                }
                                let bp = b.add(p * rsb);
                                for (jj, acc) in acc.iter_mut().enumerate() {
                                    let bb = $splat(*bp.add(jj * csb));
                                    for (x, &y) in acc.iter_mut().zip(&column) {
                                        *x = $fma(y, bb, *x);
                                    }
                                }
                            }
                            let alpha = $splat(self.alpha);
                            for (jj, acc) in acc.iter().enumerate() {
                                let cp = c.add(jj * ldc);
                                for (q, &v) in acc.iter().enumerate() {
                                    let v = $mul(alpha, v);
                                    let out = match self.add {
                                        true => $add($load(cp.add(q * $lanes)), v),
                                        false => v,
                                    };
                                    $store(cp.add(q * $lanes), out);
                                }
                            }
                        }
                    }
                }

                /// `C = accum(C) + alpha·A·B` for `C` `m × n` with `m ≤ WIDE_ROWS`, tile by
                /// tile.
                ///
                /// # Safety
                /// The CPU has the instruction set; `a` is `WIDE_ROWS × k` contiguous, `b`
                /// (`k × n`, row stride 1, column stride `ldb`) and `c` (`m × n`, row stride
                /// 1, column stride `ldc`) are valid for those shapes, `c` for writes and not
                /// overlapping the others.
                #[target_feature(enable = $feature)]
                pub(in super::super) unsafe fn wide(
                    (m, n, k): (usize, usize, usize),
                    a: *const $t,
                    (b, ldb): (*const $t, usize),
                    (c, ldc): (*mut $t, usize),
                    alpha: $t,
                    add: bool,
                ) {
                    // SAFETY: the tile's columns `j..j + W` lie inside `B` and `C`.
                    let tile = |j: usize| Wide {
                        k,
                        m,
                        a,
                        b: (unsafe { b.add(j * ldb) }, ldb),
                        c: (unsafe { c.add(j * ldc) }, ldc),
                        alpha,
                        add,
                    };
                    let mut j = 0;
                    while j + $ww0 <= n {
                        // SAFETY: as above.
                        unsafe { tile(j).run::<$ww0>() };
                        j += $ww0;
                    }
                    $(
                        if j + $ww <= n {
                            // SAFETY: as above.
                            unsafe { tile(j).run::<$ww>() };
                            j += $ww;
                        }
                    )*
                }

                /// One wide tile: `C = accum(C) + alpha·A(m × k)·B(k × W)`, fetching the
                /// columns of `B` [`AHEAD_COLS`] to the right.
                struct Wide {
                    k: usize,
                    m: usize,
                    a: *const $t,
                    b: (*const $t, usize),
                    c: (*mut $t, usize),
                    alpha: $t,
                    add: bool,
                }

                impl Wide {
                    /// # Safety
                    /// As [`wide`], for the tile's columns; called from it.
                    #[inline(always)]
                    unsafe fn run<const W: usize>(&self) {
                        let ((b, ldb), (c, ldc)) = (self.b, self.c);
                        // SAFETY: as the function's contract.
                        unsafe {
                            let zero = $zero();
                            let mut acc = [[zero; $wv]; W];
                            let mut column = [zero; $wv];
                            for p in 0..self.k {
                                let ap = self.a.add(WIDE_ROWS * p);
                                for (q, x) in column.iter_mut().enumerate() {
                                    *x = $load(ap.add(q * $lanes));
                                }
                                if p % LINE == 0 {
                                    // A hint only: an address past the matrix is never read.
                                    let next = b.wrapping_add(AHEAD_COLS * ldb + p);
                                    for jj in 0..W {
                                        _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(jj * ldb).cast::<i8>());
                                    }
                                }
                                for (jj, acc) in acc.iter_mut().enumerate() {
                                    let bb = $splat(*b.add(p + jj * ldb));
                                    for (x, &y) in acc.iter_mut().zip(&column) {
                                        *x = $fma(y, bb, *x);
                                    }
                                }
                            }
                            let alpha = $splat(self.alpha);
                            let mut out = [0.0 as $t; WIDE_ROWS];
                            for (jj, acc) in acc.iter().enumerate() {
                                let cp = c.add(jj * ldc);
                                for (q, &v) in acc.iter().enumerate() {
                                    let v = $mul(alpha, v);
                                    if self.m == WIDE_ROWS {
                                        let out = match self.add {
                                            true => $add($load(cp.add(q * $lanes)), v),
                                            false => v,
                                        };
                                        $store(cp.add(q * $lanes), out);
                                    } else {
                                        $store(out.as_mut_ptr().add(q * $lanes), v);
                                    }
                                }
                                // Fewer rows: the column through a buffer (`m` may end inside
                                // a vector).
                                if self.m < WIDE_ROWS {
                                    for (i, &x) in out.iter().take(self.m).enumerate() {
                                        *cp.add(i) = if self.add { *cp.add(i) + x } else { x };
                                    }
                                }
                            }
                        }
                    }
                }
            }
        };
    }

    kernels!(
        v4_f64, f64, "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma", __m512d, 8,
        _mm512_setzero_pd, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd,
        _mm512_fmadd_pd, _mm512_mul_pd, _mm512_add_pd,
        tall: 3, [8, 4, 2, 1], copy: false,
        wide: 2, [12, 8, 4, 2, 1]
    );
    kernels!(
        v4_f32, f32, "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma", __m512, 16,
        _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps,
        _mm512_fmadd_ps, _mm512_mul_ps, _mm512_add_ps,
        tall: 3, [8, 4, 2, 1], copy: false,
        wide: 1, [24, 16, 8, 4, 2, 1]
    );
    kernels!(
        v3_f64, f64, "avx2,fma", __m256d, 4,
        _mm256_setzero_pd, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
        _mm256_fmadd_pd, _mm256_mul_pd, _mm256_add_pd,
        tall: 2, [6, 4, 2, 1], copy: true,
        wide: 2, [6, 4, 2, 1]
    );
    kernels!(
        v3_f32, f32, "avx2,fma", __m256, 8,
        _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
        _mm256_fmadd_ps, _mm256_mul_ps, _mm256_add_ps,
        tall: 2, [6, 4, 2, 1], copy: true,
        wide: 2, [6, 4, 2, 1]
    );
}

#[cfg(test)]
thread_local! {
    /// Products the narrow kernels took on this thread (tests run one per thread).
    static TAKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gemm, reference, Mat, MatRef};
    use redblue_core::{Op, RealScalar, Scalar};

    /// Whether `x` is `y` within the rounding of a product of depth `k`.
    fn close<T: KernelScalar>(x: T, y: T, k: usize) -> bool {
        let (d, y) = (Scalar::abs(x - y).to_f64(), Scalar::abs(y).to_f64());
        d <= 64.0 * k as f64 * <T as Scalar>::epsilon().to_f64() * (1.0 + y)
    }

    fn taken() -> u64 {
        TAKEN.with(|t| t.get())
    }

    fn value<T: Scalar>(i: usize, j: usize, s: f64) -> T {
        T::from_f64_parts(((i * 7 + j * 13) as f64 * 0.37 + s).sin(), 0.0)
    }

    /// `C = beta·C + alpha·op_a(A)·op_b(B)` by `gemm` and by the reference, equal within
    /// rounding; `lda`, `ldb` the leading dimensions of `A` and `B` as stored; `C` holds NaNs
    /// when `beta = 0`. Returns whether a narrow kernel took it.
    #[allow(clippy::too_many_arguments)]
    fn check<T: KernelScalar>(
        (m, n, k): (usize, usize, usize),
        (op_a, lda): (Op, usize),
        (op_b, ldb): (Op, usize),
        alpha: f64,
        beta: f64,
        par: Par,
    ) -> bool {
        let stored = |op: Op, r: usize, c: usize| if op == Op::NoTrans { (r, c) } else { (c, r) };
        let (ar, ac) = stored(op_a, m, k);
        let (br, bc) = stored(op_b, k, n);
        let a_data: Vec<T> = (0..lda * ac)
            .map(|x| value(x % lda, x / lda, 0.1))
            .collect();
        let b_data: Vec<T> = (0..ldb * bc)
            .map(|x| value(x % ldb, x / ldb, 0.7))
            .collect();
        let a = MatRef::from_slice(&a_data, ar, ac, lda).unwrap();
        let b = MatRef::from_slice(&b_data, br, bc, ldb).unwrap();
        let fill = if beta == 0.0 { f64::NAN } else { 0.25 };
        let start = |i, j| value::<T>(i, j, 0.3) * T::from_f64_parts(fill, 0.0);
        let mut c = Mat::from_fn(m, n, start);
        let mut want = Mat::from_fn(m, n, start);
        let (alpha, beta) = (T::from_f64_parts(alpha, 0.0), T::from_f64_parts(beta, 0.0));
        let before = taken();
        gemm(alpha, a, op_a, b, op_b, beta, c.as_mut(), par).unwrap();
        let took = taken() > before;
        reference::gemm(alpha, a, op_a, b, op_b, beta, want.as_mut()).unwrap();
        for i in 0..m {
            for j in 0..n {
                let (x, y) = (c[(i, j)], want[(i, j)]);
                assert!(
                    close(x, y, k),
                    "{m}×{n}×{k} ({i}, {j}): {x:?} against {y:?}"
                );
            }
        }
        took
    }

    /// Tall products: every narrow width, heights around the tiles' and the copied blocks',
    /// depths around the copied blocks', a leading dimension larger than the rows, `B`
    /// transposed, `alpha`, and `beta` 0 (a NaN in `C` not read), 1 and other; taken on a CPU
    /// with AVX2 or AVX-512 ([`takes_any`]).
    fn tall_products<T: KernelScalar>() {
        let fast = takes_any();
        let nt = Op::NoTrans;
        for &(m, k) in &[
            (48, 8),
            (49, 9),
            (71, 64),
            (100, 33),
            (240, 64),
            (263, 17),
            (300, 150),
        ] {
            for n in 1..=NARROW_COLS {
                for (op_b, ldb, beta, alpha) in [
                    (nt, k, 0.0, 1.0),
                    (nt, k + 2, 1.0, -1.0),
                    (Op::Trans, n, 0.5, 2.0),
                ] {
                    let took =
                        check::<T>((m, n, k), (nt, m + 3), (op_b, ldb), alpha, beta, Par::Seq);
                    assert_eq!(took, fast && m >= 2 * tiles::<T>().0, "{m}×{n}×{k}");
                }
            }
        }
    }

    /// Short, wide products (a solve's transposed form): every height, widths around the
    /// tiles', `A` transposed (as the solve passes it) or not, `B` with a leading dimension
    /// larger than its rows, and `beta` 0, 1 and other.
    fn wide_products<T: KernelScalar>() {
        let fast = takes_any();
        for m in 1..=NARROW_COLS {
            for &(n, k) in &[(48, 8), (49, 64), (73, 9), (100, 65), (263, 33)] {
                for (op_a, lda, beta, alpha) in [
                    (Op::Trans, k, 0.0, 1.0),
                    (Op::NoTrans, m, 1.0, -1.0),
                    (Op::Trans, k + 1, 0.5, 2.0),
                ] {
                    let ops = ((op_a, lda), (Op::NoTrans, k + 5));
                    let took = check::<T>((m, n, k), ops.0, ops.1, alpha, beta, Par::Seq);
                    assert_eq!(took, fast, "{m}×{n}×{k}");
                }
            }
        }
    }

    /// Whether narrow products reach the narrow kernels here: a CPU with kernels, where they
    /// go before a system BLAS or none is active ([`before_system_blas`]).
    fn takes_any() -> bool {
        isa() != Isa::Base && (before_system_blas() || !crate::system::system_blas_active())
    }

    /// The rows of a tall tile and the columns of a wide one of `T` (f32 or f64) on this CPU,
    /// as the products choose their kernels (zeros without kernels).
    fn tiles<T: KernelScalar>() -> (usize, usize) {
        fn sizes<S>(kernels: Option<Kernels<S>>) -> (usize, usize) {
            kernels.map_or((0, 0), |k| (k.tall_rows, k.wide_cols))
        }
        match size_of::<T>() {
            8 => sizes(kernels_for(isa(), kernels_of!(v4_f64), kernels_of!(v3_f64))),
            _ => sizes(kernels_for(isa(), kernels_of!(v4_f32), kernels_of!(v3_f32))),
        }
    }

    #[test]
    fn narrow_products_equal_the_reference_in_f64() {
        tall_products::<f64>();
        wide_products::<f64>();
    }

    #[test]
    fn narrow_products_equal_the_reference_in_f32() {
        tall_products::<f32>();
        wide_products::<f32>();
    }

    /// The AVX2 kernels on a CPU that has AVX-512 too (which the products above take), called
    /// as the dispatch would on an AVX2-only CPU.
    #[test]
    fn the_avx2_kernels_equal_the_reference_where_the_cpu_has_them() {
        if isa() == Isa::Base {
            return;
        }
        fn run<T: KernelScalar>(
            kernels: Option<Kernels<T>>,
            (m, n, k): (usize, usize, usize),
            op_a: Op,
        ) {
            let stored = if op_a == Op::NoTrans { (m, k) } else { (k, m) };
            let a = Mat::from_fn(stored.0, stored.1, |i, j| value::<T>(i, j, 0.1));
            let b = Mat::from_fn(k, n, |i, j| value::<T>(i, j, 0.2));
            let mut c = Mat::from_fn(m, n, |i, j| value::<T>(i, j, 0.3));
            let mut want = Mat::from_fn(m, n, |i, j| value::<T>(i, j, 0.3));
            let lhs = crate::gemm::op_view(a.as_ref().to_faer(), op_a).0;
            let two = T::from_f64_parts(2.0, 0.0);
            let accum = Accum::Add;
            assert!(narrow_with(
                kernels,
                c.as_mut().into_faer(),
                accum,
                lhs,
                b.as_ref().to_faer(),
                two,
                Par::Seq
            ));
            reference::gemm(
                two,
                a.as_ref(),
                op_a,
                b.as_ref(),
                Op::NoTrans,
                T::one(),
                want.as_mut(),
            )
            .unwrap();
            for i in 0..m {
                for j in 0..n {
                    assert!(close(c[(i, j)], want[(i, j)], k), "{m}×{n}×{k} ({i}, {j})");
                }
            }
        }
        for (m, n, k, op_a) in [
            (100, 7, 33, Op::NoTrans),
            (48, 16, 64, Op::NoTrans),
            (300, 16, 150, Op::NoTrans),
            (13, 40, 64, Op::Trans),
            (16, 23, 9, Op::NoTrans),
        ] {
            run::<f64>(kernels_of!(v3_f64), (m, n, k), op_a);
            run::<f32>(kernels_of!(v3_f32), (m, n, k), op_a);
        }
    }

    /// Too wide, too short (one row or column short of two tiles on this CPU), shallow,
    /// threaded, the streamed operand transposed: the general path.
    #[test]
    fn other_products_are_not_taken() {
        let (nt, tr) = (Op::NoTrans, Op::Trans);
        let short = |tile: usize| (2 * tile).max(2) - 1;
        let (tall_rows, wide_cols) = tiles::<f64>();
        let (rows, cols) = (short(tall_rows), short(wide_cols));
        for (m, n, k, op_a, op_b, par) in [
            (64, 17, 16, nt, nt, Par::Seq),
            (rows, 8, 16, nt, nt, Par::Seq),
            (64, 8, 7, nt, nt, Par::Seq),
            (64, 8, 16, nt, nt, Par::Threads(2)),
            (64, 8, 16, tr, nt, Par::Seq),
            (17, 40, 16, nt, nt, Par::Seq),
            (rows.min(16), cols, 16, nt, nt, Par::Seq),
            (16, 40, 16, nt, tr, Par::Seq),
        ] {
            let lda = if op_a == nt { m } else { k };
            let ldb = if op_b == nt { k } else { n };
            assert!(!check::<f64>(
                (m, n, k),
                (op_a, lda),
                (op_b, ldb),
                1.0,
                0.0,
                par
            ));
        }
    }
}
