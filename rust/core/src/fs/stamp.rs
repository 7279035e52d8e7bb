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

/// The instant (ns since the epoch) a file or listing must have last changed
/// before to be trusted from a cache file written at `written_ns`
/// (docs/spec.md §9.4).
pub fn trusted_before(written_ns: u128) -> u128 {
    written_ns.saturating_sub(RACY_NS)
}

/// A file's size and modification time (ns since the epoch): the change
/// signal of a refresh. `None` when it could not be read.
pub type Stamp = Option<FileStamp>;

/// The stamp of a size and a modification time `secs` + `nanos` after the
/// epoch. A time before the epoch is its (negative) nanoseconds' two's
/// complement: distinct times stay distinct stamps (docs/spec.md §1.9), and
/// every such stamp is above the times a cache file trusts (§9.4), so the
/// file is read again on a reopen rather than judged by a time the cache
/// cannot order. A time 64 bits of nanoseconds do not hold (before 1678 or
/// after 2554) gives `None` (never trusted: the file is always read).
pub(super) fn stamp_from(len: u64, secs: i64, nanos: u32) -> Stamp {
    let ns = i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    let ns = match u64::try_from(ns) {
        Ok(ns) => ns,
        Err(_) => i64::try_from(ns).ok()? as u64,
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
            // Before the epoch: `d` back from it, as whole seconds down and
            // nanoseconds up, the way Unix spells it.
            Some(Err(e)) => {
                let d = e.duration();
                let (s, n) = (d.as_secs() as i64, d.subsec_nanos());
                match n {
                    0 => stamp_from(meta.len(), -s, 0),
                    n => stamp_from(meta.len(), -s - 1, 1_000_000_000 - n),
                }
            }
            None => Some((meta.len(), 0)),
        }
    }
}

/// The stamp of the file at `p` (not following a symbolic link).
pub fn stamp(p: &Path) -> Stamp {
    std::fs::symlink_metadata(p).ok().and_then(|m| stamp_of(&m))
}

#[cfg(test)]
mod tests {
    use super::stamp_from;

    /// docs/spec.md §1.9: distinct modification times are distinct stamps,
    /// before the epoch too; one 64 bits of nanoseconds cannot hold is none.
    #[test]
    fn times_before_the_epoch_are_stamped_apart() {
        let before = [(-100, 0), (-200, 0), (-1, 999_999_999), (-1, 0)];
        let mut seen: Vec<u64> = before
            .iter()
            .map(|&(s, n)| stamp_from(1, s, n).unwrap().1)
            .collect();
        seen.push(stamp_from(1, 0, 0).unwrap().1);
        seen.push(stamp_from(1, 1_234_567_890, 5).unwrap().1);
        let mut distinct = seen.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), seen.len(), "{seen:?}");
        assert_eq!(stamp_from(1, 0, 0), Some((1, 0)));
        assert_eq!(stamp_from(1, -1, 999_999_999), Some((1, u64::MAX)));
        assert_eq!(stamp_from(1, i64::MIN, 0), None);
        assert_eq!(stamp_from(1, i64::MAX, 0), None);
    }
}
