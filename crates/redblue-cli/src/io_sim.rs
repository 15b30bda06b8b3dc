//! `redblue io-sim cholesky`: one of seed 002's sequential Cholesky algorithms on the simulated
//! two-level memory (a fast memory of `--memory` words; a message is a run of contiguous
//! slow-memory addresses), its words and messages against the lower bounds `n³/√M` and
//! `n³/M^{3/2}`; `--table1` reproduces the paper's Table 1 by fitted exponents instead.

use clap::{Args, ValueEnum};
use redblue::cholesky::sequential::{
    lapack_block_size, lower_bounds, simulate_with_conversion, table1, Algorithm, Storage,
    Table1Scale,
};
use serde_json::json;

/// The storage layout of the matrix in slow memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LayoutArg {
    /// Column-major, leading dimension n.
    ColMajor,
    /// b × b blocks, each contiguous (b = ⌊√(M/3)⌋ unless --block gives it).
    Blocked,
    /// Block-recursive (Morton, Z-order).
    Morton,
}

/// Which sweeps `--table1` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Sweeps {
    /// Small sweeps (a second or two).
    Quick,
    /// The book's sweeps (about ten seconds in a release build).
    Full,
}

#[derive(Args, Clone, Debug)]
pub struct IoSimArgs {
    /// Order of A.
    #[arg(long, default_value_t = 256)]
    n: usize,
    /// Words of fast memory, M.
    #[arg(long, default_value_t = 768)]
    memory: usize,
    /// left-looking, right-looking, lapack, rectangular or square.
    #[arg(long, default_value = "square")]
    algorithm: Algorithm,
    /// The layout the algorithm works on.
    #[arg(long, value_enum, default_value_t = LayoutArg::Morton)]
    layout: LayoutArg,
    /// Block size of the blocked layout.
    #[arg(long)]
    block: Option<usize>,
    /// Give the matrix column-major and convert it on the fly to --layout and back (counted).
    #[arg(long)]
    convert: bool,
    /// Instead of one run: the sweeps that reproduce seed 002's Table 1 (fitted exponents).
    #[arg(long, value_enum)]
    table1: Option<Sweeps>,
    /// One JSON object instead of a table (one run only).
    #[arg(long)]
    json: bool,
}

/// `redblue io-sim cholesky`.
pub fn run(args: &IoSimArgs) -> Result<bool, String> {
    if let Some(sweeps) = args.table1 {
        let scale = match sweeps {
            Sweeps::Quick => Table1Scale::Quick,
            Sweeps::Full => Table1Scale::Full,
        };
        let table = table1(scale).map_err(|e| e.to_string())?;
        println!("{table}");
        return Ok(true);
    }
    let (n, m) = (args.n, args.memory);
    let working = match args.layout {
        LayoutArg::ColMajor => Storage::ColMajor,
        LayoutArg::Blocked => Storage::Blocked {
            b: args.block.unwrap_or_else(|| lapack_block_size(m)),
        },
        LayoutArg::Morton => Storage::Morton,
    };
    let stored = if args.convert {
        Storage::ColMajor
    } else {
        working
    };
    let counts = simulate_with_conversion(args.algorithm, stored, working, n, m, None)
        .map_err(|e| e.to_string())?;
    let (words_bound, messages_bound) = lower_bounds(n, m);
    let ratio = |x: u64, bound: f64| if bound > 0.0 { x as f64 / bound } else { 0.0 };
    if args.json {
        let line = json!({
            "op": "io-sim cholesky", "n": n, "memory_words": m,
            "algorithm": args.algorithm.to_string(), "layout": working.to_string(),
            "stored": stored.to_string(),
            "words": counts.words, "messages": counts.messages, "flops": counts.flops,
            "peak_fast_words": counts.peak_fast_words,
            "words_bound": words_bound, "messages_bound": messages_bound,
            "words_ratio": ratio(counts.words, words_bound),
            "messages_ratio": ratio(counts.messages, messages_bound),
        });
        println!("{line}");
        return Ok(true);
    }
    println!(
        "io-sim cholesky n = {n}, M = {m} words: {} on {}{}",
        args.algorithm,
        working,
        if args.convert {
            " (stored column-major, converted on the fly)"
        } else {
            ""
        }
    );
    println!(
        "  words             {} = {:.3} × n³/√M",
        counts.words,
        ratio(counts.words, words_bound)
    );
    println!(
        "  messages          {} = {:.3} × n³/M^1.5",
        counts.messages,
        ratio(counts.messages, messages_bound)
    );
    println!("  flops             {}", counts.flops);
    println!(
        "  fast memory used  {} words at most",
        counts.peak_fast_words
    );
    Ok(true)
}
