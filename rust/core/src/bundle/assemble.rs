//! Putting a snapshot together: each file's outcome in id order, the
//! concepts' columns and diagnostics, the index and the ordinal ranks.

use std::sync::Arc;

use rayon::prelude::*;

use super::cell::ConceptCell;
use super::{Bundle, MadeBy};
use crate::array::Array;
use crate::cache::CacheFile;
use crate::concept::{split_frontmatter, Concept, ConceptColumns, ConceptRow, FileOutcome};
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::fs::range::IdRange;
use crate::fs::read::RootDir;
use crate::fs::stamp::Stamp;
use crate::fs::walk::FileEntry;
use crate::fs::watch::Watch;
use crate::index::Index;
use crate::progress::{Phase, Progress};
use crate::text::analyze::{Analyzer, Language};
use crate::text::id_cmp;
use crate::yaml;

/// One file's outcome in a snapshot: its concept's cell, unless the file was
/// skipped, and its diagnostics in the documented order.
#[derive(Default)]
pub(super) struct Outcome {
    pub cell: Option<ConceptCell>,
    pub diagnostics: Vec<Diagnostic>,
}

impl From<FileOutcome> for Outcome {
    fn from(r: FileOutcome) -> Outcome {
        Outcome {
            cell: r.concept.map(|c| ConceptCell::loaded(Arc::new(c))),
            diagnostics: r.diagnostics,
        }
    }
}

/// What the last read saw of one file. As large as a [`FileEntry`] (test), so a
/// reopen turns the walk's list into the file states in place.
pub(super) struct FileState {
    pub id: String,
    pub stamp: Stamp,
    /// The concept's position in `concepts`, when it loaded.
    pub position: Option<u32>,
    pub diagnostics: Diags,
}

/// A file's diagnostics: most files have none, and then this is one null
/// pointer rather than an empty list's three words.
#[derive(Default)]
#[allow(clippy::box_collection)] // the box is the point: one word, not three
pub(super) struct Diags(Option<Box<Vec<Diagnostic>>>);

impl Diags {
    pub(super) fn get(&self) -> &[Diagnostic] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl From<Vec<Diagnostic>> for Diags {
    fn from(v: Vec<Diagnostic>) -> Diags {
        Diags((!v.is_empty()).then(|| Box::new(v)))
    }
}

/// Whether two concepts give the index the same input (docs/spec.md §3.2 fields).
pub(super) fn same_indexed_text(a: &Concept, b: &Concept) -> bool {
    a.id == b.id
        && a.title == b.title
        && a.tags == b.tags
        && a.description == b.description
        && matches!((a.body(), b.body()), (Ok(x), Ok(y)) if x == y)
}

/// The `okf_version` in the frontmatter of the bundle's `index.md` (`bytes`).
pub(super) fn okf_version(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let (lines, _) = split_frontmatter(text).ok()??;
    let map = yaml::parse(&lines).ok()?;
    yaml::get(&map, "okf_version")
        .and_then(yaml::Value::display)
        .map(str::to_string)
}

/// Build a snapshot from the files' outcomes (in `found`'s id order).
pub(super) fn assemble(
    root: &RootDir,
    found: Vec<FileEntry>,
    reads: Vec<(Outcome, Stamp)>,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
    language: Option<Language>,
) -> Result<Bundle, Error> {
    assemble_with(
        root,
        found,
        reads,
        walk_diagnostics,
        watch,
        language,
        None,
        &Progress::default(),
    )
}

/// Files' outcomes gathered in id order: the concepts, every file's state,
/// and all diagnostics.
pub(super) struct SnapshotParts {
    pub concepts: Vec<ConceptCell>,
    pub columns: ConceptColumns,
    pub diagnostics: Vec<Diagnostic>,
    pub files: Vec<FileState>,
}

impl SnapshotParts {
    pub fn new(walk_diagnostics: &[Diagnostic], files: usize) -> SnapshotParts {
        SnapshotParts {
            concepts: Vec::with_capacity(files),
            columns: ConceptColumns::with_capacity(files),
            diagnostics: walk_diagnostics.to_vec(),
            files: Vec::with_capacity(files),
        }
    }

    pub fn add(&mut self, found: Vec<FileEntry>, reads: Vec<(Outcome, Stamp)>) {
        for (f, (r, st)) in found.into_iter().zip(reads) {
            self.push(f.id, st, r.cell, r.diagnostics);
        }
    }

    /// The next file (in id order): its concept, if it has one, and its
    /// diagnostics.
    pub fn push(
        &mut self,
        id: String,
        stamp: Stamp,
        cell: Option<ConceptCell>,
        diagnostics: Vec<Diagnostic>,
    ) {
        let position = cell.is_some().then_some(self.concepts.len() as u32);
        self.diagnostics.extend(diagnostics.iter().cloned());
        if let Some(c) = cell {
            self.columns.push(c.columns());
            self.concepts.push(c);
        }
        self.files.push(FileState {
            id,
            stamp,
            position,
            diagnostics: diagnostics.into(),
        });
    }

