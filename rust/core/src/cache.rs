//! The persistent cache of a bundle (issue 6): one versioned, checksummed
//! file per bundle holding, for every concept file, its id, the size and
//! modification time it was read at, its diagnostics and its parsed concept;
//! the concepts' texts (frontmatter and body); the index and the ordinal
//! ranks.
//!
//! Reopening maps the file into memory ([`Opened`]) and uses it in place: the
//! index arrays are views into the mapping ([`Slab`]), each file's record is
//! decoded only when that file is taken from the cache, and texts stay in the
//! file until a caller asks for one ([`crate::texts`]). Nothing is parsed
//! twice and nothing large is copied.
//!
//! Layout (little-endian):
//!
//! ```text
//! header  MAGIC, format u32, okfast version, bundle root (u32 length + bytes),
//!         texts length u64, core length u64, core CRC-32 u32,
//!         header CRC-32 u32 (of every header byte before it)
//! texts   per concept in id order: frontmatter bytes, body bytes
//! pad     zeros to a multiple of 8
//! core    (8-aligned; offsets below are relative to its start)
//!         file count u64, written-at ns u128, then per file a record:
//!           id, size u64, mtime ns u128, diagnostics, concept flag, concept
//!           (its fields, and where its texts are: offset u64, frontmatter
//!           length u32, body length u32, CRC-32 u32 of both)
//!         directories: count u64, then per directory whose listing can be
//!           reused: prefix, device, inode, mtime ns, ctime ns (u64 each),
//!           entry count u32, entries byte length u64, entries (kind u8:
//!           0 file, 1 directory; name) in id order
//!         record offsets u64 × files (8-aligned)
//!         index: per field each array as length u64 + items + zero pad to 8;
//!         tags; ordinal ranks
//!         tail: record-offsets table offset u64, index offset u64,
//!         directories offset u64
//! ```
//!
//! The header and the core are checked when the file is opened (the core's
//! CRC-32 is computed over the whole core, in parallel); a file that fails
//! any check is rejected as a whole, never partly used. Each concept's texts
//! carry their own CRC-32, checked when they are read.
//!
//! The file is written to a temporary name and renamed into place, so a
//! reader never sees a torn file, and a mapping keeps the file it was made
//! from. The mapping assumes nothing truncates the file in place while it is
//! open (okfast never does; a program that did would make the next access
//! fault, as with any memory-mapped database). On a big-endian machine the
//! cache is not used.

use std::fs::File;
use std::io::{BufWriter, IoSlice, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::concept::{Actor, Concept, Governance, Read, Status, TrustTier};
use crate::diagnostic::{Code, Diagnostic};
use crate::index::{FieldIndex, Index, NOT_DENSE};
use crate::slab::Slab;
use crate::slot::{Columns, Slot};
use crate::texts::{TextStore, Texts};
use crate::trigram::Trigrams;

const MAGIC: &[u8; 8] = b"OKFASTC\0";
/// Bump whenever the layout or the meaning of a field changes.
pub const FORMAT: u32 = 3;
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A file's size and modification time in ns — [`crate::bundle`]'s stamp.
pub type FileStamp = (u64, u64);

/// A directory's device, inode, modification and status-change times (ns):
/// what must not have changed for its listing to be reused ([`crate::walk`]).
pub type DirStamp = [u64; 4];

/// Bytes of the core's tail: the offsets of the record table, the index and
/// the directories.
const TAIL: usize = 24;

/// Why a cache file was not used.
#[derive(Debug, PartialEq, Eq)]
pub enum Rejected {
    Truncated,
    Foreign(String),
    Checksum,
    Corrupt(String),
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::Truncated => write!(f, "is truncated"),
            Rejected::Foreign(why) => write!(f, "is from {why}"),
            Rejected::Checksum => write!(f, "fails its checksum"),
            Rejected::Corrupt(why) => write!(f, "is corrupt ({why})"),
        }
    }
}

// ---------------------------------------------------------------- writing

/// A writer that knows its position and, while `hashing`, feeds a CRC-32.
struct Out<W: Write> {
    w: W,
    at: u64,
    crc: crc32fast::Hasher,
    hashing: bool,
}

impl<W: Write> Out<W> {
    fn raw(&mut self, b: &[u8]) -> std::io::Result<()> {
        if self.hashing {
            self.crc.update(b);
        }
        self.at += b.len() as u64;
        self.w.write_all(b)
    }
    fn u8(&mut self, v: u8) -> std::io::Result<()> {
        self.raw(&[v])
    }
    fn u32(&mut self, v: u32) -> std::io::Result<()> {
        self.raw(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) -> std::io::Result<()> {
        self.raw(&v.to_le_bytes())
    }
    fn u128(&mut self, v: u128) -> std::io::Result<()> {
        self.raw(&v.to_le_bytes())
    }
    fn str(&mut self, s: &str) -> std::io::Result<()> {
        self.u32(s.len() as u32)?;
        self.raw(s.as_bytes())
    }
    fn opt(&mut self, s: Option<&str>) -> std::io::Result<()> {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1)?;
                self.str(s)
            }
        }
    }
    fn strs(&mut self, v: &[String]) -> std::io::Result<()> {
        self.u32(v.len() as u32)?;
        v.iter().try_for_each(|s| self.str(s))
    }
    fn actor(&mut self, a: &Actor) -> std::io::Result<()> {
        self.opt(a.by.as_deref())?;
        self.opt(a.at.as_deref())
    }
    fn pad(&mut self) -> std::io::Result<()> {
        let n = (8 - (self.at % 8) as usize) % 8;
        self.raw(&[0u8; 8][..n])
    }
    /// An array: length, items, zero pad to 8 (items start 8-aligned).
    fn array<T: bytemuck::Pod>(&mut self, v: &[T]) -> std::io::Result<()> {
        self.u64(v.len() as u64)?;
        self.raw(bytemuck::cast_slice(v))?;
        self.pad()
    }
}

