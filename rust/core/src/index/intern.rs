//! A string interner for the index build: folded words → dense ids.
//!
//! Words live back to back in one arena and the table holds (hash tag, id)
//! pairs packed in one `u32` each, so a lookup touches compact arrays instead
//! of chasing a pointer to a separately allocated key, and the table is half
//! the size it would be with `u64` slots (more of it stays in cache). This is
//! the hot loop of loading (one probe per token), so it is worth its own
//! small table. The word scan's interner ([`Marked`] slots) keeps a number
//! of its own beside each key, so what it tracks per word is read from the
//! cache line the probe already brought in.

use std::hash::Hasher;

use rustc_hash::FxHasher;

/// A table slot: its key, `0` when empty, else the hash's top bits outside
/// the interner's `ids` above `id + 1`; and whatever else the slot holds,
/// which moves with the key when the table grows.
pub trait Slot: Copy + Default {
    fn key(&self) -> u32;
    /// A slot of a newly filed word (anything else it holds at its default).
    fn filed(key: u32) -> Self;
    fn rekey(&mut self, key: u32);
}

impl Slot for u32 {
    #[inline]
    fn key(&self) -> u32 {
        *self
    }
    #[inline]
    fn filed(key: u32) -> u32 {
        key
    }
    #[inline]
    fn rekey(&mut self, key: u32) {
        *self = key;
    }
}

/// A slot with a number the interner's user keeps with the word, `0` for a
/// word just filed: the word scan's mark of the last concept it recorded
/// the word for (build.rs).
#[derive(Clone, Copy, Default)]
pub struct Marked {
    key: u32,
    mark: u32,
}

impl Slot for Marked {
    #[inline]
    fn key(&self) -> u32 {
        self.key
    }
    #[inline]
    fn filed(key: u32) -> Marked {
        Marked { key, mark: 0 }
    }
    #[inline]
    fn rekey(&mut self, key: u32) {
        self.key = key;
    }
}

pub struct Interner<S: Slot = u32> {
    /// Keys ([`Slot`]). A table of `2^k` slots holds fewer than `2^(k-1)`
    /// words, so `k` bits always fit `id + 1`; the rest of the key filters
    /// probes before any word is compared.
    table: Vec<S>,
    mask: usize,
    /// The slot's bits that hold `id + 1`: the low `k` for `2^k` slots.
    ids: u32,
    pub arena: Vec<u8>,
    /// Word `i` is `arena[starts[i]..starts[i + 1]]`.
    pub starts: Vec<u32>,
}

/// The hash an interner files `w` under ([`Interner::intern_hashed`]).
pub fn hash(w: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(w);
    // FxHash's low bits are weak for short keys; mix before masking.
    let x = h.finish();
    x ^ (x >> 29) ^ (x >> 47)
}

impl<S: Slot> Default for Interner<S> {
    fn default() -> Self {
        Interner {
            table: vec![S::default(); 1024],
            mask: 1023,
            ids: 1023,
            arena: Vec::new(),
            starts: vec![0],
        }
    }
}

/// Byte equality, inlined for the short words that dominate a vocabulary
/// (a `memcmp` call costs more): up to 16 bytes are compared as two
/// overlapping 8- or 4-byte loads from each end, or three single bytes.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let u64_at = |s: &[u8], i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&s[i..i + 8]);
        u64::from_le_bytes(x)
    };
    let u32_at = |s: &[u8], i: usize| {
        let mut x = [0u8; 4];
        x.copy_from_slice(&s[i..i + 4]);
        u32::from_le_bytes(x)
    };
    match n {
        0 => true,
        // Three single bytes cover every byte of a word of one to three.
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4),
        8..=16 => u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8),
        _ => a == b,
    }
}

impl<S: Slot> Interner<S> {
    /// An interner that holds `n` words of `bytes` bytes in all without
    /// growing.
    pub fn with_capacity(n: usize, bytes: usize) -> Interner<S> {
        let mut it = Interner::with_table(n);
        it.arena.reserve(bytes);
        it.starts.reserve(n);
        it
    }

    /// An empty interner whose table holds `n` words without growing (its
    /// words' arena grows as they come).
    pub fn with_table(n: usize) -> Interner<S> {
        let size = (n * 2 + 2).next_power_of_two().max(1024);
        Interner {
            table: vec![S::default(); size],
            mask: size - 1,
            ids: ids_of(size),
            ..Interner::default()
        }
    }

    /// Drop the lookup table, keeping the words: for an interner that will
    /// only be read (a finished index chunk waiting to be merged). Interning
    /// into it again builds a new table.
    pub fn freeze(&mut self) {
        self.table = Vec::new();
    }

