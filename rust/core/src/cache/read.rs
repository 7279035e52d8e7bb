//! Reading a cache file: mapped, checked whole, and used in place.

use std::fs::{File, FileTimes};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use memmap2::Mmap;

use crate::array::Map;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::decode::{Reader, R};
use super::listings::Listings;
use super::lists::LISTS_ALIGN;
use super::{Rejected, FORMAT, MAGIC, TAIL, VERSION};
use crate::array::Array;
use crate::concept::source::{SourceText, TextStore};
use crate::concept::stale::is_instant;
use crate::concept::{Actor, Concept, ConceptRow, FileOutcome, Governance, Status, TrustTier};
use crate::diagnostic::{Code, Diagnostic};
use crate::fs::stamp::FileStamp;
use crate::index::bm25f::Bm25fIndex;
use crate::index::trigram::Trigrams;
use crate::index::{FieldIndex, Index, NOT_DENSE};
use crate::text::analyze::Language;

/// A concept record's fields, borrowed from the mapping: parsed to check a
/// record and take its [`ConceptRow`], and again to build the concept when it
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
pub struct CacheFile {
    map: Arc<Map>,
    store: Arc<TextStore>,
    /// Where the core starts in the file (8-aligned).
    core_at: usize,
    core_len: usize,
    /// Where the lists section (the BM25F postings) is in the file.
    lists_at: usize,
    lists_len: usize,
    texts_len: u64,
    pub written_ns: u128,
    /// Each file's record, as an offset into the core.
    records: Array<u64>,
    index_at: usize,
    dirs_at: usize,
}

/// Where a checked cache file's parts are ([`CacheFile::check`]).
struct Layout {
    core_at: usize,
    core_len: usize,
    lists_at: usize,
    lists_len: usize,
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

/// Bytes per parallel slice of a checksum.
const CRC_SLICE: usize = 16 << 20;

/// CRC-32 of the `len` bytes at `at` in `file`, whose map is `b`: read
/// with `pread` into a small buffer rather than through the map, so the
/// check maps no page of the core (every page the map touches stays mapped,
/// counted in the process's memory and paid for with a page fault each; a
/// search later maps only the pages it reads). In parallel slices combined
/// in order. Through the map where reading at an offset is not at hand.
fn crc_of_core(file: &File, b: &[u8], at: usize, len: usize) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        const BUF: usize = 1 << 20;
        let parts: Option<Vec<crc32fast::Hasher>> = (0..len.div_ceil(CRC_SLICE))
            .into_par_iter()
            .map_init(
                || vec![0u8; BUF],
                |buf, k| {
                    let mut h = crc32fast::Hasher::new();
                    let (mut from, to) = (k * CRC_SLICE, ((k + 1) * CRC_SLICE).min(len));
                    while from < to {
                        let n = BUF.min(to - from);
                        file.read_exact_at(&mut buf[..n], (at + from) as u64).ok()?;
                        h.update(&buf[..n]);
                        from += n;
                    }
                    Some(h)
                },
            )
            .collect();
        if let Some(parts) = parts {
            return combined(&parts).finalize();
        }
    }
    crc_parallel(&b[at..at + len])
}

/// One hasher of consecutive slices' hashers, in order.
fn combined(parts: &[crc32fast::Hasher]) -> crc32fast::Hasher {
    let mut all = crc32fast::Hasher::new();
    for p in parts {
        all.combine(p);
    }
    all
}

/// CRC-32 of `b`, in parallel slices combined in order.
fn crc_parallel(b: &[u8]) -> u32 {
    hasher_parallel(b).finalize()
}

/// A hasher fed `b`, in parallel slices combined in order (to go on
/// hashing what follows `b`, or to combine with what precedes it).
pub(super) fn hasher_parallel(b: &[u8]) -> crc32fast::Hasher {
    let parts: Vec<crc32fast::Hasher> = b
        .par_chunks(CRC_SLICE)
        .map(|s| {
            let mut h = crc32fast::Hasher::new();
            h.update(s);
            h
        })
        .collect();
    combined(&parts)
}

