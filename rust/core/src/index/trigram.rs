//! Substring lookup over a field's vocabulary.
//!
//! A term of three bytes or more can only occur in a word that contains every
//! one of the term's byte trigrams, so the words listed under the term's
//! rarest trigram are the only candidates; each is then checked with `memmem`.
//! This turns a scan of the whole vocabulary (megabytes per field at 100k
//! concepts) into a lookup plus a few hundred short comparisons. Shorter
//! terms match so many words that a linear scan is the right tool anyway.
//! Folded text is UTF-8 and UTF-8 is self-synchronising, so byte-level
//! substring matches are exactly character-level ones.

use memchr::memmem;
use rayon::prelude::*;

use crate::array::Array;

#[derive(Default)]
pub struct Trigrams {
    /// Sorted distinct trigram keys (three bytes, big-endian in a u32).
    pub keys: Array<u32>,
    /// Words holding key `i`: `words[starts[i]..starts[i + 1]]`, ascending.
    pub starts: Array<u32>,
    pub words: Array<u32>,
}

fn key(t: &[u8]) -> u32 {
    (u32::from(t[0]) << 16) | (u32::from(t[1]) << 8) | u32::from(t[2])
}

impl Trigrams {
    /// Index the words of a vocabulary (`words(i)` = the bytes of word `i`).
    pub fn build<'a>(n_words: usize, word: impl Fn(u32) -> &'a [u8] + Sync) -> Trigrams {
        Trigrams::build_in(n_words, &word, PART)
    }

    /// [`Trigrams::build`] with the words taken `part` at a time in the first
    /// pass. The result does not depend on `part`.
    ///
    /// Two passes, each parallel throughout (no serial merge at the end):
    /// each part of the words lists its `(key << 32 | word)` pairs grouped by
    /// the key's first byte, in word order; then each first byte takes its
    /// groups from every part (so still in word order) and lists the words
    /// under each key, ascending, a word's repeats of a trigram dropped — a
    /// counting sort by the key's last two bytes straight from the groups
    /// ([`Piece::counted`]; small pieces are copied and sorted whole). The
    /// 256 pieces are laid end to end.
    fn build_in<'a, F>(n_words: usize, word: &F, part: usize) -> Trigrams
    where
        F: Fn(u32) -> &'a [u8] + Sync,
    {
        let part = part.max(1);
        let grouped: Vec<Grouped> = (0..n_words.div_ceil(part))
            .into_par_iter()
            .map(|p| {
                let end = ((p + 1) * part).min(n_words);
                group_by_first_byte((p * part) as u32..end as u32, word)
            })
            .collect();
        let pieces: Vec<Piece> = (0..256usize)
            .into_par_iter()
            .map_init(
                || vec![0u32; 1 << 16],
                |count, b| {
                    let groups = || grouped.iter().map(move |g| &g.pairs[g.at[b]..g.at[b + 1]]);
                    let len: usize = groups().map(<[u64]>::len).sum();
                    if len < SMALL {
                        let mut pairs: Vec<u64> = Vec::with_capacity(len);
                        groups().for_each(|g| pairs.extend_from_slice(g));
                        // Whole pairs: by key, then word.
                        pairs.sort_unstable();
                        return Piece::of(&pairs);
                    }
                    Piece::counted(b as u32, groups, count)
                },
            )
            .collect();
        drop(grouped);
        let n_keys: usize = pieces.iter().map(|p| p.keys.len()).sum();
        let n_listed: usize = pieces.iter().map(|p| p.words.len()).sum();
        let mut keys = Vec::with_capacity(n_keys);
        let mut starts = Vec::with_capacity(n_keys + 1);
        let mut words = Vec::with_capacity(n_listed);
        for p in pieces {
            let base = words.len() as u32;
            keys.extend_from_slice(&p.keys);
            starts.extend(p.starts.iter().map(|s| base + s));
            words.extend_from_slice(&p.words);
        }
        starts.push(words.len() as u32);
        Trigrams {
            keys: keys.into(),
            starts: starts.into(),
            words: words.into(),
        }
    }

    fn list(&self, t: &[u8]) -> Option<&[u32]> {
        let at = self.keys.binary_search(&key(t)).ok()?;
        Some(&self.words[self.starts[at] as usize..self.starts[at + 1] as usize])
    }

    /// The words containing `term` (at least three bytes), ascending, appended
    /// to `out`. A three-byte term is its own trigram: its list is the answer.
    /// Longer terms intersect the two rarest lists, then check each survivor.
    pub fn filter_into<'w>(&self, term: &[u8], word: impl Fn(u32) -> &'w [u8], out: &mut Vec<u32>) {
        let mut lists: Vec<&[u32]> = Vec::new();
        for t in term.windows(3) {
            match self.list(t) {
                Some(l) => lists.push(l),
                None => return,
            }
        }
        if term.len() == 3 {
            out.extend_from_slice(lists[0]);
            return;
        }
        lists.sort_by_key(|l| l.len());
        let (a, b) = (lists[0], lists[1]);
        let mut j = 0;
        for &w in a {
            // Gallop in the longer list.
            let mut step = 1;
            while j + step < b.len() && b[j + step] < w {
                j += step;
                step *= 2;
            }
            j += b[j..(j + step + 1).min(b.len())].partition_point(|&x| x < w);
            if j >= b.len() {
                break;
            }
            if b[j] == w && contains(word(w), term) {
                out.push(w);
            }
        }
    }
}

