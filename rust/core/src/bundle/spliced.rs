//! A reopen through a cache file that splices the saved index (docs/spec.md
//! §9.4): when a few files changed what they give the index, or were added
//! or removed, the records of the others, the few files read again and the
//! saved index spliced with theirs ([`Index::splice`]) make the snapshot,
//! instead of indexing every concept again.

use std::sync::Arc;

use rayon::prelude::*;

use super::assemble::{finish, ordinal_ranks, Outcome, SnapshotParts};
use super::cached::KEEP_INDEX_READS;
use super::cell::ConceptCell;
use super::writing::{write_whole, CacheTarget};
use super::{Bundle, MadeBy};
use crate::array::Array;
use crate::cache::{CacheFile, Rejected};
use crate::concept::ConceptRow;
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::fs::read::{read_found, RootDir};
use crate::fs::stamp::{trusted_before, Stamp};
use crate::fs::walk::FileEntry;
use crate::fs::watch::Watch;
use crate::index::splice::{Remap, GONE};
use crate::index::Index;
use crate::text::analyze::{Analyzer, Language};
use crate::text::id_cmp_bytes;

/// What a splice starts from, all read before the snapshot is put together:
/// every record skimmed (its diagnostics and columns), the saved index and
/// ordinal ranks, and the files no record vouches for, read again.
pub(super) struct Plan {
    skims: Vec<(Vec<Diagnostic>, Option<ConceptRow>)>,
    index: Index,
    ordinal: Array<u32>,
    fresh: Vec<(usize, Outcome, Stamp)>,
}

/// The plan of a splice, when one fits: the files no record vouches for and
/// the records no file matches are together at most the few of §9.4 (64,
/// or one in 32 when that is more), and none of those files is merely too
/// recent to trust (as when the index is kept, only a new cache file,
/// written by a rebuild, trusts it). `Err` when the cache file turns out
/// not to hold together.
pub(super) fn plan(
    root: &RootDir,
    found: &[FileEntry],
    record: &[Option<usize>],
    o: &CacheFile,
    language: Option<Language>,
) -> Option<Result<Plan, Rejected>> {
    let matched = record.iter().flatten().count();
    let most = KEEP_INDEX_READS.max(found.len() / 32);
    let stale: Vec<usize> = (0..found.len()).filter(|&i| record[i].is_none()).collect();
    if stale.len() > most {
        return None;
    }
    // A file read again whose id has a record (an edited file) counts once:
    // its record is not one "no file matches" (docs/spec.md §9.4).
    let mut edited = 0;
    for &i in &stale {
        match recorded_stamp(o, found[i].id.as_bytes()) {
            Ok(Some(st)) if found[i].stamp == Some(st) => return None,
            Ok(Some(_)) => edited += 1,
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
    }
    let removed = o.len().saturating_sub(matched + edited);
    let changed = stale.len() + removed;
    if changed == 0 || changed > most {
        return None;
    }
    let (skims, index) = rayon::join(
        || -> Result<Vec<_>, Rejected> {
            (0..o.len()).into_par_iter().map(|j| o.skim(j)).collect()
        },
        || o.index(language),
    );
    let planned = (|| {
        let skims = skims?;
        let (index, ordinal) = index?;
        if skims.iter().filter(|s| s.1.is_some()).count() != ordinal.len() {
            return Err(Rejected::Corrupt(
                "saved index: not as many concepts as the records".into(),
            ));
        }
        let fresh = stale
            .par_iter()
            .map(|&i| {
                let (read, stamp) = read_found(root, &found[i]);
                (i, Outcome::from(read), stamp)
            })
            .collect();
        Ok(Plan {
            skims,
            index,
            ordinal,
            fresh,
        })
    })();
    Some(planned)
}

/// The stamp of the record of file `id`, if there is one.
fn recorded_stamp(o: &CacheFile, id: &[u8]) -> Result<Stamp, Rejected> {
    let (mut lo, mut hi) = (0, o.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let (at, st) = o.file_bytes(mid)?;
        match id_cmp_bytes(at, id) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(Some(st)),
        }
    }
    Ok(None)
}

