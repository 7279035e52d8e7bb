//! The BM25F index's postings arrays sized from each token's number of
//! entries, and shares of them — a range of tokens' entries, bounds and
//! blocks — cut from the front of the whole, so that tokens can be written
//! in parallel into arrays of their exact size (a build and a splice both
//! lay their lists out this way); and a token's bounds and blocks from its
//! written entries (docs/spec.md §12.3).

use super::list::{body_byte, head_dir, head_word, is_head};
use super::offsets::{near, offsets};
use super::postings::{ListSizes, MappedLists, Postings};
use super::{Bm25fIndex, BLOCK};
use crate::text::analyze::Language;

/// The index's postings and bounds, as `Bm25fIndex` holds them.
pub(super) struct Laid {
    starts: Vec<u64>,
    /// `near`, `body` and `head_words`: the heap's or a cache file's.
    postings: Postings,
    firsts: Vec<u32>,
    lasts: Vec<u32>,
    max_tf: Vec<u16>,
    min_len: Vec<u32>,
    long_tokens: Vec<u32>,
    block_starts: Vec<u64>,
    block_last: Vec<u32>,
    block_max_tf: Vec<u16>,
    block_min_len: Vec<u32>,
}

impl Laid {
    /// Zeroed arrays for tokens with `counts` entries and head entries
    /// (list.rs) each, in token order, with where each token starts, the
    /// long tokens and where their blocks start; the postings in `mapped`
    /// when it is sized for them.
    pub(super) fn sized(
        counts: impl Iterator<Item = (usize, usize)>,
        mapped: Option<MappedLists>,
    ) -> Laid {
        let mut starts = vec![0u64];
        let mut long_tokens = Vec::new();
        let mut block_starts = vec![0u64];
        let (mut total, mut heads, mut blocks) = (0usize, 0usize, 0usize);
        for (t, (c, h)) in counts.enumerate() {
            total += c;
            heads += h;
            starts.push(total as u64);
            if c > BLOCK {
                long_tokens.push(t as u32);
                blocks += blocks_of(c);
                block_starts.push(blocks as u64);
            }
        }
        let tokens = starts.len() - 1;
        let sizes = ListSizes {
            entries: total,
            heads,
        };
        Laid {
            starts,
            postings: Postings::new(sizes, mapped),
            firsts: vec![0; tokens],
            lasts: vec![0; tokens],
            max_tf: vec![0; 4 * tokens],
            min_len: vec![0; 4 * tokens],
            long_tokens,
            block_starts,
            block_last: vec![0; blocks],
            block_max_tf: vec![0; 4 * blocks],
            block_min_len: vec![0; 4 * blocks],
        }
    }

    /// Whether the postings are laid in a cache file's mapping.
    pub(super) fn mapped(&self) -> bool {
        self.postings.mapped()
    }

    /// The whole arrays, to cut shares from.
    pub(super) fn share(&mut self) -> Share<'_> {
        let (near, body, head_words) = self.postings.parts();
        Share {
            near,
            firsts: &mut self.firsts,
            lasts: &mut self.lasts,
            body,
            head_words,
            max_tf: &mut self.max_tf,
            min_len: &mut self.min_len,
            block_last: &mut self.block_last,
            block_max_tf: &mut self.block_max_tf,
            block_min_len: &mut self.block_min_len,
        }
    }

    /// The index, with its wide tokens' frequencies, far tokens' concepts,
    /// vocabulary and field lengths.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn into_index(
        self,
        wide: Wide,
        far: Far,
        language: Option<Language>,
        vocab: Vec<u8>,
        token_starts: Vec<u32>,
        lengths: Vec<u32>,
        totals: [u64; 4],
    ) -> Bm25fIndex {
        let mut postings = self.postings;
        let head_dir = head_dir(postings.parts().1);
        let (near, body, head_words) = postings.into_arrays();
        Bm25fIndex {
            language,
            vocab: vocab.into(),
            token_starts: token_starts.into(),
            starts: self.starts.into(),
            near,
            firsts: self.firsts.into(),
            lasts: self.lasts.into(),
            far_tokens: far.tokens.into(),
            far_starts: far.starts.into(),
            far_docs: far.items.into(),
            head_dir: head_dir.into(),
            body,
            head_words,
            wide_tokens: wide.tokens.into(),
            wide_starts: wide.starts.into(),
            wide_tfs: wide.items.into(),
            lengths: lengths.into(),
            totals,
            max_tf: self.max_tf.into(),
            min_len: self.min_len.into(),
            long_tokens: self.long_tokens.into(),
            block_starts: self.block_starts.into(),
            block_last: self.block_last.into(),
            block_max_tf: self.block_max_tf.into(),
            block_min_len: self.block_min_len.into(),
            derived: Default::default(),
        }
    }
}

/// Tokens whose entries are kept apart, in token order, `PER` items an
/// entry: the wide tokens' frequencies (mod.rs: [`super::WIDE`]) and the far
/// tokens' concepts (list.rs).
pub(super) struct Side<T, const PER: usize> {
    tokens: Vec<u32>,
    starts: Vec<u64>,
    items: Vec<T>,
}

