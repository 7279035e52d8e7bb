//! One chunk of one per-field index field, token by token: the first step
//! of building the BM25F index (docs/spec.md §12), done chunk by chunk and
//! in parallel, so that each task reads one chunk's postings, close
//! together, rather than every chunk's for each token.

use super::offsets::gallop;
use crate::index::build::Chunk;

/// Where each BM25F field comes from: the per-field index's field, and which
/// count of its postings (`None`: the whole count; `Some(true)`: the high
/// half, the tags; `Some(false)`: the low half, the description).
pub(super) const SOURCES: [(usize, Option<bool>); 4] =
    [(0, None), (1, Some(true)), (1, Some(false)), (2, None)];

pub(super) fn sub_tf(tf: u32, half: Option<bool>) -> u16 {
    match half {
        None => tf.min(u32::from(u16::MAX)) as u16,
        Some(true) => (tf >> 16) as u16,
        Some(false) => (tf & 0xFFFF) as u16,
    }
}

/// A token from at most this many words has their postings merged, not
/// sorted: a pass over the words' next postings per entry costs less than a
/// sort while they are few.
const MERGE: usize = 8;

/// `listed`'s pairs (token, word, times) by token, then word: listed by
/// word already, and a word's tokens are distinct, so an order stable
/// within each token is that order. With few tokens for the pairs, a
/// counting sort (one pass to count each token's pairs, one to place them);
/// otherwise a sort of `token << 32 | index` (plain integers, which sort
/// faster than the triples; a chunk lists far fewer than 2^32 pairs, so the
/// index fits its half).
fn by_token(listed: Vec<(u32, u32, u16)>, tokens: usize) -> Vec<(u32, u32, u16)> {
    if tokens <= 4 * listed.len() {
        let mut at = vec![0u32; tokens + 1];
        for &(t, _, _) in &listed {
            at[t as usize + 1] += 1;
        }
        for i in 1..at.len() {
            at[i] += at[i - 1];
        }
        let mut pairs = vec![(0u32, 0u32, 0u16); listed.len()];
        for &pair in &listed {
            let slot = &mut at[pair.0 as usize];
            pairs[*slot as usize] = pair;
            *slot += 1;
        }
        return pairs;
    }
    let mut keys: Vec<u64> = (0..listed.len())
        .map(|i| u64::from(listed[i].0) << 32 | i as u64)
        .collect();
    keys.sort_unstable();
    keys.iter()
        .map(|&k| listed[(k & u64::from(u32::MAX)) as usize])
        .collect()
}

/// One chunk of one per-field index field, token by token: the tokens its
/// words give, ascending, each with its concepts, ascending, and its
/// frequencies there (`a`: the field's, or the tags' for `tags_desc`; `b`:
/// the description's). A token's frequency in a concept is its source
/// words' frequencies, each times the token comes out of the word, summed
/// (each stopping at `u16::MAX`).
#[derive(Default)]
pub(super) struct Runs {
    pub(super) tokens: Vec<u32>,
    pub(super) starts: Vec<u32>,
    /// The first position of the chunk the runs come from.
    base: u32,
    /// Each entry's position less `base` (a chunk's offsets fit 16 bits):
    /// the runs of every chunk are held until they are laid out, so two
    /// bytes an entry instead of four lower the build's peak at scale.
    offsets: Vec<u16>,
    pub(super) a: Vec<u16>,
    /// Empty but for `tags_desc`.
    pub(super) b: Vec<u16>,
}

