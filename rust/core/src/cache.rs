//! The persistent cache of a bundle's parsed files (issue 6, step 1): one
//! versioned, checksummed file per bundle holding, for every concept file,
//! its id, the size and modification time it was read at, its diagnostics and
//! its parsed concept. Reopening a bundle re-reads only the files whose size
//! or modification time differ (or that are new); everything else comes from
//! here. The file also holds the index and the ordinal ranks, used only when
//! every file matched; otherwise the index is rebuilt in memory.
//!
//! Layout (little-endian): `MAGIC`, format `u32`, okfast version, the bundle
//! root, payload length `u64`, CRC-32 of the payload `u32`, payload (the
//! entry count, the instant the cache was written in ns since the epoch, the
//! entries). A file that is truncated, has
//! another magic, format or version, another root, or a payload whose
//! checksum or structure is wrong is rejected as a whole, never partly used.

use crate::concept::{Actor, Concept, Governance, Read, Status, TrustTier};
use crate::diagnostic::{Code, Diagnostic};
use crate::index::{FieldIndex, Index, NOT_DENSE};
use crate::trigram::Trigrams;
use rustc_hash::FxHashMap;

const MAGIC: &[u8; 8] = b"OKFASTC\0";
/// Bump whenever the payload's layout or the meaning of a field changes.
pub const FORMAT: u32 = 1;
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A file's size and modification time in ns — [`crate::bundle`]'s stamp.
pub type FileStamp = (u64, u128);

/// One cached file: what reading it produced, and the stamp it was read at.
pub struct Entry {
    pub id: String,
    pub stamp: FileStamp,
    pub read: Read,
}

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

/// A decoded cache: its entries in the order written (id order) and when it
/// was written.
pub struct Decoded {
    pub written_ns: u128,
    pub entries: Vec<Entry>,
    /// Where the saved index starts in the file, when one was saved: it is
    /// decoded ([`decode_index`]) only when every file came from the cache.
    pub index_at: Option<usize>,
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u128(&mut self, v: u128) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    fn strs(&mut self, v: &[String]) {
        self.u32(v.len() as u32);
        for s in v {
            self.str(s);
        }
    }
    fn actor(&mut self, a: &Actor) {
        self.opt(a.by.as_deref());
        self.opt(a.at.as_deref());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v);
    }
    fn u32s(&mut self, v: &[u32]) {
        self.u64(v.len() as u64);
        self.0.reserve(v.len() * 4);
        for x in v {
            self.0.extend_from_slice(&x.to_le_bytes());
        }
    }
    fn u64s(&mut self, v: &[u64]) {
        self.u64(v.len() as u64);
        self.0.reserve(v.len() * 8);
        for x in v {
            self.0.extend_from_slice(&x.to_le_bytes());
        }
    }
}

/// Serialise `files` — `(id, stamp, concept, diagnostics)` in id order —
/// for `root`, stamped as written at `written_ns`.
pub fn encode<'a>(
    root: &str,
    written_ns: u128,
    files: impl Iterator<Item = (&'a str, FileStamp, Option<&'a Concept>, &'a [Diagnostic])>,
    index: Option<(&Index, &[u32])>,
) -> Vec<u8> {
    let mut p = Writer(Vec::new());
    let mut n = 0u32;
    p.u32(0); // the count, patched below
    p.u128(written_ns); // inside the checksum: it decides which files are trusted
    for (id, (size, mtime), concept, diags) in files {
        n += 1;
        p.str(id);
        p.u64(size);
        p.u128(mtime);
        p.u32(diags.len() as u32);
        for d in diags {
            let code = Code::ALL.iter().position(|c| *c == d.code).unwrap_or(0);
            p.u8(code as u8);
            p.str(&d.message);
            p.str(&d.path);
        }
        match concept {
            None => p.u8(0),
            Some(c) => {
                p.u8(1);
                concept_out(&mut p, c);
            }
        }
    }
    match index {
        None => p.u8(0),
        Some((index, ordinal)) => {
            p.u8(1);
            index_out(&mut p, index, ordinal);
        }
    }
    p.0[..4].copy_from_slice(&n.to_le_bytes());
    let mut out = Writer(Vec::with_capacity(p.0.len() + 64));
    out.0.extend_from_slice(MAGIC);
    out.u32(FORMAT);
    out.str(VERSION);
    out.str(root);
    out.u64(p.0.len() as u64);
    out.u32(crc32fast::hash(&p.0));
    out.0.extend_from_slice(&p.0);
    out.0
}