    /// Drop the words too: for an interner whose ids have been mapped
    /// elsewhere and whose words are not asked for again (a chunk's, once
    /// the field's vocabulary is merged). It is then empty.
    pub fn release(&mut self) {
        self.table = Vec::new();
        self.arena = Vec::new();
        self.starts = vec![0];
    }

    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn word(&self, id: u32) -> &[u8] {
        &self.arena[self.starts[id as usize] as usize..self.starts[id as usize + 1] as usize]
    }

    /// The id of `w`, and whether it was new.
    #[inline]
    pub fn intern(&mut self, w: &[u8]) -> (u32, bool) {
        self.intern_hashed(w, hash(w))
    }

    /// [`Interner::intern`] with `h = hash(w)` already at hand.
    #[inline(always)]
    pub fn intern_hashed(&mut self, w: &[u8], h: u64) -> (u32, bool) {
        let (id, new, _) = self.file(w, h);
        (id, new)
    }

    /// The id of `w`, whether it was new, and its slot.
    #[inline(always)]
    fn file(&mut self, w: &[u8], h: u64) -> (u32, bool, usize) {
        if self.table.is_empty() {
            self.mask = self.len().max(512).next_power_of_two() - 1;
            self.grow();
        }
        let ids = self.ids;
        let tag = tag_of(h, ids);
        let mut i = h as usize & self.mask;
        loop {
            let e = self.table[i].key();
            if e == 0 {
                break;
            }
            if e & !ids == tag {
                let id = (e & ids) - 1;
                if same(self.word(id), w) {
                    return (id, false, i);
                }
            }
            i = (i + 1) & self.mask;
        }
        let (id, i) = self.insert(w, h, i);
        (id, true, i)
    }

    /// Files `w` (hash `h`), not yet held, in empty slot `i`; returns its
    /// id and slot. Apart from the lookup, which is inlined where words are
    /// scanned: most words of a text have been seen before.
    #[inline(never)]
    fn insert(&mut self, w: &[u8], h: u64, i: usize) -> (u32, usize) {
        let id = self.len() as u32;
        self.arena.extend_from_slice(w);
        self.starts.push(self.arena.len() as u32);
        self.table[i] = S::filed(tag_of(h, self.ids) | (id + 1));
        if self.len() * 2 <= self.table.len() {
            return (id, i);
        }
        self.grow();
        // Its slot in the grown table.
        let mut i = h as usize & self.mask;
        while self.table[i].key() & self.ids != id + 1 {
            i = (i + 1) & self.mask;
        }
        (id, i)
    }

    fn grow(&mut self) {
        let size = (self.mask + 1) * 2;
        // Ids are `u32` (as are the arena offsets): past 2^31 words the table
        // could not number them. A vocabulary that large does not fit the
        // arena's offsets long before.
        assert!(
            size <= 1 << 32,
            "okfast: more than 2^31 distinct words in one index part"
        );
        let ids = ids_of(size);
        let mut table = vec![S::default(); size];
        let mask = size - 1;
        let mut place = |id: u32, mut slot: S| {
            let h = hash(self.word(id));
            let mut i = h as usize & mask;
            while table[i].key() != 0 {
                i = (i + 1) & mask;
            }
            slot.rekey(tag_of(h, ids) | (id + 1));
            table[i] = slot;
        };
        if self.table.is_empty() {
            // A frozen interner's words, filed afresh.
            (0..self.len() as u32).for_each(|id| place(id, S::filed(0)));
        } else {
            // Each slot moves whole, with what it holds beside its key.
            for &slot in &self.table {
                if slot.key() != 0 {
                    place((slot.key() & self.ids) - 1, slot);
                }
            }
        }
        self.table = table;
        self.mask = mask;
        self.ids = ids;
    }
}

impl Interner<Marked> {
    /// The id of `w` and its slot's mark (`0` for a word just filed).
    #[inline(always)]
    pub fn intern_marked(&mut self, w: &[u8]) -> (u32, &mut u32) {
        let (id, _, i) = self.file(w, hash(w));
        (id, &mut self.table[i].mark)
    }
}

/// The bits of a slot that hold `id + 1` in a table of `size` slots (a
/// power of two up to 2^32).
fn ids_of(size: usize) -> u32 {
    (size - 1) as u32
}

