//! Writing a cache file: texts as the concepts are read, then the lists
//! section (lists.rs), the core (the file records, the directory listings,
//! the index) and the header.

use std::fs::File;
use std::io::{BufWriter, IoSlice, Seek, SeekFrom, Write};

use std::path::Path;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::copy::record_out;
use super::lists::{lists_crc, lists_out, ListsAt};
use super::{FORMAT, MAGIC, VERSION};
use crate::array::Array;
use crate::concept::source::TextStore;
use crate::concept::{Actor, Concept};
use crate::diagnostic::{Code, Diagnostic};
use crate::fs::stamp::FileStamp;
use crate::fs::walk::DirListing;
use crate::index::bm25f::Bm25fIndex;
use crate::index::{FieldIndex, Index};

/// A writer that knows its position and, while `hashing`, feeds a CRC-32.
pub(super) struct Out<W: Write> {
    pub(super) w: W,
    pub(super) at: u64,
    pub(super) crc: crc32fast::Hasher,
    pub(super) hashing: bool,
}

impl<W: Write> Out<W> {
    pub(super) fn raw(&mut self, b: &[u8]) -> std::io::Result<()> {
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
    pub(super) fn array<T: bytemuck::Pod>(&mut self, v: &[T]) -> std::io::Result<()> {
        self.u64(v.len() as u64)?;
        self.raw(bytemuck::cast_slice(v))?;
        self.pad()
    }
}

/// Where one concept's texts were written.
#[derive(Clone, Copy, Default)]
pub struct TextRef {
    pub at: u64,
    pub frontmatter_len: u32,
    pub body_len: u32,
    pub crc: u32,
}

/// One file as the cache records it, with where its concept's texts are.
pub struct FileRecord<'a> {
    pub id: &'a str,
    pub stamp: FileStamp,
    pub concept: Option<(&'a Concept, TextRef)>,
    pub diagnostics: &'a [Diagnostic],
}

/// A file record to write: made from its parts, or another cache file's
/// record copied as it is but for where its texts now are (copy.rs).
pub enum RecordOut<'a> {
    Made(FileRecord<'a>),
    Copied {
        bytes: &'a [u8],
        text_at: Option<u64>,
    },
}

fn header_prefix(root: &str, analyzer: &str) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&FORMAT.to_le_bytes());
    for s in [VERSION, root, analyzer] {
        h.extend_from_slice(&(s.len() as u32).to_le_bytes());
        h.extend_from_slice(s.as_bytes());
    }
    h
}

/// A cache file being written: texts first, as concepts are read (so a
/// load never holds every body at once), then the lists section
/// ([`Sink::lists`]), then the core and the header ([`Sink::records`],
/// [`Sink::index_head`], [`Sink::index_tail`]; or [`Sink::finish`]).
pub struct Sink {
    pub(super) out: Out<BufWriter<File>>,
    prefix: Vec<u8>,
    pub(super) texts_base: u64,
    /// The file's own handle, for reading texts back.
    pub(super) file: File,
    /// Set by [`Sink::lists`]: the texts are done and the lists section is
    /// made.
    pub(super) lists: Option<ListsAt>,
    /// Set by [`Sink::records`]: the core is under way.
    core: Option<CoreStart>,
    /// Set by [`Sink::index_head`]: where the record table and the index
    /// start, from the core's start.
    head: Option<(u64, u64)>,
}

/// Where the core starts and what its first part ([`Sink::records`]) left
/// for the rest.
struct CoreStart {
    core_at: u64,
    /// Each file record's offset from the core's start.
    offsets: Vec<u64>,
    /// Where the directories start, from the core's start.
    dirs_at: u64,
}

impl Sink {
    /// Start a cache file for `root` in `file` (new and empty, opened for
    /// reading and writing).
    pub fn new(file: File, root: &str, analyzer: &str) -> std::io::Result<Sink> {
        if cfg!(target_endian = "big") {
            return Err(std::io::Error::other("the cache is little-endian only"));
        }
        let prefix = header_prefix(root, analyzer);
        let mut out = Out {
            w: BufWriter::with_capacity(1 << 20, file.try_clone()?),
            at: 0,
            crc: crc32fast::Hasher::new(),
            hashing: false,
        };
        out.raw(&prefix)?;
        // Texts length, lists length, core length, lists CRC, core CRC,
        // header CRC: written at the end.
        out.raw(&[0u8; FIXED])?;
        let texts_base = out.at;
        Ok(Sink {
            out,
            prefix,
            texts_base,
            file,
            lists: None,
            core: None,
            head: None,
        })
    }

