//! Carrying records and texts of an open cache file into a new one as they
//! are (a rewrite after a splice, docs/spec.md §9.5): a record's bytes
//! copied with only where its texts are changed, and the texts copied in
//! runs, so nothing is decoded, encoded or checksummed again.

use std::io::{Read, Seek, SeekFrom, Write};

use super::decode::Reader;
use super::read::CacheFile;
use super::write::{Out, Sink};
use super::Rejected;

/// The bytes of a concept record's last part: where its texts are (offset
/// u64), their lengths (u32 each) and their CRC-32 (mod.rs).
const TEXT_REF: usize = 20;

/// One record of an open cache file as written.
pub struct RawRecord<'a> {
    pub bytes: &'a [u8],
    /// For a record holding a concept, where its texts are: their offset
    /// from the texts' start and their length.
    pub text: Option<(u64, u64)>,
}

impl CacheFile {
    /// Record `i` as written: its bytes (up to the next record, or to the
    /// directories after the last one) and where its concept's texts are.
    pub fn raw_record(&self, i: usize) -> Result<RawRecord<'_>, Rejected> {
        let (at, end) = self.record_span(i)?;
        let bytes = self
            .core()
            .get(at..end)
            .ok_or_else(|| Rejected::Corrupt("record offsets".into()))?;
        let (mut p, _, _) = self.head(i)?;
        if !p.flag()? {
            return Ok(RawRecord { bytes, text: None });
        }
        let mut t = Reader {
            b: bytes,
            at: bytes
                .len()
                .checked_sub(TEXT_REF)
                .ok_or(Rejected::Truncated)?,
        };
        let (from, front, body) = (t.u64()?, t.u32()?, t.u32()?);
        let len = u64::from(front) + u64::from(body);
        self.check_text(from, len)?;
        Ok(RawRecord {
            bytes,
            text: Some((from, len)),
        })
    }
}

impl Sink {
    /// Append texts of `from` as they are: each run `(offset from its texts'
    /// start, length)` in turn, with no concept's texts split between runs.
    pub fn copy_texts(&mut self, from: &CacheFile, runs: &[(u64, u64)]) -> std::io::Result<()> {
        if self.lists.is_some() {
            return Err(std::io::Error::other("cache texts after the lists"));
        }
        self.out.w.flush()?;
        let mut file = from.texts_file()?;
        let base = from.texts_base();
        for &(at, len) in runs {
            from.check_text(at, len)
                .map_err(|r| std::io::Error::other(r.to_string()))?;
            file.seek(SeekFrom::Start(base + at))?;
            let n = std::io::copy(&mut (&mut file).take(len), self.out.w.get_mut())?;
            if n != len {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.out.at += len;
        }
        Ok(())
    }
}

/// Write `bytes`, a concept record of another cache file, with its texts
/// now at `text_at` (or as it is, for a record without a concept).
pub(super) fn record_out<W: Write>(
    out: &mut Out<W>,
    bytes: &[u8],
    text_at: Option<u64>,
) -> std::io::Result<()> {
    match text_at {
        Some(at) if bytes.len() >= TEXT_REF => {
            let ref_at = bytes.len() - TEXT_REF;
            out.raw(&bytes[..ref_at])?;
            out.raw(&at.to_le_bytes())?;
            out.raw(&bytes[ref_at + 8..])
        }
        _ => out.raw(bytes),
    }
}
