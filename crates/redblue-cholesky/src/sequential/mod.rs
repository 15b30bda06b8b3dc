//! Seed 002's sequential Cholesky algorithms on a simulated two-level memory.
//!
//! # The model (seed 002 §3.1)
//! Slow memory holds the `n × n` symmetric positive definite matrix (full storage, lower
//! triangle used) in a [`Storage`] layout: column-major, blocked (`b × b` blocks, each
//! contiguous) or Morton (block-recursive). Fast memory holds `M` words. An algorithm moves
//! rectangles of elements explicitly ([`TwoLevelMemory::load`], [`TwoLevelMemory::store`]) and
//! computes only on resident data; the simulator fails if more than `M` words would be
//! resident. It counts
//! - **words**: elements moved, loads and stores both;
//! - **messages**: per transfer, the maximal runs of consecutive slow-memory addresses among
//!   its elements, a run longer than `M` counting `⌈len/M⌉` (so a `b × b` block is `b`
//!   messages column-major, one in the blocked layout of block size `b`, one in Morton storage
//!   when aligned);
//! - **flops**: `2` per multiply-add, `1` per division or square root (every algorithm does
//!   the same `n³/3 + n²/2 + n/6`).
//!
//! [`simulate`] runs an algorithm counting only (fast: the simulator's time is proportional to
//! messages, not words), or carrying the values (`f64`, column-major whatever the layout: the
//! layout only decides the addresses) so that tests can check the factor.
//!
//! Diagonal blocks are moved whole (both triangles): in a block-contiguous layout the square is
//! one run while its lower triangle is one run per column, and the extra words are a
//! lower-order term. The upper triangle is never written with anything but its own values.
//!
//! # The algorithms (seed 002 §3.1.3–3.1.9)
//! | [`Algorithm`] | paper | fast memory |
//! |---|---|---|
//! | `left-looking` | Algorithm 4, column by column | two column segments, `2n − 2` |
//! | `right-looking` | Algorithm 5 | `2n − 1` |
//! | `lapack` | Algorithm 6 (POTRF), block `b = ⌊√(M/3)⌋` | `3b² ≤ M` |
//! | `rectangular` | Algorithm 7 (Toledo), GEMM by Algorithm 2 | `M ≥ 3` |
//! | `square` | Algorithm 8, TRSM by Algorithm 3, update by Algorithm 2 | `M ≥ 3` |
//!
//! The recursive ones stop when a subproblem fits in fast memory (then load, compute, store)
//! and split at powers of two, so on Morton storage every block they touch is aligned.
//! [`simulate_with_conversion`] converts a column-major matrix to a block-contiguous layout on
//! the fly (§3.1.1), runs the algorithm there and converts back, all counted.
//!
//! # Table 1
//! [`table1`] runs each (algorithm, layout) pair of the paper's Table 1 over a sweep of `n` at
//! fixed `M` and a sweep of `M` at fixed `n`, fits the exponents of words and messages by least
//! squares on log-log ([`fit_power_law`]) and sets them beside the paper's orders. The
//! reference curves of the lower bound ([`lower_bounds`]) are `n³/√M` words and `n³/M^{3/2}`
//! messages (Corollary 6 is an `Ω` with no explicit constant).

mod convert;
mod fit;
mod lapack;
mod memory;
mod naive;
mod recursive;
mod storage;
mod table1;

pub use convert::conversion_tile;
pub use fit::{fit_power_law, PowerLaw};
pub use lapack::lapack_block_size;
pub use memory::{SlowArrayId, TwoLevelMemory};
pub use naive::{left_looking_fast_words, right_looking_fast_words};
pub use recursive::RECURSIVE_MIN_FAST_WORDS;
pub use storage::{morton_index, recursive_split_point, Rect, Span, Storage};
pub use table1::{
    table1, Expected, Exponents, Point, Sweep, Table1, Table1Layout, Table1Row, Table1Scale,
};

use std::fmt;
use std::ops::{Add, AddAssign};
use std::str::FromStr;

/// The largest order the simulator takes (Morton addresses of the padded `2^k × 2^k` index
/// space stay below `2^48`).
pub const MAX_ORDER: usize = 1 << 24;

/// A sequential Cholesky algorithm of seed 002 §3.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Algorithm {
    /// Naive left-looking, column by column (Algorithm 4).
    LeftLooking,
    /// Naive right-looking, column by column (Algorithm 5).
    RightLooking,
    /// LAPACK's POTRF, blocked left-looking with `b = ⌊√(M/3)⌋` (Algorithm 6).
    Lapack,
    /// Toledo's rectangular recursive algorithm (Algorithm 7).
    Rectangular,
    /// The square recursive algorithm (Algorithm 8).
    Square,
}

