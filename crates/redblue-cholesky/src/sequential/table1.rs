//! Table 1 of seed 002 reproduced: for each (algorithm, layout) pair of the table, sweeps of
//! `n` at fixed `M` and of `M` at fixed `n`, the exponents of words and messages fitted on
//! log-log, the exponents the paper's orders give, and the largest ratios to the lower-bound
//! curves `n³/√M` and `n³/M^{3/2}`.
//!
//! The sweeps stay where the orders are asymptotic: `n ≫ √M` (at least 9·√M) so that
//! `n³/√M` dominates `n²` and `n² log n`, `M = 3·4^k` so that `b = ⌊√(M/3)⌋ = 2^k` and the
//! recursive leaves (`2^k` cubes, `s² ≤ M` squares) scale exactly with `√M`, and for the naive
//! algorithms `M ≥ 2n` (two columns fit, their own sweeps). Two more rows need care:
//! - the conversion row keeps `M ≤ n` (the paper's condition for the conversion's
//!   `O(n²/√M)` messages to be dominated); as `M` nears `n` the conversion shows, and the
//!   fitted `M`-exponent of messages drifts from −1.5 towards the conversion's −0.5;
//! - the rectangular recursive algorithm on Morton storage (general sweeps) has messages
//!   `≈ n²·[n > M] + c·n³/M^{3/2}`: each column longer than `M` is streamed in about one
//!   message per two elements (a Morton column is runs of two), the `Ω(n²)` of the table, but
//!   its GEMMs add the `n³/M^{3/2}` term with a larger constant (`c ≈ 3.5`, measured at
//!   `n = 4096`, `M = 48`), so that `n²`
//!   dominates only for `M < n < M^{3/2}/3.5`. Any affordable sweep sits across the crossover:
//!   the fitted exponents lie between those of the two terms, and the non-optimality shows as
//!   the ratio to `n³/M^{3/2}` growing with `M` at fixed `n` (see the tests).

use super::{
    fit_power_law, lapack_block_size, lower_bounds, simulate_with_conversion, Algorithm, IoCounts,
    SimError, Storage,
};
use std::fmt;

/// How big the sweeps are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Table1Scale {
    /// Small sweeps for debug-mode tests (well under a second each row): `n ≤ 256`,
    /// `12 ≤ M ≤ 192` (naive: `M` up to 4096).
    Quick,
    /// The sweeps of the book, for a release build (about ten seconds in all): `n` up to 1024,
    /// `48 ≤ M ≤ 12288` (`M ≤ 768` for the conversion row, `M ≥ 3072` for the naive ones).
    Full,
}

/// The layout of a Table 1 row (the blocked layout's block size follows `M`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Table1Layout {
    /// Column-major.
    ColMajor,
    /// Blocked with LAPACK's block size `b = ⌊√(M/3)⌋`.
    BlockedLapack,
    /// Morton (block-recursive).
    Morton,
    /// Column-major, converted on the fly to Morton and back (§3.1.1).
    ColMajorViaMorton,
}

impl Table1Layout {
    /// `(stored, working)` layouts for a fast memory of `m` words.
    fn storages(self, m: usize) -> (Storage, Storage) {
        match self {
            Table1Layout::ColMajor => (Storage::ColMajor, Storage::ColMajor),
            Table1Layout::BlockedLapack => {
                let blocked = Storage::Blocked {
                    b: lapack_block_size(m).max(1),
                };
                (blocked, blocked)
            }
            Table1Layout::Morton => (Storage::Morton, Storage::Morton),
            Table1Layout::ColMajorViaMorton => (Storage::ColMajor, Storage::Morton),
        }
    }
}

impl fmt::Display for Table1Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Table1Layout::ColMajor => "column-major",
            Table1Layout::BlockedLapack => "blocked, b = ⌊√(M/3)⌋",
            Table1Layout::Morton => "Morton",
            Table1Layout::ColMajorViaMorton => "column-major → Morton on the fly",
        })
    }
}

/// An exponent the paper's order predicts in the sweep's regime.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expected {
    /// This exponent (the order is `Θ` or a tight `O`).
    Exactly(f64),
    /// Somewhere in `[low, high]`: the sweep crosses between two terms of the count.
    Between(f64, f64),
}