pub(super) type Wide = Side<u16, 4>;
pub(super) type Far = Side<u32, 1>;

impl<T, const PER: usize> Default for Side<T, PER> {
    fn default() -> Self {
        Side {
            tokens: Vec::new(),
            starts: vec![0],
            items: Vec::new(),
        }
    }
}

impl<T: Copy, const PER: usize> Side<T, PER> {
    /// An empty side with room for `tokens` tokens of `items` items in all,
    /// so that pushing them copies nothing into fresh pages ([`Side::concat`]).
    pub(super) fn with_room(tokens: usize, items: usize) -> Self {
        let mut starts = Vec::with_capacity(tokens + 1);
        starts.push(0);
        Side {
            tokens: Vec::with_capacity(tokens),
            starts,
            items: Vec::with_capacity(items),
        }
    }

    /// Token `t`'s items, `PER` per entry, after the tokens before it.
    pub(super) fn push(&mut self, t: u32, items: &[T]) {
        self.tokens.push(t);
        self.items.extend_from_slice(items);
        self.starts.push((self.items.len() / PER) as u64);
    }

    /// `parts` one after the other (their tokens ascending), into arrays
    /// made at their full size at once: grown by doubling, the far
    /// concepts (megabytes at scale) would be copied into fresh pages at
    /// every step, and fresh pages are what a cold load pays most for.
    pub(super) fn concat(parts: Vec<Self>) -> Self {
        let tokens: usize = parts.iter().map(|p| p.tokens.len()).sum();
        let items: usize = parts.iter().map(|p| p.items.len()).sum();
        let mut all = Side::with_room(tokens, items);
        for p in parts {
            let base = (all.items.len() / PER) as u64;
            all.tokens.extend(p.tokens);
            all.starts.extend(p.starts[1..].iter().map(|&s| base + s));
            all.items.extend(p.items);
        }
        all
    }
}

pub(super) struct Share<'a> {
    pub(super) near: &'a mut [u16],
    pub(super) firsts: &'a mut [u32],
    pub(super) lasts: &'a mut [u32],
    pub(super) body: &'a mut [u8],
    pub(super) head_words: &'a mut [u32],
    pub(super) max_tf: &'a mut [u16],
    pub(super) min_len: &'a mut [u32],
    pub(super) block_last: &'a mut [u32],
    pub(super) block_max_tf: &'a mut [u16],
    pub(super) block_min_len: &'a mut [u32],
}

/// The first `n` items of `rest`, which keeps the others.
fn cut<'a, T>(rest: &mut &'a mut [T], n: usize) -> &'a mut [T] {
    let (head, tail) = std::mem::take(rest).split_at_mut(n);
    *rest = tail;
    head
}

/// Per field, the largest frequency and the smallest length of a concept
/// holding the token there (`u32::MAX` when none does), over the entries
/// `docs` with their frequencies `tfs` (four per entry); and whether any
/// frequency is wide. Each entry's byte is written to `bytes` (one per
/// entry) and each head entry's word to the next of `words`, in the same
/// pass. An entry in the body alone (nearly all of a long list's) reads one
/// field, not four.
fn encode(
    docs: &[u32],
    tfs: &[u16],
    lengths: &[u32],
    bytes: &mut [u8],
    words: &mut std::slice::IterMut<'_, u32>,
) -> ([u16; 4], [u32; 4], bool) {
    let mut mx = [0u16; 4];
    let mut mn = [u32::MAX; 4];
    let mut top = 0u16;
    let body = super::field_lengths(lengths, 3);
    for ((&d, tf), byte) in docs.iter().zip(tfs.chunks_exact(4)).zip(bytes) {
        let d = d as usize;
        let tf = [tf[0], tf[1], tf[2], tf[3]];
        if !is_head(tf) {
            // In the body alone.
            *byte = body_byte(tf);
            top = top.max(tf[3]);
            mx[3] = mx[3].max(tf[3]);
            mn[3] = mn[3].min(body[d]);
            continue;
        }
        *byte = 0;
        // The share holds as many words as the count of head entries it
        // was cut for, which is taken the same way.
        if let Some(w) = words.next() {
            *w = head_word(tf);
        }
        for f in 0..4 {
            top = top.max(tf[f]);
            if tf[f] > 0 {
                mx[f] = mx[f].max(tf[f]);
                mn[f] = mn[f].min(super::field_lengths(lengths, f)[d]);
            }
        }
    }
    (mx, mn, top >= super::WIDE)
}

/// The blocks a list of `entries` entries is cut into: none for a short
/// list (its token's bounds say it all).
pub(super) fn blocks_of(entries: usize) -> usize {
    if entries > BLOCK {
        entries.div_ceil(BLOCK)
    } else {
        0
    }
}

