//! Building the BM25F index from the per-field index's chunks: every
//! distinct folded piece of the vocabulary is analysed once ([`Analyzer`]);
//! then each chunk's postings are regrouped by token (`runs.rs`, chunks in
//! parallel), and each token's lists from the chunks, which hold ascending
//! positions one range after the other, merged side by side into the
//! index's arrays with the pruning bounds (`lay.rs`).

use rayon::prelude::*;

use super::lay::{count, lay, token_ranges, RangeRuns};
use super::postings::{ListSizes, MappedLists};
use super::runs::{distinct_tokens, sub_tf, Csr, Runs, SOURCES};
use super::{totals_of, Bm25fIndex};
use crate::index::build::{Chunk, Vocab};
use crate::index::intern::Interner;
use crate::text::analyze::{Analyzer, Language};

/// What the BM25F index needs of the per-field index's chunks, taken from
/// them so that they can be dropped before the index is laid out.
pub struct Prepared {
    language: Option<Language>,
    vocab: Vec<u8>,
    token_starts: Vec<u32>,
    runs: Vec<RangeRuns>,
    /// Per token range, each token's entries and head entries.
    counts: Vec<Vec<(u32, u32)>>,
    lengths: Vec<u32>,
    totals: [u64; 4],
}

impl Prepared {
    /// The sizes of the lists' postings arrays, known before they are laid.
    pub fn sizes(&self) -> ListSizes {
        let (mut entries, mut heads) = (0usize, 0usize);
        for &(c, h) in self.counts.iter().flatten() {
            entries += c as usize;
            heads += h as usize;
        }
        ListSizes { entries, heads }
    }
}

/// The BM25F index of `n` concepts, first half, from the per-field index's
/// chunks and merged vocabularies (with each chunk's local → global word
/// ids): the tokens, each chunk's lists by token, and the field lengths.
/// Each chunk's frequencies, which only this reads, are freed as soon as
/// its lists and lengths are taken, so that they and the lists taken from
/// them are not all held at once (at scale, the build's largest moment).
pub fn prepare(
    analyzer: &Analyzer,
    n: usize,
    chunks: [&mut [Chunk]; 3],
    fields: [&Vocab; 3],
) -> Prepared {
    let (vocab, token_starts, word_tokens) = tokens_of_words(analyzer, fields);
    let ranges = token_ranges(token_starts.len() - 1);
    let distinct: Vec<Csr<(u32, u16)>> = word_tokens.par_iter().map(distinct_tokens).collect();
    // Per field, per chunk, per range; then regrouped by range.
    let mut by_range: Vec<RangeRuns> = (0..ranges.1).map(|_| Default::default()).collect();
    // Per BM25F field (`SOURCES`), every concept's length.
    let mut lengths = vec![0u32; 4 * n];
    for (k, chunks) in chunks.into_iter().enumerate() {
        let per_chunk: Vec<(Vec<Runs>, ChunkLengths)> = chunks
            .par_iter_mut()
            .zip(&fields[k].remaps)
            .map(|(chunk, remap)| {
                let runs = Runs::of(chunk, k, remap, &distinct[k], ranges);
                let lengths = chunk_lengths(chunk, k, remap, &word_tokens[k]);
                chunk.drop_frequencies();
                (runs, lengths)
            })
            .collect();
        for (runs, chunk_lengths) in per_chunk {
            for (r, runs) in runs.into_iter().enumerate() {
                by_range[r][k].push(runs);
            }
            chunk_lengths.write_into(&mut lengths, n);
        }
    }
    let runs = by_range;
    let totals = totals_of(&lengths);
    let counts = count(token_starts.len() - 1, &runs);
    Prepared {
        language: analyzer.language(),
        vocab,
        token_starts,
        runs,
        counts,
        lengths,
        totals,
    }
}

