//! A load that writes a new cache file as it reads (docs/cache-format.md):
//! each wave's texts appended while it is indexed, then served from the
//! file; the BM25F postings laid straight into the file's lists section;
//! the file records and the index's first part written while the BM25F
//! lists are laid out; the rest, then the rename into place; and the
//! snapshot then served from the file written, as a reopen serves it.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::assemble::{finish, ordinal_ranks, Outcome, SnapshotParts};
use super::cell::ConceptCell;
use super::temporary::Temporary;
use super::Bundle;
use crate::array::Array;
use crate::cache::{self, CacheFile};
use crate::concept::source::{SourceText, TextStore};
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::fs::read::{read_some, RootDir};
use crate::fs::walk::{listings, DirRecord, FileEntry};
use crate::fs::watch::Watch;
use crate::index::bm25f::{ListSizes, MappedLists};
use crate::index::{chunk_fields, BuildSink, Chunks, FieldIndex, Index, Scratches};
use crate::progress::{Phase, Progress};
use crate::text::analyze::{Analyzer, Language};

/// Where and how [`build_writing`] writes: the cache file, the bundle root it
/// is recorded for, the instant it counts as written, and the files per wave.
#[derive(Clone, Copy)]
pub(super) struct CacheTarget<'a> {
    pub(super) cache_file: &'a Path,
    pub(super) root_key: &'a str,
    pub(super) written_ns: u128,
    pub(super) wave: usize,
    /// The walk's directories, whose listings the file records.
    pub(super) dirs: &'a [DirRecord],
    /// The BM25F analyzer's language.
    pub(super) language: Option<Language>,
}

/// Load `found` in waves of `wave` files, writing a new cache file as it
/// goes: each wave is read (files `cached` yields are not read again) and its
/// words are indexed while its texts are appended to the cache file, then
/// served from it, so bodies never pile up in memory. The index is merged at
/// the end (while the file records are written) and the cache file completed
/// and renamed into place. A failure to
/// write the cache only leaves the texts in memory; it is returned beside the
/// bundle.
pub(super) fn build_writing(
    root: &RootDir,
    found: Vec<FileEntry>,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
    cached: &(dyn Fn(usize) -> Option<Outcome> + Sync),
    to: CacheTarget<'_>,
    progress: &Progress,
) -> Result<(Bundle, std::io::Result<()>), Error> {
    let CacheTarget {
        cache_file,
        root_key,
        written_ns,
        wave,
        dirs,
        language,
    } = to;
    // However this ends (cancelled, failed, renamed), no temporary file stays.
    let tmp = Temporary::beside(cache_file);
    let mut sink = tmp.sink(root_key, language);
    let mut refs: Vec<cache::TextRef> = Vec::new();
    let total = found.len();
    progress.start(Phase::Read, total);
    let mut g = SnapshotParts::new(&walk_diagnostics, total);
    let mut chunks = Chunks::default();
    let mut rest = found.into_iter();
    let mut first = 0usize;
    let scratches = Scratches::default();
    // Each wave's texts are written while it is indexed (both only read it),
    // so the single-threaded write overlaps parallel work; then they are
    // served from the file and their memory freed.
    while first < total {
        let wave: Vec<FileEntry> = rest.by_ref().take(wave.max(1)).collect();
        let reads = read_some(root, &wave, first, cached, progress);
        first += wave.len();
        progress.check()?;
        let base = g.concepts.len();
        g.add(wave, reads);
        let (more, ()) = rayon::join(
            || chunk_fields(&g.concepts[base..], base as u32, progress, &scratches),
            || write_texts(&mut sink, &g.concepts[base..], &mut refs),
        );
        chunks.append(more);
        serve_stored(&mut sink, &mut g.concepts[base..], &refs, cache_file);
        progress.check()?;
    }
    drop(scratches);
    progress.start(Phase::Index, 0);
    let ordinal = ordinal_ranks(&g.concepts);
    let analyzer = Analyzer::new(language);
    let mut to_file = ToFile {
        sink: &mut sink,
        g: &g,
        refs: &refs,
        dirs,
        written_ns,
        ordinal: &ordinal,
    };
    let index = Index::from_chunks_then(chunks, &g.concepts, &analyzer, &mut to_file);
    let index = Arc::new(index?);
    progress.check()?;
    let written = sink.and_then(|mut s| {
        let own = s.store(cache_file)?;
        s.index_tail(&index.bm25f)?;
        tmp.put_in_place(cache_file)?;
        Ok(own)
    });
    // On failure the temporary file is removed; texts already served from it
    // stay readable through the open handle.
    let saved = match &written {
        Ok(own) => served_from_file(cache_file, root_key, language, &own.file, &mut g, &ordinal)
            .map(|(ix, ord)| (Arc::new(ix), ord)),
        Err(_) => None,
    };
    let saved = saved.unwrap_or((index, ordinal));
    let b = finish(root, g, walk_diagnostics, watch, saved);
    progress.start(Phase::Done, 0);
    Ok((b, written.map(drop)))
}

