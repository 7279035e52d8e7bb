//! Building the BM25F index from the per-field index's chunks: every
//! distinct folded piece of the vocabulary is analysed once ([`Analyzer`]),
//! each piece's per-concept counts are spread onto its tokens per field, and
//! the four fields' lists are merged per token, with the pruning bounds.

use rayon::prelude::*;

use super::{Bm25fIndex, BLOCK};
use crate::index::build::{Chunk, Vocab};
use crate::index::intern::Interner;
use crate::text::analyze::{Analyzer, Language};

/// One field's postings while the index is built: token `t`'s concepts are
/// `docs[starts[t]..starts[t + 1]]` (ascending), each with its frequency.
struct FieldPostings {
    starts: Vec<u64>,
    docs: Vec<u32>,
    tfs: Vec<u16>,
    lengths: Vec<u32>,
}

impl FieldPostings {
    fn list(&self, t: usize) -> (&[u32], &[u16]) {
        let (a, b) = (self.starts[t] as usize, self.starts[t + 1] as usize);
        (&self.docs[a..b], &self.tfs[a..b])
    }
}

/// Where each BM25F field comes from: the per-field index's field, and which
/// count of its postings (`None`: the whole count; `Some(true)`: the high
/// half, the tags; `Some(false)`: the low half, the description).
const SOURCES: [(usize, Option<bool>); 4] =
    [(0, None), (1, Some(true)), (1, Some(false)), (2, None)];

fn sub_tf(tf: u32, half: Option<bool>) -> u16 {
    match half {
        None => tf.min(u32::from(u16::MAX)) as u16,
        Some(true) => (tf >> 16) as u16,
        Some(false) => (tf & 0xFFFF) as u16,
    }
}

/// The BM25F index of `n` concepts from the per-field index's chunks and
/// merged vocabularies (with each chunk's local → global word ids).
pub fn build(
    analyzer: &Analyzer,
    n: usize,
    chunks: [&[Chunk]; 3],
    fields: [&Vocab; 3],
) -> Bm25fIndex {
    let (vocab, token_starts, word_tokens) = tokens_of_words(analyzer, fields);
    let n_tokens = token_starts.len() - 1;
    let built: Vec<FieldPostings> = SOURCES
        .par_iter()
        .map(|&(k, half)| {
            field_postings(
                n,
                n_tokens,
                chunks[k],
                &fields[k].remaps,
                &word_tokens[k],
                half,
            )
        })
        .collect();
    let fields: [FieldPostings; 4] = match built.try_into() {
        Ok(f) => f,
        Err(_) => unreachable!("four sources make four fields"),
    };
    union(analyzer.language(), vocab, token_starts, n, &fields)
}

/// One token's merged list: positions, four frequencies each, per field the
/// largest frequency and smallest length, and per block of a long list its
/// last position and bounds.
#[derive(Default)]
struct Merged {
    docs: Vec<u32>,
    tfs: Vec<u16>,
    max_tf: [u16; 4],
    min_len: [u32; 4],
    block_last: Vec<u32>,
    block_max_tf: Vec<u16>,
    block_min_len: Vec<u32>,
}

impl Merged {
    /// Record the bounds of the entries pushed since `from`, per field.
    fn close_block(&mut self, from: usize, lengths: &[u32]) {
        let mut max_tf = [0u16; 4];
        let mut min_len = [u32::MAX; 4];
        for (i, &d) in self.docs[from..].iter().enumerate() {
            for f in 0..4 {
                let tf = self.tfs[4 * (from + i) + f];
                if tf > 0 {
                    max_tf[f] = max_tf[f].max(tf);
                    min_len[f] = min_len[f].min(lengths[4 * d as usize + f]);
                }
            }
        }
        for f in 0..4 {
            self.max_tf[f] = self.max_tf[f].max(max_tf[f]);
            self.min_len[f] = self.min_len[f].min(min_len[f]);
        }
        self.block_last.extend(self.docs.last());
        self.block_max_tf.extend(max_tf);
        self.block_min_len.extend(min_len);
    }
}

