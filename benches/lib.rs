//! criterion benchmarks of redblue live in this package's `[[bench]]` targets; run them with
//! `cargo bench -p redblue-benches`.

/// The median of `xs` (the mean of the middle two for an even count; NaN-free input).
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.is_empty() {
        f64::NAN
    } else if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// Re-runs this program without `OPENBLAS_CORETYPE` if it is set, saying so under the bench's
/// `name`. OpenBLAS reads the variable when it is loaded, before `main`; a forced `Haswell`
/// halves its speed on an AVX-512 core, so a bench cannot unset it for itself.
pub fn without_forced_coretype(name: &str) {
    let Some(forced) = std::env::var_os("OPENBLAS_CORETYPE") else {
        return;
    };
    println!(
        "{name} bench: OPENBLAS_CORETYPE={} was set; re-running without it so that OpenBLAS \
         picks its kernels for this CPU",
        forced.to_string_lossy()
    );
    let status = std::process::Command::new(std::env::current_exe().expect("own path"))
        .args(std::env::args_os().skip(1))
        .env_remove("OPENBLAS_CORETYPE")
        .status()
        .expect("re-running the benchmark");
    std::process::exit(status.code().unwrap_or(1));
}