impl Algorithm {
    /// Every algorithm, in the paper's order.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::LeftLooking,
        Algorithm::RightLooking,
        Algorithm::Lapack,
        Algorithm::Rectangular,
        Algorithm::Square,
    ];

    /// The fewest fast-memory words the algorithm needs on an `n × n` matrix (0 for `n = 0`).
    pub fn min_fast_words(self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        match self {
            Algorithm::LeftLooking => left_looking_fast_words(n),
            Algorithm::RightLooking => right_looking_fast_words(n),
            Algorithm::Lapack | Algorithm::Rectangular | Algorithm::Square => {
                RECURSIVE_MIN_FAST_WORDS
            }
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Algorithm::LeftLooking => "left-looking",
            Algorithm::RightLooking => "right-looking",
            Algorithm::Lapack => "lapack",
            Algorithm::Rectangular => "rectangular",
            Algorithm::Square => "square",
        })
    }
}

impl FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Algorithm, String> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.to_string() == s)
            .ok_or_else(|| {
                format!(
                    "unknown algorithm {s:?}: expected one of left-looking, right-looking, \
                     lapack, rectangular, square"
                )
            })
    }
}

/// What a run moved and computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounts {
    /// Words moved between slow and fast memory, loads and stores.
    pub words: u64,
    /// Messages: maximal contiguous runs per transfer, each split into pieces of at most `M`.
    pub messages: u64,
    /// Floating-point operations (the same for every algorithm).
    pub flops: u64,
    /// The most words resident in fast memory at once.
    pub peak_fast_words: u64,
}

impl Add for IoCounts {
    type Output = IoCounts;

    /// Sums the traffic and the flops; the peak is the larger one.
    fn add(self, rhs: IoCounts) -> IoCounts {
        IoCounts {
            words: self.words + rhs.words,
            messages: self.messages + rhs.messages,
            flops: self.flops + rhs.flops,
            peak_fast_words: self.peak_fast_words.max(rhs.peak_fast_words),
        }
    }
}

impl AddAssign for IoCounts {
    fn add_assign(&mut self, rhs: IoCounts) {
        *self = *self + rhs;
    }
}

/// Why a simulation could not run, or what went wrong in it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SimError {
    /// A parameter that cannot work (a zero block size, an unsupported conversion...).
    InvalidParameter(String),
    /// The fast memory is smaller than the algorithm needs.
    FastMemoryTooSmall {
        /// The algorithm.
        algorithm: Algorithm,
        /// The words it needs for this `n`.
        needed: usize,
        /// The words given.
        available: usize,
    },
    /// The values are not `n²` long.
    ValuesLength {
        /// `n²`.
        expected: usize,
        /// Their length.
        found: usize,
    },
    /// A load would exceed the fast memory (an algorithm bug: each checks its needs first).
    FastMemoryOverflow {
        /// Words resident before the load.
        resident: usize,
        /// Words the load brings.
        requested: usize,
        /// The capacity `M`.
        capacity: usize,
    },
    /// An algorithm broke the model's rules (touched non-resident data, loaded twice...).
    AlgorithmBug(String),
    /// A non-positive pivot: the matrix is not positive definite.
    NotPositiveDefinite {
        /// The column (0-based).
        column: usize,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::InvalidParameter(why) => write!(f, "invalid parameter: {why}"),
            SimError::FastMemoryTooSmall {
                algorithm,
                needed,
                available,
            } => write!(
                f,
                "{algorithm} needs at least {needed} words of fast memory here, \
                 only {available} given"
            ),
            SimError::ValuesLength { expected, found } => {
                write!(f, "expected n² = {expected} values, got {found}")
            }
            SimError::FastMemoryOverflow {
                resident,
                requested,
                capacity,
            } => write!(
                f,
                "fast memory overflow: {resident} words resident + {requested} loaded > \
                 {capacity} (an algorithm bug)"
            ),
            SimError::AlgorithmBug(why) => write!(f, "algorithm bug: {why}"),
            SimError::NotPositiveDefinite { column } => {
                write!(f, "the matrix is not positive definite (column {column})")
            }
        }
    }
}

impl std::error::Error for SimError {}

/// Runs `algorithm` on an `n × n` matrix stored in `storage` with a fast memory of
/// `fast_words` words, and returns what it moved.
///
/// With `values` (`n²` elements, column-major whatever `storage` is; the lower triangle is
/// read) the simulator carries the values and the lower triangle is overwritten by the factor
/// `L` (the strict upper triangle keeps its values); without, it only counts. `n = 0` costs
/// nothing.
///
/// # Errors
/// [`SimError::InvalidParameter`] for a zero block size or `n > MAX_ORDER`;
/// [`SimError::FastMemoryTooSmall`] if
/// `fast_words < algorithm.min_fast_words(n)`; [`SimError::ValuesLength`];
/// [`SimError::NotPositiveDefinite`] (then `values` is left as given).
///
/// # Examples
/// ```
/// use redblue_cholesky::sequential::{simulate, Algorithm, Storage};
///
/// let counts = simulate(Algorithm::LeftLooking, Storage::ColMajor, 8, 16, None)?;
/// assert_eq!(counts.words, 8 * 9 * 13 / 6); // n(n+1)(n+5)/6
/// assert_eq!(counts.messages, 8 * 11 / 2); // n(n+3)/2
/// # Ok::<(), redblue_cholesky::sequential::SimError>(())
/// ```
pub fn simulate(
    algorithm: Algorithm,
    storage: Storage,
    n: usize,
    fast_words: usize,
    values: Option<&mut [f64]>,
) -> Result<IoCounts, SimError> {
    simulate_with_conversion(algorithm, storage, storage, n, fast_words, values)
}

