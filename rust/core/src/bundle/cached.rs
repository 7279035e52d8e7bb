//! A load through a cache file: the files whose stamps match the cache
//! file's records are taken from it, the rest read; a new cache file is
//! written as the files are read, unless every file came from the old one.

use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::assemble::{finish, same_indexed_text, Outcome, SnapshotParts};
use super::writing::{build_writing, now_ns, CacheTarget};
use super::{spliced, Bundle, CacheReport, CacheStatus, MadeBy};
use crate::cache::{self, CacheFile, Rejected};
use crate::concept::source::SourceText;
use crate::concept::ConceptRow;
use crate::error::Error;
use crate::fs::range::IdRange;
use crate::fs::read::{read_found, RootDir};
use crate::fs::stamp::{trusted_before, Stamp};
use crate::fs::walk::{walk_range, FileEntry, Prior, Stamps, WalkResult};
use crate::fs::watch::Watch;
use crate::progress::{Phase, Progress};
use crate::text::analyze::{Analyzer, Language};
use crate::text::id_cmp_bytes;

/// Files read per step of a load that writes a cache file: their texts go to
/// the file while that step is indexed, so at most one step's bodies are in
/// memory at once.
pub(super) const WAVE: usize = 32 * 1024;

/// Match the found files with the records of the cache file `o`: both are in
/// id order, so each part of `found` is matched in one pass from the first
/// record not before it (a binary search), the parts in parallel. A record
/// is trusted for a file with the same id and stamp, not modified within
/// [`crate::fs::stamp::RACY_NS`] of the cache being written.
fn match_records(
    found: &[FileEntry],
    o: &CacheFile,
    record: &mut [Option<usize>],
) -> Result<(), Rejected> {
    use std::cmp::Ordering::Less;
    const PART: usize = 1 << 14;
    let trusted_before = trusted_before(o.written_ns);
    let file = |j: usize| (j < o.len()).then(|| o.file_bytes(j)).transpose();
    record
        .par_chunks_mut(PART)
        .zip(found.par_chunks(PART))
        .try_for_each(|(record, found)| {
            let first = found.first().map_or(&[][..], |f| f.id.as_bytes());
            let (mut lo, mut hi) = (0, o.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if id_cmp_bytes(o.file_bytes(mid)?.0, first) == Less {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let mut j = lo;
            let mut cur = file(j)?;
            for (slot, f) in record.iter_mut().zip(found) {
                while let Some((id, _)) = cur {
                    if id_cmp_bytes(id, f.id.as_bytes()) != Less {
                        break;
                    }
                    j += 1;
                    cur = file(j)?;
                }
                if let Some((id, st)) = cur {
                    if id == f.id.as_bytes() {
                        if f.stamp == Some(st) && u128::from(st.1) < trusted_before {
                            *slot = Some(j);
                        }
                        j += 1;
                        cur = file(j)?;
                    }
                }
            }
            Ok(())
        })
}

/// A cache file that turned out not to hold together while it was used:
/// the load starts again from the files alone and writes a new file
/// (docs/spec.md §9.2, `rebuilt`).
fn start_again(report: &mut CacheReport, why: &Rejected, record: &mut [Option<usize>]) {
    report.status = CacheStatus::Rebuilt;
    report.detail = why.to_string();
    report.reread = record.len();
    record.fill(None);
}

/// At most this many files read again (or one in 32, if more) still let a
/// reopen keep the saved index when they turn out to give it the same input,
/// or splice it when they do not (with the files added and removed).
pub(super) const KEEP_INDEX_READS: usize = 64;

/// Why [`same_indexed_input`] does not keep the saved index.
#[derive(PartialEq)]
enum NotKept {
    /// Too many files to read again, other files than the recorded ones, or
    /// one read again that gives the index other input: a splice may fit.
    Differs,
    /// The record or stored text of a file read again does not read back:
    /// the load rebuilds, writing a new file (docs/spec.md §9.6).
    Damaged,
}

/// The files no record vouches for, read again, when the bundle holds the
/// recorded files (the same ids, in the same places), each changed since its
/// record (not merely too recent to trust), and each file read
/// again gives the index what its record gave it: a concept exactly when the
/// record had one, with the same id, title, tags, description and body (a
/// file touched, or edited outside those fields). Then the records of the
/// others, the fresh reads and the saved index make the snapshot, and
/// `record` is completed with the records the fresh reads replace. Every
/// file read again is compared, so a damaged record among them is met
/// whichever other file differs (the outcome does not depend on the order
/// of a parallel run).
fn same_indexed_input(
    root: &RootDir,
    found: &[FileEntry],
    record: &mut [Option<usize>],
    o: &CacheFile,
) -> Result<Vec<(usize, Outcome, Stamp)>, NotKept> {
    if found.len() != o.len() {
        return Err(NotKept::Differs);
    }
    let stale: Vec<usize> = (0..found.len()).filter(|&i| record[i].is_none()).collect();
    if stale.len() > KEEP_INDEX_READS.max(found.len() / 32) {
        return Err(NotKept::Differs);
    }
    // As many files as records and each matched one in its place: the ids
    // are the recorded ones when each stale file's record has its id too.
    if record
        .iter()
        .enumerate()
        .any(|(i, r)| r.is_some_and(|r| r != i))
    {
        return Err(NotKept::Differs);
    }
    let compared: Vec<Result<(usize, Outcome, Stamp), NotKept>> = stale
        .par_iter()
        .map(|&i| {
            let (id, recorded) = o.file_bytes(i).map_err(|_| NotKept::Damaged)?;
            // A file as recorded but too recent to trust (§9.4's racy case)
            // is trusted only by a new cache file, written by a rebuild.
            if id != found[i].id.as_bytes() || found[i].stamp == Some(recorded) {
                return Err(NotKept::Differs);
            }
            let old = o.read(i).map_err(|_| NotKept::Damaged)?;
            let (new, stamp) = read_found(root, &found[i]);
            let same = match (&new.concept, &old.concept) {
                (Some(a), Some(b)) => {
                    if b.body().is_err() {
                        return Err(NotKept::Damaged);
                    }
                    same_indexed_text(a, b)
                }
                (None, None) => true,
                _ => false,
            };
            if same {
                Ok((i, Outcome::from(new), stamp))
            } else {
                Err(NotKept::Differs)
            }
        })
        .collect();
    if compared
        .iter()
        .any(|c| c.as_ref().err() == Some(&NotKept::Damaged))
    {
        return Err(NotKept::Damaged);
    }
    let fresh = compared.into_iter().collect::<Result<Vec<_>, _>>()?;
    for &i in &stale {
        record[i] = Some(i);
    }
    Ok(fresh)
}

impl Bundle {
    /// [`Bundle::load_with`] through `cache_file`, reading `wave` files at a
    /// time when the files must be read ([`build_writing`]).
    pub(super) fn load_through(
        root: &Path,
        cache_file: &Path,
        language: Option<Language>,
        range: &IdRange,
        progress: &Progress,
        wave: usize,
    ) -> Result<(Bundle, CacheReport), Error> {
        let started = now_ns();
        let watch = Watch::new(root);
        let root_key = range.cache_key(&root.to_string_lossy());
        let mut report = CacheReport {
            status: CacheStatus::Hit,
            detail: String::new(),
            reread: 0,
            listed: 0,
        };
        let analyzer_name = Analyzer::new(language).name();
        let mut opened = match CacheFile::open(cache_file, &root_key, analyzer_name) {
            Ok(o) => Some(o),
            Err(cache::OpenError::Missing) => {
                report.status = CacheStatus::Miss;
                None
            }
            Err(cache::OpenError::Unreadable(e)) => {
                report.status = CacheStatus::Rebuilt;
                report.detail = format!("could not be read ({e})");
                None
            }
            Err(cache::OpenError::Rejected(r)) => {
                report.status = CacheStatus::Rebuilt;
                report.detail = r.to_string();
                None
            }
        };
        // The walk reuses the recorded listings of unchanged directories.
        let listings = match opened.as_ref().map(|o| o.listings()).transpose() {
            Ok(l) => l,
            Err(r) => {
                report.status = CacheStatus::Rebuilt;
                report.detail = r.to_string();
                None
            }
        };
        let prior = listings.as_ref().map(|listings| Prior {
            listings,
            trusted_before: opened.as_ref().map_or(0, |o| trusted_before(o.written_ns)),
        });
        // Stamps are compared with the cache's records when there are any;
        // otherwise every file is read, and stamped as it is read.
        let stamps = match prior {
            Some(_) => Stamps::All,
            None => Stamps::Unopened,
        };
        let mut walk = walk_range(root, &watch, progress, prior.as_ref(), stamps, range)?;
        range.restrict(&mut walk);
        let WalkResult {
            found,
            diagnostics: walk_diagnostics,
            dirs,
            listed,
            root: under,
        } = walk;
        drop(listings);
        if report.status == CacheStatus::Rebuilt {
            opened = None;
        }
        report.listed = listed;
        // `record[i]` is the cache record of found file `i`, when it can be trusted.
        let mut record: Vec<Option<usize>> = vec![None; found.len()];
        if let Some(o) = &opened {
            if let Err(r) = match_records(&found, o, &mut record) {
                report.status = CacheStatus::Rebuilt;
                report.detail = r.to_string();
                record.fill(None);
                opened = None;
            }
        }
        let used = record.iter().flatten().count();
        report.reread = found.len() - used;
        // Every file as cached, or the few that are not read again and found
        // to give the index what their records gave it: the saved index
        // describes exactly these concepts (docs/spec.md §9.4).
        let kept = opened
            .as_ref()
            .map(|o| same_indexed_input(&under, &found, &mut record, o));
        // A damaged text met on the way is read from its file instead, by a
        // rebuild that writes a new cache file (docs/spec.md §9.6).
        let met_damage = matches!(kept, Some(Err(NotKept::Damaged)));
        if let Some(Ok(fresh)) = kept {
            // Each record is checked (and its columns read) but no concept is
            // built: they are decoded when first used ([`ConceptCell`]), and
            // their texts stay in the cache file.
            if let Some(o) = opened.take().map(Arc::new) {
                const PART: usize = 4096;
                progress.start(Phase::Read, found.len());
                // The records and the saved index are checked side by side;
                // the few files with diagnostics are gathered apart.
                let with_diagnostics = std::sync::Mutex::new(Vec::new());
                let (columns, index) = rayon::join(
                    || -> Result<Vec<Option<ConceptRow>>, Rejected> {
                        record
                            .par_chunks(PART)
                            .enumerate()
                            .flat_map_iter(|(k, part)| {
                                progress.advance(part.len());
                                let with_diagnostics = &with_diagnostics;
                                let o = &o;
                                part.iter().enumerate().map(move |(j, r)| {
                                    let (d, c) = o.skim(r.unwrap_or(usize::MAX))?;
                                    if !d.is_empty() {
                                        if let Ok(mut w) = with_diagnostics.lock() {
                                            w.push((k * PART + j, d));
                                        }
                                    }
                                    Ok(c)
                                })
                            })
                            .collect()
                    },
                    || o.index(language),
                );
                progress.check()?;
                let checked = columns.and_then(|columns| {
                    let n = columns.iter().flatten().count();
                    let (ix, ord) = index?;
                    if ord.len() != n {
                        return Err(Rejected::Corrupt(
                            "saved index: not as many concepts as the records".into(),
                        ));
                    }
                    Ok((columns, (ix, ord)))
                });
                match checked {
                    Ok((columns, (ix, ord))) => {
                        let kept = !fresh.is_empty();
                        if kept {
                            report.status = CacheStatus::Partial;
                        }
                        let mut g = SnapshotParts::new(&walk_diagnostics, found.len());
                        let mut diagnostics = with_diagnostics.into_inner().unwrap_or_default();
                        diagnostics.sort_unstable_by_key(|(i, _)| *i);
                        g.add_stored(found, &columns, diagnostics, &record, &o, fresh);
                        let mut b = finish(&under, g, walk_diagnostics, watch, (Arc::new(ix), ord));
                        if kept {
                            b.made_by = MadeBy::LoadIndexKept;
                        }
                        progress.check()?;
                        progress.start(Phase::Done, 0);
                        return Ok((b, report));
                    }
                    Err(why) => start_again(&mut report, &why, &mut record),
                }
            }
        }
        // Where a new cache file goes, whichever way the index is made.
        let target = CacheTarget {
            cache_file,
            root_key: &root_key,
            written_ns: started,
            wave,
            dirs: &dirs,
            language,
        };
        // A few files give the index other input, or were added or removed:
        // the saved index spliced with theirs (docs/spec.md §9.4), and a new
        // cache file written for the result (§9.5).
        if let Some(planned) = opened
            .as_ref()
            .filter(|_| !met_damage)
            .and_then(|o| spliced::plan(&under, &found, &record, o, language))
        {
            match planned {
                Ok(plan) => {
                    if let Some(o) = opened.take().map(Arc::new) {
                        report.status = CacheStatus::Partial;
                        progress.start(Phase::Index, 0);
                        let (b, written) = spliced::assemble(
                            &under,
                            found,
                            &record,
                            &o,
                            plan,
                            walk_diagnostics,
                            watch,
                            target,
                        )?;
                        if let Err(e) = written {
                            report.detail = format!("(not written: {e})");
                        }
                        progress.check()?;
                        progress.start(Phase::Done, 0);
                        return Ok((b, report));
                    }
                }
                Err(why) => {
                    start_again(&mut report, &why, &mut record);
                    opened = None;
                }
            }
        }
        if report.status == CacheStatus::Hit {
            report.status = CacheStatus::Partial;
        }
        // Texts taken from the old cache file are read into memory now (and
        // checked): the index build and the new cache file both need them.
        let damaged = std::sync::atomic::AtomicBool::new(false);
        let cached = |i: usize| {
            let (o, r) = (opened.as_ref()?, record[i]?);
            let read = o.read(r).ok().and_then(|mut read| {
                if let Some(c) = read.concept.as_mut() {
                    let t = c.source.read().ok()?;
                    let texts = SourceText::owned(&t.body, &t.frontmatter);
                    c.source = texts;
                }
                Some(Outcome::from(read))
            });
            if read.is_none() {
                damaged.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            read
        };
        let (bundle, written) = build_writing(
            &under,
            found,
            walk_diagnostics,
            watch,
            &cached,
            target,
            progress,
        )?;
        if damaged.into_inner() || met_damage {
            report.status = CacheStatus::Rebuilt;
            report.detail = "is corrupt (a text or record does not read back)".into();
        }
        if let Err(e) = written {
            report.detail = format!("{} (not written: {e})", report.detail)
                .trim_start()
                .to_string();
        }
        Ok((bundle, report))
    }
}