impl Runs {
    /// The runs of chunk `ch` of field `k`, whose local words are global
    /// words `remap`; `word_tokens[g]`: global word `g`'s distinct tokens,
    /// each with how many times it comes out of the word. Apart per range of
    /// `per` tokens (`ranges` of them): each range's lists are laid out on
    /// their own, and its runs dropped then (lay.rs).
    pub(super) fn of(
        ch: &Chunk,
        k: usize,
        remap: &[u32],
        word_tokens: &Csr<(u32, u16)>,
        (per, ranges): (usize, usize),
    ) -> Vec<Runs> {
        // How many of the chunk's concepts hold local word `w`.
        let held_by = |w: usize| (ch.starts[w + 1] - ch.starts[w]) as usize;
        let halves = k == 1;
        let mut listed: Vec<(u32, u32, u16)> = Vec::new();
        for (w, &g) in remap.iter().enumerate() {
            if held_by(w) > 0 {
                listed.extend(
                    word_tokens
                        .row(g as usize)
                        .iter()
                        .map(|&(t, x)| (t, w as u32, x)),
                );
            }
        }
        let pairs = by_token(listed, per * ranges);
        // Room for every posting of every pair, reserved once: pages never
        // written are never touched, and nothing is copied to grow.
        let mut most = vec![0usize; ranges];
        for &(t, w, _) in &pairs {
            most[t as usize / per] += held_by(w as usize);
        }
        let (ha, hb) = if halves {
            (Some(true), Some(false))
        } else {
            (None, None)
        };
        let mut out: Vec<Runs> = most
            .iter()
            .map(|&most| Runs {
                base: ch.base,
                offsets: Vec::with_capacity(most),
                a: Vec::with_capacity(most),
                b: Vec::with_capacity(if halves { most } else { 0 }),
                ..Runs::default()
            })
            .collect();
        // The chunk's concepts' slots and their marks, for a token from many
        // words or whose words hold many of the concepts (below).
        let span = ch.concepts;
        let mut dense: Vec<(u16, u16)> = Vec::new();
        let mut marks: Vec<u64> = Vec::new();
        let mut heads: Vec<(usize, usize, u16)> = Vec::new();
        let mut i = 0;
        while i < pairs.len() {
            let t = pairs[i].0;
            let runs = &mut out[t as usize / per];
            // Most tokens come from one word: a scan, not a search.
            let mut j = i + 1;
            while j < pairs.len() && pairs[j].0 == t {
                j += 1;
            }
            let words = &pairs[i..j];
            let entries = |w: u32| ch.entries(w as usize);
            let tf_of = |tf: u32, times: u16| {
                let a = sub_tf(tf, ha).saturating_mul(times);
                let b = if halves {
                    sub_tf(tf, hb).saturating_mul(times)
                } else {
                    0
                };
                (a, b)
            };
            let held: usize = words.iter().map(|&(_, w, _)| held_by(w as usize)).sum();
            let from = runs.offsets.len();
            if words.len() > MERGE || (words.len() > 1 && held >= span / 8) {
                // Many words, or words holding many of the chunk's concepts:
                // their frequencies added up in one slot per concept, the
                // slots written marked in a bitmap and read back in order
                // (a pass over the marks' words, not over every slot, nor a
                // sort of the postings).
                dense.resize(span, (0, 0));
                marks.resize(span.div_ceil(64), 0);
                for &(_, w, times) in words {
                    let (offsets, a, b) = ch.halves(w as usize);
                    if let Some(b) = b {
                        for ((&o, &x), &y) in offsets.iter().zip(a).zip(b) {
                            let (x, y) = (x.saturating_mul(times), y.saturating_mul(times));
                            if x | y != 0 {
                                let slot = &mut dense[usize::from(o)];
                                slot.0 = slot.0.saturating_add(x);
                                slot.1 = slot.1.saturating_add(y);
                                marks[usize::from(o) / 64] |= 1 << (o % 64);
                            }
                        }
                    } else {
                        for (&o, &x) in offsets.iter().zip(a) {
                            let x = x.saturating_mul(times);
                            if x != 0 {
                                let slot = &mut dense[usize::from(o)].0;
                                *slot = slot.saturating_add(x);
                                marks[usize::from(o) / 64] |= 1 << (o % 64);
                            }
                        }
                    }
                }
                for (k, mark) in marks.iter_mut().enumerate() {
                    let mut bits = std::mem::take(mark);
                    while bits != 0 {
                        let x = k * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let slot = std::mem::take(&mut dense[x]);
                        // Below the chunk's concepts, which fit 16 bits.
                        runs.push(x as u16, slot.0, slot.1, halves);
                    }
                }
            } else if let [(_, w, times)] = *words {
                // One word: its postings ascend and are distinct already.
                let (offsets, tfs) = ch.postings_and_tfs(w as usize);
                if !halves && times == 1 && !tfs.contains(&0) {
                    // Said once in the word, outside `tags_desc` (nearly
                    // every token): the word's postings and counts as they
                    // are, copied whole.
                    runs.offsets.extend_from_slice(offsets);
                    runs.a.extend_from_slice(tfs);
                } else {
                    for (o, tf) in entries(w) {
                        let (a, b) = tf_of(tf, times);
                        if a > 0 || b > 0 {
                            runs.push(o, a, b, halves);
                        }
                    }
                }
            } else if let (false, &[(_, w1, t1), (_, w2, t2)]) = (halves, words) {
                // Two words outside `tags_desc` (the most common case of a
                // token from several words: a word and the same word with
                // punctuation), merged straight from their postings.
                let one = ch.postings_and_tfs(w1 as usize);
                let two = ch.postings_and_tfs(w2 as usize);
                merge_two(runs, (one.0, one.1, t1), (two.0, two.1, t2));
            } else if words.len() <= MERGE {
                // A few words: their postings, each ascending, merged; a
                // concept holding two of the words is one entry.
                heads.clear();
                heads.extend(words.iter().map(|&(_, w, times)| {
                    let w = w as usize;
                    (ch.starts[w] as usize, ch.starts[w + 1] as usize, times)
                }));
                loop {
                    let mut o = u16::MAX as u32 + 1;
                    for &(at, end, _) in &heads {
                        if at < end {
                            o = o.min(u32::from(ch.postings[at]));
                        }
                    }
                    if o > u32::from(u16::MAX) {
                        break;
                    }
                    let (mut a, mut b) = (0u16, 0u16);
                    for (at, end, times) in &mut heads {
                        if *at < *end && u32::from(ch.postings[*at]) == o {
                            let (x, y) = tf_of(ch.count_at(*at), *times);
                            (a, b) = (a.saturating_add(x), b.saturating_add(y));
                            *at += 1;
                        }
                    }
                    if a > 0 || b > 0 {
                        runs.push(o as u16, a, b, halves);
                    }
                }
            }
            if runs.offsets.len() > from {
                runs.tokens.push(t);
                runs.starts.push(from as u32);
            }
            i = j;
        }
        for runs in &mut out {
            runs.starts.push(runs.offsets.len() as u32);
        }
        out
    }