impl Expected {
    /// Whether `measured` agrees within `tolerance`.
    pub fn agrees(self, measured: f64, tolerance: f64) -> bool {
        match self {
            Expected::Exactly(e) => (measured - e).abs() <= tolerance,
            Expected::Between(low, high) => {
                low - tolerance <= measured && measured <= high + tolerance
            }
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Exactly(e) => write!(f, "{e}"),
            Expected::Between(low, high) => write!(f, "{low}…{high}"),
        }
    }
}

/// Four exponents: of words and messages, in `n` (fixed `M`) and in `M` (fixed `n`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Exponents<T> {
    /// Words against `n`.
    pub words_n: T,
    /// Words against `M`.
    pub words_m: T,
    /// Messages against `n`.
    pub messages_n: T,
    /// Messages against `M`.
    pub messages_m: T,
}

/// The two sweeps of a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// `M` of the sweep in `n`.
    pub fixed_fast_words: usize,
    /// The orders of the sweep in `n`.
    pub orders: Vec<usize>,
    /// `n` of the sweep in `M`.
    pub fixed_order: usize,
    /// The fast-memory sizes of the sweep in `M`.
    pub fast_words: Vec<usize>,
}

impl fmt::Display for Sweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        write!(
            f,
            "n∈{{{}}} at M={}; M∈{{{}}} at n={}",
            list(&self.orders),
            self.fixed_fast_words,
            list(&self.fast_words),
            self.fixed_order
        )
    }
}

/// One measured point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// `n`.
    pub order: usize,
    /// `M`.
    pub fast_words: usize,
    /// What moved.
    pub counts: IoCounts,
}

impl Point {
    /// Words over `n³/√M`.
    pub fn words_ratio(&self) -> f64 {
        self.counts.words as f64 / lower_bounds(self.order, self.fast_words).0
    }

    /// Messages over `n³/M^{3/2}`.
    pub fn messages_ratio(&self) -> f64 {
        self.counts.messages as f64 / lower_bounds(self.order, self.fast_words).1
    }
}

/// One row of Table 1: the paper's orders, the exponents they give, the fitted ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Table1Row {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The layout.
    pub layout: Table1Layout,
    /// The paper's bandwidth entry.
    pub paper_words: &'static str,
    /// The paper's latency entry.
    pub paper_messages: &'static str,
    /// The exponents the paper's orders give in the sweeps' regime.
    pub expected: Exponents<Expected>,
    /// The fitted exponents.
    pub measured: Exponents<f64>,
    /// The sweeps.
    pub sweep: Sweep,
    /// The sweep in `n`, then the sweep in `M`.
    pub points: Vec<Point>,
}

impl Table1Row {
    /// The largest `W/(n³/√M)` over both sweeps.
    pub fn max_words_ratio(&self) -> f64 {
        self.points
            .iter()
            .map(Point::words_ratio)
            .fold(0.0, f64::max)
    }

    /// The largest `S/(n³/M^{3/2})` over both sweeps.
    pub fn max_messages_ratio(&self) -> f64 {
        self.points
            .iter()
            .map(Point::messages_ratio)
            .fold(0.0, f64::max)
    }

    /// The exponents that disagree with the paper's by more than `tolerance`, described.
    pub fn mismatches(&self, tolerance: f64) -> Vec<String> {
        let (e, m) = (self.expected, self.measured);
        [
            ("words vs n", e.words_n, m.words_n),
            ("words vs M", e.words_m, m.words_m),
            ("messages vs n", e.messages_n, m.messages_n),
            ("messages vs M", e.messages_m, m.messages_m),
        ]
        .into_iter()
        .filter(|(_, expected, measured)| !expected.agrees(*measured, tolerance))
        .map(|(what, expected, measured)| {
            format!(
                "{} on {}: {what} exponent {measured:.3}, expected {expected} ± {tolerance}",
                self.algorithm, self.layout
            )
        })
        .collect()
    }
}

/// The reproduced Table 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Table1 {
    /// One row per (algorithm, layout) of the paper's table, plus the conversion.
    pub rows: Vec<Table1Row>,
}

