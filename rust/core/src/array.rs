//! A read-only array that is either owned or a view into a memory-mapped
//! cache file, so a reopened bundle uses its saved index in place: no copy,
//! no decode, and pages the OS can drop and re-read from the file; or a view
//! into the writable mapping a build laid its lists into (docs/cache-format.md),
//! never written again once viewed.
//!
//! Only plain little-endian integers are ever viewed (`u8`, `u32`, `u64`);
//! the cache writer aligns each array, and [`Array::mapped`] checks alignment
//! and bounds (through `bytemuck`), so a view is never built from bytes that
//! do not fit.

use std::ops::Deref;
use std::sync::Arc;

use bytemuck::Pod;
use memmap2::{Mmap, MmapMut};

/// What an array can be a view into: a cache file mapped to be read, or
/// the writable mapping a build laid its lists into (docs/cache-format.md),
/// never written again once viewed.
pub enum Map {
    Read(Mmap),
    Laid(MmapMut),
}

impl Deref for Map {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Map::Read(m) => m,
            Map::Laid(m) => m,
        }
    }
}

pub enum Array<T: Pod> {
    Owned(Vec<T>),
    Mapped {
        map: Arc<Map>,
        at: usize,
        len: usize,
    },
}

/// `len` items of `T` at byte offset `at` of `raw`, if they fit and are
/// aligned.
fn view<T: Pod>(raw: &[u8], at: usize, len: usize) -> Option<&[T]> {
    let bytes = len.checked_mul(std::mem::size_of::<T>())?;
    let raw = raw.get(at..at.checked_add(bytes)?)?;
    bytemuck::try_cast_slice::<u8, T>(raw).ok()
}

impl<T: Pod> Array<T> {
    /// A view of `len` items at byte offset `at` of `map`; `None` when that
    /// range is out of bounds or misaligned for `T`.
    pub fn mapped(map: &Arc<Map>, at: usize, len: usize) -> Option<Array<T>> {
        view::<T>(map, at, len)?;
        Some(Array::Mapped {
            map: Arc::clone(map),
            at,
            len,
        })
    }
}

impl<T: Pod> Clone for Array<T> {
    fn clone(&self) -> Self {
        match self {
            Array::Owned(v) => Array::Owned(v.clone()),
            Array::Mapped { map, at, len } => Array::Mapped {
                map: Arc::clone(map),
                at: *at,
                len: *len,
            },
        }
    }
}

impl<T: Pod> Default for Array<T> {
    fn default() -> Self {
        Array::Owned(Vec::new())
    }
}

impl<T: Pod> From<Vec<T>> for Array<T> {
    fn from(v: Vec<T>) -> Self {
        Array::Owned(v)
    }
}

impl<T: Pod> Deref for Array<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Array::Owned(v) => v,
            Array::Mapped { map, at, len } => {
                let raw = &map[*at..*at + *len * std::mem::size_of::<T>()];
                // Checked once in `mapped`; the mapping never changes size.
                bytemuck::cast_slice(raw)
            }
        }
    }
}

/// Equal when the items are (owned or mapped alike).
impl<T: Pod + PartialEq> PartialEq for Array<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter().take(8)).finish()
    }
}
