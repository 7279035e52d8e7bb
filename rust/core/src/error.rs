//! The one error type of the core: one variant per failure a caller can act
//! on. Data problems inside a bundle are diagnostics, never errors.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The bundle root is missing, not a directory, or cannot be listed.
    BundleNotFound {
        path: std::path::PathBuf,
        reason: String,
    },
    /// A caller passed an argument outside its domain.
    InvalidArgument(String),
    /// The caller cancelled a load ([`crate::progress::Progress::cancel`]).
    Cancelled,
    /// A concept's text could not be read back from the bundle's cache file
    /// (it was changed in place after it was written).
    CacheDamaged(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BundleNotFound { path, reason } => write!(
                f,
                "bundle root {path:?} is not a readable directory: {reason}"
            ),
            Error::InvalidArgument(m) => f.write_str(m),
            Error::Cancelled => f.write_str("the load was cancelled"),
            Error::CacheDamaged(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}