/// Where one concept's texts were written.
#[derive(Clone, Copy)]
pub struct TextRef {
    pub at: u64,
    pub frontmatter_len: u32,
    pub body_len: u32,
    pub crc: u32,
}

/// A directory's listing as the cache records it: its prefix (`a/b/`, the
/// root's is empty), its stamp, and its entries in id order (whether each is
/// a directory, and its name; a file's name without its `.md`).
pub struct DirOut<'a> {
    pub prefix: &'a str,
    pub stamp: DirStamp,
    pub entries: Vec<(bool, &'a str)>,
}

/// One file as the cache records it, with where its concept's texts are.
pub struct FileOut<'a> {
    pub id: &'a str,
    pub stamp: FileStamp,
    pub concept: Option<(&'a Concept, TextRef)>,
    pub diagnostics: &'a [Diagnostic],
}

fn header_prefix(root: &str) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&FORMAT.to_le_bytes());
    for s in [VERSION, root] {
        h.extend_from_slice(&(s.len() as u32).to_le_bytes());
        h.extend_from_slice(s.as_bytes());
    }
    h
}

/// A cache file being written: texts first, as concepts are read (so a
/// load never holds every body at once), then [`Sink::finish`] writes the
/// core and the header.
pub struct Sink {
    out: Out<BufWriter<File>>,
    prefix: Vec<u8>,
    texts_base: u64,
    /// The file's own handle, for reading texts back.
    file: File,
    /// Set by [`Sink::records`]: the core is under way.
    core: Option<CoreStart>,
}

/// Where the core starts and what its first part ([`Sink::records`]) left
/// for [`Sink::finish`].
struct CoreStart {
    texts_len: u64,
    core_at: u64,
    /// Each file record's offset from the core's start.
    offsets: Vec<u64>,
    /// Where the directories start, from the core's start.
    dirs_at: u64,
}

impl Sink {
    /// Start a cache file for `root` in `file` (new and empty, opened for
    /// reading and writing).
    pub fn new(file: File, root: &str) -> std::io::Result<Sink> {
        if cfg!(target_endian = "big") {
            return Err(std::io::Error::other("the cache is little-endian only"));
        }
        let prefix = header_prefix(root);
        let mut out = Out {
            w: BufWriter::with_capacity(1 << 20, file.try_clone()?),
            at: 0,
            crc: crc32fast::Hasher::new(),
            hashing: false,
        };
        out.raw(&prefix)?;
        out.raw(&[0u8; 24])?; // texts length, core length, core CRC, header CRC: at the end
        let texts_base = out.at;
        Ok(Sink {
            out,
            prefix,
            texts_base,
            file,
            core: None,
        })
    }