impl<'a> Share<'a> {
    /// The share of `tokens` tokens with `entries` entries, `heads` of them
    /// head entries, in `blocks` blocks, cut from the front of `self`.
    pub(super) fn take(
        &mut self,
        tokens: usize,
        (entries, heads): (usize, usize),
        blocks: usize,
    ) -> Share<'a> {
        Share {
            near: cut(&mut self.near, entries),
            firsts: cut(&mut self.firsts, tokens),
            lasts: cut(&mut self.lasts, tokens),
            body: cut(&mut self.body, entries),
            head_words: cut(&mut self.head_words, heads),
            max_tf: cut(&mut self.max_tf, 4 * tokens),
            min_len: cut(&mut self.min_len, 4 * tokens),
            block_last: cut(&mut self.block_last, blocks),
            block_max_tf: cut(&mut self.block_max_tf, 4 * blocks),
            block_min_len: cut(&mut self.block_min_len, 4 * blocks),
        }
    }

    /// For a one-token share, its concepts `docs` (list.rs) and frequencies
    /// `full` (four per entry) as bytes and head words, and its bounds: per
    /// field the largest frequency and the smallest length of a concept
    /// holding the token there (`u32::MAX` when none does), over the token
    /// and over each block of a long list, with each block's last position,
    /// all in one pass over the entries ([`encode`]). Whether the token is
    /// wide (its frequencies also belong in [`Wide`]) and whether it is far
    /// (its concepts belong in [`Far`]).
    pub(super) fn put(&mut self, docs: &[u32], full: &[u16], lengths: &[u32]) -> (bool, bool) {
        let mut token_max = [0u16; 4];
        let mut token_min = [u32::MAX; 4];
        let mut wide = false;
        let mut words = self.head_words.iter_mut();
        let n = docs.len();
        for (blk, from) in (0..n).step_by(BLOCK).enumerate() {
            let to = (from + BLOCK).min(n);
            let (mx, mn, w) = encode(
                &docs[from..to],
                &full[4 * from..4 * to],
                lengths,
                &mut self.body[from..to],
                &mut words,
            );
            wide |= w;
            for f in 0..4 {
                token_max[f] = token_max[f].max(mx[f]);
                token_min[f] = token_min[f].min(mn[f]);
            }
            if !self.block_last.is_empty() {
                self.block_last[blk] = docs[to - 1];
                self.block_max_tf[4 * blk..4 * blk + 4].copy_from_slice(&mx);
                self.block_min_len[4 * blk..4 * blk + 4].copy_from_slice(&mn);
            }
        }
        debug_assert!(words.next().is_none(), "head entries miscounted");
        self.max_tf.copy_from_slice(&token_max);
        self.min_len.copy_from_slice(&token_min);
        (wide, self.place(docs))
    }

    /// For a one-token share, its concepts `docs`: its first and last, and
    /// its offsets unless it is far (then `true`; its offsets stay 0).
    pub(super) fn place(&mut self, docs: &[u32]) -> bool {
        self.firsts[0] = docs.first().copied().unwrap_or(0);
        self.lasts[0] = docs.last().copied().unwrap_or(0);
        if near(docs) {
            offsets(docs, self.near);
            false
        } else {
            self.near.fill(0);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// Entries in the body alone, in the heads alone and in both, some
    /// frequencies 0, some wide: the bounds are those of every field's
    /// nonzero frequencies, taken one field at a time; each entry's byte
    /// and each head entry's word as list.rs defines them.
    #[test]
    fn entries_encode_with_each_fields_bounds_over_its_nonzero_frequencies() {
        let mut rng = Rng(0xB0B0);
        for round in 0..300 {
            let n = 1 + rng.below(50);
            let lengths: Vec<u32> = (0..4 * n).map(|_| rng.below(1000) as u32).collect();
            let docs: Vec<u32> = (0..n as u32).filter(|_| rng.below(2) == 0).collect();
            let tf = |rng: &mut Rng| match rng.below(20) {
                0 => 250 + rng.below(20) as u16,
                _ => 1 + rng.below(9) as u16,
            };
            let tfs: Vec<u16> = (0..4 * docs.len())
                .map(|i| match (i % 4, rng.below(4)) {
                    (3, 0) => 0,
                    (3, _) => tf(&mut rng),
                    (_, 0) => tf(&mut rng),
                    _ => 0,
                })
                .collect();
            let (mut mx, mut mn) = ([0u16; 4], [u32::MAX; 4]);
            let (mut want_bytes, mut want_words) = (Vec::new(), Vec::new());
            for (e, &d) in docs.iter().enumerate() {
                for f in 0..4 {
                    let tf = tfs[4 * e + f];
                    if tf > 0 {
                        mx[f] = mx[f].max(tf);
                        mn[f] = mn[f].min(lengths[f * n + d as usize]);
                    }
                }
                let four = [tfs[4 * e], tfs[4 * e + 1], tfs[4 * e + 2], tfs[4 * e + 3]];
                want_bytes.push(body_byte(four));
                if is_head(four) {
                    want_words.push(head_word(four));
                }
            }
            let wide = tfs.iter().any(|&tf| tf >= super::super::WIDE);
            let mut bytes = vec![7u8; docs.len()];
            let mut words = vec![7u32; want_words.len()];
            let got = encode(&docs, &tfs, &lengths, &mut bytes, &mut words.iter_mut());
            assert_eq!(got, (mx, mn, wide), "round {round}");
            assert_eq!((bytes, words), (want_bytes, want_words), "round {round}");
        }
    }
}