/// Words per part in the first pass of [`Trigrams::build`]: enough that a
/// part's work dwarfs its scheduling, few enough that a vocabulary of tens of
/// thousands of words is shared among the threads.
const PART: usize = 8192;

/// The trigram pairs of some words, grouped by the key's first byte:
/// group `b` is `pairs[at[b]..at[b + 1]]`, in word order.
struct Grouped {
    pairs: Vec<u64>,
    at: Vec<usize>,
}

/// The `(key << 32 | word)` pairs of every trigram of `words`, grouped by the
/// key's first byte (a counting sort: counted, then placed).
fn group_by_first_byte<'a, F>(words: std::ops::Range<u32>, word: &F) -> Grouped
where
    F: Fn(u32) -> &'a [u8] + Sync,
{
    let mut at = vec![0usize; 257];
    for w in words.clone() {
        let bytes = word(w);
        for &b in &bytes[..bytes.len().saturating_sub(2)] {
            at[b as usize + 1] += 1;
        }
    }
    for i in 1..at.len() {
        at[i] += at[i - 1];
    }
    let mut pairs = vec![0u64; at[256]];
    let mut next = at.clone();
    for w in words {
        for t in word(w).windows(3) {
            let slot = &mut next[t[0] as usize];
            pairs[*slot] = (u64::from(key(t)) << 32) | u64::from(w);
            *slot += 1;
        }
    }
    Grouped { pairs, at }
}

/// Pieces with fewer pairs than this are sorted whole; larger ones are
/// counted by the key's last two bytes ([`Piece::counted`]), which costs a
/// pass over a table of 2^16 counts.
const SMALL: usize = 4096;

/// The lists of some keys: `words[starts[i]..starts[i + 1]]` hold `keys[i]`
/// (the last list ends at `words.len()`).
struct Piece {
    keys: Vec<u32>,
    starts: Vec<u32>,
    words: Vec<u32>,
}

impl Piece {
    /// The lists of the pairs whose key starts with byte `b`, given as
    /// groups each in word order (`groups()`, the groups in word order too):
    /// a counting sort by the key's last two bytes, in `count` (2^16 zeros,
    /// left zeroed). Counting is stable, so each list comes out in word
    /// order, as if sorted by key then word, and a word that holds the
    /// trigram twice is next to itself and listed once.
    fn counted<'g, G, I>(b: u32, groups: G, count: &mut [u32]) -> Piece
    where
        G: Fn() -> I,
        I: Iterator<Item = &'g [u64]>,
    {
        let tail = |p: u64| ((p >> 32) & 0xFFFF) as usize;
        for g in groups() {
            for &p in g {
                count[tail(p)] += 1;
            }
        }
        let mut piece = Piece {
            keys: Vec::new(),
            starts: Vec::new(),
            words: Vec::new(),
        };
        // Each key's list starts where the ones before it end; `count` turns
        // into the next free place of each list.
        let mut at = 0u32;
        for (t, c) in count.iter_mut().enumerate() {
            if *c > 0 {
                piece.keys.push(b << 16 | t as u32);
                piece.starts.push(at);
                at += *c;
                *c = at - *c;
            }
        }
        piece.words = vec![0u32; at as usize];
        for g in groups() {
            for &p in g {
                let next = &mut count[tail(p)];
                piece.words[*next as usize] = p as u32;
                *next += 1;
            }
        }
        for &k in &piece.keys {
            count[(k & 0xFFFF) as usize] = 0;
        }
        // A word's repeats of a trigram are adjacent in its list: drop them.
        let mut out = 0usize;
        for i in 0..piece.keys.len() {
            let from = piece.starts[i] as usize;
            let to = piece
                .starts
                .get(i + 1)
                .map_or(piece.words.len(), |&s| s as usize);
            piece.starts[i] = out as u32;
            for j in from..to {
                let w = piece.words[j];
                if j == from || w != piece.words[j - 1] {
                    piece.words[out] = w;
                    out += 1;
                }
            }
        }
        piece.words.truncate(out);
        piece
    }

