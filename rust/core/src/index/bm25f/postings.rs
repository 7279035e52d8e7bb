//! Where a build lays the BM25F lists' three largest arrays — the concepts'
//! offsets (`near`), the frequency bytes (`body`) and the head words — on
//! the heap, or straight into their place in a cache file being written (a
//! writable mapping of its lists section, docs/cache-format.md), so that
//! they are neither held twice nor copied from memory into the file.

use std::sync::Arc;

use memmap2::MmapMut;

use crate::array::{Array, Map};

/// The sizes of the three arrays: one offset and one byte per entry, one
/// word per head entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListSizes {
    pub entries: usize,
    pub heads: usize,
}

/// Where the three arrays' items start in a lists section laid out as a
/// cache file lays out every array (length u64, items, zeros to 8 bytes),
/// one after the other: `near`, `body`, `head_words`; and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListsLayout {
    pub near: usize,
    pub body: usize,
    pub head_words: usize,
    pub len: usize,
}

impl ListsLayout {
    pub fn of(s: ListSizes) -> ListsLayout {
        let near = 8;
        let body = (near + 2 * s.entries).next_multiple_of(8) + 8;
        let head_words = (body + s.entries).next_multiple_of(8) + 8;
        let len = (head_words + 4 * s.heads).next_multiple_of(8);
        ListsLayout {
            near,
            body,
            head_words,
            len,
        }
    }
}

/// A lists section mapped writable, its three length words written, its
/// items zero until laid.
pub struct MappedLists {
    map: MmapMut,
    sizes: ListSizes,
    layout: ListsLayout,
}

impl MappedLists {
    /// `map` as the lists section for `sizes`; `None` when its length is not
    /// theirs.
    pub fn new(mut map: MmapMut, sizes: ListSizes) -> Option<MappedLists> {
        let layout = ListsLayout::of(sizes);
        if map.len() != layout.len || map.as_ptr() as usize % 8 != 0 {
            return None;
        }
        for (at, n) in [
            (layout.near, sizes.entries),
            (layout.body, sizes.entries),
            (layout.head_words, sizes.heads),
        ] {
            map[at - 8..at].copy_from_slice(&(n as u64).to_le_bytes());
        }
        Some(MappedLists { map, sizes, layout })
    }

    /// The three arrays, to be laid.
    pub fn parts(&mut self) -> (&mut [u16], &mut [u8], &mut [u32]) {
        let (l, s) = (self.layout, self.sizes);
        let (front, heads) = self.map.split_at_mut(l.head_words);
        let (near, body) = front.split_at_mut(l.body);
        (
            bytemuck::cast_slice_mut(&mut near[l.near..l.near + 2 * s.entries]),
            &mut body[..s.entries],
            bytemuck::cast_slice_mut(&mut heads[..4 * s.heads]),
        )
    }

    /// The arrays laid, as views of the mapping (which nothing writes
    /// after this).
    fn into_arrays(self) -> (Array<u16>, Array<u8>, Array<u32>) {
        let (l, s) = (self.layout, self.sizes);
        let map = Arc::new(Map::Laid(self.map));
        // The mapping is page-aligned and the layout 8-aligned (checked in
        // `new`): the views fit.
        (
            view(&map, l.near, s.entries),
            view(&map, l.body, s.entries),
            view(&map, l.head_words, s.heads),
        )
    }
}

fn view<T: bytemuck::Pod>(map: &Arc<Map>, at: usize, len: usize) -> Array<T> {
    Array::mapped(map, at, len).unwrap_or_default()
}

/// Lets the process go of the whole pages of the `len` bytes at address
/// `at`, a part of a [`MappedLists`] laid and never written again: they stay in the file's
/// page cache, dirty until written back, and a later read maps them again
/// (a shared file mapping loses nothing to `MADV_DONTNEED`). So the lists
/// laid so far do not count in the process's memory while the rest of the
/// build still holds its runs (a large load's highest moment). Only ever
/// called on a mapping: on the heap it would zero the memory.
pub(super) fn release_laid((at, len): (usize, usize)) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let (from, to) = (at.next_multiple_of(PAGE), (at + len) / PAGE * PAGE);
        if from < to {
            // SAFETY: whole pages inside the span, a part of a shared file
            // mapping that nothing else writes; dropping their entries keeps
            // their contents in the file's pages (see above). Best effort.
            let _ = unsafe {
                rustix::mm::madvise(
                    from as *mut std::ffi::c_void,
                    to - from,
                    rustix::mm::Advice::LinuxDontNeed,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (at, len);
}

/// The three arrays of a build being laid: on the heap, or mapped.
pub(super) enum Postings {
    Heap {
        near: Vec<u16>,
        body: Vec<u8>,
        head_words: Vec<u32>,
    },
    Mapped(MappedLists),
}

impl Postings {
    /// Zeroed arrays of `sizes`: in `mapped` when it is for them, else on
    /// the heap.
    pub(super) fn new(sizes: ListSizes, mapped: Option<MappedLists>) -> Postings {
        match mapped {
            Some(m) if m.sizes == sizes => Postings::Mapped(m),
            _ => Postings::Heap {
                near: vec![0; sizes.entries],
                body: vec![0; sizes.entries],
                head_words: vec![0; sizes.heads],
            },
        }
    }

    /// Whether they are a cache file's ([`release_laid`] may be used).
    pub(super) fn mapped(&self) -> bool {
        matches!(self, Postings::Mapped(_))
    }

    /// The three arrays, to be laid.
    pub(super) fn parts(&mut self) -> (&mut [u16], &mut [u8], &mut [u32]) {
        match self {
            Postings::Heap {
                near,
                body,
                head_words,
            } => (near, body, head_words),
            Postings::Mapped(m) => m.parts(),
        }
    }

    /// The arrays laid, as the index holds them.
    pub(super) fn into_arrays(self) -> (Array<u16>, Array<u8>, Array<u32>) {
        match self {
            Postings::Heap {
                near,
                body,
                head_words,
            } => (near.into(), body.into(), head_words.into()),
            Postings::Mapped(m) => m.into_arrays(),
        }
    }
}
