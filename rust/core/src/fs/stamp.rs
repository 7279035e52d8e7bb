//! Stamps: what must not have changed for a file's or a directory's cached
//! reading to be reused.

use std::path::Path;

/// A file's size and modification time in ns.
pub type FileStamp = (u64, u64);

/// A directory's device, inode, modification and status-change times (ns):
/// what must not have changed for its listing to be reused
/// ([`crate::fs::walk`]).
pub type DirStamp = [u64; 4];

/// A cached file or directory listing is trusted only if it was last changed
/// this long before the cache was written: a change within the same coarse
/// timestamp tick could otherwise keep its times (the "racy" case).
pub const RACY_NS: u128 = 2_000_000_000;

/// A file's size and modification time (ns since the epoch): the change
/// signal of a refresh. `None` when it could not be read.
pub type Stamp = Option<FileStamp>;

/// The stamp of a size and a modification time `secs` + `nanos` after the
/// epoch: a time before the epoch counts as 0, and one past what 64 bits of
/// nanoseconds hold (the year 2554) gives `None` (never trusted: the file is
/// always read).
pub(super) fn stamp_from(len: u64, secs: i64, nanos: u32) -> Stamp {
    let ns = match u128::try_from(secs) {
        Ok(s) => u64::try_from(s * 1_000_000_000 + u128::from(nanos)).ok()?,
        Err(_) => 0,
    };
    Some((len, ns))
}

/// The stamp of a file's metadata.
pub fn stamp_of(meta: &std::fs::Metadata) -> Stamp {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // `mtime_nsec` is below 10^9 by definition.
        stamp_from(meta.len(), meta.mtime(), meta.mtime_nsec() as u32)
    }
    #[cfg(not(unix))]
    {
        let t = meta.modified().ok();
        match t.map(|t| t.duration_since(std::time::UNIX_EPOCH)) {
            Some(Ok(d)) => stamp_from(meta.len(), d.as_secs() as i64, d.subsec_nanos()),
            _ => Some((meta.len(), 0)),
        }
    }
}

/// The stamp of the file at `p` (not following a symbolic link).
pub fn stamp(p: &Path) -> Stamp {
    std::fs::symlink_metadata(p).ok().and_then(|m| stamp_of(&m))
}