/// The snapshot of `found` (file `i` its record `record[i]` of `o`, or read
/// again in `plan`), with the saved index spliced, and a new cache file
/// written for it (docs/spec.md §9.5) so the next load neither reads those
/// files again nor splices: the snapshot is then served from that file.
/// Beside the bundle, whether writing failed. Where no file is written (a
/// file read again is too recent to trust, the new file would settle
/// nothing, or writing failed), the records' texts stay in the old file and
/// those read again in memory.
#[allow(clippy::too_many_arguments)]
pub(super) fn assemble(
    root: &RootDir,
    found: Vec<FileEntry>,
    record: &[Option<usize>],
    o: &Arc<CacheFile>,
    plan: Plan,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
    to: CacheTarget<'_>,
) -> Result<(Bundle, std::io::Result<()>), Error> {
    let language = to.language;
    let Plan {
        mut skims,
        index,
        ordinal,
        fresh,
    } = plan;
    // Each record's old position: the records holding a concept, in order.
    let mut old_position = Vec::with_capacity(skims.len());
    let mut m = 0u32;
    for s in &skims {
        old_position.push(m);
        m += u32::from(s.1.is_some());
    }
    let mut old_to_new = vec![GONE; m as usize];
    let mut fresh_at = Vec::with_capacity(fresh.len());
    let mut g = SnapshotParts::new(&walk_diagnostics, found.len());
    // The next load trusts a file's record only when the file was modified
    // 2 s before this load started (docs/spec.md §9.4); a file read again
    // more recently keeps the cache file as it is (§9.5). So does a splice
    // whose new file would settle nothing: one that drops no record and
    // whose files read again have no stamp (could not be read), so no
    // record either, and are read again by every load.
    let trusted_before = trusted_before(to.written_ns);
    let mut all_trusted = true;
    let (mut stamped, mut carried) = (false, 0usize);
    let mut fresh = fresh.into_iter().peekable();
    for (i, f) in found.into_iter().enumerate() {
        let (cell, diagnostics, stamp) = match (record[i], fresh.next_if(|r| r.0 == i)) {
            (_, Some((_, r, st))) => {
                if let Some(st) = st {
                    stamped = true;
                    all_trusted &= u128::from(st.1) < trusted_before;
                }
                if r.cell.is_some() {
                    fresh_at.push(g.concepts.len() as u32);
                }
                (r.cell, r.diagnostics, st)
            }
            (Some(j), None) => {
                carried += 1;
                let (d, c) = std::mem::take(&mut skims[j]);
                if c.is_some() {
                    old_to_new[old_position[j] as usize] = g.concepts.len() as u32;
                }
                let cell = c.map(|c| ConceptCell::stored(Arc::clone(o), j as u32, c));
                (cell, d, f.stamp)
            }
            (None, None) => unreachable!("a file without a record is read again"),
        };
        g.push(f.id, stamp, cell, diagnostics);
    }
    let fresh_cells: Vec<ConceptCell> = fresh_at
        .iter()
        .map(|&p| g.concepts[p as usize].clone())
        .collect();
    let map = Remap {
        old_to_new: &old_to_new,
        fresh_at: &fresh_at,
    };
    let n = g.concepts.len();
    let analyzer = Analyzer::new(language);
    let spliced = Index::splice(&index, &map, &fresh_cells, n, &analyzer)?;
    let ordinal = splice_ordinal(&ordinal, &map, &g.concepts);
    let (saved, written) = if all_trusted && (stamped || carried < o.len()) {
        write_whole(&mut g, Arc::new(spliced), ordinal, o, to)
    } else {
        ((Arc::new(spliced), ordinal), Ok(()))
    };
    let mut b = finish(root, g, walk_diagnostics, watch, saved);
    b.made_by = MadeBy::LoadIndexSpliced;
    Ok((b, written))
}

/// Each concept's rank in ordinal order of ids: the kept concepts keep
/// their order (their ids did not change), and each fresh one goes where a
/// binary search among them puts it. Ranks that do not make one order
/// (only a damaged file could hold them) are computed again whole.
pub(super) fn splice_ordinal(old: &[u32], map: &Remap<'_>, concepts: &[ConceptCell]) -> Array<u32> {
    let mut kept = vec![GONE; old.len()];
    for (o, &p) in map.old_to_new.iter().enumerate() {
        if let (Some(slot), true) = (kept.get_mut(old[o] as usize), p != GONE) {
            *slot = p;
        }
    }
    kept.retain(|&p| p != GONE);
    let id = |p: u32| concepts[p as usize].id();
    let mut fresh = map.fresh_at.to_vec();
    fresh.sort_unstable_by(|&a, &b| id(a).cmp(id(b)));
    let mut order = Vec::with_capacity(concepts.len());
    let mut from = 0;
    for f in fresh {
        let at = from + kept[from..].partition_point(|&p| id(p) < id(f));
        order.extend_from_slice(&kept[from..at]);
        order.push(f);
        from = at;
    }
    order.extend_from_slice(&kept[from..]);
    let mut rank = vec![GONE; concepts.len()];
    for (r, &p) in order.iter().enumerate() {
        if let Some(x) = rank.get_mut(p as usize) {
            *x = r as u32;
        }
    }
    if order.len() != concepts.len() || rank.contains(&GONE) {
        return ordinal_ranks(concepts);
    }
    rank.into()
}