    /// Append concepts' texts, each its frontmatter then its body. They go
    /// [`TEXT_GROUP`] concepts at a time in one `writev` straight to the file,
    /// not copied into the write buffer first (29 MB on databricks).
    pub fn texts<'c>(
        &mut self,
        concepts: impl IntoIterator<Item = &'c Concept>,
    ) -> std::io::Result<Vec<TextRef>> {
        if self.core.is_some() {
            return Err(std::io::Error::other("cache texts after the records"));
        }
        self.out.w.flush()?;
        let mut refs = Vec::new();
        let mut concepts = concepts.into_iter().peekable();
        while concepts.peek().is_some() {
            let group = concepts
                .by_ref()
                .take(TEXT_GROUP)
                .map(|c| c.texts.read())
                .collect::<Result<Vec<_>, _>>()
                .map_err(std::io::Error::other)?;
            let mut slices = Vec::with_capacity(2 * group.len());
            for t in &group {
                let (f, b) = (t.frontmatter.as_bytes(), t.body.as_bytes());
                let mut h = crc32fast::Hasher::new();
                h.update(f);
                h.update(b);
                refs.push(TextRef {
                    at: self.out.at - self.texts_base,
                    frontmatter_len: f.len() as u32,
                    body_len: b.len() as u32,
                    crc: h.finalize(),
                });
                self.out.at += (f.len() + b.len()) as u64;
                slices.extend([IoSlice::new(f), IoSlice::new(b)]);
            }
            write_all_vectored(self.out.w.get_mut(), &mut slices)?;
        }
        Ok(refs)
    }

    /// Allocate the file's space for the next `len` bytes before they are
    /// written (Linux: `fallocate`, keeping the file's size), so the file
    /// system does not allocate it page by page as the writes arrive: 46 MB
    /// written to a new ext4 file took 6.2 ms of system time instead of
    /// 8.7-10.9 ms. Best effort: where it cannot be done the writes do it.
    pub fn preallocate(&self, len: u64) {
        preallocate(&self.file, self.out.at, len);
    }

    /// Push what was appended to the file, and hand out a store that reads
    /// texts back from it (valid for the texts appended so far).
    pub fn store(&mut self, path: &Path) -> std::io::Result<Arc<TextStore>> {
        self.out.w.flush()?;
        Ok(Arc::new(TextStore {
            file: self.file.try_clone()?,
            base: self.texts_base,
            path: path.to_path_buf(),
        }))
    }

    /// End the texts and write the core's first part: `files` in id order,
    /// stamped as written at `written_ns`, and the directory listings `dirs`.
    /// It needs no index, so it can be written while the index is merged;
    /// [`Sink::finish`] writes the rest.
    pub fn records(
        &mut self,
        files: &[FileOut<'_>],
        dirs: &[DirOut<'_>],
        written_ns: u128,
    ) -> std::io::Result<()> {
        if self.core.is_some() {
            return Err(std::io::Error::other("cache records written twice"));
        }
        let out = &mut self.out;
        let texts_len = out.at - self.texts_base;
        out.pad()?;
        let core_at = out.at;
        out.hashing = true;
        let rel = |out: &Out<_>| out.at - core_at;
        out.u64(files.len() as u64)?;
        out.u128(written_ns)?;
        let mut offsets = Vec::with_capacity(files.len());
        for f in files {
            offsets.push(rel(out));
            out.str(f.id)?;
            out.u64(f.stamp.0)?;
            out.u128(u128::from(f.stamp.1))?;
            out.u32(f.diagnostics.len() as u32)?;
            for d in f.diagnostics {
                let code = Code::ALL.iter().position(|c| *c == d.code).unwrap_or(0);
                out.u8(code as u8)?;
                out.str(&d.message)?;
                out.str(&d.path)?;
            }
            match &f.concept {
                Some((c, r)) => {
                    out.u8(1)?;
                    concept_out(out, c, r)?;
                }
                None => out.u8(0)?,
            }
        }
        let dirs_at = rel(out);
        dirs_out(out, dirs)?;
        self.core = Some(CoreStart {
            texts_len,
            core_at,
            offsets,
            dirs_at,
        });
        Ok(())
    }

    /// Write the rest of the core — the record table, the index and the
    /// ordinal ranks — and the header. [`Sink::records`] must come first.
    pub fn finish(mut self, index: &Index, ordinal: &[u32]) -> std::io::Result<()> {
        let Some(CoreStart {
            texts_len,
            core_at,
            offsets,
            dirs_at,
        }) = self.core.take()
        else {
            return Err(std::io::Error::other("cache records not written"));
        };
        let out = &mut self.out;
        let rel = |out: &Out<_>| out.at - core_at;
        out.pad()?;
        // The rest's exact size, from a dry run that only counts.
        let mut dry = Out {
            w: std::io::sink(),
            at: out.at,
            crc: crc32fast::Hasher::new(),
            hashing: false,
        };
        // The tag lists sorted once, for both runs (the map's order is not the
        // file's: keep it deterministic).
        let mut tags: Vec<(&String, &[u32])> = index.tags.iter().map(|(t, l)| (t, &**l)).collect();
        tags.sort_unstable();
        dry.array(&offsets)?;
        index_out(&mut dry, index, &tags, ordinal)?;
        preallocate(&self.file, out.at, dry.at - out.at + 24);
        let table_at = rel(out);
        out.array(&offsets)?;
        let index_at = rel(out);
        index_out(out, index, &tags, ordinal)?;
        out.u64(table_at)?;
        out.u64(index_at)?;
        out.u64(dirs_at)?;
        let core_len = rel(out);
        let core_crc = out.crc.clone().finalize();
        out.w.flush()?;
        let mut fixed = Vec::with_capacity(24);
        fixed.extend_from_slice(&texts_len.to_le_bytes());
        fixed.extend_from_slice(&core_len.to_le_bytes());
        fixed.extend_from_slice(&core_crc.to_le_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&self.prefix);
        h.update(&fixed);
        fixed.extend_from_slice(&h.finalize().to_le_bytes());
        let f = &mut self.file;
        f.seek(SeekFrom::Start(self.prefix.len() as u64))?;
        f.write_all(&fixed)?;
        f.flush()
    }
}

/// Concepts whose texts one `writev` writes: two slices each, well under
/// the 1,024 slices a call may take.
const TEXT_GROUP: usize = 256;

/// Write all of `slices` to `file` (`Write::write_all_vectored` is not
/// stable yet).
fn write_all_vectored(file: &mut File, mut slices: &mut [IoSlice<'_>]) -> std::io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match file.write_vectored(slices) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// [`Sink::preallocate`] on `file` from offset `at`.
fn preallocate(file: &File, at: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::fs::fallocate(file, rustix::fs::FallocateFlags::KEEP_SIZE, at, len);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, at, len);
}

fn concept_out<W: Write>(p: &mut Out<W>, c: &Concept, r: &TextRef) -> std::io::Result<()> {
    p.opt(c.kind.as_deref())?;
    p.opt(c.title.as_deref())?;
    p.opt(c.description.as_deref())?;
    p.strs(&c.tags)?;
    p.opt(c.resource.as_deref())?;
    p.u8(c.status as u8)?;
    p.u8(c.status_known as u8)?;
    match c.stale_after {
        None => p.u8(0)?,
        Some(t) => {
            p.u8(1)?;
            p.u64(t as u64)?;
        }
    }
    match &c.generated {
        None => p.u8(0)?,
        Some(a) => {
            p.u8(1)?;
            p.actor(a)?;
        }
    }
    p.u32(c.verified.len() as u32)?;
    for a in &c.verified {
        p.actor(a)?;
    }
    p.u8(c.trust_tier as u8)?;
    p.opt(c.authority.as_deref())?;
    match &c.governance {
        None => p.u8(0)?,
        Some(g) => {
            p.u8(1)?;
            p.strs(&g.supersedes)?;
            p.strs(&g.superseded_by)?;
            p.strs(&g.conflicts_with)?;
        }
    }
    p.u64(r.at)?;
    p.u32(r.frontmatter_len)?;
    p.u32(r.body_len)?;
    p.u32(r.crc)
}

fn dirs_out<W: Write>(out: &mut Out<W>, dirs: &[DirOut<'_>]) -> std::io::Result<()> {
    out.u64(dirs.len() as u64)?;
    for d in dirs {
        out.str(d.prefix)?;
        d.stamp.iter().try_for_each(|&v| out.u64(v))?;
        out.u32(d.entries.len() as u32)?;
        let bytes: usize = d
            .entries
            .iter()
            .map(|&(dir, n)| 5 + n.len() + if dir { 0 } else { 3 })
            .sum();
        out.u64(bytes as u64)?;
        for &(dir, name) in &d.entries {
            out.u8(u8::from(dir))?;
            if dir {
                out.str(name)?;
            } else {
                out.u32(name.len() as u32 + 3)?;
                out.raw(name.as_bytes())?;
                out.raw(b".md")?;
            }
        }
    }
    Ok(())
}

/// Write `index`, its folded tag lists as `tags` (sorted), and `ordinal`.
fn index_out<W: Write>(
    p: &mut Out<W>,
    index: &Index,
    tags: &[(&String, &[u32])],
    ordinal: &[u32],
) -> std::io::Result<()> {
    for f in &index.fields {
        p.array::<u8>(&f.vocab)?;
        p.array::<u32>(&f.word_starts)?;
        p.array::<u64>(&f.post_starts)?;
        p.array::<u32>(&f.postings)?;
        p.array::<u32>(&f.dense_slot)?;
        p.array::<u64>(&f.dense_bits)?;
        p.u64(f.bitset_words as u64)?;
        p.array::<u32>(&f.trigrams.keys)?;
        p.array::<u32>(&f.trigrams.starts)?;
        p.array::<u32>(&f.trigrams.words)?;
    }
    p.u64(tags.len() as u64)?;
    for &(t, list) in tags {
        p.str(t)?;
        p.pad()?;
        p.array::<u32>(list)?;
    }
    p.array::<u32>(ordinal)
}

// ---------------------------------------------------------------- reading

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

type R<T> = Result<T, Rejected>;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or(Rejected::Truncated)?;
        let s = self.b.get(self.at..end).ok_or(Rejected::Truncated)?;
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> R<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }
    fn u64(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }
    fn u128(&mut self) -> R<u128> {
        Ok(u128::from_le_bytes(
            self.take(16)?.try_into().unwrap_or_default(),
        ))
    }
    fn str_ref(&mut self) -> R<&'a str> {
        let n = self.u32()? as usize;
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes).map_err(|_| Rejected::Corrupt("invalid UTF-8".into()))
    }
    fn str(&mut self) -> R<String> {
        Ok(self.str_ref()?.to_string())
    }
    /// A value stored as its index (one byte) in `all`.
    fn code<T: Copy>(&mut self, all: &[T], what: &str) -> R<T> {
        let x = self.u8()?;
        all.get(usize::from(x))
            .copied()
            .ok_or_else(|| Rejected::Corrupt(format!("{what} {x}")))
    }
    fn flag(&mut self) -> R<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            x => Err(Rejected::Corrupt(format!("flag {x}"))),
        }
    }
    fn opt(&mut self) -> R<Option<String>> {
        Ok(self.opt_ref()?.map(str::to_string))
    }
    fn opt_ref(&mut self) -> R<Option<&'a str>> {
        Ok(if self.flag()? {
            Some(self.str_ref()?)
        } else {
            None
        })
    }
    fn strs_ref(&mut self) -> R<Vec<&'a str>> {
        let n = self.u32()? as usize;
        // Each string needs at least its 4-byte length: bound the allocation.
        if n > (self.b.len() - self.at) / 4 {
            return Err(Rejected::Truncated);
        }
        (0..n).map(|_| self.str_ref()).collect()
    }
    fn actor(&mut self) -> R<Actor> {
        Ok(Actor {
            by: self.opt()?,
            at: self.opt()?,
        })
    }
    fn pad(&mut self) -> R<()> {
        let n = (8 - self.at % 8) % 8;
        self.take(n).map(|_| ())
    }
}

