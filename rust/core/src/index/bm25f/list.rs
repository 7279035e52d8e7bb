//! How the BM25F index keeps its entries' field frequencies, and one
//! token's list as a search reads it (docs/spec.md §12.3).
//!
//! Nearly every entry holds its token in the body alone: its frequencies
//! are one byte, the body's. An entry holding the token in the title, tags
//! or description (a head entry) has the byte 0 and its four frequencies in
//! a 32-bit word of the head words, which are in entry order. Where entry
//! `g`'s word is, is the number of head entries before it: the heads'
//! directory holds that number for every [`GROUP`]-th entry, and the zero
//! bytes between count the rest. About a byte and a quarter an entry
//! instead of four: the largest array of the index shrinks, in memory, in
//! the cache file and in what a search reads. Its concepts are kept as
//! offsets (offsets.rs).

use rayon::prelude::*;

use super::offsets::{DocIter, Docs};
use super::BLOCK;

/// Entries per step of the heads' directory.
pub const GROUP: usize = 64;

/// Whether an entry with frequencies `tfs` (title, tags, description,
/// body) is a head entry: held in a field other than the body, or (in no
/// built index) in none.
#[inline]
pub fn is_head(tfs: [u16; 4]) -> bool {
    tfs[0] | tfs[1] | tfs[2] != 0 || tfs[3] == 0
}

/// The entry's byte: its body frequency (at most 255) for an entry in the
/// body alone, 0 for a head entry.
#[inline]
pub fn body_byte(tfs: [u16; 4]) -> u8 {
    if is_head(tfs) {
        0
    } else {
        tfs[3].min(255) as u8
    }
}

/// A head entry's word: its four frequencies, at most 255 each, the title
/// in the low byte.
#[inline]
pub fn head_word(tfs: [u16; 4]) -> u32 {
    u32::from_le_bytes(tfs.map(|tf| tf.min(255) as u8))
}

/// The four frequencies of an entry's word (title in the low byte).
#[inline]
pub fn tfs_of(word: u32) -> [u16; 4] {
    word.to_le_bytes().map(u16::from)
}

/// The heads' directory of entries whose bytes are `body`: for each
/// [`GROUP`]-th entry, and for the end, the number of head entries (zero
/// bytes) before it. Counted in parallel, summed in order.
pub fn head_dir(body: &[u8]) -> Vec<u64> {
    let mut dir = vec![0u64; body.len().div_ceil(GROUP) + 1];
    dir[1..]
        .par_iter_mut()
        .zip(body.par_chunks(GROUP))
        .for_each(|(n, group)| *n = zeros(group));
    let mut sum = 0;
    for n in &mut dir {
        sum += *n;
        *n = sum;
    }
    dir
}

fn zeros(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == 0).count() as u64
}

/// The bytes of every entry of the index and the heads' directory: where
/// any entry's word is.
#[derive(Clone, Copy, Default)]
pub struct Heads<'a> {
    pub body: &'a [u8],
    pub dir: &'a [u64],
}

impl Heads<'_> {
    /// The number of head entries before entry `g` (0 past the directory:
    /// a damaged saved index, whose directory is not read at open, reads
    /// no word rather than failing, docs/spec.md §9.3).
    #[inline]
    pub fn before(&self, g: usize) -> u64 {
        let k = g / GROUP;
        let base = self.dir.get(k).copied().unwrap_or(0);
        base + self.body.get(k * GROUP..g).map_or(0, zeros)
    }
}

/// One token's postings.
#[derive(Clone, Copy, Default)]
pub struct TokenList<'a> {
    /// Its concepts, ascending.
    pub docs: Docs<'a>,
    /// One byte per concept: see the module's comment.
    pub body: &'a [u8],
    /// Its head entries' words, in entry order.
    pub heads: &'a [u32],
    /// Four frequencies per concept for a wide token (mod.rs: `WIDE`),
    /// which are read instead of the bytes and words; empty for the others.
    pub wide: &'a [u16],
    /// Where the words of entries far into the list are: the index's heads,
    /// the list's first entry there, and the head entries before it.
    all: Heads<'a>,
    first: usize,
    head0: u64,
}

impl<'a> TokenList<'a> {
    /// Entries `first..first + docs.len()` of an index whose bytes and
    /// directory are `all`, with its head words `words`.
    pub fn new(
        docs: Docs<'a>,
        first: usize,
        all: Heads<'a>,
        words: &'a [u32],
        wide: &'a [u16],
    ) -> TokenList<'a> {
        let end = first + docs.len();
        let head0 = all.before(first);
        let heads = usize::try_from(head0)
            .ok()
            .zip(usize::try_from(all.before(end)).ok())
            .and_then(|(a, b)| words.get(a..b))
            .unwrap_or(&[]);
        TokenList {
            docs,
            body: all.body.get(first..end).unwrap_or(&[]),
            heads,
            wide,
            all,
            first,
            head0,
        }
    }

    /// The number of concepts in the list.
    #[inline]
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The number of head entries before entry `i` of the list.
    #[inline]
    pub fn heads_before(&self, i: usize) -> usize {
        self.all.before(self.first + i).wrapping_sub(self.head0) as usize
    }

    /// The four field frequencies (title, tags, description, body) in the
    /// `i`-th concept of the list.
    #[inline]
    pub fn tfs(&self, i: usize) -> [u16; 4] {
        if !self.wide.is_empty() {
            let w = &self.wide[4 * i..4 * i + 4];
            return [w[0], w[1], w[2], w[3]];
        }
        match self.body[i] {
            0 => tfs_of(self.heads.get(self.heads_before(i)).copied().unwrap_or(0)),
            b => [0, 0, 0, u16::from(b)],
        }
    }

    /// The concepts of entries `from..to`, which lie in one block, as a
    /// slice ([`Docs::block`]).
    #[inline]
    pub fn block_docs<'b>(
        &'b self,
        from: usize,
        to: usize,
        buf: &'b mut [u32; BLOCK],
    ) -> &'b [u32] {
        self.docs.block(from, to, buf)
    }

    /// The frequencies, as a word, of an entry whose byte is `b`, `h` being
    /// the number of head entries before it (moved past it).
    #[inline]
    pub fn word(&self, b: u8, h: &mut usize) -> u32 {
        match b {
            0 => {
                *h += 1;
                self.heads.get(*h - 1).copied().unwrap_or(0)
            }
            b => u32::from(b) << 24,
        }
    }

    /// Entries `from..` in order: each concept with its frequencies as a
    /// word (title in the low byte; a wide token's clamped to 255).
    pub fn words(&self, from: usize) -> Words<'a> {
        Words {
            docs: self.docs.iter_from(from),
            body: self.body[from..].iter(),
            heads: self.heads,
            h: self.heads_before(from),
        }
    }
}

