//! Least-squares fits of power laws on log-log data: the exponent `e` and the constant `c` of
//! `y ≈ c·xᵉ`.

/// A fitted power law `y ≈ coefficient · x^exponent`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowerLaw {
    /// The slope of `ln y` against `ln x`.
    pub exponent: f64,
    /// `exp` of the intercept.
    pub coefficient: f64,
}

/// Fits `ln y = ln c + e·ln x` by least squares over the points with `x > 0` and `y > 0`;
/// `None` with fewer than two such points or a single distinct `x`.
pub fn fit_power_law(xs: &[f64], ys: &[f64]) -> Option<PowerLaw> {
    let points: Vec<(f64, f64)> = xs
        .iter()
        .zip(ys)
        .filter(|(x, y)| **x > 0.0 && **y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    if points.len() < 2 {
        return None;
    }
    let count = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / count;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let exponent = sxy / sxx;
    Some(PowerLaw {
        exponent,
        coefficient: (mean_y - exponent * mean_x).exp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_an_exact_power_law() {
        let xs = [2.0, 4.0, 8.0, 16.0];
        let ys: Vec<f64> = xs.iter().map(|x: &f64| 3.0 * x.powf(-1.5)).collect();
        let fit = fit_power_law(&xs, &ys).unwrap();
        assert!((fit.exponent + 1.5).abs() < 1e-12);
        assert!((fit.coefficient - 3.0).abs() < 1e-9);
    }

    #[test]
    fn degenerate_data_has_no_fit() {
        assert_eq!(fit_power_law(&[1.0], &[1.0]), None);
        assert_eq!(fit_power_law(&[2.0, 2.0], &[1.0, 3.0]), None);
        assert_eq!(fit_power_law(&[1.0, 2.0], &[0.0, 3.0]), None);
    }
}
