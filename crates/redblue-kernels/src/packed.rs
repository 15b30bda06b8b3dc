//! Large real products on CPUs with AVX2 + FMA but not AVX-512, in kernels of this crate: both
//! operands packed a block at a time (Goto's scheme) and multiplied in `8 × 6` (f64) or
//! `16 × 6` (f32) register tiles.
//!
//! The blocks, cut equal: at most `KC` = 256 steps of depth, `MC` = 96 rows of `A` packed into
//! `MR`-row panels (`96 × 256` f64 = 192 KiB, for the L2), `NC` = 2048 columns of `B` packed
//! into 6-column panels (4 MiB, for the L3; a rank's whole block of columns in the
//! factorisations at `N = 4096`, so `A` is packed once); a tile keeps a panel of `B` (12 KiB
//! f64) in L1 while the panels of `A` stream past it. One core of a Zen 3 (AVX2), f64,
//! `C(4096 × 2048) -= A·B` of depth 128, interleaved: these kernels 33–35 GFLOP/s, the `gemm`
//! crate (whose AVX2 path packs 64 rows of `A` at a time against a panel of `B` sized for the
//! whole L3) 28–31, OpenBLAS 36–37; with `B` transposed 29–33, 22–27 and 32–35 (book: the
//! kernels page). On AVX-512 CPUs the `gemm` crate's kernels measured 0.97–1.0 of OpenBLAS's
//! and keep the products.
//!
//! Complex scalars, other CPUs and a `C` that is neither column- nor row-major take the
//! general path ([`Packed::packed_matmul`] answers "not taken").

use crate::simd::{isa, Isa};
use crate::space::Space;
use crate::{KernelScalar, Par};
use faer::{Accum, Conj};

/// The most steps of depth packed at once.
const KC: usize = 256;
/// The most rows of `A` packed at once.
const MC: usize = 96;
/// The most columns of `B` packed at once.
const NC: usize = 2048;

/// `len` cut into equal blocks of at most `most` (the last one shorter), each a multiple of
/// `unit`: the block length.
fn block(len: usize, most: usize, unit: usize) -> usize {
    len.div_ceil(len.div_ceil(most).max(1)).div_ceil(unit) * unit
}

