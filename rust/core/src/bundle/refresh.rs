//! A refresh: a new snapshot when the files changed on disk, in which only
//! new and changed files were read again (docs/spec.md §1.9).

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use rayon::prelude::*;

use super::assemble::{assemble, assemble_with, same_indexed_text, FileState, Outcome};
use super::cached::KEEP_INDEX_READS;
use super::cell::ConceptCell;
use super::spliced::splice_ordinal;
use super::{Bundle, MadeBy};
use crate::array::Array;
use crate::concept::source::TextError;
use crate::diagnostic::Code;
use crate::error::Error;
use crate::fs::read::{read_found, RootDir};
use crate::fs::stamp::{stamp_of, Stamp};
use crate::fs::walk::{walk_range, FileEntry, Stamps, WalkResult};
use crate::fs::watch::{Changes, Watch};
use crate::index::splice::{Remap, GONE};
use crate::index::Index;
use crate::progress::Progress;
use crate::text::analyze::Analyzer;
use crate::text::id_cmp;

/// How long an empty change queue is trusted before the files are compared
/// again anyway.
const FULL_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

impl Bundle {
    /// Look at the disk again. `Ok(None)` when nothing a load reads has
    /// changed (the same files with the same sizes and modification times);
    /// otherwise a new snapshot in which only new and changed files were read
    /// again — unchanged concepts are carried over — and the index rebuilt.
    /// `self` is untouched either way, so searches in flight keep it.
    ///
    /// Where the platform can watch directories (Linux inotify), an unchanged
    /// bundle is recognised from an empty change queue without touching the
    /// files — for at most 30 s at a time, after which the files are compared
    /// anyway (network file systems do not report remote changes). Otherwise
    /// every file's size and modification time are compared.
    pub fn refresh(&self) -> Result<Option<Bundle>, Error> {
        let drained = self.watch.drain();
        // Trust an empty queue, but compare the files themselves now and then:
        // network file systems do not report remote changes to inotify.
        let last_full = self.last_full_check.lock().map(|t| *t).ok();
        let recent = last_full.is_some_and(|t| t.elapsed() < FULL_CHECK_EVERY);
        if drained == Changes::Quiet && recent {
            return Ok(None);
        }
        let dirs_changed = drained == Changes::Directories;
        if let (Changes::Files(mut paths), Some(last_full)) = (drained, last_full) {
            // Only some files changed: look at those alone. The successor
            // watches every directory before our queue is drained for the last
            // time, so each later change lands in one queue or the other.
            if let Some(next) = recent.then(|| self.watch.successor(&self.root)).flatten() {
                let last = self.watch.drain();
                if let Changes::Files(more) = &last {
                    paths.extend(more.iter().cloned());
                }
                if matches!(last, Changes::Quiet | Changes::Files(_)) {
                    if let Some(done) = self.refresh_files(&paths, next, last_full) {
                        return done;
                    }
                }
            }
        }
        let watch = Watch::new(&self.root);
        let progress = Progress::default();
        let mut walk = walk_range(
            &self.root,
            &watch,
            &progress,
            None,
            Stamps::All,
            &self.range,
        )?;
        self.range.restrict(&mut walk);
        let WalkResult {
            found,
            diagnostics: walk_diagnostics,
            root: under,
            ..
        } = walk;
        let stamps: Vec<Stamp> = found.iter().map(|f| f.stamp).collect();
        // Both lists are in id order: compare them in step, no lookups.
        let same = found.len() == self.files.len()
            && found
                .iter()
                .zip(&stamps)
                .zip(&self.files)
                .all(|((f, st), old)| {
                    st.is_some()
                        && f.id == old.id
                        && (*st == old.stamp || self.still_unreadable(&under, f, old))
                })
            && walk_diagnostics == self.walk_diagnostics
            && under.stamp_entry("index.md") == self.index_stamp
            // Changed directories leave this snapshot's watches stale.
            && !dirs_changed;
        if same {
            if let Ok(mut t) = self.last_full_check.lock() {
                *t = std::time::Instant::now();
            }
            return Ok(None);
        }
        let reads: Vec<(Outcome, Stamp)> = found
            .par_iter()
            .zip(&stamps)
            .map(|(f, st)| match self.file(&f.id) {
                Some(old) if st.is_some() && old.stamp == *st => {
                    let cell = old.position.map(|p| self.concepts[p as usize].clone());
                    (
                        Outcome {
                            cell,
                            diagnostics: old.diagnostics.get().to_vec(),
                        },
                        *st,
                    )
                }
                _ => {
                    let (read, stamp) = read_found(&under, f);
                    (read.into(), stamp)
                }
            })
            .collect();
        let language = self.index.bm25f.language;
        let mut b = assemble(&under, found, reads, walk_diagnostics, watch, language)?;
        b.made_by = MadeBy::Walk;
        b.range = self.range.clone();
        Ok(Some(b))
    }
    /// Whether `f`, which could not be read at this snapshot (no stamp),
    /// still cannot be read, for the same reason: then it has not changed
    /// as far as a load sees it. A stamp cannot tell (a file made readable
    /// by `chmod` keeps its size and time), so it is opened again.
    fn still_unreadable(&self, under: &RootDir, f: &FileEntry, old: &FileState) -> bool {
        if old.stamp.is_some() || old.position.is_some() {
            return false;
        }
        let (read, stamp) = read_found(under, f);
        stamp.is_none() && read.concept.is_none() && read.diagnostics == old.diagnostics.get()
    }