impl fmt::Display for Table1 {
    /// A Markdown table: paper's order, expected and fitted exponents, largest ratios.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| algorithm | layout | words (paper) | messages (paper) | W: n-exp exp./fit | \
             W: M-exp exp./fit | S: n-exp exp./fit | S: M-exp exp./fit | max W/(n³/√M) | \
             max S/(n³/M^1.5) | sweeps |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|---|---|")?;
        for row in &self.rows {
            let (e, m) = (row.expected, row.measured);
            writeln!(
                f,
                "| {} | {} | {} | {} | {} / {:.2} | {} / {:.2} | {} / {:.2} | {} / {:.2} | \
                 {:.2} | {:.2} | {} |",
                row.algorithm,
                row.layout,
                row.paper_words,
                row.paper_messages,
                e.words_n,
                m.words_n,
                e.words_m,
                m.words_m,
                e.messages_n,
                m.messages_n,
                e.messages_m,
                m.messages_m,
                row.max_words_ratio(),
                row.max_messages_ratio(),
                row.sweep
            )?;
        }
        writeln!(
            f,
            "\nLower bound (Corollary 6): Ω(n³/√M) words, Ω(n³/M^{{3/2}}) messages; the ratios \
             use these curves with constant 1 (the corollary's constant is unspecified)."
        )
    }
}

/// A row to measure: what the paper says and where to look.
struct RowSpec {
    algorithm: Algorithm,
    layout: Table1Layout,
    paper_words: &'static str,
    paper_messages: &'static str,
    expected: Exponents<Expected>,
    sweep: Sweep,
}

fn exact(words_n: f64, words_m: f64, messages_n: f64, messages_m: f64) -> Exponents<Expected> {
    Exponents {
        words_n: Expected::Exactly(words_n),
        words_m: Expected::Exactly(words_m),
        messages_n: Expected::Exactly(messages_n),
        messages_m: Expected::Exactly(messages_m),
    }
}

/// The sweeps of each scale (see [`Table1Scale`]).
fn sweeps(scale: Table1Scale) -> (Sweep, Sweep, Sweep) {
    match scale {
        Table1Scale::Quick => (
            Sweep {
                fixed_fast_words: 48,
                orders: vec![64, 128, 256],
                fixed_order: 256,
                fast_words: vec![12, 48, 192],
            },
            Sweep {
                fixed_fast_words: 256,
                orders: vec![32, 64, 128],
                fixed_order: 128,
                fast_words: vec![256, 1024, 4096],
            },
            Sweep {
                fixed_fast_words: 12,
                orders: vec![64, 128, 256],
                fixed_order: 256,
                fast_words: vec![12, 48, 192],
            },
        ),
        Table1Scale::Full => (
            Sweep {
                fixed_fast_words: 48,
                orders: vec![128, 256, 512, 1024],
                fixed_order: 1024,
                fast_words: vec![48, 192, 768, 3072, 12288],
            },
            Sweep {
                fixed_fast_words: 3072,
                orders: vec![128, 256, 512, 1024],
                fixed_order: 1024,
                fast_words: vec![3072, 6144, 12288],
            },
            Sweep {
                fixed_fast_words: 48,
                orders: vec![128, 256, 512, 1024],
                fixed_order: 1024,
                fast_words: vec![48, 192, 768],
            },
        ),
    }
}

fn row_specs(scale: Table1Scale) -> Vec<RowSpec> {
    let (general, naive, converted) = sweeps(scale);
    let naive_row = |algorithm| RowSpec {
        algorithm,
        layout: Table1Layout::ColMajor,
        paper_words: "Θ(n³)",
        paper_messages: "Θ(n²)",
        expected: exact(3.0, 0.0, 2.0, 0.0),
        sweep: naive.clone(),
    };
    let optimal_words = "O(n³/√M)";
    vec![
        naive_row(Algorithm::LeftLooking),
        naive_row(Algorithm::RightLooking),
        RowSpec {
            algorithm: Algorithm::Lapack,
            layout: Table1Layout::ColMajor,
            paper_words: optimal_words,
            paper_messages: "O(n³/M)",
            expected: exact(3.0, -0.5, 3.0, -1.0),
            sweep: general.clone(),
        },
        RowSpec {
            algorithm: Algorithm::Lapack,
            layout: Table1Layout::BlockedLapack,
            paper_words: optimal_words,
            paper_messages: "O(n³/M^{3/2})",
            expected: exact(3.0, -0.5, 3.0, -1.5),
            sweep: general.clone(),
        },
        RowSpec {
            algorithm: Algorithm::Rectangular,
            layout: Table1Layout::ColMajor,
            paper_words: "O(n³/√M + n² log n)",
            paper_messages: "Ω(n³/M)",
            expected: exact(3.0, -0.5, 3.0, -1.0),
            sweep: general.clone(),
        },
        RowSpec {
            algorithm: Algorithm::Rectangular,
            layout: Table1Layout::Morton,
            paper_words: "O(n³/√M + n² log n)",
            paper_messages: "Ω(n²)",
            expected: Exponents {
                words_n: Expected::Exactly(3.0),
                words_m: Expected::Exactly(-0.5),
                messages_n: Expected::Between(2.0, 3.0),
                messages_m: Expected::Between(-1.5, 0.0),
            },
            sweep: general.clone(),
        },
        RowSpec {
            algorithm: Algorithm::Square,
            layout: Table1Layout::ColMajor,
            paper_words: optimal_words,
            paper_messages: "Ω(n³/M)",
            expected: exact(3.0, -0.5, 3.0, -1.0),
            sweep: general.clone(),
        },
        RowSpec {
            algorithm: Algorithm::Square,
            layout: Table1Layout::Morton,
            paper_words: optimal_words,
            paper_messages: "O(n³/M^{3/2})",
            expected: exact(3.0, -0.5, 3.0, -1.5),
            sweep: general,
        },
        RowSpec {
            algorithm: Algorithm::Square,
            layout: Table1Layout::ColMajorViaMorton,
            paper_words: optimal_words,
            paper_messages: "O(n³/M^{3/2}) for n ≥ M",
            expected: exact(3.0, -0.5, 3.0, -1.5),
            sweep: converted,
        },
    ]
}

