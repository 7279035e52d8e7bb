//! A bundle (SPEC §1): walk the directory, read every concept file in
//! parallel, keep concepts in id order with their diagnostics, and build the
//! per-field index once. A `Bundle` is an immutable snapshot.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::cache;
use crate::concept::{read_concept_from, split_frontmatter, Concept, Read, MAX_FILE_BYTES};
use crate::diagnostic::{Code, Diagnostic};
use crate::error::Error;
use crate::index::Index;
use crate::progress::{Phase, Progress};
use crate::slab::Slab;
use crate::slot::{Columns, ColumnsOf, Slot};
use crate::text::{id_cmp, id_cmp_bytes};
use crate::texts::{TextStore, Texts};
use crate::walk::{stamp, stamp_of, walk_sorted, Found, Prior, Stamp, Stamps, Walked, RACY_NS};
use crate::watch::{Drained, Watch};
use crate::yaml;

pub struct Bundle {
    pub root: PathBuf,
    /// Shared with the snapshots a refresh makes (unchanged concepts are not
    /// copied); from a cache file, decoded when first used ([`Slot`]).
    pub concepts: Vec<Slot>,
    /// What the resolver reads for every concept, by position.
    pub columns: ColumnsOf,
    pub diagnostics: Vec<Diagnostic>,
    pub okf_version: Option<String>,
    /// Shared between snapshots when a refresh changed nothing it indexes.
    pub index: Arc<Index>,
    /// Rank of each concept's id in ordinal (code point) order — the
    /// cross-source tie-break of SPEC §5.4, which differs from id order.
    pub ordinal_rank: Slab<u32>,
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
    /// How this snapshot came to be: `load`, `walk` (a refresh that compared
    /// every file), `events` (a refresh that looked only at the files the
    /// change queue named) or `events, index kept` (and shared the index).
    pub made_by: &'static str,
}

/// How long an empty change queue is trusted before the files are compared
/// again anyway.
const FULL_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// What the last read saw of one file. As large as a [`Found`] (test), so a
/// reopen turns the walk's list into the file states in place.
struct FileState {
    id: String,
    stamp: Stamp,
    /// The concept's position in `concepts`, when it loaded.
    position: Option<u32>,
    diagnostics: Diags,
}

/// A file's diagnostics: most files have none, and then this is one null
/// pointer rather than an empty list's three words.
#[derive(Default)]
#[allow(clippy::box_collection)] // the box is the point: one word, not three
struct Diags(Option<Box<Vec<Diagnostic>>>);

impl Diags {
    fn get(&self) -> &[Diagnostic] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl From<Vec<Diagnostic>> for Diags {
    fn from(v: Vec<Diagnostic>) -> Diags {
        Diags((!v.is_empty()).then(|| Box::new(v)))
    }
}

/// Read one found file of the bundle at `root`: its outcome and the stamp
/// it was read at — the walk's, or, when the walk took none
/// ([`crate::walk::Stamps::Unopened`]), the opened file's own.
fn read_found(root: &Path, f: &Found) -> (Read, Stamp) {
    read_found_in(&RootDir::path_only(root), f)
}

/// The bundle's root: its path, and (on Unix, when it could be opened) the
/// directory itself, so each file is opened relative to it — the kernel
/// then resolves only the id's own components, not the root's path again
/// for every file (~0.5 us a file).
struct RootDir<'a> {
    path: &'a Path,
    #[cfg(unix)]
    dir: Option<rustix::fd::OwnedFd>,
}