/// The index from the four fields' postings: per token, the union of its
/// four lists with the frequencies side by side, and the pruning bounds.
fn union(
    language: Option<Language>,
    vocab: Vec<u8>,
    token_starts: Vec<u32>,
    n: usize,
    fields: &[FieldPostings; 4],
) -> Bm25fIndex {
    let n_tokens = token_starts.len() - 1;
    let mut lengths = vec![0u32; 4 * n];
    for (f, fp) in fields.iter().enumerate() {
        for (d, &l) in fp.lengths.iter().enumerate() {
            lengths[4 * d + f] = l;
        }
    }
    let totals: [u64; 4] =
        std::array::from_fn(|f| fields[f].lengths.iter().map(|&l| u64::from(l)).sum());
    // Each token's merged list, in parallel, then laid end to end.
    let merged: Vec<Merged> = (0..n_tokens)
        .into_par_iter()
        .map(|t| {
            let lists: [(&[u32], &[u16]); 4] = std::array::from_fn(|f| fields[f].list(t));
            let mut at = [0usize; 4];
            let mut m = Merged {
                min_len: [u32::MAX; 4],
                ..Merged::default()
            };
            let mut block_from = 0;
            while let Some(d) = (0..4).filter_map(|f| lists[f].0.get(at[f]).copied()).min() {
                m.docs.push(d);
                for f in 0..4 {
                    let (fd, ftf) = lists[f];
                    let tf = if fd.get(at[f]) == Some(&d) {
                        at[f] += 1;
                        ftf[at[f] - 1]
                    } else {
                        0
                    };
                    m.tfs.push(tf);
                }
                if m.docs.len() - block_from == BLOCK {
                    m.close_block(block_from, &lengths);
                    block_from = m.docs.len();
                }
            }
            if m.docs.len() > block_from {
                m.close_block(block_from, &lengths);
            }
            if m.docs.len() <= BLOCK {
                // One block: the token's own bounds say it all.
                m.block_last.clear();
                m.block_max_tf.clear();
                m.block_min_len.clear();
            }
            m
        })
        .collect();
    let total: usize = merged.iter().map(|m| m.docs.len()).sum();
    let blocks: usize = merged.iter().map(|m| m.block_last.len()).sum();
    let mut starts = Vec::with_capacity(n_tokens + 1);
    let mut docs = Vec::with_capacity(total);
    let mut tfs = Vec::with_capacity(4 * total);
    let mut max_tf = Vec::with_capacity(4 * n_tokens);
    let mut min_len = Vec::with_capacity(4 * n_tokens);
    let mut long_tokens = Vec::new();
    let mut block_starts = vec![0u64];
    let mut block_last = Vec::with_capacity(blocks);
    let mut block_max_tf = Vec::with_capacity(4 * blocks);
    let mut block_min_len = Vec::with_capacity(4 * blocks);
    for (t, m) in merged.into_iter().enumerate() {
        starts.push(docs.len() as u64);
        docs.extend(m.docs);
        tfs.extend(m.tfs);
        max_tf.extend(m.max_tf);
        min_len.extend(m.min_len);
        if !m.block_last.is_empty() {
            long_tokens.push(t as u32);
            block_last.extend(m.block_last);
            block_max_tf.extend(m.block_max_tf);
            block_min_len.extend(m.block_min_len);
            block_starts.push(block_last.len() as u64);
        }
    }
    starts.push(docs.len() as u64);
    Bm25fIndex {
        language,
        vocab: vocab.into(),
        token_starts: token_starts.into(),
        starts: starts.into(),
        docs: docs.into(),
        tfs: tfs.into(),
        lengths: lengths.into(),
        totals,
        max_tf: max_tf.into(),
        min_len: min_len.into(),
        long_tokens: long_tokens.into(),
        block_starts: block_starts.into(),
        block_last: block_last.into(),
        block_max_tf: block_max_tf.into(),
        block_min_len: block_min_len.into(),
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
    let mut order: Vec<u32> = (0..all.len() as u32).collect();
    order.par_sort_unstable_by(|&a, &b| all.word(a).cmp(all.word(b)));
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

/// One BM25F field's postings from the chunks of the per-field index field
/// it comes from.
fn field_postings(
    n: usize,
    n_tokens: usize,
    chunks: &[Chunk],
    remaps: &[Vec<u32>],
    (wt_starts, wt_toks): &(Vec<u32>, Vec<u32>),
    half: Option<bool>,
) -> FieldPostings {
    let tokens =
        |g: u32| &wt_toks[wt_starts[g as usize] as usize..wt_starts[g as usize + 1] as usize];
    // How many (word, occurrence) sources each token has: one source gives
    // a list already in position order without repeats.
    let mut sources = vec![0u32; n_tokens];
    for &t in wt_toks {
        sources[t as usize] += 1;
    }
    // Count, then place in chunk order (positions ascending per source).
    let mut count = vec![0u64; n_tokens + 1];
    let mut lengths = vec![0u32; n];
    for (ch, remap) in chunks.iter().zip(remaps) {
        for (w, &g) in remap.iter().enumerate() {
            let range = ch.starts[w] as usize..ch.starts[w + 1] as usize;
            let toks = tokens(g);
            if toks.is_empty() {
                continue;
            }
            let mut held = 0u64;
            for (&p, &tf) in ch.postings[range.clone()].iter().zip(&ch.tfs[range]) {
                let tf = sub_tf(tf, half);
                if tf > 0 {
                    held += 1;
                    let l = &mut lengths[p as usize];
                    *l = l.saturating_add(u32::from(tf).saturating_mul(toks.len() as u32));
                }
            }
            for &t in toks {
                count[t as usize + 1] += held;
            }
        }
    }
    for i in 1..count.len() {
        count[i] += count[i - 1];
    }
    let total_slots = count[n_tokens] as usize;
    let mut docs = vec![0u32; total_slots];
    let mut tfs = vec![0u16; total_slots];
    let mut cursor: Vec<u64> = count[..n_tokens].to_vec();
    for (ch, remap) in chunks.iter().zip(remaps) {
        for (w, &g) in remap.iter().enumerate() {
            let range = ch.starts[w] as usize..ch.starts[w + 1] as usize;
            for &t in tokens(g) {
                let c = &mut cursor[t as usize];
                for (&p, &tf) in ch.postings[range.clone()]
                    .iter()
                    .zip(&ch.tfs[range.clone()])
                {
                    let tf = sub_tf(tf, half);
                    if tf > 0 {
                        docs[*c as usize] = p;
                        tfs[*c as usize] = tf;
                        *c += 1;
                    }
                }
            }
        }
    }
    // Tokens with several sources: their lists sorted by position, repeats
    // merged (their frequencies summed); in parallel, each token's segment
    // its own slice.
    let mut kept: Vec<u64> = (0..n_tokens).map(|t| count[t + 1] - count[t]).collect();
    let mut segments: Vec<(usize, &mut [u32], &mut [u16])> = Vec::new();
    let (mut rest_docs, mut rest_tfs) = (&mut docs[..], &mut tfs[..]);
    let mut at = 0usize;
    for t in 0..n_tokens {
        let (a, b) = (count[t] as usize, count[t + 1] as usize);
        if sources[t] <= 1 || b == a {
            continue;
        }
        let (_, d) = std::mem::take(&mut rest_docs).split_at_mut(a - at);
        let (seg_d, d) = d.split_at_mut(b - a);
        let (_, f) = std::mem::take(&mut rest_tfs).split_at_mut(a - at);
        let (seg_f, f) = f.split_at_mut(b - a);
        segments.push((t, seg_d, seg_f));
        (rest_docs, rest_tfs, at) = (d, f, b);
    }
    let merged: Vec<(usize, u64)> = segments
        .into_par_iter()
        .map_init(Vec::new, |scratch: &mut Vec<(u32, u16)>, (t, d, f)| {
            scratch.clear();
            scratch.extend(d.iter().copied().zip(f.iter().copied()));
            scratch.sort_unstable_by_key(|&(p, _)| p);
            let mut out = 0usize;
            for &(p, tf) in scratch.iter() {
                if out > 0 && d[out - 1] == p {
                    f[out - 1] = f[out - 1].saturating_add(tf);
                } else {
                    d[out] = p;
                    f[out] = tf;
                    out += 1;
                }
            }
            (t, out as u64)
        })
        .collect();
    for (t, k) in merged {
        kept[t] = k;
    }
    // Close the gaps merging left.
    let mut starts = Vec::with_capacity(n_tokens + 1);
    let mut at = 0usize;
    for t in 0..n_tokens {
        starts.push(at as u64);
        let from = count[t] as usize;
        let k = kept[t] as usize;
        if from != at {
            docs.copy_within(from..from + k, at);
            tfs.copy_within(from..from + k, at);
        }
        at += k;
    }
    starts.push(at as u64);
    docs.truncate(at);
    tfs.truncate(at);
    FieldPostings {
        starts,
        docs,
        tfs,
        lengths,
    }
}
