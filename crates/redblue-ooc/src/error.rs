//! [`OocError`]: what goes wrong with matrices on disk, always naming the file (and the panel
//! when there is one).

use std::fmt;
use std::path::PathBuf;

/// An out-of-core failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum OocError {
    /// An operating-system error on a file (a missing permission, a full disk, a failed sync).
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done ("opening", "writing the header of", ...).
        what: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
    /// A file that is not a matrix this code can read: bad magic, another format version,
    /// another scalar type, a damaged header, or truncated.
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A panel that could not be read or written, or whose checksum does not match.
    Panel {
        /// The file.
        path: PathBuf,
        /// The panel (`columns / panel width`).
        panel: usize,
        /// What was being done.
        what: &'static str,
        /// The system's error, if one.
        source: Option<std::io::Error>,
    },
    /// Bad arguments: a rectangle outside the matrix, a buffer of the wrong length, a zero
    /// panel width.
    Invalid(String),
    /// Another rank's failure in a collective operation, as that rank reported it: every rank
    /// of a run over ranks returns the same message.
    OnRank {
        /// The lowest rank that failed.
        rank: usize,
        /// Its error.
        why: String,
    },
}

impl fmt::Display for OocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OocError::Io { path, what, source } => write!(f, "{what} {}: {source}", path.display()),
            OocError::Format { path, why } => write!(f, "{}: {why}", path.display()),
            OocError::Panel {
                path,
                panel,
                what,
                source: Some(e),
            } => {
                write!(f, "{}: panel {panel}: {what}: {e}", path.display())
            }
            OocError::Panel {
                path,
                panel,
                what,
                source: None,
            } => {
                write!(f, "{}: panel {panel}: {what}", path.display())
            }
            OocError::Invalid(why) => f.write_str(why),
            OocError::OnRank { rank, why } => write!(f, "rank {rank}: {why}"),
        }
    }
}

impl std::error::Error for OocError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OocError::Io { source, .. } => source.source(),
            OocError::Panel {
                source: Some(e), ..
            } => e.source(),
            _ => None,
        }
    }
}