fn concept_out(p: &mut Writer, c: &Concept) {
    p.opt(c.kind.as_deref());
    p.opt(c.title.as_deref());
    p.opt(c.description.as_deref());
    p.strs(&c.tags);
    p.opt(c.resource.as_deref());
    p.u8(c.status as u8);
    p.u8(c.status_known as u8);
    match c.stale_after {
        None => p.u8(0),
        Some(t) => {
            p.u8(1);
            p.u64(t as u64);
        }
    }
    match &c.generated {
        None => p.u8(0),
        Some(a) => {
            p.u8(1);
            p.actor(a);
        }
    }
    p.u32(c.verified.len() as u32);
    for a in &c.verified {
        p.actor(a);
    }
    p.u8(c.trust_tier as u8);
    p.opt(c.authority.as_deref());
    match &c.governance {
        None => p.u8(0),
        Some(g) => {
            p.u8(1);
            p.strs(&g.supersedes);
            p.strs(&g.superseded_by);
            p.strs(&g.conflicts_with);
        }
    }
    p.str(&c.body);
    p.str(&c.frontmatter_src);
}

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
    fn str(&mut self) -> R<String> {
        let n = self.u32()? as usize;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| Rejected::Corrupt("invalid UTF-8".into()))
    }
    fn flag(&mut self) -> R<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            x => Err(Rejected::Corrupt(format!("flag {x}"))),
        }
    }
    fn opt(&mut self) -> R<Option<String>> {
        Ok(if self.flag()? {
            Some(self.str()?)
        } else {
            None
        })
    }
    fn strs(&mut self) -> R<Vec<String>> {
        let n = self.u32()? as usize;
        // Each string needs at least its 4-byte length: bound the allocation.
        if n > (self.b.len() - self.at) / 4 {
            return Err(Rejected::Truncated);
        }
        (0..n).map(|_| self.str()).collect()
    }
    fn len(&mut self, width: usize) -> R<usize> {
        let n = usize::try_from(self.u64()?).map_err(|_| Rejected::Truncated)?;
        if n.checked_mul(width)
            .is_none_or(|b| b > self.b.len() - self.at)
        {
            return Err(Rejected::Truncated);
        }
        Ok(n)
    }
    fn bytes(&mut self) -> R<Vec<u8>> {
        let n = self.len(1)?;
        Ok(self.take(n)?.to_vec())
    }
    fn u32s(&mut self) -> R<Vec<u32>> {
        let n = self.len(4)?;
        let raw = self.take(n * 4)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
    fn u64s(&mut self) -> R<Vec<u64>> {
        let n = self.len(8)?;
        let raw = self.take(n * 8)?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }
    fn actor(&mut self) -> R<Actor> {
        Ok(Actor {
            by: self.opt()?,
            at: self.opt()?,
        })
    }
}

/// Parse a cache file written by [`encode`] for `root`.
pub fn decode(bytes: &[u8], root: &str) -> Result<Decoded, Rejected> {
    let mut h = Reader { b: bytes, at: 0 };
    if h.take(MAGIC.len()).map_err(|_| Rejected::Truncated)? != MAGIC {
        return Err(Rejected::Foreign("another program (wrong magic)".into()));
    }
    let format = h.u32()?;
    let version = h.str()?;
    if format != FORMAT || version != VERSION {
        return Err(Rejected::Foreign(format!(
            "okfast {version} (cache format {format}; this is {VERSION}, format {FORMAT})"
        )));
    }
    if h.str()? != root {
        return Err(Rejected::Foreign("another bundle root".into()));
    }
    let len = h.u64()? as usize;
    let crc = h.u32()?;
    let payload = h.take(len)?;
    if h.at != bytes.len() {
        return Err(Rejected::Corrupt("trailing bytes".into()));
    }
    if crc32fast::hash(payload) != crc {
        return Err(Rejected::Checksum);
    }
    let mut p = Reader { b: payload, at: 0 };
    let n = p.u32()? as usize;
    let written_ns = p.u128()?;
    let mut entries = Vec::with_capacity(n.min(payload.len() / 16));
    for _ in 0..n {
        let id = p.str()?;
        let stamp = (p.u64()?, p.u128()?);
        let nd = p.u32()? as usize;
        let mut diagnostics = Vec::with_capacity(nd.min(64));
        for _ in 0..nd {
            let code = *Code::ALL
                .get(p.u8()? as usize)
                .ok_or_else(|| Rejected::Corrupt("diagnostic code".into()))?;
            diagnostics.push(Diagnostic::new(code, p.str()?, p.str()?));
        }
        let concept = if p.flag()? {
            Some(std::sync::Arc::new(concept_in(&mut p, &id)?))
        } else {
            None
        };
        entries.push(Entry {
            id,
            stamp,
            read: Read {
                concept,
                diagnostics,
            },
        });
    }
    let index_at = if p.flag()? {
        Some(bytes.len() - payload.len() + p.at)
    } else if p.at != payload.len() {
        return Err(Rejected::Corrupt("payload longer than its entries".into()));
    } else {
        None
    };
    Ok(Decoded {
        written_ns,
        entries,
        index_at,
    })
}

