//! A bundle (docs/spec.md §1): walk the directory, read every concept file in
//! parallel, keep concepts in id order with their diagnostics, and build the
//! per-field index once. A `Bundle` is an immutable snapshot.

mod assemble;
mod cached;
pub mod cell;
#[cfg(test)]
mod parts_tests;
mod refresh;
mod spliced;
#[cfg(test)]
mod spliced_tests;
mod temporary;
#[cfg(test)]
mod tests;
mod writing;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::array::Array;
use crate::concept::ConceptColumns;
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::fs::range::IdRange;
use crate::fs::read::read_all;
use crate::fs::stamp::Stamp;
use crate::fs::walk::{walk_range, Stamps, WalkResult};
use crate::fs::watch::Watch;
use crate::index::Index;
use crate::progress::{Phase, Progress};
use crate::text::analyze::Language;
use crate::text::id_cmp;
use assemble::{assemble_with, FileState};
use cached::WAVE;
use cell::ConceptCell;

/// The analyzer language of a load that names none (docs/spec.md §12.2):
/// none, so tokens are not stemmed (stemming cost more than it gained on
/// the judged sets of docs/scoring.md).
pub const DEFAULT_LANGUAGE: Option<Language> = None;

pub struct Bundle {
    pub root: PathBuf,
    /// The device and inode of the root directory its walk opened
    /// ([`crate::fs::read::RootDir::identity`]).
    pub root_identity: Option<(u64, u64)>,
    /// Shared with the snapshots a refresh makes (unchanged concepts are not
    /// copied); from a cache file, decoded when first used ([`ConceptCell`]).
    pub concepts: Vec<ConceptCell>,
    /// What the resolver reads for every concept, by position.
    pub columns: ConceptColumns,
    pub diagnostics: Vec<Diagnostic>,
    pub okf_version: Option<String>,
    /// Shared between snapshots when a refresh changed nothing it indexes.
    pub index: Arc<Index>,
    /// Rank of each concept's id in ordinal (code point) order — the
    /// cross-source tie-break of docs/spec.md §5.4, which differs from id order.
    pub ordinal_rank: Array<u32>,
    /// What the last read saw, for [`Bundle::refresh`]: every concept file
    /// (in id order) with its stamp and outcome; also the walk's own
    /// diagnostics and the root index's stamp.
    files: Vec<FileState>,
    walk_diagnostics: Vec<Diagnostic>,
    index_stamp: Stamp,
    /// Change notification for the directories this snapshot read.
    watch: Watch,
    /// When the files were last compared one by one.
    last_full_check: std::sync::Mutex<std::time::Instant>,
    /// How this snapshot came to be.
    pub made_by: MadeBy,
    /// The ids it holds of its directory (docs/spec.md §1.10); a refresh
    /// keeps the same range.
    pub range: IdRange,
}

/// How a snapshot came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MadeBy {
    /// A load.
    Load,
    /// A load through a cache file that read some files again, all with the
    /// indexed text their records had, so the saved index is used.
    LoadIndexKept,
    /// A load through a cache file that read a few files again, added or
    /// removed some, and spliced the saved index with theirs.
    LoadIndexSpliced,
    /// A refresh that compared every file.
    Walk,
    /// A refresh that looked only at the files the change queue named.
    Events,
    /// Such a refresh that changed no indexed text, so the index is shared.
    EventsIndexKept,
    /// Such a refresh that changed the indexed text of a few concepts (or
    /// added or removed a few), so the index was spliced.
    EventsIndexSpliced,
}

impl MadeBy {
    /// `load`, `load, index kept`, `load, index spliced`, `walk`, `events`
    /// or `events, index kept` (docs/spec.md §1.9, §9.4).
    pub fn as_str(self) -> &'static str {
        match self {
            MadeBy::Load => "load",
            MadeBy::LoadIndexKept => "load, index kept",
            MadeBy::LoadIndexSpliced => "load, index spliced",
            MadeBy::Walk => "walk",
            MadeBy::Events => "events",
            MadeBy::EventsIndexKept => "events, index kept",
            MadeBy::EventsIndexSpliced => "events, index spliced",
        }
    }
}

/// What a load did with its cache file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    /// No cache file was used.
    Off,
    /// Every file came from the cache file.
    Hit,
    /// Some files were read again.
    Partial,
    /// There was no cache file yet.
    Miss,
    /// The cache file was rejected and written anew.
    Rebuilt,
}