/// Write a new cache file for the snapshot `g`, whose index was not built
/// as its files were read (a splice, docs/spec.md §9.5), then rename it into
/// place and serve the snapshot from it as after a build. The texts and
/// records of the concepts still in `old` are copied from it as they are
/// (the texts in runs, each record with only where its texts are changed);
/// the others' are written, and the directory listings and `index` whole.
/// Returns the index and ordinal ranks to serve, and whether the file was
/// written.
pub(super) fn write_whole(
    g: &mut SnapshotParts,
    index: Arc<Index>,
    ordinal: Array<u32>,
    old: &Arc<CacheFile>,
    to: CacheTarget<'_>,
) -> ((Arc<Index>, Array<u32>), std::io::Result<()>) {
    let tmp = Temporary::beside(to.cache_file);
    let mut sink = tmp.sink(to.root_key, to.language);
    // Per concept, its old record and where its texts go, when it is copied.
    let mut copied: Vec<Option<(&[u8], u64)>> = vec![None; g.concepts.len()];
    let (mut runs, mut at) = (Vec::<(u64, u64)>::new(), 0u64);
    let mut made = Vec::new();
    for (p, c) in g.concepts.iter().enumerate() {
        let Some(j) = c.record_in(old) else {
            made.push(p);
            continue;
        };
        match old.raw_record(j as usize) {
            Ok(cache::RawRecord {
                bytes,
                text: Some((from, len)),
            }) => {
                match runs.last_mut() {
                    Some((start, l)) if *start + *l == from => *l += len,
                    _ => runs.push((from, len)),
                }
                copied[p] = Some((bytes, at));
                at += len;
            }
            Ok(_) => sink = Err(std::io::Error::other("a concept's record holds none")),
            Err(e) => sink = Err(std::io::Error::other(e.to_string())),
        }
    }
    let mut refs = vec![cache::TextRef::default(); g.concepts.len()];
    if let Ok(s) = &mut sink {
        let written = s.copy_texts(old, &runs).and_then(|()| {
            s.preallocate(
                made.iter()
                    .map(|&p| g.concepts[p].source.stored_len())
                    .sum(),
            );
            s.texts(made.iter().map(|&p| &*g.concepts[p]))
        });
        match written {
            Ok(new) => made.iter().zip(new).for_each(|(&p, r)| refs[p] = r),
            Err(e) => sink = Err(e),
        }
    }
    if let Ok(s) = &mut sink {
        if let Err(e) = s.lists_from(&index.bm25f) {
            sink = Err(e);
        }
    }
    write_records(&mut sink, g, &refs, &copied, to.dirs, to.written_ns);
    let written = sink.and_then(|mut s| {
        let own = s.store(to.cache_file)?;
        s.finish(&index, &ordinal)?;
        tmp.put_in_place(to.cache_file)?;
        Ok(own)
    });
    let served = match &written {
        Ok(own) => served_from_file(
            to.cache_file,
            to.root_key,
            to.language,
            &own.file,
            g,
            &ordinal,
        )
        .map(|(ix, ord)| (Arc::new(ix), ord)),
        Err(_) => None,
    };
    (served.unwrap_or((index, ordinal)), written.map(drop))
}

/// The snapshot served from the cache file just written, as a reopen would
/// serve it (docs/spec.md §9.5): the index mapped from the file, each
/// concept decoded from its record when first used, so what was built in
/// memory is freed and the load leaves no more resident than a reopen.
/// The file must be the one written (`own`, not a newer one renamed over
/// it), and every record must hold its concept's id where it was written and the
/// saved ordinal ranks equal `ordinal`; otherwise `None`, and the snapshot
/// keeps what was built. Concepts of files without a stamp have no record
/// and stay in memory.
fn served_from_file(
    cache_file: &Path,
    root_key: &str,
    language: Option<Language>,
    own: &fs::File,
    g: &mut SnapshotParts,
    ordinal: &Array<u32>,
) -> Option<(Index, Array<u32>)> {
    let o = CacheFile::open(cache_file, root_key, Analyzer::new(language).name()).ok()?;
    if !o.is_open_as(own) {
        return None;
    }
    let (ix, ord) = o.index(language).ok()?;
    if ord[..] != ordinal[..] {
        return None;
    }
    // Records are written for the files with a stamp, in file order.
    let mut at: Vec<(u32, u32)> = Vec::with_capacity(g.concepts.len());
    let mut record = 0u32;
    for f in &g.files {
        if f.stamp.is_some() {
            if let Some(p) = f.position {
                at.push((p, record));
            }
            record += 1;
        }
    }
    if record as usize != o.len() {
        return None;
    }
    let o = Arc::new(o);
    let concepts = &g.concepts;
    let cells: Vec<(u32, ConceptCell)> = at
        .par_iter()
        .map(|&(p, r)| {
            // The file passed its checksums as it was opened: each record is
            // matched by its id (cheap) rather than decoded as a reopen does.
            let c = &concepts[p as usize];
            let (id, _) = o.file_bytes(r as usize).ok()?;
            (id == c.id().as_bytes())
                .then(|| (p, ConceptCell::stored(Arc::clone(&o), r, c.columns())))
        })
        .collect::<Option<_>>()?;
    for (p, cell) in cells {
        g.concepts[p as usize] = cell;
    }
    Some((ix, ord))
}