fn concept_in(p: &mut Reader<'_>, id: &str) -> R<Concept> {
    let kind = p.opt()?;
    let title = p.opt()?;
    let description = p.opt()?;
    let tags = p.strs()?;
    let resource = p.opt()?;
    let status = match p.u8()? {
        0 => Status::Draft,
        1 => Status::Stable,
        2 => Status::Deprecated,
        x => return Err(Rejected::Corrupt(format!("status {x}"))),
    };
    let status_known = p.flag()?;
    let stale_after = if p.flag()? {
        Some(p.u64()? as i64)
    } else {
        None
    };
    let generated = if p.flag()? { Some(p.actor()?) } else { None };
    let nv = p.u32()? as usize;
    let verified = (0..nv).map(|_| p.actor()).collect::<R<Vec<_>>>()?;
    let trust_tier = match p.u8()? {
        0 => TrustTier::Unverified,
        1 => TrustTier::MachineConfirmed,
        2 => TrustTier::HumanReviewed,
        x => return Err(Rejected::Corrupt(format!("trust tier {x}"))),
    };
    let authority = p.opt()?;
    let governance = if p.flag()? {
        Some(Box::new(Governance {
            supersedes: p.strs()?,
            superseded_by: p.strs()?,
            conflicts_with: p.strs()?,
        }))
    } else {
        None
    };
    Ok(Concept {
        id: id.to_string(),
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
        body: p.str()?,
        frontmatter_src: p.str()?.into_boxed_str(),
    })
}

fn index_out(p: &mut Writer, index: &Index, ordinal: &[u32]) {
    for f in &index.fields {
        p.bytes(&f.vocab);
        p.u32s(&f.word_starts);
        p.u64s(&f.post_starts);
        p.u32s(&f.postings);
        p.u32s(&f.dense_slot);
        p.u64s(&f.dense_bits);
        p.u64(f.bitset_words as u64);
        p.u32s(&f.trigrams.keys);
        p.u32s(&f.trigrams.starts);
        p.u32s(&f.trigrams.words);
    }
    let mut tags: Vec<(&String, &Vec<u32>)> = index.tags.iter().collect();
    tags.sort_unstable(); // the map's order is not the file's: keep it deterministic
    p.u64(tags.len() as u64);
    for (t, list) in tags {
        p.str(t);
        p.u32s(list);
    }
    p.u32s(ordinal);
}