impl CacheFile {
    /// Map the cache file at `path` and check it was written for `root` by
    /// this okfast, is whole, and has an intact header and core.
    pub fn open(path: &Path, root: &str, analyzer: &str) -> Result<CacheFile, OpenError> {
        if cfg!(target_endian = "big") {
            return Err(Rejected::Foreign("a little-endian machine".into()).into());
        }
        let (file, last_used) = open_regular(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => OpenError::Missing,
            _ => OpenError::Unreadable(e),
        })?;
        // SAFETY: the file is only ever replaced by rename, never changed in
        // place (module docs); every view into the map is bounds-checked.
        let map = unsafe { Mmap::map(&file) }.map_err(OpenError::Unreadable)?;
        let l = CacheFile::check(&map, &file, root, analyzer)?;
        mark_used(&file, last_used);
        let (core_at, core_len) = (l.core_at, l.core_len);
        let map = Arc::new(Map::Read(map));
        let n = (core_len - TAIL) / 8; // an upper bound, checked by `mapped`
        let mut r = Reader {
            b: &map[core_at..],
            at: l.table_at,
        };
        let n = usize::try_from(r.u64()?)
            .ok()
            .filter(|&k| k <= n)
            .ok_or(Rejected::Truncated)?;
        let records = Array::<u64>::mapped(&map, core_at + r.at, n)
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
        Ok(CacheFile {
            map,
            store,
            core_at,
            core_len,
            lists_at: l.lists_at,
            lists_len: l.lists_len,
            texts_len: l.texts_len,
            written_ns: l.written_ns,
            records,
            index_at: l.index_at,
            dirs_at: l.dirs_at,
        })
    }

    /// Check the header and the core's checksum: where the core and the
    /// texts are, when the file was written, where its tables are.
    fn check(b: &[u8], file: &File, root: &str, analyzer: &str) -> R<Layout> {
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
                "okfast {} (this is {VERSION})",
                shown(version)
            )));
        }
        if h.str_ref()? != root {
            return Err(Rejected::Foreign("another bundle root".into()));
        }
        let written_for = h.str_ref()?;
        if written_for != analyzer {
            return Err(Rejected::Foreign(format!(
                "a load analysed for another language ({}; this is {analyzer})",
                shown(written_for)
            )));
        }
        let texts_len = h.u64()?;
        let lists_len = usize::try_from(h.u64()?).map_err(|_| Rejected::Truncated)?;
        let core_len = usize::try_from(h.u64()?).map_err(|_| Rejected::Truncated)?;
        let lists_crc = h.u32()?;
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
        let lists_at = texts_end.next_multiple_of(LISTS_ALIGN as usize);
        let core_at = lists_at
            .checked_add(lists_len)
            .filter(|&e| e <= b.len())
            .ok_or(Rejected::Truncated)?
            .next_multiple_of(8);
        match core_at.checked_add(core_len) {
            Some(end) if end == b.len() => {}
            Some(end) if end > b.len() => return Err(Rejected::Truncated),
            _ => return Err(Rejected::Corrupt("trailing bytes".into())),
        }
        let padding =
            |from: usize, to: usize| b.get(from..to).is_some_and(|p| p.iter().all(|&x| x == 0));
        if !padding(texts_end, lists_at) || !padding(lists_at + lists_len, core_at) {
            return Err(Rejected::Corrupt("padding".into()));
        }
        let core = &b[core_at..];
        if crc_of_core(file, b, lists_at, lists_len) != lists_crc
            || crc_of_core(file, b, core_at, core_len) != core_crc
        {
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
            lists_at,
            lists_len,
            texts_base,
            texts_len,
            written_ns,
            table_at,
            index_at,
            dirs_at,
        })
    }

    /// Where the texts are in the file (for the tests of damage).
    #[cfg(test)]
    pub(super) fn text_section(&self) -> std::ops::Range<usize> {
        self.store.base as usize..(self.store.base + self.texts_len) as usize
    }

    pub(super) fn core(&self) -> &[u8] {
        &self.map[self.core_at..self.core_at + self.core_len]
    }

    /// Where the texts section starts in the file.
    pub(super) fn texts_base(&self) -> u64 {
        self.store.base
    }

    /// A handle of the file, for copying its texts. It shares the file's
    /// offset with this file's text store: on Unix the store reads at a
    /// position (`pread`), which ignores it; on Windows its reads move it,
    /// and each names its own position, so a copy that seeks first is not
    /// misled either way (and no text of this store is read meanwhile: the
    /// loading thread copies them).
    pub(super) fn texts_file(&self) -> std::io::Result<File> {
        self.store.file.try_clone()
    }

    /// That texts of `len` bytes at `at` (from the texts' start) are inside
    /// the texts section.
    pub(super) fn check_text(&self, at: u64, len: u64) -> R<()> {
        let end = at.checked_add(len).ok_or(Rejected::Truncated)?;
        if end > self.texts_len {
            return Err(Rejected::Corrupt("text out of range".into()));
        }
        Ok(())
    }

    /// Where record `i` is in the core: from its offset to the next
    /// record's, or to the directories after the last one.
    pub(super) fn record_span(&self, i: usize) -> R<(usize, usize)> {
        let at = *self.records.get(i).ok_or(Rejected::Truncated)? as usize;
        let end = match self.records.get(i + 1) {
            Some(&next) => next as usize,
            None => self.dirs_at,
        };
        if end < at {
            return Err(Rejected::Corrupt("record offsets".into()));
        }
        Ok((at, end))
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether this is the file `other` has open (the same device and
    /// inode), not one that replaced it under the same name.
    pub fn is_open_as(&self, other: &File) -> bool {
        match (self.store.file.metadata(), other.metadata()) {
            (Ok(a), Ok(b)) => crate::concept::source::same_file(&a, &b),
            _ => false,
        }
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

    /// [`CacheFile::file`] with the id's bytes as stored (not checked to be
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
    pub fn read(&self, i: usize) -> Result<FileOutcome, Rejected> {
        let (mut p, id, diagnostics) = self.head(i)?;
        let concept = if p.flag()? {
            let f = self.fields(&mut p)?;
            Some(self.concept_of(id, f))
        } else {
            None
        };
        Ok(FileOutcome {
            concept,
            diagnostics,
        })
    }

    /// File `i`'s diagnostics and, when it holds a concept, that concept's
    /// [`ConceptRow`]: the record is checked exactly as [`CacheFile::concept`]
    /// decodes it, so a record that skims decodes, without keeping anything.
    pub fn skim(&self, i: usize) -> Result<(Vec<Diagnostic>, Option<ConceptRow>), Rejected> {
        let (mut p, _, diagnostics) = self.head(i)?;
        let columns = if p.flag()? {
            let f = self.fields(&mut p)?;
            Some(ConceptRow::new(
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
    pub(super) fn head(&self, i: usize) -> R<(Reader<'_>, &str, Vec<Diagnostic>)> {
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
            let t = p.u64()? as i64;
            if !is_instant(t) {
                return Err(Rejected::Corrupt("a stale_after out of range".into()));
            }
            Some(t)
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
        self.check_text(at, u64::from(frontmatter_len) + u64::from(body_len))?;
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
            source: SourceText::Stored {
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
    pub fn index(&self, language: Option<Language>) -> Result<(Index, Array<u32>), Rejected> {
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
        let mut tags: FxHashMap<String, Array<u32>> = FxHashMap::default();
        let mut last: Option<&str> = None;
        for _ in 0..n_tags {
            let t = p.str_ref()?;
            // The folded tags are written sorted, each once
            // (docs/cache-format.md): a repeated one would replace the first.
            if last.is_some_and(|l| l >= t) {
                return Err(bad("tags not sorted"));
            }
            last = Some(t);
            p.pad()?;
            tags.insert(t.to_string(), self.array(&mut p)?);
        }
        let ordinal: Array<u32> = self.array(&mut p)?;
        let n = ordinal.len();
        if !is_permutation(&ordinal) {
            return Err(bad("ordinal ranks"));
        }
        let bm25f = self.bm25f(&mut p, n, language)?;
        if p.at != core.len() - TAIL {
            return Err(bad("trailing bytes"));
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
        Ok((
            Index {
                fields,
                bm25f,
                tags,
            },
            ordinal,
        ))
    }

    /// The saved BM25F index at `p`, checked to be well formed for `n`
    /// concepts (docs/spec.md §12).
    fn bm25f(&self, p: &mut Reader<'_>, n: usize, language: Option<Language>) -> R<Bm25fIndex> {
        let bad = |what: &str| Rejected::Corrupt(format!("saved BM25F index: {what}"));
        // The postings, in the lists section.
        let mut q = Reader {
            b: &self.map[self.lists_at..self.lists_at + self.lists_len],
            at: 0,
        };
        let near = self.array_in(&mut q, self.lists_at)?;
        let body = self.array_in(&mut q, self.lists_at)?;
        let head_words = self.array_in(&mut q, self.lists_at)?;
        if q.at != self.lists_len {
            return Err(bad("lists section"));
        }
        let b = Bm25fIndex {
            language,
            vocab: self.array(p)?,
            token_starts: self.array(p)?,
            starts: self.array(p)?,
            near,
            firsts: self.array(p)?,
            lasts: self.array(p)?,
            far_tokens: self.array(p)?,
            far_starts: self.array(p)?,
            far_docs: self.array(p)?,
            body,
            head_dir: self.array(p)?,
            head_words,
            wide_tokens: self.array(p)?,
            wide_starts: self.array(p)?,
            wide_tfs: self.array(p)?,
            lengths: self.array(p)?,
            totals: [p.u64()?, p.u64()?, p.u64()?, p.u64()?],
            max_tf: self.array(p)?,
            min_len: self.array(p)?,
            long_tokens: self.array(p)?,
            block_starts: self.array(p)?,
            block_last: self.array(p)?,
            block_max_tf: self.array(p)?,
            block_min_len: self.array(p)?,
            derived: Default::default(),
        };
        b.check(n).map_err(bad)?;
        Ok(b)
    }

    /// The directory listings the file recorded, by prefix.
    pub fn listings(&self) -> Result<Listings<'_>, Rejected> {
        Listings::read(&self.core()[self.dirs_at..])
    }

    /// The array at `p` in the core as a view (its length, items, pad).
    fn array<T: bytemuck::Pod>(&self, p: &mut Reader<'_>) -> R<Array<T>> {
        self.array_in(p, self.core_at)
    }

    /// The array at `p`, reading a part of the file that starts at `base`,
    /// as a view.
    fn array_in<T: bytemuck::Pod>(&self, p: &mut Reader<'_>, base: usize) -> R<Array<T>> {
        let len = usize::try_from(p.u64()?).map_err(|_| Rejected::Truncated)?;
        let at = p.at;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(Rejected::Truncated)?;
        p.take(bytes)?;
        p.pad()?;
        Array::mapped(&self.map, base + at, len).ok_or(Rejected::Truncated)
    }
}

/// Whether a saved field index is well formed for `n` concepts.
pub(super) fn consistent(f: &FieldIndex, n: usize) -> bool {
    let words = f.word_starts.len().saturating_sub(1);
    let slots = f.dense_slot.iter().filter(|&&s| s != NOT_DENSE).count();
    f.bitset_words == n.div_ceil(64)
        // Each word is at least its `\n` and the first starts the vocabulary:
        // a search slices word `w` as `starts[w]..starts[w + 1] - 1` and maps
        // a match's offset to the last word starting at or before it.
        && f.word_starts.first() == Some(&0)
        && f.word_starts.windows(2).all(|w| w[0] < w[1])
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
        && no_bits_past(&f.dense_bits, f.bitset_words, n)
        && f.trigrams.starts.len() == f.trigrams.keys.len() + 1
        && f.trigrams.starts.windows(2).all(|w| w[0] <= w[1])
        && f.trigrams.starts.last().map(|&e| e as usize) == Some(f.trigrams.words.len())
        && f.trigrams.words.par_iter().all(|&w| (w as usize) < words)
}

/// Whether `ranks` holds each of `0..ranks.len()` once: each concept's rank
/// in ordinal order of ids (docs/cache-format.md), which orders the concepts
/// whose scores tie (docs/spec.md §12.10) and is spliced on a refresh.
pub(super) fn is_permutation(ranks: &[u32]) -> bool {
    let mut seen = vec![0u64; ranks.len().div_ceil(64)];
    ranks.iter().all(|&r| {
        let r = r as usize;
        if r >= ranks.len() {
            return false;
        }
        let (word, bit) = (&mut seen[r >> 6], 1u64 << (r & 63));
        let fresh = *word & bit == 0;
        *word |= bit;
        fresh
    })
}

/// Whether no dense bitset (`words` words each) sets a bit for a position
/// at or past `n`: a search reads each set bit as a concept's position.
pub(super) fn no_bits_past(bits: &[u64], words: usize, n: usize) -> bool {
    let tail = n % 64;
    if words == 0 || tail == 0 {
        return true;
    }
    let past = !((1u64 << tail) - 1);
    bits.chunks_exact(words)
        .all(|set| set[words - 1] & past == 0)
}

/// `path` opened for reading when it is a regular file. Opened without
/// blocking, then checked: a FIFO put where a cache file belongs would
/// otherwise hold the load until some writer opened it, forever.
/// How far a cache file's access time may lag its last use: a prune
/// (docs/spec.md §9.9) counts unused days, so an hour is fine enough, and an
/// unchanged reopen changes the file's inode at most hourly.
const USE_MARK: Duration = Duration::from_secs(3600);

/// Record in the file's access time that a load used it (docs/spec.md
/// §9.9): a `noatime` mount never updates that time and `relatime` only
/// daily. `last` is the access time before the file was mapped (which may
/// update it). Best effort: a file whose times this user may not set keeps
/// them.
fn mark_used(file: &File, last: Option<SystemTime>) {
    let now = SystemTime::now();
    // A time ahead of the clock is left alone, as a recent one.
    if last.is_some_and(|t| now.duration_since(t).is_ok_and(|d| d >= USE_MARK)) {
        let _ = file.set_times(FileTimes::new().set_accessed(now));
    }
}

/// The regular file at `path`, opened to read, and its access time.
fn open_regular(path: &Path) -> std::io::Result<(File, Option<SystemTime>)> {
    #[cfg(unix)]
    let file = {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        File::from(rustix::fs::open(path, flags, Mode::empty())?)
    };
    #[cfg(not(unix))]
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok((file, meta.accessed().ok()))
}

/// Text read from a header, for a message: control characters escaped
/// (`\u{8}`), at most 40 characters — a file anyone could have written must
/// not drive a terminal or flood a warning.
pub(crate) fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(40).flat_map(char::escape_debug).collect();
    if text.chars().nth(40).is_some() {
        out.push('…');
    }
    out
}
