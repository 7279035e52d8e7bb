//! A cache file's lists section (docs/cache-format.md): the BM25F
//! postings' three largest arrays, between the texts and the core, made
//! before the index is built so that a build lays them through a mapping of
//! the file (no copy from memory) or, where the file cannot be mapped, the
//! sink writes them from the index; and its checksum.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};

use memmap2::MmapOptions;

use super::read::hasher_parallel;
use super::write::{preallocate, Out, Sink};
use crate::index::bm25f::{Bm25fIndex, ListSizes, ListsLayout, MappedLists};

/// The texts' length, where the lists section is and its length, and
/// whether a build lays it through a mapping (else the sink writes it).
#[derive(Clone, Copy)]
pub(super) struct ListsAt {
    pub(super) texts_len: u64,
    pub(super) at: u64,
    pub(super) len: u64,
    pub(super) mapped: bool,
}

/// The lists section starts on a page, so that a mapping of it starts at
/// its first byte.
pub(super) const LISTS_ALIGN: u64 = 4096;

impl Sink {
    /// End the texts and make the lists section for BM25F postings of
    /// `sizes` (docs/cache-format.md): zeros to the next page, then room
    /// for the three arrays, mapped so that a build lays them in place;
    /// written through the mapping, they reach the file without a copy.
    /// `None` where its space cannot be allocated first (a write through a
    /// mapping that the file system cannot then place is a fault, not an
    /// error) or the file cannot be mapped: [`Sink::index_tail`] then writes
    /// them from the index.
    pub fn lists(&mut self, sizes: ListSizes) -> std::io::Result<Option<MappedLists>> {
        let (at, len) = self.reserve_lists(sizes)?;
        if !preallocate(&self.file, at, len) {
            return Ok(None);
        }
        // SAFETY: the file is this sink's own and new; nothing else writes
        // this range (module docs of `cache`).
        let map = unsafe {
            MmapOptions::new()
                .offset(at)
                .len(len as usize)
                .map_mut(&self.file)
        };
        let lists = map.ok().and_then(|m| MappedLists::new(m, sizes));
        if let Some(l) = &mut self.lists {
            l.mapped = lists.is_some();
        }
        Ok(lists)
    }

    /// [`Sink::lists`] for the postings of `b`, which [`Sink::index_tail`]
    /// writes (not mapped).
    pub fn lists_from(&mut self, b: &Bm25fIndex) -> std::io::Result<()> {
        self.reserve_lists(ListSizes {
            entries: b.body.len(),
            heads: b.head_words.len(),
        })
        .map(|_| ())
    }

    /// End the texts and make room for the lists section of `sizes`: where
    /// it is and its length.
    fn reserve_lists(&mut self, sizes: ListSizes) -> std::io::Result<(u64, u64)> {
        if self.lists.is_some() {
            return Err(std::io::Error::other("cache lists made twice"));
        }
        let out = &mut self.out;
        let texts_len = out.at - self.texts_base;
        let at = out.at.next_multiple_of(LISTS_ALIGN);
        out.raw(&vec![0u8; (at - out.at) as usize])?;
        out.w.flush()?;
        let len = ListsLayout::of(sizes).len as u64;
        self.file.set_len(at + len)?;
        out.w.get_mut().seek(SeekFrom::Start(at + len))?;
        out.at = at + len;
        self.lists = Some(ListsAt {
            texts_len,
            at,
            len,
            mapped: false,
        });
        Ok((at, len))
    }
}

/// The CRC-32 of the lists section holding `b`'s postings: each array as
/// [`Out::array`] writes it, a large one hashed in parallel slices combined
/// in order.
pub(super) fn lists_crc(b: &Bm25fIndex) -> u32 {
    let mut all = crc32fast::Hasher::new();
    let mut array = |items: &[u8], len: usize| {
        all.update(&(len as u64).to_le_bytes());
        all.combine(&hasher_parallel(items));
        all.update(&[0u8; 8][..(8 - items.len() % 8) % 8]);
    };
    array(bytemuck::cast_slice(&b.near), b.near.len());
    array(&b.body, b.body.len());
    array(bytemuck::cast_slice(&b.head_words), b.head_words.len());
    all.finalize()
}

/// Write the lists section holding `b`'s postings at `at` in `file`.
pub(super) fn lists_out(file: &mut File, at: u64, b: &Bm25fIndex) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(at))?;
    let mut out = Out {
        w: BufWriter::with_capacity(1 << 20, file),
        at,
        crc: crc32fast::Hasher::new(),
        hashing: false,
    };
    out.array::<u16>(&b.near)?;
    out.array::<u8>(&b.body)?;
    out.array::<u32>(&b.head_words)?;
    out.w.flush()
}
