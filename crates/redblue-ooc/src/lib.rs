//! Out-of-core dense linear algebra (seed 003, Dongarra, Hammarling and Walker): matrices in
//! files larger than memory, read and written a rectangle at a time, every element counted so
//! that an algorithm's I/O can be held equal to its model.
//!
//! The disk layer: the file format ([`format`](mod@format): a header with magic, version,
//! shape, scalar type and panel width, and a checksum per panel), [`DiskMatrix`] (create from a
//! function, a raw column-major file or a NumPy `.npy` file; rectangles in and out, blocking or
//! started ahead on a thread of their own; checksums made durable by [`DiskMatrix::sync`] and
//! checked by [`DiskMatrix::verify`]; [`IoCounts`]) and errors that name the file and the panel
//! ([`OocError`]). The sequential LUs on it — left-looking with the disk copy kept pivoted
//! ([`left_pivoted`]) or unpivoted ([`left_unpivoted`]), and the right-looking baseline
//! ([`lu_right`]) — whose reads and writes equal their exact models ([`left_pivoted_io`],
//! [`left_unpivoted_io`], [`right_io`]); resumable after a crash through a [`Progress`]
//! record and journals; the solve from the factored file ([`solve_from_file`]) and the factors'
//! residual ([`factor_residual`]). The LU over the ranks of a communicator, from one shared file
//! or a file per rank ([`parallel`]). Injected failures for the crash tests ([`fault`]).
//! Positional file I/O: Unix only.

mod disk;
mod error;
pub mod fault;
pub mod format;
pub mod lu;
pub mod npy;
pub mod parallel;
mod progress;
mod residual;

pub use disk::{DiskMatrix, IoCounts, PendingRead};
pub use error::OocError;
pub use lu::{
    left_pivoted, left_pivoted_io, left_unpivoted, left_unpivoted_io, lu_flops, lu_left_pivoted,
    lu_left_unpivoted, lu_right, right_io, solve_from_file, solve_io, step_flops, LuFiles,
    LuVariant, OocLu, PhaseFlops, StepDone,
};
pub use progress::{run_kind, Progress, Record, RunKind};
pub use residual::factor_residual;