/// The part of a slot that holds hash bits, for a table whose ids take the
/// bits `ids`: the hash's top bits in place (none when ids take the whole
/// slot).
#[inline]
fn tag_of(h: u64, ids: u32) -> u32 {
    (h >> 32) as u32 & !ids
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word's mark stays with it through every grow of the table, the
    /// grow that filing the word itself sets off included; a word just
    /// filed has 0.
    #[test]
    fn marks_stay_with_their_words_as_the_table_grows() {
        let mut it: Interner<Marked> = Interner::default();
        let words: Vec<String> = (0..50_000u32)
            .map(|i| format!("{:x}", i.wrapping_mul(2_654_435_761)))
            .collect();
        let mark_of = |i: usize| i as u32 * 3 + 1;
        for (i, w) in words.iter().enumerate() {
            let (id, mark) = it.intern_marked(w.as_bytes());
            assert_eq!((id, *mark), (i as u32, 0));
            *mark = mark_of(i);
        }
        for (i, w) in words.iter().enumerate() {
            let (id, mark) = it.intern_marked(w.as_bytes());
            assert_eq!((id, *mark), (i as u32, mark_of(i)), "word {i}");
        }
    }

    /// Every length up to 40 bytes, equal and differing at every position.
    #[test]
    fn same_is_byte_equality() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(same(&a, &a.clone()));
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!same(&a, &b), "length {n}, differing at {at}");
            }
            assert!(!same(&a, &a[..n.saturating_sub(1)]) || n == 0);
        }
    }

    /// A released interner holds nothing, and interns from id 0 again.
    #[test]
    fn a_released_interner_is_empty_and_usable() {
        let mut it: Interner = Interner::default();
        for w in ["alpha", "beta", "gamma"] {
            it.intern(w.as_bytes());
        }
        it.release();
        assert!(it.is_empty());
        assert!(it.arena.is_empty());
        assert_eq!(it.intern(b"beta"), (0, true));
        assert_eq!(it.intern(b"beta"), (0, false));
        assert_eq!(it.word(0), b"beta");
    }

    #[test]
    fn slots_hold_the_top_hash_bits_above_the_id() {
        assert_eq!(tag_of(u64::MAX, ids_of(1 << 10)), 0xFFFF_FC00);
        assert_eq!(tag_of(0x8000_0000_0000_0000, ids_of(1 << 31)), 0x8000_0000);
        assert_eq!(tag_of(u64::MAX, ids_of(1 << 32)), 0);
        assert_eq!(tag_of(0x0000_FFFF_FFFF_FFFF, ids_of(1 << 16)), 0);
        assert_eq!(tag_of(0xABCD_0000_FFFF_FFFF, ids_of(1 << 16)), 0xABCD_0000);
    }

    /// Through many grows (tags shrink as ids widen), every word keeps its
    /// id and is found again.
    #[test]
    fn ids_survive_growing_to_a_large_vocabulary() {
        let mut it: Interner = Interner::default();
        let words: Vec<String> = (0..300_000u32)
            .map(|i| format!("{:x}", i.wrapping_mul(2_654_435_761)))
            .collect();
        for (i, w) in words.iter().enumerate() {
            assert_eq!(it.intern(w.as_bytes()), (i as u32, true));
        }
        assert!(it.ids >= (1 << 20) - 1);
        for (i, w) in words.iter().enumerate() {
            assert_eq!(it.intern(w.as_bytes()), (i as u32, false));
        }
    }

    /// An interner made for `n` words numbers them as one grown from the
    /// default does, and grows past `n` when more come.
    #[test]
    fn a_table_made_large_numbers_the_words_the_same() {
        let words: Vec<String> = (0..5000).map(|i| format!("w{}", i % 3000)).collect();
        for n in [0, 100, 3000, 10_000] {
            let (mut a, mut b): (Interner, Interner) =
                (Interner::default(), Interner::with_table(n));
            for w in &words {
                assert_eq!(a.intern(w.as_bytes()), b.intern(w.as_bytes()), "n = {n}");
            }
            assert_eq!(b.len(), 3000);
            assert_eq!((a.arena, a.starts), (b.arena, b.starts));
        }
    }

    #[test]
    fn ids_are_dense_and_stable() {
        let mut it: Interner = Interner::default();
        let words: Vec<String> = (0..5000).map(|i| format!("w{}", i % 3000)).collect();
        let mut seen = std::collections::HashMap::new();
        for w in &words {
            let (id, new) = it.intern(w.as_bytes());
            let prev = seen.insert(w.clone(), id);
            assert_eq!(new, prev.is_none());
            if let Some(p) = prev {
                assert_eq!(p, id);
            }
            assert_eq!(it.word(id), w.as_bytes());
        }
        assert_eq!(it.len(), 3000);
        // A frozen interner keeps its words and ids, and can intern again.
        it.freeze();
        for w in &words {
            assert_eq!(it.intern(w.as_bytes()).0, seen[w]);
        }
        assert!(it.intern(b"brand new").1);
        assert_eq!(it.word(3000), b"brand new");
    }
}
