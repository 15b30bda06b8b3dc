//! The kernels' own loops compiled for the CPU's widest vectors: a generic body instantiated
//! for AVX-512, for AVX2 + FMA and for the baseline, the widest the running CPU has chosen at
//! run time.
//!
//! The crate is built for the baseline `x86-64` (SSE2), so a loop of its own works on two
//! `f64` at a time, where the `gemm` crate's kernels pick AVX-512 at run time. The column by
//! column leaf of [`getrf`](crate::getrf) ran at 38 GFLOP/s on a `4096 × 128` panel (one Zen 5
//! core), OpenBLAS's at 65: most of it in its SSE2 pivot search and rank-1 updates.
//!
//! Rounding is the baseline's: the bodies use no fused multiply-add the baseline would not
//! (Rust does not contract `a·b + c`), so every instantiation computes the same numbers.

/// The widest vector extensions of the running CPU that the kernels' own loops use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX-512 (F, VL, DQ, BW) with AVX2 and FMA.
    V4,
    /// AVX2 with FMA.
    V3,
    /// The baseline of the build target.
    Base,
}

/// The running CPU's [`Isa`] (the standard library caches the detection).
#[inline]
pub(crate) fn isa() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            return Isa::V4;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Isa::V3;
        }
    }
    Isa::Base
}

/// `fn $name<T: Bound>(args) -> R`, calling the `#[inline(always)]` generic `$body`
/// instantiated for the widest [`Isa`] of the running CPU.
macro_rules! widest {
    ($(#[$meta:meta])* $vis:vis fn $name:ident<T: $bound:path>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $body:ident) => {
        $(#[$meta])*
        $vis fn $name<T: $bound>($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
                fn v4<T: $bound>($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn v3<T: $bound>($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                match $crate::simd::isa() {
                    // SAFETY: the running CPU has the features each instantiation enables.
                    $crate::simd::Isa::V4 => return unsafe { v4($($arg),*) },
                    // SAFETY: as above.
                    $crate::simd::Isa::V3 => return unsafe { v3($($arg),*) },
                    $crate::simd::Isa::Base => {}
                }
            }
            $body($($arg),*)
        }
    };
}

pub(crate) use widest;