/// The second half, which needs no chunk: each token's lists laid out, their
/// postings in `mapped` when it is sized for them ([`Prepared::sizes`]).
pub fn finish(p: Prepared, mapped: Option<MappedLists>) -> Bm25fIndex {
    let n_tokens = p.token_starts.len() - 1;
    let (laid, wide, far) = lay(n_tokens, p.runs, &p.counts, &p.lengths, mapped);
    laid.into_index(
        wide,
        far,
        p.language,
        p.vocab,
        p.token_starts,
        p.lengths,
        p.totals,
    )
}

/// One chunk's part of the BM25F field lengths: for each BM25F field its
/// per-field index field feeds (`SOURCES`), the lengths of its concepts,
/// which are consecutive positions from `lo`.
struct ChunkLengths {
    lo: usize,
    /// `(BM25F field, lengths)`.
    fields: Vec<(usize, Vec<u32>)>,
}

impl ChunkLengths {
    /// Write them into `lengths`, laid out field by field for `n` concepts:
    /// a concept is in one chunk of each field, so nothing else adds to it.
    fn write_into(&self, lengths: &mut [u32], n: usize) {
        for (f, part) in &self.fields {
            lengths[f * n + self.lo..f * n + self.lo + part.len()].copy_from_slice(part);
        }
    }
}

/// Chunk `ch` of per-field index field `k`'s part of each field's length in
/// tokens per concept: a word's frequency times its number of tokens,
/// summed (stopping at `u32::MAX`).
fn chunk_lengths(
    ch: &Chunk,
    k: usize,
    remap: &[u32],
    (wt_starts, _): &(Vec<u32>, Vec<u32>),
) -> ChunkLengths {
    let fields = SOURCES
        .iter()
        .enumerate()
        .filter(|(_, &(source, _))| source == k)
        .map(|(f, &(_, half))| {
            let mut lengths = vec![0u32; ch.concepts];
            // The occurrences past a count's cap, in this field's part.
            let part = u8::from(half == Some(false));
            for &(o, w, _, n) in ch.beyond.iter().filter(|b| b.2 == part) {
                let g = remap[w as usize] as usize;
                let toks = wt_starts[g + 1] - wt_starts[g];
                let l = &mut lengths[usize::from(o)];
                *l = l.saturating_add(n.saturating_mul(toks));
            }
            for (w, &g) in remap.iter().enumerate() {
                let toks = wt_starts[g as usize + 1] - wt_starts[g as usize];
                if toks == 0 {
                    continue;
                }
                if half.is_none() {
                    // The count as it is: no halves to take apart.
                    let (offsets, tfs) = ch.postings_and_tfs(w);
                    for (&o, &tf) in offsets.iter().zip(tfs) {
                        let l = &mut lengths[usize::from(o)];
                        *l = l.saturating_add(u32::from(tf).saturating_mul(toks));
                    }
                    continue;
                }
                for (o, tf) in ch.entries(w) {
                    let l = &mut lengths[usize::from(o)];
                    *l = l.saturating_add(u32::from(sub_tf(tf, half)).saturating_mul(toks));
                }
            }
            (f, lengths)
        })
        .collect();
    ChunkLengths {
        lo: ch.base as usize,
        fields,
    }
}

