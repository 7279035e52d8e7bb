//! The part of a bundle a load keeps (docs/spec.md §1.10): the concept files
//! whose ids fall in a half-open range in id order, so that several
//! processes can each hold a share of one large bundle and together hold it
//! exactly once.

use std::path::Path;

use super::walk::{walk_range, Stamps, WalkResult};
use super::watch::Watch;
use crate::error::Error;
use crate::progress::Progress;
use crate::text::id_cmp;

/// The ids `lo <= id < hi` in id order (docs/spec.md §1.2); a missing bound
/// is open. The default range holds every id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdRange {
    pub lo: Option<String>,
    pub hi: Option<String>,
}

impl IdRange {
    pub fn new(lo: Option<String>, hi: Option<String>) -> IdRange {
        IdRange { lo, hi }
    }

    /// Whether the range holds every id.
    pub fn is_all(&self) -> bool {
        self.lo.is_none() && self.hi.is_none()
    }

    /// Whether the range is empty whatever the bundle holds (`lo >= hi`).
    pub fn is_empty(&self) -> bool {
        match (&self.lo, &self.hi) {
            (Some(lo), Some(hi)) => id_cmp(lo, hi).is_ge(),
            _ => false,
        }
    }

    /// Whether `path` (an id, or a diagnostic's path) falls in the range.
    pub fn contains(&self, path: &str) -> bool {
        self.lo.as_deref().is_none_or(|lo| id_cmp(path, lo).is_ge())
            && self.hi.as_deref().is_none_or(|hi| id_cmp(path, hi).is_lt())
    }

    /// Whether the directory at `dir` (its path, `a/b`) and every path below
    /// it are out of the range, so a walk for it need not list it: the ids
    /// below `dir` sort after `dir` and, unless `lo` is below `dir` too, on
    /// the same side of `lo` as `dir` (docs/spec.md §1.2).
    pub fn excludes_tree(&self, dir: &str) -> bool {
        let under =
            |b: &str| b.len() > dir.len() && b.starts_with(dir) && b.as_bytes()[dir.len()] == b'/';
        let below_lo = self
            .lo
            .as_deref()
            .is_some_and(|lo| id_cmp(dir, lo).is_lt() && !under(lo));
        let from_hi = self.hi.as_deref().is_some_and(|hi| id_cmp(dir, hi).is_ge());
        below_lo || from_hi
    }

    /// Keep of a walk what the range holds: its concept files by id (one
    /// whose name can be no id too: its `InvalidConceptId` comes with it
    /// from the read), its own diagnostics by path (so every diagnostic of
    /// the walk lands in exactly one part; docs/spec.md §1.10). A part records no directory listing: its files are no
    /// longer all of a directory's entries, which a recorded listing replays.
    pub fn restrict(&self, w: &mut WalkResult) {
        if self.is_all() {
            return;
        }
        w.found.retain(|f| self.contains(&f.id));
        w.diagnostics.retain(|d| self.contains(&d.path));
        w.dirs.clear();
    }

    /// The key a cache file records for the bundle at `root` loaded with this
    /// range (docs/spec.md §9.1): the root alone for the whole bundle, so a
    /// part's file is never taken for the whole bundle's, nor the reverse.
    pub fn cache_key(&self, root: &str) -> String {
        if self.is_all() {
            return root.to_string();
        }
        let bound = |b: &Option<String>| {
            b.as_deref()
                .map_or("\u{1}".to_string(), |s| format!("={s}"))
        };
        format!("{root}\0{}\0{}", bound(&self.lo), bound(&self.hi))
    }
}

/// `parts` consecutive ranges covering every id, which cut the bundle at
/// `root` into parts of as equal a number of concept files as ids allow
/// (docs/spec.md §1.10): the bounds are the ids at positions `j·n/parts` of
/// its `n` concept files in id order. Only the directories are listed; no
/// file is read. An empty bundle gets the bound `""` (so every part but the
/// last is empty, and the last holds every id).
pub fn split(root: &Path, parts: usize) -> Result<Vec<IdRange>, Error> {
    let walk = walk_range(
        root,
        &Watch::none(),
        &Progress::default(),
        None,
        Stamps::Unopened,
        &IdRange::default(),
    )?;
    let ids: Vec<&str> = walk
        .found
        .iter()
        .filter(|f| f.bad_id.is_none())
        .map(|f| f.id.as_str())
        .collect();
    Ok(cut(&ids, parts))
}

