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

use crate::slab::Slab;

#[derive(Default)]
pub struct Trigrams {
    /// Sorted distinct trigram keys (three bytes, big-endian in a u32).
    pub keys: Slab<u32>,
    /// Words holding key `i`: `words[starts[i]..starts[i + 1]]`, ascending.
    pub starts: Slab<u32>,
    pub words: Slab<u32>,
}

fn key(t: &[u8]) -> u32 {
    (u32::from(t[0]) << 16) | (u32::from(t[1]) << 8) | u32::from(t[2])
}

impl Trigrams {
    /// Index the words of a vocabulary (`words(i)` = the bytes of word `i`).
    pub fn build<'a>(n_words: usize, word: impl Fn(u32) -> &'a [u8] + Sync) -> Trigrams {
        let depth = rayon::current_num_threads()
            .next_power_of_two()
            .trailing_zeros();
        let mut pairs = sorted_pairs(0..n_words as u32, &word, depth);
        pairs.dedup();
        let (mut keys, mut starts) = (Vec::new(), Vec::new());
        let mut words = Vec::with_capacity(pairs.len());
        for p in pairs {
            let k = (p >> 32) as u32;
            if keys.last() != Some(&k) {
                keys.push(k);
                starts.push(words.len() as u32);
            }
            words.push(p as u32);
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

/// The `(key << 32 | word)` pairs of every trigram of the words in `words`,
/// sorted (so by key, then word). Halves of the range are done in parallel
/// (`depth` times over) and merged; the result is the same however it is
/// split.
fn sorted_pairs<'a, F>(words: std::ops::Range<u32>, word: &F, depth: u32) -> Vec<u64>
where
    F: Fn(u32) -> &'a [u8] + Sync,
{
    if depth > 0 && words.len() > 8192 {
        let mid = words.start + (words.end - words.start) / 2;
        let (a, b) = rayon::join(
            || sorted_pairs(words.start..mid, word, depth - 1),
            || sorted_pairs(mid..words.end, word, depth - 1),
        );
        return merge_sorted(&a, &b);
    }
    let total: usize = words.clone().map(|w| word(w).len().saturating_sub(2)).sum();
    let mut pairs: Vec<u64> = Vec::with_capacity(total);
    for w in words {
        for t in word(w).windows(3) {
            pairs.push((u64::from(key(t)) << 32) | u64::from(w));
        }
    }
    // Generated in word order, so a stable sort by key alone orders the
    // pairs by (key, word): two 12-bit radix passes over the 24-bit key.
    radix_by_key(&mut pairs);
    pairs
}

/// Two sorted lists merged into one.
fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Stable sort of `(key << 32 | word)` pairs by their 24-bit key: least
/// significant 12 bits first, then the most significant 12.
fn radix_by_key(pairs: &mut Vec<u64>) {
    let mut tmp = vec![0u64; pairs.len()];
    for shift in [32u32, 44] {
        let mut counts = vec![0usize; 4097];
        for &p in pairs.iter() {
            counts[((p >> shift) & 0xFFF) as usize + 1] += 1;
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        for &p in pairs.iter() {
            let d = ((p >> shift) & 0xFFF) as usize;
            tmp[counts[d]] = p;
            counts[d] += 1;
        }
        std::mem::swap(pairs, &mut tmp);
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

    #[test]
    fn radix_order_equals_a_full_sort_of_pairs_made_in_word_order() {
        // A small deterministic generator: keys over the whole 24-bit range.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut pairs = Vec::new();
        for w in 0..5000u64 {
            for _ in 0..(w % 7) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                pairs.push(((x & 0xFF_FFFF) << 32) | w);
            }
        }
        let mut want = pairs.clone();
        want.sort_unstable();
        radix_by_key(&mut pairs);
        assert_eq!(pairs, want);
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
        // However the range is split, the sorted pairs are the same.
        let word = |w: u32| words[w as usize].as_slice();
        let whole = sorted_pairs(0..words.len() as u32, &word, 0);
        assert_eq!(sorted_pairs(0..words.len() as u32, &word, 2), whole);
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