fn measure(
    algorithm: Algorithm,
    layout: Table1Layout,
    n: usize,
    m: usize,
) -> Result<Point, SimError> {
    let (stored, working) = layout.storages(m);
    let counts = simulate_with_conversion(algorithm, stored, working, n, m, None)?;
    Ok(Point {
        order: n,
        fast_words: m,
        counts,
    })
}

/// The fitted exponent of `value` against `x` over `points` (NaN if the fit is degenerate).
fn exponent(points: &[Point], x: fn(&Point) -> usize, value: fn(&Point) -> u64) -> f64 {
    let xs: Vec<f64> = points.iter().map(|p| x(p) as f64).collect();
    let ys: Vec<f64> = points.iter().map(|p| value(p) as f64).collect();
    fit_power_law(&xs, &ys).map_or(f64::NAN, |fit| fit.exponent)
}

fn measure_row(spec: RowSpec) -> Result<Table1Row, SimError> {
    let sweep = &spec.sweep;
    // The two sweeps usually share their corner point: measure it once.
    let mut done: Vec<Point> = Vec::new();
    let mut point = |n: usize, m: usize| -> Result<Point, SimError> {
        if let Some(p) = done.iter().find(|p| p.order == n && p.fast_words == m) {
            return Ok(*p);
        }
        let p = measure(spec.algorithm, spec.layout, n, m)?;
        done.push(p);
        Ok(p)
    };
    let in_n = sweep
        .orders
        .iter()
        .map(|&n| point(n, sweep.fixed_fast_words))
        .collect::<Result<Vec<_>, _>>()?;
    let in_m = sweep
        .fast_words
        .iter()
        .map(|&m| point(sweep.fixed_order, m))
        .collect::<Result<Vec<_>, _>>()?;
    let order = |p: &Point| p.order;
    let fast = |p: &Point| p.fast_words;
    let words = |p: &Point| p.counts.words;
    let messages = |p: &Point| p.counts.messages;
    let measured = Exponents {
        words_n: exponent(&in_n, order, words),
        words_m: exponent(&in_m, fast, words),
        messages_n: exponent(&in_n, order, messages),
        messages_m: exponent(&in_m, fast, messages),
    };
    Ok(Table1Row {
        algorithm: spec.algorithm,
        layout: spec.layout,
        paper_words: spec.paper_words,
        paper_messages: spec.paper_messages,
        expected: spec.expected,
        measured,
        sweep: spec.sweep,
        points: in_n.into_iter().chain(in_m).collect(),
    })
}

/// Runs the sweeps of every row of the paper's Table 1 (and the square recursive algorithm on
/// a column-major matrix converted on the fly) in counting mode, and fits the exponents.
///
/// # Errors
/// Only if an algorithm breaks the model (a bug): the sweeps' parameters are valid.
pub fn table1(scale: Table1Scale) -> Result<Table1, SimError> {
    let rows = row_specs(scale)
        .into_iter()
        .map(measure_row)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Table1 { rows })
}
