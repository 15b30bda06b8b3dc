//! The options `redblue lu` and `redblue cholesky` share: the problem, the choice of the grid,
//! the run and its report. Each command adds its own (the algorithm, `--uplo`, `--compare`).

use crate::{Backend, LayoutKind, ScalarType};
use clap::Args;
use redblue::lu::{LookAhead, TileGrid};

#[derive(Args, Clone, Debug)]
pub struct FactorArgs {
    /// Order of A.
    #[arg(long, default_value_t = 1024)]
    pub n: usize,
    /// Ranks (threads backend; under MPI the ranks are mpirun's).
    #[arg(long, default_value_t = 2)]
    pub ranks: usize,
    /// Element type.
    #[arg(long = "type", value_enum, default_value_t = ScalarType::F64)]
    pub ty: ScalarType,
    /// Tile width v (chosen with the grid by default).
    #[arg(long)]
    pub block: Option<usize>,
    /// Layers c (the grid is then chosen around them).
    #[arg(long)]
    pub layers: Option<usize>,
    /// The whole grid, PXxPYxC (overrides --layers).
    #[arg(long)]
    pub grid: Option<TileGrid>,
    /// Words (matrix elements) each rank may hold, for the choice of the grid.
    #[arg(long)]
    pub memory: Option<u64>,
    /// Largest fraction of idle ranks the choice of the grid may leave.
    #[arg(long, default_value_t = 0.03)]
    pub idle: f64,
    /// Right-hand sides of the solve.
    #[arg(long, default_value_t = 1)]
    pub nrhs: usize,
    /// Repetitions of the factorisation; the time reported is their median.
    #[arg(long, default_value_t = 3, value_parser = crate::parse_reps)]
    pub reps: usize,
    /// Check the factorisation and the solve (normalised residuals; exit status 1 above the
    /// threshold).
    #[arg(long)]
    pub check: bool,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// threads or mpi.
    #[arg(long, value_enum, default_value_t = Backend::Threads)]
    pub backend: Backend,
    /// Layout of A and B: native (the factorisation's tiles) or block-cyclic.
    #[arg(long, value_enum, default_value_t = LayoutKind::Native)]
    pub layout: LayoutKind,
    /// Threads per rank for the local products.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Start the next panel before the rest of each step's update: on, off, or auto (on
    /// unless this process runs more ranks than it has cores).
    #[arg(long, default_value = "auto")]
    pub look_ahead: LookAhead,
}

impl FactorArgs {
    /// Bytes of one element.
    pub fn bytes(&self) -> usize {
        self.ty.bytes()
    }

    /// Bytes of the input: `A` and the right-hand sides.
    pub fn input_bytes(&self) -> f64 {
        let n = self.n as f64;
        (n * n + n * self.nrhs as f64) * self.bytes() as f64
    }

    /// The bytes a run needs in this process, and what they hold: `A`, every grid rank's tiles
    /// and working buffers (`factor_bytes`, on `layers` layers), `B` and `X`, and with
    /// `--check` four more `N × N` matrices (`checked`: what they are).
    pub fn bytes_needed(&self, factor_bytes: f64, layers: usize, checked: &str) -> (f64, String) {
        let (n, elem) = (self.n as f64, self.bytes() as f64);
        let check = if self.check { 4.0 * n * n * elem } else { 0.0 };
        let bytes = n * n * elem + factor_bytes + check + 3.0 * n * self.nrhs as f64 * elem;
        let checked = if self.check {
            format!(", the check's {checked}")
        } else {
            String::new()
        };
        let what = format!("the input, {layers} layer(s) of tiles and buffers{checked}");
        (bytes, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        args: FactorArgs,
    }

    fn parse(extra: &[&str]) -> FactorArgs {
        let base = ["redblue", "--n", "100", "--nrhs", "2", "--type", "c64"];
        Command::parse_from(base.iter().chain(extra)).args
    }

    #[test]
    fn the_estimate_counts_the_input_the_factor_the_right_hand_sides_and_the_check() {
        let args = parse(&[]);
        let (n, elem) = (100.0, 16.0);
        assert_eq!(args.input_bytes(), (n * n + 2.0 * n) * elem);
        let (bytes, what) = args.bytes_needed(1000.0, 2, "factor");
        assert_eq!(bytes, n * n * elem + 1000.0 + 3.0 * n * 2.0 * elem);
        assert_eq!(what, "the input, 2 layer(s) of tiles and buffers");
        let (checked, what) = parse(&["--check"]).bytes_needed(1000.0, 2, "factor");
        assert_eq!(checked - bytes, 4.0 * n * n * elem);
        assert_eq!(
            what,
            "the input, 2 layer(s) of tiles and buffers, the check's factor"
        );
    }
}