impl CacheStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Off => "off",
            CacheStatus::Hit => "hit",
            CacheStatus::Partial => "partial",
            CacheStatus::Miss => "miss",
            CacheStatus::Rebuilt => "rebuilt",
        }
    }
}

/// What a load did with its cache file ([`Bundle::load_cached`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheReport {
    pub status: CacheStatus,
    /// Why it was rejected, or why writing the new one failed.
    pub detail: String,
    /// Files read from disk rather than taken from the cache.
    pub reread: usize,
    /// Directories listed from disk rather than taken from the cache (an
    /// unchanged directory's recorded listing is reused: [`crate::fs::walk`]).
    pub listed: usize,
}

impl Bundle {
    /// [`Bundle::load`] through a cache file: files whose size and
    /// modification time match the cache (and are not racy) are taken from
    /// it, the rest are read; the cache is rewritten (atomically, by rename)
    /// unless every file came from it. A cache file that cannot be used is
    /// rebuilt, never partly trusted. The results are exactly those of
    /// [`Bundle::load`].
    pub fn load_cached(
        root: impl AsRef<Path>,
        cache_file: &Path,
    ) -> Result<(Bundle, CacheReport), Error> {
        let progress = Progress::default();
        Bundle::load_with(root.as_ref(), Some(cache_file), DEFAULT_LANGUAGE, &progress)
    }

    /// [`Bundle::load`] (no `cache_file`) or [`Bundle::load_cached`], its
    /// BM25F tokens analysed for `language` (docs/spec.md §12.1), reporting to
    /// `progress` and stopping with [`Error::Cancelled`] soon after it is
    /// cancelled.
    pub fn load_with(
        root: &Path,
        cache_file: Option<&Path>,
        language: Option<Language>,
        progress: &Progress,
    ) -> Result<(Bundle, CacheReport), Error> {
        Bundle::load_range(root, cache_file, language, &IdRange::default(), progress)
    }

    /// [`Bundle::load_with`] keeping only the concept files whose ids fall in
    /// `range`, and the walk's diagnostics whose paths do (docs/spec.md §1.10).
    pub fn load_range(
        root: &Path,
        cache_file: Option<&Path>,
        language: Option<Language>,
        range: &IdRange,
        progress: &Progress,
    ) -> Result<(Bundle, CacheReport), Error> {
        let (mut b, report) =
            Bundle::load_range_inner(root, cache_file, language, range, progress)?;
        b.range = range.clone();
        Ok((b, report))
    }

    fn load_range_inner(
        root: &Path,
        cache_file: Option<&Path>,
        language: Option<Language>,
        range: &IdRange,
        progress: &Progress,
    ) -> Result<(Bundle, CacheReport), Error> {
        let Some(cache_file) = cache_file else {
            let watch = Watch::new(root);
            let mut walk = walk_range(root, &watch, progress, None, Stamps::Unopened, range)?;
            range.restrict(&mut walk);
            let WalkResult {
                found,
                diagnostics: walk_diagnostics,
                listed,
                root: opened,
                ..
            } = walk;
            let reads = read_all(&opened, &found, &|_| None, progress)?;
            let b = assemble_with(
                &opened,
                found,
                reads,
                walk_diagnostics,
                watch,
                language,
                None,
                progress,
            )?;
            progress.check()?;
            progress.start(Phase::Done, 0);
            let report = CacheReport {
                status: CacheStatus::Off,
                detail: String::new(),
                reread: b.files.len(),
                listed,
            };
            return Ok((b, report));
        };
        // Never fails on a damaged stored text: texts kept from an old cache
        // file are read back (checked) into memory, or their files re-read.
        Bundle::load_through(root, cache_file, language, range, progress, WAVE)
    }

    pub fn load(root: impl AsRef<Path>) -> Result<Bundle, Error> {
        let progress = Progress::default();
        Ok(Bundle::load_with(root.as_ref(), None, DEFAULT_LANGUAGE, &progress)?.0)
    }

    pub fn len(&self) -> usize {
        self.concepts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.concepts.is_empty()
    }

    /// The position of a concept id: a binary search, since concepts are
    /// kept in id order (no second copy of every id in a map).
    pub fn position(&self, id: &str) -> Option<u32> {
        self.concepts
            .binary_search_by(|c| id_cmp(c.id(), id))
            .ok()
            .map(|p| p as u32)
    }

    fn file(&self, id: &str) -> Option<&FileState> {
        self.files
            .binary_search_by(|x| id_cmp(&x.id, id))
            .ok()
            .map(|i| &self.files[i])
    }
}