/// A concept record's fields, borrowed from the mapping: parsed to check a
/// record and take its [`Columns`], and again to build the concept when it
/// is first used — one parser, so a record that checks always decodes.
struct Fields<'a> {
    kind: Option<&'a str>,
    title: Option<&'a str>,
    description: Option<&'a str>,
    tags: Vec<&'a str>,
    resource: Option<&'a str>,
    status: Status,
    status_known: bool,
    stale_after: Option<i64>,
    generated: Option<Actor>,
    verified: Vec<Actor>,
    trust_tier: TrustTier,
    authority: Option<&'a str>,
    /// `supersedes`, `superseded_by`, `conflicts_with`.
    governance: Option<[Vec<&'a str>; 3]>,
    /// Where the texts are: offset, frontmatter length, body length, CRC.
    texts: (u64, u32, u32, u32),
}

/// An open, checked cache file.
pub struct Opened {
    map: Arc<Mmap>,
    store: Arc<TextStore>,
    /// Where the core starts in the file (8-aligned).
    core_at: usize,
    core_len: usize,
    texts_len: u64,
    pub written_ns: u128,
    /// Each file's record, as an offset into the core.
    records: Slab<u64>,
    index_at: usize,
    dirs_at: usize,
}

/// Where a checked cache file's parts are ([`Opened::check`]).
struct Layout {
    core_at: usize,
    core_len: usize,
    texts_base: u64,
    texts_len: u64,
    written_ns: u128,
    table_at: usize,
    index_at: usize,
    dirs_at: usize,
}

/// Why a cache file could not be opened: missing, unreadable or rejected.
pub enum OpenError {
    Missing,
    Unreadable(std::io::Error),
    Rejected(Rejected),
}

impl From<Rejected> for OpenError {
    fn from(r: Rejected) -> Self {
        OpenError::Rejected(r)
    }
}

/// The directory listings of a cache file ([`Opened::listings`]), by prefix.
pub struct Listings<'a> {
    by_prefix: FxHashMap<&'a str, Listing<'a>>,
}