    /// The lists of pairs sorted by key, then word; a repeated pair (a word
    /// holding a trigram twice) is listed once.
    fn of(pairs: &[u64]) -> Piece {
        let mut piece = Piece {
            keys: Vec::new(),
            starts: Vec::new(),
            words: Vec::with_capacity(pairs.len()),
        };
        let mut last = None;
        for &p in pairs {
            if last == Some(p) {
                continue;
            }
            last = Some(p);
            let k = (p >> 32) as u32;
            if piece.keys.last() != Some(&k) {
                piece.keys.push(k);
                piece.starts.push(piece.words.len() as u32);
            }
            piece.words.push(p as u32);
        }
        piece
    }
}

/// Substring test for short haystacks (vocabulary words), where a plain
/// window comparison beats setting up a SIMD searcher.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    if hay.len() > 64 {
        return memmem::find(hay, needle).is_some();
    }
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counting a piece gives the lists sorting its pairs gives: random
    /// groups in word order (a word's trigrams in a row, some repeated),
    /// with keys few enough that lists are long and many enough that some
    /// hold one word.
    #[test]
    fn counted_lists_equal_sorted_lists() {
        let mut rng = crate::testing::Rng(0x2545_F491_4F6C_DD1D);
        for round in 0..40 {
            let spread = [3usize, 50, 4000, 65536][round % 4];
            let mut groups: Vec<Vec<u64>> = Vec::new();
            let mut w = 0u64;
            for _ in 0..1 + rng.below(5) {
                let mut g = Vec::new();
                for _ in 0..rng.below(3000) {
                    for _ in 0..rng.below(6) {
                        let tail = rng.below(spread) as u64;
                        let key = 0x41_0000 | tail;
                        g.push((key << 32) | w);
                        if rng.below(8) == 0 {
                            g.push((key << 32) | w); // the trigram again
                        }
                    }
                    w += 1;
                }
                groups.push(g);
            }
            let mut count = vec![0u32; 1 << 16];
            let got = Piece::counted(0x41, || groups.iter().map(Vec::as_slice), &mut count);
            assert!(count.iter().all(|&c| c == 0), "counts left zeroed");
            let mut pairs: Vec<u64> = groups.concat();
            pairs.sort_unstable();
            let want = Piece::of(&pairs);
            assert_eq!(got.keys, want.keys, "round {round}");
            assert_eq!(got.starts, want.starts, "round {round}");
            assert_eq!(got.words, want.words, "round {round}");
        }
    }

    /// Lists over many random words (more than one part per thread, repeated
    /// trigrams within a word) equal a brute-force scan of the words.
    #[test]
    fn lists_equal_a_scan_over_many_random_words() {
        let mut rng = crate::testing::Rng(0x9E37_79B9_7F4A_7C15);
        let words: Vec<Vec<u8>> = (0..20_000)
            .map(|_| {
                let x = rng.bits();
                let len = (x % 9) as usize;
                (0..len)
                    .map(|i| b"ABCA\xC3\x9F"[((x >> (8 + 3 * i)) % 6) as usize])
                    .collect()
            })
            .collect();
        let tg = Trigrams::build(words.len(), |w| &words[w as usize]);
        // However the words are split into parts, the lists are the same.
        let word = |w: u32| words[w as usize].as_slice();
        for part in [1, 7, 1000, 1 << 20] {
            let other = Trigrams::build_in(words.len(), &word, part);
            assert_eq!(other.keys, tg.keys, "part {part}");
            assert_eq!(other.starts, tg.starts, "part {part}");
            assert_eq!(other.words, tg.words, "part {part}");
        }
        let mut want: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for (w, bytes) in words.iter().enumerate() {
            for t in bytes.windows(3) {
                let list = want.entry(key(t)).or_default();
                if list.last() != Some(&(w as u32)) {
                    list.push(w as u32);
                }
            }
        }
        let keys: Vec<u32> = want.keys().copied().collect();
        assert_eq!(&tg.keys[..], keys.as_slice());
        for (i, list) in want.values().enumerate() {
            assert_eq!(
                &tg.words[tg.starts[i] as usize..tg.starts[i + 1] as usize],
                list.as_slice()
            );
        }
    }

    #[test]
    fn lists_hold_exactly_the_words_with_each_trigram() {
        let words: Vec<&[u8]> = vec![b"AAAA", b"BANANA", b"AB", b"NAN", b"\xC3\x9FNA"];
        let tg = Trigrams::build(words.len(), |w| words[w as usize]);
        for (i, &k) in tg.keys.iter().enumerate() {
            let list = &tg.words[tg.starts[i] as usize..tg.starts[i + 1] as usize];
            let want: Vec<u32> = (0..words.len() as u32)
                .filter(|&w| words[w as usize].windows(3).any(|t| key(t) == k))
                .collect();
            assert_eq!(list, want.as_slice());
        }
        let mut out = Vec::new();
        tg.filter_into(b"ANA", |w| words[w as usize], &mut out);
        assert_eq!(out, vec![1]);
        out.clear();
        tg.filter_into(b"NANA", |w| words[w as usize], &mut out);
        assert_eq!(out, vec![1]);
    }
}