    /// A refresh that looks only at `paths` (what the change queue named):
    /// `None` when that is not enough to be exact — a name okfast cannot map
    /// to a concept id, a link, a directory, an error, a bundle holding files
    /// with invalid ids — and the caller walks everything instead. When no
    /// concept's indexed text changed (a file touched, or a field outside the
    /// index edited), the new snapshot shares this one's index.
    fn refresh_files(
        &self,
        paths: &[PathBuf],
        watch: Watch,
        last_full: std::time::Instant,
    ) -> Option<Result<Option<Bundle>, Error>> {
        let mut changed: Vec<String> = Vec::new();
        for p in paths {
            let rel = p.strip_prefix(&self.root).ok()?.to_str()?;
            let name = rel.rsplit('/').next()?;
            if name.starts_with('.') {
                continue; // hidden: never loaded, never reported
            }
            if self.walk_diagnostics.iter().any(|d| d.path == rel) {
                // A path the walk reported (a link named `x.md`, say): what
                // is there now, and whether it is still reported, is the
                // walk's to say (docs/spec.md §1.1, §1.9).
                return None;
            }
            if rel == "index.md" {
                return None; // okf_version may have changed
            }
            if !name.ends_with(".md") || name == "index.md" || name == "log.md" {
                // Not a concept file, but a link or a directory there is
                // reported by a walk (docs/spec.md §1.1: a link whatever its
                // name, a reserved one too), and one that went takes its
                // diagnostic with it: walk.
                match fs::symlink_metadata(p) {
                    Ok(m) if m.file_type().is_symlink() || m.is_dir() => return None,
                    _ => continue,
                }
            }
            if rel
                .chars()
                .any(|c| (c as u32) < 0x20 || c == '\u{7F}' || c == '\\')
            {
                return None;
            }
            let id = &rel[..rel.len() - 3];
            if !self.range.contains(id) {
                continue; // another part's file (docs/spec.md §1.10)
            }
            changed.push(id.to_string());
        }
        changed.sort_by(|a, b| id_cmp(a, b));
        changed.dedup();
        let bad_ids = self.files.iter().any(|f| {
            f.diagnostics
                .get()
                .iter()
                .any(|d| d.code == Code::InvalidConceptId)
        });
        if bad_ids {
            return None;
        }
        // What each named file is now: (id, stamp) when it is a concept file.
        let mut now: Vec<(String, Option<Stamp>)> = Vec::with_capacity(changed.len());
        for id in changed {
            match fs::symlink_metadata(self.root.join(format!("{id}.md"))) {
                Ok(m) if m.is_file() => now.push((id, Some(stamp_of(&m)))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => now.push((id, None)),
                _ => return None, // a link, a directory, an error: walk
            }
        }
        if now
            .iter()
            .all(|(id, st)| self.file(id).map(|f| f.stamp) == *st)
        {
            return Some(Ok(None)); // touched back to what we have, or never ours
        }
        // The new file list: ours, with the named files replaced, added or removed.
        let mut found: Vec<FileEntry> = Vec::with_capacity(self.files.len() + now.len());
        let mut fresh: Vec<bool> = Vec::with_capacity(found.capacity());
        let mut kept: Vec<Option<&FileState>> = Vec::with_capacity(found.capacity());
        let mut olds = self.files.iter().peekable();
        let mut news = now.into_iter().peekable();
        let mk = |id: &str, stamp: Stamp| FileEntry {
            id: id.to_string(),
            bad_id: None,
            stamp,
        };
        loop {
            let order = match (olds.peek(), news.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(o), Some((n, _))) => id_cmp(&o.id, n),
            };
            if order != std::cmp::Ordering::Greater {
                let o = olds.next()?;
                if order == std::cmp::Ordering::Equal {
                    continue; // the named file decides, below
                }
                found.push(mk(&o.id, o.stamp));
                fresh.push(false);
                kept.push(Some(o));
            } else {
                let (id, st) = news.next()?;
                if let Some(st) = st {
                    let old = self.file(&id).filter(|f| f.stamp == st && st.is_some());
                    found.push(mk(&id, st));
                    fresh.push(old.is_none());
                    kept.push(old);
                }
            }
        }
        // Unchanged files are carried over from the state beside them in
        // `kept` (no lookups), the rest read, all under one opening of the
        // root.
        let under = RootDir::open(&self.root);
        let reads: Vec<(Outcome, Stamp)> = found
            .par_iter()
            .zip(&kept)
            .map(|(f, old)| match old {
                Some(old) => {
                    let cell = old.position.map(|p| self.concepts[p as usize].clone());
                    let diagnostics = old.diagnostics.get().to_vec();
                    (Outcome { cell, diagnostics }, old.stamp)
                }
                _ => {
                    let (read, stamp) = read_found(&under, f);
                    (read.into(), stamp)
                }
            })
            .collect();
        // The index can stay when the concepts are the same ones in the same
        // places with the same indexed text. A carried concept is in its
        // place when its old position is its new one (no concept is touched
        // for that); one read again must have the id of the concept that was
        // there, and the same indexed text.
        let mut at = 0usize;
        let same_places = reads.iter().zip(&kept).all(|((r, _), old)| {
            let Some(c) = &r.cell else { return true };
            at += 1;
            match old {
                Some(old) => old.position == Some(at as u32 - 1),
                None => self.concepts.get(at - 1).is_some_and(|b| b.id() == c.id()),
            }
        }) && at == self.concepts.len();
        let same_index = same_places
            && found
                .iter()
                .zip(&fresh)
                .zip(&reads)
                .filter(|((_, fr), _)| **fr)
                .all(|((f, _), (r, _))| {
                    let old = self.file(&f.id).and_then(|o| o.position);
                    match (r.cell.as_ref(), old) {
                        (Some(c), Some(p)) => same_indexed_text(c, &self.concepts[p as usize]),
                        (None, None) => true,
                        _ => false,
                    }
                });
        let spliced = if same_index {
            None
        } else {
            match self.splice_index(&reads, &kept) {
                Ok(s) => s,
                Err(e) => return Some(Err(e.into())),
            }
        };
        let made_by = match (same_index, &spliced) {
            (true, _) => MadeBy::EventsIndexKept,
            (false, Some(_)) => MadeBy::EventsIndexSpliced,
            (false, None) => MadeBy::Events,
        };
        let saved = if same_index {
            Some((Arc::clone(&self.index), self.ordinal_rank.clone()))
        } else {
            spliced.map(|(ix, ord)| (Arc::new(ix), ord))
        };
        let mut b = match assemble_with(
            &under,
            found,
            reads,
            self.walk_diagnostics.clone(),
            watch,
            self.index.bm25f.language,
            saved,
            &Progress::default(),
        ) {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        if let Ok(mut t) = b.last_full_check.lock() {
            *t = last_full; // this was not a full comparison
        }
        b.made_by = made_by;
        b.range = self.range.clone();
        Some(Ok(Some(b)))
    }

    /// This snapshot's index spliced for the files `reads` (in new id order;
    /// `kept[i]` the state a carried file had here), when few concepts were
    /// read again, added or removed (docs/spec.md §1.9, §9.4): the carried
    /// concepts keep their entries, renumbered, and the rest are indexed
    /// apart and merged in. `None` when more changed: a build costs less then.
    fn splice_index(
        &self,
        reads: &[(Outcome, Stamp)],
        kept: &[Option<&FileState>],
    ) -> Result<Option<(Index, Array<u32>)>, TextError> {
        let mut old_to_new = vec![GONE; self.concepts.len()];
        let mut fresh_at: Vec<u32> = Vec::new();
        let mut fresh: Vec<ConceptCell> = Vec::new();
        let mut n = 0u32;
        for ((r, _), old) in reads.iter().zip(kept) {
            let Some(cell) = &r.cell else { continue };
            match old.and_then(|o| o.position) {
                Some(p) => old_to_new[p as usize] = n,
                None => {
                    fresh_at.push(n);
                    fresh.push(cell.clone());
                }
            }
            n += 1;
        }
        // An edited concept is read again and its old position is gone: it
        // counts once, as a concept read again; only a position whose id is
        // not in the new snapshot counts as removed (docs/spec.md §9.4).
        let edited = fresh
            .iter()
            .filter(|c| self.position(c.id()).is_some())
            .count();
        let removed = old_to_new
            .iter()
            .filter(|&&p| p == GONE)
            .count()
            .saturating_sub(edited);
        if fresh.len() + removed > KEEP_INDEX_READS.max(reads.len() / 32) {
            return Ok(None);
        }
        let map = Remap {
            old_to_new: &old_to_new,
            fresh_at: &fresh_at,
        };
        let concepts: Vec<ConceptCell> = reads.iter().filter_map(|(r, _)| r.cell.clone()).collect();
        let analyzer = Analyzer::new(self.index.bm25f.language);
        let index = Index::splice(&self.index, &map, &fresh, n as usize, &analyzer)?;
        Ok(Some((
            index,
            splice_ordinal(&self.ordinal_rank, &map, &concepts),
        )))
    }
}