    /// Runs of a chunk starting at position `base` from each token's
    /// entries (tokens ascending; offsets from `base` ascending, frequencies
    /// not both 0), for tests of what reads them.
    #[cfg(test)]
    #[allow(clippy::type_complexity)]
    pub(super) fn from_entries(
        base: u32,
        halves: bool,
        tokens: &[(u32, Vec<(u16, u16, u16)>)],
    ) -> Runs {
        let mut runs = Runs {
            base,
            ..Runs::default()
        };
        for (t, entries) in tokens {
            runs.tokens.push(*t);
            runs.starts.push(runs.offsets.len() as u32);
            for &(o, a, b) in entries {
                runs.push(o, a, b, halves);
            }
        }
        runs.starts.push(runs.offsets.len() as u32);
        runs
    }

    fn push(&mut self, offset: u16, a: u16, b: u16, halves: bool) {
        self.offsets.push(offset);
        self.a.push(a);
        if halves {
            self.b.push(b);
        }
    }

    /// Entry `e`'s position.
    #[inline]
    pub(super) fn position(&self, e: usize) -> u32 {
        self.base + u32::from(self.offsets[e])
    }

    /// The first entry of `from..end` whose position is not below `d`
    /// (`end` when none is).
    pub(super) fn first_at(&self, from: usize, end: usize, d: u32) -> usize {
        gallop(&self.offsets[..end], from, |o| self.base + u32::from(o) < d)
    }

    /// The index of the first token `>= t`.
    pub(super) fn find(&self, t: u32) -> usize {
        self.tokens.partition_point(|&x| x < t)
    }
}

