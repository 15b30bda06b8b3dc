//! [`factor_residual`]: `‖P·A − L·U‖₁ / (‖A‖₁·n·ε)` of an out-of-core LU, `A` and the factors
//! streamed from their files a panel at a time (ScaLAPACK's LU tester's measure).

use crate::{DiskMatrix, OocError};
use redblue_core::{Op, RealScalar};
use redblue_kernels::{gemm, laswp, Direction, KernelScalar, MatMut, MatRef, Par};

/// The residual of the factors in `f` (`L\U` in the rows of `P·A`, as the left-looking LUs
/// leave them) and `ipiv` against `A` in `a`: for each panel of columns `j`, `L·U` of those
/// columns from the panels `i ≤ j` (`L`'s unit lower trapezoids times `U`'s blocks), then
/// compared with `A`'s columns interchanged by `ipiv`. Reads `Σⱼ (Σ_{i≤j} (m − iw)·wᵢ + wⱼ·(j+1)·w
/// + m·wⱼ)` elements; costs as many flops as the factorisation.
///
/// # Errors
/// [`OocError::Invalid`] for files of other shapes or pivots of another length; the disk's.
pub fn factor_residual<T: KernelScalar>(
    a: &mut DiskMatrix<T>,
    f: &mut DiskMatrix<T>,
    ipiv: &[usize],
    par: Par,
) -> Result<f64, OocError> {
    let (m, n) = f.shape();
    if a.shape() != (m, n) || m != n || ipiv.len() != m || a.panel() != f.panel() {
        return Err(OocError::Invalid(format!(
            "{} and {}: a residual of {} x {} factors, {} pivots, from a {} x {} matrix",
            f.path().display(),
            a.path().display(),
            m,
            n,
            ipiv.len(),
            a.shape().0,
            a.shape().1
        )));
    }
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    let (mut worst, mut a_norm) = (0.0f64, 0.0f64);
    for j in 0..f.panels() {
        let cj = f.panel_cols(j);
        let wj = cj.len();
        let mut lu = vec![T::zero(); m * wj];
        for i in 0..=j {
            let ci = f.panel_cols(i);
            let (ri, wi, h) = (ci.start, ci.len(), m - ci.start);
            // L's columns ci: rows ri.., unit lower in the diagonal block.
            let mut l = vec![T::zero(); h * wi];
            f.read(ri..m, ci.clone(), &mut l)?;
            for c in 0..wi {
                l[c * h..c * h + c].fill(T::zero());
                l[c * h + c] = T::one();
            }
            // U's rows ri..ri+wi of the columns cj (upper triangular when i = j).
            let mut u = vec![T::zero(); wi * wj];
            f.read(ri..ri + wi, cj.clone(), &mut u)?;
            if i == j {
                for c in 0..wj {
                    u[c * wi + c + 1..(c + 1) * wi].fill(T::zero());
                }
            }
            let l = MatRef::from_slice(&l, h, wi, h).map_err(kernel)?;
            let u = MatRef::from_slice(&u, wi, wj, wi).map_err(kernel)?;
            let dst = MatMut::from_slice(&mut lu[ri..], h, wj, m).map_err(kernel)?;
            gemm(T::one(), l, Op::NoTrans, u, Op::NoTrans, T::one(), dst, par).map_err(kernel)?;
        }
        let mut pa = vec![T::zero(); m * wj];
        a.read(0..m, cj, &mut pa)?;
        for c in 0..wj {
            let col = |v: &[T]| {
                v[c * m..(c + 1) * m]
                    .iter()
                    .map(|x| x.abs().to_f64())
                    .sum::<f64>()
            };
            a_norm = a_norm.max(col(&pa));
        }
        let view = MatMut::from_slice(&mut pa, m, wj, m).map_err(kernel)?;
        laswp(view, ipiv, Direction::Forward).map_err(kernel)?;
        for c in 0..wj {
            let diff: f64 = (0..m)
                .map(|r| (pa[c * m + r] - lu[c * m + r]).abs().to_f64())
                .sum();
            worst = worst.max(diff);
        }
    }
    let denom = a_norm * m as f64 * T::epsilon().to_f64();
    Ok(if denom > 0.0 { worst / denom } else { worst })
}