/// [`split`] of the ids `ids` (in id order).
pub fn cut(ids: &[&str], parts: usize) -> Vec<IdRange> {
    let n = ids.len();
    let mut bounds: Vec<Option<String>> = vec![None];
    for j in 1..parts.max(1) {
        bounds.push(Some(
            ids.get(j * n / parts)
                .map_or(String::new(), |s| s.to_string()),
        ));
    }
    bounds.push(None);
    bounds
        .windows(2)
        .map(|w| IdRange::new(w[0].clone(), w[1].clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(lo: Option<&str>, hi: Option<&str>) -> IdRange {
        IdRange::new(lo.map(str::to_string), hi.map(str::to_string))
    }

    #[test]
    fn bounds_are_half_open_in_id_order() {
        let x = r(Some("a/b"), Some("a-b"));
        assert!(x.contains("a/b"));
        assert!(x.contains("a/b/c")); // under a/b, before a-b in id order
        assert!(!x.contains("a-b"));
        assert!(!x.contains("a"));
        assert!(r(None, None).contains(""));
        assert!(r(None, Some("m")).contains(""));
        assert!(!r(Some("m"), None).contains(""));
    }

    #[test]
    fn consecutive_ranges_partition_every_id() {
        let cuts = [None, Some("b"), Some("b/x"), Some("c"), None];
        let ranges: Vec<IdRange> = cuts.windows(2).map(|w| r(w[0], w[1])).collect();
        for id in ["", "a", "b", "b/a", "b/x", "b/x/y", "b-", "c", "zz", "b.md"] {
            let n = ranges.iter().filter(|x| x.contains(id)).count();
            assert_eq!(n, 1, "{id}");
        }
    }

    #[test]
    fn a_cut_covers_every_id_once_in_nearly_equal_parts() {
        let ids: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        for parts in 1..=12 {
            let rs = cut(&refs, parts);
            assert_eq!(rs.len(), parts);
            let sizes: Vec<usize> = rs
                .iter()
                .map(|r| refs.iter().filter(|i| r.contains(i)).count())
                .collect();
            assert_eq!(sizes.iter().sum::<usize>(), 10, "{parts}: {sizes:?}");
            if parts <= 10 {
                let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                assert!(hi.unwrap() - lo.unwrap() <= 1, "{parts}: {sizes:?}");
            }
        }
        let empty = cut(&[], 3);
        assert_eq!(empty.len(), 3);
        assert!(empty[2].contains("anything") && !empty[0].contains("anything"));
    }

    #[test]
    fn a_tree_is_excluded_only_when_nothing_in_it_is_in_range() {
        let x = r(Some("b/c"), Some("d"));
        // Some id below is in range, or the directory's own path is.
        for dir in ["b", "b/c", "b/c/d", "c", "b/d", "b-"] {
            assert!(!x.excludes_tree(dir), "{dir}");
        }
        // Everything below sorts before `b/c`, or from `d` on.
        for dir in ["a", "b/a", "b/b", "d", "d/x", "e"] {
            assert!(x.excludes_tree(dir), "{dir}");
        }
        assert!(!r(None, None).excludes_tree("anything"));
        // The bound `b/` (below every id under b): b's own path is in range.
        assert!(!r(Some("a"), Some("b/")).excludes_tree("b"));
    }

    #[test]
    fn the_cache_key_tells_parts_apart() {
        assert_eq!(r(None, None).cache_key("/r"), "/r");
        let keys = [
            r(None, Some("m")).cache_key("/r"),
            r(Some("m"), None).cache_key("/r"),
            r(Some("a"), Some("m")).cache_key("/r"),
            r(Some(""), None).cache_key("/r"),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert!(r(Some("b"), Some("a")).is_empty());
        assert!(!r(None, Some("a")).is_empty());
    }
}