/// The per-scalar packed product: "not taken" (`false`) by default; f32 and f64 implement it.
pub trait Packed: Sized {
    /// `dst = accum(dst) + alpha·lhs·rhs` when this scalar has packed kernels that go first on
    /// the running CPU; `false` (nothing written) otherwise. Callers have checked the shapes.
    #[allow(unused_variables)]
    fn packed_matmul(
        dst: faer::MatMut<'_, Self>,
        accum: Accum,
        lhs: (faer::MatRef<'_, Self>, Conj),
        rhs: (faer::MatRef<'_, Self>, Conj),
        alpha: Self,
        par: Par,
    ) -> bool {
        false
    }

    /// `dst[i, k] += alpha·(lhs·rhs)[i, k]` where `rows[i] >= cols[k]` ([`lower_product`])
    /// when this scalar has packed kernels that go first on the running CPU, no system BLAS
    /// is active and `par` is one thread; `false` (nothing written) otherwise. Callers have
    /// checked the shapes and that `rows` and `cols` ascend.
    #[allow(unused_variables)]
    fn packed_lower(
        dst: faer::MatMut<'_, Self>,
        lhs: faer::MatRef<'_, Self>,
        rhs: faer::MatRef<'_, Self>,
        alpha: Self,
        labels: (&[usize], &[usize]),
        par: Par,
    ) -> bool {
        false
    }
}

impl Packed for redblue_core::Complex<f32> {}
impl Packed for redblue_core::Complex<f64> {}

/// A register tile's kernel: `C(MR × NR) = add·C + alpha·A·B` over `kc` steps, `A` a packed
/// panel (`MR` per step), `B` a packed panel (`NR` per step), `C` column-major (`ldc`).
type MicroFn<T> = unsafe fn(usize, *const T, *const T, *mut T, usize, T, bool);

/// Packs a block of an operand into panels ([`pack`] for one panel height).
type PackFn<T> = unsafe fn(&mut [T], Operand<T>, (usize, usize), (usize, usize));

/// One scalar's kernel, its tile and the packing of its operands' panels.
#[derive(Clone, Copy)]
struct Kernel<T> {
    mr: usize,
    nr: usize,
    micro: MicroFn<T>,
    pack_a: PackFn<T>,
    pack_b: PackFn<T>,
}

/// The largest tile of any kernel (`16 × 6`).
const MAX_TILE: usize = 96;

/// Implements [`Packed`] for a real scalar with the kernel of `mod x86` named for it.
macro_rules! packed_for {
    ($t:ty, $micro:ident) => {
        impl Packed for $t {
            fn packed_matmul(
                dst: faer::MatMut<'_, $t>,
                accum: Accum,
                (lhs, _): (faer::MatRef<'_, $t>, Conj),
                (rhs, _): (faer::MatRef<'_, $t>, Conj),
                alpha: $t,
                par: Par,
            ) -> bool {
                // AVX-512 CPUs keep the `gemm` crate's kernels (module docs).
                isa() == Isa::V3
                    && kernel_of!($micro)
                        .is_some_and(|k| product_with(k, dst, accum, lhs, rhs, alpha, par))
            }

            fn packed_lower(
                dst: faer::MatMut<'_, $t>,
                lhs: faer::MatRef<'_, $t>,
                rhs: faer::MatRef<'_, $t>,
                alpha: $t,
                labels: (&[usize], &[usize]),
                par: Par,
            ) -> bool {
                isa() == Isa::V3
                    && par.degree() == 1
                    && !crate::system::system_blas_active()
                    && kernel_of!($micro)
                        .is_some_and(|k| lower_product(k, dst, lhs, rhs, alpha, labels))
            }
        }
    };
}

/// The [`Kernel`] of `mod x86` named `$micro`, where there is one.
macro_rules! kernel_of {
    ($micro:ident) => {{
        #[cfg(target_arch = "x86_64")]
        {
            use x86::$micro::{micro, MR, NR};
            Some(Kernel {
                mr: MR,
                nr: NR,
                micro,
                pack_a: pack::<_, MR>,
                pack_b: pack::<_, NR>,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }};
}

packed_for!(f64, f64_8x6);
packed_for!(f32, f32_16x6);

/// `dst = accum(dst) + alpha·lhs·rhs` with `kernel` (its CPU features present), split over
/// `par` threads; `false` (nothing written) when `dst` is neither column- nor row-major.
fn product_with<T: KernelScalar>(
    kernel: Kernel<T>,
    dst: faer::MatMut<'_, T>,
    accum: Accum,
    lhs: faer::MatRef<'_, T>,
    rhs: faer::MatRef<'_, T>,
    alpha: T,
    par: Par,
) -> bool {
    if dst.row_stride() != 1 && dst.col_stride() == 1 && dst.ncols() > 1 {
        // `Cᵀ = Bᵀ·Aᵀ`, with `Cᵀ` column-major.
        return product_with(
            kernel,
            dst.transpose_mut(),
            accum,
            rhs.transpose(),
            lhs.transpose(),
            alpha,
            par,
        );
    }
    if (dst.nrows() > 1 && dst.row_stride() != 1) || (dst.ncols() > 1 && dst.col_stride() < 0) {
        return false;
    }
    split(kernel, dst, accum, lhs, rhs, alpha, par.degree());
    #[cfg(test)]
    TAKEN.with(|t| t.set(t.get() + 1));
    true
}

/// The product on `threads` threads of the current rayon pool: the longer side of `dst` cut
/// in two (whole tiles), each half with its share of the threads.
fn split<T: KernelScalar>(
    kernel: Kernel<T>,
    dst: faer::MatMut<'_, T>,
    accum: Accum,
    lhs: faer::MatRef<'_, T>,
    rhs: faer::MatRef<'_, T>,
    alpha: T,
    threads: usize,
) {
    let (m, n) = (dst.nrows(), dst.ncols());
    if threads > 1 && n >= m && n >= 2 * kernel.nr {
        let cut = (n * (threads / 2) / threads).div_ceil(kernel.nr) * kernel.nr;
        let (left, right) = dst.split_at_col_mut(cut);
        let (b0, b1) = rhs.split_at_col(cut);
        let half = threads / 2;
        rayon::join(
            || split(kernel, left, accum, lhs, b0, alpha, half),
            || split(kernel, right, accum, lhs, b1, alpha, threads - half),
        );
    } else if threads > 1 && m >= 2 * kernel.mr {
        let cut = (m * (threads / 2) / threads).div_ceil(kernel.mr) * kernel.mr;
        let (top, bottom) = dst.split_at_row_mut(cut);
        let (a0, a1) = lhs.split_at_row(cut);
        let half = threads / 2;
        rayon::join(
            || split(kernel, top, accum, a0, rhs, alpha, half),
            || split(kernel, bottom, accum, a1, rhs, alpha, threads - half),
        );
    } else {
        product(kernel, dst, accum, lhs, rhs, alpha);
    }
}

/// A matrix operand as the packing reads it: its first element and strides (elements).
#[derive(Clone, Copy)]
pub(crate) struct Operand<T> {
    pub(crate) ptr: *const T,
    pub(crate) rs: isize,
    pub(crate) cs: isize,
}

impl<T: Copy> Operand<T> {
    fn of(m: faer::MatRef<'_, T>) -> Self {
        Operand {
            ptr: m.as_ptr(),
            rs: m.row_stride(),
            cs: m.col_stride(),
        }
    }

    /// The transposed operand.
    fn transposed(self) -> Self {
        Operand {
            ptr: self.ptr,
            rs: self.cs,
            cs: self.rs,
        }
    }
}

/// One block of Goto's loops ([`packed_loops`]): rows `i0..i0 + h` of `C`, the first `w` of
/// its columns from `j0`, steps `p0..p0 + depth` of the product.
#[derive(Clone, Copy)]
struct Block {
    i0: usize,
    h: usize,
    j0: usize,
    w: usize,
    p0: usize,
    depth: usize,
}

/// Goto's loops of a product `C(m × n) (+)= A·B` on this thread, in this thread's packing
/// space: blocks of `B`'s columns and of the depth packed into panels, then, for each, blocks
/// of `A`'s rows from row `rows_from(j0)` on, each handed to `tiles` with both panels and the
/// number of the block's columns it needs (`cols_upto(i0, h, j0, w)`). Blocks are cut equal: a
/// product of 2050 columns packs two blocks of 1025, not 2048 and 2.
///
/// # Safety
/// `a` and `b` are the operands of a live `m × k` and `k × n` matrix.
unsafe fn packed_loops<T: KernelScalar>(
    kernel: Kernel<T>,
    (a, b): (Operand<T>, Operand<T>),
    (m, n, k): (usize, usize, usize),
    rows_from: impl Fn(usize) -> usize,
    cols_upto: impl Fn(usize, usize, usize, usize) -> usize,
    mut tiles: impl FnMut((&[T], &[T]), Block),
) {
    let (mc, kc, nc) = (
        block(m, MC, kernel.mr),
        block(k, KC, 1),
        block(n, NC, kernel.nr),
    );
    with_space::<T, _>((mc + nc) * kc, |space| {
        let (packed_a, packed_b) = space.split_at_mut(mc * kc);
        for j0 in (0..n).step_by(nc) {
            let w = nc.min(n - j0);
            let first = rows_from(j0);
            if first >= m {
                continue;
            }
            for p0 in (0..k).step_by(kc) {
                let depth = kc.min(k - p0);
                // SAFETY: rows `p0..p0 + depth` and columns `j0..j0 + w` lie inside `B`, and
                // `packed_b` holds `nc·kc` elements.
                unsafe { (kernel.pack_b)(packed_b, b.transposed(), (j0, w), (p0, depth)) };
                for i0 in (first..m).step_by(mc) {
                    let h = mc.min(m - i0);
                    // SAFETY: rows `i0..i0 + h` and columns `p0..p0 + depth` lie inside `A`,
                    // and `packed_a` holds `mc·kc` elements.
                    unsafe { (kernel.pack_a)(packed_a, a, (i0, h), (p0, depth)) };
                    let w = cols_upto(i0, h, j0, w);
                    let blk = Block {
                        i0,
                        h,
                        j0,
                        w,
                        p0,
                        depth,
                    };
                    tiles((packed_a, packed_b), blk);
                }
            }
        }
    });
}

/// `dst = accum(dst) + alpha·lhs·rhs` on this thread, `dst` with row stride 1 (or one row).
fn product<T: KernelScalar>(
    kernel: Kernel<T>,
    dst: faer::MatMut<'_, T>,
    accum: Accum,
    lhs: faer::MatRef<'_, T>,
    rhs: faer::MatRef<'_, T>,
    alpha: T,
) {
    let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.ncols());
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let c = (dst.as_ptr_mut(), dst.col_stride().unsigned_abs());
    let operands = (Operand::of(lhs), Operand::of(rhs));
    let tiles = |panels: (&[T], &[T]), blk: Block| {
        let add = accum == Accum::Add || blk.p0 > 0;
        // SAFETY: the block `(i0.., j0..)` of `C`, `h × w`, lies inside `dst` (column stride
        // `ldc`, borrowed mutably); the panels were just packed.
        unsafe {
            let c = (c.0.add(blk.i0 + blk.j0 * c.1), c.1);
            blocks(kernel, panels, (blk.h, blk.w, blk.depth), c, alpha, add)
        }
    };
    // SAFETY: the operands are `lhs` (`m × k`) and `rhs` (`k × n`), borrowed.
    unsafe { packed_loops(kernel, operands, (m, n, k), |_| 0, |_, _, _, w| w, tiles) };
}

/// `C(h × w) = add·C + alpha·A·B` for a packed block of `A` (`h` rows in panels) and one of
/// `B` (`w` columns in panels), `depth` steps: tile by tile, the tiles at the edges through a
/// buffer.
///
/// # Safety
/// `c` is an `h × w` block with row stride 1 and column stride `ldc`, valid for writes and
/// not overlapping the panels; the panels hold `h` rows and `w` columns of `depth` steps; the
/// kernel's features are the running CPU's.
unsafe fn blocks<T: KernelScalar>(
    kernel: Kernel<T>,
    (packed_a, packed_b): (&[T], &[T]),
    (h, w, depth): (usize, usize, usize),
    (c, ldc): (*mut T, usize),
    alpha: T,
    add: bool,
) {
    let (mr, nr) = (kernel.mr, kernel.nr);
    let mut tile = [T::zero(); MAX_TILE];
    let panels_b = packed_b.chunks_exact(nr * depth).take(w.div_ceil(nr));
    for (t, panel_b) in panels_b.enumerate() {
        let cols = nr.min(w - t * nr);
        let panels_a = packed_a.chunks_exact(mr * depth).take(h.div_ceil(mr));
        for (s, panel_a) in panels_a.enumerate() {
            let rows = mr.min(h - s * mr);
            let (a, b) = (panel_a.as_ptr(), panel_b.as_ptr());
            // SAFETY: the tile `(s·mr.., t·nr..)` of `C` is `rows × cols` inside the block,
            // written whole by the kernel only when it is `mr × nr`, else through `tile`
            // (`mr × nr`, column stride `mr`); the panels hold `depth` steps (the contract).
            unsafe {
                let c = c.add(s * mr + t * nr * ldc);
                if rows == mr && cols == nr {
                    (kernel.micro)(depth, a, b, c, ldc, alpha, add);
                } else {
                    (kernel.micro)(depth, a, b, tile.as_mut_ptr(), mr, alpha, false);
                    for jj in 0..cols {
                        for ii in 0..rows {
                            let (x, y) = (c.add(ii + jj * ldc), tile[ii + jj * mr]);
                            *x = if add { *x + y } else { y };
                        }
                    }
                }
            }
        }
    }
}

/// `dst[i, k] += alpha·(lhs·rhs)[i, k]` for the entries with `rows[i] >= cols[k]`, on this
/// thread: the lower triangle of a matrix whose rows `rows` and columns `cols` (both
/// ascending) `dst` holds. [`packed_loops`] as in [`product`], except that a block of `A`'s
/// rows is packed only from the first row at or below the block of `B`'s first column, and
/// multiplied only with the columns at or left of its last row ([`lower_blocks`]). `false`
/// (nothing written) when `dst`'s rows are not contiguous.
fn lower_product<T: KernelScalar>(
    kernel: Kernel<T>,
    dst: faer::MatMut<'_, T>,
    lhs: faer::MatRef<'_, T>,
    rhs: faer::MatRef<'_, T>,
    alpha: T,
    (rows, cols): (&[usize], &[usize]),
) -> bool {
    let (m, n, k) = (dst.nrows(), dst.ncols(), lhs.ncols());
    debug_assert!(rows.len() == m && cols.len() == n);
    if (m > 1 && dst.row_stride() != 1) || (n > 1 && dst.col_stride() < 0) {
        return false;
    }
    if m == 0 || n == 0 || k == 0 {
        return true;
    }
    let c = (dst.as_ptr_mut(), dst.col_stride().unsigned_abs());
    let operands = (Operand::of(lhs), Operand::of(rhs));
    // My rows at or below a block's first column (a suffix: `rows` ascends), and a block's
    // columns at or left of its last row (a prefix).
    let rows_from = |j0: usize| rows.partition_point(|&r| r < cols[j0]);
    let cols_upto = |i0: usize, h: usize, j0: usize, w: usize| {
        cols[j0..j0 + w].partition_point(|&q| q <= rows[i0 + h - 1])
    };
    let tiles = |panels: (&[T], &[T]), blk: Block| {
        let labels = (&rows[blk.i0..blk.i0 + blk.h], &cols[blk.j0..blk.j0 + blk.w]);
        // SAFETY: as in `product`, for the block's first `w` columns.
        unsafe {
            let c = (c.0.add(blk.i0 + blk.j0 * c.1), c.1);
            lower_blocks(kernel, panels, (blk.h, blk.w, blk.depth), c, alpha, labels)
        }
    };
    // SAFETY: the operands are `lhs` (`m × k`) and `rhs` (`k × n`), borrowed.
    unsafe { packed_loops(kernel, operands, (m, n, k), rows_from, cols_upto, tiles) };
    true
}

/// [`blocks`] adding only the entries with `rows[i] >= cols[j]` of the `h × w` block (`rows`
/// and `cols` its labels, ascending): tiles wholly below the diagonal straight into `C`,
/// tiles across it through a buffer, tiles above it skipped.
///
/// # Safety
/// As [`blocks`]'s.
unsafe fn lower_blocks<T: KernelScalar>(
    kernel: Kernel<T>,
    (packed_a, packed_b): (&[T], &[T]),
    (h, w, depth): (usize, usize, usize),
    (c, ldc): (*mut T, usize),
    alpha: T,
    (rows, cols): (&[usize], &[usize]),
) {
    let (mr, nr) = (kernel.mr, kernel.nr);
    let mut tile = [T::zero(); MAX_TILE];
    let panels_b = packed_b.chunks_exact(nr * depth).take(w.div_ceil(nr));
    for (t, panel_b) in panels_b.enumerate() {
        let tile_cols = &cols[t * nr..(t * nr + nr).min(w)];
        // The first panel of `A` with a row at or below the tile's first column.
        let s0 = rows.partition_point(|&r| r < tile_cols[0]) / mr;
        let panels_a = packed_a.chunks_exact(mr * depth).take(h.div_ceil(mr));
        for (s, panel_a) in panels_a.enumerate().skip(s0) {
            let tile_rows = &rows[s * mr..(s * mr + mr).min(h)];
            let (a, b) = (panel_a.as_ptr(), panel_b.as_ptr());
            let whole =
                tile_rows.len() == mr && tile_cols.len() == nr && tile_rows[0] >= tile_cols[nr - 1];
            // SAFETY: as in `blocks`; only entries inside the block are written.
            unsafe {
                let c = c.add(s * mr + t * nr * ldc);
                if whole {
                    (kernel.micro)(depth, a, b, c, ldc, alpha, true);
                } else {
                    // The tile's lines of `C` asked for while the kernel runs (it asks for the
                    // buffer's).
                    #[cfg(target_arch = "x86_64")]
                    for jj in 0..tile_cols.len() {
                        let col = c.add(jj * ldc);
                        for at in [col, col.add(tile_rows.len() - 1)] {
                            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                            _mm_prefetch::<_MM_HINT_T0>(at.cast());
                        }
                    }
                    (kernel.micro)(depth, a, b, tile.as_mut_ptr(), mr, alpha, false);
                    for (jj, &q) in tile_cols.iter().enumerate() {
                        // The rows at or below column `q`: a suffix.
                        let from = tile_rows.partition_point(|&r| r < q);
                        let col = &tile[jj * mr..jj * mr + tile_rows.len()];
                        for (ii, &y) in col.iter().enumerate().skip(from) {
                            *c.add(ii + jj * ldc) += y;
                        }
                    }
                }
            }
        }
    }
}

thread_local! {
    /// This thread's packing space, kept from one product to the next: a fresh buffer of a few
    /// MiB per call cost page faults, the kernel zeroing each page (8–15 % of the samples of a
    /// 2-rank Cholesky at `N = 4096`, three factorisations and their setup; none with the
    /// space kept). At most `(MC + NC)·KC` f64, 4.2 MiB, per thread, on huge pages where the
    /// system grants them ([`Space`]: `pdpotrf_` 4–10 % faster on Zen 3).
    static SPACE: std::cell::Cell<Space> = std::cell::Cell::new(Space::default());
}

/// `f` on `len` elements of this thread's packing space (their values unspecified).
fn with_space<T: KernelScalar, R>(len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    const { assert!(align_of::<T>() <= align_of::<f64>()) };
    let mut space = SPACE.take();
    let words = (len * size_of::<T>()).div_ceil(size_of::<f64>());
    if space.len() < words {
        space = Space::zeroed(words);
    }
    // SAFETY: `space` holds at least `len·size_of::<T>()` initialised bytes, aligned for `T`
    // (the assertion); `T` is a float or a pair of floats, for which any bits are a value; the
    // slice is the only view of `space` while `f` runs.
    let buf = unsafe { std::slice::from_raw_parts_mut(space.as_mut_ptr().cast::<T>(), len) };
    let out = f(buf);
    SPACE.set(space);
    out
}

/// How many columns ahead the packing of a column-major operand asks for its lines: the
/// columns of a large array are pages apart, too far for the hardware's prefetcher (the
/// Cholesky update's products spent 14 % of the kernel's time packing without it, 6–7 % with).
const PF_DIST: usize = 4;

/// Rows `i0..i0 + h` and columns `p0..p0 + depth` of `x` into `buf` as panels of `R` rows:
/// panel `s` holds rows `i0 + s·R..` step by step (`R` elements a step, zeros below `h`).
///
/// # Safety
/// The rows and columns lie inside the live matrix `x` was made of; `buf` holds
/// `h.div_ceil(R)·R·depth` elements.
unsafe fn pack<T: KernelScalar, const R: usize>(
    buf: &mut [T],
    x: Operand<T>,
    (i0, h): (usize, usize),
    (p0, depth): (usize, usize),
) {
    // Whole panels of a column-major operand column by column.
    let done = if x.rs == 1 && h / R > 1 { h / R } else { 0 };
    if done > 0 {
        // SAFETY: the contract, for the first `done·R ≤ h` rows.
        unsafe { pack_columns::<T, R>(buf, x, (i0, done), (p0, depth)) };
    }
    // The rest panel by panel: a last part panel, or a row-major operand.
    for (s, panel) in buf
        .chunks_exact_mut(R * depth)
        .take(h.div_ceil(R))
        .enumerate()
        .skip(done)
    {
        let rows = R.min(h - s * R);
        for (p, step) in panel.chunks_exact_mut(R).enumerate() {
            let (i, j) = ((i0 + s * R) as isize, (p0 + p) as isize);
            // SAFETY: element `(i, j)` and the `rows - 1` below it lie inside the matrix.
            let src = unsafe { x.ptr.offset(i * x.rs + j * x.cs) };
            if rows == R && x.rs == 1 {
                // One copy of a known length (a call to `memcpy` otherwise).
                let step: &mut [T; R] = step.try_into().expect("steps of R elements");
                // SAFETY: `R` contiguous elements (the contract); any alignment.
                *step = unsafe { src.cast::<[T; R]>().read_unaligned() };
            } else {
                for (ii, y) in step.iter_mut().enumerate() {
                    // SAFETY: inside the matrix for `ii < rows` (the contract).
                    *y = if ii < rows {
                        unsafe { *src.offset(ii as isize * x.rs) }
                    } else {
                        T::zero()
                    };
                }
            }
        }
    }
}

/// Panels `0..panels` of [`pack`] for a column-major operand (`x.rs == 1`), column by column:
/// each step of depth reads the `panels·R` contiguous rows of one column (a stream) and asks
/// for the same lines `PF_DIST` columns ahead. The AVX2 narrow kernels copy their blocks of
/// `A` with it too.
///
/// # Safety
/// As [`pack`]'s, with `h = panels·R`.
pub(crate) unsafe fn pack_columns<T: KernelScalar, const R: usize>(
    buf: &mut [T],
    x: Operand<T>,
    (i0, panels): (usize, usize),
    (p0, depth): (usize, usize),
) {
    for p in 0..depth {
        // SAFETY: rows `i0..i0 + panels·R` of column `p0 + p` lie inside the matrix.
        let col = unsafe { x.ptr.offset(i0 as isize + (p0 + p) as isize * x.cs) };
        #[cfg(target_arch = "x86_64")]
        if p + PF_DIST < depth {
            let ahead = col.wrapping_offset(PF_DIST as isize * x.cs).cast::<u8>();
            let bytes = panels * R * size_of::<T>();
            for off in (0..bytes + 63).step_by(64) {
                // SAFETY: a prefetch of an address inside the matrix (or its last line).
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        ahead.wrapping_add(off.min(bytes - 1)).cast(),
                    )
                };
            }
        }
        for s in 0..panels {
            let at = s * R * depth + p * R;
            let step: &mut [T; R] = (&mut buf[at..at + R]).try_into().expect("R elements");
            // SAFETY: `R` contiguous elements of that column; any alignment.
            *step = unsafe { col.add(s * R).cast::<[T; R]>().read_unaligned() };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// A `($lanes·2) × 6` register tile of `$t` in AVX2 vectors, through the intrinsics named.
    macro_rules! micro {
        (
            $name:ident, $t:ty, $lanes:expr,
            $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident
        ) => {
            pub(super) mod $name {
                use std::arch::x86_64::*;

                /// Vectors in a column of the tile.
                const MV: usize = 2;
                /// Rows of the tile.
                pub(in super::super) const MR: usize = MV * $lanes;
                /// Columns of the tile.
                pub(in super::super) const NR: usize = 6;

                /// `C(MR × NR) = add·C + alpha·A·B` over `kc` steps.
                ///
                /// # Safety
                /// The CPU has AVX2 and FMA; `a` holds `kc·MR` elements, `b` `kc·NR`, `c` is
                /// an `MR × NR` block with column stride `ldc`, valid for writes and not
                /// overlapping the others.
                #[target_feature(enable = "avx2,fma")]
                pub(in super::super) unsafe fn micro(
                    kc: usize,
                    a: *const $t,
                    b: *const $t,
                    c: *mut $t,
                    ldc: usize,
                    alpha: $t,
                    add: bool,
                ) {
                    // SAFETY: as the contract.
                    unsafe {
                        for j in 0..NR {
                            // Hints only: the tile's first and last element of each column.
                            _mm_prefetch::<_MM_HINT_T0>(c.add(j * ldc).cast::<i8>());
                            _mm_prefetch::<_MM_HINT_T0>(c.add(j * ldc + MR - 1).cast::<i8>());
                        }
                        let mut acc = [[$zero(); MV]; NR];
                        let (mut ap, mut bp) = (a, b);
                        for _ in 0..kc {
                            let column = [$load(ap), $load(ap.add($lanes))];
                            for (j, acc) in acc.iter_mut().enumerate() {
                                let bb = $splat(*bp.add(j));
                                for (x, &y) in acc.iter_mut().zip(&column) {
                                    *x = $fma(y, bb, *x);
                                }
                            }
                            ap = ap.add(MR);
                            bp = bp.add(NR);
                        }
                        let alpha = $splat(alpha);
                        for (j, acc) in acc.iter().enumerate() {
                            for (q, &v) in acc.iter().enumerate() {
                                let cp = c.add(j * ldc + q * $lanes);
                                let out = match add {
                                    true => $fma(alpha, v, $load(cp)),
                                    false => $mul(alpha, v),
                                };
                                $store(cp, out);
                            }
                        }
                    }
                }
            }
        };
    }

    micro!(
        f64_8x6,
        f64,
        4,
        _mm256_setzero_pd,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_set1_pd,
        _mm256_fmadd_pd,
        _mm256_mul_pd
    );
    micro!(
        f32_16x6,
        f32,
        8,
        _mm256_setzero_ps,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_set1_ps,
        _mm256_fmadd_ps,
        _mm256_mul_ps
    );
}

#[cfg(test)]
thread_local! {
    /// Products the packed kernels took on this thread (tests only).
    static TAKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gemm, gemm_lower_labelled, reference, KernelError, Mat, MatRef};
    use redblue_core::{Op, RealScalar, Scalar};

    fn value<T: Scalar>(i: usize, j: usize, s: f64) -> T {
        T::from_f64_parts(((i * 7 + j * 13) as f64 * 0.37 + s).sin(), 0.0)
    }

    fn taken() -> u64 {
        TAKEN.with(|t| t.get())
    }

    /// `C = beta·C + alpha·op_a(A)·op_b(B)` by the packed kernel of `T` (called directly, on
    /// any CPU with AVX2 and FMA) and by the reference, equal within rounding: `A` and `B`
    /// stored with leading dimensions two above their rows, `C` column-major or (`row_major`)
    /// row-major, holding NaNs when `beta = 0`, `beta` 0 or 1.
    #[allow(clippy::too_many_arguments)]
    fn check<T: KernelScalar>(
        kernel: Kernel<T>,
        (m, n, k): (usize, usize, usize),
        (op_a, op_b): (Op, Op),
        row_major: bool,
        alpha: f64,
        beta: f64,
        par: Par,
    ) {
        let stored = |op: Op, r: usize, c: usize| if op == Op::NoTrans { (r, c) } else { (c, r) };
        let ((ar, ac), (br, bc)) = (stored(op_a, m, k), stored(op_b, k, n));
        let (lda, ldb) = (ar + 2, br + 2);
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
        let mut want = Mat::from_fn(m, n, start);
        let (alpha, beta) = (T::from_f64_parts(alpha, 0.0), T::from_f64_parts(beta, 0.0));
        reference::gemm(alpha, a, op_a, b, op_b, beta, want.as_mut()).unwrap();
        fn view<T>(x: MatRef<'_, T>, op: Op) -> faer::MatRef<'_, T> {
            match op {
                Op::NoTrans => x.to_faer(),
                _ => x.to_faer().transpose(),
            }
        }
        let accum = if beta == T::zero() {
            Accum::Replace
        } else {
            Accum::Add
        };
        let got = if row_major {
            let mut c = Mat::from_fn(n, m, |j, i| start(i, j));
            let dst = c.as_mut().into_faer().transpose_mut();
            assert!(product_with(
                kernel,
                dst,
                accum,
                view(a, op_a),
                view(b, op_b),
                alpha,
                par
            ));
            Mat::from_fn(m, n, |i, j| c[(j, i)])
        } else {
            let mut c = Mat::from_fn(m, n, start);
            let dst = c.as_mut().into_faer();
            assert!(product_with(
                kernel,
                dst,
                accum,
                view(a, op_a),
                view(b, op_b),
                alpha,
                par
            ));
            c
        };
        for j in 0..n {
            for i in 0..m {
                let (x, y) = (got[(i, j)], want[(i, j)]);
                let tol =
                    64.0 * k as f64 * <T as Scalar>::epsilon().to_f64() * (1.0 + y.abs().to_f64());
                assert!(
                    Scalar::abs(x - y).to_f64() <= tol,
                    "{m}×{n}×{k} {op_a:?} {op_b:?} ({i}, {j}): {x:?} against {y:?}"
                );
            }
        }
    }

    /// Shapes around the tiles and blocks (one row, edges of tiles, more than `MC` rows, `KC`
    /// steps and `NC` columns), both operands straight or transposed, `C` column- or row-major,
    /// `beta` 0 and 1, one and two threads.
    fn products<T: KernelScalar>(kernel: Kernel<T>) {
        let (nt, t) = (Op::NoTrans, Op::Trans);
        let shapes = [
            (1, 1, 1),
            (kernel.mr, kernel.nr, 3),
            (kernel.mr + 1, kernel.nr - 1, 70),
            (MC + 5, 13, KC + 7),
            (37, NC + 11, 9),
            (2 * MC + 3, 2 * kernel.nr + 1, 2 * KC + 1),
        ];
        for (m, n, k) in shapes {
            for (ops, row_major, alpha, beta, par) in [
                ((nt, nt), false, 1.0, 0.0, Par::Seq),
                ((t, nt), false, -1.0, 1.0, Par::Seq),
                ((nt, t), true, 0.5, 1.0, Par::Seq),
                ((t, t), true, 2.0, 0.0, Par::Threads(2)),
                ((nt, nt), false, -1.0, 1.0, Par::Threads(3)),
            ] {
                check::<T>(kernel, (m, n, k), ops, row_major, alpha, beta, par);
            }
        }
    }

    #[test]
    fn f64_products() {
        if let Some(kernel) = kernel_of!(f64_8x6).filter(|_| isa() != Isa::Base) {
            products::<f64>(kernel);
        }
    }

    #[test]
    fn f32_products() {
        if let Some(kernel) = kernel_of!(f32_16x6).filter(|_| isa() != Isa::Base) {
            products::<f32>(kernel);
        }
    }

    /// Rows and columns of a larger matrix, ascending with gaps: `len` labels from `start`,
    /// every third one skipped, every fifth one a tile apart from the one before.
    fn labels(start: usize, len: usize) -> Vec<usize> {
        let mut next = start;
        (0..len)
            .map(|x| {
                next += 1 + usize::from(x % 3 == 0) + if x % 5 == 4 { 8 } else { 0 };
                next
            })
            .collect()
    }

    /// `C += alpha·A·Bᵀ` on the entries with `rows[i] >= cols[k]` by the packed kernel (called
    /// directly), against the reference product added entry by entry; every other entry of
    /// `C` as it was. `A` and `B` stored with leading dimensions above their rows.
    fn check_lower<T: KernelScalar>(
        kernel: Kernel<T>,
        (m, n, k): (usize, usize, usize),
        (rows, cols): (&[usize], &[usize]),
    ) {
        let (lda, ldb) = (m + 3, n + 1);
        let a_data: Vec<T> = (0..lda * k).map(|x| value(x % lda, x / lda, 0.1)).collect();
        let b_data: Vec<T> = (0..ldb * k).map(|x| value(x % ldb, x / ldb, 0.7)).collect();
        let a = MatRef::from_slice(&a_data, m, k, lda).unwrap();
        let b = MatRef::from_slice(&b_data, n, k, ldb).unwrap();
        let alpha = T::from_f64_parts(-1.0, 0.0);
        let start = |i, j| value::<T>(i, j, 0.3);
        let mut full = Mat::<T>::zeros(m, n);
        reference::gemm(
            alpha,
            a,
            Op::NoTrans,
            b,
            Op::Trans,
            T::zero(),
            full.as_mut(),
        )
        .unwrap();
        let mut c = Mat::from_fn(m, n, start);
        let rhs = b.to_faer().transpose();
        assert!(lower_product(
            kernel,
            c.as_mut().into_faer(),
            a.to_faer(),
            rhs,
            alpha,
            (rows, cols)
        ));
        for j in 0..n {
            for i in 0..m {
                let want = start(i, j)
                    + if rows[i] >= cols[j] {
                        full[(i, j)]
                    } else {
                        T::zero()
                    };
                let (x, tol) = (
                    c[(i, j)],
                    64.0 * k as f64 * <T as Scalar>::epsilon().to_f64(),
                );
                assert!(
                    Scalar::abs(x - want).to_f64() <= tol * (1.0 + want.abs().to_f64()),
                    "{m}×{n}×{k} ({i}, {j}) rows {} cols {}: {x:?} against {want:?}",
                    rows[i],
                    cols[j]
                );
            }
        }
    }

    /// Labelled lower products across tiles, blocks of rows and of depth, and more columns
    /// than `NC`: rows from above the first column (skipped), the same labels on both sides
    /// (a square triangle), columns past the last row (never added).
    fn lower_products<T: KernelScalar>(kernel: Kernel<T>) {
        let square = labels(0, 2 * MC + 5);
        for (m, n, k, rows, cols) in [
            (1, 1, 1, vec![3], vec![3]),
            (
                kernel.mr + 3,
                kernel.nr + 2,
                5,
                labels(0, kernel.mr + 3),
                labels(2, kernel.nr + 2),
            ),
            (2 * MC + 5, 2 * MC + 5, KC + 9, square.clone(), square),
            (MC + 7, 40, 17, labels(100, MC + 7), labels(20, 40)),
            (30, 50, 3, labels(0, 30), labels(10, 50)),
            (9, NC + 13, 2, labels(NC + 40, 9), labels(0, NC + 13)),
        ] {
            check_lower::<T>(kernel, (m, n, k), (&rows, &cols));
        }
    }

    #[test]
    fn f64_lower_products() {
        if let Some(kernel) = kernel_of!(f64_8x6).filter(|_| isa() != Isa::Base) {
            lower_products::<f64>(kernel);
        }
    }

    #[test]
    fn f32_lower_products() {
        if let Some(kernel) = kernel_of!(f32_16x6).filter(|_| isa() != Isa::Base) {
            lower_products::<f32>(kernel);
        }
    }

    /// Through `gemm_lower_labelled`: taken exactly where the packed products are, on one
    /// thread, for ascending labels; the labels' lengths checked.
    #[test]
    fn labelled_lower_product_is_taken_on_avx2_only() {
        fn took<T: KernelScalar>(rows: &[usize], par: Par) -> bool {
            let a = Mat::<T>::from_fn(rows.len(), 4, |i, j| value(i, j, 0.1));
            let b = Mat::<T>::from_fn(3, 4, |i, j| value(i, j, 0.2));
            let mut c = Mat::<T>::zeros(rows.len(), 3);
            let one = T::one();
            let labels = (rows, &[0, 1, 2][..]);
            let taken = gemm_lower_labelled(one, a.as_ref(), b.as_ref(), c.as_mut(), labels, par);
            let untouched = (0..rows.len()).all(|i| (0..3).all(|j| c[(i, j)] == T::zero()));
            assert_eq!(taken.unwrap(), !untouched);
            !untouched
        }
        let expected = isa() == Isa::V3 && !crate::system::system_blas_active();
        assert_eq!(took::<f64>(&[0, 1, 2, 3], Par::Seq), expected);
        assert_eq!(took::<f32>(&[0, 1, 2, 3], Par::Seq), expected);
        assert!(!took::<f64>(&[0, 2, 1, 3], Par::Seq));
        assert!(!took::<f64>(&[0, 1, 2, 3], Par::Threads(2)));
        assert!(!took::<redblue_core::Complex<f64>>(&[0, 1, 2, 3], Par::Seq));
        let (a, b) = (Mat::<f64>::zeros(4, 2), Mat::<f64>::zeros(3, 2));
        let mut c = Mat::<f64>::zeros(4, 3);
        let short = gemm_lower_labelled(
            1.0,
            a.as_ref(),
            b.as_ref(),
            c.as_mut(),
            (&[0, 1, 2], &[0, 1, 2]),
            Par::Seq,
        );
        assert!(matches!(
            short,
            Err(KernelError::ShapeMismatch {
                operand: "rows",
                ..
            })
        ));
    }

    /// Through `gemm`: a large real product takes the packed kernels exactly on AVX2 CPUs
    /// without AVX-512 when no system BLAS takes it first; complex ones never.
    #[test]
    fn taken_on_avx2_only() {
        fn took<T: KernelScalar>() -> bool {
            let a = Mat::<T>::from_fn(100, 90, |i, j| value(i, j, 0.1));
            let b = Mat::<T>::from_fn(90, 80, |i, j| value(i, j, 0.2));
            let mut c = Mat::<T>::zeros(100, 80);
            let before = taken();
            let (nt, one) = (Op::NoTrans, T::one());
            gemm(
                one,
                a.as_ref(),
                nt,
                b.as_ref(),
                nt,
                one,
                c.as_mut(),
                Par::Seq,
            )
            .unwrap();
            taken() > before
        }
        let expected = isa() == Isa::V3 && !crate::system::system_blas_active();
        assert_eq!(took::<f64>(), expected);
        assert_eq!(took::<f32>(), expected);
        assert!(!took::<redblue_core::Complex<f64>>());
        assert!(!took::<redblue_core::Complex<f32>>());
    }
}