    /// Append concepts' texts, each its frontmatter then its body. They go
    /// [`TEXT_GROUP`] concepts at a time in one `writev` straight to the file,
    /// not copied into the write buffer first (docs/performance.md).
    pub fn texts<'c>(
        &mut self,
        concepts: impl IntoIterator<Item = &'c Concept>,
    ) -> std::io::Result<Vec<TextRef>> {
        if self.lists.is_some() {
            return Err(std::io::Error::other("cache texts after the lists"));
        }
        self.out.w.flush()?;
        let mut refs = Vec::new();
        let mut concepts = concepts.into_iter().peekable();
        while concepts.peek().is_some() {
            let group = concepts
                .by_ref()
                .take(TEXT_GROUP)
                .map(|c| c.source.read())
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
    /// system does not allocate it page by page as the writes arrive
    /// (docs/performance.md). Best effort: where it cannot be done the writes
    /// do it.
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

    /// Write the core's first part: `files` in id order,
    /// stamped as written at `written_ns`, and the directory listings `dirs`.
    /// It needs no index, so it can be written while the index is merged;
    /// [`Sink::finish`] writes the rest.
    pub fn records(
        &mut self,
        files: &[RecordOut<'_>],
        dirs: &[DirListing<'_>],
        written_ns: u128,
    ) -> std::io::Result<()> {
        if self.core.is_some() {
            return Err(std::io::Error::other("cache records written twice"));
        }
        if self.lists.is_none() {
            return Err(std::io::Error::other("cache records before the lists"));
        }
        let out = &mut self.out;
        out.pad()?;
        let core_at = out.at;
        out.hashing = true;
        let rel = |out: &Out<_>| out.at - core_at;
        out.u64(files.len() as u64)?;
        out.u128(written_ns)?;
        let mut offsets = Vec::with_capacity(files.len());
        for f in files {
            offsets.push(rel(out));
            let f = match f {
                RecordOut::Made(f) => f,
                RecordOut::Copied { bytes, text_at } => {
                    record_out(out, bytes, *text_at)?;
                    continue;
                }
            };
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
            core_at,
            offsets,
            dirs_at,
        });
        Ok(())
    }

    /// Write the rest of the core — the record table, the index and the
    /// ordinal ranks — and the header. [`Sink::records`] must come first,
    /// and the lists section hold `index`'s postings ([`Sink::lists_from`]).
    pub fn finish(mut self, index: &Index, ordinal: &[u32]) -> std::io::Result<()> {
        self.index_head(&index.fields, &index.tags, ordinal)?;
        self.index_tail(&index.bm25f)
    }

    /// Write the record table and the index's first part: the per-field
    /// index, the tags and the ordinal ranks, which are ready before the
    /// BM25F index is laid out, so they can be written meanwhile.
    /// [`Sink::records`] must come first, [`Sink::index_tail`] after.
    pub fn index_head(
        &mut self,
        fields: &[FieldIndex; 3],
        tags: &FxHashMap<String, Array<u32>>,
        ordinal: &[u32],
    ) -> std::io::Result<()> {
        let Some(core) = &self.core else {
            return Err(std::io::Error::other("cache records not written"));
        };
        let core_at = core.core_at;
        let out = &mut self.out;
        let rel = |out: &Out<_>| out.at - core_at;
        out.pad()?;
        // The tag lists sorted (the map's order is not the file's: keep it
        // deterministic).
        let mut tags: Vec<(&String, &[u32])> = tags.iter().map(|(t, l)| (t, &**l)).collect();
        tags.sort_unstable();
        let len = dry_len(out.at, |dry| {
            dry.array(&core.offsets)?;
            head_out(dry, fields, &tags, ordinal)
        })?;
        preallocate(&self.file, out.at, len);
        let table_at = rel(out);
        out.array(&core.offsets)?;
        let index_at = rel(out);
        head_out(out, fields, &tags, ordinal)?;
        self.head = Some((table_at, index_at));
        Ok(())
    }

    /// Write the BM25F index but its postings (in the lists section), the
    /// rest of the core and the header. [`Sink::index_head`] must come
    /// first; `bm25f`'s postings are the lists section's.
    pub fn index_tail(mut self, bm25f: &Bm25fIndex) -> std::io::Result<()> {
        let (
            Some(CoreStart {
                core_at, dirs_at, ..
            }),
            Some((table_at, index_at)),
            Some(lists),
        ) = (self.core.take(), self.head, self.lists)
        else {
            return Err(std::io::Error::other("cache index head not written"));
        };
        let out = &mut self.out;
        let rel = |out: &Out<_>| out.at - core_at;
        let len = dry_len(out.at, |dry| bm25f_out(dry, bm25f))?;
        // The three offsets after it count too.
        preallocate(&self.file, out.at, len + 24);
        // The core's rest is written on one thread while the lists laid in
        // the file are read back for their checksum on the other.
        let (written, laid_crc) = rayon::join(
            || -> std::io::Result<()> {
                bm25f_out(out, bm25f)?;
                out.u64(table_at)?;
                out.u64(index_at)?;
                out.u64(dirs_at)?;
                out.w.flush()
            },
            || lists.mapped.then(|| lists_crc(bm25f)),
        );
        written?;
        let core_len = rel(out);
        let core_crc = out.crc.clone().finalize();
        if !lists.mapped {
            lists_out(&mut self.file, lists.at, bm25f)?;
        }
        let lists_crc = laid_crc.unwrap_or_else(|| lists_crc(bm25f));
        let mut fixed = Vec::with_capacity(FIXED);
        fixed.extend_from_slice(&lists.texts_len.to_le_bytes());
        fixed.extend_from_slice(&lists.len.to_le_bytes());
        fixed.extend_from_slice(&core_len.to_le_bytes());
        fixed.extend_from_slice(&lists_crc.to_le_bytes());
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

/// The header's fixed fields: texts, lists and core lengths (u64 each), the
/// lists' and the core's CRC-32 and the header's (u32 each).
const FIXED: usize = 36;

/// The bytes `write` writes from position `at`, from a dry run that only
/// counts (so a part's space can be allocated ahead).
fn dry_len(
    at: u64,
    write: impl FnOnce(&mut Out<std::io::Sink>) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut dry = Out {
        w: std::io::sink(),
        at,
        crc: crc32fast::Hasher::new(),
        hashing: false,
    };
    write(&mut dry)?;
    Ok(dry.at - at)
}

/// Concepts whose texts one `writev` writes: two slices each, well under
/// the 1,024 slices a call may take.
pub(super) const TEXT_GROUP: usize = 256;

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
/// Whether the space is allocated.
pub(super) fn preallocate(file: &File, at: u64, len: u64) -> bool {
    #[cfg(target_os = "linux")]
    {
        rustix::fs::fallocate(file, rustix::fs::FallocateFlags::KEEP_SIZE, at, len).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, at, len);
        false
    }
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

fn dirs_out<W: Write>(out: &mut Out<W>, dirs: &[DirListing<'_>]) -> std::io::Result<()> {
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

/// The index's first part: the per-field index, the tags (sorted) and the
/// ordinal ranks.
fn head_out<W: Write>(
    p: &mut Out<W>,
    fields: &[FieldIndex; 3],
    tags: &[(&String, &[u32])],
    ordinal: &[u32],
) -> std::io::Result<()> {
    for f in fields {
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

/// The index's second part: the BM25F index but its postings (in the
/// lists section).
fn bm25f_out<W: Write>(p: &mut Out<W>, b: &Bm25fIndex) -> std::io::Result<()> {
    p.array::<u8>(&b.vocab)?;
    p.array::<u32>(&b.token_starts)?;
    p.array::<u64>(&b.starts)?;
    p.array::<u32>(&b.firsts)?;
    p.array::<u32>(&b.lasts)?;
    p.array::<u32>(&b.far_tokens)?;
    p.array::<u64>(&b.far_starts)?;
    p.array::<u32>(&b.far_docs)?;
    p.array::<u64>(&b.head_dir)?;
    p.array::<u32>(&b.wide_tokens)?;
    p.array::<u64>(&b.wide_starts)?;
    p.array::<u16>(&b.wide_tfs)?;
    p.array::<u32>(&b.lengths)?;
    b.totals.iter().try_for_each(|&t| p.u64(t))?;
    p.array::<u16>(&b.max_tf)?;
    p.array::<u32>(&b.min_len)?;
    p.array::<u32>(&b.long_tokens)?;
    p.array::<u64>(&b.block_starts)?;
    p.array::<u32>(&b.block_last)?;
    p.array::<u16>(&b.block_max_tf)?;
    p.array::<u32>(&b.block_min_len)?;
    Ok(())
}

/// `dirs` as a cache file records them (for the tests of the listings).
#[cfg(test)]
pub(super) fn encode_listings(dirs: &[DirListing<'_>]) -> Vec<u8> {
    let mut out = Out {
        w: Vec::new(),
        at: 0,
        crc: crc32fast::Hasher::new(),
        hashing: false,
    };
    dirs_out(&mut out, dirs).expect("writing to memory");
    out.w
}