impl<'a> TokenList<'a> {
    /// Every entry in order: each concept with its four frequencies.
    pub fn entries(&self) -> impl Iterator<Item = (u32, [u16; 4])> + 'a {
        let wide = self.wide;
        self.words(0).enumerate().map(move |(i, (d, word))| {
            if wide.is_empty() {
                (d, tfs_of(word))
            } else {
                let w = &wide[4 * i..4 * i + 4];
                (d, [w[0], w[1], w[2], w[3]])
            }
        })
    }
}

/// [`TokenList::words`].
pub struct Words<'a> {
    docs: DocIter<'a>,
    body: std::slice::Iter<'a, u8>,
    heads: &'a [u32],
    h: usize,
}

impl Iterator for Words<'_> {
    type Item = (u32, u32);

    #[inline]
    fn next(&mut self) -> Option<(u32, u32)> {
        let d = self.docs.next()?;
        let word = match *self.body.next()? {
            0 => {
                self.h += 1;
                self.heads.get(self.h - 1).copied().unwrap_or(0)
            }
            b => u32::from(b) << 24,
        };
        Some((d, word))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// Random entries' frequencies, mostly in the body alone.
    fn entries(rng: &mut Rng, n: usize) -> Vec<[u16; 4]> {
        (0..n)
            .map(|_| {
                let body = rng.below(300) as u16;
                match rng.below(4) {
                    0 => [rng.below(3) as u16, 0, rng.below(2) as u16, body],
                    _ => [0, 0, 0, body.max(1)],
                }
            })
            .collect()
    }

    #[test]
    fn every_entry_reads_back_its_frequencies() {
        let mut rng = Rng(0x1157);
        for n in [0, 1, 63, 64, 65, 200, 1000] {
            let all = entries(&mut rng, n);
            let body: Vec<u8> = all.iter().map(|&t| body_byte(t)).collect();
            let words: Vec<u32> = all
                .iter()
                .filter(|&&t| is_head(t))
                .map(|&t| head_word(t))
                .collect();
            let dir = head_dir(&body);
            assert_eq!(dir.last().copied(), Some(words.len() as u64));
            let heads = Heads {
                body: &body,
                dir: &dir,
            };
            let clamp = |t: [u16; 4]| t.map(|x| x.min(255));
            // Lists starting anywhere, of any length.
            for _ in 0..20 {
                let first = rng.below(n + 1);
                let len = rng.below(n - first + 1);
                let docs: Vec<u32> = (first as u32..(first + len) as u32).collect();
                let list = TokenList::new(Docs::Far(&docs), first, heads, &words, &[]);
                for i in 0..len {
                    assert_eq!(list.tfs(i), clamp(all[first + i]), "{n} {first} {i}");
                }
                let from = rng.below(len + 1);
                let read: Vec<(u32, [u16; 4])> =
                    list.words(from).map(|(d, w)| (d, tfs_of(w))).collect();
                let every: Vec<(u32, [u16; 4])> = list.entries().collect();
                assert_eq!(every[from..], read);
                // Block by block, from `from` on.
                let (mut h, mut i, mut blocks) = (list.heads_before(from), from, Vec::new());
                let mut buf = [0u32; BLOCK];
                while i < len {
                    let end = ((i / BLOCK + 1) * BLOCK).min(len);
                    let docs = list.block_docs(i, end, &mut buf).to_vec();
                    for (d, &b) in docs.into_iter().zip(&list.body[i..end]) {
                        blocks.push((d, tfs_of(list.word(b, &mut h))));
                    }
                    i = end;
                }
                assert_eq!(blocks, read);
                let want: Vec<(u32, [u16; 4])> = (first + from..first + len)
                    .map(|g| (g as u32, clamp(all[g])))
                    .collect();
                assert_eq!(read, want);
            }
        }
    }

    #[test]
    fn a_damaged_directory_reads_no_word_rather_than_failing() {
        let body = [0u8, 3, 0, 0];
        let dir = [7u64];
        let heads = Heads {
            body: &body,
            dir: &dir,
        };
        let list = TokenList::new(Docs::Far(&[0, 1, 2, 3]), 0, heads, &[1, 2, 3], &[]);
        assert_eq!(list.tfs(1), [0, 0, 0, 3]);
        assert_eq!(list.tfs(2), [0; 4]);
        assert_eq!(list.words(0).count(), 4);
    }
}