/// Each field's words as tokens (CSR over the field's word ids: a word's
/// token ids, repeated as often as the token occurs in it), and the sorted
/// token vocabulary they index.
#[allow(clippy::type_complexity)]
fn tokens_of_words(
    analyzer: &Analyzer,
    fields: [&Vocab; 3],
) -> (Vec<u8>, Vec<u32>, [(Vec<u32>, Vec<u32>); 3]) {
    const PART: usize = 4096;
    // Per field, per part of its words: the part's tokens interned locally,
    // and each word's local token ids.
    let parts: Vec<Vec<(Interner, Vec<u32>, Vec<u32>)>> = fields
        .iter()
        .map(|f| {
            let n = f.word_count();
            (0..n.div_ceil(PART))
                .into_par_iter()
                .map(|p| {
                    let mut it = Interner::default();
                    let mut starts = vec![0u32];
                    let mut toks = Vec::new();
                    for w in p * PART..((p + 1) * PART).min(n) {
                        // Vocabulary words are folded text (valid UTF-8).
                        let word = std::str::from_utf8(f.word(w as u32)).unwrap_or("");
                        analyzer.for_each_token(word, |t| {
                            toks.push(it.intern(t.text.as_bytes()).0);
                        });
                        starts.push(toks.len() as u32);
                    }
                    it.freeze();
                    (it, starts, toks)
                })
                .collect()
        })
        .collect();
    // One vocabulary for all fields, in first-seen order, then sorted.
    let mut all = Interner::default();
    let mut local_to_all: Vec<Vec<Vec<u32>>> = Vec::with_capacity(3);
    for field in &parts {
        local_to_all.push(
            field
                .iter()
                .map(|(it, _, _)| {
                    (0..it.len() as u32)
                        .map(|w| all.intern(it.word(w)).0)
                        .collect()
                })
                .collect(),
        );
    }
    all.freeze();
    let order = in_byte_order(&all);
    let mut rank = vec![0u32; order.len()];
    let mut vocab = Vec::with_capacity(all.arena.len() + order.len());
    let mut token_starts = Vec::with_capacity(order.len() + 1);
    for (r, &t) in order.iter().enumerate() {
        rank[t as usize] = r as u32;
        token_starts.push(vocab.len() as u32);
        vocab.extend_from_slice(all.word(t));
        vocab.push(b'\n');
    }
    token_starts.push(vocab.len() as u32);
    let word_tokens: Vec<(Vec<u32>, Vec<u32>)> = parts
        .iter()
        .zip(&local_to_all)
        .map(|(field, maps)| {
            let mut starts = vec![0u32];
            let mut toks = Vec::new();
            for ((_, s, t), map) in field.iter().zip(maps) {
                for w in 0..s.len() - 1 {
                    toks.extend(
                        t[s[w] as usize..s[w + 1] as usize]
                            .iter()
                            .map(|&l| rank[map[l as usize] as usize]),
                    );
                    starts.push(toks.len() as u32);
                }
            }
            (starts, toks)
        })
        .collect();
    let word_tokens: [(Vec<u32>, Vec<u32>); 3] = match word_tokens.try_into() {
        Ok(w) => w,
        Err(_) => unreachable!("three fields"),
    };
    (vocab, token_starts, word_tokens)
}

/// The ids of `all`'s words in byte order of the words.
fn in_byte_order(all: &Interner) -> Vec<u32> {
    // Sorted by each word's first eight bytes as one integer, and by the
    // whole word only where those are equal: most comparisons are then of
    // two integers held in the array, not of two words looked up elsewhere.
    let mut keyed: Vec<(u64, u32)> = (0..all.len() as u32)
        .map(|t| (prefix_key(all.word(t)), t))
        .collect();
    keyed.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| all.word(a.1).cmp(all.word(b.1))));
    keyed.into_iter().map(|(_, t)| t).collect()
}

/// A word's first eight bytes as a big-endian integer, zeros after its end:
/// `a < b` as bytes implies `prefix_key(a) <= prefix_key(b)` (a word that
/// ends sooner orders first, and its zeros are no greater than any byte).
fn prefix_key(w: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    let n = w.len().min(8);
    x[..n].copy_from_slice(&w[..n]);
    u64::from_be_bytes(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words sharing their first eight bytes or more, prefixes of each
    /// other, bytes above 0x7F: the order is the words' byte order.
    #[test]
    fn words_are_put_in_byte_order() {
        let words: [&[u8]; 14] = [
            b"zeta",
            b"abcdefghj",
            b"a",
            b"abcdefgh",
            b"abcdefghi\xc3\xa9",
            b"ab",
            b"abcdefghi",
            b"abcdefgi",
            b"\xc3\xa9t\xc3\xa9",
            b"abcdefgh\x00",
            b"b",
            b"abcdefghij",
            b"abcdefga",
            b"\x00",
        ];
        let mut all = Interner::default();
        for w in words {
            all.intern(w);
        }
        let got: Vec<&[u8]> = in_byte_order(&all).iter().map(|&t| all.word(t)).collect();
        let mut want = words.to_vec();
        want.sort();
        assert_eq!(got, want);
    }
}