    /// Files taken whole from the cache file `from` (into an empty
    /// `SnapshotParts`): file `i` is its record `record[i]`, whose concept has the
    /// columns `columns[i]`; `diagnostics` holds the files that have any (by
    /// file, in order). A million files are a million of each: the cells are
    /// made in parallel and the file states in place of `found`. Then each
    /// file of `fresh`, read again, takes the place of its record, which had
    /// a concept exactly when it has one.
    pub fn add_stored(
        &mut self,
        found: Vec<FileEntry>,
        columns: &[Option<ConceptRow>],
        diagnostics: Vec<(usize, Vec<Diagnostic>)>,
        record: &[Option<usize>],
        from: &Arc<CacheFile>,
        fresh: Vec<(usize, Outcome, Stamp)>,
    ) {
        self.concepts = record
            .par_iter()
            .zip(columns)
            .filter_map(|(r, c)| {
                let at = r.unwrap_or(usize::MAX) as u32;
                c.map(|c| ConceptCell::stored(Arc::clone(from), at, c))
            })
            .collect();
        self.files = found
            .into_iter()
            .zip(columns)
            .map(|(f, c)| FileState {
                id: f.id,
                stamp: f.stamp,
                position: c.map(|c| self.columns.push(c)),
                diagnostics: Diags::default(),
            })
            .collect();
        let mut fresh = fresh.into_iter().peekable();
        let mut stored = diagnostics.into_iter().peekable();
        // Diagnostics in file order, each file's own or its fresh read's.
        loop {
            let next_fresh = fresh.peek().map(|f| f.0);
            let next_stored = stored.peek().map(|d| d.0);
            match (next_fresh, next_stored) {
                (None, None) => break,
                (Some(f), s) if s.is_none_or(|s| f <= s) => {
                    if s == Some(f) {
                        stored.next();
                    }
                    let Some((i, r, st)) = fresh.next() else {
                        break;
                    };
                    if let (Some(p), Some(cell)) = (self.files[i].position, r.cell) {
                        self.columns.set(p, cell.columns());
                        self.concepts[p as usize] = cell;
                    }
                    self.files[i].stamp = st;
                    self.diagnostics.extend(r.diagnostics.iter().cloned());
                    self.files[i].diagnostics = r.diagnostics.into();
                }
                _ => {
                    let Some((i, d)) = stored.next() else { break };
                    self.diagnostics.extend(d.iter().cloned());
                    self.files[i].diagnostics = d.into();
                }
            }
        }
    }
}

/// Each concept's rank in ordinal (code point) order of ids.
pub(super) fn ordinal_ranks(concepts: &[ConceptCell]) -> Array<u32> {
    let mut by_ordinal: Vec<u32> = (0..concepts.len() as u32).collect();
    by_ordinal
        .par_sort_unstable_by(|&a, &b| concepts[a as usize].id().cmp(concepts[b as usize].id()));
    let mut ordinal_rank = vec![0u32; concepts.len()];
    for (rank, &p) in by_ordinal.iter().enumerate() {
        ordinal_rank[p as usize] = rank as u32;
    }
    ordinal_rank.into()
}

/// [`assemble`], with the index and ordinal ranks already at hand when
/// `saved` holds them (a cache that matched every file).
#[allow(clippy::too_many_arguments)]
pub(super) fn assemble_with(
    root: &RootDir,
    found: Vec<FileEntry>,
    reads: Vec<(Outcome, Stamp)>,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
    language: Option<Language>,
    saved: Option<(Arc<Index>, Array<u32>)>,
    progress: &Progress,
) -> Result<Bundle, Error> {
    let mut g = SnapshotParts::new(&walk_diagnostics, found.len());
    g.add(found, reads);
    let saved = match saved {
        Some(s) => s,
        None => {
            progress.start(Phase::Index, 0);
            let analyzer = Analyzer::new(language);
            let index = Arc::new(Index::build_with(&g.concepts, &analyzer, progress)?);
            (index, ordinal_ranks(&g.concepts))
        }
    };
    Ok(finish(root, g, walk_diagnostics, watch, saved))
}

/// The snapshot of gathered files with their index.
pub(super) fn finish(
    under: &RootDir,
    mut g: SnapshotParts,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
    (index, ordinal_rank): (Arc<Index>, Array<u32>),
) -> Bundle {
    // Stable: one file's own diagnostics keep their order.
    g.diagnostics.sort_by(|a, b| id_cmp(&a.path, &b.path));
    let root = under.path();
    Bundle {
        root: root.to_path_buf(),
        root_identity: under.identity(),
        concepts: g.concepts,
        columns: g.columns,
        diagnostics: g.diagnostics,
        // Stamped before it is read: a change in between is seen as one
        // by the next refresh. Both under the walk's root (docs/spec.md §1.3).
        index_stamp: under.stamp_entry("index.md"),
        okf_version: under.read_entry("index.md").and_then(|b| okf_version(&b)),
        index,
        ordinal_rank,
        files: g.files,
        walk_diagnostics,
        watch,
        last_full_check: std::sync::Mutex::new(std::time::Instant::now()),
        made_by: MadeBy::Load,
        range: IdRange::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Code;

    #[test]
    fn a_file_state_fits_in_place_of_a_found_file() {
        // What lets a reopen turn the walk's list into file states without
        // a second list (`SnapshotParts::add_stored`).
        assert_eq!(
            std::mem::size_of::<FileState>(),
            std::mem::size_of::<FileEntry>()
        );
        assert_eq!(
            std::mem::align_of::<FileState>(),
            std::mem::align_of::<FileEntry>()
        );
        let d = Diags::from(vec![Diagnostic::new(Code::UnreadableFile, "m", "p")]);
        assert_eq!(d.get().len(), 1);
        assert!(Diags::from(Vec::new()).0.is_none());
    }
}
