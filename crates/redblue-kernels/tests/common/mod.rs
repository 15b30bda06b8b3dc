//! Test helpers shared by the kernel tests: deterministic inputs, padded buffers, norms and the
//! normalised error bound.

#![allow(dead_code)]

use redblue_core::{c32, c64, Op, RealScalar, Scalar};
use redblue_kernels::{KernelScalar, MatMut, MatRef, Par};

/// A 64-bit linear congruential generator (Knuth's MMIX constants): deterministic inputs
/// without a dependency, so a failure reproduces bit for bit.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Self {
        Lcg(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in `[-1, 1)`.
    pub fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64) / ((1u64 << 52) as f64) - 1.0
    }

    pub fn scalar<T: Scalar>(&mut self) -> T {
        let re = self.uniform();
        let im = self.uniform();
        T::from_f64_parts(re, im)
    }
}

/// A column-major buffer whose leading dimension exceeds the row count, with the padding
/// rows set to NaN: a kernel that reads padding produces NaN, one that writes it is caught by
/// [`Padded::padding_intact`].
#[derive(Clone)]
pub struct Padded<T> {
    pub data: Vec<T>,
    pub nrows: usize,
    pub ncols: usize,
    pub ld: usize,
}

pub fn nan<T: Scalar>() -> T {
    T::from_f64_parts(f64::NAN, f64::NAN)
}

impl<T: Scalar> Padded<T> {
    /// Random `nrows × ncols` elements, `pad` NaN rows below each column.
    pub fn random(rng: &mut Lcg, nrows: usize, ncols: usize, pad: usize) -> Self {
        Self::from_fn(nrows, ncols, pad, |_, _| rng.scalar())
    }

    pub fn from_fn(
        nrows: usize,
        ncols: usize,
        pad: usize,
        mut f: impl FnMut(usize, usize) -> T,
    ) -> Self {
        let ld = nrows + pad.max(usize::from(nrows == 0));
        let mut data = vec![nan::<T>(); ld * ncols];
        for j in 0..ncols {
            for i in 0..nrows {
                data[i + j * ld] = f(i, j);
            }
        }
        Padded {
            data,
            nrows,
            ncols,
            ld,
        }
    }

    pub fn view(&self) -> MatRef<'_, T> {
        MatRef::from_slice(&self.data, self.nrows, self.ncols, self.ld).unwrap()
    }

    pub fn view_mut(&mut self) -> MatMut<'_, T> {
        MatMut::from_slice(&mut self.data, self.nrows, self.ncols, self.ld).unwrap()
    }

    pub fn get(&self, i: usize, j: usize) -> T {
        self.data[i + j * self.ld]
    }

    pub fn set(&mut self, i: usize, j: usize, v: T) {
        self.data[i + j * self.ld] = v;
    }

    /// Whether every padding element is still bit-identical to `before`'s.
    pub fn padding_intact(&self, before: &Self) -> bool {
        (0..self.ncols)
            .all(|j| (self.nrows..self.ld).all(|i| same_bits(self.get(i, j), before.get(i, j))))
    }
}

/// Bitwise equality through `f64` (exact for `f32` and `f64` values, NaN payloads included).
pub fn same_bits<T: Scalar>(x: T, y: T) -> bool {
    x.re().to_f64().to_bits() == y.re().to_f64().to_bits()
        && x.im().to_f64().to_bits() == y.im().to_f64().to_bits()
}

/// Frobenius norm of the elements `(i, j)` of `x` with `keep(i, j)`.
pub fn fro<T: Scalar>(x: &Padded<T>, keep: impl Fn(usize, usize) -> bool) -> f64 {
    let mut s = 0.0;
    for j in 0..x.ncols {
        for i in 0..x.nrows {
            if keep(i, j) {
                s += x.get(i, j).abs_sqr().to_f64();
            }
        }
    }
    s.sqrt()
}

/// Frobenius norm of `x − y` over the elements with `keep(i, j)`.
pub fn fro_diff<T: Scalar>(
    x: &Padded<T>,
    y: &Padded<T>,
    keep: impl Fn(usize, usize) -> bool,
) -> f64 {
    let mut s = 0.0;
    for j in 0..x.ncols {
        for i in 0..x.nrows {
            if keep(i, j) {
                s += (x.get(i, j) - y.get(i, j)).abs_sqr().to_f64();
            }
        }
    }
    s.sqrt()
}

/// The constant `c` of the bound `‖C − C_ref‖_F ≤ c·k·ε·(|α|·‖A‖_F·‖B‖_F + |β|·‖C₀‖_F)`.
///
/// Each inner product has error at most about `k·ε·Σ|a||b|` in the kernel and again in the
/// reference, so `c = 2` would do for real types; complex multiplication adds a factor of
/// about `√2`, and `c = 4` covers both with margin.
pub const BOUND_C: f64 = 4.0;

/// The normalised error bound, with `k` replaced by `max(k, 1)` so the scaling by `beta` alone
/// (k = 0) is allowed its one rounding.
pub fn bound<T: Scalar>(
    k: usize,
    alpha: T,
    norm_a: f64,
    norm_b: f64,
    beta: T,
    norm_c0: f64,
) -> f64 {
    let eps = T::epsilon().to_f64();
    BOUND_C
        * (k.max(1) as f64)
        * eps
        * (alpha.abs().to_f64() * norm_a * norm_b + beta.abs().to_f64() * norm_c0)
}

/// The stored shape of an operand whose `op` is `rows × cols`.
pub fn stored(op: Op, rows: usize, cols: usize) -> (usize, usize) {
    op.apply_shape((rows, cols))
}

/// Shapes `(m, n, k)`: empty, single elements, block sizes ± 1, tall, wide and deep.
pub const SHAPES: &[(usize, usize, usize)] = &[
    (0, 0, 0),
    (0, 4, 3),
    (4, 0, 3),
    (4, 3, 0),
    (1, 1, 1),
    (1, 7, 5),
    (7, 1, 5),
    (5, 7, 1),
    (63, 63, 63),
    (64, 64, 64),
    (65, 65, 65),
    (65, 63, 64),
    (130, 7, 33),
    (7, 130, 33),
    (3, 4, 150),
];

pub const PARS: [Par; 2] = [Par::Seq, Par::Threads(2)];

/// Calls `f::<T>()` for the four scalar types.
#[macro_export]
macro_rules! for_all_scalars {
    ($f:ident $(, $arg:expr)*) => {{
        $f::<f32>($($arg),*);
        $f::<f64>($($arg),*);
        $f::<redblue_core::c32>($($arg),*);
        $f::<redblue_core::c64>($($arg),*);
    }};
}

/// An `alpha` and a `beta` that exercise every part of complex arithmetic (for real types the
/// imaginary parts are dropped).
pub fn alpha_beta<T: Scalar>() -> (T, T) {
    (
        T::from_f64_parts(0.75, -0.5),
        T::from_f64_parts(-0.625, 0.375),
    )
}

/// A kernel-scalar type list sanity check, so the macro's four types stay in sync with
/// `KernelScalar`.
pub fn _types_are_kernel_scalars() {
    fn is<T: KernelScalar>() {}
    is::<f32>();
    is::<f64>();
    is::<c32>();
    is::<c64>();
}
