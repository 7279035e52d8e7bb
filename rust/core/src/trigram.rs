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

#[derive(Default)]
pub struct Trigrams {
    /// Sorted distinct trigram keys (three bytes, big-endian in a u32).
    pub keys: Vec<u32>,
    /// Words holding key `i`: `words[starts[i]..starts[i + 1]]`, ascending.
    pub starts: Vec<u32>,
    pub words: Vec<u32>,
}

fn key(t: &[u8]) -> u32 {
    (u32::from(t[0]) << 16) | (u32::from(t[1]) << 8) | u32::from(t[2])
}

impl Trigrams {
    /// Index the words of a vocabulary (`words(i)` = the bytes of word `i`).
    pub fn build<'a>(n_words: usize, word: impl Fn(u32) -> &'a [u8]) -> Trigrams {
        let mut pairs: Vec<u64> = Vec::new();
        for w in 0..n_words as u32 {
            for t in word(w).windows(3) {
                pairs.push((u64::from(key(t)) << 32) | u64::from(w));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let mut tg = Trigrams::default();
        tg.words.reserve(pairs.len());
        for p in pairs {
            let k = (p >> 32) as u32;
            if tg.keys.last() != Some(&k) {
                tg.keys.push(k);
                tg.starts.push(tg.words.len() as u32);
            }
            tg.words.push(p as u32);
        }
        tg.starts.push(tg.words.len() as u32);
        tg
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

/// Substring test for short haystacks (vocabulary words), where a plain
/// window comparison beats setting up a SIMD searcher.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    if hay.len() > 64 {
        return memmem::find(hay, needle).is_some();
    }
    hay.windows(needle.len()).any(|w| w == needle)
}
