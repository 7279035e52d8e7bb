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

/// An error's text as the operating system words it (`Permission denied`):
/// Rust's `io::Error` appends ` (os error N)` to the system's message, which
/// a diagnostic or an error message does not carry (docs/spec.md §1.6).
pub fn os_text(e: &dyn fmt::Display) -> String {
    let s = e.to_string();
    const MARK: &str = " (os error ";
    if let Some(at) = s.rfind(MARK) {
        if let Some(n) = s[at + MARK.len()..].strip_suffix(')') {
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                return s[..at].to_string();
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::os_text;

    #[test]
    fn the_os_error_number_rust_appends_is_dropped() {
        let e = std::io::Error::from_raw_os_error(13);
        assert_eq!(os_text(&e), "Permission denied");
        let e = std::io::Error::from_raw_os_error(36);
        assert_eq!(os_text(&e), "File name too long");
        // Text that only looks like it in part is kept as it is.
        assert_eq!(os_text(&"not a regular file"), "not a regular file");
        assert_eq!(os_text(&"x (os error )"), "x (os error )");
        assert_eq!(os_text(&"x (os error 1a)"), "x (os error 1a)");
    }
}