/// Appends to `runs` (outside `tags_desc`) the merge of two words'
/// postings, each with its counts and how many times the token comes out
/// of the word: a concept holding both is one entry, its counts (each times
/// its word's) added, stopping at `u16::MAX`; an entry whose count is 0 is
/// left out, as everywhere in the runs. The general merge's loops over its
/// words' heads, unrolled for two.
fn merge_two(runs: &mut Runs, one: (&[u16], &[u16], u16), two: (&[u16], &[u16], u16)) {
    let ((o1, f1, t1), (o2, f2, t2)) = (one, two);
    let (mut i, mut j) = (0, 0);
    while i < o1.len() && j < o2.len() {
        let (x, y) = (o1[i], o2[j]);
        let a = if x <= y { f1[i].saturating_mul(t1) } else { 0 };
        let b = if y <= x { f2[j].saturating_mul(t2) } else { 0 };
        let sum = a.saturating_add(b);
        if sum > 0 {
            runs.offsets.push(x.min(y));
            runs.a.push(sum);
        }
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    for (o, f, t, from) in [(o1, f1, t1, i), (o2, f2, t2, j)] {
        for (&o, &f) in o[from..].iter().zip(&f[from..]) {
            let a = f.saturating_mul(t);
            if a > 0 {
                runs.offsets.push(o);
                runs.a.push(a);
            }
        }
    }
}

/// Rows of `T` (`items[starts[i]..starts[i + 1]]`).
pub(super) struct Csr<T> {
    starts: Vec<u32>,
    items: Vec<T>,
}

impl<T> Csr<T> {
    fn row(&self, i: usize) -> &[T] {
        &self.items[self.starts[i] as usize..self.starts[i + 1] as usize]
    }
}

/// Each global word's distinct tokens with their counts, from its tokens
/// listed once per occurrence.
pub(super) fn distinct_tokens((wt_starts, wt_toks): &(Vec<u32>, Vec<u32>)) -> Csr<(u32, u16)> {
    let mut starts = Vec::with_capacity(wt_starts.len());
    let mut items: Vec<(u32, u16)> = Vec::with_capacity(wt_toks.len());
    starts.push(0);
    for g in 0..wt_starts.len() - 1 {
        let from = items.len();
        for &t in &wt_toks[wt_starts[g] as usize..wt_starts[g + 1] as usize] {
            match items[from..].iter_mut().find(|p| p.0 == t) {
                Some(p) => p.1 = p.1.saturating_add(1),
                None => items.push((t, 1)),
            }
        }
        starts.push(items.len() as u32);
    }
    Csr { starts, items }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::testing::Rng;

    /// A word's postings: distinct ascending offsets, each with a count
    /// (some 0, some near the cap).
    fn word(rng: &mut Rng) -> (Vec<u16>, Vec<u16>) {
        let (mut o, mut f) = (Vec::new(), Vec::new());
        for x in 0..60u16 {
            if rng.below(3) == 0 {
                o.push(x);
                f.push(match rng.below(6) {
                    0 => 0,
                    1 => u16::MAX - rng.below(3) as u16,
                    _ => 1 + rng.below(4) as u16,
                });
            }
        }
        (o, f)
    }

    #[test]
    fn two_words_merge_as_their_counts_added_up() {
        let mut rng = Rng(0x2A2A);
        for round in 0..500 {
            let (one, two) = (word(&mut rng), word(&mut rng));
            let (t1, t2) = (1 + rng.below(3) as u16, 1 + rng.below(3) as u16);
            let mut want: BTreeMap<u16, u16> = BTreeMap::new();
            for ((o, f), t) in [(&one, t1), (&two, t2)] {
                for (&o, &f) in o.iter().zip(f) {
                    let e = want.entry(o).or_default();
                    *e = e.saturating_add(f.saturating_mul(t));
                }
            }
            want.retain(|_, a| *a > 0);
            let mut runs = Runs::default();
            merge_two(&mut runs, (&one.0, &one.1, t1), (&two.0, &two.1, t2));
            let got: Vec<(u16, u16)> = runs.offsets.iter().copied().zip(runs.a).collect();
            let want: Vec<(u16, u16)> = want.into_iter().collect();
            assert_eq!(got, want, "round {round}");
        }
    }

    /// Both ways of [`by_token`] give the pairs by token, then in their
    /// listed order, on pair lists with few and with many tokens.
    #[test]
    fn pairs_are_ordered_by_token_then_as_listed() {
        let mut rng = Rng(0x5EED);
        for len in [0usize, 1, 2, 7, 100, 1000] {
            for tokens in [1u64, 3, 50, 5000] {
                let listed: Vec<(u32, u32, u16)> = (0..len)
                    .map(|i| {
                        (
                            rng.below(tokens as usize) as u32,
                            i as u32,
                            rng.below(5) as u16,
                        )
                    })
                    .collect();
                let mut want = listed.clone();
                want.sort_by_key(|p| p.0);
                // A bound of at most 4 pairs a token counts; a larger one sorts.
                for bound in [tokens as usize, tokens as usize + 4 * len + 1] {
                    assert_eq!(
                        by_token(listed.clone(), bound),
                        want,
                        "{len} {tokens} {bound}"
                    );
                }
            }
        }
    }
}