impl<'a> Listings<'a> {
    /// The listings written by [`dirs_out`] at the start of `b`.
    fn read(b: &'a [u8]) -> R<Listings<'a>> {
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

    /// `dirs` as a cache file records them, to read back with
    /// [`Listings::parse`] (for tests of the walk).
    #[cfg(test)]
    pub fn encode(dirs: &[DirOut<'_>]) -> Vec<u8> {
        let mut out = Out {
            w: Vec::new(),
            at: 0,
            crc: crc32fast::Hasher::new(),
            hashing: false,
        };
        dirs_out(&mut out, dirs).expect("writing to memory");
        out.w
    }

    /// The listings in `b`, from [`Listings::encode`].
    #[cfg(test)]
    pub fn parse(b: &'a [u8]) -> Option<Listings<'a>> {
        Listings::read(b).ok()
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

/// CRC-32 of `b`, in parallel slices combined in order.
fn crc_parallel(b: &[u8]) -> u32 {
    const SLICE: usize = 16 << 20;
    let parts: Vec<crc32fast::Hasher> = b
        .par_chunks(SLICE)
        .map(|s| {
            let mut h = crc32fast::Hasher::new();
            h.update(s);
            h
        })
        .collect();
    let mut all = crc32fast::Hasher::new();
    for p in &parts {
        all.combine(p);
    }
    all.finalize()
}

impl Opened {
    /// Map the cache file at `path` and check it was written for `root` by
    /// this okfast, is whole, and has an intact header and core.
    pub fn open(path: &Path, root: &str) -> Result<Opened, OpenError> {
        if cfg!(target_endian = "big") {
            return Err(Rejected::Foreign("a little-endian machine".into()).into());
        }
        let file = File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => OpenError::Missing,
            _ => OpenError::Unreadable(e),
        })?;
        // SAFETY: the file is only ever replaced by rename, never changed in
        // place (module docs); every view into the map is bounds-checked.
        let map = unsafe { Mmap::map(&file) }.map_err(OpenError::Unreadable)?;
        let l = Opened::check(&map, root)?;
        let (core_at, core_len) = (l.core_at, l.core_len);
        let map = Arc::new(map);
        let n = (core_len - TAIL) / 8; // an upper bound, checked by `mapped`
        let mut r = Reader {
            b: &map[core_at..],
            at: l.table_at,
        };
        let n = usize::try_from(r.u64()?)
            .ok()
            .filter(|&k| k <= n)
            .ok_or(Rejected::Truncated)?;
        let records = Slab::<u64>::mapped(&map, core_at + r.at, n)
            .ok_or_else(|| Rejected::Corrupt("record table".into()))?;
        let tail = core_len - TAIL;
        if records.iter().any(|&o| o as usize >= tail) || l.index_at >= tail || l.dirs_at >= tail {
            return Err(Rejected::Corrupt("record offsets".into()).into());
        }
        let store = Arc::new(TextStore {
            file,
            base: l.texts_base,
            path: path.to_path_buf(),
        });
        Ok(Opened {
            map,
            store,
            core_at,
            core_len,
            texts_len: l.texts_len,
            written_ns: l.written_ns,
            records,
            index_at: l.index_at,
            dirs_at: l.dirs_at,
        })
    }

    /// Check the header and the core's checksum: where the core and the
    /// texts are, when the file was written, where its tables are.
    fn check(b: &[u8], root: &str) -> R<Layout> {
        let mut h = Reader { b, at: 0 };
        if h.take(MAGIC.len())? != MAGIC {
            return Err(Rejected::Foreign("another program (wrong magic)".into()));
        }
        let format = h.u32()?;
        if format != FORMAT {
            return Err(Rejected::Foreign(format!(
                "another okfast (cache format {format}; this is {FORMAT})"
            )));
        }
        let version = h.str_ref()?;
        if version != VERSION {
            return Err(Rejected::Foreign(format!(
                "okfast {version} (this is {VERSION})"
            )));
        }
        if h.str_ref()? != root {
            return Err(Rejected::Foreign("another bundle root".into()));
        }
        let texts_len = h.u64()?;
        let core_len = usize::try_from(h.u64()?).map_err(|_| Rejected::Truncated)?;
        let core_crc = h.u32()?;
        let header_end = h.at;
        if crc32fast::hash(&b[..header_end]) != h.u32()? {
            return Err(Rejected::Checksum);
        }
        let texts_base = h.at as u64;
        let texts_end = texts_base
            .checked_add(texts_len)
            .filter(|&e| e <= b.len() as u64)
            .ok_or(Rejected::Truncated)? as usize;
        let core_at = texts_end.next_multiple_of(8);
        match core_at.checked_add(core_len) {
            Some(end) if end == b.len() => {}
            Some(end) if end > b.len() => return Err(Rejected::Truncated),
            _ => return Err(Rejected::Corrupt("trailing bytes".into())),
        }
        if b[texts_end..core_at].iter().any(|&x| x != 0) {
            return Err(Rejected::Corrupt("padding".into()));
        }
        let core = &b[core_at..];
        if crc_parallel(core) != core_crc {
            return Err(Rejected::Checksum);
        }
        let mut p = Reader { b: core, at: 0 };
        let n = p.u64()?;
        let written_ns = p.u128()?;
        let tail = core_len.checked_sub(TAIL).ok_or(Rejected::Truncated)?;
        let mut t = Reader { b: core, at: tail };
        let (table_at, index_at, dirs_at) =
            (t.u64()? as usize, t.u64()? as usize, t.u64()? as usize);
        let mut r = Reader {
            b: core,
            at: table_at,
        };
        if table_at >= tail || r.u64()? != n {
            return Err(Rejected::Corrupt("record table".into()));
        }
        Ok(Layout {
            core_at,
            core_len,
            texts_base,
            texts_len,
            written_ns,
            table_at,
            index_at,
            dirs_at,
        })
    }

    fn core(&self) -> &[u8] {
        &self.map[self.core_at..self.core_at + self.core_len]
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// File `i`'s id and stamp, without decoding the rest of its record.
    pub fn file(&self, i: usize) -> Result<(&str, FileStamp), Rejected> {
        let (id, stamp) = self.file_bytes(i)?;
        let id = std::str::from_utf8(id).map_err(|_| Rejected::Corrupt("invalid UTF-8".into()))?;
        Ok((id, stamp))
    }

    /// [`Opened::file`] with the id's bytes as stored (not checked to be
    /// UTF-8: equal to a `str`'s bytes, they are).
    pub fn file_bytes(&self, i: usize) -> Result<(&[u8], FileStamp), Rejected> {
        let at = self.records.get(i).ok_or(Rejected::Truncated)?;
        let mut p = Reader {
            b: self.core(),
            at: *at as usize,
        };
        let n = p.u32()? as usize;
        let (id, size) = (p.take(n)?, p.u64()?);
        let mtime =
            u64::try_from(p.u128()?).map_err(|_| Rejected::Corrupt("modification time".into()))?;
        Ok((id, (size, mtime)))
    }

    /// File `i`'s diagnostics and concept; the concept's texts stay in the file.
    pub fn read(&self, i: usize) -> Result<Read, Rejected> {
        let (mut p, id, diagnostics) = self.head(i)?;
        let concept = if p.flag()? {
            let f = self.fields(&mut p)?;
            Some(Slot::loaded(Arc::new(self.concept_of(id, f))))
        } else {
            None
        };
        Ok(Read {
            concept,
            diagnostics,
        })
    }

    /// File `i`'s diagnostics and, when it holds a concept, that concept's
    /// [`Columns`]: the record is checked exactly as [`Opened::concept`]
    /// decodes it, so a record that skims decodes, without keeping anything.
    pub fn skim(&self, i: usize) -> Result<(Vec<Diagnostic>, Option<Columns>), Rejected> {
        let (mut p, _, diagnostics) = self.head(i)?;
        let columns = if p.flag()? {
            let f = self.fields(&mut p)?;
            Some(Columns::new(
                f.stale_after,
                f.authority,
                f.governance.is_some(),
            ))
        } else {
            None
        };
        Ok((diagnostics, columns))
    }

    /// The concept of file `i`, decoded (its texts stay in the file).
    pub fn concept(&self, i: usize) -> Result<Concept, Rejected> {
        let (mut p, id, _) = self.head(i)?;
        if !p.flag()? {
            return Err(Rejected::Corrupt("no concept in the record".into()));
        }
        let f = self.fields(&mut p)?;
        Ok(self.concept_of(id, f))
    }

    /// Record `i` read up to its concept: the reader there, the id and the
    /// file's diagnostics.
    fn head(&self, i: usize) -> R<(Reader<'_>, &str, Vec<Diagnostic>)> {
        let at = self.records.get(i).ok_or(Rejected::Truncated)?;
        let mut p = Reader {
            b: self.core(),
            at: *at as usize,
        };
        let id = p.str_ref()?;
        p.take(24)?; // the stamp
        let nd = p.u32()? as usize;
        let mut diagnostics = Vec::with_capacity(nd.min(64));
        for _ in 0..nd {
            let code = p.code(&Code::ALL, "diagnostic code")?;
            diagnostics.push(Diagnostic::new(code, p.str()?, p.str()?));
        }
        Ok((p, id, diagnostics))
    }

    /// A concept record's fields, borrowed from the mapping and checked.
    fn fields<'a>(&self, p: &mut Reader<'a>) -> R<Fields<'a>> {
        let kind = p.opt_ref()?;
        let title = p.opt_ref()?;
        let description = p.opt_ref()?;
        let tags = p.strs_ref()?;
        let resource = p.opt_ref()?;
        let status = p.code(&Status::ALL, "status")?;
        let status_known = p.flag()?;
        let stale_after = if p.flag()? {
            Some(p.u64()? as i64)
        } else {
            None
        };
        let generated = if p.flag()? { Some(p.actor()?) } else { None };
        let nv = p.u32()? as usize;
        if nv > p.b.len() - p.at {
            return Err(Rejected::Truncated);
        }
        let verified = (0..nv).map(|_| p.actor()).collect::<R<Vec<_>>>()?;
        let trust_tier = p.code(&TrustTier::ALL, "trust tier")?;
        let authority = p.opt_ref()?;
        let governance = if p.flag()? {
            Some([p.strs_ref()?, p.strs_ref()?, p.strs_ref()?])
        } else {
            None
        };
        let (at, frontmatter_len, body_len, crc) = (p.u64()?, p.u32()?, p.u32()?, p.u32()?);
        let end = at
            .checked_add(u64::from(frontmatter_len) + u64::from(body_len))
            .ok_or(Rejected::Truncated)?;
        if end > self.texts_len {
            return Err(Rejected::Corrupt("text out of range".into()));
        }
        Ok(Fields {
            kind,
            title,
            description,
            tags,
            resource,
            status,
            status_known,
            stale_after,
            generated,
            verified,
            trust_tier,
            authority,
            governance,
            texts: (at, frontmatter_len, body_len, crc),
        })
    }

    fn concept_of(&self, id: &str, f: Fields<'_>) -> Concept {
        let own = |s: Option<&str>| s.map(str::to_string);
        let all = |v: Vec<&str>| v.into_iter().map(str::to_string).collect::<Vec<_>>();
        let (at, frontmatter_len, body_len, crc) = f.texts;
        Concept {
            id: id.to_string(),
            kind: own(f.kind),
            title: own(f.title),
            description: own(f.description),
            tags: all(f.tags),
            resource: own(f.resource),
            status: f.status,
            status_known: f.status_known,
            stale_after: f.stale_after,
            generated: f.generated,
            verified: f.verified,
            trust_tier: f.trust_tier,
            authority: own(f.authority),
            governance: f.governance.map(|[a, b, c]| {
                Box::new(Governance {
                    supersedes: all(a),
                    superseded_by: all(b),
                    conflicts_with: all(c),
                })
            }),
            texts: Texts::Stored {
                store: Arc::clone(&self.store),
                at,
                frontmatter_len,
                body_len,
                crc,
            },
        }
    }

    /// The saved index and ordinal ranks, as views into the mapping, checked
    /// to describe as many concepts as there are ordinal ranks (the caller
    /// checks that number against the records): any inconsistency (which
    /// the checksum makes a sign of tampering, not of disk damage) rejects
    /// them rather than risk a bad lookup. Needs no record, so it can run
    /// beside the records' own check.
    pub fn index(&self) -> Result<(Index, Slab<u32>), Rejected> {
        let core = self.core();
        let mut p = Reader {
            b: core,
            at: self.index_at,
        };
        let bad = |what: &str| Rejected::Corrupt(format!("saved index: {what}"));
        let mut fields: Vec<FieldIndex> = Vec::with_capacity(3);
        for _ in 0..3 {
            let f = FieldIndex {
                vocab: self.array(&mut p)?,
                word_starts: self.array(&mut p)?,
                post_starts: self.array(&mut p)?,
                postings: self.array(&mut p)?,
                dense_slot: self.array(&mut p)?,
                dense_bits: self.array(&mut p)?,
                bitset_words: usize::try_from(p.u64()?).map_err(|_| bad("bitset size"))?,
                trigrams: Trigrams {
                    keys: self.array(&mut p)?,
                    starts: self.array(&mut p)?,
                    words: self.array(&mut p)?,
                },
            };
            fields.push(f);
        }
        let n_tags = usize::try_from(p.u64()?).map_err(|_| Rejected::Truncated)?;
        if n_tags > core.len() / 16 {
            return Err(Rejected::Truncated);
        }
        let mut tags: FxHashMap<String, Slab<u32>> = FxHashMap::default();
        for _ in 0..n_tags {
            let t = p.str()?;
            p.pad()?;
            tags.insert(t, self.array(&mut p)?);
        }
        let ordinal: Slab<u32> = self.array(&mut p)?;
        let n = ordinal.len();
        if ordinal.iter().any(|&x| x as usize >= n) || p.at != core.len() - TAIL {
            return Err(bad("ordinal ranks"));
        }
        if !fields.par_iter().all(|f| consistent(f, n)) {
            return Err(bad("inconsistent with the concepts"));
        }
        if tags
            .values()
            .any(|list| list.iter().any(|&x| x as usize >= n))
        {
            return Err(bad("tag posting out of range"));
        }
        let fields: [FieldIndex; 3] = fields.try_into().map_err(|_| bad("fields"))?;
        Ok((Index { fields, tags }, ordinal))
    }

    /// The directory listings the file recorded, by prefix.
    pub fn listings(&self) -> Result<Listings<'_>, Rejected> {
        Listings::read(&self.core()[self.dirs_at..])
    }

    /// The array at `p` as a view (its length, items, pad).
    fn array<T: bytemuck::Pod>(&self, p: &mut Reader<'_>) -> R<Slab<T>> {
        let len = usize::try_from(p.u64()?).map_err(|_| Rejected::Truncated)?;
        let at = p.at;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(Rejected::Truncated)?;
        p.take(bytes)?;
        p.pad()?;
        Slab::mapped(&self.map, self.core_at + at, len).ok_or(Rejected::Truncated)
    }
}

/// Whether a saved field index is well formed for `n` concepts.
fn consistent(f: &FieldIndex, n: usize) -> bool {
    let words = f.word_starts.len().saturating_sub(1);
    let slots = f.dense_slot.iter().filter(|&&s| s != NOT_DENSE).count();
    f.bitset_words == n.div_ceil(64)
        && !f.word_starts.is_empty()
        && f.word_starts.windows(2).all(|w| w[0] <= w[1])
        && f.word_starts.last().map(|&e| e as usize) == Some(f.vocab.len())
        && f.post_starts.len() == words + 1
        && f.post_starts.windows(2).all(|w| w[0] <= w[1])
        && f.post_starts.last().map(|&e| e as usize) == Some(f.postings.len())
        && f.postings.par_iter().all(|&x| (x as usize) < n)
        && f.dense_slot.len() == words
        && f.dense_slot
            .iter()
            .all(|&s| s == NOT_DENSE || (s as usize) < slots)
        && f.dense_bits.len() == slots * f.bitset_words
        && f.trigrams.starts.len() == f.trigrams.keys.len() + 1
        && f.trigrams.starts.windows(2).all(|w| w[0] <= w[1])
        && f.trigrams.starts.last().map(|&e| e as usize) == Some(f.trigrams.words.len())
        && f.trigrams.words.par_iter().all(|&w| (w as usize) < words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::concept::read_concept;

    fn sample() -> Vec<(String, FileStamp, Read)> {
        let src = [
            "---\ntype: T\ntitle: Å\ntags: [a, b]\nstale_after: 2030-01-01\nverified: {by: human:x, at: t}\nsupersedes: [z]\nauthority: canonical\n---\nbody\n",
            "---\ntitle: [broken\n---\n",
            "no frontmatter at all",
        ];
        src.iter()
            .enumerate()
            .map(|(i, s)| {
                let id = format!("c{i}");
                let r = read_concept(&id, &format!("{id}.md"), s.as_bytes());
                (id, (s.len() as u64, 1_000 + i as u64), r)
            })
            .collect()
    }

    fn concepts(files: &[(String, FileStamp, Read)]) -> Vec<Slot> {
        files.iter().filter_map(|f| f.2.concept.clone()).collect()
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        crate::testing::scratch_dir("cache", name).join("c.okfc")
    }

    /// Write the sample's cache to a new file at `path`; its bytes.
    fn written(files: &[(String, FileStamp, Read)], path: &Path) -> Vec<u8> {
        written_with(files, path, 0)
    }

    /// [`written`], with `extra` ordinal ranks more than there are concepts.
    fn written_with(files: &[(String, FileStamp, Read)], path: &Path, extra: u32) -> Vec<u8> {
        let cs = concepts(files);
        let index = Index::build(&cs);
        let ordinal: Vec<u32> = (0..cs.len() as u32 + extra).collect();
        let _ = std::fs::remove_file(path);
        let f = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .unwrap();
        let mut sink = Sink::new(f, "/root").unwrap();
        let refs: Vec<TextRef> = sink.texts(cs.iter().map(|c| &**c)).unwrap();
        let mut refs = refs.into_iter();
        let outs: Vec<FileOut<'_>> = files
            .iter()
            .map(|(id, st, r)| FileOut {
                id,
                stamp: *st,
                concept: r.concept.as_deref().map(|c| (c, refs.next().unwrap())),
                diagnostics: &r.diagnostics,
            })
            .collect();
        sink.records(&outs, &[], 42).unwrap();
        sink.finish(&index, &ordinal).unwrap();
        std::fs::read(path).unwrap()
    }

    fn open(path: &Path) -> Result<Opened, Rejected> {
        match Opened::open(path, "/root") {
            Ok(o) => Ok(o),
            Err(OpenError::Rejected(r)) => Err(r),
            Err(_) => panic!("not a rejection"),
        }
    }

    /// More concepts than several `writev` groups hold, with empty bodies,
    /// no frontmatter and multi-byte text among them: each text reads back
    /// from where its reference says, whichever group wrote it.
    #[test]
    fn texts_written_in_groups_read_back() {
        let files: Vec<(String, FileStamp, Read)> = (0..TEXT_GROUP * 2 + 77)
            .map(|i| {
                let id = format!("c{i:04}");
                let body = "ß word ".repeat(i % 7);
                let src = match i % 3 {
                    0 => format!("---\ntype: T\ntitle: t{i}\n---\n{body}"),
                    1 => format!("plain text {i} {body}"),
                    _ => "---\ntype: T\n---\n".to_string(),
                };
                let r = read_concept(&id, &format!("{id}.md"), src.as_bytes());
                (id, (src.len() as u64, i as u64), r)
            })
            .collect();
        let path = scratch("groups");
        written(&files, &path);
        let o = open(&path).unwrap();
        for (i, (_, _, r)) in files.iter().enumerate() {
            let (a, b) = (
                o.read(i).unwrap().concept.unwrap(),
                r.concept.clone().unwrap(),
            );
            assert!(a.texts.is_stored());
            assert_eq!(a.body().unwrap(), b.body().unwrap(), "{i}");
            assert_eq!(a.frontmatter().unwrap(), b.frontmatter().unwrap(), "{i}");
        }
    }

    #[test]
    fn round_trip_with_texts_read_back() {
        let files = sample();
        let path = scratch("round");
        written(&files, &path);
        let o = open(&path).unwrap();
        assert_eq!(o.written_ns, 42);
        assert_eq!(o.len(), files.len());
        for (i, (id, st, r)) in files.iter().enumerate() {
            assert_eq!(o.file(i).unwrap(), (id.as_str(), *st));
            let got = o.read(i).unwrap();
            assert_eq!(got.diagnostics, r.diagnostics);
            let (a, b) = (got.concept.as_ref(), r.concept.as_ref());
            assert_eq!(a.is_some(), b.is_some());
            if let (Some(a), Some(b)) = (a, b) {
                assert!(a.texts.is_stored());
                assert_eq!(a.body().unwrap(), b.body().unwrap());
                assert_eq!(a.frontmatter().unwrap(), b.frontmatter().unwrap());
                assert_eq!(
                    (&a.title, &a.tags, a.stale_after),
                    (&b.title, &b.tags, b.stale_after)
                );
                assert_eq!(a.governance, b.governance);
            }
        }
    }

    #[test]
    fn the_saved_index_is_a_view_and_is_checked() {
        let files = sample();
        let cs = concepts(&files);
        let path = scratch("index");
        written(&files, &path);
        let o = open(&path).unwrap();
        let (ix, ord) = o.index().unwrap();
        let built = Index::build(&cs);
        for (a, b) in ix.fields.iter().zip(&built.fields) {
            assert!(matches!(a.postings, Slab::Mapped { .. }));
            assert_eq!(*a.vocab, *b.vocab);
            assert_eq!(*a.word_starts, *b.word_starts);
            assert_eq!(*a.postings, *b.postings);
            assert_eq!(*a.dense_bits, *b.dense_bits);
            assert_eq!(*a.trigrams.words, *b.trigrams.words);
        }
        assert_eq!(ix.tags, built.tags);
        assert_eq!(*ord, (0..cs.len() as u32).collect::<Vec<_>>());
        // Ranks for another number of concepts than the index describes are
        // an inconsistency.
        drop(o);
        written_with(&files, &path, 64);
        assert!(open(&path).unwrap().index().is_err());
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_caught() {
        let files = sample();
        let path = scratch("flip");
        let bytes = written(&files, &path);
        let o = open(&path).unwrap();
        let texts = o.store.base as usize..o.store.base as usize + o.texts_len as usize;
        drop(o);
        for n in 0..bytes.len() {
            std::fs::write(&path, &bytes[..n]).unwrap();
            assert!(open(&path).is_err(), "prefix {n}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            std::fs::write(&path, &b).unwrap();
            match open(&path) {
                // Only the text section is checked later, per concept.
                Ok(o) => {
                    assert!(texts.contains(&i), "byte {i} passed the open checks");
                    let bad = (0..o.len())
                        .filter_map(|k| o.read(k).unwrap().concept)
                        .filter(|c| c.texts.read().is_err())
                        .count();
                    assert_eq!(bad, 1, "byte {i}");
                    // The damaged file was removed, so the next load rebuilds it.
                    assert!(!path.exists());
                }
                Err(_) => assert!(!texts.contains(&i), "byte {i}"),
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            Opened::open(&path, "/other"),
            Err(OpenError::Rejected(Rejected::Foreign(_)))
        ));
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert!(open(&path).is_err());
    }
}