impl<'a> RootDir<'a> {
    fn path_only(path: &'a Path) -> RootDir<'a> {
        RootDir {
            path,
            #[cfg(unix)]
            dir: None,
        }
    }

    /// `path`, opened when it can be (if not, files are opened by full path).
    fn open(path: &'a Path) -> RootDir<'a> {
        RootDir {
            path,
            #[cfg(unix)]
            dir: rustix::fs::open(
                path,
                rustix::fs::OFlags::RDONLY
                    | rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .ok(),
        }
    }

    /// Open the concept file at `rel` (relative to the root) for reading.
    fn open_file(&self, rel: &str) -> std::io::Result<fs::File> {
        #[cfg(unix)]
        if let Some(dir) = &self.dir {
            use rustix::fs::OFlags;
            let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
            return rustix::fs::openat(dir, rel, flags, rustix::fs::Mode::empty())
                .map(fs::File::from)
                .map_err(std::io::Error::from);
        }
        open_concept_file(&self.path.join(rel))
    }
}

/// [`read_found`] under an opened root.
fn read_found_in(root: &RootDir<'_>, f: &Found) -> (Read, Stamp) {
    let path = format!("{}.md", f.id);
    let skip = |code, msg: String| Read {
        concept: None,
        diagnostics: vec![Diagnostic::new(code, msg, path.clone())],
    };
    let unreadable = |e: &dyn std::fmt::Display| {
        skip(Code::UnreadableFile, format!("File could not be read: {e}"))
    };
    if let Some(why) = f.bad_id {
        return (skip(Code::InvalidConceptId, why.to_string()), f.stamp);
    }
    let mut file = match root.open_file(&path) {
        Ok(file) => file,
        Err(e) => return (unreadable(&e), None),
    };
    // The size the open file has now, when the walk did not stat it: then
    // one read (of one byte more) usually gets all of it and shows its end.
    let (at, size_now) = match f.stamp {
        Some(st) => (Some(st), None),
        None => match file.metadata() {
            Ok(m) if m.is_file() => (stamp_of(&m), Some(m.len())),
            Ok(_) => return (unreadable(&"not a regular file"), None),
            Err(e) => return (unreadable(&e), None),
        },
    };
    let too_large = |n: u64| format!("File is {n} bytes, over the 16 MiB limit for a concept file");
    if let Some((len, _)) = at {
        if len > MAX_FILE_BYTES {
            return (skip(Code::FileTooLarge, too_large(len)), at);
        }
    }
    let mut bytes = Vec::new();
    if let Err(e) = read_concept_bytes(&mut file, &mut bytes, at.map(|(len, _)| len), size_now) {
        return (unreadable(&e), at);
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let n = file.metadata().map_or(bytes.len() as u64, |m| m.len());
        return (skip(Code::FileTooLarge, too_large(n)), at);
    }
    (read_concept_from(&f.id, &path, bytes), at)
}

/// Open a concept file for reading. Not blocking on Unix: should the walk's
/// regular file have been swapped for a FIFO since, opening it returns at
/// once (and reading it finds nothing or fails) instead of hanging the load.
fn open_concept_file(p: &Path) -> std::io::Result<fs::File> {
    let mut o = fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    o.open(p)
}

/// Read all of `file` (up to one byte past the size limit) into `bytes`.
/// `expected` is the size last seen, which sizes the buffer; `size_now` the
/// size `fstat` gave for this very descriptor a moment ago: then a read of
/// one byte more that returns exactly that many bytes has reached the end,
/// and no second read is made to see it. Anything else (a file that grew or
/// shrank meanwhile, no size at hand) reads on to the end.
fn read_concept_bytes(
    file: &mut fs::File,
    bytes: &mut Vec<u8>,
    expected: Option<u64>,
    size_now: Option<u64>,
) -> std::io::Result<()> {
    if let Some(n) = size_now {
        bytes.reserve_exact(n as usize + 1);
        if read_into_spare(file, bytes)? as u64 == n {
            return Ok(());
        }
    } else {
        // Room for the size the walk saw and one byte more, so the file is
        // read in one call and its end seen in the next.
        bytes.reserve(expected.map_or(0, |len| len as usize + 1));
    }
    // Read one byte past the limit so a file that grew is still caught
    // without reading all of it.
    let room = (MAX_FILE_BYTES + 1).saturating_sub(bytes.len() as u64);
    file.take(room).read_to_end(bytes).map(|_| ())
}

/// One `read` appended to `bytes`, into its spare capacity (which must be
/// there): not zero-filled first, as reading into a `resize`d buffer would be
/// (on databricks, 29 MB of memset in a cold load). Retried when interrupted.
#[cfg(unix)]
fn read_into_spare(file: &fs::File, bytes: &mut Vec<u8>) -> std::io::Result<usize> {
    loop {
        match rustix::io::read(file, rustix::buffer::spare_capacity(bytes)) {
            Err(rustix::io::Errno::INTR) => continue,
            r => return r.map_err(std::io::Error::from),
        }
    }
}

#[cfg(not(unix))]
fn read_into_spare(mut file: &fs::File, bytes: &mut Vec<u8>) -> std::io::Result<usize> {
    let start = bytes.len();
    bytes.resize(bytes.capacity(), 0);
    let got = loop {
        match std::io::Read::read(&mut file, &mut bytes[start..]) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => break r,
        }
    };
    bytes.truncate(start + *got.as_ref().unwrap_or(&0));
    got
}

/// Read every found file in parallel, except those `cached` yields (it is
/// given the file's position in `found`).
fn read_all(
    root: &Path,
    found: &[Found],
    cached: &(dyn Fn(usize) -> Option<Read> + Sync),
    progress: &Progress,
) -> Result<Vec<(Read, Stamp)>, Error> {
    progress.start(Phase::Read, found.len());
    let reads = read_some(root, found, 0, cached, progress);
    progress.check()?;
    Ok(reads)
}

/// Read `found` (files `first..` of the load) in parallel, except those
/// `cached` yields, counting each file done.
fn read_some(
    root: &Path,
    found: &[Found],
    first: usize,
    cached: &(dyn Fn(usize) -> Option<Read> + Sync),
    progress: &Progress,
) -> Vec<(Read, Stamp)> {
    let root = RootDir::open(root);
    found
        .par_iter()
        .enumerate()
        .map(|(k, f)| {
            let out = match cached(first + k) {
                Some(read) => (read, f.stamp),
                None if progress.cancelled() => (Read::default(), None),
                None => read_found_in(&root, f),
            };
            progress.step();
            out
        })
        .collect()
}

/// Whether two concepts give the index the same input (SPEC §3.2 fields).
fn same_indexed_text(a: &Concept, b: &Concept) -> bool {
    a.id == b.id
        && a.title == b.title
        && a.tags == b.tags
        && a.description == b.description
        && matches!((a.body(), b.body()), (Ok(x), Ok(y)) if x == y)
}

fn okf_version(root: &Path) -> Option<String> {
    let p = root.join("index.md");
    let meta = fs::symlink_metadata(&p).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let bytes = fs::read(&p).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let (lines, _) = split_frontmatter(text).ok()??;
    let map = yaml::parse(&lines).ok()?;
    yaml::get(&map, "okf_version")
        .and_then(yaml::Value::display)
        .map(str::to_string)
}

/// Build a snapshot from the files' outcomes (in `found`'s id order).
fn assemble(
    root: &Path,
    found: Vec<Found>,
    reads: Vec<(Read, Stamp)>,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
) -> Result<Bundle, Error> {
    assemble_with(
        root,
        found,
        reads,
        walk_diagnostics,
        watch,
        None,
        &Progress::default(),
    )
}

/// Files' outcomes gathered in id order: the concepts, every file's state,
/// and all diagnostics.
struct Gathered {
    concepts: Vec<Slot>,
    columns: ColumnsOf,
    diagnostics: Vec<Diagnostic>,
    files: Vec<FileState>,
}

impl Gathered {
    fn new(walk_diagnostics: &[Diagnostic], files: usize) -> Gathered {
        Gathered {
            concepts: Vec::with_capacity(files),
            columns: ColumnsOf::with_capacity(files),
            diagnostics: walk_diagnostics.to_vec(),
            files: Vec::with_capacity(files),
        }
    }

    fn add(&mut self, found: Vec<Found>, reads: Vec<(Read, Stamp)>) {
        for (f, (r, st)) in found.into_iter().zip(reads) {
            let position = r.concept.is_some().then_some(self.concepts.len() as u32);
            self.diagnostics.extend(r.diagnostics.iter().cloned());
            if let Some(c) = r.concept {
                self.columns.push(c.columns());
                self.concepts.push(c);
            }
            self.files.push(FileState {
                id: f.id,
                stamp: st,
                position,
                diagnostics: r.diagnostics.into(),
            });
        }
    }

    /// Files taken whole from the cache file `from` (into an empty
    /// `Gathered`): file `i` is its record `record[i]`, whose concept has the
    /// columns `columns[i]`; `diagnostics` holds the files that have any (by
    /// file, in order). A million files are a million of each: the slots are
    /// made in parallel and the file states in place of `found`.
    fn add_stored(
        &mut self,
        found: Vec<Found>,
        columns: &[Option<Columns>],
        diagnostics: Vec<(usize, Vec<Diagnostic>)>,
        record: &[Option<usize>],
        from: &Arc<cache::Opened>,
    ) {
        self.concepts = record
            .par_iter()
            .zip(columns)
            .filter_map(|(r, c)| {
                let at = r.unwrap_or(usize::MAX) as u32;
                c.map(|c| Slot::stored(Arc::clone(from), at, c))
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
        for (i, d) in diagnostics {
            self.diagnostics.extend(d.iter().cloned());
            self.files[i].diagnostics = d.into();
        }
    }
}

/// Each concept's rank in ordinal (code point) order of ids.
fn ordinal_ranks(concepts: &[Slot]) -> Slab<u32> {
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
fn assemble_with(
    root: &Path,
    found: Vec<Found>,
    reads: Vec<(Read, Stamp)>,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
    saved: Option<(Arc<Index>, Slab<u32>)>,
    progress: &Progress,
) -> Result<Bundle, Error> {
    let mut g = Gathered::new(&walk_diagnostics, found.len());
    g.add(found, reads);
    let saved = match saved {
        Some(s) => s,
        None => {
            progress.start(Phase::Index, 0);
            let index = Arc::new(Index::build_with(&g.concepts, progress)?);
            (index, ordinal_ranks(&g.concepts))
        }
    };
    Ok(finish(root, g, walk_diagnostics, watch, saved))
}

/// The snapshot of gathered files with their index.
fn finish(
    root: &Path,
    mut g: Gathered,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
    (index, ordinal_rank): (Arc<Index>, Slab<u32>),
) -> Bundle {
    // Stable: one file's own diagnostics keep their order.
    g.diagnostics.sort_by(|a, b| id_cmp(&a.path, &b.path));
    Bundle {
        root: root.to_path_buf(),
        concepts: g.concepts,
        columns: g.columns,
        diagnostics: g.diagnostics,
        okf_version: okf_version(root),
        index,
        ordinal_rank,
        files: g.files,
        walk_diagnostics,
        index_stamp: stamp(&root.join("index.md")),
        watch,
        last_full_check: std::sync::Mutex::new(std::time::Instant::now()),
        made_by: "load",
    }
}

/// Files read per step of a load that writes a cache file: their texts go to
/// the file while that step is indexed, so at most one step's bodies are in
/// memory at once.
const WAVE: usize = 32 * 1024;

/// What a load did with its cache file ([`Bundle::load_cached`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheReport {
    /// `hit` (every file from the cache), `partial` (some files read again),
    /// `miss` (no cache file yet), `rebuilt` (the file was rejected).
    pub status: &'static str,
    /// Why it was rejected, or why writing the new one failed.
    pub detail: String,
    /// Files read from disk rather than taken from the cache.
    pub reread: usize,
    /// Directories listed from disk rather than taken from the cache (an
    /// unchanged directory's recorded listing is reused: [`crate::walk`]).
    pub listed: usize,
}

/// Where and how [`build_writing`] writes: the cache file, the bundle root it
/// is recorded for, the instant it counts as written, and the files per wave.
struct Writing<'a> {
    cache_file: &'a Path,
    root_key: &'a str,
    written_ns: u128,
    wave: usize,
    /// The walk's directories, whose listings the file records.
    dirs: &'a [crate::walk::DirFound],
}

/// Load `found` in waves of `wave` files, writing a new cache file as it
/// goes: each wave is read (files `cached` yields are not read again) and its
/// words are indexed while its texts are appended to the cache file, then
/// served from it, so bodies never pile up in memory. The index is merged at
/// the end (while the file records are written) and the cache file completed
/// and renamed into place. A failure to
/// write the cache only leaves the texts in memory; it is returned beside the
/// bundle.
fn build_writing(
    root: &Path,
    found: Vec<Found>,
    walk_diagnostics: Vec<Diagnostic>,
    watch: Watch,
    cached: &(dyn Fn(usize) -> Option<Read> + Sync),
    to: Writing<'_>,
    progress: &Progress,
) -> Result<(Bundle, std::io::Result<()>), Error> {
    let Writing {
        cache_file,
        root_key,
        written_ns,
        wave,
        dirs,
    } = to;
    let tmp = cache_file.with_extension(format!("tmp-{}-{}", std::process::id(), now_ns()));
    // However this ends (cancelled, failed, renamed), no temporary file stays.
    let _cleanup = RemoveOnDrop(&tmp);
    let mut sink = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|f| cache::Sink::new(f, root_key));
    let mut refs: Vec<cache::TextRef> = Vec::new();
    let total = found.len();
    progress.start(Phase::Read, total);
    let mut g = Gathered::new(&walk_diagnostics, total);
    let mut chunks = crate::index::Chunks::default();
    let mut rest = found.into_iter();
    let mut first = 0usize;
    // Each wave's texts are written while it is indexed (both only read it),
    // so the single-threaded write overlaps parallel work; then they are
    // served from the file and their memory freed.
    while first < total {
        let wave: Vec<Found> = rest.by_ref().take(wave.max(1)).collect();
        let reads = read_some(root, &wave, first, cached, progress);
        first += wave.len();
        progress.check()?;
        let base = g.concepts.len();
        g.add(wave, reads);
        let (more, ()) = rayon::join(
            || crate::index::chunk_fields(&g.concepts[base..], base as u32, progress),
            || write_texts(&mut sink, &g.concepts[base..], &mut refs),
        );
        chunks.append(more);
        serve_stored(&mut sink, &mut g.concepts[base..], &refs, cache_file);
        progress.check()?;
    }
    progress.start(Phase::Index, 0);
    // The file records need no index: they are written while the index is
    // merged, leaving only the index to write after.
    let (index, ()) = rayon::join(
        || Index::from_chunks(chunks, &g.concepts),
        || write_records(&mut sink, &g, &refs, dirs, written_ns),
    );
    let index = Arc::new(index?);
    let ordinal = ordinal_ranks(&g.concepts);
    progress.check()?;
    let written = sink.and_then(|s| {
        s.finish(&index, &ordinal)?;
        fs::rename(&tmp, cache_file)
    });
    // On failure the temporary file is removed; texts already served from it
    // stay readable through the open handle.
    let b = finish(root, g, walk_diagnostics, watch, (index, ordinal));
    progress.start(Phase::Done, 0);
    Ok((b, written))
}

/// Append the texts of `concepts` to the cache file being written, their
/// references to `refs`. A failure ends the writing (`sink` becomes the
/// error) and leaves the texts in memory.
fn write_texts(
    sink: &mut std::io::Result<cache::Sink>,
    concepts: &[Slot],
    refs: &mut Vec<cache::TextRef>,
) {
    let Ok(s) = sink else { return };
    s.preallocate(concepts.iter().map(|c| c.texts.stored_len()).sum());
    let appended = s.texts(concepts.iter().map(|c| &**c));
    match appended {
        Ok(new) => refs.extend(new),
        Err(e) => *sink = Err(e),
    }
}

/// Write the file records of `g` (every text written, at `refs`) to the
/// cache file being written. A failure ends the writing.
fn write_records(
    sink: &mut std::io::Result<cache::Sink>,
    g: &Gathered,
    refs: &[cache::TextRef],
    dirs: &[crate::walk::DirFound],
    written_ns: u128,
) {
    let Ok(s) = sink else { return };
    let files: Vec<cache::FileOut<'_>> = g
        .files
        .iter()
        .filter_map(|f| {
            Some(cache::FileOut {
                id: &f.id,
                stamp: f.stamp?,
                concept: f
                    .position
                    .map(|p| (&*g.concepts[p as usize], refs[p as usize])),
                diagnostics: f.diagnostics.get(),
            })
        })
        .collect();
    let ids: Vec<&str> = g.files.iter().map(|f| f.id.as_str()).collect();
    let dirs = crate::walk::listings(dirs, &ids);
    if let Err(e) = s.records(&files, &dirs, written_ns) {
        *sink = Err(e);
    }
}

/// Serve the texts of `concepts` (the last ones whose texts
/// [`write_texts`] appended) from the cache file from now on, dropping them
/// from memory. Nothing changes when writing has failed.
fn serve_stored(
    sink: &mut std::io::Result<cache::Sink>,
    concepts: &mut [Slot],
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
            c.texts = stored(&store, r);
        }
    }
}