/// Runs `algorithm` on a matrix stored in `stored` after converting it on the fly to
/// `working` (seed 002 §3.1.1), and converts the result back; the counts include both
/// conversions (see [`conversion_tile`]). With `stored == working` this is [`simulate`].
/// One of the two layouts must be column-major.
///
/// # Errors
/// As [`simulate`]; [`SimError::InvalidParameter`] for a conversion between two
/// block-contiguous layouts; [`SimError::FastMemoryTooSmall`] if a blocked layout's block does
/// not fit for the conversion.
pub fn simulate_with_conversion(
    algorithm: Algorithm,
    stored: Storage,
    working: Storage,
    n: usize,
    fast_words: usize,
    values: Option<&mut [f64]>,
) -> Result<IoCounts, SimError> {
    stored.validate().map_err(SimError::InvalidParameter)?;
    working.validate().map_err(SimError::InvalidParameter)?;
    if n > MAX_ORDER {
        return Err(SimError::InvalidParameter(format!(
            "n = {n} is above the simulator's limit {MAX_ORDER}"
        )));
    }
    if let Some(v) = values.as_deref() {
        if v.len() != n * n {
            return Err(SimError::ValuesLength {
                expected: n * n,
                found: v.len(),
            });
        }
    }
    let needed = algorithm.min_fast_words(n);
    if fast_words < needed.max(1) {
        return Err(SimError::FastMemoryTooSmall {
            algorithm,
            needed: needed.max(1),
            available: fast_words,
        });
    }
    let tile = if stored == working {
        None
    } else {
        let block_contiguous = match (stored, working) {
            (Storage::ColMajor, other) | (other, Storage::ColMajor) => other,
            _ => {
                return Err(SimError::InvalidParameter(format!(
                    "conversion from {stored} to {working}: one side must be col-major"
                )))
            }
        };
        let tile = conversion_tile(block_contiguous, fast_words).ok_or_else(|| {
            SimError::InvalidParameter(format!(
                "a block of {block_contiguous} does not fit in {fast_words} words for the \
                 conversion"
            ))
        })?;
        Some(tile)
    };
    if n == 0 {
        return Ok(IoCounts::default());
    }
    let (mut mem, input) = match values.as_deref() {
        Some(v) => TwoLevelMemory::with_values(n, fast_words, stored, v)?,
        None => TwoLevelMemory::counting(n, fast_words, stored)?,
    };
    let work = match tile {
        Some(tile) => {
            let work = mem.add_array(working)?;
            convert::copy_lower(&mut mem, input, work, tile)?;
            work
        }
        None => input,
    };
    run_algorithm(&mut mem, work, algorithm)?;
    if let Some(tile) = tile {
        convert::copy_lower(&mut mem, work, input, tile)?;
    }
    mem.require_empty()?;
    if let (Some(out), Some(result)) = (values, mem.slow_values(input)) {
        out.copy_from_slice(result);
    }
    Ok(mem.counts())
}

/// Runs `algorithm` on slow array `a` of `mem` (fast memory already checked big enough).
fn run_algorithm(
    mem: &mut TwoLevelMemory,
    a: SlowArrayId,
    algorithm: Algorithm,
) -> Result<(), SimError> {
    let all = Span::new(0, mem.order());
    match algorithm {
        Algorithm::LeftLooking => naive::left_looking(mem, a),
        Algorithm::RightLooking => naive::right_looking(mem, a),
        Algorithm::Lapack => lapack::potrf(mem, a, lapack_block_size(mem.fast_capacity())),
        Algorithm::Rectangular => recursive::rectangular(mem, a, all),
        Algorithm::Square => recursive::square(mem, a, all),
    }
}

/// The reference curves of Corollary 6 for an `n × n` Cholesky with `m` words of fast memory:
/// `(n³/√m words, n³/m^{3/2} messages)`. The corollary is `Ω(·)` of these with an unspecified
/// constant (the reduction to a `3n × 3n` Cholesky and Irony–Toledo–Tiskin's `1/(2√2)` give a
/// small one), so they are used as curves to compare against, with constant 1.
pub fn lower_bounds(n: usize, m: usize) -> (f64, f64) {
    let (n, m) = (n as f64, m as f64);
    let n3 = n * n * n;
    (n3 / m.sqrt(), n3 / (m * m.sqrt()))
}

/// The flops of every algorithm: `Σ_j (n−j)(2j+1) = n³/3 + n²/2 + n/6`.
pub fn cholesky_flops(n: usize) -> u64 {
    let n = n as u64;
    (2 * n * n * n + 3 * n * n + n) / 6
}
