//! The buffers the index build's word scan fills and empties for each
//! chunk, kept from one chunk to the next on the same thread and from one
//! wave of files to the next (docs/performance.md, "Cold load: where the
//! rest goes").

use std::sync::Mutex;

/// The buffers a [`chunk_words`](super::build::chunk_words) call fills and
/// is done with by its end, kept for the next call on the same thread:
/// grown afresh for every chunk (by doubling, each step a copy into new
/// pages) they cost the load a fresh page fault per 4 KiB of pairs, and
/// fresh pages are what a load pays most for.
#[derive(Default)]
pub struct Scratch {
    /// The (word, concept) pairs, concept by concept: concept `k`'s words
    /// are `pair_word[ends[k - 1]..ends[k]]` (its position is implicit,
    /// which halves the largest buffer of the build).
    pub(super) pair_word: Vec<u32>,
    pub(super) pair_tf: Vec<u32>,
    pub(super) ends: Vec<usize>,
    /// The counting sort's next free slot per word.
    pub(super) cursor: Vec<u32>,
    /// A folded word.
    pub(super) buf: Vec<u8>,
    /// Per field (title, `tags_desc`, body), how many distinct words the
    /// last chunk of it held: the next one's table is made that large at
    /// once rather than grown to it, each step a rehash.
    pub(super) words_seen: [usize; 3],
}

/// The `Scratch` buffers of the threads indexing the chunks of one load,
/// kept from one wave of files to the next and freed with it.
#[derive(Default)]
pub struct Scratches(Mutex<Vec<Scratch>>);

impl Scratches {
    pub(super) fn take(&self) -> Scratch {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    pub(super) fn put(&self, s: Scratch) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    }
}
