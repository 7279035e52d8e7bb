//! The directory listings a cache file records, read back for the walk to
//! reuse ([`crate::fs::walk::RecordedListings`]).

use rustc_hash::FxHashMap;

use super::decode::{Reader, R};
use super::Rejected;
use crate::fs::stamp::DirStamp;
use crate::fs::walk::RecordedListings;

/// The directory listings of a cache file ([`super::CacheFile::listings`]), by prefix.
pub struct Listings<'a> {
    by_prefix: FxHashMap<&'a str, Listing<'a>>,
}

impl<'a> Listings<'a> {
    /// The listings written by [`super::write`] at the start of `b`.
    pub(super) fn read(b: &'a [u8]) -> R<Listings<'a>> {
        let mut p = Reader { b, at: 0 };
        let n = usize::try_from(p.u64()?).map_err(|_| Rejected::Truncated)?;
        // Each directory takes at least 48 bytes.
        if n > b.len() / 48 {
            return Err(Rejected::Truncated);
        }
        let mut by_prefix = FxHashMap::default();
        by_prefix.reserve(n);
        for _ in 0..n {
            let prefix = p.str_ref()?;
            let stamp = [p.u64()?, p.u64()?, p.u64()?, p.u64()?];
            let count = p.u32()?;
            let len = usize::try_from(p.u64()?).map_err(|_| Rejected::Truncated)?;
            let entries = p.take(len)?;
            by_prefix.insert(
                prefix,
                Listing {
                    stamp,
                    count,
                    entries,
                },
            );
        }
        Ok(Listings { by_prefix })
    }

    /// The listing recorded for the directory at `prefix` (`a/b/`; the
    /// root's is empty).
    pub fn get(&self, prefix: &str) -> Option<Listing<'a>> {
        self.by_prefix.get(prefix).copied()
    }
}

/// One recorded directory listing: the directory's stamp then, and its
/// entries.
#[derive(Clone, Copy)]
pub struct Listing<'a> {
    pub stamp: DirStamp,
    count: u32,
    entries: &'a [u8],
}

impl<'a> Listing<'a> {
    /// The entries in id order — whether each is a directory, and its name (a
    /// file's with its `.md`) — or `None` when they do not read back whole.
    pub fn entries(&self) -> Option<Vec<(bool, &'a str)>> {
        let mut p = Reader {
            b: self.entries,
            at: 0,
        };
        let all = (0..self.count)
            .map(|_| Some((p.flag().ok()?, p.str_ref().ok()?)))
            .collect::<Option<Vec<_>>>()?;
        (p.at == self.entries.len()).then_some(all)
    }
}

impl RecordedListings for Listings<'_> {
    fn entries(&self, prefix: &str, now: DirStamp) -> Option<Vec<(bool, &str)>> {
        self.get(prefix).filter(|l| l.stamp == now)?.entries()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::walk::DirListing;

    /// What the walk hands the writer reads back as the walk will ask for it:
    /// each directory's entries under its prefix, for its stamp only, files
    /// named with their `.md`.
    #[test]
    fn recorded_listings_read_back_for_their_stamp_only() {
        let dirs = vec![
            DirListing {
                prefix: "a/",
                stamp: [1, 2, 3, 4],
                entries: vec![(true, "s"), (false, "x"), (false, "ü")],
            },
            DirListing {
                prefix: "",
                stamp: [5, 6, 7, 8],
                entries: vec![(true, "a"), (false, "top")],
            },
        ];
        let bytes = super::super::write::encode_listings(&dirs);
        let l = Listings::read(&bytes).unwrap();
        assert_eq!(
            l.entries("a/", [1, 2, 3, 4]),
            Some(vec![(true, "s"), (false, "x.md"), (false, "ü.md")])
        );
        assert_eq!(
            l.entries("", [5, 6, 7, 8]),
            Some(vec![(true, "a"), (false, "top.md")])
        );
        assert_eq!(l.entries("a/", [1, 2, 3, 5]), None, "another stamp");
        assert_eq!(l.entries("b/", [1, 2, 3, 4]), None, "not recorded");
        // A listing cut short anywhere is rejected, never half read.
        for cut in 0..bytes.len() {
            assert!(Listings::read(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
