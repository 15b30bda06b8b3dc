//! Prints (as `series,x,y` lines) the words each rank receives, by the cost model, against the
//! number of ranks, for COSMA, SUMMA, 2.5D, Cannon and CARMA on `m = n = k = 16384` with unlimited
//! memory, and the lower bound. `cargo xtask plot` draws it to `book/src/img/gemm-words.svg`.

use redblue_gemm::{parallel_lower_bound, Algorithm, GemmShape, PlanOptions};

/// A curve: name and points `(P, words)`.
type Series = (String, Vec<(f64, f64)>);

fn main() {
    let shape = GemmShape::new(16384, 16384, 16384);
    let mut ranks: Vec<usize> = (0..=12)
        .flat_map(|e| [1usize << e, 3 << e])
        .filter(|&p| p <= 4096)
        .collect();
    ranks.sort_unstable();
    let options = PlanOptions::default();
    let mut series: Vec<Series> = Vec::new();
    for algorithm in [
        Algorithm::Cosma,
        Algorithm::Summa,
        Algorithm::TwoAndHalfD,
        Algorithm::Cannon,
        Algorithm::Carma,
    ] {
        let points = ranks
            .iter()
            .filter(|&&p| p > 1)
            .filter_map(|&p| {
                let s = algorithm
                    .schedule(shape, p, &options)
                    .expect("unlimited memory plans");
                // A log plot: a schedule that leaves all work on one rank moves nothing but
                // its memory agreement.
                (s.ranks() > 1).then(|| (p as f64, s.cost(shape, p).words_received_max as f64))
            })
            .collect();
        series.push((algorithm.to_string(), points));
    }
    let bound = ranks
        .iter()
        .filter(|&&p| p > 1)
        .map(|&p| (p as f64, parallel_lower_bound(shape, p, None)))
        .filter(|&(_, words)| words > 0.0)
        .collect();
    series.push(("lower bound".into(), bound));

    println!("# title: words received per rank (model), m = n = k = 16384, unlimited memory");
    println!("series,x,y");
    for (name, points) in &series {
        for (p, words) in points {
            println!("{name},{p},{words}");
        }
    }
}