/// Removes a file when dropped (nothing happens if it is gone).
struct RemoveOnDrop<'a>(&'a Path);

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = fs::remove_file(self.0);
    }
}

fn stored(store: &Arc<TextStore>, r: &cache::TextRef) -> Texts {
    Texts::Stored {
        store: Arc::clone(store),
        at: r.at,
        frontmatter_len: r.frontmatter_len,
        body_len: r.body_len,
        crc: r.crc,
    }
}

fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Match the found files with the records of the cache file `o`: both are in
/// id order, so each part of `found` is matched in one pass from the first
/// record not before it (a binary search), the parts in parallel. A record
/// is trusted for a file with the same id and stamp, not modified within
/// [`RACY_NS`] of the cache being written.
fn match_records(
    found: &[Found],
    o: &cache::Opened,
    record: &mut [Option<usize>],
) -> Result<(), cache::Rejected> {
    use std::cmp::Ordering::Less;
    const PART: usize = 1 << 14;
    let trusted_before = o.written_ns.saturating_sub(RACY_NS);
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
        Bundle::load_with(root.as_ref(), Some(cache_file), &Progress::default())
    }

    /// [`Bundle::load`] (no `cache_file`) or [`Bundle::load_cached`], reporting
    /// to `progress` and stopping with [`Error::Cancelled`] soon after it is
    /// cancelled.
    pub fn load_with(
        root: &Path,
        cache_file: Option<&Path>,
        progress: &Progress,
    ) -> Result<(Bundle, CacheReport), Error> {
        let Some(cache_file) = cache_file else {
            let watch = Watch::new(root);
            let Walked {
                found,
                diagnostics: walk_diagnostics,
                listed,
                ..
            } = walk_sorted(root, &watch, progress, None, Stamps::Unopened)?;
            let reads = read_all(root, &found, &|_| None, progress)?;
            let b = assemble_with(root, found, reads, walk_diagnostics, watch, None, progress)?;
            progress.check()?;
            progress.start(Phase::Done, 0);
            let report = CacheReport {
                status: "off",
                detail: String::new(),
                reread: b.files.len(),
                listed,
            };
            return Ok((b, report));
        };
        // Never fails on a damaged stored text: texts kept from an old cache
        // file are read back (checked) into memory, or their files re-read.
        Bundle::load_through(root, cache_file, progress, WAVE)
    }

    /// [`Bundle::load_with`] through `cache_file`, reading `wave` files at a
    /// time when the files must be read ([`build_writing`]).
    fn load_through(
        root: &Path,
        cache_file: &Path,
        progress: &Progress,
        wave: usize,
    ) -> Result<(Bundle, CacheReport), Error> {
        let started = now_ns();
        let watch = Watch::new(root);
        let root_key = root.to_string_lossy();
        let mut report = CacheReport {
            status: "hit",
            detail: String::new(),
            reread: 0,
            listed: 0,
        };
        let mut opened = match cache::Opened::open(cache_file, &root_key) {
            Ok(o) => Some(o),
            Err(cache::OpenError::Missing) => {
                report.status = "miss";
                None
            }
            Err(cache::OpenError::Unreadable(e)) => {
                report.status = "rebuilt";
                report.detail = format!("could not be read ({e})");
                None
            }
            Err(cache::OpenError::Rejected(r)) => {
                report.status = "rebuilt";
                report.detail = r.to_string();
                None
            }
        };
        // The walk reuses the recorded listings of unchanged directories.
        let listings = opened.as_ref().map(|o| o.listings()).transpose();
        let prior = match listings {
            Ok(l) => l.map(|listings| Prior {
                listings,
                trusted_before: opened
                    .as_ref()
                    .map_or(0, |o| o.written_ns.saturating_sub(RACY_NS)),
            }),
            Err(r) => {
                report.status = "rebuilt";
                report.detail = r.to_string();
                None
            }
        };
        // Stamps are compared with the cache's records when there are any;
        // otherwise every file is read, and stamped as it is read.
        let stamps = match prior {
            Some(_) => Stamps::All,
            None => Stamps::Unopened,
        };
        let Walked {
            found,
            diagnostics: walk_diagnostics,
            dirs,
            listed,
        } = walk_sorted(root, &watch, progress, prior.as_ref(), stamps)?;
        drop(prior);
        if report.status == "rebuilt" {
            opened = None;
        }
        report.listed = listed;
        // `record[i]` is the cache record of found file `i`, when it can be trusted.
        let mut record: Vec<Option<usize>> = vec![None; found.len()];
        if let Some(o) = &opened {
            if let Err(r) = match_records(&found, o, &mut record) {
                report.status = "rebuilt";
                report.detail = r.to_string();
                record.fill(None);
                opened = None;
            }
        }
        let used = record.iter().flatten().count();
        report.reread = found.len() - used;
        let all_cached = opened
            .as_ref()
            .is_some_and(|o| used == found.len() && used == o.len());
        if all_cached {
            // Every file as cached: the saved index describes exactly these
            // concepts. Each record is checked (and its columns read) but no
            // concept is built: they are decoded when first used ([`Slot`]),
            // and their texts stay in the cache file.
            if let Some(o) = opened.take().map(Arc::new) {
                const PART: usize = 4096;
                progress.start(Phase::Read, found.len());
                // The records and the saved index are checked side by side;
                // the few files with diagnostics are gathered apart.
                let with_diagnostics = std::sync::Mutex::new(Vec::new());
                let (columns, index) = rayon::join(
                    || -> Result<Vec<Option<Columns>>, cache::Rejected> {
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
                    || o.index(),
                );
                progress.check()?;
                let checked = columns.and_then(|columns| {
                    let n = columns.iter().flatten().count();
                    let (ix, ord) = index?;
                    if ord.len() != n {
                        return Err(cache::Rejected::Corrupt(
                            "saved index: not as many concepts as the records".into(),
                        ));
                    }
                    Ok((columns, (ix, ord)))
                });
                match checked {
                    Ok((columns, (ix, ord))) => {
                        let mut g = Gathered::new(&walk_diagnostics, found.len());
                        let mut diagnostics = with_diagnostics.into_inner().unwrap_or_default();
                        diagnostics.sort_unstable_by_key(|(i, _)| *i);
                        g.add_stored(found, &columns, diagnostics, &record, &o);
                        let b = finish(root, g, walk_diagnostics, watch, (Arc::new(ix), ord));
                        progress.check()?;
                        progress.start(Phase::Done, 0);
                        return Ok((b, report));
                    }
                    Err(why) => {
                        // Start again from the files alone, with a new cache file.
                        report.status = "rebuilt";
                        report.detail = why.to_string();
                        report.reread = found.len();
                        record.fill(None);
                    }
                }
            }
        }
        if report.status == "hit" {
            report.status = "partial";
        }
        // Texts taken from the old cache file are read into memory now (and
        // checked): the index build and the new cache file both need them.
        let damaged = std::sync::atomic::AtomicBool::new(false);
        let cached = |i: usize| {
            let (o, r) = (opened.as_ref()?, record[i]?);
            let read = o.read(r).ok().and_then(|mut read| {
                if let Some(c) = read.concept.as_mut().and_then(Slot::get_mut) {
                    let t = c.texts.read().ok()?;
                    let texts = Texts::owned(&t.body, &t.frontmatter);
                    c.texts = texts;
                }
                Some(read)
            });
            if read.is_none() {
                damaged.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            read
        };
        let (bundle, written) = build_writing(
            root,
            found,
            walk_diagnostics,
            watch,
            &cached,
            Writing {
                cache_file,
                root_key: &root_key,
                written_ns: started,
                wave,
                dirs: &dirs,
            },
            progress,
        )?;
        if damaged.into_inner() {
            report.status = "rebuilt";
            report.detail = "is corrupt (a text or record does not read back)".into();
        }
        if let Err(e) = written {
            report.detail = format!("{} (not written: {e})", report.detail)
                .trim_start()
                .to_string();
        }
        Ok((bundle, report))
    }

    pub fn load(root: impl AsRef<Path>) -> Result<Bundle, Error> {
        Ok(Bundle::load_with(root.as_ref(), None, &Progress::default())?.0)
    }

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
        if drained == Drained::Quiet && recent {
            return Ok(None);
        }
        let dirs_changed = drained == Drained::Directories;
        if let (Drained::Files(mut paths), Some(last_full)) = (drained, last_full) {
            // Only some files changed: look at those alone. The successor
            // watches every directory before our queue is drained for the last
            // time, so each later change lands in one queue or the other.
            if let Some(next) = recent.then(|| self.watch.successor(&self.root)).flatten() {
                let last = self.watch.drain();
                if let Drained::Files(more) = &last {
                    paths.extend(more.iter().cloned());
                }
                if matches!(last, Drained::Quiet | Drained::Files(_)) {
                    if let Some(done) = self.refresh_files(&paths, next, last_full) {
                        return done;
                    }
                }
            }
        }
        let watch = Watch::new(&self.root);
        let Walked {
            found,
            diagnostics: walk_diagnostics,
            ..
        } = walk_sorted(&self.root, &watch, &Progress::default(), None, Stamps::All)?;
        let stamps: Vec<Stamp> = found.iter().map(|f| f.stamp).collect();
        // Both lists are in id order: compare them in step, no lookups.
        let same = found.len() == self.files.len()
            && found
                .iter()
                .zip(&stamps)
                .zip(&self.files)
                .all(|((f, st), old)| st.is_some() && *st == old.stamp && f.id == old.id)
            && walk_diagnostics == self.walk_diagnostics
            && stamp(&self.root.join("index.md")) == self.index_stamp
            // Changed directories leave this snapshot's watches stale.
            && !dirs_changed;
        if same {
            if let Ok(mut t) = self.last_full_check.lock() {
                *t = std::time::Instant::now();
            }
            return Ok(None);
        }
        let reads: Vec<(Read, Stamp)> = found
            .par_iter()
            .zip(&stamps)
            .map(|(f, st)| match self.file(&f.id) {
                Some(old) if st.is_some() && old.stamp == *st => {
                    let concept = old.position.map(|p| self.concepts[p as usize].clone());
                    (
                        Read {
                            concept,
                            diagnostics: old.diagnostics.get().to_vec(),
                        },
                        *st,
                    )
                }
                _ => read_found(&self.root, f),
            })
            .collect();
        let mut b = assemble(&self.root, found, reads, walk_diagnostics, watch)?;
        b.made_by = "walk";
        Ok(Some(b))
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
            if name.starts_with('.') || !name.ends_with(".md") {
                continue; // hidden or not a concept file: never loaded
            }
            if name == "index.md" || name == "log.md" {
                if rel == "index.md" {
                    return None; // okf_version may have changed
                }
                continue;
            }
            if rel
                .chars()
                .any(|c| (c as u32) < 0x20 || c == '\u{7F}' || c == '\\')
            {
                return None;
            }
            changed.push(rel[..rel.len() - 3].to_string());
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
        let mut found: Vec<Found> = Vec::with_capacity(self.files.len() + now.len());
        let mut fresh: Vec<bool> = Vec::with_capacity(found.capacity());
        let mut kept: Vec<Option<&FileState>> = Vec::with_capacity(found.capacity());
        let mut olds = self.files.iter().peekable();
        let mut news = now.into_iter().peekable();
        let mk = |id: &str, stamp: Stamp| Found {
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
        // `kept` (no lookups), the rest read.
        let reads: Vec<(Read, Stamp)> = found
            .par_iter()
            .zip(&kept)
            .map(|(f, old)| match old {
                Some(old) => {
                    let concept = old.position.map(|p| self.concepts[p as usize].clone());
                    let diagnostics = old.diagnostics.get().to_vec();
                    (
                        Read {
                            concept,
                            diagnostics,
                        },
                        old.stamp,
                    )
                }
                _ => read_found(&self.root, f),
            })
            .collect();
        // The index can stay when the concepts are the same ones in the same
        // places with the same indexed text. A carried concept is in its
        // place when its old position is its new one (no concept is touched
        // for that); one read again must have the id of the concept that was
        // there, and the same indexed text.
        let mut at = 0usize;
        let same_places = reads.iter().zip(&kept).all(|((r, _), old)| {
            let Some(c) = &r.concept else { return true };
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
                    match (r.concept.as_ref(), old) {
                        (Some(c), Some(p)) => same_indexed_text(c, &self.concepts[p as usize]),
                        (None, None) => true,
                        _ => false,
                    }
                });
        let saved = same_index.then(|| (Arc::clone(&self.index), self.ordinal_rank.clone()));
        let mut b = match assemble_with(
            &self.root,
            found,
            reads,
            self.walk_diagnostics.clone(),
            watch,
            saved,
            &Progress::default(),
        ) {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        if let Ok(mut t) = b.last_full_check.lock() {
            *t = last_full; // this was not a full comparison
        }
        b.made_by = if same_index {
            "events, index kept"
        } else {
            "events"
        };
        Some(Ok(Some(b)))
    }

    fn file(&self, id: &str) -> Option<&FileState> {
        self.files
            .binary_search_by(|x| id_cmp(&x.id, id))
            .ok()
            .map(|i| &self.files[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        crate::testing::scratch_dir("bundle", name)
    }

    /// A file found with a usable id and no stamp (a cold load's walk).
    fn unstamped(id: &str) -> Found {
        Found {
            id: id.into(),
            bad_id: None,
            stamp: None,
        }
    }

    #[test]
    fn a_file_that_vanishes_before_reading_is_unreadable() {
        let d = scratch("vanish");
        let f = unstamped("x");
        let (r, st) = read_found(&d, &f);
        assert_eq!(st, None);
        assert!(r.concept.is_none());
        assert_eq!(r.diagnostics[0].code, Code::UnreadableFile);
        assert!(r.diagnostics[0]
            .message
            .starts_with("File could not be read: "));
        assert_eq!(r.diagnostics[0].severity(), "error");
    }

    /// A file the walk did not stat is stamped through the descriptor it
    /// is read with: the same stamp a stat by name gives.
    #[test]
    fn a_file_read_without_a_walk_stamp_is_stamped_as_opened() {
        let d = scratch("own-stamp");
        fs::write(d.join("x.md"), "---\ntype: T\ntitle: x\n---\nbody").unwrap();
        let f = unstamped("x");
        let (r, st) = read_found(&d, &f);
        assert!(r.diagnostics.is_empty());
        assert_eq!(r.concept.unwrap().body().unwrap(), "body");
        assert_eq!(st, stamp(&d.join("x.md")));
        assert!(st.is_some());
    }

    /// The single read that ends at the size `fstat` gave, and every other
    /// case (no size, or a size that is no longer the file's: it grew or
    /// shrank since) reading on to the end: always the whole file.
    #[test]
    fn a_concept_file_is_read_whole_whatever_size_was_seen() {
        let d = scratch("read-whole");
        let p = d.join("f.md");
        let text: Vec<u8> = (0..5000u32).map(|i| b'a' + (i % 26) as u8).collect();
        fs::write(&p, &text).unwrap();
        let n = text.len() as u64;
        for (expected, size_now) in [
            (None, None),
            (Some(n), None),
            (Some(n), Some(n)),
            (Some(10), Some(10)),
            (Some(n + 100), Some(n + 100)),
            (Some(0), Some(0)),
        ] {
            let mut f = fs::File::open(&p).unwrap();
            let mut bytes = Vec::new();
            read_concept_bytes(&mut f, &mut bytes, expected, size_now).unwrap();
            assert_eq!(bytes, text, "seen {expected:?}, now {size_now:?}");
        }
    }

    /// A FIFO where the walk saw a concept file (swapped in since) is
    /// reported, not waited on: opening does not block, and `fstat` shows it
    /// is no regular file.
    #[cfg(unix)]
    #[test]
    fn a_fifo_in_place_of_a_concept_file_is_reported_not_waited_on() {
        let d = scratch("fifo-read");
        let dir =
            rustix::fs::open(&d, rustix::fs::OFlags::DIRECTORY, rustix::fs::Mode::empty()).unwrap();
        rustix::fs::mknodat(
            &dir,
            "x.md",
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let f = unstamped("x");
        // By full path, and relative to the opened root (as a load reads).
        for root in [RootDir::path_only(&d), RootDir::open(&d)] {
            let (r, st) = read_found_in(&root, &f);
            assert_eq!(st, None);
            assert!(r.concept.is_none());
            assert_eq!(r.diagnostics[0].code, Code::UnreadableFile);
            assert_eq!(
                r.diagnostics[0].message,
                "File could not be read: not a regular file"
            );
        }
    }

    /// A file read relative to the opened root is the file its path names,
    /// in a subdirectory too, and a missing one is reported.
    #[cfg(unix)]
    #[test]
    fn files_are_read_relative_to_the_opened_root() {
        let d = scratch("relative");
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("sub/x.md"), "---\ntype: T\ntitle: x\n---\nin sub").unwrap();
        let root = RootDir::open(&d);
        assert!(root.dir.is_some());
        let (r, st) = read_found_in(&root, &unstamped("sub/x"));
        assert_eq!(r.concept.unwrap().body().unwrap(), "in sub");
        assert_eq!(st, stamp(&d.join("sub/x.md")));
        let (r, _) = read_found_in(&root, &unstamped("sub/gone"));
        assert_eq!(r.diagnostics[0].code, Code::UnreadableFile);
    }

    #[test]
    fn a_file_state_fits_in_place_of_a_found_file() {
        // What lets a reopen turn the walk's list into file states without
        // a second list (`Gathered::add_stored`).
        assert_eq!(
            std::mem::size_of::<FileState>(),
            std::mem::size_of::<Found>()
        );
        assert_eq!(
            std::mem::align_of::<FileState>(),
            std::mem::align_of::<Found>()
        );
        let d = Diags::from(vec![Diagnostic::new(Code::UnreadableFile, "m", "p")]);
        assert_eq!(d.get().len(), 1);
        assert!(Diags::from(Vec::new()).0.is_none());
    }

    #[test]
    fn every_code_has_a_name_and_a_severity() {
        for c in Code::ALL {
            assert!(!c.as_str().is_empty());
        }
        let warnings: Vec<&str> = Code::ALL
            .iter()
            .filter(|c| !c.is_error())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            warnings,
            ["MissingType", "MalformedStaleAfter", "SymlinkSkipped"]
        );
    }
}

#[cfg(test)]
mod refresh_tests {
    use super::*;

    /// A snapshot's concept ids in position order.
    fn ids(b: &Bundle) -> Vec<String> {
        b.concepts.iter().map(|c| c.id().to_string()).collect()
    }

    #[test]
    fn a_load_in_many_waves_equals_a_plain_load() {
        let d = crate::testing::scratch_dir("refresh", "waves");
        fs::create_dir_all(d.join("root/sub")).unwrap();
        let root = d.join("root");
        for i in 0..23 {
            let dir = if i % 3 == 0 { "sub/" } else { "" };
            let text = match i % 7 {
                6 => "---\ntitle: [broken\n---\n".to_string(),
                k => format!(
                    "---\ntype: T\ntitle: t{i}\ntags: [k{k}]\n---\nbody {i} word{k}\r\nline\n"
                ),
            };
            fs::write(root.join(format!("{dir}c{i:02}.md")), text).unwrap();
        }
        // Old enough that a reopen trusts every file.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for p in ["sub/c00", "c01", "sub/c03"]
            .iter()
            .map(|n| root.join(format!("{n}.md")))
        {
            fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let plain = Bundle::load(&root).unwrap();
        let file = d.join("c.okfc");
        let view = |b: &Bundle| {
            let texts: Vec<(String, Option<String>, String, usize)> = b
                .concepts
                .iter()
                .map(|c| {
                    let fm = c.frontmatter().unwrap().len();
                    (
                        c.id.clone(),
                        c.title.clone(),
                        c.body().unwrap().into_owned(),
                        fm,
                    )
                })
                .collect();
            let hits: Vec<(Vec<u32>, Vec<u32>)> = ["word1", "body", "T1", "line", "zzz"]
                .iter()
                .map(|q| {
                    let r = crate::score::search(b, q, None, None);
                    (r.positions, r.scores)
                })
                .collect();
            let tagged = crate::score::search(b, "body", Some("k2"), None).positions;
            (
                texts,
                hits,
                tagged,
                b.diagnostics.clone(),
                b.ordinal_rank.to_vec(),
            )
        };
        for wave in [1, 4, 5, 100] {
            let _ = fs::remove_file(&file);
            let (b, report) =
                Bundle::load_through(&root, &file, &Progress::default(), wave).unwrap();
            assert_eq!(report.status, "miss");
            assert!(
                b.concepts.iter().all(|c| c.texts.is_stored()),
                "wave {wave}"
            );
            assert_eq!(view(&b), view(&plain), "wave {wave}");
            for (a, p) in b.index.fields.iter().zip(&plain.index.fields) {
                assert_eq!(
                    (&*a.postings, &*a.dense_bits),
                    (&*p.postings, &*p.dense_bits)
                );
            }
            // A reopen: the recent files are read again, the rest taken as cached.
            let (again, report) =
                Bundle::load_through(&root, &file, &Progress::default(), wave).unwrap();
            assert_eq!(
                (report.status, report.reread),
                ("partial", 20),
                "wave {wave}"
            );
            assert_eq!(view(&again), view(&plain), "wave {wave}");
        }
        let _ = fs::remove_dir_all(&d);
    }

    /// Through the cache file: directories older than the racy margin are
    /// not listed again on a reopen, and one that gains a file is, with the
    /// result of a fresh load. Directory times cannot be set back (the
    /// status-change time), so this waits out the margin once.
    #[test]
    fn a_reopen_lists_only_the_directories_that_changed() {
        let d = crate::testing::scratch_dir("refresh", "relist");
        let root = d.join("root");
        for f in ["a/x.md", "a/y.md", "b/z.md", "b/c/w.md", "top.md"] {
            fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            fs::write(
                root.join(f),
                format!("---\ntype: T\ntitle: {f}\n---\nbody\n"),
            )
            .unwrap();
        }
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for f in ["a/x.md", "a/y.md", "b/z.md", "b/c/w.md", "top.md"] {
            let h = fs::File::options().write(true).open(root.join(f)).unwrap();
            h.set_modified(old).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_nanos(
            RACY_NS as u64 + 100_000_000,
        ));
        let file = d.join("c.okfc");
        let (_, cold) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!((cold.status, cold.listed), ("miss", 4));
        let (warm, r) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!((r.status, r.reread, r.listed), ("hit", 0, 0));
        assert_eq!(warm.len(), 5);
        fs::write(root.join("b/c/new.md"), "---\ntype: T\ntitle: new\n---\n").unwrap();
        let (after, r) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!((r.status, r.reread, r.listed), ("partial", 1, 1));
        let fresh = Bundle::load(&root).unwrap();
        assert_eq!(ids(&after), ids(&fresh));
        assert!(ids(&after).contains(&"b/c/new".to_string()));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_warm_reopen_decodes_a_concept_only_when_it_is_used() {
        let d = crate::testing::scratch_dir("refresh", "lazy");
        fs::create_dir_all(d.join("root/sub")).unwrap();
        let root = d.join("root");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for i in 0..12 {
            let dir = if i % 3 == 0 { "sub/" } else { "" };
            let text = match i % 4 {
                0 => "---\ntitle: [broken\n---\n".to_string(),
                1 => format!(
                    "---\ntype: T\ntitle: t{i}\nauthority: canonical\nstale_after: 2020-01-0{}\nsupersedes: [c0{}]\n---\nbody {i}\n",
                    1 + i % 9,
                    i + 1
                ),
                k => format!("---\ntype: T\ntitle: t{i}\ntags: [k{k}]\n---\nbody {i} w{k}\n"),
            };
            let p = root.join(format!("{dir}c{i:02}.md"));
            fs::write(&p, text).unwrap();
            fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let plain = Bundle::load(&root).unwrap();
        let file = d.join("c.okfc");
        let (_, report) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!(report.status, "miss");
        let (warm, report) = Bundle::load_cached(&root, &file).unwrap();
        assert_eq!((report.status, report.reread), ("hit", 0));
        assert_eq!(warm.len(), plain.len());
        // Ids, positions, columns and diagnostics without decoding anything.
        assert_eq!(ids(&warm), ids(&plain));
        assert_eq!(warm.position("sub/c09"), plain.position("sub/c09"));
        assert_eq!(warm.columns, plain.columns);
        assert_eq!(warm.columns.governed.len(), 3);
        assert_eq!(warm.diagnostics, plain.diagnostics);
        assert!(warm.concepts.iter().all(|c| !c.is_decoded()));
        // A search decodes nothing; a refresh that keeps the index carries
        // the slots over as they are.
        let hits = crate::score::search(&warm, "body", None, None);
        assert_eq!(hits.positions.len(), plain.len());
        let touched = root.join("c02.md");
        fs::File::options()
            .write(true)
            .open(&touched)
            .unwrap()
            .set_modified(std::time::SystemTime::now())
            .unwrap();
        let next = warm.refresh().unwrap().expect("a touched file is a change");
        assert_eq!(next.made_by, "events, index kept");
        let decoded: Vec<&str> = next
            .concepts
            .iter()
            .filter(|c| c.is_decoded())
            .map(|c| c.id())
            .collect();
        assert_eq!(decoded, ["c02"], "only the file read again is in memory");
        assert_eq!(next.columns, Bundle::load(&root).unwrap().columns);
        // Decoded, each concept is the one a fresh load reads.
        for (a, b) in warm.concepts.iter().zip(&plain.concepts) {
            let (a, b): (&Concept, &Concept) = (a, b);
            assert_eq!(
                (&a.id, &a.title, &a.tags, a.stale_after, &a.authority),
                (&b.id, &b.title, &b.tags, b.stale_after, &b.authority)
            );
            assert_eq!(a.governance, b.governance);
            assert_eq!(a.body().unwrap(), b.body().unwrap());
            assert!(a.texts.is_stored());
        }
        assert!(warm.concepts.iter().all(Slot::is_decoded));
        let _ = fs::remove_dir_all(&d);
    }

    /// The space allocated ahead of a cache file's texts and index
    /// ([`cache::Sink::preallocate`]) is exactly what they fill: the file
    /// holds no blocks past its end, and it is read back.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_cache_file_has_no_space_allocated_past_its_end() {
        use std::os::unix::fs::MetadataExt;
        let d = crate::testing::scratch_dir("bundle", "prealloc");
        // Bodies of several pages each: space allocated for the wrong length
        // shows in whole blocks.
        for i in 0..40 {
            let body = format!("word{i} ").repeat(1500 + 37 * i);
            let text = format!("---\ntype: T\ntitle: t{i}\n---\n{body}");
            fs::write(d.join(format!("c{i}.md")), text).unwrap();
        }
        let cache_dir = crate::testing::scratch_dir("bundle", "prealloc-cache");
        let file = cache_dir.join("c.okfc");
        let (_, r) = Bundle::load_cached(&d, &file).unwrap();
        assert_eq!(r.status, "miss");
        let m = fs::metadata(&file).unwrap();
        let (allocated, size) = (m.blocks() * 512, m.len());
        assert!(size > 400_000, "{size}");
        assert!(
            allocated <= size.next_multiple_of(64 * 1024),
            "{allocated} bytes allocated for a file of {size}"
        );
        // Read back, not rejected (the files are too new to be trusted, so
        // they are read again: "partial").
        let (warm, r) = Bundle::load_cached(&d, &file).unwrap();
        assert!(matches!(r.status, "hit" | "partial"), "{}", r.status);
        assert_eq!(warm.concepts.len(), 40);
        let _ = fs::remove_dir_all(&d);
        let _ = fs::remove_dir_all(&cache_dir);
    }

    #[test]
    fn refresh_rereads_only_what_changed() {
        let d = crate::testing::scratch_dir("refresh", "refresh");
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("a.md"), "---\ntype: T\ntitle: alpha\n---\none").unwrap();
        fs::write(d.join("sub/b.md"), "---\ntype: T\ntitle: beta\n---\ntwo").unwrap();
        fs::write(d.join("bad.md"), "---\ntype: T\n").unwrap();
        let b = Bundle::load(&d).unwrap();
        assert!(b.refresh().unwrap().is_none());
        // Change one file (a different size, so the stamp differs whatever the
        // clock's granularity), add one, remove one.
        fs::write(
            d.join("a.md"),
            "---\ntype: T\ntitle: alpha two\n---\none more",
        )
        .unwrap();
        fs::write(d.join("c.md"), "---\ntype: T\ntitle: gamma\n---\nthree").unwrap();
        fs::remove_file(d.join("sub/b.md")).unwrap();
        let fresh = b.refresh().unwrap().expect("changed");
        let again = Bundle::load(&d).unwrap();
        let ids = |x: &Bundle| {
            x.concepts
                .iter()
                .map(|c| {
                    (
                        c.id.clone(),
                        c.title.clone(),
                        c.body().unwrap().into_owned(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&fresh), ids(&again));
        assert_eq!(fresh.diagnostics, again.diagnostics);
        assert_eq!(fresh.concepts[0].title.as_deref(), Some("alpha two"));
        assert_eq!(b.concepts.len(), 2, "the old snapshot is untouched");
        assert!(fresh.refresh().unwrap().is_none());
        let _ = fs::remove_dir_all(&d);
    }
}

#[cfg(test)]
mod watch_tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = crate::testing::scratch_dir("watch", name);
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("sub/a.md"), "---\ntype: T\ntitle: alpha\n---\none").unwrap();
        d
    }

    #[test]
    fn same_size_rewrite_is_seen() {
        let d = scratch("rewrite");
        let b = Bundle::load(&d).unwrap();
        assert!(b.refresh().unwrap().is_none());
        // Same length, different content: only the watch or the mtime tells.
        fs::write(d.join("sub/a.md"), "---\ntype: T\ntitle: ALPHA\n---\none").unwrap();
        let fresh = b.refresh().unwrap().expect("changed");
        assert_eq!(fresh.concepts[0].title.as_deref(), Some("ALPHA"));
        assert!(fresh.refresh().unwrap().is_none());
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn files_in_a_new_directory_are_seen() {
        let d = scratch("newdir");
        let b = Bundle::load(&d).unwrap();
        fs::create_dir(d.join("later")).unwrap();
        // An empty new directory changes no concept, but the next snapshot
        // must watch it.
        let b2 = b
            .refresh()
            .unwrap()
            .expect("a new directory needs a new snapshot");
        assert_eq!(b2.len(), 1);
        fs::write(d.join("later/n.md"), "---\ntype: T\n---\nnew").unwrap();
        let b3 = b2
            .refresh()
            .unwrap()
            .expect("the file in the new directory is seen");
        assert_eq!(b3.len(), 2);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn irrelevant_changes_keep_the_snapshot() {
        let d = scratch("hidden");
        let b = Bundle::load(&d).unwrap();
        fs::write(d.join("sub/.hidden.md"), "x").unwrap();
        fs::write(d.join("notes.txt"), "x").unwrap();
        assert!(b.refresh().unwrap().is_none());
        assert!(b.refresh().unwrap().is_none());
        let _ = fs::remove_dir_all(&d);
    }
}