/// The index saved at `at` by [`encode`], checked against the `n` concepts
/// it must describe: any inconsistency (which the checksum makes a sign of
/// tampering, not of disk damage) rejects it rather than risk a bad lookup.
pub fn decode_index(bytes: &[u8], at: usize, n: usize) -> Result<(Index, Vec<u32>), Rejected> {
    let mut p = Reader { b: bytes, at };
    let bad = |what: &str| Rejected::Corrupt(format!("saved index: {what}"));
    let mut fields: Vec<FieldIndex> = Vec::with_capacity(3);
    for _ in 0..3 {
        let f = FieldIndex {
            vocab: p.bytes()?,
            word_starts: p.u32s()?,
            post_starts: p.u64s()?,
            postings: p.u32s()?,
            dense_slot: p.u32s()?,
            dense_bits: p.u64s()?,
            bitset_words: usize::try_from(p.u64()?).map_err(|_| bad("bitset size"))?,
            trigrams: Trigrams {
                keys: p.u32s()?,
                starts: p.u32s()?,
                words: p.u32s()?,
            },
        };
        let words = f.word_starts.len().saturating_sub(1);
        let slots = f.dense_slot.iter().filter(|&&s| s != NOT_DENSE).count();
        let ok = f.bitset_words == n.div_ceil(64)
            && !f.word_starts.is_empty()
            && f.word_starts.windows(2).all(|w| w[0] <= w[1])
            && f.word_starts.last().map(|&e| e as usize) == Some(f.vocab.len())
            && f.post_starts.len() == words + 1
            && f.post_starts.windows(2).all(|w| w[0] <= w[1])
            && f.post_starts.last().map(|&e| e as usize) == Some(f.postings.len())
            && f.postings.iter().all(|&x| (x as usize) < n)
            && f.dense_slot.len() == words
            && f.dense_slot
                .iter()
                .all(|&s| s == NOT_DENSE || (s as usize) < slots)
            && f.dense_bits.len() == slots * f.bitset_words
            && f.trigrams.starts.len() == f.trigrams.keys.len() + 1
            && f.trigrams.starts.windows(2).all(|w| w[0] <= w[1])
            && f.trigrams.starts.last().map(|&e| e as usize) == Some(f.trigrams.words.len())
            && f.trigrams.words.iter().all(|&w| (w as usize) < words);
        if !ok {
            return Err(bad("inconsistent with the concepts"));
        }
        fields.push(f);
    }
    let n_tags = p.len(12)?;
    let mut tags = FxHashMap::default();
    for _ in 0..n_tags {
        let t = p.str()?;
        let list = p.u32s()?;
        if list.iter().any(|&x| x as usize >= n) {
            return Err(bad("tag posting out of range"));
        }
        tags.insert(t, list);
    }
    let ordinal = p.u32s()?;
    if ordinal.len() != n || ordinal.iter().any(|&x| x as usize >= n) || p.at != bytes.len() {
        return Err(bad("ordinal ranks"));
    }
    let fields: [FieldIndex; 3] = fields.try_into().map_err(|_| bad("fields"))?;
    Ok((Index { fields, tags }, ordinal))
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
                (id, (s.len() as u64, 1_000 + i as u128), r)
            })
            .collect()
    }

    fn concepts(files: &[(String, FileStamp, Read)]) -> Vec<std::sync::Arc<Concept>> {
        files.iter().filter_map(|f| f.2.concept.clone()).collect()
    }

    fn encoded(files: &[(String, FileStamp, Read)]) -> Vec<u8> {
        let cs = concepts(files);
        let index = Index::build(&cs);
        let ordinal: Vec<u32> = (0..cs.len() as u32).collect();
        encode(
            "/root",
            42,
            files.iter().map(|(id, st, r)| {
                (
                    id.as_str(),
                    *st,
                    r.concept.as_deref(),
                    r.diagnostics.as_slice(),
                )
            }),
            Some((&index, &ordinal)),
        )
    }

    #[test]
    fn the_saved_index_round_trips_and_is_checked() {
        let files = sample();
        let cs = concepts(&files);
        let bytes = encoded(&files);
        let d = decode(&bytes, "/root").unwrap();
        let at = d.index_at.unwrap();
        let (ix, ord) = decode_index(&bytes, at, cs.len()).unwrap();
        let built = Index::build(&cs);
        for (a, b) in ix.fields.iter().zip(&built.fields) {
            assert_eq!(a.vocab, b.vocab);
            assert_eq!(a.word_starts, b.word_starts);
            assert_eq!(a.postings, b.postings);
            assert_eq!(a.dense_bits, b.dense_bits);
            assert_eq!(a.trigrams.words, b.trigrams.words);
        }
        assert_eq!(ix.tags, built.tags);
        assert_eq!(ord, (0..cs.len() as u32).collect::<Vec<_>>());
        // Describing another number of concepts is an inconsistency.
        assert!(decode_index(&bytes, at, cs.len() + 64).is_err());
    }

    #[test]
    fn round_trip() {
        let files = sample();
        let d = decode(&encoded(&files), "/root").unwrap();
        assert_eq!(d.written_ns, 42);
        assert_eq!(d.entries.len(), files.len());
        for (e, (id, st, r)) in d.entries.iter().zip(&files) {
            assert_eq!((&e.id, e.stamp), (id, *st));
            assert_eq!(e.read.diagnostics, r.diagnostics);
            let (a, b) = (e.read.concept.as_ref(), r.concept.as_ref());
            assert_eq!(a.is_some(), b.is_some());
            if let (Some(a), Some(b)) = (a, b) {
                assert_eq!(format!("{a:?}"), format!("{b:?}"));
            }
        }
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_rejected() {
        let bytes = encoded(&sample());
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n], "/root").is_err(), "prefix {n}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            assert!(decode(&b, "/root").is_err(), "byte {i}");
        }
        assert!(matches!(
            decode(&bytes, "/other"),
            Err(Rejected::Foreign(_))
        ));
    }
}