/// A cache file being written as the index is built: its lists section
/// made for the BM25F postings to be laid in (docs/cache-format.md), its
/// file records and the index's first part written while the BM25F lists
/// are laid out, leaving only the rest of the BM25F index to write after.
struct ToFile<'a> {
    sink: &'a mut std::io::Result<cache::Sink>,
    g: &'a SnapshotParts,
    refs: &'a [cache::TextRef],
    dirs: &'a [DirRecord],
    written_ns: u128,
    ordinal: &'a [u32],
}

impl BuildSink for ToFile<'_> {
    fn lists(&mut self, sizes: ListSizes) -> Option<MappedLists> {
        let s = self.sink.as_mut().ok()?;
        match s.lists(sizes) {
            Ok(lists) => lists,
            Err(e) => {
                *self.sink = Err(e);
                None
            }
        }
    }

    fn fields_done(&mut self, fields: &[FieldIndex; 3], tags: &FxHashMap<String, Array<u32>>) {
        write_records(
            self.sink,
            self.g,
            self.refs,
            &[],
            self.dirs,
            self.written_ns,
        );
        if let Ok(s) = &mut *self.sink {
            if let Err(e) = s.index_head(fields, tags, self.ordinal) {
                *self.sink = Err(e);
            }
        }
    }
}

/// Append the texts of `concepts` to the cache file being written, their
/// references to `refs`. A failure ends the writing (`sink` becomes the
/// error) and leaves the texts in memory.
fn write_texts(
    sink: &mut std::io::Result<cache::Sink>,
    concepts: &[ConceptCell],
    refs: &mut Vec<cache::TextRef>,
) {
    let Ok(s) = sink else { return };
    s.preallocate(concepts.iter().map(|c| c.source.stored_len()).sum());
    let appended = s.texts(concepts.iter().map(|c| &**c));
    match appended {
        Ok(new) => refs.extend(new),
        Err(e) => *sink = Err(e),
    }
}

/// Write the file records of `g` to the cache file being written: a
/// concept's record copied from another file where `copied` holds it (with
/// where its texts now are), else made with its texts at `refs`. A failure
/// ends the writing.
fn write_records(
    sink: &mut std::io::Result<cache::Sink>,
    g: &SnapshotParts,
    refs: &[cache::TextRef],
    copied: &[Option<(&[u8], u64)>],
    dirs: &[DirRecord],
    written_ns: u128,
) {
    let Ok(s) = sink else { return };
    let files: Vec<cache::RecordOut<'_>> = g
        .files
        .iter()
        .filter_map(|f| {
            let stamp = f.stamp?;
            let p = f.position.map(|p| p as usize);
            Some(match p.and_then(|p| copied.get(p).copied().flatten()) {
                Some((bytes, at)) => cache::RecordOut::Copied {
                    bytes,
                    text_at: Some(at),
                },
                None => cache::RecordOut::Made(cache::FileRecord {
                    id: &f.id,
                    stamp,
                    concept: p.map(|p| (&*g.concepts[p], refs[p])),
                    diagnostics: f.diagnostics.get(),
                }),
            })
        })
        .collect();
    let ids: Vec<&str> = g.files.iter().map(|f| f.id.as_str()).collect();
    let dirs = listings(dirs, &ids);
    if let Err(e) = s.records(&files, &dirs, written_ns) {
        *sink = Err(e);
    }
}

/// Serve the texts of `concepts` (the last ones whose texts
/// [`write_texts`] appended) from the cache file from now on, dropping them
/// from memory. Nothing changes when writing has failed.
fn serve_stored(
    sink: &mut std::io::Result<cache::Sink>,
    concepts: &mut [ConceptCell],
    refs: &[cache::TextRef],
    cache_file: &Path,
) {
    let Ok(s) = sink else { return };
    let store = match s.store(cache_file) {
        Ok(store) => store,
        Err(e) => {
            *sink = Err(e);
            return;
        }
    };
    let written = &refs[refs.len() - concepts.len()..];
    for (c, r) in concepts.iter_mut().zip(written) {
        if let Some(c) = c.get_mut() {
            c.source = stored(&store, r);
        }
    }
}

pub(super) fn stored(store: &Arc<TextStore>, r: &cache::TextRef) -> SourceText {
    SourceText::Stored {
        store: Arc::clone(store),
        at: r.at,
        frontmatter_len: r.frontmatter_len,
        body_len: r.body_len,
        crc: r.crc,
    }
}

pub(super) fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
